// What every process derives alike from the plan and the options before the first step, and the
// layout of one rank's per-step output (the all-gathered record).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvtopo/geometry.h"
#include "kvtopo/plan.h"
#include "kvtopo/verify.h"
#include "verify/attention.h"
#include "verify/step.h"

namespace kvtopo::internal {

// Known bugs `kvtopo verify --inject` reproduces to show that its checks catch them.
struct VerifyFaults {
  // Recurrent worker tables DCP-scaled (cdiv(L, B * N) + S columns), the seeds' bug.
  bool dcp_scaled_recurrent_table = false;
  // Draft attention metadata not recomputed from the draft's own global length: a replicated
  // draft reads the target's local length, a sharded draft the global length (the EAGLE3 bug).
  bool wrong_draft_local_length = false;
  // Rank 1 writes its K/V through rank 0's slot mapping.
  bool foreign_slot_mapping = false;
};

Result<VerifyReport> VerifyWithFaults(const Plan& plan, const VerifyOptions& options,
                                      const VerifyFaults& faults, VerifyTransport& transport);

struct VerifyGroup {
  int32_t id = 0;
  GroupGeometry geometry;  // as the worker tables see it (faults applied)
  Role role = Role::kTarget;
  bool attention = false;
  bool causal = true;
  HeadDims dims;  // attention groups
};

struct VerifySetup {
  uint64_t seed = 0;
  int64_t dcp_size = 1;  // N
  int32_t num_rows = 0;  // block-table rows on every rank
  int64_t num_blocks = 0;
  int64_t page_stride_floats = 0;  // floats per block id in a rank's arena
  int64_t max_arena_bytes = 0;     // per rank: pages past it are refused (a failure, not a crash)
  std::vector<VerifyGroup> groups;
  int32_t target_group_for_draft_fault = -1;  // a sharded target attention group, if any
  VerifyFaults faults;
};

// Checks of one rank that found a problem on that rank alone.
enum class RankCheck : int64_t {
  kNone = 0,
  kTable = 1,
  kReadback = 2,
  kKernelRead = 3,
  kMemory = 4,
};

// A rank's first problem in a step: the check, where, and up to three numbers for the message.
struct RankFailure {
  RankCheck check = RankCheck::kNone;
  int64_t group = -1;
  int64_t request = -1;
  int64_t position = -1;
  int64_t detail[3] = {0, 0, 0};
};

// Byte offsets of the sections of one rank's step output.
struct RankOutputLayout {
  size_t failure = 0;                    // RankFailure
  std::vector<size_t> row_fingerprints;  // [entry] -> num_groups uint64
  std::vector<size_t> ownership;         // [entry] -> num_groups x num_new bytes (recurrent: 0)
  std::vector<size_t> partials;          // [entry] -> attention groups' floats, or npos
  size_t size = 0;
};
RankOutputLayout LayoutRankOutput(const VerifySetup& setup, const StepMessage& message);

// The first position a query at `position` attends in a group: the window's start for sliding
// windows, the chunk's start for chunked local attention, else 0.
int64_t FirstAttendedPosition(const GroupGeometry& geometry, int64_t position);

}  // namespace kvtopo::internal
