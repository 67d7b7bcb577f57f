// LaunchConfig: what a user passes to their engine (vLLM flag names), and ModelCacheSpecs: the
// per-layer cache specs of the target and the draft that follow from it, with the launch
// diagnostics (DESIGN.md §3 rules 2, 3 and 5).
//
// The model layer (src/model/) reads a HF config.json or an embedded profile, applies the
// speculative config and the DCP placement rules, and validates the launch against the backend
// registry. The planner (src/plan/) groups the specs. Thread safety: value types; functions are
// pure except that BuildModelCacheSpecs reads files named by the config.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvtopo/backend.h"
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
  // A finding many layers share is one diagnostic: every layer it stands for, the first named in
  // the message ("... (and 60 other layers) ..."). Empty for a finding about one layer or none.
  std::vector<std::string> layers;
  bool operator==(const Diagnostic&) const = default;
};

struct CacheOptions {
  int64_t block_size = 0;     // --block-size; 0: the backend's preferred size
  int64_t max_model_len = 0;  // --max-model-len; 0: the model's (RoPE-scaled) maximum length
  KvCacheDtype kv_cache_dtype = KvCacheDtype::kAuto;  // --kv-cache-dtype
  // --kv-cache-dtype-skip-layers: entries the engine compares whole with each attention layer's
  // index ("3") or, for "sliding_window", with its having a window; those layers keep the model
  // dtype.
  std::vector<std::string> kv_cache_dtype_skip_layers;
  int64_t max_num_seqs = 256;             // --max-num-seqs
  int64_t max_num_batched_tokens = 8192;  // --max-num-batched-tokens
  // --[no-]async-scheduling: batches overlap, so windowed caches hold more steps' tokens
  // (MaxInFlightTokens).
  bool async_scheduling = true;
  int64_t num_gpu_blocks_override = 0;  // --num-gpu-blocks-override; 0: memory // bytes per block
  int64_t kv_group_size = 0;  // --kv-group-size / VLLM_K3_KV_GROUP_SIZE; 0: the min-bucket rule
  // --[no-]enable-prefix-caching; unset: the engine's default for the model (on, but off for a
  // hybrid model with recurrent layers: ModelConfig.is_prefix_caching_supported).
  std::optional<bool> enable_prefix_caching;
  std::optional<RecurrentMode> mamba_cache_mode;  // --mamba-cache-mode; unset: by caching
  int64_t mamba_block_size = 0;                   // --mamba-block-size; 0: derived
  std::string attention_backend;                  // --attention-backend; empty: the model's default
  int64_t prefix_match_unit = 0;                  // hash block override; 0: GCD of group blocks
  // --mamba-cache-dtype / --mamba-ssm-cache-dtype: recurrent conv and GDN temporal state dtypes;
  // auto: the model dtype (KDA's recurrent state is always float32).
  KvCacheDtype mamba_cache_dtype = KvCacheDtype::kAuto;
  KvCacheDtype mamba_ssm_cache_dtype = KvCacheDtype::kAuto;
  // Scheduler knobs the engine checks in Mamba align mode once the KV cache is sized
  // (VllmConfig.validate_block_size): --long-prefill-token-threshold (0: unset) must be at least
  // the cache block, and --disable-chunked-mm-input is refused.
  int64_t long_prefill_token_threshold = 0;
  bool disable_chunked_mm_input = false;
  // --enforce-eager: the engine captures no CUDA graphs.
  bool enforce_eager = false;
  // --attention-config's flash_attn_version (2, 3 or 4; unset: by the GPU) and
  // use_trtllm_attention (unset: by the GPU): FlashAttention 2 has no sinks nor per-head scales,
  // and FlashInfer without TRT-LLM attention no sinks and one window per group.
  std::optional<int64_t> flash_attn_version;
  std::optional<bool> use_trtllm_attention;
  // --device-capability: the GPU's compute capability. Stated, it settles what depends on the
  // GPU (the FlashAttention version, FlashInfer's TRT-LLM attention, the backends that run there)
  // and a backend nobody names is the engine's pick from its priority list for that GPU; unset,
  // kvtopo plans without knowing the GPU.
  std::optional<DeviceCapability> device_capability;
  // Where device_capability came from, as messages name it: "--device-capability", or
  // "--device-name 'NVIDIA B200'" where the GPU's name gave it.
  std::string device_capability_from = "--device-capability";
  // "10.0 (--device-capability)", for messages; device_capability must be set.
  std::string DeviceCapabilityText() const {
    return DeviceCapabilityName(*device_capability) + " (" + device_capability_from + ")";
  }

