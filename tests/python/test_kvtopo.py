"""Tests of the kvtopo Python module (standard library unittest; run by `make test`).

Run: PYTHONPATH=build/python python3 -m unittest discover -s tests/python -v
"""

import array
import contextlib
import json
import os
import subprocess
import sys
import struct
import tempfile
import unittest

import kvtopo

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# A small sharded launch: one MLA group, DCP 4, kernel block 16, interleave 2.
SMALL = dict(tensor_parallel_size=4, decode_context_parallel_size=4, max_model_len=4096,
             kv_cache_memory="256MiB", block_size=16, dcp_kv_cache_interleave_size=2)


def small_plan(**overrides):
    return kvtopo.plan("kimi-k2.6", **{**SMALL, **overrides})


def cli(*args):
    """Runs the kvtopo CLI next to the module, if it was built (make build)."""
    for build in (os.environ.get("KVTOPO_BUILD_DIR", ""), os.path.join(REPO, "build")):
        path = os.path.join(build, "kvtopo")
        if build and os.path.isfile(path):
            return subprocess.run([path, *args], capture_output=True, text=True)
    return None


@contextlib.contextmanager
def restored_environ(*names):
    """Runs a block that may set the variables `names` (bytes) in os.environb, restoring them."""
    saved = {k: os.environb.get(k) for k in names}
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environb.pop(k, None)
            else:
                os.environb[k] = v


