// Integers read from user JSON (config.json, --speculative-config, workload lines, cache
// layouts), range-checked where they enter: nlohmann's get<int64_t>() wraps unsigned values past
// 2^63 - 1 to negatives, so every reader goes through JsonIntIn instead.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

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

}  // namespace kvtopo::internal
