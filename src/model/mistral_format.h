// Mistral-format checkpoints: a `params.json` in Mistral's own key names, which the engine
// converts into a Hugging Face-style config before it builds the model (`--config-format
// mistral`, or `auto` when the directory holds params.json and consolidated*.safetensors).
// docs/profiles.md ("Mistral-format checkpoints") states the rules and their source.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kvtopo/status.h"

namespace kvtopo::internal {

// The config the engine builds from `params` (read from `file`, named in messages). `hf_config`
// is the config.json beside it (null or empty when there is none): it supplies the default
// length, and its keys fill what the converted config's top level leaves out.
Result<nlohmann::json> ConvertMistralParams(const nlohmann::json& params, const std::string& file,
                                            const nlohmann::json& hf_config);

}  // namespace kvtopo::internal
