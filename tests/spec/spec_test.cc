#include "kvtopo/spec.h"

#include <gtest/gtest.h>

#include <limits>

#include "kvtopo/geometry.h"
#include "spec/state_shapes.h"

namespace kvtopo {
namespace {

LayerSpec Gqa(int64_t block, int64_t heads, int64_t head, KvCacheDtype dtype) {
  return LayerSpec{.name = "attn",
                   .kind = CacheKind::kFullAttention,
                   .block_size = block,
                   .num_kv_heads = heads,
                   .head_size = head,
                   .head_size_v = head,
                   .cache_dtype = dtype};
}

LayerSpec Mla(int64_t block, KvCacheDtype dtype) {
  return LayerSpec{.name = "mla",
                   .kind = CacheKind::kMla,
                   .block_size = block,
                   .num_kv_heads = 1,
                   .head_size = 576,
                   .cache_dtype = dtype,
                   .mla_rope_dim = 64};
}

TEST(PageSize, WorkedExamplesFromResearchNotes) {
  EXPECT_EQ(*PageSizeBytes(Gqa(16, 8, 128, KvCacheDtype::kBfloat16)), 65536);
  EXPECT_EQ(*PageSizeBytes(Mla(64, KvCacheDtype::kBfloat16)), 73728);
  EXPECT_EQ(*PageSizeBytes(Mla(64, KvCacheDtype::kFp8)), 36864);
  EXPECT_EQ(*PageSizeBytes(Mla(64, KvCacheDtype::kFp8DsMla)), 41984);  // 512 + 16 + 2 x 64
  EXPECT_EQ(*PageSizeBytes(Mla(1, KvCacheDtype::kNvfp4DsMla)), 432);   // 256 + 32 + 16 + 128
  // A NoPE 512 latent (GLM-5.3-Flash): 512 fp8 + 16 B of scales = the 528 B B12X record, and a
  // 33 B/token page tail (the pooled indexer key) after the rows.
  LayerSpec nope = Mla(1, KvCacheDtype::kFp8DsMla);
  nope.head_size = 512;
  nope.mla_rope_dim = 0;
  nope.page_tail_bytes_per_token = 33;
  EXPECT_EQ(*AttentionRecordBytesPerToken(nope), 528);
  nope.block_size = 2304;
  EXPECT_EQ(*PageSizeBytes(nope), 2304 * 561);
}

TEST(PageSize, AutoResolvesToModelDtype) {
  LayerSpec s = Gqa(16, 8, 128, KvCacheDtype::kAuto);
  s.model_dtype = ElementType::kFloat32;
  EXPECT_EQ(*PageSizeBytes(s), 131072);
}

TEST(PageSize, KAndVHeadSizesMayDiffer) {
  LayerSpec s = Gqa(16, 2, 192, KvCacheDtype::kBfloat16);
  s.head_size_v = 128;
  EXPECT_EQ(*PageSizeBytes(s), 16 * 2 * (192 + 128) * 2);
}

TEST(PageSize, Nvfp4PacksDataAndScales) {
  // fd(128) = 64 + 8 = 72 bytes per head for K and for V.
  EXPECT_EQ(*PageSizeBytes(Gqa(16, 8, 128, KvCacheDtype::kNvfp4)), 16 * 8 * 144);
  // MLA latent: fd(576) = 288 + 36.
  EXPECT_EQ(*PageSizeBytes(Mla(64, KvCacheDtype::kNvfp4)), 64 * 324);
}

TEST(PageSize, PerTokenHeadScalesAddEightBytesPerTokenHead) {
  EXPECT_EQ(*PageSizeBytes(Gqa(16, 8, 128, KvCacheDtype::kFp8PerTokenHead)),
            16 * 8 * 256 + 2 * 16 * 8 * 4);
  EXPECT_EQ(*PageSizeBytes(Gqa(16, 4, 64, KvCacheDtype::kInt8PerTokenHead)),
            16 * 4 * 128 + 2 * 16 * 4 * 4);
}

TEST(PageSize, PaddingReplacesButNeverShrinks) {
  LayerSpec s = Mla(64, KvCacheDtype::kFp8);
  s.page_size_padded = 40000;
  EXPECT_EQ(*PageSizeBytes(s), 40000);
  EXPECT_EQ(*RealPageSizeBytes(s), 36864);
  s.page_size_padded = 100;
  EXPECT_EQ(PageSizeBytes(s).status().code(), StatusCode::kInternal);
}

TEST(PageSize, RejectsNonPositiveAndOverflow) {
  LayerSpec s = Gqa(0, 8, 128, KvCacheDtype::kBfloat16);
  EXPECT_EQ(PageSizeBytes(s).status().message(),
            "layer 'attn': block size must be positive, got 0");
  s = Gqa(int64_t{1} << 40, int64_t{1} << 20, 128, KvCacheDtype::kBfloat16);
  EXPECT_EQ(PageSizeBytes(s).status().code(), StatusCode::kOutOfRange);
}

// The engine's parser takes its CacheDType names exactly as written (config/cache.py at
// 28be48fa9): no aliases, no float32 (an auto cache of a float32 model is one), no upper case.
TEST(Dtype, EngineNamesExactly) {
  EXPECT_EQ(*ParseEngineKvCacheDtype("fp8_e5m2", "--kv-cache-dtype"), KvCacheDtype::kFp8E5m2);
  EXPECT_EQ(*ParseEngineKvCacheDtype("int8_per_token_head", "--kv-cache-dtype"),
            KvCacheDtype::kInt8PerTokenHead);
  const std::string accepted =
      "accepted: auto, bfloat16, float16, fp8, fp8_ds_mla, fp8_e4m3, fp8_e5m2, fp8_inc, "
      "fp8_per_token_head, int8_per_token_head, nvfp4, nvfp4_ds_mla, turboquant_3bit_nc, "
      "turboquant_4bit_nc, turboquant_k3v4_nc, turboquant_k8v4";
  Result<KvCacheDtype> bad = ParseEngineKvCacheDtype("bf16", "--kv-cache-dtype");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "--kv-cache-dtype 'bf16' is not one of the engine's cache dtypes, which its parser "
            "takes exactly as written (write 'bfloat16'); " +
                accepted);
  EXPECT_EQ(ParseEngineKvCacheDtype("FP8", "draft_kv_cache_dtype").status().message(),
            "draft_kv_cache_dtype 'FP8' is not one of the engine's cache dtypes, which its "
            "parser takes exactly as written (write 'fp8'); " +
                accepted);
  EXPECT_EQ(ParseEngineKvCacheDtype("float32", "--kv-cache-dtype").status().message(),
            "--kv-cache-dtype 'float32' is not one of the engine's cache dtypes, which its "
            "parser takes exactly as written (a float32 cache is auto with --dtype float32); " +
                accepted);
  EXPECT_EQ(ParseEngineKvCacheDtype("fp4", "--kv-cache-dtype").status().message(),
            "--kv-cache-dtype 'fp4' is not one of the engine's cache dtypes, which its parser "
            "takes exactly as written; " +
                accepted);
}

TEST(Dtype, ParseListsAcceptedNames) {
  EXPECT_EQ(*ParseKvCacheDtype("FP8"), KvCacheDtype::kFp8);
  EXPECT_EQ(*ParseKvCacheDtype("fp8_ds_mla"), KvCacheDtype::kFp8DsMla);
  auto bad = ParseKvCacheDtype("fp4");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "unknown --kv-cache-dtype 'fp4'; accepted: auto, float32, bfloat16, float16, fp8, "
            "fp8_e4m3, fp8_e5m2, fp8_inc, fp8_ds_mla, nvfp4_ds_mla, fp8_per_token_head, "
            "int8_per_token_head, nvfp4, turboquant_k8v4, turboquant_4bit_nc, "
            "turboquant_k3v4_nc, turboquant_3bit_nc");
  EXPECT_EQ(ElementBytes(StorageElement(KvCacheDtype::kFp8E5m2, ElementType::kBfloat16)), 1);
  EXPECT_EQ(ElementBytes(StorageElement(KvCacheDtype::kAuto, ElementType::kFloat16)), 2);
}

