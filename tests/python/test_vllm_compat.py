"""Scheduler sequences ported to kvtopo.vllm_compat, asserting exact block ids."""

import os
import sys
import unittest
from types import SimpleNamespace
from unittest import mock

import kvtopo
from kvtopo import vllm_compat
from kvtopo.vllm_compat import (AllBlocksCleared, BlockRemoved, BlockStored, KVCacheBlock,
                                KVCacheEvictionEvent, KVCacheManager, KVCacheMetricsCollector,
                                PrefixCacheStats, Request)


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

    # Equal as vLLM's frozen dataclasses are: the same class and fields.
    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash((type(self), tuple(sorted(vars(self).items(), key=lambda kv: kv[0]))))


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
        # vLLM returns only the blocks past the external tokens' (none here); its scheduler
        # hands the connector get_blocks().
        new = m.allocate_slots(r, 0, 4, blocks, num_external_computed_tokens=8,
                               delay_cache_blocks=True)
        self.assertEqual(ids(new), ([],))
        held = m.get_blocks("r")
        self.assertEqual((ids(held), held.get_unhashed_block_ids()), (([1, 3, 4],), [3, 4]))
        self.assertIsNone(held.blocks[0][2].block_hash)
        r.num_computed_tokens = 12
        m.cache_blocks(r, 12)
        self.assertEqual(held.get_unhashed_block_ids(), [])
        self.assertEqual(held.blocks[0][2].block_hash, (m.native.request_block_hashes("r")[2], 0))
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
        self.assertEqual(ids(new), ([], []))
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
        # One entry per stored block, None where no adapter name, image or salt keys it, as
        # vLLM's cache_full_blocks lists them.
        self.assertEqual(stored.extra_keys, [None, None])
        self.assertEqual(m.take_events(), [])
        # Hashable as vLLM's events are (its data-parallel aggregator counts them by hash), on
        # every field but lora_name.
        twin = BlockStored(**{**vars(stored), "lora_name": "other"})
        self.assertEqual(hash(twin), hash(stored))
        removed = BlockRemoved(block_hashes=[5], medium="GPU", group_idx=0)
        self.assertEqual(len({removed, BlockRemoved([5], "GPU", 0), stored}), 2)
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
        r = mm_request("r", range(12), [("img", 2, 4)], cache_salt="tenant-7",
                       lora=(7, "sql-adapter"))
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
        with mock.patch.dict(os.environ, {"VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES": "0"}):
            m.allocate_slots(Request("a", range(4)), 4)
            (stored,) = m.take_events()
            self.assertEqual(stored.block_hashes, [full("a")[0].to_bytes(16, "big")])
            os.environ["VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES"] = "yes"
            m.allocate_slots(Request("b", range(50, 54)), 4)
            with self.assertRaisesRegex(ValueError, "^VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES='yes' "
                                                    "is not an integer"):
                m.take_events()

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


def mm_request(request_id, token_ids, items=(), cache_salt=None, lora=None):
    """vLLM's Request with images (items: (identifier, offset, length)) and an adapter (lora:
    (lora_int_id, lora_name))."""
    return SimpleNamespace(
        request_id=request_id, all_token_ids=list(token_ids), num_tokens=len(token_ids),
        num_computed_tokens=0, num_preemptions=0, cache_salt=cache_salt,
        lora_request=lora and SimpleNamespace(lora_int_id=lora[0], lora_name=lora[1]),
        mm_features=[SimpleNamespace(identifier=i, mm_position=SimpleNamespace(
            offset=offset, length=length)) for i, offset, length in items])


