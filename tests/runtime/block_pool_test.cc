#include "kvtopo/block_pool.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
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
// The oracle is vLLM's BlockHashToBlockMap: every block caching a (hash, group) stays cached
// until it is reallocated or evicted, and a lookup finds the one that cached it first of those
// left.
TEST(BlockPool, RandomizedHashMapMatchesOracle) {
  std::mt19937_64 rng(7);
  for (const int keys : {40, 6}) {  // collisions; then long chains of duplicates
    BlockPool pool(64, true);
    std::vector<BlockId> held;
    std::map<std::pair<uint64_t, int32_t>, std::vector<int32_t>> cached;  // in caching order
    const auto forget = [&](int32_t block) {
      for (auto& [kg, blocks] : cached) std::erase(blocks, block);
    };
    for (int step = 0; step < 8000; ++step) {
      const int op = static_cast<int>(rng() % 8);
      if (op == 0 && pool.num_free_blocks() > 0) {
        const BlockId b = pool.AllocateOne();
        forget(b.value());
        held.push_back(b);
      } else if (op == 5) {
        // A run of blocks, cached as a request caches its full blocks: chained hashes of a
        // prefix, some of which other blocks cache already.
        std::vector<BlockId> run;
        const auto count = static_cast<int32_t>(1 + rng() % 4);
        if (!pool.Allocate(count, run)) continue;
        const uint64_t first = rng() % keys;
        const int32_t group = static_cast<int32_t>(rng() % 2);
        std::vector<BlockHash> hashes;
        for (int32_t k = 0; k < count; ++k) {
          forget(run[k].value());
          hashes.push_back(H((first + k) % keys));
        }
        pool.CacheRun(run, hashes, GroupId{group});
        for (int32_t k = 0; k < count; ++k) {
          cached[{(first + k) % keys, group}].push_back(run[k].value());
        }
        held.insert(held.end(), run.begin(), run.end());
      } else if (op == 6) {
        // The longest cached prefix of a chain of hashes, each block the first copy.
        const uint64_t first = rng() % keys;
        const int32_t group = static_cast<int32_t>(rng() % 2);
        std::vector<BlockHash> hashes;
        for (uint64_t k = 0; k < 5; ++k) hashes.push_back(H((first + k) % keys));
        std::vector<BlockId> got(hashes.size());
        const int64_t n = pool.MatchPrefix(hashes, GroupId{group}, got.data());
        for (int64_t k = 0; k <= n && k < 5; ++k) {
          const std::vector<int32_t>& blocks = cached[{(first + k) % keys, group}];
          if (k == n) {
            ASSERT_TRUE(blocks.empty()) << "step " << step;
          } else {
            ASSERT_FALSE(blocks.empty());
            ASSERT_EQ(got[k].value(), blocks.front()) << "step " << step;
          }
        }
      } else if (op == 7 && rng() % 16 == 0) {
        for (const BlockId b : held) pool.FreeOne(b);
        held.clear();
        ASSERT_TRUE(pool.ResetPrefixCache());
        cached.clear();
      } else if (op == 1 && !held.empty()) {
        const size_t i = rng() % held.size();
        if (!pool.is_cached(held[i])) {
          const uint64_t key = rng() % keys;
          const int32_t group = static_cast<int32_t>(rng() % 2);
          pool.Cache(held[i], H(key), GroupId{group});
          cached[{key, group}].push_back(held[i].value());
        }
      } else if (op == 2 && !held.empty()) {
        const size_t i = rng() % held.size();
        pool.FreeOne(held[i]);
        held.erase(held.begin() + i);
      } else if (op == 3) {
        const uint64_t key = rng() % keys;
        const int32_t group = static_cast<int32_t>(rng() % 2);
        const std::optional<BlockId> got = pool.Lookup(H(key), GroupId{group});
        const std::vector<int32_t>& blocks = cached[{key, group}];
        ASSERT_EQ(got.has_value(), !blocks.empty());
        if (got) {
          ASSERT_EQ(got->value(), blocks.front()) << "step " << step;
        }
      } else if (op == 4) {
        const BlockId b{static_cast<int32_t>(1 + rng() % 63)};
        pool.EvictCached(b);
        forget(b.value());
      }
      pool.CheckInvariants();
    }
  }
}

