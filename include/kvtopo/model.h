// The model layer: from a HF config.json (or an embedded profile) plus the launch options to
// the per-layer cache specs of the target and its draft, with the DCP placement rules applied
// and the launch validated against the backend registry (DESIGN.md §3 rules 2, 3 and 5).
//
// Models are named by an embedded profile name (`kvtopo profiles` lists them), a path to a
// config.json, or a directory holding one. Unknown architectures and missing or ill-typed
// fields are errors that name the field and the file; nothing is guessed.
//
// Errors vs diagnostics: a Status error means the input could not be read (bad JSON, unknown
// model, missing field, unknown backend name); a readable but unrunnable launch returns specs
// with error Diagnostics instead, so `check` can report every problem at once.
//
// Thread safety: pure functions; BuildModelCacheSpecs reads the files the config names.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kvtopo/launch.h"
#include "kvtopo/status.h"

namespace kvtopo {

// The seeds' launch: kimi-k3, TP16/DCP16, DSpark draft kimi-k3-dspark with 7 tokens, block 768,
// max_model_len 1,000,000, fp8 MLA cache, B12X_MLA for target and draft.
LaunchConfig DefaultLaunchConfig();

// Parses --speculative-config. Keys: method, model, num_speculative_tokens,
// draft_attention_backend, attention_backend (alias), draft_kv_cache_dtype,
// dflash_draft_window_size. Unknown keys or values are InvalidArgument errors listing the
// accepted ones; malformed JSON is a one-line InvalidArgument.
Result<SpeculativeConfig> ParseSpeculativeConfig(std::string_view json);

// Resolves `config.model` and builds every cache spec of the launch.
Result<ModelCacheSpecs> BuildModelCacheSpecs(const LaunchConfig& config);
// The same from an already-parsed config.json (e.g. a Python dict); `config.model` is only
// used as the display name. A draft named by the speculative config is still resolved.
Result<ModelCacheSpecs> BuildModelCacheSpecsFromJson(const nlohmann::json& model_config,
                                                     const LaunchConfig& config);

// One embedded profile, for listings.
struct ProfileInfo {
  std::string name;          // file stem under profiles/
  std::string kind;          // "target", "draft" or "backends"
  std::string architecture;  // architectures[0]; empty for the backend registry
  int64_t num_layers = 0;    // cache layers of the model (trunk + MTP); backends: entries
};
Result<std::vector<ProfileInfo>> ListProfiles();

// The config.json architectures kvtopo plans natively, sorted (`kvtopo profiles
// --architectures`).
std::vector<std::string> ListArchitectures();

}  // namespace kvtopo
