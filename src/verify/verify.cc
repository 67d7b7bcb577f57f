#include "kvtopo/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include "internal/checked_math.h"
#include "internal/injected_faults.h"
#include "kvtopo/slot_mapping.h"
#include "verify/rank.h"
#include "verify/scheduler.h"
#include "verify/setup.h"

namespace kvtopo {
namespace internal {
namespace {

// The paged caches of one process's ranks together stay under this.
constexpr int64_t kArenaBytesPerProcess = int64_t{8} << 30;
// One query token's heads x widths (4 MiB of floats).
constexpr int64_t kMaxFloatsPerQueryToken = int64_t{1} << 20;

Status ValidateOptions(const VerifyOptions& o) {
  auto range = [](const char* flag, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi) {
      return InvalidArgument(fmt::format("{} {} is outside [{}, {}]", flag, v, lo, hi));
    }
    return Status::Ok();
  };
  KVTOPO_RETURN_IF_ERROR(range("--requests", o.num_requests, 0, 64));
  KVTOPO_RETURN_IF_ERROR(range("--decode-steps", o.decode_steps, 1, 1000));
  KVTOPO_RETURN_IF_ERROR(range("--preempt-after", o.preempt_after_decode_steps, 0, 1000));
  KVTOPO_RETURN_IF_ERROR(range("--mla-latent-dim", o.mla_latent_dim, 1, 4096));
  KVTOPO_RETURN_IF_ERROR(range("--mla-rope-dim", o.mla_rope_dim, 0, 4096));
  KVTOPO_RETURN_IF_ERROR(range("--head-dim", o.head_dim, 1, 4096));
  KVTOPO_RETURN_IF_ERROR(range("--kv-heads", o.num_kv_heads, 1, 256));
  KVTOPO_RETURN_IF_ERROR(range("--query-heads-per-kv", o.num_query_heads_per_kv, 1, 256));
  KVTOPO_RETURN_IF_ERROR(range("--mla-query-heads", o.num_mla_query_heads, 1, 1024));
  KVTOPO_RETURN_IF_ERROR(range("--num-blocks", o.num_blocks, 0, int64_t{1} << 24));
  if (o.num_requests == 0 && !o.max_length_request) {
    return InvalidArgument(
        "--requests 0 with --no-max-length-request leaves nothing to verify; ask for a request");
  }
  if (!(std::isfinite(o.max_relative_error) && o.max_relative_error > 0)) {
    return InvalidArgument(
        fmt::format("--max-relative-error {} must be positive and finite", o.max_relative_error));
  }
  return Status::Ok();
}

Result<HeadDims> DimsFor(const PlannedGroup& g, const VerifyOptions& o) {
  HeadDims d;
  if (IsMla(g.spec.kind)) {
    d.mla = true;
    d.num_query_heads = o.num_mla_query_heads;
    if (o.real_head_dims) {
      // MLA rows: the latent, then the spec's rope floats.
      d.key_dim = g.spec.head_size;
      d.value_dim = g.spec.head_size - g.spec.mla_rope_dim;
    } else {
      d.key_dim = o.mla_latent_dim + o.mla_rope_dim;
      d.value_dim = o.mla_latent_dim;
    }
  } else {
    d.num_kv_heads = o.real_head_dims ? g.spec.num_kv_heads : o.num_kv_heads;
    d.key_dim = o.real_head_dims ? g.spec.head_size : o.head_dim;
    d.value_dim = o.real_head_dims && g.spec.head_size_v > 0 ? g.spec.head_size_v : d.key_dim;
    d.num_query_heads = d.num_kv_heads * o.num_query_heads_per_kv;
  }
  if (d.key_dim <= 0 || d.value_dim <= 0 || d.num_kv_heads <= 0) {
    return InvalidArgument(
        fmt::format("group {}: its spec has no head widths for --real-head-dims", g.id.value()));
  }
  // One query token's heads (keys in, partial outputs out) are held per rank and gathered:
  // bounded so that in-range flags cannot ask for gigabytes per token.
  const int64_t floats = d.num_query_heads * (std::max(d.key_dim, d.value_dim) + 1);
  if (floats > kMaxFloatsPerQueryToken) {
    return InvalidArgument(fmt::format(
        "group {}: {} query heads x {} floats is {} floats per query token, beyond verify's {}; "
        "lower --kv-heads, --query-heads-per-kv, --head-dim, --mla-query-heads or "
        "--mla-latent-dim",
        g.id.value(), d.num_query_heads, std::max(d.key_dim, d.value_dim) + 1, floats,
        kMaxFloatsPerQueryToken));
  }
  return d;
}

Result<VerifySetup> BuildSetup(const Plan& plan, const VerifyOptions& o, const VerifyFaults& faults,
                               int64_t num_blocks, int32_t num_rows) {
  VerifySetup s;
  s.seed = o.seed;
  s.dcp_size = plan.groups.front().geometry.dcp_size();
  s.num_rows = num_rows;
  s.num_blocks = num_blocks;
  s.faults = faults;
  for (const PlannedGroup& g : plan.groups) {
    VerifyGroup v{.id = g.id.value(),
                  .geometry = faults.dcp_scaled_recurrent_table
                                  ? DcpScaledRecurrentTable(g.geometry)
                                  : g.geometry,
                  .role = g.role,
                  .attention = IsAttention(g.spec.kind),
                  .causal = g.spec.causal};
    KVTOPO_CHECK(v.id == static_cast<int32_t>(s.groups.size()));
    if (v.attention) {
      KVTOPO_ASSIGN_OR_RETURN(v.dims, DimsFor(g, o));
      KVTOPO_ASSIGN_OR_RETURN(
          int64_t page, CheckedMul(g.geometry.block_size(), v.dims.row_floats(), "verify page"));
      s.page_stride_floats = std::max(s.page_stride_floats, page);
      if (s.target_group_for_draft_fault < 0 && g.role == Role::kTarget &&
          g.geometry.placement() == Placement::kSharded) {
        s.target_group_for_draft_fault = v.id;
      }
    }
    s.groups.push_back(v);
  }
  return s;
}

// The report's view of one group, and the checks rank 0 runs on every step's gathered outputs.
class Checker {
 public:
  Checker(const Plan& plan, const VerifySetup& setup, const VerifyOptions& options,
          VerifyReport& report)
      : setup_(setup), options_(options), report_(report) {
    for (const VerifyGroup& g : setup.groups) {
      const PlannedGroup& p = plan.groups[g.id];
      report.groups.push_back({.group = g.id,
                               .kind = std::string(SpecKindName(p.spec)),
                               .role = std::string(RoleName(p.role)),
                               .placement = std::string(PlacementName(g.geometry.placement())),
                               .dcp_shard_count = g.geometry.dcp_shard_count(),
                               .block_size = g.geometry.block_size(),
                               .kernel_block_size = g.geometry.kernel_block_size(),
                               .interleave = g.geometry.interleave(),
                               .attention = g.attention});
    }
  }

