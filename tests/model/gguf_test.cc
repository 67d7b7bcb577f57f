// GGUF files as the model: the metadata read from the file's header, the config the engine builds
// from it (Transformers' GGUF mapping, the config class's defaults, the causal-LM class), planned
// end to end; malformed files refused with the offset.
#include "model/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "kvtopo/dtype.h"
#include "kvtopo/launch.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "model/architectures.h"

namespace kvtopo {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// Appends v's bytes (little-endian, as this machine and GGUF lay them out).
template <typename T>
void AppendBytes(std::string& out, T v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof v);
}

// A GGUF version 3 file's bytes: the header (no tensors) and these pairs. Integers are written as
// uint32 (type 4), floats as float32 (6), strings (8), lists of int32 (9 of 5) or of strings.
using Value =
    std::variant<uint32_t, float, std::string, std::vector<int32_t>, std::vector<std::string>>;
class GgufBytes {
 public:
  // Sets `key` (in its place when already given).
  GgufBytes& Add(const std::string& key, const Value& v) {
    for (auto& [k, old] : pairs_) {
      if (k == key) {
        old = v;
        return *this;
      }
    }
    return Append(key, v);
  }
  // Appends a pair, a key given before included.
  GgufBytes& Append(const std::string& key, const Value& v) {
    pairs_.emplace_back(key, v);
    return *this;
  }
  std::string Bytes(uint32_t version = 3) const {
    std::string out = "GGUF";
    AppendBytes(out, version);
    AppendBytes(out, uint64_t{0});
    AppendBytes(out, static_cast<uint64_t>(pairs_.size()));
    for (const auto& [key, v] : pairs_) {
      PutString(out, key);
      if (const auto* u = std::get_if<uint32_t>(&v)) {
        AppendBytes(out, uint32_t{4});
        AppendBytes(out, *u);
      } else if (const auto* f = std::get_if<float>(&v)) {
        AppendBytes(out, uint32_t{6});
        AppendBytes(out, *f);
      } else if (const auto* s = std::get_if<std::string>(&v)) {
        AppendBytes(out, uint32_t{8});
        PutString(out, *s);
      } else if (const auto* ints = std::get_if<std::vector<int32_t>>(&v)) {
        AppendBytes(out, uint32_t{9});
        AppendBytes(out, uint32_t{5});
        AppendBytes(out, static_cast<uint64_t>(ints->size()));
        for (int32_t i : *ints) AppendBytes(out, i);
      } else {
        const auto& strings = std::get<std::vector<std::string>>(v);
        AppendBytes(out, uint32_t{9});
        AppendBytes(out, uint32_t{8});
        AppendBytes(out, static_cast<uint64_t>(strings.size()));
        for (const std::string& s2 : strings) PutString(out, s2);
      }
    }
    return out;
  }

 private:
  static void PutString(std::string& out, const std::string& s) {
    AppendBytes(out, static_cast<uint64_t>(s.size()));
    out += s;
  }
  std::vector<std::pair<std::string, Value>> pairs_;
};

