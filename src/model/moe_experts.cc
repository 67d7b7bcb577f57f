#include "model/moe_experts.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <utility>

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
// 28be48fa9). ModelOpt FP8 builds ModelOptFp8MoEMethod, or ModelOptFp8PbWoMoEMethod for
// FP8_PB_WO, which takes cutlass and turns b12x into auto: its family is not read here, nor
// Quark's per scheme. The weight-only integer methods (Marlin or WNA16 kernels), GGUF and
// bitsandbytes read no moe_backend. None of these (ModelOpt FP8 onward) supports EPLB.
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
    {"modelopt", {"ModelOptFp8MoEMethod or ModelOptFp8PbWoMoEMethod", false}},
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

}  // namespace

FusedMoeMethod FusedMoeMethodFor(const std::optional<std::string>& method, bool lora,
                                 std::string_view expert_dtype) {
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
  for (const auto& [name, moe] : kMethods) {
    if (name == *method) return moe;
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
