// Dense decoders read from a user's config.json (Llama, Mistral, Mixtral, Qwen2, Qwen3,
// Qwen3-MoE, Gemma 2, Gemma 3, ...): heads, head size, windows and dtype as the engine reads them,
// planned end to end, with the launch flags that change which layers slide.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kvtopo/dtype.h"
#include "kvtopo/launch.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"
#include "model/architectures.h"
#include "model/test_configs.h"

namespace kvtopo {
namespace {

using testing_configs::CorpusConfig;
using testing_configs::DiagnosticMessage;

// The start of the refusal of an MTP launch that leaves num_speculative_tokens out.
const std::string kMtpCountUnset =
    "--speculative-config: 'num_speculative_tokens' is not set: with method 'mtp' and a 'model', "
    "the engine's method detection compares it with 1 before it takes the count from the draft "
    "config's n_predict, and raises TypeError ('>' not supported between instances of 'NoneType' "
    "and 'int'); set it: ";
using testing_configs::Llama31_8B;
using testing_configs::PlanWith;

constexpr int64_t kGiB = int64_t{1} << 30;

// Qwen2.5-7B-Instruct's: 28 query heads of 128 (3584 / 28), 4 KV heads, window off.
nlohmann::json Qwen25_7B() {
  return nlohmann::json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
    "max_position_embeddings": 32768, "sliding_window": 131072, "use_sliding_window": false,
    "max_window_layers": 28, "torch_dtype": "bfloat16"})");
}

Result<Plan> PlanConfig(const nlohmann::json& config, int64_t tp, int64_t dcp, int64_t memory,
                        int64_t max_model_len = 0,
                        std::optional<ElementType> model_dtype = std::nullopt) {
  LaunchConfig c;
  c.model_dtype = model_dtype;
  c.parallel.tensor_parallel_size = tp;
  c.parallel.decode_context_parallel_size = dcp;
  c.cache.max_model_len = max_model_len;
  c.kv_cache_memory_bytes = memory;
  return PlanWith(config, c);
}

std::string ConfigError(const nlohmann::json& config) {
  LaunchConfig c;
  c.model = "config.json";
  Result<ModelCacheSpecs> specs = BuildModelCacheSpecsFromJson(config, c);
  return specs.ok() ? "(accepted)" : specs.status().message();
}

// One group of 32 full-attention layers, FLASH_ATTN blocks of 16: a page holds 16 tokens x 2 (K,
// V) x KV heads per rank x 128 x 2 B. 16 GiB at TP1 is 8,192 pages of 32 x 64 KiB = 131,072
// tokens; at TP8 one KV head per rank makes 65,536 pages, 1,048,576 tokens.
TEST(DenseModels, Llama31At16GiB) {
  auto plan = PlanConfig(Llama31_8B(), 1, 1, 16 * kGiB, 65536);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.size(), 32u);
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 16);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 65536);
  EXPECT_EQ(plan->pool.num_blocks, 8192);
  EXPECT_EQ(plan->capacity.max_tokens, 131072);

  plan = PlanConfig(Llama31_8B(), 8, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 8192);
  EXPECT_EQ(plan->pool.num_blocks, 65536);
  EXPECT_EQ(plan->capacity.max_tokens, 1'048'576);
}

// The engine's head split under TP: TP divides the attention heads, and the KV heads divide TP or
// are divided by it. Llama-3.1-8B (32 heads, 8 KV heads) runs at TP 16 (two ranks hold a copy of
// each KV head) but not at TP 3; a 48-head, 8-KV-head config not at TP 12 (12 is no multiple of 8).
TEST(DenseModels, TensorParallelSplitsTheHeadsAsTheEngineDoes) {
  auto tp16 = PlanConfig(Llama31_8B(), 16, 1, 16 * kGiB, 4096);
  ASSERT_TRUE(tp16.ok()) << tp16.status().ToString();
  ASSERT_TRUE(tp16->accepted()) << tp16->ErrorLines();
  EXPECT_EQ(tp16->groups[0].geometry.page_size_bytes(), 16 * 2 * 1 * 128 * 2);
  auto tp3 = PlanConfig(Llama31_8B(), 3, 1, 16 * kGiB, 4096);
  ASSERT_TRUE(tp3.ok()) << tp3.status().ToString();
  EXPECT_EQ(
      tp3->ErrorLines(),
      "\n  error [tp-attention-heads] --tensor-parallel-size 3 does not divide the 32 attention "
      "heads of 'config.json', and the engine refuses such a launch; choose a "
      "tensor-parallel size that divides 32");
  nlohmann::json wide = Llama31_8B();
  wide["num_attention_heads"] = 48;
  wide["hidden_size"] = 6144;
  auto tp12 = PlanConfig(wide, 12, 1, 16 * kGiB, 4096);
  ASSERT_TRUE(tp12.ok()) << tp12.status().ToString();
  EXPECT_EQ(tp12->ErrorLines(),
            "\n  error [tp-kv-heads] --tensor-parallel-size 12 and the 8 KV heads of layer "
            "'model.layers.0.self_attn' ('config.json') do not divide one into the other, so the "
            "engine can neither split nor replicate them; choose a tensor-parallel size that "
            "divides 8 or is a multiple of it");
  auto tp4 = PlanConfig(wide, 4, 1, 16 * kGiB, 4096);
  ASSERT_TRUE(tp4.ok()) << tp4.status().ToString();
  EXPECT_TRUE(tp4->accepted()) << tp4->ErrorLines();
}

// A Llama config without num_key_value_heads is multi-head: 32 KV heads of 128.
// The engine's backends at 28be48fa9: TRITON_ATTN returns no LSE, so DCP is refused on it (the
// engine asserts it once the weights are loaded); no backend supports PCP, with or without DCP.
TEST(DenseModels, ContextParallelBackendSupport) {
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 16;
  c.parallel.decode_context_parallel_size = 2;
  c.cache.attention_backend = "TRITON_ATTN";
  c.kv_cache_memory_bytes = 16 * kGiB;
  Result<Plan> plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [dcp-backend-lse] target layer 'model.layers.0.self_attn' (and 31 other "
            "layers) is DCP-sharded but backend TRITON_ATTN does not return the softmax LSE "
            "needed to combine shards; choose another backend with --attention-backend or set "
            "--decode-context-parallel-size 1");
  c.cache.attention_backend.clear();  // FLASH_ATTN returns it
  plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");

  c.parallel = ParallelConfig{.tensor_parallel_size = 2, .prefill_context_parallel_size = 2};
  plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [backend-pcp] target layer 'model.layers.0.self_attn' (and 31 other "
            "layers) runs on backend FLASH_ATTN, which does not support prefill context "
            "parallelism; set --prefill-context-parallel-size 1");

  // FLASHINFER_MLA's cache block: 16 is not one of its kernel blocks [32, 64], so the smallest.
  LaunchConfig kimi;
  kimi.model = "kimi-k2.6";
  kimi.cache.attention_backend = "FLASHINFER_MLA";
  plan = PlanLaunch(kimi);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].spec.block_size, 32);
}

TEST(DenseModels, LlamaWithoutKvHeadsIsMultiHead) {
  nlohmann::json config = Llama31_8B();
  config.erase("num_key_value_heads");
  auto plan = PlanConfig(config, 1, 1, 16 * kGiB, 4096);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 32 * 128 * 2);
  // A Mistral config names them: Transformers' default (8) is not read into a plan.
  config["architectures"] = {"MistralForCausalLM"};
  EXPECT_EQ(ConfigError(config),
            "config.json 'config.json': field 'num_key_value_heads' is missing");
}

// Qwen2 takes its head size from hidden_size / num_attention_heads even when head_dim is
// given; Qwen3 reads head_dim. Under DCP the GQA rules apply: TP16 over 8 KV heads allows
// DCP 2 (TP / KV heads), and the pool holds twice the tokens.
TEST(DenseModels, QwenHeadSizesAndDcp) {
  nlohmann::json qwen2 = Qwen25_7B();
  qwen2["head_dim"] = 256;
  auto plan = PlanConfig(qwen2, 4, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 1 * 128 * 2);
  EXPECT_EQ(plan->pool.num_blocks, 74898);  // 16 GiB / (28 x 8,192 B)
  EXPECT_EQ(plan->capacity.max_tokens, 1'198'368);

  nlohmann::json qwen3 = nlohmann::json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
    "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "max_position_embeddings": 40960, "sliding_window": null,
    "use_sliding_window": false, "max_window_layers": 36, "torch_dtype": "bfloat16"})");
  plan = PlanConfig(qwen3, 16, 2, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.dcp_size(), 2);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 1 * 128 * 2);
  EXPECT_EQ(plan->pool.num_blocks, 58254);  // 16 GiB / (36 x 8,192 B)
  EXPECT_EQ(plan->capacity.max_tokens, 58254 * 16 * 2);
  plan = PlanConfig(qwen3, 16, 4, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_FALSE(plan->accepted());
  EXPECT_EQ(plan->diagnostics[0].code, "gqa-dcp-size");
  // Fields a Qwen3 config omits take Qwen3Config's defaults: 32 KV heads of 128, 32,768 positions.
  for (const char* key : {"num_key_value_heads", "head_dim", "max_position_embeddings"}) {
    qwen3.erase(key);
  }
  plan = PlanConfig(qwen3, 16, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 2);  // 32 over TP16
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);
}

// Windows: a Mistral window with no layer_types covers every layer; mixed layer_types give
// per-layer windows (two groups); a Qwen config windows only with use_sliding_window.
TEST(DenseModels, SlidingWindows) {
  nlohmann::json mistral = nlohmann::json::parse(R"({
    "architectures": ["MistralForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 32768,
    "sliding_window": 4096, "torch_dtype": "bfloat16"})");
  auto plan = PlanConfig(mistral, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 4096);
  mistral["sliding_window"] = 0;  // 0 turns the window off, as null does
  plan = PlanConfig(mistral, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  mistral["sliding_window"] = nullptr;
  plan = PlanConfig(mistral, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  // Absent, it is MistralConfig's default, 4,096.
  mistral.erase("sliding_window");
  plan = PlanConfig(mistral, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 4096);

  nlohmann::json llama = Llama31_8B();
  llama["num_hidden_layers"] = 4;
  llama["sliding_window"] = 1024;
  llama["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention",
                          "full_attention"};
  plan = PlanConfig(llama, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].layers,
            (std::vector<std::string>{"model.layers.0.self_attn", "model.layers.2.self_attn"}));
  EXPECT_EQ(plan->groups[1].geometry.kind(), CacheKind::kFullAttention);

  nlohmann::json qwen = Qwen25_7B();
  qwen["use_sliding_window"] = true;
  EXPECT_EQ(ConfigError(qwen),
            "config.json 'config.json': field 'use_sliding_window' is true: which layers a Qwen "
            "model windows depends on max_window_layers and the Transformers version, and the "
            "engine refuses a window on only some layers; kvtopo does not plan it (set it to "
            "false to plan full attention)");
  // Mixtral's layers read no layer_types, and mixed ones keep the engine from setting the
  // cache-wide window: every layer is full attention.
  nlohmann::json mixtral = llama;
  mixtral["architectures"] = {"MixtralForCausalLM"};
  plan = PlanConfig(mixtral, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "config-window-unused");
  EXPECT_EQ(plan->diagnostics[0].message,
            "config.json 'config.json' gives layer_types that mix sliding and full layers, which "
            "the engine's Mixtral layers do not read; with mixed layer types the engine sets no "
            "cache-wide window, so every layer attends over the whole request");
  // layer_types all full with a window: the engine's cache-wide window reaches every layer.
  nlohmann::json one_kind = llama;
  one_kind["layer_types"] = std::vector<std::string>(4, "full_attention");
  plan = PlanConfig(one_kind, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 1024);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "config-window-every-layer");
  llama["layer_types"][3] = "chunked_attention";
  EXPECT_EQ(ConfigError(llama),
            "config.json 'config.json': field 'layer_types' entry 3 is 'chunked_attention'; "
            "accepted: sliding_attention, full_attention");
}

TEST(DenseModels, MalformedHeadsAreNamed) {
  nlohmann::json config = Llama31_8B();
  config["num_key_value_heads"] = 5;
  EXPECT_EQ(ConfigError(config),
            "config.json 'config.json': field 'num_key_value_heads' is 5, which does not divide "
            "num_attention_heads 32");
  config = Llama31_8B();
  config["hidden_size"] = 4095;
  EXPECT_EQ(ConfigError(config),
            "config.json 'config.json': field 'hidden_size' is 4095, not a multiple of "
            "num_attention_heads 32, which the head size is taken from");
  config["head_dim"] = 128;  // an explicit head size needs no division
  EXPECT_EQ(ConfigError(config), "(accepted)");
}

// The default --max-model-len is the engine's derived length: max_position_embeddings times a
// RoPE scaling factor (yarn: of original_max_position_embeddings; llama3, su and longrope
// already counted), from rope_scaling or a per-layer-type rope_parameters.
TEST(DenseModels, RopeScalingSetsTheMaximumLength) {
  nlohmann::json qwen3 = nlohmann::json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 36,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "max_position_embeddings": 40960, "torch_dtype": "bfloat16",
    "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                     "original_max_position_embeddings": 32768}})");
  auto plan = PlanConfig(qwen3, 8, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 131072);
  // A longer --max-model-len is refused as the engine refuses it, unless
  // VLLM_ALLOW_LONG_MAX_MODEL_LEN makes it a warning.
  plan = PlanConfig(qwen3, 8, 1, 64 * kGiB, 200000);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [max-model-len-exceeds-model] --max-model-len 200000 exceeds the model's "
            "maximum length 131072 (original_max_position_embeddings 32768 x yarn factor 4) in "
            "'config.json': the engine refuses it; lower --max-model-len, or set "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 for a model known to extrapolate");
  LaunchConfig allow;
  allow.parallel.tensor_parallel_size = 8;
  allow.kv_cache_memory_bytes = 64 * kGiB;
  allow.cache.max_model_len = 200000;
  allow.allow_long_max_model_len = true;
  plan = PlanWith(qwen3, allow);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].severity, Severity::kWarning);
  EXPECT_EQ(plan->diagnostics[0].message,
            "--max-model-len 200000 exceeds the model's maximum length 131072 "
            "(original_max_position_embeddings 32768 x yarn factor 4) in 'config.json'; "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN lets the engine serve it: lower --max-model-len "
            "unless the model is known to extrapolate (with RoPE, positions past the derived "
            "length give NaN)");

  // The length fields of other model families bound it too, the smallest first; a
  // model_max_length (Command R: 131072 beside max_position_embeddings 8192) replaces them.
  nlohmann::json fields = Llama31_8B();
  fields["seq_length"] = 32768;
  plan = PlanConfig(fields, 8, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  fields["model_max_length"] = 262144;
  plan = PlanConfig(fields, 8, 1, 16 * kGiB, 200000);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 200000);
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  fields["model_max_length"] = 1e30;  // a "very large integer" bounds nothing
  plan = PlanConfig(fields, 8, 1, 16 * kGiB, 200000);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  fields["seq_length"] = "32k";
  EXPECT_EQ(ConfigError(fields),
            "config.json 'config.json': field 'seq_length' must be an integer, got \"32k\"");

  nlohmann::json nested = qwen3;
  nested.erase("rope_scaling");
  nested["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 2}}}};
  plan = PlanConfig(nested, 8, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 81920);

  nlohmann::json llama = Llama31_8B();
  llama["rope_scaling"] = {
      {"rope_type", "llama3"}, {"factor", 8.0}, {"original_max_position_embeddings", 8192}};
  plan = PlanConfig(llama, 8, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 131072);

  qwen3["rope_scaling"]["factor"] = "4";
  EXPECT_EQ(ConfigError(qwen3),
            "config.json 'config.json': field 'rope_scaling.factor' must be a positive number of "
            "at most 2147483647, got \"4\"");
  qwen3["rope_scaling"]["factor"] = 1e9;
  EXPECT_EQ(ConfigError(qwen3),
            "config.json 'config.json': field 'rope_scaling.factor' scales "
            "original_max_position_embeddings 32768 to 32768000000000, outside [1, 2147483647]");
}

// google/gemma-3-27b-it's config.json (the fields it states): the text model in text_config,
// which gives neither max_position_embeddings nor the layer pattern (their defaults: 131072 and
// one full layer in six), and a linear RoPE factor the engine does not apply to Gemma 3.
nlohmann::json Gemma3_27B() {
  return nlohmann::json::parse(R"({
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "mm_tokens_per_image": 256, "torch_dtype": "bfloat16",
    "text_config": {
      "head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
      "model_type": "gemma3_text", "num_attention_heads": 32, "num_hidden_layers": 62,
      "num_key_value_heads": 16, "query_pre_attn_scalar": 168,
      "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
    "vision_config": {"model_type": "siglip_vision_model", "num_hidden_layers": 27}})");
}

std::vector<std::string> Layers(std::initializer_list<int> ids) {
  std::vector<std::string> names;
  for (int i : ids) names.push_back("model.layers." + std::to_string(i) + ".self_attn");
  return names;
}

// 62 layers: full at 5, 11, ..., 59 (10), sliding elsewhere (52). The engine's grouping takes
// groups of the smallest type's count (10): one full group and cdiv(52, 10) = 6 sliding groups
// holding every 6th sliding layer (9, 9, 9, 9, 8, 8). A page at TP2 is 16 x 2 x 8 x 128 x 2 B =
// 64 KiB, a block 10 of them: 40 GiB is 65,536 blocks. A max-length request holds 8,192 full
// pages and 6 x 1,089 sliding ones (cdiv(1,023 + 2 x 8,192, 16) + 1), so 65,536 / 14,726 x
// 131,072 = 583,317 tokens.
TEST(DenseModels, Gemma3InterleavesSlidingAndFullLayers) {
  auto plan = PlanConfig(Gemma3_27B(), 2, 1, 40 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 131072);
  ASSERT_EQ(plan->groups.size(), 7u);
  for (size_t g = 0; g < 6; ++g) {
    EXPECT_EQ(plan->groups[g].geometry.kind(), CacheKind::kSlidingWindow);
    EXPECT_EQ(plan->groups[g].spec.sliding_window, 1024);
    EXPECT_EQ(plan->groups[g].layers.size(), g < 4 ? 9u : 8u);
  }
  EXPECT_EQ(plan->groups[0].layers, Layers({0, 7, 14, 21, 28, 36, 43, 50, 57}));
  EXPECT_EQ(plan->groups[6].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[6].layers, Layers({5, 11, 17, 23, 29, 35, 41, 47, 53, 59}));
  EXPECT_EQ(plan->groups[6].geometry.page_size_bytes(), 65536);
  EXPECT_EQ(plan->pool.num_blocks, 65536);
  EXPECT_EQ(plan->capacity.blocks_per_request, 14726);
  EXPECT_EQ(plan->capacity.max_tokens, 583'317);
  // Without num_key_value_heads, Gemma3TextConfig's 4: 2 a rank at TP2, a quarter of the page.
  nlohmann::json no_kv = Gemma3_27B();
  no_kv["text_config"].erase("num_key_value_heads");
  plan = PlanConfig(no_kv, 2, 1, 40 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[6].spec.num_kv_heads, 2);
  EXPECT_EQ(plan->groups[6].geometry.page_size_bytes(), 16384);

  // A config that lists layer_types is read as listed; sliding_window_pattern sets the default.
  nlohmann::json config = Gemma3_27B();
  config["text_config"]["num_hidden_layers"] = 8;
  config["text_config"]["sliding_window_pattern"] = 4;
  plan = PlanConfig(config, 2, 1, 40 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 4u);  // groups of 2: three sliding, one full
  EXPECT_EQ(plan->groups[3].layers, Layers({3, 7}));
  config["text_config"]["layer_types"] = {
      "full_attention", "sliding_attention", "sliding_attention", "sliding_attention",
      "full_attention", "sliding_attention", "sliding_attention", "sliding_attention"};
  plan = PlanConfig(config, 2, 1, 40 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 4u);  // the full layers come first now: so does their group
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers, Layers({0, 4}));

  // A null window (the config class keeps it) leaves every layer full: one group of 62 full
  // layers, 40 GiB / (62 x 64 KiB) = 10,570 blocks of 8,192 a request; the length is not capped.
  nlohmann::json no_window = Gemma3_27B();
  no_window["text_config"]["sliding_window"] = nullptr;
  plan = PlanConfig(no_window, 2, 1, 40 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.size(), 62u);
  EXPECT_EQ(plan->model.max_model_len, 131072);
  EXPECT_EQ(plan->pool.num_blocks, 10570);
  EXPECT_EQ(plan->capacity.blocks_per_request, 8192);

  // Layer types of one kind set the cache-wide window (is_interleaved is false), which a full
  // layer takes: every layer slides, in one group of 62 (40 GiB / (62 x 64 KiB) = 10,570 blocks,
  // cdiv(1,023 + 2 x 8,192, 16) + 1 = 1,089 a request), with a warning.
  nlohmann::json all_full = Gemma3_27B();
  all_full["text_config"]["layer_types"] = std::vector<std::string>(62, "full_attention");
  plan = PlanConfig(all_full, 2, 1, 40 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 1024);
  EXPECT_EQ(plan->groups[0].layers.size(), 62u);
  EXPECT_EQ(plan->pool.num_blocks, 10570);
  EXPECT_EQ(plan->capacity.blocks_per_request, 1089);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "config-window-every-layer");
  EXPECT_EQ(plan->diagnostics[0].message,
            "config.json 'config.json' has every layer of type full_attention (its layer_types, "
            "or the list its config class derives) and a sliding_window of 1024: with layer "
            "types of one kind the engine sets that window cache-wide, and every layer slides; "
            "set sliding_window to null for full layers");

  config["text_config"]["use_bidirectional_attention"] = true;
  EXPECT_EQ(ConfigError(config),
            "config.json 'config.json': field 'text_config.use_bidirectional_attention' is true: "
            "an embedding model's bidirectional attention keeps no KV cache across steps; "
            "kvtopo plans decoders");
}

// An Rnj-1 config with block-local layers (shaped: rnj-1's published dimensions, 32 layers of 8
// K/V heads of 128, 32,768 positions, with three chunked_attention layers in four and a window of
// 4,096; no public Rnj1ForCausalLM config states layer_types).
nlohmann::json Rnj1Chunked() {
  nlohmann::json c = nlohmann::json::parse(R"({
    "architectures": ["Rnj1ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "max_position_embeddings": 32768, "sliding_window": 4096,
    "hidden_activation": "gelu_pytorch_tanh", "torch_dtype": "bfloat16"})");
  for (int i = 0; i < 32; ++i) {
    c["layer_types"].push_back((i + 1) % 4 == 0 ? "full_attention" : "chunked_attention");
  }
  return c;
}

// Rnj-1: chunked_attention layers cache as sliding-window layers of the config's window, on
// TRITON_ATTN only; every other layer is full. At 20 GiB a page is 16 x 2 x 8 x 128 x 2 B = 64 KiB
// and the 24 chunked and 8 full layers make three sliding groups and one full group of 8: a block
// of 512 KiB, 40,960 blocks. A max-length request holds 2,048 full pages and 3 x 1,281 sliding ones
// (cdiv(4,095 + 2 x 8,192, 16) + 1): 5,891 blocks, 40,960 / 5,891 x 32,768 = 227,835 tokens.
TEST(DenseModels, Rnj1ChunkedLayersSlideOnTriton) {
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  auto plan = PlanWith(Rnj1Chunked(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [backend-required] 'config.json' (Rnj1ForCausalLM) has chunked_attention "
            "layers (block-local attention), and the engine builds them only on TRITON_ATTN: on "
            "FLASH_ATTN (the default backend) it fails an assertion while building the model; "
            "add --attention-backend TRITON_ATTN");
  c.cache.attention_backend = "FLASHINFER";
  plan = PlanWith(Rnj1Chunked(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [backend-required] 'config.json' (Rnj1ForCausalLM) has chunked_attention "
            "layers (block-local attention), and the engine builds them only on TRITON_ATTN: on "
            "FLASHINFER it fails an assertion while building the model; add --attention-backend "
            "TRITON_ATTN");

  c.cache.attention_backend = "TRITON_ATTN";
  plan = PlanWith(Rnj1Chunked(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  ASSERT_EQ(plan->groups.size(), 4u);
  for (size_t g = 0; g < 3; ++g) {
    EXPECT_EQ(plan->groups[g].geometry.kind(), CacheKind::kSlidingWindow);
    EXPECT_EQ(plan->groups[g].spec.sliding_window, 4096);
  }
  EXPECT_EQ(plan->groups[0].layers, Layers({0, 4, 8, 12, 16, 20, 24, 28}));
  EXPECT_EQ(plan->groups[3].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[3].layers, Layers({3, 7, 11, 15, 19, 23, 27, 31}));
  EXPECT_EQ(plan->groups[3].geometry.page_size_bytes(), 65536);
  EXPECT_EQ(plan->pool.num_blocks, 40960);
  EXPECT_EQ(plan->capacity.blocks_per_request, 5891);
  EXPECT_EQ(plan->capacity.max_tokens, 227'835);

  // sliding_attention is full attention in Rnj-1, and without layer_types every layer is full:
  // one group of 32 layers (2 MiB blocks, 10,240 of them, 2,048 a request), on any backend.
  c.cache.attention_backend.clear();
  nlohmann::json sliding = Rnj1Chunked();
  for (auto& t : sliding["layer_types"]) {
    if (t == "chunked_attention") t = "sliding_attention";
  }
  nlohmann::json untyped = Rnj1Chunked();
  untyped.erase("layer_types");
  for (const nlohmann::json& config : {sliding, untyped}) {
    plan = PlanWith(config, c);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
    ASSERT_EQ(plan->groups.size(), 1u);
    EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
    EXPECT_EQ(plan->groups[0].layers.size(), 32u);
    EXPECT_EQ(plan->pool.num_blocks, 10240);
    EXPECT_EQ(plan->capacity.blocks_per_request, 2048);
  }
}

// What Rnj-1's code and config class make of the rest: Gemma3TextConfig's defaults (26 layers of
// 4 K/V heads of 256, 131,072 positions, all full without layer_types), a null window (chunked
// layers attend fully, still on Triton only), and the configs its code refuses.
TEST(DenseModels, Rnj1ConfigRules) {
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  auto plan = PlanWith(nlohmann::json::parse(R"({"architectures": ["Rnj1ForCausalLM"]})"), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 131072);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 26u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 4 * 256 * 2);

  nlohmann::json config = Rnj1Chunked();
  config["sliding_window"] = nullptr;
  plan = PlanWith(config, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "backend-required");

  // Layer types of one kind: every layer takes the cache-wide window, the full ones included (a
  // warning says so), and so do the sliding layers Gemma3TextConfig derives for four layers.
  // One group: 20 GiB / (32 x 64 KiB) = 10,240 blocks, 1,281 a request.
  for (const char* kind : {"full_attention", "chunked_attention"}) {
    config = Rnj1Chunked();
    config["layer_types"] = std::vector<std::string>(32, kind);
    c.cache.attention_backend = "TRITON_ATTN";
    plan = PlanWith(config, c);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
    ASSERT_EQ(plan->groups.size(), 1u);
    EXPECT_EQ(plan->groups[0].spec.sliding_window, 4096) << kind;
    EXPECT_EQ(plan->groups[0].layers.size(), 32u);
    EXPECT_EQ(plan->pool.num_blocks, 10240);
    EXPECT_EQ(plan->capacity.blocks_per_request, 1281);
    EXPECT_EQ(plan->diagnostics.size(), kind == std::string("full_attention") ? 1u : 0u);
  }
  config = Rnj1Chunked();
  config.erase("layer_types");
  config["num_hidden_layers"] = 4;
  plan = PlanWith(config, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 4096);
  EXPECT_TRUE(plan->diagnostics.empty());

  config = Rnj1Chunked();
  config["sliding_window"] = 1;
  EXPECT_EQ(ConfigError(config),
            "config.json 'config.json': field 'sliding_window' is 1 with chunked_attention layers "
            "(layer 0): they split the window into two chunks, and the engine's Triton kernel "
            "asserts a chunk of at least one token");
  config = Rnj1Chunked();
  config["layer_types"][3] = "linear_attention";
  EXPECT_EQ(ConfigError(config),
            "config.json 'config.json': field 'layer_types' entry 3 is 'linear_attention'; "
            "accepted: chunked_attention, sliding_attention, full_attention");
  config = Rnj1Chunked();
  config["hidden_activation"] = "gelu";
  EXPECT_EQ(ConfigError(config),
            "config.json 'config.json': field 'hidden_activation' is 'gelu': the engine's Rnj-1 "
            "MLP is built only with gelu_pytorch_tanh and raises otherwise");
}

// An EAGLE head shaped as the Llama-3.1-8B ones: one Llama decoder layer of 8 K/V heads of 128.
nlohmann::json LlamaEagleHead(const std::string& architecture) {
  nlohmann::json head = nlohmann::json::parse(R"({
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 1,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "max_position_embeddings": 131072, "draft_vocab_size": 32000, "vocab_size": 128256, "torch_dtype": "bfloat16"})");
  head["architectures"] = {architecture};
  return head;
}

// Where the running test writes its draft head: a file of its own, as ctest runs tests side by
// side.
std::string HeadPath() {
  return (std::filesystem::temp_directory_path() /
          (std::string("kvtopo_head_") +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json"))
      .string();
}

// Plans `target` with `head` (written to HeadPath()) as the draft of `method`, 3 tokens, in
// 20 GiB (40 GiB at TP2 for Gemma 3).
Result<Plan> PlanWithHead(const nlohmann::json& target, const nlohmann::json& head,
                          const std::string& method, int64_t tp = 1) {
  const std::string path = HeadPath();
  std::ofstream(path) << head.dump();
  LaunchConfig c;
  c.parallel.tensor_parallel_size = tp;
  c.kv_cache_memory_bytes = 20 * kGiB * tp;
  c.speculative =
      ParseSpeculativeConfig(R"({"method": ")" + method +
                             R"(", "num_speculative_tokens": 3, "model": ")" + path + R"("})")
          .value();
  Result<Plan> plan = PlanWith(target, c);
  std::filesystem::remove(path);
  return plan;
}

// EAGLE drafts as the engine names and builds them (EAGLEConfig prefixes an eagle3 draft's
// architecture with Eagle3 unless it starts or ends with it; the registry maps the Llama-style
// names to Eagle3LlamaForCausalLM): a one-layer head beside Llama-3.1-8B caches as one more
// Llama layer in the target's group, 20 GiB / (33 x 64 KiB) = 9,929 blocks, 9,929 / 8,192 x
// 131,072 = 158,864 tokens.
// The engine's method detection for a draft model (SpeculativeConfig.__post_init__ at
// 28be48fa9): draft_model becomes eagle, eagle3 or dflash by the draft's name, else mtp when
// hf_config_override gives its config an MTP model type; kvtopo plans the MTP layers of the
// target's own checkpoint and refuses another's.
TEST(DenseModels, DraftModelMethodDetection) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "kvtopo_detect" / "EAGLE-LLaMA3.1-Instruct-8B";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "config.json").string();
  std::ofstream(path) << LlamaEagleHead("LlamaForCausalLM").dump();
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.speculative = ParseSpeculativeConfig(R"({"method": "draft_model", "num_speculative_tokens": 3,
                                             "model": ")" +
                                         path + R"("})")
                      .value();
  auto plan = PlanWith(Llama31_8B(), c);
  std::filesystem::remove_all(dir.parent_path());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.speculative_method, "eagle");
  EXPECT_EQ(plan->pool.num_blocks, 9929);  // the eagle head's plan (below)
  // The detection's info, the one diagnostic of its code.
  auto detected = [](const Plan& p) {
    std::string found;
    for (const Diagnostic& d : p.diagnostics) {
      if (d.code != "speculative-method-detected") continue;
      EXPECT_EQ(d.severity, Severity::kInfo);
      EXPECT_TRUE(found.empty()) << d.message;
      found = d.message;
    }
    return found;
  };
  EXPECT_EQ(detected(*plan),
            "the engine runs --speculative-config method 'draft_model' with draft '" + path +
                "' as method 'eagle': the draft's name contains 'eagle-' (SpeculativeConfig's "
                "method detection)");

  // A Medusa config runs as method medusa, which keeps no draft cache.
  const std::filesystem::path medusa =
      std::filesystem::temp_directory_path() / "kvtopo_detect" / "medusa-vicuna-7b";
  std::filesystem::create_directories(medusa);
  std::ofstream(medusa / "config.json")
      << R"({"architectures": ["MedusaModel"], "model_type": "medusa"})";
  c.speculative->model = medusa.string();
  plan = PlanWith(Llama31_8B(), c);
  std::filesystem::remove_all(medusa.parent_path());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.speculative_method, "medusa");
  for (const LayerSpec& l : plan->model.layers) EXPECT_EQ(l.role, Role::kTarget) << l.name;
  EXPECT_EQ(detected(*plan),
            "the engine runs --speculative-config method 'draft_model' with draft '" +
                medusa.string() +
                "' as method 'medusa': the draft's config has that model type "
                "(SpeculativeConfig's method detection)");

  // A model named like a module path that kvtopo cannot read is a proposer class, whatever the
  // method; an embedded profile's name with a dot stays that profile.
  c.speculative = ParseSpeculativeConfig(R"({"method": "eagle3", "num_speculative_tokens": 3,
                                             "model": "my_pkg.MyProposer"})")
                      .value();
  plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.speculative_method, "custom_class");
  for (const LayerSpec& l : plan->model.layers) EXPECT_EQ(l.role, Role::kTarget) << l.name;
  EXPECT_EQ(detected(*plan),
            "the engine runs --speculative-config method 'eagle3' with model 'my_pkg.MyProposer' "
            "as method 'custom_class': it takes a name with a dot and no slash for a proposer "
            "class's module path (SpeculativeConfig's method detection), and such a proposer "
            "keeps no draft KV cache");
  // An embedded launch: `model` at TP `tp` with speculative config `spec`.
  auto launch = [](const std::string& model, int64_t tp, const std::string& spec) {
    LaunchConfig l;
    l.model = model;
    l.parallel.tensor_parallel_size = tp;
    l.speculative = ParseSpeculativeConfig(spec).value();
    return PlanLaunch(l);
  };
  auto profile = launch("kimi-k2.6", 8, R"({"method": "eagle3", "num_speculative_tokens": 3,
                                            "model": "kimi-k2.6-eagle3-mla"})");
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  EXPECT_EQ(profile->model.speculative_method, "eagle3");
  EXPECT_EQ(profile->capacity.max_tokens, 481024);

  // Qwen3-Next's own checkpoint as a draft model runs as its MTP layers.
  const std::string qwen = "qwen3-next-80b";
  const std::string as_draft_model =
      R"({"method": "draft_model", "num_speculative_tokens": 3, "model": "qwen3-next-80b"})";
  auto mtp = launch(qwen, 4, R"({"method": "mtp", "num_speculative_tokens": 3})");
  auto as_draft = launch(qwen, 4, as_draft_model);
  ASSERT_TRUE(mtp.ok() && as_draft.ok());
  ASSERT_TRUE(as_draft->accepted()) << as_draft->ErrorLines();
  EXPECT_EQ(as_draft->model.speculative_method, "mtp");
  EXPECT_EQ(as_draft->capacity.max_tokens, 2545324);
  EXPECT_EQ(as_draft->capacity.max_tokens, mtp->capacity.max_tokens);
  const std::string why =
      "its config (model type qwen3_next) becomes model type qwen3_next_mtp under "
      "SpeculativeConfig's hf_config_override, one of the engine's MTP types, so "
      "SpeculativeConfig's method detection runs it as method 'mtp' over that checkpoint's MTP "
      "layers, not as a draft model";
  EXPECT_EQ(detected(*as_draft),
            "--speculative-config method 'draft_model': draft 'qwen3-next-80b': " + why +
                "; kvtopo plans the target's MTP layers");
  // Another checkpoint's MTP layers are not planned.
  auto other = launch("deepseek-v3.2", 8, as_draft_model);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kRejected);
  EXPECT_EQ(other.status().message(),
            "--speculative-config method 'draft_model': draft 'qwen3-next-80b': " + why +
                "; kvtopo plans MTP layers of the target's own checkpoint only, and this one is "
                "not 'deepseek-v3.2'");

  // Neither a method nor a count: the engine's draft model runs as MTP, whose detection
  // compares the unset count with 1 and raises; with a count it plans.
  auto uncounted = launch(qwen, 4, R"({"model": "qwen3-next-80b"})");
  EXPECT_EQ(uncounted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      uncounted.status().message(),
      kMtpCountUnset +
          "the one MTP module config.json "
          "'profiles/qwen3-next-80b.json' states (num_nextn_predict_layers) runs every step, so "
          "any count");
  auto counted = launch(qwen, 4, R"({"model": "qwen3-next-80b", "num_speculative_tokens": 1})");
  ASSERT_TRUE(counted.ok()) << counted.status().ToString();
  EXPECT_EQ(counted->model.speculative_method, "mtp");
  EXPECT_EQ(counted->model.num_speculative_tokens, 1);
  EXPECT_EQ(counted->capacity.max_tokens, 2564416);
  EXPECT_EQ(launch(qwen, 4, R"({"model": "gpt-oss-120b"})").status().message(),
            "--speculative-config: 'num_speculative_tokens' is not set: draft 'gpt-oss-120b' "
            "runs as method 'draft_model' and its config states no n_predict for the engine to "
            "take (the engine refuses the launch: 'A speculative model was provided, but "
            "num_speculative_tokens was not provided')");

  // Method mtp naming a checkpoint: the target's own plans, another's is refused.
  auto own = launch(qwen, 4,
                    R"({"method": "mtp", "num_speculative_tokens": 3, "model": "qwen3-next-80b"})");
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->capacity.max_tokens, 2545324);
  EXPECT_EQ(detected(*own), "");
  other = launch(qwen, 4,
                 R"({"method": "mtp", "num_speculative_tokens": 3, "model": "deepseek-v3.2"})");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kRejected);
  EXPECT_EQ(other.status().message(),
            "--speculative-config method 'mtp': draft 'deepseek-v3.2' is another checkpoint than "
            "the target 'qwen3-next-80b': the engine builds the MTP layers of the checkpoint the "
            "speculative config names, and kvtopo plans the target's own; drop 'model' to draft "
            "with the target's MTP layers");

  // The model types hf_config_override turns into MTP types.
  using internal::MtpTypeAfterOverride;
  auto type_of = [](const char* text) { return MtpTypeAfterOverride(nlohmann::json::parse(text)); };
  EXPECT_EQ(type_of(R"({"model_type": "deepseek_v32"})"), "deepseek_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "glm_moe_dsa"})"), "deepseek_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "glm4_moe", "architectures": ["Glm4MoeForCausalLM"]})"),
            "glm4_moe_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "qwen3_5_moe"})"), "qwen3_5_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "exaone4_5_text"})"), "exaone4_5_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "nemotron_h", "num_nextn_predict_layers": 1})"),
            "nemotron_h_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "nemotron_h", "num_nextn_predict_layers": 0})"), "");
  EXPECT_EQ(type_of(R"({"architectures": ["NemotronH_Super_Omni_Reasoning_V3"],
                        "text_config": {"model_type": "nemotron_h",
                                        "num_nextn_predict_layers": 1}})"),
            "nemotron_h_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "mimo", "architectures": ["MiMoForCausalLM"]})"), "mimo_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "ernie4_5_moe"})"), "ernie_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "exaone_moe"})"), "exaone_moe_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "intern_s2_preview"})"), "qwen3_5_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "gemma4_assistant"})"), "gemma4_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "deepseek_mtp"})"), "deepseek_mtp");
  EXPECT_EQ(type_of(R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"]})"), "");
  EXPECT_EQ(type_of(R"({"model_type": "qwen3"})"), "");
}

