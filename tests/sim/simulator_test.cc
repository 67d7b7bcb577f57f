#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

#include "kvtopo/model.h"
#include "kvtopo/simulate.h"

namespace kvtopo {
namespace {

// The options the CLI derives from a plan: its step budget, rows and pool.
SimulateOptions OptionsFor(const Plan& plan) {
  SimulateOptions options;
  options.max_num_batched_tokens = plan.cache.max_num_batched_tokens;
  options.max_num_seqs = plan.cache.max_num_seqs;
  options.num_blocks = plan.pool.num_blocks;
  return options;
}

// The seeds' reproducer: the million-token workload on the default plan, with the CLI's options
// changed by `adjust`.
Result<SimulateReport> SimulateMillion(const std::function<void(SimulateOptions&)>& adjust) {
  KVTOPO_ASSIGN_OR_RETURN(const Plan plan, DefaultPlanForWorkload("million", 0));
  KVTOPO_ASSIGN_OR_RETURN(const Workload workload, BuiltinWorkload("million"));
  SimulateOptions options = OptionsFor(plan);
  adjust(options);
  return Simulate(plan, workload, options);
}

// The seed's validation: one request grown to 1,000,000 tokens on the default 17-group plan
// (12 recurrent KDA groups, 4 sharded MLA groups, the replicated DSpark window), every rank, in
// the 499-page pool: 1,302 steps and 17 pages free at the end, as the fork's reproducer reports.
TEST(Simulate, MillionOnTheDefaultPlanHasNoViolations) {
  // Page ownership and addressability are the point here, not slot mapping.
  auto report = SimulateMillion([](SimulateOptions& o) { o.check_slot_mapping = false; });
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->invariant_violations, 0) << report->first_violation;
  // 1,301 chunks of 768 tokens (the 1,024-token budget rounded down to a recurrent checkpoint),
  // then the last 832 tokens in one step.
  EXPECT_EQ(report->steps, 1302);
  EXPECT_EQ(report->tokens_scheduled, 1000000);
  EXPECT_EQ(report->allocations, 1302);
  EXPECT_EQ(report->invariant_checks, 1302);
  EXPECT_EQ(report->pool_checks, 1302);  // 499 blocks: the whole pool after every step
  EXPECT_EQ(report->requests_finished, 1);
  EXPECT_EQ(report->num_blocks, 499);
  // 12 x 9 recurrent + 4 x 82 MLA + 45 window pages + the null block = 482 of 499.
  EXPECT_EQ(report->free_pages_after_last_step, 17);
  ASSERT_EQ(report->groups.size(), 17u);
  EXPECT_EQ(report->groups[0].table_width, 1310);
  EXPECT_EQ(report->groups[0].peak_pages, 9);  // 2 + S resident recurrent pages
  EXPECT_EQ(report->groups[12].peak_pages, 82);
  EXPECT_EQ(report->groups[16].peak_pages, 45);  // cdiv(32767 + 768 + 7, 768) + 1 window pages
  ASSERT_EQ(report->ranks.size(), 16u);
  EXPECT_EQ(report->ranks[0].peak_local_tokens, 62500);
  EXPECT_EQ(report->ranks[15].peak_local_tokens, 62500);
  EXPECT_EQ(report->ranks[0].free_pages, report->num_blocks - 1);
}

// The manager's whole-pool walk runs after every step while the walks stay within
// whole_pool_check_budget block visits, then after steps 2^k and at the end; the simulator's own
// checks run every step. The sized-to-fit pool has 499 blocks; the run has 1,302 steps.
TEST(Simulate, WholePoolWalksStayWithinTheirBudgetThenRunAtPowersOfTwo) {
  auto run = [](int64_t budget, bool checks) {
    return SimulateMillion([=](SimulateOptions& o) {
      o.check_slot_mapping = false;
      o.check_invariants = checks;
      o.whole_pool_check_budget = budget;
    });
  };
  struct Case {
    int64_t budget;
    int64_t every_step_until;
    int64_t pool_checks;
  };
  for (const Case& c : {
           Case{0, 0, 12},                    // steps 1, 2, 4, ..., 1024 (11) and the end
           Case{499 * 100, 100, 105},         // 1-100, 128, 256, 512, 1024 and the end
           Case{499 * 1302 - 1, 1301, 1302},  // 1-1301 and the end
           Case{499 * 1302, 1302, 1302},      // every step: the end state needs no walk of its own
       }) {
    SCOPED_TRACE(c.budget);
    auto report = run(c.budget, true);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(report->num_blocks, 499);
    EXPECT_EQ(report->invariant_violations, 0) << report->first_violation;
    EXPECT_EQ(report->invariant_checks, 1302);
    EXPECT_EQ(report->pool_check_every_step_until, c.every_step_until);
    EXPECT_EQ(report->pool_checks, c.pool_checks);
  }
  // Without invariant checks, neither.
  auto report = run(0, false);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->invariant_checks, 0);
  EXPECT_EQ(report->pool_checks, 0);
}

