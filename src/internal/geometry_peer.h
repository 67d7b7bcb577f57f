// Access to a GroupGeometry's fields for negative controls that must build a deliberately wrong
// geometry (the simulator's and the verifier's injected seed bugs) and for tests. Nothing else
// may construct or alter a GroupGeometry outside ComputeGroupGeometry.
#pragma once

#include "kvtopo/geometry.h"

namespace kvtopo::internal {

class GroupGeometryPeer {
 public:
  // The seed #418 bug: a recurrent group's worker table DCP-scaled as if recurrent state were
  // sharded by position, cdiv(L, B * N) + S columns (other kinds are returned unchanged).
  static GroupGeometry WithDcpScaledRecurrentTable(const GroupGeometry& geometry);
};

}  // namespace kvtopo::internal
