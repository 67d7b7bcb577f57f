// `kvtopo verify`: DCP attention computed from pages written through each rank's slot mapping,
// merged across ranks, against one rank (kvtopo/verify.h). Under mpirun each process holds its
// share of the DCP ranks; without it one process runs every rank.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "internal/json_text.h"
#include "kvtopo/plan.h"
#include "kvtopo/verify.h"
#include "launch_flags.h"
#include "verify/mpi_launch.h"
#include "verify/setup.h"
#ifdef KVTOPO_HAVE_MPI
#include "verify/mpi/mpi_transport.h"
#endif

namespace kvtopo::cli {
namespace {

// An integer flag read as text (CLI11 would clamp out-of-range values silently); its range is
// VerifyOptions' own, checked by kvtopo::Verify.
struct IntFlag {
  const char* name;
  int64_t VerifyOptions::*field;
  const char* help;
  std::string text;
};

struct VerifyArgs {
  LaunchFlags launch;
  VerifyOptions options;
  std::string seed;
  std::vector<IntFlag> int_flags = {
      {"--requests", &VerifyOptions::num_requests, "data requests (default 3)"},
      {"--decode-steps", &VerifyOptions::decode_steps,
       "decode steps per data request, each verifying 1 + S tokens (default 4)"},
      {"--preempt-after", &VerifyOptions::preempt_after_decode_steps,
       "preempt request 1 after this many decode steps and resume it; 0: never"},
      {"--mla-latent-dim", &VerifyOptions::mla_latent_dim, "MLA latent width (small dims)"},
      {"--mla-rope-dim", &VerifyOptions::mla_rope_dim, "MLA rope width (small dims)"},
      {"--mla-query-heads", &VerifyOptions::num_mla_query_heads, "MLA query heads"},
      {"--head-dim", &VerifyOptions::head_dim, "MHA key and value width (small dims)"},
      {"--kv-heads", &VerifyOptions::num_kv_heads, "MHA KV heads (small dims)"},
      {"--query-heads-per-kv", &VerifyOptions::num_query_heads_per_kv,
       "MHA query heads per KV head"},
      {"--num-blocks", &VerifyOptions::num_blocks,
       "pool size in blocks (default: sized to hold the requests)"},
  };
  bool no_max_length_request = false;
  std::vector<std::string> inject;
  bool json = false;
  std::string svg;
};

nlohmann::json ReportJson(const VerifyReport& r) {
  nlohmann::json groups = nlohmann::json::array();
  for (const VerifyGroupReport& g : r.groups) {
    groups.push_back({{"group", g.group},
                      {"kind", g.kind},
                      {"role", g.role},
                      {"placement", g.placement},
                      {"dcp_shard_count", g.dcp_shard_count},
                      {"block_size", g.block_size},
                      {"kernel_block_size", g.kernel_block_size},
                      {"interleave", g.interleave},
                      {"attention", g.attention},
                      {"queries", g.queries},
                      {"positions_owned", g.positions_owned},
                      {"rows_checked", g.rows_checked},
                      {"max_abs_error", g.max_abs_error},
                      {"max_rel_error", g.max_rel_error}});
  }
  nlohmann::json requests = nlohmann::json::array();
  for (const VerifyRequestReport& q : r.requests) {
    requests.push_back({{"request", q.request},
                        {"num_tokens", q.num_tokens},
                        {"table_only", q.table_only},
                        {"queries", q.queries},
                        {"prefix_hit_tokens", q.prefix_hit_tokens},
                        {"preemptions", q.preemptions},
                        {"rejected_drafts", q.rejected_drafts},
                        {"max_abs_error", q.max_abs_error},
                        {"max_rel_error", q.max_rel_error}});
  }
  nlohmann::json out = {{"model", r.model},
                        {"dcp_size", r.dcp_size},
                        {"processes", r.num_processes},
                        {"num_blocks", r.num_blocks},
                        {"steps", r.steps},
                        {"tokens", r.tokens_scheduled},
                        {"queries", r.queries},
                        {"preemptions", r.preemptions},
                        {"rejected_drafts", r.rejected_drafts},
                        {"prefix_hit_tokens", r.prefix_hit_tokens},
                        {"groups", groups},
                        {"requests", requests},
                        {"passed", r.passed},
                        {"wall_seconds", r.wall_seconds}};
  if (!r.passed) {
    out["failure"] = {{"group", r.failure.group},       {"request", r.failure.request},
                      {"position", r.failure.position}, {"rank", r.failure.rank},
                      {"check", r.failure.check},       {"message", r.failure.message}};
  }
  return out;
}

void PrintReport(const VerifyReport& r, const VerifyOptions& o) {
  std::printf("verify %s: %lld DCP ranks in %lld process%s, pool %lld blocks, seed %llu\n",
              r.model.c_str(), static_cast<long long>(r.dcp_size),
              static_cast<long long>(r.num_processes), r.num_processes == 1 ? "" : "es",
              static_cast<long long>(r.num_blocks), static_cast<unsigned long long>(o.seed));
  std::printf(
      "steps %lld, tokens %lld, queries %lld, preemptions %lld, rejected drafts %lld, "
      "prefix hits %lld tokens, %.2f s\n",
      static_cast<long long>(r.steps), static_cast<long long>(r.tokens_scheduled),
      static_cast<long long>(r.queries), static_cast<long long>(r.preemptions),
      static_cast<long long>(r.rejected_drafts), static_cast<long long>(r.prefix_hit_tokens),
      r.wall_seconds);
  std::printf("\n%3s %-18s %-6s %-10s %6s %6s %6s %4s %8s %10s %10s %10s\n", "grp", "kind", "role",
              "placement", "shards", "block", "kernel", "I", "queries", "positions", "max abs",
              "max rel");
  for (const VerifyGroupReport& g : r.groups) {
    if (g.attention) {
      // The interleave matters only where positions are striped over slices.
      const std::string interleave =
          g.dcp_shard_count > 1 ? std::to_string(g.interleave) : std::string("-");
      std::printf("%3d %-18s %-6s %-10s %6lld %6lld %6lld %4s %8lld %10lld %10.2e %10.2e\n",
                  g.group, g.kind.c_str(), g.role.c_str(), g.placement.c_str(),
                  static_cast<long long>(g.dcp_shard_count), static_cast<long long>(g.block_size),
                  static_cast<long long>(g.kernel_block_size), interleave.c_str(),
                  static_cast<long long>(g.queries), static_cast<long long>(g.positions_owned),
                  g.max_abs_error, g.max_rel_error);
    } else {
      std::printf(
          "%3d %-18s %-6s %-10s %6lld %6lld %6lld %4s %8s %10s  %lld row updates "
          "addressed\n",
          g.group, g.kind.c_str(), g.role.c_str(), g.placement.c_str(),
          static_cast<long long>(g.dcp_shard_count), static_cast<long long>(g.block_size),
          static_cast<long long>(g.kernel_block_size), "-", "-", "-",
          static_cast<long long>(g.rows_checked));
    }
  }
  std::printf("\n%3s %9s %8s %9s %8s %9s %10s %10s\n", "req", "tokens", "queries", "hits",
              "preempt", "rejected", "max abs", "max rel");
  for (const VerifyRequestReport& q : r.requests) {
    if (q.table_only) {
      std::printf("%3lld %9lld %8s %9lld %8lld %9s  table only (max-model-len)\n",
                  static_cast<long long>(q.request), static_cast<long long>(q.num_tokens), "-",
                  static_cast<long long>(q.prefix_hit_tokens),
                  static_cast<long long>(q.preemptions), "-");
      continue;
    }
    std::printf("%3lld %9lld %8lld %9lld %8lld %9lld %10.2e %10.2e\n",
                static_cast<long long>(q.request), static_cast<long long>(q.num_tokens),
                static_cast<long long>(q.queries), static_cast<long long>(q.prefix_hit_tokens),
                static_cast<long long>(q.preemptions), static_cast<long long>(q.rejected_drafts),
                q.max_abs_error, q.max_rel_error);
  }
  double max_rel = 0;
  for (const VerifyGroupReport& g : r.groups) max_rel = std::max(max_rel, g.max_rel_error);
  if (r.passed) {
    std::printf("\nPASS: merged DCP attention equals one rank; max relative error %.2e <= %.0e\n",
                max_rel, o.max_relative_error);
  } else {
    std::printf("\nFAIL (%s check): %s\n", r.failure.check.c_str(), r.failure.message.c_str());
  }
}

int RunVerify(VerifyArgs& args) {
  if (!args.seed.empty()) {
    const Result<uint64_t> seed = ParseUint64Flag(args.seed, "--seed");
    if (!seed.ok()) return ReportError(seed.status());
    args.options.seed = *seed;
  }
  for (const IntFlag& f : args.int_flags) {
    if (f.text.empty()) continue;
    const Result<int64_t> v = ParseIntFlag(f.text, f.name, std::numeric_limits<int64_t>::min(),
                                           std::numeric_limits<int64_t>::max());
    if (!v.ok()) return ReportError(v.status());
    args.options.*f.field = *v;
  }
  internal::VerifyFaults faults;
  for (const std::string& name : args.inject) {
    if (name == "dcp-scaled-recurrent-table") {
      faults.dcp_scaled_recurrent_table = true;
    } else if (name == "draft-local-length") {
      faults.wrong_draft_local_length = true;
    } else if (name == "foreign-slot-mapping") {
      faults.foreign_slot_mapping = true;
    } else {
      return ReportError(InvalidArgument(
          "--inject '" + name +
          "' is not a known fault; choose dcp-scaled-recurrent-table, draft-local-length or "
          "foreign-slot-mapping"));
    }
  }
  args.options.max_length_request = !args.no_max_length_request;
  std::unique_ptr<VerifyTransport> transport;
#ifdef KVTOPO_HAVE_MPI
  if (internal::LaunchedByMpiWithProcesses()) {
    auto mpi = internal::MpiTransport::Init();
    if (!mpi.ok()) return ReportError(mpi.status());
    transport = std::move(*mpi);
  }
#else
  if (internal::LaunchedByMpiWithProcesses()) {
    return ReportError(InvalidArgument(
        "this kvtopo was built without MPI; rebuild with MPI found (libopenmpi-dev) or run "
        "kvtopo verify without mpirun, which runs every rank in one process"));
  }
#endif
  if (!transport) transport = InProcessTransport();
  const bool root = transport->process() == 0;
  auto report_error = [&](const Status& status) {
    return root ? ReportError(status) : ExitCodeFor(status);
  };
  auto config = ToLaunchConfig(args.launch);
  if (!config.ok()) return report_error(config.status());
  auto plan = PlanLaunch(*config);
  if (!plan.ok()) return report_error(plan.status());
  auto report = internal::VerifyWithFaults(*plan, args.options, faults, *transport);
  if (!report.ok()) return report_error(report.status());
  if (root) {
    if (args.json) {
      std::printf("%s\n", internal::JsonText(ReportJson(*report), 2).c_str());
    } else {
      PrintReport(*report, args.options);
    }
    if (!args.svg.empty()) {
      std::ofstream out(args.svg);
      out << VerifyErrorSvg(*report, args.options.max_relative_error);
      if (!out) {
        return ReportError(NotFound("--svg: cannot write '" + args.svg + "'"));
      }
    }
  }
  return report->passed ? kExitOk : kExitRejected;
}

}  // namespace

void RegisterVerifyCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "prove the geometry with data: DCP attention from each rank's pages, merged, equals one "
      "rank (run under mpirun for one process per rank)");
  AddLaunchFlags(cmd, args->launch);
  VerifyOptions& o = args->options;
  cmd->add_option("--seed", args->seed, "seed of token ids, K/V rows and queries (default 0)");
  for (IntFlag& f : args->int_flags) cmd->add_option(f.name, f.text, f.help);
  cmd->add_flag("--no-max-length-request", args->no_max_length_request,
                "skip the table-only request of --max-model-len tokens");
  cmd->add_flag("--real-head-dims", o.real_head_dims,
                "take head widths from the model (MLA: latent + rope) instead of small ones");
  cmd->add_option("--max-relative-error", o.max_relative_error,
                  "tolerance per query and head: max |merged - reference| / max |reference|");
  cmd->add_option("--inject", args->inject,
                  "reproduce a known bug (must fail): dcp-scaled-recurrent-table, "
                  "draft-local-length, foreign-slot-mapping");
  cmd->add_flag("--json", args->json, "print the report as JSON");
  cmd->add_option("--svg", args->svg, "write a plot of the relative error by query position");
  registry.Add(cmd, [args] { return RunVerify(*args); });
}

}  // namespace kvtopo::cli
