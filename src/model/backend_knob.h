// The knob that picks a layer's attention backend, named in diagnostics about it.
#pragma once

#include <string>

#include "kvtopo/spec.h"

namespace kvtopo::internal {

inline std::string RoleKnob(const LayerSpec& s) {
  return s.role == Role::kTarget ? "--attention-backend"
                                 : "the speculative config's draft_attention_backend";
}

}  // namespace kvtopo::internal