TEST(Simulate, DcpScaledRecurrentTableFailsAtTheFirstUnaddressableCheckpoint) {
  auto report =
      SimulateMillion([](SimulateOptions& o) { o.inject_dcp_scaled_recurrent_table = true; });
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->invariant_violations, 1);
  EXPECT_EQ(report->first_violation_tokens, 63744);  // 83 x 768
  EXPECT_EQ(report->steps, 83);
  EXPECT_EQ(report->groups[0].table_width, 89);  // cdiv(1,000,000, 768 * 16) + 7
  EXPECT_NE(report->first_violation.find("cannot hold column 89 needed at 63744 tokens"),
            std::string::npos)
      << report->first_violation;
}

Workload Small(int requests, int64_t prompt, int64_t decode) {
  Workload w;
  w.name = "small";
  for (int i = 0; i < requests; ++i) {
    w.requests.push_back({.arrival_step = i % 3,
                          .prompt_len = prompt + 17 * i,
                          .decode_steps = decode,
                          .accepted_drafts = {2, 0, 1}});
  }
  w.num_speculative_tokens = 2;
  w.num_lookahead_tokens = 2;
  return w;
}

TEST(Simulate, PreemptsWhenThePoolIsShortAndStillFinishes) {
  auto plan = DefaultPlanForWorkload("hybrid", 0);
  ASSERT_TRUE(plan.ok());
  SimulateOptions options;
  options.max_num_batched_tokens = 512;
  options.num_blocks = 220;
  options.max_num_seqs = 8;
  auto report = Simulate(*plan, Small(12, 700, 40), options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->invariant_violations, 0) << report->first_violation;
  EXPECT_EQ(report->requests_finished, 12);
  EXPECT_GT(report->preemptions, 0);
  EXPECT_EQ(report->ranks[0].free_pages, 219);  // every block back but the null block
}

TEST(Simulate, DeterministicForASeed) {
  auto plan = DefaultPlanForWorkload("hybrid", 0);
  ASSERT_TRUE(plan.ok());
  SimulateOptions options;
  options.max_num_batched_tokens = 1024;
  options.num_blocks = 300;
  options.seed = 7;
  auto a = Simulate(*plan, Small(10, 900, 30), options);
  auto b = Simulate(*plan, Small(10, 900, 30), options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->steps, b->steps);
  EXPECT_EQ(a->allocations, b->allocations);
  EXPECT_EQ(a->preemptions, b->preemptions);
  EXPECT_EQ(a->tokens_scheduled, b->tokens_scheduled);
  for (size_t g = 0; g < a->groups.size(); ++g) {
    EXPECT_EQ(a->groups[g].peak_pages, b->groups[g].peak_pages);
  }
}

TEST(Simulate, SharedPrefixesHitAfterTheFirstRequest) {
  auto plan = DefaultPlanForWorkload("prefix-hit", 0);
  ASSERT_TRUE(plan.ok());
  Workload w;
  w.name = "prefix";
  for (int i = 0; i < 4; ++i) {
    w.requests.push_back({.arrival_step = i,
                          .prompt_len = 320,
                          .shared_prefix_id = 0,
                          .shared_prefix_len = 256,
                          .decode_steps = 2});
  }
  w.num_lookahead_tokens = 0;
  w.num_speculative_tokens = 0;
  auto report = Simulate(*plan, w, {});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->invariant_violations, 0);
  // Requests 1..3 each hit the 256 shared tokens (16 blocks of 16).
  EXPECT_EQ(report->prefix_hit_tokens, 3 * 256);
  EXPECT_EQ(report->prefix_query_tokens, 4 * 320);
  // Each request decodes twice after its one-chunk prefill; those calls are also timed apart.
  EXPECT_EQ(report->decode_allocate_slots_calls, 4 * 2);
  EXPECT_EQ(report->allocate_slots_calls, 4 + 4 * 2);
  EXPECT_LE(report->decode_allocate_slots_seconds, report->allocate_slots_seconds);
}

TEST(Simulate, RejectedPlanIsAnError) {
  LaunchConfig config = DefaultLaunchConfig();
  config.parallel.decode_context_parallel_size = 2;  // 12 gathered heads: B12X needs 8k
  auto plan = PlanLaunch(config, 0);
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->accepted());
  auto report = Simulate(*plan, *BuiltinWorkload("million"), {});
  EXPECT_EQ(report.status().code(), StatusCode::kRejected);
}

