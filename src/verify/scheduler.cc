#include "verify/scheduler.h"

#include <fmt/format.h>

#include <algorithm>

#include "internal/split_mix.h"

namespace kvtopo::internal {
namespace {

// The scheduler only makes calls the runtime accepts: a refusal is a bug in the scheduler.
void Must(const Status& status) { KVTOPO_CHECK_MSG(status.ok(), status.message()); }

}  // namespace

Result<std::vector<VerifyRequestPlan>> PlanVerifyRequests(const Plan& plan,
                                                          const VerifyOptions& options) {
  const int64_t block = plan.scheduler_block_size;
  const int64_t max_len = plan.model.max_model_len;
  const int64_t step_tokens = 1 + plan.model.num_speculative_tokens;
  // Room after a prompt: the decode steps, the lookahead slots and the last sampled token.
  const int64_t tail = options.decode_steps * step_tokens + plan.model.num_lookahead_tokens + 2;
  if (block <= 0) return InvalidArgument("the plan has no scheduler block size");
  if (max_len - tail < 2) {
    return InvalidArgument(fmt::format(
        "--max-model-len {} leaves no room for a prompt before {} decode steps of {} tokens; "
        "raise --max-model-len or lower --decode-steps",
        max_len, options.decode_steps, step_tokens));
  }
  std::vector<VerifyRequestPlan> requests;
  for (int64_t i = 0; i < options.num_requests; ++i) {
    // A few tokens short of a scheduler-block boundary (a boundary of every group), so the
    // decode steps write across it.
    const int64_t short_by =
        1 + (3 * i) % std::max<int64_t>(1, options.decode_steps * step_tokens - 1);
    VerifyRequestPlan r{.prompt_len = std::min((i + 1) * block - short_by, max_len - tail),
                        .decode_steps = options.decode_steps};
    r.prompt_len = std::max<int64_t>(r.prompt_len, 2);
    if (i == 2) {
      // Request 1's prompt holds a full scheduler block: request 2 starts with it.
      r.shares_prefix_of = 1;
      r.shared_prefix_len = std::min({block, requests[1].prompt_len, r.prompt_len});
    }
    requests.push_back(r);
  }
  if (options.max_length_request) {
    requests.push_back({.prompt_len = max_len, .table_only = true});
  }
  return requests;
}

Result<int64_t> VerifyPoolBlocks(const Plan& plan, const std::vector<VerifyRequestPlan>& requests,
                                 int64_t max_num_batched_tokens) {
  const int64_t step_tokens = 1 + plan.model.num_speculative_tokens;
  int64_t data_blocks = 0, table_only_blocks = 0;
  for (const VerifyRequestPlan& r : requests) {
    const int64_t len =
        std::min(plan.model.max_model_len,
                 r.prompt_len + r.decode_steps * step_tokens + plan.model.num_lookahead_tokens + 1);
    int64_t blocks = 0;
    for (const PlannedGroup& g : plan.groups) {
      blocks += g.geometry.PagesForLength(len, max_num_batched_tokens);
    }
    (r.table_only ? table_only_blocks : data_blocks) += blocks;
  }
  const int64_t blocks = 1 + std::max(data_blocks, table_only_blocks);
  constexpr int64_t kMaxBlocks = int64_t{1} << 24;
  if (blocks > kMaxBlocks) {
    return OutOfRange(fmt::format(
        "the verify workload needs {} blocks, beyond verify's {}; lower --max-model-len", blocks,
        kMaxBlocks));
  }
  return blocks;
}

VerifyScheduler::VerifyScheduler(const VerifyOptions& options) : options_(options) {}

Result<std::unique_ptr<VerifyScheduler>> VerifyScheduler::Create(
    const Plan& plan, const VerifyOptions& options, std::vector<VerifyRequestPlan> requests,
    int64_t num_blocks, int32_t num_rows) {
  std::unique_ptr<VerifyScheduler> s(new VerifyScheduler(options));
  s->spec_tokens_ = plan.model.num_speculative_tokens;
  s->lookahead_ = plan.model.num_lookahead_tokens;
  s->max_model_len_ = plan.model.max_model_len;
  s->scheduler_block_ = plan.scheduler_block_size;
  s->budget_ = plan.cache.max_num_batched_tokens;
  s->token_state_ = options.seed ^ 0x746f6b656e73ULL;
  KVCacheManagerOptions mo{.num_blocks = static_cast<int32_t>(num_blocks),
                           .enable_prefix_caching = plan.prefix_caching(),
                           .hash_block_size = plan.hash_block_size,
                           .max_model_len = plan.model.max_model_len};
  for (const PlannedGroup& g : plan.groups) {
    mo.groups.push_back(
        {.geometry = g.geometry, .volatile_last_block = g.spec.volatile_last_block});
    if (g.geometry.kind() == CacheKind::kRecurrent &&
        g.geometry.recurrent_mode() == RecurrentMode::kAlign) {
      s->align_block_ = std::max(s->align_block_, g.geometry.block_size());
    }
  }
  KVTOPO_ASSIGN_OR_RETURN(s->manager_, KVCacheManager::Create(std::move(mo)));
  s->requests_.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    Request& r = s->requests_[i];
    r.index = static_cast<int64_t>(i);
    r.plan = requests[i];
    r.token_ids.reserve(r.plan.prompt_len + 1);
    for (int64_t t = 0; t < r.plan.prompt_len; ++t) {
      r.token_ids.push_back(r.plan.shares_prefix_of >= 0 && t < r.plan.shared_prefix_len
                                ? s->requests_[r.plan.shares_prefix_of].token_ids[t]
                                : s->NextTokenId());
    }
    s->reports_.push_back({.request = r.index, .table_only = r.plan.table_only});
    s->waiting_.push_back(&r);
  }
  for (int32_t row = num_rows - 1; row >= 0; --row) s->free_rows_.push_back(row);
  return s;
}