// research/fork_and_models.md C.3: Qwen3-Next-80B GDN state (conv_dim 8192), bf16.
TEST(StateShapes, GdnQwen3NextTable) {
  const GdnDims dims{
      .num_k_heads = 16, .num_v_heads = 32, .head_k_dim = 128, .head_v_dim = 128, .conv_kernel = 4};
  struct Row {
    int64_t tp, spec, conv, ssm;
  };
  for (const Row& r :
       {Row{1, 0, 49152, 1048576}, Row{1, 3, 98304, 1048576}, Row{2, 0, 24576, 524288},
        Row{4, 0, 12288, 262144}, Row{8, 0, 6144, 131072}}) {
    auto state = GdnState(dims, r.tp, r.spec, ElementType::kBfloat16, ElementType::kBfloat16);
    ASSERT_TRUE(state.ok());
    ASSERT_EQ(state->size(), 2u);
    EXPECT_EQ(*StateBytes({(*state)[0]}), r.conv) << "tp " << r.tp;
    EXPECT_EQ(*StateBytes({(*state)[1]}), r.ssm) << "tp " << r.tp;
    EXPECT_EQ(*StateBytes(*state), r.conv + r.ssm);
  }
  auto fp32 = GdnState(dims, 1, 0, ElementType::kBfloat16, ElementType::kFloat32);
  EXPECT_EQ(*StateBytes(*fp32), 2146304);
  EXPECT_EQ((*GdnState(dims, 1, 0, ElementType::kBfloat16, ElementType::kBfloat16))[0].shape,
            (std::vector<int64_t>{3, 8192}));
}