// Writes `bytes` to a file of this test's own (ctest runs tests side by side).
std::string WriteFile(const std::string& bytes, const std::string& suffix = ".gguf") {
  const std::string path =
      (std::filesystem::temp_directory_path() /
       (std::string("kvtopo_gguf_") +
        ::testing::UnitTest::GetInstance()->current_test_info()->name() + suffix))
          .string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// The config the engine builds from the file `g` writes.
Result<internal::LoadedConfig> Load(const GgufBytes& g) {
  const std::string path = WriteFile(g.Bytes());
  Result<internal::LoadedConfig> loaded = internal::LoadModelConfig(path);
  std::filesystem::remove(path);
  return loaded;
}

// Qwen3-0.6B as llama.cpp writes it: 28 layers, 16 heads over 1024, 8 K/V heads, no head size.
GgufBytes Qwen3Small() {
  GgufBytes g;
  g.Add("general.architecture", std::string("qwen3"))
      .Add("general.name", std::string("Qwen3 0.6B"))
      .Add("qwen3.block_count", 28u)
      .Add("qwen3.context_length", 40960u)
      .Add("qwen3.embedding_length", 1024u)
      .Add("qwen3.attention.head_count", 16u)
      .Add("qwen3.attention.head_count_kv", 8u)
      .Add("qwen3.rope.freq_base", 1000000.0f)
      .Add("tokenizer.ggml.tokens", std::vector<std::string>(5000, "t"));
  return g;
}

Result<Plan> PlanFile(const std::string& path, int64_t memory) {
  LaunchConfig c;
  c.model = path;
  c.kv_cache_memory_bytes = memory;
  KVTOPO_ASSIGN_OR_RETURN(ModelCacheSpecs specs, BuildModelCacheSpecs(c));
  return PlanLaunchSpecs(specs, c);
}

std::string LoadError(const std::string& bytes, const std::string& suffix = ".gguf") {
  const std::string path = WriteFile(bytes, suffix);
  Result<internal::LoadedConfig> loaded = internal::LoadModelConfig(path);
  std::filesystem::remove(path);
  if (loaded.ok()) return "(loaded)";
  std::string message(loaded.status().message());
  // The path is the test's own; the rest of the message is what the test is about.
  const size_t at = message.find(path);
  if (at != std::string::npos) message.replace(at, path.size(), "F");
  return message;
}

// The engine runs a GGUF file as --quantization gguf, whose kernels take no bfloat16 from compute
// capability 10.0.
const Diagnostic kGgufBfloat16Warning{
    Severity::kWarning, "quantization-dtype-gpu",
    "the model runs in bfloat16, which quantization method gguf (a GGUF file, which the engine "
    "runs with --quantization gguf) takes only below compute capability 10.0: on a Blackwell GPU "
    "the engine refuses the launch ('torch.bfloat16 is not supported for quantization method "
    "gguf'); pass --dtype float16 there, or state the GPU with --device-capability"};

// The engine builds Qwen3Config from the file: head_dim is the class's 128 (the mapping reads no
// head size for qwen3), the architecture Qwen3ForCausalLM, the dtype unstated (bfloat16 under
// --dtype auto). A page is 16 x 2 x 8 x 128 x 2 B = 64 KiB; 16 GiB / (28 x 64 KiB) = 9,362 blocks,
// 149,792 tokens. The vocabulary's size is the tokenizer's (5,000 tokens, not kept).
TEST(Gguf, Qwen3AsTheEngineReadsIt) {
  const std::string path = WriteFile(Qwen3Small().Bytes());
  auto loaded = internal::LoadModelConfig(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->json, nlohmann::json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 28,
    "max_position_embeddings": 40960, "hidden_size": 1024, "num_attention_heads": 16,
    "num_key_value_heads": 8, "rope_theta": 1000000.0, "vocab_size": 5000})"));
  auto plan = PlanFile(path, 16 * kGiB);
  std::filesystem::remove(path);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->accepted()) << plan->ErrorLines();
  ASSERT_EQ(plan->groups.size(), 1u);
  EXPECT_EQ(plan->groups[0].layer_page_bytes[0], 65536);
  EXPECT_EQ(plan->pool.num_blocks, 9362);
  EXPECT_EQ(plan->capacity.max_tokens, 149792);
  EXPECT_EQ(plan->model.layers[0].model_dtype, ElementType::kBfloat16);
  ASSERT_EQ(plan->diagnostics.size(), 2u);
  EXPECT_EQ(plan->diagnostics[0].message,
            "'" + path +
                "' is a GGUF file, whose metadata states no dtype: the engine reads none from its "
                "tensors either and takes float32; the engine runs a float32 model as bfloat16 "
                "(--dtype auto), so an auto KV cache stores bfloat16; set --dtype float32 to keep "
                "float32");
  EXPECT_EQ(plan->diagnostics[1], kGgufBfloat16Warning);
}

