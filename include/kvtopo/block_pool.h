// BlockPool: the shared pool of physical KV pages (block ids) that every cache group allocates
// from, with an LRU free list and a prefix-cache map.
//
// - Block 0 is the null block: the placeholder for skipped, freed or padded positions. It is
//   never allocated, freed, hashed or counted.
// - Block metadata lives in one contiguous vector indexed by block id. Free blocks form an
//   intrusive doubly linked list (links are block ids): allocation pops from the head (least
//   recently freed first), freeing appends to the tail, a prefix hit unlinks from the middle in
//   O(1). The list holds truly free blocks and evictable cached ones (ref count 0, still hashed).
// - The prefix-cache map is a flat open-addressing table from (128-bit block hash, group id) to
//   block, 8 bytes a slot. A cached block stays hit-able after it is freed and loses its hash
//   lazily, when it is reallocated or evicted. A newly full block is not deduplicated (block
//   tables stay append-only): several blocks may cache the same (hash, group), as in vLLM's
//   BlockHashToBlockMap, and a lookup returns the one that cached it first of those still
//   cached. The map's entry names that block; the later ones follow it in a chain in caching
//   order (dups_, allocated when the first duplicate is cached), so evicting any of them is O(1)
//   besides the map's own erase.
//
// Invariants (CheckInvariants): a block is in the free list iff its ref count is 0; the free
// list is a well-formed cycle through the sentinel and its length is num_free_blocks(); every
// (hash, group) cached has exactly one map entry, naming the first of its blocks, whose chain
// holds the others in caching order.
//
// Thread safety: none; one scheduler thread owns a pool.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kvtopo/block_hash.h"
#include "kvtopo/ids.h"
#include "kvtopo/status.h"

namespace kvtopo {

// Prefix-cache lookups as vLLM's PrefixCacheStats counts them: lookups for requests that were
// never preempted in the first three fields, lookups for preempted (resumed) requests apart.
struct PrefixCacheStats {
  bool reset = false;        // the prefix cache was reset since the last snapshot
  int64_t requests = 0;      // lookups made
  int64_t query_tokens = 0;  // tokens asked for
  int64_t hit_tokens = 0;    // tokens found
  int64_t preempted_requests = 0;
  int64_t preempted_query_tokens = 0;
  int64_t preempted_hit_tokens = 0;
  bool operator==(const PrefixCacheStats&) const = default;
};

// What, besides its token ids, keyed one stored block's hash, as vLLM's BlockStored.extra_keys
// lists it per block (the adapter is the event's lora_id).
struct BlockEventKeys {
  // Each multimodal item overlapping the block: (identifier, item offset - block start).
  std::vector<std::pair<std::string, int64_t>> mm_items;
  std::string cache_salt;  // a request's first block only
  // The digest of the prompt embeddings the block holds (BlockHashExtraKeys::block_keys; a
  // block spanning several hash blocks: their CombineBlockHashes).
  std::optional<BlockHash> content_digest;
  bool empty() const { return mm_items.empty() && cache_salt.empty() && !content_digest; }
  bool operator==(const BlockEventKeys&) const = default;
};

// A KV-cache event for prefix-aware routers (vLLM's BlockStored / BlockRemoved /
// AllBlocksCleared). Stored: the hashes of consecutive newly cached blocks of one group, the
// hash of the block before the first (absent for a request's first block), their token ids, the
// group's block size and, when any block has some, each block's extra keys. Removed: hashes that
// lost their cache entry.
struct KVCacheEvent {
  enum class Type { kBlockStored, kBlockRemoved, kAllBlocksCleared };
  Type type = Type::kBlockStored;
  GroupId group{0};
  std::vector<BlockHash> block_hashes;
  std::optional<BlockHash> parent_block_hash;
  std::vector<int32_t> token_ids;
  int64_t block_size = 0;  // tokens per block (the group's manager block)
  int64_t lora_id = 0;
  std::vector<BlockEventKeys> extra_keys;  // one per block_hashes entry, or none at all
  bool operator==(const KVCacheEvent&) const = default;
};
// The storage medium every event names: kvtopo manages device pages.
inline constexpr const char* kKVCacheEventMedium = "GPU";

// KV-cache residency metrics, as vLLM's KVCacheMetricsCollector samples them under
// --kv-cache-metrics: a share of the blocks the pool hands out is followed from allocation; a
// followed block's prefix hits are timed; when it leaves the pool's cache (handed out again with
// prefix caching on, or dropped by EvictCached) one event records how long it lived, how long
// since its last hit (since its allocation without one) and the gaps between its last four hits.
struct BlockResidencyEvent {
  double lifetime_seconds = 0;
  double idle_seconds = 0;
  int32_t num_reuse_gaps = 0;  // 0 to 3: the first num_reuse_gaps of reuse_gaps_seconds
  std::array<double, 3> reuse_gaps_seconds{};
  bool operator==(const BlockResidencyEvent&) const = default;
};

struct ResidencyMetricsOptions {
  double sample_rate = 0.01;        // (0, 1]: the chance that an allocated block is followed
  uint64_t seed = 0;                // the sampling generator's seed; 0: one drawn from the system
  int64_t (*clock_ns)() = nullptr;  // monotonic nanoseconds; nullptr: std::chrono::steady_clock
};
// Events wait in the pool until taken; past this many the newest are dropped (and counted), so
// a caller that never takes them holds bounded memory.
inline constexpr size_t kMaxPendingResidencyEvents = 1 << 16;

class BlockPool {
 public:
  // `num_blocks` includes the null block; it must be at least 1.
  BlockPool(int32_t num_blocks, bool enable_caching);
  ~BlockPool();
  BlockPool(BlockPool&&) noexcept;
  BlockPool& operator=(BlockPool&&) noexcept;