// Methods medusa and mlp_speculator go through the same detection: a config of the other type
// switches the method, an MTP type runs the checkpoint's MTP layers, and any other type makes
// the engine raise NotImplementedError.
TEST(DenseModels, MedusaAndMlpSpeculatorMethodsAreDetectedToo) {
  const auto dir = std::filesystem::temp_directory_path() / "kvtopo_detect_by_type";
  std::filesystem::create_directories(dir / "medusa");
  std::filesystem::create_directories(dir / "mlp");
  std::ofstream(dir / "medusa" / "config.json")
      << R"({"architectures": ["MedusaModel"], "model_type": "medusa"})";
  std::ofstream(dir / "mlp" / "config.json")
      << R"({"architectures": ["MLPSpeculatorPreTrainedModel"], "model_type": "mlp_speculator",
             "n_predict": 3})";
  const std::string llama_file = (dir / "llama.json").string();
  std::ofstream(llama_file) << Llama31_8B().dump();
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  const auto with = [&](const nlohmann::json& target, const std::string& method,
                        const std::string& model) {
    c.speculative =
        ParseSpeculativeConfig(
            nlohmann::json{{"method", method}, {"model", model}, {"num_speculative_tokens", 3}}
                .dump())
            .value();
    return PlanWith(target, c);
  };
  auto plan = with(Llama31_8B(), "medusa", (dir / "medusa").string());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.speculative_method, "medusa");
  EXPECT_EQ(DiagnosticMessage(*plan, "speculative-method-detected"), "");
  plan = with(Llama31_8B(), "medusa", (dir / "mlp").string());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.speculative_method, "mlp_speculator");
  EXPECT_EQ(DiagnosticMessage(*plan, "speculative-method-detected"),
            "the engine runs --speculative-config method 'medusa' with draft '" +
                (dir / "mlp").string() +
                "' as method 'mlp_speculator': the draft's config has that model type "
                "(SpeculativeConfig's method detection)");
  plan = with(Llama31_8B(), "mlp_speculator", llama_file);
  EXPECT_EQ(plan.status().code(), StatusCode::kRejected);
  EXPECT_EQ(plan.status().message(),
            "--speculative-config method 'mlp_speculator': draft '" + llama_file +
                "' has model type llama, which is neither mlp_speculator nor one the engine's "
                "SpeculativeConfig.hf_config_override turns into an MTP type, so its method "
                "detection raises NotImplementedError ('Unsupported speculative method: "
                "'mlp_speculator''); name a checkpoint of model type mlp_speculator, or drop "
                "'method' to run it as a draft model");
  // The target's own checkpoint, of an MTP type: its MTP layers run.
  const nlohmann::json glm = CorpusConfig("glm-4.7-flash");
  const std::string glm_file = (dir / "glm.json").string();
  std::ofstream(glm_file) << glm.dump();
  c.cache.max_model_len = 4096;
  plan = with(glm, "medusa", glm_file);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.speculative_method, "mtp");
  EXPECT_EQ(DiagnosticMessage(*plan, "speculative-method-detected"),
            "--speculative-config method 'medusa': draft '" + glm_file +
                "': its config (model type glm4_moe_lite) becomes model type glm4_moe_lite_mtp "
                "under SpeculativeConfig's hf_config_override, one of the engine's MTP types, so "
                "SpeculativeConfig's method detection runs it as method 'mtp' over that "
                "checkpoint's MTP layers, not as method 'medusa'; kvtopo plans the target's MTP "
                "layers");
}

// Method mtp without a model drafts with the target's checkpoint, whose name the engine's
// detection reads: a name with "eagle3" in it makes it an eagle3 draft of itself.
// The engine buckets layers by their KV-cache spec, which names no model: a draft layer whose
// cache is a target layer's joins that layer's bucket (_get_kv_cache_groups_uniform_page_size at
// 28be48fa9, whose own example is gpt-oss with an EAGLE layer, 12 windowed + 13 full, padded to
// two groups of 13). gpt-oss-120b's 18 windowed and 18 full layers with a one-layer EAGLE-3 head
// of its shape: 18 windowed + 19 full, under 1.5 x 18, so two groups, the windowed one padded to
// 19 pages; 20 GiB / (19 x 32 KiB) = 34,492 blocks, each request 8,192 + 1,033 of them.
TEST(DenseModels, DraftLayersJoinTheTargetsBuckets) {
  nlohmann::json head = LlamaEagleHead("LlamaForCausalLMEagle3");
  head["hidden_size"] = 2880;
  head["num_attention_heads"] = 64;
  head["head_dim"] = 64;
  head["vocab_size"] = 201088;
  Result<Plan> plan = PlanWithHead(CorpusConfig("gpt-oss-120b"), head, "eagle3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].layers.size(), 18u);
  EXPECT_EQ(plan->groups[1].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[1].layers.size(), 19u);
  EXPECT_EQ(plan->groups[1].layers.back(), "draft.model.layers.0.self_attn");
  EXPECT_EQ(plan->groups[1].role, Role::kTarget);  // the target's group, the draft's layer in it
  EXPECT_EQ(plan->pool.num_blocks, 34492);
  EXPECT_EQ(plan->capacity.max_tokens, 490074);

  // A draft attention backend of the same page shape: the engine's spec names no backend, so
  // the head still joins the full group, which runs two attention groups.
  const std::string path = HeadPath();
  std::ofstream(path) << head.dump();
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.speculative = ParseSpeculativeConfig(R"({"method": "eagle3", "num_speculative_tokens": 3,
                                             "draft_attention_backend": "TRITON_ATTN",
                                             "model": ")" +
                                         path + R"("})")
                      .value();
  plan = PlanWith(CorpusConfig("gpt-oss-120b"), c);
  std::filesystem::remove(path);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_EQ(plan->groups[1].backends, (std::vector<std::string>{"FLASH_ATTN", "TRITON_ATTN"}));
  EXPECT_EQ(plan->pool.num_blocks, 34492);
}

TEST(DenseModels, MtpOnATargetNamedLikeAnEagleHead) {
  const auto dir = std::filesystem::temp_directory_path() / "kvtopo_GLM-Flash-eagle3-merged";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << CorpusConfig("glm-4.7-flash").dump();
  LaunchConfig c;
  c.model = dir.string();
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 4096;
  c.speculative = SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 1};
  const auto specs = BuildModelCacheSpecs(c);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(specs.status().code(), StatusCode::kRejected);
  EXPECT_EQ(specs.status().message(),
            "--speculative-config method 'mtp': the target's name '" + dir.string() +
                "' contains 'eagle3', so the engine's method detection "
                "(SpeculativeConfig.__post_init__) runs method 'eagle3' with the target's "
                "checkpoint as its draft model instead of the target's MTP layers, which kvtopo "
                "does not plan; serve the checkpoint from a path or name without 'eagle3'");
}

TEST(DenseModels, EagleDraftsAsTheEngineNamesThem) {
  for (const char* arch :
       {"LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "LlamaForCausalLM"}) {
    auto plan = PlanWithHead(Llama31_8B(), LlamaEagleHead(arch), "eagle3");
    ASSERT_TRUE(plan.ok()) << arch << ": " << plan.status().ToString();
    ASSERT_TRUE(plan->accepted()) << arch << plan->ErrorLines();
    ASSERT_EQ(plan->groups.size(), 1u);
    EXPECT_EQ(plan->groups[0].layers.size(), 33u);
    EXPECT_EQ(plan->pool.num_blocks, 9929);
    EXPECT_EQ(plan->capacity.max_tokens, 158'864);
  }
  // A head is built only as a draft: planned as the model, it is refused.
  EXPECT_EQ(ConfigError(LlamaEagleHead("LlamaForCausalLMEagle3")),
            "'config.json' is a draft model; pass it as \"model\" in --speculative-config and "
            "name a target model instead");
  // EAGLE-1: EagleLlamaForCausalLM, and a Llama config it prefixes into that name.
  for (const char* arch : {"EagleLlamaForCausalLM", "LlamaForCausalLM"}) {
    auto plan = PlanWithHead(Llama31_8B(), LlamaEagleHead(arch), "eagle");
    ASSERT_TRUE(plan.ok()) << arch << ": " << plan.status().ToString();
    EXPECT_EQ(plan->pool.num_blocks, 9929) << arch;
  }
  // Its layers look a layer_types list up at their index after the target's 32 (llama_eagle.py
  // sets no target_layer_count): the engine asserts, even for full layers.
  nlohmann::json typed = LlamaEagleHead("EagleLlamaForCausalLM");
  typed["layer_types"] = {"full_attention"};
  auto typed_plan = PlanWithHead(Llama31_8B(), typed, "eagle");
  ASSERT_TRUE(typed_plan.ok()) << typed_plan.status().ToString();
  EXPECT_EQ(typed_plan->ErrorLines(),
            "\n  error [speculative-draft-layer-types] --speculative-config method 'eagle': "
            "draft '" +
                HeadPath() +
                "' (EagleLlamaForCausalLM) has layer_types; the engine names the draft's layers "
                "after the target's 32 and looks each up in layer_types by that index, asserting "
                "it is in range ('effective_layer_idx: 32 is out of bounds for layer_types'), so "
                "it stops as it builds the draft; a draft of this class runs only without "
                "layer_types");
  // EAGLE-3 heads count from their first layer (target_layer_count).
  typed["architectures"] = {"LlamaForCausalLMEagle3"};
  typed_plan = PlanWithHead(Llama31_8B(), typed, "eagle3");
  ASSERT_TRUE(typed_plan.ok()) << typed_plan.status().ToString();
  EXPECT_TRUE(typed_plan->accepted()) << typed_plan->ErrorLines();

  const std::string path = HeadPath();
  auto plan = PlanWithHead(Llama31_8B(), LlamaEagleHead("Qwen3ForCausalLM"), "eagle3");
  EXPECT_EQ(plan.status().message(),
            "--speculative-config method 'eagle3': the engine builds draft '" + path +
                "' as Eagle3Qwen3ForCausalLM (it prefixes the architecture with Eagle3), which "
                "the engine's model registry does not hold, so it refuses the launch; kvtopo "
                "plans the eagle3 drafts Eagle3DeepseekV2ForCausalLM, "
                "Eagle3DeepseekV3ForCausalLM, Eagle3LlamaForCausalLM, LlamaForCausalLMEagle3, "
                "Eagle3MiniMaxM2ForCausalLM, Eagle3Qwen2_5vlForCausalLM, Eagle3Qwen3vlForCausalLM");
  plan = PlanWithHead(Llama31_8B(), LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle");
  EXPECT_EQ(plan.status().message(),
            "--speculative-config method 'eagle': the engine builds draft '" + path +
                "' as EagleLlamaForCausalLMEagle3 (it prefixes the architecture with Eagle), "
                "which the engine's model registry does not hold, so it refuses the launch; "
                "kvtopo plans the eagle drafts EagleLlamaForCausalLM, EagleMistralForCausalLM, "
                "EagleMistralLarge3ForCausalLM");
  plan = PlanWithHead(Llama31_8B(), LlamaEagleHead("CohereForCausalLM"), "eagle");
  EXPECT_EQ(plan.status().message(),
            "--speculative-config method 'eagle': the engine builds draft '" + path +
                "' as EagleCohereForCausalLM (it prefixes the architecture with Eagle), which "
                "kvtopo does not plan; kvtopo plans the eagle drafts EagleLlamaForCausalLM, "
                "EagleMistralForCausalLM, EagleMistralLarge3ForCausalLM");
  // An Eagle3 class keeps its name under method eagle, but it is an EAGLE-3 head.
  plan = PlanWithHead(Llama31_8B(), LlamaEagleHead("Eagle3LlamaForCausalLM"), "eagle");
  EXPECT_EQ(plan.status().message(),
            "--speculative-config: draft '" + path +
                "' implements method 'eagle3', not 'eagle'; set \"method\": \"eagle3\" or "
                "choose another draft");
  // A speculators-format head (no model_type, a speculators_config) is its
  // transformer_layer_config with its algorithm's class, not renamed: eagle3 and peagle build
  // Eagle3LlamaForCausalLM, dflash DFlashDraftModel; each plans as the head above.
  nlohmann::json speculators = {
      {"architectures", {"Eagle3Speculator"}},
      {"speculators_model_type", "eagle3"},
      {"speculators_config",
       {{"proposal_methods", {{{"proposal_type", "greedy"}, {"speculative_tokens", 3}}}},
        {"verifier", {{"name_or_path", "meta-llama/Llama-3.1-8B-Instruct"}}}}},
      {"transformer_layer_config", LlamaEagleHead("LlamaForCausalLM")}};
  speculators["transformer_layer_config"].erase("architectures");
  // PEagle and DFlash name their parallel-drafting mask token.
  speculators["mask_token_id"] = 128002;
  for (const char* type : {"eagle3", "peagle", "dflash"}) {
    speculators["speculators_model_type"] = type;
    if (type == std::string("dflash")) speculators["aux_hidden_state_layer_ids"] = {1, 15, 29};
    plan = PlanWithHead(Llama31_8B(), speculators, type == std::string("dflash") ? type : "eagle3");
    ASSERT_TRUE(plan.ok()) << type << ": " << plan.status().ToString();
    ASSERT_TRUE(plan->accepted()) << type << plan->ErrorLines();
    EXPECT_EQ(plan->pool.num_blocks, 9929) << type;
  }
  speculators.erase("mask_token_id");
  for (auto [type, method, name] :
       {std::tuple{"dflash", "dflash", "DFlash"}, std::tuple{"peagle", "eagle3", "PEagle"}}) {
    speculators["speculators_model_type"] = type;
    plan = PlanWithHead(Llama31_8B(), speculators, method);
    EXPECT_EQ(plan.status().message(),
              "config.json '" + path +
                  "': field 'mask_token_id' is missing: the engine requires it of a "
                  "speculators " +
                  name + " draft");
  }
  speculators["speculators_model_type"] = "medusa";
  plan = PlanWithHead(Llama31_8B(), speculators, "eagle3");
  EXPECT_EQ(plan.status().message(),
            "config.json '" + path +
                "': field 'speculators_model_type' is 'medusa'; the engine reads speculators "
                "drafts of type eagle3, peagle, dflash");
  EXPECT_EQ(ConfigError(speculators),
            "config.json 'config.json' is a speculators-format draft (Eagle3Speculator): the "
            "engine serves it as the draft of the verifier its speculators_config names; plan "
            "that model with --speculative-config '{\"model\": \"config.json\"}' (and its "
            "method and token count)");

  // dflash prefixes DFlash: a Llama config is no DFlash draft.
  plan = PlanWithHead(Llama31_8B(), LlamaEagleHead("LlamaForCausalLM"), "dflash");
  EXPECT_EQ(plan.status().message(),
            "--speculative-config method 'dflash': the engine builds draft '" + path +
                "' as DFlashLlamaForCausalLM (it prefixes the architecture with DFlash), which "
                "the engine's model registry does not hold, so it refuses the launch; kvtopo "
                "plans the dflash drafts DFlashDraftModel");
}

// A draft's layers build their MLPs over the draft's own config (the EAGLE heads' LlamaMLP,
// DFlash's Qwen2MLP take silu only), and --model-impl does not reach the draft's model config.
TEST(DenseModels, DraftMlpsTakeSiluOnly) {
  const std::string path = HeadPath();
  const std::string error = "\n  error [mlp-activation] ";
  auto refused = [&](const std::string& built, const std::string& stated,
                     const std::string& printed) {
    return fmt::format(
        "--speculative-config draft '{}' ({}) states hidden_act {}, "
        "but the engine's {} builds an MLP for silu only in every layer: it raises as it builds "
        "the draft ('Unsupported activation: {}. Only silu is supported for now.'); choose a "
        "draft whose config states silu",
        path, built, stated, built, printed);
  };
  for (auto [arch, method, built] :
       {std::tuple{"LlamaForCausalLMEagle3", "eagle3", "LlamaForCausalLMEagle3"},
        std::tuple{"LlamaForCausalLM", "eagle3", "Eagle3LlamaForCausalLM"},
        std::tuple{"LlamaForCausalLM", "eagle", "EagleLlamaForCausalLM"}}) {
    nlohmann::json head = LlamaEagleHead(arch);
    head["hidden_act"] = "gelu";
    Result<Plan> plan = PlanWithHead(Llama31_8B(), head, method);
    ASSERT_TRUE(plan.ok()) << arch << ": " << plan.status().ToString();
    EXPECT_EQ(plan->ErrorLines(), error + refused(built, "\"gelu\"", "gelu")) << arch;
    head["hidden_act"] = "silu";
    plan = PlanWithHead(Llama31_8B(), head, method);
    ASSERT_TRUE(plan.ok()) << arch << ": " << plan.status().ToString();
    EXPECT_EQ(plan->ErrorLines(), "") << arch;
  }
  // --model-impl transformers builds the target with Transformers' classes, not the draft.
  nlohmann::json head = LlamaEagleHead("LlamaForCausalLMEagle3");
  head["hidden_act"] = nullptr;
  std::ofstream(path) << head.dump();
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.model_impl = "transformers";
  c.speculative = ParseSpeculativeConfig(R"({"method": "eagle3", "num_speculative_tokens": 3, )"
                                         R"("model": ")" +
                                         path + R"("})")
                      .value();
  Result<Plan> plan = PlanWith(Llama31_8B(), c);
  std::filesystem::remove(path);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "mlp-activation"),
            refused("LlamaForCausalLMEagle3", "null", "None"));
  // A speculators-format DFlash head builds DFlashDraftModel over its transformer_layer_config.
  nlohmann::json dflash = {
      {"architectures", {"DFlashSpeculator"}},
      {"speculators_model_type", "dflash"},
      {"mask_token_id", 128002},
      {"aux_hidden_state_layer_ids", {1, 15, 29}},
      {"speculators_config",
       {{"proposal_methods", {{{"proposal_type", "greedy"}, {"speculative_tokens", 3}}}},
        {"verifier", {{"name_or_path", "meta-llama/Llama-3.1-8B-Instruct"}}}}},
      {"transformer_layer_config", LlamaEagleHead("LlamaForCausalLM")}};
  dflash["transformer_layer_config"].erase("architectures");
  dflash["transformer_layer_config"]["hidden_act"] = "relu";
  plan = PlanWithHead(Llama31_8B(), dflash, "dflash");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), error + refused("DFlashDraftModel", "\"relu\"", "relu"));
}

