#include "commands.h"

namespace kvtopo::cli {

void RegisterProfilesCommand(CLI::App& app, CommandRegistry& registry);

void RegisterCommands(CLI::App& app, CommandRegistry& registry) {
  RegisterProfilesCommand(app, registry);
}

}  // namespace kvtopo::cli
