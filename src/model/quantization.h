// The weights' quantization method the engine settles for a launch, and the startup checks it
// makes of it (docs/profiles.md, "Quantization methods").
//
// Thread safety: pure functions of the config and launch they are given.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvtopo/backend.h"
#include "kvtopo/dtype.h"
#include "kvtopo/launch.h"
#include "kvtopo/status.h"

namespace kvtopo::internal {

// What the checks read of the launch beside the model's config.
struct QuantizationLaunch {
  std::optional<std::string> asked;        // --quantization (-q), as given
  bool allow_deprecated = false;           // --allow-deprecated-quantization
  bool quantization_config_given = false;  // --quantization-config
  bool gguf_file = false;        // the model is a GGUF file: the engine sets --quantization gguf
  bool batch_invariant = false;  // VLLM_BATCH_INVARIANT
  std::optional<DeviceCapability> gpu;               // --device-capability (or --device-name)
  std::string gpu_from;                              // where gpu came from, for messages
  ElementType model_dtype = ElementType::kBfloat16;  // as the engine resolved it
  bool no_float16 = false;  // the model type refuses float16 (advice names another dtype)
  // An external draft's model config (SpeculativeConfig.__post_init__): `asked` is the
  // speculative config's quantization, deprecated methods are refused (the engine builds it
  // without --allow-deprecated-quantization), and only ModelConfig._verify_quantization runs.
  bool draft = false;
  // A draft's: the target runs a quantization method. The proposer builds the draft's VllmConfig
  // by copying the target's, quantization config included, so the draft's own method is then
  // never turned into a config and its GPU and dtype are not checked; otherwise they are, as the
  // proposer loads the draft, after the target's weights.
  bool target_quantized = false;
};

struct QuantizationOutcome {
  // The method the engine runs the weights with; nullopt: unquantized.
  std::optional<std::string> method;
  // The checkpoint's quantization config the engine reads (null where it states none).
  nlohmann::json checkpoint_config;
  std::vector<Diagnostic> diagnostics;
};

// ModelOpt's quant_algo as _extract_modelopt_quant_algo reads it from a quantization config
// (quantization.quant_algo, else quant_algo; Python's str() upper-cased), "" where it states none.
std::string ModelOptQuantAlgo(const nlohmann::json& quantization_config);

// ModelConfig._verify_quantization and VllmConfig._get_quantization_config at 28be48fa9 over
// `config` (the model's config.json as read; `file` and `legacy_file` name it and a legacy
// hf_quant_config.json in messages): the checkpoint's method (quantization_config, else
// compression_config, at the root, else in text_config), replaced by the first of the engine's
// overrides that claims the checkpoint (AutoGPTQ for GPTQ, AWQ Marlin, INC for auto-round, the
// ModelOpt variants by quant_algo, GPT-OSS MXFP4, DeepSeek-V4 FP8, MoE WNA16 and GGUF on request);
// --quantization must then match it. Refused as the engine refuses them: a mismatch, an unknown
// method, a deprecated one without --allow-deprecated-quantization, and, where the GPU is stated,
// a compute capability below the method's minimum; a model dtype the method does not compute in
// (GGUF's bfloat16 depends on the GPU: a warning where it is not stated). A malformed
// quantization_config is an InvalidArgument naming the field.
Result<QuantizationOutcome> CheckQuantization(const nlohmann::json& config, const std::string& file,
                                              const std::string& legacy_file,
                                              const QuantizationLaunch& launch);

}  // namespace kvtopo::internal
