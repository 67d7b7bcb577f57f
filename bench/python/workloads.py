#!/usr/bin/env python3
"""The reference workloads W1-W4 driven through the kvtopo Python module.

Each workload runs the same loop as `kvtopo simulate --workload wN` and times only the runtime's
calls (get_computed_blocks, allocate_slots, free), as docs/BENCHMARKS.md states per figure:

  W1  256 requests x 2,048-token prompts admitted in one step each (256 prefill calls), then
      512 decode steps of 1 new + 3 lookahead tokens per request; one full group, B = 16.
      Figure: one decode step (256 allocate_slots).
  W2  1,000 requests one after another, 4,096 shared + 256 unique prompt tokens, 16 decode
      steps, free; pool of 4,096 blocks; one full group, B = 16.
      Figure: one request (get computed blocks, admit, 16 decodes, free).
  W3  full + sliding window 4,096 + Mamba align, B = 16; 64 requests x 32,768 tokens in 4
      chunks of 8,192, then 256 decode steps. Figure: one decode step (64 allocate_slots).
  W4  one request grown to 1,000,000 tokens in 768-token chunks, one full group, B = 64
      (1,303 allocate_slots, then free). Figure: the whole growth.

Modes: `single` is the one-call-per-request loop (the form every binding since the first has
accepted: string request ids, keyword lookahead, list results), `batched` the step API.
Run with PYTHONPATH pointing at the module to measure; `single` also runs against older builds.

  PYTHONPATH=build/python python3 bench/python/workloads.py --workload w1 --mode both --runs 5
"""

import argparse
import json
import sys
import time

import kvtopo

W1_REQUESTS, W1_PROMPT, W1_STEPS, W1_LOOKAHEAD = 256, 2048, 512, 3
W2_REQUESTS, W2_SHARED, W2_UNIQUE, W2_STEPS, W2_POOL = 1000, 4096, 256, 16, 4096
W3_REQUESTS, W3_PROMPT, W3_CHUNK, W3_STEPS, W3_WINDOW = 64, 32768, 8192, 256, 4096
W4_TOKENS, W4_CHUNK = 1_000_000, 768

now = time.perf_counter_ns


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
        for _ in range(W1_STEPS):
            t = now()
            for rid in ids:
                if m.allocate_slots(rid, 1, num_lookahead_tokens=W1_LOOKAHEAD) is None:
                    raise SystemExit("W1: out of blocks")
            step_ns.append(now() - t)
            for rid in ids:
                m.append_tokens(rid, [7])
    else:
        handles = m.add_requests(ids, prompts)
        res = m.allocate_slots_batch(handles, [W1_PROMPT] * W1_REQUESTS)
        assert res.num_failed == 0
        # The running batch as an engine keeps it between steps.
        new_tokens = kvtopo.int_buffer([1] * W1_REQUESTS)
        lookahead = kvtopo.int_buffer([W1_LOOKAHEAD] * W1_REQUESTS)
        tokens = kvtopo.int_buffer([7] * W1_REQUESTS)
        for _ in range(W1_STEPS):
            t = now()
            res = m.allocate_slots_batch(handles, new_tokens, lookahead)
            step_ns.append(now() - t)
            if res.num_failed:
                raise SystemExit("W1: out of blocks")
            m.append_tokens_batch(handles, tokens)
    return {"unit": "µs per decode step (256 allocate_slots)", "per_unit_us": sum(step_ns) / len(step_ns) / 1e3,
            "best_step_us": min(step_ns) / 1e3, "steps": len(step_ns)}


# ---- W2 ------------------------------------------------------------------------------------

