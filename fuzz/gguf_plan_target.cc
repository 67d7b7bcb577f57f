// gguf_plan: a GGUF file's bytes -> its metadata (ReadGgufMetadata) -> the config the engine builds
// from it (GgufToConfig) -> model cache specs -> plan, then the plan's JSON report.
#include <sstream>
#include <string>

#include "fuzz_targets.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"
#include "model/gguf.h"

namespace kvtopo::fuzz {

Reached FuzzGgufPlan(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  Result<nlohmann::json> metadata = internal::ReadGgufMetadata(in, size, "fuzz/model.gguf");
  if (!metadata.ok()) return Reached::kStopped;
  Result<nlohmann::json> config = internal::GgufToConfig(*metadata, "fuzz/model.gguf");
  if (!config.ok()) return Reached::kStopped;
  LaunchConfig launch;
  launch.model = "fuzz/model.gguf";
  Result<ModelCacheSpecs> specs = BuildModelCacheSpecsFromJson(*config, launch);
  if (!specs.ok()) return Reached::kStopped;
  Result<Plan> plan = PlanLaunchSpecs(*specs, launch);
  if (!plan.ok()) return Reached::kStopped;
  (void)PlanToJsonText(*plan);
  return Reached::kExercised;
}

}  // namespace kvtopo::fuzz