  // The batches the engine keeps in flight (VllmConfig.max_concurrent_batches): one per
  // pipeline stage; under async scheduling one more on the V2 model runner, and two with one
  // stage on the V1 runner.
  int64_t MaxConcurrentBatches(int64_t pipeline_stages, bool v2_model_runner) const {
    if (async_scheduling && v2_model_runner) return pipeline_stages + 1;
    if (async_scheduling && pipeline_stages <= 1) return 2;
    return pipeline_stages;
  }
  // Tokens scheduled but not yet settled (VllmConfig.max_in_flight_tokens): every batch in
  // flight may hold a whole step. Saturates instead of overflowing (windows are capped by
  // --max-model-len anyway).
  int64_t MaxInFlightTokens(int64_t pipeline_stages, bool v2_model_runner) const {
    const int64_t batches = MaxConcurrentBatches(pipeline_stages, v2_model_runner);
    return max_num_batched_tokens > std::numeric_limits<int64_t>::max() / batches
               ? std::numeric_limits<int64_t>::max()
               : batches * max_num_batched_tokens;
  }
};

// --speculative-config, after parsing (see ParseSpeculativeConfig).
struct SpeculativeConfig {
  // Canonical method: eagle, eagle3, mtp, dspark, dflash, draft_model, or one that keeps no
  // draft KV cache (ngram, ngram_gpu, suffix, medusa, mlp_speculator). The per-model MTP names
  // (deepseek_mtp, qwen3_next_mtp, ...) become mtp as in vLLM.
  std::string method;
  // The per-model MTP name given for method mtp (deepseek_mtp, ...), which the engine warns is
  // deprecated; empty when the method was given as it is.
  std::string method_alias;
  std::string model;  // a draft profile name, repo id or config path; empty: the default draft
  // revision: the branch, tag or commit of a draft repo id read from the Hugging Face cache;
  // empty: main (not the target's --revision, as in the engine).
  std::string revision;
  // quantization: the draft's weights' method (the engine's draft ModelConfig compares it with
  // the draft checkpoint's); nullopt: the checkpoint's. An MTP draft's is the target's.
  std::optional<std::string> quantization;
  int64_t num_speculative_tokens = 0;
  // "auto", an upper-case backend name, or empty (inherit the target's backend).
  std::string draft_attention_backend;
  std::optional<KvCacheDtype> draft_kv_cache_dtype;  // unset: inherit --kv-cache-dtype
  int64_t dflash_draft_window_size = 0;              // 0: unbounded
  // The draft's tensor-parallel size; 0: unset (the target's --tensor-parallel-size).
  int64_t draft_tensor_parallel_size = 0;
  // max_model_len: the draft's maximum length; 0: unset (the smaller of the draft's derived
  // length and the target's). It must not exceed either.
  int64_t max_model_len = 0;
  // extract_hidden_states: the target layers whose hidden states the engine keeps in the KV cache,
  // draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids; unset: not given (the
  // target's own, if its config states them).
  std::optional<std::vector<int64_t>> extract_layer_ids;
  // parallel_drafting: every draft token in one pass, each masked slot an input slot of its own;
  // always on for dflash, as the engine sets it.
  bool parallel_drafting = false;
  // disable_padded_drafter_batch: unpadded draft batches; async scheduling is then off by
  // default and refused when asked for.
  bool disable_padded_drafter_batch = false;
  // moe_backend: the draft's MoE kernels (_create_draft_vllm_config); unset: the target's.
  std::optional<std::string> moe_backend;
  // vLLM keys given that do not change the plan (e.g. prompt_lookup_max), in order.
  std::vector<std::string> not_planned_keys;