int32_t VerifyScheduler::NextTokenId() {
  const uint64_t x = SplitMix64(token_state_);
  token_state_ += 0x9e3779b97f4a7c15ULL;  // the next index of the sequence
  return static_cast<int32_t>(x & 0x3fffffff);
}

bool VerifyScheduler::Arrived(const Request& r) const {
  if (r.plan.table_only) {
    return std::all_of(requests_.begin(), requests_.end(), [](const Request& o) {
      return o.plan.table_only || o.state == State::kFinished;
    });
  }
  if (r.plan.shares_prefix_of >= 0) {
    const Request& source = requests_[r.plan.shares_prefix_of];
    return source.state == State::kFinished || source.computed >= source.plan.prompt_len;
  }
  return true;
}

int64_t VerifyScheduler::PrefillChunk(const Request& r, int64_t computed, int64_t budget) const {
  const int64_t remaining = r.prefill_target - computed;
  int64_t n = std::min(remaining, budget);
  // A chunk that reaches a scheduler-block boundary ends there: every group then holds a state
  // or block ending at it, which later requests can hit in the prefix cache.
  const int64_t boundary = (computed / scheduler_block_ + 1) * scheduler_block_;
  if (boundary - computed < n) return boundary - computed;
  if (align_block_ > 0 && n < remaining) {
    // Unfinished chunks end on a checkpoint boundary, as align mode requires.
    n = (computed + n) / align_block_ * align_block_ - computed;
    if (n <= 0) {
      const int64_t to_boundary = std::min(align_block_ - computed % align_block_, remaining);
      n = to_boundary <= budget ? to_boundary : 0;
    }
  }
  return n;
}

void VerifyScheduler::Preempt(Request& r) {
  Must(manager_->Free(RequestId(r.index)));
  free_rows_.push_back(r.row);
  r.row = -1;
  r.registered = false;
  r.computed = 0;
  r.state = State::kWaiting;
  running_.erase(std::find(running_.begin(), running_.end(), &r));
  waiting_.push_front(&r);
  ++preemptions_;
  ++reports_[r.index].preemptions;
}

