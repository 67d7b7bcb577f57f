// config_plan: config.json text -> model cache specs -> plan, under four launches (vLLM's
// defaults on one rank; TP4/DCP4 with interleave 4, MTP speculation and --trust-remote-code; the
// defaults under --model-impl transformers, trusting remote code; TP2 with an fp8 cache, which
// DeepSeek-V4's layer tuples need), then the plan's JSON report. A
// Mistral-format params.json (n_layers and no architectures) is converted first, as the engine
// converts it. The same text is then read as an EAGLE-3 draft's config (the engine's renaming,
// or its speculators-format conversion).
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz_targets.h"
#include "internal/json_text.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"
#include "model/architectures.h"
#include "model/mistral_format.h"

namespace kvtopo::fuzz {
namespace {

LaunchConfig Launch(int which) {
  LaunchConfig c;
  c.model = "fuzz/config.json";
  if (which == 2) {
    c.model_impl = "transformers";
    c.trust_remote_code = true;
  }
  if (which == 3) {
    c.parallel = ParallelConfig{.tensor_parallel_size = 2};
    c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
    c.pipeline_parallel_size = 2;
  }
  if (which == 1) {
    c.trust_remote_code = true;
    c.parallel = ParallelConfig{.tensor_parallel_size = 4,
                                .decode_context_parallel_size = 4,
                                .dcp_kv_cache_interleave_size = 4};
    c.cache.block_size = 64;
    c.cache.max_model_len = 65536;
    c.speculative = SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 2};
  }
  return c;
}

}  // namespace

Reached FuzzConfigPlan(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<nlohmann::json> json = internal::ParseJsonText(text, "config.json");
  if (!json.ok()) return Reached::kStopped;
  if (json->is_object() && json->contains("n_layers") && !json->contains("architectures")) {
    json = internal::ConvertMistralParams(*json, "fuzz/params.json", nlohmann::json());
    if (!json.ok()) return Reached::kStopped;
  }
  Reached reached = Reached::kStopped;
  for (int which : {0, 1, 2, 3}) {
    const LaunchConfig launch = Launch(which);
    Result<ModelCacheSpecs> specs = BuildModelCacheSpecsFromJson(*json, launch);
    if (!specs.ok()) continue;
    Result<Plan> plan = PlanLaunchSpecs(*specs, launch);
    if (!plan.ok()) continue;
    (void)PlanToJsonText(*plan);
    reached = Reached::kExercised;
  }
  internal::LoadedConfig draft{*json, "fuzz/draft.json", "fuzz/draft.json"};
  if (internal::ResolveDraftConfig("eagle3", draft).ok() &&
      internal::DescribeModel(draft.json, draft.file).ok()) {
    reached = Reached::kExercised;
  }
  return reached;
}

}  // namespace kvtopo::fuzz
