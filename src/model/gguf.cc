#include "model/gguf.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <type_traits>
#include <utility>

namespace kvtopo::internal {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is read as little-endian");

// GGUF's value types (ggml's gguf.h, enum gguf_type).
enum GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// Bytes of one scalar of `type`; 0 for strings and arrays.
uint64_t ScalarBytes(uint32_t type) {
  switch (type) {
    case kUint8:
    case kInt8:
    case kBool:
      return 1;
    case kUint16:
    case kInt16:
      return 2;
    case kUint32:
    case kInt32:
    case kFloat32:
      return 4;
    case kUint64:
    case kInt64:
    case kFloat64:
      return 8;
    default:
      return 0;
  }
}

// Nested arrays deeper than this are refused (the format allows arrays of arrays).
constexpr int kMaxArrayDepth = 4;
constexpr uint64_t kMaxKeyBytes = 65535;  // the format's bound on a key
constexpr uint64_t kMaxKeptValues = uint64_t{1} << 20;
constexpr uint64_t kMaxKeptBytes = uint64_t{64} << 20;

// Whether `s` is UTF-8 as Python's strict decoder takes it: no overlong forms, no surrogates
// (U+D800 to U+DFFF), nothing past U+10FFFF.
bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the byte after the lead
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (s.size() - i <= static_cast<size_t>(extra)) return false;
    for (int k = 1; k <= extra; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return false;
    }
    i += static_cast<size_t>(extra) + 1;
  }
  return true;
}

// Where `s` stops holding whole sequences: its size, or the start of a multi-byte sequence its
// last bytes begin and do not finish (a lead byte's count of bytes past the end).
size_t Utf8CompleteEnd(std::string_view s) {
  for (size_t k = 1; k <= 3 && k <= s.size(); ++k) {
    const auto c = static_cast<unsigned char>(s[s.size() - k]);
    if (c < 0x80) break;
    if (c < 0xC0) continue;  // a continuation byte: look further back
    const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    return len > k ? s.size() - k : s.size();
  }
  return s.size();
}

// Reads the file front to back, every read checked against the file's size.
class GgufReader {
 public:
  GgufReader(std::istream& in, uint64_t size, std::string file)
      : in_(in), size_(size), file_(std::move(file)) {}

  uint64_t offset() const { return offset_; }
  uint64_t remaining() const { return size_ - offset_; }

  Status Error(std::string_view what) const { return ErrorAt(offset_, what); }
  Status ErrorAt(uint64_t offset, std::string_view what) const {
    return InvalidArgument(fmt::format("GGUF file '{}': {} (at byte {})", file_, what, offset));
  }

