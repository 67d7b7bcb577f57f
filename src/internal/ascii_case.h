// Internal: ASCII case folding of names (flags, model types, quantization algorithms), as
// Python's str.lower()/str.upper() fold the ASCII names the engine compares, and the ASCII
// whitespace Python's int() and float() ignore around a number.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

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

// `s` without the ASCII whitespace around it (str.strip() over ASCII text).
inline std::string_view StripAsciiSpace(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

// The engine's message as kvtopo quotes it: in single quotes, or in double quotes when it holds
// a single quote ("Input should be 'model' or 'all'").
inline std::string QuotedMessage(std::string_view text) {
  const char quote = text.find('\'') == std::string_view::npos ? '\'' : '"';
  return quote + std::string(text) + quote;
}

// The pieces of `s` between commas, empty ones kept, as Python's str.split(","): "a,,b" is
// "a", "", "b"; "" is one empty piece.
inline std::vector<std::string> SplitOnCommas(std::string_view s) {
  std::vector<std::string> pieces;
  for (size_t start = 0;;) {
    const size_t comma = s.find(',', start);
    pieces.emplace_back(s.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) return pieces;
    start = comma + 1;
  }
}

// The words of a value a many-valued option keeps space-separated (its values in order, empty
// ones dropped).
inline std::vector<std::string> SplitOnSpaces(std::string_view s) {
  std::vector<std::string> words;
  for (size_t start = 0; start < s.size();) {
    const size_t end = std::min(s.find(' ', start), s.size());
    if (end > start) words.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

}  // namespace kvtopo::internal
