// GroupGeometry: the single source of truth for how one cache group lays out under decode
// context parallelism (DCP). The planner computes one per group, once; the runtime, the worker
// tables, slot mapping, capacity and every report read it and never re-derive a DCP rule.
//
//   dcp_shard_count     distinct token-position slices across the DCP group: N sharded, n partial
//                       (a positive divisor of N), 1 replicated, 1 recurrent
//   block_size          tokens per physical page on one rank (B)
//   manager_block_size  B * dcp_shard_count: global tokens one block id covers
//   required_columns    sharded/partial cdiv(L, B*shards); replicated cdiv(L, B);
//                       recurrent align/all cdiv(L, B) + S, none 1 + S (never divided by N)
//   manager_table_width required_columns, aligned to 128 tokens when B <= 128
//   block_table_width   manager_table_width * (B / kernel_block_size)
//
// Thread safety: value types.
#pragma once

#include <cstdint>
#include <string_view>

#include "kvtopo/spec.h"
#include "kvtopo/status.h"

namespace kvtopo {

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
};

struct GroupGeometry {
  CacheKind kind = CacheKind::kFullAttention;
  Placement placement = Placement::kSharded;
  int64_t dcp_size = 1;    // N of the launch
  int64_t interleave = 1;  // I of the launch
  int64_t dcp_shard_count = 1;
  int64_t block_size = 0;
  int64_t manager_block_size = 0;
  int64_t kernel_block_size = 0;
  int64_t page_size_bytes = 0;
  int64_t required_columns = 0;
  int64_t manager_table_width = 0;
  int64_t block_table_width = 0;
  int64_t max_pages_per_request = 0;
  int64_t memory_per_request_bytes = 0;    // per layer, per rank
  int64_t block_table_bytes_per_rank = 0;  // int32 entries * max_num_seqs rows
  int64_t max_model_len = 0;
  int64_t max_num_seqs = 0;
  // Kind parameters the managers need.
  RecurrentMode recurrent_mode = RecurrentMode::kAlign;
  int64_t num_speculative_blocks = 0;
  int64_t sliding_window = 0;
  int64_t attention_chunk_size = 0;
  int64_t extra_retained_tokens = 0;

  // Sharded and partial groups map slots by the interleaved ownership rule; the others are
  // local on every rank.
  bool interleaved_slots() const {
    return placement == Placement::kSharded || placement == Placement::kPartial;
  }
  bool operator==(const GroupGeometry&) const = default;
};

// Token-position shards of `spec` under DCP size `dcp_size`, validating its DcpLayout.
Result<int64_t> DcpShardCount(const LayerSpec& spec, int64_t dcp_size);
Result<Placement> PlacementOf(const LayerSpec& spec, int64_t dcp_size);

// The geometry of a group whose merged spec is `spec` (page size as unified by the planner).
Result<GroupGeometry> ComputeGroupGeometry(const LayerSpec& spec, const ParallelConfig& parallel,
                                           const GeometryOptions& options);

// Columns a recurrent align-mode row needs after `num_tokens` scheduled tokens: the checkpoint
// of the last full block sits in column cdiv(n, B) - 1 and S speculative columns follow it.
int64_t RecurrentAlignColumnsNeeded(int64_t num_tokens, int64_t block_size,
                                    int64_t num_speculative_blocks);

}  // namespace kvtopo
