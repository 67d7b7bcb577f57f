#include "model/quantization.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "internal/ascii_case.h"
#include "internal/json_text.h"
#include "model/config_reader.h"
#include "model/quant_kv_cache.h"

namespace kvtopo::internal {
namespace {

// One quantization method the engine knows (QuantizationMethods at 28be48fa9, in its order) and
// its config class's get_min_capability and get_supported_act_dtypes (capability as
// major x 10 + minor; 0: no minimum).
struct Method {
  std::string_view name;
  int64_t min_capability;
  std::vector<ElementType> act_dtypes;
  bool deprecated = false;  // DEPRECATED_QUANTIZATION_METHODS
};

constexpr ElementType kF32 = ElementType::kFloat32;
constexpr ElementType kF16 = ElementType::kFloat16;
constexpr ElementType kBf16 = ElementType::kBfloat16;

const std::vector<Method>& Methods() {
  static const std::vector<Method> kMethods = {
      {"awq", 75, {kF16}},                              // AWQConfig
      {"fp8", 75, {kBf16, kF16}},                       // Fp8Config
      {"fbgemm_fp8", 80, {kBf16, kF16}, true},          // FBGEMMFp8Config
      {"fp_quant", 100, {kBf16}, true},                 // FPQuantConfig
      {"modelopt", 89, {kBf16, kF16}},                  // ModelOptFp8Config
      {"modelopt_fp4", 75, {kBf16, kF16}},              // ModelOptNvFp4Config
      {"modelopt_mxfp8", 80, {kBf16}},                  // ModelOptMxFp8Config
      {"modelopt_mixed", 89, {kBf16, kF16}},            // ModelOptMixedPrecisionConfig
      {"gguf", 60, {kF16, kBf16, kF32}},                // GGUFConfig (no bfloat16 from 10.0)
      {"auto_gptq", 60, {kF16, kBf16}},                 // AutoGPTQConfig
      {"gptq", 60, {kF16, kBf16}},                      // AutoGPTQConfig
      {"gptq_marlin", 60, {kF16, kBf16}},               // AutoGPTQConfig
      {"awq_marlin", 75, {kF16, kBf16}},                // AWQMarlinConfig
      {"humming", 0, {}},                               // optional package: not checked
      {"compressed-tensors", 70, {kF32, kF16, kBf16}},  // CompressedTensorsConfig
      {"bitsandbytes", 70, {kF32, kF16, kBf16}},        // BitsAndBytesConfig
      {"experts_int8", 80, {kBf16, kF16}},              // ExpertsInt8Config
      {"quark", 70, {kF16, kBf16}},                     // QuarkConfig
      {"moe_wna16", 70, {kBf16, kF16}},                 // MoeWNA16Config
      {"torchao", 75, {kF32, kF16, kBf16}},             // TorchAOConfig
      {"inc", 60, {kF16, kBf16}},                       // INCConfig
      {"mxfp4", 80, {kBf16}},                           // Mxfp4Config
      {"gpt_oss_mxfp4", 80, {kBf16}},                   // GptOssMxfp4Config (Mxfp4Config's)
      {"deepseek_v4_fp8", 75, {kBf16, kF16}},           // DeepseekV4FP8Config (Fp8Config's)
      {"cpu_awq", 0, {}},                               // CPU only: not checked
      {"online", 75, {kBf16, kF16}},                    // OnlineQuantizationConfig
      {"fp8_per_tensor", 75, {kBf16, kF16}},            // the online shorthands: the same
      {"fp8_per_block", 75, {kBf16, kF16}},
      {"int8_per_channel_weight_only", 75, {kBf16, kF16}},
      {"mxfp8", 75, {kBf16, kF16}},
  };
  return kMethods;
}

const Method* FindMethod(std::string_view name) {
  const std::vector<Method>& all = Methods();
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const Method& m) { return m.name == name; });
  return it == all.end() ? nullptr : &*it;
}

