// The `vllm serve` flags kvtopo does not plan with: their values checked as the engine's parser
// and configs check them (profiles/vllm-flags.json, src/model/vllm_flags.cc).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "internal/units.h"
#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/plan.h"
#include "model/test_configs.h"

namespace kvtopo {
namespace {

using testing_configs::OnlyLaunchDiagnostic;

using testing::ExpectUsageError;
using testing::RunCli;

// The refusal of `o` with the flags given (empty when the flags pass).
std::string Refusal(std::vector<VllmFlagValue> values, LaunchOptions o = {}) {
  o.not_planned_values = std::move(values);
  const Status s = CheckVllmFlagValues(o);
  return s.ok() ? "" : s.message();
}

VllmFlagValue Flag(std::string flag, std::vector<std::string> values) {
  return {.flag = std::move(flag), .values = std::move(values)};
}

VllmFlagValue Switch(std::string flag, bool on = true) {
  return {.flag = std::move(flag), .on = on};
}

TEST(VllmFlags, TypesChoicesAndBounds) {
  EXPECT_EQ(Refusal({Flag("--port", {"80a"})}),
            "--port '80a' is not an integer (the engine's parser refuses it: 'invalid int value')");
  EXPECT_EQ(Refusal({Flag("--port", {" 8_000 "})}), "");  // int() takes both
  EXPECT_EQ(Refusal({Flag("--port", {})}),
            "--port needs a value (the engine's parser refuses it: 'expected one argument')");
  EXPECT_EQ(Refusal({Flag("--stream-interval", {"0"})}),
            "--stream-interval 0: the engine refuses it as it builds its config ('Input should "
            "be greater than or equal to 1')");
  EXPECT_EQ(Refusal({Flag("--kv-cache-metrics-sample", {"0"})}),
            "--kv-cache-metrics-sample 0: the engine refuses it as it builds its config ('Input "
            "should be greater than 0')");
  // pydantic checks the upper bound first, which NaN fails.
  EXPECT_EQ(Refusal({Flag("--kv-cache-metrics-sample", {"nan"})}),
            "--kv-cache-metrics-sample nan: the engine refuses it as it builds its config ('Input "
            "should be less than or equal to 1')");
  EXPECT_EQ(Refusal({Flag("--kv-cache-metrics-sample", {"+-1"})}),
            "--kv-cache-metrics-sample '+-1' is not a number (the engine's parser refuses it: "
            "'invalid float value')");
  EXPECT_EQ(Refusal({Flag("--kv-cache-metrics-sample", {"1_0e-1"})}), "");  // float(): 1.0
  EXPECT_EQ(Refusal({Flag("--cpu-offload-gb", {"four"})}),
            "--cpu-offload-gb 'four' is not a number (the engine's parser refuses it: 'invalid "
            "float value')");
  EXPECT_EQ(Refusal({Flag("--scheduling-policy", {"lifo"})}),
            "--scheduling-policy 'lifo' is not one of the engine's choices: fcfs, priority (its "
            "parser refuses it)");
  // optional_type turns "None" into None before argparse checks the choices, which list 'None'.
  EXPECT_EQ(Refusal({Flag("--mm-encoder-attn-dtype", {"None"})}),
            "--mm-encoder-attn-dtype 'None' is not one of the engine's choices: fp8 (its parser "
            "refuses it)");
  EXPECT_EQ(Refusal({Flag("--distributed-timeout-seconds", {"None"})}), "");
  EXPECT_EQ(Refusal({Flag("--safetensors-prefetch-block-size", {"16M"})}), "");
  EXPECT_EQ(Refusal({Flag("--safetensors-prefetch-block-size", {"0k"})}),
            "--safetensors-prefetch-block-size 0k: the engine refuses it as it builds its config "
            "('Input should be greater than or equal to 1')");
  EXPECT_EQ(Refusal({Flag("--allowed-origins", {"*"})}),
            "--allowed-origins *: not JSON (the engine's parser refuses it: 'invalid loads "
            "value')");
  EXPECT_EQ(Refusal({Flag("--default-chat-template-kwargs", {"None"})}),
            "--default-chat-template-kwargs None: not JSON (the engine's parser refuses it: "
            "'invalid loads value'); write null");
  // kvtopo's bound on every JSON value's nesting holds here too.
  EXPECT_EQ(Refusal({Flag("--allowed-origins", {std::string(65, '[') + std::string(65, ']')})}),
            "--allowed-origins nests arrays and objects deeper than 64 levels");
  // Multimodal bounds are MultiModalConfig's, which a text model never builds.
  EXPECT_EQ(Refusal({Flag("--video-pruning-rate", {"2"})}), "");
}

// A list flag's items are read by optional_type: "None" and an empty item are None, which the
// config class of a `list[X] | None` field refuses; --api-key drops them.
TEST(VllmFlags, NoneItemsOfLists) {
  EXPECT_EQ(Refusal({Flag("--served-model-name", {"kimi", "None"})}),
            "--served-model-name 'None': the engine's parser reads the item as None "
            "(optional_type), which its ModelConfig refuses as it is built ('Input should be a "
            "valid string'); drop the item");
  EXPECT_EQ(Refusal({Flag("--allowed-media-domains", {""})}),
            "--allowed-media-domains '': the engine's parser reads the item as None "
            "(optional_type), which its ModelConfig refuses as it is built ('Input should be a "
            "valid string'); drop the item");
  EXPECT_EQ(Refusal({Switch("--numa-bind"), Flag("--numa-bind-nodes", {"0", "None"})}),
            "--numa-bind-nodes 'None': the engine's parser reads the item as None "
            "(optional_type), which its ParallelConfig refuses as it is built ('Input should be a "
            "valid integer'); drop the item");
  // The LoRA config is built with --enable-lora only.
  EXPECT_EQ(Refusal({Flag("--lora-target-modules", {"None"})}), "");
  LaunchOptions lora;
  lora.enable_lora = true;
  EXPECT_EQ(Refusal({Flag("--lora-target-modules", {"None"})}, lora),
            "--lora-target-modules 'None': the engine's parser reads the item as None "
            "(optional_type), which its LoRAConfig refuses as it is built ('Input should be a "
            "valid string'); drop the item");
  // Lists of plain strings keep the text "None".
  EXPECT_EQ(Refusal({Flag("--ignore-patterns", {"None"})}), "");
  LaunchOptions o;
  o.model = "gpt-oss-120b";
  o.logits_processors = "my.Processor None";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--logits-processors 'None': the engine's parser reads the item as None "
            "(optional_type), which its ModelConfig refuses as it is built ('Input should be a "
            "valid string'); drop the item");
  o.logits_processors.reset();
  // --api-key with no key but None items: the server runs without authentication.
  o.not_planned_values = {Flag("--api-key", {"", "None"})};
  Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(OnlyLaunchDiagnostic(c, "api-key-none"),
            "--api-key '' None gives no key: the API server drops the keys the parser reads as "
            "None (\"None\" and empty ones) and, with --api-key given, does not read "
            "VLLM_API_KEY, so it serves without authentication; give the key, or drop --api-key "
            "to use VLLM_API_KEY");
  o.not_planned_values = {Flag("--api-key", {"None", "secret"})};
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->launch_diagnostics.empty());
}

// --calculate-kv-scales on: the engine's deprecation warning (CacheConfig's validator of the
// field); off, nothing.
TEST(VllmFlags, CalculateKvScalesIsDeprecated) {
  LaunchOptions o;
  o.model = "gpt-oss-120b";
  o.not_planned_values = {Switch("--calculate-kv-scales")};
  Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(OnlyLaunchDiagnostic(c, "calculate-kv-scales-deprecated"),
            "--calculate-kv-scales is deprecated: the engine warns as it builds its cache config "
            "('The `--calculate-kv-scales` option is deprecated and will be removed in v0.19. "
            "The scales will be loaded from the model checkpoint if available, otherwise they "
            "default to 1.0.'); the cache's pages are the same either way; drop the flag");
  o.not_planned_values = {Switch("--calculate-kv-scales", false)};
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->launch_diagnostics.empty());
}

// --fail-on-environ-validation refuses a VLLM_ variable vllm/envs.py does not register; without
// it the engine only warns.
TEST(VllmFlags, EnvironmentValidation) {
  EXPECT_EQ(KnownVllmEnvironment().size(), 266u);
  LaunchOptions o;
  o.vllm_environment = {"VLLM_WORKER_MULTIPROC_METHOD", "VLLM_NOT_REGISTERED",
                        "VLLM_K3_KV_GROUP_SIZE"};
  EXPECT_EQ(Refusal({}, o), "");
  EXPECT_EQ(Refusal({Switch("--fail-on-environ-validation", false)}, o), "");
  EXPECT_EQ(Refusal({Switch("--fail-on-environ-validation")}, o),
            "--fail-on-environ-validation with VLLM_NOT_REGISTERED, VLLM_K3_KV_GROUP_SIZE set, "
            "variables the engine does not register (vllm/envs.py): it refuses the launch as it "
            "builds its config ('Unknown vLLM environment variable detected: "
            "VLLM_NOT_REGISTERED'); unset them or drop --fail-on-environ-validation");
  // The CLI reads its own environment (emptied here but for the variable named).
  const testing::CliResult refused = RunCli("check kimi-k2.6 -tp 8 --fail-on-environ-validation",
                                            true, "-i VLLM_NOT_REGISTERED=1");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.out,
            "kvtopo: --fail-on-environ-validation with VLLM_NOT_REGISTERED set, a variable the "
            "engine does not register (vllm/envs.py): it refuses the launch as it builds its "
            "config ('Unknown vLLM environment variable detected: VLLM_NOT_REGISTERED'); unset "
            "it or drop --fail-on-environ-validation\n");
  EXPECT_EQ(RunCli("check kimi-k2.6 -tp 8 --fail-on-environ-validation", false,
                   "-i VLLM_WORKER_MULTIPROC_METHOD=spawn")
                .exit_code,
            0);
  EXPECT_EQ(RunCli("check kimi-k2.6 -tp 8", false, "-i VLLM_NOT_REGISTERED=1").exit_code, 0);
}

