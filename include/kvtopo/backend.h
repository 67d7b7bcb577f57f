// BackendCaps: what one attention backend can do, read from the registry profiles/backends.json
// (embedded in the library). The model layer validates launches against it; the planner reads
// kernel block sizes and whether pages may be padded. Capabilities are data, not code.
//
// Thread safety: the registry is parsed once on first use (thread-safe static) and read-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvtopo/dtype.h"
#include "kvtopo/status.h"

namespace kvtopo {

// The layer families a backend can be the default for (profiles/backends.json "default_for").
enum class BackendFamily { kAttention, kMla, kSparseMla };

// The batches a backend's CUDA graphs can replay (the engine's AttentionCGSupport, in order):
// none, uniform single-token decodes, uniform batches (every request the same query length, as
// speculative decoding's 1 + k), any batch.
enum class CudagraphSupport { kNever, kUniformSingleTokenDecode, kUniformBatch, kAlways };

// What a backend's GPU-dependent answers (BackendCaps::supports_sinks and
// supports_per_head_quant_scales left unstated, gpu_dependent_kv_cache_dtypes) come from:
// FlashAttention 3 or later, or FlashInfer's TRT-LLM attention. A launch that pins FlashAttention 2
// or turns TRT-LLM attention off makes them false.
enum class GpuDependence { kNone, kFlashAttention3, kTrtllmAttention };
std::string_view CudagraphSupportName(CudagraphSupport support);

// A GPU's CUDA compute capability as the engine reads it (torch.cuda.get_device_capability):
// 9.0 a Hopper GPU (H100, H200), 10.0 a B200 or GB200, 12.0 an RTX PRO 6000 Blackwell.
struct DeviceCapability {
  int64_t major = 0;
  int64_t minor = 0;
  auto operator<=>(const DeviceCapability&) const = default;
};
std::string DeviceCapabilityName(DeviceCapability capability);  // "10.0"
// "MAJOR.MINOR", each in decimal digits (major 1 to 99, minor 0 to 9), as --device-capability
// takes it; InvalidArgument names the text otherwise.
Result<DeviceCapability> ParseDeviceCapability(std::string_view text);
// The compute capability of a GPU known by its name as nvidia-smi gives it ("NVIDIA B200": 10.0),
// from NVIDIA's table of CUDA GPUs; nullopt for a name kvtopo's table does not know.
std::optional<DeviceCapability> GpuNameCapability(std::string_view name);

// What the planner needs to know about an attention backend.
struct BackendTraits {
  std::vector<int64_t> kernel_block_sizes;  // exact sizes the kernels take
  int64_t kernel_block_multiple_of = 0;     // or: any multiple of this (0: none)
  bool indexes_kv_by_block_stride = false;  // pages may be padded to a larger stride
  // One sliding window for every layer of a KV cache group (BackendCaps::one_window_per_group).
  bool one_window_per_group = false;
};

struct BackendCaps {
  std::string name;     // upper case, e.g. "B12X_MLA"
  bool mla = false;     // serves MLA latent caches (else K/V attention)
  bool sparse = false;  // sparse MLA (DeepSeek-V3.2 / GLM DSA indexer top-k)
  // Supported head sizes (MLA: latent row width): those listed (empty: any) that also meet the
  // rules below (0: no such rule), as the engine's supports_head_size states them.
  std::vector<int64_t> head_sizes;
  int64_t head_size_multiple = 0;
  int64_t min_head_size = 0;
  int64_t max_head_size = 0;
  // Above max_head_size, the head sizes up to this (meeting the other rules) it takes only where
  // FlashAttention 4 is supported (FlashAttention's supports_head_size); 0: none.
  int64_t gpu_dependent_max_head_size = 0;
  std::vector<int64_t> kernel_block_sizes;  // exact kernel block sizes, if any
  int64_t kernel_block_multiple = 0;        // "multiple of x"; 0 when exact sizes are listed
  int64_t preferred_block_size = 16;        // the cache block when --block-size is 0
  // The dtype the backend stores for a requested one (e.g. a sparse-MLA backend keeps fp8 as
  // the fp8_ds_mla row); requested dtypes not listed are stored as asked.
  std::vector<std::pair<KvCacheDtype, KvCacheDtype>> kv_cache_dtype_canonical;
  bool returns_lse = false;                 // returns the softmax LSE for decode: can run under DCP
  bool owns_dcp_collectives = false;        // takes rank-local queries and combines itself
  bool supports_non_causal = false;         // block-parallel (DFlash / DSpark) drafts
  bool local_dcp_draft_contract = false;    // runs a replicated draft as DCP1 inside a DCP launch
  bool dspark_draft_under_dcp = false;      // serves an external DSpark draft when DCP > 1
  bool indexes_kv_by_block_stride = false;  // pages may be padded (page_size_padded)
  bool spec_decode_with_interleave = false;  // speculative decoding with interleave > 1
  // Under DCP its metadata builder computes each rank's local lengths with the engine's
  // dcp_kv_cache_interleave_size as given, not the interleave the slot mapping stores with.
  bool dcp_lengths_from_dcp_flag = false;
  bool supports_pcp = false;  // prefill context parallelism
  bool supports_sliding_window = false;
  // Runs attention with learned sinks (the engine's supports_sink); nullopt where it depends on
  // the GPU (FlashAttention 3 and 4, FlashInfer's TRT-LLM kernels: gpu_dependence).
  std::optional<bool> supports_sinks;
  GpuDependence gpu_dependence = GpuDependence::kNone;
  // The dtypes it computes in (the engine's supported_dtypes): float16 and bfloat16 unless the
  // registry says otherwise.
  std::vector<ElementType> model_dtypes = {ElementType::kFloat16, ElementType::kBfloat16};
  // The cache dtypes it accepts, as the launch names them (the engine's
  // supported_kv_cache_dtypes); empty: not restricted.
  std::vector<KvCacheDtype> kv_cache_dtypes;
  // The cache dtypes it takes only on some GPUs: FlashAttention's fp8, as version 3 on a Hopper
  // GPU (its supports_kv_cache_dtype; gpu_dependence kFlashAttention3); not in kv_cache_dtypes.
  std::vector<KvCacheDtype> gpu_dependent_kv_cache_dtypes;
  // The MLA dimensions of the model's text config it takes, as (key, accepted values): the
  // engine's supports_combination reads them from hf_text_config (qk_nope_head_dim,
  // qk_rope_head_dim, v_head_dim); empty: none checked.
  std::vector<std::pair<std::string, std::vector<int64_t>>> config_dims;
  // Takes per-head K/V quantization scales (the engine's supports_per_head_quant_scales), which a
  // compressed-tensors kv_cache_scheme of strategy attn_head asks for; nullopt where it depends
  // on the GPU (FlashAttention 3 and later).
  std::optional<bool> supports_per_head_quant_scales;
  // Runs decoder cross-attention over an encoder's output (the engine's supports_attn_type of
  // encoder_decoder).
  bool supports_cross_attention = false;
  // Runs batch-invariant kernels (the engine's supports_batch_invariance), which
  // VLLM_BATCH_INVARIANT asks of every attention backend.
  bool supports_batch_invariance = false;
  // Under VLLM_BATCH_INVARIANT its attention layers turn prefix caching off (the engine's
  // Attention and MLAAttention constructors, for FLASHINFER and TRITON_MLA).
  bool batch_invariant_drops_prefix_caching = false;
  // Runs the bidirectional attention over multimodal positions of a prefix LM (the engine's
  // supports_mm_prefix).
  bool supports_mm_prefix = false;
  // Layer features its impl raises NotImplementedError on as the engine builds a layer (the
  // registry's "impl_refuses"): ALiBi slopes, a logits soft cap, KV sharing across layers.
  bool refuses_alibi = false;
  bool refuses_logits_soft_cap = false;
  bool refuses_kv_sharing = false;
  // Layer features its impl takes and its kernels never apply (the registry's "impl_ignores"):
  // the engine runs such a layer without them.
  bool ignores_alibi = false;
  bool ignores_logits_soft_cap = false;
  // Its metadata builder takes one sliding window for every layer of a KV cache group, unless
  // FlashInfer's TRT-LLM attention runs every prefill and decode (compute capability 10, DCP 1):
  // a group whose layers' windows differ (the hybrid KV cache manager off) fails its first
  // forward elsewhere.
  bool one_window_per_group = false;
  // Stores the TurboQuant cache dtypes (turboquant_*), and only those.
  bool stores_turboquant = false;
  // Its CUDA graph support; nullopt where kvtopo cannot tell (it depends on the GPU, or the
  // backend comes after the engine commit the registry reads).
  std::optional<CudagraphSupport> cudagraph_support;
  // Builds its metadata with the engine's common MLA builder (MLACommonMetadataBuilder), whose
  // chunked-prefill workspace must split evenly over the DCP ranks.
  bool mla_common_builder = false;
  int64_t dcp_gathered_head_multiple = 0;  // >0: local q heads x DCP must be a multiple of it
  int64_t dcp_max_local_kv_tokens = 0;     // >0: cap on the largest rank-local KV shard
  // >0: the most query heads its MLA decode kernel takes: the rank's heads, gathered over the DCP
  // ranks when the cache is sharded.
  int64_t max_decode_heads = 0;
  // The family this backend serves when neither the launch nor the model profile names one.
  std::optional<BackendFamily> default_for;
  // The GPUs it runs on (the engine's supports_compute_capability): the compute capabilities
  // from min_capability to max_capability (unset: unbounded) whose major is one of
  // capability_majors (empty: any).
  std::optional<DeviceCapability> min_capability;
  std::optional<DeviceCapability> max_capability;
  std::vector<int64_t> capability_majors;

