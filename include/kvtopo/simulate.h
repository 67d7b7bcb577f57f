// The no-weight simulator: drives the real runtime (KVCacheManager on the scheduler side, every
// rank's BlockTables and slot mapping on the worker side) through a workload with a simple
// scheduler, checks the invariants after every step, and reports what happened.
//
// Scheduler: a token budget per step; running requests first, then admissions in arrival order;
// chunked prefill capped per request; when the plan has a recurrent align group, prefill chunks
// end on its block boundaries; decode steps verify S drafts (accepted-draft pattern) and reserve
// lookahead slots; when AllocateSlots reports not enough blocks the newest running request is
// preempted (freed and re-queued) and the step retried.
//
// Checks after every step, on every rank: each non-null block id in the worker tables belongs to
// one (group, column) (shared prefix blocks may repeat across requests at that same place); every
// row update fits its table (a recurrent checkpoint column past the row is a violation naming
// its token count); the manager's own CheckInvariants; and, for the scheduled tokens, slot
// mapping: each position of a sharded group on exactly one rank, of a replicated group on all.
//
// Thread safety: none. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kvtopo/plan.h"
#include "kvtopo/status.h"

namespace kvtopo {

struct WorkloadRequest {
  int64_t arrival_step = 0;
  int64_t prompt_len = 0;         // tokens, the shared prefix included
  int64_t shared_prefix_id = -1;  // requests with the same id share their first tokens
  int64_t shared_prefix_len = 0;
  int64_t decode_steps = 0;              // decode steps after the prompt, then the request is freed
  std::vector<int64_t> accepted_drafts;  // per decode step (cycled); empty: all accepted
};

struct Workload {
  std::string name;
  std::vector<WorkloadRequest> requests;
  // Scheduling knobs the workload implies (0: use SimulateOptions).
  int64_t prefill_chunk_tokens = 0;
  int64_t num_lookahead_tokens = -1;    // -1: the plan's lookahead
  int64_t num_speculative_tokens = -1;  // drafts verified per decode step; -1: the plan's S
};

// JSON lines, one request per line: {"arrival_step", "prompt_len", "shared_prefix_id",
// "shared_prefix_len", "decode_steps", "accepted_drafts": [..]}; only prompt_len is required.
// Errors name the line and the field.
Result<Workload> ParseWorkloadJsonl(std::string_view text);

// Built-in workloads: million, decode-steady, prefix-hit, hybrid.
Result<Workload> BuiltinWorkload(std::string_view name);
std::vector<std::string> BuiltinWorkloadNames();

// The plans the built-ins run on without a model: "decode-steady" and "prefix-hit" a synthetic
// model with one full-attention group of 16-token blocks; "hybrid" one full-attention, one
// sliding-window (4,096) and one recurrent align group of 16-token blocks; "million" the seeds'
// default launch. `kv_cache_memory_bytes` 0: the pool is sized by the simulator;
// `num_gpu_blocks_override` > 0 sets the pool's blocks as --num-gpu-blocks-override does.
Result<Plan> DefaultPlanForWorkload(std::string_view name, int64_t kv_cache_memory_bytes,
                                    int64_t num_gpu_blocks_override = 0);

struct SimulateOptions {
  int64_t max_num_batched_tokens = 8192;  // token budget per step
  int64_t prefill_chunk_tokens = 0;       // per-request chunk cap; 0: the budget
  int64_t max_num_seqs = 256;
  uint64_t seed = 0;
  bool enable_prefix_caching = true;
  bool check_invariants = true;
  bool check_slot_mapping = true;
  // The manager's own CheckInvariants walks the whole pool and prefix-cache map (O(pool)). It runs
  // after every step while the walks so far have visited at most this many blocks in all, then
  // after steps 2^k and once more at the end: a long run's walks cost O(budget + pool x log steps),
  // not O(pool x steps) (2^25 block visits take about half a second). The simulator's own checks
  // (ownership, every rank's table, slot mapping) still run every step.
  int64_t whole_pool_check_budget = int64_t{1} << 25;
  // 0: size the pool so the workload fits (its concurrent requests at full length); else blocks.
  int64_t num_blocks = 0;
  // Where num_blocks came from, as the report and the pool-size error name it (the CLI: its flag).
  std::string num_blocks_source = "SimulateOptions::num_blocks";
  // Demonstration: recurrent worker tables DCP-scaled (cdiv(L, B*N) + S columns), as engines
  // built them before the per-group geometry.
  bool inject_dcp_scaled_recurrent_table = false;
  int64_t max_steps = 10'000'000;
  // Called every 64 steps with the tokens scheduled so far and the workload's expected total.
  std::function<void(int64_t done_tokens, int64_t total_tokens)> progress;
};

struct GroupReport {
  int32_t group = 0;
  std::string kind;
  std::string placement;
  int64_t peak_pages = 0;  // block ids held at once (every rank holds the same ids)
  int64_t pages_at_end = 0;
  int64_t table_width = 0;
};

struct RankReport {
  int32_t rank = 0;
  int64_t free_pages = 0;         // at the end
  int64_t peak_local_tokens = 0;  // tokens of sharded groups this rank stored at the peak
};

struct SimulateReport {
  std::string workload;
  std::string model;
  int64_t num_blocks = 0;
  std::string pool_sizing;  // how the pool was sized
  int64_t steps = 0;
  int64_t tokens_scheduled = 0;
  int64_t allocations = 0;          // successful AllocateSlots calls
  int64_t allocation_failures = 0;  // "not enough blocks" results
  int64_t preemptions = 0;
  int64_t requests_finished = 0;
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  double prefix_hit_rate = 0;
  std::vector<GroupReport> groups;
  std::vector<RankReport> ranks;
  // Free pages (the null block excluded) after the last step's allocations, before finished
  // requests release theirs; and the fewest after any step.
  int64_t free_pages_after_last_step = 0;
  int64_t min_free_pages = std::numeric_limits<int64_t>::max();
  int64_t invariant_checks = 0;  // steps checked
  // Runs of the manager's whole-pool check (see SimulateOptions::whole_pool_check_budget): after
  // every step up to pool_check_every_step_until, then after steps 2^k, and at the end when a
  // step since the last one went unwalked.
  int64_t pool_checks = 0;
  int64_t pool_check_every_step_until = 0;
  int64_t invariant_violations = 0;
  std::string first_violation;
  int64_t first_violation_tokens = 0;  // request length at the first violation
  double wall_seconds = 0;
  double runtime_seconds = 0;  // inside get_computed_blocks + allocate_slots + free
  double get_computed_blocks_seconds = 0;
  double allocate_slots_seconds = 0;
  // The part of allocate_slots_seconds spent in decode steps of running requests (one new token
  // plus verified drafts), and those calls: steady-state decode cost apart from prefill chunks.
  double decode_allocate_slots_seconds = 0;
  int64_t decode_allocate_slots_calls = 0;
  double free_seconds = 0;
  double hash_seconds = 0;  // AddRequest + AppendTokens: block hashing, not in runtime_seconds
  int64_t get_computed_blocks_calls = 0;
  int64_t allocate_slots_calls = 0;
  int64_t free_calls = 0;
};

Result<SimulateReport> Simulate(const Plan& plan, const Workload& workload,
                                const SimulateOptions& options);

}  // namespace kvtopo
