// What the engine builds for a model's fused experts (FusedMoE) under a weight-quantization
// method, as far as a launch's MoE kernels and expert-parallel load balancing go
// (docs/planner.md, "MoE kernels").
//
// Thread safety: pure functions over constant tables.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvtopo/backend.h"

namespace kvtopo::internal {

// A FusedMoE method class of the fork at 28be48fa9 and what it does with --moe-backend.
struct FusedMoeMethod {
  std::string_view engine_class;  // e.g. Fp8MoEMethod
  // supports_eplb: FusedMoE raises "EPLB is not supported <class>." as it is built with EPLB on
  // (fused_moe/layer.py) where it is false; nullopt: it depends on what kvtopo does not read.
  std::optional<bool> supports_eplb;
  // The kernel family a moe_backend other than auto is mapped through (map_fp8_backend,
  // map_mxfp4_backend, ...; its name as the engine's message spells it) and the family's names
  // of the MoEBackend literal; an empty family: the class never reads moe_backend, or it
  // depends on what kvtopo does not read.
  std::string_view family;
  std::span<const std::string_view> backends;
  // The FP8 methods built without the vLLM CUTLASS kernels refuse cutlass ("vLLM CUTLASS FP8 MoE
  // backend is disabled for this configuration.") though the family names it.
  bool cutlass_disabled = false;
  // ModelOpt's FP8_PB_WO experts run b12x as auto (mixed NVFP4/FP8 checkpoints name it for
  // their NVFP4 layers).
  bool b12x_as_auto = false;
};

// What the engine's choice between compressed-tensors' Marlin and plain WNA16 MoE methods reads of
// the experts (check_moe_marlin_supports_layer): the hidden width, the expert width per rank
// (0: not known) and whether the router's weight is applied to the input (Llama 4's).
struct MoeShape {
  int64_t hidden_size = 0;
  int64_t intermediate_per_rank = 0;
  bool router_weight_on_input = false;
};

// The FusedMoE method the engine builds for the experts of a checkpoint quantized with `method`
// (the method the engine settles, CheckQuantization's; nullopt: unquantized), as each method's
// get_quant_method picks it at 28be48fa9. `lora`: --enable-lora (the unquantized method then
// runs Triton whatever moe_backend says). DeepSeek-V4's deepseek_v4_fp8 picks by expert_dtype
// (`expert_dtype`: fp4 or fp8). Compressed-tensors picks by the scheme of `checkpoint_config`
// (the checkpoint's quantization config) that reaches the experts, read where one config group
// holds it and no ignore entry names experts (CompressedTensorsMoEMethod.get_moe_method), and
// `shape`; ModelOpt FP8 by its quant_algo. Quark's schemes, ModelOpt's mixed layers and the
// online method's config are not read: what depends on them is left unknown.
FusedMoeMethod FusedMoeMethodFor(const std::optional<std::string>& method, bool lora,
                                 std::string_view expert_dtype = "fp4",
                                 const nlohmann::json& checkpoint_config = nullptr,
                                 const MoeShape& shape = {});

// The names of the MoEBackend literal that experts built with `m` take (its family's, less
// cutlass where it is disabled); empty where the family is not known or moe_backend is unread.
std::vector<std::string_view> FusedMoeBackends(const FusedMoeMethod& m);

// The GPUs the kernels `backend` names for experts built with `m` run on ("compute capability
// 10.x", "... 8.9 or later"), where a GPU of capability `gpu` is not among them; else empty:
// each family's kernel classes' _supports_current_device on CUDA at 28be48fa9 (what they also
// ask of the weights' scales or the activation is not read).
std::string FusedMoeBackendGpuRefusal(const FusedMoeMethod& m, std::string_view backend,
                                      const DeviceCapability& gpu);
// The kernel class `backend` names for experts built with `m` where it takes no expert
// parallelism over more than one rank (_supports_parallel_config: NVFP4's b12x and CUTLASS
// kernels); else empty.
std::string FusedMoeBackendRefusesExpertParallel(const FusedMoeMethod& m, std::string_view backend);

// The engine's refusal of `backend` (a MoEBackend name) for experts built with `m`, as the
// quoted message the engine raises as it builds them; empty: accepted (auto, or a family name),
// or not known.
std::string FusedMoeBackendRefusal(const FusedMoeMethod& m, std::string_view backend);

}  // namespace kvtopo::internal
