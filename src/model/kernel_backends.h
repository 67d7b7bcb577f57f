#pragma once

#include <array>
#include <string_view>

namespace kvtopo::internal {

// The engine's MoEBackend and LinearBackend literals (vllm/config/kernel.py at 28be48fa9): the
// names --moe-backend, --linear-backend, --kernel-config and the speculative config's
// moe_backend take.
inline constexpr std::array<std::string_view, 14> kMoeBackends = {"auto",
                                                                  "b12x",
                                                                  "triton",
                                                                  "deep_gemm",
                                                                  "deep_gemm_mega_moe",
                                                                  "cutlass",
                                                                  "flashinfer_trtllm",
                                                                  "flashinfer_cutlass",
                                                                  "flashinfer_cutedsl",
                                                                  "marlin",
                                                                  "humming",
                                                                  "triton_unfused",
                                                                  "aiter",
                                                                  "emulation"};
inline constexpr std::array<std::string_view, 15> kLinearBackends = {"auto",
                                                                     "cutlass",
                                                                     "flashinfer_cutlass",
                                                                     "flashinfer_trtllm",
                                                                     "flashinfer_cudnn",
                                                                     "marlin",
                                                                     "triton",
                                                                     "deep_gemm",
                                                                     "torch",
                                                                     "aiter",
                                                                     "machete",
                                                                     "fbgemm",
                                                                     "conch",
                                                                     "exllama",
                                                                     "emulation"};
// DeepSeek-V4's MegaMoE experts (DeepseekV4MoE reads it; no fused-MoE kernel family takes it).
inline constexpr std::string_view kMegaMoeBackend = "deep_gemm_mega_moe";

}  // namespace kvtopo::internal
