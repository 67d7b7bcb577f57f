#include "commands.h"

#include <string_view>
#include <utility>

namespace kvtopo::cli {

void RegisterCommands(CLI::App& app, CommandRegistry& registry) {
  RegisterPlanCommands(app, registry);
  RegisterProfilesCommand(app, registry);
  RegisterSimulateCommand(app, registry);
  RegisterSlotsCommand(app, registry);
  RegisterVerifyCommand(app, registry);
}

std::vector<std::string> NormalizeVllmAliases(int argc, char** argv) {
  static constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"-tp", "--tensor-parallel-size"},
      {"-dcp", "--decode-context-parallel-size"},
      {"-pcp", "--prefill-context-parallel-size"}};
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    for (const auto& [alias, name] : kAliases) {
      const std::string_view arg = args[i];
      if (arg == alias) {
        args[i] = std::string(name);
      } else if (arg.starts_with(alias) && arg.size() > alias.size() && arg[alias.size()] == '=') {
        args[i] = std::string(name) + std::string(arg.substr(alias.size()));
      }
    }
  }
  return args;
}

}  // namespace kvtopo::cli
