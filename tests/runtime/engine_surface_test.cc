// The engine surface a vLLM-style scheduler needs beyond the step protocol: explicit layouts,
// connector and encoder arguments, cache control calls, statistics, events and the inspector.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "kvtopo/kv_cache_manager.h"
#include "runtime/test_groups.h"

namespace kvtopo {
namespace {

using testing::Ids;

std::unique_ptr<KVCacheManager> FromJson(const std::string& json) {
  auto layout = ParseCacheLayoutJson(json);
  EXPECT_TRUE(layout.ok()) << layout.status().ToString();
  auto options = KVCacheManagerOptions::FromLayout(*layout);
  EXPECT_TRUE(options.ok()) << options.status().ToString();
  auto m = KVCacheManager::Create(*options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

std::vector<int32_t> Tokens(int32_t first, int64_t n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

bool Alloc(KVCacheManager& m, int64_t id, int64_t n, SlotRequest step = {}) {
  step.num_new_tokens = TokenCount{n};
  return m.AllocateSlots(RequestId{id}, step).value();
}

TEST(CacheLayout, MixedBlockSizesChunkedLocalAndSchedulerLcm) {
  const std::string groups = R"("groups": [
      {"kind": "full_attention", "block_size": 32, "page_size_bytes": 4096, "layers": ["l0"]},
      {"kind": "chunked_local", "block_size": 16, "attention_chunk_size": 64,
       "page_size_bytes": 2048}]})";
  // With prefix caching the engine's chunked-local manager refuses a hit alignment (32) other
  // than its block at the first lookup; kvtopo refuses the manager.
  auto cached = ParseCacheLayoutJson(R"({"num_blocks": 64, "max_model_len": 1024, )" + groups);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  EXPECT_EQ(KVCacheManager::Create(*KVCacheManagerOptions::FromLayout(*cached)).status().message(),
            "cache group 1 is chunked local attention with 16-token blocks beside groups whose "
            "hits align to 32 tokens: the engine's chunked-local manager refuses groups of other "
            "block sizes at its first prefix-cache lookup; give every group one block size or "
            "set enable_prefix_caching to false");
  auto m = FromJson(
      R"({"num_blocks": 64, "max_model_len": 1024, "enable_prefix_caching": false, )" + groups);
  EXPECT_EQ(m->scheduler_block_size(), 32);
  EXPECT_EQ(m->hash_block_size(), 16);
  EXPECT_EQ(m->group(GroupId{0}).layer_names, std::vector<std::string>{"l0"});
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 100)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 100));
  // Full: cdiv(100, 32) = 4 blocks; chunked: cdiv(100, 16) = 7 blocks, none skipped yet.
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{0})), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{1})),
            (std::vector<int32_t>{5, 6, 7, 8, 9, 10, 11}));
  // One decode token: 101 computed, chunk [64, 128) is current: columns 0-3 of the chunked row
  // are released (nulls), the full row keeps everything.
  ASSERT_TRUE(Alloc(*m, 1, 1));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{1})),
            (std::vector<int32_t>{0, 0, 0, 0, 9, 10, 11}));
  m->CheckInvariants();
}

// Row widths of lengths near 2^63 are refused with the quantity named, not wrapped: a
// recurrent row's S columns past cdiv(L, B), and an encoder-decoder row of the encoder budget
// aligned to 128 tokens.
TEST(CacheLayout, RowWidthsOfHugeLengthsAreRefused) {
  const auto refusal = [](const std::string& json) {
    Result<CacheLayout> layout = ParseCacheLayoutJson(json);
    EXPECT_TRUE(layout.ok()) << layout.status().ToString();
    return KVCacheManagerOptions::FromLayout(*layout).status().message();
  };
  EXPECT_EQ(refusal(R"({"num_blocks": 8, "max_model_len": 9223372036854775807,
      "enable_prefix_caching": false, "groups": [{"kind": "mamba", "block_size": 1,
      "mamba_cache_mode": "all", "num_speculative_blocks": 3, "page_size_bytes": 64}]})"),
            "cache layout group 0: block-table columns overflows 64 bits "
            "(9223372036854775807 + 3)");
  EXPECT_EQ(refusal(R"({"num_blocks": 8, "max_model_len": 64, "enable_prefix_caching": false,
      "max_num_batched_tokens": 9223372036854775807, "groups": [
      {"kind": "full_attention", "block_size": 1, "page_size_bytes": 64},
      {"kind": "cross_attention", "block_size": 1, "page_size_bytes": 64}]})"),
            "cache layout group 0: block-table columns overflows 64 bits "
            "(72057594037927936 x 128)");
}

