// Parsing of sizes users type: "12GiB", "512M", "1000000".
#pragma once

#include <cstdint>
#include <string_view>

#include "kvtopo/status.h"

namespace kvtopo {

// Bytes from a non-negative number with an optional suffix: K, M, G, T (powers of 1000; also
// KB, MB, GB, TB) or KiB, MiB, GiB, TiB (powers of 1024); case-insensitive. A fraction is
// allowed with a suffix ("1.5GiB"). Errors name the text: malformed, negative, overflow.
Result<int64_t> ParseByteSize(std::string_view text);

// A positive integer flag value with overflow checking ("--max-model-len 1000000").
Result<int64_t> ParsePositiveInt(std::string_view text, std::string_view flag);

}  // namespace kvtopo
