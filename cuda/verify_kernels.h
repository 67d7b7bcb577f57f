// CUDA kernels for the data path that `kvtopo verify` checks on the CPU (docs/verify.md):
//
//   ScatterKvRows   one request's slot mapping on one rank and the write of each token's K/V row
//                   into that rank's paged arena, as ComputeSlotMapping (kvtopo/slot_mapping.h)
//                   maps it: slot(p) = row[p / V] * b + (o / (n*I)) * I + o mod I with V = b*n,
//                   o = p mod V, on the rank holding slice (p / I) mod n; -1 (no write) on the
//                   others.
//   MergePartials   the log-sum-exp merge of per-rank partial attention outputs, as
//                   internal::MergePartials (src/verify/attention.h): per query head value_dim
//                   floats then the LSE; an empty range (zeros, LSE -inf) is the merge identity.
//
// The kernels compute in fp32 on device memory the caller owns; cuda/verify_kernels_check.cu
// checks them against the CPU functions (slots and arena bit-exact, the merge within 1e-5).
// Neither kernel is needed by the library, the CLI or `make test`.
//
// Thread safety: the launchers are pure functions of their arguments; they enqueue work on
// `stream` and return without waiting for it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kvtopo/geometry.h"
#include "kvtopo/status.h"

namespace kvtopo::gpu {

// Bits of ScatterStatus::error_bits. A position with an error gets slot -1 and no write.
inline constexpr uint32_t kPositionPastRow = 1;     // needs a column at or past row_length
inline constexpr uint32_t kNegativePosition = 2;    // p < 0
inline constexpr uint32_t kSlotOutsideArena = 4;    // block id * b + offset not in [0, arena_slots)
inline constexpr uint64_t kNoError = ~uint64_t{0};  // first_error_index when nothing failed

// What ScatterKvRows found wrong; lives in device memory and is reset by each launch.
struct ScatterStatus {
  unsigned long long first_error_index;  // the smallest index with an error, or kNoError
  uint32_t error_bits;                   // OR of the bits of every position with an error
};

// One request on one rank. Every pointer is device memory.
struct ScatterArgs {
  SlotLayout layout;                    // GroupGeometry::SlotLayoutFor(rank)
  const int32_t* kernel_row = nullptr;  // the request's kernel block ids, row_length entries
  int64_t row_length = 0;
  const int64_t* positions = nullptr;  // global token positions, any order, num_positions
  int64_t num_positions = 0;
  const float* kv_rows = nullptr;  // num_positions x row_floats: the row of positions[i]
  int64_t row_floats = 0;
  float* arena = nullptr;  // arena_slots x row_floats: the rank's paged cache
  int64_t arena_slots = 0;
  int64_t* slots = nullptr;         // out: num_positions slots, -1 where none is written
  ScatterStatus* status = nullptr;  // out
};

// Enqueues the scatter. InvalidArgument for a layout ComputeSlotMapping would refuse (n, I or
// b < 1, I not dividing b when n > 1, a negative rank), negative sizes or a missing pointer;
// Internal for a CUDA launch error.
Status ScatterKvRows(const ScatterArgs& args, cudaStream_t stream);

// Partial outputs of num_ranks ranks for num_queries queries: partials holds
// [rank][query][head][value_dim + 1] floats (the layout of the DCP all-gather), out
// [query][head][value_dim + 1]. LSEs are finite or -inf. Every pointer is device memory.
struct MergeArgs {
  int64_t num_ranks = 0;
  int64_t num_queries = 0;
  int64_t num_query_heads = 0;
  int64_t value_dim = 0;
  const float* partials = nullptr;
  float* out = nullptr;
};

// The most ranks one merge takes (their weights sit in shared memory).
inline constexpr int64_t kMaxMergeRanks = 1024;

// Enqueues the merge. InvalidArgument for sizes out of range (ranks in [1, kMaxMergeRanks],
// heads and value_dim >= 1, queries >= 0) or a missing pointer; Internal for a launch error.
Status MergePartials(const MergeArgs& args, cudaStream_t stream);

}  // namespace kvtopo::gpu
