#include "kvtopo/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "internal/checked_math.h"
#include "kvtopo/limits.h"
#include "spec/state_shapes.h"

namespace kvtopo {

using internal::CeilDiv;
using internal::CheckedMul;

std::string_view SpecKindName(const LayerSpec& spec) {
  return spec.cross_attention ? "cross_attention" : CacheKindName(spec.kind);
}

std::string_view CacheKindName(CacheKind kind) {
  switch (kind) {
    case CacheKind::kFullAttention:
      return "full_attention";
    case CacheKind::kMla:
      return "mla";
    case CacheKind::kSlidingWindow:
      return "sliding_window";
    case CacheKind::kSlidingWindowMla:
      return "sliding_window_mla";
    case CacheKind::kChunkedLocal:
      return "chunked_local";
    case CacheKind::kRecurrent:
      return "recurrent";
  }
  return "?";
}

bool IsAttention(CacheKind kind) { return kind != CacheKind::kRecurrent; }
bool IsMla(CacheKind kind) {
  return kind == CacheKind::kMla || kind == CacheKind::kSlidingWindowMla;
}
bool IsWindowed(CacheKind kind) {
  return kind == CacheKind::kSlidingWindow || kind == CacheKind::kSlidingWindowMla ||
         kind == CacheKind::kChunkedLocal;
}

std::string_view RoleName(Role role) { return role == Role::kTarget ? "target" : "draft"; }

std::string_view RecurrentModeName(RecurrentMode mode) {
  switch (mode) {
    case RecurrentMode::kNone:
      return "none";
    case RecurrentMode::kAlign:
      return "align";
    case RecurrentMode::kAll:
      return "all";
  }
  return "?";
}

Result<RecurrentMode> ParseRecurrentMode(std::string_view name) {
  if (name == "none") return RecurrentMode::kNone;
  if (name == "align") return RecurrentMode::kAlign;
  if (name == "all") return RecurrentMode::kAll;
  return InvalidArgument(
      fmt::format("unknown --mamba-cache-mode '{}'; accepted: none, align, all", name));
}

namespace {

// Packed NVFP4 width of `x` elements: fp4 data plus one fp8 scale per 16 values.
int64_t Nvfp4Width(int64_t x) { return x / 2 + x / 16; }

Status CheckAttentionFields(const LayerSpec& s) {
  if (s.block_size <= 0) {
    return InvalidArgument(
        fmt::format("layer '{}': block size must be positive, got {}", s.name, s.block_size));
  }
  if (s.num_kv_heads <= 0 || s.head_size <= 0) {
    return InvalidArgument(
        fmt::format("layer '{}': num_kv_heads and head_size must be positive, got {} and {}",
                    s.name, s.num_kv_heads, s.head_size));
  }
  if (!IsMla(s.kind) && s.head_size_v <= 0) {
    return InvalidArgument(
        fmt::format("layer '{}': head_size_v must be positive, got {}", s.name, s.head_size_v));
  }
  return Status::Ok();
}

}  // namespace

namespace {

// Bytes of one token's rows on this rank, before per-token-head scales and the page tail.
Result<int64_t> RowBytesPerToken(const LayerSpec& s) {
  KVTOPO_RETURN_IF_ERROR(CheckAttentionFields(s));
  const auto what = fmt::format("page size of layer '{}'", s.name);
  const int64_t elem = ElementBytes(StorageElement(s.cache_dtype, s.model_dtype));
  const KvQuantMode quant = QuantModeOf(s.cache_dtype);
  if (const std::optional<TurboQuantBits> tq = TurboQuantOf(s.cache_dtype)) {
    // One packed K|V slot per head (the fork's TQFullAttentionSpec: block x heads x slot).
    if (s.kind != CacheKind::kFullAttention) {
      return InvalidArgument(
          fmt::format("layer '{}': a TurboQuant cache ({}) is a full-attention K/V cache, not {}",
                      s.name, KvCacheDtypeName(s.cache_dtype), CacheKindName(s.kind)));
    }
    if (s.head_size > kMaxModelDim) {
      return InvalidArgument(
          fmt::format("layer '{}': head size {} exceeds {}", s.name, s.head_size, kMaxModelDim));
    }
    return CheckedMul(s.num_kv_heads, TurboQuantSlotBytes(*tq, s.head_size), what);
  }
  if (IsMla(s.kind)) {
    if (s.mla_rope_dim < 0 || s.mla_rope_dim >= s.head_size) {
      return InvalidArgument(fmt::format("layer '{}': RoPE width {} must lie in [0, {})", s.name,
                                         s.mla_rope_dim, s.head_size));
    }
    const int64_t latent = s.head_size - s.mla_rope_dim;
    // The DeepSeek sparse-MLA row: quantized latent, 16 B of scales, bf16 RoPE (one head).
    if (s.cache_dtype == KvCacheDtype::kFp8DsMla || s.cache_dtype == KvCacheDtype::kNvfp4DsMla) {
      const int64_t quantized =
          s.cache_dtype == KvCacheDtype::kFp8DsMla ? latent : Nvfp4Width(latent);
      KVTOPO_ASSIGN_OR_RETURN(const int64_t rope_bf16, CheckedMul(2, s.mla_rope_dim, what));
      KVTOPO_ASSIGN_OR_RETURN(const int64_t row, internal::CheckedAdd(quantized, 16, what));
      return internal::CheckedAdd(row, rope_bf16, what);
    }
    if (quant == KvQuantMode::kNvfp4)
      return CheckedMul(s.num_kv_heads, Nvfp4Width(s.head_size), what);
    return internal::CheckedProduct({s.num_kv_heads, s.head_size, elem}, what);
  }
  if (quant == KvQuantMode::kNvfp4) {
    KVTOPO_ASSIGN_OR_RETURN(
        const int64_t widths,
        internal::CheckedAdd(Nvfp4Width(s.head_size), Nvfp4Width(s.head_size_v), what));
    return CheckedMul(s.num_kv_heads, widths, what);
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head_sizes,
                          internal::CheckedAdd(s.head_size, s.head_size_v, what));
  return internal::CheckedProduct({s.num_kv_heads, head_sizes, elem}, what);
}

}  // namespace

Result<int64_t> RealPageSizeBytes(const LayerSpec& s) {
  if (s.kind == CacheKind::kRecurrent) {
    if (s.state.empty()) {
      return InvalidArgument(fmt::format("recurrent layer '{}' has no state tensors", s.name));
    }
    return StateBytes(s.state);
  }
  const auto what = fmt::format("page size of layer '{}'", s.name);
  if (s.compress_ratio < 1 || (s.block_size > 0 && s.block_size % s.compress_ratio != 0)) {
    return InvalidArgument(
        fmt::format("layer '{}': block size {} must be a multiple of its compress ratio {}", s.name,
                    s.block_size, s.compress_ratio));
  }
  const int64_t rows = s.block_size / s.compress_ratio;
  if (s.row_bytes < 0) {
    return InvalidArgument(
        fmt::format("layer '{}': row bytes must not be negative, got {}", s.name, s.row_bytes));
  }
  if (s.row_bytes > 0) {
    if (s.block_size <= 0) {
      return InvalidArgument(
          fmt::format("layer '{}': block size must be positive, got {}", s.name, s.block_size));
    }
    return CheckedMul(s.row_bytes, rows, what);
  }
  KVTOPO_ASSIGN_OR_RETURN(int64_t per_token, RowBytesPerToken(s));
  if (s.page_tail_bytes_per_token < 0 || (s.page_tail_bytes_per_token > 0 && !IsMla(s.kind))) {
    return InvalidArgument(fmt::format(
        "layer '{}': a page tail of {} B per token needs an MLA cache and must not be negative",
        s.name, s.page_tail_bytes_per_token));
  }
  KVTOPO_ASSIGN_OR_RETURN(per_token,
                          internal::CheckedAdd(per_token, s.page_tail_bytes_per_token, what));
  return CheckedMul(per_token, rows, what);
}

Result<int64_t> PageSizeBytes(const LayerSpec& s) {
  KVTOPO_ASSIGN_OR_RETURN(int64_t page, RealPageSizeBytes(s));
  if (IsAttention(s.kind)) {
    const KvQuantMode quant = QuantModeOf(s.cache_dtype);
    if (quant == KvQuantMode::kFp8PerTokenHead || quant == KvQuantMode::kInt8PerTokenHead) {
      // One fp32 K scale and one fp32 V scale per token per head.
      KVTOPO_ASSIGN_OR_RETURN(
          int64_t scales,
          internal::CheckedProduct({2, s.block_size, s.num_kv_heads, 4}, "per-token-head scales"));
      KVTOPO_ASSIGN_OR_RETURN(page, internal::CheckedAdd(page, scales, "page size"));
    }
  }
  if (s.page_alignment < 0) {
    return InvalidArgument(fmt::format("layer '{}': page alignment must not be negative, got {}",
                                       s.name, s.page_alignment));
  }
  if (s.page_alignment > 0 && page % s.page_alignment != 0) {
    KVTOPO_ASSIGN_OR_RETURN(
        page, CheckedMul(page / s.page_alignment + 1, s.page_alignment, "aligned page size"));
  }
  if (s.page_size_padded != 0) {
    if (s.page_size_padded < page) {
      return Internal(fmt::format("layer '{}': padded page {} B is smaller than its page {} B",
                                  s.name, s.page_size_padded, page));
    }
    return s.page_size_padded;
  }
  return page;
}

Result<int64_t> AttentionBytesPerToken(const LayerSpec& s) {
  if (s.kind == CacheKind::kRecurrent) return int64_t{0};
  LayerSpec one = s;
  one.block_size = 1;
  one.page_size_padded = 0;
  // One stored row, before compression and page alignment.
  one.compress_ratio = 1;
  one.page_alignment = 0;
  return PageSizeBytes(one);
}

Result<int64_t> AttentionRecordBytesPerToken(const LayerSpec& s) {
  if (s.kind == CacheKind::kRecurrent) return int64_t{0};
  LayerSpec one = s;
  one.page_tail_bytes_per_token = 0;
  return AttentionBytesPerToken(one);
}

}  // namespace kvtopo
