// The engine's Transformers modeling backend: SmolLM3 and Emu3 (which its registry builds that
// way), --model-impl transformers, and the fallback for a config whose auto_map names custom
// code; the registry's answers for architectures it does not serve in-tree.
#include <fmt/format.h>
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
#include "model/architectures.h"
#include "model/test_configs.h"

namespace kvtopo {
namespace {

using testing_configs::Llama31_8B;
using testing_configs::PlanWith;

constexpr int64_t kGiB = int64_t{1} << 30;

// HuggingFaceTB/SmolLM3-3B's config.json (the fields the cache depends on, as published).
nlohmann::json SmolLm3() {
  return nlohmann::json::parse(R"({
    "architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3", "hidden_size": 2048,
    "intermediate_size": 11008, "num_hidden_layers": 36, "num_attention_heads": 16,
    "num_key_value_heads": 4, "max_position_embeddings": 65536, "no_rope_layer_interval": 4,
    "sliding_window": null, "use_sliding_window": false, "rope_theta": 5000000.0,
    "torch_dtype": "bfloat16", "vocab_size": 128256})");
}

// A config the engine's registry does not hold, with custom code (auto_map).
nlohmann::json CustomModel() {
  nlohmann::json c = Llama31_8B();
  c["architectures"] = {"AcmeForCausalLM"};
  c["model_type"] = "acme";
  c["auto_map"] = {{"AutoConfig", "configuration_acme.AcmeConfig"},
                   {"AutoModelForCausalLM", "modeling_acme.AcmeForCausalLM"}};
  return c;
}

LaunchConfig Launch(int64_t memory, const std::string& model_impl = "auto",
                    bool trust_remote_code = false) {
  LaunchConfig c;
  c.kv_cache_memory_bytes = memory;
  c.cache.max_model_len = 65536;
  c.model_impl = model_impl;
  c.trust_remote_code = trust_remote_code;
  return c;
}

std::string Error(const nlohmann::json& config, const LaunchConfig& c = Launch(16 * kGiB)) {
  Result<Plan> plan = PlanWith(config, c);
  return plan.ok() ? "(accepted)" : std::string(plan.status().message());
}

// The window of each of `plan`'s target layers, in layer order.
std::vector<int64_t> Windows(const Plan& plan) {
  std::vector<int64_t> out;
  for (const LayerSpec& l : plan.model.layers) out.push_back(l.sliding_window);
  return out;
}

std::string WarningOf(const Plan& plan, const std::string& code) {
  for (const Diagnostic& d : plan.diagnostics) {
    if (d.code == code) return d.message;
  }
  return "";
}

// SmolLM3-3B: 36 layers of 4 K/V heads of 2048 / 16 = 128, all full. A page is 16 tokens x 2
// x 4 x 128 x 2 B = 32 KiB; 16 GiB / (36 x 32 KiB) = 14,563 blocks, 233,008 tokens. At TP4 one
// K/V head a rank: 58,254 blocks, 932,064 tokens.
TEST(TransformersBackend, SmolLm3AsPublished) {
  auto m = internal::DescribeModel(SmolLm3(), "smollm3.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->architecture, "SmolLM3ForCausalLM");
  EXPECT_EQ(m->transformers_backend, "TransformersForCausalLM");
  EXPECT_EQ(m->max_model_len, 65536);
  auto plan = PlanWith(SmolLm3(), Launch(16 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_TRUE(plan->diagnostics.empty()) << plan->diagnostics.front().message;
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layers.size(), 36u);
  EXPECT_EQ(plan->groups[0].layer_page_bytes[0], 32768);
  EXPECT_EQ(plan->pool.num_blocks, 14563);
  EXPECT_EQ(plan->capacity.max_tokens, 233008);
  LaunchConfig tp4 = Launch(16 * kGiB);
  tp4.parallel.tensor_parallel_size = 4;
  plan = PlanWith(SmolLm3(), tp4);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->groups[0].layer_page_bytes[0], 8192);
  EXPECT_EQ(plan->pool.num_blocks, 58254);
  EXPECT_EQ(plan->capacity.max_tokens, 932064);
}

// Without layer_types SmolLM3Config derives them: with use_sliding_window and a window, the NoPE
// layers (no_rope_layers 0: every 4th, 3, 7, ..., 35) slide. The class's defaults fill what a
// config omits.
TEST(TransformersBackend, SmolLm3LayerKindsAsItsConfigClassDerivesThem) {
  nlohmann::json c = SmolLm3();
  c["use_sliding_window"] = true;
  c["sliding_window"] = 4096;
  auto plan = PlanWith(c, Launch(16 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  std::vector<int64_t> expected(36, 0);
  for (int i = 3; i < 36; i += 4) expected[i] = 4096;
  EXPECT_EQ(Windows(*plan), expected);
  // A stated no_rope_layers decides instead; NoPE layers 0 and 1 only.
  c["no_rope_layers"] = std::vector<int>(36, 1);
  c["no_rope_layers"][0] = 0;
  c["no_rope_layers"][1] = 0;
  plan = PlanWith(c, Launch(16 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  expected.assign(36, 0);
  expected[0] = expected[1] = 4096;
  EXPECT_EQ(Windows(*plan), expected);
  c["no_rope_layers"] = {1, 1, 0};
  EXPECT_EQ(Error(c),
            "config.json 'config.json': field 'no_rope_layers' has 3 entries for 36 layers: "
            "SmolLM3Config indexes it by layer and fails past its end");
  c.erase("no_rope_layers");
  c["layer_types"] = {"full_attention"};
  EXPECT_EQ(Error(c),
            "config.json 'config.json': field 'layer_types' has 1 entries but num_hidden_layers "
            "is 36");

  // Only the architecture: 36 layers of 16 heads over 2048, 4 K/V heads, 32768 positions; a null
  // K/V count is one per head.
  nlohmann::json bare = {{"architectures", {"SmolLM3ForCausalLM"}},
                         {"model_type", "smollm3"},
                         {"torch_dtype", "bfloat16"}};
  auto m = internal::DescribeModel(bare, "bare.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->layers.size(), 36u);
  EXPECT_EQ(m->layers[0].num_kv_heads_total, 4);
  EXPECT_EQ(m->layers[0].head_size, 128);
  EXPECT_EQ(m->max_model_len, 32768);
  EXPECT_EQ(m->hidden_size, 2048);
  EXPECT_EQ(m->num_hidden_layers, 36);
  bare["num_key_value_heads"] = nullptr;
  m = internal::DescribeModel(bare, "bare.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->layers[0].num_kv_heads_total, 16);
}

// Emu3: the multimodal backend class over text_config, an Emu3TextConfig whose defaults fill what
// it omits (32 layers of 32 heads over 4096, 8 K/V heads, 9216 positions).
TEST(TransformersBackend, Emu3ThroughItsTextConfigClass) {
  const nlohmann::json emu3 = {{"architectures", {"Emu3ForConditionalGeneration"}},
                               {"model_type", "emu3"},
                               {"torch_dtype", "bfloat16"},
                               {"text_config", {{"model_type", "emu3_text_model"}}}};
  auto m = internal::DescribeModel(emu3, "emu3.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->transformers_backend, "TransformersMultiModalForCausalLM");
  ASSERT_EQ(m->layers.size(), 32u);
  EXPECT_EQ(m->layers[31].num_kv_heads_total, 8);
  EXPECT_EQ(m->layers[31].head_size, 128);
  EXPECT_EQ(m->layers[31].sliding_window, 0);
  EXPECT_EQ(m->max_model_len, 9216);
  EXPECT_EQ(m->dtype, ElementType::kBfloat16);
  EXPECT_TRUE(internal::IsMultimodalTarget(m->architecture));
  nlohmann::json null_heads = emu3;
  null_heads["text_config"]["num_key_value_heads"] = nullptr;
  EXPECT_EQ(Error(null_heads),
            "config.json 'config.json': field 'text_config.num_key_value_heads' is null: the "
            "engine takes the K/V heads from it and does not build with none; state the count");
}

// --model-impl transformers: a model kvtopo reads natively keeps its figures when its layers
// are of one attention shape, with a warning for what kvtopo cannot check; the stated
// layer_types decide the windows (Mixtral's own layers ignore them); other layouts are refused.
TEST(TransformersBackend, ModelImplTransformers) {
  auto native = PlanWith(Llama31_8B(), Launch(16 * kGiB));
  auto backend = PlanWith(Llama31_8B(), Launch(16 * kGiB, "transformers"));
  ASSERT_TRUE(native.ok() && backend.ok());
  ASSERT_TRUE(backend->accepted()) << backend->ErrorLines();
  EXPECT_EQ(backend->pool.num_blocks, native->pool.num_blocks);
  EXPECT_EQ(backend->capacity.max_tokens, 131072);
  EXPECT_EQ(WarningOf(*backend, "transformers-backend"),
            "config.json 'config.json' (LlamaForCausalLM) is built by the engine's Transformers "
            "backend as TransformersForCausalLM (--model-impl transformers): kvtopo plans the "
            "cache that backend gives it, and does not check that the class supports the "
            "backend (else the engine raises 'The Transformers implementation of ... is not "
            "compatible with vLLM'), nor that it declares the tensor- or pipeline-parallel plan "
            "a launch with -tp or -pp above 1 needs");

  nlohmann::json mixtral = Llama31_8B();
  mixtral["architectures"] = {"MixtralForCausalLM"};
  mixtral["model_type"] = "mixtral";
  mixtral["num_local_experts"] = 8;
  mixtral["sliding_window"] = 4096;
  for (int i = 0; i < 32; ++i) {
    mixtral["layer_types"].push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
  }
  auto plan = PlanWith(mixtral, Launch(16 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(Windows(*plan), std::vector<int64_t>(32, 0));
  EXPECT_NE(WarningOf(*plan, "config-window-unused"), "");
  plan = PlanWith(mixtral, Launch(16 * kGiB, "transformers"));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  std::vector<int64_t> expected;
  for (int i = 0; i < 32; ++i) expected.push_back(i % 2 == 0 ? 4096 : 0);
  EXPECT_EQ(Windows(*plan), expected);
  EXPECT_EQ(WarningOf(*plan, "config-window-unused"), "");
  EXPECT_EQ(plan->model.architecture, "TransformersMoEForCausalLM");
  mixtral["layer_types"] = {"sliding_attention", "full_attention"};
  EXPECT_EQ(Error(mixtral, Launch(16 * kGiB, "transformers")),
            "config.json 'config.json': field 'layer_types' has 2 entries but num_hidden_layers "
            "is 32");

  // Over custom code (a config class kvtopo does not know, so no class default fills head_dim),
  // the head size as the engine's get_head_size reads it: head_dim, else hidden_size_per_head
  // (PLaMo 2.1), else hidden_size / num_attention_heads; a null head_dim counts as absent, and
  // no K/V head count means every attention head has its own.
  auto head = [](const nlohmann::json& config) -> std::pair<int64_t, int64_t> {
    auto p = PlanWith(config, Launch(64 * kGiB, "auto", /*trust_remote_code=*/true));
    if (!p.ok() || p->model.layers.empty()) return {-1, -1};
    return {p->model.layers[0].head_size, p->model.layers[0].num_kv_heads};
  };
  nlohmann::json custom = CustomModel();  // Llama 3.1 8B's shape: 4096 / 32 = 128, 8 K/V heads
  custom["head_dim"] = nullptr;
  custom["hidden_size_per_head"] = 96;
  EXPECT_EQ(head(custom), (std::pair<int64_t, int64_t>{96, 8}));
  custom["head_dim"] = 80;
  EXPECT_EQ(head(custom), (std::pair<int64_t, int64_t>{80, 8}));
  custom.erase("head_dim");
  custom.erase("hidden_size_per_head");
  custom.erase("num_key_value_heads");
  EXPECT_EQ(head(custom), (std::pair<int64_t, int64_t>{128, 32}));

  LaunchConfig deepseek = Launch(16 * kGiB, "transformers");
  deepseek.model = "deepseek-v3.2";
  deepseek.parallel.tensor_parallel_size = 8;
  Result<ModelCacheSpecs> specs = BuildModelCacheSpecs(deepseek);
  ASSERT_FALSE(specs.ok());
  EXPECT_EQ(specs.status().message(),
            "config.json 'profiles/deepseek-v3.2.json': --model-impl transformers: the "
            "Transformers backend gives every layer one attention shape, and "
            "DeepseekV32ForCausalLM (its layer model.layers.0.self_attn is not plain K/V "
            "attention); kvtopo does not plan it on that backend");
}

// A config none of whose architectures the registry holds: under auto the engine falls back to
// the Transformers backend over the custom code its auto_map names (with --trust-remote-code),
// else it refuses, naming a version or plugin for the architectures it once served.
TEST(TransformersBackend, RegistryFallbackAndRefusals) {
  EXPECT_EQ(Error(CustomModel()),
            "config.json 'config.json': AcmeForCausalLM's class is custom code (auto_map "
            "AutoModelForCausalLM: modeling_acme.AcmeForCausalLM), which the engine loads for "
            "its Transformers backend only with --trust-remote-code");
  auto plan = PlanWith(CustomModel(), Launch(16 * kGiB, "auto", true));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  EXPECT_EQ(plan->capacity.max_tokens, 131072);
  EXPECT_EQ(plan->model.architecture, "TransformersForCausalLM");
  EXPECT_EQ(WarningOf(*plan, "transformers-backend"),
            "config.json 'config.json' (AcmeForCausalLM) is built by the engine's Transformers "
            "backend as TransformersForCausalLM: kvtopo plans the cache that backend gives it, "
            "and does not check the custom code of auto_map AutoModelForCausalLM: "
            "modeling_acme.AcmeForCausalLM, nor the config class's own defaults, where the "
            "config leaves values to them (kvtopo took the engine's fallbacks: head size = "
            "hidden_size / num_attention_heads = 128 (no head_dim stated)), nor that the class "
            "supports the backend (else the engine raises 'The Transformers implementation of "
            "... is not compatible with vLLM'), nor that it declares the tensor- or "
            "pipeline-parallel plan a launch with -tp or -pp above 1 needs");
  // --model-impl vllm leaves no fallback.
  EXPECT_NE(Error(CustomModel(), Launch(16 * kGiB, "vllm", true))
                .find("architecture 'AcmeForCausalLM' is not supported (--model-impl vllm leaves "
                      "the engine no Transformers fallback); kvtopo plans "),
            std::string::npos);
  // Without auto_map kvtopo cannot tell whether Transformers has the class.
  nlohmann::json plain = CustomModel();
  plain.erase("auto_map");
  const std::string count = std::to_string(ListArchitectures().size());
  EXPECT_EQ(Error(plain),
            "config.json 'config.json': architecture 'AcmeForCausalLM' is not supported (if "
            "Transformers itself has the class, the engine may build it with its Transformers "
            "backend: pass --model-impl transformers to plan that); kvtopo plans " +
                count + " architectures, which `kvtopo profiles --architectures` lists");
  // A name one edit (or a case) away from one kvtopo plans is named.
  nlohmann::json typo = plain;
  typo["architectures"] = {"Qwen3ForCasualLM"};
  EXPECT_EQ(Error(typo),
            "config.json 'config.json': architecture 'Qwen3ForCasualLM' is not supported (if "
            "Transformers itself has the class, the engine may build it with its Transformers "
            "backend: pass --model-impl transformers to plan that); did you mean "
            "'Qwen3ForCausalLM'? kvtopo plans " +
                count + " architectures, which `kvtopo profiles --architectures` lists");
  typo["architectures"] = {"llamaforcausallm"};
  EXPECT_NE(Error(typo).find("did you mean 'LlamaForCausalLM'?"), std::string::npos);
  // The first architecture the registry holds is the one the engine builds.
  plain["architectures"] = {"AcmeForCausalLM", "LlamaForCausalLM"};
  plain["model_type"] = "llama";
  plan = PlanWith(plain, Launch(16 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.architecture, "LlamaForCausalLM");
  // Custom MLA code: the engine caches it as MLA, which the backend's attention does not compute.
  nlohmann::json mla = CustomModel();
  mla["model_type"] = "deepseek_v3";
  mla["kv_lora_rank"] = 512;
  EXPECT_EQ(Error(mla, Launch(16 * kGiB, "auto", true)),
            "config.json 'config.json': field 'kv_lora_rank' is set under model type "
            "deepseek_v3: the engine caches such a model as MLA latents "
            "(ModelConfig.is_deepseek_mla), which the Transformers backend's attention does not "
            "compute; kvtopo does not plan it on that backend");
  // A nested text config makes the multimodal class; its layer_types stay the text config's.
  nlohmann::json nested = {{"architectures", {"AcmeForConditionalGeneration"}},
                           {"model_type", "acme_vl"},
                           {"auto_map", {{"AutoModel", "modeling_acme.AcmeModel"}}},
                           {"torch_dtype", "bfloat16"},
                           {"text_config", Llama31_8B()}};
  nested["text_config"].erase("torch_dtype");
  auto m = internal::DescribeModel(nested, "nested.json", {.trust_remote_code = true});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->architecture, "TransformersMultiModalForCausalLM");
  EXPECT_EQ(m->dtype, ElementType::kBfloat16);
  EXPECT_TRUE(internal::IsMultimodalTarget(m->architecture));
  // The backend's pooling classes and the registry's retired and plugin architectures.
  nlohmann::json named = Llama31_8B();
  named["architectures"] = {"TransformersEmbeddingModel"};
  EXPECT_EQ(Error(named),
            "config.json 'config.json': TransformersEmbeddingModel is the Transformers backend's "
            "pooling class (embeddings or classification), which kvtopo does not plan");
  named["architectures"] = {"MllamaForConditionalGeneration"};
  EXPECT_EQ(Error(named),
            "config.json 'config.json': architecture 'MllamaForConditionalGeneration' was "
            "supported by the engine until v0.10.2 and is not anymore ('Model architecture "
            "MllamaForConditionalGeneration was supported in vLLM until v0.10.2, and is not "
            "supported anymore'); kvtopo plans the engine of today");
  named["architectures"] = {"Florence2ForConditionalGeneration"};
  EXPECT_EQ(Error(named),
            "config.json 'config.json': architecture 'Florence2ForConditionalGeneration' is "
            "served only by the engine's plugin at https://github.com/vllm-project/bart-plugin "
            "('not supported in-tree anymore'); kvtopo does not plan plugins' models");
  // The engine's pooling models: registered ones, names its default runner takes as pooling by
  // their suffix, and base-model names it builds as a generator unless a Sentence Transformers
  // pooling config says otherwise.
  named["architectures"] = {"Gemma3TextModel"};
  EXPECT_EQ(Error(named),
            "config.json 'config.json': architecture 'Gemma3TextModel' is one of the engine's "
            "pooling models (its registry's embedding, late-interaction, reward and "
            "classification classes): the engine serves it with the pooling runner, returning "
            "embeddings or scores rather than generating tokens; kvtopo plans generation "
            "launches");
  named["architectures"] = {"Qwen3ForSequenceClassification"};
  EXPECT_EQ(Error(named),
            "config.json 'config.json': architecture 'Qwen3ForSequenceClassification' ends in "
            "'ForSequenceClassification', for which the engine's default runner is pooling "
            "(convert classify): it serves embeddings or scores rather than generating tokens; "
            "kvtopo plans generation launches");
  // A pooling class under --runner generate is the engine's refusal.
  named["architectures"] = {"Gemma3TextModel"};
  LaunchConfig generate = Launch(16 * kGiB);
  generate.runner = "generate";
  EXPECT_EQ(PlanWith(named, generate).status().message(),
            "config.json 'config.json': architecture 'Gemma3TextModel' is one of the engine's "
            "pooling models (its registry's embedding, late-interaction, reward and "
            "classification classes), which do not generate: with --runner generate the engine "
            "refuses it ('This model does not support `--runner generate`.')");
  // The pooling entries built as a generation class generate unless a Sentence Transformers
  // config says otherwise: MistralModel is LlamaForCausalLM over a Mistral config.
  named["architectures"] = {"MistralModel"};
  plan = PlanWith(named, Launch(16 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->model.architecture, "MistralModel");
  EXPECT_EQ(plan->capacity.max_tokens, 131072);
  // A generation suffix keeps the general answer.
  named["architectures"] = {"AcmeLMHeadModel"};
  EXPECT_NE(Error(named).find("architecture 'AcmeLMHeadModel' is not supported"),
            std::string::npos);
  // The backend's class named outright is built as named, here without a warning of custom code.
  named["architectures"] = {"TransformersForCausalLM"};
  plan = PlanWith(named, Launch(16 * kGiB));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->capacity.max_tokens, 131072);
  EXPECT_NE(WarningOf(*plan, "transformers-backend")
                .find("does not check that Transformers (or the config's custom code) builds a "
                      "model for its model type 'llama'"),
            std::string::npos);
}

// An EAGLE-3 head beside a model the backend builds: state k is the output of its layer k - 1,
// so ids 1 to num_hidden_layers, each once; the defaults (2, 18, 33) fit SmolLM3's 36 layers.
TEST(TransformersBackend, Eagle3StatesFromTheBackend) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "kvtopo_transformers_backend_eagle3_head.json")
          .string();
  auto errors = [&](const nlohmann::json& head) {
    std::ofstream(path) << head.dump();
    LaunchConfig c = Launch(20 * kGiB);
    c.speculative =
        ParseSpeculativeConfig(R"({"method": "eagle3", "num_speculative_tokens": 3, "model": ")" +
                               path + R"("})")
            .value();
    auto plan = PlanWith(SmolLm3(), c);
    std::filesystem::remove(path);
    return plan.ok() ? plan->ErrorLines() : "status: " + std::string(plan.status().message());
  };
  nlohmann::json head = nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 2048,
    "num_hidden_layers": 1, "num_attention_heads": 16, "num_key_value_heads": 4,
    "max_position_embeddings": 65536, "torch_dtype": "bfloat16"})");
  EXPECT_EQ(errors(head), "");
  head["eagle_aux_hidden_state_layer_ids"] = {1, 18, 36};
  EXPECT_EQ(errors(head), "");
  head["eagle_aux_hidden_state_layer_ids"] = {0, 18, 33};
  EXPECT_EQ(errors(head),
            "\n  error [speculative-aux-layer-ids] --speculative-config: draft '" + path +
                "' names target layers [0, 18, 33] (eagle_aux_hidden_state_layer_ids in '" + path +
                "') for the 3 hidden states its fc layer combines, and the SmolLM3ForCausalLM "
                "target (the engine's Transformers backend, 36 layers) records state k as the "
                "output of its layer k - 1: id 0 names no layer (a KeyError after the weights "
                "load); name 3 distinct ids from 1 to 36");
  head["eagle_aux_hidden_state_layer_ids"] = {2, 2, 33};
  EXPECT_NE(errors(head).find("records state k as the output of its layer k - 1, 2 distinct of "
                              "them; name 3 distinct ids from 1 to 36"),
            std::string::npos);
}

// --model-impl and --trust-remote-code are planning options: checked, and carried to the launch.
TEST(TransformersBackend, LaunchOptions) {
  LaunchOptions o;
  o.model = "kimi-k2.6";
  o.model_impl = "transformers";
  o.trust_remote_code = true;
  auto c = ToLaunchConfig(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model_impl, "transformers");
  EXPECT_TRUE(c->trust_remote_code);
  o.model_impl = "hf";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--model-impl 'hf' is not a model implementation; accepted: auto, vllm, "
            "transformers");
  o.model_impl = "terratorch";
  EXPECT_EQ(ToLaunchConfig(o).status().message(),
            "--model-impl terratorch builds the engine's Terratorch models, which keep no KV "
            "cache; kvtopo plans auto, vllm and transformers");
}

}  // namespace
}  // namespace kvtopo
