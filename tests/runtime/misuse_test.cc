// Caller misuse of KVCacheManager is an error value naming the input, never an abort, and a
// refused call changes nothing (the free count, the rows and the invariants are as before).
#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <vector>

#include "kvtopo/kv_cache_manager.h"
#include "test_groups.h"

namespace kvtopo {
namespace {

using testing::MakeGroup;
using testing::Tokens;

std::unique_ptr<KVCacheManager> Make(int32_t num_blocks = 16) {
  KVCacheManagerOptions o{.num_blocks = num_blocks, .hash_block_size = 16, .max_model_len = 4096};
  o.groups.push_back(MakeGroup({.kind = CacheKind::kFullAttention, .block_size = 16}));
  return KVCacheManager::Create(o).value();
}

void ExpectStatus(const Status& s, StatusCode code, const std::string& message) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_EQ(s.message(), message);
}

// Options an embedding engine builds by hand are checked when the manager is made.
TEST(ManagerMisuse, OptionsAreCheckedAtCreate) {
  auto refused = [](const std::function<void(KVCacheManagerOptions&)>& change) {
    KVCacheManagerOptions o{.num_blocks = 16, .hash_block_size = 16, .max_model_len = 4096};
    o.groups.push_back(MakeGroup({.kind = CacheKind::kFullAttention, .block_size = 16}));
    change(o);
    return KVCacheManager::Create(o).status();
  };
  ExpectStatus(refused([](auto& o) { o.groups.clear(); }), StatusCode::kInvalidArgument,
               "KVCacheManagerOptions.groups is empty; the plan has no cache groups");
  ExpectStatus(refused([](auto& o) { o.num_blocks = 0; }), StatusCode::kInvalidArgument,
               "KVCacheManagerOptions.num_blocks must be at least 1 (the null block), got 0");
  ExpectStatus(refused([](auto& o) { o.max_model_len = 0; }), StatusCode::kInvalidArgument,
               "--max-model-len must be positive, got 0");
  ExpectStatus(refused([](auto& o) { o.hash_block_size = 0; }), StatusCode::kInvalidArgument,
               "hash block size must be positive with --enable-prefix-caching, got 0");
  ExpectStatus(refused([](auto& o) { o.hash_block_size = 12; }), StatusCode::kInvalidArgument,
               "hash_block_size 12 does not divide the manager block size 16 of cache group 0; "
               "set it to a divisor of every group's manager block (a layout's default is their "
               "GCD)");
  ExpectStatus(refused([](auto& o) { o.groups.push_back(CacheGroup{}); }),
               StatusCode::kInvalidArgument, "cache group 1: block size must be positive");
  EXPECT_TRUE(refused([](auto& o) {
                o.hash_block_size = 0;
                o.enable_prefix_caching = false;
              }).ok());
}

TEST(ManagerMisuse, UnknownRequestIsNotFound) {
  auto m = Make();
  const RequestId nope{9};
  const std::string message = "request 9 is not registered";
  ComputedBlocks hits;
  std::vector<int64_t> common;
  const std::vector<int32_t> token = {1};
  ExpectStatus(m->AppendTokens(nope, token), StatusCode::kNotFound, message);
  ExpectStatus(m->RewindComputedTokens(nope, TokenCount{0}), StatusCode::kNotFound, message);
  ExpectStatus(m->GetComputedBlocks(nope, hits).status(), StatusCode::kNotFound, message);
  ExpectStatus(m->AllocateSlots(nope, {.num_new_tokens = TokenCount{1}}).status(),
               StatusCode::kNotFound, message);
  ExpectStatus(m->Free(nope), StatusCode::kNotFound, message);
  ExpectStatus(m->Preempt(nope), StatusCode::kNotFound, message);
  ExpectStatus(m->RemoveSkippedBlocks(nope, TokenCount{0}), StatusCode::kNotFound, message);
  ExpectStatus(m->CacheBlocks(nope, TokenCount{0}), StatusCode::kNotFound, message);
  ExpectStatus(m->GetNumCommonPrefixBlocks(nope, common), StatusCode::kNotFound, message);
  ExpectStatus(m->ValidateComputedBlocks(nope, hits), StatusCode::kNotFound, message);
  EXPECT_EQ(m->num_free_blocks(), 15);
  m->CheckInvariants();
}

TEST(ManagerMisuse, RegisteringTwiceAndBadCounts) {
  auto m = Make();
  ASSERT_TRUE(m->AddRequest(RequestId{1}, Tokens(40)).ok());
  ExpectStatus(m->AddRequest(RequestId{1}, Tokens(8)), StatusCode::kInvalidArgument,
               "request 1 is already registered; free it first");
  EXPECT_EQ(m->num_tokens(RequestId{1}).value(), 40);
  ExpectStatus(m->AddRequest(RequestId{2}, Tokens(8), RequestOptions{.num_preemptions = -1}),
               StatusCode::kInvalidArgument, "num_preemptions must be non-negative, got -1");
  EXPECT_FALSE(m->Contains(RequestId{2}));

  ExpectStatus(m->AllocateSlots(RequestId{1}, {}).status(), StatusCode::kInvalidArgument,
               "num_new_tokens must be positive (0 only with num_external_computed_tokens)");
  ExpectStatus(m->AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{1},
                                               .num_lookahead_tokens = TokenCount{-1}})
                   .status(),
               StatusCode::kInvalidArgument, "num_lookahead_tokens must be in [0, 2^40], got -1");
  ExpectStatus(
      m->AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{int64_t{1} << 41}}).status(),
      StatusCode::kInvalidArgument, "num_new_tokens must be in [0, 2^40], got 2199023255552");
  ExpectStatus(m->RewindComputedTokens(RequestId{1}, TokenCount{1}), StatusCode::kInvalidArgument,
               "num_rejected must be in [0, 0] (request 1's computed tokens), got 1");
  ExpectStatus(m->RemoveSkippedBlocks(RequestId{1}, TokenCount{-1}), StatusCode::kInvalidArgument,
               "total_computed_tokens must be non-negative, got -1");
  const std::vector<BlockId> outside = {BlockId{3}, BlockId{16}};
  ExpectStatus(m->EvictBlocks(outside), StatusCode::kInvalidArgument,
               "block id 16 is not in the pool [0, 16)");
  EXPECT_EQ(m->num_free_blocks(), 15);
  m->CheckInvariants();
}

