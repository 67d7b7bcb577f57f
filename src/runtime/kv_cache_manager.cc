// KVCacheManager: per-kind group managers and the hit coordinator over one shared BlockPool.
//
// Each group's behaviour follows vLLM v1's single-type managers (research notes §5.4-5.8), but
// every size comes from the group's GroupGeometry. Requests live in a slot vector that is
// recycled, so rows keep their capacity and steady-state steps do not allocate.
#include "kvtopo/kv_cache_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

#include "internal/checked_math.h"
#include "internal/flat_id_map.h"

namespace kvtopo {

namespace {

enum class Behavior {
  kFull,
  kSliding,
  kChunked,
  kRecurrentNone,
  kRecurrentAll,
  kRecurrentAlign,
  kCross,
};

Behavior BehaviorOf(const CacheGroup& group) {
  if (group.cross_attention || group.geometry.cross_attention()) return Behavior::kCross;
  const GroupGeometry& g = group.geometry;
  switch (g.kind()) {
    case CacheKind::kFullAttention:
    case CacheKind::kMla:
      return Behavior::kFull;
    case CacheKind::kSlidingWindow:
    case CacheKind::kSlidingWindowMla:
      return Behavior::kSliding;
    case CacheKind::kChunkedLocal:
      return Behavior::kChunked;
    case CacheKind::kRecurrent:
      switch (g.recurrent_mode()) {
        case RecurrentMode::kNone:
          return Behavior::kRecurrentNone;
        case RecurrentMode::kAll:
          return Behavior::kRecurrentAll;
        case RecurrentMode::kAlign:
          return Behavior::kRecurrentAlign;
      }
  }
  return Behavior::kFull;
}

bool IsRecurrent(Behavior b) {
  return b == Behavior::kRecurrentNone || b == Behavior::kRecurrentAll ||
         b == Behavior::kRecurrentAlign;
}

// Kinds whose rows never release a block before Free and never cache (beyond full attention's
// caching): the quiet window and the skip rules treat them alike.
bool NeverSkips(Behavior b) {
  return b == Behavior::kFull || b == Behavior::kRecurrentNone || b == Behavior::kCross;
}

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// Token counts a single call may carry; sums of a few stay far from int64 overflow.
constexpr int64_t kMaxStepTokens = int64_t{1} << 40;

Status UnknownRequest(RequestId request) {
  return NotFound(fmt::format("request {} is not registered", request.value()));
}

// Rows reserve their group's table width up front (they never grow past it), so decode steps
// append without reallocating; widths past this many columns grow geometrically instead.
constexpr int64_t kMaxReservedColumns = int64_t{1} << 16;

}  // namespace

// One request's row in one group.
struct Row {
  std::vector<BlockId> blocks;
  int64_t num_cached = 0;   // columns already offered to the prefix cache
  int64_t update_from = 0;  // first column the last allocation changed
  // First column the last allocation appended past the computed prefix (hits, skipped columns
  // and external tokens' blocks): what the engine's allocate_slots returns.
  int64_t appended_from = 0;
  int64_t last_state = -1;  // recurrent align: the previous running-state column
  bool allocated = false;   // allocated at least once: a running request
};

// A running request's quiet window: the AllocateSlots calls that change nothing but the
// computed-token count. Outside it the full per-group rules run. Computed after each full
// call from the rows (QuietWindow); closed by RewindComputedTokens and failed calls.
struct QuietWindow {
  int64_t computed_end = 0;   // total_computed < this: no out-of-window block to release
  int64_t slots_max = -1;     // need_slots <= this: every attention row already covers it
  int64_t main_max = -1;      // num_main <= this: no recurrent align column to add
  int64_t committed_end = 0;  // committed tokens < this: no block becomes full and cacheable
};

// The first cache line holds everything a quiet AllocateSlots reads or writes (the computed
// count, the window, the flags and the token vector's begin/end), so a decode step that finds
// its request cold in cache pays for one line.
struct alignas(64) RequestState {
  int64_t num_computed = 0;
  QuietWindow quiet;
  bool running = false;     // allocated at least once
  bool last_quiet = false;  // the last successful AllocateSlots changed no row
  bool live = false;
  bool skip_reading_prefix_cache = false;
  std::vector<int32_t> tokens;
  int64_t num_preemptions = 0;
  int64_t id = -1;
  uint64_t registration = 0;      // which AddRequest of the manager this is (ids may be reused)
  uint64_t batch_mark = 0;        // the last admission or free batch that named this request
  std::vector<BlockHash> hashes;  // one per full hash block
  BlockHashExtraKeys extra;
  std::vector<Row> rows;  // per group
};

namespace {

// The first column of `row` that the request's last successful allocation changed (the row's
// size when it changed none).
int64_t FirstChangedColumn(const RequestState& st, const Row& row) {
  const int64_t size = static_cast<int64_t>(row.blocks.size());
  return st.last_quiet ? size : std::min<int64_t>(row.update_from, size);
}

// Whether the request holds no column in any group (a prefix hit may only start such a row).
bool HoldsNoColumns(const RequestState& st) {
  for (const Row& row : st.rows) {
    if (!row.blocks.empty()) return false;
  }
  return true;
}

}  // namespace

struct KVCacheManager::Impl {
  struct Group {
    CacheGroup spec;
    GroupId id{0};
    Behavior behavior = Behavior::kFull;
    int64_t bs = 0;                // manager block size (tokens one block id covers)
    int64_t hashes_per_block = 1;  // s: hash blocks per manager block
    int64_t spec_blocks = 0;       // S (recurrent)
    int64_t admission_cap = 0;     // windowed kinds: geometry.max_pages_per_request()
    // record_new_block_ids covers this group: plain full attention (no MLA, sinks or cross
    // attention), as the engine records its FullAttentionSpec groups' fresh blocks only.
    bool records_new_blocks = false;
    int64_t reserve_columns = 0;  // row capacity reserved per request
    // A sliding window beside groups of larger blocks caches, of each hit-alignment segment of
    // `cache_period` columns, only the columns a hit consults: the last WindowHitBlocks of the
    // segment, and under EAGLE the first of the next (the block its hit drops); 0: every column.
    int64_t cache_period = 0;
    // The blocks holding the group's static attention sinks (geometry.sink_blocks()), taken
    // from the pool at start and held for the manager's life.
    std::vector<BlockId> sink_blocks;
    // Whether column i is one a hit can consult (CacheBlocks leaves the others out).
    bool Reachable(int64_t i) const {
      if (cache_period == 0) return true;
      const int64_t r = i % cache_period;
      return r >= cache_period - spec.geometry.WindowHitBlocks() ||
             (spec.volatile_last_block && r == 0 && i > 0);
    }

    // floor(n / bs) and ceil(n / bs) for n >= 0, as the geometry counts blocks.
    int64_t FloorBlocks(int64_t n) const { return spec.geometry.FullBlocksIn(n); }
    int64_t CeilBlocks(int64_t n) const { return spec.geometry.BlocksCovering(n); }
  };

  KVCacheManagerOptions options;
  BlockPool pool;
  std::vector<Group> groups;
  // Hybrid hit lookup classes, as the engine's coordinator forms them: groups of equal spec
  // (geometry) looked up together, full attention first, EAGLE when any member drops its last
  // hit block.
  struct LookupClass {
    std::vector<int32_t> groups;
    bool eagle = false;
  };
  bool IsFullClass(const LookupClass& c) const {
    return groups[c.groups[0]].behavior == Behavior::kFull;
  }
  std::vector<LookupClass> lookup_classes;
  std::vector<uint8_t> class_looked_up;       // FindHybridHit scratch
  std::vector<uint8_t> class_eagle_verified;  // FindHybridHit scratch
  int64_t alignment = 1;                      // hybrid hit granularity: lcm of manager blocks
  std::vector<RequestState> states;
  std::vector<int32_t> free_states;
  internal::FlatIdMap index;       // request id -> states slot
  bool quiet_path_enabled = true;  // tests compare against the full rules with it off
  // The content (hash, group) recurrent groups cached in this step, whichever block holds it.
  std::vector<std::pair<BlockHash, int32_t>> recurrent_cached_this_step;
  int64_t num_running = 0;                  // requests holding rows (allocated, not freed)
  std::vector<KVCacheEvent> events;         // enable_kv_cache_events
  std::vector<int64_t> stored_columns;      // CacheBlocks: the columns one call cached (events)
  std::vector<BlockId> new_block_ids;       // record_new_block_ids
  ComputedBlocks admit_hits;                // AdmitBatch scratch
  std::vector<int32_t> batch_slots;         // batch calls: the requests' state slots
  uint64_t batch_mark = 0;                  // batch calls that must name each request once
  uint64_t registrations = 0;               // AddRequest calls so far
  mutable std::vector<int32_t> check_refs;  // CheckInvariants scratch, per block
  mutable std::vector<int32_t> check_owner_group;
  mutable std::vector<int64_t> check_seen_in_row;

  Impl(KVCacheManagerOptions opts)
      : options(std::move(opts)), pool(options.num_blocks, options.enable_prefix_caching) {}

  bool caching() const { return options.enable_prefix_caching; }

  // The request's state, or nullptr when it is not registered.
  RequestState* Find(RequestId request) {
    const int32_t slot = index.Find(request.value());
    return slot < 0 ? nullptr : &states[slot];
  }
  // The state of a request the caller knows is registered (checked).
  RequestState& State(RequestId request) {
    RequestState* st = Find(request);
    if (st == nullptr) [[unlikely]] {
      KVTOPO_CHECK_MSG(st != nullptr, fmt::format("unknown request {}", request.value()));
    }
    return *st;
  }
  const RequestState& State(RequestId request) const {
    return const_cast<Impl*>(this)->State(request);
  }

  // Where and when `hits` were found for `st` (see ComputedBlocks::Stamp).
  ComputedBlocks::Stamp StampOf(const RequestState& st, const ComputedBlocks& hits) const {
    // A position-weighted sum: independent multiplies, no serial dependency between blocks.
    uint64_t fingerprint = hits.num_tokens.value();
    for (const auto& row : hits.blocks) {
      fingerprint = fingerprint * 0x100000001b3ull + row.size();
      // sum of block * (2k + 1) over columns k, four columns at a time.
      const size_t n = row.size();
      const BlockId* b = row.data();
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, weight = 1;
      size_t k = 0;
      for (; k + 4 <= n; k += 4, weight += 8) {
        s0 += static_cast<uint64_t>(b[k].value()) * weight;
        s1 += static_cast<uint64_t>(b[k + 1].value()) * (weight + 2);
        s2 += static_cast<uint64_t>(b[k + 2].value()) * (weight + 4);
        s3 += static_cast<uint64_t>(b[k + 3].value()) * (weight + 6);
      }
      for (; k < n; ++k, weight += 2) s0 += static_cast<uint64_t>(b[k].value()) * weight;
      fingerprint += s0 + s1 + s2 + s3;
    }
    return {.manager = this,
            .registration = st.registration,
            .evictions = pool.evictions(),
            .fingerprint = fingerprint};
  }

