// Pipeline parallelism: the hidden layers split over stages as the engine splits them
// (get_pp_indices), each stage's pool holding its layers of the whole model's groups, every pool
// the smallest block count any stage holds (get_kv_cache_configs), and the launches the engine
// refuses (SupportsPP on the target's and the draft's classes).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"

namespace kvtopo {
namespace {

Result<Plan> PlanOptions(const LaunchOptions& o) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchConfig c, ToLaunchConfig(o));
  return PlanLaunch(c);
}

LaunchOptions Model(const std::string& name, int64_t tp, int64_t pp) {
  LaunchOptions o;
  o.model = name;
  o.tensor_parallel_size = tp;
  o.pipeline_parallel_size = pp;
  return o;
}

// The plan's error lines ("" when accepted); a launch that does not plan fails the test.
std::string Errors(const LaunchOptions& o) {
  Result<Plan> plan = PlanOptions(o);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? plan->ErrorLines() : "not planned";
}

std::vector<std::vector<int64_t>> Stages(const Plan& plan) {
  std::vector<std::vector<int64_t>> out;
  for (const PipelineStage& s : plan.pipeline_stages) {
    out.push_back({s.stage, s.first_layer, s.num_layers, s.cache_layers, s.bytes_per_block});
  }
  return out;
}

