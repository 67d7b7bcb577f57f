// Planning an embedded profile end to end: config parse, specs, grouping, geometry, capacity.
#include <benchmark/benchmark.h>

#include "kvtopo/model.h"
#include "kvtopo/plan.h"

namespace kvtopo {
namespace {

void BM_PlanDefaultKimiK3(benchmark::State& state) {
  const LaunchConfig config = DefaultLaunchConfig();
  for (auto _ : state) {
    auto plan = PlanLaunch(config, int64_t{40} << 30);
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_PlanDefaultKimiK3)->Unit(benchmark::kMicrosecond);

void BM_PlanGlm53FlashDflash2(benchmark::State& state) {
  LaunchConfig config;
  config.model = "glm-5.3-flash";
  config.parallel = {.tensor_parallel_size = 4, .decode_context_parallel_size = 4};
  config.speculative = *ParseSpeculativeConfig(
      R"({"method":"dflash","model":"glm-5.3-flash-dflash2","num_speculative_tokens":7})");
  for (auto _ : state) {
    auto plan = PlanLaunch(config, int64_t{12} << 30);
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_PlanGlm53FlashDflash2)->Unit(benchmark::kMicrosecond);

void BM_PlanEveryTargetProfile(benchmark::State& state) {
  std::vector<LaunchConfig> configs;
  const auto profiles = ListProfiles();
  for (const ProfileInfo& p : *profiles) {
    if (p.kind != "target") continue;
    LaunchConfig c;
    c.model = p.name;
    c.parallel.tensor_parallel_size = 8;
    c.cache.max_model_len = 131072;
    configs.push_back(c);
  }
  for (auto _ : state) {
    for (const LaunchConfig& c : configs) {
      auto plan = PlanLaunch(c, int64_t{64} << 30);
      benchmark::DoNotOptimize(plan);
    }
  }
  state.counters["profiles"] = static_cast<double>(configs.size());
}
BENCHMARK(BM_PlanEveryTargetProfile)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kvtopo