// Methods that feed the draft the target's auxiliary hidden states (eagle3 unless the draft's
// eagle_config.use_aux_hidden_state is false, dflash, extract_hidden_states) need a target class
// with the engine's EAGLE-3 interface (SupportsEagle3); Gemma 3's has none, Llama's has it.
TEST(DenseModels, AuxHiddenStateDraftsNeedTheEagle3Interface) {
  const std::string refused =
      "\n  error [speculative-aux-hidden-states] --speculative-config method '{}' feeds the "
      "draft the target's auxiliary hidden states, and the engine's "
      "Gemma3ForConditionalGeneration class does not implement its EAGLE-3 interface: it raises "
      "'Model does not support EAGLE3 interface' after loading the weights; choose another "
      "method{}";
  auto plan = PlanWithHead(Gemma3_27B(), LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle3", 2);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            fmt::format(fmt::runtime(refused), "eagle3",
                        " or a draft whose eagle_config sets use_aux_hidden_state to false"));

  nlohmann::json no_aux = LlamaEagleHead("LlamaForCausalLMEagle3");
  no_aux["eagle_config"] = {{"use_aux_hidden_state", false}};
  plan = PlanWithHead(Gemma3_27B(), no_aux, "eagle3", 2);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  plan = PlanWithHead(Gemma3_27B(), LlamaEagleHead("EagleLlamaForCausalLM"), "eagle", 2);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  // Gemma2Model is the engine's Gemma2ForCausalLM, without the interface too.
  nlohmann::json gemma2 = CorpusConfig("gemma-2-9b");
  gemma2["architectures"] = {"Gemma2Model"};
  plan = PlanWithHead(gemma2, LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "speculative-aux-hidden-states"),
            "--speculative-config method 'eagle3' feeds the draft the target's auxiliary hidden "
            "states, and the engine's Gemma2Model class does not implement its EAGLE-3 "
            "interface: it raises 'Model does not support EAGLE3 interface' after loading the "
            "weights; choose another method or a draft whose eagle_config sets "
            "use_aux_hidden_state to false");

  LaunchConfig c;
  c.parallel.tensor_parallel_size = 2;
  c.kv_cache_memory_bytes = 40 * kGiB;
  c.speculative = ParseSpeculativeConfig(R"({"method": "extract_hidden_states",
      "num_speculative_tokens": 1, "draft_model_config": {"hf_config":
      {"eagle_aux_hidden_state_layer_ids": [2, 31, 59]}}})")
                      .value();
  plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), fmt::format(fmt::runtime(refused), "extract_hidden_states", ""));

  // Classes with the interface that still give no states: Exaone 4.5's language model is not an
  // EagleModelMixin, MiMo's forward never collects them; Pixtral hands the layers to the
  // language model its text config names, which must have the interface itself.
  const nlohmann::json exaone45 = nlohmann::json::parse(R"({
    "architectures": ["Exaone4_5_ForConditionalGeneration"], "model_type": "exaone4_5",
    "torch_dtype": "bfloat16", "text_config": {"model_type": "exaone4", "hidden_size": 4096,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
      "head_dim": 128, "max_position_embeddings": 131072, "sliding_window": null}})");
  plan = PlanWithHead(exaone45, LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [speculative-aux-hidden-states] --speculative-config method 'eagle3' feeds "
            "the draft the target's auxiliary hidden states, and the engine's "
            "Exaone4_5_ForConditionalGeneration builds its language model as Exaone4ForCausalLM, "
            "whose Exaone4Model does not inherit EagleModelMixin: setting the auxiliary layers "
            "asserts 'Model instance must inherit from EagleModelMixin to set auxiliary layers' "
            "after loading the weights; choose another method or a draft whose eagle_config "
            "sets use_aux_hidden_state to false");
  const nlohmann::json mimo = nlohmann::json::parse(R"({
    "architectures": ["MiMoForCausalLM"], "model_type": "mimo", "torch_dtype": "bfloat16",
    "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32,
    "num_key_value_heads": 8, "max_position_embeddings": 32768})");
  plan = PlanWithHead(mimo, LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->ErrorLines().find(
                "and the engine's MiMoForCausalLM runs MiMoModel, whose forward replaces "
                "Qwen2Model's and never collects them: the model runner gets no auxiliary states "
                "from its first forward, after loading the weights"),
            std::string::npos)
      << plan->ErrorLines();
  nlohmann::json pixtral = nlohmann::json::parse(R"({
    "architectures": ["PixtralForConditionalGeneration"], "model_type": "pixtral",
    "torch_dtype": "bfloat16", "vision_config": {"model_type": "pixtral"},
    "text_config": {"architectures": ["MistralForCausalLM"], "model_type": "mistral",
      "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 8, "max_position_embeddings": 32768, "sliding_window": null}})");
  plan = PlanWithHead(pixtral, LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  pixtral["text_config"]["architectures"] = {"MixtralForCausalLM"};
  pixtral["text_config"]["model_type"] = "mixtral";
  plan = PlanWithHead(pixtral, LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->ErrorLines().find(
                "and the engine's PixtralForConditionalGeneration hands the auxiliary layers to "
                "its language model MixtralForCausalLM, which does not implement the EAGLE-3 "
                "interface: it raises 'EAGLE-3 speculative decoding requires the language model "
                "to support EAGLE-3, but MixtralForCausalLM does not.' after loading the weights"),
            std::string::npos)
      << plan->ErrorLines();
  pixtral["text_config"] = mimo;
  plan = PlanWithHead(pixtral, LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->ErrorLines().find("and the engine's PixtralForConditionalGeneration hands the "
                                    "auxiliary layers to its language model, and the engine's "
                                    "MiMoForCausalLM runs MiMoModel"),
            std::string::npos)
      << plan->ErrorLines();

  // The table's ends and wrappers whose text model is another class's: the engine checks the
  // registry class itself. Architectures the fork's registry does not hold are not refused.
  for (const char* lacks : {"AXK1ForCausalLM", "InternVLChatModel", "UltravoxModel",
                            "Qwen3OmniMoeForConditionalGeneration", "Zamba2ForCausalLM"}) {
    EXPECT_TRUE(internal::LacksEagle3Interface(lacks)) << lacks;
  }
  for (const char* has :
       {"LlamaForCausalLM", "Qwen3_5ForConditionalGeneration", "KimiK25ForConditionalGeneration",
        "KimiK3ForConditionalGeneration", "Glm5NextForConditionalGeneration"}) {
    EXPECT_FALSE(internal::LacksEagle3Interface(has)) << has;
  }
}

// A draft's fc layer combines the target's auxiliary hidden states: three for an EAGLE-3 head,
// one per dflash_config.target_layer_ids entry for DFlash, each target_hidden_size (else
// hidden_size) wide. The target collects one state per distinct layer id in 0..num_hidden_layers.
TEST(DenseModels, DraftFcLayerTakesTheTargetsHiddenStates) {
  const std::string path = HeadPath();
  auto errors = [&](const nlohmann::json& head, const std::string& method = "eagle3") {
    auto plan = PlanWithHead(Llama31_8B(), head, method);
    return plan.ok() ? plan->ErrorLines() : "status: " + std::string(plan.status().message());
  };
  nlohmann::json head = LlamaEagleHead("LlamaForCausalLMEagle3");
  EXPECT_EQ(errors(head), "");
  // Trained on a target of hidden size 8192 (Llama-3.3-70B's), beside Llama-3.1-8B's 4096.
  head["target_hidden_size"] = 8192;
  EXPECT_EQ(errors(head),
            "\n  error [speculative-draft-hidden-size] --speculative-config: draft '" + path +
                "' combines 3 of the target's hidden states in its fc layer, each 8192 wide "
                "(target_hidden_size in '" +
                path +
                "'), and the LlamaForCausalLM target's are 4096 wide (hidden_size in "
                "'config.json'): they do not fit that layer; choose a draft trained for this "
                "target");
  head["target_hidden_size"] = 4096;
  head["hidden_size"] =
      2048;  // the head's own width does not matter when target_hidden_size is set
  EXPECT_EQ(errors(head), "");
  head.erase("target_hidden_size");
  EXPECT_NE(errors(head).find("each 2048 wide (hidden_size in '" + path + "')"), std::string::npos);
  head["hidden_size"] = 4096;
  head["target_hidden_size"] = nullptr;
  EXPECT_EQ(errors(head), "status: config.json '" + path +
                              "': field 'target_hidden_size' is null: the engine sizes the "
                              "draft's fc layer from it whenever the key is present; state the "
                              "target's hidden size or leave the key out");
  head.erase("target_hidden_size");

  // Layer ids: 0 (the embeddings) to 32 (the last layer's output), each collected once.
  const std::string ids_error =
      "\n  error [speculative-aux-layer-ids] --speculative-config: draft '" + path +
      "' names target layers {} (eagle_aux_hidden_state_layer_ids in '" + path +
      "') for the 3 hidden states its fc layer combines, and the LlamaForCausalLM target of 32 "
      "layers collects one state per distinct id from 0 (its embeddings) to 32 (its last "
      "layer's output), {} of them; name 3 distinct ids in that range";
  for (const auto& [ids, shown, count] :
       {std::tuple{nlohmann::json{2, 16, 40}, "[2, 16, 40]", "2"},
        std::tuple{nlohmann::json{2, 2, 29}, "[2, 2, 29]", "2"},
        std::tuple{nlohmann::json{-1, 16, 29}, "[-1, 16, 29]", "2"},
        std::tuple{nlohmann::json{2, 3, 4, 5}, "[2, 3, 4, 5]", "4"}}) {
    head["eagle_aux_hidden_state_layer_ids"] = ids;
    EXPECT_EQ(errors(head), fmt::format(fmt::runtime(ids_error), shown, count)) << shown;
  }
  // Ids 0 and 32 are collected by Llama (EagleModelMixin); of four ids one out of range, three
  // states fit.
  for (const nlohmann::json& ids :
       {nlohmann::json{2, 16, 32}, nlohmann::json{0, 16, 29}, nlohmann::json{2, 16, 29, 33}}) {
    head["eagle_aux_hidden_state_layer_ids"] = ids;
    EXPECT_EQ(errors(head), "") << ids.dump();
  }
  head["eagle_aux_hidden_state_layer_ids"] = "2,16,29";
  EXPECT_EQ(errors(head), "status: config.json '" + path +
                              "': field 'eagle_aux_hidden_state_layer_ids' must be a list of "
                              "integers, got \"2,16,29\"");
  // A head that takes no auxiliary states has no fc layer to fit.
  head["eagle_aux_hidden_state_layer_ids"] = {2, 16, 40};
  head["target_hidden_size"] = 8192;
  head["eagle_config"] = {{"use_aux_hidden_state", false}};
  EXPECT_EQ(errors(head), "");

  // DFlash: the fc takes one state per target_layer_ids entry, which the runner also collects
  // when eagle_aux_hidden_state_layer_ids is not set.
  nlohmann::json dflash = LlamaEagleHead("DFlashDraftModel");
  dflash["model_type"] = "qwen3";
  dflash["dflash_config"] = {{"mask_token_id", 128002}, {"target_layer_ids", {1, 8, 15, 22, 29}}};
  EXPECT_EQ(errors(dflash, "dflash"), "");
  dflash["eagle_aux_hidden_state_layer_ids"] = {1, 15, 29};
  EXPECT_NE(errors(dflash, "dflash")
                .find("names target layers [1, 15, 29] (eagle_aux_hidden_state_layer_ids in '" +
                      path + "') for the 5 hidden states its fc layer combines"),
            std::string::npos);
  dflash.erase("eagle_aux_hidden_state_layer_ids");
  dflash["dflash_config"]["target_layer_ids"] = {1, 8, 15, 22, 36};
  EXPECT_NE(errors(dflash, "dflash")
                .find("names target layers [1, 8, 15, 22, 36] (dflash_config.target_layer_ids "
                      "in '" +
                      path + "') for the 5 hidden states"),
            std::string::npos);
  dflash["dflash_config"]["target_layer_ids"] = nullptr;
  EXPECT_EQ(errors(dflash, "dflash"),
            "status: config.json '" + path +
                "': field 'dflash_config.target_layer_ids' is null: the engine counts the draft's "
                "fc inputs from it whenever the key is present; list the target layer ids or "
                "leave the key out");
  dflash["dflash_config"]["use_aux_hidden_state"] = false;
  EXPECT_EQ(errors(dflash, "dflash"), "");
  // Without ids the runner takes the target's defaults, 2, 16 and 29 of Llama-3.1-8B's 32
  // layers: three states, and the fc of a DFlash draft naming none takes one per draft layer.
  dflash["dflash_config"] = {{"mask_token_id", 128002}};
  EXPECT_EQ(errors(dflash, "dflash"),
            "\n  error [speculative-aux-layer-ids] --speculative-config: draft '" + path +
                "' names no target layers, so the engine takes the target's defaults [2, 16, 29] "
                "(2, num_hidden_layers / 2, num_hidden_layers - 3), for the 1 hidden state its "
                "fc layer combines, and the LlamaForCausalLM target of 32 layers collects one "
                "state per distinct id from 0 (its embeddings) to 32 (its last layer's output), "
                "3 of them; name 1 distinct id in that range");
  dflash["num_hidden_layers"] = 3;
  EXPECT_EQ(errors(dflash, "dflash"), "");

  // A speculators-format head carries target_hidden_size and its layer ids over.
  nlohmann::json speculators = {
      {"architectures", {"Eagle3Speculator"}},
      {"speculators_model_type", "eagle3"},
      {"speculators_config", {{"verifier", {{"name_or_path", "meta-llama/Llama-3.3-70B"}}}}},
      {"target_hidden_size", 8192},
      {"transformer_layer_config", LlamaEagleHead("LlamaForCausalLM")}};
  EXPECT_NE(errors(speculators).find("each 8192 wide (target_hidden_size in"), std::string::npos);
  speculators.erase("target_hidden_size");
  speculators["eagle_aux_hidden_state_layer_ids"] = {2, 40, 79};
  EXPECT_NE(errors(speculators).find("names target layers [2, 40, 79]"), std::string::npos);
  speculators["speculators_model_type"] = "dflash";
  speculators["mask_token_id"] = 128002;
  speculators["aux_hidden_state_layer_ids"] = {1, 15, 29, 40};
  EXPECT_NE(errors(speculators, "dflash").find("names target layers [1, 15, 29, 40]"),
            std::string::npos);

  // On a target of 6 layers the defaults repeat (2, 3, 3): two states for an EAGLE-3 head.
  nlohmann::json small = Llama31_8B();
  small["num_hidden_layers"] = 6;
  auto plan = PlanWithHead(small, LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->ErrorLines().find("takes the target's defaults [2, 3, 3] (2, num_hidden_layers "
                                    "/ 2, num_hidden_layers - 3), for the 3 hidden states its fc "
                                    "layer combines, and the LlamaForCausalLM target of 6 layers "
                                    "collects one state per distinct id from 0 (its embeddings) "
                                    "to 6 (its last layer's output), 2 of them"),
            std::string::npos)
      << plan->ErrorLines();
  small["num_hidden_layers"] = 7;
  plan = PlanWithHead(small, LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle3");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");

  // DeepSeek-V2's model (Kimi-K2.6's language model, 61 layers) collects each state before its
  // layer: ids 1 to 60, and id 0 fails on the null residual.
  const nlohmann::json kimi = internal::LoadModelConfig("kimi-k2.6").value().json;
  nlohmann::json kimi_head = internal::LoadModelConfig("kimi-k2.6-eagle3-mla").value().json;
  kimi_head.erase("kvtopo");
  auto kimi_errors = [&](const nlohmann::json& ids) {
    kimi_head["eagle_aux_hidden_state_layer_ids"] = ids;
    auto p = PlanWithHead(kimi, kimi_head, "eagle3", 8);
    return p.ok() ? p->ErrorLines() : "status: " + std::string(p.status().message());
  };
  EXPECT_EQ(kimi_errors({2, 30, 60}), "");
  EXPECT_EQ(kimi_errors({2, 30, 61}),
            "\n  error [speculative-aux-layer-ids] --speculative-config: draft '" + path +
                "' names target layers [2, 30, 61] (eagle_aux_hidden_state_layer_ids in '" + path +
                "') for the 3 hidden states its fc layer combines, and the "
                "KimiK25ForConditionalGeneration target of 61 layers collects one state per "
                "distinct id from 1 to 60 (the input of each layer but the first), 2 of them; "
                "name 3 distinct ids in that range");
  EXPECT_EQ(kimi_errors({0, 30, 60}),
            "\n  error [speculative-aux-layer-ids] --speculative-config: draft '" + path +
                "' names target layers [0, 30, 60] (eagle_aux_hidden_state_layer_ids in '" + path +
                "') for the 3 hidden states its fc layer combines, and the "
                "KimiK25ForConditionalGeneration target collects each state before the layer "
                "its id names, adding the residual, which is null before layer 0: its forward "
                "fails on id 0; name 3 distinct ids from 1 to 60");

  // A multimodal target's text model: Llama 4 Scout's hidden states are 5120 wide.
  const nlohmann::json scout = nlohmann::json::parse(R"({
    "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
    "torch_dtype": "bfloat16",
    "text_config": {"attention_chunk_size": 8192, "head_dim": 128, "hidden_size": 5120,
      "max_position_embeddings": 131072, "model_type": "llama4_text", "no_rope_layers": [],
      "num_attention_heads": 40, "num_hidden_layers": 48, "num_key_value_heads": 8}})");
  plan = PlanWithHead(scout, LlamaEagleHead("LlamaForCausalLMEagle3"), "eagle3", 8);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->ErrorLines().find("each 4096 wide (hidden_size in '" + path +
                                    "'), and the Llama4ForConditionalGeneration target's are "
                                    "5120 wide"),
            std::string::npos)
      << plan->ErrorLines();
}

// The engine's draft-model proposer refuses, as it starts, a draft whose vocab_size is not the
// target's and a target that takes multimodal inputs (unless --language-model-only turns them
// off).
TEST(DenseModels, DraftModelNeedsTheTargetsVocabularyAndTextInputs) {
  const std::string path = HeadPath();
  auto errors = [&](const nlohmann::json& target, const nlohmann::json& draft, int64_t tp,
                    bool language_model_only, std::vector<std::string> flags = {}) {
    std::ofstream(path) << draft.dump();
    LaunchConfig c;
    c.parallel.tensor_parallel_size = tp;
    c.kv_cache_memory_bytes = 80 * kGiB;
    c.language_model_only = language_model_only;
    c.not_planned_flags = std::move(flags);
    c.speculative = ParseSpeculativeConfig(R"({"method": "draft_model", "num_speculative_tokens": 3,
                                              "model": ")" +
                                           path + R"("})")
                        .value();
    auto plan = PlanWith(target, c);
    std::filesystem::remove(path);
    return plan.ok() ? plan->ErrorLines() : "status: " + std::string(plan.status().message());
  };
  nlohmann::json llama = Llama31_8B();
  llama["vocab_size"] = 128256;
  nlohmann::json small = llama;  // Llama-3.2-1B's shape
  small["hidden_size"] = 2048;
  small["num_hidden_layers"] = 16;
  EXPECT_EQ(errors(llama, small, 1, false), "");
  small["vocab_size"] = 32000;
  EXPECT_EQ(errors(llama, small, 1, false),
            "\n  error [speculative-draft-vocab] --speculative-config method 'draft_model': "
            "draft '" +
                path + "' has vocab_size 32000 ('" + path +
                "') and the LlamaForCausalLM target 128256 ('config.json'): the engine refuses "
                "it ('Target and draft model should have the same vocabulary size') as it "
                "starts; choose a draft that shares the target's tokenizer");
  small.erase("vocab_size");  // not stated: not checked
  EXPECT_EQ(errors(llama, small, 1, false), "");

  // Gemma 3 takes images: refused unless --language-model-only; with --limit-mm-per-prompt the
  // modalities decide, not checked.
  const std::string multimodal =
      "\n  error [speculative-multimodal-target] --speculative-config method 'draft_model' "
      "beside the multimodal Gemma3ForConditionalGeneration target: the engine's proposer "
      "raises 'Speculative Decoding with draft models or parallel drafting does not support "
      "multimodal models yet' as it starts; pass --language-model-only to serve the text model "
      "alone, or choose another method";
  EXPECT_EQ(errors(Gemma3_27B(), Gemma3_27B(), 2, false), multimodal);
  EXPECT_EQ(errors(Gemma3_27B(), Gemma3_27B(), 2, true), "");
  EXPECT_EQ(errors(Gemma3_27B(), Gemma3_27B(), 2, false, {"--limit-mm-per-prompt"}), "");
}

// The engine's SpecDecodeBaseProposer (llm_base_proposer.py at 28be48fa9): a proposer that adds
// input slots (a draft model; EAGLE or MTP drafting in parallel; DFlash, always in parallel)
// refuses disable_padded_drafter_batch, a multimodal target (DFlash's takes one) and a draft
// using M-RoPE; parallel drafting needs the draft's mask token; and the scheduler's budget is
// max_num_batched_tokens less the slots for max_num_seqs requests
// (VllmConfig._set_max_num_scheduled_tokens), refused at 0, a warning below 8,192.
TEST(DenseModels, ProposersThatAddInputSlots) {
  const std::string path = HeadPath();
  auto plan = [&](const nlohmann::json& target, const nlohmann::json& draft,
                  const std::string& extra, LaunchConfig c = {}) {
    std::ofstream(path) << draft.dump();
    if (c.parallel.tensor_parallel_size == 1) c.kv_cache_memory_bytes = 20 * kGiB;
    c.speculative = ParseSpeculativeConfig(R"({"num_speculative_tokens": 3, "model": ")" + path +
                                           R"(", )" + extra + "}")
                        .value();
    auto p = PlanWith(target, c);
    std::filesystem::remove(path);
    return p;
  };
  auto errors = [&](const nlohmann::json& target, const nlohmann::json& draft,
                    const std::string& extra, LaunchConfig c = {}) {
    auto p = plan(target, draft, extra, c);
    return p.ok() ? p->ErrorLines() : "status: " + std::string(p.status().message());
  };
  const nlohmann::json llama = Llama31_8B();
  nlohmann::json head = LlamaEagleHead("LlamaForCausalLMEagle3");
  // EAGLE-3 feeds the target's hidden states: no slot without parallel drafting, so
  // disable_padded_drafter_batch is taken (and async scheduling goes off by default).
  EXPECT_EQ(errors(llama, head, R"("method": "eagle3", "disable_padded_drafter_batch": true)"), "");
  const std::string eagle_parallel =
      "--speculative-config method 'eagle3' with 'parallel_drafting'";
  EXPECT_EQ(errors(llama, head, R"("method": "eagle3", "parallel_drafting": true)"),
            "\n  error [speculative-parallel-drafting-token] " + eagle_parallel + ": draft '" +
                path + "' ('" + path +
                "') states none of pard_token, ptd_token_id and dflash_config.mask_token_id, "
                "and the engine raises 'For parallel drafting, the draft model config must have "
                "`pard_token`, `ptd_token_id`, or `dflash_config.mask_token_id` specified' as "
                "it starts; choose a draft trained for parallel drafting or drop "
                "'parallel_drafting'");
  head["pard_token"] = 128002;
  EXPECT_EQ(errors(llama, head, R"("method": "eagle3", "parallel_drafting": true)"), "");
  EXPECT_EQ(errors(llama, head,
                   R"("method": "eagle3", "parallel_drafting": true,
                      "disable_padded_drafter_batch": true)"),
            "\n  error [speculative-padded-drafter-batch] " + eagle_parallel +
                ": 'disable_padded_drafter_batch' is true, and the engine's proposer raises "
                "'Speculative Decoding with draft models or parallel drafting only supports "
                "padded drafter batch' as it starts; drop 'disable_padded_drafter_batch'");
  head.erase("pard_token");
  head["ptd_token_id"] = 128002;
  EXPECT_EQ(errors(llama, head, R"("method": "eagle3", "parallel_drafting": true)"), "");

  // A draft whose rope parameters hold mrope_section (as rope_scaling, which the engine renames
  // rope_parameters, or in its text_config).
  nlohmann::json mrope_draft = llama;
  mrope_draft["num_hidden_layers"] = 2;
  mrope_draft["rope_scaling"] = {{"rope_type", "default"}, {"mrope_section", {16, 24, 24}}};
  const std::string mrope =
      "\n  error [speculative-draft-mrope] --speculative-config method 'draft_model': draft '" +
      path + "' ('" + path +
      "') uses M-RoPE (its rope parameters hold mrope_section): the engine's proposer raises "
      "'Speculative Decoding with draft models or parallel drafting does not support M-RoPE "
      "yet' as it starts; choose a draft with 1-D RoPE";
  EXPECT_EQ(errors(llama, mrope_draft, R"("method": "draft_model")"), mrope);
  mrope_draft.erase("rope_scaling");
  EXPECT_EQ(errors(llama, mrope_draft, R"("method": "draft_model")"), "");
  mrope_draft["rope_parameters"] = {{"rope_type", "default"}, {"mrope_section", {16, 24, 24}}};
  EXPECT_EQ(errors(llama, mrope_draft, R"("method": "draft_model")"), mrope);

  // Beside a multimodal target: EAGLE-3 alone is taken, with parallel drafting it is refused
  // unless --language-model-only (a head that reads no auxiliary hidden states, which Gemma 3's
  // class does not give).
  head = LlamaEagleHead("LlamaForCausalLMEagle3");
  head["hidden_size"] = 5376;
  head["pard_token"] = 262143;
  head["eagle_config"] = {{"use_aux_hidden_state", false}};
  LaunchConfig tp2;
  tp2.parallel.tensor_parallel_size = 2;
  tp2.kv_cache_memory_bytes = 40 * kGiB;
  EXPECT_EQ(errors(Gemma3_27B(), head, R"("method": "eagle3")", tp2), "");
  EXPECT_EQ(errors(Gemma3_27B(), head, R"("method": "eagle3", "parallel_drafting": true)", tp2),
            "\n  error [speculative-multimodal-target] " + eagle_parallel +
                " beside the multimodal Gemma3ForConditionalGeneration target: the engine's "
                "proposer raises 'Speculative Decoding with draft models or parallel drafting "
                "does not support multimodal models yet' as it starts; pass "
                "--language-model-only to serve the text model alone, or choose another method");
  tp2.language_model_only = true;
  EXPECT_EQ(errors(Gemma3_27B(), head, R"("method": "eagle3", "parallel_drafting": true)", tp2),
            "");

  // The scheduler's budget: a draft model sets one slot aside per request.
  nlohmann::json small = llama;
  small["num_hidden_layers"] = 2;
  LaunchConfig rows;
  rows.cache.max_num_seqs = 8192;
  rows.max_num_batched_tokens_given = true;
  EXPECT_EQ(errors(llama, small, R"("method": "draft_model")", rows),
            "\n  error [speculative-scheduled-tokens] --max-num-batched-tokens 8192 leaves the "
            "scheduler 0 tokens a step once it sets aside 1 drafting slot a request (the draft "
            "model's) x --max-num-seqs 8192: the engine refuses the launch "
            "(max_num_scheduled_tokens must be positive); raise --max-num-batched-tokens, or "
            "lower num_speculative_tokens or --max-num-seqs");
  auto p = plan(llama, small, R"("method": "draft_model", "parallel_drafting": true)");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->diagnostics.size(), 2u) << p->ErrorLines();
  EXPECT_EQ(p->diagnostics[1].code, "speculative-parallel-drafting-token");
  EXPECT_EQ(p->diagnostics[0].severity, Severity::kWarning);
  EXPECT_EQ(p->diagnostics[0].message,
            "the scheduler schedules at most 7424 tokens a step: --max-num-batched-tokens 8192 "
            "less 3 drafting slots a request (the draft model's one and a slot per draft token "
            "after the first under parallel drafting) x --max-num-seqs 256; the engine warns "
            "that this may lead to suboptimal performance");

  // DFlash always drafts in parallel: S - 1 slots set aside (8,192 - 6 x 256 = 6,656 tokens a
  // step), and disable_padded_drafter_batch refused.
  LaunchConfig glm;
  glm.model = "glm-5.3-flash";
  glm.parallel.tensor_parallel_size = 8;
  glm.speculative = ParseSpeculativeConfig(R"({"method":"dflash","num_speculative_tokens":7,)"
                                           R"("model":"glm-5.3-flash-dflash2",)"
                                           R"("disable_padded_drafter_batch":true})")
                        .value();
  p = PlanLaunch(glm);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->ErrorLines(),
            "\n  error [speculative-padded-drafter-batch] --speculative-config method 'dflash': "
            "'disable_padded_drafter_batch' is true, and the engine's proposer raises "
            "'Speculative Decoding with draft models or parallel drafting only supports padded "
            "drafter batch' as it starts; drop 'disable_padded_drafter_batch'");
  ASSERT_FALSE(p->diagnostics.empty());
  EXPECT_EQ(p->diagnostics[0].message.substr(0, 50),
            "the scheduler schedules at most 6656 tokens a step");
}

// extract_hidden_states keeps the named target layers' hidden states in one cache-only layer,
// cache_only_layers.{num_hidden_layers}: ids x hidden_size values a token in the model's dtype,
// in the target's one full-attention group (a block id spans every layer's page). Llama-3.1-8B
// with 3 ids in 20 GiB: 32 x 64 KiB + 16 x 3 x 4096 x 2 B = 2,490,368 B a block, 8,623 blocks,
// 137,968 tokens (163,840 without the method); under fp8 the states stay bf16: 32 x 32 KiB +
// 384 KiB = 1,441,792 B, 14,894 blocks; at TP 2 the states are not split: the same.
TEST(DenseModels, ExtractHiddenStatesJoinsTheTargetsGroup) {
  auto launch = [](const std::string& extra, const std::string& ids) {
    LaunchConfig c;
    c.kv_cache_memory_bytes = 20 * kGiB;
    c.speculative = ParseSpeculativeConfig(
                        R"({"method": "extract_hidden_states", "num_speculative_tokens": 1,)" +
                        extra + R"("draft_model_config": {"hf_config":)" +
                        R"({"eagle_aux_hidden_state_layer_ids": )" + ids + "}}}")
                        .value();
    return c;
  };
  LaunchConfig c = launch("", "[2, 16, 29]");
  auto plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  const PlannedGroup& g = plan->groups[0];
  EXPECT_TRUE(g.uniform_type);
  ASSERT_EQ(g.layers.size(), 33u);
  EXPECT_EQ(g.layers.back(), "cache_only_layers.32");
  EXPECT_EQ(g.layer_page_bytes.back(), 393216);
  EXPECT_EQ(g.layer_page_bytes.front(), 65536);
  EXPECT_EQ(plan->pool.bytes_per_block, 2490368);
  EXPECT_EQ(plan->pool.num_blocks, 8623);
  EXPECT_EQ(plan->capacity.max_tokens, 137968);
  EXPECT_EQ(plan->model.num_lookahead_tokens, 0);
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.bytes_per_block, 1441792);
  EXPECT_EQ(plan->pool.num_blocks, 14894);
  c.cache.kv_cache_dtype = KvCacheDtype::kAuto;
  c.parallel.tensor_parallel_size = 2;
  plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.bytes_per_block, 1441792);

  auto errors = [](const nlohmann::json& target, const LaunchConfig& c) {
    auto p = PlanWith(target, c);
    return p.ok() ? p->ErrorLines() : "status: " + std::string(p.status().message());
  };
  const std::string what =
      "\n  error [speculative-extract-hidden-states] --speculative-config method "
      "'extract_hidden_states'";
  const std::string none_named =
      what +
      " keeps the hidden states of the target layers its draft config names, and none are "
      "named: the engine raises 'eagle_aux_hidden_state_layer_ids must be set in the draft model "
      "config for extract_hidden_states method' as it starts; add \"draft_model_config\": "
      "{\"hf_config\": {\"eagle_aux_hidden_state_layer_ids\": [...]}}";
  EXPECT_EQ(errors(Llama31_8B(), launch("", "[]")), none_named);
  c = launch(R"("disable_padded_drafter_batch": true,)", "[2, 16, 29]");
  c.speculative->num_speculative_tokens = 2;
  c.cache.kv_cache_dtype = KvCacheDtype::kFloat32;
  c.kv_cache_memory_bytes = 80 * kGiB;
  EXPECT_EQ(errors(Llama31_8B(), c),
            what +
                " runs with num_speculative_tokens 1, got 2: the engine's proposer asserts it as "
                "it starts; set num_speculative_tokens to 1" +
                what +
                ": 'disable_padded_drafter_batch' is true, and the engine raises "
                "'disable_padded_drafter_batch is not supported with extract_hidden_states "
                "method' as it starts; drop it" +
                what +
                " with --kv-cache-dtype float32: its cache-only layer asserts a cache dtype of "
                "auto, bfloat16 or float16 as the model is built; choose one of them or a "
                "quantized dtype (fp8, nvfp4), which the layer replaces by auto"
                "\n  error [backend-kv-cache-dtype] target layer 'model.layers.0.self_attn' (and "
                "31 other layers) has cache dtype float32 but backend FLASH_ATTN takes only auto, "
                "float16, bfloat16 (fp8, fp8_e4m3 only as FlashAttention 3 on a Hopper GPU); "
                "choose another backend with --attention-backend or set --kv-cache-dtype");
  c = launch("", "[2, 16, 29]");
  c.parallel.tensor_parallel_size = 2;
  c.parallel.decode_context_parallel_size = 2;
  // (other DCP rules refuse this Llama layout too; the line is the method's own)
  EXPECT_NE(
      errors(Llama31_8B(), c)
          .find(what + " under --decode-context-parallel-size 2 / --prefill-context-parallel-size "
                       "1: its cache-only attention returns no softmax LSE, and the engine refuses "
                       "context parallelism for it as it starts ('... CacheOnlyAttentionImpl does "
                       "not'); plan it without DCP and PCP\n"),
      std::string::npos);
  // Ids the target's forward does not reach leave the layer short of states.
  EXPECT_EQ(errors(Llama31_8B(), launch("", "[2, 16, 40]")),
            "\n  error [speculative-aux-layer-ids] --speculative-config method "
            "'extract_hidden_states': draft_model_config.hf_config.eagle_aux_hidden_state_layer_"
            "ids names 3 target layers, and the LlamaForCausalLM target of 32 layers collects "
            "one state per distinct id from 0 to 32, 2 of them: they do not fill the cache-only "
            "layer's 3 states; name distinct ids in that range");
  // The engine's draft config is the target's with the speculative config's over it: ids the
  // target's config states (here through --hf-overrides) count when it names none.
  c = launch("", "[]");
  c.speculative->extract_layer_ids.reset();  // no draft_model_config
  c.hf_overrides = R"({"eagle_aux_hidden_state_layer_ids": [2, 16, 40]})";
  EXPECT_EQ(errors(Llama31_8B(), c),
            "\n  error [speculative-aux-layer-ids] --speculative-config method "
            "'extract_hidden_states': eagle_aux_hidden_state_layer_ids in 'config.json' names 3 "
            "target layers, and the LlamaForCausalLM target of 32 layers collects one state per "
            "distinct id from 0 to 32, 2 of them: they do not fill the cache-only layer's 3 "
            "states; name distinct ids in that range");
  c.hf_overrides = R"({"eagle_aux_hidden_state_layer_ids": [2, 16, 29]})";
  plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.num_blocks, 8623);
  // An empty list in the speculative config is the engine's, over the target's: none named.
  c = launch("", "[]");
  c.hf_overrides = R"({"eagle_aux_hidden_state_layer_ids": [2, 16, 29]})";
  EXPECT_EQ(errors(Llama31_8B(), c), none_named);
  c.speculative->extract_layer_ids.reset();
  c.hf_overrides = R"({"eagle_aux_hidden_state_layer_ids": "2, 16, 29"})";
  EXPECT_EQ(errors(Llama31_8B(), c),
            "status: config.json 'config.json': field 'eagle_aux_hidden_state_layer_ids' must be "
            "a list of integers, got \"2, 16, 29\"");

  // Beside sliding-window layers the layer gets a group of its own: not planned.
  c = launch("", "[2, 18, 33]");
  c.model = "gpt-oss-120b";
  auto gpt = PlanLaunch(c);
  ASSERT_TRUE(gpt.ok()) << gpt.status().ToString();
  EXPECT_EQ(gpt->ErrorLines(),
            "\n  error [speculative-method-not-modelled] --speculative-config method "
            "'extract_hidden_states': beside layer 'model.layers.0.self_attn' (sliding_window, "
            "block 16) the engine gives its cache-only layer a KV cache group of its own with a "
            "block of its own (max(page / bytes per token, 1) tokens, padded to the common "
            "page), which kvtopo does not plan; it plans the method beside targets whose layers "
            "are all full attention");
  // Without the hybrid manager every layer is cached as full attention and the layer joins
  // them: 36 x 32 KiB + 16 x 3 x 2880 x 2 B = 1,456,128 B a block, 14,747 blocks in 20 GiB.
  c.disable_hybrid_kv_cache_manager = true;
  gpt = PlanLaunch(c);
  ASSERT_TRUE(gpt.ok()) << gpt.status().ToString();
  ASSERT_TRUE(gpt->accepted()) << gpt->ErrorLines();
  ASSERT_EQ(gpt->groups.size(), 1u);
  EXPECT_EQ(gpt->groups[0].layers.size(), 37u);
  EXPECT_EQ(gpt->pool.bytes_per_block, 1456128);
  EXPECT_EQ(gpt->pool.num_blocks, 14747);
}

// The speculative config's max_model_len: at most the draft's derived length (unless
// VLLM_ALLOW_LONG_MAX_MODEL_LEN, a warning) and the target's --max-model-len.
TEST(DenseModels, SpeculativeMaxModelLen) {
  const std::string path = HeadPath();
  nlohmann::json head = LlamaEagleHead("LlamaForCausalLMEagle3");
  head["max_position_embeddings"] = 2048;
  auto plan = [&](int64_t draft_len, int64_t target_len, bool allow_long) {
    std::ofstream(path) << head.dump();
    LaunchConfig c;
    c.kv_cache_memory_bytes = 20 * kGiB;
    c.cache.max_model_len = target_len;
    c.allow_long_max_model_len = allow_long;
    c.speculative =
        ParseSpeculativeConfig(R"({"method": "eagle3", "num_speculative_tokens": 3,
                                              "max_model_len": )" +
                               std::to_string(draft_len) + R"(, "model": ")" + path + R"("})")
            .value();
    auto p = PlanWith(Llama31_8B(), c);
    std::filesystem::remove(path);
    return p;
  };
  auto errors = [&](int64_t draft_len, int64_t target_len, bool allow_long = false) {
    auto p = plan(draft_len, target_len, allow_long);
    return p.ok() ? p->ErrorLines() : "status: " + std::string(p.status().message());
  };
  EXPECT_EQ(errors(2048, 0), "");
  const std::string draft_error =
      "\n  error [speculative-max-model-len] --speculative-config 'max_model_len' 4096 exceeds "
      "the maximum length 2048 (max_position_embeddings 2048) of draft '" +
      path + "' ('" + path +
      "'): the engine refuses it as it builds the draft's config; lower it to at most 2048, or "
      "set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 for a draft known to extrapolate";
  EXPECT_EQ(errors(4096, 0), draft_error);
  EXPECT_EQ(errors(1024, 0), "");
  EXPECT_EQ(errors(2048, 1024),
            "\n  error [speculative-max-model-len] --speculative-config 'max_model_len' 2048 "
            "exceeds the target's --max-model-len 1024: the engine refuses it "
            "('speculative_max_model_len cannot be larger than target_max_model_len'); lower it "
            "to at most 1024");
  auto p = plan(4096, 0, true);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->ErrorLines(), "");
  ASSERT_EQ(p->diagnostics.size(), 1u);
  EXPECT_EQ(p->diagnostics[0].severity, Severity::kWarning);
  EXPECT_EQ(p->diagnostics[0].message,
            "--speculative-config 'max_model_len' 4096 exceeds the maximum length 2048 "
            "(max_position_embeddings 2048) of draft '" +
                path + "' ('" + path +
                "'); VLLM_ALLOW_LONG_MAX_MODEL_LEN lets the engine build the draft with it");
  EXPECT_EQ(ParseSpeculativeConfig(R"({"method":"eagle3","num_speculative_tokens":3,)"
                                   R"("max_model_len":0})")
                .status()
                .message(),
            "--speculative-config: 'max_model_len' must be an integer in [1, 2147483647] or "
            "null, got 0");
}

