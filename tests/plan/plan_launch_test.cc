// Planning real launches: embedded profiles through the model layer and the backend registry.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

LaunchConfig Launch(std::string model, int64_t tp, int64_t dcp) {
  LaunchConfig c;
  c.model = std::move(model);
  c.parallel.tensor_parallel_size = tp;
  c.parallel.decode_context_parallel_size = dcp;
  return c;
}

// The GLM-5.3-Flash production launch of seed #519/#520: TP4/DCP4, interleave 4, fp8 target KV,
// DFlash2 draft with 7 tokens, 12 GiB, 1,048,576 max length, 32 seqs, 8,192 batched tokens,
// async scheduling. The fork's runtime reports 906 blocks and 5,974,904 tokens, and 5,688,681
// for the unpromoted 1,152-token draft block.
LaunchConfig Glm53Production() {
  LaunchConfig c = Launch("glm-5.3-flash", 4, 4);
  c.parallel.dcp_kv_cache_interleave_size = 4;
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  c.cache.max_model_len = 1'048'576;
  c.cache.max_num_seqs = 32;
  c.cache.max_num_batched_tokens = 8192;
  c.cache.async_scheduling = true;
  c.cache.enable_prefix_caching = true;  // the run cached prefixes (align-mode page counts)
  c.kv_cache_memory_bytes = 12 * kGiB;
  c.speculative = *ParseSpeculativeConfig(
      R"({"method":"dflash","model":"glm-5.3-flash-dflash2","num_speculative_tokens":7})");
  return c;
}

TEST(PlanLaunch, Glm53FlashProductionMatchesTheEngine) {
  auto plan = PlanLaunch(Glm53Production());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->diagnostics.front().message;
  // KDA groups of 9, 9, 8, 8 (34 layers, group size 11 = the MLA bucket), the MLA group of 11,
  // then the replicated draft: effective CP (4, 4, 4, 4, 4, 1) in the engine's log.
  ASSERT_EQ(plan->groups.size(), 6u);
  const std::vector<size_t> sizes = {9, 9, 8, 8, 11, 5};
  for (size_t g = 0; g < 6; ++g) {
    EXPECT_EQ(plan->groups[g].layers.size(), sizes[g]) << g;
    EXPECT_EQ(plan->groups[g].geometry.block_size(), 2304) << g;  // block_sizes=(2304, ...)
  }
  for (size_t g = 0; g < 4; ++g) {
    EXPECT_EQ(plan->groups[g].geometry.kind(), CacheKind::kRecurrent);
    // 16 x 128 x 128 fp32 + 3 x 2048 x 3 bf16, padded to the MLA page.
    EXPECT_EQ(plan->groups[g].natural_page_size_bytes, 1'085'440);
    EXPECT_EQ(plan->groups[g].geometry.page_size_bytes(), 1'292'544);
    EXPECT_EQ(plan->groups[g].geometry.max_pages_per_request(), 9);  // 2 + S
  }
  const PlannedGroup& mla = plan->groups[4];
  EXPECT_EQ(mla.geometry.placement(), Placement::kSharded);
  EXPECT_EQ(mla.geometry.page_size_bytes(), 2304 * 561);  // 528 B record + 33 B tail per token
  EXPECT_EQ(mla.geometry.manager_block_size(), 9216);
  EXPECT_EQ(mla.geometry.max_pages_per_request(), 114);  // cdiv(cdiv(1048576, 4), 2304)
  const PlannedGroup& draft = plan->groups[5];
  EXPECT_EQ(draft.role, Role::kDraft);
  EXPECT_EQ(draft.geometry.placement(), Placement::kReplicated);
  EXPECT_EQ(draft.geometry.page_size_bytes(), 2304 * 1024);
  // cdiv(min(2048 - 1 + 2 x 8192, L), 2304) + 1 under async scheduling.
  EXPECT_EQ(draft.geometry.max_pages_per_request(), 9);
  EXPECT_EQ(plan->pool.bytes_per_block, 11 * 1'292'544);  // the MLA group is the largest
  EXPECT_EQ(plan->pool.num_blocks, 906);
  EXPECT_EQ(plan->capacity.blocks_per_request, 159);
  EXPECT_EQ(plan->capacity.max_tokens, 5'974'904);
  EXPECT_EQ(plan->scheduler_block_size, 9216);
  EXPECT_EQ(plan->hash_block_size, 2304);
  const Promotion& pr = plan->promotion;
  EXPECT_TRUE(pr.applied) << pr.reason;
  EXPECT_EQ(pr.block_size_before, 1152);  // FLASH_ATTN's block under the target page
  EXPECT_EQ(pr.block_size_after, 2304);
  EXPECT_EQ(pr.max_tokens_before, 5'688'681);  // 167 pages per request with 1,152-token pages
  EXPECT_EQ(pr.max_tokens_after, 5'974'904);
  EXPECT_EQ(pr.bytes_per_block_before, pr.bytes_per_block_after);
}

