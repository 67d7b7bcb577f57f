#include "kvtopo/block_pool.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace kvtopo {
namespace {

std::vector<int32_t> Ids(const std::vector<BlockId>& blocks) {
  std::vector<int32_t> ids;
  for (BlockId b : blocks) ids.push_back(b.value());
  return ids;
}

BlockHash H(uint64_t x) { return BlockHash{.low = x * 0x100000001b3ull, .high = x}; }

TEST(BlockPool, NullBlockIsNeverAllocated) {
  BlockPool pool(5, true);
  EXPECT_EQ(pool.num_free_blocks(), 4);
  std::vector<BlockId> out;
  ASSERT_TRUE(pool.Allocate(4, out));
  EXPECT_EQ(Ids(out), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_DOUBLE_EQ(pool.Usage(), 1.0);
  EXPECT_FALSE(pool.Allocate(1, out));  // out of blocks is a value, not an abort
  EXPECT_EQ(out.size(), 4u);
  pool.Free(out);
  pool.FreeOne(kNullBlock);  // ignored
  pool.CheckInvariants();
}

TEST(BlockPool, FreeingInReverseEvictsChainTailsFirst) {
  BlockPool pool(8, true);
  std::vector<BlockId> a, b;
  ASSERT_TRUE(pool.Allocate(3, a));  // 1 2 3
  ASSERT_TRUE(pool.Allocate(2, b));  // 4 5
  for (int i = 0; i < 3; ++i) pool.Cache(a[i], H(i + 1), GroupId{0});
  std::vector<BlockId> reversed(a.rbegin(), a.rend());
  pool.Free(reversed);  // free list: 6 7 3 2 1
  std::vector<BlockId> c;
  ASSERT_TRUE(pool.Allocate(3, c));
  EXPECT_EQ(Ids(c), (std::vector<int32_t>{6, 7, 3}));
  // Block 3 lost its hash lazily when reallocated; 2 and 1 are still hit-able.
  EXPECT_FALSE(pool.Lookup(H(3), GroupId{0}).has_value());
  EXPECT_EQ(pool.Lookup(H(2), GroupId{0}), BlockId{2});
  EXPECT_EQ(pool.Lookup(H(1), GroupId{1}), std::nullopt);  // group is part of the key
  // A hit unlinks from the middle of the free list.
  const BlockId hit[] = {BlockId{1}};
  pool.Touch(hit);
  EXPECT_EQ(pool.ref_count(BlockId{1}), 1);
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.CheckInvariants();
  EXPECT_FALSE(pool.ResetPrefixCache());  // blocks in use
  pool.Free(c);
  pool.Free(b);
  pool.Free(hit);
  EXPECT_TRUE(pool.ResetPrefixCache());
  EXPECT_FALSE(pool.Lookup(H(2), GroupId{0}).has_value());
  pool.CheckInvariants();
}

TEST(BlockPool, StatsCountQueriesAndHits) {
  BlockPool pool(4, true);
  pool.RecordLookup(TokenCount{100}, TokenCount{64});
  pool.RecordLookup(TokenCount{10}, TokenCount{0});
  EXPECT_EQ(pool.stats(), (PrefixCacheStats{.requests = 2, .query_tokens = 110, .hit_tokens = 64}));
}

// The flat map against std::multimap over random cache / reallocate / reset operations.
TEST(BlockPool, RandomizedHashMapMatchesOracle) {
  std::mt19937_64 rng(7);
  BlockPool pool(64, true);
  std::vector<BlockId> held;
  std::map<int32_t, std::pair<uint64_t, int32_t>> hashed;  // block -> (key, group)
  for (int step = 0; step < 3000; ++step) {
    const int op = static_cast<int>(rng() % 4);
    if (op == 0 && pool.num_free_blocks() > 0) {
      const BlockId b = pool.AllocateOne();
      hashed.erase(b.value());
      held.push_back(b);
    } else if (op == 1 && !held.empty()) {
      const size_t i = rng() % held.size();
      if (!pool.is_cached(held[i])) {
        const uint64_t key = rng() % 40;  // collisions and duplicates on purpose
        const int32_t group = static_cast<int32_t>(rng() % 2);
        pool.Cache(held[i], H(key), GroupId{group});
        hashed[held[i].value()] = {key, group};
      }
    } else if (op == 2 && !held.empty()) {
      const size_t i = rng() % held.size();
      pool.FreeOne(held[i]);
      held.erase(held.begin() + i);
    } else if (op == 3) {
      const uint64_t key = rng() % 40;
      const int32_t group = static_cast<int32_t>(rng() % 2);
      auto got = pool.Lookup(H(key), GroupId{group});
      bool expected = false;
      for (const auto& [block, kg] : hashed) expected |= kg == std::make_pair(key, group);
      ASSERT_EQ(got.has_value(), expected);
      if (got) {
        ASSERT_EQ(hashed.at(got->value()), std::make_pair(key, group));
      }
    }
    pool.CheckInvariants();
  }
}

}  // namespace
}  // namespace kvtopo

namespace kvtopo {
namespace {

// Re-caching content that a free block still caches moves the entry to the new block; content
// cached by blocks in use may repeat.
TEST(BlockPool, NewBlockTakesTheEntryOfAFreeDuplicate) {
  BlockPool pool(8, /*enable_caching=*/true);
  const BlockHash h{.low = 42, .high = 7};
  const BlockId a = pool.AllocateOne();
  pool.Cache(a, h, GroupId{0});
  pool.FreeOne(a);
  ASSERT_EQ(pool.Lookup(h, GroupId{0}), a);  // free but hit-able
  const BlockId b = pool.AllocateOne();       // the head of the free list: not a
  ASSERT_NE(b, a);
  pool.Cache(b, h, GroupId{0});
  EXPECT_EQ(pool.Lookup(h, GroupId{0}), b);
  EXPECT_FALSE(pool.is_cached(a));
  EXPECT_TRUE(pool.is_cached(b));
  const BlockId c = pool.AllocateOne();
  pool.Cache(c, h, GroupId{0});  // b is in use: both stay cached
  EXPECT_TRUE(pool.is_cached(b));
  EXPECT_TRUE(pool.is_cached(c));
  EXPECT_EQ(pool.Lookup(h, GroupId{1}), std::nullopt);
  pool.CheckInvariants();
}

}  // namespace
}  // namespace kvtopo