  // Appends tokens to a request and hashes the blocks they complete.
  void Append(RequestState& st, std::span<const int32_t> token_ids) {
    st.tokens.insert(st.tokens.end(), token_ids.begin(), token_ids.end());
    if (caching()) ExtendBlockHashes(st.tokens, options.hash_block_size, st.extra, st.hashes);
  }

  // Free of a registered request: releases its rows and recycles its state.
  void Release(RequestId request) {
    const int32_t slot = index.Find(request.value());
    KVTOPO_CHECK(slot >= 0);
    RequestState& st = states[slot];
    ReleaseRows(st);
    st.live = false;
    st.running = false;
    st.id = -1;
    free_states.push_back(slot);
    index.Erase(request.value());
  }

  // Releases every row of a request (reverse order: chain tails are evicted first).
  void ReleaseRows(RequestState& st) {
    for (Row& row : st.rows) {
      pool.FreeReversed(row.blocks);
      row.blocks.clear();
      row.num_cached = row.update_from = row.appended_from = 0;
      row.last_state = -1;
      row.allocated = false;
    }
    if (st.running) --num_running;
    st.running = false;
    st.last_quiet = false;
    st.quiet = QuietWindow{};
  }

  // ---- per-group rules -------------------------------------------------------------------

  int64_t SkippedTokens(const Group& g, int64_t n) const {
    switch (g.behavior) {
      case Behavior::kFull:
      case Behavior::kRecurrentNone:
      case Behavior::kCross:
        return 0;
      case Behavior::kSliding:
        return std::max<int64_t>(0, n - (g.spec.geometry.sliding_window() - 1) -
                                        g.spec.geometry.extra_retained_tokens());
      case Behavior::kChunked: {
        const int64_t c = g.spec.geometry.attention_chunk_size();
        return n / c * c;
      }
      case Behavior::kRecurrentAll:
      case Behavior::kRecurrentAlign:
        return std::max<int64_t>(0, n - 1);  // only the last state is needed
    }
    return 0;
  }

  // A new row's prefix at `total_computed` computed tokens: the columns a window, chunk or
  // recurrent state skips (nulls, never touched) and, of the hits, those past them, which the
  // row takes. `have`: the columns the row holds already.
  struct NewPrefix {
    int64_t skipped_columns = 0;
    std::span<const BlockId> kept;
  };
  NewPrefix NewRowPrefix(const Group& g, int64_t have, std::span<const BlockId> hits,
                         int64_t total_computed) const {
    const int64_t skipped = g.FloorBlocks(SkippedTokens(g, total_computed));
    return {skipped, hits.subspan(std::clamp<int64_t>(skipped - have, 0,
                                                      static_cast<int64_t>(hits.size())))};
  }

  int64_t NumBlocksToAllocate(const Group& g, const Row& row, int64_t num_tokens,
                              std::span<const BlockId> hits, int64_t total_computed,
                              int64_t num_main, bool cap, int64_t num_encoder) const {
    const int64_t have = static_cast<int64_t>(row.blocks.size());
    const int64_t num_hits = static_cast<int64_t>(hits.size());
    if (g.behavior == Behavior::kRecurrentNone) return row.allocated ? 0 : 1 + g.spec_blocks;
    if (g.behavior == Behavior::kCross) return row.allocated ? 0 : g.CeilBlocks(num_encoder);
    if (g.behavior == Behavior::kRecurrentAlign) {
      if (!row.allocated && !hits.empty() && DeferredHit(g, hits)) return pool.num_blocks() + 1;
      const int64_t required = g.CeilBlocks(num_main) + g.spec_blocks;
      int64_t fresh = required - num_hits - have;
      if (fresh > 0) fresh = row.allocated ? 1 : 1 + g.spec_blocks;
      fresh = std::max<int64_t>(fresh, 0);
      const int64_t evictable = pool.CountFree(hits);
      if (row.allocated || total_computed <= num_hits * g.bs) return fresh + evictable;
      // A new row's external tokens take blocks of their own, and its hits they skip stay
      // untouched. The engine counts the hits as evictable and not those blocks, and raises when
      // the pool holds fewer than it takes; kvtopo counts the larger of the two, so it admits as
      // the engine does wherever the engine's allocation succeeds.
      const NewPrefix prefix = NewRowPrefix(g, have, hits, total_computed);
      const int64_t external = std::max<int64_t>(
          g.CeilBlocks(total_computed) - std::max(prefix.skipped_columns, num_hits + have), 0);
      return fresh + std::max(evictable, external + pool.CountFree(prefix.kept));
    }
    if (g.behavior == Behavior::kRecurrentAll) {
      if (!row.allocated && !hits.empty() && DeferredHit(g, hits)) return pool.num_blocks() + 1;
      num_tokens += g.spec_blocks * g.bs;
    }
    int64_t need = g.CeilBlocks(num_tokens);
    if (cap && g.admission_cap > 0) need = std::min(need, g.admission_cap);
    if (row.allocated) return std::max<int64_t>(need - have, 0);
    const NewPrefix prefix = NewRowPrefix(g, have, hits, total_computed);
    const int64_t fresh =
        std::max<int64_t>(need - std::max(prefix.skipped_columns, num_hits + have), 0);
    return fresh + pool.CountFree(prefix.kept);
  }

  // A recurrent hit whose content some request cached in this same step, in this block or in
  // another copy, waits for the next step (the engine's MambaManager keys this by the hash).
  bool DeferredHit(const Group& g, std::span<const BlockId> hits) const {
    const BlockId last = hits.back();
    if (last == kNullBlock) return false;
    const auto cached = pool.cached_as(last);
    if (!cached.has_value() || cached->second != g.id) return false;
    const std::pair<BlockHash, int32_t> key{cached->first, g.id.value()};
    return std::find(recurrent_cached_this_step.begin(), recurrent_cached_this_step.end(), key) !=
           recurrent_cached_this_step.end();
  }

  void RemoveSkippedBlocks(const Group& g, Row& row, int64_t total_computed) {
    if (NeverSkips(g.behavior)) return;
    int64_t n = total_computed;
    // Recurrent: keep the states of up to S unverified draft tokens.
    if (IsRecurrent(g.behavior)) n = std::max<int64_t>(0, n - g.spec_blocks);
    const int64_t k = std::min<int64_t>(g.FloorBlocks(SkippedTokens(g, n)),
                                        static_cast<int64_t>(row.blocks.size()));
    for (int64_t i = k - 1; i >= 0; --i) {
      if (row.blocks[i] == kNullBlock) break;
      pool.FreeOne(row.blocks[i]);
      row.blocks[i] = kNullBlock;
    }
    if (g.behavior == Behavior::kRecurrentAlign && row.last_state >= 0 &&
        row.last_state < g.CeilBlocks(n) - 1) {
      BlockId& b = row.blocks[row.last_state];
      if (b != kNullBlock) {
        pool.FreeOne(b);
        b = kNullBlock;
      }
    }
  }

  // A new request's prefix: null placeholders for the skipped columns (hit or external), then
  // the hits it keeps. External tokens' blocks past the hits come from AllocateExternalBlocks.
  void AllocateNewComputedBlocks(const Group& g, Row& row, std::span<const BlockId> hits,
                                 int64_t total_computed) {
    KVTOPO_CHECK_MSG(row.blocks.empty(), "prefix hits for a request that already has blocks");
    if (g.behavior == Behavior::kCross) return;
    const NewPrefix prefix = NewRowPrefix(g, /*have=*/0, hits, total_computed);
    row.blocks.insert(row.blocks.end(), prefix.skipped_columns, kNullBlock);
    const std::span<const BlockId> kept = prefix.kept;
    if (caching()) pool.Touch(kept);
    // Copied as plain ids (BlockId is trivially copyable, not trivial: a range insert would
    // construct the hits one by one).
    const size_t at = row.blocks.size();
    row.blocks.resize(at + kept.size());
    std::copy(kept.begin(), kept.end(), row.blocks.begin() + static_cast<ptrdiff_t>(at));
    row.num_cached = static_cast<int64_t>(row.blocks.size());
  }

  // A new request's external tokens (a KV connector loads them): fresh blocks for the columns
  // up to cdiv(total_computed, B) past its hits, as the engine's allocate_new_computed_blocks
  // takes them before any new token's block; none when the window or chunk skips every
  // external token. A recurrent align row's block there holds the loaded state (the prefix
  // state the next allocation copies from).
  int64_t ExternalBlocks(const Group& g, const Row& row, int64_t total_computed,
                         int64_t num_external) const {
    if (g.behavior == Behavior::kCross || g.behavior == Behavior::kRecurrentNone) return 0;
    const int64_t skipped = SkippedTokens(g, total_computed);
    if (g.FloorBlocks(skipped) > 0) num_external = std::min(total_computed - skipped, num_external);
    if (num_external <= 0) return 0;
    return std::max<int64_t>(g.CeilBlocks(total_computed) - static_cast<int64_t>(row.blocks.size()),
                             0);
  }
  void AllocateExternalBlocks(const Group& g, Row& row, int64_t total_computed,
                              int64_t num_external) {
    const int64_t n = ExternalBlocks(g, row, total_computed, num_external);
    if (n == 0) return;
    const size_t prev = row.blocks.size();
    KVTOPO_CHECK(pool.Allocate(static_cast<int32_t>(n), row.blocks));
    if (g.records_new_blocks) [[unlikely]] {
      new_block_ids.insert(new_block_ids.end(), row.blocks.begin() + prev, row.blocks.end());
    }
  }

  void AllocateNewBlocks(const Group& g, Row& row, int64_t num_tokens, int64_t num_main,
                         int64_t num_encoder) {
    const int64_t prev = static_cast<int64_t>(row.blocks.size());
    // Cross-attention rows are sized by the encoder once, at the first allocation.
    if (g.behavior == Behavior::kCross) num_tokens = row.allocated ? 0 : num_encoder;
    switch (g.behavior) {
      case Behavior::kRecurrentNone:
        if (!row.allocated) {
          for (int64_t i = 0; i < 1 + g.spec_blocks; ++i) row.blocks.push_back(pool.AllocateOne());
        }
        break;
      case Behavior::kRecurrentAlign:
        AllocateAlign(g, row, num_main);
        break;
      case Behavior::kRecurrentAll:
        num_tokens += g.spec_blocks * g.bs;
        [[fallthrough]];
      default: {
        const int64_t need = g.CeilBlocks(num_tokens);
        if (need > prev) {
          KVTOPO_CHECK(pool.Allocate(static_cast<int32_t>(need - prev), row.blocks));
          if (g.records_new_blocks) [[unlikely]] {
            new_block_ids.insert(new_block_ids.end(), row.blocks.begin() + prev, row.blocks.end());
          }
        }
      }
    }
    row.allocated = true;
  }

