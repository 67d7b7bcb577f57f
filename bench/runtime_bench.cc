// Runtime and worker hot paths. Figures are recorded in docs/BENCHMARKS.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kvtopo/block_hash.h"
#include "kvtopo/block_pool.h"
#include "kvtopo/block_table.h"
#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/simulate.h"
#include "kvtopo/slot_mapping.h"

namespace kvtopo {
namespace {

// The benchmarks make only valid calls; a refusal is a bug in the benchmark.
void Must(const Status& status) { KVTOPO_CHECK_MSG(status.ok(), status.message()); }

GroupGeometry MlaGeometry(int64_t block, int64_t dcp, int64_t max_len) {
  LayerSpec spec{.name = "mla",
                 .kind = CacheKind::kMla,
                 .block_size = block,
                 .num_kv_heads = 1,
                 .head_size = 576,
                 .cache_dtype = KvCacheDtype::kFp8};
  auto g = ComputeGroupGeometry(
      spec, {.tensor_parallel_size = dcp, .decode_context_parallel_size = dcp},
      {.max_model_len = max_len, .max_num_seqs = 256, .max_tokens_in_flight = 8192});
  return *g;
}

void BM_BlockPoolAllocateFree(benchmark::State& state) {
  BlockPool pool(4096, true);
  std::vector<BlockId> blocks;
  blocks.reserve(64);
  for (auto _ : state) {
    blocks.clear();
    if (!pool.Allocate(64, blocks)) state.SkipWithError("out of blocks");
    pool.Free(blocks);
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(BM_BlockPoolAllocateFree);

void BM_HashBlocks(benchmark::State& state) {
  const int64_t block = state.range(0);
  std::vector<int32_t> tokens(8192);
  std::iota(tokens.begin(), tokens.end(), 0);
  std::vector<BlockHash> hashes;
  hashes.reserve(8192);
  for (auto _ : state) {
    hashes.clear();
    ExtendBlockHashes(tokens, block, {}, hashes);
    benchmark::DoNotOptimize(hashes.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(tokens.size()));
}
BENCHMARK(BM_HashBlocks)->Arg(16)->Arg(64);

void BM_PrefixMatch(benchmark::State& state) {
  auto m = KVCacheManager::Create({.num_blocks = 4096,
                                   .hash_block_size = 16,
                                   .max_model_len = 65536,
                                   .groups = {{.geometry = MlaGeometry(16, 1, 65536)}}})
               .value();
  std::vector<int32_t> prompt(8192);
  std::iota(prompt.begin(), prompt.end(), 0);
  Must(m->AddRequest(RequestId{1}, prompt));
  if (!m->AllocateSlots(RequestId{1}, {.num_new_tokens = TokenCount{8192}}).value()) {
    state.SkipWithError("allocation failed");
  }
  Must(m->AddRequest(RequestId{2}, prompt));
  ComputedBlocks hits;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m->GetComputedBlocks(RequestId{2}, hits).value());
  }
  state.SetItemsProcessed(state.iterations() * 512);  // blocks matched
}
BENCHMARK(BM_PrefixMatch);

// Steady-state decode: 256 running requests, one new token and 3 lookahead slots each.
void BM_AllocateSlotsDecode(benchmark::State& state) {
  const int64_t dcp = state.range(0);
  const int64_t kRequests = 256;
  auto m = KVCacheManager::Create({.num_blocks = 200000,
                                   .hash_block_size = 16 * dcp,
                                   .max_model_len = 1 << 20,
                                   .groups = {{.geometry = MlaGeometry(16, dcp, 1 << 20)}}})
               .value();
  std::vector<int32_t> prompt(1000, 3);
  for (int64_t r = 0; r < kRequests; ++r) {
    prompt[0] = static_cast<int32_t>(r);
    Must(m->AddRequest(RequestId{r}, prompt));
    if (!m->AllocateSlots(RequestId{r}, {.num_new_tokens = TokenCount{1000}}).value()) {
      state.SkipWithError("prefill failed");
    }
  }
  int64_t steps = 0;
  for (auto _ : state) {
    for (int64_t r = 0; r < kRequests; ++r) {
      if (!m->AllocateSlots(RequestId{r}, {.num_new_tokens = TokenCount{1},
                                           .num_lookahead_tokens = TokenCount{3}})
               .value()) {
        state.SkipWithError("out of blocks");
        break;
      }
    }
    if (++steps % 4096 == 0) {  // keep the lengths bounded
      state.PauseTiming();
      for (int64_t r = 0; r < kRequests; ++r)
        Must(m->RewindComputedTokens(RequestId{r}, TokenCount{4096}));
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * kRequests);
}
BENCHMARK(BM_AllocateSlotsDecode)->Arg(1)->Arg(16);

GroupGeometry Geometry(CacheKind kind, int64_t block, int64_t max_len, int64_t window = 0) {
  LayerSpec spec{.name = "layer",
                 .kind = kind,
                 .block_size = block,
                 .num_kv_heads = 8,
                 .head_size = 128,
                 .head_size_v = 128};
  if (kind == CacheKind::kSlidingWindow) spec.sliding_window = window;
  if (kind == CacheKind::kRecurrent) {
    spec.state = {{{16, 2048}, ElementType::kBfloat16}};
    spec.recurrent_mode = RecurrentMode::kAlign;
  }
  auto g = ComputeGroupGeometry(
      spec, {}, {.max_model_len = max_len, .max_num_seqs = 256, .max_tokens_in_flight = 8192});
  return *g;
}

// The `hybrid` workload's decode phase: full attention + sliding window (4,096) + recurrent
// align, 16-token blocks; 64 requests with 32,768-token prompts (prefilled in 8,192-token
// chunks, untimed), then one token per request per step. Timed: the 64 AllocateSlots calls of a
// decode step; appending the verified token (block hashing) is not.
void BM_AllocateSlotsHybridDecode(benchmark::State& state) {
  const int64_t kRequests = 64;
  const int64_t kPrompt = 32768;
  const int64_t kMaxLen = 1 << 20;
  auto m = KVCacheManager::Create(
               {.num_blocks = 400000,
                .hash_block_size = 16,
                .max_model_len = kMaxLen,
                .groups = {{.geometry = Geometry(CacheKind::kFullAttention, 16, kMaxLen)},
                           {.geometry = Geometry(CacheKind::kSlidingWindow, 16, kMaxLen, 4096)},
                           {.geometry = Geometry(CacheKind::kRecurrent, 16, kMaxLen)}}})
               .value();
  std::vector<int32_t> prompt(kPrompt);
  for (int64_t r = 0; r < kRequests; ++r) {
    for (int64_t t = 0; t < kPrompt; ++t) prompt[t] = static_cast<int32_t>(r * 7919 + t);
    Must(m->AddRequest(RequestId{r}, prompt));
    for (int64_t done = 0; done < kPrompt; done += 8192) {
      if (!m->AllocateSlots(RequestId{r}, {.num_new_tokens = TokenCount{8192}}).value()) {
        state.SkipWithError("prefill failed");
        return;
      }
    }
  }
  const std::vector<int32_t> token = {1};
  int64_t steps = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (int64_t r = 0; r < kRequests; ++r) Must(m->AppendTokens(RequestId{r}, token));
    state.ResumeTiming();
    for (int64_t r = 0; r < kRequests; ++r) {
      if (!m->AllocateSlots(RequestId{r}, {.num_new_tokens = TokenCount{1}}).value()) {
        state.SkipWithError("out of blocks");
        break;
      }
    }
    if (++steps + kPrompt + 16 >= kMaxLen) {
      state.SkipWithError("request too long; lower the iterations");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * kRequests);
}
BENCHMARK(BM_AllocateSlotsHybridDecode)->Iterations(4096);

// One request grown to 1,000,000 tokens in 768-token chunks on a single group of 64-token
// blocks with prefix caching: 1,303 AllocateSlots calls, each allocating and caching 12 blocks,
// then Free. Arg 0: a fresh pool each time (as a single run of the workload sees it); arg 1: the
// pool of the previous iteration, whose cached blocks are evicted as they are reallocated; arg 2:
// a fresh pool whose memory has left the core's caches before the growth starts (64 MiB written
// after AddRequest, untimed), as a caller that did other work since creating the pool sees it;
// arg 3: arg 2 with prefix caching off (the same growth without the map inserts). The prompt's
// block hashes are computed at AddRequest, outside the timing.
void BM_GrowOneRequestToAMillionTokens(benchmark::State& state) {
  const bool warm_pool = state.range(0) == 1;
  const bool flush_caches = state.range(0) >= 2;
  const bool caching = state.range(0) != 3;
  std::vector<char> flush(flush_caches ? size_t{64} << 20 : 0);
  const int64_t kTokens = 1'000'000;
  const int64_t kChunk = 768;
  const int64_t kBlock = 64;
  std::vector<int32_t> prompt(kTokens);
  std::iota(prompt.begin(), prompt.end(), 0);
  // The plan `kvtopo simulate --workload w4` runs: one full-attention group of 64-token blocks.
  const KVCacheManagerOptions options =
      KVCacheManagerOptions::FromPlan(DefaultPlanForWorkload("w4", 0).value(), kTokens / kBlock + 2,
                                      caching)
          .value();
  auto m = KVCacheManager::Create(options).value();
  int64_t request = 0;
  int64_t calls = 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (!warm_pool) m = KVCacheManager::Create(options).value();
    const RequestId id{request++};
    Must(m->AddRequest(id, prompt));
    for (size_t k = 0; k < flush.size(); k += 64) flush[k] = static_cast<char>(flush[k] + 1);
    benchmark::DoNotOptimize(flush.data());
    state.ResumeTiming();
    for (int64_t done = 0; done < kTokens; done += kChunk) {
      const int64_t n = std::min(kChunk, kTokens - done);
      if (!m->AllocateSlots(id, {.num_new_tokens = TokenCount{n}}).value()) {
        state.SkipWithError("out of blocks");
        break;
      }
      ++calls;
    }
    Must(m->Free(id));
  }
  state.counters["allocation_steps"] =
      benchmark::Counter(static_cast<double>(calls) / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_GrowOneRequestToAMillionTokens)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Unit(benchmark::kMillisecond);

// W2 in steady state: requests one after another on a pool of 4,096 blocks of 16 tokens, each
// a 4,096-token shared prefix + 256 unique tokens, admitted with its prefix hit (get computed
// blocks + allocate slots), 16 decode steps of one token, then freed; after ~225 requests every
// admission evicts cached blocks. Timed: the runtime calls only. Registration and hashing are
// not: each request is added with its 16 decode tokens already appended (the block ids, hits
// and cached blocks are those of appending one token before each decode step, since a step
// only caches tokens up to its own count), 8 requests per untimed setup.
// `residency_percent` > 0: vLLM's residency metrics (--kv-cache-metrics) follow that share of the
// allocated blocks.
void RunW2PrefixHitRequests(benchmark::State& state, int64_t residency_percent) {
  constexpr int32_t kShared = 4096, kUnique = 256, kDecode = 16, kBatch = 8;
  // The plan `kvtopo simulate --workload w2` runs (a 32-layer dense model, one group of
  // 16-token blocks) on a pool of 4,096 blocks.
  auto m =
      KVCacheManager::Create(
          KVCacheManagerOptions::FromPlan(DefaultPlanForWorkload("w2", 0).value(), 4096).value())
          .value();
  if (residency_percent > 0) {
    Must(m->EnableResidencyMetrics(
        {.sample_rate = static_cast<double>(residency_percent) / 100, .seed = 1}));
  }
  std::vector<int32_t> tokens(kShared + kUnique + kDecode, 5);
  std::iota(tokens.begin(), tokens.begin() + kShared, 100000);
  int64_t next = 0;
  ComputedBlocks hits;
  for (auto _ : state) {
    state.PauseTiming();
    for (int k = 0; k < kBatch; ++k) {
      for (int32_t t = 0; t < kUnique; ++t) {
        tokens[kShared + t] = static_cast<int32_t>((next + k) * 1000 + t);
      }
      Must(m->AddRequest(RequestId{next + k}, tokens));
    }
    state.ResumeTiming();
    for (int k = 0; k < kBatch; ++k) {
      const RequestId id{next++};
      const TokenCount hit = m->GetComputedBlocks(id, hits).value();
      bool ok = m->AllocateSlots(id, {.num_new_tokens = TokenCount{kShared + kUnique - hit.value()},
                                      .num_new_computed_tokens = hit,
                                      .computed = &hits})
                    .value();
      for (int s = 0; s < kDecode; ++s) {
        ok = ok && m->AllocateSlots(id, {.num_new_tokens = TokenCount{1}}).value();
      }
      if (!ok) state.SkipWithError("out of blocks");
      Must(m->Free(id));
    }
    if (residency_percent > 0) benchmark::DoNotOptimize(m->TakeResidencyEvents());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
void BM_W2PrefixHitRequest(benchmark::State& state) { RunW2PrefixHitRequests(state, 0); }
BENCHMARK(BM_W2PrefixHitRequest);
// The same requests with residency metrics on: at vLLM's default sample of 1% and at 100%.
void BM_W2PrefixHitRequestResidency(benchmark::State& state) {
  RunW2PrefixHitRequests(state, state.range(0));
}
BENCHMARK(BM_W2PrefixHitRequestResidency)->Arg(1)->Arg(100);

void BM_SlotMapping8192Tokens16Ranks(benchmark::State& state) {
  const GroupGeometry g = MlaGeometry(64, 16, 1 << 20);
  BlockTable table(g, 1);
  std::vector<BlockId> blocks;
  for (int32_t j = 0; j < 8; ++j) blocks.emplace_back(100 + j);
  if (!table.Append(0, blocks).ok()) state.SkipWithError("table");
  std::vector<TokenPos> positions;
  for (int64_t p = 0; p < 8192; ++p) positions.emplace_back(p);
  std::vector<int64_t> slots(8192);
  const auto row = table.Row(0).first(table.row_length(0));
  for (auto _ : state) {
    for (int32_t r = 0; r < 16; ++r) {
      if (!ComputeSlotMapping(g.SlotLayoutFor(Rank{r}), row, positions, slots).ok()) {
        state.SkipWithError("slots");
      }
      benchmark::DoNotOptimize(slots.data());
    }
  }
  state.SetItemsProcessed(state.iterations() * 8192 * 16);
}
BENCHMARK(BM_SlotMapping8192Tokens16Ranks);

}  // namespace
}  // namespace kvtopo
