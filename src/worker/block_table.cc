#include "kvtopo/block_table.h"

#include <fmt/format.h>

#include <algorithm>

namespace kvtopo {

BlockTable::BlockTable(const GroupGeometry& geometry, int32_t num_rows)
    : width_(geometry.block_table_width()),
      k_(geometry.kernel_blocks_per_block()),
      num_rows_(num_rows) {
  KVTOPO_CHECK(num_rows >= 0 && width_ >= 0 && k_ >= 1);
  data_.assign(static_cast<size_t>(num_rows) * width_, 0);
  lengths_.assign(num_rows, 0);
}

Status BlockTable::FitsWidth(int32_t row, int64_t end) const {
  if (end <= width_) return Status::Ok();
  return OutOfRange(
      fmt::format("block-table row {} would need {} kernel entries but the group's block-table "
                  "width is {}; the plan's geometry is too narrow for this request (check "
                  "--max-model-len)",
                  row, end, width_));
}

Status BlockTable::Append(int32_t row, std::span<const BlockId> manager_blocks) {
  KVTOPO_CHECK(row >= 0 && row < num_rows_);
  return WriteFrom(row, lengths_[row] / k_, manager_blocks);
}

Status BlockTable::WriteFrom(int32_t row, int64_t first_column,
                             std::span<const BlockId> manager_blocks) {
  KVTOPO_CHECK(row >= 0 && row < num_rows_);
  const int64_t start = first_column * k_;
  KVTOPO_CHECK_MSG(first_column >= 0 && start <= lengths_[row],
                   "block-table write leaves a gap in the row");
  const int64_t end = start + static_cast<int64_t>(manager_blocks.size()) * k_;
  KVTOPO_RETURN_IF_ERROR(FitsWidth(row, end));
  int32_t* out = data_.data() + static_cast<size_t>(row) * width_ + start;
  for (BlockId b : manager_blocks) {
    const int32_t base = b.value() * static_cast<int32_t>(k_);
    for (int64_t i = 0; i < k_; ++i) *out++ = base + static_cast<int32_t>(i);
  }
  lengths_[row] = std::max(lengths_[row], end);
  return Status::Ok();
}

Status BlockTable::AddRow(int32_t row, std::span<const BlockId> manager_blocks) {
  KVTOPO_CHECK(row >= 0 && row < num_rows_);
  KVTOPO_RETURN_IF_ERROR(FitsWidth(row, static_cast<int64_t>(manager_blocks.size()) * k_));
  ClearRow(row);
  return WriteFrom(row, 0, manager_blocks);
}

void BlockTable::Clear() {
  for (int32_t row = 0; row < num_rows_; ++row) ClearRow(row);
}

void BlockTable::ClearRow(int32_t row) {
  KVTOPO_CHECK(row >= 0 && row < num_rows_);
  std::fill_n(data_.begin() + static_cast<size_t>(row) * width_, lengths_[row], 0);
  lengths_[row] = 0;
}

void BlockTable::MoveRow(int32_t src, int32_t dst) {
  KVTOPO_CHECK(src >= 0 && src < num_rows_ && dst >= 0 && dst < num_rows_);
  if (src == dst) return;
  const auto from = data_.begin() + static_cast<size_t>(src) * width_;
  const auto to = data_.begin() + static_cast<size_t>(dst) * width_;
  std::copy_n(from, lengths_[src], to);
  if (lengths_[dst] > lengths_[src]) {
    std::fill(to + lengths_[src], to + lengths_[dst], 0);
  }
  lengths_[dst] = lengths_[src];
}

void BlockTable::SwapRow(int32_t a, int32_t b) {
  KVTOPO_CHECK(a >= 0 && a < num_rows_ && b >= 0 && b < num_rows_);
  if (a == b) return;
  const auto row_a = data_.begin() + static_cast<size_t>(a) * width_;
  std::swap_ranges(row_a, row_a + std::max(lengths_[a], lengths_[b]),
                   data_.begin() + static_cast<size_t>(b) * width_);
  std::swap(lengths_[a], lengths_[b]);
}

std::span<const int32_t> BlockTable::Row(int32_t row) const {
  KVTOPO_CHECK(row >= 0 && row < num_rows_);
  return std::span<const int32_t>(data_).subspan(static_cast<size_t>(row) * width_, width_);
}

void BlockTable::CheckInvariants() const {
  KVTOPO_CHECK(data_.size() == static_cast<size_t>(num_rows_) * width_);
  for (int32_t r = 0; r < num_rows_; ++r) {
    KVTOPO_CHECK(lengths_[r] >= 0 && lengths_[r] <= width_ && lengths_[r] % k_ == 0);
    const int32_t* row = data_.data() + static_cast<size_t>(r) * width_;
    for (int64_t c = lengths_[r]; c < width_; ++c) KVTOPO_CHECK(row[c] == 0);
  }
}

Status ComputeBatchSlotMapping(const SlotLayout& layout, const BlockTable& table,
                               std::span<const int64_t> query_start_loc,
                               std::span<const TokenPos> positions, std::span<int64_t> out) {
  KVTOPO_CHECK(out.size() >= positions.size());
  KVTOPO_RETURN_IF_ERROR(CheckCompressRatio(layout));
  if (query_start_loc.empty()) {
    return InvalidArgument("query_start_loc is empty; it holds num_reqs + 1 offsets");
  }
  const size_t num_reqs = query_start_loc.size() - 1;
  if (num_reqs > static_cast<size_t>(table.num_rows())) {
    return InvalidArgument(fmt::format(
        "query_start_loc holds {} requests but the table has {} rows", num_reqs, table.num_rows()));
  }
  const int64_t num_tokens = static_cast<int64_t>(positions.size());
  for (size_t i = 0; i <= num_reqs; ++i) {
    const int64_t at = query_start_loc[i];
    const int64_t low = i == 0 ? 0 : query_start_loc[i - 1];
    if (at < low || at > num_tokens) {
      return InvalidArgument(fmt::format(
          "query_start_loc[{}] is {}; offsets must not decrease and must lie in [0, {}] (the "
          "positions given)",
          i, at, num_tokens));
    }
  }
  std::fill(out.begin(), out.begin() + query_start_loc[0], kPadSlot);
  for (size_t i = 0; i < num_reqs; ++i) {
    const auto row = static_cast<int32_t>(i);
    const size_t begin = static_cast<size_t>(query_start_loc[i]);
    const size_t count = static_cast<size_t>(query_start_loc[i + 1]) - begin;
    const Status status =
        ComputeSlotMapping(layout, table.Row(row).first(table.row_length(row)),
                           positions.subspan(begin, count), out.subspan(begin, count));
    if (!status.ok()) {
      return Status(status.code(), fmt::format("request {} (row {}): {}", i, i, status.message()));
    }
  }
  std::fill(out.begin() + query_start_loc[num_reqs], out.end(), kPadSlot);
  return Status::Ok();
}

}  // namespace kvtopo