// Content cached again while a free block still caches it: both stay cached, the first is what
// a lookup finds until it leaves, and each copy is evicted on its own (vLLM keeps every copy in
// BlockHashToBlockMap and returns the first).
TEST(BlockPool, DuplicatesStayCachedInCachingOrder) {
  BlockPool pool(8, /*enable_caching=*/true);
  const BlockHash h{.low = 42, .high = 7};
  const BlockId a = pool.AllocateOne();
  pool.Cache(a, h, GroupId{0});
  pool.FreeOne(a);
  ASSERT_EQ(pool.Lookup(h, GroupId{0}), a);  // free but hit-able
  const BlockId b = pool.AllocateOne();      // the head of the free list: not a
  ASSERT_NE(b, a);
  pool.Cache(b, h, GroupId{0});
  EXPECT_EQ(pool.Lookup(h, GroupId{0}), a);
  EXPECT_TRUE(pool.is_cached(a));
  EXPECT_TRUE(pool.is_cached(b));
  const BlockId c = pool.AllocateOne();
  pool.Cache(c, h, GroupId{0});
  EXPECT_EQ(pool.Lookup(h, GroupId{1}), std::nullopt);
  pool.CheckInvariants();
  pool.EvictCached(b);  // the middle copy
  EXPECT_EQ(pool.Lookup(h, GroupId{0}), a);
  pool.EvictCached(a);  // the first: c is found now
  EXPECT_EQ(pool.Lookup(h, GroupId{0}), c);
  pool.Cache(b, h, GroupId{0});  // cached again: after c
  pool.EvictCached(c);
  EXPECT_EQ(pool.Lookup(h, GroupId{0}), b);
  pool.CheckInvariants();
  EXPECT_EQ(pool.evictions(), 3u);
}

}  // namespace
}  // namespace kvtopo

