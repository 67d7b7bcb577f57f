// Gated DeltaNet hybrids read from their config.json as the engine reads them: Qwen3.5 (dense and
// MoE, text_config under Qwen3_5*ForConditionalGeneration) and Qwen3-Next configs without the
// fields the embedded profile states.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "kvtopo/model.h"
#include "kvtopo/plan.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// `layer_types` of `n` layers with every 4th full attention.
nlohmann::json EveryFourthFull(int n) {
  nlohmann::json types = nlohmann::json::array();
  for (int i = 0; i < n; ++i)
    types.push_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
  return types;
}

// Qwen3.5-35B-A3B's config.json (the fields the cache depends on): 40 layers, 2 KV heads of 256,
// GDN 16 K and 32 V heads of 128, conv kernel 4, the SSM state in float32.
nlohmann::json Qwen35_35B_A3B() {
  nlohmann::json c = nlohmann::json::parse(R"({
    "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
    "tie_word_embeddings": false,
    "text_config": {
      "model_type": "qwen3_5_moe_text", "dtype": "bfloat16", "hidden_size": 2048,
      "num_hidden_layers": 40, "num_attention_heads": 16, "num_key_value_heads": 2,
      "head_dim": 256, "linear_conv_kernel_dim": 4, "linear_num_key_heads": 16,
      "linear_key_head_dim": 128, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
      "mamba_ssm_dtype": "float32", "full_attention_interval": 4, "mtp_num_hidden_layers": 1,
      "max_position_embeddings": 262144,
      "rope_parameters": {"rope_theta": 10000000, "mrope_interleaved": true,
                          "mrope_section": [11, 11, 10], "partial_rotary_factor": 0.25}},
    "vision_config": {"depth": 27}})");
  c["text_config"]["layer_types"] = EveryFourthFull(40);
  return c;
}

// Qwen3-Next-80B-A3B-Instruct's release config.json: layer_types, no num_nextn_predict_layers.
nlohmann::json Qwen3Next80B() {
  nlohmann::json c = nlohmann::json::parse(R"({
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "dtype": "bfloat16",
    "full_attention_interval": 4, "head_dim": 256, "hidden_size": 2048,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 32, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
    "num_attention_heads": 16, "num_hidden_layers": 48, "num_key_value_heads": 2,
    "partial_rotary_factor": 0.25, "rope_scaling": null, "rope_theta": 5000000})");
  c["layer_types"] = EveryFourthFull(48);
  return c;
}

LaunchConfig Launch(int64_t tp, int64_t memory) {
  LaunchConfig c;
  c.model = "config.json";
  c.parallel.tensor_parallel_size = tp;
  c.kv_cache_memory_bytes = memory;
  return c;
}

Result<Plan> PlanWith(const nlohmann::json& config, const LaunchConfig& c) {
  KVTOPO_ASSIGN_OR_RETURN(ModelCacheSpecs specs, BuildModelCacheSpecsFromJson(config, c));
  return PlanLaunchSpecs(specs, c);
}

std::string ConfigError(const nlohmann::json& config, const LaunchConfig& c) {
  Result<ModelCacheSpecs> specs = BuildModelCacheSpecsFromJson(config, c);
  return specs.ok() ? "(accepted)" : specs.status().message();
}

bool HasCode(const Plan& p, const std::string& code) {
  return std::any_of(p.diagnostics.begin(), p.diagnostics.end(),
                     [&](const Diagnostic& d) { return d.code == code; });
}

// The GDN state per layer: conv (3, 2 x 16 x 128 + 32 x 128) in bfloat16 = 49,152 B, and the
// temporal state (32, 128, 128) in the config's float32 = 2,097,152 B; 2,146,304 B in all. An
// attention token is 2 x 2 heads x 256 x 2 B = 2,048 B, so the attention block grows to
// 16 x ceil(2,146,304 / (16 x 2,048)) = 1,056 tokens, a page of 2,162,688 B. Ten layers of each
// kind per group: 20 GiB / 21,626,880 B = 992 blocks.
TEST(GdnHybrids, Qwen35MoeKeepsItsSsmStateInFloat32) {
  auto plan = PlanWith(Qwen35_35B_A3B(), Launch(1, 20 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_TRUE(plan->diagnostics.empty());
  EXPECT_EQ(plan->model.max_model_len, 262144);
  ASSERT_EQ(plan->groups.size(), 4u);
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(plan->groups[g].geometry.kind(), CacheKind::kRecurrent);
    EXPECT_EQ(plan->groups[g].natural_page_size_bytes, 2'146'304);
  }
  const PlannedGroup& full = plan->groups[3];
  EXPECT_EQ(full.geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(full.layers.front(), "model.layers.3.self_attn");
  EXPECT_EQ(full.layers.back(), "model.layers.39.self_attn");
  EXPECT_EQ(full.geometry.block_size(), 1056);
  EXPECT_EQ(full.geometry.page_size_bytes(), 2'162'688);
  EXPECT_EQ(plan->pool.num_blocks, 992);
  EXPECT_EQ(plan->capacity.max_tokens, 1'019'791);

  // --mamba-ssm-cache-dtype bfloat16 wins, with the engine's warning: the temporal state halves
  // to 1,048,576 B, 1,097,728 B in all, and the block is 16 x ceil(1,097,728 / 32,768) = 544.
  LaunchConfig bf16 = Launch(1, 20 * kGiB);
  bf16.cache.mamba_ssm_cache_dtype = KvCacheDtype::kBfloat16;
  plan = PlanWith(Qwen35_35B_A3B(), bf16);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(HasCode(*plan, "mamba-ssm-dtype-override"));
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 1'097'728);
  EXPECT_EQ(plan->groups[3].geometry.block_size(), 544);

  // The same value as the config's says nothing.
  LaunchConfig fp32 = Launch(1, 20 * kGiB);
  fp32.cache.mamba_ssm_cache_dtype = KvCacheDtype::kFloat32;
  plan = PlanWith(Qwen35_35B_A3B(), fp32);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->diagnostics.empty());
  EXPECT_EQ(plan->groups[3].geometry.block_size(), 1056);
}

