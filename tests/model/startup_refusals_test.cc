// Launches the engine refuses when it builds its config or sizes the KV cache, which kvtopo
// refuses with the knob to change (the fork's VllmConfig validators at 28be48fa9): an nvfp4 KV
// cache with MLA, --mamba-block-size without prefix caching, a Mamba align-mode block larger than
// one step's tokens, and the flags that need a model with experts or more than one DP rank.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kvtopo/backend.h"
#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/plan.h"
#include "model/architectures.h"
#include "model/test_configs.h"

namespace kvtopo {
namespace {

using testing_configs::CorpusConfig;
using testing_configs::DiagnosticMessage;
using testing_configs::Older;
using testing_configs::OnlyLaunchDiagnostic;

Result<Plan> PlanOptions(const LaunchOptions& o) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchConfig c, ToLaunchConfig(o));
  return PlanLaunch(c);
}

LaunchOptions Model(const std::string& name) {
  LaunchOptions o;
  o.model = name;
  return o;
}

// The plan's error lines ("" when accepted); a launch that does not plan fails the test.
std::string Errors(const LaunchOptions& o) {
  Result<Plan> plan = PlanOptions(o);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? plan->ErrorLines() : "not planned";
}

// The error lines of `config` planned as the model of launch `c`.
std::string ConfigErrors(const nlohmann::json& config, const LaunchConfig& c) {
  Result<Plan> plan = testing_configs::PlanWith(config, c);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? plan->ErrorLines() : "not planned";
}

// The error line of --enable-eplb where the model runner registers no model to balance, for the
// launch `what` (the model and why).
std::string EplbNoModel(const std::string& what) {
  return "\n  error [eplb-model] --enable-eplb with " + what +
         ": the engine's model runner registers no model for expert-parallel load balancing, and "
         "the profile run's first forward at startup asserts ('assert self._moe_model is not "
         "None'); drop --enable-eplb";
}

// The error line of --moe-backend `backend` where `model`'s experts are unquantized (Python's
// quotes around the name in the engine's message).
std::string UnquantizedMoeBackend(const std::string& backend, const std::string& model) {
  return "\n  error [moe-backend] --moe-backend " + backend + " with 'config.json' (" + model +
         "), whose experts run UnquantizedFusedMoEMethod for its unquantized weights (unquantized "
         "MoE kernels): the engine raises as it builds the model ('moe_backend='" +
         backend +
         "' is not supported for unquantized MoE.'); pass one of triton, flashinfer_trtllm, "
         "flashinfer_cutlass, aiter, or auto";
}

// The error line of `model` under --pipeline-parallel-size 2 and VLLM_PP_LAYER_PARTITION
// `partition`, whose `stage` ("stage 0 (layer 0)") builds none of the experts `keys` choose; the
// engine's class raises `raises`.
std::string StageWithoutExperts(const std::string& model, const std::string& partition,
                                const std::string& stage, const std::string& keys,
                                const std::string& raises) {
  return fmt::format(
      "\n  error [expert-layers] 'config.json' ({}) with --pipeline-parallel-size 2 and "
      "VLLM_PP_LAYER_PARTITION '{}': {} builds no layer with experts (its layers build them only "
      "as {} choose): the engine's {} raises as such a stage builds its part of the model ('{}'); "
      "give every stage a layer with experts (VLLM_PP_LAYER_PARTITION) or change "
      "--pipeline-parallel-size",
      model, partition, stage, keys, model, raises);
}

// The tokens an accepted launch plans; an error, or a launch that does not plan, fails the test.
int64_t AcceptedTokens(const LaunchOptions& o) {
  Result<Plan> plan = PlanOptions(o);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return 0;
  EXPECT_EQ(plan->ErrorLines(), "");
  return plan->capacity.max_tokens;
}

// An embedded profile's config without its kvtopo block: a user's own copy of the model's config.
nlohmann::json ProfileConfig(const std::string& stem) {
  std::ifstream in(std::string(KVTOPO_SOURCE_DIR) + "/profiles/" + stem + ".json");
  nlohmann::json j = nlohmann::json::parse(in);
  j.erase("kvtopo");
  return j;
}

// The message of a launch the options refuse (exit 1); any other outcome fails the test.
std::string Rejection(const LaunchOptions& o) {
  const Status s = ToLaunchConfig(o).status();
  EXPECT_EQ(s.code(), StatusCode::kRejected) << s.ToString();
  return s.message();
}

// validate_nvfp4_kv_cache_with_mla: MLA models (DeepSeek-V3.2, Kimi Linear's MLA layers) are
// refused; a K/V attention model plans nvfp4.
TEST(StartupRefusals, Nvfp4KvCacheWithMla) {
  LaunchOptions o = Model("deepseek-v3.2");
  o.kv_cache_dtype = "nvfp4";
  EXPECT_EQ(Errors(o),
            "\n  error [kv-cache-dtype-mla] KV-cache dtype nvfp4 with DeepseekV32ForCausalLM, "
            "whose attention is MLA: the engine refuses an nvfp4 KV cache with MLA backends at "
            "startup; pass --kv-cache-dtype fp8 or bfloat16");
  o = Model("kimi-linear-48b");
  o.kv_cache_dtype = "nvfp4";
  EXPECT_EQ(Errors(o),
            "\n  error [kv-cache-dtype-mla] KV-cache dtype nvfp4 with KimiLinearForCausalLM, "
            "whose attention is MLA: the engine refuses an nvfp4 KV cache with MLA backends at "
            "startup; pass --kv-cache-dtype fp8 or bfloat16");
  o = Model("gpt-oss-120b");
  o.kv_cache_dtype = "nvfp4";
  const auto plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->capacity.max_tokens, 2'942'918);
}

// validate_mamba_block_size: a --mamba-block-size other than the length needs prefix caching,
// which hybrid models leave off unless asked.
TEST(StartupRefusals, MambaBlockSizeNeedsPrefixCaching) {
  LaunchOptions o = Model("qwen3-next-80b");
  o.mamba_block_size = 64;
  EXPECT_EQ(Errors(o),
            "\n  error [mamba-block-size-prefix-caching] --mamba-block-size 64 with prefix "
            "caching off (the engine's default for Qwen3NextForCausalLM): the engine refuses it "
            "('--mamba-block-size can only be set with --enable-prefix-caching'); drop "
            "--mamba-block-size or pass --enable-prefix-caching");
  o.enable_prefix_caching = false;
  EXPECT_EQ(Errors(o),
            "\n  error [mamba-block-size-prefix-caching] --mamba-block-size 64 with prefix "
            "caching off (--no-enable-prefix-caching): the engine refuses it ('--mamba-block-size "
            "can only be set with --enable-prefix-caching'); drop --mamba-block-size or pass "
            "--enable-prefix-caching");
  // The length itself is what the engine sets without prefix caching: accepted.
  o.max_model_len = 65536;
  o.mamba_block_size = 65536;
  EXPECT_EQ(Errors(o), "");
  o.enable_prefix_caching = true;
  o.mamba_block_size = 64;
  EXPECT_EQ(Errors(o), "");
}

// validate_block_size in align mode, after the KV cache is sized: the smallest group block (the
// attention block grown to hold a recurrent state page) must fit in --max-num-batched-tokens.
TEST(StartupRefusals, AlignModeBlockFitsOneStep) {
  LaunchOptions o = Model("qwen3-next-80b");
  o.enable_prefix_caching = true;
  o.max_num_batched_tokens = 512;
  EXPECT_EQ(Errors(o),
            "\n  error [mamba-align-block-size] Mamba cache mode align needs the smallest group "
            "block, 544 tokens, at most --max-num-batched-tokens 512: the engine asserts it after "
            "sizing the KV cache, once the weights are loaded; raise --max-num-batched-tokens to "
            "544 or more, or pass --no-enable-prefix-caching");
  o.max_num_batched_tokens = 544;
  EXPECT_EQ(Errors(o), "");
  // GLM-5.3-Flash's block grows to 8,448 tokens: the default 8,192 a step is too few.
  o = Model("glm-5.3-flash");
  o.enable_prefix_caching = true;
  EXPECT_EQ(Errors(o),
            "\n  error [mamba-align-block-size] Mamba cache mode align needs the smallest group "
            "block, 8448 tokens, at most --max-num-batched-tokens 8192: the engine asserts it "
            "after sizing the KV cache, once the weights are loaded; raise "
            "--max-num-batched-tokens to 8448 or more, or pass --no-enable-prefix-caching");
  // Without prefix caching the mode is none and the block is free.
  o.enable_prefix_caching.reset();
  EXPECT_EQ(Errors(o), "");
}

// Flags that leave the cache as it is but that the engine refuses in these launches.
TEST(StartupRefusals, RefusedFeatures) {
  LaunchOptions o = Model("gpt-oss-120b");
  o.max_num_partial_prefills = 2;
  EXPECT_EQ(Rejection(o),
            "--max-num-partial-prefills 2: the engine refuses concurrent partial prefill at "
            "startup ('Concurrent Partial Prefill is not supported'); drop the flag or set it to "
            "1");
  o.max_num_partial_prefills = 1;
  o.max_long_partial_prefills = 4;
  EXPECT_EQ(Rejection(o),
            "--max-long-partial-prefills 4: the engine refuses concurrent partial prefill at "
            "startup ('Concurrent Partial Prefill is not supported'); drop the flag or set it to "
            "1");
  o.max_long_partial_prefills = 1;
  EXPECT_TRUE(ToLaunchConfig(o).ok());

  o.enable_eplb = true;
  o.tensor_parallel_size = 8;
  EXPECT_EQ(Rejection(o),
            "--enable-eplb without --enable-expert-parallel: the engine refuses it "
            "('enable_expert_parallel must be True to use EPLB'); add --enable-expert-parallel "
            "or drop --enable-eplb");
  o.enable_expert_parallel = true;
  EXPECT_TRUE(ToLaunchConfig(o).ok());
  o.tensor_parallel_size = 1;
  EXPECT_EQ(Rejection(o),
            "--enable-eplb with --tensor-parallel-size 1 and --data-parallel-size 1: the engine "
            "refuses EPLB on one rank ('EPLB requires tensor_parallel_size or "
            "data_parallel_size to be greater than 1'); drop --enable-eplb");
  o.data_parallel_size = 2;
  EXPECT_TRUE(ToLaunchConfig(o).ok());

  // A connector given refuses routed experts; the one --kv-offloading-size adds comes later in
  // the engine and does not.
  o = Model("gpt-oss-120b");
  o.enable_return_routed_experts = true;
  o.kv_offloading_size = "10";
  EXPECT_TRUE(ToLaunchConfig(o).ok());
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "kv_consumer"})";
  EXPECT_EQ(Rejection(o),
            "--enable-return-routed-experts with KV connector \"NixlConnector\" "
            "(--kv-transfer-config): the engine refuses the pair ('--enable-return-routed-experts "
            "is incompatible with KV connectors'); drop one of them");
}

// External data-parallel load balancing: one DP rank, a rank outside the DP ranks, and both
// load-balancing modes are refused; a rank below DP turns it on.
TEST(StartupRefusals, ExternalDataParallelFlags) {
  LaunchOptions o = Model("gpt-oss-120b");
  o.data_parallel_external_lb = true;
  EXPECT_EQ(Rejection(o),
            "--data-parallel-external-lb without --data-parallel-rank: the engine refuses it "
            "('data_parallel_rank or node_rank must be specified if data_parallel_external_lb is "
            "enable.'), inferring a rank only with --data-parallel-size above 1 on several nodes "
            "(--nnodes, --node-rank); pass --data-parallel-rank");
  // `vllm serve` refuses both modes first, each also named by the rank flag that implies it.
  const std::string both =
      " the engine refuses the pair before it starts ('Cannot use both external and hybrid data "
      "parallel load balancing modes. External LB is enabled via --data-parallel-external-lb or "
      "--data-parallel-rank. Hybrid LB is enabled via --data-parallel-hybrid-lb or "
      "--data-parallel-start-rank. Use one mode or the other.'); drop one of them";
  o.data_parallel_hybrid_lb = true;
  EXPECT_EQ(Rejection(o), "--data-parallel-external-lb with --data-parallel-hybrid-lb:" + both);
  o = Model("gpt-oss-120b");
  o.data_parallel_size = 2;
  o.data_parallel_rank = 0;
  o.data_parallel_start_rank = 0;
  EXPECT_EQ(Rejection(o), "--data-parallel-rank with --data-parallel-start-rank:" + both);
  o = Model("gpt-oss-120b");
  o.data_parallel_rank = 0;
  EXPECT_EQ(Rejection(o),
            "--data-parallel-rank 0 with --data-parallel-size 1: the engine refuses external "
            "data-parallel load balancing on one DP rank ('data_parallel_external_lb can only be "
            "set when data_parallel_size > 1'); raise --data-parallel-size or drop the flag");
  o.data_parallel_size = 2;
  o.data_parallel_rank = 2;
  EXPECT_EQ(Rejection(o),
            "--data-parallel-rank 2 with --data-parallel-size 2: the engine refuses a rank "
            "outside the DP ranks ('data_parallel_rank (2) must be in the range [0, 2)'); pass a "
            "rank below 2");
  o.data_parallel_rank = 1;
  Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->external_data_parallel_lb);
  EXPECT_FALSE(c->enable_expert_parallel);
  o.data_parallel_size_local = 2;
  EXPECT_EQ(Rejection(o),
            "--data-parallel-size-local 2 with external data-parallel load balancing: the engine "
            "refuses it ('data_parallel_size_local must be 1 or None when data_parallel_rank is "
            "set'); drop --data-parallel-size-local or set it to 1");
  // Hybrid load balancing needs the local ranks, and is not for a headless node.
  o = Model("gpt-oss-120b");
  o.data_parallel_size = 4;
  o.data_parallel_hybrid_lb = true;
  EXPECT_EQ(Rejection(o),
            "--data-parallel-hybrid-lb without --data-parallel-size-local: the engine refuses it "
            "('data_parallel_size_local must be set to use data_parallel_hybrid_lb.'); pass "
            "--data-parallel-size-local");
  o.data_parallel_size_local = 2;
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->external_data_parallel_lb);
  o.data_parallel_size_local = 8;
  EXPECT_EQ(Rejection(o),
            "--data-parallel-size-local 8 with --data-parallel-size 4: the engine refuses more "
            "local ranks than ranks ('data_parallel_size_local (8) must be <= data_parallel_size "
            "(4)'); lower --data-parallel-size-local");
  o.data_parallel_size_local = 2;
  o.headless = true;
  EXPECT_EQ(Rejection(o),
            "--data-parallel-hybrid-lb with --headless: the engine refuses the pair "
            "('data_parallel_hybrid_lb is not applicable in headless mode'); drop one of them");
  o.headless.reset();
  o.data_parallel_hybrid_lb.reset();
  o.data_parallel_start_rank = 4;
  EXPECT_EQ(Rejection(o),
            "--data-parallel-start-rank 4 with --data-parallel-size 4: the engine refuses a rank "
            "outside the DP ranks ('data_parallel_rank (4) must be in the range [0, 4)'); pass a "
            "rank below 4");
  o.data_parallel_start_rank = 2;
  EXPECT_TRUE(ToLaunchConfig(o).ok());
}

// Several nodes: they divide the world (TP x PP x DP), the node is one of them, the data-parallel
// backend is mp, and with external load balancing the node's rank gives the DP rank.
TEST(StartupRefusals, NodesAndTheirDataParallelRanks) {
  LaunchOptions o = Model("gpt-oss-120b");
  o.tensor_parallel_size = 8;
  o.nnodes = 3;
  EXPECT_EQ(Rejection(o),
            "--nnodes 3 does not divide the 8 ranks of TP 8 x PP 1 x DP 1: the engine refuses it "
            "('world_size=8 must be divisible by nnodes=3.'); give a node count that divides "
            "them");
  o.nnodes = 2;
  o.node_rank = 2;
  EXPECT_EQ(Rejection(o),
            "--node-rank 2 with --nnodes 2: the engine refuses a node outside the nodes "
            "('node_rank=2 must be less than nnodes=2.'); pass a node rank below 2");
  o.node_rank = 1;
  EXPECT_TRUE(ToLaunchConfig(o).ok());
  o.data_parallel_backend = "ray";
  EXPECT_EQ(Rejection(o),
            "--nnodes 2 with --data-parallel-backend ray: the engine refuses it ('nnodes > 1 is "
            "only supported with data_parallel_backend=mp'); use --data-parallel-backend mp");
  o.data_parallel_backend = "nccl";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--data-parallel-backend must be mp or ray, got 'nccl'");
  o.data_parallel_backend.reset();
  o.distributed_executor_backend = "ray";
  EXPECT_EQ(Rejection(o),
            "--nnodes 2 with --distributed-executor-backend ray: the engine refuses it ('nnodes > "
            "1 can only be set when distributed executor backend is mp, uni or "
            "external_launcher.'); use mp, or one node per engine");
  o.distributed_executor_backend = "external_launcher";
  EXPECT_TRUE(ToLaunchConfig(o).ok());
  // One worker in the engine core's process cannot make a world of eight ranks.
  o.distributed_executor_backend = "uni";
  EXPECT_EQ(Rejection(o),
            "--distributed-executor-backend uni runs one worker in the engine core's process, "
            "and --tensor-parallel-size 8 x --pipeline-parallel-size 1 x "
            "--prefill-context-parallel-size 1 needs 8: that worker waits for ranks no process "
            "starts, so the launch hangs as it initializes; use mp (the engine's choice for more "
            "than one worker) or ray");
  o.distributed_executor_backend.reset();
  // TP 4 x DP 4 on two nodes: node 1 holds DP ranks 2 and 3; external load balancing takes
  // its first.
  o.tensor_parallel_size = 4;
  o.data_parallel_size = 4;
  o.enable_expert_parallel = true;
  o.data_parallel_external_lb = true;
  Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->external_data_parallel_lb);
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
}

// ModelConfig.is_moe: --enable-expert-parallel and external data-parallel load balancing need a
// text config that states its experts, under the first of the engine's four keys it states, or in
// its block_configs; every embedded target states them.
TEST(StartupRefusals, ExpertParallelNeedsExperts) {
  LaunchConfig c;
  c.enable_expert_parallel = true;
  nlohmann::json llama = testing_configs::Llama31_8B();
  const std::string no_experts =
      "'config.json' (LlamaForCausalLM), whose config states no experts (num_experts, "
      "moe_num_experts, n_routed_experts, num_local_experts, block_configs): the engine refuses "
      "it";
  const std::string ep_refused =
      "\n  error [expert-parallel-no-experts] --enable-expert-parallel with " + no_experts +
      " ('Number of experts in the model must be greater than 0 when expert parallelism is "
      "enabled'); drop --enable-expert-parallel";
  const std::string dp_refused =
      "\n  error [external-dp-no-experts] external data-parallel load balancing "
      "(--data-parallel-external-lb or --data-parallel-rank) with " +
      no_experts +
      " ('Non-MoE models do not support external data parallel mode'); launch independent "
      "engines without --data-parallel-* flags";
  EXPECT_EQ(ConfigErrors(llama, c), ep_refused);
  c.enable_expert_parallel = false;
  c.external_data_parallel_lb = true;
  EXPECT_EQ(ConfigErrors(llama, c), dp_refused);
  c.enable_expert_parallel = true;
  nlohmann::json moe = llama;
  moe["num_local_experts"] = 8;
  EXPECT_EQ(ConfigErrors(moe, c), "");
  moe["num_experts"] = nlohmann::json::array({16, 16});  // Ernie VL's list: its first entry
  EXPECT_EQ(ConfigErrors(moe, c), "");
  moe["num_experts"] = 0;  // the first key stated decides; 0 falls to block_configs
  EXPECT_EQ(ConfigErrors(moe, c), ep_refused + dp_refused);
  moe["block_configs"] = nlohmann::json::parse(
      R"([{"block_type": "mamba"}, {"block_type": "moe", "n_routed_experts": 128}])");
  EXPECT_EQ(ConfigErrors(moe, c), "");

  for (const char* name : {"deepseek-v3.2", "glm-5.1", "glm-5.3-flash", "gpt-oss-120b", "kimi-k2.6",
                           "kimi-k3", "kimi-linear-48b", "qwen3-next-80b"}) {
    LaunchOptions o = Model(name);
    o.tensor_parallel_size = 8;
    o.enable_expert_parallel = true;
    o.data_parallel_size = 2;
    o.data_parallel_rank = 1;
    EXPECT_EQ(Errors(o), "") << name;
  }
}

// The experts' FusedMoE method, which the weights' quantization method picks, decides which MoE
// kernels --moe-backend may name (its kernel family) and whether --enable-eplb is taken, where
// the model passes it to its experts (the fork at 28be48fa9). MiniCPM's own MoE refuses EPLB.
// An embedded profile that states no quantization stands for checkpoints of several methods.
TEST(StartupRefusals, MoeKernelsAndLoadBalancing) {
  nlohmann::json qwen = CorpusConfig("qwen3.5-35b-a3b");
  LaunchConfig c;
  c.moe_backend = "deep_gemm";
  c.moe_backend_from = "--moe-backend";
  EXPECT_EQ(ConfigErrors(qwen, c),
            UnquantizedMoeBackend("deep_gemm", "Qwen3_5MoeForConditionalGeneration"));
  c.moe_backend = "flashinfer_cutlass";
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  // Weight-only AWQ experts read no moe_backend, and do not support EPLB.
  qwen["quantization_config"] = nlohmann::json::parse(
      R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true})");
  c.moe_backend = "b12x";
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  c.moe_backend = "auto";
  c.parallel.tensor_parallel_size = 2;
  c.enable_expert_parallel = true;
  c.enable_eplb = true;
  EXPECT_EQ(ConfigErrors(qwen, c),
            "\n  error [eplb-quantization] --enable-eplb with 'config.json' "
            "(Qwen3_5MoeForConditionalGeneration), whose experts run AWQMarlinMoEMethod or "
            "MoeWNA16Method for its awq_marlin weights, which does not support expert-parallel "
            "load balancing: the engine's FusedMoE raises as it builds the model ('EPLB is not "
            "supported ' and the class); drop --enable-eplb");
  qwen.erase("quantization_config");
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  // Compressed-tensors picks by the scheme that reaches the experts: INT4 weights in groups of
  // 32 run the Marlin WNA16 method where Marlin fits (hidden 2,048 a multiple of 128, the
  // experts' 512 a multiple of 64), which does not support EPLB; groups of 256 do not fit
  // Marlin, and the plain WNA16 method does. An ignore entry that may name the experts leaves
  // the method unknown (the shared experts' does not).
  qwen["quantization_config"] = nlohmann::json::parse(R"({
      "quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": null,
          "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32,
                      "symmetric": true, "dynamic": false}}},
      "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*"]})");
  EXPECT_EQ(ConfigErrors(qwen, c),
            "\n  error [eplb-quantization] --enable-eplb with 'config.json' "
            "(Qwen3_5MoeForConditionalGeneration), whose experts run "
            "CompressedTensorsWNA16MarlinMoEMethod for its compressed-tensors weights, which does "
            "not support expert-parallel load balancing: the engine's FusedMoE raises as it "
            "builds the model ('EPLB is not supported CompressedTensorsWNA16MarlinMoEMethod.'); "
            "drop --enable-eplb");
  qwen["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 256;
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  qwen["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 32;
  qwen["quantization_config"]["config_groups"]["group_0"]["targets"] = {"re:.*self_attn.*"};
  EXPECT_EQ(ConfigErrors(qwen, c), "");  // a group that may not reach the experts
  qwen["quantization_config"]["config_groups"]["group_0"]["targets"] = {"Linear"};
  qwen["quantization_config"]["ignore"].push_back("re:.*mlp\\.experts.*");
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  // W8A8 FP8 experts: the FP8 family, cutlass included (its method allows the vLLM CUTLASS
  // kernels), and EPLB.
  qwen["quantization_config"] = nlohmann::json::parse(R"({
      "quant_method": "compressed-tensors", "format": "float-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"],
          "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": true,
                      "dynamic": false},
          "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                "dynamic": true, "symmetric": true}}}})");
  c.moe_backend = "cutlass";
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  c.moe_backend = "b12x";
  EXPECT_EQ(DiagnosticMessage(*testing_configs::PlanWith(qwen, c), "moe-backend"),
            "--moe-backend b12x with 'config.json' (Qwen3_5MoeForConditionalGeneration), whose "
            "experts run CompressedTensorsW8A8Fp8MoEMethod for its compressed-tensors weights "
            "(FP8 MoE kernels): the engine raises as it builds the model ('moe_backend='b12x' is "
            "not supported for FP8 MoE.'); pass one of triton, deep_gemm, cutlass, "
            "flashinfer_trtllm, flashinfer_cutlass, marlin, aiter, or auto");
  // NVFP4 weights run the NvFP4 method with NVFP4 input quantization or none; other input
  // quantization raises there ('For NVFP4 weights, input quantization must also be NVFP4'), so
  // the method stays unknown and no backend is refused by it.
  qwen["quantization_config"] = nlohmann::json::parse(R"({
      "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"],
          "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                      "group_size": 16, "symmetric": true, "dynamic": false},
          "input_activations": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                "group_size": 16, "symmetric": true, "dynamic": "local"}}}})");
  c.moe_backend = "deep_gemm";
  c.enable_eplb = false;
  const std::string nvfp4_refusal =
      "--moe-backend deep_gemm with 'config.json' (Qwen3_5MoeForConditionalGeneration), whose "
      "experts run CompressedTensorsW4A4Nvfp4MoEMethod for its compressed-tensors weights (NvFP4 "
      "MoE kernels): the engine raises as it builds the model ('moe_backend='deep_gemm' is not "
      "supported for NvFP4 MoE.'); pass one of b12x, cutlass, flashinfer_trtllm, "
      "flashinfer_cutlass, flashinfer_cutedsl, marlin, emulation, or auto";
  EXPECT_EQ(DiagnosticMessage(*testing_configs::PlanWith(qwen, c), "moe-backend"), nvfp4_refusal);
  qwen["quantization_config"]["config_groups"]["group_0"].erase("input_activations");  // W4A16
  EXPECT_EQ(DiagnosticMessage(*testing_configs::PlanWith(qwen, c), "moe-backend"), nvfp4_refusal);
  qwen["quantization_config"]["config_groups"]["group_0"]["input_activations"] = {
      {"num_bits", 8}, {"type", "float"}, {"strategy", "token"}, {"dynamic", true}};
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  c.enable_eplb = true;
  c.moe_backend = "b12x";
  // ModelOpt FP8 by quant_algo: FP8 builds ModelOptFp8MoEMethod without the vLLM CUTLASS
  // kernels; FP8_PB_WO builds ModelOptFp8PbWoMoEMethod with them, and runs b12x as auto.
  qwen["quantization_config"] =
      nlohmann::json::parse(R"({"quant_method": "modelopt", "quant_algo": "FP8"})");
  c.enable_eplb = false;
  EXPECT_EQ(DiagnosticMessage(*testing_configs::PlanWith(qwen, c), "moe-backend"),
            "--moe-backend b12x with 'config.json' (Qwen3_5MoeForConditionalGeneration), whose "
            "experts run ModelOptFp8MoEMethod for its modelopt weights (FP8 MoE kernels): the "
            "engine raises as it builds the model ('moe_backend='b12x' is not supported for FP8 "
            "MoE.'); pass one of triton, deep_gemm, flashinfer_trtllm, flashinfer_cutlass, "
            "marlin, aiter, or auto");
  qwen["quantization_config"] = nlohmann::json::parse(
      R"({"quant_method": "modelopt", "quantization": {"quant_algo": "fp8_pb_wo"}})");
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  c.moe_backend = "cutlass";
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  c.moe_backend = "humming";
  EXPECT_EQ(DiagnosticMessage(*testing_configs::PlanWith(qwen, c), "moe-backend"),
            "--moe-backend humming with 'config.json' (Qwen3_5MoeForConditionalGeneration), "
            "whose experts run ModelOptFp8PbWoMoEMethod for its modelopt weights (FP8 MoE "
            "kernels): the engine raises as it builds the model ('moe_backend='humming' is not "
            "supported for FP8 MoE.'); pass one of b12x, triton, deep_gemm, cutlass, "
            "flashinfer_trtllm, flashinfer_cutlass, marlin, aiter, or auto");
  c.moe_backend = "auto";
  c.enable_eplb = true;
  EXPECT_EQ(DiagnosticMessage(*testing_configs::PlanWith(qwen, c), "eplb-quantization"),
            "--enable-eplb with 'config.json' (Qwen3_5MoeForConditionalGeneration), whose experts "
            "run ModelOptFp8PbWoMoEMethod for its modelopt weights, which does not support "
            "expert-parallel load balancing: the engine's FusedMoE raises as it builds the model "
            "('EPLB is not supported ModelOptFp8PbWoMoEMethod.'); drop --enable-eplb");
  qwen.erase("quantization_config");
  // MiniCPM's own MoE (MiniCPM3 builds it too) raises for EPLB.
  nlohmann::json minicpm = CorpusConfig("minicpm3-4b");
  // No experts: dense, refused for expert parallelism alone.
  EXPECT_EQ(ConfigErrors(minicpm, c),
            "\n  error [expert-parallel-no-experts] --enable-expert-parallel with 'config.json' "
            "(MiniCPM3ForCausalLM), whose config states no experts (num_experts, "
            "moe_num_experts, n_routed_experts, num_local_experts, block_configs): the engine "
            "refuses it ('Number of experts in the model must be greater than 0 when expert "
            "parallelism is enabled'); drop --enable-expert-parallel");
  minicpm["num_experts"] = 8;
  minicpm["num_experts_per_tok"] = 2;
  EXPECT_EQ(ConfigErrors(minicpm, c),
            "\n  error [eplb-model] --enable-eplb with 'config.json' (MiniCPM3ForCausalLM), whose "
            "config states 8 experts: the engine raises as it builds the model ('EPLB is not "
            "supported for MiniCPM yet.'); drop --enable-eplb");

  // gpt-oss's MXFP4 experts: the MXFP4 family; they do not support EPLB, but its model passes
  // none to them.
  LaunchOptions o = Model("gpt-oss-120b");
  o.moe_backend = "b12x";
  EXPECT_EQ(Errors(o),
            "\n  error [moe-backend] --moe-backend b12x with 'profiles/gpt-oss-120b.json' "
            "(GptOssForCausalLM), whose experts run GptOssMxfp4MoEMethod for its gpt_oss_mxfp4 "
            "weights (MXFP4 MoE kernels): the engine raises as it builds the model "
            "('moe_backend='b12x' is not supported for MXFP4 MoE.'); pass one of deep_gemm, "
            "flashinfer_trtllm, flashinfer_cutlass, triton, triton_unfused, humming, marlin, "
            "aiter, emulation, or auto");
  o.moe_backend = "Triton-Unfused";
  o.tensor_parallel_size = 8;
  o.enable_expert_parallel = true;
  EXPECT_EQ(AcceptedTokens(o), 6621558);
  // GptOssForCausalLM is not the engine's MixtureOfExperts: its runner balances no model.
  o.enable_eplb = true;
  EXPECT_EQ(Errors(o),
            EplbNoModel(
                "'profiles/gpt-oss-120b.json' (GptOssForCausalLM), whose engine class (or the "
                "language model it wraps) is not the MixtureOfExperts model the engine balances"));
  // DeepSeek-V3.2's fp8 experts: Fp8MoEMethod, built without the vLLM CUTLASS kernels.
  o = Model("deepseek-v3.2");
  o.kernel_config = R"({"moe_backend": "cutlass"})";
  EXPECT_EQ(DiagnosticMessage(*PlanOptions(o), "moe-backend"),
            "--kernel-config's moe_backend cutlass with 'profiles/deepseek-v3.2.json' "
            "(DeepseekV32ForCausalLM), whose experts run Fp8MoEMethod for its fp8 weights (FP8 "
            "MoE kernels): the engine raises as it builds the model ('vLLM CUTLASS FP8 MoE "
            "backend is disabled for this configuration.'); pass one of triton, deep_gemm, "
            "flashinfer_trtllm, flashinfer_cutlass, marlin, aiter, or auto");
  // Kimi-K2.6's profile states no quantization (its checkpoint's experts are compressed-tensors
  // INT4, which read no moe_backend): not checked, as for GLM-5.1's (bf16, FP8 and NVFP4
  // checkpoints), unless --quantization names the method.
  o = Model("kimi-k2.6");
  o.moe_backend = "marlin";
  EXPECT_EQ(Errors(o), "");
  o = Model("glm-5.1");
  o.moe_backend = "b12x";
  EXPECT_EQ(Errors(o), "");
  o.quantization = "modelopt_fp4";
  EXPECT_EQ(Errors(o), "");

  // MTP layers with experts (Qwen3.5 MoE's): the V1 runner builds them with the speculative
  // config's moe_backend, the V2 runner with the target's (the key unread, a warning). The V2
  // runner refuses Qwen3-Next, a HasInnerState model, whatever its MTP layers run.
  LaunchConfig mtp;
  mtp.speculative =
      SpeculativeConfig{.method = "mtp", .num_speculative_tokens = 2, .moe_backend = "deep_gemm"};
  Result<Plan> plan = testing_configs::PlanWith(CorpusConfig("qwen3.5-35b-a3b"), mtp);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [moe-backend] --speculative-config's moe_backend deep_gemm with the MTP "
            "layers of 'config.json' (Qwen3_5MoeForConditionalGeneration), whose experts run "
            "UnquantizedFusedMoEMethod (unquantized MoE kernels): the engine raises as its V1 "
            "model runner builds them under the draft's config, once the target's weights are "
            "loaded ('moe_backend='deep_gemm' is not supported for unquantized MoE.'); pass one "
            "of triton, flashinfer_trtllm, flashinfer_cutlass, aiter, or auto");
  mtp.use_v2_model_runner = true;
  plan = testing_configs::PlanWith(CorpusConfig("qwen3.5-35b-a3b"), mtp);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "speculative-moe-backend-unread"),
            "--speculative-config's moe_backend deep_gemm is not read: the engine's V2 model "
            "runner (VLLM_USE_V2_MODEL_RUNNER) builds the MTP layers of 'config.json' "
            "(Qwen3_5MoeForConditionalGeneration) under the target's config, with the target's "
            "MoE kernels (auto)");
  plan = testing_configs::PlanWith(CorpusConfig("qwen3-next-80b"), mtp);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [v2-model-runner] VLLM_USE_V2_MODEL_RUNNER=1 (--use-v2-model-runner) with "
            "'config.json' (Qwen3NextForCausalLM): the engine refuses it at startup "
            "('VLLM_USE_V2_MODEL_RUNNER does not yet support: hybrid/mamba models'); unset it, or "
            "drop what it names");

  // The GPU a named backend's kernels run on (where the launch states it), and NVFP4's b12x and
  // CUTLASS kernels, which take no expert parallelism.
  o = Model("gpt-oss-120b");
  o.moe_backend = "flashinfer_trtllm";
  o.device_capability = "9.0";
  EXPECT_EQ(Errors(o),
            "\n  error [moe-backend] --moe-backend flashinfer_trtllm with "
            "'profiles/gpt-oss-120b.json' (GptOssForCausalLM), whose experts run "
            "GptOssMxfp4MoEMethod for its gpt_oss_mxfp4 weights (MXFP4 MoE kernels): its "
            "flashinfer_trtllm kernels run on compute capability 10.x, not 9.0 "
            "(--device-capability): the engine raises as it builds the model ('... does not "
            "support the deployment configuration since kernel does not support current "
            "device'); pick another MoE backend");
  o.device_capability = "10.0";
  EXPECT_EQ(Errors(o), "");
  o.moe_backend = "marlin";
  o.device_capability = "12.0";
  EXPECT_EQ(Errors(o), "");
  o.moe_backend = "aiter";
  EXPECT_EQ(Errors(o),
            "\n  error [moe-backend] --moe-backend aiter with 'profiles/gpt-oss-120b.json' "
            "(GptOssForCausalLM), whose experts run GptOssMxfp4MoEMethod for its gpt_oss_mxfp4 "
            "weights (MXFP4 MoE kernels): its aiter kernels run on no CUDA GPU (ROCm's kernels), "
            "not 12.0 (--device-capability): the engine raises as it builds the model ('... does "
            "not support the deployment configuration since kernel does not support current "
            "device'); pick another MoE backend");
  o = Model("deepseek-v3.2");  // FP8 experts: DeepGEMM runs on Hopper and Blackwell
  o.moe_backend = "deep_gemm";
  o.device_capability = "12.0";
  EXPECT_EQ(DiagnosticMessage(*PlanOptions(o), "moe-backend"),
            "--moe-backend deep_gemm with 'profiles/deepseek-v3.2.json' (DeepseekV32ForCausalLM), "
            "whose experts run Fp8MoEMethod for its fp8 weights (FP8 MoE kernels): its deep_gemm "
            "kernels run on compute capability 9.0, 10.x, not 12.0 (--device-capability): the "
            "engine raises as it builds the model ('... does not support the deployment "
            "configuration since kernel does not support current device'); pick another MoE "
            "backend");
  o.device_capability = "9.0";
  EXPECT_EQ(Errors(o), "");
  o = Model("glm-5.1");  // the fork's run-glm51-vllm launch
  o.quantization = "modelopt_fp4";
  o.moe_backend = "b12x";
  o.attention_backend = "B12X_MLA_SPARSE";
  o.device_capability = "12.0";
  o.tensor_parallel_size = 8;
  EXPECT_EQ(Errors(o), "");
  o.enable_expert_parallel = true;
  EXPECT_EQ(Errors(o),
            "\n  error [moe-backend] --moe-backend b12x with 'profiles/glm-5.1.json' "
            "(GlmMoeDsaForCausalLM), whose experts run ModelOptNvFp4FusedMoE for its modelopt_fp4 "
            "weights (NvFP4 MoE kernels) and --enable-expert-parallel over 8 ranks: its "
            "B12xExperts kernels take no expert parallelism, so the engine raises as it builds "
            "the model ('... does not support the deployment configuration since kernel does not "
            "support parallel config'); drop --enable-expert-parallel or pick another MoE "
            "backend");
  o.device_capability = "10.0";
  o.enable_expert_parallel = false;
  EXPECT_EQ(DiagnosticMessage(*PlanOptions(o), "moe-backend"),
            "--moe-backend b12x with 'profiles/glm-5.1.json' (GlmMoeDsaForCausalLM), whose "
            "experts run ModelOptNvFp4FusedMoE for its modelopt_fp4 weights (NvFP4 MoE kernels): "
            "its b12x kernels run on compute capability 12.x, not 10.0 (--device-capability): "
            "the engine raises as it builds the model ('... does not support the deployment "
            "configuration since kernel does not support current device'); pick another MoE "
            "backend");
}

