// The backend registry: profiles/backends.json, parsed once.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>

#include "internal/json_text.h"
#include "kvtopo/backend.h"
#include "model/config_reader.h"
#include "model/embedded_profiles.h"

namespace kvtopo {
namespace {

using internal::ConfigReader;

constexpr std::pair<std::string_view, BackendFamily> kFamilies[] = {
    {"attention", BackendFamily::kAttention},
    {"mla", BackendFamily::kMla},
    {"sparse_mla", BackendFamily::kSparseMla}};

// The text-config dimensions a backend's config_dims may name.
constexpr std::string_view kConfigDims[] = {"qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"};

// A registry list of layer-feature names (impl_refuses, impl_ignores): sets each named feature's
// flag; a name not in `features` is refused.
Status ReadFeatureList(
    const ConfigReader& r, std::string_view key,
    std::initializer_list<std::pair<std::string_view, bool BackendCaps::*>> features,
    BackendCaps& b) {
  if (!r.Has(key)) return Status::Ok();
  KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> names, r.StringList(key));
  for (const std::string& name : names) {
    const auto* it = std::find_if(features.begin(), features.end(),
                                  [&](const auto& f) { return f.first == name; });
    if (it == features.end()) {
      std::vector<std::string_view> known;
      for (const auto& f : features) known.push_back(f.first);
      return r.Invalid(key, fmt::format("names '{}'; it lists {}", name, fmt::join(known, ", ")));
    }
    b.*(it->second) = true;
  }
  return Status::Ok();
}

// A capability the registry may leave unstated (nullopt: it depends on the GPU).
Status ReadOptionalBool(const ConfigReader& r, std::string_view key, std::optional<bool>& out) {
  if (!r.Has(key)) return Status::Ok();
  KVTOPO_ASSIGN_OR_RETURN(const bool value, r.BoolOr(key, false));
  out = value;
  return Status::Ok();
}

// A registry compute capability: "MAJOR.MINOR" text.
Result<DeviceCapability> ReadCapability(const ConfigReader& r, std::string_view key) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string text, r.String(key));
  Result<DeviceCapability> c = ParseDeviceCapability(text);
  if (!c.ok()) return r.Invalid(key, "is a compute capability, MAJOR.MINOR");
  return *c;
}

// "compute_capability": {"min": "8.0", "max": "12.1", "majors": [9, 10]}, each optional; absent:
// any GPU.
Status ReadComputeCapability(const ConfigReader& r, BackendCaps& b) {
  if (!r.Has("compute_capability")) return Status::Ok();
  KVTOPO_ASSIGN_OR_RETURN(const ConfigReader cc, r.Object("compute_capability"));
  for (const auto& [key, value] : cc.json().items()) {
    if (key != "min" && key != "max" && key != "majors") {
      return cc.Invalid(key, "is not one of min, max, majors");
    }
  }
  if (cc.Has("min")) {
    KVTOPO_ASSIGN_OR_RETURN(b.min_capability, ReadCapability(cc, "min"));
  }
  if (cc.Has("max")) {
    KVTOPO_ASSIGN_OR_RETURN(b.max_capability, ReadCapability(cc, "max"));
  }
  if (cc.Has("majors")) {
    KVTOPO_ASSIGN_OR_RETURN(b.capability_majors, cc.IntList("majors"));
    if (b.capability_majors.empty() ||
        std::any_of(b.capability_majors.begin(), b.capability_majors.end(),
                    [](int64_t m) { return m < 1 || m > 99; })) {
      return cc.Invalid("majors", "lists majors from 1 to 99");
    }
  }
  if (b.min_capability && b.max_capability && *b.max_capability < *b.min_capability) {
    return cc.Invalid("max", "is below min");
  }
  return Status::Ok();
}

