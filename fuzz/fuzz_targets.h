// The libFuzzer targets' bodies (docs/reliability.md). Each takes one input and says how far it
// got (an input can stop where it enters: a parse error, a bound, a rejected option); what it finds
// is a crash, a sanitizer report, a KVTOPO_CHECK failure or a broken oracle (which aborts through
// KVTOPO_CHECK_MSG with the difference). fuzz_main.cc wraps one of them as LLVMFuzzerTestOneInput;
// the test suite replays every file of fuzz/corpus/<name>/ through them.
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
//   vllm_config  a `vllm serve --config` YAML file -> the engine's arguments -> the launch
//                options among them -> LaunchConfig -> plan
//   gguf_plan    a GGUF file's bytes -> its metadata -> the config the engine builds -> plan
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace kvtopo::fuzz {

// kStopped: the input stopped where it entered; kExercised: it reached the target's work (a
// plan, a simulation, a manager running the operations). Every seed not named issue_* must
// reach kExercised (tests/fuzz/corpus_test.cc).
enum class Reached { kStopped, kExercised };

Reached FuzzConfigPlan(const uint8_t* data, size_t size);
Reached FuzzLaunchPlan(const uint8_t* data, size_t size);
Reached FuzzWorkload(const uint8_t* data, size_t size);
Reached FuzzRuntime(const uint8_t* data, size_t size);
Reached FuzzVllmConfig(const uint8_t* data, size_t size);
Reached FuzzGgufPlan(const uint8_t* data, size_t size);

struct FuzzTarget {
  std::string_view name;  // the fuzz/corpus/<name> folder and the kvtopo_fuzz_<name> binary
  Reached (*run)(const uint8_t* data, size_t size);
};
const std::vector<FuzzTarget>& FuzzTargets();

}  // namespace kvtopo::fuzz