// A variable of older releases that the fork no longer registers or reads: the engine warns as
// it starts and runs without it, which the plan says, with the fork's form of the value where it
// has one (AttentionConfig's and ProfilerConfig's fields, --all2all-backend, ...). The fork's own
// variables, which envs.py does not register either but its modules read, are not among them.
TEST(VllmFlags, EnvironmentOfOlderReleases) {
  LaunchOptions o;
  o.model = "kimi-k2.6";
  o.max_model_len = 32768;
  o.vllm_environment = {"VLLM_ATTENTION_BACKEND=FLASHINFER_MLA",
                        "VLLM_USE_V1=0",
                        "VLLM_TORCH_PROFILER_DIR=/tmp/a b",
                        "VLLM_ALL2ALL_BACKEND",
                        "VLLM_K3_KV_GROUP_SIZE=4",
                        "VLLM_NOT_REGISTERED=1"};
  const Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  std::vector<std::string> messages;
  for (const Diagnostic& d : c->launch_diagnostics) {
    EXPECT_EQ(d.code, "removed-environment");
    EXPECT_EQ(d.severity, Severity::kWarning);
    messages.push_back(d.message);
  }
  const auto warned = [](std::string_view given, std::string_view name, std::string_view commit,
                         std::string_view fix) {
    return fmt::format(
        "{} is a variable of older releases the engine no longer reads (the fork's {} dropped "
        "it from vllm/envs.py): it warns as it starts ('Unknown vLLM environment variable "
        "detected: {}') and runs without it, as this plan does; {}",
        given, commit, name, fix);
  };
  EXPECT_EQ(messages,
            (std::vector<std::string>{
                warned("VLLM_ATTENTION_BACKEND=FLASHINFER_MLA", "VLLM_ATTENTION_BACKEND",
                       "6437ff1fb", "give --attention-backend FLASHINFER_MLA instead"),
                warned("VLLM_USE_V1=0", "VLLM_USE_V1", "e1710393c", "unset it"),
                warned("VLLM_TORCH_PROFILER_DIR='/tmp/a b'", "VLLM_TORCH_PROFILER_DIR", "d88a1df69",
                       "give --profiler-config.profiler torch --profiler-config.torch_profiler_dir "
                       "'/tmp/a b' instead"),
                warned("VLLM_ALL2ALL_BACKEND", "VLLM_ALL2ALL_BACKEND", "b95cc5014",
                       "give --all2all-backend VALUE instead")}));
  // The plan is the one without them: the engine's own backend pick, B12X_MLA's 488,704
  // tokens, not FLASHINFER_MLA's 488,928.
  const Result<Plan> plan = PlanLaunch(*c);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->capacity.max_tokens, 488704);
}

// The engine core reads every variable vllm/envs.py registers as it ends its start
// (enable_envs_cache): a value its reader cannot read fails the start there, after the weights
// load, if nothing read it before.
TEST(VllmFlags, EnvironmentValuesTheEngineCannotRead) {
  auto refusal = [](std::vector<std::string> environment) {
    LaunchOptions o;
    o.vllm_environment = std::move(environment);
    return Refusal({}, o);
  };
  // int() and bool(int()), as Python's int() reads text.
  EXPECT_EQ(refusal({"VERBOSE=yes"}),
            "VERBOSE is 'yes', which the engine cannot read: it fails to start (\"invalid literal "
            "for int() with base 10: 'yes'\"), at the latest as its engine core ends its start "
            "and reads every variable vllm/envs.py registers, once the weights are loaded and "
            "the KV cache allocated; set an integer or unset it");
  EXPECT_EQ(refusal({"VERBOSE= 1_0 ", "VLLM_DP_SIZE=+2", "VLLM_USE_DEEP_GEMM"}), "");
  EXPECT_EQ(refusal({"VERBOSE=\xd9\xa1"}), "");  // an Arabic-Indic 1: Python reads it
  EXPECT_EQ(refusal({"VLLM_DP_SIZE="}),
            "VLLM_DP_SIZE is '', which the engine cannot read: it fails to start (\"invalid "
            "literal for int() with base 10: ''\"), at the latest as its engine core ends its "
            "start and reads every variable vllm/envs.py registers, once the weights are loaded "
            "and the KV cache allocated; set an integer or unset it");
  // Every offender named, in vllm/envs.py's order; float() and the port.
  EXPECT_EQ(refusal({"VLLM_RAY_PER_WORKER_GPUS=1e", "LOCAL_RANK=0x1", "VERBOSE=no"}),
            "VERBOSE is 'no', which the engine cannot read: it fails to start (\"invalid literal "
            "for int() with base 10: 'no'\"), at the latest as its engine core ends its start "
            "and reads every variable vllm/envs.py registers, once the weights are loaded and "
            "the KV cache allocated; set an integer or unset it (the engine cannot read "
            "LOCAL_RANK, VLLM_RAY_PER_WORKER_GPUS either)");
  EXPECT_EQ(refusal({"VLLM_RAY_PER_WORKER_GPUS=inf", "VLLM_LOG_STATS_INTERVAL=-1_0.5"}), "");
  EXPECT_EQ(refusal({"VLLM_LOG_STATS_INTERVAL=ten"}),
            "VLLM_LOG_STATS_INTERVAL is 'ten', which the engine cannot read: it fails to start "
            "(\"could not convert string to float: 'ten'\"), at the latest as its engine core "
            "ends its start and reads every variable vllm/envs.py registers, once the weights are "
            "loaded and the KV cache allocated; set a number or unset it");
  // get_vllm_port's message depends on how urllib3 parses the text: described, not quoted.
  EXPECT_EQ(refusal({"VLLM_PORT=tcp://10.0.0.1:8000"}),
            "VLLM_PORT is 'tcp://10.0.0.1:8000', which the engine cannot read: it fails to start "
            "(get_vllm_port raises for anything but an integer, calling a value with a URL scheme "
            "a URI), at the latest as its engine core ends its start and reads every variable "
            "vllm/envs.py registers, once the weights are loaded and the KV cache allocated; set a "
            "port number or unset it");
  EXPECT_EQ(refusal({"VLLM_PORT=80a"}),
            "VLLM_PORT is '80a', which the engine cannot read: it fails to start (get_vllm_port "
            "raises for anything but an integer, calling a value with a URL scheme a URI), at the "
            "latest as its engine core ends its start and reads every variable vllm/envs.py "
            "registers, once the weights are loaded and the KV cache allocated; set a port number "
            "or unset it");
  // json.loads: what RFC 8259 refuses, unless Python reads it (NaN, numbers past the double
  // range) or it nests deep enough for Python's recursion limit.
  EXPECT_EQ(refusal({"VLLM_FLASHINFER_ALLREDUCE_FUSION_THRESHOLDS_MB={\"4\": 64"}),
            "VLLM_FLASHINFER_ALLREDUCE_FUSION_THRESHOLDS_MB is '{\"4\": 64', which the engine "
            "cannot read: it fails to start (json.loads refuses it), at the latest as its engine "
            "core ends its start and reads every variable vllm/envs.py registers, once the "
            "weights are loaded and the KV cache allocated; set a JSON value or unset it");
  for (const std::string& json :
       std::vector<std::string>{"{\"2\": 64, \"4\": 32}", " [] ", "{\"a\": NaN}", "1e400",
                                std::string(150, '[') + std::string(150, ']')}) {
    EXPECT_EQ(refusal({"VLLM_FLASHINFER_ALLREDUCE_FUSION_THRESHOLDS_MB=" + json}), "") << json;
  }
  // env_with_choices: case-sensitive unless the variable says otherwise (Python's lower(),
  // which takes the Kelvin sign to 'k').
  EXPECT_EQ(refusal({"VLLM_KV_CACHE_LAYOUT=hnd"}),
            "VLLM_KV_CACHE_LAYOUT is 'hnd', which the engine cannot read: it fails to start "
            "(\"Invalid value 'hnd' for VLLM_KV_CACHE_LAYOUT. Valid options: ['NHD', 'HND'].\"), "
            "at the latest as its engine core ends its start and reads every variable "
            "vllm/envs.py registers, once the weights are loaded and the KV cache allocated; set "
            "one of NHD, HND or unset it");
  EXPECT_EQ(refusal({"VLLM_MM_HASHER_ALGORITHM=SHA256", "VLLM_KV_CACHE_LAYOUT=HND"}), "");
  EXPECT_EQ(refusal({"VLLM_MM_HASHER_ALGORITHM=BLA\xe2\x84\xaa"
                     "E3"}),
            "");
  EXPECT_EQ(refusal({"CMAKE_BUILD_TYPE=MinSizeRel"}),
            "CMAKE_BUILD_TYPE is 'MinSizeRel', which the engine cannot read: it fails to start "
            "(\"Invalid value 'MinSizeRel' for CMAKE_BUILD_TYPE. Valid options: ['Debug', "
            "'Release', 'RelWithDebInfo'].\"), at the latest as its engine core ends its start and "
            "reads every variable vllm/envs.py registers, once the weights are loaded and the KV "
            "cache allocated; set one of Debug, Release, RelWithDebInfo or unset it");
  // env_set_with_choices: each comma-separated item stripped, empty ones dropped.
  EXPECT_EQ(refusal({"VLLM_GPT_OSS_SYSTEM_TOOL_MCP_LABELS= container, ,web_search_preview"}), "");
  EXPECT_EQ(refusal({"VLLM_GPT_OSS_SYSTEM_TOOL_MCP_LABELS=container, browser "}),
            "VLLM_GPT_OSS_SYSTEM_TOOL_MCP_LABELS is 'container, browser ', which the engine "
            "cannot read: it fails to start (\"Invalid value 'browser' in "
            "VLLM_GPT_OSS_SYSTEM_TOOL_MCP_LABELS. Valid options: ['container', "
            "'code_interpreter', 'web_search_preview'].\"), at the latest as its engine core ends "
            "its start and reads every variable vllm/envs.py registers, once the weights are "
            "loaded and the KV cache allocated; set a comma-separated list of container, "
            "code_interpreter, web_search_preview or unset it");
  // Variables kvtopo reads as launch options keep their own messages; unregistered ones and text
  // readers are not checked.
  EXPECT_EQ(refusal({"VLLM_BATCH_INVARIANT=yes", "VLLM_SSM_CONV_STATE_LAYOUT=x",
                     "VLLM_LOGGING_LEVEL=loud", "VLLM_NOT_REGISTERED=x"}),
            "");
  // The CLI passes its environment's values.
  const testing::CliResult refused = RunCli("check kimi-k2.6 -tp 8", true, "-i VERBOSE=true");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.out,
            "kvtopo: VERBOSE is 'true', which the engine cannot read: it fails to start "
            "(\"invalid literal for int() with base 10: 'true'\"), at the latest as its engine "
            "core ends its start and reads every variable vllm/envs.py registers, once the "
            "weights are loaded and the KV cache allocated; set an integer or unset it\n");
  EXPECT_EQ(RunCli("check kimi-k2.6 -tp 8", false, "-i VERBOSE=1 VLLM_PORT=8000").exit_code, 0);
}

