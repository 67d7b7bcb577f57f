// --speculative-config parsing (DESIGN.md §3 rule 3).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cctype>

#include "kvtopo/backend.h"
#include "kvtopo/model.h"
#include "model/config_reader.h"

namespace kvtopo {
namespace {

constexpr std::array<std::string_view, 7> kMethods = {"eagle",  "eagle3",      "mtp",  "dspark",
                                                      "dflash", "draft_model", "ngram"};
constexpr std::array<std::string_view, 7> kKeys = {"method",
                                                   "model",
                                                   "num_speculative_tokens",
                                                   "draft_attention_backend",
                                                   "attention_backend",
                                                   "draft_kv_cache_dtype",
                                                   "dflash_draft_window_size"};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Status Bad(std::string_view key, std::string_view rule) {
  return InvalidArgument(fmt::format("--speculative-config: '{}' {}", key, rule));
}

// A backend value: null -> unset (""), "auto" -> `auto_value`, else a registered name.
Result<std::string> ParseBackendValue(const nlohmann::json& v, std::string_view key,
                                      std::string auto_value) {
  if (v.is_null()) return std::string();
  if (!v.is_string()) return Bad(key, "must be a backend name, \"auto\" or null");
  const std::string name = v.get<std::string>();
  if (Lower(name) == "auto") return auto_value;
  Result<BackendCaps> caps = FindBackend(name);
  if (!caps.ok()) {
    return InvalidArgument(
        fmt::format("--speculative-config: '{}': {}", key, caps.status().message()));
  }
  return caps->name;
}

}  // namespace

Result<SpeculativeConfig> ParseSpeculativeConfig(std::string_view text) {
  KVTOPO_ASSIGN_OR_RETURN(nlohmann::json j, internal::ParseJsonText(text, "--speculative-config"));
  if (!j.is_object()) {
    return InvalidArgument(
        "--speculative-config must be a JSON object, e.g. "
        "'{\"method\":\"eagle3\",\"num_speculative_tokens\":3}'");
  }
  for (const auto& [key, value] : j.items()) {
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      return InvalidArgument(fmt::format("--speculative-config: unknown key '{}'; accepted: {}",
                                         key, fmt::join(kKeys, ", ")));
    }
  }
  SpeculativeConfig spec;
  if (!j.contains("method") || !j["method"].is_string()) {
    return Bad("method", fmt::format("must be one of: {}", fmt::join(kMethods, ", ")));
  }
  spec.method = Lower(j["method"].get<std::string>());
  if (std::find(kMethods.begin(), kMethods.end(), spec.method) == kMethods.end()) {
    return Bad("method", fmt::format("'{}' is not accepted; accepted: {}", spec.method,
                                     fmt::join(kMethods, ", ")));
  }
  if (j.contains("model") && !j["model"].is_null()) {
    if (!j["model"].is_string()) return Bad("model", "must be a draft profile name or a path");
    spec.model = j["model"].get<std::string>();
  }
  if (!j.contains("num_speculative_tokens") || !j["num_speculative_tokens"].is_number_integer() ||
      j["num_speculative_tokens"].get<int64_t>() <= 0) {
    return Bad("num_speculative_tokens", "must be a positive integer");
  }
  spec.num_speculative_tokens = j["num_speculative_tokens"].get<int64_t>();

  std::string alias;
  if (j.contains("attention_backend")) {
    // The alias: "auto" means unset, like the engine's upstream field.
    KVTOPO_ASSIGN_OR_RETURN(
        alias, ParseBackendValue(j["attention_backend"], "attention_backend", std::string()));
  }
  if (j.contains("draft_attention_backend")) {
    KVTOPO_ASSIGN_OR_RETURN(
        spec.draft_attention_backend,
        ParseBackendValue(j["draft_attention_backend"], "draft_attention_backend", "auto"));
  }
  if (spec.draft_attention_backend.empty()) spec.draft_attention_backend = alias;

  if (j.contains("draft_kv_cache_dtype") && !j["draft_kv_cache_dtype"].is_null()) {
    if (!j["draft_kv_cache_dtype"].is_string()) {
      return Bad("draft_kv_cache_dtype", "must be a --kv-cache-dtype name or null");
    }
    Result<KvCacheDtype> dtype = ParseKvCacheDtype(j["draft_kv_cache_dtype"].get<std::string>());
    if (!dtype.ok()) {
      return InvalidArgument(fmt::format("--speculative-config: 'draft_kv_cache_dtype': {}",
                                         dtype.status().message()));
    }
    spec.draft_kv_cache_dtype = *dtype;
  }
  if (j.contains("dflash_draft_window_size") && !j["dflash_draft_window_size"].is_null()) {
    const nlohmann::json& w = j["dflash_draft_window_size"];
    if (!w.is_number_integer() || w.get<int64_t>() < 1) {
      return Bad("dflash_draft_window_size", "must be a positive integer or null");
    }
    spec.dflash_draft_window_size = w.get<int64_t>();
  }
  return spec;
}

}  // namespace kvtopo
