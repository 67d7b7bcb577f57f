// The KV-cache dtype a ModelOpt checkpoint states, which the engine takes for --kv-cache-dtype
// auto (resolve_kv_cache_dtype_string): inline quantization_config, the legacy
// hf_quant_config.json, the scheme and name forms, and what the engine ignores or refuses.
#include "model/quant_kv_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "kvtopo/dtype.h"
#include "kvtopo/launch.h"
#include "kvtopo/plan.h"
#include "test_configs.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

nlohmann::json WithQuant(const nlohmann::json& quant) {
  nlohmann::json config = testing_configs::Llama31_8B();
  config["quantization_config"] = quant;
  return config;
}

Result<internal::QuantKvCacheDtype> Resolve(const nlohmann::json& quant) {
  return internal::KvCacheDtypeFromQuantization(WithQuant(quant), "config.json");
}

// The forms the engine reads: names (any case), schemes of 8-bit static or 4-bit floats, the
// first key Python reads as true (the inner `quantization` object's before the root's, schemes
// before names); a producer named modelopt sets the method from its quant_algo.
TEST(QuantKvCache, ModelOptForms) {
  struct Case {
    const char* quant;
    std::optional<KvCacheDtype> dtype;
  };
  const Case cases[] = {
      {R"({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"})",
       KvCacheDtype::kFp8E4m3},
      {R"({"quant_method": "modelopt_fp4", "kv_cache_quant_algo": "nvfp4"})", KvCacheDtype::kNvfp4},
      {R"({"quant_method": "modelopt", "kv_cache_scheme": {"dynamic": false, "num_bits": 8,
           "type": "float"}})",
       KvCacheDtype::kFp8E4m3},
      {R"({"quant_method": "modelopt", "kv_cache_scheme": {"num_bits": 4, "type": "float"}})",
       KvCacheDtype::kNvfp4},
      {R"({"quant_method": "modelopt", "quantization": {"kv_cache_scheme": "",
           "kv_cache_quant_algo": "nvfp4"}, "kv_cache_scheme": "FP8"})",
       KvCacheDtype::kFp8E4m3},
      {R"({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "nvfp4",
           "kv_cache_quant_algo": "FP8"}})",
       KvCacheDtype::kFp8E4m3},
      {R"({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": null})",
       std::nullopt},
      {R"({"quant_method": "compressed-tensors", "kv_cache_scheme": {"dynamic": false,
           "num_bits": 8, "type": "float"}})",
       std::nullopt},
      {R"({"producer": {"name": "other"}, "quantization": {"quant_algo": "FP8",
           "kv_cache_quant_algo": "FP8"}})",
       std::nullopt},
      {R"({"quant_method": "modelopt", "kv_cache_quant_algo": 8})", std::nullopt},
      {"null", std::nullopt}};
  for (const Case& c : cases) {
    auto resolved = Resolve(nlohmann::json::parse(c.quant));
    ASSERT_TRUE(resolved.ok()) << c.quant << ": " << resolved.status().ToString();
    EXPECT_EQ(resolved->dtype, c.dtype) << c.quant;
  }
  EXPECT_EQ(Resolve(nlohmann::json::parse(R"({"quant_method": "modelopt",
                                              "kv_cache_quant_algo": "FP8"})"))
                ->note,
            "--kv-cache-dtype auto: config.json 'config.json' states a ModelOpt checkpoint whose "
            "quantization_config.kv_cache_quant_algo is \"FP8\", so the engine stores the KV "
            "cache as fp8_e4m3 (resolve_kv_cache_dtype_string); pass --kv-cache-dtype with the "
            "model's dtype to cache unquantized");
}

