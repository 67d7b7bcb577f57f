// BuildModelCacheSpecs: config.json + launch options -> per-layer cache specs, placement and
// launch diagnostics (DESIGN.md §3 rules 2, 3 and 5; research notes fork_and_models.md A.1-A.4,
// vllm_kv_cache.md §3.7, §4.6, §5.8).
#include "kvtopo/model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <system_error>
#include <tuple>

#include "internal/ascii_case.h"
#include "internal/checked_math.h"
#include "internal/units.h"
#include "kvtopo/backend.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/limits.h"
#include "model/architectures.h"
#include "model/backend_knob.h"
#include "model/config_reader.h"
#include "model/embedded_profiles.h"
#include "model/gguf.h"
#include "model/kernel_backends.h"
#include "model/moe_experts.h"
#include "model/quant_kv_cache.h"
#include "model/quantization.h"
#include "model/speculative_method.h"

namespace kvtopo {
namespace {

using internal::CeilDiv;
using internal::LayerType;
using internal::ModelDescription;
using internal::RawLayer;
using internal::RoleKnob;

// A sparse MLA model: a top-k indexer, in a cache of its own or kept after the MLA page's rows.
bool HasIndexer(const ModelDescription& m) {
  return std::any_of(m.layers.begin(), m.layers.end(), [](const RawLayer& l) {
    return l.type == LayerType::kIndexer || l.page_tail_bytes_per_token > 0;
  });
}

// A model some of whose attention layers have learned sinks.
bool HasSinks(const ModelDescription& m) {
  return std::any_of(m.layers.begin(), m.layers.end(),
                     [](const RawLayer& l) { return l.has_sinks; });
}

bool HasMla(const ModelDescription& m) {
  return std::any_of(m.layers.begin(), m.layers.end(),
                     [](const RawLayer& l) { return l.type == LayerType::kMla; });
}

// Whether FlashAttention 4 runs on a GPU of compute capability `gpu` (_is_fa4_supported in
// vllm_flash_attn/flash_attn_interface.py at 28be48fa9: 9.x, 10.x or 11.x).
bool Fa4Runs(DeviceCapability gpu) { return gpu.major >= 9 && gpu.major <= 11; }

// The FlashAttention version the engine runs on a GPU of compute capability `gpu`, as its
// backend's class methods ask for it (get_flash_attn_version in fa_utils.py at 28be48fa9, with
// no head size): 3 on 9.x, 4 on 10.x, 2 elsewhere; --attention-config flash_attn_version (or a
// TurboQuant cache, which pins 2) replaces it, 3 on 10.x or later becomes 4 where FlashAttention
// 4 runs (9.x to 11.x, _is_fa4_supported) and 2 elsewhere, and VLLM_BATCH_INVARIANT turns 4
// into 2. A version the GPU does not run (3 off 9.x, 4 off 9.x to 11.x, any below 8.0) is none:
// nullopt, which has no sinks, per-head scales or fp8 cache.
std::optional<int64_t> FlashAttnVersionOn(DeviceCapability gpu, const LaunchConfig& config) {
  const bool fa4_runs = Fa4Runs(gpu);
  int64_t version = gpu.major == 9 ? 3 : gpu.major == 10 ? 4 : 2;
  if (TurboQuantOf(config.cache.kv_cache_dtype)) {
    version = 2;
  } else if (config.cache.flash_attn_version) {
    version = *config.cache.flash_attn_version;
  }
  if (gpu.major >= 10 && version == 3) version = fa4_runs ? 4 : 2;
  if (config.batch_invariant && version == 4) version = 2;
  const bool runs = gpu.major >= 8 && (version == 2 || (version == 3 && gpu.major == 9) ||
                                       (version == 4 && fa4_runs));
  return runs ? std::optional<int64_t>(version) : std::nullopt;
}

// Why FlashAttention lacks a version 3 feature on a stated GPU, for messages.
std::string FlashAttnVersionText(const CacheOptions& cache, std::optional<int64_t> version) {
  return version ? fmt::format("on compute capability {}, where it runs FlashAttention {}",
                               cache.DeviceCapabilityText(), *version)
                 : fmt::format(
                       "on compute capability {}, where the FlashAttention version it would run "
                       "does not run",
                       cache.DeviceCapabilityText());
}

// A backend's GPU-dependent answer (supports_sinks, supports_per_head_quant_scales: nullopt) as
// the launch settles it: FlashAttention pinned to version 2 (--attention-config
// flash_attn_version 2, or a TurboQuant cache, for which EngineArgs.create_engine_config pins it)
// has neither; FlashInfer without TRT-LLM attention (use_trtllm_attention false, or decode
// context parallelism, under which its metadata builder never runs TRT-LLM attention:
// use_trtllm_attention in utils/flashinfer.py and the decode check in flashinfer.py at 28be48fa9)
// no sinks. `why` (when the launch settles it) says how, for messages.
std::optional<bool> Settled(std::optional<bool> answer, const BackendCaps& be,
                            const LaunchConfig& config, std::string* why = nullptr) {
  if (answer.has_value()) return answer;
  const std::optional<DeviceCapability>& gpu = config.cache.device_capability;
  std::string how;
  if (be.gpu_dependence == GpuDependence::kFlashAttention3) {
    if (TurboQuantOf(config.cache.kv_cache_dtype)) {
      how = fmt::format("under FlashAttention 2, which the engine pins for TurboQuant caches ({})",
                        KvCacheDtypeName(config.cache.kv_cache_dtype));
    } else if (config.cache.flash_attn_version == 2) {
      how = "under FlashAttention 2 (--attention-config flash_attn_version 2)";
    } else if (gpu) {
      const std::optional<int64_t> version = FlashAttnVersionOn(*gpu, config);
      if (version && *version >= 3) return true;
      how = FlashAttnVersionText(config.cache, version);
    }
  } else if (be.gpu_dependence == GpuDependence::kTrtllmAttention) {
    switch (TrtllmAttentionOffCause(config.cache.use_trtllm_attention,
                                    config.parallel.decode_context_parallel_size, gpu)) {
      case TrtllmOffCause::kNone:
        if (gpu) return true;  // compute capability 10.x
        break;
      case TrtllmOffCause::kAttentionConfig:
        how = "without TRT-LLM attention (--attention-config use_trtllm_attention false)";
        break;
      case TrtllmOffCause::kDecodeContextParallel:
        how = fmt::format(
            "under decode context parallelism (--decode-context-parallel-size {}), where it runs "
            "no TRT-LLM attention",
            config.parallel.decode_context_parallel_size);
        break;
      case TrtllmOffCause::kGpu:
        how =
            fmt::format("on compute capability {}, where it runs no TRT-LLM attention (10.x only)",
                        config.cache.DeviceCapabilityText());
        break;
    }
  }
  if (how.empty()) return std::nullopt;
  if (why != nullptr) *why = " " + how;
  return false;
}

// Whether `be` takes cache dtype `dtype` on the launch's layers (validate_configuration's
// "kv_cache_dtype not supported"): true, false, or nullopt where it depends on the GPU.
// FlashAttention takes fp8 only as version 3 on a Hopper GPU (supports_kv_cache_dtype at
// 28be48fa9), so a launch that pins version 2 (Settled) or 4 settles it false. `why` (when
// settled) says how, for messages.
std::optional<bool> TakesKvCacheDtype(const BackendCaps& be, KvCacheDtype dtype,
                                      const LaunchConfig& config, std::string* why = nullptr) {
  if (be.AcceptsKvCacheDtype(dtype)) return true;
  const auto& maybe = be.gpu_dependent_kv_cache_dtypes;
  if (std::find(maybe.begin(), maybe.end(), dtype) == maybe.end()) return false;
  if (be.gpu_dependence == GpuDependence::kFlashAttention3 &&
      config.cache.flash_attn_version == 4) {
    if (why != nullptr) *why = " under FlashAttention 4 (--attention-config flash_attn_version 4)";
    return false;
  }
  const std::optional<bool> settled = Settled(std::nullopt, be, config, why);
  const std::optional<DeviceCapability>& gpu = config.cache.device_capability;
  if (settled != true || !gpu || be.gpu_dependence != GpuDependence::kFlashAttention3) {
    return settled;
  }
  // Version 3 or 4 runs; the fp8 cache needs 3 on a Hopper GPU.
  const std::optional<int64_t> version = FlashAttnVersionOn(*gpu, config);
  if (version == 3 && gpu->major == 9) return true;
  if (why != nullptr) *why = " " + FlashAttnVersionText(config.cache, version);
  return false;
}

// Whether `be` takes head size `head` only where FlashAttention 4 is supported (above its
// max_head_size, up to gpu_dependent_max_head_size).
bool HeadSizeNeedsFa4(const BackendCaps& be, int64_t head) {
  if (be.gpu_dependent_max_head_size <= 0 || head <= be.max_head_size) return false;
  BackendCaps wider = be;
  wider.max_head_size = be.gpu_dependent_max_head_size;
  return wider.SupportsHeadSize(head);
}

// Whether `be` takes head size `head` (validate_configuration's "head_size not supported"):
// true, false, or nullopt where it depends on the GPU: FlashAttention takes heads above 256 (to
// 512) where FlashAttention 4 is supported (supports_head_size asks is_fa_version_supported(4)
// at 28be48fa9, whatever --attention-config pins: Fa4Runs).
std::optional<bool> TakesHeadSize(const BackendCaps& be, int64_t head, const LaunchConfig& config) {
  if (be.SupportsHeadSize(head)) return true;
  if (!HeadSizeNeedsFa4(be, head)) return false;
  const std::optional<DeviceCapability>& gpu = config.cache.device_capability;
  if (!gpu) return std::nullopt;
  return Fa4Runs(*gpu);
}

// The cache dtype the engine's backend selection sees for `m`'s attention layers built with
// cache dtype `dtype`: fp8 where a compressed-tensors kv_cache_scheme meets auto
// (SchemeCachesFp8; MLA layers keep auto, and no MLA default moves for a dtype).
KvCacheDtype SelectionDtype(const ModelDescription& m, KvCacheDtype dtype) {
  return m.kv_cache_scheme && dtype == KvCacheDtype::kAuto ? KvCacheDtype::kFp8 : dtype;
}

// Whether `be` surely refuses `m`'s MLA dimensions (its config_dims; supports_combination reads
// the text config, a None or missing value refused): a dimension kvtopo cannot read (a config
// class default it does not know) counts as taken.
bool ConfigDimsRefused(const BackendCaps& be, const ModelDescription& m) {
  return std::any_of(be.config_dims.begin(), be.config_dims.end(), [&](const auto& dim) {
    const auto it = m.mla_config_dims.find(dim.first);
    return it != m.mla_config_dims.end() &&
           (!it->second.value ||
            std::find(dim.second.begin(), dim.second.end(), *it->second.value) == dim.second.end());
  });
}

// The backend a model gets when the launch names none: its profile's, else the registry's
// default for its layer family (profiles/backends.json "default_for"). The engine's selection
// skips a backend that cannot compute the model's dtype (supported_dtypes), take the layers'
// cache dtype `dtype` (TakesKvCacheDtype), serve a multimodal prefix LM (supports_mm_prefix),
// under VLLM_BATCH_INVARIANT run batch-invariant, or, for a model with learned sinks, run them as
// the launch settles it (Settled: FlashAttention pinned to 2, TRT-LLM attention off); a
// K/V-attention model whose default cannot gets the first registered K/V backend that can, in
// the order of the engine's priority lists (FlashAttention, FlashInfer, Triton attention), one
// that surely runs the sinks and takes the cache dtype first. No MLA backend computes float32,
// and none sparse runs batch-invariant: the backend checks then refuse the launch (the dense
// default, TRITON_MLA, runs batch-invariant). A profile's default moves as the engine's pick
// would for sinks or a cache dtype it surely cannot run; a backend the model's code forces is
// kept. A TurboQuant `dtype` asks for the model's dtype: its layers run TurboQuant's own backend
// and the boundary layers keep auto. With --device-capability the pick is the engine's: the first
// backend of its order for that GPU (SelectionPriorities) that takes the layers, a profile's
// default aside; where none does, `none_took` receives the order's backends of the layers'
// family and the default is planned. `cross_attention` selects for decoder cross-attention
// layers (CrossAttention selects with attn_type encoder_decoder, which validate_configuration
// refuses on a backend without it): the pick skips such backends too.
Result<std::string> DefaultBackendName(const ModelDescription& m, const LaunchConfig& config,
                                       KvCacheDtype dtype,
                                       std::vector<std::string>* none_took = nullptr,
                                       bool cross_attention = false) {
  if (TurboQuantOf(dtype)) dtype = KvCacheDtype::kAuto;
  const bool sinks = HasSinks(m);
  const auto sure_under = [&](const BackendCaps& c, const LaunchConfig& launch) {
    const std::optional<bool> runs_sinks =
        sinks ? Settled(c.supports_sinks, c, launch) : std::optional<bool>(true);
    const std::optional<bool> takes_dtype = TakesKvCacheDtype(c, dtype, launch);
    // Every head size of the layers of its family (MLA rows for an MLA backend).
    bool heads_refused = false, heads_by_gpu = false;
    for (const RawLayer& l : m.layers) {
      if (IsRecurrentLayer(l.type) || l.type == LayerType::kIndexer ||
          (l.type == LayerType::kMla) != c.mla) {
        continue;
      }
      const std::optional<bool> takes = TakesHeadSize(c, l.head_size, launch);
      heads_refused = heads_refused || takes == false;
      heads_by_gpu = heads_by_gpu || !takes.has_value();
    }
    if (runs_sinks == false || takes_dtype == false || heads_refused) {
      return std::optional<bool>(false);
    }
    if (!runs_sinks || !takes_dtype || heads_by_gpu) return std::optional<bool>();
    return std::optional<bool>(true);
  };
  const auto sure = [&](const BackendCaps& c) { return sure_under(c, config); };
  const BackendFamily family = HasIndexer(m) ? BackendFamily::kSparseMla
                               : HasMla(m)   ? BackendFamily::kMla
                                             : BackendFamily::kAttention;
  BackendCaps caps;
  if (!m.default_backend.empty()) {
    if (!m.default_backend_from_profile) return m.default_backend;
    KVTOPO_ASSIGN_OR_RETURN(caps, FindBackend(m.default_backend));
  } else {
    KVTOPO_ASSIGN_OR_RETURN(caps, DefaultBackend(family));
  }
  // What the engine's selection checks beside sinks, cache dtype and head sizes.
  const auto computes = [&](const BackendCaps& c) {
    return c.Computes(m.dtype) && (!m.mm_prefix_lm || c.supports_mm_prefix) &&
           (!config.batch_invariant || c.supports_batch_invariance) &&
           (!cross_attention || c.supports_cross_attention);
  };
  const auto serves = [&](const BackendCaps& c) { return computes(c) && sure(c) != false; };
  if (const std::optional<DeviceCapability>& gpu = config.cache.device_capability; gpu) {
    // The GPU settles every answer above, and the engine's pick is the first backend of its
    // order for the GPU that takes the layers (validate_configuration). A profile's default is
    // kvtopo's assumption where the GPU is not known (its runbook's backend, which a launch
    // names); the engine's selection never reads it.
    // FlashInfer's supports_sink asks the GPU alone: under DCP the engine still picks it for a
    // model with sinks on 10.x, and its metadata builder raises (backend-sinks).
    LaunchConfig selection = config;
    selection.parallel.decode_context_parallel_size = 1;
    const bool mla = family != BackendFamily::kAttention;
    const bool per_head_scales = m.kv_cache_scheme && m.kv_cache_scheme->per_head;
    const auto of_family = [&](const BackendCaps& c) {
      return c.mla == mla && c.sparse == (family == BackendFamily::kSparseMla);
    };
    const auto takes = [&](const BackendCaps& c) {
      return of_family(c) && !c.stores_turboquant && c.RunsOn(*gpu) && computes(c) &&
             sure_under(c, selection) == true &&
             (config.cache.block_size <= 0 || c.SupportsBlockSize(config.cache.block_size)) &&
             !ConfigDimsRefused(c, m) &&
             (mla || !per_head_scales ||
              Settled(c.supports_per_head_quant_scales, c, config) == true);
    };
    const bool quantized = dtype != KvCacheDtype::kAuto && dtype != KvCacheDtype::kFloat16 &&
                           dtype != KvCacheDtype::kBfloat16;
    const int64_t tp = config.parallel.tensor_parallel_size;
    const int64_t heads = tp > 0 ? m.num_attention_heads / tp : 0;
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> order,
                            SelectionPriorities(mla, *gpu, quantized, heads));
    std::vector<std::string> family_order;
    for (const std::string& name : order) {
      KVTOPO_ASSIGN_OR_RETURN(const BackendCaps c, FindBackend(name));
      if (takes(c)) return c.name;
      if (of_family(c)) family_order.push_back(c.name);
    }
    // None does: the engine raises ('No valid attention backend found'); kvtopo plans its
    // default, for the rest of the checks.
    if (none_took != nullptr) *none_took = family_order;
    return caps.name;
  }
  if (!m.default_backend.empty() && sure(caps) != false) return caps.name;
  if (!serves(caps) && family == BackendFamily::kAttention && !caps.mla) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<BackendCaps> all, ListBackends());
    for (const bool surely : {true, false}) {
      for (const BackendCaps& c : all) {
        if (!c.mla && !c.stores_turboquant && serves(c) && (!surely || sure(c) == true)) {
          return c.name;
        }
      }
    }
  }
  return caps.name;
}

// The names of the registered backends that `keep`, in registry order, for messages.
std::vector<std::string> BackendNames(const std::function<bool(const BackendCaps&)>& keep) {
  std::vector<std::string> names;
  if (Result<std::vector<BackendCaps>> all = ListBackends(); all.ok()) {
    for (const BackendCaps& c : *all) {
      if (keep(c)) names.push_back(c.name);
    }
  }
  return names;
}

// Whether `c` is of `be`'s family (K/V attention, dense or sparse MLA; TurboQuant's apart, as
// it stores only its own cache dtypes): the backends a message offers in `be`'s place.
bool SameFamily(const BackendCaps& c, const BackendCaps& be) {
  return c.mla == be.mla && c.sparse == be.sparse && c.stores_turboquant == be.stores_turboquant;
}

