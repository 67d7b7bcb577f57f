#include "kvtopo/block_pool.h"

#include <fmt/format.h>

#include <bit>
#include <chrono>
#include <random>

#include "internal/split_mix.h"
#include "kvtopo/status.h"

namespace kvtopo {

// The followed blocks' times (vLLM's BlockMetricsState: its birth, its last access and its last
// four accesses), in slots reused through a free list; per block, the slot or -1.
struct BlockPool::Residency {
  struct Followed {
    int64_t birth_ns = 0;
    int64_t last_access_ns = 0;
    std::array<int64_t, 4> accesses{};  // a ring: the last `num_accesses` (at most 4) hits
    int32_t num_accesses = 0;
    int32_t next_access = 0;  // where the next hit goes
  };
  ResidencyMetricsOptions options;
  uint64_t rng = 0;        // splitmix64 state
  uint64_t threshold = 0;  // follow when the next 53-bit draw is below this (rate x 2^53)
  std::vector<int32_t> slot_of;
  std::vector<Followed> slots;
  std::vector<int32_t> free_slots;
  std::vector<BlockResidencyEvent> events;
  uint64_t dropped = 0;

  // Nanosecond readings of a caller's clock may lie anywhere in int64: their difference wraps
  // (defined in unsigned arithmetic) instead of overflowing.
  static double SecondsBetween(int64_t earlier_ns, int64_t later_ns) {
    return static_cast<double>(static_cast<int64_t>(static_cast<uint64_t>(later_ns) -
                                                    static_cast<uint64_t>(earlier_ns))) /
           1e9;
  }
  int64_t Now() const {
    if (options.clock_ns != nullptr) return options.clock_ns();
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  // One pool call's time, read from the clock the first time a followed block needs it (most
  // calls at a low sample rate touch no followed block).
  struct CallTime {
    const Residency& r;
    std::optional<int64_t> t;
    int64_t operator()() {
      if (!t) t = r.Now();
      return *t;
    }
  };
  bool Draw() {
    const uint64_t z = internal::SplitMix64(rng);  // the splitmix64 generator's next output
    rng += 0x9E3779B97F4A7C15ull;
    return (z >> 11) < threshold;
  }
  // vLLM's on_block_allocated: a sampled block starts being followed (replacing what was
  // followed of it); an unsampled one keeps any earlier record.
  void Allocated(int32_t block, CallTime& now) {
    if (!Draw()) return;
    int32_t& s = slot_of[block];
    if (s < 0) {
      if (free_slots.empty()) {
        s = static_cast<int32_t>(slots.size());
        slots.emplace_back();
      } else {
        s = free_slots.back();
        free_slots.pop_back();
      }
    }
    slots[s] = Followed{.birth_ns = now(), .last_access_ns = now()};
  }
  // vLLM's on_block_accessed.
  void Touched(int32_t block, CallTime& now) {
    const int32_t s = slot_of[block];
    if (s < 0) return;
    Followed& f = slots[s];
    f.last_access_ns = now();
    f.accesses[f.next_access] = now();
    f.next_access = (f.next_access + 1) % 4;
    f.num_accesses = std::min(f.num_accesses + 1, 4);
  }
  // vLLM's on_block_evicted: a followed block's record becomes an event.
  void Evicted(int32_t block, CallTime& call_time) {
    int32_t& s = slot_of[block];
    if (s < 0) return;
    const int64_t now = call_time();
    const Followed& f = slots[s];
    free_slots.push_back(s);
    s = -1;
    if (events.size() >= kMaxPendingResidencyEvents) {
      ++dropped;
      return;
    }
    BlockResidencyEvent& e = events.emplace_back();
    e.lifetime_seconds = SecondsBetween(f.birth_ns, now);
    e.idle_seconds = SecondsBetween(f.last_access_ns, now);
    e.num_reuse_gaps = std::max(f.num_accesses - 1, 0);
    // The oldest kept hit is where the ring writes next once it is full.
    const int32_t oldest = f.num_accesses < 4 ? 0 : f.next_access;
    for (int32_t k = 0; k < e.num_reuse_gaps; ++k) {
      const int64_t a = f.accesses[(oldest + k) % 4];
      const int64_t b = f.accesses[(oldest + k + 1) % 4];
      e.reuse_gaps_seconds[k] = SecondsBetween(a, b);
    }
  }
  void Clear() {
    std::fill(slot_of.begin(), slot_of.end(), -1);
    slots.clear();
    free_slots.clear();
    events.clear();
  }
};

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

BlockPool::~BlockPool() = default;
BlockPool::BlockPool(BlockPool&&) noexcept = default;
BlockPool& BlockPool::operator=(BlockPool&&) noexcept = default;

Status BlockPool::EnableResidencyMetrics(const ResidencyMetricsOptions& options) {
  if (!(options.sample_rate > 0 && options.sample_rate <= 1)) {
    return InvalidArgument(
        fmt::format("residency metrics sample rate {} is not in (0, 1] (vLLM's "
                    "--kv-cache-metrics-sample takes the same range)",
                    options.sample_rate));
  }
  auto r = std::make_unique<Residency>();
  r->options = options;
  r->rng = options.seed != 0 ? options.seed
                             : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  // A 53-bit draw d is followed when d / 2^53 < rate, the test vLLM makes of random.random().
  r->threshold = static_cast<uint64_t>(options.sample_rate * 9007199254740992.0);
  r->slot_of.assign(static_cast<size_t>(num_blocks_), -1);
  residency_ = std::move(r);
  return Status::Ok();
}

std::vector<BlockResidencyEvent> BlockPool::TakeResidencyEvents() {
  std::vector<BlockResidencyEvent> out;
  if (residency_ != nullptr) out.swap(residency_->events);
  return out;
}

uint64_t BlockPool::residency_events_dropped() const {
  return residency_ != nullptr ? residency_->dropped : 0;
}

void BlockPool::ResidencyAllocated(const BlockId* ids, int32_t count) {
  // vLLM's get_new_blocks: with caching on, each block leaves the cache, then is allocated.
  Residency& r = *residency_;
  Residency::CallTime now{r};
  for (int32_t k = 0; k < count; ++k) {
    const int32_t i = ids[k].value();
    if (caching_) r.Evicted(i, now);
    r.Allocated(i, now);
  }
}

void BlockPool::ResidencyTouched(std::span<const BlockId> blocks) {
  Residency& r = *residency_;
  Residency::CallTime now{r};
  for (BlockId b : blocks) r.Touched(b.value(), now);
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
    Unmap(i);
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
  if (residency_ != nullptr) [[unlikely]]
    ResidencyAllocated(ids, count);
  return true;
}

BlockId BlockPool::AllocateOne() {
  KVTOPO_CHECK(num_free_ > 0);
  const int32_t i = meta_[sentinel()].next;
  Unlink(i);
  Evict(i);
  meta_[i].ref_count = 1;
  const BlockId block{i};
  if (residency_ != nullptr) [[unlikely]]
    ResidencyAllocated(&block, 1);
  return block;
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

void BlockPool::AppendDup(int32_t head, int32_t i) {
  if (dups_.empty()) dups_.resize(static_cast<size_t>(num_blocks_));
  Dup& h = dups_[head];
  if (h.prev == 0) {  // alone so far: a chain of one
    h = Dup{.prev = head, .next = head, .head = true};
  }
  const int32_t tail = h.prev;
  dups_[i] = Dup{.prev = tail, .next = head, .head = false};
  dups_[tail].next = i;
  h.prev = i;
}

void BlockPool::Unmap(int32_t i) {
  if (dups_.empty() || dups_[i].prev == 0) {
    MapErase(i);
    return;
  }
  const Dup d = dups_[i];
  dups_[i] = Dup{};
  if (d.head) {
    // The next block in caching order becomes the map's entry.
    size_t s = SlotOf(meta_[i].hash.low, meta_[i].group);
    while (map_[s].block != i) {
      KVTOPO_CHECK(map_[s].block != 0);
      s = (s + 1) & map_mask_;
    }
    map_[s].block = d.next;
    dups_[d.next].head = true;
  }
  dups_[d.prev].next = d.next;
  dups_[d.next].prev = d.prev;
  // A block left alone leaves the chain.
  if (d.next == d.prev) dups_[d.next] = Dup{};
}

bool BlockPool::ResetPrefixCache(int64_t held) {
  if (num_free_ != num_blocks_ - 1 - held) return false;
  for (Slot& slot : map_) slot = Slot{};
  map_size_ = 0;
  dups_.clear();
  for (Meta& m : meta_) {
    m.group = -1;
    m.hash = BlockHash{};
  }
  stats_.reset = true;
  ++evictions_;
  if (residency_ != nullptr) residency_->Clear();
  if (events_ != nullptr) events_->push_back({.type = KVCacheEvent::Type::kAllBlocksCleared});
  return true;
}

void BlockPool::EvictCached(BlockId block) {
  const int32_t i = Index(block);
  KVTOPO_CHECK(i >= 0 && i < num_blocks_);
  if (i != 0) Evict(i);
  if (residency_ != nullptr) {
    Residency::CallTime now{*residency_};
    residency_->Evicted(i, now);
  }
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
  KVTOPO_CHECK(dups_.empty() || dups_.size() == static_cast<size_t>(n));
  const auto dup = [&](int32_t i) { return dups_.empty() ? Dup{} : dups_[i]; };
  int32_t hashed = 0;
  int32_t followers = 0;  // cached blocks in a chain behind its first
  int32_t walked = 0;     // the same, reached from the chains' heads
  for (int32_t i = 1; i < n; ++i) {
    const Meta& m = meta_[i];
    KVTOPO_CHECK(m.ref_count >= 0);
    KVTOPO_CHECK_MSG((m.ref_count == 0) == (m.prev != -1), "free-list membership != ref 0");
    const Dup d = dup(i);
    if (m.group < 0) {
      KVTOPO_CHECK_MSG(d.prev == 0 && d.next == 0 && !d.head, "an uncached block is in a chain");
      continue;
    }
    KVTOPO_CHECK(caching_);
    ++hashed;
    if (d.prev != 0) {
      // A chain: linked both ways, every block caching the head's content, one head.
      KVTOPO_CHECK(d.prev > 0 && d.prev < n && d.next > 0 && d.next < n && d.next != i);
      KVTOPO_CHECK(dups_[d.next].prev == i && dups_[d.prev].next == i);
      KVTOPO_CHECK(meta_[d.next].group == m.group && meta_[d.next].hash == m.hash);
      if (!d.head) {
        ++followers;
        continue;
      }
      int32_t heads = 0, length = 0;
      for (int32_t j = i;;) {
        heads += dups_[j].head ? 1 : 0;
        KVTOPO_CHECK_MSG(++length <= n, "a duplicate chain has a cycle");
        j = dups_[j].next;
        if (j == i) break;
      }
      KVTOPO_CHECK_MSG(heads == 1 && length >= 2, "a duplicate chain needs one head");
      walked += length - 1;
    } else {
      KVTOPO_CHECK_MSG(!d.head && d.next == 0, "a block alone is marked as a chain's");
    }
    size_t s = SlotOf(m.hash.low, m.group);
    bool found = false;
    for (; map_[s].block != 0; s = (s + 1) & map_mask_) {
      if (map_[s].block == i) {
        KVTOPO_CHECK(map_[s].key == KeyOf(m.hash.low, m.group));
        found = true;
        break;
      }
      KVTOPO_CHECK(map_[s].block > 0 && map_[s].block < n);
      KVTOPO_CHECK_MSG(!Matches(map_[s], KeyOf(m.hash.low, m.group), m.hash),
                       "two map entries cache the same content");
    }
    KVTOPO_CHECK_MSG(found, "a hashed block is missing from the prefix-cache map");
  }
  int32_t entries = 0;
  for (const Slot& slot : map_) {
    if (slot.block == 0) continue;
    ++entries;
    KVTOPO_CHECK(slot.block > 0 && slot.block < n);
    const Meta& m = meta_[slot.block];
    KVTOPO_CHECK(m.group >= 0 && slot.key == KeyOf(m.hash.low, m.group));
    KVTOPO_CHECK_MSG(dup(slot.block).prev == 0 || dup(slot.block).head,
                     "a map entry names a block that is not the first of its chain");
  }
  // Every follower sits in a headed chain (a cycle of followers alone is unreachable).
  KVTOPO_CHECK_MSG(walked == followers, "a duplicate chain has no head");
  KVTOPO_CHECK(entries == hashed - followers && entries == map_size_);
  if (residency_ != nullptr) {
    // Each record slot is a block's or free, never both; the null block is never followed.
    const Residency& r = *residency_;
    KVTOPO_CHECK(r.slot_of.size() == static_cast<size_t>(n) && r.slot_of[0] == -1);
    std::vector<int8_t> owner(r.slots.size(), 0);
    for (const int32_t s : r.slot_of) {
      if (s < 0) continue;
      KVTOPO_CHECK(static_cast<size_t>(s) < owner.size() && owner[s] == 0);
      owner[s] = 1;
    }
    for (const int32_t s : r.free_slots) {
      KVTOPO_CHECK(static_cast<size_t>(s) < owner.size() && owner[s] == 0);
      owner[s] = 2;
    }
    KVTOPO_CHECK_MSG(std::find(owner.begin(), owner.end(), 0) == owner.end(),
                     "a residency record slot is neither a block's nor free");
    KVTOPO_CHECK(r.events.size() <= kMaxPendingResidencyEvents);
  }
}

}  // namespace kvtopo
