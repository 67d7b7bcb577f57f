// JSON text for output. Strings in a report can come from the user unvalidated (a config path,
// an environment value, a --speculative-config.KEY value): bytes that are not UTF-8 are written
// as U+FFFD instead of making nlohmann's dump throw.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kvtopo::internal {

// j.dump(indent) that never throws on invalid UTF-8 (indent -1: one line).
inline std::string JsonText(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kvtopo::internal
