// KV connectors as the engine builds them (--kv-transfer-config, --kv-offloading-size and
// --kv-offloading-backend) and the hybrid KV cache manager they leave on or turn off: the
// connector registry's SupportsHMA classes, MultiConnector's sub-connectors, the checks
// KVTransferConfig makes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/plan.h"
#include "model/test_configs.h"

namespace kvtopo {
namespace {

LaunchOptions GptOss() {
  LaunchOptions o;
  o.model = "gpt-oss-120b";
  o.tensor_parallel_size = 8;
  return o;
}

// gpt-oss-120b at TP 8: 18 sliding-window layers in 36. With the manager on they hold a window's
// pages: 6,621,558 tokens; off, every layer caches as full attention: 3,728,256.
TEST(KvConnector, OffloadingBackendsAndTheHybridManager) {
  LaunchOptions o = GptOss();
  o.kv_offloading_size = "64";
  o.kv_offloading_backend = "lmcache";
  auto launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->kv_connector, "LMCacheConnectorV1");
  EXPECT_EQ(launch->kv_connector_hma, false);
  auto plan = PlanLaunch(*launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->capacity.max_tokens, 3'728'256);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "the hybrid KV cache manager is off for KV connector LMCacheConnectorV1 "
            "(--kv-offloading-size 64 --kv-offloading-backend lmcache), which does not support "
            "it (SupportsHMA), so the engine caches 18 sliding-window layers as full attention");

  // Kept on by the flag: the engine's connector factory refuses the connector.
  o.disable_hybrid_kv_cache_manager = false;
  plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [hybrid-manager-off] --no-disable-hybrid-kv-cache-manager keeps the hybrid "
            "KV cache manager on, but KV connector LMCacheConnectorV1 (--kv-offloading-size 64 "
            "--kv-offloading-backend lmcache) does not support it (SupportsHMA), and the engine "
            "refuses to build it ('does not support HMA but HMA is enabled'); drop "
            "--no-disable-hybrid-kv-cache-manager");

  // The native backend's connector supports it; offloading replaces a connector named.
  o = GptOss();
  o.kv_offloading_size = "0.5";
  o.kv_transfer_config = R"({"kv_connector": "P2pNcclConnector", "kv_role": "kv_producer"})";
  launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->kv_connector, "OffloadingConnector");
  EXPECT_EQ(launch->kv_connector_hma, true);
  plan = PlanLaunch(*launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 6'621'558);
  EXPECT_TRUE(plan->diagnostics.empty());

  // Qwen3-Next's recurrent and attention layers cannot share one type without the manager.
  o = LaunchOptions();
  o.model = "qwen3-next-80b";
  o.tensor_parallel_size = 4;
  o.kv_offloading_size = "10";
  o.kv_offloading_backend = "lmcache";
  plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [hybrid-manager-off] the hybrid KV cache manager is off for KV connector "
            "LMCacheConnectorV1 (--kv-offloading-size 10 --kv-offloading-backend lmcache), which "
            "does not support it (SupportsHMA), and without it the engine caches every layer as "
            "one type with one block size, but layer 'model.layers.0.linear_attn' is recurrent "
            "with block 262144 and layer 'model.layers.3.self_attn' is full_attention with block "
            "272: the engine refuses the launch (it fails to convert the KV cache specs to one "
            "unified type); use a KV connector that supports it (--kv-offloading-backend native, "
            "NixlConnector, ...)");
}

