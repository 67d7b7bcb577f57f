// KVCacheManager: the scheduler-side block manager an engine calls every step.
//
// It is built from the planner's cache groups (a GroupGeometry each, plus whether the group's
// backend recomputes its last block, EAGLE-style) and a pool size, and reads only those
// geometries: the manager block of a group is geometry.manager_block_size (B * shards for
// sharded/partial attention, B for replicated and recurrent groups), the admission cap of a
// windowed group is geometry.max_pages_per_request.
//
// Per request and group it keeps a row of block ids, positionally mirrored by each rank's block
// table: column j of an attention group covers global tokens [j*M, (j+1)*M) (M = manager block);
// column j of a recurrent group holds the state checkpoint at token (j+1)*B, or a running or
// speculative state (align mode). Skipped or freed columns hold the null block.
//
// Step protocol (mirrors vLLM v1):
//   AddRequest(prompt) -> GetComputedBlocks -> AllocateSlots(new tokens, hits, lookahead) ->
//   AppendTokens(verified outputs) / RewindComputedTokens(rejected drafts) -> ... -> Free.
// AllocateSlots returns false when the pool cannot hold the step ("not enough blocks"): a normal
// result after which nothing has changed except out-of-window blocks already released.
//
// Cost: a decode step that changes no row (the usual case: the token lands in an allocated
// block, no block fills or leaves the window) is a handful of comparisons against bounds kept
// per request; the other steps are O(blocks allocated, cached or released). Steady-state calls
// do not allocate memory: rows reserve their table width and request slots are recycled.
//
// Invariants (CheckInvariants): every non-null block is referenced by exactly ref_count
// (request, group, column) cells — exactly one unless a prefix hit shares it — or is free /
// evictable-cached; recurrent none rows hold at most 1 + S resident pages; the pool's free list
// and hash map are consistent.
//
// Thread safety: none; the scheduler thread owns the manager.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvtopo/block_hash.h"
#include "kvtopo/block_pool.h"
#include "kvtopo/geometry.h"
#include "kvtopo/ids.h"
#include "kvtopo/status.h"

namespace kvtopo {

// One cache group as the runtime sees it.
struct CacheGroup {
  GroupGeometry geometry;
  // The backend recomputes the last cached block (EAGLE drafts): prefix hits drop it.
  bool volatile_last_block = false;
  // Cross-attention (encoder-decoder): the group holds cdiv(num_encoder_tokens, B) blocks,
  // allocated at a request's first allocation, never cached or released before Free. A
  // cross-attention geometry (GroupGeometry::cross_attention) implies it.
  bool cross_attention = false;
  // Hybrid prefix lookups take groups of equal geometry together, as the engine takes groups of
  // one spec; groups given different lookup classes stay apart even so (the engine's specs also
  // compare head counts and sizes, which a geometry does not hold). -1: by geometry alone.
  int32_t lookup_class = -1;
  std::vector<std::string> layer_names;  // informational
};

struct CacheLayout;
struct Plan;
struct RequestState;  // the manager's per-request state (kv_cache_manager.cc)

struct KVCacheManagerOptions {
  int32_t num_blocks = 0;  // pool size including the null block
  bool enable_prefix_caching = true;
  int64_t hash_block_size = 0;  // tokens per hash block; must divide every manager block size
  int64_t max_model_len = 0;    // L
  std::vector<CacheGroup> groups;
  // Prefix-cache statistics (PrefixCacheStats); off: MakePrefixCacheStats() returns nothing.
  bool log_stats = true;
  // KV-cache events for TakeEvents(); off by default, and then nothing is recorded.
  bool enable_kv_cache_events = false;
  // Fresh full-attention block ids for TakeNewBlockIds() (blocks a worker zeroes before use).
  bool record_new_block_ids = false;

