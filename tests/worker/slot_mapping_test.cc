#include "kvtopo/slot_mapping.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kvtopo/block_table.h"
#include "runtime/test_groups.h"

namespace kvtopo {
namespace {

using testing::GroupParams;
using testing::MakeGeometry;

// Brute force: the count of p < L with (p / I) mod N == r.
int64_t BruteLocalLen(int64_t L, int64_t N, int64_t r, int64_t I) {
  int64_t count = 0;
  for (int64_t p = 0; p < L; ++p) count += ((p / I) % N == r) ? 1 : 0;
  return count;
}

TEST(LocalLength, MatchesBruteForceOverRandomInputs) {
  std::mt19937_64 rng(11);
  for (int64_t N : {1, 2, 4, 16}) {
    for (int64_t I : {1, 16}) {
      const GroupGeometry g = MakeGeometry({.block_size = 16, .dcp = N, .interleave = I});
      for (int trial = 0; trial < 40; ++trial) {
        const int64_t L = static_cast<int64_t>(rng() % 3000);
        for (int64_t r = 0; r < N; ++r) {
          ASSERT_EQ(g.LocalLength(Rank{static_cast<int32_t>(r)}, TokenCount{L}).value(),
                    BruteLocalLen(L, N, r, I))
              << "L=" << L << " N=" << N << " r=" << r << " I=" << I;
        }
        ASSERT_EQ(g.LargestLocalShard(TokenCount{L}).value(), BruteLocalLen(L, N, 0, I));
      }
    }
  }
  // A partial group (2 slices over 4 ranks): ranks r and r + 2 hold the same slice.
  const GroupGeometry partial = MakeGeometry({.block_size = 16, .dcp = 4, .kv_shards = 2});
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(partial.LocalLength(Rank{static_cast<int32_t>(r)}, TokenCount{37}).value(),
              BruteLocalLen(37, 2, r % 2, 1));
  }
  // Replicated and recurrent groups keep every token on every rank.
  const GroupGeometry replicated = MakeGeometry({.block_size = 16, .dcp = 4, .replicated = true});
  EXPECT_EQ(replicated.LocalLength(Rank{3}, TokenCount{37}).value(), 37);
  const GroupGeometry recurrent =
      MakeGeometry({.kind = CacheKind::kRecurrent, .block_size = 16, .dcp = 4});
  EXPECT_EQ(recurrent.LocalLength(Rank{3}, TokenCount{37}).value(), 37);
}

TEST(LocalLength, BatchFormPadsAndShortSequencesStayOnRankZero) {
  // L = 10, DCP4, I = 16: rank 0 holds all 10 tokens. A draft's metadata asks its own group's
  // geometry with the draft's global lengths.
  const GroupGeometry g = MakeGeometry({.block_size = 16, .dcp = 4, .interleave = 16});
  const std::vector<int32_t> seq_lens = {10, 37};
  std::vector<int32_t> out(4, 99);
  g.LocalLengths(Rank{0}, seq_lens, out);
  EXPECT_EQ(out, (std::vector<int32_t>{10, 16, 0, 0}));
  g.LocalLengths(Rank{2}, seq_lens, out);
  EXPECT_EQ(out, (std::vector<int32_t>{0, 5, 0, 0}));
  g.LocalLengths(Rank{1}, seq_lens, out);
  EXPECT_EQ(out, (std::vector<int32_t>{0, 16, 0, 0}));
}

// For every rank, positions it holds form a dense local stream: the k-th held position sits at
// local index k, i.e. slot row[k / b] * b + k % b. Checked against enumeration.
void CheckCoverage(const GroupGeometry& g, int64_t num_ranks, int64_t seq_len,
                   const std::vector<int32_t>& row) {
  std::vector<TokenPos> positions;
  for (int64_t p = 0; p < seq_len; ++p) positions.emplace_back(p);
  std::vector<int64_t> holders(seq_len, 0);
  const int64_t b = g.kernel_block_size();
  for (int64_t r = 0; r < num_ranks; ++r) {
    const SlotLayout layout = g.SlotLayoutFor(Rank{static_cast<int32_t>(r)});
    std::vector<int64_t> slots(seq_len + 5);
    ASSERT_TRUE(ComputeSlotMapping(layout, row, positions, slots).ok());
    for (int64_t i = seq_len; i < seq_len + 5; ++i) ASSERT_EQ(slots[i], kPadSlot);
    int64_t local = 0;
    for (int64_t p = 0; p < seq_len; ++p) {
      if (slots[p] == kPadSlot) continue;
      ++holders[p];
      ASSERT_EQ(slots[p], static_cast<int64_t>(row[local / b]) * b + local % b) << "p=" << p;
      ++local;
    }
    ASSERT_EQ(local, g.LocalLength(Rank{static_cast<int32_t>(r)}, TokenCount{seq_len}).value());
  }
  const int64_t expected_holders = num_ranks / (g.interleaved_slots() ? g.dcp_shard_count() : 1);
  for (int64_t p = 0; p < seq_len; ++p) ASSERT_EQ(holders[p], expected_holders) << "p=" << p;
}

TEST(SlotMapping, EachShardedPositionOnExactlyOneRankReplicatedOnEvery) {
  std::mt19937_64 rng(5);
  for (int64_t N : {1, 2, 4, 16}) {
    for (int64_t I : {1, 16}) {
      for (int64_t kernel : {0, 16}) {
        const GroupParams base{
            .block_size = 32, .dcp = N, .interleave = I, .kernel_block_size = kernel};
        std::vector<GroupGeometry> groups = {MakeGeometry(base)};
        GroupParams replicated = base;
        replicated.replicated = true;
        groups.push_back(MakeGeometry(replicated));
        if (N >= 4) {
          GroupParams partial = base;
          partial.kv_shards = N / 2;
          groups.push_back(MakeGeometry(partial));
        }
        GroupParams recurrent{.kind = CacheKind::kRecurrent,
                              .block_size = 32,
                              .dcp = N,
                              .interleave = I,
                              .spec_blocks = 2};
        groups.push_back(MakeGeometry(recurrent));
        for (const GroupGeometry& g : groups) {
          const int64_t seq_len = 1 + static_cast<int64_t>(rng() % 700);
          const int64_t k = g.block_size() / g.kernel_block_size();
          BlockTable table(g, 1);
          std::vector<BlockId> blocks;
          const int64_t columns = (seq_len + g.manager_block_size() - 1) / g.manager_block_size();
          for (int64_t j = 0; j < columns; ++j)
            blocks.emplace_back(static_cast<int32_t>(3 + 2 * j));
          ASSERT_TRUE(table.Append(0, blocks).ok());
          std::vector<int32_t> row(table.Row(0).begin(),
                                   table.Row(0).begin() + table.row_length(0));
          ASSERT_EQ(static_cast<int64_t>(row.size()), columns * k);
          CheckCoverage(g, N, seq_len, row);
        }
      }
    }
  }
}

// Layouts built directly, power-of-two (shift path) and not (divide path), against the brute
// force: the rank holding p stores it at its local index (positions before p it holds).
TEST(SlotMapping, ShiftAndDividePathsMatchTheLocalIndexOracle) {
  std::mt19937_64 rng(11);
  const int64_t layouts[][3] = {{1, 1, 16}, {4, 1, 16}, {16, 16, 64}, {2, 8, 32},
                                {3, 2, 6},  {4, 3, 12}, {1, 1, 24},   {5, 1, 5}};
  for (const auto& [n, I, b] : layouts) {
    std::vector<int32_t> row(64);
    for (auto& id : row) id = static_cast<int32_t>(1 + rng() % 1000);
    const int64_t seq_len = static_cast<int64_t>(row.size()) * b * n;
    std::vector<TokenPos> positions;
    for (int64_t p = 0; p < seq_len; ++p) positions.emplace_back(p);
    for (int64_t r = 0; r < n; ++r) {
      const SlotLayout layout{.num_shards = n,
                              .interleave = I,
                              .kernel_block_size = b,
                              .rank = Rank{static_cast<int32_t>(r)}};
      std::vector<int64_t> slots(positions.size());
      ASSERT_TRUE(ComputeSlotMapping(layout, row, positions, slots).ok());
      int64_t local = 0;
      for (int64_t p = 0; p < seq_len; ++p) {
        const bool held = (p / I) % n == r;
        if (!held) {
          ASSERT_EQ(slots[p], kPadSlot);
          continue;
        }
        ASSERT_EQ(slots[p], static_cast<int64_t>(row[local / b]) * b + local % b)
            << "n=" << n << " I=" << I << " b=" << b << " p=" << p;
        ++local;
      }
      // Runs with gaps, repeats and backward jumps give the same slots as the full sweep.
      std::vector<TokenPos> mixed;
      std::vector<int64_t> expected;
      for (int k = 0; k < 300; ++k) {
        const int64_t start = static_cast<int64_t>(rng() % seq_len);
        const int64_t len = 1 + static_cast<int64_t>(rng() % (2 * b * n));
        for (int64_t p = start; p < std::min(seq_len, start + len); ++p) {
          mixed.emplace_back(p);
          expected.push_back(slots[p]);
        }
      }
      std::vector<int64_t> mixed_slots(mixed.size());
      ASSERT_TRUE(ComputeSlotMapping(layout, row, mixed, mixed_slots).ok());
      ASSERT_EQ(mixed_slots, expected) << "n=" << n << " I=" << I << " b=" << b;
      const std::vector<TokenPos> past = {TokenPos{seq_len}};
      EXPECT_FALSE(ComputeSlotMapping(layout, row, past, slots).ok());
    }
  }
}

TEST(SlotMapping, WorkedExampleDcp4Interleave1) {
  const GroupGeometry g = MakeGeometry({.block_size = 16, .dcp = 4});
  const std::vector<int32_t> row = {7};
  const std::vector<TokenPos> positions = {TokenPos{0}, TokenPos{5}, TokenPos{36}};
  std::vector<int64_t> out(3);
  ASSERT_TRUE(ComputeSlotMapping(g.SlotLayoutFor(Rank{1}), row, positions, out).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{-1, 7 * 16 + 1, -1}));
  const std::vector<TokenPos> too_far = {TokenPos{64}};
  EXPECT_FALSE(ComputeSlotMapping(g.SlotLayoutFor(Rank{0}), row, too_far, out).ok());
}