Result<BackendCaps> ParseBackend(const ConfigReader& r) {
  BackendCaps b;
  KVTOPO_ASSIGN_OR_RETURN(b.name, r.String("name"));
  KVTOPO_ASSIGN_OR_RETURN(b.mla, r.BoolOr("mla", false));
  KVTOPO_ASSIGN_OR_RETURN(b.sparse, r.BoolOr("sparse", false));
  if (r.Has("head_sizes")) {  // absent: any head size
    KVTOPO_ASSIGN_OR_RETURN(b.head_sizes, r.IntList("head_sizes"));
  }
  KVTOPO_ASSIGN_OR_RETURN(b.head_size_multiple, r.IntInOr("head_size_multiple", 0, 0, 4096));
  KVTOPO_ASSIGN_OR_RETURN(b.min_head_size, r.IntInOr("min_head_size", 0, 0, 1 << 20));
  KVTOPO_ASSIGN_OR_RETURN(b.max_head_size, r.IntInOr("max_head_size", 0, 0, 1 << 20));
  if (!r.Has("kernel_block_sizes") || !r.json()["kernel_block_sizes"].is_array()) {
    return r.IllTyped("kernel_block_sizes", "a list of integers or \"multiple of x\" strings");
  }
  for (const nlohmann::json& e : r.json()["kernel_block_sizes"]) {
    if (e.is_number_integer() && e.get<int64_t>() > 0) {
      b.kernel_block_sizes.push_back(e.get<int64_t>());
      continue;
    }
    int64_t x = 0;
    if (e.is_string() && std::sscanf(e.get<std::string>().c_str(), "multiple of %ld", &x) == 1 &&
        x > 0) {
      b.kernel_block_multiple = b.kernel_block_multiple ? std::min(b.kernel_block_multiple, x) : x;
      continue;
    }
    return r.IllTyped("kernel_block_sizes", "a list of integers or \"multiple of x\" strings");
  }
  KVTOPO_ASSIGN_OR_RETURN(b.preferred_block_size, r.Int("preferred_block_size"));
  if (r.Has("kv_cache_dtype_canonical")) {
    KVTOPO_ASSIGN_OR_RETURN(ConfigReader canonical, r.Object("kv_cache_dtype_canonical"));
    for (const auto& [requested, value] : canonical.json().items()) {
      KVTOPO_ASSIGN_OR_RETURN(std::string stored, canonical.String(requested));
      Result<KvCacheDtype> from = ParseKvCacheDtype(requested);
      Result<KvCacheDtype> to = ParseKvCacheDtype(stored);
      if (!from.ok() || !to.ok()) {
        return canonical.Invalid(requested, "maps a cache dtype name to a cache dtype name");
      }
      b.kv_cache_dtype_canonical.emplace_back(*from, *to);
    }
  }
  KVTOPO_ASSIGN_OR_RETURN(b.returns_lse, r.BoolOr("returns_lse", false));
  KVTOPO_ASSIGN_OR_RETURN(b.owns_dcp_collectives, r.BoolOr("owns_dcp_collectives", false));
  KVTOPO_ASSIGN_OR_RETURN(b.supports_non_causal, r.BoolOr("supports_non_causal", false));
  KVTOPO_ASSIGN_OR_RETURN(b.local_dcp_draft_contract, r.BoolOr("local_dcp_draft_contract", false));
  KVTOPO_ASSIGN_OR_RETURN(b.dspark_draft_under_dcp, r.BoolOr("dspark_draft_under_dcp", false));
  KVTOPO_ASSIGN_OR_RETURN(b.indexes_kv_by_block_stride,
                          r.BoolOr("indexes_kv_by_block_stride", false));
  KVTOPO_ASSIGN_OR_RETURN(b.spec_decode_with_interleave,
                          r.BoolOr("spec_decode_with_interleave", false));
  KVTOPO_ASSIGN_OR_RETURN(b.dcp_lengths_from_dcp_flag,
                          r.BoolOr("dcp_lengths_from_dcp_flag", false));
  KVTOPO_ASSIGN_OR_RETURN(b.supports_pcp, r.BoolOr("supports_pcp", false));
  KVTOPO_ASSIGN_OR_RETURN(b.supports_sliding_window, r.BoolOr("supports_sliding_window", false));
  KVTOPO_RETURN_IF_ERROR(ReadOptionalBool(r, "supports_sinks", b.supports_sinks));
  if (r.Has("model_dtypes")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> names, r.StringList("model_dtypes"));
    b.model_dtypes.clear();
    for (const std::string& name : names) {
      Result<ElementType> dtype = ParseElementType(name);
      if (!dtype.ok() || (*dtype != ElementType::kFloat16 && *dtype != ElementType::kBfloat16 &&
                          *dtype != ElementType::kFloat32)) {
        return r.Invalid("model_dtypes", "lists float16, bfloat16 or float32");
      }
      b.model_dtypes.push_back(*dtype);
    }
    if (b.model_dtypes.empty()) return r.Invalid("model_dtypes", "lists at least one dtype");
  }
  if (r.Has("kv_cache_dtypes")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> names, r.StringList("kv_cache_dtypes"));
    for (const std::string& name : names) {
      Result<KvCacheDtype> dtype = ParseKvCacheDtype(name);
      if (!dtype.ok()) return r.Invalid("kv_cache_dtypes", "lists cache dtype names");
      b.kv_cache_dtypes.push_back(*dtype);
    }
    if (b.kv_cache_dtypes.empty()) return r.Invalid("kv_cache_dtypes", "lists at least one dtype");
  }
  if (r.Has("gpu_dependent_kv_cache_dtypes")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> names,
                            r.StringList("gpu_dependent_kv_cache_dtypes"));
    for (const std::string& name : names) {
      Result<KvCacheDtype> dtype = ParseKvCacheDtype(name);
      if (!dtype.ok() || b.AcceptsKvCacheDtype(*dtype)) {
        return r.Invalid("gpu_dependent_kv_cache_dtypes",
                         "lists cache dtype names kv_cache_dtypes does not");
      }
      b.gpu_dependent_kv_cache_dtypes.push_back(*dtype);
    }
  }
  if (r.Has("config_dims")) {
    KVTOPO_ASSIGN_OR_RETURN(ConfigReader dims, r.Object("config_dims"));
    for (const auto& [key, value] : dims.json().items()) {
      if (std::find(std::begin(kConfigDims), std::end(kConfigDims), key) == std::end(kConfigDims)) {
        return dims.Invalid(key, "is not one of qk_nope_head_dim, qk_rope_head_dim, v_head_dim");
      }
      KVTOPO_ASSIGN_OR_RETURN(std::vector<int64_t> accepted, dims.IntList(key));
      if (accepted.empty()) return dims.Invalid(key, "lists at least one value");
      b.config_dims.emplace_back(key, std::move(accepted));
    }
  }
  KVTOPO_RETURN_IF_ERROR(
      ReadOptionalBool(r, "supports_per_head_quant_scales", b.supports_per_head_quant_scales));
  KVTOPO_ASSIGN_OR_RETURN(b.supports_cross_attention, r.BoolOr("supports_cross_attention", false));
  KVTOPO_ASSIGN_OR_RETURN(b.supports_batch_invariance,
                          r.BoolOr("supports_batch_invariance", false));
  KVTOPO_ASSIGN_OR_RETURN(b.batch_invariant_drops_prefix_caching,
                          r.BoolOr("batch_invariant_drops_prefix_caching", false));
  KVTOPO_ASSIGN_OR_RETURN(b.supports_mm_prefix, r.BoolOr("supports_mm_prefix", false));
  KVTOPO_RETURN_IF_ERROR(
      ReadFeatureList(r, "impl_refuses",
                      {{"alibi", &BackendCaps::refuses_alibi},
                       {"logits_soft_cap", &BackendCaps::refuses_logits_soft_cap},
                       {"kv_sharing", &BackendCaps::refuses_kv_sharing}},
                      b));
  KVTOPO_RETURN_IF_ERROR(
      ReadFeatureList(r, "impl_ignores",
                      {{"alibi", &BackendCaps::ignores_alibi},
                       {"logits_soft_cap", &BackendCaps::ignores_logits_soft_cap}},
                      b));
  KVTOPO_ASSIGN_OR_RETURN(b.one_window_per_group, r.BoolOr("one_window_per_group", false));
  KVTOPO_ASSIGN_OR_RETURN(b.stores_turboquant, r.BoolOr("stores_turboquant", false));
  KVTOPO_ASSIGN_OR_RETURN(b.mla_common_builder, r.BoolOr("mla_common_builder", false));
  KVTOPO_ASSIGN_OR_RETURN(b.dcp_gathered_head_multiple, r.IntOr("dcp_gathered_head_multiple", 0));
  KVTOPO_ASSIGN_OR_RETURN(b.dcp_max_local_kv_tokens, r.IntOr("dcp_max_local_kv_tokens", 0));
  KVTOPO_ASSIGN_OR_RETURN(b.max_decode_heads, r.IntInOr("max_decode_heads", 0, 0, 1 << 20));
  if (r.Has("gpu_dependent_on")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::string on, r.String("gpu_dependent_on"));
    if (on == "flash_attention_3") {
      b.gpu_dependence = GpuDependence::kFlashAttention3;
    } else if (on == "trtllm_attention") {
      b.gpu_dependence = GpuDependence::kTrtllmAttention;
    } else {
      return r.Invalid("gpu_dependent_on", "is flash_attention_3 or trtllm_attention");
    }
  }
  KVTOPO_ASSIGN_OR_RETURN(b.gpu_dependent_max_head_size,
                          r.IntInOr("gpu_dependent_max_head_size", 0, 0, 1 << 20));
  if (b.gpu_dependent_max_head_size > 0 &&
      (b.gpu_dependence != GpuDependence::kFlashAttention3 || b.max_head_size <= 0 ||
       b.gpu_dependent_max_head_size <= b.max_head_size)) {
    return r.Invalid("gpu_dependent_max_head_size",
                     "needs gpu_dependent_on flash_attention_3 and a smaller max_head_size");
  }
  // kvtopo knows one such rule: FlashAttention's fp8 (version 3 on a Hopper GPU).
  if (!b.gpu_dependent_kv_cache_dtypes.empty() &&
      b.gpu_dependence != GpuDependence::kFlashAttention3) {
    return r.Invalid("gpu_dependent_kv_cache_dtypes", "needs gpu_dependent_on flash_attention_3");
  }
  if (r.Has("cudagraph_support")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::string support, r.String("cudagraph_support"));
    for (CudagraphSupport c :
         {CudagraphSupport::kNever, CudagraphSupport::kUniformSingleTokenDecode,
          CudagraphSupport::kUniformBatch, CudagraphSupport::kAlways}) {
      if (support == CudagraphSupportName(c)) b.cudagraph_support = c;
    }
    if (!b.cudagraph_support) {
      return r.Invalid("cudagraph_support",
                       "is one of never, uniform_single_token_decode, uniform_batch, always");
    }
  }
  if (r.Has("default_for")) {
    KVTOPO_ASSIGN_OR_RETURN(std::string family, r.String("default_for"));
    for (const auto& [name, value] : kFamilies) {
      if (family == name) b.default_for = value;
    }
    if (!b.default_for) return r.Invalid("default_for", "is one of attention, mla, sparse_mla");
  }
  if (!b.SupportsBlockSize(b.preferred_block_size)) {
    return r.Invalid("preferred_block_size", "is not a supported kernel block size");
  }
  KVTOPO_RETURN_IF_ERROR(ReadComputeCapability(r, b));
  return b;
}

