#include <gtest/gtest.h>

#include "kvtopo/plan.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

LayerSpec Mla(std::string name, int64_t block, KvCacheDtype dtype = KvCacheDtype::kFp8) {
  return LayerSpec{.name = std::move(name),
                   .kind = CacheKind::kMla,
                   .block_size = block,
                   .num_kv_heads = 1,
                   .head_size = 576,
                   .cache_dtype = dtype,
                   .mla_rope_dim = 64,
                   .attention_backend = "B12X_MLA"};
}

LayerSpec Kda(std::string name, int64_t block, int64_t spec_blocks) {
  return LayerSpec{.name = std::move(name),
                   .kind = CacheKind::kRecurrent,
                   .block_size = block,
                   .state = {{{3, 768}, ElementType::kBfloat16},
                             {{3, 768}, ElementType::kBfloat16},
                             {{3, 768}, ElementType::kBfloat16},
                             {{6, 128, 128}, ElementType::kFloat32}},
                   .recurrent_mode = RecurrentMode::kAlign,
                   .num_speculative_blocks = spec_blocks};
}

LayerSpec SwaDraft(std::string name, int64_t block, int64_t heads, int64_t window) {
  return LayerSpec{.name = std::move(name),
                   .role = Role::kDraft,
                   .kind = CacheKind::kSlidingWindow,
                   .block_size = block,
                   .num_kv_heads = heads,
                   .head_size = 128,
                   .head_size_v = 128,
                   .cache_dtype = KvCacheDtype::kBfloat16,
                   .sliding_window = window,
                   .dcp = {.replicated = true},
                   .causal = false,
                   .attention_backend = "FLASH_ATTN"};
}

PlanInputs Inputs(int64_t tp, int64_t dcp, int64_t memory, int64_t max_seqs = 16) {
  PlanInputs in;
  in.parallel = {.tensor_parallel_size = tp, .decode_context_parallel_size = dcp};
  in.cache.max_num_seqs = max_seqs;
  in.cache.max_num_batched_tokens = 8192;
  in.kv_cache_memory_bytes = memory;
  in.backends["B12X_MLA"] = {.kernel_block_sizes = {64}};
  in.backends["FLASH_ATTN"] = {.kernel_block_multiple_of = 16, .indexes_kv_by_block_stride = true};
  return in;
}

ModelCacheSpecs Specs(std::vector<LayerSpec> layers, int64_t max_len) {
  ModelCacheSpecs m;
  m.model_name = "synthetic";
  m.max_model_len = max_len;
  m.layers = std::move(layers);
  return m;
}

// A replicated chunked-local layer keeps 64-token blocks beside sharded MLA's 64 x 4 under DCP
// 4: with prefix caching the engine's chunked-local manager refuses the hit alignment at its
// first lookup (chunked-local-block-size); without, the plan stands.
TEST(Planner, ChunkedLocalBesideLargerBlocksNeedsPrefixCachingOff) {
  std::vector<LayerSpec> layers = {Mla("t.0", 64), Mla("t.1", 64)};
  layers.push_back(LayerSpec{.name = "chunked.0",
                             .kind = CacheKind::kChunkedLocal,
                             .block_size = 64,
                             .num_kv_heads = 2,
                             .head_size = 64,
                             .head_size_v = 64,
                             .cache_dtype = KvCacheDtype::kBfloat16,
                             .attention_chunk_size = 128,
                             .dcp = {.replicated = true},
                             .attention_backend = "FLASH_ATTN"});
  PlanInputs in = Inputs(4, 4, kGiB);
  in.cache.enable_prefix_caching = true;
  auto plan = PlanFromSpecs(Specs(layers, 4096), in);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [chunked-local-block-size] group 1 (chunked local attention) has "
            "64-token blocks beside groups whose prefix-cache hits align to 256 tokens: the "
            "engine's chunked-local manager refuses that at its first prefix-cache lookup, after "
            "the weights are loaded; pass --no-enable-prefix-caching or give every group one "
            "block size");
  in.cache.enable_prefix_caching = false;
  plan = PlanFromSpecs(Specs(layers, 4096), in);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
}

