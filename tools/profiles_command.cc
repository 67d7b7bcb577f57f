// `kvtopo profiles`: lists the embedded profiles (targets, drafts and the backend registry).
#include <fmt/format.h>

#include <cstdio>

#include "commands.h"
#include "kvtopo/model.h"

namespace kvtopo::cli {

void RegisterProfilesCommand(CLI::App& app, CommandRegistry& registry) {
  CLI::App* sub =
      app.add_subcommand("profiles", "List the embedded model, draft and backend profiles");
  registry.Add(sub, [] {
    Result<std::vector<ProfileInfo>> profiles = ListProfiles();
    if (!profiles.ok()) {
      std::fprintf(stderr, "kvtopo: %s\n", profiles.status().ToString().c_str());
      return kExitRejected;
    }
    fmt::print("{:<24} {:<9} {:<34} {:>6}\n", "name", "kind", "architecture", "layers");
    for (const ProfileInfo& p : *profiles) {
      fmt::print("{:<24} {:<9} {:<34} {:>6}\n", p.name, p.kind,
                 p.architecture.empty() ? "-" : p.architecture, p.num_layers);
    }
    return kExitOk;
  });
}

}  // namespace kvtopo::cli