TEST(CacheLayout, TwoSlidingWindowsAndBlockSizeTwelve) {
  auto m = FromJson(R"({"num_blocks": 64, "max_model_len": 1024, "enable_prefix_caching": false,
      "groups": [
      {"kind": "sliding_window", "block_size": 12, "sliding_window": 24, "page_size_bytes": 64},
      {"kind": "sliding_window", "block_size": 12, "sliding_window": 48, "page_size_bytes": 64}]})");
  EXPECT_EQ(m->scheduler_block_size(), 12);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 60)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 60));
  ASSERT_TRUE(Alloc(*m, 1, 1));  // 60 computed: window 24 skips 37 tokens (3 blocks), 48 skips 13
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{0})), (std::vector<int32_t>{0, 0, 0, 4, 5, 11}));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{1})), (std::vector<int32_t>{0, 7, 8, 9, 10, 12}));
  m->CheckInvariants();
}

TEST(CacheLayout, SlidingWindowPlusMambaHitsAtTheLcm) {
  const std::string json = R"({"num_blocks": 200, "max_model_len": 4096, "groups": [
      {"kind": "sliding_window", "block_size": 16, "sliding_window": 32, "page_size_bytes": 64},
      {"kind": "mamba", "block_size": 64, "mamba_cache_mode": "align", "page_size_bytes": 256}]})";
  auto m = FromJson(json);
  EXPECT_EQ(m->scheduler_block_size(), 64);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 256)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 256));
  m->NewStep();
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(0, 300)).ok());
  const ComputedBlocks hits = m->GetComputedBlocks(RequestId{2}).value();
  EXPECT_EQ(hits.num_tokens.value(), 256);
  // The window keeps the last cdiv(31, 16) = 2 blocks before 256; mamba the state at 256.
  EXPECT_EQ(Ids(hits.blocks[0]),
            (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 16}));
  EXPECT_EQ(Ids(hits.blocks[1]), (std::vector<int32_t>{0, 0, 0, 17}));
  m->CheckInvariants();
}

TEST(CacheLayout, ErrorsNameTheKey) {
  EXPECT_EQ(ParseCacheLayoutJson(R"({"num_blocks": 4,})").status().message(),
            "cache layout is not valid JSON: [json.exception.parse_error.101] parse error at line "
            "1, column 18: syntax error while parsing object key - unexpected '}'; expected "
            "string literal");
  EXPECT_EQ(ParseCacheLayoutJson(R"({"num_blocks": 4, "max_model_len": 8, "groups": [
      {"kind": "full", "block_size": 16, "page_size_bytes": 1}]})")
                .status()
                .message(),
            "cache layout group 0: unknown kind 'full'; accepted: full_attention, mla, "
            "sliding_window, sliding_window_mla, chunked_local, mamba (or recurrent), "
            "cross_attention");
  EXPECT_EQ(ParseCacheLayoutJson(R"({"num_blocks": 0, "max_model_len": 8, "groups": []})")
                .status()
                .message(),
            "cache layout: 'num_blocks' must be an integer in [1, 2147483647], got 0");
  // Past 2^63 - 1: read as unsigned, never wrapped to a negative or in-range value.
  EXPECT_EQ(ParseCacheLayoutJson(
                R"({"num_blocks": 4, "max_model_len": 18446744073709551615, "groups": []})")
                .status()
                .message(),
            "cache layout: 'max_model_len' must be an integer in [1, 9223372036854775807], got "
            "18446744073709551615");
  EXPECT_EQ(ParseCacheLayoutJson(R"({"num_blocks": 4, "max_model_len": 8, "groups": [
      {"kind": "mla", "block_size": 16, "page_size_bytes": 1, "windw": 3}]})")
                .status()
                .message()
                .substr(0, 48),
            "cache layout group 0: unknown key 'windw'; accep");
  const std::pair<const char*, const char*> refused[] = {
      {R"("groups": [])", "cache layout: 'groups' must be a non-empty list of group objects"},
      {R"("groups": [{"block_size": 16, "page_size_bytes": 64}])",
       "cache layout group 0: 'kind' is missing or not a string"},
      {R"("groups": [{"kind": "mla", "block_size": 16}])",
       "cache layout group 0: 'page_size_bytes' is missing"},
      {R"("groups": [{"kind": "mamba", "block_size": 16, "page_size_bytes": 64,
          "mamba_cache_mode": 3}])",
       "cache layout group 0: 'mamba_cache_mode' must be none, align or all, got 3"},
      {R"("groups": [{"kind": "mamba", "block_size": 16, "page_size_bytes": 64,
          "mamba_cache_mode": "some"}])",
       "cache layout group 0: 'mamba_cache_mode' must be none, align or all, got \"some\""},
      {R"("groups": [{"kind": "sliding_window", "block_size": 16, "page_size_bytes": 64}])",
       "cache layout group 0: a sliding-window group needs 'sliding_window'"},
      {R"("groups": [{"kind": "chunked_local", "block_size": 16, "page_size_bytes": 64}])",
       "cache layout group 0: a chunked-local group needs 'attention_chunk_size'"},
      {R"("log_stats": "yes", "groups": [{"kind": "mla", "block_size": 16,
          "page_size_bytes": 64}])",
       "cache layout: 'log_stats' must be true or false"},
      {R"("groups": [{"kind": "full_attention", "block_size": 16, "sink_len": -16,
          "page_size_bytes": 64}])",
       "cache layout group 0: 'sink_len' must be an integer in [0, 1073741824], got -16"},
      {R"("groups": [{"kind": "full_attention", "block_size": 16, "lookup_class": -1,
          "page_size_bytes": 64}])",
       "cache layout group 0: 'lookup_class' must be an integer in [0, 2147483647], got -1"},
      {R"("groups": [{"kind": "mla", "block_size": 16, "sink_len": 32,
          "page_size_bytes": 64}])",
       "cache layout group 0: layer 'group0': static attention sinks (32 tokens) belong to full "
       "attention layers, not mla"},
      {R"("groups": [{"kind": "full_attention", "block_size": 16, "sink_len": 24,
          "page_size_bytes": 64}])",
       "cache layout group 0: layer 'group0' keeps 24 static attention sink tokens, which "
       "--block-size 16 does not divide: the engine's sink manager asserts that whole blocks "
       "hold them; choose a block size that divides 24"},
      {R"("groups": [{"kind": "full_attention", "block_size": 16, "sink_len": 64,
          "page_size_bytes": 64}])",
       "cache group 0 keeps 64 attention sink tokens in 4 blocks, more than the 3 free blocks of "
       "a pool of 4; give the pool more blocks"},
  };
  for (const auto& [body, message] : refused) {
    const std::string json = std::string(R"({"num_blocks": 4, "max_model_len": 64, )") + body + "}";
    Result<std::unique_ptr<KVCacheManager>> m = [&]() -> Result<std::unique_ptr<KVCacheManager>> {
      KVTOPO_ASSIGN_OR_RETURN(const CacheLayout layout, ParseCacheLayoutJson(json));
      KVTOPO_ASSIGN_OR_RETURN(KVCacheManagerOptions options,
                              KVCacheManagerOptions::FromLayout(layout));
      return KVCacheManager::Create(std::move(options));
    }();
    EXPECT_EQ(m.status().message(), message) << json;
  }
  auto layout = ParseCacheLayoutJson(R"({"num_blocks": 4, "max_model_len": 64,
      "decode_context_parallel_size": 2, "groups": [
      {"kind": "sliding_window", "block_size": 16, "sliding_window": 8, "page_size_bytes": 1}]})");
  ASSERT_TRUE(layout.ok());
  const auto options = KVCacheManagerOptions::FromLayout(*layout);
  ASSERT_FALSE(options.ok());
  EXPECT_NE(options.status().message().find("cache layout group 0: sliding_window layer"),
            std::string::npos)
      << options.status().message();
}