class PlanTest(unittest.TestCase):
    def test_default_plan_matches_the_seeds(self):
        plan = kvtopo.plan()
        self.assertTrue(plan.accepted)
        self.assertEqual(plan.model_name, "kimi-k3")
        self.assertEqual(plan.parallel["tensor_parallel_size"], 16)
        self.assertEqual(plan.parallel["decode_context_parallel_size"], 16)
        self.assertEqual(plan.max_model_len, 1_000_000)
        self.assertEqual(plan.num_speculative_tokens, 7)
        self.assertEqual([g.id for g in plan.groups], list(range(len(plan.groups))))
        by_kind = {(g.kind, g.role, g.placement) for g in plan.groups}
        self.assertIn(("mla", "target", "sharded"), by_kind)
        self.assertIn(("sliding_window_mla", "draft", "replicated"), by_kind)
        self.assertIn(("recurrent", "target", "recurrent"), by_kind)
        for g in plan.groups:
            self.assertEqual(g.num_layers, len(g.layers))
            self.assertEqual(g.block_size, 768)
            self.assertEqual(g.geometry.block_size, g.block_size)
            self.assertEqual(g.manager_block_size, g.block_size * g.dcp_shard_count)
            self.assertEqual(g.dcp_shard_count, 16 if g.placement == "sharded" else 1)
            self.assertEqual(g.attention_backend, "" if g.kind == "recurrent" else "B12X_MLA")
        self.assertEqual(plan.capacity.memory_bytes, 1_325_000_000)
        self.assertFalse(plan.kv_cache_memory_is_default)
        self.assertEqual(plan.pool.num_blocks, 499)
        self.assertEqual(plan.capacity.max_tokens, 1_033_126)
        self.assertEqual(plan.capacity.max_tokens,
                         int(plan.capacity.max_concurrency * plan.max_model_len))
        self.assertGreater(plan.pool.num_blocks, 1)
        self.assertEqual(plan.diagnostics, [])
        self.assertGreater(plan.hash_block_size, 0)
        self.assertGreater(plan.block_table_bytes_per_rank, 0)

    def test_to_json_parses_and_matches_the_fields(self):
        plan = small_plan()
        j = json.loads(plan.to_json())
        self.assertEqual(j["accepted"], plan.accepted)
        self.assertEqual(j["model"]["name"], plan.model_name)
        self.assertEqual(j["capacity"]["max_tokens"], plan.capacity.max_tokens)
        self.assertEqual(j["pool"]["num_blocks"], plan.pool.num_blocks)
        self.assertEqual(j["scheduler_block_size"], plan.scheduler_block_size)
        self.assertEqual(j["hash_block_size"], plan.hash_block_size)
        self.assertEqual(j["block_table_bytes_per_rank"], plan.block_table_bytes_per_rank)
        self.assertEqual(len(j["groups"]), len(plan.groups))
        for jg, g in zip(j["groups"], plan.groups):
            for field in ("id", "kind", "role", "placement", "dcp_shard_count", "block_size",
                          "manager_block_size", "kernel_block_size", "page_size_bytes",
                          "kv_cache_dtype", "attention_backend", "num_layers", "layers",
                          "block_table_width", "max_pages_per_request"):
                self.assertEqual(jg[field], getattr(g, field), field)

    def test_views_groups_geometry_and_diagnostics(self):
        plan = small_plan()
        g = plan.groups[0]
        self.assertIsInstance(g, kvtopo.Group)
        # JSON fields first, then the geometry's (manager_table_width is not in the JSON).
        self.assertEqual((g.block_size, g.manager_block_size, g.interleave), (16, 64, 2))
        # 4096 tokens / (16-token blocks x 4 shards) = 64 columns.
        self.assertEqual(g.manager_table_width, 64)
        self.assertEqual(g.geometry.to_dict()["manager_table_width"], 64)
        self.assertEqual(g.geometry.to_dict()["kind"], "mla")
        self.assertEqual(plan.pool.to_dict(), json.loads(plan.to_json())["pool"])
        self.assertEqual(plan.pool.regions[0]["group"], 0)
        self.assertEqual(plan.promotion.applied, False)
        with self.assertRaises(AttributeError):
            plan.capacity.max_tokens = 1
        with self.assertRaisesRegex(AttributeError, "Plan has no attribute 'nope'"):
            plan.nope
        self.assertEqual(kvtopo.BlockTable(g, num_rows=2).width, g.block_table_width)
        with self.assertRaisesRegex(TypeError, "expected a GroupGeometry or a plan's Group"):
            kvtopo.BlockTable(3, num_rows=2)
        _, diagnostics = kvtopo.check(max_model_len=100_000_000)
        d = diagnostics[-1]
        self.assertIsInstance(d, kvtopo.Diagnostic)
        self.assertEqual(d.code, "b12x-dcp-local-shard")
        self.assertEqual(d.severity, "error")
        self.assertEqual(tuple(d), (d.severity, d.code, d.message))

    def test_to_json_equals_the_cli(self):
        args = ["kimi-k2.6", "--tensor-parallel-size", "4", "--decode-context-parallel-size", "4",
                "--max-model-len", "4096", "--kv-cache-memory", "256M", "--block-size", "16",
                "--cp-kv-cache-interleave-size", "2", "--no-enable-prefix-caching"]
        out = cli("plan", "--json", *args)
        if out is None:
            self.skipTest("the kvtopo CLI is not built")
        self.assertEqual(out.returncode, 0, out.stderr)
        py = kvtopo.plan("kimi-k2.6", **{**SMALL, "cp_kv_cache_interleave_size": 2},
                         enable_prefix_caching=False)
        self.assertEqual(py.to_json(), out.stdout.rstrip("\n"))
        self.assertEqual(kvtopo.plan().to_json(), cli("plan", "--json").stdout.rstrip("\n"))
        # check: the same JSON and verdict (exit 1 for a rejected launch).
        out = cli("check", "--json", "--max-model-len", "100000000")
        self.assertEqual(out.returncode, 1, out.stderr)
        checked = kvtopo.check(max_model_len=100_000_000)
        self.assertEqual(checked.to_json(), out.stdout.rstrip("\n"))
        self.assertEqual(repr(checked), "CheckResult(accepted=False, diagnostics=4)")

    def test_max_model_len_auto(self):
        # vLLM's --max-model-len auto: gpt-oss-120b at 1 GiB holds one 14,544-token request.
        plan = kvtopo.plan("gpt-oss-120b", max_model_len="auto", kv_cache_memory="1GiB")
        self.assertTrue(plan.accepted)
        self.assertEqual(plan.max_model_len, 14544)
        self.assertEqual([d.code for d in plan.diagnostics], ["max-model-len-auto"])
        self.assertEqual(
            kvtopo.plan("gpt-oss-120b", max_model_len=-1, kv_cache_memory="1GiB").max_model_len,
            14544)
        with self.assertRaisesRegex(TypeError, "max_model_len must be an int or 'auto', got float"):
            kvtopo.plan("gpt-oss-120b", max_model_len=1.5)

    def test_dict_model(self):
        with open(os.path.join(REPO, "profiles", "gpt-oss-120b.json"), encoding="utf-8") as f:
            config = json.load(f)
        by_dict = kvtopo.plan(config, max_model_len=8192, kv_cache_memory=1 << 30)
        by_name = kvtopo.plan("gpt-oss-120b", max_model_len=8192, kv_cache_memory="1GiB")
        self.assertTrue(by_dict.accepted)
        self.assertEqual(by_dict.model_name, "<config>")
        self.assertEqual(by_dict.architecture, "GptOssForCausalLM")
        self.assertEqual([(g.kind, g.layers, g.page_size_bytes) for g in by_dict.groups],
                         [(g.kind, g.layers, g.page_size_bytes) for g in by_name.groups])
        self.assertEqual(by_dict.capacity.max_tokens, by_name.capacity.max_tokens)
        self.assertIn("sliding_window", {g.kind for g in by_dict.groups})
        # A dense model's own config: Llama-3.1-8B at TP8, one KV head of 128 per rank.
        llama = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                 "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
        plan = kvtopo.plan(llama, tensor_parallel_size=8, kv_cache_memory="16GiB")
        self.assertEqual([(g.kind, len(g.layers), g.page_size_bytes) for g in plan.groups],
                         [("full_attention", 32, 8192)])
        self.assertEqual(plan.capacity.max_tokens, 1048576)
        # The engine runs a float32 config as bfloat16 unless dtype= says float32 (which also
        # moves the launch to TRITON_ATTN, the K/V backend that computes float32).
        llama["torch_dtype"] = "float32"
        plan = kvtopo.plan(llama, tensor_parallel_size=8, kv_cache_memory="16GiB")
        self.assertEqual(plan.groups[0].page_size_bytes, 8192)
        self.assertEqual([d.code for d in plan.diagnostics], ["model-dtype"])
        plan = kvtopo.plan(llama, tensor_parallel_size=8, kv_cache_memory="16GiB",
                           dtype="float32")
        self.assertEqual((plan.groups[0].page_size_bytes, plan.groups[0].attention_backend),
                         (16384, "TRITON_ATTN"))

    def test_encoder_decoder_model(self):
        # whisper-large-v3: decoder self-attention and cross-attention, 32 layers each; the
        # cross-attention group holds cdiv(max_num_batched_tokens, 16) pages per request.
        whisper = {"architectures": ["WhisperForConditionalGeneration"], "d_model": 1280,
                   "decoder_attention_heads": 20, "decoder_layers": 32,
                   "max_source_positions": 1500, "max_target_positions": 448,
                   "torch_dtype": "float16"}
        plan = kvtopo.plan(whisper, kv_cache_memory="20GiB")
        self.assertTrue(plan.accepted)
        self.assertEqual([(g.kind, len(g.layers)) for g in plan.groups],
                         [("full_attention", 32), ("cross_attention", 32)])
        cross = plan.groups[1].geometry
        self.assertTrue(cross.cross_attention)
        self.assertEqual((cross.kind, cross.max_encoder_tokens, cross.max_pages_per_request),
                         ("full_attention", 8192, 512))
        self.assertEqual(cross.to_dict()["cross_attention"], True)
        self.assertEqual(plan.groups[1].max_encoder_tokens, 8192)
        self.assertIsNone(plan.groups[0].max_encoder_tokens)
        self.assertEqual((plan.pool.num_blocks, plan.capacity.max_tokens), (8192, 6796))
        m = kvtopo.KVCacheManager(plan, num_blocks=512)
        m.add_request("a", range(4))
        new = m.allocate_slots("a", 4, num_encoder_tokens=1500)
        self.assertEqual([len(blocks) for blocks in new], [1, 94])
        self.assertEqual(m.allocate_slots("a", 1), [[], []])
        m.add_request("b", range(4))
        with self.assertRaisesRegex(ValueError, "num_encoder_tokens 20000 needs 1250 blocks"):
            m.allocate_slots("b", 4, num_encoder_tokens=20000)
        m.check_invariants()
        m.free("b")
        m.free("a")
        self.assertEqual(m.num_free_blocks, 511)
        accepted, diagnostics = kvtopo.check(whisper, enable_prefix_caching=True)
        self.assertFalse(accepted)
        self.assertEqual([d.code for d in diagnostics if d.severity == "error"],
                         ["enable-prefix-caching"])

    def test_sink_attention_model(self):
        # openPangu Pro MoE V2's sink attention: one full-attention group on FLASH_ATTN_DIFFKV
        # whose manager takes 128 / 16 = 8 blocks at start; DCP would leave the sink unguarded.
        pro = {"architectures": ["PanguProMoEV2ForCausalLM"], "model_type": "PanguProMoE",
               "torch_dtype": "bfloat16", "hidden_size": 5120, "num_hidden_layers": 50,
               "num_attention_heads": 64, "num_key_value_heads": 4, "qk_nope_dim": 128,
               "qk_rope_dim": 64, "v_channels": 128, "param_sink_number": 128,
               "max_position_embeddings": 131072}
        plan = kvtopo.plan(pro, kv_cache_memory="20GiB", max_model_len=1024)
        group = plan.groups[0]
        self.assertEqual((group.sink_tokens, group.sink_blocks, group.geometry.sink_blocks,
                          group.attention_backend), (128, 8, 8, "FLASH_ATTN_DIFFKV"))
        self.assertEqual(group.geometry.to_dict()["sink_tokens"], 128)
        self.assertEqual((plan.pool.num_blocks, plan.capacity.max_tokens), (10485, 167760))
        m = kvtopo.KVCacheManager(plan, num_blocks=64)
        self.assertEqual((m.sink_block_ids, m.num_free_blocks), ([[1, 2, 3, 4, 5, 6, 7, 8]], 55))
        m.add_request("a", range(20))
        self.assertEqual(m.allocate_slots("a", 20), [[9, 10]])
        with self.assertRaisesRegex(kvtopo.RejectedError, r"\[sink-attention-context-parallel\] "
                                                          r"layer 'model.layers.0.self_attn' "
                                                          r"keeps 128 static attention sink"):
            kvtopo.plan(pro, kv_cache_memory="20GiB", max_model_len=1024,
                        tensor_parallel_size=4, decode_context_parallel_size=2)

    def test_dict_model_that_is_not_json(self):
        # json.dumps writes NaN, which is not JSON; nesting deeper than 64 levels is refused.
        with self.assertRaisesRegex(ValueError, r"^model dict is not valid JSON: .*invalid literal"):
            kvtopo.plan({"architectures": ["LlamaForCausalLM"], "x": float("nan")})
        deep = {}
        inner = deep
        for _ in range(100):
            inner["a"] = {}
            inner = inner["a"]
        with self.assertRaisesRegex(ValueError, r"^model dict nests arrays and objects deeper "
                                    r"than 64 levels$"):
            kvtopo.plan(deep)

    def test_options_override_the_default_launch(self):
        plan = kvtopo.plan(decode_context_parallel_size=8, kv_cache_memory="16GiB")
        self.assertEqual(plan.parallel["decode_context_parallel_size"], 8)
        self.assertEqual(plan.parallel["tensor_parallel_size"], 16)
        self.assertEqual(plan.capacity.memory_bytes, 16 << 30)
        self.assertFalse(plan.kv_cache_memory_is_default)
        self.assertEqual(kvtopo.parse_byte_size("1.5GiB"), 3 << 29)
        # A bad size names the argument it came from.
        with self.assertRaisesRegex(ValueError, r"^kv_cache_memory '12XB' has an unknown unit; "
                                    r"give bytes or a size such as 12GiB, 512MiB, 16G$"):
            kvtopo.plan(kv_cache_memory="12XB")
        with self.assertRaisesRegex(ValueError, r"^text '1\.2\.3G' is not a size"):
            kvtopo.parse_byte_size("1.2.3G")
        # None means "not given".
        self.assertEqual(kvtopo.plan(block_size=None).to_json(), kvtopo.plan().to_json())

    def test_speculative_config_as_dict_or_json(self):
        spec = {"method": "dspark", "model": "kimi-k3-dspark", "num_speculative_tokens": 3,
                "draft_attention_backend": "B12X_MLA"}
        a = kvtopo.plan(speculative_config=spec)
        b = kvtopo.plan(speculative_config=json.dumps(spec))
        self.assertEqual(a.num_speculative_tokens, 3)
        self.assertEqual(a.to_json(), b.to_json())

    def test_eagle_drafts_as_the_engine_builds_them(self):
        llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                 "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "max_position_embeddings": 131072,
                 "torch_dtype": "bfloat16"}
        head = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
                "hidden_size": 4096, "num_hidden_layers": 1, "num_attention_heads": 32,
                "num_key_value_heads": 8, "max_position_embeddings": 131072}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "config.json")
            with open(path, "w") as f:
                json.dump(head, f)
            spec = {"method": "eagle3", "model": path, "num_speculative_tokens": 3}
            # One Llama layer beside the target's 32: 20 GiB / (33 x 64 KiB) blocks.
            plan = kvtopo.plan(llama, kv_cache_memory="20GiB", speculative_config=spec)
            self.assertEqual((plan.pool.num_blocks, plan.capacity.max_tokens), (9929, 158864))
            # extract_hidden_states keeps three layers' states (3 x 4096 bf16 a token) in the
            # target's group: 2,490,368 B a block.
            plan = kvtopo.plan(llama, kv_cache_memory="20GiB", speculative_config={
                "method": "extract_hidden_states", "num_speculative_tokens": 1,
                "draft_model_config": {"hf_config": {
                    "eagle_aux_hidden_state_layer_ids": [2, 16, 29]}}})
            self.assertEqual((plan.pool.num_blocks, plan.capacity.max_tokens), (8623, 137968))
            head["architectures"] = ["Qwen3ForCausalLM"]
            with open(path, "w") as f:
                json.dump(head, f)
            with self.assertRaisesRegex(ValueError, "as Eagle3Qwen3ForCausalLM .* registry does "
                                        "not hold"):
                kvtopo.plan(llama, speculative_config=spec)
        # Qwen3-Next's class lacks the EAGLE-3 interface a DFlash draft reads from.
        with self.assertRaisesRegex(kvtopo.RejectedError, "speculative-aux-hidden-states"):
            kvtopo.plan("qwen3-next-80b", speculative_config={
                "method": "dflash", "model": "glm-5.3-flash-dflash2",
                "num_speculative_tokens": 3})
        # gpt-oss's hidden states are 2,880 wide; the DFlash draft's fc takes five of 4,096.
        with self.assertRaisesRegex(kvtopo.RejectedError, "speculative-draft-hidden-size.*"
                                    "combines 5 of the target's hidden states in its fc layer, "
                                    "each 4096 wide"):
            kvtopo.plan("gpt-oss-120b", speculative_config={
                "method": "dflash", "model": "glm-5.3-flash-dflash2",
                "num_speculative_tokens": 3})

    def test_language_model_only_lets_a_draft_model_serve_a_multimodal_target(self):
        gemma = os.path.join(REPO, "fuzz", "corpus", "config_plan", "gemma-3-27b-it.json")
        spec = {"method": "draft_model", "model": gemma, "num_speculative_tokens": 3}
        options = dict(tensor_parallel_size=2, kv_cache_memory="20GiB", speculative_config=spec)
        result = kvtopo.check(gemma, **options)
        self.assertFalse(result.accepted)
        self.assertEqual([d.code for d in result.diagnostics if d.severity == "error"],
                         ["speculative-multimodal-target"])
        plan = kvtopo.plan(gemma, language_model_only=True, **options)
        self.assertEqual(plan.capacity.max_tokens, 184270)
        with self.assertRaisesRegex(TypeError, "language_model_only must be a bool, got int"):
            kvtopo.plan(gemma, language_model_only=1, **options)

    def test_draft_model_of_an_mtp_type_runs_as_mtp(self):
        # The engine's method detection: Qwen3-Next's own checkpoint as a draft model runs as
        # its MTP layers; another checkpoint's MTP layers are refused.
        spec = {"method": "draft_model", "model": "qwen3-next-80b", "num_speculative_tokens": 3}
        plan = kvtopo.plan("qwen3-next-80b", tensor_parallel_size=4, speculative_config=spec)
        self.assertEqual(plan.capacity.max_tokens, 2545324)
        self.assertIn(("speculative-method-detected", "info"),
                      [(d.code, d.severity) for d in plan.diagnostics])
        with self.assertRaisesRegex(kvtopo.RejectedError,
                                    "kvtopo plans MTP layers of the target's own checkpoint "
                                    "only, and this one is not 'deepseek-v3.2'"):
            kvtopo.plan("deepseek-v3.2", tensor_parallel_size=8, speculative_config=spec)

    def test_transformers_backend(self):
        # A config the registry does not hold whose auto_map names custom code: the engine's
        # Transformers backend builds it with --trust-remote-code, one attention shape a layer.
        acme = {"architectures": ["AcmeForCausalLM"], "model_type": "acme",
                "auto_map": {"AutoModelForCausalLM": "modeling_acme.AcmeForCausalLM"},
                "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "max_position_embeddings": 65536,
                "torch_dtype": "bfloat16"}
        plan = kvtopo.plan(acme, kv_cache_memory="16GiB", trust_remote_code=True)
        self.assertEqual((plan.pool.num_blocks, plan.capacity.max_tokens), (8192, 131072))
        self.assertEqual([(d.code, d.severity) for d in plan.diagnostics],
                         [("transformers-backend", "warning")])
        with self.assertRaisesRegex(ValueError, "only with --trust-remote-code"):
            kvtopo.plan(acme)
        with self.assertRaisesRegex(ValueError, "--model-impl vllm leaves the engine no "
                                    "Transformers fallback"):
            kvtopo.plan(acme, model_impl="vllm", trust_remote_code=True)
        with self.assertRaisesRegex(ValueError, "--model-impl 'hf' is not a model "
                                    "implementation"):
            kvtopo.plan(acme, model_impl="hf")

    def test_gguf_file(self):
        # A GGUF file is read as the engine reads it: Qwen3Config's head_dim of 128 where the
        # file states none; 16 GiB / (28 x 64 KiB) = 9,362 blocks.
        def text(s):
            b = s.encode()
            return struct.pack("<Q", len(b)) + b
        pairs = [("general.architecture", 8, text("qwen3")),
                 ("qwen3.block_count", 4, struct.pack("<I", 28)),
                 ("qwen3.context_length", 4, struct.pack("<I", 40960)),
                 ("qwen3.embedding_length", 4, struct.pack("<I", 1024)),
                 ("qwen3.attention.head_count", 4, struct.pack("<I", 16)),
                 ("qwen3.attention.head_count_kv", 4, struct.pack("<I", 8))]
        data = b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs))
        for key, kind, value in pairs:
            data += text(key) + struct.pack("<I", kind) + value
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.gguf")
            with open(path, "wb") as f:
                f.write(data)
            plan = kvtopo.plan(path, kv_cache_memory="16GiB")
            self.assertEqual((plan.pool.num_blocks, plan.capacity.max_tokens), (9362, 149792))
            with open(path, "wb") as f:
                f.write(data[:40])
            with self.assertRaisesRegex(ValueError, "GGUF file .*model.gguf': 6 metadata pairs "
                                        "cannot fit in the 16 bytes left"):
                kvtopo.plan(path)

    def test_hf_cache_repo_id(self):
        # A repo id no profile serves is read from the local Hugging Face cache (HF_HUB_CACHE):
        # refs/<revision> names the snapshot; Llama-3.1-8B's 128 KiB a token in 16 GiB.
        llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                 "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "max_position_embeddings": 131072,
                 "torch_dtype": "bfloat16"}
        with tempfile.TemporaryDirectory() as tmp:
            repo = os.path.join(tmp, "models--meta-llama--Llama-3.1-8B-Instruct")
            os.makedirs(os.path.join(repo, "snapshots", "c1"))
            os.makedirs(os.path.join(repo, "refs"))
            with open(os.path.join(repo, "snapshots", "c1", "config.json"), "w") as f:
                json.dump(llama, f)
            with open(os.path.join(repo, "refs", "v1"), "w") as f:
                f.write("c1")
            old = os.environ.get("HF_HUB_CACHE")
            os.environ["HF_HUB_CACHE"] = tmp
            try:
                plan = kvtopo.plan("meta-llama/Llama-3.1-8B-Instruct", revision="v1",
                                   kv_cache_memory="16GiB", max_model_len=65536)
                self.assertEqual(plan.capacity.max_tokens, 131072)
                self.assertEqual([(d.code, d.severity) for d in plan.diagnostics],
                                 [("hf-cache", "info")])
                with self.assertRaisesRegex(LookupError, "holds no snapshot of revision 'main'"):
                    kvtopo.plan("meta-llama/Llama-3.1-8B-Instruct")
            finally:
                if old is None:
                    del os.environ["HF_HUB_CACHE"]
                else:
                    os.environ["HF_HUB_CACHE"] = old

    def test_speculators_model_and_modelopt_kv_cache(self):
        # A speculators-format model is served as the draft of its verifier (here a directory),
        # with the speculative config it states; a ModelOpt checkpoint's kv_cache_quant_algo FP8
        # makes the auto cache fp8_e4m3: 20 GiB / (33 x 32 KiB) = 19,859 blocks.
        llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                 "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "max_position_embeddings": 131072,
                 "torch_dtype": "bfloat16", "vocab_size": 128256,
                 "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8",
                                         "kv_cache_quant_algo": "FP8"}}
        with tempfile.TemporaryDirectory() as tmp:
            verifier = os.path.join(tmp, "verifier")
            head = os.path.join(tmp, "speculator.eagle3")
            os.makedirs(verifier)
            os.makedirs(head)
            with open(os.path.join(verifier, "config.json"), "w") as f:
                json.dump(llama, f)
            with open(os.path.join(head, "config.json"), "w") as f:
                json.dump({"architectures": ["Eagle3Speculator"],
                           "speculators_model_type": "eagle3",
                           "speculators_config": {
                               "proposal_methods": [{"speculative_tokens": 3}],
                               "verifier": {"name_or_path": verifier}},
                           "transformer_layer_config": {
                               "model_type": "llama", "hidden_size": 4096,
                               "num_hidden_layers": 1, "num_attention_heads": 32,
                               "num_key_value_heads": 8, "head_dim": 128,
                               "max_position_embeddings": 131072, "vocab_size": 128256}}, f)
            plan = kvtopo.plan(head, kv_cache_memory="20GiB")
            self.assertEqual(plan.pool.num_blocks, 19859)
            codes = [(d.code, d.severity) for d in plan.diagnostics]
            self.assertIn(("speculators-model", "info"), codes)
            self.assertIn(("kv-cache-dtype-checkpoint", "info"), codes)

    def test_kv_connector_hybrid_manager(self):
        # A connector without SupportsHMA turns the hybrid manager off: gpt-oss-120b's 18
        # sliding-window layers cache as full attention (3,728,256 tokens, not 6,621,558).
        p2p = {"kv_connector": "P2pNcclConnector", "kv_role": "kv_both"}
        plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, kv_transfer_config=p2p)
        self.assertEqual(plan.capacity.max_tokens, 3728256)
        self.assertEqual([(d.code, d.severity) for d in plan.diagnostics],
                         [("hybrid-manager-off", "info")])
        plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, kv_offloading_size="64")
        self.assertEqual(plan.capacity.max_tokens, 6621558)
        plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, kv_offloading_size=64.5,
                           kv_offloading_backend="lmcache")
        self.assertEqual(plan.capacity.max_tokens, 3728256)
        with self.assertRaisesRegex(TypeError, "kv_offloading_size must be a number or a str"):
            kvtopo.plan("gpt-oss-120b", kv_offloading_size=True)
        out = cli("check", "gpt-oss-120b", "-tp", "8", "--kv-transfer-config.kv_connector",
                  "P2pNcclConnector", "--kv-transfer-config.kv_role", "kv_both")
        if out is not None:
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("3728256 tokens", out.stdout)

    def test_ec_transfer_producer(self):
        # An instance that only produces the encoder cache keeps no KV cache: nothing to plan.
        producer = {"ec_connector": "ECExampleConnector", "ec_role": "ec_producer"}
        with self.assertRaisesRegex(kvtopo.RejectedError,
                                    "ec_role ec_producer with ec_connector \"ECExampleConnector\""):
            kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, ec_transfer_config=producer)
        plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8,
                           ec_transfer_config=dict(producer, ec_role="ec_consumer"))
        self.assertEqual(plan.capacity.max_tokens, 6621558)
        with self.assertRaisesRegex(ValueError, "ec_role \"producer\" is not one of"):
            kvtopo.plan("gpt-oss-120b", ec_transfer_config={"ec_role": "producer"})

    def test_device_step_defaults(self):
        # A 24 GiB GPU: the engine's `vllm serve` defaults are 2,048 tokens per step and 256
        # rows, so gpt-oss-120b's sliding-window layers hold 265 pages a request, not 1,033.
        plan = kvtopo.plan("gpt-oss-120b", kv_cache_memory="20GiB", device_memory=24 << 30)
        self.assertEqual((plan.capacity.blocks_per_request, plan.capacity.max_tokens),
                         (8457, 564274))
        self.assertEqual([(d.code, d.severity) for d in plan.diagnostics],
                         [("device-step-defaults", "info")])
        j = json.loads(plan.to_json())
        self.assertEqual((j["max_num_batched_tokens"], j["max_num_seqs"]), (2048, 256))
        plan = kvtopo.plan("gpt-oss-120b", kv_cache_memory="20GiB", device_memory="141GiB",
                           device_name="NVIDIA H200")
        self.assertEqual(plan.capacity.max_tokens, 517297)
        # An H200 is a compute capability 9.0 GPU (NVIDIA's table): planned as such.
        self.assertEqual([(d.code, d.severity) for d in plan.diagnostics],
                         [("device-step-defaults", "info"),
                          ("device-capability-from-name", "info")])
        self.assertEqual(json.loads(plan.to_json())["device_capability"], "9.0")
        # Batched data-parallel MoE: 256 tokens per step, 41 pages a sliding-window layer.
        plan = kvtopo.plan("gpt-oss-120b", kv_cache_memory="20GiB", data_parallel_size=8,
                           enable_expert_parallel=True, all2all_backend="deepep_low_latency")
        self.assertEqual((plan.capacity.blocks_per_request, plan.capacity.max_tokens),
                         (8233, 579627))
        with self.assertRaisesRegex(ValueError, "--device-name 'A100' needs --device-memory"):
            kvtopo.plan("gpt-oss-120b", device_name="A100")
        with self.assertRaisesRegex(ValueError,
                                    r"device_memory must be in \[1, 1125899906842624\] bytes, got 0"):
            kvtopo.plan("gpt-oss-120b", device_memory=0)

    def test_hf_overrides_as_dict_or_json(self):
        # Qwen3-8B's shape: 40,960 positions; a YaRN override (factor 4 over 32,768) reaches
        # 131,072, as the engine's --hf-overrides does.
        qwen3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
                 "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960,
                 "torch_dtype": "bfloat16"}
        with self.assertRaisesRegex(kvtopo.RejectedError, r"max-model-len-exceeds-model"):
            kvtopo.plan(qwen3, max_model_len=131072, kv_cache_memory="20GiB")
        yarn = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                 "original_max_position_embeddings": 32768}}
        a = kvtopo.plan(qwen3, max_model_len=131072, kv_cache_memory="20GiB", hf_overrides=yarn)
        b = kvtopo.plan(qwen3, max_model_len=131072, kv_cache_memory="20GiB",
                        hf_overrides=json.dumps(yarn))
        self.assertTrue(a.accepted)
        self.assertEqual([d.code for d in a.diagnostics], ["hf-overrides-applied"])
        self.assertEqual(a.to_json(), b.to_json())
        with self.assertRaisesRegex(TypeError, r"^hf_overrides must be a dict or a JSON str, got "
                                    r"list$"):
            kvtopo.plan(qwen3, hf_overrides=[yarn])
        with self.assertRaisesRegex(ValueError, r"^--hf-overrides must be a JSON object of "
                                    r"config values, got \[1\]$"):
            kvtopo.plan(qwen3, hf_overrides="[1]")

    def test_removed_rope_flags(self):
        # rope_scaling (a dict) and rope_theta (a number), which the fork removed, are refused as
        # its parser refuses them, naming the hf_overrides object they made in older releases.
        qwen3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
                 "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960,
                 "torch_dtype": "bfloat16"}
        yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
        made = ('{"rope_scaling":{"factor":4.0,"original_max_position_embeddings":32768,'
                '"rope_type":"yarn"},"rope_theta":1000000.0}')
        with self.assertRaises(ValueError) as refused:
            kvtopo.plan(qwen3, max_model_len=131072, kv_cache_memory="20GiB",
                        rope_scaling=yarn, rope_theta=1e6)
        self.assertEqual(str(refused.exception),
                         "--rope-scaling and --rope-theta are flags of older releases the engine "
                         "no longer has: its parser refuses them as unrecognized arguments; give "
                         f"--hf-overrides '{made}' for --rope-scaling and --rope-theta")
        plan = kvtopo.plan(qwen3, max_model_len=131072, kv_cache_memory="20GiB",
                           hf_overrides=made)
        self.assertTrue(plan.accepted)
        self.assertEqual([(d.code, d.severity) for d in plan.diagnostics],
                         [("hf-overrides-applied", "info")])
        with self.assertRaisesRegex(TypeError, r"^rope_theta must be a number or a str, got bool$"):
            kvtopo.plan(qwen3, rope_theta=True)
        with self.assertRaisesRegex(ValueError, r"^--rope-theta must be a positive number such as "
                                    r"1000000, got 'nan'$"):
            kvtopo.plan(qwen3, rope_theta=float("nan"))

    def test_kv_connector_beside_expandable_segments(self):
        # The engine refuses any KV connector beside expandable_segments:True unless sleep mode
        # is on; VLLM_USE_SIMPLE_KV_OFFLOAD picks the native backend's other class.
        with restored_environ(b"PYTORCH_CUDA_ALLOC_CONF", b"VLLM_USE_SIMPLE_KV_OFFLOAD"):
            os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
            os.environ["VLLM_USE_SIMPLE_KV_OFFLOAD"] = "1"
            with self.assertRaisesRegex(kvtopo.RejectedError,
                                        r"KV connector SimpleCPUOffloadConnector \(--kv-offloading"
                                        r"-size 8 --kv-offloading-backend native\) with "
                                        r"PYTORCH_CUDA_ALLOC_CONF 'expandable_segments:True'"):
                kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, kv_offloading_size=8)
            plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, kv_offloading_size=8,
                               enable_sleep_mode=True)
            self.assertEqual(plan.capacity.max_tokens, 6621558)
            plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, kv_offloading_size=8,
                               pytorch_cuda_alloc_conf="")
            self.assertEqual(plan.capacity.max_tokens, 6621558)

    def test_environment_values_the_engine_cannot_read(self):
        # The engine core reads every variable vllm/envs.py registers as it ends its start; the
        # module passes os.environ's as the CLI passes its own, undecodable bytes as \xNN.
        with restored_environ(b"VERBOSE", b"VLLM_KV_CACHE_LAYOUT"):
            os.environ["VERBOSE"] = "yes"
            with self.assertRaises(kvtopo.RejectedError) as refused:
                kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8)
            self.assertEqual(
                str(refused.exception),
                "VERBOSE is 'yes', which the engine cannot read: it fails to start (\"invalid "
                "literal for int() with base 10: 'yes'\"), at the latest as its engine core ends "
                "its start and reads every variable vllm/envs.py registers, once the weights are "
                "loaded and the KV cache allocated; set an integer or unset it")
            os.environ["VERBOSE"] = "1"
            os.environb[b"VLLM_KV_CACHE_LAYOUT"] = b"\xff"
            with self.assertRaisesRegex(kvtopo.RejectedError,
                                        r"^VLLM_KV_CACHE_LAYOUT is '\\xff', which the engine "
                                        r"cannot read: it fails to start \(\"Invalid value "
                                        r"'\\xff' for VLLM_KV_CACHE_LAYOUT\."):
                kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8)
            os.environ["VLLM_KV_CACHE_LAYOUT"] = "HND"
            plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8)
            self.assertEqual(plan.capacity.max_tokens, 6621558)

    def test_variables_modules_read_as_they_are_imported(self):
        # The engine's V1 model runner reads BOB_PROFILE_PREFILL_INTERVAL with int() as it is
        # imported; the module passes it from os.environ though it is no VLLM_ name.
        with restored_environ(b"BOB_PROFILE_PREFILL_INTERVAL"):
            os.environ["BOB_PROFILE_PREFILL_INTERVAL"] = "x"
            with self.assertRaisesRegex(kvtopo.RejectedError,
                                        r"error \[environment-import\] "
                                        r"BOB_PROFILE_PREFILL_INTERVAL is 'x', which the engine "
                                        r"cannot read: vllm/v1/worker/gpu_model_runner\.py reads "
                                        r"it as it is imported"):
                kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8)
            plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, use_v2_model_runner=True)
            self.assertEqual(plan.capacity.max_tokens, 6621558)

    def test_pipeline_parallel(self):
        # TP 4 x PP 2: each stage holds 18 of gpt-oss-120b's 36 layers, so the pool is TP 8's.
        plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=4, pipeline_parallel_size=2)
        self.assertEqual(plan.capacity.max_tokens, 6621558)
        stages = json.loads(plan.to_json())["pipeline_stages"]
        self.assertEqual([(s["first_layer"], s["num_layers"], s["bytes_per_block"])
                          for s in stages], [(0, 18, 73728), (18, 18, 73728)])
        plan = kvtopo.plan("deepseek-v3.2", tensor_parallel_size=8, pipeline_parallel_size=2,
                           pp_layer_partition="21,40")
        self.assertEqual(plan.pipeline_stages[1]["num_layers"], 40)  # a view of to_json()

    def test_refused_features(self):
        # Flags that leave the cache as it is, refused where the engine refuses them.
        with self.assertRaisesRegex(kvtopo.RejectedError, r"^--enable-eplb without "
                                    r"--enable-expert-parallel: the engine refuses it"):
            kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, enable_eplb=True)
        plan = kvtopo.plan("qwen3-next-80b", tensor_parallel_size=2, enable_eplb=True,
                           enable_expert_parallel=True, max_num_partial_prefills=1)
        self.assertEqual(plan.capacity.max_tokens, 2778185)
        # gpt-oss's class is not the MixtureOfExperts model the engine's EPLB balances.
        with self.assertRaisesRegex(kvtopo.RejectedError,
                                    r"error \[eplb-model\] --enable-eplb with "
                                    r"'profiles/gpt-oss-120b\.json' \(GptOssForCausalLM\), whose "
                                    r"engine class \(or the language model it wraps\) is not the "
                                    r"MixtureOfExperts model the engine balances: .*\('assert "
                                    r"self\._moe_model is not None'\); drop --enable-eplb$"):
            kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, enable_eplb=True,
                        enable_expert_parallel=True)
        with self.assertRaisesRegex(kvtopo.RejectedError, r"^--max-num-partial-prefills 2: "):
            kvtopo.plan("gpt-oss-120b", max_num_partial_prefills=2)

    def test_deepseek_v4_layer_tuples(self):
        # DeepSeek-V4-Flash's caches in layer tuples: 22 tuples of 1,728 + 8,640 + 37,440 B.
        flash = os.path.join(REPO, "fuzz", "corpus", "config_plan",
                             "deepseek-v4-flash-shaped.json")
        plan = kvtopo.plan(flash, tensor_parallel_size=2, kv_cache_dtype="fp8",
                           max_model_len=30000, kv_cache_memory="10GiB")
        self.assertEqual(plan.capacity.max_tokens, 50743)
        pool = json.loads(plan.to_json())["pool"]
        self.assertEqual((pool["layer_tuples"], pool["tuple_page_size_bytes"],
                          pool["bytes_per_block"]), (22, [1728, 8640, 37440], 1051776))
        with self.assertRaisesRegex(kvtopo.RejectedError,
                                    r"error \[kv-cache-dtype-required\] .* caches in fp8 only"):
            kvtopo.plan(flash, tensor_parallel_size=2, max_model_len=30000)
        # DeepSeek-V4's MegaMoE experts need expert parallelism; kernel_config takes a dict.
        launch = dict(tensor_parallel_size=2, kv_cache_dtype="fp8", max_model_len=30000,
                      kv_cache_memory="10GiB", kernel_config={"moe_backend": "deep-gemm-mega-moe"})
        with self.assertRaisesRegex(kvtopo.RejectedError,
                                    r"error \[moe-backend\] --kernel-config's moe_backend "
                                    r"deep_gemm_mega_moe with .* needs expert parallelism"):
            kvtopo.plan(flash, **launch)
        plan = kvtopo.plan(flash, enable_expert_parallel=True, **launch)
        self.assertEqual(plan.capacity.max_tokens, 50743)
        with self.assertRaisesRegex(ValueError, r"^--moe-backend \"megamoe\" is not one of"):
            kvtopo.plan(flash, moe_backend="megamoe", **launch)

    def test_deepseek_v4_compressed_slots(self):
        # Layer 2's MLA cache keeps one row per 4 positions, layer 3's one per 128 (the plan's
        # layers name them); slots come from their group's table with compress_ratio.
        flash = os.path.join(REPO, "fuzz", "corpus", "config_plan",
                             "deepseek-v4-flash-shaped.json")
        plan = kvtopo.plan(flash, tensor_parallel_size=2, kv_cache_dtype="fp8",
                           max_model_len=30000, kv_cache_memory="10GiB")
        ratios = {l["name"]: l["compress_ratio"] for l in json.loads(plan.to_json())["layers"]}
        self.assertEqual((ratios["model.layers.2.attn"], ratios["model.layers.3.attn"],
                          ratios["model.layers.2.attn.swa_cache"]), (4, 128, 1))
        table = kvtopo.BlockTable(plan.groups[0], num_rows=1)
        table.append(0, [5, 7])
        positions = list(range(240, 280))
        slots = table.compute_slot_mapping(0, [0, 40], positions, compress_ratio=4)
        self.assertEqual([s for s in slots if s >= 0],
                         [5 * 64 + q for q in range(60, 64)] + [7 * 64 + q for q in range(6)])
        self.assertEqual(list(table.slot_mapping(0, 0, [255, 259, 511], compress_ratio=128)),
                         [5 * 2 + 1, -1, 7 * 2 + 1])
        self.assertEqual(list(kvtopo.slot_mapping(plan.groups[0].geometry, 0, [5], [3, 4],
                                                  compress_ratio=4)), [5 * 64, -1])
        with self.assertRaisesRegex(ValueError, r"^compress_ratio 3 does not divide the kernel "
                                                r"block of 256 tokens$"):
            table.slot_mapping(0, 0, [2], compress_ratio=3)
        with self.assertRaisesRegex(ValueError, r"^compress_ratio must be at least 1, got -4$"):
            table.compute_slot_mapping(0, [0, 1], [3], compress_ratio=-4)

    def test_moe_kernels(self):
        # gpt-oss's MXFP4 experts take the MXFP4 kernel family only; its model passes no EPLB
        # to them.
        with self.assertRaisesRegex(kvtopo.RejectedError,
                                    r"error \[moe-backend\] --moe-backend b12x .*"
                                    r"'moe_backend='b12x' is not supported for MXFP4 MoE\.'"):
            kvtopo.plan("gpt-oss-120b", moe_backend="b12x")
        self.assertEqual(kvtopo.plan("gpt-oss-120b", moe_backend="Triton").capacity.max_tokens,
                         827693)
        plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, enable_expert_parallel=True,
                           kernel_config={"moe_backend": "marlin"})
        self.assertEqual(plan.capacity.max_tokens, 6621558)
        # eplb_config takes a dict; redundant experts join the routed ones in equal shares.
        qwen3_next = dict(tensor_parallel_size=2, enable_expert_parallel=True, enable_eplb=True)
        self.assertEqual(kvtopo.plan("qwen3-next-80b", eplb_config={"num_redundant_experts": 4},
                                     **qwen3_next).capacity.max_tokens, 2778185)
        with self.assertRaisesRegex(kvtopo.RejectedError,
                                    r"error \[eplb-experts\] .*'EPLB currently only supports "
                                    r"even distribution of experts across ranks\. Got 515 "
                                    r"experts and 2 EP ranks\.'"):
            kvtopo.plan("qwen3-next-80b", eplb_config={"num_redundant_experts": 3}, **qwen3_next)
        with self.assertRaisesRegex(ValueError, r"^--eplb-config: policy \"greedy\" is not one"):
            kvtopo.plan("qwen3-next-80b", eplb_config={"policy": "greedy"}, **qwen3_next)
        # The V2 model runner refuses a HasInnerState model and prompt embeddings.
        with self.assertRaisesRegex(kvtopo.RejectedError,
                                    r"'VLLM_USE_V2_MODEL_RUNNER does not yet support: hybrid/mamba "
                                    r"models, prompt embeds'"):
            kvtopo.plan("qwen3-next-80b", use_v2_model_runner=True, enable_prompt_embeds=True)

    def test_serving_flags(self):
        # Serving flags the engine refuses at startup; a float gpu_memory_utilization as the
        # engine's Python API takes it.
        self.assertEqual(kvtopo.plan("kimi-k2.6", gpu_memory_utilization=0.9).capacity.max_tokens,
                         488704)
        with self.assertRaisesRegex(ValueError,
                                    r"^--gpu-memory-utilization 1.5: the engine refuses a share "
                                    r"outside \(0, 1\]"):
            kvtopo.plan("kimi-k2.6", gpu_memory_utilization=1.5)
        with self.assertRaisesRegex(kvtopo.RejectedError,
                                    r"error \[lora-model\] .*'KimiK25ForConditionalGeneration "
                                    r"does not support LoRA yet\.'"):
            kvtopo.plan("kimi-k2.6", enable_lora=True)

    def test_device_capability(self):
        # The GPU's compute capability: a backend nobody names is the engine's pick there.
        picks = {}
        for gpu in ("9.0", "10.0", "12.0"):
            plan = kvtopo.plan("kimi-k2.6", tensor_parallel_size=8, device_capability=gpu)
            picks[gpu] = (plan.groups[0].attention_backend, plan.capacity.max_tokens)
        self.assertEqual(picks, {"9.0": ("FLASH_ATTN_MLA", 488944),
                                 "10.0": ("FLASHINFER_MLA", 488928),
                                 "12.0": ("TRITON_MLA", 488944)})
        accepted, diagnostics = kvtopo.check("kimi-k2.6", tensor_parallel_size=8,
                                             device_capability="10.0",
                                             attention_backend="B12X_MLA")
        self.assertFalse(accepted)
        self.assertEqual([d.code for d in diagnostics if d.severity == "error"],
                         ["backend-compute-capability"])
        with self.assertRaisesRegex(ValueError, r"^--device-capability: 'sm_100' is not a "
                                    r"compute capability: write MAJOR.MINOR"):
            kvtopo.plan("kimi-k2.6", device_capability="sm_100")

    def test_quantization(self):
        # The checkpoint's method and --quantization, as the engine settles and checks them.
        llama = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                 "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
                 "quantization_config": {"quant_method": "fbgemm_fp8"}}
        accepted, diagnostics = kvtopo.check(llama)
        self.assertFalse(accepted)
        self.assertEqual([d.code for d in diagnostics if d.severity == "error"],
                         ["quantization-deprecated"])
        accepted, _ = kvtopo.check(llama, allow_deprecated_quantization=True)
        self.assertTrue(accepted)
        accepted, diagnostics = kvtopo.check(llama, quantization="fp8",
                                             allow_deprecated_quantization=True)
        self.assertEqual([d.code for d in diagnostics if d.severity == "error"],
                         ["quantization-mismatch"])

    def test_expert_and_external_dp_flags(self):
        # A model without experts refuses expert parallelism and external DP load balancing;
        # the DP flags are checked as the engine checks them.
        llama = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                 "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
        accepted, diagnostics = kvtopo.check(llama, enable_expert_parallel=True)
        self.assertFalse(accepted)
        self.assertEqual([d.code for d in diagnostics if d.severity == "error"],
                         ["expert-parallel-no-experts"])
        accepted, diagnostics = kvtopo.check(llama, data_parallel_size=2, data_parallel_rank=1)
        self.assertEqual([d.code for d in diagnostics if d.severity == "error"],
                         ["external-dp-no-experts"])
        accepted, _ = kvtopo.check(dict(llama, num_local_experts=8),
                                   enable_expert_parallel=True)
        self.assertTrue(accepted)
        # LoRA beside a speculative config: a step must hold every sequence's verified tokens.
        ngram = {"method": "ngram", "num_speculative_tokens": 7}
        accepted, diagnostics = kvtopo.check(llama, enable_lora=True, speculative_config=ngram,
                                             max_num_batched_tokens=2047)
        self.assertFalse(accepted)
        self.assertEqual([d.code for d in diagnostics if d.severity == "error"],
                         ["lora-speculative-batched-tokens"])
        accepted, _ = kvtopo.check(llama, enable_lora=False, speculative_config=ngram,
                                   max_num_batched_tokens=2047)
        self.assertTrue(accepted)
        with self.assertRaisesRegex(kvtopo.RejectedError, r"^--data-parallel-rank 3 with "
                                    r"--data-parallel-size 2: the engine refuses a rank outside"):
            kvtopo.plan("gpt-oss-120b", data_parallel_size=2, data_parallel_rank=3)
        with self.assertRaisesRegex(kvtopo.RejectedError, r"^--data-parallel-external-lb without "
                                    r"--data-parallel-rank: "):
            kvtopo.plan("gpt-oss-120b", data_parallel_external_lb=True)
        with self.assertRaisesRegex(kvtopo.RejectedError, r"^--data-parallel-rank 0 with "
                                    r"--data-parallel-size 1: "):
            kvtopo.plan("gpt-oss-120b", data_parallel_rank=0)
        # On two nodes the node's rank gives the data-parallel rank.
        plan = kvtopo.plan("gpt-oss-120b", tensor_parallel_size=8, data_parallel_size=2,
                           data_parallel_external_lb=True, enable_expert_parallel=True,
                           nnodes=2, node_rank=1)
        self.assertEqual(plan.capacity.max_tokens, 6621558)

    def test_checks_once_the_cache_is_sized(self):
        # Refusals the engine makes after loading the weights, as keywords.
        accepted, diagnostics = kvtopo.check("qwen3-next-80b", max_model_len=32768,
                                             kv_cache_memory="2GiB")
        self.assertFalse(accepted)
        self.assertEqual([d.code for d in diagnostics if d.severity == "error"],
                         ["mamba-cudagraph-blocks"])
        accepted, _ = kvtopo.check("qwen3-next-80b", max_model_len=32768,
                                   kv_cache_memory="2GiB", enforce_eager=True)
        self.assertTrue(accepted)
        # The CUDA graph mode -O and --compilation-config (a dict or a JSON str) resolve.
        for graphs in ({"optimization_level": 1},
                       {"compilation_config": {"cudagraph_mode": "PIECEWISE"}},
                       {"compilation_config": '{"mode": 0}'}):
            accepted, _ = kvtopo.check("qwen3-next-80b", max_model_len=32768,
                                       kv_cache_memory="2GiB", **graphs)
            self.assertTrue(accepted, graphs)
        # --attention-config's backend (a dict or a JSON str) is the target's.
        for config in ({"backend": "TRITON_MLA"}, '{"backend": "triton_mla"}'):
            plan = kvtopo.plan("kimi-k2.6", tensor_parallel_size=8, attention_config=config)
            self.assertEqual((plan.groups[0].attention_backend, plan.capacity.max_tokens),
                             ("TRITON_MLA", 488_944))
        with self.assertRaisesRegex(ValueError, "mutually exclusive"):
            kvtopo.plan("kimi-k2.6", attention_backend="FLASHMLA",
                        attention_config={"backend": "TRITON_MLA"})
        accepted, _ = kvtopo.check("qwen3-next-80b", max_model_len=32768, kv_cache_memory="2GiB",
                                   optimization_level=0,
                                   compilation_config={"cudagraph_mode": "FULL_DECODE_ONLY"})
        self.assertFalse(accepted)
        # Capture sizes as a list: decode graphs of 1 + 7 tokens need a size of 8 or more.
        eagle3 = {"method": "eagle3", "model": "kimi-k2.6-eagle3-mla", "num_speculative_tokens": 7}
        accepted, diagnostics = kvtopo.check("kimi-k2.6", attention_backend="TRITON_MLA",
                                             speculative_config=eagle3,
                                             cudagraph_capture_sizes=[1, 2, 4])
        self.assertEqual([d.code for d in diagnostics], ["cudagraph-capture-sizes"])
        accepted, _ = kvtopo.check("kimi-k2.6", attention_backend="TRITON_MLA",
                                   speculative_config=eagle3, cudagraph_capture_sizes=[1, 2, 4, 8],
                                   max_cudagraph_capture_size=8)
        self.assertTrue(accepted)
        with self.assertRaisesRegex(ValueError, "'level' is a field of older releases the engine "
                                                "no longer takes .*; give \"mode\": 3 instead"):
            kvtopo.check("qwen3-next-80b", compilation_config={"level": 3})
        with self.assertRaisesRegex(ValueError, r"optimization_level must be in \[0, 3\], got 4"):
            kvtopo.check("qwen3-next-80b", optimization_level=4)
        accepted, diagnostics = kvtopo.check("qwen3-next-80b", enable_prefix_caching=True,
                                             long_prefill_token_threshold=100,
                                             disable_chunked_mm_input=True)
        self.assertEqual([d.code for d in diagnostics if d.severity == "error"],
                         ["mamba-align-block-size", "mamba-align-chunked-mm-input"])

    def test_skip_layers_as_a_list_or_a_str(self):
        # The engine's list: each item compared whole with a layer index, or sliding_window.
        a = kvtopo.plan("gpt-oss-120b", kv_cache_dtype="fp8",
                        kv_cache_dtype_skip_layers=[1, "sliding_window"])
        b = kvtopo.plan("gpt-oss-120b", kv_cache_dtype="fp8",
                        kv_cache_dtype_skip_layers="1 sliding_window")
        self.assertEqual(a.to_json(), b.to_json())
        dtypes = {l["name"]: l["kv_cache_dtype"] for l in json.loads(a.to_json())["layers"]}
        self.assertEqual(dtypes["model.layers.1.self_attn"], "auto")
        self.assertEqual(dtypes["model.layers.3.self_attn"], "fp8")
        with self.assertRaisesRegex(TypeError, "a list or a space-separated str"):
            kvtopo.plan(kv_cache_dtype_skip_layers=3)

    def test_shard_draft_flag_and_environment_agree(self):
        # The full draft cache (no window): a sharded window would be rejected under DCP.
        unsharded = kvtopo.plan(dspark_draft_kv_window=0, kv_cache_memory="32GiB").to_json()
        sharded = kvtopo.plan(dspark_draft_kv_window=0, kv_cache_memory="32GiB", shard_draft=True).to_json()
        self.assertNotEqual(sharded, unsharded)
        saved = os.environ.get("VLLM_DCP_SHARD_DRAFT")
        os.environ["VLLM_DCP_SHARD_DRAFT"] = "1"
        try:
            self.assertEqual(kvtopo.plan(dspark_draft_kv_window=0, kv_cache_memory="32GiB").to_json(), sharded)
        finally:
            if saved is None:
                del os.environ["VLLM_DCP_SHARD_DRAFT"]
            else:
                os.environ["VLLM_DCP_SHARD_DRAFT"] = saved

    def test_environment_of_older_releases(self):
        # The engine no longer reads VLLM_ATTENTION_BACKEND (it warns as it starts): the module
        # reads os.environ as the CLI reads its environment, and says so with the fork's form.
        saved = os.environ.get("VLLM_ATTENTION_BACKEND")
        os.environ["VLLM_ATTENTION_BACKEND"] = "FLASHINFER_MLA"
        try:
            result = kvtopo.check("kimi-k2.6", max_model_len=32768)
        finally:
            if saved is None:
                del os.environ["VLLM_ATTENTION_BACKEND"]
            else:
                os.environ["VLLM_ATTENTION_BACKEND"] = saved
        self.assertTrue(result.accepted)
        removed = [d for d in result.diagnostics if d.code == "removed-environment"]
        self.assertEqual(len(removed), 1)
        self.assertEqual(removed[0].severity, "warning")
        self.assertEqual(
            removed[0].message,
            "VLLM_ATTENTION_BACKEND=FLASHINFER_MLA is a variable of older releases the engine no "
            "longer reads (the fork's 6437ff1fb dropped it from vllm/envs.py): it warns as it "
            "starts ('Unknown vLLM environment variable detected: VLLM_ATTENTION_BACKEND') and "
            "runs without it, as this plan does; give --attention-backend FLASHINFER_MLA instead")

    def test_keywords_of_older_releases(self):
        # EngineArgs' fields for flags the fork removed: refused as the fork's EngineArgs refuses
        # an unknown keyword (TypeError), naming the fork's form with the value given.
        for kwargs, message in [
                ({"swap_space": 4},
                 "unknown option 'swap_space': --swap-space is a flag of older releases the "
                 "engine no longer has: its parser refuses it as an unrecognized argument; drop "
                 "it"),
                ({"speculative_model": "org/m"},
                 "unknown option 'speculative_model': --speculative-model is a flag of older "
                 "releases the engine no longer has: its parser refuses it as an unrecognized "
                 "argument; give --speculative-config.model org/m instead"),
                ({"num_redundant_experts": 32},
                 "unknown option 'num_redundant_experts': --num-redundant-experts is a flag of "
                 "older releases the engine no longer has: its parser refuses it as an "
                 "unrecognized argument; give --eplb-config.num_redundant_experts 32 instead"),
                ({"cuda_graph_sizes": [1, 2, 4]},
                 "unknown option 'cuda_graph_sizes': --cuda-graph-sizes is a flag of older "
                 "releases the engine no longer has: its parser refuses it as an unrecognized "
                 "argument; give --cudagraph-capture-sizes 1 2 4 instead"),
                ({"cuda_graph_sizes": (4, "\udcff")},
                 "unknown option 'cuda_graph_sizes': --cuda-graph-sizes is a flag of older "
                 "releases the engine no longer has: its parser refuses it as an unrecognized "
                 "argument; give --cudagraph-capture-sizes 4 '\\xff' instead"),
                ({"speculative_model": object()},
                 "unknown option 'speculative_model': --speculative-model is a flag of older "
                 "releases the engine no longer has: its parser refuses it as an unrecognized "
                 "argument; give --speculative-config.model VALUE instead"),
                ({"enable_reasoning": False},
                 "unknown option 'enable_reasoning': --enable-reasoning is a flag of older "
                 "releases the engine no longer has: its parser refuses it as an unrecognized "
                 "argument; drop it")]:
            with self.assertRaises(TypeError) as refused:
                kvtopo.plan("kimi-k2.6", max_model_len=32768, **kwargs)
            self.assertEqual(str(refused.exception), message)
        # A flag the fork has but kvtopo does not plan with stays an unknown option.
        with self.assertRaisesRegex(TypeError, r"^unknown option 'port'; accepted options: "):
            kvtopo.plan("kimi-k2.6", port=8000)

    def test_check(self):
        result = kvtopo.check()
        self.assertTrue(result.accepted)
        accepted, diagnostics = kvtopo.check(max_model_len=100_000_000)
        self.assertFalse(accepted)
        codes = [d.code for d in diagnostics if d.severity == "error"]
        self.assertIn("kv-cache-memory", codes)
        severity, code, message = diagnostics[-1]
        self.assertIn("--max-model-len", message)
        j = json.loads(kvtopo.check(max_model_len=100_000_000).to_json())
        self.assertEqual(set(j), {"accepted", "diagnostics"})
        self.assertFalse(j["accepted"])
        # A finding 61 layers share is one diagnostic; `layers` names them all, and the tuple
        # keeps its three fields.
        merged = kvtopo.check("kimi-k2.6", tensor_parallel_size=8, block_size=7).diagnostics[1]
        self.assertEqual(merged.code, "backend-block-size")
        self.assertEqual(len(merged), 3)
        self.assertEqual(merged.layers[:2], ("model.layers.0.self_attn", "model.layers.1.self_attn"))
        self.assertEqual(len(merged.layers), 61)
        self.assertEqual(kvtopo.Diagnostic("info", "x", "y").layers, ())

    def test_a_rejection_before_planning_is_a_verdict(self):
        # DCP not dividing TP stops the launch before a plan exists: check() raised
        # RejectedError although a rejection is a result, and plan()'s RejectedError had no
        # .plan or .diagnostics.
        message = ("--tensor-parallel-size 1 is not divisible by --decode-context-parallel-size "
                   "4; DCP splits each TP group, so choose a DCP size that divides the TP size")
        expected = [kvtopo.Diagnostic("error", "parallel-config", message)]
        result = kvtopo.check("kimi-k2.6", decode_context_parallel_size=4)
        self.assertEqual((result.accepted, result.model_name, result.diagnostics),
                         (False, "kimi-k2.6", expected))
        with self.assertRaises(kvtopo.RejectedError) as e:
            kvtopo.plan("kimi-k2.6", decode_context_parallel_size=4)
        self.assertEqual(str(e.exception), "rejected: kimi-k2.6\n  error [parallel-config] " +
                         message)
        self.assertIsNone(e.exception.plan)
        self.assertEqual(e.exception.diagnostics, expected)