// A request whose first chunk no pool state can hold, a prompt past the plan's length and a row
// count past the simulator's range are refused with what to change, not run forever or skipped.
TEST(Simulate, RefusesWorkloadsThatCannotRun) {
  auto plan = DefaultPlanForWorkload("prefix-hit", 0);
  ASSERT_TRUE(plan.ok());
  Workload w;
  w.name = "big";
  w.requests.push_back({.prompt_len = 320, .decode_steps = 1});
  w.num_lookahead_tokens = 0;
  w.num_speculative_tokens = 0;
  SimulateOptions options;
  options.num_blocks = 8;
  EXPECT_EQ(Simulate(*plan, w, options).status(),
            Rejected("request 0 (320 tokens) cannot be admitted: its first chunk does not fit "
                     "the pool of 8 blocks or the 8192-token step budget"));
  options.num_blocks = 0;
  options.max_num_seqs = 65537;
  EXPECT_EQ(Simulate(*plan, w, options).status(),
            InvalidArgument("--max-num-seqs 65537 is outside the simulator's range [1, 65536]"));
  w.requests[0].prompt_len = plan->model.max_model_len + 1;
  options.max_num_seqs = 8;
  EXPECT_EQ(Simulate(*plan, w, options).status().message(),
            fmt::format("workload request 0 has a {}-token prompt; --max-model-len is {}",
                        plan->model.max_model_len + 1, plan->model.max_model_len));
}

TEST(Workload, JsonLinesParseAndErrors) {
  auto w = ParseWorkloadJsonl(
      "{\"prompt_len\": 100, \"decode_steps\": 4}\n\n"
      "{\"arrival_step\": 2, \"prompt_len\": 50, \"shared_prefix_id\": 1, "
      "\"shared_prefix_len\": 32, \"accepted_drafts\": [1, 0]}\n");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->requests.size(), 2u);
  EXPECT_EQ(w->requests[1].arrival_step, 2);
  EXPECT_EQ(w->requests[1].accepted_drafts, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ParseWorkloadJsonl("{\"decode_steps\": 4}").status().message(),
            "workload line 1: field 'prompt_len' is missing");
  EXPECT_EQ(ParseWorkloadJsonl("{\"prompt_len\": 4}\n{oops").status().message(),
            "workload line 2 is not valid JSON: [json.exception.parse_error.101] parse error at "
            "line 1, column 2: syntax error while parsing object key - invalid literal; last "
            "read: '{o'; expected string literal");
  EXPECT_EQ(ParseWorkloadJsonl("[4]").status().message(),
            "workload line 1: expected a JSON object, got array");
  EXPECT_EQ(ParseWorkloadJsonl("{\"prompt_len\": 4, \"accepted_drafts\": 2}").status().message(),
            "workload line 1: field 'accepted_drafts' must be a list");
  EXPECT_EQ(
      ParseWorkloadJsonl("{\"prompt_len\": 4, \"accepted_drafts\": [1, -1]}").status().message(),
      "workload line 1: 'accepted_drafts' holds integers in [0, 1024], got -1");
  EXPECT_EQ(ParseWorkloadJsonl("{\"prompt_len\": -4}").status().message(),
            "workload line 1: field 'prompt_len' must be an integer in [1, 2147483647], got -4");
  // Values past 2^63 - 1 used to wrap: shared_prefix_id 2^64 - 1 was read as -1 (no prefix).
  EXPECT_EQ(ParseWorkloadJsonl("{\"prompt_len\": 4, \"shared_prefix_id\": 18446744073709551615}")
                .status()
                .message(),
            "workload line 1: field 'shared_prefix_id' must be an integer in [-1, 2147483647], "
            "got 18446744073709551615");
  EXPECT_EQ(ParseWorkloadJsonl("{\"prompt_len\": 4611686018427387904}").status().message(),
            "workload line 1: field 'prompt_len' must be an integer in [1, 2147483647], got "
            "4611686018427387904");
  EXPECT_EQ(
      ParseWorkloadJsonl("{\"prompt_len\": 4, \"accepted_drafts\": [1, 5000]}").status().message(),
      "workload line 1: 'accepted_drafts' holds integers in [0, 1024], got 5000");
  EXPECT_EQ(ParseWorkloadJsonl("{\"prompt_len\": 4, \"speed\": 1}").status().message(),
            "workload line 1: unknown field 'speed'; accepted: prompt_len, arrival_step, "
            "shared_prefix_id, shared_prefix_len, decode_steps, accepted_drafts");
  EXPECT_EQ(ParseWorkloadJsonl("{\"prompt_len\": 4, \"shared_prefix_len\": 9}").status().message(),
            "workload line 1: shared_prefix_len 9 is longer than prompt_len 4");
  EXPECT_EQ(ParseWorkloadJsonl("").status().message(), "workload file holds no requests");
  EXPECT_EQ(
      BuiltinWorkload("nope").status().message(),
      "unknown workload 'nope'; built-in: million, decode-steady, prefix-hit, hybrid, w1, w2, "
      "w3, w4, or --workload-file FILE");
}

}  // namespace
}  // namespace kvtopo