// One order of the engine's automatic selection ("selection_priorities"): for MLA layers or K/V
// ones, on GPUs whose major is listed (empty: any), with a quantized cache or not (unset:
// either), at most `max_heads` query heads per rank (0: any).
struct PriorityRule {
  bool mla = false;
  std::vector<int64_t> majors;
  std::optional<bool> quantized_cache;
  int64_t max_heads = 0;
  std::vector<std::string> backends;
};

// The embedded registry file, parsed.
Result<nlohmann::json> RegistryJson() {
  for (const internal::EmbeddedFile& f : internal::EmbeddedProfileFiles()) {
    if (f.stem == "backends") return internal::ParseJsonText(f.content, "profiles/backends.json");
  }
  return Internal("the backend registry profiles/backends.json is not embedded");
}

// The objects of the registry's list `key`, each read where it stands ("key[i]"): `what` names
// the list, `element` what each entry must be, for messages.
Result<std::vector<ConfigReader>> ListedObjects(const nlohmann::json& j, const ConfigReader& root,
                                                const std::string& key, std::string_view what,
                                                std::string_view element) {
  if (!root.Has(key) || !j[key].is_array()) return root.IllTyped(key, what);
  std::vector<ConfigReader> out;
  for (size_t i = 0; i < j[key].size(); ++i) {
    const nlohmann::json& e = j[key][i];
    if (!e.is_object()) return root.IllTyped(key, element);
    out.emplace_back(e, "profiles/backends.json", fmt::format("{}[{}]", key, i));
  }
  return out;
}