constexpr std::array<std::string_view, 4> kOnlineShorthands = {
    "fp8_per_tensor", "fp8_per_block", "mxfp8", "int8_per_channel_weight_only"};

const nlohmann::json* Find(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// Python's str() of a JSON value, upper-cased, as ModelOpt's quant_algo is compared.
std::string UpperText(const nlohmann::json* v) {
  return v == nullptr ? "" : AsciiUpper(PythonStr(*v));
}

// Python's == between a JSON value and an integer (4 == 4.0; True == 1).
bool NumberIs(const nlohmann::json* v, int64_t n) {
  if (v == nullptr) return false;
  if (v->is_boolean()) return static_cast<int64_t>(v->get<bool>()) == n;
  return v->is_number() && v->get<double>() == static_cast<double>(n);
}

// Python's truth value of a JSON value.
bool Truthy(const nlohmann::json* v) {
  if (v == nullptr || v->is_null()) return false;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number()) return v->get<double>() != 0;
  if (v->is_string()) return !v->get<std::string>().empty();
  return !v->empty();
}

}  // namespace

std::string ModelOptQuantAlgo(const nlohmann::json& quantization_config) {
  const nlohmann::json& q = quantization_config;
  if (const nlohmann::json* inner = Find(q, "quantization"); inner != nullptr) {
    return inner->is_object() ? UpperText(Find(*inner, "quant_algo")) : "";
  }
  return UpperText(Find(q, "quant_algo"));
}