TEST(StateShapes, GdnRejectsTpThatDoesNotDivide) {
  const GdnDims dims{
      .num_k_heads = 16, .num_v_heads = 32, .head_k_dim = 128, .head_v_dim = 128, .conv_kernel = 4};
  auto bad = GdnState(dims, 3, 0, ElementType::kBfloat16, ElementType::kBfloat16);
  EXPECT_EQ(bad.status().message(),
            "GDN state: conv dim = 8192 is not divisible by --tensor-parallel-size 3; choose a "
            "tensor-parallel size that divides it");
}

TEST(StateShapes, KdaKimiLinearAndKimiK3) {
  auto linear =
      KdaState({.num_heads = 32, .head_dim = 128, .conv_kernel = 4}, 1, ElementType::kBfloat16);
  EXPECT_EQ(*StateBytes(*linear), 2170880);
  auto k3 =
      KdaState({.num_heads = 96, .head_dim = 128, .conv_kernel = 4}, 16, ElementType::kBfloat16);
  EXPECT_EQ(*StateBytes(*k3), 407040);
  EXPECT_EQ((*k3)[3].shape, (std::vector<int64_t>{6, 128, 128}));
  EXPECT_EQ((*k3)[3].dtype, ElementType::kFloat32);
}

TEST(StateShapes, Mamba2PadsGroupsToTp) {
  const Mamba2Dims dims{.intermediate_size = 4096,
                        .n_groups = 1,
                        .state_size = 128,
                        .num_heads = 64,
                        .head_dim = 64,
                        .conv_kernel = 4};
  auto s = Mamba2State(dims, 2, 2, ElementType::kBfloat16, ElementType::kFloat32);
  ASSERT_TRUE(s.ok());
  // G' = 1 + (2 - 1) = 2: conv dim (4096 + 2*2*128) / 2 = 2304, width 3 + 2; the engine's
  // default layout (SD) puts the width first.
  EXPECT_EQ((*s)[0].shape, (std::vector<int64_t>{5, 2304}));
  EXPECT_EQ((*s)[1].shape, (std::vector<int64_t>{32, 64, 128}));
  EXPECT_EQ(*StateBytes(*s), 2304 * 5 * 2 + 32 * 64 * 128 * 4);
  // VLLM_SSM_CONV_STATE_LAYOUT=DS: channels first, the same bytes; the SSM state is not a conv
  // state and keeps its order.
  auto ds = Mamba2State(dims, 2, 2, ElementType::kBfloat16, ElementType::kFloat32,
                        ConvStateLayout::kChannelsFirst);
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ((*ds)[0].shape, (std::vector<int64_t>{2304, 5}));
  EXPECT_EQ((*ds)[1].shape, (std::vector<int64_t>{32, 64, 128}));
  EXPECT_EQ(*StateBytes(*ds), *StateBytes(*s));
}

