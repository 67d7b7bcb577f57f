#include "kvtopo/plan_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "internal/json_text.h"
#include "plan/plan_json.h"

namespace kvtopo {

std::string GroupedThousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

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
  std::string kind(SpecKindName(g.spec));
  if (g.spec.kind == CacheKind::kRecurrent) {
    kind += fmt::format("/{}", RecurrentModeName(g.spec.recurrent_mode));
  }
  if (g.uniform_type) kind += "*";
  return kind;
}

// A layer's cache dtype: the KV dtype, or a recurrent layer's first state tensor's dtype.
std::string LayerDtypeName(const LayerSpec& l) {
  if (l.kind != CacheKind::kRecurrent) return std::string(KvCacheDtypeName(l.cache_dtype));
  return std::string(
      ElementTypeName(l.state.empty() ? ElementType::kFloat32 : l.state.front().dtype));
}

nlohmann::json CapacityJson(const Capacity& c) {
  return {{"memory_bytes", c.memory_bytes},
          {"blocks_per_request", c.blocks_per_request},
          {"max_tokens", c.max_tokens},
          {"max_concurrency", c.max_concurrency}};
}

}  // namespace

namespace internal {

nlohmann::json PlanToJson(const Plan& plan) {
  using nlohmann::json;
  json j;
  j["schema_version"] = kPlanJsonSchemaVersion;
  j["accepted"] = plan.accepted();
  j["model"] = {
      {"name", plan.model.model_name},
      {"architecture", plan.model.architecture},
      {"draft", plan.model.draft_name},
      {"max_model_len", plan.model.max_model_len},
      {"num_speculative_tokens", plan.model.num_speculative_tokens},
      {"num_lookahead_tokens", plan.model.num_lookahead_tokens},
      {"quantization", plan.model.quantization ? json(*plan.model.quantization) : json(nullptr)}};
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
        {"kind", std::string(SpecKindName(g.spec))},
        {"role", std::string(RoleName(g.role))},
        {"placement", std::string(PlacementName(geo.placement()))},
        {"dcp_shard_count", geo.dcp_shard_count()},
        {"block_size", geo.block_size()},
        {"manager_block_size", geo.manager_block_size()},
        {"kernel_block_size", geo.kernel_block_size()},
        {"page_size_bytes", geo.page_size_bytes()},
        {"natural_page_size_bytes", g.natural_page_size_bytes},
        {"uniform_type", g.uniform_type},
        {"layer_page_size_bytes", layer_pages},
        {"kv_cache_dtype", LayerDtypeName(g.spec)},
        {"attention_backend", g.spec.attention_backend},
        {"attention_backends", g.backends},
        {"num_layers", g.layers.size()},
        {"layers", g.layers},
        {"required_columns", geo.required_columns()},
        {"block_table_width", geo.block_table_width()},
        {"max_pages_per_request", geo.max_pages_per_request()},
        {"block_table_bytes_per_rank", geo.block_table_bytes_per_rank()},
        {"volatile_last_block", g.spec.volatile_last_block},
        {"recurrent_mode", g.spec.kind == CacheKind::kRecurrent
                               ? json(std::string(RecurrentModeName(g.spec.recurrent_mode)))
                               : json(nullptr)},
        {"num_speculative_blocks", geo.num_speculative_blocks()},
        {"sliding_window", IsWindowed(g.spec.kind) ? json(g.spec.sliding_window) : json(nullptr)},
        {"max_encoder_tokens",
         geo.cross_attention() ? json(geo.max_encoder_tokens()) : json(nullptr)},
        {"sink_tokens", geo.sink_tokens() > 0 ? json(geo.sink_tokens()) : json(nullptr)},
        {"sink_blocks", geo.sink_blocks()},
    });
  }
  j["groups"] = std::move(groups);
  json layers = json::array();
  for (const PlannedGroup& g : plan.groups) {
    for (size_t i = 0; i < g.layer_specs.size(); ++i) {
      const LayerSpec& l = g.layer_specs[i];
      layers.push_back({{"name", l.name},
                        {"group", g.id.value()},
                        {"role", std::string(RoleName(l.role))},
                        {"kind", std::string(SpecKindName(l))},
                        {"kv_cache_dtype", LayerDtypeName(l)},
                        {"model_dtype", std::string(ElementTypeName(l.model_dtype))},
                        {"attention_backend", l.attention_backend},
                        {"block_size", l.block_size},
                        {"page_size_bytes", g.layer_page_bytes[i]},
                        {"natural_page_size_bytes", g.layer_natural_page_bytes[i]},
                        {"compress_ratio", l.compress_ratio}});
    }
  }
  j["layers"] = std::move(layers);
  json regions = json::array();
  for (const PoolGroupRegion& r : plan.pool.regions) {
    regions.push_back({{"group", r.group.value()},
                       {"offsets_bytes", r.offsets_bytes},
                       {"bytes_used", r.bytes_used},
                       {"bytes_unused", plan.pool.bytes_per_block - r.bytes_used}});
  }
  j["pool"] = {
      {"num_blocks", plan.pool.num_blocks},
      {"bytes_per_block", plan.pool.bytes_per_block},
      {"memory_bytes", plan.pool.num_blocks * plan.pool.bytes_per_block},
      {"regions", std::move(regions)},
      {"layer_tuples", plan.pool.layer_tuples > 0 ? json(plan.pool.layer_tuples) : json(nullptr)},
      {"tuple_page_size_bytes", plan.pool.tuple_page_bytes}};
  j["capacity"] = CapacityJson(plan.capacity);
  j["capacity"]["kv_cache_memory_is_default"] = plan.kv_cache_memory_is_default;
  json stages = json::array();
  for (const PipelineStage& s : plan.pipeline_stages) {
    stages.push_back({{"stage", s.stage},
                      {"first_layer", s.first_layer},
                      {"num_layers", s.num_layers},
                      {"cache_layers", s.cache_layers},
                      {"bytes_per_block", s.bytes_per_block}});
  }
  j["pipeline_stages"] = std::move(stages);
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
  j["max_num_batched_tokens"] = plan.cache.max_num_batched_tokens;
  j["max_tokens_in_flight"] = plan.max_tokens_in_flight();
  j["max_num_seqs"] = plan.cache.max_num_seqs;
  j["device_capability"] = plan.cache.device_capability
                               ? json(DeviceCapabilityName(*plan.cache.device_capability))
                               : json(nullptr);
  j["max_model_len_that_fits"] = plan.max_model_len_that_fits;
  j["diagnostics"] = DiagnosticsToJson(plan.diagnostics);
  return j;
}