namespace {

struct Checkpoint {
  const nlohmann::json* config = nullptr;  // the quantization config the engine reads
  std::string field;                       // where, for messages
  std::string method;                      // normalized quant_method
};

// ModelArchConfigConvertor.get_quantization_config: quantization_config (normalized), else
// compression_config, at the root, else in text_config. (The engine applies the ModelOpt producer
// rule to quantization_config alone; a compression_config naming a modelopt producer, which no
// checkpoint has, is read with it too.)
Result<std::optional<Checkpoint>> FindCheckpoint(const nlohmann::json& config,
                                                 const std::string& source) {
  for (const std::string_view scope : {std::string_view(), std::string_view("text_config")}) {
    const nlohmann::json* root = scope.empty() ? &config : Find(config, scope);
    if (root == nullptr || !root->is_object()) continue;
    for (const std::string_view key : {"quantization_config", "compression_config"}) {
      const nlohmann::json* q = Find(*root, key);
      if (q == nullptr || q->is_null()) continue;
      const std::string field = scope.empty() ? std::string(key) : fmt::format("{}.{}", scope, key);
      if (!q->is_object()) {
        return InvalidArgument(
            fmt::format("{}: field '{}' must be an object, got {}", source, field, q->dump()));
      }
      KVTOPO_ASSIGN_OR_RETURN(const std::string method, NormalizedQuantMethod(*q, source, field));
      return std::optional<Checkpoint>(Checkpoint{q, field, method});
    }
  }
  return std::optional<Checkpoint>();
}

// The engine's override_quantization_method of each override, in its order (the `overrides`
// list of _verify_quantization; "humming" first when asked for): the first that claims the
// checkpoint names the method. `gpu_marlin` says whether the GPU runs Marlin's AWQ kernels
// (compute capability 7.5 or later; assumed where the GPU is not stated, since AWQ itself needs
// it).
std::optional<std::string> Override(const Checkpoint& c, const std::optional<std::string>& asked,
                                    const std::string& model_type, bool batch_invariant,
                                    bool gpu_marlin) {
  const nlohmann::json& q = *c.config;
  const std::string& method = c.method;
  const auto asked_is = [&](std::initializer_list<std::string_view> names) {
    return std::any_of(names.begin(), names.end(),
                       [&](std::string_view n) { return asked && *asked == n; });
  };
  const std::string algo = method.starts_with("modelopt") ? ModelOptQuantAlgo(q) : "";
  if (asked_is({"humming"})) return "humming";
  // auto_gptq, gptq, gptq_marlin (AutoGPTQConfig): GPTQ checkpoints.
  if (method == "gptq" && (!asked || asked_is({"gptq", "gptq_marlin", "auto_gptq", "marlin"}))) {
    return "auto_gptq";
  }
  // awq_marlin: AWQ with 4 bits, a zero point and a Marlin group size, off batch invariance.
  const nlohmann::json* bits = Find(q, "bits");
  const nlohmann::json* group = Find(q, "group_size");
  const nlohmann::json* zero_point = Find(q, "zero_point");
  const bool marlin_group =
      NumberIs(group, -1) || NumberIs(group, 32) || NumberIs(group, 64) || NumberIs(group, 128);
  const bool awq_marlin = method == "awq" && bits != nullptr && !bits->is_null() &&
                          group != nullptr && !group->is_null() && zero_point != nullptr &&
                          !zero_point->is_null() && NumberIs(bits, 4) && gpu_marlin &&
                          Truthy(zero_point) && marlin_group;
  if (!batch_invariant && awq_marlin && (!asked || asked_is({"marlin", "awq_marlin"}))) {
    return "awq_marlin";
  }
  if (method == "auto-round") return "inc";
  // moe_wna16, on request: GPTQ without act-order of 4 or 8 bits, or 4-bit AWQ.
  const nlohmann::json* desc_act = Find(q, "desc_act");
  if (asked_is({"moe_wna16"}) &&
      ((method == "gptq" && !Truthy(desc_act) && (NumberIs(bits, 4) || NumberIs(bits, 8))) ||
       (method == "awq" && NumberIs(bits, 4) && gpu_marlin))) {
    return "moe_wna16";
  }
  if (algo == "FP8") return "modelopt";
  if (algo.find("NVFP4") != std::string::npos || algo.find("FP4") != std::string::npos) {
    return "modelopt_fp4";
  }
  if (algo.find("MXFP8") != std::string::npos) return "modelopt_mxfp8";
  if (algo == "MIXED_PRECISION") return "modelopt_mixed";
  if ((method == "mxfp4" || method == "gpt_oss_mxfp4") && model_type == "gpt_oss") {
    return "gpt_oss_mxfp4";
  }
  if ((method == "fp8" || method == "deepseek_v4_fp8") &&
      (model_type == "deepseek_v4" || asked_is({"deepseek_v4_fp8"}))) {
    return "deepseek_v4_fp8";
  }
  if (asked_is({"gguf"})) return "gguf";
  return std::nullopt;
}

// A method's name in messages: '' when empty (--quantization "").
std::string Shown(const std::string& method) { return method.empty() ? "''" : method; }

// torch's name of a model dtype, as the engine's messages print it.
std::string TorchDtype(ElementType t) { return fmt::format("torch.{}", ElementTypeName(t)); }

}  // namespace

