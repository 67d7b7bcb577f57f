// LaunchConfig: what a user passes to their engine (vLLM flag names), and ModelCacheSpecs: the
// per-layer cache specs of the target and the draft that follow from it, with the launch
// diagnostics (DESIGN.md §3 rules 2, 3 and 5).
//
// The model layer (src/model/) reads a HF config.json or an embedded profile, applies the
// speculative config and the DCP placement rules, and validates the launch against the backend
// registry. The planner (src/plan/) groups the specs. Thread safety: value types; functions are
// pure except that BuildModelCacheSpecs reads files named by the config.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvtopo/dtype.h"
#include "kvtopo/geometry.h"
#include "kvtopo/spec.h"
#include "kvtopo/status.h"

namespace kvtopo {

enum class Severity { kError, kWarning, kInfo };
std::string_view SeverityName(Severity severity);

// One finding about a launch. `code` is stable (e.g. "dspark-dcp-backend"); `message` names the
// offending value, the rule and the knob to change.
struct Diagnostic {
  Severity severity = Severity::kError;
  std::string code;
  std::string message;
  bool operator==(const Diagnostic&) const = default;
};

struct CacheOptions {
  int64_t block_size = 0;     // --block-size; 0: the backend's preferred size
  int64_t max_model_len = 0;  // --max-model-len; 0: the model's max_position_embeddings
  KvCacheDtype kv_cache_dtype = KvCacheDtype::kAuto;  // --kv-cache-dtype
  int64_t max_num_seqs = 256;                         // --max-num-seqs
  int64_t max_num_batched_tokens = 8192;              // --max-num-batched-tokens
  bool enable_prefix_caching = true;                  // --[no-]enable-prefix-caching
  std::optional<RecurrentMode> mamba_cache_mode;      // --mamba-cache-mode; unset: by caching
  int64_t mamba_block_size = 0;                       // --mamba-block-size; 0: derived
  std::string attention_backend;  // --attention-backend; empty: the model's default
  int64_t prefix_match_unit = 0;  // hash block override; 0: GCD of group blocks
};

// --speculative-config, after parsing (see ParseSpeculativeConfig).
struct SpeculativeConfig {
  std::string method;  // eagle, eagle3, mtp, dspark, dflash, draft_model, ngram
  std::string model;   // a draft profile name or config path; empty: the target's default
  int64_t num_speculative_tokens = 0;
  // "auto", an upper-case backend name, or empty (inherit the target's backend).
  std::string draft_attention_backend;
  std::optional<KvCacheDtype> draft_kv_cache_dtype;  // unset: inherit --kv-cache-dtype
  int64_t dflash_draft_window_size = 0;              // 0: unbounded
};

struct LaunchConfig {
  std::string model;  // profile name, config.json path or a directory; empty: kimi-k3 default
  ParallelConfig parallel;
  CacheOptions cache;
  std::optional<SpeculativeConfig> speculative;
  bool shard_draft_flag = false;  // --shard-draft
  // The value of VLLM_DCP_SHARD_DRAFT in the environment, if set.
  std::optional<std::string> dcp_shard_draft_env;
  // VLLM_DSPARK_DRAFT_KV_WINDOW: > 0 bounds a DSpark draft's cache to a sliding window of this
  // many tokens (sliding-window MLA); 0 keeps the full draft cache.
  int64_t dspark_draft_kv_window = 0;
};

struct ModelCacheSpecs {
  std::string model_name;               // profile name or the config path
  std::string architecture;             // e.g. "KimiK3ForCausalLM"
  std::string draft_name;               // empty without a draft cache
  int64_t max_model_len = 0;            // resolved L
  int64_t num_speculative_tokens = 0;   // S
  int64_t num_lookahead_tokens = 0;     // research/vllm_kv_cache.md §5.8
  std::vector<LayerSpec> layers;        // target layers first, then draft layers
  std::vector<Diagnostic> diagnostics;  // launch validation; errors reject the launch
  std::string speculative_method;       // empty without --speculative-config
  std::string attention_backend;        // the target's resolved backend
  std::string draft_attention_backend;  // the draft's resolved backend; empty without a draft
};

}  // namespace kvtopo
