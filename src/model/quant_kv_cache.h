// The KV-cache dtype a quantized checkpoint states, which the engine takes for --kv-cache-dtype
// auto (docs/profiles.md, "KV-cache dtype from a ModelOpt checkpoint").
//
// Thread safety: a pure function of the config it is given.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kvtopo/dtype.h"
#include "kvtopo/status.h"

namespace kvtopo::internal {

struct QuantKvCacheDtype {
  // The dtype the engine stores under --kv-cache-dtype auto; nullopt: the model's dtype.
  std::optional<KvCacheDtype> dtype;
  // With a dtype: why (an info). Without one: a value the engine warns about and ignores
  // (a warning); empty when the checkpoint states none.
  std::string note;
};

// The engine's resolve_kv_cache_dtype_string over the config's quantization_config (which the
// loader fills from a legacy hf_quant_config.json beside config.json, as get_config does): a
// ModelOpt config (quant_method starting with "modelopt", or a `producer` named modelopt whose
// quant_algo sets it) names its KV-cache algorithm in kv_cache_scheme or kv_cache_quant_algo;
// FP8 is fp8_e4m3, NVFP4 nvfp4. An unknown ModelOpt quant_algo is the engine's error, named by
// field (`file` names the config; `legacy_file`, when set, the hf_quant_config.json it came from).
// The quantization method of the quantization_config `q` as the engine's
// ModelArchConfigConvertor._normalize_quantization_config leaves it: a ModelOpt `producer` sets
// it from its quant_algo (an unknown one is the engine's error); the name is lowercased, with
// "compressed_tensors" spelled "compressed-tensors"; "" when none. A quant_method that is not a
// string is an error (the engine calls its lower()). `source` and `root` (the field prefix, ""
// for a legacy file's root) name the fields in messages.
Result<std::string> NormalizedQuantMethod(const nlohmann::json& q, const std::string& source,
                                          const std::string& root);

Result<QuantKvCacheDtype> KvCacheDtypeFromQuantization(const nlohmann::json& config,
                                                       const std::string& file,
                                                       const std::string& legacy_file = "");

}  // namespace kvtopo::internal