nlohmann::json DiagnosticsToJson(const std::vector<Diagnostic>& diagnostics) {
  nlohmann::json out = nlohmann::json::array();
  for (const Diagnostic& d : diagnostics) {
    out.push_back({{"severity", std::string(SeverityName(d.severity))},
                   {"code", d.code},
                   {"message", d.message}});
    if (!d.layers.empty()) out.back()["layers"] = d.layers;
  }
  return out;
}

}  // namespace internal

std::string PlanToJsonText(const Plan& plan, int indent) {
  return internal::JsonText(internal::PlanToJson(plan), indent);
}

std::string FormatPlanTable(const Plan& plan) {
  std::string out;
  const ParallelConfig& p = plan.parallel;
  const std::optional<DeviceCapability>& gpu = plan.cache.device_capability;
  out += fmt::format("model {}{}{}  max-model-len {}  TP{} DCP{} PCP{} interleave {}{}{}\n",
                     plan.model.model_name, plan.model.draft_name.empty() ? "" : "  draft ",
                     plan.model.draft_name, plan.model.max_model_len, p.tensor_parallel_size,
                     p.decode_context_parallel_size, p.prefill_context_parallel_size,
                     p.dcp_kv_cache_interleave_size,
                     gpu ? "  GPU compute capability " + DeviceCapabilityName(*gpu) : "",
                     plan.model.quantization ? "  weights " + *plan.model.quantization : "");
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
        g.id.value(), GroupKindLabel(g), RoleName(g.role), PlacementName(geo.placement()),
        geo.dcp_shard_count(), geo.block_size(), geo.manager_block_size(), geo.kernel_block_size(),
        geo.page_size_bytes(), geo.block_table_width(), geo.max_pages_per_request(),
        g.backends.empty() ? "-" : fmt::format("{}", fmt::join(g.backends, "+")), g.layers.size());
  }
  if (std::any_of(plan.groups.begin(), plan.groups.end(),
                  [](const PlannedGroup& g) { return g.uniform_type; })) {
    out += "  * uniform type: one block id holds one page of every layer (per-layer pages)\n";
  }
  out += "\n";
  out +=
      fmt::format("pool       {} blocks x {} per block (stride {} B: {})\n", plan.pool.num_blocks,
                  FormatBytes(plan.pool.bytes_per_block), plan.pool.bytes_per_block,
                  plan.pool.layer_tuples > 0
                      ? fmt::format("{} layer tuples of {} B pages", plan.pool.layer_tuples,
                                    fmt::join(plan.pool.tuple_page_bytes, " + "))
                      : std::string("the largest group's pages"));
  for (const PlannedGroup& g : plan.groups) {
    if (g.geometry.sink_blocks() == 0) continue;
    out += fmt::format(
        "sinks      group {} keeps {} attention sink tokens in {} blocks, taken from "
        "the pool at start\n",
        g.id.value(), g.geometry.sink_tokens(), g.geometry.sink_blocks());
  }
  for (const PipelineStage& s : plan.pipeline_stages) {
    out += fmt::format("stage {:<4} {}: {} cache layers, {} per block{}\n", s.stage,
                       s.num_layers == 0 ? std::string("no hidden layers")
                                         : fmt::format("layers {}-{}", s.first_layer,
                                                       s.first_layer + s.num_layers - 1),
                       s.cache_layers, FormatBytes(s.bytes_per_block),
                       s.bytes_per_block == plan.pool.bytes_per_block ? " (sizes the pool)" : "");
  }
  out += fmt::format("memory     {} per rank{}\n", FormatBytes(plan.capacity.memory_bytes),
                     plan.kv_cache_memory_is_default
                         ? " (default budget; pass --kv-cache-memory to set yours)"
                         : "");
  out += fmt::format("capacity   {} tokens, {:.2f} max-length requests ({} blocks each)\n",
                     plan.capacity.max_tokens, plan.capacity.max_concurrency,
                     plan.capacity.blocks_per_request);
  out += fmt::format(
      "engine log GPU KV cache size: {} tokens, Maximum concurrency for {} tokens per request: "
      "{:.2f}x\n",
      GroupedThousands(plan.capacity.max_tokens), GroupedThousands(plan.model.max_model_len),
      plan.capacity.max_concurrency);
  if (plan.split_pools.pools.size() > 1) {
    out += fmt::format("split pool {} tokens, {:.2f} requests with one pool per placement\n",
                       plan.split_pools.capacity.max_tokens,
                       plan.split_pools.capacity.max_concurrency);
  }
  // The windowed groups' pages hold the tokens of every batch in flight.
  const bool windowed = std::any_of(plan.groups.begin(), plan.groups.end(),
                                    [](const PlannedGroup& g) { return IsWindowed(g.spec.kind); });
  out += fmt::format(
      "scheduler  block {} tokens, hash block {} tokens, {} tokens a step{}\n",
      plan.scheduler_block_size, plan.hash_block_size, plan.cache.max_num_batched_tokens,
      windowed ? fmt::format(" ({} in flight, which the windows hold)", plan.max_tokens_in_flight())
               : std::string());
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

