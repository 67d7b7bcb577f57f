// Internal: a user's text file read whole, within a size bound. Only regular files are read
// (a FIFO would block, /dev/zero never ends), and a file larger than the bound is refused before
// it is read (a weights file passed as a config).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "kvtopo/status.h"

namespace kvtopo::internal {

// The contents of `path`; `what` names the file in messages ("config.json", "--workload-file").
// Errors: not a regular file or unreadable (NotFound), more than `max_bytes` (InvalidArgument).
Result<std::string> ReadTextFile(const std::filesystem::path& path, int64_t max_bytes,
                                 std::string_view what);

}  // namespace kvtopo::internal
