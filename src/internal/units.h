// Internal: parsing of sizes users type: "12GiB", "512M", "1000000".
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "kvtopo/status.h"

namespace kvtopo {

// Bytes from a non-negative number with an optional suffix, as vLLM's CLI reads sizes: one
// letter k, m, g, t is a power of 1000 and K, M, G, T a power of 1024; KB, MB, GB, TB (powers
// of 1000) and KiB, MiB, GiB, TiB (powers of 1024) in any case. A fraction is allowed with a
// suffix ("1.5GiB"). What the engine's human_readable_int reads (ParseHumanInt) is read as it
// reads it. Errors name `what` (the flag or key it came from) and the text: malformed, negative,
// overflow.
Result<int64_t> ParseByteSize(std::string_view text, std::string_view what);

// An integer as the engine's parser reads --max-model-len and --max-num-batched-tokens
// (human_readable_int in vllm/utils/argparse_utils.py at 28be48fa9): digits with one k/m/g/t
// (x1000) or K/M/G/T (x1024) suffix, a fraction only with a lower-case one ("25.6k", computed in
// doubles and truncated as Python does), else a plain integer (ParsePlainInt). `what` names the
// flag in messages; a sign is kept for the caller to range-check.
Result<int64_t> ParseHumanInt(std::string_view text, std::string_view what);

// JSON text as the engine's parser reads a config class's value
// (_expand_json_human_readable_numbers): outside quoted strings, each bare number with a k/m/g/t
// or K/M/G/T suffix and word boundaries around it ("80m", "1.5k") becomes its human_readable_int
// value. A token that function refuses ("1.5K") fails the whole value, as it does the engine's
// parser; the error names `what` and the token.
Result<std::string> ExpandJsonHumanReadableNumbers(std::string_view json, std::string_view what);

// An integer as Python's int() reads text, which the engine's parser uses for its other integer
// flags: ASCII whitespace around it, a sign, digits with single underscores between them.
Result<int64_t> ParsePlainInt(std::string_view text, std::string_view what);

// A number as Python's float() reads text, which the engine's parser uses for its float flags
// (--gpu-memory-utilization, --kv-offloading-size, ...): ASCII whitespace around it, one sign,
// digits with single underscores between them, a fraction and an exponent, or inf, infinity and
// nan in any case; nullopt for anything else (hexadecimal, two signs, "1e"). An exponent past
// the double range gives inf or 0, as in Python.
std::optional<double> ParsePythonFloat(std::string_view text);

// A positive integer flag value with overflow checking ("--max-model-len 1000000").
Result<int64_t> ParsePositiveInt(std::string_view text, std::string_view flag);

}  // namespace kvtopo