// What the engine warns about and ignores, and what it refuses.
TEST(QuantKvCache, UnknownValuesNamed) {
  auto dynamic = Resolve(nlohmann::json::parse(R"({"quant_method": "modelopt",
      "quantization": {"kv_cache_scheme": {"dynamic": true, "num_bits": 8, "type": "float"}}})"));
  ASSERT_TRUE(dynamic.ok()) << dynamic.status().ToString();
  EXPECT_EQ(dynamic->dtype, std::nullopt);
  EXPECT_EQ(dynamic->note,
            "config.json 'config.json': quantization_config.quantization.kv_cache_scheme is "
            "{\"dynamic\":true,\"num_bits\":8,\"type\":\"float\"}, which the engine does not know "
            "(it knows fp8 and nvfp4, or a scheme of 8-bit static or 4-bit floats): it warns and "
            "caches in the model's dtype under --kv-cache-dtype auto");
  const std::string int8 =
      Resolve(
          nlohmann::json::parse(R"({"quant_method": "modelopt", "kv_cache_quant_algo": "int8"})"))
          ->note;
  EXPECT_TRUE(
      int8.starts_with("config.json 'config.json': quantization_config.kv_cache_quant_algo "
                       "is \"int8\", which the engine does not know"))
      << int8;
  EXPECT_EQ(Resolve(nlohmann::json::parse(R"({"producer": {"name": "modelopt"},
                                              "quantization": {"quant_algo": "W4A8_AWQ"}})"))
                .status()
                .message(),
            "config.json 'config.json': field 'quantization_config.quantization.quant_algo' is "
            "'W4A8_AWQ': the engine knows the ModelOpt algorithms FP8, FP8_PER_CHANNEL_PER_TOKEN, "
            "FP8_PB_WO and NVFP4 and refuses the checkpoint ('Unknown ModelOpt quant algo')");
  EXPECT_EQ(Resolve(nlohmann::json("fp8")).status().message(),
            "config.json 'config.json': field 'quantization_config' must be an object, got "
            "\"fp8\"");
}

// Planned: Llama-3.1-8B's 32 layers of 8 K/V heads of 128 hold 65,536 tokens a GiB as fp8
// (bfloat16: 32,768): 262,144 tokens in 16 GiB. A given --kv-cache-dtype wins; an ignored value
// is a warning and the model's dtype.
TEST(QuantKvCache, PlansTheCheckpointsDtype) {
  LaunchConfig c;
  c.kv_cache_memory_bytes = 16 * kGiB;
  c.cache.max_model_len = 65536;
  auto plan = testing_configs::PlanWith(
      WithQuant({{"quant_method", "modelopt"}, {"kv_cache_quant_algo", "FP8"}}), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->capacity.max_tokens, 262144);
  ASSERT_FALSE(plan->diagnostics.empty());
  EXPECT_EQ(plan->diagnostics.front().code, "kv-cache-dtype-checkpoint");
  EXPECT_EQ(plan->diagnostics.front().severity, Severity::kInfo);
  c.cache.kv_cache_dtype = KvCacheDtype::kBfloat16;
  plan = testing_configs::PlanWith(
      WithQuant({{"quant_method", "modelopt"}, {"kv_cache_quant_algo", "FP8"}}), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 131072);
  c.cache.kv_cache_dtype = KvCacheDtype::kAuto;
  plan = testing_configs::PlanWith(
      WithQuant({{"quant_method", "modelopt"}, {"kv_cache_quant_algo", "int8"}}), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 131072);
  bool warned = false;
  for (const Diagnostic& d : plan->diagnostics) {
    warned |= d.code == "kv-cache-dtype-checkpoint" && d.severity == Severity::kWarning;
  }
  EXPECT_TRUE(warned);
}

