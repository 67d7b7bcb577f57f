// ComputeSlotMapping (include/kvtopo/slot_mapping.h): the striping arithmetic of a SlotLayout
// that GroupGeometry::SlotLayoutFor gave. It lives with the geometry's raw rules in
// src/internal/ so that no DCP arithmetic sits in the worker layer.
#include "kvtopo/slot_mapping.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>

namespace kvtopo {

Status CheckCompressRatio(const SlotLayout& layout) {
  const int64_t c = layout.compress_ratio;
  if (c == 1) return Status::Ok();
  if (c < 1) return InvalidArgument(fmt::format("compress_ratio must be at least 1, got {}", c));
  if (layout.kernel_block_size % c != 0) {
    return InvalidArgument(
        fmt::format("compress_ratio {} does not divide the kernel block of {} tokens", c,
                    layout.kernel_block_size));
  }
  if (layout.num_shards != 1) {
    return InvalidArgument(fmt::format(
        "compress_ratio {} on a layout of {} DCP shards: compressed caches run without DCP", c,
        layout.num_shards));
  }
  if (layout.block_size != 0 && layout.block_size != layout.kernel_block_size) {
    // The engine's get_compressed_slot_mapping counts B / c rows per id of the kernel block
    // table, which addresses the cache only when the kernel block is the block (its one
    // compressed-cache backend, FlashMLA sparse, runs 256-token kernels on 256-token blocks).
    return InvalidArgument(fmt::format(
        "compress_ratio {} with kernel blocks of {} tokens in blocks of {}: the engine maps "
        "compressed caches only where the kernel block is the block",
        c, layout.kernel_block_size, layout.block_size));
  }
  return Status::Ok();
}

namespace {

// The first position mapped to padding (SlotLayout::pad_from), or past every int64 position:
// positions are non-negative, so `uint64_t(p) >= PadLimit(layout)` tests both at once.
uint64_t PadLimit(const SlotLayout& layout) {
  return layout.pad_from > 0 ? static_cast<uint64_t>(layout.pad_from)
                             : std::numeric_limits<uint64_t>::max();
}

// A compressed cache's slots: one row per c positions, b / c rows per kernel block.
Status CompressedSlots(const SlotLayout& layout, std::span<const int32_t> kernel_row,
                       std::span<const TokenPos> positions, std::span<int64_t> out) {
  KVTOPO_RETURN_IF_ERROR(CheckCompressRatio(layout));
  const int64_t c = layout.compress_ratio;
  const int64_t rows = layout.kernel_block_size / c;
  const int64_t columns = static_cast<int64_t>(kernel_row.size());
  const uint64_t limit = PadLimit(layout);
  for (size_t i = 0; i < positions.size(); ++i) {
    const int64_t p = positions[i].value();
    KVTOPO_CHECK(p >= 0);
    // Padding, or (p + 1) mod c != 0 (written so that it does not overflow at INT64_MAX).
    if (static_cast<uint64_t>(p) >= limit || p % c != c - 1) {
      out[i] = kPadSlot;
      continue;
    }
    const int64_t q = p / c;
    const int64_t j = q / rows;
    if (j >= columns) {
      return OutOfRange(
          fmt::format("position {} needs block-table column {} but the row has only {} block ids",
                      p, j, columns));
    }
    out[i] = static_cast<int64_t>(kernel_row[j]) * rows + q % rows;
  }
  std::fill(out.begin() + positions.size(), out.end(), kPadSlot);
  return Status::Ok();
}

}  // namespace

Status ComputeSlotMapping(const SlotLayout& layout, std::span<const int32_t> kernel_row,
                          std::span<const TokenPos> positions, std::span<int64_t> out) {
  if (layout.compress_ratio != 1) {
    KVTOPO_CHECK(layout.kernel_block_size >= 1 && out.size() >= positions.size());
    return CompressedSlots(layout, kernel_row, positions, out);
  }
  const int64_t n = layout.num_shards;
  const int64_t I = n == 1 ? 1 : layout.interleave;
  const int64_t b = layout.kernel_block_size;
  KVTOPO_CHECK(n >= 1 && I >= 1 && b >= 1 && b % I == 0);
  KVTOPO_CHECK(out.size() >= positions.size());
  const int64_t slice = layout.rank.value() % n;
  const int64_t stripe = n * I;
  const int64_t virtual_block = b * n;
  const int64_t columns = static_cast<int64_t>(kernel_row.size());
  const uint64_t limit = PadLimit(layout);
  if (std::has_single_bit(static_cast<uint64_t>(n)) &&
      std::has_single_bit(static_cast<uint64_t>(I)) &&
      std::has_single_bit(static_cast<uint64_t>(b))) {
    // The usual layouts: every divide and modulo below is a shift or a mask (same results for
    // p >= 0), which matters at thousands of positions per rank per step.
    const int i_shift = std::countr_zero(static_cast<uint64_t>(I));
    const int stripe_shift = std::countr_zero(static_cast<uint64_t>(stripe));
    const int vb_shift = std::countr_zero(static_cast<uint64_t>(virtual_block));
    const int64_t b_mul_shift = std::countr_zero(static_cast<uint64_t>(b));
    for (size_t i = 0; i < positions.size(); ++i) {
      const int64_t p = positions[i].value();
      KVTOPO_CHECK(p >= 0);
      if (static_cast<uint64_t>(p) >= limit) {
        out[i] = kPadSlot;
        continue;
      }
      const int64_t j = p >> vb_shift;
      if (j >= columns) {
        return OutOfRange(
            fmt::format("position {} needs block-table column {} but the row has only {} block ids",
                        p, j, columns));
      }
      if (((p >> i_shift) & (n - 1)) != slice) {
        out[i] = kPadSlot;
        continue;
      }
      const int64_t o = p & (virtual_block - 1);
      out[i] = (static_cast<int64_t>(kernel_row[j]) << b_mul_shift) +
               ((o >> stripe_shift) << i_shift) + (o & (I - 1));
    }
    std::fill(out.begin() + positions.size(), out.end(), kPadSlot);
    return Status::Ok();
  }
  // Other layouts: divide once per run of consecutive positions (prefill chunks, decode
  // drafts), then step the quotients and remainders. vb is a multiple of the stripe n * I, so
  // o % I == p % I and the column, stripe and interleave counters wrap together.
  int64_t prev = -2;
  int64_t j = 0, o = 0, stripe_index = 0, in_stripe = 0, in_interleave = 0, owner = 0;
  for (size_t i = 0; i < positions.size(); ++i) {
    const int64_t p = positions[i].value();
    KVTOPO_CHECK(p >= 0);
    if (static_cast<uint64_t>(p) >= limit) {
      out[i] = kPadSlot;
      prev = -2;  // the next position recomputes its column and offsets
      continue;
    }
    if (p == prev + 1) {
      ++o;
      if (++in_stripe == stripe) {
        in_stripe = 0;
        ++stripe_index;
      }
      if (o == virtual_block) {
        o = 0;
        ++j;
        stripe_index = 0;
      }
      if (++in_interleave == I) {
        in_interleave = 0;
        if (++owner == n) owner = 0;
      }
    } else {
      j = p / virtual_block;
      o = p % virtual_block;
      stripe_index = o / stripe;
      in_stripe = o % stripe;
      in_interleave = p % I;
      owner = (p / I) % n;
    }
    prev = p;
    if (j >= columns) {
      return OutOfRange(
          fmt::format("position {} needs block-table column {} but the row has only {} block ids",
                      p, j, columns));
    }
    if (owner != slice) {
      out[i] = kPadSlot;
      continue;
    }
    out[i] = static_cast<int64_t>(kernel_row[j]) * b + stripe_index * I + in_interleave;
  }
  std::fill(out.begin() + positions.size(), out.end(), kPadSlot);
  return Status::Ok();
}

}  // namespace kvtopo