// A request id freed and added again with another prompt: the hits found for its first prompt
// carry the first registration's stamp, so they are checked block by block and refused.
TEST(ManagerMisuse, HitsOfAFreedIdDoNotPassForItsNextPrompt) {
  auto m = Make();
  ASSERT_TRUE(m->AddRequest(RequestId{1}, Tokens(40)).ok());
  ASSERT_TRUE(m->AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{40}}).value());
  ASSERT_TRUE(m->Free(RequestId{1}).ok());  // blocks 1 and 2 stay cached
  ASSERT_TRUE(m->AddRequest(RequestId{1}, Tokens(40)).ok());
  const ComputedBlocks hits = m->GetComputedBlocks(RequestId{1}).value();
  ASSERT_EQ(hits.blocks[0], (std::vector<BlockId>{BlockId{1}, BlockId{2}}));
  ASSERT_TRUE(m->Free(RequestId{1}).ok());
  std::vector<int32_t> other = Tokens(40);
  other[0] = 7;
  ASSERT_TRUE(m->AddRequest(RequestId{1}, other).ok());
  ExpectStatus(m->AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{8},
                                               .num_new_computed_tokens = TokenCount{32},
                                               .computed = &hits})
                   .status(),
               StatusCode::kInvalidArgument,
               "stale prefix hits: block 1 (group 0, column 0) no longer caches request 1's "
               "content; call get_computed_blocks again");
  EXPECT_TRUE(m->BlockIds(RequestId{1}, GroupId{0}).empty());
  m->CheckInvariants();
}