// Without async scheduling one batch is in flight: the window needs fewer pages.
TEST(PlanLaunch, AsyncSchedulingDoublesTheTokensAWindowHolds) {
  LaunchConfig c = Glm53Production();
  c.cache.async_scheduling = false;
  auto plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok());
  // cdiv(2047 + 8192, 2304) + 1 = 6.
  EXPECT_EQ(plan->groups[5].geometry.max_pages_per_request(), 6);
  EXPECT_EQ(plan->capacity.blocks_per_request, 114 + 4 * 9 + 6);
}

// The Kimi-K3 TP16/DCP16 DSpark production launch (seed #418): VLLM_K3_KV_GROUP_SIZE=6,
// VLLM_DSPARK_DRAFT_KV_WINDOW=32768, 1,000,000 tokens, 1,024 batched tokens, fp8, async,
// --kv-cache-memory-bytes 1325000000: 17 groups, 499 pages, 1,033,126 tokens.
TEST(PlanLaunch, KimiK3ProductionMatchesTheEngine) {
  LaunchConfig c = Launch("kimi-k3", 16, 16);
  c.cache.max_model_len = 1'000'000;
  c.cache.max_num_batched_tokens = 1024;
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  c.cache.async_scheduling = true;
  c.cache.kv_group_size = 6;
  c.cache.enable_prefix_caching = true;  // the run cached prefixes (align-mode page counts)
  c.dspark_draft_kv_window = 32768;
  c.kv_cache_memory_bytes = 1'325'000'000;
  c.speculative = *ParseSpeculativeConfig(
      R"({"method":"dspark","model":"kimi-k3-dspark","num_speculative_tokens":7})");
  auto plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->diagnostics.front().message;
  ASSERT_EQ(plan->groups.size(), 17u);
  // 69 KDA layers in 12 groups (9 of 6, 3 of 5), 24 MLA layers in 4 groups of 6, the draft.
  for (size_t g = 0; g < 12; ++g) {
    EXPECT_EQ(plan->groups[g].geometry.kind(), CacheKind::kRecurrent);
    EXPECT_EQ(plan->groups[g].layers.size(), g < 9 ? 6u : 5u);
    EXPECT_EQ(plan->groups[g].geometry.block_table_width(), 1310);
  }
  for (size_t g = 12; g < 16; ++g) {
    EXPECT_EQ(plan->groups[g].geometry.kind(), CacheKind::kMla);
    EXPECT_EQ(plan->groups[g].layers.size(), 6u);
    EXPECT_EQ(plan->groups[g].geometry.block_size(), 768);  // 256 x cdiv(407040, 256 x 576)
    EXPECT_EQ(plan->groups[g].geometry.max_pages_per_request(), 82);
  }
  const PlannedGroup& draft = plan->groups[16];
  EXPECT_EQ(draft.geometry.kind(), CacheKind::kSlidingWindowMla);
  EXPECT_EQ(draft.geometry.placement(), Placement::kReplicated);
  EXPECT_EQ(draft.geometry.block_size(), 768);
  EXPECT_EQ(draft.geometry.max_pages_per_request(), 47);  // cdiv(32767 + 2 x 1024, 768) + 1
  EXPECT_EQ(plan->pool.bytes_per_block, 6 * 442'368);
  EXPECT_EQ(plan->pool.num_blocks, 499);
  EXPECT_EQ(plan->capacity.blocks_per_request, 12 * 9 + 4 * 82 + 47);  // 483
  EXPECT_EQ(plan->capacity.max_tokens, 1'033'126);
  EXPECT_FALSE(plan->promotion.applied);  // the draft block already is the target's
  // The default launch is this production launch.
  auto by_default = PlanLaunch(DefaultLaunchConfig());
  ASSERT_TRUE(by_default.ok());
  EXPECT_EQ(by_default->groups.size(), 17u);
  EXPECT_EQ(by_default->pool.num_blocks, 499);
  EXPECT_EQ(by_default->capacity.max_tokens, 1'033'126);
  EXPECT_FALSE(by_default->kv_cache_memory_is_default);
}

// Without the group-size override the min-bucket rule groups the same launch: group size
// min(24, 69) = 24 -> one MLA group and cdiv(69, 24) = 3 KDA groups of 23, plus the draft.
TEST(PlanLaunch, MinBucketGroupingWithoutTheOverride) {
  LaunchConfig c = DefaultLaunchConfig();
  c.cache.kv_group_size = 0;
  auto plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->groups.size(), 5u);
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(plan->groups[g].geometry.kind(), CacheKind::kRecurrent);
    EXPECT_EQ(plan->groups[g].layers.size(), 23u);
    EXPECT_EQ(plan->groups[g].geometry.page_size_bytes(), 442368);  // state padded to MLA page
    EXPECT_EQ(plan->groups[g].natural_page_size_bytes, 407040);
  }
  EXPECT_EQ(plan->groups[3].layers.size(), 24u);
  EXPECT_EQ(plan->groups[3].geometry.block_table_width(), 82);
  EXPECT_EQ(plan->groups[4].layers.size(), 5u);
  EXPECT_EQ(plan->pool.bytes_per_block, 24 * 442368);
  EXPECT_EQ(plan->capacity.blocks_per_request, 3 * 9 + 82 + 47);
}

