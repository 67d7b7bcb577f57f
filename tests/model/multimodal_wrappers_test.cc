// Multimodal wrappers whose language model the engine builds from a nested config (or the root):
// the model the wrapper forces, the one text_config names, or its model type's causal-LM class;
// the vision and audio towers keep no KV cache.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvtopo/dtype.h"
#include "kvtopo/launch.h"
#include "kvtopo/model.h"

namespace kvtopo {
namespace {

Result<ModelCacheSpecs> Specs(const nlohmann::json& config) {
  LaunchConfig c;
  c.model = "config.json";
  return BuildModelCacheSpecsFromJson(config, c);
}

std::string SpecsError(const nlohmann::json& config) {
  Result<ModelCacheSpecs> specs = Specs(config);
  return specs.ok() ? "accepted" : specs.status().message();
}

// A Qwen2-shaped text model: 28 layers, 28 heads of 128, 4 K/V heads, 32,768 positions.
nlohmann::json Qwen2Text() {
  return nlohmann::json::parse(R"({"model_type": "qwen2", "hidden_size": 3584,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
    "max_position_embeddings": 32768, "torch_dtype": "bfloat16"})");
}

nlohmann::json Wrapper(const std::string& architecture, const std::string& key,
                       const nlohmann::json& text) {
  return {{"architectures", {architecture}}, {key, text}, {"torch_dtype", "bfloat16"}};
}

// Expects `config` to plan `layers` full-attention layers of `kv_heads` x `head_size` at
// `max_model_len` tokens.
void ExpectFullLayers(const nlohmann::json& config, size_t layers, int64_t kv_heads,
                      int64_t head_size, int64_t max_model_len) {
  Result<ModelCacheSpecs> specs = Specs(config);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->layers.size(), layers);
  EXPECT_EQ(specs->layers.back().kind, CacheKind::kFullAttention);
  EXPECT_EQ(specs->layers.back().num_kv_heads, kv_heads);
  EXPECT_EQ(specs->layers.back().head_size, head_size);
  EXPECT_EQ(specs->max_model_len, max_model_len);
}

// The wrappers that build the registered model text_config names, or, without architectures,
// the causal-LM class of its model type (LLaVA-OneVision's llava-onevision-qwen2 shape).
TEST(MultimodalWrappers, NamedOrTypedLanguageModel) {
  for (const char* wrapper :
       {"LlavaOnevisionForConditionalGeneration", "BeeForConditionalGeneration",
        "RForConditionalGeneration", "Cohere2VisionForConditionalGeneration",
        "GraniteSpeechForConditionalGeneration", "InternVLForConditionalGeneration",
        "InternS1ForConditionalGeneration", "LightOnOCRForConditionalGeneration",
        "Lfm2VlForConditionalGeneration", "Eagle2_5_VLForConditionalGeneration",
        "Blip2ForConditionalGeneration"}) {
    SCOPED_TRACE(wrapper);
    ExpectFullLayers(Wrapper(wrapper, "text_config", Qwen2Text()), 28, 4, 128, 32768);
  }
  // llm_config where there is no text_config (Nemotron Nano VL, Ovis).
  for (const char* wrapper : {"Llama_Nemotron_Nano_VL", "Ovis", "Ovis2_5", "Ovis2_6ForCausalLM",
                              "Ovis2_6_MoeForCausalLM"}) {
    SCOPED_TRACE(wrapper);
    ExpectFullLayers(Wrapper(wrapper, "llm_config", Qwen2Text()), 28, 4, 128, 32768);
  }
  // Stated architectures win over the model type: Qwen3 reads head_dim.
  nlohmann::json text = Qwen2Text();
  text["architectures"] = {"Qwen3ForCausalLM"};
  text["head_dim"] = 256;
  ExpectFullLayers(Wrapper("LightOnOCRForConditionalGeneration", "text_config", text), 28, 4, 256,
                   32768);
  // A model type outside the map needs its architectures.
  text = Qwen2Text();
  text["model_type"] = "internlm2";
  EXPECT_EQ(SpecsError(Wrapper("InternS1ForConditionalGeneration", "text_config", text)),
            "config.json 'config.json': field 'text_config.model_type' is 'internlm2' and no "
            "architectures are stated: kvtopo plans the causal-LM class of model type llama, "
            "mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, cohere2, "
            "granite, lfm2, opt, phi3 here");
}

