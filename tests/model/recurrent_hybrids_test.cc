// Recurrent hybrids read from their config.json as the engine reads them: the Gated DeltaNet
// hybrids Qwen3.5 (dense and MoE, text_config under Qwen3_5*ForConditionalGeneration) and
// Qwen3-Next configs without the fields the embedded profile states, and the Mamba2 hybrid
// NemotronH.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "model/test_configs.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
using testing_configs::CorpusConfig;
using testing_configs::DiagnosticMessage;

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

// With --enable-prefix-caching: the figures below are the cached-prefix geometry (mode all or
// align); the engine's default for a hybrid, caching off, is
// MambaHybrids.HybridsDefaultToNoPrefixCaching.
LaunchConfig Launch(int64_t tp, int64_t memory) {
  LaunchConfig c;
  c.model = "config.json";
  c.parallel.tensor_parallel_size = tp;
  c.kv_cache_memory_bytes = memory;
  c.cache.enable_prefix_caching = true;
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

// NVIDIA-Nemotron-Nano-9B-v2's config.json (the fields the cache depends on): 56 layers, of
// which 27 Mamba2 (M) and 4 attention (*), 8 KV heads of 128; 128 Mamba heads of 80, 8 groups,
// state 128, conv kernel 4.
nlohmann::json NemotronNano9B() {
  return nlohmann::json::parse(R"({
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
    "torch_dtype": "bfloat16", "num_hidden_layers": 56, "hidden_size": 4480,
    "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
    "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
    "ssm_state_size": 128, "conv_kernel": 4, "n_groups": 8, "mamba_num_heads": 128,
    "mamba_head_dim": 80, "max_position_embeddings": 131072})");
}

// NemotronHConfig reads a null num_key_value_heads as the attention heads (its backward
// compatibility); the attention reads a null head_dim as hidden_size / num_attention_heads.
TEST(MambaHybrids, NemotronHNullKvHeadsAndHeadDim) {
  nlohmann::json config = NemotronNano9B();
  config["num_key_value_heads"] = nullptr;
  config["head_dim"] = nullptr;
  auto plan = PlanWith(config, Launch(1, 80 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  const LayerSpec& attention = plan->groups.back().layer_specs.front();
  EXPECT_EQ(attention.kind, CacheKind::kFullAttention);
  EXPECT_EQ(attention.num_kv_heads, 40);
  EXPECT_EQ(attention.head_size, 112);  // 4480 / 40
}

// The Mamba2 state per layer: conv (3, 128 x 80 + 2 x 8 x 128) in bfloat16 = 73,728 B, and the
// SSM state (128, 80, 128) in float32, the engine's NemotronH default = 5,242,880 B; 5,316,608 B
// in all. An attention token is 2 x 8 x 128 x 2 B = 4,096 B: 1,298 tokens hold the state. With
// prefix caching the Mamba layers keep a state per block (mode all, the model supports Mamba
// prefix caching), and the block is a multiple of the Mamba chunk size (NemotronHConfig's
// chunk_size, 128): 128 x ceil(1,298 / 128) = 1,408; 94 pages per request in each of the 8
// groups (27 Mamba layers in groups of 4, then the 4 attention layers).
TEST(MambaHybrids, NemotronNano9BCachesPrefixesInModeAllAndAFloat32State) {
  auto plan = PlanWith(NemotronNano9B(), Launch(1, 20 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_TRUE(plan->diagnostics.empty());
  ASSERT_EQ(plan->groups.size(), 8u);
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 5'316'608);
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kAll);
  EXPECT_EQ(plan->groups[0].layers.front(), "model.layers.0.mixer");
  EXPECT_EQ(plan->groups[6].layers.size(), 3u);
  const PlannedGroup& attention = plan->groups[7];
  EXPECT_EQ(attention.geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(attention.layers,
            (std::vector<std::string>{"model.layers.14.mixer", "model.layers.21.mixer",
                                      "model.layers.30.mixer", "model.layers.39.mixer"}));
  EXPECT_EQ(attention.geometry.block_size(), 1408);
  EXPECT_EQ(attention.geometry.page_size_bytes(), 5'767'168);
  EXPECT_EQ(attention.geometry.max_pages_per_request(), 94);
  EXPECT_EQ(plan->pool.num_blocks, 930);  // 20 GiB / (4 x 5,767,168 B)
  EXPECT_EQ(plan->capacity.max_tokens, 162'097);

  // With the SSM state in bfloat16 (the engine's default before NemotronH's float32): 2,621,440
  // + 73,728 = 2,695,168 B, 658 tokens, a block of 128 x 6 = 768.
  LaunchConfig bf16 = Launch(1, 20 * kGiB);
  bf16.cache.mamba_ssm_cache_dtype = KvCacheDtype::kBfloat16;
  plan = PlanWith(NemotronNano9B(), bf16);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->diagnostics.empty());
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 768);
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 2'695'168);
  // Without prefix caching (mode none, the engine's default for a hybrid) the block is only a
  // multiple of the kernel block: 16 x ceil(658 / 16) = 672, the "672 tokens" vLLM issue 24280
  // quotes for this launch.
  bf16.cache.enable_prefix_caching = false;
  plan = PlanWith(NemotronNano9B(), bf16);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 672);
}

// Mode all aligns the hybrid block to the model's Mamba chunk size: `mamba_chunk_size` before
// `chunk_size` (1,298 tokens: 256 x 6 = 1,536), or to --mamba-block-size when given (lcm(64,
// 16) = 64: 64 x 21 = 1,344); mode align to the kernel block alone (16 x 82 = 1,312).
TEST(MambaHybrids, ModeAllAlignsToTheMambaChunkSize) {
  nlohmann::json chunked = NemotronNano9B();
  chunked["chunk_size"] = 64;
  chunked["mamba_chunk_size"] = 256;
  auto plan = PlanWith(chunked, Launch(1, 20 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 1536);
  chunked.erase("mamba_chunk_size");
  plan = PlanWith(chunked, Launch(1, 20 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 1344);

  LaunchConfig mamba_block = Launch(1, 20 * kGiB);
  mamba_block.cache.mamba_block_size = 64;
  plan = PlanWith(NemotronNano9B(), mamba_block);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 1344);
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 1344);

  LaunchConfig align = Launch(1, 20 * kGiB);
  align.cache.mamba_cache_mode = RecurrentMode::kAlign;
  plan = PlanWith(NemotronNano9B(), align);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 1312);

  nlohmann::json bad = NemotronNano9B();
  bad["chunk_size"] = 0;
  EXPECT_EQ(ConfigError(bad, Launch(1, 20 * kGiB)),
            "config.json 'config.json': field 'chunk_size' must be in [1, 65536], got 0");
}

// The engine's default for a hybrid model is prefix caching off (ModelConfig.
// is_prefix_caching_supported), so `vllm serve` without --enable-prefix-caching runs the recurrent
// layers in mode none: the attention block is only a multiple of the kernel block, 16 x 82 =
// 1,312, and with a bfloat16 SSM state 672, the figure vLLM issue 24280 quotes for this model.
// --mamba-cache-mode all is then forced to none, with the engine's warning.
TEST(MambaHybrids, HybridsDefaultToNoPrefixCaching) {
  LaunchConfig c = Launch(1, 20 * kGiB);
  c.cache.enable_prefix_caching.reset();
  auto plan = PlanWith(NemotronNano9B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->cache.enable_prefix_caching, std::optional<bool>(false));
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].severity, Severity::kInfo);
  EXPECT_EQ(plan->diagnostics[0].message,
            "NemotronHForCausalLM is a hybrid model, for which the engine leaves prefix caching "
            "off unless --enable-prefix-caching is given; recurrent layers use mode none");
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kNone);
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 1312);
  c.cache.mamba_ssm_cache_dtype = KvCacheDtype::kBfloat16;
  plan = PlanWith(NemotronNano9B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 672);

  c.cache.mamba_cache_mode = RecurrentMode::kAll;
  plan = PlanWith(NemotronNano9B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->diagnostics.size(), 2u);
  EXPECT_EQ(plan->diagnostics[1].message,
            "--mamba-cache-mode all needs prefix caching, which is off (the engine's default for "
            "a hybrid model; pass --enable-prefix-caching); recurrent layers use mode none");
}