// The batches the engine keeps in flight (VllmConfig.max_concurrent_batches) bound the sliding
// windows: one per stage, one more under async scheduling on the V2 model runner, two with one
// stage on the V1 runner. gpt-oss-120b's 128-token windows at 32,000 tokens, 16-token blocks.
TEST(PipelineParallel, BatchesInFlightBoundTheWindows) {
  struct Case {
    int64_t pp;
    bool async;
    bool v2;
    int64_t in_flight;
    int64_t window_pages;
  };
  for (const Case& k : std::vector<Case>{{1, true, false, 16'384, 1'033},
                                         {1, false, false, 8'192, 521},
                                         {1, true, true, 16'384, 1'033},
                                         {2, false, false, 16'384, 1'033},
                                         {2, true, false, 16'384, 1'033},
                                         {2, true, true, 24'576, 1'545},
                                         {4, true, false, 32'768, 2'001},
                                         {4, false, true, 32'768, 2'001}}) {
    SCOPED_TRACE(testing::Message() << "pp " << k.pp << " async " << k.async << " v2 " << k.v2);
    LaunchOptions o = Model("gpt-oss-120b", 1, k.pp);
    o.max_model_len = 32000;
    o.async_scheduling = k.async;
    o.use_v2_model_runner = k.v2;
    auto plan = PlanOptions(o);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
    EXPECT_EQ(plan->max_tokens_in_flight(), k.in_flight);
    EXPECT_EQ(nlohmann::json::parse(PlanToJsonText(*plan))["max_tokens_in_flight"], k.in_flight);
    ASSERT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
    EXPECT_EQ(plan->groups[0].geometry.max_pages_per_request(), k.window_pages);
    // The table says so beside the step.
    EXPECT_NE(FormatPlanTable(*plan).find(fmt::format(
                  "8192 tokens a step ({} in flight, which the windows hold)\n", k.in_flight)),
              std::string::npos);
  }
  // Without a windowed group the table gives the step alone.
  auto dense = PlanOptions(Model("kimi-k2.6", 8, 2));
  ASSERT_TRUE(dense.ok()) << dense.status().ToString();
  EXPECT_NE(FormatPlanTable(*dense).find("8192 tokens a step\n"), std::string::npos);
}

// gpt-oss-120b at TP 4 x PP 2: 18 layers of 2 K/V heads a stage, 9 of each group: 9 x 8 KiB per
// block, so the pool and the tokens are TP 8's (36 layers of 1 head).
TEST(PipelineParallel, EvenStagesHoldHalfTheLayers) {
  auto plan = PlanOptions(Model("gpt-oss-120b", 4, 2));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(Stages(*plan),
            (std::vector<std::vector<int64_t>>{{0, 0, 18, 18, 73'728}, {1, 18, 18, 18, 73'728}}));
  EXPECT_EQ(plan->pool.bytes_per_block, 73'728);
  EXPECT_EQ(plan->pool.num_blocks, 466'033);  // 32 GiB // 72 KiB
  EXPECT_EQ(plan->capacity.max_tokens, 6'621'558);
  auto tp8 = PlanOptions(Model("gpt-oss-120b", 8, 1));
  ASSERT_TRUE(tp8.ok()) << tp8.status().ToString();
  EXPECT_EQ(tp8->capacity.max_tokens, 6'621'558);
  EXPECT_TRUE(tp8->pipeline_stages.empty());
  // The regions are one stage's: 9 layers of each group.
  ASSERT_EQ(plan->pool.regions.size(), 2u);
  EXPECT_EQ(plan->pool.regions[0].offsets_bytes.size(), 9u);
  EXPECT_EQ(plan->pool.regions[0].bytes_used, 73'728);
  const nlohmann::json j = nlohmann::json::parse(PlanToJsonText(*plan));
  EXPECT_EQ(j["pipeline_stages"][1].dump(),
            R"({"bytes_per_block":73728,"cache_layers":18,"first_layer":18,"num_layers":18,)"
            R"("stage":1})");
}

// DeepSeek-V3.2's 61 layers (an MLA cache and an indexer each) over 2 stages: 31 and 30, the
// remainder on the stage before the last; stage 0's pages size the pool. VLLM_PP_LAYER_PARTITION
// moves the layers, and the pool follows the larger stage.
TEST(PipelineParallel, UnevenStagesAndTheLayerPartition) {
  auto plan = PlanOptions(Model("deepseek-v3.2", 8, 2));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  const std::vector<std::vector<int64_t>> stages = Stages(*plan);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0][2], 31);
  EXPECT_EQ(stages[0][3], 62);
  EXPECT_EQ(stages[1][1], 31);
  EXPECT_EQ(stages[1][3], 60);
  EXPECT_GT(stages[0][4], stages[1][4]);
  EXPECT_EQ(plan->pool.bytes_per_block, stages[0][4]);
  EXPECT_EQ(plan->pool.num_blocks, (int64_t{32} << 30) / stages[0][4]);
  // The table names each stage's layers and which stage's pages size the pool.
  const std::string table = FormatPlanTable(*plan);
  EXPECT_NE(table.find("  * uniform type: one block id holds one page of every layer (per-layer "
                       "pages)\n\npool       5494 blocks x 5.96 MiB per block (stride 6253568 B: "
                       "the largest group's pages)\nstage 0    layers 0-30: 62 cache layers, "
                       "5.96 MiB per block (sizes the pool)\nstage 1    layers 31-60: 60 cache "
                       "layers, 5.77 MiB per block\nmemory     32.00 GiB per rank"),
            std::string::npos)
      << table;
  const int64_t blocks_per_request = plan->capacity.blocks_per_request;
  auto one = PlanOptions(Model("deepseek-v3.2", 8, 1));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->capacity.blocks_per_request, blocks_per_request);

  LaunchOptions o = Model("deepseek-v3.2", 8, 2);
  o.pp_layer_partition = " 21, 40";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->pipeline_stages.size(), 2u);
  EXPECT_EQ(plan->pipeline_stages[1].first_layer, 21);
  EXPECT_EQ(plan->pipeline_stages[1].cache_layers, 80);
  EXPECT_EQ(plan->pool.bytes_per_block, plan->pipeline_stages[1].bytes_per_block);

  // Over 4 stages: 15, 15, 16, 15.
  plan = PlanOptions(Model("deepseek-v3.2", 4, 4));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::vector<int64_t> counts;
  for (const PipelineStage& s : plan->pipeline_stages) counts.push_back(s.num_layers);
  EXPECT_EQ(counts, (std::vector<int64_t>{15, 15, 16, 15}));

  o.pp_layer_partition = "30,30";
  EXPECT_EQ(Errors(o),
            "\n  error [pipeline-parallel] VLLM_PP_LAYER_PARTITION '30,30' holds 60 layers, but "
            "the model has 61 hidden layers; the engine refuses it");
  o.pp_layer_partition = "61";
  EXPECT_EQ(Errors(o),
            "\n  error [pipeline-parallel] VLLM_PP_LAYER_PARTITION '61' names 1 stages, but "
            "--pipeline-parallel-size is 2; the engine refuses it");
  o.pp_layer_partition = "30,x";
  EXPECT_EQ(Errors(o),
            "\n  error [pipeline-parallel] VLLM_PP_LAYER_PARTITION '30,x': 'x' is not a layer "
            "count (the engine's 'Invalid partition string')");
  // The engine reads the variable at one stage too.
  o.pipeline_parallel_size = 1;
  EXPECT_EQ(Errors(o),
            "\n  error [pipeline-parallel] VLLM_PP_LAYER_PARTITION '30,x': 'x' is not a layer "
            "count (the engine's 'Invalid partition string')");
  o.pp_layer_partition = "61";
  EXPECT_EQ(Errors(o), "");
}