Result<QuantizationOutcome> CheckQuantization(const nlohmann::json& config, const std::string& file,
                                              const std::string& legacy_file,
                                              const QuantizationLaunch& launch) {
  QuantizationOutcome out;
  auto error = [&](std::string code, std::string message) {
    out.diagnostics.push_back(Diagnostic{Severity::kError, std::move(code), std::move(message)});
  };
  const std::string source = ConfigFileLabel(file);
  // EngineArgs: a GGUF file runs as --quantization gguf; the flag's text is compared as given.
  std::optional<std::string> asked;
  if (launch.gguf_file) {
    asked = "gguf";
  } else if (launch.asked) {
    asked = *launch.asked;
  }
  // The flag that names the method: --quantization, or a draft's speculative config key.
  const std::string knob =
      launch.draft ? std::string("the speculative config's 'quantization'") : "--quantization";
  const std::string asked_source =
      launch.gguf_file ? std::string("a GGUF file, which the engine runs as --quantization gguf")
                       : fmt::format("{} {}", knob, Shown(asked.value_or("")));
  if (launch.quantization_config_given && asked &&
      std::find(kOnlineShorthands.begin(), kOnlineShorthands.end(), *asked) ==
          kOnlineShorthands.end()) {
    error("quantization-config",
          fmt::format("--quantization-config with {}: the engine takes a quantization config only "
                      "with an online shorthand ({}) and refuses the launch ('quantization_config "
                      "is only supported when quantization is one of ...'); drop one of them",
                      asked_source, fmt::join(kOnlineShorthands, ", ")));
  }
  KVTOPO_ASSIGN_OR_RETURN(
      const std::optional<Checkpoint> checkpoint,
      FindCheckpoint(config, legacy_file.empty() ? source
                                                 : fmt::format("{} (its quantization_config from "
                                                               "hf_quant_config.json '{}')",
                                                               source, legacy_file)));
  std::optional<std::string> method = asked;
  if (checkpoint) {
    out.checkpoint_config = *checkpoint->config;
    std::string checkpoint_method = checkpoint->method;
    // GptOssForCausalLMConfig.verify_and_update_model_config, before the check: mxfp4 is
    // gpt_oss_mxfp4.
    const nlohmann::json* architectures = Find(config, "architectures");
    if (checkpoint_method == "mxfp4" && architectures != nullptr && architectures->is_array() &&
        !architectures->empty() && (*architectures)[0] == "GptOssForCausalLM") {
      checkpoint_method = "gpt_oss_mxfp4";
    }
    const nlohmann::json* type = Find(config, "model_type");
    const std::string model_type =
        type != nullptr && type->is_string() ? type->get<std::string>() : std::string();
    const bool gpu_marlin = !launch.gpu || launch.gpu->major * 10 + launch.gpu->minor >= 75;
    Checkpoint resolved = *checkpoint;
    resolved.method = checkpoint_method;
    const std::optional<std::string> override_method =
        Override(resolved, asked, model_type, launch.batch_invariant, gpu_marlin);
    std::optional<std::string> stated;
    if (override_method) {
      stated = method = override_method;
    } else if (!checkpoint_method.empty()) {
      stated = checkpoint_method;
    }
    if (!method) {
      method = stated;
    } else if (method != stated) {
      std::string stated_text = "no quant_method";
      if (stated) {
        stated_text = fmt::format("quant_method '{}'", checkpoint->method);
        if (*stated != checkpoint->method) {
          stated_text += fmt::format(", which the engine runs as {}", *stated);
        }
      }
      error(
          "quantization-mismatch",
          fmt::format("{} does not match the checkpoint's method ({}: {} has {}): the engine "
                      "refuses the launch ('Quantization method specified in the model config "
                      "({}) does not match the quantization method specified in the "
                      "`quantization` argument ({})'); drop {}{}",
                      asked_source, source, checkpoint->field, stated_text, stated.value_or("None"),
                      *method, knob, stated ? fmt::format(" or set it to {}", *stated) : ""));
      return out;
    }
  }
  if (!method) return out;
  out.method = method;
  const Method* m = FindMethod(*method);
  // The method and where it came from, for messages.
  const std::string named =
      fmt::format("quantization method {} ({})", Shown(*method),
                  asked && asked == method
                      ? (launch.gguf_file ? std::string("a GGUF file, which the engine runs with "
                                                        "--quantization gguf")
                                          : fmt::format("{} {}", knob, Shown(*method)))
                      : fmt::format("{}: {}", source, checkpoint ? checkpoint->field : ""));
  if (m == nullptr) {
    std::vector<std::string_view> known;
    for (const Method& k : Methods()) known.push_back(k.name);
    error("quantization-unknown",
          fmt::format("{} is none the engine knows: it refuses the launch ('Unknown quantization "
                      "method: {}'); it knows {}",
                      named, *method, fmt::join(known, ", ")));
    return out;
  }
  if (m->deprecated && !launch.allow_deprecated) {
    error("quantization-deprecated",
          fmt::format("{} is deprecated: the engine refuses it {} ('The quantization method {} is "
                      "deprecated and will be removed in future versions of vLLM')",
                      named,
                      launch.draft ? "for a draft, whose model config it builds without "
                                     "--allow-deprecated-quantization"
                                   : "unless --allow-deprecated-quantization is passed",
                      *method));
  }
  // humming and cpu_awq are not checked further. A draft's quantization config is built (and its
  // GPU and dtype checked) by VllmConfig.__post_init__ when the proposer replaces the target's
  // model config with the draft's (_create_draft_vllm_config), only where the target's is None:
  // the copy keeps a quantized target's.
  if (m->act_dtypes.empty() || (launch.draft && launch.target_quantized)) return out;
  const std::string refuses =
      launch.draft ? "the engine raises as it loads the draft, once the target's weights are "
                     "loaded"
                   : "the engine refuses the launch";
  const int64_t capability = launch.gpu ? launch.gpu->major * 10 + launch.gpu->minor : 0;
  if (launch.gpu && capability < m->min_capability) {
    error("quantization-compute-capability",
          fmt::format("{} needs compute capability {}.{} or later, not {} ({}): {} ('The "
                      "quantization method {} is not supported for the current GPU. Minimum "
                      "capability: {}. Current capability: {}.')",
                      named, m->min_capability / 10, m->min_capability % 10,
                      DeviceCapabilityName(*launch.gpu), launch.gpu_from, refuses, *method,
                      m->min_capability, capability));
  }
  std::vector<ElementType> dtypes = m->act_dtypes;
  // GGUFConfig.get_supported_act_dtypes: no bfloat16 from compute capability 10.0.
  const bool gguf = *method == "gguf";
  const bool gguf_gpu = gguf && launch.gpu && capability >= 100;
  if (gguf_gpu) dtypes = {kF16, kF32};
  // What to advise: the first dtype the method takes that the model type and a stated GPU take
  // too (bfloat16 from compute capability 8.0).
  const auto advice = [&](const std::vector<ElementType>& takes) {
    for (const ElementType t : takes) {
      if ((t == kF16 && launch.no_float16) || (t == kBf16 && launch.gpu && launch.gpu->major < 8)) {
        continue;
      }
      return fmt::format("pass --dtype {}", ElementTypeName(t));
    }
    return launch.gpu ? fmt::format("none of them runs this model on compute capability {} ({})",
                                    DeviceCapabilityName(*launch.gpu), launch.gpu_from)
                      : std::string("none of them runs this model type, which refuses float16");
  };
  if (std::find(dtypes.begin(), dtypes.end(), launch.model_dtype) == dtypes.end()) {
    std::vector<std::string_view> names;
    std::vector<std::string> torch_names;
    for (const ElementType t : dtypes) {
      names.push_back(ElementTypeName(t));
      torch_names.push_back(TorchDtype(t));
    }
    error("quantization-dtype",
          fmt::format("the {} runs in {} but {} takes {} only{}: {} ('{} is not supported for "
                      "quantization method {}. Supported dtypes: [{}]'); {}",
                      launch.draft ? "draft, in the target's dtype," : "model",
                      ElementTypeName(launch.model_dtype), named, fmt::join(names, " and "),
                      gguf_gpu ? fmt::format(" on compute capability {} ({})",
                                             DeviceCapabilityName(*launch.gpu), launch.gpu_from)
                               : "",
                      refuses, TorchDtype(launch.model_dtype), *method,
                      fmt::join(torch_names, ", "), advice(dtypes)));
  } else if (gguf && !launch.gpu && !launch.draft && launch.model_dtype == kBf16) {
    out.diagnostics.push_back(Diagnostic{
        Severity::kWarning, "quantization-dtype-gpu",
        fmt::format("the model runs in bfloat16, which {} takes only below compute capability "
                    "10.0: on a Blackwell GPU the engine refuses the launch ('torch.bfloat16 is "
                    "not supported for quantization method gguf'); {} there, or state the GPU "
                    "with --device-capability",
                    named, advice({kF16, kF32}))});
  }
  return out;
}

}  // namespace kvtopo::internal
