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
// Compressed caches (compress_ratio c > 1, one row per c positions; the engine's
// get_compressed_slot_mapping): position p writes a row only when (p + 1) mod c == 0, row
// q = p / c, and a kernel block holds b / c rows:
//   slot(p) = row[q / (b/c)] * (b/c) + q mod (b/c), else -1.
// Requires c | b, n = 1 (the engine runs no compressed cache under DCP) and b = B (the
// engine's mapping counts B / c rows per kernel block id, which holds only then).
//
// A layout with pad_from set maps every position at or past it to -1 without reading the row
// (a speculative draft step's positions past max_model_len, which the engine's EAGLE proposer
// pads).
//
// Rank-local lengths: GroupGeometry::LocalLength / LocalLengths.
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

// Slot of each position of one request on `layout.rank` (GroupGeometry::SlotLayoutFor) whose
// kernel block row is `kernel_row` (row_length entries). out.size() >= positions.size(); out past
// positions.size() is padded with -1, and so is every position another rank holds. Error when a
// position needs a column at or past row_length (too few block ids), and InvalidArgument for a
// compress_ratio below 1, not dividing the kernel block, or above 1 in a layout of n > 1 or with
// a kernel block other than the block.
Status ComputeSlotMapping(const SlotLayout& layout, std::span<const int32_t> kernel_row,
                          std::span<const TokenPos> positions, std::span<int64_t> out);

// OK for compress_ratio 1, or above 1 dividing the kernel block in a layout of one shard whose
// kernel block is the block; else the InvalidArgument ComputeSlotMapping returns for it.
Status CheckCompressRatio(const SlotLayout& layout);

}  // namespace kvtopo
