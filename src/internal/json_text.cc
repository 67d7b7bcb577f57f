#include "internal/json_text.h"

#include <fmt/format.h>

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

}  // namespace kvtopo::internal
