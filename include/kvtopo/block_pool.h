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
//   block. Duplicates among blocks in use are allowed (a newly full block is not deduplicated,
//   so block tables stay append-only); a lookup returns one of them. A cached block stays
//   hit-able after it is freed and loses its hash lazily, when it is reallocated, or when a new
//   block caches the same (hash, group): the new block then takes the free block's entry.
//
// Invariants (CheckInvariants): a block is in the free list iff its ref count is 0; the free
// list is a well-formed cycle through the sentinel and its length is num_free_blocks(); every
// hashed block has exactly one map entry and every entry points at a block with that hash.
//
// Thread safety: none; one scheduler thread owns a pool.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
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

// A KV-cache event for prefix-aware routers (vLLM's BlockStored / BlockRemoved /
// AllBlocksCleared). Stored: the hashes of consecutive newly cached blocks of one group, the
// hash of the block before the first (absent for a request's first block), their token ids and
// the group's block size. Removed: hashes that lost their cache entry.
struct KVCacheEvent {
  enum class Type { kBlockStored, kBlockRemoved, kAllBlocksCleared };
  Type type = Type::kBlockStored;
  GroupId group{0};
  std::vector<BlockHash> block_hashes;
  std::optional<BlockHash> parent_block_hash;
  std::vector<int32_t> token_ids;
  int64_t block_size = 0;  // tokens per block (the group's manager block)
  int64_t lora_id = 0;
  bool operator==(const KVCacheEvent&) const = default;
};
// The storage medium every event names: kvtopo manages device pages.
inline constexpr const char* kKVCacheEventMedium = "GPU";

class BlockPool {
 public:
  // `num_blocks` includes the null block; it must be at least 1.
  BlockPool(int32_t num_blocks, bool enable_caching);

  int32_t num_blocks() const { return static_cast<int32_t>(meta_.size()); }
  int32_t num_free_blocks() const { return num_free_; }
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
  // A hint that Lookup(hash, group) follows soon: starts loading its map slot.
  void PrefetchLookup(const BlockHash& hash, GroupId group) const {
    if (caching_) __builtin_prefetch(&map_[SlotOf(hash, group.value())]);
  }
  // Records that `block` (in use, not yet hashed) holds the full block with this hash.
  void Cache(BlockId block, const BlockHash& hash, GroupId group);
  // Clears every hash; succeeds only when every non-null block is free.
  [[nodiscard]] bool ResetPrefixCache();
  // Drops the block's hash, if any (in use or free); the block stays where it is.
  void EvictCached(BlockId block);

  // Events are recorded into `sink` while it is set (nullptr: off, the default).
  void set_event_sink(std::vector<KVCacheEvent>* sink) { events_ = sink; }

  void RecordLookup(TokenCount query_tokens, TokenCount hit_tokens, bool preempted = false);
  const PrefixCacheStats& stats() const { return stats_; }
  // Returns the counts since the last call and starts new ones.
  PrefixCacheStats TakeStats();

  int32_t ref_count(BlockId block) const { return meta_[Index(block)].ref_count; }
  bool is_cached(BlockId block) const { return meta_[Index(block)].group >= 0; }
  // The (hash, group) a block is cached under, if any.
  std::optional<std::pair<BlockHash, GroupId>> cached_as(BlockId block) const;
  // The free list from head (next to be allocated) to tail.
  std::vector<BlockId> FreeQueue() const;

  void CheckInvariants() const;

 private:
  friend class BlockPoolPeer;
  struct Meta {
    int32_t prev = -1;  // free-list links; -1 when not in the list
    int32_t next = -1;
    int32_t ref_count = 0;
    int32_t group = -1;  // cached under (hash, group) when >= 0
    BlockHash hash;
  };
  struct Slot {
    BlockHash hash;
    int32_t group = -1;  // -1: empty slot
    int32_t block = 0;
  };

  static int32_t Index(BlockId block) { return block.value(); }
  int32_t sentinel() const { return static_cast<int32_t>(meta_.size()); }
  int32_t& Next(int32_t i) { return i == sentinel() ? head_ : meta_[i].next; }
  int32_t& Prev(int32_t i) { return i == sentinel() ? tail_ : meta_[i].prev; }
  void Unlink(int32_t i);
  void PushBack(int32_t i);
  void Evict(int32_t i);
  size_t SlotOf(const BlockHash& hash, int32_t group) const {
    // The hash is already uniform; fold the group in so groups do not share probe runs.
    return (hash.low ^ (static_cast<uint64_t>(group) * 0x9E3779B97F4A7C15ull)) & map_mask_;
  }
  void MapErase(int32_t block);

  std::vector<Meta> meta_;
  int32_t head_;  // first free block, or the sentinel when empty
  int32_t tail_;
  int32_t num_free_ = 0;
  bool caching_;
  std::vector<Slot> map_;  // power-of-two capacity, linear probing, backward-shift deletion
  size_t map_mask_ = 0;
  int32_t map_size_ = 0;
  PrefixCacheStats stats_;
  std::vector<KVCacheEvent>* events_ = nullptr;
};

// The hot calls are defined here so that the manager's loops inline them.

inline void BlockPool::Unlink(int32_t i) {
  Meta& m = meta_[i];
  Next(m.prev) = m.next;
  Prev(m.next) = m.prev;
  m.prev = m.next = -1;
  --num_free_;
}

inline void BlockPool::PushBack(int32_t i) {
  Meta& m = meta_[i];
  m.prev = tail_;
  m.next = sentinel();
  Next(tail_) = i;
  tail_ = i;
  ++num_free_;
}

inline void BlockPool::FreeOne(BlockId block) {
  const int32_t i = Index(block);
  if (i == 0) return;
  KVTOPO_CHECK_MSG(meta_[i].ref_count > 0, "double free of a block");
  if (--meta_[i].ref_count == 0) PushBack(i);
}

inline std::optional<BlockId> BlockPool::Lookup(const BlockHash& hash, GroupId group) const {
  if (!caching_) return std::nullopt;
  const int32_t g = group.value();
  for (size_t s = SlotOf(hash, g);; s = (s + 1) & map_mask_) {
    const Slot& slot = map_[s];
    if (slot.group < 0) return std::nullopt;
    if (slot.group == g && slot.hash == hash) return BlockId{slot.block};
  }
}

}  // namespace kvtopo
