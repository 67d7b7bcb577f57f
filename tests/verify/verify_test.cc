// kvtopo verify in one process (every rank in a loop) and over threads standing in for MPI
// processes, on small plans built here: the checks pass on every placement the planner makes,
// and each reproduced bug fails at the group, request and position it breaks.
#include "kvtopo/verify.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <thread>

#include "internal/checked_math.h"
#include "kvtopo/plan.h"
#include "verify/setup.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

struct SmallLaunch {
  int64_t dcp = 4;
  int64_t interleave = 1;
  int64_t block = 16;
  int64_t kernel_block = 0;  // 0: the block
  int64_t max_len = 2048;
  int64_t spec_tokens = 3;
  int64_t kv_shards = 0;  // the target's shard count; 0: all ranks
  bool mla_draft = true;
  bool window_draft = false;
  bool recurrent = false;
  bool chunked_local = false;  // a replicated chunked-local target layer (chunk 48)
};

Plan SmallPlan(const SmallLaunch& l) {
  ModelCacheSpecs m;
  m.model_name = "small";
  m.max_model_len = l.max_len;
  m.num_speculative_tokens = l.spec_tokens;
  m.num_lookahead_tokens = l.spec_tokens;
  for (int i = 0; i < 2; ++i) {
    m.layers.push_back({.name = "mla." + std::to_string(i),
                        .kind = CacheKind::kMla,
                        .block_size = l.block,
                        .num_kv_heads = 1,
                        .head_size = 576,
                        .cache_dtype = KvCacheDtype::kFp8,
                        .dcp = {.kv_shard_count = l.kv_shards},
                        .attention_backend = "MLA"});
  }
  if (l.recurrent) {
    m.layers.push_back({.name = "kda.0",
                        .kind = CacheKind::kRecurrent,
                        .block_size = l.block,
                        .state = {{{2, 64}, ElementType::kFloat32}},
                        .recurrent_mode = RecurrentMode::kAlign,
                        .num_speculative_blocks = l.spec_tokens});
  }
  if (l.mla_draft) {
    m.layers.push_back({.name = "draft.mla",
                        .role = Role::kDraft,
                        .kind = CacheKind::kMla,
                        .block_size = l.block,
                        .num_kv_heads = 1,
                        .head_size = 576,
                        .cache_dtype = KvCacheDtype::kBfloat16,
                        .dcp = {.replicated = true},
                        .causal = false,
                        .attention_backend = "MLA"});
  }
  if (l.chunked_local) {
    m.layers.push_back({.name = "chunked.0",
                        .kind = CacheKind::kChunkedLocal,
                        .block_size = l.block,
                        .num_kv_heads = 2,
                        .head_size = 64,
                        .head_size_v = 64,
                        .cache_dtype = KvCacheDtype::kBfloat16,
                        .attention_chunk_size = 48,
                        .dcp = {.replicated = true},
                        .attention_backend = "FLASH_ATTN"});
  }
  if (l.window_draft) {
    m.layers.push_back({.name = "draft.swa",
                        .role = Role::kDraft,
                        .kind = CacheKind::kSlidingWindow,
                        .block_size = l.block,
                        .num_kv_heads = 2,
                        .head_size = 64,
                        .head_size_v = 64,
                        .cache_dtype = KvCacheDtype::kBfloat16,
                        .sliding_window = 40,
                        .dcp = {.replicated = true},
                        .attention_backend = "FLASH_ATTN"});
  }
  PlanInputs in;
  in.parallel = {.tensor_parallel_size = l.dcp,
                 .decode_context_parallel_size = l.dcp,
                 .dcp_kv_cache_interleave_size = l.interleave};
  in.cache.max_num_seqs = 8;
  in.cache.max_num_batched_tokens = 256;
  in.kv_cache_memory_bytes = kGiB;
  // A replicated chunked group keeps B-token blocks beside the sharded groups' B x N, which the
  // engine's chunked-local manager refuses with prefix caching (chunked-local-block-size).
  if (l.chunked_local && l.dcp > 1) in.cache.enable_prefix_caching = false;
  in.backends["MLA"] = {.kernel_block_sizes = {l.kernel_block > 0 ? l.kernel_block : l.block}};
  in.backends["FLASH_ATTN"] = {.kernel_block_multiple_of = 16, .indexes_kv_by_block_stride = true};
  auto plan = PlanFromSpecs(m, in);
  KVTOPO_CHECK_MSG(plan.ok(), plan.status().message());
  KVTOPO_CHECK_MSG(plan->accepted(), plan->diagnostics.front().message);
  return *plan;
}

