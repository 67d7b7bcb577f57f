// Element types of cache tensors and the KV-cache dtype names users pass (--kv-cache-dtype).
//
// Every fp8, int8 and packed ("uint8") cache dtype stores one byte per element; fp32 four;
// bf16 and fp16 two. `auto` resolves to the model dtype.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "kvtopo/status.h"

namespace kvtopo {

enum class ElementType { kFloat32, kBfloat16, kFloat16, kUint8, kInt8, kFloat8E4m3, kFloat8E5m2 };

int64_t ElementBytes(ElementType type);
std::string_view ElementTypeName(ElementType type);
// Accepts torch and HF spellings: float32/fp32/float, bfloat16/bf16, float16/fp16/half, uint8,
// int8, float8_e4m3fn/fp8_e4m3, float8_e5m2/fp8_e5m2.
Result<ElementType> ParseElementType(std::string_view name);

// How an attention cache quantizes its elements (changes the page formula).
enum class KvQuantMode { kNone, kNvfp4, kFp8PerTokenHead, kInt8PerTokenHead };

enum class KvCacheDtype {
  kAuto,
  kFloat32,
  kBfloat16,
  kFloat16,
  kFp8,
  kFp8E4m3,
  kFp8E5m2,
  kFp8Inc,
  kFp8DsMla,    // DeepSeek sparse-MLA row: 512 fp8 NoPE + 4 fp32 scales + 64 bf16 RoPE = 656 B
  kNvfp4DsMla,  // NVFP4 sparse-MLA row: 432 B per token
  kFp8PerTokenHead,
  kInt8PerTokenHead,
  kNvfp4,
  // The fork's TurboQuant presets: K and V of a head packed into one slot per token.
  kTurboquantK8v4,    // fp8 keys, 4-bit values
  kTurboquant4bitNc,  // 4-bit keys and values, norm correction
  kTurboquantK3v4Nc,  // 3-bit keys, 4-bit values, norm correction
  kTurboquant3bitNc,  // 3-bit keys and values, norm correction
};

std::string_view KvCacheDtypeName(KvCacheDtype dtype);
// The error lists every accepted name.
Result<KvCacheDtype> ParseKvCacheDtype(std::string_view name);
// A cache dtype as the engine's parser takes `knob` (--kv-cache-dtype, draft_kv_cache_dtype):
// exactly one of its CacheDType names, in lower case and without aliases (bf16, float32 and
// BFLOAT16 are refused). The error names `knob`, the value and the accepted names.
Result<KvCacheDtype> ParseEngineKvCacheDtype(std::string_view name, std::string_view knob);
// The element stored for `dtype`; kAuto resolves to `model_dtype`.
ElementType StorageElement(KvCacheDtype dtype, ElementType model_dtype);
KvQuantMode QuantModeOf(KvCacheDtype dtype);

// A TurboQuant preset's bits per key element (8: fp8 keys) and per value element.
struct TurboQuantBits {
  int64_t key_bits = 0;
  int64_t value_bits = 0;
};
// The preset of a TurboQuant dtype; nullopt for every other dtype.
std::optional<TurboQuantBits> TurboQuantOf(KvCacheDtype dtype);
// Bytes of one head's packed K|V slot for one token (the fork's TurboQuantConfig
// .slot_size_aligned): the key (head_size bytes with fp8 keys, else ceil(head_size x bits / 8)
// plus a 2-byte norm), the value (ceil(head_size x bits / 8) plus 4 bytes of scale and zero),
// rounded up to an even count. head_size is at most kMaxModelDim.
int64_t TurboQuantSlotBytes(TurboQuantBits bits, int64_t head_size);

}  // namespace kvtopo
