// Seeded randomized runs of the manager and the worker tables over mixed group kinds, DCP 1 / 2
// / 4 / 16 and interleave 1 / 16: invariants after every step, tables never written past their
// rows, worker rows mirror manager rows, and the pool is full again once every request is freed.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "kvtopo/block_table.h"
#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/slot_mapping.h"
#include "runtime/test_groups.h"

namespace kvtopo {
namespace {

using testing::GroupParams;
using testing::MakeGroup;

struct Live {
  int32_t row = 0;
  int64_t prompt_len = 0;
};

// `aligned_prefill`: split prefills at the hit granularity as a recurrent-aware scheduler does,
// so recurrent align groups checkpoint their state. `expect_hits`: false when a group (recurrent
// none) can never hit, which makes every hybrid lookup miss.
void RunRandom(std::vector<CacheGroup> groups, int64_t hash_block_size, uint64_t seed, int steps,
               int64_t aligned_prefill = 0, bool expect_hits = true) {
  const int32_t num_blocks = 160;
  const int64_t L = groups[0].geometry.max_model_len();
  auto created = KVCacheManager::Create({.num_blocks = num_blocks,
                                         .enable_prefix_caching = true,
                                         .hash_block_size = hash_block_size,
                                         .max_model_len = L,
                                         .groups = groups});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  KVCacheManager& m = **created;
  const int32_t rows = 16;
  std::vector<BlockTable> tables;
  for (const CacheGroup& g : groups) tables.emplace_back(g.geometry, rows);
  std::mt19937_64 rng(seed);
  std::map<int64_t, Live> live;
  std::vector<int32_t> free_rows;
  for (int32_t r = rows - 1; r >= 0; --r) free_rows.push_back(r);
  std::vector<std::vector<int32_t>> prefixes(3);
  for (auto& p : prefixes) {
    p.resize(1000);
    for (auto& t : p) t = static_cast<int32_t>(rng() % 50000);
  }
  int64_t next_id = 1;
  ComputedBlocks hits;
  int64_t allocations = 0;
  for (int step = 0; step < steps; ++step) {
    m.NewStep();
    const int op = static_cast<int>(rng() % 10);
    if (op < 3 && !free_rows.empty()) {
      // New request sharing a prefix with earlier ones.
      const auto& prefix = prefixes[rng() % prefixes.size()];
      const int64_t shared = static_cast<int64_t>(rng() % prefix.size());
      std::vector<int32_t> prompt(prefix.begin(), prefix.begin() + shared);
      const int64_t extra = 1 + static_cast<int64_t>(rng() % 200);
      for (int64_t i = 0; i < extra; ++i) prompt.push_back(static_cast<int32_t>(rng() % 50000));
      const int64_t id = next_id++;
      EXPECT_TRUE(m.AddRequest(RequestId{id}, prompt).ok());
      const TokenCount hit = m.GetComputedBlocks(RequestId{id}, hits).value();
      ASSERT_LT(hit.value(), static_cast<int64_t>(prompt.size()));
      const int64_t prompt_len = static_cast<int64_t>(prompt.size());
      // Prefill in chunks; with `aligned_prefill`, every chunk but the last ends on a multiple
      // of it (hits are multiples of it too), so recurrent states checkpoint at each boundary.
      int64_t done = hit.value();
      int64_t chunk = aligned_prefill > 0 ? aligned_prefill * (1 + static_cast<int64_t>(rng() % 4))
                                          : prompt_len - done;
      chunk = std::min(chunk, prompt_len - done);
      bool ok = m.AllocateSlots(RequestId{id}, {.num_new_tokens = TokenCount{chunk},
                                                .num_new_computed_tokens = hit,
                                                .computed = &hits,
                                                .full_sequence_must_fit = rng() % 2 == 0})
                    .value();
      done += chunk;
      while (ok && done < prompt_len) {
        m.CheckInvariants();
        chunk =
            std::min(aligned_prefill * (1 + static_cast<int64_t>(rng() % 4)), prompt_len - done);
        ok = m.AllocateSlots(RequestId{id}, {.num_new_tokens = TokenCount{chunk}}).value();
        done += chunk;
      }
      if (ok) {
        ++allocations;
        live[id] = Live{.row = free_rows.back(), .prompt_len = static_cast<int64_t>(prompt.size())};
        free_rows.pop_back();
      } else {
        EXPECT_TRUE(m.Free(RequestId{id}).ok());
        m.CheckInvariants();
        continue;
      }
    } else if (op < 4 && !live.empty()) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      EXPECT_TRUE(m.Free(RequestId{it->first}).ok());
      for (BlockTable& t : tables) t.ClearRow(it->second.row);
      free_rows.push_back(it->second.row);
      live.erase(it);
      m.CheckInvariants();
      continue;
    } else if (!live.empty()) {
      // Decode: one verified token, with lookahead slots for 3 drafts; sometimes reject.
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      const RequestId id{it->first};
      if (m.num_tokens(id).value() + 4 >= L) continue;
      EXPECT_TRUE(
          m.AppendTokens(id, std::vector<int32_t>{static_cast<int32_t>(rng() % 50000)}).ok());
      const int64_t pending = m.num_tokens(id).value() - m.num_computed_tokens(id).value();
      if (!m.AllocateSlots(
                id, {.num_new_tokens = TokenCount{pending}, .num_lookahead_tokens = TokenCount{3}})
               .value()) {
        m.CheckInvariants();
        continue;
      }
      ++allocations;
    } else {
      continue;
    }
    m.CheckInvariants();
    // Mirror every live request's last update into the worker tables.
    for (const auto& [id, info] : live) {
      for (int32_t gi = 0; gi < m.num_groups(); ++gi) {
        const auto update = m.LastUpdate(RequestId{id}, GroupId{gi});
        BlockTable& table = tables[gi];
        const int64_t k = table.kernel_blocks_per_block();
        if (update.first_column * k > table.row_length(info.row)) {
          // Created this step from prefix hits: write the whole row.
          ASSERT_TRUE(table.WriteFrom(info.row, 0, m.BlockIds(RequestId{id}, GroupId{gi})).ok());
        } else {
          ASSERT_TRUE(table.WriteFrom(info.row, update.first_column, update.block_ids).ok());
        }
        table.CheckInvariants();
        // Every non-null manager column matches the worker row.
        const auto blocks = m.BlockIds(RequestId{id}, GroupId{gi});
        const auto row = table.Row(info.row);
        ASSERT_EQ(table.row_length(info.row), static_cast<int64_t>(blocks.size()) * k);
        for (size_t j = 0; j < blocks.size(); ++j) {
          if (blocks[j] == kNullBlock) continue;
          ASSERT_EQ(row[j * k], blocks[j].value() * k);
        }
      }
    }
  }
  // The run exercised allocation and the prefix cache, not only rejections.
  EXPECT_GT(allocations, steps / 4);
  if (expect_hits) {
    EXPECT_GT(m.prefix_cache_stats().hit_tokens, 0);
  }
  for (const auto& [id, info] : live) EXPECT_TRUE(m.Free(RequestId{id}).ok());
  m.CheckInvariants();
  EXPECT_EQ(m.num_free_blocks(), num_blocks - 1);
  EXPECT_TRUE(m.ResetPrefixCache());
}

class RuntimeProperty : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(RuntimeProperty, MixedGroupsKeepInvariants) {
  const auto [dcp, interleave] = GetParam();
  const int64_t L = 2048;
  const uint64_t seed = static_cast<uint64_t>(dcp * 100 + interleave);
  // Sharded MLA alone.
  RunRandom(
      {MakeGroup({.block_size = 16, .dcp = dcp, .interleave = interleave, .max_model_len = L})},
      16 * dcp, seed, 400);
  // Sharded MLA + replicated sliding window + recurrent align (S = 3), all hit-aligned.
  RunRandom(
      {MakeGroup({.block_size = 16, .dcp = dcp, .interleave = interleave, .max_model_len = L}),
       MakeGroup({.kind = CacheKind::kSlidingWindow,
                  .block_size = 16,
                  .dcp = dcp,
                  .interleave = interleave,
                  .max_model_len = L,
                  .window = 64,
                  .replicated = dcp > 1},
                 /*volatile_last_block=*/true),
       MakeGroup({.kind = CacheKind::kRecurrent,
                  .block_size = 16,
                  .dcp = dcp,
                  .interleave = interleave,
                  .max_model_len = L,
                  .mode = RecurrentMode::kAlign,
                  .spec_blocks = 3})},
      16, seed + 1, 400, /*aligned_prefill=*/16 * dcp);
  // Replicated full attention + replicated chunked local + recurrent all (S = 1) + recurrent
  // none: one block size, as the engine's chunked-local manager needs for prefix hits.
  RunRandom({MakeGroup({.kind = CacheKind::kFullAttention,
                        .block_size = 16,
                        .dcp = dcp,
                        .interleave = interleave,
                        .max_model_len = L,
                        .replicated = dcp > 1}),
             MakeGroup({.kind = CacheKind::kChunkedLocal,
                        .block_size = 16,
                        .dcp = dcp,
                        .interleave = interleave,
                        .max_model_len = L,
                        .window = 128,
                        .replicated = dcp > 1}),
             MakeGroup({.kind = CacheKind::kRecurrent,
                        .block_size = 16,
                        .dcp = dcp,
                        .interleave = interleave,
                        .max_model_len = L,
                        .mode = RecurrentMode::kAll,
                        .spec_blocks = 1}),
             MakeGroup({.kind = CacheKind::kRecurrent,
                        .block_size = 16,
                        .dcp = dcp,
                        .interleave = interleave,
                        .max_model_len = L,
                        .mode = RecurrentMode::kNone,
                        .spec_blocks = 2})},
            16, seed + 2, 300, /*aligned_prefill=*/16 * dcp, /*expect_hits=*/false);
}

INSTANTIATE_TEST_SUITE_P(DcpAndInterleave, RuntimeProperty,
                         ::testing::Combine(::testing::Values(1, 2, 4, 16),
                                            ::testing::Values(1, 16)));

}  // namespace
}  // namespace kvtopo
