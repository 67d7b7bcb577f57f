// The launch-option table, its parsers, and the one translation of LaunchOptions into a
// LaunchConfig (docs/launch-options.md is generated from the table).
#include "kvtopo/launch_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "internal/ascii_case.h"
#include "internal/checked_math.h"
#include "internal/json_int.h"
#include "internal/json_text.h"
#include "internal/pydantic.h"
#include "internal/units.h"
#include "kvtopo/backend.h"
#include "kvtopo/limits.h"
#include "kvtopo/model.h"
#include "model/architectures.h"
#include "model/config_fields.h"
#include "model/config_reader.h"
#include "model/embedded_profiles.h"
#include "model/kernel_backends.h"
#include "model/speculative_method.h"

namespace kvtopo {
namespace {

using LO = LaunchOptions;

// vLLM's human_readable_int_or_auto: "-1" or "auto" (any case), surrounding spaces ignored.
bool IsAutoLength(std::string_view text) {
  text = internal::StripAsciiSpace(text);
  return text == "-1" || internal::AsciiLower(text) == "auto";
}

std::string Underscored(std::string_view name) {
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  std::string out(name);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

}  // namespace

std::string_view OptionValueName(OptionValue value) {
  switch (value) {
    case OptionValue::kInt:
      return "integer";
    case OptionValue::kBytes:
      return "bytes";
    case OptionValue::kText:
      return "text";
    case OptionValue::kSwitch:
      return "switch";
  }
  return "?";
}

namespace {

// The options whose engine field is optional (`X | None` in its config class at 28be48fa9, so
// _compute_kwargs wraps the parser's type in optional_type): `None` or an empty value on the
// command line leaves them unset. --logits-processors is a list, where `None` is an item.
std::vector<LaunchOption> MarkOptionalFields(std::vector<LaunchOption> table) {
  static constexpr std::string_view kOptional[] = {"attention_backend",
                                                   "default_mm_loras",
                                                   "distributed_executor_backend",
                                                   "ec_transfer_config",
                                                   "hf_config_path",
                                                   "kv_cache_memory",
                                                   "kv_offloading_size",
                                                   "kv_transfer_config",
                                                   "mamba_block_size",
                                                   "max_cpu_loras",
                                                   "num_gpu_blocks_override",
                                                   "quantization",
                                                   "revision",
                                                   "spec_method",
                                                   "spec_model",
                                                   "speculative_config"};
  for (LaunchOption& option : table) {
    option.none =
        std::find(std::begin(kOptional), std::end(kOptional), option.name) != std::end(kOptional);
  }
  return table;
}

}  // namespace

const std::vector<LaunchOption>& LaunchOptionTable() {
  using V = OptionValue;
  static const std::vector<LaunchOption> kTable = MarkOptionalFields({
      {"tensor_parallel_size",
       {},
       "tp",
       V::kInt,
       "",
       "TP size; default 1",
       &LO::tensor_parallel_size,
       1,
       kMaxParallelSize},
      {"pipeline_parallel_size",
       {},
       "pp",
       V::kInt,
       "",
       "PP size: the hidden layers split over stages (VLLM_PP_LAYER_PARTITION), draft layers "
       "on the last; the stage with the largest pages per block sizes every stage's pool; "
       "default 1",
       &LO::pipeline_parallel_size,
       1,
       kMaxParallelSize},
      {"decode_context_parallel_size",
       {},
       "dcp",
       V::kInt,
       "",
       "DCP size N: ranks of a TP group that split token positions; default 1",
       &LO::decode_context_parallel_size,
       1,
       kMaxParallelSize},
      {"prefill_context_parallel_size",
       {},
       "pcp",
       V::kInt,
       "",
       "PCP size; default 1",
       &LO::prefill_context_parallel_size,
       1,
       kMaxParallelSize},
      {"dcp_kv_cache_interleave_size",
       {},
       "",
       V::kInt,
       "",
       "the engine's DCP interleave flag: above 1 under DCP it replaces "
       "--cp-kv-cache-interleave-size (the engine warns that it will be deprecated); FlashInfer "
       "reads it as given for each rank's local lengths; default 1",
       &LO::dcp_kv_cache_interleave_size,
       1,
       kMaxBlockSize},
      {"cp_kv_cache_interleave_size",
       {},
       "",
       V::kInt,
       "",
       "interleave I under DCP or PCP: consecutive tokens a rank holds before the next (a "
       "--dcp-kv-cache-interleave-size above 1 takes its place under DCP); default 1",
       &LO::cp_kv_cache_interleave_size,
       1,
       kMaxBlockSize},
      {"block_size",
       {},
       "",
       V::kInt,
       "",
       "tokens per physical page on one rank; default: the target backend's cache block",
       &LO::block_size,
       1,
       kMaxBlockSize},
      {"max_model_len",
       {},
       "",
       V::kInt,
       "",
       "longest request in tokens (64k = 64,000; 64K = 65,536); default: the length the config "
       "derives (max_position_embeddings, or model_max_length, times its RoPE scaling factor); "
       "a longer one is refused unless --allow-long-max-model-len; auto or -1: the derived "
       "length, lowered to the longest whose request fits the KV-cache memory",
       &LO::max_model_len,
       1,
       kMaxModelLen},
      {"dtype",
       {},
       "",
       V::kText,
       "",
       "the model's dtype, which an auto KV cache stores: auto, bfloat16, float16 (half), "
       "float32 (float); default auto: the config's torch_dtype, a float32 config as bfloat16",
       &LO::dtype},
      {"quantization",
       {},
       "q",
       V::kText,
       "",
       "the weights' quantization method, compared as given with the checkpoint's (after the "
       "engine's overrides: gptq runs as auto_gptq, awq as awq_marlin, ...); checked for a "
       "mismatch, an unknown or deprecated method, the model dtype and, with "
       "--device-capability, the GPU; default the checkpoint's",
       &LO::quantization},
      {"allow_deprecated_quantization",
       {},
       "",
       V::kSwitch,
       "",
       "run a deprecated quantization method (fbgemm_fp8, fp_quant), which the engine refuses "
       "otherwise; default off",
       &LO::allow_deprecated_quantization},
      {"config_format",
       {},
       "",
       V::kText,
       "",
       "how MODEL's config is read: hf (config.json), mistral (params.json, converted as the "
       "engine converts it) or auto, the default: mistral for a directory holding params.json "
       "and consolidated*.safetensors, else hf",
       &LO::config_format},
      {"model_impl",
       {},
       "",
       V::kText,
       "",
       "which model class the engine builds: auto, the default (its own class for an "
       "architecture its registry holds, else its Transformers backend for a config whose "
       "auto_map names custom code, with --trust-remote-code), vllm (its own class only) or "
       "transformers (the Transformers backend: one attention shape for every layer)",
       &LO::model_impl},
      {"trust_remote_code",
       {},
       "",
       V::kSwitch,
       "",
       "the engine loads the custom code a config's auto_map names (for its Transformers "
       "backend); default off",
       &LO::trust_remote_code},
      {"runner",
       {},
       "",
       V::kText,
       "",
       "the engine's runner: auto, the default (pooling for a Sentence Transformers checkpoint "
       "or a pooling architecture, else generate), generate, pooling or draft; kvtopo plans "
       "generate and refuses the others",
       &LO::runner},
      {"convert",
       {},
       "",
       V::kText,
       "",
       "the engine's model conversion: auto, the default, none, embed or classify; embed and "
       "classify adapt the model into a pooling model, which kvtopo refuses",
       &LO::convert},
      {"revision",
       {},
       "",
       V::kText,
       "",
       "the branch, tag or commit of a Hugging Face repo id MODEL: kvtopo reads that snapshot "
       "from the local Hugging Face cache (HF_HUB_CACHE, HF_HOME); default main",
       &LO::revision},
      {"hf_config_path",
       {},
       "",
       V::kText,
       "",
       "where the engine reads the target's config instead of MODEL's (a config.json, a "
       "directory holding one, a GGUF file or a profile name); default: MODEL",
       &LO::hf_config_path},
      {"hf_overrides",
       {},
       "",
       V::kText,
       "",
       "JSON object of config values the engine sets on the model's config after loading it "
       "(a nested config's values merge into it; keys whose value the config class derives "
       "others from are not applied, with a warning); also --hf-overrides.KEY VALUE",
       &LO::hf_overrides},
      {"rope_scaling",
       {},
       "",
       V::kText,
       "",
       "a flag of older releases (a JSON object they set as the config's rope_scaling), which "
       "the fork removed: refused as its parser refuses it, naming its form, the --hf-overrides "
       "object it made",
       &LO::rope_scaling},
      {"rope_theta",
       {},
       "",
       V::kText,
       "",
       "a flag of older releases (a positive number they set as the config's rope_theta), which "
       "the fork removed: refused as its parser refuses it, naming its form, the --hf-overrides "
       "object it made",
       &LO::rope_theta},
      {"kv_cache_dtype",
       {},
       "",
       V::kText,
       "",
       "auto, bfloat16, fp8, fp8_e4m3, fp8_ds_mla, nvfp4, turboquant_k8v4, ..., exactly as the "
       "engine's parser takes them (no bf16, float32 or upper case); default auto (the model's "
       "dtype, or the KV-cache dtype a ModelOpt checkpoint states); each attention backend takes "
       "only some (FlashAttention fp8 only as version 3 on a Hopper GPU)",
       &LO::kv_cache_dtype},
      {"kv_cache_memory",
       {"kv_cache_memory_bytes"},
       "",
       V::kBytes,
       "",
       "KV-cache bytes per rank: 1325000000, 12GiB, 12G (x1024), 12g (x1000); default 32 GiB",
       &LO::kv_cache_memory,
       1,
       kMaxKvCacheMemoryBytes},
      {"num_gpu_blocks_override",
       {},
       "",
       V::kInt,
       "",
       "pool blocks instead of memory // bytes per block",
       &LO::num_gpu_blocks_override,
       1,
       kMaxNumBlocks},
      {"max_num_seqs",
       {},
       "",
       V::kInt,
       "",
       "block-table rows per group; default 256",
       &LO::max_num_seqs,
       1,
       kMaxNumSeqs},
      {"max_num_batched_tokens",
       {},
       "",
       V::kInt,
       "",
       "tokens scheduled per step (bounds sliding windows); default 8192",
       &LO::max_num_batched_tokens,
       1,
       kMaxNumBatchedTokens},
      {"async_scheduling",
       {},
       "",
       V::kSwitch,
       "",
       "scheduling overlaps the batches in flight, whose tokens the windowed caches hold: two "
       "with one pipeline stage, one per stage with more, and one more than the stages on the "
       "V2 model runner (off: one per stage); default on unless the speculative method or the "
       "executor rules it out (Ray's first one, VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0)",
       &LO::async_scheduling},
      {"enable_prefix_caching",
       {},
       "",
       V::kSwitch,
       "",
       "prefix caching; default on, off for a hybrid model with recurrent layers (the engine's "
       "default)",
       &LO::enable_prefix_caching},
      {"mamba_cache_mode",
       {},
       "",
       V::kText,
       "",
       "recurrent cache mode: none, align, all; default align (none without prefix caching)",
       &LO::mamba_cache_mode},
      {"mamba_block_size",
       {},
       "",
       V::kInt,
       "",
       "tokens per recurrent checkpoint, with prefix caching only (the engine refuses it without); "
       "default: the attention block",
       &LO::mamba_block_size,
       1,
       kMaxBlockSize},
      {"mamba_cache_dtype",
       {},
       "",
       V::kText,
       "",
       "recurrent conv-state dtype: auto, bfloat16, float16, float32; default auto",
       &LO::mamba_cache_dtype},
      {"kv_cache_dtype_skip_layers",
       {},
       "",
       V::kText,
       "",
       "K/V attention layers kept at the model dtype whatever --kv-cache-dtype says (MLA "
       "layers do not read it): layer indices and sliding_window (every windowed layer), one or "
       "more values, as the engine compares them (\"0,1\" is one entry that matches no layer); "
       "not planned for models with recurrent layers",
       &LO::kv_cache_dtype_skip_layers,
       1,
       0,
       /*many_values=*/true},
      {"mamba_ssm_cache_dtype",
       {},
       "",
       V::kText,
       "",
       "GDN temporal-state dtype: auto, bfloat16, float16, float32; default auto",
       &LO::mamba_ssm_cache_dtype},
      {"attention_backend",
       {},
       "",
       V::kText,
       "",
       "target attention backend (kvtopo profiles); default (or auto): the model's",
       &LO::attention_backend},
      {"attention_config",
       {},
       "ac",
       V::kText,
       "",
       "JSON AttentionConfig, its fields checked as the engine checks them; backend names the "
       "target's attention backend as --attention-backend does (the engine refuses the two "
       "together; auto: the model's); flash_attn_version 2 takes FlashAttention's sinks and "
       "per-head scales away, use_trtllm_attention false FlashInfer's sinks, and makes its one "
       "window per KV cache group certain; the other fields leave the plan as it is; also "
       "--attention-config.KEY VALUE; default none",
       &LO::attention_config},
      {"speculative_config",
       {},
       "sc",
       V::kText,
       "",
       "JSON: method, model, revision (the draft repo's), num_speculative_tokens, "
       "draft_attention_backend, attention_backend, "
       "draft_kv_cache_dtype, dflash_draft_window_size, draft_tensor_parallel_size, "
       "parallel_drafting, disable_padded_drafter_batch, max_model_len, "
       "suffix_decoding_max_tree_depth, draft_model_config (extract_hidden_states's layer ids); "
       "also --speculative-config.KEY VALUE",
       &LO::speculative_config},
      {"spec_method",
       {},
       "",
       V::kText,
       "",
       "the speculative config's method, as --speculative-config '{\"method\": ...}'; refused "
       "when that JSON names a method too",
       &LO::spec_method},
      {"spec_model",
       {},
       "",
       V::kText,
       "",
       "the speculative config's model (draft); refused when --speculative-config names one too",
       &LO::spec_model},
      {"spec_tokens",
       {},
       "",
       V::kInt,
       "",
       "the speculative config's num_speculative_tokens; refused when --speculative-config "
       "names it too",
       &LO::spec_tokens,
       1,
       kMaxSpeculativeTokens},
      {"shard_draft",
       {},
       "",
       V::kSwitch,
       "",
       "shard the draft cache under DCP, as VLLM_DCP_SHARD_DRAFT=1",
       &LO::shard_draft},
      {"dcp_shard_draft",
       {},
       "",
       V::kText,
       "VLLM_DCP_SHARD_DRAFT",
       "draft-cache sharding under DCP as the engine reads it, per method: 1 shards every "
       "draft but DFlash; true/yes shard all but DSpark and DFlash; 0/false/no replicate MTP; "
       "unset: causal drafts and MTP shard, non-causal ones replicate (docs/planner.md)",
       &LO::dcp_shard_draft},
      {"kv_group_size",
       {},
       "",
       V::kInt,
       "VLLM_K3_KV_GROUP_SIZE",
       "layers per KV-cache group instead of the min-bucket rule",
       &LO::kv_group_size,
       1,
       kMaxLayers},
      {"dspark_draft_kv_window",
       {},
       "",
       V::kInt,
       "VLLM_DSPARK_DRAFT_KV_WINDOW",
       "DSpark draft cache window in tokens (sliding-window MLA); 0: the full draft cache",
       &LO::dspark_draft_kv_window,
       0,
       kMaxModelLen},
      {"ssm_conv_state_layout",
       {},
       "",
       V::kText,
       "VLLM_SSM_CONV_STATE_LAYOUT",
       "the order of a recurrent layer's conv state: SD (state_len, channels), the engine's "
       "default, or DS (channels, state_len); the same bytes either way (case-sensitive; another "
       "value is refused, as the engine refuses it at startup); NixlConnector needs DS beside "
       "recurrent layers",
       &LO::ssm_conv_state_layout},
      {"allow_chunked_local_attn_with_hybrid_kv_cache",
       {},
       "",
       V::kSwitch,
       "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE",
       "keep chunked local attention (Llama 4) in the hybrid KV cache manager; default on, as "
       "the engine's variable defaults to 1; off (0): the engine runs without the manager and "
       "caches those layers as full attention (the variable is read as bool(int(value)): any "
       "nonzero integer is on, text that is no integer is refused)",
       &LO::allow_chunked_local_attn_with_hybrid_kv_cache,
       1,
       0,
       false,
       LaunchOption::EnvSwitch::kPythonInt},
      {"allow_long_max_model_len",
       {},
       "",
       V::kSwitch,
       "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
       "let --max-model-len exceed the length the config derives (a warning); default off: the "
       "engine refuses such a launch (the variable counts when 1 or true, in any case)",
       &LO::allow_long_max_model_len,
       1,
       0,
       false,
       LaunchOption::EnvSwitch::kOneOrTrue},
      {"disable_hybrid_kv_cache_manager",
       {},
       "",
       V::kSwitch,
       "",
       "run the engine without its hybrid KV cache manager: sliding-window and chunked layers "
       "cached as full attention, a model whose layers cannot share one cache type refused; "
       "--no-: keep it on, refusing a launch the engine must run without it; default: the "
       "engine's choice (off for chunked local attention under an EAGLE-family method or with "
       "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0, and for a KV connector without "
       "SupportsHMA)",
       &LO::disable_hybrid_kv_cache_manager},
      {"kv_transfer_config",
       {},
       "",
       V::kText,
       "",
       "the KV connector (a JSON object: kv_connector, kv_role, kv_connector_module_path, "
       "kv_connector_extra_config); one without hybrid KV cache manager support turns the "
       "manager off; default none",
       &LO::kv_transfer_config},
      {"ec_transfer_config",
       {},
       "",
       V::kText,
       "",
       "the encoder-cache connector of a disaggregated multimodal encoder (a JSON object: "
       "ec_connector, ec_role, ...); an instance that only produces the encoder cache "
       "(ec_role ec_producer) keeps no KV cache, which kvtopo refuses to plan; default none",
       &LO::ec_transfer_config},
      {"kv_offloading_size",
       {},
       "",
       V::kText,
       "",
       "GiB of CPU memory for KV offloading: the engine sets up the --kv-offloading-backend's "
       "connector; default none",
       &LO::kv_offloading_size},
      {"kv_offloading_backend",
       {},
       "",
       V::kText,
       "",
       "native (OffloadingConnector) or lmcache (LMCacheConnectorV1, without hybrid KV cache "
       "manager support), used with --kv-offloading-size; default native",
       &LO::kv_offloading_backend},
      {"use_simple_kv_offload",
       {},
       "",
       V::kSwitch,
       "VLLM_USE_SIMPLE_KV_OFFLOAD",
       "the native --kv-offloading-backend builds SimpleCPUOffloadConnector instead of "
       "OffloadingConnector (both support the hybrid KV cache manager); default off (the "
       "variable is read as bool(int(value)))",
       &LO::use_simple_kv_offload,
       1,
       0,
       false,
       LaunchOption::EnvSwitch::kPythonInt},
      {"torch_compile_disable",
       {},
       "",
       V::kSwitch,
       "TORCH_COMPILE_DISABLE",
       "compilation mode 0 (NONE) whatever -O or --compilation-config say, so piecewise CUDA "
       "graphs are off (the variable counts only when exactly 1); default off",
       &LO::torch_compile_disable,
       1,
       0,
       false,
       LaunchOption::EnvSwitch::kOnlyOne},
      {"use_breakable_cudagraph",
       {},
       "",
       V::kSwitch,
       "VLLM_USE_BREAKABLE_CUDAGRAPH",
       "compilation mode 0 (NONE), with the CUDA graph mode kept as -O or --compilation-config "
       "set it (the variable counts only when exactly 1); default off",
       &LO::use_breakable_cudagraph,
       1,
       0,
       false,
       LaunchOption::EnvSwitch::kOnlyOne},
      {"batch_invariant",
       {},
       "",
       V::kSwitch,
       "VLLM_BATCH_INVARIANT",
       "batch-invariant kernels: every attention backend must support batch invariance, and "
       "TRITON_MLA layers turn prefix caching off (the variable is read as bool(int(value)), so "
       "any nonzero integer is on and text that is no integer is refused); default off",
       &LO::batch_invariant,
       1,
       0,
       false,
       LaunchOption::EnvSwitch::kPythonInt},
      {"enable_sleep_mode",
       {},
       "",
       V::kSwitch,
       "",
       "sleep mode: the KV cache is allocated where expandable segments are off, so a KV "
       "connector may run beside PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; default off",
       &LO::enable_sleep_mode},
      {"enable_lora",
       {},
       "",
       V::kSwitch,
       "",
       "LoRA adapters (their weights leave the KV cache as it is); with a speculative config the "
       "engine refuses --max-num-batched-tokens below --max-num-seqs x (num_speculative_tokens + "
       "1); default off",
       &LO::enable_lora},
      {"pytorch_cuda_alloc_conf",
       {},
       "",
       V::kText,
       "PYTORCH_CUDA_ALLOC_CONF",
       "PyTorch's CUDA allocator settings the engine runs with: with expandable_segments:True, "
       "a KV connector is refused unless --enable-sleep-mode, as the engine refuses it; default "
       "unset",
       &LO::pytorch_cuda_alloc_conf},
      {"enable_chunked_prefill",
       {},
       "",
       V::kSwitch,
       "",
       "chunked prefill; default on. Off, a prompt is scheduled whole: a defaulted "
       "--max-num-batched-tokens grows to --max-model-len, and a given one below it is refused",
       &LO::enable_chunked_prefill},
      {"performance_mode",
       {},
       "",
       V::kText,
       "",
       "balanced, interactivity or throughput; default balanced. throughput doubles the "
       "defaulted --max-num-batched-tokens and --max-num-seqs, as the engine does",
       &LO::performance_mode},
      {"device_memory",
       {},
       "",
       V::kBytes,
       "",
       "the GPU's total memory as the engine reads it (nvidia-smi's memory.total), for the "
       "engine's device-dependent defaults: 70 GiB or more (not an A100): --max-num-batched-tokens "
       "8192 and --max-num-seqs 1024; below: 2048 and 256, as `vllm serve` defaults them. "
       "Default: not known, kvtopo's 8192 and 256",
       &LO::device_memory,
       1,
       kMaxKvCacheMemoryBytes},
      {"device_name",
       {},
       "",
       V::kText,
       "",
       "the GPU's name as the engine reads it (nvidia-smi's name), with --device-memory: the "
       "engine keeps the smaller step defaults on a GPU whose name contains 'a100' (any case). "
       "A name in NVIDIA's table of CUDA GPUs (e.g. 'NVIDIA B200') also gives the GPU's compute "
       "capability where --device-capability is not given",
       &LO::device_name},
      {"device_capability",
       {},
       "",
       V::kText,
       "",
       "the GPU's compute capability as the engine reads it (torch.cuda.get_device_capability), "
       "MAJOR.MINOR: 9.0 an H100 or H200, 10.0 a B200, 12.0 an RTX PRO 6000 Blackwell. It "
       "settles what the engine decides by the GPU: the backends that run there, the "
       "FlashAttention version (3 on 9.x, 4 on 10.x, else 2) and FlashInfer's TRT-LLM attention "
       "(10.x), and a backend the launch leaves unnamed is the engine's pick from its priority "
       "list for the GPU. Default: the capability of the GPU --device-name names, where "
       "NVIDIA's table of CUDA GPUs knows it; else not known (kvtopo plans its registry's "
       "defaults and warns where the GPU decides)",
       &LO::device_capability},
      {"data_parallel_size",
       {},
       "dp",
       V::kInt,
       "",
       "data-parallel replicas, each with the same per-rank cache; more than 1 with "
       "--enable-expert-parallel and --all2all-backend deepep_low_latency or nixl_ep (batched "
       "data-parallel MoE) makes the engine's defaulted --max-num-batched-tokens 256; default 1",
       &LO::data_parallel_size,
       1,
       kMaxParallelSize},
      {"enable_expert_parallel",
       {},
       "ep",
       V::kSwitch,
       "",
       "expert parallelism for MoE layers (the cache is the same); see --data-parallel-size; "
       "default off",
       &LO::enable_expert_parallel},
      {"enable_eplb",
       {},
       "",
       V::kSwitch,
       "",
       "expert-parallel load balancing (the cache is the same); the engine refuses it without "
       "--enable-expert-parallel or with one rank (TP x DP of 1), and as it builds the experts "
       "of a model that passes it on where their quantization method does not support it "
       "(ModelOpt FP8, MXFP4, GPTQ, AWQ, ...) and for MiniCPM's; default off",
       &LO::enable_eplb},
      {"enable_elastic_ep",
       {},
       "",
       V::kSwitch,
       "",
       "elastic expert parallelism (the cache is the same); the engine refuses it without "
       "--enable-eplb, with --pipeline-parallel-size above 1, or with external or hybrid "
       "data-parallel load balancing; default off",
       &LO::enable_elastic_ep},
      {"eplb_config",
       {},
       "",
       V::kText,
       "",
       "JSON EPLBConfig (window_size, step_interval, num_redundant_experts, log_balancedness, "
       "log_balancedness_interval, use_async, policy, communicator), its fields checked as the "
       "engine checks them; also --eplb-config.KEY VALUE. The cache is the same; "
       "num_redundant_experts other than 0 needs --enable-eplb, and with it the routed and "
       "redundant experts must split evenly over the expert-parallel ranks (DP x PCP x TP) of a "
       "model that passes EPLB to its experts; default none",
       &LO::eplb_config},
      {"kernel_config",
       {},
       "",
       V::kText,
       "",
       "JSON KernelConfig (moe_backend, linear_backend, enable_flashinfer_autotune, "
       "ir_op_priority), its fields checked as the engine checks them; also "
       "--kernel-config.KEY VALUE. The cache is the same; a moe_backend other than auto must "
       "be of the kernel family of the experts' quantization method (the engine refuses the "
       "model otherwise), and deep_gemm_mega_moe is DeepSeek-V4's MegaMoE, which needs expert "
       "parallelism, sqrtsoftplus routing, fp4 experts, experts in equal shares per rank and "
       "compute capability 10.x; default none",
       &LO::kernel_config},
      {"ir_op_priority",
       {},
       "",
       V::kText,
       "",
       "JSON IrOpPriorityConfig (rms_norm, fused_add_rms_norm: each a list of providers or a "
       "comma-separated string of them), also --ir-op-priority.KEY VALUE; the providers must be "
       "ones the engine registers (native, vllm_c, aiter, oink, xpu_kernels), and an op given "
       "here and in --kernel-config's ir_op_priority is refused. The cache is the same; default "
       "none",
       &LO::ir_op_priority},
      {"moe_backend",
       {},
       "",
       V::kText,
       "",
       "the MoE kernels, in any case and with - for _: auto, b12x, triton, deep_gemm, "
       "deep_gemm_mega_moe, cutlass, flashinfer_trtllm, flashinfer_cutlass, flashinfer_cutedsl, "
       "marlin, humming, triton_unfused, aiter, emulation; overrides --kernel-config's unless "
       "auto; see --kernel-config; default auto",
       &LO::moe_backend},
      {"linear_backend",
       {},
       "",
       V::kText,
       "",
       "the quantized linear kernels, in any case and with - for _: auto, cutlass, "
       "flashinfer_cutlass, flashinfer_trtllm, flashinfer_cudnn, marlin, triton, deep_gemm, "
       "torch, aiter, machete, fbgemm, conch, exllama, emulation; overrides --kernel-config's "
       "unless auto; the cache is the same; default auto",
       &LO::linear_backend},
      {"enable_flashinfer_autotune",
       {},
       "",
       V::kSwitch,
       "",
       "FlashInfer's autotuning at kernel warmup (the cache is the same); the engine refuses it "
       "beside --kernel-config's enable_flashinfer_autotune; default: the engine's",
       &LO::enable_flashinfer_autotune},
      {"use_v2_model_runner",
       {},
       "",
       V::kSwitch,
       "VLLM_USE_V2_MODEL_RUNNER",
       "the engine's V2 model runner (read as bool(int(value))); default: the engine's choice, "
       "the V1 runner for a MoE or quantized model. The cache is the same; a draft is built "
       "under the target's config there (the speculative config's moe_backend unread), under "
       "its own under V1 (without expert parallelism)",
       &LO::use_v2_model_runner,
       1,
       0,
       false,
       LaunchOption::EnvSwitch::kPythonInt},
      {"data_parallel_external_lb",
       {},
       "dpe",
       V::kSwitch,
       "",
       "external data-parallel load balancing, one engine per DP rank (the cache is the same); "
       "the engine refuses it with --data-parallel-size 1, beside --data-parallel-hybrid-lb, or "
       "for a model without experts; default off",
       &LO::data_parallel_external_lb},
      {"data_parallel_hybrid_lb",
       {},
       "dph",
       V::kSwitch,
       "",
       "hybrid data-parallel load balancing (the cache is the same); the engine refuses it beside "
       "--data-parallel-external-lb; default off",
       &LO::data_parallel_hybrid_lb},
      {"data_parallel_rank",
       {},
       "dpn",
       V::kInt,
       "",
       "this engine's data-parallel rank, which turns external load balancing on (the cache is "
       "the same); the engine refuses a rank not below --data-parallel-size, --data-parallel-size "
       "1, or a model without experts; default none",
       &LO::data_parallel_rank,
       0,
       kMaxParallelSize - 1},
      {"nnodes",
       {},
       "n",
       V::kInt,
       "",
       "nodes the engine spans (the cache is the same); the engine refuses one that does not "
       "divide the world (TP x PP x DP), or more than 1 with --data-parallel-backend ray; "
       "default 1",
       &LO::nnodes,
       1,
       kMaxParallelSize},
      {"node_rank",
       {},
       "r",
       V::kInt,
       "",
       "this node's rank, below --nnodes; with external load balancing on several nodes it "
       "gives the data-parallel rank (the cache is the same); default 0",
       &LO::node_rank,
       0,
       kMaxParallelSize - 1},
      {"data_parallel_size_local",
       {},
       "dpl",
       V::kInt,
       "",
       "data-parallel ranks on this node (the cache is the same); the engine refuses more than "
       "--data-parallel-size, and other than 1 with external load balancing; default: inferred",
       &LO::data_parallel_size_local,
       0,
       kMaxParallelSize},
      {"data_parallel_start_rank",
       {},
       "dpr",
       V::kInt,
       "",
       "this node's first data-parallel rank, which with --data-parallel-size-local turns "
       "hybrid load balancing on (the cache is the same); default 0",
       &LO::data_parallel_start_rank,
       0,
       kMaxParallelSize - 1},
      {"data_parallel_backend",
       {},
       "dpb",
       V::kText,
       "",
       "mp or ray (the cache is the same); the engine refuses ray with --nnodes above 1; "
       "default mp",
       &LO::data_parallel_backend},
      {"headless",
       {},
       "",
       V::kSwitch,
       "",
       "run without an API server (the cache is the same); the engine refuses it beside "
       "--data-parallel-hybrid-lb; default off",
       &LO::headless},
      {"allow_runtime_lora_updating",
       {},
       "",
       V::kSwitch,
       "VLLM_ALLOW_RUNTIME_LORA_UPDATING",
       "LoRA adapters loaded and unloaded through the API (the variable counts when 1 or true, "
       "in any case); the engine refuses it with more than one API server; default off",
       &LO::allow_runtime_lora_updating,
       1,
       0,
       false,
       LaunchOption::EnvSwitch::kOneOrTrue},
      {"worker_multiproc_method",
       {},
       "",
       V::kText,
       "VLLM_WORKER_MULTIPROC_METHOD",
       "how the engine starts its worker processes: fork or spawn (the cache is the same); "
       "--mm-tensor-ipc torch_shm needs spawn; default spawn, which `vllm serve` sets when the "
       "variable is unset",
       &LO::worker_multiproc_method},
      {"api_server_count",
       {},
       "asc",
       V::kInt,
       "",
       "API server processes (the cache is the same); the engine refuses any above 0 with "
       "--headless, which starts none, and starts none for a count below 1 (a warning without "
       "--headless); default: the engine's (one per data-parallel rank)",
       &LO::api_server_count,
       -kMaxInt32,
       kMaxInt32},
      {"distributed_executor_backend",
       {},
       "",
       V::kText,
       "",
       "how the engine runs its workers: ray, mp, uni, external_launcher or an Executor class's "
       "path, module.Class (another name without a dot is refused, as the engine fails on it; "
       "the cache is the same, but DeepSeek-V4's offloading connector fails on workers in "
       "processes of their own, mp and ray); the engine refuses any but mp, uni and "
       "external_launcher with --nnodes above 1, any but mp, ray and external_launcher with "
       "pipeline stages, and uni, one worker, hangs with TP x PCP above 1 (refused); ray with "
       "VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0 runs without async scheduling; default: the engine's "
       "choice, mp for more than one worker (ray under --data-parallel-backend ray)",
       &LO::distributed_executor_backend},
      {"enable_return_routed_experts",
       {},
       "",
       V::kSwitch,
       "",
       "return each token's routed experts (the cache is the same); the engine refuses it beside "
       "a --kv-transfer-config connector, with --pipeline-parallel-size, DCP or PCP above 1, or "
       "for a config that does not state its experts per token and expert count; default off",
       &LO::enable_return_routed_experts},
      {"enable_dbo",
       {},
       "",
       V::kSwitch,
       "",
       "dual batch overlap (the cache is the same); the engine refuses it without "
       "--all2all-backend deepep_low_latency or deepep_high_throughput, and under the V2 model "
       "runner; default off",
       &LO::enable_dbo},
      {"ubatch_size",
       {},
       "",
       V::kInt,
       "",
       "micro-batches a step (the cache is the same); above 1 the engine refuses it without "
       "--all2all-backend deepep_low_latency or deepep_high_throughput; default 0",
       &LO::ubatch_size,
       0,
       kMaxInt32},
      {"enable_prompt_embeds",
       {},
       "",
       V::kSwitch,
       "",
       "prompt embeddings as inputs (the cache is the same); the V2 model runner refuses it; "
       "default off",
       &LO::enable_prompt_embeds},
      {"logits_processors",
       {},
       "",
       V::kText,
       "",
       "custom logits processors, one or more qualified names (the cache is the same); the V2 "
       "model runner refuses them; default none",
       &LO::logits_processors,
       1,
       0,
       /*many_values=*/true},
      {"logprobs_mode",
       {},
       "",
       V::kText,
       "",
       "raw_logprobs, processed_logprobs, raw_logits or processed_logits (the cache is the "
       "same); the V2 model runner refuses the logits modes; default raw_logprobs",
       &LO::logprobs_mode},
      {"kv_sharing_fast_prefill",
       {},
       "",
       V::kSwitch,
       "",
       "fast prefill for KV-sharing layers (the cache is the same); the engine refuses it with "
       "an EAGLE, EAGLE-3, MTP or DFlash draft, and under the V2 model runner; default off",
       &LO::kv_sharing_fast_prefill},
      {"gpu_memory_utilization",
       {},
       "",
       V::kText,
       "",
       "the share of GPU memory the engine may use, above 0 and at most 1 (the engine refuses "
       "any other); kvtopo plans --kv-cache-memory instead; default 0.92",
       &LO::gpu_memory_utilization},
      {"max_lora_rank",
       {},
       "",
       V::kInt,
       "",
       "the largest LoRA rank: 1, 8, 16, 32, 64, 128, 256, 320 or 512, as the engine's parser "
       "takes it (the cache is the same); default 16",
       &LO::max_lora_rank,
       0,
       kMaxInt32},
      {"max_loras",
       {},
       "",
       V::kInt,
       "",
       "LoRA adapters in a batch (the cache is the same); with --enable-lora the engine refuses "
       "0; default 1",
       &LO::max_loras,
       0,
       kMaxInt32},
      {"max_cpu_loras",
       {},
       "",
       V::kInt,
       "",
       "LoRA adapters kept in CPU memory (the cache is the same); with --enable-lora the engine "
       "refuses one above 0 and below --max-loras; default --max-loras",
       &LO::max_cpu_loras,
       0,
       kMaxInt32},
      {"lora_dtype",
       {},
       "",
       V::kText,
       "",
       "the LoRA adapters' dtype (the cache is the same); with --enable-lora the engine refuses "
       "any but auto, float16 and bfloat16; default auto",
       &LO::lora_dtype},
      {"default_mm_loras",
       {},
       "",
       V::kText,
       "",
       "JSON object of a LoRA adapter per modality (the cache is the same); the engine refuses "
       "a non-empty one for a target without multimodal inputs, with or without --enable-lora; "
       "also --default-mm-loras.KEY VALUE; default none",
       &LO::default_mm_loras},
      {"enable_auto_tool_choice",
       {},
       "",
       V::kSwitch,
       "",
       "automatic tool choice (the cache is the same); the engine refuses it without "
       "--tool-call-parser, or with one it does not register unless --tool-parser-plugin adds "
       "parsers; default off",
       &LO::enable_auto_tool_choice},
      {"tool_call_parser",
       {},
       "",
       V::kText,
       "",
       "the tool call parser, checked against the engine's with --enable-auto-tool-choice (the "
       "cache is the same); default none",
       &LO::tool_call_parser},
      {"tool_parser_plugin",
       {},
       "",
       V::kText,
       "",
       "a file registering tool call parsers (not read: any --tool-call-parser is then taken); "
       "default none",
       &LO::tool_parser_plugin},
      {"reasoning_parser",
       {},
       "",
       V::kText,
       "",
       "the reasoning parser, one the engine registers unless --reasoning-parser-plugin adds "
       "parsers (the cache is the same); default none",
       &LO::reasoning_parser},
      {"reasoning_parser_plugin",
       {},
       "",
       V::kText,
       "",
       "a file registering reasoning parsers (not read: any --reasoning-parser is then taken); "
       "default none",
       &LO::reasoning_parser_plugin},
      {"enable_log_requests",
       {},
       "",
       V::kSwitch,
       "",
       "log each request (the cache is the same); default off",
       &LO::enable_log_requests},
      {"enable_log_outputs",
       {},
       "",
       V::kSwitch,
       "",
       "log each request's outputs (the cache is the same); the engine refuses it without "
       "--enable-log-requests; default off",
       &LO::enable_log_outputs},
      {"max_num_partial_prefills",
       {},
       "",
       V::kInt,
       "",
       "prefills scheduled concurrently in part; the engine refuses any value but 1 (concurrent "
       "partial prefill is not supported); default 1",
       &LO::max_num_partial_prefills,
       1,
       kMaxNumSeqs},
      {"max_long_partial_prefills",
       {},
       "",
       V::kInt,
       "",
       "long prompts prefilled concurrently in part; the engine refuses any value but 1; "
       "default 1",
       &LO::max_long_partial_prefills,
       1,
       kMaxNumSeqs},
      {"long_prefill_token_threshold",
       {},
       "",
       V::kInt,
       "",
       "prompt length above which a prefill counts as long (the cache is the same); in Mamba "
       "align mode the engine refuses one below the cache block once the KV cache is sized; "
       "default 0 (none)",
       &LO::long_prefill_token_threshold,
       0,
       kMaxModelLen},
      {"disable_chunked_mm_input",
       {},
       "",
       V::kSwitch,
       "",
       "schedule a multimodal input whole (the cache is the same); the engine refuses it in Mamba "
       "align mode once the KV cache is sized; default off",
       &LO::disable_chunked_mm_input},
      {"enforce_eager",
       {},
       "",
       V::kSwitch,
       "",
       "run without CUDA graphs (the cache is the same); without it the engine captures full "
       "decode graphs, which with recurrent layers need a KV block per --max-num-seqs row; "
       "default off",
       &LO::enforce_eager},
      {"optimization_level",
       {},
       "O",
       V::kInt,
       "",
       "the engine's optimization level (-O0 to -O3, also -O 3): its default CUDA graph mode, "
       "none at 0, piecewise at 1, full and piecewise at 2 and 3 (the cache is the same); "
       "default 2",
       &LO::optimization_level,
       0,
       3},
      {"compilation_config",
       {},
       "cc",
       V::kText,
       "",
       "JSON CompilationConfig, checked as the engine checks its fields; mode, cudagraph_mode, "
       "splitting_ops, use_inductor_graph_partition and pass_config's fuse_attn_quant, "
       "enable_sp, fuse_gemm_comms and sp_min_token_num decide the CUDA graph mode, "
       "cudagraph_capture_sizes and max_cudagraph_capture_size its sizes (the cache is the "
       "same); also --compilation-config.KEY VALUE; default none",
       &LO::compilation_config},
      {"cudagraph_capture_sizes",
       {},
       "",
       V::kText,
       "",
       "the batch sizes the engine captures CUDA graphs for, one or more positive integers "
       "(the cache is the same); with speculative decoding its decode graphs round them up to "
       "multiples of 1 + num_speculative_tokens, and refuse the launch once the weights are "
       "loaded when none fits the largest; refused beside --compilation-config's "
       "cudagraph_capture_sizes; default: the engine's",
       &LO::cudagraph_capture_sizes,
       1,
       0,
       /*many_values=*/true},
      {"max_cudagraph_capture_size",
       {},
       "",
       V::kInt,
       "",
       "the largest CUDA graph capture size (the cache is the same); the engine refuses 0 with "
       "CUDA graphs, and one that is not the largest of --cudagraph-capture-sizes given with "
       "it; refused beside --compilation-config's max_cudagraph_capture_size; default "
       "min(--max-num-seqs x (1 + num_speculative_tokens) x 2, 512)",
       &LO::max_cudagraph_capture_size,
       0,
       kMaxInt32},
      {"pp_layer_partition",
       {},
       "",
       V::kText,
       "VLLM_PP_LAYER_PARTITION",
       "hidden layers per pipeline stage, comma-separated (one per stage, summing to the model's "
       "layers); default: the engine's even split, the remainder one each to the stages before "
       "the last",
       &LO::pp_layer_partition},
      {"all2all_backend",
       {},
       "",
       V::kText,
       "",
       "MoE all-to-all backend: allgather_reducescatter (default), deepep_high_throughput, "
       "deepep_low_latency, mori, nixl_ep, flashinfer_nvlink_two_sided, "
       "flashinfer_nvlink_one_sided, flashinfer_all2allv; naive and pplx fall back to "
       "allgather_reducescatter, as the engine does; see --data-parallel-size",
       &LO::all2all_backend},
      {"disable_sliding_window",
       {},
       "",
       V::kSwitch,
       "",
       "sliding-window layers attend over the whole request (cached as full attention) and the "
       "derived maximum length is capped at the config's sliding_window; default off",
       &LO::disable_sliding_window},
      {"language_model_only",
       {},
       "",
       V::kSwitch,
       "",
       "every modality's input limit is 0: a multimodal target serves text alone, which a "
       "draft model or parallel drafting needs beside it; default off",
       &LO::language_model_only},
      {"dcp_comm_backend",
       {},
       "",
       V::kText,
       "",
       "how DCP ranks combine partial attention: ag_rs (all-gather + reduce-scatter, the "
       "default) or a2a (all-to-all), which the engine refuses without DCP > 1; the cache "
       "layout is the same",
       &LO::dcp_comm_backend},
      {"enable_mamba_cache_stochastic_rounding",
       {},
       "",
       V::kSwitch,
       "",
       "stochastic rounding of recurrent state written to a float16 cache; the engine refuses "
       "it unless --mamba-ssm-cache-dtype is float16, and with the triton Mamba backend on a GPU "
       "other than compute capability 10.x (checked where --device-capability states it); "
       "default off",
       &LO::enable_mamba_cache_stochastic_rounding},
      {"mamba_backend",
       {},
       "",
       V::kText,
       "",
       "the Mamba selective-state-update kernels: triton or flashinfer (any case, as the "
       "engine's MambaBackendEnum reads it); default triton. The cache is the same; with "
       "--enable-mamba-cache-stochastic-rounding, triton needs compute capability 10.x",
       &LO::mamba_backend},
      {"prefix_match_unit",
       {},
       "",
       V::kInt,
       "",
       "hash block in tokens (must divide every group block); default: GCD of group blocks",
       &LO::prefix_match_unit,
       1,
       kMaxModelLen},
  });
  return kTable;
}

const LaunchOption* FindLaunchOption(std::string_view name) {
  const std::string key = Underscored(name);
  for (const LaunchOption& o : LaunchOptionTable()) {
    if (o.name == key || (!o.short_flag.empty() && o.short_flag == key)) return &o;
    if (std::find(o.aliases.begin(), o.aliases.end(), key) != o.aliases.end()) return &o;
  }
  return nullptr;
}

namespace {

// A byte count as the engine's human_readable_int takes it: the largest binary suffix that
// divides it ("12G"), else the digits.
std::string EngineByteSpelling(int64_t bytes) {
  for (const auto& [shift, suffix] : {std::pair{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}}) {
    if (bytes > 0 && bytes % (int64_t{1} << shift) == 0) {
      return fmt::format("{}{}", bytes >> shift, suffix);
    }
  }
  return std::to_string(bytes);
}

}  // namespace

Status SetLaunchOption(LaunchOptions& o, const LaunchOption& option, const LaunchValue& value,
                       std::string_view source) {
  auto type_error = [&](std::string_view expected) {
    return InvalidArgument(fmt::format("{} takes {}", source, expected));
  };
  const std::string* given = std::get_if<std::string>(&value);
  // Releases before the fork's read a JSON compilation config as -O; the fork's -O is the
  // optimization level, and its parser refuses anything but 0 to 3 there (-O{...} as an
  // invalid level, -O {...} as an unrecognized argument).
  if (option.name == "optimization_level" && given != nullptr &&
      internal::StripAsciiSpace(*given).starts_with('{')) {
    return InvalidArgument(fmt::format(
        "{} '{}' is a compilation config, which older releases read as -O: the fork's -O is the "
        "optimization level (0 to 3), and its parser refuses this; give it as --compilation-config "
        "(-cc)",
        source, *given));
  }
  if (option.none && given != nullptr && (given->empty() || *given == "None") &&
      source.starts_with('-')) {
    std::visit([&](auto member) { (o.*member).reset(); }, option.field);
    return Status::Ok();
  }
  return std::visit(
      [&](auto member) -> Status {
        using Field = std::remove_reference_t<decltype(o.*member)>;
        if constexpr (std::is_same_v<Field, std::optional<bool>>) {
          if (const bool* b = std::get_if<bool>(&value)) {
            o.*member = *b;
            return Status::Ok();
          }
          if (const std::string* text = std::get_if<std::string>(&value)) {
            const std::string lower = internal::AsciiLower(*text);
            if (lower == "1" || lower == "true" || lower == "yes") {
              o.*member = true;
              return Status::Ok();
            }
            if (lower == "0" || lower == "false" || lower == "no") {
              o.*member = false;
              return Status::Ok();
            }
            return InvalidArgument(
                fmt::format("{} is a switch; '{}' is neither true nor false", source, *text));
          }
          return type_error("True or False");
        } else if constexpr (std::is_same_v<Field, std::optional<std::string>>) {
          if (option.value == OptionValue::kBytes) {
            if (const int64_t* n = std::get_if<int64_t>(&value)) {
              if (*n < option.min_value || *n > option.max_value) {
                return InvalidArgument(fmt::format("{} must be in [{}, {}] bytes, got {}", source,
                                                   option.min_value, option.max_value, *n));
              }
              o.*member = std::to_string(*n);
              return Status::Ok();
            }
          }
          const std::string* text = std::get_if<std::string>(&value);
          if (text == nullptr) return type_error("a string");
          if (option.value == OptionValue::kBytes) {
            Result<int64_t> bytes = ParseByteSize(*text, source);
            if (!bytes.ok()) return bytes.status();
            if (*bytes < option.min_value || *bytes > option.max_value) {
              return InvalidArgument(fmt::format("{} must be in [{}, {}] bytes, got '{}'", source,
                                                 option.min_value, option.max_value, *text));
            }
            // The engine's parser reads --kv-cache-memory as its --kv-cache-memory-bytes, with
            // human_readable_int: a command line kvtopo reads may still fail there.
            if (option.name == "kv_cache_memory" && source.starts_with("--") &&
                !ParseHumanInt(*text, source).ok()) {
              o.diagnostics.push_back(
                  {Severity::kWarning, "kv-cache-memory-spelling",
                   fmt::format("{} '{}': the engine's parser reads --kv-cache-memory-bytes "
                               "(--kv-cache-memory spells the same flag) as digits with one "
                               "k/m/g/t or K/M/G/T suffix only and refuses this spelling; write "
                               "{} there",
                               source, *text, EngineByteSpelling(*bytes))});
            }
          }
          o.*member = *text;
          return Status::Ok();
        } else {
          int64_t n = 0;
          if (const int64_t* v = std::get_if<int64_t>(&value)) {
            n = *v;
          } else if (const std::string* text = std::get_if<std::string>(&value)) {
            if (option.name == "max_model_len" && IsAutoLength(*text)) {
              o.*member = kAutoMaxModelLen;
              return Status::Ok();
            }
            // The engine's parser takes suffixes ("32k") for these two only; int() elsewhere.
            KVTOPO_ASSIGN_OR_RETURN(
                n, option.name == "max_model_len" || option.name == "max_num_batched_tokens"
                       ? ParseHumanInt(*text, source)
                       : ParsePlainInt(*text, source));
          } else {
            return type_error("an integer");
          }
          // --max-model-len -1 (or auto): the engine fits the length to the memory.
          if (option.name == "max_model_len" && n == kAutoMaxModelLen) {
            o.*member = n;
            return Status::Ok();
          }
          if (n < option.min_value && option.min_value >= 0) {
            return InvalidArgument(fmt::format("{} must be {}, got {}", source,
                                               option.min_value == 1 ? "positive" : "0 or positive",
                                               n));
          }
          if (n < option.min_value) {
            return InvalidArgument(fmt::format("{} must be in [{}, {}], got {}", source,
                                               option.min_value, option.max_value, n));
          }
          if (n > option.max_value) {
            return InvalidArgument(fmt::format("{} must be in [{}, {}], got {}", source,
                                               option.min_value, option.max_value, n));
          }
          o.*member = n;
          return Status::Ok();
        }
      },
      option.field);
}

Status ApplyLaunchEnvironment(LaunchOptions& o,
                              const std::function<const char*(const char*)>& getenv) {
  for (const LaunchOption& option : LaunchOptionTable()) {
    if (option.env.empty()) continue;
    const bool given =
        std::visit([&](auto member) { return (o.*member).has_value(); }, option.field);
    if (given) continue;
    const std::string env(option.env);
    if (const char* value = getenv(env.c_str())) {
      if (option.env_switch == LaunchOption::EnvSwitch::kOnlyOne) {
        KVTOPO_RETURN_IF_ERROR(SetLaunchOption(o, option, std::string_view(value) == "1", env));
        continue;
      }
      if (option.env_switch == LaunchOption::EnvSwitch::kOneOrTrue) {
        const std::string word = internal::AsciiLower(internal::StripAsciiSpace(value));
        KVTOPO_RETURN_IF_ERROR(SetLaunchOption(o, option, word == "1" || word == "true", env));
        continue;
      }
      if (option.env_switch == LaunchOption::EnvSwitch::kPythonInt) {
        const std::optional<int64_t> n = internal::PythonInt(nlohmann::json(std::string(value)));
        if (!n) {
          return InvalidArgument(fmt::format(
              "{} is '{}', which is not an integer: the engine reads it with int() and fails at "
              "startup; set it to 0 or 1",
              env, value));
        }
        KVTOPO_RETURN_IF_ERROR(SetLaunchOption(o, option, *n != 0, env));
        continue;
      }
      KVTOPO_RETURN_IF_ERROR(SetLaunchOption(o, option, std::string(value), env));
    }
  }
  return Status::Ok();
}

namespace {

// A value as a shell word: as given when it holds no character a shell reads, else in single
// quotes.
std::string ShellWord(const std::string& value) {
  const bool plain = !value.empty() && std::all_of(value.begin(), value.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) ||
           std::string_view("_./:=,+@%-").find(ch) != std::string_view::npos;
  });
  if (plain) return value;
  std::string quoted = "'";
  for (char ch : value) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}

// The fork's form of what an older release took: `instead`, {} standing for the value or values
// given (VALUE where none was).
std::string FormInstead(std::string_view instead, const std::vector<std::string>& values) {
  const size_t at = instead.find("{}");
  if (at == std::string_view::npos) return std::string(instead);
  std::vector<std::string> words;
  for (const std::string& value : values) words.push_back(ShellWord(value));
  return fmt::format(
      "{}{}{}", instead.substr(0, at),
      words.empty() ? std::string("VALUE") : fmt::format("{}", fmt::join(words, " ")),
      instead.substr(at + 2));
}

}  // namespace