// --disable-sliding-window: every sliding layer attends over the whole request and the derived
// maximum length is capped at sliding_window before the RoPE factor. Gemma-3-27B (window 1,024,
// no factor for gemma3) serves 1,024 tokens from one group of 62 full layers: 40 GiB / (62 x
// 64 KiB) = 10,570 blocks. A linear factor 4 scales a Mistral window of 4,096 to 16,384; a yarn
// entry's original_max_position_embeddings replaces the capped base, so the cap has no effect.
TEST(DenseModels, DisableSlidingWindow) {
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 2;
  c.kv_cache_memory_bytes = 40 * kGiB;
  c.disable_sliding_window = true;
  auto plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 1024);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.size(), 62u);
  EXPECT_EQ(plan->pool.num_blocks, 10'570);
  EXPECT_EQ(plan->capacity.blocks_per_request, 64);
  EXPECT_EQ(plan->capacity.max_tokens, 169'120);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "sliding-window-disabled");
  EXPECT_EQ(plan->diagnostics[0].message,
            "--disable-sliding-window: 52 sliding-window layers attend over the whole request "
            "and are cached as full attention; the model's maximum length is capped at 1024 "
            "(sliding_window 1024; was 131072)");

  nlohmann::json mistral = nlohmann::json::parse(R"({
    "architectures": ["MistralForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 32768,
    "sliding_window": 4096, "rope_scaling": {"type": "linear", "factor": 4.0},
    "torch_dtype": "bfloat16"})");
  c.parallel.tensor_parallel_size = 1;
  c.kv_cache_memory_bytes = 16 * kGiB;
  plan = PlanWith(mistral, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 16384);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->diagnostics[0].message,
            "--disable-sliding-window: 32 sliding-window layers attend over the whole request "
            "and are cached as full attention; the model's maximum length is capped at 16384 "
            "(sliding_window 4096 x factor 4; was 131072)");
  mistral["rope_scaling"] = {
      {"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 8192}};
  plan = PlanWith(mistral, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  EXPECT_EQ(plan->diagnostics[0].message,
            "--disable-sliding-window: 32 sliding-window layers attend over the whole request "
            "and are cached as full attention");
  // A model without a window: nothing changes, nothing is said.
  c.kv_cache_memory_bytes = 32 * kGiB;
  plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 131072);
  EXPECT_TRUE(plan->diagnostics.empty());
}

// Without the hybrid KV cache manager the engine caches sliding layers as full attention (one
// group of Gemma-3-27B's 62 layers, 10,570 blocks, 8,192 pages per 131,072-token request) and
// refuses a model whose layers cannot share one type (Qwen3-Next's Gated DeltaNet state). The
// group's sliding and full layers then share FlashInfer's one window per group.
TEST(DenseModels, HybridKvCacheManagerOff) {
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 2;
  c.kv_cache_memory_bytes = 40 * kGiB;
  c.disable_hybrid_kv_cache_manager = true;
  auto plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 131072);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 62u);
  EXPECT_EQ(plan->pool.num_blocks, 10'570);
  EXPECT_EQ(plan->capacity.blocks_per_request, 8192);
  EXPECT_EQ(plan->capacity.max_tokens, 169'120);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "the hybrid KV cache manager is off by --disable-hybrid-kv-cache-manager, so the "
            "engine caches 52 sliding-window layers as full attention");
  // FlashInfer's metadata builder takes one window for the group's layers (off TRT-LLM).
  const nlohmann::json gemma2 = CorpusConfig("gemma-2-9b");
  c.cache.attention_backend = "FLASHINFER";
  plan = PlanWith(gemma2, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-one-window"),
            "the hybrid KV cache manager is off by --disable-hybrid-kv-cache-manager, so layer "
            "'model.layers.0.self_attn' (sliding window 4096) and layer "
            "'model.layers.1.self_attn' (full attention) share one KV cache group on backend "
            "FLASHINFER, whose metadata builder takes one window for a group's layers unless "
            "FlashInfer's TRT-LLM attention runs every prefill and decode (compute capability "
            "10 GPUs, DCP 1): elsewhere the engine raises ('Window left is not the same for all "
            "layers') at its first forward, once the weights are loaded; keep the hybrid KV "
            "cache manager on, add --disable-sliding-window, or choose another backend with "
            "--attention-backend");
  c.disable_hybrid_kv_cache_manager.reset();  // one window per group: nothing to say
  plan = PlanWith(gemma2, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-one-window"), "");
  c.disable_hybrid_kv_cache_manager = true;
  c.cache.attention_backend = "FLASH_ATTN";
  plan = PlanWith(gemma2, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-one-window"), "");
  c.cache.attention_backend.clear();

  LaunchConfig next;
  next.model = "qwen3-next-80b";
  next.parallel.tensor_parallel_size = 4;
  next.disable_hybrid_kv_cache_manager = true;
  auto specs = BuildModelCacheSpecs(next);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  plan = PlanLaunchSpecs(*specs, next);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [hybrid-manager-off] the hybrid KV cache manager is off by "
            "--disable-hybrid-kv-cache-manager, and without it the engine caches every layer as "
            "one type with one block size, but layer 'model.layers.0.linear_attn' is recurrent "
            "with block 262144 and layer 'model.layers.3.self_attn' is full_attention with block "
            "272: the engine refuses the launch (it fails to convert the KV cache specs to one "
            "unified type); drop --disable-hybrid-kv-cache-manager");

  // A KV connector whose class kvtopo cannot tell (an external module's) may turn the manager
  // off: a hybrid model's plan says that it assumes it on.
  c.disable_hybrid_kv_cache_manager.reset();
  c.kv_connector = "MyConnector";
  c.kv_connector_source = "--kv-transfer-config";
  plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "kv-connector-hybrid-manager");
  EXPECT_EQ(plan->groups.size(), 7u);
  plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->diagnostics.empty());
  c.disable_hybrid_kv_cache_manager = false;  // the user says the connector supports it
  plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->diagnostics.empty());
  EXPECT_EQ(plan->groups.size(), 7u);
}

// --max-model-len auto: Llama-3.1-8B at TP1 with 16 GiB holds 8,192 blocks of 32 x 64 KiB pages,
// and a 131,072-token request needs all 8,192: the engine's search compares it with the whole
// 16 GiB, the null block included, so it keeps the full length (and the request cannot finish,
// which the null-block warning says with the 131,056 tokens that can). Gemma-3-27B at TP2 with
// 40 GiB holds its full length.
TEST(DenseModels, MaxModelLenAuto) {
  LaunchConfig c;
  c.kv_cache_memory_bytes = 16 * kGiB;
  c.cache.max_model_len = kAutoMaxModelLen;
  auto plan = PlanWith(Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 131'072);
  EXPECT_EQ(plan->pool.num_blocks, 8192);
  EXPECT_EQ(plan->capacity.blocks_per_request, 8192);
  ASSERT_EQ(plan->diagnostics.size(), 2u);
  EXPECT_EQ(plan->diagnostics[0].code, "kv-cache-null-block");
  EXPECT_EQ(plan->diagnostics[0].message,
            "one request of --max-model-len 131072 needs 8192 blocks, and the pool holds 8191 "
            "besides its null block: the engine starts (its memory check counts the null block "
            "in), but a request that long runs out of blocks before its end; lower "
            "--max-model-len to 131056 or raise --kv-cache-memory");
  EXPECT_EQ(plan->diagnostics[1].code, "max-model-len-auto");
  EXPECT_EQ(plan->diagnostics[1].message,
            "--max-model-len auto: the model's full length 131072 fits the KV-cache memory");

  c.parallel.tensor_parallel_size = 2;
  c.kv_cache_memory_bytes = 40 * kGiB;
  plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 131072);
  EXPECT_EQ(plan->capacity.max_tokens, 583'317);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "--max-model-len auto: the model's full length 131072 fits the KV-cache memory");

  // A pool that holds not even one token stays refused.
  c.kv_cache_memory_bytes = 1 << 20;
  plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->accepted());
  EXPECT_EQ(plan->diagnostics.back().code, "kv-cache-memory");

  c.cache.max_model_len = -2;
  EXPECT_EQ(PlanWith(Gemma3_27B(), c).status().message(),
            "--max-model-len must be positive, or auto (-1), got -2");
}

// Tokens per step (vLLM's _set_default_max_num_seqs_and_batched_tokens_args): without chunked
// prefill a prompt is scheduled whole, so Gemma-3-27B at 32,768 tokens schedules 32,768 a step
// and each sliding layer keeps the whole request (2,049 pages, not the 1,089 of 1,023 + 2 x 8,192
// in-flight tokens): 40 GiB holds 149,733 tokens instead of 250,231. A given
// --max-num-batched-tokens below the length is then refused, as is one below --max-num-seqs.
TEST(DenseModels, TokensPerStep) {
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 2;
  c.kv_cache_memory_bytes = 40 * kGiB;
  c.cache.max_model_len = 32768;
  auto plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.max_pages_per_request(), 1089);
  EXPECT_EQ(plan->capacity.max_tokens, 250'231);

  c.enable_chunked_prefill = false;
  plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->cache.max_num_batched_tokens, 32768);
  EXPECT_EQ(plan->groups[0].geometry.max_pages_per_request(), 2049);
  EXPECT_EQ(plan->capacity.blocks_per_request, 6 * 2049 + 2048);
  EXPECT_EQ(plan->capacity.max_tokens, 149'733);

  c.max_num_batched_tokens_given = true;
  plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [max-num-batched-tokens] --max-num-batched-tokens 8192 is below "
            "--max-model-len 32768 with chunked prefill off: a prompt is scheduled whole, so the "
            "engine refuses it; raise --max-num-batched-tokens, lower --max-model-len or enable "
            "chunked prefill");

  c.enable_chunked_prefill = true;
  c.cache.max_num_seqs = 16384;
  plan = PlanWith(Gemma3_27B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [max-num-batched-tokens] --max-num-batched-tokens 8192 is below "
            "--max-num-seqs 16384: the engine refuses it; raise --max-num-batched-tokens or "
            "lower --max-num-seqs");
}

// Gemma 2 slides on even layers: 21 + 21 layers of 8 KV heads of 256, two groups of 21. The
// config says float32, which the engine runs (and an auto KV cache stores) as bfloat16: a page
// is 16 x 2 x 8 x 256 x 2 B = 128 KiB, 16 GiB is 6,241 blocks of 21 pages, and a request holds
// 512 full + 513 sliding pages. --dtype float32 doubles the page; --dtype float16 is refused for
// Gemma, as the engine refuses it.
TEST(DenseModels, Gemma2AndTheModelDtype) {
  const nlohmann::json gemma2 = nlohmann::json::parse(R"({
    "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "head_dim": 256,
    "hidden_size": 3584, "max_position_embeddings": 8192, "num_attention_heads": 16,
    "num_hidden_layers": 42, "num_key_value_heads": 8, "sliding_window": 4096,
    "attn_logit_softcapping": 50.0, "torch_dtype": "float32"})");
  auto plan = PlanConfig(gemma2, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].layers[1], "model.layers.2.self_attn");
  EXPECT_EQ(plan->groups[1].layers[0], "model.layers.1.self_attn");
  EXPECT_EQ(plan->groups[1].geometry.page_size_bytes(), 131072);
  EXPECT_EQ(plan->pool.num_blocks, 6241);
  EXPECT_EQ(plan->capacity.blocks_per_request, 1025);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "model-dtype");
  EXPECT_EQ(plan->diagnostics[0].message,
            "'config.json' gives torch_dtype float32; the engine runs a float32 model as bfloat16 "
            "(--dtype auto), so an auto KV cache stores bfloat16; set --dtype float32 to keep "
            "float32");

  // float32 also leaves FLASH_ATTN, which computes float16 and bfloat16 only: the engine's
  // selection takes TRITON_ATTN, and naming FLASH_ATTN is refused.
  plan = PlanConfig(gemma2, 1, 1, 16 * kGiB, 0, ElementType::kFloat32);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[1].geometry.page_size_bytes(), 262144);
  EXPECT_EQ(plan->groups[1].backends, std::vector<std::string>{"TRITON_ATTN"});
  EXPECT_TRUE(plan->diagnostics.empty());
  LaunchConfig flash;
  flash.model_dtype = ElementType::kFloat32;
  flash.cache.attention_backend = "FLASH_ATTN";
  plan = PlanWith(gemma2, flash);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "target layer 'model.layers.0.self_attn' (and 41 other layers) runs in float32 "
            "(--dtype float32) but backend FLASH_ATTN computes in float16 and bfloat16 only; "
            "choose another backend with --attention-backend or set --dtype bfloat16");

  plan = PlanConfig(gemma2, 1, 1, 16 * kGiB, 0, ElementType::kFloat16);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_FALSE(plan->accepted());
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "dtype-float16");
  EXPECT_EQ(plan->diagnostics[0].message,
            "--dtype float16: the engine refuses float16 for model type 'gemma2' (numerical "
            "instability); use --dtype bfloat16 or float32");

  // The rule is the engine's for every model: a float32 Llama config runs as bfloat16 too, and a
  // float16 one stays float16.
  nlohmann::json llama = Llama31_8B();
  llama["torch_dtype"] = "float32";
  plan = PlanConfig(llama, 8, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 8192);
  llama["torch_dtype"] = "float16";
  plan = PlanConfig(llama, 8, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 8192);
  EXPECT_TRUE(plan->diagnostics.empty());
}

// An MTP draft's n_predict is the MTP modules the config states (num_nextn_predict_layers): a
// count above it must be a multiple of it. A launch that names the draft 'model' without a count
// is refused: the engine's method detection compares the unset count with 1 before it would take
// n_predict (TypeError). A count above 1 gets the engine's warning; its drafter passes the MTP
// model no step index, so the first module runs every draft step.
TEST(DenseModels, MtpTokenCountFollowsTheModulesTheConfigStates) {
  nlohmann::json glm = nlohmann::json::parse(R"({
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "head_dim": 128,
    "hidden_size": 5120, "max_position_embeddings": 131072, "num_attention_heads": 96,
    "num_hidden_layers": 92, "num_key_value_heads": 8, "num_nextn_predict_layers": 2,
    "torch_dtype": "bfloat16"})");
  auto with = [&](const char* spec) {
    LaunchConfig c;
    c.parallel.tensor_parallel_size = 8;
    c.kv_cache_memory_bytes = 40 * kGiB;
    c.speculative = ParseSpeculativeConfig(spec).value();
    return PlanWith(glm, c);
  };
  const std::string& unset = kMtpCountUnset;
  auto plan = with(R"({"method": "mtp", "model": "zai-org/GLM-4.5"})");
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(),
            unset +
                "with the 2 MTP modules config.json 'config.json' states "
                "(num_nextn_predict_layers), the engine takes at most 2 or a multiple of 2");
  const std::string warns =
      "the engine warns that it runs the same MTP layer several times a step, which may lower "
      "the acceptance rate; its drafter passes the MTP model no step index, so the first MTP "
      "module runs all ";
  plan = with(R"({"method": "mtp", "num_speculative_tokens": 1})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "mtp-token-count"), "");
  EXPECT_EQ(plan->groups[0].layers.size(), 94u);  // both modules are cached
  plan = with(R"({"method": "mtp", "num_speculative_tokens": 4})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "mtp-token-count"),
            "num_speculative_tokens 4: " + warns +
                "4 draft steps, and the other 1 of the 2 MTP modules config.json 'config.json' "
                "states (num_nextn_predict_layers) keep their caches but never run");
  EXPECT_EQ(plan->model.num_speculative_tokens, 4);
  plan = with(R"({"method": "glm4_moe_mtp", "num_speculative_tokens": 3})");
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(),
            "--speculative-config: num_speculative_tokens 3 must be divisible by the 2 MTP "
            "modules config.json 'config.json' states (num_nextn_predict_layers): the engine "
            "refuses it ('num_speculative_tokens:3 must be divisible by n_predict=2'); choose a "
            "multiple of 2 or at most 2");
  // Without a 'model', the engine has no draft config to take a count from.
  EXPECT_EQ(ParseSpeculativeConfig(R"({"method": "mtp"})").status().message(),
            "--speculative-config: 'num_speculative_tokens' must be an integer in [1, 1024], got "
            "nothing; the engine fills it in only for suffix decoding and from the n_predict of "
            "a draft 'model''s config");
  // One module runs every step; a config that states no count says nothing of the others.
  glm["num_nextn_predict_layers"] = 1;
  plan = with(R"({"method": "mtp", "model": "zai-org/GLM-4.5"})");
  EXPECT_EQ(plan.status().message(),
            unset +
                "the one MTP module config.json 'config.json' states "
                "(num_nextn_predict_layers) runs every step, so any count");
  plan = with(R"({"method": "mtp", "num_speculative_tokens": 3})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "mtp-token-count"),
            "num_speculative_tokens 3: " + warns + "3 draft steps");
  glm.erase("num_nextn_predict_layers");
  plan = with(R"({"method": "mtp", "model": "zai-org/GLM-4.5"})");
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
}

// Method 'mtp' drafts with the target's own checkpoint only when its model type, after the
// engine's hf_config_override, is one of the engine's MTP types; otherwise the engine's method
// detection raises NotImplementedError. The layers are planned under the error; without a count
// the refusal ends the plan. A type vLLM's override keeps and the fork's lost (deepseek_v4) gets
// a warning; the architectures kvtopo plans that the fork does not register are not checked.
TEST(DenseModels, MtpDraftsNeedOneOfTheEnginesMtpTypes) {
  nlohmann::json kimi = CorpusConfig("kimi-linear-48b");
  kimi["num_nextn_predict_layers"] = 1;
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 4096;
  c.speculative = SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 1};
  const std::string refusal =
      "--speculative-config method 'mtp': config.json 'config.json' has model type kimi_linear, "
      "which the engine's SpeculativeConfig.hf_config_override does not turn into one of its MTP "
      "types, so its method detection raises NotImplementedError ('Unsupported speculative "
      "method: 'mtp'') before it builds the MTP layers planned here";
  auto plan = PlanWith(kimi, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "\n  error [speculative-mtp-model-type] " + refusal);
  EXPECT_EQ(plan->model.num_speculative_tokens, 1);
  c.speculative =
      ParseSpeculativeConfig(R"({"method": "mtp", "model": "moonshotai/Kimi-Linear-48B-A3B"})")
          .value();
  plan = PlanWith(kimi, c);
  EXPECT_EQ(plan.status().code(), StatusCode::kRejected);
  EXPECT_EQ(plan.status().message(), refusal);

  c.speculative = SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 1};
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  plan = PlanWith(CorpusConfig("deepseek-v4-flash-shaped"), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "speculative-mtp-model-type"),
            "--speculative-config method 'mtp': config.json 'config.json' has model type "
            "deepseek_v4, which the engine's SpeculativeConfig.hf_config_override does not turn "
            "into one of its MTP types, so its method detection raises NotImplementedError "
            "('Unsupported speculative method: 'mtp'') before it builds the MTP layers planned "
            "here; the fork at 28be48fa9 lost the deepseek_v4 entry of vLLM's override "
            "(vllm-project/vllm#40860), and an engine that keeps it builds them");

  plan = PlanWith(CorpusConfig("glm-5.3-flash"), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "speculative-mtp-model-type"), "");
  EXPECT_EQ(plan->model.num_speculative_tokens, 1);
}

// A draft that does not run as MTP takes the n_predict its config states when the speculative
// config leaves num_speculative_tokens out (an MLP speculator's config class defaults it to 3);
// without one the engine refuses the launch. A stated n_predict must be a count.
TEST(DenseModels, DraftsWithoutACountTakeTheirConfigsNPredict) {
  const auto dir = std::filesystem::temp_directory_path() / "kvtopo_n_predict";
  std::filesystem::create_directories(dir / "mlp");
  std::filesystem::create_directories(dir / "eagle3");
  std::ofstream(dir / "mlp" / "config.json")
      << R"({"architectures": ["MLPSpeculatorPreTrainedModel"], "model_type": "mlp_speculator",
             "emb_dim": 4096, "inner_dim": 3072, "vocab_size": 128256})";
  nlohmann::json eagle = nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 4096,
    "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 8,
    "max_position_embeddings": 131072, "vocab_size": 128256, "torch_dtype": "bfloat16"})");
  const auto write_eagle = [&] { std::ofstream(dir / "eagle3" / "config.json") << eagle.dump(); };
  write_eagle();
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 4096;
  const auto with = [&](const std::string& spec) {
    c.speculative = ParseSpeculativeConfig(spec).value();
    return PlanWith(Llama31_8B(), c);
  };
  const std::string mlp = (dir / "mlp").string();
  auto plan = with(R"({"model": ")" + mlp + R"("})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.speculative_method, "mlp_speculator");
  EXPECT_EQ(plan->model.num_speculative_tokens, 3);
  EXPECT_EQ(DiagnosticMessage(*plan, "num-speculative-tokens-default"),
            "num_speculative_tokens defaults to 3, MLPSpeculatorConfig's default n_predict "
            "(config.json '" +
                mlp +
                "/config.json' states none), as the engine takes it for "
                "draft '" +
                mlp + "' (method 'mlp_speculator')");

  // A larger count must be a multiple of n_predict; the speculator's heads, as many.
  EXPECT_EQ(with(R"({"num_speculative_tokens": 4, "model": ")" + mlp + R"("})").status().message(),
            "--speculative-config: num_speculative_tokens 4 must be divisible by 3, "
            "MLPSpeculatorConfig's default n_predict (config.json '" +
                mlp +
                "/config.json' states none): the engine refuses it ('num_speculative_tokens:4 "
                "must be divisible by n_predict=3'); choose a multiple of 3 or at most 3");
  plan = with(R"({"num_speculative_tokens": 6, "model": ")" + mlp + R"("})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.num_speculative_tokens, 6);
  std::ofstream(dir / "mlp" / "config.json")
      << R"({"architectures": ["MLPSpeculatorPreTrainedModel"], "model_type": "mlp_speculator",
             "n_predict": 4, "emb_dim": 4096, "inner_dim": 3072, "vocab_size": 128256})";
  EXPECT_EQ(with(R"({"model": ")" + mlp + R"("})").status().message(),
            "config.json '" + mlp +
                "/config.json': field 'top_k_tokens_per_head' has 3 entries (its default) for "
                "n_predict 4: the engine's MLPSpeculatorConfig asserts as many as n_predict as it "
                "loads the draft");

  const std::string head = (dir / "eagle3").string();
  const std::string spec = R"({"method": "eagle3", "model": ")" + head + R"("})";
  plan = with(spec);
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(),
            "--speculative-config: 'num_speculative_tokens' is not set: draft '" + head +
                "' runs as method 'eagle3' and its config states no n_predict for the engine "
                "to take (the engine refuses the launch: 'A speculative model was provided, but "
                "num_speculative_tokens was not provided')");
  eagle["n_predict"] = 5;
  write_eagle();
  plan = with(spec);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.num_speculative_tokens, 5);
  EXPECT_EQ(plan->model.num_lookahead_tokens, 5);
  EXPECT_EQ(DiagnosticMessage(*plan, "num-speculative-tokens-default"),
            "num_speculative_tokens defaults to 5, the n_predict of config.json '" + head +
                "/config.json', as the engine takes it for draft '" + head + "' (method 'eagle3')");
  eagle["n_predict"] = 0;
  write_eagle();
  EXPECT_EQ(
      with(spec).status().message(),
      "config.json '" + head + "/config.json': field 'n_predict' must be in [1, 1024], got 0");
  std::filesystem::remove_all(
      dir);  // A config kvtopo cannot read, and a proposer class, which has none.
  EXPECT_EQ(
      with(R"({"method": "eagle3", "model": "someorg/unread-eagle3-head"})").status().message(),
      "--speculative-config: 'num_speculative_tokens' is not set: draft "
      "'someorg/unread-eagle3-head' runs as method 'eagle3' and kvtopo cannot read its "
      "config for the n_predict the engine would take (unless that config states one, the "
      "engine refuses the launch: 'A speculative model was provided, but "
      "num_speculative_tokens was not provided')");
  EXPECT_EQ(with(R"({"model": "my_pkg.MyProposer"})").status().message(),
            "--speculative-config: 'num_speculative_tokens' is not set: draft "
            "'my_pkg.MyProposer' runs as method 'custom_class' and a proposer class has no draft "
            "config to take n_predict from (the engine refuses the launch: "
            "'num_speculative_tokens must be provided with speculative model unless the draft "
            "model config contains an n_predict parameter')");
}

// GLM-4.5 (Glm4MoeForCausalLM) is a dense K/V model to the cache: 92 layers of 8 KV heads of 128,
// one per rank at TP8 (8 KiB pages, 92 a block: 40 GiB is 56,987 blocks), and its MTP layer
// joins the group under an MTP method. Qwen2-MoE takes Qwen2's head size (2048 / 16).
// DeepSeek-V2-Lite is MLA: a 512 + 64 latent row, 16 x 576 x 2 B pages, and yarn's 4096 x 40.
TEST(DenseModels, Glm45QwenMoeAndDeepseekV2) {
  const nlohmann::json glm = nlohmann::json::parse(R"({
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "head_dim": 128,
    "hidden_size": 5120, "max_position_embeddings": 131072, "num_attention_heads": 96,
    "num_hidden_layers": 92, "num_key_value_heads": 8, "num_nextn_predict_layers": 1,
    "partial_rotary_factor": 0.5, "use_qk_norm": true, "torch_dtype": "bfloat16"})");
  auto plan = PlanConfig(glm, 8, 1, 40 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 92u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 8192);
  EXPECT_EQ(plan->pool.num_blocks, 56987);
  EXPECT_EQ(plan->capacity.max_tokens, 911'792);
  LaunchConfig mtp;
  mtp.parallel.tensor_parallel_size = 8;
  mtp.kv_cache_memory_bytes = 40 * kGiB;
  mtp.speculative =
      ParseSpeculativeConfig(R"({"method": "glm4_moe_mtp", "num_speculative_tokens": 1})").value();
  plan = PlanWith(glm, mtp);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.back(), "model.layers.92.self_attn");
  EXPECT_EQ(plan->pool.num_blocks, 56375);  // 40 GiB / (93 x 8,192 B)

  nlohmann::json qwen_moe = Qwen25_7B();
  qwen_moe["architectures"] = {"Qwen2MoeForCausalLM"};
  qwen_moe["hidden_size"] = 2048;
  qwen_moe["num_attention_heads"] = 16;
  qwen_moe["num_key_value_heads"] = 16;
  qwen_moe["head_dim"] = 256;  // not read: Qwen2 layers take hidden_size / heads
  plan = PlanConfig(qwen_moe, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 16 * 128 * 2);

  const nlohmann::json deepseek_v2 = nlohmann::json::parse(R"({
    "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
    "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "num_attention_heads": 16, "num_key_value_heads": 16,
    "num_hidden_layers": 27, "max_position_embeddings": 163840,
    "rope_scaling": {"factor": 40, "original_max_position_embeddings": 4096, "type": "yarn"},
    "torch_dtype": "bfloat16"})");
  plan = PlanConfig(deepseek_v2, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 163840);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kMla);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 576 * 2);
  EXPECT_EQ(plan->pool.num_blocks, 34521);  // 16 GiB / (27 x 18,432 B)
}

// MiniMax-M2's config.json: 62 full-attention layers, 8 KV heads of 128 (head_dim, not
// hidden_size / heads = 64). At TP8 one KV head per rank: a page of 16 x 2 x 1 x 128 x 2 B =
// 8,192 B per layer, 507,904 B a block; 40 GiB is 84,562 blocks, 1,352,992 tokens. Its attention
// never reads layer_types, and with a mix of sliding and full layers the engine sets no
// cache-wide window: the same 62 full layers.
TEST(DenseModels, MiniMaxM2) {
  nlohmann::json minimax = nlohmann::json::parse(R"({
    "architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "hidden_size": 3072,
    "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8,
    "head_dim": 128, "rotary_dim": 64, "max_position_embeddings": 196608,
    "num_mtp_modules": 3, "use_mtp": true, "torch_dtype": "bfloat16"})");
  auto plan = PlanConfig(minimax, 8, 1, 40 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 62u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 8192);
  EXPECT_EQ(plan->pool.num_blocks, 84562);
  EXPECT_EQ(plan->capacity.max_tokens, 1'352'992);
  EXPECT_EQ(plan->model.max_model_len, 196608);

  minimax["sliding_window"] = 4096;
  minimax["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 62; ++i) {
    minimax["layer_types"].push_back(i % 2 ? "full_attention" : "sliding_attention");
  }
  plan = PlanConfig(minimax, 8, 1, 40 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->pool.num_blocks, 84562);
}

// Phi-3 (the engine's Phi3ForCausalLM is its Llama) with LongRoPE: the model reaches 131072
// tokens, but the engine's default --max-model-len is original_max_position_embeddings (4096),
// which an info diagnostic names; an explicit --max-model-len up to 131072 is taken as given.
TEST(DenseModels, LongRopeDefaultsToTheOriginalLength) {
  const nlohmann::json phi3 = nlohmann::json::parse(R"({
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072,
    "num_attention_heads": 32, "num_key_value_heads": 32, "num_hidden_layers": 32,
    "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
    "rope_scaling": {"type": "longrope", "long_factor": [1.0, 1.1], "short_factor": [1.0, 1.0]},
    "torch_dtype": "bfloat16"})");
  auto plan = PlanConfig(phi3, 1, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 4096);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 32 * 96 * 2);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "max-model-len-default");
  EXPECT_EQ(plan->diagnostics[0].message,
            "--max-model-len defaults to original_max_position_embeddings 4096 (LongRoPE) as the "
            "engine's does; the model reaches 131072 (max_position_embeddings 131072): set "
            "--max-model-len to plan longer requests");
  plan = PlanConfig(phi3, 1, 1, 64 * kGiB, 16384);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 16384);
  EXPECT_TRUE(plan->diagnostics.empty());
}

// Llama 4 Scout (the fields its config.json states): RoPE layers attend within 8,192-token
// chunks, every 4th layer (no RoPE) globally. The engine keeps its hybrid KV cache manager for
// chunked local attention (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to 1):
// the 36 chunked layers form three groups of 12 holding cdiv(8,192 + 2 x 8,192, 16) = 1,536 pages
// a request beside the 12 global layers' 65,536; 40 GiB / (12 x 8 KiB) = 436,906 blocks at TP8.
// With the variable 0, or under an EAGLE-family method, the engine turns the manager off and all
// 48 layers are cached as full attention: one group, 40 GiB / (48 x 8 KiB) = 109,226 blocks,
// 1,747,616 tokens at 1,048,576 a request.
TEST(DenseModels, Llama4ChunkedLocalAttention) {
  const nlohmann::json scout = nlohmann::json::parse(R"({
    "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
    "torch_dtype": "bfloat16",
    "text_config": {
      "attention_chunk_size": 8192, "head_dim": 128, "hidden_size": 5120,
      "max_position_embeddings": 10485760, "model_type": "llama4_text", "no_rope_layers": [],
      "num_attention_heads": 40, "num_hidden_layers": 48, "num_key_value_heads": 8,
      "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"}}})");
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 8;
  c.kv_cache_memory_bytes = 256 * kGiB;
  auto plan = PlanWith(scout, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 10'485'760);  // llama3 scaling is already counted

  c.cache.max_model_len = 1'048'576;
  c.kv_cache_memory_bytes = 40 * kGiB;
  plan = PlanWith(scout, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 4u);
  for (size_t g = 0; g < 3; ++g) {
    EXPECT_EQ(plan->groups[g].geometry.kind(), CacheKind::kChunkedLocal);
    EXPECT_EQ(plan->groups[g].geometry.attention_chunk_size(), 8192);
    EXPECT_EQ(plan->groups[g].geometry.max_pages_per_request(), 1536);
  }
  EXPECT_EQ(plan->groups[3].layers.front(), "model.layers.3.self_attn");
  EXPECT_EQ(plan->groups[3].layers.back(), "model.layers.47.self_attn");
  EXPECT_EQ(plan->pool.num_blocks, 436'906);
  EXPECT_EQ(plan->capacity.blocks_per_request, 3 * 1536 + 65536);
  EXPECT_EQ(plan->capacity.max_tokens, 6'531'266);
  EXPECT_TRUE(plan->diagnostics.empty());
  // Chunked local attention replays no CUDA graph: the engine refuses full graphs of mixed
  // batches on it (the default full-and-piecewise mode falls back to piecewise).
  c.compilation.cudagraph_mode = "FULL";
  plan = PlanWith(scout, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [cudagraph-mode-backend] cudagraph_mode FULL (set by --compilation-config) "
            "on chunked local attention, which replays no CUDA graph: the engine refuses it once "
            "the weights are loaded ('CUDAGraphMode.FULL is not supported'); use cudagraph_mode "
            "PIECEWISE or FULL_AND_PIECEWISE, or --enforce-eager");
  c.compilation.cudagraph_mode = "FULL_DECODE_ONLY";
  plan = PlanWith(scout, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  c.compilation.cudagraph_mode.clear();

  c.allow_chunked_local_hybrid = false;
  plan = PlanWith(scout, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.size(), 48u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 8192);
  EXPECT_EQ(plan->pool.num_blocks, 109'226);
  EXPECT_EQ(plan->capacity.max_tokens, 1'747'616);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "hybrid-manager-off");
  EXPECT_EQ(plan->diagnostics[0].message,
            "the hybrid KV cache manager is off for chunked local attention with "
            "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0, so the engine caches 36 "
            "chunked local layers as full attention");
  // --no-disable-hybrid-kv-cache-manager then meets the engine's refusal.
  c.disable_hybrid_kv_cache_manager = false;
  plan = PlanWith(scout, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->accepted());
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [hybrid-manager-off] --no-disable-hybrid-kv-cache-manager keeps the hybrid "
            "KV cache manager on, but the engine turns it off for chunked local attention with "
            "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0, and refuses the launch; drop "
            "--no-disable-hybrid-kv-cache-manager");

  // With the variable at its default, --no-disable-hybrid-kv-cache-manager agrees with the
  // engine; --disable-hybrid-kv-cache-manager turns the manager off.
  c.allow_chunked_local_hybrid = true;
  plan = PlanWith(scout, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.num_blocks, 436'906);
  c.disable_hybrid_kv_cache_manager = true;
  plan = PlanWith(scout, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.num_blocks, 109'226);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "the hybrid KV cache manager is off by --disable-hybrid-kv-cache-manager, so the "
            "engine caches 36 chunked local layers as full attention");
  c.disable_hybrid_kv_cache_manager.reset();

  c.speculative =
      ParseSpeculativeConfig(
          R"({"method": "eagle3", "model": "kimi-k2.6-eagle3-mla", "num_speculative_tokens": 3})")
          .value();
  plan = PlanWith(scout, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  for (const auto& g : plan->groups) EXPECT_NE(g.geometry.kind(), CacheKind::kChunkedLocal);
  ASSERT_FALSE(plan->diagnostics.empty());
  EXPECT_EQ(plan->diagnostics.back().message,
            "the hybrid KV cache manager is off for chunked local attention under speculative "
            "method 'eagle3', so the engine caches 36 chunked local layers as full attention");
  // (The launch is refused as well: the Kimi head's fc takes states 7,168 wide, Scout's are
  // 5,120.)
  EXPECT_NE(plan->ErrorLines().find("[speculative-draft-hidden-size]"), std::string::npos);

  nlohmann::json bad = scout;
  bad["text_config"]["no_rope_layers"] = {1, 1, 2};
  bad["text_config"]["num_hidden_layers"] = 3;
  EXPECT_EQ(ConfigError(bad),
            "config.json 'config.json': field 'text_config.no_rope_layers' entry 2 is 2; each "
            "entry is 0 (NoPE) or 1");
}

// Fields a Llama 4 config omits take Llama4TextConfig's defaults (attention_chunk_size 8192,
// head_dim 128, 8 KV heads, 131,072 positions), so Scout without them plans as Scout; a null
// attention_chunk_size makes every layer global.
TEST(DenseModels, Llama4ConfigClassDefaults) {
  const nlohmann::json scout = nlohmann::json::parse(R"({
    "architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text",
    "torch_dtype": "bfloat16", "hidden_size": 5120, "num_attention_heads": 40,
    "num_hidden_layers": 48})");
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 8;
  c.kv_cache_memory_bytes = 40 * kGiB;
  auto plan = PlanWith(scout, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 131'072);
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kChunkedLocal);
  EXPECT_EQ(plan->groups[0].geometry.attention_chunk_size(), 8192);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 8192);  // 16 x 1 x 128 x 2 x 2 B
  EXPECT_EQ(plan->pool.num_blocks, 436'906);
  nlohmann::json narrow = scout;
  narrow["head_dim"] = nullptr;  // null: hidden_size / num_attention_heads, also 128
  narrow["attention_chunk_size"] = nullptr;
  plan = PlanWith(narrow, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.size(), 48u);
  nlohmann::json wide = scout;
  wide["hidden_size"] = 2560;  // heads of 64 where head_dim is null, 128 where it is absent
  plan = PlanWith(wide, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 8192);
  wide["head_dim"] = nullptr;
  plan = PlanWith(wide, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 4096);
}

// Both Cohere generations. Cohere 2 (Command R7B / Command A) interleaves like Gemma 3 with a
// pattern of 4: full layers 3, 7, ..., 31, the other 24 slide over 4,096 tokens, so three
// sliding groups of 8 and one full group. Its attention takes hidden_size / heads = 128 even
// when head_dim says 256: 64 KiB pages, 16 GiB / (8 x 64 KiB) = 32,768 blocks; a 32,768-token
// request holds 3 x 1,281 + 2,048 pages, so 182,268 tokens.
TEST(DenseModels, CohereGenerations) {
  const nlohmann::json cohere2 = nlohmann::json::parse(R"({
    "architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32, "head_dim": 256,
    "max_position_embeddings": 132096, "sliding_window": 4096, "sliding_window_pattern": 4,
    "torch_dtype": "bfloat16"})");
  auto plan = PlanConfig(cohere2, 1, 1, 16 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[3].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[3].layers, Layers({3, 7, 11, 15, 19, 23, 27, 31}));
  EXPECT_EQ(plan->groups[3].geometry.page_size_bytes(), 65536);
  EXPECT_EQ(plan->pool.num_blocks, 32768);
  EXPECT_EQ(plan->capacity.blocks_per_request, 5891);
  EXPECT_EQ(plan->capacity.max_tokens, 182'268);

  // Command R (CohereForCausalLM, the first generation) never slides, and its KV heads default to
  // the query heads: 64 heads of 8192 / 64 = 128, 8 of them per rank at TP8 (64 KiB pages).
  const nlohmann::json command_r = nlohmann::json::parse(R"({
    "architectures": ["CohereForCausalLM"], "model_type": "cohere", "hidden_size": 8192,
    "num_attention_heads": 64, "num_hidden_layers": 40, "max_position_embeddings": 131072,
    "sliding_window": 4096, "torch_dtype": "bfloat16"})");
  plan = PlanConfig(command_r, 8, 1, 16 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 8 * 128 * 2);
}