// The registered backends of `be`'s family whose `flag` is `want`, for messages; "none" when
// there are none.
std::string FamilyBackendsWith(const BackendCaps& be, bool BackendCaps::*flag, bool want = true) {
  const std::vector<std::string> names =
      BackendNames([&](const BackendCaps& c) { return SameFamily(c, be) && c.*flag == want; });
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

// The registered backends that run an external DSpark draft under DCP, for messages.
std::string DsparkUnderDcpBackends() {
  return fmt::format(
      "{}",
      fmt::join(BackendNames([](const BackendCaps& c) { return c.dspark_draft_under_dcp; }), ", "));
}

// Lookahead slots per §5.8: every proposer with a draft cache reserves S; n-gram, suffix and
// hidden-state heads reserve none.
int64_t LookaheadTokens(const SpeculativeConfig& spec) {
  return spec.HasDraftCache() ? spec.num_speculative_tokens : 0;
}

// What the validator needs to know about each spec beyond the LayerSpec itself.
struct LayerContext {
  const BackendCaps* backend = nullptr;  // null for recurrent layers
  // A recurrent layer's CUDA graph support (its metadata builder's at 28be48fa9: linear
  // attention replays single-token decodes only; Mamba, short-conv and GDN, which also serves
  // KDA, uniform batches).
  CudagraphSupport recurrent_cudagraphs = CudagraphSupport::kUniformBatch;
  bool has_sinks = false;  // the layer's attention has learned sinks
  // The model whose config the layer's role builds from (the target's for MTP layers): the
  // engine's backend selection reads that config's hf_text_config.
  const ModelDescription* model = nullptr;
  // The launch named the layer's backend (--attention-backend, --attention-config's backend, the
  // speculative config's draft_attention_backend) rather than leaving the engine to pick it.
  bool backend_named = false;
  // The model's code builds the layer on its backend itself (RawLayer::built_backend): no
  // selection runs for it, and no --attention-backend reaches it.
  bool built_by_model = false;
  // A backend of the model's own that kvtopo's table does not hold (backend null): its metadata
  // builder's CUDA graph support, named by LayerSpec::attention_backend.
  std::optional<CudagraphSupport> own_backend_cudagraphs;
};

struct Builder {
  const LaunchConfig& config;
  ModelCacheSpecs out;
  std::vector<LayerContext> context;
  std::set<std::pair<std::string, std::string>> seen;  // (code, message) dedupe
  // No backend the engine tries takes the decoder cross-attention layers (backend-none-valid
  // said so): their own check does not repeat it.
  bool cross_selection_refused = false;
  // The checkpoint's quantization config the engine reads (null where it states none).
  nlohmann::json quantization_config;

  void Add(Severity severity, std::string code, std::string message) {
    if (!seen.emplace(code, message).second) return;
    out.diagnostics.push_back(Diagnostic{severity, std::move(code), std::move(message)});
  }
  void Error(std::string code, std::string message) {
    Add(Severity::kError, std::move(code), std::move(message));
  }
};

struct AttentionOptions {
  Role role = Role::kTarget;
  int64_t block_size = 0;
  KvCacheDtype dtype = KvCacheDtype::kAuto;  // as requested; the backend may store another
  const BackendCaps* backend = nullptr;
  std::string name_prefix;
  bool causal = true;
  bool volatile_last_block = false;
  bool replicated = false;
};

LayerSpec AttentionSpec(const RawLayer& raw, const ModelDescription& m, int64_t tp,
                        const AttentionOptions& o) {
  LayerSpec s;
  s.name = o.name_prefix + raw.name;
  s.role = o.role;
  s.block_size = o.block_size;
  s.model_dtype = m.dtype;
  s.cache_dtype = o.dtype;
  s.causal = o.causal;
  s.volatile_last_block = o.volatile_last_block;
  s.attention_backend = o.backend->name;
  s.dcp.replicated = o.replicated;
  s.num_q_heads_total = raw.num_q_heads_total > 0 ? raw.num_q_heads_total : m.num_attention_heads;
  s.num_kv_heads_total =
      raw.type == LayerType::kMla || raw.type == LayerType::kIndexer ? 0 : raw.num_kv_heads_total;
  s.sparse_indexer = raw.type == LayerType::kIndexer;
  switch (raw.type) {
    case LayerType::kMla:
      s.kind = CacheKind::kMla;
      s.num_kv_heads = 1;
      s.head_size = raw.head_size;
      s.mla_rope_dim = raw.mla_rope_dim;
      s.page_tail_bytes_per_token = raw.page_tail_bytes_per_token;
      s.cache_dtype = o.backend->StoredKvCacheDtype(o.dtype);
      break;
    case LayerType::kIndexer:
      // index_head_dim fp8 values + one fp32 scale per token, whatever the MLA cache dtype.
      s.kind = CacheKind::kMla;
      s.num_kv_heads = 1;
      s.head_size = raw.head_size;
      s.cache_dtype = KvCacheDtype::kFp8;
      break;
    case LayerType::kAttention:
    case LayerType::kSlidingWindow:
    case LayerType::kChunkedLocal:
      s.kind = raw.type == LayerType::kSlidingWindow  ? CacheKind::kSlidingWindow
               : raw.type == LayerType::kChunkedLocal ? CacheKind::kChunkedLocal
                                                      : CacheKind::kFullAttention;
      s.num_kv_heads = std::max<int64_t>(1, raw.num_kv_heads_total / tp);
      s.head_size = raw.head_size;
      s.head_size_v = raw.head_size_v;
      s.sliding_window = raw.sliding_window;
      s.attention_chunk_size = raw.attention_chunk_size;
      s.cross_attention = raw.cross_attention;
      s.sink_tokens = raw.sink_tokens;
      break;
    case LayerType::kKda:
    case LayerType::kGdn:
    case LayerType::kShortConv:
    case LayerType::kLinearAttention:
    case LayerType::kMamba1:
    case LayerType::kMamba2:
      break;
  }
  return s;
}

CudagraphSupport RecurrentCudagraphs(LayerType type) {
  return type == LayerType::kLinearAttention ? CudagraphSupport::kUniformSingleTokenDecode
                                             : CudagraphSupport::kUniformBatch;
}

struct RecurrentOptions {
  RecurrentMode mode = RecurrentMode::kAlign;
  int64_t block_size = 0;
  int64_t num_speculative_tokens = 0;
  KvCacheDtype conv_dtype = KvCacheDtype::kAuto;                  // --mamba-cache-dtype
  KvCacheDtype ssm_dtype = KvCacheDtype::kAuto;                   // --mamba-ssm-cache-dtype (GDN)
  ConvStateLayout conv_layout = ConvStateLayout::kStateLenFirst;  // VLLM_SSM_CONV_STATE_LAYOUT
};

Result<LayerSpec> RecurrentSpec(const RawLayer& raw, const ModelDescription& m, int64_t tp,
                                const RecurrentOptions& o) {
  LayerSpec s;
  s.name = raw.name;
  s.kind = CacheKind::kRecurrent;
  s.block_size = o.block_size;
  s.model_dtype = m.dtype;
  s.recurrent_mode = o.mode;
  s.num_speculative_blocks = o.num_speculative_tokens;
  s.num_kv_heads = 0;
  if (raw.type == LayerType::kKda) {
    KVTOPO_ASSIGN_OR_RETURN(
        s.state, KdaState(raw.kda, tp, StorageElement(o.conv_dtype, m.dtype), o.conv_layout));
    return s;
  }
  if (raw.type == LayerType::kLinearAttention) {
    KVTOPO_ASSIGN_OR_RETURN(s.state, LinearAttentionState(raw.linear_attention, tp,
                                                          StorageElement(o.conv_dtype, m.dtype)));
    return s;
  }
  if (raw.type == LayerType::kShortConv) {
    const ElementType conv = StorageElement(o.conv_dtype, m.dtype);
    KVTOPO_ASSIGN_OR_RETURN(s.state, ShortConvState(raw.short_conv, tp, conv, o.conv_layout));
    if (m.short_conv_estimate_channels != 0 &&
        m.short_conv_estimate_channels != raw.short_conv.channels) {
      const ShortConvDims estimated{.channels = m.short_conv_estimate_channels,
                                    .conv_kernel = raw.short_conv.conv_kernel};
      KVTOPO_ASSIGN_OR_RETURN(const std::vector<StateTensor> estimate,
                              ShortConvState(estimated, tp, conv));
      KVTOPO_ASSIGN_OR_RETURN(s.alignment_state_bytes, StateBytes(estimate));
      s.alignment_state_note = fmt::format(
          "get_mamba_state_shape_from_config reads text_config's hidden_size {} for the "
          "channels, where the layers keep conv_dim {}",
          m.short_conv_estimate_channels, raw.short_conv.channels);
    }
    return s;
  }
  // GDN and Mamba2 widen their conv state by the speculative tokens (Mamba1 does not); the SSM
  // state follows the conv dtype unless --mamba-ssm-cache-dtype names its own (vLLM
  // _mamba_state_dtype).
  const ElementType conv = StorageElement(o.conv_dtype, m.dtype);
  const ElementType ssm =
      o.ssm_dtype == KvCacheDtype::kAuto ? conv : StorageElement(o.ssm_dtype, m.dtype);
  if (raw.type == LayerType::kGdn) {
    KVTOPO_ASSIGN_OR_RETURN(
        s.state, GdnState(raw.gdn, tp, o.num_speculative_tokens, conv, ssm, o.conv_layout));
  } else if (raw.type == LayerType::kMamba1) {
    KVTOPO_ASSIGN_OR_RETURN(s.state, Mamba1State(raw.mamba1, tp, conv, ssm, o.conv_layout));
  } else {
    const int64_t widened = m.mamba2_widens ? o.num_speculative_tokens : 0;
    KVTOPO_ASSIGN_OR_RETURN(s.state,
                            Mamba2State(raw.mamba2, tp, widened, conv, ssm, o.conv_layout));
    // The class's estimate (the hybrid block alignment's): without the widening where its
    // get_mamba_state_shape_from_config passes no num_spec.
    const int64_t estimate_widened = m.mamba_estimate_widened ? widened : 0;
    if (estimate_widened != widened) {
      KVTOPO_ASSIGN_OR_RETURN(const std::vector<StateTensor> estimate,
                              Mamba2State(raw.mamba2, tp, estimate_widened, conv, ssm));
      KVTOPO_ASSIGN_OR_RETURN(s.alignment_state_bytes, StateBytes(estimate));
      s.alignment_state_note = fmt::format(
          "get_mamba_state_shape_from_config passes no num_spec, leaving out the conv state's {} "
          "speculative columns",
          widened);
      s.alignment_state_speculative_only = true;
    }
  }
  return s;
}

// compressed-tensors' kv_cache_scheme: a K/V attention layer the engine builds with the cache
// and quantization configs caches fp8 where the cache dtype is auto (Attention.__init__ at
// 28be48fa9), before --kv-cache-dtype-skip-layers resets it to auto; MLA layers do not.
bool SchemeCachesFp8(const ModelDescription& m, const RawLayer& raw, KvCacheDtype dtype) {
  return m.kv_cache_scheme.has_value() && raw.type != LayerType::kMla &&
         raw.type != LayerType::kIndexer && dtype == KvCacheDtype::kAuto;
}

// The scheme's diagnostics for a model some of whose layers are K/V attention: its refusal, or
// the note that those layers cache fp8.
void ReportKvCacheScheme(Builder& b, const ModelDescription& m, bool fp8) {
  if (!m.kv_cache_scheme) return;
  const ModelDescription::KvCacheScheme& scheme = *m.kv_cache_scheme;
  if (!scheme.invalid.empty()) {
    b.Error("kv-cache-scheme",
            fmt::format("{}: {}; the engine's K/V attention layers refuse it as they are built",
                        scheme.field, scheme.invalid));
  } else if (fp8) {
    b.Add(Severity::kInfo, "kv-cache-dtype-checkpoint",
          fmt::format("{} (compressed-tensors): the engine's K/V attention layers cache fp8 "
                      "under --kv-cache-dtype auto (Attention.__init__); MLA layers and those "
                      "--kv-cache-dtype-skip-layers names keep the model's dtype",
                      scheme.field));
  }
}

// Backends that take only some MLA dimensions of the text config: the engine's
// supports_combination reads them from the role's hf_text_config (FlashInfer MLA's
// qk_nope_head_dim, TokenSpeed MLA's DeepSeek-R1 shape) and refuses the selection otherwise.
void CheckConfigDims(Builder& b, const LayerSpec& s, const BackendCaps& be,
                     const ModelDescription& m) {
  const std::string role(RoleName(s.role));
  for (const auto& [key, accepted] : be.config_dims) {
    const std::string values = fmt::format("{}", fmt::join(accepted, ", "));
    const auto it = m.mla_config_dims.find(key);
    if (it == m.mla_config_dims.end()) {
      b.Add(Severity::kWarning, "backend-config-dims-unchecked",
            fmt::format("backend {} ({} MLA layers) takes {} in [{}] only, but '{}' states none "
                        "and kvtopo does not know its config class's default: not checked",
                        be.name, role, key, values, m.file));
      continue;
    }
    const internal::TextConfigDim& d = it->second;
    if (d.value && std::find(accepted.begin(), accepted.end(), *d.value) != accepted.end()) {
      continue;
    }
    b.Error("backend-config-dims",
            fmt::format("{} MLA layers run on backend {}, which takes {} in [{}] only, but the "
                        "{} model's is {} ({}): the engine refuses the selection; choose another "
                        "backend with {}",
                        role, be.name, key, values, role, d.shown, d.source, RoleKnob(s)));
  }
}

// Layer features the backend's impl raises NotImplementedError on as the engine builds the layer
// (FlexAttentionImpl at 28be48fa9: "does not support alibi slopes yet", "logits soft cap yet",
// "kv sharing yet"), or takes and never applies (FlashInfer's ALiBi, TurboQuant's ALiBi and cap),
// for the model whose config the role builds from.
void CheckImplFeatures(Builder& b, const LayerSpec& s, const BackendCaps& be,
                       const ModelDescription& m) {
  const std::string role(RoleName(s.role));
  const struct {
    const char* code;
    bool BackendCaps::*refuses;
    bool BackendCaps::*ignores;
    const std::string& source;
    const char* what;
    const char* it;
  } kLayerFeatures[] = {
      {"backend-alibi", &BackendCaps::refuses_alibi, &BackendCaps::ignores_alibi, m.alibi_source,
       "ALiBi position biases", "them"},
      {"backend-logits-soft-cap", &BackendCaps::refuses_logits_soft_cap,
       &BackendCaps::ignores_logits_soft_cap, m.logits_soft_cap_source, "a logits soft cap", "it"},
  };
  for (const auto& f : kLayerFeatures) {
    if (f.source.empty()) continue;
    // The backends that apply the feature, to choose from.
    const std::vector<std::string> apply = BackendNames([&](const BackendCaps& c) {
      return SameFamily(c, be) && !(c.*f.refuses) && !(c.*f.ignores);
    });
    const std::string choose =
        be.stores_turboquant
            ? fmt::format("TurboQuant caches ({}) run only on it, so choose another cache dtype",
                          KvCacheDtypeName(s.cache_dtype))
            : fmt::format("choose one that does ({}) with {}",
                          apply.empty() ? "none" : fmt::format("{}", fmt::join(apply, ", ")),
                          RoleKnob(s));
    if (be.*f.refuses) {
      b.Error(f.code, fmt::format("{} layer '{}' has {} ({}) but backend {} takes none: its "
                                  "impl raises NotImplementedError as the engine builds the "
                                  "layer; {}",
                                  role, s.name, f.what, f.source, be.name, choose));
    } else if (be.*f.ignores) {
      b.Add(Severity::kWarning, fmt::format("{}-ignored", f.code),
            fmt::format("{} layer '{}' has {} ({}) but backend {} takes {} and never applies "
                        "{}: the engine builds the layer and runs it without, so its outputs "
                        "are not the model's; {}",
                        role, s.name, f.what, f.source, be.name, f.it, f.it, choose));
    }
  }
  if (!m.kv_sharing_source.empty() && be.refuses_kv_sharing) {
    b.Error(
        "backend-kv-sharing",
        fmt::format("{} model '{}' shares KV caches across layers ({}) but backend {} does "
                    "not: its impl raises NotImplementedError as the engine builds the "
                    "sharing layers; choose one that does ({}) with {}",
                    role, m.file, m.kv_sharing_source, be.name,
                    FamilyBackendsWith(be, &BackendCaps::refuses_kv_sharing, false), RoleKnob(s)));
  }
}

// The cache dtypes `be` takes, for messages: its list, and the GPU-dependent ones with their
// condition.
std::string KvCacheDtypesText(const BackendCaps& be) {
  std::vector<std::string_view> takes, gpu;
  for (const KvCacheDtype t : be.kv_cache_dtypes) takes.push_back(KvCacheDtypeName(t));
  for (const KvCacheDtype t : be.gpu_dependent_kv_cache_dtypes) gpu.push_back(KvCacheDtypeName(t));
  std::string text = fmt::format("{}", fmt::join(takes, ", "));
  if (!gpu.empty()) {
    text += fmt::format(" ({} only as FlashAttention 3 on a Hopper GPU)", fmt::join(gpu, ", "));
  }
  return text;
}

// A layer's cache dtype against its backend's (validate_configuration's "kv_cache_dtype not
// supported", which the engine raises for a backend the launch names and skips in its own
// selection): refused when the backend surely does not take it; where that depends on the GPU
// (FlashAttention's fp8), a warning for a named backend (an unnamed one is the engine's pick,
// which moves on where it cannot).
void CheckKvCacheDtype(Builder& b, const LayerSpec& s, const LayerContext& c,
                       const BackendCaps& be) {
  const std::string role(RoleName(s.role));
  const std::string_view dtype_knob = s.role == Role::kTarget
                                          ? "--kv-cache-dtype"
                                          : "the speculative config's draft_kv_cache_dtype";
  // The cache config's own refusals say it first: an MLA-only dtype on a K/V layer
  // (kv-cache-dtype-kind), nvfp4 with an MLA model (kv-cache-dtype-mla).
  if (!IsMla(s.kind) &&
      (s.cache_dtype == KvCacheDtype::kFp8DsMla || s.cache_dtype == KvCacheDtype::kNvfp4DsMla)) {
    return;
  }
  if (IsMla(s.kind) && s.cache_dtype == KvCacheDtype::kNvfp4 &&
      std::any_of(b.out.diagnostics.begin(), b.out.diagnostics.end(),
                  [](const Diagnostic& d) { return d.code == "kv-cache-dtype-mla"; })) {
    return;
  }
  std::string why;
  const std::optional<bool> takes = TakesKvCacheDtype(be, s.cache_dtype, b.config, &why);
  if (takes == true) return;
  // The backends of its family that take it on any GPU.
  const std::vector<std::string> others = BackendNames([&](const BackendCaps& o) {
    return SameFamily(o, be) && o.name != be.name && !o.kv_cache_dtypes.empty() &&
           o.AcceptsKvCacheDtype(s.cache_dtype);
  });
  const std::string others_text =
      others.empty() ? "none" : fmt::format("{}", fmt::join(others, ", "));
  if (takes == false && !why.empty()) {
    b.Error("backend-kv-cache-dtype",
            fmt::format("{} layer '{}' has cache dtype {} but backend {} takes it only as "
                        "FlashAttention 3 on a Hopper GPU, not{}: the engine refuses the "
                        "selection ('kv_cache_dtype not supported'); choose one that takes it "
                        "({}) with {} or set {}",
                        role, s.name, KvCacheDtypeName(s.cache_dtype), be.name, why, others_text,
                        RoleKnob(s), dtype_knob));
  } else if (takes == false) {
    b.Error("backend-kv-cache-dtype",
            fmt::format("{} layer '{}' has cache dtype {} but backend {} takes only {}; choose "
                        "another backend with {} or set {}",
                        role, s.name, KvCacheDtypeName(s.cache_dtype), be.name,
                        KvCacheDtypesText(be), RoleKnob(s), dtype_knob));
  } else if (c.backend_named) {
    b.Add(Severity::kWarning, "backend-kv-cache-dtype-gpu",
          fmt::format("{} layer '{}' has cache dtype {}, which backend {} takes only as "
                      "FlashAttention 3 on a Hopper GPU (compute capability 9.x): elsewhere the "
                      "engine refuses the selection ('kv_cache_dtype not supported'); {} take it "
                      "on any GPU; --device-capability settles it",
                      role, s.name, KvCacheDtypeName(s.cache_dtype), be.name, others_text));
  }
}

// The model dtypes backend `be` computes in, for messages ("bfloat16 and float16").
std::string ComputesText(const BackendCaps& be) {
  std::vector<std::string_view> computes;
  for (const ElementType t : be.model_dtypes) computes.push_back(ElementTypeName(t));
  return fmt::format("{}", fmt::join(computes, " and "));
}

// Why backend `be` refuses layer `s`'s head size (TakesHeadSize false), for messages.
std::string HeadSizeRefused(const LayerSpec& s, const BackendCaps& be, const LaunchConfig& config) {
  const std::optional<DeviceCapability>& gpu = config.cache.device_capability;
  return fmt::format("{} layer '{}' has head size {} but backend {} supports only {}{}",
                     RoleName(s.role), s.name, s.head_size, be.name, be.HeadSizesText(),
                     gpu && HeadSizeNeedsFa4(be, s.head_size)
                         ? fmt::format(", and FlashAttention 4 is not supported on compute "
                                       "capability {}",
                                       config.cache.DeviceCapabilityText())
                         : "");
}

// A layer the model's code builds on backend `be` itself (RawLayer::built_backend): the engine
// runs no selection for it (validate_configuration's refusals never come), so what fails is the
// backend's own code: FlashAttention's implementation asserts its sinks as the layer is built
// (flash_attn.py at 28be48fa9: 'Sinks are only supported in FlashAttention 3', asked of the
// version its class methods see), and the kernels refuse a GPU, head size or dtype they do not
// run at the first forward (a GPU below 8.0 runs no FlashAttention version: the forward asserts
// 'FlashAttention version not detected.'). No --attention-backend changes the layer's backend.
void CheckBuiltBackend(Builder& b, const LayerSpec& s, const LayerContext& c,
                       const BackendCaps& be) {
  const std::string role(RoleName(s.role));
  const std::optional<DeviceCapability>& gpu = b.config.cache.device_capability;
  const bool flash_attention = be.gpu_dependence == GpuDependence::kFlashAttention3;
  constexpr std::string_view kBuilt =
      "the model's code builds the layer on it itself, which no --attention-backend reaches";
  constexpr std::string_view kAtFirstForward =
      "its kernels refuse the layer at the engine's first forward, once the weights are loaded";
  if (gpu && !be.RunsOn(*gpu)) {
    b.Error("backend-compute-capability",
            fmt::format("{} layer '{}' runs on backend {}, which runs on compute capability {} "
                        "only, not {}: {}, and {}; the model does not run on that GPU",
                        role, s.name, be.name, be.CapabilitiesText(),
                        b.config.cache.DeviceCapabilityText(), kBuilt,
                        flash_attention ? "no FlashAttention version runs there: the layer's "
                                          "forward asserts ('FlashAttention version not "
                                          "detected.') at the engine's first forward, once the "
                                          "weights are loaded"
                                        : kAtFirstForward));
  }
  const std::string assertion =
      flash_attention ? " ('Sinks are only supported in FlashAttention 3')" : "";
  std::string no_sinks;
  const std::optional<bool> sinks =
      c.has_sinks ? Settled(be.supports_sinks, be, b.config, &no_sinks) : std::optional<bool>(true);
  if (sinks == false) {
    b.Error("backend-sinks",
            fmt::format("{} layer '{}' has learned attention sinks but backend {} has none{}: "
                        "{}, and its implementation asserts{} as the engine builds the model; {}",
                        role, s.name, be.name, no_sinks, kBuilt, assertion,
                        TurboQuantOf(b.config.cache.kv_cache_dtype)
                            ? fmt::format("choose a cache dtype other than {}",
                                          KvCacheDtypeName(b.config.cache.kv_cache_dtype))
                        : b.config.cache.flash_attn_version == 2
                            ? std::string("drop --attention-config flash_attn_version 2")
                            : std::string("the model runs where FlashAttention 3 or 4 does (by "
                                          "default a compute capability 9.x or 10.x GPU)")));
  } else if (!sinks) {
    b.Add(Severity::kWarning, "backend-sinks-gpu",
          fmt::format("{} layer '{}' has learned attention sinks, which backend {} runs only as "
                      "FlashAttention 3 or 4 (by default a compute capability 9.x or 10.x GPU): "
                      "{}, and elsewhere its implementation asserts{} as the engine builds the "
                      "model; --device-capability settles it",
                      role, s.name, be.name, kBuilt, assertion));
  }
  if (const std::optional<bool> head = TakesHeadSize(be, s.head_size, b.config); head == false) {
    b.Error("backend-head-size", fmt::format("{}: {}, and {}", HeadSizeRefused(s, be, b.config),
                                             kBuilt, kAtFirstForward));
  } else if (!head) {
    b.Add(Severity::kWarning, "backend-head-size-gpu",
          fmt::format("{} layer '{}' has head size {}, which backend {} takes only where "
                      "FlashAttention 4 is supported (its kernels on a Hopper or Blackwell GPU): "
                      "{}, and elsewhere {}; --device-capability settles it",
                      role, s.name, s.head_size, be.name, kBuilt, kAtFirstForward));
  }
  if (!be.Computes(s.model_dtype)) {
    b.Error("backend-dtype",
            fmt::format("{} layer '{}' runs in {} but backend {} computes in {} only: {}, and "
                        "{}; set --dtype {}",
                        role, s.name, ElementTypeName(s.model_dtype), be.name, ComputesText(be),
                        kBuilt, kAtFirstForward, ElementTypeName(be.model_dtypes.back())));
  }
}

// What a layer's backend must support whatever the layout: its cache kind, head size, causality,
// window and dtype. Layout-dependent rules (block sizes, DCP, PCP) run over the planned geometry
// (src/plan/launch_rules.cc).
void ValidateBackends(Builder& b) {
  // The engine selects a sparse MLA backend for the MLA layers of a model with a top-k indexer
  // (in a cache of its own or kept after the MLA rows) and a dense one otherwise
  // (validate_configuration: "sparse not supported", "non-sparse not supported"); a draft is
  // sparse when it has its own indexer.
  std::set<Role> sparse_roles;
  for (const LayerSpec& s : b.out.layers) {
    if (s.sparse_indexer || s.page_tail_bytes_per_token > 0) sparse_roles.insert(s.role);
  }
  for (size_t i = 0; i < b.out.layers.size(); ++i) {
    const LayerSpec& s = b.out.layers[i];
    const LayerContext& c = b.context[i];
    if (!IsAttention(s.kind) || c.backend == nullptr) continue;
    if (s.sparse_indexer) continue;  // served by the sparse MLA backend's indexer
    const BackendCaps& be = *c.backend;
    const std::string role(RoleName(s.role));
    if (c.built_by_model) {
      CheckBuiltBackend(b, s, c, be);
      if (c.model != nullptr) CheckImplFeatures(b, s, be, *c.model);
      continue;
    }
    if (IsMla(s.kind) != be.mla) {
      b.Error("backend-kind",
              fmt::format("{} layer '{}' is {} but backend {} serves {} caches; choose a "
                          "matching backend with {}",
                          role, s.name, IsMla(s.kind) ? "an MLA cache" : "a K/V attention cache",
                          be.name, be.mla ? "MLA" : "K/V attention", RoleKnob(s)));
      continue;
    }
    // validate_configuration: "compute capability not supported" (supports_compute_capability),
    // or supports_combination's GPU check (dense FlashMLA: a Hopper GPU).
    // A backend nobody names is the engine's pick, which runs there, or none is
    // (backend-none-valid).
    if (const std::optional<DeviceCapability>& gpu = b.config.cache.device_capability;
        gpu && c.backend_named && !be.RunsOn(*gpu)) {
      const std::vector<std::string> there =
          BackendNames([&](const BackendCaps& o) { return SameFamily(o, be) && o.RunsOn(*gpu); });
      b.Error("backend-compute-capability",
              fmt::format("{} layer '{}' runs on backend {}, which runs on compute capability {} "
                          "only, not {}: the engine refuses the selection on that GPU; choose "
                          "one that runs there ({}) with {}",
                          role, s.name, be.name, be.CapabilitiesText(),
                          b.config.cache.DeviceCapabilityText(),
                          there.empty() ? "none" : fmt::format("{}", fmt::join(there, ", ")),
                          RoleKnob(s)));
    }
    if (IsMla(s.kind) && be.sparse != (sparse_roles.count(s.role) > 0)) {
      b.Error("backend-sparse",
              fmt::format("{} layer '{}' is {} MLA but backend {} serves {} MLA; the engine "
                          "refuses the selection ('{}sparse not supported'); choose a {} MLA "
                          "backend with {}",
                          role, s.name, be.sparse ? "dense" : "sparse (top-k indexer)", be.name,
                          be.sparse ? "sparse" : "dense", be.sparse ? "non-" : "",
                          be.sparse ? "dense" : "sparse", RoleKnob(s)));
    }
    if (IsMla(s.kind) && c.model != nullptr) CheckConfigDims(b, s, be, *c.model);
    if (const std::optional<bool> head = TakesHeadSize(be, s.head_size, b.config); head == false) {
      b.Error("backend-head-size", fmt::format("{}; choose another backend with {}",
                                               HeadSizeRefused(s, be, b.config), RoleKnob(s)));
    } else if (!head && c.backend_named) {
      const std::vector<std::string> others = BackendNames([&](const BackendCaps& o) {
        return SameFamily(o, be) && o.SupportsHeadSize(s.head_size);
      });
      b.Add(Severity::kWarning, "backend-head-size-gpu",
            fmt::format("{} layer '{}' has head size {}, which backend {} takes only where "
                        "FlashAttention 4 is supported (its kernels on a Hopper or Blackwell "
                        "GPU): elsewhere the engine refuses the selection ('head_size not "
                        "supported'); {} take it on any GPU; --device-capability settles it",
                        role, s.name, s.head_size, be.name,
                        others.empty() ? "none" : fmt::format("{}", fmt::join(others, ", "))));
    }
    if (!s.causal && !be.supports_non_causal) {
      b.Error("backend-non-causal",
              fmt::format("{} layer '{}' is non-causal (block-parallel drafting) but backend {} "
                          "supports only causal attention; choose a non-causal backend with {}",
                          role, s.name, be.name, RoleKnob(s)));
    }
    if (!be.Computes(s.model_dtype)) {
      b.Error("backend-dtype",
              fmt::format(
                  "{} layer '{}' runs in {} ({}) but backend {} computes in {} only; "
                  "choose another backend with {} or set --dtype {}",
                  role, s.name, ElementTypeName(s.model_dtype),
                  b.config.model_dtype ? fmt::format("--dtype {}", ElementTypeName(s.model_dtype))
                                       : std::string("the config's torch_dtype"),
                  be.name, ComputesText(be), RoleKnob(s), ElementTypeName(be.model_dtypes.back())));
    }
    std::string no_sinks;
    if (c.has_sinks && Settled(be.supports_sinks, be, b.config, &no_sinks) == false) {
      // FlashInfer under DCP passes the selection (its supports_sink asks the GPU alone, true on
      // compute capability 10.x); its metadata builder raises instead.
      const bool at_first_forward =
          be.gpu_dependence == GpuDependence::kTrtllmAttention &&
          !TrtllmAttentionOff(b.config.cache.use_trtllm_attention, /*dcp=*/1,
                              b.config.cache.device_capability);
      b.Error("backend-sinks",
              fmt::format("{} layer '{}' has learned attention sinks but backend {} has none{}: "
                          "{}; {}",
                          role, s.name, be.name, no_sinks,
                          at_first_forward
                              ? "its metadata builder raises NotImplementedError ('FlashInfer "
                                "backend currently does not support attention sinks') at the "
                                "first forward, once the weights are loaded"
                              : "the engine refuses the selection ('attention sinks not "
                                "supported')",
                          be.stores_turboquant
                              ? fmt::format("TurboQuant caches ({}) run only on it, so choose "
                                            "another cache dtype",
                                            KvCacheDtypeName(s.cache_dtype))
                              : fmt::format("choose another backend with {}", RoleKnob(s))));
    }
    if (c.model != nullptr) CheckImplFeatures(b, s, be, *c.model);
    // validate_configuration: a prefix LM's attention layers ask for supports_mm_prefix ("partial
    // multimodal token full attention not supported"; MLA layers do not ask), and
    // VLLM_BATCH_INVARIANT every layer's backend for supports_batch_invariance ("batch
    // invariance not supported").
    if (!IsMla(s.kind) && c.model != nullptr && c.model->mm_prefix_lm && !be.supports_mm_prefix) {
      b.Error("backend-mm-prefix",
              fmt::format("{} layer '{}' belongs to '{}', a multimodal prefix LM (the engine's "
                          "is_mm_prefix_lm: bidirectional attention over its multimodal "
                          "positions), but backend {} does not serve one: the engine refuses the "
                          "selection ('partial multimodal token full attention not supported'); "
                          "choose one that does ({}) with {}",
                          role, s.name, c.model->file, be.name,
                          FamilyBackendsWith(be, &BackendCaps::supports_mm_prefix), RoleKnob(s)));
    }
    if (b.config.batch_invariant && !be.supports_batch_invariance) {
      const std::string with = FamilyBackendsWith(be, &BackendCaps::supports_batch_invariance);
      b.Error("backend-batch-invariant",
              fmt::format(
                  "{} layer '{}' runs on backend {}, which has no batch-invariant "
                  "kernels, but VLLM_BATCH_INVARIANT asks every attention backend for "
                  "them: the engine refuses the selection ('batch invariance not "
                  "supported'); {}",
                  role, s.name, be.name,
                  with == "none"
                      ? fmt::format("no {} backend has them, so unset "
                                    "VLLM_BATCH_INVARIANT",
                                    be.mla ? (be.sparse ? "sparse MLA" : "MLA") : "K/V attention")
                      : fmt::format("choose one that has them ({}) with {} or unset "
                                    "VLLM_BATCH_INVARIANT",
                                    with, RoleKnob(s))));
    }
    // CrossAttention selects with attn_type encoder_decoder (validate_configuration: "attention
    // type encoder_decoder not supported").
    if (s.cross_attention && !be.supports_cross_attention &&
        (c.backend_named || !b.cross_selection_refused)) {
      b.Error("backend-cross-attention",
              fmt::format(
                  "{} layer '{}' is decoder cross-attention over the encoder's output, "
                  "which backend {} does not run: the engine refuses the selection "
                  "('attention type encoder_decoder not supported'); {}",
                  role, s.name, be.name,
                  be.stores_turboquant
                      ? fmt::format("TurboQuant caches ({}) run only on it, so choose "
                                    "another cache dtype",
                                    KvCacheDtypeName(s.cache_dtype))
                      : fmt::format("choose one that does ({}) with {}",
                                    FamilyBackendsWith(be, &BackendCaps::supports_cross_attention),
                                    RoleKnob(s))));
    }
    // A compressed-tensors kv_cache_scheme of strategy attn_head: per-head scales
    // (validate_configuration: "per-head quant scales not supported").
    std::string no_scales;
    if (!IsMla(s.kind) && c.model != nullptr && c.model->kv_cache_scheme &&
        c.model->kv_cache_scheme->per_head &&
        Settled(be.supports_per_head_quant_scales, be, b.config, &no_scales) == false) {
      const std::vector<std::string> may = BackendNames([&](const BackendCaps& other) {
        return !other.mla &&
               Settled(other.supports_per_head_quant_scales, other, b.config) != false;
      });
      b.Error("backend-per-head-scales",
              fmt::format("{} layer '{}' quantizes its K/V with per-head scales ({}: strategy "
                          "attn_head) but backend {} takes none{}: the engine refuses the "
                          "selection ('per-head quant scales not supported'); {}",
                          role, s.name, c.model->kv_cache_scheme->field, be.name, no_scales,
                          may.empty()
                              ? std::string("no K/V attention backend takes them under this launch")
                              : fmt::format("choose one that takes them on FlashAttention 3 or "
                                            "later ({}) with {}",
                                            fmt::join(may, ", "), RoleKnob(s))));
    }
    if (IsWindowed(s.kind) && !be.supports_sliding_window) {
      b.Error("backend-sliding-window",
              fmt::format("{} layer '{}' uses a sliding window but backend {} has none; choose "
                          "another backend with {}",
                          role, s.name, be.name, RoleKnob(s)));
    }
    if (TurboQuantOf(s.cache_dtype).has_value() != be.stores_turboquant) {
      b.Error(
          "backend-kv-cache-dtype",
          be.stores_turboquant
              ? fmt::format("{} layer '{}' stores {} but backend {} stores only TurboQuant "
                            "caches; choose another backend with {}",
                            role, s.name, KvCacheDtypeName(s.cache_dtype), be.name, RoleKnob(s))
              : fmt::format("{} layer '{}' stores {} (TurboQuant) but backend {} does not "
                            "store it; leave {} unset so the engine picks the backend that "
                            "does",
                            role, s.name, KvCacheDtypeName(s.cache_dtype), be.name, RoleKnob(s)));
    } else {
      CheckKvCacheDtype(b, s, c, be);
    }
    if (!IsMla(s.kind) &&
        (s.cache_dtype == KvCacheDtype::kFp8DsMla || s.cache_dtype == KvCacheDtype::kNvfp4DsMla)) {
      b.Error("kv-cache-dtype-kind",
              fmt::format("{} layer '{}' is a K/V attention cache but its cache dtype {} is "
                          "MLA-only; set {}",
                          role, s.name, KvCacheDtypeName(s.cache_dtype),
                          s.role == Role::kTarget ? "--kv-cache-dtype"
                                                  : "the speculative config's "
                                                    "draft_kv_cache_dtype"));
    }
  }
  // Under VLLM_BATCH_INVARIANT the engine's TRITON_MLA (and FLASHINFER) layers set the cache
  // config's enable_prefix_caching to False as they are built: in the process that builds them,
  // which with one GPU (the uniprocess executor) also builds the scheduler.
  if (!b.config.batch_invariant || !b.out.enable_prefix_caching) return;
  for (size_t i = 0; i < b.out.layers.size(); ++i) {
    const BackendCaps* be = b.context[i].backend;
    if (be == nullptr || !be->batch_invariant_drops_prefix_caching ||
        !be->supports_batch_invariance || b.out.layers[i].sparse_indexer) {
      continue;
    }
    b.Add(
        Severity::kWarning, "batch-invariant-prefix-caching",
        fmt::format(
            "VLLM_BATCH_INVARIANT with prefix caching: the engine's {} layers turn "
            "prefix caching off as they are built ('Disabling prefix caching ... with "
            "batch invariance'), in the process that builds them; with one GPU per engine (tensor "
            "x pipeline parallel 1: the uniprocess executor) that "
            "process also runs the scheduler, which then caches no prefixes, while "
            "with more the scheduler keeps caching them. kvtopo plans prefix caching "
            "on; pass --no-enable-prefix-caching to plan without it",
            be->name));
    return;
  }
}

// --quantization-config given with a value ("None" or an empty value is no config: the
// parser's optional_type).
bool QuantizationConfigGiven(const LaunchConfig& config) {
  return VllmFlagSetting(config.not_planned_values, "--quantization-config").has_value();
}

// The dtype the engine runs the model in (vLLM's _get_and_verify_dtype, on a GPU that computes
// in bfloat16): --dtype when given; under auto, the config's torch_dtype, except that a float32
// config runs as bfloat16, and so does a float16 config of a model type that refuses float16.
// An explicit --dtype float16 for such a model type is refused, as the engine refuses it. A GPU
// stated below compute capability 8.0 has no bfloat16 (the platform's supported_dtypes).
// The model types whose float16 the engine refuses (_check_valid_dtype: numerical instability).
bool RefusesFloat16(const ModelDescription& m) {
  static constexpr std::array<std::string_view, 5> kNoFloat16 = {"gemma2", "gemma3", "gemma3_text",
                                                                 "plamo2", "glm4"};
  return std::find(kNoFloat16.begin(), kNoFloat16.end(), m.model_type) != kNoFloat16.end();
}

void ResolveModelDtype(ModelDescription& m, const std::string& file, Builder& b) {
  const bool no_float16 = RefusesFloat16(m);
  const ElementType config_dtype = m.dtype;
  const std::optional<DeviceCapability>& gpu = b.config.cache.device_capability;
  if (b.config.model_dtype) {
    m.dtype = *b.config.model_dtype;
    if (m.dtype == ElementType::kFloat16 && no_float16) {
      b.Error("dtype-float16",
              fmt::format("--dtype float16: the engine refuses float16 for model type '{}' "
                          "(numerical instability); use --dtype {}",
                          m.model_type,
                          gpu && gpu->major < 8
                              ? fmt::format("float32 (compute capability {} has no bfloat16)",
                                            DeviceCapabilityName(*gpu))
                              : std::string("bfloat16 or float32")));
    }
    // The worker's check_if_supports_dtype (platforms/cuda.py at 28be48fa9).
    if (m.dtype == ElementType::kBfloat16 && gpu && gpu->major < 8) {
      b.Error(
          "dtype-bfloat16-gpu",
          fmt::format("--dtype bfloat16 on compute capability {}: the engine's workers "
                      "refuse it at startup ('Bfloat16 is only supported on GPUs with compute "
                      "capability of at least 8.0'); use --dtype {}",
                      b.config.cache.DeviceCapabilityText(), no_float16 ? "float32" : "float16"));
    }
    return;
  }
  if (gpu && gpu->major < 8) {
    // Below 8.0 the platform computes in float16 and float32 (below 6.0 float32 alone), a model
    // type that refuses float16 in float32: an auto dtype the GPU lacks, and a float32 config,
    // take the first of those (_resolve_auto_dtype).
    std::vector<ElementType> supported;
    if (gpu->major >= 6 && !no_float16) supported.push_back(ElementType::kFloat16);
    supported.push_back(ElementType::kFloat32);
    const ElementType wanted =
        config_dtype == ElementType::kFloat32 ? supported.front() : config_dtype;
    m.dtype = std::find(supported.begin(), supported.end(), wanted) != supported.end()
                  ? wanted
                  : supported.front();
    // Said where it differs from what a GPU with bfloat16 runs (below).
    const bool bfloat16_elsewhere = config_dtype == ElementType::kFloat32 ||
                                    (config_dtype == ElementType::kFloat16 && no_float16);
    if (m.dtype != (bfloat16_elsewhere ? ElementType::kBfloat16 : config_dtype)) {
      b.Add(Severity::kInfo, "model-dtype",
            fmt::format("'{}' gives torch_dtype {}; on compute capability {} the engine runs it "
                        "as {} (--dtype auto; the GPU computes in {}{}), so an auto KV cache "
                        "stores {}",
                        file, ElementTypeName(config_dtype), b.config.cache.DeviceCapabilityText(),
                        ElementTypeName(m.dtype),
                        gpu->major >= 6 ? "float16 and float32" : "float32 alone",
                        no_float16 && gpu->major >= 6
                            ? fmt::format(", and model type '{}' refuses float16", m.model_type)
                            : "",
                        ElementTypeName(m.dtype)));
    }
    return;
  }
  if (config_dtype == ElementType::kFloat32 ||
      (config_dtype == ElementType::kFloat16 && no_float16)) {
    m.dtype = ElementType::kBfloat16;
    b.Add(Severity::kInfo, "model-dtype",
          config_dtype == ElementType::kFloat32
              ? fmt::format("'{}' {}; the engine runs a float32 model as bfloat16 (--dtype "
                            "auto), so an auto KV cache stores bfloat16; set --dtype float32 to "
                            "keep float32",
                            file,
                            m.dtype_stated ? "gives torch_dtype float32"
                            : internal::IsGgufFile(file)
                                ? "is a GGUF file, whose metadata states no dtype: the engine "
                                  "reads none from its tensors either and takes float32"
                                : "states no torch_dtype: the engine takes its weights' dtype "
                                  "(float32 when it cannot read them), and kvtopo, which reads "
                                  "no weights, float32")
              : fmt::format("'{}' gives torch_dtype float16, which the engine refuses for model "
                            "type '{}'; it runs bfloat16 (--dtype auto), so an auto KV cache "
                            "stores bfloat16",
                            file, m.model_type));
  }
}

// --disable-sliding-window (vLLM's ModelConfig): the derived maximum length is capped at the
// config's sliding_window before the RoPE factor scales it (_get_and_verify_max_len; a yarn
// entry's original_max_position_embeddings replaces the capped base), and the text config's
// sliding_window becomes None, so every sliding layer of the target attends, and is cached, over
// the whole request.
void DisableSlidingWindow(ModelDescription& m, Builder& b) {
  int64_t converted = 0;
  for (RawLayer& l : m.layers) {
    if (l.type != LayerType::kSlidingWindow || l.keeps_window) continue;
    l.type = LayerType::kAttention;
    l.sliding_window = 0;
    ++converted;
  }
  const int64_t window = m.text_sliding_window;
  std::string capped;
  if (window > 0 && window < m.length_base && !m.rope_yarn_base) {
    // length_base x factor was checked to lie in [1, kMaxModelLen]; the window is smaller, so
    // only the lower end needs a check.
    const double scaled = static_cast<double>(window) * m.rope_factor;
    if (scaled < 1) {
      b.Error("sliding-window-disabled",
              fmt::format("--disable-sliding-window caps the maximum length at sliding_window {} "
                          "x RoPE factor {} in '{}', under one token",
                          window, m.rope_factor, m.file));
      return;
    }
    const std::string was =
        m.length_unstated ? "unbounded: no length field" : std::to_string(m.max_model_len);
    m.max_model_len = static_cast<int64_t>(scaled);
    if (m.length_unstated) {  // the window is now the length, and the default
      m.length_unstated = false;
      m.default_max_model_len = 0;
    }
    m.max_len_source = m.rope_factor == 1
                           ? fmt::format("sliding_window {}", window)
                           : fmt::format("sliding_window {} x factor {}", window, m.rope_factor);
    capped = fmt::format("; the model's maximum length is capped at {} ({}; was {})",
                         m.max_model_len, m.max_len_source, was);
  }
  if (converted == 0 && capped.empty()) return;
  b.Add(Severity::kInfo, "sliding-window-disabled",
        fmt::format("--disable-sliding-window: {} sliding-window layers attend over the whole "
                    "request and are cached as full attention{}",
                    converted, capped));
}

// What target `m` collects of its auxiliary hidden states for layer ids `ids`: one state per
// distinct id its forward reaches, with EagleModelMixin after each layer, 0 (the embeddings) to
// num_hidden_layers (the last layer's output); DeepSeek-V2's model before each layer, adding the
// residual, which is null before layer 0 (the forward fails there), so 1 to num_hidden_layers - 1.
struct AuxCollection {
  bool before = false;  // collected before each layer (DeepSeek-V2's model)
  int64_t first = 0, last = 0;
  int64_t got = 0;          // distinct ids in [first, last]
  bool zero_fails = false;  // id 0 on a model that collects before each layer
};
AuxCollection CollectAuxStates(const ModelDescription& m, const std::vector<int64_t>& ids) {
  AuxCollection c;
  c.before = internal::CollectsAuxStatesBeforeEachLayer(m);
  c.first = c.before ? 1 : 0;
  c.last = c.before ? m.num_hidden_layers - 1 : m.num_hidden_layers;
  c.zero_fails = c.before && std::find(ids.begin(), ids.end(), 0) != ids.end();
  std::set<int64_t> collected;
  for (const int64_t id : ids) {
    if (id >= c.first && id <= c.last) collected.insert(id);
  }
  c.got = static_cast<int64_t>(collected.size());
  return c;
}

// A draft whose fc layer combines the target's auxiliary hidden states (the EAGLE-3 heads,
// DFlash) takes as many as it was trained on, each as wide as the target's hidden states
// (the fork's llama_eagle3.py, deepseek_eagle3.py, qwen3_dflash.py at 28be48fa9). The target
// collects them as CollectAuxStates says. Ids out of range or repeated give fewer states than
// named; the states fit the fc layer only when as many as it takes are collected. A draft that
// names no ids gets the target's defaults. Unknown sizes (0) are not checked.
void CheckDraftAuxInputs(const ModelDescription& target, const ModelDescription& draft,
                         const std::string& draft_name, Builder& b) {
  const int64_t n = draft.draft_fc_states;
  if (target.hidden_size > 0 && draft.draft_fc_state_width > 0 &&
      target.hidden_size != draft.draft_fc_state_width) {
    b.Error("speculative-draft-hidden-size",
            fmt::format("--speculative-config: draft '{}' combines {} of the target's hidden "
                        "states in its fc layer, each {} wide ({} in '{}'), and the {} target's "
                        "are {} wide (hidden_size in '{}'): they do not fit that layer; choose a "
                        "draft trained for this target",
                        draft_name, n, draft.draft_fc_state_width, draft.draft_fc_width_key,
                        draft.file, target.architecture, target.hidden_size, target.file));
    return;
  }
  const int64_t L = target.num_hidden_layers;
  if (L <= 0) return;
  // Without ids the runner takes the target's defaults (interfaces.py's
  // get_eagle3_default_aux_hidden_state_layers: 2, L / 2 and L - 3).
  const bool stated = !draft.draft_aux_layer_ids.empty();
  const std::vector<int64_t> ids =
      stated ? draft.draft_aux_layer_ids : std::vector<int64_t>{2, L / 2, L - 3};
  constexpr size_t kShown = 16;
  const std::string shown =
      ids.size() <= kShown
          ? fmt::format("[{}]", fmt::join(ids, ", "))
          : fmt::format("[{}, ...] ({} ids)", fmt::join(ids.begin(), ids.begin() + kShown, ", "),
                        ids.size());
  if (!target.transformers_backend.empty()) {
    // The Transformers backend (models/transformers/base.py at 28be48fa9) records state k as the
    // output of its layer k - 1 (set_aux_hidden_state_layers looks the layer's name up by
    // index): ids 1 to num_hidden_layers; any other id is a KeyError as the states are set,
    // after the weights load.
    const auto out =
        std::find_if(ids.begin(), ids.end(), [&](int64_t id) { return id < 1 || id > L; });
    const int64_t got = static_cast<int64_t>(std::set<int64_t>(ids.begin(), ids.end()).size());
    if (out == ids.end() && got == n) return;
    const std::string source = stated ? fmt::format("names target layers {} ({} in '{}')", shown,
                                                    draft.draft_aux_layer_ids_key, draft.file)
                                      : fmt::format("takes the target's defaults {}", shown);
    const std::string plural = n == 1 ? "" : "s";
    b.Error("speculative-aux-layer-ids",
            fmt::format("--speculative-config: draft '{}' {} for the {} hidden state{} its fc "
                        "layer combines, and the {} target (the engine's Transformers backend, "
                        "{} layers) records state k as the output of its layer k - 1{}; name {} "
                        "distinct id{} from 1 to {}",
                        draft_name, source, n, plural, target.architecture, L,
                        out != ids.end()
                            ? fmt::format(": id {} names no layer (a KeyError after the weights "
                                          "load)",
                                          *out)
                            : fmt::format(", {} distinct of them", got),
                        n, plural, L));
    return;
  }
  const AuxCollection c = CollectAuxStates(target, ids);
  if (c.got == n && !c.zero_fails) return;
  const std::string source =
      stated ? fmt::format("names target layers {} ({} in '{}')", shown,
                           draft.draft_aux_layer_ids_key, draft.file)
             : fmt::format(
                   "names no target layers, so the engine takes the target's defaults "
                   "{} (2, num_hidden_layers / 2, num_hidden_layers - 3),",
                   shown);
  const std::string plural = n == 1 ? "" : "s";
  if (c.zero_fails) {
    b.Error("speculative-aux-layer-ids",
            fmt::format("--speculative-config: draft '{}' {} for the {} hidden state{} its fc "
                        "layer combines, and the {} target collects each state before the layer "
                        "its id names, adding the residual, which is null before layer 0: its "
                        "forward fails on id 0; name {} distinct id{} from 1 to {}",
                        draft_name, source, n, plural, target.architecture, n, plural, c.last));
    return;
  }
  const std::string range =
      c.before ? fmt::format("from 1 to {} (the input of each layer but the first)", c.last)
               : fmt::format("from 0 (its embeddings) to {} (its last layer's output)", c.last);
  b.Error(
      "speculative-aux-layer-ids",
      fmt::format("--speculative-config: draft '{}' {} for the {} hidden state{} its fc layer "
                  "combines, and the {} target of {} layers collects one state per distinct "
                  "id {}, {} of them; name {} distinct id{} in that range",
                  draft_name, source, n, plural, target.architecture, L, range, c.got, n, plural));
}

// The engine's draft-model proposer (the fork's v1/spec_decode/draft_model.py at 28be48fa9),
// built with the model runner before any weight loads:
// SpeculativeConfig.verify_equal_vocab_size_if_draft_model refuses a draft whose vocab_size is
// not the target's.
void CheckDraftModelVocab(const ModelDescription& target, const ModelDescription& draft,
                          const std::string& draft_name, Builder& b) {
  if (target.vocab_size > 0 && draft.vocab_size > 0 && target.vocab_size != draft.vocab_size) {
    b.Error("speculative-draft-vocab",
            fmt::format("--speculative-config method 'draft_model': draft '{}' has vocab_size {} "
                        "('{}') and the {} target {} ('{}'): the engine refuses it ('Target and "
                        "draft model should have the same vocabulary size') as it starts; choose "
                        "a draft that shares the target's tokenizer",
                        draft_name, draft.vocab_size, draft.file, target.architecture,
                        target.vocab_size, target.file));
  }
}

// The engine's EAGLE (method eagle) Llama and Mistral heads (llama_eagle.py, mistral_eagle.py at
// 28be48fa9) name their layers after the target's (layers.{T + i}) and set no
// target_layer_count, so the Llama attention they build looks up a non-empty layer_types at index
// T + i and asserts it is in range. kvtopo reads one entry per draft layer, so the assertion fails
// for every such draft: the engine stops as it builds the draft.
void CheckEagleLayerTypes(const ModelDescription& target, const ModelDescription& draft,
                          const internal::LoadedConfig& loaded, Builder& b) {
  if (draft.architecture != "EagleLlamaForCausalLM" &&
      draft.architecture != "EagleMistralForCausalLM") {
    return;
  }
  const auto types = loaded.json.find("layer_types");
  if (types == loaded.json.end() || !types->is_array() || types->empty()) return;
  int64_t first = target.num_hidden_layers;
  if (first == 0) {
    first = std::count_if(target.layers.begin(), target.layers.end(),
                          [](const RawLayer& l) { return !l.mtp; });
  }
  // The first index out of range: T, or the list's length for a draft deeper than its target.
  const int64_t out_of_range = std::max(first, static_cast<int64_t>(types->size()));
  // A Mistral-format params.json states sliding_window, which the converter turns into
  // layer_types (every layer sliding for an integer).
  const bool params = loaded.file.ends_with("params.json");
  b.Error(
      "speculative-draft-layer-types",
      fmt::format("--speculative-config method 'eagle': draft '{}' ({}) has layer_types{}; "
                  "the engine names the draft's layers after the target's {} and looks each "
                  "up in layer_types by that index, asserting it is in range "
                  "('effective_layer_idx: {} is out of bounds for layer_types'), so it stops "
                  "as it builds the draft; a draft of this class runs only without {}",
                  loaded.name, draft.architecture,
                  params ? " (its params.json's sliding_window, as the converter writes it)" : "",
                  first, out_of_range, params ? "sliding_window" : "layer_types"));
}

// The engine's SpecDecodeBaseProposer (llm_base_proposer.py at 28be48fa9; internal::Proposer),
// built with the model runner before any weight loads. Drafting adds input slots per request
// when the proposer drafts in parallel (one per draft token) or does not feed the target's
// hidden states (one); such a proposer refuses disable_padded_drafter_batch, a target that takes
// multimodal inputs (MultiModalRegistry.supports_multimodal_inputs; --language-model-only sets
// every modality's limit to 0; DFlash's proposer takes such targets) and a draft using M-RoPE;
// parallel drafting needs the draft's mask token. `draft` is the draft's config (the target's
// for in-model MTP); null when kvtopo has not read it. With --limit-mm-per-prompt whether every
// limit is 0 depends on the model's modalities, which kvtopo does not know: not checked.
void CheckProposer(const ModelDescription& target, const ModelDescription* draft,
                   const std::string& draft_name, const SpeculativeConfig& spec,
                   const internal::SpeculativeMethod& row, const LaunchConfig& config, Builder& b) {
  using internal::Proposer;
  if (row.proposer == Proposer::kNone) return;
  // DFlash's proposer drafts in parallel whatever the field says (the engine sets it).
  const bool parallel = spec.parallel_drafting || row.proposer == Proposer::kDflash;
  const int64_t slots = (parallel ? spec.num_speculative_tokens : 1) -
                        (row.proposer == Proposer::kHiddenStates ? 1 : 0);
  // The user's parallel_drafting (DFlash's is the engine's own).
  const bool asked_parallel = spec.parallel_drafting && row.proposer != Proposer::kDflash;
  const std::string what = fmt::format("--speculative-config method '{}'{}", spec.method,
                                       asked_parallel ? " with 'parallel_drafting'" : "");
  if (asked_parallel && draft != nullptr && !draft->names_parallel_drafting_token) {
    b.Error("speculative-parallel-drafting-token",
            fmt::format("{}: draft '{}' ('{}') states none of pard_token, ptd_token_id and "
                        "dflash_config.mask_token_id, and the engine raises 'For parallel "
                        "drafting, the draft model config must have `pard_token`, "
                        "`ptd_token_id`, or `dflash_config.mask_token_id` specified' as it "
                        "starts; choose a draft trained for parallel drafting or drop "
                        "'parallel_drafting'",
                        what, draft_name, draft->file));
  }
  if (slots <= 0) return;
  const char* kRaises =
      "the engine's proposer raises 'Speculative Decoding with draft models or "
      "parallel drafting";
  if (spec.disable_padded_drafter_batch) {
    b.Error("speculative-padded-drafter-batch",
            fmt::format("{}: 'disable_padded_drafter_batch' is true, and {} only supports "
                        "padded drafter batch' as it starts; drop 'disable_padded_drafter_batch'",
                        what, kRaises));
  }
  bool limits_given = false;
  for (const std::string& flag : config.not_planned_flags) {
    limits_given = limits_given || flag == "--limit-mm-per-prompt";
  }
  if (row.proposer != Proposer::kDflash && internal::IsMultimodalTarget(target.architecture) &&
      !config.language_model_only && !limits_given) {
    b.Error("speculative-multimodal-target",
            fmt::format("{} beside the multimodal {} target: {} does not support multimodal "
                        "models yet' as it starts; pass --language-model-only to serve the text "
                        "model alone, or choose another method",
                        what, target.architecture, kRaises));
  }
  if (draft != nullptr && draft->uses_mrope) {
    b.Error("speculative-draft-mrope",
            fmt::format("{}: draft '{}' ('{}') uses M-RoPE (its rope parameters hold "
                        "mrope_section): {} does not support M-RoPE yet' as it starts; choose a "
                        "draft with 1-D RoPE{}",
                        what, draft_name, draft->file, kRaises,
                        asked_parallel ? " or drop 'parallel_drafting'" : ""));
  }
}

// The speculative config's max_model_len (SpeculativeConfig at 28be48fa9): the engine builds the
// draft's model config with it, which refuses a length beyond the draft's derived one unless
// VLLM_ALLOW_LONG_MAX_MODEL_LEN (_get_and_verify_max_len, as for the target), and
// _maybe_override_draft_max_model_len refuses one beyond the target's --max-model-len.
void CheckDraftMaxModelLen(const ModelDescription& draft, const std::string& draft_name,
                           const SpeculativeConfig& spec, Builder& b) {
  const int64_t asked = spec.max_model_len;
  if (asked <= 0) return;
  if (asked > draft.max_model_len) {
    const std::string exceeds = fmt::format(
        "--speculative-config 'max_model_len' {} exceeds the maximum length {} ({}) of draft "
        "'{}' ('{}')",
        asked, draft.max_model_len, draft.max_len_source, draft_name, draft.file);
    if (b.config.allow_long_max_model_len) {
      b.Add(Severity::kWarning, "speculative-max-model-len",
            exceeds + "; VLLM_ALLOW_LONG_MAX_MODEL_LEN lets the engine build the draft with it");
    } else {
      b.Error("speculative-max-model-len",
              exceeds +
                  ": the engine refuses it as it builds the draft's config; lower it to "
                  "at most " +
                  std::to_string(draft.max_model_len) +
                  ", or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 for a draft known to extrapolate");
    }
  }
  if (asked > b.out.max_model_len) {
    b.Error("speculative-max-model-len",
            fmt::format("--speculative-config 'max_model_len' {} exceeds the target's "
                        "--max-model-len {}: the engine refuses it ('speculative_max_model_len "
                        "cannot be larger than target_max_model_len'); lower it to at most {}",
                        asked, b.out.max_model_len, b.out.max_model_len));
  }
}

// extract_hidden_states keeps the target's auxiliary hidden states in the KV cache pool (the
// fork's v1/spec_decode/extract_hidden_states.py and models/extract_hidden_states.py at
// 28be48fa9): one cache-only layer, cache_only_layers.{num_hidden_layers}, whose
// HiddenStateCacheSpec (an MLAAttentionSpec) holds the states of the layers
// draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids names, ids x hidden_size values a
// token in the model's dtype (a quantized --kv-cache-dtype is replaced by auto for it), not split
// over TP, in the launch's cache block. Beside target layers that are all full attention (K/V or
// MLA) of that block, kv_cache_utils.py keeps it in their one group (UniformTypeKVCacheSpecs: a
// block id spans every layer's page); beside windowed or recurrent layers it gets a group of its
// own with a block of its own, which kvtopo does not plan (without the hybrid manager every
// windowed layer is full attention, and it joins them). The proposer takes one speculative
// token and padded drafter batches; its cache-only backend returns no softmax LSE, so DCP is
// refused (cp_utils.py).
Status AddHiddenStateCache(const ModelDescription& model, const nlohmann::json& target_config,
                           const std::string& target_file, const SpeculativeConfig& spec,
                           Builder& b) {
  const char* kWhat = "--speculative-config method 'extract_hidden_states'";
  const size_t errors_before = b.out.diagnostics.size();
  // The engine's draft config is the target's with the speculative config's hf_config over it
  // (ExtractHiddenStatesConfig): ids the target's config states (or --hf-overrides sets) count
  // when the speculative config names none.
  std::vector<int64_t> ids = spec.extract_layer_ids.value_or(std::vector<int64_t>{});
  std::string ids_source = "draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids";
  if (!spec.extract_layer_ids && target_config.is_object() &&
      target_config.contains("eagle_aux_hidden_state_layer_ids")) {
    KVTOPO_ASSIGN_OR_RETURN(ids, internal::ConfigReader(target_config, target_file)
                                     .IntList("eagle_aux_hidden_state_layer_ids"));
    ids_source = fmt::format("eagle_aux_hidden_state_layer_ids in '{}'", target_file);
  }
  if (ids.empty()) {
    b.Error(
        "speculative-extract-hidden-states",
        fmt::format("{} keeps the hidden states of the target layers its draft config names, "
                    "and none are named: the engine raises "
                    "'eagle_aux_hidden_state_layer_ids must be set in the draft model config "
                    "for extract_hidden_states method' as it starts; add \"draft_model_config\": "
                    "{{\"hf_config\": {{\"eagle_aux_hidden_state_layer_ids\": [...]}}}}",
                    kWhat));
  }
  if (spec.num_speculative_tokens != 1) {
    b.Error("speculative-extract-hidden-states",
            fmt::format("{} runs with num_speculative_tokens 1, got {}: the engine's proposer "
                        "asserts it as it starts; set num_speculative_tokens to 1",
                        kWhat, spec.num_speculative_tokens));
  }
  if (spec.disable_padded_drafter_batch) {
    b.Error("speculative-extract-hidden-states",
            fmt::format("{}: 'disable_padded_drafter_batch' is true, and the engine raises "
                        "'disable_padded_drafter_batch is not supported with "
                        "extract_hidden_states method' as it starts; drop it",
                        kWhat));
  }
  const ParallelConfig& p = b.config.parallel;
  if (p.decode_context_parallel_size > 1 || p.prefill_context_parallel_size > 1) {
    b.Error("speculative-extract-hidden-states",
            fmt::format("{} under --decode-context-parallel-size {} / "
                        "--prefill-context-parallel-size {}: its cache-only attention returns no "
                        "softmax LSE, and the engine refuses context parallelism for it as it "
                        "starts ('... CacheOnlyAttentionImpl does not'); plan it without DCP and "
                        "PCP",
                        kWhat, p.decode_context_parallel_size, p.prefill_context_parallel_size));
  }
  // CacheOnlyAttentionLayer takes auto, bfloat16 and float16; fp8*, *_per_token_head and nvfp4
  // (is_quantized_kv_cache) become auto first.
  KvCacheDtype dtype = b.config.cache.kv_cache_dtype;
  const std::string_view name = KvCacheDtypeName(dtype);
  if (name.starts_with("fp8") || name.ends_with("per_token_head") || name == "nvfp4") {
    dtype = KvCacheDtype::kAuto;
  }
  if (dtype != KvCacheDtype::kAuto && dtype != KvCacheDtype::kBfloat16 &&
      dtype != KvCacheDtype::kFloat16) {
    b.Error("speculative-extract-hidden-states",
            fmt::format("{} with --kv-cache-dtype {}: its cache-only layer asserts a cache dtype "
                        "of auto, bfloat16 or float16 as the model is built; choose one of them "
                        "or a quantized dtype (fp8, nvfp4), which the layer replaces by auto",
                        kWhat, name));
  }
  // The target's layers: all full attention of one block, which the cache-only layer joins;
  // without the hybrid manager windowed layers are cached as full attention too
  // (unify_hybrid_kv_cache_specs), so it joins them as well.
  const bool as_one_type = !b.out.hybrid_manager_off.empty();
  const LayerSpec* other = nullptr;
  for (const LayerSpec& s : b.out.layers) {
    const bool full = (s.kind == CacheKind::kFullAttention || s.kind == CacheKind::kMla ||
                       (as_one_type && IsWindowed(s.kind))) &&
                      !s.cross_attention && !s.sparse_indexer &&
                      s.block_size == b.out.layers.front().block_size;
    if (!full) {
      other = &s;
      break;
    }
  }
  if (other != nullptr || model.hidden_size <= 0 || model.num_hidden_layers <= 0) {
    b.Error("speculative-method-not-modelled",
            other != nullptr
                ? fmt::format("{}: beside layer '{}' ({}, block {}) the engine gives its "
                              "cache-only layer a KV cache group of its own with a block of its "
                              "own (max(page / bytes per token, 1) tokens, padded to the common "
                              "page), which kvtopo does not plan; it plans the method beside "
                              "targets whose layers are all full attention",
                              kWhat, other->name, SpecKindName(*other), other->block_size)
                : fmt::format("{}: the {} config states no hidden_size or num_hidden_layers for "
                              "kvtopo to size its cache-only layer by",
                              kWhat, model.architecture));
  }
  // The target collects one state per distinct id its forward reaches (CollectAuxStates); the
  // layer keeps as many as are named.
  const int64_t L = model.num_hidden_layers;
  if (!ids.empty() && L > 0) {
    const AuxCollection c = CollectAuxStates(model, ids);
    if (c.got != static_cast<int64_t>(ids.size())) {
      b.Error("speculative-aux-layer-ids",
              fmt::format("{}: {} names {} target layer{}, and the {} target of {} layers "
                          "collects one state per distinct id from {} to {}, {} of them: they do "
                          "not fill the cache-only layer's {} states; name distinct ids in that "
                          "range",
                          kWhat, ids_source, ids.size(), ids.size() == 1 ? "" : "s",
                          model.architecture, L, c.first, c.last, c.got, ids.size()));
    }
  }
  if (b.out.diagnostics.size() != errors_before || b.out.layers.empty()) return Status::Ok();
  LayerSpec s;
  s.name = fmt::format("cache_only_layers.{}", L);
  s.role = Role::kDraft;
  s.kind = CacheKind::kMla;
  s.block_size = b.out.layers.front().block_size;
  s.num_kv_heads = static_cast<int64_t>(ids.size());
  s.head_size = model.hidden_size;
  s.cache_dtype = dtype;
  s.model_dtype = b.out.layers.front().model_dtype;
  b.out.layers.push_back(std::move(s));
  b.context.push_back({nullptr});
  return Status::Ok();
}

// The scheduler's token budget with speculative decoding (VllmConfig._set_max_num_scheduled_tokens
// at 28be48fa9): max_num_batched_tokens less the slots drafting adds for each of max_num_seqs
// requests. The engine refuses a budget of 0 or less and warns below 8,192.
Status CheckScheduledTokens(const SpeculativeConfig& spec, const LaunchConfig& config, Builder& b) {
  const int64_t per_request = spec.NewSlotsForDrafting();
  const CacheOptions& cache = config.cache;
  if (per_request <= 0 || cache.max_num_seqs <= 0 || cache.max_num_batched_tokens <= 0) {
    return Status::Ok();
  }
  const int64_t batched = b.out.max_num_batched_tokens > 0 ? b.out.max_num_batched_tokens
                                                           : cache.max_num_batched_tokens;
  KVTOPO_ASSIGN_OR_RETURN(
      const int64_t set_aside,
      internal::CheckedMul(per_request, cache.max_num_seqs, "drafting slots x --max-num-seqs"));
  const int64_t scheduled = batched - set_aside;
  const std::string slots =
      fmt::format("{} drafting slot{} a request ({}) x --max-num-seqs {}", per_request,
                  per_request == 1 ? "" : "s",
                  spec.method == "draft_model"
                      ? (spec.parallel_drafting ? "the draft model's one and a slot per draft "
                                                  "token after the first under parallel drafting"
                                                : "the draft model's")
                      : "a slot per draft token after the first under parallel drafting",
                  cache.max_num_seqs);
  if (scheduled <= 0) {
    b.Error("speculative-scheduled-tokens",
            fmt::format("--max-num-batched-tokens {} leaves the scheduler {} tokens a step once "
                        "it sets aside {}: the engine refuses the launch "
                        "(max_num_scheduled_tokens must be positive); raise "
                        "--max-num-batched-tokens, or lower num_speculative_tokens or "
                        "--max-num-seqs",
                        batched, scheduled, slots));
  } else if (scheduled < 8192) {
    b.Add(Severity::kWarning, "speculative-scheduled-tokens",
          fmt::format("the scheduler schedules at most {} tokens a step: --max-num-batched-tokens "
                      "{} less {}; the engine warns that this may lead to suboptimal "
                      "performance",
                      scheduled, batched, slots));
  }
  return Status::Ok();
}

// The engine's rules on a speculative config that hold whatever the target's layers: the
// draft's tensor-parallel size (SpeculativeConfig._verify_and_get_draft_tp: 1 or the target's;
// a draft model's proposer takes only the target's), fast prefill for KV sharing beside an
// EAGLE-family draft (VllmConfig.__post_init__: it gives wrong logits for prompt tokens, which
// the draft reads), and a step's room for every sequence's verified tokens under LoRA
// (EngineArgs.create_engine_config).
void CheckSpeculativeLaunch(const SpeculativeConfig& spec, const internal::SpeculativeMethod& row,
                            Builder& b) {
  const LaunchConfig& config = b.config;
  const CacheOptions& cache = config.cache;
  const int64_t tp = config.parallel.tensor_parallel_size;
  const int64_t draft_tp = spec.draft_tensor_parallel_size;
  if (draft_tp != 0 && draft_tp != 1 && draft_tp != tp) {
    b.Error("speculative-draft-tp",
            fmt::format("--speculative-config 'draft_tensor_parallel_size' {} must be 1 or "
                        "--tensor-parallel-size {}; the engine refuses any other value",
                        draft_tp, tp));
  } else if (draft_tp != 0 && draft_tp != tp && row.draft_tp_is_target_tp) {
    b.Error("speculative-draft-tp",
            fmt::format("--speculative-config method '{}' runs its draft only at the target's "
                        "tensor-parallel size: the engine refuses 'draft_tensor_parallel_size' "
                        "{} with --tensor-parallel-size {}; drop it or set it to {}",
                        spec.method, draft_tp, tp, tp));
  }
  if (row.use_eagle && config.kv_sharing_fast_prefill) {
    b.Error("kv-sharing-fast-prefill",
            fmt::format("--kv-sharing-fast-prefill with speculative method '{}': the engine "
                        "refuses the pair ('Fast prefill optimization for KV sharing is not "
                        "compatible with EAGLE', whose draft needs correct logits for every "
                        "prompt token); drop --kv-sharing-fast-prefill or choose another method",
                        spec.method));
  }
  if (config.enable_lora && cache.max_num_seqs > 0) {
    const int64_t batched = b.out.max_num_batched_tokens > 0 ? b.out.max_num_batched_tokens
                                                             : cache.max_num_batched_tokens;
    // num_speculative_tokens is at most 1024, max_num_seqs a checked integer.
    const Result<int64_t> per_step_or =
        internal::CheckedMul(cache.max_num_seqs, spec.num_speculative_tokens + 1, "--max-num-seqs");
    const int64_t per_step = per_step_or.ok() ? *per_step_or : INT64_MAX;
    if (batched < per_step) {
      b.Error("lora-speculative-batched-tokens",
              fmt::format("--enable-lora with a speculative config needs --max-num-batched-tokens "
                          "of at least --max-num-seqs {} x (num_speculative_tokens {} + 1) = {}, "
                          "got {}: the engine refuses the launch ('Consider increasing "
                          "max_num_batched_tokens or decreasing num_speculative_tokens'); raise "
                          "--max-num-batched-tokens, or lower --max-num-seqs or "
                          "num_speculative_tokens",
                          cache.max_num_seqs, spec.num_speculative_tokens, per_step, batched));
    }
  }
}

// A draft fed the target's auxiliary hidden states beside a target class that does not set and
// collect them (`unavailable`, internal::AuxHiddenStatesUnavailable): the engine fails once the
// weights are loaded.
void RefuseAuxHiddenStates(const SpeculativeConfig& spec, const internal::SpeculativeMethod& row,
                           const std::string& unavailable, Builder& b) {
  const bool declinable = row.aux_hidden_states == internal::AuxHiddenStates::kUnlessDraftDeclines;
  b.Error("speculative-aux-hidden-states",
          fmt::format("--speculative-config method '{}' feeds the draft the target's auxiliary "
                      "hidden states, and {}; choose another method{}",
                      spec.method, unavailable,
                      declinable ? " or a draft whose eagle_config sets use_aux_hidden_state "
                                   "to false"
                                 : ""));
}

// Flags that need a model with experts (ModelConfig.is_moe: the expert count its text config
// states, EngineExpertCount): --enable-expert-parallel (ModelConfig.verify_with_parallel_config)
// and external data-parallel load balancing (EngineArgs.create_engine_config), both refused at
// startup for a model without experts.
void CheckExpertsFor(const LaunchConfig& config, const ModelDescription& m, const std::string& file,
                     Builder& b) {
  // The routed-experts capturer (RoutedExpertsCapturer, RoutedExpertsManager), built once the KV
  // cache is sized: it sizes its buffers from the text config's experts per token and expert
  // count, and raises for a config without either.
  if (config.enable_return_routed_experts &&
      (!m.states_experts_per_token || !m.states_capturer_expert_count)) {
    b.Error("routed-experts-config",
            fmt::format("--enable-return-routed-experts with '{}' ({}), whose text config states "
                        "{}: the engine's routed-experts capturer cannot size its buffers and "
                        "fails once the weights are loaded ('{}'); drop "
                        "--enable-return-routed-experts",
                        file, m.architecture,
                        !m.states_experts_per_token
                            ? "neither num_experts_per_tok nor top_k_experts"
                            : "none of num_experts, n_routed_experts, num_local_experts",
                        !m.states_experts_per_token
                            ? "Cannot determine num_experts_per_tok"
                            : "Could not resolve num_experts from model config"));
  }
  if (m.num_experts > 0) return;
  const std::string model = fmt::format(
      "'{}' ({}), whose config states no experts (num_experts, moe_num_experts, n_routed_experts, "
      "num_local_experts, block_configs{})",
      file, m.architecture,
      m.experts_hidden_by.empty()
          ? ""
          : fmt::format("; it leaves out {}, which the engine reads first and the fork's config "
                        "class for model type '{}' sets to None",
                        m.experts_hidden_by, m.model_type));
  if (config.enable_expert_parallel) {
    b.Error("expert-parallel-no-experts",
            fmt::format("--enable-expert-parallel with {}: the engine refuses it ('Number of "
                        "experts in the model must be greater than 0 when expert parallelism is "
                        "enabled'); drop --enable-expert-parallel",
                        model));
  }
  if (config.external_data_parallel_lb) {
    b.Error("external-dp-no-experts",
            fmt::format("external data-parallel load balancing (--data-parallel-external-lb or "
                        "--data-parallel-rank) with {}: the engine refuses it ('Non-MoE models do "
                        "not support external data parallel mode'); launch independent engines "
                        "without --data-parallel-* flags",
                        model));
  }
}

// The ranks the engine's expert-parallel group spans: DP x PCP x TP (init_model_parallel_group's
// "ep" at 28be48fa9). Each factor is at most 4,096 (the launch options' bounds): no overflow.
int64_t ExpertParallelRanks(const LaunchConfig& config) {
  return config.data_parallel_size * config.parallel.prefill_context_parallel_size *
         config.parallel.tensor_parallel_size;
}

// A named MoE backend against the FusedMoE method its experts run: the method's kernel family
// (its map raises for a name outside it), the GPU the family's kernels for that name run on
// (their _supports_current_device, where the launch states the GPU), and expert parallelism
// over more than one rank, which NVFP4's b12x and CUTLASS kernels refuse
// (_supports_parallel_config). `who` names the experts, `weights` adds what they are built from,
// `built` says when the engine raises.
void CheckNamedMoeBackend(const internal::FusedMoeMethod& method, const std::string& backend,
                          const std::string& knob, const std::string& who,
                          const std::string& weights, const std::string& built,
                          const LaunchConfig& config, Builder& b) {
  const std::string experts =
      fmt::format("{} {} with {}, whose experts run {}{} ({} MoE kernels)", knob, backend, who,
                  method.engine_class, weights, method.family);
  if (const std::string refusal = internal::FusedMoeBackendRefusal(method, backend);
      !refusal.empty()) {
    b.Error("moe-backend",
            fmt::format("{}: the engine raises {} ('{}'); pass one of {}, or auto", experts, built,
                        refusal, fmt::join(internal::FusedMoeBackends(method), ", ")));
    return;
  }
  if (const std::optional<DeviceCapability>& gpu = config.cache.device_capability) {
    if (const std::string runs_on = internal::FusedMoeBackendGpuRefusal(method, backend, *gpu);
        !runs_on.empty()) {
      b.Error("moe-backend",
              fmt::format("{}: its {} kernels run on {}, not {}: the engine raises {} ('... "
                          "does not support the deployment configuration since kernel does not "
                          "support current device'); pick another MoE backend",
                          experts, backend, runs_on, config.cache.DeviceCapabilityText(), built));
    }
  }
  const int64_t ep_ranks = ExpertParallelRanks(config);
  if (const std::string kernels = internal::FusedMoeBackendRefusesExpertParallel(method, backend);
      !kernels.empty() && config.enable_expert_parallel && ep_ranks > 1) {
    b.Error("moe-backend",
            fmt::format("{} and --enable-expert-parallel over {} ranks: its {} kernels take no "
                        "expert parallelism, so the engine raises {} ('... does not support the "
                        "deployment configuration since kernel does not support parallel "
                        "config'); drop --enable-expert-parallel or pick another MoE backend",
                        experts, ep_ranks, kernels, built));
  }
}

// Under --enable-eplb, where FusedMoE experts are placed (FusedMoE.__init__ at 28be48fa9): those
// that take EPLB hold the routed experts and --eplb-config's redundant ones in equal shares over
// the expert-parallel ranks; those that take the redundant count without EPLB assert it is 0
// under expert parallelism, which EPLB always runs under (it needs --enable-expert-parallel and
// TP x DP above 1, the launch options' checks). `what` names the target.
void CheckExpertPlacement(const LaunchConfig& config, const ModelDescription& m,
                          const std::string& what, Builder& b) {
  const int64_t ep_ranks = ExpertParallelRanks(config);
  const int64_t redundant = config.num_redundant_experts;
  if (internal::ExpertsTakeEplb(m.architecture)) {
    // Both counts are at least 0 and at most 2^63 - 1: their sum fits 64 unsigned bits.
    const uint64_t physical =
        static_cast<uint64_t>(m.num_experts) + static_cast<uint64_t>(redundant);
    if (physical % static_cast<uint64_t>(ep_ranks) == 0) {
      // EplbState.add_model, as the runner registers the loaded model: its logical-to-physical
      // map holds 1,024 slots per expert.
      if (redundant > 1023) {
        b.Error("eplb-experts",
                fmt::format("--eplb-config's num_redundant_experts {} with {}: the engine's EPLB "
                            "state asserts at most 1023 as it registers the model, once the "
                            "weights are loaded ('num_redundant_experts {} must be less than or "
                            "equal to 1023'); give 1023 or fewer",
                            redundant, what, redundant));
      }
      return;
    }
    b.Error("eplb-experts",
            fmt::format(
                "--enable-eplb with {}, whose config states {} routed experts{}: they do "
                "not split evenly over the {} expert-parallel ranks (DP {} x PCP {} x TP "
                "{}), so the engine's FusedMoE raises as it builds the model ('EPLB "
                "currently only supports even distribution of experts across ranks. Got "
                "{} experts and {} EP ranks.'); pick a layout whose ranks divide them{}",
                what, m.num_experts,
                redundant == 0 ? std::string()
                               : fmt::format(" and --eplb-config's {} redundant ones", redundant),
                ep_ranks, config.data_parallel_size, config.parallel.prefill_context_parallel_size,
                config.parallel.tensor_parallel_size, physical, ep_ranks,
                redundant == 0 ? ", or drop --enable-eplb" : ", or change num_redundant_experts"));
  } else if (internal::ExpertsTakeRedundantOnly(m.architecture) && redundant > 0) {
    b.Error("eplb-redundant",
            fmt::format("--eplb-config's num_redundant_experts {} with {}, whose experts take the "
                        "redundant count but not --enable-eplb: the engine's FusedMoE asserts as "
                        "it builds the model under expert parallelism ('Redundant experts are "
                        "only supported with EPLB.'); drop num_redundant_experts",
                        redundant, what));
  }
}

// The FusedMoE method the engine builds for the target's experts, where kvtopo reads it: a model
// whose experts are FusedMoE layers and whose weights are known (a quantization method, or a
// checkpoint rather than an embedded profile); nullopt otherwise.
std::optional<internal::FusedMoeMethod> TargetFusedMoeMethod(
    const LaunchConfig& config, const ModelDescription& m, const std::string& file,
    const std::optional<std::string>& quantization, const nlohmann::json& quantization_config) {
  if (m.BuiltExperts() == 0 || m.deepseek_v4) return std::nullopt;
  const bool weights_known = quantization || !file.starts_with("profiles/");
  if (!weights_known || !internal::ExpertsAreFusedMoe(m.architecture)) return std::nullopt;
  // The experts' width per rank, which compressed-tensors' choice of MoE method reads: whole
  // under expert parallelism (not known otherwise).
  const internal::MoeShape shape{
      .hidden_size = m.hidden_size,
      .intermediate_per_rank = config.enable_expert_parallel ? m.moe_intermediate_size : 0,
      .router_weight_on_input = m.architecture.starts_with("Llama4For")};
  return internal::FusedMoeMethodFor(quantization, config.enable_lora, "fp4", quantization_config,
                                     shape);
}

// A MoE target's experts as the engine builds them (the fork at 28be48fa9; none where the model
// builds no expert layers, whatever count its config states: BuiltExperts): FusedMoE layers map
// a --moe-backend other than auto through their quantization method's kernel family and raise
// for a name outside it, and raise with --enable-eplb where the model passes it on
// (ExpertsTakeEplb) and the method does not support it (internal::FusedMoeMethodFor); MiniCPM's
// own MoE raises with --enable-eplb. DeepSeek-V4 has checks of its own (BuildDeepseekV4). An
// embedded profile that states no quantization stands for checkpoints of several methods (its
// Hugging Face repos), so its weights' method is not known unless --quantization names it.
void CheckMoeKernels(const LaunchConfig& config, const ModelDescription& m,
                     const internal::LoadedConfig& target,
                     const std::optional<std::string>& quantization,
                     const nlohmann::json& quantization_config, Builder& b) {
  if (m.BuiltExperts() == 0 || m.deepseek_v4) return;
  const std::string& file = target.file;
  const std::string what = fmt::format("'{}' ({})", file, m.architecture);
  if (config.enable_eplb &&
      (m.architecture == "MiniCPMForCausalLM" || m.architecture == "MiniCPM3ForCausalLM")) {
    b.Error("eplb-model",
            fmt::format("--enable-eplb with {}, whose config states {} experts: the engine "
                        "raises as it builds the model ('EPLB is not supported for MiniCPM "
                        "yet.'); drop --enable-eplb",
                        what, m.num_experts));
  }
  if (config.enable_eplb && internal::ExpertsAreFusedMoe(m.architecture)) {
    CheckExpertPlacement(config, m, what, b);
  }
  const std::optional<internal::FusedMoeMethod> built =
      TargetFusedMoeMethod(config, m, file, quantization, quantization_config);
  if (!built) return;
  const internal::FusedMoeMethod& method = *built;
  const std::string weights =
      quantization ? fmt::format("its {} weights", *quantization) : "its unquantized weights";
  CheckNamedMoeBackend(method, config.moe_backend, config.moe_backend_from, what,
                       fmt::format(" for {}", weights), "as it builds the model", config, b);
  if (config.enable_eplb && internal::ExpertsTakeEplb(m.architecture) &&
      method.supports_eplb == false) {
    b.Error("eplb-quantization",
            fmt::format("--enable-eplb with {}, whose experts run {} for {}, which does not "
                        "support expert-parallel load balancing: the engine's FusedMoE raises as "
                        "it builds the model ({}); drop --enable-eplb",
                        what, method.engine_class, weights,
                        method.engine_class.find(' ') == std::string_view::npos
                            ? fmt::format("'EPLB is not supported {}.'", method.engine_class)
                            : std::string("'EPLB is not supported ' and the class")));
  }
}

// A MoE class whose MoE layers raise as they are built where the tensor-parallel size is above
// the expert count its config states (ModelDescription::tp_checked_experts, the fork at
// 28be48fa9).
void CheckTensorParallelExperts(const LaunchConfig& config, const ModelDescription& m,
                                const std::string& file, Builder& b) {
  const int64_t tp = config.parallel.tensor_parallel_size;
  if (m.BuiltExperts() == 0 || m.tp_checked_experts == 0 || tp <= m.tp_checked_experts ||
      !m.transformers_backend.empty()) {
    return;
  }
  b.Error("moe-tensor-parallel",
          fmt::format("-tp {} with '{}' ({}), whose MoE layers hold {} expert{}: the engine's "
                      "MoE layer raises as it builds the model ('Tensor parallel size {} is "
                      "greater than the number of experts {}.'); use -tp {} or less",
                      tp, file, m.architecture, m.tp_checked_experts,
                      m.tp_checked_experts == 1 ? "" : "s", tp, m.tp_checked_experts_printed,
                      m.tp_checked_experts));
}

Result<std::vector<int64_t>> PipelinePartition(int64_t n, int64_t pp,
                                               const std::optional<std::string>& partition);

// The engine class that builds the text model's layers: a wrapper's language model, else the
// target's.
const std::string& TextEngineClass(const ModelDescription& m) {
  return m.language_model_architecture.empty() ? m.architecture : m.language_model_architecture;
}

// The target as a message names it, with the language model a wrapper builds: "'config.json'
// (InternVLChatModel, language model LlamaForCausalLM)".
std::string TextModelWhat(const ModelDescription& m, const std::string& file) {
  const std::string& engine_class = TextEngineClass(m);
  return engine_class == m.architecture
             ? fmt::format("'{}' ({})", file, m.architecture)
             : fmt::format("'{}' ({}, language model {})", file, m.architecture, engine_class);
}

// A MoE class that raises as it builds the model where the layers it builds hold no experts (the
// fork at 28be48fa9: its MixtureOfExperts setup looks for one among its own pipeline stage's
// layers, the others being PPMissingLayer; internal::NoExpertLayerError): refused where the
// config's layer rule (ModelDescription::expert_layers) leaves the whole model, or a stage of
// --pipeline-parallel-size and VLLM_PP_LAYER_PARTITION, without one.
void CheckExpertLayers(const LaunchConfig& config, const ModelDescription& m,
                       const std::string& file, Builder& b) {
  const std::string& engine_class = TextEngineClass(m);
  const auto [raises, per_stage_only] = internal::NoExpertLayerError(engine_class);
  const int64_t n = m.num_hidden_layers;
  // The Transformers backend builds Transformers' model, not the engine's class.
  if (raises.empty() || m.num_experts == 0 || n <= 0 || !m.transformers_backend.empty()) return;
  if (m.expert_layers.empty() ? !m.builds_no_experts
                              : static_cast<int64_t>(m.expert_layers.size()) != n) {
    return;
  }
  const std::string what = TextModelWhat(m, file);
  const std::string keys = internal::ExpertLayerKeys(engine_class);
  if (m.BuiltExperts() == 0) {
    if (per_stage_only) return;
    b.Error("expert-layers",
            fmt::format("{} states {} expert{}, but its layers build them only as {} choose, "
                        "and none of its {} layers does: the engine's {} raises as it builds the "
                        "model ('{}'); give the config layers with experts",
                        what, m.num_experts, m.num_experts == 1 ? "" : "s", keys, n, engine_class,
                        raises));
    return;
  }
  const int64_t pp = config.pipeline_parallel_size;
  Result<std::vector<int64_t>> parts = PipelinePartition(n, pp, config.pp_layer_partition);
  if (!parts.ok()) return;  // refused with the stages (AssignPipelineStages)
  std::vector<std::string> bare;
  int64_t start = 0;
  for (size_t stage = 0; stage < parts->size(); ++stage) {
    const int64_t end = start + (*parts)[stage];
    if (std::none_of(m.expert_layers.begin() + start, m.expert_layers.begin() + end,
                     [](bool experts) { return experts; })) {
      bare.push_back(end - start == 0 ? fmt::format("stage {} (no layer)", stage)
                     : end - start == 1
                         ? fmt::format("stage {} (layer {})", stage, start)
                         : fmt::format("stage {} (layers {} to {})", stage, start, end - 1));
    }
    start = end;
  }
  if (bare.empty()) return;
  b.Error("expert-layers",
          fmt::format("{} with --pipeline-parallel-size {}{}: {} builds no layer with experts (its "
                      "layers build them only as {} choose): the engine's {} raises as such a "
                      "stage builds its part of the model ('{}'); give every stage a layer with "
                      "experts (VLLM_PP_LAYER_PARTITION) or change --pipeline-parallel-size",
                      what, pp,
                      config.pp_layer_partition ? fmt::format(" and VLLM_PP_LAYER_PARTITION '{}'",
                                                              *config.pp_layer_partition)
                                                : "",
                      fmt::join(bare, ", "), keys, engine_class, raises));
}

// A text config whose activation the MLPs of the engine's class refuse as they are built
// (ModelDescription::unsupported_activation; the Transformers backend builds Transformers' MLPs,
// which take any activation Transformers knows).
// A draft's model config takes the default model implementation whatever --model-impl says
// (SpeculativeConfig builds it without one), so only another draft helps there.
void CheckMlpActivation(const ModelDescription& m, const std::string& file, bool draft,
                        Builder& b) {
  if (m.unsupported_activation_key.empty() || !m.transformers_backend.empty()) return;
  const std::string& engine_class = TextEngineClass(m);
  const std::string what = TextModelWhat(m, file);
  const std::string fails =
      m.unsupported_activation_asserts.empty()
          ? fmt::format("raises as it builds the {} ('Unsupported activation: {}. {}')",
                        draft ? "draft" : "model", m.unsupported_activation,
                        m.unsupported_activation_says)
          : fmt::format("fails an assertion as it builds the {} ('{}')", draft ? "draft" : "model",
                        m.unsupported_activation_asserts);
  b.Error("mlp-activation",
          fmt::format("{}{} states {} {}, but the engine's {} builds an MLP {}: it {}; {}",
                      draft ? "--speculative-config draft " : "", what,
                      m.unsupported_activation_key, m.unsupported_activation_json, engine_class,
                      m.unsupported_activation_where, fails,
                      draft ? "choose a draft whose config states silu"
                            : "serve a silu model, or pass --model-impl transformers"));
}

// --enable-eplb where the engine's model runner finds no MoE model to balance (the fork at
// 28be48fa9): GPUModelRunner.load_model registers the model, or a multimodal class's language
// model, only where it is the engine's MixtureOfExperts with MoE layers (is_mixture_of_experts),
// and the profile run's first forward at startup then asserts without one (eplb_step: 'assert
// self._moe_model is not None'). A config whose stated experts build no MoE layer has none
// (BuiltExperts); the classes without the interface are internal::EplbFindsNoMoeModel. The
// experts' own EPLB checks, as the model is built, come first (CheckMoeKernels). The V2 model
// runner, which a MoE model runs only under VLLM_USE_V2_MODEL_RUNNER=1, steps EPLB only once a
// model is registered (v1/worker/gpu/eplb_utils.py), so there nothing asserts.
void CheckEplbModel(const LaunchConfig& config, const ModelDescription& m, const std::string& file,
                    Builder& b) {
  if (!config.enable_eplb || m.num_experts == 0 || config.use_v2_model_runner == true) return;
  std::string why;
  if (m.BuiltExperts() == 0) {
    why = fmt::format("whose config states {} expert{} but builds no MoE layer", m.num_experts,
                      m.num_experts == 1 ? "" : "s");
  } else if (internal::EplbFindsNoMoeModel(m.architecture)) {
    why =
        "whose engine class (or the language model it wraps) is not the MixtureOfExperts "
        "model the engine balances";
  } else if (!m.language_model_architecture.empty() &&
             internal::EplbFindsNoMoeModel(m.language_model_architecture)) {
    why =
        fmt::format("whose language model {} is not the MixtureOfExperts model the engine balances",
                    m.language_model_architecture);
  } else {
    return;
  }
  b.Error("eplb-model",
          fmt::format("--enable-eplb with '{}' ({}), {}: the engine's model runner registers no "
                      "model for expert-parallel load balancing, and the profile run's first "
                      "forward at startup asserts ('assert self._moe_model is not None'); drop "
                      "--enable-eplb",
                      file, m.architecture, why));
}

// The multimodal flags not planned with, checked as the engine checks them for a model with
// multimodal inputs (it builds MultiModalConfig for no other, so a text model ignores them):
// MultimodalFlagRefusal's rules, the renderer's workers beside the processor cache
// (ModelConfig.__post_init__; an encoder-decoder model runs without the cache) and torch_shm
// tensor IPC on one GPU only (ModelConfig.verify_with_parallel_config).
void CheckMultimodalFlags(const LaunchConfig& config, const ModelDescription& m,
                          const std::string& file, Builder& b) {
  if (!internal::IsMultimodalTarget(m.architecture)) return;
  const std::vector<VllmFlagValue>& given = config.not_planned_values;
  if (const std::string refusal =
          MultimodalFlagRefusal(given, fmt::format("'{}' ({})", file, m.architecture));
      !refusal.empty()) {
    b.Error("multimodal-options", refusal);
    return;
  }
  const auto value = [&](std::string_view flag) { return VllmFlagText(given, flag); };
  const bool encoder_decoder = std::any_of(m.layers.begin(), m.layers.end(),
                                           [](const RawLayer& l) { return l.cross_attention; });
  const std::optional<std::string> workers = value("--renderer-num-workers");
  const std::optional<std::string> cache_gb = value("--mm-processor-cache-gb");
  // Both already read as the engine's parser reads them (CheckVllmFlagValues).
  const auto number = [](const std::string& text) { return ParsePythonFloat(text).value_or(0); };
  const bool cache_on = !encoder_decoder && (!cache_gb || number(*cache_gb) > 0);
  if (workers && number(*workers) > 1 && cache_on) {
    b.Error("multimodal-options",
            fmt::format("--renderer-num-workers {} with '{}' ({}), a model with multimodal "
                        "inputs, and its processor cache on ({} GiB): the engine refuses it as it "
                        "builds its model config "
                        "('Cannot use --renderer-num-workers > 1 with the multimodal processor "
                        "cache enabled.'); set --renderer-num-workers 1 or --mm-processor-cache-gb "
                        "0",
                        *workers, file, m.architecture, cache_gb.value_or("4")));
  }
  // A LaunchConfig built in code may hold any sizes: an overflowing product is more than one.
  const Result<int64_t> world = internal::CheckedProduct(
      {config.parallel.tensor_parallel_size, config.pipeline_parallel_size,
       config.parallel.prefill_context_parallel_size, config.data_parallel_size},
      "the GPUs");
  if (value("--mm-tensor-ipc") == "torch_shm" && (!world.ok() || *world > 1)) {
    b.Error("multimodal-options",
            fmt::format("--mm-tensor-ipc torch_shm with '{}' ({}) on {} GPUs: the engine refuses "
                        "it as it checks the parallel layout (\"mm_tensor_ipc='torch_shm' is not "
                        "supported with data_parallel_size > 1 or tensor_parallel_size > 1 or "
                        "pipeline_parallel_size > 1.\"); use direct_rpc",
                        file, m.architecture,
                        world.ok() ? std::to_string(*world) : std::string("more than 2^63")));
  } else if (value("--mm-tensor-ipc") == "torch_shm" && config.worker_multiproc_method != "spawn") {
    // VllmConfig.__post_init__.
    b.Error("multimodal-options",
            fmt::format("--mm-tensor-ipc torch_shm with '{}' ({}) while the workers start by {} "
                        "(VLLM_WORKER_MULTIPROC_METHOD, --worker-multiproc-method): the engine "
                        "refuses it as it builds its config ('torch_shm is known to fail without "
                        "VLLM_WORKER_MULTIPROC_METHOD set to spawn'); unset the variable, which "
                        "`vllm serve` then sets to spawn, or set it to spawn",
                        file, m.architecture, config.worker_multiproc_method));
  }
}

// --fully-sharded-loras (with --enable-lora) as the engine's LoRA layers take it once the weights
// are loaded (vllm/lora/layers/base_linear.py and fused_moe.py at 28be48fa9), each with the
// divide() assert ('A is not divisible by B'), in the order the manager wraps a decoder layer's
// modules: column-parallel layers split the rank over the TP ranks, row-parallel ones their
// output (the hidden size); FusedMoE experts assert against expert parallelism, else split the
// rank and the hidden size over their own TP ranks (DP x PCP x TP, flattened). With
// --lora-target-modules only some layers are wrapped: not checked. The first failure, as the
// engine stops at it.
void CheckFullyShardedLora(const LaunchConfig& config, const ModelDescription& m,
                           const std::string& what, Builder& b) {
  const auto given = [&](std::string_view flag) {
    const VllmFlagValue* v = FindVllmFlagValue(config.not_planned_values, flag);
    return v != nullptr && (v->on.value_or(false) || !v->values.empty());
  };
  if (!given("--fully-sharded-loras") || given("--lora-target-modules")) return;
  const int64_t rank = config.max_lora_rank;
  const int64_t tp = config.parallel.tensor_parallel_size;
  const int64_t hidden = m.hidden_size;
  const auto refuse = [&](std::string_view layers, std::string_view split, int64_t n, int64_t ranks,
                          std::string_view fix) {
    b.Error("lora-sharding",
            fmt::format("--fully-sharded-loras with {}: {} split {} over {} ranks, and the engine "
                        "asserts as it builds them once the weights are loaded ('{} is not "
                        "divisible by {}'); {}",
                        what, layers, split, ranks, n, ranks, fix));
  };
  if (rank % tp != 0) {
    return refuse(
        "its column-parallel LoRA layers", fmt::format("the rank ({}, --max-lora-rank)", rank),
        rank, tp,
        fmt::format("pick a --max-lora-rank {} divides, or drop --fully-sharded-loras", tp));
  }
  if (hidden > 0 && hidden % tp != 0) {
    return refuse("its row-parallel LoRA layers",
                  fmt::format("their output (the hidden size, {})", hidden), hidden, tp,
                  "drop --fully-sharded-loras");
  }
  if (m.BuiltExperts() == 0 || !internal::ExpertsAreFusedMoe(m.architecture)) return;
  const int64_t moe_ranks = ExpertParallelRanks(config);
  if (config.enable_expert_parallel && moe_ranks > 1) {
    b.Error("lora-sharding",
            fmt::format("--fully-sharded-loras with {}, whose experts run under expert parallelism "
                        "over {} ranks: the engine's LoRA layer for them asserts once the weights "
                        "are loaded ('Fused MoE LoRA does not support enable_expert_parallel=True "
                        "together with fully_sharded_loras=True. Disable one of them.'); drop one "
                        "of them",
                        what, moe_ranks));
    return;
  }
  const std::string experts =
      fmt::format("its experts' LoRA layers (TP over DP {} x PCP {} x TP {})",
                  config.data_parallel_size, config.parallel.prefill_context_parallel_size, tp);
  if (rank % moe_ranks != 0) {
    return refuse(
        experts, fmt::format("the rank ({}, --max-lora-rank)", rank), rank, moe_ranks,
        fmt::format("pick a --max-lora-rank {} divides, or drop --fully-sharded-loras", moe_ranks));
  }
  if (hidden > 0 && hidden % moe_ranks != 0) {
    return refuse(experts, fmt::format("the hidden size ({})", hidden), hidden, moe_ranks,
                  "drop --fully-sharded-loras");
  }
}

// The output head under LoRA (the fork at 28be48fa9): where the LoRA manager wraps lm_head (the
// class, or a wrapper's language model, lists it in embedding_modules: LoraWrapsLmHead) and
// --lora-target-modules, when given, names it (the suffix or the whole module name), it wraps
// the logits processor too, whose LoRA weights refuse a vocabulary above 258,048 tokens as the
// manager is built once the weights are loaded (lora/layers/logits_processor.py). The vocabulary
// is the text model's vocab_size, which every such class passes to its logits processor. A
// multimodal wrapper keeps its language model, and so the head, as `language_model`.
void CheckLoraOutputHead(const LaunchConfig& config, const ModelDescription& m,
                         const std::string& what, Builder& b) {
  constexpr int64_t kLoraVocabLimit = 258048;
  if (m.vocab_size <= kLoraVocabLimit) return;
  const bool registered = !m.language_model_architecture.empty();
  if (!internal::LoraWrapsLmHead(registered ? m.language_model_architecture : m.architecture)) {
    return;
  }
  const std::string module = registered || internal::IsMultimodalTarget(m.architecture)
                                 ? "language_model.lm_head"
                                 : "lm_head";
  if (const VllmFlagValue* targets =
          FindVllmFlagValue(config.not_planned_values, "--lora-target-modules");
      targets != nullptr && !targets->values.empty() &&
      std::none_of(targets->values.begin(), targets->values.end(),
                   [&](const std::string& t) { return t == "lm_head" || t == module; })) {
    return;
  }
  b.Error("lora-model",
          fmt::format("--enable-lora with {}, whose vocabulary ({} tokens) is above the 258048 "
                      "the engine's LoRA logits processor takes: the LoRA manager wraps its "
                      "output head ({}) and fails once the weights are loaded ('When using LoRA, "
                      "vocab size must be <= 258048'); leave lm_head out of "
                      "--lora-target-modules, or drop --enable-lora",
                      what, m.vocab_size, module));
}

// --default-mm-loras against a text-only target, and --enable-lora against the target's class (the
// fork at 28be48fa9): the GPU model runner's
// load_lora_model refuses a class without the SupportsLoRA interface once the weights are loaded
// (ClassLackingLora); Mamba2's and Zamba2's models assert against LoRA as they are built, and
// EXAONE MoE's reads a LoRA config field the engine no longer has; FusedMoE experts wrapped for
// LoRA under expert parallelism assert the default all-to-all backend. The Transformers modeling
// backend's classes support LoRA.
void CheckLora(const LaunchConfig& config, const ModelDescription& m, const std::string& file,
               Builder& b) {
  const std::string what = fmt::format("'{}' ({})", file, m.architecture);
  // EngineArgs.create_engine_config, with or without --enable-lora.
  if (config.default_mm_loras && !internal::IsMultimodalTarget(m.architecture)) {
    b.Error("lora-model",
            fmt::format("--default-mm-loras with {}, which takes no multimodal inputs: the "
                        "engine refuses it ('Default modality-specific LoRA(s) were provided for "
                        "a non multimodal model'); drop --default-mm-loras",
                        what));
  }
  if (!config.enable_lora || !m.transformers_backend.empty()) return;
  if (m.architecture == "Mamba2ForCausalLM" || m.architecture == "Zamba2ForCausalLM") {
    b.Error("lora-model",
            fmt::format("--enable-lora with {}: the engine's model asserts as it builds its layers "
                        "('assert not is_lora_enabled'), before the weights load; drop "
                        "--enable-lora",
                        what));
    return;
  }
  if (m.architecture == "ExaoneMoEForCausalLM") {
    b.Error("lora-model",
            fmt::format("--enable-lora with {}: the engine's model reads a LoRA config field the "
                        "engine no longer has as it builds its layers (\"'LoRAConfig' object has "
                        "no attribute 'lora_extra_vocab_size'\"); drop --enable-lora",
                        what));
    return;
  }
  if (const std::string_view engine_class = internal::ClassLackingLora(m.architecture);
      !engine_class.empty()) {
    b.Error("lora-model",
            fmt::format("--enable-lora with {}, whose engine class {} lacks the SupportsLoRA "
                        "interface: the engine fails once the weights are loaded ('{} does not "
                        "support LoRA yet.'); drop --enable-lora",
                        what, engine_class, engine_class));
    return;
  }
  if (m.BuiltExperts() > 0 && internal::MoeLacksExpertMapping(m.architecture)) {
    b.Error("lora-model",
            fmt::format("--enable-lora with {}, whose {} experts the engine's LoRA manager cannot "
                        "map (neither its class nor a direct child has get_expert_mapping): the "
                        "engine fails once the weights are loaded (\"To support LoRA for MoE "
                        "model, 'get_expert_mapping' must be implemented\"); drop --enable-lora",
                        what, m.num_experts));
    return;
  }
  if (m.BuiltExperts() > 0 && !m.language_model_architecture.empty() &&
      internal::LanguageModelLacksExpertMapping(m.language_model_architecture)) {
    b.Error("lora-model",
            fmt::format("--enable-lora with {}, whose language model {} ({} experts) has no "
                        "get_expert_mapping of its own, and the engine's LoRA manager looks for "
                        "it on the model and its direct children only: the engine fails once the "
                        "weights are loaded (\"To support LoRA for MoE model, 'get_expert_mapping' "
                        "must be implemented\"); drop --enable-lora",
                        what, m.language_model_architecture, m.num_experts));
    return;
  }
  CheckFullyShardedLora(config, m, what, b);
  if (m.BuiltExperts() > 0 && internal::ExpertsAreFusedMoe(m.architecture) &&
      config.enable_expert_parallel && ExpertParallelRanks(config) > 1 &&
      config.all2all_backend != "allgather_reducescatter") {
    b.Error("lora-model",
            fmt::format("--enable-lora with {}, whose experts run under expert parallelism with "
                        "--all2all-backend {}: the engine's LoRA layer for them asserts once the "
                        "weights are loaded ('Fused MoE LoRA with EP currently only supports "
                        "all2all_backend='allgather_reducescatter', got '{}'.'); use "
                        "allgather_reducescatter or drop --enable-lora",
                        what, config.all2all_backend, config.all2all_backend));
  }
  CheckLoraOutputHead(config, m, what, b);
}

// Whether sequence parallelism stays on (VllmConfig.__post_init__ at 28be48fa9): asked for by
// pass_config.enable_sp or fuse_gemm_comms, at TP above 1, with a threshold: sp_min_token_num as
// given, else get_sequence_parallelism_threshold's, which has one on compute capability 9.0 and
// 10.x for a text hidden size of 8,192 or more and none elsewhere (sequence parallelism off).
// Unset where that decides and the launch states no GPU.
std::optional<bool> SequenceParallelismOn(const LaunchConfig& config, const ModelDescription& m) {
  const LaunchConfig::Compilation& cc = config.compilation;
  if (!cc.sequence_parallelism || config.parallel.tensor_parallel_size <= 1) return false;
  if (cc.sp_min_token_num) return true;
  const std::optional<DeviceCapability>& gpu = config.cache.device_capability;
  if (!gpu) return std::nullopt;
  const bool tuned = gpu->major == 10 || (gpu->major == 9 && gpu->minor == 0);
  return tuned && m.hidden_size >= 8192;
}

// VLLM_USE_V2_MODEL_RUNNER=1 with what the V2 model runner does not yet support: VllmConfig
// raises at startup (_validate_v2_model_runner at 28be48fa9), naming every such feature in its
// order: the model's inner state first (HasInnerState), then the launch's
// (LaunchConfig::v2_runner_unsupported), sequence parallelism where it stays on among them.
// Where the launch states neither sp_min_token_num nor the GPU, whether it stays on is not known:
// a warning.
void CheckV2ModelRunner(const LaunchConfig& config, const ModelDescription& m,
                        const std::string& file, Builder& b) {
  if (config.use_v2_model_runner != true) return;
  std::vector<std::string> unsupported;
  if (internal::HasInnerState(m.architecture)) unsupported.push_back("hybrid/mamba models");
  unsupported.insert(unsupported.end(), config.v2_runner_unsupported.begin(),
                     config.v2_runner_unsupported.end());
  const std::optional<bool> sequence_parallel = SequenceParallelismOn(config, m);
  if (sequence_parallel == true) {
    // After the model's inner state, PCP and stock torch.compile, in the engine's order.
    const auto after = std::find_if(unsupported.begin(), unsupported.end(), [](const auto& f) {
      return f != "hybrid/mamba models" && f != "prefill context parallelism" &&
             f != "stock torch.compile";
    });
    unsupported.insert(after, "sequence parallelism");
  }
  if (!unsupported.empty()) {
    b.Error("v2-model-runner",
            fmt::format("VLLM_USE_V2_MODEL_RUNNER=1 (--use-v2-model-runner) with '{}' ({}): the "
                        "engine refuses it at startup ('VLLM_USE_V2_MODEL_RUNNER does not yet "
                        "support: {}'); unset it, or drop what it names",
                        file, m.architecture, fmt::join(unsupported, ", ")));
  }
  if (!sequence_parallel) {
    b.Add(Severity::kWarning, "v2-model-runner-sequence-parallelism",
          fmt::format("VLLM_USE_V2_MODEL_RUNNER=1 (--use-v2-model-runner) with sequence "
                      "parallelism (--compilation-config pass_config.enable_sp or "
                      "fuse_gemm_comms) at --tensor-parallel-size {} without sp_min_token_num: "
                      "the engine's threshold depends on the GPU, and where sequence parallelism "
                      "stays on it refuses the V2 runner ('... does not yet support: sequence "
                      "parallelism'); give --device-capability or pass_config.sp_min_token_num "
                      "to have it checked",
                      config.parallel.tensor_parallel_size));
  }
}

// The architectures the engine runs on its V2 model runner when VLLM_USE_V2_MODEL_RUNNER is
// unset (DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES at 28be48fa9), given what that runner needs.
constexpr std::string_view kDefaultV2RunnerArchitectures[] = {"Qwen3ForCausalLM"};

// Whether the workers run the V1 model runner with model `m` (config `json`): 1 yes, 0 no, -1
// not known. VLLM_USE_V2_MODEL_RUNNER decides where it is set. Unset, the engine runs V1 for an
// architecture outside its default-V2 list, and for one inside it too when the model is MoE, the
// checkpoint has a quantization_config (is_quantized) or the launch has what the V2 runner does
// not yet support (LaunchConfig::v2_runner_unsupported, sequence parallelism that stays on);
// otherwise V2, unless an installed logits-processor plugin keeps V1, which is not known here.
int V1RunnerState(const LaunchConfig& config, const ModelDescription& m,
                  const nlohmann::json& json) {
  if (config.use_v2_model_runner) return *config.use_v2_model_runner ? 0 : 1;
  if (std::find(std::begin(kDefaultV2RunnerArchitectures), std::end(kDefaultV2RunnerArchitectures),
                m.architecture) == std::end(kDefaultV2RunnerArchitectures)) {
    return 1;
  }
  const auto q = json.find("quantization_config");
  const bool quantized = q != json.end() && !q->is_null();
  const bool keeps_v1 = m.num_experts > 0 || quantized || !config.v2_runner_unsupported.empty() ||
                        SequenceParallelismOn(config, m) == true;
  return keeps_v1 ? 1 : -1;
}

// The classes and layers whose modules the engine imports with model `m` (config `json`): its
// class (none on the Transformers backend, whose class builds its own layers), the registered
// language model a wrapper builds (language_model_architecture, else
// import_read_language_models), and the kinds of layers the workers build (MTP layers come with
// the MTP draft's class).
ImportingModel ImportingModelOf(const ModelDescription& m, const nlohmann::json& json) {
  ImportingModel out;
  if (!m.transformers_backend.empty()) return out;
  out.classes.push_back(m.architecture);
  if (!m.language_model_architecture.empty()) {
    out.built_classes.push_back(m.language_model_architecture);
  } else if (const std::optional<ImportReadLanguageModel> lm =
                 ImportReadLanguageModelOf(m.architecture)) {
    std::string built = lm->architecture;
    const auto section = lm->section.empty() ? json.end() : json.find(lm->section);
    if (section != json.end() && section->is_object()) {
      const auto named = section->find("architectures");
      if (named != section->end() && named->is_array() && !named->empty() &&
          named->front().is_string()) {
        built = named->front().get<std::string>();
      }
    }
    out.built_classes.push_back(std::move(built));
  }
  for (const RawLayer& l : m.layers) {
    if (l.mtp) continue;
    // An indexer key kept in the MLA page's tail is an indexer layer too.
    const bool indexer = l.type == LayerType::kIndexer ||
                         (l.type == LayerType::kMla && l.page_tail_bytes_per_token > 0);
    const char* kind = l.type == LayerType::kKda   ? "kda"
                       : l.type == LayerType::kGdn ? "gdn"
                       : indexer                   ? "indexer"
                                                   : nullptr;
    if (kind != nullptr && std::find(out.built_layers.begin(), out.built_layers.end(), kind) ==
                               out.built_layers.end()) {
      out.built_layers.emplace_back(kind);
    }
  }
  return out;
}

// Where the engine imports a refused variable's module, for the message: `m` is the target, or a
// separate draft named `draft`.
std::string ImportedModuleWhere(const ImportedEnvironmentRefusal& r, const ModelDescription& m,
                                std::string_view draft) {
  using Where = ImportedEnvironmentRefusal::Where;
  const std::string_view model = draft.empty() ? "model" : "draft";
  switch (r.where) {
    case Where::kModel: {
      // The target's own class, else a draft's: a separate draft, or the MTP draft's type.
      const bool target = draft.empty() && r.model == m.architecture;
      const std::string cls =
          target          ? fmt::format("the model class of {}", r.model)
          : draft.empty() ? fmt::format("the MTP draft's model class (model type {})", r.model)
                          : fmt::format("the draft's model class {} (draft '{}')", r.model, draft);
      return fmt::format(
          "with {}, which it loads as it inspects the {} (unless its model-info cache holds the "
          "class) and as its workers build the {}",
          cls, target ? "architecture" : "draft's architecture", target ? "model" : "draft");
    }
    case Where::kEveryWorker:
      return "in every GPU worker as it starts";
    case Where::kV1Runner:  // they import it as they start, before they build the model
      return "in the workers of its V1 model runner as they start";
    case Where::kModelBuild:
      if (r.built_layers) return fmt::format("as its workers build the {}'s {}", model, r.built);
      return fmt::format(
          "with the model class of {}, the language model {} builds, as its "
          "workers build the {}",
          r.built, m.architecture, model);
  }
  return "";
}

// One error for `refusals` of model `m` (a separate draft named `draft`, else the target): the
// engine stops at the first; the others are named.
void ReportImportRefusals(const std::vector<ImportedEnvironmentRefusal>& refusals,
                          const ModelDescription& m, std::string_view draft, Builder& b) {
  if (refusals.empty()) return;
  const ImportedEnvironmentRefusal& r = refusals.front();
  std::string error = fmt::format(
      "{} is {}, which the engine cannot read: {}, and the engine imports that module {}, so it "
      "fails to start before the weights load; {} or unset it",
      r.name, r.value, r.reads, ImportedModuleWhere(r, m, draft), r.fix);
  if (refusals.size() > 1) {
    std::vector<std::string> more;
    for (auto it = refusals.begin() + 1; it != refusals.end(); ++it) more.push_back(it->name);
    error += fmt::format(" (the engine cannot read {} either)", fmt::join(more, ", "));
  }
  b.Error("environment-import", error);
}

// Variables the engine's modules read as they are imported, outside vllm/envs.py
// (ImportedEnvironmentRefusals): a value their reader cannot read fails the start where the
// module is imported, before the weights load: with the model class of the architecture (or of
// the MTP draft, its type after the speculative config's override), which the engine loads as it
// inspects it (in a subprocess, unless its model-info cache holds the class) and as its workers
// build the model; with a class or layers the model builds (a wrapper's language model, KDA,
// Gated DeltaNet or sparse-indexer layers), as the workers build it; in every GPU worker; or in
// the workers of the V1 model runner. The engine runs the V1 runner unless
// VLLM_USE_V2_MODEL_RUNNER=1, or, unset, for an architecture of
// DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES (Qwen3ForCausalLM at 28be48fa9) that is neither MoE nor
// quantized and whose launch that runner supports (VllmConfig.use_v2_model_runner), where
// kvtopo warns. A model run through the Transformers backend imports the backend's class
// instead of the architecture's. `v1_runner` is V1RunnerState's. Returns the variables refused,
// which a separate draft's check (CheckDraftImportedEnvironment) leaves to this one.
std::vector<std::string> CheckImportedEnvironment(const LaunchConfig& config,
                                                  const ModelDescription& m,
                                                  const internal::LoadedConfig& target,
                                                  int v1_runner, Builder& b) {
  if (config.environment.empty()) return {};
  ImportingModel models = ImportingModelOf(m, target.json);
  // NvFP4 experts import the b12x kernels' module as their method picks its kernels
  // (select_nvfp4_moe_backend): --moe-backend b12x, or auto, which tries b12x first unless
  // VLLM_USE_FLASHINFER_MOE_FP4 is true (FlashInfer's kernels only) or VLLM_TEST_FORCE_FP8_MARLIN
  // is (Marlin only).
  const std::optional<internal::FusedMoeMethod> moe =
      TargetFusedMoeMethod(config, m, target.file, b.out.quantization, b.quantization_config);
  if (moe && moe->family == "NvFP4" &&
      (config.moe_backend == "b12x" ||
       (config.moe_backend == "auto" &&
        EnvironmentBool(config.environment, "VLLM_USE_FLASHINFER_MOE_FP4") != true &&
        EnvironmentBool(config.environment, "VLLM_TEST_FORCE_FP8_MARLIN") != true))) {
    models.built_layers.emplace_back("nvfp4_moe_b12x");
  }
  if (config.speculative && config.speculative->method == "mtp") {
    const std::string type = internal::MtpTypeAfterOverride(target.json);
    if (!type.empty()) models.classes.push_back(type);
  }
  using Where = ImportedEnvironmentRefusal::Where;
  std::vector<ImportedEnvironmentRefusal> refusals;
  for (ImportedEnvironmentRefusal& r : ImportedEnvironmentRefusals(config.environment, models)) {
    if (r.where == Where::kV1Runner && v1_runner != 1) {
      if (!r.built.empty()) {
        r.where = Where::kModelBuild;  // the model builds it on either runner
      } else {
        if (v1_runner == -1) {
          b.Add(Severity::kWarning, "environment-import",
                fmt::format("{} is {}, which the engine cannot read: {}, and the engine imports "
                            "that module in the workers of its V1 model runner as they start; "
                            "with VLLM_USE_V2_MODEL_RUNNER unset the engine runs {} on its V2 "
                            "runner unless a logits-processor plugin installed where it runs "
                            "keeps the V1 runner, on which it fails to start before the weights "
                            "load; {} or unset it",
                            r.name, r.value, r.reads, m.architecture, r.fix));
        }
        continue;
      }
    }
    refusals.push_back(std::move(r));
  }
  std::stable_sort(refusals.begin(), refusals.end(),
                   [](const auto& x, const auto& y) { return x.where < y.where; });
  ReportImportRefusals(refusals, m, "", b);
  std::vector<std::string> refused;
  for (const ImportedEnvironmentRefusal& r : refusals) refused.push_back(r.name);
  return refused;
}

// The same for a separate draft (named `name`, config `json`): its class, which the engine
// loads as it inspects the draft's architecture and as its workers build the draft, and the
// classes and layers the draft builds. What every worker and the V1 runner import is the
// target's check's, as are the variables that check refused.
void CheckDraftImportedEnvironment(const LaunchConfig& config, const ModelDescription& draft,
                                   const nlohmann::json& json, const std::string& name,
                                   const std::vector<std::string>& refused_for_target, Builder& b) {
  if (config.environment.empty()) return;
  using Where = ImportedEnvironmentRefusal::Where;
  std::vector<ImportedEnvironmentRefusal> refusals;
  for (ImportedEnvironmentRefusal& r :
       ImportedEnvironmentRefusals(config.environment, ImportingModelOf(draft, json))) {
    if (std::find(refused_for_target.begin(), refused_for_target.end(), r.name) !=
            refused_for_target.end() ||
        r.where == Where::kEveryWorker || (r.where == Where::kV1Runner && r.built.empty())) {
      continue;
    }
    if (r.where == Where::kV1Runner) r.where = Where::kModelBuild;
    refusals.push_back(std::move(r));
  }
  ReportImportRefusals(refusals, draft, name, b);
}

// The V2 model runner builds MTP layers under the target's config (load_eagle_model at
// 28be48fa9), so the speculative config's moe_backend goes unread.
void WarnDraftMoeBackendUnread(const std::string& backend, const std::string& mtp_layers,
                               const LaunchConfig& config, Builder& b) {
  b.Add(Severity::kWarning, "speculative-moe-backend-unread",
        fmt::format("--speculative-config's moe_backend {} is not read: the engine's V2 model "
                    "runner (VLLM_USE_V2_MODEL_RUNNER) builds {} under the target's config, with "
                    "the target's MoE kernels ({})",
                    backend, mtp_layers, config.moe_backend));
}

// The model types whose MTP layers build FusedMoE experts for a target with experts (the MTP
// draft classes at 28be48fa9: DeepSeekMTPModel for the first three, whose quantization config is
// rebuilt from the draft's checkpoint; Glm4MoeMTPModel, Glm4MoeLiteMTPModel, Qwen3NextMTP,
// Qwen3_5MoeMTP, OpenPanguMTPModel, HYV3MTPModel). The other MTP classes keep dense MLPs
// (MiMo, Ernie, EXAONE MoE, LongCat-Flash, GLM-OCR) or MoE only by their layer pattern
// (NemotronH, Step 3.5): not checked.
constexpr std::string_view kMtpMoeModelTypes[] = {"deepseek_v3", "deepseek_v32",    "glm_moe_dsa",
                                                  "glm4_moe",    "glm4_moe_lite",   "qwen3_next",
                                                  "qwen3_5_moe", "pangu_ultra_moe", "hy_v3"};

// A MoE target's MTP layers' kernels: the V1 model runner builds them under the draft's config
// (_create_draft_vllm_config), whose moe_backend is the speculative config's when given, once the
// target's weights are loaded; the V2 runner under the target's (load_eagle_model), leaving the
// speculative config's unread. The same kernels as the target's fail with it first. A
// DeepSeekMTPModel draft of a modelopt_fp4 checkpoint may build its experts unquantized (its
// rebuilt config keeps none without NextN FP4 experts): not known.
void CheckMtpMoeKernels(const LaunchConfig& config, const ModelDescription& m,
                        const internal::LoadedConfig& target,
                        const std::optional<std::string>& quantization,
                        const nlohmann::json& quantization_config, const SpeculativeConfig& spec,
                        Builder& b) {
  if (!spec.moe_backend || *spec.moe_backend == config.moe_backend || m.num_experts == 0) return;
  const std::string mtp_layers =
      fmt::format("the MTP layers of '{}' ({})", target.file, m.architecture);
  if (config.use_v2_model_runner == true) {
    WarnDraftMoeBackendUnread(*spec.moe_backend, mtp_layers, config, b);
    return;
  }
  const bool deepseek_mtp = m.model_type == "deepseek_v3" || m.model_type == "deepseek_v32" ||
                            m.model_type == "glm_moe_dsa";
  if (std::find(std::begin(kMtpMoeModelTypes), std::end(kMtpMoeModelTypes), m.model_type) ==
          std::end(kMtpMoeModelTypes) ||
      (deepseek_mtp && quantization == "modelopt_fp4") ||
      (!quantization && target.file.starts_with("profiles/"))) {
    return;
  }
  const internal::FusedMoeMethod method =
      internal::FusedMoeMethodFor(quantization, config.enable_lora, "fp4", quantization_config);
  CheckNamedMoeBackend(method, *spec.moe_backend, "--speculative-config's moe_backend", mtp_layers,
                       "",
                       "as its V1 model runner builds them under the draft's config, once the "
                       "target's weights are loaded",
                       config, b);
}

// The engine's head split under tensor parallelism: TP divides the attention heads
// (ModelConfig.verify_with_parallel_config refuses the launch otherwise), and a K/V attention
// layer's KV heads are split over TP or replicated across it, so one divides the other (the QKV
// projection's divide()). The engine checks a draft model's config with the draft's TP, the
// target's (SpeculativeConfig._verify_and_get_draft_tp); `whose` names the config in messages.
void CheckTensorParallelHeads(const ModelDescription& m, const std::string& whose, int64_t tp,
                              Builder& b) {
  if (tp <= 1) return;
  const int64_t heads = m.tp_checked_heads > 0 ? m.tp_checked_heads : m.num_attention_heads;
  if (heads % tp != 0) {
    b.Error("tp-attention-heads",
            fmt::format("--tensor-parallel-size {} does not divide the {} attention heads of "
                        "{}, and the engine refuses such a launch; choose a tensor-parallel size "
                        "that divides {}",
                        tp, heads, whose, heads));
    return;
  }
  if (m.tp_divides_group_norm > 0 && m.tp_divides_group_norm % tp != 0) {
    b.Error(
        "tp-group-norm",
        fmt::format("--tensor-parallel-size {} does not divide group_norm_size {} of {}, and "
                    "the engine's {} linear attention asserts that it does; choose a "
                    "tensor-parallel size that divides {}",
                    tp, m.tp_divides_group_norm, whose, m.architecture, m.tp_divides_group_norm));
    return;
  }
  std::vector<int64_t> reported;
  for (const RawLayer& raw : m.layers) {
    if (raw.type != LayerType::kAttention && raw.type != LayerType::kSlidingWindow &&
        raw.type != LayerType::kChunkedLocal) {
      continue;
    }
    if (raw.num_q_heads_total > 0 && raw.num_q_heads_total % tp != 0) {
      b.Error("tp-attention-heads",
              fmt::format("--tensor-parallel-size {} does not divide the {} attention heads of "
                          "layer '{}' ({}), and the engine's {} attention asserts that it does; "
                          "choose a tensor-parallel size that divides {}",
                          tp, raw.num_q_heads_total, raw.name, whose, m.architecture,
                          raw.num_q_heads_total));
      return;
    }
    const int64_t kv = raw.num_kv_heads_total;
    if (kv <= 0) continue;
    if (m.kv_heads_split_only && kv % tp != 0) {
      b.Error("tp-kv-heads",
              fmt::format("--tensor-parallel-size {} does not divide the {} KV heads of layer "
                          "'{}' ({}), and the engine's {} model splits them and cannot replicate "
                          "them; choose a tensor-parallel size that divides {}",
                          tp, kv, raw.name, whose, m.architecture, kv));
      return;
    }
    if ((kv >= tp ? kv % tp : tp % kv) == 0) continue;
    if (std::find(reported.begin(), reported.end(), kv) != reported.end()) continue;
    reported.push_back(kv);
    b.Error("tp-kv-heads",
            fmt::format("--tensor-parallel-size {} and the {} KV heads of layer '{}' ({}) do "
                        "not divide one into the other, so the engine can neither split nor "
                        "replicate them; choose a tensor-parallel size that divides {} or is a "
                        "multiple of it",
                        tp, kv, raw.name, whose, kv));
  }
}

// Tokens per step and rows (vLLM's _set_default_max_num_seqs_and_batched_tokens_args and
// SchedulerConfig.verify_max_model_len): a defaulted --max-num-batched-tokens is at most
// --max-num-seqs x the length and, without chunked prefill, at least the length (a prompt is
// scheduled whole); a given one below the length without chunked prefill, or below
// --max-num-seqs, is refused. `chunked_prefill`: whether the engine runs chunked prefill (never
// for an encoder-decoder model: SchedulerConfig.__post_init__ turns it off).
void ResolveStepLimits(const LaunchConfig& config, bool chunked_prefill, Builder& b) {
  const CacheOptions& cache = config.cache;
  const int64_t L = b.out.max_model_len;
  // Non-positive values are refused where they are used, naming the flag.
  if (cache.max_num_batched_tokens <= 0 || cache.max_num_seqs <= 0) return;
  int64_t batched = cache.max_num_batched_tokens;
  if (!config.max_num_batched_tokens_given) {
    if (!chunked_prefill) batched = std::max(batched, L);
    if (batched / cache.max_num_seqs >= L) batched = cache.max_num_seqs * L;  // no overflow
    if (batched != cache.max_num_batched_tokens) b.out.max_num_batched_tokens = batched;
  } else if (!chunked_prefill && batched < L) {
    b.Error("max-num-batched-tokens",
            fmt::format("--max-num-batched-tokens {} is below --max-model-len {} with chunked "
                        "prefill off: a prompt is scheduled whole, so the engine refuses it; "
                        "raise --max-num-batched-tokens, lower --max-model-len or enable "
                        "chunked prefill",
                        batched, L));
  }
  if (batched < cache.max_num_seqs) {
    b.Error("max-num-batched-tokens",
            fmt::format("--max-num-batched-tokens {} is below --max-num-seqs {}: the engine "
                        "refuses it; raise --max-num-batched-tokens or lower --max-num-seqs",
                        batched, cache.max_num_seqs));
  }
}

// A backend's CUDA graph support for layer `s`: the registry's, else, for FlashInfer, its
// builder's get_cudagraph_support at 28be48fa9: uniform batches where can_use_trtllm_attention
// holds (TRT-LLM attention not turned off, compute capability 10.x without VLLM_BATCH_INVARIANT:
// supports_trtllm_attention; the rank's query heads a multiple of its K/V heads), single-token
// decodes otherwise; nullopt where the GPU decides and is not stated.
std::optional<CudagraphSupport> CudagraphSupportOf(const BackendCaps& be, const LayerSpec& s,
                                                   const LaunchConfig& config) {
  if (be.cudagraph_support || be.gpu_dependence != GpuDependence::kTrtllmAttention) {
    return be.cudagraph_support;
  }
  // The builder asks can_use_trtllm_attention, whatever the decode context parallelism.
  const std::optional<DeviceCapability>& gpu = config.cache.device_capability;
  if (TrtllmAttentionOff(config.cache.use_trtllm_attention, /*dcp=*/1, gpu) ||
      (gpu && config.batch_invariant)) {
    return CudagraphSupport::kUniformSingleTokenDecode;
  }
  if (!gpu) return std::nullopt;
  const int64_t tp = std::max<int64_t>(1, config.parallel.tensor_parallel_size);
  const int64_t q = s.num_q_heads_total / tp;
  const int64_t kv = std::max<int64_t>(1, s.num_kv_heads_total / tp);
  return q > 0 && q % kv == 0 ? CudagraphSupport::kUniformBatch
                              : CudagraphSupport::kUniformSingleTokenDecode;
}

// With --device-capability, a backend nobody names is the engine's pick for the GPU
// (DefaultBackendName): where none of its candidates takes the `role` layers (`none_took`), the
// engine raises as it builds the model; where the pick is not the profile's default (kvtopo's
// assumption where the GPU is not known), the launch must name that one to get it.
void ReportDevicePick(Builder& b, const ModelDescription& m, std::string_view role,
                      const std::string& picked, const std::vector<std::string>& none_took,
                      std::string_view knob) {
  const std::optional<DeviceCapability>& gpu = b.config.cache.device_capability;
  if (!gpu) return;
  if (!none_took.empty()) {
    b.Error("backend-none-valid",
            fmt::format("none of the backends the engine tries for the {} layers of '{}' on "
                        "compute capability {} takes them ({}): the engine "
                        "raises ('No valid attention backend found') as it builds the model; "
                        "kvtopo plans {} for the other checks; name a backend that runs there "
                        "with {}, or change the launch (its cache dtype, block size) so that one "
                        "of them takes the layers",
                        role, m.file, b.config.cache.DeviceCapabilityText(),
                        fmt::join(none_took, ", "), picked, knob));
  } else if (m.default_backend_from_profile && picked != m.default_backend) {
    const Result<BackendCaps> profile = FindBackend(m.default_backend);
    b.Add(Severity::kInfo, "backend-device-pick",
          fmt::format(
              "the {} layers of '{}' run on {}, the engine's pick on compute capability "
              "{}; the profile's backend {}, planned where the GPU is not given, {}",
              role, m.file, picked, b.config.cache.DeviceCapabilityText(), m.default_backend,
              profile.ok() && !profile->RunsOn(*gpu)
                  ? fmt::format("does not run there (it runs on {})", profile->CapabilitiesText())
                  : fmt::format("runs only where the launch names it with {}", knob)));
  }
}

Result<BackendCaps> ResolveBackend(const std::string& name, std::string_view knob) {
  Result<BackendCaps> caps = FindBackend(name);
  if (!caps.ok()) {
    return InvalidArgument(fmt::format("{}: {}", knob, caps.status().message()));
  }
  return caps;
}

// An MLA launch under DCP that names no backend: kvtopo plans its registry default, but the
// engine picks by the GPU (platforms/cuda.py's priority lists at 28be48fa9), and some of its
// choices return no softmax LSE, which DCP asserts once the weights are loaded (cp_utils.py).
void WarnAutoBackendUnderDcp(const BackendCaps& planned, int64_t dcp, Builder& b) {
  auto family = [&](bool lse) {
    return BackendNames([&](const BackendCaps& c) {
      return c.mla && c.sparse == planned.sparse && c.returns_lse == lse;
    });
  };
  const std::vector<std::string> with_lse = family(true), without_lse = family(false);
  if (without_lse.empty()) return;
  b.Add(Severity::kWarning, "dcp-backend-auto",
        fmt::format("--decode-context-parallel-size {} needs an attention backend that returns "
                    "the softmax LSE; kvtopo planned {} (its default for {} MLA), but without "
                    "--attention-backend the engine picks the backend by the GPU and may pick one "
                    "that returns none ({}), which it refuses once the weights are loaded; name "
                    "one that does with --attention-backend ({}), or state the GPU with "
                    "--device-capability to plan the engine's pick",
                    dcp, planned.name, planned.sparse ? "sparse" : "dense",
                    fmt::join(without_lse, ", "), fmt::join(with_lse, ", ")));
}

// The value of `text` when it is 1 to 9 decimal digits; nullopt otherwise.
std::optional<int64_t> DigitsValue(std::string_view text) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::stoll(std::string(text));
}