// InternVL's own subclasses index text_config.architectures: it must be there.
TEST(MultimodalWrappers, InternVlSubclassesNeedArchitectures) {
  nlohmann::json text = Qwen2Text();
  text["architectures"] = {"Qwen2ForCausalLM"};
  for (const char* wrapper :
       {"H2OVLChatModel", "NVLM_D", "SkyworkR1VChatModel", "QianfanOCRForConditionalGeneration"}) {
    SCOPED_TRACE(wrapper);
    ExpectFullLayers(Wrapper(wrapper, "llm_config", text), 28, 4, 128, 32768);
  }
  EXPECT_EQ(SpecsError(Wrapper("NVLM_D", "llm_config", Qwen2Text())),
            "config.json 'config.json': field 'llm_config.architectures' is missing");
}

// Wrappers that force the engine's Qwen2 model over text_config, whose config classes build a
// Qwen2Config: its defaults fill a sparse text_config (Qwen2-Audio states little more than its
// model type): 32 layers of 32 K/V heads of 128, 32,768 positions.
TEST(MultimodalWrappers, ForcedQwen2TakesQwen2ConfigDefaults) {
  for (const char* wrapper :
       {"AudioFlamingo3ForConditionalGeneration", "MusicFlamingoForConditionalGeneration", "Cheers",
        "CheersForConditionalGeneration", "OpenCUAForConditionalGeneration",
        "Qwen2AudioForConditionalGeneration"}) {
    SCOPED_TRACE(wrapper);
    ExpectFullLayers(Wrapper(wrapper, "text_config", Qwen2Text()), 28, 4, 128, 32768);
    ExpectFullLayers(Wrapper(wrapper, "text_config", {{"model_type", "qwen2"}}), 32, 32, 128,
                     32768);
  }
  // BAGEL: the same over llm_config.
  ExpectFullLayers(Wrapper("BagelForConditionalGeneration", "llm_config", Qwen2Text()), 28, 4, 128,
                   32768);
  // FunAudioChat: Qwen3 code over a Qwen2Config (no head_dim: hidden_size / heads) or the class
  // its model type names.
  nlohmann::json funaudio = Qwen2Text();
  funaudio.erase("model_type");
  ExpectFullLayers(Wrapper("FunAudioChatForConditionalGeneration", "text_config", funaudio), 28, 4,
                   128, 32768);
  funaudio["model_type"] = "qwen3";
  funaudio["head_dim"] = 64;
  ExpectFullLayers(Wrapper("FunAudioChatForConditionalGeneration", "text_config", funaudio), 28, 4,
                   64, 32768);
  // Music Flamingo's root max_position_embeddings and head_dim belong to its audio RoPE.
  nlohmann::json config =
      Wrapper("MusicFlamingoForConditionalGeneration", "text_config", Qwen2Text());
  config["max_position_embeddings"] = 1200;
  config["head_dim"] = 1280;
  ExpectFullLayers(config, 28, 4, 128, 32768);
  EXPECT_EQ(SpecsError(Wrapper("Qwen2AudioForConditionalGeneration", "text_config",
                               {{"model_type", "llama"}})),
            "config.json 'config.json': field 'text_config.model_type' is 'llama': kvtopo plans "
            "this wrapper's language models of model type qwen2");
  // Idefics3 and SmolVLM: the engine's Llama model over a LlamaConfig (its defaults: 32 layers,
  // a K/V head per head, 2,048 positions).
  for (const char* wrapper :
       {"Idefics3ForConditionalGeneration", "SmolVLMForConditionalGeneration"}) {
    SCOPED_TRACE(wrapper);
    ExpectFullLayers(Wrapper(wrapper, "text_config", {{"model_type", "llama"}}), 32, 32, 128, 2048);
  }
}

