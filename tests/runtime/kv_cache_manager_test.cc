#include "kvtopo/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "runtime/test_groups.h"

namespace kvtopo {
namespace {

using testing::GroupParams;
using testing::Ids;
using testing::MakeGroup;
using testing::Tokens;

std::vector<int32_t> Row(const KVCacheManager& m, int64_t request, int32_t group = 0) {
  std::vector<int32_t> ids;
  for (BlockId b : m.BlockIds(RequestId{request}, GroupId{group})) ids.push_back(b.value());
  return ids;
}

std::unique_ptr<KVCacheManager> Make(std::vector<CacheGroup> groups, int32_t num_blocks,
                                     int64_t hash_block_size = 16, bool caching = true) {
  auto m = KVCacheManager::Create({.num_blocks = num_blocks,
                                   .enable_prefix_caching = caching,
                                   .hash_block_size = hash_block_size,
                                   .max_model_len = 4096,
                                   .groups = std::move(groups)});
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

bool Step(KVCacheManager& m, int64_t request, int64_t num_new, int64_t lookahead = 0) {
  const bool ok =
      m.AllocateSlots(RequestId{request}, {.num_new_tokens = TokenCount{num_new},
                                           .num_lookahead_tokens = TokenCount{lookahead}})
          .value();
  m.CheckInvariants();
  return ok;
}

TEST(KVCacheManager, RejectsBadOptions) {
  auto no_groups = KVCacheManager::Create({.num_blocks = 4, .max_model_len = 16});
  EXPECT_FALSE(no_groups.ok());
  auto bad_hash = KVCacheManager::Create({.num_blocks = 4,
                                          .hash_block_size = 24,
                                          .max_model_len = 4096,
                                          .groups = {MakeGroup({.block_size = 16})}});
  ASSERT_FALSE(bad_hash.ok());
  EXPECT_NE(bad_hash.status().message().find("hash_block_size 24 does not divide"),
            std::string::npos);
}

TEST(KVCacheManager, AllocatesPositionalBlocksAndGrowsOnDecode) {
  auto m = Make({MakeGroup({.block_size = 16})}, 10);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(40)).ok());
  EXPECT_EQ(m->GetComputedBlocks(RequestId{1}).value().num_tokens, TokenCount{0});
  ASSERT_TRUE(Step(*m, 1, 40));
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{1, 2, 3}));
  for (int t = 40; t < 48; ++t) {
    EXPECT_TRUE(m->AppendTokens(RequestId{1}, std::vector<int32_t>{t}).ok());
    ASSERT_TRUE(Step(*m, 1, 1));
  }
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_TRUE(m->AppendTokens(RequestId{1}, std::vector<int32_t>{48}).ok());
  ASSERT_TRUE(Step(*m, 1, 1, /*lookahead=*/3));  // slots for 49 + 3 tokens
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{1, 2, 3, 4}));
  auto update = m->LastUpdate(RequestId{1}, GroupId{0});
  EXPECT_EQ(update.first_column, 3);
  EXPECT_EQ(update.block_ids.size(), 1u);
  EXPECT_TRUE(m->Free(RequestId{1}).ok());
  EXPECT_EQ(m->num_free_blocks(), 9);
  m->CheckInvariants();
}

TEST(KVCacheManager, NotEnoughBlocksIsAValue) {
  auto m = Make({MakeGroup({.block_size = 16})}, 4);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(64)).ok());
  EXPECT_FALSE(Step(*m, 1, 64));  // 4 blocks needed, 3 free
  EXPECT_EQ(m->num_free_blocks(), 3);
  EXPECT_TRUE(Row(*m, 1).empty());
  ASSERT_TRUE(Step(*m, 1, 48));  // a smaller chunk fits
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(8, 1000)).ok());
  EXPECT_FALSE(m->AllocateSlots(RequestId{2},
                                {.num_new_tokens = TokenCount{8}, .full_sequence_must_fit = true})
                   .value());
}

