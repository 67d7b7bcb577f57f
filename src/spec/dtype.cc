#include "kvtopo/dtype.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>

namespace kvtopo {

int64_t ElementBytes(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return 4;
    case ElementType::kBfloat16:
    case ElementType::kFloat16:
      return 2;
    case ElementType::kUint8:
    case ElementType::kInt8:
    case ElementType::kFloat8E4m3:
    case ElementType::kFloat8E5m2:
      return 1;
  }
  return 0;
}

std::string_view ElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return "float32";
    case ElementType::kBfloat16:
      return "bfloat16";
    case ElementType::kFloat16:
      return "float16";
    case ElementType::kUint8:
      return "uint8";
    case ElementType::kInt8:
      return "int8";
    case ElementType::kFloat8E4m3:
      return "float8_e4m3fn";
    case ElementType::kFloat8E5m2:
      return "float8_e5m2";
  }
  return "?";
}

Result<ElementType> ParseElementType(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, ElementType>, 15> kNames = {{
      {"float32", ElementType::kFloat32},
      {"fp32", ElementType::kFloat32},
      {"float", ElementType::kFloat32},
      {"bfloat16", ElementType::kBfloat16},
      {"bf16", ElementType::kBfloat16},
      {"float16", ElementType::kFloat16},
      {"fp16", ElementType::kFloat16},
      {"half", ElementType::kFloat16},
      {"uint8", ElementType::kUint8},
      {"int8", ElementType::kInt8},
      {"float8_e4m3fn", ElementType::kFloat8E4m3},
      {"fp8_e4m3", ElementType::kFloat8E4m3},
      {"fp8", ElementType::kFloat8E4m3},
      {"float8_e5m2", ElementType::kFloat8E5m2},
      {"fp8_e5m2", ElementType::kFloat8E5m2},
  }};
  for (const auto& [n, t] : kNames) {
    if (n == name) return t;
  }
  return InvalidArgument(
      fmt::format("unknown element dtype '{}'; accepted: float32, bfloat16, float16, uint8, int8, "
                  "float8_e4m3fn, float8_e5m2",
                  name));
}

namespace {
struct DtypeName {
  std::string_view name;
  KvCacheDtype dtype;
};
// The first entry for each dtype is its canonical name.
constexpr std::array<DtypeName, 20> kKvDtypes = {{
    {"auto", KvCacheDtype::kAuto},
    {"float32", KvCacheDtype::kFloat32},
    {"bfloat16", KvCacheDtype::kBfloat16},
    {"float16", KvCacheDtype::kFloat16},
    {"fp8", KvCacheDtype::kFp8},
    {"fp8_e4m3", KvCacheDtype::kFp8E4m3},
    {"fp8_e5m2", KvCacheDtype::kFp8E5m2},
    {"fp8_inc", KvCacheDtype::kFp8Inc},
    {"fp8_ds_mla", KvCacheDtype::kFp8DsMla},
    {"nvfp4_ds_mla", KvCacheDtype::kNvfp4DsMla},
    {"fp8_per_token_head", KvCacheDtype::kFp8PerTokenHead},
    {"int8_per_token_head", KvCacheDtype::kInt8PerTokenHead},
    {"nvfp4", KvCacheDtype::kNvfp4},
    {"turboquant_k8v4", KvCacheDtype::kTurboquantK8v4},
    {"turboquant_4bit_nc", KvCacheDtype::kTurboquant4bitNc},
    {"turboquant_k3v4_nc", KvCacheDtype::kTurboquantK3v4Nc},
    {"turboquant_3bit_nc", KvCacheDtype::kTurboquant3bitNc},
    {"bf16", KvCacheDtype::kBfloat16},
    {"fp16", KvCacheDtype::kFloat16},
    {"fp32", KvCacheDtype::kFloat32},
}};
}  // namespace