// A model name (a directory's path) and layer names reach the SVG as text, escaped.
TEST(PlanLaunch, SvgEscapesNames) {
  auto plan = PlanLaunch(DefaultLaunchConfig());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  plan->model.model_name = "/tmp/a&b<c>\"d";
  plan->groups[0].layers[0] = "x<y>";
  const std::string svg = RenderPlanSvg(*plan);
  EXPECT_NE(svg.find(">/tmp/a&amp;b&lt;c&gt;&quot;d — TP"), std::string::npos) << svg;
  EXPECT_NE(svg.find("x&lt;y&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("a&b"), std::string::npos);
  EXPECT_EQ(svg.find("x<y"), std::string::npos);
}

// The fork's 58.6 kB: the geometry's recurrent rows (1,310 columns) against the DCP-scaled
// rows (89) for 12 block-table rows: (1310 - 89) x 4 B x 12 = 58,608 B.
TEST(PlanLaunch, RecurrentTableCostOverTheScaledRows) {
  LaunchConfig c = DefaultLaunchConfig();
  c.cache.max_num_seqs = 12;
  auto plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok());
  const GroupGeometry& rec = plan->groups[0].geometry;
  EXPECT_EQ(rec.block_table_bytes_per_rank() - 89 * 4 * 12, 58608);
}

TEST(PlanLaunch, DcpOneKeepsTheDraftInTheTargetPartition) {
  LaunchConfig c = DefaultLaunchConfig();
  c.parallel.decode_context_parallel_size = 1;
  c.kv_cache_memory_bytes = 64 * kGiB;
  auto plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok());
  for (const PlannedGroup& g : plan->groups) {
    EXPECT_EQ(g.partition, 0);
    EXPECT_NE(g.geometry.placement(), Placement::kReplicated);
  }
  EXPECT_FALSE(plan->promotion.considered);
}

// A plan made without prefix caching keeps its recurrent groups in mode none, so the runtime's
// options refuse prefix caching turned on for it; an attention-only plan takes it.
TEST(PlanLaunch, PrefixCachingOnlyForAPlanMadeWithItWhereRecurrentGroupsAre) {
  LaunchConfig c = Launch("kimi-linear-48b", 1, 1);
  c.cache.max_model_len = 32768;
  Result<Plan> plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_FALSE(plan->prefix_caching());
  const Status refused = KVCacheManagerOptions::FromPlan(*plan, 64, true).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(),
            "enable_prefix_caching on a plan of kimi-linear-48b made without prefix caching: its "
            "recurrent cache group 0 keeps one state per request (mamba cache mode none, "
            "32768-token blocks), which no prefix can hit; plan with enable_prefix_caching "
            "(mamba cache mode align) instead");
  EXPECT_TRUE(KVCacheManagerOptions::FromPlan(*plan, 64, false).ok());
  c.cache.enable_prefix_caching = true;
  plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(KVCacheManagerOptions::FromPlan(*plan, 64, true).ok());
  LaunchConfig attention = Launch("gpt-oss-120b", 8, 1);
  attention.cache.enable_prefix_caching = false;
  plan = PlanLaunch(attention);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  Result<KVCacheManagerOptions> on = KVCacheManagerOptions::FromPlan(*plan, 64, true);
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_TRUE(on->enable_prefix_caching);
  EXPECT_TRUE(KVCacheManager::Create(*on).ok());
}

// Every embedded target profile plans (accepted or with diagnostics) on a common layout.
TEST(PlanLaunch, EveryTargetProfilePlans) {
  auto profiles = ListProfiles();
  ASSERT_TRUE(profiles.ok());
  int planned = 0;
  for (const ProfileInfo& p : *profiles) {
    if (p.kind != "target") continue;
    LaunchConfig c = Launch(p.name, 8, 1);
    c.cache.max_model_len = 32768;
    auto plan = PlanLaunch(c, 64 * kGiB);
    ASSERT_TRUE(plan.ok()) << p.name << ": " << plan.status().ToString();
    EXPECT_TRUE(plan->accepted()) << p.name << ": " << plan->diagnostics.front().message;
    EXPECT_FALSE(plan->groups.empty()) << p.name;
    EXPECT_GT(plan->capacity.max_tokens, 32768) << p.name;
    ++planned;
  }
  EXPECT_EQ(planned, 8);
}

}  // namespace
}  // namespace kvtopo