  // Options from an explicit cache layout (groups described directly, not planned).
  static Result<KVCacheManagerOptions> FromLayout(const CacheLayout& layout);
  // Options from an accepted plan: its groups, hash block size and max_model_len; the pool
  // size is the plan's unless given. Errors: a rejected plan, a pool below 1 or above 2^31 - 1,
  // prefix caching turned on for a plan made without it whose recurrent groups keep mode none.
  static Result<KVCacheManagerOptions> FromPlan(
      const Plan& plan, std::optional<int64_t> num_blocks = std::nullopt,
      std::optional<bool> enable_prefix_caching = std::nullopt);
};

// An explicit cache layout, as an engine's KV-cache config lists its groups. Each group gets a
// GroupGeometry from ComputeGroupGeometry (so DCP rules apply exactly as for planned groups);
// groups may mix block sizes (the scheduler block is their LCM).
struct CacheLayoutGroup {
  // full_attention, mla, sliding_window, sliding_window_mla, chunked_local, mamba (recurrent),
  // cross_attention.
  CacheKind kind = CacheKind::kFullAttention;
  bool cross_attention = false;      // set for kind "cross_attention" (a full-attention geometry)
  int64_t block_size = 16;           // tokens per page on one rank (B)
  int64_t kernel_block_size = 0;     // 0: B
  int64_t page_size_bytes = 0;       // per layer per rank; informational for the runtime
  int64_t sliding_window = 0;        // sliding-window kinds
  int64_t attention_chunk_size = 0;  // chunked local
  RecurrentMode mamba_cache_mode = RecurrentMode::kAlign;  // mamba
  int64_t num_speculative_blocks = 0;                      // mamba: S
  bool replicated = false;                                 // every DCP rank holds every position
  int64_t kv_shard_count = 0;  // 0: all DCP ranks; else a divisor of the DCP size
  bool volatile_last_block = false;
  // full_attention: static attention sink tokens (the engine's SinkFullAttentionSpec.sink_len),
  // whose sink_len / B blocks the manager takes from the pool at start; 0: none.
  int64_t sink_len = 0;
  // CacheGroup::lookup_class: groups of equal geometry but different classes are looked up
  // apart (vllm_compat sets it from vLLM's spec equality); -1: by geometry alone.
  int32_t lookup_class = -1;
  std::vector<std::string> layer_names;
};

struct CacheLayout {
  int32_t num_blocks = 0;  // including the null block
  int64_t max_model_len = 0;
  bool enable_prefix_caching = true;
  int64_t hash_block_size = 0;  // 0: the GCD of the groups' manager block sizes
  int64_t decode_context_parallel_size = 1;
  int64_t dcp_kv_cache_interleave_size = 1;
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  bool log_stats = true;
  bool enable_kv_cache_events = false;
  bool record_new_block_ids = false;
  std::vector<CacheLayoutGroup> groups;
};

// A layout from JSON: {"num_blocks", "max_model_len", "groups": [{"kind", "block_size", ...}],
// optional "enable_prefix_caching", "hash_block_size", "decode_context_parallel_size",
// "dcp_kv_cache_interleave_size", "max_num_seqs", "max_num_batched_tokens", "log_stats",
// "enable_kv_cache_events", "record_new_block_ids"}; group keys are CacheLayoutGroup's field
// names ("mamba_cache_mode": "none" | "align" | "all", "layers": [names]). Errors name the key.
Result<CacheLayout> ParseCacheLayoutJson(std::string_view text);

// Prefix hits found for a request, per group; leading nulls stand for skipped columns.
struct ComputedBlocks {
  std::vector<std::vector<BlockId>> blocks;  // [group][column]
  TokenCount num_tokens{0};
  // Where and when GetComputedBlocks found these hits (the manager, the request's registration,
  // the pool's eviction count and a fingerprint of `blocks`): AllocateSlots re-validates every
  // hit block only when something changed since.
  struct Stamp {
    const void* manager = nullptr;
    // Which AddRequest of the manager the request is: unique per call, so it names the request
    // too, and an id freed and added again differs.
    uint64_t registration = 0;
    uint64_t evictions = 0;
    uint64_t fingerprint = 0;
    bool operator==(const Stamp&) const = default;
  } stamp;
};

struct SlotRequest {
  TokenCount num_new_tokens{0};              // tokens to compute this step (> 0 unless external)
  TokenCount num_new_computed_tokens{0};     // prefix-hit tokens (first allocation only)
  const ComputedBlocks* computed = nullptr;  // the hits behind num_new_computed_tokens
  TokenCount num_lookahead_tokens{0};        // draft-token KV slots reserved past the new tokens
  bool full_sequence_must_fit = false;       // admission: the whole request must fit now
  // Tokens whose KV a connector supplies (disaggregated prefill): allocated, counted as
  // computed, cached like computed tokens unless delay_cache_blocks.
  TokenCount num_external_computed_tokens{0};
  bool delay_cache_blocks = false;   // do not cache this step's full blocks (CacheBlocks)
  TokenCount num_encoder_tokens{0};  // cross-attention groups: encoder tokens
};

// Per-request options at AddRequest.
struct RequestOptions {
  BlockHashExtraKeys extra_keys;
  // Prompt-logprobs and pooling requests: GetComputedBlocks finds no hit (blocks still cache).
  bool skip_reading_prefix_cache = false;
  int64_t num_preemptions = 0;  // > 0: lookups count as a resumed request's (stats)
  // Prompt embeddings behind the first prompt_embeds_rows token ids, rows back to back (the
  // engine's ids are placeholders then): each hash block's rows are digested into its hash
  // (extra_keys.block_keys), so equal ids over different embeddings never share a cached block.
  // Read during AddRequest only; rows may not exceed the prompt's tokens.
  std::span<const std::byte> prompt_embeds;
  int64_t prompt_embeds_rows = 0;
};

class KVCacheManager {
 public:
  // Errors name the offending option: no groups, pool too small, a hash block size that does
  // not divide a group's manager block, a non-positive max_model_len.
  static Result<std::unique_ptr<KVCacheManager>> Create(KVCacheManagerOptions options);
  ~KVCacheManager();
  KVCacheManager(const KVCacheManager&) = delete;
  KVCacheManager& operator=(const KVCacheManager&) = delete;