// Variables the engine's modules read as they are imported, outside vllm/envs.py: each with its
// reader, and where the engine imports the module (the model class of an architecture or MTP
// model type, every GPU worker, the V1 model runner's workers).
TEST(VllmFlags, VariablesModulesReadAsTheyAreImported) {
  using Where = ImportedEnvironmentRefusal::Where;
  EXPECT_TRUE(EngineEnvironmentName("BOB_PROFILE_PREFILL_INTERVAL"));
  EXPECT_TRUE(EngineEnvironmentName("FLA_TRIL_PRECISION"));
  EXPECT_TRUE(EngineEnvironmentName("GDN_RECOMPUTE_SUPPRESS_LEVEL"));
  EXPECT_FALSE(EngineEnvironmentName("FLA_COMPILER_MODE"));  // compared to "1", never refused
  const std::vector<std::string> environment = {
      "FLA_TRIL_PRECISION=TF32", "VLLM_DEBUG_INDEXER_BLOCK_WIDTH_MAX=12.0",
      "VLLM_NSA_INDEXER_DEBUG_MAX=", "BOB_PROFILE_PREFILL_INTERVAL= 50 ", "HOME=/root"};
  std::vector<ImportedEnvironmentRefusal> r =
      ImportedEnvironmentRefusals(environment, {.classes = {"Qwen3NextForCausalLM"}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].name, "FLA_TRIL_PRECISION");
  EXPECT_EQ(r[0].value, "'TF32'");
  EXPECT_EQ(r[0].reads,
            "vllm/model_executor/layers/fla/ops/solve_tril.py reads it as it is imported "
            "(\"FLA_TRIL_PRECISION must be one of ['ieee', 'tf32', 'tf32x3'], but got TF32\")");
  EXPECT_EQ(r[0].fix, "set one of ieee, tf32, tf32x3");
  EXPECT_EQ(r[0].where, Where::kModel);
  EXPECT_EQ(r[0].model, "Qwen3NextForCausalLM");
  EXPECT_EQ(r[1].name, "VLLM_DEBUG_INDEXER_BLOCK_WIDTH_MAX");
  EXPECT_EQ(r[1].reads,
            "vllm/v1/attention/backends/mla/indexer.py reads it as it is imported (\"invalid "
            "literal for int() with base 10: '12.0'\")");
  EXPECT_EQ(r[1].fix, "set an integer");
  EXPECT_EQ(r[1].where, Where::kEveryWorker);
  EXPECT_EQ(r[2].name, "VLLM_NSA_INDEXER_DEBUG_MAX");  // int('') raises; int(' 50 ') reads 50
  EXPECT_EQ(r[2].value, "''");
  EXPECT_EQ(r[2].where, Where::kV1Runner);
  // The sparse indexer's module comes with DeepSeek's class and the MTP types that build it, and
  // the engine inspects those before its workers start.
  r = ImportedEnvironmentRefusals(environment,
                                  {.classes = {"PanguUltraMoEForCausalLM", "pangu_ultra_moe_mtp"}});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "VLLM_NSA_INDEXER_DEBUG_MAX");
  EXPECT_EQ(r[0].where, Where::kModel);
  EXPECT_EQ(r[0].model, "pangu_ultra_moe_mtp");
  EXPECT_EQ(r[1].name, "VLLM_DEBUG_INDEXER_BLOCK_WIDTH_MAX");
  EXPECT_EQ(r[1].where, Where::kEveryWorker);
  EXPECT_TRUE(ImportedEnvironmentRefusals({"FLA_TRIL_PRECISION=tf32x3", "USE_DEFAULT_FLA_NORM=1",
                                           "VLLM_USE_SGL_KERNEL_FAST_TOPK_V2=-0"},
                                          {.classes = {"KimiLinearForCausalLM"}})
                  .empty());
  // What the workers build: a wrapper's language model class, and layers whose modules import
  // the FLA kernels or the sparse indexer. A V1-runner module the model builds too says so; a
  // class the engine inspects comes first, and takes the place of what it builds.
  r = ImportedEnvironmentRefusals(environment, {.classes = {"KimiK25ForConditionalGeneration"},
                                                .built_classes = {"DeepseekV2ForCausalLM"}});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "VLLM_DEBUG_INDEXER_BLOCK_WIDTH_MAX");
  EXPECT_EQ(r[0].where, Where::kEveryWorker);
  EXPECT_EQ(r[0].built, "");
  EXPECT_EQ(r[1].name, "VLLM_NSA_INDEXER_DEBUG_MAX");
  EXPECT_EQ(r[1].where, Where::kV1Runner);
  EXPECT_EQ(r[1].built, "DeepseekV2ForCausalLM");
  EXPECT_FALSE(r[1].built_layers);
  r = ImportedEnvironmentRefusals(environment, {.classes = {"KimiK3ForConditionalGeneration"},
                                                .built_layers = {"kda", "indexer"}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].name, "VLLM_DEBUG_INDEXER_BLOCK_WIDTH_MAX");
  EXPECT_EQ(r[1].name, "VLLM_NSA_INDEXER_DEBUG_MAX");
  EXPECT_EQ(r[1].where, Where::kV1Runner);
  EXPECT_EQ(r[1].built, "sparse-attention indexer layers");
  EXPECT_TRUE(r[1].built_layers);
  EXPECT_EQ(r[2].name, "FLA_TRIL_PRECISION");  // the workers build it last
  EXPECT_EQ(r[2].where, Where::kModelBuild);
  EXPECT_EQ(r[2].built, "KDA layers");
  EXPECT_TRUE(r[2].built_layers);
  r = ImportedEnvironmentRefusals(environment,
                                  {.classes = {"Qwen3NextForCausalLM"}, .built_layers = {"gdn"}});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].where, Where::kModel);
  EXPECT_EQ(r[0].built, "");
  EXPECT_EQ(r[2].where, Where::kV1Runner);  // no indexer layers: the runner's only
  EXPECT_EQ(r[2].built, "");
  EXPECT_TRUE(
      ImportedEnvironmentRefusals({"FLA_TRIL_PRECISION=ieee"}, {.built_layers = {"gdn"}}).empty());
  // Wrappers whose class builds a language model of those sets as the workers build the model.
  ASSERT_TRUE(ImportReadLanguageModelOf("KimiK25ForConditionalGeneration"));
  EXPECT_EQ(ImportReadLanguageModelOf("KimiK25ForConditionalGeneration")->architecture,
            "DeepseekV2ForCausalLM");
  EXPECT_EQ(ImportReadLanguageModelOf("KimiK25ForConditionalGeneration")->section, "");
  ASSERT_TRUE(ImportReadLanguageModelOf("DeepseekOCRForCausalLM"));
  EXPECT_EQ(ImportReadLanguageModelOf("DeepseekOCRForCausalLM")->section, "language_config");
  EXPECT_FALSE(ImportReadLanguageModelOf("LlavaForConditionalGeneration"));
  // A variable as envs.py's bool(int(value)) reads it.
  EXPECT_EQ(EnvironmentBool({"VLLM_USE_FLASHINFER_MOE_FP4= 1_0 "}, "VLLM_USE_FLASHINFER_MOE_FP4"),
            std::optional<bool>(true));
  EXPECT_EQ(EnvironmentBool({"VLLM_USE_FLASHINFER_MOE_FP4=-0"}, "VLLM_USE_FLASHINFER_MOE_FP4"),
            std::optional<bool>(false));
  EXPECT_EQ(EnvironmentBool({"VLLM_USE_FLASHINFER_MOE_FP4=true"}, "VLLM_USE_FLASHINFER_MOE_FP4"),
            std::nullopt);
  EXPECT_EQ(EnvironmentBool({"VLLM_TEST_FORCE_FP8_MARLIN=1"}, "VLLM_USE_FLASHINFER_MOE_FP4"),
            std::nullopt);
  // The CLI passes the names that are not VLLM_ ones too.
  const testing::CliResult refused =
      RunCli("check gpt-oss-120b", true, "-i BOB_PROFILE_PREFILL_INTERVAL=fifty");
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.out,
            "rejected: gpt-oss-120b\n"
            "  error [environment-import] BOB_PROFILE_PREFILL_INTERVAL is 'fifty', which the "
            "engine cannot read: vllm/v1/worker/gpu_model_runner.py reads it as it is imported "
            "(\"invalid literal for int() with base 10: 'fifty'\"), and the engine imports that "
            "module in the workers of its V1 model runner as they start, so it fails to start "
            "before the weights load; set an integer or unset it\n");
}

