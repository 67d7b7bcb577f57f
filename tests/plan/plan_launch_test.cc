// Planning real launches: embedded profiles through the model layer and the backend registry.
#include <gtest/gtest.h>

#include "kvtopo/model.h"
#include "kvtopo/plan.h"

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

// Seed #520 on the qualified GLM-5.3-Flash TP4/DCP4 + DFlash2 launch at 12 GiB: the replicated
// sliding-window draft block (64) is promoted to the sharded target block; bytes per block and
// the scheduler block stay, capacity grows.
TEST(PlanLaunch, Glm53FlashDflash2PromotionGrowsCapacity) {
  LaunchConfig c = Launch("glm-5.3-flash", 4, 4);
  c.speculative = *ParseSpeculativeConfig(R"({"method":"dflash","num_speculative_tokens":7})");
  auto plan = PlanLaunch(c, 12 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted());
  const Promotion& pr = plan->promotion;
  EXPECT_TRUE(pr.considered);
  EXPECT_TRUE(pr.applied) << pr.reason;
  EXPECT_EQ(pr.block_size_before, 64);
  EXPECT_EQ(pr.block_size_after, 960);
  EXPECT_EQ(pr.bytes_per_block_before, pr.bytes_per_block_after);
  EXPECT_EQ(pr.bytes_per_block_after, 11 * 1109760);
  EXPECT_EQ(pr.max_tokens_before, 2199299);
  EXPECT_EQ(pr.max_tokens_after, 3414344);
  EXPECT_EQ(plan->scheduler_block_size, 3840);  // unchanged: 960 divides the target block
  ASSERT_EQ(plan->groups.size(), 6u);
  const PlannedGroup& draft = plan->groups[5];
  EXPECT_EQ(draft.role, Role::kDraft);
  EXPECT_EQ(draft.geometry.placement, Placement::kReplicated);
  EXPECT_EQ(draft.geometry.block_size, 960);
  EXPECT_EQ(draft.geometry.page_size_bytes, 960 * 1024);  // natural page, under the stride
  // The target pages were not touched by the draft.
  EXPECT_EQ(plan->groups[4].geometry.page_size_bytes, 1109760);
  EXPECT_EQ(plan->groups[4].geometry.placement, Placement::kSharded);
}

// The seeds' default launch: 24 MLA + 69 KDA target layers and the 5-layer DSpark draft.
TEST(PlanLaunch, DefaultKimiK3Grouping) {
  auto plan = PlanLaunch(DefaultLaunchConfig(), 0);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted());
  EXPECT_TRUE(plan->kv_cache_memory_is_default);
  ASSERT_EQ(plan->groups.size(), 5u);
  // Uniform-page grouping: group size min(24, 69) = 24 -> the MLA bucket is one group and the
  // KDA bucket splits strided into cdiv(69, 24) = 3 groups of 23.
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(plan->groups[g].geometry.kind, CacheKind::kRecurrent);
    EXPECT_EQ(plan->groups[g].layers.size(), 23u);
    EXPECT_EQ(plan->groups[g].geometry.block_table_width, 1310);
    EXPECT_EQ(plan->groups[g].geometry.page_size_bytes, 442368);  // state padded to MLA page
    EXPECT_EQ(plan->groups[g].natural_page_size_bytes, 407040);
  }
  EXPECT_EQ(plan->groups[3].layers.size(), 24u);
  EXPECT_EQ(plan->groups[3].geometry.block_table_width, 82);
  EXPECT_EQ(plan->groups[4].layers.size(), 5u);
  EXPECT_EQ(plan->groups[4].geometry.placement, Placement::kReplicated);
  EXPECT_EQ(plan->groups[4].geometry.block_table_width, 1303);
  EXPECT_EQ(plan->pool.page_stride_bytes, 442368);
  EXPECT_EQ(plan->pool.tensors.size(), 24u);
  EXPECT_EQ(plan->capacity.blocks_per_request, 3 * 9 + 82 + 1303);
}

// The fork's 58.6 kB: the geometry's recurrent rows (1,310 columns) against the DCP-scaled
// rows (89) for 12 block-table rows: (1310 - 89) x 4 B x 12 = 58,608 B.
TEST(PlanLaunch, RecurrentTableCostOverTheScaledRows) {
  LaunchConfig c = DefaultLaunchConfig();
  c.cache.max_num_seqs = 12;
  auto plan = PlanLaunch(c, 0);
  ASSERT_TRUE(plan.ok());
  const GroupGeometry& rec = plan->groups[0].geometry;
  EXPECT_EQ(rec.block_table_bytes_per_rank - 89 * 4 * 12, 58608);
}

TEST(PlanLaunch, DcpOneKeepsTheDraftInTheTargetPartition) {
  LaunchConfig c = DefaultLaunchConfig();
  c.parallel.decode_context_parallel_size = 1;
  auto plan = PlanLaunch(c, 0);
  ASSERT_TRUE(plan.ok());
  for (const PlannedGroup& g : plan->groups) {
    EXPECT_EQ(g.partition, 0);
    EXPECT_NE(g.geometry.placement, Placement::kReplicated);
  }
  EXPECT_FALSE(plan->promotion.considered);
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
      R"({"method":"eagle3","num_speculative_tokens":3,"draft_attention_backend":"TRITON_MLA",)"
      R"("draft_kv_cache_dtype":"fp8"})");
  auto plan = PlanLaunch(c, 0);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted());
  ASSERT_EQ(plan->groups.size(), 1u);
  const PlannedGroup& g = plan->groups[0];
  EXPECT_TRUE(g.uniform_type);
  EXPECT_EQ(g.layers.size(), 62u);
  EXPECT_EQ(g.backends, (std::vector<std::string>{"B12X_MLA", "TRITON_MLA"}));
  EXPECT_EQ(g.layer_page_bytes.front(), 64 * 576 * 2);  // bf16 target
  EXPECT_EQ(g.layer_page_bytes.back(), 64 * 576);       // fp8 draft
  EXPECT_EQ(g.geometry.kernel_block_size, 64);
  EXPECT_EQ(plan->pool.bytes_per_block, 61 * 64 * 576 * 2 + 64 * 576);
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

}  // namespace
}  // namespace kvtopo