// A compressed cache keeps one row per c positions (the engine's get_compressed_slot_mapping);
// the engine's regression test: 256-token blocks compressed 4 times (64 rows a block), 40
// tokens after 240 computed, compressed rows 60..69 across the boundary of blocks 5 and 7.
TEST(SlotMapping, CompressedCachesWriteOneRowPerRatioPositions) {
  const GroupGeometry g = MakeGeometry({.block_size = 256, .max_model_len = 1024});
  SlotLayout layout = g.SlotLayoutFor(Rank{0});
  layout.compress_ratio = 4;
  const std::vector<int32_t> row = {5, 7};
  std::vector<TokenPos> positions;
  for (int64_t p = 240; p < 280; ++p) positions.emplace_back(p);
  std::vector<int64_t> out(42, 99);
  ASSERT_TRUE(ComputeSlotMapping(layout, row, positions, out).ok());
  std::vector<int64_t> want(42, kPadSlot);
  const std::vector<int64_t> rows = {5 * 64 + 60, 5 * 64 + 61, 5 * 64 + 62, 5 * 64 + 63,
                                     7 * 64,      7 * 64 + 1,  7 * 64 + 2,  7 * 64 + 3,
                                     7 * 64 + 4,  7 * 64 + 5};
  for (size_t k = 0; k < rows.size(); ++k) want[4 * k + 3] = rows[k];  // p = 243, 247, ...
  EXPECT_EQ(out, want);

  // Compressed 128 times: two rows a block; position 511 needs row 3, the second column's.
  layout.compress_ratio = 128;
  const std::vector<TokenPos> ends = {TokenPos{127}, TokenPos{255}, TokenPos{300}, TokenPos{511}};
  out.assign(4, 99);
  ASSERT_TRUE(ComputeSlotMapping(layout, row, ends, out).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{5 * 2, 5 * 2 + 1, -1, 7 * 2 + 1}));
  const std::vector<TokenPos> past = {TokenPos{639}};
  EXPECT_EQ(ComputeSlotMapping(layout, row, past, out).ToString(),
            "out of range: position 639 needs block-table column 2 but the row has only 2 block "
            "ids");
  layout.compress_ratio = 4;
  const std::vector<TokenPos> last = {TokenPos{std::numeric_limits<int64_t>::max()}};
  EXPECT_EQ(ComputeSlotMapping(layout, row, last, out).ToString(),
            "out of range: position 9223372036854775807 needs block-table column "
            "36028797018963967 but the row has only 2 block ids");
  layout.compress_ratio = 3;
  EXPECT_EQ(ComputeSlotMapping(layout, row, ends, out).ToString(),
            "invalid argument: compress_ratio 3 does not divide the kernel block of 256 tokens");
  layout.compress_ratio = 0;
  EXPECT_EQ(ComputeSlotMapping(layout, row, ends, out).ToString(),
            "invalid argument: compress_ratio must be at least 1, got 0");
  SlotLayout sharded = MakeGeometry({.block_size = 256, .dcp = 2}).SlotLayoutFor(Rank{1});
  sharded.compress_ratio = 4;
  EXPECT_EQ(ComputeSlotMapping(sharded, row, ends, out).ToString(),
            "invalid argument: compress_ratio 4 on a layout of 2 DCP shards: compressed caches "
            "run without DCP");
  // The engine's mapping counts B / c rows per kernel block id: with 64-token kernels in
  // 256-token blocks it would give kernel id 20's row 3 slot 1280 + 3, not 20 x 16 + 3.
  SlotLayout split =
      MakeGeometry({.block_size = 256, .kernel_block_size = 64}).SlotLayoutFor(Rank{0});
  split.compress_ratio = 4;
  EXPECT_EQ(ComputeSlotMapping(split, row, ends, out).ToString(),
            "invalid argument: compress_ratio 4 with kernel blocks of 64 tokens in blocks of 256: "
            "the engine maps compressed caches only where the kernel block is the block");
}

