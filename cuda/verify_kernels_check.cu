// verify_kernels_check: runs the CUDA kernels of verify_kernels.h and the CPU functions they port
// on the same inputs and compares them.
//
//   slot cases    every SlotLayout of n in {1, 2, 4, 16} (with DCP sizes N making partial
//                 layouts too), I in {1, 4, b}, b in {16, 64, 768} and every rank in [0, N):
//                 seeded runs of positions with gaps, in ascending, run-reversed or shuffled
//                 order, half of them with a position past the row. The oracle is
//                 kvtopo::ComputeSlotMapping, called per position (the slot or the error of
//                 each) and for the whole request (its batch path must agree); the GPU's slots
//                 and error must equal it and its arena must equal the CPU scatter bit for bit.
//   guard cases   the kernel's own contract: a negative position and block ids outside the
//                 arena are reported, never written.
//   merge cases   an MLA-like shape (1 KV head, 64 query heads) and MHA with GQA, over 1, 2, 4
//                 and 16 ranks with some empty ranges: partials from internal::PartialAttention,
//                 the GPU merge against internal::MergePartials (and against attention over all
//                 tokens on one rank), max relative error <= 1e-5, the merge identity exact.
//   timings       each kernel on a few-hundred-megabyte problem, CUDA events, best of N.
//
// Usage: verify_kernels_check [--timing-reps N] [--no-timing]. Exit 0 only when every case
// matches; 1 when one does not or CUDA fails; 2 on a usage error.
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvtopo/slot_mapping.h"
#include "verify/attention.h"
#include "verify_kernels.h"

namespace kvtopo::gpu {
namespace {

constexpr double kMergeTolerance = 1e-5;
constexpr uint64_t kSeed = 0x6b76746f706f;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "verify_kernels_check: %s\n", what.c_str());
  std::exit(1);
}

void CudaOk(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    Fail(std::string(what) + ": " + cudaGetErrorString(error) + " (" + cudaGetErrorName(error) +
         ")");
  }
}

void StatusOk(const Status& status, const char* what) {
  if (!status.ok()) Fail(std::string(what) + ": " + status.ToString());
}

// A typed cudaMalloc'd array.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count_ > 0) CudaOk(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()), "cudaMalloc");
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return data_; }
  size_t bytes() const { return count_ * sizeof(T); }
  void Upload(std::span<const T> host) {
    if (host.size() != count_) Fail("upload of a wrong size");
    if (count_ > 0) CudaOk(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice), "H2D");
  }
  std::vector<T> Download() const {
    std::vector<T> host(count_);
    if (count_ > 0) CudaOk(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost), "D2H");
    return host;
  }

 private:
  size_t count_;
  T* data_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Slot mapping and scatter.

struct SlotCase {
  int64_t num_shards;         // n
  int64_t dcp_size;           // N: ranks 0..N-1 run; n < N makes a partial layout
  int64_t interleave;         // I
  int64_t kernel_block_size;  // b
  int64_t row_floats;         // floats of one token's K/V row
};

// What the GPU must produce for one position, from the CPU oracle.
struct Expected {
  int64_t slot = -1;
  uint32_t error_bits = 0;
  int64_t cpu_slot = -1;  // ComputeSlotMapping's slot (-1 also on its error)
};

struct SlotTotals {
  int64_t cases = 0;
  int64_t failed_cases = 0;
  int64_t rank_runs = 0;
  int64_t positions = 0;
  int64_t written = 0;
  int64_t errors = 0;
  int64_t slot_mismatches = 0;
  int64_t arena_mismatches = 0;
  int64_t cpu_batch_mismatches = 0;
  int64_t arena_bytes_compared = 0;
};

// What one request on one rank gave.
struct ScatterOutcome {
  int64_t written = 0;
  int64_t errors = 0;
  int64_t slot_mismatches = 0;
  int64_t arena_mismatches = 0;
  int64_t cpu_batch_mismatches = 0;  // the CPU's batch path against its per-position answers
  bool status_matches = true;
  uint32_t gpu_error_bits = 0;
  int64_t arena_bytes = 0;
};

float RandomBitsFloat(std::mt19937_64& rng) {
  return std::bit_cast<float>(static_cast<uint32_t>(rng()));
}

