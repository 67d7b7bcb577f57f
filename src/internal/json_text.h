// JSON text in and out. In: user text parsed into a one-line error that names its source. Out:
// strings in a report can come from the user unvalidated (a config path, an environment value,
// a --speculative-config.KEY value): bytes that are not UTF-8 are written as U+FFFD instead of
// making nlohmann's dump throw.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kvtopo/plan_report.h"
#include "kvtopo/status.h"

namespace kvtopo::internal {

// Parses JSON text; a one-line InvalidArgument naming `what` on malformed input.
Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view what);

// j.dump(indent) that never throws on invalid UTF-8 (indent -1: one line; at most
// kMaxJsonIndent, which front ends check first).
inline std::string JsonText(const nlohmann::json& j, int indent = -1) {
  KVTOPO_CHECK(indent >= -1 && indent <= kMaxJsonIndent);
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kvtopo::internal