// The other forced models, each over text_config or the root.
TEST(MultimodalWrappers, ForcedLanguageModels) {
  nlohmann::json llama = Qwen2Text();
  llama["model_type"] = "llama";
  for (const char* wrapper :
       {"AriaForConditionalGeneration", "KananaVForConditionalGeneration",
        "LlavaNextForConditionalGeneration", "LlavaNextVideoForConditionalGeneration",
        "MantisForConditionalGeneration", "TarsierForConditionalGeneration",
        "InternS1ProForConditionalGeneration", "GlmOcrForConditionalGeneration",
        "Granite4VisionForConditionalGeneration", "Exaone4_5_ForConditionalGeneration"}) {
    SCOPED_TRACE(wrapper);
    ExpectFullLayers(Wrapper(wrapper, "text_config", llama), 28, 4, 128, 32768);
  }
  // Over the root config: dots.ocr (28 layers, 12 heads of 128, 2 K/V heads, 131,072 positions).
  nlohmann::json dots = nlohmann::json::parse(R"({"model_type": "dots_ocr", "hidden_size": 1536,
    "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2,
    "max_position_embeddings": 131072, "sliding_window": null, "use_sliding_window": false,
    "torch_dtype": "bfloat16"})");
  for (const char* root :
       {"DotsOCRForCausalLM", "FireRedASR2ForConditionalGeneration", "MoonshotKimiaForCausalLM",
        "FunASRForConditionalGeneration", "Phi3VForCausalLM", "Phi4ForCausalLMV",
        "Phi4MMForCausalLM", "IsaacForConditionalGeneration"}) {
    SCOPED_TRACE(root);
    dots["architectures"] = {root};
    ExpectFullLayers(dots, 28, 2, 128, 131072);
  }
  // Phi-4-multimodal's window reaches every layer.
  dots["architectures"] = {"Phi4MMForCausalLM"};
  dots["sliding_window"] = 262144;
  Result<ModelCacheSpecs> specs = Specs(dots);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->layers[0].kind, CacheKind::kSlidingWindow);
  EXPECT_EQ(specs->layers[27].sliding_window, 262144);
  // Kimi-VL: DeepSeek-V2's MLA over text_config.
  nlohmann::json kimi =
      nlohmann::json::parse(R"({"architectures": ["KimiVLForConditionalGeneration"],
    "text_config": {"model_type": "deepseek_v3", "hidden_size": 2048, "num_hidden_layers": 27,
      "num_attention_heads": 16, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
      "qk_nope_head_dim": 128, "v_head_dim": 128, "max_position_embeddings": 131072,
      "torch_dtype": "bfloat16"}})");
  specs = Specs(kimi);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->layers.size(), 27u);
  EXPECT_EQ(specs->layers[0].kind, CacheKind::kMla);
  EXPECT_EQ(specs->layers[0].head_size, 576);
  // The others over text_config: Fuyu's Persimmon keeps a K/V head per head; Step 3's text model
  // one K/V head of its class's head_dim 256; HunYuan VL's dense HunYuan its K/V heads.
  nlohmann::json persimmon = Qwen2Text();
  persimmon["model_type"] = "persimmon";
  ExpectFullLayers(Wrapper("FuyuForCausalLM", "text_config", persimmon), 28, 28, 128, 32768);
  nlohmann::json step3 = Qwen2Text();
  step3["model_type"] = "step3_text";
  // Its layers split moe_layers_enum, whose default in the text config class is a tuple.
  EXPECT_EQ(
      Specs(Wrapper("Step3VLForConditionalGeneration", "text_config", step3)).status().message(),
      "config.json 'config.json': field 'text_config.moe_layers_enum' is not stated: the "
      "engine's config class then takes a tuple, whose strip() the decoder layer calls, and "
      "raises AttributeError as it builds the model");
  step3["moe_layers_enum"] = "4,5,6";
  ExpectFullLayers(Wrapper("Step3VLForConditionalGeneration", "text_config", step3), 28, 1, 256,
                   32768);
  nlohmann::json hunyuan = Qwen2Text();
  hunyuan["model_type"] = "hunyuan_vl";
  hunyuan["head_dim"] = 128;
  ExpectFullLayers(Wrapper("HunYuanVLForConditionalGeneration", "text_config", hunyuan), 28, 4, 128,
                   32768);
  // ... and over the root: ERNIE 4.5 VL's MoE and openPangu VL.
  for (const char* root :
       {"Ernie4_5_VLMoeForConditionalGeneration", "OpenPanguVLForConditionalGeneration"}) {
    SCOPED_TRACE(root);
    nlohmann::json config = Qwen2Text();
    config["architectures"] = {root};
    ExpectFullLayers(config, 28, 4, 128, 32768);
  }
  // DeepSeek-OCR (language_config: 12 layers, 10 heads of 1280 / 10, no MLA): multi-head
  // attention; DeepSeek-VL2's MLA; a language_config without kv_lora_rank is refused.
  nlohmann::json ocr = nlohmann::json::parse(R"({"architectures": ["DeepseekOCRForCausalLM"],
    "model_type": "deepseek_vl_v2", "torch_dtype": "bfloat16",
    "language_config": {"architectures": ["DeepseekV2ForCausalLM"], "hidden_size": 1280,
      "num_hidden_layers": 12, "num_attention_heads": 10, "num_key_value_heads": 10,
      "kv_lora_rank": null, "q_lora_rank": null, "qk_nope_head_dim": 0, "qk_rope_head_dim": 0,
      "v_head_dim": 0, "max_position_embeddings": 8192}})");
  ExpectFullLayers(ocr, 12, 10, 128, 8192);
  nlohmann::json vl2 = ocr;
  vl2["architectures"] = {"DeepseekVLV2ForCausalLM"};
  vl2["language_config"]["kv_lora_rank"] = 512;
  vl2["language_config"]["qk_nope_head_dim"] = 128;
  vl2["language_config"]["qk_rope_head_dim"] = 64;
  vl2["language_config"]["v_head_dim"] = 128;
  specs = Specs(vl2);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->layers.size(), 12u);
  EXPECT_EQ(specs->layers[0].kind, CacheKind::kMla);
  EXPECT_EQ(specs->layers[0].head_size, 576);
  ocr["architectures"] = {"DeepseekOCR2ForCausalLM"};
  ocr["language_config"].erase("kv_lora_rank");
  EXPECT_EQ(SpecsError(ocr),
            "config.json 'config.json': field 'language_config.kv_lora_rank' is missing: the "
            "DeepSeek-V2 text config's default (MLA of 512, or none) depends on the Transformers "
            "version; state it (null for multi-head attention)");
  ocr["language_config"]["kv_lora_rank"] = nullptr;
  ocr["language_config"]["qk_rope_head_dim"] = 64;
  EXPECT_EQ(SpecsError(ocr),
            "config.json 'config.json': field 'language_config.kv_lora_rank' is null with "
            "qk_nope_head_dim 0 and qk_rope_head_dim 64: DeepSeek-V2's attention without MLA, "
            "which kvtopo does not plan (both 0 is multi-head attention)");
  // Qwen3-ASR: Qwen3 over thinker_config.text_config.
  nlohmann::json text = Qwen2Text();
  text["model_type"] = "qwen3";
  text["head_dim"] = 128;
  ExpectFullLayers({{"architectures", {"Qwen3ASRForConditionalGeneration"}},
                    {"thinker_config", {{"text_config", text}}}},
                   28, 4, 128, 32768);
}

