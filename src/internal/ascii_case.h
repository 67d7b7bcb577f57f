// Internal: ASCII case folding of names (flags, model types, quantization algorithms), as
// Python's str.lower()/str.upper() fold the ASCII names the engine compares.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace kvtopo::internal {

inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline std::string AsciiUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace kvtopo::internal