namespace kvtopo {
namespace {

// A clock the residency tests set by hand, in seconds.
int64_t fake_now_ns = 0;
int64_t FakeClock() { return fake_now_ns; }
void At(int64_t seconds) { fake_now_ns = seconds * 1'000'000'000; }

ResidencyMetricsOptions EveryBlock() {
  return {.sample_rate = 1.0, .seed = 1, .clock_ns = &FakeClock};
}

BlockResidencyEvent Event(double lifetime, double idle, std::vector<double> gaps = {}) {
  BlockResidencyEvent e{.lifetime_seconds = lifetime, .idle_seconds = idle};
  e.num_reuse_gaps = static_cast<int32_t>(gaps.size());
  std::copy(gaps.begin(), gaps.end(), e.reuse_gaps_seconds.begin());
  return e;
}

// vLLM's KVCacheMetricsCollector as its BlockPool drives it: a block is born when allocated,
// each prefix hit is an access, and leaving the cache (reallocation with caching on,
// evict_blocks) ends it with one event.
TEST(BlockPoolResidency, ABlockIsTimedFromAllocationToReuse) {
  BlockPool pool(6, /*enable_caching=*/true);
  ASSERT_TRUE(pool.EnableResidencyMetrics(EveryBlock()).ok());
  At(1);
  std::vector<BlockId> a;
  ASSERT_TRUE(pool.Allocate(2, a));  // 1 2
  pool.Cache(a[0], H(1), GroupId{0});
  pool.Free(a);                        // free list: 3 4 5 1 2
  const BlockId hit[] = {BlockId{1}};  // a prefix hit on block 1 takes it out of the list
  At(2);
  pool.Touch(hit);
  At(5);
  pool.Touch(hit);
  pool.Free(hit);
  pool.Free(hit);
  EXPECT_TRUE(pool.TakeResidencyEvents().empty());  // nothing left the cache yet
  At(9);
  std::vector<BlockId> b;
  ASSERT_TRUE(pool.Allocate(5, b));  // 3, 4 and 5 were never followed
  EXPECT_EQ(Ids(b), (std::vector<int32_t>{3, 4, 5, 2, 1}));
  EXPECT_EQ(pool.TakeResidencyEvents(),
            (std::vector<BlockResidencyEvent>{Event(8, 8), Event(8, 4, {3})}));
  EXPECT_TRUE(pool.TakeResidencyEvents().empty());  // taken
  // evict_blocks ends a block in use too; its record is gone after that.
  At(10);
  const BlockId three[] = {BlockId{3}};
  pool.EvictCached(three[0]);
  pool.EvictCached(three[0]);
  EXPECT_EQ(pool.TakeResidencyEvents(), (std::vector<BlockResidencyEvent>{Event(1, 1)}));
  pool.Free(b);
  EXPECT_TRUE(pool.ResetPrefixCache());  // drops every record
  At(11);
  std::vector<BlockId> c;
  ASSERT_TRUE(pool.Allocate(5, c));
  EXPECT_TRUE(pool.TakeResidencyEvents().empty());
  pool.CheckInvariants();
}

TEST(BlockPoolResidency, ReuseGapsAreTheLastFourHits) {
  BlockPool pool(3, /*enable_caching=*/true);
  ASSERT_TRUE(pool.EnableResidencyMetrics(EveryBlock()).ok());
  At(0);
  const BlockId b = pool.AllocateOne();  // 1
  const BlockId hit[] = {b};
  for (const int64_t t : {1, 3, 6, 10, 15}) {
    At(t);
    pool.Touch(hit);
  }
  pool.Free(hit);
  for (int k = 0; k < 5; ++k) pool.Free(hit);
  At(20);
  EXPECT_EQ(pool.AllocateOne(), BlockId{2});
  EXPECT_TRUE(pool.TakeResidencyEvents().empty());
  EXPECT_EQ(pool.AllocateOne(), b);
  // Accesses 3, 6, 10 and 15 are kept (the first, at 1, fell out).
  EXPECT_EQ(pool.TakeResidencyEvents(),
            (std::vector<BlockResidencyEvent>{Event(20, 5, {3, 4, 5})}));
}

// A caller's clock may read anywhere in int64: a jump as vLLM's test_huge_time_jump takes, and
// readings that wrap past INT64_MAX, give their difference without overflow.
TEST(BlockPoolResidency, ClockReadingsAnywhereInInt64) {
  BlockPool pool(2, /*enable_caching=*/true);
  ASSERT_TRUE(pool.EnableResidencyMetrics(EveryBlock()).ok());
  fake_now_ns = 1'000'000'000;
  const BlockId b = pool.AllocateOne();
  fake_now_ns = 9'999'999'999'999'999;
  pool.EvictCached(b);
  fake_now_ns = std::numeric_limits<int64_t>::max() - 999'999'999;
  pool.FreeOne(b);
  ASSERT_EQ(pool.AllocateOne(), b);
  fake_now_ns = std::numeric_limits<int64_t>::min() + 1'000'000'000;
  pool.EvictCached(b);
  const double kJump = static_cast<double>(int64_t{9'999'998'999'999'999}) / 1e9;
  EXPECT_EQ(pool.TakeResidencyEvents(),
            (std::vector<BlockResidencyEvent>{Event(kJump, kJump), Event(2, 2)}));
}

// Without prefix caching vLLM's pool evicts nothing when it reallocates: only evict_blocks ends
// a record.
TEST(BlockPoolResidency, WithoutCachingOnlyEvictCachedEndsARecord) {
  BlockPool pool(2, /*enable_caching=*/false);
  ASSERT_TRUE(pool.EnableResidencyMetrics(EveryBlock()).ok());
  At(1);
  const BlockId b = pool.AllocateOne();
  pool.FreeOne(b);
  At(4);
  ASSERT_EQ(pool.AllocateOne(), b);  // followed afresh from 4
  EXPECT_TRUE(pool.TakeResidencyEvents().empty());
  At(6);
  pool.EvictCached(b);
  EXPECT_EQ(pool.TakeResidencyEvents(), (std::vector<BlockResidencyEvent>{Event(2, 2)}));
}

TEST(BlockPoolResidency, SamplesAShareOfTheBlocksAndBoundsWhatWaits) {
  BlockPool off(4, true);
  EXPECT_FALSE(off.residency_metrics_enabled());
  EXPECT_TRUE(off.TakeResidencyEvents().empty());
  for (const double rate : {0.0, -0.5, 1.5, std::nan("")}) {
    const Status s = off.EnableResidencyMetrics({.sample_rate = rate});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), fmt::format("residency metrics sample rate {} is not in (0, 1] "
                                       "(vLLM's --kv-cache-metrics-sample takes the same range)",
                                       rate));
  }
  EXPECT_FALSE(off.residency_metrics_enabled());

  // A quarter of 4,000 allocations, from a fixed seed: the count is the generator's, near 1,000.
  BlockPool pool(2, true);
  ASSERT_TRUE(pool.EnableResidencyMetrics({.sample_rate = 0.25, .seed = 7}).ok());
  const BlockId b = pool.AllocateOne();
  for (int k = 0; k < 4000; ++k) {
    pool.FreeOne(b);
    ASSERT_EQ(pool.AllocateOne(), b);
  }
  const size_t followed = pool.TakeResidencyEvents().size();
  EXPECT_EQ(followed, 1011u);  // binomial(4,000, 0.25): 1,000 +- 27

  // Past kMaxPendingResidencyEvents waiting events the newest are dropped and counted.
  BlockPool full(2, true);
  ASSERT_TRUE(full.EnableResidencyMetrics(EveryBlock()).ok());
  const BlockId f = full.AllocateOne();
  for (size_t k = 0; k < kMaxPendingResidencyEvents + 5; ++k) {
    full.FreeOne(f);
    ASSERT_EQ(full.AllocateOne(), f);
  }
  EXPECT_EQ(full.TakeResidencyEvents().size(), kMaxPendingResidencyEvents);
  EXPECT_EQ(full.residency_events_dropped(), 5u);
}

}  // namespace
}  // namespace kvtopo

namespace kvtopo {
namespace {

// vLLM's KVCacheMetricsCollector restated over the ids the pool hands out (its dict of
// BlockMetricsState, a deque of the last four accesses), driven by seeded random pool calls with
// every block followed and a clock one second further at each call: the pool's events must be
// the collector's, in order.
TEST(BlockPoolResidency, RandomCallsMatchTheCollectorsRules) {
  struct Record {
    int64_t birth = 0, last = 0;
    std::vector<int64_t> accesses;  // the last four
  };
  for (const bool caching : {true, false}) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      std::mt19937_64 rng(seed);
      BlockPool pool(24, caching);
      ASSERT_TRUE(pool.EnableResidencyMetrics(EveryBlock()).ok());
      std::map<int32_t, Record> records;
      std::vector<BlockResidencyEvent> expected;
      const auto end = [&](int32_t block, int64_t now) {
        const auto it = records.find(block);
        if (it == records.end()) return;
        const Record& r = it->second;
        std::vector<double> gaps;
        for (size_t k = 1; k < r.accesses.size(); ++k) {
          gaps.push_back(static_cast<double>(r.accesses[k] - r.accesses[k - 1]));
        }
        expected.push_back(
            Event(static_cast<double>(now - r.birth), static_cast<double>(now - r.last), gaps));
        records.erase(it);
      };
      std::vector<BlockId> held;  // one entry per reference
      uint64_t next_hash = 1;
      for (int64_t t = 1; t <= 3000; ++t) {
        At(t);
        switch (rng() % 6) {
          case 0:
          case 1: {  // allocate (vLLM's get_new_blocks)
            const int32_t n = static_cast<int32_t>(rng() % 4);
            std::vector<BlockId> got;
            if (!pool.Allocate(n, got)) break;
            for (BlockId b : got) {
              if (caching) end(b.value(), t);
              records[b.value()] = Record{.birth = t, .last = t};
              if (caching && rng() % 2 == 0) pool.Cache(b, H(next_hash++), GroupId{0});
              held.push_back(b);
            }
            break;
          }
          case 2: {  // a prefix hit on a cached block, held or free
            if (!caching) break;
            const BlockId b{static_cast<int32_t>(1 + rng() % 23)};
            if (!pool.is_cached(b)) break;
            const BlockId hit[] = {b};
            pool.Touch(hit);
            held.push_back(b);
            if (const auto it = records.find(b.value()); it != records.end()) {
              it->second.last = t;
              it->second.accesses.push_back(t);
              if (it->second.accesses.size() > 4)
                it->second.accesses.erase(it->second.accesses.begin());
            }
            break;
          }
          case 3:
          case 4: {  // free one reference
            if (held.empty()) break;
            const size_t k = rng() % held.size();
            pool.FreeOne(held[k]);
            held.erase(held.begin() + static_cast<ptrdiff_t>(k));
            break;
          }
          default: {  // evict_blocks, or a prefix-cache reset when everything is free
            if (held.empty() && rng() % 2 == 0) {
              ASSERT_TRUE(pool.ResetPrefixCache());
              records.clear();
              expected.clear();
              ASSERT_TRUE(pool.TakeResidencyEvents().empty());
              break;
            }
            const int32_t b = static_cast<int32_t>(rng() % 24);
            pool.EvictCached(BlockId{b});
            end(b, t);
            break;
          }
        }
        pool.CheckInvariants();
        if (t % 97 == 0) {
          ASSERT_EQ(pool.TakeResidencyEvents(), expected) << "seed " << seed << " t " << t;
          expected.clear();
        }
      }
      EXPECT_EQ(pool.TakeResidencyEvents(), expected);
    }
  }
}

}  // namespace
}  // namespace kvtopo
