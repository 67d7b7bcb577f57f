#include "kvtopo/geometry.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "internal/checked_math.h"
#include "internal/dcp_math.h"

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
    return Rejected(
        fmt::format(
            "--tensor-parallel-size {} is not divisible by --decode-context-parallel-size {}; "
            "DCP splits each TP group, so choose a DCP size that divides the TP size",
            p.tensor_parallel_size, p.decode_context_parallel_size),
        "parallel-config");
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

// Static attention sinks (SinkFullAttentionManager and the static-sink attention builder,
// single_type_kv_cache_manager.py and static_sink_attention.py at 28be48fa9): the manager pops
// sink_len / its block size (B x N x P) blocks off the free queue at start, asserting that they
// divide; the attention puts block ids 1 to sink_len / B in front of every row and writes the sink
// rows there. Under context parallelism the manager reserves fewer blocks than the attention
// reads, so requests' blocks would overwrite the sink: refused.
namespace {
Result<int64_t> SinkBlocks(const LayerSpec& spec, const ParallelConfig& parallel,
                           int64_t manager_block_size, int64_t context_parallel) {
  const int64_t sink = spec.sink_tokens;
  if (sink < 0) {
    return InvalidArgument(fmt::format(
        "layer '{}': attention sink tokens must not be negative, got {}", spec.name, sink));
  }
  if (spec.kind != CacheKind::kFullAttention || spec.cross_attention) {
    return InvalidArgument(
        fmt::format("layer '{}': static attention sinks ({} tokens) belong to full attention "
                    "layers, not {}",
                    spec.name, sink, SpecKindName(spec)));
  }
  const int64_t N = parallel.decode_context_parallel_size;
  const int64_t P = parallel.prefill_context_parallel_size;
  if (N > 1 || P > 1) {
    return Rejected(
        fmt::format("layer '{}' keeps {} static attention sink tokens under "
                    "--decode-context-parallel-size {} and --prefill-context-parallel-size {}: "
                    "the engine's sink manager reserves sink tokens / (block size x {}) blocks "
                    "while its attention reads sink tokens / block size block ids, so requests' "
                    "blocks would overwrite the sink; set both to 1",
                    spec.name, sink, N, P, context_parallel),
        "sink-attention-context-parallel");
  }
  if (sink % manager_block_size != 0) {
    return Rejected(
        fmt::format("layer '{}' keeps {} static attention sink tokens, which --block-size {} "
                    "does not divide: the engine's sink manager asserts that whole blocks hold "
                    "them; choose a block size that divides {}",
                    spec.name, sink, manager_block_size, sink),
        "sink-block-size");
  }
  return sink / manager_block_size;
}
}  // namespace

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
  if (options.max_tokens_in_flight < 0) {
    return InvalidArgument(
        fmt::format("tokens in flight must not be negative, got {}", options.max_tokens_in_flight));
  }
  if (options.encoder_decoder && options.max_encoder_tokens <= 0) {
    return InvalidArgument(
        fmt::format("layer '{}': an encoder-decoder model's groups need the encoder tokens per "
                    "request (max_num_encoder_input_tokens) positive, got {}",
                    spec.name, options.max_encoder_tokens));
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
  g.kind_ = spec.kind;
  g.dcp_size_ = N;
  g.interleave_ = I;
  g.max_model_len_ = options.max_model_len;
  g.max_num_seqs_ = options.max_num_seqs;
  g.max_tokens_in_flight_ = options.max_tokens_in_flight;
  g.recurrent_mode_ = spec.recurrent_mode;
  g.num_speculative_blocks_ = spec.kind == CacheKind::kRecurrent ? spec.num_speculative_blocks : 0;
  g.sliding_window_ = spec.sliding_window;
  g.attention_chunk_size_ = spec.attention_chunk_size;
  g.extra_retained_tokens_ = spec.extra_retained_tokens;
  if (spec.cross_attention) {
    if (spec.kind != CacheKind::kFullAttention) {
      return InvalidArgument(
          fmt::format("layer '{}': a cross-attention layer caches full attention, not {}",
                      spec.name, CacheKindName(spec.kind)));
    }
    if (options.max_encoder_tokens <= 0) {
      return InvalidArgument(
          fmt::format("layer '{}': a cross-attention group needs its encoder tokens per request "
                      "(max_num_encoder_input_tokens) positive, got {}",
                      spec.name, options.max_encoder_tokens));
    }
    // The engine runs encoder-decoder cache groups on one context-parallel rank: its hybrid
    // coordinator asserts DCP and PCP 1 (kv_cache_coordinator.py), and the encoder's K/V is not
    // split by position.
    const int64_t P = parallel.prefill_context_parallel_size;
    if (N > 1 || P > 1) {
      return Rejected(
          fmt::format("cross-attention layer '{}' under --decode-context-parallel-size {} and "
                      "--prefill-context-parallel-size {}: the engine runs encoder-decoder "
                      "models without context parallelism; set both to 1",
                      spec.name, N, P),
          "cross-attention-context-parallel");
    }
    g.cross_attention_ = true;
    g.max_encoder_tokens_ = options.max_encoder_tokens;
  }
  KVTOPO_ASSIGN_OR_RETURN(g.dcp_shard_count_, DcpShardCount(spec, N));
  KVTOPO_ASSIGN_OR_RETURN(g.placement_, PlacementOf(spec, N));

  if (IsWindowed(spec.kind)) {
    const int64_t span =
        spec.kind == CacheKind::kChunkedLocal ? spec.attention_chunk_size : spec.sliding_window;
    if (span <= 0) {
      return InvalidArgument(fmt::format("layer '{}': {} window must be positive, got {}",
                                         spec.name, CacheKindName(spec.kind), span));
    }
    if (N > 1 && g.placement_ != Placement::kReplicated) {
      return Rejected(
          fmt::format(
              "{} layer '{}' is DCP-sharded; DCP supports windowed KV only when it is replicated: "
              "replicate it or set --decode-context-parallel-size 1",
              CacheKindName(spec.kind), spec.name),
          "sliding-window-dcp");
    }
  }

  const int64_t B = spec.block_size;
  g.block_size_ = B;
  KVTOPO_ASSIGN_OR_RETURN(g.manager_block_size_,
                          internal::CheckedMul(B, g.dcp_shard_count_, "manager block size"));
  KVTOPO_ASSIGN_OR_RETURN(
      const int64_t context_parallel,
      internal::CheckedMul(N, parallel.prefill_context_parallel_size, "context-parallel ranks"));
  KVTOPO_ASSIGN_OR_RETURN(
      g.context_parallel_block_size_,
      internal::CheckedMul(B, context_parallel, "block size times the context-parallel ranks"));
  if (spec.sink_tokens != 0) {
    KVTOPO_ASSIGN_OR_RETURN(g.sink_blocks_,
                            SinkBlocks(spec, parallel, g.manager_block_size_, context_parallel));
    g.sink_tokens_ = spec.sink_tokens;
  }
  if (std::has_single_bit(static_cast<uint64_t>(g.manager_block_size_))) {
    g.manager_block_shift_ = std::countr_zero(static_cast<uint64_t>(g.manager_block_size_));
  }
  g.kernel_block_size_ = (spec.kind == CacheKind::kRecurrent || options.kernel_block_size == 0)
                             ? B
                             : options.kernel_block_size;
  if (g.kernel_block_size_ <= 0 || B % g.kernel_block_size_ != 0) {
    return Rejected(
        fmt::format(
            "layer '{}': kernel block size {} does not divide --block-size {}; choose a block size "
            "that is a multiple of a kernel block size the attention backend supports",
            spec.name, g.kernel_block_size_, B),
        "kernel-block-size");
  }
  if (g.interleaved_slots() && N > 1) {
    if (B % I != 0) {
      return Rejected(
          fmt::format(
              "layer '{}': block size {} is not a multiple of --dcp-kv-cache-interleave-size {}; "
              "change --block-size or choose an interleave that divides the block size",
              spec.name, B, I),
          "block-size-interleave");
    }
    if (g.kernel_block_size_ % I != 0) {
      return Rejected(fmt::format("kernel block size {} of layer '{}' is not a multiple of "
                                  "--dcp-kv-cache-interleave-size {}; choose an interleave that "
                                  "divides the kernel block",
                                  g.kernel_block_size_, spec.name, I),
                      "block-size-interleave");
    }
  }
  if (options.page_size_bytes > 0) {
    g.page_size_bytes_ = options.page_size_bytes;
  } else {
    KVTOPO_ASSIGN_OR_RETURN(g.page_size_bytes_, PageSizeBytes(spec));
  }

  // ColumnsFor on a user's length, checked: a recurrent row adds S columns to cdiv(n, B).
  const auto columns_for = [&g](int64_t tokens) -> Result<int64_t> {
    if (g.kind_ == CacheKind::kRecurrent && g.recurrent_mode_ != RecurrentMode::kNone) {
      return internal::CheckedAdd(CeilDiv(tokens, g.block_size_), g.num_speculative_blocks_,
                                  "block-table columns");
    }
    return g.ColumnsFor(tokens);
  };
  KVTOPO_ASSIGN_OR_RETURN(g.required_columns_, columns_for(options.max_model_len));
  g.manager_table_width_ = g.required_columns_;
  if (options.encoder_decoder) {
    // The engine's worker sizes an encoder-decoder model's rows for max(max_model_len,
    // max_encoder_len) tokens in every group (GPUModelRunner's InputBatch).
    const int64_t row_tokens = std::max(options.max_model_len, options.max_encoder_tokens);
    if (g.cross_attention_) {
      g.manager_table_width_ = CeilDiv(row_tokens, g.manager_block_size_);
    } else {
      KVTOPO_ASSIGN_OR_RETURN(g.manager_table_width_, columns_for(row_tokens));
    }
  }
  if (B <= 128) {
    const int64_t align = 128 / B;
    KVTOPO_ASSIGN_OR_RETURN(
        g.manager_table_width_,
        internal::CheckedMul(CeilDiv(g.manager_table_width_, align), align, "block-table columns"));
  }
  KVTOPO_ASSIGN_OR_RETURN(
      g.block_table_width_,
      internal::CheckedMul(g.manager_table_width_, B / g.kernel_block_size_, "block-table width"));
  KVTOPO_ASSIGN_OR_RETURN(g.block_table_bytes_per_rank_,
                          internal::CheckedProduct({g.block_table_width_, 4, options.max_num_seqs},
                                                   "block-table bytes per rank"));
  g.max_pages_per_request_ = g.PagesForLength(options.max_model_len);
  KVTOPO_ASSIGN_OR_RETURN(
      g.memory_per_request_bytes_,
      internal::CheckedMul(g.max_pages_per_request_, g.page_size_bytes_,
                           fmt::format("memory per request of layer '{}'", spec.name)));
  return g;
}