std::string LaunchOptionsMarkdown() {
  auto flag = [](std::string_view name) {
    std::string out(name);
    std::replace(out.begin(), out.end(), '_', '-');
    return "--" + out;
  };
  std::string md =
      "# Launch options\n\n"
      "Generated from the launch-option table (`LaunchOptionTable`, src/model/launch_options.cc) "
      "by `kvtopo options --markdown`; a test keeps this page equal to it. Every option is a "
      "flag of `kvtopo plan`, `check`, `slots`, `simulate` and `verify` and a keyword of "
      "`kvtopo.plan()` / `kvtopo.check()`. Integers are read as the engine's parser reads them: "
      "`--max-model-len` and `--max-num-batched-tokens` with its suffixes (k/m/g/t x1000, "
      "K/M/G/T x1024, a fraction only with a lower-case one), the others as Python's `int()`; "
      "switches take `--no-NAME` on the command line and `True`/`False` in Python.\n\n"
      "| flag | Python keyword | also | value | environment | meaning |\n"
      "|---|---|---|---|---|---|\n";
  for (const LaunchOption& o : LaunchOptionTable()) {
    std::string also;
    if (!o.short_flag.empty()) also += fmt::format("`-{}`", o.short_flag);
    for (std::string_view alias : o.aliases) {
      also += fmt::format("{}`{}`", also.empty() ? "" : ", ", flag(alias));
    }
    if (o.value == OptionValue::kSwitch) {
      also += fmt::format("{}`{}`", also.empty() ? "" : ", ", flag("no_" + std::string(o.name)));
    }
    md += fmt::format("| `{}` | `{}` | {} | {}{} | {} | {} |\n", flag(o.name), o.name, also,
                      OptionValueName(o.value), o.none ? "; `None` unsets it" : "",
                      o.env.empty() ? "" : fmt::format("`{}`", o.env), o.help);
  }
  md +=
      "\n## `vllm serve` flags accepted without planning\n\n"
      "Accepted on the command line and listed in the plan's `not-used-for-planning` info "
      "diagnostic: they leave the engine's KV-cache plan as it is (profiles/vllm-flags.json). "
      "`VALUE...` "
      "takes every following argument that is not a flag, `[VALUE]` a value only when one "
      "follows, and a `JSON` flag also takes its keys one at a time (`--kernel-config.KEY "
      "VALUE`), as the engine's parser folds them into one JSON value. Each value is checked "
      "as the engine's parser and configs check it: what it reads, its choices, its bounds, a "
      "config class's fields (bare `80m`-style numbers expanded first), and the rules that tie "
      "the flags together (docs/planner.md, \"The launch surface\"); `None` means unset where "
      "noted. A flag of older releases the fork no longer has is refused, as the fork's "
      "parser refuses it (exit 2), naming the fork's form of it as given.\n\n";
  const auto bounds = [](const VllmFlag::Bounds& b) {
    std::vector<std::string> out;
    if (b.min) out.push_back(fmt::format(">= {}", *b.min));
    if (b.above) out.push_back(fmt::format("> {}", *b.above));
    if (b.max) out.push_back(fmt::format("<= {}", *b.max));
    if (b.below) out.push_back(fmt::format("< {}", *b.below));
    return fmt::format("{}", fmt::join(out, ", "));
  };
  for (const VllmFlag& f : VllmFlagsNotPlanned()) {
    std::string_view value = !f.takes_value ? "" : f.json ? " JSON" : " VALUE";
    if (f.values == VllmFlag::Values::kOneOrMore) value = " VALUE...";
    if (f.values == VllmFlag::Values::kOptional) value = " [VALUE]";
    std::vector<std::string> checks;
    switch (f.type) {
      case VllmFlag::Type::kText:
        break;
      case VllmFlag::Type::kInteger:
        checks.push_back("an integer");
        break;
      case VllmFlag::Type::kHumanInteger:
        checks.push_back("an integer, k/K suffixes taken");
        break;
      case VllmFlag::Type::kNumber:
        checks.push_back("a number");
        break;
      case VllmFlag::Type::kJsonConfig: {
        std::vector<std::string> older;
        for (const VllmFlag::OlderKey& k : f.older_keys) {
          older.push_back(k.instead.empty()
                              ? fmt::format("`{}` (dropped by {})", k.name, k.removed_by)
                              : fmt::format("`{}` (dropped by {}; `{}`)", k.name, k.removed_by,
                                            FormInstead(k.instead, {})));
        }
        checks.push_back(
            older.empty()
                ? fmt::format("an object of {}'s fields", f.json_class)
                : fmt::format("an object of {}'s fields; those of older releases refused, naming "
                              "the field that took the value: {}",
                              f.json_class, fmt::join(older, ", ")));
        break;
      }
      case VllmFlag::Type::kJsonValue:
        checks.push_back("JSON");
        break;
      case VllmFlag::Type::kJsonOrText:
        checks.push_back("a JSON object, or text");
        break;
    }
    if (!f.choices.empty()) checks.push_back(fmt::format("one of {}", fmt::join(f.choices, ", ")));
    if (const std::string b = bounds(f.bounds); !b.empty()) {
      checks.push_back(f.multimodal ? b + " (for a model with multimodal inputs)" : b);
    }
    if (f.none) checks.push_back("`None` unsets it");
    if (!f.none_item_error.empty()) {
      checks.push_back(
          fmt::format("a `None` item is refused ({}{})", f.none_item_class,
                      f.none_item_class == "LoRAConfig" ? ", with --enable-lora" : ""));
    }
    if (f.removed) {
      checks.push_back(
          f.instead.empty()
              ? std::string("of older releases; refused, as the fork's parser refuses it")
              : fmt::format("of older releases; refused, as the fork's parser refuses it, naming "
                            "the fork's `{}`",
                            FormInstead(f.instead, {})));
    }
    md += fmt::format("- `{}`{}{}\n", f.name, value,
                      checks.empty() ? "" : fmt::format(": {}", fmt::join(checks, "; ")));
  }
  md +=
      "\n## Environment variables of older releases\n\n"
      "Variables that vllm/envs.py no longer registers and no module of the fork reads: the "
      "engine warns of each as it starts ('Unknown vLLM environment variable detected') and "
      "runs without it, and so does the plan, with a `removed-environment` warning that names "
      "the fork's form where it has one (profiles/vllm-flags.json, `removed_environment`). "
      "`--fail-on-environ-validation` refuses them, as it refuses any `VLLM_` variable the "
      "engine does not register.\n\n";
  for (const RemovedVllmVariable& v : RemovedVllmEnvironment()) {
    md += fmt::format("- `{}`: dropped by {}{}\n", v.name, v.removed_by,
                      v.instead.empty()
                          ? ""
                          : fmt::format("; the fork's form: `{}`", FormInstead(v.instead, {})));
  }
  return md;
}