// MiniCPM-V and MiniCPM-o: the language model of their version, over the root config.
TEST(MultimodalWrappers, MiniCpmByVersion) {
  nlohmann::json config = Qwen2Text();
  config["architectures"] = {"MiniCPMV"};
  config["version"] = 2.6;  // Qwen2: head_dim not read
  config["head_dim"] = 64;
  ExpectFullLayers(config, 28, 4, 128, 32768);
  config["version"] = "4.5";  // Qwen3 reads head_dim
  ExpectFullLayers(config, 28, 4, 64, 32768);
  config["version"] = 4.0;  // Llama
  ExpectFullLayers(config, 28, 4, 64, 32768);
  config["version"] = 4.1;
  EXPECT_EQ(SpecsError(config),
            "config.json 'config.json': field 'version' is 4.1: the engine's MiniCPM-V supports "
            "versions 2.0, 2.5, 2.6, 4.0, 4.5");
  config["version"] = "v2";
  EXPECT_EQ(SpecsError(config),
            "config.json 'config.json': field 'version' is \"v2\": the engine reads it as "
            "integers separated by dots");
  config.erase("version");  // 2.5 (Llama) unless hidden_size 2304 and query_num 64
  ExpectFullLayers(config, 28, 4, 64, 32768);
  config["architectures"] = {"MiniCPMO"};  // 2.6 without a version: Qwen2
  ExpectFullLayers(config, 28, 4, 128, 32768);
  config["version"] = "4.5.1";  // the first two parts
  ExpectFullLayers(config, 28, 4, 64, 32768);
  config["version"] = 4.0;
  EXPECT_EQ(SpecsError(config),
            "config.json 'config.json': field 'version' is 4.0: the engine's MiniCPM-o supports "
            "versions 2.6, 4.5");
}

