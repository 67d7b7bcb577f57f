// Typed access to config.json fields with errors that name the field and the file:
//   config.json 'profiles/kimi-k3.json': field 'text_config.kv_lora_rank' is missing
// Never throws; nlohmann exceptions stay inside.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvtopo/dtype.h"
#include "kvtopo/status.h"

namespace kvtopo::internal {

// How messages name the file a model's config came from: "config.json '<path>'", or, for the
// files the engine converts into one, "params.json '<path>'" (a file of that name: Mistral's
// format) and "GGUF file '<path>'" (a .gguf file's metadata); their fields are then named as the
// converted config's.
std::string ConfigFileLabel(std::string_view file);

class ConfigReader {
 public:
  // `obj` must outlive the reader. `file` names the source in messages; `prefix` is the dotted
  // path of `obj` inside the file ("" for the root).
  ConfigReader(const nlohmann::json& obj, std::string file, std::string prefix = "");

  bool Has(std::string_view key) const;     // present and not null
  bool IsNull(std::string_view key) const;  // present and null
  Result<int64_t> Int(std::string_view key) const;
  Result<int64_t> IntOr(std::string_view key, int64_t fallback) const;  // absent/null: fallback
  // An integer in [min, max] (kvtopo/limits.h); the error names the field and the range.
  Result<int64_t> IntIn(std::string_view key, int64_t min, int64_t max) const;
  Result<int64_t> IntInOr(std::string_view key, int64_t fallback, int64_t min, int64_t max) const;
  Result<std::string> String(std::string_view key) const;
  Result<std::string> StringOr(std::string_view key, std::string fallback) const;
  Result<bool> BoolOr(std::string_view key, bool fallback) const;
  Result<std::vector<int64_t>> IntList(std::string_view key) const;
  Result<std::vector<std::string>> StringList(std::string_view key) const;
  Result<ConfigReader> Object(std::string_view key) const;
  // The model dtype: torch_dtype (or dtype), parsed as an element type.
  Result<ElementType> Dtype() const;

  const nlohmann::json& json() const { return *obj_; }
  const std::string& file() const { return file_; }
  // A reader of `obj` (e.g. this object with fields filled in) named as this one.
  ConfigReader Over(const nlohmann::json& obj) const { return ConfigReader(obj, file_, prefix_); }
  std::string Path(std::string_view key) const;
  Status Missing(std::string_view key) const;
  Status IllTyped(std::string_view key, std::string_view expected) const;
  Status Invalid(std::string_view key, std::string_view rule) const;

 private:
  const nlohmann::json* Find(std::string_view key) const;

  const nlohmann::json* obj_;
  std::string file_;
  std::string prefix_;
};

}  // namespace kvtopo::internal
