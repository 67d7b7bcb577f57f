#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include "internal/checked_math.h"
#include "kvtopo/plan.h"

namespace kvtopo {

using internal::CeilDiv;

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "?";
}

bool Plan::accepted() const {
  return std::none_of(diagnostics.begin(), diagnostics.end(),
                      [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

namespace {

// Whether one backend's kernels take blocks of `b` tokens (no registry entry: any size).
bool Supports(const BackendTraits& t, int64_t b) {
  if (t.kernel_block_sizes.empty() && t.kernel_block_multiple_of == 0) return true;
  if (t.kernel_block_multiple_of > 0 && b % t.kernel_block_multiple_of == 0) return true;
  return std::find(t.kernel_block_sizes.begin(), t.kernel_block_sizes.end(), b) !=
         t.kernel_block_sizes.end();
}

}  // namespace

int64_t SelectKernelBlockSize(int64_t block_size, const std::vector<const BackendTraits*>& traits) {
  auto all_support = [&](int64_t b) {
    return std::all_of(traits.begin(), traits.end(),
                       [&](const BackendTraits* t) { return Supports(*t, b); });
  };
  if (all_support(block_size)) return block_size;
  // Candidates: the exact sizes any backend lists; the largest dividing B that all take.
  int64_t best = 0;
  for (const BackendTraits* t : traits) {
    for (int64_t b : t->kernel_block_sizes) {
      if (b > 0 && block_size % b == 0 && b > best && all_support(b)) best = b;
    }
  }
  return best;
}

namespace {

constexpr int kShardedPartition = 0;
constexpr int kReplicatedPartition = 1;

// The groups promotion may enlarge: DCP-replicated sliding-window draft caches (seed #520).
bool IsReplicatedWindowDraft(const PlannedGroup& g) {
  return g.partition == kReplicatedPartition && g.role == Role::kDraft &&
         (g.spec.kind == CacheKind::kSlidingWindow ||
          g.spec.kind == CacheKind::kSlidingWindowMla);
}

Diagnostic Error(std::string code, std::string message) {
  return Diagnostic{Severity::kError, std::move(code), std::move(message)};
}

// Two specs that differ only by layer name share a bucket.
bool SameSpec(const LayerSpec& a, const LayerSpec& b) {
  LayerSpec x = a;
  x.name = b.name;
  return x == b;
}

enum class TypeClass { kFull, kWindow, kChunked, kRecurrent };

TypeClass ClassOf(const LayerSpec& s) {
  switch (s.kind) {
    case CacheKind::kFullAttention:
    case CacheKind::kMla:
      return TypeClass::kFull;
    case CacheKind::kSlidingWindow:
    case CacheKind::kSlidingWindowMla:
      return TypeClass::kWindow;
    case CacheKind::kChunkedLocal:
      return TypeClass::kChunked;
    case CacheKind::kRecurrent:
      return TypeClass::kRecurrent;
  }
  return TypeClass::kFull;
}

// Layers that always need the same number of token slots per block: one group, one page of
// every layer per block id (research §3.2 "uniform type").
bool IsUniformType(const std::vector<LayerSpec>& layers) {
  const LayerSpec& f = layers.front();
  for (const LayerSpec& s : layers) {
    if (s.block_size != f.block_size || ClassOf(s) != ClassOf(f) || s.dcp != f.dcp) {
      return false;
    }
    switch (ClassOf(f)) {
      case TypeClass::kFull:
        break;
      case TypeClass::kWindow:
        if (s.kind != f.kind || s.sliding_window != f.sliding_window ||
            s.extra_retained_tokens != f.extra_retained_tokens) {
          return false;
        }
        break;
      case TypeClass::kChunked:
        if (s.attention_chunk_size != f.attention_chunk_size) return false;
        break;
      case TypeClass::kRecurrent:
        if (s.num_speculative_blocks != f.num_speculative_blocks ||
            s.recurrent_mode != f.recurrent_mode) {
          return false;
        }
        break;
    }
  }
  return true;
}

int64_t MinKernelBlock(const BackendTraits& traits) {
  int64_t m = 0;
  for (int64_t b : traits.kernel_block_sizes) m = m == 0 ? b : std::min(m, b);
  if (traits.kernel_block_multiple_of > 0) {
    m = m == 0 ? traits.kernel_block_multiple_of : std::min(m, traits.kernel_block_multiple_of);
  }
  return m;
}

class Planner {
 public:
  Planner(const ModelCacheSpecs& specs, const PlanInputs& inputs)
      : specs_(specs), inputs_(inputs) {}

  Result<Plan> Run();

 private:
  const BackendTraits& TraitsOf(const std::string& backend) const {
    static const BackendTraits kNone;
    auto it = inputs_.backends.find(backend);
    return it == inputs_.backends.end() ? kNone : it->second;
  }

  Status AlignHybridBlockSize(std::vector<LayerSpec>& layers);
  Status UnifyPageSizes(std::vector<LayerSpec>& layers);
  Status GroupPartition(std::vector<LayerSpec> layers, int partition,
                        std::vector<PlannedGroup>& out);
  Status ComputeGeometries(std::vector<PlannedGroup>& groups);
  Status Promote(std::vector<PlannedGroup>& groups);
  Status TryPromotion(Plan& plan);
  Result<int64_t> BlocksPerRequest(const std::vector<PlannedGroup>& groups,
                                   int64_t max_model_len) const;
  Result<int64_t> MaxModelLenThatFits(const std::vector<PlannedGroup>& groups,
                                      int64_t bytes_per_block) const;
  Status Finalize(Plan& plan);

  const ModelCacheSpecs& specs_;
  const PlanInputs& inputs_;
  std::vector<Diagnostic> diagnostics_;
};

// Hybrid attention + recurrent block alignment (research §3.7): the attention block grows until
// one attention page holds a recurrent state, and recurrent pages are padded to that page.
Status Planner::AlignHybridBlockSize(std::vector<LayerSpec>& layers) {
  int64_t block = 0, attn_1tok = 0, state_page = 0;
  const LayerSpec* first_attn = nullptr;
  const LayerSpec* first_rec = nullptr;
  for (const LayerSpec& s : layers) {
    if (s.kind == CacheKind::kRecurrent) {
      KVTOPO_ASSIGN_OR_RETURN(int64_t page, RealPageSizeBytes(s));
      state_page = std::max(state_page, page);
      if (!first_rec) first_rec = &s;
    } else {
      KVTOPO_ASSIGN_OR_RETURN(int64_t per_token, AttentionBytesPerToken(s));
      attn_1tok = std::max(attn_1tok, per_token);
      block = std::max(block, s.block_size);
      if (!first_attn) first_attn = &s;
    }
  }
  if (!first_attn || !first_rec || state_page == 0) return Status::Ok();
  const int64_t kalign = std::max(MinKernelBlock(TraitsOf(first_attn->attention_backend)), block);
  int64_t attn_block = 0;
  const RecurrentMode mode = first_rec->recurrent_mode;
  int64_t recurrent_block = first_rec->block_size;
  if (mode == RecurrentMode::kAll) {
    const int64_t base = inputs_.cache.mamba_block_size ? inputs_.cache.mamba_block_size : block;
    const int64_t tokens = CeilDiv(state_page, attn_1tok);
    KVTOPO_ASSIGN_OR_RETURN(int64_t chunk, internal::CheckedLcm(base, kalign, "block alignment"));
    attn_block = chunk * CeilDiv(tokens, chunk);
    recurrent_block = attn_block;
  } else {
    attn_block = kalign * CeilDiv(state_page, kalign * attn_1tok);
  }
  const int64_t new_block = std::max(block, attn_block);
  if (mode == RecurrentMode::kAlign && inputs_.cache.mamba_block_size == 0) {
    recurrent_block = new_block;
  }
  for (LayerSpec& s : layers) {
    if (s.kind == CacheKind::kRecurrent) {
      if (s.recurrent_mode != RecurrentMode::kNone) s.block_size = recurrent_block;
    } else if (s.block_size == block) {
      s.block_size = new_block;
    }
  }
  KVTOPO_ASSIGN_OR_RETURN(int64_t attn_page,
                          internal::CheckedMul(new_block, attn_1tok, "attention page"));
  for (LayerSpec& s : layers) {
    if (s.kind != CacheKind::kRecurrent) continue;
    KVTOPO_ASSIGN_OR_RETURN(int64_t raw, RealPageSizeBytes(s));
    if (raw < attn_page) s.page_size_padded = attn_page;
  }
  return Status::Ok();
}

// One physical page size for a partition (research §3.5 with the later fallbacks): pad
// recurrent pages; scale the block size when the largest page is a multiple; pad attention whose
// backend indexes pages by block stride (never MLA); otherwise reject naming both pages.
Status Planner::UnifyPageSizes(std::vector<LayerSpec>& layers) {
  int64_t max_page = 0;
  const LayerSpec* max_layer = nullptr;
  for (const LayerSpec& s : layers) {
    KVTOPO_ASSIGN_OR_RETURN(int64_t page, PageSizeBytes(s));
    if (page > max_page) {
      max_page = page;
      max_layer = &s;
    }
  }
  const std::string max_name = max_layer ? max_layer->name : "";
  for (LayerSpec& s : layers) {
    KVTOPO_ASSIGN_OR_RETURN(int64_t page, PageSizeBytes(s));
    if (page == max_page) continue;
    if (s.kind == CacheKind::kRecurrent) {
      s.page_size_padded = max_page;
    } else if (max_page % page == 0 && s.page_size_padded == 0) {
      s.block_size *= max_page / page;
    } else if (!IsMla(s.kind) && TraitsOf(s.attention_backend).indexes_kv_by_block_stride) {
      s.page_size_padded = max_page;
    } else {
      diagnostics_.push_back(Error(
          "page-unification",
          fmt::format("layer '{}': page size {} B is not divisible by the maximum page size {} B "
                      "(layer '{}') and cannot be padded: padding needs a non-MLA attention "
                      "backend that indexes pages by block stride; change --block-size, "
                      "--kv-cache-dtype or the layer's attention backend",
                      s.name, page, max_page, max_name)));
      return Rejected("page unification failed");
    }
  }
  return Status::Ok();
}

Status Planner::GroupPartition(std::vector<LayerSpec> layers, int partition,
                               std::vector<PlannedGroup>& out) {
  if (layers.empty()) return Status::Ok();
  auto make_group = [&](std::vector<const LayerSpec*> members, bool uniform_type) -> Status {
    PlannedGroup g;
    g.id = GroupId(static_cast<int32_t>(out.size()));
    g.partition = partition;
    g.spec = *members.front();
    g.role = g.spec.role;
    g.uniform_type = uniform_type;
    for (const LayerSpec* m : members) {
      g.layers.push_back(m->name);
      if (!m->attention_backend.empty() && std::find(g.backends.begin(), g.backends.end(),
                                                     m->attention_backend) == g.backends.end()) {
        g.backends.push_back(m->attention_backend);
      }
      KVTOPO_ASSIGN_OR_RETURN(int64_t page, PageSizeBytes(*m));
      g.layer_page_bytes.push_back(page);
    }
    out.push_back(std::move(g));
    return Status::Ok();
  };

  KVTOPO_RETURN_IF_ERROR(AlignHybridBlockSize(layers));
  std::vector<const LayerSpec*> all;
  for (const LayerSpec& s : layers) all.push_back(&s);
  const bool uniform_spec = std::all_of(layers.begin(), layers.end(), [&](const LayerSpec& s) {
    return SameSpec(s, layers.front());
  });
  if (uniform_spec) return make_group(all, false);
  if (IsUniformType(layers)) return make_group(all, true);

  KVTOPO_RETURN_IF_ERROR(UnifyPageSizes(layers));
  // Same-spec buckets in first-seen order, then the group-size rule and a strided split.
  std::vector<std::vector<const LayerSpec*>> buckets;
  for (const LayerSpec& s : layers) {
    auto it = std::find_if(buckets.begin(), buckets.end(),
                           [&](const auto& b) { return SameSpec(*b.front(), s); });
    if (it == buckets.end()) {
      buckets.push_back({&s});
    } else {
      it->push_back(&s);
    }
  }
  size_t min_count = layers.size(), max_count = 0;
  for (const auto& b : buckets) {
    min_count = std::min(min_count, b.size());
    max_count = std::max(max_count, b.size());
  }
  size_t group_size = min_count;
  if (2 * max_count < 3 * min_count) group_size = max_count;  // max < 1.5 * min
  for (const auto& b : buckets) {
    const size_t k = (b.size() + group_size - 1) / group_size;
    for (size_t i = 0; i < k; ++i) {
      std::vector<const LayerSpec*> members;
      for (size_t j = i; j < b.size(); j += k) members.push_back(b[j]);
      KVTOPO_RETURN_IF_ERROR(make_group(std::move(members), false));
    }
  }
  return Status::Ok();
}

Status Planner::ComputeGeometries(std::vector<PlannedGroup>& groups) {
  for (PlannedGroup& g : groups) {
    int64_t kernel_block = g.spec.block_size;
    if (IsAttention(g.spec.kind)) {
      std::vector<const BackendTraits*> traits;
      for (const std::string& backend : g.backends) traits.push_back(&TraitsOf(backend));
      kernel_block = SelectKernelBlockSize(g.spec.block_size, traits);
      if (kernel_block == 0) {
        diagnostics_.push_back(Error(
            "kernel-block-size",
            fmt::format("group {} ('{}'): no kernel block size that backends {} all support "
                        "divides block size {}; choose a --block-size that is a multiple of a "
                        "supported kernel block, or one backend for the group",
                        g.id.value(), g.spec.name, fmt::join(g.backends, ", "),
                        g.spec.block_size)));
        kernel_block = g.spec.block_size;
      }
    }
    const GeometryOptions options{.max_model_len = specs_.max_model_len,
                                  .max_num_seqs = inputs_.cache.max_num_seqs,
                                  .max_num_batched_tokens = inputs_.cache.max_num_batched_tokens,
                                  .kernel_block_size = kernel_block};
    auto geometry = ComputeGroupGeometry(g.spec, inputs_.parallel, options);
    if (!geometry.ok()) {
      if (geometry.status().code() != StatusCode::kRejected) return geometry.status();
      diagnostics_.push_back(Error("geometry", geometry.status().message()));
      return geometry.status();
    }
    g.geometry = *geometry;
    if (g.uniform_type) {
      g.geometry.page_size_bytes =
          *std::max_element(g.layer_page_bytes.begin(), g.layer_page_bytes.end());
    }
    KVTOPO_ASSIGN_OR_RETURN(g.natural_page_size_bytes, RealPageSizeBytes(g.spec));
  }
  return Status::Ok();
}

Result<int64_t> Planner::BlocksPerRequest(const std::vector<PlannedGroup>& groups,
                                          int64_t max_model_len) const {
  int64_t total = 0;
  for (const PlannedGroup& g : groups) {
    const RequestBounds bounds{.max_model_len = max_model_len,
                               .max_tokens_in_flight = inputs_.cache.max_num_batched_tokens,
                               .dcp_shard_count = g.geometry.dcp_shard_count};
    KVTOPO_ASSIGN_OR_RETURN(int64_t pages, MaxPagesPerRequest(g.spec, bounds));
    KVTOPO_ASSIGN_OR_RETURN(total, internal::CheckedAdd(total, pages, "blocks per request"));
  }
  return total;
}

// Pool layout shared by every plan variant: one group gets a tensor per layer with its exact
// page; several groups share `max layers per group` tensors whose stride is the largest page.
struct Layout {
  int64_t stride = 0;
  int64_t bytes_per_block = 0;
  size_t num_tensors = 0;
};

Result<Layout> LayoutOf(const std::vector<PlannedGroup>& groups) {
  Layout layout;
  if (groups.size() == 1) {
    for (int64_t page : groups[0].layer_page_bytes) {
      layout.stride = std::max(layout.stride, page);
      KVTOPO_ASSIGN_OR_RETURN(layout.bytes_per_block,
                              internal::CheckedAdd(layout.bytes_per_block, page, "block bytes"));
    }
    layout.num_tensors = groups[0].layers.size();
    return layout;
  }
  for (const PlannedGroup& g : groups) {
    for (int64_t page : g.layer_page_bytes) layout.stride = std::max(layout.stride, page);
    layout.num_tensors = std::max(layout.num_tensors, g.layers.size());
  }
  KVTOPO_ASSIGN_OR_RETURN(
      layout.bytes_per_block,
      internal::CheckedMul(layout.stride, static_cast<int64_t>(layout.num_tensors), "block bytes"));
  return layout;
}

Result<Capacity> CapacityOf(int64_t memory_bytes, int64_t bytes_per_block,
                            int64_t blocks_per_request, int64_t max_model_len) {
  Capacity c;
  c.memory_bytes = memory_bytes;
  c.blocks_per_request = blocks_per_request;
  const int64_t num_blocks = bytes_per_block > 0 ? memory_bytes / bytes_per_block : 0;
  c.max_concurrency =
      blocks_per_request > 0 ? static_cast<double>(num_blocks) / blocks_per_request : 0.0;
  c.max_tokens = static_cast<int64_t>(c.max_concurrency * static_cast<double>(max_model_len));
  return c;
}

Result<int64_t> Planner::MaxModelLenThatFits(const std::vector<PlannedGroup>& groups,
                                             int64_t bytes_per_block) const {
  auto fits = [&](int64_t len) -> Result<bool> {
    KVTOPO_ASSIGN_OR_RETURN(int64_t blocks, BlocksPerRequest(groups, len));
    KVTOPO_ASSIGN_OR_RETURN(int64_t need,
                            internal::CheckedMul(blocks, bytes_per_block, "memory per request"));
    return need <= inputs_.kv_cache_memory_bytes;
  };
  int64_t lo = 0, hi = specs_.max_model_len;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    KVTOPO_ASSIGN_OR_RETURN(bool ok, fits(mid));
    if (ok) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Raises a replicated sliding-window draft block to the greatest common block of the sharded
// target groups when it divides that block and the enlarged page still fits the pool stride
// the target set, so bytes per block and the scheduler LCM never grow (seed #520).
Status Planner::Promote(std::vector<PlannedGroup>& groups) {
  int64_t target_gcd = 0, target_stride = 0;
  for (const PlannedGroup& g : groups) {
    if (g.partition != kShardedPartition) continue;
    for (int64_t page : g.layer_page_bytes) target_stride = std::max(target_stride, page);
    if (g.geometry.placement == Placement::kSharded) {
      target_gcd = std::gcd(target_gcd, g.spec.block_size);
    }
  }
  if (target_gcd == 0) return Status::Ok();
  for (PlannedGroup& g : groups) {
    if (!IsReplicatedWindowDraft(g)) continue;
    if (g.spec.block_size >= target_gcd || target_gcd % g.spec.block_size != 0) continue;
    LayerSpec promoted = g.spec;
    promoted.block_size = target_gcd;
    promoted.page_size_padded = 0;
    KVTOPO_ASSIGN_OR_RETURN(int64_t page, PageSizeBytes(promoted));
    if (page > target_stride) continue;
    g.spec = promoted;
    for (int64_t& p : g.layer_page_bytes) p = page;
  }
  return Status::Ok();
}

// Plans the promoted variant and keeps it only when bytes per block and the scheduler block did
// not grow and capacity did not shrink; either way `plan.promotion` reports both capacities.
Status Planner::TryPromotion(Plan& plan) {
  auto draft_block = [](const Plan& p) {
    const auto g = std::find_if(p.groups.begin(), p.groups.end(), IsReplicatedWindowDraft);
    return g->spec.block_size;
  };
  auto scheduler_block = [](const Plan& p) {
    int64_t lcm = 1;
    for (const PlannedGroup& g : p.groups) lcm = std::lcm(lcm, g.geometry.manager_block_size);
    return lcm;
  };
  Promotion pr{.considered = true,
               .block_size_before = draft_block(plan),
               .bytes_per_block_before = plan.pool.bytes_per_block,
               .max_tokens_before = plan.capacity.max_tokens};
  pr.block_size_after = pr.block_size_before;
  pr.bytes_per_block_after = pr.bytes_per_block_before;
  pr.max_tokens_after = pr.max_tokens_before;
  Plan promoted = plan;
  KVTOPO_RETURN_IF_ERROR(Promote(promoted.groups));
  KVTOPO_RETURN_IF_ERROR(Finalize(promoted));
  if (draft_block(promoted) == pr.block_size_before) {
    pr.reason =
        "the draft block does not divide the sharded target block, or the enlarged draft page "
        "would exceed the pool stride";
  } else if (promoted.pool.bytes_per_block > plan.pool.bytes_per_block ||
             scheduler_block(promoted) > scheduler_block(plan) ||
             promoted.capacity.max_tokens < plan.capacity.max_tokens) {
    pr.reason = "promotion would grow bytes per block or the scheduler block, or shrink capacity";
  } else {
    pr.applied = true;
    pr.block_size_after = draft_block(promoted);
    pr.bytes_per_block_after = promoted.pool.bytes_per_block;
    pr.max_tokens_after = promoted.capacity.max_tokens;
    pr.reason = fmt::format(
        "draft block {} divides the sharded target block {} and its pages fit the pool stride",
        pr.block_size_before, pr.block_size_after);
    plan = std::move(promoted);
  }
  plan.promotion = std::move(pr);
  return Status::Ok();
}

Status Planner::Finalize(Plan& plan) {
  KVTOPO_RETURN_IF_ERROR(ComputeGeometries(plan.groups));
  KVTOPO_ASSIGN_OR_RETURN(Layout layout, LayoutOf(plan.groups));
  const int64_t memory = inputs_.kv_cache_memory_bytes;
  plan.pool.bytes_per_block = layout.bytes_per_block;
  plan.pool.page_stride_bytes = layout.stride;
  plan.pool.num_blocks = memory / layout.bytes_per_block;
  plan.pool.tensors.clear();
  for (size_t i = 0; i < layout.num_tensors; ++i) {
    PoolTensor t;
    if (plan.groups.size() == 1) {
      t.page_stride_bytes = plan.groups[0].layer_page_bytes[i];
      t.shared_by.push_back(plan.groups[0].layers[i]);
    } else {
      t.page_stride_bytes = layout.stride;
      for (const PlannedGroup& g : plan.groups) {
        if (i < g.layers.size()) t.shared_by.push_back(g.layers[i]);
      }
    }
    t.size_bytes = t.page_stride_bytes * plan.pool.num_blocks;
    plan.pool.tensors.push_back(std::move(t));
  }
  KVTOPO_ASSIGN_OR_RETURN(int64_t blocks_per_request,
                          BlocksPerRequest(plan.groups, specs_.max_model_len));
  KVTOPO_ASSIGN_OR_RETURN(plan.capacity, CapacityOf(memory, layout.bytes_per_block,
                                                    blocks_per_request, specs_.max_model_len));

  // One pool per partition.
  plan.split_pools = {};
  int64_t per_request_bytes = 0;
  std::vector<std::pair<int, std::pair<int64_t, int64_t>>> parts;  // partition, blocks, bytes
  for (int p : {kShardedPartition, kReplicatedPartition}) {
    std::vector<PlannedGroup> members;
    for (const PlannedGroup& g : plan.groups) {
      if (g.partition == p) members.push_back(g);
    }
    if (members.empty()) continue;
    KVTOPO_ASSIGN_OR_RETURN(Layout pl, LayoutOf(members));
    KVTOPO_ASSIGN_OR_RETURN(int64_t blocks, BlocksPerRequest(members, specs_.max_model_len));
    KVTOPO_ASSIGN_OR_RETURN(int64_t bytes,
                            internal::CheckedMul(blocks, pl.bytes_per_block, "request bytes"));
    KVTOPO_ASSIGN_OR_RETURN(per_request_bytes,
                            internal::CheckedAdd(per_request_bytes, bytes, "request bytes"));
    parts.push_back({p, {blocks, pl.bytes_per_block}});
  }
  double concurrency = per_request_bytes > 0 ? static_cast<double>(memory) / per_request_bytes : 0;
  double min_concurrency = concurrency;
  for (const auto& [p, sizes] : parts) {
    PartitionPool pool;
    pool.partition = p;
    pool.bytes_per_block = sizes.second;
    pool.num_blocks = static_cast<int64_t>(concurrency * static_cast<double>(sizes.first));
    pool.memory_bytes = pool.num_blocks * pool.bytes_per_block;
    min_concurrency = std::min(min_concurrency, static_cast<double>(pool.num_blocks) / sizes.first);
    plan.split_pools.pools.push_back(pool);
  }
  plan.split_pools.capacity.memory_bytes = memory;
  plan.split_pools.capacity.blocks_per_request = blocks_per_request;
  plan.split_pools.capacity.max_concurrency = min_concurrency;
  plan.split_pools.capacity.max_tokens =
      static_cast<int64_t>(min_concurrency * static_cast<double>(specs_.max_model_len));
  return Status::Ok();
}

Result<Plan> Planner::Run() {
  Plan plan;
  plan.model = specs_;
  plan.parallel = inputs_.parallel;
  plan.cache = inputs_.cache;
  plan.kv_cache_memory_is_default = inputs_.kv_cache_memory_is_default;
  plan.diagnostics = specs_.diagnostics;
  auto finish = [&]() -> Result<Plan> {
    for (Diagnostic& d : diagnostics_) plan.diagnostics.push_back(std::move(d));
    return std::move(plan);
  };

  if (Status s = ValidateParallelConfig(inputs_.parallel); !s.ok()) {
    if (s.code() != StatusCode::kRejected) return s;
    diagnostics_.push_back(Error("parallel-config", s.message()));
    return finish();
  }
  if (specs_.max_model_len <= 0) {
    return InvalidArgument(
        fmt::format("--max-model-len must be positive, got {}", specs_.max_model_len));
  }
  if (inputs_.kv_cache_memory_bytes <= 0) {
    return InvalidArgument(
        fmt::format("--kv-cache-memory must be positive, got {}", inputs_.kv_cache_memory_bytes));
  }
  if (specs_.layers.empty()) {
    return InvalidArgument("the model has no layers that keep a KV cache");
  }

  // 1. Partition by placement.
  std::vector<LayerSpec> sharded, replicated;
  for (const LayerSpec& s : specs_.layers) {
    KVTOPO_ASSIGN_OR_RETURN(Placement p,
                            PlacementOf(s, inputs_.parallel.decode_context_parallel_size));
    (p == Placement::kReplicated ? replicated : sharded).push_back(s);
  }
  // 2. Group each partition independently.
  for (auto [layers, partition] :
       {std::pair{&sharded, kShardedPartition}, std::pair{&replicated, kReplicatedPartition}}) {
    Status s = GroupPartition(*layers, partition, plan.groups);
    if (!s.ok()) {
      if (s.code() == StatusCode::kRejected) return finish();
      return s;
    }
  }
  // 3. Geometry, pool and capacity; then promotion when a replicated window draft meets sharded
  // target groups.
  if (Status s = Finalize(plan); !s.ok()) {
    if (s.code() == StatusCode::kRejected) return finish();
    return s;
  }
  if (std::any_of(plan.groups.begin(), plan.groups.end(), IsReplicatedWindowDraft) &&
      !sharded.empty()) {
    KVTOPO_RETURN_IF_ERROR(TryPromotion(plan));
  }

  // 4. Scheduler and hash block sizes, block-table memory, the enough-memory check.
  int64_t lcm = 1, gcd = 0;
  for (const PlannedGroup& g : plan.groups) {
    KVTOPO_ASSIGN_OR_RETURN(
        lcm, internal::CheckedLcm(lcm, g.geometry.manager_block_size, "scheduler block size"));
    gcd = std::gcd(gcd, g.geometry.manager_block_size);
    KVTOPO_ASSIGN_OR_RETURN(
        plan.block_table_bytes_per_rank,
        internal::CheckedAdd(plan.block_table_bytes_per_rank, g.geometry.block_table_bytes_per_rank,
                             "block-table bytes"));
  }
  plan.scheduler_block_size = lcm;
  plan.hash_block_size = gcd;
  if (inputs_.cache.prefix_match_unit > 0) {
    std::string sizes;
    bool divides = true;
    for (const PlannedGroup& g : plan.groups) {
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(g.geometry.manager_block_size);
      divides = divides && g.geometry.manager_block_size % inputs_.cache.prefix_match_unit == 0;
    }
    if (!divides) {
      diagnostics_.push_back(Error(
          "prefix-match-unit",
          fmt::format("prefix match unit {} does not divide every group block size [{}]; choose "
                      "a divisor of all of them",
                      inputs_.cache.prefix_match_unit, sizes)));
    } else {
      plan.hash_block_size = inputs_.cache.prefix_match_unit;
    }
  } else if (inputs_.cache.prefix_match_unit < 0) {
    return InvalidArgument(
        fmt::format("prefix match unit must be positive, got {}", inputs_.cache.prefix_match_unit));
  }
  KVTOPO_ASSIGN_OR_RETURN(plan.max_model_len_that_fits,
                          MaxModelLenThatFits(plan.groups, plan.pool.bytes_per_block));
  const int64_t needed = plan.capacity.blocks_per_request * plan.pool.bytes_per_block;
  if (plan.max_model_len_that_fits < specs_.max_model_len) {
    std::string fit = plan.max_model_len_that_fits > 0
                          ? fmt::format("; the largest --max-model-len that fits is {}",
                                        plan.max_model_len_that_fits)
                          : "; not even a 1-token request fits";
    diagnostics_.push_back(
        Error("kv-cache-memory",
              fmt::format("one request of --max-model-len {} needs {} B of KV cache per rank, more "
                          "than the {} B of --kv-cache-memory{}; raise --kv-cache-memory or lower "
                          "--max-model-len",
                          specs_.max_model_len, needed, inputs_.kv_cache_memory_bytes, fit)));
  }
  if (plan.pool.num_blocks < 2) {
    diagnostics_.push_back(
        Error("kv-cache-memory",
              fmt::format("--kv-cache-memory {} B holds {} blocks of {} B; at least two (the null "
                          "block and one page) are needed",
                          inputs_.kv_cache_memory_bytes, plan.pool.num_blocks,
                          plan.pool.bytes_per_block)));
  }
  return finish();
}

}  // namespace

Result<Plan> PlanFromSpecs(const ModelCacheSpecs& specs, const PlanInputs& inputs) {
  return Planner(specs, inputs).Run();
}

}  // namespace kvtopo
