#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "internal/checked_math.h"
#include "kvtopo/backend.h"
#include "kvtopo/limits.h"
#include "kvtopo/plan.h"

namespace kvtopo {

using internal::CeilDiv;

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "?";
}

int64_t Plan::max_tokens_in_flight() const {
  return cache.MaxInFlightTokens(model.pipeline_stages(), model.v2_model_runner);
}

bool Plan::accepted() const {
  return std::none_of(diagnostics.begin(), diagnostics.end(),
                      [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

bool Plan::prefix_caching() const {
  return cache.enable_prefix_caching.value_or(model.enable_prefix_caching);
}

std::string Plan::ErrorLines() const {
  std::string lines;
  for (const Diagnostic& d : diagnostics) {
    if (d.severity == Severity::kError) lines += "\n  error [" + d.code + "] " + d.message;
  }
  return lines;
}

namespace {

// Whether one backend's kernels take blocks of `b` tokens (no registry entry: any size).
bool SupportsKernelBlock(const BackendTraits& t, int64_t b) {
  if (t.kernel_block_sizes.empty() && t.kernel_block_multiple_of == 0) return true;
  if (t.kernel_block_multiple_of > 0 && b % t.kernel_block_multiple_of == 0) return true;
  return std::find(t.kernel_block_sizes.begin(), t.kernel_block_sizes.end(), b) !=
         t.kernel_block_sizes.end();
}

}  // namespace

int64_t SelectKernelBlockSize(int64_t block_size, const std::vector<const BackendTraits*>& traits) {
  auto all_support = [&](int64_t b) {
    return std::all_of(traits.begin(), traits.end(),
                       [&](const BackendTraits* t) { return SupportsKernelBlock(*t, b); });
  };
  if (all_support(block_size)) return block_size;
  // Candidates: the exact sizes any backend lists; the largest dividing B that all take.
  int64_t best = 0;
  for (const BackendTraits* t : traits) {
    for (int64_t b : t->kernel_block_sizes) {
      if (b > 0 && block_size % b == 0 && b > best && all_support(b)) best = b;
    }
  }
  return best;
}

namespace {

constexpr int kShardedPartition = 0;
constexpr int kReplicatedPartition = 1;

Diagnostic Error(std::string code, std::string message) {
  return Diagnostic{Severity::kError, std::move(code), std::move(message)};
}

// Two specs that differ only by layer name share a bucket; so do two that differ only by their
// layers' query heads (Laguna-XS's per-layer heads) or by the model they belong to (a draft
// layer whose cache is the target's, as an EAGLE head's or an MTP layer's beside a hybrid
// target), which the engine's KV-cache specs do not hold: it buckets layers by spec equality
// (_get_kv_cache_groups_uniform_page_size at 28be48fa9, whose own example is gpt-oss with an
// EAGLE layer: 12 windowed + 13 full layers, padded to two groups of 13). Drafts the engine
// does keep apart differ in their spec or their partition (DCP-replicated). Whether the backend
// picked a windowed draft layer's block (ResolveBackendSelectedBlocks, before grouping) is not
// in the spec either: the block it picked is. Nor is the attention backend (the engine runs a
// group's layers of two backends as two attention groups, on a kernel block both take:
// ComputeGeometries) or the model's total K/V heads (the per-rank heads are).
bool SameSpec(const LayerSpec& a, const LayerSpec& b) {
  LayerSpec x = a;
  x.name = b.name;
  x.num_q_heads_total = b.num_q_heads_total;
  x.num_kv_heads_total = b.num_kv_heads_total;
  x.role = b.role;
  x.backend_selects_block = b.backend_selects_block;
  x.attention_backend = b.attention_backend;
  return x == b;
}

enum class TypeClass { kFull, kWindow, kChunked, kRecurrent, kCross };

TypeClass ClassOf(const LayerSpec& s) {
  // The engine's CrossAttentionSpec is a type of its own: never one group with full attention.
  if (s.cross_attention) return TypeClass::kCross;
  switch (s.kind) {
    case CacheKind::kFullAttention:
    case CacheKind::kMla:
      return TypeClass::kFull;
    case CacheKind::kSlidingWindow:
    case CacheKind::kSlidingWindowMla:
      return TypeClass::kWindow;
    case CacheKind::kChunkedLocal:
      return TypeClass::kChunked;
    case CacheKind::kRecurrent:
      return TypeClass::kRecurrent;
  }
  return TypeClass::kFull;
}

// Layers that always need the same number of token slots per block: one group, one page of
// every layer per block id (research §3.2 "uniform type").
bool IsUniformType(const std::vector<LayerSpec>& layers) {
  const LayerSpec& f = layers.front();
  for (const LayerSpec& s : layers) {
    if (s.block_size != f.block_size || ClassOf(s) != ClassOf(f) || s.dcp != f.dcp) {
      return false;
    }
    switch (ClassOf(f)) {
      case TypeClass::kFull:
      case TypeClass::kCross:
        break;
      case TypeClass::kWindow:
        if (s.kind != f.kind || s.sliding_window != f.sliding_window ||
            s.extra_retained_tokens != f.extra_retained_tokens) {
          return false;
        }
        break;
      case TypeClass::kChunked:
        if (s.attention_chunk_size != f.attention_chunk_size) return false;
        break;
      case TypeClass::kRecurrent:
        if (s.num_speculative_blocks != f.num_speculative_blocks ||
            s.recurrent_mode != f.recurrent_mode) {
          return false;
        }
        break;
    }
  }
  return true;
}

int64_t MinKernelBlock(const BackendTraits& traits) {
  int64_t m = 0;
  for (int64_t b : traits.kernel_block_sizes) m = m == 0 ? b : std::min(m, b);
  if (traits.kernel_block_multiple_of > 0) {
    m = m == 0 ? traits.kernel_block_multiple_of : std::min(m, traits.kernel_block_multiple_of);
  }
  return m;
}

class Planner {
 public:
  Planner(const ModelCacheSpecs& specs, const PlanInputs& inputs) : specs_(specs), inputs_(inputs) {
    if (specs.layer_stages.size() == specs.layers.size()) {
      for (size_t i = 0; i < specs.layers.size(); ++i) {
        stage_of_[specs.layers[i].name] = specs.layer_stages[i];
      }
    }
  }

  Result<Plan> Run();

 private:
  const BackendTraits& TraitsOf(const std::string& backend) const {
    static const BackendTraits kNone;
    auto it = inputs_.backends.find(backend);
    return it == inputs_.backends.end() ? kNone : it->second;
  }

  Status AlignHybridBlockSize(std::vector<LayerSpec>& layers);
  Status ResolveBackendSelectedBlocks(std::vector<LayerSpec>& layers);
  Status CacheAsOneType(std::vector<LayerSpec>& layers);
  void CheckOneWindowPerGroup(const std::vector<LayerSpec>& layers);
  Status UnifyPageSizes(std::vector<LayerSpec>& layers);
  Status GroupPartition(std::vector<LayerSpec> layers, int partition,
                        std::vector<PlannedGroup>& out);
  Status AddGroup(const std::vector<const LayerSpec*>& members, int partition, bool uniform_type,
                  std::vector<PlannedGroup>& out) const;
  Status GroupLayerTuples(std::vector<LayerSpec>& layers, int partition,
                          std::vector<PlannedGroup>& out);
  Status ComputeGeometries(std::vector<PlannedGroup>& groups);
  Status TryPromotion(Plan& plan, const std::vector<LayerSpec>& replicated);
  Result<int64_t> CheckedMemory(int64_t bytes_per_block) const;
  Result<int64_t> BlocksPerRequest(const std::vector<PlannedGroup>& groups,
                                   int64_t max_model_len) const;
  Result<int64_t> MaxModelLenThatFits(const std::vector<PlannedGroup>& groups,
                                      int64_t bytes_per_block, int64_t memory) const;
  Status Finalize(Plan& plan);
  void CheckOffloading(const Plan& plan);
  void CheckStagesHoldLayers(const Plan& plan);
  Result<int64_t> BytesPerBlock(const std::vector<PlannedGroup>& groups, int partition = -1,
                                int stage = -1) const;
  int StageOf(const std::string& layer) const;  // 0 without pipeline stages

  const ModelCacheSpecs& specs_;
  const PlanInputs& inputs_;
  std::vector<Diagnostic> diagnostics_;
  std::unordered_map<std::string, int> stage_of_;  // layer name -> pipeline stage
  // Layer tuples (GroupLayerTuples), one layout per pipeline stage (one without stages): the full
  // group's page sizes on the stage, ascending, whose sum is one tuple; the tuples one block spans
  // there; and the tuples the engine's memory check counts. Empty without layer tuples.
  struct TupleLayout {
    std::vector<int64_t> pages;
    int64_t tuples = 0;
    int64_t checked_tuples = 0;
  };
  Status ProjectLayerTuples(const std::vector<PlannedGroup>& groups,
                            const std::vector<int64_t>& full_pages);
  Result<int64_t> TupleStride(const TupleLayout& t, int64_t tuples) const;
  // The bytes per block the engine's memory check takes: each worker's, the largest (equal to the
  // pool's stride but where a group has no layer on a stage).
  Result<int64_t> CheckedBytesPerBlock(const Plan& plan) const;
  std::vector<TupleLayout> tuple_stages_;
};

// Hybrid attention + recurrent block alignment (research §3.7, vLLM's platform
// `_align_hybrid_block_size`): measured on the target's layers, the attention block grows until
// one page of the target's attention rows holds a recurrent state, and recurrent pages are padded
// to that page. The attention rows exclude a page tail (e.g. a pooled indexer key), which is
// added on top of whatever block results. Every attention layer still at the launch's block
// (target, and drafts that follow the cache block) takes the new block.
Status Planner::AlignHybridBlockSize(std::vector<LayerSpec>& layers) {
  int64_t block = 0, attn_1tok = 0, state_page = 0;
  const LayerSpec* first_attn = nullptr;
  const LayerSpec* first_rec = nullptr;
  for (const LayerSpec& s : layers) {
    if (s.role != Role::kTarget) continue;
    if (s.kind == CacheKind::kRecurrent) {
      KVTOPO_ASSIGN_OR_RETURN(int64_t page, RealPageSizeBytes(s));
      // The engine's estimate of the state, where its class's differs from the layer's.
      if (s.alignment_state_bytes > 0) page = s.alignment_state_bytes;
      state_page = std::max(state_page, page);
      if (!first_rec) first_rec = &s;
    } else {
      // The engine sizes an attention token by the cache config's dtype: a layer that caches
      // fp8 only by the checkpoint's kv_cache_scheme counts the model's dtype here.
      LayerSpec row = s;
      if (specs_.kv_cache_scheme_fp8 && !IsMla(s.kind) && s.cache_dtype == KvCacheDtype::kFp8) {
        row.cache_dtype = KvCacheDtype::kAuto;
      }
      KVTOPO_ASSIGN_OR_RETURN(int64_t per_token, AttentionRecordBytesPerToken(row));
      attn_1tok = std::max(attn_1tok, per_token);
      block = std::max(block, s.block_size);
      if (!first_attn) first_attn = &s;
    }
  }
  if (!first_attn || !first_rec || state_page == 0) return Status::Ok();
  const int64_t kalign = std::max(MinKernelBlock(TraitsOf(first_attn->attention_backend)), block);
  int64_t attn_block = 0;
  const RecurrentMode mode = first_rec->recurrent_mode;
  int64_t recurrent_block = first_rec->block_size;
  if (mode == RecurrentMode::kAll) {
    // The engine aligns to --mamba-block-size when given, else to the model's chunk size.
    const int64_t base =
        inputs_.cache.mamba_block_size ? inputs_.cache.mamba_block_size : specs_.mamba_chunk_size;
    if (base <= 0) {
      return InvalidArgument(fmt::format("the model's Mamba chunk size must be positive, got {}",
                                         specs_.mamba_chunk_size));
    }
    const int64_t tokens = CeilDiv(state_page, attn_1tok);
    KVTOPO_ASSIGN_OR_RETURN(int64_t chunk, internal::CheckedLcm(base, kalign, "block alignment"));
    KVTOPO_ASSIGN_OR_RETURN(
        attn_block, internal::CheckedMul(chunk, CeilDiv(tokens, chunk), "hybrid attention block"));
    recurrent_block = attn_block;
  } else {
    KVTOPO_ASSIGN_OR_RETURN(int64_t align_bytes,
                            internal::CheckedMul(kalign, attn_1tok, "hybrid block alignment"));
    KVTOPO_ASSIGN_OR_RETURN(
        attn_block,
        internal::CheckedMul(kalign, CeilDiv(state_page, align_bytes), "hybrid attention block"));
  }
  const int64_t new_block = std::max(block, attn_block);
  if (mode == RecurrentMode::kAlign && inputs_.cache.mamba_block_size == 0) {
    recurrent_block = new_block;
  }
  for (LayerSpec& s : layers) {
    if (s.kind == CacheKind::kRecurrent) {
      if (s.recurrent_mode != RecurrentMode::kNone) s.block_size = recurrent_block;
    } else if (s.block_size == block && !s.backend_selects_block) {
      s.block_size = new_block;
    }
  }
  KVTOPO_ASSIGN_OR_RETURN(int64_t attn_page,
                          internal::CheckedMul(new_block, attn_1tok, "attention page"));
  for (LayerSpec& s : layers) {
    if (s.kind != CacheKind::kRecurrent) continue;
    KVTOPO_ASSIGN_OR_RETURN(int64_t raw, RealPageSizeBytes(s));
    if (raw < attn_page) s.page_size_padded = attn_page;
    // The engine pads every Mamba page to the attention page where its estimate falls short of
    // it (cache_config.mamba_page_size_padded), and asserts no state exceeds the padded page
    // (MambaSpec.page_size_bytes) as it sizes the KV cache: a state the speculative tokens widen
    // past an estimate that leaves them out can, and so can one whose class estimates it from
    // other dimensions (LayerSpec::alignment_state_note says which).
    if (raw > attn_page && state_page < attn_page) {
      // A block whose attention page holds the state (mode all aligns to the chunk instead);
      // dropping the speculative tokens also closes the gap where they alone make it.
      std::string raise;
      if (mode != RecurrentMode::kAll) {
        KVTOPO_ASSIGN_OR_RETURN(const int64_t align_bytes,
                                internal::CheckedMul(kalign, attn_1tok, "hybrid block alignment"));
        KVTOPO_ASSIGN_OR_RETURN(const int64_t holding,
                                internal::CheckedMul(kalign, CeilDiv(raw, align_bytes),
                                                     "attention block holding the state"));
        raise = fmt::format("raise --block-size to {}, whose attention page holds it", holding);
      }
      std::string fix = raise.empty() ? "no launch flag avoids it" : raise;
      if (s.alignment_state_speculative_only) {
        fix =
            raise.empty() ? "drop --speculative-config" : "drop --speculative-config, or " + raise;
      }
      diagnostics_.push_back(Error(
          "mamba-page-padding",
          fmt::format("layer '{}': its state takes {} B, but the engine sizes the {}-token "
                      "attention block from its model class's estimate, {} B ({}), pads every "
                      "Mamba page to the {} B attention page and asserts no state exceeds it "
                      "(MambaSpec.page_size_bytes) once the weights are loaded; {}",
                      s.name, raw, new_block, state_page, s.alignment_state_note, attn_page, fix)));
      return Rejected("the Mamba page exceeds its padding");
    }
  }
  return Status::Ok();
}

// The block a backend picks for a windowed draft layer (backend_selects_block): the largest
// block its kernels run that divides the target's common block and whose page fits the target's
// largest page, so the draft never forces a larger pool stride or a coarser scheduler block;
// the backend's smallest kernel block when none does (docs/planner.md, "draft window blocks").
Status Planner::ResolveBackendSelectedBlocks(std::vector<LayerSpec>& layers) {
  int64_t target_block = 0, target_page = 0;
  for (const LayerSpec& s : layers) {
    if (s.role != Role::kTarget) continue;
    KVTOPO_ASSIGN_OR_RETURN(int64_t page, PageSizeBytes(s));
    target_page = std::max(target_page, page);
    if (IsAttention(s.kind)) target_block = std::gcd(target_block, s.block_size);
  }
  for (LayerSpec& s : layers) {
    if (!s.backend_selects_block) continue;
    const BackendTraits& traits = TraitsOf(s.attention_backend);
    KVTOPO_ASSIGN_OR_RETURN(int64_t per_token, AttentionBytesPerToken(s));
    int64_t best = 0;
    // Divisors of the target block, found in pairs up to its square root (the block is bounded
    // by the launch checks, so this stays a few thousand steps).
    auto consider = [&](int64_t b) {
      if (b > best && SupportsKernelBlock(traits, b) && b <= target_page / per_token) best = b;
    };
    for (int64_t d = 1; target_block > 0 && d <= target_block / d; ++d) {
      if (target_block % d != 0) continue;
      consider(d);
      consider(target_block / d);
    }
    if (best == 0) best = MinKernelBlock(traits) > 0 ? MinKernelBlock(traits) : s.block_size;
    s.block_size = best;
  }
  return Status::Ok();
}

// One physical page size for a partition (research §3.5 with the later fallbacks): pad
// recurrent pages; scale the block size when the largest page is a multiple; pad attention whose
// backend indexes pages by block stride (never MLA); otherwise reject naming both pages.
Status Planner::UnifyPageSizes(std::vector<LayerSpec>& layers) {
  int64_t max_page = 0;
  const LayerSpec* max_layer = nullptr;
  for (const LayerSpec& s : layers) {
    KVTOPO_ASSIGN_OR_RETURN(int64_t page, PageSizeBytes(s));
    if (page > max_page) {
      max_page = page;
      max_layer = &s;
    }
  }
  const std::string max_name = max_layer ? max_layer->name : "";
  for (LayerSpec& s : layers) {
    KVTOPO_ASSIGN_OR_RETURN(int64_t page, PageSizeBytes(s));
    if (page == max_page) continue;
    if (s.kind == CacheKind::kRecurrent) {
      s.page_size_padded = max_page;
    } else if (max_page % page == 0 && s.page_size_padded == 0) {
      s.block_size *= max_page / page;
    } else if (!IsMla(s.kind) && TraitsOf(s.attention_backend).indexes_kv_by_block_stride) {
      s.page_size_padded = max_page;
    } else {
      diagnostics_.push_back(Error(
          "page-unification",
          fmt::format("layer '{}': page size {} B is not divisible by the maximum page size {} B "
                      "(layer '{}') and cannot be padded: padding needs a non-MLA attention "
                      "backend that indexes pages by block stride; change --block-size, "
                      "--kv-cache-dtype or the layer's attention backend",
                      s.name, page, max_page, max_name)));
      return Rejected("page unification failed");
    }
  }
  return Status::Ok();
}

// The layers a backend with one window per KV cache group (FlashInfer's builder,
// BackendTraits::one_window_per_group) serves, once the hybrid KV cache manager is off and every
// layer shares one group: the engine's layers keep attending over their own windows, and a
// builder whose layers' windows differ raises at the first forward unless TRT-LLM attention runs
// it, which kvtopo cannot tell without the GPU unless --attention-config turns it off.
void Planner::CheckOneWindowPerGroup(const std::vector<LayerSpec>& layers) {
  std::unordered_map<std::string, const LayerSpec*> first;  // backend -> its first layer
  std::unordered_set<std::string> found;
  const int64_t dcp = inputs_.parallel.decode_context_parallel_size;
  const std::optional<DeviceCapability>& gpu = inputs_.cache.device_capability;
  const TrtllmOffCause cause =
      TrtllmAttentionOffCause(inputs_.cache.use_trtllm_attention, dcp, gpu);
  const bool trtllm_off = cause != TrtllmOffCause::kNone;
  std::string runs = "compute capability 10 GPUs, DCP 1";
  switch (cause) {
    case TrtllmOffCause::kNone:
      break;
    case TrtllmOffCause::kAttentionConfig:
      runs = "--attention-config use_trtllm_attention false turns it off";
      break;
    case TrtllmOffCause::kDecodeContextParallel:
      runs = fmt::format("--decode-context-parallel-size {} turns it off", dcp);
      break;
    case TrtllmOffCause::kGpu:
      runs += fmt::format("; --device-capability {} has none", DeviceCapabilityName(*gpu));
      break;
  }
  for (const LayerSpec& s : layers) {
    if (s.attention_backend.empty()) continue;
    const auto [it, added] = first.emplace(s.attention_backend, &s);
    if (added || found.count(s.attention_backend) > 0 ||
        it->second->sliding_window == s.sliding_window ||
        !TraitsOf(s.attention_backend).one_window_per_group) {
      continue;
    }
    const auto window = [](const LayerSpec& l) {
      return l.sliding_window > 0 ? fmt::format("sliding window {}", l.sliding_window)
                                  : std::string("full attention");
    };
    diagnostics_.push_back(Diagnostic{
        trtllm_off ? Severity::kError : Severity::kWarning, "backend-one-window",
        fmt::format("the hybrid KV cache manager is off {}, so layer '{}' ({}) and layer '{}' "
                    "({}) share one KV cache group on backend {}, whose metadata builder takes "
                    "one window for a group's layers unless FlashInfer's TRT-LLM attention runs "
                    "every prefill and decode ({}): {} the engine raises ('Window left is not "
                    "the same for all layers') at its first forward, once the weights are "
                    "loaded; keep the hybrid KV cache manager on, add --disable-sliding-window, "
                    "or choose another backend with --attention-backend",
                    specs_.hybrid_manager_off, it->second->name, window(*it->second), s.name,
                    window(s), s.attention_backend, runs, trtllm_off ? "so" : "elsewhere")});
    found.insert(s.attention_backend);
  }
}

namespace {

// What turns the hybrid KV cache manager back on, for a launch that has it off `why`.
std::string_view HybridOffFix(const std::string& why) {
  if (why.find("--disable-hybrid-kv-cache-manager") != std::string::npos) {
    return "drop --disable-hybrid-kv-cache-manager";
  }
  if (why.find("KV connector") != std::string::npos) {
    return "use a KV connector that supports it (--kv-offloading-backend native, NixlConnector, "
           "...)";
  }
  return "keep the hybrid KV cache manager on";
}

}  // namespace

// Without the hybrid KV cache manager (ModelCacheSpecs::hybrid_manager_off; vLLM's
// unify_hybrid_kv_cache_specs and get_kv_cache_groups): when full-attention layers (K/V or MLA)
// are present, sliding-window and chunked local layers are cached as full attention, a
// sliding-window MLA layer as MLA at the first full layer's block. Then every layer must be one
// cache type (all full; or one window, one chunk size or one recurrent shape) with one block
// size, or the engine refuses the launch.
Status Planner::CacheAsOneType(std::vector<LayerSpec>& layers) {
  const std::string& why = specs_.hybrid_manager_off;
  CheckOneWindowPerGroup(layers);
  auto full = std::find_if(layers.begin(), layers.end(),
                           [](const LayerSpec& s) { return ClassOf(s) == TypeClass::kFull; });
  int64_t windows = 0, chunks = 0;
  // The engine's converted specs keep their windows and chunk sizes (FullAttentionSpec's
  // sliding_window and attention_chunk_size), and merging one group's specs refuses two of either
  // (FullAttentionSpec.merge_window_sizes).
  struct WindowKind {
    CacheKind kind;
    std::string_view layers, unit;
    int64_t LayerSpec::*size;
  };
  static constexpr WindowKind kWindowKinds[] = {
      {CacheKind::kSlidingWindow, "sliding-window", "window", &LayerSpec::sliding_window},
      {CacheKind::kChunkedLocal, "chunked local", "attention chunk",
       &LayerSpec::attention_chunk_size}};
  if (full != layers.end()) {
    for (const WindowKind& k : kWindowKinds) {
      const LayerSpec* first = nullptr;
      for (const LayerSpec& s : layers) {
        if (s.kind != k.kind) continue;
        if (first == nullptr) first = &s;
        if (s.*k.size == first->*k.size) continue;
        diagnostics_.push_back(Error(
            "hybrid-manager-off",
            fmt::format("the hybrid KV cache manager is off {}, and without it the engine caches "
                        "{} layers as full attention in one group that keeps their {}s, but "
                        "layer '{}' has a {}-token {} and layer '{}' a {}-token one: the engine "
                        "refuses the launch ('All attention layers in the same KV cache group "
                        "must have the same window size.'); {}",
                        why, k.layers, k.unit, first->name, first->*k.size, k.unit, s.name,
                        s.*k.size, HybridOffFix(why))));
        return Rejected("the layers do not share one cache type");
      }
    }
    // The engine builds a converted chunked layer's spec without its quantization
    // (unify_hybrid_kv_cache_specs passes no kv_quant_mode to the FullAttentionSpec it makes):
    // with nvfp4 or a per-token-head dtype its page is sized as plain bytes, and the worker's view
    // of the allocated cache in the backend's quantized shape fails.
    for (const LayerSpec& s : layers) {
      if (s.kind != CacheKind::kChunkedLocal || QuantModeOf(s.cache_dtype) == KvQuantMode::kNone) {
        continue;
      }
      KVTOPO_ASSIGN_OR_RETURN(const int64_t quantized, RealPageSizeBytes(s));
      LayerSpec plain = s;
      plain.kind = CacheKind::kFullAttention;
      plain.attention_chunk_size = 0;
      plain.head_size_v = s.head_size;
      plain.model_dtype = StorageElement(s.cache_dtype, s.model_dtype);
      plain.cache_dtype = KvCacheDtype::kAuto;
      KVTOPO_ASSIGN_OR_RETURN(const int64_t sized, RealPageSizeBytes(plain));
      diagnostics_.push_back(Error(
          "hybrid-manager-off",
          fmt::format("the hybrid KV cache manager is off {}, and without it the engine caches "
                      "chunked local layers as full attention, but builds their spec without "
                      "the KV-cache quantization (unify_hybrid_kv_cache_specs): the {}-token "
                      "page of layer '{}' is sized as {} B of plain bytes where its {} cache "
                      "needs {} B, and the worker's view of the allocated cache in the attention "
                      "backend's {} shape fails once the weights are loaded; {}, or choose "
                      "another --kv-cache-dtype",
                      why, s.block_size, s.name, sized, KvCacheDtypeName(s.cache_dtype), quantized,
                      KvCacheDtypeName(s.cache_dtype), HybridOffFix(why))));
      return Rejected("the engine's converted chunked pages lose their quantization");
    }
    const int64_t full_block = full->block_size;
    for (LayerSpec& s : layers) {
      switch (s.kind) {
        case CacheKind::kSlidingWindow:
          s.kind = CacheKind::kFullAttention;
          ++windows;
          break;
        case CacheKind::kSlidingWindowMla:
          s.kind = CacheKind::kMla;
          s.block_size = full_block;
          ++windows;
          break;
        case CacheKind::kChunkedLocal:
          s.kind = CacheKind::kFullAttention;
          ++chunks;
          break;
        default:
          continue;
      }
      s.sliding_window = 0;
      s.attention_chunk_size = 0;
      s.extra_retained_tokens = 0;
      s.backend_selects_block = false;
    }
  }
  const LayerSpec& f = layers.front();
  for (const LayerSpec& s : layers) {
    bool same = s.block_size == f.block_size && ClassOf(s) == ClassOf(f);
    if (same && ClassOf(f) == TypeClass::kWindow) same = s.sliding_window == f.sliding_window;
    if (same && ClassOf(f) == TypeClass::kChunked) {
      same = s.attention_chunk_size == f.attention_chunk_size;
    }
    if (same && ClassOf(f) == TypeClass::kRecurrent) {
      same = s.num_speculative_blocks == f.num_speculative_blocks;
    }
    if (same) continue;
    diagnostics_.push_back(Error(
        "hybrid-manager-off",
        fmt::format("the hybrid KV cache manager is off {}, and without it the engine caches "
                    "every layer as one type with one block size, but layer '{}' is {} with "
                    "block {} and layer '{}' is {} with block {}: the engine refuses the launch "
                    "(it fails to convert the KV cache specs to one unified type); {}",
                    why, f.name, SpecKindName(f), f.block_size, s.name, SpecKindName(s),
                    s.block_size, HybridOffFix(why))));
    return Rejected("the layers do not share one cache type");
  }
  if (windows + chunks > 0) {
    diagnostics_.push_back(Diagnostic{
        Severity::kInfo, "hybrid-manager-off",
        fmt::format(
            "the hybrid KV cache manager is off {}, so the engine caches {} as full "
            "attention",
            why,
            windows > 0 && chunks > 0
                ? fmt::format("{} sliding-window and {} chunked local layers", windows, chunks)
            : windows > 0 ? fmt::format("{} sliding-window layers", windows)
                          : fmt::format("{} chunked local layers", chunks))});
  }
  return Status::Ok();
}

Status Planner::AddGroup(const std::vector<const LayerSpec*>& members, int partition,
                         bool uniform_type, std::vector<PlannedGroup>& out) const {
  PlannedGroup g;
  g.id = GroupId(static_cast<int32_t>(out.size()));
  g.partition = partition;
  g.spec = *members.front();
  // A group holding target layers is the target's, draft layers beside them included.
  g.role = std::any_of(members.begin(), members.end(),
                       [](const LayerSpec* m) { return m->role == Role::kTarget; })
               ? Role::kTarget
               : Role::kDraft;
  g.uniform_type = uniform_type;
  for (const LayerSpec* m : members) {
    g.layers.push_back(m->name);
    g.layer_specs.push_back(*m);
    KVTOPO_ASSIGN_OR_RETURN(int64_t natural, RealPageSizeBytes(*m));
    g.layer_natural_page_bytes.push_back(natural);
    if (!m->attention_backend.empty() &&
        std::find(g.backends.begin(), g.backends.end(), m->attention_backend) == g.backends.end()) {
      g.backends.push_back(m->attention_backend);
    }
    KVTOPO_ASSIGN_OR_RETURN(int64_t page, PageSizeBytes(*m));
    g.layer_page_bytes.push_back(page);
  }
  out.push_back(std::move(g));
  return Status::Ok();
}

Status Planner::GroupPartition(std::vector<LayerSpec> layers, int partition,
                               std::vector<PlannedGroup>& out) {
  if (layers.empty()) return Status::Ok();
  auto make_group = [&](std::vector<const LayerSpec*> members, bool uniform_type) -> Status {
    return AddGroup(members, partition, uniform_type, out);
  };
  if (std::any_of(layers.begin(), layers.end(),
                  [](const LayerSpec& s) { return s.layer_tuples; }) &&
      !IsUniformType(layers)) {
    return GroupLayerTuples(layers, partition, out);
  }

  std::vector<const LayerSpec*> all;
  for (const LayerSpec& s : layers) all.push_back(&s);
  const bool uniform_spec = std::all_of(layers.begin(), layers.end(), [&](const LayerSpec& s) {
    return SameSpec(s, layers.front());
  });
  if (uniform_spec) return make_group(all, false);
  if (IsUniformType(layers)) return make_group(all, true);

  KVTOPO_RETURN_IF_ERROR(UnifyPageSizes(layers));
  // Same-spec buckets in first-seen order, then the group-size rule and a strided split.
  std::vector<std::vector<const LayerSpec*>> buckets;
  for (const LayerSpec& s : layers) {
    auto it = std::find_if(buckets.begin(), buckets.end(),
                           [&](const auto& b) { return SameSpec(*b.front(), s); });
    if (it == buckets.end()) {
      buckets.push_back({&s});
    } else {
      it->push_back(&s);
    }
  }
  size_t min_count = layers.size(), max_count = 0;
  for (const auto& b : buckets) {
    min_count = std::min(min_count, b.size());
    max_count = std::max(max_count, b.size());
  }
  size_t group_size = min_count;
  if (2 * max_count < 3 * min_count) group_size = max_count;  // max < 1.5 * min
  // --kv-group-size (VLLM_K3_KV_GROUP_SIZE) fixes the layers per group instead.
  if (inputs_.cache.kv_group_size > 0) {
    group_size = static_cast<size_t>(inputs_.cache.kv_group_size);
  }
  for (const auto& b : buckets) {
    const size_t k = (b.size() + group_size - 1) / group_size;
    for (size_t i = 0; i < k; ++i) {
      std::vector<const LayerSpec*> members;
      for (size_t j = i; j < b.size(); j += k) members.push_back(b[j]);
      KVTOPO_RETURN_IF_ERROR(make_group(std::move(members), false));
    }
  }
  return Status::Ok();
}

namespace {

// The engine's _approximate_gcd: the d in [lower_bound, max(values)] that pads the values least
// when each rounds up to a multiple of d, the larger on a tie.
int64_t ApproximateGcd(const std::vector<int64_t>& values, int64_t lower_bound) {
  const int64_t most = *std::max_element(values.begin(), values.end());
  int64_t best = std::max<int64_t>(1, lower_bound);
  if (best > most) return best;
  int64_t best_pad = -1;
  for (int64_t d = best; d <= most; ++d) {
    int64_t pad = 0;
    for (const int64_t x : values) pad += (d - x % d) % d;
    if (best_pad < 0 || pad <= best_pad) {
      best_pad = pad;
      best = d;
    }
  }
  return best;
}

// The most layers of one page size in `members` (UniformTypeKVCacheSpecs.get_num_layer_tuples).
Result<int64_t> LayerTuplesOf(const std::vector<const LayerSpec*>& members) {
  std::map<int64_t, int64_t> count;
  int64_t most = 0;
  for (const LayerSpec* m : members) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t page, PageSizeBytes(*m));
    most = std::max(most, ++count[page]);
  }
  return most;
}

}  // namespace

// DeepSeek-V4's grouping (the engine's group_and_unify_kv_cache_specs and
// _get_kv_cache_groups_uniform_groups in vllm/v1/core/kv_cache_utils.py at 28be48fa9): the full
// MLA layers form one uniform-type group; the sliding-window MLA layers are bucketed by (block,
// window) in first-seen order. The tuples per group is the most layers of one page size in it,
// and the engine picks the count T in [the full group's, the largest] that pads the counts least
// (_approximate_gcd). Each window bucket's layers are padded to the smallest full-group page at
// least their own, bucketed by that size (every size holding as many layers), zipped into tuples,
// and the tuples split into cdiv(n, T) groups, group i taking tuples i, i + k, ...
Status Planner::GroupLayerTuples(std::vector<LayerSpec>& layers, int partition,
                                 std::vector<PlannedGroup>& out) {
  const size_t first = out.size();
  std::vector<const LayerSpec*> full;
  std::vector<std::vector<LayerSpec*>> windows;
  for (LayerSpec& s : layers) {
    if (!s.layer_tuples || (s.kind != CacheKind::kMla && s.kind != CacheKind::kSlidingWindowMla)) {
      return InvalidArgument(fmt::format(
          "layer tuples: layer '{}' ({}) is not an MLA or sliding-window MLA layer of a "
          "layer-tuple model; every layer of such a model groups in layer tuples",
          s.name, CacheKindName(s.kind)));
    }
    if (s.kind == CacheKind::kMla) {
      if (!full.empty() && s.block_size != full.front()->block_size) {
        return InvalidArgument(fmt::format(
            "layer tuples: full MLA layer '{}' has block {} and '{}' block {}; the full group "
            "takes one block size",
            s.name, s.block_size, full.front()->name, full.front()->block_size));
      }
      full.push_back(&s);
      continue;
    }
    auto it = std::find_if(windows.begin(), windows.end(), [&](const auto& w) {
      return w.front()->block_size == s.block_size && w.front()->sliding_window == s.sliding_window;
    });
    if (it == windows.end()) {
      windows.push_back({&s});
    } else {
      it->push_back(&s);
    }
  }
  if (full.empty()) {
    return InvalidArgument("layer tuples: no full MLA layer; the first group holds them");
  }
  std::vector<int64_t> full_pages;
  for (const LayerSpec* f : full) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t page, PageSizeBytes(*f));
    if (std::find(full_pages.begin(), full_pages.end(), page) == full_pages.end()) {
      full_pages.push_back(page);
    }
  }
  std::sort(full_pages.begin(), full_pages.end());
  std::vector<int64_t> counts;
  KVTOPO_ASSIGN_OR_RETURN(const int64_t full_tuples, LayerTuplesOf(full));
  counts.push_back(full_tuples);
  for (const auto& w : windows) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t n,
                            LayerTuplesOf(std::vector<const LayerSpec*>(w.begin(), w.end())));
    counts.push_back(n);
  }
  const int64_t tuples = ApproximateGcd(counts, full_tuples);
  KVTOPO_RETURN_IF_ERROR(AddGroup(full, partition, /*uniform_type=*/true, out));
  for (const auto& w : windows) {
    // Pad each layer to the nearest full page at least its own; bucket by it.
    std::vector<std::pair<int64_t, std::vector<const LayerSpec*>>> by_size;
    for (LayerSpec* s : w) {
      KVTOPO_ASSIGN_OR_RETURN(const int64_t page, PageSizeBytes(*s));
      const auto fit = std::lower_bound(full_pages.begin(), full_pages.end(), page);
      if (fit == full_pages.end()) {
        diagnostics_.push_back(Error(
            "layer-tuples",
            fmt::format("sliding-window layer '{}' has a {} B page, larger than every page of the "
                        "full group (the largest {} B, at block {}): the engine's grouping asserts "
                        "it fits one of them as the model's KV cache is laid out; change "
                        "--block-size",
                        s->name, page, full_pages.back(), full.front()->block_size)));
        return Rejected("layer tuples: a sliding-window page larger than the full group's");
      }
      if (*fit > page) s->page_size_padded = *fit;
      auto size = std::find_if(by_size.begin(), by_size.end(),
                               [&](const auto& b) { return b.first == *fit; });
      if (size == by_size.end()) {
        by_size.push_back({*fit, {s}});
      } else {
        size->second.push_back(s);
      }
    }
    const size_t n = by_size.front().second.size();
    if (std::any_of(by_size.begin(), by_size.end(),
                    [&](const auto& b) { return b.second.size() != n; })) {
      return InvalidArgument(fmt::format(
          "layer tuples: the sliding-window layers of block {} and window {} hold different "
          "numbers of layers per page size; the engine asserts each size holds as many",
          w.front()->block_size, w.front()->sliding_window));
    }
    const size_t k = (n + static_cast<size_t>(tuples) - 1) / static_cast<size_t>(tuples);
    for (size_t i = 0; i < k; ++i) {
      std::vector<const LayerSpec*> members;
      for (size_t t = i; t < n; t += k) {
        for (const auto& b : by_size) members.push_back(b.second[t]);
      }
      KVTOPO_RETURN_IF_ERROR(AddGroup(members, partition, /*uniform_type=*/true, out));
    }
  }
  // The engine's EAGLE group (_annotate_eagle_groups_deepseek_v4) is the one holding the last
  // layer, which the model marks volatile; its coordinator drops the last hit block for every
  // group of that group's spec, which it manages as one attention type.
  if (layers.back().volatile_last_block) {
    const auto holds = [&](const PlannedGroup& g) {
      return std::find(g.layers.begin(), g.layers.end(), layers.back().name) != g.layers.end();
    };
    const auto eagle = std::find_if(out.begin(), out.end(), holds);
    if (eagle != out.end()) {
      const LayerSpec first = eagle->spec;
      for (PlannedGroup& g : out) {
        if (g.spec.kind != first.kind || g.spec.block_size != first.block_size ||
            g.spec.sliding_window != first.sliding_window) {
          continue;
        }
        g.spec.volatile_last_block = true;
        for (LayerSpec& l : g.layer_specs) l.volatile_last_block = true;
      }
    }
  }
  return ProjectLayerTuples(std::vector<PlannedGroup>(out.begin() + first, out.end()), full_pages);
}

