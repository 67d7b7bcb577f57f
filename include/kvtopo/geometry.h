// GroupGeometry: the single source of truth for how one cache group lays out under decode
// context parallelism (DCP). The planner computes one per group, once, with
// ComputeGroupGeometry; the runtime, the worker tables, slot mapping, capacity and every report
// ask it and never re-derive a DCP rule.
//
//   dcp_shard_count     distinct token-position slices across the DCP group: N sharded, n partial
//                       (a positive divisor of N), 1 replicated, 1 recurrent
//   block_size          tokens per physical page on one rank (B)
//   manager_block_size  B * dcp_shard_count: global tokens one block id covers
//   context_parallel_block_size  B * N * P, whatever the placement: the unit the engine's
//                       offloading spec counts a block of the group in (OffloadingSpec)
//   required_columns    sharded/partial cdiv(L, B*shards); replicated cdiv(L, B);
//                       recurrent align/all cdiv(L, B) + S, none 1 + S (never divided by N);
//                       cross-attention cdiv(E, B), E the encoder tokens a request may hold
//   manager_table_width required_columns (in an encoder-decoder model: the columns of
//                       max(L, E) tokens), aligned to 128 tokens when B <= 128
//   block_table_width   manager_table_width * (B / kernel_block_size)
//   sink_blocks         static attention sinks: sink_tokens / manager_block_size blocks the
//                       group's manager takes from the pool at start (0 without sinks)
//
// Positions of sharded and partial groups are striped round-robin over the n slices in chunks of
// I = interleave tokens: slice(p) = (p / I) mod n, and rank r holds slice r mod n. Replicated and
// recurrent groups keep every position on every rank.
//
// Invariants: a GroupGeometry is an immutable value; only ComputeGroupGeometry builds one (a
// default-constructed geometry is empty: block size 0, usable only as a placeholder).
// Thread safety: value type.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "kvtopo/ids.h"
#include "kvtopo/spec.h"
#include "kvtopo/status.h"

namespace kvtopo {

class GroupGeometry;
namespace internal {
GroupGeometry DcpScaledRecurrentTable(const GroupGeometry& geometry);
}  // namespace internal

enum class Placement {
  kSharded,     // token positions striped over all N DCP ranks
  kPartial,     // striped over n < N slices, each held by N/n ranks
  kReplicated,  // every rank holds every position (DCP1 geometry)
  kRecurrent,   // one state per request on every rank; never split by position
};
std::string_view PlacementName(Placement placement);

struct ParallelConfig {
  int64_t tensor_parallel_size = 1;
  int64_t decode_context_parallel_size = 1;   // N
  int64_t prefill_context_parallel_size = 1;  // P
  int64_t dcp_kv_cache_interleave_size = 1;   // I
  bool operator==(const ParallelConfig&) const = default;
};
// TP, DCP, PCP and interleave positive; TP divisible by DCP.
Status ValidateParallelConfig(const ParallelConfig& parallel);

struct GeometryOptions {
  int64_t max_model_len = 0;         // L
  int64_t max_num_seqs = 1;          // rows of every block table
  int64_t max_tokens_in_flight = 0;  // scheduled, unsettled tokens: bounds windowed kinds
  int64_t kernel_block_size = 0;     // b; 0 means b = B. Recurrent groups always use b = B.
  // The page one block holds per layer; 0: the spec's (a uniform-type group passes its largest).
  int64_t page_size_bytes = 0;
  // E: encoder tokens a cross-attention group holds per request (the engine's
  // max_num_encoder_input_tokens); required, positive, for a cross-attention spec.
  int64_t max_encoder_tokens = 0;
  // The group belongs to an encoder-decoder model (one with a cross-attention group): the
  // engine's worker sizes every group's rows, self-attention too, for max(L, E) tokens
  // (GPUModelRunner's input batch), so manager_table_width counts those; required_columns and
  // the pages a request holds stay as the group's kind gives them. Needs E positive.
  bool encoder_decoder = false;
};

// How one rank maps positions of one group to slots (GroupGeometry::SlotLayoutFor).
struct SlotLayout {
  int64_t num_shards = 1;         // n: distinct position slices (1: local on every rank)
  int64_t interleave = 1;         // I
  int64_t kernel_block_size = 0;  // b: tokens per kernel page on one rank
  Rank rank{0};                   // this rank, in [0, N)
  // B: tokens per cache block on one rank (a block is B / b kernel pages); 0 in a layout built
  // by hand, taken as b.
  int64_t block_size = 0;
  // c: positions per row of a compressed cache (LayerSpec::compress_ratio, DeepSeek-V4's
  // compressed MLA and indexer caches), which the caller sets for the layer; 1 for every other.
  int64_t compress_ratio = 1;
  // Positions at or past it map to -1 and need no block id: a speculative draft step's positions
  // past the longest request, which the engine's EAGLE proposer pads (PADDING_SLOT_ID where a
  // position reaches max_model_len). The caller sets it (max_model_len) for those steps; 0: none.
  int64_t pad_from = 0;
};

class GroupGeometry {
 public:
  GroupGeometry() = default;

  CacheKind kind() const { return kind_; }
  Placement placement() const { return placement_; }
  int64_t dcp_size() const { return dcp_size_; }      // N of the launch
  int64_t interleave() const { return interleave_; }  // I of the launch
  int64_t dcp_shard_count() const { return dcp_shard_count_; }
  int64_t block_size() const { return block_size_; }
  int64_t manager_block_size() const { return manager_block_size_; }
  int64_t context_parallel_block_size() const { return context_parallel_block_size_; }
  int64_t kernel_block_size() const { return kernel_block_size_; }
  int64_t kernel_blocks_per_block() const {
    return kernel_block_size_ > 0 ? block_size_ / kernel_block_size_ : 0;
  }
  int64_t page_size_bytes() const { return page_size_bytes_; }
  int64_t required_columns() const { return required_columns_; }
  int64_t manager_table_width() const { return manager_table_width_; }
  int64_t block_table_width() const { return block_table_width_; }
  int64_t max_pages_per_request() const { return max_pages_per_request_; }
  int64_t memory_per_request_bytes() const { return memory_per_request_bytes_; }  // per layer
  int64_t block_table_bytes_per_rank() const { return block_table_bytes_per_rank_; }
  int64_t max_model_len() const { return max_model_len_; }
  int64_t max_num_seqs() const { return max_num_seqs_; }
  int64_t max_tokens_in_flight() const { return max_tokens_in_flight_; }
  RecurrentMode recurrent_mode() const { return recurrent_mode_; }
  int64_t num_speculative_blocks() const { return num_speculative_blocks_; }
  int64_t sliding_window() const { return sliding_window_; }
  int64_t attention_chunk_size() const { return attention_chunk_size_; }
  int64_t extra_retained_tokens() const { return extra_retained_tokens_; }
  // A decoder cross-attention group (LayerSpec::cross_attention): its rows hold the encoder's
  // tokens, at most max_encoder_tokens (E), whatever the sequence length.
  bool cross_attention() const { return cross_attention_; }
  int64_t max_encoder_tokens() const { return max_encoder_tokens_; }
  // Static attention sinks (LayerSpec::sink_tokens): the sink tokens, and the blocks that hold
  // them, which the group's manager takes from the pool when it starts and never frees (the
  // engine's SinkFullAttentionManager pops sink_len / block_size blocks off the free queue).
  int64_t sink_tokens() const { return sink_tokens_; }
  int64_t sink_blocks() const { return sink_blocks_; }
  // Sharded and partial groups map slots by the interleaved ownership rule; the others are
  // local on every rank.
  bool interleaved_slots() const {
    return placement_ == Placement::kSharded || placement_ == Placement::kPartial;
  }