Result<std::vector<PriorityRule>> LoadPriorities(const std::vector<BackendCaps>& backends) {
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json j, RegistryJson());
  ConfigReader root(j, "profiles/backends.json");
  KVTOPO_ASSIGN_OR_RETURN(const std::vector<ConfigReader> orders,
                          ListedObjects(j, root, "selection_priorities",
                                        "a list of selection orders", "a list of objects"));
  std::vector<PriorityRule> out;
  for (const ConfigReader& r : orders) {
    PriorityRule rule;
    KVTOPO_ASSIGN_OR_RETURN(rule.mla, r.BoolOr("mla", false));
    if (r.Has("majors")) {
      KVTOPO_ASSIGN_OR_RETURN(rule.majors, r.IntList("majors"));
    }
    if (r.Has("quantized_cache")) {
      KVTOPO_ASSIGN_OR_RETURN(const bool q, r.BoolOr("quantized_cache", false));
      rule.quantized_cache = q;
    }
    KVTOPO_ASSIGN_OR_RETURN(rule.max_heads, r.IntInOr("max_heads", 0, 0, 1 << 20));
    KVTOPO_ASSIGN_OR_RETURN(rule.backends, r.StringList("backends"));
    for (const std::string& name : rule.backends) {
      if (std::none_of(backends.begin(), backends.end(),
                       [&](const BackendCaps& b) { return b.name == name; })) {
        return r.Invalid("backends", fmt::format("names '{}', which is not registered", name));
      }
    }
    out.push_back(std::move(rule));
  }
  // Each kind of layer ends on an order without conditions, so every GPU has one.
  for (const bool mla : {false, true}) {
    if (std::none_of(out.begin(), out.end(), [&](const PriorityRule& p) {
          return p.mla == mla && p.majors.empty() && !p.quantized_cache && p.max_heads == 0;
        })) {
      return root.Invalid("selection_priorities",
                          fmt::format("hold an order without conditions for {} layers",
                                      mla ? "MLA" : "K/V attention"));
    }
  }
  return out;
}

