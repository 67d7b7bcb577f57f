// `kvtopo slots`: where does each token of one request live under DCP?
//
// Takes a sharded group's layout from flags, or, with a MODEL, --group and/or --layer, the
// geometry of a planned group (the launch flags of `kvtopo plan` apply); --layer names one layer,
// whose compress ratio then applies (DeepSeek-V4's compressed caches: a row per that many
// positions). Prints, per rank, the local length (rows, for a compressed layer) and, per
// position, the owning rank and its slot; --json prints
//   {"local_lens": [per rank], "slot_mapping": [[per position, -1 if not owned], per rank],
//    "compress_ratio": c}.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "kvtopo/block_table.h"
#include "kvtopo/limits.h"
#include "kvtopo/plan.h"
#include "kvtopo/slot_mapping.h"
#include "launch_flags.h"

namespace kvtopo::cli {
namespace {

struct SlotsArgs {
  LaunchFlags launch;  // MODEL and the launch flags; dcp, interleave and block size also here
  int64_t group = -1;  // a planned group; -1: the flags' own sharded layout
  std::string layer;   // a planned layer (its group, and its compress ratio); empty: none
  int64_t seq_len = 0;
  // The two as given: CLI11 would clamp an out-of-range integer silently.
  std::string group_text;
  std::string seq_len_text;
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
    std::string item = text.substr(start, comma - start);
    // "7, 3" reads as "7,3".
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    const bool digits = !item.empty() && item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
      return InvalidArgument(fmt::format(
          "--block-ids: '{}' is not a block id (a comma-separated list of non-negative integers)",
          item));
    }
    int64_t value = 0;
    for (char c : item) {
      value = value * 10 + (c - '0');
      if (value > INT32_MAX) {
        return InvalidArgument(
            fmt::format("--block-ids: {} is beyond the largest block id, {} (block ids are 32-bit)",
                        item, INT32_MAX));
      }
    }
    ids.push_back(static_cast<int32_t>(value));
    start = comma + 1;
  }
  return ids;
}

// Slots stay exact in JSON readers that parse numbers as doubles.
constexpr int64_t kMaxSlot = int64_t{1} << 53;

// A planned group's geometry, and the compress ratio of the layer asked for (1 for none).
struct SlotsLayout {
  GroupGeometry geometry;
  int64_t compress_ratio = 1;
};

// Prints, for every rank of `layout`'s group, the local length and the slot of each position
// of a `seq_len`-token request whose block ids are `ids`.
int PrintSlots(const SlotsLayout& layout, int64_t seq_len, const std::vector<int32_t>& ids,
               bool json) {
  const GroupGeometry& geometry = layout.geometry;
  const int64_t c = layout.compress_ratio;
  if (geometry.kind() == CacheKind::kRecurrent) {
    return Usage("a recurrent group's state has no token slots; choose an attention group");
  }
  if (seq_len < 0 || seq_len > geometry.max_model_len()) {
    return Usage(
        fmt::format("--seq-len must be in [0, {}], got {}", geometry.max_model_len(), seq_len));
  }
  const int64_t num_ranks = geometry.dcp_size();
  if (seq_len > kMaxSlotsCells / num_ranks) {
    return Usage(fmt::format("{} ranks x --seq-len {} is more than the {} slots one call prints",
                             num_ranks, seq_len, kMaxSlotsCells));
  }
  const int64_t needed = geometry.ColumnsFor(seq_len);
  if (static_cast<int64_t>(ids.size()) < needed) {
    return Usage(fmt::format(
        "--seq-len {} needs {} block ids ({} tokens per block id), got {} in --block-ids", seq_len,
        needed, geometry.manager_block_size(), ids.size()));
  }
  for (int32_t id : ids) {
    if (id >= kMaxSlot / geometry.block_size()) {
      return Usage(fmt::format("--block-ids: block id {} of {}-token pages puts slots past 2^53",
                               id, geometry.block_size()));
    }
  }
  BlockTable table(geometry, 1);
  std::vector<BlockId> blocks(ids.begin(), ids.begin() + std::min<int64_t>(needed, ids.size()));
  if (Status st = table.Append(0, blocks); !st.ok()) return Usage(st.message());
  const auto row = table.Row(0).subspan(0, table.row_length(0));
  std::vector<TokenPos> positions;
  positions.reserve(seq_len);
  for (int64_t p = 0; p < seq_len; ++p) positions.emplace_back(p);
  std::vector<int64_t> local_lens(num_ranks);
  std::vector<std::vector<int64_t>> slots(num_ranks, std::vector<int64_t>(seq_len));
  for (int64_t r = 0; r < num_ranks; ++r) {
    const Rank rank{static_cast<int32_t>(r)};
    SlotLayout slot_layout = geometry.SlotLayoutFor(rank);
    slot_layout.compress_ratio = c;
    Status status = ComputeSlotMapping(slot_layout, row, positions, slots[r]);
    if (status.code() == StatusCode::kInvalidArgument) return ReportError(status);
    if (!status.ok()) return Usage(status.message() + "; pass more --block-ids");
    // A compressed layer's local length is its rows: the positions given a slot.
    local_lens[r] = c > 1 ? std::count_if(slots[r].begin(), slots[r].end(),
                                          [](int64_t slot) { return slot != kPadSlot; })
                          : geometry.LocalLength(rank, TokenCount{seq_len}).value();
  }
  if (json) {
    nlohmann::json out{{"local_lens", local_lens}, {"slot_mapping", slots}, {"compress_ratio", c}};
    std::puts(out.dump().c_str());
    return kExitOk;
  }
  for (int64_t r = 0; r < num_ranks; ++r) {
    std::printf("rank %lld: local length %lld%s\n", static_cast<long long>(r),
                static_cast<long long>(local_lens[r]),
                c > 1 ? fmt::format(" (rows, one per {} positions)", c).c_str() : "");
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

// The MODEL / --group / --layer form: a planned group's geometry.
Result<SlotsLayout> PlannedGeometry(const SlotsArgs& args) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchConfig config, ToLaunchConfig(args.launch));
  KVTOPO_ASSIGN_OR_RETURN(Plan plan, PlanLaunch(config));
  if (!plan.accepted()) {
    return Rejected(fmt::format("the launch is rejected: {} (run kvtopo check)",
                                plan.diagnostics.front().message));
  }
  if (!args.layer.empty()) {
    for (const PlannedGroup& g : plan.groups) {
      for (const LayerSpec& s : g.layer_specs) {
        if (s.name != args.layer) continue;
        if (args.group >= 0 && args.group != g.id.value()) {
          return InvalidArgument(fmt::format("--layer '{}' is in group {}, not in --group {}",
                                             args.layer, g.id.value(), args.group));
        }
        return SlotsLayout{.geometry = g.geometry, .compress_ratio = s.compress_ratio};
      }
    }
    return InvalidArgument(fmt::format(
        "--layer '{}' is no layer of the plan (kvtopo plan --json lists them under \"layers\")",
        args.layer));
  }
  const int64_t group = args.group < 0 ? 0 : args.group;
  if (group >= static_cast<int64_t>(plan.groups.size())) {
    return InvalidArgument(fmt::format("--group {} does not exist; the plan has groups 0..{}",
                                       group, plan.groups.size() - 1));
  }
  const PlannedGroup& g = plan.groups[group];
  for (const LayerSpec& s : g.layer_specs) {
    if (s.compress_ratio > 1) {
      return Rejected(fmt::format(
          "group {} holds layer '{}', compressed {} times (a row per {} positions), whose slots "
          "are not a position's each: name the layer with --layer (its compress ratio applies), "
          "or choose a group of uncompressed layers with --group",
          group, s.name, s.compress_ratio, s.compress_ratio));
    }
  }
  return SlotsLayout{.geometry = g.geometry};
}

