// KV connectors as the engine builds them (--kv-transfer-config, --kv-offloading-size and
// --kv-offloading-backend) and the hybrid KV cache manager they leave on or turn off: the
// connector registry's SupportsHMA classes, MultiConnector's sub-connectors, the checks
// KVTransferConfig makes.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/plan.h"

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
            "--kv-transfer-config: kv_connector_extra_config must be a JSON object, got [1]");
  o.kv_transfer_config.reset();
  o.kv_offloading_size = "-1";
  EXPECT_EQ(message(o), "--kv-offloading-size must be a number of GiB, 0 or more, got '-1'");
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

}  // namespace
}  // namespace kvtopo
