// Known bugs, reproduced on purpose: `kvtopo simulate --inject-dcp-scaled-recurrent-table` and
// `kvtopo verify --inject ...` run them to show that their checks catch them. Nothing else may
// call these.
#pragma once

#include "kvtopo/geometry.h"

namespace kvtopo::internal {

// The worker geometry of a recurrent group as engines built it before the per-group geometry:
// the table DCP-scaled to cdiv(L, B * N) + S columns, as if recurrent state were sharded by
// position. Other groups are returned unchanged.
GroupGeometry DcpScaledRecurrentTable(const GroupGeometry& geometry);

}  // namespace kvtopo::internal