namespace {

// The speculative config the engine builds: --speculative-config, plus --spec-method,
// --spec-model and --spec-tokens as keys, each refused when the JSON has it
// (EngineArgs.create_speculative_config).
Result<std::optional<std::string>> SpeculativeConfigText(const LaunchOptions& o) {
  if (!o.spec_method && !o.spec_model && !o.spec_tokens) return o.speculative_config;
  nlohmann::json spec = nlohmann::json::object();
  if (o.speculative_config) {
    KVTOPO_ASSIGN_OR_RETURN(spec,
                            internal::ParseJsonText(*o.speculative_config, "--speculative-config"));
    if (!spec.is_object()) {
      return InvalidArgument(
          "--speculative-config must be a JSON object when --spec-method, --spec-model or "
          "--spec-tokens add to it");
    }
  }
  auto add = [&](std::string_view flag, const char* key, const nlohmann::json& value) -> Status {
    if (spec.contains(key)) {
      return InvalidArgument(
          fmt::format("{} and --speculative-config['{}'] are mutually exclusive", flag, key));
    }
    spec[key] = value;
    return Status::Ok();
  };
  if (o.spec_method) KVTOPO_RETURN_IF_ERROR(add("--spec-method", "method", *o.spec_method));
  if (o.spec_model) KVTOPO_RETURN_IF_ERROR(add("--spec-model", "model", *o.spec_model));
  if (o.spec_tokens) {
    KVTOPO_RETURN_IF_ERROR(add("--spec-tokens", "num_speculative_tokens", *o.spec_tokens));
  }
  return std::optional<std::string>(internal::JsonText(spec));
}

// The engine's KV connector registry (KVConnectorFactory, distributed/kv_transfer/kv_connector/
// factory.py at 28be48fa9) with whether each class subclasses SupportsHMA; LMCacheMPConnector's
// class comes from the lmcache package when installed, so it is not known here.
struct KnownConnector {
  std::string_view name;
  std::optional<bool> hma;
};
constexpr KnownConnector kConnectors[] = {{"ExampleConnector", false},
                                          {"ExampleHiddenStatesConnector", true},
                                          {"P2pNcclConnector", false},
                                          {"LMCacheConnectorV1", false},
                                          {"LMCacheMPConnector", std::nullopt},
                                          {"NixlConnector", true},
                                          {"MultiConnector", true},
                                          {"MoRIIOConnector", false},
                                          {"OffloadingConnector", true},
                                          {"DecodeBenchConnector", true},
                                          {"MooncakeConnector", true},
                                          {"MooncakeStoreConnector", true},
                                          {"FlexKVConnectorV1", false},
                                          {"SimpleCPUOffloadConnector", true},
                                          {"HF3FSKVConnector", false}};

// Whether the class a KVTransferConfig object names subclasses SupportsHMA (get_connector_class,
// then supports_hma). nullopt: kvtopo cannot tell. `where` names the object in messages.
Result<std::optional<bool>> ConnectorClassHma(const nlohmann::json& config,
                                              const std::string& where) {
  if (!config.is_object()) {
    return InvalidArgument(fmt::format("{} must be a JSON object, got {}", where, config.dump()));
  }
  const auto name_it = config.find("kv_connector");
  if (name_it == config.end() || name_it->is_null()) {
    return InvalidArgument(fmt::format(
        "{} names no kv_connector: the engine refuses it ('Connector name is not set in "
        "KVTransferConfig')",
        where));
  }
  if (!name_it->is_string()) {
    return InvalidArgument(
        fmt::format("{}: kv_connector must be a connector's name, got {}", where, name_it->dump()));
  }
  const std::string name = name_it->get<std::string>();
  if (const auto extra = config.find("kv_connector_extra_config");
      extra != config.end() && !extra->is_null() && !extra->is_object()) {
    return InvalidArgument(fmt::format(
        "{}: kv_connector_extra_config must be a JSON object, got {}", where, extra->dump()));
  }
  if (const auto path = config.find("kv_connector_module_path");
      path != config.end() && !path->is_null()) {
    if (!path->is_string() || path->get<std::string>().empty()) {
      return InvalidArgument(fmt::format(
          "{}: kv_connector_module_path must be a module's name, got {} (the engine refuses an "
          "empty one)",
          where, path->dump()));
    }
    return std::optional<bool>();  // an external class: its bases are not known here
  }
  const auto* known = std::find_if(std::begin(kConnectors), std::end(kConnectors),
                                   [&](const KnownConnector& k) { return k.name == name; });
  if (known == std::end(kConnectors)) {
    std::vector<std::string_view> names;
    for (const KnownConnector& k : kConnectors) names.push_back(k.name);
    return InvalidArgument(fmt::format(
        "{}: kv_connector '{}' is not a connector the engine registers ('Unsupported connector "
        "type'); registered: {}; an external one needs kv_connector_module_path",
        where, name, fmt::join(names, ", ")));
  }
  return known->hma;
}

// Whether the connector `config` names supports the hybrid manager (VllmConfig.__post_init__): a
// MultiConnector only when the class of each of its kv_connector_extra_config.connectors does.
Result<std::optional<bool>> ConnectorHma(const nlohmann::json& config, const std::string& where) {
  Result<std::optional<bool>> hma = ConnectorClassHma(config, where);
  if (!hma.ok() || config["kv_connector"] != "MultiConnector" || *hma != true) return hma;
  const auto extra = config.find("kv_connector_extra_config");
  if (extra == config.end() || extra->is_null() || !extra->contains("connectors")) return hma;
  const nlohmann::json& subs = (*extra)["connectors"];
  if (!subs.is_array()) {
    return InvalidArgument(fmt::format(
        "{}: kv_connector_extra_config.connectors must be a list of connector configs, got {}",
        where, subs.dump()));
  }
  bool unknown = false;
  for (size_t i = 0; i < subs.size(); ++i) {
    KVTOPO_ASSIGN_OR_RETURN(
        const std::optional<bool> sub,
        ConnectorClassHma(subs[i], fmt::format("{}'s connectors[{}]", where, i)));
    if (sub == false) return std::optional<bool>(false);
    unknown = unknown || !sub.has_value();
  }
  return unknown ? std::optional<bool>() : std::optional<bool>(true);
}

// OffloadingConnector's spec, read from its kv_connector_extra_config as the engine reads it
// once the KV cache is sized (OffloadingSpecFactory.create_spec, OffloadingSpec.__init__,
// CPUOffloadingSpec.__init__ and TieringOffloadingSpec.__init__ at 28be48fa9): spec_name (the
// factory's CPUOffloadingSpec unless named; another name needs spec_module_path), the CPU and
// tiering specs' cpu_bytes_to_use (which --kv-offloading-size sets) and secondary_tiers, and
// block_size, the offloaded block's tokens (int() of it), which the planner checks against the
// groups' blocks.
Status ReadOffloadingSpec(const nlohmann::json& transfer, LaunchConfig& c) {
  const nlohmann::json none;
  const auto extra_it = transfer.find("kv_connector_extra_config");
  const nlohmann::json& extra = extra_it == transfer.end() ? none : *extra_it;
  auto get = [&](const std::string& key) -> const nlohmann::json& {
    const auto it = extra.find(key);
    return it == extra.end() ? none : *it;
  };
  constexpr std::string_view kKeys = "--kv-transfer-config: kv_connector_extra_config";
  std::string spec = "CPUOffloadingSpec";
  bool registered = true;
  if (extra.contains("spec_name")) {
    const nlohmann::json& name = get("spec_name");
    if (!name.is_string()) {
      return InvalidArgument(
          fmt::format("{}.spec_name must be an offloading spec class's name, got {}", kKeys,
                      internal::JsonText(name)));
    }
    spec = name.get<std::string>();
    registered = spec == "CPUOffloadingSpec" || spec == "TieringOffloadingSpec";
    if (!registered && get("spec_module_path").is_null()) {
      return InvalidArgument(fmt::format(
          "{}.spec_name '{}' is not an offloading spec the engine registers ('Unsupported spec "
          "type: {}'); registered: CPUOffloadingSpec, TieringOffloadingSpec; an external one "
          "needs spec_module_path",
          kKeys, spec, spec));
    }
  }
  if (registered) {
    const nlohmann::json& bytes = get("cpu_bytes_to_use");
    if (!internal::PythonTruth(bytes)) {
      const bool from_size = c.kv_connector_source.starts_with("--kv-offloading-size");
      return Rejected(fmt::format(
          "KV connector OffloadingConnector ({}) with {}: the engine's {} raises once the "
          "weights are loaded ('cpu_bytes_to_use must be specified in "
          "kv_connector_extra_config'); {}",
          c.kv_connector_source,
          from_size         ? std::string("no CPU bytes to offload to")
          : bytes.is_null() ? std::string("no kv_connector_extra_config.cpu_bytes_to_use")
                            : fmt::format("kv_connector_extra_config.cpu_bytes_to_use {}",
                                          internal::JsonText(bytes)),
          spec,
          from_size ? "give --kv-offloading-size a size above 0"
                    : "set cpu_bytes_to_use to the bytes to offload to, or pass "
                      "--kv-offloading-size in GiB"));
    }
    if (!internal::PythonInt(bytes)) {
      return InvalidArgument(fmt::format("{}.cpu_bytes_to_use must be a number of bytes, got {}",
                                         kKeys, internal::JsonText(bytes)));
    }
    if (spec == "TieringOffloadingSpec" && extra.contains("secondary_tiers") &&
        !get("secondary_tiers").is_array()) {
      return InvalidArgument(fmt::format(
          "{}.secondary_tiers must be a list of tier configurations, got {} (the engine raises "
          "'secondary_tiers must be a list of tier configurations')",
          kKeys, internal::JsonText(get("secondary_tiers"))));
    }
  }
  if (const nlohmann::json& block = get("block_size"); !block.is_null()) {
    const std::optional<int64_t> tokens = internal::PythonInt(block);
    if (!tokens || *tokens <= 0) {
      return InvalidArgument(
          fmt::format("{}.block_size must be a positive number of tokens, got {}", kKeys,
                      internal::JsonText(block)));
    }
    c.kv_offloaded_block_size = *tokens;
  }
  c.kv_offloading_spec = spec;
  return Status::Ok();
}

// A JSON config flag's value (`flag` names it in messages), which must be a JSON object: a
// config class's when `config_class` (ParseConfigClassJson), else json.loads's.
Result<nlohmann::json> ParseJsonObjectFlag(const std::string& text, std::string_view flag,
                                           bool config_class = true) {
  KVTOPO_ASSIGN_OR_RETURN(nlohmann::json value, config_class ? ParseConfigClassJson(text, flag)
                                                             : internal::ParseJsonText(text, flag));
  if (!value.is_object()) {
    return InvalidArgument(fmt::format("{} must be a JSON object, got {}", flag, text));
  }
  return value;
}

// A connector's config as the engine's KVTransferConfig and ECTransferConfig check it
// (`prefix` kv or ec): a JSON object whose PREFIX_role, when set, is one of PREFIX_producer,
// PREFIX_consumer and PREFIX_both, and is set wherever PREFIX_connector is; `suggested` names
// the role the message offers first.
Result<nlohmann::json> ReadConnectorConfig(const std::string& text, std::string_view flag,
                                           std::string_view prefix, std::string_view suggested) {
  KVTOPO_ASSIGN_OR_RETURN(nlohmann::json config, ParseJsonObjectFlag(text, flag));
  // KVTransferConfig's and ECTransferConfig's fields (vllm/config/kv_transfer.py and
  // ec_transfer.py at 28be48fa9), named here without their kv_/ec_ prefix, which pydantic checks
  // before __post_init__; the class forbids any other key.
  static const std::vector<VllmFlag::Key> kFields = {
      {.name = "connector", .type = "str", .nullable = true},
      {.name = "engine_id", .type = "str", .nullable = true},
      {.name = "buffer_device", .type = "str"},  // ec_buffer_device may be null too
      {.name = "buffer_size", .type = "float"},
      {.name = "role", .type = "any", .nullable = true},  // checked below
      {.name = "rank", .type = "int", .nullable = true},
      {.name = "parallel_size", .type = "int"},
      {.name = "ip", .type = "str"},
      {.name = "port", .type = "int"},
      {.name = "connector_extra_config", .type = "object"},
      {.name = "connector_module_path", .type = "str", .nullable = true},
      {.name = "enable_permute_local_kv", .type = "bool"},                               // kv only
      {.name = "load_failure_policy", .type = "str", .choices = {"recompute", "fail"}},  // kv only
  };
  std::vector<std::string> names;
  for (const VllmFlag::Key& f : kFields) {
    const bool kv_only = f.name == "enable_permute_local_kv" || f.name == "load_failure_policy";
    if (kv_only && prefix != "kv") continue;
    names.push_back(f.name == "engine_id" || f.name == "enable_permute_local_kv"
                        ? f.name
                        : fmt::format("{}_{}", prefix, f.name));
  }
  for (const auto& item : config.items()) {
    const std::string& key = item.key();
    const auto name = std::find(names.begin(), names.end(), key);
    if (name == names.end()) {
      return InvalidArgument(fmt::format(
          "{}: '{}' is not a field the engine takes (its parser refuses it: 'Unexpected keyword "
          "argument'); fields: {}",
          flag, key, fmt::join(names, ", ")));
    }
    const std::string bare = key.starts_with(fmt::format("{}_", prefix)) ? key.substr(3) : key;
    const auto field = std::find_if(kFields.begin(), kFields.end(),
                                    [&](const VllmFlag::Key& f) { return f.name == bare; });
    VllmFlag::Key checked = *field;
    checked.nullable = checked.nullable || key == "ec_buffer_device";
    if (const std::string refusal = ConfigFieldRefusal(checked, item.value()); !refusal.empty()) {
      return InvalidArgument(fmt::format("{}: {} {} is refused by the engine's parser ({})", flag,
                                         key, internal::JsonText(item.value()), refusal));
    }
  }
  const std::string role_key = fmt::format("{}_role", prefix);
  const auto role = config.find(role_key);
  const bool role_set = role != config.end() && !role->is_null();
  const std::array<std::string, 3> roles = {fmt::format("{}_producer", prefix),
                                            fmt::format("{}_consumer", prefix),
                                            fmt::format("{}_both", prefix)};
  if (role_set && std::find(roles.begin(), roles.end(), *role) == roles.end()) {
    return InvalidArgument(fmt::format("{}: {} {} is not one of {}", flag, role_key, role->dump(),
                                       fmt::join(roles, ", ")));
  }
  const auto connector = config.find(fmt::format("{}_connector", prefix));
  if (connector != config.end() && !connector->is_null() && !role_set) {
    const std::string_view article = prefix.starts_with('e') ? "an" : "a";
    std::vector<std::string> others;
    for (const std::string& r : roles) {
      if (r != fmt::format("{}_{}", prefix, suggested)) others.push_back(r);
    }
    return InvalidArgument(fmt::format(
        "{} names {} {}_connector without {} {}; the engine refuses it ('Please specify {} "
        "when {}_connector is set'): add \"{}\": \"{}_{}\" (or {})",
        flag, article, prefix, article, role_key, role_key, prefix, role_key, prefix, suggested,
        fmt::join(others, " / ")));
  }
  return config;
}

// --ec-transfer-config (ECTransferConfig.__post_init__ at 28be48fa9): ec_role one of
// ec_producer, ec_consumer, ec_both, and given where ec_connector is. A worker of an instance
// with a connector that does not consume the encoder cache (ec_producer) reports no KV cache
// spec at all (GPUModelRunner.get_kv_cache_spec: has_ec_transfer() and not is_consumer), so
// the engine runs it without a KV cache.
Status CheckEcTransfer(const LaunchOptions& o) {
  if (!o.ec_transfer_config) return Status::Ok();
  KVTOPO_ASSIGN_OR_RETURN(
      const nlohmann::json ec,
      ReadConnectorConfig(*o.ec_transfer_config, "--ec-transfer-config", "ec", "consumer"));
  const auto connector = ec.find("ec_connector");
  if (connector != ec.end() && !connector->is_null() && ec["ec_role"] == "ec_producer") {
    return Rejected(fmt::format(
        "--ec-transfer-config: ec_role ec_producer with ec_connector {}: the engine's workers of "
        "an instance that only produces the encoder cache report no KV cache "
        "(GPUModelRunner.get_kv_cache_spec), so it runs without one and there is no KV cache to "
        "plan; plan the instance that consumes it (ec_consumer or ec_both)",
        connector->dump()));
  }
  return Status::Ok();
}

// The connector the engine builds from --kv-transfer-config and --kv-offloading-size /
// --kv-offloading-backend (VllmConfig._post_init_kv_transfer_config: offloading replaces the
// connector named), checked as KVTransferConfig checks it, and whether it supports the hybrid
// KV cache manager.
Status ResolveKvConnector(const LaunchOptions& o, LaunchConfig& c) {
  nlohmann::json transfer;
  if (o.kv_transfer_config) {
    // KVTransferConfig.__post_init__.
    KVTOPO_ASSIGN_OR_RETURN(
        transfer, ReadConnectorConfig(*o.kv_transfer_config, "--kv-transfer-config", "kv", "both"));
  }
  const std::string backend = o.kv_offloading_backend.value_or("native");
  if (backend != "native" && backend != "lmcache") {
    return InvalidArgument(fmt::format(
        "--kv-offloading-backend '{}' is not an offloading backend; accepted: native, lmcache",
        backend));
  }
  if (o.kv_offloading_size) {
    const std::string& text = *o.kv_offloading_size;
    // float() as the engine's parser reads it; NaN and inf fail as the spec takes int() of the
    // bytes.
    const std::optional<double> gib = ParsePythonFloat(text);
    if (!gib || !(*gib >= 0)) {
      return InvalidArgument(
          fmt::format("--kv-offloading-size must be a number of GiB, 0 or more, got '{}'", text));
    }
    // The native spec takes int() of its bytes: they must fit 64 bits (2^33 GiB is 2^63 bytes).
    if (*gib >= 8589934592.0) {
      return InvalidArgument(fmt::format(
          "--kv-offloading-size {} GiB is more bytes than 64 bits hold; give less than 8589934592",
          text));
    }
    // The offloading backend's connector replaces any named, with kv_role kv_both.
    if (!transfer.is_object()) transfer = nlohmann::json::object();
    transfer["kv_connector"] = backend == "lmcache" ? "LMCacheConnectorV1"
                               : o.use_simple_kv_offload.value_or(false)
                                   ? "SimpleCPUOffloadConnector"
                                   : "OffloadingConnector";
    transfer["kv_role"] = "kv_both";
    // The native backend adds the CPU bytes to the extra config given (the spec reads them).
    if (backend == "native") {
      nlohmann::json& extra = transfer["kv_connector_extra_config"];
      if (extra.is_null()) extra = nlohmann::json::object();
      if (extra.is_object()) extra["cpu_bytes_to_use"] = *gib * 1073741824.0;
    }
    c.kv_connector_source =
        fmt::format("--kv-offloading-size {} --kv-offloading-backend {}", text, backend);
  } else if (o.kv_transfer_config) {
    c.kv_connector_source = "--kv-transfer-config";
  } else {
    return Status::Ok();
  }
  // The engine resolves the class only when it decides the hybrid manager itself.
  if (c.disable_hybrid_kv_cache_manager.has_value() && !transfer.contains("kv_connector")) {
    return Status::Ok();
  }
  KVTOPO_ASSIGN_OR_RETURN(c.kv_connector_hma, ConnectorHma(transfer, c.kv_connector_source));
  c.kv_connector = transfer["kv_connector"].get<std::string>();
  if (c.kv_connector == "MultiConnector") {
    const auto extra = transfer.find("kv_connector_extra_config");
    if (extra != transfer.end() && extra->is_object() && extra->contains("connectors") &&
        (*extra)["connectors"].is_array()) {
      for (const nlohmann::json& sub : (*extra)["connectors"]) {
        if (sub.is_object() && sub.contains("kv_connector") && sub["kv_connector"].is_string()) {
          c.kv_sub_connectors.push_back(sub["kv_connector"].get<std::string>());
        }
      }
    }
  }
  if (c.kv_connector == "OffloadingConnector") {
    KVTOPO_RETURN_IF_ERROR(ReadOffloadingSpec(transfer, c));
  }
  return Status::Ok();
}

// CompilationConfig._attention_ops at 28be48fa9: the ops the engine splits its graphs at by
// default, which fuse_attn_quant needs inside them (set_splitting_ops_for_attn_fusion asserts
// splitting_ops does not hold them all).
constexpr std::string_view kAttentionSplittingOps[] = {"vllm::unified_attention_with_output",
                                                       "vllm::unified_mla_attention_with_output",
                                                       "vllm::mamba_mixer2",
                                                       "vllm::mamba_mixer",
                                                       "vllm::short_conv",
                                                       "vllm::linear_attention",
                                                       "vllm::plamo2_mamba_mixer",
                                                       "vllm::gdn_attention_core",
                                                       "vllm::gdn_attention_core_xpu",
                                                       "vllm::olmo_hybrid_gdn_full_forward",
                                                       "vllm::kda_attention",
                                                       "vllm::sparse_attn_indexer",
                                                       "vllm::rocm_aiter_sparse_attn_indexer",
                                                       "vllm::deepseek_v4_attention"};

// CompilationConfig's fields at 28be48fa9 that a launch may set (its dataclass forbids others;
// the init=False ones are not taken), and PassConfig's.
constexpr std::string_view kCompilationFields[] = {"mode",
                                                   "debug_dump_path",
                                                   "cache_dir",
                                                   "compile_cache_save_format",
                                                   "backend",
                                                   "custom_ops",
                                                   "ir_enable_torch_wrap",
                                                   "splitting_ops",
                                                   "compile_mm_encoder",
                                                   "cudagraph_mm_encoder",
                                                   "encoder_cudagraph_token_budgets",
                                                   "encoder_cudagraph_max_vision_items_per_batch",
                                                   "encoder_cudagraph_max_frames_per_batch",
                                                   "compile_sizes",
                                                   "compile_ranges_endpoints",
                                                   "inductor_compile_config",
                                                   "inductor_passes",
                                                   "cudagraph_mode",
                                                   "cudagraph_num_of_warmups",
                                                   "cudagraph_capture_sizes",
                                                   "cudagraph_copy_inputs",
                                                   "cudagraph_specialize_lora",
                                                   "use_inductor_graph_partition",
                                                   "pass_config",
                                                   "max_cudagraph_capture_size",
                                                   "dynamic_shapes_config",
                                                   "fast_moe_cold_start"};
constexpr std::string_view kPassFields[] = {"fuse_norm_quant",
                                            "fuse_act_quant",
                                            "fuse_attn_quant",
                                            "eliminate_noops",
                                            "enable_sp",
                                            "fuse_gemm_comms",
                                            "fuse_allreduce_rms",
                                            "fuse_minimax_qk_norm",
                                            "enable_qk_norm_rope_fusion",
                                            "fuse_rope_kvcache_cat_mla",
                                            "fuse_act_padding",
                                            "fuse_mla_dual_rms_norm",
                                            "fuse_rope_kvcache",
                                            "rope_kvcache_fusion_max_token_num",
                                            "fi_allreduce_fusion_max_size_mb",
                                            "sp_min_token_num"};
constexpr std::string_view kCompilationModes[] = {"NONE", "STOCK_TORCH_COMPILE",
                                                  "DYNAMO_TRACE_ONCE", "VLLM_COMPILE"};
constexpr std::string_view kCudagraphModes[] = {"NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY",
                                                "FULL_AND_PIECEWISE"};

// CompilationConfig's fields of older releases (each stood 30 days or more since 2025-03-31):
// level is mode (until d6e04f4c4), use_cudagraph false is cudagraph_mode NONE and
// full_cuda_graph true FULL (edb59a947), use_inductor is backend inductor or eager (888152bf8),
// compile_ranges_split_points is compile_ranges_endpoints (renamed by 4b87ffbef). OK for any
// other key.
Status CheckOlderCompilationField(std::string_view where, const std::string& key,
                                  const nlohmann::json& value) {
  const std::optional<bool> on = internal::PydanticBool(value);
  if (key == "level" || key == "compile_ranges_split_points") {
    return OlderFieldRefusal(
        where, key,
        fmt::format("\"{}\": {}", key == "level" ? "mode" : "compile_ranges_endpoints",
                    internal::JsonText(value)));
  }
  if (key == "use_cudagraph") {
    return OlderFieldRefusal(where, key, on == false ? "\"cudagraph_mode\": \"NONE\"" : "");
  }
  if (key == "full_cuda_graph") {
    return OlderFieldRefusal(where, key, on == true ? "\"cudagraph_mode\": \"FULL\"" : "");
  }
  if (key == "use_inductor") {
    return OlderFieldRefusal(
        where, key, on ? fmt::format("\"backend\": \"{}\"", *on ? "inductor" : "eager") : "");
  }
  return Status::Ok();
}

// PassConfig's fields of older releases (each stood 30 days or more since 2025-03-31), which
// its handle_deprecated copied to the fields named until 5a87d8b9b: enable_fusion is
// fuse_norm_quant and fuse_act_quant, enable_attn_fusion fuse_attn_quant,
// enable_sequence_parallelism enable_sp, enable_async_tp fuse_gemm_comms,
// enable_fi_allreduce_fusion fuse_allreduce_rms, enable_noop eliminate_noops; dump_graph_dir,
// dump_graph_stages (until 5d09152ff) and fi_allreduce_fusion_max_token_num (until d17ecc6b1,
// which measures in megabytes instead) have no form. OK for any other key.
Status CheckOlderPassField(std::string_view where, const std::string& key,
                           const nlohmann::json& value) {
  static constexpr std::pair<std::string_view, std::string_view> kRenamed[] = {
      {"enable_fusion", "fuse_norm_quant"},
      {"enable_attn_fusion", "fuse_attn_quant"},
      {"enable_sequence_parallelism", "enable_sp"},
      {"enable_async_tp", "fuse_gemm_comms"},
      {"enable_fi_allreduce_fusion", "fuse_allreduce_rms"},
      {"enable_noop", "eliminate_noops"}};
  const std::string shown = internal::JsonText(value);
  for (const auto& [old_name, name] : kRenamed) {
    if (key != old_name) continue;
    if (value.is_null()) return OlderFieldRefusal(where, key, "");  // the deprecated default
    return OlderFieldRefusal(
        where, key,
        key == "enable_fusion"
            ? fmt::format("\"fuse_norm_quant\": {}, \"fuse_act_quant\": {}", shown, shown)
            : fmt::format("\"{}\": {}", name, shown));
  }
  if (key == "dump_graph_dir" || key == "dump_graph_stages" ||
      key == "fi_allreduce_fusion_max_token_num") {
    return OlderFieldRefusal(where, key, "");
  }
  return Status::Ok();
}

// AttentionConfig's MLA prefill fields of older releases (2025-12-05 to 9898f94ab, 2026-05-14),
// which its __post_init__ migrated to mla_prefill_backend: use_trtllm_ragged_deepseek_prefill
// true is TRTLLM_RAGGED, disable_flashinfer_prefill true is FLASH_ATTN; use_cudnn_prefill true
// it already refused (the cuDNN prefill backend was gone). OK for any other key.
Status CheckOlderAttentionField(std::string_view where, const std::string& key,
                                const nlohmann::json& value) {
  const bool on = internal::PydanticBool(value) == true;
  if (key == "use_trtllm_ragged_deepseek_prefill" || key == "disable_flashinfer_prefill") {
    return OlderFieldRefusal(
        where, key,
        on ? fmt::format("\"mla_prefill_backend\": \"{}\"",
                         key == "disable_flashinfer_prefill" ? "FLASH_ATTN" : "TRTLLM_RAGGED")
           : "");
  }
  if (key == "use_cudnn_prefill") {
    return OlderFieldRefusal(
        where, key,
        on ? "\"mla_prefill_backend\": \"FLASH_ATTN\", \"FLASHINFER\" or \"TRTLLM_RAGGED\" (the "
             "cuDNN prefill backend is gone)"
           : "");
  }
  return Status::Ok();
}

// A key of a JSON config flag, refused where its config class does not have it (the engine's
// @config classes forbid extra fields).
template <size_t N>
Status CheckConfigField(std::string_view where, const std::string& key,
                        const std::string_view (&fields)[N]) {
  if (std::find(std::begin(fields), std::end(fields), key) != std::end(fields)) {
    return Status::Ok();
  }
  return InvalidArgument(fmt::format(
      "{}: '{}' is not a field the engine takes (its parser refuses it: 'Unexpected keyword "
      "argument'); fields: {}",
      where, key, fmt::join(fields, ", ")));
}

// KernelConfig's fields at 28be48fa9 (vllm/config/kernel.py; its dataclass forbids others), the
// MoEBackend and LinearBackend literals, and IrOpPriorityConfig's fields.
constexpr std::string_view kKernelFields[] = {"ir_op_priority", "enable_flashinfer_autotune",
                                              "moe_backend", "linear_backend"};
constexpr std::string_view kIrOpFields[] = {"rms_norm", "fused_add_rms_norm"};

// A MoE or linear backend as the engine's parser reads it: --moe-backend and --linear-backend,
// and KernelConfig's field validators, lower-case the name and turn '-' into '_' before
// comparing it with the literal's names. `where` names the flag or key in messages.
Result<std::string> ReadKernelBackend(std::string_view where, const nlohmann::json& value,
                                      std::span<const std::string_view> names) {
  std::string name;
  if (value.is_string()) {
    name = internal::AsciiLower(value.get<std::string>());
    std::replace(name.begin(), name.end(), '-', '_');
  }
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return InvalidArgument(fmt::format(
        "{} {} is not one of the engine's: {} (any case, - for _; its parser refuses it)", where,
        internal::JsonText(value), fmt::join(names, ", ")));
  }
  return name;
}