// The flags form: one sharded full-attention layer of B-token pages over N ranks with
// interleave I (default 1 rank, interleave 1, B = 16), long enough for --seq-len.
Result<GroupGeometry> FlagGeometry(const SlotsArgs& args) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchOptions options, ToLaunchOptions(args.launch));
  const int64_t dcp = options.decode_context_parallel_size.value_or(1);
  const LayerSpec spec{.name = "slots",
                       .block_size = options.block_size.value_or(16),
                       .head_size = 1,
                       .head_size_v = 1};
  const ParallelConfig parallel{.tensor_parallel_size = dcp,
                                .decode_context_parallel_size = dcp,
                                .dcp_kv_cache_interleave_size = EngineInterleave(options, dcp)};
  return ComputeGroupGeometry(spec, parallel,
                              {.max_model_len = std::max<int64_t>(args.seq_len, 1)});
}

int RunSlots(SlotsArgs args) {
  const bool group_given = args.launch.app->count("--group") > 0;
  if (group_given) {
    const Result<int64_t> group = ParseIntFlag(args.group_text, "--group", 0, kMaxInt32);
    if (!group.ok()) return Usage(group.status().message());
    args.group = *group;
  }
  const Result<int64_t> seq_len = ParseIntFlag(args.seq_len_text, "--seq-len", 0, kMaxModelLen);
  if (!seq_len.ok()) return Usage(seq_len.status().message());
  args.seq_len = *seq_len;
  const bool layer_given = args.launch.app->count("--layer") > 0;
  if (layer_given && args.layer.empty()) return Usage("--layer needs a layer's name, got ''");
  const bool planned = !args.launch.model.empty() || group_given || layer_given;
  Result<SlotsLayout> layout = InvalidArgument("unplanned");
  if (planned) {
    layout = PlannedGeometry(args);
  } else {
    Result<GroupGeometry> geometry = FlagGeometry(args);
    layout = geometry.ok() ? Result<SlotsLayout>(SlotsLayout{.geometry = *geometry})
                           : Result<SlotsLayout>(geometry.status());
  }
  if (!layout.ok()) {
    // A flag layout the geometry rejects is a usage error of this command.
    return !planned && layout.status().code() == StatusCode::kRejected
               ? Usage(layout.status().message())
               : ReportError(layout.status());
  }
  auto ids = ParseBlockIds(args.block_ids);
  if (!ids.ok()) return Usage(ids.status().message());
  return PrintSlots(*layout, args.seq_len, *ids, args.json);
}

}  // namespace

void RegisterSlotsCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<SlotsArgs>();
  CLI::App* sub = app.add_subcommand(
      "slots", "Show, per DCP rank, the local length and the slot of every token position");
  AddLaunchFlags(sub, args->launch);
  sub->add_option("--group", args->group_text,
                  "a planned group of MODEL (default launch without MODEL): its geometry gives "
                  "the layout");
  sub->add_option("--layer", args->layer,
                  "a planned layer of MODEL (its name in kvtopo plan --json): its group's "
                  "geometry and its compress ratio (DeepSeek-V4's compressed caches keep a row "
                  "per that many positions) give the layout");
  sub->add_option("--seq-len", args->seq_len_text, "tokens in the request")->required();
  sub->add_option("--block-ids", args->block_ids, "the request's block ids, e.g. 7,3,9")
      ->required();
  sub->add_flag("--json", args->json, "machine-readable output");
  registry.Add(sub, [args] { return RunSlots(*args); });
}

}  // namespace kvtopo::cli
