#include "internal/json_text.h"

#include <fmt/format.h>

#include <cmath>

#include "kvtopo/limits.h"

namespace kvtopo::internal {

namespace {

// Whether arrays and objects nest deeper than `limit` levels in `text` (brackets inside strings
// do not count).
bool NestsDeeperThan(std::string_view text, int64_t limit) {
  int64_t depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view what) {
  if (NestsDeeperThan(text, kMaxJsonDepth)) {
    return InvalidArgument(
        fmt::format("{} nests arrays and objects deeper than {} levels", what, kMaxJsonDepth));
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Re-parse with exceptions only to get the position for the message.
    std::string detail = "syntax error";
    try {
      nlohmann::json unused = nlohmann::json::parse(text);
      (void)unused;
    } catch (const nlohmann::json::exception& e) {
      detail = e.what();
    }
    for (char& c : detail) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    return InvalidArgument(fmt::format("{} is not valid JSON: {}", what, detail));
  }
  return j;
}

namespace {

// repr() of a str: single quotes, or double quotes where it holds a single quote and no double
// quote; backslashes, the quote, and control characters escaped. Bytes of 0x80 and above (UTF-8)
// are kept, as repr() keeps printable characters.
std::string PythonStringRepr(std::string_view s) {
  const char quote =
      s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\' || c == quote) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string PythonFloatStr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  // fmt's shortest form takes Python's exponent thresholds; only the point of an integral value
  // is Python's alone.
  std::string text = fmt::format("{}", x);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string PythonStr(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_float()) return PythonFloatStr(v.get<double>());
  if (v.is_array()) {
    std::string out = "[";
    for (const nlohmann::json& item : v) {
      if (out.size() > 1) out += ", ";
      out += PythonRepr(item);
    }
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    for (const auto& [key, item] : v.items()) {
      if (out.size() > 1) out += ", ";
      out += PythonStringRepr(key) + ": " + PythonRepr(item);
    }
    return out + "}";
  }
  return JsonText(v);  // integers (and binary values, which JSON text never holds)
}

std::string PythonRepr(const nlohmann::json& v) {
  return v.is_string() ? PythonStringRepr(v.get_ref<const std::string&>()) : PythonStr(v);
}

}  // namespace kvtopo::internal