// IrOpPriorityConfig's lists by op (rms_norm, fused_add_rms_norm), as its field validator makes
// them: a string is split at commas once its spaces are dropped. An op left out is unset.
using IrOpPriority = std::map<std::string, std::vector<std::string>>;

// An IrOpPriorityConfig given as JSON (`where` names the flag or key in messages): an object of
// its fields, each a provider name, a comma-separated string of them or a list of them.
Result<IrOpPriority> ReadIrOpPriority(std::string_view where, const nlohmann::json& value) {
  if (!value.is_object()) {
    return InvalidArgument(fmt::format("{} must be a JSON object ({}), got {}", where,
                                       fmt::join(kIrOpFields, ", "), internal::JsonText(value)));
  }
  IrOpPriority out;
  for (const auto& [op, priority] : value.items()) {
    KVTOPO_RETURN_IF_ERROR(CheckConfigField(where, op, kIrOpFields));
    std::vector<std::string>& providers = out[op];
    if (priority.is_string()) {
      std::string text = priority.get<std::string>();
      std::erase(text, ' ');
      providers = internal::SplitOnCommas(text);
      continue;
    }
    const bool strings =
        priority.is_array() && std::all_of(priority.begin(), priority.end(),
                                           [](const nlohmann::json& p) { return p.is_string(); });
    if (!strings) {
      return InvalidArgument(fmt::format(
          "{}.{} must be a provider name, a comma-separated string of them or a list of them, "
          "got {}",
          where, op, internal::JsonText(priority)));
    }
    for (const nlohmann::json& p : priority) providers.push_back(p.get<std::string>());
  }
  return out;
}

// The IR op providers the engine registers for rms_norm and fused_add_rms_norm at 28be48fa9
// (ir/op.py's native, and vllm/kernels: vllm_c.py, aiter_ops.py, oink_ops.py, xpu_ops.py).
constexpr std::string_view kIrOpProviders[] = {"native", "vllm_c", "aiter", "oink", "xpu_kernels"};

// --ir-op-priority and --kernel-config's ir_op_priority as EngineArgs.create_engine_config
// merges them (an op's non-empty list in both is refused), and each provider as the workers'
// IrOp.set_default checks it as they start (one the engine registers).
Status CheckIrOpPriorities(const IrOpPriority& top, const IrOpPriority& kernel) {
  for (const auto& [op, providers] : top) {
    const auto other = kernel.find(op);
    if (!providers.empty() && other != kernel.end() && !other->second.empty()) {
      return InvalidArgument(fmt::format(
          "--ir-op-priority's {} beside --kernel-config's ir_op_priority.{}: the engine refuses "
          "the pair ('Op priority for {} specified via both ir_op_priority and "
          "KernelConfig.ir_op_priority, only one allowed at a time.'); give one",
          op, op, op));
    }
  }
  for (const auto& [given, priorities] : {std::pair{"--ir-op-priority", &top},
                                          std::pair{"--kernel-config's ir_op_priority", &kernel}}) {
    for (const auto& [op, providers] : *priorities) {
      for (const std::string& provider : providers) {
        if (std::find(std::begin(kIrOpProviders), std::end(kIrOpProviders), provider) !=
            std::end(kIrOpProviders)) {
          continue;
        }
        return Rejected(fmt::format(
            "{} names '{}' for {}, which is not a provider the engine registers ({}): its "
            "workers assert as they start ('All providers in priority must be registered "
            "implementations.'); pick from those",
            given, provider, op, fmt::join(kIrOpProviders, ", ")));
      }
    }
  }
  return Status::Ok();
}

// --kernel-config, --moe-backend, --linear-backend and --enable-flashinfer-autotune, checked as
// the engine checks them (KernelConfig's fields; EngineArgs.create_engine_config: a flag other
// than auto overrides the config's field, and the autotune flag is refused beside the config's).
// The MoE backend is kept for the models that read it (LaunchConfig::moe_backend).
Status ReadKernelConfig(const LaunchOptions& o, LaunchConfig& c) {
  IrOpPriority top_priority;
  IrOpPriority kernel_priority;
  if (o.ir_op_priority) {
    constexpr std::string_view kTopWhere = "--ir-op-priority";
    KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json value,
                            ParseJsonObjectFlag(*o.ir_op_priority, kTopWhere));
    KVTOPO_ASSIGN_OR_RETURN(top_priority, ReadIrOpPriority(kTopWhere, value));
  }
  if (o.moe_backend) {
    KVTOPO_ASSIGN_OR_RETURN(
        const std::string name,
        ReadKernelBackend("--moe-backend", *o.moe_backend, internal::kMoeBackends));
    if (name != "auto") {
      c.moe_backend = name;
      c.moe_backend_from = "--moe-backend";
    }
  }
  if (o.linear_backend) {
    KVTOPO_RETURN_IF_ERROR(
        ReadKernelBackend("--linear-backend", *o.linear_backend, internal::kLinearBackends)
            .status());
  }
  if (!o.kernel_config) return CheckIrOpPriorities(top_priority, kernel_priority);
  constexpr std::string_view kWhere = "--kernel-config";
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json kc, ParseJsonObjectFlag(*o.kernel_config, kWhere));
  for (const auto& [key, value] : kc.items()) {
    KVTOPO_RETURN_IF_ERROR(CheckConfigField(kWhere, key, kKernelFields));
    const std::string where = fmt::format("{}: {}", kWhere, key);
    if (key == "moe_backend") {
      KVTOPO_ASSIGN_OR_RETURN(const std::string name,
                              ReadKernelBackend(where, value, internal::kMoeBackends));
      if (c.moe_backend == "auto") {
        c.moe_backend = name;
        c.moe_backend_from = "--kernel-config's moe_backend";
      }
    } else if (key == "linear_backend") {
      KVTOPO_RETURN_IF_ERROR(ReadKernelBackend(where, value, internal::kLinearBackends).status());
    } else if (key == "enable_flashinfer_autotune") {
      if (value.is_null()) continue;  // unset, as the engine delays it
      if (!internal::PydanticBool(value)) {
        return InvalidArgument(
            fmt::format("{} must be true or false, got {}", where, internal::JsonText(value)));
      }
      if (o.enable_flashinfer_autotune) {
        return InvalidArgument(
            "--enable-flashinfer-autotune beside --kernel-config's enable_flashinfer_autotune: "
            "the engine refuses the pair ('enable_flashinfer_autotune and "
            "kernel_config.enable_flashinfer_autotune are mutually exclusive'); give one");
      }
    } else if (key == "ir_op_priority") {
      KVTOPO_ASSIGN_OR_RETURN(kernel_priority, ReadIrOpPriority(where, value));
    }
  }
  return CheckIrOpPriorities(top_priority, kernel_priority);
}

// EPLBConfig's fields at 28be48fa9 (vllm/config/parallel.py; its dataclass forbids others), the
// EPLBPolicyOption and EPLBCommunicatorBackend literals.
constexpr std::string_view kEplbFields[] = {"window_size",
                                            "step_interval",
                                            "num_redundant_experts",
                                            "log_balancedness",
                                            "log_balancedness_interval",
                                            "use_async",
                                            "policy",
                                            "communicator"};
constexpr std::string_view kEplbPolicies[] = {"default"};
constexpr std::string_view kEplbCommunicators[] = {"torch_nccl", "torch_gloo", "nixl", "pynccl"};

// --eplb-config, checked as the engine checks it when it parses the flag (EPLBConfig's fields:
// window_size, step_interval and log_balancedness_interval above 0, num_redundant_experts 0 or
// more, two bools, the policy and communicator literals). Its number of redundant experts is
// kept (LaunchConfig::num_redundant_experts).
Status ReadEplbConfig(const LaunchOptions& o, LaunchConfig& c) {
  if (!o.eplb_config) return Status::Ok();
  constexpr std::string_view kWhere = "--eplb-config";
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json ec, ParseJsonObjectFlag(*o.eplb_config, kWhere));
  for (const auto& [key, value] : ec.items()) {
    KVTOPO_RETURN_IF_ERROR(CheckConfigField(kWhere, key, kEplbFields));
    const std::string where = fmt::format("{}: {}", kWhere, key);
    if (key == "log_balancedness" || key == "use_async") {
      if (value.is_null() || !internal::PydanticBool(value)) {
        return InvalidArgument(
            fmt::format("{} must be true or false, got {}", where, internal::JsonText(value)));
      }
    } else if (key == "policy" || key == "communicator") {
      const std::span<const std::string_view> names =
          key == "policy" ? std::span<const std::string_view>(kEplbPolicies)
                          : std::span<const std::string_view>(kEplbCommunicators);
      if (key == "communicator" && value.is_null()) continue;  // the engine picks one
      if (!value.is_string() ||
          std::find(names.begin(), names.end(), value.get<std::string>()) == names.end()) {
        return InvalidArgument(fmt::format("{} {} is not one of the engine's: {}{}", where,
                                           internal::JsonText(value), fmt::join(names, ", "),
                                           key == "communicator" ? ", or null" : ""));
      }
    } else {
      const int64_t least = key == "num_redundant_experts" ? 0 : 1;
      const std::optional<int64_t> n = internal::PydanticInt(value);
      if (!n || *n < least) {
        return InvalidArgument(fmt::format("{} must be an integer of {} or more, got {}", where,
                                           least, internal::JsonText(value)));
      }
      if (key == "num_redundant_experts") c.num_redundant_experts = *n;
    }
  }
  return Status::Ok();
}

