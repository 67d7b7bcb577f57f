#include "internal/injected_faults.h"

#include "internal/checked_math.h"

namespace kvtopo::internal {

GroupGeometry DcpScaledRecurrentTable(const GroupGeometry& geometry) {
  GroupGeometry worker = geometry;
  if (geometry.kind != CacheKind::kRecurrent) return worker;
  worker.manager_table_width =
      CeilDiv(geometry.max_model_len, geometry.block_size * geometry.dcp_size) +
      geometry.num_speculative_blocks;
  worker.block_table_width = worker.manager_table_width;
  return worker;
}

}  // namespace kvtopo::internal