// Each worker sizes its pool from the groups projected onto its stage's layers
// (_project_kv_cache_groups_to_worker, get_kv_cache_configs), where a group with no layer on the
// stage keeps the whole model's spec. Its layout (_get_kv_cache_config_deepseek_v4) takes the
// full group's page sizes on the stage and, as the tuples, the most layers of one page size in
// any group there; its memory check (_max_memory_usage_bytes_from_groups) counts each group's
// get_num_layer_tuples, a group absent from the stage counting all of its layers. A layer whose
// page is none of the stage's full pages gets no tensor of the layout.
Status Planner::ProjectLayerTuples(const std::vector<PlannedGroup>& groups,
                                   const std::vector<int64_t>& full_pages) {
  const size_t stages = std::max<size_t>(1, specs_.pipeline_partition.size());
  tuple_stages_.clear();
  for (size_t s = 0; s < stages; ++s) {
    const int stage = static_cast<int>(s);
    TupleLayout t;
    for (const PlannedGroup& g : groups) {
      std::map<int64_t, int64_t> on_stage, whole;
      int64_t most_on_stage = 0, most = 0;
      for (size_t i = 0; i < g.layers.size(); ++i) {
        const int64_t page = g.layer_page_bytes[i];
        most = std::max(most, ++whole[page]);
        if (StageOf(g.layers[i]) != stage) continue;
        most_on_stage = std::max(most_on_stage, ++on_stage[page]);
        if (&g == &groups.front() &&
            std::find(t.pages.begin(), t.pages.end(), page) == t.pages.end()) {
          t.pages.push_back(page);
        }
      }
      t.tuples = std::max(t.tuples, most_on_stage);
      t.checked_tuples = std::max(t.checked_tuples, most_on_stage > 0 ? most_on_stage : most);
    }
    if (t.pages.empty()) t.pages = full_pages;
    std::sort(t.pages.begin(), t.pages.end());
    for (const PlannedGroup& g : groups) {
      for (size_t i = 0; i < g.layers.size(); ++i) {
        const int64_t page = g.layer_page_bytes[i];
        if (StageOf(g.layers[i]) != stage ||
            std::find(t.pages.begin(), t.pages.end(), page) != t.pages.end()) {
          continue;
        }
        diagnostics_.push_back(Error(
            "layer-tuples",
            fmt::format("pipeline stage {} holds '{}' with a {} B page, and none of the full "
                        "group's layers on that stage has a page of that size ({} B): the "
                        "engine's layer-tuple layout gives the layer no tensor, and the workers "
                        "fail as they allocate the KV cache ('Some layers are not correctly "
                        "initialized'); change VLLM_PP_LAYER_PARTITION or "
                        "--pipeline-parallel-size",
                        stage, g.layers[i], page, fmt::join(t.pages, " B, "))));
        return Rejected("layer tuples: a layer without a tensor on its stage");
      }
    }
    tuple_stages_.push_back(std::move(t));
  }
  return Status::Ok();
}

