#include "kvtopo/geometry.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace kvtopo {
namespace {

LayerSpec MlaSpec(int64_t block) {
  return LayerSpec{.name = "model.layers.3.self_attn",
                   .kind = CacheKind::kMla,
                   .block_size = block,
                   .num_kv_heads = 1,
                   .head_size = 576,
                   .cache_dtype = KvCacheDtype::kFp8};
}

LayerSpec KdaSpec(int64_t block, int64_t spec_blocks) {
  return LayerSpec{.name = "model.layers.0.kda",
                   .kind = CacheKind::kRecurrent,
                   .block_size = block,
                   .state = {{{6, 128, 128}, ElementType::kFloat32}},
                   .recurrent_mode = RecurrentMode::kAlign,
                   .num_speculative_blocks = spec_blocks};
}

const ParallelConfig kTp16Dcp16{.tensor_parallel_size = 16, .decode_context_parallel_size = 16};
const GeometryOptions kMillion{
    .max_model_len = 1000000, .max_num_seqs = 1, .max_tokens_in_flight = 4096};

// The seed "Define per-cache DCP block-table geometry": L = 1,000,000, B = 768, S = 7, DCP16.
TEST(GroupGeometry, SeedRegressionRecurrentWidthIsNotDcpScaled) {
  auto rec = ComputeGroupGeometry(KdaSpec(768, 7), kTp16Dcp16, kMillion);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->placement(), Placement::kRecurrent);
  EXPECT_EQ(rec->dcp_shard_count(), 1);
  EXPECT_EQ(rec->manager_block_size(), 768);
  // The engine's offloading spec counts every group's block times the context-parallel ranks.
  EXPECT_EQ(rec->context_parallel_block_size(), 12288);
  EXPECT_EQ(rec->required_columns(), 1310);
  EXPECT_EQ(rec->block_table_width(), 1310);
  EXPECT_EQ(rec->max_pages_per_request(), 9);

  auto attn = ComputeGroupGeometry(MlaSpec(768), kTp16Dcp16, kMillion);
  ASSERT_TRUE(attn.ok());
  EXPECT_EQ(attn->placement(), Placement::kSharded);
  EXPECT_EQ(attn->dcp_shard_count(), 16);
  EXPECT_EQ(attn->manager_block_size(), 12288);
  EXPECT_EQ(attn->block_table_width(), 82);
  EXPECT_EQ(attn->max_pages_per_request(), 82);

  // The DCP-scaled recurrent row the engine used to build: 82 + 7 columns.
  const int64_t scaled_width = attn->block_table_width() + 7;
  EXPECT_EQ(scaled_width, 89);
  // Checkpoint boundary 82 (62,976 tokens) still fits the scaled row; boundary 83 does not.
  EXPECT_EQ(rec->ColumnsFor(82 * 768), 89);
  const int64_t checkpoint = 83 * 768;
  EXPECT_EQ(checkpoint, 63744);
  EXPECT_GT(rec->ColumnsFor(checkpoint), scaled_width);
  EXPECT_LE(rec->ColumnsFor(checkpoint), rec->block_table_width());
  // And the geometry's row addresses the last checkpoint of a full-length request.
  EXPECT_EQ(rec->ColumnsFor(1000000), rec->block_table_width());
}

// The block manager's per-step counts, for a power-of-two manager block (16 x 4 = 64, a shift)
// and for 768 x 16 = 12,288 (a divide), checked against plain division over a range.
TEST(GroupGeometry, BlockCountsForTheManager) {
  LayerSpec full = MlaSpec(16);
  auto pow2 = ComputeGroupGeometry(
      full, {.tensor_parallel_size = 4, .decode_context_parallel_size = 4}, kMillion);
  auto odd = ComputeGroupGeometry(MlaSpec(768), kTp16Dcp16, kMillion);
  ASSERT_TRUE(pow2.ok() && odd.ok());
  ASSERT_EQ(pow2->manager_block_size(), 64);
  EXPECT_EQ(pow2->BlocksCovering(0), 0);
  EXPECT_EQ(pow2->BlocksCovering(64), 1);
  EXPECT_EQ(pow2->BlocksCovering(65), 2);
  EXPECT_EQ(pow2->FullBlocksIn(127), 1);
  EXPECT_EQ(odd->BlocksCovering(1'000'000), 82);
  EXPECT_EQ(odd->FullBlocksIn(1'000'000), 81);
  for (int64_t n = 0; n < 30'000; n += 7) {
    for (const GroupGeometry* g : {&*pow2, &*odd}) {
      const int64_t m = g->manager_block_size();
      EXPECT_EQ(g->BlocksCovering(n), (n + m - 1) / m) << n;
      EXPECT_EQ(g->FullBlocksIn(n), n / m) << n;
    }
  }
  // No overflow at the top of the range.
  const int64_t top = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(pow2->BlocksCovering(top), top / 64 + 1);
  EXPECT_EQ(odd->BlocksCovering(top), top / 12288 + 1);
}