// The fields of CompilationConfig, PassConfig and DynamicShapesConfig (vllm/config/compilation.py
// at 28be48fa9) that leave the plan as it is, with the types and Literals pydantic checks.
using Field = VllmFlag::Key;
const std::vector<Field>& CompilationFieldsNotPlanned() {
  static const std::vector<Field> kFields = {
      {.name = "debug_dump_path", .type = "str", .nullable = true},
      {.name = "cache_dir", .type = "str"},
      {.name = "compile_cache_save_format", .type = "str", .choices = {"binary", "unpacked"}},
      {.name = "backend", .type = "str"},
      {.name = "custom_ops", .type = "list"},
      {.name = "ir_enable_torch_wrap", .type = "bool", .nullable = true},
      {.name = "compile_mm_encoder", .type = "bool"},
      {.name = "cudagraph_mm_encoder", .type = "bool"},
      {.name = "encoder_cudagraph_token_budgets", .type = "list"},
      {.name = "encoder_cudagraph_max_vision_items_per_batch", .type = "int"},
      {.name = "encoder_cudagraph_max_frames_per_batch", .type = "int", .nullable = true},
      {.name = "compile_sizes", .type = "list", .nullable = true},
      {.name = "compile_ranges_endpoints", .type = "list", .nullable = true},
      {.name = "inductor_compile_config", .type = "object"},
      {.name = "inductor_passes", .type = "object"},
      {.name = "cudagraph_num_of_warmups", .type = "int"},
      {.name = "cudagraph_copy_inputs", .type = "bool"},
      {.name = "cudagraph_specialize_lora", .type = "bool"},
      {.name = "dynamic_shapes_config", .type = "object"},
      {.name = "fast_moe_cold_start", .type = "bool", .nullable = true},
      // PassConfig's, as "pass_config.NAME"
      {.name = "pass_config.fuse_norm_quant", .type = "bool", .nullable = true},
      {.name = "pass_config.fuse_act_quant", .type = "bool", .nullable = true},
      {.name = "pass_config.eliminate_noops", .type = "bool"},
      {.name = "pass_config.fuse_allreduce_rms", .type = "bool", .nullable = true},
      {.name = "pass_config.fuse_minimax_qk_norm", .type = "bool"},
      {.name = "pass_config.enable_qk_norm_rope_fusion", .type = "bool"},
      {.name = "pass_config.fuse_rope_kvcache_cat_mla", .type = "bool", .nullable = true},
      {.name = "pass_config.fuse_act_padding", .type = "bool", .nullable = true},
      {.name = "pass_config.fuse_mla_dual_rms_norm", .type = "bool", .nullable = true},
      {.name = "pass_config.fuse_rope_kvcache", .type = "bool", .nullable = true},
      {.name = "pass_config.rope_kvcache_fusion_max_token_num", .type = "int"},
      {.name = "pass_config.fi_allreduce_fusion_max_size_mb", .type = "float", .nullable = true},
      // DynamicShapesConfig's, as "dynamic_shapes_config.NAME"
      {.name = "dynamic_shapes_config.type",
       .type = "str",
       .choices = {"backed", "unbacked", "backed_size_oblivious"}},
      {.name = "dynamic_shapes_config.evaluate_guards", .type = "bool"},
      {.name = "dynamic_shapes_config.assume_32_bit_indexing", .type = "bool"},
  };
  return kFields;
}

// A not-planned field's value against its type (`name` as "pass_config.fuse_act_quant"), then,
// for a nested class, its own fields.
Status CheckCompilationField(std::string_view where, const std::string& name,
                             const nlohmann::json& value) {
  const std::vector<Field>& fields = CompilationFieldsNotPlanned();
  const auto field =
      std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.name == name; });
  if (field == fields.end()) return Status::Ok();  // a field the table does not type
  if (const std::string refusal = ConfigFieldRefusal(*field, value); !refusal.empty()) {
    return InvalidArgument(fmt::format("{}: {} {} is refused by the engine's parser ({})", where,
                                       name, internal::JsonText(value), refusal));
  }
  if (name == "dynamic_shapes_config" && value.is_object()) {
    for (const auto& item : value.items()) {
      const std::string nested = "dynamic_shapes_config." + item.key();
      if (std::none_of(fields.begin(), fields.end(),
                       [&](const Field& f) { return f.name == nested; })) {
        return InvalidArgument(fmt::format(
            "{}: dynamic_shapes_config's '{}' is not a field the engine takes (its parser refuses "
            "it: 'Unexpected keyword argument'); fields: type, evaluate_guards, "
            "assume_32_bit_indexing",
            where, item.key()));
      }
      KVTOPO_RETURN_IF_ERROR(CheckCompilationField(where, nested, item.value()));
    }
  }
  return Status::Ok();
}

// CompilationConfig's own checks of the fields kvtopo does not plan with (its field validators
// and __post_init__, and VllmConfig's of compile_sizes and compile_ranges_endpoints): the first
// refusal, in the engine's words.
Status CheckCompilationRules(std::string_view where, const nlohmann::json& cc) {
  const auto get = [&](const char* key) { return cc.contains(key) ? cc[key] : nlohmann::json(); };
  const auto refuse = [&](std::string_view text, std::string_view fix) {
    return InvalidArgument(fmt::format("{}: the engine refuses it ({}); {}", where,
                                       internal::QuotedMessage(text), fix));
  };
  if (const nlohmann::json ops = get("custom_ops"); ops.is_array()) {
    int64_t none_or_all = 0;
    for (const nlohmann::json& op : ops) {
      if (!op.is_string()) {
        return InvalidArgument(
            fmt::format("{}: custom_ops entry {} is refused by the engine's "
                        "parser (Input should be a valid string)",
                        where, internal::JsonText(op)));
      }
      none_or_all += op == "none" || op == "all";
    }
    if (none_or_all > 1) {
      return refuse("Can only specify 'none' or 'all'", "give one of them in custom_ops");
    }
    for (const nlohmann::json& op : ops) {
      const std::string name = op.get<std::string>();
      if (name.empty()) {
        return refuse("string index out of range",
                      "drop the empty custom_ops entry (the engine fails on it)");
      }
      if (name.front() != '+' && name.front() != '-' && name != "all" && name != "none") {
        return refuse(fmt::format("Invalid syntax '{}' for custom op, must be 'all', 'none', '+op' "
                                  "or '-op' (where 'op' is the registered op name)",
                                  name),
                      fmt::format("write +{} to enable the op or -{} to disable it", name, name));
      }
    }
  }
  // The piecewise backend, checked when the same config names VLLM_COMPILE.
  if (const nlohmann::json backend = get("backend"); backend.is_string()) {
    const nlohmann::json mode = get("mode");
    const bool vllm_compile =
        (!mode.is_string() && internal::PydanticIntIn(mode, 3, 3).has_value()) ||
        (mode.is_string() && internal::AsciiUpper(mode.get<std::string>()) == "VLLM_COMPILE");
    const std::string name = backend.get<std::string>();
    if (vllm_compile && !name.empty() && name != "eager" && name != "inductor") {
      return refuse(fmt::format("Invalid backend for piecewise compilation: {}", name),
                    "use backend '', eager or inductor with mode VLLM_COMPILE");
    }
  }
  if (internal::PydanticBool(get("cudagraph_mm_encoder")).value_or(false)) {
    const std::optional<int64_t> items =
        internal::PydanticIntIn(get("encoder_cudagraph_max_vision_items_per_batch"), INT64_MIN, -1);
    if (items) {
      return refuse(
          "encoder_cudagraph_max_vision_items_per_batch must be non-negative (0 = "
          "auto-infer)",
          "give 0 or more");
    }
    if (internal::PydanticIntIn(get("encoder_cudagraph_max_frames_per_batch"), INT64_MIN, -1)) {
      return refuse(
          "encoder_cudagraph_max_frames_per_batch must be non-negative (None = "
          "auto-infer)",
          "give 0 or more, or null");
    }
  }
  // Lists of integers: pydantic's element check, then the engine's.
  const auto integers = [&](const char* key) -> Result<std::vector<int64_t>> {
    std::vector<int64_t> out;
    const nlohmann::json list = get(key);
    if (!list.is_array()) return out;
    for (const nlohmann::json& x : list) {
      const std::optional<int64_t> n = internal::PydanticInt(x);
      if (!n) {
        return InvalidArgument(fmt::format("{}: {} entry {} is refused by the engine's parser ({})",
                                           where, key, internal::JsonText(x),
                                           internal::PydanticIntRefusal(x)));
      }
      out.push_back(*n);
    }
    return out;
  };
  KVTOPO_ASSIGN_OR_RETURN(const std::vector<int64_t> budgets,
                          integers("encoder_cudagraph_token_budgets"));
  if (std::any_of(budgets.begin(), budgets.end(), [](int64_t b) { return b <= 0; })) {
    return refuse(fmt::format("All encoder_cudagraph_token_budgets must be positive, got [{}]",
                              fmt::join(budgets, ", ")),
                  "give token budgets above 0");
  }
  KVTOPO_ASSIGN_OR_RETURN(const std::vector<int64_t> endpoints,
                          integers("compile_ranges_endpoints"));
  for (const int64_t x : endpoints) {
    if (x <= 0) {
      return refuse(fmt::format("Invalid compile range endpoint: {}", x), "give endpoints above 0");
    }
  }
  if (const nlohmann::json sizes = get("compile_sizes"); sizes.is_array()) {
    for (const nlohmann::json& x : sizes) {
      if (x.is_string() && x != "cudagraph_capture_sizes") {
        return refuse(fmt::format("Unrecognized size type in compile_sizes, expect "
                                  "'cudagraph_capture_sizes', got {}",
                                  x.get<std::string>()),
                      "give integers or 'cudagraph_capture_sizes'");
      }
      if (!x.is_string() && !internal::PydanticInt(x)) {
        return InvalidArgument(
            fmt::format("{}: compile_sizes entry {} is refused by the engine's parser ({})", where,
                        internal::JsonText(x), internal::PydanticIntRefusal(x)));
      }
    }
  }
  if (const nlohmann::json passes = get("inductor_passes"); passes.is_object()) {
    for (const auto& item : passes.items()) {
      if (!item.value().is_string()) {
        return InvalidArgument(
            fmt::format("{}: inductor_passes '{}' {} is refused by the "
                        "engine's parser (Input should be a valid string)",
                        where, item.key(), internal::JsonText(item.value())));
      }
    }
  }
  return Status::Ok();
}

// -O and --compilation-config, checked as the engine checks them when it parses the flag
// (CompilationConfig's field validators; an unknown field is refused), and what of them decides
// the CUDA graph mode (LaunchConfig::Compilation).
Status ReadCompilationConfig(const LaunchOptions& o, LaunchConfig& c) {
  LaunchConfig::Compilation& out = c.compilation;
  if (o.optimization_level) {
    if (*o.optimization_level < 0 || *o.optimization_level > 3) {
      return InvalidArgument(
          fmt::format("--optimization-level must be 0 to 3, got {}", *o.optimization_level));
    }
    out.optimization_level = *o.optimization_level;
  }
  out.deepep_high_throughput_dp =
      o.all2all_backend == "deepep_high_throughput" && o.data_parallel_size.value_or(1) > 1;
  out.interactivity = o.performance_mode == "interactivity";
  out.torch_compile_disable = o.torch_compile_disable.value_or(false);
  out.breakable_cudagraph = o.use_breakable_cudagraph.value_or(false);
  if (o.cudagraph_capture_sizes) {
    std::vector<int64_t> sizes;
    for (const std::string& word : internal::SplitOnSpaces(*o.cudagraph_capture_sizes)) {
      KVTOPO_ASSIGN_OR_RETURN(const int64_t n, ParsePlainInt(word, "--cudagraph-capture-sizes"));
      if (n < 1 || n > kMaxInt32) {
        return InvalidArgument(fmt::format(
            "--cudagraph-capture-sizes must be integers in [1, {}], got {}", kMaxInt32, n));
      }
      sizes.push_back(n);
    }
    out.capture_sizes = std::move(sizes);
  }
  if (o.max_cudagraph_capture_size) out.max_capture_size = *o.max_cudagraph_capture_size;
  if (!o.compilation_config) return Status::Ok();
  constexpr std::string_view kWhere = "--compilation-config";
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json cc,
                          ParseJsonObjectFlag(*o.compilation_config, kWhere));
  auto bool_field = [](std::string_view where, const std::string& key,
                       const nlohmann::json& v) -> Result<bool> {
    const std::optional<bool> b = internal::PydanticBool(v);
    if (!b) {
      return InvalidArgument(
          fmt::format("{}: {} must be true or false, got {}", where, key, internal::JsonText(v)));
    }
    return *b;
  };
  for (const auto& [key, value] : cc.items()) {
    KVTOPO_RETURN_IF_ERROR(CheckOlderCompilationField(kWhere, key, value));
    KVTOPO_RETURN_IF_ERROR(CheckConfigField(kWhere, key, kCompilationFields));
    if (key == "mode") {
      if (value.is_null()) continue;
      // CompilationMode, an IntEnum: a string is a mode's name (its before-validator), any other
      // value pydantic's lax int (3, 3.0, true for 1).
      const std::optional<int64_t> n =
          value.is_string() ? std::nullopt : internal::PydanticIntIn(value, 0, 3);
      if (n) {
        out.mode = *n;
        continue;
      }
      const std::string name =
          value.is_string() ? internal::AsciiUpper(value.get<std::string>()) : "";
      const auto* it = std::find(std::begin(kCompilationModes), std::end(kCompilationModes), name);
      if (it == std::end(kCompilationModes)) {
        return InvalidArgument(fmt::format(
            "{}: mode {} is not a compilation mode (the engine: 'Invalid compilation mode'); "
            "valid: 0 to 3, or {}",
            kWhere, internal::JsonText(value), fmt::join(kCompilationModes, ", ")));
      }
      out.mode = it - std::begin(kCompilationModes);
    } else if (key == "cudagraph_mode") {
      if (value.is_null()) continue;
      const std::optional<int64_t> n = internal::JsonIntIn(value, 0, 2);
      const std::string name = n                   ? std::string(kCudagraphModes[*n])
                               : value.is_string() ? internal::AsciiUpper(value.get<std::string>())
                                                   : "";
      if (std::find(std::begin(kCudagraphModes), std::end(kCudagraphModes), name) ==
          std::end(kCudagraphModes)) {
        return InvalidArgument(fmt::format(
            "{}: cudagraph_mode {} is not a CUDA graph mode (the engine's parser fails on it); "
            "valid: {}",
            kWhere, internal::JsonText(value), fmt::join(kCudagraphModes, ", ")));
      }
      out.cudagraph_mode = name;
    } else if (key == "splitting_ops") {
      if (value.is_null()) continue;
      if (!value.is_array() ||
          !std::all_of(value.begin(), value.end(), [](const auto& op) { return op.is_string(); })) {
        return InvalidArgument(fmt::format("{}: splitting_ops must be a list of op names, got {}",
                                           kWhere, internal::JsonText(value)));
      }
      out.splitting_ops_empty = value.empty();
      const nlohmann::json& ops = value;  // clang 14 lambdas cannot capture structured bindings
      out.splitting_ops_hold_attention =
          std::all_of(std::begin(kAttentionSplittingOps), std::end(kAttentionSplittingOps),
                      [&ops](std::string_view op) {
                        return std::find(ops.begin(), ops.end(), op) != ops.end();
                      });
    } else if (key == "cudagraph_capture_sizes") {
      if (value.is_null()) continue;
      if (o.cudagraph_capture_sizes) {
        return InvalidArgument(
            "--cudagraph-capture-sizes beside --compilation-config's cudagraph_capture_sizes: "
            "the engine refuses the pair ('cudagraph_capture_sizes and "
            "compilation_config.cudagraph_capture_sizes are mutually exclusive'); give one");
      }
      std::vector<int64_t> sizes;
      const bool list = value.is_array();
      for (size_t i = 0; list && i < value.size(); ++i) {
        const std::optional<int64_t> n = internal::PydanticIntIn(value[i], 1, kMaxInt32);
        if (!n) break;
        sizes.push_back(*n);
      }
      if (!list || sizes.size() != value.size()) {
        return InvalidArgument(
            fmt::format("{}: cudagraph_capture_sizes must be a list of integers in [1, {}], got {}",
                        kWhere, kMaxInt32, internal::JsonText(value)));
      }
      out.capture_sizes = std::move(sizes);
    } else if (key == "max_cudagraph_capture_size") {
      if (value.is_null()) continue;
      if (o.max_cudagraph_capture_size) {
        return InvalidArgument(
            "--max-cudagraph-capture-size beside --compilation-config's "
            "max_cudagraph_capture_size: the engine refuses the pair ('max_cudagraph_capture_size "
            "and compilation_config.max_cudagraph_capture_size are mutually exclusive'); give "
            "one");
      }
      const std::optional<int64_t> n = internal::PydanticIntIn(value, INT32_MIN, kMaxInt32);
      if (!n) {
        return InvalidArgument(
            fmt::format("{}: max_cudagraph_capture_size must be an integer, got {}", kWhere,
                        internal::JsonText(value)));
      }
      out.max_capture_size = *n;
    } else if (key == "use_inductor_graph_partition") {
      KVTOPO_ASSIGN_OR_RETURN(out.use_inductor_graph_partition, bool_field(kWhere, key, value));
    } else if (key == "pass_config") {
      if (value.is_null()) continue;
      if (!value.is_object()) {
        return InvalidArgument(fmt::format("{}: pass_config must be a JSON object, got {}", kWhere,
                                           internal::JsonText(value)));
      }
      constexpr std::string_view kPassWhere = "--compilation-config's pass_config";
      for (const auto& [pass, setting] : value.items()) {
        KVTOPO_RETURN_IF_ERROR(CheckOlderPassField(kPassWhere, pass, setting));
        KVTOPO_RETURN_IF_ERROR(CheckConfigField(kPassWhere, pass, kPassFields));
        if (pass == "fuse_attn_quant") {
          KVTOPO_ASSIGN_OR_RETURN(out.fuse_attn_quant, bool_field(kPassWhere, pass, setting));
        } else if (pass == "enable_sp" || pass == "fuse_gemm_comms") {
          KVTOPO_ASSIGN_OR_RETURN(const bool on, bool_field(kPassWhere, pass, setting));
          out.sequence_parallelism = out.sequence_parallelism || on;
        } else if (pass == "sp_min_token_num") {
          out.sp_min_token_num = !setting.is_null();
        } else {
          KVTOPO_RETURN_IF_ERROR(CheckCompilationField(kWhere, "pass_config." + pass, setting));
          out.keys_not_planned.push_back("pass_config." + pass);
        }
      }
    } else {
      KVTOPO_RETURN_IF_ERROR(CheckCompilationField(kWhere, key, value));
      out.keys_not_planned.push_back(key);
    }
  }
  return CheckCompilationRules(kWhere, cc);
}

// --attention-config (AttentionConfig, vllm/config/attention.py at 28be48fa9), checked as the
// engine's parser checks its fields: an unknown field, a value of the wrong type, a
// flash_attn_version other than 2, 3 or 4, or an MLA prefill backend it does not name, is
// refused. `backend` names the target's attention backend as --attention-backend does ("auto":
// the model's); EngineArgs.create_engine_config refuses the two together. flash_attn_version and
// use_trtllm_attention settle GPU-dependent backend answers (CacheOptions); the other fields
// leave the plan as it is.
constexpr std::string_view kAttentionFields[] = {"backend",
                                                 "flash_attn_version",
                                                 "use_prefill_decode_attention",
                                                 "flash_attn_max_num_splits_for_cuda_graph",
                                                 "tq_max_kv_splits_for_cuda_graph",
                                                 "use_trtllm_attention",
                                                 "disable_flashinfer_q_quantization",
                                                 "mla_prefill_backend",
                                                 "use_prefill_query_quantization",
                                                 "use_fp4_indexer_cache",
                                                 "use_non_causal",
                                                 "flex_attn_block_m",
                                                 "flex_attn_block_n",
                                                 "flex_attn_q_block_size",
                                                 "flex_attn_kv_block_size"};
constexpr std::string_view kMlaPrefillBackends[] = {"FLASH_ATTN", "FLASHINFER", "TRTLLM_RAGGED",
                                                    "TOKENSPEED_MLA"};
Status ReadAttentionConfig(const LaunchOptions& o, LaunchConfig& c) {
  if (!o.attention_config) return Status::Ok();
  constexpr std::string_view kWhere = "--attention-config";
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json ac,
                          ParseJsonObjectFlag(*o.attention_config, kWhere));
  for (const auto& [key, value] : ac.items()) {
    KVTOPO_RETURN_IF_ERROR(CheckOlderAttentionField(kWhere, key, value));
    KVTOPO_RETURN_IF_ERROR(CheckConfigField(kWhere, key, kAttentionFields));
    const std::string shown = internal::JsonText(value);
    if (key == "backend") {
      if (value.is_null()) continue;
      if (!value.is_string()) {
        return InvalidArgument(fmt::format(
            "{}: backend must be an attention backend name or \"auto\", got {}", kWhere, shown));
      }
      const std::string name = value.get<std::string>();
      if (internal::AsciiLower(name) == "auto") continue;  // the engine's None
      if (o.attention_backend) {
        return InvalidArgument(
            "--attention-backend beside --attention-config's backend: the engine refuses the "
            "pair ('attention_backend and attention_config.backend are mutually exclusive'); "
            "give one");
      }
      if (Result<BackendCaps> caps = FindBackend(name); !caps.ok()) {
        return InvalidArgument(fmt::format("{}: backend: {}", kWhere, caps.status().message()));
      }
      c.cache.attention_backend = name;
    } else if (key == "flash_attn_version") {
      // Literal[2, 3, 4]: an equal integer or float, not a bool or a string.
      const std::optional<int64_t> n =
          value.is_number() ? internal::PydanticIntIn(value, 2, 4) : std::nullopt;
      if (!value.is_null() && !n) {
        return InvalidArgument(fmt::format(
            "{}: flash_attn_version must be 2, 3 or 4, got {} (the engine's parser refuses it)",
            kWhere, shown));
      }
      c.cache.flash_attn_version = n;
    } else if (key == "mla_prefill_backend") {
      if (value.is_null()) continue;
      const std::string name =
          value.is_string() ? internal::AsciiUpper(value.get<std::string>()) : "";
      if (std::find(std::begin(kMlaPrefillBackends), std::end(kMlaPrefillBackends), name) ==
          std::end(kMlaPrefillBackends)) {
        return InvalidArgument(fmt::format(
            "{}: mla_prefill_backend {} is not an MLA prefill backend (the engine's parser fails "
            "on it); valid: {}",
            kWhere, shown, fmt::join(kMlaPrefillBackends, ", ")));
      }
    } else if (key.starts_with("flex_attn_") || key.ends_with("_for_cuda_graph")) {
      // int | None for FlexAttention's tiles, int for the split counts.
      if (value.is_null() && key.starts_with("flex_attn_")) continue;
      if (!internal::PydanticInt(value)) {
        return InvalidArgument(
            fmt::format("{}: {} must be an integer, got {}", kWhere, key, shown));
      }
    } else if (const std::optional<bool> b = internal::PydanticBool(value); !b) {
      return InvalidArgument(
          fmt::format("{}: {} must be true or false, got {}", kWhere, key, shown));
    } else if (key == "use_trtllm_attention") {
      if (value.is_null()) {
        c.cache.use_trtllm_attention.reset();  // bool | None: auto-detected
      } else {
        c.cache.use_trtllm_attention = *b;
      }
    }
  }
  return Status::Ok();
}

// --rope-scaling and --rope-theta, which releases before the fork's (28be48fa9 removed them) set
// on the model's config as hf_overrides keys after the --hf-overrides object
// (ModelConfig.__post_init__ before that removal; an empty rope_scaling object set nothing): the
// fork's form of those given, the --hf-overrides object they made, or "" where they set nothing.
Result<std::string> RopeFlagsInstead(const LaunchOptions& o) {
  nlohmann::json overrides = nlohmann::json::object();
  if (o.hf_overrides) {
    KVTOPO_ASSIGN_OR_RETURN(overrides, internal::ParseHfOverrides(*o.hf_overrides));
  }
  bool set = false;
  if (o.rope_scaling) {
    KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json scaling,
                            internal::ParseJsonText(*o.rope_scaling, "--rope-scaling"));
    if (!scaling.is_object()) {
      return InvalidArgument(
          fmt::format("--rope-scaling must be a JSON object such as '{{\"rope_type\": \"yarn\", "
                      "\"factor\": 4.0}}', got {}",
                      *o.rope_scaling));
    }
    if (!scaling.empty()) {
      overrides["rope_scaling"] = scaling;
      set = true;
    }
  }
  if (o.rope_theta) {
    const std::string& text = *o.rope_theta;
    const std::optional<double> theta = ParsePythonFloat(text);
    if (!theta || !std::isfinite(*theta) || *theta <= 0) {
      return InvalidArgument(
          fmt::format("--rope-theta must be a positive number such as 1000000, got '{}'", text));
    }
    overrides["rope_theta"] = *theta;
    set = true;
  }
  if (!set) return std::string();
  return fmt::format("--hf-overrides {}", ShellWord(internal::JsonText(overrides)));
}

