// Plan: cache groups with one GroupGeometry each, the pool layout, capacity and diagnostics for
// one launch. The planner is a pure function of the layer specs and the launch options.
//
// Pipeline (docs/planner.md; research/vllm_kv_cache.md §3, fork_and_models.md A.4):
//   1. block sizes: hybrid attention + recurrent alignment over the target (§3.7), then the
//      blocks backends pick for windowed drafts;
//   2. partition the layers by placement (DCP-replicated apart from the rest) and group each
//      partition (uniform spec, uniform type, or same-spec buckets + page unification + strided
//      split, with an optional fixed group size);
//   3. geometry per group, pool layout (stride = the largest group's sum of pages), capacity;
//   4. promotion of replicated sliding-window blocks to the sharded groups' block (#520);
//   5. scheduler/hash blocks and the enough-memory check.
// Replicated and sharded groups are never unified, and a target page is never padded or
// resized because of a draft. Thread safety: value types; PlanFromSpecs is pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kvtopo/geometry.h"
#include "kvtopo/ids.h"
#include "kvtopo/launch.h"
#include "kvtopo/spec.h"
#include "kvtopo/status.h"

namespace kvtopo {

struct PlanInputs {
  ParallelConfig parallel;
  CacheOptions cache;
  int64_t kv_cache_memory_bytes = 0;  // per rank
  bool kv_cache_memory_is_default = false;
  std::map<std::string, BackendTraits> backends;  // by registry name; missing: kernel block = B
  // The launch's KV connector (LaunchConfig::kv_connector; empty: none). The engine computes
  // block hashes for a connector with prefix caching off too (Plan::hash_block_size).
  std::string kv_connector;
};

struct PlannedGroup {
  GroupId id{0};
  Role role = Role::kTarget;
  LayerSpec spec;  // the merged spec (block size and padding as planned); name = first layer
  std::vector<std::string> layers;
  std::vector<LayerSpec> layer_specs;  // one per layer, as planned (block size, dtype, backend)
  // True when the layers differ in page size but share a type and a block size ("uniform type"):
  // one block id then holds one page of every layer, with the per-layer pages below.
  bool uniform_type = false;
  std::vector<int64_t> layer_page_bytes;          // one per layer, as allocated (padded)
  std::vector<int64_t> layer_natural_page_bytes;  // one per layer, before padding
  GroupGeometry geometry;
  int partition = 0;                    // 0: sharded / recurrent target side, 1: DCP-replicated
  int64_t natural_page_size_bytes = 0;  // before padding
  std::vector<std::string> backends;    // distinct attention backends of the layers
};

// One group's pages inside every block: its layers' pages back to back from byte 0. Groups alias
// the same bytes (a block id belongs to one group at a time), so a group smaller than the largest
// leaves `bytes_per_block - bytes_used` of each of its blocks unused.
struct PoolGroupRegion {
  GroupId group{0};
  std::vector<int64_t> offsets_bytes;  // per layer, in the group's layer order
  int64_t bytes_used = 0;              // the sum of the group's layer pages
};

// One shared pool (vLLM's block-outermost layout): block b of the pool occupies bytes
// [b * bytes_per_block, (b + 1) * bytes_per_block) of every rank's KV-cache memory.
struct PoolLayout {
  int64_t num_blocks = 0;  // including the null block: memory // bytes_per_block
  // The largest group's sum of page sizes (the pool stride); with pipeline stages, the largest
  // over stages of a group's pages on one stage; with layer tuples, the tuples times one tuple.
  int64_t bytes_per_block = 0;
  std::vector<PoolGroupRegion> regions;  // one per group, in group order
  // Layer tuples (LayerSpec::layer_tuples, DeepSeek-V4): a block spans `layer_tuples` tuples of
  // one page of each of `tuple_page_bytes` (the full group's page sizes, ascending); every
  // group's layer sits in the slot of its page size in the tuple of its place among the group's
  // layers of that size. 0 and empty otherwise.
  int64_t layer_tuples = 0;
  std::vector<int64_t> tuple_page_bytes;
};

// One pipeline stage's share of the pool (--pipeline-parallel-size > 1): every stage's worker
// holds the same number of blocks, the smallest any stage's memory holds, so the stage with the
// largest bytes per block sizes the pool.
struct PipelineStage {
  int stage = 0;
  int64_t first_layer = 0;      // the first hidden layer it holds
  int64_t num_layers = 0;       // hidden layers it holds
  int64_t cache_layers = 0;     // KV-cache layers it holds (draft layers on the last stage)
  int64_t bytes_per_block = 0;  // its largest group's pages on this stage
};

struct Capacity {
  int64_t memory_bytes = 0;
  int64_t blocks_per_request = 0;  // one max-length request, all groups
  int64_t max_tokens = 0;          // int(max_concurrency * L)
  double max_concurrency = 0;
};

// One pool per placement partition: no padding across partitions; memory split so every pool
// runs out together.
struct PartitionPool {
  int partition = 0;
  int64_t num_blocks = 0;
  int64_t bytes_per_block = 0;
  int64_t memory_bytes = 0;
};
struct SplitPoolCapacity {
  std::vector<PartitionPool> pools;
  Capacity capacity;
};

struct Promotion {
  bool considered = false;  // a replicated sliding-window draft group met sharded target groups
  bool applied = false;
  std::string reason;
  int64_t block_size_before = 0;
  int64_t block_size_after = 0;
  int64_t bytes_per_block_before = 0;
  int64_t bytes_per_block_after = 0;
  int64_t max_tokens_before = 0;
  int64_t max_tokens_after = 0;
};

struct Plan {
  ModelCacheSpecs model;
  ParallelConfig parallel;
  CacheOptions cache;
  std::vector<PlannedGroup> groups;
  PoolLayout pool;
  Capacity capacity;
  SplitPoolCapacity split_pools;
  Promotion promotion;
  std::vector<PipelineStage> pipeline_stages;  // empty with one stage
  int64_t scheduler_block_size = 0;
  // The tokens of one block hash (the engine's resolve_kv_cache_block_sizes): --prefix-match-unit;
  // else with one group its manager block; with several, the GCD of their manager blocks when the
  // engine computes hashes (prefix caching, or a KV connector not beside a whole-length recurrent
  // block), else the scheduler block (docs/planner.md §5).
  int64_t hash_block_size = 0;
  int64_t block_table_bytes_per_rank = 0;
  int64_t max_model_len_that_fits = 0;  // largest L one request fits in (0: none)
  bool kv_cache_memory_is_default = false;
  std::vector<Diagnostic> diagnostics;  // model diagnostics first, then the planner's