Result<int64_t> Planner::TupleStride(const TupleLayout& t, int64_t tuples) const {
  int64_t tuple_bytes = 0;
  for (const int64_t page : t.pages) {
    KVTOPO_ASSIGN_OR_RETURN(tuple_bytes,
                            internal::CheckedAdd(tuple_bytes, page, "layer tuple bytes"));
  }
  return internal::CheckedMul(tuple_bytes, tuples, "bytes per block");
}

Result<int64_t> Planner::CheckedBytesPerBlock(const Plan& plan) const {
  if (tuple_stages_.empty()) return plan.pool.bytes_per_block;
  int64_t most = 0;
  for (const TupleLayout& t : tuple_stages_) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t stride, TupleStride(t, t.checked_tuples));
    most = std::max(most, stride);
  }
  return most;
}

Status Planner::ComputeGeometries(std::vector<PlannedGroup>& groups) {
  const bool encoder_decoder = std::any_of(
      groups.begin(), groups.end(), [](const PlannedGroup& g) { return g.spec.cross_attention; });
  for (PlannedGroup& g : groups) {
    int64_t kernel_block = g.spec.block_size;
    if (IsAttention(g.spec.kind)) {
      std::vector<const BackendTraits*> traits;
      for (const std::string& backend : g.backends) traits.push_back(&TraitsOf(backend));
      kernel_block = SelectKernelBlockSize(g.spec.block_size, traits);
      if (kernel_block == 0) {
        diagnostics_.push_back(Error(
            "kernel-block-size",
            fmt::format("group {} ('{}'): no kernel block size that backends {} all support "
                        "divides block size {}; choose a --block-size that is a multiple of a "
                        "supported kernel block, or one backend for the group",
                        g.id.value(), g.spec.name, fmt::join(g.backends, ", "),
                        g.spec.block_size)));
        kernel_block = g.spec.block_size;
      }
    }
    // A uniform-type group's block holds its largest layer page for every layer.
    const GeometryOptions options{
        .max_model_len = specs_.max_model_len,
        .max_num_seqs = inputs_.cache.max_num_seqs,
        .max_tokens_in_flight =
            inputs_.cache.MaxInFlightTokens(specs_.pipeline_stages(), specs_.v2_model_runner),
        .kernel_block_size = kernel_block,
        .page_size_bytes =
            g.uniform_type ? *std::max_element(g.layer_page_bytes.begin(), g.layer_page_bytes.end())
                           : 0,
        // The engine sizes cross-attention by scheduler_config.max_num_encoder_input_tokens, which
        // is max_num_batched_tokens when the KV cache is sized (SchedulerConfig.__post_init__).
        .max_encoder_tokens = inputs_.cache.max_num_batched_tokens,
        .encoder_decoder = encoder_decoder};
    auto geometry = ComputeGroupGeometry(g.spec, inputs_.parallel, options);
    if (!geometry.ok()) {
      if (geometry.status().code() != StatusCode::kRejected) return geometry.status();
      const std::string rule = geometry.status().rule();
      diagnostics_.push_back(Error(rule.empty() ? "geometry" : rule, geometry.status().message()));
      return geometry.status();
    }
    g.geometry = *geometry;
    KVTOPO_ASSIGN_OR_RETURN(g.natural_page_size_bytes, RealPageSizeBytes(g.spec));
  }
  return Status::Ok();
}

