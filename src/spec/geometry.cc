#include "kvtopo/geometry.h"

#include <fmt/format.h>

#include "internal/checked_math.h"

namespace kvtopo {

using internal::CeilDiv;

std::string_view PlacementName(Placement placement) {
  switch (placement) {
    case Placement::kSharded:
      return "sharded";
    case Placement::kPartial:
      return "partial";
    case Placement::kReplicated:
      return "replicated";
    case Placement::kRecurrent:
      return "recurrent";
  }
  return "?";
}

Status ValidateParallelConfig(const ParallelConfig& p) {
  if (p.decode_context_parallel_size <= 0) {
    return InvalidArgument(fmt::format("--decode-context-parallel-size must be positive, got {}",
                                       p.decode_context_parallel_size));
  }
  if (p.tensor_parallel_size <= 0) {
    return InvalidArgument(
        fmt::format("--tensor-parallel-size must be positive, got {}", p.tensor_parallel_size));
  }
  if (p.prefill_context_parallel_size <= 0) {
    return InvalidArgument(fmt::format("--prefill-context-parallel-size must be positive, got {}",
                                       p.prefill_context_parallel_size));
  }
  if (p.dcp_kv_cache_interleave_size <= 0) {
    return InvalidArgument(fmt::format("--dcp-kv-cache-interleave-size must be positive, got {}",
                                       p.dcp_kv_cache_interleave_size));
  }
  if (p.tensor_parallel_size % p.decode_context_parallel_size != 0) {
    return Rejected(fmt::format(
        "--tensor-parallel-size {} is not divisible by --decode-context-parallel-size {}; DCP "
        "splits each TP group, so choose a DCP size that divides the TP size",
        p.tensor_parallel_size, p.decode_context_parallel_size));
  }
  return Status::Ok();
}

Result<int64_t> DcpShardCount(const LayerSpec& spec, int64_t dcp_size) {
  if (dcp_size <= 0) {
    return InvalidArgument(
        fmt::format("--decode-context-parallel-size must be positive, got {}", dcp_size));
  }
  if (spec.kind == CacheKind::kRecurrent) return int64_t{1};
  const int64_t n = spec.dcp.kv_shard_count;
  if (spec.dcp.replicated) {
    if (n != 0 && n != 1) {
      return InvalidArgument(fmt::format(
          "layer '{}' is DCP-replicated but asks for {} KV shards; a replicated cache has one "
          "shard, so drop the shard count or the replication",
          spec.name, n));
    }
    return int64_t{1};
  }
  if (n == 0) return dcp_size;
  if (n < 0 || n > dcp_size || dcp_size % n != 0) {
    return InvalidArgument(
        fmt::format("layer '{}': KV shard count {} must be a positive divisor of "
                    "--decode-context-parallel-size {}",
                    spec.name, n, dcp_size));
  }
  return n;
}

Result<Placement> PlacementOf(const LayerSpec& spec, int64_t dcp_size) {
  KVTOPO_ASSIGN_OR_RETURN(int64_t shards, DcpShardCount(spec, dcp_size));
  if (spec.kind == CacheKind::kRecurrent) return Placement::kRecurrent;
  if (spec.dcp.replicated) return Placement::kReplicated;
  if (shards == dcp_size) return Placement::kSharded;
  // A partial count of 1 under DCP > 1 is full replication expressed as a shard count.
  return shards == 1 ? Placement::kReplicated : Placement::kPartial;
}

int64_t RecurrentAlignColumnsNeeded(int64_t num_tokens, int64_t block_size,
                                    int64_t num_speculative_blocks) {
  return CeilDiv(num_tokens, block_size) + num_speculative_blocks;
}

Result<GroupGeometry> ComputeGroupGeometry(const LayerSpec& spec, const ParallelConfig& parallel,
                                           const GeometryOptions& options) {
  KVTOPO_RETURN_IF_ERROR(ValidateParallelConfig(parallel));
  const int64_t N = parallel.decode_context_parallel_size;
  const int64_t I = parallel.dcp_kv_cache_interleave_size;
  if (options.max_model_len <= 0) {
    return InvalidArgument(
        fmt::format("--max-model-len must be positive, got {}", options.max_model_len));
  }
  if (options.max_num_seqs <= 0) {
    return InvalidArgument(
        fmt::format("--max-num-seqs must be positive, got {}", options.max_num_seqs));
  }
  if (spec.block_size <= 0) {
    return InvalidArgument(fmt::format("layer '{}': --block-size must be positive, got {}",
                                       spec.name, spec.block_size));
  }
  if (spec.num_speculative_blocks < 0) {
    return InvalidArgument(
        fmt::format("layer '{}': speculative blocks must not be negative", spec.name));
  }

  GroupGeometry g;
  g.kind = spec.kind;
  g.dcp_size = N;
  g.interleave = I;
  g.max_model_len = options.max_model_len;
  g.max_num_seqs = options.max_num_seqs;
  g.recurrent_mode = spec.recurrent_mode;
  g.num_speculative_blocks = spec.kind == CacheKind::kRecurrent ? spec.num_speculative_blocks : 0;
  g.sliding_window = spec.sliding_window;
  g.attention_chunk_size = spec.attention_chunk_size;
  g.extra_retained_tokens = spec.extra_retained_tokens;
  KVTOPO_ASSIGN_OR_RETURN(g.dcp_shard_count, DcpShardCount(spec, N));
  KVTOPO_ASSIGN_OR_RETURN(g.placement, PlacementOf(spec, N));

  if (IsWindowed(spec.kind)) {
    const int64_t span =
        spec.kind == CacheKind::kChunkedLocal ? spec.attention_chunk_size : spec.sliding_window;
    if (span <= 0) {
      return InvalidArgument(fmt::format("layer '{}': {} window must be positive, got {}",
                                         spec.name, CacheKindName(spec.kind), span));
    }
    if (N > 1 && g.placement != Placement::kReplicated) {
      return Rejected(fmt::format(
          "{} layer '{}' is DCP-sharded; DCP supports windowed KV only when it is replicated: "
          "replicate it or set --decode-context-parallel-size 1",
          CacheKindName(spec.kind), spec.name));
    }
  }

  const int64_t B = spec.block_size;
  g.block_size = B;
  KVTOPO_ASSIGN_OR_RETURN(g.manager_block_size,
                          internal::CheckedMul(B, g.dcp_shard_count, "manager block size"));
  g.kernel_block_size = (spec.kind == CacheKind::kRecurrent || options.kernel_block_size == 0)
                            ? B
                            : options.kernel_block_size;
  if (g.kernel_block_size <= 0 || B % g.kernel_block_size != 0) {
    return Rejected(fmt::format(
        "layer '{}': kernel block size {} does not divide --block-size {}; choose a block size "
        "that is a multiple of a kernel block size the attention backend supports",
        spec.name, g.kernel_block_size, B));
  }
  if (g.interleaved_slots() && N > 1) {
    if (B % I != 0) {
      return Rejected(fmt::format(
          "--block-size {} is not a multiple of --dcp-kv-cache-interleave-size {}; choose an "
          "interleave that divides the block size",
          B, I));
    }
    if (g.kernel_block_size % I != 0) {
      return Rejected(fmt::format(
          "kernel block size {} of layer '{}' is not a multiple of "
          "--dcp-kv-cache-interleave-size {}; choose an interleave that divides the kernel block",
          g.kernel_block_size, spec.name, I));
    }
  }
  KVTOPO_ASSIGN_OR_RETURN(g.page_size_bytes, PageSizeBytes(spec));

  const int64_t L = options.max_model_len;
  const int64_t S = g.num_speculative_blocks;
  switch (g.placement) {
    case Placement::kSharded:
    case Placement::kPartial:
    case Placement::kReplicated:
      g.required_columns = CeilDiv(L, g.manager_block_size);
      break;
    case Placement::kRecurrent:
      g.required_columns = spec.recurrent_mode == RecurrentMode::kNone ? 1 + S : CeilDiv(L, B) + S;
      break;
  }
  g.manager_table_width = g.required_columns;
  if (B <= 128) {
    const int64_t align = 128 / B;
    g.manager_table_width = internal::RoundUp(g.manager_table_width, align);
  }
  KVTOPO_ASSIGN_OR_RETURN(
      g.block_table_width,
      internal::CheckedMul(g.manager_table_width, B / g.kernel_block_size, "block-table width"));
  KVTOPO_ASSIGN_OR_RETURN(g.block_table_bytes_per_rank,
                          internal::CheckedProduct({g.block_table_width, 4, options.max_num_seqs},
                                                   "block-table bytes per rank"));

  const RequestBounds bounds{.max_model_len = L,
                             .max_tokens_in_flight = options.max_tokens_in_flight,
                             .dcp_shard_count = g.dcp_shard_count};
  KVTOPO_ASSIGN_OR_RETURN(g.max_pages_per_request, MaxPagesPerRequest(spec, bounds));
  KVTOPO_ASSIGN_OR_RETURN(g.memory_per_request_bytes, MaxMemoryPerRequestBytes(spec, bounds));
  return g;
}

}  // namespace kvtopo