  // Whether the method runs a draft model with a KV cache of its own (or in-model MTP layers).
  bool HasDraftCache() const;
  // Whether vLLM schedules asynchronously by default with this method (EAGLE-style, MTP, DSpark,
  // DFlash, GPU n-gram) and without disable_padded_drafter_batch.
  bool AllowsAsyncScheduling() const;
  // The input slots drafting adds to a step per request (vLLM's
  // SpeculativeConfig.max_num_new_slots_for_drafting): num_speculative_tokens - 1 under parallel
  // drafting, plus one for a draft model. The scheduler's token budget is
  // max_num_batched_tokens less this times max_num_seqs.
  int64_t NewSlotsForDrafting() const;
};

// VLLM_DCP_SHARD_DRAFT, read once at the launch-options edge. The engine's methods read it
// differently (an external DSpark draft shards only on exactly "1", in-model MTP replicates only
// on a falsy value), so the parsed form keeps the distinctions they need.
enum class ShardDraftRequest {
  kUnset,   // not set
  kOne,     // "1" (or --shard-draft)
  kTruthy,  // "true" or "yes", any case
  kFalsy,   // "0", "false" or "no", any case
  kOther,   // anything else: neither truthy nor falsy
};
ShardDraftRequest ParseShardDraftRequest(std::string_view value);

// --max-model-len auto (or -1) in CacheOptions::max_model_len: the derived length, lowered to
// the longest whose request fits the KV-cache memory (vLLM's _auto_fit_max_model_len).
inline constexpr int64_t kAutoMaxModelLen = -1;

// A `vllm serve` flag that leaves the plan as it is, with the value the engine's parser leaves it:
// its last occurrence, a JSON flag's dotted --FLAG.KEY arguments folded in. The parser's and the
// config's checks of it still hold (profiles/vllm-flags.json).
struct VllmFlagValue {
  std::string flag;                 // "--stream-interval", "--numa-bind"
  std::optional<bool> on;           // a switch: --NAME (true) or --no-NAME (false)
  std::vector<std::string> values;  // the value(s) as given; a JSON flag's JSON text
  bool operator==(const VllmFlagValue&) const = default;
};

