"""vLLM v1 KVCacheManager's names and argument orders over kvtopo's manager.

Porting a vLLM-style scheduler is an import change::

    from kvtopo.vllm_compat import KVCacheManager, Request

The scheduler keeps owning its Request objects (request_id, all_token_ids, num_computed_tokens,
num_preemptions, ...); this layer mirrors them into the native manager before each call: new
tokens are appended, a lowered num_computed_tokens (rejected drafts) is rewound. Blocks are
handed out as KVCacheBlocks of KVCacheBlock(block_id) like vLLM's. docs/runtime.md lists every
call with its native counterpart and the differences.
"""

import dataclasses
import inspect
import itertools
import os

from . import _kvtopo


class KVCacheBlock:
    """A block as the scheduler sees it (vLLM's KVCacheBlock: block_id, is_null, block_hash)."""

    __slots__ = ("block_id", "_inspector")

    def __init__(self, block_id, inspector=None):
        self.block_id = block_id
        self._inspector = inspector

    @property
    def is_null(self):
        return self.block_id == 0

    @property
    def block_hash(self):
        """What the block caches now: ``(hash, group)`` as ``inspector().block_hash`` gives it, or
        None when it caches nothing. Read from the pool at each access, as vLLM's pool-owned
        block objects are: a block allocated with ``delay_cache_blocks`` reads None until
        ``cache_blocks`` caches it. None also for a block made without a manager."""
        if self._inspector is None:
            return None
        return self._inspector.block_hash(self.block_id)

    def __eq__(self, other):
        return isinstance(other, KVCacheBlock) and other.block_id == self.block_id

    def __hash__(self):
        return hash(self.block_id)

    def __repr__(self):
        return f"KVCacheBlock({self.block_id})"


def _blocks(ids, inspector):
    return [KVCacheBlock(b, inspector) for b in ids]


class KVCacheBlocks:
    """The allocation result: blocks[g][j] is group g's j-th block (vLLM's KVCacheBlocks)."""

    __slots__ = ("blocks",)

    def __init__(self, blocks):
        self.blocks = tuple(blocks)

    def __add__(self, other):
        return KVCacheBlocks(list(itertools.chain(a, b)) for a, b in zip(self.blocks, other.blocks))

    def get_block_ids(self, allow_none=False):
        if allow_none and all(len(g) == 0 for g in self.blocks):
            return None
        return tuple([b.block_id for b in g] for g in self.blocks)

    def get_unhashed_block_ids(self):
        """The blocks that cache nothing now (a KV connector loads into them), one group only."""
        if len(self.blocks) != 1:
            raise ValueError(
                f"get_unhashed_block_ids takes blocks of one group; these have {len(self.blocks)} "
                "groups (get_unhashed_block_ids_all_groups reads each)")
        return [b.block_id for b in self.blocks[0] if b.block_hash is None]

    def get_unhashed_block_ids_all_groups(self):
        """Per group, the blocks that cache nothing now, the null (padding) block left out."""
        return [[b.block_id for b in g if not b.is_null and b.block_hash is None]
                for g in self.blocks]

    def new_empty(self):
        return KVCacheBlocks(() for _ in self.blocks)

    def __repr__(self):
        return f"KVCacheBlocks({self.get_block_ids()})"


class Request:
    """The request fields this layer reads (a stand-in for vLLM's Request in tests and ports)."""

    def __init__(self, request_id, prompt_token_ids, *, lora_id=0, cache_salt="",
                 skip_reading_prefix_cache=False, prompt_embeds=None):
        self.request_id = request_id
        self.prompt_token_ids = list(prompt_token_ids)
        self.prompt_embeds = prompt_embeds
        self.output_token_ids = []
        self.num_computed_tokens = 0
        self.num_preemptions = 0
        self.lora_id = lora_id
        self.cache_salt = cache_salt
        self.skip_reading_prefix_cache = skip_reading_prefix_cache

    @property
    def all_token_ids(self):
        return self.prompt_token_ids + self.output_token_ids

    @property
    def num_tokens(self):
        return len(self.prompt_token_ids) + len(self.output_token_ids)

    def append_output_token_ids(self, token_ids):
        if isinstance(token_ids, int):
            token_ids = [token_ids]
        self.output_token_ids.extend(token_ids)


