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

}  // namespace kvtopo::cli