// Config-class fields of older releases: refused as the class refuses them, naming the field
// that took the value, read in the deprecation's order (PoolerConfig's get_use_activation:
// normalize, softmax, activation; a null one passed over, so dropped).
TEST(VllmFlags, ConfigClassFieldsOfOlderReleases) {
  const auto older = testing_configs::Older;
  EXPECT_EQ(Refusal({Flag("--structured-outputs-config",
                          {R"({"backend": "xgrammar", "disable_fallback": true})"})}),
            older("--structured-outputs-config", "disable_fallback", "drop it"));
  EXPECT_EQ(Refusal({Flag("--pooler-config", {R"({"activation": false, "softmax": true})"})}),
            older("--pooler-config", "softmax", "give \"use_activation\": true instead"));
  EXPECT_EQ(Refusal({Flag("--pooler-config", {R"({"activation": false})"})}),
            older("--pooler-config", "activation", "give \"use_activation\": false instead"));
  EXPECT_EQ(Refusal({Flag("--pooler-config", {R"({"normalize": null, "softmax": 1.0})"})}),
            older("--pooler-config", "normalize", "drop it"));
  EXPECT_EQ(Refusal({Flag("--pooler-config", {R"({"use_activation": false})"})}), "");
}

TEST(VllmFlags, ConfigClassFields) {
  EXPECT_EQ(Refusal({Flag("--structured-outputs-config", {R"({"backend": "xgrammar", "x": 1})"})}),
            "--structured-outputs-config: 'x' is not a field of the engine's "
            "StructuredOutputsConfig (its parser refuses it: 'Unexpected keyword argument'); its "
            "fields: backend, disable_additional_properties, disable_any_whitespace, "
            "enable_in_reasoning, reasoning_parser, reasoning_parser_plugin");
  EXPECT_EQ(Refusal({Flag("--structured-outputs-config", {R"({"backend": "regex"})"})}),
            "--structured-outputs-config: backend \"regex\" is refused by the engine's parser "
            "(StructuredOutputsConfig: Input should be 'auto', 'xgrammar', 'guidance', 'outlines' "
            "or 'lm-format-enforcer')");
  EXPECT_EQ(
      Refusal({Flag("--structured-outputs-config", {R"({"disable_any_whitespace": "yes"})"})}),
      "--structured-outputs-config {\"disable_any_whitespace\": \"yes\"}: the engine's parser "
      "refuses it (StructuredOutputsConfig: disable_any_whitespace is only supported for "
      "xgrammar and guidance backends.)");
  EXPECT_EQ(Refusal({Flag("--structured-outputs-config",
                          {R"({"backend": "guidance", "disable_any_whitespace": 1})"})}),
            "");
  EXPECT_EQ(Refusal({Flag("--structured-outputs-config",
                          {R"({"backend": "xgrammar", "disable_additional_properties": true})"})}),
            "--structured-outputs-config {\"backend\": \"xgrammar\", "
            "\"disable_additional_properties\": true}: the engine's parser refuses it "
            "(StructuredOutputsConfig: disable_additional_properties is only supported for the "
            "guidance backend.)");
  // PoolerConfig's deprecated names beside their replacements (__post_init__).
  EXPECT_EQ(Refusal({Flag("--pooler-config", {R"({"logit_bias": 1.0, "logit_mean": 2.0})"})}),
            "--pooler-config {\"logit_bias\": 1.0, \"logit_mean\": 2.0}: the engine's parser "
            "refuses it (PoolerConfig: Cannot set both `logit_bias` and `logit_mean`. "
            "`logit_bias` is deprecated, use `logit_mean` instead.)");
  EXPECT_EQ(Refusal({Flag("--pooler-config", {R"({"logit_scale": 2, "logit_sigma": 0.5})"})}),
            "--pooler-config {\"logit_scale\": 2, \"logit_sigma\": 0.5}: the engine's parser "
            "refuses it (PoolerConfig: Cannot set both `logit_scale` and `logit_sigma`. "
            "`logit_scale` is deprecated, use `logit_sigma` instead.)");
  EXPECT_EQ(Refusal({Flag("--pooler-config", {R"({"logit_bias": null, "logit_mean": 2.0})"})}), "");
  EXPECT_EQ(Refusal({Flag("--structured-outputs-config", {"None"})}),
            "--structured-outputs-config None: not JSON (the engine's parser refuses it); give a "
            "JSON object of StructuredOutputsConfig's fields");
  EXPECT_EQ(Refusal({Flag("--kv-events-config", {"None"})}), "");  // KVEventsConfig | None
  // Bare numbers with suffixes are expanded before the JSON is read; 1.5K is refused.
  EXPECT_EQ(Refusal({Flag("--kv-events-config", {R"({"buffer_steps": 10k, "topic": "10k"})"})}),
            "");
  EXPECT_EQ(Refusal({Flag("--kv-events-config", {R"({"buffer_steps": 1.5K})"})}),
            "--kv-events-config: '1.5K': decimals are not allowed with binary suffixes like K "
            "(the engine's parser refuses it); did you mean 1.5k?");
  EXPECT_EQ(Refusal({Flag("--kv-events-config", {R"({"buffer_steps": 2.5})"})}),
            "--kv-events-config: buffer_steps 2.5 is refused by the engine's parser "
            "(KVEventsConfig: Input should be a valid integer, got a number with a fractional "
            "part)");
  // pydantic's lax ints: a whole float, a bool, a string with a fraction of zeros.
  EXPECT_EQ(Refusal({Flag("--kv-events-config",
                          {R"({"buffer_steps": 2.0, "hwm": true, "max_queue_size": " -3.00 "})"})}),
            "");
  EXPECT_EQ(Refusal({Flag("--kv-events-config", {R"({"buffer_steps": "2.5"})"})}),
            "--kv-events-config: buffer_steps \"2.5\" is refused by the engine's parser "
            "(KVEventsConfig: Input should be a valid integer, unable to parse string as an "
            "integer)");
  EXPECT_EQ(Refusal({Flag("--kv-events-config", {R"({"buffer_steps": 1e19})"})}),
            "--kv-events-config: buffer_steps 1e+19 is refused by the engine's parser "
            "(KVEventsConfig: Unable to parse input string as an integer, exceeded maximum "
            "size)");
  EXPECT_EQ(Refusal({Flag("--kv-events-config", {R"({"endpoint": 5557})"})}),
            "--kv-events-config: endpoint 5557 is refused by the engine's parser (KVEventsConfig: "
            "Input should be a valid string)");
  EXPECT_EQ(Refusal({Flag("--profiler-config", {R"({"profiler": "torch"})"})}),
            "--profiler-config {\"profiler\": \"torch\"}: the engine's parser refuses it "
            "(ProfilerConfig: torch_profiler_dir must be set when profiler is 'torch')");
  EXPECT_EQ(Refusal({Flag("--profiler-config", {R"({"torch_profiler_dir": "/tmp/p"})"})}),
            "--profiler-config {\"torch_profiler_dir\": \"/tmp/p\"}: the engine's parser refuses "
            "it (ProfilerConfig: torch_profiler_dir is only applicable when profiler is set to "
            "'torch')");
  EXPECT_EQ(Refusal({Flag("--profiler-config", {R"({"active_iterations": 0})"})}),
            "--profiler-config: active_iterations 0 is refused by the engine's parser "
            "(ProfilerConfig: Input should be greater than or equal to 1)");
  EXPECT_EQ(Refusal({Flag("--pooler-config", {R"({"logit_scale": 0})"})}),
            "--pooler-config {\"logit_scale\": 0}: the engine's parser refuses it (PoolerConfig: "
            "logit_scale cannot be 0 (division by zero))");
  EXPECT_EQ(Refusal({Flag("--pooler-config", {R"({"logit_sigma": false})"})}),
            "--pooler-config {\"logit_sigma\": false}: the engine's parser refuses it "
            "(PoolerConfig: logit_sigma cannot be 0 (division by zero))");
  EXPECT_EQ(Refusal({Flag("--pooler-config", {R"({"logit_sigma": "0.5"})"})}), "");
  EXPECT_EQ(
      Refusal({Flag("--pooler-config", {R"({"pooling_type": "CLS", "tok_pooling_type": "ALL"})"})}),
      "--pooler-config {\"pooling_type\": \"CLS\", \"tok_pooling_type\": \"ALL\"}: the "
      "engine's parser refuses it (PoolerConfig: Cannot set both `pooling_type` and "
      "`tok_pooling_type`)");
  EXPECT_EQ(
      Refusal({Flag("--quantization-config", {R"({"linear": "int8_per_channel_weight_only"})"})}),
      "--quantization-config {\"linear\": \"int8_per_channel_weight_only\"}: the engine's "
      "parser refuses it (QuantizationConfigArgs: online shorthand "
      "'int8_per_channel_weight_only' does not define a linear spec)");
  EXPECT_EQ(Refusal({Flag("--quantization-config", {R"({"moe": {"weight": "fp4"}})"})}),
            "--quantization-config {\"moe\": {\"weight\": \"fp4\"}}: the engine's parser refuses "
            "it (QuantizationConfigArgs: unknown quantization name 'fp4'; expected one of "
            "['fp8_per_block_dynamic', 'fp8_per_block_static', 'fp8_per_tensor_dynamic', "
            "'fp8_per_tensor_static', 'fp8_per_token', 'int8_per_channel_static', 'mxfp4', "
            "'mxfp8'])");
  EXPECT_EQ(Refusal({Flag("--quantization-config",
                          {R"({"linear": "fp8_per_block", "moe": {"weight": "mxfp4"}})"})}),
            "");
  EXPECT_EQ(Refusal({Flag("--weight-transfer-config", {R"({"backend": "gloo"})"})}),
            "--weight-transfer-config: backend \"gloo\" is refused by the engine's parser "
            "(WeightTransferConfig: Input should be 'nccl' or 'ipc')");
}

