// Encoder-decoder models (Whisper): decoder self-attention and cross-attention in two cache
// groups, the cross-attention group sized for max_num_batched_tokens encoder tokens per request
// as the engine sizes it (the fork's CrossAttentionSpec.max_memory_usage_bytes reads
// scheduler_config.max_num_encoder_input_tokens, which is max_num_batched_tokens when the KV
// cache is sized), and the launch rules the engine applies to them.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/launch.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "kvtopo/simulate.h"
#include "kvtopo/verify.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// whisper-large-v3's config.json (the fields the engine reads).
nlohmann::json WhisperLargeV3() {
  return nlohmann::json::parse(R"({"architectures": ["WhisperForConditionalGeneration"],
    "model_type": "whisper", "d_model": 1280, "decoder_attention_heads": 20,
    "decoder_layers": 32, "encoder_attention_heads": 20, "encoder_layers": 32,
    "max_source_positions": 1500, "max_target_positions": 448, "torch_dtype": "float16"})");
}

LaunchConfig Launch() {
  LaunchConfig c;
  c.model = "config.json";
  c.kv_cache_memory_bytes = 20 * kGiB;
  return c;
}

Result<Plan> PlanWith(const nlohmann::json& config, const LaunchConfig& launch) {
  KVTOPO_ASSIGN_OR_RETURN(ModelCacheSpecs specs, BuildModelCacheSpecsFromJson(config, launch));
  return PlanLaunchSpecs(specs, launch);
}

std::vector<std::string> Errors(const Plan& plan) {
  std::vector<std::string> out;
  for (const Diagnostic& d : plan.diagnostics) {
    if (d.severity == Severity::kError) out.push_back(d.code + ": " + d.message);
  }
  return out;
}

TEST(EncoderDecoder, WhisperDecoderLayersCacheSelfAndCrossAttention) {
  Result<ModelCacheSpecs> specs = BuildModelCacheSpecsFromJson(WhisperLargeV3(), Launch());
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->layers.size(), 64u);
  EXPECT_EQ(specs->max_model_len, 448);  // max_target_positions
  EXPECT_EQ(specs->encoder_tokens_per_request, 1500);
  EXPECT_FALSE(specs->enable_prefix_caching);
  for (size_t i = 0; i < specs->layers.size(); ++i) {
    const LayerSpec& s = specs->layers[i];
    EXPECT_EQ(s.name, "model.decoder.layers." + std::to_string(i / 2) +
                          (i % 2 == 0 ? ".self_attn" : ".encoder_attn"));
    EXPECT_EQ(s.kind, CacheKind::kFullAttention);
    EXPECT_EQ(s.cross_attention, i % 2 == 1);
    EXPECT_EQ(s.num_kv_heads, 20);
    EXPECT_EQ(s.head_size, 64);
    EXPECT_EQ(s.model_dtype, ElementType::kFloat16);
  }
  // WhisperConfig's defaults fill what a config leaves out: 4 layers of 6 heads of 64, 448
  // target and 1500 source positions.
  specs = BuildModelCacheSpecsFromJson({{"architectures", {"WhisperForConditionalGeneration"}}},
                                       Launch());
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->layers.size(), 8u);
  EXPECT_EQ(specs->layers[7].num_kv_heads, 6);
  EXPECT_EQ(specs->layers[7].head_size, 64);
  EXPECT_EQ(specs->max_model_len, 448);
  EXPECT_EQ(specs->encoder_tokens_per_request, 1500);
  nlohmann::json odd = WhisperLargeV3();
  odd["d_model"] = 1290;
  EXPECT_EQ(BuildModelCacheSpecsFromJson(odd, Launch()).status().message(),
            "config.json 'config.json': field 'd_model' is 1290, which decoder_attention_heads "
            "20 does not divide (the engine raises)");
}

