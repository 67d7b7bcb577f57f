// runtime: a group mix (full / MLA / sliding window / chunked local / recurrent none, all,
// align; replicated and partial placements), DCP 1, 4 or 16, and an operation sequence read from
// the input, run the way an engine runs the manager: add, get_computed_blocks + allocate_slots
// (chunked prefill, lookahead, full_sequence_must_fit), decode steps with drafts accepted or
// rejected, free, preempt, new step, prefix-cache reset, and the batched API (AdmitBatch,
// AllocateSlotsBatch, AppendTokensBatch, FreeBatch).
//
// After every operation: KVCacheManager::CheckInvariants; every live request's worker block-table
// row (written only from LastUpdate or the batch results, as a worker does) equals the manager's
// row expanded to kernel blocks by an oracle; and the slots of the positions just scheduled, on
// every rank, equal per-rank ownership by enumeration (walk the positions, hand each run of I
// tokens to the next of the n slices, count each slice's positions densely), with every
// position held by exactly N / n ranks.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fuzz_targets.h"
#include "kvtopo/block_table.h"
#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/slot_mapping.h"

namespace kvtopo::fuzz {
namespace {

// Reads the input front to back; past its end every read is 0.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // A value in [lo, hi] (hi - lo < 65536).
  int64_t Range(int64_t lo, int64_t hi) {
    const uint32_t v = static_cast<uint32_t>(Byte()) << 8 | Byte();
    return lo + static_cast<int64_t>(v % static_cast<uint32_t>(hi - lo + 1));
  }
  bool Bool() { return (Byte() & 1) != 0; }
  template <typename T, size_t N>
  T Pick(const T (&choices)[N]) {
    return choices[Byte() % N];
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

std::string Fail(const std::string& what) { return "runtime fuzz oracle: " + what; }

// The driver only makes legal calls: a refused one is a bug in the manager.
void Must(const Status& status, const char* call) {
  KVTOPO_CHECK_MSG(status.ok(),
                   Fail(std::string(call) + " refused a legal call: " + status.ToString()));
}
template <typename T>
T Must(Result<T> result, const char* call) {
  Must(result.status(), call);
  return *std::move(result);
}

CacheLayoutGroup Group(CacheKind kind, int64_t block_size) {
  return CacheLayoutGroup{.kind = kind, .block_size = block_size, .page_size_bytes = 4096};
}

// The group mix `mix` with block B, DCP `dcp`, S speculative blocks, window W and chunk C.
std::vector<CacheLayoutGroup> Mix(int mix, int64_t B, int64_t dcp, int64_t S, int64_t W, int64_t C,
                                  Input& in) {
  auto recurrent = [&](RecurrentMode mode) {
    CacheLayoutGroup g = Group(CacheKind::kRecurrent, B);
    g.mamba_cache_mode = mode;
    g.num_speculative_blocks = S;
    return g;
  };
  auto windowed = [&](CacheKind kind) {
    CacheLayoutGroup g = Group(kind, B);
    g.sliding_window = kind == CacheKind::kChunkedLocal ? 0 : W;
    g.attention_chunk_size = kind == CacheKind::kChunkedLocal ? C : 0;
    g.replicated = dcp > 1;  // windowed caches are replicated under DCP
    return g;
  };
  std::vector<CacheLayoutGroup> groups;
  switch (mix) {
    case 0:
      groups = {Group(CacheKind::kMla, B)};
      break;
    case 1:
      groups = {Group(CacheKind::kFullAttention, B), windowed(CacheKind::kSlidingWindow)};
      break;
    case 2:
      groups = {Group(CacheKind::kMla, B), recurrent(RecurrentMode::kAlign)};
      break;
    case 3:
      groups = {Group(CacheKind::kFullAttention, B), recurrent(RecurrentMode::kNone)};
      break;
    case 4: {
      // Chunked local attention beside groups of its own block only (the engine's chunked
      // manager refuses others at its first lookup): the full group is replicated under DCP too.
      CacheLayoutGroup full = Group(CacheKind::kFullAttention, B);
      full.replicated = dcp > 1;
      groups = {full, windowed(CacheKind::kChunkedLocal)};
      break;
    }
    case 5:
      groups = {Group(CacheKind::kMla, B), recurrent(RecurrentMode::kAll)};
      break;
    case 6:
      groups = {Group(CacheKind::kMla, B), windowed(CacheKind::kSlidingWindowMla),
                recurrent(RecurrentMode::kAlign)};
      break;
    case 7:
      groups = {windowed(CacheKind::kSlidingWindow)};
      break;
    case 8: {
      CacheLayoutGroup partial = Group(CacheKind::kMla, B);
      partial.kv_shard_count = dcp > 1 ? dcp / 2 : 0;  // a partial placement under DCP
      groups = {Group(CacheKind::kFullAttention, B), partial};
      break;
    }
    case 9: {
      CacheLayoutGroup replicated = Group(CacheKind::kFullAttention, B);
      replicated.replicated = true;
      groups = {Group(CacheKind::kMla, B), replicated, recurrent(RecurrentMode::kAll)};
      break;
    }
    default: {
      // An encoder-decoder model: decoder self-attention and cross-attention (no prefix caching,
      // no DCP: FuzzRuntime sets both).
      CacheLayoutGroup cross = Group(CacheKind::kFullAttention, B);
      cross.cross_attention = true;
      groups = {Group(CacheKind::kFullAttention, B), cross};
      break;
    }
  }
  for (CacheLayoutGroup& g : groups) {
    if (g.kind != CacheKind::kRecurrent) {
      // Chunked local attention never runs under EAGLE (the engine's manager refuses it).
      g.volatile_last_block = in.Bool() && g.kind != CacheKind::kChunkedLocal;
      if (in.Bool()) g.kernel_block_size = B / 2;  // kernel pages smaller than the manager's
    }
  }
  return groups;
}

struct Request {
  int32_t row = 0;
  bool running = false;
};

class Harness {
 public:
  Harness(KVCacheManager& m, int32_t num_rows) : m_(m) {
    for (int32_t g = 0; g < m.num_groups(); ++g) {
      tables_.emplace_back(m.group(GroupId{g}).geometry, num_rows);
    }
    for (int32_t r = num_rows - 1; r >= 0; --r) free_rows_.push_back(r);
  }

  void Run(Input& in) {
    for (int op = 0; op < 256 && !in.done(); ++op) {
      checked_request_ = -1;
      switch (in.Byte() % 12) {
        case 0:
        case 1:
          Add(in);
          break;
        case 2:
          Admit(in);
          break;
        case 3:
        case 4:
        case 5:
          Step(in);
          break;
        case 6:
          if (auto id = PickLive(in, false)) Release(*id, /*free=*/true);
          break;
        case 7:
          if (auto id = PickLive(in, true)) Release(*id, /*free=*/false);
          break;
        case 8:
          m_.NewStep();
          if (const uint8_t b = in.Byte() % 16; b == 0) {
            (void)m_.ResetPrefixCache();
          } else if (b == 1) {
            Overreach(in);
          }
          break;
        case 9:
          AdmitBatch(in);
          break;
        case 10:
          DecodeBatch(in);
          break;
        default:
          FreeBatch(in);
          break;
      }
      Check();
    }
    std::vector<int64_t> ids;
    for (const auto& [id, r] : live_) ids.push_back(id);
    for (int64_t id : ids) Release(id, /*free=*/true);
    m_.CheckInvariants();
    KVTOPO_CHECK_MSG(m_.num_free_blocks() == free_at_start_, Fail("blocks leaked after Free"));
  }

  void set_free_at_start(int32_t n) { free_at_start_ = n; }

 private:
  int64_t L() const { return m_.max_model_len(); }

  std::optional<int64_t> PickLive(Input& in, bool running_only) {
    std::vector<int64_t> ids;
    for (const auto& [id, r] : live_) {
      if (!running_only || r.running) ids.push_back(id);
    }
    if (ids.empty()) return std::nullopt;
    return ids[in.Byte() % ids.size()];
  }
  std::optional<int64_t> PickWaiting(Input& in) {
    std::vector<int64_t> ids;
    for (const auto& [id, r] : live_) {
      if (!r.running) ids.push_back(id);
    }
    if (ids.empty()) return std::nullopt;
    return ids[in.Byte() % ids.size()];
  }

  // A prompt that shares a prefix with earlier ones (one of three), then its own tokens.
  void Add(Input& in) {
    if (free_rows_.empty()) return;
    const int64_t len = in.Range(1, L());
    const int64_t prefix = in.Byte() % 3;
    const int64_t shared = std::min(len, in.Range(0, L()));
    std::vector<int32_t> prompt(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) {
      prompt[i] = i < shared ? static_cast<int32_t>((prefix * 7919 + i * 31) % 50000)
                             : static_cast<int32_t>(next_token_++ % 1000000);
    }
    // One in four is given as embeddings over its first rows (two bytes each, few values, so
    // equal rows recur and hit).
    RequestOptions options;
    std::vector<std::byte> embeds;
    if (in.Byte() % 4 == 0) {
      options.prompt_embeds_rows = in.Range(0, len);
      for (int64_t i = 0; i < 2 * options.prompt_embeds_rows; ++i) {
        embeds.push_back(std::byte(in.Byte() % 3));
      }
      options.prompt_embeds = embeds;
    }
    const int64_t id = next_id_++;
    Must(m_.AddRequest(RequestId{id}, prompt, std::move(options)), "AddRequest");
    live_[id] = Request{.row = free_rows_.back(), .running = false};
    free_rows_.pop_back();
  }

  // get_computed_blocks, then the first prefill chunk (or the whole rest) past the hits.
  void Admit(Input& in) {
    const auto id = PickWaiting(in);
    if (!id) return;
    const RequestId rid{*id};
    ComputedBlocks hits;
    const TokenCount hit = Must(m_.GetComputedBlocks(rid, hits), "GetComputedBlocks");
    const Status valid = m_.ValidateComputedBlocks(rid, hits);
    KVTOPO_CHECK_MSG(valid.ok(), Fail("fresh hits are not valid: " + valid.ToString()));
    const int64_t rest = m_.num_tokens(rid).value() - hit.value();
    KVTOPO_CHECK_MSG(rest >= 1, Fail("a hit covers the whole prompt"));
    const int64_t chunk = in.Bool() ? rest : in.Range(1, rest);
    const int64_t lookahead = chunk == rest ? in.Range(0, 4) : 0;
    const int64_t before = hit.value();
    // Encoder tokens (cross-attention groups only use them), within the layout's 2,048.
    const int64_t encoder = in.Range(0, 2048);
    if (Must(m_.AllocateSlots(rid, {.num_new_tokens = TokenCount{chunk},
                                    .num_new_computed_tokens = hit,
                                    .computed = &hits,
                                    .num_lookahead_tokens = TokenCount{lookahead},
                                    .full_sequence_must_fit = in.Bool(),
                                    .num_encoder_tokens = TokenCount{encoder}}),
             "AllocateSlots")) {
      live_[*id].running = true;
      MirrorLastUpdate(*id);
      Scheduled(*id, before, before + chunk + lookahead);
    }
  }

  // A running request's next step: the next prefill chunk, or a decode step of one token and d
  // drafts of which `a` are accepted (rejected ones rewound).
  void Step(Input& in) {
    const auto id = PickLive(in, true);
    if (!id) return;
    const RequestId rid{*id};
    const int64_t computed = m_.num_computed_tokens(rid).value();
    const int64_t pending = m_.num_tokens(rid).value() - computed;
    if (pending > 0) {
      const int64_t chunk = in.Bool() ? pending : in.Range(1, pending);
      const int64_t lookahead = chunk == pending ? in.Range(0, 4) : 0;
      if (Must(m_.AllocateSlots(rid, {.num_new_tokens = TokenCount{chunk},
                                      .num_lookahead_tokens = TokenCount{lookahead}}),
               "AllocateSlots")) {
        MirrorLastUpdate(*id);
        Scheduled(*id, computed, computed + chunk + lookahead);
      }
      return;
    }
    const int64_t drafts = in.Range(0, 3);
    if (computed + 1 + drafts > L()) return;
    Must(m_.AppendTokens(rid, std::vector<int32_t>{static_cast<int32_t>(next_token_++ % 1000000)}),
         "AppendTokens");
    if (!Must(m_.AllocateSlots(rid, {.num_new_tokens = TokenCount{1 + drafts},
                                     .num_lookahead_tokens = TokenCount{drafts}}),
              "AllocateSlots")) {
      return;
    }
    MirrorLastUpdate(*id);
    Scheduled(*id, computed, computed + 1 + 2 * drafts);
    const int64_t accepted = in.Range(0, drafts);
    Must(m_.RewindComputedTokens(rid, TokenCount{drafts - accepted}), "RewindComputedTokens");
    std::vector<int32_t> tokens(static_cast<size_t>(accepted));
    for (int32_t& t : tokens) t = static_cast<int32_t>(next_token_++ % 1000000);
    Must(m_.AppendTokens(rid, tokens), "AppendTokens");
  }

  // A step past max_model_len, which the engine's scheduler never asks: the manager caps it, so
  // every row stays within its block-table width. The request is then freed, as its worker rows
  // do not mirror the step.
  void Overreach(Input& in) {
    const auto id = PickLive(in, true);
    if (!id) return;
    const int64_t past = in.Bool() ? in.Range(1, 64) : int64_t{1} << in.Range(20, 39);
    (void)Must(m_.AllocateSlots(RequestId{*id}, {.num_new_tokens = TokenCount{L() + past}}),
               "AllocateSlots");
    m_.CheckInvariants();
    Release(*id, /*free=*/true);
  }

  void Release(int64_t id, bool free) {
    Request& r = live_.at(id);
    for (BlockTable& t : tables_) t.ClearRow(r.row);
    if (free) {
      Must(m_.Free(RequestId{id}), "Free");
      free_rows_.push_back(r.row);
      live_.erase(id);
    } else {
      Must(m_.Preempt(RequestId{id}), "Preempt");
      r.running = false;
    }
  }

  void AdmitBatch(Input& in) {
    std::vector<RequestId> ids;
    for (const auto& [id, r] : live_) {
      if (!r.running) ids.emplace_back(id);
    }
    if (ids.empty()) return;
    const Status s = m_.AdmitBatch(ids, {}, in.Bool(), batch_);
    KVTOPO_CHECK_MSG(s.ok(), Fail("AdmitBatch: " + s.ToString()));
    MirrorBatch(ids);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (batch_.ok[i]) live_[ids[i].value()].running = true;
    }
  }

  // Every running request whose prompt is computed: append a token, schedule it with lookahead.
  void DecodeBatch(Input& in) {
    std::vector<RequestId> ids;
    for (const auto& [id, r] : live_) {
      const RequestId rid{id};
      if (r.running && m_.num_tokens(rid) == m_.num_computed_tokens(rid) &&
          m_.num_tokens(rid).value() + 4 <= L()) {
        ids.push_back(rid);
      }
    }
    if (ids.empty()) return;
    std::vector<int32_t> tokens(ids.size()), ones(ids.size(), 1), lookahead(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      tokens[i] = static_cast<int32_t>(next_token_++ % 1000000);
      lookahead[i] = static_cast<int32_t>(in.Range(0, 3));
    }
    KVTOPO_CHECK(m_.AppendTokensBatch(ids, tokens, {}).ok());
    const Status s = m_.AllocateSlotsBatch(ids, ones, lookahead, batch_);
    KVTOPO_CHECK_MSG(s.ok(), Fail("AllocateSlotsBatch: " + s.ToString()));
    MirrorBatch(ids);
  }

  void FreeBatch(Input& in) {
    std::vector<RequestId> ids;
    for (const auto& [id, r] : live_) {
      if (in.Byte() % 4 == 0) ids.emplace_back(id);
    }
    for (RequestId id : ids) {
      for (BlockTable& t : tables_) t.ClearRow(live_.at(id.value()).row);
    }
    KVTOPO_CHECK(m_.FreeBatch(ids).ok());
    for (RequestId id : ids) {
      free_rows_.push_back(live_.at(id.value()).row);
      live_.erase(id.value());
    }
  }

  // The worker side: writes columns [first_column, ...) of one group's row.
  void Write(int64_t id, int32_t g, int64_t first_column, std::span<const BlockId> blocks) {
    BlockTable& t = tables_[g];
    const int32_t row = live_.at(id).row;
    KVTOPO_CHECK_MSG(first_column * t.kernel_blocks_per_block() <= t.row_length(row),
                     Fail("a row update starts past the worker's row"));
    const Status s = t.WriteFrom(row, first_column, blocks);
    KVTOPO_CHECK_MSG(s.ok(), Fail("a row update does not fit the table: " + s.ToString()));
  }

  void MirrorLastUpdate(int64_t id) {
    for (int32_t g = 0; g < m_.num_groups(); ++g) {
      const KVCacheManager::RowUpdate u = m_.LastUpdate(RequestId{id}, GroupId{g});
      Write(id, g, u.first_column, u.block_ids);
    }
  }

  void MirrorBatch(std::span<const RequestId> ids) {
    const int32_t G = m_.num_groups();
    KVTOPO_CHECK(batch_.ok.size() == ids.size());
    KVTOPO_CHECK(batch_.offsets.size() == ids.size() * G + 1);
    std::vector<BlockId> blocks;
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int32_t g = 0; g < G; ++g) {
        const size_t k = i * G + g;
        blocks.clear();
        for (int32_t j = batch_.offsets[k]; j < batch_.offsets[k + 1]; ++j) {
          blocks.emplace_back(batch_.block_ids[j]);
        }
        if (!batch_.ok[i]) {
          KVTOPO_CHECK_MSG(blocks.empty(), Fail("a failed batch entry carries blocks"));
          continue;
        }
        Write(ids[i].value(), g, batch_.first_column[k], blocks);
      }
    }
  }

