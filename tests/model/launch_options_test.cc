// The launch-option table and its one translation into a LaunchConfig.
#include "kvtopo/launch_options.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli_runner.h"
#include "internal/units.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "model/test_configs.h"

namespace kvtopo {
namespace {

using testing_configs::Older;
using testing_configs::OnlyLaunchDiagnostic;

Status Set(LaunchOptions& o, std::string_view name, LaunchValue value) {
  const LaunchOption* option = FindLaunchOption(name);
  if (option == nullptr) return NotFound(std::string(name));
  return SetLaunchOption(o, *option, value, name);
}

TEST(LaunchOptions, NamesAliasesAndShortFlagsFindOneOption) {
  EXPECT_EQ(FindLaunchOption("--max-model-len"), FindLaunchOption("max_model_len"));
  // The engine's two interleave flags are two options (EngineInterleave resolves them).
  EXPECT_NE(FindLaunchOption("--cp-kv-cache-interleave-size"),
            FindLaunchOption("dcp_kv_cache_interleave_size"));
  EXPECT_EQ(FindLaunchOption("--cp-kv-cache-interleave-size"),
            FindLaunchOption("cp_kv_cache_interleave_size"));
  EXPECT_EQ(FindLaunchOption("--kv-cache-memory-bytes"), FindLaunchOption("kv_cache_memory"));
  EXPECT_EQ(FindLaunchOption("-dcp"), FindLaunchOption("decode_context_parallel_size"));
  EXPECT_EQ(FindLaunchOption("--no-such-flag"), nullptr);
  // Every option names its field once.
  std::map<std::string, int> names;
  for (const LaunchOption& o : LaunchOptionTable()) {
    EXPECT_EQ(++names[std::string(o.name)], 1) << o.name;
    EXPECT_FALSE(o.help.empty()) << o.name;
  }
}

// The engine's human_readable_int (--max-model-len, --max-num-batched-tokens): one suffix
// letter, a fraction only with a decimal one (computed in doubles, truncated); its other integer
// flags are int() (ParsePlainInt).
TEST(LaunchOptions, VllmIntegerSuffixes) {
  EXPECT_EQ(*ParseHumanInt("64k", "--max-model-len"), 64'000);
  EXPECT_EQ(*ParseHumanInt("64K", "--max-model-len"), 65'536);
  EXPECT_EQ(*ParseHumanInt("1m", "--max-model-len"), 1'000'000);
  EXPECT_EQ(*ParseHumanInt("1M", "--max-model-len"), 1'048'576);
  EXPECT_EQ(*ParseHumanInt("1t", "--max-model-len"), 1'000'000'000'000);
  EXPECT_EQ(*ParseHumanInt("25.6k", "--max-model-len"), 25'600);
  EXPECT_EQ(*ParseHumanInt("1.001k", "--max-model-len"), 1'000);  // 1000.9999999999999
  EXPECT_EQ(*ParseHumanInt(" 1048576 ", "--max-model-len"), 1'048'576);
  EXPECT_EQ(*ParseHumanInt("1_024", "--max-model-len"), 1'024);
  EXPECT_EQ(ParseHumanInt("1.5K", "--max-model-len").status().message(),
            "--max-model-len: '1.5K': decimals are not allowed with binary suffixes like K (the "
            "engine's parser refuses it); did you mean 1.5k?");
  EXPECT_EQ(ParseHumanInt("1.5", "--max-model-len").status().message(),
            "--max-model-len: '1.5' is not an integer (digits, optionally with k/m/g/t for x1000 "
            "or K/M/G/T for x1024)");
  EXPECT_EQ(ParseHumanInt("-5k", "--max-model-len").status().message(),
            "--max-model-len: '-5k' is not an integer (digits, optionally with k/m/g/t for x1000 "
            "or K/M/G/T for x1024)");
  EXPECT_EQ(ParseHumanInt("9999999999999G", "--max-model-len").status().message(),
            "--max-model-len: '9999999999999G' is out of the 64-bit integer range");
  EXPECT_FALSE(ParseHumanInt("", "--block-size").ok());
  EXPECT_FALSE(ParseHumanInt("12kb", "--block-size").ok());
  EXPECT_EQ(*ParsePlainInt("-16", "--block-size"), -16);
  EXPECT_EQ(ParsePlainInt("1k", "--block-size").status().message(),
            "--block-size: '1k' is not an integer");
  EXPECT_EQ(ParsePlainInt("1__0", "--block-size").status().message(),
            "--block-size: '1__0' is not an integer");
  EXPECT_EQ(ParsePlainInt("9223372036854775808", "--block-size").status().message(),
            "--block-size: '9223372036854775808' is out of the 64-bit integer range");
  EXPECT_EQ(*ParsePlainInt("-9223372036854775808", "--block-size"), INT64_MIN);
  // float(), the engine's parser for its float flags.
  EXPECT_EQ(ParsePythonFloat(" 0.9 "), 0.9);
  EXPECT_EQ(ParsePythonFloat("+0.9"), 0.9);
  EXPECT_EQ(ParsePythonFloat("0_9"), 9.0);
  EXPECT_EQ(ParsePythonFloat("1_0e-1"), 1.0);
  EXPECT_EQ(ParsePythonFloat("1e5_0"), 1e50);
  EXPECT_EQ(ParsePythonFloat(".5"), 0.5);
  EXPECT_EQ(ParsePythonFloat("5."), 5.0);
  EXPECT_EQ(ParsePythonFloat("-Infinity"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(ParsePythonFloat("1e999"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(ParsePythonFloat("-1e-999"), 0.0);
  EXPECT_EQ(ParsePythonFloat("0." + std::string(400, '0') + "1"), 0.0);  // no exponent
  EXPECT_EQ(ParsePythonFloat("1" + std::string(400, '0')), std::numeric_limits<double>::infinity());
  EXPECT_EQ(ParsePythonFloat("1e-310"), 1e-310);  // a subnormal, as float() gives it
  EXPECT_TRUE(std::isnan(*ParsePythonFloat("NaN")));
  for (const char* refused : {"", ".", "1e", "+-1", "--1", "-+inf", "1__0", "_1", "1_", "1_.5",
                              "0x1p-1", "1,5", "nan0", "in f"}) {
    EXPECT_EQ(ParsePythonFloat(refused), std::nullopt) << refused;
  }
  // Suffixes only where the engine's parser takes them.
  LaunchOptions o;
  EXPECT_TRUE(Set(o, "--max-num-batched-tokens", std::string("16k")).ok());
  EXPECT_EQ(o.max_num_batched_tokens, 16'000);
  EXPECT_EQ(Set(o, "--max-num-seqs", std::string("1k")).message(),
            "--max-num-seqs: '1k' is not an integer");
}

// `None` or an empty value unsets an option whose engine field is optional, on the command line
// (the parser's optional_type); elsewhere it is a value like any other.
TEST(LaunchOptions, NoneUnsetsTheEnginesOptionalFields) {
  LaunchOptions o;
  ASSERT_TRUE(Set(o, "--quantization", std::string("fp8")).ok());
  ASSERT_TRUE(Set(o, "--quantization", std::string("None")).ok());
  EXPECT_EQ(o.quantization, std::nullopt);
  ASSERT_TRUE(Set(o, "--max-cpu-loras", std::string("4")).ok());
  ASSERT_TRUE(Set(o, "--max-cpu-loras", std::string("")).ok());
  EXPECT_EQ(o.max_cpu_loras, std::nullopt);
  ASSERT_TRUE(Set(o, "--kv-cache-memory-bytes", std::string("12G")).ok());
  ASSERT_TRUE(Set(o, "--kv-cache-memory-bytes", std::string("None")).ok());
  EXPECT_EQ(o.kv_cache_memory, std::nullopt);
  EXPECT_TRUE(FindLaunchOption("speculative_config")->none);
  EXPECT_FALSE(FindLaunchOption("logits_processors")->none);  // a list: None is an item
  // Not optional in the engine: its parser refuses the text.
  EXPECT_EQ(Set(o, "--max-num-seqs", std::string("None")).message(),
            "--max-num-seqs: 'None' is not an integer");
  // A Python keyword takes None itself; the text "None" is a value there.
  ASSERT_TRUE(
      SetLaunchOption(o, *FindLaunchOption("quantization"), std::string("None"), "quantization=")
          .ok());
  EXPECT_EQ(o.quantization, "None");
  // The command line and a --config file's null plan as without the flags.
  const testing::CliResult plain = testing::RunCli("check kimi-k2.6 -tp 8");
  EXPECT_EQ(plain.exit_code, 0);
  const testing::CliResult unset = testing::RunCli(
      "check kimi-k2.6 -tp 8 --quantization None --kv-offloading-size None --speculative-config "
      "None --num-gpu-blocks-override ''");
  EXPECT_EQ(unset.exit_code, 0);
  EXPECT_EQ(unset.out, plain.out);
  const std::string yaml = ::testing::TempDir() + "/none_unsets.yaml";
  std::ofstream(yaml) << "quantization: null\nmax-cpu-loras: null\n";
  const testing::CliResult file = testing::RunCli("check kimi-k2.6 -tp 8 --config " + yaml);
  EXPECT_EQ(file.exit_code, 0);
  EXPECT_EQ(file.out, plain.out);
}

TEST(LaunchOptions, ValuesAreRangeCheckedAndNameTheirSource) {
  LaunchOptions o;
  EXPECT_TRUE(Set(o, "max_model_len", std::string("64k")).ok());
  EXPECT_EQ(o.max_model_len, 64'000);
  EXPECT_EQ(Set(o, "--block-size", std::string("0")).message(),
            "--block-size must be positive, got 0");
  EXPECT_EQ(Set(o, "--dspark-draft-kv-window", std::string("-1")).message(),
            "--dspark-draft-kv-window must be 0 or positive, got -1");
  EXPECT_TRUE(Set(o, "--dspark-draft-kv-window", int64_t{0}).ok());
  EXPECT_EQ(Set(o, "--async-scheduling", std::string("maybe")).message(),
            "--async-scheduling is a switch; 'maybe' is neither true nor false");
  EXPECT_EQ(Set(o, "--kv-cache-memory-bytes", std::string("12XB")).message(),
            "--kv-cache-memory-bytes '12XB' has an unknown unit; give bytes or a size such as "
            "12GiB, 512MiB, 16G");
  EXPECT_TRUE(Set(o, "--kv-cache-memory-bytes", int64_t{1'325'000'000}).ok());
  EXPECT_EQ(*KvCacheMemoryBytes(o), 1'325'000'000);
  EXPECT_EQ(Set(o, "tensor_parallel_size", std::string("four")).message(),
            "tensor_parallel_size: 'four' is not an integer");
}

TEST(LaunchOptions, EnvironmentFillsOnlyWhatWasNotGiven) {
  const std::map<std::string, std::string> env = {{"VLLM_K3_KV_GROUP_SIZE", "6"},
                                                  {"VLLM_DSPARK_DRAFT_KV_WINDOW", "32768"},
                                                  {"VLLM_DCP_SHARD_DRAFT", "0"},
                                                  {"VLLM_SSM_CONV_STATE_LAYOUT", "DS"}};
  auto getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  LaunchOptions o;
  ASSERT_TRUE(Set(o, "kv_group_size", int64_t{5}).ok());
  ASSERT_TRUE(ApplyLaunchEnvironment(o, getenv).ok());
  EXPECT_EQ(o.kv_group_size, 5);  // the flag wins
  EXPECT_EQ(o.dspark_draft_kv_window, 32768);
  EXPECT_EQ(o.dcp_shard_draft, "0");
  EXPECT_EQ(o.ssm_conv_state_layout, "DS");
  EXPECT_EQ(ToLaunchConfig(o)->ssm_conv_state_layout, "DS");
  LaunchOptions bad;
  auto bad_env = [](const char* name) -> const char* {
    return std::string_view(name) == "VLLM_K3_KV_GROUP_SIZE" ? "six" : nullptr;
  };
  EXPECT_EQ(ApplyLaunchEnvironment(bad, bad_env).message(),
            "VLLM_K3_KV_GROUP_SIZE: 'six' is not an integer");
}

// Each variable is read as the engine's envs.py reads it: bool(int(value)) for the chunked-local
// and simple-offload switches (other text fails the engine's start, when it caches every
// variable), "1" or "true" in any case for long lengths (anything else is off).
TEST(LaunchOptions, SwitchVariablesReadAsTheEngineReadsThem) {
  auto read = [](const char* name, const char* value) {
    LaunchOptions o;
    const Status s = ApplyLaunchEnvironment(o, [&](const char* asked) -> const char* {
      return std::string_view(asked) == name ? value : nullptr;
    });
    return std::pair{s, o};
  };
  constexpr const char* kChunked = "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE";
  EXPECT_EQ(read(kChunked, "2").second.allow_chunked_local_attn_with_hybrid_kv_cache, true);
  EXPECT_EQ(read(kChunked, " 0 ").second.allow_chunked_local_attn_with_hybrid_kv_cache, false);
  EXPECT_EQ(read(kChunked, "true").first.message(),
            "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is 'true', which is not an "
            "integer: the engine reads it with int() and fails at startup; set it to 0 or 1");
  EXPECT_EQ(read("VLLM_USE_SIMPLE_KV_OFFLOAD", "-1").second.use_simple_kv_offload, true);
  EXPECT_EQ(read("VLLM_USE_SIMPLE_KV_OFFLOAD", "yes").first.message(),
            "VLLM_USE_SIMPLE_KV_OFFLOAD is 'yes', which is not an integer: the engine reads it "
            "with int() and fails at startup; set it to 0 or 1");
  EXPECT_EQ(read("VLLM_ALLOW_LONG_MAX_MODEL_LEN", " TRUE ").second.allow_long_max_model_len, true);
  EXPECT_EQ(read("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "yes").second.allow_long_max_model_len, false);
  EXPECT_EQ(read("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "2").second.allow_long_max_model_len, false);
}

// The engine detects a draft model's method before it sets the async-scheduling default:
// Qwen3-Next's own checkpoint as a draft model runs as its MTP layers, with async scheduling on
// (a draft model's default is off).
TEST(LaunchOptions, DraftModelMethodIsDetectedFirst) {
  LaunchOptions o;
  o.model = "qwen3-next-80b";
  o.speculative_config =
      R"({"method":"draft_model","model":"qwen3-next-80b","num_speculative_tokens":3})";
  auto c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->speculative->method, "mtp");
  EXPECT_TRUE(c->cache.async_scheduling);
  ASSERT_EQ(c->launch_diagnostics.size(), 1u);
  EXPECT_EQ(c->launch_diagnostics[0].code, "speculative-method-detected");
  o.speculative_config =
      R"({"method":"draft_model","model":"gpt-oss-120b","num_speculative_tokens":3})";
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->speculative->method, "draft_model");
  EXPECT_FALSE(c->cache.async_scheduling);
  EXPECT_EQ(OnlyLaunchDiagnostic(c, "async-scheduling-speculative"),
            "--speculative-config method 'draft_model' runs without async scheduling: the engine "
            "turns it off ('Async scheduling not supported with draft_model-based speculative "
            "decoding and will be disabled.'), as this plan does: one batch in flight per "
            "pipeline stage");
  // Asked for either way, the engine says nothing.
  o.async_scheduling = false;
  EXPECT_TRUE(ToLaunchConfig(o)->launch_diagnostics.empty());
  o.async_scheduling = true;
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->cache.async_scheduling);
  EXPECT_TRUE(c->launch_diagnostics.empty());
}

TEST(LaunchOptions, AsyncSchedulingDefaultsAsTheEngine) {
  LaunchOptions o;
  o.model = "kimi-k3";
  o.speculative_config = R"({"method":"dspark","num_speculative_tokens":7})";
  EXPECT_TRUE(ToLaunchConfig(o)->cache.async_scheduling);
  o.speculative_config = R"({"method":"ngram","num_speculative_tokens":3})";
  EXPECT_FALSE(ToLaunchConfig(o)->cache.async_scheduling);
  o.async_scheduling = true;
  auto rejected = ToLaunchConfig(o);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), StatusCode::kRejected);
  EXPECT_NE(rejected.status().message().find("--async-scheduling does not run with speculative "
                                             "method 'ngram'"),
            std::string::npos);
  o.speculative_config.reset();
  o.async_scheduling = false;
  EXPECT_FALSE(ToLaunchConfig(o)->cache.async_scheduling);
  // disable_padded_drafter_batch turns the default off, and the engine refuses the pair when
  // async scheduling is asked for (VllmConfig at 28be48fa9).
  o.async_scheduling.reset();
  o.speculative_config =
      R"({"method":"dspark","num_speculative_tokens":7,"disable_padded_drafter_batch":true})";
  Result<LaunchConfig> unpadded = ToLaunchConfig(o);
  ASSERT_TRUE(unpadded.ok()) << unpadded.status().ToString();
  EXPECT_FALSE(unpadded->cache.async_scheduling);
  EXPECT_EQ(OnlyLaunchDiagnostic(unpadded, "async-scheduling-speculative"),
            "--speculative-config 'disable_padded_drafter_batch' true runs without async "
            "scheduling: the engine turns it off ('Async scheduling is not compatible with "
            "disable_padded_drafter_batch=True and will be disabled.'), as this plan does: one "
            "batch in flight per pipeline stage");
  o.async_scheduling = true;
  rejected = ToLaunchConfig(o);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), StatusCode::kRejected);
  EXPECT_EQ(rejected.status().message(),
            "--async-scheduling with --speculative-config 'disable_padded_drafter_batch' true: "
            "the engine refuses the pair at startup ('Async scheduling is not compatible with "
            "disable_padded_drafter_batch=True'); drop one of them");
}

// An executor name the engine does not know is an Executor class's path, module.Class: without a
// dot the engine's split of it raises as it builds its config.
TEST(LaunchOptions, ExecutorNameWithoutAModulePathIsRefused) {
  LaunchOptions o;
  o.model = "gpt-oss-120b";
  for (const char* name : {"mp", "uni", "ray", "external_launcher", "my_pkg.executors.Custom"}) {
    o.distributed_executor_backend = name;
    EXPECT_TRUE(ToLaunchConfig(o).ok()) << name;
  }
  o.distributed_executor_backend = "MP";
  const Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kRejected);
  EXPECT_EQ(c.status().message(),
            "--distributed-executor-backend 'MP' is none of the engine's executors (ray, mp, uni, "
            "external_launcher, as written), so the engine reads it as an Executor class's path, "
            "module.Class, and fails as it builds its config ('not enough values to unpack "
            "(expected 2, got 1)'); give one of them, or the class's module path");
}

// Ray's first executor (VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0) does not schedule asynchronously:
// the engine turns the default off with a warning and refuses --async-scheduling. Ray is the
// executor given, or the default under --data-parallel-backend ray with more than one rank.
TEST(LaunchOptions, RayFirstExecutorRunsWithoutAsyncScheduling) {
  LaunchOptions o;
  o.model = "gpt-oss-120b";
  o.tensor_parallel_size = 2;
  o.distributed_executor_backend = "ray";
  EXPECT_TRUE(ToLaunchConfig(o)->cache.async_scheduling);  // RayExecutorV2, the default
  o.vllm_environment = {"VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0"};
  Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->cache.async_scheduling);
  EXPECT_EQ(OnlyLaunchDiagnostic(c, "async-scheduling-executor"),
            "--distributed-executor-backend ray with VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0: the "
            "engine runs Ray's first executor (RayDistributedExecutor), which does not schedule "
            "asynchronously, and turns async scheduling off ('Async scheduling will be disabled "
            "because it is not supported with the `ray` distributed executor backend.'), as this "
            "plan does: fewer batches in flight; unset VLLM_USE_RAY_V2_EXECUTOR_BACKEND to keep "
            "it");
  o.distributed_executor_backend = "mp";
  EXPECT_TRUE(ToLaunchConfig(o)->cache.async_scheduling);
  // Under --data-parallel-backend ray the engine picks ray for more than one rank.
  o.distributed_executor_backend.reset();
  o.tensor_parallel_size = 1;
  o.data_parallel_backend = "ray";
  EXPECT_TRUE(ToLaunchConfig(o)->cache.async_scheduling);  // one rank: uni
  o.data_parallel_size = 2;
  EXPECT_FALSE(ToLaunchConfig(o)->cache.async_scheduling);
  o.async_scheduling = true;
  Result<LaunchConfig> rejected = ToLaunchConfig(o);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), StatusCode::kRejected);
  EXPECT_EQ(rejected.status().message(),
            "--async-scheduling with --data-parallel-backend ray (which makes the engine's "
            "executor ray) and VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0: the engine runs Ray's first "
            "executor (RayDistributedExecutor), which does not schedule asynchronously, and "
            "refuses the launch as it builds its config ('`ray` does not support async "
            "scheduling yet.'); drop --async-scheduling, or unset "
            "VLLM_USE_RAY_V2_EXECUTOR_BACKEND");
  // A speculative method that runs without async scheduling turns it off first: the engine's
  // warning names the method, not the executor.
  o.async_scheduling.reset();
  o.speculative_config = R"({"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3})";
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->cache.async_scheduling);
  ASSERT_EQ(c->launch_diagnostics.size(), 1u);
  EXPECT_EQ(c->launch_diagnostics[0].code, "async-scheduling-speculative");
}

// --language-model-only is a launch option: the last of it and its --no- form decides.
TEST(LaunchOptions, LanguageModelOnlyIsPlanned) {
  LaunchOptions o;
  o.model = "gpt-oss-120b";
  EXPECT_FALSE(ToLaunchConfig(o)->language_model_only);
  const LaunchOption* option = FindLaunchOption("--language-model-only");
  ASSERT_NE(option, nullptr);
  ASSERT_TRUE(SetLaunchOption(o, *option, true, "--language-model-only").ok());
  EXPECT_TRUE(ToLaunchConfig(o)->language_model_only);
  ASSERT_TRUE(SetLaunchOption(o, *option, false, "--no-language-model-only").ok());
  EXPECT_FALSE(ToLaunchConfig(o)->language_model_only);
  EXPECT_EQ(FindVllmFlagNotPlanned("--language-model-only"), nullptr);
}

// A defaulted --max-num-seqs is at most the tokens per step, as the engine defaults it.
TEST(LaunchOptions, RowsFollowTheTokensPerStep) {
  LaunchOptions o;
  o.model = "gpt-oss-120b";
  o.max_num_batched_tokens = 128;
  auto c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_num_seqs, 128);
  EXPECT_TRUE(c->max_num_batched_tokens_given);
  o.max_num_seqs = 256;  // given: kept, and the plan refuses the pair
  EXPECT_EQ(ToLaunchConfig(o)->cache.max_num_seqs, 256);
  o = LaunchOptions{};
  o.model = "gpt-oss-120b";
  o.enable_chunked_prefill = false;
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->enable_chunked_prefill);
  EXPECT_FALSE(c->max_num_batched_tokens_given);
  EXPECT_EQ(c->cache.max_num_seqs, 256);

  // --performance-mode throughput doubles what was defaulted.
  o.performance_mode = "throughput";
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_num_batched_tokens, 16384);
  EXPECT_EQ(c->cache.max_num_seqs, 512);
  o.max_num_batched_tokens = 4096;
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_num_batched_tokens, 4096);
  EXPECT_EQ(c->cache.max_num_seqs, 512);
  o.performance_mode = "fast";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--performance-mode 'fast' is not a performance mode; accepted: balanced, "
            "interactivity, throughput");
}

// Blocks a max-length request takes and the engine's token capacity, for a launch.
std::pair<int64_t, int64_t> BlocksAndTokens(const LaunchOptions& o) {
  const Result<LaunchConfig> launch = ToLaunchConfig(o);
  if (!launch.ok()) return {-1, -1};
  const Result<Plan> plan = PlanLaunch(*launch);
  if (!plan.ok()) return {-2, -2};
  return {plan->capacity.blocks_per_request, plan->capacity.max_tokens};
}

// A GPU known by its name (NVIDIA's table of CUDA GPUs) gives its compute capability where
// --device-capability is not given; the messages that the capability decides name the name.
TEST(LaunchOptions, DeviceNameGivesTheCapability) {
  const std::pair<const char*, const char*> named[] = {
      {"NVIDIA B200", "10.0"},
      {"NVIDIA GB200", "10.0"},
      {"NVIDIA B300 SXM6 AC", "10.3"},
      {"NVIDIA H100 80GB HBM3", "9.0"},
      {"NVIDIA H200 NVL", "9.0"},
      {"NVIDIA H20", "9.0"},
      {"NVIDIA GH200 480GB", "9.0"},
      {"NVIDIA A100-SXM4-80GB", "8.0"},
      {"NVIDIA A800-SXM4-80GB", "8.0"},
      {"NVIDIA A10G", "8.6"},
      {"NVIDIA RTX A6000", "8.6"},
      {"NVIDIA L40S", "8.9"},
      {"NVIDIA L4", "8.9"},
      {"NVIDIA RTX 6000 Ada Generation", "8.9"},
      {"Quadro RTX 6000", "7.5"},
      {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"},
      {"NVIDIA GeForce RTX 5090", "12.0"},
      {"NVIDIA GeForce RTX 4090", "8.9"},
      {"NVIDIA GeForce RTX 3090", "8.6"},
      {"NVIDIA GeForce RTX 2080 Ti", "7.5"},
      {"NVIDIA GB10", "12.1"},
      {"Tesla T4", "7.5"},
      {"Tesla V100-SXM2-16GB", "7.0"},
  };
  for (const auto& [name, capability] : named) {
    const std::optional<DeviceCapability> c = GpuNameCapability(name);
    ASSERT_TRUE(c.has_value()) << name;
    EXPECT_EQ(DeviceCapabilityName(*c), capability) << name;
  }
  for (const char* unknown :
       {"AMD Instinct MI300X", "NVIDIA GeForce GTX 1080", "NVIDIA H1000", "rtx", "B200x", ""}) {
    EXPECT_FALSE(GpuNameCapability(unknown).has_value()) << unknown;
  }

  // The capability a launch plans for, and the note after the step defaults' ("" without one).
  const auto gpu = [](const LaunchOptions& o) -> std::pair<std::string, std::string> {
    const Result<LaunchConfig> c = ToLaunchConfig(o);
    if (!c.ok()) return {c.status().ToString(), ""};
    const std::vector<Diagnostic>& d = c->launch_diagnostics;
    return {
        c->cache.device_capability ? DeviceCapabilityName(*c->cache.device_capability) : "unknown",
        d.size() < 2
            ? ""
            : fmt::format("{} {}: {}", SeverityName(d[1].severity), d[1].code, d[1].message)};
  };
  // Named, the GPU plans as --device-capability does: Kimi-K2.6 on a B200 runs FLASHINFER_MLA.
  LaunchOptions o;
  o.model = "kimi-k2.6";
  o.tensor_parallel_size = 8;
  o.device_memory = "180GiB";
  o.device_name = "NVIDIA B200";
  EXPECT_EQ(gpu(o), (std::pair<std::string, std::string>{
                        "10.0",
                        "info device-capability-from-name: --device-name 'NVIDIA B200' is a GPU "
                        "of compute capability 10.0 (NVIDIA's table of CUDA GPUs): kvtopo plans "
                        "what the engine decides by the GPU as --device-capability 10.0 does"}));
  Result<Plan> plan = PlanLaunch(*ToLaunchConfig(o));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 488928);
  EXPECT_EQ(testing_configs::DiagnosticMessage(*plan, "backend-device-pick"),
            "the target layers of 'profiles/kimi-k2.6.json' run on FLASHINFER_MLA, the engine's "
            "pick on compute capability 10.0 (--device-name 'NVIDIA B200'); the profile's backend "
            "B12X_MLA, planned where the GPU is not given, does not run there (it runs on 12.x)");
  o.device_name.reset();
  o.device_capability = "10.0";
  plan = PlanLaunch(*ToLaunchConfig(o));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 488928);