// The layer index the engine reads from a layer's name (extract_layer_index: the name's one
// integer part, "model.layers.3.self_attn" -> 3); -1 when it has none.
int64_t LayerIndexOf(std::string_view name) {
  size_t start = 0;
  while (start <= name.size()) {
    const size_t dot = std::min(name.find('.', start), name.size());
    if (std::optional<int64_t> index = DigitsValue(name.substr(start, dot - start))) return *index;
    start = dot + 1;
  }
  return -1;
}

// The backend the engine selects for a TurboQuant cache: the registry's one that stores it.
Result<std::string> TurboQuantBackendName() {
  KVTOPO_ASSIGN_OR_RETURN(std::vector<BackendCaps> all, ListBackends());
  for (const BackendCaps& be : all) {
    if (be.stores_turboquant) return be.name;
  }
  return Internal("profiles/backends.json has no backend that stores TurboQuant caches");
}

// Whether the engine builds the layer as its K/V Attention, the one layer class that reads
// --kv-cache-dtype-skip-layers (MLAAttention and the sparse indexer's cache take the cache config's
// dtype whole).
bool ReadsSkipLayers(const RawLayer& raw) {
  return !IsRecurrentLayer(raw.type) && raw.type != LayerType::kMla &&
         raw.type != LayerType::kIndexer;
}

