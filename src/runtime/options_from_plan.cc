// KVCacheManagerOptions from a plan: the one place the simulator, the Python module and the
// benchmarks turn planned groups into the runtime's options.
#include <fmt/format.h>

#include <limits>

#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/plan.h"

namespace kvtopo {

Result<KVCacheManagerOptions> KVCacheManagerOptions::FromPlan(
    const Plan& plan, std::optional<int64_t> num_blocks,
    std::optional<bool> enable_prefix_caching) {
  if (!plan.accepted()) {
    return Rejected("cannot build a KVCacheManager from a rejected plan of " +
                    plan.model.model_name + plan.ErrorLines());
  }
  const int64_t blocks = num_blocks.value_or(plan.pool.num_blocks);
  if (blocks < 1) {
    return InvalidArgument(
        fmt::format("num_blocks must be at least 1 (the null block), got {}", blocks));
  }
  if (blocks > std::numeric_limits<int32_t>::max()) {
    return OutOfRange(
        fmt::format("a pool of {} blocks exceeds 32-bit block ids; pass num_blocks", blocks));
  }
  KVCacheManagerOptions options;
  options.num_blocks = static_cast<int32_t>(blocks);
  options.enable_prefix_caching = enable_prefix_caching.value_or(plan.prefix_caching());
  // A plan made without prefix caching keeps its recurrent groups in mode none: one state per
  // request in a block of the whole length, which no prefix can hit (the planner turns mode
  // align on with prefix caching, and with it a block the hash unit divides).
  if (options.enable_prefix_caching && !plan.prefix_caching()) {
    for (size_t i = 0; i < plan.groups.size(); ++i) {
      const GroupGeometry& geo = plan.groups[i].geometry;
      if (geo.kind() == CacheKind::kRecurrent && geo.recurrent_mode() == RecurrentMode::kNone) {
        return InvalidArgument(fmt::format(
            "enable_prefix_caching on a plan of {} made without prefix caching: its recurrent "
            "cache group {} keeps one state per request (mamba cache mode none, {}-token "
            "blocks), which no prefix can hit; plan with enable_prefix_caching (mamba cache "
            "mode align) instead",
            plan.model.model_name, i, geo.manager_block_size()));
      }
    }
  }
  options.hash_block_size = plan.hash_block_size;
  options.max_model_len = plan.model.max_model_len;
  for (const PlannedGroup& g : plan.groups) {
    options.groups.push_back({.geometry = g.geometry,
                              .volatile_last_block = g.spec.volatile_last_block,
                              .cross_attention = g.spec.cross_attention,
                              .layer_names = g.layers});
  }
  return options;
}

}  // namespace kvtopo