void VerifyScheduler::Finish(Request& r) {
  Must(manager_->Free(RequestId(r.index)));
  free_rows_.push_back(r.row);
  r.row = -1;
  r.state = State::kFinished;
  running_.erase(std::find(running_.begin(), running_.end(), &r));
  reports_[r.index].num_tokens = static_cast<int64_t>(r.token_ids.size());
}

StepEntry VerifyScheduler::Entry(const Request& r, int64_t first, int64_t num_new,
                                 int64_t num_queries, int64_t tokens_from, bool clear_row) const {
  StepEntry e{.request = r.index,
              .row = r.row,
              .clear_row = clear_row,
              .table_only = r.plan.table_only,
              .first_position = first,
              .num_new = num_new,
              .num_queries = num_queries,
              .tokens_from = r.plan.table_only ? 0 : tokens_from};
  if (!r.plan.table_only) {
    const int64_t end = std::min<int64_t>(first + num_new, r.token_ids.size());
    e.token_ids.assign(r.token_ids.begin() + tokens_from, r.token_ids.begin() + end);
  }
  return e;
}

void VerifyScheduler::Commit(Request& r, const StepEntry& e) {
  const RequestId id(r.index);
  if (e.num_queries == 0) {  // a prefill chunk
    if (r.computed < r.prefill_target) return;
    if (r.plan.table_only || r.decode_done >= r.plan.decode_steps) {
      Finish(r);
      return;
    }
    const int32_t sampled = NextTokenId();
    r.token_ids.push_back(sampled);
    Must(manager_->AppendTokens(id, std::span(&sampled, 1)));
    return;
  }
  // Verification: the first `accepted` drafts stand, then a bonus token replaces the next one.
  const int64_t drafts = e.num_new - 1;
  const int64_t accepted = drafts == 0 ? 0 : (r.index + 3 * r.decode_done) % (drafts + 1);
  const int64_t rejected = drafts - accepted;
  if (rejected > 0) {
    Must(manager_->RewindComputedTokens(id, TokenCount(rejected)));
    r.computed -= rejected;
    reports_[r.index].rejected_drafts += rejected;
  }
  const size_t first_new = r.token_ids.size();
  r.token_ids.insert(r.token_ids.end(), e.token_ids.begin() + 1,
                     e.token_ids.begin() + 1 + accepted);
  r.token_ids.push_back(NextTokenId());
  Must(manager_->AppendTokens(id, std::span<const int32_t>(r.token_ids).subspan(first_new)));
  ++r.decode_done;
  const bool room =
      static_cast<int64_t>(r.token_ids.size()) + 1 + spec_tokens_ + lookahead_ <= max_model_len_;
  if (r.decode_done >= r.plan.decode_steps || !room) Finish(r);
}