// The engine's own expert-parallel load-balancing launches (its scheduled integration tests at
// 28be48fa9, .buildkite/scripts/scheduled_integration_test/qwen30b_a3b_fp8_block_ep_eplb.sh,
// qwen30b_a3b_fp8_dp4_async_eplb.sh, qwen3_next_mtp_async_eplb.sh, and
// tests/distributed/test_eplb_spec_decode.py's Qwen3-Next launch) plan, their --eplb-config
// included: Qwen3 MoE and Qwen3-Next pass --enable-eplb to their experts, whose FP8 and
// unquantized methods support it.
// Qwen3-30B-A3B-FP8's config: fuzz/corpus/config_plan/qwen3-30b-a3b-fp8.json.
TEST(StartupRefusals, EngineExpertParallelLoadBalancingLaunches) {
  LaunchOptions o =
      Model(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/qwen3-30b-a3b-fp8.json");
  o.enforce_eager = true;
  o.enable_eplb = true;
  o.enable_expert_parallel = true;
  o.all2all_backend = "deepep_low_latency";
  o.tensor_parallel_size = 2;
  o.data_parallel_size = 2;
  o.max_model_len = 2048;
  o.eplb_config = R"({"window_size":10, "step_interval":100, "num_redundant_experts":0, )"
                  R"("log_balancedness":true})";
  EXPECT_EQ(AcceptedTokens(o), 699040);  // 48 layers x 2 x 2 KV heads x 128 x 2 B a token
  o.all2all_backend.reset();
  o.tensor_parallel_size.reset();
  o.data_parallel_size = 4;
  o.eplb_config = R"({"window_size":20, "step_interval":100, "use_async":true})";
  EXPECT_EQ(AcceptedTokens(o), 349520);
  o.moe_backend = "cutlass";  // Fp8MoEMethod builds without the vLLM CUTLASS kernels
  EXPECT_NE(Errors(o).find("'vLLM CUTLASS FP8 MoE backend is disabled for this configuration.'"),
            std::string::npos);
  o = Model("qwen3-next-80b");
  o.async_scheduling = false;
  o.attention_backend = "TRITON_ATTN";
  o.enforce_eager = true;
  o.tensor_parallel_size = 4;
  o.enable_expert_parallel = true;
  o.enable_eplb = true;
  o.speculative_config = R"({"method":"qwen3_next_mtp","num_speculative_tokens":1})";
  o.max_model_len = 2048;
  o.eplb_config = R"({"window_size":200,"step_interval":600,"use_async":true})";
  EXPECT_EQ(AcceptedTokens(o), 1388105);
  // test_eplb_spec_decode: 4 redundant experts, one a rank, 516 experts over 4 ranks.
  o.eplb_config = R"({"num_redundant_experts": 4, "window_size": 128, "step_interval": 1024, )"
                  R"("log_balancedness": false})";
  o.max_model_len = 4096;  // the hybrid log's tokens grow with it; the pool is the same
  EXPECT_EQ(AcceptedTokens(o), 1766679);
}

// Under --enable-eplb, FusedMoE experts that take EPLB hold the routed and redundant experts in
// equal shares over the expert-parallel ranks (DP x PCP x TP); experts that take the redundant
// count without EPLB assert it is 0; and the count needs EPLB at all.
TEST(StartupRefusals, ExpertPlacementUnderLoadBalancing) {
  const std::string qwen3 =
      std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/qwen3-30b-a3b-fp8.json";
  LaunchOptions o = Model(qwen3);
  o.max_model_len = 2048;
  o.enable_expert_parallel = true;
  o.enable_eplb = true;
  o.tensor_parallel_size = 2;
  o.data_parallel_size = 3;
  EXPECT_EQ(Errors(o),
            "\n  error [eplb-experts] --enable-eplb with '" + qwen3 +
                "' (Qwen3MoeForCausalLM), whose config states 128 routed experts: they do not "
                "split evenly over the 6 expert-parallel ranks (DP 3 x PCP 1 x TP 2), so the "
                "engine's FusedMoE raises as it builds the model ('EPLB currently only supports "
                "even distribution of experts across ranks. Got 128 experts and 6 EP ranks.'); "
                "pick a layout whose ranks divide them, or drop --enable-eplb");
  o.eplb_config = R"({"num_redundant_experts": 4})";  // 132 experts, 22 a rank
  EXPECT_EQ(AcceptedTokens(o), 699040);
  o.eplb_config = R"({"num_redundant_experts": 1024})";  // 1,152 experts, 192 a rank
  EXPECT_EQ(Errors(o),
            "\n  error [eplb-experts] --eplb-config's num_redundant_experts 1024 with '" + qwen3 +
                "' (Qwen3MoeForCausalLM): the engine's EPLB state asserts at most 1023 as it "
                "registers the model, once the weights are loaded ('num_redundant_experts 1024 "
                "must be less than or equal to 1023'); give 1023 or fewer");
  o.eplb_config = R"({"num_redundant_experts": 2})";
  EXPECT_EQ(Errors(o),
            "\n  error [eplb-experts] --enable-eplb with '" + qwen3 +
                "' (Qwen3MoeForCausalLM), whose config states 128 routed experts and "
                "--eplb-config's 2 redundant ones: they do not split evenly over the 6 "
                "expert-parallel ranks (DP 3 x PCP 1 x TP 2), so the engine's FusedMoE raises as "
                "it builds the model ('EPLB currently only supports even distribution of experts "
                "across ranks. Got 130 experts and 6 EP ranks.'); pick a layout whose ranks "
                "divide them, or change num_redundant_experts");
  // Without EPLB the experts may split unevenly, and the redundant count is refused.
  o.enable_eplb.reset();
  o.eplb_config.reset();
  EXPECT_EQ(AcceptedTokens(o), 699040);
  o.eplb_config = R"({"num_redundant_experts": "4"})";  // pydantic's lax int
  EXPECT_EQ(PlanOptions(o).status().message(),
            "--eplb-config's num_redundant_experts 4 without --enable-eplb: the engine refuses "
            "it ('num_redundant_experts is set to 4 but EPLB is not enabled. Either enable EPLB "
            "or unset num_redundant_experts.'); add --enable-eplb or drop "
            "num_redundant_experts");
  // HY-V3's experts get the redundant count but not EPLB.
  const std::string hy3 =
      std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/hy3-preview.json";
  o = Model(hy3);
  o.max_model_len = 4096;
  o.enable_expert_parallel = true;
  o.enable_eplb = true;
  o.tensor_parallel_size = 2;
  o.kv_cache_memory = "32GiB";
  // Nor is HYV3ForCausalLM the engine's MixtureOfExperts: EPLB balances no model.
  const std::string hy3_unbalanced = EplbNoModel(
      "'" + hy3 +
      "' (HYV3ForCausalLM), whose engine class (or the language model it wraps) is not the "
      "MixtureOfExperts model the engine balances");
  EXPECT_EQ(Errors(o), hy3_unbalanced);
  o.eplb_config = R"({"num_redundant_experts": 2})";
  EXPECT_EQ(Errors(o),
            "\n  error [eplb-redundant] --eplb-config's num_redundant_experts 2 with '" + hy3 +
                "' (HYV3ForCausalLM), whose experts take the redundant count but not "
                "--enable-eplb: the engine's FusedMoE asserts as it builds the model under "
                "expert parallelism ('Redundant experts are only supported with EPLB.'); drop "
                "num_redundant_experts" +
                hy3_unbalanced);
  o.enable_eplb.reset();
  o.eplb_config.reset();
  EXPECT_EQ(AcceptedTokens(o), 209712);
}

// VLLM_USE_V2_MODEL_RUNNER=1 with what the V2 model runner does not yet support: the engine
// names every such feature, in its order, and refuses the launch at startup.
TEST(StartupRefusals, V2ModelRunnerUnsupportedFeatures) {
  LaunchOptions o = Model("qwen3-next-80b");
  o.use_v2_model_runner = true;
  o.enable_return_routed_experts = true;
  o.logprobs_mode = "processed_logits";
  o.enable_prompt_embeds = true;
  EXPECT_EQ(Errors(o),
            "\n  error [v2-model-runner] VLLM_USE_V2_MODEL_RUNNER=1 (--use-v2-model-runner) with "
            "'profiles/qwen3-next-80b.json' (Qwen3NextForCausalLM): the engine refuses it at "
            "startup ('VLLM_USE_V2_MODEL_RUNNER does not yet support: hybrid/mamba models, routed "
            "experts capture, prompt embeds, logprobs mode 'processed_logits''); unset it, or "
            "drop what it names");
  o.use_v2_model_runner = false;  // the V1 runner takes them all
  EXPECT_EQ(Errors(o), "");
  // Qwen3.5's hybrid class lacks the HasInnerState interface; DFlash drafts in parallel.
  o = Model(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/qwen3.5-35b-a3b.json");
  o.use_v2_model_runner = true;
  o.kv_cache_memory = "8GiB";
  EXPECT_EQ(AcceptedTokens(o), 412980);
  o = Model("glm-5.3-flash");
  o.tensor_parallel_size = 2;
  o.use_v2_model_runner = true;
  o.speculative_config =
      R"({"method": "dflash", "model": "glm-5.3-flash-dflash2", "num_speculative_tokens": 4})";
  o.prefill_context_parallel_size = 2;
  o.compilation_config = R"({"mode": 1, "pass_config": {"enable_sp": true, )"
                         R"("sp_min_token_num": 1024}})";
  // (PCP also meets the backends' own refusals.)
  EXPECT_EQ(DiagnosticMessage(*PlanOptions(o), "v2-model-runner"),
            "VLLM_USE_V2_MODEL_RUNNER=1 (--use-v2-model-runner) with "
            "'profiles/glm-5.3-flash.json' (Glm5NextForConditionalGeneration): the engine "
            "refuses it at startup ('VLLM_USE_V2_MODEL_RUNNER does not yet support: prefill "
            "context parallelism, stock torch.compile, sequence parallelism, speculative method "
            "'dflash', parallel drafting for speculative decoding'); unset it, or drop what it "
            "names");
  o.enforce_eager = true;  // compilation mode NONE
  o.prefill_context_parallel_size.reset();
  o.speculative_config = R"({"method": "ngram", "num_speculative_tokens": 4, )"
                         R"("prompt_lookup_max": 4})";
  EXPECT_EQ(DiagnosticMessage(*PlanOptions(o), "v2-model-runner"),
            "VLLM_USE_V2_MODEL_RUNNER=1 (--use-v2-model-runner) with 'profiles/glm-5.3-flash.json' "
            "(Glm5NextForConditionalGeneration): the engine refuses it at startup "
            "('VLLM_USE_V2_MODEL_RUNNER does not yet support: sequence parallelism, "
            "ngram/ngram_gpu speculative decoding'); unset it, or drop what it names");
  // Without sp_min_token_num the engine's threshold decides whether sequence parallelism stays.
  o.compilation_config = R"({"pass_config": {"enable_sp": true}})";
  o.speculative_config.reset();
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "v2-model-runner-sequence-parallelism"),
            "VLLM_USE_V2_MODEL_RUNNER=1 (--use-v2-model-runner) with sequence parallelism "
            "(--compilation-config pass_config.enable_sp or fuse_gemm_comms) at "
            "--tensor-parallel-size 2 without sp_min_token_num: the engine's threshold depends on "
            "the GPU, and where sequence parallelism stays on it refuses the V2 runner ('... does "
            "not yet support: sequence parallelism'); give --device-capability or "
            "pass_config.sp_min_token_num to have it checked");
  // No threshold on 12.0: sequence parallelism off, nothing for the V2 runner to refuse (its
  // attention backends' own refusal on that GPU aside).
  o.device_capability = "12.0";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(DiagnosticMessage(*plan, "v2-model-runner"), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "v2-model-runner-sequence-parallelism"), "");
}

// Micro-batching needs a DeepEP all-to-all backend; --logprobs-mode takes the engine's four
// modes.
// A variable a module of the engine reads as it is imported fails the start where the launch
// imports that module: every GPU worker's, the V1 model runner's (which the engine runs unless
// VLLM_USE_V2_MODEL_RUNNER=1, or for Qwen3ForCausalLM unset, a case kvtopo warns about), the model
// class's, or the MTP draft's.
TEST(StartupRefusals, VariablesModulesReadAsTheyAreImported) {
  LaunchOptions o = Model("gpt-oss-120b");
  o.vllm_environment = {"VLLM_MTP_PROB_DIAG_MAX_CALLS=1e3", "VLLM_USE_SGL_KERNEL_FAST_TOPK=yes"};
  EXPECT_EQ(Errors(o),
            "\n  error [environment-import] VLLM_MTP_PROB_DIAG_MAX_CALLS is '1e3', which the "
            "engine cannot read: vllm/v1/sample/rejection_sampler.py reads it as it is imported "
            "(\"invalid literal for int() with base 10: '1e3'\"), and the engine imports that "
            "module in the workers of its V1 model runner as they start, so it fails to start "
            "before the weights load; set an integer or unset it (the engine cannot read "
            "VLLM_USE_SGL_KERNEL_FAST_TOPK either)");
  o.use_v2_model_runner = true;  // neither module is imported
  EXPECT_EQ(Errors(o), "");
  o.vllm_environment = {"VLLM_USE_SGL_KERNEL_FAST_TOPK_TRANSFORM=on"};  // every worker's
  EXPECT_EQ(Errors(o),
            "\n  error [environment-import] VLLM_USE_SGL_KERNEL_FAST_TOPK_TRANSFORM is 'on', "
            "which the engine cannot read: vllm/v1/attention/backends/mla/indexer.py reads it as "
            "it is imported (\"invalid literal for int() with base 10: 'on'\"), and the engine "
            "imports that module in every GPU worker as it starts, so it fails to start before "
            "the weights load; set an integer or unset it");
  o.vllm_environment = {"VLLM_USE_SGL_KERNEL_FAST_TOPK_TRANSFORM=1"};
  EXPECT_EQ(Errors(o), "");

  // Qwen3-Next's class imports the FLA kernels, whatever the runner.
  o = Model("qwen3-next-80b");
  o.vllm_environment = {"GDN_RECOMPUTE_SUPPRESS_LEVEL=low", "FLA_TRIL_PRECISION=ieee"};
  EXPECT_EQ(Errors(o),
            "\n  error [environment-import] GDN_RECOMPUTE_SUPPRESS_LEVEL is 'low', which the "
            "engine cannot read: vllm/model_executor/layers/fla/ops/utils.py reads it as it is "
            "imported (\"invalid literal for int() with base 10: 'low'\"), and the engine imports "
            "that module with the model class of Qwen3NextForCausalLM, which it loads as it "
            "inspects the architecture (unless its model-info cache holds the class) and as its "
            "workers build the model, so it fails to start before the weights load; set an "
            "integer or unset it");
  o.vllm_environment = {"GDN_RECOMPUTE_SUPPRESS_LEVEL=2", "FLA_TRIL_PRECISION=ieee"};
  EXPECT_EQ(Errors(o), "");
  o = Model("gpt-oss-120b");
  o.vllm_environment = {"GDN_RECOMPUTE_SUPPRESS_LEVEL=low"};  // no FLA kernels
  EXPECT_EQ(Errors(o), "");

  // Pangu Ultra MoE's class does not import DeepSeek's sparse indexer; its MTP draft's does.
  o = Model(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/pangu-ultra-moe-718b.json");
  o.tensor_parallel_size = 16;
  o.use_v2_model_runner = true;
  o.vllm_environment = {"VLLM_NSA_INDEXER_DEBUG_MAX=x"};
  EXPECT_EQ(Errors(o), "");
  o.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 1})";
  EXPECT_EQ(DiagnosticMessage(*PlanOptions(o), "environment-import"),
            "VLLM_NSA_INDEXER_DEBUG_MAX is 'x', which the engine cannot read: "
            "vllm/model_executor/layers/sparse_attn_indexer.py reads it as it is imported "
            "(\"invalid literal for int() with base 10: 'x'\"), and the engine imports that "
            "module with the MTP draft's model class (model type pangu_ultra_moe_mtp), which it "
            "loads as it inspects the draft's architecture (unless its model-info cache holds "
            "the class) and as its workers build the draft, so it fails to start before the "
            "weights load; set an integer or unset it");

  // Kimi-K2.6's class builds DeepSeek's as its language model, whose module imports the sparse
  // indexer: on the V2 runner too, as the workers build the model.
  o = Model("kimi-k2.6");
  o.tensor_parallel_size = 8;
  o.use_v2_model_runner = true;
  o.vllm_environment = {"VLLM_USE_SGL_KERNEL_FAST_TOPK=abc", "VLLM_NSA_INDEXER_DEBUG_MAX=x",
                        "BOB_PROFILE_PREFILL_INTERVAL=x"};
  EXPECT_EQ(Errors(o),
            "\n  error [environment-import] VLLM_USE_SGL_KERNEL_FAST_TOPK is 'abc', which the "
            "engine cannot read: vllm/model_executor/layers/sparse_attn_indexer.py reads it as it "
            "is imported (\"invalid literal for int() with base 10: 'abc'\"), and the engine "
            "imports that module with the model class of DeepseekV2ForCausalLM, the language "
            "model KimiK25ForConditionalGeneration builds, as its workers build the model, so it "
            "fails to start before the weights load; set an integer or unset it (the engine "
            "cannot read VLLM_NSA_INDEXER_DEBUG_MAX either)");
  // On the V1 runner its workers import the module as they start, before they build the model.
  o.use_v2_model_runner.reset();
  o.vllm_environment = {"VLLM_USE_SGL_KERNEL_FAST_TOPK=abc"};
  EXPECT_EQ(Errors(o),
            "\n  error [environment-import] VLLM_USE_SGL_KERNEL_FAST_TOPK is 'abc', which the "
            "engine cannot read: vllm/model_executor/layers/sparse_attn_indexer.py reads it as it "
            "is imported (\"invalid literal for int() with base 10: 'abc'\"), and the engine "
            "imports that module in the workers of its V1 model runner as they start, so it fails "
            "to start before the weights load; set an integer or unset it");
  o.use_v2_model_runner = true;
  // Its EAGLE-3 draft's class imports it too, as the engine inspects the draft.
  o.vllm_environment = {"VLLM_NSA_INDEXER_DEBUG_MAX=x"};
  o.speculative_config =
      R"({"method": "eagle3", "model": "kimi-k2.6-eagle3-mla", "num_speculative_tokens": 3})";
  EXPECT_EQ(Errors(o),
            "\n  error [environment-import] VLLM_NSA_INDEXER_DEBUG_MAX is 'x', which the engine "
            "cannot read: vllm/model_executor/layers/sparse_attn_indexer.py reads it as it is "
            "imported (\"invalid literal for int() with base 10: 'x'\"), and the engine imports "
            "that module with the model class of DeepseekV2ForCausalLM, the language model "
            "KimiK25ForConditionalGeneration builds, as its workers build the model, so it fails "
            "to start before the weights load; set an integer or unset it");

  // A separate draft's class, on its own: the engine inspects it and the workers build it.
  o = Model("gpt-oss-120b");
  o.use_v2_model_runner = true;
  o.vllm_environment = {"VLLM_NSA_INDEXER_DEBUG_MAX=x"};
  o.speculative_config =
      R"({"method": "eagle3", "model": "kimi-k2.6-eagle3-mla", "num_speculative_tokens": 3})";
  EXPECT_EQ(DiagnosticMessage(*PlanOptions(o), "environment-import"),
            "VLLM_NSA_INDEXER_DEBUG_MAX is 'x', which the engine cannot read: "
            "vllm/model_executor/layers/sparse_attn_indexer.py reads it as it is imported "
            "(\"invalid literal for int() with base 10: 'x'\"), and the engine imports that "
            "module with the draft's model class Eagle3DeepseekV2ForCausalLM (draft "
            "'kimi-k2.6-eagle3-mla'), which it loads as it inspects the draft's architecture "
            "(unless its model-info cache holds the class) and as its workers build the draft, so "
            "it fails to start before the weights load; set an integer or unset it");

  // DeepSeek-OCR builds the class its language_config names, else DeepSeek-V2's.
  nlohmann::json ocr = nlohmann::json::parse(std::ifstream(
      std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/deepseek-ocr-shaped.json"));
  LaunchConfig v2;
  v2.use_v2_model_runner = true;
  v2.environment = {"VLLM_USE_SGL_KERNEL_FAST_TOPK_V2=on"};
  const std::string ocr_refusal =
      "\n  error [environment-import] VLLM_USE_SGL_KERNEL_FAST_TOPK_V2 is 'on', which the engine "
      "cannot read: vllm/model_executor/layers/sparse_attn_indexer.py reads it as it is imported "
      "(\"invalid literal for int() with base 10: 'on'\"), and the engine imports that module "
      "with the model class of {}, the language model DeepseekOCRForCausalLM builds, as its "
      "workers build the model, so it fails to start before the weights load; set an integer or "
      "unset it";
  ocr["language_config"]["architectures"] = {"DeepseekV3ForCausalLM"};
  EXPECT_EQ(ConfigErrors(ocr, v2), fmt::format(fmt::runtime(ocr_refusal), "DeepseekV3ForCausalLM"));
  ocr["language_config"].erase("architectures");
  EXPECT_EQ(ConfigErrors(ocr, v2), fmt::format(fmt::runtime(ocr_refusal), "DeepseekV2ForCausalLM"));
  v2.environment = {"VLLM_USE_SGL_KERNEL_FAST_TOPK_V2=1"};
  EXPECT_EQ(ConfigErrors(ocr, v2), "");
  // A wrapper that builds what its text config names: InternVL's chat model over Qwen3-Next.
  const nlohmann::json internvl = {{"architectures", {"InternVLChatModel"}},
                                   {"model_type", "internvl_chat"},
                                   {"torch_dtype", "bfloat16"},
                                   {"llm_config", CorpusConfig("qwen3-next-80b")},
                                   {"vision_config",
                                    {{"hidden_size", 1024},
                                     {"image_size", 448},
                                     {"patch_size", 14},
                                     {"num_hidden_layers", 2},
                                     {"num_attention_heads", 16}}},
                                   {"downsample_ratio", 0.5},
                                   {"force_image_size", 448}};
  LaunchConfig tp2;
  tp2.parallel.tensor_parallel_size = 2;
  tp2.environment = {"FLA_TRIL_PRECISION=x"};
  EXPECT_EQ(ConfigErrors(internvl, tp2),
            "\n  error [environment-import] FLA_TRIL_PRECISION is 'x', which the engine cannot "
            "read: vllm/model_executor/layers/fla/ops/solve_tril.py reads it as it is imported "
            "(\"FLA_TRIL_PRECISION must be one of ['ieee', 'tf32', 'tf32x3'], but got x\"), and "
            "the engine imports that module with the model class of Qwen3NextForCausalLM, the "
            "language model InternVLChatModel builds, as its workers build the model, so it fails "
            "to start before the weights load; set one of ieee, tf32, tf32x3 or unset it");

  // NvFP4 experts import the b12x kernels' module as they pick their kernels: with b12x named,
  // and with auto, which tries b12x first unless the FlashInfer variable or the Marlin test
  // variable restricts the choice.
  o = Model("glm-5.1");  // the fork's run-glm51-vllm launch
  o.quantization = "modelopt_fp4";
  o.moe_backend = "b12x";
  o.attention_backend = "B12X_MLA_SPARSE";
  o.device_capability = "12.0";
  o.tensor_parallel_size = 8;
  o.vllm_environment = {"VLLM_B12X_MOE_A16_MIN_LAYER=layer3", "VLLM_B12X_MOE_A16_MAX_LAYER=60"};
  const std::string b12x_refusal =
      "\n  error [environment-import] VLLM_B12X_MOE_A16_MIN_LAYER is 'layer3', which the engine "
      "cannot read: vllm/model_executor/layers/fused_moe/b12x_moe.py reads it as it is imported "
      "(\"invalid literal for int() with base 10: 'layer3'\"), and the engine imports that "
      "module as its workers build the model's NvFP4 MoE layers, whose choice of kernels imports "
      "the b12x kernels' module (--moe-backend b12x, or auto, which tries b12x first), so it "
      "fails to start before the weights load; set an integer or unset it";
  EXPECT_EQ(Errors(o), b12x_refusal);
  o.moe_backend = "auto";
  EXPECT_EQ(Errors(o), b12x_refusal);
  o.vllm_environment.push_back("VLLM_USE_FLASHINFER_MOE_FP4=0");  // FlashInfer's taken away
  EXPECT_EQ(Errors(o), b12x_refusal);
  o.vllm_environment.back() = "VLLM_USE_FLASHINFER_MOE_FP4=1";  // FlashInfer's kernels only
  EXPECT_EQ(Errors(o), "");
  o.vllm_environment.back() = "VLLM_TEST_FORCE_FP8_MARLIN=1";  // Marlin only
  EXPECT_EQ(Errors(o), "");
  o.vllm_environment.pop_back();
  o.moe_backend = "flashinfer_cutlass";
  EXPECT_EQ(Errors(o), "");
  o.moe_backend = "b12x";
  o.quantization.reset();  // the profile's weights are not known
  EXPECT_EQ(Errors(o), "");

  // Kimi-K3's KDA layers run the FLA kernels; GLM-5.3-Flash's sparse indexer layers import the
  // indexer's module, as the workers build them, on either runner.
  o = Model("kimi-k3");
  o.vllm_environment = {"FLA_TRIL_PRECISION=fp32"};
  EXPECT_EQ(DiagnosticMessage(*PlanOptions(o), "environment-import"),
            "FLA_TRIL_PRECISION is 'fp32', which the engine cannot "
            "read: vllm/model_executor/layers/fla/ops/solve_tril.py reads it as it is imported "
            "(\"FLA_TRIL_PRECISION must be one of ['ieee', 'tf32', 'tf32x3'], but got fp32\"), "
            "and the engine imports that module as its workers build the model's KDA layers, so "
            "it fails to start before the weights load; set one of ieee, tf32, tf32x3 or unset "
            "it");
  o = Model("glm-5.3-flash");
  o.use_v2_model_runner = true;
  o.vllm_environment = {"VLLM_B12X_NSA_EXTEND_TOPK_SUPERTILE_K=4k"};
  EXPECT_EQ(Errors(o),
            "\n  error [environment-import] VLLM_B12X_NSA_EXTEND_TOPK_SUPERTILE_K is '4k', which "
            "the engine cannot read: vllm/model_executor/layers/sparse_attn_indexer.py reads it "
            "as it is imported (\"invalid literal for int() with base 10: '4k'\"), and the engine "
            "imports that module as its workers build the model's sparse-attention indexer "
            "layers, so it fails to start before the weights load; set an integer or unset it");

  // Qwen3ForCausalLM, with the runner variable unset, may run on the V2 runner: a warning.
  const nlohmann::json qwen3 = nlohmann::json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
    "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "max_position_embeddings": 40960, "torch_dtype": "bfloat16"})");
  LaunchConfig c;
  c.environment = {"BOB_PROFILE_PREFILL_INTERVAL=often"};
  Result<Plan> plan = testing_configs::PlanWith(qwen3, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  const std::string may_run_v2 = DiagnosticMessage(*plan, "environment-import");
  EXPECT_EQ(may_run_v2,
            "BOB_PROFILE_PREFILL_INTERVAL is 'often', which the engine cannot read: "
            "vllm/v1/worker/gpu_model_runner.py reads it as it is imported (\"invalid literal for "
            "int() with base 10: 'often'\"), and the engine imports that module in the workers "
            "of its V1 model runner as they start; with VLLM_USE_V2_MODEL_RUNNER unset the engine "
            "runs Qwen3ForCausalLM on its V2 runner unless a logits-processor plugin installed "
            "where it runs keeps the V1 runner, on which it fails to start before the weights "
            "load; set an integer or unset it");
  const std::string v1_refusal =
      "\n  error [environment-import] BOB_PROFILE_PREFILL_INTERVAL is 'often', which the engine "
      "cannot read: vllm/v1/worker/gpu_model_runner.py reads it as it is imported (\"invalid "
      "literal for int() with base 10: 'often'\"), and the engine imports that module in the "
      "workers of its V1 model runner as they start, so it fails to start before the weights "
      "load; set an integer or unset it";
  c.use_v2_model_runner = false;
  EXPECT_EQ(ConfigErrors(qwen3, c), v1_refusal);
  // Unset, the engine keeps the V1 runner for a checkpoint with a quantization_config
  // (ModelConfig.is_quantized) and for a draft method the V2 runner does not run.
  c.use_v2_model_runner.reset();
  nlohmann::json fp8 = qwen3;
  fp8["quantization_config"] = {{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}};
  EXPECT_EQ(ConfigErrors(fp8, c), v1_refusal);
  fp8["quantization_config"] = nullptr;  // getattr(...) is None: not quantized
  plan = testing_configs::PlanWith(fp8, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "environment-import"), may_run_v2);
  LaunchOptions ngram = Model("qwen3-next-80b");  // the launch's features, read as the CLI does
  ngram.speculative_config = R"({"method": "ngram", "num_speculative_tokens": 3})";
  Result<LaunchConfig> with_ngram = ToLaunchConfig(ngram);
  ASSERT_TRUE(with_ngram.ok()) << with_ngram.status().ToString();
  with_ngram->environment = c.environment;
  EXPECT_EQ(ConfigErrors(qwen3, *with_ngram), v1_refusal);
}

