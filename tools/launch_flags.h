// The launch flags shared by `plan`, `check`, `slots`, `simulate` and `verify`, registered from
// the one launch-option table (kvtopo/launch_options.h) under vLLM's names, so users can paste
// their `vllm serve` arguments.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/status.h"

namespace kvtopo::cli {

struct LaunchFlags {
  std::string model;
  // One value slot per LaunchOptionTable() entry, in table order (text as given, or a switch).
  struct Slot {
    std::string text;
    bool on = false;
  };
  std::vector<Slot> slots;
  // `vllm serve` flags rewritten by NormalizeVllmArgs: not used for planning, and
  // --speculative-config.KEY VALUE pairs as KEY=VALUE.
  std::vector<std::string> not_planned;
  std::vector<std::string> not_planned_values;  // each occurrence's value, as JSON
  std::vector<std::string> speculative_keys;
  // --hf-overrides.KEY[.KEY...][+] VALUE pairs as KEY=VALUE.
  std::vector<std::string> hf_override_keys;
  // --kv-transfer-config.KEY[.KEY...] VALUE pairs as KEY=VALUE.
  std::vector<std::string> kv_transfer_keys;
  // --ec-transfer-config.KEY[.KEY...] VALUE pairs as KEY=VALUE.
  std::vector<std::string> ec_transfer_keys;
  // --compilation-config.KEY[.KEY...] VALUE pairs as KEY=VALUE.
  std::vector<std::string> compilation_keys;
  // --attention-config.KEY[.KEY...] VALUE pairs as KEY=VALUE.
  std::vector<std::string> attention_keys;
  // --kernel-config.KEY[.KEY...] VALUE pairs as KEY=VALUE.
  std::vector<std::string> kernel_keys;
  std::vector<std::string> eplb_keys;
  std::vector<std::string> ir_op_priority_keys;
  std::vector<std::string> default_mm_loras_keys;
  // Warnings NormalizeVllmArgs found (a --config file's dropped switches, --config=FILE), as
  // JSON {code, message}.
  std::vector<std::string> launch_diagnostics;
  // Each launch-option occurrence as CANONICAL=TYPED (the name, an alias or a short flag, as
  // typed), in order: messages about a value name the flag as its last occurrence spelled it.
  std::vector<std::string> typed_spellings;
  CLI::App* app = nullptr;
};

// The flag of a launch option: "max_model_len" -> "--max-model-len".
std::string FlagName(std::string_view option_name);

// Registers MODEL (optional positional) and every launch option on `app`.
void AddLaunchFlags(CLI::App* app, LaunchFlags& flags);

// The flags that were given, as LaunchOptions, with the environment variables the engine reads
// (VLLM_DCP_SHARD_DRAFT, VLLM_K3_KV_GROUP_SIZE, VLLM_DSPARK_DRAFT_KV_WINDOW) for options not
// given as flags.
Result<LaunchOptions> ToLaunchOptions(const LaunchFlags& flags);
// The launch the flags describe: the default launch when no model is given (flags override it),
// else vLLM's defaults plus the flags.
Result<LaunchConfig> ToLaunchConfig(const LaunchFlags& flags);

// Maps a Status to the CLI exit code: rejected 1, everything else the user caused 2.
int ExitCodeFor(const Status& status);
// Prints "kvtopo: <message>" on one line to stderr and returns the exit code.
int ReportError(const Status& status);

// Rewrites a pasted `vllm serve` command line for CLI11: vLLM's single-dash aliases (-tp, -dcp,
// ...) to long names, underscores in long names to dashes (--max_model_len), dotted
// --speculative-config.KEY VALUE to a hidden KEY=VALUE option, and the flags of `vllm serve`
// that do not affect the plan (with their values) to a hidden record the plan reports. A flag the
// chosen subcommand of `app` declares itself (e.g. simulate --seed) keeps its own meaning.
// `--config FILE` (a YAML file of flags) is read here and its flags put before the command
// line's; errors: a file that cannot be read as the engine reads it, or --config twice.
Result<std::vector<std::string>> NormalizeVllmArgs(int argc, char** argv, const CLI::App& app);

}  // namespace kvtopo::cli
