#include <set>

#include "kvtopo/backend.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "plan/launch_rules.h"

namespace kvtopo {

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
  if (kv_cache_memory_bytes == 0) kv_cache_memory_bytes = launch.kv_cache_memory_bytes;
  inputs.kv_cache_memory_is_default = kv_cache_memory_bytes == 0;
  inputs.kv_cache_memory_bytes =
      kv_cache_memory_bytes == 0 ? kDefaultKvCacheMemoryBytes : kv_cache_memory_bytes;
  std::set<std::string> names;
  for (const LayerSpec& s : specs.layers) {
    if (!s.attention_backend.empty()) names.insert(s.attention_backend);
  }
  for (const std::string& name : names) {
    KVTOPO_ASSIGN_OR_RETURN(BackendCaps caps, FindBackend(name));
    inputs.backends[name] = BackendTraits{
        .kernel_block_sizes = caps.kernel_block_sizes,
        .kernel_block_multiple_of = caps.kernel_block_multiple,
        .indexes_kv_by_block_stride = caps.indexes_kv_by_block_stride,
    };
  }
  KVTOPO_ASSIGN_OR_RETURN(Plan plan, PlanFromSpecs(specs, inputs));
  KVTOPO_RETURN_IF_ERROR(internal::CheckLaunchRules(launch, plan));
  return plan;
}

}  // namespace kvtopo
