// The launch flags shared by `plan`, `check`, `slots` and `simulate`, named as vLLM names them so
// users can paste their `vllm serve` arguments.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/status.h"

namespace kvtopo::cli {

struct LaunchFlags {
  std::string model;
  int64_t tensor_parallel_size = 0;
  int64_t decode_context_parallel_size = 0;
  int64_t prefill_context_parallel_size = 0;
  int64_t interleave = 0;
  int64_t block_size = 0;
  int64_t max_model_len = 0;
  std::string kv_cache_dtype;
  std::string kv_cache_memory;
  int64_t max_num_seqs = 0;
  int64_t max_num_batched_tokens = 0;
  bool enable_prefix_caching = false;
  bool no_enable_prefix_caching = false;
  std::string mamba_cache_mode;
  int64_t mamba_block_size = 0;
  std::string attention_backend;
  std::string speculative_config;
  bool shard_draft = false;
  int64_t prefix_match_unit = 0;
  CLI::App* app = nullptr;
};

// Registers MODEL (optional positional) and the launch flags on `app`.
void AddLaunchFlags(CLI::App* app, LaunchFlags& flags);

// The flags that were given, as LaunchOptions (kvtopo/launch_options.h), with
// VLLM_DCP_SHARD_DRAFT read from the environment.
Result<LaunchOptions> ToLaunchOptions(const LaunchFlags& flags);
// The launch the flags describe: the seeds' default when no model is given (flags override it),
// else vLLM's defaults plus the flags.
Result<LaunchConfig> ToLaunchConfig(const LaunchFlags& flags);
// --kv-cache-memory in bytes; 0 when not given.
Result<int64_t> KvCacheMemoryBytes(const LaunchFlags& flags);

// Maps a Status to the CLI exit code: rejected 1, everything else the user caused 2.
int ExitCodeFor(const Status& status);
// Prints "kvtopo: <message>" on one line to stderr and returns the exit code.
int ReportError(const Status& status);

}  // namespace kvtopo::cli
