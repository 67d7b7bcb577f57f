#include "internal/json_text.h"

#include <fmt/format.h>

namespace kvtopo::internal {

Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view what) {
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