// --kv-cache-dtype turboquant_*: the fork's TurboQuant presets (TQ_PRESETS), their packed K|V
// slot (TurboQuantConfig.slot_size_aligned), the page TQFullAttentionSpec gives it, the boundary
// layers a model without recurrent layers keeps at the model dtype
// (TurboQuantConfig.get_boundary_skip_layers), and the launches kvtopo does not plan with it.
LaunchConfig TurboQuantLaunch(KvCacheDtype dtype, int64_t tp = 1) {
  LaunchConfig c;
  c.model = "config.json";
  c.parallel.tensor_parallel_size = tp;
  c.cache.kv_cache_dtype = dtype;
  c.kv_cache_memory_bytes = 20 * kGiB;
  return c;
}

TEST(TurboQuant, PresetsAndSlots) {
  EXPECT_EQ(ParseKvCacheDtype("turboquant_k8v4").value(), KvCacheDtype::kTurboquantK8v4);
  EXPECT_EQ(KvCacheDtypeName(KvCacheDtype::kTurboquant3bitNc), "turboquant_3bit_nc");
  EXPECT_NE(ParseKvCacheDtype("turboquant").status().message().find("turboquant_k3v4_nc"),
            std::string::npos);
  auto slot = [](KvCacheDtype d, int64_t head) {
    return TurboQuantSlotBytes(*TurboQuantOf(d), head);
  };
  // head 128: fp8 keys 128 + 4-bit values 64 + 4; 4-bit keys 64 + 2 + 68; 3-bit keys 48 + 2.
  EXPECT_EQ(slot(KvCacheDtype::kTurboquantK8v4, 128), 196);
  EXPECT_EQ(slot(KvCacheDtype::kTurboquant4bitNc, 128), 134);
  EXPECT_EQ(slot(KvCacheDtype::kTurboquantK3v4Nc, 128), 118);
  EXPECT_EQ(slot(KvCacheDtype::kTurboquant3bitNc, 128), 102);
  EXPECT_EQ(slot(KvCacheDtype::kTurboquant4bitNc, 256), 262);
  // head 72, 3-bit keys: 27 + 2 + 36 + 4 = 69, rounded up to 70.
  EXPECT_EQ(slot(KvCacheDtype::kTurboquantK3v4Nc, 72), 70);
  EXPECT_FALSE(TurboQuantOf(KvCacheDtype::kFp8).has_value());
}

// Llama-3.1-8B at TP1 with 20 GiB: layers 0, 1, 30 and 31 keep bf16 pages (16 x 8 x 256 x 2 =
// 65,536 B), the other 28 store 16 x 8 x 196 = 25,088 B; all are full attention with one block
// size, so one group holds a page of every layer per block: 964,608 B, 22,262 blocks.
TEST(TurboQuant, DenseModelKeepsItsBoundaryLayers) {
  auto plan = PlanWith(Llama31_8B(), TurboQuantLaunch(KvCacheDtype::kTurboquantK8v4));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  const PlannedGroup& g = plan->groups[0];
  EXPECT_TRUE(g.uniform_type);
  ASSERT_EQ(g.layer_specs.size(), 32u);
  for (int i : {0, 1, 30, 31}) {
    EXPECT_EQ(g.layer_specs[i].cache_dtype, KvCacheDtype::kAuto) << i;
    EXPECT_EQ(g.layer_specs[i].attention_backend, "FLASH_ATTN") << i;
    EXPECT_EQ(PageSizeBytes(g.layer_specs[i]).value(), 65536) << i;
  }
  EXPECT_EQ(g.layer_specs[2].cache_dtype, KvCacheDtype::kTurboquantK8v4);
  EXPECT_EQ(g.layer_specs[2].attention_backend, "TURBOQUANT");
  EXPECT_EQ(PageSizeBytes(g.layer_specs[2]).value(), 25088);
  EXPECT_EQ(plan->pool.bytes_per_block, 964'608);
  EXPECT_EQ(plan->pool.num_blocks, 22'262);
  EXPECT_EQ(plan->capacity.max_tokens, 356'192);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "--kv-cache-dtype turboquant_k8v4 keeps layers 0, 1, 30, 31 at the model dtype, as "
            "the engine's TurboQuant keeps the first and last 2 layers of a model without "
            "recurrent layers; the others store packed K|V slots");
}

// A hybrid keeps no boundary layers; its Mamba alignment sizes the attention block by the
// TurboQuant page (the fork's Platform alignment takes the TQ page per token). Qwen3.5-35B-A3B
// at TP1: 2 KV heads x 262 B = 524 B a token; 16 x ceil(2,146,304 / (16 x 524)) = 4,096 tokens.
TEST(TurboQuant, HybridAlignsToTheTurboQuantPage) {
  const nlohmann::json qwen35 = nlohmann::json::parse(R"({
    "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
    "text_config": {"model_type": "qwen3_5_moe_text", "num_hidden_layers": 40,
      "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
      "hidden_size": 2048, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
      "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
      "full_attention_interval": 4, "max_position_embeddings": 262144,
      "mamba_ssm_dtype": "float32", "dtype": "bfloat16"}})");
  auto plan = PlanWith(qwen35, TurboQuantLaunch(KvCacheDtype::kTurboquant4bitNc));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 4u);
  const PlannedGroup& full = plan->groups[3];
  EXPECT_EQ(full.geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(full.geometry.block_size(), 4096);
  EXPECT_EQ(full.geometry.page_size_bytes(), 2'146'304);
  EXPECT_EQ(full.backends, std::vector<std::string>{"TURBOQUANT"});
  ASSERT_EQ(plan->diagnostics.size(), 1u);  // the engine's default: no prefix caching
  EXPECT_EQ(plan->diagnostics[0].code, "prefix-caching-default-off");
}

// --kv-cache-dtype-skip-layers: layers named by index (or every windowed one) keep the model
// dtype. Llama-3.1-8B, fp8, layers 0 and 31 kept: 2 x 65,536 + 30 x 32,768 = 1,114,112 B a block,
// 19,275 blocks in 20 GiB; with TurboQuant the list joins the boundary layers (layer 5 too:
// 5 x 65,536 + 27 x 25,088 = 1,005,056 B).
TEST(TurboQuant, SkipLayersKeepTheModelDtype) {
  LaunchConfig fp8 = TurboQuantLaunch(KvCacheDtype::kFp8);
  fp8.cache.kv_cache_dtype_skip_layers = {"0", "31"};
  auto plan = PlanWith(Llama31_8B(), fp8);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].layer_specs[0].cache_dtype, KvCacheDtype::kAuto);
  EXPECT_EQ(plan->groups[0].layer_specs[1].cache_dtype, KvCacheDtype::kFp8);
  EXPECT_EQ(plan->pool.bytes_per_block, 1'114'112);
  EXPECT_EQ(plan->pool.num_blocks, 19'275);
  EXPECT_TRUE(plan->diagnostics.empty());

  LaunchConfig tq = TurboQuantLaunch(KvCacheDtype::kTurboquantK8v4);
  tq.cache.kv_cache_dtype_skip_layers = {"5"};
  plan = PlanWith(Llama31_8B(), tq);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].layer_specs[5].attention_backend, "FLASH_ATTN");
  EXPECT_EQ(plan->pool.bytes_per_block, 1'005'056);

  // Entries are compared whole; those that match no layer are said.
  fp8.cache.kv_cache_dtype_skip_layers = {"0,1", "03", "40", "31"};
  plan = PlanWith(Llama31_8B(), fp8);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "kv-cache-dtype-skip-layers-unmatched");
  EXPECT_EQ(plan->diagnostics[0].message,
            "--kv-cache-dtype-skip-layers: 0,1, 03, 40 name no K/V attention layer of "
            "'config.json' (the engine compares each entry whole with a layer's index: 3, not 03 "
            "or 1,3, or sliding_window; MLA layers do not read the list); they keep nothing");
  EXPECT_EQ(plan->groups[0].layer_specs[31].cache_dtype, KvCacheDtype::kAuto);

  // sliding_window keeps every windowed layer; with TurboQuant the engine fails on it.
  nlohmann::json mistral = Llama31_8B();
  mistral["architectures"] = {"MistralForCausalLM"};
  mistral["model_type"] = "mistral";
  mistral["sliding_window"] = 4096;
  fp8.cache.kv_cache_dtype_skip_layers = {"sliding_window"};
  plan = PlanWith(mistral, fp8);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].layer_specs[7].cache_dtype, KvCacheDtype::kAuto);
  tq.cache.kv_cache_dtype_skip_layers = {"sliding_window"};
  plan = PlanWith(Llama31_8B(), tq);
  EXPECT_EQ(plan.status().code(), StatusCode::kRejected);
}

// MLAAttention takes the cache config's dtype whole: the list reaches K/V attention layers only.
// GLM-4.7-Flash (MLA), fp8: layers 0 and 1 keep fp8 pages of 9,216 B.
TEST(TurboQuant, SkipLayersDoNotReachMlaLayers) {
  LaunchConfig fp8 = TurboQuantLaunch(KvCacheDtype::kFp8);
  fp8.cache.kv_cache_dtype_skip_layers = {"0", "1"};
  auto plan = PlanWith(CorpusConfig("glm-4.7-flash"), fp8);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].layer_specs[0].cache_dtype, KvCacheDtype::kFp8);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 9216);
  EXPECT_EQ(DiagnosticMessage(*plan, "kv-cache-dtype-skip-layers-unmatched"),
            "--kv-cache-dtype-skip-layers: 0, 1 name no K/V attention layer of 'config.json' (the "
            "engine compares each entry whole with a layer's index: 3, not 03 or 1,3, or "
            "sliding_window; MLA layers do not read the list); they keep nothing");
}

TEST(TurboQuant, LaunchesItIsNotPlannedFor) {
  LaunchConfig mla = TurboQuantLaunch(KvCacheDtype::kTurboquantK8v4, 8);
  mla.model = "kimi-k2.6";
  Result<ModelCacheSpecs> specs = BuildModelCacheSpecs(mla);
  EXPECT_EQ(specs.status().code(), StatusCode::kRejected);
  EXPECT_EQ(specs.status().message(),
            "--kv-cache-dtype turboquant_k8v4: TurboQuant stores K/V attention, and "
            "'profiles/kimi-k2.6.json' caches an MLA latent (layer 'model.layers.0.self_attn'), "
            "which no TurboQuant backend serves; choose another --kv-cache-dtype");
  nlohmann::json windowed = Llama31_8B();
  windowed["architectures"] = {"MistralForCausalLM"};
  windowed["model_type"] = "mistral";
  windowed["sliding_window"] = 4096;
  auto plan = PlanWith(windowed, TurboQuantLaunch(KvCacheDtype::kTurboquantK8v4));
  EXPECT_EQ(plan.status().message(),
            "--kv-cache-dtype turboquant_k8v4: layer 'model.layers.0.self_attn' attends over a "
            "sliding window; kvtopo plans TurboQuant on full-attention layers only "
            "(--disable-sliding-window makes such layers full)");
  // A backend that does not store it, and DCP (the TurboQuant backend returns no LSE).
  LaunchConfig flash = TurboQuantLaunch(KvCacheDtype::kTurboquant3bitNc);
  flash.cache.attention_backend = "FLASH_ATTN";
  plan = PlanWith(Llama31_8B(), flash);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->accepted());
  EXPECT_NE(plan->ErrorLines().find("backend-kv-cache-dtype"), std::string::npos);
  ASSERT_EQ(plan->diagnostics.size(), 2u);
  EXPECT_EQ(plan->diagnostics[1].message,
            "target layer 'model.layers.2.self_attn' (and 27 other layers) stores "
            "turboquant_3bit_nc (TurboQuant) but backend FLASH_ATTN does not store it; leave "
            "--attention-backend unset so the engine picks the backend that does");
  LaunchConfig dcp = TurboQuantLaunch(KvCacheDtype::kTurboquant3bitNc, 16);
  dcp.parallel.decode_context_parallel_size = 2;
  plan = PlanWith(Llama31_8B(), dcp);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->ErrorLines().find("dcp-backend-lse"), std::string::npos);
}

}  // namespace
// A gemma-3n-E4B-shaped text_config (Gemma3nTextConfig's defaults, which are E4B's: 35 layers,
// 8 heads and 2 KV heads of 256, a 512-token window, a full layer in five, the last 15 layers
// reusing an earlier layer's KV). Layers 20-34 keep no cache (sliding ones read layer 18's, full
// ones layer 19's), so 20 layers are cached: full 4, 9, 14, 19 and 16 sliding, in 5 groups of
// 4. A page is 16 x 2 x 2 x 256 x 2 B = 32 KiB, a block 4 of them: 20 GiB is 163,840 blocks.
TEST(DenseModels, Gemma3nLayersThatShareKvKeepNoCache) {
  nlohmann::json gemma = nlohmann::json::parse(R"({
    "architectures": ["Gemma3nForConditionalGeneration"], "model_type": "gemma3n",
    "torch_dtype": "bfloat16",
    "text_config": {"model_type": "gemma3n_text", "hidden_size": 2048, "num_hidden_layers": 35,
                    "num_attention_heads": 8, "num_key_value_heads": 2}})");
  auto plan = PlanConfig(gemma, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  ASSERT_EQ(plan->groups.size(), 5u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 512);
  EXPECT_EQ(plan->groups[0].layers, Layers({0, 5, 10, 15}));
  EXPECT_EQ(plan->groups[4].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[4].layers, Layers({4, 9, 14, 19}));
  EXPECT_EQ(plan->groups[4].geometry.page_size_bytes(), 32768);
  EXPECT_EQ(plan->pool.num_blocks, 163840);

  // Without sharing every layer is cached: 7 full, 28 sliding, 5 groups of 7. A count that
  // leaves no earlier layer to read (35) shares nothing either, as the engine checks.
  gemma["text_config"]["num_kv_shared_layers"] = 0;
  plan = PlanConfig(gemma, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 5u);
  EXPECT_EQ(plan->groups[4].layers, Layers({4, 9, 14, 19, 24, 29, 34}));
  gemma["text_config"]["num_kv_shared_layers"] = 35;
  plan = PlanConfig(gemma, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[4].layers, Layers({4, 9, 14, 19, 24, 29, 34}));
  gemma["text_config"]["num_kv_shared_layers"] = -1;
  EXPECT_EQ(ConfigError(gemma),
            "config.json 'config.json': field 'text_config.num_kv_shared_layers' must be in [0, "
            "4096], got -1");
}

// A gemma-4-31B-shaped text_config: 60 layers, 32 heads; sliding layers 16 KV heads of 256 over a
// 1,024-token window, full layers (every sixth) 4 KV heads of 512 (attention_k_eq_v). The head
// sizes differ and one exceeds 256, so every layer runs TRITON_ATTN. At TP1 a sliding page is
// 16 x 2 x 16 x 256 x 2 B = 256 KiB and a full one half that, so the full block doubles to 32
// tokens for one page size; 50 sliding and 10 full layers make 6 groups of 10, and 20 GiB is
// 8,192 blocks of 10 pages. At TP8 the sliding layers keep 2 heads and the full ones 1 (4 heads
// over 8 ranks, each held twice): both pages are 32 KiB at 16 tokens.
TEST(DenseModels, Gemma4FullLayersTakeTheirOwnHeads) {
  nlohmann::json gemma = nlohmann::json::parse(R"({
    "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
    "dtype": "bfloat16",
    "text_config": {"model_type": "gemma4_text", "hidden_size": 5376, "num_hidden_layers": 60,
                    "num_attention_heads": 32, "num_key_value_heads": 16,
                    "num_global_key_value_heads": 4, "attention_k_eq_v": true,
                    "head_dim": 256, "global_head_dim": 512, "sliding_window": 1024,
                    "max_position_embeddings": 262144}})");
  auto plan = PlanConfig(gemma, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 6u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 1024);
  EXPECT_EQ(plan->groups[0].spec.head_size, 256);
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 16);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 262144);
  EXPECT_EQ(plan->groups[0].layers, Layers({0, 6, 12, 18, 24, 30, 36, 42, 48, 54}));
  EXPECT_EQ(plan->groups[5].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[5].spec.head_size, 512);
  EXPECT_EQ(plan->groups[5].spec.num_kv_heads, 4);
  EXPECT_EQ(plan->groups[5].geometry.block_size(), 32);
  EXPECT_EQ(plan->groups[5].geometry.page_size_bytes(), 262144);
  EXPECT_EQ(plan->groups[5].layers, Layers({5, 11, 17, 23, 29, 35, 41, 47, 53, 59}));
  EXPECT_EQ(plan->groups[5].spec.attention_backend, "TRITON_ATTN");
  EXPECT_EQ(plan->pool.num_blocks, 8192);

  plan = PlanConfig(gemma, 8, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 2);
  EXPECT_EQ(plan->groups[5].spec.num_kv_heads, 1);
  EXPECT_EQ(plan->groups[5].geometry.block_size(), 16);
  EXPECT_EQ(plan->groups[5].geometry.page_size_bytes(), 32768);
  EXPECT_EQ(plan->pool.num_blocks, 65536);

  // Without attention_k_eq_v the full layers keep num_key_value_heads (16 of 512: a page twice
  // the sliding one, whose block then doubles); with it, the heads must be stated.
  nlohmann::json plain = gemma;
  plain["text_config"]["attention_k_eq_v"] = false;
  plan = PlanConfig(plain, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 32);
  EXPECT_EQ(plan->groups[5].spec.num_kv_heads, 16);
  EXPECT_EQ(plan->groups[5].geometry.page_size_bytes(), 524288);
  plain = gemma;
  plain["text_config"].erase("num_global_key_value_heads");
  EXPECT_EQ(ConfigError(plain),
            "config.json 'config.json': field 'text_config.num_global_key_value_heads' is not "
            "set, but attention_k_eq_v is true: the engine's full-attention layers take their "
            "KV heads from it");
  plain["text_config"]["num_global_key_value_heads"] = 5;
  EXPECT_EQ(ConfigError(plain),
            "config.json 'config.json': field 'text_config.num_global_key_value_heads' is 5, "
            "which does not divide num_attention_heads 32");

  // Equal head sizes keep the default backend; a launch that names FlashAttention for 512-wide
  // heads runs only where FlashAttention 4 is supported (a warning).
  nlohmann::json narrow = gemma;
  narrow["text_config"]["global_head_dim"] = 256;
  plan = PlanConfig(narrow, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.attention_backend, "FLASH_ATTN");
  LaunchConfig fa;
  fa.cache.attention_backend = "FLASH_ATTN";
  fa.cache.max_model_len = 32768;
  fa.kv_cache_memory_bytes = 20 * kGiB;
  plan = PlanWith(gemma, fa);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-head-size-gpu"),
            "target layer 'model.layers.5.self_attn' (and 9 other layers) has head size 512, "
            "which backend FLASH_ATTN takes only where FlashAttention 4 is supported (its kernels "
            "on a Hopper or Blackwell GPU): elsewhere the engine refuses the selection "
            "('head_size not supported'); TRITON_ATTN, FLEX_ATTENTION take it on any GPU; "
            "--device-capability settles it");

  // TP must divide the 32 heads.
  plan = PlanConfig(gemma, 3, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [tp-attention-heads] --tensor-parallel-size 3 does not divide the 32 "
            "attention heads of 'config.json', and the engine refuses such a launch; choose a "
            "tensor-parallel size that divides 32");

  nlohmann::json embedding = gemma;
  embedding["text_config"]["use_bidirectional_attention"] = "all";
  EXPECT_EQ(ConfigError(embedding),
            "config.json 'config.json': field 'text_config.use_bidirectional_attention' is "
            "\"all\": an embedding model's bidirectional attention keeps no KV cache across "
            "steps; kvtopo plans decoders");
  embedding["text_config"]["use_bidirectional_attention"] = "vision";  // masks only
  plan = PlanConfig(embedding, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
}

// A gemma-4-E4B-shaped text_config: 42 layers, 8 heads, 2 KV heads (256 sliding, 512 full), a
// 512-token window, the last 18 layers reading an earlier layer's cache: shared sliding layers
// layer 22's, shared full layers layer 23's (the last of each type before layer 24). 24 layers
// are cached: 20 sliding and full 5, 11, 17, 23. A full page (16 x 2 x 2 x 512 x 2 B = 64 KiB)
// is twice a sliding one, so the sliding block doubles to 32; 6 groups of 4, and 20 GiB is
// 81,920 blocks of 4 x 64 KiB.
TEST(DenseModels, Gemma4SharedKvLayersReadTheLastOfTheirType) {
  nlohmann::json gemma = nlohmann::json::parse(R"({
    "architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text", "dtype": "bfloat16",
    "hidden_size": 2560, "num_hidden_layers": 42, "num_attention_heads": 8,
    "num_key_value_heads": 2, "num_kv_shared_layers": 18})");
  auto plan = PlanConfig(gemma, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 131072);  // the config class's default
  ASSERT_EQ(plan->groups.size(), 6u);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 512);  // the config class's default
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 32);
  EXPECT_EQ(plan->groups[0].layers, Layers({0, 6, 12, 18}));
  EXPECT_EQ(plan->groups[4].layers, Layers({4, 10, 16, 22}));
  EXPECT_EQ(plan->groups[5].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[5].layers, Layers({5, 11, 17, 23}));
  EXPECT_EQ(plan->groups[5].geometry.page_size_bytes(), 65536);
  EXPECT_EQ(plan->pool.num_blocks, 81920);

  // The config class forces the last layer full: four sliding layers stated, three planned so.
  nlohmann::json small = nlohmann::json::parse(R"({
    "architectures": ["Gemma4ForCausalLM"], "dtype": "bfloat16", "num_hidden_layers": 4,
    "num_attention_heads": 8, "num_key_value_heads": 2,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
                    "sliding_attention"]})");
  plan = PlanConfig(small, 1, 1, 1 * kGiB, 4096);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 4u);  // groups of one layer
  EXPECT_EQ(plan->groups[3].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[3].layers, Layers({3}));
  ASSERT_FALSE(plan->diagnostics.empty());
  EXPECT_EQ(plan->diagnostics[0].severity, Severity::kWarning);
  EXPECT_EQ(plan->diagnostics[0].code, "config-layer-type-changed");
  EXPECT_EQ(plan->diagnostics[0].message,
            "config.json 'config.json': layer_types names the last layer (3) sliding_attention; "
            "the config class forces it to full_attention (and warns), which the engine runs");
  // Without layer_types, the derived pattern (a full layer in six) ends in a sliding layer for
  // 4 layers too.
  nlohmann::json derived = small;
  derived.erase("layer_types");
  plan = PlanConfig(derived, 1, 1, 1 * kGiB, 4096);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[3].geometry.kind(), CacheKind::kFullAttention);
  ASSERT_FALSE(plan->diagnostics.empty());
  EXPECT_EQ(plan->diagnostics[0].message,
            "config.json 'config.json': the config class's default pattern (a full layer in six) "
            "makes the last layer (3) sliding_attention; the config class forces it to "
            "full_attention (and warns), which the engine runs");
  // A shared full layer with no full layer before the shared ones: the engine's lookup fails.
  small["num_kv_shared_layers"] = 1;
  EXPECT_EQ(ConfigError(small),
            "config.json 'config.json': field 'num_kv_shared_layers' is 1: layer 3 shares the KV "
            "cache of the last full layer before layer 3, and there is none");
  small["num_kv_shared_layers"] = 5;
  EXPECT_EQ(ConfigError(small),
            "config.json 'config.json': field 'num_kv_shared_layers' is 5: layer 0 shares the KV "
            "cache of the last sliding layer before layer 0, and there is none");
}

// Vision-language models plan their language model: Qwen2.5-VL-7B's flat config.json (the text
// fields at the root, as it was published) and the same fields nested in text_config read as
// Qwen2.5-7B does (Qwen2: 3584 / 28 = 128-wide heads, no window without use_sliding_window, and
// the mrope entry scales nothing); Qwen3-VL-8B's text_config as Qwen3 (36 layers of 8 KV heads of
// 128) and Mistral-Small-3.1's as Mistral (its null window: none).
TEST(DenseModels, VisionLanguageModelsPlanTheirLanguageModel) {
  nlohmann::json qwen25_vl = Qwen25_7B();
  qwen25_vl["architectures"] = {"Qwen2_5_VLForConditionalGeneration"};
  qwen25_vl["model_type"] = "qwen2_5_vl";
  qwen25_vl["max_position_embeddings"] = 128000;
  qwen25_vl["rope_scaling"] = {{"type", "mrope"}, {"mrope_section", {16, 24, 24}}};
  qwen25_vl["vision_config"] = {{"depth", 32}, {"hidden_size", 1280}};
  auto plan = PlanConfig(qwen25_vl, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 128000);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.size(), 28u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 4 * 128 * 2);
  EXPECT_EQ(plan->pool.num_blocks, 23405);
  nlohmann::json nested = {{"architectures", {"Qwen2_5_VLForConditionalGeneration"}},
                           {"torch_dtype", "bfloat16"},
                           {"text_config", qwen25_vl}};
  nested["text_config"].erase("architectures");
  auto nested_plan = PlanConfig(nested, 1, 1, 20 * kGiB);
  ASSERT_TRUE(nested_plan.ok()) << nested_plan.status().ToString();
  EXPECT_EQ(nested_plan->groups[0].geometry.page_size_bytes(),
            plan->groups[0].geometry.page_size_bytes());
  EXPECT_EQ(nested_plan->pool.num_blocks, 23405);

  nlohmann::json qwen3_vl = nlohmann::json::parse(R"({
    "architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
    "text_config": {"model_type": "qwen3_vl_text", "dtype": "bfloat16", "head_dim": 128,
                    "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                    "num_hidden_layers": 36, "max_position_embeddings": 262144,
                    "rope_scaling": {"mrope_interleaved": true, "mrope_section": [24, 20, 20],
                                     "rope_type": "default"}}})");
  plan = PlanConfig(qwen3_vl, 2, 1, 20 * kGiB, 65536);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 65536);
  EXPECT_EQ(plan->groups[0].layers.size(), 36u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 4 * 128 * 2);
  qwen3_vl["architectures"] = {"Qwen3VLMoeForConditionalGeneration"};
  qwen3_vl["text_config"]["num_hidden_layers"] = 48;
  qwen3_vl["text_config"]["num_key_value_heads"] = 4;
  plan = PlanConfig(qwen3_vl, 4, 1, 20 * kGiB, 65536);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].layers.size(), 48u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 1 * 128 * 2);

  nlohmann::json mistral3 = nlohmann::json::parse(R"({
    "architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
    "torch_dtype": "bfloat16",
    "text_config": {"model_type": "mistral", "head_dim": 128, "hidden_size": 5120,
                    "num_attention_heads": 32, "num_key_value_heads": 8,
                    "num_hidden_layers": 40, "max_position_embeddings": 131072,
                    "sliding_window": null},
    "vision_config": {"model_type": "pixtral", "head_dim": 64, "hidden_size": 1024}})");
  plan = PlanConfig(mistral3, 1, 1, 24 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 131072);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.size(), 40u);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 0);
  EXPECT_EQ(plan->pool.num_blocks, 9830);  // 24 GiB / (40 x 64 KiB)
  mistral3.erase("text_config");
  EXPECT_EQ(ConfigError(mistral3), "config.json 'config.json': field 'text_config' is missing");
}

// OLMo 2 and OLMo 3 (the engine's olmo2.py serves both): heads of hidden_size /
// num_attention_heads whatever head_dim says, MHA when num_key_value_heads is null, sliding
// layers per layer_types. An Olmo-3-7B-shaped config (32 layers of 32 heads of 128, no
// layer_types: Olmo3Config's three sliding layers and a full one, its 4,096-token window; yarn 8
// over 8,192 positions) plans 24 sliding and 8 full layers, pages of 16 x 2 x 32 x 128 x 2 B =
// 256 KiB, in 4 groups of 8.
TEST(DenseModels, Olmo3SlidesThreeLayersInFour) {
  nlohmann::json olmo = nlohmann::json::parse(R"({
    "architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3", "torch_dtype": "bfloat16",
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": null, "head_dim": 64, "max_position_embeddings": 65536,
    "rope_scaling": {"rope_type": "yarn", "factor": 8.0,
                     "original_max_position_embeddings": 8192}})");
  auto plan = PlanConfig(olmo, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 4096);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 262144);
  EXPECT_EQ(plan->groups[0].layers, Layers({0, 4, 8, 12, 16, 20, 24, 28}));
  EXPECT_EQ(plan->groups[3].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[3].layers, Layers({3, 7, 11, 15, 19, 23, 27, 31}));
  EXPECT_EQ(plan->pool.num_blocks, 10240);  // 20 GiB / (8 x 256 KiB)
  plan = PlanConfig(olmo, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 65536);  // 8,192 x 8

  // OLMo 2 has no window unless its config states one; its positions default to 2,048.
  nlohmann::json olmo2 = nlohmann::json::parse(R"({
    "architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "torch_dtype": "bfloat16",
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8})");
  plan = PlanConfig(olmo2, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 2048);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 8 * 128 * 2);
}

