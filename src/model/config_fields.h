// Internal: a JSON config class's fields as the engine's pydantic configs check them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kvtopo/launch_options.h"

namespace kvtopo {

// The reason pydantic's lax mode refuses `value` for `field` as a config class reads its JSON
// (TypeAdapter.validate_json), in pydantic's words ("Input should be a valid integer", "Input
// should be 'a' or 'b'", "Input should be greater than or equal to 1"), or empty when it takes it.
std::string ConfigFieldRefusal(const VllmFlag::Key& field, const nlohmann::json& value);

// A field of older releases that the fork at 28be48fa9 no longer has, refused as its parser
// refuses it ('Unexpected keyword argument'), naming the form its deprecation gave the value
// given (`form`; empty: none, or the value was the default).
Status OlderFieldRefusal(std::string_view where, std::string_view key, std::string_view form);

// A config class's JSON value as the engine's parser reads it (parse_dataclass: bare numbers
// with k/m/g/t suffixes expanded first, "80m" outside strings is 80000000); `what` names it.
Result<nlohmann::json> ParseConfigClassJson(std::string_view text, std::string_view what);

}  // namespace kvtopo