TEST(KVCacheManager, PrefixHitStillRecomputesTheLastPromptToken) {
  auto m = Make({MakeGroup({.block_size = 16})}, 10);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(32)).ok());
  ASSERT_TRUE(Step(*m, 1, 32));
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(m->Free(RequestId{1}).ok());  // free list: 3..9, 2, 1

  // Same 32 tokens: a full 2-block hit would leave nothing to compute, so only 16 tokens hit.
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(32)).ok());
  ComputedBlocks hits = m->GetComputedBlocks(RequestId{2}).value();
  EXPECT_EQ(hits.num_tokens, TokenCount{16});
  ASSERT_EQ(hits.blocks[0].size(), 1u);
  EXPECT_EQ(hits.blocks[0][0], BlockId{1});
  ASSERT_TRUE(m->AllocateSlots(RequestId{2}, {.num_new_tokens = TokenCount{16},
                                              .num_new_computed_tokens = hits.num_tokens,
                                              .computed = &hits})
                  .value());
  m->CheckInvariants();
  EXPECT_EQ(Row(*m, 2), (std::vector<int32_t>{1, 3}));  // 1 reused, 3 fresh from the head
  EXPECT_EQ(m->num_computed_tokens(RequestId{2}), TokenCount{32});

  // Block 3 now caches the content free block 2 still caches: both stay cached, and a lookup
  // finds 2, which cached it first (vLLM's BlockHashToBlockMap). One more token and both blocks
  // hit: 2 leaves the free list although 3 holds the same content.
  EXPECT_TRUE(m->AddRequest(RequestId{3}, Tokens(33)).ok());
  hits = m->GetComputedBlocks(RequestId{3}).value();
  EXPECT_EQ(hits.num_tokens, TokenCount{32});
  EXPECT_EQ(hits.blocks[0], (std::vector<BlockId>{BlockId{1}, BlockId{2}}));
  ASSERT_TRUE(m->AllocateSlots(RequestId{3}, {.num_new_tokens = TokenCount{1},
                                              .num_new_computed_tokens = hits.num_tokens,
                                              .computed = &hits})
                  .value());
  m->CheckInvariants();
  EXPECT_EQ(Row(*m, 3), (std::vector<int32_t>{1, 2, 4}));  // 4: the head of the free list
  EXPECT_EQ(m->num_free_blocks(), 5);                      // 1, 2, 3 and 4 in use
  EXPECT_EQ(m->prefix_cache_stats().hit_tokens, 48);
  EXPECT_TRUE(m->Free(RequestId{2}).ok());
  EXPECT_TRUE(m->Free(RequestId{3}).ok());
  EXPECT_EQ(m->num_free_blocks(), 9);
  m->CheckInvariants();
}