  int32_t num_groups() const;
  const CacheGroup& group(GroupId group) const;
  // The blocks holding the group's static attention sinks (GroupGeometry::sink_blocks of them),
  // taken from the pool when the manager starts and held until it ends; empty without sinks.
  std::span<const BlockId> sink_block_ids(GroupId group) const;

  // Caller misuse is an error value, never an abort: a call naming a request that is not
  // registered returns NotFound; arguments outside their domain (negative counts, prefix hits
  // that are stale, foreign or passed to a running request, a request registered twice) return
  // InvalidArgument, and nothing has changed. The read-only accessors below (BlockIds,
  // LastUpdate, num_computed_tokens, ...) require Contains(request) (checked).

  // Registers a request with its prompt; hashes every full hash block of the prompt.
  [[nodiscard]] Status AddRequest(RequestId request, std::span<const int32_t> prompt_token_ids,
                                  BlockHashExtraKeys extra_keys = {});
  [[nodiscard]] Status AddRequest(RequestId request, std::span<const int32_t> prompt_token_ids,
                                  RequestOptions options);
  bool Contains(RequestId request) const;
  // Appends generated (verified) tokens and hashes the blocks they complete.
  [[nodiscard]] Status AppendTokens(RequestId request, std::span<const int32_t> token_ids);
  // Rejected draft tokens: lowers the request's computed-token count (at most to 0).
  [[nodiscard]] Status RewindComputedTokens(RequestId request, TokenCount num_rejected);

  // Longest prefix hit (at most num_tokens - 1 tokens, so the last prompt token is recomputed)
  // common to all groups. Fills `out` (reusing its storage) and returns out.num_tokens.
  [[nodiscard]] Result<TokenCount> GetComputedBlocks(RequestId request, ComputedBlocks& out);
  [[nodiscard]] Result<ComputedBlocks> GetComputedBlocks(RequestId request);

  // Reserves slots for this step: true when allocated, false when the pool cannot hold it (a
  // normal result). Errors: see above; counts are at most 2^40 tokens each, num_new_tokens is
  // positive unless external tokens are given, and prefix hits (num_new_computed_tokens > 0)
  // come with `computed` holding exactly that many tokens, still valid
  // (ValidateComputedBlocks), on the request's first allocation.
  [[nodiscard]] Result<bool> AllocateSlots(RequestId request, const SlotRequest& step);

  // Whether `hits` (from GetComputedBlocks for `request`) may still be passed to AllocateSlots:
  // every hit block must still cache the request's content for its column. Hits stay valid
  // across unrelated allocations and frees until one of their blocks is evicted or reused.
  Status ValidateComputedBlocks(RequestId request, const ComputedBlocks& hits) const;

