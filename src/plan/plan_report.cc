#include "kvtopo/plan_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace kvtopo {

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (std::abs(v) >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.2f} {}", v, kUnits[unit]);
}

namespace {

std::string GroupKindLabel(const PlannedGroup& g) {
  std::string kind(CacheKindName(g.spec.kind));
  if (g.spec.kind == CacheKind::kRecurrent) {
    kind += fmt::format("/{}", RecurrentModeName(g.spec.recurrent_mode));
  }
  if (g.uniform_type) kind += "*";
  return kind;
}

nlohmann::json CapacityJson(const Capacity& c) {
  return {{"memory_bytes", c.memory_bytes},
          {"blocks_per_request", c.blocks_per_request},
          {"max_tokens", c.max_tokens},
          {"max_concurrency", c.max_concurrency}};
}

}  // namespace

nlohmann::json PlanToJson(const Plan& plan) {
  using nlohmann::json;
  json j;
  j["schema_version"] = kPlanJsonSchemaVersion;
  j["accepted"] = plan.accepted();
  j["model"] = {{"name", plan.model.model_name},
                {"architecture", plan.model.architecture},
                {"draft", plan.model.draft_name},
                {"max_model_len", plan.model.max_model_len},
                {"num_speculative_tokens", plan.model.num_speculative_tokens},
                {"num_lookahead_tokens", plan.model.num_lookahead_tokens}};
  j["parallel"] = {{"tensor_parallel_size", plan.parallel.tensor_parallel_size},
                   {"decode_context_parallel_size", plan.parallel.decode_context_parallel_size},
                   {"prefill_context_parallel_size", plan.parallel.prefill_context_parallel_size},
                   {"dcp_kv_cache_interleave_size", plan.parallel.dcp_kv_cache_interleave_size}};
  json groups = json::array();
  for (const PlannedGroup& g : plan.groups) {
    const GroupGeometry& geo = g.geometry;
    json layer_pages = g.layer_page_bytes;
    groups.push_back({
        {"id", g.id.value()},
        {"kind", std::string(CacheKindName(g.spec.kind))},
        {"role", std::string(RoleName(g.role))},
        {"placement", std::string(PlacementName(geo.placement))},
        {"dcp_shard_count", geo.dcp_shard_count},
        {"block_size", geo.block_size},
        {"manager_block_size", geo.manager_block_size},
        {"kernel_block_size", geo.kernel_block_size},
        {"page_size_bytes", geo.page_size_bytes},
        {"natural_page_size_bytes", g.natural_page_size_bytes},
        {"uniform_type", g.uniform_type},
        {"layer_page_size_bytes", layer_pages},
        {"kv_cache_dtype",
         g.spec.kind == CacheKind::kRecurrent
             ? std::string(ElementTypeName(g.spec.state.empty() ? ElementType::kFloat32
                                                                : g.spec.state.front().dtype))
             : std::string(KvCacheDtypeName(g.spec.cache_dtype))},
        {"attention_backend", g.spec.attention_backend},
        {"attention_backends", g.backends},
        {"num_layers", g.layers.size()},
        {"layers", g.layers},
        {"required_columns", geo.required_columns},
        {"block_table_width", geo.block_table_width},
        {"max_pages_per_request", geo.max_pages_per_request},
        {"block_table_bytes_per_rank", geo.block_table_bytes_per_rank},
        {"volatile_last_block", g.spec.volatile_last_block},
        {"recurrent_mode", g.spec.kind == CacheKind::kRecurrent
                               ? json(std::string(RecurrentModeName(g.spec.recurrent_mode)))
                               : json(nullptr)},
        {"num_speculative_blocks", geo.num_speculative_blocks},
        {"sliding_window", IsWindowed(g.spec.kind) ? json(g.spec.sliding_window) : json(nullptr)},
    });
  }
  j["groups"] = std::move(groups);
  json tensors = json::array();
  for (const PoolTensor& t : plan.pool.tensors) {
    tensors.push_back({{"size_bytes", t.size_bytes},
                       {"page_stride_bytes", t.page_stride_bytes},
                       {"shared_by", t.shared_by}});
  }
  j["pool"] = {{"num_blocks", plan.pool.num_blocks},
               {"bytes_per_block", plan.pool.bytes_per_block},
               {"page_stride_bytes", plan.pool.page_stride_bytes},
               {"tensors", std::move(tensors)}};
  j["capacity"] = CapacityJson(plan.capacity);
  j["capacity"]["kv_cache_memory_is_default"] = plan.kv_cache_memory_is_default;
  json pools = json::array();
  for (const PartitionPool& p : plan.split_pools.pools) {
    pools.push_back({{"partition", p.partition == 0 ? "sharded" : "replicated"},
                     {"num_blocks", p.num_blocks},
                     {"bytes_per_block", p.bytes_per_block},
                     {"memory_bytes", p.memory_bytes}});
  }
  j["split_pools"] = {{"pools", std::move(pools)},
                      {"capacity", CapacityJson(plan.split_pools.capacity)}};
  const Promotion& pr = plan.promotion;
  j["promotion"] = {{"considered", pr.considered},
                    {"applied", pr.applied},
                    {"reason", pr.reason},
                    {"block_size_before", pr.block_size_before},
                    {"block_size_after", pr.block_size_after},
                    {"bytes_per_block_before", pr.bytes_per_block_before},
                    {"bytes_per_block_after", pr.bytes_per_block_after},
                    {"max_tokens_before", pr.max_tokens_before},
                    {"max_tokens_after", pr.max_tokens_after}};
  j["scheduler_block_size"] = plan.scheduler_block_size;
  j["hash_block_size"] = plan.hash_block_size;
  j["block_table_bytes_per_rank"] = plan.block_table_bytes_per_rank;
  j["max_model_len_that_fits"] = plan.max_model_len_that_fits;
  json diags = json::array();
  for (const Diagnostic& d : plan.diagnostics) {
    diags.push_back({{"severity", std::string(SeverityName(d.severity))},
                     {"code", d.code},
                     {"message", d.message}});
  }
  j["diagnostics"] = std::move(diags);
  return j;
}

