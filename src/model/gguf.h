// GGUF metadata (ggml's single-file model format, versions 2 and 3, little-endian): the header and
// the key-value pairs at the start of a file, read without its tensors. docs/profiles.md, "GGUF
// files", says where the format and the engine's use of it are described.
//
// Thread safety: pure functions over the file they are given.
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>

#include "kvtopo/status.h"

namespace kvtopo::internal {

// Arrays of more elements than this (a tokenizer's vocabulary) and strings longer than
// kMaxGgufStringKept bytes are not kept: the key then holds {"gguf_skipped": <elements or bytes>}.
// Their text is still read and refused when it is not UTF-8, as the engine's reader decodes it.
inline constexpr uint64_t kMaxGgufArrayKept = 4096;
inline constexpr uint64_t kMaxGgufStringKept = uint64_t{1} << 20;

// Whether the file at `path` starts with GGUF's magic bytes ("GGUF").
bool IsGgufFile(const std::filesystem::path& path);

// The metadata of the GGUF file at `path` as a JSON object: key -> value (integers, floats,
// booleans, strings; arrays as JSON arrays). A truncated or malformed header, a count or length
// past the end of the file, an unknown value type or a big-endian file is an InvalidArgument
// naming the file and the offset.
Result<nlohmann::json> ReadGgufMetadata(const std::filesystem::path& path);
// The same over a stream of `size` bytes (`file` names it in messages).
Result<nlohmann::json> ReadGgufMetadata(std::istream& in, uint64_t size, const std::string& file);

// The Hugging Face config the engine builds from a GGUF file's metadata (`file` names it in
// messages): Transformers' GGUF reader maps `{architecture}.*` keys to config fields
// (load_gguf_checkpoint, GGUF_CONFIG_MAPPING), the config class fills the rest, and the engine
// sets `architectures` to the model type's causal-LM class. kvtopo converts the architectures
// whose mapping and config class it has checked; others are an InvalidArgument naming the
// architecture and why.
Result<nlohmann::json> GgufToConfig(const nlohmann::json& metadata, const std::string& file);

}  // namespace kvtopo::internal