TEST(StartupRefusals, MicroBatchingAndFastPrefill) {
  LaunchOptions o = Model("kimi-k2.6");
  o.tensor_parallel_size = 8;
  o.enable_dbo = true;
  EXPECT_EQ(PlanOptions(o).status().message(),
            "--enable-dbo with --all2all-backend allgather_reducescatter: the engine asserts at "
            "startup ('Microbatching currently only supports the deepep_low_latency and "
            "deepep_high_throughput all2all backend. allgather_reducescatter is not "
            "supported.'); pass --all2all-backend deepep_low_latency or deepep_high_throughput");
  o.enable_dbo.reset();
  o.ubatch_size = 2;
  o.all2all_backend = "nixl_ep";
  EXPECT_EQ(PlanOptions(o).status().message(),
            "--ubatch-size 2 with --all2all-backend nixl_ep: the engine asserts at startup "
            "('Microbatching currently only supports the deepep_low_latency and "
            "deepep_high_throughput all2all backend. nixl_ep is not supported.'); pass "
            "--all2all-backend deepep_low_latency or deepep_high_throughput");
  o.all2all_backend = "deepep_high_throughput";
  o.enable_dbo = true;
  EXPECT_EQ(AcceptedTokens(o), 488704);
  o = Model("kimi-k2.6");
  o.tensor_parallel_size = 8;
  o.logprobs_mode = "logits";
  EXPECT_EQ(PlanOptions(o).status().message(),
            "--logprobs-mode 'logits' is not a logprobs mode; accepted: raw_logits, raw_logprobs, "
            "processed_logits, processed_logprobs");
}

// --fully-sharded-loras splits each wrapped layer's LoRA weights over its TP ranks, and the
// engine's LoRA layers assert the division once the weights are loaded.
TEST(StartupRefusals, FullyShardedLorasDivide) {
  LaunchOptions o = Model("gpt-oss-120b");
  o.tensor_parallel_size = 2;
  o.enable_lora = true;
  o.not_planned_values = {VllmFlagValue{"--fully-sharded-loras", true, {}}};
  EXPECT_EQ(AcceptedTokens(o), 1655386);
  const std::string what = "'profiles/gpt-oss-120b.json' (GptOssForCausalLM)";
  o.max_lora_rank = 1;
  EXPECT_EQ(Errors(o),
            "\n  error [lora-sharding] --fully-sharded-loras with " + what +
                ": its column-parallel LoRA layers split the rank (1, --max-lora-rank) over 2 "
                "ranks, and the engine asserts as it builds them once the weights are loaded ('1 "
                "is not divisible by 2'); pick a --max-lora-rank 2 divides, or drop "
                "--fully-sharded-loras");
  o.max_lora_rank.reset();
  o.data_parallel_size = 3;  // the experts' TP spans DP x PCP x TP without expert parallelism
  EXPECT_EQ(Errors(o),
            "\n  error [lora-sharding] --fully-sharded-loras with " + what +
                ": its experts' LoRA layers (TP over DP 3 x PCP 1 x TP 2) split the rank (16, "
                "--max-lora-rank) over 6 ranks, and the engine asserts as it builds them once the "
                "weights are loaded ('16 is not divisible by 6'); pick a --max-lora-rank 6 "
                "divides, or drop --fully-sharded-loras");
  o.data_parallel_size = 16;
  o.tensor_parallel_size = 8;
  o.max_lora_rank = 256;
  EXPECT_EQ(Errors(o),
            "\n  error [lora-sharding] --fully-sharded-loras with " + what +
                ": its experts' LoRA layers (TP over DP 16 x PCP 1 x TP 8) split the hidden size "
                "(2880) over 128 ranks, and the engine asserts as it builds them once the weights "
                "are loaded ('2880 is not divisible by 128'); drop --fully-sharded-loras");
  o.data_parallel_size.reset();
  o.tensor_parallel_size = 2;
  o.enable_expert_parallel = true;
  EXPECT_EQ(Errors(o),
            "\n  error [lora-sharding] --fully-sharded-loras with " + what +
                ", whose experts run under expert parallelism over 2 ranks: the engine's LoRA "
                "layer for them asserts once the weights are loaded ('Fused MoE LoRA does not "
                "support enable_expert_parallel=True together with fully_sharded_loras=True. "
                "Disable one of them.'); drop one of them");
  o.not_planned_values = {VllmFlagValue{"--fully-sharded-loras", false, {}}};  // --no-
  EXPECT_EQ(AcceptedTokens(o), 1655386);
  // Row-parallel layers split their output, the hidden size, over the TP ranks.
  nlohmann::json llama = testing_configs::Llama31_8B();
  llama["hidden_size"] = 4098;
  llama["head_dim"] = 128;
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 4;
  c.enable_lora = true;
  c.not_planned_values = {VllmFlagValue{"--fully-sharded-loras", true, {}}};
  EXPECT_EQ(ConfigErrors(llama, c),
            "\n  error [lora-sharding] --fully-sharded-loras with 'config.json' "
            "(LlamaForCausalLM): its row-parallel LoRA layers split their output (the hidden "
            "size, 4098) over 4 ranks, and the engine asserts as it builds them once the weights "
            "are loaded ('4098 is not divisible by 4'); drop --fully-sharded-loras");
  // --lora-target-modules wraps some layers only: not checked.
  c.not_planned_values.push_back(
      VllmFlagValue{"--lora-target-modules", std::nullopt, {"qkv_proj"}});
  EXPECT_EQ(ConfigErrors(llama, c), "");
}