  Status Bytes(void* out, uint64_t n) {
    if (n > remaining()) {
      return Error(fmt::format("needs {} more bytes and the file has {} left", n, remaining()));
    }
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
    if (!in_) return Error("cannot be read");
    offset_ += n;
    return Status::Ok();
  }
  Status Skip(uint64_t n) {
    if (n > remaining()) {
      return Error(fmt::format("needs {} more bytes and the file has {} left", n, remaining()));
    }
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    if (!in_) return Error("cannot be read");
    offset_ += n;
    return Status::Ok();
  }
  // Reads a string of `n` bytes that is not kept, in chunks, and notes whether it is UTF-8 text
  // (Transformers' GGUF reader decodes every string value it parses, long ones too).
  Status SkipText(uint64_t n) {
    if (n > remaining()) {
      return Error(fmt::format("needs {} more bytes and the file has {} left", n, remaining()));
    }
    constexpr uint64_t kChunk = uint64_t{64} << 10;
    std::string carry;  // a sequence the previous chunk cut short: at most 3 bytes
    std::string buf;
    while (n > 0) {
      const uint64_t take = std::min(n, kChunk);
      buf.assign(carry);
      buf.resize(carry.size() + static_cast<size_t>(take));
      KVTOPO_RETURN_IF_ERROR(Bytes(buf.data() + carry.size(), take));
      n -= take;
      const size_t cut = n > 0 ? Utf8CompleteEnd(buf) : buf.size();
      if (!IsUtf8(std::string_view(buf).substr(0, cut))) NoteSkippedTextNotUtf8();
      carry.assign(buf, cut, std::string::npos);
    }
    return Status::Ok();
  }
  // Notes text that is not UTF-8 in a value not kept; Take... reports it once, and forgets it.
  void NoteSkippedTextNotUtf8() { skipped_text_not_utf8_ = true; }
  bool TakeSkippedTextNotUtf8() { return std::exchange(skipped_text_not_utf8_, false); }
  template <typename T>
  Result<T> Scalar() {
    T v{};
    KVTOPO_RETURN_IF_ERROR(Bytes(&v, sizeof v));
    return v;
  }
  // Counts a kept value of `bytes` bytes against the reader's budget: a file's metadata is kept
  // in memory, so at most kMaxKeptValues values and kMaxKeptBytes bytes of strings.
  Status Keep(uint64_t bytes) {
    ++kept_values_;
    kept_bytes_ += bytes;
    if (kept_values_ > kMaxKeptValues || kept_bytes_ > kMaxKeptBytes) {
      return Error(
          fmt::format("its metadata holds more than {} values or {} bytes of strings, "
                      "more than kvtopo keeps",
                      kMaxKeptValues, kMaxKeptBytes));
    }
    return Status::Ok();
  }
  // A count or length (64 bits since version 2).
  Result<uint64_t> Count() { return Scalar<uint64_t>(); }
  Result<std::string> String(uint64_t max_bytes, std::string_view what) {
    KVTOPO_ASSIGN_OR_RETURN(const uint64_t n, Count());
    if (n > max_bytes)
      return Error(fmt::format("{} of {} bytes is longer than {}", what, n, max_bytes));
    std::string s(static_cast<size_t>(n), '\0');
    KVTOPO_RETURN_IF_ERROR(Bytes(s.data(), n));
    return s;
  }

 private:
  std::istream& in_;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
  std::string file_;
  uint64_t kept_values_ = 0;
  uint64_t kept_bytes_ = 0;
  bool skipped_text_not_utf8_ = false;
};

Result<nlohmann::json> ReadValue(GgufReader& r, uint32_t type, int depth);

// Whether every string `v` holds (itself, or an array's at any depth) is UTF-8.
bool HoldsOnlyUtf8(const nlohmann::json& v) {
  if (v.is_string()) return IsUtf8(v.get_ref<const std::string&>());
  if (v.is_array()) {
    return std::all_of(v.begin(), v.end(),
                       [](const nlohmann::json& e) { return HoldsOnlyUtf8(e); });
  }
  return true;
}

// One scalar of C++ type T as JSON (a float that is not finite as null).
template <typename T>
Result<nlohmann::json> ScalarJson(GgufReader& r) {
  KVTOPO_ASSIGN_OR_RETURN(const T v, r.Scalar<T>());
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) return nlohmann::json();
    return nlohmann::json(static_cast<double>(v));
  } else {
    return nlohmann::json(v);
  }
}

Result<nlohmann::json> ReadScalar(GgufReader& r, uint32_t type) {
  switch (type) {
    case kUint8:
      return ScalarJson<uint8_t>(r);
    case kInt8:
      return ScalarJson<int8_t>(r);
    case kUint16:
      return ScalarJson<uint16_t>(r);
    case kInt16:
      return ScalarJson<int16_t>(r);
    case kUint32:
      return ScalarJson<uint32_t>(r);
    case kInt32:
      return ScalarJson<int32_t>(r);
    case kUint64:
      return ScalarJson<uint64_t>(r);
    case kInt64:
      return ScalarJson<int64_t>(r);
    case kFloat32:
      return ScalarJson<float>(r);
    case kFloat64:
      return ScalarJson<double>(r);
    case kBool: {  // gguf-py reads the byte as numpy's bool: any byte but 0 is true
      KVTOPO_ASSIGN_OR_RETURN(const uint8_t v, r.Scalar<uint8_t>());
      return nlohmann::json(v != 0);
    }
    default:
      return r.Error(fmt::format("value type {} is not one of GGUF's (0 to 12)", type));
  }
}

