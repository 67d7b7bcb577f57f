// The batched step API against a loop of single calls: the same block ids, hits and failures
// over seeded random workloads (a small pool so that steps run out of blocks).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kvtopo/kv_cache_manager.h"
#include "test_groups.h"

namespace kvtopo {
namespace {

using testing::GroupParams;
using testing::MakeGroup;

KVCacheManagerOptions Options(int variant) {
  KVCacheManagerOptions o{.num_blocks = 40, .hash_block_size = 16, .max_model_len = 4096};
  o.groups.push_back(MakeGroup({.kind = CacheKind::kFullAttention, .block_size = 16}));
  if (variant >= 1) {
    o.groups.push_back(
        MakeGroup({.kind = CacheKind::kSlidingWindow, .block_size = 16, .window = 64}));
  }
  if (variant >= 2) {
    o.groups.push_back(MakeGroup({.kind = CacheKind::kRecurrent, .block_size = 16}));
  }
  return o;
}

class BatchVersusSingle : public ::testing::TestWithParam<int> {};

TEST_P(BatchVersusSingle, SameBlocksHitsAndFailures) {
  const int variant = GetParam() % 3;
  std::mt19937_64 rng(1000 + GetParam());
  auto single = KVCacheManager::Create(Options(variant)).value();
  auto batched = KVCacheManager::Create(Options(variant)).value();
  std::vector<int64_t> running;
  int64_t next_id = 0;
  KVCacheManager::BatchResult out;
  int64_t failures = 0;
  int64_t successes = 0;
  int64_t hit_tokens = 0;
  for (int step = 0; step < 120; ++step) {
    // Admit up to 3 new requests; prompts share prefixes so hits happen.
    std::vector<RequestId> admit;
    const int n_admit = static_cast<int>(rng() % 4);
    for (int k = 0; k < n_admit; ++k) {
      const int64_t id = next_id++;
      std::vector<int32_t> prompt(16 + rng() % 120);
      const int32_t family = static_cast<int32_t>(rng() % 3);
      for (size_t t = 0; t < prompt.size(); ++t) {
        prompt[t] =
            t < 48 ? family * 1000 + static_cast<int32_t>(t) : static_cast<int32_t>(rng() % 50000);
      }
      EXPECT_TRUE(single->AddRequest(RequestId{id}, prompt).ok());
      EXPECT_TRUE(batched->AddRequest(RequestId{id}, prompt).ok());
      admit.emplace_back(id);
    }
    ASSERT_TRUE(batched->AdmitBatch(admit, {}, /*full_sequence_must_fit=*/false, out).ok());
    for (size_t i = 0; i < admit.size(); ++i) {
      const ComputedBlocks hits = single->GetComputedBlocks(admit[i]).value();
      const int64_t n = single->num_tokens(admit[i]).value() - hits.num_tokens.value();
      const bool ok = single
                          ->AllocateSlots(admit[i], {.num_new_tokens = TokenCount{n},
                                                     .num_new_computed_tokens = hits.num_tokens,
                                                     .computed = &hits})
                          .value();
      ASSERT_EQ(out.ok[i], ok ? 1 : 0) << "step " << step << " admit " << i;
      if (ok) {
        ASSERT_EQ(out.num_computed[i], hits.num_tokens.value());
        hit_tokens += hits.num_tokens.value();
        running.push_back(admit[i].value());
      } else {
        ++failures;
        EXPECT_TRUE(single->Free(admit[i]).ok());
        EXPECT_TRUE(batched->Free(admit[i]).ok());
      }
    }
    // One decode step of every running request, lookahead 0-3.
    std::vector<RequestId> ids;
    std::vector<int32_t> news, lookahead;
    for (int64_t id : running) {
      ids.emplace_back(id);
      news.push_back(1 + static_cast<int32_t>(rng() % 2));
      lookahead.push_back(static_cast<int32_t>(rng() % 4));
    }
    ASSERT_TRUE(batched->AllocateSlotsBatch(ids, news, lookahead, out).ok());
    ASSERT_EQ(out.offsets.size(), ids.size() * single->num_groups() + 1);
    for (size_t i = 0; i < ids.size(); ++i) {
      const bool ok =
          single
              ->AllocateSlots(ids[i], {.num_new_tokens = TokenCount{news[i]},
                                       .num_lookahead_tokens = TokenCount{lookahead[i]}})
              .value();
      ASSERT_EQ(out.ok[i], ok ? 1 : 0) << "step " << step << " request " << ids[i].value();
      failures += ok ? 0 : 1;
      successes += ok ? 1 : 0;
      for (int32_t g = 0; g < single->num_groups(); ++g) {
        const size_t k = i * single->num_groups() + g;
        std::vector<int32_t> got(out.block_ids.begin() + out.offsets[k],
                                 out.block_ids.begin() + out.offsets[k + 1]);
        std::vector<int32_t> want;
        if (ok) {
          const auto u = single->LastUpdate(ids[i], GroupId{g});
          for (BlockId b : u.block_ids) want.push_back(b.value());
          ASSERT_EQ(out.first_column[k], u.first_column);
        }
        ASSERT_EQ(got, want);
        const auto a = single->BlockIds(ids[i], GroupId{g});
        const auto b = batched->BlockIds(ids[i], GroupId{g});
        ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
      }
    }
    // Verified tokens appended; a third of the requests (and every failed one) finish.
    std::vector<int32_t> tokens;
    for (size_t i = 0; i < ids.size(); ++i) tokens.push_back(static_cast<int32_t>(rng() % 50000));
    ASSERT_TRUE(batched->AppendTokensBatch(ids, tokens, {}).ok());
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_TRUE(single->AppendTokens(ids[i], std::span<const int32_t>(&tokens[i], 1)).ok());
    }
    std::vector<RequestId> done;
    std::vector<int64_t> keep;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (out.ok[i] == 0 || rng() % 8 == 0) {
        done.push_back(ids[i]);
      } else {
        keep.push_back(ids[i].value());
      }
    }
    ASSERT_TRUE(batched->FreeBatch(done).ok());
    for (RequestId id : done) EXPECT_TRUE(single->Free(id).ok());
    running = keep;
    single->NewStep();
    batched->NewStep();
    ASSERT_EQ(single->num_free_blocks(), batched->num_free_blocks());
    single->CheckInvariants();
    batched->CheckInvariants();
  }
  EXPECT_GT(failures, 0) << "the pool should run out sometimes";
  EXPECT_GT(successes, 200);
  if (variant < 2) {
    EXPECT_GT(hit_tokens, 0);  // recurrent states rarely land on a shared boundary
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, BatchVersusSingle, ::testing::Range(0, 9));

TEST(Batch, UnknownRequestIsAnErrorAndChangesNothing) {
  auto m = KVCacheManager::Create(Options(0)).value();
  EXPECT_TRUE(m->AddRequest(RequestId{1}, std::vector<int32_t>(20, 1)).ok());
  const std::vector<RequestId> ids = {RequestId{1}, RequestId{9}};
  const std::vector<int32_t> news = {20, 4};
  KVCacheManager::BatchResult out;
  EXPECT_EQ(m->AllocateSlotsBatch(ids, news, {}, out).message(),
            "request 9 of the batch (index 1) is not registered");
  EXPECT_EQ(m->num_computed_tokens(RequestId{1}).value(), 0);
  EXPECT_EQ(m->FreeBatch(ids).code(), StatusCode::kNotFound);
  EXPECT_TRUE(m->Contains(RequestId{1}));
  m->CheckInvariants();
}

TEST(ValidateComputedBlocks, HitsSurviveUnrelatedAllocationsUntilEvicted) {
  auto m = KVCacheManager::Create({.num_blocks = 8,
                                   .hash_block_size = 16,
                                   .max_model_len = 1024,
                                   .groups = {MakeGroup({.kind = CacheKind::kFullAttention})}})
               .value();
  std::vector<int32_t> prompt(48, 5);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, prompt).ok());
  ASSERT_TRUE(m->AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{48}}).value());
  EXPECT_TRUE(m->Free(RequestId{1}).ok());  // blocks 3, 2, 1 at the tail, still cached
  EXPECT_TRUE(m->AddRequest(RequestId{2}, prompt).ok());
  const ComputedBlocks hits = m->GetComputedBlocks(RequestId{2}).value();
  ASSERT_EQ(hits.num_tokens.value(), 32);
  std::vector<int32_t> other(16, 9);
  EXPECT_TRUE(m->AddRequest(RequestId{3}, other).ok());
  ASSERT_TRUE(
      m->AllocateSlots(RequestId{3}, {.num_new_tokens = TokenCount{16}}).value());  // block 4
  EXPECT_TRUE(m->ValidateComputedBlocks(RequestId{2}, hits).ok());
  EXPECT_TRUE(m->AddRequest(RequestId{4}, std::vector<int32_t>(64, 8)).ok());
  ASSERT_TRUE(
      m->AllocateSlots(RequestId{4}, {.num_new_tokens = TokenCount{64}}).value());  // 5,6,7,3
  EXPECT_TRUE(m->ValidateComputedBlocks(RequestId{2}, hits).ok());
  EXPECT_TRUE(m->Free(RequestId{3}).ok());
  EXPECT_TRUE(m->AddRequest(RequestId{5}, std::vector<int32_t>(32, 7)).ok());
  ASSERT_TRUE(m->AllocateSlots(RequestId{5}, {.num_new_tokens = TokenCount{32}}).value());  // 2, 1
  EXPECT_EQ(m->ValidateComputedBlocks(RequestId{2}, hits).message(),
            "stale prefix hits: block 1 (group 0, column 0) no longer caches request 2's "
            "content; call get_computed_blocks again");
}

}  // namespace
}  // namespace kvtopo