Result<std::vector<BackendCaps>> LoadRegistry() {
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json j, RegistryJson());
  ConfigReader root(j, "profiles/backends.json");
  KVTOPO_ASSIGN_OR_RETURN(
      const std::vector<ConfigReader> entries,
      ListedObjects(j, root, "backends", "a list of backend objects", "a list of backend objects"));
  std::vector<BackendCaps> out;
  for (const ConfigReader& r : entries) {
    KVTOPO_ASSIGN_OR_RETURN(BackendCaps b, ParseBackend(r));
    out.push_back(std::move(b));
  }
  for (const auto& [family_name, family_value] : kFamilies) {
    const auto& family = family_value;  // a name, not a binding: clang 14 captures it
    const auto n = std::count_if(out.begin(), out.end(),
                                 [&](const BackendCaps& b) { return b.default_for == family; });
    if (n != 1) {
      return root.Invalid("backends", fmt::format("name exactly one backend with \"default_for\": "
                                                  "\"{}\", found {}",
                                                  family_name, n));
    }
  }
  return out;
}

const Result<std::vector<BackendCaps>>& Registry() {
  static const Result<std::vector<BackendCaps>> kRegistry = LoadRegistry();
  return kRegistry;
}

const Result<std::vector<PriorityRule>>& Priorities() {
  static const Result<std::vector<PriorityRule>> kPriorities =
      Registry().ok() ? LoadPriorities(*Registry())
                      : Result<std::vector<PriorityRule>>(Registry().status());
  return kPriorities;
}

}  // namespace