  // Returns false when a check failed (report_.failure says where).
  bool Check(const StepMessage& m, const RankOutputLayout& layout, std::span<const std::byte> all);

 private:
  struct Candidate {
    int order = 0;  // which check: the root cause first
    VerifyFailure failure;
  };
  struct Reference {
    RequestTokens tokens;
    std::vector<std::vector<float>> rows;  // [group] positions x row floats
  };

  std::span<const std::byte> RankOutput(std::span<const std::byte> all, size_t size, int64_t r) {
    return all.subspan(r * size, size);
  }
  void UpdateReference(const StepEntry& e);
  void Propose(int order, const VerifyGroup& group, int64_t request, int64_t position, int32_t rank,
               std::string check, std::string detail);
  std::string GroupName(const VerifyGroup& g) const;
  void CheckRankFailure(const RankFailure& f, int32_t rank);
  void CheckAttention(const StepEntry& e, const VerifyGroup& group, size_t layout_size,
                      std::span<const std::byte> all, size_t offset);

  const VerifySetup& setup_;
  const VerifyOptions& options_;
  VerifyReport& report_;
  std::map<int64_t, Reference> references_;
  std::vector<Candidate> candidates_;
  std::vector<float> merged_, reference_, query_;
};

std::string Checker::GroupName(const VerifyGroup& g) const {
  return fmt::format("group {} ({} {}, {})", g.id, report_.groups[g.id].kind,
                     report_.groups[g.id].role, report_.groups[g.id].placement);
}

void Checker::Propose(int order, const VerifyGroup& group, int64_t request, int64_t position,
                      int32_t rank, std::string check, std::string detail) {
  std::string where =
      fmt::format("{}, request {}, position {}", GroupName(group), request, position);
  candidates_.push_back({order,
                         {.group = group.id,
                          .request = request,
                          .position = position,
                          .rank = rank,
                          .check = std::move(check),
                          .message = fmt::format("{}: {}", where, detail)}});
}

void Checker::UpdateReference(const StepEntry& e) {
  Reference& ref = references_[e.request];
  ref.tokens.Apply(e);
  ref.rows.resize(setup_.groups.size());
  const int64_t end = e.first_position + e.num_new;
  for (const VerifyGroup& g : setup_.groups) {
    if (!g.attention) continue;
    std::vector<float>& rows = ref.rows[g.id];
    const int64_t width = g.dims.row_floats();
    const int64_t keep =
        std::min<int64_t>(static_cast<int64_t>(rows.size()) / width, e.tokens_from);
    rows.resize(end * width);
    for (int64_t p = keep; p < end; ++p) {
      FillKvRow(setup_.seed, g.id, ref.tokens.content_hashes[p],
                std::span(rows.data() + p * width, width));
    }
  }
}

void Checker::CheckRankFailure(const RankFailure& f, int32_t rank) {
  if (f.check == RankCheck::kNone) return;
  const VerifyGroup& g = setup_.groups.at(f.group);
  switch (f.check) {
    case RankCheck::kNone:
      return;
    case RankCheck::kTable: {
      static constexpr const char* kWhat[] = {
          "the row update needs {2} manager columns, but rank {3}'s block table has {1}",
          "the running state's checkpoint column {0} lies past rank {3}'s row ({1} columns wide)",
          "the running state's checkpoint column {0} holds the null block on rank {3}",
          "rank {3}'s slot mapping cannot address the position: its row has {1} kernel blocks"};
      Propose(0, g, f.request, f.position, rank, "table",
              fmt::format(fmt::runtime(kWhat[f.detail[2]]), f.detail[0], f.detail[1],
                          f.detail[0] + 1, rank));
      return;
    }
    case RankCheck::kReadback:
      Propose(2, g, f.request, f.position, rank, "readback",
              fmt::format("rank {} reads a different K/V row back through its block table (slot "
                          "{}) than the one the position holds",
                          rank, f.detail[0]));
      return;
    case RankCheck::kMemory:
      Propose(0, g, f.request, f.position, rank, "memory",
              fmt::format("rank {}'s paged cache would pass {} MiB, its share of verify's {} "
                          "MiB per process; lower --requests, run under mpirun with more "
                          "processes, or drop --real-head-dims",
                          rank, f.detail[0] >> 20, kArenaBytesPerProcess >> 20));
      return;
    case RankCheck::kKernelRead:
      Propose(3, g, f.request, f.position, rank, "read",
              fmt::format("rank {} reads local token {} of local length {}, past its row of {} "
                          "kernel blocks",
                          rank, f.detail[0], f.detail[2], f.detail[1]));
      return;
  }
}

void Checker::CheckAttention(const StepEntry& e, const VerifyGroup& group, size_t layout_size,
                             std::span<const std::byte> all, size_t offset) {
  const HeadDims& dims = group.dims;
  const int64_t pf = dims.partial_floats();
  const int64_t n = group.geometry.SlotLayoutFor(Rank(0)).num_shards;
  const int64_t ranks = setup_.dcp_size;
  auto partial = [&](int64_t rank, int64_t q) {
    const std::byte* base = all.data() + rank * layout_size + offset + q * pf * sizeof(float);
    return std::span(reinterpret_cast<const float*>(base), pf);
  };
  // Replicas oracle: rank r holds slice r mod n (DESIGN.md §2), so ranks r and r mod n computed
  // from the same positions and their partial outputs must be identical bits.
  for (int64_t r = n; r < ranks; ++r) {
    for (int64_t q = 0; q < e.num_queries; ++q) {
      if (std::memcmp(partial(r, q).data(), partial(r % n, q).data(), pf * sizeof(float)) != 0) {
        Propose(4, group, e.request, e.first_position + q, static_cast<int32_t>(r), "replica",
                fmt::format("rank {}'s partial output differs from rank {}'s, which holds the "
                            "same positions",
                            r, r % n));
        break;
      }
    }
  }
  const Reference& ref = references_.at(e.request);
  const std::vector<float>& rows = ref.rows[group.id];
  const int64_t width = dims.row_floats();
  PartialAttention attention(dims);
  std::vector<std::span<const float>> parts(n);
  merged_.resize(pf);
  reference_.resize(pf);
  query_.resize(dims.query_floats());
  VerifyGroupReport& gr = report_.groups[group.id];
  VerifyRequestReport& rr = report_.requests[e.request];
  for (int64_t q = 0; q < e.num_queries; ++q) {
    const int64_t position = e.first_position + q;
    for (int64_t r = 0; r < n; ++r) parts[r] = partial(r, q);
    MergePartials(dims, parts, merged_);
    // The single-rank reference: the unsharded sequence, the same mask.
    const int64_t global_len = group.causal ? position + 1 : e.first_position + e.num_queries;
    FillQuery(setup_.seed, group.id, ref.tokens.content_hashes[position], query_);
    attention.Start(query_);
    for (int64_t p = FirstAttendedPosition(group.geometry, position); p < global_len; ++p) {
      attention.Add(rows.data() + p * width);
    }
    attention.Finish(reference_);
    const OutputError err = CompareOutputs(dims, merged_, reference_);
    const double rel = err.rel();
    gr.queries += 1;
    gr.max_abs_error = std::max(gr.max_abs_error, err.max_abs);
    gr.max_rel_error = std::max(gr.max_rel_error, rel);
    rr.max_abs_error = std::max(rr.max_abs_error, err.max_abs);
    rr.max_rel_error = std::max(rr.max_rel_error, rel);
    report_.errors.push_back(
        {.group = group.id, .request = e.request, .position = position, .rel_error = rel});
    ++report_.queries;
    if (!(rel <= options_.max_relative_error)) {
      Propose(5, group, e.request, position, -1, "attention",
              fmt::format("the merged output of {} rank{} differs from the single-rank reference: "
                          "max abs error {:.3g}, max relative error {:.3g} > {:.3g}",
                          n, n == 1 ? "" : "s", err.max_abs, rel, options_.max_relative_error));
    }
  }
}

bool Checker::Check(const StepMessage& m, const RankOutputLayout& layout,
                    std::span<const std::byte> all) {
  candidates_.clear();
  const int64_t ranks = setup_.dcp_size;
  for (int64_t r = 0; r < ranks; ++r) {
    RankFailure f;
    std::memcpy(&f, RankOutput(all, layout.size, r).data() + layout.failure, sizeof(f));
    CheckRankFailure(f, static_cast<int32_t>(r));
  }
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const StepEntry& e = m.entries[i];
    if (!e.table_only) UpdateReference(e);
    // Every rank built the same rows from the broadcast updates.
    for (const VerifyGroup& g : setup_.groups) {
      auto fingerprint = [&](int64_t r) {
        uint64_t v;
        std::memcpy(&v,
                    RankOutput(all, layout.size, r).data() + layout.row_fingerprints[i] +
                        g.id * sizeof(uint64_t),
                    sizeof(v));
        return v;
      };
      report_.groups[g.id].rows_checked += 1;
      for (int64_t r = 1; r < ranks; ++r) {
        if (fingerprint(r) != fingerprint(0)) {
          Propose(0, g, e.request, e.first_position + e.num_new - 1, static_cast<int32_t>(r),
                  "table", fmt::format("rank {} built a different block-table row than rank 0", r));
          break;
        }
      }
    }
    // Ownership oracle: each position on exactly N / n ranks (one for sharded, all for
    // replicated), checked against the slots every rank wrote.
    size_t offset = layout.ownership[i];
    for (const VerifyGroup& g : setup_.groups) {
      if (!g.attention) continue;
      const int64_t expected = ranks / g.geometry.SlotLayoutFor(Rank(0)).num_shards;
      for (int64_t p = 0; p < e.num_new; ++p) {
        int64_t holders = 0;
        for (int64_t r = 0; r < ranks; ++r) {
          holders += RankOutput(all, layout.size, r)[offset + p] != std::byte{0};
        }
        if (holders == expected) continue;
        std::string who;
        for (int64_t r = 0, listed = 0; r < ranks && listed < 4; ++r) {
          if (RankOutput(all, layout.size, r)[offset + p] == std::byte{0}) continue;
          who += fmt::format("{}{}", listed++ == 0 ? "" : ", ", r);
        }
        Propose(1, g, e.request, e.first_position + p, -1, "ownership",
                fmt::format("the position is held by {} rank{}{}, expected {}", holders,
                            holders == 1 ? "" : "s",
                            holders == 0 ? "" : " (" + who + (holders > 4 ? ", ..." : "") + ")",
                            expected));
        break;
      }
      report_.groups[g.id].positions_owned += e.num_new;
      offset += e.num_new;
    }
    if (layout.partials[i] == SIZE_MAX) continue;
    size_t partial_offset = layout.partials[i];
    for (const VerifyGroup& g : setup_.groups) {
      if (!g.attention) continue;
      CheckAttention(e, g, layout.size, all, partial_offset);
      partial_offset += e.num_queries * g.dims.partial_floats() * sizeof(float);
    }
  }
  if (candidates_.empty()) return true;
  const Candidate& first = *std::min_element(
      candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
        return std::tie(a.order, a.failure.position) < std::tie(b.order, b.failure.position);
      });
  report_.failure = first.failure;
  return false;
}

