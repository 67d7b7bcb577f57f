// Layer tuples: the engine's DeepSeek-V4 grouping and pool (group_and_unify_kv_cache_specs,
// _get_kv_cache_groups_uniform_groups and _get_kv_cache_config_deepseek_v4 in
// vllm/v1/core/kv_cache_utils.py at 28be48fa9), planned from the layer specs DeepSeek-V4-Flash's
// layers register (43 layers, compress_ratios [0, 0] + [4, 128] x 20 + [4]).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kvtopo/plan.h"

namespace kvtopo {
namespace {

// A DeepSeek-V4 cache: rows of `row` bytes, `block / ratio` of them a page, pages a multiple of
// 576 B (every V4 spec's alignment).
LayerSpec V4(std::string name, CacheKind kind, int64_t block, int64_t ratio, int64_t row,
             int64_t window = 0) {
  return LayerSpec{.name = std::move(name),
                   .kind = kind,
                   .block_size = block,
                   .num_kv_heads = 1,
                   .head_size = 512,
                   .cache_dtype = KvCacheDtype::kFp8DsMla,
                   .sliding_window = window,
                   .compress_ratio = ratio,
                   .row_bytes = row,
                   .page_alignment = 576,
                   .layer_tuples = true};
}

// Each layer's caches in the order the engine registers them: the indexer's key and compressor
// state (ratio 4), the sliding-window cache, the compressed MLA cache and its compressor state
// (ratio 4 or 128); `mtp` more layers keep the sliding-window cache alone.
std::vector<LayerSpec> Flash(int64_t block, int mtp = 0) {
  std::vector<LayerSpec> out;
  for (int i = 0; i < 43 + mtp; ++i) {
    const int ratio = i >= 43 || i < 2 ? 1 : (i % 2 == 0 ? 4 : 128);
    const std::string attn = "model.layers." + std::to_string(i) + ".attn";
    if (ratio == 4) {
      out.push_back(V4(attn + ".indexer.k_cache", CacheKind::kMla, block, 4, 132));
      out.push_back(V4(attn + ".indexer.compressor.state_cache", CacheKind::kSlidingWindowMla, 4, 1,
                       2 * 2 * 128 * 4, 8));
    }
    out.push_back(V4(attn + ".swa_cache", CacheKind::kSlidingWindowMla, 64, 1, 584, 128));
    if (ratio > 1) {
      out.push_back(V4(attn, CacheKind::kMla, block, ratio, 584));
      out.push_back(V4(attn + ".compressor.state_cache", CacheKind::kSlidingWindowMla,
                       ratio == 4 ? 4 : 8, 1, 2 * (ratio == 4 ? 2 : 1) * 512 * 4,
                       ratio == 4 ? 8 : 128));
    }
  }
  return out;
}

PlanInputs Inputs(int64_t memory, bool async = true) {
  PlanInputs in;
  in.parallel = {.tensor_parallel_size = 2};
  in.cache.max_num_seqs = 2;
  in.cache.max_num_batched_tokens = 8192;
  in.cache.async_scheduling = async;
  in.kv_cache_memory_bytes = memory;
  return in;
}

ModelCacheSpecs Specs(std::vector<LayerSpec> layers, int64_t max_len) {
  ModelCacheSpecs m;
  m.model_name = "deepseek-v4-flash-shaped";
  m.max_model_len = max_len;
  m.layers = std::move(layers);
  return m;
}

TEST(LayerTuples, PagesAlignAndCompress) {
  const std::vector<LayerSpec> flash = Flash(256);
  std::vector<int64_t> pages;
  for (size_t i : {0u, 1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u}) {
    pages.push_back(*PageSizeBytes(flash[i]));
  }
  // swa 0, swa 1, then layer 2 (ratio 4): indexer key, indexer state, swa, attn, state; layer 3
  // (ratio 128): swa, attn.
  EXPECT_EQ(pages,
            (std::vector<int64_t>{37440, 37440, 8640, 8640, 37440, 37440, 32832, 37440, 1728}));
  EXPECT_EQ(*RealPageSizeBytes(flash[8]), 2 * 584);
  LayerSpec odd = flash[8];
  odd.block_size = 64;  // not a multiple of the ratio
  EXPECT_EQ(RealPageSizeBytes(odd).status().message(),
            "layer 'model.layers.3.attn': block size 64 must be a multiple of its compress "
            "ratio 128");
}

TEST(LayerTuples, FlashGroupsPoolAndCapacity) {
  Result<Plan> plan = PlanFromSpecs(Specs(Flash(256), 30000), Inputs(int64_t{10} << 30));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  // The full group (62 layers), the sliding-window caches split into 22 + 21 tuples, the ratio-4
  // compressor states (21 tuples of two), the ratio-128 states.
  std::vector<size_t> sizes;
  std::vector<int64_t> blocks;
  for (const PlannedGroup& g : plan->groups) {
    sizes.push_back(g.layers.size());
    blocks.push_back(g.spec.block_size);
    EXPECT_TRUE(g.uniform_type);
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{62, 22, 21, 42, 20}));
  EXPECT_EQ(blocks, (std::vector<int64_t>{256, 64, 64, 4, 8}));
  EXPECT_EQ(plan->groups[0].layers[0], "model.layers.2.attn.indexer.k_cache");
  EXPECT_EQ(plan->groups[1].layers[1], "model.layers.2.attn.swa_cache");
  EXPECT_EQ(plan->groups[2].layers[0], "model.layers.1.attn.swa_cache");
  // The compressor states are padded to the full group's 37,440 B page; the indexer's stay.
  EXPECT_EQ(plan->groups[3].layer_page_bytes[0], 8640);
  EXPECT_EQ(plan->groups[3].layer_page_bytes[1], 37440);
  EXPECT_EQ(plan->groups[3].layer_natural_page_bytes[1], 32768);
  // 22 tuples of 1,728 + 8,640 + 37,440 B.
  EXPECT_EQ(plan->pool.layer_tuples, 22);
  EXPECT_EQ(plan->pool.tuple_page_bytes, (std::vector<int64_t>{1728, 8640, 37440}));
  EXPECT_EQ(plan->pool.bytes_per_block, 1051776);
  EXPECT_EQ(plan->pool.num_blocks, 10208);
  // Tuple t's slot of a page size: layer 2's attn is the first 37,440 B page of the full group,
  // layer 4's indexer key the second 8,640 B one.
  EXPECT_EQ(plan->pool.regions[0].offsets_bytes[1], 1728 + 8640);
  EXPECT_EQ(plan->pool.regions[0].offsets_bytes[3], 47808 + 1728);
  // The engine's figures for this layout (its own code run on these specs): 118 + 2 x 259 +
  // 4,099 + 2,065 pages a 30,000-token request with 16,384 tokens in flight, 7,152,076,800 B;
  // its log divides by the full group's 1,002,240 B: 50,743 tokens, 1.69x.
  EXPECT_EQ(plan->capacity.blocks_per_request, 6800);
  EXPECT_EQ(plan->capacity.max_tokens, 50743);
  EXPECT_NEAR(plan->capacity.max_concurrency, 1.69, 0.005);
  EXPECT_EQ(plan->scheduler_block_size, 256);
  EXPECT_EQ(plan->hash_block_size, 4);
}

// vllm-project/vllm#44376: DeepSeek-V4-Flash at 30,000 tokens, block 256, fp8, needs 6.66 GiB
// and fits 13,528 tokens in the 5.44 GiB its GPUs held.
TEST(LayerTuples, FlashMemoryCheckAsTheEngineReportsIt) {
  Result<Plan> plan = PlanFromSpecs(Specs(Flash(256), 30000), Inputs(5841563904));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->max_model_len_that_fits, 13528);
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [kv-cache-memory] one request of --max-model-len 30000 needs 7152076800 B "
            "of KV cache per rank, more than the 5841563904 B the pool holds; the largest "
            "--max-model-len that fits is 13528; raise --kv-cache-memory or lower "
            "--max-model-len");
}

