// Renderings of a Plan: the stable JSON schema (docs/plan-json.md), a readable table for a
// terminal, and an SVG drawing of the pool. Pure functions of the plan.
#pragma once

#include <string>

#include "kvtopo/plan.h"

namespace kvtopo {

inline constexpr int kPlanJsonSchemaVersion = 2;

// The plan as JSON text (schema kPlanJsonSchemaVersion, docs/plan-json.md); `indent` spaces per
// level, -1 for one line.
std::string PlanToJsonText(const Plan& plan, int indent = 2);
std::string FormatPlanTable(const Plan& plan);
std::string RenderPlanSvg(const Plan& plan);

// "12.00 GiB", "58.6 KiB", "512 B".
std::string FormatBytes(int64_t bytes);
// "5,974,904", as the engine logs token counts.
std::string GroupedThousands(int64_t value);

}  // namespace kvtopo
