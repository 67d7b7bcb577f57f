#include "model/quant_kv_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string_view>

#include "internal/ascii_case.h"
#include "internal/json_text.h"
#include "model/config_reader.h"

namespace kvtopo::internal {
namespace {

// Python's truth value of a JSON value (the engine chains the keys with `or`).
bool Truthy(const nlohmann::json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get<std::string>().empty();
  return !v.empty();
}

const nlohmann::json* Find(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

}  // namespace

Result<std::string> NormalizedQuantMethod(const nlohmann::json& q, const std::string& source,
                                          const std::string& root) {
  auto at = [&](const std::string& key) { return root.empty() ? key : root + "." + key; };
  // A ModelOpt `producer` sets the quant_method from its quant_algo.
  std::optional<std::string> method;
  const nlohmann::json* inner_object = Find(q, "quantization");
  const nlohmann::json* producer = Find(q, "producer");
  const nlohmann::json* producer_name = producer ? Find(*producer, "name") : nullptr;
  if (producer_name != nullptr && *producer_name == "modelopt") {
    const nlohmann::json* algo = inner_object ? Find(*inner_object, "quant_algo") : nullptr;
    if (algo != nullptr && !algo->is_null()) {
      const std::string upper = AsciiUpper(PythonStr(*algo));
      if (upper == "FP8" || upper == "FP8_PER_CHANNEL_PER_TOKEN" || upper == "FP8_PB_WO") {
        method = "modelopt";
      } else if (upper == "NVFP4") {
        method = "modelopt_fp4";
      } else {
        return InvalidArgument(fmt::format(
            "{}: field '{}' is '{}': the engine knows the ModelOpt algorithms FP8, "
            "FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO and NVFP4 and refuses the checkpoint ('Unknown "
            "ModelOpt quant algo')",
            source, at("quantization.quant_algo"), PythonStr(*algo)));
      }
    }
  }
  if (!method) {
    const nlohmann::json* m = Find(q, "quant_method");
    if (m != nullptr && !m->is_string()) {
      return InvalidArgument(
          fmt::format("{}: field '{}' is {}: the engine reads the quantization method as a string "
                      "(quant_method.lower()) and fails on anything else",
                      source, at("quant_method"), m->dump()));
    }
    method = m != nullptr ? m->get<std::string>() : std::string();
  }
  // The community's name, lowercased, with the library's spelling normalized.
  std::string name = AsciiLower(*method);
  constexpr std::string_view kLibrary = "compressed_tensors";
  for (size_t i = name.find(kLibrary); i != std::string::npos; i = name.find(kLibrary, i)) {
    name.replace(i, kLibrary.size(), "compressed-tensors");
  }
  return name;
}

Result<QuantKvCacheDtype> KvCacheDtypeFromQuantization(const nlohmann::json& config,
                                                       const std::string& file,
                                                       const std::string& legacy_file) {
  QuantKvCacheDtype out;
  // Where the values are named: config.json's quantization_config, or the legacy file's root.
  const std::string source = legacy_file.empty()
                                 ? ConfigFileLabel(file)
                                 : fmt::format("hf_quant_config.json '{}'", legacy_file);
  const std::string root = legacy_file.empty() ? "quantization_config" : "";
  auto at = [&](const std::string& key) { return root.empty() ? key : root + "." + key; };
  const nlohmann::json* q = Find(config, "quantization_config");
  if (q == nullptr || q->is_null()) return out;
  if (!q->is_object()) {
    return InvalidArgument(fmt::format(
        "{}: {} must be an object, got {}", source,
        legacy_file.empty() ? "field 'quantization_config'" : "the whole file", q->dump()));
  }
  KVTOPO_ASSIGN_OR_RETURN(const std::string method, NormalizedQuantMethod(*q, source, root));
  const nlohmann::json* inner_object = Find(*q, "quantization");
  if (!method.starts_with("modelopt")) return out;
  // get_kv_cache_quant_algo_string: the first of these that Python reads as true.
  const nlohmann::json& inner =
      inner_object != nullptr && inner_object->is_object() ? *inner_object : *q;
  const std::string inner_prefix = &inner == q ? "" : "quantization.";
  const std::pair<const nlohmann::json*, std::string> candidates[] = {
      {Find(inner, "kv_cache_scheme"), at(inner_prefix + "kv_cache_scheme")},
      {Find(*q, "kv_cache_scheme"), at("kv_cache_scheme")},
      {Find(inner, "kv_cache_quant_algo"), at(inner_prefix + "kv_cache_quant_algo")},
      {Find(*q, "kv_cache_quant_algo"), at("kv_cache_quant_algo")}};
  const auto* chosen = std::find_if(std::begin(candidates), std::end(candidates),
                                    [](const auto& c) { return c.first && Truthy(*c.first); });
  if (chosen == std::end(candidates)) return out;
  const nlohmann::json& value = *chosen->first;
  const std::string& key = chosen->second;
  auto unknown = [&] {
    out.note = fmt::format(
        "{}: {} is {}, which the engine does not know (it knows fp8 and nvfp4, or a scheme of "
        "8-bit static or 4-bit floats): it warns and caches in the model's dtype under "
        "--kv-cache-dtype auto",
        source, key, value.dump());
    return out;
  };
  std::string algo;
  if (value.is_object()) {
    const nlohmann::json* dynamic = Find(value, "dynamic");
    const nlohmann::json* bits = Find(value, "num_bits");
    const nlohmann::json* type = Find(value, "type");
    const bool is_float = type != nullptr && *type == "float";
    const bool bits_number = bits != nullptr && bits->is_number();
    if (dynamic != nullptr && *dynamic == false && bits_number && bits->get<double>() == 8 &&
        is_float) {
      algo = "fp8";
    } else if (bits_number && bits->get<double>() == 4 && is_float) {
      algo = "nvfp4";
    } else {
      return unknown();
    }
  } else if (value.is_string()) {
    algo = AsciiLower(value.get<std::string>());
  } else {
    return out;  // neither a scheme nor a name: the engine reads none
  }
  if (algo == "fp8") {
    out.dtype = KvCacheDtype::kFp8E4m3;
  } else if (algo == "nvfp4") {
    out.dtype = KvCacheDtype::kNvfp4;
  } else {
    return unknown();
  }
  out.note = fmt::format(
      "--kv-cache-dtype auto: {} states a ModelOpt checkpoint whose {} is {}, so the engine "
      "stores the KV cache as {} (resolve_kv_cache_dtype_string); pass --kv-cache-dtype with "
      "the model's dtype to cache unquantized",
      source, key, value.dump(), KvCacheDtypeName(*out.dtype));
  return out;
}

}  // namespace kvtopo::internal