Result<nlohmann::json> ReadValue(GgufReader& r, uint32_t type, int depth) {
  if (type == kString) {
    KVTOPO_ASSIGN_OR_RETURN(const uint64_t n, r.Count());
    if (n > r.remaining()) {
      return r.Error(
          fmt::format("a string of {} bytes runs past the end ({} left)", n, r.remaining()));
    }
    if (n > kMaxGgufStringKept) {
      KVTOPO_RETURN_IF_ERROR(r.SkipText(n));
      return nlohmann::json{{"gguf_skipped", n}};
    }
    KVTOPO_RETURN_IF_ERROR(r.Keep(n));
    std::string s(static_cast<size_t>(n), '\0');
    KVTOPO_RETURN_IF_ERROR(r.Bytes(s.data(), n));
    return nlohmann::json(std::move(s));
  }
  if (type != kArray) {
    KVTOPO_RETURN_IF_ERROR(r.Keep(0));
    return ReadScalar(r, type);
  }
  if (depth >= kMaxArrayDepth) {
    return r.Error(fmt::format("arrays are nested deeper than {}", kMaxArrayDepth));
  }
  KVTOPO_ASSIGN_OR_RETURN(const uint32_t element, r.Scalar<uint32_t>());
  KVTOPO_ASSIGN_OR_RETURN(const uint64_t n, r.Count());
  const uint64_t least = element == kString ? 8 : ScalarBytes(element);
  if (element != kArray && least == 0) {
    return r.Error(fmt::format("array element type {} is not one of GGUF's (0 to 12)", element));
  }
  if (least > 0 && n > r.remaining() / least) {
    return r.Error(
        fmt::format("an array of {} elements runs past the end ({} bytes left)", n, r.remaining()));
  }
  if (n > kMaxGgufArrayKept) {
    if (element != kString && element != kArray) {
      KVTOPO_RETURN_IF_ERROR(r.Skip(n * least));
    } else {
      for (uint64_t i = 0; i < n; ++i) {
        if (element == kString) {
          KVTOPO_ASSIGN_OR_RETURN(const uint64_t bytes, r.Count());
          KVTOPO_RETURN_IF_ERROR(r.SkipText(bytes));
        } else {
          KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json inner, ReadValue(r, kArray, depth + 1));
          if (!HoldsOnlyUtf8(inner)) r.NoteSkippedTextNotUtf8();
        }
      }
    }
    return nlohmann::json{{"gguf_skipped", n}};
  }
  nlohmann::json out = nlohmann::json::array();
  for (uint64_t i = 0; i < n; ++i) {
    KVTOPO_ASSIGN_OR_RETURN(nlohmann::json v, ReadValue(r, element, depth + 1));
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace

bool IsGgufFile(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  std::array<char, 4> magic{};
  in.read(magic.data(), magic.size());
  return in && std::memcmp(magic.data(), "GGUF", 4) == 0;
}

Result<nlohmann::json> ReadGgufMetadata(std::istream& in, uint64_t size, const std::string& file) {
  GgufReader r(in, size, file);
  std::array<char, 4> magic{};
  KVTOPO_RETURN_IF_ERROR(r.Bytes(magic.data(), magic.size()));
  if (std::memcmp(magic.data(), "GGUF", 4) != 0) return r.Error("does not start with 'GGUF'");
  KVTOPO_ASSIGN_OR_RETURN(const uint32_t version, r.Scalar<uint32_t>());
  if (version != 2 && version != 3) {
    return r.Error(
        fmt::format("version {}: the engine's GGUF readers take versions 2 and 3, "
                    "little-endian (a big-endian file's version reads byte-swapped)",
                    version));
  }
  KVTOPO_ASSIGN_OR_RETURN(const uint64_t tensors, r.Count());
  (void)tensors;  // the tensor infos follow the metadata and are not read
  KVTOPO_ASSIGN_OR_RETURN(const uint64_t pairs, r.Count());
  // A pair takes at least a key length, a type and one byte of value.
  constexpr uint64_t kLeast = 8 + 4 + 1;
  if (pairs > r.remaining() / kLeast) {
    return r.Error(
        fmt::format("{} metadata pairs cannot fit in the {} bytes left", pairs, r.remaining()));
  }
  nlohmann::json out = nlohmann::json::object();
  std::map<std::string, uint64_t, std::less<>> starts;  // each key's pair, by its first byte
  for (uint64_t i = 0; i < pairs; ++i) {
    const uint64_t start = r.offset();
    KVTOPO_ASSIGN_OR_RETURN(std::string key, r.String(kMaxKeyBytes, "a key"));
    // gguf-py's GGUFReader decodes each key as UTF-8 and raises on a key given twice;
    // Transformers' GGUF reader then decodes every string value it parses.
    if (!IsUtf8(key)) {
      return r.ErrorAt(start,
                       "a key is not UTF-8 text, which the engine's GGUF reader (gguf-py) "
                       "raises on as it decodes it");
    }
    if (const auto first = starts.find(key); first != starts.end()) {
      return r.ErrorAt(start, fmt::format("key '{}' is given twice (first at byte {}): the "
                                          "engine's GGUF reader (gguf-py) raises on a duplicate "
                                          "key",
                                          key, first->second));
    }
    starts.emplace(key, start);
    KVTOPO_ASSIGN_OR_RETURN(const uint32_t type, r.Scalar<uint32_t>());
    KVTOPO_ASSIGN_OR_RETURN(nlohmann::json value, ReadValue(r, type, 0));
    if (r.TakeSkippedTextNotUtf8() || !HoldsOnlyUtf8(value)) {
      return r.ErrorAt(start, fmt::format("'{}' holds a string that is not UTF-8 text: "
                                          "Transformers' GGUF reader decodes every string value "
                                          "as UTF-8 and raises (UnicodeDecodeError)",
                                          key));
    }
    if (key == "general.alignment") {
      // gguf-py's GGUFReader checks the alignment it lays the tensors out by.
      if (type != kUint32) {
        return r.ErrorAt(start, fmt::format("general.alignment is of value type {}, not uint32 "
                                            "(4): gguf-py raises 'Bad type for general.alignment "
                                            "field'",
                                            type));
      }
      const uint64_t alignment = value.get<uint64_t>();
      if (!std::has_single_bit(alignment)) {
        return r.ErrorAt(start, fmt::format("general.alignment {} is not a power of two: gguf-py "
                                            "raises 'Invalid alignment: must be a non-zero power "
                                            "of two'",
                                            alignment));
      }
    }
    out[std::move(key)] = std::move(value);
  }
  return out;
}

Result<nlohmann::json> ReadGgufMetadata(const std::filesystem::path& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    return NotFound(fmt::format("cannot read GGUF file '{}': {}", path.string(), ec.message()));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("cannot read GGUF file '{}'", path.string()));
  return ReadGgufMetadata(in, size, path.string());
}

}  // namespace kvtopo::internal