TEST(VllmFlags, RulesBetweenFlags) {
  EXPECT_EQ(Refusal({Flag("--numa-bind-nodes", {"0", "1"})}),
            "--numa-bind-nodes without --numa-bind: the engine refuses it as it builds its "
            "parallel config ('numa_bind_nodes and numa_bind_cpus require numa_bind=True.'); add "
            "--numa-bind");
  EXPECT_EQ(Refusal({Flag("--numa-bind-nodes", {"0", "1"}), Switch("--numa-bind")}), "");
  EXPECT_EQ(Refusal({Flag("--numa-bind-nodes", {"0", "1"}), Switch("--numa-bind", false)}),
            "--numa-bind-nodes without --numa-bind: the engine refuses it as it builds its "
            "parallel config ('numa_bind_nodes and numa_bind_cpus require numa_bind=True.'); add "
            "--numa-bind");
  EXPECT_EQ(Refusal({Switch("--numa-bind"), Flag("--numa-bind-nodes", {"0", "-1"})}),
            "--numa-bind-nodes 0 -1: the engine refuses it as it builds its parallel config "
            "('numa_bind_nodes must contain non-negative integers.'); give the NUMA node of each "
            "GPU");
  EXPECT_EQ(Refusal({Switch("--numa-bind"), Flag("--numa-bind-cpus", {"0-3,8-11", "12-4"})}),
            "--numa-bind-cpus '12-4': the engine refuses it as it builds its parallel config "
            "(\"numa_bind_cpus ranges must be ascending, but got '12-4'.\"); write each range "
            "low-high");
  EXPECT_EQ(Refusal({Switch("--numa-bind"), Flag("--numa-bind-cpus", {"0-3,"})}),
            "--numa-bind-cpus '0-3,': the engine refuses it as it builds its parallel config "
            "(\"numa_bind_cpus entries must use numactl CPU list syntax, for example '0-3' or "
            "'0,2,4-7'.\"); write N, N-M, or a comma-separated list of them");
  EXPECT_EQ(Refusal({Switch("--numa-bind"), Flag("--numa-bind-cpus", {"0-3", "0099-100"})}), "");
  EXPECT_EQ(Refusal({Flag("--offload-backend", {"prefetch"})}),
            "--offload-num-in-group 1 above --offload-group-size 0: the engine refuses it as it "
            "builds its offload config ('offload_num_in_group (1) must be <= offload_group_size "
            "(0)'); give --offload-group-size at least --offload-num-in-group");
  EXPECT_EQ(Refusal({Flag("--offload-group-size", {"8"}), Flag("--offload-prefetch-step", {"0"})}),
            "--offload-prefetch-step 0 with prefetch offloading: the engine refuses it as it "
            "builds its offload config ('offload_prefetch_step (0) must be >= 1 when prefetch "
            "offloading is enabled (offload_group_size > 0)'); prefetch at least 1 layer ahead");
  EXPECT_EQ(Refusal({Flag("--offload-backend", {"prefetch"}), Flag("--offload-group-size", {"8"}),
                     Flag("--offload-num-in-group", {"2"})}),
            "");
  EXPECT_EQ(Refusal({Flag("--collect-detailed-traces", {"model", "worker"})}),
            "--collect-detailed-traces model worker without --otlp-traces-endpoint: the engine "
            "refuses it as it builds its observability config ('collect_detailed_traces requires "
            "`--otlp-traces-endpoint` to be set.'); add --otlp-traces-endpoint");
  EXPECT_EQ(Refusal({Flag("--collect-detailed-traces", {"model,worker"}),
                     Flag("--otlp-traces-endpoint", {"http://otel:4317"})}),
            "--collect-detailed-traces model,worker: the engine refuses it as it builds its "
            "observability config (\"Input should be 'model', 'worker' or 'all'\"); give the "
            "modules as separate values (--collect-detailed-traces model worker)");
  EXPECT_EQ(Refusal({Flag("--collect-detailed-traces", {"all"}),
                     Flag("--otlp-traces-endpoint", {"http://otel:4317"})}),
            "");
  LaunchOptions mp;
  mp.distributed_executor_backend = "mp";
  EXPECT_EQ(Refusal({Switch("--ray-workers-use-nsight")}, mp),
            "--ray-workers-use-nsight with --distributed-executor-backend mp: the engine refuses "
            "it as it builds its parallel config ('Unable to use nsight profiling unless workers "
            "run with Ray.'); run the workers with --distributed-executor-backend ray or drop the "
            "flag");
  EXPECT_EQ(Refusal({Flag("--additional-config", {"fast"})}),
            "--additional-config fast: the engine refuses it as it builds its vLLM config ('Input "
            "should be a valid dictionary'); give a JSON object");
  EXPECT_EQ(Refusal({Flag("--override-generation-config", {"[1]"})}),
            "--override-generation-config [1]: the engine refuses it as it builds its model "
            "config ('Input should be a valid dictionary'); give a JSON object");
  EXPECT_EQ(Refusal({Flag("--lora-modules", {"sql=/loras/sql", "a=b=c"})}),
            "--lora-modules 'a=b=c': the engine's parser fails on it ('too many values to unpack "
            "(expected 2)'); write NAME=PATH with one '='");
  EXPECT_EQ(Refusal({Flag("--lora-modules", {R"({"name": "sql", "rank": 8})"})}),
            "--lora-modules '{\"name\": \"sql\", \"rank\": 8}': unknown field 'rank'; the engine's "
            "parser refuses it ('Invalid fields for --lora-modules'); give name, path and "
            "optionally base_model_name, is_3d_lora_weight");
  EXPECT_EQ(Refusal({Flag("--lora-modules", {R"({"name": "sql", "path": "/l"})"})}), "");
  EXPECT_EQ(Refusal({Flag("--show-hidden-metrics-for-version", {"next"})}),
            "--show-hidden-metrics-for-version 'next': the engine refuses it as it builds its "
            "observability config (\"Invalid version: 'next'\"); give a version such as 0.20");
  for (const char* version : {"0.20", " v1.0rc1 ", "1.0.post2.dev3+local.7", "2!1.0-1", "None"}) {
    EXPECT_EQ(Refusal({Flag("--show-hidden-metrics-for-version", {version})}), "") << version;
  }
}

TEST(VllmFlags, ReasoningParsersLookedUp) {
  const auto refusal = [](std::vector<VllmFlagValue> values, std::optional<std::string> parser) {
    LaunchOptions o;
    o.model = "kimi-k2.6";
    o.reasoning_parser = std::move(parser);
    o.not_planned_values = std::move(values);
    const Result<LaunchConfig> c = ToLaunchConfig(o);
    return c.ok() ? "" : c.status().message();
  };
  // Without both strings the reasoning config looks its parser up, '' included.
  const std::string parsers =
      "cohere_command3, cohere_command4, deepseek_r1, deepseek_v3, deepseek_v4, ernie45, gemma4, "
      "glm45, granite, holo2, hunyuan_a13b, hy_v3, kimi_k2, mimo, minimax_m2, "
      "minimax_m2_append_think, mistral, nemotron_v3, olmo3, openai_gptoss, poolside_v1, qwen3, "
      "seed_oss, step3, step3p5";
  EXPECT_EQ(refusal({Flag("--reasoning-config", {"{}"})}, std::nullopt),
            "--reasoning-config {} without both reasoning_start_str and reasoning_end_str looks up "
            "its parser '', which the engine does not register: it raises as it builds its config "
            "(\"Reasoning parser '' not found.\"); give both strings, or name a parser "
            "(--reasoning-parser, or the config's reasoning_parser): " +
                parsers);
  EXPECT_EQ(refusal({Flag("--reasoning-config", {"{}"})}, "kimi_k2"), "");
  EXPECT_EQ(refusal({Flag("--reasoning-config", {R"({"reasoning_parser": "deepseek_r1"})"})},
                    std::nullopt),
            "");
  EXPECT_EQ(
      refusal({Flag("--reasoning-config",
                    {R"({"reasoning_start_str": "<think>", "reasoning_end_str": "</think>"})"})},
              std::nullopt),
      "");
  EXPECT_EQ(refusal({Flag("--structured-outputs-config", {R"({"reasoning_parser": "r1"})"})},
                    std::nullopt),
            "--structured-outputs-config's reasoning_parser 'r1' is not a parser the engine "
            "registers: its API server refuses it before the engine starts ('invalid reasoning "
            "parser: r1'); pick one of " +
                parsers + ", or add yours with --reasoning-parser-plugin");
  // --reasoning-parser replaces the config's.
  EXPECT_EQ(refusal({Flag("--structured-outputs-config", {R"({"reasoning_parser": "r1"})"})},
                    "deepseek_r1"),
            "");
}

