#include "model/config_reader.h"

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <optional>

#include "internal/json_int.h"
#include "model/gguf.h"

namespace kvtopo::internal {

std::string ConfigFileLabel(std::string_view file) {
  if (file == "params.json" || file.ends_with("/params.json")) {
    return fmt::format("params.json '{}'", file);
  }
  // A GGUF file by its name or, as the engine's check_gguf_file tells one, by its magic bytes.
  if (file.ends_with(".gguf") || IsGgufFile(std::filesystem::path(std::string(file)))) {
    return fmt::format("GGUF file '{}'", file);
  }
  return fmt::format("config.json '{}'", file);
}

ConfigReader::ConfigReader(const nlohmann::json& obj, std::string file, std::string prefix)
    : obj_(&obj), file_(std::move(file)), prefix_(std::move(prefix)) {}

std::string ConfigReader::Path(std::string_view key) const {
  return prefix_.empty() ? std::string(key) : fmt::format("{}.{}", prefix_, key);
}

Status ConfigReader::Missing(std::string_view key) const {
  return InvalidArgument(
      fmt::format("{}: field '{}' is missing", ConfigFileLabel(file_), Path(key)));
}

Status ConfigReader::IllTyped(std::string_view key, std::string_view expected) const {
  const nlohmann::json* v = Find(key);
  std::string got = v ? v->dump() : "nothing";
  if (got.size() > 60) got = got.substr(0, 57) + "...";
  return InvalidArgument(fmt::format("{}: field '{}' must be {}, got {}", ConfigFileLabel(file_),
                                     Path(key), expected, got));
}

Status ConfigReader::Invalid(std::string_view key, std::string_view rule) const {
  return InvalidArgument(fmt::format("{}: field '{}' {}", ConfigFileLabel(file_), Path(key), rule));
}

const nlohmann::json* ConfigReader::Find(std::string_view key) const {
  if (!obj_->is_object()) return nullptr;
  auto it = obj_->find(key);
  return it == obj_->end() ? nullptr : &*it;
}

bool ConfigReader::Has(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  return v != nullptr && !v->is_null();
}

bool ConfigReader::IsNull(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  return v != nullptr && v->is_null();
}

Result<int64_t> ConfigReader::Int(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr || v->is_null()) return Missing(key);
  if (!v->is_number_integer()) return IllTyped(key, "an integer");
  const std::optional<int64_t> n = internal::JsonIntIn(*v, INT64_MIN, INT64_MAX);
  if (!n) return IllTyped(key, "an integer that fits 64 bits");
  return *n;
}

Result<int64_t> ConfigReader::IntOr(std::string_view key, int64_t fallback) const {
  if (!Has(key)) return fallback;
  return Int(key);
}

Result<int64_t> ConfigReader::IntIn(std::string_view key, int64_t min, int64_t max) const {
  KVTOPO_ASSIGN_OR_RETURN(int64_t v, Int(key));
  if (v < min || v > max)
    return Invalid(key, fmt::format("must be in [{}, {}], got {}", min, max, v));
  return v;
}

Result<int64_t> ConfigReader::IntInOr(std::string_view key, int64_t fallback, int64_t min,
                                      int64_t max) const {
  if (!Has(key)) return fallback;
  return IntIn(key, min, max);
}

Result<std::string> ConfigReader::String(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr || v->is_null()) return Missing(key);
  if (!v->is_string()) return IllTyped(key, "a string");
  return v->get<std::string>();
}

Result<std::string> ConfigReader::StringOr(std::string_view key, std::string fallback) const {
  if (!Has(key)) return fallback;
  return String(key);
}

Result<bool> ConfigReader::BoolOr(std::string_view key, bool fallback) const {
  if (!Has(key)) return fallback;
  const nlohmann::json* v = Find(key);
  if (!v->is_boolean()) return IllTyped(key, "true or false");
  return v->get<bool>();
}

Result<std::vector<int64_t>> ConfigReader::IntList(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr || v->is_null()) return Missing(key);
  if (!v->is_array()) return IllTyped(key, "a list of integers");
  std::vector<int64_t> out;
  for (const nlohmann::json& e : *v) {
    const std::optional<int64_t> n = internal::JsonIntIn(e, INT64_MIN, INT64_MAX);
    if (!n) return IllTyped(key, "a list of integers that fit 64 bits");
    out.push_back(*n);
  }
  return out;
}

Result<std::vector<std::string>> ConfigReader::StringList(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr || v->is_null()) return Missing(key);
  if (!v->is_array()) return IllTyped(key, "a list of strings");
  std::vector<std::string> out;
  for (const nlohmann::json& e : *v) {
    if (!e.is_string()) return IllTyped(key, "a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

Result<ConfigReader> ConfigReader::Object(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (v == nullptr || v->is_null()) return Missing(key);
  if (!v->is_object()) return IllTyped(key, "an object");
  return ConfigReader(*v, file_, Path(key));
}

Result<ElementType> ConfigReader::Dtype() const {
  const char* key = Has("torch_dtype") ? "torch_dtype" : "dtype";
  KVTOPO_ASSIGN_OR_RETURN(std::string name, String(key));
  Result<ElementType> type = ParseElementType(name);
  if (!type.ok()) return IllTyped(key, "a torch dtype (bfloat16, float16, float32)");
  return *type;
}

}  // namespace kvtopo::internal