// MoE classes whose experts the LoRA manager cannot map fail as it is built.
TEST(StartupRefusals, LoraNeedsAnExpertMapping) {
  const std::string granite =
      std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/granite-3.1-3b-a800m.json";
  LaunchOptions o = Model(granite);
  EXPECT_EQ(Errors(o), "");
  o.enable_lora = true;
  EXPECT_EQ(Errors(o),
            "\n  error [lora-model] --enable-lora with '" + granite +
                "' (GraniteMoeForCausalLM), whose 40 experts the engine's LoRA manager cannot map "
                "(neither its class nor a direct child has get_expert_mapping): the engine fails "
                "once the weights are loaded (\"To support LoRA for MoE model, "
                "'get_expert_mapping' must be implemented\"); drop --enable-lora");
  // A wrapper's language model is a direct child: its own class must have the method.
  nlohmann::json internvl = nlohmann::json::parse(R"({
    "architectures": ["InternVLChatModel"], "model_type": "internvl_chat",
    "torch_dtype": "bfloat16", "vision_config": {"architectures": ["InternVisionModel"]},
    "llm_config": {"architectures": ["GraniteMoeForCausalLM"], "model_type": "granitemoe",
                   "hidden_size": 1536, "num_hidden_layers": 32, "num_attention_heads": 24,
                   "num_key_value_heads": 8, "max_position_embeddings": 4096,
                   "num_local_experts": 40, "num_experts_per_tok": 8}})");
  LaunchConfig c;
  c.enable_lora = true;
  EXPECT_EQ(ConfigErrors(internvl, c),
            "\n  error [lora-model] --enable-lora with 'config.json' (InternVLChatModel), whose "
            "language model GraniteMoeForCausalLM (40 experts) has no get_expert_mapping of its "
            "own, and the engine's LoRA manager looks for it on the model and its direct "
            "children only: the engine fails once the weights are loaded (\"To support LoRA for "
            "MoE model, 'get_expert_mapping' must be implemented\"); drop --enable-lora");
  internvl["llm_config"]["architectures"] = {"Qwen3MoeForCausalLM"};  // the method on its class
  internvl["llm_config"]["model_type"] = "qwen3_moe";
  internvl["llm_config"]["head_dim"] = 128;
  EXPECT_EQ(ConfigErrors(internvl, c), "");
  // Gemma 4 builds experts only with its MoE block, which the dense 31B has off.
  o = Model(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/gemma-4-31b.json");
  o.max_model_len = 8192;
  o.enable_lora = true;
  EXPECT_EQ(Errors(o), "");
  // A stated expert count without the block builds no experts either; with the block on (either
  // of its two keys, true as Python reads it) the experts are built and cannot be mapped.
  nlohmann::json gemma = nlohmann::json::parse(
      std::ifstream(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/gemma-4-31b.json"));
  gemma["text_config"]["num_experts"] = 128;
  gemma["text_config"]["top_k_experts"] = 8;
  gemma["text_config"]["moe_intermediate_size"] = 704;
  c.cache.max_model_len = 8192;
  EXPECT_EQ(ConfigErrors(gemma, c), "");
  gemma["text_config"]["enable_moe_block"] = false;
  gemma["text_config"]["use_second_mlp_block"] = 0;
  EXPECT_EQ(ConfigErrors(gemma, c), "");
  const std::string unmapped =
      "\n  error [lora-model] --enable-lora with 'config.json' (Gemma4ForConditionalGeneration), "
      "whose 128 experts the engine's LoRA manager cannot map (neither its class nor a direct "
      "child has get_expert_mapping): the engine fails once the weights are loaded (\"To support "
      "LoRA for MoE model, 'get_expert_mapping' must be implemented\"); drop --enable-lora";
  gemma["text_config"]["use_second_mlp_block"] = 1;
  EXPECT_EQ(ConfigErrors(gemma, c), unmapped);
  gemma["text_config"].erase("use_second_mlp_block");
  gemma["text_config"]["enable_moe_block"] = true;
  EXPECT_EQ(ConfigErrors(gemma, c), unmapped);
  // NemotronH builds experts in its E layers only; the engine's expert count (ModelConfig.is_moe)
  // is the stated one, so expert parallelism plans either way.
  nlohmann::json nemotron = nlohmann::json::parse(std::ifstream(
      std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/nemotron-nano-9b-v2.json"));
  nemotron["n_routed_experts"] = 8;
  nemotron["num_experts_per_tok"] = 2;
  internvl["llm_config"] = nemotron;
  EXPECT_EQ(ConfigErrors(internvl, c), "");
  LaunchConfig ep;
  ep.enable_expert_parallel = true;
  ep.parallel.tensor_parallel_size = 2;
  EXPECT_EQ(ConfigErrors(nemotron, ep), "");
  std::string pattern = nemotron["hybrid_override_pattern"];
  pattern[1] = 'E';
  internvl["llm_config"]["hybrid_override_pattern"] = pattern;
  EXPECT_EQ(ConfigErrors(internvl, c),
            "\n  error [lora-model] --enable-lora with 'config.json' (InternVLChatModel), whose "
            "language model NemotronHForCausalLM (8 experts) has no get_expert_mapping of its "
            "own, and the engine's LoRA manager looks for it on the model and its direct "
            "children only: the engine fails once the weights are loaded (\"To support LoRA for "
            "MoE model, 'get_expert_mapping' must be implemented\"); drop --enable-lora");
}

// The output head's LoRA layer takes a vocabulary of 258,048 tokens at most, where the LoRA
// manager wraps lm_head: the class (or a wrapper's language model) lists it among its embedding
// modules, and --lora-target-modules, when given, names it.
TEST(StartupRefusals, LoraVocabularyLimit) {
  nlohmann::json llama = nlohmann::json::parse(
      std::ifstream(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/llama-3.1-8b.json"));
  llama["vocab_size"] = 258048;
  LaunchConfig c;
  c.enable_lora = true;
  EXPECT_EQ(ConfigErrors(llama, c), "");
  llama["vocab_size"] = 258049;
  const std::string refused =
      "\n  error [lora-model] --enable-lora with 'config.json' (LlamaForCausalLM), whose "
      "vocabulary (258049 tokens) is above the 258048 the engine's LoRA logits processor takes: "
      "the LoRA manager wraps its output head (lm_head) and fails once the weights are loaded "
      "('When using LoRA, vocab size must be <= 258048'); leave lm_head out of "
      "--lora-target-modules, or drop --enable-lora";
  EXPECT_EQ(ConfigErrors(llama, c), refused);
  LaunchConfig no_lora;
  EXPECT_EQ(ConfigErrors(llama, no_lora), "");
  // Target modules that leave lm_head out; naming it by suffix or whole.
  c.not_planned_values.push_back(
      VllmFlagValue{"--lora-target-modules", std::nullopt, {"q_proj", "o_proj"}});
  EXPECT_EQ(ConfigErrors(llama, c), "");
  c.not_planned_values.back().values = {"q_proj", "lm_head"};
  EXPECT_EQ(ConfigErrors(llama, c), refused);
  c.not_planned_values.clear();
  // Mistral's class empties the list: its output head is not wrapped.
  llama["architectures"] = {"MistralForCausalLM"};
  llama["model_type"] = "mistral";
  EXPECT_EQ(ConfigErrors(llama, c), "");
  // A wrapper's language model: its module sits under the wrapper's language_model.
  nlohmann::json internvl = nlohmann::json::parse(R"({
    "architectures": ["InternVLChatModel"], "model_type": "internvl_chat",
    "torch_dtype": "bfloat16", "vision_config": {"architectures": ["InternVisionModel"]},
    "llm_config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                   "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
                   "num_key_value_heads": 8, "max_position_embeddings": 4096,
                   "vocab_size": 262144}})");
  const std::string wrapped =
      "\n  error [lora-model] --enable-lora with 'config.json' (InternVLChatModel), whose "
      "vocabulary (262144 tokens) is above the 258048 the engine's LoRA logits processor "
      "takes: the LoRA manager wraps its output head (language_model.lm_head) and fails "
      "once the weights are loaded ('When using LoRA, vocab size must be <= 258048'); "
      "leave lm_head out of --lora-target-modules, or drop --enable-lora";
  EXPECT_EQ(ConfigErrors(internvl, c), wrapped);
  c.not_planned_values.push_back(
      VllmFlagValue{"--lora-target-modules", std::nullopt, {"language_model.lm_head"}});
  EXPECT_EQ(ConfigErrors(internvl, c), wrapped);
  c.not_planned_values.back().values = {"model.lm_head"};
  EXPECT_EQ(ConfigErrors(internvl, c), "");
  c.not_planned_values.clear();
  // Qwen2's class lists no output head: the same vocabulary plans.
  internvl["llm_config"] = {{"architectures", {"Qwen2ForCausalLM"}},
                            {"model_type", "qwen2"},
                            {"hidden_size", 2048},
                            {"num_hidden_layers", 16},
                            {"num_attention_heads", 16},
                            {"num_key_value_heads", 8},
                            {"max_position_embeddings", 4096},
                            {"vocab_size", 262144}};
  EXPECT_EQ(ConfigErrors(internvl, c), "");
  // LLaVA builds the registered class its text config names, else its model type's causal-LM
  // class: Llama's lists the head, Mistral's does not; an empty list the registry refuses.
  nlohmann::json llava = CorpusConfig("llava-1.5-7b");
  llava["text_config"]["vocab_size"] = 262144;
  const std::string llava_refused =
      "\n  error [lora-model] --enable-lora with 'config.json' (LlavaForConditionalGeneration), "
      "whose vocabulary (262144 tokens) is above the 258048 the engine's LoRA logits processor "
      "takes: the LoRA manager wraps its output head (language_model.lm_head) and fails once the "
      "weights are loaded ('When using LoRA, vocab size must be <= 258048'); leave lm_head out of "
      "--lora-target-modules, or drop --enable-lora";
  EXPECT_EQ(ConfigErrors(llava, c), llava_refused);
  llava["text_config"].erase("architectures");
  EXPECT_EQ(ConfigErrors(llava, c), llava_refused);
  llava["text_config"].erase("model_type");  // LlavaConfig's default text model type: llama
  EXPECT_EQ(ConfigErrors(llava, c), llava_refused);
  llava["text_config"]["model_type"] = "mistral";
  EXPECT_EQ(ConfigErrors(llava, c), "");
  llava["text_config"]["architectures"] = {"LlamaForCausalLM"};  // the named class, not the type's
  EXPECT_EQ(ConfigErrors(llava, c), llava_refused);
  llava["text_config"]["architectures"] = nlohmann::json::array();
  Result<Plan> unnamed = testing_configs::PlanWith(llava, c);
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.status().message(),
            "config.json 'config.json': field 'text_config.architectures' is empty: the engine's "
            "registry finds no class to build ('No model architectures are specified')");
  // Wrappers that build a fixed class listing the head through the registry: Isaac's Qwen3.
  nlohmann::json isaac = nlohmann::json::parse(R"({"architectures":
    ["IsaacForConditionalGeneration"], "model_type": "isaac", "hidden_size": 2048,
    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
    "head_dim": 128, "max_position_embeddings": 40960, "vocab_size": 262144,
    "torch_dtype": "bfloat16"})");
  const std::string isaac_refused =
      "\n  error [lora-model] --enable-lora with 'config.json' (IsaacForConditionalGeneration), "
      "whose vocabulary (262144 tokens) is above the 258048 the engine's LoRA logits processor "
      "takes: the LoRA manager wraps its output head (language_model.lm_head) and fails once the "
      "weights are loaded ('When using LoRA, vocab size must be <= 258048'); leave lm_head out of "
      "--lora-target-modules, or drop --enable-lora";
  EXPECT_EQ(ConfigErrors(isaac, c), isaac_refused);
  // The wrappers whose fixed language model class lists the head keep it as language_model.
  for (const char* wrapper :
       {"Exaone4_5_ForConditionalGeneration", "GlmAsrForConditionalGeneration",
        "Granite4VisionForConditionalGeneration", "InternS1ProForConditionalGeneration",
        "IsaacForConditionalGeneration", "KeyeForConditionalGeneration",
        "KeyeVL1_5ForConditionalGeneration", "Qwen3ASRForConditionalGeneration",
        "Qwen3ASRRealtimeGeneration", "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration"}) {
    EXPECT_TRUE(internal::LoraWrapsLmHead(wrapper)) << wrapper;
    EXPECT_TRUE(internal::IsMultimodalTarget(wrapper)) << wrapper;
  }
  // Their language model's head in --lora-target-modules by its whole name.
  c.not_planned_values.push_back(
      VllmFlagValue{"--lora-target-modules", std::nullopt, {"language_model.lm_head"}});
  EXPECT_EQ(ConfigErrors(isaac, c), isaac_refused);
  c.not_planned_values.back().values = {"lm_head.language_model"};
  EXPECT_EQ(ConfigErrors(isaac, c), "");
  c.not_planned_values.clear();
  // GritLM generates only under --runner generate, as the Llama class it extends.
  nlohmann::json grit = nlohmann::json::parse(R"({
    "architectures": ["GritLM"], "model_type": "mistral", "torch_dtype": "bfloat16",
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "max_position_embeddings": 32768, "vocab_size": 262144})");
  c.runner = "generate";
  EXPECT_EQ(ConfigErrors(grit, c),
            "\n  error [lora-model] --enable-lora with 'config.json' (GritLM), whose vocabulary "
            "(262144 tokens) is above the 258048 the engine's LoRA logits processor takes: the "
            "LoRA manager wraps its output head (lm_head) and fails once the weights are loaded "
            "('When using LoRA, vocab size must be <= 258048'); leave lm_head out of "
            "--lora-target-modules, or drop --enable-lora");
}

// Serving flags the engine checks before it loads the weights, though the cache is the same.
TEST(StartupRefusals, ServingFlags) {
  auto refusal = [](LaunchOptions o) { return std::string(PlanOptions(o).status().message()); };
  LaunchOptions o = Model("kimi-k2.6");
  o.gpu_memory_utilization = "95";
  EXPECT_EQ(refusal(o),
            "--gpu-memory-utilization 95: the engine refuses a share outside (0, 1] as it builds "
            "its cache config ('Input should be less than or equal to 1'); give a fraction such "
            "as 0.9");
  o.gpu_memory_utilization = "ninety";
  EXPECT_EQ(refusal(o),
            "--gpu-memory-utilization 'ninety' is not a number (the engine's parser refuses it)");
  o.gpu_memory_utilization = "0x1p-1";  // strtod's hexadecimal form, which float() refuses
  EXPECT_EQ(refusal(o),
            "--gpu-memory-utilization '0x1p-1' is not a number (the engine's parser refuses it)");
  o.gpu_memory_utilization = "nan";  // pydantic checks the upper bound first; NaN fails it
  EXPECT_EQ(refusal(o),
            "--gpu-memory-utilization nan: the engine refuses a share outside (0, 1] as it builds "
            "its cache config ('Input should be less than or equal to 1'); give a fraction such "
            "as 0.9");
  o.gpu_memory_utilization = "-inf";
  EXPECT_EQ(refusal(o),
            "--gpu-memory-utilization -inf: the engine refuses a share outside (0, 1] as it builds "
            "its cache config ('Input should be greater than 0'); give a fraction such as 0.9");
  for (const char* share : {" 0.9 ", "+0.9", "0.9_0"}) {  // as float() reads them
    o.gpu_memory_utilization = share;
    EXPECT_EQ(AcceptedTokens(o), 488704) << share;
  }
  o = Model("gpt-oss-120b");
  o.max_lora_rank = 24;
  EXPECT_EQ(refusal(o),
            "--max-lora-rank 24 is not one of the engine's ranks: 1, 8, 16, 32, 64, 128, 256, "
            "320, 512 (its parser refuses it)");
  o.max_lora_rank = 320;
  o.max_loras = 4;
  o.max_cpu_loras = 2;
  EXPECT_EQ(AcceptedTokens(o), 827693);  // without --enable-lora the limits are not read
  o.enable_lora = true;
  EXPECT_EQ(refusal(o),
            "--max-cpu-loras 2 below --max-loras 4: the engine refuses it ('max_cpu_loras (2) "
            "must be >= max_loras (4).'); raise --max-cpu-loras or drop it");
  o.max_cpu_loras = 0;  // unset, as the engine reads 0
  EXPECT_EQ(AcceptedTokens(o), 827693);
  o.lora_dtype = "bf16";
  EXPECT_EQ(refusal(o),
            "--lora-dtype 'bf16' with --enable-lora: the engine refuses it as it builds its LoRA "
            "config (\"Input should be 'auto', 'float16' or 'bfloat16'\"); give one of those");
  o.lora_dtype = "bfloat16";
  EXPECT_EQ(AcceptedTokens(o), 827693);
  o.max_loras = 0;
  EXPECT_EQ(refusal(o),
            "--max-loras 0 with --enable-lora: the engine refuses it as it builds its LoRA config "
            "('Input should be greater than or equal to 1'); give 1 or more");
  // A class without the SupportsLoRA interface fails once the weights are loaded.
  o = Model("kimi-k2.6");
  o.enable_lora = true;
  EXPECT_EQ(Errors(o),
            "\n  error [lora-model] --enable-lora with 'profiles/kimi-k2.6.json' "
            "(KimiK25ForConditionalGeneration), whose engine class KimiK25ForConditionalGeneration "
            "lacks the SupportsLoRA interface: the engine fails once the weights are loaded "
            "('KimiK25ForConditionalGeneration does not support LoRA yet.'); drop --enable-lora");
  o = Model(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/falcon-mamba-7b.json");
  o.enable_lora = true;
  EXPECT_EQ(DiagnosticMessage(*PlanOptions(o), "lora-model"),
            "--enable-lora with '" + std::string(KVTOPO_SOURCE_DIR) +
                "/fuzz/corpus/config_plan/falcon-mamba-7b.json' (FalconMambaForCausalLM), whose "
                "engine class MambaForCausalLM lacks the SupportsLoRA interface: the engine fails "
                "once the weights are loaded ('MambaForCausalLM does not support LoRA yet.'); drop "
                "--enable-lora");
  // Modality adapters need a multimodal target, with or without --enable-lora.
  o = Model("gpt-oss-120b");
  o.default_mm_loras = R"({"image": "/loras/image"})";
  EXPECT_EQ(Errors(o),
            "\n  error [lora-model] --default-mm-loras with 'profiles/gpt-oss-120b.json' "
            "(GptOssForCausalLM), which takes no multimodal inputs: the engine refuses it "
            "('Default modality-specific LoRA(s) were provided for a non multimodal model'); drop "
            "--default-mm-loras");
  o.default_mm_loras = "{}";  // empty: unset
  EXPECT_EQ(AcceptedTokens(o), 827693);
  o = Model(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/qwen2.5-vl-7b.json");
  o.kv_cache_memory = "8G";
  o.default_mm_loras = R"({"image": "/loras/image"})";
  EXPECT_EQ(Errors(o), "");
  // Experts wrapped for LoRA under expert parallelism take the default all-to-all backend only.
  o = Model("gpt-oss-120b");
  o.enable_lora = true;
  o.tensor_parallel_size = 2;
  o.enable_expert_parallel = true;
  EXPECT_EQ(Errors(o), "");
  o.all2all_backend = "deepep_high_throughput";
  EXPECT_EQ(Errors(o),
            "\n  error [lora-model] --enable-lora with 'profiles/gpt-oss-120b.json' "
            "(GptOssForCausalLM), whose experts run under expert parallelism with "
            "--all2all-backend deepep_high_throughput: the engine's LoRA layer for them asserts "
            "once the weights are loaded ('Fused MoE LoRA with EP currently only supports "
            "all2all_backend='allgather_reducescatter', got 'deepep_high_throughput'.'); use "
            "allgather_reducescatter or drop --enable-lora");
  o = Model("kimi-k2.6");
  o.enable_auto_tool_choice = true;
  EXPECT_EQ(refusal(o),
            "--enable-auto-tool-choice without --tool-call-parser: the engine refuses it before "
            "loading ('Error: --enable-auto-tool-choice requires --tool-call-parser'); name the "
            "model's parser");
  o.tool_call_parser = "kimi-k2";
  EXPECT_EQ(refusal(o),
            "--tool-call-parser 'kimi-k2' with --enable-auto-tool-choice is not a parser the "
            "engine registers: its API server refuses it before the engine starts ('invalid "
            "tool call parser: kimi-k2'); pick one of apertus, cohere_command3, cohere_command4, "
            "deepseek_v3, deepseek_v31, deepseek_v32, deepseek_v4, ernie45, functiongemma, "
            "gemma4, gigachat3, glm45, glm47, granite, granite-20b-fc, granite4, hermes, "
            "hunyuan_a13b, hy_v3, internlm, jamba, kimi_k2, lfm2, llama3_json, llama4_json, "
            "llama4_pythonic, longcat, mimo, minimax, minimax_m2, mistral, olmo3, openai, "
            "phi4_mini_json, poolside_v1, pythonic, qwen3_coder, qwen3_xml, seed_oss, step3, "
            "step3p5, xlam, or add yours with --tool-parser-plugin");
  o.tool_call_parser = "kimi_k2";
  o.reasoning_parser = "deepseek-r1";
  EXPECT_EQ(refusal(o),
            "--reasoning-parser 'deepseek-r1' is not a parser the engine registers: it raises as "
            "it builds its config (\"Reasoning parser 'deepseek-r1' not found.\"); pick one of "
            "cohere_command3, cohere_command4, deepseek_r1, deepseek_v3, deepseek_v4, ernie45, "
            "gemma4, glm45, granite, holo2, hunyuan_a13b, hy_v3, kimi_k2, mimo, minimax_m2, "
            "minimax_m2_append_think, mistral, nemotron_v3, olmo3, openai_gptoss, poolside_v1, "
            "qwen3, seed_oss, step3, step3p5, or add yours with --reasoning-parser-plugin");
  o.reasoning_parser_plugin = "my_parsers.py";  // a plugin may register it
  EXPECT_EQ(AcceptedTokens(o), 488704);
  o.reasoning_parser = "kimi_k2";
  o.enable_log_outputs = true;
  EXPECT_EQ(refusal(o),
            "--enable-log-outputs without --enable-log-requests: the engine refuses it before "
            "loading ('Error: --enable-log-outputs requires --enable-log-requests'); add "
            "--enable-log-requests");
  o.enable_log_requests = true;
  EXPECT_EQ(AcceptedTokens(o), 488704);
}

// Headless mode starts no API server and needs local engines (`vllm serve`'s headless path).
TEST(StartupRefusals, HeadlessServers) {
  LaunchOptions o = Model("gpt-oss-120b");
  o.headless = true;
  o.api_server_count = 2;
  EXPECT_EQ(Rejection(o),
            "--api-server-count 2 with --headless: the engine refuses it before it starts "
            "('--api-server-count=2 cannot be used with --headless (no API servers are started "
            "in headless mode).'); drop one of them");
  o.api_server_count = -1;  // headless, as 0
  EXPECT_EQ(AcceptedTokens(o), 827693);
  o.api_server_count = 0;
  EXPECT_EQ(AcceptedTokens(o), 827693);
  // Without --headless a count below 1 runs headless too.
  o.headless.reset();
  Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(OnlyLaunchDiagnostic(c, "api-server-count-headless"),
            "--api-server-count 0 without --headless: `vllm serve` starts no API server for a "
            "count below 1 and runs headless, its engines only; give 1 or more to serve "
            "requests, or --headless to say so");
  o.headless = true;
  o.data_parallel_size = 2;
  o.data_parallel_size_local = 0;
  EXPECT_EQ(Rejection(o),
            "--data-parallel-size-local 0 with --headless: the engine refuses it as it starts its "
            "engines ('data_parallel_size_local must be > 0 in headless mode'); give 1 or more");
}

// Elastic expert parallelism's rules (ParallelConfig.__post_init__), and a TurboQuant cache's
// skipped layers, which the engine sorts with int() as the key.
// --enable-eplb balances the engine's MixtureOfExperts models with MoE layers only: the class's,
// or a multimodal class's language model; elsewhere the profile run asserts at startup.
TEST(StartupRefusals, LoadBalancingNeedsTheEnginesMoeModel) {
  LaunchOptions o = Model("kimi-linear-48b");
  o.tensor_parallel_size = 2;
  o.enable_expert_parallel = true;
  EXPECT_EQ(AcceptedTokens(o), 4247956);
  o.enable_eplb = true;  // Kimi-Linear inherits the interface and never counts its MoE layers
  EXPECT_EQ(
      Errors(o),
      EplbNoModel(
          "'profiles/kimi-linear-48b.json' (KimiLinearForCausalLM), whose engine class (or the "
          "language model it wraps) is not the MixtureOfExperts model the engine balances"));
  // Kimi-K2.6's wrapper hands it its DeepSeek-V2 language model.
  o = Model("kimi-k2.6");
  o.tensor_parallel_size = 8;
  o.enable_expert_parallel = true;
  o.enable_eplb = true;
  EXPECT_EQ(AcceptedTokens(o), 488704);
  LaunchConfig c;
  c.enable_expert_parallel = true;
  c.enable_eplb = true;
  c.parallel.tensor_parallel_size = 2;
  // A wrapper whose language model its text config names: Qwen2-MoE's class has no interface,
  // Qwen3-MoE's has.
  nlohmann::json internvl = nlohmann::json::parse(R"({
    "architectures": ["InternVLChatModel"], "model_type": "internvl_chat",
    "torch_dtype": "bfloat16", "vision_config": {"architectures": ["InternVisionModel"]},
    "llm_config": {"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe",
                   "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16,
                   "num_key_value_heads": 16, "max_position_embeddings": 8192,
                   "vocab_size": 151936, "num_experts": 60, "num_experts_per_tok": 4,
                   "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632}})");
  EXPECT_EQ(
      ConfigErrors(internvl, c),
      EplbNoModel("'config.json' (InternVLChatModel), whose language model Qwen2MoeForCausalLM is "
                  "not the MixtureOfExperts model the engine balances"));
  // The V2 model runner steps EPLB only with a model registered.
  c.use_v2_model_runner = true;
  EXPECT_EQ(ConfigErrors(internvl, c), "");
  c.use_v2_model_runner.reset();
  internvl["llm_config"]["architectures"] = {"Qwen3MoeForCausalLM"};
  internvl["llm_config"]["model_type"] = "qwen3_moe";
  EXPECT_EQ(ConfigErrors(internvl, c), "");
  // Qwen3-Omni's thinker is not one, and its language model's __init__ skips Qwen3-MoE's, which
  // counts the MoE layers.
  nlohmann::json omni = CorpusConfig("qwen3-omni-30b-a3b");
  omni["thinker_config"]["text_config"].update(
      {{"num_experts", 128}, {"num_experts_per_tok", 8}, {"moe_intermediate_size", 768}});
  EXPECT_EQ(ConfigErrors(omni, c),
            EplbNoModel(
                "'config.json' (Qwen3OmniMoeForConditionalGeneration), whose engine class (or the "
                "language model it wraps) is not the MixtureOfExperts model the engine balances"));
  // NemotronH's stated experts build layers only in its E layers.
  nlohmann::json nemotron = CorpusConfig("nemotron-nano-9b-v2");
  nemotron["n_routed_experts"] = 8;
  nemotron["num_experts_per_tok"] = 2;
  EXPECT_EQ(ConfigErrors(nemotron, c),
            EplbNoModel("'config.json' (NemotronHForCausalLM), whose config states 8 experts but "
                        "builds no MoE layer"));
  std::string pattern = nemotron["hybrid_override_pattern"];
  pattern[1] = 'E';
  nemotron["hybrid_override_pattern"] = pattern;
  EXPECT_EQ(ConfigErrors(nemotron, c), "");
  // HunYuan's layers build experts only for num_experts above 1 (a list: its largest).
  nlohmann::json hunyuan = CorpusConfig("hunyuan-7b");
  hunyuan["num_experts"] = 1;
  const std::string dense = EplbNoModel(
      "'config.json' (HunYuanDenseV1ForCausalLM), whose config states 1 expert but builds no MoE "
      "layer");
  EXPECT_EQ(ConfigErrors(hunyuan, c), dense);
  hunyuan["num_experts"] = {1, true};
  EXPECT_EQ(ConfigErrors(hunyuan, c), dense);
  LaunchConfig b12x;  // no FusedMoE layer to refuse the kernels
  b12x.enable_expert_parallel = true;
  b12x.parallel.tensor_parallel_size = 2;
  b12x.moe_backend = "b12x";
  b12x.moe_backend_from = "--moe-backend";
  EXPECT_EQ(ConfigErrors(hunyuan, b12x), "");
  hunyuan["num_experts"] = {1, 2};  // builds experts, whose MoE block compares -tp with the list
  EXPECT_EQ(testing_configs::PlanWith(hunyuan, b12x).status().message(),
            "config.json 'config.json': field 'num_experts' is [1,2]: the engine's MoE block "
            "compares the tensor-parallel size with it ('>' between an int and a list) and "
            "raises TypeError as it builds the model");
  hunyuan["num_experts"] = 2;
  EXPECT_EQ(ConfigErrors(hunyuan, b12x),
            UnquantizedMoeBackend("b12x", "HunYuanDenseV1ForCausalLM"));
}

// InternVL-Chat over the language model `llm` (its llm_config names the class).
nlohmann::json InternVlChat(const nlohmann::json& llm) {
  return {{"architectures", {"InternVLChatModel"}},
          {"model_type", "internvl_chat"},
          {"torch_dtype", "bfloat16"},
          {"vision_config", {{"architectures", {"InternVisionModel"}}}},
          {"llm_config", llm}};
}

// MoE classes whose layers build experts only where keys other than the expert count choose
// (first_k_dense_replace, decoder_sparse_step, mlp_only_layers, moe_layers_enum, ...): those
// whose MixtureOfExperts setup looks for a MoE layer among the layers they build raise without
// one, for the whole model or one pipeline stage; the others build a model without experts.
TEST(StartupRefusals, MoeClassesWithoutExpertLayers) {
  LaunchConfig c;
  nlohmann::json qwen = CorpusConfig("qwen3-30b-a3b-fp8");  // 48 layers, 128 experts
  qwen["decoder_sparse_step"] = 49;
  const std::string none =
      "\n  error [expert-layers] 'config.json' (Qwen3MoeForCausalLM) states 128 experts, but its "
      "layers build them only as num_experts, decoder_sparse_step and mlp_only_layers choose, and "
      "none of its 48 layers does: the engine's Qwen3MoeForCausalLM raises as it builds the model "
      "('No Qwen3MoE layer found in the model.layers.'); give the config layers with experts";
  EXPECT_EQ(ConfigErrors(qwen, c), none);
  LaunchConfig backend;  // the Transformers backend builds Transformers' model, not this class
  backend.model_impl = "transformers";
  EXPECT_EQ(ConfigErrors(qwen, backend), "");
  qwen["decoder_sparse_step"] = 48;  // layer 47 only
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  qwen["mlp_only_layers"] = {47.0};  // Python's `in` finds 47 in [47.0]
  EXPECT_EQ(ConfigErrors(qwen, c), none);
  qwen["decoder_sparse_step"] = 0;
  qwen["mlp_only_layers"] = nlohmann::json::array();
  EXPECT_EQ(testing_configs::PlanWith(qwen, c).status().message(),
            "config.json 'config.json': field 'decoder_sparse_step' is 0: the engine's decoder "
            "layer for layer 0 divides by it and raises ZeroDivisionError as it builds the model");
  // A wrapper over a Qwen3-MoE language model raises in that model's __init__.
  nlohmann::json internvl = InternVlChat(CorpusConfig("qwen3-30b-a3b-fp8"));
  internvl["llm_config"]["decoder_sparse_step"] = 64;
  EXPECT_EQ(ConfigErrors(internvl, c),
            "\n  error [expert-layers] 'config.json' (InternVLChatModel, language model "
            "Qwen3MoeForCausalLM) states 128 experts, but its layers build them only as "
            "num_experts, decoder_sparse_step and mlp_only_layers choose, and none of its 48 "
            "layers does: the engine's Qwen3MoeForCausalLM raises as it builds the model ('No "
            "Qwen3MoE layer found in the model.layers.'); give the config layers with experts");

  // Each pipeline stage looks among its own layers: HY-V3's first layer is dense
  // (first_k_dense_replace 1 of 80).
  nlohmann::json hy = CorpusConfig("hy3-preview");
  c.pipeline_parallel_size = 2;
  c.cache.max_model_len = 4096;
  EXPECT_EQ(ConfigErrors(hy, c), "");
  c.pp_layer_partition = "1,79";
  const std::string hy_stage0 =
      StageWithoutExperts("HYV3ForCausalLM", "1,79", "stage 0 (layer 0)", "first_k_dense_replace",
                          "No MoE layer found in model.layers.");
  EXPECT_EQ(ConfigErrors(hy, c), hy_stage0);
  c.pp_layer_partition = "2,78";
  EXPECT_EQ(ConfigErrors(hy, c), "");
  // Keys the fork's own config classes default: HY-V3's first_k_dense_replace 1, Qwen3-Next's
  // decoder_sparse_step 1 (its mlp_only_layers [] where absent).
  hy.erase("first_k_dense_replace");
  c.pp_layer_partition = "1,79";
  EXPECT_EQ(ConfigErrors(hy, c), hy_stage0);
  nlohmann::json next = CorpusConfig("qwen3-next-80b");  // no decoder_sparse_step
  next["mlp_only_layers"] = {0, 1, 2, 3};
  c.pp_layer_partition = "4,44";
  EXPECT_EQ(ConfigErrors(next, c),
            StageWithoutExperts("Qwen3NextForCausalLM", "4,44", "stage 0 (layers 0 to 3)",
                                "num_experts, decoder_sparse_step and mlp_only_layers",
                                "No Qwen3Next layer found in the model.layers."));
  c.pp_layer_partition = "8,40";
  EXPECT_EQ(ConfigErrors(next, c), "");
  c.pipeline_parallel_size = 1;
  c.pp_layer_partition.reset();

  // DeepSeek's class warns and builds on: its stated experts build no MoE layer, so EPLB finds no
  // model and --moe-backend no FusedMoE layer.
  nlohmann::json kimi = CorpusConfig("kimi-k2.6");
  kimi["text_config"]["first_k_dense_replace"] = 61;
  c.enable_expert_parallel = true;
  c.enable_eplb = true;
  c.parallel.tensor_parallel_size = 8;
  const std::string no_model = EplbNoModel(
      "'config.json' (KimiK25ForConditionalGeneration), whose config states 384 experts but builds "
      "no MoE layer");
  EXPECT_EQ(ConfigErrors(kimi, c), no_model);
  kimi["text_config"]["moe_layer_freq"] = 2;  // layers 1 to 60, every other one from 0
  kimi["text_config"]["first_k_dense_replace"] = 60;
  EXPECT_EQ(ConfigErrors(kimi, c), "");
  kimi["text_config"]["first_k_dense_replace"] = 59;  // 59 is odd, 60 is even
  EXPECT_EQ(ConfigErrors(kimi, c), "");
  kimi["text_config"]["first_k_dense_replace"] = 60;
  kimi["text_config"]["moe_layer_freq"] = 3;  // 60 % 3 == 0
  EXPECT_EQ(ConfigErrors(kimi, c), "");
  kimi["text_config"]["moe_layer_freq"] = 7;  // 60 % 7 != 0
  EXPECT_EQ(ConfigErrors(kimi, c), no_model);
  c.enable_eplb = false;
  c.moe_backend = "b12x";
  c.moe_backend_from = "--moe-backend";
  EXPECT_EQ(ConfigErrors(kimi, c), "");
  kimi["text_config"]["moe_layer_freq"] = 1;  // layer 60 builds experts
  EXPECT_EQ(ConfigErrors(kimi, c),
            UnquantizedMoeBackend("b12x", "KimiK25ForConditionalGeneration"));

  // MiMo-V2 builds experts where its moe_layer_freq list holds a true entry, none for an int.
  nlohmann::json mimo = CorpusConfig("mimo-v2-flash");  // 48 layers
  mimo["n_routed_experts"] = 256;
  mimo["num_experts_per_tok"] = 8;
  mimo["moe_layer_freq"] = 1;
  LaunchConfig b12x;
  b12x.parallel.tensor_parallel_size = 2;
  b12x.moe_backend = "b12x";
  b12x.moe_backend_from = "--moe-backend";
  EXPECT_EQ(ConfigErrors(mimo, b12x), "");
  mimo["moe_layer_freq"] = nlohmann::json::array({0});
  for (int i = 1; i < 48; ++i) mimo["moe_layer_freq"].push_back(1);
  EXPECT_EQ(ConfigErrors(mimo, b12x), UnquantizedMoeBackend("b12x", "MiMoV2FlashForCausalLM"));
  mimo["moe_layer_freq"].erase(47);
  EXPECT_EQ(testing_configs::PlanWith(mimo, b12x).status().message(),
            "config.json 'config.json': field 'moe_layer_freq' lists 47 layers, but the model has "
            "48: the engine's decoder layer indexes it by layer and raises IndexError as it builds "
            "the model");

  // EXAONE MoE builds experts where its is_moe_layer list holds a true entry, and indexes it
  // whatever it holds. Its class is not the MixtureOfExperts model EPLB balances either, so
  // --enable-eplb tells the two cases apart.
  nlohmann::json exaone = CorpusConfig("k-exaone-236b");  // 48 layers, experts from layer 1 on
  exaone["num_experts"] = 128;
  LaunchConfig eplb;
  eplb.parallel.tensor_parallel_size = 2;
  eplb.enable_expert_parallel = true;
  eplb.enable_eplb = true;
  const auto eplb_refused = [](const std::string& why) {
    return EplbNoModel("'config.json' (ExaoneMoEForCausalLM), " + why);
  };
  EXPECT_EQ(ConfigErrors(exaone, eplb),
            eplb_refused("whose engine class (or the language model it wraps) is not the "
                         "MixtureOfExperts model the engine balances"));
  exaone["is_moe_layer"] = std::vector<bool>(48, false);
  EXPECT_EQ(ConfigErrors(exaone, eplb),
            eplb_refused("whose config states 128 experts but builds no MoE layer"));
  exaone["is_moe_layer"].erase(47);
  EXPECT_EQ(testing_configs::PlanWith(exaone, eplb).status().message(),
            "config.json 'config.json': field 'is_moe_layer' lists 47 layers, but the model has "
            "48: the engine's decoder layer indexes it by layer and raises IndexError as it builds "
            "the model");
  for (const auto& [stated, raised] : std::vector<std::pair<nlohmann::json, std::string>>{
           {nullptr, "TypeError"},
           {true, "TypeError"},
           {1, "TypeError"},
           {nlohmann::json::object({{"0", true}}), "KeyError"}}) {
    exaone["is_moe_layer"] = stated;
    EXPECT_EQ(testing_configs::PlanWith(exaone, eplb).status().message(),
              fmt::format("config.json 'config.json': field 'is_moe_layer' is {}: the engine's "
                          "decoder layer indexes it by layer (config.is_moe_layer[layer]) and "
                          "raises {} as it builds the model; state a list with one truth value "
                          "per layer",
                          stated.dump(), raised));
  }

  // HunYuan's MoE class decides for every layer at once (num_experts above 1) and raises too.
  LaunchConfig plain;
  nlohmann::json hunyuan = CorpusConfig("hunyuan-7b");
  hunyuan["architectures"] = {"HunYuanMoEV1ForCausalLM"};
  hunyuan["num_experts"] = 1;
  EXPECT_EQ(ConfigErrors(hunyuan, plain),
            "\n  error [expert-layers] 'config.json' (HunYuanMoEV1ForCausalLM) states 1 expert, "
            "but its layers build them only as num_experts choose, and none of its 32 layers "
            "does: the engine's HunYuanMoEV1ForCausalLM raises as it builds the model ('No "
            "HunYuanMoE layer found in model.layers.'); give the config layers with experts");
  hunyuan["num_experts"] = 8;
  EXPECT_EQ(ConfigErrors(hunyuan, plain), "");

  // Step 3's layers read moe_layers_enum as comma-separated integers.
  nlohmann::json step = CorpusConfig("step3-text");
  step["moe_layers_enum"] = " 4, +5,6_0 ";
  EXPECT_EQ(ConfigErrors(step, plain), "");
  step["moe_layers_enum"] = "4,,5";
  EXPECT_EQ(testing_configs::PlanWith(step, plain).status().message(),
            "config.json 'config.json': field 'moe_layers_enum' has '', which is not an integer: "
            "the engine's decoder layer reads every comma-separated entry with int() and raises "
            "ValueError as it builds the model");
  step["moe_layers_enum"] = {4, 5};
  EXPECT_EQ(testing_configs::PlanWith(step, plain).status().message(),
            "config.json 'config.json': field 'moe_layers_enum' is [4,5]: the engine's decoder "
            "layer reads it as a string of comma-separated layers (strip, split) and raises "
            "AttributeError as it builds the model");
}

// More classes whose layers build experts only where keys beside the count choose: AFMoE from
// num_dense_layers on (its setup raises for a pipeline stage without one, not for a model
// without any), Arctic every moe_layer_frequency-th layer counted from 1, Bailing and Cohere2
// MoE from first_k_dense_replace on (Bailing V2.5 for num_experts above 1), Jamba where layer %
// expert_layer_period is expert_layer_offset (num_experts above 1), MiniMax-Text-01 where its
// layer's count is not 1, Moondream 3 from its moe block's start_layer on. None of these is the
// MixtureOfExperts model EPLB balances, so
// --enable-eplb tells the two cases apart.
TEST(StartupRefusals, ExpertLayersFromDenseLayersAndPeriods) {
  nlohmann::json afmoe = CorpusConfig("trinity-mini");  // 32 layers
  afmoe.update({{"num_experts", 128}, {"num_experts_per_tok", 8}, {"num_dense_layers", 2}});
  LaunchConfig c;
  c.pipeline_parallel_size = 2;
  c.cache.max_model_len = 4096;
  c.pp_layer_partition = "2,30";
  EXPECT_EQ(ConfigErrors(afmoe, c),
            StageWithoutExperts("AfmoeForCausalLM", "2,30", "stage 0 (layers 0 to 1)",
                                "num_dense_layers", "No AfmoeMoE layer found in model.layers."));
  c.pp_layer_partition = "3,29";
  EXPECT_EQ(ConfigErrors(afmoe, c), "");
  afmoe["num_dense_layers"] = 32;  // no MoE layer to look for
  c.pp_layer_partition = "2,30";
  EXPECT_EQ(ConfigErrors(afmoe, c), "");
  afmoe.erase("num_dense_layers");  // the fork's AfmoeConfig: 1
  EXPECT_EQ(ConfigErrors(afmoe, c), "");
  c.pp_layer_partition = "1,31";
  EXPECT_EQ(ConfigErrors(afmoe, c),
            StageWithoutExperts("AfmoeForCausalLM", "1,31", "stage 0 (layer 0)", "num_dense_layers",
                                "No AfmoeMoE layer found in model.layers."));

  LaunchConfig eplb;
  eplb.enable_expert_parallel = true;
  eplb.enable_eplb = true;
  eplb.parallel.tensor_parallel_size = 2;
  auto none = [](const std::string& what, int experts) {
    return EplbNoModel(
        fmt::format("'config.json' ({}), whose config states {} expert{} but "
                    "builds no MoE layer",
                    what, experts, experts == 1 ? "" : "s"));
  };
  auto built = [](const std::string& what) {
    return EplbNoModel(
        fmt::format("'config.json' ({}), whose engine class (or the language "
                    "model it wraps) is not the MixtureOfExperts model the engine "
                    "balances",
                    what));
  };
  nlohmann::json arctic = CorpusConfig("arctic");  // 35 layers
  arctic.update(
      {{"num_local_experts", 128}, {"num_experts_per_tok", 2}, {"moe_layer_frequency", 36}});
  EXPECT_EQ(ConfigErrors(arctic, eplb), none("ArcticForCausalLM", 128));
  arctic["moe_layer_frequency"] = 35;  // layer 34
  EXPECT_EQ(ConfigErrors(arctic, eplb), built("ArcticForCausalLM"));
  arctic["moe_layer_frequency"] = 0;
  EXPECT_EQ(testing_configs::PlanWith(arctic, eplb).status().message(),
            "config.json 'config.json': field 'moe_layer_frequency' is 0: the engine's decoder "
            "layer for layer 0 divides by it and raises ZeroDivisionError as it builds the model");
  arctic.erase("moe_layer_frequency");  // ArcticConfig's 2: layer 0 alone builds none
  arctic["num_hidden_layers"] = 1;
  EXPECT_EQ(ConfigErrors(arctic, eplb), none("ArcticForCausalLM", 128));
  arctic["num_hidden_layers"] = 2;
  EXPECT_EQ(ConfigErrors(arctic, eplb), built("ArcticForCausalLM"));
  arctic.erase("use_residual");
  EXPECT_EQ(testing_configs::PlanWith(arctic, eplb).status().message(),
            "config.json 'config.json': field 'use_residual' is missing: the engine's "
            "ArcticForCausalLM decoder layer reads it, its config class has no default, and it "
            "raises AttributeError as it builds the model");
  // The Transformers backend builds its own layers, not the engine's class.
  LaunchConfig backend = eplb;
  backend.model_impl = "transformers";
  EXPECT_EQ(ConfigErrors(arctic, backend), "");

  nlohmann::json ling = CorpusConfig("ling-mini-2.0");  // 20 layers
  ling.update({{"num_experts", 256}, {"num_experts_per_tok", 8}, {"first_k_dense_replace", 20}});
  EXPECT_EQ(ConfigErrors(ling, eplb), none("BailingMoeV2ForCausalLM", 256));
  ling["first_k_dense_replace"] = 19;
  EXPECT_EQ(ConfigErrors(ling, eplb), built("BailingMoeV2ForCausalLM"));
  nlohmann::json hybrid = CorpusConfig("ling-2.6-flash");
  hybrid.update({{"num_experts", 1}, {"num_experts_per_tok", 1}});
  EXPECT_EQ(ConfigErrors(hybrid, eplb), none("BailingMoeV2_5ForCausalLM", 1));
  hybrid["num_experts"] = 2;
  EXPECT_EQ(ConfigErrors(hybrid, eplb), built("BailingMoeV2_5ForCausalLM"));
  nlohmann::json cohere = CorpusConfig("cohere2-moe");  // 49 layers, 128 experts
  cohere["first_k_dense_replace"] = 49;
  EXPECT_EQ(ConfigErrors(cohere, eplb), none("Cohere2MoeForCausalLM", 128));
  cohere["first_k_dense_replace"] = 48;
  EXPECT_EQ(ConfigErrors(cohere, eplb), built("Cohere2MoeForCausalLM"));

  nlohmann::json jamba = CorpusConfig("jamba");  // 32 layers
  jamba.update({{"num_experts", 1}, {"num_experts_per_tok", 1}});
  EXPECT_EQ(ConfigErrors(jamba, eplb), none("JambaForCausalLM", 1));
  jamba["num_experts"] = 16;
  EXPECT_EQ(ConfigErrors(jamba, eplb), built("JambaForCausalLM"));
  jamba["expert_layer_offset"] = 2;
  EXPECT_EQ(testing_configs::PlanWith(jamba, eplb).status().message(),
            "config.json 'config.json': field 'expert_layer_offset' is 2, not smaller than "
            "expert_layer_period 2: the engine's config class raises as it loads the config");
  jamba["expert_layer_period"] = 3;
  EXPECT_EQ(ConfigErrors(jamba, eplb), built("JambaForCausalLM"));

  // ERNIE 4.5 MoE: use_moe (else moe_num_experts > 0), then (layer + 1) % moe_layer_interval,
  // then moe_layer_start_index (1 by default) to moe_layer_end_index (-1: the last layer).
  nlohmann::json ernie = CorpusConfig("ernie-4.5-21b-a3b");  // 28 layers, 64 experts, start 1
  EXPECT_EQ(ConfigErrors(ernie, eplb), "");
  ernie["use_moe"] = false;
  EXPECT_EQ(ConfigErrors(ernie, eplb), none("Ernie4_5_MoeForCausalLM", 64));
  ernie["use_moe"] = "no";  // Python's truth: a string that is not empty
  EXPECT_EQ(ConfigErrors(ernie, eplb), "");
  ernie.erase("use_moe");
  ernie["moe_layer_interval"] = 29;
  EXPECT_EQ(ConfigErrors(ernie, eplb), none("Ernie4_5_MoeForCausalLM", 64));
  ernie["moe_layer_interval"] = 28;  // layer 27
  EXPECT_EQ(ConfigErrors(ernie, eplb), "");
  ernie["moe_layer_end_index"] = 26;
  EXPECT_EQ(ConfigErrors(ernie, eplb), none("Ernie4_5_MoeForCausalLM", 64));
  ernie["moe_layer_end_index"] = -1;  // the last layer
  EXPECT_EQ(ConfigErrors(ernie, eplb), "");
  ernie["moe_layer_end_index"] = -2;
  EXPECT_EQ(ConfigErrors(ernie, eplb), none("Ernie4_5_MoeForCausalLM", 64));
  ernie.erase("moe_layer_end_index");
  ernie["moe_layer_interval"] = 1;
  ernie["moe_layer_start_index"] = 28;
  EXPECT_EQ(ConfigErrors(ernie, eplb), none("Ernie4_5_MoeForCausalLM", 64));
  ernie.erase("moe_layer_start_index");  // 1
  EXPECT_EQ(ConfigErrors(ernie, eplb), "");
  ernie["moe_layer_interval"] = 0;  // divided by before the start is tested
  EXPECT_EQ(testing_configs::PlanWith(ernie, eplb).status().message(),
            "config.json 'config.json': field 'moe_layer_interval' is 0: the engine's decoder "
            "layer for layer 0 divides by it and raises ZeroDivisionError as it builds the model");
  ernie["use_moe"] = 0;  // not divided by
  EXPECT_EQ(ConfigErrors(ernie, eplb), none("Ernie4_5_MoeForCausalLM", 64));

  // MiniMax-Text-01 builds experts where its num_local_experts, a list per layer or one int, is
  // not 1 (the engine's count is a list's first entry).
  nlohmann::json minimax = CorpusConfig("minimax-text-01");  // 16 layers
  minimax.update({{"num_local_experts", 1}, {"num_experts_per_tok", 2}});
  EXPECT_EQ(ConfigErrors(minimax, eplb), none("MiniMaxText01ForCausalLM", 1));
  minimax["num_local_experts"] = std::vector<double>(16, 1.0);
  EXPECT_EQ(ConfigErrors(minimax, eplb), none("MiniMaxText01ForCausalLM", 1));
  minimax["num_local_experts"][15] = 32;
  EXPECT_EQ(ConfigErrors(minimax, eplb), built("MiniMaxText01ForCausalLM"));
  minimax["num_local_experts"] = 32.0;  // not an int: every layer takes 1
  EXPECT_EQ(ConfigErrors(minimax, eplb), none("MiniMaxText01ForCausalLM", 32));
  minimax["num_local_experts"] = {32};
  EXPECT_EQ(testing_configs::PlanWith(minimax, eplb).status().message(),
            "config.json 'config.json': field 'num_local_experts' lists 1 layer, but the model "
            "has 16: the engine's decoder layer indexes it by layer and raises IndexError as it "
            "builds the model");

  // Moondream 3's config class states its experts (64 by default) whatever the config leaves
  // out, so expert parallelism has experts to place.
  nlohmann::json moondream = CorpusConfig("moondream3-shaped");  // 24 layers
  LaunchConfig ep = eplb;
  ep.enable_eplb = false;
  EXPECT_EQ(ConfigErrors(moondream, ep), "");
  EXPECT_EQ(ConfigErrors(moondream, eplb), built("HfMoondream"));
  moondream["config"]["text"]["moe"] = {{"start_layer", 24}};
  EXPECT_EQ(ConfigErrors(moondream, eplb), none("HfMoondream", 64));
  moondream["config"]["text"]["moe"] = {{"n_experts", 0}};
  EXPECT_EQ(ConfigErrors(moondream, ep),
            "\n  error [expert-parallel-no-experts] --enable-expert-parallel with 'config.json' "
            "(HfMoondream), whose config states no experts (num_experts, moe_num_experts, "
            "n_routed_experts, num_local_experts, block_configs): the engine refuses it ('Number "
            "of experts in the model must be greater than 0 when expert parallelism is "
            "enabled'); drop --enable-expert-parallel");
  moondream["config"]["text"]["moe"] = nlohmann::json::array({4});
  EXPECT_EQ(testing_configs::PlanWith(moondream, ep).status().message(),
            "config.json 'config.json': field 'config.text.moe' is [4]: the engine's config class "
            "reads it with get() and raises AttributeError as it loads the config");
}

// Wrappers build their language model over a text config: the Qwen2-VL family over text_config
// (Transformers' config class builds it from the root's fields where the config has none),
// Bagel over llm_config, GLM-ASR over text_config (absent: its class's defaults), PaddleOCR-VL
// over the root with text_config (and its class's defaults) merged in, Molmo 2 over text_config
// (else llm_config).
TEST(StartupRefusals, SiluOnlyMlpsOfWrappedLanguageModels) {
  LaunchConfig c;
  auto refused = [](const std::string& architecture) {
    return fmt::format(
        "\n  error [mlp-activation] 'config.json' ({0}) states hidden_act \"gelu\", but the "
        "engine's {0} builds an MLP for silu only in every layer: it raises as it builds the "
        "model ('Unsupported activation: gelu. Only silu is supported for now.'); serve a silu "
        "model, or pass --model-impl transformers",
        architecture);
  };
  nlohmann::json qwen = CorpusConfig("qwen2.5-vl-7b");  // the flat layout
  qwen["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(qwen, c), refused("Qwen2_5_VLForConditionalGeneration"));
  nlohmann::json nested = qwen;
  nested["text_config"] = qwen;
  nested["text_config"].erase("architectures");
  nested["text_config"].erase("vision_config");
  nested["text_config"]["hidden_act"] = "silu";  // the root's is not read
  EXPECT_EQ(ConfigErrors(nested, c), "");
  nested["text_config"]["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(nested, c), refused("Qwen2_5_VLForConditionalGeneration"));

  nlohmann::json bagel = {{"architectures", {"BagelForConditionalGeneration"}},
                          {"torch_dtype", "bfloat16"},
                          {"hidden_act", "gelu"},
                          {"llm_config",
                           {{"model_type", "qwen2"},
                            {"hidden_size", 3584},
                            {"num_hidden_layers", 28},
                            {"num_attention_heads", 28},
                            {"num_key_value_heads", 4},
                            {"max_position_embeddings", 32768}}}};
  EXPECT_EQ(ConfigErrors(bagel, c), "");
  bagel["llm_config"]["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(bagel, c), refused("BagelForConditionalGeneration"));

  nlohmann::json glm = {{"architectures", {"GlmAsrForConditionalGeneration"}},
                        {"torch_dtype", "bfloat16"},
                        {"hidden_act", "gelu"}};
  EXPECT_EQ(ConfigErrors(glm, c), "");  // text_config from its class's defaults
  glm["text_config"] = {{"hidden_act", "gelu"}};
  EXPECT_EQ(ConfigErrors(glm, c), refused("GlmAsrForConditionalGeneration"));

  nlohmann::json paddle = CorpusConfig("paddleocr-vl-shaped");  // flat
  paddle["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(paddle, c), refused("PaddleOCRVLForConditionalGeneration"));
  paddle["text_config"] = nlohmann::json::object();  // merged over the root with silu
  EXPECT_EQ(ConfigErrors(paddle, c), "");
  paddle["text_config"]["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(paddle, c), refused("PaddleOCRVLForConditionalGeneration"));

  // Molmo 2's language model MLP asserts silu, over text_config (else llm_config).
  nlohmann::json molmo2 = {{"architectures", {"Molmo2ForConditionalGeneration"}},
                           {"torch_dtype", "bfloat16"},
                           {"llm_config", bagel["llm_config"]}};
  molmo2["llm_config"]["head_dim"] = 128;
  EXPECT_EQ(ConfigErrors(molmo2, c),
            "\n  error [mlp-activation] 'config.json' (Molmo2ForConditionalGeneration) states "
            "hidden_act \"gelu\", but the engine's Molmo2ForConditionalGeneration builds an MLP "
            "for silu only in every layer: it fails an assertion as it builds the model ('assert "
            "hidden_act == \"silu\"'); serve a silu model, or pass --model-impl transformers");
  molmo2["text_config"] = molmo2["llm_config"];
  molmo2["text_config"]["hidden_act"] = "silu";
  EXPECT_EQ(ConfigErrors(molmo2, c), "");
}

// Classes whose decoder layers build an MLP that takes silu only raise as the model is built for
// another activation the config states: in every layer, or in a MoE class's dense layers and
// shared experts; the Transformers backend builds its own.
TEST(StartupRefusals, SiluOnlyMlps) {
  auto refused = [](const std::string& what, const std::string& key, const std::string& stated,
                    const std::string& engine_class, const std::string& printed,
                    const std::string& where = "in every layer") {
    return fmt::format(
        "\n  error [mlp-activation] 'config.json' ({}) states {} {}, but the engine's {} builds "
        "an MLP for silu only {}: it raises as it builds the model ('Unsupported activation: {}. "
        "Only silu is supported for now.'); serve a silu model, or pass --model-impl "
        "transformers",
        what, key, stated, engine_class, where, printed);
  };
  // `engine_class` refused for a root config stating hidden_act "gelu".
  const auto gelu_refused = [&](const std::string& engine_class, const std::string& where) {
    return refused(engine_class, "hidden_act", "\"gelu\"", engine_class, "gelu", where);
  };
  LaunchConfig c;
  nlohmann::json llama = testing_configs::Llama31_8B();
  llama["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(llama, c), gelu_refused("LlamaForCausalLM", "in every layer"));
  LaunchConfig backend;
  backend.model_impl = "transformers";
  EXPECT_EQ(ConfigErrors(llama, backend), "");
  llama["hidden_act"] = nullptr;  // None != "silu"
  EXPECT_EQ(ConfigErrors(llama, c),
            refused("LlamaForCausalLM", "hidden_act", "null", "LlamaForCausalLM", "None"));
  llama["hidden_act"] = {"gelu", nullptr, 2.0};  // printed as Python prints the list
  EXPECT_EQ(ConfigErrors(llama, c),
            refused("LlamaForCausalLM", "hidden_act", R"(["gelu",null,2.0])", "LlamaForCausalLM",
                    "['gelu', None, 2.0]"));
  llama["hidden_act"] = "silu";
  EXPECT_EQ(ConfigErrors(llama, c), "");
  nlohmann::json internvl = InternVlChat(llama);
  internvl["llm_config"]["hidden_act"] = "swish";
  EXPECT_EQ(ConfigErrors(internvl, c),
            refused("InternVLChatModel, language model LlamaForCausalLM", "hidden_act", "\"swish\"",
                    "LlamaForCausalLM", "swish"));
  // EXAONE 3's MLP reads activation_function.
  nlohmann::json exaone = CorpusConfig("exaone-3.5-7.8b");
  exaone["activation_function"] = "gelu_new";
  EXPECT_EQ(ConfigErrors(exaone, c), refused("ExaoneForCausalLM", "activation_function",
                                             "\"gelu_new\"", "ExaoneForCausalLM", "gelu_new"));
  exaone["activation_function"] = "silu";
  exaone["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(exaone, c), "");

  // Qwen3 MoE's experts take any activation; its dense layers and shared expert do not.
  nlohmann::json qwen = CorpusConfig("qwen3-30b-a3b-fp8");  // 48 MoE layers, no shared expert
  qwen["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  qwen["decoder_sparse_step"] = 2;  // even layers dense
  EXPECT_EQ(ConfigErrors(qwen, c), gelu_refused("Qwen3MoeForCausalLM", "in its dense layers"));
  qwen["decoder_sparse_step"] = 1;
  qwen["shared_expert_intermediate_size"] = 512;
  EXPECT_EQ(ConfigErrors(qwen, c),
            gelu_refused("Qwen3MoeForCausalLM", "as its MoE layers' shared expert"));
  // HunYuan's MoE layers build a shared MLP for use_mixed_mlp_moe above 0 (True too).
  nlohmann::json hunyuan = CorpusConfig("hunyuan-7b");
  hunyuan.update({{"num_experts", 8}, {"hidden_act", "gelu"}});
  EXPECT_EQ(ConfigErrors(hunyuan, c), "");
  hunyuan["use_mixed_mlp_moe"] = true;
  EXPECT_EQ(ConfigErrors(hunyuan, c),
            gelu_refused("HunYuanDenseV1ForCausalLM", "as its MoE layers' shared expert"));
  hunyuan["num_experts"] = 1;  // dense layers
  EXPECT_EQ(ConfigErrors(hunyuan, c),
            gelu_refused("HunYuanDenseV1ForCausalLM", "in its dense layers"));
  // EXAONE MoE's: in the layers its is_moe_layer leaves dense, and as the shared expert of the
  // others for num_shared_experts above 0 (ExaoneMoeConfig's default: 1).
  nlohmann::json kexaone = CorpusConfig("k-exaone-236b");  // layer 0 dense
  kexaone.update({{"num_experts", 128}, {"hidden_act", "gelu"}});
  EXPECT_EQ(ConfigErrors(kexaone, c),
            gelu_refused("ExaoneMoEForCausalLM",
                         "in its dense layers and as its MoE layers' shared expert"));
  kexaone["num_shared_experts"] = 0;
  EXPECT_EQ(ConfigErrors(kexaone, c), gelu_refused("ExaoneMoEForCausalLM", "in its dense layers"));
  kexaone["is_moe_layer"] = std::vector<bool>(48, true);
  EXPECT_EQ(ConfigErrors(kexaone, c), "");

  // Laguna's MLP words it without "for now".
  nlohmann::json laguna = qwen;
  laguna["architectures"] = {"LagunaForCausalLM"};
  laguna["mlp_only_layers"] = nlohmann::json::array();
  const auto laguna_refused = [](const std::string& where) {
    return fmt::format(
        "\n  error [mlp-activation] 'config.json' (LagunaForCausalLM) states hidden_act "
        "\"gelu\", but the engine's LagunaForCausalLM builds an MLP for silu only {}: it raises "
        "as it builds the model ('Unsupported activation: gelu. Only silu is supported.'); serve "
        "a silu model, or pass --model-impl transformers",
        where);
  };
  EXPECT_EQ(ConfigErrors(laguna, c), laguna_refused("as its MoE layers' shared expert"));
  // Its config class lists layer 0 alone where mlp_only_layers is absent or null.
  laguna["shared_expert_intermediate_size"] = 0;
  EXPECT_EQ(ConfigErrors(laguna, c), "");
  laguna["mlp_only_layers"] = nullptr;
  EXPECT_EQ(ConfigErrors(laguna, c), laguna_refused("in its dense layers"));
  laguna.erase("mlp_only_layers");
  laguna.erase("decoder_sparse_step");  // 1
  EXPECT_EQ(ConfigErrors(laguna, c), laguna_refused("in its dense layers"));
  // MiniCPM's MLP, built where num_experts is absent or 0, takes silu and fatrelu.
  nlohmann::json minicpm = testing_configs::Llama31_8B();
  minicpm["architectures"] = {"MiniCPMForCausalLM"};
  minicpm["model_type"] = "minicpm";
  minicpm["hidden_act"] = "fatrelu";
  EXPECT_EQ(ConfigErrors(minicpm, c), "");
  minicpm["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(minicpm, c),
            "\n  error [mlp-activation] 'config.json' (MiniCPMForCausalLM) states hidden_act "
            "\"gelu\", but the engine's MiniCPMForCausalLM builds an MLP for silu and fatrelu only "
            "in its dense layers: it raises as it builds the model ('Unsupported activation: gelu. "
            "Only silu and fatrelu are supported for now.'); serve a silu model, or pass "
            "--model-impl transformers");
  minicpm.update({{"num_experts", 8}, {"num_experts_per_tok", 2}});  // MiniCPMMoE in every layer
  EXPECT_EQ(ConfigErrors(minicpm, c), "");
  nlohmann::json jamba = CorpusConfig("jamba");  // every other layer dense
  jamba.update({{"num_experts", 16}, {"num_experts_per_tok", 2}, {"hidden_act", "gelu"}});
  EXPECT_EQ(ConfigErrors(jamba, c), gelu_refused("JambaForCausalLM", "in its dense layers"));
  // Arctic's MLP: in its layers without experts, and beside the experts where use_residual.
  nlohmann::json arctic = CorpusConfig("arctic");  // use_residual true
  arctic.update({{"num_local_experts", 128},
                 {"num_experts_per_tok", 2},
                 {"moe_layer_frequency", 1},
                 {"hidden_act", "gelu"}});
  const auto arctic_refused = [&](const std::string& where) {
    return fmt::format(
        "\n  error [mlp-activation] 'config.json' (ArcticForCausalLM) states hidden_act "
        "\"gelu\", but the engine's ArcticForCausalLM builds an MLP for silu only {}: it raises "
        "as it builds the model ('Unsupported activation: gelu. Only silu is supported for "
        "now.'); serve a silu model, or pass --model-impl transformers",
        where);
  };
  EXPECT_EQ(ConfigErrors(arctic, c), arctic_refused("as its MoE layers' residual MLP"));
  arctic["use_residual"] = -1;  // read for Python's truth: true
  EXPECT_EQ(ConfigErrors(arctic, c), arctic_refused("as its MoE layers' residual MLP"));
  arctic["use_residual"] = "";
  EXPECT_EQ(ConfigErrors(arctic, c), "");
  arctic["use_residual"] = false;
  EXPECT_EQ(ConfigErrors(arctic, c), "");
  arctic["moe_layer_frequency"] = 2;
  EXPECT_EQ(ConfigErrors(arctic, c), arctic_refused("in its dense layers"));
  arctic["use_residual"] = true;
  EXPECT_EQ(ConfigErrors(arctic, c),
            arctic_refused("in its dense layers and as its MoE layers' residual MLP"));
  // Granite 4.0-H's layers build a shared MLP unless shared_intermediate_size is 0 (its config
  // class's default is 1024); Granite MoE Shared's class defaults it to 0.
  nlohmann::json granite = CorpusConfig("granite-4.0-h");
  granite["hidden_act"] = "gelu";
  const std::string shared_mlp = "as every layer's shared MLP";
  EXPECT_EQ(ConfigErrors(granite, c), gelu_refused("GraniteMoeHybridForCausalLM", shared_mlp));
  granite["shared_intermediate_size"] = 0.0;
  EXPECT_EQ(ConfigErrors(granite, c), "");
  granite["shared_intermediate_size"] = 1536;
  EXPECT_EQ(ConfigErrors(granite, c), gelu_refused("GraniteMoeHybridForCausalLM", shared_mlp));
  nlohmann::json shared = CorpusConfig("granite-3.1-3b-a800m");
  shared["architectures"] = {"GraniteMoeSharedForCausalLM"};
  shared["model_type"] = "granitemoeshared";
  shared["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(shared, c), "");
  shared["shared_intermediate_size"] = 1024;
  EXPECT_EQ(ConfigErrors(shared, c), gelu_refused("GraniteMoeSharedForCausalLM", shared_mlp));
  // ERNIE 4.5 MoE's config class builds two shared experts where the config states none; its
  // layers from moe_layer_start_index (1 by default) on are MoE layers.
  nlohmann::json ernie = CorpusConfig("ernie-4.5-21b-a3b");
  ernie["hidden_act"] = "gelu";
  EXPECT_EQ(ConfigErrors(ernie, c),
            gelu_refused("Ernie4_5_MoeForCausalLM",
                         "in its dense layers and as its MoE layers' shared expert"));
  ernie["moe_num_shared_experts"] = 0;
  EXPECT_EQ(ConfigErrors(ernie, c), gelu_refused("Ernie4_5_MoeForCausalLM", "in its dense layers"));
  ernie["moe_layer_start_index"] = 0;
  EXPECT_EQ(ConfigErrors(ernie, c), "");
  ernie.erase("moe_num_shared_experts");
  EXPECT_EQ(ConfigErrors(ernie, c),
            gelu_refused("Ernie4_5_MoeForCausalLM", "as its MoE layers' shared expert"));
  nlohmann::json next = CorpusConfig("qwen3-next-80b");  // its class's shared expert: 512
  next.erase("shared_expert_intermediate_size");
  next["hidden_act"] = "relu";
  EXPECT_EQ(ConfigErrors(next, c),
            refused("Qwen3NextForCausalLM", "hidden_act", "\"relu\"", "Qwen3NextForCausalLM",
                    "relu", "as its MoE layers' shared expert"));
  next["shared_expert_intermediate_size"] = 0;
  EXPECT_EQ(ConfigErrors(next, c), "");
}

// The MoE layers that compare the tensor-parallel size with the expert count their config
// states, as they are built: Qwen3 MoE's, a wrapper's Qwen3-MoE language model's, HunYuan's,
// MiniMax-M2's, ERNIE 4.5 VL MoE's (the largest of its list, the list printed).
// The engine reads a config's expert count with the config class's attributes: the classes the
// fork registers for their model types define one (Step 3.5's moe_num_experts 16, AFMoE's
// num_experts 64, ...), which counts where the config leaves the key out.
TEST(StartupRefusals, ExpertCountsOfTheForksConfigClasses) {
  nlohmann::json step = CorpusConfig("step-3.5-flash");  // states no expert count
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 32;
  EXPECT_EQ(
      ConfigErrors(step, c),
      "\n  error [moe-tensor-parallel] -tp 32 with 'config.json' (Step3p5ForCausalLM), "
      "whose MoE layers hold 16 experts: the engine's MoE layer raises as it builds the model "
      "('Tensor parallel size 32 is greater than the number of experts 16.'); use -tp 16 or "
      "less");
  c.parallel.tensor_parallel_size = 16;
  EXPECT_EQ(ConfigErrors(step, c), "");
  step["moe_num_experts"] = 8;  // stated: the class's default does not count
  EXPECT_EQ(ConfigErrors(step, c),
            "\n  error [moe-tensor-parallel] -tp 16 with 'config.json' (Step3p5ForCausalLM), "
            "whose MoE layers hold 8 experts: the engine's MoE layer raises as it builds the model "
            "('Tensor parallel size 16 is greater than the number of experts 8.'); use -tp 8 or "
            "less");
  // Expert parallelism has AFMoE's 64 experts to place.
  nlohmann::json afmoe = CorpusConfig("trinity-mini");
  LaunchConfig ep;
  ep.parallel.tensor_parallel_size = 2;
  ep.enable_expert_parallel = true;
  EXPECT_EQ(ConfigErrors(afmoe, ep), "");
  afmoe["model_type"] = "afmoe_custom";  // a class kvtopo does not know: no count
  EXPECT_EQ(ConfigErrors(afmoe, ep),
            "\n  error [expert-parallel-no-experts] --enable-expert-parallel with 'config.json' "
            "(AfmoeForCausalLM), whose config states no experts (num_experts, moe_num_experts, "
            "n_routed_experts, num_local_experts, block_configs): the engine refuses it ('Number "
            "of experts in the model must be greater than 0 when expert parallelism is enabled'); "
            "drop --enable-expert-parallel");
  // Kimi-Linear's class sets num_experts, which the engine reads first, to None where the config
  // leaves it out: a count under a later name does not count.
  nlohmann::json kimi = ProfileConfig("kimi-linear-48b");
  kimi["n_routed_experts"] = kimi["num_experts"];
  EXPECT_EQ(ConfigErrors(kimi, ep), "");
  kimi.erase("num_experts");
  EXPECT_EQ(ConfigErrors(kimi, ep),
            "\n  error [expert-parallel-no-experts] --enable-expert-parallel with 'config.json' "
            "(KimiLinearForCausalLM), whose config states no experts (num_experts, "
            "moe_num_experts, n_routed_experts, num_local_experts, block_configs; it leaves out "
            "num_experts, which the engine reads first and the fork's config class for model type "
            "'kimi_linear' sets to None): the engine refuses it ('Number of experts in the model "
            "must be greater than 0 when expert parallelism is enabled'); drop "
            "--enable-expert-parallel");
  // A layer rule's count gate takes the class's count too: Laguna's 256 experts build in every
  // layer but its class's dense layer 0.
  nlohmann::json laguna = CorpusConfig("laguna-xs.2");  // states no num_experts
  laguna.update({{"hidden_act", "gelu"}, {"shared_expert_intermediate_size", 0}});
  EXPECT_EQ(ConfigErrors(laguna, LaunchConfig()),
            "\n  error [mlp-activation] 'config.json' (LagunaForCausalLM) states hidden_act "
            "\"gelu\", but the engine's LagunaForCausalLM builds an MLP for silu only in its dense "
            "layers: it raises as it builds the model ('Unsupported activation: gelu. Only silu is "
            "supported.'); serve a silu model, or pass --model-impl transformers");
  laguna["mlp_only_layers"] = nlohmann::json::array();
  EXPECT_EQ(ConfigErrors(laguna, LaunchConfig()), "");
}

// The expert count the engine picks (get_num_experts) goes into a pydantic dataclass whose
// num_experts is an int: a fraction, an object or a list's non-number first entry raises there,
// an empty list raises as it is indexed, a string is kvtopo's own limit; a whole float and True
// pass, and a false value falls to block_configs.
TEST(StartupRefusals, ExpertCountsTheEngineCannotRead) {
  nlohmann::json qwen = CorpusConfig("qwen3-30b-a3b-fp8");  // 128 experts, 48 MoE layers
  LaunchConfig ep;
  ep.parallel.tensor_parallel_size = 2;
  ep.enable_expert_parallel = true;
  const auto refused = [&](const nlohmann::json& count) {
    qwen["num_experts"] = count;
    return testing_configs::PlanWith(qwen, ep).status().message();
  };
  const std::string validation =
      "for the expert count, which its model architecture config holds as an integer, and raises "
      "a ValidationError as it builds the model config ('Input should be a valid integer";
  EXPECT_EQ(refused(32.5),
            "config.json 'config.json': field 'num_experts' is 32.5: the engine "
            "takes it " +
                validation + ", got a number with a fractional part')");
  EXPECT_EQ(refused(nlohmann::json::array({64.5})),
            "config.json 'config.json': field 'num_experts' is [64.5]: the engine takes its first "
            "entry (64.5) " +
                validation + ", got a number with a fractional part')");
  EXPECT_EQ(refused(nlohmann::json::array({nullptr})),
            "config.json 'config.json': field 'num_experts' is [null]: the engine takes its first "
            "entry (null) " +
                validation + "')");
  EXPECT_EQ(refused({{"n", 8}}),
            "config.json 'config.json': field 'num_experts' is {\"n\":8}: the engine takes it " +
                validation + "')");
  EXPECT_EQ(refused(nlohmann::json::array()),
            "config.json 'config.json': field 'num_experts' is []: the engine's get_num_experts "
            "takes a list's first entry and raises IndexError as it builds the model config");
  EXPECT_EQ(refused("128"),
            "config.json 'config.json': field 'num_experts' is \"128\": the engine's model "
            "architecture config parses the expert count from it, a string (anything but an "
            "integer's digits raises a ValidationError), but the model's classes read the string "
            "itself; kvtopo reads expert counts as numbers only: state it as a number");
  // The Transformers backend's model config reads the count the same way.
  LaunchConfig backend = ep;
  backend.model_impl = "transformers";
  qwen["num_experts"] = 32.5;
  EXPECT_EQ(testing_configs::PlanWith(qwen, backend).status().message(),
            "config.json 'config.json': field 'num_experts' is 32.5: the engine takes it " +
                validation + ", got a number with a fractional part')");
  qwen["num_experts"] = 128.0;
  EXPECT_EQ(ConfigErrors(qwen, ep), "");
  // True is 1 expert, which -tp 2 outnumbers; the engine prints it as Python does.
  qwen["num_experts"] = true;
  EXPECT_EQ(ConfigErrors(qwen, ep),
            "\n  error [moe-tensor-parallel] -tp 2 with 'config.json' (Qwen3MoeForCausalLM), "
            "whose MoE layers hold 1 expert: the engine's MoE layer raises as it builds the model "
            "('Tensor parallel size 2 is greater than the number of experts True.'); use -tp 1 or "
            "less");
  // A false count falls to the largest n_routed_experts of block_configs' moe blocks, which max()
  // compares: expert parallelism has 8 experts to place.
  nlohmann::json llama = testing_configs::Llama31_8B();
  llama["num_experts"] = 0;
  EXPECT_EQ(ConfigErrors(llama, ep),
            "\n  error [expert-parallel-no-experts] --enable-expert-parallel with 'config.json' "
            "(LlamaForCausalLM), whose config states no experts (num_experts, moe_num_experts, "
            "n_routed_experts, num_local_experts, block_configs): the engine refuses it ('Number "
            "of experts in the model must be greater than 0 when expert parallelism is enabled'); "
            "drop --enable-expert-parallel");
  llama["block_configs"] = {{{"block_type", "moe"}, {"n_routed_experts", 2.5}},
                            {{"block_type", "moe"}, {"n_routed_experts", 8}},
                            {{"block_type", "attention"}, {"n_routed_experts", "x"}}};
  EXPECT_EQ(ConfigErrors(llama, ep), "");
  llama["block_configs"][1]["n_routed_experts"] = 1.5;
  EXPECT_EQ(testing_configs::PlanWith(llama, ep).status().message(),
            "config.json 'config.json': field 'block_configs[0].n_routed_experts' is 2.5: the "
            "engine takes the largest of the moe blocks' counts " +
                validation + ", got a number with a fractional part')");
  llama["block_configs"][1]["n_routed_experts"] = nullptr;
  EXPECT_EQ(testing_configs::PlanWith(llama, ep).status().message(),
            "config.json 'config.json': field 'block_configs[1].n_routed_experts' is null: the "
            "engine's get_num_experts takes the largest of the moe blocks' counts with max() and "
            "raises TypeError as it builds the model config");

  // ERNIE 4.5 MoE's decoder layer compares moe_num_experts with 0 for use_moe's default, which
  // Python evaluates even where use_moe is stated.
  nlohmann::json ernie = CorpusConfig("ernie-4.5-21b-a3b");
  ernie["use_moe"] = true;
  for (const nlohmann::json& count :
       {nlohmann::json(nullptr), nlohmann::json(""), nlohmann::json::array({64})}) {
    ernie["moe_num_experts"] = count;
    EXPECT_EQ(testing_configs::PlanWith(ernie, LaunchConfig()).status().message(),
              fmt::format("config.json 'config.json': field 'moe_num_experts' is {}: the engine's "
                          "decoder layer compares it with 0 as the default of use_moe (which "
                          "Python evaluates whether or not the config states use_moe) and raises "
                          "TypeError as it builds the model",
                          count.dump()));
  }
  ernie["moe_num_experts"] = true;
  EXPECT_EQ(ConfigErrors(ernie, LaunchConfig()), "");
}

// The MoE blocks that compare their shared-expert key with 0 as each is built raise TypeError
// on a value Python cannot compare with a number; a model without a MoE layer never compares it.
TEST(StartupRefusals, SharedExpertKeysTheMoeBlocksCompare) {
  nlohmann::json qwen = CorpusConfig("qwen3-30b-a3b-fp8");  // 48 MoE layers
  for (const nlohmann::json& size :
       {nlohmann::json(nullptr), nlohmann::json("512"), nlohmann::json::array({512})}) {
    qwen["shared_expert_intermediate_size"] = size;
    EXPECT_EQ(testing_configs::PlanWith(qwen, LaunchConfig()).status().message(),
              fmt::format("config.json 'config.json': field 'shared_expert_intermediate_size' is "
                          "{}: the engine's MoE block compares it with 0 as it builds the first "
                          "MoE layer and raises TypeError as it builds the model; state a number",
                          size.dump()));
  }
  // Qwen2-MoE's model class compares it too, MoE layers or not, unless mlp_only_layers lists one.
  nlohmann::json qwen2 = qwen;
  qwen2.update({{"architectures", {"Qwen2MoeForCausalLM"}}, {"num_experts", 0}});
  EXPECT_EQ(testing_configs::PlanWith(qwen2, LaunchConfig()).status().message(),
            "config.json 'config.json': field 'shared_expert_intermediate_size' is [512]: the "
            "engine's Qwen2MoeForCausalLM compares it with 0 as it builds the model (its "
            "mlp_only_layers being empty) and raises TypeError; state a number");
  qwen2["mlp_only_layers"] = {0};
  EXPECT_EQ(ConfigErrors(qwen2, LaunchConfig()), "");
  LaunchConfig backend;  // the Transformers backend does not build the engine's MoE block
  backend.model_impl = "transformers";
  EXPECT_EQ(ConfigErrors(qwen, backend), "");
  qwen["shared_expert_intermediate_size"] = 0;
  EXPECT_EQ(ConfigErrors(qwen, LaunchConfig()), "");
  // HunYuan with one expert builds dense layers only.
  nlohmann::json hunyuan = CorpusConfig("hunyuan-7b");
  hunyuan.update({{"num_experts", 1}, {"use_mixed_mlp_moe", nullptr}});
  EXPECT_EQ(ConfigErrors(hunyuan, LaunchConfig()), "");
  hunyuan["num_experts"] = 8;
  EXPECT_EQ(testing_configs::PlanWith(hunyuan, LaunchConfig()).status().message(),
            "config.json 'config.json': field 'use_mixed_mlp_moe' is null: the engine's MoE block "
            "compares it with 0 as it builds the first MoE layer and raises TypeError as it builds "
            "the model; state a number");
  // Arctic reads use_residual for its truth.
  nlohmann::json arctic = CorpusConfig("arctic");
  arctic.update(
      {{"num_local_experts", 128}, {"num_experts_per_tok", 2}, {"use_residual", nullptr}});
  EXPECT_EQ(ConfigErrors(arctic, LaunchConfig()), "");
}

TEST(StartupRefusals, MoeLayersCheckTensorParallelAgainstExperts) {
  // -tp 8 refused for `what`, whose MoE layers hold `experts` (the engine prints `printed`).
  auto tp_above = [](const std::string& what, int experts, std::string printed = "") {
    if (printed.empty()) printed = std::to_string(experts);
    return fmt::format(
        "\n  error [moe-tensor-parallel] -tp 8 with 'config.json' ({}), whose MoE "
        "layers hold {} experts: the engine's MoE layer raises as it builds the "
        "model ('Tensor parallel size 8 is greater than the number of experts {}.'); "
        "use -tp {} or less",
        what, experts, printed, experts);
  };
  nlohmann::json qwen = CorpusConfig("qwen3-30b-a3b-fp8");
  qwen["num_experts"] = 4;
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 4;
  EXPECT_EQ(ConfigErrors(qwen, c), "");
  c.parallel.tensor_parallel_size = 8;
  EXPECT_EQ(ConfigErrors(qwen, c), tp_above("Qwen3MoeForCausalLM", 4));
  nlohmann::json internvl = InternVlChat(qwen);
  EXPECT_EQ(ConfigErrors(internvl, c), tp_above("InternVLChatModel", 4));
  qwen["decoder_sparse_step"] = 49;  // no MoE layer is built to check it
  EXPECT_EQ(ConfigErrors(qwen, c),
            "\n  error [expert-layers] 'config.json' (Qwen3MoeForCausalLM) states 4 experts, but "
            "its layers build them only as num_experts, decoder_sparse_step and mlp_only_layers "
            "choose, and none of its 48 layers does: the engine's Qwen3MoeForCausalLM raises as "
            "it builds the model ('No Qwen3MoE layer found in the model.layers.'); give the "
            "config layers with experts");
  // HunYuan's dense and MoE classes build the same MoE block for num_experts above 1.
  nlohmann::json hunyuan = CorpusConfig("hunyuan-7b");
  hunyuan["num_experts"] = 4;
  EXPECT_EQ(ConfigErrors(hunyuan, c), tp_above("HunYuanDenseV1ForCausalLM", 4));
  hunyuan["num_experts"] = 1;  // no MoE block
  EXPECT_EQ(ConfigErrors(hunyuan, c), "");
  nlohmann::json minimax = nlohmann::json::parse(R"({
    "architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "hidden_size": 3072,
    "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8,
    "head_dim": 128, "max_position_embeddings": 196608, "torch_dtype": "bfloat16",
    "num_local_experts": 4, "num_experts_per_tok": 2})");
  EXPECT_EQ(ConfigErrors(minimax, c), tp_above("MiniMaxM2ForCausalLM", 4));
  nlohmann::json ernie = nlohmann::json::parse(R"({
    "architectures": ["Ernie4_5_VLMoeForConditionalGeneration"], "model_type": "ernie4_5_moe_vl",
    "hidden_size": 2048, "num_hidden_layers": 28, "num_attention_heads": 16,
    "num_key_value_heads": 4, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
    "moe_num_experts": [2, 4], "moe_k": 2, "vocab_size": 103424})");
  c.parallel.tensor_parallel_size = 4;
  EXPECT_EQ(ConfigErrors(ernie, c), "");
  c.parallel.tensor_parallel_size = 8;
  EXPECT_EQ(ConfigErrors(ernie, c),
            tp_above("Ernie4_5_VLMoeForConditionalGeneration", 4, "[2, 4]"));
}

TEST(StartupRefusals, ElasticExpertParallelismAndTurboQuantSkipLayers) {
  LaunchOptions o = Model("qwen3-next-80b");
  o.tensor_parallel_size = 2;
  o.enable_expert_parallel = true;
  o.enable_elastic_ep = true;
  EXPECT_EQ(Rejection(o),
            "--enable-elastic-ep without --enable-eplb: the engine refuses it ('Elastic EP is only "
            "supported with enable_eplb=True.'); add --enable-eplb or drop --enable-elastic-ep");
  o.enable_eplb = true;
  EXPECT_EQ(AcceptedTokens(o), 2778185);  // as at TP 2 with expert parallelism alone
  o.pipeline_parallel_size = 2;
  EXPECT_EQ(Rejection(o),
            "--enable-elastic-ep with --pipeline-parallel-size 2: the engine refuses it ('Elastic "
            "EP is not supported with pipeline parallelism (pipeline_parallel_size=2).'); use one "
            "pipeline stage or drop --enable-elastic-ep");
  o.pipeline_parallel_size.reset();
  o.data_parallel_size = 2;
  o.data_parallel_rank = 1;
  EXPECT_EQ(Rejection(o),
            "--enable-elastic-ep with external or hybrid data-parallel load balancing "
            "(--data-parallel-external-lb, --data-parallel-rank, --data-parallel-hybrid-lb): the "
            "engine refuses it ('Elastic EP is not compatible with data_parallel_external_lb or "
            "data_parallel_hybrid_lb. Elastic EP relies on a single API server and core client to "
            "coordinate scale up/down.'); drop one of them");
  o = Model("gpt-oss-120b");
  o.kv_cache_dtype = "turboquant_k8v4";
  o.kv_cache_dtype_skip_layers = "0 sliding_window";
  EXPECT_EQ(Rejection(o),
            "--kv-cache-dtype-skip-layers entry 'sliding_window' with a TurboQuant "
            "--kv-cache-dtype: the engine sorts the skipped layers by their index and raises as "
            "it builds its cache config (\"invalid literal for int() with base 10: "
            "'sliding_window'\"); give layer indices only");
}

// VllmConfig.validate_block_size in align mode also bounds --long-prefill-token-threshold by the
// cache block and refuses --disable-chunked-mm-input.
TEST(StartupRefusals, AlignModeSchedulerKnobs) {
  LaunchOptions o = Model("qwen3-next-80b");
  o.enable_prefix_caching = true;
  o.long_prefill_token_threshold = 512;
  EXPECT_EQ(Errors(o),
            "\n  error [mamba-align-block-size] Mamba cache mode align needs "
            "--long-prefill-token-threshold 512 at least the smallest group block, 544 tokens: "
            "the engine asserts it after sizing the KV cache, once the weights are loaded; raise "
            "it to 544 or more, drop it, or pass --no-enable-prefix-caching");
  o.long_prefill_token_threshold = 544;
  EXPECT_EQ(Errors(o), "");
  o.disable_chunked_mm_input = true;
  EXPECT_EQ(Errors(o),
            "\n  error [mamba-align-chunked-mm-input] Mamba cache mode align schedules a multiple "
            "of the block inside a multimodal input, which --disable-chunked-mm-input forbids: "
            "the engine asserts it after sizing the KV cache, once the weights are loaded "
            "('Chunked MM input is required'); drop --disable-chunked-mm-input or pass "
            "--no-enable-prefix-caching");
  o.enable_prefix_caching = false;  // no align mode: both knobs are free
  o.long_prefill_token_threshold = 16;
  EXPECT_EQ(Errors(o), "");
}

// Qwen3-Next at --max-model-len 32768 on 2 GiB of KV cache: 160 blocks.
LaunchOptions Qwen3NextOn2GiB() {
  LaunchOptions o = Model("qwen3-next-80b");
  o.max_model_len = 32768;
  o.kv_cache_memory = "2GiB";
  return o;
}

// The recurrent-block refusal of `rows` rows over `blocks` blocks under CUDA graph mode `mode`.
std::string GraphBlocksError(int64_t rows, int64_t blocks, std::string_view mode) {
  return fmt::format(
      "\n  error [mamba-cudagraph-blocks] --max-num-seqs {} exceeds the {} blocks of the pool, "
      "and the engine's full decode CUDA graphs (cudagraph_mode {}) need a recurrent-state block "
      "for each request: the engine refuses the launch when it captures them, once the weights "
      "are loaded ('max_num_seqs exceeds available Mamba cache blocks'); lower --max-num-seqs to "
      "{} or fewer, give the KV cache more memory, or pass --enforce-eager",
      rows, blocks, mode, blocks);
}

// Full decode CUDA graphs need a recurrent block per --max-num-seqs row: refused on the engine's
// default graphs, nothing under --enforce-eager or with enough blocks.
TEST(StartupRefusals, RecurrentBlocksForFullCudaGraphs) {
  LaunchOptions o = Qwen3NextOn2GiB();
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool.num_blocks, 160);
  EXPECT_EQ(plan->ErrorLines(), GraphBlocksError(256, 160, "FULL_AND_PIECEWISE, -O2's default"));
  o.max_num_seqs = 160;
  EXPECT_EQ(Errors(o), "");
  o.max_num_seqs = 161;
  o.enforce_eager = true;
  EXPECT_EQ(Errors(o), "");
  o.enforce_eager.reset();
  // Attention-only models keep no recurrent blocks.
  LaunchOptions g = Model("gpt-oss-120b");
  g.num_gpu_blocks_override = 64;
  g.max_model_len = 256;
  EXPECT_EQ(Errors(g), "");
}

// TORCH_COMPILE_DISABLE=1 and VLLM_USE_BREAKABLE_CUDAGRAPH=1 set compilation mode 0 over -O and
// the config (VllmConfig.__post_init__); piecewise graphs then become none unless the graphs are
// breakable. The engine reads each variable as on only when it is exactly "1".
TEST(StartupRefusals, CompileDisablingVariables) {
  auto with_env = [](const char* name, const char* value) {
    LaunchOptions o = Qwen3NextOn2GiB();
    o.max_num_seqs = 161;
    EXPECT_TRUE(ApplyLaunchEnvironment(o, [&](const char* asked) -> const char* {
                  return std::string_view(asked) == name ? value : nullptr;
                }).ok());
    return o;
  };
  EXPECT_EQ(Errors(with_env("TORCH_COMPILE_DISABLE", "1")), "");
  EXPECT_EQ(Errors(with_env("TORCH_COMPILE_DISABLE", "true")),
            GraphBlocksError(161, 160, "FULL_AND_PIECEWISE, -O2's default"));
  LaunchOptions o = with_env("VLLM_USE_BREAKABLE_CUDAGRAPH", "1");  // graphs kept
  EXPECT_EQ(Errors(o), GraphBlocksError(161, 160, "FULL_AND_PIECEWISE, -O2's default"));
  o = with_env("TORCH_COMPILE_DISABLE", "1");
  o.compilation_config = R"({"mode": 3, "cudagraph_mode": "FULL_DECODE_ONLY"})";  // no piecewise
  EXPECT_EQ(Errors(o), GraphBlocksError(161, 160, "FULL_DECODE_ONLY, set by --compilation-config"));
  o = Qwen3NextOn2GiB();
  o.max_num_seqs = 161;
  o.torch_compile_disable = true;  // the flag
  EXPECT_EQ(Errors(o), "");
}

// The CUDA graph mode as the engine resolves it from -O, --compilation-config, the all-to-all
// backend and each group's backend under speculative decoding: the recurrent-block check holds
// where decodes replay full graphs. Qwen3-Next at 2 GiB: 160 blocks, 161 rows.
TEST(StartupRefusals, CudaGraphModeResolved) {
  LaunchOptions o = Qwen3NextOn2GiB();
  o.max_num_seqs = 161;
  auto graphs = [](std::string_view mode) { return GraphBlocksError(161, 160, mode); };
  o.optimization_level = 3;
  EXPECT_EQ(Errors(o), graphs("FULL_AND_PIECEWISE, -O3's default"));
  o.optimization_level = 1;  // piecewise
  EXPECT_EQ(Errors(o), "");
  o.optimization_level = 0;  // none
  EXPECT_EQ(Errors(o), "");
  o.optimization_level = 1;
  o.compilation_config = R"({"cudagraph_mode": "full_decode_only"})";
  EXPECT_EQ(Errors(o), graphs("FULL_DECODE_ONLY, set by --compilation-config"));
  o.compilation_config = R"({"cudagraph_mode": 1})";
  EXPECT_EQ(Errors(o), "");
  // Piecewise graphs need compilation mode 3; full ones do not.
  o.optimization_level.reset();
  o.compilation_config = R"({"mode": "stock_torch_compile"})";
  EXPECT_EQ(Errors(o), "");
  o.compilation_config = R"({"mode": 0, "cudagraph_mode": "FULL"})";
  EXPECT_EQ(Errors(o), graphs("FULL, set by --compilation-config"));
  // Empty splitting ops: piecewise becomes none, full and piecewise full.
  o.compilation_config = R"({"splitting_ops": []})";
  EXPECT_EQ(Errors(o), graphs("FULL, set by --compilation-config splitting_ops []"));
  o.optimization_level = 1;
  EXPECT_EQ(Errors(o), "");
  // Attention-quant fusion and sequence parallelism (TP above 1) make piecewise graphs full.
  o.compilation_config = R"({"pass_config": {"fuse_attn_quant": true}})";
  EXPECT_EQ(Errors(o), graphs("FULL, set by --compilation-config pass_config.fuse_attn_quant"));
  o.compilation_config = R"({"pass_config": {"enable_sp": "yes"}})";
  EXPECT_EQ(Errors(o), "");  // TP 1: no sequence parallelism
  o.compilation_config = R"({"use_inductor_graph_partition": true,
                             "pass_config": {"fuse_attn_quant": true}})";
  EXPECT_EQ(Errors(o), "");
  // Given splitting ops stand beside attention-quant fusion (piecewise graphs stay), unless
  // they hold every attention op, which the engine asserts against.
  o.compilation_config = R"({"splitting_ops": ["vllm::unified_attention_with_output"],
                             "pass_config": {"fuse_attn_quant": true}})";
  EXPECT_EQ(Errors(o), "");
  o.optimization_level = 2;
  EXPECT_EQ(Errors(o), graphs("FULL_AND_PIECEWISE, -O2's default"));
  o.compilation_config = R"({"splitting_ops": ["vllm::unified_attention_with_output",
      "vllm::unified_mla_attention_with_output", "vllm::mamba_mixer2", "vllm::mamba_mixer",
      "vllm::short_conv", "vllm::linear_attention", "vllm::plamo2_mamba_mixer",
      "vllm::gdn_attention_core", "vllm::gdn_attention_core_xpu",
      "vllm::olmo_hybrid_gdn_full_forward", "vllm::kda_attention", "vllm::sparse_attn_indexer",
      "vllm::rocm_aiter_sparse_attn_indexer", "vllm::deepseek_v4_attention", "vllm::other"],
      "pass_config": {"fuse_attn_quant": true}})";
  EXPECT_EQ(Errors(o),
            "\n  error [compilation-fuse-attn-quant] --compilation-config "
            "pass_config.fuse_attn_quant with splitting_ops holding every attention op the "
            "engine splits at: it asserts as it builds its compilation config ('attention ops "
            "should not be in splitting_ops when fuse_attn_quant is True'); drop those ops from "
            "splitting_ops, or fuse_attn_quant");
  o.enforce_eager = true;  // compilation mode NONE: the ops are not split
  EXPECT_EQ(Errors(o), "");
  o.enforce_eager.reset();
  o.optimization_level = 1;
  // Sequence parallelism (TP 2, its threshold given) empties given splitting ops beside the
  // fusion too: piecewise graphs become full.
  o.tensor_parallel_size = 2;
  o.max_num_seqs = 1000;
  o.compilation_config = R"({"splitting_ops": ["vllm::unified_attention_with_output"],
      "pass_config": {"fuse_attn_quant": true, "enable_sp": true, "sp_min_token_num": 64}})";
  EXPECT_EQ(Errors(o),
            GraphBlocksError(1000, 321, "FULL, set by --compilation-config pass_config.enable_sp"));
  o.compilation_config = R"({"splitting_ops": ["vllm::unified_attention_with_output"],
      "pass_config": {"fuse_attn_quant": true}})";
  EXPECT_EQ(Errors(o), "");
  o.tensor_parallel_size.reset();
  o.max_num_seqs = 161;
  o.optimization_level.reset();
  o.compilation_config.reset();
  // DeepEP high-throughput kernels under data parallelism: no graphs on a model with experts.
  o.enable_expert_parallel = true;
  o.data_parallel_size = 2;
  o.all2all_backend = "deepep_high_throughput";
  EXPECT_EQ(Errors(o), "");
  o.all2all_backend = "deepep_low_latency";
  EXPECT_EQ(Errors(o), graphs("FULL_AND_PIECEWISE, -O2's default"));
  o.enable_expert_parallel.reset();
  o.data_parallel_size.reset();
  o.all2all_backend.reset();

  // Speculative decoding replays uniform batches of 1 + k tokens, which FLASH_ATTN and the GDN
  // layers' graphs take: full graphs stay. On FLASHINFER, whose support depends on the GPU,
  // kvtopo cannot tell.
  // With an MTP draft the pool holds 144 blocks of 13 pages (the MTP layer joins the 12 full
  // attention layers' bucket, and the group size grows to 13).
  o.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 2})";
  o.max_num_seqs = 1873;
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), GraphBlocksError(1873, 144, "FULL_AND_PIECEWISE, -O2's default"));
  o.attention_backend = "FLASHINFER";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  const Diagnostic* warning = nullptr;
  for (const Diagnostic& d : plan->diagnostics) {
    if (d.code == "mamba-cudagraph-blocks") warning = &d;
  }
  ASSERT_NE(warning, nullptr);
  EXPECT_EQ(warning->severity, Severity::kWarning);
  EXPECT_EQ(warning->message,
            "--max-num-seqs 1873 exceeds the 144 blocks of the pool, and the engine's full "
            "decode CUDA graphs need a recurrent-state block for each request: the engine refuses "
            "the launch if its decode steps replay full graphs, which kvtopo cannot tell here "
            "(speculative decoding on backend FLASHINFER, whose CUDA graph support kvtopo does "
            "not know); lower --max-num-seqs to 144 or fewer, give the KV cache more memory, or "
            "pass --enforce-eager");
}