// The dtype the engine reads for a wrapper (get_torch_dtype): the root's, else the text config's,
// else the vision config's; a Qwen Omni thinker_config's own is not read.
TEST(MultimodalWrappers, DtypeFromTheRootFirst) {
  auto dtype_of = [](const nlohmann::json& config) {
    Result<ModelCacheSpecs> specs = Specs(config);
    EXPECT_TRUE(specs.ok()) << specs.status().ToString();
    return specs.ok() ? specs->layers[0].model_dtype : ElementType::kFloat32;
  };
  // llava-v1.6-mistral-7b-hf states float16 at the root and bfloat16 in text_config.
  nlohmann::json text = Qwen2Text();
  nlohmann::json config = Wrapper("LlavaOnevisionForConditionalGeneration", "text_config", text);
  config["torch_dtype"] = "float16";
  EXPECT_EQ(dtype_of(config), ElementType::kFloat16);
  config.erase("torch_dtype");
  EXPECT_EQ(dtype_of(config), ElementType::kBfloat16);
  config["text_config"].erase("torch_dtype");
  config["vision_config"] = {{"torch_dtype", "float16"}};
  EXPECT_EQ(dtype_of(config), ElementType::kFloat16);
  // Qwen3-ASR keeps its dtype in thinker_config, which the engine does not read: float32 (run
  // as bfloat16 under --dtype auto), as for a config that states none.
  text["model_type"] = "qwen3";
  text.erase("torch_dtype");
  nlohmann::json asr = {{"architectures", {"Qwen3ASRForConditionalGeneration"}},
                        {"thinker_config", {{"text_config", text}, {"dtype", "float16"}}}};
  Result<ModelCacheSpecs> specs = Specs(asr);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->layers[0].model_dtype, ElementType::kBfloat16);
  bool stated_none = false;
  for (const Diagnostic& d : specs->diagnostics) stated_none |= d.code == "model-dtype";
  EXPECT_TRUE(stated_none);
}

