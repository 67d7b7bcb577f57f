// `kvtopo slots`: where does each token of one request live under DCP?
//
// Takes a sharded group's layout from flags, or, with a MODEL and/or --group, the geometry of a
// planned group (the launch flags of `kvtopo plan` apply). Prints, per rank, the local length
// and, per position, the owning rank and its slot; --json prints
//   {"local_lens": [per rank], "slot_mapping": [[per position, -1 if not owned], per rank]}.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "kvtopo/block_table.h"
#include "kvtopo/plan.h"
#include "kvtopo/slot_mapping.h"
#include "launch_flags.h"

namespace kvtopo::cli {
namespace {

struct SlotsArgs {
  LaunchFlags launch;  // MODEL and the launch flags; dcp, interleave and block size also here
  int64_t group = -1;  // a planned group; -1: the flags' own sharded layout
  int64_t seq_len = 0;
  std::string block_ids;
  bool json = false;
};

int Usage(const std::string& message) {
  std::fprintf(stderr, "kvtopo slots: %s\n", message.c_str());
  return kExitUsage;
}

Result<std::vector<int32_t>> ParseBlockIds(const std::string& text) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (item.empty() || used != item.size() || value < 0 || value > INT32_MAX) {
      return InvalidArgument(fmt::format(
          "--block-ids: '{}' is not a block id (a comma-separated list of non-negative integers)",
          item));
    }
    ids.push_back(static_cast<int32_t>(value));
    start = comma + 1;
  }
  return ids;
}

// Computes and prints the mapping for every rank of a layout template (rank filled in here).
int PrintSlots(SlotLayout layout, int64_t num_ranks, int64_t seq_len,
               const std::vector<int32_t>& kernel_row, bool json) {
  std::vector<TokenPos> positions;
  positions.reserve(seq_len);
  for (int64_t p = 0; p < seq_len; ++p) positions.emplace_back(p);
  std::vector<int64_t> local_lens(num_ranks);
  std::vector<std::vector<int64_t>> slots(num_ranks, std::vector<int64_t>(seq_len));
  for (int64_t r = 0; r < num_ranks; ++r) {
    layout.rank = Rank{static_cast<int32_t>(r)};
    Status status = ComputeSlotMapping(layout, kernel_row, positions, slots[r]);
    if (!status.ok()) return Usage(status.message() + "; pass more --block-ids");
    local_lens[r] = LocalSeqLen(TokenCount{seq_len}, layout.num_shards, r % layout.num_shards,
                                layout.interleave)
                        .value();
  }
  if (json) {
    nlohmann::json out{{"local_lens", local_lens}, {"slot_mapping", slots}};
    std::puts(out.dump().c_str());
    return kExitOk;
  }
  for (int64_t r = 0; r < num_ranks; ++r) {
    std::printf("rank %lld: local length %lld\n", static_cast<long long>(r),
                static_cast<long long>(local_lens[r]));
  }
  std::puts("position  rank  slot");
  for (int64_t p = 0; p < seq_len; ++p) {
    for (int64_t r = 0; r < num_ranks; ++r) {
      if (slots[r][p] == kPadSlot) continue;
      std::printf("%8lld  %4lld  %lld\n", static_cast<long long>(p), static_cast<long long>(r),
                  static_cast<long long>(slots[r][p]));
    }
  }
  return kExitOk;
}

// The MODEL / --group form: the layout and kernel blocks of a planned group's geometry.
int RunPlannedSlots(const SlotsArgs& args) {
  auto config = ToLaunchConfig(args.launch);
  if (!config.ok()) return ReportError(config.status());
  auto plan = PlanLaunch(*config);
  if (!plan.ok()) return ReportError(plan.status());
  if (!plan->accepted()) {
    return ReportError(Rejected(fmt::format("the launch is rejected: {} (run kvtopo check)",
                                            plan->diagnostics.front().message)));
  }
  const int64_t group = args.group < 0 ? 0 : args.group;
  if (group >= static_cast<int64_t>(plan->groups.size())) {
    return Usage(fmt::format("--group {} does not exist; the plan has groups 0..{}", group,
                             plan->groups.size() - 1));
  }
  const GroupGeometry& geometry = plan->groups[group].geometry;
  if (geometry.kind == CacheKind::kRecurrent) {
    return Usage(
        fmt::format("--group {} is a recurrent group: its state has no token slots", group));
  }
  if (args.seq_len < 0 || args.seq_len > geometry.max_model_len) {
    return Usage(
        fmt::format("--seq-len must be in [0, {}], got {}", geometry.max_model_len, args.seq_len));
  }
  auto ids = ParseBlockIds(args.block_ids);
  if (!ids.ok()) return Usage(ids.status().message());
  const int64_t needed =
      (args.seq_len + geometry.manager_block_size - 1) / geometry.manager_block_size;
  if (static_cast<int64_t>(ids->size()) < needed) {
    return Usage(
        fmt::format("--seq-len {} needs {} block ids in group {} ({} tokens per block "
                    "id), got {} in --block-ids",
                    args.seq_len, needed, group, geometry.manager_block_size, ids->size()));
  }
  BlockTable table(geometry, 1);
  std::vector<BlockId> blocks;
  for (int32_t id : *ids) blocks.emplace_back(id);
  if (Status st = table.Append(0, blocks); !st.ok()) return Usage(st.message());
  const auto row = table.Row(0).subspan(0, table.row_length(0));
  return PrintSlots(SlotLayoutFor(geometry, Rank{0}), geometry.dcp_size, args.seq_len,
                    std::vector<int32_t>(row.begin(), row.end()), args.json);
}