// --hf-config-path: the engine reads the target's config there instead of the model's (here a
// config.json that states a head size of 64 beside the GGUF file), and the model keeps its name.
TEST(Gguf, HfConfigPathReplacesTheFilesConfig) {
  const std::string gguf = WriteFile(Qwen3Small().Bytes());
  const std::string json = WriteFile(R"({
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_hidden_layers": 28,
    "max_position_embeddings": 40960, "hidden_size": 1024, "num_attention_heads": 16,
    "num_key_value_heads": 8, "head_dim": 64, "torch_dtype": "bfloat16"})",
                                     ".json");
  LaunchConfig c;
  c.model = gguf;
  c.hf_config_path = json;
  c.kv_cache_memory_bytes = 16 * kGiB;
  auto specs = BuildModelCacheSpecs(c);
  std::filesystem::remove(gguf);
  std::filesystem::remove(json);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  EXPECT_EQ(specs->model_name, gguf);
  EXPECT_EQ(specs->layers[0].head_size, 64);
  // The model is still the GGUF file: the engine runs it as --quantization gguf.
  EXPECT_EQ(specs->diagnostics.back(), kGgufBfloat16Warning);
  c.hf_config_path = json;  // removed above
  const std::string missing = BuildModelCacheSpecs(c).status().message();
  EXPECT_TRUE(missing.starts_with("--hf-config-path: model '" + json +
                                  "' is neither an embedded profile (deepseek-v3.2, "))
      << missing;
  LaunchOptions o;
  o.model = "kimi-k2.6";
  o.hf_config_path = "qwen3-next-80b";
  auto launch = ToLaunchConfig(o);
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  EXPECT_EQ(launch->hf_config_path, "qwen3-next-80b");
}

// Transformers' renames: llama named exactly "mistral" is Mistral (MistralConfig's 4096 window);
// qwen2moe is qwen2_moe; gemma3 reads as gemma3_text, whose class derives a full layer in six.
TEST(Gguf, ArchitectureRenames) {
  GgufBytes llama;
  llama.Add("general.architecture", std::string("llama"))
      .Add("general.name", std::string("mistral"))
      .Add("llama.block_count", 32u)
      .Add("llama.context_length", 32768u)
      .Add("llama.embedding_length", 4096u)
      .Add("llama.attention.head_count", 32u)
      .Add("llama.attention.head_count_kv", 8u)
      .Add("llama.rope.dimension_count", 128u);
  auto m = Load(llama);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->json["architectures"], nlohmann::json({"MistralForCausalLM"}));
  EXPECT_EQ(m->json["head_dim"], 128);
  auto d = internal::DescribeModel(m->json, m->file);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->layers[0].sliding_window, 4096);

  GgufBytes moe;
  moe.Add("general.architecture", std::string("qwen2moe"))
      .Add("qwen2moe.block_count", 24u)
      .Add("qwen2moe.context_length", 8192u)
      .Add("qwen2moe.embedding_length", 2048u)
      .Add("qwen2moe.attention.head_count", 16u)
      .Add("qwen2moe.attention.head_count_kv", 16u)
      .Add("qwen2moe.expert_count", 60u);
  m = Load(moe);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->json["model_type"], "qwen2_moe");
  EXPECT_EQ(m->json["architectures"], nlohmann::json({"Qwen2MoeForCausalLM"}));
  EXPECT_EQ(m->json["num_experts"], 60);

  GgufBytes gemma;
  gemma.Add("general.architecture", std::string("gemma3"))
      .Add("gemma3.block_count", 34u)
      .Add("gemma3.context_length", 131072u)
      .Add("gemma3.embedding_length", 2560u)
      .Add("gemma3.attention.head_count", 8u)
      .Add("gemma3.attention.head_count_kv", 4u)
      .Add("gemma3.attention.key_length", 256u)
      .Add("gemma3.attention.sliding_window", 1024u);
  m = Load(gemma);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->json["model_type"], "gemma3_text");
  d = internal::DescribeModel(m->json, m->file);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->layers.size(), 34u);
  for (size_t i = 0; i < 34; ++i) {
    EXPECT_EQ(d->layers[i].sliding_window, (i + 1) % 6 == 0 ? 0 : 1024) << i;
    EXPECT_EQ(d->layers[i].head_size, 256) << i;
  }
}

