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
// evictable-cached; recurrent align rows hold at most 2 + S resident pages; the pool's free list
// and hash map are consistent.
//
// Thread safety: none; the scheduler thread owns the manager.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
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
};

struct KVCacheManagerOptions {
  int32_t num_blocks = 0;  // pool size including the null block
  bool enable_prefix_caching = true;
  int64_t hash_block_size = 0;  // tokens per hash block; must divide every manager block size
  int64_t max_model_len = 0;    // L
  std::vector<CacheGroup> groups;
};

// Prefix hits found for a request, per group; leading nulls stand for skipped columns.
struct ComputedBlocks {
  std::vector<std::vector<BlockId>> blocks;  // [group][column]
  TokenCount num_tokens{0};
};

struct SlotRequest {
  TokenCount num_new_tokens{0};              // tokens to compute this step (> 0)
  TokenCount num_new_computed_tokens{0};     // prefix-hit tokens (first allocation only)
  const ComputedBlocks* computed = nullptr;  // the hits behind num_new_computed_tokens
  TokenCount num_lookahead_tokens{0};        // draft-token KV slots reserved past the new tokens
  bool full_sequence_must_fit = false;       // admission: the whole request must fit now
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

  // Registers a request with its prompt; hashes every full hash block of the prompt.
  // The id must not be registered already (checked).
  void AddRequest(RequestId request, std::span<const int32_t> prompt_token_ids,
                  BlockHashExtraKeys extra_keys = {});
  // Appends generated (verified) tokens and hashes the blocks they complete.
  void AppendTokens(RequestId request, std::span<const int32_t> token_ids);
  // Rejected draft tokens: lowers the request's computed-token count.
  void RewindComputedTokens(RequestId request, TokenCount num_rejected);

  // Longest prefix hit (at most num_tokens - 1 tokens, so the last prompt token is recomputed)
  // common to all groups. Fills `out` (reusing its storage) and returns out.num_tokens.
  TokenCount GetComputedBlocks(RequestId request, ComputedBlocks& out);
  ComputedBlocks GetComputedBlocks(RequestId request);

  // Reserves slots for this step. Returns false when the pool cannot hold it.
  [[nodiscard]] bool AllocateSlots(RequestId request, const SlotRequest& step);

  // Releases every block of the request (reverse order, so chain tails are evicted first) and
  // forgets it.
  void Free(RequestId request);
  // Starts a scheduler step (recurrent blocks cached in the previous step become hit-able).
  void NewStep();

  // The request's row in `group`.
  std::span<const BlockId> BlockIds(RequestId request, GroupId group) const;
  // The columns the last successful AllocateSlots changed: [first_column, row end). The worker
  // writes exactly these (appends, except recurrent align rows that move speculative columns).
  struct RowUpdate {
    int64_t first_column = 0;
    std::span<const BlockId> block_ids;
  };
  RowUpdate LastUpdate(RequestId request, GroupId group) const;
  TokenCount num_computed_tokens(RequestId request) const;
  TokenCount num_tokens(RequestId request) const;

  int32_t num_free_blocks() const;
  double Usage() const;
  const PrefixCacheStats& prefix_cache_stats() const;
  [[nodiscard]] bool ResetPrefixCache();

  void CheckInvariants() const;

  struct Impl;

 private:
  friend class KVCacheManagerPeer;
  explicit KVCacheManager(std::unique_ptr<Impl> impl);
  // Off: every AllocateSlots runs the full per-group rules (tests compare the two).
  void SetQuietPathEnabled(bool enabled);
  // Whether the pool holds `block` in the prefix cache.
  bool BlockIsCached(BlockId block) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvtopo
