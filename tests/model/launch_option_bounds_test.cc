// Every integer launch option carries its bounds (kvtopo/limits.h), and a value past them is an
// error naming the source as given, the range and the value.
#include <gtest/gtest.h>

#include "kvtopo/launch_options.h"
#include "kvtopo/limits.h"

namespace kvtopo {
namespace {

// The option table's integer and byte-size options (docs/launch-options.md): 31 integers,
// --kv-cache-memory and --device-memory.
constexpr int kNumIntegerOptions = 34;

TEST(LaunchOptionBounds, EveryIntegerOptionIsBounded) {
  int checked = 0;
  for (const LaunchOption& o : LaunchOptionTable()) {
    if (o.value != OptionValue::kInt && o.value != OptionValue::kBytes) continue;
    ++checked;
    SCOPED_TRACE(std::string(o.name));
    // --api-server-count takes any count, as the engine's parser does (below 1: headless).
    EXPECT_GE(o.min_value, o.name == "api_server_count" ? -kMaxInt32 : 0);
    EXPECT_GT(o.max_value, o.min_value);
    EXPECT_LE(o.max_value, kMaxKvCacheMemoryBytes);
  }
  EXPECT_EQ(checked, kNumIntegerOptions);
}

TEST(LaunchOptionBounds, ValuesPastTheBoundNameTheSource) {
  LaunchOptions options;
  const Status s = SetLaunchOption(options, *FindLaunchOption("-dcp"), int64_t{4097}, "-dcp");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "-dcp must be in [1, 4096], got 4097");
  EXPECT_FALSE(options.decode_context_parallel_size.has_value());
  EXPECT_EQ(SetLaunchOption(options, *FindLaunchOption("kv_group_size"), std::string("5000"),
                            "VLLM_K3_KV_GROUP_SIZE")
                .message(),
            "VLLM_K3_KV_GROUP_SIZE must be in [1, 4096], got 5000");
  EXPECT_EQ(SetLaunchOption(options, *FindLaunchOption("max_num_batched_tokens"), std::string("4G"),
                            "max_num_batched_tokens=")
                .message(),
            "max_num_batched_tokens= must be in [1, 2147483647], got 4294967296");
  EXPECT_TRUE(SetLaunchOption(options, *FindLaunchOption("max_model_len"),
                              std::string("2147483647"), "--max-model-len")
                  .ok());
  EXPECT_EQ(options.max_model_len, kMaxModelLen);
  EXPECT_TRUE(
      SetLaunchOption(options, *FindLaunchOption("-asc"), int64_t{-1}, "--api-server-count").ok());
  EXPECT_EQ(options.api_server_count, -1);
  EXPECT_EQ(SetLaunchOption(options, *FindLaunchOption("-asc"), int64_t{-kMaxInt32 - 1},
                            "--api-server-count")
                .message(),
            "--api-server-count must be in [-2147483647, 2147483647], got -2147483648");
}

}  // namespace
}  // namespace kvtopo
