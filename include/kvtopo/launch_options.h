// LaunchOptions: the launch as a user spells it (vLLM flag names, text values, "not given"
// distinguished from defaults), and its one translation into a LaunchConfig.
//
// One table (LaunchOptionTable) names every option once: its long name (the Python keyword; the
// CLI flag is the same with dashes), aliases, short flag, value type, the environment variable
// the engine reads for it, and help. The CLI registers its flags from the table and the Python
// module accepts exactly its keywords, so both fronts mean the same thing; a test checks the docs
// against it. Flags of `vllm serve` that do not change the KV-cache plan are accepted by name and
// reported as not used for planning (VllmFlagsNotPlanned).
//
// Thread safety: the tables are immutable; LaunchOptions is a value type.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kvtopo/launch.h"
#include "kvtopo/status.h"

namespace kvtopo {

struct LaunchOptions {
  // Empty: the default launch (DefaultLaunchConfig: the seeds' Kimi-K3 production launch), which
  // the other options override. Else a profile name, a Hugging Face repo id a profile serves, a
  // config.json path or a directory holding one; vLLM's defaults then apply.
  std::string model;
  std::optional<int64_t> tensor_parallel_size;           // -tp; default 1
  std::optional<int64_t> pipeline_parallel_size;         // -pp; default 1 (only 1 is planned)
  std::optional<int64_t> decode_context_parallel_size;   // -dcp N; default 1
  std::optional<int64_t> prefill_context_parallel_size;  // -pcp; default 1
  // --dcp-kv-cache-interleave-size and --cp-kv-cache-interleave-size, two flags of the engine's:
  // the interleave it stores with is the second, which a first above 1 replaces under DCP
  // (EngineInterleave); FlashInfer reads the first as given.
  std::optional<int64_t> dcp_kv_cache_interleave_size;  // default 1
  std::optional<int64_t> cp_kv_cache_interleave_size;   // default 1
  std::optional<int64_t> block_size;                    // default: the target backend's cache block
  std::optional<int64_t> max_model_len;                 // default: the model's maximum length
  std::optional<int64_t> max_num_seqs;                  // block-table rows; default 256
  std::optional<int64_t> max_num_batched_tokens;        // default 8192
  std::optional<bool> async_scheduling;      // default: on unless the speculative method forbids it
  std::optional<int64_t> mamba_block_size;   // default: the attention block (align mode)
  std::optional<int64_t> prefix_match_unit;  // default: GCD of the group blocks
  std::optional<int64_t> num_gpu_blocks_override;    // default: memory // bytes per block
  std::optional<int64_t> kv_group_size;              // VLLM_K3_KV_GROUP_SIZE; default: min bucket
  std::optional<int64_t> dspark_draft_kv_window;     // VLLM_DSPARK_DRAFT_KV_WINDOW; default 0
  std::optional<std::string> ssm_conv_state_layout;  // VLLM_SSM_CONV_STATE_LAYOUT; default SD
  // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE; default on (the engine's 1)
  std::optional<bool> allow_chunked_local_attn_with_hybrid_kv_cache;
  std::optional<bool> allow_long_max_model_len;  // VLLM_ALLOW_LONG_MAX_MODEL_LEN; default off
  std::optional<bool> disable_hybrid_kv_cache_manager;  // unset: the engine decides
  std::optional<std::string> kv_transfer_config;        // --kv-transfer-config: a JSON object
  std::optional<std::string> ec_transfer_config;        // --ec-transfer-config: a JSON object
  std::optional<std::string> kv_offloading_size;        // GiB of CPU offloading; unset: none
  std::optional<std::string> kv_offloading_backend;     // native or lmcache; default native
  // VLLM_USE_SIMPLE_KV_OFFLOAD: the native offloading backend builds SimpleCPUOffloadConnector.
  std::optional<bool> use_simple_kv_offload;
  std::optional<bool> torch_compile_disable;           // TORCH_COMPILE_DISABLE; default off
  std::optional<bool> use_breakable_cudagraph;         // VLLM_USE_BREAKABLE_CUDAGRAPH; default off
  std::optional<bool> batch_invariant;                 // VLLM_BATCH_INVARIANT; default off
  std::optional<bool> enable_sleep_mode;               // --enable-sleep-mode; default off
  std::optional<bool> enable_lora;                     // --enable-lora; default off
  std::optional<std::string> pytorch_cuda_alloc_conf;  // PYTORCH_CUDA_ALLOC_CONF; default unset
  std::optional<bool> disable_sliding_window;          // default off
  std::optional<bool> language_model_only;             // default off
  std::optional<bool> enable_chunked_prefill;          // default on
  std::optional<std::string> performance_mode;         // balanced, interactivity, throughput
  std::optional<std::string> dtype;                    // --dtype; default "auto"
  std::optional<std::string> config_format;            // auto, hf or mistral; default auto
  std::optional<std::string> model_impl;               // auto, vllm, transformers; default auto
  std::optional<bool> trust_remote_code;               // default off
  std::optional<std::string> runner;                   // auto, generate, pooling, draft
  std::optional<std::string> convert;                  // auto, none, embed, classify
  std::optional<std::string> revision;                 // a repo id's revision; default main
  std::optional<std::string> hf_config_path;           // the target's config; default: model
  std::optional<std::string> hf_overrides;             // --hf-overrides: a JSON object
  // --rope-scaling (a JSON object) and --rope-theta (a number), which releases before the fork's
  // set on the config as --hf-overrides keys: refused, as the fork's parser refuses them, naming
  // the --hf-overrides object they made.
  std::optional<std::string> rope_scaling;
  std::optional<std::string> rope_theta;
  std::optional<std::string> kv_cache_dtype;   // default "auto"
  std::optional<std::string> kv_cache_memory;  // bytes or a size ("12GiB"); default 32 GiB
  // The GPU the engine runs on, for its device-dependent step defaults (vLLM's
  // EngineArgs.get_batch_defaults): total memory as the platform reports it, bytes or a size
  // ("80GiB"), and the device name (only an A100's matters; needs device_memory). Unset: kvtopo's
  // defaults.
  std::optional<std::string> device_memory;
  std::optional<std::string> device_name;
  // The GPU's compute capability ("9.0", "10.0", "12.0"): settles GPU-dependent backend answers
  // and the engine's automatic backend selection. Unset: not known.
  std::optional<std::string> device_capability;
  // Data and expert parallelism: they leave the per-rank cache as it is, but batched
  // data-parallel MoE (EP, DP > 1, a deepep_low_latency or nixl_ep all-to-all backend) changes
  // the engine's default tokens per step.
  std::optional<int64_t> data_parallel_size;   // -dp; default 1
  std::optional<bool> enable_expert_parallel;  // -ep; default off
  // Flags the engine refuses in some launches, checked and otherwise not planned:
  // --enable-eplb needs expert parallelism over more than one rank; --enable-return-routed-experts
  // takes no KV connector; concurrent partial prefill (either count other than 1) is refused.
  std::optional<bool> enable_eplb;
  // --enable-elastic-ep: needs --enable-eplb, one pipeline stage, and neither external nor hybrid
  // data-parallel load balancing.
  std::optional<bool> enable_elastic_ep;
  // --eplb-config: a JSON EPLBConfig (window_size, step_interval, num_redundant_experts, ...),
  // checked as the engine checks it; its num_redundant_experts needs --enable-eplb and adds
  // experts the EP ranks must divide.
  std::optional<std::string> eplb_config;
  // External data-parallel load balancing (one engine per DP rank): --data-parallel-external-lb,
  // or --data-parallel-rank, which implies it; --data-parallel-hybrid-lb. Checked as the engine
  // checks them (DP above 1, the rank below DP, a model with experts, not both modes).
  std::optional<bool> data_parallel_external_lb;
  std::optional<bool> data_parallel_hybrid_lb;
  std::optional<int64_t> data_parallel_rank;
  // The multi-node and data-parallel launch flags the engine checks against the above (the cache
  // is the same): --nnodes, --node-rank, --data-parallel-size-local, --data-parallel-start-rank,
  // --data-parallel-backend (mp or ray) and --headless.
  std::optional<int64_t> nnodes;
  std::optional<int64_t> node_rank;
  std::optional<int64_t> data_parallel_size_local;
  std::optional<int64_t> data_parallel_start_rank;
  std::optional<std::string> data_parallel_backend;
  std::optional<bool> headless;
  std::optional<int64_t> api_server_count;                  // -asc: refused above 0 with --headless
  std::optional<std::string> distributed_executor_backend;  // ray, mp, uni, external_launcher, ...
  std::optional<bool> enable_return_routed_experts;
  // Features the engine's V2 model runner refuses (VLLM_USE_V2_MODEL_RUNNER=1), otherwise not
  // planned: dual batch overlap (--enable-dbo) and micro-batches (--ubatch-size above 1), which
  // need a DeepEP all-to-all backend; prompt embeddings; custom logits processors; a logprobs
  // mode of raw or processed logits; fast prefill for KV sharing, which EAGLE-style drafts
  // refuse.
  std::optional<bool> enable_dbo;
  std::optional<int64_t> ubatch_size;
  std::optional<bool> enable_prompt_embeds;
  std::optional<std::string> logits_processors;  // one or more, space-separated
  std::optional<std::string> logprobs_mode;      // raw_logprobs (default), raw_logits, ...
  std::optional<bool> kv_sharing_fast_prefill;
  // Flags the engine checks at startup without a bearing on the cache: --gpu-memory-utilization
  // in (0, 1]; LoRA's limits (--max-lora-rank one of its ranks; with --enable-lora, --max-loras 1
  // or more and --max-cpu-loras not below it); the API server's parsers (--enable-auto-tool-choice
  // needs a --tool-call-parser the engine registers, --reasoning-parser one it registers, unless a
  // plugin adds parsers) and request logging (--enable-log-outputs needs --enable-log-requests).
  std::optional<std::string> gpu_memory_utilization;
  std::optional<int64_t> max_lora_rank;
  std::optional<int64_t> max_loras;
  std::optional<int64_t> max_cpu_loras;
  std::optional<std::string> default_mm_loras;  // a JSON object: refused for a text-only target
  std::optional<std::string> lora_dtype;        // with --enable-lora: auto, float16 or bfloat16
  std::optional<bool> enable_auto_tool_choice;
  std::optional<std::string> tool_call_parser;
  std::optional<std::string> tool_parser_plugin;
  std::optional<std::string> reasoning_parser;
  std::optional<std::string> reasoning_parser_plugin;
  std::optional<bool> enable_log_requests;
  std::optional<bool> enable_log_outputs;
  std::optional<int64_t> max_num_partial_prefills;
  std::optional<int64_t> max_long_partial_prefills;
  // Checked against the planned blocks in Mamba align mode (CacheOptions): a threshold below the
  // cache block and --disable-chunked-mm-input are refused there. --enforce-eager turns off the
  // CUDA graphs whose recurrent-layer check needs a block per running request.
  std::optional<int64_t> long_prefill_token_threshold;
  std::optional<bool> disable_chunked_mm_input;
  std::optional<bool> enforce_eager;
  // The CUDA graph mode the engine resolves, which decides the same check: -O (0 to 3; default 2)
  // and --compilation-config / -cc (a JSON object).
  std::optional<int64_t> optimization_level;
  std::optional<std::string> compilation_config;
  // --cudagraph-capture-sizes (space-separated) and --max-cudagraph-capture-size, which the
  // engine refuses beside the same keys of --compilation-config.
  std::optional<std::string> cudagraph_capture_sizes;
  std::optional<int64_t> max_cudagraph_capture_size;
  std::optional<std::string> pp_layer_partition;  // VLLM_PP_LAYER_PARTITION; default: even split
  std::optional<std::string> all2all_backend;     // default allgather_reducescatter
  // Layers cached at the model dtype whatever --kv-cache-dtype says: layer indices and
  // "sliding_window", space-separated (vLLM's --kv-cache-dtype-skip-layers).
  std::optional<std::string> kv_cache_dtype_skip_layers;
  std::optional<bool> enable_prefix_caching;         // default on
  std::optional<std::string> mamba_cache_mode;       // none, align, all; default align with caching
  std::optional<std::string> mamba_cache_dtype;      // recurrent conv state; default auto
  std::optional<std::string> mamba_ssm_cache_dtype;  // GDN temporal state; default auto
  std::optional<std::string> attention_backend;      // default: the model's backend
  // --attention-config / -ac (a JSON object): its backend names the target's backend as
  // --attention-backend does, which the engine refuses beside it.
  std::optional<std::string> attention_config;
  std::optional<std::string> speculative_config;  // JSON text
  // --spec-method, --spec-model, --spec-tokens: keys of the speculative config, each refused
  // when the JSON names it too (vLLM's create_speculative_config).
  std::optional<std::string> spec_method;
  std::optional<std::string> spec_model;
  std::optional<int64_t> spec_tokens;
  std::optional<std::string> dcp_comm_backend;  // ag_rs (default) or a2a (needs DCP > 1)
  // --enable-mamba-cache-stochastic-rounding: needs --mamba-ssm-cache-dtype float16.
  std::optional<bool> enable_mamba_cache_stochastic_rounding;
  std::optional<std::string> mamba_backend;  // triton or flashinfer; default triton
  // The MoE and linear kernels (KernelConfig at 28be48fa9): --kernel-config (a JSON object),
  // and --moe-backend and --linear-backend, which override its fields unless auto;
  // --enable-flashinfer-autotune, which the engine refuses beside the config's own field. They
  // leave the cache as it is; DeepSeek-V4's MegaMoE kernels (moe_backend deep_gemm_mega_moe)
  // have launch rules of their own.
  std::optional<std::string> kernel_config;
  std::optional<std::string> ir_op_priority;  // a JSON IrOpPriorityConfig, merged into the above
  std::optional<std::string> moe_backend;
  std::optional<std::string> linear_backend;
  std::optional<bool> enable_flashinfer_autotune;
  // VLLM_USE_V2_MODEL_RUNNER: the engine's model runner (unset: its own choice, the V1 runner for
  // a MoE or quantized model).
  std::optional<bool> use_v2_model_runner;
  std::optional<std::string> quantization;  // -q: the weights' method; default the checkpoint's
  std::optional<bool> allow_deprecated_quantization;
  std::optional<bool> shard_draft;             // --shard-draft: as VLLM_DCP_SHARD_DRAFT=1
  std::optional<std::string> dcp_shard_draft;  // VLLM_DCP_SHARD_DRAFT (ParseShardDraftRequest)
  // VLLM_ALLOW_RUNTIME_LORA_UPDATING: adapters loaded and unloaded through the API.
  std::optional<bool> allow_runtime_lora_updating;
  // VLLM_WORKER_MULTIPROC_METHOD: how the engine starts its worker processes (fork, spawn).
  std::optional<std::string> worker_multiproc_method;
  // `vllm serve` flags given that do not change the plan, as given ("--port"), in order.
  std::vector<std::string> not_planned;
  std::vector<VllmFlagValue> not_planned_values;  // their values, one entry a flag
  // The environment variables set where the engine starts that it may read, NAME=VALUE (or a
  // NAME alone, its value unknown), in the environment's order; the CLI fills them from its own
  // (EngineEnvironmentName: every VLLM_ name, the others vllm/envs.py registers, and those the
  // engine's modules read as they are imported). A value the engine's reader cannot read (int()
  // of "yes") refuses the launch; --fail-on-environ-validation refuses a VLLM_ name the engine
  // does not register.
  std::vector<std::string> vllm_environment;
  // What a front end found in how the launch was spelled (e.g. a --speculative-config the
  // engine's parser drops); the plan reports them.
  std::vector<Diagnostic> diagnostics;
};

// How an option's value is written.
enum class OptionValue {
  kInt,     // an integer; vLLM's suffixes: k/m/g x1000, K/M/G x1024 ("64k" = 64,000)
  kBytes,   // a byte count or a size with a unit: 1325000000, 12GiB, 12G (vLLM: x1024), 12g
  kText,    // a name or a JSON document
  kSwitch,  // on/off: --name and --no-name on the command line, True/False in Python
};
std::string_view OptionValueName(OptionValue value);

using LaunchOptionField =
    std::variant<std::optional<int64_t> LaunchOptions::*,
                 std::optional<std::string> LaunchOptions::*, std::optional<bool> LaunchOptions::*>;

struct LaunchOption {
  std::string_view name;                  // underscore form: Python keyword, --name-with-dashes
  std::vector<std::string_view> aliases;  // other long names, underscore form
  std::string_view short_flag;            // "tp" for -tp; empty: none
  OptionValue value = OptionValue::kInt;
  std::string_view env;   // read when the option is not given; empty: none
  std::string_view help;  // what it sets and its default
  LaunchOptionField field;
  int64_t min_value = 1;  // kInt/kBytes: the smallest value accepted
  // kInt/kBytes: the largest value accepted (kvtopo/limits.h); 0 for text and switches.
  int64_t max_value = 0;
  // kText: the flag takes one or more values (argparse nargs "+"), kept space-separated.
  bool many_values = false;
  // How a kSwitch reads `env`, as the engine reads the variable.
  enum class EnvSwitch {
    kAsOption,   // as the option parses text (1, 0, true, false, ...)
    kOnlyOne,    // on only when exactly "1"; any other value leaves it off
    kPythonInt,  // bool(int(value)): on when a nonzero integer; other text is refused
    kOneOrTrue,  // value.strip().lower() in ("1", "true"); any other value leaves it off
  };
  EnvSwitch env_switch = EnvSwitch::kAsOption;
  // The engine's field is optional (`X | None`): on the command line `None` or an empty value
  // unsets it, as the parser's optional_type reads it (a --config file's null too).
  bool none = false;
};

// Every launch option, in help order.
const std::vector<LaunchOption>& LaunchOptionTable();
// The option named `name` (its name or an alias, dashes or underscores, leading dashes
// ignored); nullptr when none.
const LaunchOption* FindLaunchOption(std::string_view name);

// A value as a front end has it: CLI text, or a Python int, str or bool.
using LaunchValue = std::variant<int64_t, std::string, bool>;
// Sets `option` from `value`; `source` names where it came from for messages ("--max-model-len",
// "max_model_len=", "VLLM_K3_KV_GROUP_SIZE"). Errors name the source, the value and the rule.
Status SetLaunchOption(LaunchOptions& options, const LaunchOption& option, const LaunchValue& value,
                       std::string_view source);
// Fills every option not yet set from its environment variable, reading `getenv`.
Status ApplyLaunchEnvironment(LaunchOptions& options,
                              const std::function<const char*(const char*)>& getenv);

// A `vllm serve` flag kvtopo accepts without using it for the plan.
struct VllmFlag {
  std::string name;          // "--gpu-memory-utilization", "-O"
  bool takes_value = false;  // false: a switch (its "--no-" form is accepted too)
  // How many arguments the value spans (argparse's nargs): one; "+" every following argument
  // that is not a flag (--served-model-name a b); "?" the next one unless it is a flag.
  enum class Values { kOne, kOneOrMore, kOptional };
  Values values = Values::kOne;
  // The value is a JSON object; the engine folds dotted --FLAG.KEY VALUE arguments into it.
  bool json = false;
  // A flag of older releases the fork at 28be48fa9 no longer has: its parser refuses it
  // ("unrecognized arguments"), and so does kvtopo, naming the fork's form where it has one
  // (`instead`, where {} stands for the value or values given).
  bool removed = false;
  std::string instead;
  // How the engine's parser reads the value ("type" in the file): text as given; an integer
  // ("int": Python's int(); "human int": with the k/K suffixes of human_readable_int); a number
  // ("float": float()); a config class ("json": bare 80m-style numbers expanded, then the JSON
  // object validated against the class's fields); any JSON ("json value": json.loads); or a
  // JSON object when the text looks like one and plain text otherwise ("json or text").
  enum class Type { kText, kInteger, kHumanInteger, kNumber, kJsonConfig, kJsonValue, kJsonOrText };
  Type type = Type::kText;
  bool none = false;  // "None" (or nothing) stands for no value (optional_type)
  // A list flag whose items optional_type reads ("None" or an empty item is None), which the
  // config class named here refuses as it is built, with pydantic's error; empty: not refused.
  std::string none_item_class;
  std::string none_item_error;
  std::vector<std::string> choices;  // argparse's choices; empty: any
  // The config that checks the bounds (and a JSON value's shape) is built for a multimodal
  // model only: the model layer checks them there.
  bool multimodal = false;
  // The bounds the engine's config puts on a number as it is built (pydantic's ge, gt, le, lt).
  struct Bounds {
    std::optional<double> min, above, max, below;
  };
  Bounds bounds;
  // A JSON flag the engine reads into a config class: the class and its fields (its parser
  // refuses any other key: the @config classes' extra="forbid").
  struct Key {
    std::string name;
    // "bool", "int", "float", "str", "list", "object", or "any" (not checked)
    std::string type = "any";
    bool nullable = false;             // `X | None`: null is taken
    std::vector<std::string> choices;  // a Literal's values
    Bounds bounds;
  };
  std::string json_class;
  std::vector<Key> keys;
  // The class's fields of older releases (each stood 30 days or more since 2025-03-31), which
  // its parser now refuses, in the order the deprecation read them: the commit that dropped it,
  // and the field that took its value ({} standing for the value as JSON), empty where none did.
  struct OlderKey {
    std::string name;
    std::string removed_by;
    std::string instead;
  };
  std::vector<OlderKey> older_keys;
};
// The flags of `vllm serve` that do not affect the KV-cache plan (profiles/vllm-flags.json).
const std::vector<VllmFlag>& VllmFlagsNotPlanned();
// The flag `token` names ("--port", "--port=8000", "--no-enforce-eager", "-O3", and a JSON flag's
// dotted key "--compilation-config.mode"), or nullptr.
const VllmFlag* FindVllmFlagNotPlanned(std::string_view token);
// The value of a flag not planned with, as the options hold it; nullptr when not given.
const VllmFlagValue* FindVllmFlagValue(const std::vector<VllmFlagValue>& values,
                                       std::string_view flag);
// Its (first) value as given; nullopt when the flag is not given or has no value.
std::optional<std::string> VllmFlagText(const std::vector<VllmFlagValue>& values,
                                        std::string_view flag);
// The same, but nullopt also for "None" or an empty value, which the parser's optional_type
// reads as no value.
std::optional<std::string> VllmFlagSetting(const std::vector<VllmFlagValue>& values,
                                           std::string_view flag);
// The environment variables vllm/envs.py registers (profiles/vllm-flags.json), sorted.
const std::vector<std::string>& KnownVllmEnvironment();
// A variable of older releases that vllm/envs.py no longer registers and no module of the fork at
// 28be48fa9 reads (profiles/vllm-flags.json `removed_environment`): the engine warns of it as it
// starts ("Unknown vLLM environment variable detected") and runs without it.
struct RemovedVllmVariable {
  std::string name;
  std::string removed_by;  // the fork's commit that dropped it from vllm/envs.py
  std::string instead;     // the fork's form, {} standing for the value; empty: none
};
const std::vector<RemovedVllmVariable>& RemovedVllmEnvironment();
// The variable `name`, or nullptr when it is not one of those.
const RemovedVllmVariable* FindRemovedVllmVariable(std::string_view name);
// Whether a front end passes the variable `name` in LaunchOptions::vllm_environment: every VLLM_
// name, the other names vllm/envs.py registers, and those the engine's modules read as they are
// imported (ImportedEnvironmentRefusals).
bool EngineEnvironmentName(std::string_view name);
// A variable a module of the engine reads outside vllm/envs.py as it is imported
// (profiles/vllm-flags.json `import_reads`: int(os.getenv(...)) or an assert at module level),
// set to a value its reader cannot read, so the import raises and the engine fails to start.
struct ImportedEnvironmentRefusal {
  enum class Where {
    kModel,        // a model class's module imports it (inspected, and built by the workers)
    kEveryWorker,  // every GPU worker imports it as it starts
    kV1Runner,     // the workers of the V1 model runner import it as they start
    kModelBuild,   // the workers import it as they build the model: a class or layers it builds
  };
  std::string name;
  std::string value;  // as Python's repr shows it
  std::string reads;  // "<module> reads it as it is imported (<the reader's message>)"
  std::string fix;    // "set an integer"
  Where where = Where::kEveryWorker;
  std::string model;  // kModel: the entry of ImportingModel::classes that imports it
  // What imports it as the workers build the model, whatever the runner (kModelBuild; for
  // kV1Runner, its place where the V1 runner does not run): an entry of
  // ImportingModel::built_classes, else what a layer kind of ImportingModel::built_layers names
  // ("KDA layers"); empty where nothing does.
  std::string built;
  bool built_layers = false;  // `built` names layers, not a class
};
// What a launch imports with its model (and, checked on its own, with a separate draft).
struct ImportingModel {
  // The architectures and MTP model types (after the speculative config's override) whose model
  // classes the engine loads: as it inspects each (where its model-info cache does not hold the
  // class) and as its workers build the model.
  std::vector<std::string> classes;
  // The registered classes the model's class builds as the workers build the model (a wrapper's
  // language model, init_vllm_registered_model).
  std::vector<std::string> built_classes;
  // The kinds of layers the workers build: "kda", "gdn", "indexer", "nvfp4_moe_b12x" (NvFP4 MoE
  // layers whose kernel choice imports the b12x kernels; profiles/vllm-flags.json
  // `import_read_layers`).
  std::vector<std::string> built_layers;
};
// The refusals for `environment` (NAME=VALUE) where the engine imports the reading module: with
// the model class of one of `model.classes`, in every GPU worker, in the V1 model runner's (for
// the caller to decide whether that runner runs), or as the workers build a class or layers of
// the model. In the order the engine imports them.
std::vector<ImportedEnvironmentRefusal> ImportedEnvironmentRefusals(
    const std::vector<std::string>& environment, const ImportingModel& model);
// The registered language model a wrapper's class builds as the workers build the model, where
// it is a class of an `import_read_models` set (profiles/vllm-flags.json
// `import_read_language_models`): the first architecture the config's `section` states, when
// the wrapper builds what that section names and it names one, else `architecture`.
struct ImportReadLanguageModel {
  std::string architecture;
  std::string section;  // empty: the wrapper names `architecture` itself
};
std::optional<ImportReadLanguageModel> ImportReadLanguageModelOf(std::string_view wrapper);
// A variable of `environment` (NAME=VALUE) as vllm/envs.py's bool(int(value)) reads it; nullopt
// where it is not set, or set to text int() cannot read.
std::optional<bool> EnvironmentBool(const std::vector<std::string>& environment,
                                    std::string_view name);
// What the engine's parser and config check of the flags not planned with: each value against
// its flag's type, choices, bounds and (a JSON flag) keys, and the rules that tie them to each
// other and to the launch options. Errors name the flag, the value and the engine's message: a
// value the engine refuses is InvalidArgument (exit 2), flags that conflict are Rejected (exit 1).
Status CheckVllmFlagValues(const LaunchOptions& options);
// What MultiModalConfig checks of those flags as the engine builds it, which it does for a model
// with multimodal inputs only: their bounds, their JSON values' shapes, the processor cache's
// and the encoder's options (vllm/config/multimodal.py). The first refusal, naming `model`
// ("'config.json' (Qwen2_5_VLForConditionalGeneration)"), or empty.
std::string MultimodalFlagRefusal(const std::vector<VllmFlagValue>& values, std::string_view model);

// A `vllm serve --config FILE` YAML file as the engine's parser reads it
// (FlexibleArgumentParser.load_config_file over PyYAML's safe_load): the arguments it stands for,
// in file order: `key: true` is --key, `key: false` nothing, a list --key and each item, a
// mapping --key and its JSON, anything else --key and its Python str() ("None" for an empty
// value). The engine places them before the command line's own, which therefore win.
struct VllmConfigFileArgs {
  std::vector<std::string> args;
  // Warnings: a planning switch set false, which the engine drops (config-file-false-dropped).
  std::vector<Diagnostic> diagnostics;
};
// Errors name the file: not .yaml/.yml (the engine's check), unreadable, malformed YAML (with
// its line and column), not a mapping, or a construct safe_load would not read; and, in a build
// without libyaml, every file.
Result<VllmConfigFileArgs> ReadVllmConfigFile(const std::string& path);
// The same from the file's text; `path` names it in messages.
Result<VllmConfigFileArgs> VllmConfigFileArgsFromYaml(std::string_view text, std::string_view path);

// docs/launch-options.md: the table as Markdown (CLI flag, Python keyword, aliases, value,
// environment variable, help), and the `vllm serve` flags accepted without planning.
std::string LaunchOptionsMarkdown();

// Errors name the option: a non-positive size, an unknown dtype or mode, a malformed speculative
// config, a flag of older releases (RefuseRemovedFlags).
Result<LaunchConfig> ToLaunchConfig(const LaunchOptions& options);
// The interleave I the engine stores tokens with (its cp_kv_cache_interleave_size, which
// VllmConfig.__post_init__ replaces with dcp_kv_cache_interleave_size when that is above 1 and
// differs, under DCP only), from the two flags as given (1 where not) and the DCP size.
int64_t EngineInterleave(const LaunchOptions& options, int64_t dcp_size);
// Flags of older releases given (VllmFlag::removed among `not_planned`, --rope-scaling,
// --rope-theta): the engine's parser refuses them before anything else, and so does this, with
// one message naming the fork's form of each as given ("drop" where it has none); OK for none.
Status RefuseRemovedFlags(const LaunchOptions& options);
// --kv-cache-memory in bytes; 0 when not given.
Result<int64_t> KvCacheMemoryBytes(const LaunchOptions& options);

}  // namespace kvtopo