// One row per group: the group's pages drawn to scale inside one pool block (the hatched rest of
// the block is what the group leaves unused; groups alias the same bytes).
std::string RenderPlanSvg(const Plan& plan) {
  const int kLeft = 20, kBlockW = 720, kRowH = 34, kTop = 70, kLabelW = 260;
  const size_t rows = plan.groups.size();
  const int width = kLeft * 2 + kLabelW + kBlockW;
  const int height = kTop + static_cast<int>(rows) * kRowH + 50;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"monospace\" font-size=\"11\">\n"
      "<defs><pattern id=\"pad\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
      "<path d=\"M0,6 L6,0\" stroke=\"#999\" stroke-width=\"1\"/></pattern></defs>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
  s += fmt::format(
      "<text x=\"{}\" y=\"20\" font-size=\"14\">{} — TP{} DCP{}: one pool block on one "
      "rank</text>\n",
      kLeft, Escape(plan.model.model_name), plan.parallel.tensor_parallel_size,
      plan.parallel.decode_context_parallel_size);
  s += fmt::format("<text x=\"{}\" y=\"38\">{} blocks x {} per block = {}</text>\n", kLeft,
                   plan.pool.num_blocks, Escape(FormatBytes(plan.pool.bytes_per_block)),
                   Escape(FormatBytes(plan.pool.num_blocks * plan.pool.bytes_per_block)));
  const double scale =
      plan.pool.bytes_per_block > 0
          ? static_cast<double>(kBlockW) / static_cast<double>(plan.pool.bytes_per_block)
          : 0.0;
  for (size_t r = 0; r < rows; ++r) {
    const PlannedGroup& g = plan.groups[r];
    const int y = kTop + static_cast<int>(r) * kRowH;
    const int x0 = kLeft + kLabelW;
    s += fmt::format("<text x=\"{}\" y=\"{}\">g{} {} {} B={} x{} ({} layers)</text>\n", kLeft,
                     y + kRowH / 2, g.id.value(), Escape(std::string(SpecKindName(g.spec))),
                     RoleName(g.role), g.geometry.block_size(), g.geometry.dcp_shard_count(),
                     g.layers.size());
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#pad)\" stroke=\"#888\"/>\n",
        x0, y, kBlockW, kRowH - 6);
    int64_t offset = 0;
    for (size_t i = 0; i < g.layers.size(); ++i) {
      const int64_t page = g.layer_page_bytes[i];
      const int x = x0 + static_cast<int>(static_cast<double>(offset) * scale);
      const int w = std::max(1, static_cast<int>(static_cast<double>(page) * scale) - 1);
      s += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {} B at "
          "offset "
          "{}</title></rect>\n",
          x, y, w, kRowH - 6, GroupColor(g), Escape(g.layers[i]), page, offset);
      offset += page;
    }
  }
  s += fmt::format(
      "<text x=\"{}\" y=\"{}\">hatched: bytes a group leaves unused in each block · capacity {} "
      "tokens · block tables {} per rank</text>\n</svg>\n",
      kLeft, height - 20, plan.capacity.max_tokens,
      Escape(FormatBytes(plan.block_table_bytes_per_rank)));
  return s;
}

}  // namespace kvtopo
