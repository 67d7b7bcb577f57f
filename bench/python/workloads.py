#!/usr/bin/env python3
"""The reference workloads W1-W4 driven through the kvtopo Python module.

Each workload runs the same loop as `kvtopo simulate --workload wN` and times only the runtime's
calls (get_computed_blocks / admission, allocate_slots, free), as docs/BENCHMARKS.md states per
figure:

  W1  256 requests x 2,048-token prompts admitted in one step each (256 prefill calls), then
      512 decode steps of 1 new + 3 lookahead tokens per request; one full group, B = 16.
      Figure: one decode step (256 allocate_slots).
  W2  1,000 requests one after another, 4,096 shared + 256 unique prompt tokens, 16 decode
      steps, free; pool of 4,096 blocks; one full group, B = 16.
      Figure: one request (get computed blocks, admit, 16 decodes, free); each of the 18 calls
      is timed on its own, so the figure includes 18 clock-read pairs (see --floor).
  W3  full + sliding window 4,096 + Mamba align, B = 16; 64 requests x 32,768 tokens in 4
      chunks of 8,192, then 256 decode steps. Figure: one decode step (64 allocate_slots).
  W4  one request grown to 1,000,000 tokens in 768-token chunks, one full group, B = 64
      (1,303 allocate_slots, then free). Figure: the whole growth.
  W1-slots  the worker side of a W1 decode step: the slot mapping on rank 0 of DCP 4
      (interleave 1, B = 16) of 256 requests at 2,048 tokens, each with its 1 new + 3 lookahead
      positions (1,024 positions); `single` calls slot_mapping once per row, `batched`
      compute_slot_mapping once for the step. Figure: one step's slot mapping (the module's
      calls only, the inputs held in buffers between steps).

Modes: `single` is the one-call-per-request loop (the form every binding since the first has
accepted: string request ids, keyword lookahead, list results), `batched` the step API. Both
loops have the same Python structure (bound methods looked up once, inputs prepared before the
clock starts), so they differ only in the calls.

  PYTHONPATH=build/python python3 bench/python/workloads.py --workload w1 --mode both --runs 5

Side by side: `--baseline DIR` runs the single-call loop against the module in DIR and the
batched loop against `--current DIR` (default build/python), each run in a fresh interpreter,
alternating the two modules run by run (scripts/bench_python_baseline.sh builds DIR from an
older commit).
"""

import argparse
import json
import os
import subprocess
import sys
import time

W1_REQUESTS, W1_PROMPT, W1_STEPS, W1_LOOKAHEAD = 256, 2048, 512, 3
W2_REQUESTS, W2_SHARED, W2_UNIQUE, W2_STEPS, W2_POOL = 1000, 4096, 256, 16, 4096
W3_REQUESTS, W3_PROMPT, W3_CHUNK, W3_STEPS, W3_WINDOW = 64, 32768, 8192, 256, 4096
W4_TOKENS, W4_CHUNK = 1_000_000, 768
W2_CALLS = 2 + W2_STEPS  # timed calls per request

now = time.perf_counter_ns
kvtopo = None  # imported by main(), after --baseline/--current have chosen the module


def has_layouts():
    return hasattr(kvtopo.KVCacheManager, "from_layout")


def full_group_manager(block_size, max_model_len, num_blocks):
    """One full-attention group of `block_size` tokens, prefix caching on."""
    if has_layouts():
        return kvtopo.KVCacheManager.from_layout({
            "num_blocks": num_blocks, "max_model_len": max_model_len,
            "groups": [{"kind": "full_attention", "block_size": block_size,
                        "page_size_bytes": 65536, "layers": ["layers.0.attn"]}]})
    # Builds without explicit layouts: a one-group MLA plan at DCP1 (MLA manages as full).
    plan = kvtopo.plan("kimi-k2.6", tensor_parallel_size=1, block_size=block_size,
                       max_model_len=max_model_len, kv_cache_memory="128GiB")
    assert len(plan.groups) == 1 and plan.groups[0].manager_block_size == block_size
    return kvtopo.KVCacheManager(plan, num_blocks=num_blocks)


def hybrid_manager(max_model_len, num_blocks):
    if not has_layouts():
        return None
    groups = [{"kind": "full_attention", "block_size": 16, "page_size_bytes": 65536},
              {"kind": "sliding_window", "block_size": 16, "page_size_bytes": 65536,
               "sliding_window": W3_WINDOW},
              {"kind": "mamba", "block_size": 16, "page_size_bytes": 65536,
               "mamba_cache_mode": "align"}]
    return kvtopo.KVCacheManager.from_layout(
        {"num_blocks": num_blocks, "max_model_len": max_model_len, "groups": groups})


