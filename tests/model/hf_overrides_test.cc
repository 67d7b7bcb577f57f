// --hf-overrides: config values the engine sets on the target's config after loading it (the
// fork's ModelConfig at 28be48fa9: flat values with config.update, objects merged into a nested
// config or set whole), and the keys kvtopo does not apply, each with a warning.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

Result<Plan> PlanWith(const nlohmann::json& config, const std::string& overrides,
                      int64_t max_model_len = 0) {
  LaunchConfig c;
  c.model = "config.json";
  c.kv_cache_memory_bytes = 20 * kGiB;
  c.cache.max_model_len = max_model_len;
  c.hf_overrides = overrides;
  KVTOPO_ASSIGN_OR_RETURN(ModelCacheSpecs specs, BuildModelCacheSpecsFromJson(config, c));
  return PlanLaunchSpecs(specs, c);
}

std::vector<std::string> Messages(const Plan& plan) {
  std::vector<std::string> out;
  for (const Diagnostic& d : plan.diagnostics) out.push_back(d.code + ": " + d.message);
  return out;
}

// Qwen3-8B's shape: 36 layers of 8 x 128, 40,960 positions.
nlohmann::json Qwen3() {
  return nlohmann::json::parse(R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
    "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960,
    "sliding_window": null, "use_sliding_window": false, "torch_dtype": "bfloat16"})");
}

TEST(HfOverrides, FlatValuesAndWholeObjectsAreSetOnTheConfig) {
  // A YaRN rope_scaling (factor 4 over 32,768) lets the model reach 131,072 tokens.
  auto plan = PlanWith(Qwen3(), "", 131072);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->accepted());
  const std::string yarn =
      R"({"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
          "original_max_position_embeddings": 32768}})";
  plan = PlanWith(Qwen3(), yarn, 131072);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(Messages(*plan), (std::vector<std::string>{
                                 "hf-overrides-applied: config.json 'config.json' is read with "
                                 "--hf-overrides rope_scaling, as the engine sets them on its "
                                 "config"}));
  // An object that is not a nested config replaces the value whole: a default rope_scaling over
  // a linear one of factor 2 leaves no factor (merged, the factor would stay).
  nlohmann::json linear = Qwen3();
  linear["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  plan = PlanWith(linear, "", 81920);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted()) << plan->ErrorLines();
  plan = PlanWith(linear, R"({"rope_scaling": {"rope_type": "default"}})", 81920);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->accepted());
  // The architecture (the engine's fix for a Qwen-VL config read as text-only Qwen).
  const nlohmann::json qwen_vl = nlohmann::json::parse(R"({"architectures": ["QWenLMHeadModel"],
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "max_position_embeddings": 8192, "visual": {"image_size": 448}, "torch_dtype": "bfloat16"})");
  LaunchConfig c;
  c.model = "config.json";
  EXPECT_FALSE(BuildModelCacheSpecsFromJson(qwen_vl, c).ok());
  plan = PlanWith(qwen_vl, R"({"architectures": ["QwenVLForConditionalGeneration"]})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.architecture, "QwenVLForConditionalGeneration");
  EXPECT_EQ(plan->groups[0].geometry.page_size_bytes(), 16 * 2 * 32 * 128 * 2);
}

TEST(HfOverrides, NestedConfigsMergeAndUnmodelledKeysWarn) {
  // A LLaVA text_config keeps its other fields: 32 Llama layers with 4,096 positions, then 8,192.
  nlohmann::json llava = nlohmann::json::parse(R"({
    "architectures": ["LlavaForConditionalGeneration"], "torch_dtype": "float16",
    "text_config": {"model_type": "llama", "max_position_embeddings": 4096}})");
  auto plan = PlanWith(llava, R"({"text_config": {"max_position_embeddings": 8192}})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.max_model_len, 8192);
  EXPECT_EQ(plan->groups[0].layers.size(), 32u);
  // Keys whose value the config class derives others from, null values, and a nested config
  // config.json does not hold are not applied; each says so.
  plan = PlanWith(Qwen3(),
                  R"({"sliding_window": 4096, "head_dim": null, "num_hidden_layers": 12,
                      "text_config": {"max_position_embeddings": 8192}})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].layers.size(), 12u);
  EXPECT_EQ(plan->groups[0].geometry.kind(), CacheKind::kFullAttention);
  EXPECT_EQ(
      Messages(*plan),
      (std::vector<std::string>{
          "not-modelled: --hf-overrides: 'head_dim' is null, which the engine sets as None on the "
          "built config while kvtopo would read the config class's default, so it is not "
          "applied; the plan reads config.json 'config.json' without it",
          "not-modelled: --hf-overrides: 'sliding_window' is set by the engine after its config "
          "class has derived the layer windows from config.json's own values, which kvtopo does "
          "not model, so it is not applied; the plan reads config.json 'config.json' without it",
          "not-modelled: --hf-overrides: 'text_config' merges into the nested config the engine "
          "builds, which config.json does not hold as an object, so it is not applied; the plan "
          "reads config.json 'config.json' without it",
          "hf-overrides-applied: config.json 'config.json' is read with --hf-overrides "
          "num_hidden_layers, as the engine sets them on its config"}));
  // The value must be a JSON object, from a launch option or a LaunchConfig alike.
  LaunchOptions o;
  o.model = "config.json";
  o.hf_overrides = "[1]";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--hf-overrides must be a JSON object of config values, got [1]");
  EXPECT_EQ(PlanWith(Qwen3(), "{").status().message(),
            "--hf-overrides is not valid JSON: [json.exception.parse_error.101] parse error at "
            "line 1, column 2: syntax error while parsing object key - unexpected end of input; "
            "expected string literal");
}