  // A stated capability is kept where the name contradicts it, with a warning; where the name
  // agrees, nothing is said.
  o.device_name = "NVIDIA H200";
  EXPECT_EQ(gpu(o), (std::pair<std::string, std::string>{
                        "10.0",
                        "warning device-capability-name: --device-capability 10.0 is not the "
                        "compute capability of --device-name 'NVIDIA H200' (9.0 in NVIDIA's table "
                        "of CUDA GPUs): kvtopo plans for 10.0, as stated; the engine reads the GPU "
                        "it runs on"}));
  o.device_capability = "9.0";
  EXPECT_EQ(gpu(o), (std::pair<std::string, std::string>{"9.0", ""}));

  // A name kvtopo does not know leaves the GPU unknown.
  o.device_capability.reset();
  o.device_name = "AMD Instinct MI300X";
  EXPECT_EQ(gpu(o), (std::pair<std::string, std::string>{
                        "unknown",
                        "info device-name-unknown: kvtopo does not know the compute capability "
                        "of --device-name 'AMD Instinct MI300X': pass --device-capability "
                        "MAJOR.MINOR to plan what the engine decides by the GPU"}));

  // A refusal the name's GPU decides names the name: MXFP4 weights need 8.0, a T4 is 7.5.
  o = LaunchOptions{};
  o.model = "gpt-oss-120b";
  o.device_memory = "16GiB";
  o.device_name = "Tesla T4";
  plan = PlanLaunch(*ToLaunchConfig(o));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->accepted());
  EXPECT_EQ(testing_configs::DiagnosticMessage(*plan, "quantization-compute-capability"),
            "quantization method gpt_oss_mxfp4 (config.json 'profiles/gpt-oss-120b.json': "
            "quantization_config) needs compute capability 8.0 or later, not 7.5 (--device-name "
            "'Tesla T4'): the engine refuses the launch ('The quantization method gpt_oss_mxfp4 "
            "is not supported for the current GPU. Minimum capability: 80. Current capability: "
            "75.')");
}

