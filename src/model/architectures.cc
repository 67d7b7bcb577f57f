#include "model/architectures.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <set>
#include <span>
#include <tuple>

#include "internal/ascii_case.h"
#include "internal/checked_math.h"
#include "internal/json_int.h"
#include "internal/json_text.h"
#include "internal/text_file.h"
#include "kvtopo/backend.h"
#include "kvtopo/limits.h"
#include "model/config_reader.h"
#include "model/embedded_profiles.h"
#include "model/gguf.h"
#include "model/hf_cache.h"
#include "model/mistral_format.h"
#include "model/speculative_method.h"

namespace kvtopo::internal {
namespace {

// `j`'s string at `key`, or "" when `j` is not an object or the value is absent or not a string
// (the engine's getattr with a default, for a rule that only compares it).
std::string StringOrEmpty(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string LayerName(int64_t i, const char* suffix) {
  return fmt::format("model.layers.{}.{}", i, suffix);
}

// The config classes whose MLA dimensions kvtopo knows when a config states none, by the text
// config's model type: Transformers' DeepseekV2Config and DeepseekV3Config (which the engine also
// builds for deepseek_v32 and for Kimi-K2.5's kimi_k2 text config), GlmMoeDsaConfig and
// Glm4MoeLiteConfig, and the engine's KimiLinearConfig, whose defaults are None (docs/profiles.md).
struct MlaClassDefaults {
  std::string_view model_type;
  std::string_view config_class;
  std::optional<int64_t> qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
};
constexpr MlaClassDefaults kMlaClassDefaults[] = {
    {"deepseek_v2", "DeepseekV2Config", 128, 64, 128},
    {"deepseek_v3", "DeepseekV3Config", 128, 64, 128},
    {"deepseek_v32", "DeepseekV3Config", 128, 64, 128},
    {"kimi_k2", "DeepseekV3Config", 128, 64, 128},
    {"glm_moe_dsa", "GlmMoeDsaConfig", 192, 64, 256},
    {"glm4_moe_lite", "Glm4MoeLiteConfig", 192, 64, 256},
    {"kimi_linear", "KimiLinearConfig", std::nullopt, std::nullopt, std::nullopt},
};

// A stated value as Python's `value in [...]` of integers compares it: bools, integers and
// integral floats equal an integer; None, strings and the rest equal none.
TextConfigDim StatedDim(const nlohmann::json& v, std::string source) {
  TextConfigDim d{.shown = v.dump(), .source = std::move(source)};
  if (v.is_null()) {
    d.shown = "None";
  } else if (v.is_boolean()) {
    d.value = v.get<bool>() ? 1 : 0;
    d.shown = v.get<bool>() ? "True" : "False";
  } else if (v.is_number_integer()) {
    d.value = JsonIntIn(v, INT64_MIN, INT64_MAX);
  } else if (v.is_number_float()) {
    const double x = v.get<double>();
    if (x == std::trunc(x) && x >= -9223372036854775808.0 && x < 9223372036854775808.0) {
      d.value = static_cast<int64_t>(x);
    }
  } else if (v.is_string()) {
    d.shown = fmt::format("'{}'", v.get<std::string>());
  }
  return d;
}

// The MLA dimensions some backends check (BackendCaps::config_dims), as the engine's
// hf_text_config holds them: stated, else the config class's default where kvtopo knows it.
void RecordMlaConfigDims(const ConfigReader& r, ModelDescription& m) {
  const std::string type = StringOrEmpty(r.json(), "model_type");
  const MlaClassDefaults* defaults = nullptr;
  for (const MlaClassDefaults& d : kMlaClassDefaults) {
    if (d.model_type == type) defaults = &d;
  }
  for (const auto& [key, member] :
       {std::pair{"qk_nope_head_dim", &MlaClassDefaults::qk_nope_head_dim},
        std::pair{"qk_rope_head_dim", &MlaClassDefaults::qk_rope_head_dim},
        std::pair{"v_head_dim", &MlaClassDefaults::v_head_dim}}) {
    if (const auto it = r.json().find(key); it != r.json().end()) {
      m.mla_config_dims[key] =
          StatedDim(*it, fmt::format("field '{}' of '{}'", r.Path(key), r.file()));
    } else if (defaults != nullptr) {
      const std::optional<int64_t> value = defaults->*member;
      m.mla_config_dims[key] =
          TextConfigDim{.value = value,
                        .shown = value ? std::to_string(*value) : "None",
                        .source = fmt::format("the {} default; '{}' states no {}",
                                              defaults->config_class, r.file(), r.Path(key))};
    }
  }
}

// The logits soft cap the engine's attention layers take from the text config's
// attn_logit_softcapping (getattr: the config class's default `class_default`, a JSON number,
// when absent; null: none), recorded for the backends whose impls refuse one
// (ModelDescription::logits_soft_cap_source). A value that is neither null nor a number is
// refused: the engine hands it to the attention kernels as the cap.
Status ReadLogitsSoftCap(const ConfigReader& r, std::string_view config_class,
                         const char* class_default, ModelDescription& m) {
  constexpr std::string_view kKey = "attn_logit_softcapping";
  if (const auto it = r.json().find(kKey); it != r.json().end()) {
    if (it->is_null()) return Status::Ok();
    if (!it->is_number()) {
      return r.Invalid(kKey,
                       "is neither a number nor null: the engine's attention takes it as "
                       "the logits soft cap");
    }
    m.logits_soft_cap_source = fmt::format("{} {} in '{}'", r.Path(kKey), it->dump(), r.file());
  } else if (class_default != nullptr) {
    m.logits_soft_cap_source = fmt::format("the {} default {} {}; '{}' states none", config_class,
                                           r.Path(kKey), class_default, r.file());
  }
  return Status::Ok();
}

// Records the layers that read an earlier layer's KV cache and keep none (`reusing`, ascending),
// the last num_kv_shared_layers (`shared`, stated or `config_class`'s default), for the backends
// whose impls refuse KV sharing (ModelDescription::kv_sharing_source).
void RecordKvSharing(const ConfigReader& r, int64_t shared, std::string_view config_class,
                     const std::vector<int64_t>& reusing, ModelDescription& m) {
  constexpr std::string_view kKey = "num_kv_shared_layers";
  m.kv_sharing_source =
      fmt::format("{}: {} layer{} from layer {} read an earlier layer's cache",
                  r.Has(kKey) ? fmt::format("{} {} in '{}'", r.Path(kKey), shared, r.file())
                              : fmt::format("the {} default {} {}; '{}' states none", config_class,
                                            r.Path(kKey), shared, r.file()),
                  reusing.size(), reusing.size() == 1 ? "" : "s", reusing.front());
}

// MLA latent row: kv_lora_rank + qk_rope_head_dim (rope 0 for NoPE models).
struct MlaRow {
  int64_t head_size = 0;
  int64_t rope_dim = 0;
};
Result<MlaRow> ReadMlaRow(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(int64_t lora, r.IntIn("kv_lora_rank", 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(int64_t rope, r.IntIn("qk_rope_head_dim", 0, kMaxModelDim));
  RecordMlaConfigDims(r, m);
  return MlaRow{lora + rope, rope};
}

// A positive field of at most `max` (a dimension or head count unless said otherwise).
Result<int64_t> Positive(const ConfigReader& r, std::string_view key, int64_t max = kMaxModelDim) {
  return r.IntIn(key, 1, max);
}

// num_hidden_layers, and the MTP layers after them: at most kMaxLayers in all.
Result<int64_t> NumLayers(const ConfigReader& r) {
  return Positive(r, "num_hidden_layers", kMaxLayers);
}
// A config that states them also sets the MTP draft's n_predict.
Result<int64_t> NumMtpLayers(const ConfigReader& r, int64_t num_layers, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const int64_t mtp,
                          r.IntInOr("num_nextn_predict_layers", 0, 0, kMaxLayers - num_layers));
  if (r.Has("num_nextn_predict_layers")) m.mtp_n_predict = mtp;
  return mtp;
}

// Indexer K cache row: index_head_dim fp8 values plus one fp32 scale.
Result<int64_t> IndexerHeadSize(const ConfigReader& r) {
  KVTOPO_ASSIGN_OR_RETURN(int64_t dim, Positive(r, "index_head_dim"));
  KVTOPO_RETURN_IF_ERROR(Positive(r, "index_n_heads").status());
  return dim + 4;
}

// A pooled indexer key kept after the MLA page's rows: the key row pooled index_kpool tokens to
// one (GLM-5.3-Flash: 132 B / 4 = 33 B per token).
Result<int64_t> PooledIndexerTail(const ConfigReader& r, int64_t indexer_head) {
  KVTOPO_ASSIGN_OR_RETURN(int64_t kpool, r.IntInOr("index_kpool", 1, 1, indexer_head));
  return indexer_head / kpool;
}

// `indexer_tail` > 0: the indexer key lives after the MLA page's rows rather than in a cache of
// its own, so the layer's single page holds both.
void AddMla(ModelDescription& m, int64_t i, MlaRow row, int64_t indexer_head, bool mtp,
            int64_t indexer_tail = 0) {
  m.layers.push_back(RawLayer{.name = LayerName(i, "self_attn"),
                              .type = LayerType::kMla,
                              .mtp = mtp,
                              .head_size = row.head_size,
                              .mla_rope_dim = row.rope_dim,
                              .page_tail_bytes_per_token = indexer_tail});
  if (indexer_head > 0 && indexer_tail == 0) {
    m.layers.push_back(RawLayer{.name = LayerName(i, "indexer"),
                                .type = LayerType::kIndexer,
                                .mtp = mtp,
                                .head_size = indexer_head});
  }
}

// The maximum length the engine derives from a config (vLLM's derive_max_model_len_and_key and
// _get_and_verify_max_len): the smallest of the length fields the config states
// (max_position_embeddings and the other models' names for it, kLengthKeys), or its
// model_max_length when set (Command R's 131072 beside max_position_embeddings 8192); then times
// the RoPE scaling factor (`rope_scaling`, or `rope_parameters` as Transformers v5 writes it,
// possibly one entry per layer type), except for the su, longrope and llama3 types, whose length
// already counts it; a yarn entry scales its original_max_position_embeddings instead. A
// LongRoPE (su, longrope) config's default length is its top-level
// original_max_position_embeddings. Not for a Gemma 3 config (model_type containing "gemma3"),
// whose length the engine takes as already scaled. With `default_positions` > 0 a config may
// omit max_position_embeddings (its config class's default); with 0 the field is required; with
// kAnyLengthField (a config class without the field) any length field will do, and a config that
// states none has no maximum: the engine then defaults to 2048 tokens and takes any longer
// --max-model-len. (model_max_length, when set, replaces them all.)
constexpr std::array<std::string_view, 7> kLengthKeys = {
    "n_positions",         "max_seq_len",    "seq_length", "max_target_positions",
    "max_sequence_length", "max_seq_length", "seq_len"};

// One of kLengthKeys: a positive integer; a number beyond kMaxModelLen (a "very large integer"
// that bounds nothing) counts as kMaxModelLen.
Result<int64_t> LengthField(const ConfigReader& r, std::string_view key) {
  const nlohmann::json& v = r.json().at(std::string(key));
  if (v.is_number() && v.get<double>() > static_cast<double>(kMaxModelLen)) return kMaxModelLen;
  return Positive(r, key, kMaxModelLen);
}

constexpr int64_t kAnyLengthField = -1;
constexpr int64_t kUnstatedDefaultLength = 2048;

// RoPE parameters given per layer type: an object whose every entry is an object.
bool PerLayerTypeRope(const nlohmann::json& rope) {
  return rope.is_object() && !rope.empty() &&
         std::all_of(rope.begin(), rope.end(),
                     [](const nlohmann::json& v) { return v.is_object(); });
}

Status ReadMaxLength(const ConfigReader& r, ModelDescription& m, int64_t default_positions) {
  // No max_position_embeddings where the class has none: unbounded unless another field says.
  const bool unbounded = default_positions == kAnyLengthField && !r.Has("max_position_embeddings");
  if (unbounded) {
    m.max_position_embeddings = kMaxModelLen;
    m.max_len_source = "no length field";
  } else if (default_positions > 0 && !r.Has("max_position_embeddings")) {
    m.max_position_embeddings = default_positions;
    m.max_len_source =
        fmt::format("max_position_embeddings {} (the config class's default)", default_positions);
  } else {
    KVTOPO_ASSIGN_OR_RETURN(m.max_position_embeddings,
                            Positive(r, "max_position_embeddings", kMaxModelLen));
    m.max_len_source = fmt::format("max_position_embeddings {}", m.max_position_embeddings);
  }
  m.length_base = m.max_position_embeddings;
  std::string base_name = "max_position_embeddings";
  auto take = [&](std::string_view key, int64_t length) {
    m.length_base = length;
    base_name = key;
    m.max_len_source = fmt::format("{} {}", key, length);
  };
  for (std::string_view key : kLengthKeys) {
    if (!r.Has(key)) continue;
    KVTOPO_ASSIGN_OR_RETURN(const int64_t length, LengthField(r, key));
    if (length < m.length_base) take(key, length);
  }
  if (r.Has("model_max_length")) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t length, LengthField(r, "model_max_length"));
    take("model_max_length", length);
  }
  m.max_model_len = m.length_base;
  if (unbounded && base_name == "max_position_embeddings") {
    // No length field: the engine's derived length is unbounded, its default 2048.
    m.length_unstated = true;
    m.default_max_model_len = kUnstatedDefaultLength;
    m.default_len_source =
        fmt::format("{} (the engine's length for a config without one)", kUnstatedDefaultLength);
    m.config_warnings.emplace_back(
        "config-length-default",
        fmt::format("{} states none of the engine's length fields "
                    "(max_position_embeddings, {}, model_max_length): without --max-model-len "
                    "the engine assumes {} tokens, and it accepts any --max-model-len",
                    ConfigFileLabel(r.file()), fmt::join(kLengthKeys, ", "),
                    kUnstatedDefaultLength));
    return Status::Ok();
  }
  const std::string key = r.Has("rope_scaling") ? "rope_scaling" : "rope_parameters";
  if (!r.Has(key)) return Status::Ok();
  // The engine takes a Gemma 3 config's length as already scaled (its top-level model_type).
  if (m.model_type.find("gemma3") != std::string::npos) return Status::Ok();
  KVTOPO_ASSIGN_OR_RETURN(ConfigReader rope, r.Object(key));
  // One entry, or one per layer type (an object of objects).
  std::vector<ConfigReader> entries;
  const nlohmann::json& j = rope.json();
  if (PerLayerTypeRope(j)) {
    for (const auto& [name, value] : j.items()) {
      KVTOPO_ASSIGN_OR_RETURN(ConfigReader entry, rope.Object(name));
      entries.push_back(std::move(entry));
    }
  } else {
    entries.push_back(rope);
  }
  double factor = 1;
  int64_t base = m.length_base;
  std::string type_seen;
  bool longrope = false, yarn = false;
  for (const ConfigReader& e : entries) {
    std::string type;
    if (e.Has("rope_type")) {
      KVTOPO_ASSIGN_OR_RETURN(type, e.String("rope_type"));
    } else {
      KVTOPO_ASSIGN_OR_RETURN(type, e.StringOr("type", "default"));
    }
    // The engine reads the legacy "su" as "longrope".
    longrope = longrope || type == "su" || type == "longrope";
    if (type == "su" || type == "longrope" || type == "llama3") continue;
    if (e.Has("factor")) {
      const nlohmann::json& f = e.json()["factor"];
      if (!f.is_number() || !(f.get<double>() > 0) ||
          f.get<double>() > static_cast<double>(kMaxModelLen)) {
        return e.Invalid("factor", fmt::format("must be a positive number of at most {}, got {}",
                                               kMaxModelLen, f.dump()));
      }
      factor = f.get<double>();
      type_seen = type;
    }
    if (type == "yarn") {
      KVTOPO_ASSIGN_OR_RETURN(base, Positive(e, "original_max_position_embeddings", kMaxModelLen));
      base_name = "original_max_position_embeddings";
      yarn = true;
    }
  }
  // A LongRoPE model serves its original_max_position_embeddings unless asked for more (the
  // engine avoids the long factors' cost on shorter requests).
  if (longrope && r.Has("original_max_position_embeddings")) {
    KVTOPO_ASSIGN_OR_RETURN(m.default_max_model_len,
                            Positive(r, "original_max_position_embeddings", kMaxModelLen));
    m.default_len_source =
        fmt::format("original_max_position_embeddings {} (LongRoPE)", m.default_max_model_len);
  }
  m.rope_factor = factor;
  m.rope_yarn_base = yarn;
  if (factor == 1 && base == m.length_base) return Status::Ok();
  const double scaled = static_cast<double>(base) * factor;
  if (scaled < 1 || scaled > static_cast<double>(kMaxModelLen)) {
    return rope.Invalid("factor", fmt::format("scales {} {} to {}, outside [1, {}]", base_name,
                                              base, scaled, kMaxModelLen));
  }
  m.max_model_len = static_cast<int64_t>(scaled);
  m.max_len_source = type_seen.empty()
                         ? fmt::format("{} {}", base_name, base)
                         : fmt::format("{} {} x {} factor {}", base_name, base, type_seen, factor);
  return Status::Ok();
}

// The config's torch_dtype (or dtype); float32 when it states neither.
Status ReadDtype(const ConfigReader& r, ModelDescription& m) {
  if (r.Has("torch_dtype") || r.Has("dtype")) {
    KVTOPO_ASSIGN_OR_RETURN(m.dtype, r.Dtype());
  } else {
    m.dtype = ElementType::kFloat32;
    m.dtype_stated = false;
  }
  return Status::Ok();
}

Status ReadCommon(const ConfigReader& r, ModelDescription& m, int64_t default_positions = 0) {
  KVTOPO_RETURN_IF_ERROR(ReadDtype(r, m));
  KVTOPO_RETURN_IF_ERROR(ReadMaxLength(r, m, default_positions));
  KVTOPO_ASSIGN_OR_RETURN(m.num_attention_heads, Positive(r, "num_attention_heads"));
  return Status::Ok();
}

// DeepSeek-V3 / Kimi-K2 family, optionally with the DSA indexer (V3.2, GLM-5.x) and MTP.
Status ReadDeepseekMla(const ConfigReader& r, bool with_indexer, bool with_mtp,
                       ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m));
  KVTOPO_ASSIGN_OR_RETURN(int64_t n, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(MlaRow head, ReadMlaRow(r, m));
  int64_t indexer = 0;
  if (with_indexer) {
    KVTOPO_ASSIGN_OR_RETURN(indexer, IndexerHeadSize(r));
  }
  int64_t mtp = 0;
  if (with_mtp) {
    KVTOPO_ASSIGN_OR_RETURN(mtp, NumMtpLayers(r, n, m));
  }
  for (int64_t i = 0; i < n + mtp; ++i) AddMla(m, i, head, indexer, i >= n);
  return Status::Ok();
}

// Kimi-Linear / Kimi-K3 (and GLM-5.3-Flash, whose pooled indexer key rides in the MLA page): MLA
// at linear_attn_config.full_attn_layers (1-based), KDA everywhere else.
Status ReadKimiLinear(const ConfigReader& r, bool with_indexer, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m));
  KVTOPO_ASSIGN_OR_RETURN(int64_t n, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(MlaRow head, ReadMlaRow(r, m));
  int64_t indexer = 0, tail = 0;
  if (with_indexer) {
    KVTOPO_ASSIGN_OR_RETURN(indexer, IndexerHeadSize(r));
    KVTOPO_ASSIGN_OR_RETURN(tail, PooledIndexerTail(r, indexer));
  }
  KVTOPO_ASSIGN_OR_RETURN(int64_t mtp, NumMtpLayers(r, n, m));
  KVTOPO_ASSIGN_OR_RETURN(ConfigReader lin, r.Object("linear_attn_config"));
  KVTOPO_ASSIGN_OR_RETURN(std::vector<int64_t> full, lin.IntList("full_attn_layers"));
  std::set<int64_t> full_set;
  for (int64_t one_based : full) {
    if (one_based < 1 || one_based > n) {
      return lin.Invalid(
          "full_attn_layers",
          fmt::format("holds {}, outside the 1-based layer range [1, {}]", one_based, n));
    }
    full_set.insert(one_based - 1);
  }
  KdaDims kda;
  KVTOPO_ASSIGN_OR_RETURN(kda.num_heads, Positive(lin, "num_heads"));
  KVTOPO_ASSIGN_OR_RETURN(kda.head_dim, Positive(lin, "head_dim"));
  KVTOPO_ASSIGN_OR_RETURN(kda.conv_kernel, Positive(lin, "short_conv_kernel_size"));
  for (int64_t i = 0; i < n; ++i) {
    if (full_set.count(i)) {
      AddMla(m, i, head, indexer, false, tail);
    } else {
      m.layers.push_back(
          RawLayer{.name = LayerName(i, "self_attn"), .type = LayerType::kKda, .kda = kda});
    }
  }
  for (int64_t i = n; i < n + mtp; ++i) AddMla(m, i, head, indexer, true, tail);
  return Status::Ok();
}

// The fields every K/V-attention reader needs: the common ones, the layer count, the total KV
// heads (into `m`) and the head size.
struct KvAttentionHeader {
  int64_t num_layers = 0;
  int64_t head_size = 0;
};
Result<KvAttentionHeader> ReadKvAttentionHeader(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m));
  KvAttentionHeader h;
  KVTOPO_ASSIGN_OR_RETURN(h.num_layers, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(m.num_kv_heads_total, Positive(r, "num_key_value_heads"));
  KVTOPO_ASSIGN_OR_RETURN(h.head_size, Positive(r, "head_dim"));
  return h;
}

// A K/V attention layer (full, or sliding when `window` > 0) with equal K and V heads.
RawLayer KvAttentionLayer(int64_t i, const ModelDescription& m, int64_t head, int64_t window) {
  return RawLayer{.name = LayerName(i, "self_attn"),
                  .type = window > 0 ? LayerType::kSlidingWindow : LayerType::kAttention,
                  .num_kv_heads_total = m.num_kv_heads_total,
                  .head_size = head,
                  .head_size_v = head,
                  .sliding_window = window};
}

// `mtp` in-model MTP modules with K/V attention like the trunk's: layer indices from the trunk's
// `n`, cached only when the launch speculates with MTP.
void AddKvMtpLayers(int64_t n, int64_t mtp, int64_t head, ModelDescription& m) {
  for (int64_t i = n; i < n + mtp; ++i) {
    RawLayer layer = KvAttentionLayer(i, m, head, 0);
    layer.mtp = true;
    m.layers.push_back(std::move(layer));
  }
}

// `key`: a list of names, one per layer.
Result<std::vector<std::string>> PerLayerNames(const ConfigReader& r, std::string_view key,
                                               int64_t n) {
  KVTOPO_ASSIGN_OR_RETURN(std::vector<std::string> names, r.StringList(key));
  if (static_cast<int64_t>(names.size()) != n) {
    return r.Invalid(key,
                     fmt::format("has {} entries but num_hidden_layers is {}", names.size(), n));
  }
  return names;
}

// `layer_types`: one of two names per layer; true where it is `first` (e.g. sliding_attention),
// false where it is `second` (full_attention).
Result<std::vector<bool>> TwoKindLayers(const ConfigReader& r, int64_t n, std::string_view first,
                                        std::string_view second) {
  KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> types, PerLayerNames(r, "layer_types", n));
  std::vector<bool> is_first;
  for (int64_t i = 0; i < n; ++i) {
    is_first.push_back(types[i] == first);
    if (!is_first.back() && types[i] != second) {
      return r.Invalid("layer_types", fmt::format("entry {} is '{}'; accepted: {}, {}", i, types[i],
                                                  first, second));
    }
  }
  return is_first;
}

// `layer_types`: one "sliding_attention" or "full_attention" per layer; true where it slides.
Result<std::vector<bool>> SlidingLayers(const ConfigReader& r, int64_t n) {
  return TwoKindLayers(r, n, "sliding_attention", "full_attention");
}

// A recurrent state dtype field: float32, bfloat16 or float16.
Result<KvCacheDtype> StateDtype(const ConfigReader& r, std::string_view key) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string text, r.String(key));
  Result<KvCacheDtype> dtype = ParseKvCacheDtype(text);
  if (!dtype.ok() || (*dtype != KvCacheDtype::kBfloat16 && *dtype != KvCacheDtype::kFloat16 &&
                      *dtype != KvCacheDtype::kFloat32)) {
    return r.Invalid(key, fmt::format("is '{}'; accepted: float32, bfloat16, float16", text));
  }
  return *dtype;
}

// Gated DeltaNet hybrids: Qwen3-Next (Qwen3NextForCausalLM) and Qwen3.5 (the text_config of
// Qwen3_5ForConditionalGeneration and Qwen3_5MoeForConditionalGeneration). How the engine reads
// them (the fork's qwen3_next.py, qwen3_5.py, their MTP modules and config classes;
// docs/profiles.md):
// - A layer is full attention or GDN per `layer_types` ("full_attention", "linear_attention").
//   Without it, every 4th layer is full attention: for Qwen3.5 every `full_attention_interval`-th
//   (default 4); the engine's Qwen3-Next config class ignores that field and uses 4.
// - Fields a config may omit default as the config class's do: max_position_embeddings 32768,
//   head_dim 256, num_key_value_heads (Qwen3-Next and Qwen3.5-MoE 2, Qwen3.5 4), GDN heads 16 K
//   and 32 V of 128 each, conv kernel 4.
// - MTP modules (full attention, after the trunk): `num_nextn_predict_layers` (Qwen3-Next) or
//   `mtp_num_hidden_layers` (Qwen3.5), 1 when absent, as the engine's MTP modules count them.
// - Qwen3.5: `mamba_ssm_dtype` is the GDN temporal state's dtype unless
//   --mamba-ssm-cache-dtype names one.
struct GdnHybridFamily {
  int64_t default_kv_heads;
  bool reads_interval;  // layer_types absent: full_attention_interval sets the period
  const char* mtp_key;
  bool reads_ssm_dtype;
};
constexpr GdnHybridFamily kQwen3Next{2, false, "num_nextn_predict_layers", false};
constexpr GdnHybridFamily kQwen35{4, true, "mtp_num_hidden_layers", true};
constexpr GdnHybridFamily kQwen35Moe{2, true, "mtp_num_hidden_layers", true};

Status ReadGdnHybrid(const ConfigReader& r, const GdnHybridFamily& f, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, /*default_positions=*/32768));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(m.num_kv_heads_total,
                          r.IntInOr("num_key_value_heads", f.default_kv_heads, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, r.IntInOr("head_dim", 256, 1, kMaxModelDim));
  GdnDims gdn;
  KVTOPO_ASSIGN_OR_RETURN(gdn.num_k_heads, r.IntInOr("linear_num_key_heads", 16, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(gdn.num_v_heads,
                          r.IntInOr("linear_num_value_heads", 32, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(gdn.head_k_dim, r.IntInOr("linear_key_head_dim", 128, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(gdn.head_v_dim, r.IntInOr("linear_value_head_dim", 128, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(gdn.conv_kernel, r.IntInOr("linear_conv_kernel_dim", 4, 1, kMaxModelDim));
  std::vector<bool> full;
  if (r.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(full, TwoKindLayers(r, n, "full_attention", "linear_attention"));
  } else {
    int64_t interval = 4;
    if (f.reads_interval) {
      KVTOPO_ASSIGN_OR_RETURN(interval, r.IntInOr("full_attention_interval", 4, 1, kMaxLayers));
    }
    for (int64_t i = 0; i < n; ++i) full.push_back((i + 1) % interval == 0);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (full[i]) {
      m.layers.push_back(KvAttentionLayer(i, m, head, 0));
    } else {
      m.layers.push_back(
          RawLayer{.name = LayerName(i, "linear_attn"), .type = LayerType::kGdn, .gdn = gdn});
    }
  }
  if (f.reads_ssm_dtype && r.Has("mamba_ssm_dtype")) {
    KVTOPO_ASSIGN_OR_RETURN(m.mamba_ssm_dtype, StateDtype(r, "mamba_ssm_dtype"));
    m.mamba_ssm_dtype_warns = true;
  }
  m.mtp_key = f.mtp_key;
  KVTOPO_ASSIGN_OR_RETURN(
      const int64_t mtp,
      r.IntInOr(f.mtp_key, std::min<int64_t>(1, kMaxLayers - n), 0, kMaxLayers - n));
  // Qwen3-Next's key sits at the config's top, where the engine reads n_predict; Qwen3.5's
  // mtp_num_hidden_layers sits in text_config, where the engine's top-level read may not reach
  // (not modelled: no default count for it).
  if (r.Has(f.mtp_key) && std::string_view(f.mtp_key) == "num_nextn_predict_layers") {
    m.mtp_n_predict = mtp;
  }
  AddKvMtpLayers(n, mtp, head, m);
  return Status::Ok();
}
// The reader-table entry of one GDN hybrid family.
template <const GdnHybridFamily& kFamily>
Status ReadGdnHybridAs(const ConfigReader& r, ModelDescription& m) {
  return ReadGdnHybrid(r, kFamily, m);
}

// gpt-oss: layer_types alternates sliding_attention / full_attention.
Status ReadGptOss(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(KvAttentionHeader h, ReadKvAttentionHeader(r, m));
  KVTOPO_ASSIGN_OR_RETURN(int64_t window, Positive(r, "sliding_window", kMaxModelLen));
  m.text_sliding_window = window;
  KVTOPO_ASSIGN_OR_RETURN(std::vector<bool> sliding, SlidingLayers(r, h.num_layers));
  for (int64_t i = 0; i < h.num_layers; ++i) {
    m.layers.push_back(KvAttentionLayer(i, m, h.head_size, sliding[i] ? window : 0));
    m.layers.back().has_sinks = true;  // every layer's attention has learned sinks
  }
  return Status::Ok();
}

// The KV heads must divide the query heads (grouped-query attention).
Status CheckKvHeadsDivide(const ConfigReader& r, const ModelDescription& m) {
  if (m.num_attention_heads % m.num_kv_heads_total == 0) return Status::Ok();
  return r.Invalid("num_key_value_heads",
                   fmt::format("is {}, which does not divide num_attention_heads {}",
                               m.num_kv_heads_total, m.num_attention_heads));
}

// What num_key_value_heads is when a config omits it (or states null): kMultiHead (the config
// class's multi-head default), kRequired (an error), or a positive count (the class's default).
constexpr int64_t kMultiHead = 0;
constexpr int64_t kRequired = -1;

// num_key_value_heads into `m`, `absent` when the config omits it, which must divide
// num_attention_heads.
Status ReadKvHeads(const ConfigReader& r, int64_t absent, ModelDescription& m) {
  if (absent != kRequired && !r.Has("num_key_value_heads")) {
    m.num_kv_heads_total = absent == kMultiHead ? m.num_attention_heads : absent;
  } else {
    KVTOPO_ASSIGN_OR_RETURN(m.num_kv_heads_total, Positive(r, "num_key_value_heads"));
  }
  return CheckKvHeadsDivide(r, m);
}

// `head_dim` when given (and `use_head_dim`), else hidden_size / num_attention_heads.
Result<int64_t> ReadHeadSize(const ConfigReader& r, const ModelDescription& m, bool use_head_dim) {
  if (use_head_dim && r.Has("head_dim")) return Positive(r, "head_dim");
  KVTOPO_ASSIGN_OR_RETURN(const int64_t hidden, Positive(r, "hidden_size"));
  if (hidden % m.num_attention_heads != 0) {
    return r.Invalid("hidden_size", fmt::format("is {}, not a multiple of num_attention_heads {}, "
                                                "which the head size is taken from",
                                                hidden, m.num_attention_heads));
  }
  return hidden / m.num_attention_heads;
}

// A NemotronH layer pattern: `key` as a string of M (Mamba2), * (attention), - (MLP) and E (MoE),
// or `list_key` as a list of "mamba", "attention", "mlp" and "moe" (the newer spelling), mapped
// to those letters; `fallback` when neither is stated ("" requires `key`).
Result<std::string> NemotronPattern(const ConfigReader& r, std::string_view key,
                                    std::string_view list_key, std::string_view fallback) {
  if (!r.Has(list_key)) {
    if (r.Has(key) || fallback.empty()) return r.String(key);
    return std::string(fallback);
  }
  if (r.Has(key)) return r.String(key);
  KVTOPO_ASSIGN_OR_RETURN(std::vector<std::string> types, r.StringList(list_key));
  static constexpr std::array<std::pair<std::string_view, char>, 4> kLetters = {
      {{"mamba", 'M'}, {"attention", '*'}, {"mlp", '-'}, {"moe", 'E'}}};
  std::string pattern;
  for (size_t i = 0; i < types.size(); ++i) {
    auto it = std::find_if(kLetters.begin(), kLetters.end(),
                           [&](const auto& l) { return l.first == types[i]; });
    if (it == kLetters.end()) {
      return r.Invalid(
          list_key,
          fmt::format("entry {} is '{}'; accepted: mamba, attention, mlp, moe", i, types[i]));
    }
    pattern += it->second;
  }
  return pattern;
}

// The Mamba chunk size as ModelConfig.get_mamba_chunk_size reads a config: `mamba_chunk_size`,
// else `chunk_size`, else `fallback` (the config class's default, or the engine's 2048).
Result<int64_t> MambaChunkSize(const ConfigReader& r, int64_t fallback) {
  const bool first = r.Has("mamba_chunk_size") || !r.Has("chunk_size");
  return r.IntInOr(first ? "mamba_chunk_size" : "chunk_size", fallback, 1, kMaxModelDim);
}

// NemotronH (NemotronHForCausalLM: Nemotron-H, Nemotron Nano 2, Nemotron 3), as the engine reads
// it (the fork's nemotron_h.py and nemotron_h_mtp.py, NemotronHForCausalLMConfig in
// models/config.py, vllm/transformers_utils/configs/nemotron_h.py at 28be48fa9):
// - Layer `i` is `hybrid_override_pattern[i]`: M a Mamba2 mixer (recurrent state), * attention
//   (K/V cache), - and E an MLP or MoE block (no cache); the pattern has num_hidden_layers letters.
// - Mamba2: mamba_num_heads x mamba_head_dim inner channels, `n_groups` (or mamba_n_groups),
//   ssm_state_size, `conv_kernel` (or mamba_d_conv); the SSM state is float32 unless the config's
//   mamba_ssm_cache_dtype or --mamba-ssm-cache-dtype says otherwise. The chunk size (the hybrid
//   block's base in --mamba-cache-mode all) is `mamba_chunk_size`, else `chunk_size`, else 128.
// - Attention: num_key_value_heads (null: num_attention_heads), head_dim (null:
//   hidden_size / num_attention_heads).
// - Omitted fields take the config class's defaults (max_position_embeddings 4096, 128 Mamba
//   heads of 64, 8 groups, state 128, conv 4, 8 KV heads of 128).
// - MTP (only when num_nextn_predict_layers is 1; the engine's MTP model asserts one): one
//   attention layer per * of mtp_hybrid_override_pattern (default "*E"), after the trunk.
// - The model supports Mamba prefix caching: with caching on its recurrent layers default to
//   --mamba-cache-mode all.
// - Experts only in E layers (NemotronHModel.has_moe): a stated n_routed_experts (the config
//   class's default 8, which a saved dense config may state) builds none without one.
Status ReadNemotronH(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, /*default_positions=*/4096));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(const std::string pattern,
                          NemotronPattern(r, "hybrid_override_pattern", "layers_block_type", ""));
  const std::string_view pattern_key =
      r.Has("hybrid_override_pattern") ? "hybrid_override_pattern" : "layers_block_type";
  if (static_cast<int64_t>(pattern.size()) != n) {
    return r.Invalid(pattern_key,
                     fmt::format("has {} layers but num_hidden_layers is {}", pattern.size(), n));
  }
  if (const size_t bad = pattern.find_first_not_of("M*-E"); bad != std::string::npos) {
    return r.Invalid(pattern_key,
                     fmt::format("has '{}' at layer {}; accepted: M, *, -, E", pattern[bad], bad));
  }
  m.builds_no_experts = pattern.find('E') == std::string::npos;
  // The engine treats every NemotronH as a hybrid: without a Mamba layer it still sizes the
  // attention block by a Mamba state, without an attention layer it pads Mamba pages to an
  // attention page; kvtopo models neither.
  for (const auto& [letter, kind] : {std::pair{'M', "Mamba"}, std::pair{'*', "attention"}}) {
    if (pattern.find(letter) != std::string::npos) continue;
    return r.Invalid(pattern_key, fmt::format("has no {} layer ({}); kvtopo plans NemotronH models "
                                              "with both attention and Mamba layers",
                                              kind, letter));
  }
  if (r.IsNull("num_key_value_heads")) {
    m.num_kv_heads_total = m.num_attention_heads;
  } else {
    KVTOPO_ASSIGN_OR_RETURN(m.num_kv_heads_total,
                            r.IntInOr("num_key_value_heads", 8, 1, kMaxModelDim));
  }
  int64_t head = 128;
  if (r.IsNull("head_dim")) {
    KVTOPO_ASSIGN_OR_RETURN(head, ReadHeadSize(r, m, /*use_head_dim=*/false));
  } else {
    KVTOPO_ASSIGN_OR_RETURN(head, r.IntInOr("head_dim", 128, 1, kMaxModelDim));
  }
  // One of two spellings of a field (the stated one), else the config class's default.
  auto either = [&](std::string_view key, std::string_view alias,
                    int64_t fallback) -> Result<int64_t> {
    return r.IntInOr((r.Has(key) || !r.Has(alias)) ? key : alias, fallback, 1, kMaxModelDim);
  };
  Mamba2Dims mamba;
  KVTOPO_ASSIGN_OR_RETURN(mamba.num_heads, r.IntInOr("mamba_num_heads", 128, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(mamba.head_dim, r.IntInOr("mamba_head_dim", 64, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(mamba.n_groups, either("n_groups", "mamba_n_groups", 8));
  KVTOPO_ASSIGN_OR_RETURN(mamba.state_size, r.IntInOr("ssm_state_size", 128, 1, kMaxModelDim));
  // The conv state keeps kernel - 1 columns: a kernel of 1 would keep none.
  KVTOPO_ASSIGN_OR_RETURN(
      mamba.conv_kernel,
      r.IntInOr((r.Has("conv_kernel") || !r.Has("mamba_d_conv")) ? "conv_kernel" : "mamba_d_conv",
                4, 2, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(mamba.intermediate_size,
                          internal::CheckedMul(mamba.num_heads, mamba.head_dim, "Mamba2 channels"));
  for (int64_t i = 0; i < n; ++i) {
    if (pattern[i] == 'M') {
      m.layers.push_back(
          RawLayer{.name = LayerName(i, "mixer"), .type = LayerType::kMamba2, .mamba2 = mamba});
    } else if (pattern[i] == '*') {
      RawLayer layer = KvAttentionLayer(i, m, head, 0);
      layer.name = LayerName(i, "mixer");
      m.layers.push_back(std::move(layer));
    }
  }
  m.mamba_ssm_dtype = KvCacheDtype::kFloat32;
  if (r.Has("mamba_ssm_cache_dtype")) {
    KVTOPO_ASSIGN_OR_RETURN(m.mamba_ssm_dtype, StateDtype(r, "mamba_ssm_cache_dtype"));
  }
  m.supports_mamba_prefix_caching = true;
  KVTOPO_ASSIGN_OR_RETURN(m.mamba_chunk_size, MambaChunkSize(r, 128));
  m.mtp_key = "num_nextn_predict_layers 1 with an mtp_hybrid_override_pattern of * and E";
  KVTOPO_ASSIGN_OR_RETURN(const int64_t predict,
                          r.IntInOr("num_nextn_predict_layers", 0, 0, kMaxLayers));
  if (predict != 1) return Status::Ok();
  m.mtp_n_predict = predict;
  KVTOPO_ASSIGN_OR_RETURN(
      const std::string mtp_pattern,
      NemotronPattern(r, "mtp_hybrid_override_pattern", "mtp_layers_block_type", "*E"));
  if (mtp_pattern.empty() || mtp_pattern.find_first_not_of("*E") != std::string::npos ||
      static_cast<int64_t>(mtp_pattern.size()) > kMaxLayers - n) {
    return Status::Ok();
  }
  for (size_t i = 0; i < mtp_pattern.size(); ++i) {
    if (mtp_pattern[i] != '*') continue;
    RawLayer layer = KvAttentionLayer(n + static_cast<int64_t>(i), m, head, 0);
    layer.name = LayerName(n + static_cast<int64_t>(i), "mixer");
    layer.mtp = true;
    m.layers.push_back(std::move(layer));
  }
  return Status::Ok();
}

// Mamba2 mixers described by the mamba_* fields that Bamba, GraniteMoeHybrid and Falcon-H1
// share, with their config classes' defaults (Transformers' BambaConfig,
// GraniteMoeHybridConfig, FalconH1Config; the engine's get_mamba_state_shape_from_config of
// bamba.py, granitemoehybrid.py and falcon_h1.py at 28be48fa9): the inner channels are
// mamba_expand (2) x hidden_size, or for Falcon-H1 `mamba_d_ssm` (1024 when absent; null: the
// product, whose factor may be fractional where the product is whole); mamba_n_heads (128) heads of
// mamba_d_head ("auto": channels / heads), which the config classes require to multiply to the
// channels; mamba_n_groups (1), mamba_d_state (256), mamba_d_conv (4). The chunk size is
// mamba_chunk_size (256). The SSM state follows the conv state's dtype unless
// --mamba-ssm-cache-dtype names one (the engine's "auto"). Each family supports Mamba prefix
// caching.
Result<Mamba2Dims> ReadMambaFields(const ConfigReader& r, bool reads_d_ssm, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const int64_t hidden, Positive(r, "hidden_size"));
  Mamba2Dims d;
  std::string channels_from;
  if (reads_d_ssm && !r.IsNull("mamba_d_ssm")) {
    KVTOPO_ASSIGN_OR_RETURN(d.intermediate_size, r.IntInOr("mamba_d_ssm", 1024, 1, kMaxModelDim));
    channels_from = fmt::format("mamba_d_ssm {}", d.intermediate_size);
  } else if (reads_d_ssm && r.Has("mamba_expand") &&
             r.json().at("mamba_expand").is_number_float()) {
    // Falcon-H1 takes int(mamba_expand * hidden_size), so a fractional factor works where the
    // product is whole; FalconH1Config refuses another (mamba_n_heads divides no fraction).
    const double expand = r.json().at("mamba_expand").get<double>();
    const double product = expand * static_cast<double>(hidden);
    if (!(expand > 0) || !(product <= static_cast<double>(kMaxModelDim)) ||
        product != std::floor(product)) {
      return r.Invalid(
          "mamba_expand",
          fmt::format("is {}, and mamba_expand x hidden_size {} is not a whole number of channels "
                      "in [1, {}] (FalconH1Config refuses it: mamba_n_heads must divide it)",
                      r.json().at("mamba_expand").dump(), hidden, kMaxModelDim));
    }
    d.intermediate_size = static_cast<int64_t>(product);
    channels_from = fmt::format("mamba_expand x hidden_size {}", d.intermediate_size);
  } else {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t expand, r.IntInOr("mamba_expand", 2, 1, kMaxModelDim));
    KVTOPO_ASSIGN_OR_RETURN(d.intermediate_size,
                            internal::CheckedMul(expand, hidden, "mamba_expand x hidden_size"));
    channels_from = fmt::format("mamba_expand x hidden_size {}", d.intermediate_size);
  }
  KVTOPO_ASSIGN_OR_RETURN(d.num_heads, r.IntInOr("mamba_n_heads", 128, 1, kMaxModelDim));
  if (d.intermediate_size % d.num_heads != 0) {
    return r.Invalid("mamba_n_heads",
                     fmt::format("is {}, which does not divide {}", d.num_heads, channels_from));
  }
  d.head_dim = d.intermediate_size / d.num_heads;
  if (r.Has("mamba_d_head") && !(r.json()["mamba_d_head"].is_string() &&
                                 r.json()["mamba_d_head"].get<std::string>() == "auto")) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t head, Positive(r, "mamba_d_head"));
    if (head != d.head_dim) {
      return r.Invalid("mamba_d_head",
                       fmt::format("is {}, but mamba_n_heads {} heads of it are not {}", head,
                                   d.num_heads, channels_from));
    }
  }
  KVTOPO_ASSIGN_OR_RETURN(d.n_groups, r.IntInOr("mamba_n_groups", 1, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(d.state_size, r.IntInOr("mamba_d_state", 256, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(d.conv_kernel, r.IntInOr("mamba_d_conv", 4, 2, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(m.mamba_chunk_size, r.IntInOr("mamba_chunk_size", 256, 1, kMaxModelDim));
  m.supports_mamba_prefix_caching = true;
  return d;
}

// num_key_value_heads of a Mamba hybrid's attention layers: `absent` when the config omits it
// (ReadKvHeads), num_attention_heads when null (the config classes' backward compatibility rule).
Status ReadHybridKvHeads(const ConfigReader& r, int64_t absent, ModelDescription& m) {
  return ReadKvHeads(r, r.IsNull("num_key_value_heads") ? kMultiHead : absent, m);
}

// The model-level window the engine's attention layers take when the model passes none per
// layer (Attention reads cache_config.sliding_window, the config's sliding_window): 0 or null
// for none.
Result<int64_t> ModelLevelWindow(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(m.text_sliding_window, r.IntInOr("sliding_window", 0, 0, kMaxModelLen));
  return m.text_sliding_window;
}

RawLayer Mamba2Mixer(std::string name, const Mamba2Dims& dims) {
  return RawLayer{.name = std::move(name), .type = LayerType::kMamba2, .mamba2 = dims};
}

RawLayer NamedAttention(std::string name, int64_t i, const ModelDescription& m, int64_t head,
                        int64_t window) {
  RawLayer layer = KvAttentionLayer(i, m, head, window);
  layer.name = std::move(name);
  return layer;
}

// A hybrid the engine treats as one (its ModelConfig.is_hybrid) sizes the attention block by the
// Mamba state and pads Mamba pages to the attention page even when its config gives it no layer of
// one kind; kvtopo plans hybrids with both kinds and refuses the others, naming `key`.
Status BothLayerKinds(const ConfigReader& r, std::string_view key, int64_t attention, int64_t n,
                      std::string_view family, std::string_view recurrent = "Mamba") {
  if (attention > 0 && attention < n) return Status::Ok();
  return r.Invalid(key, fmt::format("makes {} of the {} layers attention layers; kvtopo plans "
                                    "{} models with both attention and {} layers",
                                    attention, n, family, recurrent));
}

// PLaMo 2 (Plamo2ForCausalLM; the fork's plamo2.py at 28be48fa9, whose config class is the
// model's remote code, so every field is required): layer i is attention when
// i % mamba_step == mamba_step / 2 (with num_hidden_layers <= mamba_step / 2, only the last layer),
// else a Mamba2 mixer of mamba_num_heads heads of hidden_size_per_head, no B/C groups
// (mamba2_state_shape with n_groups 0), mamba_d_state and mamba_d_conv. Attention:
// num_key_value_heads heads of hidden_size_per_head, with the config's sliding_window as the
// model-level window. The chunk size is mamba_chunk_size; the model has no Mamba prefix caching.
Status ReadPlamo2(const ConfigReader& r, ModelDescription& m) {
  m.mamba2_widens = false;  // its mixer's get_state_shape passes no num_spec
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadKvHeads(r, kRequired, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, r.IntIn("hidden_size_per_head", 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t step, r.IntIn("mamba_step", 2, kMaxLayers));
  Mamba2Dims mamba;
  KVTOPO_ASSIGN_OR_RETURN(mamba.num_heads, r.IntIn("mamba_num_heads", 1, kMaxModelDim));
  mamba.head_dim = head;
  KVTOPO_ASSIGN_OR_RETURN(
      mamba.intermediate_size,
      internal::CheckedMul(mamba.num_heads, head, "mamba_num_heads x hidden_size_per_head"));
  KVTOPO_ASSIGN_OR_RETURN(mamba.state_size, r.IntIn("mamba_d_state", 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(mamba.conv_kernel, r.IntIn("mamba_d_conv", 2, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, ModelLevelWindow(r, m));
  KVTOPO_ASSIGN_OR_RETURN(m.mamba_chunk_size, MambaChunkSize(r, 2048));
  int64_t attention = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool is_attention = n <= step / 2 ? i == n - 1 : i % step == step / 2;
    if (is_attention) {
      m.layers.push_back(NamedAttention(LayerName(i, "mixer.attn"), i, m, head, window));
      ++attention;
    } else {
      m.layers.push_back(Mamba2Mixer(LayerName(i, "mixer"), mamba));
    }
  }
  return BothLayerKinds(r, "num_hidden_layers", attention, n, "PLaMo 2");
}

// Bamba (BambaForCausalLM; the fork's bamba.py, Transformers' BambaConfig): layer i is an
// attention layer ("model.layers.i.attn") when `attn_layer_indices` lists it, else a Mamba2
// mixer ("model.layers.i.mixer") of ReadMambaFields. Attention: num_key_value_heads (8) heads of
// hidden_size / num_attention_heads. max_position_embeddings defaults to 262144. A model with
// no attention layer, or no Mamba layer, is refused (BothLayerKinds).
Status ReadBamba(const ConfigReader& r, ModelDescription& m) {
  m.mamba_estimate_widened = false;  // get_mamba_state_shape_from_config: no num_spec
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, /*default_positions=*/262144));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadHybridKvHeads(r, 8, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, ReadHeadSize(r, m, /*use_head_dim=*/false));
  KVTOPO_ASSIGN_OR_RETURN(const Mamba2Dims mamba, ReadMambaFields(r, false, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, ModelLevelWindow(r, m));
  std::vector<int64_t> listed;
  if (r.Has("attn_layer_indices")) {
    KVTOPO_ASSIGN_OR_RETURN(listed, r.IntList("attn_layer_indices"));
  }
  int64_t attention = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::find(listed.begin(), listed.end(), i) != listed.end()) {
      m.layers.push_back(NamedAttention(LayerName(i, "attn"), i, m, head, window));
      ++attention;
    } else {
      m.layers.push_back(Mamba2Mixer(LayerName(i, "mixer"), mamba));
    }
  }
  return BothLayerKinds(r, "attn_layer_indices", attention, n, "Bamba");
}

// GraniteMoeHybrid (Granite 4.0; the fork's granitemoehybrid.py, Transformers'
// GraniteMoeHybridConfig): layer i is `layer_types[i]`, "mamba" (a Mamba2 mixer of
// ReadMambaFields, "model.layers.i.mixer") or "attention" ("model.layers.i.self_attn.attn");
// the engine indexes the list, so a config must state it. Attention: num_key_value_heads
// (absent or null: num_attention_heads) heads of hidden_size / num_attention_heads.
// max_position_embeddings defaults to 2048. With only attention layers the engine does not treat
// the model as hybrid (ModelConfig.is_hybrid), and neither does the plan.
Status ReadGraniteMoeHybrid(const ConfigReader& r, ModelDescription& m) {
  m.mamba_estimate_widened = false;  // get_mamba_state_shape_from_config: no num_spec
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, /*default_positions=*/2048));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadHybridKvHeads(r, kMultiHead, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, ReadHeadSize(r, m, /*use_head_dim=*/false));
  KVTOPO_ASSIGN_OR_RETURN(const Mamba2Dims mamba, ReadMambaFields(r, false, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, ModelLevelWindow(r, m));
  KVTOPO_ASSIGN_OR_RETURN(const std::vector<bool> is_mamba,
                          TwoKindLayers(r, n, "mamba", "attention"));
  int64_t attention = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (is_mamba[i]) {
      m.layers.push_back(Mamba2Mixer(LayerName(i, "mixer"), mamba));
    } else {
      m.layers.push_back(NamedAttention(LayerName(i, "self_attn.attn"), i, m, head, window));
      ++attention;
    }
  }
  if (attention == n) return Status::Ok();  // no hybrid
  return BothLayerKinds(r, "layer_types", attention, n, "GraniteMoeHybrid");
}

// Falcon-H1 (FalconH1ForCausalLM; the fork's falcon_h1.py, Transformers' FalconH1Config): every
// decoder layer runs attention and a Mamba2 mixer side by side. The engine names layer i's
// attention "model.layers.i.attn" and its mixer "model.{num_hidden_layers + i}.mixer", in that
// order. Attention: num_key_value_heads (8) heads of `head_dim` (absent or null:
// hidden_size / num_attention_heads). Mamba2 of ReadMambaFields with mamba_d_ssm.
// max_position_embeddings defaults to 8192.
Status ReadFalconH1(const ConfigReader& r, ModelDescription& m) {
  m.mamba_estimate_widened = false;  // get_mamba_state_shape_from_config: no num_spec
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, /*default_positions=*/8192));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadHybridKvHeads(r, 8, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, ReadHeadSize(r, m, /*use_head_dim=*/true));
  KVTOPO_ASSIGN_OR_RETURN(const Mamba2Dims mamba, ReadMambaFields(r, true, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, ModelLevelWindow(r, m));
  for (int64_t i = 0; i < n; ++i) {
    m.layers.push_back(NamedAttention(LayerName(i, "attn"), i, m, head, window));
    m.layers.push_back(Mamba2Mixer(fmt::format("model.{}.mixer", n + i), mamba));
  }
  return Status::Ok();
}

// Jamba (JambaForCausalLM; the fork's jamba.py, Transformers' JambaConfig): layer i is an
// attention layer ("model.layers.i.attn") when i % attn_layer_period (8) is attn_layer_offset
// (4), which must be smaller (as expert_layer_offset (1) than expert_layer_period (2)), else a
// Mamba1 mixer ("model.layers.i.mixer") of mamba_expand (2) x hidden_size channels,
// mamba_d_state (16) and mamba_d_conv (4). Attention: num_key_value_heads (8; null:
// num_attention_heads) heads of hidden_size / num_attention_heads.
// max_position_embeddings defaults to 262144. Mamba1 has no chunk size: the engine aligns blocks
// in --mamba-cache-mode all to 2048 tokens (unless the config states mamba_chunk_size or
// chunk_size). The model supports Mamba prefix caching.
Status ReadJamba(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, /*default_positions=*/262144));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadHybridKvHeads(r, 8, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, ReadHeadSize(r, m, /*use_head_dim=*/false));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, ModelLevelWindow(r, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t period, r.IntInOr("attn_layer_period", 8, 1, kMaxLayers));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t offset, r.IntInOr("attn_layer_offset", 4, 0, kMaxLayers));
  if (offset >= period) {
    return r.Invalid("attn_layer_offset",
                     fmt::format("is {}, not smaller than attn_layer_period {}", offset, period));
  }
  // The config class checks the expert layers' offset and period the same way as it loads (the
  // layers with experts: ExpertLayerRule).
  KVTOPO_ASSIGN_OR_RETURN(const int64_t expert_period,
                          r.IntInOr("expert_layer_period", 2, 1, kMaxLayers));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t expert_offset,
                          r.IntInOr("expert_layer_offset", 1, 0, kMaxLayers));
  if (expert_offset >= expert_period) {
    return r.Invalid("expert_layer_offset",
                     fmt::format("is {}, not smaller than expert_layer_period {}: the engine's "
                                 "config class raises as it loads the config",
                                 expert_offset, expert_period));
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t hidden, Positive(r, "hidden_size"));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t expand, r.IntInOr("mamba_expand", 2, 1, kMaxModelDim));
  Mamba1Dims mamba;
  KVTOPO_ASSIGN_OR_RETURN(mamba.intermediate_size,
                          internal::CheckedMul(expand, hidden, "mamba_expand x hidden_size"));
  KVTOPO_ASSIGN_OR_RETURN(mamba.state_size, r.IntInOr("mamba_d_state", 16, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(mamba.conv_kernel, r.IntInOr("mamba_d_conv", 4, 2, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(m.mamba_chunk_size, MambaChunkSize(r, 2048));
  m.supports_mamba_prefix_caching = true;
  int64_t attention = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (i % period == offset) {
      m.layers.push_back(NamedAttention(LayerName(i, "attn"), i, m, head, window));
      ++attention;
    } else {
      m.layers.push_back(
          RawLayer{.name = LayerName(i, "mixer"), .type = LayerType::kMamba1, .mamba1 = mamba});
    }
  }
  return BothLayerKinds(r, "attn_layer_offset", attention, n, "Jamba");
}

// Mamba, Falcon Mamba and Mamba2 (MambaForCausalLM, FalconMambaForCausalLM, Mamba2ForCausalLM;
// the fork's mamba.py and mamba2.py at 28be48fa9 over Transformers' MambaConfig,
// FalconMambaConfig and Mamba2Config): attention-free models whose num_hidden_layers layers each
// keep one recurrent state, "backbone.layers.i.mixer". Their config classes have no length
// field, so the engine plans 2048 tokens unless --max-model-len says otherwise, and accepts any.
// The channels are intermediate_size: the classes derive it as expand x hidden_size (Mamba2's
// model does the same when the config has none), but a stated value wins, as falcon-mamba-7b's
// 8192 beside its expand 16. Both models support Mamba prefix caching.
struct PureMambaFamily {
  int64_t hidden_size;
  int64_t num_hidden_layers;
  int64_t state_size;
};
Status ReadPureMamba(const ConfigReader& r, bool mamba2, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadDtype(r, m));
  KVTOPO_RETURN_IF_ERROR(ReadMaxLength(r, m, kAnyLengthField));
  // MambaConfig, FalconMambaConfig: 768 hidden, 32 layers, state 16; Mamba2Config: 4096, 64, 128.
  const PureMambaFamily f = mamba2 ? PureMambaFamily{4096, 64, 128} : PureMambaFamily{768, 32, 16};
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n,
                          r.IntInOr("num_hidden_layers", f.num_hidden_layers, 1, kMaxLayers));
  int64_t channels = 0;
  if (r.Has("intermediate_size")) {
    KVTOPO_ASSIGN_OR_RETURN(channels, Positive(r, "intermediate_size"));
  } else {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t hidden,
                            r.IntInOr("hidden_size", f.hidden_size, 1, kMaxModelDim));
    KVTOPO_ASSIGN_OR_RETURN(const int64_t expand, r.IntInOr("expand", 2, 1, kMaxModelDim));
    KVTOPO_ASSIGN_OR_RETURN(channels, internal::CheckedMul(expand, hidden, "expand x hidden_size"));
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t state,
                          r.IntInOr("state_size", f.state_size, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t kernel, r.IntInOr("conv_kernel", 4, 2, kMaxModelDim));
  m.supports_mamba_prefix_caching = true;
  RawLayer layer{.type = mamba2 ? LayerType::kMamba2 : LayerType::kMamba1};
  if (mamba2) {
    // Mamba2Config: 128 heads of 64, 8 groups, chunks of 256.
    layer.mamba2 =
        Mamba2Dims{.intermediate_size = channels, .state_size = state, .conv_kernel = kernel};
    KVTOPO_ASSIGN_OR_RETURN(layer.mamba2.num_heads, r.IntInOr("num_heads", 128, 1, kMaxModelDim));
    KVTOPO_ASSIGN_OR_RETURN(layer.mamba2.head_dim, r.IntInOr("head_dim", 64, 1, kMaxModelDim));
    KVTOPO_ASSIGN_OR_RETURN(layer.mamba2.n_groups, r.IntInOr("n_groups", 8, 1, kMaxModelDim));
    KVTOPO_ASSIGN_OR_RETURN(m.mamba_chunk_size, r.IntInOr("chunk_size", 256, 1, kMaxModelDim));
  } else {
    layer.mamba1 =
        Mamba1Dims{.intermediate_size = channels, .state_size = state, .conv_kernel = kernel};
  }
  for (int64_t i = 0; i < n; ++i) {
    layer.name = fmt::format("backbone.layers.{}.mixer", i);
    m.layers.push_back(layer);
  }
  return Status::Ok();
}
template <bool kMamba2>
Status ReadPureMambaAs(const ConfigReader& r, ModelDescription& m) {
  return ReadPureMamba(r, kMamba2, m);
}

// LFM2 (Lfm2ForCausalLM, and Lfm2MoeForCausalLM with MoE blocks; the fork's lfm2.py,
// lfm2_moe.py and short_conv.py at 28be48fa9, Transformers' Lfm2Config and the fork's
// Lfm2MoeConfig): layer i is attention ("model.layers.i.self_attn.attn") when `layer_types[i]` is
// "full_attention", else a short convolution ("model.layers.i.conv") whose state is one conv
// state (channels / TP, conv_L_cache (3) - 1) in the conv dtype. LFM2's layer_types, when absent,
// come from `full_attn_idxs` (absent: every layer attention), as Lfm2Config derives them; the
// MoE model's config class keeps none, so its config must state them. Channels: `conv_dim`
// (LFM2; the engine reads it, so it is required), hidden_size (the MoE model). Attention:
// num_key_value_heads (8) heads of hidden_size / num_attention_heads. max_position_embeddings
// defaults to 128000. Neither model supports Mamba prefix caching (mode align with caching). A
// config of one layer kind is refused (BothLayerKinds: the engine still treats it as hybrid).
Status ReadLfm2(const ConfigReader& r, bool moe, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, /*default_positions=*/128000));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadHybridKvHeads(r, 8, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, ReadHeadSize(r, m, /*use_head_dim=*/false));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, ModelLevelWindow(r, m));
  ShortConvDims conv;
  KVTOPO_ASSIGN_OR_RETURN(conv.channels, Positive(r, moe ? "hidden_size" : "conv_dim"));
  KVTOPO_ASSIGN_OR_RETURN(conv.conv_kernel, r.IntInOr("conv_L_cache", 3, 2, kMaxModelDim));
  std::vector<bool> attention(static_cast<size_t>(n), true);
  std::string_view key = "layer_types";
  if (moe || r.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> types,
                            PerLayerNames(r, "layer_types", n));
    for (int64_t i = 0; i < n; ++i) attention[i] = types[i] == "full_attention";
  } else if (r.Has("full_attn_idxs")) {
    key = "full_attn_idxs";
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<int64_t> listed, r.IntList("full_attn_idxs"));
    for (int64_t i = 0; i < n; ++i) {
      attention[i] = std::find(listed.begin(), listed.end(), i) != listed.end();
    }
  }
  int64_t attention_layers = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (attention[i]) {
      m.layers.push_back(NamedAttention(LayerName(i, "self_attn.attn"), i, m, head, window));
      ++attention_layers;
    } else {
      m.layers.push_back(RawLayer{
          .name = LayerName(i, "conv"), .type = LayerType::kShortConv, .short_conv = conv});
    }
  }
  return BothLayerKinds(r, key, attention_layers, n, moe ? "LFM2-MoE" : "LFM2",
                        "short-convolution");
}
template <bool kMoe>
Status ReadLfm2As(const ConfigReader& r, ModelDescription& m) {
  return ReadLfm2(r, kMoe, m);
}

// MiniMax-Text-01 and MiniMax-M1 (MiniMaxText01ForCausalLM, MiniMaxForCausalLM,
// MiniMaxM1ForCausalLM; the fork's minimax_text_01.py and layers/mamba/linear_attn.py at
// 28be48fa9): layer i is lightning (linear) attention when its attention type is 0 and softmax
// attention when 1, from the first non-empty of `attn_type_list`, `decoder_attention_types`, or
// `layer_types` ("linear_attention" 0, "full_attention" 1); without any, every layer is softmax
// attention, but for model_type `minimax`, whose Transformers class (MiniMaxConfig) derives
// `layer_types` then: softmax at the even layers, linear at the odd ones; that class also gives
// 131,072 positions when the config omits them. A linear-attention layer (named "model.layers.i")
// keeps one state (heads / TP, head_dim, head_dim) in the conv dtype (linear_attention_state_shape
// reads the config's `head_dim`, so it is required); a softmax layer ("model.layers.i.attn") is K/V
// attention with num_key_value_heads (8) heads of head_dim (absent: hidden_size /
// num_attention_heads) over the model-level window. The model has no Mamba prefix caching (mode
// align with caching); a config of one layer kind is refused (BothLayerKinds).
Status ReadMiniMaxText01(const ConfigReader& r, ModelDescription& m) {
  const bool transformers_class = m.model_type == "minimax";
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, transformers_class ? 131072 : 0));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadHybridKvHeads(r, 8, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, ReadHeadSize(r, m, /*use_head_dim=*/true));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, ModelLevelWindow(r, m));
  std::vector<int64_t> types;
  std::string_view key = "attn_type_list";
  for (std::string_view list : {"attn_type_list", "decoder_attention_types"}) {
    if (!r.Has(list) || r.json()[std::string(list)].empty()) continue;
    key = list;
    KVTOPO_ASSIGN_OR_RETURN(types, r.IntList(list));
    break;
  }
  if (types.empty() && r.Has("layer_types")) {
    key = "layer_types";
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> names, r.StringList("layer_types"));
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != "linear_attention" && names[i] != "full_attention") {
        return r.Invalid("layer_types", fmt::format("entry {} is '{}'; accepted: linear_attention, "
                                                    "full_attention",
                                                    i, names[i]));
      }
      types.push_back(names[i] == "full_attention" ? 1 : 0);
    }
  }
  if (types.empty() && transformers_class) {
    key = "layer_types";
    for (int64_t i = 0; i < n; ++i) types.push_back((i + 1) % 2 != 0 ? 1 : 0);
  }
  if (types.empty()) types.assign(static_cast<size_t>(n), 1);
  if (static_cast<int64_t>(types.size()) < n) {
    return r.Invalid(key,
                     fmt::format("has {} entries but num_hidden_layers is {}", types.size(), n));
  }
  LinearAttentionDims linear{.num_heads = m.num_attention_heads};
  int64_t attention = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (types[i] == 1) {
      m.layers.push_back(NamedAttention(LayerName(i, "attn"), i, m, head, window));
      ++attention;
    } else if (types[i] == 0) {
      if (linear.head_dim == 0) {
        KVTOPO_ASSIGN_OR_RETURN(linear.head_dim, Positive(r, "head_dim"));
      }
      m.layers.push_back(RawLayer{.name = fmt::format("model.layers.{}", i),
                                  .type = LayerType::kLinearAttention,
                                  .linear_attention = linear});
    } else {
      return r.Invalid(key, fmt::format("entry {} is {}; accepted: 0 (linear attention), 1 "
                                        "(softmax attention)",
                                        i, types[i]));
    }
  }
  return BothLayerKinds(r, key, attention, n, "MiniMax-Text-01", "linear-attention");
}

// Zamba2 (Zamba2ForCausalLM; the fork's zamba2.py at 28be48fa9, Transformers' Zamba2Config):
// every layer has a Mamba2 mixer, named "{H + i}.mixer" by the engine (H hybrid layers), and each
// "hybrid" entry of `layers_block_type` (default: the config class's 54-layer list) also runs the
// shared attention block with a KV cache of its own, "model.attn.{j}" for the j-th hybrid layer;
// the engine builds the attention layers first. Attention is multi-head: num_attention_heads
// (32) KV heads of 2 x hidden_size / num_attention_heads (the config class derives
// attention_head_dim so; the heads must divide 2 x hidden_size). Mamba2: mamba_expand (2) x
// hidden_size channels in n_mamba_heads (8) heads, mamba_ngroups (1), mamba_d_state (64),
// mamba_d_conv (4); chunk size `chunk_size` (256). The class's state estimate (the hybrid block
// alignment's) leaves out the speculative tokens; its heads of mamba_headdim are the layers',
// as Zamba2Config sets mamba_headdim to mamba_expand x hidden_size / n_mamba_heads whatever the
// config states. max_position_embeddings defaults to 4096;
// `use_long_context` sets it to 16384 whatever the config states (Zamba2Config). The model
// supports Mamba prefix caching. A config without a hybrid layer is refused, as for Bamba.
Status ReadZamba2(const ConfigReader& r, ModelDescription& m) {
  m.mamba_estimate_widened = false;  // get_mamba_state_shape_from_config: no num_spec
  KVTOPO_ASSIGN_OR_RETURN(const bool long_context, r.BoolOr("use_long_context", false));
  nlohmann::json filled = r.json();
  if (long_context) filled["max_position_embeddings"] = 16384;
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r.Over(filled), m, /*default_positions=*/4096));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t hidden, Positive(r, "hidden_size"));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t attention_hidden,
                          internal::CheckedMul(2, hidden, "2 x hidden_size"));
  if (attention_hidden % m.num_attention_heads != 0) {
    return r.Invalid("num_attention_heads",
                     fmt::format("is {}, which does not divide 2 x hidden_size {}",
                                 m.num_attention_heads, attention_hidden));
  }
  m.num_kv_heads_total = m.num_attention_heads;
  const int64_t head = attention_hidden / m.num_attention_heads;
  Mamba2Dims mamba;
  KVTOPO_ASSIGN_OR_RETURN(const int64_t expand, r.IntInOr("mamba_expand", 2, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(mamba.intermediate_size,
                          internal::CheckedMul(expand, hidden, "mamba_expand x hidden_size"));
  KVTOPO_ASSIGN_OR_RETURN(mamba.num_heads, r.IntInOr("n_mamba_heads", 8, 1, kMaxModelDim));
  if (mamba.intermediate_size % mamba.num_heads != 0) {
    return r.Invalid("n_mamba_heads",
                     fmt::format("is {}, which does not divide mamba_expand x hidden_size {}",
                                 mamba.num_heads, mamba.intermediate_size));
  }
  mamba.head_dim = mamba.intermediate_size / mamba.num_heads;
  KVTOPO_ASSIGN_OR_RETURN(mamba.n_groups, r.IntInOr("mamba_ngroups", 1, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(mamba.state_size, r.IntInOr("mamba_d_state", 64, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(mamba.conv_kernel, r.IntInOr("mamba_d_conv", 4, 2, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(m.mamba_chunk_size, MambaChunkSize(r, 256));
  m.supports_mamba_prefix_caching = true;
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, ModelLevelWindow(r, m));
  std::vector<bool> hybrid;
  if (r.Has("layers_block_type")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> types,
                            PerLayerNames(r, "layers_block_type", n));
    for (const std::string& t : types) hybrid.push_back(t == "hybrid");
  } else {
    // Zamba2Config's default list: 54 layers, hybrid at 6, 12, ..., 42, 47 and 51.
    if (n != 54) {
      return r.Invalid("layers_block_type",
                       fmt::format("is missing, and the config class's default list has 54 "
                                   "layers where num_hidden_layers is {}",
                                   n));
    }
    for (int64_t i = 0; i < n; ++i) {
      hybrid.push_back(i > 0 && ((i <= 42 && i % 6 == 0) || i == 47 || i == 51));
    }
  }
  const int64_t num_hybrid = std::count(hybrid.begin(), hybrid.end(), true);
  if (num_hybrid == 0) {
    return r.Invalid("layers_block_type",
                     "has no hybrid layer; kvtopo plans Zamba2 models with both attention and "
                     "Mamba layers");
  }
  int64_t j = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!hybrid[i]) continue;
    m.layers.push_back(NamedAttention(fmt::format("model.attn.{}", j++), i, m, head, window));
  }
  for (int64_t i = 0; i < n; ++i) {
    m.layers.push_back(Mamba2Mixer(fmt::format("{}.mixer", num_hybrid + i), mamba));
  }
  return Status::Ok();
}

// Dense decoders (Llama and Phi-3, Mistral, Mixtral, Qwen2, Qwen2-MoE, Qwen3, Qwen3-MoE, GLM-4,
// GLM-4.5 MoE, GLM-4.1V and GLM-4.5V, Cohere, MiniMax-M2, OLMo 2, OLMo 3, EXAONE 4, Gemma,
// Granite, Granite MoE, StarCoder2, DeepSeek (v1), InternLM2, ERNIE 4.5, ERNIE 4.5 MoE, Seed-OSS,
// MiMo, MiniCPM, HunYuan, OLMoE, Phi, Phi-3.5-MoE, Apertus, Arcee, AFMoE, Ministral 3, EXAONE
// MoE, OPT, GPT-NeoX, Qwen (first generation), GPT-2, GPT-J, GPTBigCode, dots.llm1, Bailing MoE,
// Falcon, Cohere2 MoE):
// one K/V attention cache per layer, read as each family's model file and config class read it
// (docs/profiles.md cites each rule):
// - KV heads `num_key_value_heads`; when absent, multi-head for some families, the config
//   class's default for others, else an error. Phi's, OPT's, GPT-NeoX's, the first Qwen's,
//   GPT-2's and GPT-J's layers are always multi-head; GPTBigCode's multi-query ones keep one.
// - Head size `head_dim` (or the class's default when absent, and hidden_size /
//   num_attention_heads when null, as those classes derive it), else hidden_size /
//   num_attention_heads; some families always take the latter, and some require `head_dim`.
// - Windows `sliding_window` (0 or null: none; absent: the class's default, if any). Layers slide
//   per `layer_types` when those mix sliding and full layers (without the list, the class's
//   pattern when it derives one); otherwise the window, if any, applies to every layer. Qwen
//   configs window only with `use_sliding_window`; Cohere's first generation never slides; the
//   families whose layers never read `layer_types` (Mixtral, MiniMax-M2, GLM, Gemma, Granite,
//   StarCoder2, DeepSeek, InternLM2, ERNIE 4.5 MoE, Seed-OSS, MiniCPM, HunYuan, OLMoE, Phi,
//   Phi-3.5-MoE) refuse a mix. Seed-OSS refuses a window with a `max_window_layers` short of the
//   layer count, as its model file asserts; AFMoE needs `layer_types`, which its model indexes.
// - MTP (GLM-4.5 MoE, ERNIE 4.5 MoE, MiMo): `num_nextn_predict_layers` decoder layers after the
//   trunk, K/V attention like the trunk's.
enum class DenseWindows { kLayerTypes, kUniform, kQwen, kNone };

struct DenseFamily {
  const char* name;                     // for messages
  int64_t default_positions = 0;        // max_position_embeddings when absent; 0: required
  int64_t absent_kv_heads = kRequired;  // num_key_value_heads when absent (ReadKvHeads)
  bool reads_kv_heads = true;           // false: always multi-head, num_key_value_heads not read
  bool reads_head_dim = true;           // false: always hidden_size / num_attention_heads
  // head_dim when absent (null: hidden_size / num_attention_heads); 0: hidden_size /
  // num_attention_heads; kRequired: head_dim must be stated.
  int64_t absent_head_dim = 0;
  DenseWindows windows = DenseWindows::kLayerTypes;
  int64_t absent_window = 0;        // sliding_window when absent
  int64_t default_pattern = 0;      // without layer_types (and with a window): a full layer every N
  bool reads_pattern = false;       // sliding_window_pattern (an integer) overrides it
  bool pattern_full_first = false;  // the full layers are 0, N, 2N... (else N-1, 2N-1...)
  bool window_on_all_layers = false;  // a window needs max_window_layers (if stated) = layers
  bool requires_layer_types = false;  // the model file indexes layer_types: it must be stated
  bool mtp = false;                   // num_nextn_predict_layers MTP layers after the trunk
};
// Llama (and Phi-3) and Cohere: MHA without num_key_value_heads (LlamaConfig, CohereConfig).
// MistralConfig's window is 4096. Glm4Config: 131072 positions, 2 KV heads of 128. OLMo
// (Olmo2Attention): always hidden / heads, MHA when null, 2048 positions; Olmo3Config's window
// 4096 and a full layer in four. Exaone4Config: 2048 positions, 32 KV heads, a 4096 window and a
// full layer every sliding_window_pattern (4).
constexpr DenseFamily kLlama{.name = "Llama", .absent_kv_heads = kMultiHead};
constexpr DenseFamily kMistral{.name = "Mistral", .absent_window = 4096};
constexpr DenseFamily kMixtral{.name = "Mixtral", .windows = DenseWindows::kUniform};
constexpr DenseFamily kMiniMaxM2{.name = "MiniMax-M2", .windows = DenseWindows::kUniform};
constexpr DenseFamily kQwen2{
    .name = "Qwen2", .reads_head_dim = false, .windows = DenseWindows::kQwen};
constexpr DenseFamily kQwen3{.name = "Qwen3", .windows = DenseWindows::kQwen};
// Qwen3ForCausalLM over Transformers' Qwen3Config, whose head_dim is 128 when a config omits it
// (a GGUF file's config states none: docs/profiles.md, "GGUF files"), with 32 KV heads and 32768
// positions.
constexpr DenseFamily kQwen3Config{.name = "Qwen3",
                                   .default_positions = 32768,
                                   .absent_kv_heads = 32,
                                   .absent_head_dim = 128,
                                   .windows = DenseWindows::kQwen};
// MiMo (mimo.py: the engine's Qwen2 model; mimo_mtp.py: Qwen2 decoder layers): a config class
// that comes with the checkpoint, so no defaults.
constexpr DenseFamily kMimo{
    .name = "MiMo", .reads_head_dim = false, .windows = DenseWindows::kQwen, .mtp = true};
constexpr DenseFamily kGlm4{.name = "GLM-4",
                            .default_positions = 131072,
                            .absent_kv_heads = 2,
                            .absent_head_dim = 128,
                            .windows = DenseWindows::kUniform};
constexpr DenseFamily kGlm4Moe{.name = "GLM-4.5", .windows = DenseWindows::kUniform, .mtp = true};
constexpr DenseFamily kGlm4v{.name = "GLM-4.1V",
                             .default_positions = 32768,
                             .absent_kv_heads = 2,
                             .windows = DenseWindows::kUniform};
constexpr DenseFamily kGlm4vMoe{.name = "GLM-4.5V",
                                .default_positions = 65536,
                                .absent_kv_heads = 8,
                                .absent_head_dim = kRequired,
                                .windows = DenseWindows::kUniform};
constexpr DenseFamily kCohere{.name = "Cohere",
                              .default_positions = 8192,
                              .absent_kv_heads = kMultiHead,
                              .reads_head_dim = false,
                              .windows = DenseWindows::kNone};
constexpr DenseFamily kOlmo2{.name = "OLMo 2",
                             .default_positions = 2048,
                             .absent_kv_heads = kMultiHead,
                             .reads_head_dim = false};
constexpr DenseFamily kOlmo3{.name = "OLMo 3",
                             .default_positions = 2048,
                             .absent_kv_heads = kMultiHead,
                             .reads_head_dim = false,
                             .absent_window = 4096,
                             .default_pattern = 4};
constexpr DenseFamily kExaone4{.name = "EXAONE 4",
                               .default_positions = 2048,
                               .absent_kv_heads = 32,
                               .absent_window = 4096,
                               .default_pattern = 4,
                               .reads_pattern = true};
constexpr DenseFamily kExaoneMoe{.name = "EXAONE MoE",
                                 .default_positions = 2048,
                                 .absent_kv_heads = 32,
                                 .absent_window = 4096,
                                 .default_pattern = 4,
                                 .reads_pattern = true};
constexpr DenseFamily kGemma{.name = "Gemma",
                             .default_positions = 8192,
                             .absent_kv_heads = 16,
                             .absent_head_dim = 256,
                             .windows = DenseWindows::kUniform};
constexpr DenseFamily kGranite{.name = "Granite",
                               .default_positions = 2048,
                               .absent_kv_heads = kMultiHead,
                               .windows = DenseWindows::kUniform};
constexpr DenseFamily kGraniteMoe{.name = "Granite MoE",
                                  .default_positions = 2048,
                                  .absent_kv_heads = kMultiHead,
                                  .reads_head_dim = false,
                                  .windows = DenseWindows::kUniform};
constexpr DenseFamily kStarcoder2{.name = "StarCoder2",
                                  .default_positions = 4096,
                                  .absent_kv_heads = 2,
                                  .reads_head_dim = false,
                                  .windows = DenseWindows::kUniform};
constexpr DenseFamily kDeepseek{
    .name = "DeepSeek", .reads_head_dim = false, .windows = DenseWindows::kUniform};
constexpr DenseFamily kInternLm2{
    .name = "InternLM2", .reads_head_dim = false, .windows = DenseWindows::kUniform};
constexpr DenseFamily kErnie45{
    .name = "ERNIE 4.5", .default_positions = 131072, .absent_kv_heads = 2, .absent_head_dim = 128};
constexpr DenseFamily kErnie45Moe{.name = "ERNIE 4.5 MoE",
                                  .default_positions = 131072,
                                  .absent_kv_heads = 4,
                                  .windows = DenseWindows::kUniform,
                                  .mtp = true};
// MiniCPM (minicpm.py): hidden_size / heads, no per-layer window; a config class that comes with
// the checkpoint. HunYuan (hunyuan_v1.py): multi-head without num_key_value_heads and 2048
// positions (HunYuanDenseV1Config, HunYuanMoEV1Config); ReadHunYuan picks the head size.
constexpr DenseFamily kMiniCpm{
    .name = "MiniCPM", .reads_head_dim = false, .windows = DenseWindows::kUniform};
constexpr DenseFamily kHunYuan{.name = "HunYuan",
                               .default_positions = 2048,
                               .absent_kv_heads = kMultiHead,
                               .windows = DenseWindows::kUniform};
constexpr DenseFamily kSeedOss{.name = "Seed-OSS",
                               .default_positions = 524288,
                               .absent_kv_heads = 8,
                               .absent_head_dim = 128,
                               .windows = DenseWindows::kUniform,
                               .window_on_all_layers = true};
// OLMoE (olmoe.py): hidden_size / heads, no per-layer window; OlmoeConfig: multi-head, 4096
// positions. Phi-3.5-MoE (phimoe.py): head_dim, else hidden_size / heads, no per-layer window;
// PhimoeConfig: 8 KV heads, 131072 positions. Phi (phi.py): every layer multi-head and
// hidden_size / heads whatever the config states; PhiConfig: 2048 positions.
constexpr DenseFamily kOlmoe{.name = "OLMoE",
                             .default_positions = 4096,
                             .absent_kv_heads = kMultiHead,
                             .reads_head_dim = false,
                             .windows = DenseWindows::kUniform};
constexpr DenseFamily kPhiMoe{.name = "PhiMoE",
                              .default_positions = 131072,
                              .absent_kv_heads = 8,
                              .windows = DenseWindows::kUniform};
constexpr DenseFamily kPhi{.name = "Phi",
                           .default_positions = 2048,
                           .reads_kv_heads = false,
                           .reads_head_dim = false,
                           .windows = DenseWindows::kUniform};
// Apertus (apertus.py) and Arcee (arcee.py, the engine's Llama attention): sliding layers per
// layer_types; ApertusConfig: multi-head, 65536 positions; ArceeConfig: multi-head, 4096.
constexpr DenseFamily kApertus{
    .name = "Apertus", .default_positions = 65536, .absent_kv_heads = kMultiHead};
constexpr DenseFamily kArcee{
    .name = "Arcee", .default_positions = 4096, .absent_kv_heads = kMultiHead};
// AFMoE (afmoe.py, the fork's AfmoeConfig): layer_types indexed per layer (a config without it
// fails to build), window 2048, head_dim 128, multi-head, 131072 positions.
constexpr DenseFamily kAfmoe{.name = "AFMoE",
                             .default_positions = 131072,
                             .absent_kv_heads = kMultiHead,
                             .absent_head_dim = 128,
                             .absent_window = 2048,
                             .requires_layer_types = true};
// OPT (opt.py), GPT-NeoX (gpt_neox.py) and Qwen (the first generation, qwen.py): every layer
// multi-head of hidden_size / heads; OPTConfig and GPTNeoXConfig: 2048 positions; QWenConfig comes
// with the checkpoint. Dots1 (dots1.py): head_dim, else hidden_size / heads, no per-layer window;
// Dots1Config: 32 KV heads, 2048 positions and a 4096-token window, so a config that leaves
// sliding_window out slides every layer; its layer_types slide the layers from
// max_window_layers on, a mix the model's layers never read. Bailing MoE (bailing_moe.py: Ling
// and Ling 2.0): head_dim, else hidden_size / heads, no per-layer window; its config class comes
// with the checkpoint (the fork builds no MTP draft for it, so its MTP layers keep no cache).
constexpr DenseFamily kMultiHeadOnly{.name = "OPT and GPT-NeoX",
                                     .default_positions = 2048,
                                     .reads_kv_heads = false,
                                     .reads_head_dim = false,
                                     .windows = DenseWindows::kUniform};
constexpr DenseFamily kQwenV1{.name = "Qwen",
                              .reads_kv_heads = false,
                              .reads_head_dim = false,
                              .windows = DenseWindows::kUniform};
constexpr DenseFamily kDots1{.name = "dots.llm1",
                             .default_positions = 2048,
                             .absent_kv_heads = 32,
                             .windows = DenseWindows::kUniform,
                             .absent_window = 4096,
                             .window_on_all_layers = true};
constexpr DenseFamily kBailing{.name = "Bailing MoE", .windows = DenseWindows::kUniform};
// Ministral 3 (Ministral3ForCausalLM, and Mistral 3's text model of model type ministral3: the
// engine's Mistral model over Ministral3Config): head_dim 128, 8 KV heads, 262144 positions, no
// window by default.
constexpr DenseFamily kMinistral3{.name = "Ministral 3",
                                  .default_positions = 262144,
                                  .absent_kv_heads = 8,
                                  .absent_head_dim = 128};

// GLM (GlmForCausalLM: GLM-4 in Transformers' format; the fork's glm.py is its Llama): GlmConfig
// has 131072 positions and 2 KV heads of 128. Llama's other checkpoints: LLaMA
// (LLaMAForCausalLM, LlamaConfig's 2048 positions), InternLM (the checkpoint's InternLMConfig:
// multi-head, 2048), InternLM3 (InternLM3Config: 32 KV heads, 32768), XVERSE (XverseConfig:
// multi-head, 8192), Aquila (AquilaConfig: multi-head, 2048), IQuest-Coder (IQuestCoderConfig: 8
// KV heads of 128, 16384; its layers read no use_sliding_window) and CWM (CwmConfig: 64 layers, 8
// KV heads of 128, 131072 positions, a window of 8192 on every layer but 0, 4, 8...).
constexpr DenseFamily kGlm{
    .name = "GLM", .default_positions = 131072, .absent_kv_heads = 2, .absent_head_dim = 128};
constexpr DenseFamily kLlamaV1{
    .name = "LLaMA", .default_positions = 2048, .absent_kv_heads = kMultiHead};
constexpr DenseFamily kInternLm{
    .name = "InternLM", .default_positions = 2048, .absent_kv_heads = kMultiHead};
constexpr DenseFamily kInternLm3{
    .name = "InternLM3", .default_positions = 32768, .absent_kv_heads = 32};
constexpr DenseFamily kXverse{
    .name = "XVERSE", .default_positions = 8192, .absent_kv_heads = kMultiHead};
constexpr DenseFamily kAquila{
    .name = "Aquila", .default_positions = 2048, .absent_kv_heads = kMultiHead};
constexpr DenseFamily kIQuestCoder{.name = "IQuest-Coder",
                                   .default_positions = 16384,
                                   .absent_kv_heads = 8,
                                   .absent_head_dim = 128};
constexpr DenseFamily kCwm{.name = "CWM",
                           .default_positions = 131072,
                           .absent_kv_heads = 8,
                           .absent_head_dim = 128,
                           .absent_window = 8192,
                           .default_pattern = 4,
                           .pattern_full_first = true};
// Models whose layers pass no window of their own (the config's sliding_window, when set, applies
// to every layer) and read hidden_size / heads:
// - OLMo (olmo.py) and Persimmon (persimmon.py): every layer multi-head; OlmoConfig 2048
//   positions, PersimmonConfig 16384.
// - FlexOlmo (flex_olmo.py, OLMoE's attention; the fork's FlexOlmoConfig): multi-head, 4096.
// - StableLM (stablelm.py): StableLmConfig's 32 KV heads and 4096 positions; the older
//   stablelm_epoch checkpoints' class comes with them, so their fields are required.
// - Orion (orion.py; OrionConfig: 40 KV heads, 4096), Arctic (arctic.py; ArcticConfig:
//   multi-head, 4096).
// - Grok (grok1.py): num_key_value_heads and max_position_embeddings read as stated (Grok-1's
//   class comes with the checkpoint, Grok-2's config loads as another model type's class); the
//   logits soft cap in ReadGrok.
// - Baichuan (baichuan.py): every layer multi-head; its classes come with the checkpoints and
//   name the length max_position_embeddings (7B) or model_max_length (13B).
constexpr DenseFamily kOlmo{.name = "OLMo",
                            .default_positions = 2048,
                            .reads_kv_heads = false,
                            .reads_head_dim = false,
                            .windows = DenseWindows::kUniform};
constexpr DenseFamily kPersimmon{.name = "Persimmon",
                                 .default_positions = 16384,
                                 .reads_kv_heads = false,
                                 .reads_head_dim = false,
                                 .windows = DenseWindows::kUniform};
constexpr DenseFamily kFlexOlmo{.name = "FlexOlmo",
                                .default_positions = 4096,
                                .absent_kv_heads = kMultiHead,
                                .reads_head_dim = false,
                                .windows = DenseWindows::kUniform};
constexpr DenseFamily kStableLm{.name = "StableLM",
                                .default_positions = 4096,
                                .absent_kv_heads = 32,
                                .reads_head_dim = false,
                                .windows = DenseWindows::kUniform};
constexpr DenseFamily kStableLmEpoch{
    .name = "StableLM", .reads_head_dim = false, .windows = DenseWindows::kUniform};
constexpr DenseFamily kOrion{.name = "Orion",
                             .default_positions = 4096,
                             .absent_kv_heads = 40,
                             .reads_head_dim = false,
                             .windows = DenseWindows::kUniform};
constexpr DenseFamily kArctic{.name = "Arctic",
                              .default_positions = 4096,
                              .absent_kv_heads = kMultiHead,
                              .reads_head_dim = false,
                              .windows = DenseWindows::kUniform};
constexpr DenseFamily kGrok{
    .name = "Grok", .reads_head_dim = false, .windows = DenseWindows::kUniform};
constexpr DenseFamily kBaichuan{.name = "Baichuan",
                                .default_positions = kAnyLengthField,
                                .reads_kv_heads = false,
                                .reads_head_dim = false,
                                .windows = DenseWindows::kUniform};
// Models whose layers pass no window of their own and read head_dim (else hidden_size / heads):
// Nemotron (nemotron.py; the fork's NemotronConfig: head_dim, else kv_channels; multi-head, 4096
// positions), EXAONE 3 (exaone.py; the checkpoint's ExaoneConfig: multi-head, 2048), Solar
// (solar.py; the checkpoint's SolarConfig: multi-head, 2048 positions and a sliding_window of
// 2047, so every layer slides unless the config says null) and Jais 2 (jais2.py; Jais2Config:
// multi-head, 8192).
constexpr DenseFamily kNemotron{.name = "Nemotron",
                                .default_positions = 4096,
                                .absent_kv_heads = kMultiHead,
                                .windows = DenseWindows::kUniform};
constexpr DenseFamily kExaone3{.name = "EXAONE 3",
                               .default_positions = 2048,
                               .absent_kv_heads = kMultiHead,
                               .windows = DenseWindows::kUniform};
constexpr DenseFamily kSolar{.name = "Solar",
                             .default_positions = 2048,
                             .absent_kv_heads = kMultiHead,
                             .windows = DenseWindows::kUniform,
                             .absent_window = 2047};
constexpr DenseFamily kJais2{.name = "Jais 2",
                             .default_positions = 8192,
                             .absent_kv_heads = kMultiHead,
                             .windows = DenseWindows::kUniform};

// `sliding_window` as the Gemma-family config classes keep it: null is no window (0), absent the
// class's default; the models pass it as the sliding layers' window, and None is none.
Result<int64_t> ClassWindow(const ConfigReader& r, int64_t class_default) {
  if (r.IsNull("sliding_window")) return int64_t{0};
  return r.IntInOr("sliding_window", class_default, 1, kMaxModelLen);
}

// The engine sets the cache-wide window (CacheConfig.sliding_window, the config's sliding_window)
// only when the layer types are of one kind (arg_utils, is_interleaved), and a layer that passes
// no window of its own takes it: with every layer full, every layer slides.
void WarnEveryLayerSlides(const ConfigReader& r, ModelDescription& m) {
  m.config_warnings.emplace_back(
      "config-window-every-layer",
      fmt::format("{} has every layer of type full_attention (its layer_types, or "
                  "the list its config class derives) and a sliding_window of {}: with layer "
                  "types of one kind the engine sets that window cache-wide, and every layer "
                  "slides; set sliding_window to null for full layers",
                  ConfigFileLabel(r.file()), m.text_sliding_window));
}

Result<std::vector<int64_t>> ReadDenseWindows(const ConfigReader& r, const DenseFamily& f,
                                              int64_t n, ModelDescription& m) {
  std::vector<int64_t> windows(static_cast<size_t>(n), 0);
  if (f.windows == DenseWindows::kNone) return windows;
  if (f.windows == DenseWindows::kQwen) {
    KVTOPO_ASSIGN_OR_RETURN(bool use, r.BoolOr("use_sliding_window", false));
    if (!use) return windows;
    KVTOPO_ASSIGN_OR_RETURN(int64_t window, r.IntInOr("sliding_window", 0, 0, kMaxModelLen));
    if (window == 0) return windows;
    return r.Invalid("use_sliding_window",
                     "is true: which layers a Qwen model windows depends on max_window_layers "
                     "and the Transformers version, and the engine refuses a window on only some "
                     "layers; kvtopo does not plan it (set it to false to plan full attention)");
  }
  const int64_t absent = r.json().contains("sliding_window") ? 0 : f.absent_window;
  KVTOPO_ASSIGN_OR_RETURN(int64_t window, r.IntInOr("sliding_window", absent, 0, kMaxModelLen));
  m.text_sliding_window = window;
  std::vector<bool> sliding;
  if (r.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(sliding, SlidingLayers(r, n));
  } else if (f.requires_layer_types) {
    return r.Invalid("layer_types",
                     fmt::format("is not set: the engine's {} model reads each layer's kind from "
                                 "it and does not build without it",
                                 f.name));
  } else if (f.default_pattern > 0 && window > 0) {
    int64_t pattern = f.default_pattern;
    if (f.reads_pattern && r.Has("sliding_window_pattern")) {
      if (!r.json()["sliding_window_pattern"].is_number()) {
        return r.Invalid("sliding_window_pattern",
                         "is not an integer, from which alone the config class derives the layer "
                         "kinds; state layer_types");
      }
      KVTOPO_ASSIGN_OR_RETURN(pattern, r.IntIn("sliding_window_pattern", 1, kMaxLayers));
    }
    const int64_t shift = f.pattern_full_first ? 0 : 1;
    for (int64_t i = 0; i < n; ++i) sliding.push_back((i + shift) % pattern != 0);
  }
  const auto slides = std::count(sliding.begin(), sliding.end(), true);
  const bool mixed = slides > 0 && slides < n;  // is_interleaved
  if (!mixed) {
    if (slides == 0 && window > 0 && r.Has("layer_types")) {
      WarnEveryLayerSlides(r, m);
    }
    std::fill(windows.begin(), windows.end(), window);
    return windows;
  }
  if (f.windows == DenseWindows::kUniform) {
    // These layers take no window of their own, and the engine sets the cache-wide one only for
    // a config whose layer_types are of one kind (arg_utils, is_interleaved): every layer is full.
    m.config_warnings.emplace_back(
        "config-window-unused",
        fmt::format("{} gives layer_types that mix sliding and full layers, which "
                    "the engine's {} layers do not read; with mixed layer types the engine sets "
                    "no cache-wide window, so every layer attends over the whole request",
                    ConfigFileLabel(r.file()), f.name));
    return windows;
  }
  // Sliding layers need a window: the config's, or its class's default. A null one is the
  // layers' None: each falls back to the cache-wide window, which mixed layer types leave unset,
  // so every layer is full attention.
  if (r.IsNull("sliding_window")) {
    m.config_warnings.emplace_back(
        "config-window-null",
        fmt::format("{} names sliding_attention layers in layer_types but gives a "
                    "null sliding_window: the engine's {} layers take that None as no window of "
                    "their own and, with mixed layer types, find no cache-wide one, so every "
                    "layer attends over the whole request",
                    ConfigFileLabel(r.file()), f.name));
    return windows;
  }
  int64_t per_layer = window;
  if (per_layer == 0) {
    KVTOPO_ASSIGN_OR_RETURN(per_layer, Positive(r, "sliding_window", kMaxModelLen));
  }
  for (int64_t i = 0; i < n; ++i) windows[i] = sliding[i] ? per_layer : 0;
  return windows;
}

Status ReadDense(const ConfigReader& r, const DenseFamily& f, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, f.default_positions));
  KVTOPO_ASSIGN_OR_RETURN(int64_t n, NumLayers(r));
  if (f.reads_kv_heads) {
    KVTOPO_RETURN_IF_ERROR(ReadKvHeads(r, f.absent_kv_heads, m));
  } else {
    m.num_kv_heads_total = m.num_attention_heads;
  }
  int64_t head = 0;
  if (f.absent_head_dim == kRequired) {
    KVTOPO_ASSIGN_OR_RETURN(head, Positive(r, "head_dim"));
  } else if (f.absent_head_dim > 0 && !r.json().contains("head_dim")) {
    head = f.absent_head_dim;
  } else {
    KVTOPO_ASSIGN_OR_RETURN(head, ReadHeadSize(r, m, f.reads_head_dim));
  }
  KVTOPO_ASSIGN_OR_RETURN(std::vector<int64_t> windows, ReadDenseWindows(r, f, n, m));
  if (f.window_on_all_layers && windows[0] > 0 && r.Has("max_window_layers")) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t window_layers, r.Int("max_window_layers"));
    if (window_layers != n) {
      return r.Invalid("max_window_layers",
                       fmt::format("is {} with sliding_window {}: the engine's {} model windows "
                                   "all {} layers or none (set max_window_layers to "
                                   "num_hidden_layers, or sliding_window to null)",
                                   window_layers, windows[0], f.name, n));
    }
  }
  for (int64_t i = 0; i < n; ++i) m.layers.push_back(KvAttentionLayer(i, m, head, windows[i]));
  if (f.mtp) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t mtp, NumMtpLayers(r, n, m));
    AddKvMtpLayers(n, mtp, head, m);
  }
  return Status::Ok();
}
// EXAONE MoE (ExaoneMoEForCausalLM, K-EXAONE; the fork's exaone_moe.py over exaone4.py's
// attention, and exaone_moe_mtp.py): the trunk reads as EXAONE 4, ExaoneMoeConfig having
// Exaone4Config's defaults. The MTP model builds num_nextn_predict_layers (1 when absent)
// decoder layers whose layer index is their place among the MTP layers, so MTP layer j takes
// layer_types[j]: it slides when trunk layer j does. They are built without the cache config, so
// they cache in the model's dtype.
Status ReadExaoneMoe(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadDense(r, kExaoneMoe, m));
  const int64_t n = static_cast<int64_t>(m.layers.size());
  KVTOPO_ASSIGN_OR_RETURN(const int64_t mtp,
                          r.IntInOr("num_nextn_predict_layers", 1, 0, std::min(n, kMaxLayers - n)));
  if (r.Has("num_nextn_predict_layers")) m.mtp_n_predict = mtp;
  for (int64_t j = 0; j < mtp; ++j) {
    RawLayer layer = m.layers[static_cast<size_t>(j)];
    layer.name = LayerName(n + j, "self_attn");
    layer.mtp = true;
    m.layers.push_back(std::move(layer));
  }
  m.mtp_cache_dtype_auto = true;
  return Status::Ok();
}

// The reader-table entry of one dense family.
template <const DenseFamily& kFamily>
Status ReadDenseAs(const ConfigReader& r, ModelDescription& m) {
  return ReadDense(r, kFamily, m);
}

// Gemma (gemma.py): the attention takes config.head_dim as given (its scale is head_dim ** -0.5),
// so a null head_dim, which GemmaConfig keeps, does not build.
Status ReadGemma(const ConfigReader& r, ModelDescription& m) {
  if (r.IsNull("head_dim")) {
    return r.Invalid("head_dim",
                     "is null: the engine's Gemma attention takes head_dim as given and does not "
                     "build without one; state it, or omit it for GemmaConfig's 256");
  }
  return ReadDense(r, kGemma, m);
}

// Gemma 2, Gemma 3, Gemma 3n and Cohere 2: sliding and full K/V attention layers interleaved, per
// `layer_types` (the engine reads config.layer_types). Configs written before Transformers
// stored that list get the one its config class derives: a layer slides unless its index + 1 is
// a multiple of the pattern (Gemma 2: 2, so the even layers slide; Gemma 3: 6 and Cohere 2: 4,
// or `sliding_window_pattern`). Fields a config may omit default as its config class's do.
// Gemma 2's layers take the config's attn_logit_softcapping as their logits soft cap; Gemma 3's
// pass none (gemma3.py), as do Gemma 3n's and Cohere 2's.
struct InterleavedFamily {
  int64_t default_positions;  // max_position_embeddings
  int64_t default_head_dim;   // 0: hidden_size / num_attention_heads, head_dim not read
  int64_t absent_kv_heads;    // num_key_value_heads when absent (kMultiHead: the query heads)
  int64_t default_pattern;
  bool reads_pattern;      // sliding_window_pattern overrides default_pattern
  int64_t default_window;  // sliding_window
  // num_kv_shared_layers when absent; -1: the family shares no KV across layers.
  int64_t default_kv_shared = -1;
  // The config class, for messages naming its defaults.
  const char* config_class = nullptr;
  // The attention layers take the config's attn_logit_softcapping, this when absent (Gemma 2:
  // 50.0); null: they take none (ReadLogitsSoftCap).
  const char* soft_cap_default = nullptr;
};
// Gemma 3: google/gemma-3-27b-it's text_config states neither max_position_embeddings nor the
// pattern. KV heads when absent: Gemma2Config's and Gemma3TextConfig's 4, Gemma3nTextConfig's 2.
// Cohere 2: its attention takes hidden_size / heads (the fork's commandr.py). Gemma 3n:
// Transformers' Gemma3nTextConfig (32768 positions, window 512, a full layer in five, 15 of the
// layers reusing an earlier layer's KV).
constexpr InterleavedFamily kGemma2{8192, 256, 4, 2, false, 4096, -1, "Gemma2Config", "50.0"};
constexpr InterleavedFamily kGemma3{131072, 256, 4, 6, true, 4096};
constexpr InterleavedFamily kCohere2{8192, 0, kMultiHead, 4, true, 4096};
constexpr InterleavedFamily kGemma3n{32768, 256, 2, 5, false, 512, 15, "Gemma3nTextConfig"};

Status ReadInterleaved(const ConfigReader& r, const InterleavedFamily& f, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, f.default_positions));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadKvHeads(r, f.absent_kv_heads, m));
  int64_t head = f.default_head_dim;
  if (head > 0) {
    KVTOPO_ASSIGN_OR_RETURN(head, r.IntInOr("head_dim", head, 1, kMaxModelDim));
  } else {
    KVTOPO_ASSIGN_OR_RETURN(head, ReadHeadSize(r, m, /*use_head_dim=*/false));
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, ClassWindow(r, f.default_window));
  m.text_sliding_window = window;
  KVTOPO_ASSIGN_OR_RETURN(const bool bidirectional, r.BoolOr("use_bidirectional_attention", false));
  if (bidirectional) {
    return r.Invalid("use_bidirectional_attention",
                     "is true: an embedding model's bidirectional attention keeps no KV cache "
                     "across steps; kvtopo plans decoders");
  }
  std::vector<bool> sliding;
  if (r.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(sliding, SlidingLayers(r, n));
  } else {
    int64_t pattern = f.default_pattern;
    if (f.reads_pattern) {
      KVTOPO_ASSIGN_OR_RETURN(pattern, r.IntInOr("sliding_window_pattern", pattern, 1, kMaxLayers));
    }
    for (int64_t i = 0; i < n; ++i) sliding.push_back((i + 1) % pattern != 0);
  }
  // Layer types of one kind (stated, or derived: fewer layers than the pattern, or a pattern of
  // 1) set the cache-wide window, which a full layer takes as it passes none of its own.
  const auto slides = std::count(sliding.begin(), sliding.end(), true);
  const bool interleaved = slides > 0 && slides < n;
  if (slides == 0 && window > 0) WarnEveryLayerSlides(r, m);
  // KV sharing (Gemma 3n): the last num_kv_shared_layers layers read the KV cache of the last
  // non-shared layer of their kind (sliding: the one two before the first shared layer, full: the
  // one just before) and keep none of their own, when that layer exists.
  int64_t first_shared = n;
  int64_t shared = 0;
  if (f.default_kv_shared >= 0) {
    KVTOPO_ASSIGN_OR_RETURN(shared,
                            r.IntInOr("num_kv_shared_layers", f.default_kv_shared, 0, kMaxLayers));
    first_shared = n - shared;
  }
  std::vector<int64_t> reusing;
  for (int64_t i = 0; i < n; ++i) {
    if (i >= first_shared && first_shared - (sliding[i] ? 2 : 1) >= 0) {
      reusing.push_back(i);
      continue;
    }
    m.layers.push_back(KvAttentionLayer(i, m, head, sliding[i] || !interleaved ? window : 0));
  }
  if (!reusing.empty()) {
    RecordKvSharing(r, shared, f.config_class, reusing, m);
  }
  if (f.soft_cap_default != nullptr) {
    KVTOPO_RETURN_IF_ERROR(ReadLogitsSoftCap(r, f.config_class, f.soft_cap_default, m));
  }
  return Status::Ok();
}
// The reader-table entry of one interleaved family.
template <const InterleavedFamily& kFamily>
Status ReadInterleavedAs(const ConfigReader& r, ModelDescription& m) {
  return ReadInterleaved(r, kFamily, m);
}

// Rnj-1 (Rnj1ForCausalLM; the fork's rnj1.py at 28be48fa9), a Gemma 3 text model read through
// Gemma3TextConfig, whose defaults fill what a config omits (2304 hidden, 26 layers, 8 heads, 4
// K/V heads, head_dim 256, 131072 positions, window 4096, layer_types derived as Gemma 3's):
// - A layer whose layer_types entry is "chunked_attention" attends block-locally (chunks of half
//   the window, one chunk of lookback) and caches as a sliding-window layer of `sliding_window`
//   (null: none). Every other layer, "sliding_attention" included, passes no window (rnj1.py
//   takes it for chunked layers only): it is full when the layer types mix kinds, and takes the
//   cache-wide window when they are of one kind (WarnEveryLayerSlides).
// - Chunked layers run only on TRITON_ATTN (the engine's Attention asserts it), and the Triton
//   kernel asserts a chunk of at least one token: a window of at least 2.
// - The MLP raises for a hidden_activation other than gelu_pytorch_tanh.
// ReadRnj1 (below) fills Gemma3TextConfig's defaults first.
Status ReadRnj1Layers(const ConfigReader& c, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string activation,
                          c.StringOr("hidden_activation", "gelu_pytorch_tanh"));
  if (activation != "gelu_pytorch_tanh") {
    return c.Invalid("hidden_activation",
                     fmt::format("is '{}': the engine's Rnj-1 MLP is built only with "
                                 "gelu_pytorch_tanh and raises otherwise",
                                 activation));
  }
  KVTOPO_RETURN_IF_ERROR(ReadCommon(c, m, /*default_positions=*/131072));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(c));
  KVTOPO_RETURN_IF_ERROR(ReadKvHeads(c, kRequired, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, c.IntInOr("head_dim", 256, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, ClassWindow(c, 4096));
  m.text_sliding_window = window;
  std::vector<std::string> types;
  if (c.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(types, PerLayerNames(c, "layer_types", n));
    for (int64_t i = 0; i < n; ++i) {
      const std::string& t = types[static_cast<size_t>(i)];
      if (t != "chunked_attention" && t != "sliding_attention" && t != "full_attention") {
        return c.Invalid("layer_types",
                         fmt::format("entry {} is '{}'; accepted: chunked_attention, "
                                     "sliding_attention, full_attention",
                                     i, t));
      }
    }
  } else {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t pattern,
                            c.IntInOr("sliding_window_pattern", 6, 1, kMaxLayers));
    for (int64_t i = 0; i < n; ++i) {
      types.emplace_back((i + 1) % pattern != 0 ? "sliding_attention" : "full_attention");
    }
  }
  const bool interleaved = std::set<std::string>(types.begin(), types.end()).size() > 1;
  const auto first = std::find(types.begin(), types.end(), "chunked_attention");
  if (first != types.end()) {
    if (window == 1) {
      return c.Invalid("sliding_window",
                       fmt::format("is 1 with chunked_attention layers (layer {}): they split the "
                                   "window into two chunks, and the engine's Triton kernel "
                                   "asserts a chunk of at least one token",
                                   first - types.begin()));
    }
    m.required_backend = "TRITON_ATTN";
    m.required_backend_reason = "has chunked_attention layers (block-local attention)";
  }
  if (!interleaved && window > 0 && types[0] == "full_attention") WarnEveryLayerSlides(c, m);
  for (int64_t i = 0; i < n; ++i) {
    const bool chunked = types[static_cast<size_t>(i)] == "chunked_attention";
    m.layers.push_back(KvAttentionLayer(i, m, head, chunked || !interleaved ? window : 0));
  }
  return Status::Ok();
}

// A field a config class defaults and may know by another name (its attribute_map): `alias`,
// when given and stated, wins over `name`; with neither stated, `fallback`. The value goes under
// `name` in `filled`.
struct ClassField {
  const char* name;
  const char* alias;
  int64_t fallback;
  int64_t max;
};
Status FillClassFields(const ConfigReader& r, std::span<const ClassField> fields,
                       nlohmann::json& filled) {
  for (const ClassField& f : fields) {
    if (f.alias != nullptr && r.Has(f.alias)) {
      KVTOPO_ASSIGN_OR_RETURN(filled[f.name], r.IntIn(f.alias, 1, f.max));
    } else if (!r.Has(f.name)) {
      filled[f.name] = f.fallback;
    }
  }
  return Status::Ok();
}

// GPT-2, GPT-J and GPTBigCode (gpt2.py, gpt_j.py, gpt_bigcode.py): their config classes name
// hidden_size n_embd, num_attention_heads n_head, num_hidden_layers n_layer and
// max_position_embeddings n_positions (attribute_map), each the class's default when absent.
// Every layer has heads of hidden_size / heads, all of them K/V heads except for a GPTBigCode
// multi_query model (its class's default), whose layers keep one.
struct Gpt2Family {
  int64_t n_embd;
  int64_t n_head;
  int64_t n_layer;
  int64_t n_positions;
  bool multi_query_default = false;  // GPTBigCode: multi_query when absent; false: not read
};
constexpr Gpt2Family kGpt2{768, 12, 12, 1024};
constexpr Gpt2Family kGptJ{4096, 16, 28, 2048};
constexpr Gpt2Family kGptBigCode{768, 12, 12, 1024, true};
constexpr DenseFamily kGpt2Layers{
    .name = "GPT-2", .reads_head_dim = false, .windows = DenseWindows::kUniform};

Status ReadGpt2Style(const ConfigReader& r, const Gpt2Family& f, ModelDescription& m) {
  const std::array<ClassField, 4> fields = {{
      {"hidden_size", "n_embd", f.n_embd, kMaxModelDim},
      {"num_attention_heads", "n_head", f.n_head, kMaxModelDim},
      {"num_hidden_layers", "n_layer", f.n_layer, kMaxLayers},
      {"max_position_embeddings", "n_positions", f.n_positions, kMaxModelLen},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  bool multi_query = false;
  if (f.multi_query_default) {
    KVTOPO_ASSIGN_OR_RETURN(multi_query, r.BoolOr("multi_query", true));
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t heads,
                          r.Over(filled).IntIn("num_attention_heads", 1, kMaxModelDim));
  filled["num_key_value_heads"] = multi_query ? 1 : heads;
  return ReadDense(r.Over(filled), kGpt2Layers, m);
}
template <const Gpt2Family& kFamily>
Status ReadGpt2StyleAs(const ConfigReader& r, ModelDescription& m) {
  return ReadGpt2Style(r, kFamily, m);
}
// JAIS (JAISLMHeadModel; the fork's jais.py and its JAISConfig): GPT-2's names and defaults, every
// layer multi-head; ALiBi when position_embedding_type is "alibi" (JAISConfig: "learned").
constexpr Gpt2Family kJais{768, 12, 12, 1024};
Status ReadJais(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadGpt2Style(r, kJais, m));
  KVTOPO_ASSIGN_OR_RETURN(const std::string positions,
                          r.StringOr("position_embedding_type", "learned"));
  if (positions == "alibi") {
    m.alibi_source =
        fmt::format("{} \"alibi\" in '{}'", r.Path("position_embedding_type"), r.file());
  }
  return Status::Ok();
}

// Nemotron (NemotronForCausalLM): the fork's NemotronConfig takes head_dim, else kv_channels
// (Megatron's name), else hidden_size / heads.
Status ReadNemotron(const ConfigReader& r, ModelDescription& m) {
  nlohmann::json filled = r.json();
  if (!r.Has("head_dim") && r.Has("kv_channels")) {
    KVTOPO_ASSIGN_OR_RETURN(filled["head_dim"], r.IntIn("kv_channels", 1, kMaxModelDim));
  }
  return ReadDense(r.Over(filled), kNemotron, m);
}

// EXAONE 3 (ExaoneForCausalLM): the checkpoint's ExaoneConfig names num_hidden_layers
// num_layers (32 when absent).
Status ReadExaone3(const ConfigReader& r, ModelDescription& m) {
  const std::array<ClassField, 1> fields = {{{"num_hidden_layers", "num_layers", 32, kMaxLayers}}};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  return ReadDense(r.Over(filled), kExaone3, m);
}

// TeleChat (TeleChatForCausalLM, TeleChat2ForCausalLM; the fork's telechat2.py over its Llama):
// the checkpoint's TelechatConfig names the layers n_layer (30) and the heads n_head (32), hidden
// 4096; it has no max_position_embeddings (seq_length is the length) and leaves
// num_key_value_heads None when absent, which the engine's layers cannot build with: required.
constexpr DenseFamily kTeleChat{.name = "TeleChat", .default_positions = kAnyLengthField};
Status ReadTeleChat(const ConfigReader& r, ModelDescription& m) {
  const std::array<ClassField, 3> fields = {{
      {"num_hidden_layers", "n_layer", 30, kMaxLayers},
      {"num_attention_heads", "n_head", 32, kMaxModelDim},
      {"hidden_size", nullptr, 4096, kMaxModelDim},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  return ReadDense(r.Over(filled), kTeleChat, m);
}

// Grok (grok1.py): every layer's attention takes max(attn_logit_softcapping, 0.0) as its logits
// soft cap, 30.0 when the config states none: a cap whatever the value (0.0 is not None), and a
// null or non-number fails the engine's max().
Status ReadGrok(const ConfigReader& r, ModelDescription& m) {
  constexpr std::string_view kKey = "attn_logit_softcapping";
  const auto it = r.json().find(kKey);
  if (it != r.json().end() && !it->is_number()) {
    return r.Invalid(kKey, fmt::format("is {}: the engine's Grok attention takes max({}, 0.0) as "
                                       "its logits soft cap, which fails on it; state a number",
                                       it->dump(), kKey));
  }
  KVTOPO_RETURN_IF_ERROR(ReadDense(r, kGrok, m));
  m.logits_soft_cap_source =
      it != r.json().end() ? fmt::format("{} {} in '{}', taken as max({}, 0.0)", r.Path(kKey),
                                         it->dump(), r.file(), it->dump())
                           : fmt::format("the engine's Grok default {} 30.0; '{}' states none",
                                         r.Path(kKey), r.file());
  return Status::Ok();
}

// Baichuan (baichuan.py): BaiChuanForCausalLM (Baichuan-7B) always runs RoPE;
// BaichuanForCausalLM runs RoPE at hidden_size 4096 and ALiBi otherwise (Baichuan-13B,
// Baichuan2-13B), whose attention is built without the cache config: it caches in the model's
// dtype and takes no cache-wide window.
template <bool kAlibiUnless4096>
Status ReadBaichuanAs(const ConfigReader& r, ModelDescription& m) {
  int64_t hidden = 4096;
  if (kAlibiUnless4096) {
    KVTOPO_ASSIGN_OR_RETURN(hidden, r.IntIn("hidden_size", 1, kMaxModelDim));
  }
  if (hidden == 4096) return ReadDense(r, kBaichuan, m);
  nlohmann::json filled = r.json();
  filled.erase("sliding_window");  // no cache config: no cache-wide window
  KVTOPO_RETURN_IF_ERROR(ReadDense(r.Over(filled), kBaichuan, m));
  KVTOPO_ASSIGN_OR_RETURN(m.text_sliding_window, r.IntInOr("sliding_window", 0, 0, kMaxModelLen));
  m.cache_dtype_auto = true;
  m.alibi_source = fmt::format("BaichuanForCausalLM at {} {} in '{}', RoPE only at 4096",
                               r.Path("hidden_size"), hidden, r.file());
  return Status::Ok();
}

// BLOOM (BloomForCausalLM, bloom.py): BloomConfig names the layers n_layer (2) and the heads
// n_head (8); hidden_size (64) is n_embed when the config states that. Every layer multi-head of
// hidden_size / heads; the class has no length field.
constexpr DenseFamily kBloom{.name = "BLOOM",
                             .default_positions = kAnyLengthField,
                             .reads_kv_heads = false,
                             .reads_head_dim = false,
                             .windows = DenseWindows::kUniform};
Status ReadBloom(const ConfigReader& r, ModelDescription& m) {
  const std::array<ClassField, 3> fields = {{
      {"num_hidden_layers", "n_layer", 2, kMaxLayers},
      {"num_attention_heads", "n_head", 8, kMaxModelDim},
      {"hidden_size", "n_embed", 64, kMaxModelDim},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  KVTOPO_RETURN_IF_ERROR(ReadDense(r.Over(filled), kBloom, m));
  m.alibi_source = "BLOOM's attention, which always runs ALiBi";
  return Status::Ok();
}

// MPT (MPTForCausalLM, MptForCausalLM; mpt.py) and DBRX (DbrxForCausalLM, dbrx.py): MptConfig and
// DbrxConfig name hidden_size d_model (2048), the heads n_heads (16), the layers n_layers (24) and
// the length max_seq_len (2048); heads of d_model / n_heads. K/V heads: attn_config.kv_n_heads
// (DBRX: 1 when absent). MPT's model asserts attn_config.alibi (true by default) and not
// prefix_lm (false).
constexpr DenseFamily kMpt{.name = "MPT",
                           .default_positions = kAnyLengthField,
                           .reads_kv_heads = false,
                           .reads_head_dim = false,
                           .windows = DenseWindows::kUniform};
constexpr DenseFamily kDbrx{
    .name = "DBRX", .reads_head_dim = false, .windows = DenseWindows::kUniform};
Status FillMptFields(const ConfigReader& r, nlohmann::json& filled) {
  const std::array<ClassField, 4> fields = {{
      {"hidden_size", "d_model", 2048, kMaxModelDim},
      {"num_attention_heads", "n_heads", 16, kMaxModelDim},
      {"num_hidden_layers", "n_layers", 24, kMaxLayers},
      {"max_seq_len", nullptr, 2048, kMaxModelLen},
  }};
  return FillClassFields(r, fields, filled);
}
Status ReadMpt(const ConfigReader& r, ModelDescription& m) {
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillMptFields(r, filled));
  if (r.Has("attn_config")) {
    KVTOPO_ASSIGN_OR_RETURN(const ConfigReader attn, r.Object("attn_config"));
    KVTOPO_ASSIGN_OR_RETURN(const bool alibi, attn.BoolOr("alibi", true));
    if (!alibi) {
      return attn.Invalid("alibi", "is false: the engine's MPT model runs ALiBi only");
    }
    KVTOPO_ASSIGN_OR_RETURN(const bool prefix_lm, attn.BoolOr("prefix_lm", false));
    if (prefix_lm) {
      return attn.Invalid("prefix_lm", "is true: the engine's MPT model does not run a prefix LM");
    }
    if (attn.Has("kv_n_heads")) {
      KVTOPO_ASSIGN_OR_RETURN(const int64_t kv, attn.IntIn("kv_n_heads", 1, kMaxModelDim));
      KVTOPO_ASSIGN_OR_RETURN(const int64_t heads,
                              r.Over(filled).IntIn("num_attention_heads", 1, kMaxModelDim));
      if (kv != heads) {
        return attn.Invalid(
            "kv_n_heads",
            fmt::format("is {} of {} heads: whether the engine's MPT layers read it depends on "
                        "the Transformers version (MptAttentionConfig drops it before 5.x), so "
                        "kvtopo does not plan it",
                        kv, heads));
      }
    }
  }
  KVTOPO_RETURN_IF_ERROR(ReadDense(r.Over(filled), kMpt, m));
  m.alibi_source = "MPT's attention, which runs ALiBi only";
  return Status::Ok();
}
Status ReadDbrx(const ConfigReader& r, ModelDescription& m) {
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillMptFields(r, filled));
  if (!r.Has("max_position_embeddings")) {  // DbrxConfig's attribute_map: one field
    KVTOPO_ASSIGN_OR_RETURN(filled["max_position_embeddings"],
                            r.Over(filled).IntIn("max_seq_len", 1, kMaxModelLen));
  }
  int64_t kv = 1;
  if (r.Has("attn_config")) {
    KVTOPO_ASSIGN_OR_RETURN(const ConfigReader attn, r.Object("attn_config"));
    KVTOPO_ASSIGN_OR_RETURN(kv, attn.IntInOr("kv_n_heads", 1, 1, kMaxModelDim));
  }
  filled["num_key_value_heads"] = kv;
  return ReadDense(r.Over(filled), kDbrx, m);
}

// ChatGLM (ChatGLMModel, ChatGLMForConditionalGeneration; the fork's chatglm.py and its
// ChatGLMConfig): the layers are num_layers (28), hidden 4096 over 32 heads of hidden_size /
// heads; K/V heads multi_query_group_num (1) when multi_query_attention (false), else every head.
// The class sets max_position_embeddings to seq_length (2048) whatever the config states.
constexpr DenseFamily kChatGlm{
    .name = "ChatGLM", .reads_head_dim = false, .windows = DenseWindows::kUniform};
Status ReadChatGlm(const ConfigReader& r, ModelDescription& m) {
  const std::array<ClassField, 4> fields = {{
      {"num_hidden_layers", "num_layers", 28, kMaxLayers},
      {"hidden_size", nullptr, 4096, kMaxModelDim},
      {"num_attention_heads", nullptr, 32, kMaxModelDim},
      {"seq_length", nullptr, 2048, kMaxModelLen},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  KVTOPO_ASSIGN_OR_RETURN(filled["max_position_embeddings"],
                          r.Over(filled).IntIn("seq_length", 1, kMaxModelLen));
  const ConfigReader c = r.Over(filled);
  KVTOPO_ASSIGN_OR_RETURN(const bool mqa, c.BoolOr("multi_query_attention", false));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t heads, c.IntIn("num_attention_heads", 1, kMaxModelDim));
  int64_t kv = heads;
  if (mqa) {
    KVTOPO_ASSIGN_OR_RETURN(kv, c.IntInOr("multi_query_group_num", 1, 1, kMaxModelDim));
  }
  filled["num_key_value_heads"] = kv;
  return ReadDense(r.Over(filled), kChatGlm, m);
}

// Step 3's text model (Step3TextForCausalLM; the fork's step3_text.py and Step3TextConfig): every
// layer one K/V head (replicated on every rank) of head_dim (256 when absent), whatever
// num_attention_groups says; the length is max_seq_len (65536), the class having no
// max_position_embeddings.
constexpr DenseFamily kStep3Text{.name = "Step 3",
                                 .default_positions = kAnyLengthField,
                                 .absent_head_dim = 256,
                                 .windows = DenseWindows::kUniform};
Status ReadStep3Text(const ConfigReader& r, ModelDescription& m) {
  const std::array<ClassField, 1> fields = {{{"max_seq_len", nullptr, 65536, kMaxModelLen}}};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  filled["num_key_value_heads"] = 1;
  return ReadDense(r.Over(filled), kStep3Text, m);
}

// Step-1 (Step1ForCausalLM, step1.py; its config class comes with the checkpoint): K/V heads
// num_attention_groups, else num_key_value_heads (one for null or less; a config stating neither
// is refused, its class's default deciding); heads of hidden_size / heads.
constexpr DenseFamily kStep1{.name = "Step-1",
                             .default_positions = kAnyLengthField,
                             .reads_head_dim = false,
                             .windows = DenseWindows::kUniform};
Status ReadStep1(const ConfigReader& r, ModelDescription& m) {
  if (!r.json().contains("num_attention_groups") && !r.json().contains("num_key_value_heads")) {
    return r.Invalid("num_attention_groups",
                     "is missing, as is num_key_value_heads: the checkpoint's config class then "
                     "decides the K/V heads; state one");
  }
  // The first field the config holds decides, null included (getattr's default is not taken).
  const char* key =
      r.json().contains("num_attention_groups") ? "num_attention_groups" : "num_key_value_heads";
  int64_t kv = 1;
  if (r.Has(key)) {
    KVTOPO_ASSIGN_OR_RETURN(kv, r.IntIn(key, -kMaxModelDim, kMaxModelDim));
  }
  nlohmann::json filled = r.json();
  filled["num_key_value_heads"] = std::max<int64_t>(kv, 1);
  // Its attention passes use_alibi_sqrt=True, which Attention.__init__ refuses on a backend
  // without supports_alibi_sqrt (Triton attention alone) after selecting it: the engine's
  // automatic selection (FlashAttention or FlashInfer first) fails too.
  m.required_backend = "TRITON_ATTN";
  m.required_backend_reason = "has attention layers with square-root ALiBi slopes (use_alibi_sqrt)";
  m.required_backend_failure = "raises ('use_alibi_sqrt is not supported by backend')";
  // Its ALiBi is not recorded as alibi_source: that check comes first, before any impl is built.
  return ReadDense(r.Over(filled), kStep1, m);
}

// Ouro (OuroForCausalLM, ouro.py; its config class, Qwen2's, comes with the checkpoint): each
// layer runs total_ut_steps (4) times, each time with an attention of its own, so the model has
// total_ut_steps x num_hidden_layers cached layers (layer ut x L + i), heads of hidden_size /
// heads.
constexpr DenseFamily kOuro{.name = "Ouro",
                            .absent_kv_heads = kMultiHead,
                            .reads_head_dim = false,
                            .windows = DenseWindows::kQwen};
Status ReadOuro(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadDense(r, kOuro, m));
  const int64_t n = static_cast<int64_t>(m.layers.size());
  KVTOPO_ASSIGN_OR_RETURN(const int64_t steps, r.IntInOr("total_ut_steps", 4, 1, kMaxLayers / n));
  for (int64_t ut = 1; ut < steps; ++ut) {
    for (int64_t i = 0; i < n; ++i) {
      RawLayer layer = m.layers[static_cast<size_t>(i)];
      layer.name = LayerName(ut * n + i, "self_attn");
      m.layers.push_back(std::move(layer));
    }
  }
  return Status::Ok();
}

// IQuest Loop-Coder (IQuestLoopCoderForCausalLM, iquest_loopcoder.py; its config class comes with
// the checkpoint: 80 layers, 40 heads, 8 K/V heads (null: the heads), hidden 5120, 8192
// positions, loop_num 2, loop_window_size 64): each layer runs loop_num times, each run with an
// attention of its own, "model.layers.{k x L + i}". The first run's layers take the config's
// sliding_window, if any (on every layer); the later runs' layers slide over loop_window_size
// tokens, which the model sets itself. Heads of hidden_size / heads, whatever head_dim says.
constexpr DenseFamily kLoopCoder{.name = "IQuest Loop-Coder",
                                 .default_positions = 8192,
                                 .absent_kv_heads = 8,
                                 .reads_head_dim = false,
                                 .windows = DenseWindows::kUniform,
                                 .window_on_all_layers = true};
Status ReadLoopCoder(const ConfigReader& r, ModelDescription& m) {
  const std::array<ClassField, 3> fields = {{
      {"num_hidden_layers", nullptr, 80, kMaxLayers},
      {"num_attention_heads", nullptr, 40, kMaxModelDim},
      {"hidden_size", nullptr, 5120, kMaxModelDim},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  if (r.IsNull("num_key_value_heads"))
    filled["num_key_value_heads"] = filled["num_attention_heads"];
  KVTOPO_RETURN_IF_ERROR(ReadDense(r.Over(filled), kLoopCoder, m));
  const int64_t n = static_cast<int64_t>(m.layers.size());
  KVTOPO_ASSIGN_OR_RETURN(const int64_t loops, r.IntInOr("loop_num", 2, 1, kMaxLayers / n));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, r.IntInOr("loop_window_size", 64, 1, kMaxModelLen));
  std::vector<RawLayer> layers;
  for (int64_t i = 0; i < n; ++i) {
    layers.push_back(m.layers[static_cast<size_t>(i)]);
    for (int64_t k = 1; k < loops; ++k) {
      RawLayer layer =
          KvAttentionLayer(k * n + i, m, m.layers[static_cast<size_t>(i)].head_size, window);
      layer.keeps_window = true;
      layers.push_back(std::move(layer));
    }
  }
  m.layers = std::move(layers);
  return Status::Ok();
}

// GritLM (the fork's gritlm.py): registered as a generative and as a pooling model, and the
// engine's default runner checks pooling first, so it serves GritLM as a pooling model, whose
// encoder-only attention keeps no KV cache. Under --runner generate it runs its Llama layers
// (its reader row's read_generating).
Status ReadGritLm(const ConfigReader& r, ModelDescription&) {
  return r.Invalid("architectures",
                   "names GritLM, which the engine serves as a pooling model by default, with no "
                   "KV cache; kvtopo plans generation launches: pass --runner generate to plan "
                   "its Llama layers generating");
}

// PLaMo 3 (Plamo3ForCausalLM; the fork's plamo3.py at 28be48fa9, whose config class comes with
// the checkpoint): every layer is K/V attention ("model.layers.i.mixer.attn") of
// num_key_value_heads (4) heads of head_dim (128), windowed by interleaved_sliding_window[i],
// which the class derives: layer i is full when (i + 1) % sliding_window_pattern (8) is 0, else it
// slides over window_size. Published versions of the class default window_size to 2048 or to 128
// and differ in how they read RoPE scaling, so a config must state window_size, and one with a
// rope_scaling_factor other than 1 is not planned. The windows are the model's own: the engine's
// --disable-sliding-window leaves them. Other defaults: 32 layers, 32 heads, 2048 positions.
Status ReadPlamo3(const ConfigReader& r, ModelDescription& m) {
  if (r.Has("rope_scaling_factor")) {
    const nlohmann::json& factor = r.json()["rope_scaling_factor"];
    if (!factor.is_number() || factor.get<double>() != 1) {
      return r.Invalid("rope_scaling_factor",
                       fmt::format("is {}: the length the engine derives from it depends on the "
                                   "version of PLaMo 3's config class; kvtopo does not plan it",
                                   factor.dump()));
    }
  }
  const std::array<ClassField, 2> fields = {{
      {"num_hidden_layers", nullptr, 32, kMaxLayers},
      {"num_attention_heads", nullptr, 32, kMaxModelDim},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  const ConfigReader c = r.Over(filled);
  KVTOPO_RETURN_IF_ERROR(ReadCommon(c, m, /*default_positions=*/2048));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(c));
  KVTOPO_RETURN_IF_ERROR(ReadKvHeads(c, 4, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, c.IntInOr("head_dim", 128, 1, kMaxModelDim));
  if (!c.Has("window_size")) {
    return c.Invalid("window_size",
                     "is missing: the published versions of PLaMo 3's config class default it to "
                     "2048 or to 128; state it");
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, Positive(c, "window_size", kMaxModelLen));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t pattern,
                          c.IntInOr("sliding_window_pattern", 8, 1, kMaxLayers));
  std::vector<int64_t> windows;
  for (int64_t i = 0; i < n; ++i) windows.push_back((i + 1) % pattern == 0 ? 0 : window);
  // A saved config may carry the list the class derived; it must be that list.
  if (c.Has("interleaved_sliding_window")) {
    const nlohmann::json& stated = c.json()["interleaved_sliding_window"];
    bool same = stated.is_array() && static_cast<int64_t>(stated.size()) == n;
    for (int64_t i = 0; same && i < n; ++i) {
      const nlohmann::json& w = stated[static_cast<size_t>(i)];
      same =
          windows[i] == 0 ? w.is_null() : w.is_number_integer() && w.get<int64_t>() == windows[i];
    }
    if (!same) {
      return c.Invalid("interleaved_sliding_window",
                       fmt::format("is not the list window_size {} and sliding_window_pattern {} "
                                   "derive for {} layers (null at every {}th layer, the window "
                                   "elsewhere); kvtopo does not plan another",
                                   window, pattern, n, pattern));
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    RawLayer layer = NamedAttention(LayerName(i, "mixer.attn"), i, m, head, windows[i]);
    layer.keeps_window = true;
    m.layers.push_back(std::move(layer));
  }
  return Status::Ok();
}

// Bailing MoE V2.5 (BailingMoeV2_5ForCausalLM: Ling 2.5 and 2.6, Ring 2.5; the fork's
// bailing_moe_linear.py at 28be48fa9, whose config class comes with the checkpoint: 20 layers,
// 16 heads, head_dim 128 (null: hidden_size (2048) / heads), 32768 positions, layer_group_size 5,
// group_norm_size 4, kv_lora_rank 512, qk_rope_head_dim 64): layer i is MLA
// ("model.layers.i.self_attn") when (i + 1) % layer_group_size is 0, else lightning (linear)
// attention keeping one state (heads / TP, head_dim, head_dim) in the conv dtype. The engine
// aligns the hybrid block to an MLA row only under model type bailing_hybrid (its MLA list), so
// another model type is not planned; nor is a config of one layer kind (BothLayerKinds). TP must
// divide group_norm_size. No Mamba prefix caching (mode align with caching), no MTP model.
Status ReadBailingV25(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, r.StringOr("model_type", ""));
  if (type != "bailing_hybrid") {
    return r.Invalid("model_type",
                     fmt::format("is '{}': the engine plans Bailing MoE V2.5's MLA layers as MLA "
                                 "only under model type bailing_hybrid, and kvtopo does not plan "
                                 "them under another",
                                 type));
  }
  const std::array<ClassField, 3> fields = {{
      {"num_hidden_layers", nullptr, 20, kMaxLayers},
      {"num_attention_heads", nullptr, 16, kMaxModelDim},
      {"hidden_size", nullptr, 2048, kMaxModelDim},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  const ConfigReader c = r.Over(filled);
  KVTOPO_RETURN_IF_ERROR(ReadCommon(c, m, /*default_positions=*/32768));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(c));
  int64_t head = 128;
  if (c.json().contains("head_dim")) {
    KVTOPO_ASSIGN_OR_RETURN(head, ReadHeadSize(c, m, /*use_head_dim=*/true));
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t group, c.IntInOr("layer_group_size", 5, 0, kMaxLayers));
  KVTOPO_ASSIGN_OR_RETURN(m.tp_divides_group_norm,
                          c.IntInOr("group_norm_size", 4, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t lora, c.IntInOr("kv_lora_rank", 512, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t rope, c.IntInOr("qk_rope_head_dim", 64, 0, kMaxModelDim));
  RecordMlaConfigDims(c, m);
  const LinearAttentionDims linear{.num_heads = m.num_attention_heads, .head_dim = head};
  int64_t mla = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (group > 0 && (i + 1) % group != 0) {
      m.layers.push_back(RawLayer{.name = LayerName(i, "self_attn"),
                                  .type = LayerType::kLinearAttention,
                                  .linear_attention = linear});
    } else {
      AddMla(m, i, MlaRow{lora + rope, rope}, /*indexer_head=*/0, /*mtp=*/false);
      ++mla;
    }
  }
  m.mtp_unavailable = fmt::format(
      "the engine has no MTP model for {} (its loader drops the checkpoint's MTP weights)",
      m.architecture);
  return BothLayerKinds(r, "layer_group_size", mla, n, "Bailing MoE V2.5", "linear-attention");
}

// Laguna (LagunaForCausalLM; the fork's laguna.py over its own LagunaConfig at 28be48fa9: 40
// layers, 48 heads, 8 K/V heads of 128 (null head_dim: hidden_size / heads), 131072 positions,
// no sliding_window, no layer_types): layer i slides over sliding_window when layer_types[i] is
// sliding_attention and a window is stated; every other layer is full attention, since the model
// clears the cache-wide window. The config class rewrites RoPE parameters given per layer type
// into a default entry without a factor, so those leave the length at max_position_embeddings.
// num_attention_heads_per_layer (Laguna-XS: 64 heads on its full layers, 48 on its sliding ones)
// gives layer i entry i's query heads, which TP must divide (LagunaAttention asserts it), and,
// with a null head_dim, its head size: hidden_size / those heads.
constexpr DenseFamily kLaguna{
    .name = "Laguna", .default_positions = 131072, .absent_kv_heads = 8, .absent_head_dim = 128};
Status ReadLaguna(const ConfigReader& r, ModelDescription& m) {
  const std::array<ClassField, 2> fields = {{
      {"num_hidden_layers", nullptr, 40, kMaxLayers},
      {"num_attention_heads", nullptr, 48, kMaxModelDim},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  const bool windows = r.Has("layer_types") && r.Has("sliding_window");
  if (!windows) {
    filled.erase("layer_types");
    filled.erase("sliding_window");
  }
  if (r.Has("rope_parameters") && PerLayerTypeRope(r.json()["rope_parameters"])) {
    filled.erase("rope_parameters");
  }
  // With per-layer heads and a null head_dim, each layer's head size comes from its own heads.
  if (r.Has("num_attention_heads_per_layer") && r.IsNull("head_dim")) filled["head_dim"] = 1;
  KVTOPO_RETURN_IF_ERROR(ReadDense(r.Over(filled), kLaguna, m));
  if (r.Has("num_attention_heads_per_layer")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<int64_t> heads,
                            r.IntList("num_attention_heads_per_layer"));
    if (heads.size() < m.layers.size()) {
      return r.Invalid("num_attention_heads_per_layer",
                       fmt::format("has {} entries for {} layers: the engine reads layer i's "
                                   "heads at entry i",
                                   heads.size(), m.layers.size()));
    }
    const bool head_from_heads = r.IsNull("head_dim");
    int64_t hidden = 0;  // read only where a layer's head size comes from it
    if (head_from_heads) {
      KVTOPO_ASSIGN_OR_RETURN(hidden, Positive(r.Over(filled), "hidden_size"));
    }
    for (size_t i = 0; i < m.layers.size(); ++i) {
      const int64_t h = heads[i];
      if (h <= 0 || h > kMaxModelDim) {
        return r.Invalid("num_attention_heads_per_layer",
                         fmt::format("entry {} is {}: a layer's attention heads must be 1 to {}", i,
                                     h, kMaxModelDim));
      }
      if (head_from_heads && hidden % h != 0) {
        return r.Invalid("num_attention_heads_per_layer",
                         fmt::format("entry {} is {}, which does not divide hidden_size {}, and "
                                     "with a null head_dim the layer's head size is hidden_size / "
                                     "its heads",
                                     i, h, hidden));
      }
      m.layers[i].num_q_heads_total = h;
      if (head_from_heads) m.layers[i].head_size = m.layers[i].head_size_v = hidden / h;
    }
  }
  // A stated window no layer uses still caps the length under --disable-sliding-window.
  if (!windows) {
    KVTOPO_ASSIGN_OR_RETURN(m.text_sliding_window, r.IntInOr("sliding_window", 0, 0, kMaxModelLen));
  }
  // Sinks on the layers layer_types names sliding, window or not, when the config asks for them.
  if (r.Has("swa_attention_sink_enabled") &&
      internal::PythonTruth(r.json()["swa_attention_sink_enabled"]) && r.Has("layer_types") &&
      r.json()["layer_types"].is_array()) {
    const nlohmann::json& types = r.json()["layer_types"];
    for (size_t i = 0; i < m.layers.size() && i < types.size(); ++i) {
      m.layers[i].has_sinks = types[i] == "sliding_attention";
    }
  }
  return Status::Ok();
}

// OLMo Hybrid (OlmoHybridForCausalLM; the fork's olmo_hybrid.py over its own OlmoHybridConfig at
// 28be48fa9): layer i is full attention ("model.layers.i.self_attn") or Gated DeltaNet
// ("model.layers.i.linear_attn") per layer_types, which the class derives when absent: full at
// i % 4 == 3, and the last layer full if that leaves none. Attention: num_key_value_heads (null
// or absent: the heads) heads of hidden_size / heads. GDN: linear_num_key_heads and
// linear_num_value_heads (the heads), linear_key_head_dim (0.75 x hidden_size / key heads),
// linear_value_head_dim (twice the key's), linear_conv_kernel_dim (4). The class's defaults: 32
// layers, 30 heads, hidden 3840, 65536 positions. It has no Mamba prefix caching and no MTP; the
// class refuses a config of one layer kind, as does the model a linear_use_gate of false.
Status ReadOlmoHybrid(const ConfigReader& r, ModelDescription& m) {
  const std::array<ClassField, 3> fields = {{
      {"num_hidden_layers", nullptr, 32, kMaxLayers},
      {"num_attention_heads", nullptr, 30, kMaxModelDim},
      {"hidden_size", nullptr, 3840, kMaxModelDim},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  const ConfigReader c = r.Over(filled);
  KVTOPO_ASSIGN_OR_RETURN(const bool gate, c.BoolOr("linear_use_gate", true));
  if (!gate) {
    return c.Invalid("linear_use_gate",
                     "is false: the engine's OLMo Hybrid model asserts a gated DeltaNet");
  }
  KVTOPO_RETURN_IF_ERROR(ReadCommon(c, m, /*default_positions=*/65536));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(c));
  KVTOPO_RETURN_IF_ERROR(ReadKvHeads(c, kMultiHead, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, ReadHeadSize(c, m, /*use_head_dim=*/false));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t hidden, Positive(c, "hidden_size"));
  GdnDims gdn;
  gdn.num_k_heads = m.num_attention_heads;
  gdn.num_v_heads = m.num_attention_heads;
  if (c.Has("linear_num_key_heads")) {
    KVTOPO_ASSIGN_OR_RETURN(gdn.num_k_heads, Positive(c, "linear_num_key_heads"));
  }
  if (c.Has("linear_num_value_heads")) {
    KVTOPO_ASSIGN_OR_RETURN(gdn.num_v_heads, Positive(c, "linear_num_value_heads"));
  }
  gdn.head_k_dim = 3 * hidden / (4 * gdn.num_k_heads);  // int(0.75 x hidden / key heads)
  if (c.Has("linear_key_head_dim")) {
    KVTOPO_ASSIGN_OR_RETURN(gdn.head_k_dim, Positive(c, "linear_key_head_dim"));
  } else if (gdn.head_k_dim == 0) {
    return c.Invalid("linear_num_key_heads",
                     fmt::format("is {}: 0.75 x hidden_size {} / it leaves the key heads no "
                                 "width; state linear_key_head_dim",
                                 gdn.num_k_heads, hidden));
  }
  gdn.head_v_dim = 2 * gdn.head_k_dim;
  if (c.Has("linear_value_head_dim")) {
    KVTOPO_ASSIGN_OR_RETURN(gdn.head_v_dim, Positive(c, "linear_value_head_dim"));
  }
  KVTOPO_ASSIGN_OR_RETURN(gdn.conv_kernel, c.IntInOr("linear_conv_kernel_dim", 4, 1, kMaxModelDim));
  std::vector<bool> full;
  if (c.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(full, TwoKindLayers(c, n, "full_attention", "linear_attention"));
  } else {
    for (int64_t i = 0; i < n; ++i) full.push_back(i % 4 == 3);
    if (std::none_of(full.begin(), full.end(), [](bool f) { return f; })) full.back() = true;
  }
  int64_t attention = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (full[static_cast<size_t>(i)]) {
      m.layers.push_back(KvAttentionLayer(i, m, head, 0));
      ++attention;
    } else {
      m.layers.push_back(
          RawLayer{.name = LayerName(i, "linear_attn"), .type = LayerType::kGdn, .gdn = gdn});
    }
  }
  return BothLayerKinds(r, "layer_types", attention, n, "OLMo Hybrid", "Gated DeltaNet");
}

// openPangu Embedded (PanguEmbeddedForCausalLM, openpangu.py; its PanguEmbeddedConfig comes with
// the checkpoint: 8 K/V heads, 32768 positions): K/V attention of head_dim, else hidden_size /
// heads, each layer windowed as interleaved_sliding_window says (ApplyPanguWindows); with
// param_sink_number above 0, the sink attention (ReadPanguSink). Its MLA variant is not planned.
constexpr DenseFamily kPanguEmbedded{.name = "openPangu Embedded",
                                     .default_positions = 32768,
                                     .absent_kv_heads = 8,
                                     .windows = DenseWindows::kUniform};
// openPangu's interleaved_sliding_window, which its attentions read whenever the config has the
// attribute (hasattr): an int for every layer, or a list read at layer index mod its length;
// anything else (null included) raises, and an empty list cannot be indexed. Null when absent.
Result<nlohmann::json> PanguWindows(const ConfigReader& r) {
  if (!r.json().contains("interleaved_sliding_window")) return nlohmann::json();
  const nlohmann::json& w = r.json()["interleaved_sliding_window"];
  if (w.is_array() && w.empty()) {
    return r.Invalid("interleaved_sliding_window",
                     "is an empty list: the engine reads layer i's window at i mod the list's "
                     "length");
  }
  if (!w.is_array() && !w.is_number_integer() && !w.is_boolean()) {
    return r.Invalid(
        "interleaved_sliding_window",
        fmt::format("is {}: the engine's openPangu attention takes an int or a list", w.dump()));
  }
  return w;
}
// openPangu's K/V layers without sinks (OpenPanguEmbeddedAttention): layer i's window is the
// int, or entry i mod the list's length; a null entry leaves the layer the cache-wide window (its
// Attention's per_layer_sliding_window None). A window the model gives survives
// --disable-sliding-window.
Status ApplyPanguWindows(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json w, PanguWindows(r));
  if (w.is_null()) return Status::Ok();
  int64_t i = 0;
  for (RawLayer& layer : m.layers) {
    const size_t k = w.is_array() ? static_cast<size_t>(i % static_cast<int64_t>(w.size())) : 0;
    const nlohmann::json& entry = w.is_array() ? w[k] : w;
    ++i;
    if (entry.is_null()) continue;
    const std::optional<int64_t> window = JsonIntIn(entry, 1, kMaxModelLen);
    if (!window) {
      return r.Invalid("interleaved_sliding_window",
                       fmt::format("{} is {}: kvtopo plans a window of 1 to {} tokens, or null "
                                   "for the cache-wide one",
                                   w.is_array() ? fmt::format("entry {}", k) : "the window",
                                   entry.dump(), kMaxModelLen));
    }
    layer.type = LayerType::kSlidingWindow;
    layer.sliding_window = *window;
    layer.keeps_window = true;
  }
  return Status::Ok();
}
// openPangu's sink attention (OpenPanguSinkAttention in openpangu.py at 28be48fa9), which the
// decoder layers build when param_sink_number is above 0 and the MLA fields are absent: keys
// qk_nope_dim + qk_rope_dim wide, values v_channels, num_key_value_heads K/V heads
// (num_attention_heads when absent), on FLASH_ATTN_DIFFKV whatever the selection, in the cache
// config's dtype. Every layer caches a SinkFullAttentionSpec of param_sink_number sink tokens,
// full attention without a window: interleaved_sliding_window (an int, or a list read at
// layer index mod its length; the engine refuses anything else) reaches the kernel only. The
// layers raise for is_causal false, and split the K/V heads over TP without replicating them.
Status ReadPanguSink(const ConfigReader& r, const DenseFamily& f, int64_t sinks,
                     ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, f.default_positions));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadKvHeads(r, kMultiHead, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t nope, r.IntIn("qk_nope_dim", 0, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t rope, r.IntIn("qk_rope_dim", 0, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t v_channels, Positive(r, "v_channels"));
  if (nope + rope == 0) {
    return r.Invalid("qk_rope_dim",
                     "is 0 with qk_nope_dim 0: the sink attention's keys, "
                     "qk_nope_dim + qk_rope_dim wide, would be empty");
  }
  if (r.json().contains("is_causal") && !internal::PythonTruth(r.json()["is_causal"])) {
    return r.Invalid("is_causal",
                     fmt::format("is {}: the engine's openPangu sink attention runs causal only "
                                 "(it raises 'is not support for attention with sink')",
                                 r.json()["is_causal"].dump()));
  }
  KVTOPO_RETURN_IF_ERROR(PanguWindows(r).status());  // read by the kernel, not the cache
  for (int64_t i = 0; i < n; ++i) {
    RawLayer layer = KvAttentionLayer(i, m, nope + rope, 0);
    layer.head_size_v = v_channels;
    layer.sink_tokens = sinks;
    layer.built_backend = "FLASH_ATTN_DIFFKV";
    m.layers.push_back(std::move(layer));
  }
  m.built_backend_reason = "openPangu's sink attention layers";
  m.kv_heads_split_only = true;
  return Status::Ok();
}
Result<int64_t> PanguSinkTokens(const ConfigReader& r) {
  return r.IntInOr("param_sink_number", 0, 0, kMaxModelLen);
}
// The engine picks openPangu's MLA when the config has the four MLA attributes (hasattr), so a
// key that is present counts even when null.
bool HasPanguMlaFields(const ConfigReader& r) {
  return r.json().contains("qk_nope_head_dim") && r.json().contains("qk_rope_head_dim") &&
         r.json().contains("v_head_dim") && r.json().contains("kv_lora_rank");
}
Status ReadPanguEmbedded(const ConfigReader& r, ModelDescription& m) {
  if (HasPanguMlaFields(r)) {
    return r.Invalid("kv_lora_rank",
                     "is present with the other MLA fields: kvtopo does not plan openPangu's MLA "
                     "attention");
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t sinks, PanguSinkTokens(r));
  if (sinks > 0) return ReadPanguSink(r, kPanguEmbedded, sinks, m);
  KVTOPO_RETURN_IF_ERROR(ReadDense(r, kPanguEmbedded, m));
  return ApplyPanguWindows(r, m);
}

// openPangu's MoE models (PanguUltraMoEForCausalLM, PanguProMoEV2ForCausalLM; openpangu.py and
// openpangu_mtp.py at 28be48fa9, whose config classes come with the checkpoint and default
// nothing): the decoder layers of openPangu Embedded, MLA when the config has
// qk_nope_head_dim, qk_rope_head_dim, v_head_dim and kv_lora_rank. The MLA model is planned for
// model type pangu_ultra_moe (in the engine's MLA list), with its num_nextn_predict_layers MTP
// layers after the trunk, MLA too (the draft's model type pangu_ultra_moe_mtp is in the list as
// well). Without the MLA fields the layers are openPangu Embedded's, with no class defaults:
// K/V heads required, any length field (2048 tokens without one); with attention sinks (Pro MoE
// V2's param_sink_number) the sink attention (ReadPanguSink).
constexpr DenseFamily kPanguMoe{.name = "openPangu MoE",
                                .default_positions = kAnyLengthField,
                                .windows = DenseWindows::kUniform};
Status ReadPanguMoe(const ConfigReader& r, ModelDescription& m) {
  if (!HasPanguMlaFields(r)) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t sinks, PanguSinkTokens(r));
    if (sinks > 0) return ReadPanguSink(r, kPanguMoe, sinks, m);
    KVTOPO_RETURN_IF_ERROR(ReadDense(r, kPanguMoe, m));
    return ApplyPanguWindows(r, m);
  }
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, r.StringOr("model_type", ""));
  if (type != "pangu_ultra_moe") {
    return r.Invalid("model_type",
                     fmt::format("is '{}' with openPangu's MLA fields: the engine treats only "
                                 "model type pangu_ultra_moe as MLA, and kvtopo does not plan "
                                 "these MLA layers under another",
                                 type));
  }
  return ReadDeepseekMla(r, /*with_indexer=*/false, /*with_mtp=*/true, m);
}

// Sarvam MLA (SarvamMLAForCausalLM, sarvam.py): every layer builds MLA attention, whatever its
// model type (sarvam_mla, outside the engine's MLA list), with no MTP model.
Status ReadSarvamMla(const ConfigReader& r, ModelDescription& m) {
  return ReadDeepseekMla(r, /*with_indexer=*/false, /*with_mtp=*/false, m);
}

// A.X K1 (AXK1ForCausalLM, AXK1.py; DeepSeek-V3's layers): MLA when the engine's use_mla holds,
// i.e. the config's model type is AXK1 (in the engine's MLA list; Transformers' own class writes
// axk1, which is not) with a kv_lora_rank; otherwise every layer is K/V attention with one K/V
// head per attention head, of qk_nope_head_dim + qk_rope_head_dim (the values padded to it).
// No MTP model. A config with both qk dims 0 (plain multi-head attention) is not planned.
Status ReadAxk1(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, r.StringOr("model_type", ""));
  if (type == "AXK1" && r.Has("kv_lora_rank")) {
    return ReadDeepseekMla(r, /*with_indexer=*/false, /*with_mtp=*/false, m);
  }
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t nope, r.IntIn("qk_nope_head_dim", 0, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t rope, r.IntIn("qk_rope_head_dim", 0, kMaxModelDim));
  if (nope == 0 && rope == 0) {
    return r.Invalid("qk_rope_head_dim",
                     "is 0, as is qk_nope_head_dim: the engine then runs DeepSeek's multi-head "
                     "attention, which kvtopo does not plan for A.X K1");
  }
  m.num_kv_heads_total = m.num_attention_heads;
  for (int64_t i = 0; i < n; ++i) m.layers.push_back(KvAttentionLayer(i, m, nope + rope, 0));
  return Status::Ok();
}

// More of the engine's Llama and its like: TeleChat3 (the checkpoint's class: multi-head, head_dim
// 128, 2048 positions), Tele-FLM (teleflm.py, the checkpoint's class: the fields are required),
// HyperCLOVAX (hyperclovax.py: no per-layer window; multi-head, 2048), Param2 MoE (param2moe.py:
// no per-layer window; the fields are required; K/V heads split over TP, never replicated) and
// Sarvam MoE (sarvam.py, Bailing MoE's attention).
constexpr DenseFamily kTeleChat3{.name = "TeleChat3",
                                 .default_positions = 2048,
                                 .absent_kv_heads = kMultiHead,
                                 .absent_head_dim = 128};
constexpr DenseFamily kTeleFlm{.name = "Tele-FLM", .absent_kv_heads = kMultiHead};
constexpr DenseFamily kHyperClovax{.name = "HyperCLOVAX",
                                   .default_positions = 2048,
                                   .absent_kv_heads = kMultiHead,
                                   .windows = DenseWindows::kUniform};
constexpr DenseFamily kParam2Moe{.name = "Param2 MoE", .windows = DenseWindows::kUniform};
constexpr DenseFamily kSarvamMoe{.name = "Sarvam MoE", .windows = DenseWindows::kUniform};
// Param2 MoE's attention asserts that TP divides its K/V heads: no replication.
Status ReadParam2Moe(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadDense(r, kParam2Moe, m));
  m.kv_heads_split_only = true;
  return Status::Ok();
}

// HY V3 (HYV3ForCausalLM; the fork's hy_v3.py and hy_v3_mtp.py over its own HYV3Config at
// 28be48fa9): the engine's GQA layers on every layer, a stated sliding_window on all of them;
// HYV3Config's 80 layers, 64 heads, 8 K/V heads of 128 (null head_dim: hidden_size (4096) /
// heads) and 131072 positions. The MTP model builds num_nextn_predict_layers layers after the
// trunk, "model.layers.{80 + k}", each the trunk's attention.
constexpr DenseFamily kHyV3{.name = "HY V3",
                            .default_positions = 131072,
                            .absent_kv_heads = 8,
                            .absent_head_dim = 128,
                            .windows = DenseWindows::kUniform,
                            .mtp = true};
Status ReadHyV3(const ConfigReader& r, ModelDescription& m) {
  const std::array<ClassField, 3> fields = {{
      {"num_hidden_layers", nullptr, 80, kMaxLayers},
      {"num_attention_heads", nullptr, 64, kMaxModelDim},
      {"hidden_size", nullptr, 4096, kMaxModelDim},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, fields, filled));
  return ReadDense(r.Over(filled), kHyV3, m);
}

// LongCat-Flash (LongcatFlashForCausalLM; the fork's longcat_flash.py at 28be48fa9, whose
// FlashConfig re-reads the checkpoint's config class): every decoder layer runs two DeepSeek MLA
// attentions, "model.layers.i.self_attn.0" and "model.layers.i.self_attn.1" in that order (the
// engine's model type longcat_flash is in its MLA list), so 2 x num_hidden_layers MLA layers;
// num_hidden_layers is the checkpoint's num_layers when it states no other (FlashConfig, and the
// checkpoint's class, which aliases the one to the other). The MTP draft (longcat_flash_mtp.py,
// the draft's n_predict num_nextn_predict_layers or 1) builds one layer, "model.layers.{2n}",
// whatever that count, a DeepseekV2DecoderLayer under the draft's own model config: its type,
// longcat_flash_mtp, is not in the engine's MLA list (is_deepseek_mla), so use_mla is false and
// the layer is DeepseekV2Attention, which caches K and V of every query head (num_attention_heads
// K/V heads of qk_nope_head_dim + qk_rope_head_dim, the value padded to the key's width) on a K/V
// backend.
Status ReadLongcatFlash(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m));
  const bool stated = r.Has("num_hidden_layers");
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n,
                          stated ? NumLayers(r) : Positive(r, "num_layers", kMaxLayers / 2));
  if (n > kMaxLayers / 2) {
    return r.Invalid(
        stated ? "num_hidden_layers" : "num_layers",
        fmt::format("is {}: two attention layers each exceed {} layers", n, kMaxLayers));
  }
  KVTOPO_ASSIGN_OR_RETURN(const MlaRow row, ReadMlaRow(r, m));
  for (int64_t i = 0; i < n; ++i) {
    for (const char* j : {"0", "1"}) {
      m.layers.push_back(RawLayer{.name = fmt::format("model.layers.{}.self_attn.{}", i, j),
                                  .type = LayerType::kMla,
                                  .head_size = row.head_size,
                                  .mla_rope_dim = row.rope_dim});
    }
  }
  KVTOPO_ASSIGN_OR_RETURN(m.mtp_n_predict, r.IntInOr("num_nextn_predict_layers", 1, 1, kMaxLayers));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t nope, r.IntInOr("qk_nope_head_dim", 0, 0, kMaxModelDim));
  if (nope + row.rope_dim == 0) {
    m.mtp_unavailable = fmt::format(
        "LongCat-Flash's MTP layer with qk_nope_head_dim and qk_rope_head_dim 0 in '{}' runs "
        "DeepSeek's multi-head attention, which kvtopo does not plan for it",
        r.file());
    return Status::Ok();
  }
  RawLayer mtp{.name = LayerName(2 * n, "self_attn"),
               .type = LayerType::kAttention,
               .mtp = true,
               .num_kv_heads_total = m.num_attention_heads,
               .head_size = nope + row.rope_dim,
               .head_size_v = nope + row.rope_dim};
  m.layers.push_back(std::move(mtp));
  return Status::Ok();
}

// The engine reads a LongCat-Flash config with Transformers' LongcatFlashConfig unless it may
// load the checkpoint's own class (--trust-remote-code, and an auto_map naming an AutoConfig).
// Transformers' class defaults num_hidden_layers to 56 whatever num_layers is (its model iterates
// num_layers and sets num_hidden_layers to twice that), and the fork's FlashConfig takes that
// count: for a config stating only num_layers (LongCat-Flash-Chat's 28) the engine builds 56
// decoder layers and fails as it loads the checkpoint's weights, whose layers stop at num_layers
// (DefaultModelLoader: "Following weights were not initialized from checkpoint").
constexpr int64_t kTransformersLongcatHiddenLayers = 56;  // LongcatFlashConfig's default

Status CheckLongcatConfigClass(const ConfigReader& r, const ModelClassOptions& options) {
  const nlohmann::json& j = r.json();
  const auto map = j.find("auto_map");
  const bool own_class = map != j.end() && map->is_object() && map->contains("AutoConfig");
  if ((options.trust_remote_code && own_class) || r.Has("num_hidden_layers") ||
      !r.Has("num_layers")) {
    return Status::Ok();
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, Positive(r, "num_layers", kMaxLayers / 2));
  if (n == kTransformersLongcatHiddenLayers) return Status::Ok();
  return r.Invalid(
      "num_layers",
      fmt::format("is {} and num_hidden_layers is not stated: {} the engine reads the config "
                  "with Transformers' LongcatFlashConfig, whose num_hidden_layers defaults to {} "
                  "whatever num_layers is, so it builds {} decoder layers for a checkpoint of {} "
                  "layers and fails as it loads the weights ('Following weights were not "
                  "initialized from checkpoint'; a Transformers without that class refuses the "
                  "config instead); {}state num_hidden_layers {}",
                  n, own_class ? "without --trust-remote-code" : "with no AutoConfig in auto_map",
                  kTransformersLongcatHiddenLayers, kTransformersLongcatHiddenLayers, n,
                  own_class ? "pass --trust-remote-code (the checkpoint's class reads "
                              "num_layers) or "
                            : "",
                  n));
}

// Jais 2 (Jais2ForCausalLM): windows only from interleaved_sliding_window, which Jais2Config does
// not have; a config that adds it is not planned.
Status ReadJais2(const ConfigReader& r, ModelDescription& m) {
  if (r.Has("interleaved_sliding_window")) {
    return r.Invalid("interleaved_sliding_window",
                     "is set: Jais2Config has no such field, and kvtopo does not plan the "
                     "per-layer windows the engine's model would read from it");
  }
  return ReadDense(r, kJais2, m);
}

// MiMo-V2-Flash (MiMoV2FlashForCausalLM, MiMoV2ForCausalLM; the fork's mimo_v2.py): layer i is
// sliding-window attention when hybrid_layer_pattern[i] is 1 (swa_num_key_value_heads heads,
// keys swa_head_dim and values swa_v_head_dim wide, the window sliding_window_size; -1: none),
// else full attention (num_key_value_heads, head_dim, v_head_dim). Values default to the keys'
// width; where they differ the model's code builds the layer on FLASH_ATTN_DIFFKV itself (its
// Attention's attn_backend), which the engine's selection and --attention-backend never reach.
// The attention layers are built without the cache config, so they cache in the model's dtype. The
// fork builds no MTP draft for it (SpeculativeConfig maps only MiMo's), so its MTP layers keep no
// cache.
Status ReadMimoV2Flash(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(const std::vector<int64_t> pattern, r.IntList("hybrid_layer_pattern"));
  if (static_cast<int64_t>(pattern.size()) != n) {
    return r.Invalid("hybrid_layer_pattern",
                     fmt::format("has {} entries but num_hidden_layers is {}", pattern.size(), n));
  }
  struct Kind {
    int64_t kv_heads, head, head_v, window;
  };
  Kind full{}, swa{};
  KVTOPO_ASSIGN_OR_RETURN(full.kv_heads, Positive(r, "num_key_value_heads"));
  KVTOPO_ASSIGN_OR_RETURN(full.head, Positive(r, "head_dim"));
  KVTOPO_ASSIGN_OR_RETURN(full.head_v, r.IntInOr("v_head_dim", full.head, 1, kMaxModelDim));
  m.num_kv_heads_total = full.kv_heads;
  KVTOPO_RETURN_IF_ERROR(CheckKvHeadsDivide(r, m));
  const bool any_swa = std::find(pattern.begin(), pattern.end(), 1) != pattern.end();
  if (any_swa) {
    KVTOPO_ASSIGN_OR_RETURN(swa.kv_heads, Positive(r, "swa_num_key_value_heads"));
    KVTOPO_ASSIGN_OR_RETURN(swa.head, Positive(r, "swa_head_dim"));
    KVTOPO_ASSIGN_OR_RETURN(swa.head_v, r.IntInOr("swa_v_head_dim", swa.head, 1, kMaxModelDim));
    KVTOPO_ASSIGN_OR_RETURN(swa.window, r.IntIn("sliding_window_size", -1, kMaxModelLen));
    if (swa.window == 0) {
      return r.Invalid("sliding_window_size", "is 0: a window of no tokens (-1 turns it off)");
    }
    swa.window = std::max<int64_t>(swa.window, 0);
    m.text_sliding_window = swa.window;
  }
  const bool swa_sinks = r.Has("add_swa_attention_sink_bias") &&
                         internal::PythonTruth(r.json()["add_swa_attention_sink_bias"]);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = pattern[static_cast<size_t>(i)];
    if (p != 0 && p != 1) {
      return r.Invalid("hybrid_layer_pattern",
                       fmt::format("entry {} is {}; accepted: 0 (full attention), 1 (sliding "
                                   "window)",
                                   i, p));
    }
    const Kind& k = p == 1 ? swa : full;
    RawLayer layer = KvAttentionLayer(i, m, k.head, k.window);
    layer.num_kv_heads_total = k.kv_heads;
    layer.head_size_v = k.head_v;
    layer.has_sinks = p == 1 && swa_sinks;
    if (k.head_v != k.head) layer.built_backend = "FLASH_ATTN_DIFFKV";
    m.layers.push_back(std::move(layer));
  }
  m.built_backend_reason = "the layers whose values are narrower than their keys";
  m.cache_dtype_auto = true;
  return Status::Ok();
}

// Step-3.5-Flash (Step3p5ForCausalLM; the fork's step3p5.py, step3p5_mtp.py and its
// Step3p5Config at 28be48fa9):
// - Lengths: Step3p5Config has max_seq_len (4096 when absent) and max_position_embeddings (None),
//   and the engine takes the smallest length field the config has.
// - Layer i slides when layer_types[i] is sliding_attention (without layer_types, when i is
//   even), with the config's sliding_window; none without one. The config class keeps the first
//   num_hidden_layers entries of layer_types.
// - K/V heads num_attention_groups (8), head_dim (else hidden_size / heads); a layer whose type
//   is attention_other_setting's attention_type takes that setting's num_attention_groups and
//   head_dim. Only att_impl_type GQA builds.
// - MTP: num_nextn_predict_layers (0) decoder layers after the trunk, each reading
//   layer_types[its index]: with layer_types, past the kept entries, so the engine fails to build
//   them; without, layer n + j slides when n + j is even.
Status ReadStep3p5(const ConfigReader& r, ModelDescription& m) {
  nlohmann::json filled = r.json();
  if (!r.Has("max_seq_len")) filled["max_seq_len"] = 4096;
  // Step3p5Config keeps max_position_embeddings (None) beside max_seq_len (4096): without the
  // former the engine's length is the latter, as here.
  if (!r.Has("max_position_embeddings")) {
    KVTOPO_ASSIGN_OR_RETURN(filled["max_position_embeddings"],
                            r.Over(filled).IntIn("max_seq_len", 1, kMaxModelLen));
  }
  const ConfigReader c = r.Over(filled);
  KVTOPO_RETURN_IF_ERROR(ReadCommon(c, m));
  if (!r.Has("max_seq_len") && r.Has("max_position_embeddings") &&
      m.max_position_embeddings > 4096) {
    m.config_warnings.emplace_back(
        "config-length-default",
        fmt::format("{} states no max_seq_len: Step3p5Config's 4096 applies, and "
                    "the engine takes the smallest length field, so its maximum length is 4096, "
                    "not max_position_embeddings {}",
                    ConfigFileLabel(r.file()), m.max_position_embeddings));
  }
  KVTOPO_ASSIGN_OR_RETURN(const std::string impl, c.StringOr("att_impl_type", "GQA"));
  if (impl != "GQA") {
    return c.Invalid("att_impl_type", fmt::format("is '{}'; the engine builds only GQA", impl));
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(c));
  KVTOPO_ASSIGN_OR_RETURN(m.num_kv_heads_total,
                          c.IntInOr("num_attention_groups", 8, 1, kMaxModelDim));
  KVTOPO_RETURN_IF_ERROR(CheckKvHeadsDivide(c, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, ReadHeadSize(c, m, /*use_head_dim=*/true));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, c.IntInOr("sliding_window", 0, 0, kMaxModelLen));
  m.text_sliding_window = window;
  std::vector<std::string> types;
  if (c.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(types, c.StringList("layer_types"));
    if (!types.empty() && static_cast<int64_t>(types.size()) < n) {
      return c.Invalid("layer_types",
                       fmt::format("has {} entries but num_hidden_layers is {}", types.size(), n));
    }
  }
  std::string other_type;
  int64_t other_kv = 0, other_head = 0;
  if (c.Has("attention_other_setting") && !types.empty()) {
    KVTOPO_ASSIGN_OR_RETURN(ConfigReader other, c.Object("attention_other_setting"));
    KVTOPO_ASSIGN_OR_RETURN(other_type, other.String("attention_type"));
    KVTOPO_ASSIGN_OR_RETURN(other_kv, Positive(other, "num_attention_groups"));
    KVTOPO_ASSIGN_OR_RETURN(other_head, Positive(other, "head_dim"));
    KVTOPO_ASSIGN_OR_RETURN(const int64_t other_q, Positive(other, "num_attention_heads"));
    if (other_q % other_kv != 0) {
      return other.Invalid(
          "num_attention_groups",
          fmt::format("is {}, which does not divide num_attention_heads {}", other_kv, other_q));
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const bool sliding =
        window > 0 &&
        (types.empty() ? i % 2 == 0 : types[static_cast<size_t>(i)] == "sliding_attention");
    const bool other = !other_type.empty() && types[static_cast<size_t>(i)] == other_type;
    RawLayer layer = KvAttentionLayer(i, m, other ? other_head : head, sliding ? window : 0);
    if (other) layer.num_kv_heads_total = other_kv;
    m.layers.push_back(std::move(layer));
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t mtp, NumMtpLayers(c, n, m));
  if (mtp > 0 && !types.empty()) {
    m.mtp_unavailable = fmt::format(
        "{} gives layer_types, of which the engine's Step3p5Config keeps the first "
        "num_hidden_layers ({}); its MTP layers, {} to {}, look up their own index in it, which "
        "fails (IndexError) as the engine builds the draft; kvtopo does not plan it",
        ConfigFileLabel(r.file()), n, n, n + mtp - 1);
  }
  for (int64_t j = 0; j < mtp && types.empty(); ++j) {
    RawLayer layer = KvAttentionLayer(n + j, m, head, window > 0 && (n + j) % 2 == 0 ? window : 0);
    layer.mtp = true;
    m.layers.push_back(std::move(layer));
  }
  return Status::Ok();
}

// DeciLM (DeciLMForCausalLM: Llama-Nemotron Super and Ultra; the fork's nemotron_nas.py): the
// engine's Llama layers, each with the attention block_configs[i].attention describes: none when
// no_op (the layer keeps no cache), else num_attention_heads / n_heads_in_group K/V heads of
// head_dim (else hidden_size / heads). An attention replaced by a linear layer
// (replace_with_linear), which the engine does not build, is refused. Windows as Llama's. Its
// config class comes with the checkpoint: the fields are required.
constexpr DenseFamily kDeciLm{.name = "DeciLM"};
Status ReadDeciLm(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, ReadHeadSize(r, m, /*use_head_dim=*/true));
  if (!r.json().contains("block_configs") || !r.json()["block_configs"].is_array()) {
    return r.Has("block_configs") ? r.IllTyped("block_configs", "a list of objects")
                                  : r.Missing("block_configs");
  }
  const nlohmann::json& blocks = r.json()["block_configs"];
  if (static_cast<int64_t>(blocks.size()) != n) {
    return r.Invalid("block_configs",
                     fmt::format("has {} entries but num_hidden_layers is {}", blocks.size(), n));
  }
  KVTOPO_ASSIGN_OR_RETURN(const std::vector<int64_t> windows, ReadDenseWindows(r, kDeciLm, n, m));
  for (int64_t i = 0; i < n; ++i) {
    const std::string where = fmt::format("{}[{}]", r.Path("block_configs"), i);
    if (!blocks[static_cast<size_t>(i)].is_object()) {
      return InvalidArgument(
          fmt::format("{}: field '{}' must be an object", ConfigFileLabel(r.file()), where));
    }
    const ConfigReader block(blocks[static_cast<size_t>(i)], r.file(), where);
    KVTOPO_ASSIGN_OR_RETURN(const ConfigReader attention, block.Object("attention"));
    KVTOPO_ASSIGN_OR_RETURN(const bool no_op, attention.BoolOr("no_op", false));
    if (no_op) continue;
    KVTOPO_ASSIGN_OR_RETURN(const bool linear, attention.BoolOr("replace_with_linear", false));
    if (linear) {
      return attention.Invalid("replace_with_linear",
                               "is true: an attention replaced by a linear layer, which the "
                               "engine's DeciLM model does not build");
    }
    KVTOPO_ASSIGN_OR_RETURN(const int64_t group,
                            attention.IntIn("n_heads_in_group", 1, m.num_attention_heads));
    if (m.num_attention_heads % group != 0) {
      return attention.Invalid("n_heads_in_group",
                               fmt::format("is {}, which does not divide num_attention_heads {}",
                                           group, m.num_attention_heads));
    }
    if (m.num_kv_heads_total == 0) m.num_kv_heads_total = m.num_attention_heads / group;
    RawLayer layer = KvAttentionLayer(i, m, head, windows[static_cast<size_t>(i)]);
    layer.num_kv_heads_total = m.num_attention_heads / group;
    m.layers.push_back(std::move(layer));
  }
  if (m.layers.empty()) {
    return r.Invalid("block_configs",
                     "gives every layer a no_op attention: no layer keeps a cache");
  }
  return Status::Ok();
}

// Falcon (FalconForCausalLM, RWForCausalLM; the fork's falcon.py): heads of hidden_size / heads;
// K/V heads num_kv_heads with new_decoder_architecture, else one when multi_query (the default),
// else every head. Model type falcon takes Transformers' FalconConfig (32 layers of 71 heads,
// hidden 4544, num_kv_heads the heads' count, 2048 positions); RefinedWeb and RefinedWebModel
// (the first Falcon checkpoints) the fork's RWConfig, which names the layers n_layer (2), the
// heads n_head (8) and the K/V heads n_head_kv (1), and turns new_decoder_architecture on for a
// hidden size of 8192 (falcon-40b). Both take n_embed for hidden_size. ALiBi instead of RoPE
// when `alibi` is true (false by default).
constexpr DenseFamily kFalconLayers{.name = "Falcon",
                                    .default_positions = 2048,
                                    .reads_head_dim = false,
                                    .windows = DenseWindows::kUniform};
Status ReadFalcon(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, r.StringOr("model_type", "falcon"));
  const bool rw = type == "RefinedWeb" || type == "RefinedWebModel";
  constexpr std::array<ClassField, 3> kRwFields = {{
      {"num_hidden_layers", "n_layer", 2, kMaxLayers},
      {"num_attention_heads", "n_head", 8, kMaxModelDim},
      {"hidden_size", "n_embed", 64, kMaxModelDim},
  }};
  constexpr std::array<ClassField, 3> kFalconFields = {{
      {"num_hidden_layers", nullptr, 32, kMaxLayers},
      {"num_attention_heads", nullptr, 71, kMaxModelDim},
      {"hidden_size", "n_embed", 4544, kMaxModelDim},
  }};
  nlohmann::json filled = r.json();
  KVTOPO_RETURN_IF_ERROR(FillClassFields(r, rw ? kRwFields : kFalconFields, filled));
  const ConfigReader c = r.Over(filled);
  KVTOPO_ASSIGN_OR_RETURN(const int64_t heads, c.IntIn("num_attention_heads", 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t hidden, c.IntIn("hidden_size", 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(bool new_arch, c.BoolOr("new_decoder_architecture", false));
  new_arch = new_arch || (rw && hidden == 8192);
  KVTOPO_ASSIGN_OR_RETURN(const bool multi_query, c.BoolOr("multi_query", true));
  int64_t kv = heads;
  if (new_arch) {
    const char* key = rw && c.Has("n_head_kv") ? "n_head_kv" : "num_kv_heads";
    KVTOPO_ASSIGN_OR_RETURN(kv, c.IntInOr(key, rw ? 1 : heads, 1, kMaxModelDim));
  } else if (multi_query) {
    kv = 1;
  }
  filled["num_key_value_heads"] = kv;
  KVTOPO_RETURN_IF_ERROR(ReadDense(r.Over(filled), kFalconLayers, m));
  // FalconConfig and RWConfig: rotary is `not alibi` (false by default).
  KVTOPO_ASSIGN_OR_RETURN(const bool alibi, c.BoolOr("alibi", false));
  if (alibi) m.alibi_source = fmt::format("{} true in '{}'", c.Path("alibi"), c.file());
  return Status::Ok();
}

// Cohere2 MoE (Cohere2MoeForCausalLM; the fork's cohere2_moe.py, Transformers' Cohere2MoeConfig):
// sliding layers per layer_types with the config's window (4096 by default); head_dim 128,
// multi-head and 8192 positions by default. Without layer_types the config class derives it from
// the window: of the first first_k_dense_replace layers, those whose index + 1 is not a multiple
// of prefix_dense_sliding_window_pattern (1) slide; of the rest, counted from 0 after them, those
// whose count + 1 is not a multiple of sliding_window_pattern (4).
constexpr DenseFamily kCohere2Moe{.name = "Cohere2 MoE",
                                  .default_positions = 8192,
                                  .absent_kv_heads = kMultiHead,
                                  .absent_head_dim = 128,
                                  .absent_window = 4096};
Status ReadCohere2Moe(const ConfigReader& r, ModelDescription& m) {
  const bool window = !r.json().contains("sliding_window") || r.Has("sliding_window");
  if (r.Has("layer_types") || !window) return ReadDense(r, kCohere2Moe, m);
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t dense, r.IntInOr("first_k_dense_replace", 0, 0, n));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t prefix_pattern,
                          r.IntInOr("prefix_dense_sliding_window_pattern", 1, 1, kMaxLayers));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t pattern,
                          r.IntInOr("sliding_window_pattern", 4, 1, kMaxLayers));
  nlohmann::json filled = r.json();
  nlohmann::json& types = filled["layer_types"] = nlohmann::json::array();
  for (int64_t i = 0; i < n; ++i) {
    const bool slides = i < dense ? (i + 1) % prefix_pattern != 0 : (i - dense + 1) % pattern != 0;
    types.push_back(slides ? "sliding_attention" : "full_attention");
  }
  return ReadDense(r.Over(filled), kCohere2Moe, m);
}

// HunYuan: the head size is head_dim when it is set and not 0, else attention_head_dim, else
// hidden_size / heads (HunYuanAttention). With use_cla, layers attend over an earlier layer's KV
// (cross-layer attention, every cla_share_factor-th layer keeping its own): not planned.
// HunYuan's decoder layers build experts only where _is_moe holds (hunyuan_v1.py at 28be48fa9):
// num_experts an int above 1, or a list of ints (a bool is a Python int) whose largest is above
// 1; the engine's expert count (ModelConfig.is_moe) stays the stated one.
bool HunYuanBuildsExperts(const nlohmann::json& text) {
  const auto above_one = [](const nlohmann::json& v) {
    return v.is_number_unsigned() ? v.get<uint64_t>() > 1
                                  : v.is_number_integer() && v.get<int64_t>() > 1;
  };
  const auto experts = text.find("num_experts");
  if (experts == text.end()) return false;
  if (!experts->is_array()) return above_one(*experts);
  return std::all_of(
             experts->begin(), experts->end(),
             [](const nlohmann::json& e) { return e.is_number_integer() || e.is_boolean(); }) &&
         std::any_of(experts->begin(), experts->end(), above_one);
}

Status ReadHunYuan(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const bool cla, r.BoolOr("use_cla", false));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t factor, r.IntInOr("cla_share_factor", 1, 1, kMaxLayers));
  if (cla && factor > 1) {
    return r.Invalid("use_cla",
                     fmt::format("is true with cla_share_factor {}: layers that attend over an "
                                 "earlier layer's KV (cross-layer attention); kvtopo does not "
                                 "plan them",
                                 factor));
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head_dim, r.IntOr("head_dim", 0));
  if (head_dim != 0) {
    KVTOPO_RETURN_IF_ERROR(ReadDense(r, kHunYuan, m));
  } else {
    nlohmann::json filled = r.json();
    filled.erase("head_dim");
    if (r.Has("attention_head_dim")) filled["head_dim"] = r.json()["attention_head_dim"];
    KVTOPO_RETURN_IF_ERROR(ReadDense(r.Over(filled), kHunYuan, m));
  }
  m.builds_no_experts = !HunYuanBuildsExperts(r.json());
  if (const auto experts = r.json().find("num_experts");
      !m.builds_no_experts && experts != r.json().end() && experts->is_array()) {
    return r.Invalid("num_experts",
                     fmt::format("is {}: the engine's MoE block compares the tensor-parallel size "
                                 "with it ('>' between an int and a list) and raises TypeError as "
                                 "it builds the model",
                                 experts->dump()));
  }
  return Status::Ok();
}

// The causal-LM class Transformers maps a model type to (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), for
// the model types whose class kvtopo reads: the engine builds it for a nested text config that
// names no architectures (vllm/config/vllm.py, with_hf_config).
constexpr std::array<std::pair<std::string_view, const char*>, 14> kCausalLmForType = {{
    {"llama", "LlamaForCausalLM"},
    {"mistral", "MistralForCausalLM"},
    {"mixtral", "MixtralForCausalLM"},
    {"qwen2", "Qwen2ForCausalLM"},
    {"qwen2_moe", "Qwen2MoeForCausalLM"},
    {"qwen3", "Qwen3ForCausalLM"},
    {"qwen3_moe", "Qwen3MoeForCausalLM"},
    {"gemma", "GemmaForCausalLM"},
    {"gemma2", "Gemma2ForCausalLM"},
    {"cohere2", "Cohere2ForCausalLM"},
    {"granite", "GraniteForCausalLM"},
    {"lfm2", "Lfm2ForCausalLM"},
    {"opt", "OPTForCausalLM"},
    {"phi3", "Phi3ForCausalLM"},
}};

// kCausalLmForType's class for `type`; null where it has none.
const char* CausalLmClassForType(std::string_view type) {
  const auto* typed = std::find_if(kCausalLmForType.begin(), kCausalLmForType.end(),
                                   [&](const auto& t) { return type == t.first; });
  return typed == kCausalLmForType.end() ? nullptr : typed->second;
}

// Multimodal models whose language model is picked by text_config's model_type and built from
// that type's config class, whose defaults fill what text_config leaves out (llava-1.5 states
// little more than its positions): LLaVA (llama, the LlavaConfig default, or mistral; llava.py
// builds the text config's registered model) and PaliGemma (gemma, the PaliGemmaConfig default,
// or gemma2; paligemma.py builds GemmaForCausalLM or Gemma2ForCausalLM).
struct TypedTextModel {
  const char* model_type;
  Status (*read)(const ConfigReader&, ModelDescription&);
  // The text config class's defaults (LlamaConfig, MistralConfig, GemmaConfig, Gemma2Config)
  // for the fields its reader requires; 0: none to fill.
  int64_t hidden_size;
  int64_t num_hidden_layers;
  int64_t num_attention_heads;
  int64_t num_key_value_heads;
  int64_t max_position_embeddings;
};
// The config classes' defaults, as their model types' text models.
constexpr TypedTextModel kLlamaConfigText{"llama", ReadDenseAs<kLlama>, 4096, 32, 32, 0, 2048};
constexpr TypedTextModel kMistralConfigText{"mistral", ReadDenseAs<kMistral>, 4096, 32, 32, 8,
                                            131072};
constexpr TypedTextModel kQwen2ConfigText{"qwen2", ReadDenseAs<kQwen2>, 4096, 32, 32, 32, 32768};
// `text` read by another model's code (a wrapper that forces it).
constexpr TypedTextModel ReadBy(TypedTextModel text,
                                Status (*read)(const ConfigReader&, ModelDescription&)) {
  text.read = read;
  return text;
}
constexpr std::array<TypedTextModel, 2> kLlavaTextModels = {{kLlamaConfigText, kMistralConfigText}};
// Mistral 3 (mistral3.py): Mistral (Mistral3Config's default type) or Ministral 3, both the
// engine's Mistral model.
constexpr std::array<TypedTextModel, 2> kMistral3TextModels = {{
    kMistralConfigText,
    {"ministral3", ReadDenseAs<kMinistral3>, 4096, 34, 32, 8, 262144},
}};
// The wrappers that build the engine's Qwen2 model over text_config whatever it names
// (AudioFlamingo3, Music Flamingo, Cheers, OpenCUA, Qwen2-Audio), whose config classes build a
// Qwen2Config for it; and those that build its Llama model over a LlamaConfig (Idefics3,
// SmolVLM).
constexpr std::array<TypedTextModel, 1> kQwen2TextModels = {{kQwen2ConfigText}};
constexpr std::array<TypedTextModel, 1> kLlamaTextModels = {{kLlamaConfigText}};
constexpr std::array<TypedTextModel, 2> kPaliGemmaTextModels = {{
    {"gemma", ReadGemma, 3072, 28, 16, 0, 0},
    {"gemma2", ReadInterleavedAs<kGemma2>, 2304, 26, 8, 4, 0},
}};

// Whether `table`'s rows are sorted by their key `cls` (a class name, a model type), with no
// key twice.
template <typename Row, size_t N>
constexpr bool SortedBy(const Row (&table)[N], std::string_view Row::*cls) {
  for (size_t i = 1; i < N; ++i) {
    if (!(table[i - 1].*cls < table[i].*cls)) return false;
  }
  return true;
}

// The row of `table` (SortedBy `cls`) whose class is `name`; null where it has none.
template <typename Row, size_t N>
const Row* RowOf(const Row (&table)[N], std::string_view Row::*cls, std::string_view name) {
  const Row* row = std::lower_bound(std::begin(table), std::end(table), name,
                                    [&](const Row& r, std::string_view c) { return r.*cls < c; });
  return row != std::end(table) && row->*cls == name ? row : nullptr;
}

// The expert key and count of the config classes the fork registers for their model types
// (transformers_utils/config.py and configs/ at 28be48fa9), keyed by the root's model type (the
// text config classes of Qwen3.5 MoE and Step-3-VL for theirs): the engine's get_num_experts
// takes the first of its names the config object has, class attributes included, so this
// default counts where the config leaves the key out; a class that sets it to None (count 0:
// Kimi-Linear's num_experts) stops the search there, so the keys after it do not count. Sorted.
struct ClassExpertCount {
  std::string_view model_type;
  const char* key;
  int64_t count;  // 0: None
};
constexpr ClassExpertCount kForkClassExpertCounts[] = {
    // clang-format off
    {"afmoe", "num_experts", 64},
    {"flex_olmo", "num_experts", 7},
    {"hy_v3", "num_experts", 192},
    {"kimi_linear", "num_experts", 0},  // None
    {"laguna", "num_experts", 256},
    {"lfm2_moe", "num_experts", 32},
    {"qwen3_5_moe", "num_experts", 256},
    {"qwen3_5_moe_text", "num_experts", 256},
    {"qwen3_next", "num_experts", 512},
    {"step3_text", "moe_num_experts", 48},
    {"step3_vl", "moe_num_experts", 48},
    {"step3p5", "moe_num_experts", 16},
    // clang-format on
};
static_assert(SortedBy(kForkClassExpertCounts, &ClassExpertCount::model_type));

// The count the fork's config class for `model_type` gives `key` (kForkClassExpertCounts; 0 for
// None); none where that class does not define that key.
std::optional<int64_t> ForkClassExpertCount(std::string_view model_type, std::string_view key) {
  const ClassExpertCount* row =
      RowOf(kForkClassExpertCounts, &ClassExpertCount::model_type, model_type);
  if (row == nullptr || key != row->key) return std::nullopt;
  return row->count;
}

// The names the engine's get_num_experts reads an expert count under, in its order.
constexpr std::array<const char*, 4> kEngineExpertKeys = {"num_experts", "moe_num_experts",
                                                          "n_routed_experts", "num_local_experts"};

// What get_num_experts picks from a text config (vllm/transformers_utils/
// model_arch_config_convertor.py at 28be48fa9): the first of kEngineExpertKeys the config
// states, or the config class of `model_type` defines (kForkClassExpertCounts, None included); a
// list whatever its entries, any other value where it is true to Python, else block_configs.
struct PickedExpertCount {
  const char* key = nullptr;               // the stated key it picks
  const nlohmann::json* stated = nullptr;  // its value (a list: the engine takes its first entry)
  int64_t of_class = 0;                    // the class's count it picks instead (above 0)
};
PickedExpertCount PickExpertCount(const nlohmann::json& text, std::string_view model_type) {
  for (const char* key : kEngineExpertKeys) {
    if (const auto v = text.find(key); v != text.end()) {
      if (v->is_array() || PythonTruth(*v)) return {.key = key, .stated = &*v};
      break;
    }
    if (const std::optional<int64_t> n = ForkClassExpertCount(model_type, key)) {
      if (*n > 0) return {.of_class = *n};
      break;
    }
  }
  return {};  // block_configs
}

// The index in `blocks` (block_configs) of the "moe" block whose n_routed_experts max() keeps:
// the first of the largest numbers (True as 1) above 0; none where no block states one.
std::optional<size_t> LargestMoeBlock(const nlohmann::json& blocks) {
  std::optional<size_t> at;
  double largest = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const nlohmann::json& block = blocks[i];
    if (!block.is_object() || block.value("block_type", nlohmann::json()) != "moe") continue;
    const auto n = block.find("n_routed_experts");
    if (n == block.end() || (!n->is_number() && !n->is_boolean())) continue;
    const double d = n->is_boolean() ? (n->get<bool>() ? 1.0 : 0.0) : n->get<double>();
    if (d > largest) {
      largest = d;
      at = i;
    }
  }
  return at;
}

// The expert count the engine reads from a text config: PickExpertCount's value (a list's first
// entry), else the largest n_routed_experts of its block_configs' "moe" blocks (NemotronH's
// heterogeneous layers); a count not above 0: 0.
int64_t EngineExpertCount(const nlohmann::json& text, std::string_view model_type) {
  if (!text.is_object()) return 0;
  // A count above 0 that is not a whole number in range counts as 1 expert: the engine tests > 0
  // (a fraction CheckEngineExpertCount refuses). A whole float (32.0) counts as its value, True as
  // 1.
  auto count = [](const nlohmann::json& n) -> int64_t {
    if (n.is_boolean()) return n.get<bool>() ? 1 : 0;
    if (!n.is_number() || !(n.get<double>() > 0)) return 0;
    if (const double d = n.get<double>();
        n.is_number_float() && d <= static_cast<double>(kMaxModelDim) && std::trunc(d) == d) {
      return static_cast<int64_t>(d);
    }
    return JsonIntIn(n, 1, kMaxModelDim).value_or(1);
  };
  const PickedExpertCount picked = PickExpertCount(text, model_type);
  if (picked.stated != nullptr) {
    const nlohmann::json& v = *picked.stated;
    return !v.is_array() ? count(v) : v.empty() ? 0 : count(v[0]);
  }
  if (picked.of_class > 0) return picked.of_class;
  const auto blocks = text.find("block_configs");
  if (blocks == text.end() || !blocks->is_array()) return 0;
  const std::optional<size_t> at = LargestMoeBlock(*blocks);
  return at ? count((*blocks)[*at]["n_routed_experts"]) : 0;
}

// Refuses the expert count of `text` where the engine cannot read it as it builds the model config
// of any model, target or draft (get_num_experts, then ModelArchitectureConfig, a pydantic
// dataclass whose num_experts is an int, converted as pydantic's lax mode does: a whole float and
// a bool pass), with the value PickExpertCount picks: an empty list (its first entry:
// IndexError); an object that is not empty or a number with a fractional part, or a list whose
// first entry is not a number (null, a list, an object) or is such a number (ValidationError); a
// "moe" block of block_configs whose n_routed_experts max() cannot compare with a number
// (TypeError). A string, which pydantic parses where it holds an integer's digits and the model's
// classes then read as it is, is refused as kvtopo's own limit. A negative count passes (the
// engine's is_moe is false).
Status CheckEngineExpertCount(const ConfigReader& text, std::string_view model_type) {
  const nlohmann::json& j = text.json();
  if (!j.is_object()) return Status::Ok();
  auto fractional = [](const nlohmann::json& v) {
    return v.is_number_float() && std::trunc(v.get<double>()) != v.get<double>();
  };
  // `count` (`v` itself, or its entry `as` names) is no integer pydantic takes, or a string.
  auto not_integer = [](std::string_view key, const nlohmann::json& v, const nlohmann::json& count,
                        std::string_view as, const ConfigReader& r) {
    if (count.is_string()) {
      return r.Invalid(
          key, fmt::format("is {}: the engine's model architecture config parses the expert count "
                           "from {}, a string (anything but an integer's digits raises a "
                           "ValidationError), but the model's classes read the string itself; "
                           "kvtopo reads expert counts as numbers only: state it as a number",
                           v.dump(), as));
    }
    return r.Invalid(
        key, fmt::format("is {}: the engine takes {} for the expert count, which its model "
                         "architecture config holds as an integer, and raises a ValidationError "
                         "as it builds the model config ('Input should be a valid integer{}')",
                         v.dump(), as,
                         count.is_number() ? ", got a number with a fractional part" : ""));
  };
  const PickedExpertCount picked = PickExpertCount(j, model_type);
  if (picked.stated != nullptr) {
    const nlohmann::json& v = *picked.stated;
    if (v.is_array()) {
      if (v.empty()) {
        return text.Invalid(picked.key,
                            "is []: the engine's get_num_experts takes a list's first entry and "
                            "raises IndexError as it builds the model config");
      }
      const nlohmann::json& first = v[0];
      if ((!first.is_number() && !first.is_boolean()) || fractional(first)) {
        return not_integer(picked.key, v, first, fmt::format("its first entry ({})", first.dump()),
                           text);
      }
    } else if (v.is_object() || v.is_string() || fractional(v)) {
      return not_integer(picked.key, v, v, "it", text);
    }
    return Status::Ok();
  }
  if (picked.of_class > 0) return Status::Ok();
  const auto blocks = j.find("block_configs");
  if (blocks == j.end() || !blocks->is_array()) return Status::Ok();
  for (size_t i = 0; i < blocks->size(); ++i) {
    const nlohmann::json& block = (*blocks)[i];
    if (!block.is_object() || block.value("block_type", nlohmann::json()) != "moe") continue;
    const auto n = block.find("n_routed_experts");
    if (n != block.end() && !n->is_number() && !n->is_boolean()) {
      return text.Invalid(fmt::format("block_configs[{}].n_routed_experts", i),
                          fmt::format("is {}: the engine's get_num_experts takes the largest of "
                                      "the moe blocks' counts with max() and raises TypeError as "
                                      "it builds the model config",
                                      n->dump()));
    }
  }
  const std::optional<size_t> at = LargestMoeBlock(*blocks);
  if (!at || !fractional((*blocks)[*at]["n_routed_experts"])) return Status::Ok();
  const nlohmann::json& n = (*blocks)[*at]["n_routed_experts"];
  return not_integer(fmt::format("block_configs[{}].n_routed_experts", *at), n, n,
                     "the largest of the moe blocks' counts", text);
}

// The key of kEngineExpertKeys that `text` leaves out and the fork's config class for
// `model_type` sets to None, where that hides a count `text` states under a later name
// (EngineExpertCount reads 0 where it would read the count without the class); else empty.
std::string ExpertsHiddenBy(const nlohmann::json& text, std::string_view model_type) {
  if (EngineExpertCount(text, model_type) > 0 || EngineExpertCount(text, "") == 0) return "";
  for (const char* key : kEngineExpertKeys) {
    if (text.contains(key)) break;
    if (ForkClassExpertCount(model_type, key) == 0) return key;
  }
  return "";
}

// How a MoE class picks, per hidden layer, its experts or a dense MLP where keys other than the
// expert count decide (the fork's model files at 28be48fa9; layers by their global 0-based
// index). A layer builds experts where the gate holds (its key stated and not null, or above 0
// or 1), the layer is at or past `dense`, its frequency test passes (layer % freq == 0 from
// layer 0, (layer - dense) % freq == 0 from the first dense-free layer, (layer + 1) % freq == 0,
// or layer % freq == offset), and mlp_only_layers does not list it; Step's classes build them in
// the layers moe_layers_enum lists (1 to N - 1 without it), MiMo-V2's where its moe_layer_freq
// list holds a true entry (as an int, in none), MiniMax-Text-01's where its num_local_experts
// (a list per layer, or an int) is not 1. A key the class reads as stated that the config
// leaves out leaves the choice unknown, unless its config class is certain: the fork's own
// (dense_default, freq_default, the count of kForkClassExpertCounts for the gate), Transformers'
// ERNIE 4.5 MoE and Jamba classes, Arctic's checkpoint code. The keys read with getattr's
// default take those, and a `dense` read with getattr's 0 (Bailing V2.5's, Cohere2 MoE's) builds
// them in every layer as an unknown choice does.
enum class LayerFreq { kNone, kFromZero, kFromDense, kFromOne, kAtOffset };
struct ExpertLayerRule {
  std::string_view engine_class;
  const char* gate = nullptr;  // experts only where it is stated and not null (or above gate_above)
  int gate_above = -1;         // -1: stated and not null is enough
  // Stated: its truth alone decides whether any layer builds experts (ERNIE 4.5's use_moe);
  // absent: the gate.
  const char* switch_key = nullptr;
  // The class compares the gate with gate_above in every layer, switch_key stated or not (ERNIE
  // 4.5's getattr default): a stated gate that is neither a number nor a bool raises TypeError.
  bool gate_always_compared = false;
  const char* dense = nullptr;  // the layers below its value build a dense MLP
  int64_t dense_default = -1;   // dense's value where absent (-1: not known)
  const char* last = nullptr;   // the layers above its value build a dense MLP (-1: the last)
  const char* freq = nullptr;
  LayerFreq freq_from = LayerFreq::kNone;
  bool freq_stated = false;  // read as stated (else freq_default where absent)
  int64_t freq_default = 1;
  const char* offset = nullptr;  // kAtOffset: layer % freq == its value (offset_default absent)
  int64_t offset_default = 0;
  bool zero_freq_none = false;  // a frequency of 0 builds no experts (tested above 0 first)
  bool freq_first = false;      // every layer divides by freq before dense and last are tested
  bool mlp_only_layers = false;
  bool mlp_only_stated = false;  // the config class's default is not [] (read as stated)
  bool mlp_only_first = false;   // absent or null: the config class lists layer 0 alone
  bool moe_layers_enum = false;
  bool enum_required = false;  // its config class's default is not None
  // A list of per-layer truth values (MiMo-V2's moe_layer_freq); an int builds no experts.
  const char* flags = nullptr;
  // flags holds expert counts instead (MiniMax-Text-01's num_local_experts): a list's entry per
  // layer, an int (Python's bool among them) for every layer, experts where the count is not 1;
  // anything else builds none (the decoder layer then takes 1).
  bool flags_are_counts = false;
  // A key every decoder layer reads as stated, which its config class does not default (Arctic's
  // use_residual): absent, it raises AttributeError as the model is built.
  const char* every_layer_reads = nullptr;
  // The class indexes flags by layer whatever it holds (EXAONE MoE's is_moe_layer): null, a
  // number, a bool or an object raise as the model is built instead of building no experts.
  bool flags_indexed = false;
  // The class's error when the layers it builds (a pipeline stage's) hold no experts; null: it
  // warns or builds on.
  const char* raises = nullptr;
  // It raises only where some layer of the whole model builds experts (AFMoE's setup tests the
  // layers past num_dense_layers first).
  bool raises_per_stage_only = false;
};
constexpr ExpertLayerRule kDeepseekLayers{.gate = "n_routed_experts",
                                          .dense = "first_k_dense_replace",
                                          .freq = "moe_layer_freq",
                                          .freq_from = LayerFreq::kFromZero};
// AXK1's and Dots1's: DeepSeek's, moe_layer_freq read as stated.
constexpr ExpertLayerRule kStatedFreqLayers{.gate = "n_routed_experts",
                                            .dense = "first_k_dense_replace",
                                            .freq = "moe_layer_freq",
                                            .freq_from = LayerFreq::kFromZero,
                                            .freq_stated = true};
// GLM-4.5's and openPangu's: no frequency.
constexpr ExpertLayerRule kFirstDenseLayers{.gate = "n_routed_experts",
                                            .dense = "first_k_dense_replace"};
// Bailing's, Cohere2 MoE's and HY-V3's: first_k_dense_replace alone.
constexpr ExpertLayerRule kFirstDenseOnlyLayers{.dense = "first_k_dense_replace"};
constexpr ExpertLayerRule kQwenMoeLayers{.gate = "num_experts",
                                         .gate_above = 0,
                                         .freq = "decoder_sparse_step",
                                         .freq_from = LayerFreq::kFromOne,
                                         .freq_stated = true,
                                         .mlp_only_layers = true};
// Intern-S1 Pro's config class does not default mlp_only_layers to [] (nor is it the fork's).
constexpr ExpertLayerRule kQwenMoeStatedLayers{.gate = "num_experts",
                                               .gate_above = 0,
                                               .freq = "decoder_sparse_step",
                                               .freq_from = LayerFreq::kFromOne,
                                               .freq_stated = true,
                                               .mlp_only_layers = true,
                                               .mlp_only_stated = true};
// Qwen3-Next's and Laguna's: the fork's own config classes default decoder_sparse_step to 1 and
// mlp_only_layers to [] (Qwen3NextConfig) or, where absent or None, [0] (LagunaConfig).
constexpr ExpertLayerRule kForkQwenMoeLayers{.gate = "num_experts",
                                             .gate_above = 0,
                                             .freq = "decoder_sparse_step",
                                             .freq_from = LayerFreq::kFromOne,
                                             .mlp_only_layers = true};
constexpr ExpertLayerRule kLagunaLayers = [] {
  ExpertLayerRule rule = kForkQwenMoeLayers;
  rule.mlp_only_first = true;
  return rule;
}();
constexpr ExpertLayerRule kLlama4Layers{.freq = "interleave_moe_layer_step",
                                        .freq_from = LayerFreq::kFromOne,
                                        .freq_stated = true,
                                        .zero_freq_none = true};
constexpr ExpertLayerRule kMimoV2Layers{.flags = "moe_layer_freq"};
constexpr ExpertLayerRule kMiniMaxLayers{.flags = "num_local_experts", .flags_are_counts = true};
// Step-3's text config class defaults moe_layers_enum to a tuple, which the decoder layer cannot
// split (an AttributeError as it builds the model); Step-3.5's leaves it None (1 to N - 1).
constexpr ExpertLayerRule kStepLayers{.moe_layers_enum = true, .enum_required = true};
constexpr ExpertLayerRule Named(ExpertLayerRule rule, std::string_view engine_class,
                                const char* raises = nullptr) {
  rule.engine_class = engine_class;
  rule.raises = raises;
  return rule;
}
constexpr const char* kGlm4MoeRaises = "No Glm4MoE layer found in model.layers.";
constexpr const char* kPanguMoeRaises = "No MOE layer found in model.layers.";
// Sorted by class.
constexpr ExpertLayerRule kExpertLayerRules[] = {
    Named(kStatedFreqLayers, "AXK1ForCausalLM"),
    // The fork's AfmoeConfig (its config registry's, for model type afmoe) defaults
    // num_dense_layers to 1.
    {.engine_class = "AfmoeForCausalLM",
     .dense = "num_dense_layers",
     .dense_default = 1,
     .raises = "No AfmoeMoE layer found in model.layers.",
     .raises_per_stage_only = true},
    // ArcticConfig (the checkpoint's configuration_arctic.py, which the fork copies) defaults
    // moe_layer_frequency to 2, and use_residual, which its decoder layer reads, not at all.
    {.engine_class = "ArcticForCausalLM",
     .freq = "moe_layer_frequency",
     .freq_from = LayerFreq::kFromOne,
     .freq_default = 2,
     .every_layer_reads = "use_residual"},
    Named(kFirstDenseOnlyLayers, "BailingMoeForCausalLM"),
    Named(kFirstDenseOnlyLayers, "BailingMoeV2ForCausalLM"),
    {.engine_class = "BailingMoeV2_5ForCausalLM",
     .gate = "num_experts",
     .gate_above = 1,
     .dense = "first_k_dense_replace"},
    Named(kFirstDenseOnlyLayers, "Cohere2MoeForCausalLM"),
    Named(kDeepseekLayers, "DeepseekForCausalLM"),
    Named(kDeepseekLayers, "DeepseekV2ForCausalLM"),
    Named(kDeepseekLayers, "DeepseekV32ForCausalLM"),
    Named(kDeepseekLayers, "DeepseekV3ForCausalLM"),
    Named(kStatedFreqLayers, "Dots1ForCausalLM"),
    // Its decoder layer: use_moe (else moe_num_experts > 0), then (layer + 1) %
    // moe_layer_interval, then moe_layer_start_index to moe_layer_end_index; Transformers' config
    // class defaults them to 1, -1 and 1 and takes an end of -1 for the last layer.
    {.engine_class = "Ernie4_5_MoeForCausalLM",
     .gate = "moe_num_experts",
     .gate_above = 0,
     .switch_key = "use_moe",
     .gate_always_compared = true,
     .dense = "moe_layer_start_index",
     .dense_default = 1,
     .last = "moe_layer_end_index",
     .freq = "moe_layer_interval",
     .freq_from = LayerFreq::kFromOne,
     .freq_first = true},
    // Its decoder layer builds experts where config.is_moe_layer[layer] is true; ExaoneMoeConfig
    // has no default for it.
    {.engine_class = "ExaoneMoEForCausalLM", .flags = "is_moe_layer", .flags_indexed = true},
    Named(kFirstDenseLayers, "Glm4MoeForCausalLM", kGlm4MoeRaises),
    Named(kDeepseekLayers, "Glm4MoeLiteForCausalLM", kGlm4MoeRaises),
    Named(kFirstDenseLayers, "Glm4vMoeForConditionalGeneration", kGlm4MoeRaises),
    Named(kDeepseekLayers, "GlmMoeDsaForCausalLM"),
    // The fork's HYV3Config defaults first_k_dense_replace to 1.
    {.engine_class = "HYV3ForCausalLM",
     .dense = "first_k_dense_replace",
     .dense_default = 1,
     .raises = "No MoE layer found in model.layers."},
    // HunYuan's _is_moe decides for every layer at once (HunYuanBuildsExperts).
    {.engine_class = "HunYuanMoEV1ForCausalLM",
     .raises = "No HunYuanMoE layer found in model.layers."},
    Named(kQwenMoeStatedLayers, "InternS1ProForConditionalGeneration",
          "No InternS1ProMoe layer found in the language_model."),
    // Transformers' JambaConfig.layers_num_experts: num_experts where layer % expert_layer_period
    // is expert_layer_offset (2 and 1 by default; ReadJamba checks them), else 1; its layers build
    // experts for a count above 1.
    {.engine_class = "JambaForCausalLM",
     .gate = "num_experts",
     .gate_above = 1,
     .freq = "expert_layer_period",
     .freq_from = LayerFreq::kAtOffset,
     .freq_default = 2,
     .offset = "expert_layer_offset",
     .offset_default = 1},
    Named(kDeepseekLayers, "KimiK25ForConditionalGeneration"),
    // The fork's KimiLinearConfig defaults first_k_dense_replace to 0 and moe_layer_freq to 1.
    {.engine_class = "KimiLinearForCausalLM",
     .gate = "num_experts",
     .dense = "first_k_dense_replace",
     .dense_default = 0,
     .freq = "moe_layer_freq",
     .freq_from = LayerFreq::kFromZero},
    Named(kDeepseekLayers, "KimiVLForConditionalGeneration"),
    Named(kLagunaLayers, "LagunaForCausalLM"),
    // The fork's Lfm2MoeConfig defaults num_dense_layers to 2.
    {.engine_class = "Lfm2MoeForCausalLM",
     .dense = "num_dense_layers",
     .dense_default = 2,
     .raises = "No Lfm2MoeSparseMoeBlock layer found in the model.layers."},
    Named(kLlama4Layers, "Llama4ForCausalLM"),
    Named(kLlama4Layers, "Llama4ForConditionalGeneration"),
    Named(kMimoV2Layers, "MiMoV2FlashForCausalLM"),
    Named(kMimoV2Layers, "MiMoV2ForCausalLM"),
    Named(kMimoV2Layers, "MiMoV2OmniForCausalLM"),
    Named(kMiniMaxLayers, "MiniMaxForCausalLM"),
    Named(kMiniMaxLayers, "MiniMaxM1ForCausalLM"),
    Named(kMiniMaxLayers, "MiniMaxText01ForCausalLM"),
    Named(kDeepseekLayers, "MistralLarge3ForCausalLM"),
    Named(kFirstDenseLayers, "OpenPanguVLForConditionalGeneration"),
    Named(kFirstDenseLayers, "PanguEmbeddedForCausalLM"),
    Named(kFirstDenseLayers, "PanguProMoEV2ForCausalLM", kPanguMoeRaises),
    Named(kFirstDenseLayers, "PanguUltraMoEForCausalLM", kPanguMoeRaises),
    {.engine_class = "Param2MoEForCausalLM",
     .gate = "num_experts",
     .dense = "first_k_dense_replace",
     .raises = "No Param2MoEMoEBlock found in model.layers. Check first_k_dense_replace and "
               "num_experts in config."},
    Named(kQwenMoeLayers, "Qwen2MoeForCausalLM"),
    Named(kQwenMoeLayers, "Qwen3MoeForCausalLM", "No Qwen3MoE layer found in the model.layers."),
    Named(kForkQwenMoeLayers, "Qwen3NextForCausalLM",
          "No Qwen3Next layer found in the model.layers."),
    Named(kQwenMoeLayers, "Qwen3OmniMoeForConditionalGeneration"),
    Named(kQwenMoeLayers, "Qwen3VLMoeForConditionalGeneration",
          "No Qwen3Moe layer found in the language_model."),
    {.engine_class = "SarvamMLAForCausalLM",
     .gate = "num_experts",
     .dense = "first_k_dense_replace",
     .freq = "moe_layer_freq",
     .freq_from = LayerFreq::kFromDense,
     .raises = "No SarvamMLAMoE layer found in model.layers."},
    Named(kStepLayers, "Step3TextForCausalLM"),
    Named(kStepLayers, "Step3VLForConditionalGeneration"),
    {.engine_class = "Step3p5ForCausalLM",
     .moe_layers_enum = true,
     .raises = "No MoE layers found in the model."},
};

static_assert(SortedBy(kExpertLayerRules, &ExpertLayerRule::engine_class));

const ExpertLayerRule* ExpertLayerRuleFor(std::string_view engine_class) {
  return RowOf(kExpertLayerRules, &ExpertLayerRule::engine_class, engine_class);
}

// Whether Python's `v == 1` holds for JSON value `v` (1, 1.0 and true).
bool EqualsOne(const nlohmann::json& v) {
  return (v.is_number() && v.get<double>() == 1) || (v.is_boolean() && v.get<bool>());
}

// Records in m.expert_layers which hidden layers class `engine_class` builds experts in over
// `text` (ExpertLayerRule), and builds_no_experts where its gate key shuts every layer; nothing
// where the class builds them in every layer or the choice is not known. A frequency of 0 that a
// layer reaches, and a moe_layers_enum the class cannot read, are refused: the engine raises on
// them as it builds the model.
Status RecordExpertLayers(const ConfigReader& text, std::string_view engine_class,
                          ModelDescription& m) {
  const ExpertLayerRule* rule = ExpertLayerRuleFor(engine_class);
  const int64_t n = m.num_hidden_layers;
  if (rule == nullptr || n <= 0 || n > kMaxLayers) return Status::Ok();
  const nlohmann::json& j = text.json();
  if (rule->every_layer_reads != nullptr && !j.contains(rule->every_layer_reads)) {
    return text.Invalid(rule->every_layer_reads,
                        fmt::format("is missing: the engine's {} decoder layer reads it, its "
                                    "config class has no default, and it raises AttributeError as "
                                    "it builds the model",
                                    engine_class));
  }
  // A stated integer (the classes compare and divide by them); absent or anything else: none.
  auto stated_int = [&](const char* key) -> std::optional<int64_t> {
    const auto v = j.find(key);
    if (v == j.end()) return std::nullopt;
    return JsonIntIn(*v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  };
  std::vector<bool> layers(static_cast<size_t>(n), false);
  if (rule->moe_layers_enum) {
    const auto listed = j.find("moe_layers_enum");
    if (listed == j.end() || listed->is_null()) {
      if (rule->enum_required) {
        return text.Invalid("moe_layers_enum",
                            "is not stated: the engine's config class then takes a tuple, whose "
                            "strip() the decoder layer calls, and raises AttributeError as it "
                            "builds the model");
      }
      for (int64_t i = 1; i < n; ++i) layers[static_cast<size_t>(i)] = true;
    } else if (!listed->is_string()) {
      return text.Invalid("moe_layers_enum",
                          fmt::format("is {}: the engine's decoder layer reads it as a string of "
                                      "comma-separated layers (strip, split) and raises "
                                      "AttributeError as it builds the model",
                                      listed->dump()));
    } else {
      const std::string_view all = StripAsciiSpace(listed->get_ref<const std::string&>());
      for (size_t start = 0;;) {
        const size_t comma = all.find(',', start);
        const std::string piece(all.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        const std::optional<int64_t> layer = PythonInt(nlohmann::json(piece));
        if (!layer) {
          return text.Invalid("moe_layers_enum",
                              fmt::format("has '{}', which is not an integer: the engine's "
                                          "decoder layer reads every comma-separated entry with "
                                          "int() and raises ValueError as it builds the model",
                                          piece));
        }
        if (*layer >= 0 && *layer < n) layers[static_cast<size_t>(*layer)] = true;
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
    }
  } else if (rule->flags != nullptr) {
    const auto flags = j.find(rule->flags);
    if (flags == j.end()) return Status::Ok();
    if (flags->is_array()) {
      if (flags->size() < static_cast<size_t>(n)) {
        return text.Invalid(rule->flags,
                            fmt::format("lists {} layer{}, but the model has {}: the engine's "
                                        "decoder layer indexes it by layer and raises IndexError "
                                        "as it builds the model",
                                        flags->size(), flags->size() == 1 ? "" : "s", n));
      }
      for (int64_t i = 0; i < n; ++i) {
        const nlohmann::json& flag = (*flags)[static_cast<size_t>(i)];
        layers[static_cast<size_t>(i)] =
            rule->flags_are_counts ? !EqualsOne(flag) : PythonTruth(flag);
      }
    } else if (rule->flags_indexed && !flags->is_string()) {
      return text.Invalid(
          rule->flags,
          fmt::format("is {}: the engine's decoder layer indexes it by layer (config.{}[layer]) "
                      "and raises {} as it builds the model; state a list with one truth value "
                      "per layer",
                      flags->dump(), rule->flags, flags->is_object() ? "KeyError" : "TypeError"));
    } else if (rule->flags_indexed) {
      return Status::Ok();  // Python indexes a string by character: not known
    } else if (rule->flags_are_counts) {
      const bool every = (flags->is_number_integer() || flags->is_boolean()) && !EqualsOne(*flags);
      std::fill(layers.begin(), layers.end(), every);
    } else if (!flags->is_number_integer() && !flags->is_boolean()) {
      return Status::Ok();  // anything else Python indexes, or fails on: not known
    }
  } else if (rule->gate == nullptr && rule->dense == nullptr && rule->freq == nullptr) {
    return Status::Ok();  // decided for every layer at once, by the class's reader
  } else {
    if (const auto g = rule->gate == nullptr ? j.end() : j.find(rule->gate);
        rule->gate_always_compared && g != j.end() && !g->is_number() && !g->is_boolean()) {
      return text.Invalid(
          rule->gate, fmt::format("is {}: the engine's decoder layer compares it with {} as the "
                                  "default of {} (which Python evaluates whether or not the "
                                  "config states {}) and raises TypeError as it builds the model",
                                  g->dump(), rule->gate_above, rule->switch_key, rule->switch_key));
    }
    const auto switched = rule->switch_key == nullptr ? j.end() : j.find(rule->switch_key);
    if (switched != j.end()) {
      if (!PythonTruth(*switched)) {
        m.builds_no_experts = true;
        return Status::Ok();
      }
    } else if (rule->gate != nullptr) {
      // Absent: the count of the fork's config class for the model type (None for 0), where it
      // defines it.
      const std::optional<int64_t> of_class = ForkClassExpertCount(m.model_type, rule->gate);
      const nlohmann::json class_count =
          of_class && *of_class > 0 ? nlohmann::json(*of_class) : nlohmann::json();
      const auto stated = j.find(rule->gate);
      const nlohmann::json* gate = stated != j.end() ? &*stated : of_class ? &class_count : nullptr;
      // A count that is not a number: Python's comparison decides, or raises; not known.
      if (gate == nullptr || (rule->gate_above >= 0 && !gate->is_number())) return Status::Ok();
      if (rule->gate_above >= 0 ? !(gate->get<double>() > rule->gate_above) : gate->is_null()) {
        m.builds_no_experts = true;
        return Status::Ok();
      }
    }
    int64_t dense = 0;
    if (rule->dense != nullptr && (j.contains(rule->dense) || rule->dense_default < 0)) {
      const std::optional<int64_t> v = stated_int(rule->dense);
      if (!v) return Status::Ok();
      dense = *v;
    } else if (rule->dense != nullptr) {
      dense = rule->dense_default;
    }
    int64_t last = n - 1;
    if (rule->last != nullptr && j.contains(rule->last)) {
      const std::optional<int64_t> v = stated_int(rule->last);
      if (!v) return Status::Ok();
      if (*v != -1) last = *v;
    }
    int64_t freq = rule->freq_default;
    if (rule->freq != nullptr) {
      if (j.contains(rule->freq) || rule->freq_stated) {
        const std::optional<int64_t> v = stated_int(rule->freq);
        if (!v) return Status::Ok();
        freq = *v;
      }
    }
    int64_t offset = rule->offset_default;
    if (rule->offset != nullptr && j.contains(rule->offset)) {
      const std::optional<int64_t> v = stated_int(rule->offset);
      if (!v) return Status::Ok();
      offset = *v;
    }
    // Python's % takes the divisor's sign, C++'s the dividend's: a negative period is not known
    // (the class that reads one, Jamba's, refuses it with its config).
    if (rule->freq_from == LayerFreq::kAtOffset && freq < 0) return Status::Ok();
    std::vector<bool> dense_listed(static_cast<size_t>(n), false);
    const auto only = j.find("mlp_only_layers");
    if (rule->mlp_only_first && (only == j.end() || only->is_null())) {
      dense_listed[0] = true;
    } else if (rule->mlp_only_layers && only != j.end()) {
      const nlohmann::json& listed = *only;
      if (!listed.is_array()) return Status::Ok();
      for (const nlohmann::json& e : listed) {
        // Python's `in` compares by value: 1.0 and True list layer 1.
        const double layer = e.is_boolean()  ? (e.get<bool>() ? 1.0 : 0.0)
                             : e.is_number() ? e.get<double>()
                                             : -1.0;
        if (layer >= 0 && layer < static_cast<double>(n) && std::trunc(layer) == layer) {
          dense_listed[static_cast<size_t>(layer)] = true;
        }
      }
    } else if (rule->mlp_only_layers && rule->mlp_only_stated) {
      return Status::Ok();
    }
    if (freq <= 0 && rule->zero_freq_none) {
      m.expert_layers = std::move(layers);  // none
      return Status::Ok();
    }
    auto zero_freq = [&](int64_t layer) {
      return text.Invalid(rule->freq,
                          fmt::format("is 0: the engine's decoder layer for layer {} divides by "
                                      "it and raises ZeroDivisionError as it builds the model",
                                      layer));
    };
    if (rule->freq_first && rule->freq_from != LayerFreq::kNone && freq == 0) return zero_freq(0);
    for (int64_t i = 0; i < n; ++i) {
      if (i < dense || i > last) continue;
      if (dense_listed[static_cast<size_t>(i)]) continue;
      // Python's % on unbounded ints: 128 bits hold every difference of two 64-bit values.
      const __int128 counted = rule->freq_from == LayerFreq::kFromDense ? __int128{i} - dense
                               : rule->freq_from == LayerFreq::kFromOne ? __int128{i} + 1
                                                                        : __int128{i};
      if (rule->freq_from != LayerFreq::kNone && freq == 0) return zero_freq(i);
      layers[static_cast<size_t>(i)] =
          rule->freq_from == LayerFreq::kNone ||
          counted % freq ==
              (rule->freq_from == LayerFreq::kAtOffset ? __int128{offset} : __int128{0});
    }
  }
  m.expert_layers = std::move(layers);
  return Status::Ok();
}

// The classes whose MoE layers raise as they are built where the tensor-parallel size is above
// the expert count their config states ('Tensor parallel size 8 is greater than the number of
// experts 4.'; the fork's model files at 28be48fa9: Qwen2-MoE's, Qwen3 MoE's and Qwen3-Next's
// sparse MoE blocks, which Qwen3-VL MoE, Qwen3-Omni, Qwen3.5 MoE and Intern-S2 build too, and
// the MoE blocks of Intern-S1 Pro, Laguna, Cohere2 MoE, EXAONE MoE, ERNIE 4.5 MoE and VL MoE,
// Step 3, Step 3.5, MiMo-V2, HY-V3, HunYuan's (HunYuan dense and MoE, HunYuan-VL's language
// model), LFM2-MoE and MiniMax-M2), with the key each reads; ERNIE 4.5 VL MoE compares the
// largest entry of its list. Sorted.
constexpr std::pair<std::string_view, const char*> kTpAboveExpertsRaises[] = {
    {"Cohere2MoeForCausalLM", "num_experts"},
    {"Ernie4_5_MoeForCausalLM", "moe_num_experts"},
    {"Ernie4_5_VLMoeForConditionalGeneration", "moe_num_experts"},
    {"ExaoneMoEForCausalLM", "num_experts"},
    {"HYV3ForCausalLM", "num_experts"},
    {"HunYuanDenseV1ForCausalLM", "num_experts"},
    {"HunYuanMoEV1ForCausalLM", "num_experts"},
    {"HunYuanVLForConditionalGeneration", "num_experts"},
    {"InternS1ProForConditionalGeneration", "num_experts"},
    {"InternS2PreviewForConditionalGeneration", "num_experts"},
    {"LagunaForCausalLM", "num_experts"},
    {"Lfm2MoeForCausalLM", "num_experts"},
    {"MiMoV2FlashForCausalLM", "n_routed_experts"},
    {"MiMoV2ForCausalLM", "n_routed_experts"},
    {"MiMoV2OmniForCausalLM", "n_routed_experts"},
    {"MiniMaxM2ForCausalLM", "num_local_experts"},
    {"Qwen2MoeForCausalLM", "num_experts"},
    {"Qwen3MoeForCausalLM", "num_experts"},
    {"Qwen3NextForCausalLM", "num_experts"},
    {"Qwen3OmniMoeForConditionalGeneration", "num_experts"},
    {"Qwen3VLMoeForConditionalGeneration", "num_experts"},
    {"Qwen3_5MoeForConditionalGeneration", "num_experts"},
    {"Step3TextForCausalLM", "moe_num_experts"},
    {"Step3VLForConditionalGeneration", "moe_num_experts"},
    {"Step3p5ForCausalLM", "moe_num_experts"},
};
static_assert(std::is_sorted(std::begin(kTpAboveExpertsRaises), std::end(kTpAboveExpertsRaises)));

// Records m.tp_checked_experts: the count the MoE layers of `engine_class` compare the
// tensor-parallel size with, as `text` states it (a list's largest integer for ERNIE 4.5 VL MoE),
// else as the fork's config class for m.model_type defines it (kForkClassExpertCounts).
void RecordTpCheckedExperts(const nlohmann::json& text, std::string_view engine_class,
                            ModelDescription& m) {
  const auto* row =
      RowOf(kTpAboveExpertsRaises, &std::pair<std::string_view, const char*>::first, engine_class);
  if (row == nullptr) return;
  const auto v = text.find(row->second);
  if (v == text.end()) {
    // The default of the fork's config class, where it defines that key.
    if (const std::optional<int64_t> n = ForkClassExpertCount(m.model_type, row->second);
        n && *n > 0) {
      m.tp_checked_experts = *n;
      m.tp_checked_experts_printed = std::to_string(*n);
    }
    return;
  }
  std::optional<int64_t> count;
  std::vector<int64_t> listed;
  if (v->is_array() && engine_class.starts_with("Ernie4_5_VL")) {
    for (const nlohmann::json& e : *v) {
      const std::optional<int64_t> n = JsonIntIn(e, 0, kMaxModelDim);
      if (!n) return;
      count = std::max(count.value_or(0), *n);
      listed.push_back(*n);
    }
  } else if (v->is_boolean()) {
    if (v->get<bool>()) count = 1;  // True: 1 expert, printed as Python prints it
  } else if (!v->is_array()) {
    count = JsonIntIn(*v, 1, kMaxModelDim);
  }
  if (!count || *count == 0) return;
  m.tp_checked_experts = *count;
  // ERNIE 4.5 VL MoE's message prints the list.
  m.tp_checked_experts_printed = v->is_array()     ? fmt::format("[{}]", fmt::join(listed, ", "))
                                 : v->is_boolean() ? "True"
                                                   : std::to_string(*count);
}

// The classes whose decoder layers build an MLP or MoE block that takes only silu and raises as
// it is built for any other activation ("Unsupported activation: gelu. Only silu is supported for
// now."; the fork's model files at 28be48fa9: LlamaMLP, Qwen2MLP, MistralMLP, DeepseekV2MLP and
// DeepseekV2MoE, Glm4MoE, the OpenPangu, Dots1, AXK1, AFMoE, MiMo-V2, Kimi and other MLPs, each
// traced from its registry class), with the key the MLP reads from the text config kvtopo reads
// for that class (EXAONE 3's activation_function): in every layer, or (dense_only) in the dense
// layers of a MoE class and, where `shared` is above 0, as the shared expert of its MoE layers.
// The draft classes (keyed by the name ResolveDraftConfig gives them) build their layers over the
// draft's own config: the EAGLE and EAGLE-3 Llama heads' LlamaMLP (llama_eagle.py,
// llama_eagle3.py, every name the registry maps to them), the Mistral heads' MistralMLP and
// DeepSeek-V2 layers, the DeepSeek EAGLE-3 heads' DeepseekV2MLP and DFlash's Qwen2MLP. A wrapper
// whose reader kvtopo gives the root names the nested config its language model is built over
// (config_at); wrappers whose language model reads a config kvtopo cannot tell are left out.
// Sorted.
constexpr bool kDenseLayers = true;
struct SiluOnlyMlp {
  std::string_view engine_class;
  const char* key;
  bool dense_only = false;
  const char* shared = nullptr;
  const char* says = "Only silu is supported for now.";  // the message's second sentence
  const char* also = nullptr;                            // another activation the MLP takes
  // dense_only: every layer is dense where this count is absent or 0 (MiniCPM's num_experts).
  const char* dense_without = nullptr;
  // Its config class builds the shared expert where the config leaves `shared` out (a default
  // above 0: ERNIE 4.5 MoE's 2, HY-V3's 1, Qwen2-MoE's 5632, Laguna's, Qwen3-Next's and Qwen3.5
  // MoE's 512).
  bool shared_when_absent = false;
  const char* shared_is = "shared expert";  // what `shared` builds beside the experts
  bool shared_truthy = false;  // `shared` is read for Python's truth (Arctic's), not `> 0`
  // The model class itself compares `shared` with 0 as it is built, MoE layers or not, unless
  // this key is true to Python (Qwen2-MoE's `mlp_only_layers or ... > 0`).
  const char* shared_compared_unless = nullptr;
  // Every layer builds a shared MLP where this key is not 0 (Python's `== 0`: 0, 0.0 and false
  // are 0); absent: where `every_layer_default` (its config class's default is not 0).
  const char* every_layer_unless_zero = nullptr;
  bool every_layer_default = false;
  // The nested config the class builds its language model over, where kvtopo's reader for it is
  // given the root (Bagel's llm_config, GLM-ASR's and MiDashengLM's text_config; absent: its
  // config class's defaults, silu), or (else_root) the root where the config has none
  // (PaddleOCR-VL merges text_config, with its class's defaults, into the root).
  const char* config_at = nullptr;
  bool else_root = false;
  const char* or_at = nullptr;  // where config_at is absent, this nested config (Molmo 2's)
  // The MLP asserts instead of raising (Molmo 2's LanguageModelMLP): the assertion's text.
  const char* asserts = nullptr;
};
constexpr SiluOnlyMlp SharedWhenAbsent(SiluOnlyMlp row) {
  row.shared_when_absent = true;
  return row;
}
constexpr const char* kSiluOrFatrelu = "Only silu and fatrelu are supported for now.";
constexpr SiluOnlyMlp kSiluOnlyMlp[] = {
    {"AXK1ForCausalLM", "hidden_act"},
    {"AfmoeForCausalLM", "hidden_act"},
    {"AquilaForCausalLM", "hidden_act"},
    {"AquilaModel", "hidden_act"},
    // Its ArcticMLP: in the layers without experts, and as the residual MLP of those with
    // experts where use_residual is true.
    {.engine_class = "ArcticForCausalLM",
     .key = "hidden_act",
     .dense_only = kDenseLayers,
     .shared = "use_residual",
     .shared_is = "residual MLP",
     .shared_truthy = true},
    {"AriaForConditionalGeneration", "hidden_act"},
    {"AudioFlamingo3ForConditionalGeneration", "hidden_act"},
    {.engine_class = "BagelForConditionalGeneration",
     .key = "hidden_act",
     .config_at = "llm_config"},
    {"BaiChuanForCausalLM", "hidden_act"},
    {"BaichuanForCausalLM", "hidden_act"},
    {"BambaForCausalLM", "hidden_act"},
    {"ChameleonForConditionalGeneration", "hidden_act"},
    {"Cheers", "hidden_act"},
    {"CheersForConditionalGeneration", "hidden_act"},
    {"CwmForCausalLM", "hidden_act"},
    {"DFlashDraftModel", "hidden_act"},
    {"DeepseekForCausalLM", "hidden_act"},
    {"DeepseekV2ForCausalLM", "hidden_act"},
    {"DeepseekV32ForCausalLM", "hidden_act"},
    {"DeepseekV3ForCausalLM", "hidden_act"},
    {"Dots1ForCausalLM", "hidden_act"},
    {"DotsOCRForCausalLM", "hidden_act"},
    {"Eagle3DeepseekV2ForCausalLM", "hidden_act"},
    {"Eagle3DeepseekV3ForCausalLM", "hidden_act"},
    {"Eagle3LlamaForCausalLM", "hidden_act"},
    {"Eagle3MiniMaxM2ForCausalLM", "hidden_act"},
    {"Eagle3Qwen2_5vlForCausalLM", "hidden_act"},
    {"Eagle3Qwen3vlForCausalLM", "hidden_act"},
    {"EagleLlamaForCausalLM", "hidden_act"},
    {"EagleMistralForCausalLM", "hidden_act"},
    {"EagleMistralLarge3ForCausalLM", "hidden_act"},
    {"Ernie4_5ForCausalLM", "hidden_act"},
    SharedWhenAbsent(
        {"Ernie4_5_MoeForCausalLM", "hidden_act", kDenseLayers, "moe_num_shared_experts"}),
    {"Exaone4ForCausalLM", "hidden_act"},
    {"Exaone4_5_ForConditionalGeneration", "hidden_act"},
    {"ExaoneForCausalLM", "activation_function"},
    // ExaoneMoeConfig defaults num_shared_experts to 1.
    SharedWhenAbsent({"ExaoneMoEForCausalLM", "hidden_act", kDenseLayers, "num_shared_experts"}),
    {"Fairseq2LlamaForCausalLM", "hidden_act"},
    {"FalconH1ForCausalLM", "hidden_act"},
    {"FireRedASR2ForConditionalGeneration", "hidden_act"},
    {"FunASRForConditionalGeneration", "hidden_act"},
    {"FunAudioChatForConditionalGeneration", "hidden_act"},
    {"Glm4ForCausalLM", "hidden_act"},
    {"Glm4MoeForCausalLM", "hidden_act"},
    {"Glm4MoeLiteForCausalLM", "hidden_act"},
    {"Glm4vForConditionalGeneration", "hidden_act"},
    {"Glm4vMoeForConditionalGeneration", "hidden_act"},
    {.engine_class = "GlmAsrForConditionalGeneration",
     .key = "hidden_act",
     .config_at = "text_config"},
    {"GlmForCausalLM", "hidden_act"},
    {"GlmMoeDsaForCausalLM", "hidden_act"},
    {"GlmOcrForConditionalGeneration", "hidden_act"},
    {"Granite4VisionForConditionalGeneration", "hidden_act"},
    {"GraniteForCausalLM", "hidden_act"},
    // GraniteMoeSharedMLP, in every layer (attention and Mamba layers alike) for a
    // shared_intermediate_size not 0: GraniteMoeHybridConfig's default is 1024,
    // GraniteMoeSharedConfig's 0.
    {.engine_class = "GraniteMoeHybridForCausalLM",
     .key = "hidden_act",
     .every_layer_unless_zero = "shared_intermediate_size",
     .every_layer_default = true},
    {.engine_class = "GraniteMoeSharedForCausalLM",
     .key = "hidden_act",
     .every_layer_unless_zero = "shared_intermediate_size"},
    {"GritLM", "hidden_act"},
    SharedWhenAbsent({"HYV3ForCausalLM", "hidden_act", kDenseLayers, "num_shared_experts"}),
    {"HunYuanDenseV1ForCausalLM", "hidden_act", kDenseLayers, "use_mixed_mlp_moe"},
    {"HunYuanMoEV1ForCausalLM", "hidden_act", kDenseLayers, "use_mixed_mlp_moe"},
    {"HyperCLOVAXForCausalLM", "hidden_act"},
    {"IQuestCoderForCausalLM", "hidden_act"},
    {"IQuestLoopCoderForCausalLM", "hidden_act"},
    {"Idefics3ForConditionalGeneration", "hidden_act"},
    {"InternLM2ForCausalLM", "hidden_act"},
    {"InternLM2VEForCausalLM", "hidden_act"},
    {"InternLM3ForCausalLM", "hidden_act"},
    {"InternLMForCausalLM", "hidden_act"},
    {"InternS1ProForConditionalGeneration", "hidden_act", kDenseLayers},
    {"JambaForCausalLM", "hidden_act", kDenseLayers},
    {"KananaVForConditionalGeneration", "hidden_act"},
    {"KimiK25ForConditionalGeneration", "hidden_act"},
    {"KimiLinearForCausalLM", "hidden_act"},
    {"KimiVLForConditionalGeneration", "hidden_act"},
    {"LLaMAForCausalLM", "hidden_act"},
    SharedWhenAbsent({"LagunaForCausalLM", "hidden_act", kDenseLayers,
                      "shared_expert_intermediate_size", "Only silu is supported."}),
    {"LlamaForCausalLM", "hidden_act"},
    {"LlamaForCausalLMEagle3", "hidden_act"},
    {"LlamaModel", "hidden_act"},
    {.engine_class = "MiDashengLMModel", .key = "hidden_act", .config_at = "text_config"},
    {"MiMoForCausalLM", "hidden_act"},
    {"MiMoV2FlashForCausalLM", "hidden_act"},
    {"MiMoV2ForCausalLM", "hidden_act"},
    {"MiniCPM3ForCausalLM", "hidden_act", kDenseLayers, nullptr, kSiluOrFatrelu, "fatrelu",
     "num_experts"},
    {"MiniCPMForCausalLM", "hidden_act", kDenseLayers, nullptr, kSiluOrFatrelu, "fatrelu",
     "num_experts"},
    {"MiniCPMV4_6ForConditionalGeneration", "hidden_act"},
    {"Ministral3ForCausalLM", "hidden_act"},
    {"MistralForCausalLM", "hidden_act"},
    {"MistralModel", "hidden_act"},
    // Molmo 2's LanguageModelMLP, over text_config (else llm_config), asserts silu.
    {.engine_class = "Molmo2ForConditionalGeneration",
     .key = "hidden_act",
     .config_at = "text_config",
     .or_at = "llm_config",
     .asserts = "assert hidden_act == \"silu\""},
    {"MusicFlamingoForConditionalGeneration", "hidden_act"},
    {"OpenCUAForConditionalGeneration", "hidden_act"},
    {"OpenPanguVLForConditionalGeneration", "hidden_act"},
    {"OrionForCausalLM", "hidden_act"},
    {"OuroForCausalLM", "hidden_act"},
    {.engine_class = "PaddleOCRVLForConditionalGeneration",
     .key = "hidden_act",
     .config_at = "text_config",
     .else_root = true},
    {"PanguEmbeddedForCausalLM", "hidden_act"},
    {"PanguProMoEV2ForCausalLM", "hidden_act"},
    {"PanguUltraMoEForCausalLM", "hidden_act"},
    {"PeagleLlamaForCausalLM", "hidden_act"},
    {"Phi3ForCausalLM", "hidden_act"},
    {"Phi3VForCausalLM", "hidden_act"},
    {"Phi4ForCausalLMV", "hidden_act"},
    {"Phi4MMForCausalLM", "hidden_act"},
    {"Qwen2AudioForConditionalGeneration", "hidden_act"},
    {"Qwen2ForCausalLM", "hidden_act"},
    {"Qwen2Model", "hidden_act"},
    {.engine_class = "Qwen2MoeForCausalLM",
     .key = "hidden_act",
     .dense_only = kDenseLayers,
     .shared = "shared_expert_intermediate_size",
     .shared_when_absent = true,
     .shared_compared_unless = "mlp_only_layers"},
    {"Qwen2VLForConditionalGeneration", "hidden_act"},
    {"Qwen2_5OmniForConditionalGeneration", "hidden_act"},
    {"Qwen2_5OmniModel", "hidden_act"},
    {"Qwen2_5_VLForConditionalGeneration", "hidden_act"},
    {"Qwen3ASRForConditionalGeneration", "hidden_act"},
    {"Qwen3ASRRealtimeGeneration", "hidden_act"},
    {"Qwen3ForCausalLM", "hidden_act"},
    {"Qwen3MoeForCausalLM", "hidden_act", kDenseLayers, "shared_expert_intermediate_size"},
    SharedWhenAbsent(
        {"Qwen3NextForCausalLM", "hidden_act", kDenseLayers, "shared_expert_intermediate_size"}),
    {"Qwen3OmniMoeForConditionalGeneration", "hidden_act", kDenseLayers,
     "shared_expert_intermediate_size"},
    {"Qwen3VLForConditionalGeneration", "hidden_act"},
    {"Qwen3VLMoeForConditionalGeneration", "hidden_act", kDenseLayers,
     "shared_expert_intermediate_size"},
    {"Qwen3_5ForConditionalGeneration", "hidden_act"},
    SharedWhenAbsent({"Qwen3_5MoeForConditionalGeneration", "hidden_act", kDenseLayers,
                      "shared_expert_intermediate_size"}),
    {"SeedOssForCausalLM", "hidden_act"},
    {"SmolVLMForConditionalGeneration", "hidden_act"},
    {"SolarForCausalLM", "hidden_act"},
    {"Tarsier2ForConditionalGeneration", "hidden_act"},
    {"TeleChat3ForCausalLM", "hidden_act"},
    {"TeleFLMForCausalLM", "hidden_act"},
    {"XverseForCausalLM", "hidden_act"},
};
static_assert(SortedBy(kSiluOnlyMlp, &SiluOnlyMlp::engine_class));

// Records in m the activation the text config states (`config`, or its nested config_at) for a
// class of kSiluOnlyMlp where it is not the
// string "silu" (the MLP compares with !=) and the model builds a checking MLP: every layer, a
// dense one (m.expert_layers, builds_no_experts), or the shared expert of a MoE layer; nothing
// where the key is absent (the config classes kvtopo reads default it to silu, or their default
// is not known). After RecordExpertLayers.
void RecordSiluOnlyActivation(const nlohmann::json& config, std::string_view engine_class,
                              ModelDescription& m) {
  const SiluOnlyMlp* row = RowOf(kSiluOnlyMlp, &SiluOnlyMlp::engine_class, engine_class);
  if (row == nullptr || !config.is_object()) return;
  const nlohmann::json* at = &config;
  if (row->config_at != nullptr) {
    const auto nested = config.find(row->config_at);
    const auto other = row->or_at == nullptr ? config.end() : config.find(row->or_at);
    if (nested != config.end() && nested->is_object()) {
      at = &*nested;
    } else if (nested == config.end() && other != config.end() && other->is_object()) {
      at = &*other;
    } else if (!row->else_root) {
      return;
    }
  }
  const nlohmann::json& text = *at;
  const auto v = text.find(row->key);
  if (v == text.end() || (v->is_string() && (v->get_ref<const std::string&>() == "silu" ||
                                             (row->also != nullptr &&
                                              v->get_ref<const std::string&>() == row->also)))) {
    return;
  }
  std::string where = "in every layer";
  if (row->every_layer_unless_zero != nullptr) {
    const auto size = text.find(row->every_layer_unless_zero);
    const bool zero = size == text.end()   ? !row->every_layer_default
                      : size->is_boolean() ? !size->get<bool>()
                                           : size->is_number() && size->get<double>() == 0;
    if (zero) return;
    where = "as every layer's shared MLP";
  } else if (row->dense_only) {
    const int64_t n = m.num_hidden_layers;
    const auto count = row->dense_without == nullptr ? text.end() : text.find(row->dense_without);
    const bool dense = m.builds_no_experts ||
                       (static_cast<int64_t>(m.expert_layers.size()) == n &&
                        std::find(m.expert_layers.begin(), m.expert_layers.end(), false) !=
                            m.expert_layers.end()) ||
                       (row->dense_without != nullptr &&
                        (count == text.end() || (count->is_number() && count->get<double>() == 0) ||
                         (count->is_boolean() && !count->get<bool>())));
    const auto shared = row->shared == nullptr ? text.end() : text.find(row->shared);
    // Python's `> 0`: a number above 0, or True; or Python's truth.
    const bool shared_expert =
        m.BuiltExperts() > 0 &&
        (shared == text.end()   ? row->shared_when_absent
         : row->shared_truthy   ? PythonTruth(*shared)
         : shared->is_boolean() ? shared->get<bool>()
                                : shared->is_number() && shared->get<double>() > 0);
    if (!dense && !shared_expert) return;
    where = dense && shared_expert
                ? fmt::format("in its dense layers and as its MoE layers' {}", row->shared_is)
            : dense ? "in its dense layers"
                    : fmt::format("as its MoE layers' {}", row->shared_is);
  }
  m.unsupported_activation_key = row->key;
  m.unsupported_activation_where = fmt::format(
      "for silu{} only {}", row->also == nullptr ? "" : fmt::format(" and {}", row->also), where);
  m.unsupported_activation_says = row->says;
  m.unsupported_activation_asserts = row->asserts == nullptr ? "" : row->asserts;
  m.unsupported_activation_json = v->dump();
  m.unsupported_activation = PythonStr(*v);
}

// Refuses a shared-expert key that the MoE block of `engine_class` (a kSiluOnlyMlp row's
// `shared`) compares with 0 as each MoE layer is built (`> 0`; Qwen3-Next's and Qwen3.5 MoE's
// `<= 0`) where the config states a value Python cannot compare with a number (null, a string, a
// list, an object): TypeError at the first MoE layer, or (shared_compared_unless) as the model
// class is built. Not Arctic's, read for its truth, nor Granite's shared MLP size, compared with
// `==`.
Status CheckSharedExpertKey(const ConfigReader& text, std::string_view engine_class,
                            const ModelDescription& m) {
  const SiluOnlyMlp* row = RowOf(kSiluOnlyMlp, &SiluOnlyMlp::engine_class, engine_class);
  if (row == nullptr || row->shared == nullptr || row->shared_truthy || row->config_at != nullptr) {
    return Status::Ok();
  }
  const nlohmann::json& j = text.json();
  const auto v = j.find(row->shared);
  if (v == j.end() || v->is_number() || v->is_boolean()) return Status::Ok();
  const auto unless =
      row->shared_compared_unless == nullptr ? j.end() : j.find(row->shared_compared_unless);
  if (row->shared_compared_unless != nullptr && (unless == j.end() || !PythonTruth(*unless))) {
    return text.Invalid(row->shared,
                        fmt::format("is {}: the engine's {} compares it with 0 as it builds the "
                                    "model (its {} being empty) and raises TypeError; state a "
                                    "number",
                                    v->dump(), engine_class, row->shared_compared_unless));
  }
  if (m.BuiltExperts() == 0) return Status::Ok();
  return text.Invalid(row->shared,
                      fmt::format("is {}: the engine's MoE block compares it with 0 as it builds "
                                  "the first MoE layer and raises TypeError as it builds the "
                                  "model; state a number",
                                  v->dump()));
}

// What the engine's class `engine_class` builds over `text` that the startup checks read: the
// layers that hold its experts (RecordExpertLayers), the count its MoE layers check the
// tensor-parallel size against, and an activation its MLPs refuse; the expert count the engine's
// model config cannot hold is refused, and what the class raises on as it builds its layers
// where options.builds_engine_class.
Status RecordMoeBuild(const ConfigReader& text, std::string_view engine_class,
                      const ModelClassOptions& options, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(CheckEngineExpertCount(text, m.model_type));
  RecordTpCheckedExperts(text.json(), engine_class, m);
  // What the class refuses as it builds its layers: only where it builds them.
  const Status layers = RecordExpertLayers(text, engine_class, m);
  if (!layers.ok() && options.builds_engine_class) return layers;
  RecordSiluOnlyActivation(text.json(), engine_class, m);
  return options.builds_engine_class ? CheckSharedExpertKey(text, engine_class, m) : Status::Ok();
}

// The text model's hidden_size, num_hidden_layers and vocab_size, where `m` does not hold them
// yet: the values `text` states (the engine's class reads them as stated; a class default is
// filled by ReadWithClassDefaults), else unknown. The layer count also under the names config
// classes map to num_hidden_layers (attribute_map: GPT-2's and Bloom's n_layer, MPT's and
// DBRX's n_layers, ChatGLM's and EXAONE's num_layers).
void RecordTextShape(const nlohmann::json& text, ModelDescription& m) {
  if (!text.is_object()) return;
  if (m.num_experts == 0) {
    m.num_experts = EngineExpertCount(text, m.model_type);
    m.experts_hidden_by = ExpertsHiddenBy(text, m.model_type);
  }
  auto stated = [&](std::initializer_list<const char*> keys) {
    return std::any_of(keys.begin(), keys.end(),
                       [&](const char* key) { return text.contains(key) && !text[key].is_null(); });
  };
  m.states_experts_per_token =
      m.states_experts_per_token || stated({"num_experts_per_tok", "top_k_experts"});
  m.states_capturer_expert_count = m.states_capturer_expert_count ||
                                   stated({"num_experts", "n_routed_experts", "num_local_experts"});
  for (auto [key, out, max] :
       {std::tuple{"hidden_size", &m.hidden_size, kMaxModelDim},
        std::tuple{"num_hidden_layers", &m.num_hidden_layers, kMaxModelDim},
        std::tuple{"n_layer", &m.num_hidden_layers, kMaxModelDim},
        std::tuple{"n_layers", &m.num_hidden_layers, kMaxModelDim},
        std::tuple{"num_layers", &m.num_hidden_layers, kMaxModelDim},
        std::tuple{"moe_intermediate_size", &m.moe_intermediate_size, kMaxModelDim},
        std::tuple{"vocab_size", &m.vocab_size, int64_t{std::numeric_limits<int32_t>::max()}}}) {
    if (*out != 0 || !text.contains(key)) continue;
    *out = JsonIntIn(text[key], 1, max).value_or(0);
  }
}

// `r` as the config class `text` describes builds it, whatever model type it states: the class's
// defaults fill what it leaves out.
Status ReadWithClassDefaults(const ConfigReader& r, const TypedTextModel& text,
                             ModelDescription& m) {
  nlohmann::json filled = r.json();
  const std::array<std::pair<const char*, int64_t>, 5> defaults = {{
      {"hidden_size", text.hidden_size},
      {"num_hidden_layers", text.num_hidden_layers},
      {"num_attention_heads", text.num_attention_heads},
      {"num_key_value_heads", text.num_key_value_heads},
      {"max_position_embeddings", text.max_position_embeddings},
  }};
  for (const auto& [key, value] : defaults) {
    if (value > 0 && !filled.contains(key)) filled[key] = value;
  }
  RecordTextShape(filled, m);
  return text.read(r.Over(filled), m);
}

// Rnj-1 through Gemma3TextConfig's defaults (ReadRnj1Layers takes the length's default itself,
// so its message says it is the class's).
constexpr TypedTextModel kRnj1Text{"gemma3_text", ReadRnj1Layers, 2304, 26, 8, 4, 0};
Status ReadRnj1(const ConfigReader& r, ModelDescription& m) {
  return ReadWithClassDefaults(r, kRnj1Text, m);
}

// `models[0]` is the wrapper's default model type; `wrapper` names it in messages.
template <size_t N>
Status ReadTypedTextModel(const ConfigReader& r, const std::array<TypedTextModel, N>& models,
                          const char* wrapper, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, r.StringOr("model_type", models[0].model_type));
  const auto* text = std::find_if(models.begin(), models.end(),
                                  [&](const TypedTextModel& t) { return type == t.model_type; });
  if (text == models.end()) {
    std::vector<std::string> types;
    for (const TypedTextModel& t : models) types.emplace_back(t.model_type);
    return r.Invalid("model_type",
                     fmt::format("is '{}': kvtopo plans {} language models of model type {}", type,
                                 wrapper, fmt::join(types, " or ")));
  }
  return ReadWithClassDefaults(r, *text, m);
}
// LLaVA (and LLaVA-NeXT, LLaVA-NeXT-Video, Mantis, Tarsier), PaliGemma and Mistral 3 (llava.py,
// paligemma.py, mistral3.py, ...): the language model read by its model type, and the registered
// class the wrapper builds over it recorded (init_vllm_registered_model over text_config names
// no class: with_hf_config takes the config's first architecture, else the causal-LM class of
// its model type; an empty list the registry refuses, "No model architectures are specified").
// Empty where the model type maps to no class kvtopo knows (Mistral 3's ministral3, which the
// engine builds as its Mistral class either way).
template <size_t N>
Status ReadRegisteredTextModel(const ConfigReader& r, const std::array<TypedTextModel, N>& models,
                               const char* wrapper, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadTypedTextModel(r, models, wrapper, m));
  if (r.Has("architectures")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> named, r.StringList("architectures"));
    if (named.empty()) {
      return r.Invalid("architectures",
                       "is empty: the engine's registry finds no class to build ('No model "
                       "architectures are specified')");
    }
    m.language_model_architecture = named.front();
    return Status::Ok();
  }
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, r.StringOr("model_type", models[0].model_type));
  if (const char* typed = CausalLmClassForType(type)) m.language_model_architecture = typed;
  return Status::Ok();
}
Status ReadLlava(const ConfigReader& r, ModelDescription& m) {
  return ReadRegisteredTextModel(r, kLlavaTextModels, "LLaVA", m);
}
Status ReadPaliGemma(const ConfigReader& r, ModelDescription& m) {
  return ReadRegisteredTextModel(r, kPaliGemmaTextModels, "PaliGemma", m);
}
Status ReadMistral3(const ConfigReader& r, ModelDescription& m) {
  return ReadRegisteredTextModel(r, kMistral3TextModels, "Mistral 3", m);
}
// LlamaModel and MistralModel (the registry's pooling entries built as LlamaForCausalLM): Llama's
// layers over the config its model type names, llama or mistral (the name's when unstated).
constexpr std::array<TypedTextModel, 2> kMistralOrLlamaTextModels = {
    {kMistralConfigText, kLlamaConfigText}};
Status ReadLlamaModel(const ConfigReader& r, ModelDescription& m) {
  return ReadTypedTextModel(r, kLlavaTextModels, "LlamaModel", m);
}
Status ReadMistralModel(const ConfigReader& r, ModelDescription& m) {
  return ReadTypedTextModel(r, kMistralOrLlamaTextModels, "MistralModel", m);
}
Status ReadQwen2Text(const ConfigReader& r, ModelDescription& m) {
  return ReadTypedTextModel(r, kQwen2TextModels, "this wrapper's", m);
}
Status ReadLlamaText(const ConfigReader& r, ModelDescription& m) {
  return ReadTypedTextModel(r, kLlamaTextModels, "this wrapper's", m);
}
// FunAudioChat (funaudiochat.py over the fork's FunAudioChatConfig): the engine's Qwen3 model
// over text_config, which the config class builds by its model type, qwen2 when it states none
// (a Qwen2Config read by Qwen3 code: head_dim when stated, else hidden_size / heads).
constexpr std::array<TypedTextModel, 2> kFunAudioChatTextModels = {{
    ReadBy(kQwen2ConfigText, ReadDenseAs<kQwen3>),
    {"qwen3", ReadDenseAs<kQwen3>, 4096, 32, 32, 32, 32768},
}};
Status ReadFunAudioChatText(const ConfigReader& r, ModelDescription& m) {
  return ReadTypedTextModel(r, kFunAudioChatTextModels, "FunAudioChat", m);
}

// Chameleon (chameleon.py over Transformers' ChameleonConfig): Llama-like layers over the root
// config, hidden_size / heads wide (the model does not read a head_dim), over
// num_key_value_heads; no window. The class's defaults fill what the config leaves out: 4096
// hidden, 32 layers, 32 heads, 32 K/V heads, 4096 positions.
constexpr DenseFamily kChameleon{.name = "Chameleon",
                                 .default_positions = 4096,
                                 .absent_kv_heads = 32,
                                 .reads_head_dim = false,
                                 .windows = DenseWindows::kNone};
constexpr std::array<TypedTextModel, 1> kChameleonModels = {
    {{"chameleon", ReadDenseAs<kChameleon>, 4096, 32, 32, 32, 4096}}};
Status ReadChameleon(const ConfigReader& r, ModelDescription& m) {
  return ReadTypedTextModel(r, kChameleonModels, "Chameleon", m);
}

// Molmo (molmo.py): the root config's layers, hidden_size / heads wide (a head_dim is not read),
// over num_key_value_heads, the heads when it is null or 0; no window. Its config class comes
// with the checkpoint, so the other fields are required.
constexpr DenseFamily kMolmo{.name = "Molmo",
                             .absent_kv_heads = kMultiHead,
                             .reads_head_dim = false,
                             .windows = DenseWindows::kNone};
Status ReadMolmo(const ConfigReader& r, ModelDescription& m) {
  const nlohmann::json& j = r.json();
  if (!j.contains("num_key_value_heads") || j["num_key_value_heads"] != 0) {
    return ReadDense(r, kMolmo, m);
  }
  nlohmann::json filled = r.json();
  filled.erase("num_key_value_heads");
  return ReadDense(r.Over(filled), kMolmo, m);
}

// Keye-VL (keye.py, keye_vl1_5.py): the engine's Qwen3 model over the root config. Those layers
// take the cache-wide window, which the engine sets from sliding_window unless layer_types mix
// kinds (arg_utils, is_interleaved); use_sliding_window is not read. Keye's config class comes
// with the checkpoint (so the fields are required) and, as Keye-VL-8B-Preview's keeps it, its
// sliding_window (4096 by default) stays whatever use_sliding_window says: a stated window
// reaches every layer, and a config that leaves it out is refused (the class would fill its own).
// Keye-VL 1.5's class was not found: only a null (or 0) window plans.
constexpr DenseFamily kKeye{.name = "Keye (the engine's Qwen3)",
                            .absent_kv_heads = kRequired,
                            .windows = DenseWindows::kUniform};
template <bool kV15>
Status ReadKeye(const ConfigReader& r, ModelDescription& m) {
  if (!r.json().contains("sliding_window")) {
    return r.Invalid("sliding_window",
                     "is not stated: Keye's config class, which comes with the checkpoint, fills "
                     "its own (4096 in Keye-VL-8B-Preview's), and the engine then windows every "
                     "layer; state it (null for full attention)");
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, r.IntInOr("sliding_window", 0, 0, kMaxModelLen));
  if (kV15 && window != 0) {
    return r.Invalid("sliding_window",
                     fmt::format("is {}: whether Keye-VL 1.5's config class keeps it (the engine "
                                 "then windows every layer) or drops it without "
                                 "use_sliding_window was not verified; kvtopo plans only a null "
                                 "window",
                                 window));
  }
  return ReadDense(r, kKeye, m);
}

// Qwen (QWenLMHeadModel, qwen.py) refuses a config with `visual` (Qwen-VL's, hasattr) and points
// at QwenVLForConditionalGeneration (qwen_vl.py), which builds the same decoder.
Status ReadQwenLmHead(const ConfigReader& r, ModelDescription& m) {
  if (r.json().contains("visual")) {
    return r.Invalid("visual",
                     "is set (a Qwen-VL config): the engine's QWenLMHeadModel refuses it and asks "
                     "for --hf-overrides '{\"architectures\": "
                     "[\"QwenVLForConditionalGeneration\"]}'; name that architecture in "
                     "config.json to plan it");
  }
  return ReadDense(r, kQwenV1, m);
}

// MiniCPM3 (minicpm3.py): MLA projections, but each layer caches full keys and values per query
// head: num_attention_heads heads (num_key_value_heads is not read) of qk_nope_head_dim +
// qk_rope_head_dim, values padded to that width. No per-layer window. Its config class comes
// with the checkpoint, so every field is required.
constexpr DenseFamily kMiniCpm3{.name = "MiniCPM3", .windows = DenseWindows::kUniform};
Status ReadMiniCpm3(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t nope, r.IntIn("qk_nope_head_dim", 0, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t rope, r.IntIn("qk_rope_head_dim", 0, kMaxModelDim));
  if (nope + rope == 0) {
    return r.Invalid("qk_rope_head_dim",
                     "and qk_nope_head_dim are both 0: the cached head would have no width");
  }
  m.num_kv_heads_total = m.num_attention_heads;
  KVTOPO_ASSIGN_OR_RETURN(std::vector<int64_t> windows, ReadDenseWindows(r, kMiniCpm3, n, m));
  for (int64_t i = 0; i < n; ++i) {
    m.layers.push_back(KvAttentionLayer(i, m, nope + rope, windows[static_cast<size_t>(i)]));
  }
  return Status::Ok();
}

// Gemma 4 (Gemma4ForCausalLM, and Gemma4ForConditionalGeneration with the text model in
// `text_config`; the fork's gemma4.py and models/config.py at 28be48fa9, with the fields of
// Transformers' Gemma4TextConfig and its defaults): sliding and full K/V attention per
// `layer_types` (absent: a full layer in six), the last layer full whatever the list says (the
// config class forces it).
// - Sliding layers: `head_dim` (256) wide, `num_key_value_heads` (4) heads, the window
//   `sliding_window` (512).
// - Full layers: `global_head_dim` (512) wide; with `attention_k_eq_v` (keys reused as values,
//   both still cached) `num_global_key_value_heads` heads, else `num_key_value_heads`.
// - KV sharing: the last `num_kv_shared_layers` (0) layers read the cache of the last earlier
//   layer of their type and keep none; with no such layer the engine's lookup fails, so the
//   config is refused.
// - A logits soft cap only where the config states attn_logit_softcapping (the class has no
//   such field; the layers take getattr's None).
// - Head sizes that differ, the larger above 256: the engine runs every layer on TRITON_ATTN
//   unless the launch names a backend (Gemma4Config.verify_and_update_config), the model's
//   default here.
// - Experts (a router and an MoE block beside each layer's MLP) only with `enable_moe_block` or
//   `use_second_mlp_block` true in Python's sense (Gemma4DecoderLayer): without, a stated
//   `num_experts` builds none.
Status ReadGemma4(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, /*default_positions=*/131072));
  m.mtp_assistant = "gemma4_assistant";
  const auto truthy = [&](const char* key) {
    return r.Has(key) && internal::PythonTruth(r.json()[key]);
  };
  m.builds_no_experts = !truthy("enable_moe_block") && !truthy("use_second_mlp_block");
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadKvHeads(r, /*absent=*/4, m));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t head, r.IntInOr("head_dim", 256, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t global_head,
                          r.IntInOr("global_head_dim", 512, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const bool k_eq_v, r.BoolOr("attention_k_eq_v", false));
  int64_t global_kv = m.num_kv_heads_total;
  if (k_eq_v) {
    if (!r.Has("num_global_key_value_heads")) {
      return r.Invalid("num_global_key_value_heads",
                       "is not set, but attention_k_eq_v is true: the engine's full-attention "
                       "layers take their KV heads from it");
    }
    KVTOPO_ASSIGN_OR_RETURN(global_kv, Positive(r, "num_global_key_value_heads"));
    if (m.num_attention_heads % global_kv != 0) {
      return r.Invalid("num_global_key_value_heads",
                       fmt::format("is {}, which does not divide num_attention_heads {}", global_kv,
                                   m.num_attention_heads));
    }
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t window, r.IntInOr("sliding_window", 512, 1, kMaxModelLen));
  m.text_sliding_window = window;
  KVTOPO_ASSIGN_OR_RETURN(const std::string bidirectional,
                          r.StringOr("use_bidirectional_attention", ""));
  if (bidirectional == "all") {
    return r.Invalid("use_bidirectional_attention",
                     "is \"all\": an embedding model's bidirectional attention keeps no KV cache "
                     "across steps; kvtopo plans decoders");
  }
  std::vector<bool> sliding;
  if (r.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(sliding, SlidingLayers(r, n));
  } else {
    for (int64_t i = 0; i < n; ++i) sliding.push_back((i + 1) % 6 != 0);
  }
  // Gemma4TextConfig forces the last layer to full attention, with a warning.
  if (sliding.back()) {
    m.config_warnings.emplace_back(
        "config-layer-type-changed",
        fmt::format("{}: {} the last layer ({}) sliding_attention; the config "
                    "class forces it to full_attention (and warns), which the engine runs",
                    ConfigFileLabel(r.file()),
                    r.Has("layer_types")
                        ? fmt::format("{} names", r.Path("layer_types"))
                        : std::string("the config class's default pattern (a full layer in six) "
                                      "makes"),
                    n - 1));
  }
  sliding.back() = false;
  KVTOPO_ASSIGN_OR_RETURN(const int64_t shared,
                          r.IntInOr("num_kv_shared_layers", 0, 0, kMaxLayers));
  const int64_t first_shared = n - shared;
  std::vector<int64_t> reusing;
  for (int64_t i = 0; i < n; ++i) {
    if (shared > 0 && i >= first_shared) {
      reusing.push_back(i);
      int64_t target = first_shared - 1;
      while (target >= 0 && sliding[target] != sliding[i]) --target;
      if (target < 0) {
        return r.Invalid(
            "num_kv_shared_layers",
            fmt::format("is {}: layer {} shares the KV cache of the last {} layer before layer "
                        "{}, and there is none",
                        shared, i, sliding[i] ? "sliding" : "full",
                        std::max<int64_t>(first_shared, 0)));
      }
      continue;
    }
    RawLayer layer =
        KvAttentionLayer(i, m, sliding[i] ? head : global_head, sliding[i] ? window : 0);
    if (!sliding[i]) layer.num_kv_heads_total = global_kv;
    m.layers.push_back(std::move(layer));
  }
  if (!reusing.empty()) RecordKvSharing(r, shared, "Gemma4TextConfig", reusing, m);
  KVTOPO_RETURN_IF_ERROR(ReadLogitsSoftCap(r, "Gemma4TextConfig", nullptr, m));
  if (head != global_head && std::max(head, global_head) > 256) m.default_backend = "TRITON_ATTN";
  return Status::Ok();
}

// Llama 4 (Llama4ForCausalLM, or the text_config of Llama4ForConditionalGeneration): a layer with
// RoPE (`no_rope_layers[i]` 1) attends within chunks of `attention_chunk_size` tokens; a NoPE
// layer (0) attends globally (the fork's llama4.py). An absent or empty `no_rope_layers` is the
// list the config class derives: every `no_rope_layer_interval`-th layer (default 4) is NoPE.
// Fields a config omits take Llama4TextConfig's defaults: `attention_chunk_size` 8192 (null:
// every layer global), `head_dim` 128 (null: hidden_size / num_attention_heads),
// num_key_value_heads 8, max_position_embeddings 131072.
Status ReadLlama4(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, /*default_positions=*/131072));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  KVTOPO_RETURN_IF_ERROR(ReadKvHeads(r, 8, m));
  int64_t head = 128;
  if (r.Has("head_dim") || r.IsNull("head_dim")) {
    KVTOPO_ASSIGN_OR_RETURN(head, ReadHeadSize(r, m, /*use_head_dim=*/true));
  }
  int64_t chunk = 0;
  if (!r.IsNull("attention_chunk_size")) {
    KVTOPO_ASSIGN_OR_RETURN(chunk, r.IntInOr("attention_chunk_size", 8192, 1, kMaxModelLen));
  }
  std::vector<int64_t> listed;
  if (r.Has("no_rope_layers")) {
    KVTOPO_ASSIGN_OR_RETURN(listed, r.IntList("no_rope_layers"));
  }
  std::vector<bool> rope(static_cast<size_t>(n));
  if (listed.empty()) {
    KVTOPO_ASSIGN_OR_RETURN(const int64_t interval,
                            r.IntInOr("no_rope_layer_interval", 4, 1, kMaxLayers));
    for (int64_t i = 0; i < n; ++i) rope[i] = (i + 1) % interval != 0;
  } else {
    if (static_cast<int64_t>(listed.size()) != n) {
      return r.Invalid("no_rope_layers",
                       fmt::format("has {} entries but num_hidden_layers is {}", listed.size(), n));
    }
    for (int64_t i = 0; i < n; ++i) {
      if (listed[i] != 0 && listed[i] != 1) {
        return r.Invalid("no_rope_layers",
                         fmt::format("entry {} is {}; each entry is 0 (NoPE) or 1", i, listed[i]));
      }
      rope[i] = listed[i] == 1;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    RawLayer layer = KvAttentionLayer(i, m, head, 0);
    if (chunk > 0 && rope[i]) {
      layer.type = LayerType::kChunkedLocal;
      layer.attention_chunk_size = chunk;
    }
    m.layers.push_back(std::move(layer));
  }
  return Status::Ok();
}

// DFlash drafts (Qwen3 blocks): all layers SWA when dflash_config.use_swa, else full.
Status ReadDflash(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(KvAttentionHeader h, ReadKvAttentionHeader(r, m));
  bool use_swa = false;
  int64_t window = 0;
  if (r.Has("dflash_config")) {
    KVTOPO_ASSIGN_OR_RETURN(ConfigReader d, r.Object("dflash_config"));
    KVTOPO_ASSIGN_OR_RETURN(use_swa, d.BoolOr("use_swa", false));
    if (use_swa) {
      if (d.Has("swa_window_size")) {
        KVTOPO_ASSIGN_OR_RETURN(window, Positive(d, "swa_window_size", kMaxModelLen));
      } else {
        KVTOPO_ASSIGN_OR_RETURN(window, Positive(r, "sliding_window", kMaxModelLen));
      }
    }
  }
  for (int64_t i = 0; i < h.num_layers; ++i) {
    m.layers.push_back(KvAttentionLayer(i, m, h.head_size, use_swa ? window : 0));
  }
  return Status::Ok();
}

Status ReadKvtopoBlock(const ConfigReader& root, ModelDescription& m) {
  if (!root.Has("kvtopo")) return Status::Ok();
  KVTOPO_ASSIGN_OR_RETURN(ConfigReader k, root.Object("kvtopo"));
  KVTOPO_ASSIGN_OR_RETURN(m.kind, k.StringOr("kind", m.kind));
  if (m.kind != "target" && m.kind != "draft") {
    return k.Invalid("kind", fmt::format("is '{}'; accepted: target, draft", m.kind));
  }
  KVTOPO_ASSIGN_OR_RETURN(m.default_backend, k.StringOr("default_backend", ""));
  m.default_backend_from_profile = !m.default_backend.empty();
  if (m.default_backend_from_profile) {
    Result<BackendCaps> caps = FindBackend(m.default_backend);
    if (!caps.ok()) {
      KVTOPO_ASSIGN_OR_RETURN(const std::vector<BackendCaps> all, ListBackends());
      std::vector<std::string> names;
      for (const BackendCaps& c : all) names.push_back(c.name);
      return k.Invalid("default_backend",
                       fmt::format("is '{}', which is no registered attention backend; "
                                   "accepted: {}",
                                   m.default_backend, fmt::join(names, ", ")));
    }
    m.default_backend = caps->name;
  }
  if (k.Has("kv_cache_dtype")) {
    KVTOPO_ASSIGN_OR_RETURN(std::string dtype, k.String("kv_cache_dtype"));
    Result<KvCacheDtype> parsed = ParseKvCacheDtype(dtype);
    if (!parsed.ok()) return k.Invalid("kv_cache_dtype", parsed.status().message());
    m.kv_cache_dtype = *parsed;
  }
  KVTOPO_ASSIGN_OR_RETURN(m.method, k.StringOr("method", m.method));
  if (k.Has("causal")) {
    KVTOPO_ASSIGN_OR_RETURN(bool causal, k.BoolOr("causal", true));
    m.causal = causal;
  }
  if (k.Has("default_drafts")) {
    KVTOPO_ASSIGN_OR_RETURN(ConfigReader d, k.Object("default_drafts"));
    for (const auto& [method, value] : d.json().items()) {
      KVTOPO_ASSIGN_OR_RETURN(std::string profile, d.String(method));
      m.default_drafts.emplace_back(method, profile);
    }
  }
  return Status::Ok();
}

// Reader entry points for the table below.
Status ReadMla(const ConfigReader& r, ModelDescription& m) {
  return ReadDeepseekMla(r, /*with_indexer=*/false, /*with_mtp=*/true, m);
}
// DeepSeek-V4 (DeepseekV4ForCausalLM; the fork's vllm/models/deepseek_v4/ at 28be48fa9, over
// DeepseekV4Config, whose only default is max_position_embeddings 1,048,576): hidden layer i
// compresses its MLA cache max(1, compress_ratios[i]) times (the list must reach every hidden
// layer; 1 keeps the sliding-window cache alone, and the compressors assert 4 or 128); every
// layer keeps a sliding-window cache of sliding_window tokens; head_dim is the MLA width, and
// ratio-4 layers keep an indexer of index_head_dim. MTP layers (num_nextn_predict_layers) keep
// the sliding-window cache alone.
Status ReadDeepseekV4(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadCommon(r, m, /*default_positions=*/1048576));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(r));
  ModelDescription::DeepseekV4 v4;
  KVTOPO_ASSIGN_OR_RETURN(v4.mtp_layers, NumMtpLayers(r, n, m));
  KVTOPO_ASSIGN_OR_RETURN(v4.head_dim, Positive(r, "head_dim", kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(v4.sliding_window, Positive(r, "sliding_window", kMaxModelLen));
  KVTOPO_ASSIGN_OR_RETURN(const std::vector<int64_t> ratios, r.IntList("compress_ratios"));
  if (static_cast<int64_t>(ratios.size()) < n) {
    return r.Invalid("compress_ratios",
                     fmt::format("holds {} entries for num_hidden_layers {}: the engine reads "
                                 "one per hidden layer (an IndexError as it builds the model)",
                                 ratios.size(), n));
  }
  bool indexer = false;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ratio = std::max<int64_t>(1, ratios[static_cast<size_t>(i)]);
    if (ratio != 1 && ratio != 4 && ratio != 128) {
      return r.Invalid("compress_ratios",
                       fmt::format("holds {} at layer {}: the engine's compressors assert a "
                                   "ratio of 4 or 128 (0 and 1 keep the sliding window alone) "
                                   "as it builds the model",
                                   ratios[static_cast<size_t>(i)], i));
    }
    indexer = indexer || ratio == 4;
    v4.compress_ratios.push_back(ratio);
  }
  if (indexer) {
    KVTOPO_ASSIGN_OR_RETURN(v4.index_head_dim, Positive(r, "index_head_dim", kMaxModelDim));
  }
  const nlohmann::json& config = r.json();
  for (auto [key, out] :
       {std::pair{"scoring_func", &v4.scoring_func}, std::pair{"expert_dtype", &v4.expert_dtype}}) {
    if (!config.contains(key)) continue;
    const nlohmann::json& v = config[key];
    *out = v.is_string() ? v.get<std::string>() : internal::JsonText(v);
  }
  m.deepseek_v4 = std::move(v4);
  return Status::Ok();
}
// Mistral Large 3 (MistralLarge3ForCausalLM, mistral_large_3.py: the engine's DeepSeek-V3 model,
// which the Mistral-format converter names with model type deepseek_v3): MLA, as the engine's
// use_mla holds for that type only.
Status CheckMistralLarge3Type(const ConfigReader& r) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, r.StringOr("model_type", ""));
  if (type != "deepseek_v3") {
    return r.Invalid("model_type",
                     fmt::format("is '{}': the engine treats Mistral Large 3 as MLA under model "
                                 "type deepseek_v3 (what its Mistral-format converter writes), "
                                 "and kvtopo does not plan its layers under another",
                                 type));
  }
  return Status::Ok();
}
Status ReadMistralLarge3(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(CheckMistralLarge3Type(r));
  return ReadMla(r, m);
}
// Whether the engine's DeepSeek attention builds the sparse indexer (its is_v32,
// getattr(config, "index_topk", 0) > 0 in deepseek_v2.py at 28be48fa9): the stated index_topk,
// else the config class's default (GlmMoeDsaConfig's 2048; DeepseekV3Config, which the engine
// builds for deepseek_v32, and Glm4MoeLiteConfig have none).
Result<bool> BuildsIndexer(const ConfigReader& r, int64_t class_default) {
  KVTOPO_ASSIGN_OR_RETURN(const int64_t topk, r.IntOr("index_topk", class_default));
  return topk > 0;
}
// DeepSeek-V3.2 (DeepseekV32ForCausalLM) and GLM-5 (GlmMoeDsaForCausalLM): DeepSeek's MLA and MTP
// layers, with the sparse indexer when BuildsIndexer holds.
Status ReadMlaWithIndexer(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, r.StringOr("model_type", ""));
  KVTOPO_ASSIGN_OR_RETURN(const bool indexer,
                          BuildsIndexer(r, type == "glm_moe_dsa" ? int64_t{2048} : 0));
  return ReadDeepseekMla(r, indexer, /*with_mtp=*/true, m);
}
// GLM-4.7-Flash (glm4_moe_lite.py): DeepSeek's MLA and MTP layers, with the sparse indexer when
// BuildsIndexer holds.
Status ReadGlm4MoeLite(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const bool indexer, BuildsIndexer(r, 0));
  return ReadDeepseekMla(r, indexer, /*with_mtp=*/true, m);
}
Status ReadMlaDraft(const ConfigReader& r, ModelDescription& m) {
  return ReadDeepseekMla(r, /*with_indexer=*/false, /*with_mtp=*/false, m);
}
// Mistral Large 3's EAGLE head (EagleMistralLarge3ForCausalLM, mistral_large_3_eagle.py at
// 28be48fa9): the draft's num_hidden_layers DeepSeek-V2 decoder layers over its own config, MLA as
// the engine's check for an EAGLE config reads it (the wrapped model's type deepseek_v3, which
// SpeculativeConfig.hf_config_override renames deepseek_mtp, and kv_lora_rank set); no MTP layers.
Status ReadMistralLarge3EagleDraft(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(CheckMistralLarge3Type(r));
  return ReadMlaDraft(r, m);
}
Status ReadKimiLinearKda(const ConfigReader& r, ModelDescription& m) {
  return ReadKimiLinear(r, /*with_indexer=*/false, m);
}
Status ReadKimiLinearKdaWithIndexer(const ConfigReader& r, ModelDescription& m) {
  return ReadKimiLinear(r, /*with_indexer=*/true, m);
}

// Llama-style EAGLE drafts (the fork's llama_eagle3.py and llama_eagle.py at 28be48fa9; the
// registry maps every Eagle3 Llama, MiniMax-M2 and Qwen-VL draft name to Eagle3LlamaForCausalLM):
// num_hidden_layers of the engine's Llama decoder layers over the draft's config, so they cache
// as the Llama reader reads them (head_dim, else hidden_size / heads; layer_types counted from
// the draft's first layer); LlamaConfig's defaults fill what a config omits (drafts of other
// model types state their fields).
Status ReadLlamaEagleDraft(const ConfigReader& r, ModelDescription& m) {
  return ReadWithClassDefaults(r, kLlamaConfigText, m);
}

// Where a config keeps its text model: at the root, in `text_config`, or in `text_config` when
// the config has one and else at the root (multimodal configs written before their config class
// nested the text fields; the engine reads hf_config.get_text_config() either way). A
// kLanguageModel config's text model (`text_config`, else `llm_config`, which the engine
// remaps to text_config) names its own architecture, whose reader reads it: the engine builds
// that registered model over it (InternVL's init_vllm_registered_model). A kThinker config (the
// Qwen Omni models) keeps it in `thinker_config.text_config`, which its config class's
// get_text_config() returns to the engine; the engine serves the thinker alone.
// kLanguageModel: the registered model that text_config (else llm_config) names in its
// architectures; kNamedOrTyped: the same, or without architectures the causal-LM class its
// model_type maps to (kCausalLmForType), as the engine's with_hf_config does.
enum class TextModel { kRoot, kNested, kNestedIfPresent, kLanguageModel, kNamedOrTyped, kThinker };

struct ArchitectureReader {
  const char* architecture;
  TextModel text_model;
  Status (*read)(const ConfigReader&, ModelDescription&);
  bool draft = false;  // a draft model's config, never a multimodal model's language model
  // What the wrapper changes in the model it builds (the engine's per-architecture hooks).
  void (*adjust)(ModelDescription&) = nullptr;
  const char* method = nullptr;  // drafts: the one speculative method the engine builds it for
  // A class the engine's default runner pools: how it reads under --runner generate; null:
  // as `read`.
  Status (*read_generating)(const ConfigReader&, ModelDescription&) = nullptr;
};

Status ReadDeepseekVl2(const ConfigReader& root, ModelDescription& m);
Status ReadBagel(const ConfigReader& root, ModelDescription& m);
template <bool kOmni>
Status ReadMiniCpmV(const ConfigReader& r, ModelDescription& m);
Status ReadOpenVla(const ConfigReader& root, ModelDescription& m);
Status ReadMiDashengLm(const ConfigReader& root, ModelDescription& m);
Status ReadGlmAsr(const ConfigReader& root, ModelDescription& m);
Status ReadPaddleOcrVl(const ConfigReader& root, ModelDescription& m);
Status ReadMolmo2(const ConfigReader& root, ModelDescription& m);
Status ReadMoondream3(const ConfigReader& root, ModelDescription& m);
Status ReadWhisper(const ConfigReader& r, ModelDescription& m);
Status ReadSmolLm3(const ConfigReader& r, ModelDescription& m);
Status ReadEmu3(const ConfigReader& root, ModelDescription& m);
void WithoutClassHooks(ModelDescription& m);
void WithoutClassOrConfigHooks(ModelDescription& m);
void EstimatesConvFromHiddenSize(ModelDescription& m);

const std::vector<ArchitectureReader>& Readers() {
  static const std::vector<ArchitectureReader> kReaders = {
      {"DeepseekV2ForCausalLM", TextModel::kRoot, ReadMla},
      {"DeepseekV3ForCausalLM", TextModel::kRoot, ReadMla},
      {"MistralLarge3ForCausalLM", TextModel::kRoot, ReadMistralLarge3},
      {"Glm4MoeLiteForCausalLM", TextModel::kRoot, ReadGlm4MoeLite},
      {"KimiK25ForConditionalGeneration", TextModel::kNested, ReadMla},
      {"DeepseekV32ForCausalLM", TextModel::kRoot, ReadMlaWithIndexer},
      {"DeepseekV4ForCausalLM", TextModel::kRoot, ReadDeepseekV4},
      {"GlmMoeDsaForCausalLM", TextModel::kRoot, ReadMlaWithIndexer},
      {"KimiLinearForCausalLM", TextModel::kRoot, ReadKimiLinearKda},
      {"KimiK3ForConditionalGeneration", TextModel::kNested, ReadKimiLinearKda},
      {"Glm5NextForConditionalGeneration", TextModel::kNested, ReadKimiLinearKdaWithIndexer},
      {"Qwen3NextForCausalLM", TextModel::kRoot, ReadGdnHybridAs<kQwen3Next>},
      {"Qwen3_5ForConditionalGeneration", TextModel::kNested, ReadGdnHybridAs<kQwen35>},
      {"Qwen3_5MoeForConditionalGeneration", TextModel::kNested, ReadGdnHybridAs<kQwen35Moe>},
      {"NemotronHForCausalLM", TextModel::kRoot, ReadNemotronH},
      {"BambaForCausalLM", TextModel::kRoot, ReadBamba},
      {"GraniteMoeHybridForCausalLM", TextModel::kRoot, ReadGraniteMoeHybrid},
      {"FalconH1ForCausalLM", TextModel::kRoot, ReadFalconH1},
      {"JambaForCausalLM", TextModel::kRoot, ReadJamba},
      {"MambaForCausalLM", TextModel::kRoot, ReadPureMambaAs<false>},
      {"FalconMambaForCausalLM", TextModel::kRoot, ReadPureMambaAs<false>},
      {"Mamba2ForCausalLM", TextModel::kRoot, ReadPureMambaAs<true>},
      {"Lfm2ForCausalLM", TextModel::kRoot, ReadLfm2As<false>},
      {"Lfm2MoeForCausalLM", TextModel::kRoot, ReadLfm2As<true>},
      {"MiniMaxText01ForCausalLM", TextModel::kRoot, ReadMiniMaxText01},
      {"MiniMaxForCausalLM", TextModel::kRoot, ReadMiniMaxText01},
      {"MiniMaxM1ForCausalLM", TextModel::kRoot, ReadMiniMaxText01},
      {"Zamba2ForCausalLM", TextModel::kRoot, ReadZamba2},
      {"Plamo2ForCausalLM", TextModel::kRoot, ReadPlamo2},
      {"GptOssForCausalLM", TextModel::kRoot, ReadGptOss},
      {"LlamaForCausalLM", TextModel::kRoot, ReadDenseAs<kLlama>},
      // Registered among the pooling models and built as a generation class (LlamaForCausalLM,
      // Qwen2ForCausalLM, Gemma2ForCausalLM), which generates unless a Sentence Transformers
      // pooling config makes the runner pooling (Build refuses that).
      {"LlamaModel", TextModel::kRoot, ReadLlamaModel},
      {"MistralModel", TextModel::kRoot, ReadMistralModel},
      {"Qwen2Model", TextModel::kRoot, ReadDenseAs<kQwen2>},
      {"SmolLM3ForCausalLM", TextModel::kRoot, ReadSmolLm3},
      {"Phi3ForCausalLM", TextModel::kRoot,
       ReadDenseAs<kLlama>},  // the engine's Phi3ForCausalLM is its Llama
      {"MistralForCausalLM", TextModel::kRoot, ReadDenseAs<kMistral>},
      {"MixtralForCausalLM", TextModel::kRoot, ReadDenseAs<kMixtral>},
      {"MiniMaxM2ForCausalLM", TextModel::kRoot, ReadDenseAs<kMiniMaxM2>},
      {"Qwen2ForCausalLM", TextModel::kRoot, ReadDenseAs<kQwen2>},
      {"Qwen2MoeForCausalLM", TextModel::kRoot, ReadDenseAs<kQwen2>},
      {"Qwen3ForCausalLM", TextModel::kRoot, ReadDenseAs<kQwen3Config>},
      {"Qwen3MoeForCausalLM", TextModel::kRoot, ReadDenseAs<kQwen3>},
      {"MiMoForCausalLM", TextModel::kRoot, ReadDenseAs<kMimo>},
      {"MiMoV2FlashForCausalLM", TextModel::kRoot, ReadMimoV2Flash},
      {"Step3p5ForCausalLM", TextModel::kRoot, ReadStep3p5},
      {"DeciLMForCausalLM", TextModel::kRoot, ReadDeciLm},
      {"FalconForCausalLM", TextModel::kRoot, ReadFalcon},
      {"RWForCausalLM", TextModel::kRoot, ReadFalcon},
      {"Cohere2MoeForCausalLM", TextModel::kRoot, ReadCohere2Moe},
      {"MiMoV2ForCausalLM", TextModel::kRoot, ReadMimoV2Flash},
      {"GlmForCausalLM", TextModel::kRoot, ReadDenseAs<kGlm>},
      {"LLaMAForCausalLM", TextModel::kRoot, ReadDenseAs<kLlamaV1>},
      {"Fairseq2LlamaForCausalLM", TextModel::kRoot, ReadDenseAs<kLlama>},
      {"InternLMForCausalLM", TextModel::kRoot, ReadDenseAs<kInternLm>},
      {"InternLM3ForCausalLM", TextModel::kRoot, ReadDenseAs<kInternLm3>},
      {"XverseForCausalLM", TextModel::kRoot, ReadDenseAs<kXverse>},
      {"AquilaForCausalLM", TextModel::kRoot, ReadDenseAs<kAquila>},
      {"AquilaModel", TextModel::kRoot, ReadDenseAs<kAquila>},
      {"IQuestCoderForCausalLM", TextModel::kRoot, ReadDenseAs<kIQuestCoder>},
      {"CwmForCausalLM", TextModel::kRoot, ReadDenseAs<kCwm>},
      {"TeleChatForCausalLM", TextModel::kRoot, ReadTeleChat},
      {"TeleChat2ForCausalLM", TextModel::kRoot, ReadTeleChat},
      {"OlmoForCausalLM", TextModel::kRoot, ReadDenseAs<kOlmo>},
      {"PersimmonForCausalLM", TextModel::kRoot, ReadDenseAs<kPersimmon>},
      {"FlexOlmoForCausalLM", TextModel::kRoot, ReadDenseAs<kFlexOlmo>},
      {"StableLmForCausalLM", TextModel::kRoot, ReadDenseAs<kStableLm>},
      {"StableLMEpochForCausalLM", TextModel::kRoot, ReadDenseAs<kStableLmEpoch>},
      {"OrionForCausalLM", TextModel::kRoot, ReadDenseAs<kOrion>},
      {"ArcticForCausalLM", TextModel::kRoot, ReadDenseAs<kArctic>},
      {"Grok1ForCausalLM", TextModel::kRoot, ReadGrok},
      {"Grok1ModelForCausalLM", TextModel::kRoot, ReadGrok},
      {"BaiChuanForCausalLM", TextModel::kRoot, ReadBaichuanAs<false>},
      {"BaichuanForCausalLM", TextModel::kRoot, ReadBaichuanAs<true>},
      {"NemotronForCausalLM", TextModel::kRoot, ReadNemotron},
      {"ExaoneForCausalLM", TextModel::kRoot, ReadExaone3},
      {"SolarForCausalLM", TextModel::kRoot, ReadDenseAs<kSolar>},
      {"Jais2ForCausalLM", TextModel::kRoot, ReadJais2},
      {"JAISLMHeadModel", TextModel::kRoot, ReadJais},
      {"BloomForCausalLM", TextModel::kRoot, ReadBloom},
      {"MPTForCausalLM", TextModel::kRoot, ReadMpt},
      {"MptForCausalLM", TextModel::kRoot, ReadMpt},
      {"DbrxForCausalLM", TextModel::kRoot, ReadDbrx},
      {"ChatGLMModel", TextModel::kRoot, ReadChatGlm},
      {"ChatGLMForConditionalGeneration", TextModel::kRoot, ReadChatGlm},
      {"Step3TextForCausalLM", TextModel::kRoot, ReadStep3Text},
      {"Step1ForCausalLM", TextModel::kRoot, ReadStep1},
      {"OuroForCausalLM", TextModel::kRoot, ReadOuro},
      {"PanguEmbeddedForCausalLM", TextModel::kRoot, ReadPanguEmbedded},
      {"PanguUltraMoEForCausalLM", TextModel::kRoot, ReadPanguMoe},
      {"PanguProMoEV2ForCausalLM", TextModel::kRoot, ReadPanguMoe},
      {"IQuestLoopCoderForCausalLM", TextModel::kRoot, ReadLoopCoder},
      {"SarvamMLAForCausalLM", TextModel::kRoot, ReadSarvamMla},
      {"AXK1ForCausalLM", TextModel::kRoot, ReadAxk1},
      {"BailingMoeV2_5ForCausalLM", TextModel::kRoot, ReadBailingV25},
      {"LagunaForCausalLM", TextModel::kRoot, ReadLaguna},
      {"OlmoHybridForCausalLM", TextModel::kRoot, ReadOlmoHybrid},
      {"Plamo3ForCausalLM", TextModel::kRoot, ReadPlamo3},
      {"GritLM", TextModel::kRoot, ReadGritLm, false, nullptr, nullptr, ReadDenseAs<kLlama>},
      {"TeleChat3ForCausalLM", TextModel::kRoot, ReadDenseAs<kTeleChat3>},
      {"TeleFLMForCausalLM", TextModel::kRoot, ReadDenseAs<kTeleFlm>},
      {"HyperCLOVAXForCausalLM", TextModel::kRoot, ReadDenseAs<kHyperClovax>},
      {"Param2MoEForCausalLM", TextModel::kRoot, ReadParam2Moe},
      {"SarvamMoEForCausalLM", TextModel::kRoot, ReadDenseAs<kSarvamMoe>},
      {"HYV3ForCausalLM", TextModel::kRoot, ReadHyV3},
      {"LongcatFlashForCausalLM", TextModel::kRoot, ReadLongcatFlash},
      {"InternLM2VEForCausalLM", TextModel::kRoot, ReadDenseAs<kInternLm2>},
      // Vision-language models whose language model is one of the above (the fork's
      // qwen2_vl.py, qwen2_5_vl.py, qwen3_vl.py, qwen3_vl_moe.py and mistral3.py).
      {"Qwen2VLForConditionalGeneration", TextModel::kNestedIfPresent, ReadDenseAs<kQwen2>},
      {"Qwen2_5_VLForConditionalGeneration", TextModel::kNestedIfPresent, ReadDenseAs<kQwen2>},
      {"Qwen3VLForConditionalGeneration", TextModel::kNested, ReadDenseAs<kQwen3>},
      {"Qwen3VLMoeForConditionalGeneration", TextModel::kNested, ReadDenseAs<kQwen3>},
      // Qwen2.5-Omni and Qwen3-Omni (the fork's qwen2_5_omni_thinker.py builds Qwen2ForCausalLM
      // over the thinker's text_config, qwen3_omni_moe_thinker.py Qwen3-MoE layers).
      {"Qwen2_5OmniModel", TextModel::kThinker, ReadDenseAs<kQwen2>},
      {"Qwen2_5OmniForConditionalGeneration", TextModel::kThinker, ReadDenseAs<kQwen2>},
      {"Qwen3OmniMoeForConditionalGeneration", TextModel::kThinker, ReadDenseAs<kQwen3>},
      {"Mistral3ForConditionalGeneration", TextModel::kNested, ReadMistral3},
      {"Ministral3ForCausalLM", TextModel::kRoot, ReadDenseAs<kMinistral3>},
      {"LlavaForConditionalGeneration", TextModel::kNested, ReadLlava},
      {"PaliGemmaForConditionalGeneration", TextModel::kNested, ReadPaliGemma},
      {"InternVLChatModel", TextModel::kLanguageModel, nullptr},
      // HyperCLOVAX Vision (the fork's hyperclovax_vision.py and hyperclovax_vision_v2.py over
      // its HCXVisionConfig): the registered model text_config names, as InternVL's.
      {"HCXVisionForCausalLM", TextModel::kLanguageModel, nullptr},
      {"HCXVisionV2ForCausalLM", TextModel::kLanguageModel, nullptr},
      // Pixtral (pixtral.py, the Mistral-format converter's vision model): the registered model
      // text_config names.
      {"PixtralForConditionalGeneration", TextModel::kLanguageModel, nullptr},
      // Voxtral (voxtral.py): the same, its Whisper audio encoder keeping no KV cache.
      {"VoxtralForConditionalGeneration", TextModel::kLanguageModel, nullptr},
      // InternVL's own wrappers (subclasses of the fork's InternVLChatModel, which indexes
      // text_config.architectures): H2OVL, NVLM-D, Skywork-R1V, Qianfan-OCR.
      {"H2OVLChatModel", TextModel::kLanguageModel, nullptr},
      {"NVLM_D", TextModel::kLanguageModel, nullptr},
      {"SkyworkR1VChatModel", TextModel::kLanguageModel, nullptr},
      {"QianfanOCRForConditionalGeneration", TextModel::kLanguageModel, nullptr},
      // Wrappers that build the registered model text_config (else llm_config) names, or its
      // model type's causal-LM class: LLaVA-OneVision (and Bee, R-4B), Cohere2 Vision, Granite
      // Speech, InternVL and Intern-S1 (Transformers' classes), LightOnOCR, LFM2-VL, Eagle 2.5,
      // Nemotron Nano VL (llm_config), Ovis, BLIP-2.
      {"LlavaOnevisionForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      {"BeeForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      {"RForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      {"Cohere2VisionForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      {"GraniteSpeechForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      {"InternVLForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      {"InternS1ForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      {"LightOnOCRForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      {"Lfm2VlForConditionalGeneration", TextModel::kNamedOrTyped, nullptr, false,
       EstimatesConvFromHiddenSize},
      {"Eagle2_5_VLForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      {"Llama_Nemotron_Nano_VL", TextModel::kNamedOrTyped, nullptr},
      {"Ovis", TextModel::kNamedOrTyped, nullptr},
      {"Ovis2_5", TextModel::kNamedOrTyped, nullptr},
      {"Ovis2_6ForCausalLM", TextModel::kNamedOrTyped, nullptr},
      {"Ovis2_6_MoeForCausalLM", TextModel::kNamedOrTyped, nullptr},
      {"Blip2ForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      // LLaVA's own subclasses and look-alikes (the same language model build): LLaVA-NeXT,
      // LLaVA-NeXT-Video, Mantis, Tarsier.
      {"LlavaNextForConditionalGeneration", TextModel::kNested, ReadLlava},
      {"LlavaNextVideoForConditionalGeneration", TextModel::kNested, ReadLlava},
      {"MantisForConditionalGeneration", TextModel::kNested, ReadLlava},
      {"TarsierForConditionalGeneration", TextModel::kNested, ReadLlava},
      // Wrappers that force their language model over text_config.
      {"AudioFlamingo3ForConditionalGeneration", TextModel::kNested, ReadQwen2Text},
      {"MusicFlamingoForConditionalGeneration", TextModel::kNested, ReadQwen2Text},
      {"Cheers", TextModel::kNested, ReadQwen2Text},
      {"CheersForConditionalGeneration", TextModel::kNested, ReadQwen2Text},
      {"OpenCUAForConditionalGeneration", TextModel::kNested, ReadQwen2Text},
      {"BagelForConditionalGeneration", TextModel::kRoot, ReadBagel},
      {"FunAudioChatForConditionalGeneration", TextModel::kNested, ReadFunAudioChatText},
      {"Qwen2AudioForConditionalGeneration", TextModel::kNested, ReadQwen2Text},
      {"Idefics3ForConditionalGeneration", TextModel::kNested, ReadLlamaText},
      {"SmolVLMForConditionalGeneration", TextModel::kNested, ReadLlamaText},
      {"AriaForConditionalGeneration", TextModel::kNested, ReadDenseAs<kLlama>},
      {"KananaVForConditionalGeneration", TextModel::kNested, ReadDenseAs<kLlama>},
      {"AyaVisionForConditionalGeneration", TextModel::kNested, ReadInterleavedAs<kCohere2>},
      {"Exaone4_5_ForConditionalGeneration", TextModel::kNested, ReadDenseAs<kExaone4>},
      {"GlmOcrForConditionalGeneration", TextModel::kNested, ReadDenseAs<kGlm4>},
      {"KimiVLForConditionalGeneration", TextModel::kNested, ReadMla},
      {"Granite4VisionForConditionalGeneration", TextModel::kNested, ReadDenseAs<kGranite>},
      {"InternS1ProForConditionalGeneration", TextModel::kNested, ReadDenseAs<kQwen3>},
      {"Step3VLForConditionalGeneration", TextModel::kNested, ReadStep3Text},
      {"FuyuForCausalLM", TextModel::kNested, ReadDenseAs<kPersimmon>},
      // ... over the root config (or text_config when the config has one, which the root's
      // fields stand for).
      {"DotsOCRForCausalLM", TextModel::kRoot, ReadDenseAs<kQwen2>},
      {"FireRedASR2ForConditionalGeneration", TextModel::kRoot, ReadDenseAs<kQwen2>},
      {"MoonshotKimiaForCausalLM", TextModel::kRoot, ReadDenseAs<kQwen2>},
      {"FunASRForConditionalGeneration", TextModel::kRoot, ReadDenseAs<kQwen3>},
      {"Phi3VForCausalLM", TextModel::kRoot, ReadDenseAs<kLlama>},
      {"Phi4ForCausalLMV", TextModel::kRoot, ReadDenseAs<kLlama>},
      {"Phi4MMForCausalLM", TextModel::kRoot, ReadDenseAs<kLlama>},
      {"OpenPanguVLForConditionalGeneration", TextModel::kRoot, ReadPanguEmbedded},
      {"GLM4VForCausalLM", TextModel::kRoot, ReadChatGlm},
      {"Ernie4_5_VLMoeForConditionalGeneration", TextModel::kRoot, ReadDenseAs<kErnie45Moe>},
      {"HunYuanVLForConditionalGeneration", TextModel::kNestedIfPresent, ReadHunYuan},
      {"IsaacForConditionalGeneration", TextModel::kNestedIfPresent, ReadDenseAs<kQwen3>},
      // Qwen3-ASR (the fork's Qwen3ASRConfig): Qwen3 over thinker_config.text_config.
      {"Qwen3ASRForConditionalGeneration", TextModel::kThinker, ReadDenseAs<kQwen3>},
      {"Qwen3ASRRealtimeGeneration", TextModel::kThinker, ReadDenseAs<kQwen3>},
      // DeepSeek-VL2 and DeepSeek-OCR (1 and 2): DeepSeek-V2 over language_config.
      {"DeepseekVLV2ForCausalLM", TextModel::kRoot, ReadDeepseekVl2},
      {"DeepseekOCRForCausalLM", TextModel::kRoot, ReadDeepseekVl2},
      {"DeepseekOCR2ForCausalLM", TextModel::kRoot, ReadDeepseekVl2},
      // MiniCPM-V and MiniCPM-o: the language model their version picks, over the root.
      {"MiniCPMV", TextModel::kRoot, ReadMiniCpmV<false>},
      {"MiniCPMO", TextModel::kRoot, ReadMiniCpmV<true>},
      // Qwen-VL (qwen_vl.py: QWenLMHeadModel's decoder), Chameleon, Molmo, Molmo 2 and
      // Moondream 3: their own Llama-like attention layers.
      {"QwenVLForConditionalGeneration", TextModel::kRoot, ReadDenseAs<kQwenV1>},
      {"ChameleonForConditionalGeneration", TextModel::kRoot, ReadChameleon},
      {"Emu3ForConditionalGeneration", TextModel::kRoot, ReadEmu3},
      {"MolmoForCausalLM", TextModel::kRoot, ReadMolmo},
      {"Molmo2ForConditionalGeneration", TextModel::kRoot, ReadMolmo2},
      {"Moondream3ForCausalLM", TextModel::kRoot, ReadMoondream3},
      {"HfMoondream", TextModel::kRoot, ReadMoondream3},
      // Tarsier2 (a Qwen2-VL subclass over the fork's Tarsier2Config, a Qwen2VLConfig).
      {"Tarsier2ForConditionalGeneration", TextModel::kNestedIfPresent, ReadDenseAs<kQwen2>},
      {"WhisperForConditionalGeneration", TextModel::kRoot, ReadWhisper},
      // Forced or class-built language models with their config classes' defaults.
      {"OpenVLAForActionPrediction", TextModel::kRoot, ReadOpenVla},
      {"MiDashengLMModel", TextModel::kRoot, ReadMiDashengLm},
      {"GlmAsrForConditionalGeneration", TextModel::kRoot, ReadGlmAsr},
      {"PaddleOCRVLForConditionalGeneration", TextModel::kRoot, ReadPaddleOcrVl},
      {"KeyeForConditionalGeneration", TextModel::kRoot, ReadKeye<false>},
      {"KeyeVL1_5ForConditionalGeneration", TextModel::kRoot, ReadKeye<true>},
      {"MiMoV2OmniForCausalLM", TextModel::kNestedIfPresent, ReadMimoV2Flash},
      // The registered model the nested config names (or its model type's class).
      {"StepVLForConditionalGeneration", TextModel::kNamedOrTyped, nullptr},
      {"UltravoxModel", TextModel::kNamedOrTyped, nullptr},
      // Hybrid wrappers: the text model's layers without its per-architecture hooks.
      {"NemotronH_Nano_VL_V2", TextModel::kNamedOrTyped, nullptr, false, WithoutClassHooks},
      {"NemotronH_Nano_Omni_Reasoning_V3", TextModel::kNamedOrTyped, nullptr, false,
       WithoutClassOrConfigHooks},
      {"NemotronH_Super_Omni_Reasoning_V3", TextModel::kNamedOrTyped, nullptr, false,
       WithoutClassOrConfigHooks},
      {"MiniCPMV4_6ForConditionalGeneration", TextModel::kNested, ReadGdnHybridAs<kQwen35>, false,
       WithoutClassOrConfigHooks},
      {"InternS2PreviewForConditionalGeneration", TextModel::kNested, ReadGdnHybridAs<kQwen35Moe>,
       false, WithoutClassOrConfigHooks},
      {"Glm4ForCausalLM", TextModel::kRoot, ReadDenseAs<kGlm4>},
      {"Glm4MoeForCausalLM", TextModel::kRoot, ReadDenseAs<kGlm4Moe>},
      {"Olmo2ForCausalLM", TextModel::kRoot, ReadDenseAs<kOlmo2>},
      {"Olmo3ForCausalLM", TextModel::kRoot, ReadDenseAs<kOlmo3>},
      {"Exaone4ForCausalLM", TextModel::kRoot, ReadDenseAs<kExaone4>},
      {"ExaoneMoEForCausalLM", TextModel::kRoot, ReadExaoneMoe},
      {"Glm4vForConditionalGeneration", TextModel::kNested, ReadDenseAs<kGlm4v>},
      {"Glm4vMoeForConditionalGeneration", TextModel::kNested, ReadDenseAs<kGlm4vMoe>},
      {"GemmaForCausalLM", TextModel::kRoot, ReadGemma},
      {"GraniteForCausalLM", TextModel::kRoot, ReadDenseAs<kGranite>},
      {"GraniteMoeForCausalLM", TextModel::kRoot, ReadDenseAs<kGraniteMoe>},
      {"GraniteMoeSharedForCausalLM", TextModel::kRoot, ReadDenseAs<kGraniteMoe>},
      {"Starcoder2ForCausalLM", TextModel::kRoot, ReadDenseAs<kStarcoder2>},
      {"DeepseekForCausalLM", TextModel::kRoot, ReadDenseAs<kDeepseek>},
      {"InternLM2ForCausalLM", TextModel::kRoot, ReadDenseAs<kInternLm2>},
      {"Ernie4_5ForCausalLM", TextModel::kRoot, ReadDenseAs<kErnie45>},
      {"Ernie4_5_MoeForCausalLM", TextModel::kRoot, ReadDenseAs<kErnie45Moe>},
      {"SeedOssForCausalLM", TextModel::kRoot, ReadDenseAs<kSeedOss>},
      {"MiniCPMForCausalLM", TextModel::kRoot, ReadDenseAs<kMiniCpm>},
      {"HunYuanDenseV1ForCausalLM", TextModel::kRoot, ReadHunYuan},
      {"HunYuanMoEV1ForCausalLM", TextModel::kRoot, ReadHunYuan},
      {"OlmoeForCausalLM", TextModel::kRoot, ReadDenseAs<kOlmoe>},
      {"PhiMoEForCausalLM", TextModel::kRoot, ReadDenseAs<kPhiMoe>},
      {"PhiForCausalLM", TextModel::kRoot, ReadDenseAs<kPhi>},
      {"ApertusForCausalLM", TextModel::kRoot, ReadDenseAs<kApertus>},
      {"ArceeForCausalLM", TextModel::kRoot, ReadDenseAs<kArcee>},
      {"AfmoeForCausalLM", TextModel::kRoot, ReadDenseAs<kAfmoe>},
      {"MiniCPM3ForCausalLM", TextModel::kRoot, ReadMiniCpm3},
      {"OPTForCausalLM", TextModel::kRoot, ReadDenseAs<kMultiHeadOnly>},
      {"GPTNeoXForCausalLM", TextModel::kRoot, ReadDenseAs<kMultiHeadOnly>},
      {"QWenLMHeadModel", TextModel::kRoot, ReadQwenLmHead},
      {"GPT2LMHeadModel", TextModel::kRoot, ReadGpt2StyleAs<kGpt2>},
      {"GPTJForCausalLM", TextModel::kRoot, ReadGpt2StyleAs<kGptJ>},
      {"GPTBigCodeForCausalLM", TextModel::kRoot, ReadGpt2StyleAs<kGptBigCode>},
      {"Dots1ForCausalLM", TextModel::kRoot, ReadDenseAs<kDots1>},
      {"BailingMoeForCausalLM", TextModel::kRoot, ReadDenseAs<kBailing>},
      {"BailingMoeV2ForCausalLM", TextModel::kRoot, ReadDenseAs<kBailing>},
      {"Llama4ForCausalLM", TextModel::kRoot, ReadLlama4},
      {"Llama4ForConditionalGeneration", TextModel::kNested, ReadLlama4},
      {"Gemma2ForCausalLM", TextModel::kRoot, ReadInterleavedAs<kGemma2>},
      {"Gemma2Model", TextModel::kRoot, ReadInterleavedAs<kGemma2>},
      {"Gemma3ForCausalLM", TextModel::kRoot, ReadInterleavedAs<kGemma3>},
      {"Gemma3ForConditionalGeneration", TextModel::kNested, ReadInterleavedAs<kGemma3>},
      {"Rnj1ForCausalLM", TextModel::kRoot, ReadRnj1},
      {"CohereForCausalLM", TextModel::kRoot, ReadDenseAs<kCohere>},
      {"Cohere2ForCausalLM", TextModel::kRoot, ReadInterleavedAs<kCohere2>},
      {"Gemma3nForCausalLM", TextModel::kRoot, ReadInterleavedAs<kGemma3n>},
      {"Gemma3nForConditionalGeneration", TextModel::kNested, ReadInterleavedAs<kGemma3n>},
      {"Gemma4ForCausalLM", TextModel::kRoot, ReadGemma4},
      {"Gemma4ForConditionalGeneration", TextModel::kNested, ReadGemma4},
      // Drafts.
      {"K3DSparkModel", TextModel::kRoot, ReadMlaDraft, true, nullptr, "dspark"},
      {"Eagle3DeepseekV2ForCausalLM", TextModel::kRoot, ReadMlaDraft, true, nullptr, "eagle3"},
      {"Eagle3DeepseekV3ForCausalLM", TextModel::kRoot, ReadMlaDraft, true, nullptr, "eagle3"},
      {"DFlashDraftModel", TextModel::kRoot, ReadDflash, true, nullptr, "dflash"},
      {"Eagle3LlamaForCausalLM", TextModel::kRoot, ReadLlamaEagleDraft, true, nullptr, "eagle3"},
      {"LlamaForCausalLMEagle3", TextModel::kRoot, ReadLlamaEagleDraft, true, nullptr, "eagle3"},
      {"Eagle3MiniMaxM2ForCausalLM", TextModel::kRoot, ReadLlamaEagleDraft, true, nullptr,
       "eagle3"},
      {"Eagle3Qwen2_5vlForCausalLM", TextModel::kRoot, ReadLlamaEagleDraft, true, nullptr,
       "eagle3"},
      {"Eagle3Qwen3vlForCausalLM", TextModel::kRoot, ReadLlamaEagleDraft, true, nullptr, "eagle3"},
      {"PeagleLlamaForCausalLM", TextModel::kRoot, ReadLlamaEagleDraft, true, nullptr, "eagle3"},
      {"EagleLlamaForCausalLM", TextModel::kRoot, ReadLlamaEagleDraft, true, nullptr, "eagle"},
      // mistral_eagle.py: the engine's Mistral decoder layers over the draft's config.
      {"EagleMistralForCausalLM", TextModel::kRoot, ReadDenseAs<kMistral>, true, nullptr, "eagle"},
      {"EagleMistralLarge3ForCausalLM", TextModel::kRoot, ReadMistralLarge3EagleDraft, true,
       nullptr, "eagle"},
  };
  return kReaders;
}

// `inner` (a nested text config) with the dtype the engine reads for the model
// (get_torch_dtype): the root config's, else the text config's own, else the root's
// vision_config's; `storage` keeps a merged copy alive.
bool StatesDtype(const nlohmann::json& j) {
  return j.is_object() && ((j.contains("torch_dtype") && !j["torch_dtype"].is_null()) ||
                           (j.contains("dtype") && !j["dtype"].is_null()));
}
ConfigReader WithOuterDtype(const ConfigReader& inner, const ConfigReader& outer,
                            nlohmann::json& storage) {
  const nlohmann::json* from = nullptr;
  if (StatesDtype(outer.json())) {
    from = &outer.json();
  } else if (!StatesDtype(inner.json()) && outer.json().contains("vision_config") &&
             StatesDtype(outer.json()["vision_config"])) {
    from = &outer.json()["vision_config"];
  }
  if (from == nullptr) return inner;
  storage = inner.json();
  for (const char* dtype : {"torch_dtype", "dtype"}) {
    storage.erase(dtype);
    if (from->contains(dtype) && !(*from)[dtype].is_null()) storage[dtype] = (*from)[dtype];
  }
  return inner.Over(storage);
}

// Reads the text model at `key` with `read`; the dtype may sit at the top level only.
Status ReadTextModel(const ConfigReader& root, const char* key,
                     Status (*read)(const ConfigReader&, ModelDescription&), ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const ConfigReader text, root.Object(key));
  nlohmann::json storage;
  return read(WithOuterDtype(text, root, storage), m);
}

// DeepSeek-VL2 and DeepSeek-OCR (deepseek_vl2.py, deepseek_ocr.py, deepseek_ocr2.py over the
// fork's DeepseekVLV2Config, which builds language_config as a DeepSeek-V2 text config whatever
// it states, and the engine's DeepSeek-V2 model over it): MLA when kv_lora_rank is set (model
// type deepseek_v2 is in the engine's MLA list); with it null and both qk dims 0, multi-head
// attention (DeepseekAttention) of hidden_size / heads over num_key_value_heads. Without
// kv_lora_rank the class's default decides, which differs between Transformers versions (512,
// or null in the fork's subclass for v5): refused, as is a null one with other qk dims
// (DeepSeek-V2's non-MLA attention, not verified).
constexpr DenseFamily kDeepseekMha{.name = "DeepSeek-V2 (multi-head)",
                                   .default_positions = 2048,
                                   .reads_head_dim = false,
                                   .windows = DenseWindows::kNone};
Status ReadDeepseekV2Text(const ConfigReader& r, ModelDescription& m) {
  if (!r.json().contains("kv_lora_rank")) {
    return r.Invalid("kv_lora_rank",
                     "is missing: the DeepSeek-V2 text config's default (MLA of 512, or none) "
                     "depends on the Transformers version; state it (null for multi-head "
                     "attention)");
  }
  if (r.Has("kv_lora_rank"))
    return ReadDeepseekMla(r, /*with_indexer=*/false, /*with_mtp=*/false, m);
  KVTOPO_ASSIGN_OR_RETURN(const int64_t nope, r.IntInOr("qk_nope_head_dim", 128, 0, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t rope, r.IntInOr("qk_rope_head_dim", 64, 0, kMaxModelDim));
  if (nope != 0 || rope != 0) {
    return r.Invalid("kv_lora_rank",
                     fmt::format("is null with qk_nope_head_dim {} and qk_rope_head_dim {}: "
                                 "DeepSeek-V2's attention without MLA, which kvtopo does not plan "
                                 "(both 0 is multi-head attention)",
                                 nope, rope));
  }
  return ReadDense(r, kDeepseekMha, m);
}
Status ReadDeepseekVl2(const ConfigReader& root, ModelDescription& m) {
  return ReadTextModel(root, "language_config", ReadDeepseekV2Text, m);
}

// BAGEL (bagel.py over the fork's BagelConfig, which builds llm_config as a Qwen2Config): the
// engine's Qwen2 model over llm_config, the Qwen2Config defaults filling what it leaves out.
Status ReadBagel(const ConfigReader& root, ModelDescription& m) {
  return ReadTextModel(root, "llm_config", ReadQwen2Text, m);
}

// The Qwen Omni thinker's text model: `thinker_config.text_config`, with the dtype of the root,
// else of that text config (the engine's get_text_config(); thinker_config's own is not read).
Status ReadThinkerTextModel(const ConfigReader& root,
                            Status (*read)(const ConfigReader&, ModelDescription&),
                            ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const ConfigReader thinker, root.Object("thinker_config"));
  KVTOPO_ASSIGN_OR_RETURN(const ConfigReader text, thinker.Object("text_config"));
  nlohmann::json storage;
  KVTOPO_RETURN_IF_ERROR(read(WithOuterDtype(text, root, storage), m));
  RecordTextShape(text.json(), m);
  return Status::Ok();
}

// MiniCPM-V and MiniCPM-o (minicpmv.py, minicpmo.py): the language model over the root config,
// picked by `version`, which the engine reads as str(version) split at its dots into integers
// (MiniCPM-o: the first two). MiniCPM-V: 2.0 MiniCPM, 2.5 and 4.0 Llama, 2.6 Qwen2, 4.5 Qwen3;
// without a version, 2.0 when hidden_size is 2304 and query_num 64, else 2.5. MiniCPM-o: 2.6
// Qwen2 (also without a version), 4.5 Qwen3. Any other version is the engine's ValueError.
struct VersionedModel {
  std::array<int64_t, 2> version;
  Status (*read)(const ConfigReader&, ModelDescription&);
};
constexpr std::array<VersionedModel, 5> kMiniCpmVModels = {{
    {{2, 0}, ReadDenseAs<kMiniCpm>},
    {{2, 5}, ReadDenseAs<kLlama>},
    {{2, 6}, ReadDenseAs<kQwen2>},
    {{4, 0}, ReadDenseAs<kLlama>},
    {{4, 5}, ReadDenseAs<kQwen3>},
}};
constexpr std::array<VersionedModel, 2> kMiniCpmOModels = {{
    {{2, 6}, ReadDenseAs<kQwen2>},
    {{4, 5}, ReadDenseAs<kQwen3>},
}};
Result<std::vector<int64_t>> MiniCpmVersion(const ConfigReader& r, bool omni) {
  std::vector<int64_t> version;
  if (!r.json().contains("version")) {
    if (omni) return std::vector<int64_t>{2, 6};
    KVTOPO_ASSIGN_OR_RETURN(const int64_t hidden, r.Int("hidden_size"));
    bool v2 = false;
    if (hidden == 2304) {
      KVTOPO_ASSIGN_OR_RETURN(const int64_t query_num, r.Int("query_num"));
      v2 = query_num == 64;
    }
    return v2 ? std::vector<int64_t>{2, 0} : std::vector<int64_t>{2, 5};
  }
  const nlohmann::json& v = r.json()["version"];
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  size_t start = 0;
  while (true) {
    const size_t dot = text.find('.', start);
    const std::string part = text.substr(start, dot == std::string::npos ? dot : dot - start);
    if (part.empty() || part.size() > 9 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return r.Invalid(
          "version",
          fmt::format("is {}: the engine reads it as integers separated by dots", v.dump()));
    }
    if (!omni || version.size() < 2) version.push_back(std::stoll(part));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return version;
}
template <bool kOmni>
Status ReadMiniCpmV(const ConfigReader& r, ModelDescription& m) {
  const auto& models = kOmni ? std::span<const VersionedModel>(kMiniCpmOModels)
                             : std::span<const VersionedModel>(kMiniCpmVModels);
  KVTOPO_ASSIGN_OR_RETURN(const std::vector<int64_t> version, MiniCpmVersion(r, kOmni));
  for (const VersionedModel& model : models) {
    if (version.size() == 2 && version[0] == model.version[0] && version[1] == model.version[1]) {
      return model.read(r, m);
    }
  }
  std::vector<std::string> names;
  for (const VersionedModel& model : models) {
    names.push_back(fmt::format("{}.{}", model.version[0], model.version[1]));
  }
  return r.Invalid(
      "version", fmt::format("is {}: the engine's {} supports versions {}", fmt::join(version, "."),
                             kOmni ? "MiniCPM-o" : "MiniCPM-V", fmt::join(names, ", ")));
}

// The text model at `key` read by `read`, or, when the config has none, an empty one (its config
// class's defaults, which `read` fills), with the root's dtype.
Status ReadTextModelOrDefaults(const ConfigReader& root, const char* key,
                               Status (*read)(const ConfigReader&, ModelDescription&),
                               ModelDescription& m) {
  if (root.Has(key)) return ReadTextModel(root, key, read, m);
  static const nlohmann::json kEmpty = nlohmann::json::object();
  nlohmann::json storage;
  return read(WithOuterDtype(ConfigReader(kEmpty, root.file(), root.Path(key)), root, storage), m);
}

// OpenVLA (openvla.py over the fork's OpenVLAConfig): the registered model text_config names,
// which the class builds as a LlamaConfig naming LlamaForCausalLM when it names none
// (LlamaConfig() without text_config): LlamaConfig's defaults fill what it leaves out. Ultravox's
// class does the same when text_config states no model type (UltravoxBuildsLlamaConfig).
Status ReadLlamaConfigText(const ConfigReader& r, ModelDescription& m) {
  if (r.json().contains("architectures")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> names, r.StringList("architectures"));
    if (names.empty() || names.front() != "LlamaForCausalLM") {
      return r.Invalid("architectures",
                       fmt::format("names [{}]: {}'s config class builds a LlamaConfig, which "
                                   "kvtopo plans as the engine's LlamaForCausalLM only",
                                   fmt::join(names, ", "), m.architecture));
    }
  }
  return ReadWithClassDefaults(r, kLlamaConfigText, m);
}
Status ReadOpenVla(const ConfigReader& root, ModelDescription& m) {
  return ReadTextModelOrDefaults(root, "text_config", ReadLlamaConfigText, m);
}

// MiDashengLM (midashenglm.py over the fork's MiDashengLMConfig): the engine's Qwen2 model over
// text_config, which the class builds as a Qwen2_5OmniTextConfig whatever model type it states,
// whose defaults fill what it leaves out (3584 hidden, 28 layers, 28 heads, 4 K/V heads, 32768
// positions; no window without use_sliding_window).
constexpr TypedTextModel kQwen25OmniTextConfig{
    "qwen2_5_omni_text", ReadDenseAs<kQwen2>, 3584, 28, 28, 4, 32768};
Status ReadMiDashengLmText(const ConfigReader& r, ModelDescription& m) {
  return ReadWithClassDefaults(r, kQwen25OmniTextConfig, m);
}
Status ReadMiDashengLm(const ConfigReader& root, ModelDescription& m) {
  return ReadTextModelOrDefaults(root, "text_config", ReadMiDashengLmText, m);
}

// GLM-ASR (glmasr.py over Transformers' GlmAsrConfig): the engine's Llama model over
// text_config, which the class builds from its own defaults overlaid by what text_config states
// (2048 hidden, 28 layers, 16 heads, 4 K/V heads, 8192 positions; model type llama, the only one
// planned here).
constexpr std::array<TypedTextModel, 1> kGlmAsrTextModels = {
    {{"llama", ReadDenseAs<kLlama>, 2048, 28, 16, 4, 8192}}};
Status ReadGlmAsrText(const ConfigReader& r, ModelDescription& m) {
  return ReadTypedTextModel(r, kGlmAsrTextModels, "GLM-ASR", m);
}
Status ReadGlmAsr(const ConfigReader& root, ModelDescription& m) {
  return ReadTextModelOrDefaults(root, "text_config", ReadGlmAsrText, m);
}

// PaddleOCR-VL (paddleocr_vl.py): the engine's ERNIE 4.5 model (Llama's K/V layout) over the root
// config, into which it merges text_config when there is one. Transformers' PaddleOCRVLConfig
// builds the text model from text_config, else from the root's text fields, as a
// PaddleOCRTextConfig, whose defaults fill what they leave out: 1024 hidden, 18 layers, 16
// heads, 2 K/V heads (null: the heads) of 128 (null: hidden_size / heads), 131072 positions.
constexpr TypedTextModel kPaddleOcrTextConfig{
    "paddleocr_vl_text", ReadDenseAs<kErnie45>, 1024, 18, 16, 2, 131072};
Status ReadPaddleOcrVlText(const ConfigReader& r, ModelDescription& m) {
  if (!r.IsNull("num_key_value_heads")) return ReadWithClassDefaults(r, kPaddleOcrTextConfig, m);
  nlohmann::json filled = r.json();
  filled["num_key_value_heads"] = r.json().contains("num_attention_heads")
                                      ? r.json()["num_attention_heads"]
                                      : nlohmann::json(kPaddleOcrTextConfig.num_attention_heads);
  return ReadWithClassDefaults(r.Over(filled), kPaddleOcrTextConfig, m);
}
Status ReadPaddleOcrVl(const ConfigReader& root, ModelDescription& m) {
  if (root.Has("text_config")) return ReadTextModel(root, "text_config", ReadPaddleOcrVlText, m);
  return ReadPaddleOcrVlText(root, m);
}

// Molmo 2 (molmo2.py): text_config, else llm_config, each field read without a default
// (num_key_value_heads, head_dim, num_hidden_layers, max_position_embeddings); no window.
constexpr DenseFamily kMolmo2{.name = "Molmo 2",
                              .absent_kv_heads = kRequired,
                              .absent_head_dim = kRequired,
                              .windows = DenseWindows::kNone};
Status ReadMolmo2(const ConfigReader& root, ModelDescription& m) {
  const char* key =
      root.Has("text_config") || !root.Has("llm_config") ? "text_config" : "llm_config";
  return ReadTextModel(root, key, ReadDenseAs<kMolmo2>, m);
}

// Moondream 3 (moondream3.py over the fork's Moondream3Config): the text model sits in the root's
// config.text: n_layers full-attention layers of dim / n_heads over n_kv_heads, max_context
// positions (the class's defaults: 2048, 24, 32, 32, 4096); no window. The dtype is the root's.
constexpr DenseFamily kMoondream3{
    .name = "Moondream 3", .reads_head_dim = false, .windows = DenseWindows::kNone};
Status ReadMoondream3(const ConfigReader& root, ModelDescription& m) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  ConfigReader config(kEmpty, root.file(), root.Path("config"));
  if (root.Has("config")) {
    KVTOPO_ASSIGN_OR_RETURN(config, root.Object("config"));
  }
  ConfigReader text(kEmpty, root.file(), config.Path("text"));
  if (config.Has("text")) {
    KVTOPO_ASSIGN_OR_RETURN(text, config.Object("text"));
  }
  KVTOPO_ASSIGN_OR_RETURN(const int64_t dim, text.IntInOr("dim", 2048, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t layers, text.IntInOr("n_layers", 24, 1, kMaxLayers));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t heads, text.IntInOr("n_heads", 32, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t kv, text.IntInOr("n_kv_heads", 32, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t length, text.IntInOr("max_context", 4096, 1, kMaxModelLen));
  if (dim % heads != 0) {
    return text.Invalid("dim", fmt::format("is {}, not a multiple of n_heads {}, which the head "
                                           "size is taken from",
                                           dim, heads));
  }
  if (heads % kv != 0) {
    return text.Invalid("n_kv_heads",
                        fmt::format("is {}, which does not divide n_heads {}", kv, heads));
  }
  nlohmann::json filled = {{"hidden_size", dim},
                           {"num_hidden_layers", layers},
                           {"num_attention_heads", heads},
                           {"num_key_value_heads", kv},
                           {"max_position_embeddings", length}};
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (root.Has(key)) filled[key] = root.json()[key];
  }
  // The text config class takes its experts from `moe` (read with get(); a false value reads as
  // {}): n_experts (64) as num_local_experts, n_experts_per_tok (8) as num_experts_per_tok, so
  // the engine takes the model for a MoE one; its decoder layers build them from start_layer (4)
  // on.
  nlohmann::json moe = nlohmann::json::object();
  if (const auto stated = text.json().find("moe");
      stated != text.json().end() && PythonTruth(*stated)) {
    if (!stated->is_object()) {
      return text.Invalid("moe", fmt::format("is {}: the engine's config class reads it with get() "
                                             "and raises AttributeError as it loads the config",
                                             stated->dump()));
    }
    moe = *stated;
  }
  RecordTextShape({{"num_local_experts", moe.value("n_experts", nlohmann::json(64))},
                   {"num_experts_per_tok", moe.value("n_experts_per_tok", nlohmann::json(8))}},
                  m);
  if (const std::optional<int64_t> start =
          JsonIntIn(moe.value("start_layer", nlohmann::json(4)),
                    std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
      start && m.num_experts > 0) {
    for (int64_t i = 0; i < layers; ++i) m.expert_layers.push_back(i >= *start);
  }
  return ReadDense(text.Over(filled), kMoondream3, m);
}

// Whisper (whisper.py over Transformers' WhisperConfig): an encoder-decoder model whose encoder
// keeps no KV cache. Each of its decoder_layers decoder layers caches self-attention (full
// attention) and cross-attention over the encoder's output, both decoder_attention_heads K/V
// heads (multi-head; TP must divide them) of d_model / decoder_attention_heads. The length is
// max_target_positions, one of the engine's length keys. WhisperConfig's defaults: d_model 384,
// 4 decoder layers of 6 heads, 448 target positions; it has no max_position_embeddings.
Status ReadWhisper(const ConfigReader& r, ModelDescription& m) {
  KVTOPO_RETURN_IF_ERROR(ReadDtype(r, m));
  nlohmann::json filled = r.json();
  if (!filled.contains("max_target_positions")) filled["max_target_positions"] = 448;
  KVTOPO_RETURN_IF_ERROR(ReadMaxLength(r.Over(filled), m, kAnyLengthField));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t hidden, r.IntInOr("d_model", 384, 1, kMaxModelDim));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t num_layers, r.IntInOr("decoder_layers", 4, 1, kMaxLayers));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t heads,
                          r.IntInOr("decoder_attention_heads", 6, 1, kMaxModelDim));
  if (hidden % heads != 0) {
    return r.Invalid("d_model", fmt::format("is {}, which decoder_attention_heads {} does not "
                                            "divide (the engine raises)",
                                            hidden, heads));
  }
  m.num_attention_heads = heads;
  m.num_kv_heads_total = heads;
  m.kv_heads_split_only = true;  // WhisperAttention asserts heads % TP == 0
  // The engine's TP check reads num_attention_heads, which WhisperConfig maps to
  // encoder_attention_heads (6 by default); the encoder's attention asserts TP divides them too.
  KVTOPO_ASSIGN_OR_RETURN(m.tp_checked_heads,
                          r.IntInOr("encoder_attention_heads", 6, 1, kMaxModelDim));
  // The audio is padded to 30 s: max_source_positions encoder tokens (1500 by default) per input.
  KVTOPO_ASSIGN_OR_RETURN(m.encoder_tokens,
                          r.IntInOr("max_source_positions", 1500, 1, kMaxModelLen));
  for (int64_t i = 0; i < num_layers; ++i) {
    for (const bool cross : {false, true}) {
      m.layers.push_back(RawLayer{.name = fmt::format("model.decoder.layers.{}.{}", i,
                                                      cross ? "encoder_attn" : "self_attn"),
                                  .type = LayerType::kAttention,
                                  .num_kv_heads_total = heads,
                                  .head_size = hidden / heads,
                                  .head_size_v = hidden / heads,
                                  .cross_attention = cross});
    }
  }
  return Status::Ok();
}

// Architectures the engine registers that kvtopo refuses, each with what it does not model.
struct Refusal {
  const char* architecture;
  const char* reason;
};
// Encoder-decoder models (whisper.py, cohere_asr.py, nemotron_parse.py, fireredlid.py; the
// fork's kv_cache_interface.py CrossAttentionSpec, single_type_kv_cache_manager.py
// CrossAttentionManager, the scheduler's num_encoder_tokens).
constexpr const char* kEncoderDecoder =
    "it is an encoder-decoder model, whose decoder's cross-attention layers keep the encoder's "
    "K/V in a cache group of their own (the engine's CrossAttentionSpec: "
    "cdiv(max_num_encoder_input_tokens, block_size) pages per layer, allocated when the encoder "
    "input is scheduled and never prefix-cached), which kvtopo does not model";
constexpr Refusal kRefusals[] = {
    // minimax_vl_01.py, mamba/abstract.py
    {"MiniMaxVL01ForConditionalGeneration",
     "the engine's wrapper does not declare IsHybrid, so its hybrid setup never runs and the "
     "lightning-attention layers stop at startup without a mamba block size (minimax_vl_01.py, "
     "mamba/abstract.py); with --mamba-block-size their pages would still not be padded to the "
     "attention page"},
    {"CohereAsrForConditionalGeneration", kEncoderDecoder},
    {"NemotronParseForConditionalGeneration", kEncoderDecoder},
    {"FireRedLIDForConditionalGeneration", kEncoderDecoder},
    // voxtral_realtime.py over whisper_causal.py
    {"VoxtralRealtimeGeneration",
     "its causal audio encoder keeps a paged sliding-window cache pooled over downsample_factor "
     "blocks (whisper_causal.py), which kvtopo does not model"},
};

// Hybrid wrappers build their text model's layers, but the engine's hooks that key the
// architecture string or the model class do not carry over (models/config.py's
// MODELS_CONFIG_MAP, SupportsMambaPrefixCaching). Nemotron-H Nano VL V2 has its own hook (the
// SSM state as text_config's mamba_ssm_cache_dtype, else float32, as NemotronH's) but no Mamba
// prefix caching; the Nemotron-H Omni V3 models, MiniCPM-V 4.6 and Intern-S2-Preview have
// neither, so their SSM state takes the conv state's dtype (auto). kvtopo does not plan an MTP
// draft for them.
void WithoutClassHooks(ModelDescription& m) {
  m.supports_mamba_prefix_caching = false;
  m.mtp_unavailable = fmt::format(
      "kvtopo has not verified the engine's MTP draft for the multimodal wrapper {}, and does not "
      "plan it",
      m.architecture);
}
// LFM2-VL (lfm2_vl.py at 28be48fa9): its class estimates the short-convolution state for the
// hybrid block alignment from text_config's hidden_size, while an LFM2 text model's layers keep
// conv_dim channels (an LFM2-MoE text model's keep hidden_size).
void EstimatesConvFromHiddenSize(ModelDescription& m) {
  m.short_conv_estimate_channels = m.hidden_size;
}
void WithoutClassOrConfigHooks(ModelDescription& m) {
  WithoutClassHooks(m);
  m.mamba_ssm_dtype = KvCacheDtype::kAuto;
  m.mamba_ssm_dtype_warns = false;
}

// UltravoxConfig (the fork's ultravox.py config) builds its language model's config as
// CONFIG_MAPPING[text_config.get("model_type", "llama")](**(text_config or {})): without a
// text_config, or with one that names neither architectures nor another model type, the engine
// builds LlamaForCausalLM over LlamaConfig's defaults for what it leaves out.
bool UltravoxBuildsLlamaConfig(const ConfigReader& root, std::string_view architecture) {
  if (architecture != "UltravoxModel") return false;
  if (!root.Has("text_config")) return true;
  const nlohmann::json& text = root.json()["text_config"];
  if (!text.is_object() || text.contains("architectures")) return false;
  const auto type = text.find("model_type");
  return type == text.end() || *type == "llama";
}

}  // namespace

const std::vector<std::string>& SupportedArchitectures() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const ArchitectureReader& r : Readers()) names.emplace_back(r.architecture);
    return names;
  }();
  return kNames;
}

// Whether `table`, sorted (each table below is checked so by a static_assert), holds `name`.
template <size_t N>
bool InSortedTable(const std::string_view (&table)[N], std::string_view name) {
  return std::binary_search(std::begin(table), std::end(table), name);
}

// The target architectures kvtopo plans whose engine class does not implement SupportsEagle3
// (the fork's model_executor/models at 28be48fa9: supports_eagle3() is an isinstance check on
// that runtime-checkable protocol, true exactly when the class inherits it; each registry entry's
// class resolved through its bases; docs/planner.md "Speculative methods"). Sorted.
constexpr std::string_view kLacksEagle3Interface[] = {
    "AXK1ForCausalLM",
    "ArcticForCausalLM",
    "AriaForConditionalGeneration",
    "AudioFlamingo3ForConditionalGeneration",
    "AyaVisionForConditionalGeneration",
    "BagelForConditionalGeneration",
    "BaiChuanForCausalLM",
    "BaichuanForCausalLM",
    "BailingMoeForCausalLM",
    "BailingMoeV2ForCausalLM",
    "BailingMoeV2_5ForCausalLM",
    "BambaForCausalLM",
    "BeeForConditionalGeneration",
    "Blip2ForConditionalGeneration",
    "BloomForCausalLM",
    "ChameleonForConditionalGeneration",
    "ChatGLMForConditionalGeneration",
    "ChatGLMModel",
    "Cheers",
    "CheersForConditionalGeneration",
    "Cohere2ForCausalLM",
    "Cohere2MoeForCausalLM",
    "Cohere2VisionForConditionalGeneration",
    "CohereForCausalLM",
    "DbrxForCausalLM",
    "DeciLMForCausalLM",
    "DeepseekOCR2ForCausalLM",
    "DeepseekOCRForCausalLM",
    "DeepseekV4ForCausalLM",
    "DeepseekVLV2ForCausalLM",
    "Dots1ForCausalLM",
    "DotsOCRForCausalLM",
    "Eagle2_5_VLForConditionalGeneration",
    "Ernie4_5_MoeForCausalLM",
    "Ernie4_5_VLMoeForConditionalGeneration",
    "Exaone4ForCausalLM",
    "ExaoneForCausalLM",
    "ExaoneMoEForCausalLM",
    "FalconForCausalLM",
    "FalconH1ForCausalLM",
    "FalconMambaForCausalLM",
    "FireRedASR2ForConditionalGeneration",
    "FlexOlmoForCausalLM",
    "FunASRForConditionalGeneration",
    "FunAudioChatForConditionalGeneration",
    "FuyuForCausalLM",
    "GLM4VForCausalLM",
    "GPT2LMHeadModel",
    "GPTBigCodeForCausalLM",
    "GPTJForCausalLM",
    "GPTNeoXForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma2Model",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Gemma3nForCausalLM",
    "Gemma3nForConditionalGeneration",
    "GemmaForCausalLM",
    "Glm4ForCausalLM",
    "Glm4MoeForCausalLM",
    "Glm4MoeLiteForCausalLM",
    "Glm4vForConditionalGeneration",
    "Glm4vMoeForConditionalGeneration",
    "GlmAsrForConditionalGeneration",
    "GlmOcrForConditionalGeneration",
    "Granite4VisionForConditionalGeneration",
    "GraniteForCausalLM",
    "GraniteMoeForCausalLM",
    "GraniteMoeHybridForCausalLM",
    "GraniteMoeSharedForCausalLM",
    "GraniteSpeechForConditionalGeneration",
    "Grok1ForCausalLM",
    "Grok1ModelForCausalLM",
    "H2OVLChatModel",
    "HCXVisionForCausalLM",
    "HCXVisionV2ForCausalLM",
    "HYV3ForCausalLM",
    "HfMoondream",
    "HyperCLOVAXForCausalLM",
    "IQuestLoopCoderForCausalLM",
    "Idefics3ForConditionalGeneration",
    "InternLM2ForCausalLM",
    "InternLM2VEForCausalLM",
    "InternS1ForConditionalGeneration",
    "InternVLChatModel",
    "InternVLForConditionalGeneration",
    "IsaacForConditionalGeneration",
    "JAISLMHeadModel",
    "Jais2ForCausalLM",
    "JambaForCausalLM",
    "KananaVForConditionalGeneration",
    "KeyeForConditionalGeneration",
    "KeyeVL1_5ForConditionalGeneration",
    "KimiLinearForCausalLM",
    "KimiVLForConditionalGeneration",
    "Lfm2ForCausalLM",
    "Lfm2MoeForCausalLM",
    "Lfm2VlForConditionalGeneration",
    "Llama_Nemotron_Nano_VL",
    "LlavaNextForConditionalGeneration",
    "LlavaNextVideoForConditionalGeneration",
    "LlavaOnevisionForConditionalGeneration",
    "LongcatFlashForCausalLM",
    "MPTForCausalLM",
    "Mamba2ForCausalLM",
    "MambaForCausalLM",
    "MiDashengLMModel",
    "MiMoV2FlashForCausalLM",
    "MiMoV2ForCausalLM",
    "MiMoV2OmniForCausalLM",
    "MiniCPMO",
    "MiniCPMV",
    "MiniCPMV4_6ForConditionalGeneration",
    "MiniMaxForCausalLM",
    "MiniMaxM1ForCausalLM",
    "MiniMaxText01ForCausalLM",
    "MixtralForCausalLM",
    "Molmo2ForConditionalGeneration",
    "MolmoForCausalLM",
    "Moondream3ForCausalLM",
    "MoonshotKimiaForCausalLM",
    "MptForCausalLM",
    "MusicFlamingoForConditionalGeneration",
    "NVLM_D",
    "NemotronForCausalLM",
    "NemotronHForCausalLM",
    "NemotronH_Nano_Omni_Reasoning_V3",
    "NemotronH_Nano_VL_V2",
    "NemotronH_Super_Omni_Reasoning_V3",
    "OPTForCausalLM",
    "Olmo2ForCausalLM",
    "Olmo3ForCausalLM",
    "OlmoForCausalLM",
    "OlmoHybridForCausalLM",
    "OlmoeForCausalLM",
    "OpenPanguVLForConditionalGeneration",
    "OpenVLAForActionPrediction",
    "OrionForCausalLM",
    "OuroForCausalLM",
    "Ovis",
    "Ovis2_5",
    "Ovis2_6ForCausalLM",
    "Ovis2_6_MoeForCausalLM",
    "PaddleOCRVLForConditionalGeneration",
    "PaliGemmaForConditionalGeneration",
    "PanguEmbeddedForCausalLM",
    "PanguProMoEV2ForCausalLM",
    "PanguUltraMoEForCausalLM",
    "Param2MoEForCausalLM",
    "PersimmonForCausalLM",
    "Phi3VForCausalLM",
    "Phi4ForCausalLMV",
    "Phi4MMForCausalLM",
    "PhiForCausalLM",
    "PhiMoEForCausalLM",
    "Plamo2ForCausalLM",
    "Plamo3ForCausalLM",
    "QWenLMHeadModel",
    "QianfanOCRForConditionalGeneration",
    "Qwen2AudioForConditionalGeneration",
    "Qwen2MoeForCausalLM",
    "Qwen2VLForConditionalGeneration",
    "Qwen2_5OmniForConditionalGeneration",
    "Qwen2_5OmniModel",
    "Qwen3ASRForConditionalGeneration",
    "Qwen3ASRRealtimeGeneration",
    "Qwen3NextForCausalLM",
    "Qwen3OmniMoeForConditionalGeneration",
    "QwenVLForConditionalGeneration",
    "RForConditionalGeneration",
    "RWForCausalLM",
    "Rnj1ForCausalLM",
    "SarvamMLAForCausalLM",
    "SarvamMoEForCausalLM",
    "SeedOssForCausalLM",
    "SkyworkR1VChatModel",
    "SmolVLMForConditionalGeneration",
    "SolarForCausalLM",
    "StableLMEpochForCausalLM",
    "StableLmForCausalLM",
    "Starcoder2ForCausalLM",
    "Step3TextForCausalLM",
    "Step3VLForConditionalGeneration",
    "Step3p5ForCausalLM",
    "StepVLForConditionalGeneration",
    "Tarsier2ForConditionalGeneration",
    "TarsierForConditionalGeneration",
    "UltravoxModel",
    "VoxtralForConditionalGeneration",
    "WhisperForConditionalGeneration",
    "Zamba2ForCausalLM",
};

// The EAGLE-family draft classes of the engine's registry (_SPECULATIVE_DECODING_MODELS at
// 28be48fa9) that EAGLEConfig's renaming can reach.
constexpr std::string_view kEngineEagleDrafts[] = {
    "DFlashDraftModel",         "Eagle3DeepseekV2ForCausalLM",   "Eagle3DeepseekV3ForCausalLM",
    "Eagle3LlamaForCausalLM",   "Eagle3MiniMaxM2ForCausalLM",    "Eagle3Qwen2_5vlForCausalLM",
    "Eagle3Qwen3vlForCausalLM", "EagleCohereForCausalLM",        "EagleDeepSeekMTPModel",
    "EagleLlama4ForCausalLM",   "EagleLlamaForCausalLM",         "EagleMiniCPMForCausalLM",
    "EagleMistralForCausalLM",  "EagleMistralLarge3ForCausalLM", "LlamaForCausalLMEagle3"};

// A speculators-format config (transformers_utils/config.py reads a config without model_type
// whose speculators_config is set as SpeculatorsConfig; configs/speculators/algos.py): the draft
// is transformer_layer_config with the algorithm's architecture (eagle3 Eagle3LlamaForCausalLM,
// peagle PeagleLlamaForCausalLM, dflash DFlashDraftModel, whose dflash_config becomes the
// speculators mask_token_id and aux_hidden_state_layer_ids); the speculators
// target_hidden_size and layer ids (eagle_aux_hidden_state_layer_ids, dflash's
// aux_hidden_state_layer_ids) carry over as the engine copies them.
bool IsSpeculatorsFormat(const nlohmann::json& j) {
  return j.is_object() && !j.contains("model_type") && j.contains("speculators_config") &&
         !j["speculators_config"].is_null();
}
Status FromSpeculatorsFormat(LoadedConfig& draft) {
  const ConfigReader r(draft.json, draft.file);
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, r.String("speculators_model_type"));
  constexpr std::pair<std::string_view, const char*> kAlgorithms[] = {
      {"eagle3", "Eagle3LlamaForCausalLM"},
      {"peagle", "PeagleLlamaForCausalLM"},
      {"dflash", "DFlashDraftModel"}};
  const auto* algorithm = std::find_if(std::begin(kAlgorithms), std::end(kAlgorithms),
                                       [&](const auto& a) { return a.first == type; });
  if (algorithm == std::end(kAlgorithms)) {
    return r.Invalid("speculators_model_type",
                     fmt::format("is '{}'; the engine reads speculators drafts of type eagle3, "
                                 "peagle, dflash",
                                 type));
  }
  KVTOPO_ASSIGN_OR_RETURN(const ConfigReader layer, r.Object("transformer_layer_config"));
  nlohmann::json built = layer.json();
  built["architectures"] = {algorithm->second};
  const nlohmann::json& j = r.json();
  if (j.contains("target_hidden_size") && !j["target_hidden_size"].is_null()) {
    built["target_hidden_size"] = j["target_hidden_size"];
  }
  if (type == "peagle") {
    // The proposer's parallel-drafting token (update_peagle reads mask_token_id as pard_token).
    if (!j.contains("mask_token_id")) {
      return r.Invalid("mask_token_id",
                       "is missing: the engine requires it of a speculators PEagle draft");
    }
    built["pard_token"] = j["mask_token_id"];
  }
  if (type == "dflash") {
    for (const char* key : {"mask_token_id", "aux_hidden_state_layer_ids"}) {
      if (!j.contains(key)) {
        return r.Invalid(key, "is missing: the engine requires it of a speculators DFlash draft");
      }
    }
    built["eagle_aux_hidden_state_layer_ids"] = j["aux_hidden_state_layer_ids"];
    built["dflash_config"] = {{"mask_token_id", j["mask_token_id"]},
                              {"target_layer_ids", j["aux_hidden_state_layer_ids"]}};
  } else if (const auto ids = j.find("eagle_aux_hidden_state_layer_ids");
             ids != j.end() && !ids->is_null() && !(ids->is_array() && ids->empty())) {
    built["eagle_aux_hidden_state_layer_ids"] = *ids;
  }
  draft.json = std::move(built);
  return Status::Ok();
}

Result<std::optional<SpeculatorsOverride>> SpeculatorsModelOverride(
    const std::string& model, const std::string& config_format, const std::string& revision) {
  Result<LoadedConfig> loaded = LoadModelConfig(model, config_format, revision);
  if (!loaded.ok() || !loaded->json.is_object()) return std::optional<SpeculatorsOverride>();
  const nlohmann::json& j = loaded->json;
  if (!j.contains("speculators_config") || j["speculators_config"].is_null()) {
    return std::optional<SpeculatorsOverride>();
  }
  // SpeculatorsConfig.validate_speculators_config, then build_vllm_speculative_config.
  const ConfigReader r(j, loaded->file);
  const std::string invalid =
      "is required of a speculators config (the engine's 'Invalid speculators config structure')";
  KVTOPO_ASSIGN_OR_RETURN(const ConfigReader spec, r.Object("speculators_config"));
  const nlohmann::json* methods =
      spec.json().contains("proposal_methods") ? &spec.json()["proposal_methods"] : nullptr;
  if (methods == nullptr || !methods->is_array() || methods->empty() ||
      !(*methods)[0].is_object() || !(*methods)[0].contains("speculative_tokens") ||
      (*methods)[0]["speculative_tokens"].is_null()) {
    return spec.Invalid("proposal_methods",
                        "must hold a first proposal method with 'speculative_tokens': the engine "
                        "takes its token count from it");
  }
  KVTOPO_ASSIGN_OR_RETURN(const ConfigReader verifier, spec.Object("verifier"));
  KVTOPO_ASSIGN_OR_RETURN(const std::string verifier_model, verifier.String("name_or_path"));
  if (!j.contains("speculators_model_type") || !j["speculators_model_type"].is_string()) {
    return r.Invalid("speculators_model_type", invalid);
  }
  if (!j.contains("transformer_layer_config") || !j["transformer_layer_config"].is_object()) {
    return r.Invalid("transformer_layer_config", "must be an object: " + invalid);
  }
  std::string method = j["speculators_model_type"].get<std::string>();
  nlohmann::json built = {{"method", method},
                          {"num_speculative_tokens", (*methods)[0]["speculative_tokens"]},
                          {"model", model}};
  if (method == "peagle") {
    built["method"] = "eagle3";
    built["parallel_drafting"] = true;
  }
  return std::optional<SpeculatorsOverride>(
      SpeculatorsOverride{verifier_model, built.dump(), loaded->file});
}

Status ResolveDraftConfig(std::string_view method, LoadedConfig& draft) {
  if (IsSpeculatorsFormat(draft.json)) return FromSpeculatorsFormat(draft);
  std::string_view prefix;
  bool keeps_suffix = true;  // eagle keeps only names that start with its prefix
  if (method == "eagle3") {
    prefix = "Eagle3";
  } else if (method == "dflash") {
    prefix = "DFlash";
  } else if (method == "eagle") {
    prefix = "Eagle";
    keeps_suffix = false;
  } else {
    return Status::Ok();
  }
  auto carries_prefix = [&](std::string_view name) {
    return name.starts_with(prefix) || (keeps_suffix && name.ends_with(prefix));
  };
  nlohmann::json& j = draft.json;
  // An EAGLE-format config (model_type "eagle") is not renamed.
  if (!j.is_object() || !j.contains("architectures") || !j["architectures"].is_array() ||
      j.value("model_type", nlohmann::json()) == "eagle") {
    return Status::Ok();
  }
  for (nlohmann::json& a : j["architectures"]) {
    if (!a.is_string()) return Status::Ok();  // DescribeModel names the bad entry
    const std::string name = a.get<std::string>();
    if (!carries_prefix(name)) a = std::string(prefix) + name;
  }
  if (j["architectures"].empty()) return Status::Ok();
  const std::string stated = j["architectures"][0].get<std::string>();
  const auto& readers = Readers();
  const bool planned =
      std::any_of(readers.begin(), readers.end(),
                  [&](const ArchitectureReader& r) { return r.draft && stated == r.architecture; });
  if (planned) return Status::Ok();
  std::vector<std::string> drafts;
  for (const ArchitectureReader& r : readers) {
    if (r.draft && r.method != nullptr && method == r.method && carries_prefix(r.architecture)) {
      drafts.emplace_back(r.architecture);
    }
  }
  const bool registered = InSortedTable(kEngineEagleDrafts, stated);
  return InvalidArgument(fmt::format(
      "--speculative-config method '{}': the engine builds draft '{}' as {} (it prefixes the "
      "architecture with {}), which {}; kvtopo plans the {} drafts {}",
      method, draft.name, stated, prefix,
      registered ? "kvtopo does not plan"
                 : "the engine's model registry does not hold, so it refuses the launch",
      method, fmt::join(drafts, ", ")));
}

// The model type a draft's config has after SpeculativeConfig.hf_config_override (the fork's
// vllm/config/speculative.py at 28be48fa9), which the engine applies to every draft config it
// loads, when that type is one of its MTP types (MTPModelTypes); empty otherwise.
std::string MtpTypeAfterOverride(const nlohmann::json& config) {
  if (!config.is_object()) return "";
  std::string arch;
  if (const auto a = config.find("architectures");
      a != config.end() && a->is_array() && !a->empty() && (*a)[0].is_string()) {
    arch = (*a)[0].get<std::string>();
  }
  // hf_config_override's renames in its order: by model type (by_arch false) or by the
  // architecture the config states; the Nemotron-H and EXAONE 4.5 rules below fall between them.
  struct Rename {
    bool by_arch;
    std::string_view from, to;
  };
  constexpr Rename kBeforeNemotron[] = {{false, "deepseek_v3", "deepseek_mtp"},
                                        {false, "deepseek_v32", "deepseek_mtp"},
                                        {false, "glm_moe_dsa", "deepseek_mtp"},
                                        {false, "pangu_ultra_moe", "pangu_ultra_moe_mtp"},
                                        {true, "MiMoForCausalLM", "mimo_mtp"},
                                        {true, "Glm4MoeForCausalLM", "glm4_moe_mtp"},
                                        {true, "Glm4MoeLiteForCausalLM", "glm4_moe_lite_mtp"},
                                        {true, "GlmOcrForConditionalGeneration", "glm_ocr_mtp"},
                                        {false, "ernie4_5_moe", "ernie_mtp"}};
  constexpr Rename kAfterNemotron[] = {
      {false, "qwen3_next", "qwen3_next_mtp"},     {false, "exaone_moe", "exaone_moe_mtp"},
      {false, "qwen3_5", "qwen3_5_mtp"},           {false, "qwen3_5_moe", "qwen3_5_mtp"},
      {false, "intern_s2_preview", "qwen3_5_mtp"}, {false, "longcat_flash", "longcat_flash_mtp"},
      {false, "step3p5", "step3p5_mtp"},           {false, "hy_v3", "hy_v3_mtp"},
      {false, "gemma4_assistant", "gemma4_mtp"}};
  std::string type = StringOrEmpty(config, "model_type");
  auto apply = [&](const auto& renames) {
    for (const Rename& r : renames) {
      if ((r.by_arch ? arch : type) == r.from) type = r.to;
    }
  };
  apply(kBeforeNemotron);
  const nlohmann::json* c = &config;
  if (arch == "NemotronH_Super_Omni_Reasoning_V3") {
    // The text config is promoted before the Nemotron-H check.
    const auto text = config.find("text_config");
    c = text != config.end() && text->is_object() ? &*text : &config;
    type = StringOrEmpty(*c, "model_type");
  }
  if (type == "nemotron_h" || type == "nemotron_h_puzzle") {
    const auto n = c->find("num_nextn_predict_layers");
    if (n != c->end() && n->is_number() && n->get<double>() > 0) type = "nemotron_h_mtp";
  }
  apply(kAfterNemotron);
  // Between exaone_moe and qwen3_5 in the engine's order; no other rule yields or reads it.
  if (type.find("exaone4_5") != std::string::npos) type = "exaone4_5_mtp";
  return IsMtpModelType(type) ? type : "";
}

std::optional<DraftMethodName> DraftMethodByName(std::string_view model) {
  const std::string name = AsciiLower(model);
  constexpr DraftMethodName kByName[] = {
      {"eagle-", "eagle"}, {"eagle3", "eagle3"}, {"dflash", "dflash"}};
  for (const DraftMethodName& m : kByName) {
    if (name.find(m.word) != std::string::npos) return m;
  }
  return std::nullopt;
}

Result<std::string> DetectDraftMethod(SpeculativeConfig& spec, const std::string& target_model,
                                      const std::string& config_format, const LoadedConfig* target,
                                      const std::string& target_revision) {
  // A model named like a module path (a dot, no slash, no URL scheme) is a proposer class,
  // whatever the method says (custom_class); kvtopo keeps a name it reads as a config (an
  // embedded profile such as kimi-k2.6-eagle3-mla, a config file) for that config.
  const std::string& m = spec.model;
  if (!m.empty() && spec.method != "custom_class" && m.find('.') != std::string::npos &&
      m.find('/') == std::string::npos && !m.starts_with("http://") && !m.starts_with("https://") &&
      !m.starts_with("file://")) {
    Result<LoadedConfig> config = LoadModelConfig(m, config_format, spec.revision);
    if (!config.ok() && config.status().code() == StatusCode::kNotFound) {
      const std::string given = spec.method;
      spec.method = "custom_class";
      return fmt::format(
          "the engine runs --speculative-config method '{}' with model '{}' as method "
          "'custom_class': it takes a name with a dot and no slash for a proposer class's "
          "module path (SpeculativeConfig's method detection), and such a proposer keeps no "
          "draft KV cache",
          given, m);
    }
  }
  const bool mtp = spec.method == "mtp";
  // The methods whose draft the engine's detection chain takes (all but eagle, eagle3 and
  // dflash, which it keeps, and those without a draft model); a method other than draft_model
  // that the chain does not confirm raises NotImplementedError.
  const bool by_type = spec.method == "medusa" || spec.method == "mlp_speculator";
  if ((spec.method != "draft_model" && !mtp && !by_type) || spec.model.empty()) {
    return std::string();
  }
  if (const std::optional<DraftMethodName> by_name = DraftMethodByName(spec.model)) {
    const std::string given = spec.method;
    spec.method = by_name->method;
    return fmt::format(
        "the engine runs --speculative-config method '{}' with draft '{}' as method '{}': the "
        "draft's name contains '{}' (SpeculativeConfig's method detection)",
        given, spec.model, by_name->method, by_name->word);
  }
  Result<LoadedConfig> draft = LoadModelConfig(spec.model, config_format, spec.revision);
  if (!draft.ok()) return std::string();
  const std::string type_stated = StringOrEmpty(draft->json, "model_type");
  const std::string stated = type_stated.empty() ? "(none)" : type_stated;
  if (stated == "medusa" || stated == "mlp_speculator") {
    const std::string given = spec.method;
    if (given == stated) return std::string();
    spec.method = stated;
    return fmt::format(
        "the engine runs --speculative-config method '{}' with draft '{}' as method '{}': the "
        "draft's config has that model type (SpeculativeConfig's method detection)",
        given, spec.model, stated);
  }
  const std::string type = MtpTypeAfterOverride(draft->json);
  // A Gemma 4 assistant is a checkpoint of its own that the mtp plan checks against the target.
  const bool assistant = type == "gemma4_mtp";
  if (by_type && type.empty()) {
    return Rejected(fmt::format(
        "--speculative-config method '{}': draft '{}' has model type {}, which is neither "
        "{} nor one the engine's SpeculativeConfig.hf_config_override turns into an MTP type, "
        "so its method detection raises NotImplementedError ('Unsupported speculative method: "
        "'{}''); name a checkpoint of model type {}, or drop 'method' to run it as a draft "
        "model",
        spec.method, spec.model, stated, spec.method, spec.method, spec.method));
  }
  if ((mtp && assistant) || (!mtp && type.empty())) return std::string();
  // The target as the caller read it, else as loaded here.
  std::optional<LoadedConfig> loaded_target;
  if (target == nullptr) {
    Result<LoadedConfig> read = LoadModelConfig(target_model, config_format, target_revision);
    if (!read.ok()) return std::string();
    loaded_target = std::move(*read);
    target = &*loaded_target;
  }
  const bool own = draft->file == target->file || draft->json == target->json;
  if (mtp) {
    if (own) return std::string();
    return Rejected(fmt::format(
        "--speculative-config method 'mtp': draft '{}' is another checkpoint than the target "
        "'{}': the engine builds the MTP layers of the checkpoint the speculative config names, "
        "and kvtopo plans the target's own; drop 'model' to draft with the target's MTP layers",
        spec.model, target_model));
  }
  const std::string given = spec.method;
  const std::string why = fmt::format(
      "its config (model type {}) becomes model type {} under SpeculativeConfig's "
      "hf_config_override, one of the engine's MTP types, so SpeculativeConfig's method "
      "detection runs it as method 'mtp' over that checkpoint's MTP layers, not as {}",
      stated, type, by_type ? "method '" + given + "'" : std::string("a draft model"));
  if (assistant) {
    spec.method = "mtp";
    return fmt::format(
        "--speculative-config method '{}': draft '{}': {}; kvtopo plans it as the "
        "target's MTP assistant",
        given, spec.model, why);
  }
  if (!own) {
    return Rejected(
        fmt::format("--speculative-config method '{}': draft '{}': {}; kvtopo plans MTP layers of "
                    "the target's own checkpoint only, and this one is not '{}'",
                    given, spec.model, why, target_model));
  }
  spec.method = "mtp";
  return fmt::format(
      "--speculative-config method '{}': draft '{}': {}; kvtopo plans "
      "the target's MTP layers",
      given, spec.model, why);
}

static_assert(std::is_sorted(std::begin(kEngineEagleDrafts), std::end(kEngineEagleDrafts)));
static_assert(std::is_sorted(std::begin(kLacksEagle3Interface), std::end(kLacksEagle3Interface)));

bool LacksEagle3Interface(std::string_view architecture) {
  return InSortedTable(kLacksEagle3Interface, architecture);
}

// The target architectures kvtopo plans whose experts the engine builds as FusedMoE layers with
// enable_eplb from --enable-eplb (the fork's model_executor/models at 28be48fa9, each registry
// entry's MoE block traced to its FusedMoE call: FusedMoE's default is False, and some MoE blocks
// take the parameter from a decoder layer that never passes it). Each also passes
// --eplb-config's num_redundant_experts, which adds experts to the layer. Sorted.
constexpr std::string_view kExpertsTakeEplb[] = {
    "AXK1ForCausalLM",
    "AfmoeForCausalLM",
    "DeepseekForCausalLM",
    "DeepseekV2ForCausalLM",
    "DeepseekV32ForCausalLM",
    "DeepseekV3ForCausalLM",
    "Ernie4_5_MoeForCausalLM",
    "Glm4MoeForCausalLM",
    "Glm4vMoeForConditionalGeneration",
    "GlmMoeDsaForCausalLM",
    "HunYuanDenseV1ForCausalLM",
    "HunYuanMoEV1ForCausalLM",
    "HunYuanVLForConditionalGeneration",
    "InternS1ProForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration",
    "KimiK25ForConditionalGeneration",
    "KimiVLForConditionalGeneration",
    "LagunaForCausalLM",
    "Lfm2MoeForCausalLM",
    "Llama4ForCausalLM",
    "Llama4ForConditionalGeneration",
    "MiMoV2FlashForCausalLM",
    "MiMoV2ForCausalLM",
    "MiMoV2OmniForCausalLM",
    "MistralLarge3ForCausalLM",
    "MixtralForCausalLM",
    "NemotronHForCausalLM",
    "OpenPanguVLForConditionalGeneration",
    "PanguEmbeddedForCausalLM",
    "PanguProMoEV2ForCausalLM",
    "PanguUltraMoEForCausalLM",
    "Qwen3MoeForCausalLM",
    "Qwen3NextForCausalLM",
    "Qwen3OmniMoeForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "Step3p5ForCausalLM",
};
static_assert(std::is_sorted(std::begin(kExpertsTakeEplb), std::end(kExpertsTakeEplb)));

bool ExpertsTakeEplb(std::string_view architecture) {
  return InSortedTable(kExpertsTakeEplb, architecture);
}

// The target architectures kvtopo plans whose experts the engine builds but whose model is not
// one its model runner balances (the fork at 28be48fa9: GPUModelRunner.load_model registers the
// model, or a multimodal class's language model, for EPLB only where is_mixture_of_experts holds:
// the MixtureOfExperts interface, by inheritance or with every member, and num_moe_layers above
// 0). Without it, or with the interface inherited and num_moe_layers never set (MiMo-V2,
// Kimi-Linear, Qwen3-Omni's language model, whose __init__ skips Qwen3-MoE's), eplb_step asserts
// at the first forward. HunYuan-VL's language model is HunYuanDenseV1ForCausalLM, the first of the
// two classes it names that the registry loads; Step-3-VL's is its text config's Step-3 model.
// Each class resolved through its bases; DeepSeek-V4's NVIDIA model too. Sorted.
constexpr std::string_view kEplbFindsNoMoeModel[] = {
    "AfmoeForCausalLM",
    "ArcticForCausalLM",
    "AriaForConditionalGeneration",
    "BailingMoeForCausalLM",
    "BailingMoeV2ForCausalLM",
    "BailingMoeV2_5ForCausalLM",
    "Cohere2MoeForCausalLM",
    "DbrxForCausalLM",
    "DeepseekV4ForCausalLM",
    "Dots1ForCausalLM",
    "Ernie4_5_VLMoeForConditionalGeneration",
    "ExaoneMoEForCausalLM",
    "FlexOlmoForCausalLM",
    "GptOssForCausalLM",
    "GraniteMoeForCausalLM",
    "GraniteMoeHybridForCausalLM",
    "GraniteMoeSharedForCausalLM",
    "Grok1ForCausalLM",
    "Grok1ModelForCausalLM",
    "HYV3ForCausalLM",
    "HfMoondream",
    "HunYuanDenseV1ForCausalLM",
    "HunYuanVLForConditionalGeneration",
    "JambaForCausalLM",
    "KimiLinearForCausalLM",
    "LagunaForCausalLM",
    "LongcatFlashForCausalLM",
    "MiMoV2FlashForCausalLM",
    "MiMoV2ForCausalLM",
    "MiMoV2OmniForCausalLM",
    "MiniMaxForCausalLM",
    "MiniMaxM1ForCausalLM",
    "MiniMaxM2ForCausalLM",
    "MiniMaxText01ForCausalLM",
    "Moondream3ForCausalLM",
    "OlmoeForCausalLM",
    "OpenPanguVLForConditionalGeneration",
    "PanguEmbeddedForCausalLM",
    "PhiMoEForCausalLM",
    "Qwen2MoeForCausalLM",
    "Qwen3OmniMoeForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration",
    "SarvamMoEForCausalLM",
    "Step3TextForCausalLM",
    "Step3VLForConditionalGeneration",
};
static_assert(std::is_sorted(std::begin(kEplbFindsNoMoeModel), std::end(kEplbFindsNoMoeModel)));

bool EplbFindsNoMoeModel(std::string_view architecture) {
  return InSortedTable(kEplbFindsNoMoeModel, architecture);
}

std::string ExpertLayerKeys(std::string_view engine_class) {
  const ExpertLayerRule* rule = ExpertLayerRuleFor(engine_class);
  std::vector<std::string_view> keys;
  if (rule != nullptr) {
    for (const char* key :
         {rule->switch_key, rule->gate, rule->dense, rule->last, rule->freq, rule->offset}) {
      if (key != nullptr) keys.emplace_back(key);
    }
    if (rule->mlp_only_layers) keys.emplace_back("mlp_only_layers");
    if (rule->moe_layers_enum) keys.emplace_back("moe_layers_enum");
    if (rule->flags != nullptr) keys.emplace_back(rule->flags);
  }
  if (keys.empty()) return "num_experts";
  if (keys.size() == 1) return std::string(keys.front());
  return fmt::format("{} and {}", fmt::join(keys.begin(), keys.end() - 1, ", "), keys.back());
}

NoExpertLayerRaise NoExpertLayerError(std::string_view engine_class) {
  const ExpertLayerRule* rule = ExpertLayerRuleFor(engine_class);
  if (rule == nullptr || rule->raises == nullptr) return {};
  return {.message = rule->raises, .per_stage_only = rule->raises_per_stage_only};
}

// The target architectures kvtopo plans whose FusedMoE experts get --eplb-config's
// num_redundant_experts but not --enable-eplb (their MoE block's enable_eplb keeps its default
// False: EXAONE MoE's ExaoneMoe, GLM-4.7-Flash's Glm4MoeLite, HY-V3's HYV3MoEFused, at
// 28be48fa9), so that FusedMoE asserts "Redundant experts are only supported with EPLB." under
// expert parallelism. Sorted.
constexpr std::string_view kExpertsTakeRedundantOnly[] = {
    "ExaoneMoEForCausalLM",
    "Glm4MoeLiteForCausalLM",
    "HYV3ForCausalLM",
};
static_assert(std::is_sorted(std::begin(kExpertsTakeRedundantOnly),
                             std::end(kExpertsTakeRedundantOnly)));

bool ExpertsTakeRedundantOnly(std::string_view architecture) {
  return InSortedTable(kExpertsTakeRedundantOnly, architecture);
}

// The registry architectures whose engine class has the HasInnerState interface (the fork's
// model_executor/models at 28be48fa9, each class resolved through its bases), which the V2 model
// runner refuses as "hybrid/mamba models". Qwen3.5's and LFM2-VL's hybrid classes lack it. Sorted.
constexpr std::string_view kHasInnerState[] = {
    "BailingMoeV2_5ForCausalLM",
    "BambaForCausalLM",
    "FalconH1ForCausalLM",
    "FalconMambaForCausalLM",
    "GraniteMoeHybridForCausalLM",
    "JambaForCausalLM",
    "KimiLinearForCausalLM",
    "Lfm2ForCausalLM",
    "Lfm2MoeForCausalLM",
    "Mamba2ForCausalLM",
    "MambaForCausalLM",
    "MiniCPMV4_6ForConditionalGeneration",
    "MiniMaxForCausalLM",
    "MiniMaxM1ForCausalLM",
    "MiniMaxText01ForCausalLM",
    "NemotronHForCausalLM",
    "NemotronHPuzzleForCausalLM",
    "NemotronH_Nano_Omni_Reasoning_V3",
    "NemotronH_Nano_VL_V2",
    "NemotronH_Super_Omni_Reasoning_V3",
    "OlmoHybridForCausalLM",
    "Plamo2ForCausalLM",
    "Qwen3NextForCausalLM",
    "Zamba2ForCausalLM",
};
static_assert(std::is_sorted(std::begin(kHasInnerState), std::end(kHasInnerState)));

bool HasInnerState(std::string_view architecture) {
  return InSortedTable(kHasInnerState, architecture);
}

// The target architectures kvtopo plans whose registry class (its name here) lacks the
// SupportsLoRA interface (the fork's model_executor/models at 28be48fa9, each class resolved
// through its bases: a runtime_checkable Protocol whose members only SupportsLoRA's subclasses
// define), so that --enable-lora fails once the weights are loaded
// ("<class> does not support LoRA yet."). Sorted by architecture.
constexpr std::pair<std::string_view, std::string_view> kLacksLora[] = {
    {"ArcticForCausalLM", "ArcticForCausalLM"},
    {"AriaForConditionalGeneration", "AriaForConditionalGeneration"},
    {"AyaVisionForConditionalGeneration", "AyaVisionForConditionalGeneration"},
    {"BailingMoeV2_5ForCausalLM", "BailingMoeV25ForCausalLM"},
    {"BeeForConditionalGeneration", "BeeForConditionalGeneration"},
    {"BloomForCausalLM", "BloomForCausalLM"},
    {"ChameleonForConditionalGeneration", "ChameleonForConditionalGeneration"},
    {"Cohere2MoeForCausalLM", "Cohere2MoeForCausalLM"},
    {"Cohere2VisionForConditionalGeneration", "Cohere2VisionForConditionalGeneration"},
    {"DbrxForCausalLM", "DbrxForCausalLM"},
    {"DeepseekV4ForCausalLM", "DeepseekV4ForCausalLM"},
    {"DeepseekVLV2ForCausalLM", "DeepseekVLV2ForCausalLM"},
    {"FalconForCausalLM", "FalconForCausalLM"},
    {"FalconMambaForCausalLM", "MambaForCausalLM"},
    {"FireRedASR2ForConditionalGeneration", "FireRedASR2ForConditionalGeneration"},
    {"FunASRForConditionalGeneration", "FunASRForConditionalGeneration"},
    {"FunAudioChatForConditionalGeneration", "FunAudioChatForConditionalGeneration"},
    {"FuyuForCausalLM", "FuyuForCausalLM"},
    {"GPT2LMHeadModel", "GPT2LMHeadModel"},
    {"GPTJForCausalLM", "GPTJForCausalLM"},
    {"GPTNeoXForCausalLM", "GPTNeoXForCausalLM"},
    {"Gemma3nForCausalLM", "Gemma3nForCausalLM"},
    {"Gemma3nForConditionalGeneration", "Gemma3nForConditionalGeneration"},
    {"HCXVisionForCausalLM", "HCXVisionForCausalLM"},
    {"HCXVisionV2ForCausalLM", "HCXVisionV2ForCausalLM"},
    {"HfMoondream", "Moondream3ForCausalLM"},
    {"IQuestLoopCoderForCausalLM", "IQuestLoopCoderForCausalLM"},
    {"JAISLMHeadModel", "JAISLMHeadModel"},
    {"KananaVForConditionalGeneration", "KananaVForConditionalGeneration"},
    {"KimiK25ForConditionalGeneration", "KimiK25ForConditionalGeneration"},
    {"KimiLinearForCausalLM", "KimiLinearForCausalLM"},
    {"KimiVLForConditionalGeneration", "KimiVLForConditionalGeneration"},
    {"LlavaNextForConditionalGeneration", "LlavaNextForConditionalGeneration"},
    {"LlavaNextVideoForConditionalGeneration", "LlavaNextVideoForConditionalGeneration"},
    {"LlavaOnevisionForConditionalGeneration", "LlavaOnevisionForConditionalGeneration"},
    {"MPTForCausalLM", "MPTForCausalLM"},
    {"Mamba2ForCausalLM", "Mamba2ForCausalLM"},
    {"MambaForCausalLM", "MambaForCausalLM"},
    {"MiDashengLMModel", "MiDashengLMModel"},
    {"MiMoV2FlashForCausalLM", "MiMoV2FlashForCausalLM"},
    {"MiMoV2ForCausalLM", "MiMoV2ForCausalLM"},
    {"MiMoV2OmniForCausalLM", "MiMoV2OmniForCausalLM"},
    {"MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration"},
    {"MiniMaxForCausalLM", "MiniMaxText01ForCausalLM"},
    {"MiniMaxM1ForCausalLM", "MiniMaxText01ForCausalLM"},
    {"MiniMaxText01ForCausalLM", "MiniMaxText01ForCausalLM"},
    {"Moondream3ForCausalLM", "Moondream3ForCausalLM"},
    {"MoonshotKimiaForCausalLM", "KimiAudioForConditionalGeneration"},
    {"MptForCausalLM", "MPTForCausalLM"},
    {"NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Nano_VL_V2"},
    {"NemotronH_Nano_VL_V2", "NemotronH_Nano_VL_V2"},
    {"NemotronH_Super_Omni_Reasoning_V3", "NemotronH_Nano_VL_V2"},
    {"OpenVLAForActionPrediction", "OpenVLAForActionPrediction"},
    {"OrionForCausalLM", "OrionForCausalLM"},
    {"Ovis", "Ovis"},
    {"Ovis2_5", "Ovis2_5"},
    {"Ovis2_6ForCausalLM", "Ovis2_5"},
    {"Ovis2_6_MoeForCausalLM", "Ovis2_5"},
    {"PaddleOCRVLForConditionalGeneration", "PaddleOCRVLForConditionalGeneration"},
    {"PersimmonForCausalLM", "PersimmonForCausalLM"},
    {"Phi3VForCausalLM", "Phi3VForCausalLM"},
    {"Phi4ForCausalLMV", "Phi4ForCausalLMV"},
    {"Qwen2AudioForConditionalGeneration", "Qwen2AudioForConditionalGeneration"},
    {"Qwen3OmniMoeForConditionalGeneration", "Qwen3OmniMoeThinkerForConditionalGeneration"},
    {"RForConditionalGeneration", "RForConditionalGeneration"},
    {"RWForCausalLM", "FalconForCausalLM"},
    {"SkyworkR1VChatModel", "SkyworkR1VChatModel"},
    {"StableLMEpochForCausalLM", "StablelmForCausalLM"},
    {"StableLmForCausalLM", "StablelmForCausalLM"},
    {"Starcoder2ForCausalLM", "Starcoder2ForCausalLM"},
    {"Step1ForCausalLM", "Step1ForCausalLM"},
    {"Step3TextForCausalLM", "Step3TextForCausalLM"},
    {"Step3VLForConditionalGeneration", "Step3VLForConditionalGeneration"},
    {"Step3p5ForCausalLM", "Step3p5ForCausalLM"},
    {"StepVLForConditionalGeneration", "StepVLForConditionalGeneration"},
    {"TarsierForConditionalGeneration", "TarsierForConditionalGeneration"},
    {"Zamba2ForCausalLM", "Zamba2ForCausalLM"},
};
static_assert(std::is_sorted(std::begin(kLacksLora), std::end(kLacksLora)));

std::string_view ClassLackingLora(std::string_view architecture) {
  const auto* row = std::lower_bound(std::begin(kLacksLora), std::end(kLacksLora), architecture,
                                     [](const auto& r, std::string_view a) { return r.first < a; });
  return row != std::end(kLacksLora) && row->first == architecture ? row->second
                                                                   : std::string_view();
}

// The target architectures kvtopo plans whose experts are not the engine's FusedMoE, so that
// --moe-backend does not reach them: Arctic's ArcticMoE, MiniCPM's MiniCPMMoE (MiniCPM3 and
// MiniCPM-V 2.0 build it too), Moondream 3's own MoE, and DeepSeek-V4's (its own checks). Sorted.
constexpr std::string_view kExpertsNotFusedMoe[] = {
    "ArcticForCausalLM",     "DeepseekV4ForCausalLM", "HfMoondream",
    "MiniCPM3ForCausalLM",   "MiniCPMForCausalLM",    "MiniCPMV",
    "Moondream3ForCausalLM",
};
static_assert(std::is_sorted(std::begin(kExpertsNotFusedMoe), std::end(kExpertsNotFusedMoe)));

bool ExpertsAreFusedMoe(std::string_view architecture) {
  return !InSortedTable(kExpertsNotFusedMoe, architecture);
}

// The LoRA-capable targets whose class, built with MoE layers (a stated expert count), lacks
// get_expert_mapping on itself and on its direct children, where get_moe_expert_mapping looks
// (vllm/model_executor/utils.py at 28be48fa9): the LoRA manager raises as it is built
// (lora/utils.py, process_packed_modules_mapping). Gemma 4's method-less model builds experts
// with its MoE block on only (ReadGemma4); ERNIE-4.5-VL's language model is an unregistered class
// whose child has none. Sorted.
constexpr std::string_view kMoeLacksExpertMapping[] = {
    "Ernie4_5_VLMoeForConditionalGeneration",
    "Gemma4ForCausalLM",
    "Gemma4ForConditionalGeneration",
    "GraniteMoeForCausalLM",
    "GraniteMoeSharedForCausalLM",
    "Llama4ForCausalLM",
    "PanguProMoEV2ForCausalLM",
    "PanguUltraMoEForCausalLM",
};

static_assert(std::is_sorted(std::begin(kMoeLacksExpertMapping), std::end(kMoeLacksExpertMapping)));

bool MoeLacksExpertMapping(std::string_view architecture) {
  return InSortedTable(kMoeLacksExpertMapping, architecture);
}

// The MoE causal-LM classes without get_expert_mapping of their own (their MRO), where it is on
// their inner model or nowhere (the fork at 28be48fa9): as a wrapper's language model, a direct
// child of a wrapper that has none either (no wrapper kvtopo plans defines it), the LoRA
// manager finds none. Sorted.
constexpr std::string_view kLanguageModelLacksExpertMapping[] = {
    "Cohere2MoeForCausalLM",       "DbrxForCausalLM",
    "ExaoneMoEForCausalLM",        "Gemma4ForCausalLM",
    "GptOssForCausalLM",           "GraniteMoeForCausalLM",
    "GraniteMoeHybridForCausalLM", "GraniteMoeSharedForCausalLM",
    "HunYuanDenseV1ForCausalLM",   "KimiLinearForCausalLM",
    "Llama4ForCausalLM",           "MiniMaxForCausalLM",
    "MiniMaxM1ForCausalLM",        "MiniMaxText01ForCausalLM",
    "NemotronHForCausalLM",        "NemotronHPuzzleForCausalLM",
    "PanguEmbeddedForCausalLM",    "PanguProMoEV2ForCausalLM",
    "PanguUltraMoEForCausalLM",    "Param2MoEForCausalLM",
    "Step3TextForCausalLM",        "Step3p5ForCausalLM",
};

static_assert(std::is_sorted(std::begin(kLanguageModelLacksExpertMapping),
                             std::end(kLanguageModelLacksExpertMapping)));

bool LanguageModelLacksExpertMapping(std::string_view architecture) {
  return InSortedTable(kLanguageModelLacksExpertMapping, architecture);
}

// The registry architectures kvtopo plans as generating targets or language models whose LoRA
// manager wraps the output head (the fork at 28be48fa9, each class resolved through its bases):
// get_supported_lora_modules takes lm_head only from a module's embedding_modules, which 27 model
// files list it in (Llama's, Qwen3's, Granite's, Mixtral's, ... and their subclasses; Mistral's
// class empties it), and Qwen3-VL, Qwen3-VL-MoE, Qwen3-ASR, Granite 4 Vision and Intern-S1-Pro
// build a fixed language model class that lists it, as do EXAONE 4.5 (Exaone4ForCausalLM), GLM-ASR
// (LlamaForCausalLM), Isaac and Keye (Qwen3ForCausalLM) through init_vllm_registered_model, each
// as `language_model` under the prefix their get_mm_mapping names (HunYuan-VL's and GLM-4V's
// prefix, language_model.model, leaves their output head out). GritLM, a Llama subclass, is
// planned under --runner generate only, where it builds the head. Sorted.
constexpr std::string_view kLoraWrapsLmHead[] = {
    "ApertusForCausalLM",
    "AquilaForCausalLM",
    "AquilaModel",
    "BambaForCausalLM",
    "CwmForCausalLM",
    "DeciLMForCausalLM",
    "Ernie4_5ForCausalLM",
    "Exaone4ForCausalLM",
    "Exaone4_5_ForConditionalGeneration",
    "ExaoneForCausalLM",
    "ExaoneMoEForCausalLM",
    "Fairseq2LlamaForCausalLM",
    "FalconH1ForCausalLM",
    "GlmAsrForConditionalGeneration",
    "GlmForCausalLM",
    "Granite4VisionForConditionalGeneration",
    "GraniteForCausalLM",
    "GraniteMoeForCausalLM",
    "GraniteMoeHybridForCausalLM",
    "GraniteMoeSharedForCausalLM",
    "GritLM",
    "HyperCLOVAXForCausalLM",
    "IQuestCoderForCausalLM",
    "InternLM3ForCausalLM",
    "InternLMForCausalLM",
    "InternS1ProForConditionalGeneration",
    "IsaacForConditionalGeneration",
    "Jais2ForCausalLM",
    "JambaForCausalLM",
    "KeyeForConditionalGeneration",
    "KeyeVL1_5ForConditionalGeneration",
    "LLaMAForCausalLM",
    "Lfm2ForCausalLM",
    "Lfm2MoeForCausalLM",
    "Llama4ForCausalLM",
    "LlamaForCausalLM",
    "LlamaModel",
    "MiniCPM3ForCausalLM",
    "MiniCPMForCausalLM",
    "MistralModel",
    "MixtralForCausalLM",
    "NemotronForCausalLM",
    "NemotronHForCausalLM",
    "Param2MoEForCausalLM",
    "Phi3ForCausalLM",
    "PhiMoEForCausalLM",
    "Qwen3ASRForConditionalGeneration",
    "Qwen3ASRRealtimeGeneration",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "SolarForCausalLM",
    "TeleChat2ForCausalLM",
    "TeleChat3ForCausalLM",
    "TeleChatForCausalLM",
    "TeleFLMForCausalLM",
    "XverseForCausalLM",
};

static_assert(std::is_sorted(std::begin(kLoraWrapsLmHead), std::end(kLoraWrapsLmHead)));

bool LoraWrapsLmHead(std::string_view architecture) {
  return InSortedTable(kLoraWrapsLmHead, architecture);
}

// The target architectures kvtopo plans whose registry class implements the engine's
// SupportsMultiModal interface (the fork at 28be48fa9, each registry entry's class resolved
// through its bases, as for kLacksEagle3Interface): the engine builds a multimodal config for
// them (ModelConfig.is_multimodal_model) and takes multimodal inputs unless every modality's
// limit is 0.
constexpr std::string_view kMultimodalTargets[] = {"AriaForConditionalGeneration",
                                                   "AudioFlamingo3ForConditionalGeneration",
                                                   "AyaVisionForConditionalGeneration",
                                                   "BagelForConditionalGeneration",
                                                   "BeeForConditionalGeneration",
                                                   "Blip2ForConditionalGeneration",
                                                   "ChameleonForConditionalGeneration",
                                                   "Cheers",
                                                   "CheersForConditionalGeneration",
                                                   "Cohere2VisionForConditionalGeneration",
                                                   "DeepseekOCR2ForCausalLM",
                                                   "DeepseekOCRForCausalLM",
                                                   "DeepseekVLV2ForCausalLM",
                                                   "DotsOCRForCausalLM",
                                                   "Eagle2_5_VLForConditionalGeneration",
                                                   "Emu3ForConditionalGeneration",
                                                   "Ernie4_5_VLMoeForConditionalGeneration",
                                                   "Exaone4_5_ForConditionalGeneration",
                                                   "FireRedASR2ForConditionalGeneration",
                                                   "FunASRForConditionalGeneration",
                                                   "FunAudioChatForConditionalGeneration",
                                                   "FuyuForCausalLM",
                                                   "GLM4VForCausalLM",
                                                   "Gemma3ForConditionalGeneration",
                                                   "Gemma3nForConditionalGeneration",
                                                   "Gemma4ForConditionalGeneration",
                                                   "Glm4vForConditionalGeneration",
                                                   "Glm4vMoeForConditionalGeneration",
                                                   "GlmAsrForConditionalGeneration",
                                                   "GlmOcrForConditionalGeneration",
                                                   "Granite4VisionForConditionalGeneration",
                                                   "GraniteSpeechForConditionalGeneration",
                                                   "H2OVLChatModel",
                                                   "HCXVisionForCausalLM",
                                                   "HCXVisionV2ForCausalLM",
                                                   "HfMoondream",
                                                   "HunYuanVLForConditionalGeneration",
                                                   "Idefics3ForConditionalGeneration",
                                                   "InternS1ForConditionalGeneration",
                                                   "InternS1ProForConditionalGeneration",
                                                   "InternS2PreviewForConditionalGeneration",
                                                   "InternVLChatModel",
                                                   "InternVLForConditionalGeneration",
                                                   "IsaacForConditionalGeneration",
                                                   "KananaVForConditionalGeneration",
                                                   "KeyeForConditionalGeneration",
                                                   "KeyeVL1_5ForConditionalGeneration",
                                                   "KimiK25ForConditionalGeneration",
                                                   "KimiVLForConditionalGeneration",
                                                   "Lfm2VlForConditionalGeneration",
                                                   "LightOnOCRForConditionalGeneration",
                                                   "Llama4ForConditionalGeneration",
                                                   "Llama_Nemotron_Nano_VL",
                                                   "LlavaForConditionalGeneration",
                                                   "LlavaNextForConditionalGeneration",
                                                   "LlavaNextVideoForConditionalGeneration",
                                                   "LlavaOnevisionForConditionalGeneration",
                                                   "MantisForConditionalGeneration",
                                                   "MiDashengLMModel",
                                                   "MiMoV2OmniForCausalLM",
                                                   "MiniCPMO",
                                                   "MiniCPMV",
                                                   "MiniCPMV4_6ForConditionalGeneration",
                                                   "Mistral3ForConditionalGeneration",
                                                   "Molmo2ForConditionalGeneration",
                                                   "MolmoForCausalLM",
                                                   "Moondream3ForCausalLM",
                                                   "MoonshotKimiaForCausalLM",
                                                   "MusicFlamingoForConditionalGeneration",
                                                   "NVLM_D",
                                                   "NemotronH_Nano_Omni_Reasoning_V3",
                                                   "NemotronH_Nano_VL_V2",
                                                   "NemotronH_Super_Omni_Reasoning_V3",
                                                   "OpenCUAForConditionalGeneration",
                                                   "OpenPanguVLForConditionalGeneration",
                                                   "OpenVLAForActionPrediction",
                                                   "Ovis",
                                                   "Ovis2_5",
                                                   "Ovis2_6ForCausalLM",
                                                   "Ovis2_6_MoeForCausalLM",
                                                   "PaddleOCRVLForConditionalGeneration",
                                                   "PaliGemmaForConditionalGeneration",
                                                   "Phi3VForCausalLM",
                                                   "Phi4ForCausalLMV",
                                                   "Phi4MMForCausalLM",
                                                   "PixtralForConditionalGeneration",
                                                   "QianfanOCRForConditionalGeneration",
                                                   "Qwen2AudioForConditionalGeneration",
                                                   "Qwen2VLForConditionalGeneration",
                                                   "Qwen2_5OmniForConditionalGeneration",
                                                   "Qwen2_5OmniModel",
                                                   "Qwen2_5_VLForConditionalGeneration",
                                                   "Qwen3ASRForConditionalGeneration",
                                                   "Qwen3ASRRealtimeGeneration",
                                                   "Qwen3OmniMoeForConditionalGeneration",
                                                   "Qwen3VLForConditionalGeneration",
                                                   "Qwen3VLMoeForConditionalGeneration",
                                                   "Qwen3_5ForConditionalGeneration",
                                                   "Qwen3_5MoeForConditionalGeneration",
                                                   "QwenVLForConditionalGeneration",
                                                   "RForConditionalGeneration",
                                                   "SkyworkR1VChatModel",
                                                   "SmolVLMForConditionalGeneration",
                                                   "Step3VLForConditionalGeneration",
                                                   "StepVLForConditionalGeneration",
                                                   "Tarsier2ForConditionalGeneration",
                                                   "TarsierForConditionalGeneration",
                                                   "TransformersMultiModalForCausalLM",
                                                   "TransformersMultiModalMoEForCausalLM",
                                                   "UltravoxModel",
                                                   "VoxtralForConditionalGeneration",
                                                   "WhisperForConditionalGeneration"};
static_assert(std::is_sorted(std::begin(kMultimodalTargets), std::end(kMultimodalTargets)));

bool IsMultimodalTarget(std::string_view architecture) {
  return InSortedTable(kMultimodalTargets, architecture);
}

// Classes with the EAGLE-3 interface that still cannot give the states (the fork at 28be48fa9):
// the interface's set_aux_hidden_state_layers (interfaces.py) asserts that the language model's
// model inherits EagleModelMixin, and the runner then unpacks (hidden, aux) from the forward.
constexpr std::pair<std::string_view, const char*> kAuxStatesNotDelivered[] = {
    // exaone4_5.py builds Exaone4ForCausalLM; exaone4.py's Exaone4Model is a plain nn.Module.
    {"Exaone4_5_ForConditionalGeneration",
     "builds its language model as Exaone4ForCausalLM, whose Exaone4Model does not inherit "
     "EagleModelMixin: setting the auxiliary layers asserts 'Model instance must inherit from "
     "EagleModelMixin to set auxiliary layers' after loading the weights"},
    // mimo.py: MiMoModel subclasses Qwen2Model but replaces its forward, which returns the
    // hidden states alone.
    {"MiMoForCausalLM",
     "runs MiMoModel, whose forward replaces Qwen2Model's and never collects them: the model "
     "runner gets no auxiliary states from its first forward, after loading the weights"},
};

// The classes whose set_aux_hidden_state_layers sets DeepSeek-V2's model (deepseek_v2.py at
// 28be48fa9: DeepseekV2ForCausalLM's override, inherited or handed on), whose forward appends
// hidden_states + residual before layer idx.
constexpr std::string_view kDeepseekV2AuxLoop[] = {
    "DeepseekForCausalLM",     "DeepseekV2ForCausalLM", "DeepseekV32ForCausalLM",
    "DeepseekV3ForCausalLM",   "GlmMoeDsaForCausalLM",  "KimiK25ForConditionalGeneration",
    "MistralLarge3ForCausalLM"};
static_assert(std::is_sorted(std::begin(kDeepseekV2AuxLoop), std::end(kDeepseekV2AuxLoop)));

// pixtral.py's set_aux_hidden_state_layers hands the layers to the language model its text
// config names, once that class has the EAGLE-3 interface.
bool HandsAuxLayersToLanguageModel(const ModelDescription& m) {
  return m.architecture == "PixtralForConditionalGeneration" &&
         !m.language_model_architecture.empty();
}

bool CollectsAuxStatesBeforeEachLayer(const ModelDescription& m) {
  return InSortedTable(kDeepseekV2AuxLoop, HandsAuxLayersToLanguageModel(m)
                                               ? m.language_model_architecture
                                               : m.architecture);
}

std::string AuxHiddenStatesUnavailable(const ModelDescription& m) {
  auto unavailable = [](std::string_view architecture) -> std::string {
    if (LacksEagle3Interface(architecture)) {
      return fmt::format(
          "the engine's {} class does not implement its EAGLE-3 interface: it raises 'Model "
          "does not support EAGLE3 interface' after loading the weights",
          architecture);
    }
    for (const auto& [name, reason] : kAuxStatesNotDelivered) {
      if (name == architecture) return fmt::format("the engine's {} {}", architecture, reason);
    }
    return "";
  };
  std::string why = unavailable(m.architecture);
  if (why.empty() && HandsAuxLayersToLanguageModel(m)) {
    const std::string& inner = m.language_model_architecture;
    if (LacksEagle3Interface(inner)) {
      why = fmt::format(
          "the engine's {} hands the auxiliary layers to its language model {}, which does not "
          "implement the EAGLE-3 interface: it raises 'EAGLE-3 speculative decoding requires the "
          "language model to support EAGLE-3, but {} does not.' after loading the weights",
          m.architecture, inner, inner);
    } else if (std::string inner_why = unavailable(inner); !inner_why.empty()) {
      why = fmt::format("the engine's {} hands the auxiliary layers to its language model, and {}",
                        m.architecture, inner_why);
    }
  }
  return why;
}

// What a draft's fc layer takes from the target, and which target layers the engine collects
// for it (the fork's llama_eagle3.py, deepseek_eagle3.py, qwen3_dflash.py and
// gpu_model_runner.py's _get_eagle3_aux_layers_from_config at 28be48fa9). The EAGLE-3 heads'
// fc takes three states; DFlash's one per entry of target_layer_ids, else layer_ids, else one
// per draft layer, read from eagle_config updated by dflash_config, which also holds its
// use_aux_hidden_state (no fc when false). Each state is target_hidden_size wide when the config
// has that key, else hidden_size. The runner collects the layers
// eagle_aux_hidden_state_layer_ids names, else dflash_config's target_layer_ids, else the
// target's defaults.
Status ReadDraftAuxInputs(const ConfigReader& root, const ArchitectureReader& row,
                          ModelDescription& m) {
  const bool eagle3 = row.method != nullptr && std::string_view(row.method) == "eagle3";
  const bool dflash = row.method != nullptr && std::string_view(row.method) == "dflash";
  if (!eagle3 && !dflash) return Status::Ok();
  // The object of eagle_config / dflash_config holding `key`, dflash_config's first.
  auto drafter_part = [&](const char* key) -> Result<std::optional<ConfigReader>> {
    for (const char* part : {"dflash_config", "eagle_config"}) {
      if (!root.Has(part)) continue;
      KVTOPO_ASSIGN_OR_RETURN(const ConfigReader r, root.Object(part));
      if (r.json().contains(key)) return std::optional<ConfigReader>(r);
    }
    return std::optional<ConfigReader>();
  };
  if (dflash) {
    KVTOPO_ASSIGN_OR_RETURN(const std::optional<ConfigReader> flag,
                            drafter_part("use_aux_hidden_state"));
    if (flag) {
      KVTOPO_ASSIGN_OR_RETURN(const bool uses, flag->BoolOr("use_aux_hidden_state", true));
      if (!uses) return Status::Ok();
    }
    m.draft_fc_states = m.num_hidden_layers;
    for (const char* key : {"target_layer_ids", "layer_ids"}) {
      KVTOPO_ASSIGN_OR_RETURN(const std::optional<ConfigReader> part, drafter_part(key));
      if (!part) continue;
      if (part->IsNull(key)) {
        return part->Invalid(key,
                             "is null: the engine counts the draft's fc inputs from it whenever "
                             "the key is present; list the target layer ids or leave the key out");
      }
      KVTOPO_ASSIGN_OR_RETURN(const std::vector<int64_t> ids, part->IntList(key));
      m.draft_fc_states = static_cast<int64_t>(ids.size());
      break;
    }
  } else {
    if (!m.draft_uses_aux_hidden_states) return Status::Ok();
    m.draft_fc_states = 3;
  }
  if (root.IsNull("target_hidden_size")) {
    return root.Invalid("target_hidden_size",
                        "is null: the engine sizes the draft's fc layer from it whenever the key "
                        "is present; state the target's hidden size or leave the key out");
  }
  if (root.Has("target_hidden_size")) {
    KVTOPO_ASSIGN_OR_RETURN(m.draft_fc_state_width,
                            root.IntIn("target_hidden_size", 1, kMaxModelDim));
    m.draft_fc_width_key = "target_hidden_size";
  } else if (m.hidden_size > 0) {
    m.draft_fc_state_width = m.hidden_size;
    m.draft_fc_width_key = "hidden_size";
  }
  if (root.Has("eagle_aux_hidden_state_layer_ids")) {
    KVTOPO_ASSIGN_OR_RETURN(m.draft_aux_layer_ids,
                            root.IntList("eagle_aux_hidden_state_layer_ids"));
    m.draft_aux_layer_ids_key = "eagle_aux_hidden_state_layer_ids";
  }
  if (m.draft_aux_layer_ids.empty() && root.Has("dflash_config")) {
    KVTOPO_ASSIGN_OR_RETURN(const ConfigReader d, root.Object("dflash_config"));
    if (d.Has("target_layer_ids")) {
      KVTOPO_ASSIGN_OR_RETURN(m.draft_aux_layer_ids, d.IntList("target_layer_ids"));
      m.draft_aux_layer_ids_key = "dflash_config.target_layer_ids";
    }
  }
  return Status::Ok();
}

namespace {

// The engine's is_mm_prefix_lm (ModelArchConfigConvertorBase.is_mm_prefix_lm,
// transformers_utils/model_arch_config_convertor.py at 28be48fa9): the top-level config's
// is_mm_prefix_lm as Python's truth value when it has one, else its model type among the prefix
// LMs the engine lists.
bool IsMmPrefixLm(const nlohmann::json& config) {
  if (const auto it = config.find("is_mm_prefix_lm"); it != config.end()) {
    return PythonTruth(*it);
  }
  constexpr std::string_view kPrefixLms[] = {"bagel",      "gemma3",    "molmo2",
                                             "moondream3", "paligemma", "umm"};
  const std::string type = StringOrEmpty(config, "model_type");
  return std::find(std::begin(kPrefixLms), std::end(kPrefixLms), type) != std::end(kPrefixLms);
}

// compressed-tensors' kv_cache_scheme (CompressedTensorsConfig.from_config and
// CompressedTensorsKVCacheMethod.validate_kv_cache_scheme, compressed_tensors.py at 28be48fa9):
// read when the config's quant_method is compressed-tensors and the key is set; the engine maps
// the scheme's keys as it builds the config (an object, else it fails), and each K/V attention
// layer validates it: num_bits 8 or type float, a strategy of tensor or attn_head, symmetric.
Result<std::optional<ModelDescription::KvCacheScheme>> ReadKvCacheScheme(
    const nlohmann::json& config, const std::string& file) {
  const auto q = config.find("quantization_config");
  if (q == config.end() || !q->is_object()) return std::optional<ModelDescription::KvCacheScheme>();
  const auto method = q->find("quant_method");
  if (method == q->end() || !method->is_string() ||
      AsciiLower(method->get<std::string>()) != "compressed-tensors") {
    return std::optional<ModelDescription::KvCacheScheme>();
  }
  const auto it = q->find("kv_cache_scheme");
  if (it == q->end() || it->is_null()) return std::optional<ModelDescription::KvCacheScheme>();
  const std::string field =
      fmt::format("{}: field 'quantization_config.kv_cache_scheme'", ConfigFileLabel(file));
  const nlohmann::json& scheme = *it;
  if (!scheme.is_object()) {
    return InvalidArgument(fmt::format(
        "{} is {}, not an object: the engine's compressed-tensors config maps its keys and fails",
        field, scheme.dump()));
  }
  ModelDescription::KvCacheScheme out{.field = field};
  auto value = [&](const char* key) {
    const auto v = scheme.find(key);
    return v == scheme.end() ? nlohmann::json() : *v;
  };
  auto shown = [](const nlohmann::json& v) {
    return v.is_null()     ? std::string("None")
           : v.is_string() ? fmt::format("'{}'", v.get<std::string>())
                           : v.dump();
  };
  const nlohmann::json type = value("type"), bits = value("num_bits");
  const bool bits_eight = bits.is_number() && bits.get<double>() == 8;
  constexpr std::string_view kStrategies[] = {"tensor", "channel",      "group",    "block",
                                              "token",  "tensor_group", "attn_head"};
  const nlohmann::json strategy = value("strategy");
  const std::string name = strategy.is_string() ? strategy.get<std::string>() : std::string();
  if (type != "float" && !bits_eight) {
    out.invalid = fmt::format(
        "its num_bits is {} and its type {}: the engine's compressed-tensors KV cache takes "
        "num_bits 8, type float ('Currently supported kv cache quantization is num_bits=8, "
        "type=float')",
        shown(bits), shown(type));
  } else if (!strategy.is_string() || std::find(std::begin(kStrategies), std::end(kStrategies),
                                                name) == std::end(kStrategies)) {
    out.invalid = fmt::format(
        "its strategy {} is not a compressed-tensors quantization strategy (tensor, channel, "
        "group, block, token, tensor_group, attn_head): the engine fails reading it",
        shown(strategy));
  } else if (name != "tensor" && name != "attn_head") {
    out.invalid = fmt::format(
        "its strategy is '{}': the engine's compressed-tensors KV cache takes tensor or "
        "attn_head ('Invalid strategy for compressed-tensors KV cache')",
        name);
  } else if (!PythonTruth(value("symmetric"))) {
    out.invalid = fmt::format(
        "its symmetric is {}: the engine's compressed-tensors KV cache takes symmetric scales "
        "only ('Only support symmetric scaling factor')",
        shown(value("symmetric")));
  }
  out.per_head = name == "attn_head";
  return std::optional<ModelDescription::KvCacheScheme>(std::move(out));
}

// The engine's uses_mrope (transformers_utils/config.py at 28be48fa9): "mrope_section" is a key
// of the config's rope_parameters, of its text config's, or of its thinker's text config's; a
// rope_scaling becomes rope_parameters (patch_rope_parameters).
bool UsesMrope(const nlohmann::json& config) {
  auto has_section = [](const nlohmann::json& c) {
    if (!c.is_object()) return false;
    for (const char* key : {"rope_parameters", "rope_scaling"}) {
      const auto it = c.find(key);
      if (it != c.end() && it->is_object() && it->contains("mrope_section")) return true;
    }
    return false;
  };
  const nlohmann::json none;
  const auto part = [&](const nlohmann::json& c, const char* key) -> const nlohmann::json& {
    return c.is_object() && c.contains(key) ? c[key] : none;
  };
  return has_section(config) || has_section(part(config, "text_config")) ||
         has_section(part(part(config, "thinker_config"), "text_config"));
}

// Whether a parallel-drafting draft names its mask token where the engine's proposer looks
// (_init_parallel_drafting_params in llm_base_proposer.py at 28be48fa9): a dflash_config
// holding mask_token_id, a pard_token or a ptd_token_id attribute.
bool NamesParallelDraftingToken(const nlohmann::json& config) {
  if (!config.is_object()) return false;
  const auto dflash = config.find("dflash_config");
  return (dflash != config.end() && dflash->is_object() && dflash->contains("mask_token_id")) ||
         config.contains("pard_token") || config.contains("ptd_token_id");
}

// ---- The Transformers modeling backend ----------------------------------------------------------
// The engine builds some models with Transformers' own class (the fork's
// models/transformers/base.py at 28be48fa9): SmolLM3ForCausalLM and Emu3ForConditionalGeneration
// (the registry's _TRANSFORMERS_SUPPORTED_MODELS), the Transformers* architectures themselves,
// any model under --model-impl transformers, and under auto a config none of whose architectures
// the registry holds, when custom code its auto_map names has the class. create_attention_instances
// gives the class one vLLM attention layer per text-config layer (num_hidden_layers), all of one
// shape: ModelConfig's K/V heads and head size (model_arch_config_convertor.py: the first of
// n_head_kv, num_kv_heads, num_key_value_heads, multi_query_group_num and num_attention_groups the
// text config has, else num_attention_heads; head_dim, else hidden_size_per_head, else hidden_size
// // num_attention_heads). Layer i slides with the config's sliding_window when the config's
// layer_types[i] is sliding_attention; any other layer takes the cache-wide window: the text
// config's sliding_window when its layer_types are of one kind (arg_utils, is_interleaved), else
// none.

constexpr std::array<std::string_view, 5> kBackendKvHeadKeys = {
    "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
    "num_attention_groups"};

// ModelConfig's is_deepseek_mla (model_arch_config_convertor.py at 28be48fa9): a text config of
// these model types with a kv_lora_rank caches MLA latents. Sorted.
constexpr std::string_view kMlaModelTypes[] = {
    "AXK1",         "bailing_hybrid", "deepseek_mtp",  "deepseek_v2",       "deepseek_v3",
    "deepseek_v32", "deepseek_v4",    "glm4_moe_lite", "glm4_moe_lite_mtp", "glm_moe_dsa",
    "kimi_k2",      "kimi_linear",    "longcat_flash", "pangu_ultra_moe",   "pangu_ultra_moe_mtp"};
static_assert(std::is_sorted(std::begin(kMlaModelTypes), std::end(kMlaModelTypes)));

// The text config's key Transformers' get_text_config returns: the one of text_encoder, decoder,
// generator and text_config the config holds (not null), or "" for the config itself. Two are
// Transformers' error.
Result<std::string> BackendTextConfigKey(const ConfigReader& root) {
  std::vector<std::string> held;
  for (const char* key : {"text_encoder", "decoder", "generator", "text_config"}) {
    if (root.Has(key)) held.emplace_back(key);
  }
  if (held.size() > 1) {
    return root.Invalid(held[1], fmt::format("is stated beside {}: Transformers' get_text_config "
                                             "refuses a config with two text configs ('Multiple "
                                             "valid text configs were found in the model config')",
                                             held[0]));
  }
  return held.empty() ? std::string() : held[0];
}

// Whether `kinds` (a layer_types list) names one kind only: is_interleaved is false for it.
bool OneKind(const std::vector<std::string>& kinds) {
  return std::all_of(kinds.begin(), kinds.end(),
                     [&](const std::string& k) { return k == kinds.front(); });
}

// The layers of a text config `t` as the backend builds them (above), the windows from the
// text config's own layer_types and sliding_window (`root_types`: the top-level config's
// layer_types and sliding_window instead, for a nested text config that leaves them to it).
// `defaulted` collects the engine's rules applied where the config leaves a value to its class.
Status ReadBackendLayers(const ConfigReader& t, const ConfigReader* root_types,
                         std::vector<std::string>& defaulted, ModelDescription& m) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string type, t.StringOr("model_type", ""));
  // DeepSeek-V4 (compress_ratios) is MLA with a head_dim, the others with a kv_lora_rank.
  const char* mla_key = t.json().contains("compress_ratios") ? "head_dim" : "kv_lora_rank";
  if (InSortedTable(kMlaModelTypes, type) && t.Has(mla_key)) {
    return t.Invalid(mla_key,
                     fmt::format("is set under model type {}: the engine caches such a model as "
                                 "MLA latents (ModelConfig.is_deepseek_mla), which the "
                                 "Transformers backend's attention does not compute; kvtopo does "
                                 "not plan it on that backend",
                                 type));
  }
  KVTOPO_RETURN_IF_ERROR(ReadCommon(t, m, kAnyLengthField));
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(t));
  const auto kv_key = std::find_if(kBackendKvHeadKeys.begin(), kBackendKvHeadKeys.end(),
                                   [&](std::string_view k) { return t.json().contains(k); });
  if (kv_key == kBackendKvHeadKeys.end()) {
    m.num_kv_heads_total = m.num_attention_heads;
    defaulted.emplace_back(fmt::format(
        "K/V heads = num_attention_heads {} (no K/V head count stated)", m.num_attention_heads));
  } else if (t.IsNull(*kv_key)) {
    return t.Invalid(*kv_key,
                     "is null: the engine takes the K/V heads from it and does not "
                     "build with none; state the count");
  } else {
    KVTOPO_ASSIGN_OR_RETURN(m.num_kv_heads_total, Positive(t, *kv_key));
  }
  KVTOPO_RETURN_IF_ERROR(CheckKvHeadsDivide(t, m));
  int64_t head = 0;
  if (t.Has("head_dim")) {
    KVTOPO_ASSIGN_OR_RETURN(head, Positive(t, "head_dim"));
  } else if (t.Has("hidden_size_per_head")) {
    KVTOPO_ASSIGN_OR_RETURN(head, Positive(t, "hidden_size_per_head"));
  } else {
    KVTOPO_ASSIGN_OR_RETURN(head, ReadHeadSize(t, m, /*use_head_dim=*/false));
    defaulted.emplace_back(fmt::format(
        "head size = hidden_size / num_attention_heads = {} (no head_dim stated)", head));
  }
  const ConfigReader& types = root_types != nullptr ? *root_types : t;
  std::vector<bool> sliding(static_cast<size_t>(n), false);
  if (types.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> kinds, types.StringList("layer_types"));
    if (static_cast<int64_t>(kinds.size()) < n) {
      return types.Invalid("layer_types",
                           fmt::format("has {} entries for {} layers: the engine indexes it by "
                                       "layer and fails past its end",
                                       kinds.size(), n));
    }
    for (int64_t i = 0; i < n; ++i) sliding[i] = kinds[i] == "sliding_attention";
  }
  int64_t per_layer = 0;
  if (std::find(sliding.begin(), sliding.end(), true) != sliding.end()) {
    if (!types.json().contains("sliding_window")) {
      return types.Invalid("layer_types",
                           "names sliding_attention layers and the config has no sliding_window, "
                           "which the engine reads for them (an AttributeError); state it");
    }
    KVTOPO_ASSIGN_OR_RETURN(per_layer, types.IntInOr("sliding_window", 0, 0, kMaxModelLen));
  }
  // is_interleaved reads the text config's layer_types: more than one kind, no cache-wide window.
  KVTOPO_ASSIGN_OR_RETURN(m.text_sliding_window, t.IntInOr("sliding_window", 0, 0, kMaxModelLen));
  int64_t cache_wide = m.text_sliding_window;
  if (t.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> kinds, t.StringList("layer_types"));
    const bool one_kind = OneKind(kinds);
    if (!one_kind) cache_wide = 0;
    if (one_kind && !kinds.empty() && kinds.front() == "full_attention" && cache_wide > 0) {
      WarnEveryLayerSlides(t, m);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t window = sliding[i] && per_layer > 0 ? per_layer : cache_wide;
    m.layers.push_back(KvAttentionLayer(i, m, head, window));
  }
  // create_attention_instances passes getattr(text_config, "attn_logit_softcapping", None): the
  // class's default where it has one (Gemma2Config's 50.0; kvtopo takes every other class's for
  // None).
  const bool gemma2 = StringOrEmpty(t.json(), "model_type") == "gemma2";
  return ReadLogitsSoftCap(t, "Gemma2Config", gemma2 ? "50.0" : nullptr, m);
}

// SmolLM3 (SmolLM3ForCausalLM, which the engine builds with the Transformers backend over
// Transformers' SmolLM3Config): 36 layers of 16 heads over 2048, 4 K/V heads (null: one per
// head), 32768 positions where the config omits them. Without layer_types (or with null) the class
// derives them: a layer slides when use_sliding_window is true, sliding_window is set and
// no_rope_layers marks it a NoPE layer (0); no_rope_layers defaults to a NoPE layer at every
// no_rope_layer_interval-th (4) layer. Stated layer_types must have one entry per layer
// (layer_type_validation).
Status ReadSmolLm3(const ConfigReader& r, ModelDescription& m) {
  nlohmann::json filled = r.json();
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"hidden_size", 2048},
                                   {"num_hidden_layers", 36},
                                   {"num_attention_heads", 16},
                                   {"max_position_embeddings", 32768}}) {
    if (!filled.contains(key)) filled[key] = value;
  }
  if (!filled.contains("sliding_window")) filled["sliding_window"] = nullptr;
  const ConfigReader f = r.Over(filled);
  KVTOPO_ASSIGN_OR_RETURN(const int64_t n, NumLayers(f));
  if (!filled.contains("num_key_value_heads")) {
    filled["num_key_value_heads"] = 4;
  } else if (filled["num_key_value_heads"].is_null()) {
    filled["num_key_value_heads"] = filled["num_attention_heads"];
  }
  if (f.Has("layer_types")) {
    KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> kinds,
                            PerLayerNames(f, "layer_types", n));
  } else {
    std::vector<int64_t> no_rope;
    if (f.Has("no_rope_layers")) {
      KVTOPO_ASSIGN_OR_RETURN(no_rope, f.IntList("no_rope_layers"));
      if (static_cast<int64_t>(no_rope.size()) < n) {
        return f.Invalid("no_rope_layers",
                         fmt::format("has {} entries for {} layers: SmolLM3Config indexes it by "
                                     "layer and fails past its end",
                                     no_rope.size(), n));
      }
    } else {
      KVTOPO_ASSIGN_OR_RETURN(const int64_t interval,
                              f.IntInOr("no_rope_layer_interval", 4, 1, kMaxLayers));
      for (int64_t i = 0; i < n; ++i) no_rope.push_back((i + 1) % interval != 0 ? 1 : 0);
    }
    KVTOPO_ASSIGN_OR_RETURN(const bool use, f.BoolOr("use_sliding_window", false));
    const bool window = f.Has("sliding_window");
    nlohmann::json kinds = nlohmann::json::array();
    for (int64_t i = 0; i < n; ++i) {
      kinds.push_back(use && window && no_rope[i] == 0 ? "sliding_attention" : "full_attention");
    }
    filled["layer_types"] = std::move(kinds);
  }
  std::vector<std::string> defaulted;
  KVTOPO_RETURN_IF_ERROR(ReadBackendLayers(r.Over(filled), nullptr, defaulted, m));
  RecordTextShape(filled, m);
  m.transformers_backend = "TransformersForCausalLM";
  return Status::Ok();
}

// Emu3 (Emu3ForConditionalGeneration, which the engine builds with the Transformers backend's
// multimodal class over Transformers' Emu3Config): the text model is text_config, an
// Emu3TextConfig whose defaults fill what it omits (32 layers of 32 heads over 4096, 8 K/V heads,
// 9216 positions; a null num_key_value_heads stays null, which the engine does not build).
Status ReadEmu3(const ConfigReader& root, ModelDescription& m) {
  nlohmann::json text = nlohmann::json::object();
  if (root.Has("text_config")) {
    KVTOPO_ASSIGN_OR_RETURN(const ConfigReader stated, root.Object("text_config"));
    text = stated.json();
  }
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"hidden_size", 4096},
                                   {"num_hidden_layers", 32},
                                   {"num_attention_heads", 32},
                                   {"num_key_value_heads", 8},
                                   {"max_position_embeddings", 9216}}) {
    if (!text.contains(key)) text[key] = value;
  }
  nlohmann::json filled = root.json();
  filled["text_config"] = text;
  const ConfigReader outer = root.Over(filled);
  KVTOPO_ASSIGN_OR_RETURN(const ConfigReader inner, outer.Object("text_config"));
  nlohmann::json storage;
  std::vector<std::string> defaulted;
  KVTOPO_RETURN_IF_ERROR(
      ReadBackendLayers(WithOuterDtype(inner, outer, storage), &outer, defaulted, m));
  RecordTextShape(text, m);
  m.transformers_backend = "TransformersMultiModalForCausalLM";
  return Status::Ok();
}

// The registry's answers for architectures it no longer serves in-tree (registry.py at
// 28be48fa9: _PREVIOUSLY_SUPPORTED_MODELS, the last version that did; _OOT_SUPPORTED_MODELS, the
// plugin that does).
constexpr std::pair<std::string_view, std::string_view> kPreviouslySupported[] = {
    {"DonutForConditionalGeneration", "0.10.2"},
    {"MllamaForConditionalGeneration", "0.10.2"},
    {"MotifForCausalLM", "0.10.2"},
    {"Phi3SmallForCausalLM", "0.9.2"},
    {"Phi4FlashForCausalLM", "0.10.2"},
    {"Phi4MultimodalForCausalLM", "0.12.0"}};
constexpr std::pair<std::string_view, std::string_view> kPluginSupported[] = {
    {"BartForConditionalGeneration", "https://github.com/vllm-project/bart-plugin"},
    {"BartModel", "https://github.com/vllm-project/bart-plugin"},
    {"Florence2ForConditionalGeneration", "https://github.com/vllm-project/bart-plugin"},
    {"MBartForConditionalGeneration", "https://github.com/vllm-project/bart-plugin"}};

// The engine's default runner (ModelConfig._get_default_runner_type at 28be48fa9): a registered
// architecture's class decides, else the name's suffix (_SUFFIX_TO_DEFAULTS, in its order: the
// generation suffixes first, then the pooling ones, "Model" last). kPoolingRegistered are the
// registry's pooling classes (_EMBEDDING_MODELS, _LATE_INTERACTION_MODELS, _REWARD_MODELS,
// _TOKEN_CLASSIFICATION_MODELS, _SEQUENCE_CLASSIFICATION_MODELS) that kvtopo does not read (its
// pooling entries built as a generation class, LlamaModel and the like, are readers).
constexpr std::string_view kGenerationSuffixes[] = {"ForCausalLM", "ForConditionalGeneration",
                                                    "ChatModel", "LMHeadModel"};
constexpr std::pair<std::string_view, std::string_view> kPoolingSuffixes[] = {
    {"ForTextEncoding", "embed"},
    {"EmbeddingModel", "embed"},
    {"ForSequenceClassification", "classify"},
    {"ForTokenClassification", "classify"},
    {"ForAudioClassification", "classify"},
    {"ForImageClassification", "classify"},
    {"ForVideoClassification", "classify"},
    {"ClassificationModel", "classify"},
    {"ForRewardModeling", "embed"},
    {"RewardModel", "embed"},
    {"Model", "embed"}};
constexpr std::string_view kPoolingRegistered[] = {
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertModel",
    "BertSpladeSparseEmbeddingModel",
    "BgeM3EmbeddingModel",
    "CLIPModel",
    "ColBERTJinaRobertaModel",
    "ColBERTLfm2Model",
    "ColBERTModernBertModel",
    "ColModernVBertForRetrieval",
    "ColPaliForRetrieval",
    "ColQwen3",
    "ColQwen3_5",
    "ErnieForSequenceClassification",
    "ErnieForTokenClassification",
    "ErnieModel",
    "GPT2ForSequenceClassification",
    "Gemma3TextModel",
    "GteModel",
    "GteNewForSequenceClassification",
    "GteNewModel",
    "HF_ColBERT",
    "InternLM2ForRewardModel",
    "JambaForSequenceClassification",
    "JinaEmbeddingsV5Model",
    "JinaForRanking",
    "JinaVLForRanking",
    "LlamaBidirectionalForSequenceClassification",
    "LlamaBidirectionalModel",
    "LlamaNemotronVLForSequenceClassification",
    "LlamaNemotronVLModel",
    "ModernBertForSequenceClassification",
    "ModernBertForTokenClassification",
    "ModernBertModel",
    "NomicBertModel",
    "OpsColQwen3Model",
    "PrithviGeoSpatialMAE",
    "Qwen2ForProcessRewardModel",
    "Qwen2ForRewardModel",
    "Qwen3ASRForcedAlignerForTokenClassification",
    "Qwen3VLNemotronEmbedModel",
    "RobertaForMaskedLM",
    "RobertaForSequenceClassification",
    "RobertaModel",
    "SiglipModel",
    "Terratorch",
    "VoyageQwen3BidirectionalEmbedModel",
    "XLMRobertaForSequenceClassification",
    "XLMRobertaModel",
};

// Why the engine would serve the first of `archs` that its runner rules decide as a pooling
// model (or, under --runner generate, refuse a pooling class), or "" when it would not.
std::string PoolingRunner(const std::vector<std::string>& archs, const std::string& runner) {
  for (const std::string& arch : archs) {
    if (std::find(std::begin(kPoolingRegistered), std::end(kPoolingRegistered), arch) !=
        std::end(kPoolingRegistered)) {
      if (runner == "generate") {
        return fmt::format(
            "architecture '{}' is one of the engine's pooling models (its registry's embedding, "
            "late-interaction, reward and classification classes), which do not generate: "
            "with --runner generate the engine refuses it ('This model does not support "
            "`--runner generate`.')",
            arch);
      }
      return fmt::format(
          "architecture '{}' is one of the engine's pooling models (its registry's embedding, "
          "late-interaction, reward and classification classes): the engine serves it with the "
          "pooling runner, returning embeddings or scores rather than generating tokens; kvtopo "
          "plans generation launches",
          arch);
    }
    if (runner == "generate") continue;
    if (std::any_of(std::begin(kGenerationSuffixes), std::end(kGenerationSuffixes),
                    [&](std::string_view s) { return arch.ends_with(s); })) {
      return "";
    }
    for (const auto& [suffix, convert] : kPoolingSuffixes) {
      if (!arch.ends_with(suffix)) continue;
      return fmt::format(
          "architecture '{}' ends in '{}', for which the engine's default runner is pooling "
          "(convert {}): it serves embeddings or scores rather than generating tokens; kvtopo "
          "plans generation launches",
          arch, suffix, convert);
    }
  }
  return "";
}

// The Transformers backend's classes (registry.py's _TRANSFORMERS_BACKEND_MODELS): the
// generative ones kvtopo plans, and the pooling ones, which keep no cache a launch plans.
constexpr std::string_view kBackendCausalClasses[] = {
    "TransformersForCausalLM", "TransformersMoEForCausalLM", "TransformersMultiModalForCausalLM",
    "TransformersMultiModalMoEForCausalLM"};
constexpr std::string_view kBackendPoolingClasses[] = {
    "TransformersEmbeddingModel",           "TransformersForSequenceClassification",
    "TransformersMoEEmbeddingModel",        "TransformersMoEForSequenceClassification",
    "TransformersMultiModalEmbeddingModel", "TransformersMultiModalForSequenceClassification"};

bool IsBackendClass(std::string_view architecture) {
  return std::find(std::begin(kBackendCausalClasses), std::end(kBackendCausalClasses),
                   architecture) != std::end(kBackendCausalClasses) ||
         std::find(std::begin(kBackendPoolingClasses), std::end(kBackendPoolingClasses),
                   architecture) != std::end(kBackendPoolingClasses);
}

// The auto_map entry naming the model class of the config's custom code (a key starting with
// AutoModel, as the registry's _try_resolve_transformers looks for it): "key: value", or "".
std::string AutoMapModelEntry(const nlohmann::json& config) {
  const auto map = config.find("auto_map");
  if (map == config.end() || !map->is_object()) return "";
  for (const auto& [key, value] : map->items()) {
    if (key.starts_with("AutoModel")) {
      return fmt::format("{}: {}", key,
                         value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  return "";
}

// The engine's error for architectures its registry does not hold (_raise_for_unsupported),
// with what kvtopo offers instead.
// The architecture kvtopo plans that `name` most likely meant: one equal but for case, else the
// first in the table one edit away (a character changed, added, dropped, or two adjacent ones
// swapped); "" when none is.
std::string NearestArchitecture(const std::string& name) {
  const std::string a = AsciiLower(name);
  std::string best;
  std::vector<std::vector<size_t>> d;
  for (const std::string& candidate : SupportedArchitectures()) {
    const std::string b = AsciiLower(candidate);
    if (a == b) return candidate;
    if (!best.empty() || (a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > 1) {
      continue;
    }
    // Optimal string alignment distance.
    d.assign(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min(
            {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    if (d[a.size()][b.size()] == 1) best = candidate;
  }
  return best;
}

Status UnsupportedArchitectures(const std::string& file, const std::vector<std::string>& archs,
                                const ModelClassOptions& options) {
  for (const std::string& arch : archs) {
    for (const auto& [name, version] : kPreviouslySupported) {
      if (arch == name) {
        return InvalidArgument(fmt::format(
            "{}: architecture '{}' was supported by the engine until v{} and is "
            "not anymore ('Model architecture {} was supported in vLLM until v{}, and is not "
            "supported anymore'); kvtopo plans the engine of today",
            ConfigFileLabel(file), arch, version, arch, version));
      }
    }
    for (const auto& [name, plugin] : kPluginSupported) {
      if (arch == name) {
        return InvalidArgument(
            fmt::format("{}: architecture '{}' is served only by the engine's plugin at {} "
                        "('not supported in-tree anymore'); kvtopo does not plan plugins' models",
                        ConfigFileLabel(file), arch, plugin));
      }
    }
  }
  if (const std::string pooling = PoolingRunner(archs, options.runner); !pooling.empty()) {
    return InvalidArgument(fmt::format("{}: {}", ConfigFileLabel(file), pooling));
  }
  const std::string fallback =
      options.model_impl == "vllm"
          ? "--model-impl vllm leaves the engine no Transformers fallback"
          : "if Transformers itself has the class, the engine may build it with its Transformers "
            "backend: pass --model-impl transformers to plan that";
  const std::string near = NearestArchitecture(archs.front());
  return InvalidArgument(
      fmt::format("{}: architecture{} '{}' {} not supported ({}); {}kvtopo plans {} "
                  "architectures, which `kvtopo profiles --architectures` lists",
                  ConfigFileLabel(file), archs.size() > 1 ? "s" : "", fmt::join(archs, "', '"),
                  archs.size() > 1 ? "are" : "is", fallback,
                  near.empty() ? "" : fmt::format("did you mean '{}'? ", near),
                  SupportedArchitectures().size()));
}

// What keeps a model kvtopo reads natively from the Transformers backend's one attention shape:
// a layer that is not K/V attention (full or sliding), or of another shape, or a count of cache
// layers other than the text config's layers; "" when none does.
std::string NotOneAttentionShape(const ModelDescription& native) {
  std::vector<const RawLayer*> trunk;
  for (const RawLayer& l : native.layers) {
    if (!l.mtp) trunk.push_back(&l);
  }
  if (trunk.empty()) return "it has no attention layers";
  const RawLayer& first = *trunk.front();
  for (const RawLayer* l : trunk) {
    if ((l->type != LayerType::kAttention && l->type != LayerType::kSlidingWindow) ||
        l->cross_attention || l->attention_chunk_size > 0 || l->page_tail_bytes_per_token > 0) {
      return fmt::format("its layer {} is not plain K/V attention", l->name);
    }
    if (l->num_kv_heads_total != first.num_kv_heads_total || l->head_size != first.head_size ||
        l->head_size_v != l->head_size) {
      return fmt::format("its layer {} has {} K/V heads of {}/{} where {} has {} of {}", l->name,
                         l->num_kv_heads_total, l->head_size, l->head_size_v, first.name,
                         first.num_kv_heads_total, first.head_size);
    }
  }
  if (native.num_hidden_layers > 0 &&
      static_cast<int64_t>(trunk.size()) != native.num_hidden_layers) {
    return fmt::format(
        "it caches {} layers for num_hidden_layers {} (layers share or skip a cache)", trunk.size(),
        native.num_hidden_layers);
  }
  return "";
}

// `config` as the engine's Transformers backend builds it (above): under --model-impl
// transformers (`forced`), for a Transformers* architecture, or as the fallback for a config
// whose auto_map names custom code. A model kvtopo reads natively keeps its reader's values (the
// config class's defaults) when its layers are of one attention shape, with the windows of the
// config's stated layer_types; any other config is read by the engine's generic rules, with a
// warning naming what kvtopo cannot check.
Result<ModelDescription> DescribeOnTransformersBackend(const nlohmann::json& config,
                                                       const ConfigReader& root,
                                                       const std::vector<std::string>& archs,
                                                       const ModelClassOptions& options,
                                                       bool forced, ModelDescription m) {
  const std::string& arch = archs.front();
  if (std::find(std::begin(kBackendPoolingClasses), std::end(kBackendPoolingClasses), arch) !=
      std::end(kBackendPoolingClasses)) {
    return InvalidArgument(
        fmt::format("{}: {} is the Transformers backend's pooling "
                    "class (embeddings or classification), which kvtopo does "
                    "not plan",
                    ConfigFileLabel(root.file()), arch));
  }
  const std::string custom = AutoMapModelEntry(config);
  const bool backend_named = IsBackendClass(arch);
  if (!backend_named && !custom.empty() && !options.trust_remote_code) {
    return InvalidArgument(
        fmt::format("{}: {}'s class is custom code (auto_map {}), which the engine loads for "
                    "its Transformers backend only with --trust-remote-code",
                    ConfigFileLabel(root.file()), arch, custom));
  }
  if (root.Has("quantization_config")) {
    KVTOPO_ASSIGN_OR_RETURN(const ConfigReader q, root.Object("quantization_config"));
    KVTOPO_ASSIGN_OR_RETURN(const std::string method, q.StringOr("quant_method", ""));
    if (method == "mxfp4" || method == "gpt_oss_mxfp4") {
      return q.Invalid("quant_method",
                       fmt::format("is {}: the engine's Transformers backend refuses it ('does not "
                                   "support MXFP4 quantization yet')",
                                   method));
    }
  }
  KVTOPO_ASSIGN_OR_RETURN(const std::string text_key, BackendTextConfigKey(root));
  const auto& readers = Readers();
  const bool native = !backend_named &&
                      std::any_of(readers.begin(), readers.end(), [&](const ArchitectureReader& r) {
                        return r.architecture == arch && !r.draft;
                      });
  std::vector<std::string> checks;
  if (native) {
    ModelClassOptions vllm = options;
    vllm.model_impl = "vllm";
    vllm.builds_engine_class = false;
    KVTOPO_ASSIGN_OR_RETURN(ModelDescription read, DescribeModel(config, root.file(), vllm));
    if (const std::string why = NotOneAttentionShape(read); !why.empty()) {
      return InvalidArgument(fmt::format(
          "{}: --model-impl transformers: the Transformers backend gives every "
          "layer one attention shape, and {} ({}); kvtopo does not plan it on that backend",
          ConfigFileLabel(root.file()), arch, why));
    }
    const bool had_mtp = std::any_of(read.layers.begin(), read.layers.end(),
                                     [](const RawLayer& l) { return l.mtp; });
    std::erase_if(read.layers, [](const RawLayer& l) { return l.mtp; });
    if (had_mtp) {
      read.mtp_unavailable =
          "the Transformers backend builds the model without its MTP layers, and kvtopo plans an "
          "MTP draft from the target's own (--model-impl transformers)";
    }
    // The backend's windows: the stated layer_types' sliding layers take the config's window;
    // without layer_types the reader's (the config class's derived kinds, or the cache-wide one).
    if (root.Has("layer_types") && text_key.empty()) {
      // The reader's notes on how its class reads the windows do not hold for the backend's.
      std::erase_if(read.config_warnings,
                    [](const auto& w) { return w.first == "config-window-unused"; });
      KVTOPO_ASSIGN_OR_RETURN(const std::vector<std::string> kinds, root.StringList("layer_types"));
      if (kinds.size() < read.layers.size()) {
        return root.Invalid("layer_types",
                            fmt::format("has {} entries for {} layers: the engine indexes it by "
                                        "layer and fails past its end",
                                        kinds.size(), read.layers.size()));
      }
      const bool one_kind = OneKind(kinds);
      for (size_t i = 0; i < read.layers.size(); ++i) {
        const bool slides = kinds[i] == "sliding_attention";
        const int64_t window = slides || one_kind ? read.text_sliding_window : 0;
        RawLayer& l = read.layers[i];
        l.type = window > 0 ? LayerType::kSlidingWindow : LayerType::kAttention;
        l.sliding_window = window;
      }
    }
    m = std::move(read);
  } else {
    std::vector<std::string> defaulted;
    if (text_key.empty()) {
      KVTOPO_RETURN_IF_ERROR(ReadBackendLayers(root, nullptr, defaulted, m));
      KVTOPO_RETURN_IF_ERROR(CheckEngineExpertCount(root, m.model_type));
      RecordTextShape(config, m);
    } else {
      KVTOPO_ASSIGN_OR_RETURN(const ConfigReader text, root.Object(text_key));
      nlohmann::json storage;
      KVTOPO_RETURN_IF_ERROR(
          ReadBackendLayers(WithOuterDtype(text, root, storage), &root, defaulted, m));
      KVTOPO_RETURN_IF_ERROR(CheckEngineExpertCount(text, m.model_type));
      RecordTextShape(text.json(), m);
    }
    if (!defaulted.empty()) {
      checks.push_back(
          fmt::format("the config class's own defaults, where the config leaves "
                      "values to them (kvtopo took the engine's fallbacks: {})",
                      fmt::join(defaulted, "; ")));
    }
    if (!backend_named) {
      checks.insert(checks.begin(),
                    custom.empty()
                        ? fmt::format("that Transformers has a class {} (else the engine raises "
                                      "'Cannot find model module')",
                                      arch)
                        : fmt::format("the custom code of auto_map {}", custom));
    }
  }
  std::string cls = arch;
  if (!backend_named) {
    // ModelConfig._get_transformers_backend_cls: MultiModal for a nested text config, MoE for a
    // text config with experts (ModelConfig.is_moe).
    cls = text_key.empty() ? "Transformers" : "TransformersMultiModal";
    if (EngineExpertCount(text_key.empty() ? config : config[text_key], m.model_type) > 0) {
      cls += "MoE";
    }
    cls += "ForCausalLM";
  } else {
    checks.insert(checks.begin(),
                  fmt::format("that Transformers (or the config's custom code) builds a model for "
                              "its model type '{}'",
                              m.model_type));
  }
  if (!backend_named) {
    checks.push_back(
        "that the class supports the backend (else the engine raises 'The "
        "Transformers implementation of ... is not compatible with vLLM')");
    checks.push_back(
        "that it declares the tensor- or pipeline-parallel plan a launch with "
        "-tp or -pp above 1 needs");
  }
  m.architecture = cls;
  m.transformers_backend = cls;
  if (!checks.empty()) {
    m.config_warnings.emplace_back(
        "transformers-backend",
        fmt::format("{} ({}) is built by the engine's Transformers backend as {}{}: "
                    "kvtopo plans the cache that backend gives it, and does not check {}",
                    ConfigFileLabel(root.file()), archs.front(), cls,
                    forced ? " (--model-impl transformers)" : "", fmt::join(checks, ", nor ")));
  }
  return m;
}

// The engine's decoder layers that read the config's is_causal (getattr(config, "is_causal",
// True): false, or any falsy value, builds AttentionType.ENCODER_ONLY layers, which keep no KV
// cache): LlamaDecoderLayer, Qwen2DecoderLayer, Qwen3DecoderLayer, Gemma3Attention and the
// Apertus, Ouro, IQuest Loop-Coder, Seed-OSS and openPangu decoder layers (llama.py, qwen2.py,
// qwen3.py, gemma3.py, apertus.py, ouro.py, iquest_loopcoder.py, seed_oss.py, openpangu.py at
// 28be48fa9), and the classes built on them. Each row names a class and where, from the config
// it is given, its layers' config comes: the config itself, text_config (when present, else
// nothing), text_config when present else the config (get_text_config()), llm_config,
// thinker_config.text_config, or text_config's field over the config's (PaddleOCR-VL merges
// text_config into the root). Wrappers that build the language model their text config names
// (TextModel::kLanguageModel, kNamedOrTyped) ask the row of that class.
enum class CausalFlagAt {
  kConfig,
  kTextConfig,
  kTextConfigOrConfig,
  kLlmConfig,
  kThinkerText,
  kTextOverConfig
};
struct CausalFlagReader {
  std::string_view architecture;
  CausalFlagAt at = CausalFlagAt::kConfig;
  // When the class reads it only on some configs (MiniCPM-V 2.0's MiniCPM does not; openPangu's
  // MLA layers do not).
  bool (*reads)(const ConfigReader&) = nullptr;
};
bool MiniCpmVReadsCausal(const ConfigReader& r) {
  Result<std::vector<int64_t>> v = MiniCpmVersion(r, /*omni=*/false);
  return v.ok() && *v != std::vector<int64_t>{2, 0};
}
bool PanguReadsCausal(const ConfigReader& r) { return !HasPanguMlaFields(r); }
constexpr CausalFlagAt kText = CausalFlagAt::kTextConfig;
constexpr CausalFlagAt kTextOrRoot = CausalFlagAt::kTextConfigOrConfig;
constexpr CausalFlagReader kCausalFlagReaders[] = {
    {"AquilaForCausalLM"},
    {"AquilaModel"},
    {"ApertusForCausalLM"},
    {"AriaForConditionalGeneration", kText},
    {"AudioFlamingo3ForConditionalGeneration", kText},
    {"BagelForConditionalGeneration", CausalFlagAt::kLlmConfig},
    {"Cheers", kText},
    {"CheersForConditionalGeneration", kText},
    {"CwmForCausalLM"},
    {"DotsOCRForCausalLM"},
    {"Eagle3LlamaForCausalLM"},
    {"Eagle3MiniMaxM2ForCausalLM"},
    {"Eagle3Qwen2_5vlForCausalLM"},
    {"Eagle3Qwen3vlForCausalLM"},
    {"EagleLlamaForCausalLM"},
    {"EagleMistralForCausalLM"},
    {"Ernie4_5ForCausalLM"},
    {"Fairseq2LlamaForCausalLM"},
    {"FireRedASR2ForConditionalGeneration"},
    {"FunASRForConditionalGeneration"},
    {"FunAudioChatForConditionalGeneration", kText},
    {"Gemma3ForCausalLM"},
    {"Gemma3ForConditionalGeneration", kText},
    {"GlmAsrForConditionalGeneration", kText},
    {"GlmForCausalLM"},
    {"GritLM"},  // under --runner generate (in pooling it forces the field false)
    {"IQuestCoderForCausalLM"},
    {"IQuestLoopCoderForCausalLM"},
    {"Idefics3ForConditionalGeneration", kText},
    {"InternLM3ForCausalLM"},
    {"InternLMForCausalLM"},
    {"IsaacForConditionalGeneration", kTextOrRoot},
    {"KananaVForConditionalGeneration", kText},
    {"KeyeForConditionalGeneration", kTextOrRoot},
    {"KeyeVL1_5ForConditionalGeneration", kTextOrRoot},
    {"LLaMAForCausalLM"},
    {"LlamaForCausalLM"},
    {"LlamaForCausalLMEagle3"},
    {"LlamaModel"},
    {"LlavaForConditionalGeneration", kText},  // its text models: Llama and Mistral
    {"LlavaNextForConditionalGeneration", kText},
    {"LlavaNextVideoForConditionalGeneration", kText},
    {"MantisForConditionalGeneration", kText},
    {"MiDashengLMModel", kText},
    {"MiMoForCausalLM"},
    {"MiniCPMO"},
    {"MiniCPMV", CausalFlagAt::kConfig, MiniCpmVReadsCausal},
    {"Ministral3ForCausalLM"},
    {"Mistral3ForConditionalGeneration", kText},  // Mistral and Ministral 3
    {"MistralForCausalLM"},
    {"MistralModel"},
    {"MoonshotKimiaForCausalLM"},
    {"MusicFlamingoForConditionalGeneration", kText},
    {"OpenCUAForConditionalGeneration", kText},
    {"OpenPanguVLForConditionalGeneration", CausalFlagAt::kConfig, PanguReadsCausal},
    {"OpenVLAForActionPrediction", kText},
    {"OuroForCausalLM"},
    {"PaddleOCRVLForConditionalGeneration", CausalFlagAt::kTextOverConfig},
    {"PanguEmbeddedForCausalLM", CausalFlagAt::kConfig, PanguReadsCausal},
    {"PanguProMoEV2ForCausalLM", CausalFlagAt::kConfig, PanguReadsCausal},
    {"PanguUltraMoEForCausalLM", CausalFlagAt::kConfig, PanguReadsCausal},
    {"PeagleLlamaForCausalLM"},
    {"Phi3ForCausalLM"},
    {"Phi3VForCausalLM"},
    {"Phi4ForCausalLMV"},
    {"Phi4MMForCausalLM"},
    {"Qwen2AudioForConditionalGeneration", kText},
    {"Qwen2ForCausalLM"},
    {"Qwen2Model"},
    {"Qwen2VLForConditionalGeneration", kTextOrRoot},
    {"Qwen2_5OmniForConditionalGeneration", CausalFlagAt::kThinkerText},
    {"Qwen2_5OmniModel", CausalFlagAt::kThinkerText},
    {"Qwen2_5_VLForConditionalGeneration", kTextOrRoot},
    {"Qwen3ASRForConditionalGeneration", CausalFlagAt::kThinkerText},
    {"Qwen3ASRRealtimeGeneration", CausalFlagAt::kThinkerText},
    {"Qwen3ForCausalLM"},
    {"Qwen3VLForConditionalGeneration", kText},
    {"SeedOssForCausalLM"},
    {"SmolVLMForConditionalGeneration", kText},
    {"Tarsier2ForConditionalGeneration", kTextOrRoot},
    {"TarsierForConditionalGeneration", kText},  // its text models: Llama and Mistral
    {"TeleChat2ForCausalLM"},
    {"TeleChat3ForCausalLM"},
    {"TeleChatForCausalLM"},
    {"TeleFLMForCausalLM"},
    {"XverseForCausalLM"},
};

// Refuses a config whose decoder layers the engine builds encoder-only: `cls` is the class that
// builds them and `given` the config it is given.
Status CheckCausal(std::string_view cls, const ConfigReader& given) {
  const auto* row = std::find_if(std::begin(kCausalFlagReaders), std::end(kCausalFlagReaders),
                                 [&](const CausalFlagReader& r) { return r.architecture == cls; });
  if (row == std::end(kCausalFlagReaders)) return Status::Ok();
  const auto sub = [&](std::string_view key) -> std::optional<ConfigReader> {
    if (!given.json().contains(key) || !given.json()[std::string(key)].is_object()) {
      return std::nullopt;
    }
    return ConfigReader(given.json()[std::string(key)], given.file(), given.Path(key));
  };
  std::optional<ConfigReader> at;
  switch (row->at) {
    case CausalFlagAt::kConfig:
      at = given;
      break;
    case CausalFlagAt::kTextConfig:
      at = sub("text_config");
      break;
    case CausalFlagAt::kTextConfigOrConfig:
      at = sub("text_config");
      if (!at) at = given;
      break;
    case CausalFlagAt::kLlmConfig:
      at = sub("llm_config");
      break;
    case CausalFlagAt::kThinkerText:
      if (std::optional<ConfigReader> thinker = sub("thinker_config")) {
        if (thinker->json().contains("text_config") && thinker->json()["text_config"].is_object()) {
          at = ConfigReader(thinker->json()["text_config"], given.file(),
                            thinker->Path("text_config"));
        }
      }
      break;
    case CausalFlagAt::kTextOverConfig:
      at = sub("text_config");
      if (!at || !at->json().contains("is_causal")) at = given;
      break;
  }
  if (!at || !at->json().contains("is_causal") || PythonTruth(at->json()["is_causal"])) {
    return Status::Ok();
  }
  if (row->reads != nullptr && !row->reads(given)) return Status::Ok();
  return at->Invalid("is_causal",
                     fmt::format("is {}: the engine builds {}'s attention layers encoder-only "
                                 "(bidirectional, AttentionType.ENCODER_ONLY), which keep no KV "
                                 "cache; kvtopo plans decoders",
                                 at->json()["is_causal"].dump(), cls));
}
}  // namespace

namespace {
// A flag that names one of a few values: the usage error names the value and lists them.
Status OneOf(std::string_view flag, std::string_view what, const std::string& value,
             std::initializer_list<std::string_view> accepted) {
  if (std::find(accepted.begin(), accepted.end(), value) != accepted.end()) return Status::Ok();
  return InvalidArgument(fmt::format("{} '{}' is not a {}; accepted: {}", flag, value, what,
                                     fmt::join(accepted, ", ")));
}
}  // namespace

Status CheckModelImpl(const std::string& model_impl) {
  if (model_impl == "terratorch") {
    return InvalidArgument(
        "--model-impl terratorch builds the engine's Terratorch models, which keep no KV cache; "
        "kvtopo plans auto, vllm and transformers");
  }
  return OneOf("--model-impl", "model implementation", model_impl,
               {"auto", "vllm", "transformers"});
}

Status CheckRunner(const std::string& runner) {
  return OneOf("--runner", "runner", runner, {"auto", "generate", "pooling", "draft"});
}

Status CheckConvert(const std::string& convert) {
  return OneOf("--convert", "conversion", convert, {"auto", "none", "embed", "classify"});
}

Result<ModelDescription> DescribeModel(const nlohmann::json& config, const std::string& file,
                                       const ModelClassOptions& options) {
  KVTOPO_RETURN_IF_ERROR(CheckModelImpl(options.model_impl));
  KVTOPO_RETURN_IF_ERROR(CheckRunner(options.runner));
  KVTOPO_RETURN_IF_ERROR(CheckConvert(options.convert));
  // The runner the flags name (ModelConfig._get_runner_type): a conversion other than none makes
  // it pooling when --runner leaves it to the engine.
  if (options.runner == "pooling" ||
      (options.convert == "embed" || options.convert == "classify")) {
    return InvalidArgument(fmt::format(
        "{}: the engine serves the model as a pooling model, returning embeddings or scores "
        "rather than generating tokens; kvtopo plans generation launches",
        options.runner == "pooling" ? std::string("--runner pooling")
                                    : fmt::format("--convert {}", options.convert)));
  }
  if (options.runner == "draft") {
    return InvalidArgument(
        "--runner draft: the engine builds the model as a speculative draft; kvtopo plans the "
        "target, with the draft in --speculative-config");
  }
  ConfigReader root(config, file);
  if (!config.is_object()) {
    return InvalidArgument(fmt::format("{} must hold a JSON object", ConfigFileLabel(file)));
  }
  KVTOPO_ASSIGN_OR_RETURN(std::vector<std::string> archs, root.StringList("architectures"));
  if (archs.empty()) return root.Invalid("architectures", "is empty");
  ModelDescription m;
  m.file = file;
  m.architecture = archs.front();
  KVTOPO_ASSIGN_OR_RETURN(m.model_type, root.StringOr("model_type", ""));
  const auto& readers = Readers();
  auto reader_of = [&](std::string_view arch) {
    return std::find_if(readers.begin(), readers.end(),
                        [&](const ArchitectureReader& r) { return arch == r.architecture; });
  };
  auto refused = [](std::string_view arch) {
    return std::any_of(std::begin(kRefusals), std::end(kRefusals),
                       [&](const Refusal& r) { return arch == r.architecture; });
  };
  if (options.model_impl == "transformers") {
    return DescribeOnTransformersBackend(config, root, archs, options, /*forced=*/true,
                                         std::move(m));
  }
  // The engine takes the first architecture its registry holds (resolve_model_cls); with none,
  // under auto, the Transformers backend over the config's custom code.
  const auto picked = std::find_if(archs.begin(), archs.end(), [&](const std::string& a) {
    return reader_of(a) != readers.end() || refused(a) || IsBackendClass(a);
  });
  if (picked == archs.end()) {
    if (!root.Has("model_type") && root.Has("speculators_config")) {
      return InvalidArgument(fmt::format(
          "{} is a speculators-format draft ({}): the engine serves it as the "
          "draft of the verifier its speculators_config names; plan that model with "
          "--speculative-config '{{\"model\": \"{}\"}}' (and its method and token count)",
          ConfigFileLabel(file), m.architecture, file));
    }
    if (options.model_impl == "auto" && !AutoMapModelEntry(config).empty()) {
      return DescribeOnTransformersBackend(config, root, archs, options, /*forced=*/false,
                                           std::move(m));
    }
    return UnsupportedArchitectures(file, archs, options);
  }
  m.architecture = *picked;
  if (IsBackendClass(m.architecture)) {
    return DescribeOnTransformersBackend(config, root, {*picked}, options, /*forced=*/false,
                                         std::move(m));
  }
  for (const Refusal& refusal : kRefusals) {
    if (m.architecture == refusal.architecture) {
      return InvalidArgument(fmt::format("{}: {} is not planned: {}", ConfigFileLabel(file),
                                         m.architecture, refusal.reason));
    }
  }
  const auto it = reader_of(m.architecture);
  if (m.architecture == "UltravoxModel" && root.Has("text_model_id")) {
    // The fork's UltravoxConfig then loads that repository's config.json as the language model's
    // and ignores text_config.
    return root.Invalid("text_model_id",
                        "is set: the engine builds Ultravox's language model from that "
                        "repository's config.json and ignores text_config; plan that config");
  }
  if (UltravoxBuildsLlamaConfig(root, m.architecture)) {
    KVTOPO_RETURN_IF_ERROR(ReadTextModelOrDefaults(root, "text_config", ReadLlamaConfigText, m));
    if (root.Has("text_config")) {
      KVTOPO_ASSIGN_OR_RETURN(const ConfigReader text, root.Object("text_config"));
      KVTOPO_RETURN_IF_ERROR(CheckCausal("LlamaForCausalLM", text));
    }
  } else if (it->text_model == TextModel::kLanguageModel ||
             it->text_model == TextModel::kNamedOrTyped) {
    const char* key =
        root.Has("text_config") || !root.Has("llm_config") ? "text_config" : "llm_config";
    KVTOPO_ASSIGN_OR_RETURN(ConfigReader text, root.Object(key));
    std::vector<std::string> inner;
    if (it->text_model == TextModel::kNamedOrTyped && !text.Has("architectures")) {
      KVTOPO_ASSIGN_OR_RETURN(const std::string type, text.String("model_type"));
      const char* typed = CausalLmClassForType(type);
      if (typed == nullptr) {
        std::vector<std::string> types;
        for (const auto& t : kCausalLmForType) types.emplace_back(t.first);
        return text.Invalid("model_type",
                            fmt::format("is '{}' and no architectures are stated: kvtopo plans "
                                        "the causal-LM class of model type {} here",
                                        type, fmt::join(types, ", ")));
      }
      inner.emplace_back(typed);
    } else {
      KVTOPO_ASSIGN_OR_RETURN(inner, text.StringList("architectures"));
    }
    if (inner.empty()) return text.Invalid("architectures", "is empty");
    auto lm = std::find_if(readers.begin(), readers.end(), [&](const ArchitectureReader& r) {
      return inner.front() == r.architecture && r.text_model == TextModel::kRoot && !r.draft;
    });
    if (lm == readers.end()) {
      std::vector<std::string> names;
      for (const ArchitectureReader& r : readers) {
        if (r.text_model == TextModel::kRoot && !r.draft) names.emplace_back(r.architecture);
      }
      return text.Invalid("architectures",
                          fmt::format("names '{}', which kvtopo does not plan as the language "
                                      "model of {}; supported: {}",
                                      inner.front(), m.architecture, fmt::join(names, ", ")));
    }
    KVTOPO_RETURN_IF_ERROR(ReadTextModel(root, key, lm->read, m));
    KVTOPO_RETURN_IF_ERROR(CheckCausal(inner.front(), text));
    RecordTextShape(text.json(), m);
    m.language_model_architecture = inner.front();
    KVTOPO_RETURN_IF_ERROR(RecordMoeBuild(text, inner.front(), options, m));
  } else if (it->text_model == TextModel::kThinker) {
    KVTOPO_RETURN_IF_ERROR(ReadThinkerTextModel(root, it->read, m));
    KVTOPO_RETURN_IF_ERROR(CheckCausal(m.architecture, root));
    KVTOPO_ASSIGN_OR_RETURN(const ConfigReader thinker, root.Object("thinker_config"));
    KVTOPO_ASSIGN_OR_RETURN(const ConfigReader text, thinker.Object("text_config"));
    KVTOPO_RETURN_IF_ERROR(RecordMoeBuild(text, m.architecture, options, m));
  } else if (it->text_model == TextModel::kNested ||
             (it->text_model == TextModel::kNestedIfPresent && root.Has("text_config"))) {
    KVTOPO_RETURN_IF_ERROR(ReadTextModel(root, "text_config", it->read, m));
    KVTOPO_RETURN_IF_ERROR(CheckCausal(m.architecture, root));
    RecordTextShape(config.value("text_config", nlohmann::json()), m);
    KVTOPO_ASSIGN_OR_RETURN(const ConfigReader text, root.Object("text_config"));
    KVTOPO_RETURN_IF_ERROR(RecordMoeBuild(text, m.architecture, options, m));
  } else {
    const bool generating = options.runner == "generate" && it->read_generating != nullptr;
    KVTOPO_RETURN_IF_ERROR(generating ? it->read_generating(root, m) : it->read(root, m));
    KVTOPO_RETURN_IF_ERROR(CheckCausal(m.architecture, root));
    RecordTextShape(config, m);
    KVTOPO_RETURN_IF_ERROR(RecordMoeBuild(root, m.architecture, options, m));
  }
  if (it->architecture == std::string_view("LongcatFlashForCausalLM")) {
    KVTOPO_RETURN_IF_ERROR(CheckLongcatConfigClass(root, options));
  }
  if (it->adjust != nullptr) it->adjust(m);
  if (it->draft) m.kind = "draft";  // the engine builds it only as a speculative draft
  if (it->method != nullptr) m.method = it->method;
  if (root.Has("eagle_config")) {
    KVTOPO_ASSIGN_OR_RETURN(const ConfigReader eagle, root.Object("eagle_config"));
    KVTOPO_ASSIGN_OR_RETURN(m.draft_uses_aux_hidden_states,
                            eagle.BoolOr("use_aux_hidden_state", true));
  }
  if (it->draft) KVTOPO_RETURN_IF_ERROR(ReadDraftAuxInputs(root, *it, m));
  m.uses_mrope = UsesMrope(config);
  m.mm_prefix_lm = IsMmPrefixLm(config);
  KVTOPO_ASSIGN_OR_RETURN(m.kv_cache_scheme, ReadKvCacheScheme(config, file));
  m.names_parallel_drafting_token = NamesParallelDraftingToken(config);
  KVTOPO_RETURN_IF_ERROR(ReadKvtopoBlock(root, m));
  return m;
}

namespace {

bool IsModelProfile(std::string_view stem) { return stem != "backends" && stem != "vllm-flags"; }

// The embedded profile that serves a Hugging Face repo id ("moonshotai/Kimi-K3", optionally
// with "@revision"), from the profiles' kvtopo.hf_repos lists; case-insensitive.
Result<std::optional<LoadedConfig>> ProfileForRepo(const std::string& model) {
  const std::string repo = AsciiLower(model.substr(0, model.find('@')));
  if (repo.find('/') == std::string::npos) return std::optional<LoadedConfig>();
  for (const EmbeddedFile& f : EmbeddedProfileFiles()) {
    if (!IsModelProfile(f.stem)) continue;
    const std::string file = fmt::format("profiles/{}.json", f.stem);
    KVTOPO_ASSIGN_OR_RETURN(nlohmann::json j,
                            ParseJsonText(f.content, fmt::format("config.json '{}'", file)));
    const nlohmann::json* repos = nullptr;
    if (j.contains("kvtopo") && j["kvtopo"].is_object() && j["kvtopo"].contains("hf_repos")) {
      repos = &j["kvtopo"]["hf_repos"];
    }
    if (repos == nullptr || !repos->is_array()) continue;
    for (const nlohmann::json& r : *repos) {
      if (r.is_string() && AsciiLower(r.get<std::string>()) == repo) {
        return std::optional<LoadedConfig>(LoadedConfig{std::move(j), file, std::string(f.stem)});
      }
    }
  }
  return std::optional<LoadedConfig>();
}

// Whether `dir` holds (at any depth) a file named consolidated*.safetensors: the engine's sign of a
// Mistral-format checkpoint (is_mistral_model_repo). At most kMaxListedEntries entries are
// looked at.
constexpr int64_t kMaxListedEntries = 1'000'000;
bool HasConsolidatedWeights(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::recursive_directory_iterator it(
      dir, std::filesystem::directory_options::skip_permission_denied, ec);
  int64_t seen = 0;
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (++seen > kMaxListedEntries) break;
    const std::string name = it->path().filename().string();
    if (name.starts_with("consolidated") && name.ends_with(".safetensors")) return true;
  }
  return false;
}

// A Mistral-format params.json and, when there is one, the config.json beside it.
Result<LoadedConfig> LoadMistralParams(const std::filesystem::path& params,
                                       const std::string& model) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string text,
                          ReadTextFile(params, kMaxConfigFileBytes, "params.json"));
  KVTOPO_ASSIGN_OR_RETURN(nlohmann::json j,
                          ParseJsonText(text, fmt::format("params.json '{}'", params.string())));
  nlohmann::json hf;
  std::error_code ec;
  const std::filesystem::path beside = params.parent_path() / "config.json";
  if (std::filesystem::is_regular_file(beside, ec)) {
    KVTOPO_ASSIGN_OR_RETURN(const std::string hf_text,
                            ReadTextFile(beside, kMaxConfigFileBytes, "config.json"));
    KVTOPO_ASSIGN_OR_RETURN(
        hf, ParseJsonText(hf_text, fmt::format("config.json '{}'", beside.string())));
  }
  KVTOPO_ASSIGN_OR_RETURN(nlohmann::json converted, ConvertMistralParams(j, params.string(), hf));
  return LoadedConfig{std::move(converted), params.string(), model};
}

// The engine's remote GGUF name `repo:QUANT` (get_config with is_remote_gguf): the config is the
// repo's config.json, required (a GGUF repo without one is refused), and the weights the QUANT
// file, which the plan does not read.
Result<LoadedConfig> LoadRemoteGguf(const std::string& model, const std::string& repo,
                                    const std::string& config_format, const std::string& revision,
                                    std::string_view revision_knob) {
  std::string why;
  KVTOPO_ASSIGN_OR_RETURN(const std::optional<HfSnapshot> snapshot,
                          FindHfSnapshot(repo, revision, revision_knob, why));
  const std::string fetch = fmt::format(
      "`hf download {} config.json{}` puts it there if the repo has one; else pass "
      "--hf-config-path naming the unquantized model's config, as the engine asks",
      repo, revision.empty() ? std::string() : " --revision " + revision);
  if (!snapshot) {
    return NotFound(fmt::format(
        "model '{}' is a remote GGUF name (repo:QUANT): the engine reads the config.json of "
        "repo '{}', and {}; {}",
        model, repo, why, fetch));
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(snapshot->dir / "config.json", ec)) {
    return NotFound(fmt::format(
        "model '{}' is a remote GGUF name (repo:QUANT): the engine reads the config.json of "
        "repo '{}' and refuses a GGUF repo without one, and the Hugging Face cache's snapshot "
        "'{}' (revision '{}') holds none; {}",
        model, repo, snapshot->dir.string(), snapshot->revision, fetch));
  }
  KVTOPO_ASSIGN_OR_RETURN(LoadedConfig loaded,
                          LoadModelConfig((snapshot->dir / "config.json").string(), config_format));
  loaded.name = model;
  loaded.origin = fmt::format(
      "'{}' is a remote GGUF name: its config is the config.json of repo '{}', read from the "
      "Hugging Face cache (snapshot {} of revision '{}'), as the engine downloads it online; under "
      "HF_HUB_OFFLINE=1 the engine cannot serve this name (its offline path takes the whole "
      "name for a repo id, which ':' makes invalid)",
      model, repo, snapshot->commit, snapshot->revision);
  return loaded;
}

// A repo id's cached snapshot read as its directory, as the engine reads it offline (its
// get_model_path swaps the repo id for the snapshot's folder before reading the config).
// The engine's get_pooling_config: a modules.json beside the config whose list names a module of
// type sentence_transformers.models.Pooling. Returns its path when it does, "" when it does not
// or there is none; a file the engine cannot read as that list is refused.
Result<std::string> SentenceTransformersPooling(const std::filesystem::path& modules) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(modules, ec)) return std::string();
  const std::string where = fmt::format("modules.json '{}'", modules.string());
  KVTOPO_ASSIGN_OR_RETURN(const std::string text,
                          ReadTextFile(modules, kMaxConfigFileBytes, "modules.json"));
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json list, ParseJsonText(text, where));
  const auto malformed = [&](std::string_view what) {
    return InvalidArgument(fmt::format(
        "{} {}: the engine reads it as a list of modules, each with a 'type', to find a "
        "Sentence Transformers pooling config (get_pooling_config), and fails",
        where, what));
  };
  if (!list.is_array()) return malformed("is not a list");
  bool pooling = false;
  for (const nlohmann::json& item : list) {
    if (!item.is_object() || !item.contains("type"))
      return malformed("holds a module without a type");
    pooling = pooling || item["type"] == "sentence_transformers.models.Pooling";
  }
  return pooling ? modules.string() : std::string();
}

Result<LoadedConfig> LoadFromHfSnapshot(const std::string& repo_id, const HfSnapshot& snapshot,
                                        const std::string& config_format) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(snapshot.dir / "config.json", ec) &&
      !std::filesystem::is_regular_file(snapshot.dir / "params.json", ec)) {
    return NotFound(fmt::format(
        "model '{}': the Hugging Face cache's snapshot '{}' (revision '{}') holds neither "
        "config.json nor params.json, which the engine reads; `hf download {} config.json "
        "--revision {}` puts its config there",
        repo_id, snapshot.dir.string(), snapshot.revision, repo_id, snapshot.revision));
  }
  KVTOPO_ASSIGN_OR_RETURN(LoadedConfig loaded,
                          LoadModelConfig(snapshot.dir.string(), config_format));
  loaded.name = repo_id;
  loaded.origin = fmt::format(
      "'{}' is read from the Hugging Face cache: snapshot {} of revision '{}', as the engine "
      "reads it offline (HF_HUB_OFFLINE=1); online it reads the hub's current files for that "
      "revision",
      repo_id, snapshot.commit, snapshot.revision);
  if (config_format == "auto" &&
      std::filesystem::is_regular_file(snapshot.dir / "params.json", ec) &&
      !loaded.file.ends_with("params.json")) {
    loaded.origin +=
        "; the snapshot holds params.json without consolidated*.safetensors, so config.json is "
        "read, as offline; online the engine lists the hub's files and reads params.json when "
        "the repo has consolidated weights (--config-format mistral plans that)";
  }
  return loaded;
}

}  // namespace

bool IsModelProfileFile(std::string_view stem) { return IsModelProfile(stem); }

Result<nlohmann::json> ParseHfOverrides(const std::string& text) {
  KVTOPO_ASSIGN_OR_RETURN(nlohmann::json overrides, ParseJsonText(text, "--hf-overrides"));
  if (!overrides.is_object()) {
    std::string shown = overrides.dump();
    if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    return InvalidArgument(
        fmt::format("--hf-overrides must be a JSON object of config values, got {}", shown));
  }
  return overrides;
}

namespace {

// The config.json keys that hold a nested config (a PretrainedConfig to the engine, which merges
// an object override into it); any other object-valued key (rope_scaling, quantization_config,
// ...) is a plain value the override replaces.
constexpr std::array<std::string_view, 9> kNestedConfigKeys = {
    "text_config",  "llm_config",    "language_config", "thinker_config", "vision_config",
    "audio_config", "talker_config", "encoder_config",  "decoder_config"};
// Fields a config class derives others from when it is built (Qwen's sliding_window from
// use_sliding_window and max_window_layers, Gemma's layer_types from sliding_window_pattern):
// the engine sets an override after that, kvtopo would derive again.
constexpr std::array<std::string_view, 4> kDerivedAtBuildKeys = {
    "sliding_window", "use_sliding_window", "max_window_layers", "sliding_window_pattern"};

// The engine's _update_nested: objects merge into objects, anything else is set.
void UpdateNested(nlohmann::json& target, const nlohmann::json& updates) {
  for (const auto& [key, value] : updates.items()) {
    if (value.is_object() && target.contains(key) && target[key].is_object()) {
      UpdateNested(target[key], value);
    } else {
      target[key] = value;
    }
  }
}

// Whether `value` (set at `path`) holds a key the plan cannot apply; names it in `why`.
bool Unappliable(const nlohmann::json& value, const std::string& path, std::string& why) {
  if (value.is_null()) {
    why = fmt::format(
        "'{}' is null, which the engine sets as None on the built config while "
        "kvtopo would read the config class's default",
        path);
    return true;
  }
  const std::string_view leaf = std::string_view(path).substr(path.rfind('.') + 1);
  if (std::find(kDerivedAtBuildKeys.begin(), kDerivedAtBuildKeys.end(), leaf) !=
      kDerivedAtBuildKeys.end()) {
    why = fmt::format(
        "'{}' is set by the engine after its config class has derived the layer "
        "windows from config.json's own values, which kvtopo does not model",
        path);
    return true;
  }
  if (value.is_object()) {
    for (const auto& [key, item] : value.items()) {
      if (Unappliable(item, path + "." + key, why)) return true;
    }
  }
  return false;
}

}  // namespace

Result<nlohmann::json> ApplyHfOverrides(
    const nlohmann::json& config, const std::string& file, const std::string& overrides,
    std::vector<std::pair<std::string, std::string>>& warnings) {
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json parsed, ParseHfOverrides(overrides));
  nlohmann::json out = config;
  std::vector<std::string> applied;
  auto skip = [&](const std::string& why) {
    warnings.emplace_back("not-modelled",
                          fmt::format("--hf-overrides: {}, so it is not applied; the plan "
                                      "reads {} without it",
                                      why, ConfigFileLabel(file)));
  };
  for (const auto& [key, value] : parsed.items()) {
    std::string why;
    if (Unappliable(value, key, why)) {
      skip(why);
      continue;
    }
    const bool nested = std::find(kNestedConfigKeys.begin(), kNestedConfigKeys.end(), key) !=
                        kNestedConfigKeys.end();
    if (value.is_object() && nested) {
      if (!out.contains(key) || !out[key].is_object()) {
        skip(
            fmt::format("'{}' merges into the nested config the engine builds, which config.json "
                        "does not hold as an object",
                        key));
        continue;
      }
      UpdateNested(out[key], value);
    } else {
      out[key] = value;
    }
    applied.push_back(key);
  }
  if (!applied.empty()) {
    warnings.emplace_back("hf-overrides-applied",
                          fmt::format("{} is read with --hf-overrides {}, as the "
                                      "engine sets them on its config",
                                      ConfigFileLabel(file), fmt::join(applied, ", ")));
  }
  return out;
}

Status CheckConfigFormat(const std::string& config_format) {
  return OneOf("--config-format", "config format", config_format, {"auto", "hf", "mistral"});
}

Result<LoadedConfig> LoadModelConfig(const std::string& model, const std::string& config_format,
                                     const std::string& revision, std::string_view revision_knob) {
  KVTOPO_RETURN_IF_ERROR(CheckConfigFormat(config_format));
  std::string accepted;
  for (const EmbeddedFile& f : EmbeddedProfileFiles()) {
    if (!IsModelProfile(f.stem)) continue;
    if (f.stem == model) {
      std::string file = fmt::format("profiles/{}.json", f.stem);
      KVTOPO_ASSIGN_OR_RETURN(nlohmann::json j,
                              ParseJsonText(f.content, fmt::format("config.json '{}'", file)));
      return LoadedConfig{std::move(j), file, model};
    }
    accepted += (accepted.empty() ? "" : ", ") + std::string(f.stem);
  }
  std::error_code ec;
  std::filesystem::path path(model);
  if (std::filesystem::is_directory(path, ec)) {
    const std::filesystem::path params = path / "params.json";
    if (config_format == "mistral" ||
        (config_format == "auto" && std::filesystem::is_regular_file(params, ec) &&
         HasConsolidatedWeights(path))) {
      if (!std::filesystem::is_regular_file(params, ec)) {
        return NotFound(
            fmt::format("--config-format mistral: directory '{}' holds no params.json", model));
      }
      return LoadMistralParams(params, model);
    }
    if (config_format == "auto" && std::filesystem::is_regular_file(params, ec) &&
        !std::filesystem::is_regular_file(path / "config.json", ec)) {
      return NotFound(fmt::format(
          "directory '{}' holds params.json but neither consolidated*.safetensors nor a "
          "config.json: the engine takes Mistral's format only beside its consolidated weights "
          "and cannot tell the format; pass --config-format mistral",
          model));
    }
    path /= "config.json";
  } else if (std::filesystem::is_regular_file(path, ec) && config_format != "hf" &&
             (config_format == "mistral" || path.filename() == "params.json")) {
    return LoadMistralParams(path, model);
  }
  if (std::filesystem::is_regular_file(path, ec) &&
      (path.extension() == ".gguf" || IsGgufFile(path))) {
    // The engine's check_gguf_file: a .gguf name or GGUF's magic bytes; Transformers builds the
    // config from the file's metadata (GgufToConfig).
    KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json metadata, ReadGgufMetadata(path));
    KVTOPO_ASSIGN_OR_RETURN(nlohmann::json j, GgufToConfig(metadata, path.string()));
    return LoadedConfig{std::move(j), path.string(), model};
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    KVTOPO_ASSIGN_OR_RETURN(std::optional<LoadedConfig> served, ProfileForRepo(model));
    if (served) return std::move(*served);
    std::string cache_why;
    std::string gguf_repo;
    std::string gguf_quant;
    if (SplitRemoteGguf(model, gguf_repo, gguf_quant)) {
      return LoadRemoteGguf(model, gguf_repo, config_format, revision, revision_knob);
    }
    if (IsHfRepoId(model) && !std::filesystem::exists(model, ec)) {
      KVTOPO_ASSIGN_OR_RETURN(const std::optional<HfSnapshot> snapshot,
                              FindHfSnapshot(model, revision, revision_knob, cache_why));
      if (snapshot) return LoadFromHfSnapshot(model, *snapshot, config_format);
      cache_why =
          fmt::format(" ({}; `hf download {} config.json{}` puts its config there)", cache_why,
                      model, revision.empty() ? std::string() : " --revision " + revision);
    }
    return NotFound(fmt::format(
        "model '{}' is neither an embedded profile ({}), a Hugging Face repo id a profile "
        "serves (kvtopo profiles), a repo id the Hugging Face cache holds{}, nor a config.json "
        "or params.json file or a directory holding one; pass one of those as MODEL",
        model, accepted, cache_why));
  }
  KVTOPO_ASSIGN_OR_RETURN(const std::string text,
                          ReadTextFile(path, kMaxConfigFileBytes, "config.json"));
  KVTOPO_ASSIGN_OR_RETURN(nlohmann::json j,
                          ParseJsonText(text, fmt::format("config.json '{}'", path.string())));
  // get_config: a config without quantization_config takes the legacy hf_quant_config.json
  // beside it (ModelOpt 0.29 and before) as its quantization_config.
  const std::filesystem::path legacy = path.parent_path() / "hf_quant_config.json";
  std::string quantization_file;
  if (j.is_object() && (!j.contains("quantization_config") || j["quantization_config"].is_null()) &&
      std::filesystem::is_regular_file(legacy, ec)) {
    KVTOPO_ASSIGN_OR_RETURN(const std::string quant_text,
                            ReadTextFile(legacy, kMaxConfigFileBytes, "hf_quant_config.json"));
    KVTOPO_ASSIGN_OR_RETURN(
        j["quantization_config"],
        ParseJsonText(quant_text, fmt::format("hf_quant_config.json '{}'", legacy.string())));
    quantization_file = legacy.string();
  }
  LoadedConfig loaded{std::move(j), path.string(), model};
  loaded.quantization_file = std::move(quantization_file);
  Result<std::string> pooling = SentenceTransformersPooling(path.parent_path() / "modules.json");
  if (pooling.ok()) {
    loaded.pooling_modules_file = *std::move(pooling);
  } else {
    loaded.pooling_modules_error = pooling.status().message();
  }
  return loaded;
}

}  // namespace kvtopo::internal
