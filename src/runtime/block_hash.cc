#include "kvtopo/block_hash.h"

#include <algorithm>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "kvtopo/status.h"

namespace kvtopo {
namespace {

BlockHash FromXxh(XXH128_hash_t h) { return BlockHash{.low = h.low64, .high = h.high64}; }

// Type tags keep e.g. a LoRA id from colliding with the bytes of a multimodal offset.
enum : uint8_t { kTagLora = 1, kTagMm = 2, kTagSalt = 3, kTagBlockKey = 4 };

void UpdateTagged(XXH3_state_t* state, uint8_t tag, const void* data, size_t size) {
  XXH3_128bits_update(state, &tag, 1);
  const uint64_t length = size;
  XXH3_128bits_update(state, &length, sizeof(length));
  XXH3_128bits_update(state, data, size);
}

}  // namespace

BlockHash RootBlockHash() {
  static const BlockHash root = [] {
    static constexpr char kSeed[] = "kvtopo prefix-cache root v1";
    return FromXxh(XXH3_128bits(kSeed, sizeof(kSeed) - 1));
  }();
  return root;
}

BlockHash HashBlockTokens(const BlockHash& parent, std::span<const int32_t> tokens,
                          TokenPos block_start, const BlockHashExtraKeys& extra) {
  XXH3_state_t state;  // on the stack: no allocation per block
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, &parent, sizeof(parent));
  XXH3_128bits_update(&state, tokens.data(), tokens.size_bytes());
  if (extra.lora_id != 0) UpdateTagged(&state, kTagLora, &extra.lora_id, sizeof(extra.lora_id));
  const int64_t start = block_start.value();
  const int64_t end = start + static_cast<int64_t>(tokens.size());
  for (const MultimodalItem& item : extra.mm_items) {
    const int64_t item_start = item.offset.value();
    const int64_t item_end = item_start + item.length.value();
    if (item_end <= start || item_start >= end) continue;
    UpdateTagged(&state, kTagMm, item.identifier.data(), item.identifier.size());
    const int64_t relative = item_start - start;  // may be negative
    XXH3_128bits_update(&state, &relative, sizeof(relative));
  }
  if (start == 0 && !extra.cache_salt.empty()) {
    UpdateTagged(&state, kTagSalt, extra.cache_salt.data(), extra.cache_salt.size());
  }
  if (!extra.block_keys.empty() && !tokens.empty()) {
    const size_t k = static_cast<size_t>(start) / tokens.size();
    if (k < extra.block_keys.size()) {
      UpdateTagged(&state, kTagBlockKey, &extra.block_keys[k], sizeof(BlockHash));
    }
  }
  return FromXxh(XXH3_128bits_digest(&state));
}

BlockHash CombineBlockHashes(std::span<const BlockHash> fine) {
  KVTOPO_CHECK(!fine.empty());
  if (fine.size() == 1) return fine[0];
  return FromXxh(XXH3_128bits(fine.data(), fine.size_bytes()));
}

std::vector<BlockHash> DigestRowsPerBlock(std::span<const std::byte> rows, int64_t num_rows,
                                          int64_t hash_block_size) {
  KVTOPO_CHECK(hash_block_size > 0 && num_rows >= 0);
  std::vector<BlockHash> keys;
  if (num_rows == 0) return keys;
  KVTOPO_CHECK(rows.size() % static_cast<size_t>(num_rows) == 0);
  const size_t row_bytes = rows.size() / static_cast<size_t>(num_rows);
  keys.reserve(static_cast<size_t>((num_rows + hash_block_size - 1) / hash_block_size));
  for (int64_t first = 0; first < num_rows; first += hash_block_size) {
    const int64_t count = std::min(hash_block_size, num_rows - first);
    const std::span<const std::byte> block = rows.subspan(static_cast<size_t>(first) * row_bytes,
                                                          static_cast<size_t>(count) * row_bytes);
    keys.push_back(FromXxh(XXH3_128bits(block.data(), block.size())));
  }
  return keys;
}

void ExtendBlockHashes(std::span<const int32_t> tokens, int64_t hash_block_size,
                       const BlockHashExtraKeys& extra, std::vector<BlockHash>& hashes) {
  KVTOPO_CHECK(hash_block_size > 0);
  const int64_t num_full = static_cast<int64_t>(tokens.size()) / hash_block_size;
  for (int64_t k = static_cast<int64_t>(hashes.size()); k < num_full; ++k) {
    const BlockHash parent = k == 0 ? RootBlockHash() : hashes[k - 1];
    hashes.push_back(HashBlockTokens(parent, tokens.subspan(k * hash_block_size, hash_block_size),
                                     TokenPos{k * hash_block_size}, extra));
  }
}

}  // namespace kvtopo
