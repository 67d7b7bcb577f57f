// The engine's own planner cases: the layer specs, budgets and launches of the fork's
// tests/v1/core/test_kv_cache_utils.py at 28be48fa9 (test_get_kv_cache_config_one_worker,
// test_get_kv_cache_configs_multiple_workers, test_get_kv_cache_configs_pp_sharding,
// test_get_max_concurrency_for_kv_cache_config, test_estimate_max_model_len, the auto-fit and
// override tests), planned by PlanFromSpecs, with the groups, block sizes, block counts,
// concurrencies and refusals the engine asserts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kvtopo/plan.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// The tests' new_kv_cache_spec: 16-token blocks, 2 K/V heads of 64, float32 (16 KiB a page).
LayerSpec Full(std::string name, int64_t head = 64, int64_t block = 16) {
  return LayerSpec{.name = std::move(name),
                   .kind = CacheKind::kFullAttention,
                   .block_size = block,
                   .num_kv_heads = 2,
                   .head_size = head,
                   .head_size_v = head,
                   .model_dtype = ElementType::kFloat32};
}

// new_sliding_window_spec: the same with a window (1 by default).
LayerSpec Swa(std::string name, int64_t head = 64, int64_t window = 1) {
  LayerSpec s = Full(std::move(name), head);
  s.kind = CacheKind::kSlidingWindow;
  s.sliding_window = window;
  return s;
}

constexpr int64_t kPage = 16 * 2 * 64 * 4 * 2;  // the tests' mem_per_block_per_layer

ModelCacheSpecs Specs(std::vector<LayerSpec> layers, int64_t max_len = 16) {
  ModelCacheSpecs m;
  m.model_name = "engine-case";
  m.max_model_len = max_len;
  m.layers = std::move(layers);
  return m;
}

PlanInputs Memory(int64_t bytes) {
  PlanInputs in;
  in.kv_cache_memory_bytes = bytes;
  return in;
}

Plan MustPlan(const ModelCacheSpecs& specs, const PlanInputs& in) {
  Result<Plan> plan = PlanFromSpecs(specs, in);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return Plan{};
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  return *plan;
}

// Each group as "kind B: layer layer ...".
std::vector<std::string> Groups(const Plan& plan) {
  std::vector<std::string> out;
  for (const PlannedGroup& g : plan.groups) {
    std::string line =
        std::string(CacheKindName(g.spec.kind)) + " " + std::to_string(g.spec.block_size) + ":";
    for (const std::string& l : g.layers) line += " " + l;
    out.push_back(line);
  }
  return out;
}

using Lines = std::vector<std::string>;

