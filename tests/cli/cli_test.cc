// The CLI's contract: exit 0 accepted, 1 rejected, 2 usage error with a one-line message.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"

namespace kvtopo {
namespace {

using ::kvtopo::testing::ExpectUsageError;
using ::kvtopo::testing::RunCli;

TEST(PlanCli, DefaultPlanIsTheSeedLaunch) {
  auto r = RunCli("plan --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(j["accepted"], true);
  EXPECT_EQ(j["model"]["name"], "kimi-k3");
  EXPECT_EQ(j["model"]["draft"], "kimi-k3-dspark");
  EXPECT_EQ(j["model"]["max_model_len"], 1000000);
  EXPECT_EQ(j["model"]["num_speculative_tokens"], 7);
  EXPECT_EQ(j["parallel"]["tensor_parallel_size"], 16);
  EXPECT_EQ(j["parallel"]["decode_context_parallel_size"], 16);
  ASSERT_EQ(j["groups"].size(), 17u);
  EXPECT_EQ(j["groups"][0]["kind"], "recurrent");
  EXPECT_EQ(j["groups"][0]["block_table_width"], 1310);
  EXPECT_EQ(j["groups"][12]["kind"], "mla");
  EXPECT_EQ(j["groups"][12]["placement"], "sharded");
  EXPECT_EQ(j["groups"][12]["manager_block_size"], 12288);
  EXPECT_EQ(j["groups"][12]["block_table_width"], 82);
  EXPECT_EQ(j["groups"][12]["kv_cache_dtype"], "fp8");
  EXPECT_EQ(j["groups"][16]["role"], "draft");
  EXPECT_EQ(j["groups"][16]["kind"], "sliding_window_mla");
  EXPECT_EQ(j["groups"][16]["placement"], "replicated");
  EXPECT_EQ(j["capacity"]["kv_cache_memory_is_default"], false);
  EXPECT_EQ(j["capacity"]["memory_bytes"], 1325000000);
  EXPECT_EQ(j["capacity"]["max_tokens"], 1033126);
  EXPECT_EQ(j["capacity"]["blocks_per_request"], 483);
  EXPECT_EQ(j["pool"]["num_blocks"], 499);
  // Every layer, with its role, dtype, backend and page: 93 target layers and 5 draft layers.
  ASSERT_EQ(j["layers"].size(), 98u);
  EXPECT_EQ(j["layers"][0]["name"], "model.layers.0.self_attn");
  EXPECT_EQ(j["layers"][0]["kind"], "recurrent");
  EXPECT_EQ(j["layers"][0]["page_size_bytes"], 442368);
  EXPECT_EQ(j["layers"][0]["natural_page_size_bytes"], 407040);
  EXPECT_EQ(j["layers"][97]["name"], "draft.model.layers.4.self_attn");
  EXPECT_EQ(j["layers"][97]["role"], "draft");
  EXPECT_EQ(j["layers"][97]["kv_cache_dtype"], "fp8");
  EXPECT_EQ(j["layers"][97]["model_dtype"], "bfloat16");
  EXPECT_EQ(j["layers"][97]["attention_backend"], "B12X_MLA");
  EXPECT_EQ(j["scheduler_block_size"], 12288);
  EXPECT_EQ(j["hash_block_size"], 768);
  EXPECT_EQ(j["max_num_batched_tokens"], 1024);  // the production launch's
  EXPECT_EQ(j["max_num_seqs"], 256);
  EXPECT_TRUE(j["diagnostics"].empty());
}

// The two production launches of the seeds, with prefix caching on as the runs had it (their
// page counts are mode align's; a hybrid model's engine default is caching off).
TEST(PlanCli, ProductionLaunchesPlanToTheEnginesFigures) {
  auto glm = RunCli(
      "plan glm-5.3-flash -tp 4 -dcp 4 --dcp-kv-cache-interleave-size 4 --kv-cache-dtype fp8 "
      "--max-model-len 1048576 --max-num-seqs 32 --max-num-batched-tokens 8192 "
      "--async-scheduling --enable-prefix-caching --kv-cache-memory 12GiB --speculative-config "
      "'{\"method\":\"dflash\",\"model\":\"glm-5.3-flash-dflash2\",\"num_speculative_tokens\":"
      "7}' --json");
  ASSERT_EQ(glm.exit_code, 0) << glm.out;
  auto j = nlohmann::json::parse(glm.out);
  EXPECT_EQ(j["groups"].size(), 6u);
  for (const auto& g : j["groups"]) EXPECT_EQ(g["block_size"], 2304);
  EXPECT_EQ(j["pool"]["num_blocks"], 906);
  EXPECT_EQ(j["capacity"]["blocks_per_request"], 159);
  EXPECT_EQ(j["capacity"]["max_tokens"], 5974904);
  EXPECT_EQ(j["promotion"]["applied"], true);
  EXPECT_EQ(j["promotion"]["block_size_before"], 1152);
  EXPECT_EQ(j["promotion"]["max_tokens_before"], 5688681);

  const std::string k3 =
      "plan kimi-k3 -tp 16 -dcp 16 --max-model-len 1000000 --max-num-batched-tokens 1024 "
      "--kv-cache-dtype fp8 --async-scheduling --enable-prefix-caching "
      "--kv-cache-memory-bytes 1325000000 "
      "--speculative-config "
      "'{\"method\":\"dspark\",\"model\":\"kimi-k3-dspark\",\"num_speculative_tokens\":7}'";
  auto kimi =
      RunCli(k3 + " --json", false, "VLLM_K3_KV_GROUP_SIZE=6 VLLM_DSPARK_DRAFT_KV_WINDOW=32768");
  ASSERT_EQ(kimi.exit_code, 0) << kimi.out;
  j = nlohmann::json::parse(kimi.out);
  EXPECT_EQ(j["groups"].size(), 17u);
  EXPECT_EQ(j["pool"]["num_blocks"], 499);
  EXPECT_EQ(j["capacity"]["blocks_per_request"], 483);
  EXPECT_EQ(j["capacity"]["max_tokens"], 1033126);
  auto table = RunCli(k3, false, "VLLM_K3_KV_GROUP_SIZE=6 VLLM_DSPARK_DRAFT_KV_WINDOW=32768");
  EXPECT_NE(table.out.find("GPU KV cache size: 1,033,126 tokens, Maximum concurrency for "
                           "1,000,000 tokens per request: 1.03x"),
            std::string::npos)
      << table.out;
  // Without the group-size variable the min-bucket rule gives 5 groups.
  j = nlohmann::json::parse(RunCli(k3 + " --json", false, "VLLM_DSPARK_DRAFT_KV_WINDOW=32768").out);
  EXPECT_EQ(j["groups"].size(), 5u);
}

// A `vllm serve` line pastes in: underscores, -O3, dotted speculative keys, 64k, flags that do
// not change the plan (listed), switches in their --no- form.
TEST(PlanCli, PastedVllmServeLine) {
  auto r = RunCli(
      "check moonshotai/Kimi-K2.6 --tensor_parallel_size 8 -dcp 4 --max-model-len 64k "
      "--gpu-memory-utilization 0.92 --port 8000 --trust-remote-code -O3 --no-enforce-eager "
      "--served-model-name kimi --speculative-config.method eagle3 "
      "--speculative-config.model festr2/kimi-k2.6-eagle3-mla-fp8 "
      "--speculative-config.num_speculative_tokens 3 "
      "--speculative_config.draft_attention_backend TRITON_MLA --json",
      true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["diagnostics"].size(), 1u) << r.out;
  EXPECT_EQ(j["diagnostics"][0]["code"], "not-used-for-planning");
  EXPECT_EQ(j["diagnostics"][0]["message"],
            "accepted, not used for planning: --port, --served-model-name");
  auto plan = RunCli(
      "plan moonshotai/Kimi-K2.6 --tensor_parallel_size 8 -dcp 4 --max-model-len 64k "
      "--speculative-config.method eagle3 --speculative-config.num_speculative_tokens 3 "
      "--speculative_config.draft_attention_backend TRITON_MLA --json");
  const auto p = nlohmann::json::parse(plan.out);
  EXPECT_EQ(p["model"]["name"], "kimi-k2.6");
  EXPECT_EQ(p["model"]["max_model_len"], 64000);
  EXPECT_EQ(p["model"]["num_speculative_tokens"], 3);
  EXPECT_EQ(p["layers"].back()["attention_backend"], "TRITON_MLA");
  // An instance that only produces the encoder cache keeps no KV cache: refused, in each
  // spelling; one that consumes it plans as any other.
  for (const char* spelling :
       {"--ec-transfer-config '{\"ec_connector\": \"ECExampleConnector\", \"ec_role\": "
        "\"ec_producer\"}'",
        "--ec-transfer-config.ec_connector ECExampleConnector --ec-transfer-config.ec_role "
        "ec_producer"}) {
    r = RunCli(std::string("check gpt-oss-120b ") + spelling, /*merge_stderr=*/true);
    EXPECT_EQ(r.exit_code, 1) << spelling;
    EXPECT_EQ(r.out,
              "kvtopo: --ec-transfer-config: ec_role ec_producer with ec_connector "
              "\"ECExampleConnector\": the engine's workers of an instance that only produces the "
              "encoder cache report no KV cache (GPUModelRunner.get_kv_cache_spec), so it runs "
              "without one and there is no KV cache to plan; plan the instance that consumes it "
              "(ec_consumer or ec_both)\n")
        << spelling;
  }
  r = RunCli(
      "check gpt-oss-120b --ec-transfer-config.ec_connector ECExampleConnector "
      "--ec-transfer-config.ec_role ec_consumer");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(
      RunCli("check gpt-oss-120b --ec-transfer-config '{\"ec_role\": \"producer\"}'").exit_code, 2);
  // Unknown flags stay usage errors.
  EXPECT_EQ(RunCli("plan --gpu-memory-utilisation 0.9").exit_code, 2);
}

// --attention-config's backend names the target's backend as --attention-backend does, in each
// spelling the engine's parser takes; the engine refuses the two together.
TEST(PlanCli, AttentionConfigBackend) {
  const std::string launch = "plan kimi-k2.6 -tp 8 --json ";
  for (const char* spelling :
       {"-ac.backend=TRITON_MLA", "--attention-config.backend triton_mla",
        "-ac '{\"backend\": \"TRITON_MLA\"}'", "--attention-backend TRITON_MLA -ac.backend=auto"}) {
    const auto r = RunCli(launch + spelling, true);
    ASSERT_EQ(r.exit_code, 0) << spelling << "\n" << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["layers"][0]["attention_backend"], "TRITON_MLA") << spelling;
    EXPECT_EQ(j["capacity"]["max_tokens"], 488944) << spelling;
  }
  const auto r = RunCli(launch + "-ac.backend auto", true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["layers"][0]["attention_backend"], "B12X_MLA");
  ExpectUsageError(launch + "-ac.backend=TRITON_MLA --attention-backend FLASHMLA",
                   "kvtopo: --attention-backend beside --attention-config's backend: the engine "
                   "refuses the pair ('attention_backend and attention_config.backend are "
                   "mutually exclusive'); give one\n");
  ExpectUsageError(launch + "-ac.flash_attn_version=1",
                   "kvtopo: --attention-config: flash_attn_version must be 2, 3 or 4, got 1 (the "
                   "engine's parser refuses it)\n");
}

// The kernel flags: --moe-backend and --linear-backend in any case and with - for _, and
// --kernel-config whole or by key, checked as the engine's parser checks them; a --moe-backend
// other than auto overrides the config's. DeepSeek-V4's MegaMoE needs expert parallelism.
TEST(PlanCli, KernelConfigSpellings) {
  const std::string v4 = "check " + std::string(KVTOPO_SOURCE_DIR) +
                         "/fuzz/corpus/config_plan/deepseek-v4-flash-shaped.json -tp 2 "
                         "--kv-cache-dtype fp8 --max-model-len 30000 --kv-cache-memory 10GiB ";
  for (const char* spelling :
       {"--moe-backend Deep-GEMM-Mega-MoE", "--kernel-config.moe_backend deep_gemm_mega_moe",
        "--kernel-config '{\"moe_backend\": \"DEEP_GEMM_MEGA_MOE\"}'",
        "--kernel-config.moe_backend deep_gemm_mega_moe --moe-backend auto"}) {
    const auto r = RunCli(v4 + spelling);
    EXPECT_EQ(r.exit_code, 1) << spelling << "\n" << r.out;
    EXPECT_NE(r.out.find("error [moe-backend]"), std::string::npos) << spelling << "\n" << r.out;
    EXPECT_EQ(RunCli(v4 + spelling + " --enable-expert-parallel").exit_code, 0) << spelling;
  }
  EXPECT_EQ(
      RunCli(v4 + "--kernel-config.moe_backend deep_gemm_mega_moe --moe-backend triton").exit_code,
      0);
  ExpectUsageError(
      "check kimi-k2.6 --moe-backend deepgemm",
      "kvtopo: --moe-backend \"deepgemm\" is not one of the engine's: auto, b12x, "
      "triton, deep_gemm, deep_gemm_mega_moe, cutlass, flashinfer_trtllm, "
      "flashinfer_cutlass, flashinfer_cutedsl, marlin, humming, triton_unfused, aiter, "
      "emulation (any case, - for _; its parser refuses it)\n");
  ExpectUsageError("check kimi-k2.6 --kernel-config.linear_backend=cudnn",
                   "kvtopo: --kernel-config: linear_backend \"cudnn\" is not one of the engine's: "
                   "auto, cutlass, flashinfer_cutlass, flashinfer_trtllm, flashinfer_cudnn, "
                   "marlin, triton, deep_gemm, torch, aiter, machete, fbgemm, conch, exllama, "
                   "emulation (any case, - for _; its parser refuses it)\n");
  ExpectUsageError("check kimi-k2.6 --kernel-config.backend triton",
                   "kvtopo: --kernel-config: 'backend' is not a field the engine takes (its "
                   "parser refuses it: 'Unexpected keyword argument'); fields: ir_op_priority, "
                   "enable_flashinfer_autotune, moe_backend, linear_backend\n");
  ExpectUsageError(
      "check kimi-k2.6 --kernel-config.enable_flashinfer_autotune=false "
      "--enable-flashinfer-autotune",
      "kvtopo: --enable-flashinfer-autotune beside --kernel-config's "
      "enable_flashinfer_autotune: the engine refuses the pair "
      "('enable_flashinfer_autotune and kernel_config.enable_flashinfer_autotune are "
      "mutually exclusive'); give one\n");
  ExpectUsageError("check kimi-k2.6 --kernel-config '{\"ir_op_priority\": {\"rms\": \"x\"}}'",
                   "kvtopo: --kernel-config: ir_op_priority: 'rms' is not a field the engine "
                   "takes (its parser refuses it: 'Unexpected keyword argument'); fields: "
                   "rms_norm, fused_add_rms_norm\n");
  EXPECT_EQ(RunCli("check kimi-k2.6 --kernel-config.ir_op_priority.rms_norm vllm_c,native "
                   "--linear-backend FlashInfer-Cutlass --no-enable-flashinfer-autotune")
                .exit_code,
            0);
  // --ir-op-priority joins the config's ir_op_priority, one op at a time; providers are the
  // engine's.
  EXPECT_EQ(RunCli("check kimi-k2.6 --ir-op-priority.rms_norm 'vllm_c, native' "
                   "--kernel-config '{\"ir_op_priority\": {\"fused_add_rms_norm\": [\"oink\"], "
                   "\"rms_norm\": []}}'")
                .exit_code,
            0);
  ExpectUsageError(
      "check kimi-k2.6 --ir-op-priority '{\"rms_norm\": \"aiter\"}' "
      "--kernel-config.ir_op_priority.rms_norm native",
      "kvtopo: --ir-op-priority's rms_norm beside --kernel-config's "
      "ir_op_priority.rms_norm: the engine refuses the pair ('Op priority for "
      "rms_norm specified via both ir_op_priority and KernelConfig.ir_op_priority, "
      "only one allowed at a time.'); give one\n");
  ExpectUsageError("check kimi-k2.6 --ir-op-priority.fused_add_rms_norm 3",
                   "kvtopo: --ir-op-priority.fused_add_rms_norm must be a provider name, a "
                   "comma-separated string of them or a list of them, got 3\n");
  const auto unknown =
      RunCli("check kimi-k2.6 --ir-op-priority.fused_add_rms_norm vllm_c,flashinfer",
             /*merge_stderr=*/true);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.out,
            "kvtopo: --ir-op-priority names 'flashinfer' for fused_add_rms_norm, which is not a "
            "provider the engine registers (native, vllm_c, aiter, oink, xpu_kernels): its "
            "workers assert as they start ('All providers in priority must be registered "
            "implementations.'); pick from those\n");
}

// --eplb-config whole or by key, checked as the engine's parser checks EPLBConfig; its
// redundant experts need --enable-eplb.
TEST(PlanCli, EplbConfigSpellings) {
  const std::string launch = "check qwen3-next-80b -tp 2 -ep --enable-eplb ";
  EXPECT_EQ(RunCli(launch + "--eplb-config.num_redundant_experts 4 --eplb-config.policy default "
                            "--eplb-config.communicator pynccl --eplb-config.use_async true")
                .exit_code,
            0);
  const auto replaced = RunCli(launch +
                               "--eplb-config '{\"num_redundant_experts\": 4}' "
                               "--eplb-config.window_size 5");
  EXPECT_EQ(replaced.exit_code, 0);
  EXPECT_NE(replaced.out.find("warning [eplb-config-replaced] --eplb-config "
                              "{\"num_redundant_experts\": 4} is dropped"),
            std::string::npos)
      << replaced.out;
  ExpectUsageError(launch + "--eplb-config.communicator gloo",
                   "kvtopo: --eplb-config: communicator \"gloo\" is not one of the engine's: "
                   "torch_nccl, torch_gloo, nixl, pynccl, or null\n");
  ExpectUsageError(launch + "--eplb-config '{\"step_interval\": 0}'",
                   "kvtopo: --eplb-config: step_interval must be an integer of 1 or more, got 0\n");
  ExpectUsageError(launch + "--eplb-config '{\"num_redundant_experts\": -1}'",
                   "kvtopo: --eplb-config: num_redundant_experts must be an integer of 0 or more, "
                   "got -1\n");
  ExpectUsageError(launch + "--eplb-config.log_balancedness null",
                   "kvtopo: --eplb-config: log_balancedness must be true or false, got null\n");
  ExpectUsageError(launch + "--eplb-config.redundant 2",
                   "kvtopo: --eplb-config: 'redundant' is not a field the engine takes (its parser "
                   "refuses it: 'Unexpected keyword argument'); fields: window_size, "
                   "step_interval, num_redundant_experts, log_balancedness, "
                   "log_balancedness_interval, use_async, policy, communicator\n");
  const auto without =
      RunCli("check qwen3-next-80b --eplb-config.num_redundant_experts 4", /*merge_stderr=*/true);
  EXPECT_EQ(without.exit_code, 1);
  EXPECT_EQ(without.out,
            "kvtopo: --eplb-config's num_redundant_experts 4 without --enable-eplb: the engine "
            "refuses it ('num_redundant_experts is set to 4 but EPLB is not enabled. Either "
            "enable EPLB or unset num_redundant_experts.'); add --enable-eplb or drop "
            "num_redundant_experts\n");
}

// Integers as the engine's parser reads them: suffixes for --max-model-len and
// --max-num-batched-tokens only; --kv-cache-memory, which the engine's parser reads as its
// --kv-cache-memory-bytes, in a spelling only kvtopo takes is a warning.
TEST(PlanCli, IntegerAndByteSpellings) {
  EXPECT_EQ(RunCli("check kimi-k2.6 --max-model-len 32k --max-num-batched-tokens 8K").exit_code, 0);
  ExpectUsageError("check kimi-k2.6 --max-num-seqs 1k",
                   "kvtopo: --max-num-seqs: '1k' is not an "
                   "integer\n");
  ExpectUsageError("check kimi-k2.6 --max-model-len 1.5K",
                   "kvtopo: --max-model-len: '1.5K': decimals are not allowed with binary "
                   "suffixes like K (the engine's parser refuses it); did you mean 1.5k?\n");
  const auto gib = RunCli("check kimi-k2.6 --max-model-len 32k --kv-cache-memory 20.5GiB");
  EXPECT_EQ(gib.exit_code, 0);
  EXPECT_NE(gib.out.find("warning [kv-cache-memory-spelling] --kv-cache-memory '20.5GiB': the "
                         "engine's parser reads --kv-cache-memory-bytes (--kv-cache-memory spells "
                         "the same flag) as digits with one k/m/g/t or K/M/G/T suffix only and "
                         "refuses this spelling; write 20992M there"),
            std::string::npos)
      << gib.out;
  // The flag is named as it was typed: the alias, or the last of several spellings.
  const auto alias = RunCli(
      "check kimi-k2.6 --max-model-len 32k --kv-cache-memory 20G "
      "--kv-cache-memory-bytes 12GiB");
  EXPECT_EQ(alias.exit_code, 0);
  EXPECT_NE(alias.out.find("warning [kv-cache-memory-spelling] --kv-cache-memory-bytes '12GiB': "
                           "the engine's parser reads"),
            std::string::npos)
      << alias.out;
  ExpectUsageError("check kimi-k2.6 --kv-cache-memory-bytes 12GiB --kv-cache-memory 0",
                   "kvtopo: --kv-cache-memory must be in [1, 1125899906842624] bytes, got "
                   "'0'\n");
  ExpectUsageError("check kimi-k2.6 -tp x", "kvtopo: -tp: 'x' is not an integer\n");
  // A flag of older releases the fork no longer has: refused (exit 2), as the engine's parser
  // refuses it, naming the fork's form.
  ExpectUsageError("check kimi-k2.6 --max-model-len 32k --swap-space 4 --json",
                   "kvtopo: --swap-space is a flag of older releases the engine no longer has: "
                   "its parser refuses it as an unrecognized argument; drop it\n");
  // An older `vllm serve` line: each removed flag read with the arity it had (the four sizes of
  // --cuda-graph-sizes, a switch in either form, a JSON value), all named in one refusal with
  // the fork's form of each as given; a switch's --no- form (the fork's default) is dropped.
  ExpectUsageError(
      "check kimi-k2.6 --max-model-len 32k --cuda-graph-sizes 1 2 4 8 --num-scheduler-steps 8 "
      "--num-redundant-experts 32 --no-enable-reasoning --eplb-log-balancedness "
      "--override-pooler-config '{\"pooling_type\": \"MEAN\"}' "
      "--guided-decoding-disable-any-whitespace False --device cuda --num-scheduler-steps 4",
      "kvtopo: --cuda-graph-sizes, --num-scheduler-steps, --num-redundant-experts, "
      "--enable-reasoning, --eplb-log-balancedness, --override-pooler-config, "
      "--guided-decoding-disable-any-whitespace and --device are flags of older releases the "
      "engine no longer has: its parser refuses them as unrecognized arguments; drop "
      "--num-scheduler-steps, --enable-reasoning and --device; give --cudagraph-capture-sizes 1 "
      "2 4 8 for --cuda-graph-sizes; give --eplb-config.num_redundant_experts 32 for "
      "--num-redundant-experts; give --eplb-config.log_balancedness true for "
      "--eplb-log-balancedness; give --pooler-config '{\"pooling_type\": \"MEAN\"}' for "
      "--override-pooler-config; give --structured-outputs-config.disable_any_whitespace true "
      "for --guided-decoding-disable-any-whitespace\n");
  // In the fork's forms (disable_any_whitespace with a backend that takes it, which the fork
  // asks for), the line plans.
  EXPECT_EQ(RunCli("check kimi-k2.6 --max-model-len 32k --cudagraph-capture-sizes 1 2 4 8 "
                   "--eplb-config.log_balancedness true "
                   "--structured-outputs-config.backend xgrammar "
                   "--structured-outputs-config.disable_any_whitespace true")
                .exit_code,
            0);
  // A removed flag is read by its whole name only: the engine's parser expands abbreviations of
  // the flags it has, and a prefix of one it no longer has is an unrecognized argument there.
  ExpectUsageError("check kimi-k2.6 --num-lookahead 3",
                   "kvtopo: The following arguments were not expected: 3 --num-lookahead\n");
  EXPECT_EQ(RunCli("check kimi-k2.6 --max-model-len 32k --kv-cache-memory 20992M")
                .out.find("kv-cache-memory-spelling"),
            std::string::npos);
}

// The rest of the engine's argument parser: -sc and its dotted keys, --spec-* keys, --model,
// a repeated flag's last value, flags taking several values or a JSON value by key.
// -O in each spelling the engine's parser takes (-O<x> and -O=<x> are --optimization-level <x>),
// and --compilation-config's dotted keys, decide the CUDA graph mode: Qwen3-Next's 160 recurrent
// blocks refuse 161 rows only under full decode graphs.
TEST(PlanCli, OptimizationLevelAndCompilationConfigSpellings) {
  const std::string launch =
      "check qwen3-next-80b --max-model-len 32768 --kv-cache-memory 2G --max-num-seqs 161 ";
  EXPECT_EQ(RunCli(launch).exit_code, 1);
  EXPECT_EQ(RunCli(launch + "-O3").exit_code, 1);
  for (const char* piecewise :
       {"-O1", "-O=1", "-O 1", "--optimization-level 1", "-O0", "-cc.cudagraph_mode=PIECEWISE",
        "-cc.mode 2", "--compilation-config '{\"cudagraph_mode\": \"none\"}'"}) {
    const auto r = RunCli(launch + piecewise, true);
    EXPECT_EQ(r.exit_code, 0) << piecewise << "\n" << r.out;
  }
  EXPECT_EQ(RunCli(launch + "-O0 -cc.cudagraph_mode=FULL_DECODE_ONLY").exit_code, 1);
  // The dotted keys fold into a value that replaces the JSON given whole, as in the engine.
  const auto r = RunCli(
      launch + "-cc '{\"cudagraph_mode\": \"FULL\"}' -cc.cudagraph_mode=PIECEWISE --json", true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["diagnostics"].size(), 2u) << r.out;
  EXPECT_EQ(j["diagnostics"][1]["code"], "compilation-config-replaced");
  EXPECT_EQ(j["diagnostics"][1]["message"],
            "--compilation-config {\"cudagraph_mode\": \"FULL\"} is dropped: the engine's parser "
            "folds the --compilation-config.KEY arguments into a value of their own that replaces "
            "it, so the plan uses {\"cudagraph_mode\":\"PIECEWISE\"} only; give every key in one "
            "form");
  ExpectUsageError(launch + "-O4", "kvtopo: -O must be in [0, 3], got 4\n");
  // Older releases' -O took the compilation config; the fork's takes the level only.
  ExpectUsageError(launch + "-O '{\"mode\": 3}'",
                   "kvtopo: -O '{\"mode\": 3}' is a compilation config, which older releases "
                   "read as -O: the fork's -O is the optimization level (0 to 3), and its parser "
                   "refuses this; give it as --compilation-config (-cc)\n");
  ExpectUsageError(launch + "-cc.level=3",
                   "kvtopo: --compilation-config: 'level' is a field of older releases the engine "
                   "no longer takes (its parser refuses it: 'Unexpected keyword argument'); give "
                   "\"mode\": 3 instead\n");
  ExpectUsageError(launch + "-cc.lvl=3",
                   "kvtopo: --compilation-config: 'lvl' is not a field the engine takes (its "
                   "parser refuses it: 'Unexpected keyword argument'); fields: mode, "
                   "debug_dump_path, cache_dir, compile_cache_save_format, backend, custom_ops, "
                   "ir_enable_torch_wrap, splitting_ops, compile_mm_encoder, cudagraph_mm_encoder, "
                   "encoder_cudagraph_token_budgets, "
                   "encoder_cudagraph_max_vision_items_per_batch, "
                   "encoder_cudagraph_max_frames_per_batch, compile_sizes, "
                   "compile_ranges_endpoints, inductor_compile_config, inductor_passes, "
                   "cudagraph_mode, cudagraph_num_of_warmups, cudagraph_capture_sizes, "
                   "cudagraph_copy_inputs, cudagraph_specialize_lora, "
                   "use_inductor_graph_partition, pass_config, max_cudagraph_capture_size, "
                   "dynamic_shapes_config, fast_moe_cold_start\n");
}

TEST(PlanCli, VllmServeArgumentsAsTheEnginesParserReadsThem) {
  // A plan's JSON; exit 1 where it is rejected.
  auto plan = [](const std::string& args, int exit_code = 0) {
    auto r = RunCli("plan " + args + " --json", true);
    EXPECT_EQ(r.exit_code, exit_code) << args << "\n" << r.out;
    return r.exit_code == exit_code ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  auto p = plan(
      "--model kimi-k2.6 -tp 2 -dcp 2 -tp 8 -sc.method eagle3 -sc.num_speculative_tokens=2 "
      "-sc.model kimi-k2.6-eagle3-mla");
  EXPECT_EQ(p["model"]["name"], "kimi-k2.6");
  EXPECT_EQ(p["parallel"]["tensor_parallel_size"], 8);
  EXPECT_EQ(p["model"]["num_speculative_tokens"], 2);
  p = plan("kimi-k2.6 --spec-method eagle3 --spec-tokens 3 --spec-model kimi-k2.6-eagle3-mla");
  EXPECT_EQ(p["model"]["num_speculative_tokens"], 3);
  p = plan(
      "kimi-k2.6 -sc '{\"method\": \"eagle3\", \"num_speculative_tokens\": 1, \"model\": "
      "\"kimi-k2.6-eagle3-mla\"}'");
  EXPECT_EQ(p["model"]["num_speculative_tokens"], 1);
  // Dotted keys replace a JSON --speculative-config: the engine appends them as a value of
  // their own, and the last value wins.
  p = plan(
      "kimi-k2.6 --speculative-config '{\"method\": \"eagle3\", \"num_speculative_tokens\": "
      "1}' --speculative-config.method eagle3 --speculative-config.num_speculative_tokens 4",
      1);
  EXPECT_EQ(p["model"]["num_speculative_tokens"], 4);
  // No draft model named: the engine refuses that, so the launch is rejected; the plan shows the
  // figures with the profile's default draft.
  EXPECT_EQ(p["accepted"], false);
  EXPECT_EQ(p["model"]["draft"], "kimi-k2.6-eagle3-mla");
  ASSERT_EQ(p["diagnostics"].size(), 2u) << p.dump();
  EXPECT_EQ(p["diagnostics"][0]["code"], "speculative-default-draft");
  EXPECT_EQ(p["diagnostics"][0]["severity"], "error");
  EXPECT_EQ(p["diagnostics"][0]["message"],
            "--speculative-config names no 'model', so kvtopo plans kimi-k2.6's default eagle3 "
            "draft, profile 'kimi-k2.6-eagle3-mla'; the engine refuses a speculative config "
            "without one ('num_speculative_tokens was provided but without speculative model'): "
            "add \"model\" with the draft's path or repo id");
  EXPECT_EQ(p["diagnostics"][1]["code"], "speculative-config-replaced");
  EXPECT_EQ(p["diagnostics"][1]["message"],
            "--speculative-config {\"method\": \"eagle3\", \"num_speculative_tokens\": 1} is "
            "dropped: the engine's parser folds the --speculative-config.KEY arguments into a "
            "value of their own that replaces it, so the plan uses "
            "{\"method\":\"eagle3\",\"num_speculative_tokens\":4} only; give every key in one "
            "form");
  // Dotted keys fold as the engine's recursive_dict_update folds them: A.B nests, objects merge,
  // and KEY+ lists (comma-separated) append.
  auto folded =
      RunCli("check " + std::string(KVTOPO_SOURCE_DIR) +
                 "/fuzz/corpus/config_plan/llama-3.1-8b.json --max-model-len 8192 --hf-overrides "
                 "'{\"q\": 1}' --hf-overrides.a.b 1 --hf-overrides.a.c 2k --hf-overrides.xs+ a,b "
                 "--hf-overrides.xs+ c",
             true);
  EXPECT_EQ(folded.exit_code, 0) << folded.out;
  EXPECT_NE(folded.out.find("warning [hf-overrides-replaced] --hf-overrides {\"q\": 1} is dropped: "
                            "the engine's parser folds the --hf-overrides.KEY arguments into a "
                            "value of their own that replaces it, so the plan uses "
                            "{\"a\":{\"b\":1,\"c\":2000},\"xs\":[\"a\",\"b\",\"c\"]} only"),
            std::string::npos)
      << folded.out;
  auto r = RunCli(
      "check kimi-k2.6 --served-model-name kimi k26 --cudagraph-capture-sizes 1 2 4 -n 1 -r 0 "
      "--kernel-config '{}' -cc.mode 3 -cc.cudagraph_mode=FULL -O3 --hf-token --seed -1 "
      "--language-model-only --json",
      true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["diagnostics"].size(), 1u) << r.out;
  EXPECT_EQ(j["diagnostics"][0]["message"],
            "accepted, not used for planning: --served-model-name, --hf-token, --seed");
  // What the engine's parser refuses stays a usage error; what its config refuses, a rejection.
  EXPECT_EQ(RunCli("check kimi-k2.6 --port.x 1").exit_code, 2);
  EXPECT_EQ(RunCli("check kimi-k2.6 --model kimi-k2.6").exit_code, 2);
  ExpectUsageError("check kimi-k2.6 -sc '{\"num_speculative_tokens\": 1}' --spec-tokens 2",
                   "kvtopo: --spec-tokens and --speculative-config['num_speculative_tokens'] are "
                   "mutually exclusive\n");
  EXPECT_EQ(RunCli("check kimi-k2.6 --dcp-comm-backend a2a").exit_code, 1);
  EXPECT_EQ(RunCli("check kimi-k2.6 -tp 8 -dcp 8 --dcp-comm-backend a2a").exit_code, 0);
  // --config-format is a planning flag now: its value is checked (usage error).
  ExpectUsageError("check kimi-k2.6 --config-format gguf",
                   "kvtopo: --config-format 'gguf' is not a config format; accepted: auto, hf, "
                   "mistral\n");
  EXPECT_EQ(RunCli("check kimi-k2.6 --config-format mistral").exit_code, 0);
  // --hf-overrides is planned: a JSON object, or dotted keys folded into one (a list with KEY+),
  // which replaces the JSON form as the engine's parser does.
  ExpectUsageError("check kimi-k2.6 --hf-overrides '[1]'",
                   "kvtopo: --hf-overrides must be a JSON object of config values, got [1]\n");
  r = RunCli(
      "check kimi-k2.6 --hf-overrides '{\"max_position_embeddings\": 8192}' "
      "--hf-overrides.architectures+ KimiK25ForConditionalGeneration --max-model-len 8192 "
      "--json",
      true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto diagnostics = nlohmann::json::parse(r.out)["diagnostics"];
  ASSERT_EQ(diagnostics.size(), 2u) << r.out;
  EXPECT_EQ(diagnostics[0]["message"],
            "config.json 'profiles/kimi-k2.6.json' is read with --hf-overrides architectures, as "
            "the engine sets them on its config");
  EXPECT_EQ(diagnostics[1]["message"],
            "--hf-overrides {\"max_position_embeddings\": 8192} is dropped: the engine's parser "
            "folds the --hf-overrides.KEY arguments into a value of their own that replaces it, so "
            "the plan uses {\"architectures\":[\"KimiK25ForConditionalGeneration\"]} only; give "
            "every key in one form");
  // --kv-cache-dtype-skip-layers takes one or more values (a flag ends them), from a config
  // file's list too.
  auto layer_dtypes = [](const nlohmann::json& p) {
    std::map<std::string, std::string> out;
    for (const auto& l : p["layers"]) out[l["name"]] = l["kv_cache_dtype"];
    return out;
  };
  p = plan(
      "gpt-oss-120b --kv-cache-dtype fp8 --kv-cache-dtype-skip-layers 1 sliding_window "
      "--port 1");
  auto dtypes = layer_dtypes(p);
  EXPECT_EQ(dtypes["model.layers.0.self_attn"], "auto");  // windowed
  EXPECT_EQ(dtypes["model.layers.1.self_attn"], "auto");
  EXPECT_EQ(dtypes["model.layers.3.self_attn"], "fp8");
  ASSERT_EQ(p["diagnostics"].size(), 1u) << p.dump();
  EXPECT_EQ(p["diagnostics"][0]["message"], "accepted, not used for planning: --port");
  const std::string yaml =
      (std::filesystem::temp_directory_path() / "kvtopo_cli_skip.yaml").string();
  std::ofstream(yaml) << "kv-cache-dtype: fp8\nkv-cache-dtype-skip-layers: [3]\n";
  dtypes = layer_dtypes(plan("gpt-oss-120b --config " + yaml));
  std::filesystem::remove(yaml);
  EXPECT_EQ(dtypes["model.layers.3.self_attn"], "auto");
  EXPECT_EQ(dtypes["model.layers.1.self_attn"], "fp8");
  // argparse's abbreviations: a unique prefix names its flag; several, an error naming them.
  p = plan(
      "kimi-k2.6 --tensor-parallel 8 --max-model 64k --no-enable-prefix --gpu-mem 0.9 "
      "--served-model kimi");
  EXPECT_EQ(p["parallel"]["tensor_parallel_size"], 8);
  EXPECT_EQ(p["model"]["max_model_len"], 64000);
  ASSERT_EQ(p["diagnostics"].size(), 1u) << p.dump();
  EXPECT_EQ(p["diagnostics"][0]["message"], "accepted, not used for planning: --served-model-name");
  ExpectUsageError("check kimi-k2.6 --max-num 4",
                   "kvtopo: ambiguous option: --max-num could match --max-num-batched-tokens, "
                   "--max-num-partial-prefills, --max-num-seqs\n");
}

// `--config FILE`: the file's flags come before the command line's, which win; the command
// line's MODEL wins over the file's `model`; a false switch is dropped, with a warning.
TEST(PlanCli, VllmConfigFile) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string path = (dir / "kvtopo_cli_serve.yaml").string();
  std::ofstream(path) << "model: kimi-k2.6\n"
                         "tensor-parallel-size: 8\n"
                         "decode_context_parallel_size: 4\n"
                         "max-model-len: 64k\n"
                         "enable-prefix-caching: false\n"
                         "served-model-name: [kimi, k26]\n"
                         "seed: 7\n"
                         "speculative-config: {method: eagle3, model: kimi-k2.6-eagle3-mla, "
                         "num_speculative_tokens: 3}\n";
  auto r = RunCli("plan --config " + path + " -tp 16 --json", true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto p = nlohmann::json::parse(r.out);
  EXPECT_EQ(p["model"]["name"], "kimi-k2.6");
  EXPECT_EQ(p["parallel"]["tensor_parallel_size"], 16);
  EXPECT_EQ(p["parallel"]["decode_context_parallel_size"], 4);
  EXPECT_EQ(p["model"]["max_model_len"], 64000);
  EXPECT_EQ(p["model"]["num_speculative_tokens"], 3);
  ASSERT_EQ(p["diagnostics"].size(), 2u) << r.out;
  EXPECT_EQ(p["diagnostics"][0]["code"], "config-file-false-dropped");
  EXPECT_EQ(p["diagnostics"][1]["message"],
            "accepted, not used for planning: --served-model-name, --seed");
  // The command line's MODEL and flags win over the file's.
  r = RunCli("plan glm-5.1 --config " + path +
                 " -sc '{\"method\": \"mtp\", "
                 "\"num_speculative_tokens\": 1}' -tp 8 -dcp 1 --json",
             true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  p = nlohmann::json::parse(r.out);
  EXPECT_EQ(p["model"]["name"], "glm-5.1");
  EXPECT_EQ(p["model"]["num_speculative_tokens"], 1);
  EXPECT_EQ(p["parallel"]["decode_context_parallel_size"], 1);
  // A file's `seed` is the engine's flag, not simulate's own --seed.
  r = RunCli("simulate glm-5.1 --workload decode-steady --config " + path +
                 " -sc '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}' --json",
             true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["seed"], 0);
  // The engine's own refusals, and its silent one: --config=FILE is never read.
  r = RunCli("check --config " + path + " --config " + path, true);
  EXPECT_EQ(r.out, "kvtopo: --config is given more than once; the engine reads one file\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(RunCli("check kimi-k2.6 --config", true).out, "kvtopo: --config needs a file\n");
  r = RunCli("check kimi-k2.6 --config serve.toml", true);
  EXPECT_EQ(r.out,
            "kvtopo: --config serve.toml: a config file must be a .yaml or .yml file, got "
            "'toml'\n");
  r = RunCli("check kimi-k2.6 --config=" + path + " --json", true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["diagnostics"].size(), 1u) << r.out;
  EXPECT_EQ(j["diagnostics"][0]["code"], "config-file-ignored");
  EXPECT_EQ(j["diagnostics"][0]["message"],
            "--config=" + path +
                " is ignored: the engine reads a config file only from "
                "'--config FILE' (two arguments), so the plan ignores it too");
  std::filesystem::remove(path);
}

TEST(PlanCli, TableSaysTheBudgetIsTheDefault) {
  auto r = RunCli("plan kimi-k3 -tp 16 -dcp 16 --max-model-len 100000");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("32.00 GiB per rank (default budget; pass --kv-cache-memory to set yours)"),
            std::string::npos)
      << r.out;
  r = RunCli("plan --kv-cache-memory 40GiB");
  EXPECT_NE(r.out.find("memory     40.00 GiB per rank\n"), std::string::npos) << r.out;
}

TEST(PlanCli, SvgDrawsEveryGroup) {
  const std::string path = ::testing::TempDir() + "/kvtopo_pool.svg";
  auto r = RunCli(
      "plan glm-5.3-flash -tp 4 -dcp 4 --kv-cache-memory 12GiB --speculative-config "
      "'{\"method\":\"dflash\",\"model\":\"glm-5.3-flash-dflash2\",\"num_speculative_tokens\":7}' "
      "--svg " +
      path);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream in(path);
  std::stringstream svg;
  svg << in.rdbuf();
  EXPECT_EQ(svg.str().rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  for (const char* row : {">g0 recurrent target", ">g4 mla target", ">g5 sliding_window draft"}) {
    EXPECT_NE(svg.str().find(row), std::string::npos) << row;
  }
  EXPECT_NE(svg.str().find("</svg>"), std::string::npos);
}

TEST(CheckCli, AcceptsRejectsAndExplains) {
  EXPECT_EQ(RunCli("check").exit_code, 0);
  auto r = RunCli("check -dcp 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("[b12x-dcp-gathered-heads]"), std::string::npos) << r.out;
  r = RunCli(
      "check --speculative-config "
      "'{\"method\":\"dspark\",\"num_speculative_tokens\":7,"
      "\"draft_attention_backend\":\"TRITON_MLA\"}' --json");
  EXPECT_EQ(r.exit_code, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["accepted"], false);
  bool found = false;
  for (const auto& d : j["diagnostics"]) found = found || d["code"] == "dspark-dcp-backend";
  EXPECT_TRUE(found) << r.out;
  r = RunCli("check --kv-cache-memory 1GiB");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("[kv-cache-memory]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the largest --max-model-len that fits is"), std::string::npos);
}

// A launch rejected before a plan exists (DCP not dividing TP) was an error line with no JSON;
// check reports it like any rejection: exit 1 and its one error diagnostic.
TEST(CheckCli, ARejectionBeforePlanningIsAVerdict) {
  const std::string message =
      "--tensor-parallel-size 1 is not divisible by --decode-context-parallel-size 4; DCP splits "
      "each TP group, so choose a DCP size that divides the TP size";
  auto r = RunCli("check kimi-k2.6 -dcp 4 --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(r.out),
            (nlohmann::json{
                {"accepted", false},
                {"diagnostics",
                 {{{"severity", "error"}, {"code", "parallel-config"}, {"message", message}}}}}));
  r = RunCli("check kimi-k2.6 -dcp 4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "rejected: kimi-k2.6\n  error [parallel-config] " + message + "\n");
  // `plan` has no plan to print: the message, exit 1.
  r = RunCli("plan kimi-k2.6 -dcp 4", /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "kvtopo: " + message + "\n");
}

TEST(Cli, UsageErrorsAreOneLineAndExitTwo) {
  const char* bad[] = {
      "plan --bogus",
      "plan --speculative-config '{bad'",
      "plan --speculative-config '{\"method\":\"warp\",\"num_speculative_tokens\":1}'",
      "plan --kv-cache-memory 0",
      "plan --kv-cache-memory 12XB",
      "plan --kv-cache-memory 99999999999TiB",
      "plan --block-size -5",
      "plan --block-size 0",
      "plan --max-model-len 9000000000000000000",
      "plan nosuchmodel",
      "plan --kv-cache-dtype fp4",
      "plan --kv-cache-dtype bf16",
      "plan --device-capability 9",
      "plan --mamba-backend cuda",
      "simulate --workload nope",
      "simulate --workload-file /nonexistent.jsonl",
  };
  for (const char* args : bad) {
    auto r = RunCli(args, /*merge_stderr=*/true);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("kvtopo: ", 0), 0u) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
  }
}

TEST(Cli, VersionAndHelp) {
  auto r = RunCli("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "kvtopo 0.1.0\n");
  r = RunCli("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* cmd : {"plan", "check", "slots", "simulate", "profiles"}) {
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
  }
}

TEST(SimulateCli, MillionInjectedFailureNamesTheTokenCount) {
  auto r = RunCli("simulate --workload million --inject-dcp-scaled-recurrent-table --json");
  EXPECT_EQ(r.exit_code, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["invariant_violations"], 1);
  EXPECT_EQ(j["first_violation_tokens"], 63744);
}

// The report and the pool-size error name where the pool's block count came from.
TEST(SimulateCli, PoolSizeNamesItsSource) {
  auto r = RunCli("simulate --workload w2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pool_sizing"], "4096 blocks from the W2 reference shape");
  r = RunCli("simulate --num-gpu-blocks-override 5000 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pool_sizing"], "5000 blocks from --num-gpu-blocks-override");
  EXPECT_EQ(j["pool_checks"], 1302);
  // With a model, the override alone sizes the pool (it was once read only with a memory budget).
  r = RunCli(
      "simulate qwen3-next-80b -tp 4 --max-model-len 4096 --workload decode-steady "
      "--num-gpu-blocks-override 50000 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["num_blocks"], 50000);
  EXPECT_EQ(j["pool_sizing"], "50000 blocks from --num-gpu-blocks-override");
  // A synthetic built-in plans its own model: other launch options are refused, not ignored.
  ExpectUsageError(
      "simulate --workload w1 -tp 4",
      "kvtopo: --tensor-parallel-size does not apply to --workload w1, which plans its own "
      "synthetic model; pass a MODEL to run the workload on a launch of yours\n");
  ExpectUsageError(
      "simulate --num-gpu-blocks-override 500000000",
      "kvtopo: a pool of 500000000 blocks (from --num-gpu-blocks-override) is beyond the "
      "simulator's 67108864 blocks\n");
  ExpectUsageError("simulate --kv-cache-memory 1000TiB",
                   "kvtopo: a pool of 414252246 blocks (from --kv-cache-memory) is beyond the "
                   "simulator's 67108864 blocks\n");
  // A rejected launch prints its errors: `kvtopo check` cannot plan a workload's own model.
  r = RunCli("simulate --workload w1 --num-gpu-blocks-override 1", /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out,
            "kvtopo: the launch is rejected: synthetic-dense-32l\n"
            "  error [kv-cache-memory] one request of --max-model-len 8192 needs 1073741824 B of "
            "KV cache per rank, more than the 2097152 B the pool holds; the largest "
            "--max-model-len that fits is 16; raise --num-gpu-blocks-override or lower "
            "--max-model-len\n"
            "  error [kv-cache-memory] the pool holds 1 block of 2097152 B; at least two (the "
            "null block and one page) are needed; raise --num-gpu-blocks-override\n");
}

// The whole-pool walks get 2^25 block visits: a pool of 131,072 blocks is walked after each of
// the first 256 of 578 steps, then after step 512 and at the end.
TEST(SimulateCli, LargePoolWalksTheWholePoolWithinItsBudget) {
  auto r = RunCli("simulate --workload w1 --num-gpu-blocks-override 131072");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("checks     578 invariant checks, 0 violations (whole-pool check 258 times "
                       "on 131072 blocks: after each of the first 256 steps, then after step 512 "
                       "and at the end)\n"),
            std::string::npos)
      << r.out;
  // Three steps past the budget are all named; "..." only stands for steps left out.
  r = RunCli("simulate --workload w1 --num-gpu-blocks-override 400000");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("(whole-pool check 87 times on 400000 blocks: after each of the first 83 "
                       "steps, then after steps 128, 256, 512 and at the end)\n"),
            std::string::npos)
      << r.out;
}

// 41,404 steps on a pool of 43,777 blocks walked the pool after every step (25 s); the budget
// keeps 766 of them, then steps 1024, ..., 32768 and the end. (16 tokens a step run 16 rows at
// most, as the engine lowers a defaulted --max-num-seqs to them.)
TEST(SimulateCli, ALongRunOnAMidSizePoolKeepsItsWalksWithinTheBudget) {
  auto r = RunCli(
      "simulate gpt-oss-120b --workload decode-steady --max-num-batched-tokens 16 "
      "--num-gpu-blocks-override 43777 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["num_blocks"], 43777);
  EXPECT_EQ(j["steps"], 41404);
  EXPECT_EQ(j["invariant_checks"], 41404);
  EXPECT_EQ(j["invariant_violations"], 0);
  EXPECT_EQ(j["pool_check_every_step_until"], 766);
  EXPECT_EQ(j["pool_checks"], 773);
}

// With DCP the report gives rank 0's and the last rank's figures; a workload file's error names
// the file and the line.
TEST(SimulateCli, DcpRanksAndWorkloadFileErrors) {
  auto r = RunCli(
      "simulate kimi-k2.6 -tp 4 -dcp 4 --max-model-len 8192 --kv-cache-memory 1GiB --workload "
      "prefix-hit");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\nranks      4, 58 free pages each at the end; peak local tokens rank 0 "
                       "58968, rank 3 58930\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nprefix     94.02% hit (4091904 of 4352000 prompt tokens)\n"),
            std::string::npos);
  const std::string path = ::testing::TempDir() + "/kvtopo_bad_workload.jsonl";
  std::ofstream(path) << "{\"prompt_len\": 300}\n{\"prompt_len\": -3}\n";
  ExpectUsageError("simulate qwen3-next-80b -tp 4 --max-model-len 4096 --workload-file " + path,
                   "kvtopo: --workload-file '" + path +
                       "': workload line 2: field 'prompt_len' must be an integer in [1, "
                       "2147483647], got -3\n");
}

TEST(SimulateCli, WorkloadFileRuns) {
  const std::string path = ::testing::TempDir() + "/kvtopo_workload.jsonl";
  std::ofstream(path) << "{\"prompt_len\": 300, \"decode_steps\": 5}\n"
                         "{\"prompt_len\": 200, \"arrival_step\": 1, \"decode_steps\": 3}\n";
  auto r = RunCli("simulate qwen3-next-80b -tp 4 --max-model-len 4096 --workload-file " + path +
                  " --json --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["requests_finished"], 2);
  EXPECT_EQ(j["invariant_violations"], 0);
  EXPECT_EQ(j["seed"], 3);
  // Timing mode: the same run without the per-step walks.
  auto quiet = RunCli("simulate qwen3-next-80b -tp 4 --max-model-len 4096 --workload-file " + path +
                      " --json --seed 3 --no-invariant-checks --no-slot-checks");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.out;
  const auto k = nlohmann::json::parse(quiet.out);
  EXPECT_EQ(k["invariant_checks"], 0);
  EXPECT_EQ(k["requests_finished"], 2);
  EXPECT_EQ(k["allocations"], j["allocations"]);
  EXPECT_GT(k["decode_allocate_slots_calls"], 0);
}

}  // namespace
}  // namespace kvtopo

namespace kvtopo {
namespace {

using ::kvtopo::testing::ExpectUsageError;
using ::kvtopo::testing::RunCli;

TEST(SlotsCli, JsonSchemaAndUsageErrors) {
  // Spaces around the commas are read past ("7, 3" is "7,3").
  auto r = RunCli("slots -dcp 4 --block-size 16 --seq-len 37 --block-ids '7, 3' --json");
  ASSERT_EQ(r.exit_code, 0);
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["local_lens"], nlohmann::json({10, 9, 9, 9}));
  ASSERT_EQ(json["slot_mapping"].size(), 4u);
  EXPECT_EQ(json["slot_mapping"][1][5], 113);
  EXPECT_EQ(json["slot_mapping"][0][5], -1);
  r = RunCli(
      "slots --decode-context-parallel-size 4 --cp-kv-cache-interleave-size 16 "
      "--block-size 16 --seq-len 10 --block-ids 7 --json");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["local_lens"], nlohmann::json({10, 0, 0, 0}));
  ExpectUsageError("slots -dcp 4 --block-size 16 --seq-len 100 --block-ids 7",
                   "kvtopo slots: --seq-len 100 needs 2 block ids (64 tokens per block id), got 1 "
                   "in --block-ids\n");
  ExpectUsageError(
      "slots -dcp 4 --dcp-kv-cache-interleave-size 3 --block-size 16 --seq-len 8 --block-ids 7",
      "kvtopo slots: layer 'slots': block size 16 is not a multiple of "
      "--dcp-kv-cache-interleave-size 3; change --block-size or choose an interleave that "
      "divides the block size\n");
  ExpectUsageError("slots -dcp 4 --block-size 16 --seq-len 8 --block-ids 7,x",
                   "kvtopo slots: --block-ids: 'x' is not a block id (a comma-separated list of "
                   "non-negative integers)\n");
  ExpectUsageError("slots -dcp 0 --block-size 16 --seq-len 8 --block-ids 7",
                   "kvtopo: -dcp must be positive, got 0\n");
  ExpectUsageError("slots --block-size 16 --seq-len 8 --block-ids 2147483648",
                   "kvtopo slots: --block-ids: 2147483648 is beyond the largest block id, "
                   "2147483647 (block ids are 32-bit)\n");
  ExpectUsageError("slots --block-size 16 --seq-len -1 --block-ids 7",
                   "kvtopo slots: --seq-len must be in [0, 2147483647], got -1\n");
}

// Without --json: each rank's local length, then the rank and slot of every position it holds.
TEST(SlotsCli, TextListsEachPositionOnItsRank) {
  auto r = RunCli(
      "slots -dcp 4 --dcp-kv-cache-interleave-size 2 --block-size 16 --seq-len 6 --block-ids 7");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out,
            "rank 0: local length 2\nrank 1: local length 2\nrank 2: local length 2\n"
            "rank 3: local length 0\nposition  rank  slot\n       0     0  112\n"
            "       1     0  113\n       2     1  112\n       3     1  113\n"
            "       4     2  112\n       5     2  113\n");
}