// The layers that keep the model dtype whatever --kv-cache-dtype says.
struct KeptLayers {
  std::set<int64_t> indices;
  bool windowed = false;  // every sliding-window layer ("sliding_window")
  bool Keeps(const RawLayer& raw) const {
    return ReadsSkipLayers(raw) && (indices.count(LayerIndexOf(raw.name)) ||
                                    (windowed && raw.type == LayerType::kSlidingWindow));
  }
};

// --kv-cache-dtype-skip-layers as the engine's Attention reads it: an entry equal to a layer's
// index (compared as text: "3", not "03" or "0,3"), or "sliding_window" for every layer with a
// window. With --kv-cache-dtype turboquant_* (the fork's TurboQuant: TQFullAttentionSpec, and
// TurboQuantConfig.get_boundary_skip_layers, which create_engine_config adds to the list): full-
// attention K/V layers store packed K|V slots, and a model without recurrent layers also keeps its
// first and last two layers (at most half of them each side). MLA, sliding-window and chunked
// layers are not planned with TurboQuant, nor the list for a model with recurrent layers.
Result<KeptLayers> ResolveKeptLayers(const ModelDescription& model, const CacheOptions& cache,
                                     Builder& b) {
  KeptLayers kept;
  const bool hybrid = std::any_of(model.layers.begin(), model.layers.end(),
                                  [](const RawLayer& l) { return IsRecurrentLayer(l.type); });
  const bool turboquant = TurboQuantOf(cache.kv_cache_dtype).has_value();
  const std::vector<std::string>& entries = cache.kv_cache_dtype_skip_layers;
  if (!entries.empty() && hybrid) {
    b.Add(Severity::kWarning, "kv-cache-dtype-skip-layers-not-modelled",
          fmt::format("--kv-cache-dtype-skip-layers {}: not planned for a model with recurrent "
                      "layers, whose blocks the engine sizes by the --kv-cache-dtype page; the "
                      "plan assumes it absent",
                      fmt::join(entries, " ")));
  } else if (!entries.empty()) {
    std::set<int64_t> attention;
    for (const RawLayer& raw : model.layers) {
      if (ReadsSkipLayers(raw)) attention.insert(LayerIndexOf(raw.name));
    }
    std::vector<std::string> unmatched;
    for (const std::string& e : entries) {
      if (e == "sliding_window") {
        if (turboquant) {
          return Rejected(fmt::format(
              "--kv-cache-dtype-skip-layers sliding_window with --kv-cache-dtype {}: the engine "
              "sorts the list with TurboQuant's boundary layers as integers and fails on "
              "'sliding_window'; list layer indices",
              KvCacheDtypeName(cache.kv_cache_dtype)));
        }
        kept.windowed = true;
        continue;
      }
      // The engine compares the entry with str(index): "3" matches, "03" does not.
      const std::optional<int64_t> index = DigitsValue(e);
      if (index && e == std::to_string(*index) && attention.count(*index)) {
        kept.indices.insert(*index);
      } else {
        unmatched.push_back(e);
      }
    }
    if (!unmatched.empty()) {
      b.Add(Severity::kWarning, "kv-cache-dtype-skip-layers-unmatched",
            fmt::format("--kv-cache-dtype-skip-layers: {} name no K/V attention layer of '{}' "
                        "(the engine compares each entry whole with a layer's index: 3, not 03 or "
                        "1,3, or sliding_window; MLA layers do not read the list); they keep "
                        "nothing",
                        fmt::join(unmatched, ", "), model.file));
    }
  }
  if (!turboquant) return kept;
  const std::string_view name = KvCacheDtypeName(cache.kv_cache_dtype);
  for (const RawLayer& raw : model.layers) {
    if (raw.type == LayerType::kMla || raw.type == LayerType::kIndexer) {
      return Rejected(fmt::format(
          "--kv-cache-dtype {}: TurboQuant stores K/V attention, and '{}' caches an MLA latent "
          "(layer '{}'), which no TurboQuant backend serves; choose another --kv-cache-dtype",
          name, model.file, raw.name));
    }
    if (raw.type == LayerType::kSlidingWindow || raw.type == LayerType::kChunkedLocal) {
      return Rejected(fmt::format(
          "--kv-cache-dtype {}: layer '{}' attends over a {}; kvtopo plans TurboQuant on "
          "full-attention layers only (--disable-sliding-window makes such layers full)",
          name, raw.name,
          raw.type == LayerType::kSlidingWindow ? "sliding window" : "chunk (chunked local)"));
    }
  }
  if (hybrid) return kept;
  const int64_t num_layers = std::count_if(model.layers.begin(), model.layers.end(),
                                           [](const RawLayer& l) { return !l.mtp; });
  const int64_t n = std::min<int64_t>(2, num_layers / 2);
  std::set<int64_t> boundary;
  for (int64_t i = 0; i < n; ++i) {
    boundary.insert(i);
    boundary.insert(num_layers - 1 - i);
  }
  if (!boundary.empty()) {
    b.Add(Severity::kInfo, "turboquant-boundary-layers",
          fmt::format("--kv-cache-dtype {} keeps layers {} at the model dtype, as the engine's "
                      "TurboQuant keeps the first and last {} layers of a model without "
                      "recurrent layers; the others store packed K|V slots",
                      name, fmt::join(boundary, ", "), n));
  }
  kept.indices.insert(boundary.begin(), boundary.end());
  return kept;
}

