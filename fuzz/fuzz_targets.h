// The libFuzzer targets' bodies (docs/reliability.md). Each takes one input and returns 0; what
// it finds is a crash, a sanitizer report, a KVTOPO_CHECK failure or a broken oracle (which
// aborts through KVTOPO_CHECK_MSG with the difference). fuzz_main.cc wraps one of them as
// LLVMFuzzerTestOneInput; the test suite replays every file of fuzz/corpus/<name>/ through them.
//
//   config_plan  config.json text -> model cache specs -> plan (two launches), plan JSON report
//   launch_plan  launch options as `name=value` lines (the launch-option table, the speculative
//                JSON among them) -> LaunchConfig -> plan -> a manager built from it
//   workload     JSON lines (ParseWorkloadJsonl); small workloads are simulated on the hybrid
//                built-in plan with every check on
//   runtime      a group mix, DCP 1/4/16 and an operation sequence (add, get_computed_blocks +
//                allocate_slots with lookahead, decode with drafts, free, preempt, the batched
//                API) against KVCacheManager::CheckInvariants, worker tables expanded by an
//                oracle, and slot mapping against per-rank ownership by enumeration
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace kvtopo::fuzz {

int FuzzConfigPlan(const uint8_t* data, size_t size);
int FuzzLaunchPlan(const uint8_t* data, size_t size);
int FuzzWorkload(const uint8_t* data, size_t size);
int FuzzRuntime(const uint8_t* data, size_t size);

struct FuzzTarget {
  std::string_view name;  // the fuzz/corpus/<name> folder and the kvtopo_fuzz_<name> binary
  int (*run)(const uint8_t* data, size_t size);
};
const std::vector<FuzzTarget>& FuzzTargets();

}  // namespace kvtopo::fuzz