// Mode align on request; none with prefix caching is kept (docs/runtime.md), with a warning that
// the engine reads it as unset; all on a model without Mamba prefix caching falls back to align;
// align without chunked prefill stops the engine.
TEST(MambaHybrids, CacheModes) {
  LaunchConfig align = Launch(1, 20 * kGiB);
  align.cache.mamba_cache_mode = RecurrentMode::kAlign;
  auto plan = PlanWith(NemotronNano9B(), align);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kAlign);
  EXPECT_EQ(plan->groups[0].geometry.max_pages_per_request(), 2);

  LaunchConfig none = Launch(1, 20 * kGiB);
  none.cache.mamba_cache_mode = RecurrentMode::kNone;
  plan = PlanWith(NemotronNano9B(), none);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kNone);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "--mamba-cache-mode none is kept with prefix caching (recurrent groups never hit), "
            "but vLLM reads none as unset and runs all for NemotronHForCausalLM; omit the flag "
            "to plan what the engine runs");

  LaunchConfig qwen_all = Launch(1, 20 * kGiB);
  qwen_all.cache.mamba_cache_mode = RecurrentMode::kAll;
  plan = PlanWith(Qwen35_35B_A3B(), qwen_all);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(HasCode(*plan, "mamba-cache-mode-all-unsupported"));
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kAlign);

  LaunchConfig whole = Launch(1, 20 * kGiB);
  whole.cache.max_model_len = 8192;
  whole.enable_chunked_prefill = false;
  plan = PlanWith(NemotronNano9B(), whole);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();  // mode all: no chunked prefill needed
  whole.cache.mamba_cache_mode = RecurrentMode::kAlign;
  plan = PlanWith(NemotronNano9B(), whole);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->accepted());
  EXPECT_TRUE(HasCode(*plan, "mamba-align-chunked-prefill"));
}

// The newer spelling (layers_block_type, mamba_n_groups, mamba_d_conv) reads the same; MTP caches
// one attention layer per * of mtp_hybrid_override_pattern, only with num_nextn_predict_layers 1.
TEST(MambaHybrids, SpellingsAndMtp) {
  nlohmann::json newer = NemotronNano9B();
  const std::string pattern = newer["hybrid_override_pattern"];
  newer.erase("hybrid_override_pattern");
  nlohmann::json types = nlohmann::json::array();
  for (char ch : pattern) {
    types.push_back(ch == 'M' ? "mamba" : ch == '*' ? "attention" : "mlp");
  }
  newer["layers_block_type"] = types;
  newer["mamba_n_groups"] = newer["n_groups"];
  newer.erase("n_groups");
  newer["mamba_d_conv"] = newer["conv_kernel"];
  newer.erase("conv_kernel");
  auto plan = PlanWith(newer, Launch(1, 20 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 5'316'608);
  EXPECT_EQ(plan->pool.num_blocks, 930);

  LaunchConfig mtp = Launch(1, 20 * kGiB);
  mtp.speculative =
      ParseSpeculativeConfig(R"({"method":"mtp","num_speculative_tokens":2})").value();
  EXPECT_EQ(ConfigError(NemotronNano9B(), mtp),
            "--speculative-config method 'mtp' needs in-model MTP layers, but config.json "
            "'config.json' declares none (num_nextn_predict_layers 1 with an "
            "mtp_hybrid_override_pattern of * and E); choose another method");
  nlohmann::json with_mtp = NemotronNano9B();
  with_mtp["num_nextn_predict_layers"] = 1;
  with_mtp["mtp_hybrid_override_pattern"] = "*E*E";
  auto specs = BuildModelCacheSpecsFromJson(with_mtp, mtp);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  std::vector<std::string> drafts;
  for (const LayerSpec& s : specs->layers) {
    if (s.role == Role::kDraft) drafts.push_back(s.name);
  }
  EXPECT_EQ(drafts, (std::vector<std::string>{"model.layers.56.mixer", "model.layers.58.mixer"}));
}

TEST(MambaHybrids, MalformedFieldsAreNamed) {
  const LaunchConfig c = Launch(1, 20 * kGiB);
  nlohmann::json bad = NemotronNano9B();
  bad["hybrid_override_pattern"] = std::string(55, 'M') + "G";
  EXPECT_EQ(ConfigError(bad, c),
            "config.json 'config.json': field 'hybrid_override_pattern' has 'G' at layer 55; "
            "accepted: M, *, -, E");
  bad["hybrid_override_pattern"] = "M*";
  EXPECT_EQ(ConfigError(bad, c),
            "config.json 'config.json': field 'hybrid_override_pattern' has 2 layers but "
            "num_hidden_layers is 56");
  bad["hybrid_override_pattern"] = std::string(28, '*') + std::string(28, '-');
  EXPECT_EQ(ConfigError(bad, c),
            "config.json 'config.json': field 'hybrid_override_pattern' has no Mamba layer (M); "
            "kvtopo plans NemotronH models with both attention and Mamba layers");
  bad["hybrid_override_pattern"] = std::string(28, 'M') + std::string(28, 'E');
  EXPECT_EQ(ConfigError(bad, c),
            "config.json 'config.json': field 'hybrid_override_pattern' has no attention layer "
            "(*); kvtopo plans NemotronH models with both attention and Mamba layers");
  bad.erase("hybrid_override_pattern");
  EXPECT_EQ(ConfigError(bad, c),
            "config.json 'config.json': field 'hybrid_override_pattern' is missing");
  bad = NemotronNano9B();
  bad["mamba_ssm_cache_dtype"] = "int8";
  EXPECT_EQ(ConfigError(bad, c),
            "config.json 'config.json': field 'mamba_ssm_cache_dtype' is 'int8'; accepted: "
            "float32, bfloat16, float16");
  // 128 Mamba heads over 3 ranks: the engine's mixer asserts first that TP divides the heads,
  // and so does the plan.
  LaunchConfig tp3 = Launch(3, 20 * kGiB);
  Result<ModelCacheSpecs> specs = BuildModelCacheSpecsFromJson(NemotronNano9B(), tp3);
  ASSERT_FALSE(specs.ok());
  EXPECT_EQ(specs.status().message(),
            "Mamba2 state: num_heads = 128 is not divisible by --tensor-parallel-size 3; choose a "
            "tensor-parallel size that divides it");
}

}  // namespace
// 20 GiB at --max-model-len 32768: in mode all a recurrent group keeps a state per block, and one
// request of the configs' full length would not fit.
LaunchConfig HybridLaunch(int64_t tp) {
  LaunchConfig c = Launch(tp, 20 * kGiB);
  c.cache.max_model_len = 32768;
  return c;
}

// 20 GiB at TP1 with the engine's defaults (prefix caching as the model has it), at
// `max_model_len` (0: the config's).
LaunchConfig DefaultLaunch(int64_t max_model_len) {
  LaunchConfig c;
  c.model = "config.json";
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = max_model_len;
  return c;
}

// A Bamba-9B-shaped config (32 layers, attention at 9, 18 and 27; hidden 4096, 32 heads, Mamba
// state 128), the other fields at BambaConfig's defaults: 8 KV heads of 128, 128 Mamba heads of
// 8,192 / 128 = 64, one group, conv kernel 4, chunk size 256.
nlohmann::json Bamba9B() {
  return nlohmann::json::parse(R"({
    "architectures": ["BambaForCausalLM"], "model_type": "bamba", "torch_dtype": "bfloat16",
    "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    "mamba_d_state": 128, "attn_layer_indices": [9, 18, 27]})");
}