// Models with their own decoder layers: Qwen-VL (QWenLMHeadModel's, multi-head of hidden_size /
// heads), Chameleon (its class's defaults), Molmo (K/V heads or the heads, head_dim not read),
// Molmo 2 (every field required) and Moondream 3 (config.text).
TEST(MultimodalWrappers, OwnDecoderLayers) {
  nlohmann::json qwen =
      nlohmann::json::parse(R"({"architectures": ["QwenVLForConditionalGeneration"],
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "max_position_embeddings": 8192, "visual": {"image_size": 448}, "torch_dtype": "bfloat16"})");
  ExpectFullLayers(qwen, 32, 32, 128, 8192);
  qwen["architectures"] = {"QWenLMHeadModel"};
  EXPECT_EQ(SpecsError(qwen),
            "config.json 'config.json': field 'visual' is set (a Qwen-VL config): the engine's "
            "QWenLMHeadModel refuses it and asks for --hf-overrides '{\"architectures\": "
            "[\"QwenVLForConditionalGeneration\"]}'; name that architecture in config.json to plan "
            "it");
  // Chameleon: ChameleonConfig's 4096 hidden, 32 layers, 32 heads, 32 K/V heads, 4096 positions.
  nlohmann::json chameleon = {{"architectures", {"ChameleonForConditionalGeneration"}},
                              {"model_type", "chameleon"},
                              {"torch_dtype", "bfloat16"}};
  ExpectFullLayers(chameleon, 32, 32, 128, 4096);
  chameleon["hidden_size"] = 8192;
  chameleon["num_attention_heads"] = 64;
  chameleon["num_key_value_heads"] = 8;
  chameleon["head_dim"] = 64;  // not read
  ExpectFullLayers(chameleon, 32, 8, 128, 4096);
  // Molmo: a num_key_value_heads of 0 (or null) is the heads; head_dim is not read.
  nlohmann::json molmo = Qwen2Text();
  molmo["architectures"] = {"MolmoForCausalLM"};
  molmo["num_key_value_heads"] = 0;
  molmo["head_dim"] = 64;
  ExpectFullLayers(molmo, 28, 28, 128, 32768);
  molmo["num_key_value_heads"] = 4;
  ExpectFullLayers(molmo, 28, 4, 128, 32768);
  molmo.erase("max_position_embeddings");
  EXPECT_EQ(SpecsError(molmo),
            "config.json 'config.json': field 'max_position_embeddings' is missing");
  // Molmo 2: text_config (else llm_config), head_dim read and required.
  nlohmann::json molmo2 = Qwen2Text();
  molmo2["head_dim"] = 256;
  ExpectFullLayers(Wrapper("Molmo2ForConditionalGeneration", "llm_config", molmo2), 28, 4, 256,
                   32768);
  molmo2.erase("head_dim");
  EXPECT_EQ(SpecsError(Wrapper("Molmo2ForConditionalGeneration", "text_config", molmo2)),
            "config.json 'config.json': field 'text_config.head_dim' is missing");
  // Moondream 3: the class's 24 layers of 2048 / 32 = 64 over 32 K/V heads, 4096 positions, and
  // what config.text states.
  nlohmann::json moondream = {{"architectures", {"HfMoondream"}},
                              {"model_type", "moondream3"},
                              {"torch_dtype", "bfloat16"}};
  ExpectFullLayers(moondream, 24, 32, 64, 4096);
  moondream["architectures"] = {"Moondream3ForCausalLM"};
  moondream["config"] = {{"text", {{"n_layers", 12}, {"n_kv_heads", 8}, {"max_context", 8192}}}};
  ExpectFullLayers(moondream, 12, 8, 64, 8192);
  moondream["config"]["text"]["n_kv_heads"] = 5;
  EXPECT_EQ(SpecsError(moondream),
            "config.json 'config.json': field 'config.text.n_kv_heads' is 5, which does not "
            "divide n_heads 32");
}

// Wrappers whose config classes build the text model with their own defaults, with or without a
// text_config: OpenVLA (LlamaConfig), MiDashengLM (Qwen2_5OmniTextConfig), GLM-ASR (its own
// Llama defaults), PaddleOCR-VL (PaddleOCRTextConfig, flat or nested).
TEST(MultimodalWrappers, ConfigClassDefaults) {
  const nlohmann::json root_only = {{"torch_dtype", "bfloat16"}};
  nlohmann::json openvla = root_only;
  openvla["architectures"] = {"OpenVLAForActionPrediction"};
  ExpectFullLayers(openvla, 32, 32, 128, 2048);
  openvla["text_config"] = {{"model_type", "llama"}, {"max_position_embeddings", 4096}};
  ExpectFullLayers(openvla, 32, 32, 128, 4096);
  openvla["text_config"]["architectures"] = {"MistralForCausalLM"};
  EXPECT_EQ(SpecsError(openvla),
            "config.json 'config.json': field 'text_config.architectures' names "
            "[MistralForCausalLM]: OpenVLAForActionPrediction's config class builds a LlamaConfig, "
            "which kvtopo plans as the engine's LlamaForCausalLM only");
  nlohmann::json dasheng = root_only;
  dasheng["architectures"] = {"MiDashengLMModel"};
  dasheng["text_config"] = {{"model_type", "qwen2_5_omni_text"}};
  ExpectFullLayers(dasheng, 28, 4, 128, 32768);
  nlohmann::json glm = root_only;
  glm["architectures"] = {"GlmAsrForConditionalGeneration"};
  ExpectFullLayers(glm, 28, 4, 128, 8192);
  glm["text_config"] = {{"num_hidden_layers", 4}};
  ExpectFullLayers(glm, 4, 4, 128, 8192);
  glm["text_config"]["model_type"] = "qwen2";
  EXPECT_EQ(SpecsError(glm),
            "config.json 'config.json': field 'text_config.model_type' is 'qwen2': kvtopo plans "
            "GLM-ASR language models of model type llama");
  // PaddleOCR-VL: the flat hub layout and the nested one; a null num_key_value_heads is the heads.
  nlohmann::json paddle = root_only;
  paddle["architectures"] = {"PaddleOCRVLForConditionalGeneration"};
  ExpectFullLayers(paddle, 18, 2, 128, 131072);
  paddle["num_hidden_layers"] = 12;
  paddle["num_key_value_heads"] = nullptr;
  ExpectFullLayers(paddle, 12, 16, 128, 131072);
  paddle["text_config"] = {{"num_key_value_heads", 4}, {"head_dim", nullptr}};
  ExpectFullLayers(paddle, 18, 4, 64, 131072);
}

