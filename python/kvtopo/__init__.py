"""kvtopo: KV-cache topology planner and runtime for decode context parallelism (DCP).

Planning::

    plan = kvtopo.plan("kimi-k3", tensor_parallel_size=16, decode_context_parallel_size=16)
    plan.groups, plan.capacity, plan.to_json()
    kvtopo.check(tensor_parallel_size=16, decode_context_parallel_size=8)  # accepted, diagnostics

Options are the CLI's long flag names with underscores (``kvtopo.option_names()``); they mean
exactly what the flags of ``kvtopo plan`` mean. Runtime: ``KVCacheManager(plan)`` on the
scheduler, ``BlockTable(group.geometry, num_rows)`` and ``slot_mapping`` / ``local_seq_lens`` on
each worker rank: every DCP rule (which rank holds a position, rank-local lengths) is asked of a
group's geometry, never computed from raw integers. Arrays are returned as memoryviews (int32 or int64), no NumPy needed.

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
    holds_position,
    local_seq_len,
    local_seq_lens,
    option_names,
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


__all__ = [
    "BlockTable", "Capacity", "CheckResult", "ComputedBlocks", "Diagnostic", "Group",
    "GroupGeometry", "KVCacheInspector", "KVCacheManager", "StepResult", "int_buffer", "Plan", "PoolLayout", "Promotion", "RejectedError",
    "check", "holds_position", "local_seq_len", "local_seq_lens", "option_names",
    "parse_byte_size", "plan", "profiles",
    "slot_mapping", "__version__",
]