// The Mamba2 state per layer: conv (3, 8,192 + 2 x 128) and SSM (128, 64, 128), both in the model's
// bfloat16 (the engine's auto) = 50,688 + 2,097,152 = 2,147,840 B. An attention token is
// 2 x 8 x 128 x 2 B = 4,096 B, so 525 tokens hold a state; with prefix caching (mode all) the
// block is a multiple of the chunk size 256: 768 tokens, a page of 3,145,728 B.
TEST(MambaFamilies, BambaAttentionLayersByIndex) {
  auto plan = PlanWith(Bamba9B(), HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_TRUE(plan->diagnostics.empty());
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 2'147'840);
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kAll);
  EXPECT_EQ(plan->groups[0].layers.front(), "model.layers.0.mixer");
  const PlannedGroup& attention = plan->groups.back();
  EXPECT_EQ(attention.geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(attention.layers,
            (std::vector<std::string>{"model.layers.9.attn", "model.layers.18.attn",
                                      "model.layers.27.attn"}));
  EXPECT_EQ(attention.geometry.block_size(), 768);
  EXPECT_EQ(attention.geometry.page_size_bytes(), 3'145'728);
  EXPECT_EQ(plan->groups.size(), 11u);     // 29 Mamba layers in 10 groups, one attention group
  EXPECT_EQ(plan->pool.num_blocks, 2275);  // 20 GiB / (3 x 3,145,728 B)

  // At TP4 the state splits: the one group is repeated to 4 so each rank holds its heads' group
  // (the engine's extra_groups_for_head_shards), conv (8,192 + 2 x 4 x 128) / 4 = 2,304 channels,
  // 32 heads: 13,824 + 524,288 = 538,112 B; 2 KV heads make a 1,024 B token, 526 tokens, 768.
  plan = PlanWith(Bamba9B(), HybridLaunch(4));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 538'112);
  EXPECT_EQ(plan->groups.back().geometry.block_size(), 768);

  nlohmann::json bad = Bamba9B();
  bad["attn_layer_indices"] = nlohmann::json::array();
  EXPECT_EQ(ConfigError(bad, HybridLaunch(1)),
            "config.json 'config.json': field 'attn_layer_indices' makes 0 of the 32 layers "
            "attention layers; kvtopo plans Bamba models with both attention and Mamba layers");
  bad = Bamba9B();
  bad["num_key_value_heads"] = 3;
  EXPECT_EQ(ConfigError(bad, HybridLaunch(1)),
            "config.json 'config.json': field 'num_key_value_heads' is 3, which does not divide "
            "num_attention_heads 32");
  bad = Bamba9B();
  bad["mamba_n_heads"] = 100;
  EXPECT_EQ(ConfigError(bad, HybridLaunch(1)),
            "config.json 'config.json': field 'mamba_n_heads' is 100, which does not divide "
            "mamba_expand x hidden_size 8192");
  bad = Bamba9B();
  bad["mamba_d_head"] = 32;
  EXPECT_EQ(ConfigError(bad, HybridLaunch(1)),
            "config.json 'config.json': field 'mamba_d_head' is 32, but mamba_n_heads 128 heads "
            "of it are not mamba_expand x hidden_size 8192");
  bad = Bamba9B();
  bad["mamba_d_conv"] = 1;  // the conv state keeps kernel - 1 columns
  EXPECT_EQ(ConfigError(bad, HybridLaunch(1)),
            "config.json 'config.json': field 'mamba_d_conv' must be in [2, 65536], got 1");
  bad = Bamba9B();
  bad["mamba_d_head"] = "64";
  EXPECT_NE(ConfigError(bad, HybridLaunch(1)), "(accepted)");
}

// GraniteMoeHybrid (Granite 4.0) names each layer in layer_types; a model of attention layers
// only is no hybrid (no alignment), as the engine's ModelConfig.is_hybrid decides.
TEST(MambaFamilies, GraniteMoeHybridLayerTypes) {
  nlohmann::json granite = Bamba9B();
  granite["architectures"] = {"GraniteMoeHybridForCausalLM"};
  granite["model_type"] = "granitemoehybrid";
  granite["max_position_embeddings"] = 131072;
  granite["num_key_value_heads"] = 8;
  granite.erase("attn_layer_indices");
  granite["num_hidden_layers"] = 4;
  granite["layer_types"] = {"mamba", "attention", "mamba", "mamba"};
  auto plan = PlanWith(granite, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 2'147'840);
  EXPECT_EQ(plan->groups[3].layers, std::vector<std::string>{"model.layers.1.self_attn.attn"});
  EXPECT_EQ(plan->groups[3].geometry.block_size(), 768);

  granite["layer_types"] = {"attention", "attention", "attention", "attention"};
  plan = PlanWith(granite, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 16);

  granite["layer_types"] = {"mamba", "mamba", "mamba", "mamba"};
  EXPECT_EQ(ConfigError(granite, HybridLaunch(1)),
            "config.json 'config.json': field 'layer_types' makes 0 of the 4 layers attention "
            "layers; kvtopo plans GraniteMoeHybrid models with both attention and Mamba layers");
  granite["layer_types"] = {"attention", "mamba", "moe", "mamba"};
  EXPECT_EQ(ConfigError(granite, HybridLaunch(1)),
            "config.json 'config.json': field 'layer_types' entry 2 is 'moe'; accepted: mamba, "
            "attention");
  granite.erase("layer_types");
  EXPECT_EQ(ConfigError(granite, HybridLaunch(1)),
            "config.json 'config.json': field 'layer_types' is missing");
}

// A Falcon-H1-7B-shaped config (Transformers' FalconH1 table: 44 layers, hidden 3072, 12 heads
// and 2 KV heads of 128, 24 Mamba heads of 128, state 256; one group, chunk size 256): every
// layer has attention and a Mamba2 mixer. State: conv (3, 3,072 + 2 x 256) and SSM (24, 128,
// 256) in bfloat16 = 21,504 + 1,572,864 = 1,594,368 B; an attention token is 1,024 B, so
// 1,557 tokens hold it and the block is 256 x 7 = 1,792.
TEST(MambaFamilies, FalconH1ParallelAttentionAndMamba) {
  nlohmann::json falcon = nlohmann::json::parse(R"({
    "architectures": ["FalconH1ForCausalLM"], "model_type": "falcon_h1", "torch_dtype": "bfloat16",
    "num_hidden_layers": 44, "hidden_size": 3072, "num_attention_heads": 12,
    "num_key_value_heads": 2, "head_dim": 128, "mamba_n_heads": 24, "mamba_d_head": 128,
    "mamba_d_ssm": 3072, "mamba_d_state": 256, "mamba_n_groups": 1,
    "max_position_embeddings": 262144})");
  auto plan = PlanWith(falcon, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[0].layers.front(), "model.layers.0.attn");
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 1792);
  EXPECT_EQ(plan->groups[1].layers.front(), "model.44.mixer");
  EXPECT_EQ(plan->groups[1].layers.back(), "model.87.mixer");
  EXPECT_EQ(plan->groups[1].natural_page_size_bytes, 1'594'368);

  // mamba_d_ssm absent is the config class's 1024 (24 heads of 1024 / 24 do not divide it);
  // null is mamba_expand x hidden_size.
  falcon.erase("mamba_d_ssm");
  EXPECT_EQ(ConfigError(falcon, HybridLaunch(1)),
            "config.json 'config.json': field 'mamba_n_heads' is 24, which does not divide "
            "mamba_d_ssm 1024");
  falcon["mamba_d_ssm"] = nullptr;
  falcon["mamba_d_head"] = 256;
  plan = PlanWith(falcon, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[1].natural_page_size_bytes, (6144 + 512) * 3 * 2 + 24 * 256 * 256 * 2);
  // The class takes int(mamba_expand x hidden_size): 1.5 x 3,072 = 4,608 channels in 24 heads
  // of 192; a product that is no whole number is FalconH1Config's refusal.
  falcon["mamba_expand"] = 1.5;
  falcon["mamba_d_head"] = 192;
  plan = PlanWith(falcon, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[1].natural_page_size_bytes, (4608 + 512) * 3 * 2 + 24 * 192 * 256 * 2);
  falcon["mamba_expand"] = 1.3;
  EXPECT_EQ(ConfigError(falcon, HybridLaunch(1)),
            "config.json 'config.json': field 'mamba_expand' is 1.3, and mamba_expand x "
            "hidden_size 3072 is not a whole number of channels in [1, 65536] (FalconH1Config "
            "refuses it: mamba_n_heads must divide it)");
}

// A Jamba-shaped config (32 layers, attention every 8th from layer 4; hidden 4096, 8 KV heads of
// 128, Mamba1 state 16, conv 4): the Mamba1 state is conv (8,192, 3) and SSM (8,192, 16) in
// bfloat16 = 49,152 + 262,144 = 311,296 B, 76 attention tokens. Mamba1 has no chunk size, so
// with prefix caching (mode all) the block is 2,048; in mode align 16 x 5 = 80.
TEST(MambaFamilies, JambaMamba1) {
  nlohmann::json jamba = nlohmann::json::parse(R"({
    "architectures": ["JambaForCausalLM"], "model_type": "jamba", "torch_dtype": "bfloat16",
    "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    "num_key_value_heads": 8, "attn_layer_period": 8, "attn_layer_offset": 4,
    "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "sliding_window": null,
    "max_position_embeddings": 262144})");
  auto plan = PlanWith(jamba, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 311'296);
  const PlannedGroup& attention = plan->groups.back();
  EXPECT_EQ(attention.layers,
            (std::vector<std::string>{"model.layers.4.attn", "model.layers.12.attn",
                                      "model.layers.20.attn", "model.layers.28.attn"}));
  EXPECT_EQ(attention.geometry.block_size(), 2048);

  LaunchConfig align = HybridLaunch(1);
  align.cache.mamba_cache_mode = RecurrentMode::kAlign;
  plan = PlanWith(jamba, align);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups.back().geometry.block_size(), 80);

  // TP splits the channels; the conv state is not widened by speculative tokens.
  LaunchConfig tp2 = HybridLaunch(2);
  plan = PlanWith(jamba, tp2);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 155'648);

  jamba["attn_layer_period"] = 64;
  jamba["attn_layer_offset"] = 40;
  EXPECT_EQ(ConfigError(jamba, HybridLaunch(1)),
            "config.json 'config.json': field 'attn_layer_offset' makes 0 of the 32 layers "
            "attention layers; kvtopo plans Jamba models with both attention and Mamba layers");
  jamba["attn_layer_period"] = 8;
  jamba["attn_layer_offset"] = 8;
  EXPECT_EQ(ConfigError(jamba, HybridLaunch(1)),
            "config.json 'config.json': field 'attn_layer_offset' is 8, not smaller than "
            "attn_layer_period 8");
}