TEST(Planner, TargetOnlySpecIsOneGroup) {
  std::vector<LayerSpec> layers;
  for (int i = 0; i < 4; ++i) layers.push_back(Mla("t." + std::to_string(i), 64));
  auto plan = PlanFromSpecs(Specs(layers, 4096), Inputs(4, 4, kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted());
  ASSERT_EQ(plan->groups.size(), 1u);
  const PlannedGroup& g = plan->groups[0];
  EXPECT_EQ(g.layers.size(), 4u);
  EXPECT_EQ(g.geometry.placement(), Placement::kSharded);
  EXPECT_EQ(g.geometry.manager_block_size(), 256);
  EXPECT_EQ(g.geometry.block_table_width(), 16);
  EXPECT_EQ(plan->pool.bytes_per_block, 4 * 64 * 576);
  EXPECT_EQ(plan->pool.num_blocks, kGiB / (4 * 64 * 576));
  ASSERT_EQ(plan->pool.regions.size(), 1u);
  EXPECT_EQ(plan->pool.regions[0].offsets_bytes,
            (std::vector<int64_t>{0, 64 * 576, 2 * 64 * 576, 3 * 64 * 576}));
  EXPECT_EQ(plan->scheduler_block_size, 256);
  EXPECT_EQ(plan->hash_block_size, 256);
  EXPECT_FALSE(plan->promotion.considered);
  // blocks per request = cdiv(cdiv(4096, 4), 64) = 16.
  EXPECT_EQ(plan->capacity.blocks_per_request, 16);
  EXPECT_EQ(plan->capacity.max_tokens,
            static_cast<int64_t>(static_cast<double>(kGiB / (4 * 64 * 576)) / 16 * 4096));
}

TEST(Planner, MlaTargetAndReplicatedSlidingDraftAreGroupedIndependently) {
  std::vector<LayerSpec> layers = {Mla("t.0", 64), Mla("t.1", 64), SwaDraft("d.0", 64, 8, 2048)};
  auto plan = PlanFromSpecs(Specs(layers, 4096), Inputs(4, 4, kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->diagnostics.front().message;
  ASSERT_EQ(plan->groups.size(), 2u);
  const PlannedGroup& target = plan->groups[0];
  const PlannedGroup& draft = plan->groups[1];
  EXPECT_EQ(target.layers, (std::vector<std::string>{"t.0", "t.1"}));
  EXPECT_EQ(target.geometry.page_size_bytes(), 64 * 576);  // not resized for the draft
  EXPECT_EQ(target.spec.block_size, 64);
  EXPECT_EQ(draft.layers, (std::vector<std::string>{"d.0"}));
  EXPECT_EQ(draft.geometry.placement(), Placement::kReplicated);
  EXPECT_EQ(draft.geometry.page_size_bytes(), 64 * 8 * 256 * 2);  // natural page, no padding
  EXPECT_EQ(draft.spec.page_size_padded, 0);
  EXPECT_EQ(draft.geometry.manager_block_size(), 64);
  EXPECT_EQ(plan->scheduler_block_size, 256);
  EXPECT_EQ(plan->hash_block_size, 64);
  // The pool stride is the larger group's sum of pages: the draft's one 262,144 B page against
  // the target's two 36,864 B pages; the target group leaves the rest of each block unused.
  EXPECT_EQ(plan->pool.bytes_per_block, 64 * 8 * 256 * 2);
  ASSERT_EQ(plan->pool.regions.size(), 2u);
  EXPECT_EQ(plan->pool.regions[0].offsets_bytes, (std::vector<int64_t>{0, 64 * 576}));
  EXPECT_EQ(plan->pool.regions[0].bytes_used, 2 * 64 * 576);
  EXPECT_EQ(plan->pool.regions[1].bytes_used, 64 * 8 * 256 * 2);
}

// The case that used to raise "page size is not divisible by the maximum page size and cannot
// be padded": an MLA + recurrent target and a replicated draft with an incompatible page.
TEST(Planner, MlaRecurrentTargetWithIncompatibleReplicatedDraftPlans) {
  std::vector<LayerSpec> layers = {Mla("t.mla.0", 64), Kda("t.kda.0", 64, 3), Kda("t.kda.1", 64, 3),
                                   SwaDraft("d.0", 48, 3, 1024)};
  auto plan = PlanFromSpecs(Specs(layers, 32768), Inputs(4, 4, 8 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->diagnostics.front().message;
  ASSERT_EQ(plan->groups.size(), 4u);
  // KDA state: 3 * 3 * 768 * 2 + 6 * 128 * 128 * 4 = 407,040 B; the MLA block grows to
  // 64 * cdiv(407040, 64 * 576) = 768 tokens so one page holds a state.
  EXPECT_EQ(plan->groups[0].spec.block_size, 768);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 768 * 576);
  EXPECT_EQ(plan->groups[1].geometry.kind(), CacheKind::kRecurrent);
  EXPECT_EQ(plan->groups[1].geometry.page_size_bytes(), 768 * 576);  // padded state
  EXPECT_EQ(plan->groups[1].natural_page_size_bytes, 407040);
  EXPECT_EQ(plan->groups[1].geometry.block_size(), 768);
  EXPECT_EQ(plan->groups[1].geometry.dcp_shard_count(), 1);
  const PlannedGroup& draft = plan->groups[3];
  EXPECT_EQ(draft.role, Role::kDraft);
  EXPECT_EQ(draft.geometry.page_size_bytes(), 48 * 3 * 256 * 2);  // 73,728: untouched
  EXPECT_EQ(draft.spec.block_size, 48);
}

TEST(Planner, PromotionRaisesDraftBlockWhenItFitsTheStride) {
  // Draft: 1 KV head of 128, bf16 K+V = 512 B/token, so its group of one 256-token page
  // (131,072 B) spans less of a block than the target group's two 147,456 B pages.
  std::vector<LayerSpec> layers = {Mla("t.0", 256), Mla("t.1", 256), SwaDraft("d.0", 64, 1, 2048)};
  auto plan = PlanFromSpecs(Specs(layers, 131072), Inputs(4, 4, 12 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted());
  const Promotion& pr = plan->promotion;
  EXPECT_TRUE(pr.considered);
  EXPECT_TRUE(pr.applied) << pr.reason;
  EXPECT_EQ(pr.block_size_before, 64);
  EXPECT_EQ(pr.block_size_after, 256);
  EXPECT_EQ(pr.bytes_per_block_before, 2 * 256 * 576);
  EXPECT_EQ(pr.bytes_per_block_after, 2 * 256 * 576);
  // Blocks per request: the target group cdiv(cdiv(131072, 4), 256) = 128; the draft, with
  // two batches of 8,192 tokens in flight (async scheduling), before cdiv(2047 + 16384, 64) + 1
  // = 289, after cdiv(18431, 256) + 1 = 73.
  EXPECT_EQ(plan->capacity.blocks_per_request, 128 + 73);
  const int64_t blocks = 12 * kGiB / (2 * 256 * 576);
  EXPECT_EQ(pr.max_tokens_before,
            static_cast<int64_t>(static_cast<double>(blocks) / (128 + 289) * 131072));
  EXPECT_EQ(pr.max_tokens_after,
            static_cast<int64_t>(static_cast<double>(blocks) / (128 + 73) * 131072));
  EXPECT_EQ(plan->groups[1].spec.block_size, 256);
  EXPECT_EQ(plan->groups[1].geometry.page_size_bytes(), 256 * 1 * 256 * 2);
  EXPECT_EQ(plan->scheduler_block_size, 1024);
}

TEST(Planner, PromotionSkippedWhenEnlargedPageExceedsStride) {
  std::vector<LayerSpec> layers = {Mla("t.0", 256), SwaDraft("d.0", 64, 8, 2048)};
  auto plan = PlanFromSpecs(Specs(layers, 131072), Inputs(4, 4, 12 * kGiB));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->promotion.considered);
  EXPECT_FALSE(plan->promotion.applied);
  EXPECT_EQ(plan->promotion.max_tokens_after, plan->promotion.max_tokens_before);
  EXPECT_EQ(plan->groups[1].spec.block_size, 64);
}

TEST(Planner, TooLittleMemoryNamesTheLengthThatFits) {
  std::vector<LayerSpec> layers = {Mla("t.0", 64)};
  // 16 blocks of 36,864 B; a request needs cdiv(L, 64) blocks. The engine checks it against
  // the whole budget, its null block included.
  auto plan = PlanFromSpecs(Specs(layers, 4096), Inputs(1, 1, 16 * 64 * 576));
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->accepted());
  EXPECT_EQ(plan->max_model_len_that_fits, 1024);  // 16 blocks of 64 tokens
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "kv-cache-memory");
  EXPECT_EQ(plan->diagnostics[0].message,
            "one request of --max-model-len 4096 needs 2359296 B of KV cache per rank, more than "
            "the 589824 B the pool holds; the largest --max-model-len that fits is 1024; raise "
            "--kv-cache-memory or lower --max-model-len");
  // With --num-gpu-blocks-override the override sizes the pool, so the errors name it.
  PlanInputs in = Inputs(1, 1, 16 * 64 * 576);
  in.cache.num_gpu_blocks_override = 1;
  plan = PlanFromSpecs(Specs(layers, 4096), in);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->diagnostics.size(), 2u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "one request of --max-model-len 4096 needs 2359296 B of KV cache per rank, more than "
            "the 36864 B the pool holds; the largest --max-model-len that fits is 64; raise "
            "--num-gpu-blocks-override or lower --max-model-len");
  EXPECT_EQ(plan->diagnostics[1].message,
            "the pool holds 1 block of 36864 B; at least two (the null block and one page) are "
            "needed; raise --num-gpu-blocks-override");
  EXPECT_EQ(plan->ErrorLines(), "\n  error [kv-cache-memory] " + plan->diagnostics[0].message +
                                    "\n  error [kv-cache-memory] " + plan->diagnostics[1].message);
}

// A request that needs every block passes the engine's check, which counts the null block in,
// and cannot finish: accepted with a warning naming the length that can.
TEST(Planner, RequestOfEveryBlockIsAWarning) {
  std::vector<LayerSpec> layers = {Mla("t.0", 64)};
  auto plan = PlanFromSpecs(Specs(layers, 1024), Inputs(1, 1, 16 * 64 * 576));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->accepted());
  EXPECT_EQ(plan->max_model_len_that_fits, 1024);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].severity, Severity::kWarning);
  EXPECT_EQ(plan->diagnostics[0].code, "kv-cache-null-block");
  EXPECT_EQ(plan->diagnostics[0].message,
            "one request of --max-model-len 1024 needs 16 blocks, and the pool holds 15 besides "
            "its null block: the engine starts (its memory check counts the null block in), but "
            "a request that long runs out of blocks before its end; lower --max-model-len to 960 "
            "or raise --kv-cache-memory");
  plan = PlanFromSpecs(Specs(layers, 960), Inputs(1, 1, 16 * 64 * 576));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->diagnostics.empty());
}