// --rope-scaling and --rope-theta, which the fork removed: refused as its parser refuses them,
// naming the --hf-overrides object they made as releases before it set them (after
// --hf-overrides' own keys), which plans as they did.
TEST(HfOverrides, RemovedRopeFlagsAreRefusedNamingTheObjectTheyMade) {
  LaunchOptions o;
  o.model = "config.json";
  o.hf_overrides = R"({"rope_scaling": {"rope_type": "linear", "factor": 2.0},
                       "num_hidden_layers": 12})";
  o.rope_scaling = R"({"rope_type": "yarn", "factor": 4.0,
                       "original_max_position_embeddings": 32768})";
  o.rope_theta = "1e6";
  auto c = ToLaunchConfig(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  const std::string made =
      R"({"num_hidden_layers":12,"rope_scaling":{"factor":4.0,)"
      R"("original_max_position_embeddings":32768,"rope_type":"yarn"},"rope_theta":1000000.0})";
  EXPECT_EQ(c.status().message(),
            "--rope-scaling and --rope-theta are flags of older releases the engine no longer "
            "has: its parser refuses them as unrecognized arguments; give --hf-overrides '" +
                made + "' for --rope-scaling and --rope-theta");
  // The form named plans as the releases did: the YaRN factor reaches 131,072 tokens (the
  // linear factor 2 would stop at 81,920).
  o.rope_scaling.reset();
  o.rope_theta.reset();
  o.hf_overrides = made;
  c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  c->kv_cache_memory_bytes = 20 * kGiB;
  c->cache.max_model_len = 131072;
  auto specs = BuildModelCacheSpecsFromJson(Qwen3(), *c);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  auto plan = PlanLaunchSpecs(*specs, *c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->groups[0].layers.size(), 12u);

  // An empty object set nothing, as the releases' `if self.rope_scaling` skipped it: drop it.
  o = LaunchOptions();
  o.model = "config.json";
  o.rope_scaling = "{}";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--rope-scaling is a flag of older releases the engine no longer has: its parser "
            "refuses it as an unrecognized argument; drop it");
  o.rope_scaling = "[4]";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            R"(--rope-scaling must be a JSON object such as '{"rope_type": "yarn", )"
            R"("factor": 4.0}', got [4])");
  o.rope_scaling.reset();
  for (const char* theta : {"1e6x", "inf", "nan", "", "-7", "0"}) {
    o.rope_theta = theta;
    EXPECT_EQ(
        ToLaunchConfig(o).status().message(),
        std::string("--rope-theta must be a positive number such as 1000000, got '") + theta + "'");
  }
}

// JSON that nests deeper than kMaxJsonDepth (64) is refused where it is parsed, naming where it
// came from: a config.json whose text_config held 300,000 nested arrays was copied until the
// stack ran out. Brackets inside strings do not count.
TEST(HfOverrides, DeepNestingIsRefusedWhereItIsRead) {
  const auto nested = [](int levels) {
    return std::string(static_cast<size_t>(levels), '[') + "1" +
           std::string(static_cast<size_t>(levels), ']');
  };
  const std::string text = R"({"x": )" + nested(63) + "}";  // 64 levels with the object
  EXPECT_TRUE(PlanWith(Qwen3(), text).ok());
  EXPECT_EQ(PlanWith(Qwen3(), R"({"x": )" + nested(64) + "}").status().message(),
            "--hf-overrides nests arrays and objects deeper than 64 levels");
  EXPECT_TRUE(PlanWith(Qwen3(), R"({"x": ")" + std::string(200, '[') + R"("})").ok());
  const std::string dir = ::testing::TempDir() + "/kvtopo_deep_config";
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir + "/config.json");
    out << R"({"architectures": ["LlavaForConditionalGeneration"], "text_config": {"x": )"
        << nested(300000) << "}}";
  }
  LaunchConfig c;
  c.model = dir;
  EXPECT_EQ(BuildModelCacheSpecs(c).status().message(),
            "config.json '" + dir + "/config.json' nests arrays and objects deeper than 64 levels");
}

}  // namespace
}  // namespace kvtopo