// A stage of no layers (a 0 in VLLM_PP_LAYER_PARTITION) gets every group, empty, and its worker
// fails: one uniform-type group (DeepSeek-V3.2's MLA caches and indexers) in the capacity log, a
// plan of other groups in the layout.
TEST(PipelineParallel, AStageWithoutCacheLayersIsRefused) {
  LaunchOptions o = Model("deepseek-v3.2", 8, 2);
  o.pp_layer_partition = "0,61";
  EXPECT_EQ(Errors(o),
            "\n  error [pipeline-parallel] pipeline stage 0 (no hidden layers) holds no cache "
            "layer: the engine gives its workers every KV-cache group, empty, and fails logging "
            "the pool's capacity ('integer division or modulo by zero') as it sets up the KV "
            "cache; give every stage cache layers (VLLM_PP_LAYER_PARTITION, "
            "--pipeline-parallel-size)");
  o = Model("gpt-oss-120b", 4, 3);
  o.pp_layer_partition = "18,18,0";
  EXPECT_EQ(Errors(o),
            "\n  error [pipeline-parallel] pipeline stage 2 (no hidden layers) holds no cache "
            "layer: the engine gives its workers every KV-cache group, empty, and asserts "
            "'group_size must be greater than 0' as it sets up the KV cache; give every stage "
            "cache layers (VLLM_PP_LAYER_PARTITION, --pipeline-parallel-size)");
  const Result<Plan> refused = PlanOptions(o);
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  EXPECT_NE(FormatPlanTable(*refused).find(
                "\nstage 2    no hidden layers: 0 cache layers, 0 B per block\nmemory "),
            std::string::npos)
      << FormatPlanTable(*refused);
  o.pp_layer_partition = "18,17,1";
  EXPECT_EQ(Errors(o), "");
}

// The engine checks the draft's class at the pipeline size too: EAGLE-3 heads and DeepSeek's MTP
// class lack SupportsPP; n-gram needs no draft class.
TEST(PipelineParallel, DraftClassesWithoutSupportsPpAreRefused) {
  LaunchOptions o = Model("kimi-k2.6", 8, 2);
  o.speculative_config =
      R"({"method": "eagle3", "model": "kimi-k2.6-eagle3-mla", "num_speculative_tokens": 3})";
  EXPECT_EQ(Errors(o),
            "\n  error [pipeline-parallel] --pipeline-parallel-size 2 with speculative method "
            "'eagle3': the engine checks the draft's config at the same pipeline size, and no "
            "draft class of method 'eagle3' does support pipeline parallelism (SupportsPP), so "
            "it refuses the launch; use --pipeline-parallel-size 1");
  o = Model("deepseek-v3.2", 8, 2);
  o.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 1})";
  EXPECT_EQ(Errors(o),
            "\n  error [pipeline-parallel] --pipeline-parallel-size 2 with speculative method "
            "'mtp': the engine checks the draft's config at the same pipeline size, and the MTP "
            "class of model type 'deepseek_v32' does not support pipeline parallelism "
            "(SupportsPP), so it refuses the launch; use --pipeline-parallel-size 1");
  o.speculative_config =
      R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4})";
  const auto plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->pipeline_stages.size(), 2u);
}

