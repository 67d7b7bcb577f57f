#include "kvtopo/block_pool.h"

#include <bit>

#include "kvtopo/status.h"

namespace kvtopo {

BlockPool::BlockPool(int32_t num_blocks, bool enable_caching)
    : num_blocks_(num_blocks), caching_(enable_caching) {
  KVTOPO_CHECK(num_blocks >= 1);
  meta_.resize(static_cast<size_t>(num_blocks) + 1);
  // Block 0 is the null block: never in the list. The list is 1, 2, ..., num_blocks - 1.
  const int32_t s = sentinel();
  for (int32_t i = 1; i < num_blocks; ++i) {
    meta_[i].prev = i - 1 == 0 ? s : i - 1;
    meta_[i].next = i + 1 == num_blocks ? s : i + 1;
  }
  meta_[s].next = num_blocks > 1 ? 1 : s;
  meta_[s].prev = num_blocks > 1 ? num_blocks - 1 : s;
  num_free_ = num_blocks - 1;
  // At most one entry per block; a load factor <= 1/2 keeps probe runs short.
  const size_t capacity = std::bit_ceil(static_cast<size_t>(num_blocks) * 2);
  map_.resize(capacity);
  map_mask_ = capacity - 1;
}

double BlockPool::Usage() const {
  const int32_t usable = num_blocks_ - 1;
  return usable == 0 ? 0.0 : 1.0 - static_cast<double>(num_free_) / usable;
}

void BlockPool::Evict(int32_t i) {
  if (meta_[i].group >= 0) {
    if (events_ != nullptr) [[unlikely]] {
      events_->push_back({.type = KVCacheEvent::Type::kBlockRemoved,
                          .group = GroupId{meta_[i].group},
                          .block_hashes = {meta_[i].hash}});
    }
    MapErase(i);
    ++evictions_;
    meta_[i].group = -1;
    meta_[i].hash = BlockHash{};
  }
}

bool BlockPool::Allocate(int32_t count, std::vector<BlockId>& out) {
  KVTOPO_CHECK(count >= 0);
  if (count > num_free_) return false;
  // Pass 1 follows the list from the head, recording the ids; blocks still cached are evicted
  // in pass 2, so their map slots start loading now and the evictions overlap.
  const size_t base = out.size();
  out.resize(base + count);
  BlockId* ids = out.data() + base;
  const bool prefetch = caching_ && map_size_ > 0;
  int32_t i = meta_[sentinel()].next;
  for (int32_t k = 0; k < count; ++k) {
    const Meta& m = meta_[i];
    if (prefetch && m.group >= 0) __builtin_prefetch(&map_[SlotOf(m.hash.low, m.group)]);
    ids[k] = BlockId{i};
    i = m.next;
  }
  meta_[sentinel()].next = i;
  meta_[i].prev = sentinel();
  num_free_ -= count;
  for (int32_t k = 0; k < count; ++k) {
    Meta& m = meta_[ids[k].value()];
    m.prev = m.next = -1;
    m.ref_count = 1;
    if (m.group >= 0) Evict(ids[k].value());
  }
  return true;
}

BlockId BlockPool::AllocateOne() {
  KVTOPO_CHECK(num_free_ > 0);
  const int32_t i = meta_[sentinel()].next;
  Unlink(i);
  Evict(i);
  meta_[i].ref_count = 1;
  return BlockId{i};
}

void BlockPool::MapErase(int32_t block) {
  const Meta& m = meta_[block];
  size_t s = SlotOf(m.hash.low, m.group);
  while (map_[s].block != block) {
    KVTOPO_CHECK(map_[s].block != 0);
    s = (s + 1) & map_mask_;
  }
  // Backward-shift deletion: pull later entries of the run into the hole when their home slot
  // does not lie cyclically in (hole, current].
  size_t hole = s;
  for (size_t j = (s + 1) & map_mask_; map_[j].block != 0; j = (j + 1) & map_mask_) {
    const size_t home = HomeOf(map_[j]);
    const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!stays) {
      map_[hole] = map_[j];
      hole = j;
    }
  }
  map_[hole] = Slot{};
  --map_size_;
}

