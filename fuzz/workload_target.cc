// workload: JSON lines through ParseWorkloadJsonl; a small workload (at most 16 requests, 4,096
// tokens, arrival by step 64) is then simulated on the `hybrid` built-in plan (full attention,
// sliding window, recurrent align) on a 512-block pool with every check on, and must end with
// no invariant violation.
#include <algorithm>
#include <string_view>

#include "fuzz_targets.h"
#include "kvtopo/simulate.h"

namespace kvtopo::fuzz {

Reached FuzzWorkload(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<Workload> workload = ParseWorkloadJsonl(text);
  if (!workload.ok()) return Reached::kStopped;
  if (workload->requests.size() > 16) return Reached::kStopped;
  int64_t tokens = 0;
  for (const WorkloadRequest& r : workload->requests) {
    if (r.arrival_step > 64 || r.prompt_len > 4096 || r.decode_steps > 4096) {
      return Reached::kStopped;
    }
    tokens += r.prompt_len + r.decode_steps;
  }
  if (tokens > 4096) return Reached::kStopped;
  static const Result<Plan> plan = DefaultPlanForWorkload("hybrid", 0);
  KVTOPO_CHECK_MSG(plan.ok(), plan.status().ToString());
  SimulateOptions options;
  options.num_blocks = 512;
  options.max_num_seqs = 8;
  options.max_num_batched_tokens = 512;
  options.max_steps = 100'000;
  Result<SimulateReport> report = Simulate(*plan, *workload, options);
  if (!report.ok()) return Reached::kStopped;
  KVTOPO_CHECK_MSG(report->invariant_violations == 0, report->first_violation);
  return Reached::kExercised;
}

}  // namespace kvtopo::fuzz