Result<StepMessage> VerifyScheduler::Next() {
  StepMessage m;
  m.step = step_;
  if (std::all_of(requests_.begin(), requests_.end(),
                  [](const Request& r) { return r.state == State::kFinished; })) {
    m.done = true;
    return m;
  }
  ++step_;
  manager_->NewStep();
  int64_t budget = budget_;
  std::vector<std::pair<Request*, StepEntry>> scheduled;
  auto preempt = [&](Request& r) {
    std::erase_if(scheduled, [&](const auto& s) { return s.first == &r; });
    Preempt(r);
  };
  // The forced preemption: request 1 after its n-th decode step, resumed from the prefix cache.
  if (options_.preempt_after_decode_steps > 0 && requests_.size() > 1) {
    Request& r = requests_[1];
    if (r.state == State::kRunning && !r.plan.table_only && !r.preempted_once &&
        r.decode_done == options_.preempt_after_decode_steps) {
      r.preempted_once = true;
      preempt(r);
    }
  }
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Request& r = *running_[i];
    const bool decode = r.computed >= r.prefill_target;
    const int64_t num_new = decode ? std::min(1 + spec_tokens_, max_model_len_ - r.computed)
                                   : PrefillChunk(r, r.computed, budget);
    if (num_new <= 0 || num_new > budget) {
      ++i;
      continue;
    }
    const SlotRequest step{.num_new_tokens = TokenCount(num_new),
                           .num_lookahead_tokens = TokenCount(decode ? lookahead_ : 0)};
    bool ok;
    KVTOPO_ASSIGN_OR_RETURN(ok, manager_->AllocateSlots(RequestId(r.index), step));
    while (!ok && running_.back() != &r) {
      preempt(*running_.back());
      KVTOPO_ASSIGN_OR_RETURN(ok, manager_->AllocateSlots(RequestId(r.index), step));
    }
    if (!ok) {
      preempt(r);  // nothing newer to preempt
      continue;
    }
    StepEntry e;
    if (decode) {
      // Position c holds the last sampled token, c + 1 .. the drafts to verify.
      e = Entry(r, r.computed, num_new, num_new, r.computed, false);
      for (int64_t d = 1; d < num_new; ++d) e.token_ids.push_back(NextTokenId());
    } else {
      e = Entry(r, r.computed, num_new, 0, r.computed, false);
    }
    scheduled.emplace_back(&r, std::move(e));
    r.computed += num_new;
    budget -= num_new;
    ++i;
  }
  while (!waiting_.empty() && budget > 0 && !free_rows_.empty()) {
    Request& r = *waiting_.front();
    if (!Arrived(r)) break;
    const RequestId id(r.index);
    if (!r.registered) {
      KVTOPO_RETURN_IF_ERROR(manager_->AddRequest(id, r.token_ids));
      r.registered = true;
    }
    TokenCount found;
    KVTOPO_ASSIGN_OR_RETURN(found, manager_->GetComputedBlocks(id, computed_));
    const int64_t hits = found.value();
    r.prefill_target = static_cast<int64_t>(r.token_ids.size());
    const int64_t num_new = PrefillChunk(r, hits, budget);
    if (num_new <= 0) break;
    const SlotRequest step{.num_new_tokens = TokenCount(num_new),
                           .num_new_computed_tokens = TokenCount(hits),
                           .computed = &computed_};
    bool admitted;
    KVTOPO_ASSIGN_OR_RETURN(admitted, manager_->AllocateSlots(id, step));
    if (!admitted) break;
    waiting_.pop_front();
    r.state = State::kRunning;
    r.row = free_rows_.back();
    free_rows_.pop_back();
    running_.push_back(&r);
    reports_[r.index].prefix_hit_tokens += hits;
    r.computed = hits + num_new;
    budget -= num_new;
    scheduled.emplace_back(&r, Entry(r, hits, num_new, 0, 0, true));
  }
  if (scheduled.empty()) {
    const Request& r = waiting_.empty() ? *running_.front() : *waiting_.front();
    return Rejected(fmt::format(
        "request {} ({} tokens) cannot be scheduled: its next chunk does not fit the pool's {} "
        "free blocks or the {}-token step budget; raise --num-blocks or --max-num-batched-tokens",
        r.index, r.token_ids.size(), manager_->num_free_blocks(), budget_));
  }
  for (auto& [r, e] : scheduled) {
    for (int32_t g = 0; g < manager_->num_groups(); ++g) {
      const KVCacheManager::RowUpdate u = manager_->LastUpdate(RequestId(r->index), GroupId(g));
      e.updates.push_back(
          {.first_column = u.first_column,
           .block_ids = std::vector<BlockId>(u.block_ids.begin(), u.block_ids.end())});
    }
    tokens_scheduled_ += e.num_new;
    reports_[r->index].queries += e.num_queries;
  }
  manager_->CheckInvariants();
  for (auto& [r, e] : scheduled) {
    Commit(*r, e);
    m.entries.push_back(std::move(e));
  }
  return m;
}

}  // namespace kvtopo::internal