// The error lines of `model` planned with the flags (8 GiB of cache).
std::string PlanErrors(const std::string& model, std::vector<VllmFlagValue> values,
                       int64_t tensor_parallel = 1) {
  LaunchOptions o;
  o.model = model;
  o.kv_cache_memory = "8G";
  o.tensor_parallel_size = tensor_parallel;
  o.not_planned_values = std::move(values);
  Result<LaunchConfig> c = ToLaunchConfig(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return "not planned";
  Result<Plan> plan = PlanLaunch(*c);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? plan->ErrorLines() : "not planned";
}

TEST(VllmFlags, MultimodalModelsOnly) {
  const std::string vl =
      std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/qwen2.5-vl-7b.json";
  const std::string what = "'" + vl + "' (Qwen2_5_VLForConditionalGeneration)";
  EXPECT_EQ(PlanErrors(vl, {Flag("--video-pruning-rate", {"1"})}),
            "\n  error [multimodal-options] --video-pruning-rate 1 with " + what +
                ", a model with multimodal inputs: the engine refuses it as it builds its "
                "multimodal config ('Input should be less than 1')");
  EXPECT_EQ(PlanErrors("gpt-oss-120b", {Flag("--video-pruning-rate", {"1"})}), "");
  EXPECT_EQ(PlanErrors(vl, {Flag("--renderer-num-workers", {"4"})}),
            "\n  error [multimodal-options] --renderer-num-workers 4 with " + what +
                ", a model with multimodal inputs, and its processor cache on (4 GiB): the "
                "engine refuses it as it builds its model config ('Cannot use "
                "--renderer-num-workers > 1 with the multimodal processor cache enabled.'); set "
                "--renderer-num-workers 1 or --mm-processor-cache-gb 0");
  EXPECT_EQ(PlanErrors(vl, {Flag("--renderer-num-workers", {"4"}),
                            Flag("--mm-processor-cache-gb", {"0"})}),
            "");
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-tensor-ipc", {"torch_shm"})}, 2),
            "\n  error [multimodal-options] --mm-tensor-ipc torch_shm with " + what +
                " on 2 GPUs: the engine refuses it as it checks the parallel layout "
                "(\"mm_tensor_ipc='torch_shm' is not supported with data_parallel_size > 1 or "
                "tensor_parallel_size > 1 or pipeline_parallel_size > 1.\"); use direct_rpc");
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-shm-cache-max-object-size-mb", {"256"})}),
            "\n  error [multimodal-options] --mm-shm-cache-max-object-size-mb 256 without "
            "--mm-processor-cache-type shm with " +
                what +
                ", a model with multimodal inputs: the engine refuses it as it builds its "
                "multimodal config (\"'mm_shm_cache_max_object_size_mb' should only be set when "
                "'mm_processor_cache_type' is 'shm'.\")");
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-shm-cache-max-object-size-mb", {"256"}),
                            Flag("--mm-processor-cache-type", {"shm"})}),
            "");
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-encoder-attn-backend", {"flashmla"})}),
            "\n  error [multimodal-options] --mm-encoder-attn-backend flashmla with " + what +
                ": the engine's vision encoder asserts on CUDA as it is built ('Backend FLASHMLA "
                "is not supported for vit attention'); the backends it supports there: "
                "FLASH_ATTN, TRITON_ATTN, TORCH_SDPA, FLASHINFER");
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-encoder-attn-backend", {"torch_sdpa"})}), "");
  EXPECT_EQ(PlanErrors(vl, {Flag("--limit-mm-per-prompt", {R"({"image": 2, "video": -1})"})}),
            "\n  error [multimodal-options] --limit-mm-per-prompt {\"image\": 2, \"video\": -1} "
            "with " +
                what +
                ", a model with multimodal inputs: the engine refuses it as it builds its "
                "multimodal config ('video: Input should be greater than or equal to 0')");
  // A count as the validator takes it: an int (a bool is one), or an options object's count in
  // pydantic's lax mode; a bare string or float fails its ** unpacking.
  EXPECT_EQ(
      PlanErrors(vl, {Flag("--limit-mm-per-prompt",
                           {R"({"image": true, "video": {"count": "2", "num_frames": 8}})"})}),
      "");
  EXPECT_EQ(PlanErrors(vl, {Flag("--limit-mm-per-prompt", {R"({"image": {"count": 1.5}})"})}),
            "\n  error [multimodal-options] --limit-mm-per-prompt {\"image\": {\"count\": 1.5}} "
            "with " +
                what +
                ", a model with multimodal inputs: the engine refuses it as it builds its "
                "multimodal config ('image: Input should be a valid integer, got a number with a "
                "fractional part')");
  EXPECT_EQ(PlanErrors(vl, {Flag("--limit-mm-per-prompt", {R"({"image": "2"})"})}),
            "\n  error [multimodal-options] --limit-mm-per-prompt {\"image\": \"2\"} with " + what +
                ", a model with multimodal inputs: the engine refuses it as it builds its "
                "multimodal config ('image: an integer count or an object of options, got \"2\" "
                "(argument after ** must be a mapping)')");
  // (Whether the scale file exists is the serving host's matter: not checked.)
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-encoder-fp8-scale-path", {"/scales.json"}),
                            Flag("--mm-encoder-attn-dtype", {"fp8"})}),
            "");
  // The scale paths need the fp8 encoder attention, and one of them only.
  const std::string kScaleDtype =
      ", a model with multimodal inputs: the engine refuses it as it builds its multimodal "
      "config (\"'mm_encoder_fp8_scale_path' and 'mm_encoder_fp8_scale_save_path' require "
      "'mm_encoder_attn_dtype' to be 'fp8'.\")";
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-encoder-fp8-scale-path", {"/scales.json"})}),
            "\n  error [multimodal-options] --mm-encoder-fp8-scale-path without "
            "--mm-encoder-attn-dtype fp8 with " +
                what + kScaleDtype);
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-encoder-fp8-scale-save-path", {"/out.json"})}),
            "\n  error [multimodal-options] --mm-encoder-fp8-scale-save-path without "
            "--mm-encoder-attn-dtype fp8 with " +
                what + kScaleDtype);
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-encoder-fp8-scale-path", {"/scales.json"}),
                            Flag("--mm-encoder-fp8-scale-save-path", {"/out.json"}),
                            Flag("--mm-encoder-attn-dtype", {"fp8"})}),
            "\n  error [multimodal-options] --mm-encoder-fp8-scale-path with "
            "--mm-encoder-fp8-scale-save-path with " +
                what +
                ", a model with multimodal inputs: the engine refuses it as it builds its "
                "multimodal config (\"'mm_encoder_fp8_scale_save_path' cannot be used with "
                "'mm_encoder_fp8_scale_path' (saving requires dynamic scaling).\")");
  // The kwargs flags take objects (each of --media-io-kwargs' values one too); the encoder's
  // backend one of the engine's names.
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-processor-kwargs", {"[1]"})}),
            "\n  error [multimodal-options] --mm-processor-kwargs [1] with " + what +
                ", a model with multimodal inputs: the engine refuses it as it builds its "
                "multimodal config ('Input should be a valid dictionary')");
  EXPECT_EQ(PlanErrors(vl, {Flag("--media-io-kwargs", {R"({"video": 1})"})}),
            "\n  error [multimodal-options] --media-io-kwargs {\"video\": 1} with " + what +
                ", a model with multimodal inputs: the engine refuses it as it builds its "
                "multimodal config ('Input should be a valid dictionary')");
  EXPECT_EQ(PlanErrors(vl, {Flag("--media-io-kwargs", {R"({"video": {"num_frames": 8}})"})}), "");
  EXPECT_EQ(PlanErrors(vl, {Flag("--mm-encoder-attn-backend", {"foo"})}),
            "\n  error [multimodal-options] --mm-encoder-attn-backend foo with " + what +
                ", a model with multimodal inputs: the engine refuses it as it builds its "
                "multimodal config (\"Unknown attention backend: 'FOO'. Valid options are: "
                "FLASH_ATTN, FLASH_ATTN_DIFFKV, TRITON_ATTN, ROCM_ATTN, ROCM_AITER_MLA, "
                "ROCM_AITER_TRITON_MLA, ROCM_AITER_FA, ROCM_AITER_MLA_SPARSE, XPU_MLA_SPARSE, "
                "TORCH_SDPA, FLASHINFER, FLASHINFER_MLA, TOKENSPEED_MLA, FLASHINFER_MLA_SPARSE, "
                "TRITON_MLA, CUTLASS_MLA, FLASHMLA, FLASHMLA_SPARSE, B12X_MLA_SPARSE, "
                "FLASH_ATTN_MLA, NO_ATTENTION, FLEX_ATTENTION, ROCM_AITER_UNIFIED_ATTN, CPU_ATTN, "
                "TURBOQUANT, CUSTOM\")");
  // An encoder-decoder model runs without the processor cache.
  EXPECT_EQ(
      PlanErrors(std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/whisper-large-v3.json",
                 {Flag("--renderer-num-workers", {"4"})}),
      "");
}

TEST(VllmFlags, WorkerStartAndRuntimeLoraUpdating) {
  // The API servers default to one per data-parallel rank, and runtime LoRA updating needs one.
  const testing::CliResult lora = RunCli("check kimi-k2.6 -tp 4 -dp 2", /*merge_stderr=*/true,
                                         "VLLM_ALLOW_RUNTIME_LORA_UPDATING=' True '");
  EXPECT_EQ(lora.exit_code, 1);
  EXPECT_EQ(lora.out,
            "kvtopo: VLLM_ALLOW_RUNTIME_LORA_UPDATING with 2 API servers, one per data-parallel "
            "rank (--data-parallel-size 2): the engine refuses it as it starts them "
            "('VLLM_ALLOW_RUNTIME_LORA_UPDATING cannot be used with api_server_count > 1'); give "
            "--api-server-count 1 or unset the variable\n");
  EXPECT_EQ(RunCli("check kimi-k2.6 -tp 4 -dp 2 --api-server-count 1", false,
                   "VLLM_ALLOW_RUNTIME_LORA_UPDATING=1")
                .exit_code,
            0);
  EXPECT_EQ(RunCli("check kimi-k2.6 -tp 4 -dp 2 --data-parallel-rank 1 "
                   "--allow-runtime-lora-updating")
                .exit_code,
            0);
  EXPECT_EQ(RunCli("check kimi-k2.6 -tp 4 -dp 2", false, "VLLM_ALLOW_RUNTIME_LORA_UPDATING=yes")
                .exit_code,
            0);  // only 1 and true count
  ExpectUsageError("check kimi-k2.6 --worker-multiproc-method forkserver",
                   "kvtopo: VLLM_WORKER_MULTIPROC_METHOD (--worker-multiproc-method) "
                   "'forkserver' is not one of the engine's choices: spawn, fork (it refuses it "
                   "where it reads it: \"Invalid value "
                   "'forkserver' for VLLM_WORKER_MULTIPROC_METHOD. Valid options: ['spawn', "
                   "'fork'].\")\n");
  const std::string vl =
      std::string(KVTOPO_SOURCE_DIR) + "/fuzz/corpus/config_plan/qwen2.5-vl-7b.json";
  LaunchOptions o;
  o.model = vl;
  o.kv_cache_memory = "8G";
  o.not_planned_values = {Flag("--mm-tensor-ipc", {"torch_shm"})};
  o.worker_multiproc_method = "fork";
  Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok());
  Result<Plan> plan = PlanLaunch(*c);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [multimodal-options] --mm-tensor-ipc torch_shm with '" + vl +
                "' (Qwen2_5_VLForConditionalGeneration) while the workers start by fork "
                "(VLLM_WORKER_MULTIPROC_METHOD, --worker-multiproc-method): the engine refuses it "
                "as it builds its config ('torch_shm is known to fail without "
                "VLLM_WORKER_MULTIPROC_METHOD set to spawn'); unset the variable, which `vllm "
                "serve` then sets to spawn, or set it to spawn");
  // Unset, `vllm serve` sets spawn before it builds its config (cli_env_setup).
  for (const std::optional<std::string>& method :
       {std::optional<std::string>("spawn"), std::optional<std::string>()}) {
    o.worker_multiproc_method = method;
    c = ToLaunchConfig(o);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->worker_multiproc_method, "spawn");
    plan = PlanLaunch(*c);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->ErrorLines(), "");
    EXPECT_EQ(plan->capacity.max_tokens, 149792);
  }
}