bool BlockPool::ResetPrefixCache(int64_t held) {
  if (num_free_ != num_blocks_ - 1 - held) return false;
  for (Slot& slot : map_) slot = Slot{};
  map_size_ = 0;
  for (Meta& m : meta_) {
    m.group = -1;
    m.hash = BlockHash{};
  }
  stats_.reset = true;
  ++evictions_;
  if (events_ != nullptr) events_->push_back({.type = KVCacheEvent::Type::kAllBlocksCleared});
  return true;
}

void BlockPool::EvictCached(BlockId block) {
  const int32_t i = Index(block);
  KVTOPO_CHECK(i >= 0 && i < num_blocks_);
  if (i != 0) Evict(i);
}

std::optional<std::pair<BlockHash, GroupId>> BlockPool::cached_as(BlockId block) const {
  const Meta& m = meta_[Index(block)];
  if (m.group < 0) return std::nullopt;
  return std::make_pair(m.hash, GroupId{m.group});
}

std::vector<BlockId> BlockPool::FreeQueue() const {
  std::vector<BlockId> out;
  out.reserve(num_free_);
  for (int32_t i = meta_[sentinel()].next; i != sentinel(); i = meta_[i].next) out.emplace_back(i);
  return out;
}

void BlockPool::RecordLookup(TokenCount query_tokens, TokenCount hit_tokens, bool preempted) {
  if (preempted) {
    ++stats_.preempted_requests;
    stats_.preempted_query_tokens += query_tokens.value();
    stats_.preempted_hit_tokens += hit_tokens.value();
    return;
  }
  ++stats_.requests;
  stats_.query_tokens += query_tokens.value();
  stats_.hit_tokens += hit_tokens.value();
}

PrefixCacheStats BlockPool::TakeStats() {
  PrefixCacheStats out = stats_;
  stats_ = PrefixCacheStats{};
  return out;
}

void BlockPool::CheckInvariants() const {
  const int32_t n = num_blocks_;
  KVTOPO_CHECK(static_cast<int32_t>(meta_.size()) == n + 1);
  KVTOPO_CHECK(meta_[0].prev == -1 && meta_[0].next == -1 && meta_[0].group == -1);
  KVTOPO_CHECK(meta_[0].ref_count == 0);
  // Walk the list forward; each step must be mirrored by the back link.
  int32_t count = 0;
  int32_t prev = sentinel();
  for (int32_t i = meta_[sentinel()].next; i != sentinel(); i = meta_[i].next) {
    KVTOPO_CHECK(i > 0 && i < n);
    KVTOPO_CHECK(meta_[i].prev == prev);
    KVTOPO_CHECK_MSG(meta_[i].ref_count == 0, "a referenced block is in the free list");
    prev = i;
    KVTOPO_CHECK_MSG(++count <= n, "free list has a cycle");
  }
  KVTOPO_CHECK(meta_[sentinel()].prev == prev);
  KVTOPO_CHECK(count == num_free_);
  int32_t hashed = 0;
  for (int32_t i = 1; i < n; ++i) {
    const Meta& m = meta_[i];
    KVTOPO_CHECK(m.ref_count >= 0);
    KVTOPO_CHECK_MSG((m.ref_count == 0) == (m.prev != -1), "free-list membership != ref 0");
    if (m.group >= 0) {
      KVTOPO_CHECK(caching_);
      ++hashed;
      size_t s = SlotOf(m.hash.low, m.group);
      bool found = false;
      for (; map_[s].block != 0; s = (s + 1) & map_mask_) {
        if (map_[s].block == i) {
          KVTOPO_CHECK(map_[s].key == KeyOf(m.hash.low, m.group));
          found = true;
          break;
        }
      }
      KVTOPO_CHECK_MSG(found, "a hashed block is missing from the prefix-cache map");
    }
  }
  int32_t entries = 0;
  for (const Slot& slot : map_) {
    if (slot.block == 0) continue;
    ++entries;
    KVTOPO_CHECK(slot.block > 0 && slot.block < n);
    const Meta& m = meta_[slot.block];
    KVTOPO_CHECK(m.group >= 0 && slot.key == KeyOf(m.hash.low, m.group));
  }
  KVTOPO_CHECK(entries == hashed && entries == map_size_);
}

}  // namespace kvtopo
