// The CLI's subcommands. Each command file registers its subcommand and a runner; main() runs
// the one the user chose and returns its exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kvtopo/status.h"

namespace kvtopo::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRejected = 1;
inline constexpr int kExitUsage = 2;

class CommandRegistry {
 public:
  void Add(CLI::App* sub, std::function<int()> run) { entries_.emplace_back(sub, std::move(run)); }
  int Run(const CLI::App* chosen) const {
    for (const auto& [sub, run] : entries_) {
      if (sub == chosen) return run();
    }
    return kExitUsage;
  }

 private:
  std::vector<std::pair<const CLI::App*, std::function<int()>>> entries_;
};

// An integer flag given as text (CLI11 would clamp an out-of-range value silently): digits with
// vLLM's k/K suffixes, in [min, max]; the error names the flag, the text and the range.
Result<int64_t> ParseIntFlag(const std::string& text, std::string_view flag, int64_t min,
                             int64_t max);
// An unsigned 64-bit flag (--seed): decimal digits only, in [0, 2^64 - 1].
Result<uint64_t> ParseUint64Flag(const std::string& text, std::string_view flag);

// Registers every subcommand (defined in tools/*_command.cc).
void RegisterCommands(CLI::App& app, CommandRegistry& registry);
void RegisterPlanCommands(CLI::App& app, CommandRegistry& registry);
void RegisterSimulateCommand(CLI::App& app, CommandRegistry& registry);
void RegisterProfilesCommand(CLI::App& app, CommandRegistry& registry);
void RegisterSlotsCommand(CLI::App& app, CommandRegistry& registry);
void RegisterVerifyCommand(CLI::App& app, CommandRegistry& registry);

}  // namespace kvtopo::cli
