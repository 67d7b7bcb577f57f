// The launch rules over a planned layout (src/plan/launch_rules.cc): every planned attention
// layer against its backend's capabilities and its group's final geometry.
#pragma once

#include "kvtopo/launch.h"
#include "kvtopo/plan.h"
#include "kvtopo/status.h"

namespace kvtopo::internal {

// Appends an error diagnostic to `plan` for every rule a planned layer breaks (each names the
// value and the knob). Errors are only the registry failing to name a layer's backend.
Status CheckLaunchRules(const LaunchConfig& launch, Plan& plan);

}  // namespace kvtopo::internal
