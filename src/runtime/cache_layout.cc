// Explicit cache layouts: KVCacheManagerOptions from groups described directly (C++, JSON and,
// through JSON, Python dicts). Each group's geometry comes from ComputeGroupGeometry, so the DCP
// rules are the planner's; nothing here derives a block size or a width.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "internal/checked_math.h"
#include "internal/json_int.h"
#include "internal/json_text.h"
#include "kvtopo/kv_cache_manager.h"

namespace kvtopo {

namespace {

struct KindName {
  const char* name;
  CacheKind kind;
  bool cross_attention;
};
constexpr KindName kKinds[] = {
    {"full_attention", CacheKind::kFullAttention, false},
    {"mla", CacheKind::kMla, false},
    {"sliding_window", CacheKind::kSlidingWindow, false},
    {"sliding_window_mla", CacheKind::kSlidingWindowMla, false},
    {"chunked_local", CacheKind::kChunkedLocal, false},
    {"mamba", CacheKind::kRecurrent, false},
    {"recurrent", CacheKind::kRecurrent, false},
    {"cross_attention", CacheKind::kFullAttention, true},
};

}  // namespace

Result<KVCacheManagerOptions> KVCacheManagerOptions::FromLayout(const CacheLayout& layout) {
  if (layout.groups.empty()) return InvalidArgument("cache layout: 'groups' is empty");
  const ParallelConfig parallel{
      .tensor_parallel_size = layout.decode_context_parallel_size,
      .decode_context_parallel_size = layout.decode_context_parallel_size,
      .prefill_context_parallel_size = 1,
      .dcp_kv_cache_interleave_size = layout.dcp_kv_cache_interleave_size};
  KVTOPO_RETURN_IF_ERROR(ValidateParallelConfig(parallel));
  KVCacheManagerOptions options;
  options.num_blocks = layout.num_blocks;
  options.enable_prefix_caching = layout.enable_prefix_caching;
  options.max_model_len = layout.max_model_len;
  options.log_stats = layout.log_stats;
  options.enable_kv_cache_events = layout.enable_kv_cache_events;
  options.record_new_block_ids = layout.record_new_block_ids;
  if (layout.max_model_len <= 0) {
    return InvalidArgument(
        fmt::format("cache layout: max_model_len must be positive, got {}", layout.max_model_len));
  }
  const bool encoder_decoder =
      std::any_of(layout.groups.begin(), layout.groups.end(),
                  [](const CacheLayoutGroup& lg) { return lg.cross_attention; });
  int64_t gcd = 0;
  for (size_t i = 0; i < layout.groups.size(); ++i) {
    const CacheLayoutGroup& lg = layout.groups[i];
    if (lg.page_size_bytes <= 0) {
      return InvalidArgument(
          fmt::format("cache layout group {}: page_size_bytes must be positive, got {}", i,
                      lg.page_size_bytes));
    }
    LayerSpec spec{.name = lg.layer_names.empty() ? fmt::format("group{}", i) : lg.layer_names[0],
                   .kind = lg.kind,
                   .block_size = lg.block_size,
                   .num_kv_heads = 1,
                   .head_size = 1,
                   .head_size_v = lg.kind == CacheKind::kMla ? 0 : 1,
                   .cache_dtype = KvCacheDtype::kBfloat16,
                   .sliding_window = lg.sliding_window,
                   .attention_chunk_size = lg.attention_chunk_size,
                   .recurrent_mode = lg.mamba_cache_mode,
                   .num_speculative_blocks = lg.num_speculative_blocks,
                   .dcp = {.replicated = lg.replicated, .kv_shard_count = lg.kv_shard_count},
                   .volatile_last_block = lg.volatile_last_block,
                   .cross_attention = lg.cross_attention,
                   .sink_tokens = lg.sink_len};
    if (lg.kind == CacheKind::kRecurrent) spec.state = {{{1}, ElementType::kBfloat16}};
    Result<GroupGeometry> geometry =
        ComputeGroupGeometry(spec, parallel,
                             {.max_model_len = layout.max_model_len,
                              .max_num_seqs = layout.max_num_seqs,
                              .max_tokens_in_flight = layout.max_num_batched_tokens,
                              .kernel_block_size = lg.kernel_block_size,
                              // The page size is given, not derived from head shapes.
                              .page_size_bytes = lg.page_size_bytes,
                              // The engine's max_num_encoder_input_tokens.
                              .max_encoder_tokens = layout.max_num_batched_tokens,
                              .encoder_decoder = encoder_decoder});
    if (!geometry.ok()) {
      return Status(geometry.status().code(),
                    fmt::format("cache layout group {}: {}", i, geometry.status().message()));
    }
    gcd = std::gcd(gcd, geometry->manager_block_size());
    options.groups.push_back({.geometry = *geometry,
                              .volatile_last_block = lg.volatile_last_block,
                              .cross_attention = lg.cross_attention,
                              .lookup_class = lg.lookup_class,
                              .layer_names = lg.layer_names});
  }
  options.hash_block_size = layout.hash_block_size > 0 ? layout.hash_block_size : gcd;
  return options;
}

Result<CacheLayout> ParseCacheLayoutJson(std::string_view text) {
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json j, internal::ParseJsonText(text, "cache layout"));
  if (!j.is_object()) return InvalidArgument("cache layout: expected a JSON object");
  CacheLayout layout;
  auto integer = [](const nlohmann::json& obj, const std::string& where, const char* key,
                    int64_t min, int64_t max, int64_t& out) -> Status {
    if (!obj.contains(key)) return Status::Ok();
    const nlohmann::json& v = obj[key];
    const std::optional<int64_t> n = internal::JsonIntIn(v, min, max);
    if (!n) {
      return InvalidArgument(fmt::format("{}: '{}' must be an integer in [{}, {}], got {}", where,
                                         key, min, max, v.dump()));
    }
    out = *n;
    return Status::Ok();
  };
  auto boolean = [](const nlohmann::json& obj, const std::string& where, const char* key,
                    bool& out) -> Status {
    if (!obj.contains(key)) return Status::Ok();
    if (!obj[key].is_boolean()) {
      return InvalidArgument(fmt::format("{}: '{}' must be true or false", where, key));
    }
    out = obj[key].get<bool>();
    return Status::Ok();
  };
  constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
  const std::string top = "cache layout";
  static const char* kTopKeys[] = {"num_blocks",
                                   "max_model_len",
                                   "groups",
                                   "enable_prefix_caching",
                                   "hash_block_size",
                                   "decode_context_parallel_size",
                                   "dcp_kv_cache_interleave_size",
                                   "max_num_seqs",
                                   "max_num_batched_tokens",
                                   "log_stats",
                                   "enable_kv_cache_events",
                                   "record_new_block_ids"};
  for (const auto& item : j.items()) {
    const std::string& key = item.key();  // a name, not a binding: clang 14 captures it
    if (std::find_if(std::begin(kTopKeys), std::end(kTopKeys),
                     [&](const char* k) { return key == k; }) == std::end(kTopKeys)) {
      return InvalidArgument(fmt::format("cache layout: unknown key '{}'; accepted: {}", key,
                                         fmt::join(kTopKeys, ", ")));
    }
  }
  if (!j.contains("num_blocks")) return InvalidArgument("cache layout: 'num_blocks' is missing");
  if (!j.contains("max_model_len")) {
    return InvalidArgument("cache layout: 'max_model_len' is missing");
  }
  int64_t num_blocks = 0;
  KVTOPO_RETURN_IF_ERROR(integer(j, top, "num_blocks", 1, kMaxInt32, num_blocks));
  layout.num_blocks = static_cast<int32_t>(num_blocks);
  KVTOPO_RETURN_IF_ERROR(integer(j, top, "max_model_len", 1, kMaxInt64, layout.max_model_len));
  KVTOPO_RETURN_IF_ERROR(integer(j, top, "hash_block_size", 1, kMaxInt64, layout.hash_block_size));
  KVTOPO_RETURN_IF_ERROR(integer(j, top, "decode_context_parallel_size", 1, 1 << 20,
                                 layout.decode_context_parallel_size));
  KVTOPO_RETURN_IF_ERROR(integer(j, top, "dcp_kv_cache_interleave_size", 1, 1 << 30,
                                 layout.dcp_kv_cache_interleave_size));
  KVTOPO_RETURN_IF_ERROR(integer(j, top, "max_num_seqs", 1, kMaxInt32, layout.max_num_seqs));
  KVTOPO_RETURN_IF_ERROR(
      integer(j, top, "max_num_batched_tokens", 1, kMaxInt64, layout.max_num_batched_tokens));
  KVTOPO_RETURN_IF_ERROR(boolean(j, top, "enable_prefix_caching", layout.enable_prefix_caching));
  KVTOPO_RETURN_IF_ERROR(boolean(j, top, "log_stats", layout.log_stats));
  KVTOPO_RETURN_IF_ERROR(boolean(j, top, "enable_kv_cache_events", layout.enable_kv_cache_events));
  KVTOPO_RETURN_IF_ERROR(boolean(j, top, "record_new_block_ids", layout.record_new_block_ids));
  if (!j.contains("groups") || !j["groups"].is_array() || j["groups"].empty()) {
    return InvalidArgument("cache layout: 'groups' must be a non-empty list of group objects");
  }
  static const char* kGroupKeys[] = {"kind",
                                     "block_size",
                                     "kernel_block_size",
                                     "page_size_bytes",
                                     "sliding_window",
                                     "attention_chunk_size",
                                     "mamba_cache_mode",
                                     "num_speculative_blocks",
                                     "replicated",
                                     "kv_shard_count",
                                     "volatile_last_block",
                                     "sink_len",
                                     "lookup_class",
                                     "layers"};
  for (size_t i = 0; i < j["groups"].size(); ++i) {
    const nlohmann::json& g = j["groups"][i];
    const std::string where = fmt::format("cache layout group {}", i);
    if (!g.is_object()) return InvalidArgument(where + ": expected an object");
    for (const auto& item : g.items()) {
      const std::string& key = item.key();
      if (std::find_if(std::begin(kGroupKeys), std::end(kGroupKeys),
                       [&](const char* k) { return key == k; }) == std::end(kGroupKeys)) {
        return InvalidArgument(fmt::format("{}: unknown key '{}'; accepted: {}", where, key,
                                           fmt::join(kGroupKeys, ", ")));
      }
    }
    CacheLayoutGroup lg;
    if (!g.contains("kind") || !g["kind"].is_string()) {
      return InvalidArgument(where + ": 'kind' is missing or not a string");
    }
    const std::string kind = g["kind"].get<std::string>();
    const KindName* found = nullptr;
    for (const KindName& k : kKinds) {
      if (kind == k.name) found = &k;
    }
    if (found == nullptr) {
      return InvalidArgument(
          fmt::format("{}: unknown kind '{}'; accepted: full_attention, mla, sliding_window, "
                      "sliding_window_mla, chunked_local, mamba (or recurrent), cross_attention",
                      where, kind));
    }
    lg.kind = found->kind;
    lg.cross_attention = found->cross_attention;
    if (!g.contains("block_size")) return InvalidArgument(where + ": 'block_size' is missing");
    KVTOPO_RETURN_IF_ERROR(integer(g, where, "block_size", 1, 1 << 30, lg.block_size));
    KVTOPO_RETURN_IF_ERROR(
        integer(g, where, "kernel_block_size", 1, 1 << 30, lg.kernel_block_size));
    if (!g.contains("page_size_bytes")) {
      return InvalidArgument(where + ": 'page_size_bytes' is missing");
    }
    KVTOPO_RETURN_IF_ERROR(
        integer(g, where, "page_size_bytes", 1, int64_t{1} << 40, lg.page_size_bytes));
    KVTOPO_RETURN_IF_ERROR(
        integer(g, where, "sliding_window", 1, kMaxInt64 / 4, lg.sliding_window));
    KVTOPO_RETURN_IF_ERROR(
        integer(g, where, "attention_chunk_size", 1, kMaxInt64 / 4, lg.attention_chunk_size));
    KVTOPO_RETURN_IF_ERROR(
        integer(g, where, "num_speculative_blocks", 0, 1 << 16, lg.num_speculative_blocks));
    KVTOPO_RETURN_IF_ERROR(integer(g, where, "kv_shard_count", 1, 1 << 20, lg.kv_shard_count));
    KVTOPO_RETURN_IF_ERROR(integer(g, where, "sink_len", 0, 1 << 30, lg.sink_len));
    int64_t lookup_class = -1;
    KVTOPO_RETURN_IF_ERROR(integer(g, where, "lookup_class", 0, kMaxInt32, lookup_class));
    lg.lookup_class = static_cast<int32_t>(lookup_class);
    KVTOPO_RETURN_IF_ERROR(boolean(g, where, "replicated", lg.replicated));
    KVTOPO_RETURN_IF_ERROR(boolean(g, where, "volatile_last_block", lg.volatile_last_block));
    if (g.contains("mamba_cache_mode")) {
      const nlohmann::json& given = g["mamba_cache_mode"];
      // A value that is not a string reads as "", which no mode is.
      const Result<RecurrentMode> mode =
          ParseRecurrentMode(given.is_string() ? given.get<std::string>() : std::string());
      if (!mode.ok()) {
        return InvalidArgument(fmt::format(
            "{}: 'mamba_cache_mode' must be none, align or all, got {}", where, given.dump()));
      }
      lg.mamba_cache_mode = *mode;
    }
    const bool windowed =
        lg.kind == CacheKind::kSlidingWindow || lg.kind == CacheKind::kSlidingWindowMla;
    if (windowed && lg.sliding_window <= 0) {
      return InvalidArgument(where + ": a sliding-window group needs 'sliding_window'");
    }
    if (lg.kind == CacheKind::kChunkedLocal && lg.attention_chunk_size <= 0) {
      return InvalidArgument(where + ": a chunked-local group needs 'attention_chunk_size'");
    }
    if (g.contains("layers")) {
      if (!g["layers"].is_array()) return InvalidArgument(where + ": 'layers' must be a list");
      for (const auto& name : g["layers"]) {
        if (!name.is_string()) return InvalidArgument(where + ": 'layers' holds layer names");
        lg.layer_names.push_back(name.get<std::string>());
      }
    }
    layout.groups.push_back(std::move(lg));
  }
  return layout;
}

}  // namespace kvtopo
