// Renderings of a Plan: the stable JSON schema (docs/plan-json.md), a readable table for a
// terminal, and an SVG drawing of the pool. Pure functions of the plan.
#pragma once

#include <string>

#include "kvtopo/plan.h"

namespace kvtopo {

inline constexpr int kPlanJsonSchemaVersion = 2;

// The widest indent the JSON writers take (the JSON library's indent buffer grows by doubling one
// level at a time, which a step above 512 spaces outruns).
inline constexpr int kMaxJsonIndent = 64;
// The plan as JSON text (schema kPlanJsonSchemaVersion, docs/plan-json.md); `indent` spaces per
// level in [0, kMaxJsonIndent], -1 for one line; another indent is a programmer error (checked).
std::string PlanToJsonText(const Plan& plan, int indent = 2);
std::string FormatPlanTable(const Plan& plan);
std::string RenderPlanSvg(const Plan& plan);

// "12.00 GiB", "58.6 KiB", "512 B".
std::string FormatBytes(int64_t bytes);
// "5,974,904", as the engine logs token counts.
std::string GroupedThousands(int64_t value);

}  // namespace kvtopo
