// Dense decoders read from a user's config.json (Llama, Mistral, Mixtral, Qwen2, Qwen3,
// Qwen3-MoE): heads, head size and windows as the engine reads them, planned end to end.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kvtopo/model.h"
#include "kvtopo/plan.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// Llama-3.1-8B's config.json (the fields the cache depends on).
nlohmann::json Llama31_8B() {
  return nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "max_position_embeddings": 131072, "torch_dtype": "bfloat16"})");
}

// Qwen2.5-7B-Instruct's: 28 query heads of 128 (3584 / 28), 4 KV heads, window off.
nlohmann::json Qwen25_7B() {
  return nlohmann::json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
    "max_position_embeddings": 32768, "sliding_window": 131072, "use_sliding_window": false,
    "max_window_layers": 28, "torch_dtype": "bfloat16"})");
}

Result<Plan> PlanConfig(const nlohmann::json& config, int64_t tp, int64_t dcp, int64_t memory,
                        int64_t max_model_len = 0) {
  LaunchConfig c;
  c.model = "config.json";
  c.parallel.tensor_parallel_size = tp;
  c.parallel.decode_context_parallel_size = dcp;
  c.cache.max_model_len = max_model_len;
  c.kv_cache_memory_bytes = memory;
  KVTOPO_ASSIGN_OR_RETURN(ModelCacheSpecs specs, BuildModelCacheSpecsFromJson(config, c));
  return PlanLaunchSpecs(specs, c);
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

// A Llama config without num_key_value_heads is multi-head: 32 KV heads of 128.
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
  nlohmann::json mixtral = llama;
  mixtral["architectures"] = {"MixtralForCausalLM"};
  EXPECT_EQ(ConfigError(mixtral),
            "config.json 'config.json': field 'layer_types' mixes sliding and full layers, which "
            "the engine's Mixtral layers do not read; kvtopo does not plan it");
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
  plan = PlanConfig(qwen3, 8, 1, 64 * kGiB, 200000);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "--max-model-len 200000 exceeds the model's maximum length 131072 "
            "(original_max_position_embeddings 32768 x yarn factor 4) in 'config.json'; lower "
            "--max-model-len unless the model is known to extrapolate");

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

}  // namespace
}  // namespace kvtopo