  // ---- batched step API -------------------------------------------------------------------
  // Results of a batch, per request in input order, in flat int32 arrays reused between calls
  // (no allocation once they have grown). For request i and group g, k = i * num_groups + g:
  // the row update of AllocateSlots is block_ids[offsets[k], offsets[k + 1]) written from
  // first_column[k] (empty for a failed request).
  struct BatchResult {
    std::vector<uint8_t> ok;            // per request: 1 allocated, 0 out of blocks
    std::vector<int32_t> num_computed;  // per request: prefix-hit tokens (AdmitBatch)
    std::vector<int32_t> offsets;       // size n * num_groups + 1
    std::vector<int32_t> first_column;  // size n * num_groups
    std::vector<int32_t> block_ids;     // flat
    int64_t num_failed = 0;
  };
  // Every batch call first checks every request and count (NotFound naming the first request
  // that is not registered, InvalidArgument for a count outside its domain or spans of
  // different lengths; nothing has changed then), then runs the single calls in order.
  //
  // A loop of AllocateSlots over `requests` (num_lookahead_tokens may be empty: 0 each): the
  // same results, failures included, as the single calls in this order.
  [[nodiscard]] Status AllocateSlotsBatch(std::span<const RequestId> requests,
                                          std::span<const int32_t> num_new_tokens,
                                          std::span<const int32_t> num_lookahead_tokens,
                                          BatchResult& out);
  // Admission of new requests: per request GetComputedBlocks, then AllocateSlots of
  // num_new_tokens[i] tokens past the hits (empty span: the rest of the prompt), with
  // full_sequence_must_fit as given. num_computed holds the hit tokens. Each request must be
  // new (no allocation since it was added or preempted) and hold tokens.
  [[nodiscard]] Status AdmitBatch(std::span<const RequestId> requests,
                                  std::span<const int32_t> num_new_tokens,
                                  bool full_sequence_must_fit, BatchResult& out);
  // Free of each request, in order.
  [[nodiscard]] Status FreeBatch(std::span<const RequestId> requests);
  // Appends counts[i] tokens (consecutive in `token_ids`) to requests[i]; counts empty: one
  // token each.
  [[nodiscard]] Status AppendTokensBatch(std::span<const RequestId> requests,
                                         std::span<const int32_t> token_ids,
                                         std::span<const int32_t> counts);

  // Releases every block of the request (reverse order, so chain tails are evicted first) and
  // forgets it.
  [[nodiscard]] Status Free(RequestId request);
  // Preemption: releases the request's blocks like Free but keeps its tokens and hashes; its
  // computed count drops to 0 and its next lookups count as a resumed request's.
  [[nodiscard]] Status Preempt(RequestId request);
  // Starts a scheduler step (recurrent blocks cached in the previous step become hit-able).
  void NewStep();

  // vLLM's remove_skipped_blocks on its own: releases blocks no longer needed once
  // `total_computed_tokens` are computed (outside the window, older recurrent states).
  [[nodiscard]] Status RemoveSkippedBlocks(RequestId request, TokenCount total_computed_tokens);
  // Caches the request's full blocks up to `num_computed_tokens` (after delay_cache_blocks).
  [[nodiscard]] Status CacheBlocks(RequestId request, TokenCount num_computed_tokens);
  // Drops the prefix-cache entries of these blocks (a connector evicted their content).
  // Errors: a block id outside the pool (nothing changed).
  [[nodiscard]] Status EvictBlocks(std::span<const BlockId> blocks);
  // Per group: leading blocks of `request`'s row shared by every request holding blocks
  // (cascade attention); 0 for groups other than full attention, and for every group without
  // prefix caching.
  [[nodiscard]] Status GetNumCommonPrefixBlocks(RequestId request, std::vector<int64_t>& out) const;
  // Fresh block ids of plain full-attention groups (not MLA, sinks or cross attention)
  // allocated since the last call, external tokens' included (record_new_block_ids).
  std::vector<BlockId> TakeNewBlockIds();
  // Events recorded since the last call (enable_kv_cache_events).
  std::vector<KVCacheEvent> TakeEvents();
  // Statistics since the last call, or nothing when log_stats is off.
  std::optional<PrefixCacheStats> MakePrefixCacheStats();
  // vLLM's KV-cache residency metrics (--kv-cache-metrics; BlockResidencyEvent in
  // block_pool.h): starts sampling the pool's blocks, dropping what an earlier call followed.
  // Errors: a sample rate outside (0, 1].
  [[nodiscard]] Status EnableResidencyMetrics(const ResidencyMetricsOptions& options);
  // Eviction samples since the last call (none while residency metrics are off).
  std::vector<BlockResidencyEvent> TakeResidencyEvents();
  // Samples dropped because kMaxPendingResidencyEvents were waiting untaken.
  uint64_t residency_events_dropped() const;
  // The scheduler block size: the LCM of the groups' manager block sizes.
  int64_t scheduler_block_size() const;
  int64_t hash_block_size() const;
  int64_t max_model_len() const;
  int64_t num_preemptions(RequestId request) const;