std::string FormatPlanTable(const Plan& plan) {
  std::string out;
  const ParallelConfig& p = plan.parallel;
  out += fmt::format("model {}{}{}  max-model-len {}  TP{} DCP{} PCP{} interleave {}\n",
                     plan.model.model_name, plan.model.draft_name.empty() ? "" : "  draft ",
                     plan.model.draft_name, plan.model.max_model_len, p.tensor_parallel_size,
                     p.decode_context_parallel_size, p.prefill_context_parallel_size,
                     p.dcp_kv_cache_interleave_size);
  if (plan.model.num_speculative_tokens > 0) {
    out += fmt::format("speculative tokens {}  lookahead {}\n", plan.model.num_speculative_tokens,
                       plan.model.num_lookahead_tokens);
  }
  out += "\n";
  out += fmt::format(
      "{:>3} {:<20} {:<6} {:<10} {:>6} {:>7} {:>8} {:>6} {:>11} {:>7} {:>7} {:<15} {:>6}\n", "grp",
      "kind", "role", "placement", "shards", "block", "mgr-blk", "kernel", "page B", "width",
      "pages", "backend", "layers");
  for (const PlannedGroup& g : plan.groups) {
    const GroupGeometry& geo = g.geometry;
    out += fmt::format(
        "{:>3} {:<20} {:<6} {:<10} {:>6} {:>7} {:>8} {:>6} {:>11} {:>7} {:>7} {:<15} {:>6}\n",
        g.id.value(), GroupKindLabel(g), RoleName(g.role), PlacementName(geo.placement),
        geo.dcp_shard_count, geo.block_size, geo.manager_block_size, geo.kernel_block_size,
        geo.page_size_bytes, geo.block_table_width, geo.max_pages_per_request,
        g.backends.empty() ? "-" : fmt::format("{}", fmt::join(g.backends, "+")), g.layers.size());
  }
  if (std::any_of(plan.groups.begin(), plan.groups.end(),
                  [](const PlannedGroup& g) { return g.uniform_type; })) {
    out += "  * uniform type: one block id holds one page of every layer (per-layer pages)\n";
  }
  out += "\n";
  out += fmt::format("pool       {} blocks x {} per block ({} tensors, stride {} B)\n",
                     plan.pool.num_blocks, FormatBytes(plan.pool.bytes_per_block),
                     plan.pool.tensors.size(), plan.pool.page_stride_bytes);
  out += fmt::format("memory     {} per rank{}\n", FormatBytes(plan.capacity.memory_bytes),
                     plan.kv_cache_memory_is_default
                         ? " (default budget; pass --kv-cache-memory to set yours)"
                         : "");
  out += fmt::format("capacity   {} tokens, {:.2f} max-length requests ({} blocks each)\n",
                     plan.capacity.max_tokens, plan.capacity.max_concurrency,
                     plan.capacity.blocks_per_request);
  if (plan.split_pools.pools.size() > 1) {
    out += fmt::format("split pool {} tokens, {:.2f} requests with one pool per placement\n",
                       plan.split_pools.capacity.max_tokens,
                       plan.split_pools.capacity.max_concurrency);
  }
  out += fmt::format("scheduler  block {} tokens, hash block {} tokens\n",
                     plan.scheduler_block_size, plan.hash_block_size);
  out += fmt::format("tables     {} of block tables per rank ({} rows)\n",
                     FormatBytes(plan.block_table_bytes_per_rank), plan.cache.max_num_seqs);
  if (plan.promotion.considered) {
    const Promotion& pr = plan.promotion;
    out += fmt::format("promotion  {}: draft block {} -> {}, capacity {} -> {} tokens ({})\n",
                       pr.applied ? "applied" : "not applied", pr.block_size_before,
                       pr.block_size_after, pr.max_tokens_before, pr.max_tokens_after, pr.reason);
  }
  out += "\n";
  if (plan.diagnostics.empty()) {
    out += "accepted: no diagnostics\n";
  } else {
    out += plan.accepted() ? "accepted with notes:\n" : "REJECTED:\n";
    for (const Diagnostic& d : plan.diagnostics) {
      out += fmt::format("  {} [{}] {}\n", SeverityName(d.severity), d.code, d.message);
    }
  }
  return out;
}

namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const char* GroupColor(const PlannedGroup& g) {
  if (g.role == Role::kDraft) return "#f4a261";
  switch (g.spec.kind) {
    case CacheKind::kRecurrent:
      return "#2a9d8f";
    case CacheKind::kMla:
      return "#457b9d";
    case CacheKind::kFullAttention:
      return "#1d3557";
    default:
      return "#e9c46a";
  }
}

}  // namespace

// One row per pool tensor; each row shows the layers that share it, one cell per group, with the
// group's page drawn to scale inside the tensor's stride (the hatched rest is padding).
std::string RenderPlanSvg(const Plan& plan) {
  const int kLeft = 20, kCellW = 180, kRowH = 34, kTop = 90;
  const size_t rows = plan.pool.tensors.size();
  const size_t cols = std::max<size_t>(plan.groups.size(), 1);
  const int width = kLeft * 2 + static_cast<int>(cols) * kCellW + 160;
  const int height = kTop + static_cast<int>(rows) * kRowH + 70;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"monospace\" font-size=\"11\">\n"
      "<defs><pattern id=\"pad\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
      "<path d=\"M0,6 L6,0\" stroke=\"#999\" stroke-width=\"1\"/></pattern></defs>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
  s += fmt::format(
      "<text x=\"{}\" y=\"20\" font-size=\"14\">{} — TP{} DCP{}: what one rank holds</text>\n",
      kLeft, Escape(plan.model.model_name), plan.parallel.tensor_parallel_size,
      plan.parallel.decode_context_parallel_size);
  s += fmt::format(
      "<text x=\"{}\" y=\"38\">{} blocks x {} per block = {}; {} tensors, stride {} B</text>\n",
      kLeft, plan.pool.num_blocks, Escape(FormatBytes(plan.pool.bytes_per_block)),
      Escape(FormatBytes(plan.pool.num_blocks * plan.pool.bytes_per_block)), rows,
      plan.pool.page_stride_bytes);
  for (size_t c = 0; c < plan.groups.size(); ++c) {
    const PlannedGroup& g = plan.groups[c];
    s += fmt::format(
        "<text x=\"{}\" y=\"{}\">g{} {} {}</text>\n<text x=\"{}\" y=\"{}\">B={} x{} page "
        "{}</text>\n",
        kLeft + static_cast<int>(c) * kCellW, kTop - 26, g.id.value(),
        Escape(std::string(CacheKindName(g.spec.kind))), RoleName(g.role),
        kLeft + static_cast<int>(c) * kCellW, kTop - 12, g.geometry.block_size,
        g.geometry.dcp_shard_count, Escape(FormatBytes(g.geometry.page_size_bytes)));
  }
  for (size_t r = 0; r < rows; ++r) {
    const PoolTensor& t = plan.pool.tensors[r];
    const int y = kTop + static_cast<int>(r) * kRowH;
    for (size_t c = 0; c < plan.groups.size(); ++c) {
      const PlannedGroup& g = plan.groups[c];
      const int x = kLeft + static_cast<int>(c) * kCellW;
      const int w = kCellW - 8;
      if (r >= g.layers.size()) {
        s += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f1f1f1\" "
            "stroke=\"#ccc\"/>\n",
            x, y, w, kRowH - 6);
        continue;
      }
      const int64_t page = plan.groups.size() == 1 ? t.page_stride_bytes : g.layer_page_bytes[r];
      const int64_t natural = g.natural_page_size_bytes > 0 ? g.natural_page_size_bytes : page;
      const double used = t.page_stride_bytes > 0
                              ? static_cast<double>(std::min(natural, t.page_stride_bytes)) /
                                    static_cast<double>(t.page_stride_bytes)
                              : 1.0;
      const int used_w = std::max(2, static_cast<int>(w * used));
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#pad)\" "
          "stroke=\"#888\"/>\n",
          x, y, w, kRowH - 6);
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {} B of {} "
          "B stride</title></rect>\n",
          x, y, used_w, kRowH - 6, GroupColor(g), Escape(g.layers[r]), natural,
          t.page_stride_bytes);
      s += fmt::format(
          "<text x=\"{}\" y=\"{}\" fill=\"white\">{}</text>\n", x + 3, y + kRowH / 2,
          Escape(g.layers[r].size() > 24 ? "…" + g.layers[r].substr(g.layers[r].size() - 23)
                                         : g.layers[r]));
    }
    s += fmt::format("<text x=\"{}\" y=\"{}\">tensor {} · {}</text>\n",
                     kLeft + static_cast<int>(cols) * kCellW, y + kRowH / 2, r,
                     Escape(FormatBytes(t.size_bytes)));
  }
  s += fmt::format(
      "<text x=\"{}\" y=\"{}\">hatched: padding inside the pool stride · capacity {} tokens · "
      "block tables {} per rank</text>\n</svg>\n",
      kLeft, height - 20, plan.capacity.max_tokens,
      Escape(FormatBytes(plan.block_table_bytes_per_rank)));
  return s;
}

}  // namespace kvtopo
