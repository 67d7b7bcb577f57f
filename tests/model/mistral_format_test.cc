// Mistral-format checkpoints (params.json): which file the engine reads (--config-format), and
// the config its converter builds: the renamed fields, the length, the sliding-window list, and
// the architecture it picks (Mistral, Mixtral, Mistral Large 3, Pixtral, Voxtral).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "model/config_reader.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// mistralai/Mistral-Large-3-675B-Instruct-2512's params.json without its vision encoder and
// quantization block (a published copy of the file).
nlohmann::json MistralLarge3Params() {
  return nlohmann::json::parse(R"({
    "dim": 7168, "head_dim": 192, "hidden_dim": 16384, "kv_lora_rank": 512,
    "llama_4_scaling": {"beta": 0.1, "original_max_position_embeddings": 8192},
    "max_position_embeddings": 294912,
    "moe": {"expert_hidden_dim": 4096, "first_k_dense_replace": 3, "num_expert_groups": 1,
            "num_expert_groups_per_tok": 1, "num_experts": 128, "num_experts_per_tok": 4,
            "num_shared_experts": 1, "route_every_n": 1, "routed_scale": 1.0},
    "n_heads": 128, "n_kv_heads": 128, "n_layers": 61, "norm_eps": 1e-06, "q_lora_rank": 1536,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rope_theta": 10000.0,
    "tied_embeddings": false, "v_head_dim": 128, "vocab_size": 131072,
    "yarn": {"alpha": 1, "apply_scale": false, "beta": 32, "factor": 36,
             "original_max_position_embeddings": 8192}})");
}

// Mistral-7B-v0.1's params.json (no length field, a 4,096-token window).
nlohmann::json Mistral7BParams() {
  return nlohmann::json::parse(R"({
    "dim": 4096, "n_layers": 32, "head_dim": 128, "hidden_dim": 14336, "n_heads": 32,
    "n_kv_heads": 8, "norm_eps": 1e-05, "sliding_window": 4096, "vocab_size": 32000})");
}