// Keye-VL: the engine's Qwen3 layers take the config's sliding_window on every layer, whatever
// use_sliding_window says; a config that leaves it out is refused, as is a window under Keye-VL
// 1.5 (its class not verified).
TEST(MultimodalWrappers, KeyeWindows) {
  nlohmann::json keye = Qwen2Text();
  keye["architectures"] = {"KeyeForConditionalGeneration"};
  keye["head_dim"] = 256;
  keye["use_sliding_window"] = false;
  keye["sliding_window"] = nullptr;
  ExpectFullLayers(keye, 28, 4, 256, 32768);
  keye["sliding_window"] = 4096;
  Result<ModelCacheSpecs> specs = Specs(keye);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->layers.size(), 28u);
  EXPECT_EQ(specs->layers[0].kind, CacheKind::kSlidingWindow);
  EXPECT_EQ(specs->layers[27].sliding_window, 4096);
  keye["architectures"] = {"KeyeVL1_5ForConditionalGeneration"};
  EXPECT_EQ(SpecsError(keye),
            "config.json 'config.json': field 'sliding_window' is 4096: whether Keye-VL 1.5's "
            "config class keeps it (the engine then windows every layer) or drops it without "
            "use_sliding_window was not verified; kvtopo plans only a null window");
  keye.erase("sliding_window");
  EXPECT_EQ(SpecsError(keye),
            "config.json 'config.json': field 'sliding_window' is not stated: Keye's config "
            "class, which comes with the checkpoint, fills its own (4096 in Keye-VL-8B-Preview's), "
            "and the engine then windows every layer; state it (null for full attention)");
}