// Runs of consecutive positions separated by gaps, inside [0, span).
std::vector<std::vector<int64_t>> PositionRuns(std::mt19937_64& rng, int64_t span,
                                               int64_t virtual_block) {
  const int64_t max_run = std::clamp<int64_t>(2 * virtual_block, 1, 600);
  const int64_t max_gap = std::max<int64_t>(1, span / 16);
  std::vector<std::vector<int64_t>> runs;
  int64_t count = 0;
  int64_t p = static_cast<int64_t>(rng() % 5);
  while (p < span && count < 4096) {
    std::vector<int64_t> run;
    const int64_t length = 1 + static_cast<int64_t>(rng() % max_run);
    for (int64_t k = 0; k < length && p < span; ++k) run.push_back(p++);
    count += static_cast<int64_t>(run.size());
    runs.push_back(std::move(run));
    p += 1 + static_cast<int64_t>(rng() % max_gap);
  }
  return runs;
}

// Runs the GPU scatter for one request on one rank and compares it with the CPU oracle.
ScatterOutcome CompareScatter(const SlotLayout& layout, const std::vector<int32_t>& kernel_row,
                              const std::vector<int64_t>& positions, int64_t row_floats,
                              int64_t arena_slots, std::mt19937_64& rng) {
  ScatterOutcome outcome;
  const size_t num_positions = positions.size();

  // The oracle, per position: ComputeSlotMapping's slot or error; the kernel's own guards (a
  // negative position, which the CPU function does not take, and a slot outside the arena).
  std::vector<Expected> expected(num_positions);
  bool any_negative = false;
  for (size_t i = 0; i < num_positions; ++i) {
    if (positions[i] < 0) {
      expected[i] = {-1, kNegativePosition};
      any_negative = true;
      continue;
    }
    const TokenPos position(positions[i]);
    int64_t slot = 0;
    const Status status =
        ComputeSlotMapping(layout, kernel_row, std::span(&position, 1), std::span(&slot, 1));
    if (!status.ok()) {
      if (status.code() != StatusCode::kOutOfRange)
        Fail("unexpected CPU error " + status.ToString());
      expected[i] = {-1, kPositionPastRow, -1};
    } else if (slot != kPadSlot && (slot < 0 || slot >= arena_slots)) {
      expected[i] = {-1, kSlotOutsideArena, slot};
    } else {
      expected[i] = {slot, 0, slot};
    }
  }
  uint64_t expected_first_error = kNoError;
  uint32_t expected_bits = 0;
  for (size_t i = 0; i < num_positions; ++i) {
    if (expected[i].error_bits == 0) continue;
    expected_first_error = std::min<uint64_t>(expected_first_error, i);
    expected_bits |= expected[i].error_bits;
    ++outcome.errors;
  }

  // The CPU's batch path (consecutive runs stepped, not divided) must agree with its per-position
  // answers up to its first error, and pad the rest of `out` with -1.
  if (!any_negative) {
    std::vector<TokenPos> token_positions;
    for (int64_t p : positions) token_positions.emplace_back(p);
    std::vector<int64_t> batch(num_positions + 3, 12345);
    const Status status = ComputeSlotMapping(layout, kernel_row, token_positions, batch);
    size_t cpu_first_error = num_positions;
    for (size_t i = 0; i < num_positions; ++i) {
      if (expected[i].error_bits == kPositionPastRow) {
        cpu_first_error = i;
        break;
      }
    }
    if (status.ok() != (cpu_first_error == num_positions)) ++outcome.cpu_batch_mismatches;
    for (size_t i = 0; i < cpu_first_error; ++i) {
      if (batch[i] != expected[i].cpu_slot) ++outcome.cpu_batch_mismatches;
    }
    if (status.ok()) {
      for (size_t i = num_positions; i < batch.size(); ++i) {
        if (batch[i] != kPadSlot) ++outcome.cpu_batch_mismatches;
      }
    }
  }

  // Inputs: every token's row as random bit patterns (NaNs included), an arena of 0xff bytes.
  std::vector<float> kv_rows(num_positions * row_floats);
  for (float& v : kv_rows) v = RandomBitsFloat(rng);
  const uint32_t sentinel = 0xffffffffu;
  std::vector<float> reference(arena_slots * row_floats, std::bit_cast<float>(sentinel));
  for (size_t i = 0; i < num_positions; ++i) {
    if (expected[i].slot < 0) continue;
    std::memcpy(&reference[expected[i].slot * row_floats], &kv_rows[i * row_floats],
                row_floats * sizeof(float));
    ++outcome.written;
  }

  DeviceBuffer<int32_t> d_row(kernel_row.size());
  DeviceBuffer<int64_t> d_positions(num_positions);
  DeviceBuffer<float> d_rows(kv_rows.size());
  DeviceBuffer<float> d_arena(reference.size());
  DeviceBuffer<int64_t> d_slots(num_positions);
  DeviceBuffer<ScatterStatus> d_status(1);
  d_row.Upload(kernel_row);
  d_positions.Upload(positions);
  d_rows.Upload(kv_rows);
  if (d_arena.bytes() > 0) CudaOk(cudaMemset(d_arena.get(), 0xff, d_arena.bytes()), "memset");
  ScatterArgs args;
  args.layout = layout;
  args.kernel_row = d_row.get();
  args.row_length = static_cast<int64_t>(kernel_row.size());
  args.positions = d_positions.get();
  args.num_positions = static_cast<int64_t>(num_positions);
  args.kv_rows = d_rows.get();
  args.row_floats = row_floats;
  args.arena = d_arena.get();
  args.arena_slots = arena_slots;
  args.slots = d_slots.get();
  args.status = d_status.get();
  StatusOk(ScatterKvRows(args, nullptr), "ScatterKvRows");
  CudaOk(cudaDeviceSynchronize(), "scatter kernel");

  const std::vector<int64_t> slots = d_slots.Download();
  const ScatterStatus status = d_status.Download()[0];
  const std::vector<float> arena = d_arena.Download();
  for (size_t i = 0; i < num_positions; ++i) {
    if (slots[i] != expected[i].slot) ++outcome.slot_mismatches;
  }
  outcome.status_matches =
      status.first_error_index == expected_first_error && status.error_bits == expected_bits;
  outcome.gpu_error_bits = status.error_bits;
  for (size_t k = 0; k < arena.size(); ++k) {
    if (std::bit_cast<uint32_t>(arena[k]) != std::bit_cast<uint32_t>(reference[k])) {
      ++outcome.arena_mismatches;
    }
  }
  outcome.arena_bytes = static_cast<int64_t>(arena.size() * sizeof(float));
  return outcome;
}

