#include <fmt/format.h>

#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "internal/pydantic.h"
#include "kvtopo/backend.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "model/config_fields.h"
#include "plan/launch_rules.h"

namespace kvtopo {
namespace {

// One finding that many layers share reads once: diagnostics with the same severity, code and
// message but for the quoted layer name they start with ('model.layers.0.self_attn') become the
// first of them, naming how many other layers it stands for ("target layer 'model.layers.0.
// self_attn' (and 60 other layers) uses block size 7 ..."), where the first stood, listing them
// all in Diagnostic::layers. A wrong --block-size or --attention-backend printed one line per
// layer: 61 for kimi-k2.6.
void MergeLayerDiagnostics(const ModelCacheSpecs& specs, std::vector<Diagnostic>& diagnostics) {
  std::set<std::string_view> layer_names;
  for (const LayerSpec& s : specs.layers) layer_names.insert(s.name);
  struct Merged {
    size_t index;    // into `out`; its `layers` lists every layer merged so far
    size_t name_at;  // where the first layer's quoted name starts in its message
  };
  std::map<std::tuple<Severity, std::string, std::string>, Merged> seen;
  std::vector<Diagnostic> out;
  for (Diagnostic& d : diagnostics) {
    // The first quoted span that is a layer name.
    size_t open = d.message.find('\'');
    size_t close = std::string::npos;
    while (open != std::string::npos) {
      close = d.message.find('\'', open + 1);
      if (close == std::string::npos) break;
      if (layer_names.count(std::string_view(d.message).substr(open + 1, close - open - 1))) break;
      open = d.message.find('\'', close + 1);
    }
    if (open == std::string::npos || close == std::string::npos) {
      out.push_back(std::move(d));
      continue;
    }
    // The message without the name (built by appending: GCC 12 at -O3 warns falsely,
    // -Wrestrict, on replacing a span by a literal).
    std::string key = d.message.substr(0, open);
    key.append(d.message, close + 1);
    auto [it, inserted] =
        seen.try_emplace({d.severity, d.code, std::move(key)}, Merged{out.size(), open});
    std::string name = d.message.substr(open + 1, close - open - 1);
    if (inserted) out.push_back(std::move(d));
    out[it->second.index].layers.push_back(std::move(name));
  }
  for (const auto& [key, m] : seen) {
    Diagnostic& d = out[m.index];
    const size_t others = d.layers.size() - 1;
    if (others == 0) {
      d.layers.clear();  // a finding about one layer lists none
      continue;
    }
    d.message.insert(m.name_at + d.layers.front().size() + 2,  // past the quoted name
                     fmt::format(" (and {} other layer{})", others, others == 1 ? "" : "s"));
  }
  diagnostics = std::move(out);
}

// --max-model-len auto (vLLM's _auto_fit_max_model_len): the derived length when one request of
// it fits the pool, else the plan again at the longest length that does. A pool that holds no
// 1-token request keeps the first plan's kv-cache-memory error.
Status AutoFitMaxModelLen(const ModelCacheSpecs& specs, PlanInputs& inputs, Plan& plan) {
  const int64_t fit = plan.max_model_len_that_fits;
  if (fit >= specs.max_model_len) {
    plan.diagnostics.push_back(
        {Severity::kInfo, "max-model-len-auto",
         fmt::format("--max-model-len auto: the model's full length {} fits the KV-cache memory",
                     specs.max_model_len)});
    return Status::Ok();
  }
  if (fit <= 0) return Status::Ok();
  ModelCacheSpecs fitted = specs;
  fitted.max_model_len = fit;
  inputs.cache.max_model_len = fit;
  KVTOPO_ASSIGN_OR_RETURN(plan, PlanFromSpecs(fitted, inputs));
  plan.diagnostics.push_back(
      {Severity::kInfo, "max-model-len-auto",
       fmt::format("--max-model-len auto: reduced from {} to {}, the longest request that fits "
                   "the KV-cache memory",
                   specs.max_model_len, fit)});
  return Status::Ok();
}

// The warnings VllmConfig.__post_init__ gives about --kv-events-config (a flag not planned
// with, its value already checked): events on while the plan caches no prefixes, or a publisher
// named while events are off.
void AddKvEventsWarnings(const LaunchConfig& launch, Plan& plan) {
  constexpr std::string_view kFlag = "--kv-events-config";
  const std::optional<std::string> text = VllmFlagSetting(launch.not_planned_values, kFlag);
  if (!text) return;  // not given, or "None": no config
  const Result<nlohmann::json> j = ParseConfigClassJson(*text, kFlag);
  if (!j.ok() || !j->is_object()) return;
  const bool events = j->contains("enable_kv_cache_events") &&
                      internal::PydanticBool((*j)["enable_kv_cache_events"]).value_or(false);
  if (events && !plan.prefix_caching()) {
    plan.diagnostics.push_back(
        {.severity = Severity::kWarning,
         .code = "kv-events-prefix-caching",
         .message = "--kv-events-config turns KV cache events on, but the launch caches no "
                    "prefixes: the engine warns ('KV cache events are on, but prefix caching is "
                    "not enabled. Use --enable-prefix-caching to enable.')"});
  }
  if (!events && j->contains("publisher") && (*j)["publisher"] == "zmq") {
    plan.diagnostics.push_back(
        {.severity = Severity::kWarning,
         .code = "kv-events-disabled",
         .message = "--kv-events-config names the zmq publisher with enable_kv_cache_events off: "
                    "the engine warns and publishes nothing ('KV cache events are disabled, but "
                    "the scheduler is configured to publish them. Modify "
                    "KVEventsConfig.enable_kv_cache_events to True to enable.')"});
  }
}

}  // namespace

Diagnostic RejectionDiagnostic(const Status& rejected) {
  KVTOPO_CHECK(rejected.code() == StatusCode::kRejected);
  return Diagnostic{.severity = Severity::kError,
                    .code = rejected.rule().empty() ? "launch-rejected" : rejected.rule(),
                    .message = rejected.message()};
}

Result<Plan> PlanLaunch(const LaunchConfig& launch, int64_t kv_cache_memory_bytes) {
  KVTOPO_ASSIGN_OR_RETURN(ModelCacheSpecs specs, BuildModelCacheSpecs(launch));
  return PlanLaunchSpecs(specs, launch, kv_cache_memory_bytes);
}

Result<Plan> PlanLaunchSpecs(const ModelCacheSpecs& specs, const LaunchConfig& launch,
                             int64_t kv_cache_memory_bytes) {
  PlanInputs inputs;
  inputs.parallel = launch.parallel;
  inputs.cache = launch.cache;
  inputs.cache.max_model_len = specs.max_model_len;
  inputs.kv_connector = launch.kv_connector;
  if (specs.max_num_batched_tokens > 0) {
    inputs.cache.max_num_batched_tokens = specs.max_num_batched_tokens;
  }
  if (kv_cache_memory_bytes == 0) kv_cache_memory_bytes = launch.kv_cache_memory_bytes;
  inputs.kv_cache_memory_is_default = kv_cache_memory_bytes == 0;
  inputs.kv_cache_memory_bytes =
      kv_cache_memory_bytes == 0 ? kDefaultKvCacheMemoryBytes : kv_cache_memory_bytes;
  std::set<std::string> names;
  for (const LayerSpec& s : specs.layers) {
    if (!s.attention_backend.empty()) names.insert(s.attention_backend);
  }
  for (const std::string& name : names) {
    if (const auto own = specs.model_backends.find(name); own != specs.model_backends.end()) {
      inputs.backends[name] = own->second;
      continue;
    }
    KVTOPO_ASSIGN_OR_RETURN(BackendCaps caps, FindBackend(name));
    inputs.backends[name] = BackendTraits{
        .kernel_block_sizes = caps.kernel_block_sizes,
        .kernel_block_multiple_of = caps.kernel_block_multiple,
        .indexes_kv_by_block_stride = caps.indexes_kv_by_block_stride,
        .one_window_per_group = caps.one_window_per_group,
    };
  }
  KVTOPO_ASSIGN_OR_RETURN(Plan plan, PlanFromSpecs(specs, inputs));
  if (specs.auto_fit_max_model_len) {
    KVTOPO_RETURN_IF_ERROR(AutoFitMaxModelLen(specs, inputs, plan));
  }
  KVTOPO_RETURN_IF_ERROR(internal::CheckLaunchRules(launch, plan));
  AddKvEventsWarnings(launch, plan);
  MergeLayerDiagnostics(specs, plan.diagnostics);
  return plan;
}

}  // namespace kvtopo