TEST(EngineCases, OneWorker) {
  Plan p = MustPlan(Specs({Full("layer_1"), Full("layer_2")}), Memory(kPage * 2 * 32));
  EXPECT_EQ(Groups(p), (Lines{"full_attention 16: layer_1 layer_2"}));
  EXPECT_EQ(p.pool.num_blocks, 32);

  p = MustPlan(Specs({Swa("layer_1"), Swa("layer_2")}), Memory(kPage * 2 * 32));
  EXPECT_EQ(Groups(p), (Lines{"sliding_window 16: layer_1 layer_2"}));
  EXPECT_EQ(p.pool.num_blocks, 32);

  p = MustPlan(Specs({Full("layer_1"), Swa("layer_2")}), Memory(kPage * 2 * 32));
  EXPECT_EQ(Groups(p), (Lines{"full_attention 16: layer_1", "sliding_window 16: layer_2"}));
  EXPECT_EQ(p.pool.num_blocks, 64);

  p = MustPlan(Specs({Full("layer_1"), Full("layer_2"), Swa("layer_3"), Swa("layer_4"),
                      Swa("layer_5"), Swa("layer_6")}),
               Memory(kPage * 2 * 32));
  EXPECT_EQ(Groups(p),
            (Lines{"full_attention 16: layer_1 layer_2", "sliding_window 16: layer_3 layer_5",
                   "sliding_window 16: layer_4 layer_6"}));
  EXPECT_EQ(p.pool.num_blocks, 32);

  std::vector<LayerSpec> layers;
  for (int i = 1; i <= 10; ++i) {
    const std::string name = "layer_" + std::to_string(i);
    layers.push_back(i <= 3 ? Full(name) : Swa(name));
  }
  p = MustPlan(Specs(layers), Memory(kPage * 3 * 32));
  EXPECT_EQ(Groups(p),
            (Lines{"full_attention 16: layer_1 layer_2 layer_3",
                   "sliding_window 16: layer_4 layer_7 layer_10",
                   "sliding_window 16: layer_5 layer_8", "sliding_window 16: layer_6 layer_9"}));
  EXPECT_EQ(p.pool.num_blocks, 32);

  layers.clear();
  for (int i = 1; i <= 11; ++i) {
    const std::string name = "layer_" + std::to_string(i);
    layers.push_back(i <= 6 ? Full(name) : Swa(name));
  }
  p = MustPlan(Specs(layers), Memory(kPage * 6 * 32));
  EXPECT_EQ(Groups(p), (Lines{"full_attention 16: layer_1 layer_2 layer_3 layer_4 layer_5 layer_6",
                              "sliding_window 16: layer_7 layer_8 layer_9 layer_10 layer_11"}));
  EXPECT_EQ(p.pool.num_blocks, 32);

  p = MustPlan(Specs({Full("layer_1", 128), Full("layer_2", 64)}), Memory(kPage * 3 * 32));
  EXPECT_EQ(Groups(p), (Lines{"full_attention 16: layer_1 layer_2"}));
  EXPECT_TRUE(p.groups[0].uniform_type);
  EXPECT_EQ(p.pool.num_blocks, 32);

  p = MustPlan(Specs({Full("layer_1", 64), Swa("layer_2", 32)}), Memory(kPage * 32));
  EXPECT_EQ(Groups(p), (Lines{"full_attention 16: layer_1", "sliding_window 32: layer_2"}));
  EXPECT_EQ(p.pool.num_blocks, 32);

  Result<Plan> r =
      PlanFromSpecs(Specs({Full("layer_1", 64), Swa("layer_2", 96)}), Memory(kPage * 2 * 32));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ErrorLines(),
            "\n  error [page-unification] layer 'layer_1': page size 16384 B is not divisible by "
            "the maximum page size 24576 B (layer 'layer_2') and cannot be padded: padding needs a "
            "non-MLA attention backend that indexes pages by block stride; change --block-size, "
            "--kv-cache-dtype or the layer's attention backend");

  PlanInputs in = Memory(kPage * 2 * 32);
  in.cache.num_gpu_blocks_override = 16;
  p = MustPlan(Specs({Full("layer_1"), Full("layer_2")}), in);
  EXPECT_EQ(p.pool.num_blocks, 16);

  ModelCacheSpecs off = Specs({Full("layer_1"), Swa("layer_2")});
  off.hybrid_manager_off = "by --disable-hybrid-kv-cache-manager";
  p = MustPlan(off, Memory(kPage * 2 * 32));
  EXPECT_EQ(Groups(p), (Lines{"full_attention 16: layer_1 layer_2"}));
  EXPECT_EQ(p.pool.num_blocks, 32);
}

// Workers on two pipeline stages: the whole model's groups, each stage's pool holding its own
// layers of them, every stage the same block count.
ModelCacheSpecs Staged(std::vector<LayerSpec> layers, std::vector<int> stages) {
  ModelCacheSpecs m = Specs(std::move(layers));
  m.layer_stages = std::move(stages);
  int64_t first = 0;
  for (const int s : m.layer_stages) first += s == 0 ? 1 : 0;
  m.pipeline_partition = {first, static_cast<int64_t>(m.layer_stages.size()) - first};
  return m;
}

std::vector<std::vector<int64_t>> StageBytes(const Plan& plan) {
  std::vector<std::vector<int64_t>> out;
  for (const PipelineStage& s : plan.pipeline_stages) {
    out.push_back({s.stage, s.cache_layers, s.bytes_per_block});
  }
  return out;
}