  int32_t num_blocks() const { return num_blocks_; }
  int32_t num_free_blocks() const { return num_free_; }
  // How many times a block has lost its cached hash (evictions, resets): a lookup's hits are all
  // still cached while this is unchanged.
  uint64_t evictions() const { return evictions_; }
  bool caching_enabled() const { return caching_; }
  // Fraction of the non-null blocks in use, in [0, 1].
  double Usage() const;

  // Pops `count` blocks from the head of the free list and appends them to `out`, evicting any
  // hash they still carry; ref counts go 0 -> 1. Returns false and changes nothing when fewer
  // than `count` blocks are free.
  [[nodiscard]] bool Allocate(int32_t count, std::vector<BlockId>& out);
  // One block; the pool must have a free block (checked).
  BlockId AllocateOne();

  // Prefix hit: takes a reference on each non-null block, unlinking free ones from the list.
  void Touch(std::span<const BlockId> blocks);
  // Drops one reference per non-null block; blocks reaching 0 go to the tail in this order.
  void Free(std::span<const BlockId> blocks_in_eviction_order);
  // Free() of the blocks in reverse order (a request's row: chain tails are evicted first).
  void FreeReversed(std::span<const BlockId> blocks);
  void FreeOne(BlockId block);

  // A cached block for (hash, group), if any. Does not take a reference.
  std::optional<BlockId> Lookup(const BlockHash& hash, GroupId group) const;
  // The longest prefix of `hashes` cached in `group`: writes the blocks to `out` (room for
  // hashes.size()) and returns how many; each is what Lookup would return.
  int64_t MatchPrefix(std::span<const BlockHash> hashes, GroupId group, BlockId* out) const;
  // Records that `block` (in use, not yet hashed) holds the full block with this hash.
  void Cache(BlockId block, const BlockHash& hash, GroupId group);
  // Cache(blocks[k], hashes[k], group) for every non-null block not cached yet, in order.
  void CacheRun(std::span<const BlockId> blocks, std::span<const BlockHash> hashes, GroupId group);
  // A hint that these hashes are looked up or cached in `group` soon: starts loading their
  // map slots (a memory-latency hint only; nothing changes).
  void PrefetchSlots(std::span<const BlockHash> hashes, GroupId group) const {
    if (!caching_) return;
    for (const BlockHash& h : hashes) __builtin_prefetch(&map_[SlotOf(h.low, group.value())]);
  }
  // How many of the non-null blocks are free (a prefix hit on them shrinks the free count).
  int64_t CountFree(std::span<const BlockId> blocks) const;
  // Clears every hash; succeeds only when every non-null block but the `held` its owner keeps
  // for the pool's life (attention sinks, never cached) is free.
  [[nodiscard]] bool ResetPrefixCache(int64_t held = 0);
  // Drops the block's hash, if any (in use or free); the block stays where it is.
  void EvictCached(BlockId block);