// The CUDA graph capture sizes as the engine fixes them: with speculative decoding the decode
// graphs need a size of at least 1 + k; the config-time refusals of the sizes themselves.
TEST(StartupRefusals, CudaGraphCaptureSizes) {
  LaunchOptions o = Model("kimi-k2.6");
  o.attention_backend = "TRITON_MLA";
  o.speculative_config = R"({"method": "eagle3", "model": "kimi-k2.6-eagle3-mla",
                              "num_speculative_tokens": 7})";
  EXPECT_EQ(Errors(o), "");
  auto rounding = [](int64_t largest) {
    return fmt::format(
        "\n  error [cudagraph-capture-sizes] the largest CUDA graph capture size is {} and "
        "speculative decoding's decode graphs need a multiple of 8 (1 + num_speculative_tokens): "
        "the engine refuses the launch once the weights are loaded ('No valid cudagraph sizes "
        "after rounding to multiple of 8'); raise --max-cudagraph-capture-size or "
        "--cudagraph-capture-sizes to 8 or more, or lower num_speculative_tokens",
        largest);
  };
  o.cudagraph_capture_sizes = "1 2 4";
  EXPECT_EQ(Errors(o), rounding(4));
  o.cudagraph_capture_sizes = "1 2 4 8";
  EXPECT_EQ(Errors(o), "");
  o.cudagraph_capture_sizes.reset();
  o.max_cudagraph_capture_size = 7;
  EXPECT_EQ(Errors(o), rounding(4));
  o.max_cudagraph_capture_size = 8;
  EXPECT_EQ(Errors(o), "");
  // A largest of 3 keeps the default sizes 1 and 2: 1 + 2 tokens find none, as in the engine;
  // under --performance-mode interactivity the sizes are 1 to 3.
  o.speculative_config = R"({"method": "eagle3", "model": "kimi-k2.6-eagle3-mla",
                              "num_speculative_tokens": 2})";
  o.max_cudagraph_capture_size = 3;
  EXPECT_EQ(Errors(o),
            "\n  error [cudagraph-capture-sizes] the largest CUDA graph capture size is 2 and "
            "speculative decoding's decode graphs need a multiple of 3 (1 + "
            "num_speculative_tokens): the engine refuses the launch once the weights are loaded "
            "('No valid cudagraph sizes after rounding to multiple of 3'); raise "
            "--max-cudagraph-capture-size or --cudagraph-capture-sizes to 3 or more, or lower "
            "num_speculative_tokens");
  o.performance_mode = "interactivity";
  EXPECT_EQ(Errors(o), "");
  o.performance_mode.reset();
  o.speculative_config = R"({"method": "eagle3", "model": "kimi-k2.6-eagle3-mla",
                              "num_speculative_tokens": 7})";
  // The tokens a step cap every size.
  o.max_cudagraph_capture_size.reset();
  o.max_num_batched_tokens = 6;
  o.max_num_seqs = 1;
  EXPECT_EQ(Errors(o), rounding(6));
  o.max_num_batched_tokens.reset();
  o.max_num_seqs.reset();
  // Without full decode graphs, nothing rounds.
  o.cudagraph_capture_sizes = "1 2 4";
  o.optimization_level = 1;
  EXPECT_EQ(Errors(o), "");
  o.optimization_level.reset();
  o.cudagraph_capture_sizes.reset();

  // Config time: the sizes and the largest must agree, and neither may be empty or 0.
  o.speculative_config.reset();
  o.cudagraph_capture_sizes = "1 2 4 16";
  o.max_cudagraph_capture_size = 8;
  EXPECT_EQ(
      Errors(o),
      "\n  error [cudagraph-capture-sizes] max_cudagraph_capture_size 8 is not the largest of "
      "the capture sizes that fit --max-num-batched-tokens 8192 (16): the engine refuses "
      "the pair ('customized max_cudagraph_capture_size(=8) should be consistent with the "
      "max value of cudagraph_capture_sizes(=16)'); give 16 or drop it");
  o.cudagraph_capture_sizes.reset();
  o.max_cudagraph_capture_size = 0;
  EXPECT_EQ(
      Errors(o),
      "\n  error [cudagraph-capture-sizes] max_cudagraph_capture_size 0 with CUDA graphs on: the "
      "engine refuses it ('Maximum cudagraph size should be greater than or equal to 1 "
      "when using cuda graph'); give 1 or more, or --enforce-eager");
  o.enforce_eager = true;
  EXPECT_EQ(Errors(o), "");
  o.enforce_eager.reset();
  o.max_cudagraph_capture_size.reset();
  o.compilation_config = R"({"cudagraph_capture_sizes": []})";
  EXPECT_EQ(
      Errors(o),
      "\n  error [cudagraph-capture-sizes] --compilation-config cudagraph_capture_sizes [] with "
      "CUDA graphs on: the engine refuses it ('cudagraph_capture_sizes should contain at "
      "least one element when using cuda graph'); give one size or more, or "
      "--enforce-eager");
  // pydantic's lax ints: a string of one, a whole float, a bool; the mode an IntEnum.
  o.compilation_config =
      R"({"cudagraph_capture_sizes": ["8", 16.0, true], "max_cudagraph_capture_size": " 16 ",
          "mode": 3.0})";
  Result<LaunchConfig> lax = ToLaunchConfig(o);
  ASSERT_TRUE(lax.ok()) << lax.status().ToString();
  EXPECT_EQ(lax->compilation.capture_sizes, (std::vector<int64_t>{8, 16, 1}));
  EXPECT_EQ(lax->compilation.max_capture_size, 16);
  EXPECT_EQ(lax->compilation.mode, 3);
  o.compilation_config = R"({"mode": "3"})";  // a string is a mode's name
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--compilation-config: mode \"3\" is not a compilation mode (the engine: 'Invalid "
            "compilation mode'); valid: 0 to 3, or NONE, STOCK_TORCH_COMPILE, DYNAMO_TRACE_ONCE, "
            "VLLM_COMPILE");
  o.compilation_config = R"({"cudagraph_capture_sizes": [1, 0]})";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--compilation-config: cudagraph_capture_sizes must be a list of integers in [1, "
            "2147483647], got [1,0]");
  o.compilation_config = R"({"cudagraph_capture_sizes": [8]})";
  o.cudagraph_capture_sizes = "8";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--cudagraph-capture-sizes beside --compilation-config's cudagraph_capture_sizes: the "
            "engine refuses the pair ('cudagraph_capture_sizes and "
            "compilation_config.cudagraph_capture_sizes are mutually exclusive'); give one");
  o.compilation_config = R"({"max_cudagraph_capture_size": 8})";
  o.cudagraph_capture_sizes.reset();
  o.max_cudagraph_capture_size = 8;
  EXPECT_EQ(
      ToLaunchConfig(o).status().message(),
      "--max-cudagraph-capture-size beside --compilation-config's max_cudagraph_capture_size: "
      "the engine refuses the pair ('max_cudagraph_capture_size and "
      "compilation_config.max_cudagraph_capture_size are mutually exclusive'); give one");
  o.compilation_config.reset();
  o.max_cudagraph_capture_size.reset();
  o.cudagraph_capture_sizes = "1 two";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--cudagraph-capture-sizes: 'two' is not an integer");
}