// --device-memory and --device-name give the engine's device-dependent `vllm serve` step defaults
// (EngineArgs.get_batch_defaults): 8,192 tokens and 1,024 rows on a GPU of 70 GiB or more that is
// not an A100, 2,048 and 256 otherwise; given limits stay, throughput mode doubles the defaults.
TEST(LaunchOptions, DeviceStepDefaultsAsTheEngineSetsThem) {
  struct Case {
    const char* memory;
    const char* name;
    int64_t tokens;
    int64_t rows;
    const char* message;
  };
  const Case cases[] = {
      {"24GiB", nullptr, 2048, 256,
       "--device-memory 24GiB (below 70 GiB): the engine's `vllm serve` defaults for this GPU: "
       "--max-num-batched-tokens 2048, --max-num-seqs 256"},
      {"141GiB", "NVIDIA H200", 8192, 1024,
       "--device-memory 141GiB ('NVIDIA H200') (70 GiB or more, not an A100): the engine's `vllm "
       "serve` defaults for this GPU: --max-num-batched-tokens 8192, --max-num-seqs 1024"},
      {"80GiB", "NVIDIA A100-SXM4-80GB", 2048, 256,
       "--device-memory 80GiB ('NVIDIA A100-SXM4-80GB') (an A100, whatever its memory): the "
       "engine's `vllm serve` defaults for this GPU: --max-num-batched-tokens 2048, "
       "--max-num-seqs 256"},
      // The threshold is 70 GiB exactly; "g" counts 1000s, so 75g is below it.
      {"70GiB", nullptr, 8192, 1024, nullptr},
      {"75161927679", nullptr, 2048, 256, nullptr},
      {"75g", "NVIDIA A800-SXM4-80GB", 2048, 256, nullptr},
      {"80G", "NVIDIA A800-SXM4-80GB", 8192, 1024, nullptr},
  };
  for (const Case& k : cases) {
    LaunchOptions o;
    o.model = "gpt-oss-120b";
    o.device_memory = k.memory;
    if (k.name != nullptr) o.device_name = k.name;
    auto c = ToLaunchConfig(o);
    ASSERT_TRUE(c.ok()) << k.memory << ": " << c.status().ToString();
    EXPECT_EQ(c->cache.max_num_batched_tokens, k.tokens) << k.memory;
    EXPECT_EQ(c->cache.max_num_seqs, k.rows) << k.memory;
    EXPECT_FALSE(c->max_num_batched_tokens_given) << k.memory;
    // A named GPU's capability comes second (DeviceNameGivesTheCapability).
    ASSERT_EQ(c->launch_diagnostics.size(), k.name != nullptr ? 2u : 1u) << k.memory;
    EXPECT_EQ(c->launch_diagnostics[0].code, "device-step-defaults");
    EXPECT_EQ(c->launch_diagnostics[0].severity, Severity::kInfo);
    if (k.message != nullptr) {
      EXPECT_EQ(c->launch_diagnostics[0].message, k.message);
    }
  }

  LaunchOptions o;
  o.model = "gpt-oss-120b";
  o.device_memory = "141GiB";
  o.performance_mode = "throughput";  // doubles the device's defaults
  auto c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_num_batched_tokens, 16384);
  EXPECT_EQ(c->cache.max_num_seqs, 2048);
  o.performance_mode.reset();
  o.max_num_batched_tokens = 512;  // given: kept; the defaulted rows are at most the tokens
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_num_batched_tokens, 512);
  EXPECT_EQ(c->cache.max_num_seqs, 512);
  EXPECT_EQ(c->launch_diagnostics[0].message,
            "--device-memory 141GiB (70 GiB or more, not an A100): the engine's `vllm serve` "
            "defaults for this GPU: --max-num-seqs 1024");
  o.max_num_seqs = 64;
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_num_seqs, 64);
  EXPECT_EQ(c->launch_diagnostics[0].message,
            "--device-memory 141GiB (70 GiB or more, not an A100): the engine's defaults for this "
            "GPU (8192 tokens, 1024 rows) do not apply: both limits are set otherwise");

  // The default launch states its tokens per step; only the rows follow the GPU.
  o = LaunchOptions{};
  o.device_memory = "180GiB";
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_num_batched_tokens, 1024);
  EXPECT_EQ(c->cache.max_num_seqs, 1024);

  o = LaunchOptions{};
  o.model = "gpt-oss-120b";
  o.device_name = "NVIDIA A100-PCIE-40GB";
  EXPECT_EQ(
      ToLaunchConfig(o).status().message(),
      "--device-name 'NVIDIA A100-PCIE-40GB' needs --device-memory: the engine's step defaults "
      "follow the GPU's memory first, then its name");
  o.device_memory = "40GiB";
  o.kv_cache_memory = "48GiB";
  EXPECT_EQ(
      ToLaunchConfig(o).status().message(),
      "--kv-cache-memory 48GiB (51539607552 bytes) exceeds --device-memory 40GiB (42949672960 "
      "bytes): one rank's KV cache cannot be larger than its GPU; lower --kv-cache-memory");
  o.kv_cache_memory = "40GiB";
  EXPECT_TRUE(ToLaunchConfig(o).ok());
  const LaunchOption* option = FindLaunchOption("device-memory");
  ASSERT_NE(option, nullptr);
  EXPECT_EQ(SetLaunchOption(o, *option, std::string("0"), "--device-memory").message(),
            "--device-memory must be in [1, 1125899906842624] bytes, got '0'");

  // The plan follows: gpt-oss-120b's sliding-window layers hold cdiv(127 + 2 x 2,048, 16) + 1 =
  // 265 pages a request on a 24 GiB GPU instead of 1,033 at 8,192 tokens per step.
  o = LaunchOptions{};
  o.model = "gpt-oss-120b";
  o.kv_cache_memory = "20GiB";
  EXPECT_EQ(BlocksAndTokens(o), std::make_pair(int64_t{9225}, int64_t{517297}));
  o.device_memory = "24GiB";
  EXPECT_EQ(BlocksAndTokens(o), std::make_pair(int64_t{8457}, int64_t{564274}));
}