def out_of_blocks(workload):
    raise SystemExit(f"{workload}: out of blocks")


# ---- W1 ------------------------------------------------------------------------------------

def w1(mode):
    m = full_group_manager(16, 8192, W1_REQUESTS * (W1_PROMPT + W1_STEPS + 64) // 16 + 16)
    ids = [f"req-{r}" for r in range(W1_REQUESTS)]
    prompts = [[r] + [3] * (W1_PROMPT - 1) for r in range(W1_REQUESTS)]
    step_ns = []
    if mode == "single":
        for rid, prompt in zip(ids, prompts):
            m.add_request(rid, prompt)
            assert m.allocate_slots(rid, W1_PROMPT) is not None
        alloc, append = m.allocate_slots, m.append_tokens
        token = [7]
        for _ in range(W1_STEPS):
            t = now()
            for rid in ids:
                if alloc(rid, 1, num_lookahead_tokens=W1_LOOKAHEAD) is None:
                    out_of_blocks("W1")
            step_ns.append(now() - t)
            for rid in ids:
                append(rid, token)
    else:
        handles = m.add_requests(ids, prompts)
        assert m.allocate_slots_batch(handles, W1_PROMPT).num_failed == 0
        # The running batch as an engine keeps it between steps.
        new_tokens = kvtopo.int_buffer([1] * W1_REQUESTS)
        lookahead = kvtopo.int_buffer([W1_LOOKAHEAD] * W1_REQUESTS)
        tokens = kvtopo.int_buffer([7] * W1_REQUESTS)
        alloc, append = m.allocate_slots_batch, m.append_tokens_batch
        for _ in range(W1_STEPS):
            t = now()
            res = alloc(handles, new_tokens, lookahead)
            step_ns.append(now() - t)
            if res.num_failed:
                out_of_blocks("W1")
            append(handles, tokens)
    return {"unit": "µs per decode step (256 allocate_slots)",
            "per_unit_us": sum(step_ns) / len(step_ns) / 1e3,
            "best_step_us": min(step_ns) / 1e3, "steps": len(step_ns)}


# ---- W2 ------------------------------------------------------------------------------------

def w2_prompts():
    shared = list(range(100000, 100000 + W2_SHARED))
    return [shared + [r * 1000 + t for t in range(W2_UNIQUE)] for r in range(W2_REQUESTS)]


def w2(mode):
    m = full_group_manager(16, 8192, W2_POOL)
    prompts = w2_prompts()
    total = 0
    if mode == "single":
        lookup, alloc, append, free = (m.get_computed_blocks, m.allocate_slots, m.append_tokens,
                                       m.free)
        token = [5]
        for r, prompt in enumerate(prompts):
            rid = f"req-{r}"
            m.add_request(rid, prompt)
            t = now()
            computed = lookup(rid)
            num_hit = computed.num_tokens
            new = alloc(rid, len(prompt) - num_hit, num_hit, computed)
            total += now() - t
            if new is None:
                out_of_blocks("W2")
            for _ in range(W2_STEPS):
                append(rid, token)
                t = now()
                new = alloc(rid, 1)
                total += now() - t
                if new is None:
                    out_of_blocks("W2")
            t = now()
            free(rid)
            total += now() - t
    else:
        admit, alloc, append, free = (m.admit_batch, m.allocate_slots_batch,
                                      m.append_tokens_batch, m.free_batch)
        token = kvtopo.int_buffer([5])
        for r, prompt in enumerate(prompts):
            h = m.add_requests([f"req-{r}"], [prompt])
            t = now()
            res = admit(h)  # get_computed_blocks + allocate_slots of the rest of the prompt
            total += now() - t
            if res.num_failed:
                out_of_blocks("W2")
            for _ in range(W2_STEPS):
                append(h, token)
                t = now()
                res = alloc(h, 1)
                total += now() - t
                if res.num_failed:
                    out_of_blocks("W2")
            t = now()
            free(h)
            total += now() - t
    stats = m.prefix_cache_stats
    return {"unit": "µs per request", "per_unit_us": total / W2_REQUESTS / 1e3,
            "hit_tokens": stats["hit_tokens"] if isinstance(stats, dict) else None}


def w2_floor():
    """The same 18 timed regions per request around a call that does nothing (the
    clock-read pairs and a trivial builtin call): no module can go below it."""
    noop = divmod
    total = 0
    for _ in range(W2_REQUESTS):
        for _ in range(W2_CALLS):
            t = now()
            noop(5, 3)
            total += now() - t
    return total / W2_REQUESTS / 1e3


# ---- W3 ------------------------------------------------------------------------------------

def w3(mode):
    m = hybrid_manager(40960, 3 * W3_REQUESTS * (W3_PROMPT + W3_STEPS + 64) // 16)
    if m is None:
        return {"unit": "µs per decode step (64 allocate_slots)", "per_unit_us": None,
                "note": "this build cannot construct the W3 layout"}
    ids = [f"req-{r}" for r in range(W3_REQUESTS)]
    prompts = [[r * 7919 + t for t in range(W3_PROMPT)] for r in range(W3_REQUESTS)]
    step_ns = []
    if mode == "single":
        for rid, prompt in zip(ids, prompts):
            m.add_request(rid, prompt)
        for _ in range(W3_PROMPT // W3_CHUNK):
            for rid in ids:
                assert m.allocate_slots(rid, W3_CHUNK) is not None
        alloc, append = m.allocate_slots, m.append_tokens
        token = [1]
        for _ in range(W3_STEPS):
            for rid in ids:
                append(rid, token)
            t = now()
            for rid in ids:
                if alloc(rid, 1) is None:
                    out_of_blocks("W3")
            step_ns.append(now() - t)
    else:
        handles = m.add_requests(ids, prompts)
        for _ in range(W3_PROMPT // W3_CHUNK):
            assert m.allocate_slots_batch(handles, W3_CHUNK).num_failed == 0
        one = kvtopo.int_buffer([1] * W3_REQUESTS)
        alloc, append = m.allocate_slots_batch, m.append_tokens_batch
        for _ in range(W3_STEPS):
            append(handles, one)
            t = now()
            res = alloc(handles, one)
            step_ns.append(now() - t)
            if res.num_failed:
                out_of_blocks("W3")
    return {"unit": "µs per decode step (64 allocate_slots)",
            "per_unit_us": sum(step_ns) / len(step_ns) / 1e3,
            "best_step_us": min(step_ns) / 1e3, "steps": len(step_ns)}


# ---- W4 ------------------------------------------------------------------------------------

def w4(mode):
    m = full_group_manager(64, W4_TOKENS + 64, W4_TOKENS // 64 + 2)
    prompt = list(range(W4_TOKENS))
    sizes = [min(W4_CHUNK, W4_TOKENS - done) for done in range(0, W4_TOKENS, W4_CHUNK)]
    if mode == "single":
        m.add_request("big", prompt)
        alloc = m.allocate_slots
        t = now()
        for n in sizes:
            if alloc("big", n) is None:
                out_of_blocks("W4")
        m.free("big")
        total = now() - t
    else:
        h = m.add_requests(["big"], [prompt])
        alloc = m.allocate_slots_batch
        t = now()
        for n in sizes:
            if alloc(h, n).num_failed:
                out_of_blocks("W4")
        m.free_batch(h)
        total = now() - t
    return {"unit": "µs for the whole growth (1,303 allocate_slots + free)",
            "per_unit_us": total / 1e3, "calls": len(sizes)}


# ---- W1-slots ------------------------------------------------------------------------------

def w1_slots(mode):
    if not hasattr(kvtopo.BlockTable, "compute_slot_mapping") and mode == "batched":
        return {"unit": "µs per step's slot mapping (1,024 positions, 256 rows)",
                "per_unit_us": None}
    if hasattr(kvtopo.KVCacheManager, "geometries"):
        m = kvtopo.KVCacheManager.from_layout({
            "num_blocks": 64, "max_model_len": 4096, "decode_context_parallel_size": 4,
            "groups": [{"kind": "full_attention", "block_size": 16, "page_size_bytes": 65536}]})
        geometry = m.geometries[0]
    else:
        geometry = kvtopo.plan("kimi-k2.6", tensor_parallel_size=4, block_size=16,
                               decode_context_parallel_size=4, max_model_len=4096,
                               kv_cache_memory="1GiB").groups[0].geometry
    table = kvtopo.BlockTable(geometry, num_rows=W1_REQUESTS)
    per_block = geometry.manager_block_size  # tokens a block id covers across the ranks
    columns = (W1_PROMPT + 1 + W1_LOOKAHEAD + per_block - 1) // per_block
    for r in range(W1_REQUESTS):
        table.append(r, range(r * columns + 1, (r + 1) * columns + 1))
    step = range(W1_PROMPT, W1_PROMPT + 1 + W1_LOOKAHEAD)
    per_row = [kvtopo.int_buffer(step, int64=True) if hasattr(kvtopo, "int_buffer")
               else list(step) for _ in range(W1_REQUESTS)]
    step_ns = []
    if mode == "single":
        slots = table.slot_mapping
        for _ in range(W1_STEPS):
            t = now()
            for r in range(W1_REQUESTS):
                slots(r, 0, per_row[r])
            step_ns.append(now() - t)
    else:
        starts = kvtopo.int_buffer(range(0, W1_REQUESTS * len(step) + 1, len(step)), int64=True)
        positions = kvtopo.int_buffer([p for _ in range(W1_REQUESTS) for p in step], int64=True)
        batch = table.compute_slot_mapping
        for _ in range(W1_STEPS):
            t = now()
            batch(0, starts, positions)
            step_ns.append(now() - t)
    return {"unit": "µs per step's slot mapping (1,024 positions, 256 rows)",
            "per_unit_us": sum(step_ns) / len(step_ns) / 1e3,
            "best_step_us": min(step_ns) / 1e3, "steps": len(step_ns)}


WORKLOADS = {"w1": w1, "w2": w2, "w3": w3, "w4": w4, "w1-slots": w1_slots}


def best_and_spread(figures):
    return {"best_us": min(figures), "spread_us": [min(figures), max(figures)],
            "runs": len(figures)}


def run_in_module(path, workload, mode):
    """One run in a fresh interpreter whose kvtopo is the module under `path`."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--workload", workload,
                          "--mode", mode, "--runs", "1", "--json"],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["results"][mode]["per_unit_us"]


def side_by_side(args):
    """Today's module (single calls) and the current one (batched), alternating run by run."""
    today, current = [], []
    for k in range(args.runs):
        order = [("today", args.baseline, "single"), ("current", args.current, "batched")]
        for name, path, mode in order if k % 2 == 0 else reversed(order):
            (today if name == "today" else current).append(
                run_in_module(path, args.workload, mode))
    result = {"workload": args.workload, "today": best_and_spread(today),
              "current": best_and_spread(current),
              "ratio": min(today) / min(current),
              "baseline_module": os.path.abspath(args.baseline),
              "current_module": os.path.abspath(args.current)}
    if args.workload == "w2":
        result["floor_us"] = min(w2_floor() for _ in range(3))
    if args.json:
        print(json.dumps(result))
    else:
        t, c = result["today"], result["current"]
        print(f"{args.workload}: today's binding, single calls {t['best_us']:.2f} µs "
              f"[{t['spread_us'][0]:.2f}-{t['spread_us'][1]:.2f}]; batched "
              f"{c['best_us']:.2f} µs [{c['spread_us'][0]:.2f}-{c['spread_us'][1]:.2f}]; "
              f"{result['ratio']:.1f}x (best of {args.runs} each, alternating)"
              + (f"; timer floor {result['floor_us']:.2f} µs" if "floor_us" in result else ""))
    return 0


def main():
    global kvtopo
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    ap.add_argument("--mode", choices=["single", "batched", "both"], default="both")
    ap.add_argument("--runs", type=int, default=5, help="runs per mode; the best is reported")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--baseline", help="module dir of today's binding: side-by-side mode")
    ap.add_argument("--current", default="build/python", help="module dir (side-by-side mode)")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error(f"--runs must be at least 1, got {args.runs}")
    if args.baseline:
        return side_by_side(args)
    import kvtopo as module
    kvtopo = module
    modes = ["single", "batched"] if args.mode == "both" else [args.mode]
    results = {}
    for mode in modes:
        runs = [WORKLOADS[args.workload](mode) for _ in range(args.runs)]
        figures = [r["per_unit_us"] for r in runs if r["per_unit_us"] is not None]
        best = dict(runs[0])
        if figures:
            best["per_unit_us"] = min(figures)
            best["spread_us"] = [min(figures), max(figures)]
        results[mode] = best
    out = {"workload": args.workload, "module": kvtopo.__file__, "runs": args.runs,
           "results": results}
    if args.workload == "w2":
        out["floor_us"] = w2_floor()
    if args.json:
        print(json.dumps(out))
    else:
        for mode, r in results.items():
            print(f"{args.workload} {mode:8s} {r['per_unit_us']} ({r['unit']}; "
                  f"spread {r.get('spread_us')})")
        if "floor_us" in out:
            print(f"{args.workload} floor    {out['floor_us']:.3f} ({W2_CALLS} timed no-op calls "
                  "per request)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
