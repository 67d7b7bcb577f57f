// `kvtopo simulate`: the no-weight reproducer.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "internal/json_text.h"
#include "internal/text_file.h"
#include "kvtopo/limits.h"
#include "kvtopo/plan.h"
#include "kvtopo/simulate.h"
#include "launch_flags.h"

namespace kvtopo::cli {
namespace {

struct SimulateArgs {
  LaunchFlags launch;
  std::string workload = "million";
  std::string workload_file;
  std::string seed = "0";
  bool json = false;
  bool inject = false;
  bool no_slot_checks = false;
  bool no_invariant_checks = false;
};

nlohmann::json ReportJson(const SimulateReport& r, uint64_t seed) {
  nlohmann::json groups = nlohmann::json::array();
  for (const GroupReport& g : r.groups) {
    groups.push_back({{"group", g.group},
                      {"kind", g.kind},
                      {"placement", g.placement},
                      {"table_width", g.table_width},
                      {"peak_pages", g.peak_pages},
                      {"pages_at_end", g.pages_at_end}});
  }
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankReport& k : r.ranks) {
    ranks.push_back({{"rank", k.rank},
                     {"free_pages", k.free_pages},
                     {"peak_local_tokens", k.peak_local_tokens}});
  }
  return {{"workload", r.workload},
          {"model", r.model},
          {"seed", seed},
          {"num_blocks", r.num_blocks},
          {"free_pages_after_last_step", r.free_pages_after_last_step},
          {"min_free_pages", r.min_free_pages},
          {"pool_sizing", r.pool_sizing},
          {"steps", r.steps},
          {"tokens", r.tokens_scheduled},
          {"allocations", r.allocations},
          {"allocation_failures", r.allocation_failures},
          {"preemptions", r.preemptions},
          {"requests_finished", r.requests_finished},
          {"prefix_query_tokens", r.prefix_query_tokens},
          {"prefix_hit_tokens", r.prefix_hit_tokens},
          {"hit_rate", r.prefix_hit_rate},
          {"groups", groups},
          {"ranks", ranks},
          {"invariant_checks", r.invariant_checks},
          {"pool_checks", r.pool_checks},
          {"pool_check_every_step_until", r.pool_check_every_step_until},
          {"invariant_violations", r.invariant_violations},
          {"first_violation", r.first_violation},
          {"first_violation_tokens", r.first_violation_tokens},
          {"wall_seconds", r.wall_seconds},
          {"runtime_seconds", r.runtime_seconds},
          {"get_computed_blocks_seconds", r.get_computed_blocks_seconds},
          {"get_computed_blocks_calls", r.get_computed_blocks_calls},
          {"allocate_slots_seconds", r.allocate_slots_seconds},
          {"allocate_slots_calls", r.allocate_slots_calls},
          {"decode_allocate_slots_seconds", r.decode_allocate_slots_seconds},
          {"decode_allocate_slots_calls", r.decode_allocate_slots_calls},
          {"free_seconds", r.free_seconds},
          {"free_calls", r.free_calls},
          {"hash_seconds", r.hash_seconds}};
}

void PrintReport(const SimulateReport& r, uint64_t seed) {
  std::printf("workload %s on %s, seed %llu\n", r.workload.c_str(), r.model.c_str(),
              static_cast<unsigned long long>(seed));
  std::printf("pool       %lld blocks (%s); %lld of them free after the last step (fewest %lld)\n",
              static_cast<long long>(r.num_blocks), r.pool_sizing.c_str(),
              static_cast<long long>(r.free_pages_after_last_step),
              static_cast<long long>(r.min_free_pages));
  std::printf(
      "steps      %lld, tokens %lld, allocations %lld, not-enough-blocks %lld, "
      "preemptions %lld, finished %lld\n",
      static_cast<long long>(r.steps), static_cast<long long>(r.tokens_scheduled),
      static_cast<long long>(r.allocations), static_cast<long long>(r.allocation_failures),
      static_cast<long long>(r.preemptions), static_cast<long long>(r.requests_finished));
  std::printf("prefix     %.2f%% hit (%lld of %lld prompt tokens)\n", 100 * r.prefix_hit_rate,
              static_cast<long long>(r.prefix_hit_tokens),
              static_cast<long long>(r.prefix_query_tokens));
  std::printf("%5s %-20s %-11s %7s %11s %10s\n", "group", "kind", "placement", "width",
              "peak pages", "end pages");
  for (const GroupReport& g : r.groups) {
    std::printf("%5d %-20s %-11s %7lld %11lld %10lld\n", g.group, g.kind.c_str(),
                g.placement.c_str(), static_cast<long long>(g.table_width),
                static_cast<long long>(g.peak_pages), static_cast<long long>(g.pages_at_end));
  }
  if (r.ranks.size() == 1) {
    std::printf("ranks      1, %lld free pages at the end; peak local tokens %lld\n",
                static_cast<long long>(r.ranks[0].free_pages),
                static_cast<long long>(r.ranks[0].peak_local_tokens));
  } else if (!r.ranks.empty()) {
    std::printf(
        "ranks      %zu, %lld free pages each at the end; peak local tokens rank 0 %lld, "
        "rank %zu %lld\n",
        r.ranks.size(), static_cast<long long>(r.ranks[0].free_pages),
        static_cast<long long>(r.ranks[0].peak_local_tokens), r.ranks.size() - 1,
        static_cast<long long>(r.ranks.back().peak_local_tokens));
  }
  std::printf("checks     %lld invariant checks, %lld violations",
              static_cast<long long>(r.invariant_checks),
              static_cast<long long>(r.invariant_violations));
  if (r.pool_check_every_step_until < r.invariant_checks) {
    // The whole-pool walks outran their budget: after steps 2^k from then on, and at the end
    // unless the last step was one of them.
    const int64_t each = r.pool_check_every_step_until;
    std::vector<int64_t> powers;  // the steps 2^k past `each`
    for (int64_t p = int64_t{1}; p <= r.invariant_checks; p *= 2) {
      if (p > each) powers.push_back(p);
    }
    const bool at_end = r.pool_checks > each + static_cast<int64_t>(powers.size());
    std::string when = each > 0 ? fmt::format("after each of the first {} steps", each) : "";
    if (!powers.empty()) {
      when += each > 0 ? ", then after " : "after ";
      when += powers.size() == 1 ? "step " : "steps ";
      // Every step when they are few; else the first two, "...", the last.
      when += powers.size() <= 3
                  ? fmt::format("{}", fmt::join(powers, ", "))
                  : fmt::format("{}, {}, ..., {}", powers[0], powers[1], powers.back());
    }
    if (at_end) when += when.empty() ? "at the end" : " and at the end";
    std::printf(" (whole-pool check %lld times on %lld blocks: %s)",
                static_cast<long long>(r.pool_checks), static_cast<long long>(r.num_blocks),
                when.c_str());
  }
  std::printf("\n");
  if (!r.first_violation.empty()) {
    std::printf("VIOLATION  at %lld tokens: %s\n", static_cast<long long>(r.first_violation_tokens),
                r.first_violation.c_str());
  }
  auto per = [](double s, int64_t n) { return n > 0 ? 1e9 * s / static_cast<double>(n) : 0.0; };
  std::printf(
      "time       wall %.3f s; runtime calls %.4f s (get_computed_blocks %.0f ns x %lld, "
      "allocate_slots %.0f ns x %lld, free %.0f ns x %lld); hashing %.4f s\n",
      r.wall_seconds, r.runtime_seconds,
      per(r.get_computed_blocks_seconds, r.get_computed_blocks_calls),
      static_cast<long long>(r.get_computed_blocks_calls),
      per(r.allocate_slots_seconds, r.allocate_slots_calls),
      static_cast<long long>(r.allocate_slots_calls), per(r.free_seconds, r.free_calls),
      static_cast<long long>(r.free_calls), r.hash_seconds);
  std::printf("decode     allocate_slots %.0f ns x %lld (running requests' decode steps)\n",
              per(r.decode_allocate_slots_seconds, r.decode_allocate_slots_calls),
              static_cast<long long>(r.decode_allocate_slots_calls));
}

int RunSimulate(const SimulateArgs& args) {
  const Result<uint64_t> seed = ParseUint64Flag(args.seed, "--seed");
  if (!seed.ok()) return ReportError(seed.status());
  Result<Workload> workload = args.workload_file.empty()
                                  ? BuiltinWorkload(args.workload)
                                  : Result<Workload>(InvalidArgument("unread"));
  if (!args.workload_file.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(args.workload_file, ec)) {
      return ReportError(InvalidArgument("--workload-file: '" + args.workload_file +
                                         "' is a directory; pass a JSON-lines file"));
    }
    auto text =
        internal::ReadTextFile(args.workload_file, kMaxWorkloadFileBytes, "--workload-file");
    if (!text.ok()) return ReportError(text.status());
    workload = ParseWorkloadJsonl(*text);
    if (!workload.ok()) {
      return ReportError(Status(workload.status().code(), "--workload-file '" + args.workload_file +
                                                              "': " + workload.status().message()));
    }
  }
  if (!workload.ok()) return ReportError(workload.status());
  auto config = ToLaunchConfig(args.launch);
  if (!config.ok()) return ReportError(config.status());
  Result<Plan> plan = InvalidArgument("unplanned");
  if (args.launch.model.empty() && args.workload_file.empty() && args.workload != "million") {
    // The built-in synthetic workloads plan their own model: the pool's size options apply, and
    // any other launch option is refused rather than ignored.
    auto options = ToLaunchOptions(args.launch);
    if (!options.ok()) return ReportError(options.status());
    for (const LaunchOption& option : LaunchOptionTable()) {
      if (option.name == "kv_cache_memory" || option.name == "num_gpu_blocks_override") continue;
      const bool given =
          std::visit([&](auto field) { return ((*options).*field).has_value(); }, option.field);
      if (!given) continue;
      return ReportError(InvalidArgument(fmt::format(
          "{} does not apply to --workload {}, which plans its own synthetic model; pass a "
          "MODEL to run the workload on a launch of yours",
          FlagName(option.name), args.workload)));
    }
    auto memory = KvCacheMemoryBytes(*options);
    if (!memory.ok()) return ReportError(memory.status());
    plan = DefaultPlanForWorkload(args.workload, *memory,
                                  options->num_gpu_blocks_override.value_or(0));
  } else {
    plan = PlanLaunch(*config);
  }
  if (!plan.ok()) return ReportError(plan.status());
  SimulateOptions options;
  options.seed = *seed;
  options.max_num_seqs = plan->cache.max_num_seqs;
  options.max_num_batched_tokens = plan->cache.max_num_batched_tokens;
  options.enable_prefix_caching = plan->prefix_caching();
  options.inject_dcp_scaled_recurrent_table = args.inject;
  options.check_slot_mapping = !args.no_slot_checks;
  options.check_invariants = !args.no_invariant_checks;
  // A pool the user sized (memory or blocks); else the simulator sizes it to fit the workload.
  const bool pool_given =
      !plan->kv_cache_memory_is_default || plan->cache.num_gpu_blocks_override > 0;
  if (pool_given) {
    options.num_blocks = plan->pool.num_blocks;
    options.num_blocks_source =
        plan->cache.num_gpu_blocks_override > 0 ? "--num-gpu-blocks-override" : "--kv-cache-memory";
  }
  // W2 runs on a pool of 4,096 blocks, as the reference shape states.
  if (args.workload == "w2" && !pool_given && args.launch.model.empty()) {
    options.num_blocks = 4096;
    options.num_blocks_source = "the W2 reference shape";
  }
  if (!args.json && isatty(STDERR_FILENO)) {
    options.progress = [](int64_t done, int64_t total) {
      const int width = 40;
      const double frac = total > 0 ? std::min(1.0, static_cast<double>(done) / total) : 0.0;
      const int filled = static_cast<int>(frac * width);
      std::fprintf(stderr, "\r  [%s%s] %3.0f%% of %lld tokens", std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), 100 * frac,
                   static_cast<long long>(total));
    };
  }
  auto report = Simulate(*plan, *workload, options);
  if (options.progress) std::fputs("\r\033[K", stderr);
  if (!report.ok()) return ReportError(report.status());
  if (args.json) {
    std::printf("%s\n", internal::JsonText(ReportJson(*report, *seed), 2).c_str());
  } else {
    PrintReport(*report, *seed);
  }
  return report->invariant_violations == 0 ? kExitOk : kExitRejected;
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sim = app.add_subcommand(
      "simulate", "drive the real runtime through a workload without weights; check invariants");
  AddLaunchFlags(sim, args->launch);
  sim->add_option(
      "--workload", args->workload,
      "built-in workload: million, decode-steady, prefix-hit, hybrid, w1, w2, w3, w4 (the "
      "reference shapes of docs/BENCHMARKS.md)");
  sim->add_option("--workload-file", args->workload_file,
                  "JSON lines: arrival_step, prompt_len, shared_prefix_id, shared_prefix_len, "
                  "decode_steps, accepted_drafts");
  sim->add_option("--seed", args->seed,
                  "token-id seed in [0, 2^64 - 1] (results are deterministic for a seed)");
  sim->add_flag("--json", args->json, "print the report as JSON");
  sim->add_flag("--inject-dcp-scaled-recurrent-table", args->inject,
                "demonstration: size recurrent tables cdiv(L, B*N) + S as before the fix");
  sim->add_flag("--no-slot-checks", args->no_slot_checks,
                "skip the per-token slot-mapping check (page ownership is still checked)");
  sim->add_flag("--no-invariant-checks", args->no_invariant_checks,
                "timing runs: skip the per-step ownership and CheckInvariants walks, which touch "
                "the whole pool and leave the runtime's data cold in cache for the next step");
  registry.Add(sim, [args] { return RunSimulate(*args); });
}

}  // namespace kvtopo::cli