// Static attention sinks (the engine's SinkFullAttentionSpec): the group's manager takes
// sink_len / B blocks off the free queue at start, in group order after the null block, and
// holds them; requests allocate after them, and the prefix cache resets once every other block
// is free.
TEST(CacheLayout, SinkBlocksAreTakenAtStartAndHeld) {
  auto m = FromJson(R"({"num_blocks": 16, "max_model_len": 256, "enable_kv_cache_events": true,
      "groups": [
      {"kind": "full_attention", "block_size": 16, "sink_len": 32, "page_size_bytes": 64},
      {"kind": "sliding_window", "block_size": 16, "sliding_window": 32, "page_size_bytes": 64}]})");
  EXPECT_EQ(Ids(m->sink_block_ids(GroupId{0})), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(m->sink_block_ids(GroupId{1}).empty());
  EXPECT_EQ(m->group(GroupId{0}).geometry.sink_blocks(), 2);
  EXPECT_EQ(m->num_free_blocks(), 13);  // 16 - the null block - 2 sink blocks
  EXPECT_DOUBLE_EQ(m->Usage(),
                   2.0 / 15.0);          // the sinks count as used, as the engine's pool has them
  EXPECT_TRUE(m->TakeEvents().empty());  // taken before any request: no stored block
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 40)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 40));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{0})), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{1})), (std::vector<int32_t>{6, 7, 8}));
  m->CheckInvariants();
  EXPECT_FALSE(m->ResetPrefixCache());  // request 1 still holds blocks
  ASSERT_TRUE(m->Free(RequestId{1}).ok());
  EXPECT_EQ(m->num_free_blocks(), 13);
  EXPECT_TRUE(m->ResetPrefixCache());
  EXPECT_EQ(Ids(m->sink_block_ids(GroupId{0})), (std::vector<int32_t>{1, 2}));
  m->CheckInvariants();
  // Out of blocks is a value: 13 blocks serve at most 13 pages a step, never the sinks'.
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(100, 256)).ok());
  EXPECT_FALSE(Alloc(*m, 2, 256));
  EXPECT_TRUE(Alloc(*m, 2, 96));
  EXPECT_EQ(m->num_free_blocks(), 1);
  m->CheckInvariants();
}

