// Launches the engine refuses when it builds its config or sizes the KV cache, which kvtopo
// refuses with the knob to change (the fork's VllmConfig validators at 28be48fa9): an nvfp4 KV
// cache with MLA, --mamba-block-size without prefix caching, and a Mamba align-mode block larger
// than one step's tokens.
#include <gtest/gtest.h>

#include <string>

#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/plan.h"

namespace kvtopo {
namespace {

Result<Plan> PlanOptions(const LaunchOptions& o) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchConfig c, ToLaunchConfig(o));
  return PlanLaunch(c);
}

LaunchOptions Model(const std::string& name) {
  LaunchOptions o;
  o.model = name;
  return o;
}

// validate_nvfp4_kv_cache_with_mla: MLA models (DeepSeek-V3.2, Kimi Linear's MLA layers) are
// refused; a K/V attention model plans nvfp4.
TEST(StartupRefusals, Nvfp4KvCacheWithMla) {
  LaunchOptions o = Model("deepseek-v3.2");
  o.kv_cache_dtype = "nvfp4";
  auto plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [kv-cache-dtype-mla] KV-cache dtype nvfp4 with DeepseekV32ForCausalLM, "
            "whose attention is MLA: the engine refuses an nvfp4 KV cache with MLA backends at "
            "startup; pass --kv-cache-dtype fp8 or bfloat16");
  o = Model("kimi-linear-48b");
  o.kv_cache_dtype = "nvfp4";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [kv-cache-dtype-mla] KV-cache dtype nvfp4 with KimiLinearForCausalLM, "
            "whose attention is MLA: the engine refuses an nvfp4 KV cache with MLA backends at "
            "startup; pass --kv-cache-dtype fp8 or bfloat16");
  o = Model("gpt-oss-120b");
  o.kv_cache_dtype = "nvfp4";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->capacity.max_tokens, 2'942'918);
}

// validate_mamba_block_size: a --mamba-block-size other than the length needs prefix caching,
// which hybrid models leave off unless asked.
TEST(StartupRefusals, MambaBlockSizeNeedsPrefixCaching) {
  LaunchOptions o = Model("qwen3-next-80b");
  o.mamba_block_size = 64;
  auto plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [mamba-block-size-prefix-caching] --mamba-block-size 64 with prefix "
            "caching off (the engine's default for Qwen3NextForCausalLM): the engine refuses it "
            "('--mamba-block-size can only be set with --enable-prefix-caching'); drop "
            "--mamba-block-size or pass --enable-prefix-caching");
  o.enable_prefix_caching = false;
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [mamba-block-size-prefix-caching] --mamba-block-size 64 with prefix "
            "caching off (--no-enable-prefix-caching): the engine refuses it ('--mamba-block-size "
            "can only be set with --enable-prefix-caching'); drop --mamba-block-size or pass "
            "--enable-prefix-caching");
  // The length itself is what the engine sets without prefix caching: accepted.
  o.max_model_len = 65536;
  o.mamba_block_size = 65536;
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  o.enable_prefix_caching = true;
  o.mamba_block_size = 64;
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
}

// validate_block_size in align mode, after the KV cache is sized: the smallest group block (the
// attention block grown to hold a recurrent state page) must fit in --max-num-batched-tokens.
TEST(StartupRefusals, AlignModeBlockFitsOneStep) {
  LaunchOptions o = Model("qwen3-next-80b");
  o.enable_prefix_caching = true;
  o.max_num_batched_tokens = 512;
  auto plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [mamba-align-block-size] Mamba cache mode align needs the smallest group "
            "block, 544 tokens, at most --max-num-batched-tokens 512: the engine asserts it after "
            "sizing the KV cache, once the weights are loaded; raise --max-num-batched-tokens to "
            "544 or more, or pass --no-enable-prefix-caching");
  o.max_num_batched_tokens = 544;
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  // GLM-5.3-Flash's block grows to 8,448 tokens: the default 8,192 a step is too few.
  o = Model("glm-5.3-flash");
  o.enable_prefix_caching = true;
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [mamba-align-block-size] Mamba cache mode align needs the smallest group "
            "block, 8448 tokens, at most --max-num-batched-tokens 8192: the engine asserts it "
            "after sizing the KV cache, once the weights are loaded; raise "
            "--max-num-batched-tokens to 8448 or more, or pass --no-enable-prefix-caching");
  // Without prefix caching the mode is none and the block is free.
  o.enable_prefix_caching.reset();
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
}

}  // namespace
}  // namespace kvtopo
