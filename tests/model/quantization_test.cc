// The weights' quantization method the engine settles (ModelConfig._verify_quantization at
// 28be48fa9: the checkpoint's method, the overrides, --quantization) and its startup checks
// (VllmConfig._get_quantization_config: the GPU's compute capability, the model dtype).
#include "model/quantization.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"
#include "test_configs.h"

namespace kvtopo {
namespace {

using testing_configs::DiagnosticMessage;

nlohmann::json WithQuant(const nlohmann::json& quant) {
  nlohmann::json config = testing_configs::Llama31_8B();
  config["quantization_config"] = quant;
  return config;
}

// The method the engine runs `config` with under `launch`; the test fails on an error.
std::optional<std::string> MethodOf(const nlohmann::json& config,
                                    internal::QuantizationLaunch launch = {}) {
  Result<internal::QuantizationOutcome> out =
      internal::CheckQuantization(config, "config.json", "", launch);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return std::nullopt;
  for (const Diagnostic& d : out->diagnostics) {
    EXPECT_NE(d.severity, Severity::kError) << d.message;
  }
  return out->method;
}

// Plans launch `o` as the CLI and Python do.
Result<Plan> PlanOptions(const LaunchOptions& o) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchConfig c, ToLaunchConfig(o));
  return PlanLaunch(c);
}

internal::QuantizationLaunch Asked(const std::string& method) { return {.asked = method}; }