// The engine's figures for whisper-large-v3 in 20 GiB (kv_cache_utils.py): two groups of 32
// layers sharing each block id; num_blocks = memory // (32 x 81,920 B); a request holds
// cdiv(448, 16) = 28 self-attention blocks and cdiv(8192, 16) = 512 cross-attention blocks.
TEST(EncoderDecoder, WhisperCapacityCountsTheEncoderBudget) {
  Result<Plan> plan = PlanWith(WhisperLargeV3(), Launch());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_FALSE(plan->groups[0].geometry.cross_attention());
  EXPECT_TRUE(plan->groups[1].geometry.cross_attention());
  EXPECT_EQ(plan->groups[1].geometry.max_encoder_tokens(), 8192);
  EXPECT_EQ(plan->groups[1].geometry.max_pages_per_request(), 512);
  EXPECT_EQ(plan->groups[1].geometry.required_columns(), 512);
  EXPECT_EQ(plan->groups[0].geometry.max_pages_per_request(), 28);
  // The worker's rows: the engine sizes every group's for max(448, 8192) tokens in an
  // encoder-decoder model (GPUModelRunner's input batch), self-attention too.
  EXPECT_EQ(plan->groups[0].geometry.required_columns(), 28);
  EXPECT_EQ(plan->groups[0].geometry.block_table_width(), 512);
  EXPECT_EQ(plan->groups[1].geometry.block_table_width(), 512);
  EXPECT_EQ(plan->groups[1].layers.size(), 32u);
  EXPECT_EQ(plan->groups[1].geometry.page_size_bytes(), 81920);
  EXPECT_EQ(plan->pool.num_blocks, 8192);
  EXPECT_EQ(plan->capacity.blocks_per_request, 540);
  EXPECT_EQ(plan->capacity.max_tokens, 6796);
  EXPECT_FALSE(plan->prefix_caching());

  // A smaller step budget is a smaller encoder budget: 28 + 128 blocks per request.
  LaunchConfig small = Launch();
  small.cache.max_num_batched_tokens = 2048;
  small.max_num_batched_tokens_given = true;
  plan = PlanWith(WhisperLargeV3(), small);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->capacity.blocks_per_request, 156);
  EXPECT_EQ(plan->capacity.max_tokens, 23525);  // int(8192 / 156 * 448)
  EXPECT_EQ(plan->groups[0].geometry.block_table_width(), 128);
  EXPECT_EQ(plan->groups[1].geometry.block_table_width(), 128);

  // The runtime gets the cross-attention group: cdiv(1500, 16) = 94 blocks at the first
  // allocation, none after.
  Result<KVCacheManagerOptions> options = KVCacheManagerOptions::FromPlan(*plan, 1024);
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_FALSE(options->enable_prefix_caching);
  EXPECT_FALSE(options->groups[0].cross_attention);
  EXPECT_TRUE(options->groups[1].cross_attention);
  options->groups[1].cross_attention = false;  // the geometry implies it
  auto manager = KVCacheManager::Create(*options);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  const std::vector<int32_t> prompt(4, 7);
  ASSERT_TRUE((*manager)->AddRequest(RequestId{0}, prompt).ok());
  Result<bool> ok = (*manager)->AllocateSlots(
      RequestId{0}, {.num_new_tokens = TokenCount{4}, .num_encoder_tokens = TokenCount{1500}});
  ASSERT_TRUE(ok.ok() && *ok);
  EXPECT_EQ((*manager)->BlockIds(RequestId{0}, GroupId{0}).size(), 1u);
  EXPECT_EQ((*manager)->BlockIds(RequestId{0}, GroupId{1}).size(), 94u);
  for (int i = 0; i < 20; ++i) {
    ok = (*manager)->AllocateSlots(RequestId{0}, {.num_new_tokens = TokenCount{1}});
    ASSERT_TRUE(ok.ok() && *ok);
  }
  EXPECT_EQ((*manager)->BlockIds(RequestId{0}, GroupId{0}).size(), 2u);
  EXPECT_EQ((*manager)->BlockIds(RequestId{0}, GroupId{1}).size(), 94u);
}

// The error diagnostics ("code: message") of `config` planned under Launch() changed by `change`.
std::vector<std::string> LaunchErrors(const nlohmann::json& config,
                                      const std::function<void(LaunchConfig&)>& change) {
  LaunchConfig launch = Launch();
  change(launch);
  Result<Plan> plan = PlanWith(config, launch);
  if (!plan.ok()) {
    ADD_FAILURE() << plan.status().ToString();
    return {};
  }
  return Errors(*plan);
}