TEST(CacheLayout, MambaNoneHoldsOnePlusSpeculativeAndNeverHits) {
  auto m = FromJson(R"({"num_blocks": 64, "max_model_len": 512, "groups": [
      {"kind": "full_attention", "block_size": 16, "page_size_bytes": 64},
      {"kind": "mamba", "block_size": 512, "mamba_cache_mode": "none",
       "num_speculative_blocks": 2, "page_size_bytes": 64}]})");
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 64)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 64));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{1})), (std::vector<int32_t>{5, 6, 7}));
  ASSERT_TRUE(Alloc(*m, 1, 16));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{1})), (std::vector<int32_t>{5, 6, 7}));
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(0, 64)).ok());
  EXPECT_EQ(m->GetComputedBlocks(RequestId{2}).value().num_tokens.value(), 0);
  m->CheckInvariants();
}

constexpr const char* kOneFullGroup = R"({"num_blocks": 32, "max_model_len": 1024,
    "enable_kv_cache_events": true, "record_new_block_ids": true, "groups": [
    {"kind": "full_attention", "block_size": 16, "page_size_bytes": 64}]})";

TEST(EngineSurface, ExternalComputedTokensAreAllocatedAndCounted) {
  auto m = FromJson(kOneFullGroup);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 64)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 16, {.num_external_computed_tokens = TokenCount{40}}));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{0})), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(m->num_computed_tokens(RequestId{1}).value(), 56);
  // Only external tokens (an async load): no new token is allowed then.
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(1000, 64)).ok());
  ASSERT_TRUE(Alloc(*m, 2, 0, {.num_external_computed_tokens = TokenCount{32}}));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{2}, GroupId{0})), (std::vector<int32_t>{5, 6}));
  m->CheckInvariants();
}

TEST(EngineSurface, DelayedCachingThenCacheBlocks) {
  auto m = FromJson(kOneFullGroup);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 64)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 64, {.delay_cache_blocks = true}));
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(0, 64)).ok());
  EXPECT_EQ(m->GetComputedBlocks(RequestId{2}).value().num_tokens.value(), 0);
  EXPECT_TRUE(m->CacheBlocks(RequestId{1}, TokenCount{48}).ok());
  const ComputedBlocks hits = m->GetComputedBlocks(RequestId{2}).value();
  EXPECT_EQ(hits.num_tokens.value(), 48);
  EXPECT_EQ(Ids(hits.blocks[0]), (std::vector<int32_t>{1, 2, 3}));
  m->CheckInvariants();
}

TEST(EngineSurface, CrossAttentionGroupSizedByTheEncoder) {
  auto m = FromJson(R"({"num_blocks": 32, "max_model_len": 1024, "enable_prefix_caching": false,
      "groups": [{"kind": "full_attention", "block_size": 16, "page_size_bytes": 64},
                 {"kind": "cross_attention", "block_size": 16, "page_size_bytes": 64}]})");
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 20)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 20, {.num_encoder_tokens = TokenCount{40}}));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{0})), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{1})), (std::vector<int32_t>{3, 4, 5}));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Alloc(*m, 1, 1, {.num_encoder_tokens = TokenCount{40}}));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{1})), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{0})), (std::vector<int32_t>{1, 2, 6}));
  m->CheckInvariants();
  auto layout = ParseCacheLayoutJson(R"({"num_blocks": 32, "max_model_len": 64, "groups": [
      {"kind": "cross_attention", "block_size": 16, "page_size_bytes": 64}]})");
  EXPECT_EQ(KVCacheManager::Create(*KVCacheManagerOptions::FromLayout(*layout)).status().message(),
            "cache group 0 is cross-attention: prefix caching is not supported for "
            "encoder-decoder layouts; set enable_prefix_caching to false");
  // The group's rows are sized for max_num_batched_tokens encoder tokens (the engine's
  // max_num_encoder_input_tokens): more is refused, not written past the row.
  auto small = FromJson(R"({"num_blocks": 64, "max_model_len": 64, "enable_prefix_caching": false,
      "max_num_batched_tokens": 256,
      "groups": [{"kind": "full_attention", "block_size": 16, "page_size_bytes": 64},
                 {"kind": "cross_attention", "block_size": 16, "page_size_bytes": 64}]})");
  EXPECT_TRUE(small->AddRequest(RequestId{1}, Tokens(0, 4)).ok());
  EXPECT_EQ(small
                ->AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{4},
                                               .num_encoder_tokens = TokenCount{257}})
                .status()
                .message(),
            "num_encoder_tokens 257 needs 17 blocks of cache group 1, more than its block-table "
            "row of 16 columns holds (an encoder-decoder model's rows are sized for the larger "
            "of max_model_len 64 and the launch's max_num_batched_tokens 256)");
  ASSERT_TRUE(Alloc(*small, 1, 4, {.num_encoder_tokens = TokenCount{256}}));
  EXPECT_EQ(small->BlockIds(RequestId{1}, GroupId{1}).size(), 16u);
  small->CheckInvariants();
  // As the engine's worker, every group's rows hold max(max_model_len, encoder budget) tokens:
  // here the model length's 1024 / 16 = 64 columns, though a request's cross-attention pages
  // count 256 / 16.
  auto layout_rows = ParseCacheLayoutJson(R"({"num_blocks": 64, "max_model_len": 1024,
      "enable_prefix_caching": false, "max_num_batched_tokens": 256,
      "groups": [{"kind": "full_attention", "block_size": 16, "page_size_bytes": 64},
                 {"kind": "cross_attention", "block_size": 16, "page_size_bytes": 64}]})");
  ASSERT_TRUE(layout_rows.ok()) << layout_rows.status().ToString();
  auto rows = KVCacheManagerOptions::FromLayout(*layout_rows);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  for (const CacheGroup& g : rows->groups) EXPECT_EQ(g.geometry.block_table_width(), 64);
  EXPECT_EQ(rows->groups[1].geometry.max_pages_per_request(), 16);
  // The engine runs encoder-decoder models without context parallelism.
  layout = ParseCacheLayoutJson(R"({"num_blocks": 32, "max_model_len": 64,
      "enable_prefix_caching": false, "decode_context_parallel_size": 2, "groups": [
      {"kind": "cross_attention", "block_size": 16, "page_size_bytes": 64}]})");
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(KVCacheManagerOptions::FromLayout(*layout).status().message(),
            "cache layout group 0: cross-attention layer 'group0' under "
            "--decode-context-parallel-size 2 and --prefill-context-parallel-size 1: the engine "
            "runs encoder-decoder models without context parallelism; set both to 1");
}