std::string_view KvCacheDtypeName(KvCacheDtype dtype) {
  for (const auto& d : kKvDtypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

Result<KvCacheDtype> ParseKvCacheDtype(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& d : kKvDtypes) {
    if (d.name == lower) return d.dtype;
  }
  std::string accepted;
  for (size_t i = 0; i < 17; ++i) {  // the canonical names; the aliases follow
    accepted += (i ? ", " : "") + std::string(kKvDtypes[i].name);
  }
  return InvalidArgument(
      fmt::format("unknown --kv-cache-dtype '{}'; accepted: {}", name, accepted));
}

Result<KvCacheDtype> ParseEngineKvCacheDtype(std::string_view name, std::string_view knob) {
  // The engine's CacheDType (config/cache.py at 28be48fa9), in its parser's sorted order, and
  // the B12X sparse-MLA row nvfp4_ds_mla.
  // clang-format off
  static constexpr std::array<std::string_view, 16> kEngineNames = {
      "auto", "bfloat16", "float16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
      "fp8_per_token_head", "int8_per_token_head", "nvfp4", "nvfp4_ds_mla",
      "turboquant_3bit_nc", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_k8v4"};
  // clang-format on
  if (std::find(kEngineNames.begin(), kEngineNames.end(), name) != kEngineNames.end()) {
    return ParseKvCacheDtype(name);
  }
  std::string hint;
  if (Result<KvCacheDtype> alias = ParseKvCacheDtype(name); alias.ok()) {
    hint = *alias == KvCacheDtype::kFloat32
               ? " (a float32 cache is auto with --dtype float32)"
               : fmt::format(" (write '{}')", KvCacheDtypeName(*alias));
  }
  return InvalidArgument(fmt::format(
      "{} '{}' is not one of the engine's cache dtypes, which its parser takes exactly as "
      "written{}; accepted: {}",
      knob, name, hint, fmt::join(kEngineNames, ", ")));
}

ElementType StorageElement(KvCacheDtype dtype, ElementType model_dtype) {
  switch (dtype) {
    case KvCacheDtype::kAuto:
      return model_dtype;
    case KvCacheDtype::kFloat32:
      return ElementType::kFloat32;
    case KvCacheDtype::kBfloat16:
      return ElementType::kBfloat16;
    case KvCacheDtype::kFloat16:
      return ElementType::kFloat16;
    case KvCacheDtype::kFp8Inc:
      return ElementType::kFloat8E4m3;
    case KvCacheDtype::kInt8PerTokenHead:
      return ElementType::kInt8;
    case KvCacheDtype::kFp8:
    case KvCacheDtype::kFp8E4m3:
    case KvCacheDtype::kFp8E5m2:
    case KvCacheDtype::kFp8DsMla:
    case KvCacheDtype::kNvfp4DsMla:
    case KvCacheDtype::kFp8PerTokenHead:
    case KvCacheDtype::kNvfp4:
    case KvCacheDtype::kTurboquantK8v4:
    case KvCacheDtype::kTurboquant4bitNc:
    case KvCacheDtype::kTurboquantK3v4Nc:
    case KvCacheDtype::kTurboquant3bitNc:
      return ElementType::kUint8;
  }
  return model_dtype;
}

std::optional<TurboQuantBits> TurboQuantOf(KvCacheDtype dtype) {
  // TQ_PRESETS of the fork's vllm/model_executor/layers/quantization/turboquant/config.py.
  switch (dtype) {
    case KvCacheDtype::kTurboquantK8v4:
      return TurboQuantBits{.key_bits = 8, .value_bits = 4};
    case KvCacheDtype::kTurboquant4bitNc:
      return TurboQuantBits{.key_bits = 4, .value_bits = 4};
    case KvCacheDtype::kTurboquantK3v4Nc:
      return TurboQuantBits{.key_bits = 3, .value_bits = 4};
    case KvCacheDtype::kTurboquant3bitNc:
      return TurboQuantBits{.key_bits = 3, .value_bits = 3};
    default:
      return std::nullopt;
  }
}

int64_t TurboQuantSlotBytes(TurboQuantBits bits, int64_t head_size) {
  auto packed = [&](int64_t b) { return (head_size * b + 7) / 8; };
  const int64_t key = bits.key_bits == 8 ? head_size : packed(bits.key_bits) + 2;
  const int64_t value = packed(bits.value_bits) + 4;
  const int64_t slot = key + value;
  return slot + slot % 2;
}

KvQuantMode QuantModeOf(KvCacheDtype dtype) {
  switch (dtype) {
    case KvCacheDtype::kNvfp4:
      return KvQuantMode::kNvfp4;
    case KvCacheDtype::kFp8PerTokenHead:
      return KvQuantMode::kFp8PerTokenHead;
    case KvCacheDtype::kInt8PerTokenHead:
      return KvQuantMode::kInt8PerTokenHead;
    default:
      return KvQuantMode::kNone;
  }
}

}  // namespace kvtopo