// The registry's classes, a MultiConnector's sub-connectors, and an external class kvtopo cannot
// tell (its plan keeps the manager on and warns).
TEST(KvConnector, TransferConfigConnectors) {
  auto hma = [](const std::string& config) -> std::optional<bool> {
    LaunchOptions o = GptOss();
    o.kv_transfer_config = config;
    auto launch = ToLaunchConfig(o);
    EXPECT_TRUE(launch.ok()) << config << ": " << launch.status().ToString();
    return launch.ok() ? launch->kv_connector_hma : std::nullopt;
  };
  EXPECT_EQ(hma(R"({"kv_connector": "NixlConnector", "kv_role": "kv_both"})"), true);
  EXPECT_EQ(hma(R"({"kv_connector": "MooncakeConnector", "kv_role": "kv_consumer"})"), true);
  EXPECT_EQ(hma(R"({"kv_connector": "P2pNcclConnector", "kv_role": "kv_both"})"), false);
  EXPECT_EQ(hma(R"({"kv_connector": "LMCacheMPConnector", "kv_role": "kv_both"})"), std::nullopt);
  EXPECT_EQ(hma(R"({"kv_connector": "MultiConnector", "kv_role": "kv_both",
                    "kv_connector_extra_config": {"connectors": [
                      {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
                      {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"}]}})"),
            true);
  EXPECT_EQ(hma(R"({"kv_connector": "MultiConnector", "kv_role": "kv_both",
                    "kv_connector_extra_config": {"connectors": [
                      {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
                      {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}]}})"),
            false);
  // A sub-connector is judged by its class, as the engine does: a nested MultiConnector has it.
  EXPECT_EQ(hma(R"({"kv_connector": "MultiConnector", "kv_role": "kv_both",
                    "kv_connector_extra_config": {"connectors": [
                      {"kv_connector": "MultiConnector", "kv_role": "kv_both",
                       "kv_connector_extra_config": {"connectors": [
                         {"kv_connector": "P2pNcclConnector", "kv_role": "kv_both"}]}}]}})"),
            true);
  EXPECT_EQ(hma(R"({"kv_connector": "Mine", "kv_role": "kv_both",
                    "kv_connector_module_path": "my_pkg.connector"})"),
            std::nullopt);

  LaunchOptions o = GptOss();
  o.kv_transfer_config =
      R"({"kv_connector": "Mine", "kv_role": "kv_both", "kv_connector_module_path": "my.mod"})";
  auto plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 6'621'558);
  ASSERT_EQ(plan->diagnostics.size(), 1u);
  EXPECT_EQ(plan->diagnostics[0].code, "kv-connector-hybrid-manager");
  EXPECT_TRUE(plan->diagnostics[0].message.starts_with(
      "--kv-transfer-config: the engine turns its hybrid KV cache manager off unless KV "
      "connector Mine supports it (SupportsHMA), which kvtopo cannot tell"))
      << plan->diagnostics[0].message;
}

// --ec-transfer-config as ECTransferConfig checks it; an instance whose connector only produces
// the encoder cache reports no KV cache spec, and kvtopo has nothing to plan.
TEST(KvConnector, EncoderCacheTransfer) {
  LaunchOptions o = GptOss();
  o.ec_transfer_config = R"({"ec_connector": "ECExampleConnector"})";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--ec-transfer-config names an ec_connector without an ec_role; the engine refuses it "
            "('Please specify ec_role when ec_connector is set'): add \"ec_role\": "
            "\"ec_consumer\" (or ec_producer / ec_both)");
  o.ec_transfer_config = R"({"ec_connector": "ECExampleConnector", "ec_role": "producer"})";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--ec-transfer-config: ec_role \"producer\" is not one of ec_producer, ec_consumer, "
            "ec_both");
  o.ec_transfer_config = R"({"ec_connector": "ECExampleConnector", "ec_role": "ec_producer"})";
  EXPECT_EQ(ToLaunchConfig(o).status().code(), StatusCode::kRejected);
  // A role without a connector makes no encoder-cache instance.
  o.ec_transfer_config = R"({"ec_role": "ec_producer"})";
  ASSERT_TRUE(ToLaunchConfig(o).ok());
  o.ec_transfer_config = R"({"ec_connector": "ECExampleConnector", "ec_role": "ec_both"})";
  auto plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 6'621'558);
}