// An MTP launch whose speculative config leaves num_speculative_tokens out. It is unset here only
// when 'model' was given, as the engine requires; the engine's method detection
// (SpeculativeConfig.__post_init__ at 28be48fa9) then compares the unset count with 1 as it
// takes the draft for MTP, before it would fill the count in from the draft config's n_predict,
// and raises TypeError (vllm-project/vllm#55323). `choose` says which counts run.
Status UnsetMtpTokenCount(std::string_view choose) {
  return InvalidArgument(fmt::format(
      "--speculative-config: 'num_speculative_tokens' is not set: with method 'mtp' and a "
      "'model', the engine's method detection compares it with 1 before it takes the count "
      "from the draft config's n_predict, and raises TypeError ('>' not supported between "
      "instances of 'NoneType' and 'int'); set it: {}",
      choose));
}

// The engine's warning for an MTP count above 1 (SpeculativeConfig.__post_init__: "Enabling
// num_speculative_tokens > 1 will run multiple times of forward on same MTP layer, which may
// result in lower acceptance rate"), with `runs`: what runs a step.
void WarnMtpTokenCount(int64_t count, std::string_view runs, Builder& b) {
  if (count <= 1) return;
  b.Add(Severity::kWarning, "mtp-token-count",
        fmt::format("num_speculative_tokens {}: the engine warns that it runs the same MTP layer "
                    "several times a step, which may lower the acceptance rate{}{}",
                    count, runs.empty() ? "" : "; ", runs));
}

// vLLM's n_predict rules for an MTP draft (SpeculativeConfig.__post_init__, with n_predict from
// hf_config_override): a count above n_predict must be a multiple of it.
Status ResolveMtpTokenCount(const internal::ModelDescription& model, const std::string& file,
                            SpeculativeConfig& spec, Builder& b) {
  const int64_t n = model.mtp_n_predict.value_or(0);
  const std::string label = internal::ConfigFileLabel(file);
  const std::string modules =
      n == 1 ? fmt::format("the one MTP module {} states ({})", label, model.mtp_key)
             : fmt::format("the {} MTP modules {} states ({})", n, label, model.mtp_key);
  if (spec.num_speculative_tokens == 0) {
    return UnsetMtpTokenCount(
        n == 1 ? fmt::format("{} runs every step, so any count", modules)
        : n > 1
            ? fmt::format("with {}, the engine takes at most {} or a multiple of {}", modules, n, n)
            : "the count of draft tokens a step");
  }
  const int64_t count = spec.num_speculative_tokens;
  if (n > 0 && count > n && count % n != 0) {
    return InvalidArgument(fmt::format(
        "--speculative-config: num_speculative_tokens {} must be divisible by {}: the engine "
        "refuses it ('num_speculative_tokens:{} must be divisible by n_predict={}'); choose a "
        "multiple of {} or at most {}",
        count, modules, count, n, n, n));
  }
  // The engine's drafter (llm_base_proposer.py) calls the MTP model without a step index, so
  // every draft step runs the first MTP module (spec_step_idx 0); the others are built and
  // cached but never run.
  std::string runs = fmt::format(
      "its drafter passes the MTP model no step index, so the first MTP module runs all {} "
      "draft steps",
      count);
  if (n > 1) {
    runs += fmt::format(", and the other {} of {} keep their caches but never run", n - 1, modules);
  }
  WarnMtpTokenCount(count, runs, b);
  return Status::Ok();
}

// The n_predict of a draft that does not run as MTP (SpeculativeConfig.__post_init__ at
// 28be48fa9): a key of its config.json, which the engine's config classes keep (EAGLEConfig
// copying the draft's keys), or MLPSpeculatorConfig's default 3. The engine takes it for an unset
// num_speculative_tokens, refuses a larger count that it does not divide, and
// MLPSpeculatorConfig asserts that top_k_tokens_per_head (default [5, 4, 3]) has as many
// entries. 0 when the config states none, nullopt when kvtopo cannot read it; `where` names where
// it came from.
Result<std::optional<int64_t>> DraftNPredict(const SpeculativeConfig& spec,
                                             const std::string& config_format, std::string& where) {
  Result<internal::LoadedConfig> draft = internal::LoadModelConfig(
      spec.model, config_format, spec.revision, "--speculative-config revision");
  if (!draft.ok()) return std::optional<int64_t>();
  const internal::ConfigReader r(draft->json, draft->file);
  const std::string label = internal::ConfigFileLabel(draft->file);
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, r.StringOr("model_type", ""));
  int64_t n = 0;
  if (r.Has("n_predict")) {
    where = fmt::format("the n_predict of {}", label);
    KVTOPO_ASSIGN_OR_RETURN(n, r.IntIn("n_predict", 1, kMaxSpeculativeTokens));
  } else if (type == "mlp_speculator") {
    where = fmt::format("MLPSpeculatorConfig's default n_predict ({} states none)", label);
    n = 3;
  }
  if (type == "mlp_speculator") {
    int64_t top_k = 3;
    if (r.Has("top_k_tokens_per_head")) {
      KVTOPO_ASSIGN_OR_RETURN(const std::vector<int64_t> given, r.IntList("top_k_tokens_per_head"));
      top_k = static_cast<int64_t>(given.size());
    }
    if (top_k != n) {
      return r.Invalid(
          "top_k_tokens_per_head",
          fmt::format("has {} entries{} for n_predict {}: the engine's "
                      "MLPSpeculatorConfig asserts as many as n_predict as it "
                      "loads the draft",
                      top_k, r.Has("top_k_tokens_per_head") ? "" : " (its default)", n));
    }
  }
  return std::optional<int64_t>(n);
}

// Method mtp without a 'model' drafts with the target's checkpoint (the engine sets the draft's
// model to the target's), whose name the engine's method detection reads before the model type
// (SpeculativeConfig.__post_init__ at 28be48fa9): a name with "eagle-", "eagle3" or "dflash" in
// it runs that method with the target's checkpoint as its draft model, which kvtopo does not
// plan.
Status CheckMtpTargetName(const std::string& target_model, const SpeculativeConfig& spec) {
  if (!spec.model.empty()) return Status::Ok();
  const std::optional<internal::DraftMethodName> by_name =
      internal::DraftMethodByName(target_model);
  if (!by_name) return Status::Ok();
  return Rejected(fmt::format(
      "--speculative-config method 'mtp': the target's name '{}' contains '{}', so the engine's "
      "method detection (SpeculativeConfig.__post_init__) runs method '{}' with the target's "
      "checkpoint as its draft model instead of the target's MTP layers, which kvtopo does not "
      "plan; serve the checkpoint from a path or name without '{}'",
      target_model, by_name->word, by_name->method, by_name->word));
}

// Architectures kvtopo plans that the fork at 28be48fa9 does not register (Kimi-K3 and
// GLM-5.3-Flash, planned from the project's specifications): the engine that serves them
// detects their MTP drafts by rules kvtopo cannot read at 28be48fa9. Sorted.
constexpr std::string_view kUnregisteredAtFork[] = {"Glm5NextForConditionalGeneration",
                                                    "KimiK3ForConditionalGeneration"};
static_assert(std::is_sorted(std::begin(kUnregisteredAtFork), std::end(kUnregisteredAtFork)));
// Model types whose entry the fork's hf_config_override lost at 28be48fa9 and vLLM's keeps:
// deepseek_v4 becomes deepseek_mtp with DeepSeekV4MTPModel in vLLM's (vllm-project/vllm#40860),
// an entry the fork's cherry-pick 9230570c8 removed. Sorted.
constexpr std::string_view kMtpTypesLostAtFork[] = {"deepseek_v4"};

// The engine's method detection (SpeculativeConfig.__post_init__ at 28be48fa9) takes the draft of
// method 'mtp' (the target's own checkpoint) for MTP only when its config's model type, after
// SpeculativeConfig.hf_config_override, is one of the engine's MTP types
// (internal::MtpTypeAfterOverride); for another type it raises NotImplementedError
// ("Unsupported speculative method: 'mtp'") before it builds a layer. The MTP layers are planned
// all the same, under this error (a warning for a type vLLM's override keeps and the fork's lost);
// without a count the refusal comes first (the count's own TypeError needs an MTP type) and ends
// the plan.
Status CheckMtpModelType(const internal::ModelDescription& model,
                         const internal::LoadedConfig& target, const SpeculativeConfig& spec,
                         Builder& b) {
  if (std::binary_search(std::begin(kUnregisteredAtFork), std::end(kUnregisteredAtFork),
                         model.architecture) ||
      !internal::MtpTypeAfterOverride(target.json).empty()) {
    return Status::Ok();
  }
  std::string type;
  if (const auto t = target.json.find("model_type"); t != target.json.end() && t->is_string()) {
    type = t->get<std::string>();
  }
  const bool lost =
      std::binary_search(std::begin(kMtpTypesLostAtFork), std::end(kMtpTypesLostAtFork), type);
  const std::string message = fmt::format(
      "--speculative-config method 'mtp': {} has model type {}, which the engine's "
      "SpeculativeConfig.hf_config_override does not turn into one of its MTP types, so its "
      "method detection raises NotImplementedError ('Unsupported speculative method: 'mtp'') "
      "before it builds the MTP layers planned here{}",
      internal::ConfigFileLabel(target.file), type.empty() ? "none" : type,
      lost ? fmt::format("; the fork at 28be48fa9 lost the {} entry of vLLM's override "
                         "(vllm-project/vllm#40860), and an engine that keeps it builds them",
                         type)
           : "");
  if (spec.num_speculative_tokens == 0) return Rejected(message);
  b.Add(lost ? Severity::kWarning : Severity::kError, "speculative-mtp-model-type", message);
  return Status::Ok();
}

// MTP through a separate assistant checkpoint (Gemma 4; the engine's
// SpeculativeConfig.hf_config_override and Gemma4Proposer): the draft config is the 'model' of
// model type `model.mtp_assistant`, whose n_predict the engine sets to 1 (so any count runs it in
// turn); its layers read the target's last KV layer of their kind and keep no cache. A 'model'
// that is not read here (a Hugging Face id with no profile) is taken as the assistant and says
// so.
Status ResolveMtpAssistant(const internal::ModelDescription& model, const std::string& file,
                           SpeculativeConfig& spec, Builder& b) {
  if (spec.model.empty()) {
    return InvalidArgument(fmt::format(
        "--speculative-config: method 'mtp' needs a 'model' here: {} has no MTP layers; {} "
        "drafts with its assistant checkpoint (model type {}), whose layers read the target's "
        "KV cache",
        internal::ConfigFileLabel(file), model.architecture, model.mtp_assistant));
  }
  Result<internal::LoadedConfig> draft = internal::LoadModelConfig(
      spec.model, b.config.config_format, spec.revision, "--speculative-config revision");
  if (draft.ok()) {
    KVTOPO_ASSIGN_OR_RETURN(
        const std::string type,
        internal::ConfigReader(draft->json, draft->file).StringOr("model_type", ""));
    if (type != model.mtp_assistant) {
      return InvalidArgument(fmt::format(
          "--speculative-config: draft '{}' has model type {}, not {}: method 'mtp' on {} "
          "drafts with its assistant checkpoint",
          draft->file, type.empty() ? "none" : "'" + type + "'", model.mtp_assistant,
          model.architecture));
    }
  } else if (draft.status().code() == StatusCode::kNotFound) {
    b.Add(Severity::kInfo, "mtp-assistant-unread",
          fmt::format("--speculative-config 'model' '{}' is not a config kvtopo can read; it is "
                      "taken as {}'s MTP assistant (model type {}), whose layers read the "
                      "target's KV cache and keep none of their own",
                      spec.model, model.architecture, model.mtp_assistant));
  } else {
    return draft.status();
  }
  if (spec.num_speculative_tokens == 0) {
    return UnsetMtpTokenCount(
        fmt::format("the engine sets a {} draft's n_predict to 1, so any count runs its layers "
                    "once a draft token",
                    model.mtp_assistant));
  }
  WarnMtpTokenCount(spec.num_speculative_tokens,
                    fmt::format("the {} draft's layers run {} times a step", model.mtp_assistant,
                                spec.num_speculative_tokens),
                    b);
  return Status::Ok();
}

// Registered architectures kvtopo plans whose class the engine cannot split over pipeline
// stages (at 28be48fa9, ModelRegistry.is_pp_supported_model: the class lacks SupportsPP, or its
// forward takes no intermediate_tensors); every other registered class kvtopo plans supports it.
constexpr std::string_view kNoPipelineParallel[] = {"AriaForConditionalGeneration",
                                                    "CohereAsrForConditionalGeneration",
                                                    "DFlashDraftModel",
                                                    "Eagle3DeepseekV2ForCausalLM",
                                                    "Eagle3DeepseekV3ForCausalLM",
                                                    "Eagle3LlamaForCausalLM",
                                                    "Eagle3MiniMaxM2ForCausalLM",
                                                    "Eagle3Qwen2_5vlForCausalLM",
                                                    "Eagle3Qwen3vlForCausalLM",
                                                    "EagleCohereForCausalLM",
                                                    "EagleDeepSeekMTPModel",
                                                    "EagleLlama4ForCausalLM",
                                                    "EagleLlamaForCausalLM",
                                                    "EagleMiniCPMForCausalLM",
                                                    "EagleMistralForCausalLM",
                                                    "EagleMistralLarge3ForCausalLM",
                                                    "FireRedASR2ForConditionalGeneration",
                                                    "FireRedLIDForConditionalGeneration",
                                                    "FunASRForConditionalGeneration",
                                                    "Gemma3nForCausalLM",
                                                    "Gemma3nForConditionalGeneration",
                                                    "IQuestLoopCoderForCausalLM",
                                                    "Idefics3ForConditionalGeneration",
                                                    "LlamaForCausalLMEagle3",
                                                    "Mamba2ForCausalLM",
                                                    "MiniMaxForCausalLM",
                                                    "MiniMaxM1ForCausalLM",
                                                    "MiniMaxText01ForCausalLM",
                                                    "NemotronH_Nano_Omni_Reasoning_V3",
                                                    "NemotronH_Nano_VL_V2",
                                                    "NemotronH_Super_Omni_Reasoning_V3",
                                                    "NemotronParseForConditionalGeneration",
                                                    "OuroForCausalLM",
                                                    "PaddleOCRVLForConditionalGeneration",
                                                    "PeagleLlamaForCausalLM",
                                                    "Phi4MMForCausalLM",
                                                    "SmolVLMForConditionalGeneration",
                                                    "WhisperForConditionalGeneration",
                                                    "Zamba2ForCausalLM"};
bool SupportsPipelineParallel(std::string_view architecture) {
  return std::find(std::begin(kNoPipelineParallel), std::end(kNoPipelineParallel), architecture) ==
         std::end(kNoPipelineParallel);
}

// The target model types whose MTP class splits over pipeline stages (Glm4MoeLiteMTPModel,
// GlmOcrMTPModel, NemotronHMTPModel at 28be48fa9); every other MTP class lacks SupportsPP.
constexpr std::string_view kPipelineParallelMtp[] = {"glm4_moe_lite", "glm_ocr", "nemotron_h"};

