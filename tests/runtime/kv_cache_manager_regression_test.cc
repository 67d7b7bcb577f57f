// Inputs that once aborted the manager (found by hand and by fuzz/runtime_target.cc): each is
// either rejected where it enters with a message naming the option, or handled with every
// invariant kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kvtopo/kv_cache_manager.h"
#include "runtime/test_groups.h"

namespace kvtopo {
namespace {

using testing::MakeGroup;
using testing::Tokens;

std::vector<int64_t> ResidentColumns(const KVCacheManager& m, int64_t id, int32_t group) {
  std::vector<int64_t> out;
  const auto row = m.BlockIds(RequestId{id}, GroupId{group});
  for (size_t j = 0; j < row.size(); ++j) {
    if (row[j] != kNullBlock) out.push_back(static_cast<int64_t>(j));
  }
  return out;
}

// Full MLA (B 64, kernel 16) + recurrent `all`, both marked volatile_last_block: the recurrent
// group's hit is one checkpoint, so the look-one-block-further rule returned a hit longer than
// asked and GetComputedBlocks aborted. Create now rejects the recurrent flag.
TEST(KVCacheManagerRegression, VolatileLastBlockOnARecurrentGroupIsRejected) {
  const CacheGroup mla =
      MakeGroup({.kind = CacheKind::kMla, .block_size = 64, .kernel_block_size = 16}, true);
  CacheGroup recurrent =
      MakeGroup({.kind = CacheKind::kRecurrent, .block_size = 64, .mode = RecurrentMode::kAll});
  recurrent.volatile_last_block = true;
  auto created = KVCacheManager::Create({.num_blocks = 200,
                                         .hash_block_size = 64,
                                         .max_model_len = 4096,
                                         .groups = {mla, recurrent}});
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(created.status().message(),
            "cache group 1 is recurrent: volatile_last_block applies to attention groups only "
            "(the backend recomputes the last attention block); set it to false");

  // The same mix with the recurrent group not volatile: the shared prefix hits one block (the
  // MLA group drops its last hit block, the recurrent group accepts the length).
  recurrent.volatile_last_block = false;
  auto ok = KVCacheManager::Create({.num_blocks = 200,
                                    .hash_block_size = 64,
                                    .max_model_len = 4096,
                                    .groups = {mla, recurrent}});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  KVCacheManager& m = **ok;
  ASSERT_TRUE(m.AddRequest(RequestId{1}, Tokens(399)).ok());
  ASSERT_TRUE(m.AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{399}}).value());
  m.NewStep();
  std::vector<int32_t> second = Tokens(130);
  second[128] = 9000;
  second[129] = 9001;
  ASSERT_TRUE(m.AddRequest(RequestId{2}, second).ok());
  const ComputedBlocks hits = m.GetComputedBlocks(RequestId{2}).value();
  EXPECT_EQ(hits.num_tokens.value(), 64);
  EXPECT_EQ(hits.blocks[0].size(), 1u);
  EXPECT_EQ(hits.blocks[1].size(), 1u);
  m.CheckInvariants();
}

// Full MLA + recurrent align (S = 2, B = 16, L = 1691): prefill chunks of 759 (lookahead 3),
// 10 (lookahead 2) and 55 (lookahead 3) tokens, none ending on a block boundary. As the engine's
// MambaManager, the state two moves back (column 47) stays until a later step's
// RemoveSkippedBlocks passes it, so the row holds 3 + S pages for that step; every block comes
// back at free. (The figures are those of the fork's single_type_kv_cache_manager.py at
// 28be48fa9 run over the same calls.)
TEST(KVCacheManagerRegression, AlignRowAfterUnalignedChunks) {
  const int64_t L = 1691;
  auto created = KVCacheManager::Create(
      {.num_blocks = 400,
       .hash_block_size = 16,
       .max_model_len = L,
       .groups = {MakeGroup({.kind = CacheKind::kMla, .block_size = 16, .max_model_len = L}),
                  MakeGroup({.kind = CacheKind::kRecurrent,
                             .block_size = 16,
                             .max_model_len = L,
                             .mode = RecurrentMode::kAlign,
                             .spec_blocks = 2})}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  KVCacheManager& m = **created;
  ASSERT_TRUE(m.AddRequest(RequestId{1}, Tokens(L)).ok());
  ASSERT_TRUE(m.AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{759},
                                             .num_lookahead_tokens = TokenCount{3}})
                  .value());
  m.CheckInvariants();
  EXPECT_EQ(ResidentColumns(m, 1, 1), (std::vector<int64_t>{47, 48, 49}));
  ASSERT_TRUE(m.AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{10},
                                             .num_lookahead_tokens = TokenCount{2}})
                  .value());
  m.CheckInvariants();
  EXPECT_EQ(ResidentColumns(m, 1, 1), (std::vector<int64_t>{47, 48, 49, 50}));
  ASSERT_TRUE(m.AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{55},
                                             .num_lookahead_tokens = TokenCount{3}})
                  .value());
  m.CheckInvariants();
  EXPECT_EQ(ResidentColumns(m, 1, 1), (std::vector<int64_t>{47, 48, 51, 52, 53}));
  ASSERT_TRUE(m.Free(RequestId{1}).ok());
  m.CheckInvariants();
  EXPECT_EQ(m.num_free_blocks(), 399);
}

