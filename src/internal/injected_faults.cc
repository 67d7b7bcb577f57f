#include "internal/injected_faults.h"

#include "internal/checked_math.h"

namespace kvtopo::internal {

GroupGeometry DcpScaledRecurrentTable(const GroupGeometry& geometry) {
  GroupGeometry worker = geometry;
  if (worker.kind_ != CacheKind::kRecurrent) return worker;
  // The pre-fix rule of seed #418: recurrent columns DCP-scaled, cdiv(L, B * N) + S.
  worker.manager_table_width_ =
      CeilDiv(worker.max_model_len_, worker.block_size_ * worker.dcp_size_) +
      worker.num_speculative_blocks_;
  worker.block_table_width_ = worker.manager_table_width_;
  return worker;
}

}  // namespace kvtopo::internal