// The launch options' config fields that leave the plan as it is: typed as pydantic types them,
// and checked as their classes check them.
std::string OptionRefusal(std::string compilation, std::string speculative = "") {
  LaunchOptions o;
  o.model = "glm-5.1";
  if (!compilation.empty()) o.compilation_config = std::move(compilation);
  if (!speculative.empty()) o.speculative_config = std::move(speculative);
  const Result<LaunchConfig> c = ToLaunchConfig(o);
  return c.ok() ? "" : c.status().message();
}

TEST(VllmFlags, CompilationAndSpeculativeFieldsNotPlanned) {
  EXPECT_EQ(OptionRefusal(R"({"custom_ops": ["none", "all"]})"),
            "--compilation-config: the engine refuses it (\"Can only specify 'none' or 'all'\"); "
            "give one of them in custom_ops");
  EXPECT_EQ(OptionRefusal(R"({"custom_ops": ["rms_norm"]})"),
            "--compilation-config: the engine refuses it (\"Invalid syntax 'rms_norm' for custom "
            "op, must be 'all', 'none', '+op' or '-op' (where 'op' is the registered op name)\"); "
            "write +rms_norm to enable the op or -rms_norm to disable it");
  EXPECT_EQ(OptionRefusal(R"({"custom_ops": ["none", "+rms_norm", "-silu_and_mul"]})"), "");
  EXPECT_EQ(OptionRefusal(R"({"mode": "VLLM_COMPILE", "backend": "cudagraphs"})"),
            "--compilation-config: the engine refuses it ('Invalid backend for piecewise "
            "compilation: cudagraphs'); use backend '', eager or inductor with mode VLLM_COMPILE");
  EXPECT_EQ(OptionRefusal(R"({"backend": "cudagraphs"})"), "");  // checked with the mode only
  EXPECT_EQ(OptionRefusal(R"({"compile_cache_save_format": "zip"})"),
            "--compilation-config: compile_cache_save_format \"zip\" is refused by the engine's "
            "parser (Input should be 'binary' or 'unpacked')");
  EXPECT_EQ(OptionRefusal(R"({"compile_ranges_endpoints": [8, 0]})"),
            "--compilation-config: the engine refuses it ('Invalid compile range endpoint: 0'); "
            "give endpoints above 0");
  EXPECT_EQ(OptionRefusal(R"({"compile_sizes": [1, "cudagraph_capture_sizes", "all"]})"),
            "--compilation-config: the engine refuses it (\"Unrecognized size type in "
            "compile_sizes, expect 'cudagraph_capture_sizes', got all\"); give integers or "
            "'cudagraph_capture_sizes'");
  EXPECT_EQ(OptionRefusal(R"({"encoder_cudagraph_token_budgets": [512, 0]})"),
            "--compilation-config: the engine refuses it ('All encoder_cudagraph_token_budgets "
            "must be positive, got [512, 0]'); give token budgets above 0");
  EXPECT_EQ(OptionRefusal(R"({"cudagraph_mm_encoder": true,
                               "encoder_cudagraph_max_vision_items_per_batch": -1})"),
            "--compilation-config: the engine refuses it "
            "('encoder_cudagraph_max_vision_items_per_batch must be non-negative (0 = "
            "auto-infer)'); give 0 or more");
  EXPECT_EQ(OptionRefusal(R"({"dynamic_shapes_config": {"type": "lazy"}})"),
            "--compilation-config: dynamic_shapes_config.type \"lazy\" is refused by the engine's "
            "parser (Input should be 'backed', 'unbacked' or 'backed_size_oblivious')");
  EXPECT_EQ(OptionRefusal(R"({"pass_config": {"fuse_norm_quant": "maybe"}})"),
            "--compilation-config: pass_config.fuse_norm_quant \"maybe\" is refused by the "
            "engine's parser (Input should be a valid boolean, unable to interpret input)");
  EXPECT_EQ(OptionRefusal(R"({"pass_config": {"fuse_norm_quant": 0.5}})"),
            "--compilation-config: pass_config.fuse_norm_quant 0.5 is refused by the engine's "
            "parser (Input should be a valid boolean)");
  EXPECT_EQ(OptionRefusal(R"({"pass_config": {"fuse_norm_quant": 1.0}})"), "");
  EXPECT_EQ(OptionRefusal(R"({"pass_config": {"fuse_norm_quant": "yes"}})"), "");

  const std::string mtp = R"({"method": "mtp", "num_speculative_tokens": 2, )";
  EXPECT_EQ(OptionRefusal("", mtp + R"("draft_sample_method": "topk"})"),
            "--speculative-config: 'draft_sample_method' \"topk\" is refused by the engine (Input "
            "should be 'greedy' or 'probabilistic')");
  EXPECT_EQ(OptionRefusal("", mtp + R"("rejection_sample_method": "synthetic"})"),
            "--speculative-config: the engine refuses it as it builds the config "
            "(\"rejection_sample_method='synthetic' requires exactly one of "
            "synthetic_acceptance_rates or synthetic_acceptance_length.\"); give one of them");
  EXPECT_EQ(OptionRefusal("", mtp + R"("rejection_sample_method": "synthetic",
                                       "synthetic_acceptance_rates": [0.9, 0.8, 0.7]})"),
            "--speculative-config: the engine refuses it as it builds the config "
            "('synthetic_acceptance_rates must have length 2, got [0.9, 0.8, 0.7].'); give one "
            "rate per speculative token");
  EXPECT_EQ(OptionRefusal("", mtp + R"("rejection_sample_method": "synthetic",
                                       "synthetic_acceptance_rates": [0.8, 0.9]})"),
            "--speculative-config: the engine refuses it as it builds the config "
            "('synthetic_acceptance_rates must be non-increasing, got [0.8, 0.9].'); order the "
            "rates from the first token down");
  EXPECT_EQ(OptionRefusal("", mtp + R"("rejection_sample_method": "synthetic",
                                       "synthetic_acceptance_length": 3.5})"),
            "--speculative-config: the engine refuses it as it builds the config "
            "('synthetic_acceptance_length must be in [1, 3], got 3.5.'); give a length from 1 to "
            "3");
  EXPECT_EQ(OptionRefusal("", mtp + R"("rejection_sample_method": "synthetic",
                                       "synthetic_acceptance_length": 2.4})"),
            "");
  // Floats as pydantic's lax mode reads them: a bool, a string float() reads.
  EXPECT_EQ(OptionRefusal("", mtp + R"("rejection_sample_method": "synthetic",
                                       "synthetic_acceptance_length": true})"),
            "");
  EXPECT_EQ(OptionRefusal("", mtp + R"("rejection_sample_method": "synthetic",
                                       "synthetic_acceptance_length": "1_5"})"),
            "--speculative-config: the engine refuses it as it builds the config "
            "('synthetic_acceptance_length must be in [1, 3], got 15.0.'); give a length from 1 "
            "to 3");
  EXPECT_EQ(OptionRefusal("", mtp + R"("rejection_sample_method": "synthetic",
                                       "synthetic_acceptance_rates": [true, " 0.5 "]})"),
            "");
  EXPECT_EQ(OptionRefusal("", mtp + R"("rejection_sample_method": "synthetic",
                                       "synthetic_acceptance_rates": [0.5, "x"]})"),
            "--speculative-config: 'synthetic_acceptance_rates' entry \"x\" is refused by the "
            "engine (Input should be a valid number, unable to parse string as a number)");
  EXPECT_EQ(OptionRefusal("", mtp + R"("synthetic_acceptance_length": 2})"),
            "--speculative-config: the engine refuses it as it builds the config "
            "(\"synthetic_acceptance_rates / synthetic_acceptance_length are only valid with "
            "rejection_sample_method='synthetic'.\"); set rejection_sample_method to synthetic or "
            "drop them");
  EXPECT_EQ(OptionRefusal("", R"({"method": "suffix", "suffix_decoding_min_token_prob": 1.5})"),
            "--speculative-config: the engine refuses it as it builds the config "
            "('suffix_decoding_min_token_prob=1.5 must be in [0, 1]'); give a probability");
  EXPECT_EQ(OptionRefusal("", R"({"method": "suffix", "suffix_decoding_max_spec_factor": -1})"),
            "--speculative-config: the engine refuses it as it builds the config "
            "('suffix_decoding_max_spec_factor=-1.0 must be >= 0'); give 0 or more");
  EXPECT_EQ(OptionRefusal("", R"({"method": "suffix", "suffix_decoding_max_cached_requests": -1})"),
            "--speculative-config: the engine refuses it as it builds the config "
            "('suffix_decoding_max_cached_requests=-1 must be >= 0'); give 0 or more");
  EXPECT_EQ(OptionRefusal("", mtp + R"("rejection_sample_method": "synthetic",
                                       "synthetic_acceptance_rates": [1, 1.5]})"),
            "--speculative-config: the engine refuses it as it builds the config "
            "('synthetic_acceptance_rates entries must be in [0, 1], got [1.0, 1.5].'); give "
            "rates between 0 and 1");
}

