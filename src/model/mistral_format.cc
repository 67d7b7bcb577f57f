#include "model/mistral_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "internal/json_int.h"
#include "kvtopo/limits.h"
#include "model/config_reader.h"

namespace kvtopo::internal {
namespace {

// The length the engine gives a params.json that states none, when no config.json beside it
// states one either (MistralConfigParser).
constexpr int64_t kDefaultMistralLength = 128000;

// Python's truth value of a JSON value, which the engine's converter tests its keys with.
bool Truthy(const nlohmann::json* v) { return v != nullptr && internal::PythonTruth(*v); }

const nlohmann::json* Find(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// The object at `key` of `c` when its value is truthy, nullptr when it is not; a truthy value
// that is not an object is refused (the converter reads its keys).
Result<const nlohmann::json*> TruthyObject(const ConfigReader& r, const nlohmann::json& c,
                                           std::string_view key) {
  const nlohmann::json* v = Find(c, key);
  if (!Truthy(v)) return static_cast<const nlohmann::json*>(nullptr);
  if (!v->is_object()) return r.Invalid(key, fmt::format("must be an object, got {}", v->dump()));
  return v;
}

void Rename(nlohmann::json& c, const char* from, const char* to) {
  auto it = c.find(from);
  if (it == c.end()) return;
  nlohmann::json value = std::move(*it);
  c.erase(it);
  c[to] = std::move(value);
}

// The sliding window: a list is tiled over the layers as layer_types (a null entry is a full
// layer), its one window size kept as sliding_window; an integer makes every layer slide, and
// beside a stated layer_types the converter raises; 0 is no window.
Status ConvertSlidingWindow(const ConfigReader& r, nlohmann::json& c, int64_t layers) {
  const nlohmann::json* sw = Find(c, "sliding_window");
  if (sw == nullptr || sw->is_null()) return Status::Ok();
  if (sw->is_number_integer() && sw->get<int64_t>() == 0) {
    c["sliding_window"] = nullptr;  // the engine reads a 0 window as none
    return Status::Ok();
  }
  if (sw->is_number_integer()) {
    if (sw->get<int64_t>() < 0 || sw->get<int64_t>() > kMaxModelLen) {
      return r.Invalid("sliding_window", fmt::format("must be an integer in [0, {}], got {}",
                                                     kMaxModelLen, sw->dump()));
    }
    const nlohmann::json* types = Find(c, "layer_types");
    if (types != nullptr && !types->is_null()) {
      return r.Invalid(
          "sliding_window",
          fmt::format("is {} and layer_types is stated: the engine's converter writes layer_types "
                      "for an integer window only when the config has none, and raises "
                      "otherwise ('Unsupported sliding_window type: {}'); drop one of them",
                      sw->dump(), sw->dump()));
    }
    c["layer_types"] = nlohmann::json::array();
    for (int64_t i = 0; i < layers; ++i) c["layer_types"].push_back("sliding_attention");
    return Status::Ok();
  }
  if (!sw->is_array() || sw->empty()) {
    return r.Invalid("sliding_window",
                     fmt::format("is {}: the engine converts an integer or a non-empty list of "
                                 "windows (null for a full layer)",
                                 sw->dump()));
  }
  const int64_t period = static_cast<int64_t>(sw->size());
  if (period > layers || layers % period != 0) {
    return r.Invalid("sliding_window",
                     fmt::format("lists {} windows, which do not tile the {} layers (n_layers): "
                                 "the engine repeats the list {} times, and its attention "
                                 "asserts a layer type for every layer",
                                 period, layers, layers / period));
  }
  std::optional<int64_t> window;
  for (const nlohmann::json& w : *sw) {
    if (w.is_null()) continue;
    if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > kMaxModelLen) {
      return r.Invalid("sliding_window",
                       fmt::format("lists {}: each entry must be null (a full layer) or a window "
                                   "in [1, {}]",
                                   w.dump(), kMaxModelLen));
    }
    if (window && *window != w.get<int64_t>()) {
      return r.Invalid("sliding_window",
                       fmt::format("lists windows of {} and {} tokens: the engine's converter "
                                   "asserts one window size",
                                   *window, w.get<int64_t>()));
    }
    window = w.get<int64_t>();
  }
  nlohmann::json types = nlohmann::json::array();
  for (int64_t i = 0; i < layers; ++i) {
    types.push_back((*sw)[static_cast<size_t>(i % period)].is_null() ? "full_attention"
                                                                     : "sliding_attention");
  }
  c["layer_types"] = std::move(types);
  c["sliding_window"] = window ? nlohmann::json(*window) : nlohmann::json(nullptr);
  return Status::Ok();
}

// `quantization` (Mistral's own): FP8 E4M3 weights or a compressed-tensors block; the engine
// refuses anything else.
Status ConvertQuantization(const ConfigReader& r, nlohmann::json& c) {
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json* q, TruthyObject(r, c, "quantization"));
  if (q == nullptr) return Status::Ok();
  const nlohmann::json* weight = Find(*q, "qformat_weight");
  const nlohmann::json* method = Find(*q, "quant_method");
  std::string normalized;
  if (method != nullptr && method->is_string()) {
    for (char ch : method->get<std::string>()) {
      normalized +=
          ch == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  nlohmann::json config;
  if (weight != nullptr && *weight == "fp8_e4m3") {
    const nlohmann::json* act = Find(*q, "qscheme_act");
    if (act != nullptr && !act->is_null() && *act != "NO_SCALES" && *act != "TENSOR") {
      return r.Invalid(
          "quantization.qscheme_act",
          fmt::format("is {}: the engine converts NO_SCALES, TENSOR or null", act->dump()));
    }
    config = {{"quant_method", "fp8"},
              {"activation_scheme", act != nullptr && *act == "NO_SCALES" ? "dynamic" : "static"}};
  } else if (normalized == "compressed-tensors") {
    config = *q;
  } else {
    return r.Invalid("quantization",
                     fmt::format("is {}: the engine converts FP8 (qformat_weight fp8_e4m3) or "
                                 "compressed-tensors quantization only",
                                 q->dump()));
  }
  c.erase("quantization");
  c["quantization_config"] = std::move(config);
  return Status::Ok();
}

// `yarn`: the engine's YaRN RoPE parameters, whose original length times the factor is the
// model's length.
Status ConvertYarn(const ConfigReader& r, nlohmann::json& c) {
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json* yarn, TruthyObject(r, c, "yarn"));
  if (yarn == nullptr) return Status::Ok();
  for (const auto& [key, value] : yarn->items()) {
    if (key != "factor" && key != "original_max_position_embeddings" && key != "beta" &&
        key != "alpha" && key != "apply_scale") {
      return r.Invalid(fmt::format("yarn.{}", key),
                       "is not a YaRN key the engine converts (factor, "
                       "original_max_position_embeddings, beta, alpha, apply_scale); its "
                       "converter asserts");
    }
  }
  for (const char* key : {"factor", "original_max_position_embeddings"}) {
    if (!yarn->contains(key)) return r.Missing(fmt::format("yarn.{}", key));
  }
  nlohmann::json rope = {
      {"rope_type", "yarn"},
      {"mscale_all_dim", 1},
      {"factor", (*yarn)["factor"]},
      {"original_max_position_embeddings", (*yarn)["original_max_position_embeddings"]}};
  if (const nlohmann::json* theta = Find(c, "rope_theta"); Truthy(theta)) {
    rope["rope_theta"] = *theta;
    c.erase("rope_theta");
  }
  if (yarn->contains("beta")) rope["beta_fast"] = (*yarn)["beta"];
  if (yarn->contains("alpha")) rope["beta_slow"] = (*yarn)["alpha"];
  if (yarn->contains("apply_scale")) rope["apply_yarn_scaling"] = (*yarn)["apply_scale"];
  c["rope_parameters"] = std::move(rope);
  c["yarn"] = nlohmann::json::object();
  return Status::Ok();
}

Status CheckLlama4Scaling(const ConfigReader& r, const nlohmann::json& c, bool required) {
  const nlohmann::json* scaling = Find(c, "llama_4_scaling");
  if (!Truthy(scaling)) {
    if (!required) return Status::Ok();
    return r.Invalid("llama_4_scaling",
                     "is missing: the engine's converter asserts it for Mistral Large 3 (MoE with "
                     "shared experts, or MLA)");
  }
  for (const char* key : {"original_max_position_embeddings", "beta"}) {
    if (Find(*scaling, key) == nullptr) return r.Missing(fmt::format("llama_4_scaling.{}", key));
  }
  return Status::Ok();
}

// The text model's architecture, as the converter picks it: MLA or MoE with shared experts is
// Mistral Large 3 (the engine's DeepSeek-V3 model, model type deepseek_v3), other MoE is Mixtral,
// the rest Mistral.
Status ConvertArchitecture(const ConfigReader& r, nlohmann::json& c, int64_t layers) {
  if (Truthy(Find(c, "qk_nope_head_dim")) && !Truthy(Find(c, "moe"))) {
    // MLA without MoE: the converter adds a MoE of one shared expert and no MoE layer, which
    // makes it Mistral Large 3 as well.
    c["moe"] = {{"num_experts", 1},
                {"first_k_dense_replace", layers},
                {"route_every_n", 1},
                {"num_shared_experts", 1},
                {"num_experts_per_tok", 1}};
  }
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json* moe, TruthyObject(r, c, "moe"));
  const bool is_moe = moe != nullptr;
  bool shared = false;
  if (is_moe) {
    const nlohmann::json* n = Find(*moe, "num_shared_experts");
    if (n != nullptr && !n->is_null() && !n->is_number()) {
      return r.Invalid("moe.num_shared_experts",
                       fmt::format("must be a number, got {}", n->dump()));
    }
    shared = n != nullptr && n->is_number() && n->get<double>() > 0;
  }
  if (c["model_type"] == "mamba") {
    return r.Invalid(
        "model_type",
        "is 'mamba': the engine converts it to Mamba2ForCausalLM, whose Mistral-format "
        "fields kvtopo has not verified; plan the checkpoint's config.json "
        "(--config-format hf)");
  }
  if (is_moe && shared) {
    KVTOPO_RETURN_IF_ERROR(CheckLlama4Scaling(r, c, /*required=*/true));
    // The converter's MoE renames (_remap_moe_args): the DeepSeek-V3 config reads these keys at
    // the top level, the expert count among them.
    for (const auto& [from, to] : std::initializer_list<std::pair<const char*, const char*>>{
             {"route_every_n", "moe_layer_freq"},
             {"first_k_dense_replace", "first_k_dense_replace"},
             {"num_experts_per_tok", "num_experts_per_tok"},
             {"num_experts", "n_routed_experts"},
             {"expert_hidden_dim", "moe_intermediate_size"},
             {"routed_scale", "routed_scaling_factor"},
             {"num_shared_experts", "n_shared_experts"},
             {"num_expert_groups", "n_group"},
             {"num_expert_groups_per_tok", "topk_group"}}) {
      nlohmann::json& section = c["moe"];
      if (!section.contains(from)) continue;
      nlohmann::json value = section[from];
      section.erase(from);
      c[to] = std::move(value);
    }
    c["model_type"] = "deepseek_v3";
    c["architectures"] = {"MistralLarge3ForCausalLM"};
  } else if (is_moe) {
    c["architectures"] = {"MixtralForCausalLM"};
  } else {
    c["architectures"] = {"MistralForCausalLM"};
  }
  return Status::Ok();
}

}  // namespace

