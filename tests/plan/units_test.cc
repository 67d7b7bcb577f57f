#include "internal/units.h"

#include <gtest/gtest.h>

namespace kvtopo {
namespace {

TEST(ParseByteSize, SuffixesAndErrors) {
  EXPECT_EQ(*ParseByteSize("12GiB"), int64_t{12} << 30);
  EXPECT_EQ(*ParseByteSize("12gib"), int64_t{12} << 30);
  EXPECT_EQ(*ParseByteSize("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("16G"), int64_t{16} << 30);  // vLLM: an upper-case letter is binary
  EXPECT_EQ(*ParseByteSize("16g"), int64_t{16000000000});
  EXPECT_EQ(*ParseByteSize("16GB"), int64_t{16000000000});
  EXPECT_EQ(*ParseByteSize("3K"), 3072);
  EXPECT_EQ(*ParseByteSize("3k"), 3000);
  EXPECT_EQ(*ParseByteSize("4KiB"), 4096);
  EXPECT_EQ(*ParseByteSize("1000000"), 1000000);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(ParseByteSize("-1").status().message(),
            "--kv-cache-memory '-1' is not a size; give bytes or a size such as 12GiB, 512MiB, "
            "16G");
  EXPECT_EQ(ParseByteSize("12XB").status().message(),
            "--kv-cache-memory '12XB' has an unknown unit; give bytes or a size such as 12GiB, "
            "512MiB, 16G");
  EXPECT_EQ(ParseByteSize("99999999999TiB").status().message(),
            "--kv-cache-memory '99999999999TiB' does not fit in 64 bits; give bytes or a size "
            "such as 12GiB, 512MiB, 16G");
  EXPECT_FALSE(ParseByteSize("").ok());
  EXPECT_FALSE(ParseByteSize("1.2.3G").ok());
  EXPECT_FALSE(ParseByteSize("0.5").ok());
}

TEST(ParsePositiveInt, RejectsZeroNegativeAndOverflow) {
  EXPECT_EQ(*ParsePositiveInt("768", "--block-size"), 768);
  EXPECT_EQ(ParsePositiveInt("0", "--block-size").status().message(),
            "--block-size must be a positive integer, got '0'");
  EXPECT_EQ(ParsePositiveInt("-4", "--block-size").status().message(),
            "--block-size must be a positive integer, got '-4'");
  EXPECT_EQ(ParsePositiveInt("99999999999999999999", "--max-model-len").status().message(),
            "--max-model-len '99999999999999999999' does not fit in 64 bits");
}

}  // namespace
}  // namespace kvtopo