// A fresh directory under the system's temporary directory.
class Checkpoint {
 public:
  explicit Checkpoint(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() / ("kvtopo_mistral_format_" + name)) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~Checkpoint() { std::filesystem::remove_all(dir_); }
  void Write(const std::string& file, const std::string& text) const {
    std::filesystem::create_directories((dir_ / file).parent_path());
    std::ofstream(dir_ / file) << text;
  }
  std::string path() const { return dir_.string(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

Result<ModelCacheSpecs> Specs(const std::string& model, const std::string& format = "auto") {
  LaunchConfig c;
  c.model = model;
  c.config_format = format;
  return BuildModelCacheSpecs(c);
}

std::string SpecsError(const std::string& model, const std::string& format = "auto") {
  Result<ModelCacheSpecs> specs = Specs(model, format);
  return specs.ok() ? "accepted" : specs.status().message();
}

// Mistral Large 3: MLA with shared experts, so the engine's DeepSeek-V3 model (model type
// deepseek_v3): 61 layers of one 576-wide latent, the YaRN length 8,192 x 36.
// Messages name a converted config by the file it came from: a file named params.json (not one
// whose name merely ends so, which is read as a config.json), a .gguf file.
TEST(MistralFormat, MessagesNameTheFileKind) {
  EXPECT_EQ(internal::ConfigFileLabel("/m/params.json"), "params.json '/m/params.json'");
  EXPECT_EQ(internal::ConfigFileLabel("params.json"), "params.json 'params.json'");
  EXPECT_EQ(internal::ConfigFileLabel("/m/large-params.json"),
            "config.json '/m/large-params.json'");
  EXPECT_EQ(internal::ConfigFileLabel("/m/q.gguf"), "GGUF file '/m/q.gguf'");
  EXPECT_EQ(internal::ConfigFileLabel("profiles/kimi-k3.json"),
            "config.json 'profiles/kimi-k3.json'");
}

TEST(MistralFormat, MistralLarge3IsMlaAtItsYarnLength) {
  Checkpoint ckpt("ml3");
  // Converts `params` and checks the Mistral Large 3 shape: 61 MLA layers of 576.
  auto large3 = [&](const nlohmann::json& params) {
    ckpt.Write("params.json", params.dump());
    Result<ModelCacheSpecs> specs = Specs(ckpt.file("params.json"));
    EXPECT_TRUE(specs.ok()) << specs.status().ToString();
    if (!specs.ok()) return specs;
    EXPECT_EQ(specs->architecture, "MistralLarge3ForCausalLM");
    EXPECT_EQ(specs->layers.size(), 61u);
    EXPECT_EQ(specs->layers.back().name, "model.layers.60.self_attn");
    EXPECT_EQ(specs->layers.back().kind, CacheKind::kMla);
    EXPECT_EQ(specs->layers.back().head_size, 576);
    return specs;
  };
  const std::string needs_scaling =
      "params.json '" + ckpt.file("params.json") +
      "': field 'llama_4_scaling' is missing: the engine's converter asserts it for Mistral Large "
      "3 (MoE with shared experts, or MLA)";
  Result<ModelCacheSpecs> specs = large3(MistralLarge3Params());
  ASSERT_TRUE(specs.ok());
  EXPECT_EQ(specs->max_model_len, 294912);

  LaunchConfig c;
  c.model = ckpt.file("params.json");
  Result<Plan> plan = PlanLaunch(c, 20 * kGiB);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->accepted());
  EXPECT_EQ(plan->pool.num_blocks, 19099);

  // The converter asserts llama_4_scaling for Mistral Large 3.
  nlohmann::json params = MistralLarge3Params();
  params.erase("llama_4_scaling");
  ckpt.Write("params.json", params.dump());
  EXPECT_EQ(SpecsError(ckpt.file("params.json")), needs_scaling);
  // A YaRN key the converter does not know is its assertion too.
  params = MistralLarge3Params();
  params["yarn"]["mscale"] = 1;
  ckpt.Write("params.json", params.dump());
  EXPECT_EQ(SpecsError(ckpt.file("params.json")),
            "params.json '" + ckpt.file("params.json") +
                "': field 'yarn.mscale' is not a YaRN key the engine converts (factor, "
                "original_max_position_embeddings, beta, alpha, apply_scale); its converter "
                "asserts");
  // MLA without a moe: the converter adds one of a single shared expert and no MoE layer, so
  // the model is Mistral Large 3 all the same, llama_4_scaling required.
  params = MistralLarge3Params();
  params.erase("moe");
  EXPECT_TRUE(large3(params).ok());
  params.erase("llama_4_scaling");
  ckpt.Write("params.json", params.dump());
  EXPECT_EQ(SpecsError(ckpt.file("params.json")), needs_scaling);
}

// Mistral's EAGLE heads (method eagle): the engine prefixes the converted architecture with
// Eagle. Mistral Large 3's head (EagleMistralLarge3ForCausalLM) keeps its DeepSeek-V2 layers, MLA
// of 576 like the target's, in the target's group; a dense Mistral head
// (EagleMistralForCausalLM) keeps Mistral layers. The latter's layers look up layer_types at
// their index after the target's, which the converter writes for any sliding_window: the engine
// asserts, and kvtopo refuses.
TEST(MistralFormat, EagleHeadsArePlanned) {
  Checkpoint ckpt("eagle");
  auto plan = [&](const nlohmann::json& target, const nlohmann::json& head) {
    ckpt.Write("target/params.json", target.dump());
    ckpt.Write("head/params.json", head.dump());
    LaunchConfig c;
    c.model = ckpt.file("target/params.json");
    c.speculative = ParseSpeculativeConfig(R"({"method": "eagle", "num_speculative_tokens": 3,
                                                "model": ")" +
                                           ckpt.file("head/params.json") + R"("})")
                        .value();
    return PlanLaunch(c, 20 * kGiB);
  };
  nlohmann::json head = MistralLarge3Params();
  head["n_layers"] = 1;
  Result<Plan> large = plan(MistralLarge3Params(), head);
  ASSERT_TRUE(large.ok()) << large.status().ToString();
  ASSERT_TRUE(large->accepted()) << large->ErrorLines();
  ASSERT_EQ(large->groups.size(), 1u);
  ASSERT_EQ(large->groups[0].layers.size(), 62u);
  EXPECT_EQ(large->groups[0].layers[61], "draft.model.layers.0.self_attn");
  EXPECT_EQ(large->groups[0].layer_specs[61].kind, CacheKind::kMla);
  EXPECT_EQ(large->groups[0].layer_specs[61].head_size, 576);
  // 62 pages of 16 x 576 x 2 B; 19,099 blocks without the head (above).
  EXPECT_EQ(large->pool.bytes_per_block, 1142784);
  EXPECT_EQ(large->pool.num_blocks, 18791);
  EXPECT_EQ(large->capacity.max_tokens, 300656);

  nlohmann::json dense = Mistral7BParams();
  dense.erase("sliding_window");
  head = dense;
  head["n_layers"] = 1;
  Result<Plan> mistral = plan(dense, head);
  ASSERT_TRUE(mistral.ok()) << mistral.status().ToString();
  ASSERT_TRUE(mistral->accepted()) << mistral->ErrorLines();
  ASSERT_EQ(mistral->groups.size(), 1u);
  ASSERT_EQ(mistral->groups[0].layers.size(), 33u);
  EXPECT_EQ(mistral->groups[0].layer_specs[32].kind, CacheKind::kFullAttention);
  EXPECT_EQ(mistral->groups[0].layer_specs[32].num_kv_heads, 8);
  // 33 pages of 16 x 8 x 256 x 2 B.
  EXPECT_EQ(mistral->pool.bytes_per_block, 2162688);
  EXPECT_EQ(mistral->pool.num_blocks, 9929);
  EXPECT_EQ(mistral->capacity.max_tokens, 158864);

  head["sliding_window"] = 4096;
  Result<Plan> windowed = plan(dense, head);
  ASSERT_TRUE(windowed.ok()) << windowed.status().ToString();
  EXPECT_EQ(
      windowed->ErrorLines(),
      "\n  error [speculative-draft-layer-types] --speculative-config method 'eagle': draft '" +
          ckpt.file("head/params.json") +
          "' (EagleMistralForCausalLM) has layer_types (its params.json's sliding_window, "
          "as the converter writes it); the engine names the draft's layers after the "
          "target's 32 and looks each up in layer_types by that index, asserting it is in "
          "range ('effective_layer_idx: 32 is out of bounds for layer_types'), so it stops "
          "as it builds the draft; a draft of this class runs only without sliding_window");
}

// Which file a directory is read from: under auto, params.json only beside a
// consolidated*.safetensors (at any depth); hf and mistral choose.
TEST(MistralFormat, ConfigFormatPicksTheFile) {
  Checkpoint ckpt("dir");
  ckpt.Write("params.json", MistralLarge3Params().dump());
  ckpt.Write("config.json", R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 256,
    "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
    "max_position_embeddings": 4096, "torch_dtype": "bfloat16"})");
  Result<ModelCacheSpecs> specs = Specs(ckpt.path());
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->architecture, "LlamaForCausalLM");  // no consolidated weights: config.json
  specs = Specs(ckpt.path(), "mistral");
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->architecture, "MistralLarge3ForCausalLM");

  ckpt.Write("weights/consolidated-00001-of-00002.safetensors", "");
  specs = Specs(ckpt.path());
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->architecture, "MistralLarge3ForCausalLM");
  EXPECT_EQ(specs->model_name, ckpt.path());
  specs = Specs(ckpt.path(), "hf");
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->architecture, "LlamaForCausalLM");

  Checkpoint params_only("params_only");
  params_only.Write("params.json", MistralLarge3Params().dump());
  EXPECT_EQ(SpecsError(params_only.path()),
            "directory '" + params_only.path() +
                "' holds params.json but neither consolidated*.safetensors nor a config.json: "
                "the engine takes Mistral's format only beside its consolidated weights and "
                "cannot tell the format; pass --config-format mistral");
  EXPECT_EQ(SpecsError(params_only.path(), "mistral"), "accepted");

  Checkpoint bare("bare");
  bare.Write("config.json", R"({"architectures": ["LlamaForCausalLM"]})");
  EXPECT_EQ(SpecsError(bare.path(), "mistral"),
            "--config-format mistral: directory '" + bare.path() + "' holds no params.json");
  EXPECT_EQ(SpecsError(bare.path(), "gguf"),
            "--config-format 'gguf' is not a config format; accepted: auto, hf, mistral");
  LaunchOptions o;
  o.config_format = "yaml";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--config-format 'yaml' is not a config format; accepted: auto, hf, mistral");
  o.config_format = "mistral";
  Result<LaunchConfig> c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->config_format, "mistral");
}