// The verdict every process returns: passed and the failure.
std::vector<std::byte> EncodeVerdict(const VerifyReport& r) {
  std::string text = fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}", r.passed ? 1 : 0, r.failure.group,
                                 r.failure.request, r.failure.position, r.failure.rank,
                                 r.failure.check, r.failure.message);
  std::vector<std::byte> out(text.size());
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}

void DecodeVerdict(const std::vector<std::byte>& bytes, VerifyReport& r) {
  std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::vector<std::string> parts;
  size_t start = 0;
  for (int i = 0; i < 6; ++i) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) return;
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  r.passed = parts[0] == "1";
  r.failure = {.group = std::stoi(parts[1]),
               .request = std::stoll(parts[2]),
               .position = std::stoll(parts[3]),
               .rank = std::stoi(parts[4]),
               .check = parts[5],
               .message = text.substr(start)};
}

// Consecutive scheduler steps travel in one message (applied in order on every rank, each entry
// checked on its own), so that a long run of small steps — the table-only request's prefill at
// the plan's token budget — does not cost one pair of collectives per step. `step` counts the
// scheduler steps it carries. A scheduler error stops the batch and stays in `error`.
StepMessage NextMessage(VerifyScheduler& scheduler, Status& error) {
  constexpr int64_t kMaxSteps = 32;
  constexpr int64_t kMaxTokens = int64_t{1} << 16;
  StepMessage message;
  int64_t tokens = 0;
  while (message.step < kMaxSteps && tokens < kMaxTokens) {
    Result<StepMessage> next = scheduler.Next();
    if (!next.ok()) {
      error = next.status();
      break;
    }
    if (next->done) {
      message.done = message.entries.empty();
      break;
    }
    ++message.step;
    for (StepEntry& e : next->entries) {
      tokens += e.num_new;
      message.entries.push_back(std::move(e));
    }
  }
  return message;
}