  // Events are recorded into `sink` while it is set (nullptr: off, the default).
  void set_event_sink(std::vector<KVCacheEvent>* sink) { events_ = sink; }

  // Residency metrics (BlockResidencyEvent): starts sampling the blocks allocated from now on,
  // dropping whatever an earlier call followed. Errors: a sample rate outside (0, 1].
  [[nodiscard]] Status EnableResidencyMetrics(const ResidencyMetricsOptions& options);
  bool residency_metrics_enabled() const { return residency_ != nullptr; }
  // The events since the last call (none when residency metrics are off).
  std::vector<BlockResidencyEvent> TakeResidencyEvents();
  // Events dropped because kMaxPendingResidencyEvents were waiting.
  uint64_t residency_events_dropped() const;

  void RecordLookup(TokenCount query_tokens, TokenCount hit_tokens, bool preempted = false);
  const PrefixCacheStats& stats() const { return stats_; }
  // Returns the counts since the last call and starts new ones.
  PrefixCacheStats TakeStats();

  int32_t ref_count(BlockId block) const { return meta_[Index(block)].ref_count; }
  // Whether `block` is cached under exactly (hash, group).
  bool CachesAs(BlockId block, const BlockHash& hash, GroupId group) const {
    const Meta& m = meta_[Index(block)];
    return m.group == group.value() && m.hash == hash;
  }
  bool is_cached(BlockId block) const { return meta_[Index(block)].group >= 0; }
  // The (hash, group) a block is cached under, if any.
  std::optional<std::pair<BlockHash, GroupId>> cached_as(BlockId block) const;
  // The free list from head (next to be allocated) to tail.
  std::vector<BlockId> FreeQueue() const;

  void CheckInvariants() const;

 private:
  // Block metadata; the free list links through prev/next, with meta_[num_blocks_] as the
  // list's sentinel (its next is the head, its prev the tail), so links need no special case.
  struct Meta {
    int32_t prev = -1;  // free-list links; -1 when not in the list
    int32_t next = -1;
    int32_t ref_count = 0;
    int32_t group = -1;  // cached under (hash, group) when >= 0
    BlockHash hash;
  };
  // A block's place among the blocks caching the same (hash, group): a circular list in caching
  // order whose head (the first, the map's entry) has head = true; prev = next = 0 for a block
  // that caches its content alone.
  struct Dup {
    int32_t prev = 0;
    int32_t next = 0;
    bool head = false;
  };
  // A map entry: 32 bits of the key (the hash's low word mixed with the group; its low bits are
  // the home slot) and the block. A key match is confirmed through the block's metadata (the
  // full hash), which a hit reads next anyway.
  struct Slot {
    uint32_t key = 0;
    int32_t block = 0;  // 0: empty slot (the null block is never cached)
  };

