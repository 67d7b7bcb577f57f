#include "kvtopo/slot_mapping.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace kvtopo {

SlotLayout SlotLayoutFor(const GroupGeometry& geometry, Rank rank) {
  // Only sharded and partial groups stripe positions; the others are local on every rank.
  const int64_t n = geometry.interleaved_slots() ? geometry.dcp_shard_count : 1;
  return SlotLayout{.num_shards = n,
                    .interleave = geometry.interleave,
                    .kernel_block_size = geometry.kernel_block_size,
                    .rank = rank};
}

int64_t OwnerSlice(TokenPos position, int64_t num_shards, int64_t interleave) {
  return (position.value() / interleave) % num_shards;
}

bool HoldsPosition(const SlotLayout& layout, TokenPos position) {
  return OwnerSlice(position, layout.num_shards, layout.interleave) ==
         layout.rank.value() % layout.num_shards;
}

Status ComputeSlotMapping(const SlotLayout& layout, std::span<const int32_t> kernel_row,
                          std::span<const TokenPos> positions, std::span<int64_t> out) {
  const int64_t n = layout.num_shards;
  const int64_t I = n == 1 ? 1 : layout.interleave;
  const int64_t b = layout.kernel_block_size;
  KVTOPO_CHECK(n >= 1 && I >= 1 && b >= 1 && b % I == 0);
  KVTOPO_CHECK(out.size() >= positions.size());
  const int64_t slice = layout.rank.value() % n;
  const int64_t stripe = n * I;
  const int64_t virtual_block = b * n;
  const int64_t columns = static_cast<int64_t>(kernel_row.size());
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

TokenCount LocalSeqLen(TokenCount seq_len, int64_t num_shards, int64_t slice, int64_t interleave) {
  KVTOPO_CHECK(num_shards >= 1 && interleave >= 1 && slice >= 0 && slice < num_shards);
  const int64_t L = seq_len.value();
  const int64_t stripe = num_shards * interleave;
  const int64_t rest = std::clamp<int64_t>(L % stripe - slice * interleave, 0, interleave);
  return TokenCount{L / stripe * interleave + rest};
}

TokenCount LocalSeqLen(const GroupGeometry& geometry, Rank rank, TokenCount seq_len) {
  const SlotLayout layout = SlotLayoutFor(geometry, rank);
  return LocalSeqLen(seq_len, layout.num_shards, rank.value() % layout.num_shards,
                     layout.interleave);
}

void FillLocalSeqLens(std::span<const int32_t> seq_lens, int64_t num_shards, int64_t slice,
                      int64_t interleave, std::span<int32_t> out) {
  KVTOPO_CHECK(out.size() >= seq_lens.size());
  for (size_t i = 0; i < seq_lens.size(); ++i) {
    out[i] = static_cast<int32_t>(
        LocalSeqLen(TokenCount{seq_lens[i]}, num_shards, slice, interleave).value());
  }
  std::fill(out.begin() + seq_lens.size(), out.end(), 0);
}

}  // namespace kvtopo