// compressed-tensors' kv_cache_scheme (llm-compressor's FP8 KV checkpoints): the engine's K/V
// attention layers cache fp8 under --kv-cache-dtype auto (Attention.__init__), validate the
// scheme as they are built, and with strategy attn_head need a backend with per-head scales;
// MLA layers do none of it.
TEST(QuantKvCache, CompressedTensorsScheme) {
  const nlohmann::json fp8_tensor = {{"num_bits", 8},
                                     {"type", "float"},
                                     {"strategy", "tensor"},
                                     {"dynamic", false},
                                     {"symmetric", true}};
  auto with_scheme = [](nlohmann::json config, const nlohmann::json& scheme) {
    config["quantization_config"] = {{"quant_method", "compressed-tensors"},
                                     {"format", "float-quantized"},
                                     {"kv_cache_scheme", scheme}};
    return config;
  };
  LaunchConfig c;
  c.kv_cache_memory_bytes = 16 * kGiB;
  c.cache.max_model_len = 65536;
  const nlohmann::json llama = testing_configs::Llama31_8B();
  auto plan = testing_configs::PlanWith(with_scheme(llama, fp8_tensor), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->capacity.max_tokens, 262144);  // fp8: twice the bfloat16 131,072
  EXPECT_EQ(testing_configs::DiagnosticMessage(*plan, "kv-cache-dtype-checkpoint"),
            "config.json 'config.json': field 'quantization_config.kv_cache_scheme' "
            "(compressed-tensors): the engine's K/V attention layers cache fp8 under "
            "--kv-cache-dtype auto (Attention.__init__); MLA layers and those "
            "--kv-cache-dtype-skip-layers names keep the model's dtype");
  // An explicit dtype wins; a null scheme or another method reads none.
  c.cache.kv_cache_dtype = KvCacheDtype::kBfloat16;
  plan = testing_configs::PlanWith(with_scheme(llama, fp8_tensor), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 131072);
  c.cache.kv_cache_dtype = KvCacheDtype::kAuto;
  plan = testing_configs::PlanWith(with_scheme(llama, nullptr), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 131072);
  nlohmann::json awq = with_scheme(llama, fp8_tensor);
  awq["quantization_config"]["quant_method"] = "awq";
  plan = testing_configs::PlanWith(awq, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 131072);

  // The engine's validation, in its order.
  auto errors = [&](const nlohmann::json& scheme) {
    auto p = testing_configs::PlanWith(with_scheme(llama, scheme), c);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? p->ErrorLines() : std::string();
  };
  const std::string field =
      "\n  error [kv-cache-scheme] config.json 'config.json': field "
      "'quantization_config.kv_cache_scheme': ";
  const std::string refused = "; the engine's K/V attention layers refuse it as they are built";
  nlohmann::json scheme = fp8_tensor;
  scheme["type"] = "int";
  EXPECT_EQ(errors(scheme), "");  // num_bits 8 suffices
  scheme["num_bits"] = 4;
  EXPECT_EQ(errors(scheme),
            field +
                "its num_bits is 4 and its type 'int': the engine's compressed-tensors KV cache "
                "takes num_bits 8, type float ('Currently supported kv cache quantization is "
                "num_bits=8, type=float')" +
                refused);
  scheme = fp8_tensor;
  scheme["strategy"] = "channel";
  EXPECT_EQ(errors(scheme), field +
                                "its strategy is 'channel': the engine's compressed-tensors KV "
                                "cache takes tensor or attn_head ('Invalid strategy for "
                                "compressed-tensors KV cache')" +
                                refused);
  scheme.erase("strategy");
  EXPECT_EQ(errors(scheme), field +
                                "its strategy None is not a compressed-tensors quantization "
                                "strategy (tensor, channel, group, block, token, tensor_group, "
                                "attn_head): the engine fails reading it" +
                                refused);
  scheme = fp8_tensor;
  scheme["symmetric"] = false;
  EXPECT_EQ(errors(scheme), field +
                                "its symmetric is false: the engine's compressed-tensors KV cache "
                                "takes symmetric scales only ('Only support symmetric scaling "
                                "factor')" +
                                refused);
  auto text = testing_configs::PlanWith(with_scheme(llama, "fp8"), c);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            "config.json 'config.json': field 'quantization_config.kv_cache_scheme' is \"fp8\", "
            "not an object: the engine's compressed-tensors config maps its keys and fails");

  // Per-head scales (attn_head): FlashAttention 3 and later take them, Triton attention not.
  scheme = fp8_tensor;
  scheme["strategy"] = "attn_head";
  EXPECT_EQ(errors(scheme), "");
  c.cache.attention_backend = "TRITON_ATTN";
  EXPECT_EQ(errors(scheme),
            "\n  error [backend-per-head-scales] target layer 'model.layers.0.self_attn' (and 31 "
            "other layers) quantizes its K/V with per-head scales (config.json 'config.json': "
            "field 'quantization_config.kv_cache_scheme': strategy attn_head) but backend "
            "TRITON_ATTN takes none: the engine refuses the selection ('per-head quant scales "
            "not supported'); choose one that takes them on FlashAttention 3 or later "
            "(FLASH_ATTN, FLASH_ATTN_DIFFKV) with --attention-backend");
  c.cache.attention_backend.clear();

  // MLA layers keep the model's dtype and do not validate the scheme.
  std::ifstream in(std::string(KVTOPO_SOURCE_DIR) + "/profiles/kimi-k2.6.json");
  nlohmann::json kimi = nlohmann::json::parse(in);
  LaunchConfig k;
  k.parallel.tensor_parallel_size = 8;
  auto base = testing_configs::PlanWith(kimi, k);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  scheme["strategy"] = "channel";
  auto mla = testing_configs::PlanWith(with_scheme(kimi, scheme), k);
  ASSERT_TRUE(mla.ok()) << mla.status().ToString();
  EXPECT_EQ(mla->ErrorLines(), "");
  EXPECT_EQ(mla->capacity.max_tokens, base->capacity.max_tokens);
  EXPECT_EQ(mla->capacity.max_tokens, 488'704);
}

