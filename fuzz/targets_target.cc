#include "fuzz_targets.h"

namespace kvtopo::fuzz {

const std::vector<FuzzTarget>& FuzzTargets() {
  static const std::vector<FuzzTarget> kTargets = {
      {"config_plan", FuzzConfigPlan}, {"launch_plan", FuzzLaunchPlan}, {"workload", FuzzWorkload},
      {"runtime", FuzzRuntime},        {"vllm_config", FuzzVllmConfig},
      {"gguf_plan", FuzzGgufPlan},
  };
  return kTargets;
}

}  // namespace kvtopo::fuzz
