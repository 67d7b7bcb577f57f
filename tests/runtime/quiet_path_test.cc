// The quiet window (AllocateSlots calls that only advance the computed count) against the full
// per-group rules: two managers take the same seeded random operations — prefills with prefix
// hits, decode steps with drafts and lookahead, rejected drafts, frees — one with the quiet path
// off, and must agree on every result, row, row update and free count after every operation.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "kvtopo/kv_cache_manager.h"
#include "runtime/test_groups.h"

namespace kvtopo {

class KVCacheManagerPeer {
 public:
  static void SetQuietPathEnabled(KVCacheManager& m, bool enabled) {
    m.SetQuietPathEnabled(enabled);
  }
  static bool BlockIsCached(const KVCacheManager& m, BlockId block) {
    return m.BlockIsCached(block);
  }
};

namespace {

using testing::MakeGroup;

void ExpectSame(KVCacheManager& a, KVCacheManager& b, const std::map<int64_t, int64_t>& live) {
  ASSERT_EQ(a.num_free_blocks(), b.num_free_blocks());
  for (const auto& [id, unused] : live) {
    const RequestId r{id};
    ASSERT_EQ(a.num_computed_tokens(r), b.num_computed_tokens(r));
    for (int32_t g = 0; g < a.num_groups(); ++g) {
      const auto ra = a.BlockIds(r, GroupId{g});
      const auto rb = b.BlockIds(r, GroupId{g});
      ASSERT_EQ(std::vector<BlockId>(ra.begin(), ra.end()),
                std::vector<BlockId>(rb.begin(), rb.end()))
          << "request " << id << " group " << g;
      const auto ua = a.LastUpdate(r, GroupId{g});
      const auto ub = b.LastUpdate(r, GroupId{g});
      ASSERT_EQ(ua.first_column, ub.first_column) << "request " << id << " group " << g;
      ASSERT_EQ(ua.block_ids.size(), ub.block_ids.size());
      // Same blocks offered to the prefix cache at the same step.
      for (size_t j = 0; j < ra.size(); ++j) {
        ASSERT_EQ(KVCacheManagerPeer::BlockIsCached(a, ra[j]),
                  KVCacheManagerPeer::BlockIsCached(b, rb[j]))
            << "request " << id << " group " << g << " column " << j;
      }
    }
  }
}

void RunDifferential(std::vector<CacheGroup> groups, int64_t hash_block_size, uint64_t seed,
                     int steps, int64_t spec_tokens, int64_t aligned_prefill) {
  const int64_t L = groups[0].geometry.max_model_len();
  const KVCacheManagerOptions options{.num_blocks = 220,
                                      .enable_prefix_caching = true,
                                      .hash_block_size = hash_block_size,
                                      .max_model_len = L,
                                      .groups = groups};
  auto fast = KVCacheManager::Create(options).value();
  auto full = KVCacheManager::Create(options).value();
  KVCacheManagerPeer::SetQuietPathEnabled(*full, false);
  KVCacheManager* both[] = {fast.get(), full.get()};
  std::mt19937_64 rng(seed);
  std::vector<int32_t> prefix(1500);
  for (auto& t : prefix) t = static_cast<int32_t>(rng() % 50000);
  std::map<int64_t, int64_t> live;  // id -> unused
  int64_t next_id = 1;
  int64_t quiet_candidates = 0;
  ComputedBlocks hits[2];
  for (int step = 0; step < steps; ++step) {
    for (KVCacheManager* m : both) m->NewStep();
    const int op = static_cast<int>(rng() % 20);
    if (op < 2 && live.size() < 12) {
      const int64_t shared = static_cast<int64_t>(rng() % prefix.size());
      std::vector<int32_t> prompt(prefix.begin(), prefix.begin() + shared);
      const int64_t extra = 1 + static_cast<int64_t>(rng() % 300);
      for (int64_t i = 0; i < extra; ++i) prompt.push_back(static_cast<int32_t>(rng() % 50000));
      const int64_t id = next_id++;
      TokenCount hit[2];
      for (int k = 0; k < 2; ++k) {
        EXPECT_TRUE(both[k]->AddRequest(RequestId{id}, prompt).ok());
        hit[k] = both[k]->GetComputedBlocks(RequestId{id}, hits[k]).value();
      }
      ASSERT_EQ(hit[0], hit[1]);
      ASSERT_EQ(hits[0].blocks, hits[1].blocks);
      const int64_t len = static_cast<int64_t>(prompt.size());
      int64_t done = hit[0].value();
      bool ok = true;
      bool first = true;
      while (ok && done < len) {
        int64_t chunk = aligned_prefill * (1 + static_cast<int64_t>(rng() % 6));
        chunk = std::min(chunk, len - done);
        const bool must_fit = rng() % 2 == 0;
        bool result[2];
        for (int k = 0; k < 2; ++k) {
          SlotRequest req{.num_new_tokens = TokenCount{chunk}, .full_sequence_must_fit = must_fit};
          if (first) {
            req.num_new_computed_tokens = hit[k];
            req.computed = &hits[k];
          }
          result[k] = both[k]->AllocateSlots(RequestId{id}, req).value();
        }
        ASSERT_EQ(result[0], result[1]);
        ok = result[0];
        first = false;
        done += chunk;
      }
      if (!ok) {
        for (KVCacheManager* m : both) EXPECT_TRUE(m->Free(RequestId{id}).ok());
      } else {
        live[id] = 0;
      }
    } else if (op < 3 && !live.empty()) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      for (KVCacheManager* m : both) EXPECT_TRUE(m->Free(RequestId{it->first}).ok());
      live.erase(it);
    } else if (!live.empty()) {
      // Decode: verify 1 + drafts tokens with lookahead slots; sometimes reject some drafts.
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      const RequestId id{it->first};
      const int64_t drafts = spec_tokens > 0 ? static_cast<int64_t>(rng() % (spec_tokens + 1)) : 0;
      if (fast->num_tokens(id).value() + 2 + 2 * spec_tokens + 4 >= L) continue;
      std::vector<int32_t> out(1 + static_cast<size_t>(rng() % 2));
      for (auto& t : out) t = static_cast<int32_t>(rng() % 50000);
      for (KVCacheManager* m : both) EXPECT_TRUE(m->AppendTokens(id, out).ok());
      const int64_t pending = fast->num_tokens(id).value() - fast->num_computed_tokens(id).value();
      const int64_t lookahead = static_cast<int64_t>(rng() % 4);
      bool result[2];
      for (int k = 0; k < 2; ++k) {
        result[k] = both[k]
                        ->AllocateSlots(id, {.num_new_tokens = TokenCount{pending + drafts},
                                             .num_lookahead_tokens = TokenCount{lookahead}})
                        .value();
      }
      ASSERT_EQ(result[0], result[1]);
      ++quiet_candidates;
      if (result[0] && drafts > 0) {
        // Rejected drafts are rewound; accepted ones become tokens.
        const int64_t rejected = static_cast<int64_t>(rng() % (drafts + 1));
        std::vector<int32_t> accepted(static_cast<size_t>(drafts - rejected));
        for (auto& t : accepted) t = static_cast<int32_t>(rng() % 50000);
        for (KVCacheManager* m : both) {
          EXPECT_TRUE(m->RewindComputedTokens(id, TokenCount{rejected}).ok());
          EXPECT_TRUE(m->AppendTokens(id, accepted).ok());
        }
      }
    } else {
      continue;
    }
    for (KVCacheManager* m : both) m->CheckInvariants();
    ExpectSame(*fast, *full, live);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(quiet_candidates, steps / 2);
  for (const auto& [id, unused] : live) {
    for (KVCacheManager* m : both) EXPECT_TRUE(m->Free(RequestId{id}).ok());
  }
  EXPECT_EQ(fast->num_free_blocks(), options.num_blocks - 1);
  EXPECT_EQ(full->num_free_blocks(), options.num_blocks - 1);
}

TEST(QuietPath, AgreesWithTheFullRulesOnMixedGroups) {
  const int64_t L = 4096;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    // Full attention alone, MLA sharded over 2 ranks.
    RunDifferential({MakeGroup({.block_size = 16, .dcp = 2, .max_model_len = L})}, 32, seed, 1500,
                    /*spec_tokens=*/0, /*aligned_prefill=*/32);
    // Full + sliding window (volatile) + recurrent align with S = 3 and 3 drafts per step.
    RunDifferential(
        {MakeGroup({.kind = CacheKind::kFullAttention, .block_size = 16, .max_model_len = L}),
         MakeGroup({.kind = CacheKind::kSlidingWindow,
                    .block_size = 16,
                    .max_model_len = L,
                    .window = 64},
                   /*volatile_last_block=*/true),
         MakeGroup({.kind = CacheKind::kRecurrent,
                    .block_size = 16,
                    .max_model_len = L,
                    .mode = RecurrentMode::kAlign,
                    .spec_blocks = 3})},
        16, seed + 10, 1500, /*spec_tokens=*/3, /*aligned_prefill=*/16);
    // Full + chunked local + recurrent all (S = 1) + recurrent none (S = 2), 1 draft per step.
    RunDifferential(
        {MakeGroup({.kind = CacheKind::kFullAttention, .block_size = 16, .max_model_len = L}),
         MakeGroup({.kind = CacheKind::kChunkedLocal,
                    .block_size = 16,
                    .max_model_len = L,
                    .window = 128}),
         MakeGroup({.kind = CacheKind::kRecurrent,
                    .block_size = 16,
                    .max_model_len = L,
                    .mode = RecurrentMode::kAll,
                    .spec_blocks = 1}),
         MakeGroup({.kind = CacheKind::kRecurrent,
                    .block_size = 16,
                    .max_model_len = L,
                    .mode = RecurrentMode::kNone,
                    .spec_blocks = 2})},
        16, seed + 20, 1500, /*spec_tokens=*/1, /*aligned_prefill=*/16);
    // A sliding window that is not a multiple of the block (24-token blocks: no shift path).
    RunDifferential(
        {MakeGroup({.kind = CacheKind::kFullAttention, .block_size = 24, .max_model_len = L}),
         MakeGroup({.kind = CacheKind::kSlidingWindow,
                    .block_size = 24,
                    .max_model_len = L,
                    .window = 100})},
        24, seed + 30, 1500, /*spec_tokens=*/0, /*aligned_prefill=*/24);
  }
}

}  // namespace
}  // namespace kvtopo