TEST(GroupGeometry, WindowHitBlocksAndChunkBoundaries) {
  LayerSpec swa{.name = "model.layers.0.self_attn",
                .kind = CacheKind::kSlidingWindow,
                .block_size = 16,
                .num_kv_heads = 8,
                .head_size = 64,
                .head_size_v = 64,
                .sliding_window = 128};
  auto g = ComputeGroupGeometry(swa, {}, kMillion);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->WindowHitBlocks(), 8);  // cdiv(127, 16)
  swa.sliding_window = 1;
  EXPECT_EQ(ComputeGroupGeometry(swa, {}, kMillion)->WindowHitBlocks(), 1);
  LayerSpec chunked = swa;
  chunked.kind = CacheKind::kChunkedLocal;
  chunked.sliding_window = 0;
  chunked.attention_chunk_size = 8192;
  auto c = ComputeGroupGeometry(chunked, {}, kMillion);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->FloorToChunk(8191), 0);
  EXPECT_EQ(c->FloorToChunk(16384), 16384);
  EXPECT_EQ(c->CeilToChunk(1), 8192);
  EXPECT_EQ(c->CeilToChunk(16384), 16384);
}

TEST(GroupGeometry, ReplicatedAndPartialPlacements) {
  LayerSpec draft = MlaSpec(64);
  draft.role = Role::kDraft;
  draft.dcp.replicated = true;
  auto g =
      ComputeGroupGeometry(draft, {.tensor_parallel_size = 4, .decode_context_parallel_size = 4},
                           {.max_model_len = 4096, .max_num_seqs = 8});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->placement(), Placement::kReplicated);
  EXPECT_EQ(g->manager_block_size(), 64);
  EXPECT_EQ(g->context_parallel_block_size(), 256);
  EXPECT_EQ(g->block_table_width(), 64);
  EXPECT_EQ(g->block_table_bytes_per_rank(), 64 * 4 * 8);

  LayerSpec indexer = MlaSpec(64);
  indexer.dcp.kv_shard_count = 2;
  g = ComputeGroupGeometry(indexer, {.tensor_parallel_size = 4, .decode_context_parallel_size = 4},
                           {.max_model_len = 4096, .max_num_seqs = 1});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->placement(), Placement::kPartial);
  EXPECT_EQ(g->dcp_shard_count(), 2);
  EXPECT_EQ(g->manager_block_size(), 128);
  EXPECT_EQ(g->required_columns(), 32);
  EXPECT_EQ(g->max_pages_per_request(), 32);
}

TEST(GroupGeometry, SmallBlocksAlignTo128TokensAndSplitIntoKernelBlocks) {
  LayerSpec s = MlaSpec(16);
  auto g = ComputeGroupGeometry(s, {}, {.max_model_len = 100, .max_num_seqs = 1});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->required_columns(), 7);
  EXPECT_EQ(g->manager_table_width(), 8);  // aligned to 128 / 16 = 8 columns
  EXPECT_EQ(g->block_table_width(), 8);

  s.block_size = 256;
  g = ComputeGroupGeometry(s, {},
                           {.max_model_len = 1000, .max_num_seqs = 1, .kernel_block_size = 64});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->manager_table_width(), 4);
  EXPECT_EQ(g->block_table_width(), 16);  // each manager block is 4 kernel blocks
}

TEST(GroupGeometry, RecurrentNoneModeUsesOnePlusS) {
  LayerSpec s = KdaSpec(1000000, 3);
  s.recurrent_mode = RecurrentMode::kNone;
  auto g = ComputeGroupGeometry(s, kTp16Dcp16, kMillion);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->block_table_width(), 4);
}