// An LFM2-350M-shaped config (16 layers, attention at 2, 5, 8, 10, 12 and 14; hidden and conv
// channels 1024, 16 heads and 8 KV heads of 64, conv_L_cache 3): the short-conv state is
// (1,024, 2) in bfloat16 = 4,096 B; an attention token is 2 x 8 x 64 x 2 B = 2,048 B, so the
// kernel block of 16 already holds a state, and conv pages are padded to the attention page
// (32,768 B). LFM2 has no Mamba prefix caching: mode align.
TEST(MambaFamilies, Lfm2ShortConvolutions) {
  nlohmann::json lfm2 = nlohmann::json::parse(R"({
    "architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "torch_dtype": "bfloat16",
    "num_hidden_layers": 16, "hidden_size": 1024, "conv_dim": 1024, "num_attention_heads": 16,
    "num_key_value_heads": 8, "conv_L_cache": 3, "full_attn_idxs": [2, 5, 8, 10, 12, 14],
    "max_position_embeddings": 128000})");
  auto plan = PlanWith(lfm2, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 3u);  // 10 conv layers in two groups of 5, one attention group
  EXPECT_EQ(plan->groups[0].layers.front(), "model.layers.0.conv");
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 4096);
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kAlign);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 32768);
  const PlannedGroup& attention = plan->groups.back();
  EXPECT_EQ(attention.layers.front(), "model.layers.2.self_attn.attn");
  EXPECT_EQ(attention.geometry.block_size(), 16);

  // layer_types wins over full_attn_idxs; any type but full_attention is a convolution.
  lfm2["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 16; ++i)
    lfm2["layer_types"].push_back(i % 4 == 3 ? "full_attention" : "conv");
  plan = PlanWith(lfm2, HybridLaunch(2));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups.back().layers.front(), "model.layers.3.self_attn.attn");
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 2048);  // (512, 2) at TP2

  nlohmann::json bad = lfm2;
  bad.erase("conv_dim");
  EXPECT_EQ(ConfigError(bad, HybridLaunch(1)),
            "config.json 'config.json': field 'conv_dim' is missing");
  bad = lfm2;
  bad["conv_L_cache"] = 1;
  EXPECT_EQ(ConfigError(bad, HybridLaunch(1)),
            "config.json 'config.json': field 'conv_L_cache' must be in [2, 65536], got 1");
  bad = lfm2;
  bad.erase("layer_types");
  bad.erase("full_attn_idxs");
  EXPECT_EQ(ConfigError(bad, HybridLaunch(1)),
            "config.json 'config.json': field 'layer_types' makes 16 of the 16 layers attention "
            "layers; kvtopo plans LFM2 models with both attention and short-convolution layers");

  // The MoE model's conv channels are hidden_size, and it must state layer_types.
  nlohmann::json moe = lfm2;
  moe["architectures"] = {"Lfm2MoeForCausalLM"};
  moe["model_type"] = "lfm2_moe";
  moe.erase("conv_dim");
  moe["hidden_size"] = 2048;
  moe["num_attention_heads"] = 32;
  plan = PlanWith(moe, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 8192);
  moe.erase("layer_types");
  EXPECT_EQ(ConfigError(moe, HybridLaunch(1)),
            "config.json 'config.json': field 'layer_types' is missing");
}