// The overrides, in the engine's order: each claims its checkpoints, some only on request.
TEST(Quantization, TheEnginesOverrides) {
  const nlohmann::json gptq =
      WithQuant({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"desc_act", false}});
  EXPECT_EQ(MethodOf(gptq), "auto_gptq");
  for (const char* asked : {"gptq", "gptq_marlin", "auto_gptq", "marlin"}) {
    EXPECT_EQ(MethodOf(gptq, Asked(asked)), "auto_gptq") << asked;
  }
  EXPECT_EQ(MethodOf(gptq, Asked("moe_wna16")), "moe_wna16");

  nlohmann::json awq =
      WithQuant({{"quant_method", "AWQ"}, {"bits", 4}, {"group_size", 128}, {"zero_point", true}});
  EXPECT_EQ(MethodOf(awq), "awq_marlin");
  EXPECT_EQ(MethodOf(awq, Asked("marlin")), "awq_marlin");
  EXPECT_EQ(MethodOf(awq, {.model_dtype = ElementType::kFloat16}), "awq_marlin");
  EXPECT_EQ(MethodOf(awq, {.asked = "awq", .model_dtype = ElementType::kFloat16}), "awq");
  EXPECT_EQ(MethodOf(awq, {.batch_invariant = true, .model_dtype = ElementType::kFloat16}), "awq");
  awq["quantization_config"]["group_size"] = 256;  // no Marlin group size
  EXPECT_EQ(MethodOf(awq, {.model_dtype = ElementType::kFloat16}), "awq");
  awq["quantization_config"]["group_size"] = 64.0;  // Python's 64.0 == 64
  awq["quantization_config"]["zero_point"] = false;
  EXPECT_EQ(MethodOf(awq, {.model_dtype = ElementType::kFloat16}), "awq");

  EXPECT_EQ(MethodOf(WithQuant({{"quant_method", "auto-round"}})), "inc");
  // ModelOpt by quant_algo (inner `quantization` first), and a modelopt producer's FP8.
  EXPECT_EQ(MethodOf(WithQuant(
                {{"quant_method", "modelopt"}, {"quantization", {{"quant_algo", "nvfp4"}}}})),
            "modelopt_fp4");
  EXPECT_EQ(MethodOf(WithQuant({{"quant_method", "modelopt"}, {"quant_algo", "MXFP8"}})),
            "modelopt_mxfp8");
  EXPECT_EQ(MethodOf(WithQuant({{"quant_method", "modelopt"}, {"quant_algo", "MIXED_PRECISION"}})),
            "modelopt_mixed");
  EXPECT_EQ(MethodOf(WithQuant({{"producer", {{"name", "modelopt"}}},
                                {"quantization", {{"quant_algo", "FP8"}}}}),
                     {.gpu = DeviceCapability{.major = 9, .minor = 0}}),
            "modelopt");

  // GPT-OSS's MXFP4 checkpoints, whatever --quantization says of them.
  nlohmann::json gpt_oss = WithQuant({{"quant_method", "mxfp4"}});
  gpt_oss["architectures"] = {"GptOssForCausalLM"};
  gpt_oss["model_type"] = "gpt_oss";
  EXPECT_EQ(MethodOf(gpt_oss), "gpt_oss_mxfp4");
  EXPECT_EQ(MethodOf(gpt_oss, Asked("mxfp4")), "gpt_oss_mxfp4");
  EXPECT_EQ(MethodOf(WithQuant({{"quant_method", "mxfp4"}})), "mxfp4");

  // DeepSeek-V4's FP8, by model type or on request.
  nlohmann::json v4 = WithQuant({{"quant_method", "fp8"}});
  EXPECT_EQ(MethodOf(v4), "fp8");
  EXPECT_EQ(MethodOf(v4, Asked("deepseek_v4_fp8")), "deepseek_v4_fp8");
  v4["model_type"] = "deepseek_v4";
  EXPECT_EQ(MethodOf(v4), "deepseek_v4_fp8");

  // The library's spelling is normalized; compression_config stands in for quantization_config,
  // and a multimodal model's text_config holds it.
  EXPECT_EQ(MethodOf(WithQuant({{"quant_method", "Compressed_Tensors"}})), "compressed-tensors");
  nlohmann::json compression = testing_configs::Llama31_8B();
  compression["compression_config"] = {{"quant_method", "compressed-tensors"}};
  EXPECT_EQ(MethodOf(compression), "compressed-tensors");
  nlohmann::json wrapper = {{"architectures", {"Mistral3ForConditionalGeneration"}},
                            {"text_config", WithQuant({{"quant_method", "fp8"}})}};
  EXPECT_EQ(MethodOf(wrapper), "fp8");
  // No method, or none asked for: unquantized; --quantization alone quantizes online.
  EXPECT_EQ(MethodOf(WithQuant({{"bits", 4}})), std::nullopt);
  EXPECT_EQ(MethodOf(testing_configs::Llama31_8B()), std::nullopt);
  EXPECT_EQ(MethodOf(testing_configs::Llama31_8B(), Asked("fp8_per_block")), "fp8_per_block");

  EXPECT_EQ(internal::CheckQuantization(WithQuant({{"quant_method", 4}}), "config.json", "", {})
                .status()
                .message(),
            "config.json 'config.json': field 'quantization_config.quant_method' is 4: the "
            "engine reads the quantization method as a string (quant_method.lower()) and fails "
            "on anything else");
}