// Features the engine refuses at startup in these launches, though they leave the cache as it is
// (EngineArgs._check_feature_supported, ParallelConfig.__post_init__ and VllmConfig.__post_init__
// at 28be48fa9).
Status CheckRefusedFeatures(const LaunchOptions& o, const LaunchConfig& c) {
  const int64_t dp = o.data_parallel_size.value_or(1);
  for (const auto& [count, flag] :
       {std::pair{o.max_num_partial_prefills, "--max-num-partial-prefills"},
        std::pair{o.max_long_partial_prefills, "--max-long-partial-prefills"}}) {
    if (count && *count != 1) {
      return Rejected(fmt::format(
          "{} {}: the engine refuses concurrent partial prefill at startup ('Concurrent Partial "
          "Prefill is not supported'); drop the flag or set it to 1",
          flag, *count));
    }
  }
  if (o.enable_eplb.value_or(false)) {
    if (!o.enable_expert_parallel.value_or(false)) {
      return Rejected(
          "--enable-eplb without --enable-expert-parallel: the engine refuses it "
          "('enable_expert_parallel must be True to use EPLB'); add --enable-expert-parallel or "
          "drop --enable-eplb");
    }
    const int64_t tp = c.parallel.tensor_parallel_size;
    if (tp * dp <= 1) {
      return Rejected(fmt::format(
          "--enable-eplb with --tensor-parallel-size {} and --data-parallel-size {}: the engine "
          "refuses EPLB on one rank ('EPLB requires tensor_parallel_size or data_parallel_size "
          "to be greater than 1'); drop --enable-eplb",
          tp, dp));
    }
  } else if (c.num_redundant_experts != 0) {
    return Rejected(fmt::format(
        "--eplb-config's num_redundant_experts {} without --enable-eplb: the engine refuses it "
        "('num_redundant_experts is set to {} but EPLB is not enabled. Either enable EPLB or "
        "unset num_redundant_experts.'); add --enable-eplb or drop num_redundant_experts",
        c.num_redundant_experts, c.num_redundant_experts));
  }
  // ParallelConfig.__post_init__: elastic expert parallelism.
  if (o.enable_elastic_ep.value_or(false)) {
    if (!o.enable_eplb.value_or(false)) {
      return Rejected(
          "--enable-elastic-ep without --enable-eplb: the engine refuses it ('Elastic EP is only "
          "supported with enable_eplb=True.'); add --enable-eplb or drop --enable-elastic-ep");
    }
    if (c.pipeline_parallel_size > 1) {
      return Rejected(fmt::format(
          "--enable-elastic-ep with --pipeline-parallel-size {}: the engine refuses it ('Elastic "
          "EP is not supported with pipeline parallelism (pipeline_parallel_size={}).'); use one "
          "pipeline stage or drop --enable-elastic-ep",
          c.pipeline_parallel_size, c.pipeline_parallel_size));
    }
    if (c.external_data_parallel_lb || o.data_parallel_hybrid_lb.value_or(false)) {
      return Rejected(
          "--enable-elastic-ep with external or hybrid data-parallel load balancing "
          "(--data-parallel-external-lb, --data-parallel-rank, --data-parallel-hybrid-lb): the "
          "engine refuses it ('Elastic EP is not compatible with data_parallel_external_lb or "
          "data_parallel_hybrid_lb. Elastic EP relies on a single API server and core client to "
          "coordinate scale up/down.'); drop one of them");
    }
  }
  // EngineArgs.create_engine_config, then ParallelConfig.__post_init__: the node layout, and who
  // names this engine's data-parallel rank. A rank (given, or inferred from --node-rank on several
  // nodes) turns external load balancing on; it needs more than one DP rank, and must be one.
  const bool hybrid_lb = o.data_parallel_hybrid_lb.value_or(false);
  const bool external_lb = o.data_parallel_external_lb.value_or(false);
  const bool headless = o.headless.value_or(false);
  const std::string dp_backend = o.data_parallel_backend.value_or("mp");
  if (dp_backend != "mp" && dp_backend != "ray") {
    return InvalidArgument(
        fmt::format("--data-parallel-backend must be mp or ray, got '{}'", dp_backend));
  }
  // `vllm serve` (ServeSubcommand.cmd) starts no API server in headless mode.
  if (headless && o.api_server_count.value_or(0) > 0) {
    return Rejected(fmt::format(
        "--api-server-count {} with --headless: the engine refuses it before it starts "
        "('--api-server-count={} cannot be used with --headless (no API servers are started in "
        "headless mode).'); drop one of them",
        *o.api_server_count, *o.api_server_count));
  }
  if (headless && hybrid_lb) {
    return Rejected(
        "--data-parallel-hybrid-lb with --headless: the engine refuses the pair "
        "('data_parallel_hybrid_lb is not applicable in headless mode'); drop one of them");
  }
  // `vllm serve` (ServeSubcommand.cmd) refuses external and hybrid load balancing together
  // first, each named by its switch or by the rank flag that implies it.
  if ((external_lb || o.data_parallel_rank) && (hybrid_lb || o.data_parallel_start_rank)) {
    return Rejected(fmt::format(
        "{} with {}: the engine refuses the pair before it starts ('Cannot use both external "
        "and hybrid data parallel load balancing modes. External LB is enabled via "
        "--data-parallel-external-lb or --data-parallel-rank. Hybrid LB is enabled via "
        "--data-parallel-hybrid-lb or --data-parallel-start-rank. Use one mode or the "
        "other.'); drop one of them",
        external_lb ? "--data-parallel-external-lb" : "--data-parallel-rank",
        hybrid_lb ? "--data-parallel-hybrid-lb" : "--data-parallel-start-rank"));
  }
  const int64_t nnodes = o.nnodes.value_or(1);
  if (nnodes != 1 && dp_backend != "mp") {
    return Rejected(fmt::format(
        "--nnodes {} with --data-parallel-backend {}: the engine refuses it ('nnodes > 1 is only "
        "supported with data_parallel_backend=mp'); use --data-parallel-backend mp",
        nnodes, dp_backend));
  }
  // ParallelConfig.__post_init__: several nodes need workers the engine starts on each.
  if (const std::string executor = o.distributed_executor_backend.value_or("mp");
      nnodes > 1 && executor != "mp" && executor != "uni" && executor != "external_launcher") {
    return Rejected(fmt::format(
        "--nnodes {} with --distributed-executor-backend {}: the engine refuses it ('nnodes > 1 "
        "can only be set when distributed executor backend is mp, uni or external_launcher.'); "
        "use mp, or one node per engine",
        nnodes, executor));
  }
  // Executor.get_class, which VllmConfig.__post_init__ calls for every launch: a name other than
  // ray, mp, uni and external_launcher is an Executor class's path, module.Class, which
  // resolve_obj_by_qualname splits at its last dot; without one the split raises. (Whether a path
  // imports is not known here.)
  if (const std::optional<std::string>& executor = o.distributed_executor_backend;
      executor && *executor != "ray" && *executor != "mp" && *executor != "uni" &&
      *executor != "external_launcher" && executor->find('.') == std::string::npos) {
    return Rejected(fmt::format(
        "--distributed-executor-backend '{}' is none of the engine's executors (ray, mp, uni, "
        "external_launcher, as written), so the engine reads it as an Executor class's path, "
        "module.Class, and fails as it builds its config ('not enough values to unpack "
        "(expected 2, got 1)'); give one of them, or the class's module path",
        *executor));
  }
  // EngineArgs._check_feature_supported: pipeline stages need an executor that supports them
  // (ray, mp, external_launcher; a class named on the command line is a string to it).
  if (const std::optional<std::string>& executor = o.distributed_executor_backend;
      executor && c.pipeline_parallel_size > 1 && *executor != "ray" && *executor != "mp" &&
      *executor != "external_launcher") {
    return Rejected(fmt::format(
        "--distributed-executor-backend {} with --pipeline-parallel-size {}: the engine refuses "
        "it as it builds its config ('Pipeline Parallelism without Ray distributed executor or "
        "multiprocessing executor or external launcher is not supported.'); use mp or ray",
        *executor, c.pipeline_parallel_size));
  }
  // UniProcExecutor runs one worker, rank 0, in the engine core's process: a world of more ranks
  // (TP x PP x PCP) waits in torch.distributed's initialization for ranks no process starts.
  if (const int64_t world = c.parallel.tensor_parallel_size * c.pipeline_parallel_size *
                            c.parallel.prefill_context_parallel_size;
      o.distributed_executor_backend == "uni" && world > 1) {
    return Rejected(fmt::format(
        "--distributed-executor-backend uni runs one worker in the engine core's process, and "
        "--tensor-parallel-size {} x --pipeline-parallel-size {} x "
        "--prefill-context-parallel-size {} needs {}: that worker waits for ranks no process "
        "starts, so the launch hangs as it initializes; use mp (the engine's choice for more "
        "than one worker) or ray",
        c.parallel.tensor_parallel_size, c.pipeline_parallel_size,
        c.parallel.prefill_context_parallel_size, world));
  }
  std::optional<int64_t> rank = o.data_parallel_rank;
  std::string rank_from = rank ? fmt::format("--data-parallel-rank {}", *rank) : "";
  std::optional<int64_t> local = o.data_parallel_size_local;
  const int64_t tp = c.parallel.tensor_parallel_size;
  const int64_t within_dp = c.pipeline_parallel_size * tp;  // each at most 4,096: no overflow
  int64_t inferred_rank = 0;
  if (nnodes > 1) {
    const int64_t world = dp * within_dp;
    if (world % nnodes != 0) {
      return Rejected(fmt::format(
          "--nnodes {} does not divide the {} ranks of TP {} x PP {} x DP {}: the engine refuses "
          "it ('world_size={} must be divisible by nnodes={}.'); give a node count that divides "
          "them",
          nnodes, world, tp, c.pipeline_parallel_size, dp, world, nnodes));
    }
    const int64_t node_rank = o.node_rank.value_or(0);
    if (node_rank >= nnodes) {
      return Rejected(fmt::format(
          "--node-rank {} with --nnodes {}: the engine refuses a node outside the nodes "
          "('node_rank={} must be less than nnodes={}.'); pass a node rank below {}",
          node_rank, nnodes, node_rank, nnodes, nnodes));
    }
    const int64_t local_world = world / nnodes;
    inferred_rank = node_rank * local_world / within_dp;
    if (dp > 1 && external_lb) {
      rank = inferred_rank;
      rank_from = fmt::format("--node-rank {} of --nnodes {} (data-parallel rank {})", node_rank,
                              nnodes, inferred_rank);
    } else if (!local) {
      local = std::max<int64_t>(local_world / within_dp, 1);
    }
  }
  bool external = external_lb || rank.has_value();
  if (external) {
    if (!rank) {
      return Rejected(
          "--data-parallel-external-lb without --data-parallel-rank: the engine refuses it "
          "('data_parallel_rank or node_rank must be specified if data_parallel_external_lb is "
          "enable.'), inferring a rank only with --data-parallel-size above 1 on several nodes "
          "(--nnodes, --node-rank); pass --data-parallel-rank");
    }
    if (o.data_parallel_size_local && *o.data_parallel_size_local != 1) {
      return Rejected(fmt::format(
          "--data-parallel-size-local {} with external data-parallel load balancing: the engine "
          "refuses it ('data_parallel_size_local must be 1 or None when data_parallel_rank is "
          "set'); drop --data-parallel-size-local or set it to 1",
          *o.data_parallel_size_local));
    }
    local = 1;
  } else if (local) {
    // A start rank infers hybrid load balancing, which one local rank turns into external.
    const bool start = o.data_parallel_start_rank.value_or(0) != 0;
    external = (hybrid_lb || (start && !headless)) && *local == 1;
    rank = start ? *o.data_parallel_start_rank : inferred_rank;
    rank_from = start ? fmt::format("--data-parallel-start-rank {}", *rank)
                      : fmt::format("data-parallel rank {}, inferred from --node-rank", *rank);
  } else if (hybrid_lb) {
    return Rejected(
        "--data-parallel-hybrid-lb without --data-parallel-size-local: the engine refuses it "
        "('data_parallel_size_local must be set to use data_parallel_hybrid_lb.'); pass "
        "--data-parallel-size-local");
  }
  if (headless && local == 0) {
    return Rejected(
        "--data-parallel-size-local 0 with --headless: the engine refuses it as it starts its "
        "engines ('data_parallel_size_local must be > 0 in headless mode'); give 1 or more");
  }
  if (local && *local > dp) {
    return Rejected(fmt::format(
        "--data-parallel-size-local {} with --data-parallel-size {}: the engine refuses more "
        "local ranks than ranks ('data_parallel_size_local ({}) must be <= data_parallel_size "
        "({})'); lower --data-parallel-size-local",
        *local, dp, *local, dp));
  }
  if (external && dp <= 1) {
    return Rejected(fmt::format(
        "{} with --data-parallel-size {}: the engine refuses external data-parallel load "
        "balancing on one DP rank ('data_parallel_external_lb can only be set when "
        "data_parallel_size > 1'); raise --data-parallel-size or drop the flag",
        external_lb ? std::string("--data-parallel-external-lb")
        : o.data_parallel_rank
            ? rank_from
            : std::string("hybrid load balancing with one local rank (--data-parallel-size-local "
                          "1)"),
        dp));
  }
  if (dp > 1 && rank && *rank >= dp) {
    return Rejected(fmt::format(
        "{} with --data-parallel-size {}: the engine refuses a rank outside the DP ranks "
        "('data_parallel_rank ({}) must be in the range [0, {})'); pass a rank below {}",
        rank_from, dp, *rank, dp, dp));
  }
  // Scheduler.__init__ and SimpleCPUOffloadScheduler.__init__, once the KV cache is sized.
  const int64_t dcp = c.parallel.decode_context_parallel_size;
  const int64_t pcp = c.parallel.prefill_context_parallel_size;
  if (o.enable_return_routed_experts.value_or(false) && dcp * pcp > 1) {
    return Rejected(fmt::format(
        "--enable-return-routed-experts with --decode-context-parallel-size {} and "
        "--prefill-context-parallel-size {}: the engine refuses context parallelism with it once "
        "the weights are loaded ('enable_return_routed_experts does not support context "
        "parallelism'); drop one of them",
        dcp, pcp));
  }
  if (c.kv_connector == "SimpleCPUOffloadConnector" && dcp * pcp > 1) {
    return Rejected(fmt::format(
        "KV connector SimpleCPUOffloadConnector ({}) with --decode-context-parallel-size {} and "
        "--prefill-context-parallel-size {}: the engine's simple CPU offload scheduler asserts "
        "one context-parallel rank once the weights are loaded; drop --use-simple-kv-offload "
        "(the native OffloadingConnector takes context parallelism) or context parallelism",
        c.kv_connector_source, dcp, pcp));
  }
  if (o.enable_return_routed_experts.value_or(false) && c.pipeline_parallel_size > 1) {
    return Rejected(fmt::format(
        "--enable-return-routed-experts with --pipeline-parallel-size {}: the engine refuses the "
        "pair ('--enable-return-routed-experts is incompatible with pipeline parallelism'); drop "
        "one of them",
        c.pipeline_parallel_size));
  }
  // The connector given, before --kv-offloading-size adds one (KVTransferConfig
  // .is_kv_transfer_instance: a kv_connector with a kv_role).
  if (o.enable_return_routed_experts.value_or(false) && o.kv_transfer_config) {
    KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json transfer,
                            ParseConfigClassJson(*o.kv_transfer_config, "--kv-transfer-config"));
    const bool instance = transfer.is_object() && transfer.contains("kv_connector") &&
                          !transfer["kv_connector"].is_null() && transfer.contains("kv_role") &&
                          !transfer["kv_role"].is_null();
    if (instance) {
      return Rejected(fmt::format(
          "--enable-return-routed-experts with KV connector {} (--kv-transfer-config): the "
          "engine refuses the pair ('--enable-return-routed-experts is incompatible with KV "
          "connectors'); drop one of them",
          transfer["kv_connector"].dump()));
    }
  }
  return Status::Ok();
}

// A byte-size option's value ("12GiB", "1325000000"), which must be positive; errors name `flag`.
Result<int64_t> PositiveByteSize(const std::string& text, std::string_view flag) {
  KVTOPO_ASSIGN_OR_RETURN(const int64_t bytes, ParseByteSize(text, flag));
  if (bytes <= 0) return InvalidArgument(fmt::format("{} must be positive, got '{}'", flag, text));
  return bytes;
}

// The engine's defaults for the tokens per step and the rows, before --performance-mode doubles
// them (_set_default_max_num_seqs_and_batched_tokens_args and EngineArgs.get_batch_defaults in
// vllm/engine/arg_utils.py, ParallelConfig.use_batched_dp_moe in vllm/config/parallel.py, at
// 28be48fa9):
// - batched data-parallel MoE (--enable-expert-parallel, --data-parallel-size > 1 and an
//   --all2all-backend of deepep_low_latency or nixl_ep): 256 tokens per step;
// - otherwise, for `vllm serve` on a known GPU (--device-memory, --device-name): 8,192 tokens on a
//   GPU of 70 GiB or more whose lower-cased name does not contain "a100", 2,048 on any other;
// - rows, on a known GPU: 1,024 and 256 by the same test.
// Without either, kvtopo's 8,192 and 256 stay. Sets the limits not given and says which rule set
// them (info diagnostics). A given --kv-cache-memory above the GPU's memory is refused.
// The GPU --device-name names, where NVIDIA's table of CUDA GPUs (GpuNameCapability) knows it,
// settles what the engine decides by the GPU as --device-capability does: without that flag it
// takes the name's capability (an info diagnostic says so); a stated capability the name
// contradicts is kept, with a warning.
void ApplyDeviceNameCapability(const LaunchOptions& o, LaunchConfig& c,
                               std::vector<Diagnostic>& diagnostics) {
  if (!o.device_name) return;
  const std::optional<DeviceCapability> named = GpuNameCapability(*o.device_name);
  std::optional<DeviceCapability>& stated = c.cache.device_capability;
  const auto note = [&](Severity severity, const char* code, std::string message) {
    diagnostics.push_back(Diagnostic{severity, code, std::move(message)});
  };
  if (named && !stated) {
    stated = named;
    c.cache.device_capability_from = fmt::format("--device-name '{}'", *o.device_name);
    note(Severity::kInfo, "device-capability-from-name",
         fmt::format("--device-name '{}' is a GPU of compute capability {} (NVIDIA's table of "
                     "CUDA GPUs): kvtopo plans what the engine decides by the GPU as "
                     "--device-capability {} does",
                     *o.device_name, DeviceCapabilityName(*named), DeviceCapabilityName(*named)));
  } else if (named && *named != *stated) {
    note(Severity::kWarning, "device-capability-name",
         fmt::format("--device-capability {} is not the compute capability of --device-name '{}' "
                     "({} in NVIDIA's table of CUDA GPUs): kvtopo plans for {}, as stated; the "
                     "engine reads the GPU it runs on",
                     DeviceCapabilityName(*stated), *o.device_name, DeviceCapabilityName(*named),
                     DeviceCapabilityName(*stated)));
  } else if (!named && !stated) {
    note(Severity::kInfo, "device-name-unknown",
         fmt::format("kvtopo does not know the compute capability of --device-name '{}': pass "
                     "--device-capability MAJOR.MINOR to plan what the engine decides by the GPU",
                     *o.device_name));
  }
}

Status ApplyStepDefaults(const LaunchOptions& o, const std::string& all2all_backend,
                         LaunchConfig& c, std::vector<Diagnostic>& diagnostics) {
  const int64_t dp = o.data_parallel_size.value_or(1);
  const bool batched_dp_moe =
      o.enable_expert_parallel.value_or(false) && dp > 1 &&
      (all2all_backend == "deepep_low_latency" || all2all_backend == "nixl_ep");
  if (batched_dp_moe && !c.max_num_batched_tokens_given) {
    c.cache.max_num_batched_tokens = 256;
    diagnostics.push_back(Diagnostic{
        .severity = Severity::kInfo,
        .code = "batched-dp-moe-step-default",
        .message = fmt::format(
            "--enable-expert-parallel with --data-parallel-size {} and --all2all-backend {} runs "
            "batched data-parallel MoE, for which the engine defaults --max-num-batched-tokens "
            "to 256",
            dp, all2all_backend)});
  }
  if (!o.device_memory && !o.device_name) return Status::Ok();
  if (!o.device_memory) {
    return InvalidArgument(fmt::format(
        "--device-name '{}' needs --device-memory: the engine's step defaults follow the GPU's "
        "memory first, then its name",
        *o.device_name));
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t bytes,
                          PositiveByteSize(*o.device_memory, "--device-memory"));
  if (o.kv_cache_memory) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t budget, KvCacheMemoryBytes(o));
    if (budget > bytes) {
      return InvalidArgument(fmt::format(
          "--kv-cache-memory {} ({} bytes) exceeds --device-memory {} ({} bytes): one rank's KV "
          "cache cannot be larger than its GPU; lower --kv-cache-memory",
          *o.kv_cache_memory, budget, *o.device_memory, bytes));
    }
  }
  constexpr int64_t kLargeDeviceBytes = int64_t{70} << 30;
  const std::string name = o.device_name.value_or("");
  const bool a100 = internal::AsciiLower(name).find("a100") != std::string::npos;
  const bool large = bytes >= kLargeDeviceBytes && !a100;
  const int64_t tokens = large ? 8192 : 2048;
  const int64_t rows = large ? 1024 : 256;
  std::vector<std::string> set;
  if (!c.max_num_batched_tokens_given && !batched_dp_moe) {
    c.cache.max_num_batched_tokens = tokens;
    set.push_back(fmt::format("--max-num-batched-tokens {}", tokens));
  }
  if (!o.max_num_seqs) {
    c.cache.max_num_seqs = rows;
    set.push_back(fmt::format("--max-num-seqs {}", rows));
  }
  const std::string device = fmt::format("--device-memory {}{}", *o.device_memory,
                                         name.empty() ? "" : fmt::format(" ('{}')", name));
  const std::string why =
      large ? "70 GiB or more, not an A100"
            : (bytes >= kLargeDeviceBytes ? "an A100, whatever its memory" : "below 70 GiB");
  diagnostics.push_back(Diagnostic{
      .severity = Severity::kInfo,
      .code = "device-step-defaults",
      .message = set.empty()
                     ? fmt::format("{} ({}): the engine's defaults for this GPU ({} tokens, {} "
                                   "rows) do not apply: both limits are set otherwise",
                                   device, why, tokens, rows)
                     : fmt::format("{} ({}): the engine's `vllm serve` defaults for this GPU: {}",
                                   device, why, fmt::join(set, ", "))});
  return Status::Ok();
}

// --all2all-backend as the engine takes it (All2AllBackend in vllm/config/parallel.py at
// 28be48fa9): one of its names; the removed naive and pplx fall back to allgather_reducescatter
// with a warning, as ParallelConfig's validator does.
Result<std::string> ResolveAll2AllBackend(const LaunchOptions& o,
                                          std::vector<Diagnostic>& diagnostics) {
  static constexpr std::string_view kBackends[] = {"allgather_reducescatter",
                                                   "deepep_high_throughput",
                                                   "deepep_low_latency",
                                                   "mori",
                                                   "nixl_ep",
                                                   "flashinfer_nvlink_two_sided",
                                                   "flashinfer_nvlink_one_sided",
                                                   "flashinfer_all2allv"};
  if (!o.all2all_backend) return std::string(kBackends[0]);
  const std::string& given = *o.all2all_backend;
  if (given == "naive" || given == "pplx") {
    diagnostics.push_back(Diagnostic{
        .severity = Severity::kWarning,
        .code = "all2all-backend-removed",
        .message = fmt::format("--all2all-backend '{}' has been removed from the engine, which "
                               "falls back to allgather_reducescatter",
                               given)});
    return std::string(kBackends[0]);
  }
  if (std::find(std::begin(kBackends), std::end(kBackends), given) == std::end(kBackends)) {
    return InvalidArgument(
        fmt::format("--all2all-backend '{}' is not an all-to-all backend; accepted: {} (naive "
                    "and pplx fall back to allgather_reducescatter)",
                    given, fmt::join(kBackends, ", ")));
  }
  return given;
}