// Layers the engine builds without the cache config (Baichuan-13B's ALiBi layers, EXAONE MoE's
// MTP layers) take "auto" whatever --kv-cache-dtype says, but get the quantization config: a
// compressed-tensors kv_cache_scheme makes them fp8 all the same.
TEST(QuantKvCache, SchemeReachesLayersWithoutCacheConfig) {
  auto with_scheme = [](nlohmann::json config) {
    config["quantization_config"] = {
        {"quant_method", "compressed-tensors"},
        {"kv_cache_scheme",
         {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}, {"symmetric", true}}}};
    return config;
  };
  auto planned = [](const nlohmann::json& config, const LaunchConfig& c,
                    std::string_view info_code) {
    auto plan = testing_configs::PlanWith(config, c);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    std::pair<int64_t, std::string> out;
    if (!plan.ok()) return out;
    EXPECT_EQ(plan->ErrorLines(), "");
    out.first = plan->capacity.max_tokens;
    out.second = testing_configs::DiagnosticMessage(*plan, info_code);
    return out;
  };
  const nlohmann::json baichuan = testing_configs::CorpusConfig("baichuan2-13b");
  LaunchConfig c;
  EXPECT_EQ(planned(baichuan, c, "kv-cache-dtype-model").first, 41'936);
  EXPECT_EQ(planned(with_scheme(baichuan), c, "kv-cache-dtype-model"),
            std::make_pair(int64_t{83'872}, std::string()));
  c.cache.kv_cache_dtype = KvCacheDtype::kBfloat16;  // does not reach them
  EXPECT_EQ(planned(with_scheme(baichuan), c, "kv-cache-dtype-model"),
            std::make_pair(int64_t{83'872},
                           std::string("the attention layers of 'config.json' cache fp8 "
                                       "(config.json 'config.json': field "
                                       "'quantization_config.kv_cache_scheme'), not bfloat16: the "
                                       "engine builds them without the cache config")));
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;  // what they cache: no note
  EXPECT_EQ(planned(with_scheme(baichuan), c, "kv-cache-dtype-model"),
            std::make_pair(int64_t{83'872}, std::string()));

  const nlohmann::json exaone = testing_configs::CorpusConfig("k-exaone-236b");
  LaunchConfig mtp;
  mtp.parallel.tensor_parallel_size = 8;
  mtp.speculative = SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 1};
  mtp.cache.kv_cache_dtype = KvCacheDtype::kBfloat16;
  EXPECT_EQ(planned(exaone, mtp, "mtp-cache-dtype-model").first, 4'682'179);
  EXPECT_EQ(planned(with_scheme(exaone), mtp, "mtp-cache-dtype-model"),
            std::make_pair(int64_t{4'692'490},
                           std::string("the MTP layers of 'config.json' cache fp8 (config.json "
                                       "'config.json': field "
                                       "'quantization_config.kv_cache_scheme'), not bfloat16: the "
                                       "engine builds them without the cache config")));
  mtp.cache.kv_cache_dtype = KvCacheDtype::kAuto;  // every layer fp8
  EXPECT_EQ(planned(with_scheme(exaone), mtp, "mtp-cache-dtype-model"),
            std::make_pair(int64_t{8'932'138}, std::string()));
}

// ModelOpt 0.29 and before: hf_quant_config.json beside config.json becomes its
// quantization_config (get_config), named in the info.
TEST(QuantKvCache, LegacyFileBesideConfig) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kvtopo_legacy_quant";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << testing_configs::Llama31_8B().dump();
  std::ofstream(dir / "hf_quant_config.json")
      << R"({"producer": {"name": "modelopt", "version": "0.29.0"},
             "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8",
                              "group_size": 16, "exclude_modules": ["lm_head"]}})";
  LaunchConfig c;
  c.model = dir.string();
  c.kv_cache_memory_bytes = 16 * kGiB;
  c.cache.max_model_len = 65536;
  auto plan = PlanLaunch(c);
  std::ofstream(dir / "hf_quant_config.json") << "[1]";
  auto refused = PlanLaunch(c);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->capacity.max_tokens, 262144);
  EXPECT_EQ(plan->diagnostics.front().message,
            "--kv-cache-dtype auto: hf_quant_config.json '" +
                (dir / "hf_quant_config.json").string() +
                "' states a ModelOpt checkpoint whose quantization.kv_cache_quant_algo is \"FP8\", "
                "so the engine stores the KV cache as fp8_e4m3 (resolve_kv_cache_dtype_string); "
                "pass --kv-cache-dtype with the model's dtype to cache unquantized");
  EXPECT_EQ(refused.status().message(), "hf_quant_config.json '" +
                                            (dir / "hf_quant_config.json").string() +
                                            "': the whole file must be an object, got [1]");
}

}  // namespace
}  // namespace kvtopo