TEST(EngineCases, PipelineWorkers) {
  Plan p = MustPlan(Staged({Full("layer1"), Full("layer2"), Full("layer3")}, {0, 1, 1}),
                    Memory(kPage * 2 * 10));
  EXPECT_EQ(Groups(p), (Lines{"full_attention 16: layer1 layer2 layer3"}));
  EXPECT_EQ(StageBytes(p), (std::vector<std::vector<int64_t>>{{0, 1, kPage}, {1, 2, 2 * kPage}}));
  EXPECT_EQ(p.pool.num_blocks, 10);

  p = MustPlan(Staged({Full("layer1"), Full("layer2"), Swa("layer3"), Swa("layer4")}, {0, 0, 1, 1}),
               Memory(kPage * 2 * 10));
  EXPECT_EQ(Groups(p),
            (Lines{"full_attention 16: layer1 layer2", "sliding_window 16: layer3 layer4"}));
  EXPECT_EQ(p.pool.num_blocks, 10);

  p = MustPlan(Staged({Full("layer1"), Swa("layer2"), Swa("layer3"), Full("layer4"), Swa("layer5"),
                       Swa("layer6")},
                      {0, 0, 0, 1, 1, 1}),
               Memory(kPage * 10));
  EXPECT_EQ(Groups(p),
            (Lines{"full_attention 16: layer1 layer4", "sliding_window 16: layer2 layer5",
                   "sliding_window 16: layer3 layer6"}));
  EXPECT_EQ(StageBytes(p), (std::vector<std::vector<int64_t>>{{0, 3, kPage}, {1, 3, kPage}}));
  EXPECT_EQ(p.pool.num_blocks, 10);

  // test_get_kv_cache_configs_pp_sharding: each stage needs memory for its own layers only.
  ModelCacheSpecs sharded = Staged({Full("layer1"), Full("layer2")}, {0, 1});
  sharded.max_model_len = 512;
  p = MustPlan(sharded, Memory(kPage * (512 / 16 + 1)));
  EXPECT_EQ(p.pool.num_blocks, 33);

  // Too little memory: the engine checks the workers in stage order and names the length the
  // first that does not fit would hold (768 for stage 0's one layer in 48 pages), where stage
  // 1's two layers hold 384.
  ModelCacheSpecs tight = Staged({Full("layer1"), Full("layer2"), Full("layer3")}, {0, 1, 1});
  tight.max_model_len = 1024;
  Result<Plan> r = PlanFromSpecs(tight, Memory(kPage * 48));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ErrorLines(),
            "\n  error [kv-cache-memory] one request of --max-model-len 1024 needs 2097152 B of KV "
            "cache per rank, more than the 786432 B the pool holds; the largest --max-model-len "
            "that fits is 384 (the engine's own message names 768: it stops at pipeline stage 0, "
            "the first whose worker does not fit, and gives the longest request that stage "
            "holds); raise --kv-cache-memory or lower --max-model-len");
}

// Qwen1.5-7B's layers (32 K/V heads of 128, float16) at 16-token blocks: 256 KiB a page.
LayerSpec Qwen(std::string name, int64_t window = 0) {
  LayerSpec s{.name = std::move(name),
              .kind = window > 0 ? CacheKind::kSlidingWindow : CacheKind::kFullAttention,
              .block_size = 16,
              .num_kv_heads = 32,
              .head_size = 128,
              .head_size_v = 128,
              .model_dtype = ElementType::kFloat16,
              .sliding_window = window};
  return s;
}

std::vector<LayerSpec> QwenLayers(int full, int windowed) {
  std::vector<LayerSpec> out;
  for (int i = 0; i < full + windowed; ++i) {
    out.push_back(Qwen("layer_" + std::to_string(i), i < full ? 0 : 1024));
  }
  return out;
}