TEST(ManagerMisuse, PrefixHitsMustBeCurrentOwnAndOnTheFirstAllocation) {
  auto m = Make();
  ASSERT_TRUE(m->AddRequest(RequestId{1}, Tokens(40)).ok());
  ASSERT_TRUE(m->AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{40}}).value());
  ASSERT_TRUE(m->Free(RequestId{1}).ok());  // blocks 3, 2, 1 at the tail; 1 and 2 cached
  ASSERT_TRUE(m->AddRequest(RequestId{2}, Tokens(40)).ok());
  const ComputedBlocks hits = m->GetComputedBlocks(RequestId{2}).value();
  ASSERT_EQ(hits.num_tokens.value(), 32);
  ASSERT_EQ(hits.blocks[0], (std::vector<BlockId>{BlockId{1}, BlockId{2}}));

  const SlotRequest with_hits{.num_new_tokens = TokenCount{8},
                              .num_new_computed_tokens = TokenCount{32},
                              .computed = &hits};
  SlotRequest missing = with_hits;
  missing.computed = nullptr;
  ExpectStatus(m->AllocateSlots(RequestId{2}, missing).status(), StatusCode::kInvalidArgument,
               "num_new_computed_tokens > 0 needs the prefix hits (computed, from "
               "GetComputedBlocks)");
  SlotRequest short_count = with_hits;
  short_count.num_new_computed_tokens = TokenCount{16};
  ExpectStatus(m->AllocateSlots(RequestId{2}, short_count).status(), StatusCode::kInvalidArgument,
               "num_new_computed_tokens is 16 but the prefix hits hold 32 tokens");
  ComputedBlocks holed = hits;
  holed.blocks[0][0] = kNullBlock;
  ExpectStatus(m->ValidateComputedBlocks(RequestId{2}, holed), StatusCode::kInvalidArgument,
               "computed blocks of group 0 hold the null block at column 0");
  SlotRequest tampered = with_hits;
  tampered.computed = &holed;  // a fresh lookup's stamp, but other blocks: checked in full
  ExpectStatus(m->AllocateSlots(RequestId{2}, tampered).status(), StatusCode::kInvalidArgument,
               "computed blocks of group 0 hold the null block at column 0");
  ComputedBlocks outside = hits;
  outside.blocks[0][1] = BlockId{16};  // the pool is blocks 0..15
  ExpectStatus(m->ValidateComputedBlocks(RequestId{2}, outside), StatusCode::kInvalidArgument,
               "computed block 16 is not in the pool");
  ComputedBlocks two_groups = hits;
  two_groups.blocks.push_back(hits.blocks[0]);
  ExpectStatus(m->ValidateComputedBlocks(RequestId{2}, two_groups), StatusCode::kInvalidArgument,
               "computed blocks hold 2 groups; the manager has 1");
  ComputedBlocks cut = hits;
  cut.blocks[0].pop_back();
  ExpectStatus(m->ValidateComputedBlocks(RequestId{2}, cut), StatusCode::kInvalidArgument,
               "computed blocks of group 0 (1 columns) do not cover the hit's 32 tokens of "
               "request 2's hashed prefix; pass the result of GetComputedBlocks for this request");
  // Another request's content: block 1 caches tokens 0..15, not request 3's.
  std::vector<int32_t> other = Tokens(40);
  other[0] = 7;
  ASSERT_TRUE(m->AddRequest(RequestId{3}, other).ok());
  ExpectStatus(m->ValidateComputedBlocks(RequestId{3}, hits), StatusCode::kInvalidArgument,
               "stale prefix hits: block 1 (group 0, column 0) no longer caches request 3's "
               "content; call get_computed_blocks again");
  ExpectStatus(m->AllocateSlots(RequestId{3}, with_hits).status(), StatusCode::kInvalidArgument,
               "stale prefix hits: block 1 (group 0, column 0) no longer caches request 3's "
               "content; call get_computed_blocks again");

  // An unrelated allocation (blocks 4..15) leaves the hits valid; evicting block 2 makes them
  // stale.
  ASSERT_TRUE(m->AllocateSlots(RequestId{3}, {.num_new_tokens = TokenCount{16 * 12}}).value());
  EXPECT_TRUE(m->ValidateComputedBlocks(RequestId{2}, hits).ok());
  const std::vector<BlockId> block2 = {BlockId{2}};
  ASSERT_TRUE(m->EvictBlocks(block2).ok());
  const int32_t free_before = m->num_free_blocks();
  ExpectStatus(m->AllocateSlots(RequestId{2}, with_hits).status(), StatusCode::kInvalidArgument,
               "stale prefix hits: block 2 (group 0, column 1) no longer caches request 2's "
               "content; call get_computed_blocks again");
  EXPECT_EQ(m->num_free_blocks(), free_before);
  EXPECT_TRUE(m->BlockIds(RequestId{2}, GroupId{0}).empty());

  // Fresh hits are accepted once; the running request refuses hits.
  const ComputedBlocks again = m->GetComputedBlocks(RequestId{2}).value();
  ASSERT_EQ(again.num_tokens.value(), 16);
  ASSERT_TRUE(m->AllocateSlots(RequestId{2}, {.num_new_tokens = TokenCount{24},
                                              .num_new_computed_tokens = again.num_tokens,
                                              .computed = &again})
                  .value());
  ASSERT_TRUE(m->Preempt(RequestId{3}).ok());
  const ComputedBlocks third = m->GetComputedBlocks(RequestId{3}).value();
  ExpectStatus(m->AllocateSlots(RequestId{2}, {.num_new_tokens = TokenCount{1},
                                               .num_new_computed_tokens = again.num_tokens,
                                               .computed = &again})
                   .status(),
               StatusCode::kInvalidArgument,
               "prefix hits (num_new_computed_tokens) are only accepted on a request's first "
               "allocation; request 2 is running");
  EXPECT_EQ(third.num_tokens.value(), 32);  // request 3's own blocks, freed by the preemption
  m->CheckInvariants();
}