TEST(EngineSurface, SkipReadingPrefixCache) {
  auto m = FromJson(kOneFullGroup);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 64)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 64));
  EXPECT_TRUE(
      m->AddRequest(RequestId{2}, Tokens(0, 64), RequestOptions{.skip_reading_prefix_cache = true})
          .ok());
  EXPECT_EQ(m->GetComputedBlocks(RequestId{2}).value().num_tokens.value(), 0);
  EXPECT_TRUE(m->AddRequest(RequestId{3}, Tokens(0, 64)).ok());
  EXPECT_EQ(m->GetComputedBlocks(RequestId{3}).value().num_tokens.value(), 48);
  // The skipped lookup is not counted.
  EXPECT_EQ(m->MakePrefixCacheStats()->requests, 1);
}

TEST(EngineSurface, CommonPrefixBlocksCountEveryRequestHoldingBlocks) {
  auto m = FromJson(kOneFullGroup);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 64)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 64));
  EXPECT_TRUE(
      m->AddRequest(RequestId{2}, Tokens(0, 40)).ok());  // shares blocks 1 and 2 (32 tokens)
  const ComputedBlocks hits = m->GetComputedBlocks(RequestId{2}).value();
  ASSERT_EQ(hits.num_tokens.value(), 32);
  ASSERT_TRUE(Alloc(*m, 2, 8, {.num_new_computed_tokens = hits.num_tokens, .computed = &hits}));
  std::vector<int64_t> common;
  EXPECT_TRUE(m->GetNumCommonPrefixBlocks(RequestId{1}, common).ok());
  EXPECT_EQ(common, std::vector<int64_t>{2});
  EXPECT_TRUE(m->AddRequest(RequestId{3}, Tokens(500, 16)).ok());
  ASSERT_TRUE(Alloc(*m, 3, 16));
  EXPECT_TRUE(m->GetNumCommonPrefixBlocks(RequestId{1}, common).ok());
  EXPECT_EQ(common, std::vector<int64_t>{0});
}

TEST(EngineSurface, EvictRemoveSkippedAndNewBlockIds) {
  auto m = FromJson(kOneFullGroup);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 64)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 64));
  EXPECT_EQ(Ids(m->TakeNewBlockIds()), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_TRUE(m->TakeNewBlockIds().empty());
  const std::vector<BlockId> evict = {BlockId{2}};
  EXPECT_TRUE(m->EvictBlocks(evict).ok());
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(0, 64)).ok());
  EXPECT_EQ(m->GetComputedBlocks(RequestId{2}).value().num_tokens.value(), 16);
  m->CheckInvariants();

  auto swa = FromJson(R"({"num_blocks": 32, "max_model_len": 1024, "groups": [
      {"kind": "sliding_window", "block_size": 16, "sliding_window": 16, "page_size_bytes": 8}]})");
  EXPECT_TRUE(swa->AddRequest(RequestId{1}, Tokens(0, 64)).ok());
  ASSERT_TRUE(Alloc(*swa, 1, 64));
  EXPECT_TRUE(
      swa->RemoveSkippedBlocks(RequestId{1}, TokenCount{64}).ok());  // 49 tokens skipped: 3 blocks
  EXPECT_EQ(Ids(swa->BlockIds(RequestId{1}, GroupId{0})), (std::vector<int32_t>{0, 0, 0, 4}));
  EXPECT_EQ(swa->num_free_blocks(), 30);
  swa->CheckInvariants();
}

