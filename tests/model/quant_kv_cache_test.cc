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