struct LaunchConfig {
  std::string model;  // profile name, config.json path or a directory; empty: kimi-k3 default
  // --config-format: auto (params.json beside consolidated*.safetensors is Mistral's format,
  // else config.json), hf (config.json) or mistral (params.json). A draft model reads as the
  // target's.
  std::string config_format = "auto";
  // --model-impl: auto (the engine's own model class, else its Transformers backend for a config
  // whose custom code it loads), vllm (its own class only) or transformers (the Transformers
  // backend). A draft model is read under auto.
  std::string model_impl = "auto";
  // --trust-remote-code: the engine loads the custom code a config's auto_map names.
  bool trust_remote_code = false;
  // --runner (auto, generate, pooling, draft) and --convert (auto, none, embed, classify): kvtopo
  // plans the generate runner; the others are refused.
  std::string runner = "auto";
  std::string convert = "auto";
  // --revision: the branch, tag or commit of a Hugging Face repo id whose cached snapshot is read
  // (docs/profiles.md, "Hugging Face repo ids"); empty: main.
  std::string revision;
  // --hf-config-path: where the engine reads the target's config instead of `model` (a profile
  // name, config.json path, directory or GGUF file, read as `model` would be); empty: `model`.
  std::string hf_config_path;
  // --hf-overrides: a JSON object of config values the engine sets on the target model's config
  // after loading it (docs/profiles.md, "--hf-overrides"); empty: none.
  std::string hf_overrides;
  ParallelConfig parallel;  // its interleave: the one the engine stores with (EngineInterleave)
  // --dcp-kv-cache-interleave-size as given (1 where not; 0: parallel's interleave, for a launch
  // built without the flags): FlashInfer's metadata builder reads it, not the interleave the slot
  // mapping stores with, for each DCP rank's local lengths.
  int64_t dcp_interleave_as_given = 0;
  int64_t pipeline_parallel_size = 1;  // --pipeline-parallel-size; kvtopo plans one stage
  // --dtype: the model's compute dtype, which an auto KV-cache dtype stores. Unset: auto, the
  // engine's rule (the config's torch_dtype; a float32 config runs as bfloat16).
  std::optional<ElementType> model_dtype;
  CacheOptions cache;
  int64_t kv_cache_memory_bytes = 0;  // per rank; 0: kDefaultKvCacheMemoryBytes (plan.h)
  std::optional<SpeculativeConfig> speculative;
  // Draft-cache sharding asked for under DCP: VLLM_DCP_SHARD_DRAFT as parsed by
  // ParseShardDraftRequest, or kOne for --shard-draft. Each method's row reads it
  // (docs/planner.md "Speculative methods").
  ShardDraftRequest shard_draft = ShardDraftRequest::kUnset;
  std::string shard_draft_value;  // VLLM_DCP_SHARD_DRAFT as given (named by diagnostics)
  // VLLM_DSPARK_DRAFT_KV_WINDOW: > 0 bounds a DSpark draft's cache to a sliding window of this
  // many tokens (sliding-window MLA); 0 keeps the full draft cache.
  int64_t dspark_draft_kv_window = 0;
  // VLLM_SSM_CONV_STATE_LAYOUT as given: SD or DS, the order of a recurrent layer's conv state
  // (ConvStateLayout); nullopt: unset, the engine's SD. Any other value, the empty one included,
  // is refused: the engine reads it as it sizes a conv state, and for every model as its engine
  // core ends its start.
  std::optional<std::string> ssm_conv_state_layout;
  // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE: keep chunked local attention layers
  // (Llama 4) chunked in the hybrid KV cache manager. On by default, as the engine's variable
  // defaults to 1; off (0), or under an EAGLE-family method, the engine runs without the manager
  // and caches them as full attention.
  bool allow_chunked_local_hybrid = true;
  // --enable-chunked-prefill (on by default). Off, a prompt is scheduled whole: a defaulted
  // --max-num-batched-tokens grows to the length, and a given one below it is refused.
  bool enable_chunked_prefill = true;
  // Whether --max-num-batched-tokens was given: the engine's default follows the length and
  // --max-num-seqs (cache.max_num_batched_tokens holds the default until BuildModelCacheSpecs).
  bool max_num_batched_tokens_given = false;
  // VLLM_ALLOW_LONG_MAX_MODEL_LEN: a --max-model-len beyond the config's derived length is a
  // warning instead of the engine's refusal.
  bool allow_long_max_model_len = false;
  // VLLM_BATCH_INVARIANT: every attention layer's backend must support batch invariance (the
  // engine's backend selection skips or refuses one that does not).
  bool batch_invariant = false;
  // --quantization (-q) as given (the engine compares it as text); nullopt: the checkpoint's.
  std::optional<std::string> quantization;
  bool allow_deprecated_quantization = false;  // --allow-deprecated-quantization
  // --disable-hybrid-kv-cache-manager. Unset: the engine decides (off for chunked local attention
  // as above, on otherwise). True: off; sliding-window and chunked layers are then cached as full
  // attention, and a model whose layers cannot share one cache type is refused. False
  // (--no-disable-hybrid-kv-cache-manager): on, and a launch that needs it off is refused.
  std::optional<bool> disable_hybrid_kv_cache_manager;
  // The KV connector the engine builds (--kv-transfer-config's kv_connector, or the one
  // --kv-offloading-size sets up); empty: none. `kv_connector_source` names the flags that chose
  // it; `kv_connector_hma` whether it supports the hybrid KV cache manager (SupportsHMA), unset
  // when kvtopo cannot tell (a connector from an external module, or one whose class depends on
  // an installed package).
  std::string kv_connector;
  std::string kv_connector_source;
  std::optional<bool> kv_connector_hma;
  // MultiConnector's sub-connectors (kv_connector_extra_config.connectors' kv_connector names, in
  // order); empty for another connector.
  std::vector<std::string> kv_sub_connectors;
  // OffloadingConnector's spec, from its kv_connector_extra_config (OffloadingSpecFactory and
  // OffloadingSpec at 28be48fa9): the class (spec_name; CPUOffloadingSpec unless named) and the
  // offloaded block's tokens (block_size; 0: not given, one cache block). Empty and 0 for other
  // connectors.
  std::string kv_offloading_spec;
  int64_t kv_offloaded_block_size = 0;
  // --enable-sleep-mode and PYTORCH_CUDA_ALLOC_CONF as given: the engine refuses a KV connector
  // beside an allocator with expandable segments unless sleep mode is on.
  bool enable_sleep_mode = false;
  // --enable-lora: LoRA adapters (weights only), which with a speculative config ask a step to
  // hold every sequence's verified tokens.
  bool enable_lora = false;
  // --max-lora-rank (the engine's default 16), which --fully-sharded-loras splits over TP ranks.
  int64_t max_lora_rank = 16;
  std::string pytorch_cuda_alloc_conf;
  // --enable-expert-parallel, and external data-parallel load balancing
  // (--data-parallel-external-lb or --data-parallel-rank with --data-parallel-size above 1): the
  // engine refuses either for a target whose config states no experts (ModelConfig.is_moe). The
  // cache is the same.
  bool enable_expert_parallel = false;
  bool external_data_parallel_lb = false;
  // The MoE kernels (KernelConfig.moe_backend: --kernel-config's, which --moe-backend overrides
  // unless auto), normalized as the engine normalizes them (lower case, '_' for '-'). Only
  // DeepSeek-V4's model reads deep_gemm_mega_moe (its MegaMoE experts); the cache is the same.
  std::string moe_backend = "auto";
  std::string moe_backend_from;  // the flag that set it: --moe-backend or --kernel-config
  // VLLM_USE_V2_MODEL_RUNNER as given; unset: the engine's choice (the V1 runner for a MoE or
  // quantized model). The V1 runner builds a draft under its own config (the speculative
  // config's moe_backend, a parallel config without expert parallelism); the V2 runner under the
  // target's. The cache is the same.
  std::optional<bool> use_v2_model_runner;
  // --enable-eplb: expert-parallel load balancing, which the engine's fused experts refuse as
  // they are built where their quantization method does not support it. The cache is the same.
  bool enable_eplb = false;
  // --eplb-config's num_redundant_experts: copies of experts beyond the routed ones, which the
  // engine places only under EPLB. The cache is the same.
  int64_t num_redundant_experts = 0;
  // --data-parallel-size: with TP and PCP, the ranks the engine's expert-parallel group spans
  // (DP x PCP x TP, init_model_parallel_group's "ep"). The cache is the same.
  int64_t data_parallel_size = 1;
  // --all2all-backend as the engine resolves it (naive and pplx fall back to the default).
  std::string all2all_backend = "allgather_reducescatter";
  // How the engine runs its workers (--distributed-executor-backend; ParallelConfig.__post_init__
  // picks mp when TP x PP x PCP x DP exceeds 1, else uni): true under mp or ray, whose workers
  // keep the launch's config in processes of their own while the engine core changes its own
  // once the KV cache is sized; false under uni or external_launcher, whose worker shares the
  // engine core's; unset for an Executor class kvtopo cannot tell.
  std::optional<bool> workers_in_own_processes;
  // --enable-return-routed-experts: the engine's capturer reads the text config's experts per
  // token and expert count once the KV cache is sized, and fails for a config without them.
  bool enable_return_routed_experts = false;
  // What the engine's V2 model runner does not yet support (VllmConfig's
  // _get_v2_model_runner_unsupported_features at 28be48fa9) among the launch's features kvtopo
  // does not otherwise plan, in the engine's words: "dual batch overlap", "custom logits
  // processors", "prompt embeds", "logprobs mode 'raw_logits'", "KV sharing fast prefill",
  // "EC transfer". The cache is the same.
  std::vector<std::string> v2_runner_unsupported;
  // The environment variables set where the engine starts that it may read, NAME=VALUE
  // (LaunchOptions::vllm_environment): the values the engine's modules read as they are imported
  // are checked against the modules this launch imports. The cache is the same.
  std::vector<std::string> environment;
  // --kv-sharing-fast-prefill, which EAGLE-style drafts refuse. The cache is the same.
  bool kv_sharing_fast_prefill = false;
  // VLLM_WORKER_MULTIPROC_METHOD: fork or spawn. `vllm serve` sets spawn when the variable is
  // unset (cli_env_setup); fork is the default only where the engine runs as a library.
  std::string worker_multiproc_method = "spawn";
  // --default-mm-loras names adapters (a non-empty JSON object), which the engine refuses for a
  // model without multimodal inputs. The cache is the same.
  bool default_mm_loras = false;
  // VLLM_PP_LAYER_PARTITION as given: hidden layers per pipeline stage, comma-separated; unset:
  // the engine's even split. The engine reads it at any pipeline size, so it must name one
  // count per stage even with one stage.
  std::optional<std::string> pp_layer_partition;
  // --disable-sliding-window: the target's sliding-window layers attend over (and cache) the whole
  // request, and the derived maximum length is capped at the config's sliding_window.
  bool disable_sliding_window = false;
  // --language-model-only: every modality's input limit is 0, so a multimodal target serves
  // text alone (the engine's MultiModalConfig).
  bool language_model_only = false;
  // What the engine resolves its CUDA graph mode from (CompilationConfig and
  // VllmConfig.__post_init__ at 28be48fa9), beside --enforce-eager (CacheOptions): -O, and what
  // --compilation-config states. Unset: not given.
  struct Compilation {
    int64_t optimization_level = 2;           // -O: 0 to 3
    std::optional<int64_t> mode;              // 0 NONE ... 3 VLLM_COMPILE
    std::string cudagraph_mode;               // NONE, PIECEWISE, FULL, FULL_DECODE_ONLY,
                                              // FULL_AND_PIECEWISE; empty: not given
    std::optional<bool> splitting_ops_empty;  // splitting_ops [] (true) or a list (false)
    // splitting_ops lists every op the engine splits attention at (CompilationConfig.
    // _attention_ops), which fuse_attn_quant asserts against.
    bool splitting_ops_hold_attention = false;
    bool use_inductor_graph_partition = false;
    bool fuse_attn_quant = false;       // pass_config.fuse_attn_quant
    bool sequence_parallelism = false;  // pass_config.enable_sp or fuse_gemm_comms
    bool sp_min_token_num = false;      // pass_config.sp_min_token_num given
    // --all2all-backend deepep_high_throughput with --data-parallel-size above 1: no graphs on
    // a model with experts.
    bool deepep_high_throughput_dp = false;
    // The CUDA graph capture sizes given (--cudagraph-capture-sizes or the config's key) and
    // the largest (--max-cudagraph-capture-size or the key); unset: the engine's defaults.
    std::optional<std::vector<int64_t>> capture_sizes;
    std::optional<int64_t> max_capture_size;
    bool interactivity = false;  // --performance-mode interactivity: sizes 1 to 32 by default
    // TORCH_COMPILE_DISABLE=1: compilation mode 0 (NONE), whatever -O or the config says.
    bool torch_compile_disable = false;
    // VLLM_USE_BREAKABLE_CUDAGRAPH=1: compilation mode 0, and piecewise graphs stay on.
    bool breakable_cudagraph = false;
    std::vector<std::string> keys_not_planned;  // other keys given
  };
  Compilation compilation;
  // `vllm serve` flags given that do not change the plan (reported, not used).
  std::vector<std::string> not_planned_flags;
  std::vector<VllmFlagValue> not_planned_values;  // their values, one entry a flag
  // Findings about how the launch was spelled (LaunchOptions::diagnostics), reported with the
  // plan's own.
  std::vector<Diagnostic> launch_diagnostics;
};

