#include "internal/units.h"

#include <gtest/gtest.h>

namespace kvtopo {
namespace {

TEST(ParseByteSize, SuffixesAndErrors) {
  EXPECT_EQ(*ParseByteSize("12GiB", "--kv-cache-memory"), int64_t{12} << 30);
  EXPECT_EQ(*ParseByteSize("12gib", "--kv-cache-memory"), int64_t{12} << 30);
  EXPECT_EQ(*ParseByteSize("512MiB", "--kv-cache-memory"), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("16G", "--kv-cache-memory"),
            int64_t{16} << 30);  // vLLM: an upper-case letter is binary
  EXPECT_EQ(*ParseByteSize("16g", "--kv-cache-memory"), int64_t{16000000000});
  EXPECT_EQ(*ParseByteSize("16GB", "--kv-cache-memory"), int64_t{16000000000});
  EXPECT_EQ(*ParseByteSize("3K", "--kv-cache-memory"), 3072);
  EXPECT_EQ(*ParseByteSize("3k", "--kv-cache-memory"), 3000);
  EXPECT_EQ(*ParseByteSize("4KiB", "--kv-cache-memory"), 4096);
  EXPECT_EQ(*ParseByteSize("2.5m", "--kv-cache-memory"), 2500000);
  EXPECT_EQ(*ParseByteSize("2M", "--kv-cache-memory"), int64_t{2} << 20);
  EXPECT_EQ(*ParseByteSize("2tb", "--kv-cache-memory"), int64_t{2000000000000});
  EXPECT_EQ(*ParseByteSize("2T", "--kv-cache-memory"), int64_t{2} << 40);
  EXPECT_EQ(*ParseByteSize("2TiB", "--kv-cache-memory"), int64_t{2} << 40);
  EXPECT_EQ(*ParseByteSize("1000000", "--kv-cache-memory"), 1000000);
  EXPECT_EQ(*ParseByteSize("1.5GiB", "--kv-cache-memory"), int64_t{3} << 29);
  // What the engine's parser reads is read as it reads it.
  EXPECT_EQ(*ParseByteSize(" 12G ", "--kv-cache-memory"), int64_t{12} << 30);
  EXPECT_EQ(*ParseByteSize("1_000", "--kv-cache-memory"), 1000);
  EXPECT_EQ(*ParseByteSize("+64", "--kv-cache-memory"), 64);
  EXPECT_EQ(*ParseByteSize("1.001k", "--kv-cache-memory"), 1000);   // int(1.001 * 1000) in doubles
  EXPECT_EQ(*ParseByteSize("1.001kb", "--kv-cache-memory"), 1001);  // kvtopo's own spelling
  EXPECT_EQ(ParseByteSize("-1", "--kv-cache-memory").status().message(),
            "--kv-cache-memory '-1' is not a size; give bytes or a size such as 12GiB, 512MiB, "
            "16G");
  EXPECT_EQ(ParseByteSize("12XB", "--kv-cache-memory").status().message(),
            "--kv-cache-memory '12XB' has an unknown unit; give bytes or a size such as 12GiB, "
            "512MiB, 16G");
  EXPECT_EQ(ParseByteSize("99999999999TiB", "--kv-cache-memory").status().message(),
            "--kv-cache-memory '99999999999TiB' does not fit in 64 bits; give bytes or a size "
            "such as 12GiB, 512MiB, 16G");
  EXPECT_FALSE(ParseByteSize("", "--kv-cache-memory").ok());
  EXPECT_FALSE(ParseByteSize("1.2.3G", "--kv-cache-memory").ok());
  EXPECT_FALSE(ParseByteSize("0.5", "--kv-cache-memory").ok());
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