// Features kvtopo does not plan that the engine checks at startup (VllmConfig.__post_init__ at
// 28be48fa9): micro-batching needs a DeepEP all-to-all backend. And what of the launch the V2
// model runner does not yet support, in
// the engine's words and order (_get_v2_model_runner_unsupported_features), all but the model's
// inner state and sequence parallelism, which the model layer adds
// (LaunchConfig::v2_runner_unsupported).
Status ReadRunnerFeatures(const LaunchOptions& o, const std::string& all2all_backend,
                          LaunchConfig& c) {
  const bool dbo = o.enable_dbo.value_or(false);
  if ((dbo || o.ubatch_size.value_or(0) > 1) && all2all_backend != "deepep_low_latency" &&
      all2all_backend != "deepep_high_throughput") {
    return Rejected(fmt::format(
        "{} with --all2all-backend {}: the engine asserts at startup ('Microbatching currently "
        "only supports the deepep_low_latency and deepep_high_throughput all2all backend. {} is "
        "not supported.'); pass --all2all-backend deepep_low_latency or deepep_high_throughput",
        dbo ? std::string("--enable-dbo") : fmt::format("--ubatch-size {}", *o.ubatch_size),
        all2all_backend, all2all_backend));
  }
  constexpr std::string_view kLogprobsModes[] = {"raw_logits", "raw_logprobs", "processed_logits",
                                                 "processed_logprobs"};
  if (o.logprobs_mode && std::find(std::begin(kLogprobsModes), std::end(kLogprobsModes),
                                   *o.logprobs_mode) == std::end(kLogprobsModes)) {
    return InvalidArgument(fmt::format("--logprobs-mode '{}' is not a logprobs mode; accepted: {}",
                                       *o.logprobs_mode, fmt::join(kLogprobsModes, ", ")));
  }
  const std::optional<SpeculativeConfig>& spec = c.speculative;
  const bool fast_prefill = o.kv_sharing_fast_prefill.value_or(false);
  c.kv_sharing_fast_prefill = fast_prefill;  // EAGLE-style drafts refuse it (the model layer)
  std::vector<std::string>& unsupported = c.v2_runner_unsupported;
  if (c.parallel.prefill_context_parallel_size > 1) {
    unsupported.push_back("prefill context parallelism");
  }
  // The compilation mode as VllmConfig.__post_init__ leaves it: --enforce-eager,
  // TORCH_COMPILE_DISABLE=1 and VLLM_USE_BREAKABLE_CUDAGRAPH=1 set NONE; -O never picks 1.
  const LaunchConfig::Compilation& cc = c.compilation;
  if (!c.cache.enforce_eager && !cc.torch_compile_disable && !cc.breakable_cudagraph &&
      cc.mode == 1) {
    unsupported.push_back("stock torch.compile");
  }
  // (Sequence parallelism comes next, which the model layer resolves: its threshold reads the
  // model's hidden size.)
  if (spec) {
    if (spec->method == "ngram" || spec->method == "ngram_gpu") {
      unsupported.push_back("ngram/ngram_gpu speculative decoding");
    } else if (spec->method != "eagle" && spec->method != "eagle3" && spec->method != "mtp") {
      unsupported.push_back(fmt::format("speculative method '{}'", spec->method));
    }
    if (spec->parallel_drafting) {
      unsupported.push_back("parallel drafting for speculative decoding");
    }
    if (spec->method == "eagle3" && c.pipeline_parallel_size > 1) {
      unsupported.push_back("EAGLE3 with pipeline parallelism");
    }
  }
  if (dbo) unsupported.push_back("dual batch overlap");
  if (c.enable_return_routed_experts) unsupported.push_back("routed experts capture");
  if (o.logits_processors) unsupported.push_back("custom logits processors");
  if (o.enable_prompt_embeds.value_or(false)) unsupported.push_back("prompt embeds");
  if ((o.logprobs_mode == "raw_logits" || o.logprobs_mode == "processed_logits") &&
      c.runner != "pooling") {
    unsupported.push_back(fmt::format("logprobs mode '{}'", *o.logprobs_mode));
  }
  if (fast_prefill) unsupported.push_back("KV sharing fast prefill");
  if (o.ec_transfer_config) unsupported.push_back("EC transfer");
  return Status::Ok();
}

// The tool call and reasoning parsers the engine registers at 28be48fa9
// (vllm/tool_parsers/__init__.py, vllm/reasoning/__init__.py).
constexpr std::string_view kToolCallParsers[] = {"apertus",
                                                 "cohere_command3",
                                                 "cohere_command4",
                                                 "deepseek_v3",
                                                 "deepseek_v31",
                                                 "deepseek_v32",
                                                 "deepseek_v4",
                                                 "ernie45",
                                                 "functiongemma",
                                                 "gemma4",
                                                 "gigachat3",
                                                 "glm45",
                                                 "glm47",
                                                 "granite",
                                                 "granite-20b-fc",
                                                 "granite4",
                                                 "hermes",
                                                 "hunyuan_a13b",
                                                 "hy_v3",
                                                 "internlm",
                                                 "jamba",
                                                 "kimi_k2",
                                                 "lfm2",
                                                 "llama3_json",
                                                 "llama4_json",
                                                 "llama4_pythonic",
                                                 "longcat",
                                                 "mimo",
                                                 "minimax",
                                                 "minimax_m2",
                                                 "mistral",
                                                 "olmo3",
                                                 "openai",
                                                 "phi4_mini_json",
                                                 "poolside_v1",
                                                 "pythonic",
                                                 "qwen3_coder",
                                                 "qwen3_xml",
                                                 "seed_oss",
                                                 "step3",
                                                 "step3p5",
                                                 "xlam"};
constexpr std::string_view kReasoningParsers[] = {"cohere_command3", "cohere_command4",
                                                  "deepseek_r1",     "deepseek_v3",
                                                  "deepseek_v4",     "ernie45",
                                                  "gemma4",          "glm45",
                                                  "granite",         "holo2",
                                                  "hunyuan_a13b",    "hy_v3",
                                                  "kimi_k2",         "mimo",
                                                  "minimax_m2",      "minimax_m2_append_think",
                                                  "mistral",         "nemotron_v3",
                                                  "olmo3",           "openai_gptoss",
                                                  "poolside_v1",     "qwen3",
                                                  "seed_oss",        "step3",
                                                  "step3p5"};

// Serving flags the engine checks at startup, though the cache is the same: the API server's
// argument checks (validate_parsed_serve_args and validate_api_server_args in
// vllm/entrypoints/openai at 28be48fa9, where a plugin file of over 3 characters adds parsers
// first), the reasoning parser VllmConfig looks up (ReasoningConfig.initialize_token_ids),
// CacheConfig's gpu_memory_utilization, and LoRAConfig's limits (MaxLoRARanks as the parser's
// choices; max_loras, max_cpu_loras and lora_dtype with --enable-lora).
// Sets c.default_mm_loras.
Status CheckServingFlags(const LaunchOptions& o, LaunchConfig& c) {
  if (o.gpu_memory_utilization) {
    const std::string& text = *o.gpu_memory_utilization;
    const std::optional<double> number = ParsePythonFloat(text);
    if (!number) {
      return InvalidArgument(
          fmt::format("--gpu-memory-utilization '{}' is not a number (the engine's parser "
                      "refuses it)",
                      text));
    }
    // pydantic checks the upper bound first; NaN fails it.
    if (const double share = *number; !(share > 0 && share <= 1)) {
      return InvalidArgument(fmt::format(
          "--gpu-memory-utilization {}: the engine refuses a share outside (0, 1] as it builds "
          "its cache config ('Input should be {}'); give a fraction such as 0.9",
          text, !(share <= 1) ? "less than or equal to 1" : "greater than 0"));
    }
  }
  // --logits-processors items are read by optional_type(str): "None" is a None item, which
  // ModelConfig's list[str | type] refuses.
  if (o.logits_processors) {
    for (const std::string& item : internal::SplitOnSpaces(*o.logits_processors)) {
      if (item != "None") continue;
      return InvalidArgument(
          "--logits-processors 'None': the engine's parser reads the item as None "
          "(optional_type), which its ModelConfig refuses as it is built ('Input should be a "
          "valid string'); drop the item");
    }
  }
  constexpr int64_t kLoraRanks[] = {1, 8, 16, 32, 64, 128, 256, 320, 512};
  if (o.max_lora_rank && std::find(std::begin(kLoraRanks), std::end(kLoraRanks),
                                   *o.max_lora_rank) == std::end(kLoraRanks)) {
    return InvalidArgument(fmt::format(
        "--max-lora-rank {} is not one of the engine's ranks: {} (its parser refuses it)",
        *o.max_lora_rank, fmt::join(kLoraRanks, ", ")));
  }
  if (c.enable_lora) {
    const int64_t loras = o.max_loras.value_or(1);
    if (loras < 1) {
      return Rejected(
          "--max-loras 0 with --enable-lora: the engine refuses it as it builds its LoRA config "
          "('Input should be greater than or equal to 1'); give 1 or more");
    }
    if (const std::string dtype = o.lora_dtype.value_or("auto");
        dtype != "auto" && dtype != "float16" && dtype != "bfloat16") {
      return Rejected(fmt::format(
          "--lora-dtype '{}' with --enable-lora: the engine refuses it as it builds its LoRA "
          "config (\"Input should be 'auto', 'float16' or 'bfloat16'\"); give one of those",
          dtype));
    }
    if (const int64_t cpu = o.max_cpu_loras.value_or(0); cpu > 0 && cpu < loras) {
      return Rejected(fmt::format(
          "--max-cpu-loras {} below --max-loras {}: the engine refuses it ('max_cpu_loras ({}) "
          "must be >= max_loras ({}).'); raise --max-cpu-loras or drop it",
          cpu, loras, cpu, loras));
    }
  }
  if (o.default_mm_loras) {
    KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json loras,
                            ParseJsonObjectFlag(*o.default_mm_loras, "--default-mm-loras",
                                                /*config_class=*/false));
    c.default_mm_loras = !loras.empty();  // the engine counts a non-empty dict
    for (const auto& [modality, adapter] : loras.items()) {
      if (!adapter.is_string()) {
        return InvalidArgument(fmt::format(
            "--default-mm-loras: {} must name an adapter path, got {} (the engine's parser "
            "takes a dict of strings)",
            modality, internal::JsonText(adapter)));
      }
    }
  }
  const bool auto_tool_choice = o.enable_auto_tool_choice.value_or(false);
  if (auto_tool_choice && o.tool_call_parser.value_or("").empty()) {
    return Rejected(
        "--enable-auto-tool-choice without --tool-call-parser: the engine refuses it before "
        "loading ('Error: --enable-auto-tool-choice requires --tool-call-parser'); name the "
        "model's parser");
  }
  // `vllm serve` (ServeSubcommand.cmd and run_multi_api_server): the API servers are
  // --api-server-count, else none headless, one under external load balancing, the local ranks
  // under hybrid, every data-parallel rank otherwise, and one with elastic EP; adapters loaded
  // at run time need a single server.
  if (o.allow_runtime_lora_updating.value_or(false)) {
    const int64_t dp = o.data_parallel_size.value_or(1);
    int64_t servers = dp;
    std::string why = fmt::format("one per data-parallel rank (--data-parallel-size {})", dp);
    if (o.api_server_count) {
      servers = *o.api_server_count;
      why = fmt::format("--api-server-count {}", servers);
    } else if (o.headless.value_or(false)) {
      servers = 0;
    } else if (o.data_parallel_external_lb.value_or(false) || o.data_parallel_rank) {
      servers = 1;
    } else if (o.data_parallel_hybrid_lb.value_or(false) || o.data_parallel_start_rank) {
      servers = std::max<int64_t>(o.data_parallel_size_local.value_or(0), 1);
      why =
          fmt::format("one per local data-parallel rank (--data-parallel-size-local {})", servers);
    }
    if (o.enable_elastic_ep.value_or(false)) servers = std::min<int64_t>(servers, 1);
    if (servers > 1) {
      return Rejected(fmt::format(
          "VLLM_ALLOW_RUNTIME_LORA_UPDATING with {} API servers, {}: the engine refuses it as "
          "it starts them ('VLLM_ALLOW_RUNTIME_LORA_UPDATING cannot be used with "
          "api_server_count > 1'); give --api-server-count 1 or unset the variable",
          servers, why));
    }
  }
  if (o.worker_multiproc_method && *o.worker_multiproc_method != "fork" &&
      *o.worker_multiproc_method != "spawn") {
    return InvalidArgument(fmt::format(
        "VLLM_WORKER_MULTIPROC_METHOD (--worker-multiproc-method) '{}' is not one of the engine's "
        "choices: spawn, fork (it "
        "refuses it where it reads it: \"Invalid value '{}' for VLLM_WORKER_MULTIPROC_METHOD. "
        "Valid options: ['spawn', 'fork'].\")",
        *o.worker_multiproc_method, *o.worker_multiproc_method));
  }
  if (o.enable_log_outputs.value_or(false) && !o.enable_log_requests.value_or(false)) {
    return Rejected(
        "--enable-log-outputs without --enable-log-requests: the engine refuses it before "
        "loading ('Error: --enable-log-outputs requires --enable-log-requests'); add "
        "--enable-log-requests");
  }
  auto plugin = [](const std::optional<std::string>& file) { return file && file->size() > 3; };
  if (auto_tool_choice && !plugin(o.tool_parser_plugin) &&
      std::find(std::begin(kToolCallParsers), std::end(kToolCallParsers), *o.tool_call_parser) ==
          std::end(kToolCallParsers)) {
    return Rejected(fmt::format(
        "--tool-call-parser '{}' with --enable-auto-tool-choice is not a parser the engine "
        "registers: its API server refuses it before the engine starts ('invalid tool call "
        "parser: {}'); pick one of {}, or add yours with --tool-parser-plugin",
        *o.tool_call_parser, *o.tool_call_parser, fmt::join(kToolCallParsers, ", ")));
  }
  if (o.reasoning_parser && !o.reasoning_parser->empty() && !plugin(o.reasoning_parser_plugin) &&
      std::find(std::begin(kReasoningParsers), std::end(kReasoningParsers), *o.reasoning_parser) ==
          std::end(kReasoningParsers)) {
    return Rejected(fmt::format(
        "--reasoning-parser '{}' is not a parser the engine registers: it raises as it builds "
        "its config (\"Reasoning parser '{}' not found.\"); pick one of {}, or add yours with "
        "--reasoning-parser-plugin",
        *o.reasoning_parser, *o.reasoning_parser, fmt::join(kReasoningParsers, ", ")));
  }
  // The reasoning and structured-outputs configs (flags not planned with, their values already
  // checked): --reasoning-parser, when given, replaces the parser each names. The reasoning
  // config looks its parser up when a start or end string is missing
  // (ReasoningConfig.initialize_token_ids, as the engine builds its config: '' is looked up too),
  // and the API server looks up the structured-outputs config's (validate_api_server_args).
  // A plugin file may register more.
  const auto config_json = [&](std::string_view flag) -> std::optional<nlohmann::json> {
    const std::optional<std::string> text = VllmFlagSetting(o.not_planned_values, flag);
    if (!text) return std::nullopt;
    Result<nlohmann::json> j = ParseConfigClassJson(*text, flag);
    if (!j.ok() || !j->is_object()) return std::nullopt;
    return *std::move(j);
  };
  const auto text_field = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  const bool parser_given = o.reasoning_parser && !o.reasoning_parser->empty();
  const auto registered = [](const std::string& name) {
    return std::find(std::begin(kReasoningParsers), std::end(kReasoningParsers), name) !=
           std::end(kReasoningParsers);
  };
  if (const std::optional<nlohmann::json> rc = config_json("--reasoning-config");
      rc && !parser_given && !plugin(o.reasoning_parser_plugin)) {
    const std::string name = text_field(*rc, "reasoning_parser");
    if ((text_field(*rc, "reasoning_start_str").empty() ||
         text_field(*rc, "reasoning_end_str").empty()) &&
        !registered(name)) {
      return Rejected(fmt::format(
          "--reasoning-config {} without both reasoning_start_str and reasoning_end_str looks "
          "up its parser '{}', which the engine does not register: it raises as it builds its "
          "config (\"Reasoning parser '{}' not found.\"); give both strings, or name a parser "
          "(--reasoning-parser, or the config's reasoning_parser): {}",
          internal::JsonText(*rc), name, name, fmt::join(kReasoningParsers, ", ")));
    }
  }
  if (const std::optional<nlohmann::json> so = config_json("--structured-outputs-config");
      so && !parser_given) {
    const std::string name = text_field(*so, "reasoning_parser");
    if (!name.empty() && !registered(name) && !plugin(o.reasoning_parser_plugin) &&
        text_field(*so, "reasoning_parser_plugin").size() <= 3) {
      return Rejected(fmt::format(
          "--structured-outputs-config's reasoning_parser '{}' is not a parser the engine "
          "registers: its API server refuses it before the engine starts ('invalid reasoning "
          "parser: {}'); pick one of {}, or add yours with --reasoning-parser-plugin",
          name, name, fmt::join(kReasoningParsers, ", ")));
    }
  }
  return Status::Ok();
}

// A removed flag's form in the fork, as given; empty where the fork has none, or for a switch
// given in its --no- form (the fork's default).
std::string RemovedFlagReplacement(const VllmFlag& flag, const VllmFlagValue* given) {
  if (flag.instead.empty()) return "";
  if (!flag.takes_value && given != nullptr && given->on == false) return "";
  return FormInstead(flag.instead, given != nullptr ? given->values : std::vector<std::string>{});
}

}  // namespace

int64_t EngineInterleave(const LaunchOptions& o, int64_t dcp_size) {
  const int64_t dcp = o.dcp_kv_cache_interleave_size.value_or(1);
  const int64_t cp = o.cp_kv_cache_interleave_size.value_or(1);
  return dcp_size > 1 && dcp > 1 && cp != dcp ? dcp : cp;
}

Status RefuseRemovedFlags(const LaunchOptions& o) {
  // Each flag given once, in the order given, with its form ("" for none: drop it).
  std::vector<std::pair<std::string, std::string>> given;
  for (const std::string& name : o.not_planned) {
    const VllmFlag* flag = FindVllmFlagNotPlanned(name);
    if (flag == nullptr || !flag->removed ||
        std::any_of(given.begin(), given.end(),
                    [&](const auto& g) { return g.first == flag->name; })) {
      continue;
    }
    given.emplace_back(flag->name, RemovedFlagReplacement(
                                       *flag, FindVllmFlagValue(o.not_planned_values, flag->name)));
  }
  if (o.rope_scaling || o.rope_theta) {
    KVTOPO_ASSIGN_OR_RETURN(const std::string form, RopeFlagsInstead(o));
    if (o.rope_scaling) given.emplace_back("--rope-scaling", form);
    if (o.rope_theta) given.emplace_back("--rope-theta", form);
  }
  if (given.empty()) return Status::Ok();
  const auto names = [](const std::vector<std::string>& flags) {
    if (flags.size() == 1) return flags[0];
    return fmt::format("{} and {}", fmt::join(flags.begin(), flags.end() - 1, ", "), flags.back());
  };
  if (given.size() == 1) {
    return InvalidArgument(fmt::format(
        "{} is a flag of older releases the engine no longer has: its parser refuses it as an "
        "unrecognized argument; {}",
        given[0].first,
        given[0].second.empty() ? std::string("drop it")
                                : fmt::format("give {} instead", given[0].second)));
  }
  // Several: the flags to drop together, then each form with the flags it stands for.
  std::vector<std::string> all, dropped, steps;
  std::vector<std::pair<std::string, std::vector<std::string>>> forms;
  for (const std::pair<std::string, std::string>& g : given) {
    all.push_back(g.first);
    if (g.second.empty()) {
      dropped.push_back(g.first);
      continue;
    }
    auto it = std::find_if(forms.begin(), forms.end(),
                           [&](const auto& f) { return f.first == g.second; });
    if (it == forms.end()) it = forms.insert(forms.end(), {g.second, {}});
    it->second.push_back(g.first);
  }
  if (!dropped.empty()) steps.push_back("drop " + names(dropped));
  for (const auto& [form, flags] : forms) {
    steps.push_back(fmt::format("give {} for {}", form, names(flags)));
  }
  return InvalidArgument(fmt::format(
      "{} are flags of older releases the engine no longer has: its parser refuses them as "
      "unrecognized arguments; {}",
      names(all), fmt::join(steps, "; ")));
}

namespace {

// The executor the engine runs its workers with (ParallelConfig.__post_init__):
// --distributed-executor-backend; else, for more than one rank across the data-parallel
// replicas, mp on several nodes, ray under --data-parallel-backend ray, else mp; uni for one rank.
// (A Ray placement group the engine starts in also picks ray, which kvtopo cannot see.)
std::string EngineExecutor(const LaunchOptions& o, const LaunchConfig& c) {
  if (o.distributed_executor_backend) return *o.distributed_executor_backend;
  // Each factor is at most 4,096 (the launch options' bounds): no overflow.
  const int64_t world = c.parallel.tensor_parallel_size * c.pipeline_parallel_size *
                        c.parallel.prefill_context_parallel_size * o.data_parallel_size.value_or(1);
  if (world <= 1) return "uni";
  if (o.nnodes.value_or(1) > 1) return "mp";
  return o.data_parallel_backend.value_or("mp") == "ray" ? "ray" : "mp";
}

}  // namespace

