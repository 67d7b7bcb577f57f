#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "internal/json_int.h"
#include "internal/json_text.h"
#include "kvtopo/limits.h"
#include "kvtopo/model.h"
#include "kvtopo/simulate.h"

namespace kvtopo {

Result<Workload> ParseWorkloadJsonl(std::string_view text) {
  Workload w;
  w.name = "file";
  int64_t line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
      if (end == text.size()) break;
      continue;
    }
    KVTOPO_ASSIGN_OR_RETURN(
        const nlohmann::json j,
        internal::ParseJsonText(line, fmt::format("workload line {}", line_no)));
    if (!j.is_object()) {
      return InvalidArgument(
          fmt::format("workload line {}: expected a JSON object, got {}", line_no, j.type_name()));
    }
    WorkloadRequest r;
    auto field = [&](const char* name, int64_t& out, bool required, int64_t min,
                     int64_t max) -> Status {
      if (!j.contains(name)) {
        return required ? InvalidArgument(
                              fmt::format("workload line {}: field '{}' is missing", line_no, name))
                        : Status::Ok();
      }
      const std::optional<int64_t> value = internal::JsonIntIn(j[name], min, max);
      if (!value) {
        return InvalidArgument(
            fmt::format("workload line {}: field '{}' must be an integer in [{}, {}], got {}",
                        line_no, name, min, max, j[name].dump()));
      }
      out = *value;
      return Status::Ok();
    };
    if (static_cast<int64_t>(w.requests.size()) == kMaxWorkloadRequests) {
      return InvalidArgument(
          fmt::format("workload line {}: more than {} requests", line_no, kMaxWorkloadRequests));
    }
    KVTOPO_RETURN_IF_ERROR(field("prompt_len", r.prompt_len, true, 1, kMaxModelLen));
    KVTOPO_RETURN_IF_ERROR(field("arrival_step", r.arrival_step, false, 0, kMaxWorkloadSteps));
    KVTOPO_RETURN_IF_ERROR(field("shared_prefix_id", r.shared_prefix_id, false, -1, kMaxInt32));
    KVTOPO_RETURN_IF_ERROR(field("shared_prefix_len", r.shared_prefix_len, false, 0, kMaxModelLen));
    KVTOPO_RETURN_IF_ERROR(field("decode_steps", r.decode_steps, false, 0, kMaxModelLen));
    if (r.shared_prefix_len > r.prompt_len) {
      return InvalidArgument(
          fmt::format("workload line {}: shared_prefix_len {} is longer than prompt_len {}",
                      line_no, r.shared_prefix_len, r.prompt_len));
    }
    if (j.contains("accepted_drafts")) {
      if (!j["accepted_drafts"].is_array()) {
        return InvalidArgument(
            fmt::format("workload line {}: field 'accepted_drafts' must be a list", line_no));
      }
      for (const auto& v : j["accepted_drafts"]) {
        const std::optional<int64_t> accepted = internal::JsonIntIn(v, 0, kMaxSpeculativeTokens);
        if (!accepted) {
          return InvalidArgument(
              fmt::format("workload line {}: 'accepted_drafts' holds integers in [0, {}], got {}",
                          line_no, kMaxSpeculativeTokens, v.dump()));
        }
        r.accepted_drafts.push_back(*accepted);
      }
    }
    for (const auto& [key, value] : j.items()) {
      static const char* kKeys[] = {"prompt_len",        "arrival_step", "shared_prefix_id",
                                    "shared_prefix_len", "decode_steps", "accepted_drafts"};
      if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
        return InvalidArgument(
            fmt::format("workload line {}: unknown field '{}'; accepted: prompt_len, arrival_step, "
                        "shared_prefix_id, shared_prefix_len, decode_steps, accepted_drafts",
                        line_no, key));
      }
    }
    w.requests.push_back(std::move(r));
  }
  if (w.requests.empty()) return InvalidArgument("workload file holds no requests");
  return w;
}

std::vector<std::string> BuiltinWorkloadNames() {
  return {"million", "decode-steady", "prefix-hit", "hybrid", "w1", "w2", "w3", "w4"};
}

// The reference workloads W1-W4 (docs/BENCHMARKS.md): W1 is decode-steady's shape, W2
// prefix-hit's on a pool of 4,096 blocks, W3 hybrid's, W4 one request grown to 1,000,000 tokens
// in 768-token chunks on one full-attention group of 64-token blocks.
std::string_view ReferenceShape(std::string_view name) {
  if (name == "w1") return "decode-steady";
  if (name == "w2") return "prefix-hit";
  if (name == "w3") return "hybrid";
  return name;
}