// test_get_max_concurrency_for_kv_cache_config: max_model_len 16384, 1,024 tokens a step.
TEST(EngineCases, MaxConcurrency) {
  constexpr int64_t kQwenPage = 16 * 32 * 128 * 2 * 2;
  PlanInputs in;
  in.cache.max_num_batched_tokens = 1024;
  in.cache.async_scheduling = false;
  in.kv_cache_memory_bytes = kQwenPage * 32 * 1536;
  Plan p = MustPlan(Specs(QwenLayers(32, 0), 16384), in);
  EXPECT_EQ(p.pool.num_blocks, 1536);
  EXPECT_EQ(p.capacity.max_concurrency, 1.5);

  in.kv_cache_memory_bytes = kQwenPage * 32 * 129 * 3;
  p = MustPlan(Specs(QwenLayers(0, 32), 16384), in);
  EXPECT_EQ(p.pool.num_blocks, 387);
  EXPECT_EQ(p.capacity.blocks_per_request, 129);
  EXPECT_EQ(p.capacity.max_concurrency, 3.0);

  in.kv_cache_memory_bytes = kQwenPage * 32 * (1024 + 129) * 3;
  p = MustPlan(Specs(QwenLayers(32, 32), 16384), in);
  EXPECT_EQ(Groups(p).size(), 2u);
  EXPECT_EQ(p.pool.num_blocks, (1024 + 129) * 3);
  EXPECT_EQ(p.capacity.max_concurrency, 3.0);
}

// test_estimate_max_model_len: 16,384 tokens of Qwen1.5-7B take 8 GiB; the estimate never
// exceeds the length asked for.
TEST(EngineCases, EstimatedMaxModelLen) {
  PlanInputs in;
  in.cache.max_num_batched_tokens = 32768;
  in.kv_cache_memory_bytes = 8 * kGiB;
  Result<Plan> p = PlanFromSpecs(Specs(QwenLayers(32, 0), 16385), in);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->max_model_len_that_fits, 16384);
  EXPECT_EQ(p->ErrorLines(),
            "\n  error [kv-cache-memory] one request of --max-model-len 16385 needs 8598323200 B "
            "of KV cache per rank, more than the 8589934592 B the pool holds; the largest "
            "--max-model-len that fits is 16384; raise --kv-cache-memory or lower "
            "--max-model-len");
  p = PlanFromSpecs(Specs(QwenLayers(32, 0), 16383), in);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->max_model_len_that_fits, 16383);
  EXPECT_EQ(p->ErrorLines(), "");
}

// --max-model-len auto over specs: PlanLaunchSpecs with the derived length `derived`.
Plan AutoFit(ModelCacheSpecs specs, int64_t derived, int64_t memory, int64_t override = 0) {
  specs.max_model_len = derived;
  specs.auto_fit_max_model_len = true;
  LaunchConfig launch;
  launch.cache.max_model_len = kAutoMaxModelLen;
  launch.cache.num_gpu_blocks_override = override;
  launch.cache.max_num_seqs = 4;
  Result<Plan> plan = PlanLaunchSpecs(specs, launch, memory);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return Plan{};
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  return *plan;
}

// The tests' new_mamba_spec: states (2, 512) and (3, 32, 32) in float32 (16 KiB, one attention
// page), mode none, `gamma` speculative blocks.
LayerSpec Mamba(std::string name, int64_t gamma) {
  return LayerSpec{
      .name = std::move(name),
      .kind = CacheKind::kRecurrent,
      .block_size = 16,
      .state = {{{2, 512}, ElementType::kFloat32}, {{3, 32, 32}, ElementType::kFloat32}},
      .recurrent_mode = RecurrentMode::kNone,
      .num_speculative_blocks = gamma};
}

TEST(EngineCases, AutoFitMaxModelLen) {
  const ModelCacheSpecs two = Specs({Full("layer_1"), Full("layer_2")});
  Plan p = AutoFit(two, 1024, kPage * 2 * 1024);
  EXPECT_EQ(p.model.max_model_len, 1024);
  p = AutoFit(two, 1024, kPage * 2 * 32);
  EXPECT_EQ(p.model.max_model_len, 512);
  p = AutoFit(Specs({Mamba("layer_1", 2), Full("layer_2")}), 8192, kPage * (1024 / 16 + 1 + 2));
  EXPECT_EQ(p.model.max_model_len, 1024);
  // The override's 32 blocks, not the memory, bound the length.
  p = AutoFit(two, 16384, kPage * 2 * 1024, 32);
  EXPECT_EQ(p.model.max_model_len, 512);
  EXPECT_EQ(p.pool.num_blocks, 32);
}