  // Align mode, as the engine's MambaManager allocates it: column cdiv(n, B) - 1 holds the
  // running state and the S speculative columns follow it. A running request keeps its
  // previous speculative blocks in place once the running column reaches them (the first one
  // becomes the running state) and moves those the running column passes to the row's end, each
  // leaving a null behind; fresh blocks complete the row (one for a running request, 1 + S for a
  // new one). The previous running state stays for the state copy until RemoveSkippedBlocks
  // releases it.
  void AllocateAlign(const Group& g, Row& row, int64_t num_main) {
    const int64_t S = g.spec_blocks;
    const int64_t required = g.CeilBlocks(num_main) + S;
    const int64_t prev = static_cast<int64_t>(row.blocks.size());
    if (required <= prev) return;
    if (row.allocated) {
      row.last_state = prev - 1 - S;
    } else if (prev > 0) {
      row.last_state = prev - 1;  // the prefix-hit state
    }
    const int64_t skip = required - S - 1;
    if (prev < skip) row.blocks.resize(skip, kNullBlock);
    if (row.allocated) {
      for (int64_t i = prev - S; i < prev && i < skip; ++i) {
        const BlockId moved = row.blocks[i];
        row.blocks[i] = kNullBlock;
        row.blocks.push_back(moved);
        row.update_from = std::min(row.update_from, i);
      }
    }
    while (static_cast<int64_t>(row.blocks.size()) < required) {
      row.blocks.push_back(pool.AllocateOne());
    }
  }

  BlockHash CoarseHash(const Group& g, const RequestState& st, int64_t column) const {
    const int64_t s = g.hashes_per_block;
    if (s == 1) return st.hashes[column];
    return CombineBlockHashes(std::span<const BlockHash>(st.hashes).subspan(column * s, s));
  }

  void CacheBlocks(const Group& g, Row& row, const RequestState& st, int64_t num_tokens) {
    if (g.behavior == Behavior::kRecurrentNone || g.behavior == Behavior::kCross) return;
    const int64_t num_hashes = static_cast<int64_t>(st.hashes.size());
    const int64_t available =
        g.hashes_per_block == 1 ? num_hashes : num_hashes / g.hashes_per_block;
    const int64_t full = std::min<int64_t>(
        {g.FloorBlocks(num_tokens), available, static_cast<int64_t>(row.blocks.size())});
    const bool events_on = options.enable_kv_cache_events;
    if (g.hashes_per_block == 1 && !events_on && !IsRecurrent(g.behavior) && g.cache_period == 0) {
      if (full > row.num_cached) {
        const auto from = static_cast<size_t>(row.num_cached);
        const auto count = static_cast<size_t>(full - row.num_cached);
        pool.CacheRun(std::span<const BlockId>(row.blocks).subspan(from, count),
                      std::span<const BlockHash>(st.hashes).subspan(from, count), g.id);
        row.num_cached = full;
        // A prompt being prefilled in chunks caches the next hashes at its next call: start
        // loading their map slots now, while the engine works between the calls.
        constexpr int64_t kNextCall = 16;
        const int64_t ahead = std::min(available - full, kNextCall);
        if (ahead > 0) {
          pool.PrefetchSlots(std::span<const BlockHash>(st.hashes).subspan(full, ahead), g.id);
        }
      }
      return;
    }
    if (events_on) [[unlikely]]
      stored_columns.clear();
    for (int64_t i = row.num_cached; i < full; ++i) {
      const BlockId b = row.blocks[i];
      if (b == kNullBlock || pool.is_cached(b) || !g.Reachable(i)) continue;
      CacheOne(g, b, CoarseHash(g, st, i));
      if (events_on) [[unlikely]]
        stored_columns.push_back(i);
    }
    if (events_on && full > row.num_cached) [[unlikely]]
      RecordStored(g, st, row.num_cached, full);
    row.num_cached = std::max(row.num_cached, full);
  }

  // The BlockStored event of one caching call of a group, as the engine's cache_full_blocks
  // records it: the hashes of the blocks it cached (stored_columns), the tokens of every column
  // in [begin, end) (null and skipped columns' too), the parent the hash of column begin - 1.
  void RecordStored(const Group& g, const RequestState& st, int64_t begin, int64_t end) {
    KVCacheEvent e{.type = KVCacheEvent::Type::kBlockStored,
                   .group = g.id,
                   .block_size = g.bs,
                   .lora_id = st.extra.lora_id};
    for (int64_t i : stored_columns) e.block_hashes.push_back(CoarseHash(g, st, i));
    if (begin > 0) e.parent_block_hash = CoarseHash(g, st, begin - 1);
    e.token_ids.assign(st.tokens.begin() + begin * g.bs, st.tokens.begin() + end * g.bs);
    const BlockHashExtraKeys& extra = st.extra;
    if (!extra.mm_items.empty() || !extra.cache_salt.empty() || !extra.block_keys.empty()) {
      bool any = false;
      for (int64_t i : stored_columns) {
        any |= !e.extra_keys.emplace_back(EventKeys(g, extra, i)).empty();
      }
      if (!any) e.extra_keys.clear();
    }
    events.push_back(std::move(e));
  }

  // Column i's extra keys, by the rules HashBlockTokens keys its hash blocks with.
  BlockEventKeys EventKeys(const Group& g, const BlockHashExtraKeys& extra, int64_t i) const {
    BlockEventKeys k;
    const int64_t start = i * g.bs;
    const int64_t end = start + g.bs;
    for (const MultimodalItem& item : extra.mm_items) {
      const int64_t item_start = item.offset.value();
      if (item_start + item.length.value() <= start || item_start >= end) continue;
      k.mm_items.emplace_back(item.identifier, item_start - start);
    }
    if (start == 0) k.cache_salt = extra.cache_salt;
    const int64_t s = g.hashes_per_block;
    const int64_t first = i * s;
    const int64_t have =
        std::min<int64_t>(static_cast<int64_t>(extra.block_keys.size()), first + s);
    if (have > first) {
      k.content_digest = CombineBlockHashes(
          std::span<const BlockHash>(extra.block_keys).subspan(first, have - first));
    }
    return k;
  }

  void CacheOne(const Group& g, BlockId b, const BlockHash& hash) {
    pool.Cache(b, hash, g.id);
    if (IsRecurrent(g.behavior)) {
      recurrent_cached_this_step.emplace_back(hash, g.id.value());
      if (recurrent_cached_this_step.size() > 2 * static_cast<size_t>(pool.num_blocks())) {
        PruneRecurrentCachedThisStep();
      }
    }
  }

  // Keeps recurrent_cached_this_step within twice the pool when steps are not marked (an engine
  // that never calls NewStep): content no block caches any more can defer no hit, and a
  // content listed twice defers as once, so dropping those changes no answer.
  void PruneRecurrentCachedThisStep() {
    auto& v = recurrent_cached_this_step;
    std::erase_if(v, [&](const std::pair<BlockHash, int32_t>& e) {
      return !pool.Lookup(e.first, GroupId{e.second}).has_value();
    });
    const auto less = [](const std::pair<BlockHash, int32_t>& a,
                         const std::pair<BlockHash, int32_t>& b) {
      return std::tie(a.first.low, a.first.high, a.second) <
             std::tie(b.first.low, b.first.high, b.second);
    };
    std::sort(v.begin(), v.end(), less);
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  // ---- quiet window ----------------------------------------------------------------------
  //
  // Most decode steps of a running request change no row: the new token lands in a block
  // already allocated, no block fills up, none leaves the window. Each rule below is monotone in
  // one of the step's token counts, so after every full AllocateSlots the manager records, per
  // request, how far each count may grow before some group's rule would act; a later call
  // inside all four bounds only advances the computed-token count.

  // Smallest n with SkippedTokens(g, n) >= m (m >= 1), for the kinds that skip.
  int64_t MinTokensSkipping(const Group& g, int64_t m) const {
    switch (g.behavior) {
      case Behavior::kSliding:
        return m + (g.spec.geometry.sliding_window() - 1) + g.spec.geometry.extra_retained_tokens();
      case Behavior::kChunked:
        return g.spec.geometry.CeilToChunk(m);
      case Behavior::kRecurrentAll:
      case Behavior::kRecurrentAlign:
        return m + 1;
      case Behavior::kFull:
      case Behavior::kRecurrentNone:
      case Behavior::kCross:
        break;
    }
    return kNever;
  }

  // The smallest total_computed >= tc at which RemoveSkippedBlocks(g, row, .) would release a
  // block, given the row as it is now (tc itself when it would act already).
  int64_t NextRemovalAt(const Group& g, const Row& row, int64_t tc) const {
    if (NeverSkips(g.behavior)) return kNever;
    const bool recurrent = IsRecurrent(g.behavior);
    const int64_t S = recurrent ? g.spec_blocks : 0;
    const int64_t n = recurrent ? std::max<int64_t>(0, tc - S) : tc;
    const int64_t size = static_cast<int64_t>(row.blocks.size());
    const int64_t k = std::min<int64_t>(g.FloorBlocks(SkippedTokens(g, n)), size);
    if (k >= 1 && row.blocks[k - 1] != kNullBlock) return tc;
    int64_t next = kNever;
    // The walk only reaches a new column once one more whole block is skipped.
    if (k < size) next = MinTokensSkipping(g, (k + 1) * g.bs) + S;
    if (g.behavior == Behavior::kRecurrentAlign && row.last_state >= 0 &&
        row.blocks[row.last_state] != kNullBlock) {
      if (row.last_state < g.CeilBlocks(n) - 1) return tc;
      // Released once cdiv(n, B) - 1 passes it: n > (last_state + 1) * B.
      next = std::min(next, (row.last_state + 1) * g.bs + 1 + S);
    }
    return next;
  }

  void ComputeQuietWindow(RequestState& st, int64_t total_computed) const {
    QuietWindow w{
        .computed_end = kNever, .slots_max = kNever, .main_max = kNever, .committed_end = kNever};
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const Group& g = groups[gi];
      const Row& row = st.rows[gi];
      const int64_t size = static_cast<int64_t>(row.blocks.size());
      switch (g.behavior) {
        case Behavior::kRecurrentNone:
        case Behavior::kCross:
          continue;  // a running row never allocates, caches or releases
        case Behavior::kRecurrentAlign:
          w.main_max = std::min(w.main_max, (size - g.spec_blocks) * g.bs);
          break;
        case Behavior::kRecurrentAll:
          w.slots_max = std::min(w.slots_max, (size - g.spec_blocks) * g.bs);
          break;
        default:
          w.slots_max = std::min(w.slots_max, size * g.bs);
      }
      // CacheBlocks acts only once floor(n / B) passes the columns already offered.
      if (caching()) w.committed_end = std::min(w.committed_end, (row.num_cached + 1) * g.bs);
      w.computed_end = std::min(w.computed_end, NextRemovalAt(g, row, total_computed));
    }
    st.quiet = w;
  }

