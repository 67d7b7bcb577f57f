#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <numeric>

#include "internal/checked_math.h"
#include "internal/injected_faults.h"
#include "internal/split_mix.h"
#include "kvtopo/block_table.h"
#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/simulate.h"
#include "kvtopo/slot_mapping.h"

namespace kvtopo {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int32_t TokenId(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<int32_t>(
      internal::SplitMix64(seed ^ internal::SplitMix64(stream * 0x100000001b3ULL + index)) &
      0x3fffffff);
}

enum class State { kWaiting, kRunning, kFinished };

struct SimRequest {
  int64_t index = 0;
  const WorkloadRequest* spec = nullptr;
  std::vector<int32_t> tokens;  // prompt + outputs
  State state = State::kWaiting;
  bool registered = false;  // known to the manager
  int32_t row = -1;         // worker table row while running
  int64_t decode_done = 0;
  int64_t outputs = 0;
  int64_t computed = 0;  // the driver's count; CheckStep compares it with the manager's
};

struct Scheduled {
  SimRequest* request;
  int64_t first_position;
  int64_t num_new;
  bool decode;
};

class Simulator {
 public:
  Simulator(const Plan& plan, const Workload& workload, const SimulateOptions& options)
      : plan_(plan), workload_(workload), options_(options) {}

  Result<SimulateReport> Run();

 private:
  Status Setup();
  int64_t BlocksToFit() const;
  bool Allocate(SimRequest& r, const SlotRequest& step);
  void Preempt(SimRequest& r);
  void Finish(SimRequest& r);
  int64_t PrefillChunk(const SimRequest& r, int64_t computed, int64_t budget) const;
  void ApplyWorkerUpdates(const Scheduled& s);
  void CheckStep(int64_t step);
  void CheckSlots(const Scheduled& s);
  void Violation(std::string message, int64_t tokens);
  // The simulator only makes calls the runtime accepts; a refusal is a violation.
  bool Accepted(const Status& status) {
    if (status.ok()) [[likely]] {
      return true;
    }
    Violation("the runtime refused a call: " + status.message(), 0);
    return false;
  }
  void Execute(const Scheduled& s);

