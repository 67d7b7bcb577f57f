// LayerSpec: what one layer keeps in the paged KV cache on one rank, and the exact byte counts
// that follow from it (page size, memory per request).
//
// A LayerSpec is a value object: equal specs (every field) may share a cache group. The model
// layer builds them from a config.json or an embedded profile; the planner groups them; the
// runtime reads only the group geometries derived from them (geometry.h), which also answer how
// many pages a request holds.
//
// Formulas (bytes per page per layer per rank, B = block_size, H = num_kv_heads per rank):
//   full attention / sliding window / chunked local: B * H * (head_size + head_size_v) * elem
//     NVFP4: B * H * (fd(head_size) + fd(head_size_v)), fd(x) = x/2 + x/16
//   MLA / sliding-window MLA: B * H * head_size * elem (latent only, no factor 2)
//     fp8_ds_mla: latent fp8 + 16 B of scales + rope bf16 per token (656 B for 512 + 64, 528 B
//     for a NoPE 512 latent); nvfp4_ds_mla: fp4 latent + fp8 scales per 16 + 16 B + rope bf16
//     (432 B for 512 + 64); NVFP4: B * H * fd(head_size)
//     then + B * page_tail_bytes_per_token (state kept after the rows, e.g. a pooled indexer key)
//   per-token-head quant (fp8/int8): + 2 * B * H * 4 bytes of scales
//   recurrent: sum over state tensors of prod(shape) * elem; independent of B
//   page_size_padded, when set, replaces the computed size (it must not be smaller).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvtopo/dtype.h"
#include "kvtopo/status.h"

namespace kvtopo {

enum class CacheKind {
  kFullAttention,
  kMla,
  kSlidingWindow,
  kSlidingWindowMla,
  kChunkedLocal,
  kRecurrent,  // Mamba / GDN / KDA state
};
std::string_view CacheKindName(CacheKind kind);
bool IsAttention(CacheKind kind);
bool IsMla(CacheKind kind);
bool IsWindowed(CacheKind kind);  // sliding window (either form) or chunked local

enum class Role { kTarget, kDraft };
std::string_view RoleName(Role role);

// Recurrent cache mode (--mamba-cache-mode).
enum class RecurrentMode { kNone, kAlign, kAll };
std::string_view RecurrentModeName(RecurrentMode mode);
Result<RecurrentMode> ParseRecurrentMode(std::string_view name);

// How a recurrent layer's conv state orders its two dimensions (the engine's
// VLLM_SSM_CONV_STATE_LAYOUT): kStateLenFirst (SD, the default) is (state_len, channels),
// kChannelsFirst (DS) is (channels, state_len). The bytes are the same either way.
enum class ConvStateLayout { kStateLenFirst, kChannelsFirst };

// One tensor of a recurrent state (per request, per layer, per rank).
struct StateTensor {
  std::vector<int64_t> shape;
  ElementType dtype = ElementType::kBfloat16;
  bool operator==(const StateTensor&) const = default;
};

// How a cache spreads token positions over the DCP group.
struct DcpLayout {
  bool replicated = false;     // every rank holds the complete sequence (DCP1 geometry)
  int64_t kv_shard_count = 0;  // 0: all DCP ranks; else a positive divisor of the DCP size
  bool operator==(const DcpLayout&) const = default;
};

struct LayerSpec {
  std::string name;  // e.g. "model.layers.3.self_attn"; unique within a model + draft
  Role role = Role::kTarget;
  CacheKind kind = CacheKind::kFullAttention;
  int64_t block_size = 16;  // tokens per physical page on one rank

  // Attention fields.
  int64_t num_kv_heads = 1;  // per rank
  int64_t head_size = 0;     // K (or MLA latent) width
  int64_t head_size_v = 0;   // V width (full attention and sliding window)
  KvCacheDtype cache_dtype = KvCacheDtype::kAuto;
  ElementType model_dtype = ElementType::kBfloat16;  // what kAuto resolves to
  int64_t sliding_window = 0;                        // windowed kinds
  int64_t attention_chunk_size = 0;                  // chunked local
  int64_t extra_retained_tokens = 0;  // kept behind a window (MTP, DFlash proof block)
  int64_t mla_rope_dim = 0;  // MLA: the trailing RoPE part of head_size (bf16 in *_ds_mla rows)
  // MLA only: bytes per token appended after the page's token rows, e.g. a sparse-indexer key
  // pooled into the MLA page (GLM-5.3-Flash on B12X: 132 B / 4 = 33 B per token). Hybrid block
  // alignment sizes blocks by the rows alone; the tail grows the page on top of that.
  int64_t page_tail_bytes_per_token = 0;

