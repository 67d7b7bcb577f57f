// ModelDescription: the cache-relevant shape of one model (target or draft) read from its
// config.json, independent of the launch. One reader per architecture family; the launch
// (TP, dtype, backend, placement) is applied later by BuildModelCacheSpecs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvtopo/dtype.h"
#include "kvtopo/launch.h"
#include "kvtopo/status.h"
#include "spec/state_shapes.h"

namespace kvtopo::internal {

enum class LayerType {
  kMla,              // MLA latent cache (one "head" of kv_lora_rank + qk_rope_head_dim)
  kIndexer,          // sparse-attention indexer K cache next to an MLA layer
  kAttention,        // K/V attention (GQA/MQA/MHA)
  kSlidingWindow,    // K/V attention over a window
  kChunkedLocal,     // K/V attention within chunks of attention_chunk_size tokens
  kKda,              // Kimi Delta Attention recurrent state
  kGdn,              // Gated DeltaNet recurrent state
  kShortConv,        // short-convolution state (LFM2)
  kLinearAttention,  // lightning-attention state (MiniMax-Text-01)
  kMamba1,           // Mamba1 SSM state
  kMamba2,           // Mamba2 SSM state
};

// Whether a layer keeps recurrent state rather than a K/V or MLA cache.
inline bool IsRecurrentLayer(LayerType t) {
  return t == LayerType::kKda || t == LayerType::kGdn || t == LayerType::kShortConv ||
         t == LayerType::kLinearAttention || t == LayerType::kMamba1 || t == LayerType::kMamba2;
}

// Whether a recurrent layer keeps a conv state (all but lightning attention's one state).
inline bool HasConvState(LayerType t) {
  return IsRecurrentLayer(t) && t != LayerType::kLinearAttention;
}

struct RawLayer {
  std::string name;  // e.g. "model.layers.3.self_attn"
  LayerType type = LayerType::kAttention;
  bool mtp = false;  // in-model MTP layer: cached only when the launch speculates with MTP
  int64_t num_kv_heads_total = 1;  // K/V attention; MLA and indexer: 1
  // The layer's own query heads, where the model sets them per layer (Laguna-XS's
  // num_attention_heads_per_layer); 0: the model's num_attention_heads.
  int64_t num_q_heads_total = 0;
  int64_t head_size = 0;
  int64_t head_size_v = 0;
  int64_t sliding_window = 0;
  // The model gives the layer its window itself: --disable-sliding-window leaves it windowed.
  bool keeps_window = false;
  // Decoder cross-attention over an encoder-decoder model's encoder output (kAttention).
  bool cross_attention = false;
  int64_t attention_chunk_size = 0;  // chunked local
  int64_t mla_rope_dim = 0;          // MLA: qk_rope_head_dim, the RoPE part of head_size
  // MLA: a sparse-indexer key kept after the MLA page's rows instead of in a cache of its own
  // (bytes per token, after pooling).
  int64_t page_tail_bytes_per_token = 0;
  // Learned attention sinks (a per-head bias in the softmax): gpt-oss, Laguna's and MiMo-V2's
  // sliding layers when their configs ask for them.
  bool has_sinks = false;
  // Static attention sinks: learned K/V rows the layer keeps in pages of their own
  // (LayerSpec::sink_tokens; openPangu's param_sink_number); 0: none.
  int64_t sink_tokens = 0;
  // The backend the model's code builds the layer on itself (its Attention's attn_backend),
  // without the engine's selection: no --attention-backend reaches the layer. Empty: selected.
  std::string built_backend;
  KdaDims kda;
  GdnDims gdn;
  ShortConvDims short_conv;
  LinearAttentionDims linear_attention;
  Mamba1Dims mamba1;
  Mamba2Dims mamba2;
};

// One MLA dimension of the text config as the engine's hf_text_config holds it; some MLA backends
// take only some values (BackendCaps::config_dims).
struct TextConfigDim {
  std::optional<int64_t> value;  // nullopt: None, or a value no integer equals
  std::string shown;             // as the engine prints it ("256", "None", "'128'")
  std::string source;            // where it came from, for messages
};

struct ModelDescription {
  std::string file;          // where it came from, for messages
  std::string architecture;  // architectures[0]
  std::string model_type;    // the top-level model_type ("" when absent)
  // The config's torch_dtype; BuildModelCacheSpecs resolves the dtype the engine runs (--dtype).
  ElementType dtype = ElementType::kBfloat16;
  // False when the config states no torch_dtype (nor dtype): the engine then takes the dtype of
  // the checkpoint's weights, or float32 without them; `dtype` is float32.
  bool dtype_stated = true;
  int64_t max_position_embeddings = 0;
  // Encoder-decoder models: the encoder's tokens per input (ModelCacheSpecs).
  int64_t encoder_tokens = 0;
  // The length before RoPE scaling: the smallest length field the config states, or its
  // model_max_length (ReadMaxLength).
  int64_t length_base = 0;
  // The engine's maximum length from the config: max_position_embeddings, scaled by a RoPE
  // scaling factor (docs/profiles.md); the default --max-model-len. `max_len_source` says how.
  int64_t max_model_len = 0;
  std::string max_len_source;
  // The default --max-model-len when it is not max_model_len: a LongRoPE config's
  // original_max_position_embeddings (`default_len_source` says so); 0: max_model_len.
  int64_t default_max_model_len = 0;
  std::string default_len_source;
  // The config states no length field: max_model_len is kMaxModelLen (the engine takes any
  // --max-model-len) and default_max_model_len the engine's 2048.
  bool length_unstated = false;
  // The model's layers split the K/V heads over TP and cannot replicate them (Param2 MoE asserts
  // num_key_value_heads % TP == 0): a TP above the K/V heads is refused.
  bool kv_heads_split_only = false;
  // TP must divide this count (Bailing MoE V2.5's lightning attention normalises groups of
  // group_norm_size heads per rank); 0: no such rule.
  int64_t tp_divides_group_norm = 0;
  // The RoPE scaling ReadMaxLength applied: the factor (1: none) and whether a yarn entry set the
  // base to its original_max_position_embeddings, which the derived length then ignores.
  double rope_factor = 1;
  bool rope_yarn_base = false;
  // The config's sliding_window as the engine reads it (hf_text_config.sliding_window, with the
  // config class's default; none for a Qwen config without use_sliding_window); 0: none.
  // --disable-sliding-window caps the derived maximum length at it.
  int64_t text_sliding_window = 0;
  int64_t num_attention_heads = 0;  // query heads (B12X gathered-head and GQA rules)
  // The heads the engine's TP check reads when they are not num_attention_heads
  // (ModelConfig.verify_with_parallel_config: Whisper's num_attention_heads is its
  // encoder_attention_heads); 0: num_attention_heads.
  int64_t tp_checked_heads = 0;
  int64_t num_kv_heads_total = 0;  // K/V attention models; 0 for MLA-only models
  std::vector<RawLayer> layers;    // trunk layers in order, then MTP layers
  // MLA models: qk_nope_head_dim, qk_rope_head_dim and v_head_dim as the engine's config class
  // holds them (stated, or the class's default); a key absent: the config states none and kvtopo
  // does not know the class's default.
  std::map<std::string, TextConfigDim, std::less<>> mla_config_dims;
  // The config key that counts the MTP layers, for messages.
  std::string mtp_key = "num_nextn_predict_layers";
  // The MTP draft config's n_predict as the engine sets it (SpeculativeConfig.hf_config_override):
  // the MTP key's value when the config states it; unset when it does not (the engine then has
  // no default count and no divisibility rule).
  std::optional<int64_t> mtp_n_predict;
  // DeepSeek-V4 (ReadDeepseekV4): the model's code builds each layer's caches itself, on
  // backends of its own, and the engine groups them in layer tuples (BuildDeepseekV4 in
  // model.cc); `layers` stays empty.
  struct DeepseekV4 {
    std::vector<int64_t> compress_ratios;  // per hidden layer: 1 (sliding window only), 4, 128
    int64_t sliding_window = 0;
    int64_t head_dim = 0;        // the MLA row's width (its compressor state: 2 x it per ratio)
    int64_t index_head_dim = 0;  // the indexer key's fp8 values (ratio-4 layers)
    int64_t mtp_layers = 0;      // num_nextn_predict_layers
    // What DeepseekV4MoE's MegaMoE experts ask of the config: scoring_func and expert_dtype as
    // stated (the JSON text of a value that is not a string; the engine's getattr defaults,
    // sqrtsoftplus and fp4, when absent).
    std::string scoring_func = "sqrtsoftplus";
    std::string expert_dtype = "fp4";
  };
  std::optional<DeepseekV4> deepseek_v4;
  // The model's dtype for the recurrent SSM state (Qwen3.5's mamba_ssm_dtype; NemotronH's
  // mamba_ssm_cache_dtype, float32 when absent), which the engine uses when
  // --mamba-ssm-cache-dtype is auto; auto: the conv state's dtype.
  KvCacheDtype mamba_ssm_dtype = KvCacheDtype::kAuto;
  // Whether a --mamba-ssm-cache-dtype other than mamba_ssm_dtype draws the engine's warning.
  bool mamba_ssm_dtype_warns = false;
  // The engine's SupportsMambaPrefixCaching: with prefix caching, recurrent layers default to
  // --mamba-cache-mode all (else align).
  bool supports_mamba_prefix_caching = false;
  // Warnings the config class logs when it changes what the config states, as (code, message):
  // the engine runs the changed value.
  std::vector<std::pair<std::string, std::string>> config_warnings;
  // Whether the trunk's attention layers are built without the cache config (MiMo-V2-Flash's), so
  // that they cache in the model's dtype whatever --kv-cache-dtype says.
  bool cache_dtype_auto = false;
  // Whether the in-model MTP layers are built without the cache config (EXAONE MoE's), so that
  // they cache in the model's dtype whatever --kv-cache-dtype or draft_kv_cache_dtype says.
  bool mtp_cache_dtype_auto = false;
  // Why the engine cannot build this model's MTP layers, when it cannot (an MTP launch is then
  // refused with it); empty: it can.
  std::string mtp_unavailable;
  // The model type of a separate MTP draft checkpoint whose layers read this model's KV cache
  // and keep none of their own (Gemma 4: gemma4_assistant); empty: none.
  std::string mtp_assistant;
  // The engine's Mamba chunk size (ModelConfig.get_mamba_chunk_size), the base of the hybrid
  // block in --mamba-cache-mode all; 2048 for a config with no chunk notion.
  int64_t mamba_chunk_size = 2048;
  // Speculative decoding and the Mamba2 state (the fork at 28be48fa9): the engine's MambaMixer2
  // widens its conv state by the speculative tokens, PLaMo 2's own mixer does not
  // (mamba2_widens); and the class's get_mamba_state_shape_from_config, from which the engine
  // sizes the hybrid attention block and the Mamba page padding, counts that widening for
  // NemotronH and Mamba2 but leaves num_spec out for Bamba, GraniteMoeHybrid, FalconH1 and
  // Zamba2 (mamba_estimate_widened).
  bool mamba2_widens = true;
  bool mamba_estimate_widened = true;
  // A short-convolution model whose class estimates the conv state from other channels than its
  // layers keep (LFM2-VL's get_mamba_state_shape_from_config reads the text model's hidden_size
  // where LFM2's layers take conv_dim): those channels; 0: the layers' own.
  int64_t short_conv_estimate_channels = 0;
  // A draft's eagle_config.use_aux_hidden_state (true when absent): whether an EAGLE-3 draft
  // reads the target's auxiliary hidden states.
  bool draft_uses_aux_hidden_states = true;
  // The text model's hidden_size and num_hidden_layers as the engine's class reads them (stated,
  // or the class default kvtopo fills); 0: not known. A draft fed the target's auxiliary hidden
  // states is checked against the target's.
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t vocab_size = 0;  // the text model's vocab_size as stated; 0: not known
  // The text model's moe_intermediate_size (an expert's width) as stated; 0: not known.
  int64_t moe_intermediate_size = 0;
  // The text model's expert count as the engine reads it (EngineExpertCount: as the config states
  // it, else as the fork's config class for its model type defines it); 0: none, which the engine
  // takes for a model without experts.
  int64_t num_experts = 0;
  // Where num_experts is 0 though the config states a count under a later name: the key the
  // engine reads first that the fork's config class for the model type sets to None
  // (Kimi-Linear's num_experts), which hides it; else empty.
  std::string experts_hidden_by;
  // The text model builds no expert layers whatever expert count its config states (Gemma 4
  // without its MoE block, NemotronH without an E layer, HunYuan with num_experts 1, a layer
  // rule's gate key null or not above 0): num_experts stays the engine's count
  // (ModelConfig.is_moe and the checks on it), BuiltExperts() is 0, as where expert_layers
  // holds no layer.
  bool builds_no_experts = false;
  // Per hidden layer, whether the text model's class builds experts there, where keys other than
  // the expert count choose per layer (first_k_dense_replace, decoder_sparse_step, ...: the rules
  // of internal::ExpertLayerRule); empty where every layer builds them or the choice is not known.
  std::vector<bool> expert_layers;
  // The expert count the MoE layers of the text model's class compare the tensor-parallel size
  // with as they are built (the key that class reads, as stated: internal::kTpAboveExpertsRaises);
  // 0: its class has no such check, or the config does not state the key.
  int64_t tp_checked_experts = 0;
  std::string tp_checked_experts_printed;  // as the engine's message prints it ("[64, 64]")
  // An activation the text config states for a class whose decoder layers build an MLP that
  // takes silu only (internal::kSiluOnlyMlp): the key ("hidden_act") and the value as
  // Python's str() prints it, and as the config states it (JSON); empty where the config states
  // silu, or nothing.
  std::string unsupported_activation_key;
  std::string unsupported_activation;
  std::string unsupported_activation_json;
  std::string unsupported_activation_where;    // "for silu only in every layer", ...
  std::string unsupported_activation_says;     // "Only silu is supported for now."
  std::string unsupported_activation_asserts;  // the MLP asserts instead: the assertion's text
  // The experts each MoE layer builds (FusedMoE and the checks on its layers: their placement,
  // kernels and LoRA wrappers): num_experts, or 0 where the model builds no expert layers.
  int64_t BuiltExperts() const {
    const bool none = builds_no_experts || (!expert_layers.empty() &&
                                            std::find(expert_layers.begin(), expert_layers.end(),
                                                      true) == expert_layers.end());
    return none ? 0 : num_experts;
  }
  // What the engine's routed-experts capturer reads from the text config (routed_experts_capturer
  // .py at 28be48fa9): num_experts_per_tok or top_k_experts, and num_experts, n_routed_experts or
  // num_local_experts, each stated and not null.
  bool states_experts_per_token = false;
  bool states_capturer_expert_count = false;
  // Drafts whose fc layer combines the target's auxiliary hidden states (the engine's EAGLE-3
  // heads and DFlash): how many states it takes (0: no such layer), the width of each
  // (target_hidden_size, else the draft's hidden_size; 0: not known) and the key it came from.
  int64_t draft_fc_states = 0;
  int64_t draft_fc_state_width = 0;
  std::string draft_fc_width_key;
  // The target layer ids the draft names for those states (eagle_aux_hidden_state_layer_ids,
  // else dflash_config.target_layer_ids; empty: the target's defaults) and the key.
  std::vector<int64_t> draft_aux_layer_ids;
  std::string draft_aux_layer_ids_key;
  // The engine's ModelConfig.uses_mrope: the config's rope_parameters (or rope_scaling, which
  // the engine renames so) holds mrope_section, at the top, in its text_config or in its
  // thinker_config's text_config.
  bool uses_mrope = false;
  // The engine's ModelConfig.is_mm_prefix_lm: the config's is_mm_prefix_lm, else its model type
  // is one of the prefix LMs that attend bidirectionally over their multimodal positions
  // (bagel, gemma3, molmo2, moondream3, paligemma, umm). Its attention layers need a backend
  // that supports it.
  bool mm_prefix_lm = false;
  // compressed-tensors' quantization_config.kv_cache_scheme (llm-compressor's FP8 KV
  // checkpoints), when the config's quant_method is compressed-tensors and states one: the
  // engine's K/V attention layers (Attention, built with the quantization config) cache fp8
  // under --kv-cache-dtype auto, validate the scheme, and with strategy attn_head ask the backend
  // for per-head scales; MLA layers do none of it.
  struct KvCacheScheme {
    std::string field;      // where it is stated, for messages
    bool per_head = false;  // strategy attn_head
    std::string invalid;    // why the engine refuses it; empty: it takes it
  };
  std::optional<KvCacheScheme> kv_cache_scheme;
  // Attention features that some backends' impls refuse as the engine builds a layer
  // (BackendCaps::refuses_*): where the model's attention layers take each from, for messages;
  // empty when they do not. ALiBi position biases (alibi_slopes); a logits soft cap (any value
  // but None); KV sharing (layers that read an earlier layer's cache and keep none).
  std::string alibi_source;
  std::string logits_soft_cap_source;
  std::string kv_sharing_source;
  // Whether the config names the token a parallel-drafting draft fills its masked slots with
  // (SpecDecodeBaseProposer._init_parallel_drafting_params: dflash_config.mask_token_id,
  // pard_token or ptd_token_id).
  bool names_parallel_drafting_token = false;
  // Wrappers that build the registered model their text config names or types (kLanguageModel,
  // kNamedOrTyped readers; LLaVA's, PaliGemma's and Mistral 3's): that model's architecture;
  // empty otherwise.
  std::string language_model_architecture;
  // The only attention backend the model builds on (empty: any), and why, for the message.
  std::string required_backend;
  std::string required_backend_reason;
  // How the engine fails on another backend while building the model, for the message.
  std::string required_backend_failure = "fails an assertion";
  // Which layers the model's code builds on a backend of its own (RawLayer::built_backend), for
  // messages.
  std::string built_backend_reason;
  // The optional "kvtopo" block (docs/profiles.md).
  std::string kind = "target";                                      // "target" or "draft"
  std::string default_backend;                                      // empty: chosen by layer kind
  std::vector<std::pair<std::string, std::string>> default_drafts;  // method -> profile
  // The profile's kvtopo block named default_backend, as the engine's own pick (not a backend the
  // engine's model code forces): a launch that rules it out gets the engine's next pick.
  bool default_backend_from_profile = false;
  // A draft's serving default for its KV cache dtype, used when the speculative config sets no
  // draft_kv_cache_dtype; unset: the target's --kv-cache-dtype.
  std::optional<KvCacheDtype> kv_cache_dtype;
  std::string method;          // drafts: the speculative method it implements
  std::optional<bool> causal;  // drafts: attention causality; unset: by method
  // The engine's Transformers modeling backend class that builds the model
  // (TransformersForCausalLM, TransformersMultiModalForCausalLM, ...), when it does; empty: a
  // vLLM model class.
  std::string transformers_backend;
};

// What picks the engine's model class for a config (ModelRegistry.resolve_model_cls at
// 28be48fa9): --model-impl (auto, vllm, transformers) and --trust-remote-code.
struct ModelClassOptions {
  std::string model_impl = "auto";
  bool trust_remote_code = false;
  // --runner and --convert (ModelConfig._get_runner_type): kvtopo plans generation, so a pooling
  // or draft runner, or a pooling conversion, is refused; generate lets a class the registry
  // also lists as a pooling model (GritLM) generate.
  std::string runner = "auto";
  std::string convert = "auto";
  // False where the engine's class is read only for the shape the Transformers backend is
  // compared with: what that class refuses as it builds its layers, which the backend does not
  // build, is not refused.
  bool builds_engine_class = true;
};
// --model-impl: auto, vllm or transformers; terratorch (a model without a KV cache) and anything
// else are usage errors naming the value.
Status CheckModelImpl(const std::string& model_impl);
// --runner: auto, generate, pooling or draft; --convert: auto, none, embed or classify (the
// engine's RunnerOption and ConvertOption); anything else is a usage error naming the value.
Status CheckRunner(const std::string& runner);
Status CheckConvert(const std::string& convert);

// Reads the cache shape of `config` (file names the source in messages) as the engine builds
// the class `options` pick: the first of its architectures the engine's registry holds (a vLLM
// class), else the Transformers modeling backend (--model-impl transformers, or under auto a
// config whose auto_map names custom code, with --trust-remote-code).
Result<ModelDescription> DescribeModel(const nlohmann::json& config, const std::string& file,
                                       const ModelClassOptions& options = {});

// Architectures DescribeModel accepts, for messages and docs.
const std::vector<std::string>& SupportedArchitectures();

// Whether the engine's class for target architecture `architecture` is one kvtopo plans and
// lacks the EAGLE-3 interface (SupportsEagle3), so it cannot give a draft its auxiliary hidden
// states. False for architectures the engine's registry does not hold.
bool LacksEagle3Interface(std::string_view architecture);
// Whether the engine's FusedMoE experts of `architecture` take --enable-eplb (kExpertsTakeEplb in
// architectures.cc), and whether its experts are FusedMoE layers at all (which --moe-backend
// reaches).
bool ExpertsTakeEplb(std::string_view architecture);
// Whether they get --eplb-config's num_redundant_experts without --enable-eplb
// (kExpertsTakeRedundantOnly), which the engine asserts against under expert parallelism.
bool ExpertsTakeRedundantOnly(std::string_view architecture);
bool ExpertsAreFusedMoe(std::string_view architecture);
// Whether the target's registry class, built with MoE layers, has get_expert_mapping neither
// itself nor on a direct child, which the LoRA manager needs (the fork at 28be48fa9).
bool MoeLacksExpertMapping(std::string_view architecture);
// The same for a wrapper's language model (ModelDescription::language_model_architecture): a
// MoE causal-LM class without get_expert_mapping of its own.
bool LanguageModelLacksExpertMapping(std::string_view architecture);
// Whether the engine builds experts for a model of architecture `architecture` (a target's, or a
// wrapper's language model's) that its model runner does not register for expert-parallel load
// balancing (is_mixture_of_experts fails), so that --enable-eplb asserts at the first forward.
bool EplbFindsNoMoeModel(std::string_view architecture);
// The error the engine's class `engine_class` (a target's, or a wrapper's language model's)
// raises as it builds the model when the layers it builds (a pipeline stage's) hold no experts;
// an empty message where it warns or builds on. per_stage_only: it raises only where another
// stage's layers hold experts (a model without any builds on).
struct NoExpertLayerRaise {
  std::string_view message;
  bool per_stage_only = false;
};
NoExpertLayerRaise NoExpertLayerError(std::string_view engine_class);
// The config keys by which that class chooses its layers with experts ("n_routed_experts,
// first_k_dense_replace and moe_layer_freq"); "num_experts" for a class that chooses for every
// layer at once.
std::string ExpertLayerKeys(std::string_view engine_class);
// Whether the LoRA manager wraps the output head (lm_head) of a model of registry architecture
// `architecture`, the target's or a wrapper's language model's: its class, or the fixed language
// model class of a wrapper, lists lm_head in embedding_modules (the fork at 28be48fa9).
bool LoraWrapsLmHead(std::string_view architecture);
// The engine's class for target architecture `architecture` where it lacks the SupportsLoRA
// interface (kLacksLora), which --enable-lora needs; empty where it has it or is not known.
std::string_view ClassLackingLora(std::string_view architecture);
// Whether the engine's class for `architecture` has the HasInnerState interface
// (ModelConfig.has_inner_state), which the V2 model runner refuses.
bool HasInnerState(std::string_view architecture);
// Whether the engine's class for target architecture `architecture` is a multimodal model
// kvtopo plans (SupportsMultiModal).
bool IsMultimodalTarget(std::string_view architecture);
// Why the engine cannot give a draft target `m`'s auxiliary hidden states (from "the engine's
// ..."), or empty when it can: the class lacks the EAGLE-3 interface, or has it and fails to set
// or collect them (its language model's class, for a wrapper that hands the layers on).
std::string AuxHiddenStatesUnavailable(const ModelDescription& m);
// Whether target `m` collects each auxiliary hidden state before the layer its id names, adding
// the residual (DeepSeek-V2's model, for its family and the wrappers over it): ids 1 to
// num_hidden_layers - 1, and id 0 fails, the residual being null there. Otherwise the target
// collects after each layer through EagleModelMixin: ids 0 (the embeddings) to num_hidden_layers.
bool CollectsAuxStatesBeforeEachLayer(const ModelDescription& m);

struct LoadedConfig {
  nlohmann::json json;
  std::string file;  // "profiles/<stem>.json" for embedded profiles, else the path read
  std::string name;  // the profile name, or the path as given
  // Where a repo id was found when it was read from the Hugging Face cache (a sentence naming the
  // snapshot); empty otherwise.
  std::string origin;
  // The legacy hf_quant_config.json whose contents became `json`'s quantization_config, when one
  // did (ModelOpt 0.29 and before); empty otherwise.
  std::string quantization_file;
  // The modules.json beside the config that names a Sentence Transformers Pooling module (the
  // engine's get_pooling_config, which makes the default runner pooling); empty otherwise. The
  // engine reads it only when --runner and --convert leave the runner to it, so a file it cannot
  // read is kept as `pooling_modules_error` for Build to refuse then.
  std::string pooling_modules_file;
  std::string pooling_modules_error;
};
// The draft's config as the engine builds it for `method`. A speculators-format config (no
// model_type, a speculators_config) becomes its transformer_layer_config with its algorithm's
// fields and architecture (SpeculatorsConfig). Otherwise, for eagle, eagle3 and dflash, the
// architectures are renamed as EAGLEConfig does: eagle3 and dflash prefix Eagle3 / DFlash unless
// a name starts or ends with it, eagle prefixes Eagle unless a name starts with it; other methods
// and EAGLE-format configs keep theirs. An error names the renamed class when it is not a draft
// kvtopo plans.
Status ResolveDraftConfig(std::string_view method, LoadedConfig& draft);

// The method the engine's detection gives a draft by its name (the model string, lowercased):
// eagle when it contains "eagle-", eagle3 for "eagle3", dflash for "dflash", in that order, with
// the word found; nullopt for another name.
struct DraftMethodName {
  std::string_view word, method;
};
std::optional<DraftMethodName> DraftMethodByName(std::string_view model);

// The engine's method detection for a draft model (SpeculativeConfig.__post_init__ at 28be48fa9):
// any method becomes custom_class when the model names a module path (a dot, no slash, no URL
// scheme) that kvtopo cannot read as a config; method draft_model (given, or the default) becomes
// eagle when the draft's name, as given and lowercased, contains "eagle-", eagle3 when it contains
// "eagle3", dflash when it contains "dflash"; else medusa or mlp_speculator when its config has
// that model type; else mtp when its config's model type after SpeculativeConfig.hf_config_override
// is an MTP type (MtpTypeAfterOverride). The engine then builds that checkpoint's MTP layers, which
// kvtopo plans for the target's own checkpoint (`target`, else `target_model` loaded under
// `config_format`) and refuses (Rejected) for another. Method mtp naming a model is taken the same
// way: the name rule applies, and a readable checkpoint other than the target's (a Gemma 4
// assistant aside) is refused (without a model, the model build applies the name rule to the
// target's name). Methods medusa and mlp_speculator go through the same chain, and a config it does
// not take for either or for MTP is refused (the engine raises NotImplementedError). Sets
// spec.method and returns the info to report ("" when the method stays); a config that does not
// load is left to the planner to report.
Result<std::string> DetectDraftMethod(SpeculativeConfig& spec, const std::string& target_model,
                                      const std::string& config_format,
                                      const LoadedConfig* target = nullptr,
                                      const std::string& target_revision = "");
// The engine's maybe_override_with_speculators (transformers_utils/config.py, run by EngineArgs
// before it builds the model config): a model whose config holds a speculators_config is served
// as the draft of the verifier it names, with the speculative config built from it (method
// speculators_model_type, peagle as eagle3 with parallel drafting; num_speculative_tokens the
// first proposal method's speculative_tokens; model the speculators model) replacing any given.
struct SpeculatorsOverride {
  std::string verifier;          // speculators_config.verifier.name_or_path: the new target
  std::string speculative_json;  // the speculative config the engine builds
  std::string source;            // the config file read
};
// nullopt when `model` does not load or holds no speculators_config; an InvalidArgument naming
// the field when its structure is not the one the engine validates.
Result<std::optional<SpeculatorsOverride>> SpeculatorsModelOverride(
    const std::string& model, const std::string& config_format, const std::string& revision);

// The model type `config` has after SpeculativeConfig.hf_config_override (applied to every
// draft config the engine loads) when it is one of the engine's MTP types; empty otherwise.
std::string MtpTypeAfterOverride(const nlohmann::json& config);

// Resolves an embedded profile name, a config.json path or a directory holding one, a GGUF file,
// a Hugging Face repo id an embedded profile serves, or a repo id whose snapshot at `revision`
// (empty: main) the local Hugging Face cache holds (read as its directory; the result keeps the
// repo id as its name and says where it came from in `origin`). `config_format` is
// --config-format: auto, hf or mistral. A Mistral-format checkpoint (a directory whose
// params.json the engine reads: under mistral, or under auto beside consolidated*.safetensors;
// or a file named params.json) is converted as the engine converts it (ConvertMistralParams).
// `revision_knob` names the revision's flag or key in messages.
Result<LoadedConfig> LoadModelConfig(const std::string& model,
                                     const std::string& config_format = "auto",
                                     const std::string& revision = "",
                                     std::string_view revision_knob = "--revision");
// --config-format: auto, hf or mistral; anything else is a usage error naming the value.
Status CheckConfigFormat(const std::string& config_format);
// --hf-overrides as text: a JSON object, else a usage error naming the value.
Result<nlohmann::json> ParseHfOverrides(const std::string& text);
// config.json with --hf-overrides applied as the engine applies them to the config it built
// (ModelConfig: a value that is not an object is set with config.update; an object merges into
// a nested config, else replaces the value). Keys the engine sets after its config class has
// derived other fields from them (sliding_window, use_sliding_window, max_window_layers,
// sliding_window_pattern), null values, and objects aimed at a nested config that config.json
// does not hold are not applied: each adds a (code, message) warning to `warnings`.
Result<nlohmann::json> ApplyHfOverrides(const nlohmann::json& config, const std::string& file,
                                        const std::string& overrides,
                                        std::vector<std::pair<std::string, std::string>>& warnings);
// Whether an embedded file under profiles/ is a model profile (not a registry).
bool IsModelProfileFile(std::string_view stem);

}  // namespace kvtopo::internal
