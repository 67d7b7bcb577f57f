// Internal: JSON values as the engine's pydantic configs read them in lax mode.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "internal/ascii_case.h"
#include "internal/json_int.h"
#include "internal/units.h"

namespace kvtopo::internal {

// A bool as pydantic's lax mode reads one from JSON: true/false, 0/1 (0.0/1.0 too), or a word
// ("yes", "off", "t", ... in any case); null reads as false where a field allows it. nullopt:
// not a bool.
inline std::optional<bool> PydanticBool(const nlohmann::json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number() && (v.get<double>() == 0 || v.get<double>() == 1)) {
    return v.get<double>() == 1;
  }
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

// Why pydantic's lax mode refuses `v` (not null) for a bool field, in its words; empty where it
// takes it. A string, an integer or a whole float it cannot read is "unable to interpret".
inline std::string PydanticBoolRefusal(const nlohmann::json& v) {
  if (!v.is_null() && PydanticBool(v)) return "";
  const bool parsed = v.is_string() || v.is_number_integer() ||
                      (v.is_number_float() && v.get<double>() == std::trunc(v.get<double>()));
  return parsed ? "Input should be a valid boolean, unable to interpret input"
                : "Input should be a valid boolean";
}

// The text of `s` without a fraction of zeros ("3.0", "-7.000"; pydantic reads them as integers):
// `s` itself where it has no point; empty where its fraction is empty or not all zeros.
inline std::string_view WithoutZeroFraction(std::string_view s) {
  const size_t point = s.find('.');
  if (point == std::string_view::npos) return s;
  const std::string_view fraction = s.substr(point + 1);
  if (fraction.empty() || fraction.find_first_not_of('0') != std::string_view::npos) return {};
  return s.substr(0, point);
}

// An int as pydantic's lax mode reads one from JSON, where it fits 64 bits: an integer, a bool
// (0 or 1), a float without a fraction, or a string of an integer as Python's int() reads it
// (ASCII whitespace around it, a sign, single underscores between digits) with an optional
// fraction of zeros ("3.0"). nullopt for null and everything else.
inline std::optional<int64_t> PydanticInt(const nlohmann::json& v) {
  if (v.is_number_float() && v.get<double>() != std::trunc(v.get<double>())) return std::nullopt;
  if (!v.is_string()) return v.is_null() ? std::nullopt : PythonInt(v);
  const std::string_view whole =
      WithoutZeroFraction(StripAsciiSpace(v.get_ref<const std::string&>()));
  if (whole.empty()) return std::nullopt;
  return PythonInt(nlohmann::json(std::string(whole)));
}

// PydanticInt's value where it lies in [min, max]; nullopt otherwise.
inline std::optional<int64_t> PydanticIntIn(const nlohmann::json& v, int64_t min, int64_t max) {
  const std::optional<int64_t> n = PydanticInt(v);
  if (!n || *n < min || *n > max) return std::nullopt;
  return n;
}

// A float as pydantic's lax mode reads one from JSON: a number, a bool (1.0 or 0.0) or a string
// Python's float() reads (ParsePythonFloat); nullopt for null and everything else.
inline std::optional<double> PydanticFloat(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return ParsePythonFloat(v.get_ref<const std::string&>());
  return std::nullopt;
}

// Why pydantic's lax mode refuses `v` (not null) for a float field, in its words; empty where it
// takes it.
inline std::string PydanticFloatRefusal(const nlohmann::json& v) {
  if (!v.is_null() && PydanticFloat(v)) return "";
  return v.is_string() ? "Input should be a valid number, unable to parse string as a number"
                       : "Input should be a valid number";
}

// Why pydantic's lax mode refuses `v` (not null) for an int field, in its words; empty where it
// takes it (a string past 64 bits, which Python's int holds, is refused here as unparsable).
inline std::string PydanticIntRefusal(const nlohmann::json& v) {
  if (!v.is_null() && PydanticInt(v)) return "";
  if (v.is_number_float()) {
    return v.get<double>() != std::trunc(v.get<double>())
               ? "Input should be a valid integer, got a number with a fractional part"
               : "Unable to parse input string as an integer, exceeded maximum size";
  }
  if (v.is_string()) return "Input should be a valid integer, unable to parse string as an integer";
  return "Input should be a valid integer";
}

}  // namespace kvtopo::internal