int64_t GroupGeometry::ColumnsFor(int64_t num_tokens) const {
  if (kind_ == CacheKind::kRecurrent) {
    if (recurrent_mode_ == RecurrentMode::kNone) return 1 + num_speculative_blocks_;
    return CeilDiv(num_tokens, block_size_) + num_speculative_blocks_;
  }
  if (cross_attention_) return CeilDiv(max_encoder_tokens_, manager_block_size_);
  return CeilDiv(num_tokens, manager_block_size_);
}

int64_t GroupGeometry::WindowHitBlocks() const {
  return std::max<int64_t>(1, CeilDiv(sliding_window_ - 1, manager_block_size_));
}

int64_t GroupGeometry::FloorToChunk(int64_t num_tokens) const {
  return num_tokens / attention_chunk_size_ * attention_chunk_size_;
}

int64_t GroupGeometry::CeilToChunk(int64_t num_tokens) const {
  return CeilDiv(num_tokens, attention_chunk_size_) * attention_chunk_size_;
}

int64_t GroupGeometry::PagesForLength(int64_t max_len) const {
  return PagesForLength(max_len, max_tokens_in_flight_);
}

int64_t GroupGeometry::PagesForLength(int64_t max_len, int64_t max_tokens_in_flight) const {
  const int64_t B = block_size_;
  const int64_t S = num_speculative_blocks_;
  // min(a + b + c, L), saturating: a span past L is L.
  auto span = [&](std::initializer_list<int64_t> parts) {
    int64_t total = 0;
    for (int64_t part : parts) {
      if (__builtin_add_overflow(total, part, &total)) return max_len;
    }
    return std::min(total, max_len);
  };
  if (cross_attention_) return CeilDiv(max_encoder_tokens_, manager_block_size_);
  switch (kind_) {
    case CacheKind::kFullAttention:
    case CacheKind::kMla:
      return CeilDiv(max_len, manager_block_size_);
    case CacheKind::kSlidingWindow:
    case CacheKind::kSlidingWindowMla:
      return CeilDiv(span({sliding_window_ - 1, extra_retained_tokens_, max_tokens_in_flight}), B) +
             1;
    case CacheKind::kChunkedLocal:
      return CeilDiv(span({attention_chunk_size_, max_tokens_in_flight}), B);
    case CacheKind::kRecurrent:
      switch (recurrent_mode_) {
        case RecurrentMode::kNone:
          return 1 + S;
        case RecurrentMode::kAlign:
          return 2 + S;
        case RecurrentMode::kAll:
          return CeilDiv(max_len, B) + S;
      }
  }
  return 0;
}