// StepVL and Ultravox build the registered model text_config names (or its model type's class);
// Ultravox's text_model_id points the engine at another config. Tarsier2 plans as Qwen2-VL, and
// MiMo-V2 Omni as MiMo-V2-Flash.
TEST(MultimodalWrappers, NamedWrappersTarsier2AndMimoOmni) {
  nlohmann::json qwen3 = Qwen2Text();
  qwen3["model_type"] = "qwen3";
  qwen3["head_dim"] = 256;
  ExpectFullLayers(Wrapper("StepVLForConditionalGeneration", "text_config", qwen3), 28, 4, 256,
                   32768);
  nlohmann::json llama = Qwen2Text();
  llama["model_type"] = "llama";
  nlohmann::json ultravox = Wrapper("UltravoxModel", "text_config", llama);
  ExpectFullLayers(ultravox, 28, 4, 128, 32768);
  // Without a model type (or a text_config) the class builds a LlamaConfig: its defaults fill
  // what is left out (32 layers of 32 heads of 128, 2048 positions).
  ultravox["text_config"].erase("model_type");
  ExpectFullLayers(ultravox, 28, 4, 128, 32768);
  ultravox["text_config"] = {{"num_hidden_layers", 2}};
  ExpectFullLayers(ultravox, 2, 32, 128, 2048);
  ultravox.erase("text_config");
  ExpectFullLayers(ultravox, 32, 32, 128, 2048);
  ultravox["text_config"] = llama;
  ultravox["text_model_id"] = "meta-llama/Llama-3.2-1B-Instruct";
  EXPECT_EQ(SpecsError(ultravox),
            "config.json 'config.json': field 'text_model_id' is set: the engine builds "
            "Ultravox's language model from that repository's config.json and ignores "
            "text_config; plan that config");
  ExpectFullLayers(Wrapper("Tarsier2ForConditionalGeneration", "text_config", Qwen2Text()), 28, 4,
                   128, 32768);
  nlohmann::json mimo = nlohmann::json::parse(R"({"architectures": ["MiMoV2OmniForCausalLM"],
    "model_type": "mimo_v2", "torch_dtype": "bfloat16", "hidden_size": 4096,
    "num_hidden_layers": 4, "num_attention_heads": 64, "num_key_value_heads": 4,
    "head_dim": 192, "v_head_dim": 128, "swa_num_key_value_heads": 8, "swa_head_dim": 192,
    "swa_v_head_dim": 128, "sliding_window_size": 128, "hybrid_layer_pattern": [0, 1, 1, 1],
    "max_position_embeddings": 262144, "attention_chunk_size": 128})");
  Result<ModelCacheSpecs> specs = Specs(mimo);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->layers.size(), 4u);
  EXPECT_EQ(specs->layers[0].kind, CacheKind::kFullAttention);
  EXPECT_EQ(specs->layers[1].kind, CacheKind::kSlidingWindow);
  EXPECT_EQ(specs->layers[1].sliding_window, 128);
}

// Registered models whose cache kvtopo does not model are refused with the reason, and the
// "supported" list of an unknown architecture does not name them.
TEST(MultimodalWrappers, EncoderDecoderAndRealtimeAreRefusedWithTheirReason) {
  for (const char* architecture :
       {"CohereAsrForConditionalGeneration", "NemotronParseForConditionalGeneration",
        "FireRedLIDForConditionalGeneration"}) {
    SCOPED_TRACE(architecture);
    EXPECT_EQ(SpecsError({{"architectures", {architecture}}}),
              fmt::format("config.json 'config.json': {} is not planned: it is an "
                          "encoder-decoder model, whose decoder's cross-attention layers keep the "
                          "encoder's K/V in a cache group of their own (the engine's "
                          "CrossAttentionSpec: cdiv(max_num_encoder_input_tokens, block_size) "
                          "pages per layer, allocated when the encoder input is scheduled and "
                          "never prefix-cached), which kvtopo does not model",
                          architecture));
  }
  EXPECT_EQ(SpecsError({{"architectures", {"VoxtralRealtimeGeneration"}}}),
            "config.json 'config.json': VoxtralRealtimeGeneration is not planned: its causal "
            "audio encoder keeps a paged sliding-window cache pooled over downsample_factor "
            "blocks (whisper_causal.py), which kvtopo does not model");
  EXPECT_EQ(SpecsError({{"architectures", {"BertForMaskedLM"}}}),
            fmt::format("config.json 'config.json': architecture 'BertForMaskedLM' is not "
                        "supported (if Transformers itself has the class, the engine may build "
                        "it with its Transformers backend: pass --model-impl transformers to plan "
                        "that); kvtopo plans {} architectures, which `kvtopo profiles "
                        "--architectures` lists",
                        ListArchitectures().size()));
  // The architectures listed are the ones planned, not the ones refused with a reason.
  const std::vector<std::string> planned = ListArchitectures();
  for (const char* refused : {"VoxtralRealtimeGeneration", "MiniMaxVL01ForConditionalGeneration",
                              "FireRedLIDForConditionalGeneration"}) {
    EXPECT_FALSE(std::binary_search(planned.begin(), planned.end(), refused)) << refused;
  }
  EXPECT_TRUE(std::binary_search(planned.begin(), planned.end(), "UltravoxModel"));
}

}  // namespace
}  // namespace kvtopo
