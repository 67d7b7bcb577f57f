// Internal: the plan's JSON document (docs/plan-json.md) as an nlohmann::json value, for the
// fronts that pick fields from it (kvtopo check --json, the Python dict views). Users get the
// text through PlanToJsonText (kvtopo/plan_report.h).
#pragma once

#include <nlohmann/json.hpp>

#include "kvtopo/plan.h"

namespace kvtopo::internal {

nlohmann::json PlanToJson(const Plan& plan);
// The "diagnostics" array of that document: severity, code and message per finding.
nlohmann::json DiagnosticsToJson(const std::vector<Diagnostic>& diagnostics);

}  // namespace kvtopo::internal