TEST(EngineSurface, StatsCountPreemptionsAndCanBeOff) {
  auto m = FromJson(kOneFullGroup);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 64)).ok());
  EXPECT_EQ(m->GetComputedBlocks(RequestId{1}).value().num_tokens.value(), 0);
  ASSERT_TRUE(Alloc(*m, 1, 64));
  EXPECT_TRUE(m->Preempt(RequestId{1}).ok());
  EXPECT_EQ(m->num_computed_tokens(RequestId{1}).value(), 0);
  EXPECT_EQ(m->num_preemptions(RequestId{1}), 1);
  const ComputedBlocks hits = m->GetComputedBlocks(RequestId{1}).value();
  EXPECT_EQ(Ids(hits.blocks[0]), (std::vector<int32_t>{1, 2, 3}));
  ASSERT_TRUE(Alloc(*m, 1, 16, {.num_new_computed_tokens = hits.num_tokens, .computed = &hits}));
  // The preempted row was freed tail first (4, 3, 2, 1 to the queue's tail): block 5 is next.
  EXPECT_EQ(Ids(m->BlockIds(RequestId{1}, GroupId{0})), (std::vector<int32_t>{1, 2, 3, 5}));
  EXPECT_EQ(m->MakePrefixCacheStats(), (PrefixCacheStats{.requests = 1,
                                                         .query_tokens = 64,
                                                         .hit_tokens = 0,
                                                         .preempted_requests = 1,
                                                         .preempted_query_tokens = 64,
                                                         .preempted_hit_tokens = 48}));
  EXPECT_EQ(m->MakePrefixCacheStats(), PrefixCacheStats{});
  m->CheckInvariants();

  auto off = FromJson(R"({"num_blocks": 8, "max_model_len": 64, "log_stats": false, "groups": [
      {"kind": "full_attention", "block_size": 16, "page_size_bytes": 64}]})");
  EXPECT_FALSE(off->MakePrefixCacheStats().has_value());
}

// Events follow what is cached: beside a Mamba group in align mode (hits at 64 tokens), the
// sliding-window group caches only the two blocks of each 64-token segment a hit reads, one run
// each; the Mamba group caches the running state on the block boundary, its 64-token hash
// combining four 16-token ones.
// A Mamba hit whose content was cached in this step waits for NewStep, however many steps go
// unmarked before it: an engine that never calls NewStep keeps the manager's record of the
// step's cached content bounded (content no block caches any more is dropped), and the record
// still holds what is cached.
TEST(EngineSurface, MambaHitCachedThisStepWaitsWithoutStepMarks) {
  auto m = FromJson(R"({"num_blocks": 9, "max_model_len": 4096, "groups": [
      {"kind": "mamba", "block_size": 16, "mamba_cache_mode": "all", "page_size_bytes": 64}]})");
  for (int64_t id = 1; id <= 40; ++id) {  // 40 x 2 cached states through 8 blocks
    ASSERT_TRUE(m->AddRequest(RequestId{id}, Tokens(static_cast<int32_t>(1000 * id), 33)).ok());
    ASSERT_TRUE(Alloc(*m, id, 33));
    ASSERT_TRUE(m->Free(RequestId{id}).ok());
  }
  ASSERT_TRUE(m->AddRequest(RequestId{41}, Tokens(7, 40)).ok());
  ASSERT_TRUE(Alloc(*m, 41, 40));
  ASSERT_TRUE(m->AddRequest(RequestId{42}, Tokens(7, 40)).ok());
  const ComputedBlocks hits = m->GetComputedBlocks(RequestId{42}).value();
  ASSERT_EQ(hits.num_tokens.value(), 32);
  const SlotRequest step{.num_new_computed_tokens = hits.num_tokens, .computed = &hits};
  EXPECT_FALSE(Alloc(*m, 42, 8, step));
  m->NewStep();
  EXPECT_TRUE(Alloc(*m, 42, 8, step));
  m->CheckInvariants();
}

TEST(EngineSurface, EventsOfWindowTailsAndAlignedMambaStates) {
  auto m = FromJson(R"({"num_blocks": 200, "max_model_len": 4096,
      "enable_kv_cache_events": true, "groups": [
      {"kind": "sliding_window", "block_size": 16, "sliding_window": 32, "page_size_bytes": 64},
      {"kind": "mamba", "block_size": 64, "mamba_cache_mode": "align", "page_size_bytes": 256}]})");
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 256)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 256));
  KVCacheInspector inspect(*m);
  const auto span = inspect.RequestBlockHashes(RequestId{1});
  const std::vector<BlockHash> h(span.begin(), span.end());
  ASSERT_EQ(h.size(), 16u);
  // One BlockStored per group for the call, as the engine's cache_full_blocks records it: the
  // hashes of the blocks cached (the window's last two of each 64-token segment; the Mamba
  // state at 256), the tokens of every column of the call, no parent for column 0.
  const std::vector<KVCacheEvent> events = m->TakeEvents();
  ASSERT_EQ(events.size(), 2u);
  const KVCacheEvent& e = events[0];
  EXPECT_EQ((std::pair{e.type, e.group}),
            (std::pair{KVCacheEvent::Type::kBlockStored, GroupId{0}}));
  EXPECT_EQ(e.block_hashes,
            (std::vector<BlockHash>{h[2], h[3], h[6], h[7], h[10], h[11], h[14], h[15]}));
  EXPECT_FALSE(e.parent_block_hash.has_value());
  EXPECT_EQ(e.token_ids, Tokens(0, 256));
  EXPECT_EQ(e.block_size, 16);
  const KVCacheEvent& state = events[1];
  EXPECT_EQ(state.group, GroupId{1});
  const auto coarse = [&](int column) {
    return CombineBlockHashes(std::span<const BlockHash>(h).subspan(4 * column, 4));
  };
  EXPECT_EQ(state.block_hashes, (std::vector<BlockHash>{coarse(3)}));
  EXPECT_FALSE(state.parent_block_hash.has_value());
  EXPECT_EQ(state.token_ids, Tokens(0, 256));
  EXPECT_EQ(state.block_size, 64);
  const BlockId running = m->BlockIds(RequestId{1}, GroupId{1}).back();
  EXPECT_EQ(inspect.CachedAs(running), (std::pair{coarse(3), GroupId{1}}));
  m->CheckInvariants();
}

