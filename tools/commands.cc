#include "commands.h"

namespace kvtopo::cli {

void RegisterCommands(CLI::App& app, CommandRegistry& registry) {
  RegisterPlanCommands(app, registry);
  RegisterProfilesCommand(app, registry);
  RegisterSimulateCommand(app, registry);
}

}  // namespace kvtopo::cli