// Sequence parallelism (TP above 1, and sp_min_token_num given or a threshold on the stated GPU)
// keeps the capture sizes TP divides, and with speculative decoding needs 1 + k and TP to divide
// one another (update_sizes_for_sequence_parallelism, adjust_cudagraph_sizes_for_spec_decode).
TEST(StartupRefusals, CaptureSizesUnderSequenceParallelism) {
  LaunchOptions o = Model("kimi-k2.6");
  o.attention_backend = "TRITON_MLA";
  o.tensor_parallel_size = 8;
  o.compilation_config = R"({"pass_config": {"enable_sp": true, "sp_min_token_num": 64}})";
  auto draft = [&](int k) {
    o.speculative_config = fmt::format(
        R"({{"method": "eagle3", "model": "kimi-k2.6-eagle3-mla", "num_speculative_tokens": {}}})",
        k);
  };
  draft(2);
  EXPECT_EQ(Errors(o),
            "\n  error [cudagraph-capture-sizes] speculative decoding's decode graphs need "
            "multiples of 3 (1 + num_speculative_tokens) and sequence parallelism multiples of 8 "
            "(--tensor-parallel-size), and neither divides the other: the engine refuses the "
            "launch once the weights are loaded ('Can't determine cudagraph shapes that are both "
            "a multiple of 3 ... and 8'); change num_speculative_tokens or turn sequence "
            "parallelism off (pass_config.enable_sp and fuse_gemm_comms)");
  draft(3);  // 4 divides 8; "1 2 4" keeps no size, so nothing rounds
  o.cudagraph_capture_sizes = "1 2 4";
  EXPECT_EQ(Errors(o), "");
  draft(7);
  o.cudagraph_capture_sizes.reset();
  EXPECT_EQ(Errors(o), "");

  auto rounding = [](int64_t largest, int64_t query) {
    return fmt::format(
        "\n  error [cudagraph-capture-sizes] the largest CUDA graph capture size is {} and "
        "speculative decoding's decode graphs need a multiple of {} (1 + num_speculative_tokens): "
        "the engine refuses the launch once the weights are loaded ('No valid cudagraph sizes "
        "after rounding to multiple of {}'); raise --max-cudagraph-capture-size or "
        "--cudagraph-capture-sizes to {} or more, or lower num_speculative_tokens",
        largest, query, query, query);
  };
  // Given sizes: TP 4 keeps 4 of 1, 2, 4, 6.
  o.tensor_parallel_size = 4;
  o.cudagraph_capture_sizes = "1 2 4 6";
  EXPECT_EQ(Errors(o), rounding(4, 8));
  o.cudagraph_capture_sizes = "1 2 4 6 8";
  EXPECT_EQ(Errors(o), "");
  // The default sizes up to 24 (1, 2, 4, 8, 16, 24): TP 16 keeps 16; without sequence
  // parallelism 24 is the largest.
  o.cudagraph_capture_sizes.reset();
  o.tensor_parallel_size = 16;
  o.max_cudagraph_capture_size = 24;
  draft(31);
  EXPECT_EQ(Errors(o), rounding(16, 32));
  o.compilation_config.reset();
  EXPECT_EQ(Errors(o), rounding(24, 32));
  // Multiples of 16 from 256: of 256, 272, ..., 432, TP 64 keeps 256 and 384.
  o.compilation_config = R"({"pass_config": {"enable_sp": true, "sp_min_token_num": 64}})";
  o.tensor_parallel_size = 64;
  o.max_cudagraph_capture_size = 440;
  draft(511);
  EXPECT_EQ(Errors(o), rounding(384, 512));
  // No size kept at all: the engine captures none and rounds nothing.
  o.tensor_parallel_size = 16;
  o.max_cudagraph_capture_size = 12;
  draft(7);
  EXPECT_EQ(Errors(o), "");

  // The largest given must be the largest size kept.
  o.speculative_config.reset();
  o.tensor_parallel_size = 4;
  o.cudagraph_capture_sizes = "1 2 4 6";
  o.max_cudagraph_capture_size = 6;
  EXPECT_EQ(Errors(o),
            "\n  error [cudagraph-capture-sizes] max_cudagraph_capture_size 6 is not the largest "
            "of the capture sizes that fit --max-num-batched-tokens 8192 and are multiples of "
            "--tensor-parallel-size 4, as sequence parallelism keeps them (4): the engine "
            "refuses the pair ('customized max_cudagraph_capture_size(=6) should be consistent "
            "with the max value of cudagraph_capture_sizes(=4)'); give 4 or drop it");
  o.max_cudagraph_capture_size = 4;
  EXPECT_EQ(Errors(o), "");
  o.tensor_parallel_size = 1;  // no sequence parallelism at TP 1
  EXPECT_EQ(Errors(o),
            "\n  error [cudagraph-capture-sizes] max_cudagraph_capture_size 4 is not the largest "
            "of the capture sizes that fit --max-num-batched-tokens 8192 (6): the engine refuses "
            "the pair ('customized max_cudagraph_capture_size(=4) should be consistent with the "
            "max value of cudagraph_capture_sizes(=6)'); give 6 or drop it");

  // Without sp_min_token_num the GPU decides whether sequence parallelism stays on: a warning.
  o.cudagraph_capture_sizes.reset();
  o.max_cudagraph_capture_size.reset();
  o.tensor_parallel_size = 8;
  o.compilation_config = R"({"pass_config": {"fuse_gemm_comms": true}})";
  draft(2);
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "cudagraph-capture-sizes-unchecked"),
            "sequence parallelism (--compilation-config pass_config.enable_sp or "
            "fuse_gemm_comms) without sp_min_token_num at --tensor-parallel-size 8: the engine "
            "sizes its threshold by the GPU or turns sequence parallelism off, which decides "
            "whether its decode graphs need multiples of 3 and 8, so kvtopo did not check the "
            "capture sizes; give --device-capability or pass_config.sp_min_token_num to have "
            "them checked");
  // A stated GPU decides it (get_sequence_parallelism_threshold): a threshold on 9.0 and 10.x
  // for a hidden size of 8,192 or more, none elsewhere. Kimi-K2.6's is 7,168: off everywhere.
  o.device_capability = "10.0";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "cudagraph-capture-sizes-unchecked"), "");
  o = Model(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/tele-flm-52b.json");
  o.tensor_parallel_size = 8;
  o.kv_cache_memory = "8GiB";
  o.compilation_config = R"({"pass_config": {"enable_sp": true}})";
  o.speculative_config = R"({"method": "ngram", "num_speculative_tokens": 2, )"
                         R"("prompt_lookup_max": 3})";
  o.device_capability = "9.0";  // hidden size 8,192: on
  EXPECT_EQ(Errors(o),
            "\n  error [cudagraph-capture-sizes] speculative decoding's decode graphs need "
            "multiples of 3 (1 + num_speculative_tokens) and sequence parallelism multiples of 8 "
            "(--tensor-parallel-size), and neither divides the other: the engine refuses the "
            "launch once the weights are loaded ('Can't determine cudagraph shapes that are both "
            "a multiple of 3 ... and 8'); change num_speculative_tokens or turn sequence "
            "parallelism off (pass_config.enable_sp and fuse_gemm_comms)");
  o.device_capability = "8.9";  // no threshold there: off
  EXPECT_EQ(AcceptedTokens(o), 32768);
}

// The engine's backend validation (validate_configuration at 28be48fa9) over the MLA backends:
// a sparse (top-k indexer) model takes a sparse backend and a dense one a dense backend; each
// backend's cache dtypes (supported_kv_cache_dtypes) and model dtypes (supported_dtypes).
TEST(StartupRefusals, MlaBackendSelection) {
  LaunchOptions o = Model("deepseek-v3.2");
  o.tensor_parallel_size = 8;
  o.attention_backend = "TRITON_MLA";
  EXPECT_EQ(Errors(o),
            "\n  error [backend-sparse] target layer 'model.layers.0.self_attn' (and 60 other "
            "layers) is sparse (top-k indexer) MLA but backend TRITON_MLA serves dense MLA; the "
            "engine refuses the selection ('sparse not supported'); choose a sparse MLA backend "
            "with --attention-backend");
  o.attention_backend = "FLASHMLA_SPARSE";
  EXPECT_EQ(AcceptedTokens(o), 438'656);  // bfloat16 rows, 64-token blocks
  o.kv_cache_dtype = "fp8";               // stored as fp8_ds_mla
  EXPECT_EQ(AcceptedTokens(o), 714'752);
  o.kv_cache_dtype = "fp8_e4m3";
  EXPECT_EQ(Errors(o),
            "\n  error [backend-kv-cache-dtype] target layer 'model.layers.0.self_attn' (and 60 "
            "other layers) has cache dtype fp8_e4m3 but backend FLASHMLA_SPARSE takes only auto, "
            "bfloat16, fp8_ds_mla, fp8; choose another backend with --attention-backend or set "
            "--kv-cache-dtype");
  o.kv_cache_dtype.reset();
  o.dtype = "float16";
  EXPECT_EQ(Errors(o),
            "\n  error [backend-dtype] target layer 'model.layers.0.self_attn' (and 60 other "
            "layers) runs in float16 (--dtype float16) but backend FLASHMLA_SPARSE computes in "
            "bfloat16 only; choose another backend with --attention-backend or set --dtype "
            "bfloat16");
  o.dtype.reset();
  o.decode_context_parallel_size = 8;  // no LSE
  EXPECT_EQ(Errors(o),
            "\n  error [dcp-backend-lse] target layer 'model.layers.0.self_attn' (and 60 other "
            "layers) is DCP-sharded but backend FLASHMLA_SPARSE does not return the softmax LSE "
            "needed to combine shards; choose another backend with --attention-backend or set "
            "--decode-context-parallel-size 1");

  o = Model("kimi-k2.6");
  o.tensor_parallel_size = 8;
  o.attention_backend = "FLASHINFER_MLA_SPARSE";
  EXPECT_EQ(Errors(o),
            "\n  error [backend-sparse] target layer 'model.layers.0.self_attn' (and 60 other "
            "layers) is dense MLA but backend FLASHINFER_MLA_SPARSE serves sparse MLA; the engine "
            "refuses the selection ('non-sparse not supported'); choose a dense MLA backend with "
            "--attention-backend");
  // CUTLASS MLA: 128-token kernel blocks, the LSE for DCP.
  o.attention_backend = "CUTLASS_MLA";
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->groups.at(0).geometry.block_size(), 128);
  EXPECT_EQ(plan->capacity.max_tokens, 488'832);
  o.decode_context_parallel_size = 8;
  EXPECT_EQ(AcceptedTokens(o), 3'910'656);
  o.block_size = 64;
  EXPECT_EQ(Errors(o),
            "\n  error [kernel-block-size] group 0 ('model.layers.0.self_attn'): no kernel block "
            "size that backends CUTLASS_MLA all support divides block size 64; choose a "
            "--block-size that is a multiple of a supported kernel block, or one backend for the "
            "group\n  error [backend-block-size] target layer 'model.layers.0.self_attn' (and 60 "
            "other layers) uses block size 64 which is not a multiple of a CUTLASS_MLA kernel "
            "block size (smallest 128); change --block-size");
  o.block_size.reset();
  o.decode_context_parallel_size.reset();
  // FlashAttention MLA takes no fp8 cache; TokenSpeed MLA only fp8, and no DCP (no LSE).
  o.attention_backend = "FLASH_ATTN_MLA";
  o.kv_cache_dtype = "fp8";
  EXPECT_EQ(Errors(o),
            "\n  error [backend-kv-cache-dtype] target layer 'model.layers.0.self_attn' (and 60 "
            "other layers) has cache dtype fp8 but backend FLASH_ATTN_MLA takes only auto, "
            "float16, bfloat16; choose another backend with --attention-backend or set "
            "--kv-cache-dtype");
  o.attention_backend = "TOKENSPEED_MLA";
  EXPECT_EQ(Errors(o), "");
  o.kv_cache_dtype.reset();
  EXPECT_EQ(Errors(o),
            "\n  error [backend-kv-cache-dtype] target layer 'model.layers.0.self_attn' (and 60 "
            "other layers) has cache dtype auto but backend TOKENSPEED_MLA takes only fp8, "
            "fp8_e4m3; choose another backend with --attention-backend or set --kv-cache-dtype");
}

// Each K/V backend's cache dtypes (supported_kv_cache_dtypes and FlashAttention's
// supports_kv_cache_dtype at 28be48fa9): a named backend that does not take the launch's dtype is
// refused; FlashAttention takes fp8 only as version 3 on a Hopper GPU (a warning, an error once
// --attention-config pins version 2 or 4); unnamed, the engine's selection moves on to the first
// backend that surely takes it.
TEST(StartupRefusals, KvCacheDtypePerBackend) {
  const nlohmann::json llama = testing_configs::Llama31_8B();
  auto planned = [&](const LaunchConfig& c) {
    Result<Plan> plan = testing_configs::PlanWith(llama, c);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return std::string();
    EXPECT_EQ(plan->ErrorLines(), "");
    EXPECT_EQ(DiagnosticMessage(*plan, "backend-kv-cache-dtype-gpu"), "");
    return plan->model.attention_backend;
  };
  const std::string layer = "target layer 'model.layers.0.self_attn' (and 31 other layers)";
  LaunchConfig c;
  const struct {
    const char* backend;
    KvCacheDtype dtype;
    const char* takes;
  } refusals[] = {
      {"TRITON_ATTN", KvCacheDtype::kNvfp4,
       "auto, float16, bfloat16, fp8, fp8_e4m3, fp8_e5m2, int8_per_token_head, "
       "fp8_per_token_head"},
      {"FLASHINFER", KvCacheDtype::kInt8PerTokenHead,
       "auto, float16, bfloat16, fp8, fp8_e4m3, fp8_e5m2, nvfp4"},
      {"FLASH_ATTN", KvCacheDtype::kFp8E5m2,
       "auto, float16, bfloat16 (fp8, fp8_e4m3 only as FlashAttention 3 on a Hopper GPU)"},
  };
  for (const auto& r : refusals) {
    c.cache.attention_backend = r.backend;
    c.cache.kv_cache_dtype = r.dtype;
    EXPECT_EQ(ConfigErrors(llama, c),
              fmt::format("\n  error [backend-kv-cache-dtype] {} has cache dtype {} but backend "
                          "{} takes only {}; choose another backend with --attention-backend or "
                          "set --kv-cache-dtype",
                          layer, KvCacheDtypeName(r.dtype), r.backend, r.takes));
  }
  c.cache.attention_backend = "FLASHINFER";
  c.cache.kv_cache_dtype = KvCacheDtype::kNvfp4;
  EXPECT_EQ(planned(c), "FLASHINFER");
  c.cache.attention_backend = "FLASH_ATTN";

  // fp8 on FlashAttention: by the GPU, then settled by the version.
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  Result<Plan> plan = testing_configs::PlanWith(llama, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->capacity.max_tokens, 524'288);  // 64 KiB a token: 32 GiB
  const std::string by_gpu =
      layer +
      " has cache dtype fp8, which backend FLASH_ATTN takes only as FlashAttention 3 on a Hopper "
      "GPU (compute capability 9.x): elsewhere the engine refuses the selection "
      "('kv_cache_dtype not supported'); FLASHINFER, TRITON_ATTN take it on any GPU; "
      "--device-capability settles it";
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-kv-cache-dtype-gpu"), by_gpu);
  c.cache.flash_attn_version = 3;  // still by the GPU: version 3 runs only on Hopper
  plan = testing_configs::PlanWith(llama, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-kv-cache-dtype-gpu"), by_gpu);
  for (const int version : {2, 4}) {
    c.cache.flash_attn_version = version;
    EXPECT_EQ(ConfigErrors(llama, c),
              fmt::format("\n  error [backend-kv-cache-dtype] {} has cache dtype fp8 but backend "
                          "FLASH_ATTN takes it only as FlashAttention 3 on a Hopper GPU, not under "
                          "FlashAttention {} (--attention-config flash_attn_version {}): the "
                          "engine refuses the selection ('kv_cache_dtype not supported'); choose "
                          "one that takes it (FLASHINFER, TRITON_ATTN) with --attention-backend "
                          "or set --kv-cache-dtype",
                          layer, version, version));
  }

  // Unnamed: the default moves where it surely cannot take the dtype, and stays (silently)
  // where the GPU decides.
  c.cache.attention_backend.clear();
  EXPECT_EQ(planned(c), "FLASHINFER");  // fp8 under FlashAttention 4
  c.cache.flash_attn_version.reset();
  EXPECT_EQ(planned(c), "FLASH_ATTN");
  c.cache.kv_cache_dtype = KvCacheDtype::kNvfp4;
  EXPECT_EQ(planned(c), "FLASHINFER");
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8PerTokenHead;
  EXPECT_EQ(planned(c), "TRITON_ATTN");
  c.cache.kv_cache_dtype = KvCacheDtype::kAuto;
  EXPECT_EQ(planned(c), "FLASH_ATTN");
  // Each layer selects with its own dtype: a kept layer (auto) stays on the model's default.
  c.cache.kv_cache_dtype = KvCacheDtype::kNvfp4;
  c.cache.kv_cache_dtype_skip_layers = {"0"};
  plan = testing_configs::PlanWith(llama, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->model.attention_backend, "FLASHINFER");
  EXPECT_EQ(plan->model.layers.at(0).attention_backend, "FLASH_ATTN");
  EXPECT_EQ(plan->model.layers.at(0).cache_dtype, KvCacheDtype::kAuto);
  EXPECT_EQ(plan->model.layers.at(1).attention_backend, "FLASHINFER");
  c.cache.kv_cache_dtype_skip_layers.clear();

  // With learned sinks, the first backend that surely runs both: gpt-oss's fp8_e5m2 on
  // TRITON_ATTN (FlashInfer's sinks depend on the GPU), its nvfp4 on FLASHINFER (no other takes
  // it).
  LaunchOptions o = Model("gpt-oss-120b");
  o.kv_cache_dtype = "fp8_e5m2";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->model.attention_backend, "TRITON_ATTN");
  EXPECT_EQ(plan->capacity.max_tokens, 1'655'386);
  o.kv_cache_dtype = "nvfp4";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.attention_backend, "FLASHINFER");

  // MTP layers built without the cache config (K-EXAONE's) select with auto too.
  o = LaunchOptions{};
  o.model = std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/k-exaone-236b.json";
  o.tensor_parallel_size = 8;
  o.kv_cache_dtype = "nvfp4";
  o.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 1})";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->model.attention_backend, "FLASHINFER");
  EXPECT_EQ(plan->model.draft_attention_backend, "FLASH_ATTN");

  // MLA: no backend the engine selects takes fp8_e5m2.
  o = Model("kimi-linear-48b");
  o.tensor_parallel_size = 4;
  o.kv_cache_dtype = "fp8_e5m2";
  EXPECT_EQ(Errors(o),
            "\n  error [backend-kv-cache-dtype] target layer 'model.layers.3.self_attn' (and 6 "
            "other layers) has cache dtype fp8_e5m2 but backend TRITON_MLA takes only auto, "
            "float16, bfloat16, fp8, fp8_e4m3; choose another backend with --attention-backend "
            "or set --kv-cache-dtype");

  EXPECT_EQ(FindBackend("FLASH_ATTN")->gpu_dependent_kv_cache_dtypes,
            (std::vector<KvCacheDtype>{KvCacheDtype::kFp8, KvCacheDtype::kFp8E4m3}));
  EXPECT_EQ(FindBackend("FLASH_ATTN_DIFFKV")->gpu_dependent_kv_cache_dtypes,
            (std::vector<KvCacheDtype>{KvCacheDtype::kFp8, KvCacheDtype::kFp8E4m3}));
  EXPECT_TRUE(FindBackend("FLASHINFER")->gpu_dependent_kv_cache_dtypes.empty());
}