TEST(LayerTuples, MtpLayerAndLongerContext) {
  Result<Plan> plan = PlanFromSpecs(Specs(Flash(256), 131072), Inputs(int64_t{40} << 30));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 832528);
  // One MTP layer fills the 22nd tuple of the second sliding-window group: the pool is the same,
  // the engine's log counts its page.
  plan = PlanFromSpecs(Specs(Flash(256, 1), 131072), Inputs(int64_t{40} << 30));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[2].layers.size(), 22u);
  EXPECT_EQ(plan->pool.bytes_per_block, 1051776);
  EXPECT_EQ(plan->pool.num_blocks, 40835);
  EXPECT_EQ(plan->capacity.max_tokens, 831235);
}

// A block whose sliding-window pages outgrow every full page trips the engine's assertion.
TEST(LayerTuples, SlidingPageAboveTheFullPagesIsRefused) {
  Result<Plan> plan = PlanFromSpecs(Specs(Flash(128), 30000), Inputs(int64_t{10} << 30));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [layer-tuples] sliding-window layer 'model.layers.0.attn.swa_cache' has a "
            "37440 B page, larger than every page of the full group (the largest 19008 B, at "
            "block 128): the engine's grouping asserts it fits one of them as the model's KV "
            "cache is laid out; change --block-size");
}

}  // namespace
}  // namespace kvtopo