  // Positions [begin, end) were just scheduled for `id` (lookahead slots included).
  void Scheduled(int64_t id, int64_t begin, int64_t end) {
    checked_request_ = id;
    check_end_ = std::min(end, L());
    check_begin_ = std::max(begin, check_end_ - 64);  // the last 64 positions
  }

  void Check() {
    m_.CheckInvariants();
    for (const auto& [id, r] : live_) {
      for (int32_t g = 0; g < m_.num_groups(); ++g) CheckRow(id, r, g);
    }
    if (checked_request_ >= 0 && live_.count(checked_request_)) {
      for (int32_t g = 0; g < m_.num_groups(); ++g) CheckSlots(checked_request_, g);
    }
  }

  // The worker row equals the manager row expanded to kernel blocks (non-null columns; a
  // released column keeps whatever the worker last wrote there, as in the engine).
  void CheckRow(int64_t id, const Request& r, int32_t g) const {
    const BlockTable& t = tables_[g];
    const auto blocks = m_.BlockIds(RequestId{id}, GroupId{g});
    const int64_t k = t.kernel_blocks_per_block();
    KVTOPO_CHECK_MSG(t.row_length(r.row) == static_cast<int64_t>(blocks.size()) * k,
                     Fail("worker row length differs from the manager row"));
    const auto row = t.Row(r.row);
    for (size_t j = 0; j < blocks.size(); ++j) {
      if (blocks[j] == kNullBlock) continue;
      for (int64_t i = 0; i < k; ++i) {
        KVTOPO_CHECK_MSG(row[j * k + i] == blocks[j].value() * k + i,
                         Fail("worker row entry differs from the manager's block"));
      }
    }
  }