// A request given as prompt embeddings has placeholder ids: its hash blocks are keyed by their
// rows, so equal ids over different embeddings share no block (vLLM keys them by the rows too).
TEST(KVCacheManager, PromptEmbeddingsKeyTheirBlocks) {
  auto m = Make({MakeGroup({.block_size = 16})}, 12);
  std::vector<std::byte> embeds(40 * 8);  // 40 rows of 8 bytes
  for (size_t i = 0; i < embeds.size(); ++i) embeds[i] = std::byte(i % 251);
  const std::vector<int32_t> zeros(40, 0);
  auto add = [&](int64_t id, std::span<const std::byte> rows, int64_t num_rows) {
    return m->AddRequest(RequestId{id}, zeros,
                         RequestOptions{.prompt_embeds = rows, .prompt_embeds_rows = num_rows});
  };
  auto hit = [&](int64_t id) { return m->GetComputedBlocks(RequestId{id}).value().num_tokens; };
  ASSERT_TRUE(add(1, embeds, 40).ok());
  ASSERT_TRUE(Step(*m, 1, 40));
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{1, 2, 3}));
  ASSERT_TRUE(m->Free(RequestId{1}).ok());

  ASSERT_TRUE(add(2, embeds, 40).ok());
  EXPECT_EQ(hit(2), TokenCount{32});
  std::vector<std::byte> other = embeds;
  other[20 * 8] = std::byte{0xff};  // row 20: hash block 1
  ASSERT_TRUE(add(3, other, 40).ok());
  EXPECT_EQ(hit(3), TokenCount{16});
  ASSERT_TRUE(m->AddRequest(RequestId{4}, zeros).ok());  // the ids alone
  EXPECT_EQ(hit(4), TokenCount{0});
  // Rows for the first 20 tokens only (the rest generated): block 1 digests rows 16-19.
  ASSERT_TRUE(add(5, std::span(embeds).first(20 * 8), 20).ok());
  EXPECT_EQ(hit(5), TokenCount{16});

  const Status more_rows = add(6, std::span(embeds), 80);
  EXPECT_EQ(more_rows.message(),
            "prompt_embeds: 320 bytes as 80 rows for a prompt of 40 tokens; give one equal-sized "
            "row per prompt token, at most as many rows as tokens");
  EXPECT_EQ(add(6, std::span(embeds).first(81), 40).message(),
            "prompt_embeds: 81 bytes as 40 rows for a prompt of 40 tokens; give one equal-sized "
            "row per prompt token, at most as many rows as tokens");
  EXPECT_EQ(add(6, {}, 3).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(m->Contains(RequestId{6}));
  m->CheckInvariants();
}

TEST(KVCacheManager, EvictsLeastRecentlyFreedChainTailFirst) {
  auto m = Make({MakeGroup({.block_size = 16})}, 10);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(48)).ok());
  ASSERT_TRUE(Step(*m, 1, 48));  // 1 2 3
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(32, 500)).ok());
  ASSERT_TRUE(Step(*m, 2, 32));             // 4 5
  EXPECT_TRUE(m->Free(RequestId{1}).ok());  // free list: 6 7 8 9 3 2 1
  EXPECT_TRUE(m->Free(RequestId{2}).ok());  // ... 5 4
  EXPECT_TRUE(m->AddRequest(RequestId{3}, Tokens(80, 900)).ok());
  ASSERT_TRUE(Step(*m, 3, 80));
  EXPECT_EQ(Row(*m, 3), (std::vector<int32_t>{6, 7, 8, 9, 3}));  // the tail of chain 1 goes first
  // Blocks 1 and 2 are still cached: a request repeating request 1 hits them.
  EXPECT_TRUE(m->AddRequest(RequestId{4}, Tokens(49)).ok());
  EXPECT_EQ(m->GetComputedBlocks(RequestId{4}).value().num_tokens, TokenCount{32});
}

TEST(KVCacheManager, DcpShardedGroupCoversManagerBlocks) {
  // MLA, B = 16, DCP4: one block id covers 64 global tokens; hashes at 64-token granularity.
  auto m = Make({MakeGroup({.block_size = 16, .dcp = 4})}, 10, 64);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(130)).ok());
  ASSERT_TRUE(Step(*m, 1, 130));
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(130)).ok());
  EXPECT_EQ(m->GetComputedBlocks(RequestId{2}).value().num_tokens, TokenCount{128});
}

TEST(KVCacheManager, SlidingWindowRecyclesOutOfWindowBlocks) {
  // Window 32, B = 16, four usable blocks.
  auto m =
      Make({MakeGroup({.kind = CacheKind::kSlidingWindow, .block_size = 16, .window = 32})}, 5);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(64)).ok());
  ASSERT_TRUE(Step(*m, 1, 64));
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(m->num_free_blocks(), 0);
  // Token 64: positions before 64 - 31 = 33 are out of the window, so columns 0 and 1 are freed
  // (in reverse: 2 then 1) before the new block is taken from the head.
  EXPECT_TRUE(m->AppendTokens(RequestId{1}, std::vector<int32_t>{64}).ok());
  ASSERT_TRUE(Step(*m, 1, 1));
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{0, 0, 3, 4, 2}));
  EXPECT_EQ(m->num_free_blocks(), 1);
  for (int t = 65; t < 81; ++t) {
    EXPECT_TRUE(m->AppendTokens(RequestId{1}, std::vector<int32_t>{t}).ok());
    ASSERT_TRUE(Step(*m, 1, 1));
  }
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{0, 0, 0, 4, 2, 1}));
}