def _lora_id(request):
    """The adapter keying the request's blocks: this module's ``lora_id``, else vLLM's
    ``lora_request.lora_int_id`` (vLLM hashes the adapter's name, one per id); 0 for none."""
    lora_id = getattr(request, "lora_id", None)
    if lora_id is not None:
        return lora_id
    lora = getattr(request, "lora_request", None)
    return lora.lora_int_id if lora else 0


def _mm_items(request):
    """vLLM's ``mm_features`` (identifier, mm_position.offset, mm_position.length) as the
    native manager's mm_items: each keys the blocks it overlaps, as vLLM's block hashes."""
    features = getattr(request, "mm_features", None)
    if not features:
        return None
    return [(f.identifier, f.mm_position.offset, f.mm_position.length) for f in features]


def _prompt_embeds(request):
    """vLLM's ``prompt_embeds`` as a buffer with one row per prompt token: a tensor's bytes, as
    vLLM's block hashes read them; a buffer (bytes, a numpy array) as given, a flat one split
    into the prompt's rows (the request's tokens may include outputs by now: a resumed one)."""
    embeds = getattr(request, "prompt_embeds", None)
    if embeds is None:
        return None
    if hasattr(embeds, "detach"):
        import torch  # a tensor: only a torch-based scheduler passes one
        return embeds.detach().cpu().contiguous().view(torch.uint8).numpy()
    try:
        view = memoryview(embeds)
    except TypeError:
        return embeds  # not a buffer: the native call names it
    rows = getattr(request, "num_prompt_tokens", None)
    if rows is None:
        rows = len(request.prompt_token_ids)
    if view.ndim != 1 or not view.c_contiguous or rows == 0:
        return embeds
    if view.nbytes % rows:
        raise ValueError(f"prompt_embeds of request {request.request_id!r}: {view.nbytes} bytes "
                         f"do not split into its {rows} prompt tokens' rows")
    return view.cast("B").cast("B", (rows, view.nbytes // rows))


class _NativeBlockPool:
    """What ``KVCacheManager.block_pool`` gives: vLLM's scheduler binds it to its KV connector
    (``bind_gpu_block_pool``), which every connector but the simple CPU offload one ignores; that
    one drives vLLM's BlockPool internals (its blocks, free queue, touch, free_blocks), which a
    native pool does not have, and its first use of them raises NotImplementedError."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(
            f"block_pool.{name}: kvtopo's pool is native and has no vLLM BlockPool internals; the "
            "simple CPU offload connector, which drives them, is not supported (other KV "
            "connectors ignore the pool)")

    def __repr__(self):
        return "<kvtopo native block pool>"


# vLLM's KV-cache spec classes (vllm/v1/kv_cache_interface.py) -> the layout's group kind; a
# subclass takes its nearest listed base (TQFullAttentionSpec is full attention,
# HiddenStateCacheSpec MLA). SinkFullAttentionSpec is full attention with its sink_len (the
# manager holds sink_len / block_size blocks from the start); EncoderOnlyAttentionSpec has no
# kind here.
_SPEC_KINDS = {
    "SlidingWindowMLASpec": "sliding_window_mla",
    "SlidingWindowSpec": "sliding_window",
    "MLAAttentionSpec": "mla",
    "ChunkedLocalAttentionSpec": "chunked_local",
    "MambaSpec": "mamba",
    "CrossAttentionSpec": "cross_attention",
    "FullAttentionSpec": "full_attention",
}
_UNSUPPORTED_SPECS = ("EncoderOnlyAttentionSpec",)


def _spec_kind(spec, where):
    names = [c.__name__ for c in type(spec).__mro__]
    if names[0] == "UniformTypeKVCacheSpecs":
        kinds = {_spec_kind(inner, where) for inner in spec.kv_cache_specs.values()}
        if len(kinds) != 1:
            raise ValueError(f"{where}: UniformTypeKVCacheSpecs of kinds {sorted(kinds)}; a group "
                             "holds one kind")
        return kinds.pop()
    for name in names:
        if name in _UNSUPPORTED_SPECS:
            raise ValueError(f"{where}: {names[0]} is not a cache kind kvtopo manages")
        if name in _SPEC_KINDS:
            return _SPEC_KINDS[name]
    raise ValueError(f"{where}: {names[0]} is not one of vLLM's KV-cache specs kvtopo reads "
                     f"({', '.join(_SPEC_KINDS)})")


def _layout_from_kv_cache_config(config, max_model_len, hash_block_size, max_num_batched_tokens,
                                 use_eagle, dcp_world_size, pcp_world_size):
    """vLLM's KVCacheConfig (num_blocks, kv_cache_groups of layer_names and kv_cache_spec) as a
    cache layout: each spec's kind, per-rank block_size and page_size_bytes, window, chunk and
    Mamba mode; the EAGLE groups (is_eagle_group, or every group under use_eagle when none is
    flagged, as vLLM's coordinator picks them) drop their last hit block."""
    if pcp_world_size != 1:
        raise ValueError(f"pcp_world_size {pcp_world_size}: cache layouts take decode context "
                         "parallelism only; plan prefill context parallelism with kvtopo.plan")
    groups = list(config.kv_cache_groups)
    eagle = {i for i, g in enumerate(groups) if getattr(g, "is_eagle_group", False)}
    if use_eagle and not eagle:
        eagle = set(range(len(groups)))
    layout_groups = []
    for i, group in enumerate(groups):
        spec = group.kv_cache_spec
        where = f"kv_cache_config.kv_cache_groups[{i}]"
        kind = _spec_kind(spec, where)
        inners = (list(spec.kv_cache_specs.values())
                  if type(spec).__name__ == "UniformTypeKVCacheSpecs" else [spec])
        g = {"kind": kind, "block_size": spec.block_size, "page_size_bytes": spec.page_size_bytes,
             "layers": list(group.layer_names),
             # vLLM's hybrid coordinator looks groups of one spec (==) up together: the first
             # group with this spec names the class.
             "lookup_class": next(j for j in range(i + 1) if groups[j].kv_cache_spec == spec),
             # vLLM's Mamba manager takes use_eagle and ignores it: a state block is never
             # recomputed, so only attention groups drop their last hit block.
             "volatile_last_block": i in eagle and kind != "mamba"}
        fields = {"sliding_window": ("sliding_window",),
                  "sliding_window_mla": ("sliding_window",),
                  "chunked_local": ("attention_chunk_size",),
                  "mamba": ("mamba_cache_mode", "num_speculative_blocks")}.get(kind, ())
        for field in fields:
            values = {getattr(inner, field) for inner in inners}
            if len(values) != 1:
                raise ValueError(f"{where}: its layers' {field} differ ({sorted(values)}); a "
                                 "group holds one")
            g[field] = values.pop()
        if g.get("mamba_cache_mode") == "none":
            # vLLM's MambaManager runs every mode but align alike: cdiv(tokens, block) blocks
            # plus the speculative ones, the older released, the full ones cached (none differs
            # from all only in the config: prefix caching off, one block of max_model_len).
            g["mamba_cache_mode"] = "all"
        if kind == "full_attention":
            sinks = {getattr(inner, "sink_len", None) or 0 for inner in inners}
            if len(sinks) != 1:
                raise ValueError(f"{where}: its layers' sink_len differ ({sorted(sinks)}); a "
                                 "group holds one")
            sink_len = sinks.pop()
            if sink_len:
                g["sink_len"] = sink_len
        layout_groups.append(g)
    # vLLM's scheduler takes the fresh full-attention blocks every step to zero them when a
    # Mamba group shares their pages (needs_kv_cache_zeroing); without one nothing takes them,
    # and vLLM's list grows for good, so kvtopo records them only then.
    record = any(g["kind"] == "mamba" for g in layout_groups)
    # Unset, vLLM's manager takes max_model_len (its windowed groups' admission cap then counts
    # no chunk bound).
    return {"num_blocks": config.num_blocks, "max_model_len": max_model_len,
            "hash_block_size": hash_block_size, "groups": layout_groups,
            "record_new_block_ids": record,
            "decode_context_parallel_size": dcp_world_size,
            "max_num_batched_tokens": max_model_len if max_num_batched_tokens is None
            else max_num_batched_tokens}


class _Hits:
    __slots__ = ("computed",)


# ---- vLLM's event and statistics types ----------------------------------------------------
#
# A scheduler hands make_prefix_cache_stats()'s result to vLLM's loggers (which read its
# attributes), take_events()'s to its KV-event publisher (msgpack of vLLM's tagged structs) and
# the collector's drain_events() to SchedulerStats. Inside vLLM they are vLLM's own classes;
# without vLLM, the stand-ins below, of the same names and fields.


@dataclasses.dataclass
class PrefixCacheStats:
    """vLLM's PrefixCacheStats: lookups of never-preempted requests, then of resumed ones."""

    reset: bool = False
    requests: int = 0
    queries: int = 0
    hits: int = 0
    preempted_requests: int = 0
    preempted_queries: int = 0
    preempted_hits: int = 0


@dataclasses.dataclass
class KVCacheEvictionEvent:
    """One eviction sample, with the fields of vLLM's KVCacheEvictionEvent."""

    lifetime_seconds: float
    idle_seconds: float
    reuse_gaps_seconds: tuple


@dataclasses.dataclass
class BlockStored:
    """vLLM's BlockStored KV-cache event."""

    block_hashes: list
    parent_block_hash: object
    token_ids: list
    block_size: int
    lora_id: object
    medium: object
    lora_name: object
    extra_keys: object = None
    group_idx: object = None
    kv_cache_spec_kind: object = None
    kv_cache_spec_sliding_window: object = None

    def __hash__(self):
        # vLLM's BlockStored.__hash__ (its data-parallel KVEventAggregator counts events by it):
        # every field but lora_name.
        return hash((tuple(self.block_hashes), self.parent_block_hash, tuple(self.token_ids),
                     self.block_size, self.lora_id, self.medium,
                     tuple(self.extra_keys) if self.extra_keys else None, self.group_idx,
                     self.kv_cache_spec_kind, self.kv_cache_spec_sliding_window))


@dataclasses.dataclass
class BlockRemoved:
    """vLLM's BlockRemoved KV-cache event."""

    block_hashes: list
    medium: object
    group_idx: object = None

    def __hash__(self):
        return hash((tuple(self.block_hashes), self.medium, self.group_idx))  # as vLLM's


@dataclasses.dataclass
class AllBlocksCleared:
    """vLLM's AllBlocksCleared KV-cache event."""


_TYPES = None  # name -> class: vLLM's when it is importable, else the stand-ins; looked up once


def _engine_types():
    global _TYPES
    if _TYPES is None:
        try:
            from vllm.distributed import kv_events
            from vllm.v1.metrics import stats
            _TYPES = {"BlockStored": kv_events.BlockStored, "BlockRemoved": kv_events.BlockRemoved,
                      "AllBlocksCleared": kv_events.AllBlocksCleared,
                      "PrefixCacheStats": stats.PrefixCacheStats,
                      "KVCacheEvictionEvent": stats.KVCacheEvictionEvent}
        except ImportError:
            _TYPES = {"BlockStored": BlockStored, "BlockRemoved": BlockRemoved,
                      "AllBlocksCleared": AllBlocksCleared, "PrefixCacheStats": PrefixCacheStats,
                      "KVCacheEvictionEvent": KVCacheEvictionEvent}
    return _TYPES


_LOW_64 = (1 << 64) - 1


def _event_hash():
    """How vLLM's events carry a block hash (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES, on unless set
    to 0): the hash's low 64 bits as an int, which msgpack encodes; off, its bytes (kvtopo's 16,
    big-endian)."""
    value = os.environ.get("VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES", "1")
    try:
        as_int = bool(int(value))
    except ValueError:
        raise ValueError(f"VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES={value!r} is not an integer "
                         "(vLLM reads it with int(): 1 or 0)") from None
    if as_int:
        return lambda h: h & _LOW_64
    return lambda h: h.to_bytes(16, "big")


def _drain(native):
    event = _engine_types()["KVCacheEvictionEvent"]
    return [event(*e) for e in native.take_residency_events()]


class KVCacheMetricsCollector:
    """vLLM's KVCacheMetricsCollector (--kv-cache-metrics) over kvtopo's pool.

    Passed to a KVCacheManager as ``metrics_collector``, it samples the manager's blocks natively
    (each allocated block with probability ``sample_rate``); ``drain_events()`` returns the
    eviction samples since the last call as KVCacheEvictionEvent, as vLLM's scheduler reads them.
    """

    def __init__(self, sample_rate=0.01):
        if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, float)):
            raise TypeError(f"sample_rate must be a number, got {type(sample_rate).__name__}")
        if not 0 < sample_rate <= 1.0:
            raise ValueError(f"sample_rate must be in (0, 1.0], got {sample_rate}")
        self.sample_rate = float(sample_rate)
        self._native = None

    def drain_events(self):
        return [] if self._native is None else _drain(self._native)

    def reset(self):
        """Drops what is followed and every sample not yet drained."""
        if self._native is not None:
            self._native.enable_residency_metrics(self.sample_rate)


def _bind_metrics(collector, native):
    rate = getattr(collector, "sample_rate", None)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        raise TypeError("metrics_collector must be a KVCacheMetricsCollector (kvtopo.vllm_compat's "
                        "or vLLM's, with a numeric sample_rate), got "
                        f"{type(collector).__name__}")
    native.enable_residency_metrics(float(rate))
    if isinstance(collector, KVCacheMetricsCollector):
        collector._native = native
    else:
        # vLLM's own collector, as its scheduler builds it: the scheduler reads the samples
        # through drain_events(), which now reads this manager's pool.
        collector.drain_events = lambda: _drain(native)


class KVCacheManager:
    """vLLM's KVCacheManager interface on a native kvtopo.KVCacheManager.

    Build it from a kvtopo plan, an explicit layout dict (``layout=``), or vLLM's own arguments
    (``kv_cache_config=`` with ``max_model_len``, ``hash_block_size``, ``max_num_batched_tokens``,
    ``use_eagle``, ``dcp_world_size``, ``pcp_world_size``: a scheduler's call as it is, by keyword
    or in vLLM's positional order);
    ``log_stats``, ``enable_kv_cache_events`` and ``metrics_collector`` (a
    KVCacheMetricsCollector, this module's or vLLM's) mean what they mean in vLLM.
    """

    # vLLM's KVCacheManager parameters after kv_cache_config, in its order.
    _VLLM_POSITIONAL = ("max_model_len", "hash_block_size", "max_num_batched_tokens",
                        "enable_caching", "use_eagle", "log_stats", "enable_kv_cache_events",
                        "dcp_world_size", "pcp_world_size", "metrics_collector")

    def __init__(self, plan=None, *args, layout=None, num_blocks=None, enable_caching=None,
                 log_stats=False, enable_kv_cache_events=False, kv_cache_config=None,
                 max_model_len=None, hash_block_size=None, max_num_batched_tokens=None,
                 use_eagle=False, dcp_world_size=1, pcp_world_size=1, metrics_collector=None):
        if plan is not None and hasattr(plan, "kv_cache_groups"):  # vLLM's positional form
            plan, kv_cache_config = None, plan
        if args:
            # vLLM's positional arguments after the KVCacheConfig.
            if kv_cache_config is None:
                raise TypeError(f"{len(args)} positional arguments after the first need vLLM's "
                                "KVCacheConfig first (a kvtopo plan takes keywords only)")
            if len(args) > len(self._VLLM_POSITIONAL):
                raise TypeError(f"vLLM's KVCacheManager takes at most "
                                f"{len(self._VLLM_POSITIONAL) + 1} positional arguments, got "
                                f"{len(args) + 1}")
            given = dict(zip(self._VLLM_POSITIONAL, args))
            passed = locals()
            defaults = inspect.signature(KVCacheManager.__init__).parameters
            for name in given:
                if passed[name] != defaults[name].default:
                    raise TypeError(f"got multiple values for argument '{name}'")
            (max_model_len, hash_block_size, max_num_batched_tokens, enable_caching, use_eagle,
             log_stats, enable_kv_cache_events, dcp_world_size, pcp_world_size,
             metrics_collector) = (given.get(n, passed[n]) for n in self._VLLM_POSITIONAL)
        if kv_cache_config is not None:
            if plan is not None or layout is not None:
                raise TypeError("pass exactly one of plan, layout= or kv_cache_config=")
            if max_model_len is None or hash_block_size is None:
                raise TypeError("kv_cache_config= needs max_model_len= and hash_block_size=, as "
                                "vLLM's KVCacheManager does")
            layout = _layout_from_kv_cache_config(
                kv_cache_config, max_model_len, hash_block_size, max_num_batched_tokens,
                use_eagle, dcp_world_size, pcp_world_size)
            if enable_caching is None:
                enable_caching = True  # vLLM's default
        elif (plan is None) == (layout is None):
            raise TypeError("pass exactly one of plan, layout= or kv_cache_config=")
        if layout is not None:
            layout = dict(layout)
            layout.setdefault("log_stats", log_stats)
            layout.setdefault("enable_kv_cache_events", enable_kv_cache_events)
            if enable_caching is not None:
                layout["enable_prefix_caching"] = enable_caching
            if num_blocks is not None:
                layout["num_blocks"] = num_blocks
            self.native = _kvtopo.KVCacheManager.from_layout(layout)
        else:
            self.native = _kvtopo.KVCacheManager(
                plan, num_blocks=num_blocks, enable_prefix_caching=enable_caching,
                log_stats=log_stats, enable_kv_cache_events=enable_kv_cache_events)
        if metrics_collector is not None:
            _bind_metrics(metrics_collector, self.native)
        self.metrics_collector = metrics_collector
        self.log_stats = log_stats
        self.enable_kv_cache_events = enable_kv_cache_events
        self.num_kv_cache_groups = self.native.num_groups
        self.empty_kv_cache_blocks = KVCacheBlocks(() for _ in range(self.num_kv_cache_groups))
        self._inspector = self.native.inspector()  # what each handed-out block reads its hash from
        self._hits = {}  # request id -> the native ComputedBlocks behind get_computed_blocks
        self._lora_names = {}  # vLLM's lora_int_id -> lora_name, for the events

    # ---- mirroring the scheduler's Request -------------------------------------------------

    def _sync(self, request):
        m, rid = self.native, request.request_id
        if rid not in m:
            lora = getattr(request, "lora_request", None)
            if lora is not None and getattr(request, "lora_id", None) is None:
                self._lora_names[lora.lora_int_id] = lora.lora_name
            m.add_request(rid, request.all_token_ids, lora_id=_lora_id(request),
                          cache_salt=getattr(request, "cache_salt", "") or "",
                          mm_items=_mm_items(request),
                          skip_reading_prefix_cache=getattr(request, "skip_reading_prefix_cache",
                                                            False),
                          num_preemptions=getattr(request, "num_preemptions", 0),
                          prompt_embeds=_prompt_embeds(request))
            return
        have = m.num_tokens(rid)
        if request.num_tokens > have:
            m.append_tokens(rid, request.all_token_ids[have:])
        computed = m.num_computed_tokens(rid)
        if request.num_computed_tokens < computed:
            m.rewind_computed_tokens(rid, computed - request.num_computed_tokens)
        elif request.num_computed_tokens > computed:
            raise ValueError(
                f"request {rid!r} reports {request.num_computed_tokens} computed tokens; the "
                f"manager allocated {computed}: allocate_slots must cover every computed token")

    # ---- vLLM's calls ----------------------------------------------------------------------

    @property
    def block_pool(self):
        """Bound to the scheduler's KV connector; see _NativeBlockPool."""
        return _NativeBlockPool()

    @property
    def usage(self):
        return self.native.usage

    def make_prefix_cache_stats(self):
        """vLLM's PrefixCacheStats since the last call, or None when log_stats is off."""
        stats = self.native.make_prefix_cache_stats()
        return None if stats is None else _engine_types()["PrefixCacheStats"](**stats)

    def get_computed_blocks(self, request):
        """(KVCacheBlocks, num_computed_tokens), in vLLM's order."""
        self._sync(request)
        hits = self.native.get_computed_blocks(request.request_id)
        if hits.num_tokens == 0:
            self._hits.pop(request.request_id, None)
            return self.empty_kv_cache_blocks, 0
        self._hits[request.request_id] = hits
        return KVCacheBlocks(_blocks(g, self._inspector) for g in hits.blocks), hits.num_tokens

    def allocate_slots(self, request, num_new_tokens, num_new_computed_tokens=0,
                       new_computed_blocks=None, num_lookahead_tokens=0,
                       num_external_computed_tokens=0, delay_cache_blocks=False,
                       num_encoder_tokens=0, full_sequence_must_fit=False):
        self._sync(request)
        rid = request.request_id
        computed = None
        if num_new_computed_tokens > 0:
            computed = self._hits.get(rid)
            if computed is None or new_computed_blocks is None:
                raise ValueError("num_new_computed_tokens > 0 needs the blocks that "
                                 "get_computed_blocks returned for this request")
            if new_computed_blocks.get_block_ids() != tuple(computed.blocks):
                raise ValueError("new_computed_blocks differ from get_computed_blocks' result")
        new = self.native.allocate_slots(
            rid, num_new_tokens, num_new_computed_tokens, computed, num_lookahead_tokens,
            full_sequence_must_fit, num_external_computed_tokens=num_external_computed_tokens,
            delay_cache_blocks=delay_cache_blocks, num_encoder_tokens=num_encoder_tokens)
        if new is None:
            return None
        self._hits.pop(rid, None)
        # vLLM returns the blocks appended past the computed prefix (hits, skipped columns,
        # external tokens' blocks), moved speculative blocks of an aligned Mamba row included.
        new = self.native.appended_blocks(rid)
        return KVCacheBlocks(_blocks(g, self._inspector) for g in new)

    def free(self, request):
        self._hits.pop(request.request_id, None)
        if request.request_id in self.native:
            self.native.free(request.request_id)

    def remove_skipped_blocks(self, request_id, total_computed_tokens):
        """Releases the request's blocks outside its window; a request the manager does not
        hold has none (vLLM's scheduler calls this for every finished request when a KV
        connector is set, one aborted before its first allocation included)."""
        if request_id in self.native:
            self.native.remove_skipped_blocks(request_id, total_computed_tokens)

    def evict_blocks(self, block_ids):
        # In the set's own order, as vLLM's BlockPool.evict_blocks walks it (its BlockRemoved
        # events come in that order).
        self.native.evict_blocks(list(block_ids))

    def reset_prefix_cache(self):
        return self.native.reset_prefix_cache()

    def get_num_common_prefix_blocks(self, running_request_id):
        return self.native.get_num_common_prefix_blocks(running_request_id)

    def take_events(self):
        """The native events as vLLM's BlockStored, BlockRemoved and AllBlocksCleared, their
        hashes as vLLM's events carry them (see _event_hash); a BlockStored names its adapter as
        vLLM's does (``lora_name``: the name of vLLM's ``lora_request``, None without one, and
        first in every block's ``extra_keys``, where vLLM's block keys start with it)."""
        events = self.native.take_events()
        if not events:
            return []
        types, external = _engine_types(), _event_hash()
        out = []
        for e in events:
            kind = e["type"]
            if kind == "AllBlocksCleared":
                out.append(types[kind]())
                continue
            hashes = [external(h) for h in e["block_hashes"]]
            if kind == "BlockRemoved":
                out.append(types[kind](block_hashes=hashes, medium=e["medium"],
                                       group_idx=e["group_idx"]))
                continue
            name = self._lora_names.get(e["lora_id"])
            # vLLM lists one entry per stored block (None for a block without extra keys), and
            # None only when the event stores no block.
            keys = (e["extra_keys"] or [None] * len(hashes)) if hashes else None
            if name is not None and keys is not None:
                keys = [(name,) + (k or ()) for k in keys]
            parent = e["parent_block_hash"]
            out.append(types[kind](
                block_hashes=hashes, parent_block_hash=None if parent is None else external(parent),
                token_ids=e["token_ids"], block_size=e["block_size"], lora_id=e["lora_id"],
                medium=e["medium"], lora_name=name, extra_keys=keys, group_idx=e["group_idx"],
                kv_cache_spec_kind=e["kv_cache_spec_kind"],
                kv_cache_spec_sliding_window=e["kv_cache_spec_sliding_window"]))
        return out

    def get_blocks(self, request_id):
        """The request's blocks; none for a request the manager does not hold (vLLM's
        per-request rows default to empty)."""
        if request_id not in self.native:
            return self.empty_kv_cache_blocks
        blocks = self.native.get_blocks(request_id)
        return KVCacheBlocks(_blocks(g, self._inspector) for g in blocks)

    def get_block_ids(self, request_id):
        if request_id not in self.native:
            return tuple([] for _ in range(self.num_kv_cache_groups))
        return tuple(self.native.get_blocks(request_id))

    def cache_blocks(self, request, num_computed_tokens):
        self._sync(request)
        self.native.cache_blocks(request.request_id, num_computed_tokens)

    def take_new_block_ids(self):
        return self.native.take_new_block_ids()

    def new_step_starts(self):
        self.native.new_step()

    def create_kv_cache_blocks(self, blocks):
        return KVCacheBlocks(blocks) if any(blocks) else self.empty_kv_cache_blocks
