// --speculative-config parsing (DESIGN.md §3 rule 3).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cctype>

#include "internal/ascii_case.h"
#include "internal/json_int.h"
#include "internal/json_text.h"
#include "internal/pydantic.h"
#include "kvtopo/backend.h"
#include "kvtopo/limits.h"
#include "kvtopo/model.h"
#include "model/config_fields.h"
#include "model/config_reader.h"
#include "model/kernel_backends.h"
#include "model/speculative_method.h"

namespace kvtopo {
namespace {

using internal::AsyncScheduling;
using internal::AuxHiddenStates;
using internal::DraftCache;
using internal::DraftPlacementRule;
using internal::DraftWindowKnob;
using internal::Proposer;
using internal::SpeculativeMethod;

// vLLM's speculative methods (docs/planner.md "Speculative methods" cites each column).
constexpr SpeculativeMethod kMethodTable[] = {
    {.name = "eagle",
     .cache = DraftCache::kExternal,
     .eagle_style = true,
     .use_eagle = true,
     .async = AsyncScheduling::kDefault,
     .proposer = Proposer::kHiddenStates},
    {.name = "eagle3",
     .cache = DraftCache::kExternal,
     .eagle_style = true,
     .use_eagle = true,
     .async = AsyncScheduling::kDefault,
     .aux_hidden_states = AuxHiddenStates::kUnlessDraftDeclines,
     .proposer = Proposer::kHiddenStates},
    {.name = "mtp",
     .cache = DraftCache::kInModel,
     .eagle_style = true,
     .use_eagle = true,
     .async = AsyncScheduling::kDefault,
     .placement = DraftPlacementRule::kShardedUnlessFalsy,
     .proposer = Proposer::kHiddenStates},
    {.name = "dspark",
     .cache = DraftCache::kExternal,
     .causal = false,
     .async = AsyncScheduling::kDefault,
     .placement = DraftPlacementRule::kReplicatedUnlessOne,
     .window = DraftWindowKnob::kDsparkKvWindow,
     .dcp_needs_dspark_backend = true},
    {.name = "dflash",
     .cache = DraftCache::kExternal,
     .causal = false,
     .use_eagle = true,
     .async = AsyncScheduling::kDefault,
     .placement = DraftPlacementRule::kReplicated,
     .window = DraftWindowKnob::kDflashWindowSize,
     .aux_hidden_states = AuxHiddenStates::kAlways,
     .proposer = Proposer::kDflash},
    {.name = "draft_model",
     .cache = DraftCache::kExternal,
     .async = AsyncScheduling::kOnRequest,
     .draft_tp_is_target_tp = true,
     .proposer = Proposer::kDraftModel},
    {.name = "ngram"},
    {.name = "ngram_gpu", .async = AsyncScheduling::kDefault},
    {.name = "suffix"},
    {.name = "medusa"},
    {.name = "mlp_speculator"},
    {.name = "extract_hidden_states",
     .async = AsyncScheduling::kDefault,
     .aux_hidden_states = AuxHiddenStates::kAlways},
    // A proposer class the engine imports from 'model' (custom_class_proposer.py): no draft
    // cache, async scheduling off.
    {.name = "custom_class"},
};
// The engine's MTPModelTypes other than "mtp" itself (vllm/config/speculative.py): each is
// accepted and becomes "mtp".
constexpr std::array<std::string_view, 16> kMtpAliases = {
    "deepseek_mtp",        "mimo_mtp",       "glm4_moe_mtp",   "glm4_moe_lite_mtp",
    "glm_ocr_mtp",         "ernie_mtp",      "nemotron_h_mtp", "exaone_moe_mtp",
    "exaone4_5_mtp",       "qwen3_next_mtp", "qwen3_5_mtp",    "longcat_flash_mtp",
    "pangu_ultra_moe_mtp", "step3p5_mtp",    "hy_v3_mtp",      "gemma4_mtp"};
// The methods whose 'model' the engine loads as a draft config with an n_predict
// (TakesDraftNPredict).
constexpr std::array<std::string_view, 6> kDraftNPredictMethods = {
    "eagle", "eagle3", "dflash", "draft_model", "medusa", "mlp_speculator"};
constexpr std::array<std::string_view, 16> kKeys = {"method",
                                                    "model",
                                                    "revision",
                                                    "quantization",
                                                    "num_speculative_tokens",
                                                    "draft_attention_backend",
                                                    "attention_backend",
                                                    "draft_kv_cache_dtype",
                                                    "dflash_draft_window_size",
                                                    "draft_tensor_parallel_size",
                                                    "parallel_drafting",
                                                    "disable_padded_drafter_batch",
                                                    "max_model_len",
                                                    "draft_model_config",
                                                    "suffix_decoding_max_tree_depth",
                                                    "moe_backend"};
// vLLM keys that do not change the KV-cache plan: accepted and reported as not used (the fork's
// SpeculativeConfig fields at 28be48fa9).
constexpr std::array<std::string_view, 13> kNotPlannedKeys = {"code_revision",
                                                              "prompt_lookup_max",
                                                              "prompt_lookup_min",
                                                              "enforce_eager",
                                                              "suffix_decoding_max_cached_requests",
                                                              "suffix_decoding_max_spec_factor",
                                                              "suffix_decoding_min_token_prob",
                                                              "rejection_sample_method",
                                                              "use_local_argmax_reduction",
                                                              "draft_load_config",
                                                              "synthetic_acceptance_rates",
                                                              "synthetic_acceptance_length",
                                                              "draft_sample_method"};
// SpeculativeConfig fields of older releases that the fork at 28be48fa9 no longer has (each
// stood 30 days or more since 2025-03-31), which its SpeculativeConfig (extra="forbid") refuses
// as it is built, and so does kvtopo, saying what they are:
// acceptance_method, disable_mqa_scorer and the typical acceptance sampler's
// posterior_threshold and posterior_alpha until 2025-07-19 (V0's), disable_logprobs until
// 2025-10-30, disable_by_batch_size until 2026-02-22, speculative_token_tree until 2026-05-07.
constexpr std::array<std::string_view, 7> kRemovedKeys = {
    "acceptance_method", "disable_mqa_scorer",    "posterior_threshold",   "posterior_alpha",
    "disable_logprobs",  "disable_by_batch_size", "speculative_token_tree"};

template <size_t N>
bool Contains(const std::array<std::string_view, N>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

Status Bad(std::string_view key, std::string_view rule) {
  return InvalidArgument(fmt::format("--speculative-config: '{}' {}", key, rule));
}

// `key` of `j` when given and not null: an integer in [1, max] (0 when absent or null), else an
// error naming the key and the value.
Result<int64_t> PositiveIntOrNull(const nlohmann::json& j, const char* key, int64_t max) {
  if (!j.contains(key) || j[key].is_null()) return int64_t{0};
  const std::optional<int64_t> n = internal::PydanticIntIn(j[key], 1, max);
  if (!n) {
    return Bad(key,
               fmt::format("must be an integer in [1, {}] or null, got {}", max, j[key].dump()));
  }
  return *n;
}

std::string MethodNames() {
  std::string out;
  for (const SpeculativeMethod& m : kMethodTable)
    out += (out.empty() ? "" : ", ") + std::string(m.name);
  return out;
}

// A backend value: null -> unset (""), "auto" -> `auto_value`, else a registered name.
Result<std::string> ParseBackendValue(const nlohmann::json& v, std::string_view key,
                                      std::string auto_value) {
  if (v.is_null()) return std::string();
  if (!v.is_string()) return Bad(key, "must be a backend name, \"auto\" or null");
  const std::string name = v.get<std::string>();
  if (internal::AsciiLower(name) == "auto") return auto_value;
  Result<BackendCaps> caps = FindBackend(name);
  if (!caps.ok()) {
    return InvalidArgument(
        fmt::format("--speculative-config: '{}': {}", key, caps.status().message()));
  }
  return caps->name;
}

}  // namespace

namespace internal {

const SpeculativeMethod* FindSpeculativeMethod(std::string_view name) {
  for (const SpeculativeMethod& m : kMethodTable) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

bool TakesDraftNPredict(std::string_view method) { return Contains(kDraftNPredictMethods, method); }

bool IsMtpModelType(std::string_view model_type) {
  return model_type == "mtp" || Contains(kMtpAliases, model_type);
}

bool DraftIsReplicated(const SpeculativeMethod& method, bool causal, ShardDraftRequest request) {
  switch (method.placement) {
    case DraftPlacementRule::kByCausality:
      return !causal && request != ShardDraftRequest::kOne && request != ShardDraftRequest::kTruthy;
    case DraftPlacementRule::kShardedUnlessFalsy:
      return request == ShardDraftRequest::kFalsy;
    case DraftPlacementRule::kReplicatedUnlessOne:
      return request != ShardDraftRequest::kOne;
    case DraftPlacementRule::kReplicated:
      return true;
  }
  return true;
}

}  // namespace internal

ShardDraftRequest ParseShardDraftRequest(std::string_view value) {
  const std::string v = internal::AsciiLower(value);
  if (v == "1") return ShardDraftRequest::kOne;
  if (v == "true" || v == "yes") return ShardDraftRequest::kTruthy;
  if (v == "0" || v == "false" || v == "no") return ShardDraftRequest::kFalsy;
  return ShardDraftRequest::kOther;
}

bool SpeculativeConfig::HasDraftCache() const {
  const SpeculativeMethod* m = internal::FindSpeculativeMethod(method);
  return m && m->cache != DraftCache::kNone;
}

bool SpeculativeConfig::AllowsAsyncScheduling() const {
  const SpeculativeMethod* m = internal::FindSpeculativeMethod(method);
  return m && m->async == AsyncScheduling::kDefault && !disable_padded_drafter_batch;
}

int64_t SpeculativeConfig::NewSlotsForDrafting() const {
  // DFlash drafts in parallel whatever the field says (the engine sets it).
  const bool parallel = parallel_drafting || method == "dflash";
  return (parallel && num_speculative_tokens > 0 ? num_speculative_tokens - 1 : 0) +
         (method == "draft_model" ? 1 : 0);
}

namespace {

// The types pydantic checks of the fields kvtopo does not plan with (SpeculativeConfig at
// 28be48fa9; the n-gram window's are checked with the method); draft_load_config is a LoadConfig,
// not checked inside.
const std::vector<VllmFlag::Key>& FieldsNotPlanned() {
  static const std::vector<VllmFlag::Key> kFields = {
      {.name = "code_revision", .type = "str", .nullable = true},
      {.name = "enforce_eager", .type = "bool", .nullable = true},
      {.name = "suffix_decoding_max_cached_requests", .type = "int"},
      {.name = "suffix_decoding_max_spec_factor", .type = "float"},
      {.name = "suffix_decoding_min_token_prob", .type = "float"},
      {.name = "rejection_sample_method",
       .type = "str",
       .choices = {"standard", "probabilistic", "synthetic"}},
      {.name = "use_local_argmax_reduction", .type = "bool"},
      {.name = "synthetic_acceptance_rates", .type = "list", .nullable = true},
      {.name = "synthetic_acceptance_length", .type = "float", .nullable = true},
      {.name = "draft_sample_method", .type = "str", .choices = {"greedy", "probabilistic"}},
  };
  return kFields;
}

// What SpeculativeConfig checks of those fields as the engine builds it (its __post_init__ and
// validators): suffix decoding's limits, the synthetic rejection sampler's acceptance. `spec` is
// the config parsed so far (its method and token count).
Status CheckFieldsNotPlanned(const nlohmann::json& j, const SpeculativeConfig& spec) {
  for (const VllmFlag::Key& field : FieldsNotPlanned()) {
    if (!j.contains(field.name)) continue;
    if (const std::string refusal = ConfigFieldRefusal(field, j[field.name]); !refusal.empty()) {
      return Bad(field.name, fmt::format("{} is refused by the engine ({})",
                                         internal::JsonText(j[field.name]), refusal));
    }
  }
  const auto refuse = [](std::string_view text, std::string_view fix) {
    return InvalidArgument(
        fmt::format("--speculative-config: the engine refuses it as it builds the config ({}); {}",
                    internal::QuotedMessage(text), fix));
  };
  const auto number = [&](const char* key) -> std::optional<double> {
    if (!j.contains(key) || j[key].is_null()) return std::nullopt;
    return internal::PydanticFloat(j[key]);
  };
  // Numbers as Python prints them in the engine's messages: a float field's value keeps its
  // point (pydantic makes -1 a float -1.0), an int field's has none.
  const auto py = [&](const char* key) {
    const bool float_field = std::string_view(key) != "suffix_decoding_max_cached_requests";
    return float_field ? internal::PythonFloatStr(*number(key)) : fmt::format("{}", *number(key));
  };
  if (spec.method == "suffix") {
    for (const char* key :
         {"suffix_decoding_max_cached_requests", "suffix_decoding_max_spec_factor"}) {
      if (const std::optional<double> v = number(key); v && *v < 0) {
        return refuse(fmt::format("{}={} must be >= 0", key, py(key)), "give 0 or more");
      }
    }
    const char* kProb = "suffix_decoding_min_token_prob";
    if (const std::optional<double> p = number(kProb); p && !(*p >= 0 && *p <= 1)) {
      return refuse(fmt::format("{}={} must be in [0, 1]", kProb, py(kProb)), "give a probability");
    }
  }
  const bool synthetic =
      j.contains("rejection_sample_method") && j["rejection_sample_method"] == "synthetic";
  const bool rates_given =
      j.contains("synthetic_acceptance_rates") && !j["synthetic_acceptance_rates"].is_null();
  const bool length_given =
      j.contains("synthetic_acceptance_length") && !j["synthetic_acceptance_length"].is_null();
  if (!synthetic && (rates_given || length_given)) {
    return refuse(
        "synthetic_acceptance_rates / synthetic_acceptance_length are only valid with "
        "rejection_sample_method='synthetic'.",
        "set rejection_sample_method to synthetic or drop them");
  }
  if (synthetic) {
    if (rates_given == length_given) {
      return refuse(
          "rejection_sample_method='synthetic' requires exactly one of "
          "synthetic_acceptance_rates or synthetic_acceptance_length.",
          "give one of them");
    }
    const int64_t n = spec.num_speculative_tokens;  // 0: known only once the draft is read
    if (rates_given) {
      std::vector<double> rates;
      std::vector<std::string> shown;
      for (const nlohmann::json& r : j["synthetic_acceptance_rates"]) {
        const std::optional<double> rate = internal::PydanticFloat(r);
        if (!rate) {
          return Bad("synthetic_acceptance_rates",
                     fmt::format("entry {} is refused by the engine ({})", internal::JsonText(r),
                                 internal::PydanticFloatRefusal(r)));
        }
        rates.push_back(*rate);
        shown.push_back(internal::PythonFloatStr(*rate));
      }
      const std::string list = fmt::format("[{}]", fmt::join(shown, ", "));
      if (n > 0 && static_cast<int64_t>(rates.size()) != n) {
        return refuse(
            fmt::format("synthetic_acceptance_rates must have length {}, got {}.", n, list),
            "give one rate per speculative token");
      }
      if (!std::all_of(rates.begin(), rates.end(), [](double r) { return r >= 0 && r <= 1; })) {
        return refuse(
            fmt::format("synthetic_acceptance_rates entries must be in [0, 1], got {}.", list),
            "give rates between 0 and 1");
      }
      for (size_t i = 1; i < rates.size(); ++i) {
        if (rates[i] > rates[i - 1]) {
          return refuse(
              fmt::format("synthetic_acceptance_rates must be non-increasing, got {}.", list),
              "order the rates from the first token down");
        }
      }
    } else if (n > 0) {
      const double length = *number("synthetic_acceptance_length");
      if (!(length >= 1 && length <= static_cast<double>(n + 1))) {
        return refuse(fmt::format("synthetic_acceptance_length must be in [1, {}], got {}.", n + 1,
                                  py("synthetic_acceptance_length")),
                      fmt::format("give a length from 1 to {}", n + 1));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<SpeculativeConfig> ParseSpeculativeConfig(std::string_view text) {
  KVTOPO_ASSIGN_OR_RETURN(nlohmann::json j, internal::ParseJsonText(text, "--speculative-config"));
  if (!j.is_object()) {
    return InvalidArgument(
        "--speculative-config must be a JSON object, e.g. "
        "'{\"method\":\"eagle3\",\"num_speculative_tokens\":3}'");
  }
  SpeculativeConfig spec;
  if (j.contains("tensor_parallel_size")) {
    // The engine keeps the field only to refuse it (SpeculativeConfig._verify_args).
    return Bad("tensor_parallel_size",
               "is not a valid argument in the speculative config (the engine refuses it); pass "
               "'draft_tensor_parallel_size' instead");
  }
  for (const auto& [key, value] : j.items()) {
    if (Contains(kRemovedKeys, key)) {
      return Bad(key,
                 "is a key of older releases the engine no longer has: it refuses it as it "
                 "builds the speculative config ('Unexpected keyword argument'); drop it");
    }
    if (Contains(kNotPlannedKeys, key)) {
      spec.not_planned_keys.push_back(key);
    } else if (!Contains(kKeys, key)) {
      return InvalidArgument(fmt::format(
          "--speculative-config: unknown key '{}'; accepted: {} (and, not used for planning: {})",
          key, fmt::join(kKeys, ", "), fmt::join(kNotPlannedKeys, ", ")));
    }
  }
  const bool method_given = j.contains("method") && !j["method"].is_null();
  const auto model_key = j.find("model");
  const std::string model_text = model_key != j.end() && model_key->is_string()
                                     ? model_key->get<std::string>()
                                     : std::string();
  if (method_given && !j["method"].is_string()) {
    return Bad("method", fmt::format("must be one of: {} (or a per-model MTP name such as {})",
                                     MethodNames(), kMtpAliases.front()));
  }
  if (method_given) {
    spec.method = internal::AsciiLower(j["method"].get<std::string>());
  } else if (model_text == "ngram" || model_text == "[ngram]") {
    // The engine's default (SpeculativeConfig.__post_init__): ngram for a model so named, else
    // draft_model, which its method detection may then change (internal::DetectDraftMethod).
    spec.method = "ngram";
  } else if (!model_text.empty()) {
    spec.method = "draft_model";
  } else {
    return Bad("method",
               fmt::format("is not set, nor is 'model': the engine then takes a draft model and "
                           "refuses the launch without one ('num_speculative_tokens was provided "
                           "but without speculative model'); set a method (one of: {}, or a "
                           "per-model MTP name such as {}) or a draft 'model'",
                           MethodNames(), kMtpAliases.front()));
  }
  if (spec.method == "[ngram]") spec.method = "ngram";
  if (Contains(kMtpAliases, spec.method)) {
    spec.method_alias = spec.method;
    spec.method = "mtp";
  }
  if (!internal::FindSpeculativeMethod(spec.method)) {
    return Bad("method", fmt::format("'{}' is not accepted; accepted: {}, and the per-model MTP "
                                     "names {}",
                                     spec.method, MethodNames(), fmt::join(kMtpAliases, ", ")));
  }
  if (j.contains("model") && !j["model"].is_null()) {
    if (!j["model"].is_string()) return Bad("model", "must be a draft profile name or a path");
    spec.model = j["model"].get<std::string>();
  }
  if (j.contains("revision") && !j["revision"].is_null()) {
    if (!j["revision"].is_string()) {
      return Bad("revision", "must be a branch, tag or commit name of the draft's repo");
    }
    spec.revision = j["revision"].get<std::string>();
  }
  // quantization: the draft's weights' method, compared as given with its checkpoint's.
  if (j.contains("quantization") && !j["quantization"].is_null()) {
    if (!j["quantization"].is_string()) {
      return Bad("quantization", "must be a quantization method's name (a string) or null");
    }
    spec.quantization = j["quantization"].get<std::string>();
  }
  if (spec.method == "custom_class" && spec.model.empty()) {
    return Bad("model",
               "is required for method 'custom_class': it names the proposer's module path "
               "(e.g. 'my_module.MyProposer'), and the engine refuses the method without it");
  }
  const bool tokens_given =
      j.contains("num_speculative_tokens") && !j["num_speculative_tokens"].is_null();
  const std::optional<int64_t> num_tokens =
      tokens_given ? internal::PydanticIntIn(j["num_speculative_tokens"], 1, kMaxSpeculativeTokens)
                   : std::nullopt;
  // prompt_lookup_min / _max (the n-gram window, not planned): integers of at least 1, and for
  // the n-gram methods the minimum at most the maximum (SpeculativeConfig.__post_init__; one
  // given stands for both).
  int64_t lookup[2] = {0, 0};
  const char* kLookupKeys[2] = {"prompt_lookup_min", "prompt_lookup_max"};
  for (int i = 0; i < 2; ++i) {
    KVTOPO_ASSIGN_OR_RETURN(lookup[i], PositiveIntOrNull(j, kLookupKeys[i], kMaxModelLen));
  }
  if ((spec.method == "ngram" || spec.method == "ngram_gpu") && lookup[0] > 0 && lookup[1] > 0 &&
      lookup[0] > lookup[1]) {
    return Bad("prompt_lookup_min",
               fmt::format("{} must be at most 'prompt_lookup_max' {}, as the engine requires",
                           lookup[0], lookup[1]));
  }
  // suffix_decoding_max_tree_depth (default 24) must be at least 1, and suffix decoding without a
  // count takes it as its most tokens a step (SpeculativeConfig._validate_suffix_decoding).
  int64_t suffix_depth = 24;
  if (j.contains("suffix_decoding_max_tree_depth")) {
    const std::optional<int64_t> depth =
        internal::PydanticIntIn(j["suffix_decoding_max_tree_depth"], 1, kMaxSpeculativeTokens);
    if (!depth) {
      return Bad("suffix_decoding_max_tree_depth",
                 fmt::format("must be an integer in [1, {}], got {}", kMaxSpeculativeTokens,
                             j["suffix_decoding_max_tree_depth"].dump()));
    }
    suffix_depth = *depth;
  }
  if (!tokens_given && spec.method == "suffix") {
    spec.num_speculative_tokens = suffix_depth;
  } else if (!tokens_given && !spec.model.empty() &&
             (spec.method == "mtp" || internal::TakesDraftNPredict(spec.method))) {
    // Left unset (0) for the model build, which names what the engine does with it: its method
    // detection raises for a draft that runs as MTP; another draft takes its config's n_predict,
    // and without one the launch is refused.
    spec.num_speculative_tokens = 0;
  } else if (!num_tokens) {
    return Bad(
        "num_speculative_tokens",
        fmt::format("must be an integer in [1, {}], got {}{}", kMaxSpeculativeTokens,
                    tokens_given ? j["num_speculative_tokens"].dump() : "nothing",
                    tokens_given ? ""
                                 : "; the engine fills it in only for suffix decoding and from "
                                   "the n_predict of a draft 'model''s config"));
  } else {
    spec.num_speculative_tokens = *num_tokens;
  }

  std::string alias;
  if (j.contains("attention_backend")) {
    // The alias: "auto" means unset, like the engine's upstream field.
    KVTOPO_ASSIGN_OR_RETURN(
        alias, ParseBackendValue(j["attention_backend"], "attention_backend", std::string()));
  }
  if (j.contains("draft_attention_backend")) {
    KVTOPO_ASSIGN_OR_RETURN(
        spec.draft_attention_backend,
        ParseBackendValue(j["draft_attention_backend"], "draft_attention_backend", "auto"));
  }
  if (spec.draft_attention_backend.empty()) spec.draft_attention_backend = alias;

  // moe_backend: a MoEBackend name exactly (SpeculativeConfig has no normalizing validator for
  // it) or null, the target's.
  if (j.contains("moe_backend") && !j["moe_backend"].is_null()) {
    const nlohmann::json& v = j["moe_backend"];
    const std::string name = v.is_string() ? v.get<std::string>() : "";
    if (std::find(internal::kMoeBackends.begin(), internal::kMoeBackends.end(), name) ==
        internal::kMoeBackends.end()) {
      return Bad("moe_backend",
                 fmt::format("must be one of the engine's MoE backends ({}) or null, got {}",
                             fmt::join(internal::kMoeBackends, ", "), internal::JsonText(v)));
    }
    spec.moe_backend = name;
  }
  if (j.contains("draft_kv_cache_dtype") && !j["draft_kv_cache_dtype"].is_null()) {
    if (!j["draft_kv_cache_dtype"].is_string()) {
      return Bad("draft_kv_cache_dtype", "must be a --kv-cache-dtype name or null");
    }
    KVTOPO_ASSIGN_OR_RETURN(spec.draft_kv_cache_dtype,
                            ParseEngineKvCacheDtype(j["draft_kv_cache_dtype"].get<std::string>(),
                                                    "--speculative-config: draft_kv_cache_dtype"));
  }
  KVTOPO_ASSIGN_OR_RETURN(spec.dflash_draft_window_size,
                          PositiveIntOrNull(j, "dflash_draft_window_size", kMaxModelLen));
  // The engine's field is an integer of at least 1 (or None); whether it fits the target's
  // tensor-parallel size is checked with the launch.
  KVTOPO_ASSIGN_OR_RETURN(spec.draft_tensor_parallel_size,
                          PositiveIntOrNull(j, "draft_tensor_parallel_size", kMaxParallelSize));
  // The engine's field is an integer of at least 1 (or None); the lengths it must not exceed
  // are checked with the launch.
  KVTOPO_ASSIGN_OR_RETURN(spec.max_model_len, PositiveIntOrNull(j, "max_model_len", kMaxModelLen));
  for (auto [key, out] :
       {std::pair{"parallel_drafting", &spec.parallel_drafting},
        std::pair{"disable_padded_drafter_batch", &spec.disable_padded_drafter_batch}}) {
    if (!j.contains(key)) continue;
    const std::optional<bool> b = internal::PydanticBool(j[key]);
    if (j[key].is_null() || !b) {
      return Bad(key, fmt::format("must be true or false, got {}", j[key].dump()));
    }
    *out = *b;
  }
  // draft_model_config: for extract_hidden_states, config values over the target's, of which the
  // layer ids matter (SpeculativeConfig.__post_init__ reads its hf_config); another method's
  // draft config is the engine's own.
  if (j.contains("draft_model_config")) {
    const nlohmann::json& d = j["draft_model_config"];
    if (spec.method != "extract_hidden_states") {
      return Bad("draft_model_config",
                 fmt::format("is read only by method extract_hidden_states, not '{}' (the engine "
                             "builds that method's draft config itself); drop it",
                             spec.method));
    }
    if (!d.is_object() || (d.contains("hf_config") && !d["hf_config"].is_object())) {
      return Bad("draft_model_config",
                 fmt::format("must be an object whose 'hf_config' is an object, got {}", d.dump()));
    }
    const nlohmann::json none;
    const nlohmann::json& hf = d.contains("hf_config") ? d["hf_config"] : none;
    if (hf.contains("eagle_aux_hidden_state_layer_ids")) {
      const nlohmann::json& ids = hf["eagle_aux_hidden_state_layer_ids"];
      bool ok = ids.is_array() || ids.is_null();
      spec.extract_layer_ids.emplace();  // given, even empty or null: the engine takes it
      for (size_t i = 0; ok && ids.is_array() && i < ids.size(); ++i) {
        const std::optional<int64_t> id = internal::JsonIntIn(ids[i], INT32_MIN, INT32_MAX);
        ok = id.has_value();
        if (ok) spec.extract_layer_ids->push_back(*id);
      }
      if (!ok) {
        return Bad("draft_model_config",
                   fmt::format("'hf_config.eagle_aux_hidden_state_layer_ids' must be a list of "
                               "target layer ids, got {}",
                               ids.dump()));
      }
    }
  }
  // The engine drafts every DFlash token in one pass (SpeculativeConfig.__post_init__).
  if (spec.method == "dflash") spec.parallel_drafting = true;
  KVTOPO_RETURN_IF_ERROR(CheckFieldsNotPlanned(j, spec));
  return spec;
}

}  // namespace kvtopo