// A compressed-tensors kv_cache_scheme caches fp8 in the K/V layers while the engine's cache
// config stays auto, and its hybrid alignment sizes an attention token by that dtype (the model's
// bfloat16: 2 x 1 x 256 x 2 B = 1,024 B at TP4): the 278,528 B state takes a 272-token block, to
// which the recurrent layers align, while the fp8 attention page (139,264 B) doubles its block to
// 544 to match the padded state page. Scheduler block 544, hash block 272, 10,280 blocks (the
// engine's get_kv_cache_configs gives the same).
TEST(GdnHybrids, CompressedTensorsKvSchemeAlignsAtTheModelDtype) {
  nlohmann::json config = Qwen3Next80B();
  config["quantization_config"] = nlohmann::json::parse(R"({
    "quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {},
    "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": false,
                        "symmetric": true}})");
  LaunchConfig c = Launch(4, 32 * kGiB);
  c.cache.max_model_len = 32768;
  auto plan = PlanWith(config, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kRecurrent);
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 272);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 278'528);
  EXPECT_EQ(plan->groups[3].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(plan->groups[3].geometry.block_size(), 544);
  EXPECT_EQ(plan->groups[3].geometry.page_size_bytes(), 278'528);
  EXPECT_EQ(plan->scheduler_block_size, 544);
  EXPECT_EQ(plan->hash_block_size, 272);
  EXPECT_EQ(plan->pool.num_blocks, 10'280);
  // --kv-cache-dtype fp8 is the cache config's own: the alignment counts fp8, block 544 for all.
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  plan = PlanWith(config, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 544);
  EXPECT_EQ(plan->groups[3].geometry.block_size(), 544);
  EXPECT_EQ(plan->hash_block_size, 544);
}

// VLLM_SSM_CONV_STATE_LAYOUT orders every conv state as the engine's get_conv_state_layout does:
// SD (state_len, channels) unset or SD, DS (channels, state_len); any other value fails the
// engine's start where a layer sizes its conv state, or for a model without one where the engine
// core ends its start.
TEST(MambaFamilies, ConvStateLayoutFollowsTheVariable) {
  const nlohmann::json lfm2 = CorpusConfig("lfm2-350m");
  auto first_state = [](const ModelCacheSpecs& specs) {
    for (const LayerSpec& l : specs.layers) {
      if (l.kind == CacheKind::kRecurrent) return l.state.front().shape;
    }
    return std::vector<int64_t>{};
  };
  LaunchConfig c = HybridLaunch(2);
  Result<ModelCacheSpecs> specs = BuildModelCacheSpecsFromJson(lfm2, c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(first_state(*specs), (std::vector<int64_t>{2, 512}));
  c.ssm_conv_state_layout = "SD";
  EXPECT_EQ(first_state(*BuildModelCacheSpecsFromJson(lfm2, c)), (std::vector<int64_t>{2, 512}));
  c.ssm_conv_state_layout = "DS";
  specs = BuildModelCacheSpecsFromJson(lfm2, c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(first_state(*specs), (std::vector<int64_t>{512, 2}));
  auto plan = PlanWith(lfm2, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 2048);  // the same bytes either way

  c.ssm_conv_state_layout = "ds";
  plan = PlanWith(lfm2, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [ssm-conv-state-layout] VLLM_SSM_CONV_STATE_LAYOUT 'ds' is not one of the "
            "engine's choices, SD or DS, and Lfm2ForCausalLM has recurrent layers with a conv "
            "state: the engine refuses it as it sizes them (\"Invalid value 'ds' for "
            "VLLM_SSM_CONV_STATE_LAYOUT. Valid options: ['SD', 'DS'].\"); set SD, DS or unset it");
  // Set but empty is not unset: os.getenv gives '' and the engine refuses it too.
  c.ssm_conv_state_layout = "";
  plan = PlanWith(lfm2, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "ssm-conv-state-layout"),
            "VLLM_SSM_CONV_STATE_LAYOUT '' is not one of the engine's choices, SD or DS, and "
            "Lfm2ForCausalLM has recurrent layers with a conv state: the engine refuses it as it "
            "sizes them (\"Invalid value '' for VLLM_SSM_CONV_STATE_LAYOUT. Valid options: "
            "['SD', 'DS'].\"); set SD, DS or unset it");
  // MiniMax-Text-01's lightning attention keeps no conv state: no layer reads it, but the engine
  // core reads every variable as it ends its start (enable_envs_cache) and fails there.
  nlohmann::json minimax = CorpusConfig("minimax-text-01");
  LaunchConfig m = HybridLaunch(8);
  m.ssm_conv_state_layout = "ds";
  plan = PlanWith(minimax, m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "ssm-conv-state-layout"),
            "VLLM_SSM_CONV_STATE_LAYOUT 'ds' is not one of the engine's choices, SD or DS, and "
            "the engine refuses it as its engine core ends its start and reads every variable, "
            "once the weights are loaded and the KV cache allocated (\"Invalid value 'ds' for "
            "VLLM_SSM_CONV_STATE_LAYOUT. Valid options: ['SD', 'DS'].\"); set SD, DS or unset it");
  m.ssm_conv_state_layout = "DS";
  plan = PlanWith(minimax, m);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(HasCode(*plan, "ssm-conv-state-layout"));
  // A model without recurrent layers, and DeepSeek-V4, whose planner is its own, alike.
  for (const char* name : {"llama-3.1-8b", "deepseek-v4-flash-shaped"}) {
    LaunchConfig c8 = HybridLaunch(8);
    c8.cache.kv_cache_dtype = KvCacheDtype::kFp8;
    c8.ssm_conv_state_layout = "x";
    plan = PlanWith(CorpusConfig(name), c8);
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status().ToString();
    EXPECT_TRUE(HasCode(*plan, "ssm-conv-state-layout")) << name;
    c8.ssm_conv_state_layout.reset();
    plan = PlanWith(CorpusConfig(name), c8);
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status().ToString();
    EXPECT_TRUE(plan->accepted()) << name << plan->ErrorLines();
  }
}

// A MiniMax-Text-01-shaped config (80 layers, softmax attention every 8th, the rest lightning
// attention; 64 heads and 8 KV heads of 128): a lightning layer keeps (64 / TP, 128, 128) in
// bfloat16, 262,144 B at TP8; a softmax token is 2 x 1 x 128 x 2 B = 512 B at TP8, so the block
// grows to 16 x ceil(262,144 / (16 x 512)) = 512 tokens and the state fills the page exactly.
// 70 lightning layers in 7 groups of 10, one softmax group; mode align (no Mamba prefix
// caching).
TEST(MambaFamilies, MiniMaxText01LightningAttention) {
  nlohmann::json minimax = nlohmann::json::parse(R"({
    "architectures": ["MiniMaxText01ForCausalLM"], "model_type": "minimax_text_01",
    "torch_dtype": "bfloat16", "num_hidden_layers": 80, "hidden_size": 6144,
    "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
    "max_position_embeddings": 1048576})");
  minimax["attn_type_list"] = nlohmann::json::array();
  for (int i = 0; i < 80; ++i) minimax["attn_type_list"].push_back(i % 8 == 7 ? 1 : 0);
  auto plan = PlanWith(minimax, HybridLaunch(8));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 8u);
  EXPECT_EQ(plan->groups[0].layers.front(), "model.layers.0");
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 262'144);
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kAlign);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 262'144);
  EXPECT_EQ(plan->groups[7].layers.front(), "model.layers.7.attn");
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 512);

  // layer_types spells the same; without any list every layer is softmax attention, which the
  // engine still plans as a hybrid: refused.
  nlohmann::json named = minimax;
  named.erase("attn_type_list");
  named["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 80; ++i) {
    named["layer_types"].push_back(i % 8 == 7 ? "full_attention" : "linear_attention");
  }
  plan = PlanWith(named, HybridLaunch(8));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 512);
  named.erase("layer_types");
  EXPECT_EQ(ConfigError(named, HybridLaunch(8)),
            "config.json 'config.json': field 'attn_type_list' makes 80 of the 80 layers "
            "attention layers; kvtopo plans MiniMax-Text-01 models with both attention and "
            "linear-attention layers");
  nlohmann::json bad = minimax;
  bad["attn_type_list"][3] = 2;
  EXPECT_EQ(ConfigError(bad, HybridLaunch(8)),
            "config.json 'config.json': field 'attn_type_list' entry 3 is 2; accepted: 0 (linear "
            "attention), 1 (softmax attention)");
  bad = minimax;
  bad.erase("head_dim");
  EXPECT_EQ(ConfigError(bad, HybridLaunch(8)),
            "config.json 'config.json': field 'head_dim' is missing");
  EXPECT_EQ(ConfigError(minimax, HybridLaunch(3)),
            "linear attention state: num_heads = 64 is not divisible by --tensor-parallel-size "
            "3; choose a tensor-parallel size that divides it");
  // Under model_type minimax the engine takes Transformers' MiniMaxConfig, which derives
  // layer_types when no list is given (softmax at the even layers) and 131,072 positions.
  nlohmann::json hf = named;
  hf["architectures"] = {"MiniMaxForCausalLM"};
  hf["model_type"] = "minimax";
  hf.erase("max_position_embeddings");
  plan = PlanWith(hf, HybridLaunch(8));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 32'768);  // HybridLaunch's, below the class's 131,072
  int softmax = 0;
  for (const auto& g : plan->groups) {
    for (const std::string& layer : g.layers) softmax += layer.ends_with(".attn") ? 1 : 0;
  }
  EXPECT_EQ(softmax, 40);
  const auto attention = std::find_if(plan->groups.begin(), plan->groups.end(), [](const auto& g) {
    return g.geometry.kind() == CacheKind::kFullAttention;
  });
  ASSERT_NE(attention, plan->groups.end());
  EXPECT_EQ(attention->layers.front(), "model.layers.0.attn");
  EXPECT_EQ(attention->layers.back(), "model.layers.78.attn");
}

