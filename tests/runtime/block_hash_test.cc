#include "kvtopo/block_hash.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvtopo {
namespace {

TEST(BlockHash, ChainedOverFullBlocksOnly) {
  std::vector<int32_t> tokens(40);
  for (int i = 0; i < 40; ++i) tokens[i] = i;
  std::vector<BlockHash> hashes;
  ExtendBlockHashes(tokens, 16, {}, hashes);
  ASSERT_EQ(hashes.size(), 2u);  // 8 trailing tokens are not a full block
  EXPECT_EQ(hashes[0],
            HashBlockTokens(RootBlockHash(), std::span(tokens).first(16), TokenPos{0}, {}));
  EXPECT_EQ(hashes[1],
            HashBlockTokens(hashes[0], std::span(tokens).subspan(16, 16), TokenPos{16}, {}));
  // Incremental extension gives the same chain.
  tokens.resize(48, 5);
  ExtendBlockHashes(tokens, 16, {}, hashes);
  std::vector<BlockHash> fresh;
  ExtendBlockHashes(tokens, 16, {}, fresh);
  EXPECT_EQ(hashes, fresh);
}

TEST(BlockHash, ExtraKeysSeparateEntries) {
  std::vector<int32_t> tokens(32, 1);
  std::vector<BlockHash> plain, lora, salted, mm;
  ExtendBlockHashes(tokens, 16, {}, plain);
  ExtendBlockHashes(tokens, 16, {.lora_id = 3}, lora);
  ExtendBlockHashes(tokens, 16, {.cache_salt = "s"}, salted);
  ExtendBlockHashes(
      tokens, 16,
      {.mm_items = {{.identifier = "img", .offset = TokenPos{20}, .length = TokenCount{4}}}}, mm);
  EXPECT_NE(plain[0], lora[0]);
  EXPECT_NE(plain[0], salted[0]);
  EXPECT_NE(plain[1], salted[1]);  // through the parent chain
  // The salt is mixed into the first block only.
  EXPECT_EQ(HashBlockTokens(salted[0], std::span(tokens).subspan(16, 16), TokenPos{16}, {}),
            salted[1]);
  EXPECT_EQ(plain[0], mm[0]);  // the image does not overlap block 0
  EXPECT_NE(plain[1], mm[1]);
}

// Prompt embeddings: one digest per hash block of rows, the last block's over its rows only;
// a digest keys block k alone (the chain carries it on).
TEST(BlockHash, RowDigestsKeyTheirBlocks) {
  std::vector<std::byte> rows(10);  // 5 rows of 2 bytes
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = std::byte(i);
  const std::vector<BlockHash> keys = DigestRowsPerBlock(rows, 5, 2);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[2], DigestRowsPerBlock(std::span(rows).subspan(8), 1, 2)[0]);
  EXPECT_EQ(keys[0], DigestRowsPerBlock(std::span(rows).first(4), 2, 2)[0]);
  EXPECT_NE(keys[0], keys[1]);
  EXPECT_TRUE(DigestRowsPerBlock({}, 0, 2).empty());

  std::vector<int32_t> tokens(8, 0);  // placeholder ids
  std::vector<BlockHash> plain, keyed;
  ExtendBlockHashes(tokens, 2, {}, plain);
  ExtendBlockHashes(tokens, 2, {.block_keys = keys}, keyed);
  ASSERT_EQ(keyed.size(), 4u);
  EXPECT_NE(plain[0], keyed[0]);
  EXPECT_EQ(keyed[3], HashBlockTokens(keyed[2], std::span(tokens).subspan(6, 2), TokenPos{6}, {}));
}

TEST(BlockHash, CoarseningCombinesConsecutiveHashes) {
  const BlockHash a{1, 2}, b{3, 4};
  const BlockHash ab[] = {a, b};
  const BlockHash ba[] = {b, a};
  EXPECT_EQ(CombineBlockHashes(std::span(ab).first(1)), a);
  EXPECT_NE(CombineBlockHashes(ab), CombineBlockHashes(ba));
}

}  // namespace
}  // namespace kvtopo