// The flags form: a sharded layout of N ranks, interleave I and B-token pages.
int RunFlagSlots(const SlotsArgs& args, int64_t dcp_size, int64_t interleave, int64_t block_size) {
  if (dcp_size <= 0) {
    return Usage(fmt::format("--decode-context-parallel-size must be positive, got {}", dcp_size));
  }
  if (dcp_size > 4096) {
    return Usage(fmt::format("--decode-context-parallel-size {} is beyond 4096 ranks", dcp_size));
  }
  if (interleave <= 0) {
    return Usage(
        fmt::format("--dcp-kv-cache-interleave-size must be positive, got {}", interleave));
  }
  if (block_size <= 0) {
    return Usage(fmt::format("--block-size must be positive, got {}", block_size));
  }
  if (args.seq_len < 0 || args.seq_len > (int64_t{1} << 24)) {
    return Usage(fmt::format("--seq-len must be in [0, 16777216], got {}", args.seq_len));
  }
  if (dcp_size > 1 && block_size % interleave != 0) {
    return Usage(fmt::format(
        "--block-size {} is not a multiple of --dcp-kv-cache-interleave-size {}; choose an "
        "interleave that divides the block size",
        block_size, interleave));
  }
  auto ids = ParseBlockIds(args.block_ids);
  if (!ids.ok()) return Usage(ids.status().message());
  const int64_t tokens_per_block = block_size * dcp_size;
  const int64_t needed = (args.seq_len + tokens_per_block - 1) / tokens_per_block;
  if (static_cast<int64_t>(ids->size()) < needed) {
    return Usage(fmt::format(
        "--seq-len {} needs {} block ids at --block-size {} x --decode-context-parallel-size {}, "
        "got {} in --block-ids",
        args.seq_len, needed, block_size, dcp_size, ids->size()));
  }
  for (int32_t id : *ids) {
    if (static_cast<int64_t>(id) * block_size + block_size > INT64_C(1) << 53) {
      return Usage(fmt::format("--block-ids: block id {} is too large", id));
    }
  }
  const SlotLayout layout{
      .num_shards = dcp_size, .interleave = interleave, .kernel_block_size = block_size};
  return PrintSlots(layout, dcp_size, args.seq_len, *ids, args.json);
}

int RunSlots(const SlotsArgs& args) {
  if (!args.launch.model.empty() || args.group >= 0) return RunPlannedSlots(args);
  auto options = ToLaunchOptions(args.launch);
  if (!options.ok()) return ReportError(options.status());
  return RunFlagSlots(args, options->decode_context_parallel_size.value_or(1),
                      options->dcp_kv_cache_interleave_size.value_or(1),
                      options->block_size.value_or(16));
}

}  // namespace

void RegisterSlotsCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<SlotsArgs>();
  CLI::App* sub = app.add_subcommand(
      "slots", "Show, per DCP rank, the local length and the slot of every token position");
  AddLaunchFlags(sub, args->launch);
  sub->add_option("--group", args->group,
                  "a planned group of MODEL (default launch without MODEL): its geometry gives "
                  "the layout");
  sub->add_option("--seq-len", args->seq_len, "tokens in the request")->required();
  sub->add_option("--block-ids", args->block_ids, "the request's block ids, e.g. 7,3,9")
      ->required();
  sub->add_flag("--json", args->json, "machine-readable output");
  registry.Add(sub, [args] { return RunSlots(*args); });
}

}  // namespace kvtopo::cli
