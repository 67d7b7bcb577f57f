// `kvtopo slots`: where does each token of one request live under DCP?
//
// Takes a sharded group's layout from flags (the MODEL / --group form, which reads a planned
// group's geometry, arrives with the planner: it only has to build a SlotLayout with
// SlotLayoutFor(geometry, rank) and call PrintSlots). Prints, per rank, the local length and,
// per position, the owning rank and its slot; --json prints
//   {"local_lens": [per rank], "slot_mapping": [[per position, -1 if not owned], per rank]}.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "kvtopo/block_table.h"
#include "kvtopo/slot_mapping.h"

namespace kvtopo::cli {
namespace {

struct SlotsArgs {
  int64_t dcp_size = 1;
  int64_t interleave = 1;
  int64_t block_size = 16;
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

int RunSlots(const SlotsArgs& args) {
  if (args.dcp_size <= 0) {
    return Usage(
        fmt::format("--decode-context-parallel-size must be positive, got {}", args.dcp_size));
  }
  if (args.dcp_size > 4096) {
    return Usage(
        fmt::format("--decode-context-parallel-size {} is beyond 4096 ranks", args.dcp_size));
  }
  if (args.interleave <= 0) {
    return Usage(
        fmt::format("--dcp-kv-cache-interleave-size must be positive, got {}", args.interleave));
  }
  if (args.block_size <= 0) {
    return Usage(fmt::format("--block-size must be positive, got {}", args.block_size));
  }
  if (args.seq_len < 0 || args.seq_len > (int64_t{1} << 24)) {
    return Usage(fmt::format("--seq-len must be in [0, 16777216], got {}", args.seq_len));
  }
  if (args.dcp_size > 1 && args.block_size % args.interleave != 0) {
    return Usage(fmt::format(
        "--block-size {} is not a multiple of --dcp-kv-cache-interleave-size {}; choose an "
        "interleave that divides the block size",
        args.block_size, args.interleave));
  }
  auto ids = ParseBlockIds(args.block_ids);
  if (!ids.ok()) return Usage(ids.status().message());
  const int64_t tokens_per_block = args.block_size * args.dcp_size;
  const int64_t needed = (args.seq_len + tokens_per_block - 1) / tokens_per_block;
  if (static_cast<int64_t>(ids->size()) < needed) {
    return Usage(fmt::format(
        "--seq-len {} needs {} block ids at --block-size {} x --decode-context-parallel-size {}, "
        "got {} in --block-ids",
        args.seq_len, needed, args.block_size, args.dcp_size, ids->size()));
  }
  for (int32_t id : *ids) {
    if (static_cast<int64_t>(id) * args.block_size + args.block_size > INT64_C(1) << 53) {
      return Usage(fmt::format("--block-ids: block id {} is too large", id));
    }
  }
  const SlotLayout layout{.num_shards = args.dcp_size,
                          .interleave = args.interleave,
                          .kernel_block_size = args.block_size};
  return PrintSlots(layout, args.dcp_size, args.seq_len, *ids, args.json);
}

}  // namespace

void RegisterSlotsCommand(CLI::App& app, CommandRegistry& registry) {
  auto args = std::make_shared<SlotsArgs>();
  CLI::App* sub = app.add_subcommand(
      "slots", "Show, per DCP rank, the local length and the slot of every token position");
  sub->add_option("--decode-context-parallel-size", args->dcp_size, "DCP ranks N (alias -dcp)")
      ->capture_default_str();
  sub->add_option("--dcp-kv-cache-interleave-size,--cp-kv-cache-interleave-size", args->interleave,
                  "tokens per round-robin chunk I")
      ->capture_default_str();
  sub->add_option("--block-size", args->block_size, "tokens per page on one rank B")
      ->capture_default_str();
  sub->add_option("--seq-len", args->seq_len, "tokens in the request")->required();
  sub->add_option("--block-ids", args->block_ids, "the request's block ids, e.g. 7,3,9")
      ->required();
  sub->add_flag("--json", args->json, "machine-readable output");
  registry.Add(sub, [args] { return RunSlots(*args); });
}

}  // namespace kvtopo::cli
