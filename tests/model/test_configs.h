// Configs and a plan helper the model tests share.
#pragma once

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kvtopo/launch.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"

namespace kvtopo::testing_configs {

// The engine's refusal of a config field of older releases (OlderFieldRefusal's words): `fix` is
// "drop it" or "give ... instead".
inline std::string Older(std::string_view where, std::string_view key, std::string_view fix) {
  return fmt::format(
      "{}: '{}' is a field of older releases the engine no longer takes (its parser refuses it: "
      "'Unexpected keyword argument'); {}",
      where, key, fix);
}

// The message of a launch's only diagnostic, which must have `code`; else what was found instead
// (an error, or the codes of the diagnostics), which an assertion on the message then shows.
inline std::string OnlyLaunchDiagnostic(const Result<LaunchConfig>& c, std::string_view code) {
  if (!c.ok()) return "not read: " + c.status().ToString();
  const std::vector<Diagnostic>& d = c->launch_diagnostics;
  if (d.size() == 1 && d[0].code == code) return d[0].message;
  std::string codes;
  for (const Diagnostic& each : d) codes += " " + each.code;
  return fmt::format("{} launch diagnostics, not one {}:{}", d.size(), code, codes);
}

// Llama-3.1-8B's config.json (the fields the cache depends on).
inline nlohmann::json Llama31_8B() {
  return nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "max_position_embeddings": 131072, "torch_dtype": "bfloat16"})");
}

// A config of the fuzzing corpus (fuzz/corpus/config_plan/<stem>.json), as a user's own
// config.json.
inline nlohmann::json CorpusConfig(const std::string& stem) {
  std::ifstream in(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/" + stem + ".json");
  return nlohmann::json::parse(in);
}

// Plans `config` as the model of launch `c`.
inline Result<Plan> PlanWith(const nlohmann::json& config, LaunchConfig c) {
  c.model = "config.json";
  KVTOPO_ASSIGN_OR_RETURN(ModelCacheSpecs specs, BuildModelCacheSpecsFromJson(config, c));
  return PlanLaunchSpecs(specs, c);
}

// The message of the plan's last diagnostic with `code`; "" when there is none.
inline std::string DiagnosticMessage(const Plan& plan, std::string_view code) {
  std::string message;
  for (const Diagnostic& d : plan.diagnostics) {
    if (d.code == code) message = d.message;
  }
  return message;
}

}  // namespace kvtopo::testing_configs