// A Zamba2-2.7B-shaped config (54 layers in the config class's default list, 9 of them hybrid;
// hidden 2560, 32 heads, 80 Mamba heads, state 64): attention is multi-head, 32 KV heads of
// 2 x 2560 / 32 = 160, 20,480 B a token; the Mamba2 state is conv (3, 5,120 + 2 x 64) and SSM
// (80, 64, 64) in bfloat16 = 31,488 + 655,360 = 686,848 B, 34 tokens, so in mode all the block
// is the chunk size 256. The engine builds the 9 attention layers first: one group of 9, then
// the 54 Mamba mixers in 6 groups. 20 GiB / (9 x 5,242,880 B) = 455 blocks.
TEST(MambaFamilies, Zamba2SharedAttentionBlocks) {
  nlohmann::json zamba = nlohmann::json::parse(R"({
    "architectures": ["Zamba2ForCausalLM"], "model_type": "zamba2", "torch_dtype": "bfloat16",
    "num_hidden_layers": 54, "hidden_size": 2560, "num_attention_heads": 32,
    "n_mamba_heads": 80, "mamba_d_state": 64, "mamba_ngroups": 1, "chunk_size": 256,
    "max_position_embeddings": 4096})");
  auto plan = PlanWith(zamba, Launch(1, 20 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 7u);
  const PlannedGroup& attention = plan->groups[0];
  EXPECT_EQ(attention.geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(attention.layers.size(), 9u);
  EXPECT_EQ(attention.layers.front(), "model.attn.0");
  EXPECT_EQ(attention.geometry.block_size(), 256);
  EXPECT_EQ(attention.geometry.page_size_bytes(), 5'242'880);
  EXPECT_EQ(plan->groups[1].layers.front(), "9.mixer");
  EXPECT_EQ(plan->groups[1].natural_page_size_bytes, 686'848);
  EXPECT_EQ(plan->groups[1].geometry.recurrent_mode(), RecurrentMode::kAll);
  EXPECT_EQ(plan->pool.num_blocks, 455);

  nlohmann::json bad = zamba;
  bad["layers_block_type"] = std::vector<std::string>(54, "mamba");
  EXPECT_EQ(ConfigError(bad, Launch(1, 20 * kGiB)),
            "config.json 'config.json': field 'layers_block_type' has no hybrid layer; kvtopo "
            "plans Zamba2 models with both attention and Mamba layers");
  bad = zamba;
  bad["num_hidden_layers"] = 38;
  EXPECT_EQ(ConfigError(bad, Launch(1, 20 * kGiB)),
            "config.json 'config.json': field 'layers_block_type' is missing, and the config "
            "class's default list has 54 layers where num_hidden_layers is 38");
  bad = zamba;
  bad["num_attention_heads"] = 3;
  EXPECT_EQ(ConfigError(bad, Launch(1, 20 * kGiB)),
            "config.json 'config.json': field 'num_attention_heads' is 3, which does not divide 2 "
            "x hidden_size 5120");
  // Zamba2Config sets mamba_headdim to mamba_expand x hidden_size / n_mamba_heads whatever the
  // config states, so the class's estimate takes the layers' heads: a stated 512 changes nothing.
  nlohmann::json wide = zamba;
  wide["mamba_headdim"] = 512;
  plan = PlanWith(wide, Launch(1, 20 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 256);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 5'242'880);
  EXPECT_EQ(plan->groups[1].natural_page_size_bytes, 686'848);
  EXPECT_EQ(plan->pool.num_blocks, 455);
  // A speculative token: the estimate, 686,848 B, leaves out the conv state's speculative column
  // (697,344 B); both fit the 48-token block's 983,040 B page (a narrow stated head width is
  // ignored too).
  nlohmann::json narrow = zamba;
  narrow["mamba_headdim"] = 16;
  LaunchConfig narrow_launch = Launch(1, 20 * kGiB);
  narrow_launch.cache.mamba_cache_mode = RecurrentMode::kAlign;
  narrow_launch.cache.async_scheduling = false;
  narrow_launch.speculative = SpeculativeConfig{.method = "ngram", .num_speculative_tokens = 1};
  plan = PlanWith(narrow, narrow_launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 48);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 983'040);
  EXPECT_EQ(plan->groups[1].natural_page_size_bytes, 697'344);
  // use_long_context sets max_position_embeddings to 16384 whatever the config states.
  nlohmann::json long_context = zamba;
  long_context["use_long_context"] = true;
  long_context["max_position_embeddings"] = 4096;
  auto long_plan = PlanWith(long_context, DefaultLaunch(0));
  ASSERT_TRUE(long_plan.ok()) << long_plan.status().ToString();
  EXPECT_EQ(long_plan->model.max_model_len, 16384);
}

// A PLaMo-2-1B-shaped config (16 layers, mamba_step 2: attention at the odd layers; 16 heads and
// 1 KV head of 128; 32 Mamba heads of 128, state 64, conv kernel 4, no B/C groups): the Mamba
// state is a conv (4,096, 3) and an SSM (32, 128, 64) in bfloat16, 24,576 + 524,288 = 548,864 B.
// An attention token is 2 x 1 x 128 x 2 B = 512 B, so the block grows to 1,072 tokens (67 kernel
// blocks of 16) whose page holds the state. PLaMo 2 has no Mamba prefix caching: mode align.
TEST(MambaFamilies, Plamo2MambaEveryStep) {
  nlohmann::json plamo = nlohmann::json::parse(R"({
    "architectures": ["Plamo2ForCausalLM"], "model_type": "plamo2", "torch_dtype": "bfloat16",
    "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
    "num_key_value_heads": 1, "hidden_size_per_head": 128, "max_position_embeddings": 10485760,
    "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_num_heads": 32, "mamba_step": 2,
    "mamba_chunk_size": 256})");
  auto plan = PlanWith(plamo, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 2u);
  EXPECT_EQ(plan->groups[0].layers.front(), "model.layers.0.mixer");
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 548'864);
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kAlign);
  const PlannedGroup& attention = plan->groups.back();
  EXPECT_EQ(attention.layers.size(), 8u);
  EXPECT_EQ(attention.layers.front(), "model.layers.1.mixer.attn");
  EXPECT_EQ(attention.geometry.block_size(), 1072);
  EXPECT_EQ(attention.geometry.page_size_bytes(), 548'864);

  // TP2 halves the heads and channels (the KV head is replicated): 12,288 + 262,144 B.
  plan = PlanWith(plamo, HybridLaunch(2));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 274'432);

  // With mamba_step above twice the layer count, only the last layer attends.
  plamo["num_hidden_layers"] = 3;
  plamo["mamba_step"] = 8;
  plan = PlanWith(plamo, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups.back().layers, (std::vector<std::string>{"model.layers.2.mixer.attn"}));
  plamo["num_hidden_layers"] = 1;
  EXPECT_EQ(ConfigError(plamo, HybridLaunch(1)),
            "config.json 'config.json': field 'num_hidden_layers' makes 1 of the 1 layers "
            "attention layers; kvtopo plans PLaMo 2 models with both attention and Mamba layers");
  plamo["num_hidden_layers"] = 16;
  plamo["mamba_step"] = 1;
  EXPECT_EQ(ConfigError(plamo, HybridLaunch(1)),
            "config.json 'config.json': field 'mamba_step' must be in [2, 4096], got 1");
  plamo["mamba_step"] = 2;
  plamo.erase("hidden_size_per_head");
  EXPECT_EQ(ConfigError(plamo, HybridLaunch(1)),
            "config.json 'config.json': field 'hidden_size_per_head' is missing");
}

// Speculative decoding widens MambaMixer2's conv state by the speculative tokens, but Bamba's
// get_mamba_state_shape_from_config (as GraniteMoeHybrid's, FalconH1's and Zamba2's) leaves
// num_spec out, and the engine sizes the attention block and pads the Mamba pages from that
// estimate. Bamba-9B without prefix caching: the estimate of 2,147,840 B takes 528-token blocks
// (16 x cdiv(2,147,840, 16 x 4,096)), a 2,162,688 B page; one speculative token widens the conv
// state by 8,448 channels x 2 B to 2,164,736 B, past the padded page, and the engine asserts.
// PLaMo 2's own mixer does not widen at all.
TEST(MambaFamilies, SpeculativeWideningAgainstTheClassEstimate) {
  LaunchConfig c = DefaultLaunch(32768);
  c.speculative = SpeculativeConfig{.method = "ngram", .num_speculative_tokens = 1};
  c.cache.async_scheduling = false;
  auto plan = PlanWith(Bamba9B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [mamba-page-padding] layer 'model.layers.0.mixer': its state takes "
            "2164736 B, but the engine sizes the 528-token attention block from its model "
            "class's estimate, 2147840 B (get_mamba_state_shape_from_config passes no num_spec, "
            "leaving out the conv state's 1 speculative columns), pads every Mamba page to the "
            "2162688 B attention page and asserts no state exceeds it "
            "(MambaSpec.page_size_bytes) once the weights are loaded; drop --speculative-config, "
            "or raise --block-size to 544, whose attention page holds it");
  c.cache.block_size = 544;
  plan = PlanWith(Bamba9B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 2'164'736);
  EXPECT_EQ(plan->groups.back().geometry.block_size(), 544);
  EXPECT_EQ(plan->groups.back().geometry.page_size_bytes(), 2'228'224);

  // Falcon-H1-7B (conv 3,072 + 2 x 256 channels): the 1,568-token block's page of 1,605,632 B
  // holds the estimate of 1,594,368 B and one widened column (1,601,536 B) but not two
  // (1,608,704 B). The block stays the estimate's.
  const nlohmann::json falcon = CorpusConfig("falcon-h1-7b");
  c = DefaultLaunch(32768);
  c.speculative = SpeculativeConfig{.method = "ngram", .num_speculative_tokens = 1};
  c.cache.async_scheduling = false;
  plan = PlanWith(falcon, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 1568);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 1'605'632);
  EXPECT_EQ(plan->groups[1].natural_page_size_bytes, 1'601'536);
  c.speculative->num_speculative_tokens = 2;
  plan = PlanWith(falcon, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "mamba-page-padding"),
            "layer 'model.44.mixer': its state takes 1608704 B, but the engine sizes the "
            "1568-token attention block from its model class's estimate, 1594368 B "
            "(get_mamba_state_shape_from_config passes no num_spec, leaving out the conv state's "
            "2 speculative columns), pads every Mamba page to the 1605632 B attention page and "
            "asserts no state exceeds it (MambaSpec.page_size_bytes) once the weights are "
            "loaded; drop --speculative-config, or raise --block-size to 1584, whose attention "
            "page holds it");

  // PLaMo 2: 548,864 B of state with or without speculative tokens.
  const nlohmann::json plamo = CorpusConfig("plamo-2-1b");
  c = DefaultLaunch(8192);
  c.speculative = SpeculativeConfig{.method = "ngram", .num_speculative_tokens = 4};
  c.cache.async_scheduling = false;
  plan = PlanWith(plamo, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 548'864);
  EXPECT_EQ(plan->groups[1].geometry.block_size(), 1072);
}

// Attention-free models: every layer keeps one recurrent state ("backbone.layers.i.mixer"). A
// falcon-mamba-7b config (64 layers; intermediate_size 8192, which wins over expand 16 x 4096;
// state 16, conv 4): conv (8,192, 3) and SSM (8,192, 16) in bfloat16 = 311,296 B a layer. No
// length field: 2,048 tokens. Prefix caching is off by default, so one block of the whole length
// per request: 20 GiB / (64 x 311,296 B) = 1,077 blocks, 1,077 x 2,048 tokens.
TEST(MambaFamilies, AttentionFreeMamba) {
  nlohmann::json falcon = nlohmann::json::parse(R"({
    "architectures": ["FalconMambaForCausalLM"], "model_type": "falcon_mamba",
    "torch_dtype": "bfloat16", "hidden_size": 4096, "intermediate_size": 8192, "expand": 16,
    "state_size": 16, "conv_kernel": 4, "num_hidden_layers": 64, "vocab_size": 65024})");
  LaunchConfig launch = DefaultLaunch(0);
  auto plan = PlanWith(falcon, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->model.max_model_len, 2048);
  ASSERT_EQ(plan->groups.size(), 1u);
  const PlannedGroup& g = plan->groups[0];
  EXPECT_EQ(g.layers.size(), 64u);
  EXPECT_EQ(g.layers.front(), "backbone.layers.0.mixer");
  EXPECT_EQ(g.layers.back(), "backbone.layers.63.mixer");
  EXPECT_EQ(g.geometry.recurrent_mode(), RecurrentMode::kNone);
  EXPECT_EQ(g.natural_page_size_bytes, 311'296);
  EXPECT_EQ(g.geometry.block_size(), 2048);
  EXPECT_EQ(plan->pool.num_blocks, 1077);
  EXPECT_EQ(plan->capacity.max_tokens, 1077 * 2048);
  ASSERT_EQ(plan->diagnostics.size(), 2u);
  EXPECT_EQ(plan->diagnostics[0].code, "config-length-default");
  EXPECT_EQ(plan->diagnostics[1].message,
            "FalconMambaForCausalLM is an attention-free model, for which the engine leaves "
            "prefix caching off unless --enable-prefix-caching is given; recurrent layers use "
            "mode none");

  // Any length: the block is the length.
  launch.cache.max_model_len = 100000;
  plan = PlanWith(falcon, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 100000);

  // With prefix caching the engine's mode is all, at the engine's 16-token block (no attention
  // backend picks one): 128 blocks per 2,048-token request, 1,077 / 128 x 2,048 = 17,232 tokens.
  launch.cache.max_model_len = 0;
  launch.cache.enable_prefix_caching = true;
  plan = PlanWith(falcon, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kAll);
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 16);
  EXPECT_EQ(plan->pool.num_blocks, 1077);
  EXPECT_EQ(plan->capacity.max_tokens, 17232);
  launch.cache.block_size = 32;
  plan = PlanWith(falcon, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 32);

  LaunchConfig tp3 = HybridLaunch(3);
  EXPECT_EQ(ConfigError(falcon, tp3),
            "Mamba1 state: intermediate size = 8192 is not divisible by --tensor-parallel-size "
            "3; choose a tensor-parallel size that divides it");

  // MambaConfig's defaults: 32 layers of expand 2 x hidden 768 channels, state 16, conv 4; no
  // torch_dtype reads as float32, which the engine runs as bfloat16: (3 + 16) x 1,536 x 2 B.
  plan = PlanWith(nlohmann::json::parse(R"({"architectures": ["MambaForCausalLM"]})"),
                  HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 32u);
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 58'368);
  // Without intermediate_size the channels are expand x hidden_size.
  falcon.erase("intermediate_size");
  plan = PlanWith(falcon, HybridLaunch(1));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, (3 + 16) * 65536 * 2);
}

