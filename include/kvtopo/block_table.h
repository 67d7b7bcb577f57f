// BlockTable: one rank's worker-side block table for one cache group.
//
// num_rows x geometry.block_table_width int32 kernel block ids, one row per request slot. The
// width comes from the geometry and is never recomputed here. Manager block m expands to the
// kernel blocks m*k .. m*k+k-1 (k = block_size / kernel_block_size), so manager column j
// occupies kernel columns [j*k, (j+1)*k). Rows are append-only: Append writes past the row's
// current length; WriteFrom rewrites a suffix (recurrent align rows move their speculative
// columns to the row's end each step, see KVCacheManager::LastUpdate). A write that would go
// past the row returns an OutOfRange error and writes nothing.
//
// Invariants (CheckInvariants): every row length is within [0, width] and a multiple of k;
// entries past a row's length are 0.
//
// Thread safety: none; one worker thread owns a table.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kvtopo/geometry.h"
#include "kvtopo/ids.h"
#include "kvtopo/slot_mapping.h"
#include "kvtopo/status.h"

namespace kvtopo {

class BlockTable {
 public:
  BlockTable(const GroupGeometry& geometry, int32_t num_rows);

  int32_t num_rows() const { return num_rows_; }
  int64_t width() const { return width_; }  // kernel entries per row
  int64_t kernel_blocks_per_block() const { return k_; }

  // Appends manager blocks to `row` (expanded to kernel blocks).
  Status Append(int32_t row, std::span<const BlockId> manager_blocks);
  // Writes manager blocks at manager columns [first_column, first_column + size); the first
  // column must not lie past the row's current end. The row then ends at the written suffix's
  // end, or keeps its length if that is longer.
  Status WriteFrom(int32_t row, int64_t first_column, std::span<const BlockId> manager_blocks);
  // Replaces the row with these manager blocks (a new request taking the row: the engine
  // worker's add_row); a row they would not fit is refused and left as it was.
  Status AddRow(int32_t row, std::span<const BlockId> manager_blocks);
  void ClearRow(int32_t row);
  // Clears every row.
  void Clear();
  // Copies `src`'s entries to `dst`, which ends where `src` ends (its entries past that become 0);
  // `src` is unchanged. The persistent batch's condensing: a finished request's row is taken by
  // a later one.
  void MoveRow(int32_t src, int32_t dst);
  // Exchanges two rows, entries and lengths (the persistent batch's reordering).
  void SwapRow(int32_t a, int32_t b);

  // The row's kernel block ids, its full width (entries past row_length are 0).
  std::span<const int32_t> Row(int32_t row) const;
  int64_t row_length(int32_t row) const { return lengths_[row]; }  // kernel entries

  void CheckInvariants() const;

 private:
  // OK when a row ending at kernel entry `end` fits the width; else the OutOfRange a write gets.
  Status FitsWidth(int32_t row, int64_t end) const;

  int64_t width_;
  int64_t k_;
  int32_t num_rows_;
  std::vector<int32_t> data_;     // num_rows_ * width_
  std::vector<int64_t> lengths_;  // kernel entries used per row
};

// The slot mapping of a batch whose request i holds row i (the engine worker's
// compute_slot_mapping): request i's tokens are positions[query_start_loc[i] ..
// query_start_loc[i + 1]), and out[t] is token t's slot on `layout.rank` (GroupGeometry::
// SlotLayoutFor of the table's group), -1 where another rank holds the position; out past the
// last request's tokens is -1. query_start_loc holds num_reqs + 1 non-decreasing offsets, the
// last at most positions.size(), with num_reqs at most the table's rows; out.size() >=
// positions.size(). InvalidArgument for offsets that break this; OutOfRange naming the request
// when a position needs a column past its row's block ids. `out` is unspecified after an error.
Status ComputeBatchSlotMapping(const SlotLayout& layout, const BlockTable& table,
                               std::span<const int64_t> query_start_loc,
                               std::span<const TokenPos> positions, std::span<int64_t> out);

}  // namespace kvtopo