TEST(BlockTable, ExpandsKernelBlocksAndRefusesWritesPastTheRow) {
  // B = 64, kernel 16: manager block m -> kernel blocks 4m .. 4m+3; width from the geometry.
  const GroupGeometry g =
      MakeGeometry({.block_size = 64, .max_model_len = 128, .kernel_block_size = 16});
  BlockTable table(g, 2);
  EXPECT_EQ(table.width(), g.block_table_width());
  EXPECT_EQ(table.width(), 8);  // cdiv(128, 64) = 2 manager columns x 4
  const std::vector<BlockId> first = {BlockId{5}};
  ASSERT_TRUE(table.Append(1, first).ok());
  EXPECT_EQ(std::vector<int32_t>(table.Row(1).begin(), table.Row(1).begin() + 4),
            (std::vector<int32_t>{20, 21, 22, 23}));
  const std::vector<BlockId> two = {BlockId{6}, BlockId{7}};
  Status overflow = table.Append(1, two);
  EXPECT_EQ(overflow.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(table.row_length(1), 4);  // nothing written
  EXPECT_EQ(table.Row(0)[0], 0);      // the neighbouring row is untouched
  table.CheckInvariants();
  ASSERT_TRUE(table.WriteFrom(1, 0, two).ok());
  EXPECT_EQ(table.Row(1)[4], 28);
  table.ClearRow(1);
  table.CheckInvariants();
}

// Row `r` of `table`, copied.
std::vector<int32_t> RowOf(const BlockTable& table, int32_t r) {
  return std::vector<int32_t>(table.Row(r).begin(), table.Row(r).end());
}

// add_row replaces a row (a new request taking it): a shorter row leaves no stale tail, a row
// too long for the width is refused with the old row kept; clear empties every row.
TEST(BlockTable, AddRowReplacesTheRowAndClearEmptiesTheTable) {
  const GroupGeometry g =
      MakeGeometry({.block_size = 64, .max_model_len = 128, .kernel_block_size = 16});
  BlockTable table(g, 2);
  const auto row = [&](int32_t r) { return RowOf(table, r); };
  const std::vector<BlockId> six_seven = {BlockId{6}, BlockId{7}};
  const std::vector<BlockId> five = {BlockId{5}};
  ASSERT_TRUE(table.AddRow(0, six_seven).ok());
  ASSERT_TRUE(table.AddRow(0, five).ok());
  EXPECT_EQ(row(0), (std::vector<int32_t>{20, 21, 22, 23, 0, 0, 0, 0}));
  EXPECT_EQ(table.row_length(0), 4);
  const std::vector<BlockId> three = {BlockId{1}, BlockId{2}, BlockId{3}};
  EXPECT_EQ(table.AddRow(0, three).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(row(0), (std::vector<int32_t>{20, 21, 22, 23, 0, 0, 0, 0}));  // kept
  ASSERT_TRUE(table.AddRow(1, six_seven).ok());
  table.Clear();
  EXPECT_EQ(row(0), std::vector<int32_t>(8, 0));
  EXPECT_EQ(row(1), std::vector<int32_t>(8, 0));
  EXPECT_EQ((std::pair{table.row_length(0), table.row_length(1)}),
            (std::pair<int64_t, int64_t>{0, 0}));
  table.CheckInvariants();
}

TEST(BlockTable, MovedAndSwappedRowsKeepTheirLengthsAndZeroTails) {
  const GroupGeometry g =
      MakeGeometry({.block_size = 64, .max_model_len = 128, .kernel_block_size = 16});
  BlockTable table(g, 3);
  const auto row = [&](int32_t r) { return RowOf(table, r); };
  const std::vector<BlockId> five = {BlockId{5}};
  const std::vector<BlockId> six_seven = {BlockId{6}, BlockId{7}};
  ASSERT_TRUE(table.Append(0, five).ok());
  ASSERT_TRUE(table.Append(1, six_seven).ok());
  table.MoveRow(0, 1);  // a shorter row over a longer one: the rest of row 1 is cleared
  EXPECT_EQ(row(1), (std::vector<int32_t>{20, 21, 22, 23, 0, 0, 0, 0}));
  EXPECT_EQ(table.row_length(1), 4);
  EXPECT_EQ(row(0), row(1));  // the source keeps its row
  table.CheckInvariants();
  table.SwapRow(1, 2);
  EXPECT_EQ(row(2), (std::vector<int32_t>{20, 21, 22, 23, 0, 0, 0, 0}));
  EXPECT_EQ(row(1), std::vector<int32_t>(8, 0));
  EXPECT_EQ((std::pair{table.row_length(1), table.row_length(2)}),
            (std::pair<int64_t, int64_t>{0, 4}));
  const std::vector<BlockId> one = {BlockId{1}};
  ASSERT_TRUE(table.Append(0, one).ok());
  table.SwapRow(2, 0);  // lengths 4 and 8
  EXPECT_EQ(row(2), (std::vector<int32_t>{20, 21, 22, 23, 4, 5, 6, 7}));
  EXPECT_EQ(row(0), (std::vector<int32_t>{20, 21, 22, 23, 0, 0, 0, 0}));
  EXPECT_EQ((std::pair{table.row_length(0), table.row_length(2)}),
            (std::pair<int64_t, int64_t>{4, 8}));
  table.MoveRow(1, 2);  // an empty row moved over a full one
  EXPECT_EQ(row(2), std::vector<int32_t>(8, 0));
  EXPECT_EQ(table.row_length(2), 0);
  table.MoveRow(0, 0);
  table.SwapRow(0, 0);
  EXPECT_EQ(row(0), (std::vector<int32_t>{20, 21, 22, 23, 0, 0, 0, 0}));
  table.CheckInvariants();
}

// The batch form: request i's tokens on row i, one call for the step; the same slots as a call
// per row, -1 past the last request's tokens; offsets and short rows refused by request.
// A draft step's positions at or past max_model_len are padding and need no block id (the
// engine's EAGLE proposer writes PADDING_SLOT_ID there), on the shift path (16-token blocks),
// the divide path (24-token blocks, consecutive positions stepped) and compressed caches.
TEST(SlotMapping, DraftPositionsPastTheLengthArePadding) {
  const GroupGeometry g = MakeGeometry({.block_size = 16, .dcp = 2, .max_model_len = 40});
  const std::vector<int32_t> row = {7, 9};  // cdiv(40, 32) columns
  const std::vector<TokenPos> drafts = {TokenPos{38}, TokenPos{39}, TokenPos{40}, TokenPos{41},
                                        TokenPos{70}};
  std::vector<int64_t> out(5, 99);
  SlotLayout layout = g.SlotLayoutFor(Rank{0});
  EXPECT_EQ(ComputeSlotMapping(layout, row, drafts, out).ToString(),
            "out of range: position 70 needs block-table column 2 but the row has only 2 block "
            "ids");
  layout.pad_from = 40;
  ASSERT_TRUE(ComputeSlotMapping(layout, row, drafts, out).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{9 * 16 + 3, -1, -1, -1, -1}));
  layout = g.SlotLayoutFor(Rank{1});
  layout.pad_from = 40;
  ASSERT_TRUE(ComputeSlotMapping(layout, row, drafts, out).ok());
  EXPECT_EQ(out, (std::vector<int64_t>{-1, 9 * 16 + 3, -1, -1, -1}));

  std::mt19937_64 rng(11);
  for (const int64_t block : {16, 24}) {
    for (const int64_t ratio : {1, 4}) {
      const GroupGeometry geo =
          MakeGeometry({.block_size = block, .dcp = ratio == 1 ? 2 : 1, .max_model_len = 200});
      const std::vector<int32_t> ids = {3, 8, 5, 1, 6, 2, 4, 9, 11, 12, 13, 14, 15};
      const int64_t limit = 150;
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<TokenPos> at;
        int64_t p = static_cast<int64_t>(rng() % 160);
        for (int k = 0; k < 12; ++k) {  // runs of consecutive positions, then a jump
          at.emplace_back(p);
          p = rng() % 4 == 0 ? static_cast<int64_t>(rng() % 160) : p + 1;
        }
        for (int32_t rank = 0; rank < geo.dcp_size(); ++rank) {
          SlotLayout plain = geo.SlotLayoutFor(Rank{rank});
          plain.compress_ratio = ratio;
          SlotLayout padded = plain;
          padded.pad_from = limit;
          std::vector<int64_t> got(at.size());
          ASSERT_TRUE(ComputeSlotMapping(padded, ids, at, got).ok());
          for (size_t k = 0; k < at.size(); ++k) {
            std::vector<int64_t> one(1);
            if (at[k].value() < limit) {
              ASSERT_TRUE(ComputeSlotMapping(plain, ids, std::span(at).subspan(k, 1), one).ok());
            } else {
              one[0] = kPadSlot;
            }
            ASSERT_EQ(got[k], one[0]) << "block " << block << " ratio " << ratio << " position "
                                      << at[k].value() << " rank " << rank;
          }
        }
      }
    }
  }
}

