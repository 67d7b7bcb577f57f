#include "commands.h"

namespace kvtopo::cli {

void RegisterCommands(CLI::App& app, CommandRegistry& registry) {
  (void)app;
  (void)registry;
}

}  // namespace kvtopo::cli