int32_t GroupOf(const Plan& plan, CacheKind kind, Role role) {
  for (const PlannedGroup& g : plan.groups) {
    if (g.spec.kind == kind && g.role == role) return g.id.value();
  }
  return -1;
}

VerifyReport RunVerify(const Plan& plan, const VerifyOptions& options = {},
                       const internal::VerifyFaults& faults = {}) {
  auto transport = InProcessTransport();
  auto report = internal::VerifyWithFaults(plan, options, faults, *transport);
  KVTOPO_CHECK_MSG(report.ok(), report.status().message());
  return *report;
}

void ExpectPasses(const VerifyReport& r) {
  EXPECT_TRUE(r.passed) << r.failure.message;
  EXPECT_EQ(r.failure.check, "");
  for (const VerifyGroupReport& g : r.groups) {
    EXPECT_LE(g.max_rel_error, 1e-5) << "group " << g.group;
    if (g.attention) {
      // 3 requests x 4 decode steps x (1 + S) query tokens.
      EXPECT_EQ(g.queries, 3 * 4 * 4) << "group " << g.group;
    } else {
      EXPECT_GT(g.rows_checked, 0) << "group " << g.group;
    }
  }
}

TEST(Verify, ShardedInterleaveOnePasses) {
  const Plan plan = SmallPlan({});
  const VerifyReport r = RunVerify(plan);
  ExpectPasses(r);
  EXPECT_EQ(r.dcp_size, 4);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].placement, "sharded");
  EXPECT_EQ(r.groups[1].placement, "replicated");
  // Replicated: no merge, the one rank's output is the reference computation itself.
  EXPECT_EQ(r.groups[1].max_rel_error, 0.0);
  EXPECT_GT(r.groups[0].max_rel_error, 0.0);
  EXPECT_EQ(r.queries, 2 * 48);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(r.requests[1].preemptions, 1);
  // Accepted drafts per step cycle (request + 3 * step) mod 4: 6 rejected per request.
  EXPECT_EQ(r.rejected_drafts, 18);
  // Scheduler block 64 (16 x 4 ranks): request 1 resumes from 64 cached tokens (its own
  // blocks), request 2 starts with request 1's first 64 tokens.
  EXPECT_EQ(plan.scheduler_block_size, 64);
  EXPECT_EQ(r.requests[1].prefix_hit_tokens, 64);
  EXPECT_EQ(r.requests[2].prefix_hit_tokens, 64);
  // The table-only request of max_model_len tokens.
  ASSERT_EQ(r.requests.size(), 4u);
  EXPECT_TRUE(r.requests[3].table_only);
  EXPECT_EQ(r.requests[3].num_tokens, 2048);
  EXPECT_EQ(r.errors.size(), 96u);
}

TEST(Verify, InterleaveEqualToTheBlockPasses) {
  ExpectPasses(RunVerify(SmallPlan({.interleave = 16})));
}

TEST(Verify, InterleaveBetweenOneAndTheBlockPasses) {
  ExpectPasses(RunVerify(SmallPlan({.interleave = 4})));
}

TEST(Verify, KernelBlockSmallerThanTheBlockPasses) {
  const Plan plan = SmallPlan({.interleave = 2, .block = 64, .kernel_block = 16});
  ASSERT_EQ(plan.groups[0].geometry.block_size(), 64);
  ASSERT_EQ(plan.groups[0].geometry.kernel_block_size(), 16);
  ExpectPasses(RunVerify(plan));
}

TEST(Verify, PartialShardCountPasses) {
  const Plan plan = SmallPlan({.kv_shards = 2, .mla_draft = false});
  ASSERT_EQ(plan.groups[0].geometry.placement(), Placement::kPartial);
  const VerifyReport r = RunVerify(plan);
  ExpectPasses(r);
  EXPECT_EQ(r.groups[0].dcp_shard_count, 2);
}

TEST(Verify, SlidingWindowDraftAndRecurrentGroupsPass) {
  const Plan plan = SmallPlan({.window_draft = true, .recurrent = true});
  const int32_t window = GroupOf(plan, CacheKind::kSlidingWindow, Role::kDraft);
  const int32_t recurrent = GroupOf(plan, CacheKind::kRecurrent, Role::kTarget);
  ASSERT_GE(window, 0);
  ASSERT_GE(recurrent, 0);
  const VerifyReport r = RunVerify(plan);
  ExpectPasses(r);
  EXPECT_FALSE(r.groups[recurrent].attention);
  EXPECT_EQ(r.groups[window].max_rel_error, 0.0);
}