// test_check_enough_kv_cache_memory_respects_num_gpu_blocks_override.
TEST(EngineCases, OverrideBoundsTheMemoryCheck) {
  PlanInputs in = Memory(kPage * 2 * 1024);
  in.cache.num_gpu_blocks_override = 32;
  Result<Plan> p = PlanFromSpecs(Specs({Full("layer_1"), Full("layer_2")}, 16384), in);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->ErrorLines(),
            "\n  error [kv-cache-memory] one request of --max-model-len 16384 needs 33554432 B "
            "of KV cache per rank, more than the 1048576 B the pool holds; the largest "
            "--max-model-len that fits is 512; raise --num-gpu-blocks-override or lower "
            "--max-model-len");
}

// test_unify_hybrid_kv_cache_specs: without the hybrid manager, windowed layers are cached as
// full attention, their padded pages kept; with no full-attention layer to join, the engine
// refuses.
TEST(EngineCases, HybridManagerOff) {
  LayerSpec padded = Swa("layer_2", 64, 1024);
  padded.page_size_padded = 32 * 1024;
  LayerSpec chunked = Full("layer_3");
  chunked.kind = CacheKind::kChunkedLocal;
  chunked.attention_chunk_size = 512;
  chunked.page_size_padded = 32 * 1024;
  ModelCacheSpecs m = Specs({Full("layer_1"), padded, chunked});
  m.hybrid_manager_off = "by --disable-hybrid-kv-cache-manager";
  Plan p = MustPlan(m, Memory(80 * 1024 * 10));
  EXPECT_EQ(Groups(p), (Lines{"full_attention 16: layer_1 layer_2 layer_3"}));
  EXPECT_TRUE(p.groups[0].uniform_type);
  EXPECT_EQ(p.groups[0].layer_page_bytes, (std::vector<int64_t>{kPage, 32 * 1024, 32 * 1024}));
  EXPECT_EQ(p.pool.num_blocks, 10);

  m.layers.erase(m.layers.begin());
  Result<Plan> r = PlanFromSpecs(m, Memory(80 * 1024 * 10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ErrorLines(),
            "\n  error [hybrid-manager-off] the hybrid KV cache manager is off by "
            "--disable-hybrid-kv-cache-manager, and without it the engine caches every layer as "
            "one type with one block size, but layer 'layer_2' is sliding_window with block 16 "
            "and layer 'layer_3' is chunked_local with block 16: the engine refuses the launch (it "
            "fails to convert the KV cache specs to one unified type); drop "
            "--disable-hybrid-kv-cache-manager");

  // The converted layers keep their windows, and one group refuses two of them
  // (FullAttentionSpec.merge_window_sizes); so do two chunk sizes.
  m = Specs(
      {Full("layer_1"), Swa("layer_2", 64, 128), Swa("layer_3", 64, 128), Swa("layer_4", 64, 256)});
  m.hybrid_manager_off = "by --disable-hybrid-kv-cache-manager";
  r = PlanFromSpecs(m, Memory(kPage * 4 * 10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ErrorLines(),
            "\n  error [hybrid-manager-off] the hybrid KV cache manager is off by "
            "--disable-hybrid-kv-cache-manager, and without it the engine caches sliding-window "
            "layers as full attention in one group that keeps their windows, but layer 'layer_2' "
            "has a 128-token window and layer 'layer_4' a 256-token one: the engine refuses the "
            "launch ('All attention layers in the same KV cache group must have the same window "
            "size.'); drop --disable-hybrid-kv-cache-manager");
  m.layers[3].sliding_window = 128;
  EXPECT_EQ(MustPlan(m, Memory(kPage * 4 * 10)).pool.num_blocks, 10);
  m.layers[1] = chunked;
  m.layers[2] = chunked;
  m.layers[2].name = "layer_5";
  m.layers[2].attention_chunk_size = 8192;
  r = PlanFromSpecs(m, Memory(kPage * 4 * 10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ErrorLines(),
            "\n  error [hybrid-manager-off] the hybrid KV cache manager is off by "
            "--disable-hybrid-kv-cache-manager, and without it the engine caches chunked local "
            "layers as full attention in one group that keeps their attention chunks, but layer "
            "'layer_3' has a 512-token attention chunk and layer 'layer_5' a 8192-token one: the "
            "engine refuses the launch ('All attention layers in the same KV cache group must "
            "have the same window size.'); drop --disable-hybrid-kv-cache-manager");

  // A converted chunked layer loses its KV-cache quantization (the engine's FullAttentionSpec
  // for it gets no kv_quant_mode): nvfp4 pages sized as plain bytes.
  m = Specs({Full("layer_1"), chunked});
  m.hybrid_manager_off = "by --disable-hybrid-kv-cache-manager";
  for (LayerSpec& l : m.layers) {
    l.cache_dtype = KvCacheDtype::kNvfp4;
    l.page_size_padded = 0;
  }
  r = PlanFromSpecs(m, Memory(kPage * 4 * 10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ErrorLines(),
            "\n  error [hybrid-manager-off] the hybrid KV cache manager is off by "
            "--disable-hybrid-kv-cache-manager, and without it the engine caches chunked local "
            "layers as full attention, but builds their spec without the KV-cache quantization "
            "(unify_hybrid_kv_cache_specs): the 16-token page of layer 'layer_3' is sized as 4096 "
            "B of plain bytes where its nvfp4 cache needs 2304 B, and the worker's view of the "
            "allocated cache in the attention backend's nvfp4 shape fails once the weights are "
            "loaded; drop --disable-hybrid-kv-cache-manager, or choose another --kv-cache-dtype");
  m.layers[1].cache_dtype = KvCacheDtype::kFp8;
  EXPECT_EQ(MustPlan(m, Memory(kPage * 4 * 10)).groups.size(), 1u);
}

// resolve_kv_cache_block_sizes: groups of 16- and 32-token blocks hash at their GCD when the
// engine computes hashes (prefix caching, or a KV connector), else at the scheduler block.
TEST(EngineCases, HashBlockSize) {
  const ModelCacheSpecs m = Specs({Full("layer_1", 64), Swa("layer_2", 32)});
  PlanInputs in = Memory(kPage * 32);
  Plan p = MustPlan(m, in);
  EXPECT_EQ(p.scheduler_block_size, 32);
  EXPECT_EQ(p.hash_block_size, 16);
  in.cache.enable_prefix_caching = false;
  p = MustPlan(m, in);
  EXPECT_EQ(p.scheduler_block_size, 32);
  EXPECT_EQ(p.hash_block_size, 32);
  in.kv_connector = "NixlConnector";
  EXPECT_EQ(MustPlan(m, in).hash_block_size, 16);
  // One group: its block, caching or not.
  in.kv_connector.clear();
  EXPECT_EQ(MustPlan(Specs({Full("layer_1"), Full("layer_2")}), in).hash_block_size, 16);
  // A recurrent group of mode none (one 64-token block, the whole length) beside a connector:
  // the scheduler block, as the engine hashes beside a Mamba block that is not the cache block.
  LayerSpec state = Mamba("layer_2", 0);
  state.block_size = 64;
  const ModelCacheSpecs hybrid = Specs({Full("layer_1"), state}, 64);
  in.cache.max_num_seqs = 4;
  in.kv_connector = "NixlConnector";
  p = MustPlan(hybrid, in);
  EXPECT_EQ(p.scheduler_block_size, 64);
  EXPECT_EQ(p.hash_block_size, 64);
  in.kv_connector.clear();
  EXPECT_EQ(MustPlan(hybrid, in).hash_block_size, 64);
}

}  // namespace
}  // namespace kvtopo