TEST(EngineSurface, EventsStoredRemovedCleared) {
  auto m = FromJson(kOneFullGroup);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 40), BlockHashExtraKeys{.lora_id = 7}).ok());
  ASSERT_TRUE(Alloc(*m, 1, 40));
  KVCacheInspector inspect(*m);
  const auto span = inspect.RequestBlockHashes(RequestId{1});
  const std::vector<BlockHash> hashes(span.begin(), span.end());
  ASSERT_EQ(hashes.size(), 2u);
  std::vector<KVCacheEvent> events = m->TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, KVCacheEvent::Type::kBlockStored);
  EXPECT_EQ(events[0].block_hashes, (std::vector<BlockHash>{hashes[0], hashes[1]}));
  EXPECT_FALSE(events[0].parent_block_hash.has_value());
  EXPECT_EQ(events[0].token_ids, Tokens(0, 32));
  EXPECT_EQ(events[0].block_size, 16);
  EXPECT_EQ(events[0].lora_id, 7);
  EXPECT_TRUE(m->AppendTokens(RequestId{1}, Tokens(40, 8)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 8));
  events = m->TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].parent_block_hash, hashes[1]);
  EXPECT_EQ(events[0].token_ids, Tokens(32, 16));
  EXPECT_TRUE(m->TakeEvents().empty());

  EXPECT_TRUE(m->Free(RequestId{1}).ok());
  // Freed in reverse: 3, 2, 1 go to the tail after the never-used blocks.
  const std::vector<BlockId> queue = inspect.FreeQueue();
  ASSERT_EQ(queue.size(), 31u);
  EXPECT_EQ(Ids(std::span<const BlockId>(queue).last(3)), (std::vector<int32_t>{3, 2, 1}));
  EXPECT_EQ(inspect.RefCount(BlockId{1}), 0);
  EXPECT_EQ(inspect.CachedAs(BlockId{1})->first, hashes[0]);
  EXPECT_EQ(inspect.Lookup(hashes[1], GroupId{0}), BlockId{2});
  EXPECT_EQ(inspect.null_block(), kNullBlock);
  const std::vector<BlockId> evict = {BlockId{1}};
  EXPECT_TRUE(m->EvictBlocks(evict).ok());
  events = m->TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, KVCacheEvent::Type::kBlockRemoved);
  EXPECT_EQ(events[0].block_hashes, std::vector<BlockHash>{hashes[0]});
  ASSERT_TRUE(m->ResetPrefixCache());
  events = m->TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, KVCacheEvent::Type::kAllBlocksCleared);
  EXPECT_TRUE(m->MakePrefixCacheStats()->reset);
}

TEST(EngineSurface, EventsOffRecordNothing) {
  auto m = FromJson(R"({"num_blocks": 8, "max_model_len": 64, "groups": [
      {"kind": "full_attention", "block_size": 16, "page_size_bytes": 64}]})");
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 48)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 48));
  EXPECT_TRUE(m->Free(RequestId{1}).ok());
  EXPECT_TRUE(m->ResetPrefixCache());
  EXPECT_TRUE(m->TakeEvents().empty());
  EXPECT_TRUE(m->TakeNewBlockIds().empty());
}