// Every conv state in the engine's two layouts: (state_len, channels) by default, swapped under
// DS; Mamba1's SSM state (channels, state) and KDA's recurrent state stay as they are.
TEST(StateShapes, ConvStateLayouts) {
  using V = std::vector<int64_t>;
  constexpr ElementType kBf16 = ElementType::kBfloat16;
  constexpr ConvStateLayout kDs = ConvStateLayout::kChannelsFirst;
  const Mamba1Dims m1{.intermediate_size = 8192, .state_size = 16, .conv_kernel = 4};
  EXPECT_EQ((*Mamba1State(m1, 2, kBf16, kBf16))[0].shape, (V{3, 4096}));
  EXPECT_EQ((*Mamba1State(m1, 2, kBf16, kBf16, kDs))[0].shape, (V{4096, 3}));
  EXPECT_EQ((*Mamba1State(m1, 2, kBf16, kBf16, kDs))[1].shape, (V{4096, 16}));
  const ShortConvDims sc{.channels = 1024, .conv_kernel = 3};
  EXPECT_EQ((*ShortConvState(sc, 4, kBf16))[0].shape, (V{2, 256}));
  EXPECT_EQ((*ShortConvState(sc, 4, kBf16, kDs))[0].shape, (V{256, 2}));
  const GdnDims gdn{
      .num_k_heads = 16, .num_v_heads = 32, .head_k_dim = 128, .head_v_dim = 128, .conv_kernel = 4};
  // conv dim 2*128*16 + 128*32 = 8192 over TP 4, width 3 + 2 speculative tokens.
  EXPECT_EQ((*GdnState(gdn, 4, 2, kBf16, kBf16, kDs))[0].shape, (V{2048, 5}));
  EXPECT_EQ((*GdnState(gdn, 4, 2, kBf16, kBf16, kDs))[1].shape, (V{8, 128, 128}));
  const KdaDims kda{.num_heads = 32, .head_dim = 128, .conv_kernel = 4};
  const std::vector<StateTensor> k = *KdaState(kda, 2, kBf16, kDs);
  ASSERT_EQ(k.size(), 4u);
  EXPECT_EQ(k[0].shape, (V{2048, 3}));
  EXPECT_EQ(k[2].shape, (V{2048, 3}));
  EXPECT_EQ(k[3].shape, (V{16, 128, 128}));
}

// Pages one request holds (the geometry's PagesForLength at L) for `spec` under DCP `dcp` with
// `in_flight` tokens in flight.
GroupGeometry Geometry(const LayerSpec& spec, int64_t dcp, int64_t max_len, int64_t in_flight) {
  auto g = ComputeGroupGeometry(
      spec, {.tensor_parallel_size = dcp, .decode_context_parallel_size = dcp},
      {.max_model_len = max_len, .max_num_seqs = 1, .max_tokens_in_flight = in_flight});
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : GroupGeometry{};
}

