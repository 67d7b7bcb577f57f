// kvtopo: plan, check and simulate paged KV caches under DCP, speculative decoding and hybrids.
// Exit codes: 0 accepted / success, 1 configuration rejected, 2 usage error.
#include <cstdio>
#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"

namespace {

// vLLM spells some long flags with one dash (-tp, -dcp, -pcp); CLI11 reads one-dash names as
// single letters, so they are rewritten to their long form first.
std::vector<std::string> NormalizeArgs(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (std::string& a : args) {
    if (a == "-tp") a = "--tensor-parallel-size";
    if (a == "-dcp") a = "--decode-context-parallel-size";
    if (a == "-pcp") a = "--prefill-context-parallel-size";
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kvtopo — KV-cache topology planner and runtime for decode context parallelism, "
      "speculative decoding and hybrid models"};
  app.set_version_flag("--version", std::string("kvtopo ") + KVTOPO_VERSION);
  app.require_subcommand(0, 1);
  kvtopo::cli::CommandRegistry registry;
  kvtopo::cli::RegisterCommands(app, registry);
  try {
    std::vector<std::string> args = NormalizeArgs(argc, argv);
    std::reverse(args.begin(), args.end());
    args.pop_back();  // the program name
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "kvtopo: %s\n", e.what());
    return kvtopo::cli::kExitUsage;
  }
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  return registry.Run(app.get_subcommands().front());
}