TEST(SlotMapping, BatchFormIsTheRowsOneAfterAnother) {
  const GroupGeometry g = MakeGeometry({.block_size = 16, .dcp = 4, .max_model_len = 128});
  BlockTable table(g, 3);
  const std::vector<BlockId> r0 = {BlockId{7}}, r1 = {BlockId{2}, BlockId{3}};
  ASSERT_TRUE(table.Append(0, r0).ok());
  ASSERT_TRUE(table.Append(1, r1).ok());
  const std::vector<TokenPos> positions = {TokenPos{0}, TokenPos{5}, TokenPos{36}, TokenPos{17}};
  const std::vector<int64_t> starts = {0, 2, 4};
  std::vector<int64_t> out(6, 99);
  ASSERT_TRUE(
      ComputeBatchSlotMapping(g.SlotLayoutFor(Rank{1}), table, starts, positions, out).ok());
  // Rank 1 holds p = 5 (7 * 16 + 1) and p = 17 (column 0 of row 1: 2 * 16 + 4).
  EXPECT_EQ(out, (std::vector<int64_t>{-1, 113, -1, 36, -1, -1}));

  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<int64_t> qsl = {0};
    std::vector<TokenPos> batch;
    for (int32_t row = 0; row < 2; ++row) {
      const int64_t n = static_cast<int64_t>(rng() % 5);
      const int64_t limit = row == 0 ? 64 : 128;  // the row's block ids cover this many
      for (int64_t t = 0; t < n; ++t) batch.emplace_back(static_cast<int64_t>(rng() % limit));
      qsl.push_back(static_cast<int64_t>(batch.size()));
    }
    for (int32_t rank = 0; rank < 4; ++rank) {
      const SlotLayout layout = g.SlotLayoutFor(Rank{rank});
      std::vector<int64_t> got(batch.size() + 3), want(batch.size() + 3, kPadSlot);
      ASSERT_TRUE(ComputeBatchSlotMapping(layout, table, qsl, batch, got).ok());
      for (int32_t row = 0; row < 2; ++row) {
        const auto begin = static_cast<size_t>(qsl[row]);
        const auto count = static_cast<size_t>(qsl[row + 1] - qsl[row]);
        ASSERT_TRUE(ComputeSlotMapping(layout, table.Row(row).first(table.row_length(row)),
                                       std::span(batch).subspan(begin, count),
                                       std::span(want).subspan(begin, count))
                        .ok());
      }
      ASSERT_EQ(got, want) << "trial " << trial << " rank " << rank;
    }
  }

  const SlotLayout layout = g.SlotLayoutFor(Rank{0});
  auto error = [&](std::vector<int64_t> qsl, std::vector<TokenPos> at) {
    std::vector<int64_t> slots(at.size());
    return ComputeBatchSlotMapping(layout, table, qsl, at, slots).ToString();
  };
  EXPECT_EQ(error({}, {}),
            "invalid argument: query_start_loc is empty; it holds num_reqs + 1 offsets");
  EXPECT_EQ(error({0, 1, 1, 1, 1}, {TokenPos{0}}),
            "invalid argument: query_start_loc holds 4 requests but the table has 3 rows");
  EXPECT_EQ(error({0, 2, 1}, positions),
            "invalid argument: query_start_loc[2] is 1; offsets must not decrease and must lie in "
            "[0, 4] (the positions given)");
  EXPECT_EQ(error({0, 5}, positions),
            "invalid argument: query_start_loc[1] is 5; offsets must not decrease and must lie in "
            "[0, 4] (the positions given)");
  EXPECT_EQ(error({0, 1, 2}, {TokenPos{3}, TokenPos{128}}),
            "out of range: request 1 (row 1): position 128 needs block-table column 2 but the row "
            "has only 2 block ids");
}

}  // namespace
}  // namespace kvtopo