// A planned group's geometry: GLM-5.3-Flash's sharded MLA group, DCP4, interleave 4, block 2304.
TEST(SlotsCli, PlannedGroupUsesItsGeometry) {
  auto r = RunCli(
      "slots glm-5.3-flash -tp 4 -dcp 4 --dcp-kv-cache-interleave-size 4 --group 4 "
      "--seq-len 10 --block-ids 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["local_lens"], nlohmann::json({4, 4, 2, 0}));
  // Block 2 of 2,304-token pages: slots from 4,608; rank 1 holds positions 4..7.
  EXPECT_EQ(j["slot_mapping"][1], nlohmann::json({-1, -1, -1, -1, 4608, 4609, 4610, 4611, -1, -1}));
  EXPECT_EQ(j["slot_mapping"][2][8], 4608);
  EXPECT_EQ(RunCli("slots --group 0 --seq-len 20 --block-ids 5").exit_code, 2);  // recurrent
  EXPECT_EQ(RunCli("slots --group 17 --seq-len 20 --block-ids 5").exit_code, 2);
  EXPECT_EQ(RunCli("slots --group 12 --seq-len 20000 --block-ids 5").exit_code, 2);  // 2 ids
  // DeepSeek-V4's compressed group holds several positions a row: refused as a group (exit 1),
  // mapped for one layer with --layer (its compress ratio applies); its sliding windows map a
  // slot per position.
  const std::string v4 = std::string(KVTOPO_SOURCE_DIR) +
                         "/fuzz/corpus/config_plan/deepseek-v4-flash-shaped.json -tp 2 "
                         "--kv-cache-dtype fp8 --max-model-len 30000";
  r = RunCli("slots " + v4 + " --seq-len 4 --block-ids 3", /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out,
            "kvtopo: group 0 holds layer 'model.layers.2.attn.indexer.k_cache', compressed 4 "
            "times (a row per 4 positions), whose slots are not a position's each: name the "
            "layer with --layer (its compress ratio applies), or choose a group of uncompressed "
            "layers with --group\n");
  r = RunCli("slots " + v4 + " --seq-len 4 --block-ids 3 --group 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["slot_mapping"][0], nlohmann::json({192, 193, 194, 195}));
  // Layer 2's MLA cache: a row per 4 positions, 64 rows a 256-token block.
  r = RunCli("slots " + v4 + " --seq-len 12 --block-ids 5 --layer model.layers.2.attn --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out,
            "{\"compress_ratio\":4,\"local_lens\":[3],\"slot_mapping\":[[-1,-1,-1,320,-1,-1,"
            "-1,321,-1,-1,-1,322]]}\n");
  // Layer 3's: a row per 128 positions, 2 a block; position 383 is row 2, block 7's first.
  r = RunCli("slots " + v4 + " --seq-len 520 --block-ids 5,7,9 --layer model.layers.3.attn");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out,
            "rank 0: local length 4 (rows, one per 128 positions)\nposition  rank  slot\n"
            "     127     0  10\n     255     0  11\n     383     0  14\n     511     0  15\n");
  r = RunCli("slots " + v4 + " --seq-len 12 --block-ids 5 --layer nope", /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out,
            "kvtopo: --layer 'nope' is no layer of the plan (kvtopo plan --json lists them under "
            "\"layers\")\n");
  r = RunCli("slots " + v4 + " --seq-len 12 --block-ids 5 --layer model.layers.2.attn --group 1",
             /*merge_stderr=*/true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "kvtopo: --layer 'model.layers.2.attn' is in group 0, not in --group 1\n");
  ExpectUsageError("slots --seq-len 4 --block-ids 3 --layer ''",
                   "kvtopo slots: --layer needs a layer's name, got ''\n");
}

}  // namespace
}  // namespace kvtopo

