"""The batched step API from Python: same block ids, hits and failures as single calls."""

import array
import random
import unittest

import kvtopo

LAYOUT = {"num_blocks": 48, "max_model_len": 2048, "groups": [
    {"kind": "full_attention", "block_size": 16, "page_size_bytes": 64},
    {"kind": "sliding_window", "block_size": 16, "sliding_window": 64, "page_size_bytes": 64}]}


def updates(res, i):
    got = res.updates(i)
    return None if got is None else [list(ids) for _, ids in got]


class BatchVersusSingle(unittest.TestCase):
    def test_seeded_random_workloads(self):
        for seed in range(4):
            rng = random.Random(seed)
            single = kvtopo.KVCacheManager.from_layout(LAYOUT)
            batched = kvtopo.KVCacheManager.from_layout(LAYOUT)
            running, next_id, failures, hits = [], 0, 0, 0
            for _ in range(80):
                ids, prompts = [], []
                for _ in range(rng.randrange(3)):
                    fam = rng.randrange(3)
                    n = 16 + rng.randrange(100)
                    prompts.append([fam * 1000 + t if t < 48 else rng.randrange(50000)
                                    for t in range(n)])
                    ids.append(f"r{next_id}")
                    next_id += 1
                for rid, p in zip(ids, prompts):
                    single.add_request(rid, p)
                handles = batched.add_requests(ids, prompts)
                res = batched.admit_batch(handles)
                self.assertEqual(len(res), len(ids))
                for i, rid in enumerate(ids):
                    c = single.get_computed_blocks(rid)
                    new = single.allocate_slots(rid, single.num_tokens(rid) - c.num_tokens,
                                                c.num_tokens, c)
                    self.assertEqual(res.ok[i], int(new is not None))
                    if new is None:
                        failures += 1
                        single.free(rid)
                        batched.free(rid)
                    else:
                        self.assertEqual(res.num_computed[i], c.num_tokens)
                        hits += c.num_tokens
                        self.assertEqual(updates(res, i), new)
                        running.append(rid)
                handles = array.array("q", [batched.handle(r) for r in running])
                news = array.array("i", [1 + rng.randrange(2) for _ in running])
                look = array.array("i", [rng.randrange(4) for _ in running])
                res = batched.allocate_slots_batch(handles, news, look)
                keep, done = [], []
                for i, rid in enumerate(running):
                    new = single.allocate_slots(rid, news[i], num_lookahead_tokens=look[i])
                    self.assertEqual(updates(res, i), new)
                    self.assertEqual(single.get_blocks(rid), batched.get_blocks(rid))
                    (done if new is None or rng.randrange(8) == 0 else keep).append(rid)
                    failures += new is None
                tokens = array.array("i", [rng.randrange(50000) for _ in running])
                batched.append_tokens_batch(handles, tokens)
                for i, rid in enumerate(running):
                    single.append_tokens(rid, [tokens[i]])
                batched.free_batch(array.array("q", [batched.handle(r) for r in done]))
                for rid in done:
                    single.free(rid)
                running = keep
                self.assertEqual(single.num_free_blocks, batched.num_free_blocks)
                batched.check_invariants()
            self.assertGreater(failures, 0)
            self.assertGreater(hits, 0)

    def test_buffers_and_errors(self):
        m = kvtopo.KVCacheManager.from_layout(LAYOUT)
        h = m.add_requests(["a", "b"], [list(range(40)), list(range(100, 120))])
        self.assertEqual((h.format, list(h)), ("q", [0, 1]))
        res = m.allocate_slots_batch(h, kvtopo.int_buffer([40, 20]))
        self.assertEqual(list(res.ok), [1, 1])
        self.assertEqual(list(res.offsets), [0, 3, 6, 8, 10])
        self.assertEqual(list(res.block_ids), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        self.assertEqual(list(res.first_column), [0, 0, 0, 0])
        self.assertTrue(res.block_ids.readonly)
        with self.assertRaisesRegex(ValueError, r"num_new_tokens\[1\] must be in \[1, "):
            m.allocate_slots_batch(h, [1, 0])
        with self.assertRaisesRegex(ValueError, "num_lookahead_tokens holds 1 values for 2"):
            m.allocate_slots_batch(h, [1, 1], [3])
        with self.assertRaisesRegex(KeyError, "request 7 of the batch"):
            m.allocate_slots_batch([0, 7], [1, 1])
        with self.assertRaisesRegex(ValueError, "num_lookahead_tokens must be in"):
            m.allocate_slots("a", 20, num_lookahead_tokens=2**63 - 1)
        with self.assertRaises(OverflowError):
            m.allocate_slots("a", 20, num_lookahead_tokens=2**64)
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'lookahead'"):
            m.allocate_slots("a", 1, lookahead=3)
        m.free_batch(h)
        self.assertEqual(len(m), 0)

    def test_inputs_results_and_the_managers_errors(self):
        m = kvtopo.KVCacheManager.from_layout(LAYOUT)
        h = m.add_requests(["a", "b"], [range(40), array.array("h", range(100, 120))])
        # One int counts for every request; int16 and uint8 buffers are converted.
        res = m.allocate_slots_batch(array.array("B", [0, 1]), 16)
        self.assertEqual((res.num_failed, res.num_groups, len(res)), (0, 2, 2))
        self.assertEqual(list(res.block_ids), [1, 2, 3, 4])
        self.assertEqual((res.ok.format, res.offsets.format, res.block_ids.format), ("B", "i", "i"))
        buf = kvtopo.int_buffer([1, 2])
        self.assertEqual((type(buf), buf.format, buf.readonly), (memoryview, "i", False))
        buf[1] = 3  # an engine updates its buffer in place between steps
        res = m.allocate_slots_batch(h, buf, 0)  # 17 and 19 tokens: a second block per group
        self.assertEqual((list(res.first_column), list(res.block_ids)), ([1] * 4, [5, 6, 7, 8]))
        with self.assertRaisesRegex(OverflowError, r"^num_new_tokens: 4294967296 is outside the "
                                    r"32-bit integer range \[-2147483648, 2147483647\]$"):
            m.allocate_slots_batch(h, 1 << 32)
        with self.assertRaisesRegex(OverflowError, r"^num_new_tokens\[1\]: -4294967296 is "
                                    r"outside the 32-bit integer range"):
            m.allocate_slots_batch(h, [1, -(1 << 32)])
        with self.assertRaisesRegex(TypeError, "handles must be a 1-D integer buffer"):
            m.allocate_slots_batch(array.array("d", [0.0]), 1)
        # The manager's own checks, unchanged through the binding.
        with self.assertRaisesRegex(ValueError, r"admission: request 0 \(index 0\) is already running"):
            m.admit_batch(h)
        with self.assertRaisesRegex(ValueError, r"request 1 appears twice in the batch \(index 1\)"):
            m.free_batch([1, 1])
        with self.assertRaisesRegex(ValueError, "token_ids holds 3 tokens; the counts add up to 2"):
            m.append_tokens_batch(h, [1, 2, 3], [1, 1])
        with self.assertRaisesRegex(ValueError, r"num_rejected must be in \[0, 17\]"):
            m.rewind_computed_tokens("a", 18)
        m.add_request("c", range(40))  # a's prompt: a's first block of each group is cached
        hits = m.get_computed_blocks("c")
        self.assertEqual((hits.num_tokens, hits.blocks), (16, [[1], [2]]))
        m.evict_blocks([2])
        with self.assertRaisesRegex(ValueError, r"stale prefix hits: block 2 \(group 1, column 0\)"):
            m.allocate_slots("c", 24, 16, hits)
        with self.assertRaisesRegex(TypeError, "computed must be a"):
            m.allocate_slots("c", 24, 16, "hits")
        with self.assertRaisesRegex(ValueError, "block id 48 is not in the pool"):
            m.evict_blocks([48])
        with self.assertRaisesRegex(IndexError, "block 48 is not in the pool"):
            m.inspector().ref_count(48)
        m.free_batch(h)
        self.assertEqual(len(m), 1)

    def test_layout_errors_name_the_key(self):
        with self.assertRaisesRegex(ValueError, "cache layout group 0: 'block_size' is missing"):
            kvtopo.KVCacheManager.from_layout(
                {"num_blocks": 4, "max_model_len": 8,
                 "groups": [{"kind": "mla", "page_size_bytes": 1}]})
        with self.assertRaisesRegex(TypeError, "layout must be a dict or a JSON string"):
            kvtopo.KVCacheManager.from_layout(3)

    def test_inspector_and_mamba_none_from_a_plan(self):
        plan = kvtopo.plan("kimi-k3", tensor_parallel_size=16, decode_context_parallel_size=16,
                           mamba_cache_mode="none")
        self.assertEqual({g.recurrent_mode for g in plan.groups if g.kind == "recurrent"},
                         {"none"})
        m = kvtopo.KVCacheManager.from_layout(LAYOUT)
        m.add_request("a", range(32))
        m.allocate_slots("a", 32)
        m.free("a")
        ins = m.inspector()
        self.assertEqual(ins.free_queue()[-4:], [2, 1, 4, 3])  # per group, tail first
        self.assertEqual(ins.null_block, 0)
        h, group = ins.block_hash(1)
        self.assertEqual((ins.lookup(h, group), ins.ref_count(1)), (1, 0))


if __name__ == "__main__":
    unittest.main()