TEST(Verify, ChunkedLocalAttentionPasses) {
  const Plan plan = SmallPlan({.mla_draft = false, .chunked_local = true});
  const int32_t chunked = GroupOf(plan, CacheKind::kChunkedLocal, Role::kTarget);
  ASSERT_GE(chunked, 0);
  const VerifyReport r = RunVerify(plan);
  ExpectPasses(r);
  EXPECT_EQ(r.groups[chunked].placement, "replicated");
}

TEST(Verify, WithoutSpeculationPasses) {
  const VerifyReport r = RunVerify(SmallPlan({.spec_tokens = 0}));
  EXPECT_TRUE(r.passed) << r.failure.message;
  EXPECT_EQ(r.groups[0].queries, 3 * 4);
  EXPECT_EQ(r.rejected_drafts, 0);
}

TEST(Verify, APoolShortEnoughToPreemptStillPasses) {
  VerifyOptions options;
  options.num_blocks = 24;
  options.max_length_request = false;
  const VerifyReport r = RunVerify(SmallPlan({}), options);
  EXPECT_TRUE(r.passed) << r.failure.message;
  EXPECT_EQ(r.preemptions, 2);  // the forced one and one for want of blocks
}

// Threads standing in for MPI processes: each holds dcp / P ranks and calls the collectives.
class Threads {
 public:
  explicit Threads(int32_t n) : barrier_(n), slots_(n) {}

  class Transport final : public VerifyTransport {
   public:
    Transport(Threads& t, int32_t p) : t_(t), p_(p) {}
    int32_t num_processes() const override { return static_cast<int32_t>(t_.slots_.size()); }
    int32_t process() const override { return p_; }
    Status Broadcast(std::vector<std::byte>& data) override {
      if (p_ == 0) t_.broadcast_ = data;
      t_.barrier_.arrive_and_wait();
      if (p_ != 0) data = t_.broadcast_;
      t_.barrier_.arrive_and_wait();
      return Status::Ok();
    }
    Status AllGather(std::span<const std::byte> local, std::span<std::byte> all) override {
      t_.slots_[p_].assign(local.begin(), local.end());
      t_.barrier_.arrive_and_wait();
      size_t offset = 0;
      for (const auto& slot : t_.slots_) {
        EXPECT_EQ(slot.size(), local.size());
        std::copy(slot.begin(), slot.end(), all.begin() + offset);
        offset += slot.size();
      }
      t_.barrier_.arrive_and_wait();
      return Status::Ok();
    }

   private:
    Threads& t_;
    int32_t p_;
  };

  std::vector<Result<VerifyReport>> Run(const Plan& plan, const internal::VerifyFaults& faults) {
    std::vector<Result<VerifyReport>> out(slots_.size(), Internal("not run"));
    std::vector<std::thread> threads;
    for (int32_t p = 0; p < static_cast<int32_t>(slots_.size()); ++p) {
      threads.emplace_back([&, p] {
        Transport transport(*this, p);
        out[p] = internal::VerifyWithFaults(plan, {}, faults, transport);
      });
    }
    for (std::thread& t : threads) t.join();
    return out;
  }

 private:
  std::barrier<> barrier_;
  std::vector<std::vector<std::byte>> slots_;
  std::vector<std::byte> broadcast_;
};

TEST(Verify, ProcessesHoldingShareOfTheRanksGiveTheSameFigures) {
  const Plan plan = SmallPlan({.interleave = 4, .window_draft = true, .recurrent = true});
  const VerifyReport one = RunVerify(plan);
  ASSERT_TRUE(one.passed) << one.failure.message;
  for (int32_t processes : {2, 4}) {
    Threads threads(processes);
    auto reports = threads.Run(plan, {});
    for (auto& r : reports) {
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_TRUE(r->passed);
      EXPECT_EQ(r->num_processes, processes);
    }
    const VerifyReport& root = *reports[0];
    ASSERT_EQ(root.errors.size(), one.errors.size());
    for (size_t i = 0; i < one.errors.size(); ++i) {
      EXPECT_EQ(root.errors[i].position, one.errors[i].position);
      EXPECT_EQ(root.errors[i].rel_error, one.errors[i].rel_error);
    }
    EXPECT_EQ(root.tokens_scheduled, one.tokens_scheduled);
  }
}

TEST(Verify, EveryProcessReturnsTheFailure) {
  Threads threads(2);
  auto reports = threads.Run(SmallPlan({}), {.foreign_slot_mapping = true});
  for (auto& r : reports) {
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->passed);
    EXPECT_EQ(r->failure.check, "ownership");
    EXPECT_EQ(r->failure.position, 0);
  }
}

// Negative controls: each reproduced bug fails where it breaks.

