"""Scheduler sequences ported to kvtopo.vllm_compat, asserting exact block ids."""

import os
import sys
import unittest
from types import SimpleNamespace

import kvtopo
from kvtopo import vllm_compat
from kvtopo.vllm_compat import (AllBlocksCleared, BlockStored, KVCacheBlock, KVCacheEvictionEvent,
                                KVCacheManager, KVCacheMetricsCollector, PrefixCacheStats, Request)


def full_layout(num_blocks=11, **extra):
    return {"num_blocks": num_blocks, "max_model_len": 64,
            "groups": [{"kind": "full_attention", "block_size": 4, "page_size_bytes": 64}],
            **extra}


# A full-attention group beside a sliding window of 5 tokens, both of 4-token blocks.
HYBRID_LAYOUT = {"num_blocks": 40, "max_model_len": 128, "groups": [
    {"kind": "full_attention", "block_size": 4, "page_size_bytes": 64},
    {"kind": "sliding_window", "block_size": 4, "sliding_window": 5, "page_size_bytes": 64}]}


def ids(blocks):
    return blocks.get_block_ids()


# Stand-ins for vLLM's KV-cache spec classes (vllm/v1/kv_cache_interface.py): the layout reads
# their class names, block_size, page_size_bytes and kind fields.
class KVCacheSpec:
    def __init__(self, block_size=4, page_size_bytes=64, **fields):
        self.block_size, self.page_size_bytes = block_size, page_size_bytes
        self.__dict__.update(fields)


class AttentionSpec(KVCacheSpec):
    pass


class FullAttentionSpec(AttentionSpec):
    pass


class TQFullAttentionSpec(FullAttentionSpec):
    pass


class SinkFullAttentionSpec(FullAttentionSpec):
    pass


class EncoderOnlyAttentionSpec(AttentionSpec):
    pass


class SlidingWindowSpec(AttentionSpec):
    pass


class MLAAttentionSpec(FullAttentionSpec):
    pass


class ChunkedLocalAttentionSpec(AttentionSpec):
    pass


class MambaSpec(KVCacheSpec):
    pass


class UniformTypeKVCacheSpecs(KVCacheSpec):
    pass


def kv_cache_config(*specs, num_blocks=40, eagle=()):
    return SimpleNamespace(num_blocks=num_blocks, kv_cache_tensors=[], kv_cache_groups=[
        SimpleNamespace(layer_names=[f"layers.{i}.attn"], kv_cache_spec=spec,
                        is_eagle_group=i in eagle)
        for i, spec in enumerate(specs)])