std::string_view CudagraphSupportName(CudagraphSupport support) {
  switch (support) {
    case CudagraphSupport::kNever:
      return "never";
    case CudagraphSupport::kUniformSingleTokenDecode:
      return "uniform_single_token_decode";
    case CudagraphSupport::kUniformBatch:
      return "uniform_batch";
    case CudagraphSupport::kAlways:
      return "always";
  }
  return "never";
}

bool BackendCaps::SupportsHeadSize(int64_t head_size) const {
  if (!head_sizes.empty() &&
      std::find(head_sizes.begin(), head_sizes.end(), head_size) == head_sizes.end()) {
    return false;
  }
  if (head_size_multiple > 0 && head_size % head_size_multiple != 0) return false;
  if (min_head_size > 0 && head_size < min_head_size) return false;
  return max_head_size <= 0 || head_size <= max_head_size;
}

std::string BackendCaps::HeadSizesText() const {
  std::vector<std::string> parts;
  if (!head_sizes.empty()) parts.push_back(fmt::format("{}", fmt::join(head_sizes, ", ")));
  if (head_size_multiple > 0) parts.push_back(fmt::format("multiples of {}", head_size_multiple));
  if (min_head_size > 0) parts.push_back(fmt::format("at least {}", min_head_size));
  if (max_head_size > 0) parts.push_back(fmt::format("up to {}", max_head_size));
  if (gpu_dependent_max_head_size > 0) {
    parts.push_back(
        fmt::format("({} where FlashAttention 4 is supported)", gpu_dependent_max_head_size));
  }
  return parts.empty() ? "any" : fmt::format("{}", fmt::join(parts, " "));
}

bool BackendCaps::SupportsBlockSize(int64_t block_size) const {
  if (block_size <= 0) return false;
  if (kernel_block_multiple > 0 && block_size % kernel_block_multiple == 0) return true;
  return std::any_of(kernel_block_sizes.begin(), kernel_block_sizes.end(),
                     [&](int64_t k) { return block_size % k == 0; });
}

int64_t BackendCaps::MinKernelBlockSize() const {
  int64_t m = kernel_block_multiple;
  for (int64_t k : kernel_block_sizes) m = m ? std::min(m, k) : k;
  return m;
}

KvCacheDtype BackendCaps::StoredKvCacheDtype(KvCacheDtype requested) const {
  for (const auto& [from, to] : kv_cache_dtype_canonical) {
    if (from == requested) return to;
  }
  return requested;
}

bool BackendCaps::Computes(ElementType dtype) const {
  return std::find(model_dtypes.begin(), model_dtypes.end(), dtype) != model_dtypes.end();
}

bool BackendCaps::AcceptsKvCacheDtype(KvCacheDtype dtype) const {
  return kv_cache_dtypes.empty() ||
         std::find(kv_cache_dtypes.begin(), kv_cache_dtypes.end(), dtype) != kv_cache_dtypes.end();
}