TEST(KVCacheManager, RecurrentAlignReusesSpeculativeColumnsWithSEqualsSeven) {
  auto m = Make({MakeGroup({.kind = CacheKind::kRecurrent,
                            .block_size = 16,
                            .mode = RecurrentMode::kAlign,
                            .spec_blocks = 7})},
                32);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(32)).ok());
  ASSERT_TRUE(Step(*m, 1, 32));
  // cdiv(32, 16) + 7 = 9 columns: running state in column 1, speculative 2..8.
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(m->AppendTokens(RequestId{1}, std::vector<int32_t>{32}).ok());
  ASSERT_TRUE(Step(*m, 1, 1));
  // As the engine's MambaManager: the first speculative block (2) becomes the running state in
  // column 2, the previous state stays in column 1, and one fresh block (9) is appended.
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  auto update = m->LastUpdate(RequestId{1}, GroupId{0});
  EXPECT_EQ(update.first_column, 9);
  EXPECT_EQ(Ids(update.block_ids), (std::vector<int32_t>{9}));
  EXPECT_EQ(Ids(m->AppendedBlocks(RequestId{1}, GroupId{0})), (std::vector<int32_t>{9}));
  for (int t = 33; t < 48; ++t) {
    EXPECT_TRUE(m->AppendTokens(RequestId{1}, std::vector<int32_t>{t}).ok());
    ASSERT_TRUE(Step(*m, 1, 1));
    EXPECT_EQ(Row(*m, 1).size(), 10u);
  }
  // By token 48 the state two steps back (block 1) is released.
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{0, 0, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_TRUE(m->AppendTokens(RequestId{1}, std::vector<int32_t>{48}).ok());
  ASSERT_TRUE(Step(*m, 1, 1));
  EXPECT_EQ(Row(*m, 1), (std::vector<int32_t>{0, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  // 2 + S resident pages, position-indexed row cdiv(49, 16) + 7 = 11 columns.
  EXPECT_EQ(m->num_free_blocks(), 31 - 9);
  const std::vector<BlockId> queue = KVCacheInspector(*m).FreeQueue();
  EXPECT_EQ(Ids(std::span<const BlockId>(queue).last(1)), (std::vector<int32_t>{1}));
  EXPECT_TRUE(m->Free(RequestId{1}).ok());
  EXPECT_EQ(m->num_free_blocks(), 31);
}

TEST(KVCacheManager, HybridHitIsCommonToAllGroups) {
  // Sharded MLA (DCP2, B = 16: 32-token blocks) + replicated recurrent align with B = 16.
  std::vector<CacheGroup> groups = {MakeGroup({.block_size = 16, .dcp = 2}),
                                    MakeGroup({.kind = CacheKind::kRecurrent,
                                               .block_size = 16,
                                               .dcp = 2,
                                               .mode = RecurrentMode::kAlign,
                                               .spec_blocks = 1})};
  auto m = Make(groups, 40, 16);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(64)).ok());
  ASSERT_TRUE(Step(*m, 1, 64));  // state at 64 is aligned to lcm(32, 16) = 32: cached
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(80)).ok());
  ComputedBlocks hits = m->GetComputedBlocks(RequestId{2}).value();
  EXPECT_EQ(hits.num_tokens, TokenCount{64});
  EXPECT_EQ(hits.blocks[0].size(), 2u);
  EXPECT_EQ(hits.blocks[1].size(), 4u);  // [null, null, null, state@64]
  EXPECT_EQ(hits.blocks[1][0], kNullBlock);
  const SlotRequest step{.num_new_tokens = TokenCount{16},
                         .num_new_computed_tokens = hits.num_tokens,
                         .computed = &hits};
  // The recurrent state was cached in this very step: the request waits one step.
  EXPECT_FALSE(m->AllocateSlots(RequestId{2}, step).value());
  m->NewStep();
  ASSERT_TRUE(m->AllocateSlots(RequestId{2}, {.num_new_tokens = TokenCount{16},
                                              .num_new_computed_tokens = hits.num_tokens,
                                              .computed = &hits})
                  .value());
  m->CheckInvariants();
  EXPECT_TRUE(m->Free(RequestId{1}).ok());
  EXPECT_TRUE(m->Free(RequestId{2}).ok());
  EXPECT_EQ(m->num_free_blocks(), 39);
}