namespace kvtopo::internal {
namespace {

// One GGUF architecture as Transformers reads it: the keys after `{architecture}.` and the
// config field each sets ("" : read and dropped), the model type's causal-LM class.
struct GgufSection {
  std::string_view architecture;  // the model type after the reader's renames
  std::string_view causal_lm;     // MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type]
  std::vector<std::pair<std::string_view, std::string_view>> keys;
};

// The keys most sections share (GGUF_CONFIG_MAPPING's llama-like entries).
std::vector<std::pair<std::string_view, std::string_view>> CommonKeys(
    std::string_view rope_dimension, std::string_view rms_eps = "rms_norm_eps") {
  return {{"context_length", "max_position_embeddings"},
          {"block_count", "num_hidden_layers"},
          {"feed_forward_length", "intermediate_size"},
          {"embedding_length", "hidden_size"},
          {"rope.dimension_count", rope_dimension},
          {"rope.freq_base", "rope_theta"},
          {"attention.head_count", "num_attention_heads"},
          {"attention.head_count_kv", "num_key_value_heads"},
          {"attention.layer_norm_rms_epsilon", rms_eps},
          {"vocab_size", "vocab_size"}};
}

std::vector<std::pair<std::string_view, std::string_view>> With(
    std::vector<std::pair<std::string_view, std::string_view>> keys,
    std::initializer_list<std::pair<std::string_view, std::string_view>> more) {
  keys.insert(keys.end(), more.begin(), more.end());
  return keys;
}

const std::vector<GgufSection>& GgufSections() {
  static const std::vector<GgufSection> kSections = {
      {"llama", "LlamaForCausalLM", CommonKeys("head_dim")},
      {"mistral", "MistralForCausalLM", CommonKeys("head_dim")},
      {"qwen2", "Qwen2ForCausalLM", CommonKeys("")},
      {"qwen2_moe", "Qwen2MoeForCausalLM",
       With(CommonKeys(""),
            {{"expert_count", "num_experts"}, {"expert_used_count", "num_experts_per_tok"}})},
      {"qwen3", "Qwen3ForCausalLM", CommonKeys("")},
      {"qwen3_moe", "Qwen3MoeForCausalLM",
       With(CommonKeys(""), {{"attention.key_length", "head_dim"},
                             {"expert_count", "num_experts"},
                             {"expert_used_count", "num_experts_per_tok"}})},
      {"phi3", "Phi3ForCausalLM", CommonKeys("")},
      {"gemma2", "Gemma2ForCausalLM",
       With(CommonKeys(""), {{"attention.key_length", "head_dim"},
                             {"attention.sliding_window", "sliding_window"}})},
      {"gemma3_text", "Gemma3ForCausalLM",
       With(CommonKeys(""), {{"attention.key_length", "head_dim"},
                             {"attention.sliding_window", "sliding_window"}})},
      {"nemotron", "NemotronForCausalLM", CommonKeys("", "norm_eps")},
      {"stablelm",
       "StableLmForCausalLM",
       {{"context_length", "max_position_embeddings"},
        {"block_count", "num_hidden_layers"},
        {"feed_forward_length", "intermediate_size"},
        {"embedding_length", "hidden_size"},
        {"rope.dimension_count", ""},
        {"attention.head_count", "num_attention_heads"},
        {"attention.head_count_kv", "num_key_value_heads"},
        {"attention.layer_norm_epsilon", "layer_norm_eps"},
        {"vocab_size", "vocab_size"}}},
      {"starcoder2",
       "Starcoder2ForCausalLM",
       {{"block_count", "num_hidden_layers"},
        {"context_length", "max_position_embeddings"},
        {"embedding_length", "hidden_size"},
        {"feed_forward_length", "intermediate_size"},
        {"attention.head_count", "num_attention_heads"},
        {"attention.head_count_kv", "num_key_value_heads"},
        {"attention.layer_norm_epsilon", "norm_epsilon"}}},
      {"gpt2",
       "GPT2LMHeadModel",
       {{"block_count", "n_layer"},
        {"context_length", "n_ctx"},
        {"embedding_length", "n_embd"},
        {"feed_forward_length", "feed_forward_length"},
        {"attention.head_count", "n_head"},
        {"attention.layer_norm_epsilon", "layer_norm_epsilon"}}},
      {"bloom",
       "BloomForCausalLM",
       {{"block_count", "n_layer"},
        {"embedding_length", "hidden_size"},
        {"attention.head_count", "n_head"},
        {"vocab_size", "vocab_size"},
        {"attention.layer_norm_epsilon", "layer_norm_epsilon"}}},
      {"mamba",
       "MambaForCausalLM",
       {{"vocab_size", "vocab_size"},
        {"context_length", "max_position_embeddings"},
        {"embedding_length", "hidden_size"},
        {"attention.layer_norm_rms_epsilon", "layer_norm_epsilon"},
        {"block_count", "num_hidden_layers"},
        {"ssm.conv_kernel", "conv_kernel"},
        {"ssm.state_size", "state_size"},
        {"ssm.time_step_rank", "time_step_rank"},
        {"ssm.inner_size", "intermediate_size"}}},
  };
  return kSections;
}

// Architectures Transformers' GGUF reader knows and kvtopo does not convert, and why.
constexpr std::pair<std::string_view, std::string_view> kGgufNotConverted[] = {
    {"t5",
     "model type t5 has no causal-LM class, so the engine raises \"Can't get gguf config "
     "for t5\""},
    {"t5encoder", "an encoder has no causal-LM class (\"Can't get gguf config\")"},
    {"falcon",
     "Transformers maps head_count_kv to num_key_value_heads, and kvtopo has not verified how "
     "FalconConfig (num_kv_heads, multi_query) then sets the K/V heads"},
    {"gemma4",
     "Transformers maps key_length to global_head_dim only, and kvtopo has not verified the "
     "sliding layers' head size the config class then takes"},
    {"lfm2",
     "the mapping carries no conv_dim, which the engine's LFM2 model reads for its convolution "
     "state and kvtopo does not default"},
    {"deci",
     "its per-layer attention comes from block configs the GGUF mapping does not carry; kvtopo "
     "has not verified what the engine builds"},
};

// A value as Transformers' reader keeps it: a one-element list becomes its element.
nlohmann::json Unwrapped(const nlohmann::json& v) {
  return v.is_array() && v.size() == 1 ? v[0] : v;
}

}  // namespace

Result<nlohmann::json> GgufToConfig(const nlohmann::json& metadata, const std::string& file) {
  auto error = [&](std::string_view what) {
    return InvalidArgument(fmt::format("GGUF file '{}': {}", file, what));
  };
  const auto arch_it = metadata.find("general.architecture");
  if (arch_it == metadata.end() || !Unwrapped(*arch_it).is_string()) {
    return error("general.architecture is missing or not a string");
  }
  const std::string arch = Unwrapped(*arch_it).get<std::string>();
  std::string updated = arch;
  // load_gguf_checkpoint's renames: llama named exactly "mistral" is Mistral; the MoE names
  // gain an underscore (qwen2moe -> qwen2_moe); Gemma 3 reads as its text model.
  const auto name_it = metadata.find("general.name");
  const bool named_mistral = name_it != metadata.end() && Unwrapped(*name_it).is_string() &&
                             Unwrapped(*name_it).get<std::string>() == "mistral";
  if (arch.find("llama") != std::string::npos && named_mistral) updated = "mistral";
  for (const auto& [from, to] :
       {std::pair<std::string_view, std::string_view>{"qwen2moe", "qwen2_moe"},
        {"qwen3moe", "qwen3_moe"}}) {
    if (const size_t at = updated.find(from); at != std::string::npos) {
      updated.replace(at, from.size(), to);
    }
  }
  const std::string model_type = updated == "gemma3" ? "gemma3_text" : updated;
  for (const auto& [name, why] : kGgufNotConverted) {
    if (updated == name) {
      return error(fmt::format("architecture '{}' is not converted: {}", arch, why));
    }
  }
  const auto& sections = GgufSections();
  const auto section = std::find_if(sections.begin(), sections.end(), [&](const GgufSection& s) {
    return s.architecture == model_type;
  });
  if (section == sections.end()) {
    std::vector<std::string_view> names;
    for (const GgufSection& s : sections) names.push_back(s.architecture);
    return error(fmt::format(
        "architecture '{}' is not one kvtopo converts (Transformers' GGUF reader raises 'GGUF "
        "model with architecture {} is not supported yet' for those it does not map); kvtopo "
        "converts {}",
        arch, arch, fmt::join(names, ", ")));
  }
  nlohmann::json config = {{"architectures", {section->causal_lm}}, {"model_type", model_type}};
  const std::string prefix = arch + ".";
  for (const auto& [key, value] : metadata.items()) {
    if (!key.starts_with(prefix)) continue;
    const std::string_view rest = std::string_view(key).substr(prefix.size());
    const auto field = std::find_if(section->keys.begin(), section->keys.end(),
                                    [&](const auto& k) { return k.first == rest; });
    if (field == section->keys.end() || field->second.empty()) continue;
    nlohmann::json v = Unwrapped(value);
    if (v.is_object()) {
      return error(fmt::format("{} holds {} elements or bytes, more than kvtopo keeps", key,
                               v.value("gguf_skipped", uint64_t{0})));
    }
    if (rest == "attention.head_count_kv" && v.is_array()) {
      return error(fmt::format(
          "{} gives one count per layer, which the engine takes as num_key_value_heads whole and "
          "cannot divide among ranks; kvtopo does not plan it",
          key));
    }
    config[std::string(field->second)] = std::move(v);
  }
  // The vocabulary's size from the tokenizer when the file states none.
  if (!config.contains("vocab_size")) {
    const auto tokens = metadata.find("tokenizer.ggml.tokens");
    if (tokens != metadata.end()) {
      if (tokens->is_array()) config["vocab_size"] = tokens->size();
      if (tokens->is_object()) config["vocab_size"] = tokens->value("gguf_skipped", uint64_t{0});
    }
  }
  return config;
}

}  // namespace kvtopo::internal