TEST(ManagerMisuse, BatchesCheckEveryRequestAndCountBeforeChangingAnything) {
  auto m = Make(40);
  ASSERT_TRUE(m->AddRequest(RequestId{1}, Tokens(40)).ok());
  ASSERT_TRUE(m->AddRequest(RequestId{2}, Tokens(20)).ok());
  ASSERT_TRUE(m->AddRequest(RequestId{3}, {}).ok());
  KVCacheManager::BatchResult out;
  const std::vector<RequestId> twice = {RequestId{1}, RequestId{2}, RequestId{1}};
  ExpectStatus(m->AdmitBatch(twice, {}, false, out), StatusCode::kInvalidArgument,
               "request 1 appears twice in the batch (index 2)");
  ExpectStatus(m->FreeBatch(twice), StatusCode::kInvalidArgument,
               "request 1 appears twice in the batch (index 2)");
  const std::vector<RequestId> with_empty = {RequestId{1}, RequestId{3}};
  ExpectStatus(m->AdmitBatch(with_empty, {}, false, out), StatusCode::kInvalidArgument,
               "admission: request 3 (index 1) has no prompt tokens");
  const std::vector<RequestId> two = {RequestId{1}, RequestId{2}};
  const std::vector<int32_t> one_count = {4};
  const std::vector<int32_t> zero = {4, 0};
  ExpectStatus(m->AllocateSlotsBatch(two, one_count, {}, out), StatusCode::kInvalidArgument,
               "num_new_tokens holds 1 values for 2 requests");
  ExpectStatus(m->AllocateSlotsBatch(two, zero, {}, out), StatusCode::kInvalidArgument,
               "num_new_tokens[1] must be in [1, 2147483647], got 0");
  const std::vector<int32_t> tokens = {5, 6, 7};
  const std::vector<int32_t> counts = {1, 1};
  ExpectStatus(m->AppendTokensBatch(two, tokens, counts), StatusCode::kInvalidArgument,
               "token_ids holds 3 tokens; the counts add up to 2");
  EXPECT_EQ(m->num_free_blocks(), 39);
  EXPECT_EQ(m->num_tokens(RequestId{1}).value(), 40);

  ASSERT_TRUE(m->AdmitBatch(two, {}, false, out).ok());
  EXPECT_EQ(out.ok, (std::vector<uint8_t>{1, 1}));
  ExpectStatus(m->AdmitBatch(two, {}, false, out), StatusCode::kInvalidArgument,
               "admission: request 1 (index 0) is already running");
  const std::vector<RequestId> unknown = {RequestId{2}, RequestId{8}};
  ExpectStatus(m->FreeBatch(unknown), StatusCode::kNotFound,
               "request 8 of the batch (index 1) is not registered");
  EXPECT_TRUE(m->Contains(RequestId{2}));
  ASSERT_TRUE(m->FreeBatch(two).ok());
  EXPECT_EQ(m->num_free_blocks(), 39);
  m->CheckInvariants();
}

}  // namespace
}  // namespace kvtopo
