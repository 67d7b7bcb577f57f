#include "kvtopo/launch_options.h"

#include <fmt/format.h>

#include <utility>

#include "kvtopo/model.h"
#include "kvtopo/units.h"

namespace kvtopo {

Result<LaunchConfig> ToLaunchConfig(const LaunchOptions& o) {
  LaunchConfig c = o.model.empty() ? DefaultLaunchConfig() : LaunchConfig{};
  if (!o.model.empty()) c.model = o.model;
  const std::pair<const char*, const std::optional<int64_t>*> sizes[] = {
      {"--tensor-parallel-size", &o.tensor_parallel_size},
      {"--decode-context-parallel-size", &o.decode_context_parallel_size},
      {"--prefill-context-parallel-size", &o.prefill_context_parallel_size},
      {"--dcp-kv-cache-interleave-size", &o.dcp_kv_cache_interleave_size},
      {"--block-size", &o.block_size},
      {"--max-model-len", &o.max_model_len},
      {"--max-num-seqs", &o.max_num_seqs},
      {"--max-num-batched-tokens", &o.max_num_batched_tokens},
      {"--mamba-block-size", &o.mamba_block_size},
      {"--prefix-match-unit", &o.prefix_match_unit}};
  for (const auto& [flag, value] : sizes) {
    if (value->has_value() && **value <= 0) {
      return InvalidArgument(fmt::format("{} must be positive, got {}", flag, **value));
    }
  }
  auto set = [](const std::optional<int64_t>& value, int64_t& field) {
    if (value) field = *value;
  };
  set(o.tensor_parallel_size, c.parallel.tensor_parallel_size);
  set(o.decode_context_parallel_size, c.parallel.decode_context_parallel_size);
  set(o.prefill_context_parallel_size, c.parallel.prefill_context_parallel_size);
  set(o.dcp_kv_cache_interleave_size, c.parallel.dcp_kv_cache_interleave_size);
  set(o.block_size, c.cache.block_size);
  set(o.max_model_len, c.cache.max_model_len);
  set(o.max_num_seqs, c.cache.max_num_seqs);
  set(o.max_num_batched_tokens, c.cache.max_num_batched_tokens);
  set(o.mamba_block_size, c.cache.mamba_block_size);
  set(o.prefix_match_unit, c.cache.prefix_match_unit);
  if (o.kv_cache_dtype) {
    KVTOPO_ASSIGN_OR_RETURN(c.cache.kv_cache_dtype, ParseKvCacheDtype(*o.kv_cache_dtype));
  }
  if (o.enable_prefix_caching) c.cache.enable_prefix_caching = *o.enable_prefix_caching;
  if (o.mamba_cache_mode) {
    KVTOPO_ASSIGN_OR_RETURN(RecurrentMode mode, ParseRecurrentMode(*o.mamba_cache_mode));
    c.cache.mamba_cache_mode = mode;
  }
  if (o.attention_backend) c.cache.attention_backend = *o.attention_backend;
  if (o.speculative_config) {
    KVTOPO_ASSIGN_OR_RETURN(SpeculativeConfig spec, ParseSpeculativeConfig(*o.speculative_config));
    c.speculative = std::move(spec);
  }
  c.shard_draft_flag = o.shard_draft;
  c.dcp_shard_draft_env = o.dcp_shard_draft_env;
  return c;
}

Result<int64_t> KvCacheMemoryBytes(const LaunchOptions& o) {
  if (!o.kv_cache_memory) return int64_t{0};
  KVTOPO_ASSIGN_OR_RETURN(int64_t bytes, ParseByteSize(*o.kv_cache_memory));
  if (bytes <= 0) {
    return InvalidArgument(
        fmt::format("--kv-cache-memory must be positive, got '{}'", *o.kv_cache_memory));
  }
  return bytes;
}

}  // namespace kvtopo