  void CheckSlots(int64_t id, int32_t g) {
    const GroupGeometry& geo = m_.group(GroupId{g}).geometry;
    // A cross-attention row holds encoder positions, not the decoder's.
    if (geo.kind() == CacheKind::kRecurrent || geo.cross_attention()) return;
    const BlockTable& t = tables_[g];
    const int32_t row = live_.at(id).row;
    const auto blocks = m_.BlockIds(RequestId{id}, GroupId{g});
    const auto kernel_row = t.Row(row).first(t.row_length(row));
    const int64_t n = geo.interleaved_slots() ? geo.dcp_shard_count() : 1;
    const int64_t I = n == 1 ? 1 : geo.interleave();
    const int64_t b = geo.kernel_block_size();
    const int64_t M = geo.manager_block_size();
    const int64_t end = std::min<int64_t>(check_end_, static_cast<int64_t>(blocks.size()) * M);
    if (end <= check_begin_) return;
    // Enumeration: hand runs of I positions to slices 0, 1, ..., n-1, 0, ...; each slice stores
    // its positions densely.
    std::vector<int64_t> local(n, 0);
    expected_slice_.assign(end, 0);
    expected_local_.assign(end, 0);
    int64_t slice = 0, in_run = 0;
    for (int64_t p = 0; p < end; ++p) {
      expected_slice_[p] = slice;
      expected_local_[p] = local[slice]++;
      if (++in_run == I) {
        in_run = 0;
        slice = (slice + 1) % n;
      }
    }
    positions_.clear();
    for (int64_t p = check_begin_; p < end; ++p) {
      if (blocks[p / M] != kNullBlock) positions_.emplace_back(p);
    }
    if (positions_.empty()) return;
    slots_.assign(positions_.size(), 0);
    holders_.assign(positions_.size(), 0);
    for (int64_t rank = 0; rank < geo.dcp_size(); ++rank) {
      const Status s = ComputeSlotMapping(geo.SlotLayoutFor(Rank{static_cast<int32_t>(rank)}),
                                          kernel_row, positions_, slots_);
      KVTOPO_CHECK_MSG(s.ok(), Fail("slot mapping of allocated positions: " + s.ToString()));
      for (size_t i = 0; i < positions_.size(); ++i) {
        const int64_t p = positions_[i].value();
        const bool holds = rank % n == expected_slice_[p];
        const int64_t q = expected_local_[p];
        const int64_t expected = holds ? int64_t{kernel_row[q / b]} * b + q % b : kPadSlot;
        KVTOPO_CHECK_MSG(slots_[i] == expected,
                         Fail("slot of position " + std::to_string(p) + " on rank " +
                              std::to_string(rank) + " is " + std::to_string(slots_[i]) +
                              ", ownership by enumeration says " + std::to_string(expected)));
        holders_[i] += holds ? 1 : 0;
      }
      // A draft step's padding (SlotLayout::pad_from): past the cut every position maps to -1,
      // below it the slots stay as above.
      SlotLayout padded = geo.SlotLayoutFor(Rank{static_cast<int32_t>(rank)});
      padded.pad_from = check_begin_ + (end - check_begin_) / 2 + 1;
      padded_.assign(positions_.size(), 0);
      const Status sp = ComputeSlotMapping(padded, kernel_row, positions_, padded_);
      KVTOPO_CHECK_MSG(sp.ok(), Fail("padded slot mapping: " + sp.ToString()));
      for (size_t i = 0; i < positions_.size(); ++i) {
        const int64_t want = positions_[i].value() >= padded.pad_from ? kPadSlot : slots_[i];
        KVTOPO_CHECK_MSG(padded_[i] == want,
                         Fail("padded slot of position " + std::to_string(positions_[i].value()) +
                              " on rank " + std::to_string(rank) + " is " +
                              std::to_string(padded_[i]) + ", expected " + std::to_string(want)));
      }
    }
    // The oracle restates the replication rule: each slice is held by N / n ranks.
    for (size_t i = 0; i < positions_.size(); ++i) {
      KVTOPO_CHECK_MSG(holders_[i] == geo.dcp_size() / n,
                       Fail("a position is not held by N / n ranks"));
    }
  }

