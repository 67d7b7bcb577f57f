// vllm_config: a `vllm serve --config FILE` YAML text -> the engine's arguments
// (VllmConfigFileArgsFromYaml) -> the launch options they name, set through the launch-option
// table as the CLI sets them -> LaunchConfig -> plan. Oracles: the arguments start with a flag,
// every flag is "--" and a key, and a diagnostic names a dropped key.
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_targets.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "kvtopo/status.h"

namespace kvtopo::fuzz {

Reached FuzzVllmConfig(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<VllmConfigFileArgs> file = VllmConfigFileArgsFromYaml(text, "fuzz.yaml");
  if (!file.ok()) {
    KVTOPO_CHECK_MSG(file.status().message().starts_with("--config fuzz.yaml: "),
                     "a config-file error that does not name the file: " + file.status().message());
    return Reached::kStopped;
  }
  const std::vector<std::string>& args = file->args;
  KVTOPO_CHECK_MSG(args.empty() || args.front().starts_with("--"),
                   "a config file's arguments start with a value: " + args.front());
  for (const Diagnostic& d : file->diagnostics) {
    KVTOPO_CHECK_MSG(
        d.code == "config-file-false-dropped" && d.message.find(": false'") != std::string::npos,
        "an unexpected config-file diagnostic: " + d.message);
  }
  // Launch options with one value each, as the command line would set them; the model stays
  // the default launch and --hf-config-path is dropped (the target never reads the file system).
  LaunchOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].starts_with("--")) continue;
    const LaunchOption* option = FindLaunchOption(args[i]);
    if (option == nullptr) continue;
    if (option->name == "hf_config_path") {  // a path to read: the target reads no files
      ++i;
      continue;
    }
    const std::string& flag = args[i];
    Status set = InvalidArgument("no value");
    if (option->value == OptionValue::kSwitch) {
      set = SetLaunchOption(options, *option, true, flag);
    } else if (i + 1 < args.size()) {
      set = SetLaunchOption(options, *option, args[i + 1], flag);
      ++i;
    }
    if (!set.ok()) return Reached::kExercised;
  }
  Result<LaunchConfig> config = ToLaunchConfig(options);
  if (config.ok() && !(config->speculative && !config->speculative->model.empty())) {
    (void)PlanLaunch(*config);
  }
  return Reached::kExercised;
}

}  // namespace kvtopo::fuzz