class SchedulerSequences(unittest.TestCase):
    def test_prefill_decode_preempt_resume(self):
        m = KVCacheManager(layout=full_layout(), log_stats=True)
        r = Request("r0", range(7))
        blocks, n = m.get_computed_blocks(r)
        self.assertEqual((ids(blocks), n), (([],), 0))
        self.assertEqual(ids(m.allocate_slots(r, 7)), ([1, 2],))
        r.num_computed_tokens = 7
        r.append_output_token_ids(7)
        self.assertEqual(ids(m.allocate_slots(r, 1)), ([],))  # block 2 holds tokens 4..7
        r.num_computed_tokens = 8
        r.append_output_token_ids(8)
        self.assertEqual(ids(m.allocate_slots(r, 1)), ([3],))
        r.num_computed_tokens = 9
        # Preempt (vLLM's order: free, then the request's own fields).
        m.free(r)
        r.num_computed_tokens = 0
        r.num_preemptions += 1
        self.assertEqual(m.usage, 0.0)
        blocks, n = m.get_computed_blocks(r)  # 9 tokens: at most 8 hit, blocks 1 and 2
        self.assertEqual((ids(blocks), n), (([1, 2],), 8))
        self.assertEqual(blocks.blocks[0][0], KVCacheBlock(1))
        new = m.allocate_slots(r, 1, 8, blocks)
        self.assertEqual(ids(new), ([4],))  # 3 went back to the tail; 4 is the queue's head
        self.assertEqual(ids(m.get_blocks("r0")), ([1, 2, 4],))
        stats = m.make_prefix_cache_stats()
        self.assertIsInstance(stats, PrefixCacheStats)  # vLLM's loggers read its attributes
        self.assertEqual((stats.requests, stats.queries, stats.hits), (1, 7, 0))
        self.assertEqual((stats.preempted_requests, stats.preempted_queries,
                          stats.preempted_hits), (1, 9, 8))

    def test_spec_decode_rewind(self):
        m = KVCacheManager(layout=full_layout())
        r = Request("r", range(6))
        self.assertEqual(ids(m.allocate_slots(r, 6, num_lookahead_tokens=3)), ([1, 2, 3],))
        r.num_computed_tokens = 6
        r.append_output_token_ids(6)
        # 1 verified + 3 drafts scheduled, 3 lookahead slots: 13 slots -> 4 blocks.
        self.assertEqual(ids(m.allocate_slots(r, 4, num_lookahead_tokens=3)), ([4],))
        r.num_computed_tokens = 10
        # Two drafts rejected: the scheduler lowers num_computed_tokens; the manager follows.
        r.num_computed_tokens -= 2
        r.append_output_token_ids([7, 8])
        self.assertEqual(ids(m.allocate_slots(r, 4, num_lookahead_tokens=3)), ([],))  # 15 slots
        self.assertEqual(m.native.num_computed_tokens("r"), 12)
        m.native.check_invariants()

    def test_sliding_window_decode_releases_blocks(self):
        m = KVCacheManager(layout={"num_blocks": 11, "max_model_len": 64, "groups": [
            {"kind": "sliding_window", "block_size": 4, "sliding_window": 8,
             "page_size_bytes": 64}]})
        r = Request("r", range(12))
        self.assertEqual(ids(m.allocate_slots(r, 12)), ([1, 2, 3],))
        r.num_computed_tokens = 12
        r.append_output_token_ids(12)
        # 12 computed: 12 - 7 = 5 tokens out of the window -> column 0 released.
        self.assertEqual(ids(m.allocate_slots(r, 1)), ([4],))
        self.assertEqual(ids(m.get_blocks("r")), ([0, 2, 3, 4],))
        self.assertEqual(m.native.num_free_blocks, 7)

    def test_hybrid_hit_full_and_sliding_window(self):
        m = KVCacheManager(layout=HYBRID_LAYOUT)
        a = Request("a", range(20))
        self.assertEqual(ids(m.allocate_slots(a, 20)),
                         ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]))
        b = Request("b", list(range(16)) + [99, 98, 97])
        blocks, n = m.get_computed_blocks(b)
        # 16 tokens hit; the window needs cdiv(4, 4) = 1 block: only column 3 is kept.
        self.assertEqual((ids(blocks), n), (([1, 2, 3, 4], [0, 0, 0, 9]), 16))
        self.assertEqual(ids(m.allocate_slots(b, 3, 16, blocks)), ([11], [12]))
        self.assertEqual(m.get_num_common_prefix_blocks("a"), [4, 0])

    def test_connector_reads_unhashed_blocks(self):
        # A KV connector loads external tokens into the blocks that cache nothing yet:
        # delay_cache_blocks leaves them unhashed until cache_blocks, read live as vLLM's
        # pool-owned blocks are.
        m = KVCacheManager(layout=full_layout())
        a = Request("a", range(6))
        self.assertEqual(ids(m.allocate_slots(a, 6)), ([1, 2],))
        a.num_computed_tokens = 6
        m.free(a)
        r = Request("r", list(range(4)) + list(range(100, 108)))
        blocks, n = m.get_computed_blocks(r)
        self.assertEqual((ids(blocks), n, blocks.get_unhashed_block_ids()), (([1],), 4, []))
        self.assertEqual(blocks.blocks[0][0].block_hash,
                         (m.native.request_block_hashes("r")[0], 0))
        new = m.allocate_slots(r, 0, 4, blocks, num_external_computed_tokens=8,
                               delay_cache_blocks=True)
        held = m.get_blocks("r")
        self.assertEqual((ids(new), new.get_unhashed_block_ids()), (([3, 4],), [3, 4]))
        self.assertEqual((ids(held), held.get_unhashed_block_ids()), (([1, 3, 4],), [3, 4]))
        self.assertIsNone(new.blocks[0][1].block_hash)
        r.num_computed_tokens = 12
        m.cache_blocks(r, 12)
        self.assertEqual((new.get_unhashed_block_ids(), held.get_unhashed_block_ids()), ([], []))
        self.assertEqual(new.blocks[0][1].block_hash, (m.native.request_block_hashes("r")[2], 0))
        self.assertIsNone(KVCacheBlock(3).block_hash)  # made without a manager

    def test_prompt_embeddings_key_their_blocks(self):
        # A request given as embeddings carries placeholder ids (vLLM's are zeros): its blocks
        # are keyed by their rows, as vLLM's hashes are, so other embeddings never hit them.
        m = KVCacheManager(layout=full_layout())
        rows = bytes(range(40))  # 10 rows of 4 bytes, one per prompt token
        a = Request("a", [0] * 10, prompt_embeds=memoryview(rows).cast("B", (10, 4)))
        self.assertEqual(ids(m.allocate_slots(a, 10)), ([1, 2, 3],))
        a.num_computed_tokens = 10
        m.free(a)
        same = Request("same", [0] * 10, prompt_embeds=rows)  # 1-D: a row per token id
        self.assertEqual(ids(m.get_computed_blocks(same)[0]), ([1, 2],))
        changed = Request("changed", [0] * 10, prompt_embeds=rows[:20] + b"x" + rows[21:])
        self.assertEqual(m.get_computed_blocks(changed)[1], 4)  # row 5 sits in block 1
        self.assertEqual(m.get_computed_blocks(Request("ids", [0] * 10))[1], 0)
        with self.assertRaisesRegex(ValueError, "^prompt_embeds of request 'odd': 39 bytes do "
                                                "not split into its 10 prompt tokens' rows$"):
            m.get_computed_blocks(Request("odd", [0] * 10, prompt_embeds=rows[:39]))

        with self.assertRaisesRegex(TypeError, "^prompt_embeds must be a C-contiguous buffer "
                                               r"\(bytes, a numpy array: one row per prompt "
                                               r"token\), got str$"):
            m.get_computed_blocks(Request("text", [0] * 10, prompt_embeds="rows"))

    def test_prompt_embeddings_of_a_resumed_request(self):
        # Resumed after preemption, the request's tokens include its outputs; its flat
        # embeddings are still the prompt's rows.
        m = KVCacheManager(layout=full_layout())
        a = Request("a", [0] * 10, prompt_embeds=bytes(range(40)))
        self.assertEqual(ids(m.allocate_slots(a, 10)), ([1, 2, 3],))
        a.num_computed_tokens = 10
        a.append_output_token_ids([7, 8])
        self.assertEqual(ids(m.allocate_slots(a, 2)), ([],))
        a.num_computed_tokens = 12
        m.free(a)
        a.num_computed_tokens, a.num_preemptions = 0, 1
        blocks, n = m.get_computed_blocks(a)  # 12 tokens: at most 8 hit
        self.assertEqual((ids(blocks), n), (([1, 2],), 8))

    def test_prompt_embeddings_tensor_bytes(self):
        # A tensor is read as vLLM's hashes read it: its bytes, row by row (a stand-in torch).
        calls = []

        class Tensor:
            def __init__(self, data):
                self.data = data

            def __getattr__(self, name):
                def step(*args):
                    calls.append((name, args))
                    return self.data if name == "numpy" else self
                return step

        fake_torch = SimpleNamespace(uint8="uint8")
        saved = sys.modules.get("torch")
        sys.modules["torch"] = fake_torch
        try:
            m = KVCacheManager(layout=full_layout())
            rows = memoryview(bytes(range(16))).cast("B", (4, 4))
            m.allocate_slots(Request("a", [0] * 4, prompt_embeds=Tensor(rows)), 4)
        finally:
            if saved is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = saved
        self.assertEqual([c[0] for c in calls], ["detach", "cpu", "contiguous", "view", "numpy"])
        self.assertEqual(calls[3][1], ("uint8",))
        m.allocate_slots(Request("b", [0] * 5, prompt_embeds=bytes(range(16)) + b"\0\0\0\0"), 5)
        self.assertEqual(m.native.request_block_hashes("a")[0],
                         m.native.request_block_hashes("b")[0])

    def test_block_pool_binds_and_refuses_internals(self):
        # vLLM's scheduler binds the pool to any KV connector; only simple CPU offload reads it.
        m = KVCacheManager(layout=full_layout())
        pool = m.block_pool
        self.assertEqual(repr(pool), "<kvtopo native block pool>")
        with self.assertRaisesRegex(NotImplementedError,
                                    "^block_pool.free_block_queue: kvtopo's pool is native and "
                                    "has no vLLM BlockPool internals; the simple CPU offload "
                                    "connector"):
            pool.free_block_queue
        self.assertFalse(hasattr(pool, "__deepcopy__"))

    def test_built_as_vllm_scheduler_builds_it(self):
        # The scheduler's own call: vLLM's KVCacheConfig and keywords give the manager the
        # explicit layout would (TQ full attention is full attention).
        config = kv_cache_config(TQFullAttentionSpec(),
                                 SlidingWindowSpec(sliding_window=5))
        m = KVCacheManager(kv_cache_config=config, max_model_len=128,
                           max_num_batched_tokens=64, enable_caching=True, use_eagle=False,
                           log_stats=False, enable_kv_cache_events=False, dcp_world_size=1,
                           pcp_world_size=1, hash_block_size=4, metrics_collector=None)
        same = KVCacheManager(layout=HYBRID_LAYOUT)
        for manager in (m, same):
            manager.allocate_slots(Request("a", range(20)), 20)
        self.assertEqual(m.get_block_ids("a"), same.get_block_ids("a"))
        b = Request("b", list(range(16)) + [99])
        self.assertEqual(ids(m.get_computed_blocks(b)[0]), ([1, 2, 3, 4], [0, 0, 0, 9]))
        positional = KVCacheManager(config, max_model_len=128, hash_block_size=4)
        self.assertEqual(positional.num_kv_cache_groups, 2)
        # Under DCP the spec's block is one rank's; the manager's spans the ranks (vLLM
        # multiplies it by dcp_world_size too).
        dcp = KVCacheManager(kv_cache_config=kv_cache_config(FullAttentionSpec(block_size=16)),
                             max_model_len=256, hash_block_size=32, dcp_world_size=2)
        self.assertEqual((dcp.native.geometries[0].block_size,
                          dcp.native.geometries[0].manager_block_size), (16, 32))

    def test_kv_cache_config_kinds(self):
        # Each spec class's kind and fields; a uniform-type group reads its layers' one kind.
        m = KVCacheManager(kv_cache_config(
            MLAAttentionSpec(), ChunkedLocalAttentionSpec(attention_chunk_size=8),
            MambaSpec(mamba_cache_mode="align", num_speculative_blocks=2),
            UniformTypeKVCacheSpecs(kv_cache_specs={"a": SlidingWindowSpec(sliding_window=8),
                                                     "b": SlidingWindowSpec(sliding_window=8)})),
            max_model_len=64, hash_block_size=4)
        self.assertEqual([(g.kind, g.attention_chunk_size, g.sliding_window, g.recurrent_mode,
                           g.num_speculative_blocks) for g in m.native.geometries],
                         [("mla", 0, 0, "align", 0), ("chunked_local", 8, 0, "align", 0),
                          ("recurrent", 0, 0, "align", 2), ("sliding_window", 0, 8, "align", 0)])
        mixed = UniformTypeKVCacheSpecs(kv_cache_specs={
            "a": SlidingWindowSpec(sliding_window=8), "b": SlidingWindowSpec(sliding_window=16)})
        with self.assertRaisesRegex(ValueError, r"^kv_cache_config.kv_cache_groups\[0\]: its "
                                                r"layers' sliding_window differ \(\[8, 16\]\)"):
            KVCacheManager(kv_cache_config(mixed), max_model_len=64, hash_block_size=4)

    def test_eagle_groups_from_the_kv_cache_config(self):
        # An EAGLE group drops its last hit block: the flagged ones, or every group under
        # use_eagle when none is flagged, as vLLM's coordinator picks them.
        def hit(**kwargs):
            m = KVCacheManager(kv_cache_config(FullAttentionSpec(), num_blocks=11,
                                               eagle=kwargs.pop("eagle", ())),
                               max_model_len=64, hash_block_size=4, **kwargs)
            a = Request("a", range(12))
            m.allocate_slots(a, 12)
            a.num_computed_tokens = 12
            m.free(a)
            return m.get_computed_blocks(Request("b", list(range(12)) + [5]))[1]
        self.assertEqual((hit(), hit(use_eagle=True), hit(eagle=(0,))), (12, 8, 8))

    def test_sink_full_attention_holds_its_sink_blocks(self):
        # SinkFullAttentionSpec: full attention whose manager takes sink_len / block_size blocks
        # off the free queue at start (blocks 1 and 2 here) and never frees them.
        m = KVCacheManager(kv_cache_config(SinkFullAttentionSpec(sink_len=8), num_blocks=11),
                           max_model_len=64, hash_block_size=4, enable_kv_cache_events=True)
        self.assertEqual(m.native.sink_block_ids, [[1, 2]])
        self.assertEqual(m.take_events(), [])  # the sinks are taken, not stored
        self.assertEqual((m.native.geometries[0].sink_tokens,
                          m.native.geometries[0].sink_blocks), (8, 2))
        self.assertEqual(m.native.num_free_blocks, 8)
        a = Request("a", range(12))
        self.assertEqual(ids(m.allocate_slots(a, 12)), ([3, 4, 5],))
        # vLLM's events name the group's kind sink_full_attention.
        self.assertEqual([e.kv_cache_spec_kind for e in m.take_events()],
                         ["sink_full_attention"])
        a.num_computed_tokens = 12
        m.free(a)
        self.assertTrue(m.reset_prefix_cache())
        self.assertEqual(m.native.num_free_blocks, 8)
        with self.assertRaisesRegex(kvtopo.RejectedError, r"keeps 6 static attention sink "
                                                          r"tokens, which --block-size 4 does "
                                                          r"not divide"):
            KVCacheManager(kv_cache_config(SinkFullAttentionSpec(sink_len=6)), max_model_len=64,
                           hash_block_size=4)
        with self.assertRaisesRegex(kvtopo.RejectedError,
                                    r"under --decode-context-parallel-size 2"):
            KVCacheManager(kv_cache_config(SinkFullAttentionSpec(sink_len=8)), max_model_len=64,
                           hash_block_size=4, dcp_world_size=2)
        mixed = UniformTypeKVCacheSpecs(kv_cache_specs={
            "a": SinkFullAttentionSpec(sink_len=8), "b": FullAttentionSpec()})
        with self.assertRaisesRegex(ValueError, r"^kv_cache_config.kv_cache_groups\[0\]: its "
                                                r"layers' sink_len differ \(\[0, 8\]\)"):
            KVCacheManager(kv_cache_config(mixed), max_model_len=64, hash_block_size=4)

    def test_kv_cache_config_refusals(self):
        config = kv_cache_config(FullAttentionSpec())
        with self.assertRaisesRegex(ValueError, r"^kv_cache_config.kv_cache_groups\[0\]: "
                                                "EncoderOnlyAttentionSpec is not a cache kind "
                                                "kvtopo manages$"):
            KVCacheManager(kv_cache_config=kv_cache_config(EncoderOnlyAttentionSpec()),
                           max_model_len=64, hash_block_size=4)
        with self.assertRaisesRegex(ValueError, r"^kv_cache_config.kv_cache_groups\[0\]: "
                                                "KVCacheSpec is not one of vLLM's KV-cache specs"):
            KVCacheManager(kv_cache_config=kv_cache_config(KVCacheSpec()), max_model_len=64,
                           hash_block_size=4)
        with self.assertRaisesRegex(ValueError, "^pcp_world_size 2: cache layouts take decode "
                                                "context parallelism only"):
            KVCacheManager(kv_cache_config=config, max_model_len=64, hash_block_size=4,
                           pcp_world_size=2)
        with self.assertRaisesRegex(TypeError, "^metrics_collector must be a "
                                               "KVCacheMetricsCollector .*, got object$"):
            KVCacheManager(kv_cache_config=config, max_model_len=64, hash_block_size=4,
                           metrics_collector=object())
        with self.assertRaisesRegex(TypeError, "^kv_cache_config= needs max_model_len= and "
                                               "hash_block_size="):
            KVCacheManager(kv_cache_config=config, max_model_len=64)
        with self.assertRaisesRegex(TypeError, "^pass exactly one of plan, layout= or "
                                               "kv_cache_config=$"):
            KVCacheManager(kv_cache_config=config, layout=full_layout(), max_model_len=64,
                           hash_block_size=4)

    def test_blocks_of_an_unknown_request_are_empty(self):
        # vLLM's per-request rows default to empty lists.
        m = KVCacheManager(layout=HYBRID_LAYOUT)
        self.assertEqual(ids(m.get_blocks("nobody")), ([], []))
        self.assertEqual(m.get_block_ids("nobody"), ([], []))
        self.assertNotIn("nobody", m.native)

    def test_connector_reads_unhashed_blocks_of_every_group(self):
        m = KVCacheManager(layout=HYBRID_LAYOUT)
        m.allocate_slots(Request("a", range(20)), 20)
        b = Request("b", list(range(16)) + list(range(200, 208)))
        blocks, n = m.get_computed_blocks(b)
        self.assertEqual((ids(blocks), n), (([1, 2, 3, 4], [0, 0, 0, 9]), 16))
        # 24 tokens with the 8 external: the window (5) skips columns 0-4 of the second group.
        new = m.allocate_slots(b, 0, 16, blocks, num_external_computed_tokens=8,
                               delay_cache_blocks=True)
        self.assertEqual(ids(new), ([11, 12], [0, 13]))
        held = m.get_blocks("b")
        self.assertEqual(ids(held), ([1, 2, 3, 4, 11, 12], [0, 0, 0, 0, 0, 13]))
        self.assertEqual(held.get_unhashed_block_ids_all_groups(), [[11, 12], [13]])
        with self.assertRaisesRegex(ValueError, "^get_unhashed_block_ids takes blocks of one "
                                    "group; these have 2 groups"):
            held.get_unhashed_block_ids()
        b.num_computed_tokens = 24
        m.cache_blocks(b, 24)
        self.assertEqual(held.get_unhashed_block_ids_all_groups(), [[], []])

    def test_vllm_requests_key_blocks_by_adapter_and_images(self):
        # vLLM's Request states its adapter as lora_request and its images as mm_features
        # (identifier, mm_position); both key the blocks, so no other adapter or image hits them.
        def vllm_request(rid, lora=None, images=()):
            tokens = list(range(12))
            return SimpleNamespace(
                request_id=rid, all_token_ids=tokens, num_tokens=len(tokens),
                num_computed_tokens=0, num_preemptions=0, cache_salt=None,
                lora_request=SimpleNamespace(lora_int_id=lora, lora_name=f"a{lora}")
                if lora else None,
                mm_features=[SimpleNamespace(identifier=i, mm_position=SimpleNamespace(
                    offset=offset, length=4)) for i, offset in images])

        m = KVCacheManager(layout=full_layout(num_blocks=20))
        a = vllm_request("a", lora=1, images=[("img", 4)])
        self.assertEqual(ids(m.allocate_slots(a, 12)), ([1, 2, 3],))
        m.free(a)
        for request, hit in [(vllm_request("b", lora=2, images=[("img", 4)]), 0),
                             (vllm_request("c", images=[("img", 4)]), 0),
                             (vllm_request("d", lora=1), 4),
                             (vllm_request("e", lora=1, images=[("other", 4)]), 4),
                             (vllm_request("f", lora=1, images=[("img", 4)]), 8)]:
            self.assertEqual(m.get_computed_blocks(request)[1], hit, request.request_id)

    def test_residency_metrics_reach_the_schedulers_collector(self):
        # vLLM's scheduler builds its own collector under --kv-cache-metrics, hands it to the
        # manager and later drains it; this module's collector is served the same way.
        class VllmCollector:  # vLLM's KVCacheMetricsCollector as the scheduler holds it
            def __init__(self, sample_rate):
                self.sample_rate = sample_rate

            def drain_events(self):
                return ["vLLM's own pool is not used"]

        for collector in (KVCacheMetricsCollector(1.0), VllmCollector(1.0)):
            m = KVCacheManager(kv_cache_config=kv_cache_config(FullAttentionSpec(), num_blocks=3),
                               max_model_len=64, hash_block_size=4,
                               metrics_collector=collector)
            self.assertIs(m.metrics_collector, collector)
            a = Request("a", range(8))
            self.assertEqual(ids(m.allocate_slots(a, 8)), ([1, 2],))
            m.free(a)
            self.assertEqual(collector.drain_events(), [])
            b = Request("b", range(100, 108))
            self.assertEqual(ids(m.allocate_slots(b, 8)), ([2, 1],))
            events = collector.drain_events()
            self.assertEqual(len(events), 2)
            for e in events:
                self.assertIsInstance(e, KVCacheEvictionEvent)
                self.assertGreaterEqual(e.lifetime_seconds, e.idle_seconds)
                self.assertEqual(e.reuse_gaps_seconds, ())
            self.assertEqual(collector.drain_events(), [])
        self.assertEqual(KVCacheMetricsCollector().drain_events(), [])  # bound to no manager
        with self.assertRaisesRegex(ValueError, r"^sample_rate must be in \(0, 1.0\], got 0$"):
            KVCacheMetricsCollector(0)
        with self.assertRaisesRegex(TypeError, "^sample_rate must be a number, got str$"):
            KVCacheMetricsCollector("0.5")
        with self.assertRaisesRegex(ValueError, "^residency metrics sample rate 2 is not in"):
            KVCacheManager(layout=full_layout(), metrics_collector=VllmCollector(2))

    def test_events_and_skip_reading(self):
        m = KVCacheManager(layout=full_layout(), enable_kv_cache_events=True)
        a = Request("a", range(9), lora_id=3)
        m.allocate_slots(a, 9)
        (stored,) = m.take_events()
        self.assertIsInstance(stored, BlockStored)
        self.assertEqual(stored.token_ids, list(range(8)))
        self.assertEqual((stored.block_size, stored.lora_id, stored.medium), (4, 3, "GPU"))
        self.assertIsNone(stored.parent_block_hash)
        # As vLLM's events carry hashes by default: the low 64 bits, which msgpack encodes.
        self.assertEqual(stored.block_hashes,
                         [h & (2**64 - 1) for h in m.native.request_block_hashes("a")[:2]])
        # The group as vLLM's events name it; no adapter name for this module's lora_id.
        self.assertEqual((stored.kv_cache_spec_kind, stored.kv_cache_spec_sliding_window,
                          stored.lora_name), ("full_attention", None, None))
        self.assertIsNone(stored.extra_keys)  # no adapter name, image or salt keys a block
        self.assertEqual(m.take_events(), [])
        b = Request("b", range(9), skip_reading_prefix_cache=True)
        self.assertEqual(m.get_computed_blocks(b)[1], 0)
        m.free(a)
        m.free(b)
        self.assertTrue(m.reset_prefix_cache())
        self.assertEqual(m.take_events(), [AllBlocksCleared()])
        self.assertIsNone(m.make_prefix_cache_stats())  # log_stats off, as vLLM's default

    def test_events_name_the_group_and_the_adapter(self):
        m = KVCacheManager(layout=HYBRID_LAYOUT, enable_kv_cache_events=True)
        r = SimpleNamespace(request_id="r", all_token_ids=list(range(8)), num_tokens=8,
                            num_computed_tokens=0, num_preemptions=0, cache_salt=None,
                            lora_request=SimpleNamespace(lora_int_id=7, lora_name="sql-adapter"))
        m.allocate_slots(r, 8)
        stored = [(e.kv_cache_spec_kind, e.kv_cache_spec_sliding_window, e.lora_id, e.lora_name)
                  for e in m.take_events()]
        self.assertEqual(stored, [("full_attention", None, 7, "sql-adapter"),
                                  ("sliding_window", 5, 7, "sql-adapter")])

    def test_events_list_each_blocks_extra_keys_as_vllm_does(self):
        # vLLM's BlockStored.extra_keys, per block: the adapter's name, each image the block
        # overlaps as (identifier, offset from the block's start), the salt on the first block.
        m = KVCacheManager(layout=full_layout(), enable_kv_cache_events=True)
        r = SimpleNamespace(
            request_id="r", all_token_ids=list(range(12)), num_tokens=12, num_computed_tokens=0,
            num_preemptions=0, cache_salt="tenant-7",
            lora_request=SimpleNamespace(lora_int_id=7, lora_name="sql-adapter"),
            mm_features=[SimpleNamespace(identifier="img", mm_position=SimpleNamespace(
                offset=2, length=4))])
        m.allocate_slots(r, 12)
        (stored,) = m.take_events()
        self.assertEqual(stored.extra_keys, [("sql-adapter", ("img", 2), "tenant-7"),
                                                ("sql-adapter", ("img", -2)),
                                                ("sql-adapter",)])
        # Without the adapter, a block no image overlaps has no keys.
        r2 = Request("r2", range(100, 112), cache_salt="tenant-7")
        m.allocate_slots(r2, 12)
        (stored,) = m.take_events()
        self.assertEqual(stored.extra_keys, [("tenant-7",), None, None])

    def test_events_and_stats_are_vllms_own_types_inside_vllm(self):
        # Inside vLLM, its publisher encodes its tagged structs and its loggers read its stats:
        # the port hands out vLLM's classes (stand-ins of vLLM's modules here).
        made = []

        def record(name):
            def build(*args, **kwargs):
                made.append((name, args, kwargs))
                return name
            return build

        kv_events = SimpleNamespace(**{n: record(n) for n in (
            "BlockStored", "BlockRemoved", "AllBlocksCleared")})
        stats = SimpleNamespace(PrefixCacheStats=record("PrefixCacheStats"),
                                KVCacheEvictionEvent=record("KVCacheEvictionEvent"))
        modules = {"vllm": SimpleNamespace(), "vllm.distributed": SimpleNamespace(
            kv_events=kv_events), "vllm.distributed.kv_events": kv_events,
            "vllm.v1": SimpleNamespace(), "vllm.v1.metrics": SimpleNamespace(stats=stats),
            "vllm.v1.metrics.stats": stats}
        saved = {name: sys.modules.get(name) for name in modules}
        sys.modules.update(modules)
        vllm_compat._TYPES = None
        try:
            collector = KVCacheMetricsCollector(1.0)
            m = KVCacheManager(layout=full_layout(num_blocks=3), log_stats=True,
                               enable_kv_cache_events=True, metrics_collector=collector)
            a = Request("a", range(8))
            m.get_computed_blocks(a)
            m.allocate_slots(a, 8)
            m.free(a)
            m.allocate_slots(Request("b", range(100, 104)), 4)  # block 2 loses its hash
            self.assertEqual(m.take_events(), ["BlockStored", "BlockRemoved", "BlockStored"])
            self.assertEqual(m.make_prefix_cache_stats(), "PrefixCacheStats")
            self.assertEqual(collector.drain_events(), ["KVCacheEvictionEvent"])
        finally:
            for name, module in saved.items():
                if module is None:
                    del sys.modules[name]
                else:
                    sys.modules[name] = module
            vllm_compat._TYPES = None
        self.assertEqual([name for name, _, _ in made],
                         ["BlockStored", "BlockRemoved", "BlockStored", "PrefixCacheStats",
                          "KVCacheEvictionEvent"])
        self.assertEqual(set(made[0][2]), {
            "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
            "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind",
            "kv_cache_spec_sliding_window"})
        self.assertEqual(made[1][2]["medium"], "GPU")
        self.assertEqual(made[3][2]["requests"], 1)

    def test_event_hashes_follow_vllms_variable(self):
        m = KVCacheManager(layout=full_layout(), enable_kv_cache_events=True)
        full = m.native.request_block_hashes
        saved = os.environ.get("VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES")
        try:
            os.environ["VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES"] = "0"
            m.allocate_slots(Request("a", range(4)), 4)
            (stored,) = m.take_events()
            self.assertEqual(stored.block_hashes, [full("a")[0].to_bytes(16, "big")])
            os.environ["VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES"] = "yes"
            m.allocate_slots(Request("b", range(50, 54)), 4)
            with self.assertRaisesRegex(ValueError, "^VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES='yes' "
                                                    "is not an integer"):
                m.take_events()
        finally:
            if saved is None:
                del os.environ["VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES"]
            else:
                os.environ["VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES"] = saved

    def test_unset_max_num_batched_tokens_is_max_model_len(self):
        # vLLM's manager: "When unset, fall back to max_model_len"; a sliding window's
        # admission cap is then the whole length, not a window beside 8,192 scheduled tokens.
        config = kv_cache_config(SlidingWindowSpec(sliding_window=8))
        pages = [KVCacheManager(kv_cache_config=config, max_model_len=16384, hash_block_size=4,
                                **extra).native.geometries[0].to_dict()["max_pages_per_request"]
                 for extra in ({}, {"max_num_batched_tokens": 16384},
                               {"max_num_batched_tokens": 8192})]
        self.assertEqual(pages, [4097, 4097, 2051])

    def test_finishing_a_request_never_allocated(self):
        # With a KV connector, vLLM's scheduler calls remove_skipped_blocks and get_block_ids
        # for every finished request before free: one aborted while waiting holds no blocks.
        m = KVCacheManager(layout=HYBRID_LAYOUT)
        m.remove_skipped_blocks("aborted", 0)
        m.remove_skipped_blocks("aborted", 40)
        self.assertEqual(m.get_block_ids("aborted"), ([], []))
        m.free(Request("aborted", range(4)))
        self.assertNotIn("aborted", m.native)

    def test_stale_hits_are_a_clear_error(self):
        m = KVCacheManager(layout=full_layout(num_blocks=5))
        a = Request("a", range(8))
        m.allocate_slots(a, 8)
        m.free(a)
        b = Request("b", range(9))
        blocks, n = m.get_computed_blocks(b)
        self.assertEqual((ids(blocks), n), (([1, 2],), 8))
        c = Request("c", range(100, 116))  # takes every free block, 2 and 1 included
        m.allocate_slots(c, 16)
        with self.assertRaisesRegex(ValueError, "stale prefix hits: block 1 "):
            m.allocate_slots(b, 1, 8, blocks)


if __name__ == "__main__":
    unittest.main()
