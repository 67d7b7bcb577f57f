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

import json as _json

from ._kvtopo import (  # noqa: F401
    BlockTable,
    CheckResult,
    ComputedBlocks,
    Diagnostic,
    GroupGeometry,
    KVCacheInspector,
    KVCacheManager,
    Plan,
    RejectedError,
    StepResult,
    __version__,
    architectures,
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


class Record:
    """A read-only attribute view of one object of a plan's JSON (docs/plan-json.md)."""

    __slots__ = ("_fields",)

    def __init__(self, fields):
        object.__setattr__(self, "_fields", fields)

    def __getattr__(self, name):
        # Private and special names are never fields: copy and pickle probe them on an instance
        # whose slots are not set yet, where reading _fields would recurse.
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is read-only")

    # Read-only: a copy may be the object itself.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __eq__(self, other):
        return type(self) is type(other) and self._fields == other._fields

    def to_dict(self):
        return dict(self._fields)

    def __repr__(self):
        return f"{type(self).__name__}({self._fields!r})"


class Capacity(Record):
    """What the pool holds: tokens and max-length requests (the JSON's "capacity")."""


class PoolLayout(Record):
    """The shared block pool (the JSON's "pool"): num_blocks, bytes_per_block, regions."""


class Promotion(Record):
    """Promotion of replicated sliding-window draft blocks (the JSON's "promotion")."""


class Group(Record):
    """One cache group of a plan: its JSON fields, its GroupGeometry (.geometry) and, through
    it, the geometry's other fields (manager_table_width, interleave, ...)."""

    __slots__ = ("geometry",)

    def __init__(self, fields, geometry):
        super().__init__(fields)
        object.__setattr__(self, "geometry", geometry)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._fields[name]
        except KeyError:
            return getattr(self.geometry, name)


_MODEL_FIELDS = {"model_name": "name", "architecture": "architecture", "draft_name": "draft",
                 "max_model_len": "max_model_len",
                 "num_speculative_tokens": "num_speculative_tokens",
                 "num_lookahead_tokens": "num_lookahead_tokens"}
_RECORDS = {"pool": PoolLayout, "capacity": Capacity, "promotion": Promotion,
            "split_pools": Record}


def _plan_attribute(plan, name):
    """Plan attributes beyond accepted/diagnostics/geometries: views of plan.to_json()."""
    if name.startswith("_"):
        raise AttributeError(name)
    view = plan.__dict__.get("_json")
    if view is None:
        view = plan.__dict__["_json"] = _json.loads(plan.to_json(indent=-1))
    if name in _MODEL_FIELDS:
        return view["model"][_MODEL_FIELDS[name]]
    if name == "groups":
        return [Group(g, geo) for g, geo in zip(view["groups"], plan.geometries)]
    if name == "kv_cache_memory_is_default":
        return view["capacity"]["kv_cache_memory_is_default"]
    if name in _RECORDS:
        return _RECORDS[name](view[name])
    if name in view:
        return view[name]
    raise AttributeError(f"Plan has no attribute {name!r}")


Plan.__getattr__ = _plan_attribute


def int_buffer(values, int64=False):
    """A writable int32 (or int64) memoryview of `values`: an input buffer the batched calls
    read in place, for an engine to keep between steps (``buf[i] = n`` updates it)."""
    import array
    return memoryview(array.array("q" if int64 else "i", values))


__all__ = [
    "BlockTable", "Capacity", "CheckResult", "ComputedBlocks", "Diagnostic", "Group",
    "GroupGeometry", "KVCacheInspector", "KVCacheManager", "StepResult", "int_buffer", "Plan",
    "PoolLayout", "Promotion", "Record", "RejectedError",
    "architectures", "check", "holds_position", "local_seq_len", "local_seq_lens", "option_names",
    "parse_byte_size", "plan", "profiles",
    "slot_mapping", "__version__",
]