  // A step inside the request's quiet window (only new and lookahead tokens, no flags): every
  // group's rule is a no-op for these counts (see ComputeQuietWindow), so only the computed
  // count advances. False when the full rules must run.
  bool QuietStep(RequestState& st, const SlotRequest& step) const {
    if (!st.running || step.full_sequence_must_fit || step.delay_cache_blocks ||
        !quiet_path_enabled) {
      return false;
    }
    const QuietWindow& w = st.quiet;
    const int64_t L = options.max_model_len;
    const int64_t total_computed = std::min(st.num_computed, L);
    const int64_t num_main = total_computed + step.num_new_tokens.value();
    const int64_t need_slots = std::min(num_main + step.num_lookahead_tokens.value(), L);
    const int64_t committed = std::min<int64_t>(num_main, static_cast<int64_t>(st.tokens.size()));
    if (total_computed < w.computed_end && need_slots <= w.slots_max && num_main <= w.main_max &&
        (committed < w.committed_end || !caching())) {
      st.num_computed += step.num_new_tokens.value();
      st.last_quiet = true;
      return true;
    }
    return false;
  }

  // Longest hit for group g and the groups `others` of its lookup class (a column hits only
  // where every one of them caches it, as the engine looks up groups of one spec together), at
  // most max_len tokens, ending on a multiple of `align`; `eagle`: drop the last hit block.
  // Fills `out` with g's row prefix (nulls for skipped columns) and returns its token length.
  int64_t FindLongestHit(const Group& g, std::span<const int32_t> others, const RequestState& st,
                         int64_t max_len, int64_t align, bool eagle,
                         std::vector<BlockId>& out) const {
    out.clear();
    const int64_t bs = g.bs;
    const int64_t limit = std::min<int64_t>(
        g.FloorBlocks(max_len), static_cast<int64_t>(st.hashes.size()) / g.hashes_per_block);
    auto lookup = [&](int64_t j) {
      const BlockHash hash = CoarseHash(g, st, j);
      std::optional<BlockId> hit = pool.Lookup(hash, g.id);
      for (int32_t other : others) {
        if (hit && !pool.Lookup(hash, GroupId{other})) hit.reset();
      }
      return hit;
    };
    auto trim_to_alignment = [&] {
      while (!out.empty() && (static_cast<int64_t>(out.size()) * bs) % align != 0) out.pop_back();
    };
    switch (g.behavior) {
      case Behavior::kFull: {
        if (g.hashes_per_block == 1 && others.empty()) {
          out.resize(limit);
          out.resize(pool.MatchPrefix(std::span<const BlockHash>(st.hashes).first(limit), g.id,
                                      out.data()));
        } else {
          for (int64_t j = 0; j < limit; ++j) {
            auto hit = lookup(j);
            if (!hit) break;
            out.push_back(*hit);
          }
        }
        if (eagle && !out.empty()) out.pop_back();
        trim_to_alignment();
        break;
      }
      case Behavior::kSliding: {
        const int64_t need = g.spec.geometry.WindowHitBlocks() + (eagle ? 1 : 0);
        int64_t run = 0;  // hits in [i, run_end]
        int64_t run_end = -1;
        for (int64_t i = limit - 1; i >= 0; --i) {
          auto hit = lookup(i);
          if (!hit) {
            run = 0;
            continue;
          }
          if (run == 0) {
            // A run may only end where the hit length (after the EAGLE pop) is aligned.
            const int64_t len = (eagle ? i : i + 1) * bs;
            if (len % align != 0) continue;
            run_end = i;
          }
          if (++run == need) {
            out.assign(i, kNullBlock);
            for (int64_t j = i; j <= run_end; ++j) out.push_back(*lookup(j));
            if (eagle) out.pop_back();
            return static_cast<int64_t>(out.size()) * bs;
          }
        }
        // No full window found: the run that reaches column 0 (counted, as a window is, from a
        // column where the hit would end aligned) still counts. As the engine's
        // SlidingWindowManager trims it: aligned, then under EAGLE its last block dropped and
        // aligned again (a whole alignment segment shorter when the block is smaller).
        for (int64_t j = 0; j < run; ++j) out.push_back(*lookup(j));
        trim_to_alignment();
        if (eagle && !out.empty()) {
          out.pop_back();
          trim_to_alignment();
        }
        break;
      }
      case Behavior::kChunked: {
        // Create refuses both under prefix caching, as the engine's chunked manager asserts.
        KVTOPO_CHECK(bs == align && !eagle);
        const int64_t first = std::min(g.FloorBlocks(g.spec.geometry.FloorToChunk(max_len)), limit);
        out.assign(first, kNullBlock);
        for (int64_t j = first; j < limit; ++j) {
          auto hit = lookup(j);
          if (!hit) break;
          out.push_back(*hit);
        }
        break;
      }
      case Behavior::kRecurrentNone:
      case Behavior::kCross:
        break;
      case Behavior::kRecurrentAll:
      case Behavior::kRecurrentAlign: {
        for (int64_t i = limit - 1; i >= 0; --i) {
          if (((i + 1) * bs) % align != 0) continue;
          if (auto hit = lookup(i)) {
            out.assign(i, kNullBlock);
            out.push_back(*hit);
            break;
          }
        }
        break;
      }
    }
    return static_cast<int64_t>(out.size()) * bs;
  }
  // The engine's hybrid lookup (HybridKVCacheCoordinator.find_longest_cache_hit): each lookup
  // class, full attention first, accepts the candidate length or shrinks it, until a pass
  // changes nothing (one pass for full attention beside one other class). A full-attention
  // class is looked up once and then only trimmed; an EAGLE class looks one block further and
  // drops its last hit block once per candidate length (another class shrinking the length
  // makes it do so again).
  int64_t FindHybridHit(const RequestState& st, int64_t max_hit, ComputedBlocks& out) {
    const size_t num_classes = lookup_classes.size();
    class_looked_up.assign(num_classes, 0);
    class_eagle_verified.assign(num_classes, 0);
    const bool simple = num_classes == 2 && IsFullClass(lookup_classes[0]);
    int64_t hit_length = max_hit;
    while (true) {
      int64_t curr = hit_length;
      for (size_t ci = 0; ci < num_classes; ++ci) {
        const LookupClass& c = lookup_classes[ci];
        const Group& g = groups[c.groups[0]];
        if (class_looked_up[ci] && g.behavior == Behavior::kFull) {
          curr = curr / g.bs * g.bs;
          continue;
        }
        const bool eagle = c.eagle && !class_eagle_verified[ci];
        const int64_t max_len = eagle ? std::min(curr + g.bs, max_hit) : curr;
        std::vector<BlockId>& first = out.blocks[c.groups[0]];
        const int64_t hit = FindLongestHit(g, std::span<const int32_t>(c.groups).subspan(1), st,
                                           max_len, alignment, eagle, first);
        KVTOPO_CHECK(hit <= curr);
        for (size_t k = 1; k < c.groups.size(); ++k) {
          std::vector<BlockId>& blocks = out.blocks[c.groups[k]];
          blocks.assign(first.size(), kNullBlock);
          for (size_t j = 0; j < first.size(); ++j) {
            if (first[j] == kNullBlock) continue;
            blocks[j] =
                *pool.Lookup(CoarseHash(g, st, static_cast<int64_t>(j)), GroupId{c.groups[k]});
          }
        }
        if (eagle) {
          class_eagle_verified[ci] = 1;
        } else if (hit < curr) {
          std::fill(class_eagle_verified.begin(), class_eagle_verified.end(), 0);
        }
        class_looked_up[ci] = 1;
        curr = hit;
      }
      if (curr >= hit_length) break;
      hit_length = curr;
      if (simple) break;
    }
    // Full-attention rows were looked up once, at the longest length: trim them to the hit.
    for (const LookupClass& c : lookup_classes) {
      if (!IsFullClass(c)) continue;
      for (int32_t gi : c.groups) {
        std::vector<BlockId>& blocks = out.blocks[gi];
        blocks.resize(
            std::min<size_t>(blocks.size(), static_cast<size_t>(hit_length / groups[gi].bs)));
      }
    }
    return hit_length;
  }