// FlashAttention takes heads above 256 (to 512) only where FlashAttention 4 is supported
// (supports_head_size at 28be48fa9): named, a warning; unnamed, the engine's pick by the GPU (kept
// silently); above 512 the selection moves on to Triton attention, which takes any head from 32.
TEST(StartupRefusals, HeadSizesByGpu) {
  nlohmann::json llama = testing_configs::Llama31_8B();
  llama["head_dim"] = 320;
  auto planned = [&](const LaunchConfig& c) {
    Result<Plan> plan = testing_configs::PlanWith(llama, c);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return std::string();
    EXPECT_EQ(plan->ErrorLines(), "");
    return plan->model.attention_backend + " " + DiagnosticMessage(*plan, "backend-head-size-gpu");
  };
  LaunchConfig c;
  c.cache.max_model_len = 32768;
  EXPECT_EQ(planned(c), "FLASH_ATTN ");
  c.cache.attention_backend = "FLASH_ATTN";
  EXPECT_EQ(planned(c),
            "FLASH_ATTN target layer 'model.layers.0.self_attn' (and 31 other layers) has head "
            "size 320, which backend FLASH_ATTN takes only where FlashAttention 4 is supported "
            "(its kernels on a Hopper or Blackwell GPU): elsewhere the engine refuses the "
            "selection ('head_size not supported'); TRITON_ATTN, FLEX_ATTENTION take it on any "
            "GPU; --device-capability settles it");
  llama["head_dim"] = 640;
  EXPECT_EQ(ConfigErrors(llama, c),
            "\n  error [backend-head-size] target layer 'model.layers.0.self_attn' (and 31 other "
            "layers) has head size 640 but backend FLASH_ATTN supports only multiples of 8 up to "
            "256 (512 where FlashAttention 4 is supported); choose another backend with "
            "--attention-backend");
  c.cache.attention_backend.clear();
  EXPECT_EQ(planned(c), "TRITON_ATTN ");
}

// FlashInfer runs sinks, and one window per KV cache group, only through TRT-LLM attention,
// which its metadata builder never runs for decodes under DCP (flashinfer.py at 28be48fa9): a
// sinks model fails its first build, as does a group whose layers' windows differ.
TEST(StartupRefusals, FlashInferUnderDcp) {
  LaunchOptions o = Model("gpt-oss-120b");
  o.tensor_parallel_size = 16;
  o.decode_context_parallel_size = 2;
  o.disable_sliding_window = true;  // windows are not DCP-sharded
  o.attention_backend = "FLASHINFER";
  EXPECT_EQ(Errors(o),
            "\n  error [backend-sinks] target layer 'model.layers.0.self_attn' (and 35 other "
            "layers) has learned attention sinks but backend FLASHINFER has none under decode "
            "context parallelism (--decode-context-parallel-size 2), where it runs no TRT-LLM "
            "attention: its metadata builder raises NotImplementedError ('FlashInfer backend "
            "currently does not support attention sinks') at the first forward, once the weights "
            "are loaded; choose another backend with --attention-backend");
  o.attention_backend = "TRITON_ATTN";  // no LSE: refused under DCP for its own reason
  EXPECT_EQ(Errors(o),
            "\n  error [dcp-backend-lse] target layer 'model.layers.0.self_attn' (and 35 other "
            "layers) is DCP-sharded but backend TRITON_ATTN does not return the softmax LSE "
            "needed to combine shards; choose another backend with --attention-backend or set "
            "--decode-context-parallel-size 1");
  o.attention_backend = "FLASH_ATTN";
  EXPECT_EQ(AcceptedTokens(o), 7'456'512);
  o.decode_context_parallel_size.reset();
  o.tensor_parallel_size = 8;
  o.attention_backend = "FLASHINFER";  // TRT-LLM attention by the GPU
  EXPECT_EQ(Errors(o), "");

  LaunchConfig c;
  c.parallel.tensor_parallel_size = 16;
  c.parallel.decode_context_parallel_size = 2;
  c.disable_hybrid_kv_cache_manager = true;
  c.cache.attention_backend = "FLASHINFER";
  Result<Plan> plan = testing_configs::PlanWith(CorpusConfig("gemma-2-9b"), c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [backend-one-window] the hybrid KV cache manager is off by "
            "--disable-hybrid-kv-cache-manager, so layer 'model.layers.0.self_attn' (sliding "
            "window 4096) and layer 'model.layers.1.self_attn' (full attention) share one KV "
            "cache group on backend FLASHINFER, whose metadata builder takes one window for a "
            "group's layers unless FlashInfer's TRT-LLM attention runs every prefill and decode "
            "(--decode-context-parallel-size 2 turns it off): so the engine raises ('Window left "
            "is not the same for all layers') at its first forward, once the weights are loaded; "
            "keep the hybrid KV cache manager on, add --disable-sliding-window, or choose another "
            "backend with --attention-backend");
}

// EngineArgs.create_engine_config at 28be48fa9: LoRA adapters beside a speculative config need a
// step that holds every sequence's verified tokens, max_num_seqs x (num_speculative_tokens + 1).
TEST(StartupRefusals, LoraWithSpeculativeDecoding) {
  LaunchOptions o;
  o.model = std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/llama-3.1-8b.json";
  o.speculative_config = R"({"method": "ngram", "num_speculative_tokens": 7})";
  o.max_num_batched_tokens = 2047;
  EXPECT_EQ(Errors(o), "");  // without LoRA
  o.enable_lora = true;
  EXPECT_EQ(Errors(o),
            "\n  error [lora-speculative-batched-tokens] --enable-lora with a speculative config "
            "needs --max-num-batched-tokens of at least --max-num-seqs 256 x "
            "(num_speculative_tokens 7 + 1) = 2048, got 2047: the engine refuses the launch "
            "('Consider increasing max_num_batched_tokens or decreasing num_speculative_tokens'); "
            "raise --max-num-batched-tokens, or lower --max-num-seqs or num_speculative_tokens");
  o.max_num_batched_tokens = 2048;
  EXPECT_EQ(Errors(o), "");
  o.max_num_batched_tokens.reset();  // the default 8192
  o.max_num_seqs = 1025;
  EXPECT_EQ(Errors(o),
            "\n  error [lora-speculative-batched-tokens] --enable-lora with a speculative config "
            "needs --max-num-batched-tokens of at least --max-num-seqs 1025 x "
            "(num_speculative_tokens 7 + 1) = 8200, got 8192: the engine refuses the launch "
            "('Consider increasing max_num_batched_tokens or decreasing num_speculative_tokens'); "
            "raise --max-num-batched-tokens, or lower --max-num-seqs or num_speculative_tokens");
  o.speculative_config.reset();
  EXPECT_EQ(Errors(o), "");
}

// MLA backends that take only some dimensions of the text config (supports_combination at
// 28be48fa9): FlashInfer MLA's qk_nope_head_dim in 64, 128, 192 (128, 192 sparse), TokenSpeed
// MLA's DeepSeek-R1 shape; read as the config states them, else as its config class defaults them.
TEST(StartupRefusals, MlaBackendConfigDims) {
  LaunchOptions o = Model("glm-5.3-flash");
  o.tensor_parallel_size = 8;
  o.attention_backend = "FLASHINFER_MLA_SPARSE";
  o.kv_cache_dtype = "fp8";
  EXPECT_EQ(Errors(o),
            "\n  error [backend-config-dims] target MLA layers run on backend "
            "FLASHINFER_MLA_SPARSE, which takes qk_nope_head_dim in [128, 192] only, but the "
            "target model's is 256 (field 'text_config.qk_nope_head_dim' of "
            "'profiles/glm-5.3-flash.json'): the engine refuses the selection; choose another "
            "backend with --attention-backend\n  error [backend-head-size] target layer "
            "'model.layers.3.self_attn' (and 10 other layers) has head size 512 but backend "
            "FLASHINFER_MLA_SPARSE supports only 576; choose another backend with "
            "--attention-backend");
  o = Model("glm-5.1");  // 192
  o.tensor_parallel_size = 8;
  o.attention_backend = "FLASHINFER_MLA_SPARSE";
  o.kv_cache_dtype = "fp8";
  EXPECT_EQ(Errors(o), "");

  LaunchConfig c;
  c.parallel.tensor_parallel_size = 8;
  c.cache.attention_backend = "FLASHINFER_MLA";
  nlohmann::json kimi = ProfileConfig("kimi-k2.6");
  EXPECT_EQ(ConfigErrors(kimi, c), "");  // 128
  kimi["text_config"]["qk_nope_head_dim"] = 96;
  EXPECT_EQ(ConfigErrors(kimi, c),
            "\n  error [backend-config-dims] target MLA layers run on backend FLASHINFER_MLA, "
            "which takes qk_nope_head_dim in [64, 128, 192] only, but the target model's is 96 "
            "(field 'text_config.qk_nope_head_dim' of 'config.json'): the engine refuses the "
            "selection; choose another backend with --attention-backend");
  // Python's `in` compares 128.0 equal to 128, and no string equal to an integer.
  kimi["text_config"]["qk_nope_head_dim"] = 128.0;
  EXPECT_EQ(ConfigErrors(kimi, c), "");
  kimi["text_config"]["qk_nope_head_dim"] = "128";
  EXPECT_EQ(ConfigErrors(kimi, c),
            "\n  error [backend-config-dims] target MLA layers run on backend FLASHINFER_MLA, "
            "which takes qk_nope_head_dim in [64, 128, 192] only, but the target model's is "
            "'128' (field 'text_config.qk_nope_head_dim' of 'config.json'): the engine refuses the "
            "selection; choose another backend with --attention-backend");
  // Unstated: Kimi-K2.5's text config is a DeepseekV3Config (128).
  kimi["text_config"].erase("qk_nope_head_dim");
  EXPECT_EQ(ConfigErrors(kimi, c), "");

  // TokenSpeed MLA: 128, 64 and 128 only. DeepseekV3Config's v_head_dim default is 128; a model
  // type whose class kvtopo does not know leaves the dimension unchecked, with a warning.
  c.cache.attention_backend = "TOKENSPEED_MLA";
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  kimi["text_config"].erase("v_head_dim");
  EXPECT_EQ(ConfigErrors(kimi, c), "");
  kimi["text_config"]["qk_rope_head_dim"] = 32;
  EXPECT_EQ(ConfigErrors(kimi, c),
            "\n  error [backend-config-dims] target MLA layers run on backend TOKENSPEED_MLA, "
            "which takes qk_rope_head_dim in [64] only, but the target model's is 32 (field "
            "'text_config.qk_rope_head_dim' of 'config.json'): the engine refuses the selection; "
            "choose another backend with --attention-backend\n  error [backend-head-size] target "
            "layer 'model.layers.0.self_attn' (and 60 other layers) has head size 544 but backend "
            "TOKENSPEED_MLA supports only 320, 576; choose another backend with "
            "--attention-backend");
  kimi["text_config"]["qk_rope_head_dim"] = 64;
  kimi["text_config"]["model_type"] = "my_mla";
  Result<Plan> plan = testing_configs::PlanWith(kimi, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-config-dims-unchecked"),
            "backend TOKENSPEED_MLA (target MLA layers) takes v_head_dim in [128] only, but "
            "'config.json' states none and kvtopo does not know its config class's default: not "
            "checked");

  // KimiLinearConfig defaults the dimensions to None.
  c = LaunchConfig{};
  c.parallel.tensor_parallel_size = 4;
  c.cache.attention_backend = "FLASHINFER_MLA";
  nlohmann::json linear = ProfileConfig("kimi-linear-48b");
  EXPECT_EQ(ConfigErrors(linear, c), "");
  linear.erase("qk_nope_head_dim");
  EXPECT_EQ(ConfigErrors(linear, c),
            "\n  error [backend-config-dims] target MLA layers run on backend FLASHINFER_MLA, "
            "which takes qk_nope_head_dim in [64, 128, 192] only, but the target model's is None "
            "(the KimiLinearConfig default; 'config.json' states no qk_nope_head_dim): the engine "
            "refuses the selection; choose another backend with --attention-backend");
}

// CUTLASS MLA's decode kernel takes at most 128 query heads (forward_mqa's assertion): the
// rank's heads, gathered over DCP when the cache is sharded.
TEST(StartupRefusals, CutlassMlaDecodeHeads) {
  nlohmann::json kimi = ProfileConfig("kimi-k2.6");
  kimi["text_config"]["num_attention_heads"] = 256;
  LaunchConfig c;
  c.cache.attention_backend = "CUTLASS_MLA";
  c.parallel.tensor_parallel_size = 1;
  EXPECT_EQ(ConfigErrors(kimi, c),
            "\n  error [backend-decode-heads] target layer 'model.layers.0.self_attn' (and 60 "
            "other layers) runs on CUTLASS_MLA, whose decode kernel takes at most 128 query "
            "heads, but it gets 256 heads / --tensor-parallel-size 1 = 256; raise "
            "--tensor-parallel-size or choose another backend with --attention-backend");
  c.parallel.tensor_parallel_size = 2;
  EXPECT_EQ(ConfigErrors(kimi, c), "");
  c.parallel.decode_context_parallel_size = 2;
  EXPECT_EQ(ConfigErrors(kimi, c),
            "\n  error [backend-decode-heads] target layer 'model.layers.0.self_attn' (and 60 "
            "other layers) runs on CUTLASS_MLA, whose decode kernel takes at most 128 query "
            "heads, but under DCP it gets 128 heads per rank x DCP 2 = 256; raise "
            "--tensor-parallel-size, lower --decode-context-parallel-size or choose another "
            "backend with --attention-backend");
  c.parallel.tensor_parallel_size = 4;
  EXPECT_EQ(ConfigErrors(kimi, c), "");
  c.cache.attention_backend = "TRITON_MLA";  // no such limit
  c.parallel.tensor_parallel_size = 1;
  c.parallel.decode_context_parallel_size = 1;
  EXPECT_EQ(ConfigErrors(kimi, c), "");
}

// VLLM_BATCH_INVARIANT (read as bool(int(value))): every attention layer's backend must support
// batch invariance (validate_configuration), and TRITON_MLA's layers turn prefix caching off.
TEST(StartupRefusals, BatchInvariance) {
  auto with_env = [](LaunchOptions o, const char* value) {
    const Status s = ApplyLaunchEnvironment(o, [&](const char* asked) -> const char* {
      return std::string_view(asked) == "VLLM_BATCH_INVARIANT" ? value : nullptr;
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return o;
  };
  LaunchOptions kimi = Model("kimi-k2.6");
  kimi.tensor_parallel_size = 8;
  const std::string b12x =
      "\n  error [backend-batch-invariant] target layer 'model.layers.0.self_attn' (and 60 other "
      "layers) runs on backend B12X_MLA, which has no batch-invariant kernels, but "
      "VLLM_BATCH_INVARIANT asks every attention backend for them: the engine refuses the "
      "selection ('batch invariance not supported'); choose one that has them (TRITON_MLA, "
      "FLASH_ATTN_MLA) with --attention-backend or unset VLLM_BATCH_INVARIANT";
  EXPECT_EQ(Errors(with_env(kimi, "1")), b12x);
  EXPECT_EQ(Errors(with_env(kimi, " -2 ")), b12x);  // any nonzero integer
  EXPECT_EQ(Errors(with_env(kimi, "0")), "");
  LaunchOptions o = kimi;
  const Status text = ApplyLaunchEnvironment(o, [](const char* asked) -> const char* {
    return std::string_view(asked) == "VLLM_BATCH_INVARIANT" ? "true" : nullptr;
  });
  EXPECT_EQ(text.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.message(),
            "VLLM_BATCH_INVARIANT is 'true', which is not an integer: the engine reads it with "
            "int() and fails at startup; set it to 0 or 1");

  // TRITON_MLA runs batch-invariant, and its layers turn prefix caching off.
  o = with_env(kimi, "1");
  o.attention_backend = "TRITON_MLA";
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  auto warning = [](const Plan& p) {
    return DiagnosticMessage(p, "batch-invariant-prefix-caching");
  };
  EXPECT_EQ(warning(*plan),
            "VLLM_BATCH_INVARIANT with prefix caching: the engine's TRITON_MLA layers turn prefix "
            "caching off as they are built ('Disabling prefix caching ... with batch "
            "invariance'), in the process that builds them; with one GPU per engine (tensor x "
            "pipeline parallel 1: the uniprocess executor) that process also runs the scheduler, "
            "which then caches no prefixes, while with more the scheduler keeps caching them. "
            "kvtopo plans prefix caching on; pass --no-enable-prefix-caching to plan without it");
  o.enable_prefix_caching = false;
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(warning(*plan), "");
  o.enable_prefix_caching.reset();
  o.attention_backend = "FLASH_ATTN_MLA";  // batch-invariant, keeps prefix caching
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(warning(*plan), "");

  // No sparse MLA backend runs batch-invariant.
  o = with_env(Model("deepseek-v3.2"), "1");
  o.tensor_parallel_size = 8;
  EXPECT_EQ(Errors(o),
            "\n  error [backend-batch-invariant] target layer 'model.layers.0.self_attn' (and 60 "
            "other layers) runs on backend B12X_MLA_SPARSE, which has no batch-invariant kernels, "
            "but VLLM_BATCH_INVARIANT asks every attention backend for them: the engine refuses "
            "the selection ('batch invariance not supported'); no sparse MLA backend has them, so "
            "unset VLLM_BATCH_INVARIANT");
  // K/V attention: FlashAttention's default runs batch-invariant; FlashInfer does not.
  o = Model("qwen3-next-80b");
  o.batch_invariant = true;  // the flag
  EXPECT_EQ(Errors(o), "");
  o.attention_backend = "FLASHINFER";
  EXPECT_EQ(Errors(o),
            "\n  error [backend-batch-invariant] target layer 'model.layers.3.self_attn' (and 11 "
            "other layers) runs on backend FLASHINFER, which has no batch-invariant kernels, but "
            "VLLM_BATCH_INVARIANT asks every attention backend for them: the engine refuses the "
            "selection ('batch invariance not supported'); choose one that has them (FLASH_ATTN, "
            "FLASH_ATTN_DIFFKV, TRITON_ATTN, FLEX_ATTENTION) with --attention-backend or unset "
            "VLLM_BATCH_INVARIANT");
}

// A multimodal prefix LM (the engine's is_mm_prefix_lm: the config's key, else model types
// gemma3, paligemma, ...) attends bidirectionally over its multimodal positions, which only
// Triton attention serves among the CUDA backends: the engine's selection picks it, and refuses
// a named backend without it.
TEST(StartupRefusals, MultimodalPrefixLm) {
  auto backend = [](const nlohmann::json& config, const LaunchConfig& c) {
    Result<Plan> plan = testing_configs::PlanWith(config, c);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return std::string();
    EXPECT_EQ(plan->ErrorLines(), "");
    return plan->model.attention_backend;
  };
  LaunchConfig c;
  nlohmann::json gemma = CorpusConfig("gemma-3-27b-it");
  EXPECT_EQ(backend(gemma, c), "TRITON_ATTN");
  EXPECT_EQ(backend(CorpusConfig("paligemma-3b"), c), "TRITON_ATTN");
  gemma["is_mm_prefix_lm"] = false;  // the config's key wins over the model type
  EXPECT_EQ(backend(gemma, c), "FLASH_ATTN");
  gemma["is_mm_prefix_lm"] = 1;
  EXPECT_EQ(backend(gemma, c), "TRITON_ATTN");
  c.cache.attention_backend = "FLASH_ATTN";
  EXPECT_EQ(ConfigErrors(gemma, c),
            "\n  error [backend-mm-prefix] target layer 'model.layers.0.self_attn' (and 61 other "
            "layers) belongs to 'config.json', a multimodal prefix LM (the engine's "
            "is_mm_prefix_lm: bidirectional attention over its multimodal positions), but backend "
            "FLASH_ATTN does not serve one: the engine refuses the selection ('partial multimodal "
            "token full attention not supported'); choose one that does (TRITON_ATTN, "
            "FLEX_ATTENTION) with --attention-backend");
  // Triton attention returns no LSE, so such a model cannot run DCP on it.
  c.cache.attention_backend.clear();
  c.parallel.tensor_parallel_size = 32;
  c.parallel.decode_context_parallel_size = 2;
  EXPECT_EQ(ConfigErrors(gemma, c),
            "\n  error [sliding-window-dcp] sliding_window layer 'model.layers.0.self_attn' is "
            "DCP-sharded; DCP supports windowed KV only when it is replicated: replicate it or "
            "set --decode-context-parallel-size 1\n  error [dcp-backend-lse] target layer "
            "'model.layers.0.self_attn' (and 61 other layers) is DCP-sharded but backend "
            "TRITON_ATTN does not return the softmax LSE needed to combine shards; choose another "
            "backend with --attention-backend or set --decode-context-parallel-size 1");
}

// Decoder cross-attention (Whisper's encoder_attn layers) selects its backend with attention
// type encoder_decoder, which FlashAttention and Triton attention run and FlashInfer and
// TurboQuant do not (supports_attn_type).
TEST(StartupRefusals, CrossAttentionBackend) {
  const nlohmann::json whisper = CorpusConfig("whisper-large-v3");
  LaunchConfig c;
  EXPECT_EQ(ConfigErrors(whisper, c), "");
  c.cache.attention_backend = "TRITON_ATTN";
  EXPECT_EQ(ConfigErrors(whisper, c), "");
  c.cache.attention_backend = "FLASHINFER";
  EXPECT_EQ(
      ConfigErrors(whisper, c),
      "\n  error [backend-cross-attention] target layer 'model.decoder.layers.0.encoder_attn' "
      "(and 31 other layers) is decoder cross-attention over the encoder's output, which "
      "backend FLASHINFER does not run: the engine refuses the selection ('attention type "
      "encoder_decoder not supported'); choose one that does (FLASH_ATTN, FLASH_ATTN_DIFFKV, "
      "TRITON_ATTN) with --attention-backend");
  c.cache.attention_backend.clear();

  // Unnamed, the cross-attention layers select on their own: on 10.x the engine's first pick,
  // FLASHINFER, does not run them, so they run the next of its order that does. Each group's
  // backends, then the errors.
  const auto backends = [&](const LaunchConfig& launch) {
    const Result<Plan> plan = testing_configs::PlanWith(whisper, launch);
    std::vector<std::string> out;
    if (!plan.ok()) return std::vector<std::string>{plan.status().ToString()};
    for (const PlannedGroup& g : plan->groups) {
      out.push_back(fmt::format("{} {}", SpecKindName(g.spec), fmt::join(g.backends, ",")));
    }
    out.push_back(plan->ErrorLines());
    return out;
  };
  using Groups = std::vector<std::string>;
  c.cache.device_capability = DeviceCapability{10, 0};
  EXPECT_EQ(backends(c), (Groups{"full_attention FLASHINFER", "cross_attention FLASH_ATTN", ""}));
  Result<Plan> plan = testing_configs::PlanWith(whisper, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 10873);
  EXPECT_EQ(testing_configs::DiagnosticMessage(*plan, "backend-cross-attention-pick"),
            "the 32 cross-attention layers of 'config.json' run on FLASH_ATTN, the engine's pick "
            "for attention type encoder_decoder on compute capability 10.0 "
            "(--device-capability): FLASHINFER, the other layers' backend, does not run "
            "cross-attention");
  // An fp8 cache: FlashAttention takes it only as version 3 on 9.x; Triton attention runs them.
  c.cache.kv_cache_dtype = KvCacheDtype::kFp8;
  EXPECT_EQ(backends(c), (Groups{"full_attention FLASHINFER", "cross_attention TRITON_ATTN", ""}));
  // On 7.5 no FlashAttention runs: Triton attention again.
  c.cache.kv_cache_dtype = KvCacheDtype::kAuto;
  c.cache.device_capability = DeviceCapability{7, 5};
  EXPECT_EQ(backends(c), (Groups{"full_attention FLASHINFER", "cross_attention TRITON_ATTN", ""}));
  // On 9.x FLASH_ATTN is the first pick and runs both.
  c.cache.device_capability = DeviceCapability{9, 0};
  EXPECT_EQ(backends(c), (Groups{"full_attention FLASH_ATTN", "cross_attention FLASH_ATTN", ""}));
  plan = testing_configs::PlanWith(whisper, c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(testing_configs::DiagnosticMessage(*plan, "backend-cross-attention-pick"), "");
  // No backend that runs cross-attention takes an nvfp4 cache: the selection for the
  // cross-attention layers raises, whatever the other layers run (FLASHINFER).
  c.cache.device_capability.reset();
  c.cache.kv_cache_dtype = KvCacheDtype::kNvfp4;
  EXPECT_EQ(ConfigErrors(whisper, c),
            "\n  error [backend-none-valid] the 32 cross-attention layers of 'config.json' select "
            "their own backend (attention type encoder_decoder), and none the engine tries takes "
            "them: the backends that run cross-attention (FLASH_ATTN, FLASH_ATTN_DIFFKV, "
            "TRITON_ATTN) take no nvfp4 cache; the engine raises ('No valid attention backend "
            "found') as it builds the model; set --kv-cache-dtype to one they take");
  c.cache.kv_cache_dtype = KvCacheDtype::kTurboquant4bitNc;
  EXPECT_EQ(ConfigErrors(whisper, c),
            "\n  error [backend-cross-attention] target layer "
            "'model.decoder.layers.2.encoder_attn' (and 29 other layers) is decoder "
            "cross-attention over the encoder's output, which backend TURBOQUANT does not run: "
            "the engine refuses the selection ('attention type encoder_decoder not supported'); "
            "TurboQuant caches (turboquant_4bit_nc) run only on it, so choose another cache "
            "dtype\n  error [page-unification] layer 'model.decoder.layers.2.self_attn': page "
            "size 22400 B is not divisible by the maximum page size 81920 B (layer "
            "'model.decoder.layers.0.self_attn') and cannot be padded: padding needs a non-MLA "
            "attention backend that indexes pages by block stride; change --block-size, "
            "--kv-cache-dtype or the layer's attention backend");
}

// FlexAttention (flex_attention.py at 28be48fa9): any head size, blocks multiple of 16, float32
// models, unquantized caches only, no LSE, decoder attention only, a multimodal prefix and batch
// invariance.
TEST(StartupRefusals, FlexAttentionBackend) {
  LaunchOptions o = Model("qwen3-next-80b");
  o.attention_backend = "flex_attention";  // any case
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->model.attention_backend, "FLEX_ATTENTION");
  EXPECT_EQ(plan->capacity.max_tokens, 1'389'092);  // as FLASH_ATTN: 16-token kernel blocks
  o.kv_cache_dtype = "fp8";
  EXPECT_EQ(Errors(o),
            "\n  error [backend-kv-cache-dtype] target layer 'model.layers.3.self_attn' (and 11 "
            "other layers) has cache dtype fp8 but backend FLEX_ATTENTION takes only auto, "
            "float16, bfloat16; choose another backend with --attention-backend or set "
            "--kv-cache-dtype");
  o.kv_cache_dtype.reset();
  o.tensor_parallel_size = 4;
  o.decode_context_parallel_size = 2;
  EXPECT_EQ(Errors(o),
            "\n  error [dcp-backend-lse] target layer 'model.layers.3.self_attn' (and 11 other "
            "layers) is DCP-sharded but backend FLEX_ATTENTION does not return the softmax LSE "
            "needed to combine shards; choose another backend with --attention-backend or set "
            "--decode-context-parallel-size 1");

  LaunchConfig c;
  c.cache.attention_backend = "FLEX_ATTENTION";
  EXPECT_EQ(ConfigErrors(CorpusConfig("gemma-3-27b-it"), c), "");  // a multimodal prefix LM
}

// Layer features FlexAttention's impl raises NotImplementedError on as the engine builds a layer
// (flex_attention.py at 28be48fa9: ALiBi slopes, a logits soft cap, KV sharing), and those
// FlashInfer's and TurboQuant's impls take and never apply (ALiBi; TurboQuant also the cap).
TEST(StartupRefusals, ImplLayerFeatures) {
  LaunchConfig flex;
  flex.cache.attention_backend = "FLEX_ATTENTION";
  const auto refused = [](std::string_view code, int64_t others, std::string_view what,
                          std::string_view source, std::string_view choices) {
    return fmt::format(
        "\n  error [{}] target layer 'model.layers.0.self_attn' (and {} other layers) has {} ({}) "
        "but backend FLEX_ATTENTION takes none: its impl raises NotImplementedError as the engine "
        "builds the layer; choose one that does ({}) with --attention-backend",
        code, others, what, source, choices);
  };
  const auto alibi = [&](int64_t others, std::string_view source) {
    return refused("backend-alibi", others, "ALiBi position biases", source,
                   "FLASH_ATTN, FLASH_ATTN_DIFFKV, TRITON_ATTN");
  };
  const auto cap = [&](int64_t others, std::string_view source) {
    return refused("backend-logits-soft-cap", others, "a logits soft cap", source,
                   "FLASH_ATTN, FLASH_ATTN_DIFFKV, FLASHINFER, TRITON_ATTN");
  };

  // ALiBi: BLOOM and MPT always, Baichuan's BaichuanForCausalLM off hidden size 4096, Falcon with
  // `alibi`, JAIS with position_embedding_type "alibi".
  EXPECT_EQ(ConfigErrors(CorpusConfig("bloom-560m"), flex),
            alibi(23, "BLOOM's attention, which always runs ALiBi"));
  const nlohmann::json mpt = CorpusConfig("mpt-7b");
  EXPECT_EQ(ConfigErrors(mpt, flex), alibi(31, "MPT's attention, which runs ALiBi only"));
  EXPECT_EQ(ConfigErrors(CorpusConfig("baichuan2-13b"), flex),
            alibi(39,
                  "BaichuanForCausalLM at hidden_size 5120 in 'config.json', RoPE only at "
                  "4096"));
  EXPECT_EQ(ConfigErrors(CorpusConfig("baichuan2-7b"), flex), "");
  nlohmann::json falcon = CorpusConfig("falcon-7b");
  EXPECT_EQ(ConfigErrors(falcon, flex), "");  // alibi false: RoPE
  falcon["alibi"] = true;
  EXPECT_EQ(ConfigErrors(falcon, flex), alibi(31, "alibi true in 'config.json'"));
  nlohmann::json jais = CorpusConfig("jais-13b");
  EXPECT_EQ(ConfigErrors(jais, flex),
            alibi(39, "position_embedding_type \"alibi\" in 'config.json'"));
  jais.erase("position_embedding_type");  // JAISConfig's "learned"
  EXPECT_EQ(ConfigErrors(jais, flex), "");
  // FlashInfer takes the slopes and never applies them: the engine runs the model without.
  LaunchConfig flashinfer;
  flashinfer.cache.attention_backend = "FLASHINFER";
  Result<Plan> plan = testing_configs::PlanWith(mpt, flashinfer);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-alibi-ignored"),
            "target layer 'model.layers.0.self_attn' (and 31 other layers) has ALiBi position "
            "biases (MPT's attention, which runs ALiBi only) but backend FLASHINFER takes them and "
            "never applies them: the engine builds the layer and runs it without, so its outputs "
            "are not the model's; choose one that does (FLASH_ATTN, FLASH_ATTN_DIFFKV, "
            "TRITON_ATTN) with --attention-backend");
  plan = testing_configs::PlanWith(mpt, LaunchConfig{});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.attention_backend, "FLASH_ATTN");
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-alibi-ignored"), "");

  // Logits soft caps: Gemma 2's attn_logit_softcapping (Gemma2Config: 50.0; null: none), Grok's
  // max(attn_logit_softcapping, 0.0) (30.0 when absent), and the Transformers backend's
  // getattr(text_config, "attn_logit_softcapping", None).
  nlohmann::json gemma2 = CorpusConfig("gemma-2-9b");
  EXPECT_EQ(ConfigErrors(gemma2, flex), cap(41, "attn_logit_softcapping 50.0 in 'config.json'"));
  gemma2.erase("attn_logit_softcapping");
  const std::string gemma2_default =
      cap(41, "the Gemma2Config default attn_logit_softcapping 50.0; 'config.json' states none");
  EXPECT_EQ(ConfigErrors(gemma2, flex), gemma2_default);
  LaunchConfig flex_transformers = flex;
  flex_transformers.model_impl = "transformers";
  EXPECT_EQ(ConfigErrors(gemma2, flex_transformers), gemma2_default);
  gemma2["attn_logit_softcapping"] = nullptr;
  EXPECT_EQ(ConfigErrors(gemma2, flex), "");
  EXPECT_EQ(ConfigErrors(gemma2, flex_transformers), "");
  gemma2["attn_logit_softcapping"] = "50";
  EXPECT_EQ(testing_configs::PlanWith(gemma2, flex).status().message(),
            "config.json 'config.json': field 'attn_logit_softcapping' is neither a number nor "
            "null: the engine's attention takes it as the logits soft cap");
  nlohmann::json grok = CorpusConfig("grok-1");
  LaunchConfig grok_flex = flex;
  grok_flex.parallel.tensor_parallel_size = 8;
  EXPECT_EQ(ConfigErrors(grok, grok_flex),
            cap(63,
                "the engine's Grok default attn_logit_softcapping 30.0; 'config.json' states "
                "none"));
  grok["attn_logit_softcapping"] = 0;  // max(0, 0.0) is a cap: not None
  EXPECT_EQ(ConfigErrors(grok, grok_flex),
            cap(63, "attn_logit_softcapping 0 in 'config.json', taken as max(0, 0.0)"));
  grok["attn_logit_softcapping"] = nullptr;
  EXPECT_EQ(testing_configs::PlanWith(grok, grok_flex).status().message(),
            "config.json 'config.json': field 'attn_logit_softcapping' is null: the engine's Grok "
            "attention takes max(attn_logit_softcapping, 0.0) as its logits soft cap, which fails "
            "on it; state a number");
  // TurboQuant's layers take the cap and never apply it.
  grok.erase("attn_logit_softcapping");
  LaunchConfig turboquant;
  turboquant.parallel.tensor_parallel_size = 8;
  turboquant.cache.kv_cache_dtype = KvCacheDtype::kTurboquantK8v4;
  plan = testing_configs::PlanWith(grok, turboquant);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(DiagnosticMessage(*plan, "backend-logits-soft-cap-ignored"),
            "target layer 'model.layers.2.self_attn' (and 59 other layers) has a logits soft cap "
            "(the engine's Grok default attn_logit_softcapping 30.0; 'config.json' states none) "
            "but backend TURBOQUANT takes it and never applies it: the engine builds the layer "
            "and runs it without, so its outputs are not the model's; TurboQuant caches "
            "(turboquant_k8v4) run only on it, so choose another cache dtype");

  // KV sharing: Gemma 3n's and Gemma 4's last num_kv_shared_layers layers.
  const auto sharing = [](std::string_view source) {
    return fmt::format(
        "\n  error [backend-kv-sharing] target model 'config.json' shares KV caches across layers "
        "({}) but backend FLEX_ATTENTION does not: its impl raises NotImplementedError as the "
        "engine builds the sharing layers; choose one that does (FLASH_ATTN, FLASH_ATTN_DIFFKV, "
        "FLASHINFER, TRITON_ATTN) with --attention-backend",
        source);
  };
  nlohmann::json gemma3n = CorpusConfig("gemma-3n-e4b");
  EXPECT_EQ(ConfigErrors(gemma3n, flex),
            sharing("text_config.num_kv_shared_layers 15 in 'config.json': 15 layers from layer "
                    "20 read an earlier layer's cache"));
  gemma3n["text_config"].erase("num_kv_shared_layers");
  EXPECT_EQ(ConfigErrors(gemma3n, flex),
            sharing("the Gemma3nTextConfig default text_config.num_kv_shared_layers 15; "
                    "'config.json' states none: 15 layers from layer 20 read an earlier layer's "
                    "cache"));
  gemma3n["text_config"]["num_kv_shared_layers"] = 0;
  EXPECT_EQ(ConfigErrors(gemma3n, flex), "");
  EXPECT_EQ(ConfigErrors(CorpusConfig("gemma-4-e4b"), flex),
            sharing("text_config.num_kv_shared_layers 18 in 'config.json': 18 layers from layer "
                    "24 read an earlier layer's cache"));
  LaunchConfig short_flex = flex;
  short_flex.cache.max_model_len = 65536;
  EXPECT_EQ(ConfigErrors(CorpusConfig("gemma-4-31b"), short_flex), "");  // no sharing
}