// Batched data-parallel MoE (EP, DP > 1, all-to-all backend deepep_low_latency or nixl_ep)
// defaults the tokens per step to 256, ahead of the GPU's default; the rows follow the GPU and
// are at most the tokens. --all2all-backend takes the engine's names.
TEST(LaunchOptions, BatchedDataParallelMoeStepDefault) {
  LaunchOptions o;
  o.model = "gpt-oss-120b";
  o.data_parallel_size = 8;
  o.enable_expert_parallel = true;
  o.all2all_backend = "deepep_low_latency";
  auto c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_num_batched_tokens, 256);
  EXPECT_EQ(c->cache.max_num_seqs, 256);
  EXPECT_EQ(OnlyLaunchDiagnostic(c, "batched-dp-moe-step-default"),
            "--enable-expert-parallel with --data-parallel-size 8 and --all2all-backend "
            "deepep_low_latency runs batched data-parallel MoE, for which the engine defaults "
            "--max-num-batched-tokens to 256");
  o.device_memory = "141GiB";
  o.performance_mode = "throughput";
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_num_batched_tokens, 512);
  EXPECT_EQ(c->cache.max_num_seqs, 512);  // min(2 x 1,024, 512)
  ASSERT_EQ(c->launch_diagnostics.size(), 2u);
  EXPECT_EQ(c->launch_diagnostics[1].message,
            "--device-memory 141GiB (70 GiB or more, not an A100): the engine's `vllm serve` "
            "defaults for this GPU: --max-num-seqs 1024");
  o.performance_mode.reset();
  o.device_memory.reset();
  // Not batched: one replica, no EP, another backend; or a given --max-num-batched-tokens.
  for (int k = 0; k < 4; ++k) {
    LaunchOptions v = o;
    if (k == 0) v.data_parallel_size = 1;
    if (k == 1) v.enable_expert_parallel = false;
    if (k == 2) v.all2all_backend = "deepep_high_throughput";
    if (k == 3) v.max_num_batched_tokens = 4096;
    c = ToLaunchConfig(v);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->cache.max_num_batched_tokens, k == 3 ? 4096 : 8192) << k;
    EXPECT_TRUE(c->launch_diagnostics.empty()) << k;
  }
  o.all2all_backend = "nixl_ep";
  EXPECT_EQ(ToLaunchConfig(o)->cache.max_num_batched_tokens, 256);
  o.all2all_backend = "pplx";  // removed: the engine falls back to allgather_reducescatter
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_num_batched_tokens, 8192);
  ASSERT_EQ(c->launch_diagnostics.size(), 1u);
  EXPECT_EQ(c->launch_diagnostics[0].severity, Severity::kWarning);
  EXPECT_EQ(c->launch_diagnostics[0].message,
            "--all2all-backend 'pplx' has been removed from the engine, which falls back to "
            "allgather_reducescatter");
  o.all2all_backend = "deepep";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--all2all-backend 'deepep' is not an all-to-all backend; accepted: "
            "allgather_reducescatter, deepep_high_throughput, deepep_low_latency, mori, nixl_ep, "
            "flashinfer_nvlink_two_sided, flashinfer_nvlink_one_sided, flashinfer_all2allv "
            "(naive and pplx fall back to allgather_reducescatter)");
  // gpt-oss-120b's sliding-window layers then hold cdiv(127 + 2 x 256, 16) + 1 = 41 pages a
  // request instead of 1,033.
  o.all2all_backend = "deepep_low_latency";
  o.kv_cache_memory = "20GiB";
  EXPECT_EQ(BlocksAndTokens(o), std::make_pair(int64_t{8192 + 41}, int64_t{579627}));
  EXPECT_EQ(FindLaunchOption("-dp"), FindLaunchOption("data_parallel_size"));
  EXPECT_EQ(FindLaunchOption("-ep"), FindLaunchOption("enable-expert-parallel"));
}