// A row of `columns` distinct block ids drawn from [1, num_blocks).
std::vector<int32_t> RandomRow(std::mt19937_64& rng, int64_t columns, int64_t num_blocks) {
  std::vector<int32_t> ids(num_blocks - 1);
  std::iota(ids.begin(), ids.end(), 1);
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize(columns);
  return ids;
}

bool RunSlotCase(int case_index, const SlotCase& c, SlotTotals& totals) {
  constexpr int64_t kColumns = 6;
  constexpr int64_t kNumBlocks = 2 * kColumns + 1;
  const int64_t virtual_block = c.kernel_block_size * c.num_shards;
  const int64_t span = kColumns * virtual_block;
  const int64_t arena_slots = kNumBlocks * c.kernel_block_size;
  ScatterOutcome sum;
  bool status_ok = true;
  int64_t num_positions = 0;
  for (int64_t rank = 0; rank < c.dcp_size; ++rank) {
    std::mt19937_64 rng(kSeed ^ (static_cast<uint64_t>(case_index) << 32) ^
                        static_cast<uint64_t>(rank));
    const SlotLayout layout{.num_shards = c.num_shards,
                            .interleave = c.interleave,
                            .kernel_block_size = c.kernel_block_size,
                            .rank = Rank(static_cast<int32_t>(rank))};
    const std::vector<int32_t> row = RandomRow(rng, kColumns, kNumBlocks);
    std::vector<std::vector<int64_t>> runs = PositionRuns(rng, span, virtual_block);
    const int64_t variant = (case_index + rank) % 3;
    if (variant == 1) std::reverse(runs.begin(), runs.end());
    std::vector<int64_t> positions;
    for (const std::vector<int64_t>& run : runs)
      positions.insert(positions.end(), run.begin(), run.end());
    if (variant == 2) std::shuffle(positions.begin(), positions.end(), rng);
    if ((case_index + rank) % 2 == 1) {
      // One position past the row (column kColumns or kColumns + 1), anywhere in the request.
      const int64_t past = span + static_cast<int64_t>(rng() % (2 * virtual_block));
      const size_t at = rng() % (positions.size() + 1);
      positions.insert(positions.begin() + static_cast<std::ptrdiff_t>(at), past);
    }
    const ScatterOutcome o = CompareScatter(layout, row, positions, c.row_floats, arena_slots, rng);
    sum.written += o.written;
    sum.errors += o.errors;
    sum.slot_mismatches += o.slot_mismatches;
    sum.arena_mismatches += o.arena_mismatches;
    sum.cpu_batch_mismatches += o.cpu_batch_mismatches;
    sum.arena_bytes += o.arena_bytes;
    status_ok = status_ok && o.status_matches;
    num_positions += static_cast<int64_t>(positions.size());
  }
  const bool pass = status_ok && sum.slot_mismatches == 0 && sum.arena_mismatches == 0 &&
                    sum.cpu_batch_mismatches == 0;
  std::printf(
      "slots n=%-2lld N=%-2lld I=%-3lld b=%-3lld row_floats=%-3lld: %2lld ranks, %6lld positions "
      "(%6lld written, %2lld past the row), slot mismatches %lld, arena mismatches %lld "
      "(%.1f MB), error reports %s, CPU batch/per-position mismatches %lld  %s\n",
      static_cast<long long>(c.num_shards), static_cast<long long>(c.dcp_size),
      static_cast<long long>(c.interleave), static_cast<long long>(c.kernel_block_size),
      static_cast<long long>(c.row_floats), static_cast<long long>(c.dcp_size),
      static_cast<long long>(num_positions), static_cast<long long>(sum.written),
      static_cast<long long>(sum.errors), static_cast<long long>(sum.slot_mismatches),
      static_cast<long long>(sum.arena_mismatches), sum.arena_bytes / 1e6,
      status_ok ? "match" : "DIFFER", static_cast<long long>(sum.cpu_batch_mismatches),
      pass ? "PASS" : "FAIL");
  ++totals.cases;
  totals.failed_cases += pass ? 0 : 1;
  totals.rank_runs += c.dcp_size;
  totals.positions += num_positions;
  totals.written += sum.written;
  totals.errors += sum.errors;
  totals.slot_mismatches += sum.slot_mismatches;
  totals.arena_mismatches += sum.arena_mismatches;
  totals.cpu_batch_mismatches += sum.cpu_batch_mismatches;
  totals.arena_bytes_compared += sum.arena_bytes;
  return pass;
}