class EngineScenarios(unittest.TestCase):
    """Sequences vLLM's own prefix-caching tests (tests/v1/core/test_prefix_caching.py at the
    fork's 28be48fa9) run on its KVCacheManager, run here through the scheduler's call: the block
    ids, free-queue orders, hits and failures asserted are the engine's results."""

    @staticmethod
    def manager(block_size, num_blocks, enable_caching=True):
        return KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=block_size),
                                              num_blocks=num_blocks),
                              max_model_len=8192, hash_block_size=block_size,
                              enable_caching=enable_caching)

    @staticmethod
    def drop_keys(m, hashes, keys):
        """Takes each (hash block index, group) out of the prefix cache: every block cached
        under it is evicted, as removing the key from vLLM's map does."""
        inspect = m.native.inspector()
        for k, group in keys:
            while (block := inspect.lookup(hashes[k], group)) is not None:
                m.evict_blocks({block})

    def admit(self, m, request, num_new_tokens=None):
        blocks, hit = m.get_computed_blocks(request)
        n = request.num_tokens - hit if num_new_tokens is None else num_new_tokens
        return m.allocate_slots(request, n, hit, blocks), blocks, hit

    def test_prefill_shares_full_blocks_and_frees_tails_first(self):
        m = self.manager(16, 11)
        common = [i for i in range(3) for _ in range(16)]
        r0 = Request("0", common + [3] * 7)
        new, _, hit = self.admit(m, r0)
        self.assertEqual((ids(new), hit), (([1, 2, 3, 4],), 0))
        inspect = m.native.inspector()
        self.assertEqual([inspect.block_hash(b) is not None for b in (1, 2, 3, 4)],
                         [True, True, True, False])
        r1 = Request("1", common + [3] * 5)
        new, hits, hit = self.admit(m, r1)
        self.assertEqual((ids(hits), hit, ids(new)), (([1, 2, 3],), 48, ([5],)))
        self.assertEqual([inspect.ref_count(b) for b in (1, 2, 3)], [2, 2, 2])
        self.assertEqual(m.native.num_free_blocks, 5)
        m.free(r0)
        m.free(r1)
        self.assertEqual(inspect.free_queue(), [6, 7, 8, 9, 10, 4, 5, 3, 2, 1])
        r2 = Request("2", common + [3] * 6)
        new, hits, hit = self.admit(m, r2)
        self.assertEqual((ids(hits), hit, ids(new)), (([1, 2, 3],), 48, ([6],)))
        self.assertEqual(m.native.num_free_blocks, 6)
        m.free(r2)
        new, _, hit = self.admit(m, Request("3", [99] * 160))
        self.assertEqual((ids(new), hit), (([7, 8, 9, 10, 4, 5, 6, 3, 2, 1],), 0))
        self.assertEqual(inspect.free_queue(), [])

    def test_a_recomputed_block_keeps_both_copies_cached(self):
        # A prompt given twice recomputes its last block (a hit never covers the whole prompt):
        # both copies stay cached, a lookup finds the first (vLLM's BlockHashToBlockMap), and
        # each copy is removed with its own event when its block is reused.
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=16), num_blocks=8),
                           max_model_len=8192, hash_block_size=16, enable_kv_cache_events=True)
        prompt = list(range(32))
        r0 = Request("0", prompt)
        self.assertEqual(ids(self.admit(m, r0)[0]), ([1, 2],))
        m.free(r0)
        r1 = Request("1", prompt)
        new, hits, hit = self.admit(m, r1)
        self.assertEqual((ids(hits), hit, ids(new)), (([1],), 16, ([3],)))
        inspect = m.native.inspector()
        self.assertEqual(inspect.block_hash(2), inspect.block_hash(3))
        h0, h1 = (h & (2**64 - 1) for h in m.native.request_block_hashes("1")[:2])
        r2 = Request("2", prompt + [7])
        new, hits, hit = self.admit(m, r2)
        self.assertEqual((ids(hits), hit, ids(new)), (([1, 2],), 32, ([4],)))
        self.assertEqual(m.native.num_free_blocks, 3)  # 1, 2, 3 and 4 in use
        for r in (r1, r2):
            m.free(r)
        m.take_events()
        self.assertEqual(inspect.free_queue(), [5, 6, 7, 3, 4, 2, 1])
        new, _, _ = self.admit(m, Request("3", [99] * 112))
        self.assertEqual(ids(new), ([5, 6, 7, 3, 4, 2, 1],))
        removed = [e.block_hashes for e in m.take_events() if isinstance(e, BlockRemoved)]
        self.assertEqual(removed, [[h1], [h1], [h0]])  # blocks 3 and 2 held the same content

    def test_decode_caches_a_block_once_it_fills(self):
        m = self.manager(16, 11)
        r0 = Request("0", [i for i in range(3) for _ in range(16)] + [3] * 7)
        new, _, _ = self.admit(m, r0)
        self.assertEqual(ids(new), ([1, 2, 3, 4],))
        inspect = m.native.inspector()
        r0.num_computed_tokens = 55
        r0.append_output_token_ids([8] * 4)
        self.assertEqual(ids(m.allocate_slots(r0, 4)), ([],))
        self.assertIsNone(inspect.block_hash(4))
        r0.num_computed_tokens = 59
        r0.append_output_token_ids([7] * 19)
        self.assertEqual(ids(m.allocate_slots(r0, 19)), ([5],))
        self.assertIsNotNone(inspect.block_hash(4))
        self.assertIsNone(inspect.block_hash(5))

    def test_evict_reuses_the_least_recently_freed_block(self):
        m = self.manager(16, 11)
        r0 = Request("0", range(5 * 16 + 7))
        new, _, _ = self.admit(m, r0)
        self.assertEqual(len(ids(new)[0]), 6)
        r1 = Request("1", range(5 * 16 + 7, 5 * 16 + 7 + 3 * 16))
        new, _, _ = self.admit(m, r1)
        self.assertEqual(len(ids(new)[0]), 3)
        self.assertEqual(m.native.num_free_blocks, 1)
        m.free(r0)
        m.free(r1)
        self.assertEqual(m.native.inspector().free_queue(), [10, 6, 5, 4, 3, 2, 1, 9, 8, 7])
        new, hits, hit = self.admit(m, Request("2", range(2 * 16 + 3)))
        self.assertEqual((ids(hits), hit, ids(new)), (([1, 2],), 32, ([10],)))
        self.assertEqual(m.native.num_free_blocks, 7)

    def test_a_reused_block_loses_its_old_hash(self):
        m = self.manager(16, 2)
        r = Request("0", range(16))
        self.admit(m, r)
        m.free(r)
        new, _, hit = self.admit(m, Request("1", range(15)))
        self.assertEqual(hit, 0)
        self.assertIsNone(m.native.inspector().block_hash(ids(new)[0][0]))

    def test_hits_are_not_evicted_while_other_blocks_are_free(self):
        m = self.manager(16, 3)
        r0, r1 = Request("0", range(16)), Request("1", range(16, 32))
        self.assertEqual(ids(self.admit(m, r0)[0]), ([1],))
        self.assertEqual(ids(self.admit(m, r1)[0]), ([2],))
        m.free(r0)
        m.free(r1)
        new, hits, hit = self.admit(m, Request("2", range(32)))
        self.assertEqual((ids(hits), hit, ids(new)), (([1],), 16, ([2],)))

    def test_without_prefix_caching_nothing_hits(self):
        m = self.manager(4, 5, enable_caching=False)
        r1 = Request("1", range(10))
        self.assertEqual(len(ids(self.admit(m, r1)[0])[0]), 3)
        m.free(r1)
        new, _, hit = self.admit(m, Request("2", range(16)))
        self.assertEqual((hit, len(ids(new)[0])), (0, 4))
        self.assertIsNone(self.admit(m, Request("3", range(4)))[0])

    def test_images_key_the_blocks_they_overlap(self):
        m = self.manager(16, 11)
        common = (list(range(10)) + [-1] * 6 + [-1] * 4 + list(range(10, 20)) + [-1] * 2
                  + [-1] * 16)
        items = [("aaa", 11, 10), ("bbb", 30, 18), ("ccc", 48, 7)]
        r0 = mm_request("0", common + [-1] * 7 + [100] * 4, items)
        new, _, _ = self.admit(m, r0)
        self.assertEqual(ids(new), ([1, 2, 3, 4],))
        r1 = mm_request("1", common + [-1] * 7 + [200] * 5, items)
        self.assertEqual(m.get_computed_blocks(r1)[1], 48)
        # Another image where "bbb" was: only the block before it hits.
        r2 = mm_request("2", common + [-1] * 7 + [200] * 5,
                        [("aaa", 11, 10), ("zzz", 30, 18), ("ccc", 48, 7)])
        self.assertEqual(m.get_computed_blocks(r2)[1], 16)

    def test_a_cache_salt_separates_the_cache(self):
        m = self.manager(16, 11)
        common = [i for i in range(3) for _ in range(16)]
        new, _, _ = self.admit(m, Request("0", common + [3] * 11, cache_salt="salt1"))
        self.assertEqual(ids(new), ([1, 2, 3, 4],))
        self.assertEqual(m.get_computed_blocks(
            Request("1", common + [4] * 11, cache_salt="salt1"))[1], 48)
        self.assertEqual(m.get_computed_blocks(
            Request("2", common + [4] * 11, cache_salt="salt2"))[1], 0)

    def test_a_failed_admission_leaves_its_hits_untouched(self):
        m = self.manager(16, 11)
        inspect = m.native.inspector()
        common = [i for i in range(3) for _ in range(16)]
        r0 = Request("0", common)
        self.admit(m, r0, 48)
        r1 = Request("1", common * 2)
        _, hits, hit = self.admit(m, r1, 48)
        self.assertEqual((ids(hits), hit), (([1, 2, 3],), 48))
        part1 = m.get_block_ids("1")[0]
        m.free(r1)
        self.assertEqual([inspect.ref_count(b) for b in part1], [1, 1, 1, 0, 0, 0])
        self.admit(m, Request("2", [7] * 32))
        self.assertEqual(m.native.num_free_blocks, 5)
        r3 = Request("3", common * 3)
        blocks, hit = m.get_computed_blocks(r3)
        self.assertEqual((ids(blocks), hit), ((part1,), 96))
        self.assertIsNone(m.allocate_slots(r3, 48, hit, blocks))
        self.assertEqual([inspect.ref_count(b) for b in part1], [1, 1, 1, 0, 0, 0])

    def test_eagle_drops_the_last_hit_block(self):
        # 48 equal tokens: a hit stops a token short (2 blocks), EAGLE drops the last (1); 37
        # tokens likewise.
        for n in (48, 37):
            m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=16), num_blocks=10),
                               max_model_len=8192, hash_block_size=16, use_eagle=True)
            r = Request("a", [0] * n)
            self.admit(m, r)
            m.free(r)
            blocks, hit = m.get_computed_blocks(Request("b", [0] * n))
            self.assertEqual((len(ids(blocks)[0]), hit), (1, 16), n)

    def test_eagle_on_a_sliding_window(self):
        m = KVCacheManager(kv_cache_config(SlidingWindowSpec(block_size=16, sliding_window=16),
                                           num_blocks=10),
                           max_model_len=8192, hash_block_size=16, use_eagle=True)
        r = Request("a", [0] * 37)
        self.admit(m, r)
        first = m.native.request_block_hashes("a")[0]
        m.free(r)
        blocks, hit = m.get_computed_blocks(Request("b", [0] * 37))
        self.assertEqual((len(ids(blocks)[0]), hit), (1, 16))
        holder = m.native.inspector().lookup(first, 0)
        self.assertIsNotNone(holder)
        m.evict_blocks({holder})
        self.assertEqual(m.get_computed_blocks(Request("c", [0] * 37))[1], 0)

    def test_events_of_a_full_pool_reused(self):
        for n in (2, 3, 10):
            m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=16),
                                               num_blocks=n + 1),
                               max_model_len=8192, hash_block_size=16,
                               enable_kv_cache_events=True)
            r0 = Request("0", range(16 * n))
            m.allocate_slots(r0, 16 * n)
            (stored,) = m.take_events()
            self.assertIsInstance(stored, BlockStored)
            self.assertEqual((len(stored.block_hashes), len(stored.token_ids),
                              stored.kv_cache_spec_kind), (n, 16 * n, "full_attention"))
            m.free(r0)
            # The same tokens again, without a lookup: every cached block is handed out anew.
            m.allocate_slots(Request("1", range(16 * n)), 16 * n)
            events = m.take_events()
            self.assertEqual(len(events), n + 1)
            self.assertEqual([type(e).__name__ for e in events],
                             ["BlockRemoved"] * n + ["BlockStored"])
            self.assertEqual(sorted(e.block_hashes[0] for e in events[:-1]),
                             sorted(stored.block_hashes))
            self.assertEqual(len(events[-1].block_hashes), n)
            m.free(Request("1", ()))
            self.assertTrue(m.reset_prefix_cache())
            self.assertEqual(m.take_events(), [AllBlocksCleared()])

    def test_events_name_the_adapter_id(self):
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=16), num_blocks=4),
                           max_model_len=8192, hash_block_size=16, enable_kv_cache_events=True)
        lora = mm_request("lora", range(48), lora=(42, "test_lora"))
        m.allocate_slots(lora, 48)
        (stored,) = m.take_events()
        self.assertEqual((stored.lora_id, len(stored.block_hashes), stored.block_size),
                         (42, 3, 16))
        m.free(lora)
        m.allocate_slots(Request("plain", range(48)), 48)
        stored = m.take_events()[-1]
        self.assertEqual((stored.lora_id, len(stored.block_hashes), stored.block_size),
                         (None, 3, 16))

    def hybrid_after_two_requests(self, window, num_blocks, full_blocks, use_eagle):
        """Full attention beside two groups of one window, 16-token blocks: a request of
        `full_blocks` distinct full blocks and 7 more tokens, then one of the same full blocks
        and 5 more, both freed. Returns the manager, the first request's blocks, the second's
        hits, hit tokens and new blocks, and the second's block hashes."""
        spec = SlidingWindowSpec(block_size=16, sliding_window=window)
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=16), spec, spec,
                                           num_blocks=num_blocks),
                           max_model_len=8192, hash_block_size=16, use_eagle=use_eagle)
        common = [i for i in range(full_blocks) for _ in range(16)]
        r0 = Request("0", common + [full_blocks] * 7)
        new, _, _ = self.admit(m, r0)
        r1 = Request("1", common + [full_blocks] * 5)
        new1, hits, hit = self.admit(m, r1)
        hashes = m.native.request_block_hashes("1")
        m.free(r0)
        m.free(r1)
        return m, ids(new), (ids(hits), hit, ids(new1)), hashes

    def check_partial_hits(self, setup, tokens, cases):
        """Each case drops some (hash block, group) keys from a fresh setup's cache: `tokens`
        (the second request's) then hit the longest prefix every group can serve."""
        for keys, hit_blocks in cases:
            m, _, _, hashes = setup()
            self.drop_keys(m, hashes, keys)
            blocks, hit = m.get_computed_blocks(Request("x", tokens))
            self.assertEqual(hit, 16 * hit_blocks, keys)
            self.assertEqual([len(g) for g in ids(blocks)], [hit_blocks] * 3, keys)

    def test_hybrid_prefill_and_partial_hits(self):
        # A 32-token window: the windows need only their last blocks of a hit.
        def setup():
            return self.hybrid_after_two_requests(32, 21, 3, use_eagle=False)

        _, first, second, _ = setup()
        self.assertEqual(first, ([1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]))
        self.assertEqual(second, (([1, 2, 3], [0, 6, 7], [0, 10, 11]), 48, ([13], [14], [15])))
        tokens = [i for i in range(3) for _ in range(16)] + [3] * 5
        self.check_partial_hits(setup, tokens, [
            ([(0, 1), (0, 2)], 3), ([(0, 0)], 0), ([(2, 0), (2, 1), (2, 2)], 2), ([(2, 0)], 2),
            ([(2, 1)], 2), ([(2, 2)], 2), ([(2, 0), (0, 1), (0, 2)], 0)])

    def test_hybrid_eagle_prefill_and_partial_hits(self):
        # A 48-token window under EAGLE: every group drops its last hit block.
        def setup():
            return self.hybrid_after_two_requests(48, 31, 6, use_eagle=True)

        _, first, second, _ = setup()
        self.assertEqual(first, ([1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14],
                                 [15, 16, 17, 18, 19, 20, 21]))
        self.assertEqual(second, (([1, 2, 3, 4, 5], [0, 0, 10, 11, 12], [0, 0, 17, 18, 19]), 80,
                                  ([22, 23], [24, 25], [26, 27])))
        tokens = [i for i in range(6) for _ in range(16)] + [6] * 5
        self.check_partial_hits(setup, tokens, [
            ([(0, 1), (0, 2)], 5), ([(0, 0)], 0), ([(5, 0), (5, 1), (5, 2)], 4), ([(5, 0)], 4),
            ([(4, 1)], 3), ([(4, 2)], 3), ([(5, 0), (0, 1), (0, 2)], 4)])

    @staticmethod
    def two_sizes(full_block, window_block, window, num_blocks=100):
        return KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=full_block),
                                              SlidingWindowSpec(block_size=window_block,
                                                                sliding_window=window),
                                              num_blocks=num_blocks),
                              max_model_len=8192, hash_block_size=window_block)

    def test_groups_of_two_block_sizes_hit_at_their_lcm(self):
        m = self.two_sizes(32, 16, 32)
        tokens = [i for i in range(10) for _ in range(16)]
        r0 = Request("0", tokens)
        blocks, hit = m.get_computed_blocks(r0)
        self.assertEqual(ids(m.allocate_slots(r0, 7 * 16, hit, blocks)),
                         ([1, 2, 3, 4], [5, 6, 7, 8, 9, 10, 11]))
        for n in (7 * 16 + 1, 6 * 16 + 1):
            blocks, hit = m.get_computed_blocks(Request(f"r{n}", tokens[:n]))
            self.assertEqual(([len(g) for g in ids(blocks)], hit), ([3, 6], 96), n)
        m.evict_blocks({11, 10})  # the window's blocks of hash blocks 6 and 5
        blocks, hit = m.get_computed_blocks(Request("1", tokens[:7 * 16 + 1]))
        self.assertEqual(([len(g) for g in ids(blocks)], hit), ([2, 4], 64))

    def test_a_window_caches_only_blocks_a_hit_can_read(self):
        # A one-block window beside 4-block full-attention blocks: within each 32-token segment
        # only the window's last block can serve a hit, so only hash blocks 3 and 7 are cached.
        m = self.two_sizes(32, 8, 8)
        r = Request("0", [i for i in range(8) for _ in range(8)])
        blocks, hit = m.get_computed_blocks(r)
        self.assertIsNotNone(m.allocate_slots(r, 64, hit, blocks))
        inspect, hashes = m.native.inspector(), m.native.request_block_hashes("0")
        self.assertEqual([k for k in range(8) if inspect.lookup(hashes[k], 1) is not None],
                         [3, 7])

    def test_a_window_caches_nothing_past_the_lcm(self):
        m = self.two_sizes(32, 16, 32)
        r = Request("0", [i for i in range(7) for _ in range(16)])
        blocks, hit = m.get_computed_blocks(r)
        self.assertIsNotNone(m.allocate_slots(r, 7 * 16, hit, blocks))
        inspect, hashes = m.native.inspector(), m.native.request_block_hashes("0")
        self.assertEqual([k for k in range(7) if inspect.lookup(hashes[k], 1) is not None],
                         [0, 1, 2, 3, 4, 5])

    def test_whole_sequence_admission_counts_a_window_as_it_recycles(self):
        # A 64-token window beside full attention, 128 tokens a step, up to 1,024 tokens: a
        # 512-token prompt fits a pool of 64 + 13 blocks (the engine's case), since the window
        # holds at most cdiv(63 + 128, 16) + 1 = 13 blocks at a time; a 256-token one does not
        # fit 4 blocks. The two pools between, by the same rule: 32 + 13 blocks fit the 512
        # tokens exactly, one fewer does not.
        for num_blocks, prompt, fits in ((64 + 13 + 1, 512, True), (5, 256, False),
                                         (32 + 13 + 1, 512, True), (32 + 13, 512, False)):
            m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=16),
                                               SlidingWindowSpec(block_size=16,
                                                                 sliding_window=64),
                                               num_blocks=num_blocks),
                               max_model_len=1024, max_num_batched_tokens=128,
                               hash_block_size=16)
            new = m.allocate_slots(Request("r", range(prompt)), 16, full_sequence_must_fit=True)
            self.assertEqual(new is not None, fits, num_blocks)

    def test_hybrid_combinations_hit_every_full_block(self):
        # vLLM's test_prefill_hybrid_model_combinations: 16-token blocks, windows of 2 and 4
        # blocks, Mamba in its default mode (none, which vLLM's manager runs as all), 10 blocks
        # a group; after 55 tokens, 53 tokens sharing the first 48 hit all 48 in every mix.
        def spec(kind):
            if kind == "mamba":
                return MambaSpec(block_size=16, mamba_cache_mode="none", num_speculative_blocks=0)
            if kind == "full":
                return FullAttentionSpec(block_size=16)
            return SlidingWindowSpec(block_size=16, sliding_window={"sw": 32, "sw_large": 64}[kind])

        for kinds in (["full", "sw"], ["full", "mamba"], ["sw", "mamba"], ["sw", "sw_large"],
                      ["full", "sw", "sw"], ["full", "mamba", "mamba"], ["full", "sw", "mamba"],
                      ["full", "sw", "sw_large"], ["full", "full", "sw"],
                      ["full", "full", "mamba"], ["full", "sw", "full", "sw_large"],
                      ["full", "mamba", "full", "mamba"], ["sw", "mamba", "sw_large", "mamba"],
                      ["full", "full", "sw", "mamba"]):
            m = KVCacheManager(kv_cache_config(*map(spec, kinds), num_blocks=10 * len(kinds)),
                               max_model_len=8192, hash_block_size=16)
            common = [i for i in range(3) for _ in range(16)]
            r0 = Request("0", common + [3] * 7)
            new, _, hit = self.admit(m, r0)
            self.assertEqual((hit, len(ids(new))), (0, len(kinds)), kinds)
            m.new_step_starts()
            r1 = Request("1", common + [4] * 5)
            new, hits, hit = self.admit(m, r1)
            self.assertEqual((hit, len(ids(hits)), len(ids(new))), (48, len(kinds), len(kinds)),
                             kinds)
            m.free(r0)
            m.free(r1)

    def test_hybrid_eagle_combination(self):
        # Full attention beside a 32-token window under EAGLE: 64 shared tokens hit 3 blocks.
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=16),
                                           SlidingWindowSpec(block_size=16, sliding_window=32),
                                           num_blocks=20),
                           max_model_len=8192, hash_block_size=16, use_eagle=True)
        common = [i for i in range(4) for _ in range(16)]
        self.admit(m, Request("0", common + [4] * 7))
        new, hits, hit = self.admit(m, Request("1", common + [6] * 5))
        self.assertEqual((hit, [len(g) for g in ids(hits)], len(ids(new))), (48, [3, 3], 2))

    def test_prompt_logprobs_requests_read_no_hits_but_cache(self):
        # vLLM's test_prefill_plp: a request asking for prompt logprobs skips the lookup, and its
        # fresh blocks cache the same hashes as the first request's.
        m = self.manager(16, 11)
        inspect = m.native.inspector()
        common = [i for i in range(3) for _ in range(16)]
        r0 = Request("0", common + [3] * 7, skip_reading_prefix_cache=True)
        new, _, hit = self.admit(m, r0)
        self.assertEqual((ids(new), hit), (([1, 2, 3, 4],), 0))
        first = [inspect.block_hash(b) for b in (1, 2, 3, 4)]
        r1 = Request("1", common + [3] * 5)
        new, hits, hit = self.admit(m, r1)
        self.assertEqual((ids(hits), hit, ids(new)), (([1, 2, 3],), 48, ([5],)))
        m.free(r0)
        m.free(r1)
        self.assertEqual(inspect.free_queue(), [6, 7, 8, 9, 10, 4, 5, 3, 2, 1])
        r2 = Request("2", common + [3] * 6, skip_reading_prefix_cache=True)
        new, _, hit = self.admit(m, r2)
        self.assertEqual((ids(new), hit), (([6, 7, 8, 9],), 0))
        self.assertEqual([inspect.block_hash(b) for b in (6, 7, 8, 9)], first)
        self.assertEqual([inspect.ref_count(b) for b in (6, 7, 8, 9)], [1, 1, 1, 1])

    def test_stored_events_name_each_group(self):
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=4),
                                           SlidingWindowSpec(block_size=4, sliding_window=128),
                                           num_blocks=5),
                           max_model_len=8192, hash_block_size=4, enable_kv_cache_events=True)
        m.allocate_slots(Request("r", range(8)), 8)
        self.assertEqual([(e.group_idx, e.kv_cache_spec_kind, e.kv_cache_spec_sliding_window,
                           len(e.block_hashes)) for e in m.take_events()],
                         [(0, "full_attention", None, 2), (1, "sliding_window", 128, 2)])

    def test_eagle_beside_mamba_drops_attention_blocks_only(self):
        # vLLM's scheduler sets use_eagle for MTP too (Qwen3-Next's own drafter); its Mamba
        # manager takes the flag and ignores it. The port refused the whole config.
        config = kv_cache_config(FullAttentionSpec(block_size=16),
                                 MambaSpec(block_size=16, mamba_cache_mode="align",
                                           num_speculative_blocks=3), num_blocks=40)
        layout = vllm_compat._layout_from_kv_cache_config(config, 8192, 16, None, True, 1, 1)
        self.assertEqual([g["volatile_last_block"] for g in layout["groups"]], [True, False])
        m = KVCacheManager(kv_cache_config=config, max_model_len=8192, hash_block_size=16,
                           use_eagle=True)
        new, _, _ = self.admit(m, Request("0", range(55)))
        # Align mode: the state in the last of cdiv(55, 16) columns, nulls before it, then the
        # 3 speculative blocks.
        self.assertEqual(ids(new), ([1, 2, 3, 4], [0, 0, 0, 5, 6, 7, 8]))

    def test_aligned_mamba_beside_full_attention(self):
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=16),
                                           MambaSpec(block_size=16, mamba_cache_mode="align",
                                                     num_speculative_blocks=0),
                                           num_blocks=30),
                           max_model_len=8192, hash_block_size=16)
        r = Request("0", [i for i in range(3) for _ in range(16)] + [3] * 7)
        new, _, hit = self.admit(m, r)
        self.assertEqual(hit, 0)
        # Align mode: the state in the last of cdiv(55, 16) columns, nulls before it.
        self.assertEqual(ids(new), ([1, 2, 3, 4], [0, 0, 0, 5]))
        m.free(r)
        self.assertEqual(m.native.num_free_blocks, 29)

    def test_blocks_left_behind_by_a_window_and_a_chunk(self):
        # vLLM's test_single_type_kv_cache_manager: 2-token blocks, 11 of them in a row, the
        # computed count growing; a 4-token window keeps the blocks of the last 3 tokens, a
        # 4-token chunk the blocks of the current chunk.
        for spec, steps in [
                (SlidingWindowSpec(block_size=2, sliding_window=4),
                 [(0, 0), (4, 0), (5, 1), (6, 1), (7, 2), (11, 4)]),
                (ChunkedLocalAttentionSpec(block_size=2, attention_chunk_size=4),
                 [(0, 0), (4, 2), (6, 2), (12, 6)])]:
            m = KVCacheManager(kv_cache_config(spec, num_blocks=20), max_model_len=64,
                               hash_block_size=2)
            r = Request("test", range(22))
            self.assertEqual(ids(m.allocate_slots(r, 22)), (list(range(1, 12)),))
            for computed, skipped in steps:
                m.remove_skipped_blocks("test", computed)
                self.assertEqual(m.get_block_ids("test"),
                                 ([0] * skipped + list(range(1 + skipped, 12)),),
                                 (type(spec).__name__, computed))

    def test_reset_waits_until_every_block_is_free(self):
        m = self.manager(16, 11)
        common = [i for i in range(3) for _ in range(16)]
        r0 = Request("0", common + [3] * 7)
        self.assertEqual(ids(m.allocate_slots(r0, 55)), ([1, 2, 3, 4],))
        r1 = Request("1", common + [4] * 7)
        new, hits, hit = self.admit(m, r1)
        self.assertEqual((len(ids(hits)[0]), ids(new)), (3, ([5],)))
        self.assertFalse(m.reset_prefix_cache())
        m.free(r0)
        m.free(r1)
        self.assertTrue(m.reset_prefix_cache())
        inspect = m.native.inspector()
        self.assertEqual([inspect.block_hash(b) for b in range(11)], [None] * 11)


