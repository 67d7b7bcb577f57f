// kvtopo: plan, check and simulate paged KV caches under DCP, speculative decoding and hybrids.
// Exit codes: 0 accepted / success, 1 configuration rejected, 2 usage error (or output that
// could not be written).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "commands.h"
#include "launch_flags.h"

int main(int argc, char** argv) {
  CLI::App app{
      "kvtopo — KV-cache topology planner and runtime for decode context parallelism, "
      "speculative decoding and hybrid models"};
  app.set_version_flag("--version", std::string("kvtopo ") + KVTOPO_VERSION);
  app.require_subcommand(0, 1);
  kvtopo::cli::CommandRegistry registry;
  kvtopo::cli::RegisterCommands(app, registry);
  // CLI11 wants argv in reverse for the vector overload.
  kvtopo::Result<std::vector<std::string>> normalized =
      kvtopo::cli::NormalizeVllmArgs(argc, argv, app);
  if (!normalized.ok()) return kvtopo::cli::ReportError(normalized.status());
  std::vector<std::string> args = std::move(*normalized);
  args.erase(args.begin());
  std::reverse(args.begin(), args.end());
  try {
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
  int code = 0;
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stdout);
  } else {
    try {
      code = registry.Run(app.get_subcommands().front());
    } catch (const std::bad_alloc&) {
      // A pool or workload larger than this machine's memory: a message, not an abort.
      std::fprintf(stderr,
                   "kvtopo: out of memory; a smaller pool (--kv-cache-memory, "
                   "--num-gpu-blocks-override, verify's --num-blocks) or workload needs less\n");
      return kvtopo::cli::kExitUsage;
    }
  }
  // Output that could not be written (a full disk, a closed file) is an error, not a success
  // with the report lost.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "kvtopo: writing the output failed: %s\n", std::strerror(errno));
    return kvtopo::cli::kExitUsage;
  }
  return code;
}
