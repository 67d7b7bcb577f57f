"""kvtopo: KV-cache topology planner and runtime for decode context parallelism (DCP).

Planning::

    plan = kvtopo.plan("kimi-k3", tensor_parallel_size=16, decode_context_parallel_size=16)
    plan.groups, plan.capacity, plan.to_json()
    kvtopo.check(tensor_parallel_size=16, decode_context_parallel_size=8)  # accepted, diagnostics

Options are the CLI's long flag names with underscores (``kvtopo.option_names()``); they mean
exactly what the flags of ``kvtopo plan`` mean. Runtime: ``KVCacheManager(plan)`` on the
scheduler, ``BlockTable(group.geometry, num_rows)`` and ``slot_mapping`` / ``local_seq_len`` on
each worker rank. Arrays are returned as memoryviews (int32 or int64), no NumPy needed.

Errors: ValueError / TypeError for bad arguments, RejectedError for a launch that cannot run,
LookupError for an unknown model or backend, KeyError for an unknown request id.
"""

from ._kvtopo import (  # noqa: F401
    BlockTable,
    Capacity,
    CheckResult,
    ComputedBlocks,
    Diagnostic,
    Group,
    GroupGeometry,
    KVCacheInspector,
    KVCacheManager,
    Plan,
    PoolLayout,
    Promotion,
    RejectedError,
    StepResult,
    __version__,
    check,
    fill_local_seq_lens,
    holds_position,
    local_seq_len,
    local_seq_len_of_slice,
    option_names,
    owner_slice,
    parse_byte_size,
    plan,
    profiles,
    slot_mapping,
)


def int_buffer(values, int64=False):
    """An int32 (or int64) array.array of `values`: an input buffer the batched calls read
    without copying, for an engine to keep between steps."""
    import array
    return array.array("q" if int64 else "i", values)


def local_seq_lens(geometry, rank, seq_lens, num_rows=None):
    """Rank-local lengths of `seq_lens` for `geometry`'s group on `rank` (int32 memoryview)."""
    num_shards = geometry.dcp_shard_count if geometry.interleaved_slots else 1
    return fill_local_seq_lens(seq_lens, num_shards, rank % num_shards, geometry.interleave,
                               num_rows)


__all__ = [
    "BlockTable", "Capacity", "CheckResult", "ComputedBlocks", "Diagnostic", "Group",
    "GroupGeometry", "KVCacheInspector", "KVCacheManager", "StepResult", "int_buffer", "Plan", "PoolLayout", "Promotion", "RejectedError",
    "check", "fill_local_seq_lens", "holds_position", "local_seq_len", "local_seq_len_of_slice",
    "local_seq_lens", "option_names", "owner_slice", "parse_byte_size", "plan", "profiles",
    "slot_mapping", "__version__",
]