// Decode steps of one token and S drafts (all rejected) cross a block boundary every step when
// the block is smaller than the step. The engine's MambaManager then keeps earlier running
// states until its walk from the skipped column reaches them; the most a row holds over 200
// such steps is the engine's own figure (the fork's manager run over the same calls), and free
// returns every block.
TEST(KVCacheManagerRegression, AlignRowWhenStepsCrossBlocks) {
  struct Case {
    int64_t block, spec, most_resident;
  };
  for (const Case& c : {Case{4, 2, 5}, Case{4, 7, 12}, Case{1, 2, 8}, Case{2, 3, 8}}) {
    SCOPED_TRACE(::testing::Message() << "B " << c.block << " S " << c.spec);
    auto created = KVCacheManager::Create(
        {.num_blocks = 4000,
         .hash_block_size = c.block,
         .max_model_len = 4096,
         .groups = {MakeGroup({.kind = CacheKind::kMla, .block_size = c.block}),
                    MakeGroup({.kind = CacheKind::kRecurrent,
                               .block_size = c.block,
                               .mode = RecurrentMode::kAlign,
                               .spec_blocks = c.spec})}});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    KVCacheManager& m = **created;
    ASSERT_TRUE(m.AddRequest(RequestId{1}, Tokens(100)).ok());
    ASSERT_TRUE(m.AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{100}}).value());
    size_t most = 0;
    for (int step = 0; step < 200; ++step) {
      ASSERT_TRUE(m.AppendTokens(RequestId{1}, std::vector<int32_t>{step}).ok());
      ASSERT_TRUE(m.AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{1 + c.spec},
                                                 .num_lookahead_tokens = TokenCount{c.spec}})
                      .value());
      ASSERT_TRUE(m.RewindComputedTokens(RequestId{1}, TokenCount{c.spec}).ok());
      m.CheckInvariants();
      most = std::max(most, ResidentColumns(m, 1, 1).size());
    }
    EXPECT_EQ(most, static_cast<size_t>(c.most_resident));
    ASSERT_TRUE(m.Free(RequestId{1}).ok());
    EXPECT_EQ(m.num_free_blocks(), 3999);
  }
}

// A step past max_model_len (found by a Python fuzz of the module: 2^31 new tokens on Qwen3-Next's
// plan): the engine's scheduler never asks it, and its manager caps the slots at max_model_len;
// the recurrent align row, sized by the tokens of the step, grew 3,947,581 columns past its
// 61-column block-table row (16 MB; the 2^40 tokens a step may ask would take gigabytes) and the
// invariant check aborted. The row is capped as the slots are.
TEST(KVCacheManagerRegression, AlignRowOfAStepPastMaxModelLen) {
  const int64_t L = 64;
  auto created = KVCacheManager::Create(
      {.num_blocks = 40,
       .hash_block_size = 4,
       .max_model_len = L,
       .groups = {MakeGroup({.kind = CacheKind::kMla, .block_size = 4, .max_model_len = L}),
                  MakeGroup({.kind = CacheKind::kRecurrent,
                             .block_size = 4,
                             .max_model_len = L,
                             .mode = RecurrentMode::kAlign,
                             .spec_blocks = 1})}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  KVCacheManager& m = **created;
  ASSERT_TRUE(m.AddRequest(RequestId{1}, Tokens(10)).ok());
  ASSERT_TRUE(m.AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{10}}).value());
  ASSERT_TRUE(
      m.AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{int64_t{1} << 31}}).value());
  m.CheckInvariants();
  // 16 attention columns (64 tokens); the align row: the previous state (kept for the state
  // copy), 15 columns skipped, the state and the speculative block: cdiv(64, 4) + 1 = 17, what
  // max_model_len needs (uncapped it grew 536,870,916 columns).
  EXPECT_EQ(m.BlockIds(RequestId{1}, GroupId{0}).size(), 16u);
  EXPECT_EQ(ResidentColumns(m, 1, 1), (std::vector<int64_t>{2, 15, 16}));
  ASSERT_TRUE(m.Free(RequestId{1}).ok());
  m.CheckInvariants();
  EXPECT_EQ(m.num_free_blocks(), 39);
}

}  // namespace
}  // namespace kvtopo