// What the engine refuses, each as a plan error naming the method and where it came from.
TEST(Quantization, RefusalsNameTheMethodAndItsSource) {
  LaunchConfig c;
  c.kv_cache_memory_bytes = int64_t{16} << 30;
  const auto refused = [&](const nlohmann::json& config, const std::string& code) {
    Result<Plan> plan = testing_configs::PlanWith(config, c);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return std::string();
    EXPECT_FALSE(plan->accepted()) << code;
    return DiagnosticMessage(*plan, code);
  };
  const nlohmann::json awq =
      WithQuant({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", true}});
  c.quantization = "gptq";
  EXPECT_EQ(refused(awq, "quantization-mismatch"),
            "--quantization gptq does not match the checkpoint's method (config.json "
            "'config.json': quantization_config has quant_method 'awq'): the engine refuses the "
            "launch ('Quantization method specified in the model config (awq) does not match the "
            "quantization method specified in the `quantization` argument (gptq)'); drop "
            "--quantization or set it to awq");
  constexpr std::string_view kKnown =
      "awq, fp8, fbgemm_fp8, fp_quant, modelopt, modelopt_fp4, modelopt_mxfp8, modelopt_mixed, "
      "gguf, auto_gptq, gptq, gptq_marlin, awq_marlin, humming, compressed-tensors, "
      "bitsandbytes, experts_int8, quark, moe_wna16, torchao, inc, mxfp4, gpt_oss_mxfp4, "
      "deepseek_v4_fp8, cpu_awq, online, fp8_per_tensor, fp8_per_block, "
      "int8_per_channel_weight_only, mxfp8";
  c.quantization = "FP8";  // compared as given
  EXPECT_EQ(refused(testing_configs::Llama31_8B(), "quantization-unknown"),
            fmt::format("quantization method FP8 (--quantization FP8) is none the engine knows: "
                        "it refuses the launch ('Unknown quantization method: FP8'); it knows {}",
                        kKnown));
  c.quantization = "";
  EXPECT_EQ(refused(testing_configs::Llama31_8B(), "quantization-unknown"),
            fmt::format("quantization method '' (--quantization '') is none the engine knows: "
                        "it refuses the launch ('Unknown quantization method: '); it knows {}",
                        kKnown));
  c.quantization.reset();
  EXPECT_EQ(refused(WithQuant({{"quant_method", "hqq"}}), "quantization-unknown"),
            fmt::format("quantization method hqq (config.json 'config.json': "
                        "quantization_config) is none the engine knows: it refuses the launch "
                        "('Unknown quantization method: hqq'); it knows {}",
                        kKnown));

  const nlohmann::json fbgemm = WithQuant({{"quant_method", "fbgemm_fp8"}});
  EXPECT_EQ(refused(fbgemm, "quantization-deprecated"),
            "quantization method fbgemm_fp8 (config.json 'config.json': quantization_config) is "
            "deprecated: the engine refuses it unless --allow-deprecated-quantization is passed "
            "('The quantization method fbgemm_fp8 is deprecated and will be removed in future "
            "versions of vLLM')");
  c.allow_deprecated_quantization = true;
  Result<Plan> allowed = testing_configs::PlanWith(fbgemm, c);
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  EXPECT_TRUE(allowed->accepted()) << allowed->ErrorLines();
  c.allow_deprecated_quantization = false;

  // NVIDIA's ModelOpt FP8 runs from compute capability 8.9: not on an A100.
  const nlohmann::json modelopt =
      WithQuant({{"producer", {{"name", "modelopt"}}}, {"quantization", {{"quant_algo", "FP8"}}}});
  c.cache.device_capability = DeviceCapability{.major = 8, .minor = 0};
  EXPECT_EQ(refused(modelopt, "quantization-compute-capability"),
            "quantization method modelopt (config.json 'config.json': quantization_config) needs "
            "compute capability 8.9 or later, not 8.0 (--device-capability): the engine refuses "
            "the launch ('The quantization method modelopt is not supported for the current GPU. "
            "Minimum capability: 89. Current capability: 80.')");
  c.cache.device_capability = DeviceCapability{.major = 8, .minor = 9};
  Result<Plan> ada = testing_configs::PlanWith(modelopt, c);
  ASSERT_TRUE(ada.ok());
  EXPECT_TRUE(ada->accepted()) << ada->ErrorLines();
  c.cache.device_capability.reset();

  // MXFP4 computes in bfloat16 only; AWQ without Marlin in float16 only.
  c.model_dtype = ElementType::kFloat16;
  EXPECT_EQ(refused(WithQuant({{"quant_method", "mxfp4"}}), "quantization-dtype"),
            "the model runs in float16 but quantization method mxfp4 (config.json 'config.json': "
            "quantization_config) takes bfloat16 only: the engine refuses the launch "
            "('torch.float16 is not supported for quantization method mxfp4. Supported dtypes: "
            "[torch.bfloat16]'); pass --dtype bfloat16");
  c.model_dtype.reset();
  c.quantization = "awq";
  EXPECT_EQ(refused(awq, "quantization-dtype"),
            "the model runs in bfloat16 but quantization method awq (--quantization awq) takes "
            "float16 only: the engine refuses the launch ('torch.bfloat16 is not supported for "
            "quantization method awq. Supported dtypes: [torch.float16]'); pass --dtype float16");

  // --quantization-config goes with an online shorthand only.
  c.quantization = "fp8";
  c.not_planned_flags = {"--quantization-config"};
  c.not_planned_values = {{.flag = "--quantization-config", .values = {R"({"moe": "mxfp8"})"}}};
  EXPECT_EQ(refused(testing_configs::Llama31_8B(), "quantization-config"),
            "--quantization-config with --quantization fp8: the engine takes a quantization "
            "config only with an online shorthand (fp8_per_tensor, fp8_per_block, mxfp8, "
            "int8_per_channel_weight_only) and refuses the launch ('quantization_config is only "
            "supported when quantization is one of ...'); drop one of them");
  // "None" is no config (the parser's optional_type).
  c.not_planned_values = {{.flag = "--quantization-config", .values = {"None"}}};
  {
    Result<Plan> none = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->ErrorLines().find("quantization-config"), std::string::npos);
  }
  c.not_planned_values = {{.flag = "--quantization-config", .values = {R"({"moe": "mxfp8"})"}}};
  c.quantization = "fp8_per_tensor";
  Result<Plan> online = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
  ASSERT_TRUE(online.ok());
  EXPECT_TRUE(online->accepted()) << online->ErrorLines();
  EXPECT_EQ(nlohmann::json::parse(PlanToJsonText(*online))["model"]["quantization"],
            "fp8_per_tensor");
  c.quantization.reset();
  c.not_planned_flags.clear();
  Result<Plan> unquantized = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
  ASSERT_TRUE(unquantized.ok());
  EXPECT_EQ(nlohmann::json::parse(PlanToJsonText(*unquantized))["model"]["quantization"], nullptr);
}

// The profiles carry their checkpoints' quantization_config: gpt-oss's MXFP4 computes in bfloat16
// on compute capability 8.0 or later; DeepSeek-V3.2's FP8 runs from 7.5.
TEST(Quantization, ProfilesCarryTheirCheckpointsMethod) {
  LaunchOptions gpt;
  gpt.model = "gpt-oss-120b";
  gpt.dtype = "float16";
  Result<Plan> half = PlanOptions(gpt);
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  EXPECT_EQ(half->ErrorLines(),
            "\n  error [quantization-dtype] the model runs in float16 but quantization method "
            "gpt_oss_mxfp4 (config.json 'profiles/gpt-oss-120b.json': quantization_config) takes "
            "bfloat16 only: the engine refuses the launch ('torch.float16 is not supported for "
            "quantization method gpt_oss_mxfp4. Supported dtypes: [torch.bfloat16]'); pass "
            "--dtype bfloat16");
  gpt.dtype.reset();
  gpt.device_capability = "7.5";  // no bfloat16 there either
  Result<Plan> turing = PlanOptions(gpt);
  ASSERT_TRUE(turing.ok()) << turing.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*turing, "quantization-compute-capability"),
            "quantization method gpt_oss_mxfp4 (config.json 'profiles/gpt-oss-120b.json': "
            "quantization_config) needs compute capability 8.0 or later, not 7.5 "
            "(--device-capability): the engine refuses the launch ('The quantization method "
            "gpt_oss_mxfp4 is not supported for the current GPU. Minimum capability: 80. Current "
            "capability: 75.')");
  EXPECT_EQ(DiagnosticMessage(*turing, "quantization-dtype"),
            "the model runs in float16 but quantization method gpt_oss_mxfp4 (config.json "
            "'profiles/gpt-oss-120b.json': quantization_config) takes bfloat16 only: the engine "
            "refuses the launch ('torch.float16 is not supported for quantization method "
            "gpt_oss_mxfp4. Supported dtypes: [torch.bfloat16]'); none of them runs this model on "
            "compute capability 7.5 (--device-capability)");
  gpt.device_capability = "8.0";
  gpt.quantization = "mxfp4";  // GPT-OSS's override replaces it
  Result<Plan> ampere = PlanOptions(gpt);
  ASSERT_TRUE(ampere.ok()) << ampere.status().ToString();
  EXPECT_EQ(ampere->ErrorLines(), "");
  EXPECT_EQ(ampere->capacity.max_tokens, 827'693);
  // The plan says which method the engine runs the weights with.
  EXPECT_EQ(ampere->model.quantization, "gpt_oss_mxfp4");
  EXPECT_EQ(nlohmann::json::parse(PlanToJsonText(*ampere))["model"]["quantization"],
            "gpt_oss_mxfp4");
  const std::string table = FormatPlanTable(*ampere);
  EXPECT_EQ(table.substr(0, table.find('\n')),
            "model gpt-oss-120b  max-model-len 131072  TP1 DCP1 PCP1 interleave 1  GPU compute "
            "capability 8.0  weights gpt_oss_mxfp4");

  LaunchOptions deepseek;
  deepseek.model = "deepseek-v3.2";
  deepseek.tensor_parallel_size = 8;
  deepseek.quantization = "gptq";
  Result<Plan> mismatch = PlanOptions(deepseek);
  ASSERT_TRUE(mismatch.ok()) << mismatch.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*mismatch, "quantization-mismatch"),
            "--quantization gptq does not match the checkpoint's method (config.json "
            "'profiles/deepseek-v3.2.json': quantization_config has quant_method 'fp8'): the "
            "engine refuses the launch ('Quantization method specified in the model config (fp8) "
            "does not match the quantization method specified in the `quantization` argument "
            "(gptq)'); drop --quantization or set it to fp8");
  deepseek.quantization = "fp8";
  deepseek.device_capability = "7.5";
  Result<Plan> fp8 = PlanOptions(deepseek);
  ASSERT_TRUE(fp8.ok()) << fp8.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*fp8, "quantization-compute-capability"), "");
  EXPECT_EQ(DiagnosticMessage(*fp8, "quantization-dtype"), "");
}

