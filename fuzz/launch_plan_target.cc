// launch_plan: launch options as `name=value` lines, set through the launch-option table exactly
// as the CLI and Python set them (`model=<profile>`, `speculative_config=<JSON>`, integers with
// vLLM's suffixes, switches as true/false), `vllm serve` flags not planned with as
// `--flag=value` lines (their values checked) and the engine's environment as `env:NAME=VALUE`
// lines -> LaunchConfig -> plan. An accepted plan must give a manager that takes a request (an
// oracle: the plan's numbers are usable by the runtime).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_targets.h"
#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"

namespace kvtopo::fuzz {
namespace {

// Models and drafts are embedded profiles only: the target never reads the file system.
bool IsProfile(const std::string& name) {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    if (auto profiles = ListProfiles(); profiles.ok()) {
      for (const ProfileInfo& p : *profiles) names.push_back(p.name);
    }
    return names;
  }();
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

void ExerciseManager(const Plan& plan) {
  const int64_t num_blocks = std::clamp<int64_t>(plan.pool.num_blocks, 1, 2048);
  Result<KVCacheManagerOptions> options = KVCacheManagerOptions::FromPlan(plan, num_blocks);
  KVTOPO_CHECK_MSG(options.ok(),
                   "an accepted plan gives no manager options: " + options.status().ToString());
  Result<std::unique_ptr<KVCacheManager>> created = KVCacheManager::Create(*std::move(options));
  KVTOPO_CHECK_MSG(created.ok(),
                   "an accepted plan gives no manager: " + created.status().ToString());
  KVCacheManager& m = **created;
  const int64_t len = std::min<int64_t>(m.max_model_len(), 300);
  std::vector<int32_t> prompt(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) prompt[i] = static_cast<int32_t>(i % 97);
  // Every call below is a legal use of the manager: a non-OK status is a bug.
  const auto must = [](const Status& status, const char* call) {
    KVTOPO_CHECK_MSG(status.ok(),
                     std::string(call) + " refused a legal call: " + status.ToString());
  };
  for (int64_t id : {1, 2}) {
    must(m.AddRequest(RequestId{id}, prompt), "AddRequest");
    ComputedBlocks hits;
    const Result<TokenCount> hit = m.GetComputedBlocks(RequestId{id}, hits);
    must(hit.status(), "GetComputedBlocks");
    const Result<bool> allocated =
        m.AllocateSlots(RequestId{id}, {.num_new_tokens = TokenCount{len - hit->value()},
                                        .num_new_computed_tokens = *hit,
                                        .computed = &hits});
    must(allocated.status(), "AllocateSlots");
    m.CheckInvariants();
  }
  must(m.Free(RequestId{1}), "Free");
  must(m.Free(RequestId{2}), "Free");
  m.CheckInvariants();
}

}  // namespace

Reached FuzzLaunchPlan(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  LaunchOptions options;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, eq);
    const std::string value(line.substr(eq + 1));
    // An environment variable where the engine starts: `env:NAME=VALUE`.
    if (name.starts_with("env:")) {
      options.vllm_environment.push_back(std::string(name.substr(4)) + "=" + value);
      continue;
    }
    if (name == "model") {
      if (!IsProfile(value)) return Reached::kStopped;
      options.model = value;
      continue;
    }
    const LaunchOption* option = FindLaunchOption(name);
    if (option == nullptr) {
      // A `vllm serve` flag not planned with ("--port=80", "--numa-bind=true"): its value as
      // the CLI keeps it.
      if (const VllmFlag* flag = FindVllmFlagNotPlanned(name); flag != nullptr) {
        VllmFlagValue v{.flag = flag->name};
        if (flag->takes_value) {
          v.values.emplace_back(value);
        } else {
          v.on = value == "true";
        }
        options.not_planned_values.push_back(std::move(v));
        options.not_planned.emplace_back(name);  // as typed, as the CLI lists them
      }
      continue;
    }
    // The target's config may come from --hf-config-path: a profile too.
    if (option->name == "hf_config_path" && !IsProfile(value)) return Reached::kStopped;
    if (!SetLaunchOption(options, *option, value, name).ok()) return Reached::kStopped;
  }
  Result<LaunchConfig> config = ToLaunchConfig(options);
  if (!config.ok()) return Reached::kStopped;
  if (config->speculative && !config->speculative->model.empty() &&
      !IsProfile(config->speculative->model)) {
    return Reached::kStopped;
  }
  Result<Plan> plan = PlanLaunch(*config);
  if (!plan.ok()) return Reached::kStopped;
  (void)PlanToJsonText(*plan);
  if (plan->accepted()) ExerciseManager(*plan);
  return Reached::kExercised;
}

}  // namespace kvtopo::fuzz
