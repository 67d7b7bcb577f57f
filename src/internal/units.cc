#include "internal/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "internal/checked_math.h"

namespace kvtopo {

Result<int64_t> ParseByteSize(std::string_view text, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format(
        "{} '{}' {}; give bytes or a size such as 12GiB, 512MiB, 16G", what, text, why));
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  const std::string number(text.substr(0, i));
  const std::string as_typed(text.substr(i));
  std::string suffix = as_typed;
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (number.empty() || number == "." || number.find('.') != number.rfind('.')) {
    return bad("is not a size");
  }
  int64_t scale = 1;
  // One letter as vLLM's CLI reads it: upper case binary, lower case decimal.
  const bool binary_letter =
      as_typed.size() == 1 && std::isupper(static_cast<unsigned char>(as_typed[0]));
  if (suffix.empty() || suffix == "b") {
    scale = 1;
  } else if (binary_letter && (suffix == "k" || suffix == "m" || suffix == "g" || suffix == "t")) {
    scale = int64_t{1} << (10 * (1 + std::string_view("kmgt").find(suffix[0])));
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

Result<int64_t> ParseHumanInt(std::string_view text, std::string_view what) {
  auto bad = [&] {
    return InvalidArgument(fmt::format(
        "{}: '{}' is not an integer (digits, optionally with k/m/g for x1000 or K/M/G for x1024)",
        what, text));
  };
  if (text.empty() || text.size() > 40) return bad();
  int64_t multiplier = 1;
  std::string_view digits = text;
  switch (digits.back()) {
    case 'k':
      multiplier = 1000;
      break;
    case 'm':
      multiplier = 1000 * 1000;
      break;
    case 'g':
      multiplier = 1000 * 1000 * 1000;
      break;
    case 'K':
      multiplier = int64_t{1} << 10;
      break;
    case 'M':
      multiplier = int64_t{1} << 20;
      break;
    case 'G':
      multiplier = int64_t{1} << 30;
      break;
    default:
      break;
  }
  if (multiplier != 1) digits.remove_suffix(1);
  if (digits.empty()) return bad();
  const bool negative = digits.front() == '-';
  if (negative) digits.remove_prefix(1);
  const size_t dot = digits.find('.');
  if (dot != std::string_view::npos && multiplier == 1) return bad();  // "1.5" needs a suffix
  std::string_view whole = digits.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? "" : digits.substr(dot + 1);
  if (whole.empty() && fraction.empty()) return bad();
  auto all_digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!all_digits(whole) || !all_digits(fraction) || fraction.size() > 9) return bad();
  const std::string range = fmt::format("{}: '{}' is out of the 64-bit integer range", what, text);
  int64_t value = 0;
  for (char c : whole) {
    if (value > (std::numeric_limits<int64_t>::max() - (c - '0')) / 10) {
      return InvalidArgument(range);
    }
    value = value * 10 + (c - '0');
  }
  Result<int64_t> scaled = internal::CheckedMul(value, multiplier, what);
  if (!scaled.ok()) return InvalidArgument(range);
  int64_t fraction_part = 0, fraction_scale = 1;
  for (char c : fraction) {
    fraction_part = fraction_part * 10 + (c - '0');
    fraction_scale *= 10;
  }
  // multiplier * fraction / scale, exact enough for the 9 digits allowed (rounded down as int()).
  const int64_t extra =
      static_cast<int64_t>(static_cast<__int128>(multiplier) * fraction_part / fraction_scale);
  Result<int64_t> total = internal::CheckedAdd(*scaled, extra, what);
  if (!total.ok()) return InvalidArgument(range);
  return negative ? -*total : *total;
}

}  // namespace kvtopo