  // The request's prefix hits (GetComputedBlocks without the stamp, which only calls that hand
  // the hits back to the caller need). False when the request reads no prefix cache.
  bool FindHits(const RequestState& st, ComputedBlocks& out) {
    out.blocks.resize(groups.size());
    for (auto& blocks : out.blocks) blocks.clear();
    out.num_tokens = TokenCount{0};
    out.stamp = {};
    if (!caching() || st.skip_reading_prefix_cache) return false;
    const int64_t num_tokens = static_cast<int64_t>(st.tokens.size());
    // At least one token is recomputed so the step produces logits.
    const int64_t max_hit = std::max<int64_t>(0, std::min(num_tokens - 1, options.max_model_len));
    int64_t length = max_hit;
    if (groups.size() == 1) {
      const auto& g = groups[0];
      length = FindLongestHit(g, {}, st, length, g.bs, g.spec.volatile_last_block, out.blocks[0]);
    } else {
      length = FindHybridHit(st, max_hit, out);
    }
    out.num_tokens = TokenCount{length};
    if (options.log_stats) {
      pool.RecordLookup(TokenCount{num_tokens}, out.num_tokens, st.num_preemptions > 0);
    }
    return true;
  }
};

// ---- KVCacheManager --------------------------------------------------------------------------

Result<std::unique_ptr<KVCacheManager>> KVCacheManager::Create(KVCacheManagerOptions options) {
  if (options.groups.empty()) {
    return InvalidArgument("KVCacheManagerOptions.groups is empty; the plan has no cache groups");
  }
  if (options.num_blocks < 1) {
    return InvalidArgument(
        fmt::format("KVCacheManagerOptions.num_blocks must be at least 1 (the null block), got {}",
                    options.num_blocks));
  }
  if (options.max_model_len <= 0) {
    return InvalidArgument(
        fmt::format("--max-model-len must be positive, got {}", options.max_model_len));
  }
  const bool caching = options.enable_prefix_caching;
  if (caching && options.hash_block_size <= 0) {
    return InvalidArgument(
        fmt::format("hash block size must be positive with --enable-prefix-caching, got {}",
                    options.hash_block_size));
  }
  auto impl = std::make_unique<Impl>(options);
  int64_t lcm = 1;
  for (size_t i = 0; i < options.groups.size(); ++i) {
    const GroupGeometry& geo = options.groups[i].geometry;
    if (geo.manager_block_size() <= 0 || geo.block_size() <= 0) {
      return InvalidArgument(fmt::format("cache group {}: block size must be positive", i));
    }
    if (caching && geo.manager_block_size() % options.hash_block_size != 0) {
      return InvalidArgument(fmt::format(
          "hash_block_size {} does not divide the manager block size {} of cache group {}; set "
          "it to a divisor of every group's manager block (a layout's default is their GCD)",
          options.hash_block_size, geo.manager_block_size(), i));
    }
    Impl::Group g;
    g.spec = options.groups[i];
    g.id = GroupId{static_cast<int32_t>(i)};
    g.behavior = BehaviorOf(options.groups[i]);
    if (g.behavior == Behavior::kCross && caching) {
      return InvalidArgument(
          fmt::format("cache group {} is cross-attention: prefix caching is not supported for "
                      "encoder-decoder layouts; set enable_prefix_caching to false",
                      i));
    }
    g.bs = geo.manager_block_size();
    g.hashes_per_block = caching ? geo.manager_block_size() / options.hash_block_size : 1;
    g.spec_blocks = geo.kind() == CacheKind::kRecurrent ? geo.num_speculative_blocks() : 0;
    g.admission_cap = IsWindowed(geo.kind()) ? geo.max_pages_per_request() : 0;
    g.records_new_blocks = options.record_new_block_ids &&
                           geo.kind() == CacheKind::kFullAttention && !geo.cross_attention() &&
                           geo.sink_blocks() == 0;
    g.reserve_columns = std::clamp<int64_t>(geo.manager_table_width(), 0, kMaxReservedColumns);
    if (IsRecurrent(g.behavior) && options.groups[i].volatile_last_block) {
      // A recurrent group's hit is one state checkpoint, never a run of blocks whose last one a
      // backend recomputes; the hit coordinator's look-one-block-further rule for such groups
      // would then return hits longer than the length it asked for.
      return InvalidArgument(fmt::format(
          "cache group {} is recurrent: volatile_last_block applies to attention groups only "
          "(the backend recomputes the last attention block); set it to false",
          i));
    }
    if (g.behavior == Behavior::kSliding && geo.sliding_window() <= 0) {
      return InvalidArgument(fmt::format("cache group {}: sliding window must be positive", i));
    }
    if (g.behavior == Behavior::kChunked && geo.attention_chunk_size() <= 0) {
      return InvalidArgument(fmt::format("cache group {}: attention chunk must be positive", i));
    }
    KVTOPO_ASSIGN_OR_RETURN(lcm, internal::CheckedLcm(lcm, g.bs, "hit alignment"));
    impl->groups.push_back(std::move(g));
  }
  impl->alignment = lcm;
  // The engine's ChunkedLocalAttentionManager asserts at its first prefix-cache lookup under
  // EAGLE and where the hit alignment exceeds its block (find_longest_cache_hit: "Hybrid KV cache
  // is not supported for eagle + chunked local attention", "KV cache groups with different
  // block sizes are not compatible with chunked local attention now").
  for (size_t i = 0; caching && i < impl->groups.size(); ++i) {
    const Impl::Group& g = impl->groups[i];
    if (g.behavior != Behavior::kChunked) continue;
    if (g.spec.volatile_last_block) {
      return InvalidArgument(fmt::format(
          "cache group {} is chunked local attention with volatile_last_block (EAGLE): the "
          "engine's chunked-local manager refuses EAGLE at its first prefix-cache lookup; set "
          "volatile_last_block to false or enable_prefix_caching to false",
          i));
    }
    if (lcm != g.bs) {
      return InvalidArgument(fmt::format(
          "cache group {} is chunked local attention with {}-token blocks beside groups whose "
          "hits align to {} tokens: the engine's chunked-local manager refuses groups of other "
          "block sizes at its first prefix-cache lookup; give every group one block size or set "
          "enable_prefix_caching to false",
          i, g.bs, lcm));
    }
  }
  // The engine's hybrid coordinator caches at hit granularity, and a sliding-window group there
  // leaves out of the prefix cache the blocks no hit consults: of each aligned segment, those
  // before its window's tail (HybridKVCacheCoordinator.cache_blocks, SlidingWindowManager
  // ._cache_block_mask). Under EAGLE the hit also needs the block after the tail, which the
  // engine at 28be48fa9 leaves out too, losing every hit; kvtopo caches it, as the engine's fix
  // does (vllm-project/vllm#44082).
  for (Impl::Group& g : impl->groups) {
    if (!caching || impl->groups.size() < 2 || g.behavior != Behavior::kSliding || lcm <= g.bs) {
      continue;
    }
    const int64_t period = lcm / g.bs;
    const int64_t tail = g.spec.geometry.WindowHitBlocks();
    if (tail + (g.spec.volatile_last_block ? 1 : 0) < period) g.cache_period = period;
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < impl->groups.size(); ++i) {
      const Impl::Group& g = impl->groups[i];
      const bool full = g.behavior == Behavior::kFull;
      if (full != (pass == 0)) continue;
      auto same = std::find_if(impl->lookup_classes.begin(), impl->lookup_classes.end(),
                               [&](const Impl::LookupClass& c) {
                                 const Impl::Group& h = impl->groups[c.groups[0]];
                                 return h.behavior == g.behavior &&
                                        h.spec.geometry == g.spec.geometry &&
                                        h.spec.lookup_class == g.spec.lookup_class;
                               });
      if (same == impl->lookup_classes.end()) {
        impl->lookup_classes.push_back({.groups = {}, .eagle = false});
        same = impl->lookup_classes.end() - 1;
      }
      same->groups.push_back(static_cast<int32_t>(i));
      same->eagle = same->eagle || g.spec.volatile_last_block;
    }
  }
  // Static attention sinks: each such group takes its blocks off the free queue at start, in
  // group order, as the engine's SinkFullAttentionManager does when the coordinator builds it
  // (the first group's are blocks 1 to k, which the engine's sink attention reads).
  for (size_t i = 0; i < impl->groups.size(); ++i) {
    Impl::Group& g = impl->groups[i];
    const int64_t k = g.spec.geometry.sink_blocks();
    if (k > impl->pool.num_free_blocks()) {
      return InvalidArgument(fmt::format(
          "cache group {} keeps {} attention sink tokens in {} blocks, more than the {} free "
          "blocks of a pool of {}; give the pool more blocks",
          i, g.spec.geometry.sink_tokens(), k, impl->pool.num_free_blocks(), options.num_blocks));
    }
    for (int64_t j = 0; j < k; ++j) g.sink_blocks.push_back(impl->pool.AllocateOne());
  }
  if (options.enable_kv_cache_events) impl->pool.set_event_sink(&impl->events);
  return std::unique_ptr<KVCacheManager>(new KVCacheManager(std::move(impl)));
}