class ErrorTest(unittest.TestCase):
    def test_option_names_are_the_documented_table(self):
        # docs/launch-options.md is generated from the same table; its keyword column must list
        # exactly the keywords the binding accepts, in order.
        docs = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "launch-options.md")
        with open(docs) as f:
            rows = [line.split("|") for line in f if line.startswith("| `--")]
        documented = [row[2].strip().strip("`") for row in rows]
        self.assertEqual(list(kvtopo.option_names()), documented)
        for name in documented:  # every keyword is read and checked, and the error names it
            # The engine takes any API-server count (below 1: headless), so that one gets text.
            value = "seven" if name == "api_server_count" else -7
            with self.assertRaises((ValueError, TypeError)) as raised:
                kvtopo.plan(**{name: value})
            message = str(raised.exception)
            self.assertTrue(name in message or name.replace("_", "-") in message, message)

    def test_unknown_option_names_it_and_lists_the_accepted_ones(self):
        with self.assertRaises(TypeError) as cm:
            kvtopo.plan(tensor_parallel=4)
        self.assertIn("'tensor_parallel'", str(cm.exception))
        self.assertIn("tensor_parallel_size", str(cm.exception))
        self.assertIn("speculative_config", str(cm.exception))
        with self.assertRaises(TypeError):
            kvtopo.check(bogus=True)

    def test_bad_values(self):
        with self.assertRaisesRegex(ValueError, "^kv_cache_memory 'twelve gigs' is not a size"):
            kvtopo.plan(kv_cache_memory="twelve gigs")
        with self.assertRaisesRegex(ValueError, r"kv_cache_memory must be in \[1, 1125899906842624\] bytes, got 0"):
            kvtopo.plan(kv_cache_memory=0)
        with self.assertRaisesRegex(ValueError, "tensor_parallel_size must be positive, got 0"):
            kvtopo.plan(tensor_parallel_size=0)
        with self.assertRaises(TypeError):
            kvtopo.plan(tensor_parallel_size="4")
        with self.assertRaises(TypeError):
            kvtopo.plan(enable_prefix_caching=1)
        with self.assertRaises(ValueError):
            kvtopo.plan(kv_cache_dtype="fp7")
        with self.assertRaisesRegex(
                ValueError, r"^--kv-cache-dtype 'bf16' is not one of the engine's cache dtypes, "
                r"which its parser takes exactly as written \(write 'bfloat16'\)"):
            kvtopo.plan(kv_cache_dtype="bf16")
        with self.assertRaisesRegex(ValueError, "^--dtype 'int8' is not a model dtype"):
            kvtopo.plan(dtype="int8")
        # The engine's parser takes ModelDType's names exactly: no bf16.
        with self.assertRaisesRegex(ValueError, r"^--dtype 'bf16' is not a model dtype; accepted: "
                                    r"auto, bfloat16, float, float16, float32, half"):
            kvtopo.plan(dtype="bf16")
        self.assertEqual(kvtopo.plan(dtype="half").capacity.max_tokens,
                         kvtopo.plan(dtype="float16").capacity.max_tokens)
        # The engine's two interleave flags: under DCP the first, above 1, replaces the second.
        plan = kvtopo.plan(dcp_kv_cache_interleave_size=2, cp_kv_cache_interleave_size=4)
        self.assertEqual(plan.parallel["dcp_kv_cache_interleave_size"], 2)
        self.assertEqual([d.code for d in plan.diagnostics if d.severity == "warning"],
                         ["cp-interleave-replaced"])

    def test_malformed_speculative_config(self):
        with self.assertRaisesRegex(ValueError, "--speculative-config is not valid JSON"):
            kvtopo.plan(speculative_config='{"method": "dspark",')
        with self.assertRaisesRegex(ValueError, "flavour"):
            kvtopo.plan(speculative_config={"method": "dspark", "flavour": 1})

    def test_architectures(self):
        names = kvtopo.architectures()
        self.assertEqual(len(names), 272)
        self.assertEqual(names, sorted(names))
        self.assertIn("DeepseekV4ForCausalLM", names)
        self.assertNotIn("GritLM2", names)
        with self.assertRaisesRegex(
                ValueError, "did you mean 'Qwen3ForCausalLM'\\? kvtopo plans 272 architectures"):
            kvtopo.plan(hf_overrides={"architectures": ["Qwen3ForCasualLM"]})

    def test_runner(self):
        self.assertTrue(kvtopo.check(runner="generate", convert="none").accepted)
        with self.assertRaisesRegex(ValueError, "--runner pooling: the engine serves the model"):
            kvtopo.plan(runner="pooling")
        with self.assertRaisesRegex(ValueError, "--convert 'rerank' is not a conversion"):
            kvtopo.plan(convert="rerank")

    def test_unknown_profile(self):
        with self.assertRaisesRegex(LookupError, "neither an embedded profile"):
            kvtopo.plan("no-such-model")
        with self.assertRaisesRegex(ValueError, "unknown attention backend 'NO_SUCH_BACKEND'"):
            kvtopo.plan(attention_backend="NO_SUCH_BACKEND")

    def test_rejected_launch(self):
        with self.assertRaises(kvtopo.RejectedError) as cm:
            kvtopo.plan(max_model_len=100_000_000)
        self.assertIn("kv-cache-memory", str(cm.exception))
        self.assertFalse(cm.exception.plan.accepted)
        self.assertTrue(any(d.code == "kv-cache-memory" for d in cm.exception.diagnostics))
        with self.assertRaises(kvtopo.RejectedError):
            kvtopo.KVCacheManager(cm.exception.plan)

    def test_prefix_caching_on_a_plan_made_without_it(self):
        # Its recurrent groups keep mode none (one state per request), which no prefix can hit.
        plan = kvtopo.plan("kimi-linear-48b", max_model_len=32768)
        self.assertFalse(plan.enable_prefix_caching)
        with self.assertRaisesRegex(ValueError, r"^enable_prefix_caching on a plan of "
                                                r"kimi-linear-48b made without prefix caching: its "
                                                r"recurrent cache group 0 keeps one state per "
                                                r"request \(mamba cache mode none, 32768-token "
                                                r"blocks\)"):
            kvtopo.KVCacheManager(plan, enable_prefix_caching=True)
        self.assertEqual(kvtopo.KVCacheManager(plan, num_blocks=8).num_free_blocks, 7)
        plan = kvtopo.plan("kimi-linear-48b", max_model_len=32768, enable_prefix_caching=True)
        self.assertEqual(plan.groups[0].geometry.recurrent_mode, "align")
        self.assertEqual(kvtopo.KVCacheManager(plan, num_blocks=64,
                                               enable_prefix_caching=True).hash_block_size, 1888)