// A sliding window beside a group of larger blocks: hits are multiples of the 32-token
// alignment, and a window of 8 over 8-token blocks consults one block before each, so only that
// block of each aligned segment enters the prefix cache; under EAGLE also the block after it,
// which its hit drops (vllm-project/vllm#44082; without it the EAGLE window finds no hit).
TEST(KVCacheManager, SlidingWindowCachesOnlyTheBlocksAHitConsults) {
  const auto stored_columns = [](bool eagle) {
    auto m = KVCacheManager::Create(
        {.num_blocks = 40,
         .enable_prefix_caching = true,
         .hash_block_size = 8,
         .max_model_len = 4096,
         .groups = {MakeGroup({.block_size = 32}, eagle),
                    MakeGroup({.kind = CacheKind::kSlidingWindow, .block_size = 8, .window = 8},
                              eagle)},
         .enable_kv_cache_events = true});
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_TRUE((*m)->AddRequest(RequestId{1}, Tokens(64)).ok());
    EXPECT_TRUE(Step(**m, 1, 64));
    // The sliding group's stored columns: where its event's hashes sit among the request's
    // (8-token hash blocks, one per column); the event's tokens span every column of the call.
    const auto span = KVCacheInspector(**m).RequestBlockHashes(RequestId{1});
    const std::vector<BlockHash> hashes(span.begin(), span.end());
    std::vector<int64_t> columns;
    for (const KVCacheEvent& e : (*m)->TakeEvents()) {
      if (e.type != KVCacheEvent::Type::kBlockStored || e.group != GroupId{1}) continue;
      EXPECT_EQ(e.token_ids, Tokens(64));
      for (const BlockHash& h : e.block_hashes) {
        columns.push_back(std::find(hashes.begin(), hashes.end(), h) - hashes.begin());
      }
    }
    EXPECT_TRUE((*m)->Free(RequestId{1}).ok());
    EXPECT_TRUE((*m)->AddRequest(RequestId{2}, Tokens(65)).ok());
    const int64_t hit = (*m)->GetComputedBlocks(RequestId{2}).value().num_tokens.value();
    return std::make_pair(columns, hit);
  };
  EXPECT_EQ(stored_columns(false), std::make_pair(std::vector<int64_t>{3, 7}, int64_t{64}));
  // EAGLE: the hit of 64 drops a block and re-aligns to 32.
  EXPECT_EQ(stored_columns(true), std::make_pair(std::vector<int64_t>{3, 4, 7}, int64_t{32}));
}

TEST(KVCacheManager, VolatileGroupDropsTheLastHitBlock) {
  auto m = Make({MakeGroup({.block_size = 16}, /*volatile_last_block=*/true)}, 10);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(48)).ok());
  ASSERT_TRUE(Step(*m, 1, 48));
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(49)).ok());
  EXPECT_EQ(m->GetComputedBlocks(RequestId{2}).value().num_tokens, TokenCount{32});
}

}  // namespace
}  // namespace kvtopo