  // The request's row in `group`.
  std::span<const BlockId> BlockIds(RequestId request, GroupId group) const;
  // The columns the last successful AllocateSlots changed: [first_column, row end). The worker
  // writes exactly these (appends, except recurrent align rows that move speculative columns).
  struct RowUpdate {
    int64_t first_column = 0;
    std::span<const BlockId> block_ids;
  };
  RowUpdate LastUpdate(RequestId request, GroupId group) const;
  // The blocks the last successful AllocateSlots appended past the request's computed prefix
  // (its hits, skipped columns and external tokens' blocks), as the engine's allocate_slots
  // returns them: a recurrent align row's moved speculative blocks are among them, the nulls
  // they leave are not.
  std::span<const BlockId> AppendedBlocks(RequestId request, GroupId group) const;
  TokenCount num_computed_tokens(RequestId request) const;
  TokenCount num_tokens(RequestId request) const;

  int32_t num_blocks() const;  // the pool, the null block included
  int32_t num_free_blocks() const;
  double Usage() const;
  const PrefixCacheStats& prefix_cache_stats() const;
  [[nodiscard]] bool ResetPrefixCache();

  void CheckInvariants() const;

  struct Impl;

 private:
  friend class KVCacheManagerPeer;
  friend class KVCacheInspector;
  explicit KVCacheManager(std::unique_ptr<Impl> impl);
  // The full per-group rules of one checked step. Callers try the quiet path (Impl::QuietStep)
  // first, once, unless the step carries hits or external tokens or the request is not running.
  bool AllocateSlotsAt(RequestState& st, const SlotRequest& step);
  [[gnu::noinline]] Result<bool> AllocateSlotsChecked(RequestId request, RequestState* st,
                                                      const SlotRequest& step);
  Status CheckSlotRequest(const RequestState& st, const SlotRequest& step) const;
  RowUpdate LastUpdateAt(const RequestState& st, GroupId group) const;
  void AppendUpdates(const RequestState& st, bool ok, BatchResult& out) const;
  Status ResolveBatch(std::span<const RequestId> requests, bool admission = false);
  // Off: every AllocateSlots runs the full per-group rules (tests compare the two).
  void SetQuietPathEnabled(bool enabled);
  // Whether the pool holds `block` in the prefix cache.
  bool BlockIsCached(BlockId block) const;
  std::unique_ptr<Impl> impl_;
};

// A read-only view into a manager for tests and debugging: the pool's free queue, ref counts
// and hashes, hash lookups, the null block and a request's block hashes.
class KVCacheInspector {
 public:
  explicit KVCacheInspector(const KVCacheManager& manager) : manager_(manager) {}
  // Free blocks from the head (allocated next; cached ones evicted then) to the tail.
  std::vector<BlockId> FreeQueue() const;
  int32_t RefCount(BlockId block) const;
  // The (hash, group) the block is cached under, if any.
  std::optional<std::pair<BlockHash, GroupId>> CachedAs(BlockId block) const;
  std::optional<BlockId> Lookup(const BlockHash& hash, GroupId group) const;
  BlockId null_block() const { return kNullBlock; }
  int32_t num_blocks() const { return manager_.num_blocks(); }
  // The request's hashes, one per full hash block.
  std::span<const BlockHash> RequestBlockHashes(RequestId request) const;

 private:
  const KVCacheManager& manager_;
};

}  // namespace kvtopo
