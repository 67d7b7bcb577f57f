// Internal: JSON values as the engine's pydantic configs read them in lax mode.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "internal/ascii_case.h"

namespace kvtopo::internal {

// A bool as pydantic's lax mode reads one from JSON: true/false, 0/1, or a word ("yes", "off",
// "t", ... in any case); null reads as false where a field allows it. nullopt: not a bool.
inline std::optional<bool> PydanticBool(const nlohmann::json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v == 0 || v == 1)) return v == 1;
  if (!v.is_string()) return std::nullopt;
  const std::string word = AsciiLower(v.get<std::string>());
  for (std::string_view t : {"1", "on", "t", "true", "y", "yes"}) {
    if (word == t) return true;
  }
  for (std::string_view f : {"0", "off", "f", "false", "n", "no"}) {
    if (word == f) return false;
  }
  return std::nullopt;
}

}  // namespace kvtopo::internal