Result<Workload> BuiltinWorkload(std::string_view name) {
  Workload w;
  w.name = std::string(name);
  if (name == "w4") {
    w.requests.push_back({.prompt_len = 1'000'000});
    w.prefill_chunk_tokens = 768;
    return w;
  }
  const bool w2 = name == "w2";
  name = ReferenceShape(name);
  if (name == "million") {
    // One request grown to 1,000,000 tokens under the plan's step budget; with a recurrent align
    // group every chunk but the last ends on a checkpoint (on the default launch: 1,301 chunks
    // of 768 tokens, then the last 832 within the 1,024-token budget).
    w.requests.push_back({.prompt_len = 1'000'000});
  } else if (name == "decode-steady") {
    for (int i = 0; i < 256; ++i) w.requests.push_back({.prompt_len = 2048, .decode_steps = 512});
    w.num_lookahead_tokens = 3;
    w.num_speculative_tokens = 0;
  } else if (name == "prefix-hit") {
    for (int i = 0; i < 1000; ++i) {
      w.requests.push_back({.prompt_len = 4096 + 256,
                            .shared_prefix_id = 0,
                            .shared_prefix_len = 4096,
                            .decode_steps = 16});
      // W2: one after another (a prefill step and 16 decode steps each).
      if (w2) w.requests.back().arrival_step = 17 * i;
    }
    w.num_lookahead_tokens = 0;
    w.num_speculative_tokens = 0;
  } else if (name == "hybrid") {
    for (int i = 0; i < 64; ++i) w.requests.push_back({.prompt_len = 32768, .decode_steps = 256});
    w.prefill_chunk_tokens = 8192;
    w.num_lookahead_tokens = 0;
    w.num_speculative_tokens = 0;
  } else {
    return InvalidArgument(fmt::format(
        "unknown workload '{}'; built-in: million, decode-steady, prefix-hit, hybrid, w1, w2, "
        "w3, w4, or --workload-file FILE",
        name));
  }
  return w;
}

namespace {

LayerSpec Attention(std::string name, CacheKind kind) {
  return LayerSpec{.name = std::move(name),
                   .kind = kind,
                   .block_size = 16,
                   .num_kv_heads = 8,
                   .head_size = 128,
                   .head_size_v = 128,
                   .cache_dtype = KvCacheDtype::kBfloat16,
                   .attention_backend = "FLASH_ATTN"};
}

}  // namespace

Result<Plan> DefaultPlanForWorkload(std::string_view name, int64_t kv_cache_memory_bytes,
                                    int64_t num_gpu_blocks_override) {
  if (name == "million") {
    LaunchConfig launch = DefaultLaunchConfig();
    launch.cache.num_gpu_blocks_override = num_gpu_blocks_override;
    return PlanLaunch(launch, kv_cache_memory_bytes);
  }
  const bool w4 = name == "w4";
  name = ReferenceShape(name);
  ModelCacheSpecs specs;
  // TP1/DCP1, 256 rows, one 8,192-token batch in flight; backends from the registry.
  LaunchConfig launch;
  launch.cache.max_num_seqs = 256;
  launch.cache.max_num_batched_tokens = 8192;
  launch.cache.async_scheduling = false;
  launch.cache.num_gpu_blocks_override = num_gpu_blocks_override;
  if (name == "decode-steady" || name == "prefix-hit") {
    // An 8B-class dense model: 32 layers, 8 KV heads of 128, bf16, 16-token blocks.
    specs.model_name = "synthetic-dense-32l";
    specs.max_model_len = 8192;
    for (int i = 0; i < 32; ++i) {
      specs.layers.push_back(
          Attention(fmt::format("layers.{}.attn", i), CacheKind::kFullAttention));
    }
  } else if (w4) {
    // One full-attention layer of 64-token blocks, long enough for the million-token request.
    specs.model_name = "synthetic-dense-1l-b64";
    specs.max_model_len = 1'000'064;
    LayerSpec layer = Attention("layers.0.attn", CacheKind::kFullAttention);
    layer.block_size = 64;
    specs.layers.push_back(layer);
  } else if (name == "hybrid") {
    specs.model_name = "synthetic-hybrid-3g";
    specs.max_model_len = 40960;
    specs.layers.push_back(Attention("layers.0.attn", CacheKind::kFullAttention));
    LayerSpec swa = Attention("layers.1.swa", CacheKind::kSlidingWindow);
    swa.sliding_window = 4096;
    specs.layers.push_back(swa);
    // A recurrent state of exactly one attention page (16 tokens x 4 KiB): (16, 2048) bf16.
    specs.layers.push_back(LayerSpec{.name = "layers.2.recurrent",
                                     .kind = CacheKind::kRecurrent,
                                     .block_size = 16,
                                     .state = {{{16, 2048}, ElementType::kBfloat16}},
                                     .recurrent_mode = RecurrentMode::kAlign});
  } else {
    return InvalidArgument(fmt::format("no default plan for workload '{}'; pass a MODEL", name));
  }
  return PlanLaunchSpecs(specs, launch, kv_cache_memory_bytes);
}

}  // namespace kvtopo