// The kernel's guards: errors the CPU function aborts on or cannot see.
bool RunGuardCases(SlotTotals& totals) {
  std::mt19937_64 rng(kSeed ^ 0x6775617264);
  const SlotLayout layout{
      .num_shards = 4, .interleave = 4, .kernel_block_size = 64, .rank = Rank(1)};
  bool all_pass = true;
  auto report = [&](const char* name, const ScatterOutcome& o, uint32_t bits_wanted) {
    const bool pass = o.status_matches && o.gpu_error_bits == bits_wanted &&
                      o.slot_mismatches == 0 && o.arena_mismatches == 0 && o.errors > 0;
    std::printf(
        "guard %-28s: %lld positions in error, GPU error bits %u (want %u), slot "
        "mismatches %lld, arena mismatches %lld, error reports %s  %s\n",
        name, static_cast<long long>(o.errors), o.gpu_error_bits, bits_wanted,
        static_cast<long long>(o.slot_mismatches), static_cast<long long>(o.arena_mismatches),
        o.status_matches ? "match" : "DIFFER", pass ? "PASS" : "FAIL");
    ++totals.cases;
    totals.failed_cases += pass ? 0 : 1;
    totals.slot_mismatches += o.slot_mismatches;
    totals.arena_mismatches += o.arena_mismatches;
    all_pass = all_pass && pass;
  };
  constexpr int64_t kNumBlocks = 9;
  const int64_t arena_slots = kNumBlocks * 64;
  {
    std::vector<int64_t> positions(4 * 256);
    std::iota(positions.begin(), positions.end(), 0);
    positions[123] = -5;
    positions[700] = -1;
    const std::vector<int32_t> row = RandomRow(rng, 4, kNumBlocks);
    report("negative positions", CompareScatter(layout, row, positions, 64, arena_slots, rng),
           kNegativePosition);
  }
  {
    std::vector<int64_t> positions(4 * 256);
    std::iota(positions.begin(), positions.end(), 0);
    std::vector<int32_t> row = RandomRow(rng, 4, kNumBlocks);
    row[1] = kNumBlocks + 3;
    row[3] = -7;
    report("block ids outside the arena",
           CompareScatter(layout, row, positions, 68, arena_slots, rng), kSlotOutsideArena);
  }
  return all_pass;
}