// The engine's split of `n` hidden layers over `pp` stages (get_pp_indices,
// vllm/distributed/utils.py): VLLM_PP_LAYER_PARTITION when set (one count per stage, summing to
// n), else n / pp each with the remainder one each to the stages before the last, the
// second-to-last first.
Result<std::vector<int64_t>> PipelinePartition(int64_t n, int64_t pp,
                                               const std::optional<std::string>& partition) {
  std::vector<int64_t> parts;
  if (!partition) {
    parts.assign(static_cast<size_t>(pp), n / pp);
    for (int64_t i = 2; i < n % pp + 2; ++i) ++parts[static_cast<size_t>(pp - i)];
    return parts;
  }
  const std::string& given = *partition;
  int64_t sum = 0;
  for (size_t start = 0;;) {
    const size_t comma = given.find(',', start);
    const std::string item =
        given.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t count = 0;
    // Python's int() takes surrounding whitespace.
    const std::string_view trimmed = internal::StripAsciiSpace(item);
    const char* end = trimmed.data() + trimmed.size();
    const auto [ptr, ec] = std::from_chars(trimmed.data(), end, count);
    if (trimmed.empty() || ec != std::errc() || ptr != end || count < 0 || count > kMaxLayers) {
      return InvalidArgument(fmt::format(
          "VLLM_PP_LAYER_PARTITION '{}': '{}' is not a layer count (the engine's 'Invalid "
          "partition string')",
          given, item));
    }
    parts.push_back(count);
    sum += count;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (static_cast<int64_t>(parts.size()) != pp) {
    return InvalidArgument(fmt::format(
        "VLLM_PP_LAYER_PARTITION '{}' names {} stages, but --pipeline-parallel-size is {}; the "
        "engine refuses it",
        given, parts.size(), pp));
  }
  if (sum != n) {
    return InvalidArgument(fmt::format(
        "VLLM_PP_LAYER_PARTITION '{}' holds {} layers, but the model has {} hidden layers; the "
        "engine refuses it",
        given, sum, n));
  }
  return parts;
}

// The speculative methods that propose from the tokens alone (n-grams, a suffix tree): no draft
// model, no layer, no draft class.
bool ProposesFromTokens(std::string_view method) {
  return method == "ngram" || method == "ngram_gpu" || method == "suffix";
}

// Pipeline parallelism: the engine builds the target's layers of each stage on that stage's
// workers and its drafter on the last (GPUModelRunner), checks that the target's class and the
// draft's split over stages (ModelConfig.verify_with_parallel_config, also for the draft's
// config, whose parallel config keeps the pipeline size), and sizes every worker's pool from the
// KV-cache groups of the whole model projected onto its layers (get_kv_cache_configs). Records
// each layer's stage for the planner.
void AssignPipelineStages(const LaunchConfig& config, const ModelDescription& model,
                          const SpeculativeConfig* spec, const ModelDescription* draft,
                          Builder& b) {
  const int64_t pp = config.pipeline_parallel_size;
  const std::string flag = fmt::format("--pipeline-parallel-size {}", pp);
  if (pp == 1) {  // the engine still splits the layers by VLLM_PP_LAYER_PARTITION when it is set
    if (model.num_hidden_layers <= 0) return;
    Result<std::vector<int64_t>> parts =
        PipelinePartition(model.num_hidden_layers, pp, config.pp_layer_partition);
    if (!parts.ok()) b.Error("pipeline-parallel", parts.status().message());
    return;
  }
  if (!SupportsPipelineParallel(model.architecture)) {
    b.Error("pipeline-parallel",
            fmt::format("{} with {}: the engine's class for it does not support pipeline "
                        "parallelism (SupportsPP) and the engine refuses the launch; use "
                        "--pipeline-parallel-size 1",
                        flag, model.architecture));
    return;
  }
  if (spec != nullptr) {
    const std::string& method = spec->method;
    std::string refused;
    if (method == "mtp") {
      if (std::find(std::begin(kPipelineParallelMtp), std::end(kPipelineParallelMtp),
                    model.model_type) == std::end(kPipelineParallelMtp)) {
        refused = fmt::format("the MTP class of model type '{}' does not", model.model_type);
      }
    } else if (method == "draft_model") {
      if (draft != nullptr && !SupportsPipelineParallel(draft->architecture)) {
        refused = fmt::format("the draft's class {} does not", draft->architecture);
      }
    } else if (!ProposesFromTokens(method) && method != "custom_class") {
      refused = fmt::format("no draft class of method '{}' does", method);
    }
    if (!refused.empty()) {
      b.Error("pipeline-parallel",
              fmt::format("{} with speculative method '{}': the engine checks the draft's config "
                          "at the same pipeline size, and {} support pipeline parallelism "
                          "(SupportsPP), so it refuses the launch; use --pipeline-parallel-size 1",
                          flag, method, refused));
      return;
    }
  }
  if (model.num_hidden_layers <= 0) {
    b.Error("pipeline-parallel",
            fmt::format("{}: kvtopo does not know how many hidden layers {} splits over the "
                        "stages; plan with --pipeline-parallel-size 1",
                        flag, model.architecture));
    return;
  }
  Result<std::vector<int64_t>> parts =
      PipelinePartition(model.num_hidden_layers, pp, config.pp_layer_partition);
  if (!parts.ok()) {
    b.Error("pipeline-parallel", parts.status().message());
    return;
  }
  std::vector<int64_t> ends;
  int64_t end = 0;
  for (int64_t count : *parts) ends.push_back(end += count);
  std::vector<int> stages;
  for (const LayerSpec& s : b.out.layers) {
    if (s.role != Role::kTarget) {
      stages.push_back(static_cast<int>(pp - 1));
      continue;
    }
    // The layer's index in its name: "model.layers.12.self_attn".
    const size_t at = s.name.find("layers.");
    int64_t index = -1;
    if (at != std::string::npos) {
      const char* first = s.name.data() + at + 7;
      const char* last = s.name.data() + s.name.size();
      const auto [ptr, ec] = std::from_chars(first, last, index);
      if (ec != std::errc() || ptr == first || (ptr != last && *ptr != '.')) index = -1;
    }
    if (index < 0 || index >= model.num_hidden_layers) {
      b.Error("pipeline-parallel",
              fmt::format("{}: kvtopo cannot place layer '{}' of {} on a stage (its index among "
                          "the {} hidden layers is not known); plan with "
                          "--pipeline-parallel-size 1",
                          flag, s.name, model.architecture, model.num_hidden_layers));
      return;
    }
    stages.push_back(
        static_cast<int>(std::upper_bound(ends.begin(), ends.end(), index) - ends.begin()));
  }
  b.out.pipeline_partition = *std::move(parts);
  b.out.layer_stages = std::move(stages);
}

// The largest term of start, start + step, ... up to `last` that `divisor` divides; 0 if none.
// The terms' remainders repeat within `divisor` terms, so at most that many are tried.
int64_t LargestMultipleInRange(int64_t start, int64_t step, int64_t last, int64_t divisor) {
  if (last < start) return 0;
  int64_t term = start + (last - start) / step * step;
  for (int64_t tried = 0; tried < divisor && term >= start; ++tried, term -= step) {
    if (term % divisor == 0) return term;
  }
  return 0;
}

// The engine's CUDA graph capture sizes with graphs on (VllmConfig._set_cudagraph_sizes at
// 28be48fa9), checked as it checks them: the largest size, 0 when none fits the tokens a step.
// The default sizes are 1, 2, 4 (1 to 32 with --performance-mode interactivity), multiples of 8
// below 256 and of 16 from 256, up to min(rows x (1 + k) x 2, 512), and the tokens a step when
// they fit; every size is capped by the tokens a step. Under sequence parallelism
// (update_sizes_for_sequence_parallelism) only the sizes `divisor` (TP) divides are kept.
int64_t LargestCaptureSize(Builder& b, int64_t speculative_tokens, int64_t divisor) {
  const LaunchConfig::Compilation& cc = b.config.compilation;
  const int64_t tokens = b.config.cache.max_num_batched_tokens;
  // Rows are at most 2^20 and k 1,024: no overflow.
  const int64_t max =
      std::min(tokens, cc.max_capture_size.value_or(std::min<int64_t>(
                           b.config.cache.max_num_seqs * (1 + speculative_tokens) * 2, 512)));
  if (max < 1) {
    b.Error("cudagraph-capture-sizes",
            fmt::format("max_cudagraph_capture_size {} with CUDA graphs on: the engine refuses it "
                        "('Maximum cudagraph size should be greater than or equal to 1 when using "
                        "cuda graph'); give 1 or more, or --enforce-eager",
                        max));
    return 0;
  }
  int64_t largest = 0;
  if (cc.capture_sizes) {
    if (cc.capture_sizes->empty()) {
      b.Error("cudagraph-capture-sizes",
              "--compilation-config cudagraph_capture_sizes [] with CUDA graphs on: the engine "
              "refuses it ('cudagraph_capture_sizes should contain at least one element when "
              "using cuda graph'); give one size or more, or --enforce-eager");
      return 0;
    }
    for (const int64_t size : *cc.capture_sizes) {
      if (size <= tokens && size % divisor == 0) largest = std::max(largest, size);
    }
  } else {
    // 1, 2, 4; multiples of 8 below 256; of 16 from 256 (max is at most 2^31 - 1).
    largest = std::max({LargestMultipleInRange(1, 1, std::min<int64_t>(max, 2), divisor),
                        max >= 4 && 4 % divisor == 0 ? int64_t{4} : 0,
                        LargestMultipleInRange(8, 8, std::min<int64_t>(max, 255), divisor),
                        LargestMultipleInRange(256, 16, max, divisor)});
    if (cc.interactivity) {
      largest =
          std::max(largest, LargestMultipleInRange(1, 1, std::min<int64_t>(max, 32), divisor));
    }
    if (tokens <= max && tokens % divisor == 0) largest = std::max(largest, tokens);
  }
  if (cc.max_capture_size && cc.capture_sizes && *cc.max_capture_size != largest) {
    b.Error("cudagraph-capture-sizes",
            fmt::format("max_cudagraph_capture_size {} is not the largest of the capture sizes "
                        "that fit --max-num-batched-tokens {}{} ({}): the engine refuses the pair "
                        "('customized max_cudagraph_capture_size(={}) should be consistent with "
                        "the max value of cudagraph_capture_sizes(={})'); give {} or drop it",
                        *cc.max_capture_size, tokens,
                        divisor > 1 ? fmt::format(" and are multiples of --tensor-parallel-size "
                                                  "{}, as sequence parallelism keeps them",
                                                  divisor)
                                    : "",
                        largest, *cc.max_capture_size, largest, largest));
  }
  return largest;
}

// The CUDA graph mode the engine runs, as far as it decides whether decode steps replay full
// graphs (VllmConfig.__post_init__, CompilationConfig.set_splitting_ops_for_v1 and
// resolve_cudagraph_mode_and_sizes at 28be48fa9), which with recurrent layers need a block per
// running request. Sets out.full_cudagraphs_off (why there are none), else
// out.cudagraph_mode_unresolved (what kvtopo cannot resolve), else out.cudagraph_mode.
void ResolveCudagraphMode(Builder& b, const ModelDescription& model, int64_t speculative_tokens) {
  const LaunchConfig& config = b.config;
  const LaunchConfig::Compilation& cc = config.compilation;
  ModelCacheSpecs& out = b.out;
  if (config.cache.enforce_eager) {
    out.full_cudagraphs_off = "--enforce-eager";
    return;
  }
  // -O's defaults fill what --compilation-config leaves unset: compilation mode 3 (VLLM_COMPILE)
  // above level 0; graphs none at 0, piecewise at 1, full and piecewise at 2 and 3.
  // TORCH_COMPILE_DISABLE=1 and VLLM_USE_BREAKABLE_CUDAGRAPH=1 set compilation mode 0 (NONE)
  // over -O and the config; the latter keeps piecewise graphs on under it.
  const int64_t level = cc.optimization_level;
  const bool compile_off = cc.torch_compile_disable || cc.breakable_cudagraph;
  const int64_t mode = compile_off ? 0 : cc.mode.value_or(level == 0 ? 0 : 3);
  std::string graphs = !cc.cudagraph_mode.empty() ? cc.cudagraph_mode
                       : level == 0               ? "NONE"
                       : level == 1               ? "PIECEWISE"
                                                  : "FULL_AND_PIECEWISE";
  std::string source = !cc.cudagraph_mode.empty() ? "set by --compilation-config"
                                                  : fmt::format("-O{}'s default", level);
  auto piecewise = [&] { return graphs == "PIECEWISE" || graphs == "FULL_AND_PIECEWISE"; };
  auto set = [&](std::string to, std::string why) {
    graphs = std::move(to);
    source = std::move(why);
  };
  if (piecewise() && mode != 3 && !cc.breakable_cudagraph) {
    set("NONE", fmt::format("{} ({}) under compilation mode {}{}, where piecewise graphs need 3 "
                            "(VLLM_COMPILE)",
                            graphs, source, mode,
                            cc.torch_compile_disable ? " (TORCH_COMPILE_DISABLE=1)" : ""));
  }
  // The capture sizes, fixed with the graphs still on here. Sequence parallelism keeps the sizes
  // TP divides; where its threshold depends on a GPU the launch does not state, whether it stays
  // on, and so the sizes, are not known.
  const int64_t tp = config.parallel.tensor_parallel_size;
  const std::optional<bool> sequence_parallel_on = SequenceParallelismOn(config, model);
  const bool sequence_parallel = sequence_parallel_on.value_or(false);
  const bool sizes_known = sequence_parallel_on.has_value();
  int64_t largest = 0;  // the largest capture size; 0: none
  if (graphs != "NONE" && sizes_known) {
    largest = LargestCaptureSize(b, speculative_tokens, sequence_parallel ? tp : 1);
  }
  const int64_t query = 1 + speculative_tokens;  // a decode step's tokens a request
  auto sizes_unchecked = [&] {
    if (speculative_tokens == 0 || sizes_known) return;
    b.Add(Severity::kWarning, "cudagraph-capture-sizes-unchecked",
          fmt::format("sequence parallelism (--compilation-config pass_config.enable_sp or "
                      "fuse_gemm_comms) without sp_min_token_num at --tensor-parallel-size {}: "
                      "the engine sizes its threshold by the GPU or "
                      "turns sequence parallelism off, which decides whether its decode graphs "
                      "need multiples of {} and {}, so kvtopo did not check the capture sizes; "
                      "give --device-capability or pass_config.sp_min_token_num to have them "
                      "checked",
                      tp, query, tp));
  };
  if (mode == 3 && !cc.use_inductor_graph_partition) {
    if (cc.fuse_attn_quant) {
      // Attention-quant fusion empties unset splitting ops (piecewise graphs then become full)
      // and asserts that given ones do not hold every attention op; others stand as given.
      if (cc.splitting_ops_hold_attention) {
        b.Error("compilation-fuse-attn-quant",
                "--compilation-config pass_config.fuse_attn_quant with splitting_ops holding "
                "every attention op the engine splits at: it asserts as it builds its "
                "compilation config ('attention ops should not be in splitting_ops when "
                "fuse_attn_quant is True'); drop those ops from splitting_ops, or "
                "fuse_attn_quant");
        out.full_cudagraphs_off = "a refused compilation config";  // no graph checks follow
        return;
      }
      if (cc.splitting_ops_empty != false && piecewise()) {
        set("FULL", "set by --compilation-config pass_config.fuse_attn_quant");
      }
    } else if (cc.splitting_ops_empty == true) {
      if (graphs == "PIECEWISE") {
        set("NONE", "set by --compilation-config splitting_ops []");
      } else if (graphs == "FULL_AND_PIECEWISE") {
        set("FULL", "set by --compilation-config splitting_ops []");
      }
    }
    // Sequence parallelism, where it stays on, empties the splitting ops it finds: given ones,
    // or unset ones that attention-quant fusion has not emptied.
    const bool split =
        cc.fuse_attn_quant ? cc.splitting_ops_empty == false : cc.splitting_ops_empty != true;
    if (sequence_parallel_on != false && split && piecewise()) {
      if (!sequence_parallel_on) {
        sizes_unchecked();
        out.cudagraph_mode_unresolved =
            "--compilation-config pass_config.enable_sp without sp_min_token_num or "
            "--device-capability, whose threshold the engine sizes by the GPU or turns sequence "
            "parallelism off";
        return;
      }
      set("FULL", "set by --compilation-config pass_config.enable_sp");
    }
  }
  if (config.compilation.deepep_high_throughput_dp && model.num_experts > 0 && graphs != "NONE") {
    set("NONE",
        "set by --all2all-backend deepep_high_throughput with --data-parallel-size above 1");
  }
  if (graphs == "NONE" || graphs == "PIECEWISE") {
    out.full_cudagraphs_off = fmt::format("cudagraph_mode {}, {}", graphs, source);
    return;
  }
  // Once the KV cache is sized, the least support over every group's backend decides: none
  // (chunked local attention) leaves decodes without full graphs, and so does speculative
  // decoding (uniform batches of 1 + k tokens) below uniform batches.
  CudagraphSupport least = CudagraphSupport::kAlways;
  std::string least_name, unknown;
  for (size_t i = 0; i < out.layers.size(); ++i) {
    const LayerSpec& s = out.layers[i];
    const LayerContext& c = b.context[i];
    CudagraphSupport support = c.recurrent_cudagraphs;
    std::string name = "recurrent layer '" + s.name + "'";
    if (s.kind == CacheKind::kChunkedLocal) {
      support = CudagraphSupport::kNever;
      name = "chunked local attention";
    } else if (s.sparse_indexer) {
      support = CudagraphSupport::kUniformBatch;
    } else if (c.backend != nullptr) {
      const std::optional<CudagraphSupport> known = CudagraphSupportOf(*c.backend, s, config);
      if (!known) {
        if (unknown.empty()) unknown = c.backend->name;
        continue;
      }
      support = *known;
      name = c.backend->name;
    } else if (c.own_backend_cudagraphs) {
      support = *c.own_backend_cudagraphs;
      name = s.attention_backend;
    } else if (s.kind != CacheKind::kRecurrent) {
      continue;  // a cache without a backend (hidden states)
    }
    if (support < least) {
      least = support;
      least_name = name;
    }
  }
  if (least == CudagraphSupport::kNever) {
    // Full graphs of mixed batches too: the engine refuses the mode on such a backend.
    if (graphs == "FULL") {
      b.Error("cudagraph-mode-backend",
              fmt::format("cudagraph_mode FULL ({}) on {}, which replays no CUDA graph: the "
                          "engine refuses it once the weights are loaded ('CUDAGraphMode.FULL is "
                          "not supported'); use cudagraph_mode PIECEWISE or FULL_AND_PIECEWISE, "
                          "or --enforce-eager",
                          source, least_name));
    }
    out.full_cudagraphs_off = fmt::format("cudagraph_mode {}, {}, on {}, which replays no graph",
                                          graphs, source, least_name);
    return;
  }
  if (speculative_tokens > 0) {
    if (least < CudagraphSupport::kUniformBatch) {
      out.full_cudagraphs_off = fmt::format(
          "cudagraph_mode {}, {}, with speculative decoding on {}, whose graphs "
          "replay only single-token decodes",
          graphs, source, least_name);
      return;
    }
    if (!unknown.empty()) {
      out.cudagraph_mode_unresolved = fmt::format(
          "speculative decoding on backend {}, whose CUDA graph support kvtopo does not know",
          unknown);
      return;
    }
  }
  if (!config.kv_connector.empty() &&
      (!config.kv_connector_hma.has_value() || config.kv_connector.starts_with("LMCache") ||
       config.kv_connector == "MultiConnector")) {
    // An LMCache layerwise connector (or one kvtopo cannot resolve) asks for piecewise graphs.
    out.cudagraph_mode_unresolved =
        fmt::format("KV connector {}, which may ask for piecewise graphs", config.kv_connector);
    return;
  }
  // Decode graphs of speculative steps replay batches of 1 + k tokens: the capture sizes round up
  // to multiples of it (under sequence parallelism of the larger of it and TP, which must divide
  // each other), keeping those within the largest, which must hold one
  // (adjust_cudagraph_sizes_for_spec_decode).
  if (!sizes_known) {
    sizes_unchecked();
  } else if (speculative_tokens > 0 && sequence_parallel &&
             std::max(query, tp) % std::min(query, tp) != 0) {
    b.Error("cudagraph-capture-sizes",
            fmt::format(
                "speculative decoding's decode graphs need multiples of {} (1 + "
                "num_speculative_tokens) and sequence parallelism multiples of {} "
                "(--tensor-parallel-size), and neither divides the other: the engine "
                "refuses the launch once the weights are loaded ('Can't determine "
                "cudagraph shapes that are both a multiple of {} ... and {}'); change "
                "num_speculative_tokens or turn sequence parallelism off (pass_config.enable_sp "
                "and fuse_gemm_comms)",
                query, tp, query, tp));
  } else if (speculative_tokens > 0 && largest > 0 && query > largest) {
    // Under sequence parallelism the largest is a multiple of TP, so TP never exceeds it.
    b.Error("cudagraph-capture-sizes",
            fmt::format("the largest CUDA graph capture size is {} and speculative decoding's "
                        "decode graphs need a multiple of {} (1 + num_speculative_tokens): the "
                        "engine refuses the launch once the weights are loaded ('No valid "
                        "cudagraph sizes after rounding to multiple of {}'); raise "
                        "--max-cudagraph-capture-size or --cudagraph-capture-sizes to {} or "
                        "more, or lower num_speculative_tokens",
                        largest, query, query, query));
  }
  out.cudagraph_mode = fmt::format("{}, {}", graphs, source);
}

// The connector whose offloading spec the planner checks (Planner::CheckOffloading).
void SetOffloadingConnector(const LaunchConfig& config, ModelCacheSpecs& out) {
  out.offloading_connector =
      fmt::format("KV connector OffloadingConnector ({})", config.kv_connector_source);
  out.offloading_spec = config.kv_offloading_spec;
  out.offloaded_block_size = config.kv_offloaded_block_size;
}

// The flags and keys the launch accepted that kvtopo does not plan with, which leave the cache as
// it is: an info. And the engine's warning for a per-model MTP method name
// (SpeculativeConfig.__post_init__: "method `...` is deprecated and replaced with mtp.").
void AddNotPlanned(const LaunchConfig& config, const SpeculativeConfig* spec, Builder& b) {
  std::vector<std::string> unused = config.not_planned_flags;
  if (spec && !spec->method_alias.empty()) {
    b.Add(Severity::kWarning, "speculative-method-deprecated",
          fmt::format("--speculative-config method '{}': the engine warns that it is deprecated "
                      "and replaced with mtp, and runs it as method 'mtp'",
                      spec->method_alias));
  }
  if (spec) {
    for (const std::string& key : spec->not_planned_keys) {
      unused.push_back("--speculative-config '" + key + "'");
    }
  }
  for (const std::string& key : config.compilation.keys_not_planned) {
    unused.push_back("--compilation-config '" + key + "'");
  }
  if (!unused.empty()) {
    b.Add(Severity::kInfo, "not-used-for-planning",
          fmt::format("accepted, not used for planning: {}", fmt::join(unused, ", ")));
  }
}

// The hybrid KV cache manager's state (vLLM's VllmConfig rules) once the model's own reasons to
// turn it off (`needs_off`) are known: a KV connector without SupportsHMA turns it off when left
// to decide, and its connector factory refuses the connector when it is kept on;
// --disable-hybrid-kv-cache-manager turns it off, and --no-disable-hybrid-kv-cache-manager with a
// launch that needs it off is refused. Sets ModelCacheSpecs::hybrid_manager_off.
void ResolveHybridManager(const LaunchConfig& config, std::string needs_off, Builder& b) {
  // A KV connector without SupportsHMA: left to decide, the engine turns the manager off; kept
  // on, its connector factory refuses the connector.
  const bool connector_without_hma =
      !config.kv_connector.empty() && config.kv_connector_hma == false;
  if (connector_without_hma && config.disable_hybrid_kv_cache_manager == false) {
    b.Error("hybrid-manager-off",
            fmt::format("--no-disable-hybrid-kv-cache-manager keeps the hybrid KV cache manager "
                        "on, but KV connector {} ({}) does not support it (SupportsHMA), and the "
                        "engine refuses to build it ('does not support HMA but HMA is enabled'); "
                        "drop --no-disable-hybrid-kv-cache-manager",
                        config.kv_connector, config.kv_connector_source));
  } else if (connector_without_hma && needs_off.empty()) {
    needs_off = fmt::format("for KV connector {} ({}), which does not support it (SupportsHMA)",
                            config.kv_connector, config.kv_connector_source);
  }
  // VllmConfig._verify_kv_transfer_compat: any KV connector pins KV-cache memory that PyTorch's
  // expandable-segments allocator may remap, unless sleep mode allocates the cache in a pool
  // where expandable segments are off.
  if (!config.kv_connector.empty() && !config.enable_sleep_mode &&
      config.pytorch_cuda_alloc_conf.find("expandable_segments:True") != std::string::npos) {
    b.Error("kv-connector-expandable-segments",
            fmt::format("KV connector {} ({}) with PYTORCH_CUDA_ALLOC_CONF '{}': the engine "
                        "refuses a KV connector beside expandable_segments:True, whose allocator "
                        "can remap the KV cache's pinned memory, unless sleep mode is on; drop "
                        "expandable_segments:True or pass --enable-sleep-mode",
                        config.kv_connector, config.kv_connector_source,
                        config.pytorch_cuda_alloc_conf));
  }
  if (config.disable_hybrid_kv_cache_manager == false && !needs_off.empty()) {
    b.Error("hybrid-manager-off",
            fmt::format("--no-disable-hybrid-kv-cache-manager keeps the hybrid KV cache manager "
                        "on, but the engine turns it off {}, and refuses the launch; drop "
                        "--no-disable-hybrid-kv-cache-manager",
                        needs_off));
  } else if (config.disable_hybrid_kv_cache_manager.value_or(false)) {
    b.out.hybrid_manager_off = "by --disable-hybrid-kv-cache-manager";
  } else if (!needs_off.empty()) {
    b.out.hybrid_manager_off = needs_off;
  }
}

// DeepSeek-V4 (ModelDescription::deepseek_v4; the fork's vllm/models/deepseek_v4/ at 28be48fa9):
// the model's code builds every cache itself, on backends of its own and without the engine's
// selection, and the engine groups them in layer tuples (LayerSpec::layer_tuples). Each hidden
// layer registers, in this order: for ratio 4 the indexer's key (an MLA spec at the cache block,
// compressed 4 times, rows of index_head_dim fp8 values and their fp32 scales per 128) and its
// compressor state (a sliding-window spec of 4-token blocks over 8 tokens, float32 rows of
// 2 x 2 x index_head_dim); for every ratio the sliding-window cache (64-token blocks over
// sliding_window tokens, 584-byte fp8_ds_mla rows); for ratio 4 or 128 the compressed MLA cache
// (the cache block, 584-byte rows) and its compressor state (4-token blocks over 8 tokens for
// ratio 4, 8-token blocks over 128 for ratio 128; float32 rows of 2 x (2 or 1) x head_dim).
// Every page rounds up to a multiple of 576 B. MTP layers keep the sliding-window cache alone.
// Sources: attention.py (DeepseekV4MLAAttention, DeepseekV4IndexerCache), compressor.py
// (CompressorStateCache), v1/attention/backends/mla/sparse_swa.py (DeepseekV4SWACache),
// kv_cache_interface.py (the 584-byte row of model_version deepseek_v4, storage_block_size).
// One DeepSeek-V4 MoE stack's kernels (the target's, or its MTP layers' fused experts where
// they run other kernels than the target's), as the fork's models/deepseek_v4/ at 28be48fa9
// builds it: the
// MegaMoE experts (DeepseekV4Model, DeepseekV4MoE, DeepseekV4MegaMoEExperts) for
// deep_gemm_mega_moe, which raise as the model is built without expert parallelism, for routing
// other than sqrtsoftplus or experts other than fp4, and assert that the expert-parallel group
// (DP x PCP x TP ranks) divides the routed experts, and once the weights are loaded raise off
// compute capability 10.x and for a hidden or expert width that is not a multiple of 128; else
// the fused experts, whose method DeepseekV4FP8Config picks by expert_dtype (fp4: MXFP4, fp8:
// FP8; any other raises) or the unquantized one, each taking only its family's backends.
void CheckDeepseekV4MoeKernels(const internal::ModelDescription& model, const LaunchConfig& config,
                               const std::optional<std::string>& quantization,
                               const std::string& backend, const std::string& knob,
                               const std::string& who, bool draft, Builder& b) {
  const internal::ModelDescription::DeepseekV4& v4 = *model.deepseek_v4;
  const int64_t experts = model.num_experts;
  const std::string built =
      draft ? "as it builds the MTP layers, once the target's weights are loaded"
            : "as it builds the model";
  if (backend != internal::kMegaMoeBackend) {
    if (quantization == "deepseek_v4_fp8" && v4.expert_dtype != "fp4" && v4.expert_dtype != "fp8") {
      b.Error("moe-expert-dtype",
              fmt::format("{}, whose config states expert_dtype {}: the engine raises {} "
                          "('Unsupported DeepSeek V4 expert_dtype'; fp4 or fp8)",
                          who, v4.expert_dtype, built));
      return;
    }
    const internal::FusedMoeMethod method =
        internal::FusedMoeMethodFor(quantization, config.enable_lora, v4.expert_dtype);
    CheckNamedMoeBackend(method, backend, knob, who, "", built, config, b);
    return;
  }
  const std::string loaded = "once the weights are loaded";
  const std::string mega = fmt::format("{} deep_gemm_mega_moe with {}", knob, who);
  if (!config.enable_expert_parallel) {
    b.Error("moe-backend",
            fmt::format("{} needs expert parallelism: the engine raises {} ('DeepSeek V4 MegaMoE "
                        "currently requires expert parallel.'); add --enable-expert-parallel or "
                        "pick another MoE backend",
                        mega, built));
  }
  // The config values DeepseekV4MoE asks of MegaMoE: (key, value, the one it takes, its error).
  for (const auto& [key, value, taken, error] :
       {std::tuple{"scoring_func", v4.scoring_func, "sqrtsoftplus",
                   "DeepSeek V4 MegaMoE currently supports sqrtsoftplus routing only."},
        std::tuple{"expert_dtype", v4.expert_dtype, "fp4",
                   "DeepSeek V4 MegaMoE only supports fp4 experts"}}) {
    if (value == taken) continue;
    b.Error("moe-backend",
            fmt::format("{}, whose config states {} {}: the engine raises {} ('{}'); pick "
                        "another MoE backend",
                        mega, key, value, built, error));
  }
  const int64_t tp = config.parallel.tensor_parallel_size;
  const int64_t ep = ExpertParallelRanks(config);
  if (experts > 0 && experts % ep != 0) {
    b.Error("moe-backend",
            fmt::format("{}: its {} routed experts do not split evenly over the expert-parallel "
                        "group's {} ranks (--data-parallel-size {} x "
                        "--prefill-context-parallel-size {} x --tensor-parallel-size {}), which "
                        "the engine asserts {}; choose sizes whose product divides {}",
                        mega, experts, ep, config.data_parallel_size,
                        config.parallel.prefill_context_parallel_size, tp, built, experts));
  }
  if (const std::optional<DeviceCapability>& gpu = config.cache.device_capability;
      gpu && gpu->major != 10) {
    b.Error("moe-backend",
            fmt::format("{} on compute capability {}: the engine raises {} ('DeepGEMM MegaMoE "
                        "requires SM100 GPUs.'); pick another MoE backend",
                        mega, config.cache.DeviceCapabilityText(), loaded));
  }
  for (const auto& [key, width] :
       {std::pair{"hidden_size", model.hidden_size},
        std::pair{"moe_intermediate_size", model.moe_intermediate_size}}) {
    if (width > 0 && width % 128 != 0) {
      b.Error("moe-backend",
              fmt::format("{}, whose {} is {}: the engine raises {} ('DeepGEMM MegaMoE requires "
                          "hidden and intermediate sizes to be multiples of 128.'); pick another "
                          "MoE backend",
                          mega, key, width, loaded));
    }
  }
}

// DeepSeek-V4's MoE kernels: the target's (--moe-backend or --kernel-config's moe_backend), and
// its MTP layers', which the engine builds once the target's weights are loaded, under the
// config its model runner gives them (below; kernels the target shares fail with it first). The
// fused experts also assert that TP divides the routed experts.
void CheckDeepseekV4Experts(const internal::ModelDescription& model, const LaunchConfig& config,
                            const std::optional<std::string>& quantization,
                            const std::optional<SpeculativeConfig>& mtp, const std::string& what,
                            Builder& b) {
  const int64_t experts = model.num_experts;
  const int64_t tp = config.parallel.tensor_parallel_size;
  if (config.moe_backend != internal::kMegaMoeBackend && experts > 0 && experts % tp != 0) {
    b.Error("moe-experts-per-rank",
            fmt::format("--tensor-parallel-size {} does not divide the {} routed experts of {}, "
                        "which the engine's fused experts assert as it builds the model; choose "
                        "a tensor-parallel size that divides {}",
                        tp, experts, what, experts));
  }
  CheckDeepseekV4MoeKernels(
      model, config, quantization, config.moe_backend,
      config.moe_backend_from.empty() ? "--moe-backend" : config.moe_backend_from, what,
      /*draft=*/false, b);
  if (!mtp) return;
  const std::string mtp_layers = fmt::format("the MTP layers of {}", what);
  // The V2 model runner builds the MTP layers under the target's config (load_eagle_model):
  // the target's kernels, checked above.
  if (config.use_v2_model_runner == true) {
    if (mtp->moe_backend && *mtp->moe_backend != config.moe_backend) {
      WarnDraftMoeBackendUnread(*mtp->moe_backend, mtp_layers, config, b);
    }
    return;
  }
  // The V1 runner builds them under the draft's config (_create_draft_vllm_config): the
  // speculative config's moe_backend, else the target's, and a parallel config of the draft's
  // own, which has no expert parallelism (create_draft_parallel_config), so MegaMoE experts
  // there always raise; with the target's MegaMoE refused first for want of it, not repeated.
  const std::string draft_backend = mtp->moe_backend.value_or(config.moe_backend);
  if (draft_backend == internal::kMegaMoeBackend) {
    if (config.moe_backend != internal::kMegaMoeBackend || config.enable_expert_parallel) {
      b.Error("moe-backend",
              fmt::format("{}: the engine's V1 model runner builds them under the draft's "
                          "parallel config, which has no expert parallelism whatever "
                          "--enable-expert-parallel says (create_draft_parallel_config), so they "
                          "raise as they are built, once the target's weights are loaded "
                          "('DeepSeek V4 MegaMoE currently requires expert parallel.'); give the "
                          "speculative config a fused moe_backend, or set "
                          "VLLM_USE_V2_MODEL_RUNNER=1, whose runner builds them under the "
                          "target's config",
                          mtp->moe_backend ? fmt::format("--speculative-config's moe_backend "
                                                         "deep_gemm_mega_moe with {}",
                                                         mtp_layers)
                                           : fmt::format("{} deep_gemm_mega_moe, which {} inherit",
                                                         config.moe_backend_from, mtp_layers)));
    }
    return;
  }
  if (draft_backend != config.moe_backend) {
    CheckDeepseekV4MoeKernels(model, config, quantization, draft_backend,
                              "--speculative-config's moe_backend", mtp_layers, /*draft=*/true, b);
  }
}

Result<ModelCacheSpecs> BuildDeepseekV4(const internal::LoadedConfig& target,
                                        const LaunchConfig& config,
                                        const internal::ModelDescription& model, Builder& b) {
  const internal::ModelDescription::DeepseekV4& v4 = *model.deepseek_v4;
  const CacheOptions& cache = config.cache;
  const std::string what = fmt::format("'{}' ({})", target.file, model.architecture);
  // DeepseekV4MLAAttention asserts an fp8 cache dtype and stores fp8_ds_mla.
  const std::string dtype(KvCacheDtypeName(cache.kv_cache_dtype));
  if (!dtype.starts_with("fp8")) {
    b.Error("kv-cache-dtype-required",
            fmt::format("{} caches in fp8 only: the engine asserts it as it builds the model "
                        "('DeepseekV4 only supports fp8 kv-cache format for now, got {}') and "
                        "stores fp8_ds_mla; pass --kv-cache-dtype fp8",
                        what, dtype));
  }
  if (!cache.attention_backend.empty()) {
    b.Add(Severity::kWarning, "backend-built-by-model",
          fmt::format("--attention-backend {} does not reach the caches of {}: the model's code "
                      "builds them on backends of its own (V4_FLASHMLA_SPARSE, "
                      "DEEPSEEK_SPARSE_SWA, DEEPSEEK_V4_INDEXER, CompressorBackend), without the "
                      "engine's selection",
                      cache.attention_backend, what));
  }
  // Its layers are none of the engine's K/V Attention, the one class that reads
  // --kv-cache-dtype-skip-layers: every entry keeps nothing.
  if (!cache.kv_cache_dtype_skip_layers.empty()) {
    b.Add(Severity::kWarning, "kv-cache-dtype-skip-layers-unmatched",
          fmt::format("--kv-cache-dtype-skip-layers: {} name no K/V attention layer of {}, whose "
                      "model code builds every cache itself (fp8 rows, float32 compressor "
                      "states) whatever the list says; they keep nothing",
                      fmt::join(cache.kv_cache_dtype_skip_layers, ", "), what));
  }
  // Its compressed MLA caches run FlashMLA's sparse kernels: V4_FLASHMLA_SPARSE subclasses
  // FLASHMLA_SPARSE and keeps its supports_compute_capability, which the engine never asks (no
  // selection runs for these layers), so on another GPU the kernels fail at the first forward.
  if (const std::optional<DeviceCapability>& gpu = cache.device_capability) {
    Result<BackendCaps> parent = FindBackend("FLASHMLA_SPARSE");
    if (parent.ok() && !parent->RunsOn(*gpu)) {
      b.Error("backend-compute-capability",
              fmt::format("{} runs its compressed MLA caches on V4_FLASHMLA_SPARSE, FlashMLA's "
                          "sparse kernels as FLASHMLA_SPARSE's, which run on compute capability "
                          "{} only, not {}: the model's code builds the layers on it itself, "
                          "without the selection that checks the GPU, and its kernels refuse "
                          "them at the engine's first forward, once the weights are loaded; the "
                          "model does not run on that GPU",
                          what, parent->CapabilitiesText(), cache.DeviceCapabilityText()));
    }
  }
  // The first layer keeps a sliding-window cache, whose backend prefers 256-token blocks
  // (DeepseekSparseSWABackend; update_block_size_for_backend). The MLA and indexer backends run
  // 256-token kernel blocks only.
  constexpr int64_t kV4Block = 256;
  int64_t block = cache.block_size > 0 ? cache.block_size : kV4Block;
  if (block % kV4Block != 0) {
    b.Error("kernel-block-size",
            fmt::format("--block-size {} is not a multiple of 256, the only kernel block the MLA "
                        "and indexer backends of {} run (V4_FLASHMLA_SPARSE, DEEPSEEK_V4_INDEXER: "
                        "get_supported_kernel_block_sizes); pass --block-size 256 (kvtopo plans "
                        "256 for the other checks)",
                        block, what));
    block = kV4Block;
  }
  const auto not_planned = [&](std::string_view knob) {
    b.Error("not-planned", fmt::format("kvtopo does not plan {} with {}: drop it", what, knob));
  };
  // KV connectors: one without SupportsHMA turns the hybrid manager off (ResolveHybridManager);
  // a class kvtopo cannot resolve is not planned here.
  const std::string connector =
      fmt::format("KV connector {} ({})", config.kv_connector, config.kv_connector_source);
  if (!config.kv_connector.empty() && !config.kv_connector_hma.has_value()) {
    not_planned(connector);
  }
  // Without the hybrid manager the engine caches every layer as a 256-token MLA page
  // (unify_hybrid_kv_cache_specs; Planner::CacheAsOneType): one group, no sliding windows.
  ResolveHybridManager(config, "", b);
  const bool hybrid_off = !b.out.hybrid_manager_off.empty();
  // The offloading connector (SupportsHMA) builds its spec on each worker with the worker's cache
  // block, and the spec asserts every group's block is a multiple of it. The engine core sets its
  // own cache block to the groups' smallest (4) once the KV cache is sized, which a worker in
  // its process shares; a worker in a process of its own keeps the launch's (256), which the
  // sliding windows' and compressor states' blocks are not multiples of (Planner::CheckOffloading
  // refuses the launch). The offloading of the layer tuples on a shared config, and of one group
  // of mixed pages without the hybrid manager, is not planned.
  if (config.kv_connector == "OffloadingConnector") {
    if (hybrid_off) {
      not_planned(fmt::format("{} while the hybrid KV cache manager is off {}", connector,
                              b.out.hybrid_manager_off));
    } else if (config.workers_in_own_processes != true) {
      not_planned(fmt::format(
          "{} on a worker that shares the engine core's config (--distributed-executor-backend "
          "uni, the engine's choice for one worker, or external_launcher; or an executor class "
          "kvtopo cannot tell), whose offloading of the layer tuples kvtopo has not checked",
          connector));
    } else {
      SetOffloadingConnector(config, b.out);
    }
  }
  for (const auto& [flag, size] :
       {std::pair<std::string_view, int64_t>{"--decode-context-parallel-size",
                                             config.parallel.decode_context_parallel_size},
        {"--prefill-context-parallel-size", config.parallel.prefill_context_parallel_size}}) {
    if (hybrid_off && size > 1) {
      not_planned(fmt::format("{} {} while the hybrid KV cache manager is off {}", flag, size,
                              b.out.hybrid_manager_off));
    }
  }
  // Its groups take blocks of several sizes, which the engine sizes without context parallelism
  // (resolve_kv_cache_block_sizes; under DCP the sliding windows are refused first, by their
  // geometry).
  if (!hybrid_off && config.parallel.prefill_context_parallel_size > 1) {
    b.Error("prefill-context-parallel-groups",
            fmt::format("{} keeps caches of several block sizes (its MLA caches' {} tokens, its "
                        "sliding windows' 64, its compressor states' 4 and 8), which the engine "
                        "does not size under --prefill-context-parallel-size {}: it raises as "
                        "the KV cache is set up ('Hybrid KV cache groups with multiple block "
                        "sizes do not support context parallelism (dcp_world_size/"
                        "pcp_world_size > 1).'); set --prefill-context-parallel-size 1",
                        what, block, config.parallel.prefill_context_parallel_size));
  }
  // Its MTP layers draft, or a proposer without a draft model (n-grams, a suffix tree), which
  // builds no layer and leaves the caches as they are: the engine annotates no EAGLE group for
  // it (_annotate_eagle_groups_deepseek_v4 asks use_eagle).
  std::optional<SpeculativeConfig> spec = config.speculative;
  const bool draftless = spec && ProposesFromTokens(spec->method);
  if (spec && spec->method != "mtp" && !draftless) {
    // A method that always feeds its draft the auxiliary hidden states meets the class's lack of
    // the EAGLE-3 interface first.
    const internal::SpeculativeMethod* row = internal::FindSpeculativeMethod(spec->method);
    const std::string unavailable =
        row && row->aux_hidden_states == internal::AuxHiddenStates::kAlways
            ? internal::AuxHiddenStatesUnavailable(model)
            : "";
    if (!unavailable.empty()) {
      RefuseAuxHiddenStates(*spec, *row, unavailable, b);
    } else {
      not_planned(
          fmt::format("speculative method '{}' (only its MTP layers, n-grams and suffix "
                      "decoding)",
                      spec->method));
    }
    spec.reset();
  }
  const bool mtp = spec && !draftless;
  const internal::SpeculativeMethod* method_row =
      spec ? internal::FindSpeculativeMethod(spec->method) : nullptr;
  if (mtp) {
    if (v4.mtp_layers == 0) {
      return Rejected(fmt::format(
          "--speculative-config method 'mtp': {} states no MTP layers (num_nextn_predict_layers)",
          what));
    }
    KVTOPO_RETURN_IF_ERROR(CheckMtpTargetName(config.model, *spec));
    KVTOPO_RETURN_IF_ERROR(CheckMtpModelType(model, target, *spec, b));
    KVTOPO_RETURN_IF_ERROR(ResolveMtpTokenCount(model, target.file, *spec, b));
    b.out.draft_name = target.name + " (mtp)";
    b.out.draft_attention_backend = "DEEPSEEK_SPARSE_SWA";
  }
  if (spec) {
    b.out.num_speculative_tokens = spec->num_speculative_tokens;
    b.out.num_lookahead_tokens = LookaheadTokens(*spec);
    b.out.speculative_method = spec->method;
    KVTOPO_RETURN_IF_ERROR(CheckScheduledTokens(*spec, config, b));
  }
  if (mtp) {
    // The MTP layers' config is the target's.
    CheckProposer(model, &model, b.out.draft_name, *spec, *method_row, config, b);
    CheckDraftMaxModelLen(model, b.out.draft_name, *spec, b);
  }
  CheckDeepseekV4Experts(model, config, b.out.quantization, mtp ? spec : std::nullopt, what, b);
  // Their metadata builders' CUDA graph support (_cudagraph_support, get_cudagraph_support):
  // uniform batches for the MLA, indexer and sliding-window backends, every batch for the
  // compressor's.
  const auto layer = [&](std::string name, CacheKind kind, int64_t block_size, int64_t ratio,
                         int64_t row, int64_t window, std::string backend, Role role) {
    b.context.push_back({.own_backend_cudagraphs = backend == "CompressorBackend"
                                                       ? CudagraphSupport::kAlways
                                                       : CudagraphSupport::kUniformBatch});
    b.out.layers.push_back(LayerSpec{.name = std::move(name),
                                     .role = role,
                                     .kind = kind,
                                     .block_size = block_size,
                                     .num_kv_heads = 1,
                                     .head_size = v4.head_dim,
                                     .cache_dtype = KvCacheDtype::kFp8DsMla,
                                     .model_dtype = model.dtype,
                                     .sliding_window = window,
                                     .compress_ratio = ratio,
                                     .row_bytes = row,
                                     .page_alignment = 576,
                                     .layer_tuples = true,
                                     .attention_backend = std::move(backend)});
  };
  constexpr int64_t kRow = 584;  // 448 fp8 values, 7 scales and a pad byte, 64 bf16 RoPE values
  const int64_t index_row = v4.index_head_dim + v4.index_head_dim / 128 * 4;
  const int64_t hidden = static_cast<int64_t>(v4.compress_ratios.size());
  for (int64_t i = 0; i < hidden + (mtp ? v4.mtp_layers : 0); ++i) {
    const bool mtp_layer = i >= hidden;
    const int64_t ratio = mtp_layer ? 1 : v4.compress_ratios[static_cast<size_t>(i)];
    const Role role = mtp_layer ? Role::kDraft : Role::kTarget;
    const std::string attn = fmt::format("model.layers.{}.attn", i);
    if (ratio == 4) {
      layer(attn + ".indexer.k_cache", CacheKind::kMla, block, 4, index_row, 0,
            "DEEPSEEK_V4_INDEXER", role);
      layer(attn + ".indexer.compressor.state_cache", CacheKind::kSlidingWindowMla, 4, 1,
            2 * 2 * v4.index_head_dim * 4, 8, "CompressorBackend", role);
    }
    layer(attn + ".swa_cache", CacheKind::kSlidingWindowMla, 64, 1, kRow, v4.sliding_window,
          "DEEPSEEK_SPARSE_SWA", role);
    if (ratio > 1) {
      layer(attn, CacheKind::kMla, block, ratio, kRow, 0, "V4_FLASHMLA_SPARSE", role);
      layer(attn + ".compressor.state_cache", CacheKind::kSlidingWindowMla, ratio == 4 ? 4 : 8, 1,
            2 * (ratio == 4 ? 2 : 1) * v4.head_dim * 4, ratio == 4 ? 8 : 128, "CompressorBackend",
            role);
    }
  }
  // The group that holds the last layer is the engine's EAGLE group, whose prefix hits drop
  // their last block (_annotate_eagle_groups_deepseek_v4: the last MTP layer's); the planner
  // flags it and the groups of its spec (GroupLayerTuples).
  if (mtp) b.out.layers.back().volatile_last_block = true;
  // Every sliding window keeps S - 1 more tokens when several MTP layers re-prefill them
  // (get_kv_cache_configs).
  if (mtp && v4.mtp_layers > 1) {
    for (LayerSpec& s : b.out.layers) {
      if (IsWindowed(s.kind)) s.extra_retained_tokens = spec->num_speculative_tokens - 1;
    }
  }
  // Their kernel blocks (get_supported_kernel_block_sizes): 256 for the MLA and indexer
  // backends (flashmla_sparse.py, indexer.py), multiples of 64 for the sliding window
  // (sparse_swa.py), any for the compressor states (compressor.py).
  b.out.model_backends = {{"V4_FLASHMLA_SPARSE", {.kernel_block_sizes = {kV4Block}}},
                          {"DEEPSEEK_V4_INDEXER", {.kernel_block_sizes = {kV4Block}}},
                          {"DEEPSEEK_SPARSE_SWA", {.kernel_block_multiple_of = 64}},
                          {"CompressorBackend", {.kernel_block_multiple_of = 1}}};
  // Pipeline stages: the layers of each stage, the MTP layers on the last (whose class the
  // engine refuses to split).
  AssignPipelineStages(config, model, spec ? &*spec : nullptr, nullptr, b);
  b.out.attention_backend = "V4_FLASHMLA_SPARSE";
  b.out.enable_prefix_caching = cache.enable_prefix_caching.value_or(true);
  for (const Diagnostic& d : config.launch_diagnostics) b.Add(d.severity, d.code, d.message);
  if (spec) CheckSpeculativeLaunch(*spec, *method_row, b);
  AddNotPlanned(config, spec ? &*spec : nullptr, b);
  ResolveCudagraphMode(b, model, spec ? spec->num_speculative_tokens : 0);
  return std::move(b.out);
}

// The engine reads VLLM_SSM_CONV_STATE_LAYOUT where a layer sizes its conv state
// (mamba_utils.get_conv_state_layout) and refuses a value other than SD or DS there; every model
// reads it once more when the engine core ends its start and caches every variable
// (envs.enable_envs_cache), after the weights are loaded and the KV cache allocated.
void CheckConvStateLayoutVariable(const internal::ModelDescription& model,
                                  const LaunchConfig& config, Builder& b) {
  const std::optional<std::string>& layout = config.ssm_conv_state_layout;
  if (!layout || *layout == "SD" || *layout == "DS") return;
  const bool has_conv_state = std::any_of(model.layers.begin(), model.layers.end(),
                                          [](const RawLayer& l) { return HasConvState(l.type); });
  const std::string where =
      has_conv_state
          ? fmt::format(
                "{} has recurrent layers with a conv state: the engine refuses it as it "
                "sizes them",
                model.architecture)
          : std::string(
                "the engine refuses it as its engine core ends its start and reads every "
                "variable, once the weights are loaded and the KV cache allocated");
  b.Error("ssm-conv-state-layout",
          fmt::format("VLLM_SSM_CONV_STATE_LAYOUT '{}' is not one of the engine's choices, SD or "
                      "DS, and {} (\"Invalid value '{}' for VLLM_SSM_CONV_STATE_LAYOUT. Valid "
                      "options: ['SD', 'DS'].\"); set SD, DS or unset it",
                      *layout, where, *layout));
}

Result<ModelCacheSpecs> Build(const internal::LoadedConfig& target, const LaunchConfig& config) {
  KVTOPO_RETURN_IF_ERROR(ValidateParallelConfig(config.parallel));
  // ModelConfig._get_default_runner_type asks get_pooling_config before the architecture, when
  // neither --runner nor --convert decides.
  const bool engine_picks_runner =
      config.runner == "auto" && (config.convert == "auto" || config.convert == "none");
  if (engine_picks_runner && !target.pooling_modules_error.empty()) {
    return InvalidArgument(target.pooling_modules_error);
  }
  if (engine_picks_runner && !target.pooling_modules_file.empty()) {
    return InvalidArgument(fmt::format(
        "modules.json '{}' names a Sentence Transformers Pooling module, so the engine's default "
        "runner for this checkpoint is pooling whatever its architecture (get_pooling_config): it "
        "serves embeddings rather than generating tokens; kvtopo plans generation launches "
        "(--runner generate plans the model as a generator)",
        target.pooling_modules_file));
  }
  // --attention-backend auto (any case) is the engine's automatic selection, as no flag is
  // (AttentionConfig.validate_backend_before).
  if (internal::AsciiLower(config.cache.attention_backend) == "auto") {
    LaunchConfig automatic = config;
    automatic.cache.attention_backend.clear();
    return Build(target, automatic);
  }
  // --hf-overrides reach the target's config only (a draft's config is the draft's own).
  std::vector<std::pair<std::string, std::string>> override_notes;
  nlohmann::json overridden;
  if (!config.hf_overrides.empty()) {
    KVTOPO_ASSIGN_OR_RETURN(
        overridden,
        internal::ApplyHfOverrides(target.json, target.file, config.hf_overrides, override_notes));
  }
  KVTOPO_ASSIGN_OR_RETURN(
      ModelDescription model,
      internal::DescribeModel(config.hf_overrides.empty() ? target.json : overridden, target.file,
                              {.model_impl = config.model_impl,
                               .trust_remote_code = config.trust_remote_code,
                               .runner = config.runner,
                               .convert = config.convert}));
  if (model.kind == "draft") {
    return InvalidArgument(fmt::format(
        "'{}' is a draft model; pass it as \"model\" in --speculative-config and name a target "
        "model instead",
        target.name));
  }
  // --kv-cache-dtype auto takes the dtype a ModelOpt checkpoint states (the engine's
  // resolve_kv_cache_dtype_string, before it builds the cache config): the launch is built with
  // it, as with the flag.
  std::string quant_warning;
  if (config.cache.kv_cache_dtype == KvCacheDtype::kAuto) {
    KVTOPO_ASSIGN_OR_RETURN(const internal::QuantKvCacheDtype quant,
                            internal::KvCacheDtypeFromQuantization(
                                config.hf_overrides.empty() ? target.json : overridden, target.file,
                                target.quantization_file));
    if (quant.dtype) {
      LaunchConfig resolved = config;
      resolved.cache.kv_cache_dtype = *quant.dtype;
      KVTOPO_ASSIGN_OR_RETURN(ModelCacheSpecs out, Build(target, resolved));
      out.diagnostics.insert(out.diagnostics.begin(),
                             Diagnostic{Severity::kInfo, "kv-cache-dtype-checkpoint", quant.note});
      return out;
    }
    quant_warning = quant.note;
  }
  const ParallelConfig& p = config.parallel;
  const CacheOptions& cache = config.cache;
  const int64_t tp = p.tensor_parallel_size;
  const int64_t N = p.decode_context_parallel_size;

  Builder b{config, {}, {}, {}};
  if (!target.origin.empty()) b.Add(Severity::kInfo, "hf-cache", target.origin);
  if (!quant_warning.empty()) b.Add(Severity::kWarning, "kv-cache-dtype-checkpoint", quant_warning);
  for (const auto& [code, message] : override_notes) {
    b.Add(code == "not-modelled" ? Severity::kWarning : Severity::kInfo, code, message);
  }
  for (const auto& [code, message] : model.config_warnings) {
    b.Add(Severity::kWarning, code, message);
  }
  b.out.model_name = target.name;
  b.out.architecture = model.architecture;
  b.out.mamba_chunk_size = model.mamba_chunk_size;
  ResolveModelDtype(model, target.file, b);
  // ModelConfig._verify_quantization and VllmConfig._get_quantization_config, on the model dtype
  // the engine resolved.
  {
    KVTOPO_ASSIGN_OR_RETURN(
        const internal::QuantizationOutcome quantization,
        internal::CheckQuantization(config.hf_overrides.empty() ? target.json : overridden,
                                    target.file, target.quantization_file,
                                    {.asked = config.quantization,
                                     .allow_deprecated = config.allow_deprecated_quantization,
                                     .quantization_config_given = QuantizationConfigGiven(config),
                                     .gguf_file = internal::IsGgufFile(config.model),
                                     .batch_invariant = config.batch_invariant,
                                     .gpu = cache.device_capability,
                                     .gpu_from = cache.device_capability_from,
                                     .model_dtype = model.dtype,
                                     .no_float16 = RefusesFloat16(model)}));
    for (const Diagnostic& d : quantization.diagnostics) b.Add(d.severity, d.code, d.message);
    b.out.quantization = quantization.method;
    b.quantization_config = quantization.checkpoint_config;
  }
  if (config.disable_sliding_window) DisableSlidingWindow(model, b);
  if (cache.max_model_len < 0 && cache.max_model_len != kAutoMaxModelLen) {
    return InvalidArgument(
        fmt::format("--max-model-len must be positive, or auto (-1), got {}", cache.max_model_len));
  }
  // Auto starts from the length the engine derives when none is given.
  b.out.auto_fit_max_model_len = cache.max_model_len == kAutoMaxModelLen;
  const int64_t asked = b.out.auto_fit_max_model_len ? 0 : cache.max_model_len;
  b.out.max_model_len = asked                         ? asked
                        : model.default_max_model_len ? model.default_max_model_len
                                                      : model.max_model_len;
  if (!asked && model.default_max_model_len && !model.length_unstated) {
    b.Add(Severity::kInfo, "max-model-len-default",
          fmt::format("--max-model-len defaults to {} as the engine's does; the model reaches {} "
                      "({}): set --max-model-len to plan longer requests",
                      model.default_len_source, model.max_model_len, model.max_len_source));
  }
  // A length beyond the derived one: the engine refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN
  // (_get_and_verify_max_len), and then only warns.
  if (b.out.max_model_len > model.max_model_len) {
    const std::string exceeds =
        fmt::format("--max-model-len {} exceeds the model's maximum length {} ({}) in '{}'",
                    b.out.max_model_len, model.max_model_len, model.max_len_source, target.file);
    if (config.allow_long_max_model_len) {
      b.Add(Severity::kWarning, "max-model-len-exceeds-model",
            exceeds +
                "; VLLM_ALLOW_LONG_MAX_MODEL_LEN lets the engine serve it: lower --max-model-len "
                "unless the model is known to extrapolate (with RoPE, positions past the derived "
                "length give NaN)");
    } else {
      b.Error("max-model-len-exceeds-model",
              exceeds +
                  ": the engine refuses it; lower --max-model-len, or set "
                  "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 for a model known to extrapolate");
    }
  }
  // An encoder-decoder model (decoder cross-attention layers): the engine turns chunked prefill
  // off and leaves prefix caching off (ModelConfig.is_prefix_caching_supported is false for
  // attention type encoder_decoder).
  const bool encoder_decoder = std::any_of(model.layers.begin(), model.layers.end(),
                                           [](const RawLayer& l) { return l.cross_attention; });
  ResolveStepLimits(config, config.enable_chunked_prefill && !encoder_decoder, b);
  b.out.encoder_tokens_per_request = model.encoder_tokens;
  if (encoder_decoder) {
    // The engine schedules an encoder input whole (disable_chunked_mm_input) and refuses a step
    // budget below its tokens (compute_mm_encoder_budget).
    const int64_t batched = b.out.max_num_batched_tokens > 0 ? b.out.max_num_batched_tokens
                                                             : cache.max_num_batched_tokens;
    if (batched > 0 && batched < model.encoder_tokens) {
      b.Error("max-num-batched-tokens",
              fmt::format("--max-num-batched-tokens {} is below the {} encoder tokens of one "
                          "input of {}: the engine schedules an encoder input whole and refuses "
                          "the launch; raise --max-num-batched-tokens to at least {}",
                          batched, model.encoder_tokens, model.architecture, model.encoder_tokens));
    }
  }
  CheckTensorParallelHeads(model, fmt::format("'{}'", target.file), tp, b);
  CheckExpertsFor(config, model, target.file, b);
  CheckMoeKernels(config, model, target, b.out.quantization, b.quantization_config, b);
  CheckTensorParallelExperts(config, model, target.file, b);
  CheckExpertLayers(config, model, target.file, b);
  CheckMlpActivation(model, target.file, /*draft=*/false, b);
  CheckEplbModel(config, model, target.file, b);
  CheckV2ModelRunner(config, model, target.file, b);
  const int v1_runner = V1RunnerState(config, model, target.json);
  const std::vector<std::string> environment_refused =
      CheckImportedEnvironment(config, model, target, v1_runner, b);
  // The runner the engine picks where it may pick V2 (no plugin known to keep V1).
  b.out.v2_model_runner = v1_runner != 1;
  CheckLora(config, model, target.file, b);
  CheckMultimodalFlags(config, model, target.file, b);
  CheckConvStateLayoutVariable(model, config, b);
  if (cache.block_size < 0) {
    return InvalidArgument(fmt::format("--block-size must be positive, got {}", cache.block_size));
  }
  if (model.deepseek_v4) return BuildDeepseekV4(target, config, model, b);

  // Target backend and block size. Layers the model's code builds on a backend of its own take
  // no selection and ignore --attention-backend; where it builds every attention layer of the
  // trunk so, that backend is the target's.
  const RawLayer* first_attention = nullptr;
  std::string built_name;
  int64_t built_layers = 0, selected_layers = 0;
  for (const RawLayer& raw : model.layers) {
    if (raw.mtp || IsRecurrentLayer(raw.type)) continue;
    if (first_attention == nullptr) first_attention = &raw;
    if (raw.built_backend.empty()) {
      ++selected_layers;
    } else {
      ++built_layers;
      built_name = raw.built_backend;
    }
  }
  std::string target_backend_name = cache.attention_backend;
  if (built_layers > 0 && !cache.attention_backend.empty()) {
    b.Add(Severity::kWarning, "backend-built-by-model",
          fmt::format(
              "--attention-backend {} does not reach {} attention layers of '{}' "
              "({}): the model's code builds {} on {} itself ({}), without the engine's "
              "selection; kvtopo plans {} on {}{}",
              cache.attention_backend,
              selected_layers == 0
                  ? fmt::format("the {}", built_layers)
                  : fmt::format("{} of the {}", built_layers, built_layers + selected_layers),
              target.file, model.architecture, built_layers == 1 ? "it" : "them", built_name,
              model.built_backend_reason, built_layers == 1 ? "it" : "them", built_name,
              selected_layers > 0
                  ? fmt::format(", the other {} on {}", selected_layers, cache.attention_backend)
                  : ""));
  }
  if (selected_layers == 0 && built_layers > 0) target_backend_name = built_name;
  // The dtype the engine's selection sees: layers built without the cache config select with
  // auto.
  const KvCacheDtype selection_dtype =
      SelectionDtype(model, model.cache_dtype_auto ? KvCacheDtype::kAuto : cache.kv_cache_dtype);
  if (target_backend_name.empty()) {
    std::vector<std::string> none_took;
    KVTOPO_ASSIGN_OR_RETURN(target_backend_name,
                            DefaultBackendName(model, config, selection_dtype, &none_took));
    ReportDevicePick(b, model, "target", target_backend_name, none_took, "--attention-backend");
  }
  KVTOPO_ASSIGN_OR_RETURN(const BackendCaps target_backend,
                          ResolveBackend(target_backend_name, "--attention-backend"));
  b.out.attention_backend = target_backend.name;
  // Decoder cross-attention layers select on their own (attn_type encoder_decoder): where no
  // backend is named, the engine's pick for them skips the backends that do not run them, so on a
  // GPU whose first pick is FLASHINFER they run the next (FLASH_ATTN on 10.x). A named backend
  // reaches them too, and is refused where it does not run them (backend-cross-attention).
  std::optional<BackendCaps> cross_backend;
  const int64_t cross_layers = std::count_if(model.layers.begin(), model.layers.end(),
                                             [](const RawLayer& l) { return l.cross_attention; });
  if (cross_layers > 0 && cache.attention_backend.empty() &&
      !target_backend.supports_cross_attention) {
    std::vector<std::string> none_took;
    KVTOPO_ASSIGN_OR_RETURN(const std::string cross_name,
                            DefaultBackendName(model, config, selection_dtype, &none_took,
                                               /*cross_attention=*/true));
    KVTOPO_ASSIGN_OR_RETURN(const BackendCaps cross,
                            ResolveBackend(cross_name, "--attention-backend"));
    // Where no backend runs them (none took them, or the fallback surely refuses the cache
    // dtype), the engine's selection raises; they stay on the target's backend for the other
    // checks.
    if (!none_took.empty() || !cross.supports_cross_attention ||
        TakesKvCacheDtype(cross, selection_dtype, config) == false) {
      const std::vector<std::string> runs = BackendNames([&](const BackendCaps& c) {
        return SameFamily(c, target_backend) && c.supports_cross_attention &&
               (!cache.device_capability || c.RunsOn(*cache.device_capability));
      });
      const bool dtype_refused =
          !runs.empty() && std::all_of(runs.begin(), runs.end(), [&](const std::string& name) {
            const Result<BackendCaps> c = FindBackend(name);
            return c.ok() && TakesKvCacheDtype(*c, selection_dtype, config) == false;
          });
      b.cross_selection_refused = true;
      b.Error("backend-none-valid",
              fmt::format(
                  "the {} cross-attention layers of '{}' select their own backend "
                  "(attention type encoder_decoder), and none the engine tries takes "
                  "them{}: the backends that run cross-attention ({}) {}; the engine "
                  "raises ('No valid attention backend found') as it builds the model; {}",
                  cross_layers, target.file,
                  cache.device_capability
                      ? fmt::format(" on compute capability {}", cache.DeviceCapabilityText())
                      : "",
                  fmt::join(runs, ", "),
                  dtype_refused ? fmt::format("take no {} cache", KvCacheDtypeName(selection_dtype))
                                : "do not take them as the launch sets them up",
                  dtype_refused ? "set --kv-cache-dtype to one they take"
                                : "name one of them with --attention-backend"));
    } else {
      cross_backend = cross;
      b.Add(Severity::kInfo, "backend-cross-attention-pick",
            fmt::format("the {} cross-attention layers of '{}' run on {}, the engine's pick for "
                        "attention type encoder_decoder{}: {}, the other layers' backend, does "
                        "not run cross-attention",
                        cross_layers, target.file, cross.name,
                        cache.device_capability
                            ? fmt::format(" on compute capability {}", cache.DeviceCapabilityText())
                            : "",
                        target_backend.name));
    }
  }
  if (cache.attention_backend.empty() && model.default_backend.empty() && target_backend.mla &&
      N > 1 && !cache.device_capability) {
    WarnAutoBackendUnderDcp(target_backend, N, b);
  }
  if (!model.required_backend.empty() && target_backend.name != model.required_backend) {
    b.Error("backend-required",
            fmt::format("'{}' ({}) {}, and the engine builds them only on {}: on {}{} it {} "
                        "while building the model; add --attention-backend {}",
                        target.file, model.architecture, model.required_backend_reason,
                        model.required_backend, target_backend.name,
                        cache.attention_backend.empty() ? " (the default backend)" : "",
                        model.required_backend_failure, model.required_backend));
  }
  // An attention-free model (every layer recurrent) has no backend to pick a block: the engine
  // keeps CacheConfig's 16 (update_block_size_for_backend finds no attention layer).
  const bool attention_free =
      std::all_of(model.layers.begin(), model.layers.end(),
                  [](const RawLayer& l) { return IsRecurrentLayer(l.type); });
  constexpr int64_t kEngineDefaultBlockSize = 16;
  // The engine asks the first attention layer's backend (update_block_size_for_backend).
  std::optional<BackendCaps> built_backend;
  if (!built_name.empty()) {
    KVTOPO_ASSIGN_OR_RETURN(built_backend, ResolveBackend(built_name, model.architecture));
  }
  const int64_t block_size = cache.block_size ? cache.block_size
                             : attention_free ? kEngineDefaultBlockSize
                             : first_attention != nullptr && !first_attention->built_backend.empty()
                                 ? built_backend->preferred_block_size
                                 : target_backend.preferred_block_size;

  // Speculative decoding.
  std::optional<SpeculativeConfig> spec = config.speculative;
  if (spec) {
    // ToLaunchConfig has applied it already; a LaunchConfig built by hand gets it here.
    KVTOPO_ASSIGN_OR_RETURN(
        const std::string detected,
        internal::DetectDraftMethod(*spec, config.model, config.config_format, &target));
    if (!detected.empty()) b.Add(Severity::kInfo, "speculative-method-detected", detected);
  }
  const bool has_mtp_layers = std::any_of(model.layers.begin(), model.layers.end(),
                                          [](const RawLayer& l) { return l.mtp; });
  const bool mtp_assistant =
      spec && spec->method == "mtp" && !model.mtp_assistant.empty() && !has_mtp_layers;
  if (mtp_assistant) {
    KVTOPO_RETURN_IF_ERROR(ResolveMtpAssistant(model, target.file, *spec, b));
    b.out.draft_name = spec->model + " (" + model.mtp_assistant + ", reads the target's KV cache)";
  } else if (spec && spec->method == "mtp") {
    KVTOPO_RETURN_IF_ERROR(CheckMtpTargetName(config.model, *spec));
    KVTOPO_RETURN_IF_ERROR(CheckMtpModelType(model, target, *spec, b));
    KVTOPO_RETURN_IF_ERROR(ResolveMtpTokenCount(model, target.file, *spec, b));
  }
  // A draft that does not run as MTP and whose config the engine loads: its n_predict fills an
  // unset count in and must divide a larger one. A proposer class (custom_class) has no draft
  // config, and the engine's _verify_args refuses an unset count.
  const bool reads_draft_config =
      spec && !spec->model.empty() && internal::TakesDraftNPredict(spec->method);
  std::string where;
  std::optional<int64_t> n = 0;
  if (reads_draft_config) {
    KVTOPO_ASSIGN_OR_RETURN(n, DraftNPredict(*spec, config.config_format, where));
  }
  if (spec && n.value_or(0) > 0 && spec->num_speculative_tokens > *n &&
      spec->num_speculative_tokens % *n != 0) {
    return InvalidArgument(fmt::format(
        "--speculative-config: num_speculative_tokens {} must be divisible by {}, {}: the "
        "engine refuses it ('num_speculative_tokens:{} must be divisible by n_predict={}'); "
        "choose a multiple of {} or at most {}",
        spec->num_speculative_tokens, *n, where, spec->num_speculative_tokens, *n, *n, *n));
  }
  if (spec && spec->num_speculative_tokens == 0 && !spec->model.empty()) {
    if (n.value_or(0) == 0) {
      const bool proposer = spec->method == "custom_class";
      return InvalidArgument(fmt::format(
          "--speculative-config: 'num_speculative_tokens' is not set: draft '{}' runs as method "
          "'{}' and {} ({}the engine refuses the launch: '{}')",
          spec->model, spec->method,
          proposer ? "a proposer class has no draft config to take n_predict from"
          : n      ? "its config states no n_predict for the engine to take"
                   : "kvtopo cannot read its config for the n_predict the engine would take",
          !proposer && !n ? "unless that config states one, " : "",
          proposer ? "num_speculative_tokens must be provided with speculative model unless the "
                     "draft model config contains an n_predict parameter"
                   : "A speculative model was provided, but num_speculative_tokens was not "
                     "provided"));
    }
    spec->num_speculative_tokens = *n;
    b.Add(Severity::kInfo, "num-speculative-tokens-default",
          fmt::format("num_speculative_tokens defaults to {}, {}, as the engine takes it for "
                      "draft '{}' (method '{}')",
                      *n, where, spec->model, spec->method));
  }
  const int64_t S = spec ? spec->num_speculative_tokens : 0;
  if (spec && S <= 0) {
    return InvalidArgument(
        fmt::format("--speculative-config: 'num_speculative_tokens' must be positive, got {}", S));
  }
  b.out.num_speculative_tokens = S;
  b.out.num_lookahead_tokens = spec ? LookaheadTokens(*spec) : 0;
  b.out.speculative_method = spec ? spec->method : "";
  const internal::SpeculativeMethod* method_row =
      spec ? internal::FindSpeculativeMethod(spec->method) : nullptr;
  if (spec && !method_row) {
    return InvalidArgument(fmt::format(
        "--speculative-config: method '{}' is not a canonical speculative method; parse the "
        "config with ParseSpeculativeConfig",
        spec->method));
  }
  if (spec) KVTOPO_RETURN_IF_ERROR(CheckScheduledTokens(*spec, config, b));
  const bool eagle_style = method_row && method_row->eagle_style;
  if (spec && encoder_decoder) {
    b.Error("speculative-encoder-decoder",
            fmt::format("--speculative-config method '{}' with the encoder-decoder model {}: "
                        "kvtopo has not verified the engine's drafting over cross-attention "
                        "caches and does not plan it; drop --speculative-config",
                        spec->method, model.architecture));
  }

  // The hybrid KV cache manager (vLLM's VllmConfig rules): the engine turns it off for chunked
  // local attention (Llama 4) when VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is 0 (its
  // default is 1), and always under a method whose row has use_eagle; then as
  // ResolveHybridManager says. Without it the planner caches every layer as one type
  // (Planner::CacheAsOneType).
  const bool chunked = std::any_of(model.layers.begin(), model.layers.end(), [](const RawLayer& l) {
    return l.type == LayerType::kChunkedLocal;
  });
  std::string needs_off;  // why the engine must run without its hybrid manager
  if (chunked && method_row && method_row->use_eagle) {
    needs_off =
        fmt::format("for chunked local attention under speculative method '{}'", spec->method);
  } else if (chunked && !config.allow_chunked_local_hybrid) {
    needs_off =
        "for chunked local attention with VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0";
  }
  ResolveHybridManager(config, std::move(needs_off), b);

  // Recurrent mode (vllm_kv_cache.md §3.7): caching on -> all or align (below); caching off ->
  // none with one state page over the whole sequence.
  const bool has_recurrent =
      std::any_of(model.layers.begin(), model.layers.end(),
                  [](const RawLayer& l) { return IsRecurrentLayer(l.type); });
  RecurrentOptions rec;
  rec.num_speculative_tokens = S;
  rec.conv_dtype = cache.mamba_cache_dtype;
  rec.ssm_dtype = cache.mamba_ssm_cache_dtype;
  if (config.ssm_conv_state_layout == "DS") rec.conv_layout = ConvStateLayout::kChannelsFirst;
  // A model's own SSM state dtype replaces auto (the engine's
  // Qwen3_5ForConditionalGenerationConfig and NemotronHForCausalLMConfig); a flag naming another
  // wins, with the warning the engine logs for Qwen3.5.
  if (model.mamba_ssm_dtype != KvCacheDtype::kAuto) {
    if (rec.ssm_dtype == KvCacheDtype::kAuto) {
      rec.ssm_dtype = model.mamba_ssm_dtype;
    } else if (rec.ssm_dtype != model.mamba_ssm_dtype && model.mamba_ssm_dtype_warns) {
      b.Add(Severity::kWarning, "mamba-ssm-dtype-override",
            fmt::format("{} states mamba_ssm_dtype {}, but --mamba-ssm-cache-dtype {} was "
                        "passed; the recurrent state uses {}",
                        internal::ConfigFileLabel(target.file),
                        KvCacheDtypeName(model.mamba_ssm_dtype), KvCacheDtypeName(rec.ssm_dtype),
                        KvCacheDtypeName(rec.ssm_dtype)));
    }
  }
  // The engine leaves prefix caching off by default for hybrid and attention-free models
  // (ModelConfig.is_prefix_caching_supported: "the feature is still experimental").
  const bool caching = cache.enable_prefix_caching.value_or(!has_recurrent && !encoder_decoder);
  b.out.enable_prefix_caching = caching;
  if (encoder_decoder && !cache.enable_prefix_caching) {
    b.Add(Severity::kInfo, "prefix-caching-default-off",
          fmt::format("{} is an encoder-decoder model, for which the engine leaves prefix "
                      "caching off",
                      model.architecture));
  }
  if (encoder_decoder && caching) {
    b.Error("enable-prefix-caching",
            fmt::format("--enable-prefix-caching with the encoder-decoder model {}: the engine's "
                        "cross-attention manager keeps no prefix cache (its first lookup raises "
                        "NotImplementedError), and the engine leaves prefix caching off for "
                        "these models; drop --enable-prefix-caching",
                        model.architecture));
  }
  const char* const kind = attention_free ? "an attention-free" : "a hybrid";
  if (!cache.enable_prefix_caching && has_recurrent) {
    b.Add(Severity::kInfo, "prefix-caching-default-off",
          fmt::format("{} is {} model, for which the engine leaves prefix caching off unless "
                      "--enable-prefix-caching is given; recurrent layers use mode none",
                      model.architecture, kind));
  }
  if (!caching) {
    rec.mode = RecurrentMode::kNone;
    if (cache.mamba_cache_mode && *cache.mamba_cache_mode != RecurrentMode::kNone) {
      b.Add(Severity::kWarning, "mamba-cache-mode-forced",
            fmt::format("--mamba-cache-mode {} needs prefix caching, which is off ({}); recurrent "
                        "layers use mode none",
                        RecurrentModeName(*cache.mamba_cache_mode),
                        cache.enable_prefix_caching
                            ? std::string("--no-enable-prefix-caching")
                            : fmt::format("the engine's default for {} model; pass "
                                          "--enable-prefix-caching",
                                          kind)));
    }
  } else {
    // With caching on, the engine's unset mode (its "none") becomes all for a model with Mamba
    // prefix caching, else align, and all falls back to align for the others
    // (MambaModelConfig.verify_and_update_config). An explicit none is kept (recurrent groups
    // then never hit), with a warning that the engine would not keep it.
    const RecurrentMode fallback =
        model.supports_mamba_prefix_caching ? RecurrentMode::kAll : RecurrentMode::kAlign;
    rec.mode = cache.mamba_cache_mode.value_or(fallback);
    if (rec.mode == RecurrentMode::kNone && has_recurrent) {
      b.Add(Severity::kWarning, "mamba-cache-mode-none",
            fmt::format("--mamba-cache-mode none is kept with prefix caching (recurrent groups "
                        "never hit), but vLLM reads none as unset and runs {} for {}; omit the "
                        "flag to plan what the engine runs",
                        RecurrentModeName(fallback), model.architecture));
    }
    if (rec.mode == RecurrentMode::kAll && !model.supports_mamba_prefix_caching) {
      rec.mode = RecurrentMode::kAlign;
      b.Add(Severity::kWarning, "mamba-cache-mode-all-unsupported",
            fmt::format("{} does not support --mamba-cache-mode all; using align",
                        model.architecture));
    }
    if (rec.mode == RecurrentMode::kAlign && has_recurrent && !config.enable_chunked_prefill) {
      b.Error("mamba-align-chunked-prefill",
              fmt::format("--mamba-cache-mode align (the prefix-caching mode of {}) needs chunked "
                          "prefill, and the engine stops at startup without it; drop "
                          "--no-enable-chunked-prefill, or pass --no-enable-prefix-caching",
                          model.architecture));
    }
  }
  if (cache.mamba_block_size < 0) {
    return InvalidArgument(
        fmt::format("--mamba-block-size must be positive, got {}", cache.mamba_block_size));
  }
  // VllmConfig.validate_mamba_block_size: a block other than the length the engine itself sets
  // without prefix caching is refused there, for any model.
  if (cache.mamba_block_size > 0 && cache.mamba_block_size != b.out.max_model_len && !caching) {
    b.Error("mamba-block-size-prefix-caching",
            fmt::format("--mamba-block-size {} with prefix caching off ({}): the engine refuses "
                        "it ('--mamba-block-size can only be set with --enable-prefix-caching'); "
                        "drop --mamba-block-size or pass --enable-prefix-caching",
                        cache.mamba_block_size,
                        cache.enable_prefix_caching
                            ? std::string("--no-enable-prefix-caching")
                            : fmt::format("the engine's default for {}", model.architecture)));
  }
  rec.block_size = cache.mamba_block_size             ? cache.mamba_block_size
                   : rec.mode == RecurrentMode::kNone ? b.out.max_model_len
                                                      : block_size;

  // Target layers (trunk).
  // Keep the BackendCaps alive for the contexts.
  std::vector<std::unique_ptr<BackendCaps>> backends;
  backends.push_back(std::make_unique<BackendCaps>(target_backend));
  const BackendCaps* target_caps = backends.back().get();
  const BackendCaps* built_caps = nullptr;
  if (built_backend) {
    backends.push_back(std::make_unique<BackendCaps>(*built_backend));
    built_caps = backends.back().get();
  }
  const BackendCaps* cross_caps = nullptr;
  if (cross_backend) {
    backends.push_back(std::make_unique<BackendCaps>(*cross_backend));
    cross_caps = backends.back().get();
  }
  AttentionOptions target_opts{.role = Role::kTarget,
                               .block_size = block_size,
                               .dtype = cache.kv_cache_dtype,
                               .backend = target_caps,
                               .causal = true,
                               .volatile_last_block = eagle_style};
  // Kept layers (--kv-cache-dtype-skip-layers, TurboQuant's boundary layers) store the model
  // dtype on the model's backend; TurboQuant layers run the backend that stores it unless
  // --attention-backend names one.
  KVTOPO_ASSIGN_OR_RETURN(const KeptLayers kept, ResolveKeptLayers(model, cache, b));
  AttentionOptions tq_opts = target_opts, skip_opts = target_opts;
  skip_opts.dtype = KvCacheDtype::kAuto;
  if (TurboQuantOf(cache.kv_cache_dtype) && cache.attention_backend.empty()) {
    KVTOPO_ASSIGN_OR_RETURN(const std::string tq_name, TurboQuantBackendName());
    KVTOPO_ASSIGN_OR_RETURN(const BackendCaps tq_backend, ResolveBackend(tq_name, "TurboQuant"));
    backends.push_back(std::make_unique<BackendCaps>(tq_backend));
    tq_opts.backend = backends.back().get();
  } else if (cache.attention_backend.empty() && !model.cache_dtype_auto &&
             (!kept.indices.empty() || kept.windowed)) {
    // The engine selects each layer's backend with the layer's own cache dtype: kept layers
    // select with auto, so where the launch's dtype moved the target's (nvfp4 to FLASHINFER)
    // they keep the model's default.
    KVTOPO_ASSIGN_OR_RETURN(const std::string kept_name,
                            DefaultBackendName(model, config, KvCacheDtype::kAuto));
    if (kept_name != target_backend.name) {
      KVTOPO_ASSIGN_OR_RETURN(const BackendCaps kept_backend,
                              ResolveBackend(kept_name, "--attention-backend"));
      backends.push_back(std::make_unique<BackendCaps>(kept_backend));
      skip_opts.backend = backends.back().get();
    }
  }
  // VllmConfig.validate_nvfp4_kv_cache_with_mla: no MLA backend stores an nvfp4 cache (the
  // sparse-MLA row format is nvfp4_ds_mla).
  if (cache.kv_cache_dtype == KvCacheDtype::kNvfp4 && HasMla(model)) {
    b.Error("kv-cache-dtype-mla",
            fmt::format("KV-cache dtype nvfp4 with {}, whose attention is MLA: the engine refuses "
                        "an nvfp4 KV cache with MLA backends at startup; pass --kv-cache-dtype fp8 "
                        "or bfloat16",
                        model.architecture));
  }
  // Layers built without the cache config take "auto", which a compressed-tensors kv_cache_scheme
  // still turns into fp8 (they get the quantization config): whether a requested dtype misses
  // them, and what they cache instead, for the infos.
  const auto misses_no_config_layers = [&](KvCacheDtype asked) {
    return asked != KvCacheDtype::kAuto &&
           asked != (model.kv_cache_scheme ? KvCacheDtype::kFp8 : KvCacheDtype::kAuto);
  };
  const std::string no_config_dtype = model.kv_cache_scheme
                                          ? fmt::format("fp8 ({})", model.kv_cache_scheme->field)
                                          : std::string("in the model's dtype");
  if (model.cache_dtype_auto && misses_no_config_layers(cache.kv_cache_dtype)) {
    b.Add(Severity::kInfo, "kv-cache-dtype-model",
          fmt::format("the attention layers of '{}' cache {}, not {}: the engine builds them "
                      "without the cache config",
                      target.file, no_config_dtype, KvCacheDtypeName(cache.kv_cache_dtype)));
  }
  bool target_kv_layers = false, target_scheme_fp8 = false;
  for (const RawLayer& raw : model.layers) {
    if (raw.mtp) continue;
    if (IsRecurrentLayer(raw.type)) {
      KVTOPO_ASSIGN_OR_RETURN(LayerSpec s, RecurrentSpec(raw, model, tp, rec));
      b.out.layers.push_back(std::move(s));
      b.context.push_back({nullptr, RecurrentCudagraphs(raw.type)});
    } else {
      // --kv-cache-dtype-skip-layers reaches only layers built with the cache config.
      const bool kept_layer = !model.cache_dtype_auto && kept.Keeps(raw);
      AttentionOptions o = model.cache_dtype_auto || kept_layer ? skip_opts
                           : TurboQuantOf(cache.kv_cache_dtype) ? tq_opts
                                                                : target_opts;
      if (raw.type != LayerType::kMla && raw.type != LayerType::kIndexer) {
        target_kv_layers = true;
        if (!kept_layer && SchemeCachesFp8(model, raw, o.dtype)) {
          o.dtype = KvCacheDtype::kFp8;
          target_scheme_fp8 = true;
        }
      }
      const bool built = !raw.built_backend.empty();
      if (built) o.backend = built_caps;
      if (raw.cross_attention && cross_caps != nullptr && o.backend == target_caps) {
        o.backend = cross_caps;
      }
      b.out.layers.push_back(AttentionSpec(raw, model, tp, o));
      b.context.push_back({.backend = o.backend,
                           .has_sinks = raw.has_sinks,
                           .model = &model,
                           .backend_named = !built && !cache.attention_backend.empty(),
                           .built_by_model = built});
    }
  }

  if (target_kv_layers) ReportKvCacheScheme(b, model, target_scheme_fp8);
  b.out.kv_cache_scheme_fp8 = target_scheme_fp8;

  // Draft layers (an MTP assistant keeps none).
  ModelDescription draft;
  // The draft's config as read (the target's for MTP); null without one.
  const ModelDescription* read_draft = nullptr;
  if (spec && spec->HasDraftCache() && !mtp_assistant) {
    const std::string& method = spec->method;
    const internal::SpeculativeMethod& row = *method_row;
    const bool mtp = row.cache == internal::DraftCache::kInModel;
    const ModelDescription* draft_model = &model;
    // The draft's model config (SpeculativeConfig.__post_init__) runs
    // ModelConfig._verify_quantization on the draft's checkpoint with the speculative config's
    // quantization, in the target's dtype.
    const auto check_draft_quantization = [&](const nlohmann::json& json, const std::string& file,
                                              const std::string& quantization_file) -> Status {
      KVTOPO_ASSIGN_OR_RETURN(
          const internal::QuantizationOutcome outcome,
          internal::CheckQuantization(json, file, quantization_file,
                                      {.asked = spec->quantization,
                                       .batch_invariant = config.batch_invariant,
                                       .gpu = cache.device_capability,
                                       .gpu_from = cache.device_capability_from,
                                       .model_dtype = model.dtype,
                                       .no_float16 = RefusesFloat16(model),
                                       .draft = true,
                                       .target_quantized = b.out.quantization.has_value()}));
      for (const Diagnostic& d : outcome.diagnostics) b.Add(d.severity, d.code, d.message);
      return Status::Ok();
    };
    if (mtp && !model.mtp_unavailable.empty()) {
      return Rejected(fmt::format("--speculative-config method 'mtp': {}", model.mtp_unavailable));
    }
    if (mtp) {
      if (!has_mtp_layers) {
        return InvalidArgument(fmt::format(
            "--speculative-config method 'mtp' needs in-model MTP layers, but {} declares none "
            "({}); choose another method",
            internal::ConfigFileLabel(target.file), model.mtp_key));
      }
      b.out.draft_name = target.name + " (mtp)";
      CheckMtpMoeKernels(config, model, target, b.out.quantization, b.quantization_config, *spec,
                         b);
      // The MTP draft's model config reads the target's checkpoint with the target's method,
      // unless the speculative config names another.
      if (spec->quantization) {
        KVTOPO_RETURN_IF_ERROR(
            check_draft_quantization(config.hf_overrides.empty() ? target.json : overridden,
                                     target.file, target.quantization_file));
      }
    } else {
      std::string draft_ref = spec->model;
      if (draft_ref.empty()) {
        auto it = std::find_if(model.default_drafts.begin(), model.default_drafts.end(),
                               [&](const auto& d) { return d.first == method; });
        if (it == model.default_drafts.end()) {
          return InvalidArgument(fmt::format(
              "--speculative-config: method '{}' needs a 'model' (a draft profile name or "
              "config path); '{}' has no default {} draft",
              method, target.name, method));
        }
        draft_ref = it->second;
        // SpeculativeConfig.__post_init__ refuses a method that needs a draft model without
        // one: an error. The profile's default draft is kvtopo's, so that the rejected plan
        // still shows the figures of the launch with that draft.
        b.Add(Severity::kError, "speculative-default-draft",
              fmt::format("--speculative-config names no 'model', so kvtopo plans {}'s default "
                          "{} draft, profile '{}'; the engine refuses a speculative config "
                          "without one ('num_speculative_tokens was provided but without "
                          "speculative model'): add \"model\" with the draft's path or repo id",
                          target.name, method, draft_ref));
      }
      KVTOPO_ASSIGN_OR_RETURN(
          internal::LoadedConfig loaded,
          internal::LoadModelConfig(draft_ref, config.config_format, spec->revision,
                                    "--speculative-config revision"));
      KVTOPO_RETURN_IF_ERROR(internal::ResolveDraftConfig(method, loaded));
      if (!loaded.origin.empty()) b.Add(Severity::kInfo, "hf-cache", "draft " + loaded.origin);
      KVTOPO_ASSIGN_OR_RETURN(
          draft, internal::DescribeModel(loaded.json, loaded.file,
                                         {.trust_remote_code = config.trust_remote_code}));
      if (!draft.method.empty() && draft.method != method) {
        return InvalidArgument(fmt::format(
            "--speculative-config: draft '{}' implements method '{}', not '{}'; set \"method\": "
            "\"{}\" or choose another draft",
            loaded.name, draft.method, method, draft.method));
      }
      // The engine builds the draft's model config with the target's dtype.
      draft.dtype = model.dtype;
      KVTOPO_RETURN_IF_ERROR(
          check_draft_quantization(loaded.json, loaded.file, loaded.quantization_file));
      CheckTensorParallelHeads(draft, fmt::format("draft '{}'", loaded.file), tp, b);
      CheckEagleLayerTypes(model, draft, loaded, b);
      CheckMlpActivation(draft, loaded.file, /*draft=*/true, b);
      CheckDraftImportedEnvironment(config, draft, loaded.json, loaded.name, environment_refused,
                                    b);
      if (method == "draft_model") CheckDraftModelVocab(model, draft, loaded.name, b);
      draft_model = &draft;
      b.out.draft_name = loaded.name;
    }
    read_draft = draft_model;

    // Backend: "" inherits --attention-backend (else the draft's own default); "auto" picks
    // the draft's default independently of the target.
    std::string draft_backend_name = spec->draft_attention_backend;
    const bool draft_backend_named =
        (!draft_backend_name.empty() && draft_backend_name != "auto") ||
        (draft_backend_name.empty() && !cache.attention_backend.empty());
    // Cache dtype: draft_kv_cache_dtype, else an external draft's own serving default (its
    // profile's kv_cache_dtype), else the target's --kv-cache-dtype; the model's dtype for MTP
    // layers built without the cache config.
    const bool mtp_auto = mtp && model.mtp_cache_dtype_auto;
    const KvCacheDtype draft_dtype =
        mtp_auto ? KvCacheDtype::kAuto
                 : spec->draft_kv_cache_dtype.value_or(
                       mtp ? cache.kv_cache_dtype
                           : draft_model->kv_cache_dtype.value_or(cache.kv_cache_dtype));
    const KvCacheDtype asked = spec->draft_kv_cache_dtype.value_or(cache.kv_cache_dtype);
    if (mtp_auto && misses_no_config_layers(asked)) {
      b.Add(Severity::kInfo, "mtp-cache-dtype-model",
            fmt::format("the MTP layers of '{}' cache {}, not {}: the engine builds them without "
                        "the cache config",
                        target.file, no_config_dtype, KvCacheDtypeName(asked)));
    }
    if (TurboQuantOf(draft_dtype) && !mtp) {
      return Rejected(fmt::format(
          "--speculative-config: draft '{}' would store {} (a TurboQuant cache, whose boundary "
          "layers the engine picks by the draft's layer indices); kvtopo does not plan a "
          "TurboQuant draft: set \"draft_kv_cache_dtype\"",
          b.out.draft_name, KvCacheDtypeName(draft_dtype)));
    }
    if (draft_backend_name.empty() && !cache.attention_backend.empty()) {
      draft_backend_name = cache.attention_backend;
    } else if (draft_backend_name.empty() && mtp && TurboQuantOf(draft_dtype)) {
      // In-model MTP layers past the trunk are never boundary layers: TurboQuant.
      KVTOPO_ASSIGN_OR_RETURN(draft_backend_name, TurboQuantBackendName());
    } else if (draft_backend_name.empty() || draft_backend_name == "auto") {
      // MTP layers are selected with their own cache dtype, as the target's layers are with
      // theirs. K/V MTP layers behind an MLA trunk (LongCat-Flash's, whose draft config is not
      // MLA) are selected among the K/V backends, by their own layers, without the target's
      // profile backend.
      ModelDescription kv_mtp;
      const bool kv_mtp_layers =
          mtp && HasMla(model) &&
          std::none_of(model.layers.begin(), model.layers.end(), [](const RawLayer& l) {
            return l.mtp && (l.type == LayerType::kMla || l.type == LayerType::kIndexer);
          });
      if (kv_mtp_layers) {
        kv_mtp = model;
        std::erase_if(kv_mtp.layers, [](const RawLayer& l) { return !l.mtp; });
        kv_mtp.default_backend.clear();
      }
      const ModelDescription& picked_for = kv_mtp_layers ? kv_mtp : mtp ? model : *draft_model;
      std::vector<std::string> none_took;
      KVTOPO_ASSIGN_OR_RETURN(
          draft_backend_name,
          DefaultBackendName(picked_for, config, SelectionDtype(picked_for, draft_dtype),
                             &none_took));
      ReportDevicePick(b, picked_for, "draft", draft_backend_name, none_took,
                       "the speculative config's draft_attention_backend");
    }
    KVTOPO_ASSIGN_OR_RETURN(
        const BackendCaps draft_backend,
        ResolveBackend(draft_backend_name, "--speculative-config 'draft_attention_backend'"));
    backends.push_back(std::make_unique<BackendCaps>(draft_backend));
    const BackendCaps* draft_caps = backends.back().get();
    b.out.draft_attention_backend = draft_backend.name;

    // Block size: the launch's cache block when the draft backend's kernels take it (else the
    // launch is refused below and its preferred block is planned); windowed draft layers take the
    // block their backend picks at planning time (LayerSpec::backend_selects_block).
    const int64_t draft_block = draft_backend.SupportsBlockSize(block_size)
                                    ? block_size
                                    : draft_backend.preferred_block_size;

    const bool causal = draft_model->causal.value_or(row.causal);
    // Placement under DCP (fork_and_models.md A.1, A.4; DESIGN.md §3 rule 2).
    const bool replicated = N > 1 && internal::DraftIsReplicated(row, causal, config.shard_draft);
    if (N > 1 && config.shard_draft == ShardDraftRequest::kOther &&
        !config.shard_draft_value.empty()) {
      // Every method's rule reads such a value as it reads an unset variable.
      const char* placement = replicated ? "replicated" : "sharded";
      b.Add(Severity::kWarning, "dcp-shard-draft-unrecognized",
            fmt::format("VLLM_DCP_SHARD_DRAFT '{}' is neither 1, true/yes nor 0/false/no; method "
                        "'{}' reads it as unset: the draft cache is {} across the {} DCP ranks",
                        config.shard_draft_value, method, placement, N));
    }
    AttentionOptions draft_opts{.role = Role::kDraft,
                                .block_size = draft_block,
                                .dtype = draft_dtype,
                                .backend = draft_caps,
                                .name_prefix = mtp ? "" : "draft.",
                                .causal = causal,
                                .volatile_last_block = eagle_style,
                                .replicated = replicated};
    const int64_t first_draft = static_cast<int64_t>(b.out.layers.size());
    bool draft_kv_layers = false, draft_scheme_fp8 = false;
    const BackendCaps* draft_built_caps = nullptr;
    for (const RawLayer& raw : draft_model->layers) {
      if (mtp != raw.mtp) continue;
      if (IsRecurrentLayer(raw.type)) {
        KVTOPO_ASSIGN_OR_RETURN(LayerSpec s, RecurrentSpec(raw, *draft_model, tp, rec));
        s.name = draft_opts.name_prefix + s.name;
        s.role = Role::kDraft;
        b.out.layers.push_back(std::move(s));
        b.context.push_back({nullptr, RecurrentCudagraphs(raw.type)});
        continue;
      }
      // Kept layers apply to the draft's layers by their own indices too (one cache config);
      // a TurboQuant draft (MTP) keeps its dtype.
      AttentionOptions o = draft_opts;
      const bool skipped = kept.Keeps(raw) && !TurboQuantOf(draft_dtype);
      if (skipped) o.dtype = KvCacheDtype::kAuto;
      if (raw.type != LayerType::kMla && raw.type != LayerType::kIndexer) {
        draft_kv_layers = true;
        // MTP layers built without the cache config take auto, and the scheme (kept layers do
        // not reach them).
        if ((mtp_auto || !skipped) && SchemeCachesFp8(*draft_model, raw, o.dtype)) {
          o.dtype = KvCacheDtype::kFp8;
          draft_scheme_fp8 = true;
        }
      }
      // A draft of a model whose code builds some layers on a backend of its own (a
      // draft_model) builds them so too.
      const bool built = !raw.built_backend.empty();
      if (built && draft_built_caps == nullptr) {
        KVTOPO_ASSIGN_OR_RETURN(const BackendCaps own,
                                ResolveBackend(raw.built_backend, draft_model->architecture));
        backends.push_back(std::make_unique<BackendCaps>(own));
        draft_built_caps = backends.back().get();
      }
      if (built) o.backend = draft_built_caps;
      b.out.layers.push_back(AttentionSpec(raw, *draft_model, tp, o));
      b.context.push_back({.backend = o.backend,
                           .has_sinks = raw.has_sinks,
                           .model = draft_model,
                           .backend_named = !built && draft_backend_named,
                           .built_by_model = built});
    }
    if (draft_kv_layers) ReportKvCacheScheme(b, *draft_model, draft_scheme_fp8);

    // Draft windows.
    using internal::DraftWindowKnob;
    const bool dspark_window =
        row.window == DraftWindowKnob::kDsparkKvWindow && config.dspark_draft_kv_window != 0;
    if (config.dspark_draft_kv_window != 0 && row.window != DraftWindowKnob::kDsparkKvWindow) {
      b.Add(Severity::kWarning, "dspark-window-ignored",
            fmt::format("VLLM_DSPARK_DRAFT_KV_WINDOW {} applies only to DSpark drafts; method "
                        "'{}' ignores it",
                        config.dspark_draft_kv_window, method));
    }
    const int64_t dflash_window =
        row.window == DraftWindowKnob::kDflashWindowSize ? spec->dflash_draft_window_size : 0;
    if (spec->dflash_draft_window_size > 0 && row.window != DraftWindowKnob::kDflashWindowSize) {
      b.Add(Severity::kWarning, "dflash-window-ignored",
            fmt::format("dflash_draft_window_size {} applies only to method dflash; '{}' "
                        "ignores it",
                        spec->dflash_draft_window_size, method));
    }
    for (size_t i = static_cast<size_t>(first_draft); i < b.out.layers.size(); ++i) {
      LayerSpec& s = b.out.layers[i];
      if (s.sparse_indexer || !IsAttention(s.kind)) continue;
      // A window shorter than the draft's final block is rejected over the plan (launch rules).
      if (dspark_window && IsMla(s.kind)) {
        s.kind = CacheKind::kSlidingWindowMla;
        s.sliding_window = config.dspark_draft_kv_window;
      }
      if (dflash_window > 0) {
        s.kind = CacheKind::kSlidingWindow;
        s.sliding_window = dflash_window;
      }
      if (IsWindowed(s.kind) && !mtp) s.backend_selects_block = true;
    }
    // Every other draft attention layer caches in the launch's cache block, as the target's
    // layers do (one cache config): its backend must run a kernel block that divides it, or the
    // engine finds no common kernel block once the weights are loaded (select_common_block_size).
    if (draft_block != block_size) {
      for (size_t i = static_cast<size_t>(first_draft); i < b.out.layers.size(); ++i) {
        const LayerSpec& s = b.out.layers[i];
        if (s.sparse_indexer || !IsAttention(s.kind) || s.backend_selects_block) continue;
        b.Error("draft-backend-block-size",
                fmt::format("draft layer '{}' runs on {}, whose kernels cannot run the "
                            "{}-token cache block (the target backend's, or --block-size): the "
                            "engine finds no common kernel block once the weights are loaded "
                            "('No common block size'); choose a draft_attention_backend that "
                            "runs it, or a --block-size both backends take",
                            s.name, draft_backend.name, block_size));
        break;
      }
    }

    if (row.dcp_needs_dspark_backend && N > 1 && !draft_backend.dspark_draft_under_dcp) {
      b.Error("dspark-dcp-backend",
              fmt::format("target --decode-context-parallel-size {} with the external DSpark "
                          "draft '{}' needs a draft_attention_backend that runs DSpark under "
                          "DCP ({}), got {}; set \"draft_attention_backend\" to one of them or "
                          "--decode-context-parallel-size 1",
                          N, b.out.draft_name, DsparkUnderDcpBackends(), draft_backend.name));
    }
  }

  if (spec) CheckProposer(model, read_draft, b.out.draft_name, *spec, *method_row, config, b);
  if (spec && read_draft != nullptr) CheckDraftMaxModelLen(*read_draft, b.out.draft_name, *spec, b);
  // A draft fed the target's auxiliary hidden states needs a target class with the engine's
  // EAGLE-3 interface that sets and collects them; otherwise the engine fails once the weights
  // are loaded.
  using internal::AuxHiddenStates;
  const bool aux_fed =
      method_row && (method_row->aux_hidden_states == AuxHiddenStates::kAlways ||
                     (method_row->aux_hidden_states == AuxHiddenStates::kUnlessDraftDeclines &&
                      draft.draft_uses_aux_hidden_states));
  const std::string unavailable = aux_fed ? internal::AuxHiddenStatesUnavailable(model) : "";
  if (!unavailable.empty()) {
    RefuseAuxHiddenStates(*spec, *method_row, unavailable, b);
  } else if (aux_fed && draft.draft_fc_states > 0) {
    CheckDraftAuxInputs(model, draft, b.out.draft_name, b);
  }
  if (spec && spec->method == "extract_hidden_states" && unavailable.empty()) {
    KVTOPO_RETURN_IF_ERROR(AddHiddenStateCache(
        model, config.hf_overrides.empty() ? target.json : overridden, target.file, *spec, b));
  }

  // The engine sets every sliding window's retained tail once for the whole launch: S - 1 tokens
  // when several MTP modules each re-prefill the last tokens, else none (vLLM
  // get_kv_cache_configs); a per-layer value from the model does not survive it.
  const int64_t num_mtp_modules =
      std::count_if(model.layers.begin(), model.layers.end(), [](const RawLayer& l) {
        return l.mtp && (l.type == LayerType::kMla || l.type == LayerType::kAttention ||
                         l.type == LayerType::kSlidingWindow || l.type == LayerType::kChunkedLocal);
      });
  const bool multi_module_mtp =
      method_row && method_row->cache == internal::DraftCache::kInModel && num_mtp_modules > 1;
  for (LayerSpec& s : b.out.layers) {
    if (IsWindowed(s.kind)) s.extra_retained_tokens = multi_module_mtp ? S - 1 : 0;
  }

  if (config.pipeline_parallel_size > 1 || config.pp_layer_partition) {
    AssignPipelineStages(config, model, spec ? &*spec : nullptr, read_draft, b);
  }
  for (const Diagnostic& d : config.launch_diagnostics) b.Add(d.severity, d.code, d.message);
  if (spec) CheckSpeculativeLaunch(*spec, *method_row, b);
  // A KV connector whose class kvtopo cannot resolve: the engine turns its hybrid manager off
  // unless the class supports it (SupportsHMA).
  const bool kv_connector = !config.kv_connector.empty() && !config.kv_connector_hma.has_value();
  const bool hybrid = std::any_of(b.out.layers.begin(), b.out.layers.end(), [](const LayerSpec& s) {
    return IsWindowed(s.kind) || s.kind == CacheKind::kRecurrent;
  });
  if (kv_connector && hybrid && !config.disable_hybrid_kv_cache_manager &&
      b.out.hybrid_manager_off.empty()) {
    b.Add(Severity::kWarning, "kv-connector-hybrid-manager",
          fmt::format("{}: the engine turns its hybrid KV cache manager off unless KV connector "
                      "{} supports it (SupportsHMA), which kvtopo cannot tell of a class from "
                      "an external module or an installed package; without it this model's "
                      "windowed or recurrent layers plan differently; the plan shown keeps it "
                      "on: pass --disable-hybrid-kv-cache-manager to plan a connector without "
                      "that support, or --no-disable-hybrid-kv-cache-manager to say it has it",
                      config.kv_connector_source, config.kv_connector));
  }
  // NixlConnector moves a Mamba state's conv channels in three reads, which needs the channels
  // first: its worker asserts VLLM_SSM_CONV_STATE_LAYOUT=DS for a KV cache with any recurrent
  // group (NixlConnectorWorker.__init__, as the workers allocate the KV cache).
  // MultiConnector builds each of its connectors' workers the same way.
  const bool nixl = config.kv_connector == "NixlConnector" ||
                    std::find(config.kv_sub_connectors.begin(), config.kv_sub_connectors.end(),
                              "NixlConnector") != config.kv_sub_connectors.end();
  const std::optional<std::string>& layout = config.ssm_conv_state_layout;
  if (nixl && has_recurrent && layout != "DS") {
    b.Error("kv-connector-conv-state-layout",
            fmt::format("{}: {} transfers a recurrent state's conv channels in three "
                        "reads and its workers assert the DS conv state layout ('3-read Mamba "
                        "conv transfer requires DS conv state layout. Set "
                        "VLLM_SSM_CONV_STATE_LAYOUT=DS') once the weights are loaded, where {} "
                        "keeps recurrent layers and VLLM_SSM_CONV_STATE_LAYOUT is {}; set "
                        "VLLM_SSM_CONV_STATE_LAYOUT=DS (--ssm-conv-state-layout DS)",
                        config.kv_connector_source,
                        config.kv_connector == "NixlConnector" ? "NixlConnector"
                                                               : "MultiConnector's NixlConnector",
                        model.architecture,
                        layout ? fmt::format("'{}'", *layout) : std::string("unset (SD)")));
  }
  AddNotPlanned(config, spec ? &*spec : nullptr, b);

  ResolveCudagraphMode(b, model, spec ? spec->num_speculative_tokens : 0);
  if (config.kv_connector == "OffloadingConnector") SetOffloadingConnector(config, b.out);

  ValidateBackends(b);
  return std::move(b.out);
}

}  // namespace