TEST(EncoderDecoder, LaunchRulesTheEngineApplies) {
  const nlohmann::json whisper = WhisperLargeV3();
  const std::vector<std::string> dcp = LaunchErrors(whisper, [](LaunchConfig& c) {
    c.parallel.tensor_parallel_size = 2;
    c.parallel.decode_context_parallel_size = 2;
  });
  EXPECT_NE(std::find(dcp.begin(), dcp.end(),
                      "cross-attention-context-parallel: cross-attention layer "
                      "'model.decoder.layers.0.encoder_attn' under --decode-context-parallel-size "
                      "2 and --prefill-context-parallel-size 1: the engine runs encoder-decoder "
                      "models without context parallelism; set both to 1"),
            dcp.end());

  // TP divides the decoder heads (WhisperAttention asserts it) and the encoder heads, which the
  // engine's TP check reads as num_attention_heads.
  LaunchConfig tp4 = Launch();
  tp4.parallel.tensor_parallel_size = 4;
  Result<Plan> plan = PlanWith(whisper, tp4);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[1].spec.num_kv_heads, 5);
  nlohmann::json six = whisper;
  six["encoder_attention_heads"] = 6;
  EXPECT_EQ(LaunchErrors(six, [](LaunchConfig& c) { c.parallel.tensor_parallel_size = 4; }),
            std::vector<std::string>{
                "tp-attention-heads: --tensor-parallel-size 4 does not divide the 6 attention "
                "heads of 'config.json', and the engine refuses such a launch; choose a "
                "tensor-parallel size that divides 6"});
  six = whisper;
  six["decoder_attention_heads"] = 10;
  six["d_model"] = 640;
  const std::vector<std::string> tp20 =
      LaunchErrors(six, [](LaunchConfig& c) { c.parallel.tensor_parallel_size = 20; });
  ASSERT_FALSE(tp20.empty());
  EXPECT_EQ(tp20.front(),
            "tp-kv-heads: --tensor-parallel-size 20 does not divide the 10 KV heads of layer "
            "'model.decoder.layers.0.self_attn' ('config.json'), and the engine's "
            "WhisperForConditionalGeneration model splits them and cannot replicate them; choose "
            "a tensor-parallel size that divides 10");

  EXPECT_EQ(LaunchErrors(whisper, [](LaunchConfig& c) { c.cache.enable_prefix_caching = true; }),
            std::vector<std::string>{
                "enable-prefix-caching: --enable-prefix-caching with the encoder-decoder model "
                "WhisperForConditionalGeneration: the engine's cross-attention manager keeps no "
                "prefix cache (its first lookup raises NotImplementedError), and the engine "
                "leaves prefix caching off for these models; drop --enable-prefix-caching"});

  EXPECT_EQ(LaunchErrors(whisper,
                         [](LaunchConfig& c) {
                           c.cache.max_num_batched_tokens = 1024;
                           c.max_num_batched_tokens_given = true;
                         }),
            std::vector<std::string>{
                "max-num-batched-tokens: --max-num-batched-tokens 1024 is below the 1500 encoder "
                "tokens of one input of WhisperForConditionalGeneration: the engine schedules an "
                "encoder input whole and refuses the launch; raise --max-num-batched-tokens to at "
                "least 1500"});

  EXPECT_EQ(LaunchErrors(whisper,
                         [](LaunchConfig& c) {
                           c.speculative =
                               SpeculativeConfig{.method = "ngram", .num_speculative_tokens = 2};
                         }),
            std::vector<std::string>{
                "speculative-encoder-decoder: --speculative-config method 'ngram' with the "
                "encoder-decoder model WhisperForConditionalGeneration: kvtopo has not verified "
                "the engine's drafting over cross-attention caches and does not plan it; drop "
                "--speculative-config"});

  // Chunked prefill is off for the model whatever the flag says: a given budget below the
  // length is refused as the engine's scheduler config refuses it.
  const std::vector<std::string> below = LaunchErrors(whisper, [](LaunchConfig& c) {
    c.enable_chunked_prefill = true;
    c.cache.max_num_batched_tokens = 256;
    c.max_num_batched_tokens_given = true;
  });
  ASSERT_FALSE(below.empty());
  EXPECT_EQ(below.front(),
            "max-num-batched-tokens: --max-num-batched-tokens 256 is below --max-model-len 448 "
            "with chunked prefill off: a prompt is scheduled whole, so the engine refuses it; "
            "raise --max-num-batched-tokens, lower --max-model-len or enable chunked prefill");

  // Too little memory names the encoder budget too.
  EXPECT_EQ(LaunchErrors(whisper, [](LaunchConfig& c) { c.kv_cache_memory_bytes = kGiB; }),
            std::vector<std::string>{
                "kv-cache-memory: one request of --max-model-len 448 needs 1415577600 B of KV "
                "cache per rank, more than the 1073741824 B the pool holds; not even a 1-token "
                "request fits; raise --kv-cache-memory or lower "
                "--max-model-len or --max-num-batched-tokens (the cross-attention groups hold "
                "pages for its 8192 encoder tokens per request)"});
}

// The simulator admits each request with the model's encoder tokens (1500: 94 blocks) in the
// cross-attention group; verify, which attends decoder positions, refuses the plan.
TEST(EncoderDecoder, SimulateAllocatesTheEncoderTokensAndVerifyRefuses) {
  LaunchConfig launch = Launch();
  launch.kv_cache_memory_bytes = 4 * kGiB;
  Result<Plan> plan = PlanWith(WhisperLargeV3(), launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  Workload workload;
  for (int i = 0; i < 3; ++i) {
    workload.requests.push_back({.prompt_len = 4, .decode_steps = 40});
  }
  SimulateOptions options;
  options.enable_prefix_caching = plan->prefix_caching();
  Result<SimulateReport> report = Simulate(*plan, workload, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->requests_finished, 3);
  EXPECT_EQ(report->invariant_violations, 0);
  ASSERT_EQ(report->groups.size(), 2u);
  EXPECT_EQ(report->groups[1].kind, "cross_attention");
  EXPECT_EQ(report->groups[1].peak_pages, 3 * 94);
  EXPECT_EQ(report->groups[0].peak_pages, 3 * 3);  // cdiv(4 + 40, 16)

  std::unique_ptr<VerifyTransport> transport = InProcessTransport();
  Result<VerifyReport> verify = Verify(*plan, VerifyOptions{}, *transport);
  EXPECT_EQ(verify.status().code(), StatusCode::kRejected);
  EXPECT_EQ(verify.status().message(),
            "config.json: cache group 1 is cross-attention (an encoder-decoder model), which "
            "kvtopo verify does not attend: it checks DCP attention over decoder positions, and "
            "the engine runs encoder-decoder models without DCP");
}

}  // namespace
}  // namespace kvtopo