// vLLM's BlockStored.extra_keys: per block, each multimodal item it overlaps with the item's
// offset from the block's start, the cache salt on the first block, and the digest of the prompt
// embeddings it holds (a 32-token block spanning two 16-token hash blocks combines their two).
TEST(EngineSurface, StoredEventsListEachBlocksExtraKeys) {
  auto m = FromJson(R"({"num_blocks": 16, "max_model_len": 256, "hash_block_size": 16,
      "enable_kv_cache_events": true, "groups": [
      {"kind": "full_attention", "block_size": 32, "page_size_bytes": 64}]})");
  std::vector<std::byte> rows(40 * 4);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::byte>(i * 7);
  RequestOptions options;
  options.extra_keys.cache_salt = "salt";
  options.extra_keys.mm_items = {
      {.identifier = "img", .offset = TokenPos{20}, .length = TokenCount{30}}};
  options.prompt_embeds = rows;
  options.prompt_embeds_rows = 40;
  ASSERT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 100), options).ok());
  ASSERT_TRUE(Alloc(*m, 1, 100));
  const std::vector<BlockHash> digests = DigestRowsPerBlock(rows, 40, 16);
  ASSERT_EQ(digests.size(), 3u);
  std::vector<KVCacheEvent> events = m->TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  ASSERT_EQ(events[0].block_hashes.size(), 3u);
  EXPECT_EQ(events[0].extra_keys,
            (std::vector<BlockEventKeys>{
                {.mm_items = {{"img", 20}},
                 .cache_salt = "salt",
                 .content_digest = CombineBlockHashes(std::span(digests).first(2))},
                {.mm_items = {{"img", -12}}, .content_digest = digests[2]},
                {}}));
  // A request with nothing but token ids: no extra keys at all.
  ASSERT_TRUE(m->AddRequest(RequestId{2}, Tokens(500, 64)).ok());
  ASSERT_TRUE(Alloc(*m, 2, 64));
  events = m->TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].block_hashes.size(), 2u);
  EXPECT_TRUE(events[0].extra_keys.empty());
}

int64_t residency_now_ns = 0;
int64_t ResidencyClock() { return residency_now_ns; }

// vLLM's residency metrics through the manager: a prefix hit is an access, and a block handed out
// again ends its record (one event per followed block, in allocation order).
TEST(EngineSurface, ResidencyMetricsTimeHitsAndReuse) {
  auto m = FromJson(R"({"num_blocks": 5, "max_model_len": 64, "groups": [
      {"kind": "full_attention", "block_size": 16, "page_size_bytes": 64}]})");
  EXPECT_EQ(m->EnableResidencyMetrics({.sample_rate = 2}).message(),
            "residency metrics sample rate 2 is not in (0, 1] (vLLM's --kv-cache-metrics-sample "
            "takes the same range)");
  ASSERT_TRUE(
      m->EnableResidencyMetrics({.sample_rate = 1, .seed = 3, .clock_ns = &ResidencyClock}).ok());
  const auto at = [](int64_t seconds) { residency_now_ns = seconds * 1'000'000'000; };
  at(1);
  EXPECT_TRUE(m->AddRequest(RequestId{1}, Tokens(0, 32)).ok());
  ASSERT_TRUE(Alloc(*m, 1, 32));  // blocks 1 and 2, both full and cached
  at(2);
  EXPECT_TRUE(m->Free(RequestId{1}).ok());  // free list: 3 4 2 1
  at(3);
  EXPECT_TRUE(m->AddRequest(RequestId{2}, Tokens(0, 40)).ok());
  const ComputedBlocks hits = m->GetComputedBlocks(RequestId{2}).value();
  ASSERT_EQ(hits.num_tokens.value(), 32);
  ASSERT_TRUE(Alloc(*m, 2, 8,
                    SlotRequest{.num_new_computed_tokens = TokenCount{32},
                                .computed = &hits}));  // hits 1 and 2, new block 3
  EXPECT_EQ(Ids(m->BlockIds(RequestId{2}, GroupId{0})), (std::vector<int32_t>{1, 2, 3}));
  at(4);
  EXPECT_TRUE(m->Free(RequestId{2}).ok());  // free list: 4 3 2 1
  EXPECT_TRUE(m->TakeResidencyEvents().empty());
  at(10);
  EXPECT_TRUE(m->AddRequest(RequestId{3}, Tokens(100, 64)).ok());
  ASSERT_TRUE(Alloc(*m, 3, 64));
  EXPECT_EQ(Ids(m->BlockIds(RequestId{3}, GroupId{0})), (std::vector<int32_t>{4, 3, 2, 1}));
  const std::vector<BlockResidencyEvent> events = m->TakeResidencyEvents();
  ASSERT_EQ(events.size(), 3u);  // block 4 was never allocated before
  EXPECT_EQ(events[0], (BlockResidencyEvent{.lifetime_seconds = 7, .idle_seconds = 7}));
  EXPECT_EQ(events[1], (BlockResidencyEvent{.lifetime_seconds = 9, .idle_seconds = 7}));
  EXPECT_EQ(events[2], (BlockResidencyEvent{.lifetime_seconds = 9, .idle_seconds = 7}));
  EXPECT_TRUE(m->Free(RequestId{3}).ok());
  EXPECT_TRUE(m->ResetPrefixCache());
  EXPECT_TRUE(m->AddRequest(RequestId{4}, Tokens(200, 16)).ok());
  ASSERT_TRUE(Alloc(*m, 4, 16));  // block 1 again: its record was dropped by the reset
  EXPECT_TRUE(m->TakeResidencyEvents().empty());
  EXPECT_EQ(m->residency_events_dropped(), 0u);
  m->CheckInvariants();
}

}  // namespace
}  // namespace kvtopo