// --max-model-len takes vLLM's "auto" or -1 (human_readable_int_or_auto): fit to memory.
TEST(LaunchOptions, MaxModelLenAuto) {
  const LaunchOption* option = FindLaunchOption("max-model-len");
  ASSERT_NE(option, nullptr);
  for (const std::string text : {"auto", "AUTO", " -1 ", "-1"}) {
    LaunchOptions o;
    ASSERT_TRUE(SetLaunchOption(o, *option, text, "--max-model-len").ok()) << text;
    EXPECT_EQ(o.max_model_len, kAutoMaxModelLen) << text;
  }
  LaunchOptions o;
  ASSERT_TRUE(SetLaunchOption(o, *option, int64_t{-1}, "max_model_len").ok());
  EXPECT_EQ(ToLaunchConfig(o)->cache.max_model_len, kAutoMaxModelLen);
  EXPECT_EQ(SetLaunchOption(o, *option, int64_t{-2}, "max_model_len").message(),
            "max_model_len must be positive, got -2");
  EXPECT_EQ(SetLaunchOption(o, *option, std::string("automatic"), "--max-model-len").message(),
            "--max-model-len: 'automatic' is not an integer (digits, optionally with k/m/g/t for "
            "x1000 or K/M/G/T for x1024)");
}

TEST(LaunchOptions, VllmServeFlagsThatDoNotChangeThePlan) {
  ASSERT_NE(FindVllmFlagNotPlanned("--served-model-name"), nullptr);
  EXPECT_TRUE(FindVllmFlagNotPlanned("--served-model-name")->takes_value);
  EXPECT_EQ(FindVllmFlagNotPlanned("--gpu-memory-utilization"), nullptr);  // a checked option
  EXPECT_NE(FindVllmFlagNotPlanned("--port=8000"), nullptr);
  EXPECT_NE(FindVllmFlagNotPlanned("--disable_log_stats"), nullptr);
  EXPECT_EQ(FindVllmFlagNotPlanned("--trust-remote-code"), nullptr);  // a planning switch now
  EXPECT_NE(FindVllmFlagNotPlanned("--no-enable-force-include-usage"), nullptr);
  EXPECT_EQ(FindVllmFlagNotPlanned("--no-enforce-eager"), nullptr);  // a checked option now
  EXPECT_EQ(FindVllmFlagNotPlanned("-O3"), nullptr);                 // a checked option now (-O)
  // An encoder-only instance still caches its language model's layers: the cache is the same.
  // Fast prefill for KV sharing leaves it as it is too, and is a checked option now (EAGLE-style
  // drafts and the V2 model runner refuse it).
  EXPECT_EQ(FindVllmFlagNotPlanned("--kv-sharing-fast-prefill"), nullptr);
  EXPECT_NE(FindVllmFlagNotPlanned("--mm-encoder-only"), nullptr);
  EXPECT_EQ(FindVllmFlagNotPlanned("--ec-transfer-config"), nullptr);  // a checked option now
  EXPECT_EQ(FindVllmFlagNotPlanned("--kv-transfer-config"), nullptr);  // a planning option now
  EXPECT_EQ(FindVllmFlagNotPlanned("--no-port"), nullptr);             // "--no-" only for switches
  EXPECT_EQ(FindVllmFlagNotPlanned("--max-model-len"), nullptr);       // a planning option
  // No planning option is also listed as not planned.
  for (const LaunchOption& o : LaunchOptionTable()) {
    std::string flag(o.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    EXPECT_EQ(FindVllmFlagNotPlanned("--" + flag), nullptr) << flag;
  }
}

// The flags of the fork's head (28be48fa9) with the arity its argparse parser gives them.
TEST(LaunchOptions, VllmServeFlagsOfTheForkHeadWithTheirArity) {
  using Values = VllmFlag::Values;
  for (const char* name :
       {"--mamba-cache-philox-rounds", "--dbo-decode-token-threshold", "--load-format", "-dpa",
        "-dpp", "--gdn-prefill-backend", "--shutdown-timeout"}) {
    const VllmFlag* f = FindVllmFlagNotPlanned(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_TRUE(f->takes_value && f->values == Values::kOne && !f->json) << name;
  }
  for (const char* name : {"--numa-bind", "--grpc", "--no-enable-force-include-usage",
                           "--scheduler-reserve-full-isl"}) {
    ASSERT_NE(FindVllmFlagNotPlanned(name), nullptr) << name;
    EXPECT_FALSE(FindVllmFlagNotPlanned(name)->takes_value) << name;
  }
  for (const char* name : {"--served-model-name", "--allowed-media-domains", "--api-key",
                           "--numa-bind-nodes", "--offload-params", "--lora-target-modules"}) {
    ASSERT_NE(FindVllmFlagNotPlanned(name), nullptr) << name;
    EXPECT_EQ(FindVllmFlagNotPlanned(name)->values, Values::kOneOrMore) << name;
  }
  EXPECT_EQ(FindVllmFlagNotPlanned("--hf-token")->values, Values::kOptional);
  // JSON flags, and their dotted keys; other flags take none.
  for (const char* name : {"--kv-events-config", "--reasoning-config"}) {
    ASSERT_NE(FindVllmFlagNotPlanned(name), nullptr) << name;
    EXPECT_TRUE(FindVllmFlagNotPlanned(name)->json) << name;
  }
  EXPECT_EQ(FindVllmFlagNotPlanned("--kv-events-config.enable_kv_cache_events")->name,
            "--kv-events-config");
  EXPECT_EQ(FindVllmFlagNotPlanned("--kernel-config.moe_backend"), nullptr);  // a checked option
  EXPECT_EQ(FindVllmFlagNotPlanned("--attention-config.backend"), nullptr);   // a checked option
  EXPECT_EQ(FindVllmFlagNotPlanned("-ac.backend=FLASH_ATTN"), nullptr);
  EXPECT_EQ(FindVllmFlagNotPlanned("--compilation-config.mode"), nullptr);  // a checked option
  EXPECT_EQ(FindVllmFlagNotPlanned("-cc"), nullptr);
  EXPECT_EQ(FindVllmFlagNotPlanned("--port.x"), nullptr);
  EXPECT_EQ(FindVllmFlagNotPlanned("-O.mode"), nullptr);
  // Planned, so not in the list: the speculative aliases and the DCP and Mamba checks.
  for (const char* name : {"--spec-method",
                           "--spec-model",
                           "--spec-tokens",
                           "-sc",
                           "--dcp-comm-backend",
                           "--enable-mamba-cache-stochastic-rounding",
                           "--kv-cache-dtype-skip-layers",
                           "--hf-overrides",
                           "--kernel-config",
                           "--moe-backend",
                           "--linear-backend",
                           "--enable-flashinfer-autotune",
                           "--eplb-config",
                           "--ir-op-priority",
                           "--enable-dbo",
                           "--ubatch-size",
                           "--enable-prompt-embeds",
                           "--logits-processors",
                           "--logprobs-mode",
                           "--kv-sharing-fast-prefill",
                           "--default-mm-loras",
                           "--api-server-count",
                           "--lora-dtype"}) {
    EXPECT_EQ(FindVllmFlagNotPlanned(name), nullptr) << name;
  }
  EXPECT_EQ(FindLaunchOption("-sc")->name, "speculative_config");
}

// --spec-method, --spec-model and --spec-tokens are keys of the speculative config; one the JSON
// names too is refused with the engine's message.
TEST(LaunchOptions, SpecFlagsAreKeysOfTheSpeculativeConfig) {
  LaunchOptions o;
  o.model = "kimi-k2.6";
  ASSERT_TRUE(Set(o, "spec_method", std::string("eagle3")).ok());
  ASSERT_TRUE(Set(o, "--spec-tokens", std::string("3")).ok());
  Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(c->speculative.has_value());
  EXPECT_EQ(c->speculative->method, "eagle3");
  EXPECT_EQ(c->speculative->num_speculative_tokens, 3);

  o.spec_tokens.reset();
  o.speculative_config =
      R"({"num_speculative_tokens": 2, "draft_attention_backend": "TRITON_MLA"})";
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->speculative->method, "eagle3");
  EXPECT_EQ(c->speculative->num_speculative_tokens, 2);

  o.spec_tokens = 4;
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--spec-tokens and --speculative-config['num_speculative_tokens'] are mutually "
            "exclusive");
  o.spec_tokens.reset();
  o.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 1})";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--spec-method and --speculative-config['method'] are mutually exclusive");
  o.speculative_config = "[1]";
  EXPECT_EQ(ToLaunchConfig(o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Set(o, "spec_tokens", int64_t{0}).message(), "spec_tokens must be positive, got 0");
}