KVCacheManager::KVCacheManager(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KVCacheManager::~KVCacheManager() = default;

int32_t KVCacheManager::num_groups() const { return static_cast<int32_t>(impl_->groups.size()); }
const CacheGroup& KVCacheManager::group(GroupId group) const {
  return impl_->groups.at(group.value()).spec;
}

Status KVCacheManager::AddRequest(RequestId request, std::span<const int32_t> prompt_token_ids,
                                  BlockHashExtraKeys extra_keys) {
  return AddRequest(request, prompt_token_ids, RequestOptions{.extra_keys = std::move(extra_keys)});
}

bool KVCacheManager::Contains(RequestId request) const {
  return impl_->index.Contains(request.value());
}

Status KVCacheManager::AddRequest(RequestId request, std::span<const int32_t> prompt_token_ids,
                                  RequestOptions request_options) {
  Impl& m = *impl_;
  if (m.index.Contains(request.value())) {
    return InvalidArgument(
        fmt::format("request {} is already registered; free it first", request.value()));
  }
  if (request_options.num_preemptions < 0) {
    return InvalidArgument(fmt::format("num_preemptions must be non-negative, got {}",
                                       request_options.num_preemptions));
  }
  const std::vector<MultimodalItem>& mm = request_options.extra_keys.mm_items;
  for (size_t i = 0; i < mm.size(); ++i) {
    // Block hashing compares [offset, offset + length) with each block's positions.
    const int64_t offset = mm[i].offset.value(), length = mm[i].length.value();
    if (offset < 0 || length < 0 || length > std::numeric_limits<int64_t>::max() - offset) {
      return InvalidArgument(fmt::format(
          "mm_items[{}]: offset {} and length {} must be non-negative with a sum that fits 64 "
          "bits",
          i, offset, length));
    }
  }
  const int64_t rows = request_options.prompt_embeds_rows;
  const size_t embeds_bytes = request_options.prompt_embeds.size();
  if (rows < 0 || rows > static_cast<int64_t>(prompt_token_ids.size()) ||
      (rows == 0) != (embeds_bytes == 0) ||
      (rows > 0 && embeds_bytes % static_cast<size_t>(rows) != 0)) {
    return InvalidArgument(fmt::format(
        "prompt_embeds: {} bytes as {} rows for a prompt of {} tokens; give one equal-sized row "
        "per prompt token, at most as many rows as tokens",
        embeds_bytes, rows, prompt_token_ids.size()));
  }
  if (rows > 0 && m.caching()) {
    request_options.extra_keys.block_keys =
        DigestRowsPerBlock(request_options.prompt_embeds, rows, m.options.hash_block_size);
  }
  int32_t slot;
  if (!m.free_states.empty()) {
    slot = m.free_states.back();
    m.free_states.pop_back();
  } else {
    slot = static_cast<int32_t>(m.states.size());
    m.states.emplace_back();
  }
  m.index.Insert(request.value(), slot);
  RequestState& st = m.states[slot];
  st.id = request.value();
  st.registration = ++m.registrations;
  st.live = true;
  st.running = false;
  st.last_quiet = false;
  st.quiet = QuietWindow{};
  st.tokens.assign(prompt_token_ids.begin(), prompt_token_ids.end());
  st.hashes.clear();
  st.extra = std::move(request_options.extra_keys);
  st.skip_reading_prefix_cache = request_options.skip_reading_prefix_cache;
  st.num_preemptions = request_options.num_preemptions;
  st.num_computed = 0;
  st.rows.resize(m.groups.size());
  for (size_t gi = 0; gi < st.rows.size(); ++gi) {
    Row& row = st.rows[gi];
    row.blocks.clear();
    row.blocks.reserve(m.groups[gi].reserve_columns);  // once per recycled slot
    row.num_cached = row.update_from = row.appended_from = 0;
    row.last_state = -1;
    row.allocated = false;
  }
  if (m.caching()) {
    ExtendBlockHashes(st.tokens, m.options.hash_block_size, st.extra, st.hashes);
  }
  return Status::Ok();
}

Status KVCacheManager::AppendTokens(RequestId request, std::span<const int32_t> token_ids) {
  RequestState* st = impl_->Find(request);
  if (st == nullptr) return UnknownRequest(request);
  impl_->Append(*st, token_ids);
  return Status::Ok();
}

Status KVCacheManager::RewindComputedTokens(RequestId request, TokenCount num_rejected) {
  RequestState* st = impl_->Find(request);
  if (st == nullptr) return UnknownRequest(request);
  if (num_rejected.value() < 0 || num_rejected.value() > st->num_computed) {
    return InvalidArgument(
        fmt::format("num_rejected must be in [0, {}] (request {}'s computed tokens), got {}",
                    st->num_computed, request.value(), num_rejected.value()));
  }
  st->num_computed -= num_rejected.value();
  // The quiet window assumes the computed count only grows.
  if (num_rejected.value() > 0) st->quiet = QuietWindow{};
  return Status::Ok();
}

Result<TokenCount> KVCacheManager::GetComputedBlocks(RequestId request, ComputedBlocks& out) {
  Impl& m = *impl_;
  const RequestState* found = m.Find(request);
  if (found == nullptr) return UnknownRequest(request);
  if (m.FindHits(*found, out)) out.stamp = m.StampOf(*found, out);
  return out.num_tokens;
}

Result<ComputedBlocks> KVCacheManager::GetComputedBlocks(RequestId request) {
  ComputedBlocks out;
  KVTOPO_RETURN_IF_ERROR(GetComputedBlocks(request, out).status());
  return out;
}

Result<bool> KVCacheManager::AllocateSlots(RequestId request, const SlotRequest& step) {
  RequestState* st = impl_->Find(request);
  // The usual step (new and lookahead tokens only) needs no further checks.
  const int64_t num_new = step.num_new_tokens.value();
  const uint64_t lookahead = static_cast<uint64_t>(step.num_lookahead_tokens.value());
  if (st != nullptr && num_new > 0 && num_new <= kMaxStepTokens &&
      lookahead <= static_cast<uint64_t>(kMaxStepTokens) &&
      (step.num_new_computed_tokens.value() | step.num_external_computed_tokens.value() |
       step.num_encoder_tokens.value()) == 0) [[likely]] {
    if (impl_->QuietStep(*st, step)) return true;
    return AllocateSlotsAt(*st, step);
  }
  return AllocateSlotsChecked(request, st, step);
}

Result<bool> KVCacheManager::AllocateSlotsChecked(RequestId request, RequestState* st,
                                                  const SlotRequest& step) {
  if (st == nullptr) return UnknownRequest(request);
  KVTOPO_RETURN_IF_ERROR(CheckSlotRequest(*st, step));
  if ((step.num_new_computed_tokens.value() | step.num_external_computed_tokens.value()) == 0 &&
      impl_->QuietStep(*st, step)) {
    return true;
  }
  return AllocateSlotsAt(*st, step);
}

Status KVCacheManager::CheckSlotRequest(const RequestState& st, const SlotRequest& step) const {
  const auto in_range = [](TokenCount n, const char* name) -> Status {
    if (n.value() < 0 || n.value() > kMaxStepTokens) {
      return InvalidArgument(fmt::format("{} must be in [0, 2^40], got {}", name, n.value()));
    }
    return Status::Ok();
  };
  KVTOPO_RETURN_IF_ERROR(in_range(step.num_new_tokens, "num_new_tokens"));
  KVTOPO_RETURN_IF_ERROR(in_range(step.num_new_computed_tokens, "num_new_computed_tokens"));
  KVTOPO_RETURN_IF_ERROR(in_range(step.num_lookahead_tokens, "num_lookahead_tokens"));
  KVTOPO_RETURN_IF_ERROR(
      in_range(step.num_external_computed_tokens, "num_external_computed_tokens"));
  KVTOPO_RETURN_IF_ERROR(in_range(step.num_encoder_tokens, "num_encoder_tokens"));
  const int64_t num_encoder = step.num_encoder_tokens.value();
  for (const Impl::Group& g : impl_->groups) {
    if (g.behavior != Behavior::kCross || num_encoder == 0) continue;
    const GroupGeometry& geo = g.spec.geometry;
    if (g.CeilBlocks(num_encoder) > geo.manager_table_width()) {
      return InvalidArgument(fmt::format(
          "num_encoder_tokens {} needs {} blocks of cache group {}, more than its block-table "
          "row of {} columns holds (an encoder-decoder model's rows are sized for the larger "
          "of max_model_len {} and the launch's max_num_batched_tokens {})",
          num_encoder, g.CeilBlocks(num_encoder), g.id.value(), geo.manager_table_width(),
          geo.max_model_len(), geo.max_encoder_tokens()));
    }
  }
  if (step.num_new_tokens.value() == 0 && step.num_external_computed_tokens.value() == 0) {
    return InvalidArgument(
        "num_new_tokens must be positive (0 only with num_external_computed_tokens)");
  }
  const int64_t num_hit = step.num_new_computed_tokens.value();
  if (num_hit == 0) return Status::Ok();
  if (step.computed == nullptr) {
    return InvalidArgument(
        "num_new_computed_tokens > 0 needs the prefix hits (computed, from GetComputedBlocks)");
  }
  if (step.computed->num_tokens.value() != num_hit) {
    return InvalidArgument(
        fmt::format("num_new_computed_tokens is {} but the prefix hits hold {} tokens", num_hit,
                    step.computed->num_tokens.value()));
  }
  if (st.num_computed != 0 || !HoldsNoColumns(st)) {
    return InvalidArgument(
        fmt::format("prefix hits (num_new_computed_tokens) are only accepted on a request's "
                    "first allocation; request {} is running",
                    st.id));
  }
  // Hits no eviction can have touched since this request's lookup need no block-by-block check
  // (their shape is checked regardless: it is O(groups)).
  const auto& rows = step.computed->blocks;
  bool shaped = rows.size() == impl_->groups.size();
  for (size_t gi = 0; shaped && gi < rows.size(); ++gi) {
    shaped = static_cast<int64_t>(rows[gi].size()) * impl_->groups[gi].bs == num_hit;
  }
  if (shaped && step.computed->stamp == impl_->StampOf(st, *step.computed)) return Status::Ok();
  return ValidateComputedBlocks(RequestId{st.id}, *step.computed);
}

bool KVCacheManager::AllocateSlotsAt(RequestState& st, const SlotRequest& step) {
  Impl& m = *impl_;
  const int64_t num_new = step.num_new_tokens.value();
  const int64_t num_new_computed = step.num_new_computed_tokens.value();
  const int64_t num_external = step.num_external_computed_tokens.value();
  const int64_t num_encoder = step.num_encoder_tokens.value();
  // Checked by AllocateSlots (CheckSlotRequest) or the batch calls.
  KVTOPO_CHECK(num_new >= 0 && num_new_computed >= 0 && num_external >= 0 && num_encoder >= 0);
  KVTOPO_CHECK(num_new_computed == 0 || step.computed != nullptr);
  const int64_t L = m.options.max_model_len;
  const size_t num_groups = m.groups.size();
  auto hits = [&](size_t gi) -> std::span<const BlockId> {
    if (step.computed == nullptr || num_new_computed == 0) return {};
    return step.computed->blocks[gi];
  };

  const int64_t local = st.num_computed + num_new_computed;
  const int64_t total_computed = std::min(local + num_external, L);
  const int64_t free = m.pool.num_free_blocks();
  if (step.full_sequence_must_fit) {
    const int64_t n_full = std::min<int64_t>(static_cast<int64_t>(st.tokens.size()), L);
    int64_t needed = 0;
    for (size_t gi = 0; gi < num_groups; ++gi) {
      needed += m.NumBlocksToAllocate(m.groups[gi], st.rows[gi], n_full, hits(gi), total_computed,
                                      n_full, /*cap=*/true, num_encoder);
    }
    if (needed > free) {
      st.quiet = QuietWindow{};
      return false;
    }
  }
  // The engine's scheduler keeps a request's tokens within max_model_len; slots are capped there
  // as the engine caps them, and so is the recurrent align row, which num_main sizes, so a caller
  // asking for more cannot grow a row past its block-table width.
  const int64_t num_main = std::min(total_computed + num_new, L);
  const int64_t need_slots =
      std::min(total_computed + num_new + step.num_lookahead_tokens.value(), L);

  // Free out-of-window blocks first so this step can reuse them.
  for (size_t gi = 0; gi < num_groups; ++gi) {
    m.RemoveSkippedBlocks(m.groups[gi], st.rows[gi], total_computed);
  }
  int64_t needed = 0;
  for (size_t gi = 0; gi < num_groups; ++gi) {
    needed += m.NumBlocksToAllocate(m.groups[gi], st.rows[gi], need_slots, hits(gi), total_computed,
                                    num_main, /*cap=*/false, num_encoder);
  }
  if (needed > m.pool.num_free_blocks()) {
    st.quiet = QuietWindow{};  // out-of-window blocks may have been released: recompute later
    return false;
  }
  st.last_quiet = false;

  // Take every group's hits before any fresh allocation, which could otherwise pop (and evict)
  // an evictable hit block of a later group from the free list.
  for (size_t gi = 0; gi < num_groups; ++gi) {
    Row& row = st.rows[gi];
    row.update_from = static_cast<int64_t>(row.blocks.size());
    if (num_new_computed > 0 || (num_external > 0 && !row.allocated && row.blocks.empty())) {
      m.AllocateNewComputedBlocks(m.groups[gi], row, hits(gi), total_computed);
    }
  }
  if (!st.running) ++m.num_running;
  // Then every group's external tokens, group by group, before any new token's block (the
  // engine's order, but with every hit already taken).
  if (num_external > 0) {
    for (size_t gi = 0; gi < num_groups; ++gi) {
      if (!st.rows[gi].allocated) {
        m.AllocateExternalBlocks(m.groups[gi], st.rows[gi], total_computed, num_external);
      }
    }
  }
  for (size_t gi = 0; gi < num_groups; ++gi) {
    Row& row = st.rows[gi];
    row.appended_from = static_cast<int64_t>(row.blocks.size());
    m.AllocateNewBlocks(m.groups[gi], row, need_slots, num_main, num_encoder);
  }
  if (m.caching() && !step.delay_cache_blocks) {
    // Commit only known tokens, never unverified drafts; hybrids cache at hit granularity.
    int64_t n = std::min<int64_t>(num_main, static_cast<int64_t>(st.tokens.size()));
    if (num_groups > 1) {
      n = std::has_single_bit(static_cast<uint64_t>(m.alignment)) ? n & ~(m.alignment - 1)
                                                                  : n / m.alignment * m.alignment;
    }
    for (size_t gi = 0; gi < num_groups; ++gi) {
      m.CacheBlocks(m.groups[gi], st.rows[gi], st, n);
    }
  }
  st.num_computed = local + num_external + num_new;
  st.running = true;
  m.ComputeQuietWindow(st, std::min(st.num_computed, L));
  return true;
}

Status KVCacheManager::ValidateComputedBlocks(RequestId request, const ComputedBlocks& hits) const {
  const Impl& m = *impl_;
  const RequestState* found = const_cast<Impl&>(m).Find(request);
  if (found == nullptr) return UnknownRequest(request);
  const RequestState& st = *found;
  if (hits.blocks.size() != m.groups.size()) {
    return InvalidArgument(fmt::format("computed blocks hold {} groups; the manager has {}",
                                       hits.blocks.size(), m.groups.size()));
  }
  for (size_t gi = 0; gi < m.groups.size(); ++gi) {
    const Impl::Group& g = m.groups[gi];
    const auto& row = hits.blocks[gi];
    const int64_t columns = static_cast<int64_t>(row.size());
    if (columns * g.bs != hits.num_tokens.value() ||
        columns * g.hashes_per_block > static_cast<int64_t>(st.hashes.size())) {
      return InvalidArgument(fmt::format(
          "computed blocks of group {} ({} columns) do not cover the hit's {} tokens of request "
          "{}'s hashed prefix; pass the result of GetComputedBlocks for this request",
          gi, columns, hits.num_tokens.value(), request.value()));
    }
    // Skipped columns (windows, recurrent checkpoints) are a leading run of nulls.
    bool seen_block = false;
    for (int64_t j = 0; j < columns; ++j) {
      const BlockId b = row[j];
      if (b == kNullBlock) {
        if (seen_block || g.behavior == Behavior::kFull) {
          return InvalidArgument(
              fmt::format("computed blocks of group {} hold the null block at column {}", gi, j));
        }
        continue;
      }
      seen_block = true;
      if (b.value() < 0 || b.value() >= m.pool.num_blocks()) {
        return InvalidArgument(fmt::format("computed block {} is not in the pool", b.value()));
      }
      const BlockHash hash = m.CoarseHash(g, st, j);
      if (!m.pool.CachesAs(b, hash, g.id)) {
        return InvalidArgument(fmt::format(
            "stale prefix hits: block {} (group {}, column {}) no longer caches request {}'s "
            "content; call get_computed_blocks again",
            b.value(), gi, j, request.value()));
      }
    }
  }
  return Status::Ok();
}

void KVCacheManager::AppendUpdates(const RequestState& st, bool ok, BatchResult& out) const {
  for (const Row& row : st.rows) {
    // A failed request reports no change: column 0, no ids.
    const int64_t from = ok ? FirstChangedColumn(st, row) : 0;
    const size_t n = ok ? row.blocks.size() - static_cast<size_t>(from) : 0;
    if (n > 0) {  // memcpy wants non-null pointers even for 0 bytes (an empty output has none)
      const size_t at = out.block_ids.size();
      out.block_ids.resize(at + n);
      // BlockId is an int32 wrapper: the row's tail is copied as plain ids.
      static_assert(sizeof(BlockId) == sizeof(int32_t));
      std::memcpy(out.block_ids.data() + at, row.blocks.data() + from, n * sizeof(int32_t));
    }
    out.first_column.push_back(static_cast<int32_t>(from));
    out.offsets.push_back(static_cast<int32_t>(out.block_ids.size()));
  }
}

namespace {

void ClearBatch(KVCacheManager::BatchResult& out, size_t n) {
  out.ok.clear();
  out.num_computed.clear();
  out.offsets.clear();
  out.first_column.clear();
  out.block_ids.clear();
  out.num_failed = 0;
  out.ok.reserve(n);
  out.offsets.push_back(0);
}

}  // namespace

Status KVCacheManager::ResolveBatch(std::span<const RequestId> requests, bool admission) {
  Impl& m = *impl_;
  std::vector<int32_t>& slots = m.batch_slots;
  slots.resize(requests.size());
  // Admission and frees must name each request once: stamp the states seen in this batch.
  const uint64_t mark = ++m.batch_mark;
  for (size_t i = 0; i < requests.size(); ++i) {
    slots[i] = m.index.Find(requests[i].value());
    if (slots[i] < 0) [[unlikely]] {
      return NotFound(fmt::format("request {} of the batch (index {}) is not registered",
                                  requests[i].value(), i));
    }
    RequestState& st = m.states[slots[i]];
    if (!admission) continue;
    if (st.batch_mark == mark) {
      return InvalidArgument(
          fmt::format("request {} appears twice in the batch (index {})", requests[i].value(), i));
    }
    st.batch_mark = mark;
  }
  return Status::Ok();
}

namespace {

Status CheckCounts(std::span<const int32_t> counts, size_t n, const char* what, int32_t min) {
  if (counts.size() != n) {
    return InvalidArgument(
        fmt::format("{} holds {} values for {} requests", what, counts.size(), n));
  }
  for (size_t i = 0; i < n; ++i) {
    if (counts[i] < min) [[unlikely]] {
      return InvalidArgument(fmt::format("{}[{}] must be in [{}, {}], got {}", what, i, min,
                                         std::numeric_limits<int32_t>::max(), counts[i]));
    }
  }
  return Status::Ok();
}

}  // namespace

Status KVCacheManager::AllocateSlotsBatch(std::span<const RequestId> requests,
                                          std::span<const int32_t> num_new_tokens,
                                          std::span<const int32_t> num_lookahead_tokens,
                                          BatchResult& out) {
  const size_t n = requests.size();
  KVTOPO_RETURN_IF_ERROR(CheckCounts(num_new_tokens, n, "num_new_tokens", 1));
  if (!num_lookahead_tokens.empty()) {
    KVTOPO_RETURN_IF_ERROR(CheckCounts(num_lookahead_tokens, n, "num_lookahead_tokens", 0));
  }
  KVTOPO_RETURN_IF_ERROR(ResolveBatch(requests));
  ClearBatch(out, n);
  for (size_t i = 0; i < n; ++i) {
    RequestState& st = impl_->states[impl_->batch_slots[i]];
    const SlotRequest step{.num_new_tokens = TokenCount{num_new_tokens[i]},
                           .num_lookahead_tokens = TokenCount{
                               num_lookahead_tokens.empty() ? 0 : num_lookahead_tokens[i]}};
    const bool ok = impl_->QuietStep(st, step) || AllocateSlotsAt(st, step);
    out.ok.push_back(ok ? 1 : 0);
    out.num_failed += ok ? 0 : 1;
    AppendUpdates(st, ok, out);
  }
  return Status::Ok();
}

Status KVCacheManager::AdmitBatch(std::span<const RequestId> requests,
                                  std::span<const int32_t> num_new_tokens,
                                  bool full_sequence_must_fit, BatchResult& out) {
  const size_t n = requests.size();
  if (!num_new_tokens.empty()) {
    KVTOPO_RETURN_IF_ERROR(CheckCounts(num_new_tokens, n, "num_new_tokens", 1));
  }
  KVTOPO_RETURN_IF_ERROR(ResolveBatch(requests, /*admission=*/true));
  for (size_t i = 0; i < n; ++i) {
    const RequestState& st = impl_->states[impl_->batch_slots[i]];
    if (st.running || st.num_computed != 0 || !HoldsNoColumns(st)) {
      return InvalidArgument(fmt::format("admission: request {} (index {}) is already running",
                                         requests[i].value(), i));
    }
    if (num_new_tokens.empty() && st.tokens.empty()) {
      return InvalidArgument(fmt::format("admission: request {} (index {}) has no prompt tokens",
                                         requests[i].value(), i));
    }
  }
  ClearBatch(out, n);
  ComputedBlocks& hits = impl_->admit_hits;
  for (size_t i = 0; i < n; ++i) {
    RequestState& st = impl_->states[impl_->batch_slots[i]];
    impl_->FindHits(st, hits);  // the hits stay inside this call: no stamp to check them by
    const int64_t hit = hits.num_tokens.value();
    const int64_t rest = static_cast<int64_t>(st.tokens.size()) - hit;
    const SlotRequest step{
        .num_new_tokens = TokenCount{num_new_tokens.empty() ? rest : num_new_tokens[i]},
        .num_new_computed_tokens = TokenCount{hit},
        .computed = &hits,
        .full_sequence_must_fit = full_sequence_must_fit};
    const bool ok = AllocateSlotsAt(st, step);
    out.ok.push_back(ok ? 1 : 0);
    out.num_computed.push_back(static_cast<int32_t>(ok ? hit : 0));
    out.num_failed += ok ? 0 : 1;
    AppendUpdates(st, ok, out);
  }
  return Status::Ok();
}

Status KVCacheManager::FreeBatch(std::span<const RequestId> requests) {
  KVTOPO_RETURN_IF_ERROR(ResolveBatch(requests, /*admission=*/true));
  for (RequestId id : requests) impl_->Release(id);
  return Status::Ok();
}

Status KVCacheManager::AppendTokensBatch(std::span<const RequestId> requests,
                                         std::span<const int32_t> token_ids,
                                         std::span<const int32_t> counts) {
  const size_t n = requests.size();
  size_t total = n;
  if (!counts.empty()) {
    KVTOPO_RETURN_IF_ERROR(CheckCounts(counts, n, "counts", 0));
    total = 0;
    for (int32_t c : counts) total += static_cast<size_t>(c);
  }
  if (total != token_ids.size()) {
    return InvalidArgument(
        fmt::format("token_ids holds {} tokens; the counts add up to {}", token_ids.size(), total));
  }
  KVTOPO_RETURN_IF_ERROR(ResolveBatch(requests));
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t count = counts.empty() ? 1 : static_cast<size_t>(counts[i]);
    RequestState& st = impl_->states[impl_->batch_slots[i]];
    impl_->Append(st, token_ids.subspan(at, count));
    at += count;
  }
  return Status::Ok();
}

