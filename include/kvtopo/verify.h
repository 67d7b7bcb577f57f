// Verify: proves a plan's geometry with data. Attention computed the way a DCP engine computes
// it — keys and values written through each rank's slot mapping into that rank's paged cache,
// read back through its block tables with its kernel block size and DCP-local lengths, partial
// outputs merged across ranks with the log-sum-exp correction — must equal attention over the
// unsharded sequence on one rank.
//
// Data flow per step (DESIGN.md §7): rank 0 runs the scheduler (the real KVCacheManager) and
// broadcasts the step (consecutive steps batched into one message, applied in order): scheduled
// requests, their new token ids and every group's row update;
// every rank applies the updates to its own BlockTables, writes the K/V rows of the positions
// its slot mapping gives it, and computes partial attention for the decode queries (1 + S
// query tokens with the causal mask when speculating); one all-gather carries every rank's
// slot ownership, table fingerprints and partial outputs with their LSEs; rank 0 checks that
// each position of a sharded group is held by exactly one rank (by N/n ranks for n slices, by
// all for replicated groups), that every rank built the same rows, that replicas of a slice
// computed identical partials, and that the merged output equals its single-rank reference.
//
// Synthetic data: token ids are seeded; a position's K/V row and query are seeded by a rolling
// hash of the token ids up to it, so shared prefixes hold equal rows (prefix hits are checked
// with data) and a rewound position rewritten with another token holds another row. Rows are
// fp32; attention accumulates in fp64 and partial outputs and LSEs cross ranks as fp32.
//
// Recurrent groups have no attention: every step's row update must fit every rank's table and
// the column of the running state (the checkpoint column) must be addressable and non-null.
// The workload ends with a table-only request of max_model_len tokens, so every group's tables
// are proven to address the longest request without storing its K/V.
//
// Ranks: a VerifyTransport spans P processes that hold the N DCP ranks between them (P divides
// N; each process runs its N/P ranks in a loop). The in-process transport is P = 1; an MPI
// transport (built when MPI is found) runs one process per rank under mpirun.
//
// Thread safety: Verify is a pure function of its inputs apart from the transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kvtopo/plan.h"
#include "kvtopo/status.h"

namespace kvtopo {

struct VerifyOptions {
  uint64_t seed = 0;
  // Data requests. Request i's prompt ends `1 + 3i` tokens short of `i + 1` scheduler blocks,
  // so its decode steps write across a block boundary of every group; request 2 starts with
  // request 1's first scheduler block (a prefix hit); request 1 is preempted after
  // `preempt_after_decode_steps` decode steps and resumes from its prefix hit (0: never).
  int64_t num_requests = 3;
  int64_t decode_steps = 4;  // per data request; each verifies 1 + S tokens
  int64_t preempt_after_decode_steps = 2;
  // The table-only request of max_model_len tokens at the end of the run.
  bool max_length_request = true;
  // Head widths. Small by default; `real_head_dims` takes each group's widths from its spec
  // (MLA: head_size = latent + the spec's rope width; MHA: head_size, head_size_v,
  // num_kv_heads).
  bool real_head_dims = false;
  int64_t mla_latent_dim = 16;
  int64_t mla_rope_dim = 8;
  int64_t head_dim = 16;               // MHA key and value width
  int64_t num_kv_heads = 2;            // MHA, small dims
  int64_t num_query_heads_per_kv = 2;  // MHA: query heads per KV head (GQA)
  int64_t num_mla_query_heads = 2;     // MLA: query heads (all gathered on every rank)
  double max_relative_error = 1e-5;    // per query and head: max |out - ref| / max |ref|
  int64_t num_blocks = 0;              // pool size; 0: sized to fit the requests
};

struct VerifyGroupReport {
  int32_t group = 0;
  std::string kind;
  std::string role;
  std::string placement;
  int64_t dcp_shard_count = 0;
  int64_t block_size = 0;
  int64_t kernel_block_size = 0;
  int64_t interleave = 0;
  bool attention = false;       // false: recurrent (tables only)
  int64_t queries = 0;          // query tokens checked (all heads each)
  int64_t positions_owned = 0;  // scheduled positions whose ownership was counted
  int64_t rows_checked = 0;     // table row updates applied on every rank
  double max_abs_error = 0;
  double max_rel_error = 0;
};

struct VerifyRequestReport {
  int64_t request = 0;
  int64_t num_tokens = 0;  // at the end
  bool table_only = false;
  int64_t queries = 0;
  int64_t prefix_hit_tokens = 0;  // summed over admissions
  int64_t preemptions = 0;
  int64_t rejected_drafts = 0;
  double max_abs_error = 0;
  double max_rel_error = 0;
};

// The largest relative error of one query position of one group (all heads, all requests).
struct VerifyErrorPoint {
  int32_t group = 0;
  int64_t request = 0;
  int64_t position = 0;
  double rel_error = 0;
};

struct VerifyFailure {
  int32_t group = -1;
  int64_t request = -1;
  int64_t position = -1;
  int32_t rank = -1;  // -1: found on the merged output or across ranks
  std::string check;  // ownership, table, readback, replica, attention
  std::string message;
};

struct VerifyReport {
  std::string model;
  int64_t dcp_size = 0;
  int64_t num_processes = 0;
  int64_t num_blocks = 0;
  int64_t steps = 0;
  int64_t tokens_scheduled = 0;
  int64_t queries = 0;
  int64_t preemptions = 0;
  int64_t rejected_drafts = 0;
  int64_t prefix_hit_tokens = 0;
  std::vector<VerifyGroupReport> groups;
  std::vector<VerifyRequestReport> requests;
  std::vector<VerifyErrorPoint> errors;  // one per (group, request, query position)
  bool passed = false;
  VerifyFailure failure;  // the first failure when !passed
  double wall_seconds = 0;
  // Only process 0 holds the figures; the others hold passed, failure and the sizes.
};

// Collectives over the processes that hold the DCP ranks. Process p holds ranks
// [p * N / P, (p + 1) * N / P). Errors are values (a failed collective ends the run).
class VerifyTransport {
 public:
  virtual ~VerifyTransport() = default;
  virtual int32_t num_processes() const = 0;
  virtual int32_t process() const = 0;
  // Process 0's `data` replaces every other process's.
  virtual Status Broadcast(std::vector<std::byte>& data) = 0;
  // Every process passes the same number of bytes; `all` receives them in process order.
  virtual Status AllGather(std::span<const std::byte> local, std::span<std::byte> all) = 0;
};

// One process holding every rank.
std::unique_ptr<VerifyTransport> InProcessTransport();

// Errors: a rejected plan, options out of range (named), a transport whose process count does
// not divide the DCP size, a failed collective. A data mismatch is not an error: the report
// says where (passed false, failure).
Result<VerifyReport> Verify(const Plan& plan, const VerifyOptions& options,
                            VerifyTransport& transport);

// An SVG plot of report.errors: relative error (log scale) by query position, one colour per
// group, the tolerance as a line.
std::string VerifyErrorSvg(const VerifyReport& report, double max_relative_error);

}  // namespace kvtopo
