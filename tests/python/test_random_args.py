"""Every public callable of the module, called with seeded random arguments: each call returns or
raises a Python exception with a message; none crashes the interpreter, and none raises
SystemError (a C-API misuse: an error return without an exception, or the reverse)."""

import random
import unittest

import kvtopo

LAYOUT = {"num_blocks": 64, "max_model_len": 4096, "groups": [
    {"kind": "full_attention", "block_size": 16, "page_size_bytes": 64},
    {"kind": "sliding_window", "block_size": 16, "sliding_window": 64, "page_size_bytes": 64},
    {"kind": "mamba", "block_size": 16, "page_size_bytes": 64, "mamba_cache_mode": "align"}]}

# Keywords the module's callables take (and a few they do not).
KEYWORDS = ["num_lookahead_tokens", "num_new_computed_tokens", "new_computed_blocks",
            "num_external_computed_tokens", "delay_cache_blocks", "full_sequence_must_fit",
            "num_encoder_tokens", "handles", "num_new_tokens", "token_ids", "counts", "group",
            "rank", "positions", "num_slots", "compress_ratio", "block_size",
            "tensor_parallel_size", "decode_context_parallel_size", "max_model_len",
            "kv_cache_memory", "model", "dtype", "num_blocks", "enable_prefix_caching",
            "lora_name", "mm_features", "cache_salt", "swap_space", "cuda_graph_sizes",
            "speculative_model", "no_such_keyword"]


def values(manager, handles, rng):
    """A pool of arguments: wrong types, edge ints, buffers, ids that exist and ones that do
    not. Nothing here asks for an unbounded amount of memory by itself."""
    pool = [None, True, False, 0, 1, 2, 3, 15, 16, 17, 64, 4095, 4096, 4097, -1, -16, 2 ** 31 - 1,
            2 ** 31, -2 ** 31 - 1, 2 ** 63 - 1, -2 ** 63, 2 ** 64, 10 ** 30, 0.0, 1.5, -2.5,
            float("nan"), float("inf"), "", "r0", "r1", "nope", "kimi-k3", "gpt-oss-120b",
            "12GiB", "float32", "-1", "\udcff", b"", b"\xff\x00", bytearray(8), [], [0], [1, 2, 3],
            [-1], [2 ** 40], [1.5], ["x"], [[1]], (1, 2), {}, {"a": 1}, {"num_blocks": 3},
            set(), object(), range(5), range(10 ** 12, 10 ** 12 + 3), memoryview(b"abcd"),
            memoryview(bytearray(16)).cast("i"), memoryview(bytearray(16)).cast("q"),
            memoryview(bytearray(16)).cast("d"), kvtopo.int_buffer([1, 2]),
            kvtopo.int_buffer([]), kvtopo.int_buffer([-5]), handles,
            list(handles), [rng.randrange(100) for _ in range(rng.randrange(40))],
            kvtopo.Plan.__new__(kvtopo.Plan), kvtopo.GroupGeometry.__new__(kvtopo.GroupGeometry)]
    try:
        pool.append(manager.handle("r0"))
    except Exception:  # r0 may have been freed
        pass
    return pool


def shown(value):
    """repr() for a failure message; an object made by __new__ without __init__ refuses repr."""
    try:
        return repr(value)
    except TypeError as e:
        return f"<{type(value).__name__}: {e}>"


def call_text(name, args, kwargs):
    return (f"{name}(*[{', '.join(shown(a) for a in args)}], "
            f"**{{{', '.join(f'{k!r}: {shown(v)}' for k, v in kwargs.items())}}})")


def callables(objects):
    out = []
    for obj in objects:
        for name in dir(obj):
            if name.startswith("_"):
                continue
            try:
                attr = getattr(obj, name)
            except Exception as e:  # a property that raises must say why
                assert str(e), f"{type(obj).__name__}.{name}"
                continue
            if callable(attr) and not isinstance(attr, type):
                out.append((f"{type(obj).__name__}.{name}", attr))
    return out


class RandomArguments(unittest.TestCase):
    def test_every_callable_returns_or_raises_a_clear_exception(self):
        rng = random.Random(20261201)
        calls = raised = 0
        for round_ in range(40):
            manager = kvtopo.KVCacheManager.from_layout(LAYOUT)
            manager.add_request("r0", list(range(100)))
            handles = manager.add_requests(["r1", "r2"], [list(range(40)), list(range(70))])
            step = manager.allocate_slots_batch(handles, 16)
            plan = kvtopo.plan("qwen3-next-80b", tensor_parallel_size=4, max_model_len=4096,
                               kv_cache_memory="8GiB")
            geometry = plan.geometries[0]
            table = kvtopo.BlockTable(geometry, 4) if round_ % 2 else None
            objects = [kvtopo, manager, manager.inspector(), step, plan, geometry,
                       plan.groups[0], manager.get_computed_blocks("r0")]
            if table is not None:
                objects.append(table)
            if round_ % 4 == 3:  # objects made by __new__ without __init__
                objects += [cls.__new__(cls) for cls in (kvtopo.KVCacheManager, kvtopo.BlockTable,
                                                         kvtopo.StepResult, kvtopo.Plan)]
            targets = callables(objects)
            pool = values(manager, handles, rng)
            for _ in range(700):
                name, fn = rng.choice(targets)
                if name in ("kvtopo.profiles",):  # no arguments and a large result: once is enough
                    continue
                args = [rng.choice(pool) for _ in range(rng.randrange(5))]
                kwargs = {rng.choice(KEYWORDS): rng.choice(pool) for _ in range(rng.randrange(3))}
                calls += 1
                try:
                    fn(*args, **kwargs)
                except SystemError as e:
                    self.fail(f"{call_text(name, args, kwargs)} raised SystemError: {e}")
                except Exception as e:
                    raised += 1
                    if not str(e):
                        self.fail(f"{call_text(name, args, kwargs)} raised "
                                  f"{type(e).__name__} without a message")
            # Whatever the calls did, the manager's state is still consistent.
            manager.check_invariants()
        # Most random calls are refused; some are accepted.
        self.assertGreater(raised, calls // 2)
        self.assertLess(raised, calls)


if __name__ == "__main__":
    unittest.main()