// An external draft's model config: the speculative config's quantization against the draft
// checkpoint's method, deprecated methods refused whatever the target allows.
TEST(Quantization, ExternalDraftsOwnCheckpoint) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kvtopo_quant_draft";
  std::filesystem::create_directories(dir);
  nlohmann::json draft = testing_configs::Llama31_8B();
  draft["num_hidden_layers"] = 2;
  draft["quantization_config"] = {{"quant_method", "fbgemm_fp8"}};
  const std::string path = (dir / "config.json").string();
  std::ofstream(path) << draft.dump();
  LaunchConfig c;
  c.kv_cache_memory_bytes = int64_t{16} << 30;
  c.cache.max_model_len = 32768;
  c.allow_deprecated_quantization = true;  // the target's, not the draft's
  c.speculative =
      SpeculativeConfig{.method = "draft_model", .model = path, .num_speculative_tokens = 2};
  Result<Plan> plan = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "quantization-deprecated"),
            fmt::format("quantization method fbgemm_fp8 (config.json '{}': quantization_config) "
                        "is deprecated: the engine refuses it for a draft, whose model config it "
                        "builds without --allow-deprecated-quantization ('The quantization method "
                        "fbgemm_fp8 is deprecated and will be removed in future versions of "
                        "vLLM')",
                        path));
  c.speculative->quantization = "fp8";
  plan = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "quantization-mismatch"),
            fmt::format("the speculative config's 'quantization' fp8 does not match the "
                        "checkpoint's method (config.json '{}': quantization_config has "
                        "quant_method 'fbgemm_fp8'): the engine refuses the launch ('Quantization "
                        "method specified in the model config (fbgemm_fp8) does not match the "
                        "quantization method specified in the `quantization` argument (fp8)'); "
                        "drop the speculative config's 'quantization' or set it to fbgemm_fp8",
                        path));
  // An unquantized draft takes the key as an online method.
  draft.erase("quantization_config");
  std::ofstream(path) << draft.dump();
  plan = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();

  EXPECT_EQ(ParseSpeculativeConfig(R"({"method": "eagle3", "num_speculative_tokens": 2,
                                       "quantization": 8})")
                .status()
                .message(),
            "--speculative-config: 'quantization' must be a quantization method's name (a "
            "string) or null");
}