// What KVTransferConfig and the connector factory refuse, and the offloading flags' values.
TEST(KvConnector, RefusedValuesNamed) {
  auto message = [](LaunchOptions o) { return ToLaunchConfig(o).status().message(); };
  LaunchOptions o = GptOss();
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector"})";
  EXPECT_EQ(message(o),
            "--kv-transfer-config names a kv_connector without a kv_role; the engine refuses it "
            "('Please specify kv_role when kv_connector is set'): add \"kv_role\": \"kv_both\" "
            "(or kv_producer / kv_consumer)");
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "both"})";
  EXPECT_EQ(message(o),
            "--kv-transfer-config: kv_role \"both\" is not one of kv_producer, kv_consumer, "
            "kv_both");
  o.kv_transfer_config = R"({"kv_role": "kv_both"})";
  EXPECT_EQ(message(o),
            "--kv-transfer-config names no kv_connector: the engine refuses it ('Connector name "
            "is not set in KVTransferConfig')");
  o.disable_hybrid_kv_cache_manager = true;  // the engine then resolves no class
  EXPECT_TRUE(ToLaunchConfig(o).ok());
  o.disable_hybrid_kv_cache_manager.reset();
  o.kv_transfer_config = R"({"kv_connector": "NixlConnectr", "kv_role": "kv_both"})";
  EXPECT_TRUE(message(o).starts_with(
      "--kv-transfer-config: kv_connector 'NixlConnectr' is not a connector the engine "
      "registers ('Unsupported connector type'); registered: ExampleConnector, "))
      << message(o);
  o.kv_transfer_config = R"(["NixlConnector"])";
  EXPECT_EQ(message(o), "--kv-transfer-config must be a JSON object, got [\"NixlConnector\"]");
  o.kv_transfer_config = R"({"kv_connector": "MultiConnector", "kv_role": "kv_both",
                             "kv_connector_extra_config": {"connectors": [{"kv_role": "x"}]}})";
  EXPECT_EQ(message(o),
            "--kv-transfer-config's connectors[0] names no kv_connector: the engine refuses it "
            "('Connector name is not set in KVTransferConfig')");
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "kv_both",
                             "kv_connector_extra_config": [1]})";
  EXPECT_EQ(message(o),
            "--kv-transfer-config: kv_connector_extra_config [1] is refused by the engine's parser "
            "(Input should be a valid dictionary)");
  // KVTransferConfig forbids other keys and types its fields (pydantic, before __post_init__).
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "kv_both",
                             "kv_connector_extra": {}})";
  EXPECT_EQ(message(o),
            "--kv-transfer-config: 'kv_connector_extra' is not a field the engine takes (its "
            "parser refuses it: 'Unexpected keyword argument'); fields: kv_connector, engine_id, "
            "kv_buffer_device, kv_buffer_size, kv_role, kv_rank, kv_parallel_size, kv_ip, kv_port, "
            "kv_connector_extra_config, kv_connector_module_path, enable_permute_local_kv, "
            "kv_load_failure_policy");
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "kv_both",
                             "kv_port": "5557a"})";
  EXPECT_EQ(message(o),
            "--kv-transfer-config: kv_port \"5557a\" is refused by the engine's parser (Input "
            "should be a valid integer, unable to parse string as an integer)");
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "kv_both",
                             "kv_load_failure_policy": "retry"})";
  EXPECT_EQ(message(o),
            "--kv-transfer-config: kv_load_failure_policy \"retry\" is refused by the engine's "
            "parser (Input should be 'recompute' or 'fail')");
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "kv_both",
                             "kv_port": "5557", "kv_buffer_size": 5e9, "engine_id": null,
                             "enable_permute_local_kv": "true"})";
  EXPECT_TRUE(ToLaunchConfig(o).ok()) << message(o);
  o.kv_transfer_config.reset();
  o.ec_transfer_config = R"({"ec_connector": "ECExampleConnector", "ec_role": "ec_consumer",
                             "ec_buffer_device": null, "kv_port": 1})";
  EXPECT_EQ(message(o),
            "--ec-transfer-config: 'kv_port' is not a field the engine takes (its parser refuses "
            "it: 'Unexpected keyword argument'); fields: ec_connector, engine_id, "
            "ec_buffer_device, ec_buffer_size, ec_role, ec_rank, ec_parallel_size, ec_ip, "
            "ec_port, ec_connector_extra_config, ec_connector_module_path");
  o.ec_transfer_config.reset();
  o.kv_offloading_size = "-1";
  EXPECT_EQ(message(o), "--kv-offloading-size must be a number of GiB, 0 or more, got '-1'");
  o.kv_offloading_size = "1e300";
  EXPECT_EQ(message(o),
            "--kv-offloading-size 1e300 GiB is more bytes than 64 bits hold; give less than "
            "8589934592");
  o.kv_offloading_size = "nan";
  EXPECT_EQ(message(o), "--kv-offloading-size must be a number of GiB, 0 or more, got 'nan'");
  o.kv_offloading_size = "inf";
  EXPECT_EQ(message(o),
            "--kv-offloading-size inf GiB is more bytes than 64 bits hold; give less than "
            "8589934592");
  o.kv_offloading_size = "64GiB";
  EXPECT_EQ(message(o), "--kv-offloading-size must be a number of GiB, 0 or more, got '64GiB'");
  o.kv_offloading_size = "64";
  o.kv_offloading_backend = "mooncake";
  EXPECT_EQ(message(o),
            "--kv-offloading-backend 'mooncake' is not an offloading backend; accepted: native, "
            "lmcache");
}

