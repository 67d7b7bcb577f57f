#include "kvtopo/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <string>

namespace kvtopo {

Result<int64_t> ParseByteSize(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format(
        "--kv-cache-memory '{}' {}; give bytes or a size such as 12GiB, 512MiB, 16G", text, why));
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  const std::string number(text.substr(0, i));
  std::string suffix(text.substr(i));
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (number.empty() || number == "." || number.find('.') != number.rfind('.')) {
    return bad("is not a size");
  }
  int64_t scale = 1;
  if (suffix.empty() || suffix == "b") {
    scale = 1;
  } else if (suffix == "k" || suffix == "kb") {
    scale = 1000;
  } else if (suffix == "m" || suffix == "mb") {
    scale = 1000 * 1000;
  } else if (suffix == "g" || suffix == "gb") {
    scale = int64_t{1000} * 1000 * 1000;
  } else if (suffix == "t" || suffix == "tb") {
    scale = int64_t{1000} * 1000 * 1000 * 1000;
  } else if (suffix == "kib") {
    scale = int64_t{1} << 10;
  } else if (suffix == "mib") {
    scale = int64_t{1} << 20;
  } else if (suffix == "gib") {
    scale = int64_t{1} << 30;
  } else if (suffix == "tib") {
    scale = int64_t{1} << 40;
  } else {
    return bad("has an unknown unit");
  }
  if (number.find('.') != std::string::npos) {
    if (scale == 1) return bad("is a fraction of a byte");
    const long double value = std::stold(number) * static_cast<long double>(scale);
    if (!std::isfinite(value) || value >= 9.2e18L) return bad("does not fit in 64 bits");
    return static_cast<int64_t>(value);
  }
  int64_t value = 0;
  for (char c : number) {
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, c - '0', &value)) {
      return bad("does not fit in 64 bits");
    }
  }
  if (__builtin_mul_overflow(value, scale, &value)) return bad("does not fit in 64 bits");
  return value;
}

Result<int64_t> ParsePositiveInt(std::string_view text, std::string_view flag) {
  if (text.empty()) return InvalidArgument(fmt::format("{} needs a value", flag));
  int64_t value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return InvalidArgument(fmt::format("{} must be a positive integer, got '{}'", flag, text));
    }
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, c - '0', &value)) {
      return InvalidArgument(fmt::format("{} '{}' does not fit in 64 bits", flag, text));
    }
  }
  if (value <= 0) {
    return InvalidArgument(fmt::format("{} must be a positive integer, got '{}'", flag, text));
  }
  return value;
}

}  // namespace kvtopo
