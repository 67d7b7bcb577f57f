"""Seeded scheduler-shaped use of the manager over random layouts: requests added, hit, allocated,
appended, rewound, preempted and freed, singly and in batches, with counts far past the layout's
max_model_len mixed in (which the engine's scheduler never asks). A call returns or raises one of
the module's documented exceptions; the manager's invariants hold after every step, and every
request's rows stay within their block-table width."""

import random
import unittest

import kvtopo

EXPECTED = (KeyError, ValueError, TypeError, OverflowError, kvtopo.RejectedError)


def random_layout(rng):
    block = rng.choice([4, 8, 16])
    max_len = rng.choice([64, 256, 1000])
    groups = []
    for kind in rng.sample(["full_attention", "mla", "sliding_window", "chunked_local", "mamba",
                            "mamba"], rng.choice([1, 2, 3])):
        group = {"kind": kind, "block_size": block * rng.choice([1, 1, 2]),
                 "page_size_bytes": 4096}
        if kind == "sliding_window":
            group["sliding_window"] = rng.choice([5, 9, 64])
        if kind == "chunked_local":
            group["attention_chunk_size"] = rng.choice([8, 64])
        if kind == "mamba":
            group["mamba_cache_mode"] = rng.choice(["align", "all", "none"])
            group["num_speculative_blocks"] = rng.choice([0, 1, 2])
        groups.append(group)
    return {"num_blocks": rng.choice([8, 40, 200]), "max_model_len": max_len, "groups": groups,
            "enable_prefix_caching": rng.choice([True, False])}


class RandomScheduleTest(unittest.TestCase):
    def run_seed(self, seed, managers):
        rng = random.Random(seed)
        allocated = built = 0
        for _ in range(managers):
            layout = random_layout(rng)
            try:
                m = kvtopo.KVCacheManager.from_layout(layout)
            except EXPECTED:
                continue
            built += 1
            max_len = layout["max_model_len"]
            widths = [g.manager_table_width for g in m.geometries]
            live = {}

            def count():
                return rng.choice([1, 2, 4, 17, max_len, max_len + 1, 2 ** 31, 2 ** 40])

            def attempt(f, *args, **kwargs):
                try:
                    return f(*args, **kwargs)
                except EXPECTED:
                    return None

            for _ in range(60):
                rid = f"r{rng.randrange(6)}"
                op = rng.random()
                if op < 0.2:
                    tokens = [rng.randrange(30) for _ in range(rng.choice([1, 16, max_len // 2]))]
                    handle = attempt(m.add_request, rid, tokens)
                    if handle is not None:
                        live[rid] = handle
                elif op < 0.35:
                    hits = attempt(m.get_computed_blocks, rid)
                    if hits is not None and rid in live:
                        rest = m.num_tokens(rid) - hits.num_tokens
                        if rest > 0 and attempt(m.allocate_slots, rid, rest, hits.num_tokens,
                                                hits) is not None:
                            allocated += 1
                elif op < 0.6:
                    if attempt(m.allocate_slots, rid, count(),
                               num_lookahead_tokens=rng.choice([0, 3, count()])) is not None:
                        allocated += 1
                elif op < 0.7:
                    attempt(m.append_tokens, rid, [rng.randrange(30)])
                elif op < 0.75:
                    attempt(m.rewind_computed_tokens, rid, rng.choice([1, 2]))
                elif op < 0.8:
                    attempt(m.preempt, rid)
                elif op < 0.85:
                    attempt(m.free, rid)
                    live.pop(rid, None)
                elif op < 0.95:
                    handles = kvtopo.int_buffer(list(live.values()))
                    attempt(m.allocate_slots_batch, handles, rng.choice([1, 2 ** 31 - 1]))
                else:
                    attempt(m.free_batch, kvtopo.int_buffer(list(live.values())))
                    live.clear()
                m.check_invariants()
                for rid in live:
                    for group, width in enumerate(widths):
                        self.assertLessEqual(len(m.block_ids(rid, group)), width,
                                             f"seed {seed}: {rid} group {group} of {layout}")
        return built, allocated

    def test_rows_stay_within_their_width(self):
        built, allocated = self.run_seed(77, 200)
        # The layouts build and the steps allocate: the loop exercises the manager.
        self.assertGreaterEqual(built, 150)
        self.assertGreaterEqual(allocated, 800)

    def test_a_step_past_max_model_len_on_an_align_group(self):
        # 2^31 new tokens once grew the align row 3,947,581 columns past its width on Qwen3-Next's
        # plan; the step is capped at max_model_len as the slots are.
        m = kvtopo.KVCacheManager.from_layout({
            "num_blocks": 40, "max_model_len": 64, "groups": [
                {"kind": "mla", "block_size": 4, "page_size_bytes": 4096},
                {"kind": "mamba", "block_size": 4, "page_size_bytes": 4096,
                 "mamba_cache_mode": "align", "num_speculative_blocks": 1}]})
        m.add_request("a", range(10))
        m.allocate_slots("a", 10)
        m.allocate_slots("a", 2 ** 31)
        m.check_invariants()
        self.assertEqual(len(m.block_ids("a", 0)), 16)
        self.assertEqual([j for j, b in enumerate(m.block_ids("a", 1)) if b != 0], [2, 15, 16])
        m.free("a")
        self.assertEqual(m.num_free_blocks, 39)


if __name__ == "__main__":
    unittest.main()
