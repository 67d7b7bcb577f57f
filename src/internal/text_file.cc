#include "internal/text_file.h"

#include <fmt/format.h>

#include <fstream>

namespace kvtopo::internal {

Result<std::string> ReadTextFile(const std::filesystem::path& path, int64_t max_bytes,
                                 std::string_view what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return NotFound(fmt::format("{} '{}' does not exist", what, path.string()));
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    return NotFound(fmt::format("{} '{}' is not a regular file", what, path.string()));
  }
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec)
    return NotFound(fmt::format("cannot read {} '{}': {}", what, path.string(), ec.message()));
  auto too_large = [&](std::uintmax_t bytes) {
    return InvalidArgument(fmt::format("{} '{}' is {} bytes; kvtopo reads at most {} from one",
                                       what, path.string(), bytes, max_bytes));
  };
  if (size > static_cast<std::uintmax_t>(max_bytes)) return too_large(size);
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read {} '{}'", what, path.string()));
  // Read in pieces and stop past the bound: a file that grew since its size was taken is refused
  // too, without reading the rest.
  std::string text;
  text.reserve(static_cast<size_t>(size));
  char piece[1 << 16];
  while (in) {
    in.read(piece, sizeof piece);
    text.append(piece, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > max_bytes) return too_large(text.size());
  }
  if (in.bad()) return NotFound(fmt::format("cannot read {} '{}'", what, path.string()));
  return text;
}

}  // namespace kvtopo::internal