// ---------------------------------------------------------------------------------------------
// LSE merge.

struct MergeCase {
  const char* name;
  internal::HeadDims dims;
  int64_t num_ranks;
  std::vector<int64_t> rank_weights;  // share of each rank's range; 0: an empty range
};

struct MergeTotals {
  int64_t cases = 0;
  int64_t failed_cases = 0;
  double max_rel_vs_cpu = 0;
  double max_rel_vs_one_rank = 0;
  double max_lse_error = 0;
};

bool RunMergeCase(int case_index, const MergeCase& c, MergeTotals& totals) {
  using internal::HeadDims;
  const HeadDims& dims = c.dims;
  const std::vector<int64_t> seq_lens = {0, 1, 3, 17, 64, 250};
  const int64_t num_queries = static_cast<int64_t>(seq_lens.size());
  const int64_t num_ranks = c.num_ranks;
  const int64_t pf = dims.partial_floats();
  const uint64_t seed = kSeed + static_cast<uint64_t>(case_index);

  std::vector<float> partials(num_ranks * num_queries * pf);  // [rank][query][...]
  std::vector<float> cpu_merged(num_queries * pf);
  std::vector<float> one_rank(num_queries * pf);
  int64_t empty_ranges = 0;
  const int64_t weight_total = std::accumulate(c.rank_weights.begin(), c.rank_weights.end(), 0LL);
  std::vector<float> query(dims.query_floats());
  for (int64_t q = 0; q < num_queries; ++q) {
    const int64_t len = seq_lens[q];
    std::vector<std::vector<float>> rows(len, std::vector<float>(dims.row_floats()));
    uint64_t hash = 0;
    for (int64_t t = 0; t < len; ++t) {
      hash = internal::ExtendContentHash(hash, static_cast<int32_t>(t));
      internal::FillKvRow(seed, 0, hash, rows[t]);
    }
    internal::FillQuery(seed, 0, internal::ExtendContentHash(0x717565, static_cast<int32_t>(q)),
                        query);
    internal::PartialAttention attention(dims);
    // Rank r attends the contiguous range its weight gives it.
    int64_t weight_before = 0;
    std::vector<std::span<const float>> spans;
    for (int64_t r = 0; r < num_ranks; ++r) {
      const int64_t begin = len * weight_before / weight_total;
      weight_before += c.rank_weights[r];
      const int64_t end = len * weight_before / weight_total;
      attention.Start(query);
      for (int64_t t = begin; t < end; ++t) attention.Add(rows[t].data());
      std::span<float> out(&partials[(r * num_queries + q) * pf], pf);
      attention.Finish(out);
      spans.push_back(out);
      empty_ranges += begin == end ? 1 : 0;
    }
    internal::MergePartials(dims, spans, std::span(&cpu_merged[q * pf], pf));
    attention.Start(query);
    for (int64_t t = 0; t < len; ++t) attention.Add(rows[t].data());
    attention.Finish(std::span(&one_rank[q * pf], pf));
  }

  DeviceBuffer<float> d_partials(partials.size());
  DeviceBuffer<float> d_out(cpu_merged.size());
  d_partials.Upload(partials);
  CudaOk(cudaMemset(d_out.get(), 0xff, d_out.bytes()), "memset");
  MergeArgs args;
  args.num_ranks = num_ranks;
  args.num_queries = num_queries;
  args.num_query_heads = dims.num_query_heads;
  args.value_dim = dims.value_dim;
  args.partials = d_partials.get();
  args.out = d_out.get();
  StatusOk(MergePartials(args, nullptr), "MergePartials");
  CudaOk(cudaDeviceSynchronize(), "merge kernel");
  const std::vector<float> gpu = d_out.Download();

  double rel_vs_cpu = 0;
  double rel_vs_one_rank = 0;
  double lse_error = 0;
  int64_t identity_heads = 0;
  bool identity_exact = true;
  bool lse_ok = true;
  for (int64_t q = 0; q < num_queries; ++q) {
    const std::span<const float> g(&gpu[q * pf], pf);
    const std::span<const float> m(&cpu_merged[q * pf], pf);
    rel_vs_cpu = std::max(rel_vs_cpu, internal::CompareOutputs(dims, g, m).rel());
    rel_vs_one_rank = std::max(
        rel_vs_one_rank,
        internal::CompareOutputs(dims, g, std::span<const float>(&one_rank[q * pf], pf)).rel());
    for (int64_t h = 0; h < dims.num_query_heads; ++h) {
      const int64_t base = h * (dims.value_dim + 1);
      const float cpu_lse = m[base + dims.value_dim];
      const float gpu_lse = g[base + dims.value_dim];
      if (std::isinf(cpu_lse) && cpu_lse < 0) {
        // The merge identity: zeros and -inf, bit for bit.
        ++identity_heads;
        identity_exact = identity_exact && std::isinf(gpu_lse) && gpu_lse < 0;
        for (int64_t i = 0; i < dims.value_dim; ++i) {
          identity_exact = identity_exact && std::bit_cast<uint32_t>(g[base + i]) == 0;
        }
        continue;
      }
      const double e = std::fabs(static_cast<double>(gpu_lse) - cpu_lse) /
                       std::max(1.0, std::fabs(static_cast<double>(cpu_lse)));
      if (!(e <= kMergeTolerance)) lse_ok = false;
      lse_error = std::max(lse_error, std::isnan(e) ? std::numeric_limits<double>::infinity() : e);
    }
  }
  const bool pass = rel_vs_cpu <= kMergeTolerance && rel_vs_one_rank <= kMergeTolerance && lse_ok &&
                    identity_exact;
  std::printf(
      "merge %-8s kv_heads=%-2lld q_heads=%-2lld value_dim=%-3lld ranks=%-2lld: %lld queries, "
      "%2lld empty ranges, %3lld identity heads %s; max rel vs CPU merge %.2e, vs one rank %.2e, "
      "LSE %.2e  %s\n",
      c.name, static_cast<long long>(dims.num_kv_heads),
      static_cast<long long>(dims.num_query_heads), static_cast<long long>(dims.value_dim),
      static_cast<long long>(num_ranks), static_cast<long long>(num_queries),
      static_cast<long long>(empty_ranges), static_cast<long long>(identity_heads),
      identity_exact ? "exact" : "DIFFER", rel_vs_cpu, rel_vs_one_rank, lse_error,
      pass ? "PASS" : "FAIL");
  ++totals.cases;
  totals.failed_cases += pass ? 0 : 1;
  totals.max_rel_vs_cpu = std::max(totals.max_rel_vs_cpu, rel_vs_cpu);
  totals.max_rel_vs_one_rank = std::max(totals.max_rel_vs_one_rank, rel_vs_one_rank);
  totals.max_lse_error = std::max(totals.max_lse_error, lse_error);
  return pass;
}