Result<int64_t> Planner::BlocksPerRequest(const std::vector<PlannedGroup>& groups,
                                          int64_t max_model_len) const {
  int64_t total = 0;
  for (const PlannedGroup& g : groups) {
    KVTOPO_ASSIGN_OR_RETURN(total,
                            internal::CheckedAdd(total, g.geometry.PagesForLength(max_model_len),
                                                 "blocks per request"));
  }
  return total;
}

// Bytes one block id spans in the shared pool: the largest group's sum of page sizes. Groups
// alias the same bytes from offset 0 (a block id belongs to one group at a time); a smaller
// group leaves the rest of each block unused (vLLM's block-outermost pool layout).
// The pool stride: the largest group's sum of page sizes. With pipeline stages each worker's
// pool holds its stage's layers of every group (get_kv_cache_configs projects the whole model's
// groups onto them), and every worker gets the smallest block count any holds, so the stride is
// the largest over (group, stage) of the group's pages on that stage; `stage` picks one stage
// (-1: the largest over all).
Result<int64_t> Planner::BytesPerBlock(const std::vector<PlannedGroup>& groups, int partition,
                                       int stage) const {
  // Layer tuples: the tuples times the full group's page sizes (_get_kv_cache_config_deepseek_v4),
  // on each stage.
  if (!tuple_stages_.empty()) {
    int64_t most = 0;
    for (size_t s = 0; s < tuple_stages_.size(); ++s) {
      if (stage >= 0 && static_cast<size_t>(stage) != s) continue;
      KVTOPO_ASSIGN_OR_RETURN(const int64_t stride,
                              TupleStride(tuple_stages_[s], tuple_stages_[s].tuples));
      most = std::max(most, stride);
    }
    return most;
  }
  int64_t bytes_per_block = 0;
  const int stages =
      specs_.pipeline_partition.empty() ? 1 : static_cast<int>(specs_.pipeline_partition.size());
  for (const PlannedGroup& g : groups) {
    if (partition >= 0 && g.partition != partition) continue;
    std::vector<int64_t> sums(static_cast<size_t>(stages), 0);
    for (size_t i = 0; i < g.layer_page_bytes.size(); ++i) {
      const size_t s = static_cast<size_t>(StageOf(g.layers[i]));
      KVTOPO_ASSIGN_OR_RETURN(
          sums[s], internal::CheckedAdd(sums[s], g.layer_page_bytes[i], "bytes per block"));
    }
    for (int s = 0; s < stages; ++s) {
      if (stage < 0 || stage == s) {
        bytes_per_block = std::max(bytes_per_block, sums[static_cast<size_t>(s)]);
      }
    }
  }
  return bytes_per_block;
}