  static int32_t Index(BlockId block) { return block.value(); }
  int32_t sentinel() const { return num_blocks_; }
  void Unlink(int32_t i);
  // Takes block i out of the free list's links; the caller counts it.
  static void Detach(Meta* meta, int32_t i) {
    Meta& m = meta[i];
    meta[m.prev].next = m.next;
    meta[m.next].prev = m.prev;
    m.prev = m.next = -1;
  }
  // Cache() without the argument checks; the block is valid, in use and not cached.
  void Insert(int32_t i, const BlockHash& hash, int32_t group);
  template <bool kReversed>
  void FreeInOrder(std::span<const BlockId> blocks);
  void Evict(int32_t i);
  // The residency hooks, called only while residency metrics are on.
  struct Residency;
  void ResidencyAllocated(const BlockId* ids, int32_t count);
  void ResidencyTouched(std::span<const BlockId> blocks);
  static uint32_t KeyOf(uint64_t hash_low, int32_t group) {
    // The hash is already uniform; fold the group in so groups do not share probe runs.
    return static_cast<uint32_t>(hash_low ^ (static_cast<uint64_t>(group) * 0x9E3779B97F4A7C15ull));
  }
  // The capacity is at most 2^32 (num_blocks < 2^31), so the key's bits name any slot.
  size_t SlotOf(uint64_t hash_low, int32_t group) const {
    return KeyOf(hash_low, group) & map_mask_;
  }
  size_t HomeOf(const Slot& slot) const { return slot.key & map_mask_; }
  // Whether `slot` holds (hash, group), given key = KeyOf(hash.low, group). With the full hash
  // equal, equal keys mean equal groups (the key's group term, group * C with C odd, is a
  // bijection of the group's low 32 bits), so the group needs no load of its own.
  bool Matches(const Slot& slot, uint32_t key, const BlockHash& hash) const {
    return slot.key == key && meta_[slot.block].hash == hash;
  }
  void MapErase(int32_t block);
  // Caches block i after `head`'s chain (the map's entry for the same content stays `head`).
  void AppendDup(int32_t head, int32_t i);
  // Drops block i from the map: its entry, or its place in a chain.
  void Unmap(int32_t i);