LaunchConfig DefaultLaunchConfig() {
  LaunchConfig c;
  c.model = "kimi-k3";
  c.parallel = ParallelConfig{.tensor_parallel_size = 16, .decode_context_parallel_size = 16};
  c.cache.max_model_len = 1'000'000;
  c.cache.max_num_batched_tokens = 1024;
  c.max_num_batched_tokens_given = true;
  c.cache.async_scheduling = true;
  // The production run cached prefixes: its 483 pages per request are mode align's (a hybrid
  // model's engine default is prefix caching off).
  c.cache.enable_prefix_caching = true;
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  c.cache.attention_backend = "B12X_MLA";
  c.cache.kv_group_size = 6;                // VLLM_K3_KV_GROUP_SIZE=6
  c.dspark_draft_kv_window = 32768;         // VLLM_DSPARK_DRAFT_KV_WINDOW=32768
  c.kv_cache_memory_bytes = 1'325'000'000;  // KV_CACHE_MEMORY_BYTES
  c.speculative = SpeculativeConfig{.method = "dspark",
                                    .model = "kimi-k3-dspark",
                                    .num_speculative_tokens = 7,
                                    .draft_attention_backend = "B12X_MLA"};
  return c;
}

Result<ModelCacheSpecs> BuildModelCacheSpecs(const LaunchConfig& config) {
  const std::string name = config.model.empty() ? "kimi-k3" : config.model;
  // --hf-config-path: the engine's get_config(hf_config_path or model); the model keeps its name.
  Result<internal::LoadedConfig> read =
      internal::LoadModelConfig(config.hf_config_path.empty() ? name : config.hf_config_path,
                                config.config_format, config.revision);
  if (!read.ok() && !config.hf_config_path.empty()) {
    return Status(read.status().code(),
                  fmt::format("--hf-config-path: {}", read.status().message()));
  }
  KVTOPO_ASSIGN_OR_RETURN(internal::LoadedConfig loaded, std::move(read));
  if (!config.hf_config_path.empty()) loaded.name = name;
  return Build(loaded, config);
}