int Planner::StageOf(const std::string& layer) const {
  if (stage_of_.empty()) return 0;
  const auto it = stage_of_.find(layer);
  return it == stage_of_.end() ? 0 : it->second;
}

// vLLM's "GPU KV cache size": int(num_blocks / pages per max-length request * L) tokens.
Capacity CapacityOf(int64_t memory_bytes, int64_t num_blocks, int64_t blocks_per_request,
                    int64_t max_model_len) {
  Capacity c;
  c.memory_bytes = memory_bytes;
  c.blocks_per_request = blocks_per_request;
  c.max_concurrency =
      blocks_per_request > 0 ? static_cast<double>(num_blocks) / blocks_per_request : 0.0;
  c.max_tokens = static_cast<int64_t>(c.max_concurrency * static_cast<double>(max_model_len));
  return c;
}

// The memory the engine checks one max-length request against (get_kv_cache_configs,
// _check_enough_kv_cache_memory, and the auto-fit's search): the KV-cache budget, or the override's
// blocks; the null block is not taken off.
Result<int64_t> Planner::CheckedMemory(int64_t bytes_per_block) const {
  if (inputs_.cache.num_gpu_blocks_override > 0) {
    return internal::CheckedMul(inputs_.cache.num_gpu_blocks_override, bytes_per_block,
                                "--num-gpu-blocks-override pool bytes");
  }
  return inputs_.kv_cache_memory_bytes;
}

