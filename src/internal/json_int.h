// Integers read from user JSON (config.json, --speculative-config, workload lines, cache
// layouts), range-checked where they enter: nlohmann's get<int64_t>() wraps unsigned values past
// 2^63 - 1 to negatives, so every reader goes through JsonIntIn instead. And JSON values read as
// the engine's Python reads them: their truth value, and int() of them.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "internal/ascii_case.h"

namespace kvtopo::internal {

// The value of `v` when it is a JSON integer in [min, max]; nothing otherwise (a float, a
// string, an integer out of range, one past 64 bits).
inline std::optional<int64_t> JsonIntIn(const nlohmann::json& v, int64_t min, int64_t max) {
  if (!v.is_number_integer()) return std::nullopt;
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return std::nullopt;
  }
  const int64_t n = v.get<int64_t>();
  if (n < min || n > max) return std::nullopt;
  return n;
}

// Python's truth value of a JSON value: null, false, 0, "", [] and {} are false.
inline bool PythonTruth(const nlohmann::json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get<std::string>().empty();
  return !v.empty();  // array, object
}

// Python's int() of a JSON value, where it fits 64 bits: a bool's 0 or 1, an integer, a float
// truncated toward zero, a string of decimal digits (ASCII whitespace around it, a sign, single
// underscores between digits). Nothing for any other value, or one int() refuses.
inline std::optional<int64_t> PythonInt(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_number_integer()) return JsonIntIn(v, INT64_MIN, INT64_MAX);
  if (v.is_number_float()) {
    const double d = std::trunc(v.get<double>());
    // [-2^63, 2^63): the doubles that convert without overflow.
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return std::nullopt;
    return static_cast<int64_t>(d);
  }
  if (!v.is_string()) return std::nullopt;
  const std::string& text = v.get_ref<const std::string&>();
  std::string_view s = StripAsciiSpace(text);
  const bool negative = !s.empty() && s.front() == '-';
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  uint64_t magnitude = 0;
  bool digit_before = false;
  for (const char c : s) {
    if (c == '_' && digit_before) {
      digit_before = false;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (magnitude > (uint64_t{1} << 63) / 10 || magnitude * 10 > (uint64_t{1} << 63) - d) {
      return std::nullopt;
    }
    magnitude = magnitude * 10 + d;
    digit_before = true;
  }
  if (!digit_before) return std::nullopt;  // empty, or ending in an underscore
  if (negative)
    return magnitude == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(magnitude);
  if (magnitude > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(magnitude);
}

}  // namespace kvtopo::internal