Result<ModelCacheSpecs> BuildModelCacheSpecsFromJson(const nlohmann::json& model_config,
                                                     const LaunchConfig& config) {
  const std::string name = config.model.empty() ? "<config>" : config.model;
  return Build(internal::LoadedConfig{model_config, name, name}, config);
}

std::vector<std::string> ListArchitectures() {
  std::vector<std::string> names = internal::SupportedArchitectures();
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::vector<ProfileInfo>> ListProfiles() {
  std::vector<ProfileInfo> out;
  for (const internal::EmbeddedFile& f : internal::EmbeddedProfileFiles()) {
    if (f.stem == "vllm-flags") continue;
    if (f.stem == "backends") {
      KVTOPO_ASSIGN_OR_RETURN(std::vector<BackendCaps> list, ListBackends());
      out.push_back({std::string(f.stem), "backends", "", static_cast<int64_t>(list.size())});
      continue;
    }
    KVTOPO_ASSIGN_OR_RETURN(internal::LoadedConfig loaded,
                            internal::LoadModelConfig(std::string(f.stem)));
    KVTOPO_ASSIGN_OR_RETURN(ModelDescription m, internal::DescribeModel(loaded.json, loaded.file));
    out.push_back(
        {std::string(f.stem), m.kind, m.architecture, static_cast<int64_t>(m.layers.size())});
  }
  return out;
}

}  // namespace kvtopo
