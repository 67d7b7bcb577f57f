// `kvtopo profiles`: lists the embedded profiles (targets, drafts and the backend registry).
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "commands.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"
#include "launch_flags.h"

namespace kvtopo::cli {

void RegisterProfilesCommand(CLI::App& app, CommandRegistry& registry) {
  CLI::App* sub =
      app.add_subcommand("profiles", "List the embedded model, draft and backend profiles");
  auto architectures = std::make_shared<bool>(false);
  sub->add_flag("--architectures", *architectures,
                "list the config.json architectures kvtopo plans instead, one a line");
  registry.Add(sub, [architectures] {
    if (*architectures) {
      for (const std::string& name : ListArchitectures()) fmt::print("{}\n", name);
      return kExitOk;
    }
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

  auto markdown = std::make_shared<bool>(false);
  CLI::App* options =
      app.add_subcommand("options", "List the launch options (flags, Python keywords, variables)");
  options->add_flag("--markdown", *markdown, "print docs/launch-options.md");
  registry.Add(options, [markdown] {
    if (*markdown) {
      std::fputs(LaunchOptionsMarkdown().c_str(), stdout);
      return kExitOk;
    }
    for (const LaunchOption& o : LaunchOptionTable()) {
      fmt::print("{:<34} {:<8} {}\n", FlagName(o.name), OptionValueName(o.value), o.help);
    }
    return kExitOk;
  });
}

}  // namespace kvtopo::cli