// --dcp-comm-backend a2a needs DCP; stochastic rounding needs a float16 SSM cache, spelled so.
TEST(LaunchOptions, LaunchChecksTheEngineMakesAtStartup) {
  LaunchOptions o;
  o.model = "kimi-k2.6";
  o.tensor_parallel_size = 8;
  o.dcp_comm_backend = "a2a";
  Result<LaunchConfig> c = ToLaunchConfig(o);
  EXPECT_EQ(c.status().code(), StatusCode::kRejected);
  EXPECT_EQ(c.status().message(),
            "--dcp-comm-backend a2a needs --decode-context-parallel-size > 1, got 1; the engine "
            "refuses it at startup (ParallelConfig); drop the flag or use DCP");
  o.decode_context_parallel_size = 8;
  EXPECT_TRUE(ToLaunchConfig(o).ok());
  o.dcp_comm_backend = "nccl";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--dcp-comm-backend 'nccl' is not a DCP communication backend; accepted: ag_rs, a2a");
  o.dcp_comm_backend = "ag_rs";
  o.decode_context_parallel_size.reset();
  EXPECT_TRUE(ToLaunchConfig(o).ok());

  o.enable_mamba_cache_stochastic_rounding = true;
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--enable-mamba-cache-stochastic-rounding needs --mamba-ssm-cache-dtype float16, got "
            "auto; the engine refuses the launch at startup");
  o.mamba_ssm_cache_dtype = "bfloat16";
  EXPECT_EQ(ToLaunchConfig(o).status().code(), StatusCode::kRejected);
  o.mamba_ssm_cache_dtype = "float16";
  EXPECT_TRUE(ToLaunchConfig(o).ok());
  // The triton kernels round stochastically on compute capability 10.x only (MambaConfig).
  o.device_capability = "12.0";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--enable-mamba-cache-stochastic-rounding with the triton Mamba backend needs compute "
            "capability 10.x (the cvt.rs instruction), not 12.0 (--device-capability); the "
            "engine refuses the launch at startup; pass --mamba-backend flashinfer or drop "
            "stochastic rounding");
  o.mamba_backend = "FlashInfer";
  EXPECT_TRUE(ToLaunchConfig(o).ok());
  o.mamba_backend = "triton";
  o.device_capability = "10.0";
  EXPECT_TRUE(ToLaunchConfig(o).ok());
  o.mamba_backend = "cuda";
  const Status bad = ToLaunchConfig(o).status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(),
            "--mamba-backend 'cuda' is not a Mamba backend: the engine takes triton or "
            "flashinfer");
}

}  // namespace
}  // namespace kvtopo