// EXAONE 4 (the engine's exaone4.py): head_dim (else hidden_size / heads), sliding layers per
// layer_types with the config's window. An EXAONE-4.0-32B-shaped config (64 layers of 8 KV heads
// of 128, a 4,096-token window, no layer_types: Exaone4Config's list, a full layer every
// sliding_window_pattern = 4) plans 48 sliding and 16 full layers, 4 groups of 16; a string
// pattern, from which the config class derives nothing, is refused.
TEST(DenseModels, Exaone4SlidesPerItsPattern) {
  nlohmann::json exaone = nlohmann::json::parse(R"({
    "architectures": ["Exaone4ForCausalLM"], "model_type": "exaone4", "torch_dtype": "bfloat16",
    "hidden_size": 5120, "num_hidden_layers": 64, "num_attention_heads": 40,
    "num_key_value_heads": 8, "head_dim": 128, "sliding_window": 4096,
    "max_position_embeddings": 131072})");
  auto plan = PlanConfig(exaone, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 4096);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 8 * 128 * 2);
  EXPECT_EQ(plan->groups[3].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[3].layers.size(), 16u);
  EXPECT_EQ(plan->groups[3].layers.front(), "model.layers.3.self_attn");
  exaone["sliding_window_pattern"] = "LLLG";
  EXPECT_EQ(ConfigError(exaone),
            "config.json 'config.json': field 'sliding_window_pattern' is not an integer, from "
            "which alone the config class derives the layer kinds; state layer_types");
  exaone["sliding_window"] = nullptr;  // no window: every layer full
  plan = PlanConfig(exaone, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  // With layer_types stating sliding layers, a null window is each layer's None: the layers fall
  // back to the cache-wide window, which mixed types leave unset, so they are full too (was
  // refused as "'sliding_window' is missing").
  exaone.erase("sliding_window_pattern");
  for (int i = 0; i < 64; ++i) {
    exaone["layer_types"].push_back(i % 4 == 3 ? "full_attention" : "sliding_attention");
  }
  plan = PlanConfig(exaone, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "config.json 'config.json' names sliding_attention layers in layer_types but gives a "
            "null sliding_window: the engine's EXAONE 4 layers take that None as no window of "
            "their own and, with mixed layer types, find no cache-wide one, so every layer "
            "attends over the whole request");
  exaone["sliding_window"] = 0;  // a window of 0 would reach the attention as one: refused
  EXPECT_EQ(ConfigError(exaone),
            "config.json 'config.json': field 'sliding_window' must be in [1, 2147483647], got 0");
  exaone.erase("layer_types");
  exaone["sliding_window"] = nullptr;
  exaone.erase("num_key_value_heads");  // the config class's 32, which 40 heads do not divide
  EXPECT_EQ(ConfigError(exaone),
            "config.json 'config.json': field 'num_key_value_heads' is 32, which does not divide "
            "num_attention_heads 40");
}

// GLM-4 dense (GLM-4-0414; the engine's glm4.py): a GLM-4-32B-0414-shaped config (61 layers of 2
// KV heads of 128) plans one full group of 16 KiB pages, 21,487 blocks in 20 GiB. Absent fields
// take Glm4Config's defaults: 2 KV heads, head_dim 128 (not hidden / heads), 131072 positions.
TEST(DenseModels, Glm4TakesItsConfigClassDefaults) {
  nlohmann::json glm = nlohmann::json::parse(R"({
    "architectures": ["Glm4ForCausalLM"], "model_type": "glm4", "torch_dtype": "bfloat16",
    "hidden_size": 6144, "num_hidden_layers": 61, "num_attention_heads": 48,
    "num_key_value_heads": 2, "head_dim": 128, "max_position_embeddings": 32768})");
  auto plan = PlanConfig(glm, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 61u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16384);
  EXPECT_EQ(plan->pool.num_blocks, 21487);
  glm.erase("num_key_value_heads");
  glm.erase("head_dim");
  glm.erase("max_position_embeddings");
  glm["hidden_size"] = 4096;  // 4096 / 48 is no head size: head_dim's default is used
  plan = PlanConfig(glm, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 2);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);
  plan = PlanConfig(glm, 1, 1, 40 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 131072);
}

// Gemma (first generation): head_dim (256) is the head size, though 3072 / 16 is 192; absent
// fields take GemmaConfig's defaults (16 KV heads of 256, 8192 positions).
TEST(DenseModels, GemmaTakesHeadDimAndItsClassDefaults) {
  nlohmann::json gemma = nlohmann::json::parse(R"({
    "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "torch_dtype": "bfloat16",
    "hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
    "num_key_value_heads": 16, "head_dim": 256, "max_position_embeddings": 8192})");
  auto plan = PlanConfig(gemma, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 28u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 262144);  // 16 x 2 x 16 x 256 x 2 B
  EXPECT_EQ(plan->pool.num_blocks, 2925);                         // 20 GiB / (28 x 256 KiB)
  for (const char* key : {"num_key_value_heads", "head_dim", "max_position_embeddings"}) {
    gemma.erase(key);
  }
  plan = PlanConfig(gemma, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 8192);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 16);
  EXPECT_EQ(plan->groups[0].spec.head_size, 256);
  gemma["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 28; ++i) {
    gemma["layer_types"].push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
  }
  gemma["sliding_window"] = 4096;
  plan = PlanConfig(gemma, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  gemma.erase("layer_types");
  gemma["head_dim"] = nullptr;
  EXPECT_EQ(ConfigError(gemma),
            "config.json 'config.json': field 'head_dim' is null: the engine's Gemma attention "
            "takes head_dim as given and does not build without one; state it, or omit it for "
            "GemmaConfig's 256");
}

// Granite reads head_dim when stated (granite.py's getattr); Granite MoE always takes
// hidden_size / heads. Both are multi-head without num_key_value_heads, 2048 positions.
TEST(DenseModels, GraniteAndGraniteMoeHeads) {
  nlohmann::json granite = nlohmann::json::parse(R"({
    "architectures": ["GraniteForCausalLM"], "model_type": "granite", "torch_dtype": "bfloat16",
    "hidden_size": 4096, "num_hidden_layers": 40, "num_attention_heads": 32,
    "num_key_value_heads": 8, "max_position_embeddings": 131072, "rope_scaling": null})");
  auto plan = PlanConfig(granite, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].layers.size(), 40u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 65536);
  EXPECT_EQ(plan->pool.num_blocks, 8192);  // 20 GiB / (40 x 64 KiB)
  granite["head_dim"] = 256;
  plan = PlanConfig(granite, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.head_size, 256);
  granite.erase("head_dim");
  granite.erase("num_key_value_heads");
  granite.erase("max_position_embeddings");
  plan = PlanConfig(granite, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 2048);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 32);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);

  nlohmann::json moe = nlohmann::json::parse(R"({
    "architectures": ["GraniteMoeForCausalLM"], "model_type": "granitemoe",
    "torch_dtype": "bfloat16", "hidden_size": 1536, "num_hidden_layers": 32,
    "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128,
    "max_position_embeddings": 131072})");
  plan = PlanConfig(moe, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].spec.head_size, 64);  // 1536 / 24, whatever head_dim says
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 32768);
  EXPECT_EQ(plan->pool.num_blocks, 20480);  // 20 GiB / (32 x 32 KiB)
  moe["architectures"] = {"GraniteMoeSharedForCausalLM"};
  moe["num_key_value_heads"] = nullptr;
  plan = PlanConfig(moe, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 24);
  EXPECT_EQ(plan->pool.num_blocks, 6826);  // 20 GiB / (32 x 96 KiB)
}

// StarCoder2's layers pass no window of their own: the config's sliding_window (4096 in the
// released checkpoints) applies to every layer. Absent fields: 2 KV heads, 4096 positions.
TEST(DenseModels, Starcoder2SlidesEveryLayer) {
  nlohmann::json sc = nlohmann::json::parse(R"({
    "architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2",
    "torch_dtype": "bfloat16", "hidden_size": 6144, "num_hidden_layers": 40,
    "num_attention_heads": 48, "num_key_value_heads": 4, "sliding_window": 4096,
    "max_position_embeddings": 16384})");
  auto plan = PlanConfig(sc, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].spec.kind, CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 4096);
  EXPECT_EQ(plan->groups[0].layers.size(), 40u);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);  // 6144 / 48
  EXPECT_EQ(plan->pool.num_blocks, 16384);         // 20 GiB / (40 x 32 KiB)
  sc.erase("num_key_value_heads");
  sc.erase("max_position_embeddings");
  sc["sliding_window"] = nullptr;
  plan = PlanConfig(sc, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.kind, CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 2);
  EXPECT_EQ(plan->model.max_model_len, 4096);
}

// DeepSeek (v1) and InternLM2 load their config classes from the checkpoint's own code: kvtopo
// takes no default for them, so the fields must be stated. Both take hidden_size / heads.
TEST(DenseModels, RemoteCodeFamiliesStateTheirFields) {
  nlohmann::json ds = nlohmann::json::parse(R"({
    "architectures": ["DeepseekForCausalLM"], "model_type": "deepseek", "torch_dtype": "bfloat16",
    "hidden_size": 2048, "num_hidden_layers": 28, "num_attention_heads": 16,
    "num_key_value_heads": 16, "max_position_embeddings": 4096, "head_dim": 64})");
  auto plan = PlanConfig(ds, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);
  EXPECT_EQ(plan->pool.num_blocks, 5851);  // 20 GiB / (28 x 128 KiB)
  ds.erase("num_key_value_heads");
  EXPECT_EQ(ConfigError(ds), "config.json 'config.json': field 'num_key_value_heads' is missing");

  nlohmann::json internlm = nlohmann::json::parse(R"({
    "architectures": ["InternLM2ForCausalLM"], "model_type": "internlm2",
    "torch_dtype": "bfloat16", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 32768,
    "rope_scaling": {"type": "dynamic", "factor": 2.0}})");
  plan = PlanConfig(internlm, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 65536);  // dynamic scaling doubles the 32768
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 65536);
  EXPECT_EQ(plan->pool.num_blocks, 10240);
  internlm.erase("max_position_embeddings");
  EXPECT_EQ(ConfigError(internlm),
            "config.json 'config.json': field 'max_position_embeddings' is missing");
}

// ERNIE 4.5: Ernie4_5Config's head_dim is 128 when absent and hidden_size / heads when null; the
// MoE class has no head_dim and takes hidden_size / heads, with MTP layers after the trunk.
TEST(DenseModels, Ernie45HeadsAndMtp) {
  nlohmann::json ernie = nlohmann::json::parse(R"({
    "architectures": ["Ernie4_5ForCausalLM"], "model_type": "ernie4_5",
    "torch_dtype": "bfloat16", "hidden_size": 1024, "num_hidden_layers": 18,
    "num_attention_heads": 16, "num_key_value_heads": 2})");
  auto plan = PlanConfig(ernie, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16384);
  EXPECT_EQ(plan->pool.num_blocks, 72817);  // 20 GiB / (18 x 16 KiB)
  ernie["head_dim"] = nullptr;
  plan = PlanConfig(ernie, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.head_size, 64);
  plan = PlanConfig(ernie, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 131072);

  nlohmann::json moe = nlohmann::json::parse(R"({
    "architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe",
    "torch_dtype": "bfloat16", "hidden_size": 2560, "num_hidden_layers": 28,
    "num_attention_heads": 20, "num_key_value_heads": 4, "max_position_embeddings": 131072,
    "num_nextn_predict_layers": 1})");
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 32768;
  plan = PlanWith(moe, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 28u);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);  // 2560 / 20
  EXPECT_EQ(plan->pool.num_blocks, 23405);         // 20 GiB / (28 x 32 KiB)
  c.speculative =
      ParseSpeculativeConfig(R"({"method": "ernie_mtp", "num_speculative_tokens": 1})").value();
  plan = PlanWith(moe, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  size_t layers = 0;
  for (const PlannedGroup& g : plan->groups) layers += g.layers.size();
  EXPECT_EQ(layers, 29u);
  EXPECT_EQ(plan->pool.num_blocks, 22598);  // 20 GiB / (29 x 32 KiB)
}

// Seed-OSS: SeedOssConfig's defaults (8 KV heads, head_dim 128, 524288 positions); its model file
// asserts a window covers every layer when max_window_layers is stated.
TEST(DenseModels, SeedOssWindowsAllLayersOrNone) {
  nlohmann::json seed = nlohmann::json::parse(R"({
    "architectures": ["SeedOssForCausalLM"], "model_type": "seed_oss", "torch_dtype": "bfloat16",
    "hidden_size": 5120, "num_hidden_layers": 64, "num_attention_heads": 80})");
  auto plan = PlanConfig(seed, 1, 1, 20 * kGiB, 65536);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 8);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);  // not 5120 / 80
  EXPECT_EQ(plan->pool.num_blocks, 5120);          // 20 GiB / (64 x 64 KiB)
  plan = PlanConfig(seed, 1, 1, 200 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 524288);
  seed["sliding_window"] = 4096;
  seed["max_window_layers"] = 64;
  plan = PlanConfig(seed, 1, 1, 20 * kGiB, 65536);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.kind, CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].layers.size(), 64u);
  seed["max_window_layers"] = 48;
  EXPECT_EQ(ConfigError(seed),
            "config.json 'config.json': field 'max_window_layers' is 48 with sliding_window "
            "4096: the engine's Seed-OSS model windows all 64 layers or none (set "
            "max_window_layers to num_hidden_layers, or sliding_window to null)");
}

// GLM-4.1V and GLM-4.5V plan their text_config as GLM-4 and GLM-4.5 layers, with the text
// classes' defaults; GLM-4.5V's layers read head_dim, which its class does not default.
TEST(DenseModels, Glm4vPlansItsTextModel) {
  nlohmann::json glm = nlohmann::json::parse(R"({
    "architectures": ["Glm4vMoeForConditionalGeneration"], "model_type": "glm4v_moe",
    "text_config": {"model_type": "glm4v_moe_text", "torch_dtype": "bfloat16",
                    "hidden_size": 4096, "num_hidden_layers": 46, "num_attention_heads": 96,
                    "num_key_value_heads": 8, "head_dim": 128}})");
  auto plan = PlanConfig(glm, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 65536);
  EXPECT_EQ(plan->groups[0].layers.size(), 46u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 65536);
  EXPECT_EQ(plan->pool.num_blocks, 7123);  // 20 GiB / (46 x 64 KiB)
  glm["text_config"].erase("head_dim");
  EXPECT_EQ(ConfigError(glm), "config.json 'config.json': field 'text_config.head_dim' is missing");

  glm["architectures"] = {"Glm4vForConditionalGeneration"};
  glm["text_config"].erase("num_key_value_heads");
  glm["text_config"]["num_attention_heads"] = 32;
  plan = PlanConfig(glm, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 2);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);  // 4096 / 32: the dense text class has none
}

// LLaVA plans the language model of text_config's model_type with that text class's defaults:
// llava-1.5-7b-hf states little more than its positions (LlamaConfig: 32 layers, 32 heads of
// 128, multi-head); pixtral-12b's text model is a Mistral with its window off.
TEST(DenseModels, LlavaPlansItsTextModelWithTheTextClassDefaults) {
  nlohmann::json llava = nlohmann::json::parse(R"({
    "architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
    "torch_dtype": "float16", "vision_config": {"model_type": "clip_vision_model"},
    "text_config": {"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 4096,
                    "model_type": "llama", "rms_norm_eps": 1e-05, "vocab_size": 32064}})");
  auto plan = PlanConfig(llava, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 4096);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 32u);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 32);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);
  EXPECT_EQ(plan->pool.num_blocks, 2560);  // 20 GiB / (32 x 256 KiB)
  llava["text_config"].erase("max_position_embeddings");
  plan = PlanConfig(llava, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 2048);

  nlohmann::json pixtral = nlohmann::json::parse(R"({
    "architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
    "torch_dtype": "bfloat16",
    "text_config": {"model_type": "mistral", "hidden_size": 5120, "num_hidden_layers": 40,
                    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                    "max_position_embeddings": 1024000, "sliding_window": null}})");
  plan = PlanConfig(pixtral, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].spec.kind, CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);  // head_dim, not 5120 / 32
  EXPECT_EQ(plan->pool.num_blocks, 8192);          // 20 GiB / (40 x 64 KiB)
  pixtral["text_config"].erase("sliding_window");  // MistralConfig's 4096
  pixtral["text_config"].erase("num_key_value_heads");
  plan = PlanConfig(pixtral, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.kind, CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 4096);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 8);

  pixtral["text_config"]["model_type"] = "qwen2";
  EXPECT_EQ(ConfigError(pixtral),
            "config.json 'config.json': field 'text_config.model_type' is 'qwen2': kvtopo plans "
            "LLaVA language models of model type llama or mistral");
}

// MiniCPM: hidden_size / heads and the KV heads its (checkpoint-supplied) config states. HunYuan:
// head_dim when set and not 0, else attention_head_dim, else hidden_size / heads; cross-layer
// attention is refused.
TEST(DenseModels, MiniCpmAndHunYuan) {
  nlohmann::json minicpm = nlohmann::json::parse(R"({
    "architectures": ["MiniCPMForCausalLM"], "model_type": "minicpm", "torch_dtype": "bfloat16",
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 2, "max_position_embeddings": 32768})");
  auto plan = PlanConfig(minicpm, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16384);
  EXPECT_EQ(plan->pool.num_blocks, 40960);  // 20 GiB / (32 x 16 KiB)
  minicpm.erase("num_key_value_heads");
  EXPECT_EQ(ConfigError(minicpm),
            "config.json 'config.json': field 'num_key_value_heads' is missing");

  nlohmann::json hunyuan = nlohmann::json::parse(R"({
    "architectures": ["HunYuanDenseV1ForCausalLM"], "model_type": "hunyuan_v1_dense",
    "torch_dtype": "bfloat16", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "attention_head_dim": 128, "max_position_embeddings": 262144, "use_cla": false,
    "cla_share_factor": 2})");
  plan = PlanConfig(hunyuan, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].layers.size(), 32u);
  EXPECT_EQ(plan->pool.num_blocks, 10240);  // 20 GiB / (32 x 64 KiB)
  hunyuan["head_dim"] = nullptr;
  hunyuan["attention_head_dim"] = 96;
  plan = PlanConfig(hunyuan, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.head_size, 96);
  hunyuan["head_dim"] = 0;
  hunyuan.erase("attention_head_dim");
  hunyuan.erase("num_key_value_heads");
  hunyuan.erase("max_position_embeddings");
  hunyuan["architectures"] = {"HunYuanMoEV1ForCausalLM"};
  plan = PlanConfig(hunyuan, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);  // 4096 / 32
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 32);
  EXPECT_EQ(plan->model.max_model_len, 2048);
  hunyuan["use_cla"] = true;
  EXPECT_EQ(ConfigError(hunyuan),
            "config.json 'config.json': field 'use_cla' is true with cla_share_factor 2: layers "
            "that attend over an earlier layer's KV (cross-layer attention); kvtopo does not plan "
            "them");
}

// PaliGemma: a Gemma text model (GemmaConfig's defaults fill the rest: head_dim 256, 8192
// positions), or a Gemma 2 one (sliding and full layers by Gemma2Config's pattern).
TEST(DenseModels, PaliGemmaPlansItsGemmaTextModel) {
  nlohmann::json pali = nlohmann::json::parse(R"({
    "architectures": ["PaliGemmaForConditionalGeneration"], "model_type": "paligemma",
    "torch_dtype": "bfloat16", "vision_config": {"model_type": "siglip_vision_model"},
    "text_config": {"hidden_size": 2048, "intermediate_size": 16384, "model_type": "gemma",
                    "num_attention_heads": 8, "num_hidden_layers": 18,
                    "num_key_value_heads": 1, "vocab_size": 257216}})");
  auto plan = PlanConfig(pali, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 8192);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].spec.head_size, 256);  // not 2048 / 8
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16384);
  EXPECT_EQ(plan->pool.num_blocks, 72817);  // 20 GiB / (18 x 16 KiB)

  pali["text_config"] = nlohmann::json::parse(R"({
    "model_type": "gemma2", "hidden_size": 2304, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4})");
  plan = PlanConfig(pali, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 8192);
  int64_t sliding = 0;
  int64_t full = 0;
  for (const PlannedGroup& g : plan->groups) {
    (g.geometry.kind() == CacheKind::kSlidingWindow ? sliding : full) +=
        static_cast<int64_t>(g.layers.size());
  }
  EXPECT_EQ(sliding, 13);  // the even layers
  EXPECT_EQ(full, 13);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 65536);  // 16 x 2 x 4 x 256 x 2 B
  EXPECT_EQ(plan->pool.num_blocks, 25206);           // 20 GiB / (13 x 64 KiB): two groups of 13
  pali["text_config"].erase("num_key_value_heads");  // Gemma2Config's 4
  plan = PlanConfig(pali, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 4);
  EXPECT_EQ(plan->pool.num_blocks, 25206);

  pali["text_config"]["model_type"] = "llama";
  EXPECT_EQ(ConfigError(pali),
            "config.json 'config.json': field 'text_config.model_type' is 'llama': kvtopo plans "
            "PaliGemma language models of model type gemma or gemma2");
}

// InternVL's language model is the registered model its llm_config names (the engine remaps
// llm_config to text_config and builds llm_config.architectures[0] over it).
TEST(DenseModels, InternVlPlansTheLanguageModelItsLlmConfigNames) {
  nlohmann::json internvl = nlohmann::json::parse(R"({
    "architectures": ["InternVLChatModel"], "model_type": "internvl_chat",
    "torch_dtype": "bfloat16", "vision_config": {"architectures": ["InternVisionModel"]},
    "llm_config": {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                   "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
                   "num_key_value_heads": 4, "max_position_embeddings": 32768,
                   "sliding_window": 131072, "use_sliding_window": false}})");
  auto plan = PlanConfig(internvl, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  EXPECT_EQ(plan->groups[0].layers.size(), 28u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 32768);
  EXPECT_EQ(plan->pool.num_blocks, 23405);  // as Qwen2.5-7B: 20 GiB / (28 x 32 KiB)

  internvl["llm_config"] = nlohmann::json::parse(R"({
    "architectures": ["InternLM2ForCausalLM"], "model_type": "internlm2", "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "max_position_embeddings": 32768, "rope_scaling": {"type": "dynamic", "factor": 2.0}})");
  plan = PlanConfig(internvl, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 65536);
  EXPECT_EQ(plan->groups[0].layers.size(), 32u);
  EXPECT_EQ(plan->pool.num_blocks, 10240);  // 20 GiB / (32 x 64 KiB)

  internvl["llm_config"]["architectures"] = {"DFlashDraftModel"};
  const std::string message = ConfigError(internvl);
  const std::string prefix =
      "config.json 'config.json': field 'llm_config.architectures' names 'DFlashDraftModel', "
      "which kvtopo does not plan as the language model of InternVLChatModel; supported: ";
  EXPECT_EQ(message.substr(0, prefix.size()), prefix);
  EXPECT_NE(message.find("InternLM2ForCausalLM"), std::string::npos);
  EXPECT_EQ(message.find("Gemma3ForConditionalGeneration"), std::string::npos);
  internvl.erase("llm_config");
  EXPECT_EQ(ConfigError(internvl), "config.json 'config.json': field 'text_config' is missing");
}

// MiMo: Qwen2 layers (hidden_size / heads) and, under MTP, its num_nextn_predict_layers Qwen2
// decoder layers after the trunk.
TEST(DenseModels, MimoIsQwen2WithMtpLayers) {
  nlohmann::json mimo = nlohmann::json::parse(R"({
    "architectures": ["MiMoForCausalLM"], "model_type": "mimo", "torch_dtype": "bfloat16",
    "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32,
    "num_key_value_heads": 8, "max_position_embeddings": 32768, "head_dim": 64,
    "num_nextn_predict_layers": 1})");
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  auto plan = PlanWith(mimo, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);  // 4096 / 32, whatever head_dim says
  EXPECT_EQ(plan->groups[0].layers.size(), 36u);
  EXPECT_EQ(plan->pool.num_blocks, 9102);  // 20 GiB / (36 x 64 KiB)
  c.speculative =
      ParseSpeculativeConfig(
          R"({"method": "mtp", "model": "XiaomiMiMo/MiMo-7B-RL", "num_speculative_tokens": 1})")
          .value();
  plan = PlanWith(mimo, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.num_speculative_tokens, 1);
  size_t layers = 0;
  for (const PlannedGroup& g : plan->groups) layers += g.layers.size();
  EXPECT_EQ(layers, 37u);
  EXPECT_EQ(plan->pool.num_blocks, 8856);  // 20 GiB / (37 x 64 KiB)
  mimo.erase("num_key_value_heads");
  EXPECT_EQ(ConfigError(mimo), "config.json 'config.json': field 'num_key_value_heads' is missing");
}

// Gemma 4's MTP drafts with a separate assistant checkpoint (model type gemma4_assistant) whose
// layers read the target's KV cache: the plan is the target's, with the draft's lookahead.
TEST(DenseModels, Gemma4MtpAssistantKeepsNoCache) {
  const nlohmann::json gemma = nlohmann::json::parse(R"({
    "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
    "dtype": "bfloat16",
    "text_config": {"model_type": "gemma4_text", "hidden_size": 5376, "num_hidden_layers": 60,
                    "num_attention_heads": 32, "num_key_value_heads": 16,
                    "num_global_key_value_heads": 4, "attention_k_eq_v": true,
                    "head_dim": 256, "global_head_dim": 512, "sliding_window": 1024,
                    "max_position_embeddings": 262144}})");
  const auto dir = std::filesystem::temp_directory_path();
  const auto assistant = dir / "kvtopo_gemma4_assistant.json";
  std::ofstream(assistant) << R"({"architectures": ["Gemma4AssistantForCausalLM"],
                                  "model_type": "gemma4_assistant"})";
  const auto target = dir / "kvtopo_gemma4_target.json";
  std::ofstream(target) << gemma.dump();
  auto with = [&](const std::string& spec) {
    LaunchConfig c;
    c.kv_cache_memory_bytes = 20 * kGiB;
    c.cache.max_model_len = 32768;
    c.speculative = ParseSpeculativeConfig(spec).value();
    return PlanWith(gemma, c);
  };
  // Without a count, the engine's method detection raises before it would take n_predict.
  auto plan = with(R"({"method": "gemma4_mtp", "model": ")" + assistant.string() + R"("})");
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(),
            kMtpCountUnset +
                "the engine sets a gemma4_assistant "
                "draft's n_predict to 1, so any count runs its layers once a draft token");
  plan = with(R"({"method": "gemma4_mtp", "num_speculative_tokens": 1, "model": ")" +
              assistant.string() + R"("})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.num_speculative_tokens, 1);
  EXPECT_EQ(plan->model.num_lookahead_tokens, 1);
  ASSERT_EQ(plan->groups.size(), 6u);
  for (const PlannedGroup& g : plan->groups) EXPECT_EQ(g.role, Role::kTarget);
  EXPECT_EQ(plan->pool.num_blocks, 8192);  // as without a draft
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].severity, Severity::kWarning);
  EXPECT_EQ(plan->diagnostics[0].message,
            "--speculative-config method 'gemma4_mtp': the engine warns that it is deprecated and "
            "replaced with mtp, and runs it as method 'mtp'");
  plan = with(R"({"method": "gemma4_mtp", "num_speculative_tokens": 2, "model": ")" +
              assistant.string() + R"("})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "mtp-token-count"),
            "num_speculative_tokens 2: the engine warns that it runs the same MTP layer several "
            "times a step, which may lower the acceptance rate; the gemma4_assistant draft's "
            "layers run 2 times a step");

  // As a draft model, the assistant runs as the target's MTP assistant (method detection).
  plan = with(R"({"method": "draft_model", "num_speculative_tokens": 1, "model": ")" +
              assistant.string() + R"("})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.speculative_method, "mtp");
  EXPECT_EQ(plan->pool.num_blocks, 8192);
  EXPECT_EQ(DiagnosticMessage(*plan, "speculative-method-detected"),
            "--speculative-config method 'draft_model': draft '" + assistant.string() +
                "': its config (model type gemma4_assistant) becomes model type gemma4_mtp "
                "under SpeculativeConfig's hf_config_override, one of the engine's MTP types, "
                "so SpeculativeConfig's method detection runs it as method 'mtp' over that "
                "checkpoint's MTP layers, not as a draft model; kvtopo plans it as the target's "
                "MTP assistant");

  plan = with(R"({"method": "mtp", "model": "google/gemma-4-31B-it-assistant",
                  "num_speculative_tokens": 3})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.num_lookahead_tokens, 3);
  ASSERT_EQ(plan->diagnostics.size(), 2u);  // and the engine's mtp-token-count warning
  EXPECT_EQ(DiagnosticMessage(*plan, "mtp-assistant-unread"),
            "--speculative-config 'model' 'google/gemma-4-31B-it-assistant' is not a config "
            "kvtopo can read; it is taken as Gemma4ForConditionalGeneration's MTP assistant "
            "(model type gemma4_assistant), whose layers read the target's KV cache and keep "
            "none of their own");

  plan = with(R"({"method": "mtp", "model": ")" + target.string() + R"("})");
  EXPECT_EQ(plan.status().message(),
            "--speculative-config: draft '" + target.string() +
                "' has model type 'gemma4', not gemma4_assistant: method 'mtp' on "
                "Gemma4ForConditionalGeneration drafts with its assistant checkpoint");
  plan = with(R"({"method": "mtp", "num_speculative_tokens": 2})");
  EXPECT_EQ(plan.status().message(),
            "--speculative-config: method 'mtp' needs a 'model' here: config.json 'config.json' "
            "has no MTP layers; Gemma4ForConditionalGeneration drafts with its assistant "
            "checkpoint (model type gemma4_assistant), whose layers read the target's KV cache");
}

namespace {
// A config of the corpus planned as one group of full-attention layers: at 1,024 tokens in 20 GiB
// (its layers, K/V heads, head size and blocks), and at its default length.
struct OneGroupCase {
  const char* config;
  int64_t layers, kv_heads, head, max_model_len, blocks;
  const char* backend = "";  // --attention-backend; "": the default
};
void ExpectOneFullGroup(const OneGroupCase& c) {
  SCOPED_TRACE(c.config);
  LaunchConfig launch;
  launch.cache.attention_backend = c.backend;
  launch.cache.max_model_len = 1024;
  launch.kv_cache_memory_bytes = 20 * kGiB;
  auto plan = PlanWith(CorpusConfig(c.config), launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.size(), static_cast<size_t>(c.layers));
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, c.kv_heads);
  EXPECT_EQ(plan->groups[0].spec.head_size, c.head);
  EXPECT_EQ(plan->pool.num_blocks, c.blocks);
  launch.cache.max_model_len = 0;
  plan = PlanWith(CorpusConfig(c.config), launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, c.max_model_len);
}

// The layers of the plan's groups of `kind`, or of every group.
size_t LayerCount(const Plan& plan, std::optional<CacheKind> kind = std::nullopt) {
  size_t n = 0;
  for (const PlannedGroup& g : plan.groups) {
    if (!kind || g.geometry.kind() == *kind) n += g.layers.size();
  }
  return n;
}
}  // namespace

// OLMoE: hidden_size / heads whatever head_dim says, multi-head and 4096 positions by default
// (OlmoeConfig). Phi: every layer multi-head whatever num_key_value_heads says. Phi-3.5-MoE: the
// config's window on every layer (its model file passes none per layer), 8 KV heads by default.
TEST(DenseModels, OlmoePhiAndPhiMoeHeads) {
  nlohmann::json olmoe = CorpusConfig("olmoe-1b-7b");
  olmoe["head_dim"] = 64;
  olmoe.erase("num_key_value_heads");
  olmoe.erase("max_position_embeddings");
  auto plan = PlanConfig(olmoe, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 4096);
  EXPECT_EQ(plan->groups[0].layers.size(), 16u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 16 * 128 * 2);
  EXPECT_EQ(plan->pool.num_blocks, 10240);  // 20 GiB / (16 x 128 KiB)

  nlohmann::json phi = CorpusConfig("phi-2");
  phi["num_key_value_heads"] = 8;
  plan = PlanConfig(phi, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 2048);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 32);
  EXPECT_EQ(plan->groups[0].spec.head_size, 80);  // 2560 / 32
  EXPECT_EQ(plan->pool.num_blocks, 4096);         // 20 GiB / (32 x 160 KiB)

  nlohmann::json phimoe = CorpusConfig("phi-3.5-moe");
  plan = PlanConfig(phimoe, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 4096);  // LongRoPE: original_max_position_embeddings
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 131072);
  EXPECT_EQ(plan->groups[0].layers.size(), 32u);
  EXPECT_EQ(plan->pool.num_blocks, 10240);  // 20 GiB / (32 x 64 KiB)
  phimoe.erase("sliding_window");
  phimoe.erase("num_key_value_heads");
  phimoe["head_dim"] = nullptr;
  plan = PlanConfig(phimoe, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 8);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);
}