class RuntimeTest(unittest.TestCase):
    def setUp(self):
        self.plan = small_plan()
        self.group = self.plan.groups[0]
        self.manager = kvtopo.KVCacheManager(self.plan)

    def tearDown(self):
        self.manager.check_invariants()

    def test_mm_items_key_the_blocks_they_overlap(self):
        m = kvtopo.KVCacheManager.from_layout({
            "num_blocks": 20, "max_model_len": 64,
            "groups": [{"kind": "full_attention", "block_size": 4, "page_size_bytes": 64}]})
        m.add_request("a", range(12), mm_items=[("imgA", 4, 4)])
        self.assertEqual(m.allocate_slots("a", 12), [[1, 2, 3]])
        m.free("a")
        # Another image in tokens 4-7: only the block before it hits.
        m.add_request("b", range(12), mm_items=[("imgB", 4, 4)])
        self.assertEqual(m.get_computed_blocks("b").num_tokens, 4)
        m.add_request("c", range(12), mm_items=[("imgA", 4, 4)])
        self.assertEqual(tuple(m.get_computed_blocks("c")), (8, [[1, 2]]))
        # Entries in any order key the same blocks; an item keys every block it overlaps.
        m.add_request("d", range(12), mm_items=[("x", 9, 2), ("imgA", 4, 4)])
        m.add_request("e", range(12), mm_items=[["imgA", 4, 4], ("x", 9, 2)])
        d, c = m.request_block_hashes("d"), m.request_block_hashes("c")
        self.assertEqual(d, m.request_block_hashes("e"))
        self.assertEqual(d[:2], c[:2])
        self.assertNotEqual(d[2], c[2])

    def test_full_allocate_free_cycle_returns_the_pool_to_full(self):
        m = self.manager
        full = m.num_free_blocks
        self.assertEqual(full, self.plan.pool.num_blocks - 1)  # the null block
        self.assertEqual(m.usage, 0.0)
        m.add_request("a", list(range(100)))
        m.add_request(7, range(1000, 1300))
        self.assertIn("a", m)
        self.assertIn(7, m)
        self.assertNotIn("7", m)
        for rid in ("a", 7):
            num_tokens, blocks = m.get_computed_blocks(rid)
            self.assertEqual(num_tokens, 0)
            new = m.allocate_slots(rid, m.num_tokens(rid), num_lookahead_tokens=4)
            self.assertIsNotNone(new)
            self.assertEqual(len(new), len(self.plan.groups))
            self.assertEqual(m.block_ids(rid, 0), new[0])
            m.check_invariants()
        self.assertEqual(len(m.block_ids("a", 0)), 2)  # cdiv(104, 64)
        self.assertEqual(len(m.block_ids(7, 0)), 5)    # cdiv(304, 64)
        m.new_step()
        m.append_tokens("a", [5])
        self.assertEqual(m.allocate_slots("a", 1), [[]])  # no new block for one group
        m.rewind_computed_tokens("a", 1)
        self.assertEqual(m.num_computed_tokens("a"), 100)
        self.assertLess(m.num_free_blocks, full)
        self.assertGreater(m.usage, 0.0)
        m.free("a")
        m.free(7)
        self.assertEqual(len(m), 0)
        self.assertEqual(m.num_free_blocks, full)
        m.check_invariants()

    def test_prefix_hit(self):
        m = self.manager
        prompt = list(range(200))
        m.add_request("first", prompt)
        self.assertIsNotNone(m.allocate_slots("first", 200))
        m.free("first")
        m.add_request("second", prompt + [7])
        computed = m.get_computed_blocks("second")
        self.assertEqual(computed.num_tokens, 192)  # 3 full 64-token blocks
        self.assertEqual(len(computed.blocks[0]), 3)
        new = m.allocate_slots("second", 201 - 192, 192, computed)
        self.assertIsNotNone(new)
        self.assertEqual(m.block_ids("second", 0)[:3], computed.blocks[0])
        self.assertGreater(m.prefix_cache_stats["hit_tokens"], 0)
        m.free("second")

    def test_stored_events_list_extra_keys(self):
        m = kvtopo.KVCacheManager.from_layout({
            "num_blocks": 20, "max_model_len": 64, "enable_kv_cache_events": True,
            "groups": [{"kind": "full_attention", "block_size": 4, "page_size_bytes": 64}]})
        rows = bytes(range(6 * 2))  # six 2-byte rows: embeddings behind the first 6 tokens
        m.add_request("a", range(12), cache_salt="s", mm_items=[("img", 5, 4)],
                      prompt_embeds=memoryview(rows).cast("B", (6, 2)))
        m.allocate_slots("a", 12)
        (stored,) = m.take_events()
        keys = stored["extra_keys"]
        self.assertEqual(len(keys), 3)
        # The digests are kvtopo's XXH3-128 of each block's rows (16 bytes), one per block.
        self.assertEqual([k[-1].__class__ for k in keys[:2]], [bytes, bytes])
        self.assertEqual([len(k[-1]) for k in keys[:2]], [16, 16])
        self.assertNotEqual(keys[0][-1], keys[1][-1])
        self.assertEqual(keys[0][:-1], ("s",))
        self.assertEqual(keys[1][:-1], (("img", 1),))
        self.assertEqual(keys[2], (("img", -3),))
        m.add_request("b", range(12))
        m.allocate_slots("b", 12)
        (stored,) = m.take_events()
        self.assertIsNone(stored["extra_keys"])

    def test_residency_metrics_sample_hits_and_reuse(self):
        m = kvtopo.KVCacheManager.from_layout({
            "num_blocks": 5, "max_model_len": 64,
            "groups": [{"kind": "full_attention", "block_size": 4, "page_size_bytes": 64}]})
        for rate in (0, 1.5, float("nan")):
            with self.assertRaisesRegex(ValueError, f"^residency metrics sample rate {rate} is not "
                                                    r"in \(0, 1\] \(vLLM's "
                                                    "--kv-cache-metrics-sample"):
                m.enable_residency_metrics(rate)
        with self.assertRaises(TypeError):
            m.enable_residency_metrics("0.5")
        self.assertEqual(m.take_residency_events(), [])  # off
        m.enable_residency_metrics(1.0, seed=5)
        m.add_request("a", range(8))
        self.assertEqual(m.allocate_slots("a", 8), [[1, 2]])
        m.free("a")  # free list: 3 4 2 1
        m.add_request("b", range(12))
        computed = m.get_computed_blocks("b")
        self.assertEqual(tuple(computed), (8, [[1, 2]]))
        self.assertEqual(m.allocate_slots("b", 4, 8, computed), [[1, 2, 3]])
        m.free("b")  # free list: 4 3 2 1
        self.assertEqual(m.take_residency_events(), [])
        m.add_request("c", range(100, 116))
        self.assertEqual(m.allocate_slots("c", 16), [[4, 3, 2, 1]])
        events = m.take_residency_events()
        # Blocks 3, 2 and 1 were followed (4 was never handed out before); 2 and 1 had one hit
        # each, so no gap between hits.
        self.assertEqual(len(events), 3)
        for lifetime, idle, gaps in events:
            self.assertGreaterEqual(lifetime, idle)
            self.assertGreaterEqual(idle, 0.0)
            self.assertEqual(gaps, ())
        self.assertEqual(m.take_residency_events(), [])
        self.assertEqual(m.residency_events_dropped, 0)

    def test_not_enough_blocks_returns_none(self):
        m = kvtopo.KVCacheManager(self.plan, num_blocks=4)  # 3 usable blocks of 64 tokens
        m.add_request(1, range(150))
        self.assertIsNotNone(m.allocate_slots(1, 150))
        m.add_request(2, range(150))
        free = m.num_free_blocks
        self.assertIsNone(m.allocate_slots(2, 150))
        self.assertEqual(m.num_free_blocks, free)
        self.assertIsNone(m.allocate_slots(2, 10, full_sequence_must_fit=True))
        m.free(1)
        self.assertIsNotNone(m.allocate_slots(2, 150))
        m.check_invariants()

    def test_misuse_raises_instead_of_aborting(self):
        m = self.manager
        for call in (lambda: m.allocate_slots("nope", 1), lambda: m.free("nope"),
                     lambda: m.get_computed_blocks(3), lambda: m.block_ids("nope", 0),
                     lambda: m.append_tokens("nope", [1]),
                     lambda: m.rewind_computed_tokens("nope", 0)):
            with self.assertRaises(KeyError):
                call()
        m.add_request("r", [1, 2, 3])
        with self.assertRaisesRegex(ValueError, "already registered"):
            m.add_request("r", [1])
        with self.assertRaises(ValueError):
            m.allocate_slots("r", 0)
        with self.assertRaises(ValueError):
            m.allocate_slots("r", 1, num_lookahead_tokens=-1)
        with self.assertRaises(ValueError):
            m.allocate_slots("r", 1, num_new_computed_tokens=64)  # no computed=
        with self.assertRaises(ValueError):
            m.rewind_computed_tokens("r", 1)  # nothing computed yet
        with self.assertRaises(IndexError):
            m.block_ids("r", 5)
        with self.assertRaises(TypeError):
            m.add_request(1.5, [1])
        with self.assertRaisesRegex(OverflowError, r"^token_ids\[1\]: 1099511627776 is outside "
                                    r"the 32-bit integer range \[-2147483648, 2147483647\]$"):
            m.add_request("big", [1, 1 << 40])
        with self.assertRaises(ValueError):
            kvtopo.KVCacheManager(self.plan, num_blocks=0)
        m.free("r")