// The longest request whose pages fit `memory` (the engine's _estimate_max_model_len_from_groups).
Result<int64_t> Planner::MaxModelLenThatFits(const std::vector<PlannedGroup>& groups,
                                             int64_t bytes_per_block, int64_t memory) const {
  auto fits = [&](int64_t len) -> Result<bool> {
    KVTOPO_ASSIGN_OR_RETURN(int64_t blocks, BlocksPerRequest(groups, len));
    KVTOPO_ASSIGN_OR_RETURN(int64_t need,
                            internal::CheckedMul(blocks, bytes_per_block, "memory per request"));
    return need <= memory;
  };
  int64_t lo = 0, hi = specs_.max_model_len;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    KVTOPO_ASSIGN_OR_RETURN(bool ok, fits(mid));
    if (ok) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

bool IsSlidingWindow(const LayerSpec& s) {
  return s.kind == CacheKind::kSlidingWindow || s.kind == CacheKind::kSlidingWindowMla;
}

// Seed #520: the replicated sliding-window layers take the greatest common block of the sharded
// groups when their block divides it, and the regrouped replicated partition is kept only when
// its bytes per block do not exceed the sharded groups' (so the pool stride does not grow; the
// scheduler LCM cannot, the new block dividing every sharded block). Either way
// `plan.promotion` reports the capacity of both geometries.
Status Planner::TryPromotion(Plan& plan, const std::vector<LayerSpec>& replicated) {
  int64_t alignment = 0;
  for (const PlannedGroup& g : plan.groups) {
    if (g.partition == kShardedPartition) alignment = std::gcd(alignment, g.spec.block_size);
  }
  const auto window = std::find_if(replicated.begin(), replicated.end(), IsSlidingWindow);
  Promotion pr{.considered = true,
               .block_size_before = window->block_size,
               .bytes_per_block_before = plan.pool.bytes_per_block,
               .max_tokens_before = plan.capacity.max_tokens};
  pr.block_size_after = pr.block_size_before;
  pr.bytes_per_block_after = pr.bytes_per_block_before;
  pr.max_tokens_after = pr.max_tokens_before;

  std::vector<LayerSpec> aligned = replicated;
  bool changed = false;
  for (LayerSpec& s : aligned) {
    if (IsSlidingWindow(s) && alignment > s.block_size && alignment % s.block_size == 0) {
      s.block_size = alignment;
      s.page_size_padded = 0;
      changed = true;
    }
  }
  if (!changed) {
    pr.reason = fmt::format(
        "the replicated sliding-window block {} is not a proper divisor of the sharded groups' "
        "common block {}",
        pr.block_size_before, alignment);
    plan.promotion = std::move(pr);
    return Status::Ok();
  }
  Plan candidate = plan;
  std::erase_if(candidate.groups,
                [](const PlannedGroup& g) { return g.partition == kReplicatedPartition; });
  KVTOPO_RETURN_IF_ERROR(GroupPartition(aligned, kReplicatedPartition, candidate.groups));
  KVTOPO_RETURN_IF_ERROR(Finalize(candidate));
  KVTOPO_ASSIGN_OR_RETURN(int64_t sharded_bytes, BytesPerBlock(plan.groups, kShardedPartition));
  KVTOPO_ASSIGN_OR_RETURN(int64_t candidate_bytes,
                          BytesPerBlock(candidate.groups, kReplicatedPartition));
  if (candidate_bytes > sharded_bytes) {
    pr.reason = fmt::format(
        "at the sharded groups' block {} the replicated groups would span {} B per block, more "
        "than the {} B of the sharded groups",
        alignment, candidate_bytes, sharded_bytes);
  } else {
    pr.applied = true;
    pr.block_size_after = alignment;
    pr.bytes_per_block_after = candidate.pool.bytes_per_block;
    pr.max_tokens_after = candidate.capacity.max_tokens;
    pr.reason = fmt::format(
        "the replicated sliding-window block {} divides the sharded groups' block {} and the "
        "enlarged pages span {} B per block, within the sharded groups' {} B",
        pr.block_size_before, alignment, candidate_bytes, sharded_bytes);
    plan = std::move(candidate);
  }
  plan.promotion = std::move(pr);
  return Status::Ok();
}

// The engine's offloading spec (OffloadingSpec.__init__, then TieringOffloadingSpec.get_manager,
// at 28be48fa9), built once the weights are loaded and the KV cache is sized: its first assertion
// that fails ends the launch, so one error at most. Draft groups are left out of the block rules:
// the seeds' replicated drafts keep blocks of their own, whose offloading the fork at 28be48fa9
// does not show.
void Planner::CheckOffloading(const Plan& plan) {
  if (specs_.offloading_connector.empty()) return;
  // Each group's block is a multiple of the cache block (the target's attention block, the
  // engine's hash_block_size there), which a recurrent block of the whole length (prefix caching
  // off) is not, nor DeepSeek-V4's sliding windows and compressor states in layer tuples, whose
  // blocks are their own.
  int64_t cache_block = 0;
  for (const PlannedGroup& g : plan.groups) {
    if (g.role != Role::kTarget || g.geometry.kind() == CacheKind::kRecurrent ||
        (g.spec.layer_tuples && IsWindowed(g.geometry.kind()))) {
      continue;
    }
    if (cache_block == 0 || g.geometry.block_size() < cache_block) {
      cache_block = g.geometry.block_size();
    }
  }
  for (const PlannedGroup& g : plan.groups) {
    if (g.role != Role::kTarget || cache_block == 0 || g.geometry.block_size() % cache_block == 0) {
      continue;
    }
    diagnostics_.push_back(Error(
        "kv-offloading-block-size",
        fmt::format(
            "{} needs every group's block a multiple of the {}-token cache block, and "
            "group '{}' has {}-token blocks: the engine's offloading spec asserts it "
            "once the weights are loaded{}",
            specs_.offloading_connector, cache_block, g.spec.name, g.geometry.block_size(),
            g.geometry.kind() == CacheKind::kRecurrent
                ? "; pass --enable-prefix-caching, which gives recurrent layers the "
                  "cache block"
            : g.spec.layer_tuples
                ? fmt::format(", on each worker, whose config keeps the launch's cache block in "
                              "a process of its own ('gpu_block_size={} not divisible by "
                              "hash_block_size={}')",
                              g.geometry.block_size(), cache_block)
                : "")));
    return;
  }
  // kv_connector_extra_config.block_size: one block size over the groups, and the offloaded
  // block a whole number of them, each counted as the block times the context-parallel ranks.
  if (specs_.offloaded_block_size > 0) {
    const PlannedGroup* first = nullptr;
    for (const PlannedGroup& g : plan.groups) {
      if (g.role != Role::kTarget) continue;
      if (first == nullptr) {
        first = &g;
      } else if (g.geometry.block_size() != first->geometry.block_size()) {
        diagnostics_.push_back(Error(
            "kv-offloading-block-size",
            fmt::format("{} with kv_connector_extra_config.block_size {} needs one block size "
                        "over the groups, and group '{}' has {}-token blocks where group '{}' "
                        "has {}: the engine's offloading spec asserts it once the weights are "
                        "loaded ('all groups must have the same block size'); drop block_size",
                        specs_.offloading_connector, specs_.offloaded_block_size, g.spec.name,
                        g.geometry.block_size(), first->spec.name, first->geometry.block_size())));
        return;
      }
    }
    if (first != nullptr &&
        specs_.offloaded_block_size % first->geometry.context_parallel_block_size() != 0) {
      const int64_t unit = first->geometry.context_parallel_block_size();
      const int64_t ranks = unit / first->geometry.block_size();
      diagnostics_.push_back(Error(
          "kv-offloading-block-size",
          fmt::format("{} with kv_connector_extra_config.block_size {}: the engine offloads whole "
                      "blocks of {} tokens ({}-token blocks{}), and its offloading spec asserts "
                      "the offloaded block is a multiple of them once the weights are loaded; "
                      "set block_size to a multiple of {}",
                      specs_.offloading_connector, specs_.offloaded_block_size, unit,
                      first->geometry.block_size(),
                      ranks > 1 ? fmt::format(" times {} context-parallel ranks", ranks) : "",
                      unit)));
      return;
    }
  }
  // The tiering spec's primary tier asserts one group.
  if (specs_.offloading_spec == "TieringOffloadingSpec" && plan.groups.size() > 1) {
    diagnostics_.push_back(Error(
        "kv-offloading-tiering-groups",
        fmt::format("{} with spec_name TieringOffloadingSpec: the tiering spec takes one KV cache "
                    "group and this plan has {}: the engine asserts it once the weights are "
                    "loaded; use CPUOffloadingSpec (drop spec_name)",
                    specs_.offloading_connector, plan.groups.size())));
  }
}

// A pipeline stage whose layers keep no cache (VLLM_PP_LAYER_PARTITION can give a stage none)
// still gets every group, empty (_project_kv_cache_groups_to_worker), and the engine fails on
// its worker: the general layout asserts a layer per group, the layer-tuple layout takes the
// longest of no buckets, and one uniform-type group's layout passes but its capacity log divides
// by the worker's layers (get_max_concurrency_for_kv_cache_config).
void Planner::CheckStagesHoldLayers(const Plan& plan) {
  const char* failure =
      !tuple_stages_.empty()
          ? "fails laying out the layer tuples ('max() arg is an empty sequence')"
      : plan.groups.size() == 1 && plan.groups.front().uniform_type
          ? "fails logging the pool's capacity ('integer division or modulo by zero')"
          : "asserts 'group_size must be greater than 0'";
  for (const PipelineStage& s : plan.pipeline_stages) {
    if (s.cache_layers > 0) continue;
    diagnostics_.push_back(Error(
        "pipeline-parallel",
        fmt::format("pipeline stage {} ({}) holds no cache layer: the engine gives "
                    "its workers every KV-cache group, empty, and {} as it sets up the KV cache; "
                    "give every stage cache layers (VLLM_PP_LAYER_PARTITION, "
                    "--pipeline-parallel-size)",
                    s.stage,
                    s.num_layers == 0 ? std::string("no hidden layers")
                                      : fmt::format("hidden layers {} to {}", s.first_layer,
                                                    s.first_layer + s.num_layers - 1),
                    failure)));
    return;
  }
}

Status Planner::Finalize(Plan& plan) {
  KVTOPO_RETURN_IF_ERROR(ComputeGeometries(plan.groups));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t bytes_per_block, BytesPerBlock(plan.groups));
  const int64_t memory = inputs_.kv_cache_memory_bytes;
  plan.pool = PoolLayout{};
  plan.pool.bytes_per_block = bytes_per_block;
  plan.pool.num_blocks = inputs_.cache.num_gpu_blocks_override > 0
                             ? inputs_.cache.num_gpu_blocks_override
                             : memory / bytes_per_block;
  // With pipeline stages: each stage's share, and the regions of the stage that sizes the pool
  // (the first with the largest stride).
  plan.pipeline_stages.clear();
  int pool_stage = 0;
  int64_t pool_stride = -1;
  int64_t first_layer = 0;
  for (size_t s = 0; s < specs_.pipeline_partition.size(); ++s) {
    PipelineStage stage{.stage = static_cast<int>(s),
                        .first_layer = first_layer,
                        .num_layers = specs_.pipeline_partition[s]};
    first_layer += stage.num_layers;
    for (const PlannedGroup& g : plan.groups) {
      for (const std::string& layer : g.layers) stage.cache_layers += StageOf(layer) == stage.stage;
    }
    KVTOPO_ASSIGN_OR_RETURN(stage.bytes_per_block, BytesPerBlock(plan.groups, -1, stage.stage));
    if (stage.bytes_per_block > pool_stride) {
      pool_stage = stage.stage;
      pool_stride = stage.bytes_per_block;
    }
    plan.pipeline_stages.push_back(stage);
  }
  const TupleLayout* tuples =
      tuple_stages_.empty() ? nullptr : &tuple_stages_[static_cast<size_t>(pool_stage)];
  if (tuples != nullptr) {
    plan.pool.layer_tuples = tuples->tuples;
    plan.pool.tuple_page_bytes = tuples->pages;
  }
  for (const PlannedGroup& g : plan.groups) {
    PoolGroupRegion region{.group = g.id};
    std::map<int64_t, int64_t> place;  // layer tuples: the group's layers of each page size
    for (size_t i = 0; i < g.layers.size(); ++i) {
      if (StageOf(g.layers[i]) != pool_stage) continue;
      if (tuples != nullptr) {
        // The slot of the layer's page size in the tuple of its place among its size.
        const int64_t page = g.layer_page_bytes[i];
        int64_t offset = 0;
        for (const int64_t p : tuples->pages) offset += p < page ? p : 0;
        region.offsets_bytes.push_back(place[page]++ * (bytes_per_block / tuples->tuples) + offset);
      } else {
        region.offsets_bytes.push_back(region.bytes_used);
      }
      region.bytes_used += g.layer_page_bytes[i];
    }
    plan.pool.regions.push_back(std::move(region));
  }
  KVTOPO_ASSIGN_OR_RETURN(int64_t blocks_per_request,
                          BlocksPerRequest(plan.groups, specs_.max_model_len));
  plan.capacity =
      CapacityOf(memory, plan.pool.num_blocks, blocks_per_request, specs_.max_model_len);
  if (tuples != nullptr) {
    // The engine's log (get_max_concurrency_for_kv_cache_config) divides each group's pages
    // times its layers' page sum by the first group's page sum, not by the pool's block. It logs
    // the first worker's, whose groups hold the first stage's layers (a group with none there,
    // all of its own).
    int64_t bytes = 0, first = 0;
    for (const PlannedGroup& g : plan.groups) {
      int64_t sum = 0, first_stage_sum = 0;
      for (size_t i = 0; i < g.layers.size(); ++i) {
        const int64_t page = g.layer_page_bytes[i];
        KVTOPO_ASSIGN_OR_RETURN(sum, internal::CheckedAdd(sum, page, "a group's pages"));
        if (StageOf(g.layers[i]) == 0) {
          KVTOPO_ASSIGN_OR_RETURN(first_stage_sum,
                                  internal::CheckedAdd(first_stage_sum, page, "a group's pages"));
        }
      }
      if (first_stage_sum > 0) sum = first_stage_sum;
      if (first == 0) first = sum;
      KVTOPO_ASSIGN_OR_RETURN(const int64_t group_bytes,
                              internal::CheckedMul(g.geometry.PagesForLength(specs_.max_model_len),
                                                   sum, "memory per request"));
      KVTOPO_ASSIGN_OR_RETURN(bytes,
                              internal::CheckedAdd(bytes, group_bytes, "memory per request"));
    }
    const int64_t pages = (bytes + first - 1) / first;
    plan.capacity.max_concurrency =
        pages > 0 ? static_cast<double>(plan.pool.num_blocks) / static_cast<double>(pages) : 0.0;
    plan.capacity.max_tokens = static_cast<int64_t>(plan.capacity.max_concurrency *
                                                    static_cast<double>(specs_.max_model_len));
  }

  // One pool per partition: no padding across partitions; memory split so that every pool runs
  // out together.
  plan.split_pools = {};
  int64_t per_request_bytes = 0;
  std::vector<std::pair<int, std::pair<int64_t, int64_t>>> parts;  // partition, blocks, bytes
  for (int p : {kShardedPartition, kReplicatedPartition}) {
    std::vector<PlannedGroup> members;
    for (const PlannedGroup& g : plan.groups) {
      if (g.partition == p) members.push_back(g);
    }
    if (members.empty()) continue;
    KVTOPO_ASSIGN_OR_RETURN(int64_t part_bytes_per_block, BytesPerBlock(members));
    KVTOPO_ASSIGN_OR_RETURN(int64_t blocks, BlocksPerRequest(members, specs_.max_model_len));
    KVTOPO_ASSIGN_OR_RETURN(int64_t bytes,
                            internal::CheckedMul(blocks, part_bytes_per_block, "request bytes"));
    KVTOPO_ASSIGN_OR_RETURN(per_request_bytes,
                            internal::CheckedAdd(per_request_bytes, bytes, "request bytes"));
    parts.push_back({p, {blocks, part_bytes_per_block}});
  }
  double concurrency = per_request_bytes > 0 ? static_cast<double>(memory) / per_request_bytes : 0;
  double min_concurrency = concurrency;
  for (const auto& [p, sizes] : parts) {
    PartitionPool pool;
    pool.partition = p;
    pool.bytes_per_block = sizes.second;
    pool.num_blocks = static_cast<int64_t>(concurrency * static_cast<double>(sizes.first));
    pool.memory_bytes = pool.num_blocks * pool.bytes_per_block;
    min_concurrency = std::min(min_concurrency, static_cast<double>(pool.num_blocks) / sizes.first);
    plan.split_pools.pools.push_back(pool);
  }
  plan.split_pools.capacity.memory_bytes = memory;
  plan.split_pools.capacity.blocks_per_request = blocks_per_request;
  plan.split_pools.capacity.max_concurrency = min_concurrency;
  plan.split_pools.capacity.max_tokens =
      static_cast<int64_t>(min_concurrency * static_cast<double>(specs_.max_model_len));
  return Status::Ok();
}

