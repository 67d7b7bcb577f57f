#include "internal/flat_id_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace kvtopo::internal {
namespace {

TEST(FlatIdMap, FindInsertErase) {
  FlatIdMap m;
  EXPECT_EQ(m.Find(7), FlatIdMap::kNotFound);
  m.Insert(7, 0);
  m.Insert(-3, 1);
  m.Insert(1LL << 40, 2);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.Find(7), 0);
  EXPECT_EQ(m.Find(-3), 1);
  EXPECT_EQ(m.Find(1LL << 40), 2);
  EXPECT_TRUE(m.Erase(7));
  EXPECT_FALSE(m.Erase(7));
  EXPECT_FALSE(m.Contains(7));
  EXPECT_TRUE(m.Contains(-3));
  EXPECT_EQ(m.size(), 2u);
}

// Seeded random inserts and erases (dense, sparse, negative and colliding keys) against
// unordered_map; growth and backward-shift deletion must never lose or invent a key.
TEST(FlatIdMap, MatchesUnorderedMapOracle) {
  std::mt19937_64 rng(42);
  FlatIdMap m;
  std::unordered_map<int64_t, int32_t> oracle;
  for (int step = 0; step < 200000; ++step) {
    // Dense counter ids, ids around the dense limit, sparse large ids, negative ids.
    const int kind = static_cast<int>(rng() % 5);
    const int64_t key = kind == 0   ? static_cast<int64_t>(rng() % 3000)
                        : kind == 1 ? static_cast<int64_t>(rng() % 64) << 32
                        : kind == 2
                            ? FlatIdMap::kDenseLimit - 50 + static_cast<int64_t>(rng() % 100)
                        : kind == 3 ? static_cast<int64_t>(rng() >> 1)
                                    : -1 - static_cast<int64_t>(rng() % 1000);
    if (oracle.contains(key)) {
      ASSERT_EQ(m.Find(key), oracle[key]);
      if (rng() % 2 == 0) {
        ASSERT_TRUE(m.Erase(key));
        oracle.erase(key);
      }
    } else {
      ASSERT_EQ(m.Find(key), FlatIdMap::kNotFound);
      const int32_t value = static_cast<int32_t>(rng() % 1000000);
      m.Insert(key, value);
      oracle[key] = value;
    }
    ASSERT_EQ(m.size(), oracle.size());
  }
  size_t seen = 0;
  m.ForEach([&](int64_t key, int32_t value) {
    ++seen;
    ASSERT_EQ(oracle.at(key), value);
  });
  EXPECT_EQ(seen, oracle.size());
}

}  // namespace
}  // namespace kvtopo::internal