// The engine's warnings about KV cache events, against the prefix caching the plan resolves.
TEST(VllmFlags, KvCacheEventsWarnings) {
  const auto warnings = [](const std::string& model, const std::string& events,
                           std::optional<bool> prefix_caching) {
    LaunchOptions o;
    o.model = model;
    o.enable_prefix_caching = prefix_caching;
    o.not_planned_values = {Flag("--kv-events-config", {events})};
    Result<LaunchConfig> c = ToLaunchConfig(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    Result<Plan> plan = PlanLaunch(*c);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    std::string codes;
    for (const Diagnostic& d : plan->diagnostics) {
      if (d.code.starts_with("kv-events")) codes += d.code + ": " + d.message + "\n";
    }
    return codes;
  };
  EXPECT_EQ(warnings("kimi-k2.6", R"({"enable_kv_cache_events": true})", false),
            "kv-events-prefix-caching: --kv-events-config turns KV cache events on, but the "
            "launch caches no prefixes: the engine warns ('KV cache events are on, but prefix "
            "caching is not enabled. Use --enable-prefix-caching to enable.')\n");
  EXPECT_EQ(warnings("kimi-k2.6", R"({"enable_kv_cache_events": true})", std::nullopt), "");
  // Qwen3-Next's recurrent layers leave prefix caching off by default.
  EXPECT_EQ(warnings("qwen3-next-80b", R"({"enable_kv_cache_events": "yes"})", std::nullopt),
            "kv-events-prefix-caching: --kv-events-config turns KV cache events on, but the "
            "launch caches no prefixes: the engine warns ('KV cache events are on, but prefix "
            "caching is not enabled. Use --enable-prefix-caching to enable.')\n");
  EXPECT_EQ(warnings("kimi-k2.6", R"({"publisher": "zmq"})", std::nullopt),
            "kv-events-disabled: --kv-events-config names the zmq publisher with "
            "enable_kv_cache_events off: the engine warns and publishes nothing ('KV cache events "
            "are disabled, but the scheduler is configured to publish them. Modify "
            "KVEventsConfig.enable_kv_cache_events to True to enable.')\n");
  EXPECT_EQ(warnings("kimi-k2.6", "None", std::nullopt), "");
}

TEST(VllmFlags, HumanReadableNumbersInConfigJson) {
  EXPECT_EQ(*ExpandJsonHumanReadableNumbers(R"({"a": 80m, "b": "80m", "c": 1.5k, "d": 2K})", ""),
            R"({"a": 80000000, "b": "80m", "c": 1500, "d": 2048})");
  // Word boundaries: x80m and 80mb are not numbers with a suffix; an escaped quote stays inside
  // its string.
  EXPECT_EQ(*ExpandJsonHumanReadableNumbers(R"({"a\"80m": x80m, "b": 80mb})", ""),
            R"({"a\"80m": x80m, "b": 80mb})");
  EXPECT_FALSE(ExpandJsonHumanReadableNumbers("[1.5G]", "--x").ok());
}

TEST(VllmFlags, CommandLine) {
  ExpectUsageError("check kimi-k2.6 --port",
                   "kvtopo: --port needs a value (the engine's parser refuses it: 'expected one "
                   "argument')\n");
  ExpectUsageError("check kimi-k2.6 --uvicorn-log-level verbose",
                   "kvtopo: --uvicorn-log-level 'verbose' is not one of the engine's choices: "
                   "critical, debug, error, info, trace, warning (its parser refuses it)\n");
  // The last occurrence counts, as argparse keeps it.
  EXPECT_EQ(RunCli("check kimi-k2.6 --stream-interval 0 --stream-interval=2").exit_code, 0);
  // The dotted keys fold into a value of their own that replaces the whole one (with a warning),
  // so the backend falls back to auto.
  const testing::CliResult folded = RunCli(
      "check kimi-k2.6 --structured-outputs-config '{\"backend\": \"xgrammar\"}' "
      "--structured-outputs-config.disable_any_whitespace true",
      /*merge_stderr=*/true);
  EXPECT_EQ(folded.exit_code, 2);
  EXPECT_EQ(folded.out,
            "kvtopo: --structured-outputs-config {\"disable_any_whitespace\":true}: the engine's "
            "parser refuses it (StructuredOutputsConfig: disable_any_whitespace is only "
            "supported for xgrammar and guidance backends.)\n");
  EXPECT_EQ(RunCli("check kimi-k2.6 --structured-outputs-config.backend xgrammar "
                   "--structured-outputs-config.disable_any_whitespace true")
                .exit_code,
            0);
  // Flags that conflict are a refused launch (exit 1); a value the engine refuses is a usage
  // error (exit 2).
  const testing::CliResult numa =
      RunCli("check kimi-k2.6 --numa-bind-cpus 0-3 4-7", /*merge_stderr=*/true);
  EXPECT_EQ(numa.exit_code, 1);
  EXPECT_EQ(numa.out,
            "kvtopo: --numa-bind-cpus without --numa-bind: the engine refuses it as it builds its "
            "parallel config ('numa_bind_nodes and numa_bind_cpus require numa_bind=True.'); add "
            "--numa-bind\n");
  EXPECT_EQ(RunCli("check kimi-k2.6 --numa-bind --numa-bind-cpus 0-3 4-").exit_code, 2);
  EXPECT_EQ(RunCli("check kimi-k2.6 --numa-bind --numa-bind-cpus 0-3 4-7").exit_code, 0);
  // A --config file's flags reach the same checks (a list is the flag's values, a mapping its
  // JSON).
  const std::string yaml = ::testing::TempDir() + "/vllm_flags_test.yaml";
  {
    std::ofstream out(yaml);
    out << "model: kimi-k2.6\nnuma-bind-nodes: [0, 1]\n"
           "structured-outputs-config: {backend: xgrammar, disable_any_whitespace: true}\n";
  }
  const testing::CliResult file = RunCli("check --config " + yaml, /*merge_stderr=*/true);
  EXPECT_EQ(file.exit_code, 1);
  EXPECT_EQ(file.out,
            "kvtopo: --numa-bind-nodes without --numa-bind: the engine refuses it as it builds its "
            "parallel config ('numa_bind_nodes and numa_bind_cpus require numa_bind=True.'); add "
            "--numa-bind\n");
  EXPECT_EQ(RunCli("check --config " + yaml + " --numa-bind").exit_code, 0);
  // Pipeline stages need ray, mp or external_launcher; a class named on the command line is a
  // string to the engine's check.
  const testing::CliResult pp =
      RunCli("check kimi-k2.6 -tp 4 -pp 2 --distributed-executor-backend my.pkg.Executor", true);
  EXPECT_EQ(pp.exit_code, 1);
  EXPECT_EQ(pp.out,
            "kvtopo: --distributed-executor-backend my.pkg.Executor with --pipeline-parallel-size "
            "2: the engine refuses it as it builds its config ('Pipeline Parallelism without Ray "
            "distributed executor or multiprocessing executor or external launcher is not "
            "supported.'); use mp or ray\n");
  // A load format no loader registers warns: a plugin may register it.
  LaunchOptions load;
  load.model = "kimi-k2.6";
  load.not_planned_values = {Flag("--load-format", {"safetensor"})};
  Result<LaunchConfig> c = ToLaunchConfig(load);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(OnlyLaunchDiagnostic(c, "load-format-unregistered"),
            "--load-format 'safetensor' is not a load format the engine registers (auto, hf, "
            "bitsandbytes, dummy, fastsafetensors, gguf, instanttensor, mistral, npcache, pt, "
            "runai_streamer, runai_streamer_sharded, safetensors, sharded_state, tensorizer): its "
            "workers refuse it as they start ('Load format `safetensor` is not supported') unless "
            "a plugin registers it (register_model_loader)");
  load.not_planned_values = {Flag("--load-format", {"runai_streamer"})};
  c = ToLaunchConfig(load);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->launch_diagnostics.empty());
  load.not_planned_values = {Flag("--tokenizer-mode", {"fast"})};
  c = ToLaunchConfig(load);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->launch_diagnostics.size(), 1u);
  EXPECT_EQ(c->launch_diagnostics[0].message,
            "--tokenizer-mode 'fast' is not a tokenizer mode the engine registers (auto, slow, "
            "hf, mistral, deepseek_v32, deepseek_v4, fastokens, grok2, kimi_audio, qwen_vl): it "
            "fails as it loads the tokenizer (\"No tokenizer registered for "
            "tokenizer_mode='fast'.\") unless a plugin registers it");
  load.not_planned_values.push_back(Switch("--skip-tokenizer-init"));
  c = ToLaunchConfig(load);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->launch_diagnostics.empty());  // no tokenizer is loaded
  // A connector's config is a config class too: 80G is bytes.
  EXPECT_EQ(RunCli("check kimi-k2.6 --kv-transfer-config '{\"kv_connector\": "
                   "\"OffloadingConnector\", \"kv_role\": \"kv_both\", "
                   "\"kv_connector_extra_config\": {\"cpu_bytes_to_use\": 80G}}'")
                .exit_code,
            0);
}

}  // namespace
}  // namespace kvtopo