  // Row columns a request needs after `num_tokens` scheduled tokens: attention
  // cdiv(n, manager_block_size); recurrent align/all cdiv(n, B) + S (the checkpoint of the last
  // full block sits in column cdiv(n, B) - 1, S speculative columns follow it); none 1 + S;
  // cross-attention cdiv(E, B), the most its row holds.
  int64_t ColumnsFor(int64_t num_tokens) const;
  // The block manager's per-step arithmetic, for num_tokens >= 0: manager blocks covering
  // num_tokens, cdiv(n, manager_block_size), and whole manager blocks in them,
  // floor(n / manager_block_size) (a shift when the manager block is a power of two).
  int64_t BlocksCovering(int64_t num_tokens) const {
    return manager_block_shift_ >= 0
               ? (num_tokens >> manager_block_shift_) +
                     ((num_tokens & (manager_block_size_ - 1)) != 0)
               : num_tokens / manager_block_size_ + (num_tokens % manager_block_size_ != 0);
  }
  int64_t FullBlocksIn(int64_t num_tokens) const {
    return manager_block_shift_ >= 0 ? num_tokens >> manager_block_shift_
                                     : num_tokens / manager_block_size_;
  }
  // Sliding-window kinds: the contiguous manager blocks a prefix hit must end with to hold the
  // window's W - 1 earlier tokens, max(1, cdiv(W - 1, manager_block_size)) (vLLM's
  // SlidingWindowManager). Chunked local: the chunk boundaries at or before and at or after
  // `num_tokens`.
  int64_t WindowHitBlocks() const;
  int64_t FloorToChunk(int64_t num_tokens) const;
  int64_t CeilToChunk(int64_t num_tokens) const;
  // Pages one request of `max_len` tokens holds on one rank (max_pages_per_request at L):
  //   full / MLA cdiv(max_len, B * shards); sliding window cdiv(min(W - 1 + extra + T, L), B) + 1;
  //   chunked local cdiv(min(chunk + T, L), B); recurrent none 1 + S, align 2 + S,
  //   all cdiv(L, B) + S (T: max_tokens_in_flight); cross-attention cdiv(E, B) whatever
  //   max_len. Saturates instead of overflowing.
  int64_t PagesForLength(int64_t max_len) const;
  // The same with another bound on tokens in flight (a driver scheduling a smaller budget).
  int64_t PagesForLength(int64_t max_len, int64_t max_tokens_in_flight) const;
  // The layout of this group on `rank` (rank in [0, dcp_size)).
  SlotLayout SlotLayoutFor(Rank rank) const;
  // The slice holding position p, and whether `rank` holds p.
  int64_t OwnerSlice(TokenPos position) const;
  bool HoldsPosition(Rank rank, TokenPos position) const;
  // Tokens of a `seq_len`-token sequence that `rank` stores:
  //   floor(L / (n*I)) * I + clamp(L mod (n*I) - s*I, 0, I), s = rank mod n; L when n = 1.
  TokenCount LocalLength(Rank rank, TokenCount seq_len) const;
  // The batch form for attention metadata (target or draft: a draft passes its own global
  // lengths, recomputed every draft step): out[i] = LocalLength(rank, seq_lens[i]), 0 for the
  // padding rows past seq_lens.size(). out.size() >= seq_lens.size().
  void LocalLengths(Rank rank, std::span<const int32_t> seq_lens, std::span<int32_t> out) const;
  // The most tokens any rank stores of a `seq_len`-token sequence (slice 0's share).
  TokenCount LargestLocalShard(TokenCount seq_len) const;

  bool operator==(const GroupGeometry&) const = default;

 private:
  friend Result<GroupGeometry> ComputeGroupGeometry(const LayerSpec& spec,
                                                    const ParallelConfig& parallel,
                                                    const GeometryOptions& options);
  // Token-position slices of the slot mapping: dcp_shard_count for interleaved groups, else 1.
  int64_t slot_shards() const { return interleaved_slots() ? dcp_shard_count_ : 1; }
  // The negative controls' deliberately wrong geometry (src/internal/injected_faults.h).
  friend GroupGeometry internal::DcpScaledRecurrentTable(const GroupGeometry& geometry);

  CacheKind kind_ = CacheKind::kFullAttention;
  Placement placement_ = Placement::kSharded;
  int64_t dcp_size_ = 1;
  int64_t interleave_ = 1;
  int64_t dcp_shard_count_ = 1;
  int64_t block_size_ = 0;
  int64_t manager_block_size_ = 0;
  int manager_block_shift_ = -1;  // log2(manager_block_size_) when a power of two, else -1
  int64_t context_parallel_block_size_ = 0;
  int64_t kernel_block_size_ = 0;
  int64_t page_size_bytes_ = 0;
  int64_t required_columns_ = 0;
  int64_t manager_table_width_ = 0;
  int64_t block_table_width_ = 0;
  int64_t max_pages_per_request_ = 0;
  int64_t memory_per_request_bytes_ = 0;
  int64_t block_table_bytes_per_rank_ = 0;
  int64_t max_model_len_ = 0;
  int64_t max_num_seqs_ = 0;
  int64_t max_tokens_in_flight_ = 0;
  RecurrentMode recurrent_mode_ = RecurrentMode::kAlign;
  int64_t num_speculative_blocks_ = 0;
  int64_t sliding_window_ = 0;
  int64_t attention_chunk_size_ = 0;
  int64_t extra_retained_tokens_ = 0;
  bool cross_attention_ = false;
  int64_t max_encoder_tokens_ = 0;
  int64_t sink_tokens_ = 0;
  int64_t sink_blocks_ = 0;
};

// Token-position shards of `spec` under DCP size `dcp_size`, validating its DcpLayout.
Result<int64_t> DcpShardCount(const LayerSpec& spec, int64_t dcp_size);
Result<Placement> PlacementOf(const LayerSpec& spec, int64_t dcp_size);

// The geometry of a group whose merged spec is `spec` (block size and padding as planned).
// Errors name the value and the flag: a non-positive size, a kernel block that does not divide
// the block, a block or kernel block that is not a multiple of the interleave (sharded groups),
// a window under DCP that is not replicated (Rejected), attention sinks under context parallelism
// or in a block size that does not divide them (Rejected), an overflowing width.
Result<GroupGeometry> ComputeGroupGeometry(const LayerSpec& spec, const ParallelConfig& parallel,
                                           const GeometryOptions& options);

}  // namespace kvtopo