SlotLayout GroupGeometry::SlotLayoutFor(Rank rank) const {
  return SlotLayout{.num_shards = slot_shards(),
                    .interleave = interleave_,
                    .kernel_block_size = kernel_block_size_,
                    .rank = rank,
                    .block_size = block_size_};
}

int64_t GroupGeometry::OwnerSlice(TokenPos position) const {
  return internal::OwnerSliceOf(position.value(), slot_shards(), interleave_);
}

bool GroupGeometry::HoldsPosition(Rank rank, TokenPos position) const {
  return OwnerSlice(position) == rank.value() % slot_shards();
}

TokenCount GroupGeometry::LocalLength(Rank rank, TokenCount seq_len) const {
  const int64_t n = slot_shards();
  if (n == 1) return seq_len;
  return TokenCount{
      internal::LocalLengthOfSlice(seq_len.value(), n, rank.value() % n, interleave_)};
}

void GroupGeometry::LocalLengths(Rank rank, std::span<const int32_t> seq_lens,
                                 std::span<int32_t> out) const {
  KVTOPO_CHECK(out.size() >= seq_lens.size());
  const int64_t n = slot_shards();
  if (n == 1) {
    std::copy(seq_lens.begin(), seq_lens.end(), out.begin());
  } else {
    const int64_t slice = rank.value() % n;  // one slice for every row of the batch
    for (size_t i = 0; i < seq_lens.size(); ++i) {
      out[i] =
          static_cast<int32_t>(internal::LocalLengthOfSlice(seq_lens[i], n, slice, interleave_));
    }
  }
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(seq_lens.size()), out.end(), 0);
}

TokenCount GroupGeometry::LargestLocalShard(TokenCount seq_len) const {
  return LocalLength(Rank{0}, seq_len);  // slice 0 holds at least as many as any other
}

}  // namespace kvtopo
