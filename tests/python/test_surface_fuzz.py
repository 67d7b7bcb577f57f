"""Seeded calls of every public function and method of the module and its objects (the planner's
results, the manager, its inspector, block tables, geometries), with plausible arguments and, in
half of the calls, one odd one: integers far outside 64 bits, negative counts, NaN, bytes,
strided and two-dimensional memoryviews, sequences of the wrong type, arbitrary objects. A call
returns or raises an ordinary Python exception (never SystemError, MemoryError, or a message
naming a C++ type), every manager's invariants hold throughout, and each seed both runs and
refuses a tenth of its draws or more (requests among what it adds)."""

import array
import random
import re
import unittest

import kvtopo

HUGE = [-1, 0, 1, 15, 16, 17, 2**31 - 1, 2**31, -2**31 - 1, 2**40 + 1, 2**63 - 1, 2**63, -2**63,
        2**64, 10**30, -10**30]
# Launches whose plans are accepted (the manager refuses a rejected plan).
LAUNCHES = [
    (None, {}),
    ("qwen3-next-80b", {"max_model_len": 8192, "kv_cache_memory": "1GiB", "max_num_seqs": 16}),
    ("glm-5.3-flash", {"tensor_parallel_size": 4, "decode_context_parallel_size": 4,
                       "max_model_len": 65536, "kv_cache_memory": "2GiB", "max_num_seqs": 16}),
    ("gpt-oss-120b", {"tensor_parallel_size": 8, "kv_cache_memory": "1GiB",
                      "max_model_len": 16384}),
]
SKIPPED = {"plan", "check", "profiles", "architectures", "option_names", "vllm_compat"}
CPP_NAMES = re.compile(r"std::|basic_string|vector<|kvtopo::|terminate")