TEST(Planner, PrefixMatchUnitMustDivideEveryGroupBlock) {
  std::vector<LayerSpec> layers = {Mla("t.0", 64), SwaDraft("d.0", 64, 2, 2048)};
  PlanInputs in = Inputs(4, 4, kGiB);
  in.cache.prefix_match_unit = 128;
  auto plan = PlanFromSpecs(Specs(layers, 4096), in);
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->accepted());
  EXPECT_EQ(plan->diagnostics.back().code, "prefix-match-unit");
  in.cache.prefix_match_unit = 32;
  plan = PlanFromSpecs(Specs(layers, 4096), in);
  ASSERT_TRUE(plan->accepted());
  EXPECT_EQ(plan->hash_block_size, 32);
}

TEST(Planner, UnpaddableMlaPageIsADiagnostic) {
  // Two MLA specs whose pages are not multiples: 576 B vs 656 B per token, both sharded.
  LayerSpec a = Mla("t.0", 64);
  LayerSpec b = Mla("t.1", 64, KvCacheDtype::kFp8DsMla);
  LayerSpec swa = SwaDraft("t.2", 64, 1, 1024);
  swa.role = Role::kTarget;
  swa.dcp.replicated = false;
  auto plan = PlanFromSpecs(Specs({a, b, swa}, 4096), Inputs(1, 1, kGiB));
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->accepted());
  EXPECT_EQ(plan->diagnostics.back().code, "page-unification");
  EXPECT_EQ(plan->diagnostics.back().message,
            "layer 't.0': page size 36864 B is not divisible by the maximum page size 41984 B "
            "(layer 't.1') and cannot be padded: padding needs a non-MLA attention backend that "
            "indexes pages by block stride; change --block-size, --kv-cache-dtype or the layer's "
            "attention backend");
}