// AFMoE (Trinity): the kind of each layer from layer_types, which the engine's model needs; the
// fork's AfmoeConfig fills head_dim 128, the 2048 window and multi-head. Apertus and Arcee:
// multi-head without num_key_value_heads, 65536 and 4096 positions by default.
TEST(DenseModels, AfmoeApertusAndArcee) {
  nlohmann::json trinity = CorpusConfig("trinity-mini");
  auto plan = PlanConfig(trinity, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 4u);
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(plan->groups[g].geometry.kind(), CacheKind::kSlidingWindow);
    EXPECT_EQ(plan->groups[g].spec.sliding_window, 2048);
  }
  EXPECT_EQ(plan->groups[3].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[3].layers.size(), 8u);
  EXPECT_EQ(plan->groups[3].geometry.page_size_bytes(), 16 * 2 * 4 * 128 * 2);
  EXPECT_EQ(plan->pool.num_blocks, 81920);  // 20 GiB / (8 x 32 KiB)
  trinity.erase("head_dim");
  trinity.erase("sliding_window");
  trinity.erase("num_key_value_heads");
  plan = PlanConfig(trinity, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 2048);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 32);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);
  trinity.erase("layer_types");
  EXPECT_EQ(ConfigError(trinity),
            "config.json 'config.json': field 'layer_types' is not set: the engine's AFMoE model "
            "reads each layer's kind from it and does not build without it");

  nlohmann::json apertus = CorpusConfig("apertus-8b");
  plan = PlanConfig(apertus, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 65536);  // llama3 scaling: already counted
  EXPECT_EQ(plan->pool.num_blocks, 10240);      // 20 GiB / (32 x 64 KiB)
  apertus.erase("num_key_value_heads");
  apertus.erase("max_position_embeddings");
  apertus.erase("rope_scaling");
  apertus["architectures"] = {"ArceeForCausalLM"};
  plan = PlanConfig(apertus, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 4096);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 32);
  apertus["architectures"] = {"ApertusForCausalLM"};
  apertus["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 32; ++i) {
    apertus["layer_types"].push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
  }
  apertus["sliding_window"] = 4096;
  plan = PlanConfig(apertus, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 65536);
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[1].geometry.kind(), CacheKind::kFullAttention);
}

// Mistral 3's text model by text_config.model_type: Ministral 3 (Ministral3Config: head_dim 128,
// no window) or Mistral (MistralConfig: hidden_size / heads, a 4096 window on every layer).
TEST(DenseModels, Ministral3TextModel) {
  nlohmann::json ministral = CorpusConfig("ministral-3-8b");
  auto plan = PlanConfig(ministral, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  EXPECT_EQ(plan->groups[0].layers.size(), 34u);
  EXPECT_EQ(plan->pool.num_blocks, 9637);  // 20 GiB / (34 x 64 KiB)
  nlohmann::json& text = ministral["text_config"];
  text.erase("head_dim");
  text.erase("sliding_window");
  text.erase("num_key_value_heads");
  text["hidden_size"] = 5120;
  plan = PlanConfig(ministral, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 8);
  text["model_type"] = "mistral";
  plan = PlanConfig(ministral, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 4096);
  EXPECT_EQ(plan->groups[0].spec.head_size, 160);  // 5120 / 32
  text["model_type"] = "llama";
  EXPECT_EQ(ConfigError(ministral),
            "config.json 'config.json': field 'text_config.model_type' is 'llama': kvtopo plans "
            "Mistral 3 language models of model type mistral or ministral3");

  nlohmann::json root = CorpusConfig("ministral-3-8b")["text_config"];
  root["architectures"] = {"Ministral3ForCausalLM"};
  root["torch_dtype"] = "bfloat16";
  plan = PlanConfig(root, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.num_blocks, 9637);
  EXPECT_EQ(plan->model.max_model_len, 32768);
}

// MiniCPM3: each layer caches full keys and values for every query head, qk_nope_head_dim +
// qk_rope_head_dim wide (values padded), whatever num_key_value_heads says.
TEST(DenseModels, MiniCpm3CachesFullHeads) {
  nlohmann::json minicpm3 = CorpusConfig("minicpm3-4b");
  minicpm3["num_key_value_heads"] = 8;
  auto plan = PlanConfig(minicpm3, 1, 1, 20 * kGiB, 4096);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 62u);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 40);
  EXPECT_EQ(plan->groups[0].spec.head_size, 96);  // 64 + 32
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 40 * 96 * 2);
  EXPECT_EQ(plan->pool.num_blocks, 1409);  // 20 GiB / (62 x 240 KiB)
  minicpm3.erase("qk_nope_head_dim");
  EXPECT_EQ(ConfigError(minicpm3),
            "config.json 'config.json': field 'qk_nope_head_dim' is missing");
}

// GLM-4.7-Flash (Glm4MoeLiteForCausalLM): DeepSeek's MLA, one 576-wide latent row (kv_lora_rank
// 512 + qk_rope_head_dim 64) per layer, plus its num_nextn_predict_layers MTP layer under MTP.
TEST(DenseModels, Glm47FlashIsMlaWithMtp) {
  nlohmann::json glm = CorpusConfig("glm-4.7-flash");
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  auto plan = PlanWith(glm, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 202752);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kMla);
  EXPECT_EQ(plan->groups[0].layers.size(), 47u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 576 * 2);
  EXPECT_EQ(plan->pool.num_blocks, 24789);  // 20 GiB / (47 x 18 KiB)
  c.speculative =
      ParseSpeculativeConfig(R"({"method": "glm4_moe_lite_mtp", "model": "zai-org/GLM-4.7-Flash",
                                  "num_speculative_tokens": 1})")
          .value();
  plan = PlanWith(glm, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.num_speculative_tokens, 1);
  EXPECT_EQ(plan->groups[0].layers.size(), 48u);
  EXPECT_EQ(plan->pool.num_blocks, 24272);  // 20 GiB / (48 x 18 KiB)
  glm.erase("kv_lora_rank");
  EXPECT_EQ(ConfigError(glm), "config.json 'config.json': field 'kv_lora_rank' is missing");
}

// Qwen3-Omni and Qwen2.5-Omni: the engine serves the thinker, whose language model (Qwen3-MoE or
// Qwen2 layers) is thinker_config.text_config; the dtype may sit on the root.
TEST(DenseModels, OmniPlansTheThinkersTextModel) {
  nlohmann::json omni = CorpusConfig("qwen3-omni-30b-a3b");
  auto plan = PlanConfig(omni, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 65536);
  EXPECT_EQ(plan->groups[0].layers.size(), 48u);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 4 * 128 * 2);
  EXPECT_EQ(plan->pool.num_blocks, 13653);  // 20 GiB / (48 x 32 KiB)
  omni["thinker_config"]["text_config"].erase("num_key_value_heads");
  EXPECT_EQ(ConfigError(omni),
            "config.json 'config.json': field 'thinker_config.text_config.num_key_value_heads' is "
            "missing");
  omni.erase("thinker_config");
  EXPECT_EQ(ConfigError(omni), "config.json 'config.json': field 'thinker_config' is missing");

  nlohmann::json omni25 = CorpusConfig("qwen2.5-omni-7b");
  plan = PlanConfig(omni25, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 32768);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);  // use_sliding_window off
  EXPECT_EQ(plan->pool.num_blocks, 23405);  // as Qwen2.5-7B: 20 GiB / (28 x 32 KiB)
  // No dtype anywhere: float32, as the engine takes it without the weights, run as bfloat16.
  omni25.erase("torch_dtype");
  plan = PlanConfig(omni25, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.num_blocks, 23405);
  EXPECT_EQ(DiagnosticMessage(*plan, "model-dtype"),
            "'config.json' states no torch_dtype: the engine takes its weights' dtype (float32 "
            "when it cannot read them), and kvtopo, which reads no weights, float32; the engine "
            "runs a float32 model as bfloat16 (--dtype auto), so an auto KV cache stores "
            "bfloat16; set --dtype float32 to keep float32");
}

// EXAONE MoE (K-EXAONE): the trunk as EXAONE 4 (three sliding layers in four here, window 128);
// its MTP layer j takes layer_types[j] (sliding for layer 0) and caches in the model's dtype
// whatever --kv-cache-dtype says, since the engine builds it without the cache config.
TEST(DenseModels, ExaoneMoeMtpLayerSlidesAndKeepsTheModelDtype) {
  nlohmann::json exaone = CorpusConfig("k-exaone-236b");
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 32768;
  auto plan = PlanWith(exaone, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 128);
  EXPECT_EQ(plan->groups[3].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->pool.num_blocks, 27306);  // 20 GiB / (12 x 64 KiB)

  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  c.speculative = ParseSpeculativeConfig(
                      R"({"method": "exaone_moe_mtp", "model": "LGAI-EXAONE/K-EXAONE-236B-A23B",
                        "num_speculative_tokens": 1})")
                      .value();
  plan = PlanWith(exaone, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.num_speculative_tokens, 1);
  ASSERT_EQ(plan->groups.size(), 49u);
  const PlannedGroup& mtp = plan->groups.back();
  EXPECT_EQ(mtp.role, Role::kDraft);
  EXPECT_EQ(mtp.geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(mtp.layers, std::vector<std::string>{"model.layers.48.self_attn"});
  EXPECT_EQ(mtp.geometry.block_size(), 16);
  EXPECT_EQ(mtp.geometry.page_size_bytes(), 16 * 2 * 8 * 128 * 2);  // bfloat16
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 32);             // fp8, pages unified
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 65536);
  EXPECT_EQ(DiagnosticMessage(*plan, "mtp-cache-dtype-model"),
            "the MTP layers of 'config.json' cache in the model's dtype, not fp8: the engine "
            "builds them without the cache config");

  exaone["num_nextn_predict_layers"] = 49;
  EXPECT_EQ(ConfigError(exaone),
            "config.json 'config.json': field 'num_nextn_predict_layers' must be in [0, 48], got "
            "49");
}

// Multi-head families (OPT, GPT-NeoX, the first Qwen, GPT-2, GPT-J) and GPTBigCode's multi-query
// layers; GPT-2-style configs name their fields n_embd, n_head, n_layer and n_positions, and
// gpt2's states no torch_dtype (float32, as the engine takes it without the weights).
TEST(DenseModels, MultiHeadAndGpt2StyleFamilies) {
  // Blocks in 20 GiB: 20 GiB / (layers x 16 x 2 x kv_heads x head x 2 B).
  const OneGroupCase cases[] = {
      {"opt-125m", 12, 12, 64, 2048, 36408},    {"gpt2", 12, 12, 64, 1024, 36408},
      {"gpt-j-6b", 28, 16, 256, 2048, 2925},    {"starcoderbase-1b", 24, 1, 128, 8192, 109226},
      {"pythia-1.4b", 24, 16, 128, 2048, 6826}, {"qwen-7b", 32, 32, 128, 8192, 2560},
      {"dots.llm1", 62, 32, 128, 32768, 1321},  {"ling-mini-2.0", 20, 4, 128, 32768, 32768},
  };
  for (const OneGroupCase& c : cases) ExpectOneFullGroup(c);

  // The GPT-2 names win over the usual ones; absent, GPT2Config's defaults.
  nlohmann::json gpt2 = CorpusConfig("gpt2");
  gpt2["num_attention_heads"] = 6;
  gpt2.erase("n_layer");
  gpt2.erase("n_positions");
  gpt2["n_head"] = 24;
  auto plan = PlanConfig(gpt2, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.head_size, 32);  // 768 / 24
  EXPECT_EQ(plan->groups[0].layers.size(), 12u);
  EXPECT_EQ(plan->model.max_model_len, 1024);
  gpt2["n_embd"] = "768";
  EXPECT_EQ(ConfigError(gpt2),
            "config.json 'config.json': field 'n_embd' must be an integer, got \"768\"");

  // GPTBigCode: multi-query unless the config says otherwise, whatever num_key_value_heads says.
  nlohmann::json bigcode = CorpusConfig("starcoderbase-1b");
  bigcode["num_key_value_heads"] = 4;
  plan = PlanConfig(bigcode, 1, 1, 20 * kGiB, 2048);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 1);
  bigcode["multi_query"] = false;
  plan = PlanConfig(bigcode, 1, 1, 20 * kGiB, 2048);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 16);

  // dots.llm1 without sliding_window takes Dots1Config's 4096 window on every layer; one whose
  // max_window_layers leaves layers unwindowed is refused.
  nlohmann::json dots = CorpusConfig("dots.llm1");
  dots.erase("sliding_window");
  plan = PlanConfig(dots, 1, 1, 20 * kGiB, 2048);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 4096);
  dots["max_window_layers"] = 28;
  EXPECT_EQ(ConfigError(dots),
            "config.json 'config.json': field 'max_window_layers' is 28 with sliding_window "
            "4096: the engine's dots.llm1 model windows all 62 layers or none (set "
            "max_window_layers to num_hidden_layers, or sliding_window to null)");
}

// MiMo-V2-Flash: hybrid_layer_pattern picks full (4 KV heads) or sliding-window (8 KV heads,
// window 128) attention per layer, both with 192-wide keys and 128-wide values on
// FLASH_ATTN_DIFFKV; the layers cache in the model's dtype whatever --kv-cache-dtype says.
TEST(DenseModels, MimoV2FlashPagesKeysAndValuesOfTheirOwnWidths) {
  nlohmann::json mimo = CorpusConfig("mimo-v2-flash");
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 32768;
  for (const KvCacheDtype dtype : {KvCacheDtype::kAuto, KvCacheDtype::kFp8}) {
    c.cache.kv_cache_dtype = dtype;
    auto plan = PlanWith(mimo, c);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
    ASSERT_EQ(plan->groups.size(), 6u);
    const PlannedGroup& full = plan->groups[0];
    EXPECT_EQ(full.geometry.kind(), CacheKind::kFullAttention);
    EXPECT_EQ(full.layers.size(), 9u);
    EXPECT_EQ(full.spec.num_kv_heads, 4);
    EXPECT_EQ(full.spec.head_size, 192);
    EXPECT_EQ(full.spec.head_size_v, 128);
    EXPECT_EQ(full.geometry.block_size(), 32);  // 16 x 4 x (192 + 128) x 2 B, doubled to match
    EXPECT_EQ(full.geometry.page_size_bytes(), 81920);
    EXPECT_EQ(full.backends, std::vector<std::string>{"FLASH_ATTN_DIFFKV"});
    const PlannedGroup& swa = plan->groups[1];
    EXPECT_EQ(swa.geometry.kind(), CacheKind::kSlidingWindow);
    EXPECT_EQ(swa.spec.sliding_window, 128);
    EXPECT_EQ(swa.spec.num_kv_heads, 8);
    EXPECT_EQ(swa.geometry.page_size_bytes(), 16 * 8 * (192 + 128) * 2);
    EXPECT_EQ(plan->pool.num_blocks, 29127);  // 20 GiB / (9 x 80 KiB)
    EXPECT_EQ(DiagnosticMessage(*plan, "kv-cache-dtype-model"),
              dtype == KvCacheDtype::kFp8
                  ? "the attention layers of 'config.json' cache in the model's dtype, not fp8: "
                    "the engine builds them without the cache config"
                  : "");
  }

  mimo["hybrid_layer_pattern"][3] = 2;
  EXPECT_EQ(ConfigError(mimo),
            "config.json 'config.json': field 'hybrid_layer_pattern' entry 3 is 2; accepted: 0 "
            "(full attention), 1 (sliding window)");
  mimo["hybrid_layer_pattern"].erase(3);
  EXPECT_EQ(ConfigError(mimo),
            "config.json 'config.json': field 'hybrid_layer_pattern' has 47 entries but "
            "num_hidden_layers is 48");
}

// Step-3.5-Flash: sliding layers per layer_types (window 512) with attention_other_setting's
// heads; Step3p5Config's max_seq_len (4096) bounds the length when the config leaves it out; the
// engine's config class keeps num_hidden_layers entries of layer_types, so its MTP layers,
// which read their own entries, fail to build: an MTP launch is refused.
TEST(DenseModels, Step3p5SlidingLayersAndItsMtpThatCannotBuild) {
  nlohmann::json step = CorpusConfig("step-3.5-flash");
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 32768;
  auto plan = PlanWith(step, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  for (const PlannedGroup& g : plan->groups) {
    if (g.geometry.kind() == CacheKind::kSlidingWindow) {
      EXPECT_EQ(g.spec.sliding_window, 512);
    }
    EXPECT_EQ(g.geometry.page_size_bytes(), 16 * 2 * 8 * 128 * 2);
  }
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 12u);  // layers 0, 4, ..., 44
  EXPECT_EQ(LayerCount(*plan, CacheKind::kSlidingWindow), 33u);

  c.speculative =
      ParseSpeculativeConfig(R"({"method": "step3p5_mtp", "num_speculative_tokens": 3})").value();
  plan = PlanWith(step, c);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "--speculative-config method 'mtp': config.json 'config.json' gives layer_types, of "
            "which the engine's Step3p5Config keeps the first num_hidden_layers (45); its MTP "
            "layers, 45 to 47, look up their own index in it, which fails (IndexError) as the "
            "engine builds the draft; kvtopo does not plan it");
  // Without layer_types the even layers slide, the MTP layers too.
  step.erase("layer_types");
  plan = PlanWith(step, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(LayerCount(*plan), 48u);

  c.speculative.reset();
  c.cache.max_model_len = 0;
  step.erase("max_seq_len");
  plan = PlanWith(step, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 4096);
  EXPECT_EQ(DiagnosticMessage(*plan, "config-length-default"),
            "config.json 'config.json' states no max_seq_len: Step3p5Config's 4096 applies, and "
            "the engine takes the smallest length field, so its maximum length is 4096, not "
            "max_position_embeddings 262144");
}

// DeciLM (Llama-Nemotron): each layer's attention as block_configs says; no_op layers keep no
// cache, and the K/V heads are num_attention_heads / n_heads_in_group per layer (8 and 4 here),
// so the layers share one block id with pages of their own sizes.
TEST(DenseModels, DeciLmLayersTakeTheirBlockConfigs) {
  nlohmann::json deci = CorpusConfig("llama-nemotron-super-49b");
  LaunchConfig c;
  c.model = "config.json";
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 32768;
  auto specs = BuildModelCacheSpecsFromJson(deci, c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->layers.size(), 72u);  // 80 less the 8 no_op attentions (40 to 47)
  EXPECT_EQ(specs->layers[39].name, "model.layers.39.self_attn");
  EXPECT_EQ(specs->layers[39].num_kv_heads, 8);
  EXPECT_EQ(specs->layers[40].name, "model.layers.48.self_attn");
  EXPECT_EQ(specs->layers[56].name, "model.layers.64.self_attn");
  EXPECT_EQ(specs->layers[56].num_kv_heads, 4);
  EXPECT_EQ(specs->layers[56].head_size, 128);  // 8192 / 64
  auto plan = PlanWith(deci, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 72u);
  EXPECT_EQ(plan->pool.num_blocks, 5120);  // 20 GiB / (56 x 64 KiB + 16 x 32 KiB)

  deci["block_configs"][64]["attention"]["n_heads_in_group"] = 3;
  EXPECT_EQ(ConfigError(deci),
            "config.json 'config.json': field 'block_configs[64].attention.n_heads_in_group' is "
            "3, which does not divide num_attention_heads 64");
  deci["block_configs"][64]["attention"]["replace_with_linear"] = true;
  EXPECT_EQ(ConfigError(deci),
            "config.json 'config.json': field 'block_configs[64].attention.replace_with_linear' "
            "is true: an attention replaced by a linear layer, which the engine's DeciLM model "
            "does not build");
  deci["block_configs"].erase(79);
  EXPECT_EQ(ConfigError(deci),
            "config.json 'config.json': field 'block_configs' has 79 entries but "
            "num_hidden_layers is 80");
}

// Falcon: one K/V head for a multi-query model (falcon-7b), num_kv_heads with the new decoder
// architecture; the first checkpoints' RefinedWeb configs name the fields n_head, n_layer and
// n_head_kv, and a hidden size of 8192 turns the new architecture on (falcon-40b).
TEST(DenseModels, FalconKvHeadsByArchitecture) {
  nlohmann::json falcon = CorpusConfig("falcon-7b");
  auto plan = PlanConfig(falcon, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 2048);
  EXPECT_EQ(plan->groups[0].layers.size(), 32u);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 1);
  EXPECT_EQ(plan->groups[0].spec.head_size, 64);  // 4544 / 71
  EXPECT_EQ(plan->pool.num_blocks, 163840);       // 20 GiB / (32 x 4 KiB)
  falcon["multi_query"] = false;
  plan = PlanConfig(falcon, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 71);

  nlohmann::json rw = CorpusConfig("falcon-40b-rw");
  plan = PlanConfig(rw, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].layers.size(), 60u);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 8);
  EXPECT_EQ(plan->pool.num_blocks, 10922);  // 20 GiB / (60 x 32 KiB)
  rw.erase("n_head_kv");
  plan = PlanConfig(rw, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 1);  // RWConfig's n_head_kv
  nlohmann::json converted = {{"architectures", {"FalconForCausalLM"}},
                              {"model_type", "falcon"},
                              {"torch_dtype", "bfloat16"},
                              {"hidden_size", 8192},
                              {"num_attention_heads", 128},
                              {"num_hidden_layers", 60},
                              {"new_decoder_architecture", true}};
  plan = PlanConfig(converted, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 128);  // FalconConfig: num_kv_heads = the heads
  converted["num_kv_heads"] = 8;
  plan = PlanConfig(converted, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.num_blocks, 10922);
}

// Cohere2 MoE without layer_types: Cohere2MoeConfig's list, the first_k_dense_replace prefix (one
// layer here) full, then a full layer in four; a null window leaves every layer full.
TEST(DenseModels, Cohere2MoeDerivesItsLayerTypes) {
  nlohmann::json cohere = CorpusConfig("cohere2-moe");
  auto plan = PlanConfig(cohere, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 13u);  // layer 0, then 4, 8, ..., 48
  EXPECT_EQ(LayerCount(*plan, CacheKind::kSlidingWindow), 36u);
  EXPECT_EQ(plan->groups[1].spec.sliding_window, 4096);
  EXPECT_EQ(plan->pool.num_blocks, 50412);  // 20 GiB / (13 x 32 KiB)
  cohere["first_k_dense_replace"] = 0;
  plan = PlanConfig(cohere, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 12u);  // 3, 7, ..., 47
  cohere["sliding_window"] = nullptr;
  plan = PlanConfig(cohere, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.size(), 49u);
}

// Families that are one record of the dense reader (or a small reader beside it), each planned
// from a config shaped as the named checkpoint's at 1,024 tokens in 20 GiB: blocks of 20 GiB /
// (layers x 16 x 2 x KV heads x head x 2 B; float32 configs run bfloat16 under --dtype auto).
TEST(DenseModels, LlamaLikeAndOneGroupFamilies) {
  const OneGroupCase cases[] = {
      {"glm-4-9b-hf", 40, 2, 128, 131072, 32768},
      {"minitron-4b", 32, 8, 128, 4096, 10240},
      {"olmo-1b-hf", 16, 16, 128, 2048, 10240},
      {"flexolmo-7x7b", 32, 32, 128, 4096, 2560},
      {"stablelm-3b-4e1t", 32, 32, 80, 4096, 4096},
      {"persimmon-8b", 36, 64, 64, 16384, 2275},
      {"exaone-3.5-7.8b", 32, 8, 128, 32768, 10240},
      {"internlm-20b", 60, 40, 128, 4096, 1092},
      {"internlm3-8b", 48, 2, 128, 196608, 27306},
      {"baichuan2-7b", 32, 32, 128, 4096, 2560},
      {"baichuan2-13b", 40, 40, 128, 4096, 1638},
      {"xverse-7b", 32, 32, 128, 8192, 2560},
      {"orion-14b", 40, 40, 128, 4096, 1638},
      {"aquila2-7b", 32, 32, 128, 2048, 2560},
      {"telechat2-115b", 96, 8, 128, 8192, 3413},
      {"jais-13b", 40, 40, 128, 2048, 1638},
      {"jais-2-8b", 32, 26, 128, 8192, 3150},
      {"bloom-560m", 24, 16, 64, 2048, 13653},
      {"mpt-7b", 32, 32, 128, 2048, 2560},
      {"dbrx-instruct", 40, 8, 128, 32768, 8192},
      {"arctic", 35, 8, 128, 4096, 9362},
      {"grok-1", 64, 8, 128, 8192, 5120},
      {"iquest-coder-40b", 80, 8, 128, 131072, 4096},
      {"llama-7b-v1", 32, 32, 128, 2048, 2560},
  };
  for (const OneGroupCase& c : cases) ExpectOneFullGroup(c);

  // Field names of their own: EXAONE 3's num_layers, TeleChat's n_layer and n_head, MPT's and
  // DBRX's d_model, n_heads and n_layers (checked above through the head size), Nemotron's
  // kv_channels (head_dim wins; neither: hidden_size / heads).
  nlohmann::json exaone = CorpusConfig("exaone-3.5-7.8b");
  exaone["num_layers"] = 8;
  auto plan = PlanConfig(exaone, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].layers.size(), 8u);
  nlohmann::json nemotron = CorpusConfig("minitron-4b");
  nemotron["head_dim"] = 64;
  plan = PlanConfig(nemotron, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.head_size, 64);
  nemotron.erase("head_dim");
  nemotron.erase("kv_channels");
  plan = PlanConfig(nemotron, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);  // 3072 / 24

  // Class defaults: DBRX's one K/V head without kv_n_heads; StableLmConfig's 32 K/V heads.
  nlohmann::json dbrx = CorpusConfig("dbrx-instruct");
  dbrx["attn_config"].erase("kv_n_heads");
  plan = PlanConfig(dbrx, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 1);
  nlohmann::json stablelm = CorpusConfig("stablelm-3b-4e1t");
  stablelm.erase("num_key_value_heads");
  plan = PlanConfig(stablelm, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 32);
  stablelm["architectures"] = {"StableLMEpochForCausalLM"};
  EXPECT_EQ(ConfigError(stablelm),
            "config.json 'config.json': field 'num_key_value_heads' is missing");

  // What the engine's models cannot build is refused, saying why.
  nlohmann::json telechat = CorpusConfig("telechat2-115b");
  telechat.erase("num_key_value_heads");
  EXPECT_EQ(ConfigError(telechat),
            "config.json 'config.json': field 'num_key_value_heads' is missing");
  nlohmann::json mpt = CorpusConfig("mpt-7b");
  mpt["attn_config"]["kv_n_heads"] = 8;
  EXPECT_EQ(ConfigError(mpt),
            "config.json 'config.json': field 'attn_config.kv_n_heads' is 8 of 32 heads: whether "
            "the engine's MPT layers read it depends on the Transformers version "
            "(MptAttentionConfig drops it before 5.x), so kvtopo does not plan it");
  mpt["attn_config"]["kv_n_heads"] = 32;
  EXPECT_EQ(ConfigError(mpt), "(accepted)");
  mpt["attn_config"]["alibi"] = false;
  EXPECT_EQ(ConfigError(mpt),
            "config.json 'config.json': field 'attn_config.alibi' is false: the engine's MPT "
            "model runs ALiBi only");
  nlohmann::json jais2 = CorpusConfig("jais-2-8b");
  jais2["interleaved_sliding_window"] = 4096;
  EXPECT_EQ(ConfigError(jais2),
            "config.json 'config.json': field 'interleaved_sliding_window' is set: Jais2Config "
            "has no such field, and kvtopo does not plan the per-layer windows the engine's "
            "model would read from it");
}

// A config without any length field (BLOOM's class has none): the engine plans 2048 tokens by
// default and takes any --max-model-len; --disable-sliding-window makes the window the length.
TEST(DenseModels, BloomStatesNoLengthField) {
  nlohmann::json bloom = CorpusConfig("bloom-560m");
  auto plan = PlanConfig(bloom, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 2048);
  EXPECT_EQ(DiagnosticMessage(*plan, "max-model-len-default"), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "config-length-default"),
            "config.json 'config.json' states none of the engine's length fields "
            "(max_position_embeddings, n_positions, max_seq_len, seq_length, "
            "max_target_positions, max_sequence_length, max_seq_length, seq_len, "
            "model_max_length): without --max-model-len the engine assumes 2048 tokens, and it "
            "accepts any --max-model-len");
  plan = PlanConfig(bloom, 1, 1, 20 * kGiB, 200000);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 200000);

  // n_embed names hidden_size, and wins over it.
  bloom["n_embed"] = 2048;
  plan = PlanConfig(bloom, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);  // 2048 / 16

  bloom["sliding_window"] = 1024;
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  plan = PlanWith(bloom, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 1024);
  EXPECT_EQ(plan->model.max_model_len, 2048);
  c.disable_sliding_window = true;
  plan = PlanWith(bloom, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->model.max_model_len, 1024);
  EXPECT_EQ(DiagnosticMessage(*plan, "sliding-window-disabled"),
            "--disable-sliding-window: 24 sliding-window layers attend over the whole request "
            "and are cached as full attention; the model's maximum length is capped at 1024 "
            "(sliding_window 1024; was unbounded: no length field)");
}

// Baichuan: BaichuanForCausalLM runs ALiBi unless hidden_size is 4096, and its ALiBi attention is
// built without the cache config (the model's dtype, no cache-wide window); Baichuan2-13B states
// only model_max_length.
TEST(DenseModels, BaichuanAlibiLayersKeepTheModelDtype) {
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  auto plan = PlanWith(CorpusConfig("baichuan2-13b"), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 4096);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 40 * 128 * 2);
  EXPECT_EQ(DiagnosticMessage(*plan, "kv-cache-dtype-model"),
            "the attention layers of 'config.json' cache in the model's dtype, not fp8: the "
            "engine builds them without the cache config");
  plan = PlanWith(CorpusConfig("baichuan2-7b"), c);  // RoPE: the cache config's fp8
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 32 * 128 * 1);
  EXPECT_EQ(DiagnosticMessage(*plan, "kv-cache-dtype-model"), "");

  c.cache.kv_cache_dtype = KvCacheDtype::kAuto;
  nlohmann::json alibi = CorpusConfig("baichuan2-13b");
  alibi["sliding_window"] = 1024;
  plan = PlanWith(alibi, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  alibi["architectures"] = {"BaiChuanForCausalLM"};  // always RoPE
  plan = PlanWith(alibi, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 1024);
}

// Solar: SolarConfig's sliding_window of 2047 reaches every layer (its layers pass none of their
// own); null turns it off. CWM: CwmConfig's layer kinds, a full layer at 0, 4, 8, ...
TEST(DenseModels, SolarAndCwmWindows) {
  auto plan = PlanConfig(CorpusConfig("solar-pro"), 1, 1, 20 * kGiB, 4096);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 2047);
  EXPECT_EQ(plan->pool.num_blocks, 4096);
  nlohmann::json solar = CorpusConfig("solar-pro");
  solar["sliding_window"] = nullptr;
  plan = PlanConfig(solar, 1, 1, 20 * kGiB, 4096);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);

  plan = PlanConfig(CorpusConfig("cwm"), 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 131072);  // llama3 RoPE: not scaled
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 16u);
  EXPECT_EQ(LayerCount(*plan, CacheKind::kSlidingWindow), 48u);
  EXPECT_EQ(plan->groups[0].layers.front(), "model.layers.0.self_attn");
  EXPECT_EQ(plan->groups[0].layers[1], "model.layers.4.self_attn");
  EXPECT_EQ(plan->groups[1].spec.sliding_window, 8192);
  EXPECT_EQ(plan->pool.num_blocks, 20480);  // 20 GiB / (4 x 16 layers' 64 KiB pages)
}