namespace kvtopo {
namespace {

TEST(Models, HuggingFaceRepoIdsNameProfiles) {
  for (const auto& [repo, profile] : std::vector<std::pair<std::string, std::string>>{
           {"moonshotai/Kimi-K2.6", "kimi-k2.6"},
           {"local-inference-lab/GLM-5.3-Flash-NVFP4", "glm-5.3-flash"},
           {"Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen3-next-80b"},
           {"moonshotai/kimi-k3@main", "kimi-k3"}}) {
    LaunchConfig c;
    c.model = repo;
    c.cache.max_model_len = 4096;
    auto specs = BuildModelCacheSpecs(c);
    ASSERT_TRUE(specs.ok()) << repo << ": " << specs.status().ToString();
    EXPECT_EQ(specs->model_name, profile) << repo;
  }
  LaunchConfig draft = DefaultLaunchConfig();
  draft.model = "moonshotai/Kimi-K3";
  draft.speculative->model = "Inferact/Kimi-K3-DSpark";
  auto specs = BuildModelCacheSpecs(draft);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->draft_name, "kimi-k3-dspark");
  LaunchConfig unknown;
  unknown.model = "someone/UnknownModel";
  auto missing = BuildModelCacheSpecs(unknown);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("a Hugging Face repo id a profile serves"),
            std::string::npos);
}

TEST(Models, PerModelMtpNamesAreMtp) {
  for (const char* method : {"mtp", "qwen3_next_mtp", "deepseek_mtp", "glm4_moe_mtp",
                             "nemotron_h_mtp", "exaone4_5_mtp", "hy_v3_mtp", "gemma4_mtp"}) {
    auto spec = ParseSpeculativeConfig(std::string(R"({"method":")") + method +
                                       R"(","num_speculative_tokens":2})");
    ASSERT_TRUE(spec.ok()) << method;
    EXPECT_EQ(spec->method, "mtp") << method;
  }
  // Not one of the engine's MTP model types: its method check refuses it.
  auto refused = ParseSpeculativeConfig(R"({"method":"mimo_v2_mtp","num_speculative_tokens":2})");
  EXPECT_EQ(refused.status().message(),
            "--speculative-config: 'method' 'mimo_v2_mtp' is not accepted; accepted: eagle, "
            "eagle3, mtp, dspark, dflash, draft_model, ngram, ngram_gpu, suffix, medusa, "
            "mlp_speculator, extract_hidden_states, custom_class, and the per-model MTP names "
            "deepseek_mtp, "
            "mimo_mtp, glm4_moe_mtp, glm4_moe_lite_mtp, glm_ocr_mtp, ernie_mtp, nemotron_h_mtp, "
            "exaone_moe_mtp, exaone4_5_mtp, qwen3_next_mtp, qwen3_5_mtp, longcat_flash_mtp, "
            "pangu_ultra_moe_mtp, step3p5_mtp, hy_v3_mtp, gemma4_mtp");
  // Qwen3-Next's MTP module: one full-attention layer after the 48 trunk layers.
  LaunchConfig c;
  c.model = "qwen3-next-80b";
  c.parallel.tensor_parallel_size = 2;
  c.cache.max_model_len = 32768;
  c.speculative =
      *ParseSpeculativeConfig(R"({"method":"qwen3_next_mtp","num_speculative_tokens":2})");
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  std::vector<LayerSpec> draft;
  for (const LayerSpec& s : specs->layers) {
    if (s.role == Role::kDraft) draft.push_back(s);
  }
  ASSERT_EQ(draft.size(), 1u);
  EXPECT_EQ(draft[0].name, "model.layers.48.self_attn");
  EXPECT_EQ(draft[0].kind, CacheKind::kFullAttention);
  EXPECT_EQ(draft[0].num_kv_heads, 1);
  EXPECT_EQ(specs->num_lookahead_tokens, 2);
}