// A draft's quantization config is built as the proposer loads the draft, after the target's
// weights, and only where the target's is None (the proposer copies the target's VllmConfig):
// there the draft's method is checked against the GPU and the model dtype too.
TEST(Quantization, DraftsGpuAndDtypeAfterTheTargetLoads) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kvtopo_quant_draft2";
  std::filesystem::create_directories(dir);
  nlohmann::json draft = testing_configs::Llama31_8B();
  draft["num_hidden_layers"] = 2;
  draft["quantization_config"] = {
      {"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", false}};
  const std::string path = (dir / "config.json").string();
  std::ofstream(path) << draft.dump();
  LaunchConfig c;
  c.kv_cache_memory_bytes = int64_t{16} << 30;
  c.cache.max_model_len = 32768;
  c.speculative =
      SpeculativeConfig{.method = "draft_model", .model = path, .num_speculative_tokens = 2};
  // AWQ computes in float16 only; the draft runs in the target's bfloat16.
  Result<Plan> plan = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            fmt::format("\n  error [quantization-dtype] the draft, in the target's dtype, runs in "
                        "bfloat16 but quantization method awq (config.json '{}': "
                        "quantization_config) takes float16 only: the engine raises as it loads "
                        "the draft, once the target's weights are loaded ('torch.bfloat16 is not "
                        "supported for quantization method awq. Supported dtypes: "
                        "[torch.float16]'); pass --dtype float16",
                        path));
  // An online fp8 draft on a GPU below fp8's 7.5.
  draft.erase("quantization_config");
  std::ofstream(path) << draft.dump();
  c.speculative->quantization = "fp8";
  c.cache.device_capability = DeviceCapability{7, 0};
  plan = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "quantization-compute-capability"),
            "quantization method fp8 (the speculative config's 'quantization' fp8) needs compute "
            "capability 7.5 or later, not 7.0 (--device-capability): the engine raises as it "
            "loads the draft, once the target's weights are loaded ('The quantization method fp8 "
            "is not supported for the current GPU. Minimum capability: 75. Current capability: "
            "70.')");
  c.cache.device_capability = DeviceCapability{8, 0};
  plan = testing_configs::PlanWith(testing_configs::Llama31_8B(), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  // A quantized target: the proposer keeps the target's quantization config for the draft, and
  // the draft's own method is never checked against the GPU or the dtype.
  nlohmann::json target = testing_configs::Llama31_8B();
  target["quantization_config"] = {{"quant_method", "fp8"}};
  c.speculative->quantization = "awq";
  draft["quantization_config"] = {
      {"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", false}};
  std::ofstream(path) << draft.dump();
  plan = testing_configs::PlanWith(target, c);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.quantization, "fp8");
  EXPECT_EQ(plan->ErrorLines(), "");
}

// An MTP draft runs the target's checkpoint: with the target's method unless the speculative
// config names another, which must match it.
TEST(Quantization, MtpDraftNamingAnotherMethod) {
  LaunchOptions o;
  o.model = "deepseek-v3.2";
  o.tensor_parallel_size = 8;
  o.speculative_config =
      R"({"method": "mtp", "num_speculative_tokens": 1, "quantization": "gptq"})";
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "quantization-mismatch"),
            "the speculative config's 'quantization' gptq does not match the checkpoint's method "
            "(config.json 'profiles/deepseek-v3.2.json': quantization_config has quant_method "
            "'fp8'): the engine refuses the launch ('Quantization method specified in the model "
            "config (fp8) does not match the quantization method specified in the `quantization` "
            "argument (gptq)'); drop the speculative config's 'quantization' or set it to fp8");
  o.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 1, "quantization": "fp8"})";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
}

}  // namespace
}  // namespace kvtopo
