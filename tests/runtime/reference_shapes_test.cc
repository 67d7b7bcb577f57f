// The reference workloads' shapes (docs/BENCHMARKS.md) with every block id, hit, event and
// eviction pinned: W2 (1,000 requests one after another sharing a 4,096-token prefix, 256 unique
// tokens, 16 decode steps, free; a pool of 4,096 blocks) and W4 (one request grown to 1,000,000
// tokens in 768-token chunks, 64-token blocks) on the same pool three times. The first rows are
// derived by hand in the comments; the rest are folded into FNV-1a digests recorded from the
// runtime before its hot paths were rewritten, so a faster pool or manager cannot change a single
// id, hit, event or free-queue position unnoticed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "kvtopo/kv_cache_manager.h"
#include "test_groups.h"

namespace kvtopo {
namespace {

using testing::Ids;
using testing::MakeGroup;

// FNV-1a over 64-bit words.
struct Digest {
  uint64_t value = 0xcbf29ce484222325ull;
  void Add(uint64_t word) {
    for (int i = 0; i < 8; ++i) {
      value ^= (word >> (8 * i)) & 0xff;
      value *= 0x100000001b3ull;
    }
  }
  void Add(std::span<const BlockId> blocks) {
    Add(blocks.size());
    for (BlockId b : blocks) Add(static_cast<uint64_t>(b.value()));
  }
};

void AddEvents(Digest& d, const std::vector<KVCacheEvent>& events) {
  for (const KVCacheEvent& e : events) {
    d.Add(static_cast<uint64_t>(e.type));
    d.Add(static_cast<uint64_t>(e.group.value()));
    for (const BlockHash& h : e.block_hashes) {
      d.Add(h.low);
      d.Add(h.high);
    }
    d.Add(e.parent_block_hash ? e.parent_block_hash->low : 0);
    d.Add(e.token_ids.size());
    for (int32_t t : e.token_ids) d.Add(static_cast<uint64_t>(t));
    d.Add(static_cast<uint64_t>(e.block_size));
  }
}

// The block hashes stored and removed by `events`.
std::pair<size_t, size_t> StoredAndRemoved(const std::vector<KVCacheEvent>& events) {
  std::pair<size_t, size_t> n{0, 0};
  for (const KVCacheEvent& e : events) {
    if (e.type == KVCacheEvent::Type::kBlockStored) n.first += e.block_hashes.size();
    if (e.type == KVCacheEvent::Type::kBlockRemoved) n.second += e.block_hashes.size();
  }
  return n;
}

std::vector<int32_t> Range(int32_t first, int32_t last) {  // [first, last]
  std::vector<int32_t> out(last - first + 1);
  std::iota(out.begin(), out.end(), first);
  return out;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ---- W2 --------------------------------------------------------------------------------------

constexpr int kW2Requests = 1000;
constexpr int32_t kW2Shared = 4096;
constexpr int32_t kW2Unique = 256;
constexpr int kW2DecodeSteps = 16;

KVCacheManagerOptions W2Options(bool events) {
  KVCacheManagerOptions o{.num_blocks = 4096,
                          .hash_block_size = 16,
                          .max_model_len = 8192,
                          .enable_kv_cache_events = events};
  o.groups.push_back(MakeGroup({.kind = CacheKind::kFullAttention,
                                .block_size = 16,
                                .max_model_len = 8192,
                                .max_num_seqs = 256}));
  return o;
}

std::vector<int32_t> W2Prompt(int r) {
  std::vector<int32_t> prompt(kW2Shared + kW2Unique);
  for (int32_t t = 0; t < kW2Shared; ++t) prompt[t] = 100000 + t;
  for (int32_t t = 0; t < kW2Unique; ++t) prompt[kW2Shared + t] = r * 1000 + t;
  return prompt;
}

struct W2Run {
  std::vector<std::vector<int32_t>> rows;  // each request's row before its free
  std::vector<int64_t> hits;               // each request's prefix-hit tokens
  Digest updates;                          // every call's row update
  Digest free_queues;                      // the free queue after every free
  Digest events;
  std::vector<int32_t> final_free_queue;
};

// Single calls (batched = false) or the batched step API, one request at a time.
W2Run RunW2(bool events, bool batched, int check_every_call_until) {
  auto m = KVCacheManager::Create(W2Options(events)).value();
  W2Run run;
  KVCacheManager::BatchResult out;
  const std::vector<int32_t> token = {5};
  const std::vector<int32_t> one = {1};
  for (int r = 0; r < kW2Requests; ++r) {
    const RequestId id{r};
    const std::vector<RequestId> batch = {id};
    const bool check = r < check_every_call_until;
    EXPECT_TRUE(m->AddRequest(id, W2Prompt(r)).ok());
    if (batched) {
      EXPECT_TRUE(m->AdmitBatch(batch, {}, false, out).ok());
      EXPECT_EQ(out.ok[0], 1) << "request " << r;
      run.hits.push_back(out.num_computed[0]);
    } else {
      const ComputedBlocks hits = m->GetComputedBlocks(id).value();
      const int64_t n = kW2Shared + kW2Unique - hits.num_tokens.value();
      EXPECT_TRUE(m->AllocateSlots(id, {.num_new_tokens = TokenCount{n},
                                        .num_new_computed_tokens = hits.num_tokens,
                                        .computed = &hits})
                      .value())
          << "request " << r;
      run.hits.push_back(hits.num_tokens.value());
    }
    run.updates.Add(m->LastUpdate(id, GroupId{0}).first_column);
    run.updates.Add(m->LastUpdate(id, GroupId{0}).block_ids);
    if (check) m->CheckInvariants();
    for (int s = 0; s < kW2DecodeSteps; ++s) {
      EXPECT_TRUE(m->AppendTokens(id, token).ok());
      if (batched) {
        EXPECT_TRUE(m->AllocateSlotsBatch(batch, one, {}, out).ok());
        EXPECT_EQ(out.ok[0], 1);
      } else {
        EXPECT_TRUE(m->AllocateSlots(id, {.num_new_tokens = TokenCount{1}}).value());
      }
      run.updates.Add(m->LastUpdate(id, GroupId{0}).first_column);
      run.updates.Add(m->LastUpdate(id, GroupId{0}).block_ids);
      if (check) m->CheckInvariants();
    }
    run.rows.push_back(Ids(m->BlockIds(id, GroupId{0})));
    if (batched) {
      EXPECT_TRUE(m->FreeBatch(batch).ok());
    } else {
      EXPECT_TRUE(m->Free(id).ok());
    }
    m->CheckInvariants();
    const std::vector<BlockId> queue = KVCacheInspector(*m).FreeQueue();
    run.free_queues.Add(queue);
    if (events) AddEvents(run.events, m->TakeEvents());
    if (r == kW2Requests - 1) run.final_free_queue = Ids(queue);
  }
  return run;
}

TEST(ReferenceShapes, W2BlockIdsHitsEventsAndEvictionsArePinned) {
  const W2Run run = RunW2(/*events=*/true, /*batched=*/false, /*check_every_call_until=*/300);
  // Request 0 fills blocks 1..272 with its prompt and takes 273 at the first decode step; its
  // free returns them reversed, so the free queue is 274..4095, 273, 272, ..., 1.
  EXPECT_EQ(run.rows[0], Range(1, 273));
  EXPECT_EQ(run.hits[0], 0);
  // Request 1 hits the 256 shared blocks (4,096 tokens) and allocates from the head.
  EXPECT_EQ(run.rows[1], Concat(Range(1, 256), Range(274, 290)));
  EXPECT_EQ(run.rows[2], Concat(Range(1, 256), Range(291, 307)));
  // The shared blocks are freed last (reversed rows), so they stay at the tail and every request
  // hits them; 4095 - 273 = 3,822 = 224 x 17 + 14 fresh blocks last 224 requests.
  for (int r = 1; r < kW2Requests; ++r) ASSERT_EQ(run.hits[r], kW2Shared) << "request " << r;
  EXPECT_EQ(run.rows[224], Concat(Range(1, 256), Range(4065, 4081)));
  // Request 225 takes the last 14 never-used blocks, then evicts request 0's unique blocks in
  // the order its free queued them (273, 272, ...).
  EXPECT_EQ(run.rows[225], Concat(Concat(Range(1, 256), Range(4082, 4095)), {273, 272, 271}));
  EXPECT_EQ(std::vector<int32_t>(run.rows[999].begin() + 256, run.rows[999].end()),
            Concat(Range(1872, 1885), {1954, 1955, 1956}));
  EXPECT_EQ(std::vector<int32_t>(run.final_free_queue.end() - 3, run.final_free_queue.end()),
            (std::vector<int32_t>{3, 2, 1}));
  EXPECT_EQ(run.updates.value, 2237932643824300723u);
  EXPECT_EQ(run.free_queues.value, 11785937965340231193u);
  EXPECT_EQ(run.events.value, 6243156406047135674u);

  // The batched step API gives the same ids, hits and evictions; events off changes nothing.
  const W2Run batched = RunW2(/*events=*/false, /*batched=*/true, /*check_every_call_until=*/0);
  EXPECT_EQ(batched.rows, run.rows);
  EXPECT_EQ(batched.hits, run.hits);
  EXPECT_EQ(batched.updates.value, run.updates.value);
  EXPECT_EQ(batched.free_queues.value, run.free_queues.value);
}

// ---- W4 --------------------------------------------------------------------------------------

constexpr int64_t kW4Tokens = 1'000'000;
constexpr int64_t kW4Chunk = 768;
constexpr int64_t kW4Block = 64;
constexpr int32_t kW4Blocks = kW4Tokens / kW4Block;  // 15,625

struct W4Growth {
  std::vector<int32_t> row;
  Digest updates;
  int64_t calls = 0;
};

W4Growth Grow(KVCacheManager& m, RequestId id, const std::vector<int32_t>& prompt) {
  W4Growth g;
  EXPECT_TRUE(m.AddRequest(id, prompt).ok());
  for (int64_t done = 0; done < kW4Tokens; done += kW4Chunk) {
    const int64_t n = std::min(kW4Chunk, kW4Tokens - done);
    EXPECT_TRUE(m.AllocateSlots(id, {.num_new_tokens = TokenCount{n}}).value());
    const auto u = m.LastUpdate(id, GroupId{0});
    g.updates.Add(u.first_column);
    g.updates.Add(u.block_ids);
    if (++g.calls % 64 == 0) m.CheckInvariants();
  }
  m.CheckInvariants();
  g.row = Ids(m.BlockIds(id, GroupId{0}));
  EXPECT_TRUE(m.Free(id).ok());
  m.CheckInvariants();
  return g;
}

TEST(ReferenceShapes, W4BlockIdsAndEvictionsArePinned) {
  KVCacheManagerOptions o{.num_blocks = kW4Blocks + 2,
                          .hash_block_size = kW4Block,
                          .max_model_len = kW4Tokens + kW4Block,
                          .enable_kv_cache_events = true};
  o.groups.push_back(MakeGroup({.kind = CacheKind::kFullAttention,
                                .block_size = kW4Block,
                                .max_model_len = kW4Tokens + kW4Block}));
  auto m = KVCacheManager::Create(o).value();
  std::vector<int32_t> prompt(kW4Tokens);
  std::iota(prompt.begin(), prompt.end(), 0);

  // A fresh pool hands out 1..15,625 in order; the free returns them reversed after 15,626.
  const W4Growth fresh = Grow(*m, RequestId{0}, prompt);
  EXPECT_EQ(fresh.calls, 1303);
  EXPECT_EQ(fresh.row, Range(1, kW4Blocks));
  std::vector<int32_t> queue = Ids(KVCacheInspector(*m).FreeQueue());
  EXPECT_EQ(std::vector<int32_t>(queue.begin(), queue.begin() + 3),
            (std::vector<int32_t>{kW4Blocks + 1, kW4Blocks, kW4Blocks - 1}));
  Digest events;
  std::vector<KVCacheEvent> taken = m->TakeEvents();
  EXPECT_EQ(StoredAndRemoved(taken), std::make_pair(size_t{kW4Blocks}, size_t{0}));
  AddEvents(events, taken);

  // The same prompt again (no lookup): 15,626, 15,625, ..., 2. Each new block caches content a
  // free block still caches; both stay cached, and every reallocated block that caches the
  // first run's content is evicted: all but 15,626 (never used) and 1 (not reallocated).
  const W4Growth warm = Grow(*m, RequestId{1}, prompt);
  std::vector<int32_t> expected_warm = Range(2, kW4Blocks + 1);
  std::reverse(expected_warm.begin(), expected_warm.end());
  EXPECT_EQ(warm.row, expected_warm);
  taken = m->TakeEvents();
  EXPECT_EQ(StoredAndRemoved(taken), std::make_pair(size_t{kW4Blocks}, size_t{kW4Blocks - 1}));
  AddEvents(events, taken);

  // Other content: 1, 2, ..., 15,625, each evicting what it cached (1 the first run's first
  // block, the others the second run's); 15,626 keeps the second run's first block.
  for (int32_t& t : prompt) t += 7;
  const W4Growth other = Grow(*m, RequestId{2}, prompt);
  EXPECT_EQ(other.row, Range(1, kW4Blocks));
  taken = m->TakeEvents();
  EXPECT_EQ(StoredAndRemoved(taken), std::make_pair(size_t{kW4Blocks}, size_t{kW4Blocks}));
  AddEvents(events, taken);
  Digest rows;
  for (const auto* g : {&fresh, &warm, &other}) {
    rows.Add(g->updates.value);
    for (int32_t b : g->row) rows.Add(static_cast<uint64_t>(b));
  }
  EXPECT_EQ(rows.value, 11710822303218761925u);
  EXPECT_EQ(events.value, 13478600747962615497u);
  queue = Ids(KVCacheInspector(*m).FreeQueue());
  Digest q;
  for (int32_t b : queue) q.Add(static_cast<uint64_t>(b));
  EXPECT_EQ(q.value, 11935975390717437321u);
}

}  // namespace
}  // namespace kvtopo