// VLLM_USE_SIMPLE_KV_OFFLOAD picks the native backend's class;
// VllmConfig._verify_kv_transfer_compat refuses any connector beside PYTORCH_CUDA_ALLOC_CONF's
// expandable_segments:True unless sleep mode is on.
TEST(KvConnector, SimpleOffloadAndExpandableSegments) {
  LaunchOptions o = GptOss();
  o.kv_offloading_size = "64";
  ASSERT_TRUE(ApplyLaunchEnvironment(o, [](const char* name) -> const char* {
                std::string_view n(name);
                if (n == "VLLM_USE_SIMPLE_KV_OFFLOAD") return "1";
                if (n == "PYTORCH_CUDA_ALLOC_CONF")
                  return "garbage_collection_threshold:0.6,"
                         "expandable_segments:True";
                return nullptr;
              }).ok());
  EXPECT_EQ(o.use_simple_kv_offload, true);
  auto launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->kv_connector, "SimpleCPUOffloadConnector");
  EXPECT_EQ(launch->kv_connector_hma, true);
  auto plan = PlanLaunch(*launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [kv-connector-expandable-segments] KV connector SimpleCPUOffloadConnector "
            "(--kv-offloading-size 64 --kv-offloading-backend native) with "
            "PYTORCH_CUDA_ALLOC_CONF 'garbage_collection_threshold:0.6,expandable_segments:True': "
            "the engine refuses a KV connector beside expandable_segments:True, whose allocator "
            "can remap the KV cache's pinned memory, unless sleep mode is on; drop "
            "expandable_segments:True or pass --enable-sleep-mode");

  // Sleep mode allocates the cache where expandable segments are off.
  o.enable_sleep_mode = true;
  plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->capacity.max_tokens, 6'621'558);

  // The engine tests the substring: False, or no connector, passes.
  o.enable_sleep_mode.reset();
  o.pytorch_cuda_alloc_conf = "expandable_segments:False";
  plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  o.pytorch_cuda_alloc_conf = "expandable_segments:True";
  o.kv_offloading_size.reset();
  plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "kv_consumer"})";
  plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [kv-connector-expandable-segments] KV connector NixlConnector "
            "(--kv-transfer-config) with PYTORCH_CUDA_ALLOC_CONF 'expandable_segments:True': the "
            "engine refuses a KV connector beside expandable_segments:True, whose allocator can "
            "remap the KV cache's pinned memory, unless sleep mode is on; drop "
            "expandable_segments:True or pass --enable-sleep-mode");
}

