// LaunchOptions: the launch as a user spells it (vLLM flag names, text values, "not given"
// distinguished from defaults), and its one translation into a LaunchConfig. The CLI's flags and
// the Python module's keyword options both fill a LaunchOptions, so both mean the same thing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kvtopo/launch.h"
#include "kvtopo/status.h"

namespace kvtopo {

struct LaunchOptions {
  std::string model;  // empty: the seeds' default launch (DefaultLaunchConfig), options override
  std::optional<int64_t> tensor_parallel_size;
  std::optional<int64_t> decode_context_parallel_size;
  std::optional<int64_t> prefill_context_parallel_size;
  std::optional<int64_t> dcp_kv_cache_interleave_size;
  std::optional<int64_t> block_size;
  std::optional<int64_t> max_model_len;
  std::optional<int64_t> max_num_seqs;
  std::optional<int64_t> max_num_batched_tokens;
  std::optional<int64_t> mamba_block_size;
  std::optional<int64_t> prefix_match_unit;
  std::optional<std::string> kv_cache_dtype;
  std::optional<std::string> kv_cache_memory;  // bytes or a size with a unit ("12GiB")
  std::optional<bool> enable_prefix_caching;
  std::optional<std::string> mamba_cache_mode;
  std::optional<std::string> attention_backend;
  std::optional<std::string> speculative_config;  // JSON text
  bool shard_draft = false;
  std::optional<std::string> dcp_shard_draft_env;  // VLLM_DCP_SHARD_DRAFT, if set
};

// Errors name the flag: a non-positive size, an unknown dtype or mode, a malformed speculative
// config.
Result<LaunchConfig> ToLaunchConfig(const LaunchOptions& options);
// --kv-cache-memory in bytes; 0 when not given.
Result<int64_t> KvCacheMemoryBytes(const LaunchOptions& options);

}  // namespace kvtopo
