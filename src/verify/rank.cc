#include "verify/rank.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "kvtopo/slot_mapping.h"

namespace kvtopo::internal {
namespace {

uint64_t Fingerprint(std::span<const int32_t> row) {
  uint64_t h = 0xcbf29ce484222325ULL ^ row.size();
  for (int32_t v : row) h = (h ^ static_cast<uint32_t>(v)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

RankWorker::RankWorker(const VerifySetup& setup, Rank rank)
    : setup_(setup),
      rank_(rank),
      page_offset_(setup.num_blocks, -1),
      nan_row_(setup.page_stride_floats, std::numeric_limits<float>::quiet_NaN()) {
  tables_.reserve(setup.groups.size());
  for (const VerifyGroup& g : setup.groups) tables_.emplace_back(g.geometry, setup.num_rows);
}

void RankWorker::Fail(RankFailure failure) {
  if (failure_.check == RankCheck::kNone) failure_ = failure;
}

std::span<const int32_t> RankWorker::TableRow(size_t group, int32_t row) const {
  return tables_[group].Row(row).subspan(0, tables_[group].row_length(row));
}

float* RankWorker::Slot(const VerifyGroup& group, int64_t slot, bool create) {
  const int64_t block_size = group.geometry.block_size();
  const int64_t block = slot / block_size;
  KVTOPO_CHECK(slot >= 0 && block < static_cast<int64_t>(page_offset_.size()));
  int64_t& offset = page_offset_[block];
  if (offset < 0) {
    if (!create) return nullptr;
    const int64_t bytes = (static_cast<int64_t>(pages_.size()) + setup_.page_stride_floats) *
                          static_cast<int64_t>(sizeof(float));
    if (bytes > setup_.max_arena_bytes) {
      Fail({.check = RankCheck::kMemory, .group = group.id, .detail = {bytes, 0, 0}});
      return nullptr;
    }
    offset = static_cast<int64_t>(pages_.size());
    pages_.resize(pages_.size() + setup_.page_stride_floats,
                  std::numeric_limits<float>::quiet_NaN());
  }
  return pages_.data() + offset + (slot % block_size) * group.dims.row_floats();
}

void RankWorker::ApplyTables(const StepEntry& e, std::span<uint64_t> fingerprints) {
  for (size_t g = 0; g < tables_.size(); ++g) {
    BlockTable& table = tables_[g];
    const StepRowUpdate& update = e.updates[g];
    const GroupGeometry& geo = setup_.groups[g].geometry;
    const int64_t k = table.kernel_blocks_per_block();
    const int64_t last_position = e.first_position + e.num_new - 1;
    if (!update.block_ids.empty()) {
      const int64_t last_column =
          update.first_column + static_cast<int64_t>(update.block_ids.size()) - 1;
      // A row an earlier step could not extend cannot take a later suffix.
      const bool fits = update.first_column * k <= table.row_length(e.row) &&
                        table.WriteFrom(e.row, update.first_column, update.block_ids).ok();
      if (!fits) {
        // The first position whose columns the row cannot hold: for a recurrent align row, the
        // first token whose checkpoint column plus the speculative columns pass the width.
        int64_t position = last_position;
        const int64_t width = table.width() / k;
        if (geo.kind() == CacheKind::kRecurrent && geo.recurrent_mode() == RecurrentMode::kAlign) {
          const int64_t checkpoints = width - geo.num_speculative_blocks();
          position = std::clamp(checkpoints * geo.block_size(), e.first_position, last_position);
        }
        Fail({.check = RankCheck::kTable,
              .group = static_cast<int64_t>(g),
              .request = e.request,
              .position = position,
              .detail = {last_column, width, 0}});
      }
    }
    if (geo.kind() == CacheKind::kRecurrent && geo.recurrent_mode() == RecurrentMode::kAlign) {
      // The running state after this step lives in the checkpoint column of its last block.
      const int64_t column =
          geo.ColumnsFor(e.first_position + e.num_new) - geo.num_speculative_blocks() - 1;
      if (column * k >= table.row_length(e.row)) {
        Fail({.check = RankCheck::kTable,
              .group = static_cast<int64_t>(g),
              .request = e.request,
              .position = last_position,
              .detail = {column, table.width() / k, 1}});
      } else if (table.Row(e.row)[column * k] == kNullBlock.value()) {
        Fail({.check = RankCheck::kTable,
              .group = static_cast<int64_t>(g),
              .request = e.request,
              .position = last_position,
              .detail = {column, table.width() / k, 2}});
      }
    }
    fingerprints[g] = Fingerprint(TableRow(g, e.row));
  }
}

void RankWorker::WriteRows(const StepEntry& e, const VerifyGroup& group, std::span<uint8_t> owned) {
  const size_t g = static_cast<size_t>(group.id);
  const Rank writer = setup_.faults.foreign_slot_mapping && rank_.value() == 1 ? Rank(0) : rank_;
  const SlotLayout layout = group.geometry.SlotLayoutFor(writer);
  const std::span<const int32_t> row = TableRow(g, e.row);
  positions_.resize(e.num_new);
  for (int64_t i = 0; i < e.num_new; ++i) positions_[i] = TokenPos(e.first_position + i);
  slots_.resize(e.num_new);
  if (!ComputeSlotMapping(layout, row, positions_, slots_).ok()) {
    // Find the first position the row cannot address.
    int64_t slot = 0;
    for (const TokenPos p : positions_) {
      if (!ComputeSlotMapping(layout, row, std::span(&p, 1), std::span(&slot, 1)).ok()) {
        Fail({.check = RankCheck::kTable,
              .group = group.id,
              .request = e.request,
              .position = p.value(),
              .detail = {-1, static_cast<int64_t>(row.size()), 3}});
        break;
      }
    }
    std::fill(owned.begin(), owned.end(), 0);
    return;
  }
  const int64_t width = group.dims.row_floats();
  row_.resize(width);
  const RequestTokens* tokens = e.table_only ? nullptr : &requests_.at(e.request);
  for (int64_t i = 0; i < e.num_new; ++i) {
    owned[i] = slots_[i] != kPadSlot ? 1 : 0;
    if (!owned[i] || tokens == nullptr) continue;
    FillKvRow(setup_.seed, group.id, tokens->content_hashes[e.first_position + i], row_);
    float* stored = Slot(group, slots_[i], /*create=*/true);
    if (stored == nullptr) {  // past the arena's budget
      if (failure_.request < 0) {
        failure_.request = e.request;
        failure_.position = e.first_position + i;
      }
      return;
    }
    std::memcpy(stored, row_.data(), width * sizeof(float));
  }
}

void RankWorker::ReadBack(const StepEntry& e, const VerifyGroup& group) {
  const size_t g = static_cast<size_t>(group.id);
  const int64_t begin = FirstAttendedPosition(group.geometry, e.first_position);
  const int64_t end = e.first_position + e.num_new;
  positions_.resize(end - begin);
  for (int64_t p = begin; p < end; ++p) positions_[p - begin] = TokenPos(p);
  slots_.resize(positions_.size());
  const SlotLayout layout = group.geometry.SlotLayoutFor(rank_);
  if (!ComputeSlotMapping(layout, TableRow(g, e.row), positions_, slots_).ok()) return;
  const RequestTokens& tokens = requests_.at(e.request);
  const int64_t width = group.dims.row_floats();
  row_.resize(width);
  for (size_t i = 0; i < positions_.size(); ++i) {
    if (slots_[i] == kPadSlot) continue;
    const int64_t p = positions_[i].value();
    FillKvRow(setup_.seed, group.id, tokens.content_hashes[p], row_);
    const float* stored = Slot(group, slots_[i], /*create=*/false);
    if (stored == nullptr || std::memcmp(stored, row_.data(), width * sizeof(float)) != 0) {
      Fail({.check = RankCheck::kReadback,
            .group = group.id,
            .request = e.request,
            .position = p,
            .detail = {slots_[i], 0, 0}});
      return;
    }
  }
}

void RankWorker::Attend(const StepEntry& e, const VerifyGroup& group, std::span<float> out) {
  const size_t g = static_cast<size_t>(group.id);
  const std::span<const int32_t> row = TableRow(g, e.row);
  const int64_t b = group.geometry.kernel_block_size();
  const SlotLayout layout = group.geometry.SlotLayoutFor(rank_);
  const RequestTokens& tokens = requests_.at(e.request);
  const int64_t pf = group.dims.partial_floats();
  PartialAttention attention(group.dims);
  query_.resize(group.dims.query_floats());
  for (int64_t q = 0; q < e.num_queries; ++q) {
    const int64_t position = e.first_position + q;
    const int64_t global_len = group.causal ? position + 1 : e.first_position + e.num_queries;
    // Attention metadata: the rank-local length of this group, from its own global length.
    int64_t local_len = group.geometry.LocalLength(rank_, TokenCount(global_len)).value();
    if (setup_.faults.wrong_draft_local_length && group.role == Role::kDraft) {
      if (layout.num_shards > 1) {
        local_len = global_len;
      } else if (setup_.target_group_for_draft_fault >= 0) {
        const GroupGeometry& target = setup_.groups[setup_.target_group_for_draft_fault].geometry;
        local_len = target.LocalLength(rank_, TokenCount(global_len)).value();
      }
    }
    // Windows bound positions; only unsharded groups have them (the geometry rejects others),
    // where local and global positions coincide.
    const int64_t first = FirstAttendedPosition(group.geometry, position);
    KVTOPO_CHECK(first == 0 || layout.num_shards == 1);
    FillQuery(setup_.seed, group.id, tokens.content_hashes[position], query_);
    attention.Start(query_);
    for (int64_t t = first; t < local_len; ++t) {
      const int64_t column = t / b;
      if (column >= static_cast<int64_t>(row.size())) {
        Fail({.check = RankCheck::kKernelRead,
              .group = group.id,
              .request = e.request,
              .position = position,
              .detail = {t, static_cast<int64_t>(row.size()), local_len}});
        attention.Add(nan_row_.data());
        break;
      }
      const float* stored = Slot(group, static_cast<int64_t>(row[column]) * b + t % b, false);
      attention.Add(stored != nullptr ? stored : nan_row_.data());
    }
    attention.Finish(out.subspan(q * pf, pf));
  }
}

void RankWorker::Apply(const StepMessage& m, const RankOutputLayout& layout,
                       std::span<std::byte> out) {
  KVTOPO_CHECK(out.size() == layout.size);
  failure_ = {};
  std::fill(out.begin(), out.end(), std::byte{0});
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const StepEntry& e = m.entries[i];
    if (e.clear_row) {
      for (BlockTable& t : tables_) t.ClearRow(e.row);
    }
    if (!e.table_only) requests_[e.request].Apply(e);
    auto* fingerprints = reinterpret_cast<uint64_t*>(out.data() + layout.row_fingerprints[i]);
    ApplyTables(e, std::span(fingerprints, tables_.size()));
    size_t owned_offset = layout.ownership[i];
    float* partial = layout.partials[i] == SIZE_MAX
                         ? nullptr
                         : reinterpret_cast<float*>(out.data() + layout.partials[i]);
    for (const VerifyGroup& group : setup_.groups) {
      if (!group.attention) continue;
      auto* owned = reinterpret_cast<uint8_t*>(out.data() + owned_offset);
      WriteRows(e, group, std::span(owned, e.num_new));
      owned_offset += e.num_new;
      if (partial == nullptr) continue;
      ReadBack(e, group);
      const int64_t n = e.num_queries * group.dims.partial_floats();
      Attend(e, group, std::span(partial, n));
      partial += n;
    }
  }
  std::memcpy(out.data() + layout.failure, &failure_, sizeof(RankFailure));
}

void RankWorker::CheckInvariants() const {
  for (const BlockTable& t : tables_) t.CheckInvariants();
  KVTOPO_CHECK(pages_.size() % std::max<int64_t>(1, setup_.page_stride_floats) == 0);
  for (int64_t offset : page_offset_) {
    KVTOPO_CHECK(offset < static_cast<int64_t>(pages_.size()));
  }
}

}  // namespace kvtopo::internal