Result<LaunchConfig> ToLaunchConfig(const LaunchOptions& o) {
  // The engine's parser refuses these before it reads anything else.
  KVTOPO_RETURN_IF_ERROR(RefuseRemovedFlags(o));
  LaunchConfig c = o.model.empty() ? DefaultLaunchConfig() : LaunchConfig{};
  if (!o.model.empty()) c.model = o.model;
  // A choice among named values: checked, then kept.
  const auto choice = [](const std::optional<std::string>& given,
                         Status (*check)(const std::string&), std::string& out) -> Status {
    if (!given) return Status::Ok();
    KVTOPO_RETURN_IF_ERROR(check(*given));
    out = *given;
    return Status::Ok();
  };
  KVTOPO_RETURN_IF_ERROR(choice(o.config_format, internal::CheckConfigFormat, c.config_format));
  KVTOPO_RETURN_IF_ERROR(choice(o.model_impl, internal::CheckModelImpl, c.model_impl));
  if (o.trust_remote_code) c.trust_remote_code = *o.trust_remote_code;
  KVTOPO_RETURN_IF_ERROR(choice(o.runner, internal::CheckRunner, c.runner));
  KVTOPO_RETURN_IF_ERROR(choice(o.convert, internal::CheckConvert, c.convert));
  if (o.revision) c.revision = *o.revision;
  if (o.hf_config_path) c.hf_config_path = *o.hf_config_path;
  if (o.hf_overrides) {
    KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json overrides,
                            internal::ParseHfOverrides(*o.hf_overrides));
    c.hf_overrides = internal::JsonText(overrides);
  }
  auto set = [](const std::optional<int64_t>& value, int64_t& field) {
    if (value) field = *value;
  };
  set(o.tensor_parallel_size, c.parallel.tensor_parallel_size);
  set(o.pipeline_parallel_size, c.pipeline_parallel_size);
  set(o.decode_context_parallel_size, c.parallel.decode_context_parallel_size);
  set(o.prefill_context_parallel_size, c.parallel.prefill_context_parallel_size);
  if (o.dcp_kv_cache_interleave_size || o.cp_kv_cache_interleave_size) {
    c.parallel.dcp_kv_cache_interleave_size =
        EngineInterleave(o, c.parallel.decode_context_parallel_size);
    c.dcp_interleave_as_given = o.dcp_kv_cache_interleave_size.value_or(1);
  }
  set(o.block_size, c.cache.block_size);
  set(o.max_model_len, c.cache.max_model_len);
  set(o.max_num_seqs, c.cache.max_num_seqs);
  set(o.long_prefill_token_threshold, c.cache.long_prefill_token_threshold);
  if (o.disable_chunked_mm_input) c.cache.disable_chunked_mm_input = *o.disable_chunked_mm_input;
  if (o.enforce_eager) c.cache.enforce_eager = *o.enforce_eager;
  KVTOPO_RETURN_IF_ERROR(ReadCompilationConfig(o, c));
  KVTOPO_RETURN_IF_ERROR(ReadKernelConfig(o, c));
  KVTOPO_RETURN_IF_ERROR(ReadEplbConfig(o, c));
  set(o.max_num_batched_tokens, c.cache.max_num_batched_tokens);
  set(o.mamba_block_size, c.cache.mamba_block_size);
  set(o.prefix_match_unit, c.cache.prefix_match_unit);
  set(o.num_gpu_blocks_override, c.cache.num_gpu_blocks_override);
  set(o.kv_group_size, c.cache.kv_group_size);
  set(o.dspark_draft_kv_window, c.dspark_draft_kv_window);
  c.ssm_conv_state_layout = o.ssm_conv_state_layout;
  if (o.allow_chunked_local_attn_with_hybrid_kv_cache) {
    c.allow_chunked_local_hybrid = *o.allow_chunked_local_attn_with_hybrid_kv_cache;
  }
  if (o.allow_long_max_model_len) c.allow_long_max_model_len = *o.allow_long_max_model_len;
  c.batch_invariant = o.batch_invariant.value_or(false);
  c.quantization = o.quantization;
  c.allow_deprecated_quantization = o.allow_deprecated_quantization.value_or(false);
  c.disable_hybrid_kv_cache_manager = o.disable_hybrid_kv_cache_manager;
  KVTOPO_RETURN_IF_ERROR(ResolveKvConnector(o, c));
  KVTOPO_RETURN_IF_ERROR(CheckEcTransfer(o));
  if (o.enable_sleep_mode) c.enable_sleep_mode = *o.enable_sleep_mode;
  if (o.enable_lora) c.enable_lora = *o.enable_lora;
  if (o.max_lora_rank) c.max_lora_rank = *o.max_lora_rank;
  if (o.device_capability) {
    Result<DeviceCapability> capability = ParseDeviceCapability(*o.device_capability);
    if (!capability.ok()) {
      return InvalidArgument(fmt::format("--device-capability: {}", capability.status().message()));
    }
    c.cache.device_capability = *capability;
  }
  c.enable_expert_parallel = o.enable_expert_parallel.value_or(false);
  c.data_parallel_size = o.data_parallel_size.value_or(1);
  c.enable_eplb = o.enable_eplb.value_or(false);
  c.use_v2_model_runner = o.use_v2_model_runner;
  c.environment = o.vllm_environment;
  c.enable_return_routed_experts = o.enable_return_routed_experts.value_or(false);
  c.external_data_parallel_lb =
      o.data_parallel_size.value_or(1) > 1 &&
      (o.data_parallel_external_lb.value_or(false) || o.data_parallel_rank.has_value());
  const std::string executor = EngineExecutor(o, c);
  if (executor == "mp" || executor == "ray") c.workers_in_own_processes = true;
  if (executor == "uni" || executor == "external_launcher") c.workers_in_own_processes = false;
  if (o.pytorch_cuda_alloc_conf) c.pytorch_cuda_alloc_conf = *o.pytorch_cuda_alloc_conf;
  c.pp_layer_partition = o.pp_layer_partition;
  if (o.disable_sliding_window) c.disable_sliding_window = *o.disable_sliding_window;
  if (o.language_model_only) c.language_model_only = *o.language_model_only;
  if (o.enable_chunked_prefill) c.enable_chunked_prefill = *o.enable_chunked_prefill;
  c.max_num_batched_tokens_given =
      c.max_num_batched_tokens_given || o.max_num_batched_tokens.has_value();
  // --performance-mode throughput doubles the defaulted step limits, and a defaulted
  // --max-num-seqs is at most the tokens per step (vLLM's
  // _set_default_max_num_seqs_and_batched_tokens_args).
  if (o.performance_mode && *o.performance_mode != "balanced" &&
      *o.performance_mode != "interactivity" && *o.performance_mode != "throughput") {
    return InvalidArgument(fmt::format(
        "--performance-mode '{}' is not a performance mode; accepted: balanced, interactivity, "
        "throughput",
        *o.performance_mode));
  }
  std::vector<Diagnostic> diagnostics = o.diagnostics;
  // A --cp-kv-cache-interleave-size given and replaced (VllmConfig.__post_init__ warns too).
  if (o.cp_kv_cache_interleave_size &&
      c.parallel.dcp_kv_cache_interleave_size != *o.cp_kv_cache_interleave_size) {
    diagnostics.push_back(
        {Severity::kWarning, "cp-interleave-replaced",
         fmt::format("--cp-kv-cache-interleave-size {} is replaced by "
                     "--dcp-kv-cache-interleave-size {} under --decode-context-parallel-size {}: "
                     "the engine stores with the latter and warns ('cp_kv_cache_interleave_size is "
                     "overridden by dcp_kv_cache_interleave_size'); give one interleave",
                     *o.cp_kv_cache_interleave_size, c.parallel.dcp_kv_cache_interleave_size,
                     c.parallel.decode_context_parallel_size)});
  }
  KVTOPO_ASSIGN_OR_RETURN(const std::string all2all_backend, ResolveAll2AllBackend(o, diagnostics));
  c.all2all_backend = all2all_backend;
  KVTOPO_RETURN_IF_ERROR(ApplyStepDefaults(o, all2all_backend, c, diagnostics));
  ApplyDeviceNameCapability(o, c, diagnostics);
  if (o.performance_mode == "throughput") {
    if (!c.max_num_batched_tokens_given) c.cache.max_num_batched_tokens *= 2;
    if (!o.max_num_seqs) c.cache.max_num_seqs *= 2;
  }
  if (!o.max_num_seqs) {
    c.cache.max_num_seqs = std::min(c.cache.max_num_seqs, c.cache.max_num_batched_tokens);
  }
  if (o.dtype && *o.dtype != "auto") {
    // ModelDType's names exactly, as the engine's parser takes them (its choices).
    constexpr std::pair<std::string_view, ElementType> kDtypes[] = {
        {"bfloat16", ElementType::kBfloat16},
        {"float", ElementType::kFloat32},
        {"float16", ElementType::kFloat16},
        {"float32", ElementType::kFloat32},
        {"half", ElementType::kFloat16}};
    const auto* dtype = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                                     [&](const auto& d) { return d.first == *o.dtype; });
    if (dtype == std::end(kDtypes)) {
      return InvalidArgument(fmt::format(
          "--dtype '{}' is not a model dtype; accepted: auto, bfloat16, float, float16, float32, "
          "half (the engine's parser refuses any other spelling)",
          *o.dtype));
    }
    c.model_dtype = dtype->second;
  }
  if (o.kv_cache_dtype) {
    KVTOPO_ASSIGN_OR_RETURN(c.cache.kv_cache_dtype,
                            ParseEngineKvCacheDtype(*o.kv_cache_dtype, "--kv-cache-dtype"));
  }
  if (o.kv_cache_dtype_skip_layers) {
    c.cache.kv_cache_dtype_skip_layers = internal::SplitOnSpaces(*o.kv_cache_dtype_skip_layers);
  }
  // EngineArgs.create_engine_config sorts a TurboQuant cache's skipped layers with int() as the
  // key, and raises for an entry it cannot read (sliding_window, "0,1").
  if (TurboQuantOf(c.cache.kv_cache_dtype)) {
    for (const std::string& entry : c.cache.kv_cache_dtype_skip_layers) {
      if (!ParsePlainInt(entry, "--kv-cache-dtype-skip-layers").ok()) {
        return Rejected(fmt::format(
            "--kv-cache-dtype-skip-layers entry '{}' with a TurboQuant --kv-cache-dtype: the "
            "engine sorts the skipped layers by their index and raises as it builds its cache "
            "config (\"invalid literal for int() with base 10: '{}'\"); give layer indices "
            "only",
            entry, entry));
      }
    }
  }
  auto state_dtype = [](const std::optional<std::string>& text, std::string_view flag,
                        KvCacheDtype& field) -> Status {
    if (!text) return Status::Ok();
    // The engine's MambaDType, taken exactly as written.
    if (*text != "auto" && *text != "bfloat16" && *text != "float16" && *text != "float32") {
      return InvalidArgument(fmt::format(
          "{} '{}' is not a state dtype; accepted: auto, bfloat16, float16, float32", flag, *text));
    }
    KVTOPO_ASSIGN_OR_RETURN(field, ParseKvCacheDtype(*text));
    return Status::Ok();
  };
  KVTOPO_RETURN_IF_ERROR(
      state_dtype(o.mamba_cache_dtype, "--mamba-cache-dtype", c.cache.mamba_cache_dtype));
  KVTOPO_RETURN_IF_ERROR(state_dtype(o.mamba_ssm_cache_dtype, "--mamba-ssm-cache-dtype",
                                     c.cache.mamba_ssm_cache_dtype));
  if (o.enable_prefix_caching) c.cache.enable_prefix_caching = *o.enable_prefix_caching;
  if (o.mamba_cache_mode) {
    KVTOPO_ASSIGN_OR_RETURN(RecurrentMode mode, ParseRecurrentMode(*o.mamba_cache_mode));
    c.cache.mamba_cache_mode = mode;
  }
  if (o.attention_backend) c.cache.attention_backend = *o.attention_backend;
  KVTOPO_RETURN_IF_ERROR(ReadAttentionConfig(o, c));
  if (o.dcp_comm_backend) {
    if (*o.dcp_comm_backend != "ag_rs" && *o.dcp_comm_backend != "a2a") {
      return InvalidArgument(fmt::format(
          "--dcp-comm-backend '{}' is not a DCP communication backend; accepted: ag_rs, a2a",
          *o.dcp_comm_backend));
    }
    if (*o.dcp_comm_backend == "a2a" && c.parallel.decode_context_parallel_size <= 1) {
      return Rejected(fmt::format(
          "--dcp-comm-backend a2a needs --decode-context-parallel-size > 1, got {}; the engine "
          "refuses it at startup (ParallelConfig); drop the flag or use DCP",
          c.parallel.decode_context_parallel_size));
    }
  }
  KVTOPO_RETURN_IF_ERROR(CheckRefusedFeatures(o, c));
  // vLLM's VllmConfig check compares the flag's text: an auto dtype that resolves to float16
  // does not count.
  if (o.enable_mamba_cache_stochastic_rounding.value_or(false) &&
      o.mamba_ssm_cache_dtype.value_or("auto") != "float16") {
    return Rejected(fmt::format(
        "--enable-mamba-cache-stochastic-rounding needs --mamba-ssm-cache-dtype float16, got {}; "
        "the engine refuses the launch at startup",
        o.mamba_ssm_cache_dtype.value_or("auto")));
  }
  // MambaConfig (vllm/config/mamba.py at 28be48fa9): the backend is a MambaBackendEnum member
  // named in any case, and stochastic rounding with the triton kernels needs the cvt.rs
  // instruction of compute capability 10.x.
  const std::string mamba_backend = internal::AsciiLower(o.mamba_backend.value_or("triton"));
  if (mamba_backend != "triton" && mamba_backend != "flashinfer") {
    return InvalidArgument(fmt::format(
        "--mamba-backend '{}' is not a Mamba backend: the engine takes triton or flashinfer",
        *o.mamba_backend));
  }
  if (const std::optional<DeviceCapability>& gpu = c.cache.device_capability;
      o.enable_mamba_cache_stochastic_rounding.value_or(false) && mamba_backend == "triton" &&
      gpu && gpu->major != 10) {
    return Rejected(fmt::format(
        "--enable-mamba-cache-stochastic-rounding with the triton Mamba backend needs compute "
        "capability 10.x (the cvt.rs instruction), not {} ({}); the engine refuses the launch "
        "at startup; pass --mamba-backend flashinfer or drop stochastic rounding",
        DeviceCapabilityName(*gpu), c.cache.device_capability_from));
  }
  KVTOPO_ASSIGN_OR_RETURN(std::optional<std::string> spec_text, SpeculativeConfigText(o));
  // The engine's maybe_override_with_speculators, before it reads the model's config: a
  // speculators-format model is served as the draft of its verifier, whose speculative config
  // replaces the one given.
  std::optional<internal::SpeculatorsOverride> speculators;
  if (!o.model.empty()) {
    KVTOPO_ASSIGN_OR_RETURN(
        speculators, internal::SpeculatorsModelOverride(c.model, c.config_format, c.revision));
  }
  if (speculators) {
    Result<internal::LoadedConfig> verifier =
        internal::LoadModelConfig(speculators->verifier, c.config_format, c.revision);
    if (!verifier.ok()) {
      return Status(verifier.status().code(),
                    fmt::format("model '{}' is a speculators-format draft whose verifier is '{}' "
                                "(speculators_config.verifier.name_or_path), which the engine "
                                "serves: {}",
                                c.model, speculators->verifier, verifier.status().message()));
    }
    diagnostics.push_back(
        {Severity::kInfo, "speculators-model",
         fmt::format(
             "'{}' is a speculators-format draft: the engine serves its verifier '{}' "
             "with it as the draft, speculative config {} (maybe_override_with_speculators)",
             c.model, speculators->verifier, speculators->speculative_json)});
    if (spec_text) {
      diagnostics.push_back(
          {Severity::kWarning, "speculators-config-replaced",
           fmt::format("--speculative-config {} is dropped: the engine replaces it with the one "
                       "speculators draft '{}' states",
                       *spec_text, c.model)});
    }
    spec_text = speculators->speculative_json;
    c.model = speculators->verifier;
  }
  if (spec_text) {
    Result<SpeculativeConfig> spec = ParseSpeculativeConfig(*spec_text);
    if (!spec.ok()) {
      // A config the front end rebuilt says so: the user's JSON is not what failed.
      std::string message = spec.status().message();
      for (const Diagnostic& d : o.diagnostics) {
        if (d.code == "speculative-config-replaced") message += "; " + d.message;
      }
      if (speculators) {
        message += fmt::format("; the engine built it from speculators draft '{}' ({})",
                               speculators->speculative_json, speculators->source);
      }
      return Status(spec.status().code(), message);
    }
    c.speculative = std::move(*spec);
    // The engine's method detection runs before its async-scheduling default is set.
    KVTOPO_ASSIGN_OR_RETURN(
        const std::string detected,
        internal::DetectDraftMethod(*c.speculative,
                                    c.hf_config_path.empty() ? c.model : c.hf_config_path,
                                    c.config_format, nullptr, c.revision));
    if (!detected.empty()) {
      diagnostics.push_back({Severity::kInfo, "speculative-method-detected", detected});
    }
  }
  // Async scheduling (vLLM check_and_set_default_async_scheduling): on by default unless the
  // speculative method runs without it; asking for it with such a method is an error.
  bool async_by_default = !c.speculative || c.speculative->AllowsAsyncScheduling();
  const internal::SpeculativeMethod* method =
      c.speculative ? internal::FindSpeculativeMethod(c.speculative->method) : nullptr;
  if (o.async_scheduling && *o.async_scheduling && method &&
      method->async == internal::AsyncScheduling::kNever) {
    return Rejected(fmt::format(
        "--async-scheduling does not run with speculative method '{}'; the engine supports it "
        "with EAGLE/MTP/draft-model/GPU n-gram/DSpark/DFlash speculation; drop the flag or pass "
        "--no-async-scheduling",
        c.speculative->method));
  }
  if (o.async_scheduling && *o.async_scheduling && c.speculative &&
      c.speculative->disable_padded_drafter_batch) {
    return Rejected(
        "--async-scheduling with --speculative-config 'disable_padded_drafter_batch' true: the "
        "engine refuses the pair at startup ('Async scheduling is not compatible with "
        "disable_padded_drafter_batch=True'); drop one of them");
  }
  // Unasked, the engine turns async scheduling off for such a method, or else for a drafter
  // batch left unpadded, and warns.
  if (!o.async_scheduling && !o.model.empty() && c.speculative && !async_by_default) {
    const std::string& name = c.speculative->method;
    diagnostics.push_back(
        {Severity::kWarning, "async-scheduling-speculative",
         method == nullptr || method->async != internal::AsyncScheduling::kDefault
             ? fmt::format("--speculative-config method '{}' runs without async scheduling: the "
                           "engine turns it off ('Async scheduling not supported with {}-based "
                           "speculative decoding and will be disabled.'), as this plan does: one "
                           "batch in flight per pipeline stage",
                           name, name)
             : std::string("--speculative-config 'disable_padded_drafter_batch' true runs "
                           "without async scheduling: the engine turns it off ('Async "
                           "scheduling is not compatible with disable_padded_drafter_batch=True "
                           "and will be disabled.'), as this plan does: one batch in flight per "
                           "pipeline stage")});
  }
  // Executor.supports_async_scheduling: Ray's first executor (RayDistributedExecutor, which
  // VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0 picks; the variable defaults to 1) does not schedule
  // asynchronously; mp, uni, external_launcher and RayExecutorV2 do. An executor class named by
  // its path is not known.
  if (executor == "ray" &&
      EnvironmentBool(o.vllm_environment, "VLLM_USE_RAY_V2_EXECUTOR_BACKEND") == false) {
    const std::string ray =
        o.distributed_executor_backend
            ? "--distributed-executor-backend ray"
            : "--data-parallel-backend ray (which makes the engine's executor ray)";
    if (o.async_scheduling == true) {
      return Rejected(fmt::format(
          "--async-scheduling with {} and VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0: the engine runs "
          "Ray's first executor (RayDistributedExecutor), which does not schedule "
          "asynchronously, and refuses the launch as it builds its config ('`ray` does not "
          "support async scheduling yet.'); drop --async-scheduling, or unset "
          "VLLM_USE_RAY_V2_EXECUTOR_BACKEND",
          ray));
    }
    if (!o.async_scheduling && !o.model.empty() && async_by_default) {
      diagnostics.push_back(
          {Severity::kWarning, "async-scheduling-executor",
           fmt::format("{} with VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0: the engine runs Ray's first "
                       "executor (RayDistributedExecutor), which does not schedule "
                       "asynchronously, and turns async scheduling off ('Async scheduling will "
                       "be disabled because it is not supported with the `ray` distributed "
                       "executor backend.'), as this plan does: fewer batches in flight; unset "
                       "VLLM_USE_RAY_V2_EXECUTOR_BACKEND to keep it",
                       ray)});
      async_by_default = false;
    }
  }
  c.cache.async_scheduling =
      o.async_scheduling.value_or(o.model.empty() ? c.cache.async_scheduling : async_by_default);
  KVTOPO_RETURN_IF_ERROR(ReadRunnerFeatures(o, all2all_backend, c));
  KVTOPO_RETURN_IF_ERROR(CheckServingFlags(o, c));
  if (o.dcp_shard_draft) {
    c.shard_draft = ParseShardDraftRequest(*o.dcp_shard_draft);
    c.shard_draft_value = *o.dcp_shard_draft;
  }
  if (o.shard_draft.value_or(false)) c.shard_draft = ShardDraftRequest::kOne;
  if (o.kv_cache_memory) {
    KVTOPO_ASSIGN_OR_RETURN(c.kv_cache_memory_bytes, KvCacheMemoryBytes(o));
  }
  KVTOPO_RETURN_IF_ERROR(CheckVllmFlagValues(o));
  if (o.worker_multiproc_method) c.worker_multiproc_method = *o.worker_multiproc_method;
  c.not_planned_flags = o.not_planned;
  c.not_planned_values = o.not_planned_values;
  // A name the engine looks up in a registry a plugin may extend is a warning when the fork's
  // registry lacks it: `text` names the failure, with {} for the name.
  const auto unregistered = [&](std::string_view flag, std::span<const std::string_view> names,
                                std::string_view code, std::string_view what,
                                std::string_view failure) {
    const std::optional<std::string> given = VllmFlagText(o.not_planned_values, flag);
    if (!given || std::find(names.begin(), names.end(), *given) != names.end()) return;
    diagnostics.push_back(
        {Severity::kWarning, std::string(code),
         fmt::format("{} '{}' is not {} the engine registers ({}): {}", flag, *given, what,
                     fmt::join(names, ", "), fmt::format(fmt::runtime(failure), *given))});
  };
  // The tokenizer modes the engine registers (TokenizerMode and _VLLM_TOKENIZERS at 28be48fa9;
  // auto and slow resolve to hf), unless the tokenizer is not loaded.
  static constexpr std::string_view kTokenizerModes[] = {
      "auto",        "slow",      "hf",    "mistral",    "deepseek_v32",
      "deepseek_v4", "fastokens", "grok2", "kimi_audio", "qwen_vl"};
  if (const VllmFlagValue* skip = FindVllmFlagValue(o.not_planned_values, "--skip-tokenizer-init");
      !(skip != nullptr && skip->on.value_or(false))) {
    unregistered("--tokenizer-mode", kTokenizerModes, "tokenizer-mode-unregistered",
                 "a tokenizer mode",
                 "it fails as it loads the tokenizer (\"No tokenizer registered for "
                 "tokenizer_mode='{}'.\") unless a plugin registers it");
  }
  // The load formats the engine registers (_LOAD_FORMAT_TO_MODEL_LOADER at 28be48fa9;
  // register_model_loader adds more).
  static constexpr std::string_view kLoadFormats[] = {"auto",
                                                      "hf",
                                                      "bitsandbytes",
                                                      "dummy",
                                                      "fastsafetensors",
                                                      "gguf",
                                                      "instanttensor",
                                                      "mistral",
                                                      "npcache",
                                                      "pt",
                                                      "runai_streamer",
                                                      "runai_streamer_sharded",
                                                      "safetensors",
                                                      "sharded_state",
                                                      "tensorizer"};
  unregistered("--load-format", kLoadFormats, "load-format-unregistered", "a load format",
               "its workers refuse it as they start ('Load format `{}` is not supported') unless "
               "a plugin registers it (register_model_loader)");
  // `vllm serve` (ServeSubcommand.cmd) runs headless for an --api-server-count below 1: no API
  // server starts.
  if (o.api_server_count && *o.api_server_count < 1 && !o.headless.value_or(false)) {
    diagnostics.push_back(
        {Severity::kWarning, "api-server-count-headless",
         fmt::format("--api-server-count {} without --headless: `vllm serve` starts no API "
                     "server for a count below 1 and runs headless, its engines only; give 1 or "
                     "more to serve requests, or --headless to say so",
                     *o.api_server_count)});
  }
  // --api-key: the API server keeps the keys that are not empty, None included (optional_type
  // reads "None" and an empty item as None), and reads VLLM_API_KEY only when the flag is absent
  // (build_app at 28be48fa9).
  if (const VllmFlagValue* keys = FindVllmFlagValue(o.not_planned_values, "--api-key");
      keys != nullptr && !keys->values.empty() &&
      std::all_of(keys->values.begin(), keys->values.end(),
                  [](const std::string& k) { return k.empty() || k == "None"; })) {
    std::vector<std::string> shown;
    for (const std::string& k : keys->values) shown.push_back(k.empty() ? "''" : k);
    diagnostics.push_back(
        {Severity::kWarning, "api-key-none",
         fmt::format("--api-key {} gives no key: the API server drops the keys the parser reads "
                     "as None (\"None\" and empty ones) and, with --api-key given, does not read "
                     "VLLM_API_KEY, so it serves without authentication; give the key, or drop "
                     "--api-key to use VLLM_API_KEY",
                     fmt::join(shown, " "))});
  }
  // --calculate-kv-scales: deprecated in the fork (CacheConfig's validator of the field warns
  // when it is on); the scales it computes at the first forward pass leave the cache's pages as
  // they are.
  if (const VllmFlagValue* scales =
          FindVllmFlagValue(o.not_planned_values, "--calculate-kv-scales");
      scales != nullptr && scales->on.value_or(false)) {
    diagnostics.push_back(
        {Severity::kWarning, "calculate-kv-scales-deprecated",
         "--calculate-kv-scales is deprecated: the engine warns as it builds its cache config "
         "('The `--calculate-kv-scales` option is deprecated and will be removed in v0.19. The "
         "scales will be loaded from the model checkpoint if available, otherwise they default "
         "to 1.0.'); the cache's pages are the same either way; drop the flag"});
  }
  // Variables of older releases the engine no longer reads: it warns of each as it starts
  // (validate_environ), and runs, as the plan does, without them.
  for (const std::string& entry : o.vllm_environment) {
    const size_t eq = entry.find('=');
    const RemovedVllmVariable* removed = FindRemovedVllmVariable(entry.substr(0, eq));
    if (removed == nullptr) continue;
    std::vector<std::string> value;
    if (eq != std::string::npos) value.push_back(entry.substr(eq + 1));
    diagnostics.push_back(
        {Severity::kWarning, "removed-environment",
         fmt::format("{} is a variable of older releases the engine no longer reads (the fork's "
                     "{} dropped it from vllm/envs.py): it warns as it starts ('Unknown vLLM "
                     "environment variable detected: {}') and runs without it, as this plan "
                     "does; {}",
                     value.empty() ? removed->name
                                   : fmt::format("{}={}", removed->name, ShellWord(value[0])),
                     removed->removed_by, removed->name,
                     removed->instead.empty()
                         ? std::string("unset it")
                         : fmt::format("give {} instead", FormInstead(removed->instead, value)))});
  }
  c.launch_diagnostics = std::move(diagnostics);
  return c;
}

Result<int64_t> KvCacheMemoryBytes(const LaunchOptions& o) {
  if (!o.kv_cache_memory) return int64_t{0};
  return PositiveByteSize(*o.kv_cache_memory, "--kv-cache-memory");
}

}  // namespace kvtopo