TEST(Models, SpeculativeKeysThatDoNotChangeThePlanAreListed) {
  auto spec = ParseSpeculativeConfig(
      R"({"method":"eagle3","num_speculative_tokens":3,"draft_tensor_parallel_size":1,)"
      R"("disable_padded_drafter_batch":true,"rejection_sample_method":"probabilistic"})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->not_planned_keys, (std::vector<std::string>{"rejection_sample_method"}));
  EXPECT_EQ(spec->draft_tensor_parallel_size, 1);
  EXPECT_TRUE(spec->disable_padded_drafter_batch);
  EXPECT_FALSE(spec->parallel_drafting);
}

// parallel_drafting and disable_padded_drafter_batch are read (SpeculativeConfig at 28be48fa9):
// JSON booleans, DFlash always drafting in parallel; the slots drafting adds per request are
// S - 1 under parallel drafting plus one for a draft model (max_num_new_slots_for_drafting).
TEST(Models, ParallelDraftingAndPaddedDrafterBatchAreRead) {
  auto parse = [](const std::string& json) { return ParseSpeculativeConfig(json); };
  auto spec = parse(R"({"method":"eagle3","num_speculative_tokens":4,"parallel_drafting":true})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->parallel_drafting);
  EXPECT_EQ(spec->NewSlotsForDrafting(), 3);
  EXPECT_TRUE(spec->AllowsAsyncScheduling());
  spec = parse(R"({"method":"dflash","num_speculative_tokens":7,"parallel_drafting":false})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->parallel_drafting);
  EXPECT_EQ(spec->NewSlotsForDrafting(), 6);
  // A config built without the parser: DFlash drafts in parallel all the same.
  SpeculativeConfig dflash;
  dflash.method = "dflash";
  dflash.num_speculative_tokens = 7;
  EXPECT_EQ(dflash.NewSlotsForDrafting(), 6);
  spec = parse(R"({"method":"draft_model","model":"m","num_speculative_tokens":5})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->NewSlotsForDrafting(), 1);
  spec = parse(
      R"({"method":"draft_model","model":"m","num_speculative_tokens":5,"parallel_drafting":true})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->NewSlotsForDrafting(), 5);
  spec = parse(R"({"method":"eagle3","num_speculative_tokens":3})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->NewSlotsForDrafting(), 0);
  spec =
      parse(R"({"method":"mtp","num_speculative_tokens":3,"disable_padded_drafter_batch":true})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_FALSE(spec->AllowsAsyncScheduling());
  // SpeculativeConfig is a pydantic dataclass: its bools and ints are read in lax mode.
  spec = parse(R"({"method":"draft_model","model":"m","num_speculative_tokens":"5.0",)"
               R"("parallel_drafting":"yes"})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->num_speculative_tokens, 5);
  EXPECT_EQ(spec->NewSlotsForDrafting(), 5);
  spec =
      parse(R"({"method":"mtp","num_speculative_tokens":3.0,"disable_padded_drafter_batch":1.0})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_FALSE(spec->AllowsAsyncScheduling());
  spec = parse(R"({"method":"ngram","num_speculative_tokens":true,"prompt_lookup_max":" 4 "})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->num_speculative_tokens, 1);
  EXPECT_EQ(parse(R"({"method":"eagle3","num_speculative_tokens":3,"parallel_drafting":2})")
                .status()
                .message(),
            "--speculative-config: 'parallel_drafting' must be true or false, got 2");
  EXPECT_EQ(parse(R"({"method":"eagle3","num_speculative_tokens":"3.5"})").status().message(),
            "--speculative-config: 'num_speculative_tokens' must be an integer in [1, 1024], got "
            "\"3.5\"");
  EXPECT_EQ(
      parse(R"({"method":"eagle3","num_speculative_tokens":3,"disable_padded_drafter_batch":null})")
          .status()
          .message(),
      "--speculative-config: 'disable_padded_drafter_batch' must be true or false, got null");
}

// draft_tensor_parallel_size (SpeculativeConfig._verify_and_get_draft_tp): 1 or the target's
// tensor-parallel size, and only the target's for a draft model (DraftModelProposer).
TEST(Models, DraftTensorParallelSizeIsOneOrTheTargets) {
  auto plan_with = [](const std::string& method, int64_t draft_tp) {
    LaunchConfig c;
    c.model = "gpt-oss-120b";
    c.parallel.tensor_parallel_size = 4;
    c.kv_cache_memory_bytes = int64_t{20} << 30;
    c.speculative = SpeculativeConfig{.method = method,
                                      .model = method == "draft_model" ? "gpt-oss-120b" : "",
                                      .num_speculative_tokens = 3,
                                      .draft_tensor_parallel_size = draft_tp};
    return BuildModelCacheSpecs(c);
  };
  auto errors = [](const Result<ModelCacheSpecs>& specs) {
    std::string out;
    for (const Diagnostic& d : specs->diagnostics) {
      if (d.severity == Severity::kError) out += d.code + ": " + d.message + "\n";
    }
    return out;
  };
  for (int64_t draft_tp : {0, 4}) {
    auto specs = plan_with("draft_model", draft_tp);
    ASSERT_TRUE(specs.ok()) << specs.status().ToString();
    EXPECT_EQ(errors(specs), "") << draft_tp;
  }
  auto specs = plan_with("draft_model", 1);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(errors(specs),
            "speculative-draft-tp: --speculative-config method 'draft_model' runs its draft only "
            "at the target's tensor-parallel size: the engine refuses "
            "'draft_tensor_parallel_size' 1 with --tensor-parallel-size 4; drop it or set it to "
            "4\n");
  specs = plan_with("draft_model", 2);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(errors(specs),
            "speculative-draft-tp: --speculative-config 'draft_tensor_parallel_size' 2 must be 1 "
            "or --tensor-parallel-size 4; the engine refuses any other value\n");
  EXPECT_EQ(ParseSpeculativeConfig(R"({"method":"eagle3","num_speculative_tokens":3,)"
                                   R"("draft_tensor_parallel_size":0})")
                .status()
                .message(),
            "--speculative-config: 'draft_tensor_parallel_size' must be an integer in [1, 4096] "
            "or null, got 0");
}

// Seed 000: target DCP with an external DSpark draft needs B12X_MLA; at DCP1 another backend
// keeps working.
TEST(Models, DsparkOnOtherBackendsRunsAtDcpOne) {
  LaunchConfig c = DefaultLaunchConfig();
  c.parallel.decode_context_parallel_size = 1;
  c.dspark_draft_kv_window = 0;  // TRITON_MLA has no sliding window: the full draft cache
  c.speculative->draft_attention_backend = "TRITON_MLA";
  auto specs = BuildModelCacheSpecs(c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  for (const Diagnostic& d : specs->diagnostics) {
    EXPECT_NE(d.severity, Severity::kError) << d.code << ": " << d.message;
  }
  c.parallel.decode_context_parallel_size = 16;
  auto rejected = BuildModelCacheSpecs(c);
  ASSERT_TRUE(rejected.ok());
  ASSERT_FALSE(rejected->diagnostics.empty());
  EXPECT_EQ(rejected->diagnostics.front().code, "dspark-dcp-backend");
}

}  // namespace
}  // namespace kvtopo

namespace kvtopo {
namespace {

// docs/launch-options.md is the table rendered; regenerate it with
// `kvtopo options --markdown > docs/launch-options.md`.
// --attention-config: AttentionConfig's fields as the engine's parser checks them; its backend is
// the target's, as --attention-backend's.
TEST(LaunchOptions, AttentionConfig) {
  auto read = [](const std::string& json) {
    LaunchOptions o;
    o.attention_config = json;
    return ToLaunchConfig(o);
  };
  Result<LaunchConfig> c = read(R"({"backend": "triton_mla", "flash_attn_version": 3,
      "use_trtllm_attention": null, "mla_prefill_backend": "trtllm_ragged",
      "flex_attn_block_m": "16", "flash_attn_max_num_splits_for_cuda_graph": 32.0,
      "use_non_causal": "no"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.attention_backend, "triton_mla");
  // Literal[2, 3, 4] takes an equal float, not a bool or a string.
  c = read(R"({"flash_attn_version": 3.0})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.flash_attn_version, 3);
  c = read(R"({"backend": "AUTO"})");  // the model's (the default launch's profile names one)
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.attention_backend, ToLaunchConfig(LaunchOptions{})->cache.attention_backend);
  auto error = [&](const std::string& json) {
    const Status s = read(json).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << json;
    return s.message();
  };
  EXPECT_EQ(error("[]"), "--attention-config must be a JSON object, got []");
  EXPECT_EQ(error(R"({"backend": 1})"),
            "--attention-config: backend must be an attention backend name or \"auto\", got 1");
  EXPECT_EQ(error(R"({"backend": "XFORMERS"})"),
            "--attention-config: backend: unknown attention backend 'XFORMERS'; accepted: "
            "B12X_MLA, B12X_MLA_SPARSE, TRITON_MLA, FLASHMLA, FLASHINFER_MLA, FLASH_ATTN, "
            "FLASH_ATTN_DIFFKV, FLASHINFER, TRITON_ATTN, FLEX_ATTENTION, TURBOQUANT, CUTLASS_MLA, "
            "FLASH_ATTN_MLA, FLASHMLA_SPARSE, FLASHINFER_MLA_SPARSE, TOKENSPEED_MLA (or \"auto\")");
  EXPECT_EQ(error(R"({"flash_attn_version": "3"})"),
            "--attention-config: flash_attn_version must be 2, 3 or 4, got \"3\" (the engine's "
            "parser refuses it)");
  EXPECT_EQ(error(R"({"flash_attn_version": true})"),
            "--attention-config: flash_attn_version must be 2, 3 or 4, got true (the engine's "
            "parser refuses it)");
  EXPECT_EQ(error(R"({"mla_prefill_backend": "cutlass"})"),
            "--attention-config: mla_prefill_backend \"cutlass\" is not an MLA prefill backend "
            "(the engine's parser fails on it); valid: FLASH_ATTN, FLASHINFER, TRTLLM_RAGGED, "
            "TOKENSPEED_MLA");
  EXPECT_EQ(error(R"({"flex_attn_block_n": 1.5})"),
            "--attention-config: flex_attn_block_n must be an integer, got 1.5");
  EXPECT_EQ(error(R"({"tq_max_kv_splits_for_cuda_graph": null})"),
            "--attention-config: tq_max_kv_splits_for_cuda_graph must be an integer, got null");
  EXPECT_EQ(error(R"({"use_fp4_indexer_cache": 2})"),
            "--attention-config: use_fp4_indexer_cache must be true or false, got 2");
  EXPECT_EQ(error(R"({"block_size": 16})"),
            "--attention-config: 'block_size' is not a field the engine takes (its parser refuses "
            "it: 'Unexpected keyword argument'); fields: backend, flash_attn_version, "
            "use_prefill_decode_attention, flash_attn_max_num_splits_for_cuda_graph, "
            "tq_max_kv_splits_for_cuda_graph, use_trtllm_attention, "
            "disable_flashinfer_q_quantization, mla_prefill_backend, "
            "use_prefill_query_quantization, use_fp4_indexer_cache, use_non_causal, "
            "flex_attn_block_m, flex_attn_block_n, flex_attn_q_block_size, "
            "flex_attn_kv_block_size");
  // The MLA prefill fields of older releases: the mla_prefill_backend their migration set.
  EXPECT_EQ(error(R"({"use_trtllm_ragged_deepseek_prefill": true})"),
            Older("--attention-config", "use_trtllm_ragged_deepseek_prefill",
                  "give \"mla_prefill_backend\": \"TRTLLM_RAGGED\" instead"));
  EXPECT_EQ(error(R"({"disable_flashinfer_prefill": "yes"})"),
            Older("--attention-config", "disable_flashinfer_prefill",
                  "give \"mla_prefill_backend\": \"FLASH_ATTN\" instead"));
  EXPECT_EQ(error(R"({"disable_flashinfer_prefill": false})"),
            Older("--attention-config", "disable_flashinfer_prefill", "drop it"));
  EXPECT_EQ(error(R"({"use_cudnn_prefill": 1})"),
            Older("--attention-config", "use_cudnn_prefill",
                  "give \"mla_prefill_backend\": \"FLASH_ATTN\", \"FLASHINFER\" or "
                  "\"TRTLLM_RAGGED\" (the cuDNN prefill backend is gone) instead"));
  LaunchOptions both;
  both.attention_backend = "FLASHMLA";
  both.attention_config = R"({"backend": "TRITON_MLA"})";
  EXPECT_EQ(ToLaunchConfig(both).status().message(),
            "--attention-backend beside --attention-config's backend: the engine refuses the pair "
            "('attention_backend and attention_config.backend are mutually exclusive'); give one");
  both.attention_config = R"({"backend": "auto"})";  // the engine's None: no pair
  c = ToLaunchConfig(both);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.attention_backend, "FLASHMLA");
}

TEST(LaunchOptions, DocsAreTheTable) {
  std::ifstream in(std::string(KVTOPO_SOURCE_DIR) + "/docs/launch-options.md");
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_EQ(doc.str(), LaunchOptionsMarkdown())
      << "docs/launch-options.md is stale: kvtopo options --markdown > docs/launch-options.md";
}

}  // namespace
}  // namespace kvtopo