TEST(GroupGeometry, ValidationMessagesNameValueAndKnob) {
  auto msg = [](const LayerSpec& s, const ParallelConfig& p) {
    return ComputeGroupGeometry(s, p, kMillion).status().message();
  };
  EXPECT_EQ(msg(MlaSpec(768), {.tensor_parallel_size = 16, .decode_context_parallel_size = 0}),
            "--decode-context-parallel-size must be positive, got 0");
  EXPECT_EQ(msg(MlaSpec(768), {.tensor_parallel_size = 16, .decode_context_parallel_size = 3}),
            "--tensor-parallel-size 16 is not divisible by --decode-context-parallel-size 3; "
            "DCP splits each TP group, so choose a DCP size that divides the TP size");
  LayerSpec partial = MlaSpec(768);
  partial.dcp.kv_shard_count = 3;
  EXPECT_EQ(msg(partial, kTp16Dcp16),
            "layer 'model.layers.3.self_attn': KV shard count 3 must be a positive divisor of "
            "--decode-context-parallel-size 16");
  partial.dcp.kv_shard_count = -2;
  EXPECT_EQ(msg(partial, kTp16Dcp16),
            "layer 'model.layers.3.self_attn': KV shard count -2 must be a positive divisor of "
            "--decode-context-parallel-size 16");
  LayerSpec both = MlaSpec(768);
  both.dcp = {.replicated = true, .kv_shard_count = 4};
  EXPECT_EQ(msg(both, kTp16Dcp16),
            "layer 'model.layers.3.self_attn' is DCP-replicated but asks for 4 KV shards; a "
            "replicated cache has one shard, so drop the shard count or the replication");
  EXPECT_EQ(msg(MlaSpec(768), {.tensor_parallel_size = 16,
                               .decode_context_parallel_size = 16,
                               .dcp_kv_cache_interleave_size = 5}),
            "layer 'model.layers.3.self_attn': block size 768 is not a multiple of "
            "--dcp-kv-cache-interleave-size 5; change --block-size or choose an interleave that "
            "divides the block size");
  // The kernel block splits a block and, interleaved, holds whole runs of the interleave.
  const auto with_kernel = [](int64_t kernel, int64_t interleave) {
    return ComputeGroupGeometry(MlaSpec(768),
                                {.tensor_parallel_size = 16,
                                 .decode_context_parallel_size = 16,
                                 .dcp_kv_cache_interleave_size = interleave},
                                {.max_model_len = 1000000, .kernel_block_size = kernel})
        .status();
  };
  EXPECT_EQ(with_kernel(512, 1),
            Rejected("layer 'model.layers.3.self_attn': kernel block size 512 does not divide "
                     "--block-size 768; choose a block size that is a multiple of a kernel block "
                     "size the attention backend supports",
                     "kernel-block-size"));
  EXPECT_EQ(with_kernel(64, 128),
            Rejected("kernel block size 64 of layer 'model.layers.3.self_attn' is not a multiple "
                     "of --dcp-kv-cache-interleave-size 128; choose an interleave that divides "
                     "the kernel block",
                     "block-size-interleave"));
  EXPECT_TRUE(with_kernel(256, 128).ok());
  LayerSpec swa{.name = "draft.0",
                .role = Role::kDraft,
                .kind = CacheKind::kSlidingWindow,
                .block_size = 64,
                .num_kv_heads = 8,
                .head_size = 128,
                .head_size_v = 128,
                .sliding_window = 2048};
  EXPECT_EQ(msg(swa, kTp16Dcp16),
            "sliding_window layer 'draft.0' is DCP-sharded; DCP supports windowed KV only when "
            "it is replicated: replicate it or set --decode-context-parallel-size 1");
  swa.dcp.replicated = true;
  EXPECT_TRUE(ComputeGroupGeometry(swa, kTp16Dcp16, kMillion).ok());
  EXPECT_EQ(ComputeGroupGeometry(MlaSpec(768), kTp16Dcp16, {.max_model_len = 0}).status().message(),
            "--max-model-len must be positive, got 0");
}