// OffloadingConnector's kv_connector_extra_config, read as the engine's offloading spec reads it
// once the KV cache is sized: the offloaded block_size (int() of it) is a whole number of the
// cache block times the context-parallel ranks, the CPU and tiering specs need cpu_bytes_to_use
// (which --kv-offloading-size sets), another spec_name needs its module, and the tiering spec
// takes one group. kimi-k2.6 at TP 8: one MLA group of 256-token blocks.
TEST(KvConnector, OffloadingSpecFromExtraConfig) {
  LaunchOptions o;
  o.model = "kimi-k2.6";
  o.tensor_parallel_size = 8;
  auto transfer = [](std::string_view extra) {
    return fmt::format(
        R"({{"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
             "kv_connector_extra_config": {{{}}}}})",
        extra);
  };
  auto errors = [](const LaunchOptions& o) {
    Result<Plan> plan = PlanLaunch(ToLaunchConfig(o).value());
    return plan.ok() ? plan->ErrorLines() : plan.status().ToString();
  };
  auto status = [](const LaunchOptions& o) { return ToLaunchConfig(o).status(); };

  o.kv_transfer_config = transfer(R"("cpu_bytes_to_use": 68719476736, "block_size": 1024)");
  Result<LaunchConfig> launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->kv_offloading_spec, "CPUOffloadingSpec");
  EXPECT_EQ(launch->kv_offloaded_block_size, 1024);
  Result<Plan> plan = PlanLaunch(*launch);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->capacity.max_tokens, 488'704);

  // Under DCP 8 the engine counts a block as 256 x 8 tokens.
  o.decode_context_parallel_size = 8;
  EXPECT_EQ(errors(o),
            "\n  error [kv-offloading-block-size] KV connector OffloadingConnector "
            "(--kv-transfer-config) with kv_connector_extra_config.block_size 1024: the engine "
            "offloads whole blocks of 2048 tokens (256-token blocks times 8 context-parallel "
            "ranks), and its offloading spec asserts the offloaded block is a multiple of them "
            "once the weights are loaded; set block_size to a multiple of 2048");
  // int() of a string, a float (truncated) and digits with a sign and underscores.
  for (std::string_view block : {R"("2048")", "2048.9", R"(" +2_048 ")", "4096"}) {
    o.kv_transfer_config =
        transfer(fmt::format(R"("cpu_bytes_to_use": 1e9, "block_size": {})", block));
    launch = ToLaunchConfig(o);
    ASSERT_TRUE(launch.ok()) << launch.status().ToString();
    EXPECT_EQ(launch->kv_offloaded_block_size, block == "4096" ? 4096 : 2048) << block;
    EXPECT_EQ(errors(o), "") << block;
  }
  for (std::string_view block : {R"("2k")", "0", "-2048", "[2048]", R"("2__048")"}) {
    o.kv_transfer_config =
        transfer(fmt::format(R"("cpu_bytes_to_use": 1e9, "block_size": {})", block));
    EXPECT_EQ(status(o).message(),
              fmt::format("--kv-transfer-config: kv_connector_extra_config.block_size must be a "
                          "positive number of tokens, got {}",
                          nlohmann::json::parse(block).dump()));
    EXPECT_EQ(status(o).code(), StatusCode::kInvalidArgument);
  }

  // The CPU bytes: none, zero, or not a number.
  o.kv_transfer_config = transfer(R"("block_size": 2048)");
  EXPECT_EQ(status(o).code(), StatusCode::kRejected);
  EXPECT_EQ(status(o).message(),
            "KV connector OffloadingConnector (--kv-transfer-config) with no "
            "kv_connector_extra_config.cpu_bytes_to_use: the engine's CPUOffloadingSpec raises "
            "once the weights are loaded ('cpu_bytes_to_use must be specified in "
            "kv_connector_extra_config'); set cpu_bytes_to_use to the bytes to offload to, or pass "
            "--kv-offloading-size in GiB");
  o.kv_transfer_config = transfer(R"("cpu_bytes_to_use": "0x10")");
  EXPECT_EQ(status(o).message(),
            "--kv-transfer-config: kv_connector_extra_config.cpu_bytes_to_use must be a number of "
            "bytes, got \"0x10\"");
  o.kv_transfer_config = transfer(R"("cpu_bytes_to_use": "0")");  // truthy; int() gives 0 blocks
  EXPECT_TRUE(status(o).ok()) << status(o).ToString();
  o.kv_transfer_config = transfer(R"("cpu_bytes_to_use": 0)");
  EXPECT_EQ(status(o).message(),
            "KV connector OffloadingConnector (--kv-transfer-config) with "
            "kv_connector_extra_config.cpu_bytes_to_use 0: the engine's CPUOffloadingSpec raises "
            "once the weights are loaded ('cpu_bytes_to_use must be specified in "
            "kv_connector_extra_config'); set cpu_bytes_to_use to the bytes to offload to, or pass "
            "--kv-offloading-size in GiB");
  // --kv-offloading-size adds them to the extra config given, whose block_size stays.
  o.kv_transfer_config = transfer(R"("block_size": 2048)");
  o.kv_offloading_size = "64";
  launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->kv_offloaded_block_size, 2048);
  EXPECT_EQ(errors(o), "");
  o.kv_offloading_size = "0";
  EXPECT_EQ(status(o).message(),
            "KV connector OffloadingConnector (--kv-offloading-size 0 --kv-offloading-backend "
            "native) with no CPU bytes to offload to: the engine's CPUOffloadingSpec raises once "
            "the weights are loaded ('cpu_bytes_to_use must be specified in "
            "kv_connector_extra_config'); give --kv-offloading-size a size above 0");
  // The LMCache backend replaces the extra config: no offloading spec.
  o.kv_offloading_size = "64";
  o.kv_offloading_backend = "lmcache";
  launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->kv_connector, "LMCacheConnectorV1");
  EXPECT_EQ(launch->kv_offloading_spec, "");
  EXPECT_EQ(launch->kv_offloaded_block_size, 0);
  o.kv_offloading_size.reset();
  o.kv_offloading_backend.reset();

  // The spec class: an unregistered name needs its module, which then decides the CPU bytes.
  o.kv_transfer_config = transfer(R"("spec_name": "DiskOffloadingSpec")");
  EXPECT_EQ(status(o).message(),
            "--kv-transfer-config: kv_connector_extra_config.spec_name 'DiskOffloadingSpec' is "
            "not an offloading spec the engine registers ('Unsupported spec type: "
            "DiskOffloadingSpec'); registered: CPUOffloadingSpec, TieringOffloadingSpec; an "
            "external one needs spec_module_path");
  o.kv_transfer_config = transfer(R"("spec_name": ["CPUOffloadingSpec"])");
  EXPECT_EQ(status(o).message(),
            "--kv-transfer-config: kv_connector_extra_config.spec_name must be an offloading spec "
            "class's name, got [\"CPUOffloadingSpec\"]");
  o.kv_transfer_config =
      transfer(R"("spec_name": "DiskOffloadingSpec", "spec_module_path": "disk_offload")");
  launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->kv_offloading_spec, "DiskOffloadingSpec");

  // The tiering spec: a list of secondary tiers, and one group.
  o.kv_transfer_config = transfer(
      R"("spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 1e9, "secondary_tiers": {})");
  EXPECT_EQ(status(o).message(),
            "--kv-transfer-config: kv_connector_extra_config.secondary_tiers must be a list of "
            "tier configurations, got {} (the engine raises 'secondary_tiers must be a list of "
            "tier configurations')");
  o.kv_transfer_config = transfer(
      R"("spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 1e9, "secondary_tiers": [])");
  EXPECT_EQ(errors(o), "");
  LaunchOptions g = GptOss();
  g.kv_transfer_config = o.kv_transfer_config;
  EXPECT_EQ(errors(g),
            "\n  error [kv-offloading-tiering-groups] KV connector OffloadingConnector "
            "(--kv-transfer-config) with spec_name TieringOffloadingSpec: the tiering spec takes "
            "one KV cache group and this plan has 2: the engine asserts it once the weights are "
            "loaded; use CPUOffloadingSpec (drop spec_name)");

  // Qwen3-Next with its recurrent blocks set apart from the 544-token cache block.
  LaunchOptions q;
  q.model = "qwen3-next-80b";
  q.enable_prefix_caching = true;
  q.mamba_block_size = 1088;
  q.kv_offloading_size = "8";
  q.kv_transfer_config = transfer(R"("block_size": 1088)");
  EXPECT_EQ(errors(q),
            "\n  error [kv-offloading-block-size] KV connector OffloadingConnector "
            "(--kv-offloading-size 8 --kv-offloading-backend native) with "
            "kv_connector_extra_config.block_size 1088 needs one block size over the groups, and "
            "group 'model.layers.3.self_attn' has 544-token blocks where group "
            "'model.layers.0.linear_attn' has 1088: the engine's offloading spec asserts it once "
            "the weights are loaded ('all groups must have the same block size'); drop "
            "block_size");
  q.mamba_block_size.reset();
  q.kv_transfer_config = transfer(R"("block_size": 1000)");
  EXPECT_EQ(errors(q),
            "\n  error [kv-offloading-block-size] KV connector OffloadingConnector "
            "(--kv-offloading-size 8 --kv-offloading-backend native) with "
            "kv_connector_extra_config.block_size 1000: the engine offloads whole blocks of 544 "
            "tokens (544-token blocks), and its offloading spec asserts the offloaded block is a "
            "multiple of them once the weights are loaded; set block_size to a multiple of 544");
  q.kv_transfer_config = transfer(R"("block_size": 1632)");
  EXPECT_EQ(errors(q), "");

  // Another connector's extra config is not an offloading spec.
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "kv_both",
                             "kv_connector_extra_config": {"block_size": 7}})";
  launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->kv_offloaded_block_size, 0);
  EXPECT_EQ(errors(o), "");
}

}  // namespace
// NixlConnector moves a recurrent state's conv channels in three reads: its workers assert the DS
// conv state layout for a KV cache with a recurrent group, whatever the model's attention, also
// as one of a MultiConnector's connectors.
TEST(KvConnector, NixlNeedsTheChannelsFirstConvLayout) {
  LaunchOptions o;
  o.model = "qwen3-next-80b";
  o.tensor_parallel_size = 4;
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "kv_both"})";
  auto plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ErrorLines(),
            "\n  error [kv-connector-conv-state-layout] --kv-transfer-config: NixlConnector "
            "transfers a recurrent state's conv channels in three reads and its workers assert "
            "the DS conv state layout ('3-read Mamba conv transfer requires DS conv state layout. "
            "Set VLLM_SSM_CONV_STATE_LAYOUT=DS') once the weights are loaded, where "
            "Qwen3NextForCausalLM keeps recurrent layers and VLLM_SSM_CONV_STATE_LAYOUT is unset "
            "(SD); set VLLM_SSM_CONV_STATE_LAYOUT=DS (--ssm-conv-state-layout DS)");
  o.ssm_conv_state_layout = "DS";
  plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  // Inside a MultiConnector, the same workers.
  o.ssm_conv_state_layout.reset();
  o.kv_transfer_config = R"({"kv_connector": "MultiConnector", "kv_role": "kv_both",
      "kv_connector_extra_config": {"connectors": [
          {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"},
          {"kv_connector": "NixlConnector", "kv_role": "kv_both"}]}})";
  plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(testing_configs::DiagnosticMessage(*plan, "kv-connector-conv-state-layout"),
            "--kv-transfer-config: MultiConnector's NixlConnector transfers a recurrent state's "
            "conv channels in three reads and its workers assert the DS conv state layout "
            "('3-read Mamba conv transfer requires DS conv state layout. Set "
            "VLLM_SSM_CONV_STATE_LAYOUT=DS') once the weights are loaded, where "
            "Qwen3NextForCausalLM keeps recurrent layers and VLLM_SSM_CONV_STATE_LAYOUT is unset "
            "(SD); set VLLM_SSM_CONV_STATE_LAYOUT=DS (--ssm-conv-state-layout DS)");
  // gpt-oss keeps no recurrent layer: the layout is never asked for.
  o = GptOss();
  o.kv_transfer_config = R"({"kv_connector": "NixlConnector", "kv_role": "kv_both"})";
  plan = PlanLaunch(ToLaunchConfig(o).value());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
}

}  // namespace kvtopo