// Mistral: renamed fields, an integer window on every layer, the length from the config.json
// beside params.json or else 128,000, and a K/V head per attention head without n_kv_heads.
TEST(MistralFormat, MistralWindowsAndLength) {
  Checkpoint ckpt("mistral7b");
  ckpt.Write("params.json", Mistral7BParams().dump());
  Result<ModelCacheSpecs> specs = Specs(ckpt.file("params.json"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->architecture, "MistralForCausalLM");
  EXPECT_EQ(specs->max_model_len, 128000);
  ASSERT_EQ(specs->layers.size(), 32u);
  EXPECT_EQ(specs->layers[0].kind, CacheKind::kSlidingWindow);
  EXPECT_EQ(specs->layers[0].sliding_window, 4096);
  EXPECT_EQ(specs->layers[31].kind, CacheKind::kSlidingWindow);
  EXPECT_EQ(specs->layers[0].num_kv_heads, 8);
  EXPECT_EQ(specs->layers[0].head_size, 128);

  ckpt.Write("config.json", R"({"architectures": ["MistralForCausalLM"],
    "max_position_embeddings": 32768, "sliding_window": null, "torch_dtype": "bfloat16"})");
  specs = Specs(ckpt.file("params.json"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->max_model_len, 32768);
  EXPECT_EQ(specs->layers[0].sliding_window, 4096);  // params.json's window wins

  // Without a window or n_kv_heads: full attention with 32 K/V heads of 128.
  nlohmann::json params = Mistral7BParams();
  params.erase("sliding_window");
  params.erase("n_kv_heads");
  params["max_seq_len"] = 16384;
  ckpt.Write("params.json", params.dump());
  specs = Specs(ckpt.file("params.json"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->max_model_len, 16384);
  EXPECT_EQ(specs->layers[0].kind, CacheKind::kFullAttention);
  EXPECT_EQ(specs->layers[0].num_kv_heads, 32);
}

// A window list is tiled over the layers (null: a full layer); its windows must be one size and
// tile the layers.
TEST(MistralFormat, SlidingWindowList) {
  Checkpoint ckpt("list");
  nlohmann::json params = Mistral7BParams();
  params["n_layers"] = 8;
  params["sliding_window"] = nlohmann::json::parse("[null, 1024, 1024, 1024]");
  ckpt.Write("params.json", params.dump());
  Result<ModelCacheSpecs> specs = Specs(ckpt.file("params.json"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->layers.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(specs->layers[i].kind,
              i % 4 == 0 ? CacheKind::kFullAttention : CacheKind::kSlidingWindow)
        << i;
  }
  EXPECT_EQ(specs->layers[1].sliding_window, 1024);

  // What converting `p` is refused with, after the "params.json '<path>': " of every message
  // ("accepted" when it converts).
  auto refusal = [&](const nlohmann::json& p) {
    ckpt.Write("params.json", p.dump());
    const std::string prefix = "params.json '" + ckpt.file("params.json") + "': ";
    const std::string error = SpecsError(ckpt.file("params.json"));
    return error.starts_with(prefix) ? error.substr(prefix.size()) : error;
  };
  params["sliding_window"] = nlohmann::json::parse("[null, 1024, 2048, 1024]");
  EXPECT_EQ(refusal(params),
            "field 'sliding_window' lists windows of 1024 and 2048 tokens: the engine's converter "
            "asserts one window size");
  params["sliding_window"] = nlohmann::json::parse("[null, 1024, 1024]");
  EXPECT_EQ(refusal(params),
            "field 'sliding_window' lists 3 windows, which do not tile the 8 layers (n_layers): "
            "the engine repeats the list 2 times, and its attention asserts a layer type for "
            "every layer");
  params["sliding_window"] = nlohmann::json::parse("[null, 0, null, null]");
  EXPECT_EQ(refusal(params),
            "field 'sliding_window' lists 0: each entry must be null (a full layer) or a window "
            "in [1, 2147483647]");
  // An integer window makes every layer slide; beside a stated layer_types the converter
  // raises, and a 0 window is none.
  params = Mistral7BParams();
  params["layer_types"] = nlohmann::json::array({"full_attention"});
  EXPECT_EQ(refusal(params),
            "field 'sliding_window' is 4096 and layer_types is stated: the engine's converter "
            "writes layer_types for an integer window only when the config has none, and raises "
            "otherwise ('Unsupported sliding_window type: 4096'); drop one of them");
  params["layer_types"] = nullptr;
  EXPECT_EQ(refusal(params), "accepted");
  params["sliding_window"] = 0;
  ckpt.Write("params.json", params.dump());
  specs = Specs(ckpt.file("params.json"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->layers[0].kind, CacheKind::kFullAttention);
  for (const char* bad : {"[]", "4096.0", "\"4096\""}) {
    params["sliding_window"] = nlohmann::json::parse(bad);
    EXPECT_EQ(refusal(params), std::string("field 'sliding_window' is ") + bad +
                                   ": the engine converts an integer or a non-empty list of "
                                   "windows (null for a full layer)");
  }
  // Mistral's own quantization: FP8 E4M3 weights or compressed-tensors; the converter refuses
  // any other.
  params = Mistral7BParams();
  params["quantization"] = {{"qformat_weight", "int4"}};
  EXPECT_EQ(refusal(params),
            "field 'quantization' is {\"qformat_weight\":\"int4\"}: the engine converts FP8 "
            "(qformat_weight fp8_e4m3) or compressed-tensors quantization only");
  params["quantization"] = {{"qformat_weight", "fp8_e4m3"}, {"qscheme_act", "TENSOR"}};
  EXPECT_EQ(refusal(params), "accepted");
  params.erase("quantization");
  params.erase("sliding_window");
  params.erase("n_layers");
  EXPECT_EQ(refusal(params), "field 'n_layers' is missing");
}

// MoE without shared experts is Mixtral; a vision encoder wraps the text model as Pixtral; an
// audio encoder as Voxtral, whose causal (realtime) encoder is not planned.
// The expert count the engine reads from the converted config: Mistral Large 3's moe.num_experts
// renamed n_routed_experts; a Mixtral's nested moe section is not read, so only the config.json
// beside params.json can state its experts; a Mistral has none.
TEST(MistralFormat, ExpertCountForExpertParallelism) {
  Checkpoint ckpt("ep");
  auto errors = [&](const nlohmann::json& params) {
    ckpt.Write("params.json", params.dump());
    LaunchConfig c;
    c.model = ckpt.file("params.json");
    c.enable_expert_parallel = true;
    Result<Plan> plan = PlanLaunch(c, 20 * kGiB);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    return plan.ok() ? plan->ErrorLines() : "not planned";
  };
  EXPECT_EQ(errors(MistralLarge3Params()), "");
  nlohmann::json mla = MistralLarge3Params();
  mla.erase("moe");  // MLA without MoE: the converter adds one shared expert
  EXPECT_EQ(errors(mla), "");
  nlohmann::json mixtral = Mistral7BParams();
  mixtral["moe"] = {{"num_experts", 8}, {"num_experts_per_tok", 2}};
  auto refused = [&](const std::string& architecture) {
    return fmt::format(
        "\n  error [expert-parallel-no-experts] --enable-expert-parallel with '{}' ({}), whose "
        "config states no experts (num_experts, moe_num_experts, n_routed_experts, "
        "num_local_experts, block_configs): the engine refuses it ('Number of experts in the "
        "model must be greater than 0 when expert parallelism is enabled'); drop "
        "--enable-expert-parallel",
        ckpt.file("params.json"), architecture);
  };
  EXPECT_EQ(errors(mixtral), refused("MixtralForCausalLM"));
  EXPECT_EQ(errors(Mistral7BParams()), refused("MistralForCausalLM"));
  ckpt.Write("config.json", R"({"num_local_experts": 8})");
  EXPECT_EQ(errors(mixtral), "");
}

TEST(MistralFormat, MixtralPixtralAndVoxtral) {
  Checkpoint ckpt("mm");
  nlohmann::json params = Mistral7BParams();
  params["moe"] = {{"num_experts", 8}, {"num_experts_per_tok", 2}};
  ckpt.Write("params.json", params.dump());
  Result<ModelCacheSpecs> specs = Specs(ckpt.file("params.json"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->architecture, "MixtralForCausalLM");
  EXPECT_EQ(specs->layers[0].kind, CacheKind::kSlidingWindow);

  params = Mistral7BParams();
  params.erase("sliding_window");
  params["vision_encoder"] = {{"hidden_size", 1024}, {"num_hidden_layers", 24}};
  ckpt.Write("params.json", params.dump());
  specs = Specs(ckpt.file("params.json"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->architecture, "PixtralForConditionalGeneration");
  ASSERT_EQ(specs->layers.size(), 32u);
  EXPECT_EQ(specs->layers[0].kind, CacheKind::kFullAttention);
  EXPECT_EQ(specs->layers[0].num_kv_heads, 8);

  params = Mistral7BParams();
  params["multimodal"] = nlohmann::json::parse(R"({"whisper_model_args": {
    "encoder_args": {"dim": 1280, "n_layers": 32, "head_dim": 64, "n_heads": 32,
                     "causal": false}, "downsample_args": {"downsample_factor": 4}}})");
  ckpt.Write("params.json", params.dump());
  specs = Specs(ckpt.file("params.json"));
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->architecture, "VoxtralForConditionalGeneration");
  EXPECT_EQ(specs->layers.size(), 32u);
  params["multimodal"]["whisper_model_args"]["encoder_args"]["causal"] = true;
  ckpt.Write("params.json", params.dump());
  EXPECT_EQ(SpecsError(ckpt.file("params.json")),
            "params.json '" + ckpt.file("params.json") +
                "': field 'multimodal.whisper_model_args.encoder_args.causal' is true: the "
                "engine serves it as VoxtralRealtimeGeneration, whose causal audio encoder keeps "
                "a paged sliding-window cache pooled over downsample_factor blocks; kvtopo does "
                "not plan it");
}

}  // namespace
}  // namespace kvtopo