Result<nlohmann::json> ConvertMistralParams(const nlohmann::json& params, const std::string& file,
                                            const nlohmann::json& hf_config) {
  if (!params.is_object()) {
    return InvalidArgument(fmt::format("params.json '{}' must hold a JSON object", file));
  }
  const ConfigReader r(params, file);
  // The fields the engine's Mistral models read under their converted names.
  KVTOPO_RETURN_IF_ERROR(r.IntIn("dim", 1, kMaxModelDim).status());
  KVTOPO_ASSIGN_OR_RETURN(const int64_t layers, r.IntIn("n_layers", 1, kMaxLayers));
  KVTOPO_RETURN_IF_ERROR(r.IntIn("n_heads", 1, kMaxModelDim).status());
  if (params.contains("n_kv_heads")) {
    KVTOPO_RETURN_IF_ERROR(r.IntIn("n_kv_heads", 1, kMaxModelDim).status());
  }

  nlohmann::json c = params;
  Rename(c, "dim", "hidden_size");
  Rename(c, "norm_eps", "rms_norm_eps");
  Rename(c, "n_kv_heads", "num_key_value_heads");
  Rename(c, "n_layers", "num_hidden_layers");
  Rename(c, "n_heads", "num_attention_heads");
  Rename(c, "hidden_dim", "intermediate_size");
  if (!c.contains("model_type")) c["model_type"] = "transformer";
  if (!c["model_type"].is_string()) {
    return r.Invalid("model_type", fmt::format("must be a string, got {}", c["model_type"].dump()));
  }
  // The length: the params' own, else the config.json's text model's, else 128000; max_seq_len
  // defaults to it.
  if (!c.contains("max_position_embeddings") || c["max_position_embeddings"].is_null()) {
    const nlohmann::json* text = Find(hf_config, "text_config");
    const nlohmann::json* hf_length =
        Find(text != nullptr && text->is_object() ? *text : hf_config, "max_position_embeddings");
    c["max_position_embeddings"] =
        Truthy(hf_length) ? *hf_length : nlohmann::json(kDefaultMistralLength);
  }
  if (!c.contains("max_seq_len")) c["max_seq_len"] = c["max_position_embeddings"];
  if (!c.contains("dtype")) c["dtype"] = nullptr;

  KVTOPO_RETURN_IF_ERROR(ConvertSlidingWindow(r, c, layers));
  KVTOPO_RETURN_IF_ERROR(ConvertQuantization(r, c));
  KVTOPO_RETURN_IF_ERROR(ConvertArchitecture(r, c, layers));
  KVTOPO_RETURN_IF_ERROR(ConvertYarn(r, c));
  KVTOPO_RETURN_IF_ERROR(CheckLlama4Scaling(r, c, /*required=*/false));

  const nlohmann::json* multimodal = Find(c, "multimodal");
  if (multimodal != nullptr && !multimodal->is_null() && !multimodal->is_object()) {
    return r.Invalid("multimodal", fmt::format("must be an object, got {}", multimodal->dump()));
  }
  const bool vision = (multimodal != nullptr && Truthy(Find(*multimodal, "vision_encoder_args"))) ||
                      Truthy(Find(c, "vision_encoder"));
  const nlohmann::json* whisper =
      multimodal != nullptr ? Find(*multimodal, "whisper_model_args") : nullptr;
  const nlohmann::json* encoder = whisper != nullptr ? Find(*whisper, "encoder_args") : nullptr;
  const bool audio = Truthy(encoder);
  if (vision && audio) {
    return r.Invalid("multimodal",
                     "holds both a vision encoder and an audio encoder: the engine's converter "
                     "asserts one or the other");
  }
  // The wrapper the converter builds around the text config: its model type and architecture,
  // the encoder's config, and the text config's quantization copied up.
  auto wrap = [&c](const char* type, const char* architecture, const char* encoder_key,
                   nlohmann::json encoder_config) {
    nlohmann::json wrapper = {{"model_type", type},
                              {"architectures", {architecture}},
                              {encoder_key, std::move(encoder_config)}};
    if (c.contains("quantization_config"))
      wrapper["quantization_config"] = c["quantization_config"];
    wrapper["text_config"] = std::move(c);
    return wrapper;
  };
  nlohmann::json out;
  if (vision) {
    nlohmann::json vision_config;
    if (Truthy(multimodal)) {
      vision_config = *multimodal;
      c.erase("multimodal");
    } else {
      vision_config = c["vision_encoder"];
      c.erase("vision_encoder");
    }
    out = wrap("pixtral", "PixtralForConditionalGeneration", "vision_config",
               std::move(vision_config));
  } else if (audio) {
    if (!encoder->is_object()) {
      return r.Invalid("multimodal.whisper_model_args.encoder_args",
                       fmt::format("must be an object, got {}", encoder->dump()));
    }
    if (Truthy(Find(*encoder, "causal"))) {
      return r.Invalid("multimodal.whisper_model_args.encoder_args.causal",
                       "is true: the engine serves it as VoxtralRealtimeGeneration, whose causal "
                       "audio encoder keeps a paged sliding-window cache pooled over "
                       "downsample_factor blocks; kvtopo does not plan it");
    }
    nlohmann::json audio_config = *encoder;
    c.erase("multimodal");
    out =
        wrap("voxtral", "VoxtralForConditionalGeneration", "audio_config", std::move(audio_config));
  } else {
    out = std::move(c);
  }
  // The config.json beside params.json fills what the converted config's top level leaves out.
  if (hf_config.is_object()) {
    for (const auto& [key, value] : hf_config.items()) {
      if (!out.contains(key)) out[key] = value;
    }
  }
  // The converted config is a plain PretrainedConfig: no class defaults. A text model without
  // sliding_window has none, and one without n_kv_heads has a K/V head per attention head (the
  // engine's Llama attention's fallback).
  nlohmann::json& text =
      out.contains("text_config") && (vision || audio) ? out["text_config"] : out;
  if (!text.contains("sliding_window")) text["sliding_window"] = nullptr;
  if (!text.contains("num_key_value_heads")) {
    text["num_key_value_heads"] = text["num_attention_heads"];
  }
  return out;
}

}  // namespace kvtopo::internal