class WorkerTest(unittest.TestCase):
    def test_manager_geometries_feed_worker_tables(self):
        # A manager made from a layout gives its groups' geometries to the worker side.
        m = kvtopo.KVCacheManager.from_layout({
            "num_blocks": 16, "max_model_len": 256, "decode_context_parallel_size": 2,
            "groups": [{"kind": "full_attention", "block_size": 16, "page_size_bytes": 4096},
                       {"kind": "sliding_window", "block_size": 16, "sliding_window": 32,
                        "replicated": True, "page_size_bytes": 4096}]})
        full, window = m.geometries
        self.assertEqual((full.dcp_size, full.dcp_shard_count, full.manager_block_size),
                         (2, 2, 32))
        self.assertEqual((window.dcp_shard_count, window.manager_block_size), (1, 16))
        plan = small_plan()
        self.assertEqual(kvtopo.KVCacheManager(plan).geometries, plan.geometries)
        m.add_request("r", range(40))
        table = kvtopo.BlockTable(full, num_rows=2)
        table.append(0, m.allocate_slots("r", 40)[0])
        self.assertEqual(list(table.compute_slot_mapping(1, [0, 2], [0, 1])), [-1, 16])

    def test_block_table_add_row_and_clear(self):
        # add_row replaces the row (the engine worker's add_row); clear empties the table.
        geo = small_plan().groups[0].geometry
        table = kvtopo.BlockTable(geo, num_rows=2)
        table.add_row(0, [6, 7])
        table.add_row(0, [5])
        self.assertEqual((table.row_length(0), list(table.row(0))[:3]), (1, [5, 0, 0]))
        with self.assertRaisesRegex(OverflowError, r"^block-table row 1 would need 65 "):
            table.add_row(1, range(table.width + 1))
        self.assertEqual(table.row_length(1), 0)
        table.add_row(1, [9])
        table.clear()
        self.assertEqual((table.row_length(0), table.row_length(1)), (0, 0))
        self.assertEqual(set(memoryview(table).cast("B").tobytes()), {0})

    def test_batch_slot_mapping_is_the_rows_one_after_another(self):
        plan = small_plan()  # DCP 4, interleave 2, blocks of 16
        geo = plan.groups[0].geometry
        table = kvtopo.BlockTable(geo, num_rows=4)
        table.append(0, [5])
        table.append(1, [6, 7])
        positions = [0, 1, 2, 8, 9, 64, 65, 100]
        qsl = array.array("q", [0, 3, 8])  # request 0: 3 tokens; request 1: 5
        for rank in range(4):
            got = table.compute_slot_mapping(rank, qsl, positions, num_slots=10)
            self.assertEqual(got.format, "q")
            want = (list(table.slot_mapping(0, rank, positions[:3]))
                    + list(table.slot_mapping(1, rank, positions[3:])) + [-1, -1])
            self.assertEqual(list(got), want)
        # Rank 0 holds 0, 1 and 8, 9 (5 * 16 + 0, 1; 6 * 16 + 2, 3) and 64, 65 (7 * 16 + 0, 1).
        self.assertEqual(list(table.compute_slot_mapping(0, [0, 3, 8], positions)),
                         [80, 81, -1, 98, 99, 112, 113, -1])
        with self.assertRaisesRegex(ValueError, r"^query_start_loc\[1\] is 9; offsets must not "
                                                r"decrease and must lie in \[0, 8\]"):
            table.compute_slot_mapping(0, [0, 9], positions)
        with self.assertRaisesRegex(ValueError, "^query_start_loc holds 5 requests but the "
                                                "table has 4 rows$"):
            table.compute_slot_mapping(0, [0] * 6, [])
        with self.assertRaisesRegex(OverflowError, r"^request 0 \(row 0\): position 64 needs "
                                                   "block-table column 1"):
            table.compute_slot_mapping(0, [0, 1], [64])
        with self.assertRaisesRegex(ValueError, r"^num_slots must be in \[len\(positions\)"):
            table.compute_slot_mapping(0, [0, 1], [0], num_slots=0)

    def test_draft_positions_past_the_length_are_padding(self):
        # A draft step's positions at or past max_model_len get -1 and need no block id, as the
        # engine's EAGLE proposer pads them.
        geo = small_plan().groups[0].geometry  # DCP 4, interleave 2, blocks of 16
        table = kvtopo.BlockTable(geo, num_rows=2)
        table.append(0, [5])  # positions 0-63
        drafts = [62, 63, 64, 65]
        with self.assertRaisesRegex(OverflowError, r"^request 0 \(row 0\): position 64 needs "
                                                   "block-table column 1"):
            table.compute_slot_mapping(3, [0, 4], drafts)
        # Rank 3 holds 62 and 63: local offsets 14 and 15 of kernel block 5.
        self.assertEqual(list(table.compute_slot_mapping(3, [0, 4], drafts, max_model_len=64)),
                         [94, 95, -1, -1])
        self.assertEqual(list(table.slot_mapping(0, 3, [63, 64], max_model_len=64)), [95, -1])
        self.assertEqual(list(kvtopo.slot_mapping(geo, 3, [5], [63, 99], max_model_len=64)),
                         [95, -1])
        with self.assertRaisesRegex(ValueError, "^max_model_len must be positive, got 0$"):
            table.slot_mapping(0, 3, [1], max_model_len=0)

    def test_slot_mapping_on_four_ranks(self):
        plan = small_plan()
        geo = plan.groups[0].geometry
        self.assertEqual((geo.dcp_size, geo.dcp_shard_count, geo.interleave,
                          geo.kernel_block_size, geo.block_size), (4, 4, 2, 16, 16))
        m = kvtopo.KVCacheManager(plan)
        m.add_request("r", range(100))
        blocks = m.allocate_slots("r", 100)[0]
        self.assertEqual(len(blocks), 2)
        tables = [kvtopo.BlockTable(geo, num_rows=8) for _ in range(4)]
        for t in tables:
            t.append(3, blocks)
            self.assertEqual(t.row_length(3), 2)
            t.check_invariants()
        row = tables[0].row(3)
        self.assertEqual(row.format, "i")
        self.assertEqual(list(row[:3]), [blocks[0], blocks[1], 0])
        view = memoryview(tables[0])
        self.assertEqual(view.shape, (8, tables[0].width))
        self.assertTrue(view.readonly)
        self.assertEqual(view[3, 1], blocks[1])

        positions = range(100)
        slots = [t.slot_mapping(3, rank, positions) for rank, t in enumerate(tables)]
        self.assertEqual(slots[0].format, "q")
        b0, b1 = blocks
        # Rank 0 holds positions 0,1, 8,9, 16,17, ...: o = p mod 64 -> (o // 8) * 2 + o % 2.
        self.assertEqual(list(slots[0][:10]),
                         [b0 * 16, b0 * 16 + 1, -1, -1, -1, -1, -1, -1, b0 * 16 + 2, b0 * 16 + 3])
        self.assertEqual(slots[1][2], b0 * 16)
        self.assertEqual(slots[3][7], b0 * 16 + 1)
        self.assertEqual(slots[0][64], b1 * 16)
        self.assertEqual(slots[2][99 - 1 - 1], -1)  # 97 -> slice 0
        # The owner rule: each position lives on exactly the rank (p // I) % n, at the formula's
        # slot; and no (rank, slot) is used twice.
        for p in positions:
            owner = (p // 2) % 4
            for rank in range(4):
                held = slots[rank][p] != -1
                self.assertEqual(held, rank == owner, (p, rank))
                self.assertEqual(kvtopo.holds_position(geo, rank, p), held)
            o = p % 64
            self.assertEqual(slots[owner][p], blocks[p // 64] * 16 + (o // 8) * 2 + o % 2)
        for rank in range(4):
            used = [s for s in slots[rank] if s != -1]
            self.assertEqual(len(used), len(set(used)))
            # Rank-local lengths agree with the positions each rank holds.
            self.assertEqual(len(used), kvtopo.local_seq_len(geo, rank, 100))
        # The free function takes a kernel row directly; padding past the positions is -1.
        padded = kvtopo.slot_mapping(geo, 1, tables[1].row(3)[:2], [2, 3], num_slots=4)
        self.assertEqual(list(padded), [b0 * 16, b0 * 16 + 1, -1, -1])
        with self.assertRaises(OverflowError):
            kvtopo.slot_mapping(geo, 0, [b0], [64])  # needs a second column
        with self.assertRaises(ValueError):
            tables[0].slot_mapping(3, 4, [0])  # rank out of range
        with self.assertRaises(IndexError):
            tables[0].row(8)
        with self.assertRaises(ValueError):
            tables[0].write_from(3, 5, [1])  # a gap
        with self.assertRaises(OverflowError):
            tables[0].append(3, [1] * tables[0].width)  # past the width
        m.free("r")

    def test_persistent_batch_moves_and_swaps_rows(self):
        geo = small_plan().groups[0].geometry  # kernel block = manager block: one entry a block
        t = kvtopo.BlockTable(geo, num_rows=3)
        t.append(0, [5])
        t.append(1, [6, 7])
        t.move_row(0, 1)  # row 0's request moves to row 1 (condensing)
        self.assertEqual((list(t.row(1)[:3]), t.row_length(1)), ([5, 0, 0], 1))
        t.swap_row(1, 2)
        self.assertEqual((list(t.row(2)[:3]), t.row_length(2)), ([5, 0, 0], 1))
        self.assertEqual((list(t.row(1)[:3]), t.row_length(1)), ([0, 0, 0], 0))
        t.check_invariants()
        with self.assertRaisesRegex(IndexError, r"^row 3 out of range \[0, 3\)$"):
            t.move_row(0, 3)
        with self.assertRaisesRegex(IndexError, r"^row -1 out of range \[0, 3\)$"):
            t.swap_row(-1, 0)

    def test_rank_local_lengths(self):
        # The small plan's group: n = 4, I = 2. L = 100: 12 full stripes of 8, then 4 tokens ->
        # slices 0 and 1. L = 9 on slice 1: one stripe (positions 2, 3), the 9th is slice 0's.
        geo = small_plan().groups[0].geometry
        self.assertEqual([kvtopo.local_seq_len(geo, r, 100) for r in range(4)], [26, 26, 24, 24])
        lens = kvtopo.local_seq_lens(geo, 1, [100, 9, 0], num_rows=5)
        self.assertEqual(lens.format, "i")
        self.assertEqual(list(lens), [26, 2, 0, 0, 0])
        default = kvtopo.plan()
        replicated = next(g for g in default.groups if g.placement == "replicated")
        self.assertEqual(kvtopo.local_seq_len(replicated.geometry, 3, 1000), 1000)
        self.assertEqual(list(kvtopo.local_seq_lens(replicated.geometry, 3, [1000, 7])), [1000, 7])
        with self.assertRaisesRegex(ValueError, r"rank must be in \[0, 4\) \(the DCP size\), got 4"):
            kvtopo.local_seq_lens(geo, 4, [100])
        with self.assertRaises(ValueError):
            kvtopo.local_seq_lens(geo, 0, [1, 2], num_rows=1)


class ExampleTest(unittest.TestCase):
    def test_engine_loop_example_runs(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        out = subprocess.run([sys.executable, os.path.join(REPO, "examples", "engine_loop.py")],
                             capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("finished", out.stdout)


if __name__ == "__main__":
    unittest.main()