// What the engine cannot build, or kvtopo does not convert, is refused with the reason; a
// malformed file with the byte where it stops.
TEST(Gguf, RefusalsAndMalformedFiles) {
  GgufBytes t5;
  t5.Add("general.architecture", std::string("t5"));
  EXPECT_EQ(LoadError(t5.Bytes()),
            "GGUF file 'F': architecture 't5' is not converted: model type t5 has no causal-LM "
            "class, so the engine raises \"Can't get gguf config for t5\"");
  GgufBytes other;
  other.Add("general.architecture", std::string("rwkv7"));
  EXPECT_EQ(LoadError(other.Bytes()),
            "GGUF file 'F': architecture 'rwkv7' is not one kvtopo converts (Transformers' GGUF "
            "reader raises 'GGUF model with architecture rwkv7 is not supported yet' for those "
            "it does not map); kvtopo converts llama, mistral, qwen2, qwen2_moe, qwen3, "
            "qwen3_moe, phi3, gemma2, gemma3_text, nemotron, stablelm, starcoder2, gpt2, bloom, "
            "mamba");
  GgufBytes per_layer = Qwen3Small();
  per_layer.Add("qwen3.attention.head_count_kv", std::vector<int32_t>{8, 8, 4});
  EXPECT_EQ(LoadError(per_layer.Bytes()),
            "GGUF file 'F': qwen3.attention.head_count_kv gives one count per layer, which the "
            "engine takes as num_key_value_heads whole and cannot divide among ranks; kvtopo "
            "does not plan it");
  GgufBytes long_list = Qwen3Small();
  long_list.Add("qwen3.attention.head_count_kv", std::vector<int32_t>(5000, 8));
  EXPECT_EQ(LoadError(long_list.Bytes()),
            "GGUF file 'F': qwen3.attention.head_count_kv holds 5000 elements or bytes, more "
            "than kvtopo keeps");
  GgufBytes none;
  EXPECT_EQ(LoadError(none.Bytes()),
            "GGUF file 'F': general.architecture is missing or not a string");

  const std::string good = Qwen3Small().Bytes();
  EXPECT_EQ(LoadError("GGUF"),
            "GGUF file 'F': needs 4 more bytes and the file has 0 left (at "
            "byte 4)");
  EXPECT_EQ(LoadError(good.substr(0, 200)),
            "GGUF file 'F': needs 22 more bytes and the file has 12 left (at byte 188)");
  EXPECT_EQ(LoadError(Qwen3Small().Bytes(1)),
            "GGUF file 'F': version 1: the engine's GGUF readers take versions 2 and 3, "
            "little-endian (a big-endian file's version reads byte-swapped) (at byte 8)");
  EXPECT_EQ(LoadError("GGUX" + good.substr(4)),
            "GGUF file 'F': does not start with 'GGUF' (at byte 4)");
  // More pairs than the file can hold; an unknown value type.
  std::string lying = good;
  const uint64_t pairs = uint64_t{1} << 60;
  std::memcpy(lying.data() + 16, &pairs, sizeof pairs);
  EXPECT_EQ(LoadError(lying).substr(0, 60),
            "GGUF file 'F': 1152921504606846976 metadata pairs cannot fit");
  std::string typed = good;
  const uint32_t bad_type = 13;
  std::memcpy(typed.data() + 24 + 8 + std::strlen("general.architecture"), &bad_type,
              sizeof bad_type);
  EXPECT_EQ(LoadError(typed),
            "GGUF file 'F': value type 13 is not one of GGUF's (0 to 12) (at "
            "byte 56)");
  // A file not named .gguf is GGUF by its magic bytes.
  EXPECT_EQ(LoadError(good, ".bin"), "(loaded)");
  // The config built from the file is named by the file, with the converted config's fields.
  GgufBytes seven = Qwen3Small();
  seven.Add("qwen3.attention.head_count_kv", 7u);
  const std::string path = WriteFile(seven.Bytes());
  const auto plan = PlanFile(path, 16 * kGiB);
  std::filesystem::remove(path);
  EXPECT_EQ(plan.status().message(), "GGUF file '" + path +
                                         "': field 'num_key_value_heads' is 7, which does not "
                                         "divide num_attention_heads 16");
  // So is one without the .gguf name, told by its magic bytes as the loader tells it.
  const std::string bin = WriteFile(seven.Bytes(), ".bin");
  const auto bin_plan = PlanFile(bin, 16 * kGiB);
  std::filesystem::remove(bin);
  EXPECT_EQ(bin_plan.status().message(), "GGUF file '" + bin +
                                             "': field 'num_key_value_heads' is 7, which does "
                                             "not divide num_attention_heads 16");
}