// ChatGLM, Step 3's and Step-1's text models, Ouro, openPangu Embedded and more Llama-like
// families, as the table above.
TEST(DenseModels, ChatGlmStepOuroAndMore) {
  const OneGroupCase cases[] = {
      {"glm-4-9b-chat", 40, 2, 128, 131072, 32768},
      {"chatglm3-6b", 28, 2, 128, 8192, 46811},
      {"step3-text", 61, 1, 256, 65536, 21487},
      {"step-audio-tts-3b", 32, 4, 64, 32768, 40960, "TRITON_ATTN"},  // use_alibi_sqrt
      {"ouro-1.4b", 96, 16, 128, 65536, 1706},  // 24 layers run 4 times, each with a cache
      {"openpangu-embedded-7b", 34, 8, 128, 32768, 9637},
      {"telechat3-36b", 64, 8, 128, 131072, 5120},  // 32768 x telechat3-yarn factor 4
      {"hyperclovax-seed-14b", 38, 8, 128, 32768, 8623},
      {"param2-moe", 21, 8, 64, 4096, 31207},
      {"sarvam-30b", 19, 4, 64, 131072, 68985},
      {"tele-flm-52b", 64, 64, 128, 4096, 640},
      {"internlm2-ve-1.8b", 24, 8, 128, 32768, 13653},
  };
  for (const OneGroupCase& c : cases) ExpectOneFullGroup(c);

  // ChatGLM: every head caches without multi_query_attention; seq_length is the length, whatever
  // max_position_embeddings says (ChatGLMConfig overwrites it).
  nlohmann::json glm = CorpusConfig("chatglm3-6b");
  glm["multi_query_attention"] = false;
  glm["max_position_embeddings"] = 1024;
  auto plan = PlanConfig(glm, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 32);
  EXPECT_EQ(plan->model.max_model_len, 8192);

  // Step 3: one K/V head whatever num_attention_groups says, at every TP.
  nlohmann::json step3 = CorpusConfig("step3-text");
  step3["num_attention_groups"] = 4;
  plan = PlanConfig(step3, 8, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 1);

  // Step-1: its attention asks for square-root ALiBi slopes, which only Triton attention has
  // (Attention.__init__ raises on another backend once selected, the engine's own choice too).
  nlohmann::json step1 = CorpusConfig("step-audio-tts-3b");
  plan = PlanConfig(step1, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [backend-required] 'config.json' (Step1ForCausalLM) has attention layers "
            "with square-root ALiBi slopes (use_alibi_sqrt), and the engine builds them only on "
            "TRITON_ATTN: on FLASH_ATTN (the default backend) it raises ('use_alibi_sqrt is not "
            "supported by backend') while building the model; add --attention-backend "
            "TRITON_ATTN");
  // A null group count is one K/V head; neither field is refused.
  step1["num_attention_groups"] = nullptr;
  step1["num_key_value_heads"] = 8;
  plan = PlanConfig(step1, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 1);
  step1.erase("num_attention_groups");
  step1.erase("num_key_value_heads");
  EXPECT_EQ(ConfigError(step1),
            "config.json 'config.json': field 'num_attention_groups' is missing, as is "
            "num_key_value_heads: the checkpoint's config class then decides the K/V heads; "
            "state one");

  // Ouro: layer ut x L + i is the i-th layer's attention in its ut-th run.
  nlohmann::json ouro = CorpusConfig("ouro-1.4b");
  ouro["total_ut_steps"] = 2;
  plan = PlanConfig(ouro, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups[0].layers.size(), 48u);
  EXPECT_EQ(plan->groups[0].layers[24], "model.layers.24.self_attn");
  EXPECT_EQ(plan->groups[0].layers.back(), "model.layers.47.self_attn");

  // Param2 MoE splits its 8 K/V heads over TP and cannot replicate them.
  plan = PlanConfig(CorpusConfig("param2-moe"), 8, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  plan = PlanConfig(CorpusConfig("param2-moe"), 16, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "tp-kv-heads"),
            "--tensor-parallel-size 16 does not divide the 8 KV heads of layer "
            "'model.layers.0.self_attn' ('config.json'), and the engine's Param2MoEForCausalLM "
            "model splits them and cannot replicate them; choose a tensor-parallel size that "
            "divides 8");

  // With attention sinks the layers are openPangu's sink attention, which reads its own widths
  // (qk_nope_dim + qk_rope_dim keys, v_channels values) and refuses a config without them, a
  // non-causal one, and windows other than an int or a non-empty list.
  nlohmann::json pangu = CorpusConfig("openpangu-embedded-7b");
  pangu["param_sink_number"] = 128;
  EXPECT_EQ(ConfigError(pangu), "config.json 'config.json': field 'qk_nope_dim' is missing");
  pangu.update(nlohmann::json{{"qk_nope_dim", 128}, {"qk_rope_dim", 64}, {"v_channels", 128}});
  pangu["interleaved_sliding_window"] = {4096, nullptr};  // the kernel's, not the cache's
  plan = PlanConfig(pangu, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 34u);
  // 8 heads x (192 + 128) x 2 B x 16 tokens = 81,920 B pages; 34 of them per block.
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 81920);
  EXPECT_EQ(plan->pool.num_blocks, 7710);
  EXPECT_EQ(plan->groups[0].geometry.sink_blocks(), 8);
  nlohmann::json no_keys = pangu;
  no_keys["qk_nope_dim"] = 0;
  no_keys["qk_rope_dim"] = 0;
  EXPECT_EQ(ConfigError(no_keys),
            "config.json 'config.json': field 'qk_rope_dim' is 0 with qk_nope_dim 0: the sink "
            "attention's keys, qk_nope_dim + qk_rope_dim wide, would be empty");
  pangu["is_causal"] = false;
  EXPECT_EQ(ConfigError(pangu),
            "config.json 'config.json': field 'is_causal' is false: the engine's openPangu sink "
            "attention runs causal only (it raises 'is not support for attention with sink')");
  pangu["is_causal"] = true;
  pangu["interleaved_sliding_window"] = nlohmann::json::array();
  EXPECT_EQ(ConfigError(pangu),
            "config.json 'config.json': field 'interleaved_sliding_window' is an empty list: the "
            "engine reads layer i's window at i mod the list's length");
  pangu["interleaved_sliding_window"] = "4096";
  EXPECT_EQ(ConfigError(pangu),
            "config.json 'config.json': field 'interleaved_sliding_window' is \"4096\": the "
            "engine's openPangu attention takes an int or a list");
  // openPangu's MLA attention is refused.
  // The engine tests the MLA fields and the window with hasattr: a null one counts as present.
  pangu = CorpusConfig("openpangu-embedded-7b");
  for (const char* key : {"qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
    pangu[key] = 64;
  }
  pangu["kv_lora_rank"] = nullptr;
  EXPECT_EQ(ConfigError(pangu),
            "config.json 'config.json': field 'kv_lora_rank' is present with the other MLA fields: "
            "kvtopo does not plan openPangu's MLA attention");
  // Without sinks, layer i slides over interleaved_sliding_window (an int, or entry i mod the
  // list's length; a null entry: the cache-wide window, none here): 17 sliding and 17 full layers.
  pangu = CorpusConfig("openpangu-embedded-7b");
  pangu["interleaved_sliding_window"] = {4096, nullptr};
  plan = PlanConfig(pangu, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kSlidingWindow), 17u);
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 17u);
  EXPECT_EQ(plan->groups[0].layers[1], "model.layers.2.self_attn");
  EXPECT_EQ(plan->groups[0].geometry.sliding_window(), 4096);
  EXPECT_EQ(plan->pool.num_blocks, 19275);
  pangu["interleaved_sliding_window"] = 4096;  // an int windows every layer
  plan = PlanConfig(pangu, 1, 1, 20 * kGiB, 32768);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kSlidingWindow), 34u);
  pangu["interleaved_sliding_window"] = {4096, 0};
  EXPECT_EQ(ConfigError(pangu),
            "config.json 'config.json': field 'interleaved_sliding_window' entry 1 is 0: kvtopo "
            "plans a window of 1 to 2147483647 tokens, or null for the cache-wide one");
  pangu["interleaved_sliding_window"] = nullptr;
  EXPECT_EQ(ConfigError(pangu),
            "config.json 'config.json': field 'interleaved_sliding_window' is null: the engine's "
            "openPangu attention takes an int or a list");
}

// HY V3 (hy3-preview: 80 layers, 8 K/V heads of 128, 262,144 positions) and its MTP layer after
// the trunk; HYV3Config's defaults for what a config omits.
TEST(DenseModels, HyV3AndItsMtpLayer) {
  ExpectOneFullGroup({"hy3-preview", 80, 8, 128, 262144, 4096});
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 1024;
  c.speculative =
      ParseSpeculativeConfig(R"({"method": "mtp", "num_speculative_tokens": 2})").value();
  auto plan = PlanWith(CorpusConfig("hy3-preview"), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(LayerCount(*plan), 81u);
  EXPECT_EQ(plan->groups.back().layers.back(), "model.layers.80.self_attn");
  EXPECT_EQ(plan->pool.num_blocks, 4045);  // 20 GiB / (81 x 64 KiB)

  plan = PlanConfig(nlohmann::json::parse(R"({"architectures": ["HYV3ForCausalLM"],
                                              "torch_dtype": "bfloat16"})"),
                    8, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 1024);
  EXPECT_EQ(LayerCount(*plan), 80u);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 1);
  EXPECT_EQ(plan->groups[0].spec.head_size, 128);
  // Without num_nextn_predict_layers there is no MTP layer to draft with.
  nlohmann::json no_mtp = CorpusConfig("hy3-preview");
  no_mtp.erase("num_nextn_predict_layers");
  plan = PlanWith(no_mtp, c);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "--speculative-config method 'mtp' needs in-model MTP layers, but config.json "
            "'config.json' declares none (num_nextn_predict_layers); choose another method");
}

// LongCat-Flash under its checkpoint's config class (--trust-remote-code): two MLA attentions in
// each of its 28 decoder layers (num_layers), a 576-wide latent row: 56 x 16 x 576 x 2 B a
// block, 20,805 blocks in 20 GiB; its MTP draft below.
TEST(DenseModels, LongcatFlashRunsTwoMlaAttentionsPerLayer) {
  nlohmann::json longcat = CorpusConfig("longcat-flash-chat");
  LaunchConfig trusted;
  trusted.trust_remote_code = true;
  trusted.parallel.tensor_parallel_size = 8;
  trusted.kv_cache_memory_bytes = 20 * kGiB;
  trusted.cache.max_model_len = 1024;
  auto plan = PlanWith(longcat, trusted);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 1024);
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kMla);
  ASSERT_EQ(plan->groups[0].layers.size(), 56u);
  EXPECT_EQ(plan->groups[0].layers[0], "model.layers.0.self_attn.0");
  EXPECT_EQ(plan->groups[0].layers[1], "model.layers.0.self_attn.1");
  EXPECT_EQ(plan->groups[0].layers.back(), "model.layers.27.self_attn.1");
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 576 * 2);
  EXPECT_EQ(plan->pool.num_blocks, 20805);

  // Without --trust-remote-code the engine reads Transformers' LongcatFlashConfig, whose
  // num_hidden_layers (56 by default) the fork's model builds; without an AutoConfig of its own
  // the checkpoint's class is never read.
  const std::string transformers_class =
      "Transformers' LongcatFlashConfig, whose num_hidden_layers defaults to 56 whatever "
      "num_layers is, so it builds 56 decoder layers for a checkpoint of 28 layers and fails as it "
      "loads the weights ('Following weights were not initialized from checkpoint'; a Transformers "
      "without that class refuses the config instead); ";
  EXPECT_EQ(ConfigError(longcat),
            "config.json 'config.json': field 'num_layers' is 28 and num_hidden_layers is not "
            "stated: without --trust-remote-code the engine reads the config with " +
                transformers_class +
                "pass --trust-remote-code (the checkpoint's class reads num_layers) or state "
                "num_hidden_layers 28");
  nlohmann::json no_class = longcat;
  no_class.erase("auto_map");
  EXPECT_EQ(PlanWith(no_class, trusted).status().message(),
            "config.json 'config.json': field 'num_layers' is 28 and num_hidden_layers is not "
            "stated: with no AutoConfig in auto_map the engine reads the config with " +
                transformers_class + "state num_hidden_layers 28");
  no_class["num_layers"] = 56;  // the class's default count
  plan = PlanConfig(no_class, 8, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan), 112u);

  // A stated num_hidden_layers wins over num_layers.
  longcat["num_hidden_layers"] = 4;
  plan = PlanConfig(longcat, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan), 8u);
  longcat["num_hidden_layers"] = 4000;
  EXPECT_EQ(ConfigError(longcat),
            "config.json 'config.json': field 'num_hidden_layers' is 4000: two attention layers "
            "each exceed 4096 layers");

  LaunchConfig c = trusted;
  c.speculative =
      ParseSpeculativeConfig(R"({"method": "mtp", "num_speculative_tokens": 1})").value();
  plan = PlanWith(CorpusConfig("longcat-flash-chat"), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  // The draft config's model type (longcat_flash_mtp) is not MLA to the engine: its one layer
  // caches K and V of the 64 query heads, 64 / 8 per rank of 128 + 64, on a K/V backend, and
  // shares one uniform-type group with the MLA layers (MLA specs are full-attention specs):
  // 56 x 18,432 B + 16 x 8 x 192 x 2 x 2 B = 1,130,496 B a block, 18,995 blocks in 20 GiB.
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_TRUE(plan->groups[0].uniform_type);
  const LayerSpec& mtp = plan->groups[0].layer_specs.back();
  EXPECT_EQ(mtp.name, "model.layers.56.self_attn");
  EXPECT_EQ(mtp.role, Role::kDraft);
  EXPECT_EQ(mtp.kind, CacheKind::kFullAttention);
  EXPECT_EQ((std::tuple{mtp.num_kv_heads, mtp.head_size, mtp.head_size_v}),
            (std::tuple<int64_t, int64_t, int64_t>{8, 192, 192}));
  EXPECT_EQ(mtp.attention_backend, "FLASH_ATTN");
  EXPECT_EQ(plan->pool.bytes_per_block, 1130496);
  EXPECT_EQ(plan->pool.num_blocks, 18995);
  // An MLA backend named for the target reaches the draft, as the engine's draft config keeps
  // the attention config, and cannot serve its K/V layer.
  c.cache.attention_backend = "FLASHMLA";
  plan = PlanWith(CorpusConfig("longcat-flash-chat"), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-kind"),
            "draft layer 'model.layers.56.self_attn' is a K/V attention cache but backend "
            "FLASHMLA serves MLA caches; choose a matching backend with the speculative config's "
            "draft_attention_backend");
}

// IQuest Loop-Coder (iquest-loop-coder-40b: 80 layers run twice, 8 K/V heads of 5120 / 40): the
// first run's 80 layers are full attention, the second run's slide over loop_window_size (64)
// tokens, whatever --disable-sliding-window says. One block id holds a page of the 80 layers of
// one group: 20 GiB / (80 x 64 KiB) = 4,096 blocks.
TEST(DenseModels, LoopCoderCachesEachLoopRun) {
  nlohmann::json loop = CorpusConfig("iquest-loop-coder-40b");
  auto plan = PlanConfig(loop, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.front(), "model.layers.0.self_attn");
  EXPECT_EQ(plan->groups[0].layers.back(), "model.layers.79.self_attn");
  EXPECT_EQ(plan->groups[1].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[1].spec.sliding_window, 64);
  EXPECT_EQ(plan->groups[1].layers.front(), "model.layers.80.self_attn");
  EXPECT_EQ(plan->groups[1].layers.back(), "model.layers.159.self_attn");
  EXPECT_EQ(plan->groups[1].spec.head_size, 128);
  EXPECT_EQ(plan->pool.num_blocks, 4096);

  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 1024;
  c.disable_sliding_window = true;
  plan = PlanWith(loop, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kSlidingWindow), 80u);

  // A stated sliding_window windows the first run's layers too, and must reach every layer.
  loop["sliding_window"] = 4096;
  plan = PlanConfig(loop, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kSlidingWindow), 160u);
  loop["max_window_layers"] = 40;
  EXPECT_EQ(ConfigError(loop),
            "config.json 'config.json': field 'max_window_layers' is 40 with sliding_window 4096: "
            "the engine's IQuest Loop-Coder model windows all 80 layers or none (set "
            "max_window_layers to num_hidden_layers, or sliding_window to null)");
  loop.erase("sliding_window");
  loop["loop_num"] = 1;
  loop["num_key_value_heads"] = nullptr;  // the class's None: one K/V head per head
  plan = PlanConfig(loop, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan), 80u);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 40);
}

// MLA models of other names: Sarvam MLA (32 layers, whatever its model type), openPangu Ultra MoE
// (61 layers and its MTP layer, model type pangu_ultra_moe) and A.X K1 (MLA under model type
// AXK1, K/V attention of 128 + 64 under another). 576-wide rows: 18 KiB pages.
TEST(DenseModels, SarvamMlaPanguUltraMoeAndAxk1) {
  auto plan = PlanConfig(CorpusConfig("sarvam-105b"), 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kMla);
  EXPECT_EQ(LayerCount(*plan), 32u);
  EXPECT_EQ(plan->pool.num_blocks, 36408);
  // deepseek_yarn is not yarn: the engine scales max_position_embeddings by the factor.
  plan = PlanConfig(CorpusConfig("sarvam-105b"), 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 131072 * 40);

  nlohmann::json pangu = CorpusConfig("pangu-ultra-moe-718b");
  plan = PlanConfig(pangu, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kMla), 61u);
  EXPECT_EQ(plan->pool.num_blocks, 19099);  // 20 GiB / (61 x 18 KiB)
  LaunchConfig c;
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = 1024;
  c.speculative =
      ParseSpeculativeConfig(R"({"method": "mtp", "num_speculative_tokens": 1})").value();
  plan = PlanWith(pangu, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kMla), 62u);
  EXPECT_EQ(plan->groups[0].layers.back(), "model.layers.61.self_attn");
  EXPECT_EQ(plan->pool.num_blocks, 18791);  // 20 GiB / (62 x 18 KiB)
  pangu["model_type"] = "PanguProMoE";
  EXPECT_EQ(ConfigError(pangu),
            "config.json 'config.json': field 'model_type' is 'PanguProMoE' with openPangu's MLA "
            "fields: the engine treats only model type pangu_ultra_moe as MLA, and kvtopo does not "
            "plan these MLA layers under another");
  // Pro MoE V2 (openPangu-R-72B-2512): sink attention, 4 K/V heads of 192-wide keys and
  // 128-wide values on FLASH_ATTN_DIFFKV, 4 x 320 x 2 B x 16 = 40,960 B pages, 50 per block:
  // 20 GiB holds 10,485 blocks, of which the sink manager takes 128 / 16 = 8 at start.
  nlohmann::json pro = CorpusConfig("pangu-pro-moe-v2-sinks");
  plan = PlanConfig(pro, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 50u);
  EXPECT_EQ(plan->groups[0].spec.attention_backend, "FLASH_ATTN_DIFFKV");
  EXPECT_EQ((std::pair{plan->groups[0].spec.head_size, plan->groups[0].spec.head_size_v}),
            (std::pair<int64_t, int64_t>{192, 128}));
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 40960);
  EXPECT_EQ(plan->pool.num_blocks, 10485);
  EXPECT_EQ(plan->capacity.max_tokens, 167760);  // the engine's figure: the sinks not deducted
  EXPECT_EQ(plan->groups[0].geometry.sink_tokens(), 128);
  EXPECT_EQ(plan->groups[0].geometry.sink_blocks(), 8);
  EXPECT_NE(FormatPlanTable(*plan).find("\nsinks      group 0 keeps 128 attention sink tokens in 8 "
                                        "blocks, taken from the pool at start\n"),
            std::string::npos)
      << FormatPlanTable(*plan);
  const nlohmann::json group = nlohmann::json::parse(PlanToJsonText(*plan))["groups"][0];
  EXPECT_EQ((std::pair{group["sink_tokens"], group["sink_blocks"]}),
            (std::pair{nlohmann::json(128), nlohmann::json(8)}));
  // The layers split the 4 K/V heads over TP and cannot replicate them.
  plan = PlanConfig(pro, 8, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "tp-kv-heads"),
            "--tensor-parallel-size 8 does not divide the 4 KV heads of layer "
            "'model.layers.0.self_attn' ('config.json'), and the engine's "
            "PanguProMoEV2ForCausalLM model splits them and cannot replicate them; choose a "
            "tensor-parallel size that divides 4");
  pro.erase("param_sink_number");
  pro["head_dim"] = 128;
  plan = PlanConfig(pro, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 50u);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 4);

  nlohmann::json axk1 = CorpusConfig("axk1");
  plan = PlanConfig(axk1, 8, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kMla), 61u);
  EXPECT_EQ(plan->pool.num_blocks, 19099);
  axk1["model_type"] = "axk1";  // Transformers' own class: not in the engine's MLA list
  plan = PlanConfig(axk1, 8, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 61u);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 8);  // 64 heads over TP8
  EXPECT_EQ(plan->groups[0].spec.head_size, 192);
  axk1["qk_nope_head_dim"] = 0;
  axk1["qk_rope_head_dim"] = 0;
  EXPECT_EQ(ConfigError(axk1),
            "config.json 'config.json': field 'qk_rope_head_dim' is 0, as is qk_nope_head_dim: "
            "the engine then runs DeepSeek's multi-head attention, which kvtopo does not plan for "
            "A.X K1");
}

// Laguna (laguna-xs.2: 40 layers, full at every 4th from 0, the others sliding over 512; 8 K/V
// heads of 128): 10 full and 30 sliding layers in groups of 10, 640 KiB a block, 32,768 blocks in
// 20 GiB. Its per-layer-type RoPE entries leave the length at max_position_embeddings.
TEST(DenseModels, LagunaSlidesOnlyWhereLayerTypesSay) {
  nlohmann::json laguna = CorpusConfig("laguna-xs.2");
  auto plan = PlanConfig(laguna, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 10u);
  EXPECT_EQ(LayerCount(*plan, CacheKind::kSlidingWindow), 30u);
  EXPECT_EQ(plan->groups[1].spec.sliding_window, 512);
  EXPECT_EQ(plan->pool.num_blocks, 32768);
  plan = PlanConfig(laguna, 1, 1, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 131072);

  // The model clears the cache-wide window: without layer_types every layer is full.
  nlohmann::json no_types = laguna;
  no_types.erase("layer_types");
  plan = PlanConfig(no_types, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 40u);
  // The engine still caps the length at the stated window under --disable-sliding-window.
  LaunchConfig disabled;
  disabled.kv_cache_memory_bytes = 20 * kGiB;
  disabled.disable_sliding_window = true;
  plan = PlanWith(no_types, disabled);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 512);
  laguna["sliding_window"] = nullptr;
  plan = PlanConfig(laguna, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kFullAttention), 40u);

  // Per-layer query heads (Laguna-XS's num_attention_heads_per_layer: 64 on the full layers, 48
  // on the sliding ones): the caches stay as they are, each layer keeps its own heads, and TP
  // must divide every layer's (LagunaAttention asserts it).
  laguna = CorpusConfig("laguna-xs.2");
  nlohmann::json heads = nlohmann::json::array();
  for (const auto& type : laguna["layer_types"])
    heads.push_back(type == "full_attention" ? 64 : 48);
  laguna["num_attention_heads_per_layer"] = heads;
  plan = PlanConfig(laguna, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->pool.num_blocks, 32768);
  EXPECT_EQ(plan->groups[0].spec.num_q_heads_total, 64);
  EXPECT_EQ(plan->groups[1].spec.num_q_heads_total, 48);
  heads[1] = 40;  // heads differ within the sliding layers: the engine's groups do not change
  laguna["num_attention_heads_per_layer"] = heads;
  plan = PlanConfig(laguna, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(plan->groups[1].layers.size(), 10u);
  EXPECT_EQ(plan->groups[1].layer_specs[0].num_q_heads_total, 40);
  EXPECT_EQ(plan->groups[1].layer_specs[1].num_q_heads_total, 48);
  plan = PlanConfig(laguna, 16, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "tp-attention-heads"),
            "--tensor-parallel-size 16 does not divide the 40 attention heads of layer "
            "'model.layers.1.self_attn' ('config.json'), and the engine's LagunaForCausalLM "
            "attention asserts that it does; choose a tensor-parallel size that divides 40");
  // With a null head_dim a layer's head size is hidden_size / its own heads: 2048 / 64 = 32.
  laguna["num_attention_heads_per_layer"] = nlohmann::json(std::vector<int>(40, 64));
  laguna["head_dim"] = nullptr;
  plan = PlanConfig(laguna, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].spec.head_size, 32);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16384);  // 8 x 32 x 2 x 2 B x 16
  laguna["num_attention_heads_per_layer"] = nlohmann::json::array({48, 64});
  EXPECT_EQ(ConfigError(laguna),
            "config.json 'config.json': field 'num_attention_heads_per_layer' has 2 entries for "
            "40 layers: the engine reads layer i's heads at entry i");
  laguna["num_attention_heads_per_layer"] = nlohmann::json(std::vector<int>(40, 0));
  EXPECT_EQ(ConfigError(laguna),
            "config.json 'config.json': field 'num_attention_heads_per_layer' entry 0 is 0: a "
            "layer's attention heads must be 1 to 65536");
}

// PLaMo 3 (plamo-3-nict-2b-base-shaped: 24 layers, 4 K/V heads of 128, window_size 2048, a full
// layer every 8th): 21 sliding and 3 full layers in groups of 3, 96 KiB a block, 218,453 blocks in
// 20 GiB. The windows are the model's own, so --disable-sliding-window keeps them.
TEST(DenseModels, Plamo3WindowsFromItsPattern) {
  nlohmann::json plamo = CorpusConfig("plamo-3-nict-2b-base");
  auto plan = PlanConfig(plamo, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kSlidingWindow), 21u);
  ASSERT_EQ(plan->groups.back().geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups.back().layers,
            (std::vector<std::string>{"model.layers.7.mixer.attn", "model.layers.15.mixer.attn",
                                      "model.layers.23.mixer.attn"}));
  EXPECT_EQ(plan->groups[0].spec.sliding_window, 2048);
  EXPECT_EQ(plan->pool.num_blocks, 218453);
  LaunchConfig disabled;
  disabled.kv_cache_memory_bytes = 20 * kGiB;
  disabled.disable_sliding_window = true;
  plan = PlanWith(plamo, disabled);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan, CacheKind::kSlidingWindow), 21u);
  EXPECT_EQ(plan->model.max_model_len, 4096);

  // The list a saved config carries must be the derived one.
  nlohmann::json saved = plamo;
  saved["interleaved_sliding_window"] = nlohmann::json::array();
  for (int i = 0; i < 24; ++i) {
    saved["interleaved_sliding_window"].push_back((i + 1) % 8 == 0 ? nlohmann::json()
                                                                   : nlohmann::json(2048));
  }
  plan = PlanConfig(saved, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  saved["interleaved_sliding_window"][0] = 128;
  EXPECT_EQ(ConfigError(saved),
            "config.json 'config.json': field 'interleaved_sliding_window' is not the list "
            "window_size 2048 and sliding_window_pattern 8 derive for 24 layers (null at every "
            "8th layer, the window elsewhere); kvtopo does not plan another");
  plamo["rope_scaling_factor"] = 4;
  EXPECT_EQ(ConfigError(plamo),
            "config.json 'config.json': field 'rope_scaling_factor' is 4: the length the engine "
            "derives from it depends on the version of PLaMo 3's config class; kvtopo does not "
            "plan it");
  plamo.erase("rope_scaling_factor");
  plamo.erase("window_size");
  EXPECT_EQ(ConfigError(plamo),
            "config.json 'config.json': field 'window_size' is missing: the published versions of "
            "PLaMo 3's config class default it to 2048 or to 128; state it");
}

// GritLM: the engine serves it as a pooling model by default, with no KV cache.
TEST(DenseModels, GritLmIsAPoolingModelByDefault) {
  nlohmann::json grit = nlohmann::json::parse(R"({
    "architectures": ["GritLM"], "model_type": "mistral", "torch_dtype": "bfloat16",
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "sliding_window": 4096, "max_position_embeddings": 32768})");
  EXPECT_EQ(ConfigError(grit),
            "config.json 'config.json': field 'architectures' names GritLM, which the engine "
            "serves as a pooling model by default, with no KV cache; kvtopo plans generation "
            "launches: pass --runner generate to plan its Llama layers generating");
  // --runner generate: its Llama layers, windowed cache-wide by the config's sliding_window.
  LaunchConfig c;
  c.model = "config.json";
  c.runner = "generate";
  Result<Plan> plan = PlanWith(grit, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kSlidingWindow);
  EXPECT_EQ(plan->groups[0].geometry.sliding_window(), 4096);
  EXPECT_EQ(plan->groups[0].layers.size(), 32u);
  // Under it the config's is_causal decides, as for Llama.
  grit["is_causal"] = false;
  EXPECT_EQ(PlanWith(grit, c).status().message(),
            "config.json 'config.json': field 'is_causal' is false: the engine builds GritLM's "
            "attention layers encoder-only (bidirectional, AttentionType.ENCODER_ONLY), which "
            "keep no KV cache; kvtopo plans decoders");
  // A pooling runner or conversion is refused whatever the model; draft too; others are usage
  // errors.
  grit.erase("is_causal");
  const auto refused = [&](std::string runner, std::string convert) {
    c.runner = std::move(runner);
    c.convert = std::move(convert);
    return PlanWith(grit, c).status().message();
  };
  EXPECT_EQ(refused("pooling", "auto"),
            "--runner pooling: the engine serves the model as a pooling model, returning "
            "embeddings or scores rather than generating tokens; kvtopo plans generation "
            "launches");
  EXPECT_EQ(refused("auto", "classify"),
            "--convert classify: the engine serves the model as a pooling model, returning "
            "embeddings or scores rather than generating tokens; kvtopo plans generation "
            "launches");
  EXPECT_EQ(refused("draft", "none"),
            "--runner draft: the engine builds the model as a speculative draft; kvtopo plans the "
            "target, with the draft in --speculative-config");
  EXPECT_EQ(refused("generation", "none"),
            "--runner 'generation' is not a runner; accepted: auto, generate, pooling, draft");
  EXPECT_EQ(refused("generate", "reward"),
            "--convert 'reward' is not a conversion; accepted: auto, none, embed, classify");
}

// HyperCLOVAX Vision: the registered model its text_config names (a shaped config: Llama layers,
// 24 x 8 K/V heads of 128), as InternVL's; the 3B checkpoint's remote class keeps it under
// language_config, which the engine's HCXVisionConfig does not read.
TEST(DenseModels, HcxVisionPlansItsTextConfigModel) {
  nlohmann::json hcx = CorpusConfig("hcx-vision-shaped");
  auto plan = PlanConfig(hcx, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(LayerCount(*plan), 24u);
  EXPECT_EQ(plan->groups[0].spec.num_kv_heads, 8);
  EXPECT_EQ(plan->pool.num_blocks, 13653);  // 20 GiB / (24 x 64 KiB)
  hcx["architectures"] = {"HCXVisionV2ForCausalLM"};
  hcx["text_config"]["architectures"] = {"HyperCLOVAXForCausalLM"};
  plan = PlanConfig(hcx, 1, 1, 20 * kGiB, 1024);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LayerCount(*plan), 24u);
  hcx["language_config"] = hcx["text_config"];
  hcx.erase("text_config");
  EXPECT_EQ(ConfigError(hcx), "config.json 'config.json': field 'text_config' is missing");
}

// A config whose is_causal is false (or any falsy value) makes the decoder layers that read it
// encoder-only, with no KV cache: refused where the engine's class reads it, from the config that
// class is given (the root, text_config, the thinker's text_config, the language model a wrapper
// names); a class that does not read it plans as before.
TEST(DenseModels, IsCausalFalseBuildsEncoderOnlyLayers) {
  const auto error = [](const std::string& stem, const std::vector<std::string>& path,
                        const nlohmann::json& value) {
    nlohmann::json config = CorpusConfig(stem);
    nlohmann::json* at = &config;
    for (const std::string& key : path) at = &(*at)[key];
    (*at)["is_causal"] = value;
    return ConfigError(config);
  };
  EXPECT_EQ(error("llama-3.1-8b", {}, false),
            "config.json 'config.json': field 'is_causal' is false: the engine builds "
            "LlamaForCausalLM's attention layers encoder-only (bidirectional, "
            "AttentionType.ENCODER_ONLY), which keep no KV cache; kvtopo plans decoders");
  EXPECT_EQ(error("qwen2.5-7b", {}, nullptr),
            "config.json 'config.json': field 'is_causal' is null: the engine builds "
            "Qwen2ForCausalLM's attention layers encoder-only (bidirectional, "
            "AttentionType.ENCODER_ONLY), which keep no KV cache; kvtopo plans decoders");
  EXPECT_EQ(error("gemma-3-27b-it", {"text_config"}, 0),
            "config.json 'config.json': field 'text_config.is_causal' is 0: the engine builds "
            "Gemma3ForConditionalGeneration's attention layers encoder-only (bidirectional, "
            "AttentionType.ENCODER_ONLY), which keep no KV cache; kvtopo plans decoders");
  EXPECT_EQ(error("qwen2.5-omni-7b", {"thinker_config", "text_config"}, false),
            "config.json 'config.json': field 'thinker_config.text_config.is_causal' is false: "
            "the engine builds Qwen2_5OmniModel's attention layers encoder-only (bidirectional, "
            "AttentionType.ENCODER_ONLY), which keep no KV cache; kvtopo plans decoders");
  // LLaVA-OneVision builds the language model its text_config names.
  EXPECT_EQ(error("llava-onevision-qwen2-shaped", {"text_config"}, ""),
            "config.json 'config.json': field 'text_config.is_causal' is \"\": the engine builds "
            "Qwen2ForCausalLM's attention layers encoder-only (bidirectional, "
            "AttentionType.ENCODER_ONLY), which keep no KV cache; kvtopo plans decoders");
  // MiniCPM-V picks its language model by version: 2.6 is Qwen2's, 2.0 MiniCPM's (which does
  // not read it).
  EXPECT_EQ(error("minicpm-v-2_6-shaped", {}, false),
            "config.json 'config.json': field 'is_causal' is false: the engine builds MiniCPMV's "
            "attention layers encoder-only (bidirectional, AttentionType.ENCODER_ONLY), which "
            "keep no KV cache; kvtopo plans decoders");
  nlohmann::json v2 = CorpusConfig("minicpm-v-2_6-shaped");
  v2["version"] = "2.0";
  v2["is_causal"] = false;
  EXPECT_EQ(ConfigError(v2), "(accepted)");
  // PaddleOCR-VL merges text_config over the root: its field wins.
  nlohmann::json paddle = CorpusConfig("paddleocr-vl-shaped");
  paddle["is_causal"] = false;
  paddle["text_config"] = {{"is_causal", true}};
  EXPECT_EQ(ConfigError(paddle), "(accepted)");
  paddle.erase("text_config");
  EXPECT_EQ(ConfigError(paddle),
            "config.json 'config.json': field 'is_causal' is false: the engine builds "
            "PaddleOCRVLForConditionalGeneration's attention layers encoder-only (bidirectional, "
            "AttentionType.ENCODER_ONLY), which keep no KV cache; kvtopo plans decoders");
  // Where the engine does not read it: LLaVA's root (its layers take text_config), PaliGemma's
  // Gemma, Qwen3-Next's own layers; a true value anywhere.
  EXPECT_EQ(error("llava-1.5-7b", {}, false), "(accepted)");
  EXPECT_EQ(error("paligemma-3b", {"text_config"}, false), "(accepted)");
  EXPECT_EQ(error("qwen3-next-80b", {}, false), "(accepted)");
  EXPECT_EQ(error("llama-3.1-8b", {}, true), "(accepted)");
  EXPECT_EQ(error("llama-3.1-8b", {}, "false"),
            "(accepted)");  // a non-empty string is true to Python
}

}  // namespace kvtopo