std::vector<MergeCase> MergeCases() {
  const internal::HeadDims mla{
      .mla = true, .num_kv_heads = 1, .num_query_heads = 64, .key_dim = 576, .value_dim = 512};
  const internal::HeadDims gqa{
      .mla = false, .num_kv_heads = 8, .num_query_heads = 32, .key_dim = 128, .value_dim = 128};
  const internal::HeadDims odd{
      .mla = false, .num_kv_heads = 2, .num_query_heads = 6, .key_dim = 40, .value_dim = 33};
  std::vector<MergeCase> cases;
  for (const auto& [name, dims] : {std::pair{"mla", mla}, std::pair{"mha-gqa", gqa}}) {
    for (int64_t ranks : {1, 2, 4, 16}) {
      std::vector<int64_t> weights(ranks, 1);
      // Some ranks hold nothing: one of 4, every third of 16.
      if (ranks == 4) weights[1] = 0;
      if (ranks == 16) {
        for (int64_t r = 2; r < ranks; r += 3) weights[r] = 0;
      }
      cases.push_back({name, dims, ranks, weights});
    }
  }
  cases.push_back({"mha-odd", odd, 2, {3, 1}});
  cases.push_back({"mha-odd", odd, 16, std::vector<int64_t>(16, 1)});
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Timings.

__global__ void FillKernel(float* data, int64_t count, uint64_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint64_t x = (static_cast<uint64_t>(i) + seed) * 0x9e3779b97f4a7c15ULL;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    data[i] = static_cast<float>(static_cast<int64_t>(x >> 40) - (1 << 23)) * (1.0f / (1 << 23));
  }
}