// `full` full-attention layers "f.i" (with `sink_tokens` sinks each), then `sliding` ones "s.i"
// over a 4,096-token window: 8 K/V heads of 128, 16-token blocks, equal pages.
std::vector<LayerSpec> FullAndSliding(int full, int sliding, int64_t sink_tokens = 0) {
  std::vector<LayerSpec> layers;
  for (int i = 0; i < full + sliding; ++i) {
    const bool slides = i >= full;
    layers.push_back(
        LayerSpec{.name = (slides ? "s." : "f.") + std::to_string(slides ? i - full : i),
                  .kind = slides ? CacheKind::kSlidingWindow : CacheKind::kFullAttention,
                  .block_size = 16,
                  .num_kv_heads = 8,
                  .head_size = 128,
                  .head_size_v = 128,
                  .sliding_window = slides ? 4096 : 0,
                  .sink_tokens = slides ? 0 : sink_tokens});
  }
  return layers;
}

TEST(Planner, UniformPageGroupingSplitsBucketsStrided) {
  // 10 full + 20 sliding-window layers, equal pages: group size 10 -> full x10, sw even, sw odd.
  std::vector<LayerSpec> layers = FullAndSliding(10, 20);
  auto plan = PlanFromSpecs(Specs(layers, 32768), Inputs(1, 1, 4 * kGiB));
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(plan->accepted());
  ASSERT_EQ(plan->groups.size(), 3u);
  EXPECT_EQ(plan->groups[0].layers.size(), 10u);
  EXPECT_EQ(plan->groups[1].layers.front(), "s.0");
  EXPECT_EQ(plan->groups[1].layers[1], "s.2");
  EXPECT_EQ(plan->groups[2].layers.front(), "s.1");
  EXPECT_EQ(plan->pool.bytes_per_block, 10 * 65536);
}

