// The CLI's subcommands. Each command file registers its subcommand and a runner; main() runs
// the one the user chose and returns its exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <utility>
#include <vector>

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

// Registers every subcommand (defined in tools/*_command.cc).
void RegisterCommands(CLI::App& app, CommandRegistry& registry);
void RegisterPlanCommands(CLI::App& app, CommandRegistry& registry);
void RegisterSimulateCommand(CLI::App& app, CommandRegistry& registry);
void RegisterProfilesCommand(CLI::App& app, CommandRegistry& registry);
void RegisterSlotsCommand(CLI::App& app, CommandRegistry& registry);
void RegisterVerifyCommand(CLI::App& app, CommandRegistry& registry);

}  // namespace kvtopo::cli