TEST(MemoryPerRequest, FormulasPerKind) {
  LayerSpec mla = Mla(768, KvCacheDtype::kFp8);
  const GroupGeometry sharded = Geometry(mla, 16, 1000000, 8192);
  EXPECT_EQ(sharded.max_pages_per_request(), 82);  // cdiv(62,500, 768)
  EXPECT_EQ(sharded.memory_per_request_bytes(), 82 * 768 * 576);

  LayerSpec swa = Gqa(16, 8, 128, KvCacheDtype::kBfloat16);
  swa.kind = CacheKind::kSlidingWindow;
  swa.sliding_window = 4096;
  EXPECT_EQ(Geometry(swa, 1, 32768, 2048).max_pages_per_request(), (4095 + 2048 + 15) / 16 + 1);
  swa.extra_retained_tokens = 4096;
  EXPECT_EQ(Geometry(swa, 1, 32768, 2048).max_pages_per_request(),
            (4095 + 4096 + 2048 + 15) / 16 + 1);
  EXPECT_EQ(Geometry(swa, 1, 1000, 2048).max_pages_per_request(), 63 + 1);  // min(..., L) = 1000

  LayerSpec chunk = Gqa(16, 8, 128, KvCacheDtype::kBfloat16);
  chunk.kind = CacheKind::kChunkedLocal;
  chunk.attention_chunk_size = 8192;
  EXPECT_EQ(Geometry(chunk, 1, 32768, 2048).max_pages_per_request(), (8192 + 2048) / 16);

  LayerSpec rec{.name = "kda",
                .kind = CacheKind::kRecurrent,
                .block_size = 768,
                .state = {{{6, 128, 128}, ElementType::kFloat32}},
                .num_speculative_blocks = 7};
  rec.recurrent_mode = RecurrentMode::kNone;
  EXPECT_EQ(Geometry(rec, 16, 1000000, 8192).max_pages_per_request(), 8);
  rec.recurrent_mode = RecurrentMode::kAlign;
  EXPECT_EQ(Geometry(rec, 16, 1000000, 8192).max_pages_per_request(), 9);
  EXPECT_EQ(Geometry(rec, 16, 1000000, 8192).memory_per_request_bytes(), 9 * 393216);
  rec.recurrent_mode = RecurrentMode::kAll;
  EXPECT_EQ(Geometry(rec, 16, 1000000, 8192).max_pages_per_request(), 1303 + 7);
  // A shorter length asks the same geometry.
  EXPECT_EQ(sharded.PagesForLength(12288), 1);
  EXPECT_EQ(sharded.PagesForLength(12289), 2);
}

}  // namespace
}  // namespace kvtopo

namespace kvtopo {
namespace {

TEST(MemoryPerRequest, WindowSpanSaturatesAtTheModelLength) {
  LayerSpec swa{.name = "swa",
                .kind = CacheKind::kSlidingWindow,
                .block_size = 16,
                .num_kv_heads = 8,
                .head_size = 128,
                .head_size_v = 128,
                .sliding_window = 4096};
  const int64_t huge = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(Geometry(swa, 1, 32768, huge).max_pages_per_request(), 32768 / 16 + 1);
  swa.kind = CacheKind::kChunkedLocal;
  swa.attention_chunk_size = 8192;
  EXPECT_EQ(Geometry(swa, 1, 32768, huge).max_pages_per_request(), 32768 / 16);
}

}  // namespace
}  // namespace kvtopo

namespace kvtopo {
namespace {

// K and V head sizes are summed before the product: the sum itself is checked (it once wrapped
// to -2^63 and showed up as an operand of the product's overflow message).
TEST(PageSize, OverflowingHeadSizesAreAnErrorNamingTheLayer) {
  const LayerSpec huge = Gqa(16, 1, int64_t{1} << 62, KvCacheDtype::kBfloat16);
  const Result<int64_t> page = PageSizeBytes(huge);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(page.status().message(),
            "page size of layer 'attn' overflows 64 bits (4611686018427387904 + "
            "4611686018427387904)");
}

}  // namespace
}  // namespace kvtopo
