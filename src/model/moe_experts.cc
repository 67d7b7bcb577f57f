#include "model/moe_experts.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <string_view>
#include <utility>

#include "internal/json_int.h"
#include "model/quantization.h"

namespace kvtopo::internal {
namespace {

// The kernel families' names (map_*_backend in the fork's fused_moe/oracle/ at 28be48fa9), less
// those the MoEBackend literal cannot name.
constexpr std::string_view kUnquantized[] = {"triton", "flashinfer_trtllm", "flashinfer_cutlass",
                                             "aiter"};
constexpr std::string_view kFp8[] = {
    "triton", "deep_gemm", "cutlass", "flashinfer_trtllm", "flashinfer_cutlass", "marlin", "aiter"};
constexpr std::string_view kMxfp4[] = {"deep_gemm",
                                       "flashinfer_trtllm",
                                       "flashinfer_cutlass",
                                       "triton",
                                       "triton_unfused",
                                       "humming",
                                       "marlin",
                                       "aiter",
                                       "emulation"};
constexpr std::string_view kNvfp4[] = {
    "b12x",   "cutlass",  "flashinfer_trtllm", "flashinfer_cutlass", "flashinfer_cutedsl",
    "marlin", "emulation"};
constexpr std::string_view kMxfp8[] = {"flashinfer_trtllm", "marlin"};
constexpr std::string_view kInt8[] = {"triton"};

// Each quantization method's FusedMoE method (its get_quant_method for a FusedMoE layer at
// 28be48fa9); ModelOpt FP8 and compressed-tensors pick by their config (below). Quark's
// family is not read per scheme. The weight-only integer methods (Marlin or WNA16 kernels), GGUF
// and bitsandbytes read no moe_backend. None of these (Quark onward) supports EPLB.
constexpr std::pair<std::string_view, FusedMoeMethod> kMethods[] = {
    // fp8 of an unquantized checkpoint builds Fp8OnlineMoEMethod, a subclass of Fp8MoEMethod.
    {"fp8", {"Fp8MoEMethod", true, "FP8", kFp8, true}},
    {"fp8_per_tensor", {"Fp8PerTensorOnlineMoEMethod", true, "FP8", kFp8, true}},
    {"fp8_per_block", {"Fp8PerBlockOnlineMoEMethod", true, "FP8", kFp8, true}},
    {"mxfp4", {"GptOssMxfp4MoEMethod", false, "MXFP4", kMxfp4}},
    {"gpt_oss_mxfp4", {"GptOssMxfp4MoEMethod", false, "MXFP4", kMxfp4}},
    {"modelopt_fp4", {"ModelOptNvFp4FusedMoE", true, "NvFP4", kNvfp4}},
    {"modelopt_mxfp8", {"ModelOptMxFp8FusedMoE", false, "MXFP8", kMxfp8}},
    {"mxfp8", {"Mxfp8OnlineMoEMethod", true, "MXFP8", kMxfp8}},
    {"experts_int8", {"Int8OnlineMoEMethod", true, "Int8", kInt8}},
    {"int8_per_channel_weight_only", {"Int8OnlineMoEMethod", true, "Int8", kInt8}},
    {"quark", {"Quark's MoE methods", false}},
    {"auto_gptq", {"AutoGPTQMoEMethod or MoeWNA16Method", false}},
    {"gptq", {"AutoGPTQMoEMethod or MoeWNA16Method", false}},
    {"gptq_marlin", {"AutoGPTQMoEMethod or MoeWNA16Method", false}},
    {"awq", {"AWQMarlinMoEMethod or MoeWNA16Method", false}},
    {"awq_marlin", {"AWQMarlinMoEMethod or MoeWNA16Method", false}},
    {"moe_wna16", {"MoeWNA16Method", false}},
    {"inc", {"INC's MoE methods", false}},
    {"gguf", {"GGUFMoEMethod", false}},
    {"bitsandbytes", {"BitsAndBytesMoEMethod", false}},
};

// ModelOpt FP8 by its quant_algo (_extract_modelopt_quant_algo: quantization.quant_algo, else
// quant_algo, upper-cased): ModelOptFp8MoEMethod for FP8 and FP8_PER_CHANNEL_PER_TOKEN, built
// without the vLLM CUTLASS kernels; ModelOptFp8PbWoMoEMethod for FP8_PB_WO, with them, and
// running b12x as auto. Neither supports EPLB.
FusedMoeMethod ModelOptFp8Moe(const nlohmann::json& config) {
  const std::string algo = ModelOptQuantAlgo(config);
  if (algo == "FP8" || algo == "FP8_PER_CHANNEL_PER_TOKEN") {
    return {"ModelOptFp8MoEMethod", false, "FP8", kFp8, true};
  }
  if (algo == "FP8_PB_WO") {
    return {.engine_class = "ModelOptFp8PbWoMoEMethod",
            .supports_eplb = false,
            .family = "FP8",
            .backends = kFp8,
            .b12x_as_auto = true};
  }
  return {"ModelOptFp8MoEMethod or ModelOptFp8PbWoMoEMethod", false};
}

// A compressed-tensors QuantizationArgs field, as a string ("" where absent or not a string).
std::string Text(const nlohmann::json& args, const char* key) {
  const auto it = args.find(key);
  return it != args.end() && it->is_string() ? it->get<std::string>() : "";
}
// An integer field; `fallback` where absent or null, -2 where it is not an integer.
int64_t Int(const nlohmann::json& args, const char* key, int64_t fallback) {
  const auto it = args.find(key);
  if (it == args.end() || it->is_null()) return fallback;
  return JsonIntIn(*it, INT64_MIN, INT64_MAX).value_or(-2);
}
bool Bool(const nlohmann::json& args, const char* key, bool fallback) {
  const auto it = args.find(key);
  return it != args.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// Whether a compressed-tensors ignore entry may name a routed expert's projection, which the
// engine looks up as <the experts' prefix>.0.gate_proj (get_scheme_dict): a "re:" pattern
// matched from the start of a few such names (Python's re.match), or a name naming experts.
// A pattern std::regex cannot read, or one whose backtracking is not bounded well (a repeated
// group, more than four repetitions, more than 200 characters), counts as one that may.
bool IgnoresExperts(const std::string& entry) {
  if (!entry.starts_with("re:")) return entry.find(".experts.") != std::string::npos;
  const std::string text = entry.substr(3);
  const auto repetitions = std::count_if(text.begin(), text.end(),
                                         [](char c) { return c == '*' || c == '+' || c == '{'; });
  if (text.size() > 200 || repetitions > 4) return true;
  for (const char* repeated_group : {")*", ")+", ")?", "){"}) {
    if (text.find(repeated_group) != std::string::npos) return true;
  }
  try {
    const std::regex pattern(text);
    for (const char* name : {"model.layers.1.mlp.experts.0.gate_proj",
                             "model.language_model.layers.1.mlp.experts.0.gate_proj",
                             "language_model.model.layers.1.mlp.experts.0.gate_proj"}) {
      std::cmatch match;
      if (std::regex_search(name, match, pattern, std::regex_constants::match_continuous)) {
        return true;
      }
    }
    return false;
  } catch (const std::regex_error&) {
    return true;
  }
}

// CompressedTensorsMoEMethod.get_moe_method at 28be48fa9 over the one config group, with
// QuantizationArgs' defaults (8 bits, int, symmetric, static); a strategy it does not state, or
// a scheme that raises there, leaves the method unknown.
FusedMoeMethod CompressedTensorsMoe(const nlohmann::json& config, const MoeShape& shape) {
  const auto groups = config.find("config_groups");
  if (groups == config.end() || !groups->is_object() || groups->size() != 1) return {};
  if (const auto ignore = config.find("ignore"); ignore != config.end() && ignore->is_array()) {
    for (const nlohmann::json& entry : *ignore) {
      if (entry.is_string() && IgnoresExperts(entry.get<std::string>())) return {};
    }
  }
  // The group reaches the experts' projections through its Linear target (find_matched_target);
  // a group of other targets may not.
  const nlohmann::json& group = groups->begin().value();
  if (!group.is_object() || !group.contains("weights") || !group["weights"].is_object()) return {};
  const auto targets = group.find("targets");
  if (targets == group.end() || !targets->is_array() ||
      std::find(targets->begin(), targets->end(), "Linear") == targets->end()) {
    return {};
  }
  const nlohmann::json& w = group["weights"];
  const auto input_it = group.find("input_activations");
  const bool has_input = input_it != group.end() && input_it->is_object() && !input_it->empty();
  const nlohmann::json input = has_input ? *input_it : nlohmann::json::object();
  const std::string strategy = Text(w, "strategy");
  if (strategy.empty()) return {};
  const std::string type = Text(w, "type").empty() ? "int" : Text(w, "type");
  const int64_t bits = Int(w, "num_bits", 8);
  const int64_t group_size = Int(w, "group_size", 0);
  const bool symmetric = Bool(w, "symmetric", true);
  const bool dynamic = Bool(w, "dynamic", false);
  if (strategy == "group" && type == "float" && symmetric && group_size == 32) {
    if (bits == 4) return {"CompressedTensorsW4A4Mxfp4MoEMethod", false};
    return {};  // MXFP8 by its scale dtype, or another scheme further on: not read
  }
  if ((strategy == "channel" || strategy == "group") && !has_input && !dynamic) {
    std::string format = Text(group, "format");
    if (format.empty()) format = Text(config, "format");
    if ((bits != 4 && bits != 8) || format != "pack-quantized") return {};  // raises there
    const int64_t g = group_size > 0 ? group_size : -1;
    if (shape.hidden_size <= 0 || shape.intermediate_per_rank <= 0) return {};
    const bool marlin = shape.hidden_size % 128 == 0 &&
                        shape.intermediate_per_rank % std::max<int64_t>(64, g) == 0 &&
                        (g == -1 || g == 32 || g == 64 || g == 128) &&
                        !shape.router_weight_on_input;
    if (marlin) return {"CompressedTensorsWNA16MarlinMoEMethod", false};
    const std::string actorder = Text(w, "actorder");
    if (strategy == "group" && (actorder == "group" || actorder == "dynamic")) return {};
    return {"CompressedTensorsWNA16MoEMethod", true};
  }
  const std::string in_strategy = Text(input, "strategy");
  const std::string in_type = Text(input, "type").empty() ? "int" : Text(input, "type");
  if (strategy == "tensor_group" && type == "float" && bits == 4 && group_size == 16 && symmetric) {
    // NVFP4 weights take NVFP4 input quantization or none (NVFP4A16); other input raises there.
    const bool nvfp4_input = in_strategy == "tensor_group" && in_type == "float" &&
                             Int(input, "num_bits", 8) == 4 && Int(input, "group_size", 0) == 16 &&
                             Bool(input, "symmetric", true);
    if (has_input && !nvfp4_input) return {};
    return {"CompressedTensorsW4A4Nvfp4MoEMethod", false, "NvFP4", kNvfp4};
  }
  if (!has_input) return {};
  const bool in_dynamic = Bool(input, "dynamic", false);
  const bool fp8_weights = type == "float" && symmetric && !dynamic &&
                           (strategy == "tensor" || strategy == "channel" || strategy == "block");
  if (fp8_weights && in_type == "float" &&
      (in_dynamic || (Bool(input, "symmetric", true) && in_strategy == "tensor"))) {
    return {"CompressedTensorsW8A8Fp8MoEMethod", true, "FP8", kFp8};
  }
  if (bits == 8 && Int(input, "num_bits", 8) == 8 &&
      (strategy == "tensor" || strategy == "channel") && in_strategy == "token" && symmetric &&
      !dynamic && in_dynamic) {
    return {"CompressedTensorsW8A8Int8MoEMethod", false, "Int8", kInt8};
  }
  return {};  // W4A8, or a scheme the engine refuses ('Unsupported FusedMoe scheme')
}

}  // namespace

FusedMoeMethod FusedMoeMethodFor(const std::optional<std::string>& method, bool lora,
                                 std::string_view expert_dtype,
                                 const nlohmann::json& checkpoint_config, const MoeShape& shape) {
  // Methods whose config builds nothing for a FusedMoE layer: the engine's unquantized method,
  // which runs Triton under LoRA whatever moe_backend says.
  if (!method || *method == "fbgemm_fp8" || *method == "torchao" || *method == "fp_quant") {
    FusedMoeMethod m{"UnquantizedFusedMoEMethod", true, "unquantized", kUnquantized};
    if (lora) m.family = {}, m.backends = {};
    return m;
  }
  // DeepSeek-V4's config picks by expert_dtype: MXFP4 experts, or FP8 ones as Fp8Config's.
  if (*method == "deepseek_v4_fp8") {
    return expert_dtype == "fp8" ? FusedMoeMethod{"Fp8MoEMethod", true, "FP8", kFp8, true}
                                 : FusedMoeMethod{"Mxfp4MoEMethod", false, "MXFP4", kMxfp4};
  }
  if (*method == "modelopt") {
    return checkpoint_config.is_object()
               ? ModelOptFp8Moe(checkpoint_config)
               : FusedMoeMethod{"ModelOptFp8MoEMethod or ModelOptFp8PbWoMoEMethod", false};
  }
  if (*method == "compressed-tensors") {
    return checkpoint_config.is_object() ? CompressedTensorsMoe(checkpoint_config, shape)
                                         : FusedMoeMethod{};
  }
  for (const auto& [name, moe] : kMethods) {
    if (name == *method) return moe;
  }
  // modelopt_mixed, online, humming, cpu_awq: by what kvtopo does not read.
  return {};
}

namespace {

// Where each family's named kernels run on CUDA (the experts classes' _supports_current_device
// at 28be48fa9, which is_supported_config asks first; what the kernels also ask of the weights'
// scales and the activation is not read): "X.x" a major version, "X.Y" exactly, "X.Y+" that or
// later, "none" nowhere (AITER's kernels are ROCm's). The family is the method's, with
// DeepSeek-V4's MXFP4 experts (Mxfp4MoEMethod) apart from gpt-oss's.
struct GpuRow {
  std::string_view family;  // FusedMoeMethod::family, or "MXFP4 DeepSeek-V4"
  std::string_view backend;
  std::string_view runs_on;
};
constexpr GpuRow kGpuRows[] = {
    {"unquantized", "flashinfer_trtllm", "10.x"},
    {"unquantized", "flashinfer_cutlass", "9.0 10.x 12.x"},
    {"unquantized", "aiter", "none"},
    {"FP8", "triton", "8.9+"},
    {"FP8", "deep_gemm", "9.0 10.x"},
    {"FP8", "flashinfer_cutlass", "9.0 10.x 12.x"},
    {"FP8", "flashinfer_trtllm", "10.x"},
    {"FP8", "marlin", "7.5+"},
    {"FP8", "aiter", "none"},
    {"MXFP4", "flashinfer_trtllm", "10.x"},
    {"MXFP4", "flashinfer_cutlass", "9.0 10.x 12.x"},
    {"MXFP4", "triton", "9.0 10.x"},
    {"MXFP4", "triton_unfused", "9.0 10.x"},
    {"MXFP4", "marlin", "7.5+"},
    {"MXFP4", "humming", "7.5+"},
    {"MXFP4", "aiter", "none"},
    {"MXFP4 DeepSeek-V4", "deep_gemm", "10.x"},
    {"MXFP4 DeepSeek-V4", "flashinfer_trtllm", "10.x"},
    {"MXFP4 DeepSeek-V4", "flashinfer_cutlass", "9.0 10.x 12.x"},
    {"MXFP4 DeepSeek-V4", "marlin", "7.5+"},
    {"MXFP4 DeepSeek-V4", "aiter", "none"},
    {"NvFP4", "b12x", "12.x"},
    {"NvFP4", "cutlass", "10.x 11.x 12.x"},
    {"NvFP4", "flashinfer_trtllm", "10.x"},
    {"NvFP4", "flashinfer_cutlass", "10.x 12.x"},
    {"NvFP4", "flashinfer_cutedsl", "10.x"},
    {"NvFP4", "marlin", "7.5+"},
    {"MXFP8", "flashinfer_trtllm", "10.x"},
    {"MXFP8", "marlin", "7.5+"},
    {"Int8", "triton", "7.5+"},
};

bool RunsOn(std::string_view runs_on, const DeviceCapability& gpu) {
  size_t start = 0;
  while (start < runs_on.size()) {
    size_t end = runs_on.find(' ', start);
    if (end == std::string_view::npos) end = runs_on.size();
    const std::string_view token = runs_on.substr(start, end - start);
    start = end + 1;
    if (token == "none") return false;
    const int major = std::stoi(std::string(token.substr(0, token.find('.'))));
    const std::string_view rest = token.substr(token.find('.') + 1);
    if (rest == "x") {
      if (gpu.major == major) return true;
      continue;
    }
    const bool or_later = rest.ends_with('+');
    const int minor = std::stoi(std::string(or_later ? rest.substr(0, rest.size() - 1) : rest));
    const int want = major * 10 + minor, have = gpu.major * 10 + gpu.minor;
    if (or_later ? have >= want : have == want) return true;
  }
  return false;
}

std::string RunsOnText(std::string_view runs_on) {
  if (runs_on == "none") return "no CUDA GPU (ROCm's kernels)";
  std::string text;
  size_t start = 0;
  while (start < runs_on.size()) {
    size_t end = runs_on.find(' ', start);
    if (end == std::string_view::npos) end = runs_on.size();
    std::string token(runs_on.substr(start, end - start));
    if (token.ends_with('+')) token = token.substr(0, token.size() - 1) + " or later";
    text += (text.empty() ? "" : ", ") + token;
    start = end + 1;
  }
  return "compute capability " + text;
}

}  // namespace

std::string FusedMoeBackendGpuRefusal(const FusedMoeMethod& m, std::string_view backend,
                                      const DeviceCapability& gpu) {
  if (m.family.empty() || !FusedMoeBackendRefusal(m, backend).empty()) return "";
  const std::string family =
      m.engine_class == "Mxfp4MoEMethod" ? "MXFP4 DeepSeek-V4" : std::string(m.family);
  for (const GpuRow& row : kGpuRows) {
    if (row.family == family && row.backend == backend) {
      return RunsOn(row.runs_on, gpu) ? "" : RunsOnText(row.runs_on);
    }
  }
  return "";
}

std::string FusedMoeBackendRefusesExpertParallel(const FusedMoeMethod& m,
                                                 std::string_view backend) {
  if (m.family != "NvFP4") return "";
  if (backend == "b12x") return "B12xExperts";
  if (backend == "cutlass") return "CutlassExpertsFp4";
  return "";
}

std::vector<std::string_view> FusedMoeBackends(const FusedMoeMethod& m) {
  std::vector<std::string_view> names;
  if (m.b12x_as_auto) names.push_back("b12x");
  for (std::string_view name : m.backends) {
    if (!(m.cutlass_disabled && name == "cutlass")) names.push_back(name);
  }
  return names;
}

std::string FusedMoeBackendRefusal(const FusedMoeMethod& m, std::string_view backend) {
  if (backend == "auto" || m.family.empty() || (m.b12x_as_auto && backend == "b12x")) return "";
  if (std::find(m.backends.begin(), m.backends.end(), backend) == m.backends.end()) {
    return fmt::format("moe_backend='{}' is not supported for {} MoE.", backend, m.family);
  }
  if (m.cutlass_disabled && backend == "cutlass") {
    return "vLLM CUTLASS FP8 MoE backend is disabled for this configuration.";
  }
  return "";
}

}  // namespace kvtopo::internal