// Without layer_types, Qwen3.5 puts full attention at every full_attention_interval-th layer, but
// the engine's Qwen3-Next config class always at every 4th. Fields a Qwen3.5 config omits take
// the config class's defaults (the dense model: 4 KV heads; head_dim 256).
TEST(GdnHybrids, LayerRulesWithoutLayerTypes) {
  nlohmann::json dense = Qwen35_35B_A3B();
  dense["architectures"] = {"Qwen3_5ForConditionalGeneration"};
  nlohmann::json& t = dense["text_config"];
  t.erase("layer_types");
  t.erase("num_key_value_heads");
  t.erase("head_dim");
  t["full_attention_interval"] = 2;
  LaunchConfig c = Launch(1, 20 * kGiB);
  auto specs = BuildModelCacheSpecsFromJson(dense, c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  int full = 0;
  for (const LayerSpec& s : specs->layers) {
    if (s.kind != CacheKind::kFullAttention) continue;
    ++full;
    EXPECT_EQ(s.num_kv_heads, 4);
    EXPECT_EQ(s.head_size, 256);
  }
  EXPECT_EQ(full, 20);
  EXPECT_EQ(specs->layers[1].name, "model.layers.1.self_attn");

  nlohmann::json next = Qwen3Next80B();
  next.erase("layer_types");
  next["full_attention_interval"] = 2;
  specs = BuildModelCacheSpecsFromJson(next, c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(std::count_if(specs->layers.begin(), specs->layers.end(),
                          [](const LayerSpec& s) { return s.kind == CacheKind::kFullAttention; }),
            12);
  EXPECT_EQ(specs->layers[1].name, "model.layers.1.linear_attn");
  EXPECT_EQ(specs->layers[3].name, "model.layers.3.self_attn");
}

// The engine's MTP modules count themselves from num_nextn_predict_layers (Qwen3-Next) or
// mtp_num_hidden_layers (Qwen3.5), one when absent: Qwen3-Next's release config states neither,
// and MTP caches one full-attention layer after the trunk.
TEST(GdnHybrids, MtpModulesDefaultToOne) {
  LaunchConfig c = Launch(4, 20 * kGiB);
  c.speculative =
      ParseSpeculativeConfig(R"({"method":"qwen3_next_mtp","num_speculative_tokens":2})").value();
  auto specs = BuildModelCacheSpecsFromJson(Qwen3Next80B(), c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->layers.back().name, "model.layers.48.self_attn");
  EXPECT_EQ(specs->layers.back().role, Role::kDraft);
  EXPECT_EQ(std::count_if(specs->layers.begin(), specs->layers.end(),
                          [](const LayerSpec& s) { return s.role == Role::kDraft; }),
            1);

  nlohmann::json none = Qwen35_35B_A3B();
  none["text_config"]["mtp_num_hidden_layers"] = 0;
  c.speculative =
      ParseSpeculativeConfig(R"({"method":"qwen3_5_mtp","num_speculative_tokens":2})").value();
  EXPECT_EQ(ConfigError(none, c),
            "--speculative-config method 'mtp' needs in-model MTP layers, but config.json "
            "'config.json' declares none (mtp_num_hidden_layers); choose another method");
  none["text_config"].erase("mtp_num_hidden_layers");
  auto one = BuildModelCacheSpecsFromJson(none, c);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->layers.back().name, "model.layers.40.self_attn");
}

TEST(GdnHybrids, MalformedFieldsAreNamed) {
  const LaunchConfig c = Launch(1, 20 * kGiB);
  nlohmann::json bad = Qwen35_35B_A3B();
  bad["text_config"]["layer_types"][5] = "sliding_attention";
  EXPECT_EQ(ConfigError(bad, c),
            "config.json 'config.json': field 'text_config.layer_types' entry 5 is "
            "'sliding_attention'; accepted: full_attention, linear_attention");
  bad = Qwen35_35B_A3B();
  bad["text_config"]["layer_types"].erase(0);
  EXPECT_EQ(ConfigError(bad, c),
            "config.json 'config.json': field 'text_config.layer_types' has 39 entries but "
            "num_hidden_layers is 40");
  bad = Qwen35_35B_A3B();
  bad["text_config"]["mamba_ssm_dtype"] = "fp8";
  EXPECT_EQ(ConfigError(bad, c),
            "config.json 'config.json': field 'text_config.mamba_ssm_dtype' is 'fp8'; accepted: "
            "float32, bfloat16, float16");
}

}  // namespace
}  // namespace kvtopo
