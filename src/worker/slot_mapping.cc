#include "kvtopo/slot_mapping.h"

#include <fmt/format.h>

#include <algorithm>

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
  for (size_t i = 0; i < positions.size(); ++i) {
    const int64_t p = positions[i].value();
    KVTOPO_CHECK(p >= 0);
    const int64_t j = p / virtual_block;
    if (j >= columns) {
      return OutOfRange(
          fmt::format("position {} needs block-table column {} but the row has only {} block ids",
                      p, j, columns));
    }
    if ((p / I) % n != slice) {
      out[i] = kPadSlot;
      continue;
    }
    const int64_t o = p % virtual_block;
    out[i] = static_cast<int64_t>(kernel_row[j]) * b + (o / stripe) * I + o % I;
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