  // Recurrent fields.
  std::vector<StateTensor> state;
  RecurrentMode recurrent_mode = RecurrentMode::kAlign;
  int64_t num_speculative_blocks = 0;  // S

  // Caches that fix their own rows (DeepSeek-V4's, the engine's MLAAttentionSpec and
  // SlidingWindowMLASpec with compress_ratio, alignment and model_version "deepseek_v4"): a page
  // stores block_size / compress_ratio rows, each row_bytes (0: the row the fields above give),
  // and rounds up to a multiple of page_alignment (0: none) before page_size_padded.
  int64_t compress_ratio = 1;
  int64_t row_bytes = 0;
  int64_t page_alignment = 0;
  // The layer is grouped as the engine groups DeepSeek-V4 (group_and_unify_kv_cache_specs): its
  // full MLA layers in one group, its sliding-window MLA layers in groups of layer tuples padded
  // to the full group's page sizes, and one pool of layer tuples (docs/planner.md).
  bool layer_tuples = false;

  int64_t page_size_padded = 0;  // 0: none
  // A recurrent layer whose state the engine's hybrid alignment estimates apart from the state
  // itself (a class whose get_mamba_state_shape_from_config leaves out the speculative widening
  // its layers keep, or reads other dimensions than they take): the estimated page in bytes,
  // which sizes the attention block and the page padding; 0: the state's own page.
  int64_t alignment_state_bytes = 0;
  // How that estimate departs from the state, for messages ("get_mamba_state_shape_from_config
  // passes no num_spec"); empty when alignment_state_bytes is 0.
  std::string alignment_state_note;
  // Whether the speculative widening alone makes that difference (dropping the speculative
  // tokens closes it).
  bool alignment_state_speculative_only = false;
  DcpLayout dcp;
  // Model facts the launch rules read (GQA/MQA and gathered-head rules under DCP): the layer's
  // model's query heads and K/V heads over all ranks (K/V 0 for MLA).
  int64_t num_q_heads_total = 0;
  int64_t num_kv_heads_total = 0;
  bool sparse_indexer = false;  // a sparse-attention indexer K cache beside an MLA layer

  // A windowed draft layer whose block its attention backend picks at planning time: the largest
  // kernel block that divides the target's block and whose page fits the target's page.
  bool backend_selects_block = false;
  // The backend re-computes the last cached block (EAGLE-style "volatile last block").
  bool volatile_last_block = false;
  bool causal = true;
  // An encoder-decoder model's decoder cross-attention layer (kind kFullAttention): it caches the
  // encoder's output, cdiv(max_num_encoder_input_tokens, B) pages per request (the engine's
  // CrossAttentionSpec), allocated once when the encoder input is scheduled.
  bool cross_attention = false;
  // Static attention sinks (full attention, kind kFullAttention): the layer's attention reads
  // `sink_tokens` learned K/V rows kept in pages of their own, which the engine's manager for the
  // group (SinkFullAttentionManager) takes from the pool once, at start, and never frees (the
  // engine's SinkFullAttentionSpec; openPangu's param_sink_number). 0: none.
  int64_t sink_tokens = 0;
  std::string attention_backend;  // registry name, e.g. "B12X_MLA"; empty for recurrent

  bool operator==(const LayerSpec&) const = default;
};

// The layer's cache kind as reports name it: CacheKindName, or "cross_attention".
std::string_view SpecKindName(const LayerSpec& spec);

// Page size before padding and after it. Errors: non-positive sizes, overflow.
Result<int64_t> RealPageSizeBytes(const LayerSpec& spec);
Result<int64_t> PageSizeBytes(const LayerSpec& spec);

// Bytes per token of an attention page (the page of a 1-token block); 0 for recurrent.
Result<int64_t> AttentionBytesPerToken(const LayerSpec& spec);
// The same without the page tail: the token record hybrid block alignment sizes blocks by.
Result<int64_t> AttentionRecordBytesPerToken(const LayerSpec& spec);

}  // namespace kvtopo