class InProcess final : public VerifyTransport {
 public:
  int32_t num_processes() const override { return 1; }
  int32_t process() const override { return 0; }
  Status Broadcast(std::vector<std::byte>&) override { return Status::Ok(); }
  Status AllGather(std::span<const std::byte> local, std::span<std::byte> all) override {
    KVTOPO_CHECK(local.size() == all.size());
    std::copy(local.begin(), local.end(), all.begin());
    return Status::Ok();
  }
};

}  // namespace

RankOutputLayout LayoutRankOutput(const VerifySetup& setup, const StepMessage& m) {
  RankOutputLayout l;
  size_t off = static_cast<size_t>(RoundUp(sizeof(RankFailure), 8));
  const size_t n = m.entries.size();
  l.row_fingerprints.resize(n);
  l.ownership.resize(n);
  l.partials.assign(n, SIZE_MAX);
  for (size_t i = 0; i < n; ++i) {
    l.row_fingerprints[i] = off;
    off += setup.groups.size() * sizeof(uint64_t);
  }
  for (size_t i = 0; i < n; ++i) {
    l.ownership[i] = off;
    for (const VerifyGroup& g : setup.groups) off += g.attention ? m.entries[i].num_new : 0;
    off = static_cast<size_t>(RoundUp(static_cast<int64_t>(off), 8));
  }
  for (size_t i = 0; i < n; ++i) {
    const StepEntry& e = m.entries[i];
    if (e.num_queries == 0 || e.table_only) continue;
    l.partials[i] = off;
    for (const VerifyGroup& g : setup.groups) {
      if (g.attention) off += e.num_queries * g.dims.partial_floats() * sizeof(float);
    }
    off = static_cast<size_t>(RoundUp(static_cast<int64_t>(off), 8));
  }
  l.size = off;
  return l;
}