template <typename Launch>
void Time(const char* name, int reps, double bytes, Launch launch) {
  cudaEvent_t start, stop;
  CudaOk(cudaEventCreate(&start), "cudaEventCreate");
  CudaOk(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 3; ++i) launch();
  CudaOk(cudaDeviceSynchronize(), "warm-up");
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    CudaOk(cudaEventRecord(start), "cudaEventRecord");
    launch();
    CudaOk(cudaEventRecord(stop), "cudaEventRecord");
    CudaOk(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float elapsed = 0;
    CudaOk(cudaEventElapsedTime(&elapsed, start, stop), "cudaEventElapsedTime");
    ms.push_back(elapsed);
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "time %-60s: best %8.1f us, median %8.1f us, worst %8.1f us over %d runs; "
      "%.0f MB moved, %.0f GB/s at best\n",
      name, ms.front() * 1e3, ms[ms.size() / 2] * 1e3, ms.back() * 1e3, reps, bytes / 1e6,
      bytes / (ms.front() * 1e-3) / 1e9);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

void RunTimings(int reps) {
  // Scatter: 262144 tokens of one MLA row (576 floats), kernel block 64, consecutive positions.
  constexpr int64_t kTokens = 262144;
  constexpr int64_t kRowFloats = 576;
  constexpr int64_t kBlock = 64;
  DeviceBuffer<float> rows(kTokens * kRowFloats);
  FillKernel<<<1024, 256>>>(rows.get(), kTokens * kRowFloats, 1);
  std::vector<int64_t> host_positions(kTokens);
  std::iota(host_positions.begin(), host_positions.end(), 0);
  DeviceBuffer<int64_t> positions(kTokens);
  positions.Upload(host_positions);
  DeviceBuffer<int64_t> slots(kTokens);
  DeviceBuffer<ScatterStatus> status(1);
  for (const int64_t shards : {int64_t{1}, int64_t{4}}) {
    const int64_t columns = kTokens / (kBlock * shards);
    std::vector<int32_t> host_row(columns);
    std::iota(host_row.begin(), host_row.end(), 0);
    std::shuffle(host_row.begin(), host_row.end(), std::mt19937_64(kSeed));
    DeviceBuffer<int32_t> row(columns);
    row.Upload(host_row);
    const int64_t arena_slots = columns * kBlock;
    DeviceBuffer<float> arena(arena_slots * kRowFloats);
    ScatterArgs args;
    args.layout = {
        .num_shards = shards, .interleave = 1, .kernel_block_size = kBlock, .rank = Rank(1)};
    args.kernel_row = row.get();
    args.row_length = columns;
    args.positions = positions.get();
    args.num_positions = kTokens;
    args.kv_rows = rows.get();
    args.row_floats = kRowFloats;
    args.arena = arena.get();
    args.arena_slots = arena_slots;
    args.slots = slots.get();
    args.status = status.get();
    const int64_t written = kTokens / shards;
    // Bytes: the written rows read and stored, every position read and its slot stored.
    const double bytes = 2.0 * written * kRowFloats * 4 + kTokens * 16.0;
    const std::string name =
        "scatter 262144 tokens x 576 floats, b=64, n=" + std::to_string(shards) + " I=1 (" +
        std::to_string(written) + " written)";
    Time(name.c_str(), reps, bytes,
         [&] { StatusOk(ScatterKvRows(args, nullptr), "ScatterKvRows"); });
  }
  // Merge: 16 ranks, 256 queries x 64 heads x (512 + 1) floats (MLA decode at DCP 16).
  constexpr int64_t kRanks = 16, kQueries = 256, kHeads = 64, kValueDim = 512;
  const int64_t item_floats = kQueries * kHeads * (kValueDim + 1);
  DeviceBuffer<float> partials(kRanks * item_floats);
  DeviceBuffer<float> out(item_floats);
  FillKernel<<<1024, 256>>>(partials.get(), kRanks * item_floats, 2);
  CudaOk(cudaGetLastError(), "fill kernel");
  MergeArgs merge;
  merge.num_ranks = kRanks;
  merge.num_queries = kQueries;
  merge.num_query_heads = kHeads;
  merge.value_dim = kValueDim;
  merge.partials = partials.get();
  merge.out = out.get();
  Time("merge 16 ranks x 256 queries x 64 heads x 512 values", reps,
       4.0 * (kRanks + 1) * item_floats,
       [&] { StatusOk(MergePartials(merge, nullptr), "MergePartials"); });
}

int Main(int argc, char** argv) {
  int timing_reps = 20;
  bool timing = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--no-timing") {
      timing = false;
    } else if (arg == "--timing-reps" && i + 1 < argc) {
      char* end = nullptr;
      const long reps = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || reps < 1 || reps > 10000) {
        std::fprintf(stderr, "verify_kernels_check: --timing-reps '%s': want 1..10000\n", argv[i]);
        return 2;
      }
      timing_reps = static_cast<int>(reps);
    } else {
      std::fprintf(stderr, "usage: verify_kernels_check [--timing-reps N] [--no-timing]\n");
      return 2;
    }
  }
  int device = 0;
  CudaOk(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  CudaOk(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  int runtime_version = 0, driver_version = 0;
  CudaOk(cudaRuntimeGetVersion(&runtime_version), "cudaRuntimeGetVersion");
  CudaOk(cudaDriverGetVersion(&driver_version), "cudaDriverGetVersion");
  std::printf(
      "device %s, compute capability %d.%d, %d SMs, %.0f MB L2, %.1f GiB; CUDA runtime "
      "%d, driver %d\n",
      prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize / 1e6,
      prop.totalGlobalMem / double(1 << 30), runtime_version, driver_version);

  SlotTotals slot_totals;
  int case_index = 0;
  const std::pair<int64_t, int64_t> shard_and_dcp[] = {{1, 1}, {1, 4},  {2, 2},  {2, 4},
                                                       {4, 4}, {4, 16}, {16, 16}};
  for (const auto& [n, dcp] : shard_and_dcp) {
    for (const int64_t b : {16, 64, 768}) {
      for (const int64_t interleave : {int64_t{1}, int64_t{4}, b}) {
        const int64_t row_floats = case_index % 2 == 0 ? 576 : 75;
        RunSlotCase(case_index, {n, dcp, interleave, b, row_floats}, slot_totals);
        ++case_index;
      }
    }
  }
  RunGuardCases(slot_totals);

  MergeTotals merge_totals;
  int merge_index = 0;
  for (const MergeCase& c : MergeCases()) RunMergeCase(merge_index++, c, merge_totals);

  std::printf(
      "slot totals: %lld cases (%lld failed), %lld rank runs, %lld positions, %lld rows written, "
      "%lld errors reported, slot mismatches %lld, arena mismatches %lld over %.1f MB, CPU "
      "batch/per-position mismatches %lld\n",
      static_cast<long long>(slot_totals.cases), static_cast<long long>(slot_totals.failed_cases),
      static_cast<long long>(slot_totals.rank_runs), static_cast<long long>(slot_totals.positions),
      static_cast<long long>(slot_totals.written), static_cast<long long>(slot_totals.errors),
      static_cast<long long>(slot_totals.slot_mismatches),
      static_cast<long long>(slot_totals.arena_mismatches), slot_totals.arena_bytes_compared / 1e6,
      static_cast<long long>(slot_totals.cpu_batch_mismatches));
  std::printf(
      "merge totals: %lld cases (%lld failed), max rel vs CPU merge %.2e, vs one rank "
      "%.2e, max LSE error %.2e (tolerance %.0e)\n",
      static_cast<long long>(merge_totals.cases), static_cast<long long>(merge_totals.failed_cases),
      merge_totals.max_rel_vs_cpu, merge_totals.max_rel_vs_one_rank, merge_totals.max_lse_error,
      kMergeTolerance);
  if (timing) RunTimings(timing_reps);
  const bool pass = slot_totals.failed_cases == 0 && merge_totals.failed_cases == 0;
  std::printf("%s: %lld slot cases, %lld merge cases\n", pass ? "PASS" : "FAIL",
              static_cast<long long>(slot_totals.cases),
              static_cast<long long>(merge_totals.cases));
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace kvtopo::gpu

int main(int argc, char** argv) { return kvtopo::gpu::Main(argc, argv); }
