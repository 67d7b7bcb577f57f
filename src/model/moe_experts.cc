#include "model/moe_experts.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <string_view>

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

bool Is(const std::optional<std::string>& method, std::initializer_list<std::string_view> names) {
  return method && std::find(names.begin(), names.end(), *method) != names.end();
}

}  // namespace

FusedMoeMethod FusedMoeMethodFor(const std::optional<std::string>& method, bool lora,
                                 std::string_view expert_dtype) {
  // Methods whose config builds nothing for a FusedMoE layer: the engine's unquantized method.
  if (!method || Is(method, {"fbgemm_fp8", "torchao", "fp_quant"})) {
    if (lora) return {.engine_class = "UnquantizedFusedMoEMethod", .supports_eplb = true};
    return {.engine_class = "UnquantizedFusedMoEMethod",
            .supports_eplb = true,
            .family = "unquantized",
            .backends = kUnquantized};
  }
  if (Is(method, {"fp8", "fp8_per_tensor", "fp8_per_block"}) ||
      (*method == "deepseek_v4_fp8" && expert_dtype == "fp8")) {
    return {.engine_class = *method == "fp8" || *method == "deepseek_v4_fp8" ? "Fp8MoEMethod"
                                                                             : "Fp8OnlineMoEMethod",
            .supports_eplb = true,
            .family = "FP8",
            .backends = kFp8,
            .cutlass_disabled = true};
  }
  if (*method == "deepseek_v4_fp8") {
    return {.engine_class = "Mxfp4MoEMethod",
            .supports_eplb = false,
            .family = "MXFP4",
            .backends = kMxfp4};
  }
  if (Is(method, {"mxfp4", "gpt_oss_mxfp4"})) {
    return {.engine_class = "GptOssMxfp4MoEMethod",
            .supports_eplb = false,
            .family = "MXFP4",
            .backends = kMxfp4};
  }
  if (*method == "modelopt_fp4") {
    return {.engine_class = "ModelOptNvFp4FusedMoE",
            .supports_eplb = true,
            .family = "NvFP4",
            .backends = kNvfp4};
  }
  if (*method == "modelopt_mxfp8") {
    return {.engine_class = "ModelOptMxFp8FusedMoE",
            .supports_eplb = false,
            .family = "MXFP8",
            .backends = kMxfp8};
  }
  if (*method == "mxfp8") {
    return {.engine_class = "Mxfp8OnlineMoEMethod",
            .supports_eplb = true,
            .family = "MXFP8",
            .backends = kMxfp8};
  }
  if (Is(method, {"experts_int8", "int8_per_channel_weight_only"})) {
    return {.engine_class = "Int8OnlineMoEMethod",
            .supports_eplb = true,
            .family = "Int8",
            .backends = kInt8};
  }
  // ModelOpt FP8 (ModelOptFp8MoEMethod, or ModelOptFp8PbWoMoEMethod for FP8_PB_WO, which takes
  // cutlass and turns b12x into auto: the family is not read here); every Quark scheme's class.
  if (*method == "modelopt") {
    return {.engine_class = "ModelOptFp8MoEMethod or ModelOptFp8PbWoMoEMethod",
            .supports_eplb = false};
  }
  if (*method == "quark") return {.engine_class = "Quark's MoE methods", .supports_eplb = false};
  // The weight-only integer methods (Marlin or WNA16 kernels), GGUF and bitsandbytes: none reads
  // moe_backend, none supports EPLB.
  if (Is(method, {"auto_gptq", "gptq", "gptq_marlin"})) {
    return {.engine_class = "AutoGPTQMoEMethod or MoeWNA16Method", .supports_eplb = false};
  }
  if (Is(method, {"awq", "awq_marlin"})) {
    return {.engine_class = "AWQMarlinMoEMethod or MoeWNA16Method", .supports_eplb = false};
  }
  if (*method == "moe_wna16") return {.engine_class = "MoeWNA16Method", .supports_eplb = false};
  if (*method == "inc") return {.engine_class = "INC's MoE methods", .supports_eplb = false};
  if (*method == "gguf") return {.engine_class = "GGUFMoEMethod", .supports_eplb = false};
  if (*method == "bitsandbytes") {
    return {.engine_class = "BitsAndBytesMoEMethod", .supports_eplb = false};
  }
  // compressed-tensors, modelopt_mixed, online, humming, cpu_awq: by what kvtopo does not read.
  return {};
}

std::vector<std::string_view> FusedMoeBackends(const FusedMoeMethod& m) {
  std::vector<std::string_view> names;
  for (std::string_view name : m.backends) {
    if (!(m.cutlass_disabled && name == "cutlass")) names.push_back(name);
  }
  return names;
}

std::string FusedMoeBackendRefusal(const FusedMoeMethod& m, std::string_view backend) {
  if (backend == "auto" || m.family.empty()) return "";
  if (std::find(m.backends.begin(), m.backends.end(), backend) == m.backends.end()) {
    return fmt::format("moe_backend='{}' is not supported for {} MoE.", backend, m.family);
  }
  if (m.cutlass_disabled && backend == "cutlass") {
    return "vLLM CUTLASS FP8 MoE backend is disabled for this configuration.";
  }
  return "";
}

}  // namespace kvtopo::internal