int64_t FirstAttendedPosition(const GroupGeometry& g, int64_t position) {
  switch (g.kind()) {
    case CacheKind::kSlidingWindow:
    case CacheKind::kSlidingWindowMla:
      return std::max<int64_t>(0, position - g.sliding_window() + 1);
    case CacheKind::kChunkedLocal:
      return g.FloorToChunk(position);
    default:
      return 0;
  }
}

Result<VerifyReport> VerifyWithFaults(const Plan& plan, const VerifyOptions& options,
                                      const VerifyFaults& faults, VerifyTransport& transport) {
  const auto start = std::chrono::steady_clock::now();
  KVTOPO_RETURN_IF_ERROR(ValidateOptions(options));
  if (plan.groups.empty()) return InvalidArgument("the plan has no cache groups");
  if (!plan.accepted()) {
    return Rejected("the launch is rejected: " + plan.model.model_name + plan.ErrorLines());
  }
  for (const PlannedGroup& g : plan.groups) {
    for (const LayerSpec& s : g.layer_specs) {
      if (s.compress_ratio > 1) {
        // Its rows each hold several positions (DeepSeek-V4's compressed caches).
        return Rejected(fmt::format(
            "{}: cache group {} holds layer '{}', compressed {} times, which kvtopo verify does "
            "not attend: it writes and reads one row per position",
            plan.model.model_name, g.id.value(), s.name, s.compress_ratio));
      }
    }
    if (g.geometry.cross_attention()) {
      // Its rows hold the encoder's tokens, not the decoder positions verify writes and attends.
      return Rejected(fmt::format(
          "{}: cache group {} is cross-attention (an encoder-decoder model), which kvtopo verify "
          "does not attend: it checks DCP attention over decoder positions, and the engine runs "
          "encoder-decoder models without DCP",
          plan.model.model_name, g.id.value()));
    }
  }
  const int64_t ranks = plan.groups.front().geometry.dcp_size();
  const int64_t processes = transport.num_processes();
  if (processes <= 0 || ranks % processes != 0) {
    return InvalidArgument(fmt::format(
        "{} processes cannot share the {} DCP ranks evenly; run mpirun -n with a divisor of "
        "--decode-context-parallel-size {}",
        processes, ranks, ranks));
  }
  if (faults.foreign_slot_mapping && ranks < 2) {
    return InvalidArgument("--inject foreign-slot-mapping needs at least two DCP ranks");
  }
  KVTOPO_ASSIGN_OR_RETURN(std::vector<VerifyRequestPlan> requests,
                          PlanVerifyRequests(plan, options));
  const int64_t budget = plan.cache.max_num_batched_tokens;
  int64_t num_blocks = options.num_blocks;
  if (num_blocks == 0) {
    KVTOPO_ASSIGN_OR_RETURN(num_blocks, VerifyPoolBlocks(plan, requests, budget));
  }
  const int32_t num_rows = static_cast<int32_t>(requests.size());
  KVTOPO_ASSIGN_OR_RETURN(VerifySetup setup,
                          BuildSetup(plan, options, faults, num_blocks, std::max(num_rows, 1)));
  setup.max_arena_bytes = kArenaBytesPerProcess / (ranks / processes);
  {
    // Rank 0 keeps every data request's unsharded K/V rows for the reference.
    int64_t row_floats = 0, tokens = 0;
    for (const VerifyGroup& g : setup.groups) row_floats += g.attention ? g.dims.row_floats() : 0;
    for (const VerifyRequestPlan& r : requests) {
      if (!r.table_only)
        tokens += r.prompt_len + r.decode_steps * (1 + plan.model.num_speculative_tokens);
    }
    KVTOPO_ASSIGN_OR_RETURN(int64_t bytes, CheckedProduct({tokens, row_floats, 4}, "reference"));
    if (bytes > kArenaBytesPerProcess) {
      return InvalidArgument(fmt::format(
          "the reference rows of {} requests ({} tokens) would take {} MiB, beyond verify's {} "
          "MiB; lower --requests or --max-model-len, or drop --real-head-dims",
          options.num_requests, tokens, bytes >> 20, kArenaBytesPerProcess >> 20));
    }
  }

  VerifyReport report;
  report.model = plan.model.model_name;
  report.dcp_size = ranks;
  report.num_processes = processes;
  report.num_blocks = num_blocks;
  const bool root = transport.process() == 0;
  std::unique_ptr<VerifyScheduler> scheduler;
  std::unique_ptr<Checker> checker;
  if (root) {
    KVTOPO_ASSIGN_OR_RETURN(scheduler,
                            VerifyScheduler::Create(plan, options, requests, num_blocks, num_rows));
    report.requests = scheduler->requests();
    checker = std::make_unique<Checker>(plan, setup, options, report);
  }
  const int64_t local_ranks = ranks / processes;
  std::vector<std::unique_ptr<RankWorker>> workers;
  for (int64_t i = 0; i < local_ranks; ++i) {
    workers.push_back(std::make_unique<RankWorker>(
        setup, Rank(static_cast<int32_t>(transport.process() * local_ranks + i))));
  }
  const int32_t num_groups = static_cast<int32_t>(plan.groups.size());
  std::vector<std::byte> bytes, local, all;
  bool failed = false;
  Status scheduler_error = Status::Ok();
  for (;;) {
    StepMessage message;
    if (root) {
      message = failed ? StepMessage{.done = true} : NextMessage(*scheduler, scheduler_error);
      report.steps += message.step;
      if (!scheduler_error.ok() && message.entries.empty()) {
        message = StepMessage{.done = true, .step = -1};
      }
      bytes = EncodeStep(message);
    }
    KVTOPO_RETURN_IF_ERROR(transport.Broadcast(bytes));
    if (!root) {
      KVTOPO_ASSIGN_OR_RETURN(message, DecodeStep(bytes, num_groups));
    }
    if (message.done) {
      if (message.step < 0) {
        if (root) return scheduler_error;
        return Internal("verify stopped: rank 0's scheduler reported an error");
      }
      break;
    }
    const RankOutputLayout layout = LayoutRankOutput(setup, message);
    local.assign(layout.size * local_ranks, std::byte{0});
    all.assign(layout.size * ranks, std::byte{0});
    for (int64_t i = 0; i < local_ranks; ++i) {
      workers[i]->Apply(message, layout, std::span(local).subspan(i * layout.size, layout.size));
      workers[i]->CheckInvariants();
    }
    KVTOPO_RETURN_IF_ERROR(transport.AllGather(local, all));
    if (root && !checker->Check(message, layout, all)) failed = true;
  }
  if (root) {
    report.passed = !failed;
    const std::vector<VerifyRequestReport>& sr = scheduler->requests();
    for (size_t i = 0; i < sr.size(); ++i) {
      VerifyRequestReport& r = report.requests[i];
      r.num_tokens = sr[i].num_tokens;
      r.prefix_hit_tokens = sr[i].prefix_hit_tokens;
      r.preemptions = sr[i].preemptions;
      r.rejected_drafts = sr[i].rejected_drafts;
      r.queries = sr[i].queries;
      report.rejected_drafts += r.rejected_drafts;
      report.prefix_hit_tokens += r.prefix_hit_tokens;
    }
    report.preemptions = scheduler->preemptions();
    report.tokens_scheduled = scheduler->tokens_scheduled();
    bytes = EncodeVerdict(report);
  }
  KVTOPO_RETURN_IF_ERROR(transport.Broadcast(bytes));
  if (!root) DecodeVerdict(bytes, report);
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace internal

std::unique_ptr<VerifyTransport> InProcessTransport() {
  return std::make_unique<internal::InProcess>();
}

Result<VerifyReport> Verify(const Plan& plan, const VerifyOptions& options,
                            VerifyTransport& transport) {
  return internal::VerifyWithFaults(plan, options, {}, transport);
}

}  // namespace kvtopo
