// Prefix-cache block hashes: a chained 128-bit hash per full hash block of a request's tokens.
//
// hash(block k) = XXH3-128(parent ‖ token ids ‖ extra keys), parent = hash(block k-1), or a fixed
// seed value for block 0. Extra keys, in this order: the LoRA id (when not 0), each multimodal
// item overlapping the block as (identifier, item offset - block start), and the cache salt on
// the first block only, and the block's content digest when one is given (block_keys: prompt
// embeddings behind placeholder ids). Only full blocks are hashed; RequestBlockHasher extends a
// request's hash list incrementally as tokens are appended.
//
// A group whose manager block covers s hash blocks uses the coarse hash of its j-th block:
// XXH3-128 of the concatenated fine hashes j*s .. j*s+s-1 (s == 1: the fine hash itself).
//
// Thread safety: value types and free functions; a RequestBlockHasher is not shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvtopo/ids.h"

namespace kvtopo {

struct BlockHash {
  uint64_t low = 0;
  uint64_t high = 0;
  bool operator==(const BlockHash&) const = default;
};

// An input item (image, audio clip) spanning prompt positions [offset, offset + length).
struct MultimodalItem {
  std::string identifier;  // content hash or id supplied by the engine
  TokenPos offset{0};
  TokenCount length{0};
};

// What, besides token ids, makes two equal token blocks different cache entries.
struct BlockHashExtraKeys {
  int64_t lora_id = 0;                   // 0: no LoRA adapter
  std::string cache_salt;                // mixed into the first block only
  std::vector<MultimodalItem> mm_items;  // sorted by offset
  // Hash block k's content digest (k < size), for blocks whose token ids do not identify what
  // they hold: a request given as prompt embeddings carries placeholder ids (DigestRowsPerBlock).
  std::vector<BlockHash> block_keys;
};

// The parent of block 0.
BlockHash RootBlockHash();

// Hash of one full block `tokens` starting at global position `block_start`.
BlockHash HashBlockTokens(const BlockHash& parent, std::span<const int32_t> tokens,
                          TokenPos block_start, const BlockHashExtraKeys& extra);

// Coarse hash of `fine` (s consecutive fine hashes) for a group whose block spans s hash blocks.
BlockHash CombineBlockHashes(std::span<const BlockHash> fine);

// One digest per hash block of `num_rows` equal rows (`rows` holds them back to back; its size
// a multiple of num_rows > 0): block k digests rows [k*hash_block_size, min((k+1)*hash_block_size,
// num_rows)), the last block's possibly fewer. Empty for no rows.
std::vector<BlockHash> DigestRowsPerBlock(std::span<const std::byte> rows, int64_t num_rows,
                                          int64_t hash_block_size);

// Appends to `hashes` the hash of every full hash block of `tokens` not yet hashed.
void ExtendBlockHashes(std::span<const int32_t> tokens, int64_t hash_block_size,
                       const BlockHashExtraKeys& extra, std::vector<BlockHash>& hashes);

}  // namespace kvtopo