def w2(mode):
    m = full_group_manager(16, 8192, W2_POOL)
    shared = list(range(100000, 100000 + W2_SHARED))
    total = 0
    if mode == "single":
        for r in range(W2_REQUESTS):
            rid = f"req-{r}"
            prompt = shared + [r * 1000 + t for t in range(W2_UNIQUE)]
            m.add_request(rid, prompt)
            t = now()
            computed = m.get_computed_blocks(rid)
            num_hit = computed.num_tokens
            if m.allocate_slots(rid, len(prompt) - num_hit, num_hit, computed) is None:
                raise SystemExit("W2: out of blocks")
            total += now() - t
            for _ in range(W2_STEPS):
                m.append_tokens(rid, [5])
                t = now()
                if m.allocate_slots(rid, 1) is None:
                    raise SystemExit("W2: out of blocks")
                total += now() - t
            t = now()
            m.free(rid)
            total += now() - t
    else:
        one = kvtopo.int_buffer([1])
        five = kvtopo.int_buffer([5])
        for r in range(W2_REQUESTS):
            prompt = shared + [r * 1000 + t for t in range(W2_UNIQUE)]
            h = m.add_requests([f"req-{r}"], [prompt])
            t = now()
            res = m.admit_batch(h)  # get_computed_blocks + allocate_slots, the whole prompt
            total += now() - t
            if res.num_failed:
                raise SystemExit("W2: out of blocks")
            for _ in range(W2_STEPS):
                m.append_tokens_batch(h, five)
                t = now()
                res = m.allocate_slots_batch(h, one)
                total += now() - t
                if res.num_failed:
                    raise SystemExit("W2: out of blocks")
            t = now()
            m.free_batch(h)
            total += now() - t
    return {"unit": "µs per request", "per_unit_us": total / W2_REQUESTS / 1e3,
            "hit_tokens": m.prefix_cache_stats["hit_tokens"] if isinstance(m.prefix_cache_stats, dict) else None}


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
        for _ in range(W3_STEPS):
            for rid in ids:
                m.append_tokens(rid, [1])
            t = now()
            for rid in ids:
                if m.allocate_slots(rid, 1) is None:
                    raise SystemExit("W3: out of blocks")
            step_ns.append(now() - t)
    else:
        handles = m.add_requests(ids, prompts)
        chunk = kvtopo.int_buffer([W3_CHUNK] * W3_REQUESTS)
        for _ in range(W3_PROMPT // W3_CHUNK):
            assert m.allocate_slots_batch(handles, chunk).num_failed == 0
        one = kvtopo.int_buffer([1] * W3_REQUESTS)
        for _ in range(W3_STEPS):
            m.append_tokens_batch(handles, one)
            t = now()
            res = m.allocate_slots_batch(handles, one)
            step_ns.append(now() - t)
            if res.num_failed:
                raise SystemExit("W3: out of blocks")
    return {"unit": "µs per decode step (64 allocate_slots)", "per_unit_us": sum(step_ns) / len(step_ns) / 1e3,
            "best_step_us": min(step_ns) / 1e3, "steps": len(step_ns)}


# ---- W4 ------------------------------------------------------------------------------------

def w4(mode):
    m = full_group_manager(64, W4_TOKENS + 64, W4_TOKENS // 64 + 2)
    prompt = list(range(W4_TOKENS))
    calls = 0
    if mode == "single":
        m.add_request("big", prompt)
        t = now()
        for done in range(0, W4_TOKENS, W4_CHUNK):
            if m.allocate_slots("big", min(W4_CHUNK, W4_TOKENS - done)) is None:
                raise SystemExit("W4: out of blocks")
            calls += 1
        m.free("big")
        total = now() - t
    else:
        h = m.add_requests(["big"], [prompt])
        chunk = kvtopo.int_buffer([W4_CHUNK])
        last = kvtopo.int_buffer([W4_TOKENS % W4_CHUNK or W4_CHUNK])
        t = now()
        for done in range(0, W4_TOKENS, W4_CHUNK):
            res = m.allocate_slots_batch(h, chunk if done + W4_CHUNK <= W4_TOKENS else last)
            if res.num_failed:
                raise SystemExit("W4: out of blocks")
            calls += 1
        m.free_batch(h)
        total = now() - t
    return {"unit": "µs for the whole growth (1,303 allocate_slots + free)", "per_unit_us": total / 1e3,
            "calls": calls}


WORKLOADS = {"w1": w1, "w2": w2, "w3": w3, "w4": w4}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    ap.add_argument("--mode", choices=["single", "batched", "both"], default="both")
    ap.add_argument("--runs", type=int, default=5, help="runs per mode; the best is reported")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    modes = ["single", "batched"] if args.mode == "both" else [args.mode]
    results = {}
    for mode in modes:
        runs = []
        for _ in range(args.runs):
            runs.append(WORKLOADS[args.workload](mode))
        figures = [r["per_unit_us"] for r in runs if r["per_unit_us"] is not None]
        best = dict(runs[0])
        if figures:
            best["per_unit_us"] = min(figures)
            best["spread_us"] = [min(figures), max(figures)]
        results[mode] = best
    out = {"workload": args.workload, "module": kvtopo.__file__, "runs": args.runs, "results": results}
    if args.json:
        print(json.dumps(out))
    else:
        for mode, r in results.items():
            print(f"{args.workload} {mode:8s} {r['per_unit_us']} ({r['unit']}; spread {r.get('spread_us')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