// Every row any manager can build fits the geometry's width, and every shard count divides N.
TEST(GroupGeometry, PropertyWidthCoversLongestManagerRow) {
  std::mt19937_64 rng(20261129);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t kDcp[] = {1, 2, 4, 8, 16};
  for (int iter = 0; iter < 3000; ++iter) {
    const int64_t N = kDcp[pick(0, 4)];
    const int64_t L = pick(1, 2000000);
    const int64_t B = int64_t{16} << pick(0, 6);  // 16 .. 1024
    const int64_t S = pick(0, 8);
    const ParallelConfig p{.tensor_parallel_size = N * pick(1, 2),
                           .decode_context_parallel_size = N};
    const GeometryOptions opt{.max_model_len = L, .max_num_seqs = 4, .max_tokens_in_flight = 8192};
    LayerSpec attn = MlaSpec(B);
    const int kind = static_cast<int>(pick(0, 2));
    if (kind == 1) attn.dcp.replicated = true;
    if (kind == 2) {
      std::vector<int64_t> divisors;
      for (int64_t d = 1; d <= N; ++d) {
        if (N % d == 0) divisors.push_back(d);
      }
      attn.dcp.kv_shard_count = divisors[pick(0, static_cast<int64_t>(divisors.size()) - 1)];
    }
    auto ga = ComputeGroupGeometry(attn, p, opt);
    ASSERT_TRUE(ga.ok()) << ga.status().ToString();
    ASSERT_EQ(N % ga->dcp_shard_count(), 0);
    LayerSpec rec = KdaSpec(B, S);
    rec.recurrent_mode = static_cast<RecurrentMode>(pick(0, 2));
    auto gr = ComputeGroupGeometry(rec, p, opt);
    ASSERT_TRUE(gr.ok()) << gr.status().ToString();
    ASSERT_EQ(gr->dcp_shard_count(), 1);
    for (int probe = 0; probe < 8; ++probe) {
      const int64_t n = probe == 0 ? L : pick(1, L);
      const int64_t lookahead = pick(0, 8);
      // Attention manager row: cdiv(min(n + lookahead, L), manager block).
      const int64_t attn_row =
          (std::min(n + lookahead, L) + ga->manager_block_size() - 1) / ga->manager_block_size();
      ASSERT_LE(attn_row, ga->manager_table_width()) << "L=" << L << " B=" << B << " N=" << N;
      // Recurrent rows: align cdiv(n, B) + S; all cdiv(n + S*B, B); none 1 + S.
      int64_t rec_row = 0;
      switch (rec.recurrent_mode) {
        case RecurrentMode::kAlign:
          rec_row = (n + B - 1) / B + S;  // brute force: the last checkpoint's column + S
          break;
        case RecurrentMode::kAll:
          rec_row = (n + S * B + B - 1) / B;
          break;
        case RecurrentMode::kNone:
          rec_row = 1 + S;
          break;
      }
      ASSERT_LE(rec_row, gr->manager_table_width()) << "L=" << L << " B=" << B << " S=" << S;
    }
  }
}

// Static attention sinks (openPangu's SinkFullAttentionSpec): sink_len / B blocks taken from the
// pool at start, refused when B does not divide them and under context parallelism, where the
// engine's manager would reserve fewer blocks than its attention reads.
TEST(GroupGeometry, SinkBlocksAndTheirRules) {
  LayerSpec sink{.name = "model.layers.0.self_attn",
                 .block_size = 16,
                 .num_kv_heads = 4,
                 .head_size = 192,
                 .head_size_v = 128,
                 .sink_tokens = 128};
  const GeometryOptions options{.max_model_len = 4096};
  auto g = ComputeGroupGeometry(sink, {}, options);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((std::pair{g->sink_tokens(), g->sink_blocks()}), (std::pair<int64_t, int64_t>{128, 8}));
  EXPECT_EQ(g->max_pages_per_request(), 256);  // the sinks are the group's, not a request's
  sink.block_size = 128;
  EXPECT_EQ(ComputeGroupGeometry(sink, {}, options)->sink_blocks(), 1);
  sink.block_size = 48;
  EXPECT_EQ(ComputeGroupGeometry(sink, {}, options).status(),
            Rejected("layer 'model.layers.0.self_attn' keeps 128 static attention sink tokens, "
                     "which --block-size 48 does not divide: the engine's sink manager asserts "
                     "that whole blocks hold them; choose a block size that divides 128",
                     "sink-block-size"));
  sink.block_size = 16;
  EXPECT_EQ(ComputeGroupGeometry(
                sink, {.tensor_parallel_size = 8, .decode_context_parallel_size = 8}, options)
                .status(),
            Rejected("layer 'model.layers.0.self_attn' keeps 128 static attention sink tokens "
                     "under --decode-context-parallel-size 8 and --prefill-context-parallel-size "
                     "1: the engine's sink manager reserves sink tokens / (block size x 8) blocks "
                     "while its attention reads sink tokens / block size block ids, so requests' "
                     "blocks would overwrite the sink; set both to 1",
                     "sink-attention-context-parallel"));
  EXPECT_EQ(
      ComputeGroupGeometry(sink, {.prefill_context_parallel_size = 2}, options).status().rule(),
      "sink-attention-context-parallel");
  LayerSpec windowed = sink;
  windowed.kind = CacheKind::kSlidingWindow;
  windowed.sliding_window = 1024;
  EXPECT_EQ(ComputeGroupGeometry(windowed, {}, options).status(),
            InvalidArgument("layer 'model.layers.0.self_attn': static attention sinks (128 "
                            "tokens) belong to full attention layers, not sliding_window"));
  sink.sink_tokens = -16;
  EXPECT_EQ(ComputeGroupGeometry(sink, {}, options).status(),
            InvalidArgument("layer 'model.layers.0.self_attn': attention sink tokens must not be "
                            "negative, got -16"));
}

}  // namespace
}  // namespace kvtopo
