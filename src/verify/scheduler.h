// The scheduler of `kvtopo verify`, on rank 0: drives the real KVCacheManager through the verify
// workload and describes each step as a StepMessage for the workers.
//
// Workload (kvtopo/verify.h, VerifyOptions): data requests whose prompts end a few tokens short
// of a scheduler-block boundary, then decode steps that verify 1 + S tokens and accept a varying
// number of drafts (rejected drafts are rewound and their positions rewritten with other
// tokens); a prefix-sharing request admitted once its source has computed its prompt; a forced
// preemption and resume from the prefix cache; preemption of the newest request when the pool is
// short; and last a table-only request of max_model_len tokens. Prefill chunks end on the
// recurrent checkpoint boundary when a recurrent align group exists.
//
// Thread safety: none.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/plan.h"
#include "kvtopo/verify.h"
#include "verify/step.h"

namespace kvtopo::internal {

struct VerifyRequestPlan {
  int64_t prompt_len = 0;
  int64_t shares_prefix_of = -1;  // request index whose prompt it starts with
  int64_t shared_prefix_len = 0;
  bool table_only = false;
  int64_t decode_steps = 0;
};

// The verify workload for `plan` (lengths from its scheduler block, max_model_len and S).
Result<std::vector<VerifyRequestPlan>> PlanVerifyRequests(const Plan& plan,
                                                          const VerifyOptions& options);
// The pool that holds the data requests at once, and the table-only request alone.
Result<int64_t> VerifyPoolBlocks(const Plan& plan, const std::vector<VerifyRequestPlan>& requests,
                                 int64_t max_num_batched_tokens);

class VerifyScheduler {
 public:
  static Result<std::unique_ptr<VerifyScheduler>> Create(const Plan& plan,
                                                         const VerifyOptions& options,
                                                         std::vector<VerifyRequestPlan> requests,
                                                         int64_t num_blocks, int32_t num_rows);

  // Schedules the next step (message.done when every request has finished) and advances the
  // requests past it (accepted drafts, rewinds, finished requests).
  Result<StepMessage> Next();

  // Per-request figures for the report.
  const std::vector<VerifyRequestReport>& requests() const { return reports_; }
  int64_t preemptions() const { return preemptions_; }
  int64_t tokens_scheduled() const { return tokens_scheduled_; }

 private:
  enum class State { kWaiting, kRunning, kFinished };
  struct Request {
    int64_t index = 0;
    VerifyRequestPlan plan;
    std::vector<int32_t> token_ids;
    State state = State::kWaiting;
    bool registered = false;
    int32_t row = -1;
    int64_t computed = 0;
    int64_t prefill_target = 0;  // tokens.size() when (re)admitted
    int64_t decode_done = 0;
    bool preempted_once = false;
  };

  explicit VerifyScheduler(const VerifyOptions& options);
  bool Arrived(const Request& r) const;
  int64_t PrefillChunk(const Request& r, int64_t computed, int64_t budget) const;
  void Preempt(Request& r);
  void Finish(Request& r);
  StepEntry Entry(const Request& r, int64_t first, int64_t num_new, int64_t num_queries,
                  int64_t tokens_from, bool clear_row) const;
  void Commit(Request& r, const StepEntry& entry);
  int32_t NextTokenId();

  VerifyOptions options_;
  std::unique_ptr<KVCacheManager> manager_;
  std::vector<Request> requests_;
  std::vector<VerifyRequestReport> reports_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;
  std::vector<int32_t> free_rows_;
  int64_t step_ = 0;
  int64_t spec_tokens_ = 0;
  int64_t lookahead_ = 0;
  int64_t align_block_ = 0;
  int64_t scheduler_block_ = 1;
  int64_t budget_ = 0;
  int64_t max_model_len_ = 0;
  int64_t preemptions_ = 0;
  int64_t tokens_scheduled_ = 0;
  uint64_t token_state_ = 0;
  ComputedBlocks computed_;
};

}  // namespace kvtopo::internal