Result<Plan> Planner::Run() {
  Plan plan;
  plan.model = specs_;
  plan.parallel = inputs_.parallel;
  plan.cache = inputs_.cache;
  plan.cache.enable_prefix_caching =
      inputs_.cache.enable_prefix_caching.value_or(specs_.enable_prefix_caching);
  plan.kv_cache_memory_is_default = inputs_.kv_cache_memory_is_default;
  plan.diagnostics = specs_.diagnostics;
  auto finish = [&]() -> Result<Plan> {
    for (Diagnostic& d : diagnostics_) plan.diagnostics.push_back(std::move(d));
    return std::move(plan);
  };

  if (Status s = ValidateParallelConfig(inputs_.parallel); !s.ok()) {
    if (s.code() != StatusCode::kRejected) return s;
    diagnostics_.push_back(Error("parallel-config", s.message()));
    return finish();
  }
  if (specs_.max_model_len <= 0) {
    return InvalidArgument(
        fmt::format("--max-model-len must be positive, got {}", specs_.max_model_len));
  }
  if (inputs_.kv_cache_memory_bytes <= 0) {
    return InvalidArgument(
        fmt::format("--kv-cache-memory must be positive, got {}", inputs_.kv_cache_memory_bytes));
  }
  if (inputs_.cache.num_gpu_blocks_override < 0) {
    return InvalidArgument(fmt::format("--num-gpu-blocks-override must be positive, got {}",
                                       inputs_.cache.num_gpu_blocks_override));
  }
  if (inputs_.cache.kv_group_size < 0) {
    return InvalidArgument(
        fmt::format("--kv-group-size must be positive, got {}", inputs_.cache.kv_group_size));
  }
  if (specs_.layers.empty()) {
    return InvalidArgument("the model has no layers that keep a KV cache");
  }
  // Pipeline stages, when the specs carry them (BuildModelCacheSpecs does under
  // --pipeline-parallel-size above 1): one stage per layer, each one of the partition's.
  if (!specs_.layer_stages.empty() || !specs_.pipeline_partition.empty()) {
    if (specs_.layer_stages.size() != specs_.layers.size()) {
      return InvalidArgument(
          fmt::format("pipeline stages: {} layer stages for {} layers; give one stage per layer",
                      specs_.layer_stages.size(), specs_.layers.size()));
    }
    for (const int64_t count : specs_.pipeline_partition) {
      if (count < 0 || count > kMaxLayers) {
        return InvalidArgument(fmt::format(
            "pipeline stages: a stage of {} hidden layers; each holds 0 to {}", count, kMaxLayers));
      }
    }
    for (size_t i = 0; i < specs_.layer_stages.size(); ++i) {
      const int stage = specs_.layer_stages[i];
      if (stage < 0 || static_cast<size_t>(stage) >= specs_.pipeline_partition.size()) {
        return InvalidArgument(fmt::format(
            "pipeline stages: layer '{}' is on stage {}, but the partition has {} stages",
            specs_.layers[i].name, stage, specs_.pipeline_partition.size()));
      }
    }
  }

  // 1. Block sizes: hybrid alignment over the target, then backend-selected draft windows.
  std::vector<LayerSpec> layers = specs_.layers;
  if (Status s = AlignHybridBlockSize(layers); !s.ok()) {
    if (s.code() == StatusCode::kRejected) return finish();
    return s;
  }
  KVTOPO_RETURN_IF_ERROR(ResolveBackendSelectedBlocks(layers));
  if (!specs_.hybrid_manager_off.empty()) {
    if (Status s = CacheAsOneType(layers); !s.ok()) {
      if (s.code() == StatusCode::kRejected) return finish();
      return s;
    }
  }
  // 2. Partition by placement and group each partition independently.
  std::vector<LayerSpec> sharded, replicated;
  for (LayerSpec& s : layers) {
    KVTOPO_ASSIGN_OR_RETURN(Placement p,
                            PlacementOf(s, inputs_.parallel.decode_context_parallel_size));
    (p == Placement::kReplicated ? replicated : sharded).push_back(std::move(s));
  }
  for (auto [members, partition] :
       {std::pair{&sharded, kShardedPartition}, std::pair{&replicated, kReplicatedPartition}}) {
    Status s = GroupPartition(*members, partition, plan.groups);
    if (!s.ok()) {
      if (s.code() == StatusCode::kRejected) return finish();
      return s;
    }
  }
  // 3. Geometry, pool and capacity; then promotion when replicated sliding-window layers meet
  // sharded groups.
  if (Status s = Finalize(plan); !s.ok()) {
    if (s.code() == StatusCode::kRejected) return finish();
    return s;
  }
  if (!sharded.empty() && std::any_of(replicated.begin(), replicated.end(), IsSlidingWindow)) {
    KVTOPO_RETURN_IF_ERROR(TryPromotion(plan, replicated));
  }

  // 4. Scheduler and hash block sizes, block-table memory, the enough-memory check.
  int64_t lcm = 1, gcd = 0, smallest = 0;
  for (const PlannedGroup& g : plan.groups) {
    const int64_t block = g.geometry.manager_block_size();
    KVTOPO_ASSIGN_OR_RETURN(lcm, internal::CheckedLcm(lcm, block, "scheduler block size"));
    gcd = std::gcd(gcd, block);
    smallest = smallest == 0 ? block : std::min(smallest, block);
    KVTOPO_ASSIGN_OR_RETURN(
        plan.block_table_bytes_per_rank,
        internal::CheckedAdd(plan.block_table_bytes_per_rank,
                             g.geometry.block_table_bytes_per_rank(), "block-table bytes"));
  }
  plan.scheduler_block_size = lcm;
  plan.hash_block_size = gcd;
  // The engine's resolve_kv_cache_block_sizes (vllm/v1/core/kv_cache_utils.py at 28be48fa9):
  // several groups hash at their GCD when it computes hashes at all (prefix caching or a KV
  // connector), else at the scheduler block, which a connector beside a recurrent group of mode
  // none (prefix caching off: one block of the whole length, not the cache block) keeps too.
  // Recurrent blocks kept apart from the cache block in mode align (--mamba-block-size) are the
  // research notes' later fork (its #457), whose resolver hashes at the GCD.
  if (plan.groups.size() > 1) {
    const bool whole_length_state =
        std::any_of(plan.groups.begin(), plan.groups.end(), [&](const PlannedGroup& g) {
          return g.geometry.kind() == CacheKind::kRecurrent &&
                 g.geometry.recurrent_mode() == RecurrentMode::kNone &&
                 g.geometry.manager_block_size() != smallest;
        });
    if (!plan.prefix_caching() && (inputs_.kv_connector.empty() || whole_length_state)) {
      plan.hash_block_size = lcm;
    }
  }
  // The engine's hybrid coordinator (HybridKVCacheCoordinator.cache_blocks at 28be48fa9) caches,
  // of a sliding-window group's blocks in each `lcm`-token segment its hits align to, only the
  // last WindowHitBlocks (SlidingWindowManager._cache_block_mask); an EAGLE group's hit also
  // needs the first block of the next segment, which it then leaves out, so no hit is found.
  if (plan.cache.enable_prefix_caching.value_or(false) && plan.groups.size() > 1) {
    std::vector<std::string> lost;
    for (const PlannedGroup& g : plan.groups) {
      const GroupGeometry& geo = g.geometry;
      if (!g.spec.volatile_last_block || !IsWindowed(geo.kind()) ||
          geo.kind() == CacheKind::kChunkedLocal || lcm <= geo.manager_block_size() ||
          geo.WindowHitBlocks() >= lcm / geo.manager_block_size()) {
        continue;
      }
      lost.push_back(
          fmt::format("group {} ('{}', a {}-token window over {}-token blocks: {} of "
                      "each {} blocks)",
                      g.id.value(), g.spec.name, geo.sliding_window(), geo.manager_block_size(),
                      geo.WindowHitBlocks(), lcm / geo.manager_block_size()));
    }
    if (!lost.empty()) {
      diagnostics_.push_back(Diagnostic{
          Severity::kWarning, "prefix-cache-eagle-window",
          fmt::format("the engine's prefix cache finds no hit for this launch: its hits align to "
                      "{} tokens, of which it caches only the blocks before each boundary that a "
                      "sliding window's hit reads ({}; SlidingWindowManager._cache_block_mask), "
                      "and an EAGLE group's hit also reads the block after the boundary, which "
                      "it leaves out; every request prefills in full. The engine's fix "
                      "(vllm-project/vllm#44082) caches that block, as kvtopo's runtime does",
                      lcm, fmt::join(lost, "; "))});
    }
  }
  // Static attention sinks: each sink group's manager takes its own sink blocks in group order,
  // but every sink layer's attention reads blocks 1 to k (static_sink_attention.py), so a second
  // sink group would write its sink rows into the first group's blocks, which its layers' tensors
  // share.
  std::vector<std::string> sink_groups;
  for (const PlannedGroup& g : plan.groups) {
    if (g.geometry.sink_blocks() > 0) sink_groups.push_back(std::to_string(g.id.value()));
  }
  if (sink_groups.size() > 1) {
    diagnostics_.push_back(Error(
        "sink-groups",
        fmt::format("groups {} keep static attention sinks: the engine's sink managers take "
                    "their blocks in group order, but every sink layer's attention reads blocks "
                    "1 to sink tokens / block size, so the later groups would write their sinks "
                    "over the first group's; kvtopo plans one sink group",
                    fmt::join(sink_groups, ", "))));
  }
  // The engine's ChunkedLocalAttentionManager asserts, at its first prefix-cache lookup, that
  // hits align to its own block ("KV cache groups with different block sizes are not compatible
  // with chunked local attention now").
  if (plan.prefix_caching()) {
    for (const PlannedGroup& g : plan.groups) {
      if (g.geometry.kind() != CacheKind::kChunkedLocal ||
          g.geometry.manager_block_size() == plan.scheduler_block_size) {
        continue;
      }
      diagnostics_.push_back(Error(
          "chunked-local-block-size",
          fmt::format("group {} (chunked local attention) has {}-token blocks beside groups "
                      "whose prefix-cache hits align to {} tokens: the engine's chunked-local "
                      "manager refuses that at its first prefix-cache lookup, after the weights "
                      "are loaded; pass --no-enable-prefix-caching or give every group one "
                      "block size",
                      g.id.value(), g.geometry.manager_block_size(), plan.scheduler_block_size)));
    }
  }
  if (inputs_.cache.prefix_match_unit > 0) {
    std::string sizes;
    bool divides = true;
    for (const PlannedGroup& g : plan.groups) {
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(g.geometry.manager_block_size());
      divides = divides && g.geometry.manager_block_size() % inputs_.cache.prefix_match_unit == 0;
    }
    if (!divides) {
      diagnostics_.push_back(Error(
          "prefix-match-unit",
          fmt::format("prefix match unit {} does not divide every group block size [{}]; choose "
                      "a divisor of all of them",
                      inputs_.cache.prefix_match_unit, sizes)));
    } else {
      plan.hash_block_size = inputs_.cache.prefix_match_unit;
    }
  } else if (inputs_.cache.prefix_match_unit < 0) {
    return InvalidArgument(
        fmt::format("prefix match unit must be positive, got {}", inputs_.cache.prefix_match_unit));
  }
  // VllmConfig.validate_block_size, which the engine runs once the KV cache is sized (after the
  // weights are loaded): in Mamba align mode the smallest group block (per rank) must fit in one
  // step's tokens, which a hybrid attention block grown to hold a recurrent state page can
  // exceed.
  const bool align = std::any_of(plan.groups.begin(), plan.groups.end(), [](const auto& g) {
    return g.geometry.kind() == CacheKind::kRecurrent &&
           g.geometry.recurrent_mode() == RecurrentMode::kAlign;
  });
  if (align) {
    int64_t smallest = 0;
    for (const PlannedGroup& g : plan.groups) {
      if (smallest == 0 || g.geometry.block_size() < smallest) smallest = g.geometry.block_size();
    }
    if (smallest > inputs_.cache.max_num_batched_tokens) {
      diagnostics_.push_back(Error(
          "mamba-align-block-size",
          fmt::format("Mamba cache mode align needs the smallest group block, {} tokens, at most "
                      "--max-num-batched-tokens {}: the engine asserts it after sizing the KV "
                      "cache, once the weights are loaded; raise --max-num-batched-tokens to {} "
                      "or more, or pass --no-enable-prefix-caching",
                      smallest, inputs_.cache.max_num_batched_tokens, smallest)));
    }
    const int64_t threshold = inputs_.cache.long_prefill_token_threshold;
    if (threshold > 0 && threshold < smallest) {
      diagnostics_.push_back(Error(
          "mamba-align-block-size",
          fmt::format("Mamba cache mode align needs --long-prefill-token-threshold {} at least "
                      "the smallest group block, {} tokens: the engine asserts it after sizing "
                      "the KV cache, once the weights are loaded; raise it to {} or more, drop "
                      "it, or pass --no-enable-prefix-caching",
                      threshold, smallest, smallest)));
    }
    if (inputs_.cache.disable_chunked_mm_input) {
      diagnostics_.push_back(Error(
          "mamba-align-chunked-mm-input",
          "Mamba cache mode align schedules a multiple of the block inside a multimodal input, "
          "which --disable-chunked-mm-input forbids: the engine asserts it after sizing the KV "
          "cache, once the weights are loaded ('Chunked MM input is required'); drop "
          "--disable-chunked-mm-input or pass --no-enable-prefix-caching"));
    }
  }
  // CompilationConfig.resolve_cudagraph_mode_and_sizes, once the KV cache is sized: a full decode
  // graph holds a recurrent block for each of --max-num-seqs requests.
  const bool recurrent = std::any_of(plan.groups.begin(), plan.groups.end(), [](const auto& g) {
    return g.geometry.kind() == CacheKind::kRecurrent;
  });
  if (recurrent && !inputs_.cache.enforce_eager && specs_.full_cudagraphs_off.empty() &&
      inputs_.cache.max_num_seqs > plan.pool.num_blocks) {
    const std::string rule = fmt::format(
        "--max-num-seqs {} exceeds the {} blocks of the pool, and the engine's full decode CUDA "
        "graphs{} need a recurrent-state block for each request",
        inputs_.cache.max_num_seqs, plan.pool.num_blocks,
        specs_.cudagraph_mode.empty() ? ""
                                      : fmt::format(" (cudagraph_mode {})", specs_.cudagraph_mode));
    const std::string knobs = fmt::format(
        "lower --max-num-seqs to {} or fewer, give the KV cache more memory, or pass "
        "--enforce-eager",
        plan.pool.num_blocks);
    if (specs_.cudagraph_mode_unresolved.empty()) {
      diagnostics_.push_back(Error(
          "mamba-cudagraph-blocks",
          fmt::format("{}: the engine refuses the launch when it captures them, once the weights "
                      "are loaded ('max_num_seqs exceeds available Mamba cache blocks'); {}",
                      rule, knobs)));
    } else {
      diagnostics_.push_back(Diagnostic{
          Severity::kWarning, "mamba-cudagraph-blocks",
          fmt::format("{}: the engine refuses the launch if its decode steps replay full "
                      "graphs, which kvtopo cannot tell here ({}); {}",
                      rule, specs_.cudagraph_mode_unresolved, knobs)});
    }
  }
  CheckOffloading(plan);
  CheckStagesHoldLayers(plan);
  KVTOPO_ASSIGN_OR_RETURN(const int64_t checked_bytes_per_block, CheckedBytesPerBlock(plan));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t usable, CheckedMemory(checked_bytes_per_block));
  KVTOPO_ASSIGN_OR_RETURN(plan.max_model_len_that_fits,
                          MaxModelLenThatFits(plan.groups, checked_bytes_per_block, usable));
  KVTOPO_ASSIGN_OR_RETURN(int64_t needed,
                          internal::CheckedMul(plan.capacity.blocks_per_request,
                                               checked_bytes_per_block, "memory per request"));
  // The knob that sizes the pool: the override when given, else the memory budget.
  const std::string_view pool_flag =
      inputs_.cache.num_gpu_blocks_override > 0 ? "--num-gpu-blocks-override" : "--kv-cache-memory";
  if (plan.max_model_len_that_fits < specs_.max_model_len) {
    std::string fit = plan.max_model_len_that_fits > 0
                          ? fmt::format("; the largest --max-model-len that fits is {}",
                                        plan.max_model_len_that_fits)
                          : "; not even a 1-token request fits";
    // Pipeline stages: the engine checks each worker in stage order and its message gives the
    // length the first worker that does not fit would take (_check_enough_kv_cache_memory with
    // that worker's groups), which a later stage may still refuse.
    const int stages = static_cast<int>(specs_.pipeline_partition.size());
    for (int s = 0; s < stages; ++s) {
      KVTOPO_ASSIGN_OR_RETURN(const int64_t stride, BytesPerBlock(plan.groups, -1, s));
      KVTOPO_ASSIGN_OR_RETURN(const int64_t memory, CheckedMemory(stride));
      KVTOPO_ASSIGN_OR_RETURN(
          const int64_t stage_need,
          internal::CheckedMul(plan.capacity.blocks_per_request, stride, "memory per request"));
      if (stage_need <= memory) continue;
      KVTOPO_ASSIGN_OR_RETURN(const int64_t stage_fit,
                              MaxModelLenThatFits(plan.groups, stride, memory));
      if (stage_fit > 0 && stage_fit != plan.max_model_len_that_fits) {
        fit += fmt::format(
            " (the engine's own message names {}: it stops at pipeline stage {}, "
            "the first whose worker does not fit, and gives the longest request "
            "that stage holds)",
            stage_fit, s);
      }
      break;
    }
    // Cross-attention groups hold pages for max_num_batched_tokens encoder tokens whatever the
    // length (GroupGeometry::max_encoder_tokens).
    const bool cross = std::any_of(plan.groups.begin(), plan.groups.end(),
                                   [](const auto& g) { return g.geometry.cross_attention(); });
    diagnostics_.push_back(Error(
        "kv-cache-memory",
        fmt::format("one request of --max-model-len {} needs {} B of KV cache per rank, more than "
                    "the {} B the pool holds{}; raise {} or lower --max-model-len{}",
                    specs_.max_model_len, needed, usable, fit, pool_flag,
                    cross ? fmt::format(" or --max-num-batched-tokens (the cross-attention groups "
                                        "hold pages for its {} encoder tokens per request)",
                                        inputs_.cache.max_num_batched_tokens)
                          : "")));
  }
  // The engine's check counts the null block in, which no request can hold: a request of the
  // whole length that needs every block of the pool passes it and never finishes.
  const int64_t spare = plan.pool.num_blocks - 1;
  if (plan.max_model_len_that_fits >= specs_.max_model_len && spare > 0 &&
      plan.capacity.blocks_per_request > spare) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t spare_bytes,
                            internal::CheckedMul(spare, plan.pool.bytes_per_block, "pool bytes"));
    KVTOPO_ASSIGN_OR_RETURN(
        const int64_t fits,
        MaxModelLenThatFits(plan.groups, plan.pool.bytes_per_block, spare_bytes));
    diagnostics_.push_back(Diagnostic{
        Severity::kWarning, "kv-cache-null-block",
        fmt::format("one request of --max-model-len {} needs {} blocks, and the pool holds {} "
                    "besides its null block: the engine starts (its memory check counts the null "
                    "block in), but a request that long runs out of blocks before its end; lower "
                    "--max-model-len to {} or raise {}",
                    specs_.max_model_len, plan.capacity.blocks_per_request, spare, fits,
                    pool_flag)});
  }
  // Block tables live beside the KV cache, but a launch whose tables alone outgrow the cache's
  // budget is a mistake in --max-num-seqs or --max-model-len, not a plan to report as running.
  if (plan.block_table_bytes_per_rank > inputs_.kv_cache_memory_bytes) {
    diagnostics_.push_back(Error(
        "block-table-memory",
        fmt::format("the block tables of --max-num-seqs {} rows at --max-model-len {} need {} B "
                    "per rank, more than the {} B KV-cache budget (--kv-cache-memory); lower "
                    "--max-num-seqs or --max-model-len",
                    inputs_.cache.max_num_seqs, specs_.max_model_len,
                    plan.block_table_bytes_per_rank, inputs_.kv_cache_memory_bytes)));
  }
  if (plan.pool.num_blocks < 2) {
    diagnostics_.push_back(
        Error("kv-cache-memory",
              fmt::format("the pool holds {} block{} of {} B; at least two (the null block and "
                          "one page) are needed; raise {}",
                          plan.pool.num_blocks, plan.pool.num_blocks == 1 ? "" : "s",
                          plan.pool.bytes_per_block, pool_flag)));
  }
  return finish();
}

}  // namespace

Result<Plan> PlanFromSpecs(const ModelCacheSpecs& specs, const PlanInputs& inputs) {
  return Planner(specs, inputs).Run();
}

}  // namespace kvtopo