// Mamba2 at Mamba2Config's defaults (Mamba-Codestral's shape: 64 layers, hidden 4096 x expand 2
// channels in 128 heads of 64, 8 groups, state 128, conv 4): conv (3, 8,192 + 2 x 8 x 128) and SSM
// (128, 64, 128) in bfloat16 = 61,440 + 2,097,152 = 2,158,592 B a layer; 20 GiB / 64 pages = 155
// blocks (too few for full decode CUDA graphs of 256 rows: eager). TP splits heads and groups; the
// mixer replicates groups only from one.
TEST(MambaFamilies, AttentionFreeMamba2) {
  nlohmann::json mamba2 = nlohmann::json::parse(
      R"({"architectures": ["Mamba2ForCausalLM"], "torch_dtype": "bfloat16"})");
  LaunchConfig launch = DefaultLaunch(0);
  launch.cache.enforce_eager = true;
  auto plan = PlanWith(mamba2, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 64u);
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 2'158'592);
  EXPECT_EQ(plan->groups[0].geometry.block_size(), 2048);
  EXPECT_EQ(plan->pool.num_blocks, 155);

  launch.parallel.tensor_parallel_size = 8;
  plan = PlanWith(mamba2, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, (1280 * 3 + 16 * 64 * 128) * 2);
  launch.parallel.tensor_parallel_size = 16;
  EXPECT_EQ(ConfigError(mamba2, launch),
            "Mamba2 state: n_groups = 8 is not divisible by --tensor-parallel-size 16, and the "
            "engine's Mamba2 mixer replicates groups only from one; choose a tensor-parallel size "
            "that divides it");
  // One group is replicated to every rank: 1 + 15 groups, conv (8,192 + 2 x 16 x 128) / 16.
  mamba2["n_groups"] = 1;
  plan = PlanWith(mamba2, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, (768 * 3 + 8 * 64 * 128) * 2);
}

// Bailing MoE V2.5 (Ling-2.6-flash: 32 layers, MLA at every 8th (7, 15, 23, 31), the others
// lightning attention of 32 heads of 128): a state of (32, 128, 128) in bfloat16 = 1,048,576 B;
// an MLA token is 576 x 2 B, so the MLA block grows to 16 x ceil(1,048,576 / 18,432) = 912 tokens,
// a page of 1,050,624 B. Eight groups of four layers: 20 GiB / (4 x 1,050,624 B) = 5,110 blocks.
TEST(MambaFamilies, BailingV25LightningAndMla) {
  std::ifstream in(std::filesystem::path(KVTOPO_SOURCE_DIR) /
                   "fuzz/corpus/config_plan/ling-2.6-flash.json");
  nlohmann::json ling = nlohmann::json::parse(in);
  LaunchConfig launch = DefaultLaunch(1024);
  auto plan = PlanWith(ling, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 8u);
  EXPECT_EQ(plan->groups[0].layers.front(), "model.layers.0.self_attn");
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 1'048'576);
  const PlannedGroup& mla = plan->groups.back();
  EXPECT_EQ(mla.geometry.kind(), CacheKind::kMla);
  EXPECT_EQ(mla.layers,
            (std::vector<std::string>{"model.layers.7.self_attn", "model.layers.15.self_attn",
                                      "model.layers.23.self_attn", "model.layers.31.self_attn"}));
  EXPECT_EQ(mla.geometry.block_size(), 912);
  EXPECT_EQ(mla.geometry.page_size_bytes(), 1'050'624);
  EXPECT_EQ(plan->pool.num_blocks, 5110);

  // TP2 halves the heads of the state; TP8 does not divide group_norm_size 4.
  launch.parallel.tensor_parallel_size = 2;
  plan = PlanWith(ling, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 524'288);
  launch.parallel.tensor_parallel_size = 8;
  plan = PlanWith(ling, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_FALSE(plan->accepted());
  EXPECT_EQ(
      plan->ErrorLines(),
      "\n  error [tp-group-norm] --tensor-parallel-size 8 does not divide group_norm_size 4 of "
      "'config.json', and the engine's BailingMoeV2_5ForCausalLM linear attention asserts "
      "that it does; choose a tensor-parallel size that divides 4");

  LaunchConfig mtp = launch;
  mtp.parallel.tensor_parallel_size = 1;
  mtp.speculative = SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 1};
  EXPECT_EQ(ConfigError(ling, mtp),
            "--speculative-config method 'mtp': the engine has no MTP model for "
            "BailingMoeV2_5ForCausalLM (its loader drops the checkpoint's MTP weights)");
  ling["layer_group_size"] = 1;
  EXPECT_EQ(ConfigError(ling, launch),
            "config.json 'config.json': field 'layer_group_size' makes 32 of the 32 layers "
            "attention layers; kvtopo plans Bailing MoE V2.5 models with both attention and "
            "linear-attention layers");
  ling["model_type"] = "bailing_moe_v2_5";
  EXPECT_EQ(ConfigError(ling, launch),
            "config.json 'config.json': field 'model_type' is 'bailing_moe_v2_5': the engine plans "
            "Bailing MoE V2.5's MLA layers as MLA only under model type bailing_hybrid, and kvtopo "
            "does not plan them under another");
}