class EngineManagerRules(unittest.TestCase):
    """Call sequences on which the fork's own manager files (vllm/v1/core/
    single_type_kv_cache_manager.py, kv_cache_coordinator.py, kv_cache_manager.py at 28be48fa9),
    run over the same calls, give these block ids, rows, returns and free-queue orders."""

    def test_aligned_mamba_reuses_its_speculative_blocks(self):
        # The running column reaching the speculative block makes that block the running state
        # in place; one fresh block is appended and returned (what vLLM's worker appends).
        for spec, rows, moved in [
                (1, [[0, 1, 2], [0, 1, 2, 3], [0, 0, 2, 3], [0, 0, 2, 0, 3, 4]], [3, 4]),
                (2, [[0, 1, 2, 3], [0, 1, 2, 3, 4], [0, 0, 2, 3, 4], [0, 0, 2, 0, 4, 3, 5]],
                 [3, 5])]:
            with self.subTest(num_speculative_blocks=spec):
                m = KVCacheManager(kv_cache_config(
                    MambaSpec(block_size=4, mamba_cache_mode="align", num_speculative_blocks=spec),
                    num_blocks=16), max_model_len=64, hash_block_size=4)
                r = Request("a", range(8))
                self.assertEqual(ids(m.allocate_slots(r, 8)), (rows[0],))
                r.num_computed_tokens = 8
                r.append_output_token_ids([50])
                self.assertEqual(ids(m.allocate_slots(r, 1)), ([rows[1][-1]],))
                self.assertEqual(m.get_block_ids("a"), (rows[1],))
                for k in range(3):
                    r.num_computed_tokens += 1
                    r.append_output_token_ids([51 + k])
                    self.assertEqual(ids(m.allocate_slots(r, 1)), ([],))
                self.assertEqual(m.get_block_ids("a"), (rows[2],))
                # Two blocks further: the speculative blocks the running column passes move to
                # the row's end, leaving nulls; the moved and the fresh blocks are returned.
                new = m.allocate_slots(r, 8)
                self.assertEqual(m.get_block_ids("a"), (rows[3],))
                self.assertEqual(ids(new), (moved,))
                self.assertEqual(m.native.inspector().free_queue()[-1], 1)

    def test_aligned_mamba_keeps_the_previous_state_cached(self):
        # The previous running state (column 2, written at token 10) is cached under the hash of
        # tokens 0-11 once 13 tokens are known, as vLLM's cache_blocks caches every non-null
        # block of the full columns.
        m = KVCacheManager(kv_cache_config(
            MambaSpec(block_size=4, mamba_cache_mode="align", num_speculative_blocks=2),
            num_blocks=40), max_model_len=96, hash_block_size=4)
        inspect = m.native.inspector()
        r = Request("a", range(10))
        self.assertEqual(ids(m.allocate_slots(r, 10, num_lookahead_tokens=2)), ([0, 0, 1, 2, 3],))
        r.num_computed_tokens = 10
        r.append_output_token_ids([900])
        m.new_step_starts()
        self.assertEqual(ids(m.allocate_slots(r, 3, num_lookahead_tokens=2)), ([4],))
        self.assertEqual([b for b in range(1, 40) if inspect.block_hash(b) is not None], [])
        r.num_computed_tokens = 12
        r.append_output_token_ids([901, 902])
        m.new_step_starts()
        self.assertEqual(ids(m.allocate_slots(r, 3, num_lookahead_tokens=2)), ([],))
        self.assertEqual(m.get_block_ids("a"), ([0, 0, 1, 2, 3, 4],))
        self.assertEqual([b for b in range(1, 40) if inspect.block_hash(b) is not None], [1])
        self.assertEqual(inspect.block_hash(1), (m.native.request_block_hashes("a")[2], 0))

    def test_a_mamba_hit_cached_again_this_step_waits(self):
        # c's hit (block 2, cached a step earlier by a) holds content b cached again, in block
        # 3, this step: vLLM's Mamba manager defers any hit whose hash was cached this step.
        m = KVCacheManager(kv_cache_config(MambaSpec(block_size=4, mamba_cache_mode="align",
                                                     num_speculative_blocks=0),
                                           num_blocks=16), max_model_len=64, hash_block_size=4)
        prompt = list(range(100, 112))
        a, b, c = (Request(n, prompt + [t]) for n, t in (("a", 1), ("b", 2), ("c", 3)))
        m.new_step_starts()
        self.assertEqual(ids(m.allocate_slots(b, 4)), ([1],))
        b.num_computed_tokens = 4
        m.new_step_starts()
        hits, n = m.get_computed_blocks(a)
        self.assertEqual((ids(hits), n), (([1],), 4))
        self.assertEqual(ids(m.allocate_slots(a, 8, 4, hits)), ([0, 2],))
        a.num_computed_tokens = 12
        m.new_step_starts()
        self.assertEqual(ids(m.allocate_slots(b, 8)), ([0, 3],))
        b.num_computed_tokens = 12
        hits, n = m.get_computed_blocks(c)
        self.assertEqual((ids(hits), n), (([0, 0, 2],), 12))
        self.assertIsNone(m.allocate_slots(c, 1, 12, hits))
        m.new_step_starts()
        self.assertEqual(ids(m.allocate_slots(c, 1, 12, hits)), ([4],))

    def test_external_tokens_take_their_blocks_before_new_tokens(self):
        # Every group's blocks for the 8 external tokens first, then each group's new-token
        # block, which alone is returned.
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=4),
                                           SlidingWindowSpec(block_size=4, sliding_window=8)),
                           max_model_len=128, hash_block_size=4)
        self.assertEqual(ids(m.allocate_slots(Request("a", range(30)), 4,
                                              num_external_computed_tokens=8)), ([5], [6]))
        self.assertEqual(m.get_block_ids("a"), ([1, 2, 5], [3, 4, 6]))
        # An aligned Mamba group's external block holds the loaded state (column 2 at 10
        # tokens); the new tokens' state follows it.
        for spec, mamba_row in [(0, [0, 0, 4, 6]), (1, [0, 0, 4, 6, 7])]:
            with self.subTest(num_speculative_blocks=spec):
                m = KVCacheManager(kv_cache_config(
                    FullAttentionSpec(block_size=4),
                    MambaSpec(block_size=4, mamba_cache_mode="align",
                              num_speculative_blocks=spec)), max_model_len=128, hash_block_size=4)
                new = m.allocate_slots(Request("a", range(30)), 4, num_external_computed_tokens=10)
                self.assertEqual(ids(new), ([5], mamba_row[3:]))
                self.assertEqual(m.get_block_ids("a"), ([1, 2, 3, 5], mamba_row))

    def test_external_tokens_past_a_mamba_hit_count_as_vllm_does(self):
        # 16 tokens hit (the state in block 5) and 4 external ones skip the hit: vLLM counts the
        # skipped hit block as evictable and not the external state's block, which comes to the
        # same here; 9 blocks admit (the skipped block 5 is reused), 8 do not.
        for num_blocks, rows in [(8, None), (9, ([1, 2, 3, 4, 8, 7], [0, 0, 0, 0, 6, 5]))]:
            with self.subTest(num_blocks=num_blocks):
                m = KVCacheManager(kv_cache_config(
                    FullAttentionSpec(block_size=4),
                    MambaSpec(block_size=4, mamba_cache_mode="align", num_speculative_blocks=0),
                    num_blocks=num_blocks), max_model_len=64, hash_block_size=4)
                a = Request("a", range(17))
                m.allocate_slots(a, 16)
                a.num_computed_tokens = 16
                m.allocate_slots(a, 1)
                a.num_computed_tokens = 17
                m.free(a)
                m.new_step_starts()
                b = Request("b", list(range(16)) + list(range(100, 108)))
                hits, n = m.get_computed_blocks(b)
                self.assertEqual((ids(hits), n), (([1, 2, 3, 4], [0, 0, 0, 5]), 16))
                new = m.allocate_slots(b, 1, 16, hits, num_external_computed_tokens=4)
                if rows is None:
                    self.assertIsNone(new)
                else:
                    self.assertEqual(ids(new), ([rows[0][-1]], [rows[1][-1]]))
                    self.assertEqual(m.get_block_ids("b"), rows)

    def test_fresh_full_attention_blocks_to_zero_beside_mamba(self):
        # vLLM's scheduler takes them every step to zero pages a Mamba state may have used:
        # the full-attention group's only, external tokens' blocks included.
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=16),
                                           MambaSpec(block_size=16, mamba_cache_mode="align",
                                                     num_speculative_blocks=0),
                                           num_blocks=30), max_model_len=1024, hash_block_size=16)
        self.assertEqual(ids(m.allocate_slots(Request("a", range(40)), 40)), ([1, 2, 3], [0, 0, 4]))
        self.assertEqual(m.take_new_block_ids(), [1, 2, 3])
        self.assertEqual(ids(m.allocate_slots(Request("b", range(100, 120)), 4,
                                              num_external_computed_tokens=16)), ([7], [8]))
        self.assertEqual(m.take_new_block_ids(), [5, 7])
        self.assertEqual(m.take_new_block_ids(), [])

    def test_a_window_without_a_whole_window_drops_a_segment_under_eagle(self):
        # The 25 shared tokens hold no whole window of 64 in the 4-token group: the run from
        # column 0 (5 blocks) is aligned to 8 tokens (4), its EAGLE block dropped (3) and
        # aligned again (2): 8 tokens, where dropping before aligning would give 16.
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=8),
                                           SlidingWindowSpec(block_size=4, sliding_window=64),
                                           eagle=(1,)),
                           max_model_len=1024, hash_block_size=4)
        self.assertEqual(ids(m.allocate_slots(Request("a", range(25)), 25)),
                         ([1, 2, 3, 4], [5, 6, 7, 8, 9, 10, 11]))
        blocks, n = m.get_computed_blocks(Request("b", range(25)))
        self.assertEqual((ids(blocks), n), (([1], [5, 6]), 8))

    def test_an_eagle_window_drops_its_block_once_per_length(self):
        # Two windows under EAGLE, blocks 6 (first group, column 5), 18 and 20 (second group,
        # columns 6 and 8) evicted: the first group's lookup at 40 tokens gives 36, the second's
        # 20; the next pass looks both up at 20 without the EAGLE block, and both accept it.
        m = KVCacheManager(kv_cache_config(SlidingWindowSpec(block_size=4, sliding_window=9),
                                           SlidingWindowSpec(block_size=4, sliding_window=5)),
                           max_model_len=1024, hash_block_size=4, use_eagle=True)
        a = Request("a", range(41))
        self.assertEqual(ids(m.allocate_slots(a, 41)),
                         (list(range(1, 12)), list(range(12, 23))))
        a.num_computed_tokens = 41
        m.free(a)
        m.evict_blocks({6, 18, 20})
        blocks, n = m.get_computed_blocks(Request("b", range(41)))
        self.assertEqual((ids(blocks), n), (([0, 0, 0, 4, 5], [0, 0, 0, 0, 16]), 20))

    def test_vllm_positional_constructor(self):
        # vLLM's own order: kv_cache_config, max_model_len, hash_block_size,
        # max_num_batched_tokens, enable_caching, use_eagle, log_stats, ...
        config = kv_cache_config(FullAttentionSpec(block_size=4), num_blocks=20)
        m = KVCacheManager(config, 64, 4, None, False, False, True)
        self.assertEqual(ids(m.allocate_slots(Request("a", range(10)), 10)), ([1, 2, 3],))
        self.assertEqual(m.get_computed_blocks(Request("b", range(10))), (m.empty_kv_cache_blocks,
                                                                           0))
        self.assertIsNotNone(m.make_prefix_cache_stats())  # log_stats, the 7th
        with self.assertRaisesRegex(TypeError, "^got multiple values for argument "
                                    "'max_model_len'$"):
            KVCacheManager(config, 64, 4, max_model_len=32)
        with self.assertRaisesRegex(TypeError, "^vLLM's KVCacheManager takes at most 11 "
                                    "positional arguments, got 12$"):
            KVCacheManager(config, 64, 4, None, True, False, False, False, 1, 1, None, 0)
        with self.assertRaisesRegex(TypeError, "^1 positional arguments after the first need "
                                    "vLLM's KVCacheConfig first"):
            KVCacheManager(None, 64)

    def test_chunked_local_attention_the_engine_cannot_look_up(self):
        # vLLM's chunked-local manager asserts at its first prefix lookup under EAGLE and beside
        # groups of larger blocks; kvtopo refuses the manager up front, with prefix caching on.
        chunked = ChunkedLocalAttentionSpec(block_size=4, attention_chunk_size=8)
        with self.assertRaisesRegex(ValueError, "cache group 0 is chunked local attention with "
                                    "volatile_last_block \\(EAGLE\\)"):
            KVCacheManager(kv_cache_config(chunked), max_model_len=64, hash_block_size=4,
                           use_eagle=True)
        with self.assertRaisesRegex(ValueError, "cache group 1 is chunked local attention with "
                                    "4-token blocks beside groups whose hits align to 8 tokens"):
            KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=8), chunked),
                           max_model_len=64, hash_block_size=4)
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=8), chunked),
                           max_model_len=64, hash_block_size=4, enable_caching=False)
        self.assertEqual(ids(m.allocate_slots(Request("a", range(10)), 10)), ([1, 2], [3, 4, 5]))

    def test_evicted_blocks_leave_in_the_sets_order(self):
        # vLLM's BlockPool.evict_blocks walks the set it is given, one BlockRemoved per cached
        # block in that order.
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=4), num_blocks=16),
                           max_model_len=64, hash_block_size=4, enable_kv_cache_events=True)
        a = Request("a", range(41))
        self.assertEqual(ids(m.allocate_slots(a, 41)), (list(range(1, 12)),))
        hashes = m.native.request_block_hashes("a")
        m.free(a)
        m.take_events()
        evicted = {9, 2, 5}
        m.evict_blocks(evicted)
        removed = [e.block_hashes[0] for e in m.take_events()]
        self.assertEqual(removed, [hashes[b - 1] & (2**64 - 1) for b in evicted])

    def test_groups_of_other_specs_are_looked_up_apart(self):
        # Two windows of one geometry but other head counts are two specs to vLLM's coordinator,
        # looked up apart: group 1's EAGLE drop does not shorten group 2's lookup, and the hit is
        # 8 tokens (looked up together, as groups of one spec are, it would be 4).
        m = KVCacheManager(kv_cache_config(
            FullAttentionSpec(block_size=4),
            SlidingWindowSpec(block_size=4, sliding_window=5, num_kv_heads=1),
            SlidingWindowSpec(block_size=4, sliding_window=5, num_kv_heads=2), eagle=(1,)),
            max_model_len=1024, hash_block_size=4)
        a = Request("a", range(20))
        self.assertEqual(ids(m.allocate_slots(a, 20)),
                         ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15]))
        a.num_computed_tokens = 20
        m.free(a)
        m.evict_blocks({9, 13})
        blocks, n = m.get_computed_blocks(Request("b", range(20)))
        self.assertEqual((ids(blocks), n), (([1, 2], [0, 7], [0, 12]), 8))

    def test_no_common_prefix_without_prefix_caching(self):
        m = KVCacheManager(kv_cache_config(FullAttentionSpec(block_size=4), num_blocks=20),
                           max_model_len=64, hash_block_size=4, enable_caching=False)
        self.assertEqual(ids(m.allocate_slots(Request("a", range(10)), 10)), ([1, 2, 3],))
        self.assertEqual(m.get_num_common_prefix_blocks("a"), [0])


if __name__ == "__main__":
    unittest.main()