namespace kvtopo {
namespace {

TEST(ProfilesCli, ListsEveryEmbeddedProfile) {
  auto r = ::kvtopo::testing::RunCli("profiles");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(
      r.out.find("kimi-k3                  target    KimiK3ForConditionalGeneration         93"),
      std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find("kimi-k3-dspark           draft     K3DSparkModel                           5"),
      std::string::npos);
  EXPECT_NE(
      r.out.find("backends                 backends  -                                      16"),
      std::string::npos);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 13);  // header + 12 files
}

// --architectures: what the "not supported" message points at, one a line, sorted.
TEST(ProfilesCli, ListsTheArchitectures) {
  auto r = ::kvtopo::testing::RunCli("profiles --architectures");
  ASSERT_EQ(r.exit_code, 0);
  const std::vector<std::string> names = ListArchitectures();
  ASSERT_EQ(names.size(), 272u);
  EXPECT_EQ(r.out, fmt::format("{}\n", fmt::join(names, "\n")));
  EXPECT_EQ(names.front(), "AXK1ForCausalLM");
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_TRUE(std::binary_search(names.begin(), names.end(), "DeepseekV4ForCausalLM"));
}

// `kvtopo options`: a line per launch option (flag, value kind, help); --markdown is the page in
// docs/launch-options.md.
TEST(OptionsCli, ListsTheLaunchOptionTable) {
  auto r = ::kvtopo::testing::RunCli("options");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("--tensor-parallel-size             integer  TP size; default 1\n", 0), 0u);
  EXPECT_EQ(static_cast<size_t>(std::count(r.out.begin(), r.out.end(), '\n')),
            LaunchOptionTable().size());
  r = ::kvtopo::testing::RunCli("options --markdown");
  ASSERT_EQ(r.exit_code, 0);
  std::ifstream in(std::string(KVTOPO_SOURCE_DIR) + "/docs/launch-options.md");
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_EQ(r.out, doc.str());
}

}  // namespace
}  // namespace kvtopo