// OLMo Hybrid at its config class's defaults (32 layers, full attention at every 4th; 30 heads of
// 3840 / 30 = 128, all K/V heads; GDN 30 key and value heads of 96 and 192, conv 4): the GDN state
// is conv (3, 2 x 30 x 96 + 30 x 192) and temporal (30, 192, 96) in bfloat16 = 69,120 + 1,105,920
// B; an attention token is 2 x 30 x 128 x 2 B, so the block grows to 16 x 5 = 80 tokens.
TEST(MambaFamilies, OlmoHybridGatedDeltaNet) {
  nlohmann::json olmo = nlohmann::json::parse(
      R"({"architectures": ["OlmoHybridForCausalLM"], "torch_dtype": "bfloat16"})");
  LaunchConfig launch = DefaultLaunch(1024);
  auto plan = PlanWith(olmo, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 4u);
  EXPECT_EQ(plan->groups[0].layers.front(), "model.layers.0.linear_attn");
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 69'120 + 1'105'920);
  const PlannedGroup& attention = plan->groups.back();
  EXPECT_EQ(attention.layers.front(), "model.layers.3.self_attn");
  EXPECT_EQ(attention.layers.size(), 8u);
  EXPECT_EQ(attention.spec.num_kv_heads, 30);
  EXPECT_EQ(attention.geometry.block_size(), 80);
  EXPECT_EQ(plan->model.max_model_len, 1024);

  olmo["linear_use_gate"] = false;
  EXPECT_EQ(ConfigError(olmo, launch),
            "config.json 'config.json': field 'linear_use_gate' is false: the engine's OLMo Hybrid "
            "model asserts a gated DeltaNet");
  olmo.erase("linear_use_gate");
  olmo["num_hidden_layers"] = 2;
  olmo["layer_types"] = {"linear_attention", "linear_attention"};
  EXPECT_EQ(
      ConfigError(olmo, launch),
      "config.json 'config.json': field 'layer_types' makes 0 of the 2 layers attention "
      "layers; kvtopo plans OLMo Hybrid models with both attention and Gated DeltaNet layers");
  // Without layer_types, two layers have none at i % 4 == 3: the last one is full.
  olmo.erase("layer_types");
  plan = PlanWith(olmo, launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups.back().layers, (std::vector<std::string>{"model.layers.1.self_attn"}));
}

// The multimodal wrappers of these hybrids build the same layers over text_config, without the
// engine's hooks that key the architecture string (MODELS_CONFIG_MAP) or the model class
// (SupportsMambaPrefixCaching): no Mamba prefix caching (align where NemotronH runs all), and,
// but for Nemotron-H Nano VL V2's own hook, the SSM state in the conv state's bfloat16.
TEST(HybridWrappers, KeepTheLayersButNotTheEngineHooks) {
  // NemotronNano9B's layers in float32: 1,298 tokens hold the state; align: 16 x 82 = 1,312.
  nlohmann::json vl = {{"architectures", {"NemotronH_Nano_VL_V2"}},
                       {"text_config", NemotronNano9B()}};
  auto plan = PlanWith(vl, Launch(1, 20 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 8u);
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 5'316'608);
  EXPECT_EQ(plan->groups[0].geometry.recurrent_mode(), RecurrentMode::kAlign);
  EXPECT_EQ(plan->groups[7].geometry.block_size(), 1312);
  // The Omni V3 models: bfloat16, 2,695,168 B, 658 tokens: 16 x 42 = 672.
  for (const char* omni :
       {"NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3"}) {
    SCOPED_TRACE(omni);
    vl["architectures"] = {omni};
    plan = PlanWith(vl, Launch(1, 20 * kGiB));
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 2'695'168);
    EXPECT_EQ(plan->groups[7].geometry.block_size(), 672);
  }
  // MiniCPM-V 4.6 and Intern-S2-Preview over Qwen3.5: text_config's float32 mamba_ssm_dtype is not
  // applied (1,097,728 B, a block of 544, as with --mamba-ssm-cache-dtype bfloat16 on
  // Qwen3.5-MoE), and naming float32 draws no warning (no hook to override).
  for (const char* wrapper :
       {"MiniCPMV4_6ForConditionalGeneration", "InternS2PreviewForConditionalGeneration"}) {
    SCOPED_TRACE(wrapper);
    nlohmann::json config = Qwen35_35B_A3B();
    config["architectures"] = {wrapper};
    plan = PlanWith(config, Launch(1, 20 * kGiB));
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_TRUE(plan->diagnostics.empty());
    EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 1'097'728);
    EXPECT_EQ(plan->groups[3].geometry.block_size(), 544);
    LaunchConfig fp32 = Launch(1, 20 * kGiB);
    fp32.cache.mamba_ssm_cache_dtype = KvCacheDtype::kFloat32;
    plan = PlanWith(config, fp32);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_TRUE(plan->diagnostics.empty());
    EXPECT_EQ(plan->groups[3].geometry.block_size(), 1056);
    LaunchConfig mtp = Launch(1, 20 * kGiB);
    mtp.speculative = SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 1};
    EXPECT_EQ(ConfigError(config, mtp),
              fmt::format("--speculative-config method 'mtp': kvtopo has not verified the "
                          "engine's MTP draft for the multimodal wrapper {}, and does not plan it",
                          wrapper));
  }
  // LFM2-VL's class estimates the short-convolution state from text_config's hidden_size, its
  // LFM2 layers keep conv_dim channels. hidden 4,096 (32 heads of 128, 8 KV heads: 4,096 B an
  // attention token), conv_L_cache 32: the estimate (31, 4,096) x 2 B = 253,952 B needs 62
  // tokens, so the block is 64 while the layers' state, (31, 1,024) x 2 B = 63,488 B, would fit
  // in 16.
  nlohmann::json lfm2 = CorpusConfig("lfm2-350m");
  lfm2["hidden_size"] = 4096;
  lfm2["num_attention_heads"] = 32;
  lfm2["conv_L_cache"] = 32;
  nlohmann::json lfm2_vl = {{"architectures", {"Lfm2VlForConditionalGeneration"}},
                            {"model_type", "lfm2_vl"},
                            {"text_config", lfm2}};
  plan = PlanWith(lfm2_vl, Launch(1, 20 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].natural_page_size_bytes, 63'488);
  EXPECT_EQ(plan->groups.back().geometry.block_size(), 64);
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 262'144);
  plan = PlanWith(lfm2, Launch(1, 20 * kGiB));  // the text model alone sizes by its own state
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups.back().geometry.block_size(), 16);
  // conv_dim above hidden_size: the estimate sizes a 262,144 B page the 507,904 B state does
  // not fit, which the engine asserts once the weights are loaded.
  lfm2_vl["text_config"]["conv_dim"] = 8192;
  plan = PlanWith(lfm2_vl, Launch(1, 20 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "mamba-page-padding"),
            "layer 'model.layers.0.conv': its state takes 507904 B, but the engine sizes the "
            "64-token attention block from its model class's estimate, 253952 B "
            "(get_mamba_state_shape_from_config reads text_config's hidden_size 4096 for the "
            "channels, where the layers keep conv_dim 8192), pads every Mamba page to the "
            "262144 B attention page and asserts no state exceeds it "
            "(MambaSpec.page_size_bytes) once the weights are loaded; raise --block-size to "
            "128, whose attention page holds it");
  // MiniMax-VL-01's wrapper is not a hybrid to the engine: refused with the reason.
  EXPECT_EQ(ConfigError({{"architectures", {"MiniMaxVL01ForConditionalGeneration"}},
                         {"text_config", nlohmann::json::object()}},
                        Launch(1, 20 * kGiB)),
            "config.json 'config.json': MiniMaxVL01ForConditionalGeneration is not planned: the "
            "engine's wrapper does not declare IsHybrid, so its hybrid setup never runs and the "
            "lightning-attention layers stop at startup without a mamba block size "
            "(minimax_vl_01.py, mamba/abstract.py); with --mamba-block-size their pages would "
            "still not be padded to the attention page");
}

}  // namespace kvtopo