  KVCacheManager& m_;
  std::vector<BlockTable> tables_;
  std::map<int64_t, Request> live_;
  std::vector<int32_t> free_rows_;
  int64_t next_id_ = 1;
  int64_t next_token_ = 1000;
  int32_t free_at_start_ = 0;
  KVCacheManager::BatchResult batch_;
  int64_t checked_request_ = -1;
  int64_t check_begin_ = 0, check_end_ = 0;
  std::vector<int64_t> expected_slice_, expected_local_;
  std::vector<TokenPos> positions_;
  std::vector<int64_t> padded_;
  std::vector<int64_t> slots_;
  std::vector<int64_t> holders_;
};

}  // namespace

Reached FuzzRuntime(const uint8_t* data, size_t size) {
  Input in(data, size);
  static constexpr int64_t kDcp[] = {1, 4, 16};
  static constexpr int64_t kBlock[] = {16, 32, 64};
  static constexpr int64_t kInterleave[] = {1, 4, 8};
  static constexpr int64_t kLen[] = {256, 1000, 2048};
  static constexpr int64_t kWindow[] = {32, 100, 200};
  static constexpr int64_t kChunk[] = {64, 128, 256};
  const int mix = in.Byte() % 11;
  const bool encoder_decoder = mix == 10;    // no DCP, no prefix caching (the engine's rules)
  const int64_t picked_dcp = in.Pick(kDcp);  // read either way: the same input stream
  const int64_t dcp = encoder_decoder ? 1 : picked_dcp;
  const int64_t B = in.Pick(kBlock);
  const int64_t S = in.Range(0, 3);
  CacheLayout layout;
  layout.num_blocks = static_cast<int32_t>(in.Range(8, 400));
  layout.max_model_len = in.Pick(kLen);
  layout.enable_prefix_caching = in.Byte() % 8 != 0 && !encoder_decoder;
  layout.decode_context_parallel_size = dcp;
  layout.dcp_kv_cache_interleave_size = in.Pick(kInterleave);
  layout.max_num_seqs = 8;
  layout.max_num_batched_tokens = 2048;
  // One read after the other: the order of a call's arguments is unspecified, and the same
  // input must build the same mix under every compiler.
  const int64_t window = in.Pick(kWindow);
  const int64_t chunk = in.Pick(kChunk);
  layout.groups = Mix(mix, B, dcp, S, window, chunk, in);
  // Static attention sinks on a leading full-attention group, without DCP (which refuses them):
  // the manager holds 1 to 3 blocks of them from the start.
  CacheLayoutGroup& first = layout.groups.front();
  if (dcp == 1 && first.kind == CacheKind::kFullAttention && !first.cross_attention && in.Bool()) {
    first.sink_len = B * in.Range(1, 3);
  }
  Result<KVCacheManagerOptions> options = KVCacheManagerOptions::FromLayout(layout);
  if (!options.ok()) return Reached::kStopped;
  Result<std::unique_ptr<KVCacheManager>> created = KVCacheManager::Create(*std::move(options));
  if (!created.ok()) return Reached::kStopped;
  KVCacheManager& m = **created;
  // The sinks are blocks 1 to sink_len / B, taken before any request (the engine's sink
  // attention reads exactly those).
  const std::span<const BlockId> sinks = m.sink_block_ids(GroupId{0});
  KVTOPO_CHECK_MSG(static_cast<int64_t>(sinks.size()) == layout.groups.front().sink_len / B,
                   "sink blocks: not sink_len / B of them");
  for (size_t i = 0; i < sinks.size(); ++i) {
    KVTOPO_CHECK_MSG(sinks[i].value() == static_cast<int32_t>(i) + 1, "sink blocks: not 1 to k");
  }
  // Residency metrics follow half the blocks (reading no input, so the corpus keeps its meaning);
  // the pool's invariants check their records after every operation.
  KVTOPO_CHECK(m.EnableResidencyMetrics({.sample_rate = 0.5, .seed = 1}).ok());
  Harness harness(m, 8);
  harness.set_free_at_start(m.num_free_blocks());
  harness.Run(in);
  for (const BlockResidencyEvent& e : m.TakeResidencyEvents()) {
    KVTOPO_CHECK_MSG(e.idle_seconds >= 0 && e.lifetime_seconds >= e.idle_seconds,
                     "a residency event's idle time exceeds its lifetime");
    KVTOPO_CHECK(e.num_reuse_gaps >= 0 && e.num_reuse_gaps <= 3);
    for (int32_t k = 0; k < e.num_reuse_gaps; ++k) KVTOPO_CHECK(e.reuse_gaps_seconds[k] >= 0);
  }
  return Reached::kExercised;
}

}  // namespace kvtopo::fuzz