TEST(Planner, SplitPoolModeReportsItsOwnCapacity) {
  std::vector<LayerSpec> layers = {Mla("t.0", 256), SwaDraft("d.0", 64, 8, 2048)};
  auto plan = PlanFromSpecs(Specs(layers, 131072), Inputs(4, 4, 12 * kGiB));
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->split_pools.pools.size(), 2u);
  // Without cross-partition padding the target pool pays no 256-token SW stride for its pages.
  const auto& pools = plan->split_pools.pools;
  EXPECT_EQ(pools[0].bytes_per_block, 256 * 576);
  EXPECT_EQ(pools[1].bytes_per_block, 64 * 8 * 256 * 2);
  EXPECT_LE(pools[0].memory_bytes + pools[1].memory_bytes, 12 * kGiB);
  EXPECT_GT(plan->split_pools.capacity.max_tokens, plan->capacity.max_tokens);
}

// Sink layers split over two groups (20 full layers beside 10 sliding ones: groups of 10) would
// each reserve their own sink blocks while every sink layer's attention reads blocks 1 to k.
TEST(Planner, StaticSinksInOneGroupOnly) {
  std::vector<LayerSpec> layers = FullAndSliding(20, 10, /*sink_tokens=*/32);
  auto plan = PlanFromSpecs(Specs(layers, 32768), Inputs(1, 1, 4 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 3u);
  EXPECT_EQ(plan->groups[1].geometry.sink_blocks(), 2);
  ASSERT_FALSE(plan->accepted());
  EXPECT_EQ(plan->diagnostics.back().code, "sink-groups");
  EXPECT_EQ(plan->diagnostics.back().message,
            "groups 0, 1 keep static attention sinks: the engine's sink managers take their "
            "blocks in group order, but every sink layer's attention reads blocks 1 to sink "
            "tokens / block size, so the later groups would write their sinks over the first "
            "group's; kvtopo plans one sink group");
  // Ten sink layers and no sliding ones: one group.
  plan = PlanFromSpecs(Specs(FullAndSliding(10, 0, 32), 32768), Inputs(1, 1, 4 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups.size(), 1u);
}

TEST(Planner, RejectsNonPositiveMemory) {
  auto plan = PlanFromSpecs(Specs({Mla("t.0", 64)}, 4096), Inputs(1, 1, 0));
  EXPECT_EQ(plan.status().message(), "--kv-cache-memory must be positive, got 0");
}

}  // namespace
}  // namespace kvtopo