struct ModelCacheSpecs {
  std::string model_name;    // profile name or the config path
  std::string architecture;  // e.g. "KimiK3ForCausalLM"
  // Empty without a draft; an MTP assistant, which keeps no cache of its own, is named.
  std::string draft_name;
  int64_t max_model_len = 0;            // resolved L
  int64_t num_speculative_tokens = 0;   // S
  int64_t num_lookahead_tokens = 0;     // research/vllm_kv_cache.md §5.8
  std::vector<LayerSpec> layers;        // target layers first, then draft layers
  std::vector<Diagnostic> diagnostics;  // launch validation; errors reject the launch
  std::string speculative_method;       // empty without --speculative-config
  std::string attention_backend;        // the target's resolved backend
  // The weights' quantization method the engine runs (the checkpoint's after its overrides, or
  // --quantization; src/model/quantization.h); nullopt: unquantized.
  std::optional<std::string> quantization;
  std::string draft_attention_backend;  // the draft's resolved backend; empty without a draft
  // The engine's tokens per step when its default follows the length (0: the launch's
  // cache.max_num_batched_tokens); PlanLaunchSpecs plans with it.
  int64_t max_num_batched_tokens = 0;
  // --max-model-len auto: PlanLaunchSpecs lowers max_model_len (the derived length here) to the
  // longest whose request fits the pool.
  bool auto_fit_max_model_len = false;
  // Why the engine runs without its hybrid KV cache manager, a phrase naming the knob ("by
  // --disable-hybrid-kv-cache-manager"); empty: it runs with it. The planner then caches windowed
  // layers as full attention (one cache type).
  std::string hybrid_manager_off;
  // The model's Mamba chunk size as the engine reads it (ModelConfig.get_mamba_chunk_size:
  // mamba_chunk_size, else chunk_size, with the config class's default, else 2048): in
  // --mamba-cache-mode all the hybrid attention block is a multiple of lcm(it, kernel block)
  // unless --mamba-block-size is given.
  int64_t mamba_chunk_size = 2048;
  // A compressed-tensors checkpoint's kv_cache_scheme under --kv-cache-dtype auto: its K/V
  // attention layers cache fp8 while the engine's cache config stays auto, so the hybrid block
  // alignment, which sizes an attention token by the cache config's dtype, counts the model's
  // dtype for them (docs/planner.md, "Hybrid alignment").
  bool kv_cache_scheme_fp8 = false;
  // Prefix caching as the launch runs it: --[no-]enable-prefix-caching, else the engine's default
  // for the model (off for a hybrid model with recurrent layers).
  bool enable_prefix_caching = true;
  // An encoder-decoder model's encoder tokens per request (Whisper: max_source_positions, its
  // audio padded to 30 s): what one request's encoder input holds in the cross-attention groups,
  // which the engine sizes for max_num_batched_tokens (GroupGeometry::max_encoder_tokens) and
  // kvtopo simulate allocates. 0: no cross-attention layers.
  int64_t encoder_tokens_per_request = 0;
  // Pipeline parallelism (--pipeline-parallel-size > 1): the hidden layers each stage holds, in
  // stage order (the engine's get_pp_indices), and the stage of each entry of `layers` (draft
  // layers on the last, where the engine builds its drafter). Empty with one stage.
  std::vector<int64_t> pipeline_partition;
  std::vector<int> layer_stages;
  int64_t pipeline_stages() const {
    return std::max<int64_t>(1, static_cast<int64_t>(pipeline_partition.size()));
  }
  // Whether the engine's workers run its V2 model runner (VllmConfig.use_v2_model_runner:
  // VLLM_USE_V2_MODEL_RUNNER, else its default for the model), which keeps one batch more in
  // flight under async scheduling (CacheOptions::MaxConcurrentBatches).
  bool v2_model_runner = false;
  // The engine's CUDA graph mode, as far as it decides whether decode steps replay full graphs,
  // which with recurrent layers need a block per running request
  // (CompilationConfig.resolve_cudagraph_mode_and_sizes): `full_cudagraphs_off` says why they do
  // not (--enforce-eager, a mode without full graphs, a backend that cannot replay the batches);
  // else `cudagraph_mode_unresolved` names what kvtopo cannot resolve (a connector that may ask
  // for piecewise graphs, speculative decoding on a backend whose support it cannot tell); else
  // `cudagraph_mode` is the mode and what set it. At most one is set.
  std::string full_cudagraphs_off;
  std::string cudagraph_mode_unresolved;
  std::string cudagraph_mode;
  // The connector that builds an OffloadingSpec (OffloadingConnector, the native
  // --kv-offloading-size backend), which asserts every group's block is a multiple of the cache
  // block; empty: none.
  std::string offloading_connector;
  // Its spec class and offloaded block (LaunchConfig::kv_offloading_spec and
  // kv_offloaded_block_size): with a block given, every group has one block size and the
  // offloaded block is a multiple of it times the context-parallel ranks; the tiering spec takes
  // one group.
  std::string offloading_spec;
  int64_t offloaded_block_size = 0;
  // Backends the model's code builds its caches on that the registry does not list (DeepSeek-V4's
  // own), with their kernel blocks; the launch rules of the registry's backends do not reach
  // their layers.
  std::map<std::string, BackendTraits> model_backends;
};

}  // namespace kvtopo