def odd_value(rng):
    kind = rng.randrange(10)
    if kind < 3:
        return rng.choice(HUGE)
    if kind == 3:
        return rng.choice([float("nan"), float("inf"), -0.0, 1.5, 1e300])
    if kind == 4:
        return rng.choice(["", "x", "\x00", "12GiB", "nan"])
    if kind == 5:
        return rng.choice([b"", b"\x00" * 8, bytearray(b"abc"), None, True, {}, object()])
    n = rng.choice([0, 1, 3, 17, 300])
    if kind == 6:
        return [rng.choice(HUGE) for _ in range(n)]
    if kind == 7:
        values = array.array("i", [rng.randrange(0, 40) for _ in range(max(n, 2) * 2)])
        view = memoryview(values)
        return view[::2] if rng.random() < 0.5 else view.cast("B").cast("i", [len(values) // 2, 2])
    if kind == 8:
        return array.array(rng.choice("bBhHqQfd"), [0] * n)
    return [rng.choice(["a", None, 1.5, 3]) for _ in range(n)]


def parameters(function):
    """(name, optional, keyword-only) of each parameter the docstring's first signature names."""
    doc = function.__doc__ or ""
    if getattr(function, "__name__", "") == "int_buffer":
        doc = "int_buffer(values, dtype=None)"
    head = " ".join(doc.split("\n\n")[0].split())
    match = re.match(r"\w+\((.*)\)(\s*->.*)?$", head)
    if not match:
        return []
    out, keyword_only = [], False
    for part in re.split(r",(?![^\[]*\])", match.group(1)):
        part = part.strip()
        if part == "*":
            keyword_only = True
        elif part and not part.startswith("self"):
            out.append((part.split(":")[0].split("=")[0].strip(), "=" in part, keyword_only))
    return out


class SurfaceFuzzTest(unittest.TestCase):
    def run_seed(self, seed, calls):
        rng = random.Random(seed)
        model, options = rng.choice(LAUNCHES)
        if rng.random() < 0.5:
            options = dict(options, enable_prefix_caching=True)
        plan = kvtopo.plan(model, **options)
        managers = [kvtopo.KVCacheManager(plan, num_blocks=rng.choice([None, 8, 40, 200]),
                                          record_new_block_ids=rng.random() < 0.5)
                    for _ in range(2)]
        geometries = list(plan.geometries)
        tables = [kvtopo.BlockTable(g, rng.choice([1, 4, 16])) for g in geometries[:4]]
        ids = ["r%d" % i for i in range(6)]
        handles, hits = [], []
        returned = refused = 0

        def plausible(name, owner):
            if "request_id" in name:
                return rng.choice(ids + handles[-3:] + ids[:2] * 3)
            if name in ("handles", "request_ids"):
                chosen = [rng.choice(ids + handles) for _ in range(rng.randrange(0, 4))]
                return kvtopo.int_buffer(handles[-3:]) if handles and rng.random() < 0.5 else chosen
            if name == "prompts":
                return [[rng.randrange(0, 30) for _ in range(rng.choice([1, 16, 40]))]
                        for _ in range(rng.randrange(0, 3))]
            if name == "query_start_loc":
                return sorted(rng.randrange(0, 40) for _ in range(rng.randrange(1, 5)))
            if name in ("token_ids", "positions", "seq_lens", "block_ids", "kernel_row", "counts",
                        "values"):
                return [rng.randrange(0, 60) for _ in range(rng.choice([0, 1, 3, 16, 40, 100]))]
            if name == "computed":
                return rng.choice(hits) if hits else None
            if name == "geometry":
                return rng.choice(geometries)
            if name == "group":
                return rng.choice(geometries) if owner == "table" else rng.randrange(-1, 20)
            if name in ("row", "src", "dst", "a", "b", "first_column", "i"):
                return rng.choice([0, 0, 1, 2, 3, 5, 15, 16])
            if name in ("lora_id", "num_preemptions"):
                return rng.choice([0, 1, 2])
            if name == "cache_salt":
                return rng.choice(["", "s"])
            if name in ("mm_items", "prompt_embeds", "dtype"):
                return None
            if name in ("num_new_tokens", "num_lookahead_tokens") and rng.random() < 0.3:
                return kvtopo.int_buffer([rng.randrange(0, 20) for _ in range(rng.randrange(0, 5))])
            if name in ("full_sequence_must_fit", "delay_cache_blocks",
                        "skip_reading_prefix_cache"):
                return rng.random() < 0.5
            if name == "sample_rate":
                return rng.choice([0.0, 0.5, 1.0, 0.01])
            if name == "text":
                return rng.choice(["12GiB", "1k", "0", "-1", "99999999999999999999GiB"])
            if name == "layout":
                return rng.choice(["{}", '{"num_blocks": 10, "max_model_len": 100, "groups": '
                                         '[{"kind": "full_attention", "block_size": 16}]}'])
            return rng.choice([0, 1, 2, 3, 5, 16, 17, 40, 100, 4096])

        for _ in range(calls):
            owner, target = rng.choice([("manager", rng.choice(managers)),
                                        ("table", rng.choice(tables)),
                                        ("inspector", rng.choice(managers).inspector()),
                                        ("module", kvtopo), ("geometry", rng.choice(geometries)),
                                        ("plan", plan)])
            names = sorted(n for n in dir(target) if not n.startswith("_") and n not in SKIPPED)
            function = getattr(target, rng.choice(names))
            if not callable(function) or isinstance(function, type):
                continue
            specs = parameters(function)
            odd = rng.randrange(len(specs)) if specs and rng.random() < 0.5 else -1
            args, kwargs, gap = [], {}, False
            for index, (name, optional, keyword_only) in enumerate(specs):
                if optional and index != odd and rng.random() < 0.5:
                    gap = True
                    continue
                value = odd_value(rng) if index == odd else plausible(name, owner)
                if keyword_only or gap or (optional and rng.random() < 0.5):
                    kwargs[name] = value
                else:
                    args.append(value)
            try:
                result = function(*args, **kwargs)
            except (SystemError, MemoryError) as e:
                self.fail(f"seed {seed}: {function.__name__}{tuple(args)!r:.300} raised {e!r}")
            except Exception as e:  # any ordinary exception is a refusal
                self.assertIsNone(CPP_NAMES.search(str(e)), f"seed {seed}: {e}")
                refused += 1
            else:
                returned += 1
                name = getattr(function, "__name__", "")
                if name == "get_computed_blocks":
                    hits.append(result)
                elif name == "add_request":
                    handles.append(result)
            if rng.random() < 0.05:
                for manager in managers:
                    manager.check_invariants()
        # The draws reach the surface both ways: calls that run (the manager takes requests), and
        # calls refused.
        self.assertGreater(returned, calls // 10, f"seed {seed}")
        self.assertGreater(refused, calls // 10, f"seed {seed}")
        self.assertTrue(handles, f"seed {seed}: no request was added")

    def test_seeds(self):
        for seed in range(1, 9):
            self.run_seed(seed, 3000)


if __name__ == "__main__":
    unittest.main()