Status KVCacheManager::Free(RequestId request) {
  if (!impl_->index.Contains(request.value())) return UnknownRequest(request);
  impl_->Release(request);
  return Status::Ok();
}

Status KVCacheManager::Preempt(RequestId request) {
  Impl& m = *impl_;
  RequestState* st = m.Find(request);
  if (st == nullptr) return UnknownRequest(request);
  m.ReleaseRows(*st);
  st->num_computed = 0;
  ++st->num_preemptions;
  return Status::Ok();
}

void KVCacheManager::NewStep() { impl_->recurrent_cached_this_step.clear(); }

Status KVCacheManager::RemoveSkippedBlocks(RequestId request, TokenCount total_computed_tokens) {
  Impl& m = *impl_;
  RequestState* st = m.Find(request);
  if (st == nullptr) return UnknownRequest(request);
  if (total_computed_tokens.value() < 0) {
    return InvalidArgument(fmt::format("total_computed_tokens must be non-negative, got {}",
                                       total_computed_tokens.value()));
  }
  const int64_t n = std::min(total_computed_tokens.value(), m.options.max_model_len);
  for (size_t gi = 0; gi < m.groups.size(); ++gi) {
    m.RemoveSkippedBlocks(m.groups[gi], st->rows[gi], n);
  }
  st->quiet = QuietWindow{};  // rows changed outside AllocateSlots
  return Status::Ok();
}