// A registered class without SupportsPP (Mamba2ForCausalLM) is refused at any pipeline size
// above 1; routed experts are refused with it too.
TEST(PipelineParallel, TargetClassesWithoutSupportsPpAreRefused) {
  LaunchConfig c;
  c.model = "config.json";
  c.kv_cache_memory_bytes = int64_t{20} << 30;
  c.pipeline_parallel_size = 2;
  c.cache.enforce_eager = true;  // 155 blocks hold no full decode graph of 256 rows
  auto specs = BuildModelCacheSpecsFromJson(
      nlohmann::json::parse(
          R"({"architectures": ["Mamba2ForCausalLM"], "torch_dtype": "bfloat16"})"),
      c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  auto plan = PlanLaunchSpecs(*specs, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [pipeline-parallel] --pipeline-parallel-size 2 with Mamba2ForCausalLM: the "
            "engine's class for it does not support pipeline parallelism (SupportsPP) and the "
            "engine refuses the launch; use --pipeline-parallel-size 1");
  LaunchOptions o = Model("gpt-oss-120b", 4, 2);
  o.enable_return_routed_experts = true;
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--enable-return-routed-experts with --pipeline-parallel-size 2: the engine refuses "
            "the pair ('--enable-return-routed-experts is incompatible with pipeline "
            "parallelism'); drop one of them");
}

// The layer count under the names config classes map to num_hidden_layers: GPT-2's n_layer (12),
// MPT's n_layers (32).
TEST(PipelineParallel, LayerCountUnderItsConfigAliases) {
  const std::string corpus = std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/";
  auto counts = [](const Plan& plan) {
    std::vector<int64_t> out;
    for (const PipelineStage& s : plan.pipeline_stages) out.push_back(s.num_layers);
    return out;
  };
  auto plan = PlanOptions(Model(corpus + "gpt2.json", 1, 2));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(counts(*plan), (std::vector<int64_t>{6, 6}));
  plan = PlanOptions(Model(corpus + "mpt-7b.json", 1, 4));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(counts(*plan), (std::vector<int64_t>{8, 8, 8, 8}));
}

// Specs built by hand must give every layer a stage of the partition.
TEST(PipelineParallel, HandBuiltStagesAreChecked) {
  LaunchOptions o = Model("gpt-oss-120b", 4, 2);
  auto launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  auto specs = BuildModelCacheSpecs(*launch);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->layer_stages.size(), 36u);
  EXPECT_EQ(specs->pipeline_partition, (std::vector<int64_t>{18, 18}));
  ModelCacheSpecs bad = *specs;
  bad.layer_stages.pop_back();
  EXPECT_EQ(PlanLaunchSpecs(bad, *launch).status().message(),
            "pipeline stages: 35 layer stages for 36 layers; give one stage per layer");
  bad = *specs;
  bad.layer_stages[3] = 2;
  EXPECT_EQ(PlanLaunchSpecs(bad, *launch).status().message(),
            "pipeline stages: layer 'model.layers.3.self_attn' is on stage 2, but the partition "
            "has 2 stages");
  bad = *specs;
  bad.pipeline_partition[1] = int64_t{1} << 62;  // the first layers would overflow
  EXPECT_EQ(PlanLaunchSpecs(bad, *launch).status().message(),
            "pipeline stages: a stage of 4611686018427387904 hidden layers; each holds 0 to 4096");
}

}  // namespace
}  // namespace kvtopo