// --attention-config settles backends' GPU-dependent answers: FlashAttention pinned to version 2
// (flash_attn_version 2) has no sinks nor per-head scales, FlashInfer without TRT-LLM attention
// (use_trtllm_attention false) no sinks and one window per group. Unnamed, the engine's selection
// moves on to a backend that runs the sinks.
TEST(StartupRefusals, AttentionConfigSettlesGpuDependentAnswers) {
  LaunchOptions o = Model("gpt-oss-120b");
  o.attention_config = R"({"flash_attn_version": 2})";
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  EXPECT_EQ(plan->model.attention_backend, "TRITON_ATTN");  // the profile's FLASH_ATTN has none
  EXPECT_EQ(plan->capacity.max_tokens, 827'693);
  const std::string sinks =
      "\n  error [backend-sinks] target layer 'model.layers.0.self_attn' (and 35 other layers) "
      "has learned attention sinks but backend {} has none {}: the engine refuses the selection "
      "('attention sinks not supported'); choose another backend with --attention-backend";
  o.attention_backend = "FLASH_ATTN";
  EXPECT_EQ(Errors(o), fmt::format(fmt::runtime(sinks), "FLASH_ATTN",
                                   "under FlashAttention 2 (--attention-config "
                                   "flash_attn_version 2)"));
  o.attention_config = R"({"flash_attn_version": 3})";  // by the GPU: not checked
  EXPECT_EQ(AcceptedTokens(o), 827'693);
  o.attention_backend = "FLASHINFER";
  o.attention_config = R"({"use_trtllm_attention": false})";
  EXPECT_EQ(Errors(o), fmt::format(fmt::runtime(sinks), "FLASHINFER",
                                   "without TRT-LLM attention (--attention-config "
                                   "use_trtllm_attention false)"));
  o.attention_backend.reset();
  EXPECT_EQ(AcceptedTokens(o), 827'693);  // the profile's FLASH_ATTN

  // Per-head scales (a compressed-tensors scheme of strategy attn_head) need FlashAttention 3.
  nlohmann::json llama = testing_configs::Llama31_8B();
  llama["quantization_config"] = {
      {"quant_method", "compressed-tensors"},
      {"kv_cache_scheme",
       {{"num_bits", 8}, {"type", "float"}, {"strategy", "attn_head"}, {"symmetric", true}}}};
  LaunchConfig c;
  EXPECT_EQ(ConfigErrors(llama, c), "");
  c.cache.flash_attn_version = 2;
  // The scheme caches fp8, which FlashAttention 2 does not take: the selection moves on to
  // FlashInfer, which takes no per-head scales either.
  EXPECT_EQ(ConfigErrors(llama, c),
            "\n  error [backend-per-head-scales] target layer 'model.layers.0.self_attn' (and 31 "
            "other layers) quantizes its K/V with per-head scales (config.json 'config.json': "
            "field 'quantization_config.kv_cache_scheme': strategy attn_head) but backend "
            "FLASHINFER takes none: the engine refuses the selection ('per-head quant scales not "
            "supported'); no K/V attention backend takes them under this launch");
  c.cache.attention_backend = "FLASH_ATTN";
  EXPECT_EQ(ConfigErrors(llama, c),
            "\n  error [backend-per-head-scales] target layer 'model.layers.0.self_attn' (and 31 "
            "other layers) quantizes its K/V with per-head scales (config.json 'config.json': "
            "field 'quantization_config.kv_cache_scheme': strategy attn_head) but backend "
            "FLASH_ATTN takes none under FlashAttention 2 (--attention-config flash_attn_version "
            "2): the engine refuses the selection ('per-head quant scales not supported'); no "
            "K/V attention backend takes them under this launch\n  error "
            "[backend-kv-cache-dtype] target layer 'model.layers.0.self_attn' (and 31 other "
            "layers) has cache dtype fp8 but backend FLASH_ATTN takes it only as FlashAttention "
            "3 on a Hopper GPU, not under FlashAttention 2 (--attention-config flash_attn_version "
            "2): the engine refuses the selection ('kv_cache_dtype not supported'); choose one "
            "that takes it (FLASHINFER, TRITON_ATTN) with --attention-backend or set "
            "--kv-cache-dtype");

  // FlashInfer's one window per group is certain without TRT-LLM attention.
  LaunchConfig off;
  off.disable_hybrid_kv_cache_manager = true;
  off.cache.attention_backend = "FLASHINFER";
  off.cache.use_trtllm_attention = false;
  EXPECT_EQ(ConfigErrors(CorpusConfig("gemma-2-9b"), off),
            "\n  error [backend-one-window] the hybrid KV cache manager is off by "
            "--disable-hybrid-kv-cache-manager, so layer 'model.layers.0.self_attn' (sliding "
            "window 4096) and layer 'model.layers.1.self_attn' (full attention) share one KV "
            "cache group on backend FLASHINFER, whose metadata builder takes one window for a "
            "group's layers unless FlashInfer's TRT-LLM attention runs every prefill and decode "
            "(--attention-config use_trtllm_attention false turns it off): so the engine raises "
            "('Window left is not the same for all layers') at its first forward, once the "
            "weights are loaded; keep the hybrid KV cache manager on, add "
            "--disable-sliding-window, or choose another backend with --attention-backend");
}

// The engine's DeepSeek attention builds the sparse indexer when index_topk, stated or the config
// class's default, is above 0 (is_v32 in deepseek_v2.py at 28be48fa9).
TEST(StartupRefusals, IndexerFollowsIndexTopk) {
  auto indexers = [](const nlohmann::json& config) {
    LaunchConfig c;
    c.parallel.tensor_parallel_size = 8;
    Result<Plan> plan = testing_configs::PlanWith(config, c);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    int64_t n = 0;
    if (!plan.ok()) return n;
    EXPECT_EQ(plan->ErrorLines(), "");
    for (const LayerSpec& l : plan->model.layers) n += l.sparse_indexer;
    return n;
  };
  nlohmann::json v32 = ProfileConfig("deepseek-v3.2");
  EXPECT_EQ(indexers(v32), 61);
  v32.erase("index_topk");  // DeepseekV3Config has no default: dense
  EXPECT_EQ(indexers(v32), 0);
  nlohmann::json glm = ProfileConfig("glm-5.1");
  EXPECT_EQ(indexers(glm), 78);
  glm.erase("index_topk");  // GlmMoeDsaConfig's default 2048
  EXPECT_EQ(indexers(glm), 78);
  glm["index_topk"] = 0;
  EXPECT_EQ(indexers(glm), 0);
}

// An MLA model planned under DCP on kvtopo's default backend (neither the launch nor a profile
// names one): the engine picks by the GPU, and may pick a backend without the LSE.
TEST(StartupRefusals, AutoMlaBackendUnderDcp) {
  auto warning = [](const nlohmann::json& model, const LaunchConfig& c) {
    Result<Plan> plan = testing_configs::PlanWith(model, c);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->ErrorLines(), "");
    return plan.ok() ? DiagnosticMessage(*plan, "dcp-backend-auto") : std::string();
  };
  LaunchConfig c;
  c.parallel.tensor_parallel_size = 8;
  c.parallel.decode_context_parallel_size = 8;
  const nlohmann::json kimi = ProfileConfig("kimi-k2.6");
  const std::string dense =
      "--decode-context-parallel-size 8 needs an attention backend that returns the softmax LSE; "
      "kvtopo planned TRITON_MLA (its default for dense MLA), but without --attention-backend the "
      "engine picks the backend by the GPU and may pick one that returns none (FLASHINFER_MLA, "
      "TOKENSPEED_MLA), which it refuses once the weights are loaded; name one that does with "
      "--attention-backend (B12X_MLA, TRITON_MLA, FLASHMLA, CUTLASS_MLA, FLASH_ATTN_MLA), or "
      "state the GPU with --device-capability to plan the engine's pick";
  EXPECT_EQ(warning(kimi, c), dense);
  EXPECT_EQ(warning(ProfileConfig("deepseek-v3.2"), c),
            "--decode-context-parallel-size 8 needs an attention backend that returns the "
            "softmax LSE; kvtopo planned B12X_MLA_SPARSE (its default for sparse MLA), but "
            "without --attention-backend the engine picks the backend by the GPU and may pick "
            "one that returns none (FLASHMLA_SPARSE, FLASHINFER_MLA_SPARSE), which it refuses "
            "once the weights are loaded; name one that does with --attention-backend "
            "(B12X_MLA_SPARSE), or state the GPU with --device-capability to plan the engine's "
            "pick");
  c.cache.attention_backend = "TRITON_MLA";  // named: nothing to say
  EXPECT_EQ(warning(kimi, c), "");
  c.cache.attention_backend = "Auto";  // the engine's automatic selection, as no flag
  EXPECT_EQ(warning(kimi, c), dense);
  c.cache.attention_backend.clear();
  c.parallel.decode_context_parallel_size = 1;
  EXPECT_EQ(warning(kimi, c), "");
}

// Learned attention sinks (gpt-oss; Laguna's sliding layers with swa_attention_sink_enabled):
// the engine's validate_configuration refuses a backend without them ("attention sinks not
// supported"), as the TurboQuant backend is; FlashAttention's and FlashInfer's depend on the GPU.
TEST(StartupRefusals, AttentionSinksNeedTheBackend) {
  LaunchOptions o = Model("gpt-oss-120b");
  EXPECT_EQ(Errors(o), "");
  o.kv_cache_dtype = "turboquant_4bit_nc";
  o.disable_sliding_window = true;
  EXPECT_EQ(Errors(o),
            "\n  error [backend-sinks] target layer 'model.layers.2.self_attn' (and 31 other "
            "layers) has learned attention sinks but backend TURBOQUANT has none: the engine "
            "refuses the selection ('attention sinks not supported'); TurboQuant caches "
            "(turboquant_4bit_nc) run only on it, so choose another cache dtype");
  o.attention_backend = "TRITON_ATTN";  // has sinks but stores no TurboQuant cache
  EXPECT_EQ(Errors(o),
            "\n  error [backend-kv-cache-dtype] target layer 'model.layers.2.self_attn' (and 31 "
            "other layers) stores turboquant_4bit_nc (TurboQuant) but backend TRITON_ATTN does not "
            "store it; leave --attention-backend unset so the engine picks the backend that does");

  nlohmann::json laguna = CorpusConfig("laguna-xs.2");
  LaunchConfig c;
  c.cache.kv_cache_dtype = KvCacheDtype::kTurboquant4bitNc;
  c.disable_sliding_window = true;
  EXPECT_EQ(ConfigErrors(laguna, c), "");  // no sinks asked for
  laguna["swa_attention_sink_enabled"] = true;
  EXPECT_EQ(ConfigErrors(laguna, c),
            "\n  error [backend-sinks] target layer 'model.layers.2.self_attn' (and 26 other "
            "layers) has learned attention sinks but backend TURBOQUANT has none: the engine "
            "refuses the selection ('attention sinks not supported'); TurboQuant caches "
            "(turboquant_4bit_nc) run only on it, so choose another cache dtype");
}

// --dcp-kv-cache-interleave-size and --cp-kv-cache-interleave-size are two flags of the engine's:
// it stores with the second, which the first replaces when above 1 and different, under DCP only
// (VllmConfig.__post_init__); FlashInfer computes each rank's local lengths with the first as
// given, so the second alone under DCP leaves its lengths apart from the tokens a rank holds.
TEST(StartupRefusals, InterleaveFlagsAsTheEngineResolvesThem) {
  const auto interleave = [](std::optional<int64_t> dcp, std::optional<int64_t> cp, int64_t n) {
    LaunchOptions o;
    o.dcp_kv_cache_interleave_size = dcp;
    o.cp_kv_cache_interleave_size = cp;
    return EngineInterleave(o, n);
  };
  EXPECT_EQ(interleave(std::nullopt, 4, 2), 4);
  EXPECT_EQ(interleave(4, std::nullopt, 2), 4);
  EXPECT_EQ(interleave(4, 2, 2), 4);
  EXPECT_EQ(interleave(1, 4, 2), 4);  // the first at 1 replaces nothing
  EXPECT_EQ(interleave(2, 4, 2), 2);
  EXPECT_EQ(interleave(4, std::nullopt, 1), 1);  // without DCP the first is not read
  EXPECT_EQ(interleave(4, 2, 1), 2);

  LaunchOptions o =
      Model(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/granite-3.3-8b.json");
  o.tensor_parallel_size = 16;
  o.decode_context_parallel_size = 2;
  o.attention_backend = "FLASHINFER";
  o.max_model_len = 32768;
  o.cp_kv_cache_interleave_size = 4;
  Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->parallel.dcp_kv_cache_interleave_size, 4);
  EXPECT_EQ(c->dcp_interleave_as_given, 1);
  EXPECT_EQ(Errors(o),
            "\n  error [dcp-interleave-lengths] target layer 'model.layers.0.self_attn' (and 39 "
            "other layers) runs on backend FLASHINFER, which computes each DCP rank's local "
            "lengths with --dcp-kv-cache-interleave-size 1 while the slot mapping stores with "
            "--cp-kv-cache-interleave-size 4: the engine starts, and each rank attends over "
            "lengths that are not the tokens it holds; give --dcp-kv-cache-interleave-size 4 as "
            "well");
  o.attention_backend = "FLASH_ATTN";  // reads the interleave it stores with
  EXPECT_EQ(Errors(o), "");
  o.attention_backend = "FLASHINFER";
  o.dcp_kv_cache_interleave_size = 4;
  EXPECT_EQ(Errors(o), "");
  // Both given and apart: the first wins, and a warning says the second is dropped.
  o.cp_kv_cache_interleave_size = 2;
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->parallel.dcp_kv_cache_interleave_size, 4);
  ASSERT_FALSE(plan->diagnostics.empty());
  EXPECT_EQ(plan->diagnostics[0].code, "cp-interleave-replaced");
  EXPECT_EQ(plan->diagnostics[0].message,
            "--cp-kv-cache-interleave-size 2 is replaced by --dcp-kv-cache-interleave-size 4 "
            "under --decode-context-parallel-size 2: the engine stores with the latter and warns "
            "('cp_kv_cache_interleave_size is overridden by dcp_kv_cache_interleave_size'); give "
            "one interleave");
}

// --speculative-config keys of older releases, which the fork's SpeculativeConfig refuses: refused
// as it refuses them, naming the key; the launch without them plans.
TEST(StartupRefusals, SpeculativeConfigKeysOfOlderReleases) {
  LaunchOptions o = Model("kimi-k2.6");
  o.max_model_len = 32768;
  o.speculative_config =
      R"({"method": "eagle3", "model": "festr2/kimi-k2.6-eagle3-mla-fp8", )"
      R"("num_speculative_tokens": 3, "posterior_alpha": 0.3, "disable_mqa_scorer": true})";
  Result<Plan> plan = PlanOptions(o);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(),
            "--speculative-config: 'disable_mqa_scorer' is a key of older releases the engine no "
            "longer has: it refuses it as it builds the speculative config ('Unexpected keyword "
            "argument'); drop it");
  o.speculative_config = R"({"method": "eagle3", "model": "festr2/kimi-k2.6-eagle3-mla-fp8", )"
                         R"("num_speculative_tokens": 3})";
  plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted());
  EXPECT_EQ(plan->capacity.max_tokens, 481024);
}

// -O and --compilation-config are checked as the engine's parser checks them; keys that do not
// decide the graph mode are reported, not used.
TEST(StartupRefusals, CompilationConfigChecked) {
  LaunchOptions o = Model("qwen3-next-80b");
  auto message = [&](std::string_view cc) {
    o.compilation_config = std::string(cc);
    return ToLaunchConfig(o).status().message();
  };
  EXPECT_EQ(message("[3]"), "--compilation-config must be a JSON object, got [3]");
  EXPECT_EQ(message(R"({"lvl": 3})"),
            "--compilation-config: 'lvl' is not a field the engine takes (its parser refuses "
            "it: 'Unexpected keyword argument'); fields: mode, debug_dump_path, cache_dir, "
            "compile_cache_save_format, backend, custom_ops, ir_enable_torch_wrap, splitting_ops, "
            "compile_mm_encoder, cudagraph_mm_encoder, encoder_cudagraph_token_budgets, "
            "encoder_cudagraph_max_vision_items_per_batch, "
            "encoder_cudagraph_max_frames_per_batch, compile_sizes, compile_ranges_endpoints, "
            "inductor_compile_config, inductor_passes, cudagraph_mode, cudagraph_num_of_warmups, "
            "cudagraph_capture_sizes, cudagraph_copy_inputs, cudagraph_specialize_lora, "
            "use_inductor_graph_partition, pass_config, max_cudagraph_capture_size, "
            "dynamic_shapes_config, fast_moe_cold_start");
  // Fields of older releases: the form their deprecation named, for the value given.
  EXPECT_EQ(message(R"({"level": 3})"),
            Older("--compilation-config", "level", "give \"mode\": 3 instead"));
  EXPECT_EQ(
      message(R"({"use_cudagraph": false})"),
      Older("--compilation-config", "use_cudagraph", "give \"cudagraph_mode\": \"NONE\" instead"));
  EXPECT_EQ(message(R"({"use_cudagraph": true})"),
            Older("--compilation-config", "use_cudagraph", "drop it"));
  EXPECT_EQ(message(R"({"full_cuda_graph": 1})"),
            Older("--compilation-config", "full_cuda_graph",
                  "give \"cudagraph_mode\": \"FULL\" instead"));
  EXPECT_EQ(message(R"({"use_inductor": "false"})"),
            Older("--compilation-config", "use_inductor", "give \"backend\": \"eager\" instead"));
  EXPECT_EQ(message(R"({"compile_ranges_split_points": [8, 64]})"),
            Older("--compilation-config", "compile_ranges_split_points",
                  "give \"compile_ranges_endpoints\": [8,64] instead"));
  EXPECT_EQ(message(R"({"pass_config": {"enable_fusion": true}})"),
            Older("--compilation-config's pass_config", "enable_fusion",
                  "give \"fuse_norm_quant\": true, \"fuse_act_quant\": true instead"));
  EXPECT_EQ(message(R"({"pass_config": {"enable_sequence_parallelism": false}})"),
            Older("--compilation-config's pass_config", "enable_sequence_parallelism",
                  "give \"enable_sp\": false instead"));
  EXPECT_EQ(message(R"({"pass_config": {"enable_async_tp": null}})"),
            Older("--compilation-config's pass_config", "enable_async_tp", "drop it"));
  EXPECT_EQ(
      message(R"({"pass_config": {"fi_allreduce_fusion_max_token_num": 4096}})"),
      Older("--compilation-config's pass_config", "fi_allreduce_fusion_max_token_num", "drop it"));
  EXPECT_EQ(message(R"({"pass_config": {"fuse_norm": true}})"),
            "--compilation-config's pass_config: 'fuse_norm' is not a field the engine takes "
            "(its parser refuses it: 'Unexpected keyword argument'); fields: fuse_norm_quant, "
            "fuse_act_quant, fuse_attn_quant, eliminate_noops, enable_sp, fuse_gemm_comms, "
            "fuse_allreduce_rms, fuse_minimax_qk_norm, enable_qk_norm_rope_fusion, "
            "fuse_rope_kvcache_cat_mla, fuse_act_padding, fuse_mla_dual_rms_norm, "
            "fuse_rope_kvcache, rope_kvcache_fusion_max_token_num, "
            "fi_allreduce_fusion_max_size_mb, sp_min_token_num");
  EXPECT_EQ(message(R"({"mode": "fast"})"),
            "--compilation-config: mode \"fast\" is not a compilation mode (the engine: 'Invalid "
            "compilation mode'); valid: 0 to 3, or NONE, STOCK_TORCH_COMPILE, DYNAMO_TRACE_ONCE, "
            "VLLM_COMPILE");
  EXPECT_EQ(message(R"({"mode": 4})"),
            "--compilation-config: mode 4 is not a compilation mode (the engine: 'Invalid "
            "compilation mode'); valid: 0 to 3, or NONE, STOCK_TORCH_COMPILE, DYNAMO_TRACE_ONCE, "
            "VLLM_COMPILE");
  EXPECT_EQ(message(R"({"cudagraph_mode": "partial"})"),
            "--compilation-config: cudagraph_mode \"partial\" is not a CUDA graph mode (the "
            "engine's parser fails on it); valid: NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, "
            "FULL_AND_PIECEWISE");
  EXPECT_EQ(message(R"({"cudagraph_mode": 3})"),
            "--compilation-config: cudagraph_mode 3 is not a CUDA graph mode (the engine's parser "
            "fails on it); valid: NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, FULL_AND_PIECEWISE");
  EXPECT_EQ(message(R"({"splitting_ops": "vllm::unified_attention"})"),
            "--compilation-config: splitting_ops must be a list of op names, got "
            "\"vllm::unified_attention\"");
  EXPECT_EQ(message(R"({"pass_config": {"enable_sp": "maybe"}})"),
            "--compilation-config's pass_config: enable_sp must be true or false, got \"maybe\"");
  EXPECT_EQ(message(R"({"pass_config": []})"),
            "--compilation-config: pass_config must be a JSON object, got []");
  o.compilation_config = R"({"cudagraph_num_of_warmups": 2, "mode": null,
                             "pass_config": {"fuse_norm_quant": true}})";
  Result<LaunchConfig> launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->compilation.keys_not_planned,
            (std::vector<std::string>{"cudagraph_num_of_warmups", "pass_config.fuse_norm_quant"}));
  Result<Plan> plan = PlanLaunch(*launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  bool reported = false;
  for (const Diagnostic& d : plan->diagnostics) {
    if (d.code == "not-used-for-planning") {
      reported = true;
      EXPECT_EQ(d.message,
                "accepted, not used for planning: --compilation-config "
                "'cudagraph_num_of_warmups', --compilation-config 'pass_config.fuse_norm_quant'");
    }
  }
  EXPECT_TRUE(reported);
  o.compilation_config.reset();
  o.optimization_level = 4;
  EXPECT_EQ(ToLaunchConfig(o).status().message(), "--optimization-level must be 0 to 3, got 4");
}

// The common MLA metadata builder splits its chunked-prefill workspace over the DCP ranks:
// Kimi-K2.6 at TP 16 / DCP 16 on TRITON_MLA (16-token blocks, 256 rows) at --max-model-len 4095
// has 8 x 4095 = 32,760 tokens, not a multiple of 16; 4,096 gives 32,768.
TEST(StartupRefusals, MlaWorkspaceSplitsOverDcp) {
  LaunchOptions o = Model("kimi-k2.6");
  o.tensor_parallel_size = 16;
  o.decode_context_parallel_size = 16;
  o.attention_backend = "TRITON_MLA";
  o.max_model_len = 4095;
  EXPECT_EQ(Errors(o),
            "\n  error [mla-dcp-workspace] target layer 'model.layers.0.self_attn' (and 60 other "
            "layers) runs on TRITON_MLA, whose MLA metadata builder splits a chunked-prefill "
            "workspace of 32760 tokens (max(min(max(8 x --max-model-len 4095, 4 x --max-num-seqs "
            "256 x block 16), 65536), 256 x 16)) over --decode-context-parallel-size 16: it is not "
            "a multiple, and the engine asserts it once the weights are loaded; change "
            "--max-model-len or --max-num-seqs so that it is");
  o.max_model_len = 4096;
  EXPECT_EQ(Errors(o), "");
  o.max_model_len = 4095;
  o.decode_context_parallel_size = 8;  // 32,760 is a multiple of 8
  EXPECT_EQ(Errors(o), "");
  // The 65,536-token cap, or the rows' blocks above it, are multiples of 16.
  o.decode_context_parallel_size = 16;
  o.max_model_len = 9999;
  EXPECT_EQ(Errors(o), "");
}

// Context parallelism with returned routed experts or the simple CPU offload connector, and the
// native offloading connector's block rule, all asserted once the KV cache is sized.
TEST(StartupRefusals, ConnectorsAndRoutedExpertsOnceSized) {
  LaunchOptions o = Model("kimi-k2.6");
  o.tensor_parallel_size = 8;
  o.decode_context_parallel_size = 8;
  o.attention_backend = "TRITON_MLA";
  o.enable_return_routed_experts = true;
  EXPECT_EQ(Rejection(o),
            "--enable-return-routed-experts with --decode-context-parallel-size 8 and "
            "--prefill-context-parallel-size 1: the engine refuses context parallelism with it "
            "once the weights are loaded ('enable_return_routed_experts does not support context "
            "parallelism'); drop one of them");
  o.enable_return_routed_experts.reset();
  o.kv_offloading_size = "64";
  o.use_simple_kv_offload = true;
  EXPECT_EQ(Rejection(o),
            "KV connector SimpleCPUOffloadConnector (--kv-offloading-size 64 "
            "--kv-offloading-backend native) with --decode-context-parallel-size 8 and "
            "--prefill-context-parallel-size 1: the engine's simple CPU offload scheduler asserts "
            "one context-parallel rank once the weights are loaded; drop --use-simple-kv-offload "
            "(the native OffloadingConnector takes context parallelism) or context parallelism");
  o.use_simple_kv_offload.reset();
  EXPECT_EQ(Errors(o), "");

  o = Model("qwen3-next-80b");
  o.kv_offloading_size = "64";
  EXPECT_EQ(Errors(o),
            "\n  error [kv-offloading-block-size] KV connector OffloadingConnector "
            "(--kv-offloading-size 64 --kv-offloading-backend native) needs every group's block "
            "a multiple of the 544-token cache block, and group 'model.layers.0.linear_attn' has "
            "262144-token blocks: the engine's offloading spec asserts it once the weights are "
            "loaded; pass --enable-prefix-caching, which gives recurrent layers the cache block");
  o.enable_prefix_caching = true;
  EXPECT_EQ(Errors(o), "");
}

// A draft caches in the launch's cache block: FLASHINFER_MLA's 32 tokens are no block FLASHMLA's
// kernels (64) run, which the engine finds once the weights are loaded. At --block-size 64 both
// run it, and the 62 layers share one group as in the engine.
TEST(StartupRefusals, DraftBackendRunsTheCacheBlock) {
  LaunchOptions o = Model("kimi-k2.6");
  o.attention_backend = "FLASHINFER_MLA";
  o.speculative_config = R"({"method": "eagle3", "model": "kimi-k2.6-eagle3-mla",
                              "num_speculative_tokens": 3, "draft_attention_backend": "FLASHMLA"})";
  EXPECT_EQ(Errors(o),
            "\n  error [draft-backend-block-size] draft layer 'draft.model.layers.0.self_attn' "
            "runs on FLASHMLA, whose kernels cannot run the 32-token cache block (the target "
            "backend's, or --block-size): the engine finds no common kernel block once the "
            "weights are loaded ('No common block size'); choose a draft_attention_backend that "
            "runs it, or a --block-size both backends take");
  o.block_size = 64;
  Result<Plan> plan = PlanOptions(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(), "");
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 62u);
  EXPECT_EQ(plan->capacity.max_tokens, 481'024);
}

// The routed-experts capturer reads the text config's experts per token (num_experts_per_tok or
// top_k_experts) and expert count (num_experts, n_routed_experts or num_local_experts; not
// moe_num_experts), and fails without either once the KV cache is sized.
TEST(StartupRefusals, RoutedExpertsNeedTheirConfigKeys) {
  LaunchConfig c;
  c.enable_return_routed_experts = true;
  nlohmann::json model = testing_configs::Llama31_8B();
  EXPECT_EQ(ConfigErrors(model, c),
            "\n  error [routed-experts-config] --enable-return-routed-experts with 'config.json' "
            "(LlamaForCausalLM), whose text config states neither num_experts_per_tok nor "
            "top_k_experts: the engine's routed-experts capturer cannot size its buffers and "
            "fails once the weights are loaded ('Cannot determine num_experts_per_tok'); drop "
            "--enable-return-routed-experts");
  model["num_experts_per_tok"] = 8;
  model["moe_num_experts"] = 64;  // counts for is_moe, not for the capturer
  EXPECT_EQ(ConfigErrors(model, c),
            "\n  error [routed-experts-config] --enable-return-routed-experts with 'config.json' "
            "(LlamaForCausalLM), whose text config states none of num_experts, n_routed_experts, "
            "num_local_experts: the engine's routed-experts capturer cannot size its buffers and "
            "fails once the weights are loaded ('Could not resolve num_experts from model "
            "config'); drop --enable-return-routed-experts");
  model["num_local_experts"] = 64;
  EXPECT_EQ(ConfigErrors(model, c), "");

  // Kimi Linear's config names its experts per token num_experts_per_token.
  LaunchOptions o = Model("kimi-linear-48b");
  o.enable_return_routed_experts = true;
  EXPECT_EQ(Errors(o),
            "\n  error [routed-experts-config] --enable-return-routed-experts with "
            "'profiles/kimi-linear-48b.json' (KimiLinearForCausalLM), whose text config states "
            "neither num_experts_per_tok nor top_k_experts: the engine's routed-experts capturer "
            "cannot size its buffers and fails once the weights are loaded ('Cannot determine "
            "num_experts_per_tok'); drop --enable-return-routed-experts");
  o = Model("gpt-oss-120b");
  o.enable_return_routed_experts = true;
  EXPECT_EQ(Errors(o), "");
}

// --kv-sharing-fast-prefill (a checked option; the cache is the same) with an EAGLE-family
// method.
TEST(StartupRefusals, KvSharingFastPrefillWithEagle) {
  LaunchOptions o = Model("deepseek-v3.2");
  o.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 1})";
  o.kv_sharing_fast_prefill = true;
  EXPECT_EQ(Errors(o),
            "\n  error [kv-sharing-fast-prefill] --kv-sharing-fast-prefill with speculative "
            "method 'mtp': the engine refuses the pair ('Fast prefill optimization for KV sharing "
            "is not compatible with EAGLE', whose draft needs correct logits for every prompt "
            "token); drop --kv-sharing-fast-prefill or choose another method");
  o.speculative_config = R"({"method": "ngram", "num_speculative_tokens": 3,
                              "prompt_lookup_max": 4})";
  EXPECT_EQ(Errors(o), "");
}

}  // namespace
}  // namespace kvtopo