bool BackendCaps::RunsOn(DeviceCapability capability) const {
  if (min_capability && capability < *min_capability) return false;
  if (max_capability && *max_capability < capability) return false;
  return capability_majors.empty() || std::find(capability_majors.begin(), capability_majors.end(),
                                                capability.major) != capability_majors.end();
}

std::string BackendCaps::CapabilitiesText() const {
  std::vector<std::string> parts;
  if (!capability_majors.empty()) {
    std::vector<std::string> majors;
    for (const int64_t m : capability_majors) majors.push_back(fmt::format("{}.x", m));
    parts.push_back(fmt::format("{}", fmt::join(majors, " or ")));
  }
  if (min_capability && max_capability) {
    parts.push_back(fmt::format("{} to {}", DeviceCapabilityName(*min_capability),
                                DeviceCapabilityName(*max_capability)));
  } else if (min_capability) {
    parts.push_back(fmt::format("{} or later", DeviceCapabilityName(*min_capability)));
  } else if (max_capability) {
    parts.push_back(fmt::format("up to {}", DeviceCapabilityName(*max_capability)));
  }
  return parts.empty() ? "any" : fmt::format("{}", fmt::join(parts, ", "));
}

Result<std::vector<BackendCaps>> ListBackends() { return Registry(); }

std::string DeviceCapabilityName(DeviceCapability capability) {
  return fmt::format("{}.{}", capability.major, capability.minor);
}

