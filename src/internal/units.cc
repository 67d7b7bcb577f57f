#include "internal/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <system_error>

#include "internal/ascii_case.h"
#include "internal/checked_math.h"

namespace kvtopo {

Result<int64_t> ParseByteSize(std::string_view text, std::string_view what) {
  // A spelling the engine's --kv-cache-memory-bytes parser takes gives the engine's bytes: its
  // whitespace, underscores and sign (" 12G", "1_000"), and a decimal suffix computed in doubles
  // ("1.001k" is 1000 there).
  if (const Result<int64_t> engine = ParseHumanInt(text, what); engine.ok() && *engine >= 0) {
    return *engine;
  }
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

std::optional<double> ParsePythonFloat(std::string_view text) {
  std::string s(internal::StripAsciiSpace(text));
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.erase(0, 1);
  }
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) return std::nullopt;  // one sign
  const std::string lower = internal::AsciiLower(s);
  if (lower == "inf" || lower == "infinity") {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (lower == "nan") return std::numeric_limits<double>::quiet_NaN();
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      const bool between = i > 0 && i + 1 < s.size() &&
                           std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                           std::isdigit(static_cast<unsigned char>(s[i + 1]));
      if (!between) return std::nullopt;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(s[i])) && s[i] != '.' && s[i] != 'e' &&
        s[i] != 'E' && s[i] != '+' && s[i] != '-') {
      return std::nullopt;
    }
    digits += s[i];
  }
  double value = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value, std::chars_format::general);
  // A number past the double range is inf, 0 or a subnormal to Python, never an error: strtod
  // rounds the text from_chars has checked in full as Python does.
  if (digits.empty() || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return std::nullopt;
  }
  if (ec == std::errc::result_out_of_range) value = std::strtod(digits.c_str(), nullptr);
  return negative ? -value : value;
}

Result<int64_t> ParsePlainInt(std::string_view text, std::string_view what) {
  std::string_view s = internal::StripAsciiSpace(text);
  const bool negative = !s.empty() && s.front() == '-';
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  // Digits with single underscores between them, as int() takes them.
  bool valid =
      !s.empty() && s.front() != '_' && s.back() != '_' && s.find("__") == std::string_view::npos;
  uint64_t magnitude = 0;
  bool overflow = false;
  for (const char c : s) {
    if (c == '_') continue;
    if (c < '0' || c > '9') {
      valid = false;
      break;
    }
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (magnitude > ((uint64_t{1} << 63) - d) / 10) overflow = true;
    if (!overflow) magnitude = magnitude * 10 + d;
  }
  if (!valid) return InvalidArgument(fmt::format("{}: '{}' is not an integer", what, text));
  if (overflow || (!negative && magnitude > uint64_t{INT64_MAX})) {
    return InvalidArgument(fmt::format("{}: '{}' is out of the 64-bit integer range", what, text));
  }
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

Result<int64_t> ParseHumanInt(std::string_view text, std::string_view what) {
  // human_readable_int: the text stripped, then digits, an optional fraction and one suffix
  // letter, else a plain int().
  const std::string_view value = internal::StripAsciiSpace(text);
  if (value.size() >= 2 && value.size() <= 40 &&
      std::string_view("kKmMgGtT").find(value.back()) != std::string_view::npos) {
    const char suffix = value.back();
    const std::string_view number = value.substr(0, value.size() - 1);
    const size_t dot = number.find('.');
    auto digits = [](std::string_view s) {
      return !s.empty() &&
             std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    const bool decimal = dot != std::string_view::npos;
    if (decimal ? digits(number.substr(0, dot)) && digits(number.substr(dot + 1))
                : digits(number)) {
      const std::string range =
          fmt::format("{}: '{}' is out of the 64-bit integer range", what, text);
      const int exponent = suffix == 'k' || suffix == 'K'   ? 1
                           : suffix == 'm' || suffix == 'M' ? 2
                           : suffix == 'g' || suffix == 'G' ? 3
                                                            : 4;
      if (suffix >= 'a') {
        // int(float(number) * 1000 ** exponent), in doubles as Python computes it.
        const double scaled =
            std::strtod(std::string(number).c_str(), nullptr) * std::pow(1000.0, exponent);
        if (!(scaled < 9223372036854775808.0)) return InvalidArgument(range);
        return static_cast<int64_t>(scaled);
      }
      if (decimal) {
        return InvalidArgument(fmt::format(
            "{}: '{}': decimals are not allowed with binary suffixes like {} (the engine's "
            "parser refuses it); did you mean {}{}?",
            what, text, suffix, number, static_cast<char>(suffix - 'A' + 'a')));
      }
      const Result<int64_t> whole = ParsePlainInt(number, what);
      if (!whole.ok()) return InvalidArgument(range);
      const Result<int64_t> total =
          internal::CheckedMul(*whole, int64_t{1} << (10 * exponent), what);
      if (!total.ok()) return InvalidArgument(range);
      return *total;
    }
  }
  const Result<int64_t> plain = ParsePlainInt(value, what);
  if (plain.ok() || plain.status().message().ends_with("range")) return plain;
  return InvalidArgument(fmt::format(
      "{}: '{}' is not an integer (digits, optionally with k/m/g/t for x1000 or K/M/G/T for "
      "x1024)",
      what, text));
}

Result<std::string> ExpandJsonHumanReadableNumbers(std::string_view json, std::string_view what) {
  const auto is_word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  };
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::string out;
  size_t i = 0;
  while (i < json.size()) {
    const char c = json[i];
    if (c == '"') {
      // A quoted string, escapes included, is copied as it is; an unterminated quote is text.
      size_t j = i + 1;
      while (j < json.size() && json[j] != '"') j += json[j] == '\\' ? 2 : 1;
      if (j < json.size()) {
        out.append(json.substr(i, j + 1 - i));
        i = j + 1;
        continue;
      }
    }
    if (is_digit(c) && (i == 0 || !is_word(json[i - 1]))) {
      size_t j = i;
      while (j < json.size() && is_digit(json[j])) ++j;
      if (j + 1 < json.size() && json[j] == '.' && is_digit(json[j + 1])) {
        ++j;
        while (j < json.size() && is_digit(json[j])) ++j;
      }
      if (j < json.size() && std::string_view("kKmMgGtT").find(json[j]) != std::string_view::npos &&
          (j + 1 == json.size() || !is_word(json[j + 1]))) {
        KVTOPO_ASSIGN_OR_RETURN(const int64_t n, ParseHumanInt(json.substr(i, j + 1 - i), what));
        out += std::to_string(n);
        i = j + 1;
        continue;
      }
    }
    out += c;
    ++i;
  }
  return out;
}

}  // namespace kvtopo