  bool accepted() const;
  // Tokens scheduled but not yet settled, which bound the windowed groups' pages: the launch's
  // step times the batches the engine keeps in flight for the plan's pipeline stages and model
  // runner (CacheOptions::MaxInFlightTokens).
  int64_t max_tokens_in_flight() const;
  // Whether the launch caches prefixes: cache.enable_prefix_caching, which the planner resolves
  // (the launch's flag, else the engine's default for the model); for a plan built by hand that
  // leaves it unset, the model's resolved default (model.enable_prefix_caching).
  bool prefix_caching() const;
  // One "\n  error [code] message" line per error diagnostic, in order (empty when accepted):
  // what every refusal of a rejected plan (kvtopo simulate and verify, the runtime's options,
  // the Python module) appends to its first line.
  std::string ErrorLines() const;
};

// Plans `specs` under `inputs`. Configuration problems become error diagnostics in the plan
// (the launch is rejected); malformed inputs (non-positive sizes, overflow) are errors.
// The planner's rules only: the launch rules that check each planned layer against its
// backend and its group's final geometry need the LaunchConfig, and PlanLaunch /
// PlanLaunchSpecs run them after this. Call those to judge a launch.
Result<Plan> PlanFromSpecs(const ModelCacheSpecs& specs, const PlanInputs& inputs);

// The kernel block size for a manager block `block_size` on every backend of `traits`: B itself
// if all support it, else the largest size dividing B that all support; 0 if none.
int64_t SelectKernelBlockSize(int64_t block_size, const std::vector<const BackendTraits*>& traits);

}  // namespace kvtopo

namespace kvtopo {

// The per-rank KV-cache budget a plan assumes when the user gives none (--kv-cache-memory).
inline constexpr int64_t kDefaultKvCacheMemoryBytes = int64_t{32} << 30;

// Builds the launch's cache specs (model layer), looks up its backends and plans it.
// `kv_cache_memory_bytes` 0 means the launch's own budget (LaunchConfig::kv_cache_memory_bytes);
// when that is 0 too, kDefaultKvCacheMemoryBytes, and the plan says so.
Result<Plan> PlanLaunch(const LaunchConfig& launch, int64_t kv_cache_memory_bytes = 0);

// The second half of PlanLaunch: looks up the backends `specs` name, plans them under the
// launch's parallel and cache options (for specs built elsewhere, e.g. from a parsed config)
// and runs the launch rules over the planned layout.
Result<Plan> PlanLaunchSpecs(const ModelCacheSpecs& specs, const LaunchConfig& launch,
                             int64_t kv_cache_memory_bytes = 0);

// Some launches are rejected before a plan exists: PlanLaunch returns a Status of code kRejected
// (DCP not dividing TP, a windowed layer DCP-sharded, a kernel block not dividing --block-size,
// ...). `kvtopo check`, kvtopo.check() and RejectedError report such a rejection as this one error
// diagnostic: code the status's rule ("parallel-config", ...), else "launch-rejected".
Diagnostic RejectionDiagnostic(const Status& rejected);

}  // namespace kvtopo