Result<DeviceCapability> ParseDeviceCapability(std::string_view text) {
  const size_t dot = text.find('.');
  const std::string_view major = text.substr(0, dot);
  const std::string_view minor = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  const auto digits = [](std::string_view d, size_t most) {
    return !d.empty() && d.size() <= most &&
           std::all_of(d.begin(), d.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  };
  if (!digits(major, 2) || !digits(minor, 1) || major == "0" || major == "00") {
    return InvalidArgument(fmt::format(
        "'{}' is not a compute capability: write MAJOR.MINOR as the engine reads it "
        "(torch.cuda.get_device_capability), e.g. 9.0 for an H100, 10.0 for a B200, 12.0 for an "
        "RTX PRO 6000 Blackwell",
        text));
  }
  return DeviceCapability{.major = std::stoll(std::string(major)),
                          .minor = std::stoll(std::string(minor))};
}

std::optional<DeviceCapability> GpuNameCapability(std::string_view name) {
  // The name's words: runs of letters and digits, lower case ("NVIDIA A100-SXM4-80GB": nvidia,
  // a100, sxm4, 80gb).
  std::vector<std::string> words;
  std::string word;
  for (const char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch)) != 0) {
      word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  const auto has = [&](std::string_view w) {
    return std::find(words.begin(), words.end(), w) != words.end();
  };
  // NVIDIA's table of CUDA GPUs (developer.nvidia.com/cuda-gpus), by the model word nvidia-smi
  // names; the first row whose words all appear decides. The workstation rows come first, as
  // their names share a model number across generations (RTX 6000: Turing as a Quadro, Ada,
  // Blackwell as an RTX PRO).
  struct Row {
    std::array<std::string_view, 2> words;  // the second empty where one word decides
    DeviceCapability capability;
  };
  static constexpr Row kRows[] = {
      {{"rtx", "blackwell"}, {12, 0}},
      {{"rtx", "ada"}, {8, 9}},
      {{"quadro", "rtx"}, {7, 5}},
      {{"gb10"}, {12, 1}},
      {{"gb300"}, {10, 3}},
      {{"b300"}, {10, 3}},
      {{"gb200"}, {10, 0}},
      {{"b200"}, {10, 0}},
      {{"gh200"}, {9, 0}},
      {{"h200"}, {9, 0}},
      {{"h100"}, {9, 0}},
      {{"h800"}, {9, 0}},
      {{"h20"}, {9, 0}},
      {{"l40s"}, {8, 9}},
      {{"l40"}, {8, 9}},
      {{"l20"}, {8, 9}},
      {{"l4"}, {8, 9}},
      {{"a100"}, {8, 0}},
      {{"a800"}, {8, 0}},
      {{"a30"}, {8, 0}},
      {{"a40"}, {8, 6}},
      {{"a10"}, {8, 6}},
      {{"a10g"}, {8, 6}},
      {{"a16"}, {8, 6}},
      {{"a2"}, {8, 6}},
      {{"a6000"}, {8, 6}},
      {{"a5000"}, {8, 6}},
      {{"a4500"}, {8, 6}},
      {{"a4000"}, {8, 6}},
      {{"a2000"}, {8, 6}},
      {{"t4"}, {7, 5}},
      {{"v100"}, {7, 0}},
  };
  for (const Row& row : kRows) {
    if (std::all_of(row.words.begin(), row.words.end(),
                    [&](std::string_view w) { return w.empty() || has(w); })) {
      return row.capability;
    }
  }
  // GeForce RTX cards by their series: 20xx Turing, 30xx Ampere, 40xx Ada, 50xx Blackwell.
  if (has("rtx")) {
    for (const std::string& w : words) {
      if (w.size() != 4 ||
          !std::all_of(w.begin(), w.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
        continue;
      }
      if (w.starts_with("20")) return DeviceCapability{7, 5};
      if (w.starts_with("30")) return DeviceCapability{8, 6};
      if (w.starts_with("40")) return DeviceCapability{8, 9};
      if (w.starts_with("50")) return DeviceCapability{12, 0};
    }
  }
  return std::nullopt;
}

Result<std::vector<std::string>> SelectionPriorities(bool mla, DeviceCapability capability,
                                                     bool quantized_cache, int64_t num_heads) {
  const Result<std::vector<PriorityRule>>& rules = Priorities();
  if (!rules.ok()) return rules.status();
  for (const PriorityRule& p : *rules) {
    if (p.mla != mla) continue;
    if (!p.majors.empty() &&
        std::find(p.majors.begin(), p.majors.end(), capability.major) == p.majors.end()) {
      continue;
    }
    if (p.quantized_cache && *p.quantized_cache != quantized_cache) continue;
    if (p.max_heads > 0 && (num_heads <= 0 || num_heads > p.max_heads)) continue;
    return p.backends;
  }
  return Internal("the backend registry holds no selection order for this layer");
}

TrtllmOffCause TrtllmAttentionOffCause(std::optional<bool> use_trtllm_attention, int64_t dcp,
                                       std::optional<DeviceCapability> capability) {
  if (use_trtllm_attention == false) return TrtllmOffCause::kAttentionConfig;
  if (dcp > 1) return TrtllmOffCause::kDecodeContextParallel;
  if (capability && capability->major != 10) return TrtllmOffCause::kGpu;
  return TrtllmOffCause::kNone;
}

bool TrtllmAttentionOff(std::optional<bool> use_trtllm_attention, int64_t dcp,
                        std::optional<DeviceCapability> capability) {
  return TrtllmAttentionOffCause(use_trtllm_attention, dcp, capability) != TrtllmOffCause::kNone;
}

Result<BackendCaps> DefaultBackend(BackendFamily family) {
  const Result<std::vector<BackendCaps>>& registry = Registry();
  if (!registry.ok()) return registry.status();
  for (const BackendCaps& b : *registry) {
    if (b.default_for == family) return b;
  }
  return Internal("the backend registry names no default backend for a layer family");
}

Result<BackendCaps> FindBackend(std::string_view name) {
  const Result<std::vector<BackendCaps>>& registry = Registry();
  if (!registry.ok()) return registry.status();
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string accepted;
  for (const BackendCaps& b : *registry) {
    if (b.name == upper) return b;
    accepted += (accepted.empty() ? "" : ", ") + b.name;
  }
  return NotFound(
      fmt::format("unknown attention backend '{}'; accepted: {} (or \"auto\")", name, accepted));
}

}  // namespace kvtopo
