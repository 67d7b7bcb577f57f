// Slot mapping and rank-local lengths under decode context parallelism: on which rank, in which
// slot, does token p of a request live?
//
// A group with n = geometry.dcp_shard_count token-position slices over N DCP ranks stripes
// positions round-robin in chunks of I = interleave tokens:
//   slice(p)       = (p / I) mod n
//   rank r holds slice r mod n, so each slice is held by the N / n ranks {s, s+n, s+2n, ...}.
//   (Sharded groups: n = N, one rank per slice. Replicated and recurrent groups: n = 1, every
//   rank holds every position. Partial groups: this is the fork's indexer layout, where
//   attention-local position q on rank r maps to ((q / I) * (N / n) + r / n) * I + q mod I.)
// Each rank stores its positions as a dense local sequence paged by the same block ids. With
// kernel block size b (slots are computed on kernel blocks), virtual block V = b * n:
//   column j = p / V, o = p mod V, local_off = (o / (n*I)) * I + o mod I   (in [0, b))
//   slot(p) = row[j] * b + local_off on a rank holding slice(p), else -1 (the write is skipped).
// Requires I | b when n > 1 (the planner validates it).
//
// Rank-local length of a sequence of L tokens on slice s:
//   local_len(L, n, s, I) = floor(L / (n*I)) * I + clamp(L mod (n*I) - s*I, 0, I)
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

#include "kvtopo/geometry.h"
#include "kvtopo/ids.h"
#include "kvtopo/status.h"

namespace kvtopo {

inline constexpr int64_t kPadSlot = -1;

// How one rank maps positions of one group to slots.
struct SlotLayout {
  int64_t num_shards = 1;         // n: distinct position slices
  int64_t interleave = 1;         // I
  int64_t kernel_block_size = 0;  // b: tokens per kernel page on one rank
  Rank rank{0};                   // this rank, in [0, N)
};
// The layout of `geometry` on `rank` (reads the geometry only).
SlotLayout SlotLayoutFor(const GroupGeometry& geometry, Rank rank);

// The slice holding position p, and whether `layout.rank` holds it.
int64_t OwnerSlice(TokenPos position, int64_t num_shards, int64_t interleave);
bool HoldsPosition(const SlotLayout& layout, TokenPos position);

// Slot of each position of one request whose kernel block row is `kernel_row` (row_length
// entries). out.size() >= positions.size(); out past positions.size() is padded with -1.
// Error when a position needs a column at or past row_length (too few block ids).
Status ComputeSlotMapping(const SlotLayout& layout, std::span<const int32_t> kernel_row,
                          std::span<const TokenPos> positions, std::span<int64_t> out);

// local_len(L, n, s, I) for slice s in [0, n).
TokenCount LocalSeqLen(TokenCount seq_len, int64_t num_shards, int64_t slice, int64_t interleave);
// The local length of `geometry`'s group on `rank`: slice rank mod n.
TokenCount LocalSeqLen(const GroupGeometry& geometry, Rank rank, TokenCount seq_len);

// Batch form for attention metadata (target or draft; a draft passes its own global lengths,
// recomputed every draft step): out[i] = local_len(seq_lens[i]) for i < seq_lens.size(), and 0
// for the padding rows past it. out.size() >= seq_lens.size().
void FillLocalSeqLens(std::span<const int32_t> seq_lens, int64_t num_shards, int64_t slice,
                      int64_t interleave, std::span<int32_t> out);

}  // namespace kvtopo