Status KVCacheManager::CacheBlocks(RequestId request, TokenCount num_computed_tokens) {
  Impl& m = *impl_;
  RequestState* st = m.Find(request);
  if (st == nullptr) return UnknownRequest(request);
  if (num_computed_tokens.value() < 0) {
    return InvalidArgument(fmt::format("num_computed_tokens must be non-negative, got {}",
                                       num_computed_tokens.value()));
  }
  if (!m.caching()) return Status::Ok();
  int64_t n = std::min<int64_t>({num_computed_tokens.value(),
                                 static_cast<int64_t>(st->tokens.size()), m.options.max_model_len});
  if (m.groups.size() > 1) n = n / m.alignment * m.alignment;
  for (size_t gi = 0; gi < m.groups.size(); ++gi) {
    m.CacheBlocks(m.groups[gi], st->rows[gi], *st, n);
  }
  st->quiet = QuietWindow{};
  return Status::Ok();
}

Status KVCacheManager::EvictBlocks(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    if (b.value() < 0 || b.value() >= impl_->pool.num_blocks()) {
      return InvalidArgument(fmt::format("block id {} is not in the pool [0, {})", b.value(),
                                         impl_->pool.num_blocks()));
    }
  }
  for (BlockId b : blocks) impl_->pool.EvictCached(b);
  return Status::Ok();
}

Status KVCacheManager::GetNumCommonPrefixBlocks(RequestId request,
                                                std::vector<int64_t>& out) const {
  const Impl& m = *impl_;
  const RequestState* st = const_cast<Impl&>(m).Find(request);
  if (st == nullptr) return UnknownRequest(request);
  out.assign(m.groups.size(), 0);
  // Without prefix caching no block is shared: the engine's coordinator answers 0 outright
  // (a single running request's blocks would otherwise all count).
  if (!m.caching()) return Status::Ok();
  for (size_t gi = 0; gi < m.groups.size(); ++gi) {
    if (m.groups[gi].behavior != Behavior::kFull) continue;
    int64_t count = 0;
    for (BlockId b : st->rows[gi].blocks) {
      if (b == kNullBlock || m.pool.ref_count(b) != m.num_running) break;
      ++count;
    }
    out[gi] = count;
  }
  return Status::Ok();
}

std::vector<BlockId> KVCacheManager::TakeNewBlockIds() {
  std::vector<BlockId> out;
  out.swap(impl_->new_block_ids);
  return out;
}

std::vector<KVCacheEvent> KVCacheManager::TakeEvents() {
  std::vector<KVCacheEvent> out;
  out.swap(impl_->events);
  return out;
}

Status KVCacheManager::EnableResidencyMetrics(const ResidencyMetricsOptions& options) {
  return impl_->pool.EnableResidencyMetrics(options);
}

std::vector<BlockResidencyEvent> KVCacheManager::TakeResidencyEvents() {
  return impl_->pool.TakeResidencyEvents();
}

uint64_t KVCacheManager::residency_events_dropped() const {
  return impl_->pool.residency_events_dropped();
}

std::optional<PrefixCacheStats> KVCacheManager::MakePrefixCacheStats() {
  if (!impl_->options.log_stats) return std::nullopt;
  return impl_->pool.TakeStats();
}

int64_t KVCacheManager::scheduler_block_size() const { return impl_->alignment; }
int64_t KVCacheManager::hash_block_size() const { return impl_->options.hash_block_size; }
int64_t KVCacheManager::max_model_len() const { return impl_->options.max_model_len; }
int64_t KVCacheManager::num_preemptions(RequestId request) const {
  return impl_->State(request).num_preemptions;
}

// ---- KVCacheInspector ------------------------------------------------------------------------

std::vector<BlockId> KVCacheInspector::FreeQueue() const {
  return manager_.impl_->pool.FreeQueue();
}
int32_t KVCacheInspector::RefCount(BlockId block) const {
  return manager_.impl_->pool.ref_count(block);
}
std::optional<std::pair<BlockHash, GroupId>> KVCacheInspector::CachedAs(BlockId block) const {
  return manager_.impl_->pool.cached_as(block);
}
std::optional<BlockId> KVCacheInspector::Lookup(const BlockHash& hash, GroupId group) const {
  return manager_.impl_->pool.Lookup(hash, group);
}
std::span<const BlockHash> KVCacheInspector::RequestBlockHashes(RequestId request) const {
  return manager_.impl_->State(request).hashes;
}

void KVCacheManager::SetQuietPathEnabled(bool enabled) { impl_->quiet_path_enabled = enabled; }
bool KVCacheManager::BlockIsCached(BlockId block) const { return impl_->pool.is_cached(block); }

std::span<const BlockId> KVCacheManager::BlockIds(RequestId request, GroupId group) const {
  return impl_->State(request).rows.at(group.value()).blocks;
}

KVCacheManager::RowUpdate KVCacheManager::LastUpdate(RequestId request, GroupId group) const {
  return LastUpdateAt(impl_->State(request), group);
}

KVCacheManager::RowUpdate KVCacheManager::LastUpdateAt(const RequestState& st,
                                                       GroupId group) const {
  const Row& row = st.rows.at(group.value());
  const int64_t from = FirstChangedColumn(st, row);
  return RowUpdate{.first_column = from,
                   .block_ids = std::span<const BlockId>(row.blocks).subspan(from)};
}

std::span<const BlockId> KVCacheManager::AppendedBlocks(RequestId request, GroupId group) const {
  const RequestState& st = impl_->State(request);
  const Row& row = st.rows.at(group.value());
  const int64_t size = static_cast<int64_t>(row.blocks.size());
  const int64_t from = st.last_quiet ? size : std::min<int64_t>(row.appended_from, size);
  return std::span<const BlockId>(row.blocks).subspan(from);
}

TokenCount KVCacheManager::num_computed_tokens(RequestId request) const {
  return TokenCount{impl_->State(request).num_computed};
}
TokenCount KVCacheManager::num_tokens(RequestId request) const {
  return TokenCount{static_cast<int64_t>(impl_->State(request).tokens.size())};
}
int32_t KVCacheManager::num_blocks() const { return impl_->pool.num_blocks(); }
int32_t KVCacheManager::num_free_blocks() const { return impl_->pool.num_free_blocks(); }
double KVCacheManager::Usage() const { return impl_->pool.Usage(); }
const PrefixCacheStats& KVCacheManager::prefix_cache_stats() const { return impl_->pool.stats(); }
bool KVCacheManager::ResetPrefixCache() {
  // The sink blocks are held for the manager's life and never cached: a pool whose other blocks
  // are all free resets (the engine's BlockPool counts them as blocks not yet freed and refuses).
  int64_t sink_blocks = 0;
  for (const Impl::Group& g : impl_->groups) sink_blocks += g.spec.geometry.sink_blocks();
  return impl_->pool.ResetPrefixCache(sink_blocks);
}

std::span<const BlockId> KVCacheManager::sink_block_ids(GroupId group) const {
  return impl_->groups.at(group.value()).sink_blocks;
}

void KVCacheManager::CheckInvariants() const {
  const Impl& m = *impl_;
  m.pool.CheckInvariants();
  const int32_t n = m.pool.num_blocks();
  // Scratch kept between calls: tests and the simulator check after every step.
  std::vector<int32_t>& refs = m.check_refs;
  std::vector<int32_t>& owner_group = m.check_owner_group;
  std::vector<int64_t>& seen_in_row = m.check_seen_in_row;
  refs.assign(n, 0);
  owner_group.assign(n, -1);
  seen_in_row.assign(n, -1);
  int64_t row_serial = 0;
  std::vector<std::pair<int64_t, int32_t>> live;
  m.index.ForEach([&](int64_t id, int32_t slot) { live.emplace_back(id, slot); });
  for (const auto& [id, slot] : live) {
    const RequestState& st = m.states[slot];
    KVTOPO_CHECK(st.live && st.id == id);
    KVTOPO_CHECK(st.rows.size() == m.groups.size());
    for (size_t gi = 0; gi < m.groups.size(); ++gi) {
      const Impl::Group& g = m.groups[gi];
      const Row& row = st.rows[gi];
      ++row_serial;
      KVTOPO_CHECK_MSG(
          static_cast<int64_t>(row.blocks.size()) <= g.spec.geometry.manager_table_width(),
          fmt::format("request {} group {}: row of {} columns exceeds the block-table "
                      "width {}",
                      id, gi, row.blocks.size(), g.spec.geometry.manager_table_width()));
      int64_t resident = 0;
      for (BlockId b : row.blocks) {
        if (b == kNullBlock) continue;
        const int32_t i = b.value();
        KVTOPO_CHECK(i > 0 && i < n);
        KVTOPO_CHECK_MSG(seen_in_row[i] != row_serial, "a block appears twice in one row");
        seen_in_row[i] = row_serial;
        KVTOPO_CHECK_MSG(owner_group[i] == -1 || owner_group[i] == static_cast<int32_t>(gi),
                         "a block is held by two groups");
        owner_group[i] = static_cast<int32_t>(gi);
        ++refs[i];
        ++resident;
      }
      if (g.behavior == Behavior::kRecurrentNone) {
        KVTOPO_CHECK(resident <= 1 + g.spec_blocks);
      }
    }
  }
  for (size_t gi = 0; gi < m.groups.size(); ++gi) {
    for (BlockId b : m.groups[gi].sink_blocks) {
      const int32_t i = b.value();
      KVTOPO_CHECK(i > 0 && i < n);
      KVTOPO_CHECK_MSG(owner_group[i] == -1, "a sink block is held by a request's row");
      owner_group[i] = static_cast<int32_t>(gi);
      ++refs[i];
    }
  }
  for (int32_t i = 1; i < n; ++i) {
    KVTOPO_CHECK_MSG(refs[i] == m.pool.ref_count(BlockId{i}),
                     fmt::format("block {}: {} row references but ref count {}", i, refs[i],
                                 m.pool.ref_count(BlockId{i})));
  }
}

}  // namespace kvtopo
