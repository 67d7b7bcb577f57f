// RankWorker: one DCP rank's worker side in `kvtopo verify`: its BlockTables (one per group),
// its paged cache (an arena of pages by block id) and its requests' token ids. Each step it
// applies the broadcast row updates, writes the scheduled positions' K/V rows through its slot
// mapping, reads its pages back, and computes partial attention for the decode queries with its
// table, kernel block size and DCP-local lengths.
//
// Arena: block id x holds page_stride_floats floats, allocated on the first write and filled
// with NaN, so a read of a slot nobody wrote poisons the output. Slot s (a kernel block id times
// the kernel block size plus an offset, kvtopo/slot_mapping.h) lies in block s / B at token
// s mod B of the page, B the group's block size; groups share the block ids, so a block given to
// two groups at once overwrites one group's rows with the other's.
//
// Thread safety: none; one worker per rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kvtopo/block_table.h"
#include "verify/setup.h"

namespace kvtopo::internal {

class RankWorker {
 public:
  RankWorker(const VerifySetup& setup, Rank rank);

  // Applies one step and writes this rank's output (layout.size bytes) into `out`.
  void Apply(const StepMessage& message, const RankOutputLayout& layout, std::span<std::byte> out);

  void CheckInvariants() const;

 private:
  void Fail(RankFailure failure);
  void ApplyTables(const StepEntry& entry, std::span<uint64_t> fingerprints);
  void WriteRows(const StepEntry& entry, const VerifyGroup& group, std::span<uint8_t> owned);
  void ReadBack(const StepEntry& entry, const VerifyGroup& group);
  void Attend(const StepEntry& entry, const VerifyGroup& group, std::span<float> out);
  std::span<const int32_t> TableRow(size_t group, int32_t row) const;
  float* Slot(const VerifyGroup& group, int64_t slot, bool create);

  const VerifySetup& setup_;
  Rank rank_;
  std::vector<BlockTable> tables_;
  std::vector<int64_t> page_offset_;  // by block id; -1: never written
  std::vector<float> pages_;
  std::unordered_map<int64_t, RequestTokens> requests_;
  RankFailure failure_;
  // Scratch.
  std::vector<TokenPos> positions_;
  std::vector<int64_t> slots_;
  std::vector<float> row_;
  std::vector<float> query_;
  std::vector<float> nan_row_;
};

}  // namespace kvtopo::internal