  const Plan& plan_;
  const Workload& workload_;
  const SimulateOptions& options_;
  SimulateReport report_;
  std::unique_ptr<KVCacheManager> manager_;
  std::vector<GroupGeometry> geometries_;        // as the worker tables see them
  std::vector<std::vector<BlockTable>> tables_;  // [rank][group]
  std::vector<SimRequest> requests_;
  std::deque<SimRequest*> waiting_;
  std::vector<SimRequest*> running_;
  std::vector<int32_t> free_rows_;
  int64_t dcp_ = 1;
  int64_t align_block_ = 0;  // recurrent align checkpoint cadence, 0 when none
  int64_t lookahead_ = 0;
  int64_t spec_tokens_ = 0;
  // Encoder tokens a request's admission allocates in the cross-attention groups (the model's
  // per input, at most the groups' bound); 0 without them.
  int64_t encoder_tokens_ = 0;
  int64_t chunk_cap_ = 0;
  int64_t max_model_len_ = 0;
  bool stop_ = false;
  // Reused scratch.
  ComputedBlocks computed_;
  std::vector<TokenPos> positions_;
  std::vector<int64_t> slots_;
  std::vector<int32_t> holders_;
  struct Stamp {
    int64_t epoch = -1;
    int32_t group = 0;
    int64_t column = 0;
  };
  std::vector<Stamp> stamps_;
  int64_t epoch_ = 0;
  int64_t pool_blocks_walked_ = 0;   // blocks visited by the whole-pool walks so far
  int64_t last_pool_walk_step_ = 0;  // the last step after which the pool was walked
  std::vector<int64_t> pages_now_;
  std::vector<int64_t> peak_local_tokens_;  // per rank, first sharded group
  double hash_seconds_ = 0;
};

int64_t Simulator::BlocksToFit() const {
  // The requests that can be running at once (arrival order, max_num_seqs), each at full length.
  std::vector<int64_t> need;
  for (const SimRequest& r : requests_) {
    const int64_t len =
        std::min(max_model_len_,
                 r.spec->prompt_len + r.spec->decode_steps * (1 + spec_tokens_) + lookahead_ + 1);
    int64_t blocks = 0;
    for (const PlannedGroup& g : plan_.groups) {
      blocks += g.geometry.PagesForLength(len, options_.max_num_batched_tokens);
    }
    need.push_back(blocks);
  }
  std::sort(need.rbegin(), need.rend());
  const size_t concurrent = std::min<size_t>(need.size(), options_.max_num_seqs);
  return 1 + std::accumulate(need.begin(), need.begin() + concurrent, int64_t{0});
}

Status Simulator::Setup() {
  if (plan_.groups.empty()) return InvalidArgument("the plan has no cache groups");
  if (!plan_.accepted()) {
    return Rejected("the launch is rejected: " + plan_.model.model_name + plan_.ErrorLines());
  }
  dcp_ = plan_.groups.front().geometry.dcp_size();  // ranks in the DCP group, from the geometry
  max_model_len_ = plan_.model.max_model_len;
  lookahead_ = workload_.num_lookahead_tokens >= 0 ? workload_.num_lookahead_tokens
                                                   : plan_.model.num_lookahead_tokens;
  spec_tokens_ = workload_.num_speculative_tokens >= 0 ? workload_.num_speculative_tokens
                                                       : plan_.model.num_speculative_tokens;
  for (const PlannedGroup& g : plan_.groups) {
    if (!g.geometry.cross_attention()) continue;
    const int64_t bound = g.geometry.max_encoder_tokens();
    const int64_t per_input = plan_.model.encoder_tokens_per_request;
    encoder_tokens_ = per_input > 0 ? std::min(per_input, bound) : bound;
  }
  chunk_cap_ = workload_.prefill_chunk_tokens > 0 ? workload_.prefill_chunk_tokens
                                                  : options_.prefill_chunk_tokens;
  if (chunk_cap_ <= 0) chunk_cap_ = options_.max_num_batched_tokens;
  for (const PlannedGroup& g : plan_.groups) {
    if (g.spec.kind == CacheKind::kRecurrent && g.spec.recurrent_mode == RecurrentMode::kAlign) {
      align_block_ = std::max(align_block_, g.geometry.block_size());
    }
  }
  requests_.resize(workload_.requests.size());
  for (size_t i = 0; i < requests_.size(); ++i) {
    SimRequest& r = requests_[i];
    r.index = static_cast<int64_t>(i);
    r.spec = &workload_.requests[i];
    if (r.spec->prompt_len >= max_model_len_ + 1) {
      return InvalidArgument(
          fmt::format("workload request {} has a {}-token prompt; --max-model-len is {}", i,
                      r.spec->prompt_len, max_model_len_));
    }
    r.tokens.reserve(r.spec->prompt_len + 1);
    for (int64_t t = 0; t < r.spec->prompt_len; ++t) {
      const bool shared = r.spec->shared_prefix_id >= 0 && t < r.spec->shared_prefix_len;
      const uint64_t stream = shared ? static_cast<uint64_t>(r.spec->shared_prefix_id) << 1
                                     : (static_cast<uint64_t>(i) << 1) | 1;
      r.tokens.push_back(TokenId(options_.seed, stream, static_cast<uint64_t>(t)));
    }
  }
  int64_t num_blocks = options_.num_blocks;
  if (num_blocks <= 0) {
    num_blocks = BlocksToFit();
    report_.pool_sizing = fmt::format(
        "sized to fit: 1 null block + the {} largest concurrent requests at full length",
        std::min<size_t>(requests_.size(), options_.max_num_seqs));
  } else {
    report_.pool_sizing = fmt::format("{} blocks from {}", num_blocks, options_.num_blocks_source);
  }
  // Block metadata, ownership stamps and per-rank tables are held in memory: keep them bounded.
  constexpr int64_t kMaxBlocks = int64_t{1} << 26;
  if (num_blocks > kMaxBlocks) {
    return OutOfRange(fmt::format(
        "a pool of {} blocks (from {}) is beyond the simulator's {} blocks", num_blocks,
        options_.num_blocks > 0 ? options_.num_blocks_source : "sizing to fit the workload",
        kMaxBlocks));
  }
  if (options_.max_num_seqs <= 0 || options_.max_num_seqs > (int64_t{1} << 16)) {
    return InvalidArgument(fmt::format(
        "--max-num-seqs {} is outside the simulator's range [1, 65536]", options_.max_num_seqs));
  }
  report_.num_blocks = num_blocks;

  KVTOPO_ASSIGN_OR_RETURN(
      KVCacheManagerOptions mo,
      KVCacheManagerOptions::FromPlan(plan_, num_blocks, options_.enable_prefix_caching));
  for (const PlannedGroup& g : plan_.groups) {
    // The pre-fix rule, on request: cdiv(L, B * N) + S columns for recurrent tables.
    const GroupGeometry worker = options_.inject_dcp_scaled_recurrent_table
                                     ? internal::DcpScaledRecurrentTable(g.geometry)
                                     : g.geometry;
    geometries_.push_back(worker);
    report_.groups.push_back({.group = g.id.value(),
                              .kind = std::string(SpecKindName(g.spec)),
                              .placement = std::string(PlacementName(g.geometry.placement())),
                              .table_width = worker.block_table_width()});
  }
  KVTOPO_ASSIGN_OR_RETURN(manager_, KVCacheManager::Create(std::move(mo)));
  const int32_t rows = static_cast<int32_t>(options_.max_num_seqs);
  tables_.resize(dcp_);
  for (int64_t r = 0; r < dcp_; ++r) {
    for (const GroupGeometry& g : geometries_) tables_[r].emplace_back(g, rows);
  }
  for (int32_t row = rows - 1; row >= 0; --row) free_rows_.push_back(row);
  stamps_.assign(num_blocks, {});
  pages_now_.assign(plan_.groups.size(), 0);
  peak_local_tokens_.assign(dcp_, 0);
  for (SimRequest& r : requests_) waiting_.push_back(&r);
  std::stable_sort(waiting_.begin(), waiting_.end(), [](const SimRequest* a, const SimRequest* b) {
    return a->spec->arrival_step < b->spec->arrival_step;
  });
  report_.model = plan_.model.model_name;
  report_.workload = workload_.name;
  return Status::Ok();
}

// Untimed: callers time runs of consecutive calls, so the clock is read twice per run rather
// than twice per call (a clock read costs about as much as a decode-step allocation).
bool Simulator::Allocate(SimRequest& r, const SlotRequest& step) {
  const Result<bool> allocated = manager_->AllocateSlots(RequestId(r.index), step);
  if (!Accepted(allocated.status())) return false;
  const bool ok = *allocated;
  ++report_.allocate_slots_calls;
  if (ok) {
    ++report_.allocations;
  } else {
    ++report_.allocation_failures;
  }
  return ok;
}

void Simulator::Preempt(SimRequest& r) {
  const auto t0 = Clock::now();
  Accepted(manager_->Free(RequestId(r.index)));
  report_.free_seconds += Seconds(Clock::now() - t0);
  ++report_.free_calls;
  ++report_.preemptions;
  for (auto& rank : tables_) {
    for (BlockTable& t : rank) t.ClearRow(r.row);
  }
  free_rows_.push_back(r.row);
  r.row = -1;
  r.registered = false;
  r.computed = 0;
  r.state = State::kWaiting;
  running_.erase(std::find(running_.begin(), running_.end(), &r));
  waiting_.push_front(&r);
}

void Simulator::Finish(SimRequest& r) {
  const auto t0 = Clock::now();
  Accepted(manager_->Free(RequestId(r.index)));
  report_.free_seconds += Seconds(Clock::now() - t0);
  ++report_.free_calls;
  for (auto& rank : tables_) {
    for (BlockTable& t : rank) t.ClearRow(r.row);
  }
  free_rows_.push_back(r.row);
  r.row = -1;
  r.state = State::kFinished;
  running_.erase(std::find(running_.begin(), running_.end(), &r));
  r.tokens = {};
  ++report_.requests_finished;
}

// A prefill chunk: capped by the budget and the chunk size; when a recurrent align group exists,
// chunks that do not finish the prompt end on its block boundaries.
int64_t Simulator::PrefillChunk(const SimRequest& r, int64_t computed, int64_t budget) const {
  const int64_t remaining = static_cast<int64_t>(r.tokens.size()) - computed;
  int64_t n = std::min({remaining, budget, chunk_cap_});
  if (align_block_ > 0 && n < remaining) {
    n = (computed + n) / align_block_ * align_block_ - computed;
    if (n <= 0) {
      // The chunk cap is below one checkpoint: run to the next boundary if the budget allows.
      const int64_t to_boundary = align_block_ - computed % align_block_;
      n = std::min(to_boundary, remaining) <= budget ? std::min(to_boundary, remaining) : 0;
    }
  }
  return n;
}

void Simulator::Violation(std::string message, int64_t tokens) {
  ++report_.invariant_violations;
  if (report_.first_violation.empty()) {
    report_.first_violation = std::move(message);
    report_.first_violation_tokens = tokens;
  }
  stop_ = true;
}

void Simulator::ApplyWorkerUpdates(const Scheduled& s) {
  const RequestId id(s.request->index);
  for (size_t g = 0; g < geometries_.size(); ++g) {
    const auto update = manager_->LastUpdate(id, GroupId(static_cast<int32_t>(g)));
    if (update.block_ids.empty()) continue;
    for (int64_t rank = 0; rank < dcp_; ++rank) {
      Status st = tables_[rank][g].WriteFrom(s.request->row, update.first_column, update.block_ids);
      if (!st.ok()) {
        const int64_t tokens = s.first_position + s.num_new;
        Violation(
            fmt::format("rank {} group {} ({}): a row of {} columns cannot hold column {} "
                        "needed at {} tokens: {}",
                        rank, g, SpecKindName(plan_.groups[g].spec),
                        geometries_[g].manager_table_width(),
                        update.first_column + static_cast<int64_t>(update.block_ids.size()) - 1,
                        tokens, st.message()),
            tokens);
        return;
      }
    }
  }
}

void Simulator::CheckSlots(const Scheduled& s) {
  const int64_t n = s.num_new;
  positions_.resize(n);
  for (int64_t i = 0; i < n; ++i) positions_[i] = TokenPos(s.first_position + i);
  slots_.resize(n);
  for (size_t g = 0; g < geometries_.size(); ++g) {
    const GroupGeometry& geo = geometries_[g];
    if (geo.kind() == CacheKind::kRecurrent) continue;
    holders_.assign(n, 0);
    for (int64_t rank = 0; rank < dcp_; ++rank) {
      const BlockTable& table = tables_[rank][g];
      const SlotLayout layout = geo.SlotLayoutFor(Rank(static_cast<int32_t>(rank)));
      std::span<const int32_t> row =
          table.Row(s.request->row).subspan(0, table.row_length(s.request->row));
      Status st = ComputeSlotMapping(layout, row, positions_, slots_);
      if (!st.ok()) {
        Violation(fmt::format("rank {} group {}: slot mapping failed: {}", rank, g, st.message()),
                  s.first_position + n);
        return;
      }
      for (int64_t i = 0; i < n; ++i) holders_[i] += slots_[i] != kPadSlot;
    }
    // Oracle (independent of the slot mapping under test): each slice is held by N / n ranks.
    const int64_t expected = dcp_ / geo.dcp_shard_count();
    for (int64_t i = 0; i < n; ++i) {
      if (holders_[i] != expected) {
        Violation(fmt::format("group {} ({}): position {} is held by {} ranks, expected {}", g,
                              PlacementName(geo.placement()), s.first_position + i, holders_[i],
                              expected),
                  s.first_position + n);
        return;
      }
    }
  }
}

// Every non-null block belongs to one (group, column) across all live rows (shared prefix
// blocks repeat only at that place), and every rank's table holds the manager's block there.
void Simulator::CheckStep(int64_t step) {
  ++report_.invariant_checks;
  // The manager's whole-pool walk: after every step while within the budget (walks only add to
  // the count, so those steps are 1, 2, ..., K), then after steps 2^k.
  const bool within_budget =
      pool_blocks_walked_ + report_.num_blocks <= options_.whole_pool_check_budget;
  if (within_budget || (step & (step - 1)) == 0) {
    if (within_budget) report_.pool_check_every_step_until = step;
    manager_->CheckInvariants();
    ++report_.pool_checks;
    pool_blocks_walked_ += report_.num_blocks;
    last_pool_walk_step_ = step;
  }
  ++epoch_;
  std::fill(pages_now_.begin(), pages_now_.end(), 0);
  for (SimRequest* r : running_) {
    const RequestId id(r->index);
    if (manager_->num_computed_tokens(id).value() != r->computed) {
      Violation(fmt::format("request {}: the manager counts {} computed tokens, the driver {}",
                            r->index, manager_->num_computed_tokens(id).value(), r->computed),
                r->computed);
      return;
    }
    for (size_t g = 0; g < geometries_.size(); ++g) {
      const auto blocks = manager_->BlockIds(id, GroupId(static_cast<int32_t>(g)));
      const int64_t k = tables_[0][g].kernel_blocks_per_block();
      for (size_t col = 0; col < blocks.size(); ++col) {
        const int32_t b = blocks[col].value();
        if (b == kNullBlock.value()) continue;
        Stamp& stamp = stamps_[b];
        if (stamp.epoch == epoch_) {
          if (stamp.group != static_cast<int32_t>(g) || stamp.column != static_cast<int64_t>(col)) {
            Violation(fmt::format("block {} is owned by group {} column {} and group {} column {}",
                                  b, stamp.group, stamp.column, g, col),
                      static_cast<int64_t>(r->tokens.size()));
            return;
          }
        } else {
          stamp = {epoch_, static_cast<int32_t>(g), static_cast<int64_t>(col)};
          ++pages_now_[g];
        }
        for (int64_t rank = 0; rank < dcp_; ++rank) {
          const BlockTable& t = tables_[rank][g];
          const int64_t kcol = static_cast<int64_t>(col) * k;
          if (kcol >= t.row_length(r->row) || t.Row(r->row)[kcol] != b * k) {
            Violation(fmt::format("rank {} group {}: table row of request {} disagrees with the "
                                  "scheduler at column {}",
                                  rank, g, r->index, col),
                      static_cast<int64_t>(r->tokens.size()));
            return;
          }
        }
      }
    }
  }
  for (size_t g = 0; g < pages_now_.size(); ++g) {
    report_.groups[g].peak_pages = std::max(report_.groups[g].peak_pages, pages_now_[g]);
  }
  // Tokens each rank stores for the first sharded group (its local lengths).
  for (const GroupGeometry& geo : geometries_) {
    if (geo.placement() != Placement::kSharded) continue;
    for (int64_t rank = 0; rank < dcp_; ++rank) {
      int64_t local = 0;
      for (SimRequest* r : running_) {
        local += geo.LocalLength(Rank(static_cast<int32_t>(rank)), TokenCount(r->computed)).value();
      }
      peak_local_tokens_[rank] = std::max(peak_local_tokens_[rank], local);
    }
    break;
  }
}

void Simulator::Execute(const Scheduled& s) {
  SimRequest& r = *s.request;
  const RequestId id(r.index);
  if (!s.decode) {
    if (r.computed < static_cast<int64_t>(r.tokens.size())) return;  // more prefill to come
  }
  if (s.decode && s.num_new > 1) {
    const auto& pattern = r.spec->accepted_drafts;
    int64_t accepted = pattern.empty() ? s.num_new - 1 : pattern[r.decode_done % pattern.size()];
    accepted = std::min(accepted, s.num_new - 1);
    Accepted(manager_->RewindComputedTokens(id, TokenCount(s.num_new - 1 - accepted)));
    r.computed -= s.num_new - 1 - accepted;
    r.outputs = accepted + 1;
  } else {
    r.outputs = 1;
  }
  if (s.decode) ++r.decode_done;
  const bool done = r.decode_done >= r.spec->decode_steps ||
                    static_cast<int64_t>(r.tokens.size()) + r.outputs >= max_model_len_;
  if (done) {
    Finish(r);
    return;
  }
  const size_t first = r.tokens.size();
  for (int64_t i = 0; i < r.outputs; ++i) {
    r.tokens.push_back(
        TokenId(options_.seed, (static_cast<uint64_t>(r.index) << 1) | 1, first + i));
  }
  const auto t0 = Clock::now();
  Accepted(manager_->AppendTokens(id, std::span<const int32_t>(r.tokens).subspan(first)));
  hash_seconds_ += Seconds(Clock::now() - t0);
}

Result<SimulateReport> Simulator::Run() {
  KVTOPO_RETURN_IF_ERROR(Setup());
  const auto wall0 = Clock::now();
  std::vector<Scheduled> scheduled;
  int64_t step = 0;
  const int64_t total = static_cast<int64_t>(requests_.size());
  int64_t expected_tokens = 0;  // for progress: prompts plus decode steps, before preemptions
  for (const SimRequest& r : requests_) {
    expected_tokens += r.spec->prompt_len + r.spec->decode_steps * (1 + spec_tokens_);
  }
  while (report_.requests_finished < total && step < options_.max_steps && !stop_) {
    manager_->NewStep();
    int64_t budget = options_.max_num_batched_tokens;
    scheduled.clear();
    // Running requests first. The allocate timer covers the loop minus preemptions; it is cut
    // where the calls switch between decode and prefill so decode calls are also timed apart.
    auto timer = Clock::now();
    bool timing_decode = false;
    auto stop_timer = [&] {
      const double s = Seconds(Clock::now() - timer);
      report_.allocate_slots_seconds += s;
      if (timing_decode) report_.decode_allocate_slots_seconds += s;
    };
    for (size_t i = 0; i < running_.size() && budget > 0;) {
      SimRequest& r = *running_[i];
      const int64_t computed = r.computed;
      const bool decode = computed >= static_cast<int64_t>(r.tokens.size()) - 1 && r.outputs > 0;
      int64_t num_new = decode ? std::min<int64_t>(1 + spec_tokens_, max_model_len_ - computed)
                               : PrefillChunk(r, computed, budget);
      if (num_new <= 0 || num_new > budget) {
        ++i;
        continue;
      }
      if (decode != timing_decode) {
        stop_timer();
        timing_decode = decode;
        timer = Clock::now();
      }
      SlotRequest req{.num_new_tokens = TokenCount(num_new),
                      .num_lookahead_tokens = TokenCount(lookahead_)};
      bool ok = Allocate(r, req);
      report_.decode_allocate_slots_calls += decode ? 1 : 0;
      while (!ok && running_.back() != &r) {
        stop_timer();
        Preempt(*running_.back());
        timer = Clock::now();
        ok = Allocate(r, req);
        report_.decode_allocate_slots_calls += decode ? 1 : 0;
      }
      if (!ok) {
        stop_timer();
        Preempt(r);  // nothing left to preempt but itself
        timer = Clock::now();
        break;
      }
      scheduled.push_back({&r, computed, num_new, decode});
      r.computed = computed + num_new;
      budget -= num_new;
      ++i;
    }
    stop_timer();
    // Admissions in arrival order.
    while (!waiting_.empty() && budget > 0 && !free_rows_.empty() &&
           waiting_.front()->spec->arrival_step <= step) {
      SimRequest& r = *waiting_.front();
      const RequestId id(r.index);
      if (!r.registered) {
        const auto t0 = Clock::now();
        Accepted(manager_->AddRequest(id, r.tokens));
        hash_seconds_ += Seconds(Clock::now() - t0);
        r.registered = true;
      }
      const auto t0 = Clock::now();
      const Result<TokenCount> found = manager_->GetComputedBlocks(id, computed_);
      const int64_t hits = Accepted(found.status()) ? found->value() : 0;
      report_.get_computed_blocks_seconds += Seconds(Clock::now() - t0);
      ++report_.get_computed_blocks_calls;
      const int64_t num_new = PrefillChunk(r, hits, budget);
      if (num_new <= 0) break;
      SlotRequest req{.num_new_tokens = TokenCount(num_new),
                      .num_new_computed_tokens = TokenCount(hits),
                      .computed = &computed_,
                      .num_encoder_tokens = TokenCount(encoder_tokens_)};
      const auto t1 = Clock::now();
      const bool admitted = Allocate(r, req);
      report_.allocate_slots_seconds += Seconds(Clock::now() - t1);
      if (!admitted) break;
      report_.prefix_query_tokens += static_cast<int64_t>(r.tokens.size());
      report_.prefix_hit_tokens += hits;
      waiting_.pop_front();
      r.state = State::kRunning;
      r.row = free_rows_.back();
      free_rows_.pop_back();
      running_.push_back(&r);
      scheduled.push_back({&r, hits, num_new, false});
      r.computed = hits + num_new;
      budget -= num_new;
    }
    ++step;
    if (scheduled.empty()) {
      if (running_.empty() && !waiting_.empty() && waiting_.front()->spec->arrival_step >= step) {
        continue;  // idle until the next arrival
      }
      if (running_.empty() && waiting_.empty()) break;
      if (running_.empty()) {
        return Rejected(fmt::format(
            "request {} ({} tokens) cannot be admitted: its first chunk does not fit the pool of "
            "{} blocks or the {}-token step budget",
            waiting_.front()->index, waiting_.front()->tokens.size(), report_.num_blocks,
            options_.max_num_batched_tokens));
      }
    }
    for (const Scheduled& s : scheduled) {
      report_.tokens_scheduled += s.num_new;
      ApplyWorkerUpdates(s);
      if (stop_) break;
      if (options_.check_slot_mapping) CheckSlots(s);
      if (stop_) break;
    }
    if (options_.check_invariants && !stop_) CheckStep(step);
    if (stop_) break;
    report_.free_pages_after_last_step = manager_->num_free_blocks();
    report_.min_free_pages = std::min(report_.min_free_pages, report_.free_pages_after_last_step);
    for (const Scheduled& s : scheduled) Execute(s);
    if (options_.progress && step % 64 == 0) {
      options_.progress(report_.tokens_scheduled, expected_tokens);
    }
  }
  if (options_.check_invariants && !stop_ && last_pool_walk_step_ != step) {
    manager_->CheckInvariants();  // the end state: every finished request has released its blocks
    ++report_.pool_checks;
  }
  report_.steps = step;
  report_.wall_seconds = Seconds(Clock::now() - wall0);
  report_.runtime_seconds =
      report_.get_computed_blocks_seconds + report_.allocate_slots_seconds + report_.free_seconds;
  report_.hash_seconds = hash_seconds_;
  report_.prefix_hit_rate =
      report_.prefix_query_tokens > 0
          ? static_cast<double>(report_.prefix_hit_tokens) / report_.prefix_query_tokens
          : 0.0;
  for (size_t g = 0; g < report_.groups.size(); ++g) report_.groups[g].pages_at_end = pages_now_[g];
  for (int64_t rank = 0; rank < dcp_; ++rank) {
    report_.ranks.push_back({.rank = static_cast<int32_t>(rank),
                             .free_pages = manager_->num_free_blocks(),
                             .peak_local_tokens = peak_local_tokens_[rank]});
  }
  if (!stop_ && report_.requests_finished < total) {
    return Internal(fmt::format("the workload did not finish within {} steps", options_.max_steps));
  }
  return std::move(report_);
}

}  // namespace

Result<SimulateReport> Simulate(const Plan& plan, const Workload& workload,
                                const SimulateOptions& options) {
  Simulator sim(plan, workload, options);
  return sim.Run();
}

}  // namespace kvtopo