namespace kvtopo {
namespace {

// The seed's EAGLE3 launch: the fp8 TRITON_MLA draft layer and the bf16 B12X_MLA target layers
// share a type and a block, so they form one uniform-type group with per-layer pages (no page of
// either is resized), and the kernel block is one both backends take.
TEST(PlanLaunch, Eagle3DraftWithItsOwnDtypeJoinsAUniformTypeGroup) {
  LaunchConfig c = Launch("kimi-k2.6", 8, 4);
  c.speculative = *ParseSpeculativeConfig(
      R"({"method":"eagle3","model":"kimi-k2.6-eagle3-mla","num_speculative_tokens":3,)"
      R"("draft_attention_backend":"TRITON_MLA","draft_kv_cache_dtype":"fp8"})");
  auto plan = PlanLaunch(c, 0);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted());
  ASSERT_EQ(plan->groups.size(), 1u);
  const PlannedGroup& g = plan->groups[0];
  EXPECT_TRUE(g.uniform_type);
  EXPECT_EQ(g.layers.size(), 62u);
  EXPECT_EQ(g.backends, (std::vector<std::string>{"B12X_MLA", "TRITON_MLA"}));
  EXPECT_EQ(g.layer_page_bytes.front(), 256 * 576 * 2);  // bf16 target
  EXPECT_EQ(g.layer_page_bytes.back(), 256 * 576);       // fp8 draft
  EXPECT_EQ(g.geometry.kernel_block_size(), 256);
  EXPECT_EQ(plan->pool.bytes_per_block, 61 * 256 * 576 * 2 + 256 * 576);
}

TEST(SelectKernelBlockSize, CommonToEveryBackend) {
  const BackendTraits multiple16{.kernel_block_multiple_of = 16};
  const BackendTraits flashinfer{.kernel_block_sizes = {16, 32, 64}};
  const BackendTraits flashmla{.kernel_block_sizes = {64}};
  EXPECT_EQ(SelectKernelBlockSize(768, {&multiple16}), 768);
  EXPECT_EQ(SelectKernelBlockSize(768, {&multiple16, &flashinfer}), 64);
  EXPECT_EQ(SelectKernelBlockSize(96, {&flashinfer}), 32);
  EXPECT_EQ(SelectKernelBlockSize(96, {&flashmla}), 0);
  EXPECT_EQ(SelectKernelBlockSize(48, {&flashinfer, &multiple16}), 16);
}

// One wrong knob reads as one line, not one per layer: a finding that many layers share names
// the first and how many others it stands for; findings that differ otherwise stay apart.
TEST(PlanLaunch, AFindingManyLayersShareIsOneDiagnostic) {
  LaunchConfig c = Launch("kimi-k2.6", 8, 1);
  c.cache.attention_backend = "FLASH_ATTN";
  auto plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "backend-kind");
  EXPECT_EQ(plan->diagnostics[0].message,
            "target layer 'model.layers.0.self_attn' (and 60 other layers) is an MLA cache but "
            "backend FLASH_ATTN serves K/V attention caches; choose a matching backend with "
            "--attention-backend");
  // The diagnostic lists every layer it stands for; the JSON carries them.
  ASSERT_EQ(plan->diagnostics[0].layers.size(), 61u);
  EXPECT_EQ(plan->diagnostics[0].layers.front(), "model.layers.0.self_attn");
  EXPECT_EQ(plan->diagnostics[0].layers.back(), "model.layers.60.self_attn");
  const auto json = nlohmann::json::parse(PlanToJsonText(*plan, 0));
  EXPECT_EQ(json["diagnostics"][0]["layers"].size(), 61u);

  c = Launch("gpt-oss-120b", 8, 1);
  c.cache.block_size = 7;
  plan = PlanLaunch(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->diagnostics.size(), 3u);
  // Per group: the group numbers differ, so both stay.
  EXPECT_EQ(plan->diagnostics[0].message.substr(0, 40), "group 0 ('model.layers.0.self_attn'): no");
  EXPECT_EQ(plan->diagnostics[1].message.substr(0, 40), "group 1 ('model.layers.1.self_attn'): no");
  EXPECT_EQ(plan->diagnostics[2].message,
            "target layer 'model.layers.0.self_attn' (and 35 other layers) uses block size 7 "
            "which is not a multiple of a FLASH_ATTN kernel block size (smallest 16); change "
            "--block-size");
  // A finding about one layer lists none.
  EXPECT_TRUE(plan->diagnostics[0].layers.empty());
  EXPECT_EQ(plan->diagnostics[2].layers.size(), 36u);
}

}  // namespace
}  // namespace kvtopo