TEST(VerifyFaults, DcpScaledRecurrentTableFailsAtTheFirstUnaddressableCheckpoint) {
  const Plan plan = SmallPlan({.recurrent = true});
  const int32_t recurrent = GroupOf(plan, CacheKind::kRecurrent, Role::kTarget);
  const GroupGeometry& g = plan.groups[recurrent].geometry;
  const VerifyReport r = RunVerify(plan, {}, {.dcp_scaled_recurrent_table = true});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failure.check, "table");
  EXPECT_EQ(r.failure.group, recurrent);
  EXPECT_EQ(r.failure.request, 3);  // the max-length request
  // L 2048, B 16, N 4: cdiv(L, B * N) = 32 checkpoint columns (+ S) hold checkpoints up to
  // 32 x 16 = 512 tokens; the next one, at position 512, needs one more.
  ASSERT_EQ(g.block_size(), 16);
  EXPECT_EQ(r.failure.position, 512);
  EXPECT_NE(r.failure.message.find("block table has"), std::string::npos) << r.failure.message;
}

TEST(VerifyFaults, ReplicatedDraftWithTheTargetsLocalLengthFails) {
  const Plan plan = SmallPlan({});
  const VerifyReport r = RunVerify(plan, {}, {.wrong_draft_local_length = true});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failure.group, GroupOf(plan, CacheKind::kMla, Role::kDraft));
  EXPECT_EQ(r.failure.request, 0);
  EXPECT_EQ(r.failure.position, 63);  // request 0's first query: its prompt is 64 - 1 tokens
  EXPECT_EQ(r.failure.check, "replica");
}

TEST(VerifyFaults, ShardedDraftWithTheGlobalLengthFails) {
  Plan plan = SmallPlan({.mla_draft = false});
  // A draft group sharded like the target (an in-model MTP draft).
  plan.groups[0].role = Role::kDraft;
  const VerifyReport r = RunVerify(plan, {}, {.wrong_draft_local_length = true});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failure.group, 0);
  EXPECT_EQ(r.failure.request, 0);
  EXPECT_EQ(r.failure.position, 63);
  EXPECT_EQ(r.failure.check, "read");  // local tokens past the rank's row
}

TEST(VerifyFaults, ForeignSlotMappingFailsOwnershipAtPositionZero) {
  const VerifyReport r = RunVerify(SmallPlan({}), {}, {.foreign_slot_mapping = true});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failure.check, "ownership");
  EXPECT_EQ(r.failure.group, 0);
  EXPECT_EQ(r.failure.request, 0);
  EXPECT_EQ(r.failure.position, 0);
  EXPECT_NE(r.failure.message.find("held by 2 ranks (0, 1), expected 1"), std::string::npos)
      << r.failure.message;
}

TEST(VerifyErrors, OptionsAndProcessCountsAreNamed) {
  const Plan plan = SmallPlan({});
  auto transport = InProcessTransport();
  auto bad = Verify(plan, {.decode_steps = 0}, *transport);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--decode-steps 0 is outside [1, 1000]");
  auto nothing = Verify(plan, {.num_requests = 0, .max_length_request = false}, *transport);
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(
      nothing.status().message(),
      "--requests 0 with --no-max-length-request leaves nothing to verify; ask for a request");
  auto tolerance = Verify(plan, {.max_relative_error = -1}, *transport);
  ASSERT_FALSE(tolerance.ok());
  EXPECT_EQ(tolerance.status().message(), "--max-relative-error -1 must be positive and finite");
  Threads three(3);
  auto reports = three.Run(plan, {});
  ASSERT_FALSE(reports[0].ok());
  EXPECT_EQ(reports[0].status().message(),
            "3 processes cannot share the 4 DCP ranks evenly; run mpirun -n with a divisor of "
            "--decode-context-parallel-size 4");
  const Plan tiny = SmallPlan({.max_len = 20});
  auto short_len = Verify(tiny, {}, *transport);
  ASSERT_FALSE(short_len.ok());
  EXPECT_EQ(short_len.status().message(),
            "--max-model-len 20 leaves no room for a prompt before 4 decode steps of 4 tokens; "
            "raise --max-model-len or lower --decode-steps");
}

TEST(VerifySvg, PlotsEveryErrorPoint) {
  const VerifyReport r = RunVerify(SmallPlan({}));
  const std::string svg = VerifyErrorSvg(r, 1e-5);
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) {
    ++circles;
  }
  EXPECT_EQ(circles, r.errors.size() + 2);  // the points and one legend mark per attention group
  EXPECT_NE(svg.find("tolerance 1e-05"), std::string::npos);
}

}  // namespace
}  // namespace kvtopo