  bool SupportsHeadSize(int64_t head_size) const;
  // The supported head sizes in words, for messages ("64, 128, 256", "multiples of 8 up to 256",
  // "at least 32", "any").
  std::string HeadSizesText() const;
  // True when `block_size` is a kernel block size or a multiple of one (kernel block splitting).
  bool SupportsBlockSize(int64_t block_size) const;
  // The smallest kernel block size ("multiple of x" counts as x).
  int64_t MinKernelBlockSize() const;
  KvCacheDtype StoredKvCacheDtype(KvCacheDtype requested) const;
  bool Computes(ElementType dtype) const;
  bool AcceptsKvCacheDtype(KvCacheDtype dtype) const;
  bool RunsOn(DeviceCapability capability) const;
  // The compute capabilities it runs on in words, for messages ("8.0 or later", "7.5 to 12.1",
  // "10.x", "9.x or 10.x", "any").
  std::string CapabilitiesText() const;
  bool operator==(const BackendCaps&) const = default;
};

// Case-insensitive lookup. NotFound lists every registered backend.
Result<BackendCaps> FindBackend(std::string_view name);
// The registry's default backend for `family` (exactly one per family).
Result<BackendCaps> DefaultBackend(BackendFamily family);
// Every registered backend, in registry order.
Result<std::vector<BackendCaps>> ListBackends();
// The registered backends the engine's automatic selection tries on a GPU of `capability`, in
// its order (_get_backend_priorities in platforms/cuda.py at 28be48fa9, the registry's
// "selection_priorities"): for MLA layers (`mla`) or K/V attention ones; for MLA, whether the
// cache dtype is quantized and the layer's query heads per rank choose among its sparse orders.
// The first backend that takes the layer is the engine's pick.
Result<std::vector<std::string>> SelectionPriorities(bool mla, DeviceCapability capability,
                                                     bool quantized_cache, int64_t num_heads);
// Why FlashInfer surely runs without its TRT-LLM attention (GpuDependence::kTrtllmAttention
// settled), the first that holds: --attention-config use_trtllm_attention false, decode context
// parallelism, under which its metadata builder never runs it for decodes (flashinfer.py at
// 28be48fa9), or a stated GPU whose compute capability is not 10.x (supports_trtllm_attention in
// utils/flashinfer.py); kNone where it may run. Pass `dcp` 1 for what the engine's selection and
// can_use_trtllm_attention see, which ask no DCP.
enum class TrtllmOffCause { kNone, kAttentionConfig, kDecodeContextParallel, kGpu };
TrtllmOffCause TrtllmAttentionOffCause(std::optional<bool> use_trtllm_attention, int64_t dcp,
                                       std::optional<DeviceCapability> capability);
bool TrtllmAttentionOff(std::optional<bool> use_trtllm_attention, int64_t dcp,
                        std::optional<DeviceCapability> capability);

}  // namespace kvtopo