// The metadata is kept in memory: at most 2^20 values. 257 arrays of 4,096 pass it at the first
// element of the last array: 24 header bytes, 256 pairs of 16,408 bytes plus their keys (1,426),
// and the last pair's 30 bytes before its first element: byte 4,201,928.
TEST(Gguf, MetadataKeptIsBounded) {
  GgufBytes g;
  for (int i = 0; i < 257; ++i) g.Add("a.k" + std::to_string(i), std::vector<int32_t>(4096, 1));
  const std::string path = WriteFile(g.Bytes());
  auto meta = internal::ReadGgufMetadata(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(meta.ok());
  EXPECT_EQ(meta.status().message(),
            "GGUF file '" + path +
                "': its metadata holds more than 1048576 values or 67108864 bytes of strings, "
                "more than kvtopo keeps (at byte 4201928)");
}

// The reader keeps small arrays and skips a vocabulary, reporting its size.
TEST(Gguf, MetadataArraysAndStrings) {
  GgufBytes g;
  g.Add("a.ints", std::vector<int32_t>{1, -2, 3})
      .Add("a.names", std::vector<std::string>{"x", "y"})
      .Add("tokenizer.ggml.tokens", std::vector<std::string>(5000, "tok"))
      .Add("a.text", std::string("hello"));
  const std::string path = WriteFile(g.Bytes());
  auto meta = internal::ReadGgufMetadata(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_EQ(*meta, nlohmann::json::parse(R"({
    "a.ints": [1, -2, 3], "a.names": ["x", "y"], "tokenizer.ggml.tokens": {"gguf_skipped": 5000},
    "a.text": "hello"})"));
}

// Raw metadata pairs of any value type, for the reader alone.
class RawPairs {
 public:
  template <typename T>
  RawPairs& Scalar(const std::string& key, uint32_t type, T v) {
    Key(key, type);
    Put(v);
    return *this;
  }
  RawPairs& Text(const std::string& key, const std::string& text) {
    Key(key, 8);
    PutString(text);
    return *this;
  }
  // An array header: element type and count; its elements follow through Element/ElementText.
  RawPairs& Array(const std::string& key, uint32_t element, uint64_t n) {
    Key(key, 9);
    return ArrayHeader(element, n);
  }
  RawPairs& ArrayHeader(uint32_t element, uint64_t n) {
    Put(element);
    Put(n);
    return *this;
  }
  template <typename T>
  RawPairs& Element(T v) {
    Put(v);
    return *this;
  }
  RawPairs& ElementText(const std::string& text) {
    PutString(text);
    return *this;
  }
  std::string Bytes() const {
    std::string out = "GGUF";
    AppendBytes(out, uint32_t{3});
    AppendBytes(out, uint64_t{0});
    AppendBytes(out, pairs_);
    return out + body_;
  }
  Result<nlohmann::json> Read() const {
    std::istringstream in(Bytes());
    return internal::ReadGgufMetadata(in, Bytes().size(), "F");
  }

 private:
  template <typename T>
  void Put(T v) {
    AppendBytes(body_, v);
  }
  void PutString(const std::string& text) {
    Put(static_cast<uint64_t>(text.size()));
    body_ += text;
  }
  void Key(const std::string& key, uint32_t type) {
    ++pairs_;
    PutString(key);
    Put(type);
  }
  uint64_t pairs_ = 0;
  std::string body_;
};

// Every value type GGUF has, as the engine's readers take them: integers of each width and sign,
// floats (not finite: null), bools (any byte but 0 is true, as numpy's bool reads it), arrays of
// arrays, long strings and arrays skipped with their size.
TEST(Gguf, EveryValueType) {
  RawPairs raw;
  raw.Scalar("u8", 0, uint8_t{200})
      .Scalar("i8", 1, int8_t{-5})
      .Scalar("u16", 2, uint16_t{60000})
      .Scalar("i16", 3, int16_t{-300})
      .Scalar("u32", 4, uint32_t{4000000000})
      .Scalar("i32", 5, int32_t{-70000})
      .Scalar("f32", 6, 0.5f)
      .Scalar("nan", 6, std::nanf(""))
      .Scalar("yes", 7, uint8_t{1})
      .Scalar("two", 7, uint8_t{2})
      .Scalar("no", 7, uint8_t{0})
      .Scalar("u64", 10, uint64_t{9223372036854775809u})
      .Scalar("i64", 11, int64_t{-1099511627776})
      .Scalar("f64", 12, 0.25)
      .Array("bools", 7, 2)
      .Element(uint8_t{0})
      .Element(uint8_t{1})
      .Array("nested", 9, 2)
      .ArrayHeader(4, 2)
      .Element(uint32_t{1})
      .Element(uint32_t{2})
      .ArrayHeader(8, 1)
      .ElementText("x")
      .Text("long", std::string(internal::kMaxGgufStringKept + 1, 'a'))
      .Array("many", 10, internal::kMaxGgufArrayKept + 1);
  for (uint64_t i = 0; i <= internal::kMaxGgufArrayKept; ++i) raw.Element(uint64_t{i});
  auto meta = raw.Read();
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_EQ(*meta, nlohmann::json::parse(R"({
    "u8": 200, "i8": -5, "u16": 60000, "i16": -300, "u32": 4000000000, "i32": -70000,
    "f32": 0.5, "nan": null, "yes": true, "two": true, "no": false,
    "u64": 9223372036854775809, "i64": -1099511627776, "f64": 0.25, "bools": [false, true],
    "nested": [[1, 2], ["x"]], "long": {"gguf_skipped": 1048577},
    "many": {"gguf_skipped": 4097}})"));
}

// Files the engine's readers refuse, refused with the byte where the pair or value starts: a key
// given twice (gguf-py raises), text that is not UTF-8 (gguf-py decodes keys, Transformers every
// string value), arrays nested too deep, of an unknown element type or longer than the file.
TEST(Gguf, MalformedValues) {
  auto error = [](const RawPairs& raw) {
    auto meta = raw.Read();
    return meta.ok() ? std::string("(read)") : std::string(meta.status().message());
  };
  // 24 header bytes; the first pair "k" (8 + 1 bytes of key, 4 of type, 4 of value) ends at 41.
  EXPECT_EQ(error(RawPairs().Scalar("k", 4, uint32_t{1}).Scalar("k", 4, uint32_t{2})),
            "GGUF file 'F': key 'k' is given twice (first at byte 24): the engine's GGUF reader "
            "(gguf-py) raises on a duplicate key (at byte 41)");
  EXPECT_EQ(error(RawPairs().Scalar("k", 4, uint32_t{1}).Text("n\xff", "x")),
            "GGUF file 'F': a key is not UTF-8 text, which the engine's GGUF reader (gguf-py) "
            "raises on as it decodes it (at byte 41)");
  for (const char* bad : {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
    EXPECT_EQ(error(RawPairs().Text("name", std::string("ok ") + bad)),
              "GGUF file 'F': 'name' holds a string that is not UTF-8 text: Transformers' GGUF "
              "reader decodes every string value as UTF-8 and raises (UnicodeDecodeError) (at "
              "byte 24)")
        << bad;
  }
  EXPECT_EQ(error(RawPairs().Text("name", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82")), "(read)");
  EXPECT_EQ(error(RawPairs().Array("names", 8, 1).ElementText("\xff")),
            "GGUF file 'F': 'names' holds a string that is not UTF-8 text: Transformers' GGUF "
            "reader decodes every string value as UTF-8 and raises (UnicodeDecodeError) (at "
            "byte 24)");
  // Long strings and long arrays are not kept, but their text is checked all the same: read in
  // 64 KiB chunks, a sequence cut by a chunk's end is whole in the next.
  const std::string bad_text =
      "GGUF file 'F': 'long' holds a string that is not UTF-8 text: Transformers' GGUF reader "
      "decodes every string value as UTF-8 and raises (UnicodeDecodeError) (at byte 24)";
  const size_t chunk = size_t{64} << 10;
  std::string text(internal::kMaxGgufStringKept + 7, 'a');
  for (size_t at : {chunk - 1, 2 * chunk - 2, 3 * chunk - 3}) {
    text.replace(at, 4, "\xf0\x9f\x99\x82");
  }
  EXPECT_EQ(error(RawPairs().Text("long", text)), "(read)");
  for (size_t at : {size_t{0}, chunk - 1, text.size() - 1}) {
    std::string bad = text;
    bad[at] = '\xff';
    EXPECT_EQ(error(RawPairs().Text("long", bad)), bad_text) << at;
  }
  std::string cut = text;
  cut.back() = '\xe2';  // a sequence the string's end cuts short
  EXPECT_EQ(error(RawPairs().Text("long", cut)), bad_text);
  RawPairs vocabulary;
  vocabulary.Array("long", 8, internal::kMaxGgufArrayKept + 1);
  for (uint64_t i = 0; i <= internal::kMaxGgufArrayKept; ++i) {
    vocabulary.ElementText(i == 4000 ? "\xc3(" : "tok");
  }
  EXPECT_EQ(error(vocabulary), bad_text);
  RawPairs nested;
  nested.Array("long", 9, internal::kMaxGgufArrayKept + 1);
  for (uint64_t i = 0; i <= internal::kMaxGgufArrayKept; ++i) {
    nested.ArrayHeader(8, 1).ElementText(i == 7 ? "\xed\xa0\x80" : "x");
  }
  EXPECT_EQ(error(nested), bad_text);
  // The alignment the tensors are laid out by: uint32, a power of two.
  EXPECT_EQ(error(RawPairs().Scalar("general.alignment", 4, uint32_t{64})), "(read)");
  EXPECT_EQ(error(RawPairs().Scalar("general.alignment", 4, uint32_t{48})),
            "GGUF file 'F': general.alignment 48 is not a power of two: gguf-py raises 'Invalid "
            "alignment: must be a non-zero power of two' (at byte 24)");
  EXPECT_EQ(error(RawPairs().Scalar("general.alignment", 4, uint32_t{0})).substr(0, 51),
            "GGUF file 'F': general.alignment 0 is not a power o");
  EXPECT_EQ(error(RawPairs().Scalar("general.alignment", 10, uint64_t{32})),
            "GGUF file 'F': general.alignment is of value type 10, not uint32 (4): gguf-py raises "
            "'Bad type for general.alignment field' (at byte 24)");
  RawPairs deep;
  deep.Array("deep", 9, 1);
  for (int i = 0; i < 4; ++i) deep.ArrayHeader(9, 1);
  EXPECT_EQ(error(deep), "GGUF file 'F': arrays are nested deeper than 4 (at byte 88)");
  EXPECT_EQ(error(RawPairs().Array("odd", 13, 1)),
            "GGUF file 'F': array element type 13 is not one of GGUF's (0 to 12) (at byte 51)");
  EXPECT_EQ(error(RawPairs().Array("short", 5, 3).Element(int32_t{1})),
            "GGUF file 'F': an array of 3 elements runs past the end (4 bytes left) (at byte 53)");
  EXPECT_EQ(error(RawPairs().Text("s", "abc").Scalar("t", 8, uint64_t{100})),
            "GGUF file 'F': a string of 100 bytes runs past the end (0 left) (at byte 69)");
  const auto missing = internal::ReadGgufMetadata(std::filesystem::path("/nonexistent/x.gguf"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message().substr(0, 48),
            "cannot read GGUF file '/nonexistent/x.gguf': No ");
}

}  // namespace
}  // namespace kvtopo