  int32_t num_blocks_;
  std::vector<Meta> meta_;  // num_blocks_ + 1 entries: the blocks, then the sentinel
  int32_t num_free_ = 0;
  bool caching_;
  std::vector<Slot> map_;  // power-of-two capacity, linear probing, backward-shift deletion
  size_t map_mask_ = 0;
  int32_t map_size_ = 0;   // entries: distinct (hash, group) cached
  std::vector<Dup> dups_;  // num_blocks_ entries once a duplicate is cached; empty before
  uint64_t evictions_ = 0;
  PrefixCacheStats stats_;
  std::vector<KVCacheEvent>* events_ = nullptr;
  std::unique_ptr<Residency> residency_;
};

// The hot calls are defined here so that the manager's loops inline them.

inline void BlockPool::Unlink(int32_t i) {
  Detach(meta_.data(), i);
  --num_free_;
}

inline void BlockPool::Touch(std::span<const BlockId> blocks) {
  // The free count is kept in a local: a store through meta_ could alias the member.
  int32_t unlinked = 0;
  Meta* meta = meta_.data();
  for (BlockId b : blocks) {
    const int32_t i = Index(b);
    if (i == 0) continue;
    Meta& m = meta[i];
    if (m.ref_count == 0) {
      Detach(meta, i);
      ++unlinked;
    }
    ++m.ref_count;
  }
  num_free_ -= unlinked;
  if (residency_ != nullptr) [[unlikely]]
    ResidencyTouched(blocks);
}

inline void BlockPool::FreeOne(BlockId block) { FreeInOrder<false>({&block, 1}); }
inline void BlockPool::Free(std::span<const BlockId> blocks_in_eviction_order) {
  FreeInOrder<false>(blocks_in_eviction_order);
}
inline void BlockPool::FreeReversed(std::span<const BlockId> blocks) { FreeInOrder<true>(blocks); }

template <bool kReversed>
void BlockPool::FreeInOrder(std::span<const BlockId> blocks) {
  // Blocks reaching ref count 0 are chained after the current tail; the sentinel is relinked
  // once at the end.
  int32_t tail = meta_[sentinel()].prev;
  int32_t freed = 0;
  const size_t n = blocks.size();
  for (size_t k = 0; k < n; ++k) {
    const int32_t i = Index(blocks[kReversed ? n - 1 - k : k]);
    if (i == 0) continue;
    Meta& m = meta_[i];
    KVTOPO_CHECK_MSG(m.ref_count > 0, "double free of a block");
    if (--m.ref_count == 0) {
      m.prev = tail;
      meta_[tail].next = i;
      tail = i;
      ++freed;
    }
  }
  meta_[tail].next = sentinel();
  meta_[sentinel()].prev = tail;
  num_free_ += freed;
}

inline std::optional<BlockId> BlockPool::Lookup(const BlockHash& hash, GroupId group) const {
  if (!caching_) return std::nullopt;
  const int32_t g = group.value();
  const uint32_t key = KeyOf(hash.low, g);
  for (size_t s = key & map_mask_;; s = (s + 1) & map_mask_) {
    const Slot& slot = map_[s];
    if (slot.block == 0) return std::nullopt;
    if (Matches(slot, key, hash)) return BlockId{slot.block};
  }
}

inline int64_t BlockPool::MatchPrefix(std::span<const BlockHash> hashes, GroupId group,
                                      BlockId* out) const {
  if (!caching_) return 0;
  // The hashes are known up front: keep several map probes in flight (the map is usually out
  // of the core's caches, and a probe's latency dwarfs its work).
  constexpr size_t kAhead = 16;
  const int32_t g = group.value();
  const size_t n = hashes.size();
  PrefetchSlots(hashes.first(std::min(kAhead, n)), group);
  for (size_t k = 0; k < n; ++k) {
    if (k + kAhead < n) __builtin_prefetch(&map_[SlotOf(hashes[k + kAhead].low, g)]);
    const BlockHash& hash = hashes[k];
    const uint32_t key = KeyOf(hash.low, g);
    for (size_t s = key & map_mask_;; s = (s + 1) & map_mask_) {
      const Slot& slot = map_[s];
      if (slot.block == 0) return static_cast<int64_t>(k);
      if (Matches(slot, key, hash)) {
        out[k] = BlockId{slot.block};
        break;
      }
    }
  }
  return static_cast<int64_t>(n);
}

inline void BlockPool::Insert(int32_t i, const BlockHash& hash, int32_t g) {
  Meta& m = meta_[i];
  m.group = g;
  m.hash = hash;
  const uint32_t key = KeyOf(hash.low, g);
  size_t s = key & map_mask_;
  for (; map_[s].block != 0; s = (s + 1) & map_mask_) {
    if (Matches(map_[s], key, hash)) [[unlikely]] {
      // Content another block caches already: both stay cached, the first stays the entry.
      AppendDup(map_[s].block, i);
      return;
    }
  }
  map_[s] = Slot{.key = key, .block = i};
  ++map_size_;
}

inline void BlockPool::Cache(BlockId block, const BlockHash& hash, GroupId group) {
  const int32_t i = Index(block);
  KVTOPO_CHECK(caching_ && i > 0 && i < num_blocks_ && group.value() >= 0);
  KVTOPO_CHECK_MSG(meta_[i].group < 0, "a block is hashed twice");
  Insert(i, hash, group.value());
}

inline void BlockPool::CacheRun(std::span<const BlockId> blocks, std::span<const BlockHash> hashes,
                                GroupId group) {
  KVTOPO_CHECK(caching_ && group.value() >= 0 && blocks.size() <= hashes.size());
  // Each insert probes from the hash's home slot: start loading those a few blocks ahead.
  constexpr size_t kAhead = 4;
  const int32_t g = group.value();
  const size_t n = blocks.size();
  for (size_t k = 0; k < n; ++k) {
    if (k + kAhead < n) __builtin_prefetch(&map_[SlotOf(hashes[k + kAhead].low, g)]);
    const int32_t i = Index(blocks[k]);
    if (i == 0 || meta_[i].group >= 0) continue;
    Insert(i, hashes[k], g);
  }
}

inline int64_t BlockPool::CountFree(std::span<const BlockId> blocks) const {
  int64_t count = 0;
  for (BlockId b : blocks) count += (b.value() != 0 && meta_[Index(b)].ref_count == 0) ? 1 : 0;
  return count;
}

}  // namespace kvtopo
