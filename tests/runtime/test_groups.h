// Cache groups for runtime and worker tests, built through the real geometry code.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "kvtopo/geometry.h"
#include "kvtopo/kv_cache_manager.h"

namespace kvtopo::testing {

struct GroupParams {
  CacheKind kind = CacheKind::kMla;
  int64_t block_size = 16;
  int64_t dcp = 1;
  int64_t interleave = 1;
  int64_t max_model_len = 4096;
  int64_t window = 0;  // sliding window or attention chunk
  RecurrentMode mode = RecurrentMode::kAlign;
  int64_t spec_blocks = 0;
  bool replicated = false;
  int64_t kv_shards = 0;
  int64_t kernel_block_size = 0;
  int64_t max_num_seqs = 64;
};

inline GroupGeometry MakeGeometry(const GroupParams& p) {
  LayerSpec spec{.name = "layer",
                 .kind = p.kind,
                 .block_size = p.block_size,
                 .num_kv_heads = 1,
                 .head_size = 64,
                 .head_size_v = 64};
  if (p.kind == CacheKind::kRecurrent) {
    spec.state = {{{4, 8}, ElementType::kFloat32}};
    spec.recurrent_mode = p.mode;
    spec.num_speculative_blocks = p.spec_blocks;
  }
  if (p.kind == CacheKind::kSlidingWindow || p.kind == CacheKind::kSlidingWindowMla) {
    spec.sliding_window = p.window;
  }
  if (p.kind == CacheKind::kChunkedLocal) spec.attention_chunk_size = p.window;
  spec.dcp.replicated = p.replicated;
  spec.dcp.kv_shard_count = p.kv_shards;
  const ParallelConfig parallel{.tensor_parallel_size = p.dcp,
                                .decode_context_parallel_size = p.dcp,
                                .dcp_kv_cache_interleave_size = p.interleave};
  const GeometryOptions options{.max_model_len = p.max_model_len,
                                .max_num_seqs = p.max_num_seqs,
                                .max_tokens_in_flight = 512,
                                .kernel_block_size = p.kernel_block_size};
  auto g = ComputeGroupGeometry(spec, parallel, options);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : GroupGeometry{};
}

inline CacheGroup MakeGroup(const GroupParams& p, bool volatile_last_block = false) {
  return CacheGroup{.geometry = MakeGeometry(p), .volatile_last_block = volatile_last_block};
}

// Prompt token ids first, first + 1, ..., n of them.
inline std::vector<int32_t> Tokens(int64_t n, int32_t first = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Block ids as plain ints, for comparisons.
inline std::vector<int32_t> Ids(std::span<const BlockId> blocks) {
  std::vector<int32_t> out;
  for (BlockId b : blocks) out.push_back(b.value());
  return out;
}

}  // namespace kvtopo::testing
