// The `vllm serve` flags kvtopo accepts without planning with them (profiles/vllm-flags.json),
// and the checks the engine's parser and config make of their values (docs/launch-options.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "internal/ascii_case.h"
#include "internal/json_text.h"
#include "internal/pydantic.h"
#include "internal/units.h"
#include "kvtopo/launch_options.h"
#include "model/config_fields.h"
#include "model/embedded_profiles.h"

namespace kvtopo {
namespace {

VllmFlag::Bounds ReadBounds(const nlohmann::json& e) {
  VllmFlag::Bounds b;
  const auto number = [&](const char* key) -> std::optional<double> {
    if (!e.contains(key) || !e[key].is_number()) return std::nullopt;
    return e[key].get<double>();
  };
  b.min = number("min");
  b.above = number("above");
  b.max = number("max");
  b.below = number("below");
  return b;
}

std::vector<std::string> ReadChoices(const nlohmann::json& e) {
  std::vector<std::string> out;
  if (!e.contains("choices") || !e["choices"].is_array()) return out;
  for (const nlohmann::json& c : e["choices"]) {
    if (c.is_string()) out.push_back(c.get<std::string>());
  }
  return out;
}

// profiles/vllm-flags.json as embedded. The file is checked in and embedded at build time; a
// malformed copy is a build defect that the registry tests catch, so it reads as an empty
// object rather than a user error.
const nlohmann::json& VllmFlagsFile() {
  static const nlohmann::json kFile = [] {
    for (const internal::EmbeddedFile& f : internal::EmbeddedProfileFiles()) {
      if (f.stem != "vllm-flags") continue;
      Result<nlohmann::json> j = internal::ParseJsonText(f.content, "profiles/vllm-flags.json");
      if (j.ok() && j->is_object()) return nlohmann::json(*j);
    }
    return nlohmann::json::object();
  }();
  return kFile;
}

const std::vector<VllmFlag>& Flags() {
  static const std::vector<VllmFlag> kFlags = [] {
    std::vector<VllmFlag> r;
    const nlohmann::json& file = VllmFlagsFile();
    if (file.contains("flags") && file["flags"].is_array()) {
      for (const nlohmann::json& e : file["flags"]) {
        const std::string values = e.value("values", "");
        const std::string type = e.value("type", "");
        VllmFlag flag{.name = e.value("name", ""),
                      .takes_value = e.value("value", false),
                      .values = values == "one or more" ? VllmFlag::Values::kOneOrMore
                                : values == "optional"  ? VllmFlag::Values::kOptional
                                                        : VllmFlag::Values::kOne,
                      .json = e.value("json", false),
                      .removed = e.value("removed", false),
                      .instead = e.value("instead", ""),
                      .type = type == "int"            ? VllmFlag::Type::kInteger
                              : type == "human int"    ? VllmFlag::Type::kHumanInteger
                              : type == "float"        ? VllmFlag::Type::kNumber
                              : type == "json"         ? VllmFlag::Type::kJsonConfig
                              : type == "json value"   ? VllmFlag::Type::kJsonValue
                              : type == "json or text" ? VllmFlag::Type::kJsonOrText
                                                       : VllmFlag::Type::kText,
                      .none = e.value("none", false),
                      .choices = ReadChoices(e),
                      .multimodal = e.value("multimodal", false),
                      .bounds = ReadBounds(e),
                      .json_class = e.value("class", "")};
        if (e.contains("none_item") && e["none_item"].is_object()) {
          flag.none_item_class = e["none_item"].value("class", "");
          flag.none_item_error = e["none_item"].value("error", "");
        }
        if (e.contains("keys") && e["keys"].is_object()) {
          for (const auto& [name, k] : e["keys"].items()) {
            flag.keys.push_back({.name = name,
                                 .type = k.value("type", "any"),
                                 .nullable = k.value("null", false),
                                 .choices = ReadChoices(k),
                                 .bounds = ReadBounds(k)});
          }
        }
        if (e.contains("older_keys") && e["older_keys"].is_array()) {
          for (const nlohmann::json& k : e["older_keys"]) {
            flag.older_keys.push_back({.name = k.value("name", ""),
                                       .removed_by = k.value("removed_by", ""),
                                       .instead = k.value("instead", "")});
          }
        }
        r.push_back(std::move(flag));
      }
    }
    return r;
  }();
  return kFlags;
}

}  // namespace

const std::vector<std::string>& KnownVllmEnvironment() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> r;
    const nlohmann::json& file = VllmFlagsFile();
    if (file.contains("environment_variables") && file["environment_variables"].is_array()) {
      for (const nlohmann::json& name : file["environment_variables"]) {
        if (name.is_string()) r.push_back(name.get<std::string>());
      }
    }
    std::sort(r.begin(), r.end());
    return r;
  }();
  return kNames;
}

const std::vector<RemovedVllmVariable>& RemovedVllmEnvironment() {
  static const std::vector<RemovedVllmVariable> kRemoved = [] {
    std::vector<RemovedVllmVariable> r;
    const nlohmann::json& file = VllmFlagsFile();
    if (file.contains("removed_environment") && file["removed_environment"].is_array()) {
      for (const nlohmann::json& e : file["removed_environment"]) {
        if (!e.is_object()) continue;
        r.push_back({.name = e.value("name", ""),
                     .removed_by = e.value("removed_by", ""),
                     .instead = e.value("instead", "")});
      }
    }
    return r;
  }();
  return kRemoved;
}

const RemovedVllmVariable* FindRemovedVllmVariable(std::string_view name) {
  for (const RemovedVllmVariable& v : RemovedVllmEnvironment()) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

namespace {

// Python's int() of text; ±inf past the 64-bit range (a number Python still takes).
std::optional<double> PythonInt(std::string_view text) {
  const Result<int64_t> n = ParsePlainInt(text, "");
  if (n.ok()) return static_cast<double>(*n);
  if (n.status().message().find("out of the 64-bit") == std::string::npos) return std::nullopt;
  const std::string_view s = internal::StripAsciiSpace(text);
  return s.starts_with('-') ? -std::numeric_limits<double>::infinity()
                            : std::numeric_limits<double>::infinity();
}

// The first bound `value` breaks, in pydantic's words and order (the upper bounds first); empty
// when it keeps them all. NaN keeps none, as pydantic's comparisons fail on it.
std::string BrokenBound(double value, const VllmFlag::Bounds& b) {
  const auto number = [](double v) { return fmt::format("{}", v); };
  if (b.max && !(value <= *b.max)) {
    return "Input should be less than or equal to " + number(*b.max);
  }
  if (b.below && !(value < *b.below)) return "Input should be less than " + number(*b.below);
  if (b.min && !(value >= *b.min)) {
    return "Input should be greater than or equal to " + number(*b.min);
  }
  if (b.above && !(value > *b.above)) return "Input should be greater than " + number(*b.above);
  return "";
}

// Values as pydantic lists a Literal's: 'a', 'b' or 'c'.
std::string PydanticChoices(const std::vector<std::string>& choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    out += i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ";
    out += "'" + choices[i] + "'";
  }
  return out;
}

bool IsNone(const VllmFlag& flag, std::string_view text) {
  return flag.none && (text.empty() || text == "None");
}

// The online shorthands of vllm/config/quantization.py (_ONLINE_SHORTHANDS) with whether each
// defines a linear spec, and the quantization key names (QUANT_KEY_NAMES), sorted as the
// engine's message sorts them.
struct OnlineShorthand {
  std::string_view name;
  bool linear;
};
constexpr OnlineShorthand kOnlineShorthands[] = {{"fp8_per_tensor", true},
                                                 {"fp8_per_block", true},
                                                 {"mxfp8", true},
                                                 {"int8_per_channel_weight_only", false}};
constexpr std::string_view kQuantKeyNames[] = {"fp8_per_block_dynamic",
                                               "fp8_per_block_static",
                                               "fp8_per_tensor_dynamic",
                                               "fp8_per_tensor_static",
                                               "fp8_per_token",
                                               "int8_per_channel_static",
                                               "mxfp4",
                                               "mxfp8"};

// QuantSpec's key fields: a name of QUANT_KEY_NAMES or null (_coerce_quant_key).
std::string QuantKeyRefusal(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (!v.is_string()) return "";  // a TypeError the parser reports its own way: refused below
  if (std::find(std::begin(kQuantKeyNames), std::end(kQuantKeyNames), v.get<std::string>()) !=
      std::end(kQuantKeyNames)) {
    return "";
  }
  std::vector<std::string> quoted;
  for (std::string_view n : kQuantKeyNames) quoted.push_back(fmt::format("'{}'", n));
  return fmt::format("unknown quantization name {}; expected one of [{}]",
                     fmt::format("'{}'", v.get<std::string>()), fmt::join(quoted, ", "));
}

// The checks a config class makes of its fields as it is built (its validators and
// __post_init__): the engine's message, or empty.
std::string ConfigClassRefusal(std::string_view cls, const nlohmann::json& j) {
  const auto given = [&](const char* key) { return j.contains(key) && !j[key].is_null(); };
  const auto on = [&](const char* key) {
    return given(key) && internal::PydanticBool(j[key]).value_or(false);
  };
  const auto text = [&](const char* key) {
    return given(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  if (cls == "StructuredOutputsConfig") {
    const std::string backend = given("backend") ? text("backend") : "auto";
    if (on("disable_any_whitespace") && backend != "xgrammar" && backend != "guidance") {
      return "disable_any_whitespace is only supported for xgrammar and guidance backends.";
    }
    if (on("disable_additional_properties") && backend != "guidance") {
      return "disable_additional_properties is only supported for the guidance backend.";
    }
  } else if (cls == "ProfilerConfig") {
    const bool torch = text("profiler") == "torch";
    if (!text("torch_profiler_dir").empty() && !torch) {
      return "torch_profiler_dir is only applicable when profiler is set to 'torch'";
    }
    if (torch && text("torch_profiler_dir").empty()) {
      return "torch_profiler_dir must be set when profiler is 'torch'";
    }
  } else if (cls == "PoolerConfig") {
    const auto zero = [&](const char* key) {  // a float field: pydantic takes "0" and false too
      return given(key) && internal::PydanticFloat(j[key]) == 0.0;
    };
    if (given("logit_bias") && given("logit_mean")) {
      return "Cannot set both `logit_bias` and `logit_mean`. `logit_bias` is deprecated, use "
             "`logit_mean` instead.";
    }
    if (given("logit_scale") && given("logit_sigma")) {
      return "Cannot set both `logit_scale` and `logit_sigma`. `logit_scale` is deprecated, use "
             "`logit_sigma` instead.";
    }
    if (zero("logit_scale")) return "logit_scale cannot be 0 (division by zero)";
    if (zero("logit_sigma")) return "logit_sigma cannot be 0 (division by zero)";
    if (!text("pooling_type").empty()) {
      if (given("seq_pooling_type")) return "Cannot set both `pooling_type` and `seq_pooling_type`";
      if (given("tok_pooling_type")) return "Cannot set both `pooling_type` and `tok_pooling_type`";
    }
  } else if (cls == "QuantizationConfigArgs") {
    for (const char* field : {"linear", "moe"}) {
      if (!given(field)) continue;
      const nlohmann::json& v = j[field];
      if (v.is_string()) {
        const std::string name = v.get<std::string>();
        const auto* shorthand =
            std::find_if(std::begin(kOnlineShorthands), std::end(kOnlineShorthands),
                         [&](const OnlineShorthand& o) { return o.name == name; });
        if (shorthand != std::end(kOnlineShorthands)) {
          if (std::string_view(field) == "linear" && !shorthand->linear) {
            return fmt::format("online shorthand '{}' does not define a linear spec", name);
          }
          continue;
        }
        if (std::string refusal = QuantKeyRefusal(v); !refusal.empty()) return refusal;
      } else if (v.is_object()) {
        for (const auto& [key, value] : v.items()) {
          if (key != "weight" && key != "activation") {
            return fmt::format("{}.{}: Unexpected keyword argument", field, key);
          }
          if (!value.is_null() && !value.is_string()) {
            return fmt::format("expected str or QuantKey, got {}", value.is_number_integer() ? "int"
                                                                   : value.is_number()  ? "float"
                                                                   : value.is_boolean() ? "bool"
                                                                   : value.is_array()   ? "list"
                                                                                        : "dict");
          }
          if (std::string refusal = QuantKeyRefusal(value); !refusal.empty()) return refusal;
        }
      } else {
        return "Input should be a dictionary or an instance of QuantSpec";
      }
    }
  }
  return "";
}

// JSON text as json.loads reads it, nested at most kMaxJsonDepth levels (kvtopo's bound on every
// JSON value it reads): the value, a discarded value when it is not JSON, or the error
// for nesting deeper.
Result<nlohmann::json> Loads(std::string_view text, std::string_view what) {
  Result<nlohmann::json> j = internal::ParseJsonText(text, what);
  if (j.ok() ||
      j.status().message().find(" nests arrays and objects deeper than ") != std::string::npos) {
    return j;
  }
  return nlohmann::json(nlohmann::json::value_t::discarded);
}

// A config class's JSON value as the engine's parser reads it (parse_dataclass): the object,
// or the reason it is refused.
Result<nlohmann::json> ConfigObject(const VllmFlag& flag, std::string_view text) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string expanded,
                          ExpandJsonHumanReadableNumbers(text, flag.name));
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json j, Loads(expanded, flag.name));
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument(fmt::format(
        "{} {}: {} (the engine's parser refuses it); give a JSON object of {}'s fields", flag.name,
        text, j.is_discarded() ? "not JSON" : "not a JSON object", flag.json_class));
  }
  // A field of older releases, the first the deprecation read: the form it took, with the value
  // given ("drop it" for null, which the deprecation passed over, or where none took it).
  for (const VllmFlag::OlderKey& older : flag.older_keys) {
    const auto given = j.find(older.name);
    if (given == j.end()) continue;
    std::string form;
    if (!given->is_null() && !older.instead.empty()) {
      const size_t at = older.instead.find("{}");
      form = older.instead;
      if (at != std::string::npos) form.replace(at, 2, internal::JsonText(*given));
    }
    return OlderFieldRefusal(flag.name, older.name, form);
  }
  for (const auto& item : j.items()) {
    const std::string& name = item.key();
    const nlohmann::json& value = item.value();
    const auto key = std::find_if(flag.keys.begin(), flag.keys.end(),
                                  [&](const VllmFlag::Key& k) { return k.name == name; });
    if (key == flag.keys.end()) {
      std::vector<std::string> names;
      for (const VllmFlag::Key& k : flag.keys) names.push_back(k.name);
      return InvalidArgument(fmt::format(
          "{}: '{}' is not a field of the engine's {} (its parser refuses it: 'Unexpected keyword "
          "argument'); its fields: {}",
          flag.name, name, flag.json_class, fmt::join(names, ", ")));
    }
    const std::string refusal = ConfigFieldRefusal(*key, value);
    if (!refusal.empty()) {
      return InvalidArgument(fmt::format("{}: {} {} is refused by the engine's parser ({}: {})",
                                         flag.name, name, internal::JsonText(value),
                                         flag.json_class, refusal));
    }
  }
  if (const std::string refusal = ConfigClassRefusal(flag.json_class, j); !refusal.empty()) {
    return InvalidArgument(fmt::format("{} {}: the engine's parser refuses it ({}: {})", flag.name,
                                       text, flag.json_class, refusal));
  }
  return j;
}

// json.loads of the text: the value, or the parser's refusal.
Result<nlohmann::json> JsonLoads(const VllmFlag& flag, std::string_view text) {
  KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json j, Loads(text, flag.name));
  if (j.is_discarded()) {
    return InvalidArgument(
        fmt::format("{} {}: not JSON (the engine's parser refuses it: 'invalid loads value'){}",
                    flag.name, text, text == "None" ? "; write null" : ""));
  }
  return j;
}

// `lora`: --enable-lora is on, so the engine builds its LoRA config.
Status CheckValue(const VllmFlag& flag, const VllmFlagValue& given, bool lora) {
  if (!flag.takes_value) return Status::Ok();
  if (given.values.empty()) {
    if (flag.values == VllmFlag::Values::kOptional) return Status::Ok();
    const bool one = flag.values == VllmFlag::Values::kOne;
    return InvalidArgument(
        fmt::format("{} needs {} (the engine's parser refuses it: 'expected {}')", flag.name,
                    one ? "a value" : "values", one ? "one argument" : "at least one argument"));
  }
  for (const std::string& text : given.values) {
    if (!flag.none_item_error.empty() && (text.empty() || text == "None") &&
        (flag.none_item_class != "LoRAConfig" || lora)) {
      return InvalidArgument(fmt::format(
          "{} '{}': the engine's parser reads the item as None (optional_type), which its {} "
          "refuses as it is built ('{}'); drop the item",
          flag.name, text, flag.none_item_class, flag.none_item_error));
    }
    if (IsNone(flag, text)) continue;
    std::optional<double> number;
    switch (flag.type) {
      case VllmFlag::Type::kText:
        break;
      case VllmFlag::Type::kInteger:
      case VllmFlag::Type::kHumanInteger:
        if (flag.type == VllmFlag::Type::kHumanInteger) {
          const Result<int64_t> n = ParseHumanInt(text, flag.name);
          if (n.ok()) number = static_cast<double>(*n);
        } else {
          number = PythonInt(text);
        }
        if (!number) {
          return InvalidArgument(fmt::format(
              "{} '{}' is not an integer (the engine's parser refuses it: 'invalid int value')",
              flag.name, text));
        }
        break;
      case VllmFlag::Type::kNumber:
        number = ParsePythonFloat(text);
        if (!number) {
          return InvalidArgument(fmt::format(
              "{} '{}' is not a number (the engine's parser refuses it: 'invalid float value')",
              flag.name, text));
        }
        break;
      case VllmFlag::Type::kJsonConfig:
        KVTOPO_RETURN_IF_ERROR(ConfigObject(flag, text).status());
        break;
      case VllmFlag::Type::kJsonValue:
        KVTOPO_RETURN_IF_ERROR(JsonLoads(flag, text).status());
        break;
      case VllmFlag::Type::kJsonOrText: {
        // union_dict_and_str: text that looks like an object (braces around it) is json.loads'd.
        const std::string_view t = internal::StripAsciiSpace(text);
        if (t.starts_with('{') && t.ends_with('}'))
          KVTOPO_RETURN_IF_ERROR(JsonLoads(flag, text).status());
        break;
      }
    }
    if (!flag.choices.empty() &&
        std::find(flag.choices.begin(), flag.choices.end(), text) == flag.choices.end()) {
      return InvalidArgument(
          fmt::format("{} '{}' is not one of the engine's choices: {} (its parser refuses it)",
                      flag.name, text, fmt::join(flag.choices, ", ")));
    }
    if (number && !flag.multimodal) {
      const std::string broken = BrokenBound(*number, flag.bounds);
      if (!broken.empty()) {
        return InvalidArgument(
            fmt::format("{} {}: the engine refuses it as it builds its config ('{}')", flag.name,
                        internal::StripAsciiSpace(text), broken));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status OlderFieldRefusal(std::string_view where, std::string_view key, std::string_view form) {
  return InvalidArgument(fmt::format(
      "{}: '{}' is a field of older releases the engine no longer takes (its parser refuses it: "
      "'Unexpected keyword argument'); {}",
      where, key, form.empty() ? std::string("drop it") : fmt::format("give {} instead", form)));
}

std::string ConfigFieldRefusal(const VllmFlag::Key& key, const nlohmann::json& v) {
  if (v.is_null()) return key.nullable || key.type == "any" ? "" : "Input should not be None";
  if (!key.choices.empty()) {
    const bool listed = v.is_string() && std::find(key.choices.begin(), key.choices.end(),
                                                   v.get<std::string>()) != key.choices.end();
    if (listed) return "";
    return "Input should be " + PydanticChoices(key.choices);
  }
  std::optional<double> number;
  if (key.type == "bool") return internal::PydanticBoolRefusal(v);
  if (key.type == "int") {
    // A float: whole and within 64 bits (pydantic's own reasons otherwise); a string: past 64
    // bits still an integer (±inf here), which the bounds then judge as pydantic's do.
    if (v.is_boolean() || v.is_number_integer() ||
        (v.is_number_float() && internal::PydanticInt(v))) {
      number = internal::PydanticFloat(v);  // a bool as 1 or 0
    } else if (v.is_string()) {
      const std::string_view whole =
          internal::WithoutZeroFraction(internal::StripAsciiSpace(v.get_ref<const std::string&>()));
      if (!whole.empty()) number = PythonInt(whole);
    }
    if (!number) return internal::PydanticIntRefusal(v);
  } else if (key.type == "float") {
    number = internal::PydanticFloat(v);
    if (!number) return internal::PydanticFloatRefusal(v);
  } else if (key.type == "str") {
    return v.is_string() ? "" : "Input should be a valid string";
  } else if (key.type == "list") {
    return v.is_array() ? "" : "Input should be a valid list";
  } else if (key.type == "object") {
    return v.is_object() ? "" : "Input should be a valid dictionary";
  }
  return number ? BrokenBound(*number, key.bounds) : "";
}

const std::vector<VllmFlag>& VllmFlagsNotPlanned() { return Flags(); }

const VllmFlag* FindVllmFlagNotPlanned(std::string_view token) {
  std::string name(token.substr(0, token.find('=')));
  // A dotted key names a key of a JSON flag's value: "--attention-config.backend".
  const size_t dot = name.find('.');
  const bool dotted = dot != std::string::npos;
  if (dotted) name.resize(dot);
  std::replace(name.begin() + std::min<size_t>(2, name.size()), name.end(), '_', '-');
  for (const VllmFlag& f : VllmFlagsNotPlanned()) {
    if (dotted && !f.json) continue;
    if (f.name == name) return &f;
    if (!f.takes_value && name.starts_with("--no-") && f.name == "--" + name.substr(5)) return &f;
  }
  return nullptr;
}

const VllmFlagValue* FindVllmFlagValue(const std::vector<VllmFlagValue>& values,
                                       std::string_view flag) {
  for (const VllmFlagValue& v : values) {
    if (v.flag == flag) return &v;
  }
  return nullptr;
}

std::optional<std::string> VllmFlagText(const std::vector<VllmFlagValue>& values,
                                        std::string_view flag) {
  const VllmFlagValue* v = FindVllmFlagValue(values, flag);
  if (v == nullptr || v->values.empty()) return std::nullopt;
  return v->values.front();
}

std::optional<std::string> VllmFlagSetting(const std::vector<VllmFlagValue>& values,
                                           std::string_view flag) {
  std::optional<std::string> text = VllmFlagText(values, flag);
  if (text && (text->empty() || *text == "None")) text.reset();
  return text;
}

Result<nlohmann::json> ParseConfigClassJson(std::string_view text, std::string_view what) {
  KVTOPO_ASSIGN_OR_RETURN(const std::string expanded, ExpandJsonHumanReadableNumbers(text, what));
  return internal::ParseJsonText(expanded, what);
}

namespace {

// A variable vllm/envs.py reads with a reader that raises on a value it cannot read
// (environment_reads in profiles/vllm-flags.json, in envs.py's order).
struct EnvironmentRead {
  std::string name;
  std::string read;  // int, float, port, json, choice, choice_list; assert_choice (import_reads)
  std::vector<std::string> choices;
  bool case_sensitive = true;
};

const std::vector<EnvironmentRead>& EnvironmentReads() {
  static const std::vector<EnvironmentRead> kReads = [] {
    std::vector<EnvironmentRead> r;
    const nlohmann::json& file = VllmFlagsFile();
    if (!file.contains("environment_reads") || !file["environment_reads"].is_array()) return r;
    for (const nlohmann::json& e : file["environment_reads"]) {
      if (!e.is_object()) continue;
      r.push_back({.name = e.value("name", ""),
                   .read = e.value("read", ""),
                   .choices = ReadChoices(e),
                   .case_sensitive = e.value("case_sensitive", true)});
    }
    return r;
  }();
  return kReads;
}

// Text whose reading by int(), float() and str.strip() kvtopo knows: ASCII without the
// separators U+001C to U+001F, which Python strips as whitespace where kvtopo does not.
bool KnownText(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x80 && (u < 0x1c || u > 0x1f);
  });
}

// Python's str.lower() where it can meet an ASCII choice: ASCII letters, and the Kelvin sign
// (U+212A), which lowers to 'k'; other characters as they are.
std::string LowerForChoice(std::string_view s) {
  constexpr std::string_view kKelvin = "\xE2\x84\xAA";
  std::string out;
  for (size_t at = 0; at < s.size();) {
    if (s.substr(at, kKelvin.size()) == kKelvin) {
      out += 'k';
      at += kKelvin.size();
    } else {
      out += s[at++];
    }
  }
  return internal::AsciiLower(out);
}

// Reads JSON text without building it: sax_parse returns whether it is JSON; `undecided` notes
// what json.loads reads otherwise (a number past the double range) and nesting past 100 levels.
struct JsonTextCheck : nlohmann::json_sax<nlohmann::json> {
  bool undecided = false;
  int depth = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return Enter(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return Leave(); }
  bool start_array(std::size_t) override { return Enter(); }
  bool end_array() override { return Leave(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    undecided = undecided || e.id == 406;  // out_of_range.406: number overflow
    return false;
  }
  bool Enter() {
    if (++depth <= 100) return true;
    undecided = true;
    return false;
  }
  bool Leave() {
    --depth;
    return true;
  }
};

// What the engine's reader raises for `value` of `r` (its message, quoted), and what to set
// instead; nullopt when it reads the value, or when kvtopo cannot tell: int() and float() of text
// beyond KnownText (Python reads Unicode digits and spaces), and a list item with such text at
// its ends, which str.strip() may shorten.
struct EnvironmentRefusal {
  std::string raised;
  std::string fix;
};
std::optional<EnvironmentRefusal> RefuseEnvironmentValue(const EnvironmentRead& r,
                                                         std::string_view value) {
  const std::string repr = internal::PythonRepr(nlohmann::json(std::string(value)));
  const auto quoted = [](std::string text) { return internal::QuotedMessage(text); };
  if (r.read == "int") {
    if (!KnownText(value) || PythonInt(value)) return std::nullopt;
    return EnvironmentRefusal{
        quoted(fmt::format("invalid literal for int() with base 10: {}", repr)), "set an integer"};
  }
  if (r.read == "port") {
    if (!KnownText(value) || PythonInt(value)) return std::nullopt;
    // get_vllm_port's message depends on how urllib3's parse_url reads the text (a URI, not an
    // integer, or its own parse error), so it is described rather than quoted.
    return EnvironmentRefusal{
        "get_vllm_port raises for anything but an integer, calling a value with a URL scheme a "
        "URI",
        "set a port number"};
  }
  if (r.read == "float") {
    if (!KnownText(value) || ParsePythonFloat(value)) return std::nullopt;
    return EnvironmentRefusal{quoted(fmt::format("could not convert string to float: {}", repr)),
                              "set a number"};
  }
  if (r.read == "json") {
    // json.loads reads what RFC 8259 allows, and NaN, Infinity, unpaired surrogate escapes and
    // numbers past the double range (as inf) beside it; it raises RecursionError past about a
    // thousand levels. Text holding those is left to the engine.
    const bool python_only = value.find("NaN") != std::string_view::npos ||
                             value.find("Infinity") != std::string_view::npos ||
                             value.find("\\u") != std::string_view::npos;
    if (!KnownText(value) || python_only) return std::nullopt;
    JsonTextCheck check;
    if (nlohmann::json::sax_parse(value, &check) || check.undecided) return std::nullopt;
    return EnvironmentRefusal{"json.loads refuses it", "set a JSON value"};
  }
  const auto allowed = [&](std::string_view v) {
    return std::any_of(r.choices.begin(), r.choices.end(), [&](const std::string& c) {
      return r.case_sensitive ? c == v : LowerForChoice(c) == LowerForChoice(v);
    });
  };
  const std::string choices = internal::PythonRepr(nlohmann::json(r.choices));
  const std::string fix = fmt::format("set one of {}", fmt::join(r.choices, ", "));
  if (r.read == "assert_choice") {
    // A module-level assert: `assert VALUE in CHOICES, f"{NAME} must be one of {CHOICES}, but
    // got {VALUE}"`, compared as given.
    if (std::find(r.choices.begin(), r.choices.end(), value) != r.choices.end()) {
      return std::nullopt;
    }
    return EnvironmentRefusal{
        quoted(fmt::format("{} must be one of {}, but got {}", r.name, choices, value)), fix};
  }
  if (r.read == "choice") {
    if (allowed(value)) return std::nullopt;
    return EnvironmentRefusal{quoted(fmt::format("Invalid value '{}' for {}. Valid options: {}.",
                                                 value, r.name, choices)),
                              fix};
  }
  if (r.read == "choice_list") {
    for (const std::string& item : internal::SplitOnCommas(value)) {
      const std::string_view v = internal::StripAsciiSpace(item);
      if (v.empty() || allowed(v)) continue;
      if (!KnownText(v.substr(0, 1)) || !KnownText(v.substr(v.size() - 1))) return std::nullopt;
      return EnvironmentRefusal{
          quoted(fmt::format("Invalid value '{}' in {}. Valid options: {}.", v, r.name, choices)),
          fmt::format("set a comma-separated list of {}", fmt::join(r.choices, ", "))};
    }
  }
  return std::nullopt;
}

// The value of `name` in an environment of NAME=VALUE entries (the first that sets it); nullopt
// when none does (a NAME alone gives no value).
std::optional<std::string_view> EnvironmentValue(const std::vector<std::string>& environment,
                                                 std::string_view name) {
  for (const std::string& entry : environment) {
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      return std::string_view(entry).substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

// The engine core reads every variable vllm/envs.py registers as it ends its start
// (enable_envs_cache), once the weights are loaded and the KV cache allocated, and a reader
// that raises fails the start there if not before. Variables kvtopo reads as launch options
// have their own checks.
Status CheckEnvironmentValues(const LaunchOptions& o) {
  std::string first;
  std::vector<std::string_view> more;
  for (const EnvironmentRead& r : EnvironmentReads()) {
    const std::optional<std::string_view> value = EnvironmentValue(o.vllm_environment, r.name);
    if (!value) continue;
    const bool launch_option =
        std::any_of(LaunchOptionTable().begin(), LaunchOptionTable().end(),
                    [&](const LaunchOption& option) { return option.env == r.name; });
    if (launch_option) continue;
    const std::optional<EnvironmentRefusal> refusal = RefuseEnvironmentValue(r, *value);
    if (!refusal) continue;
    if (!first.empty()) {
      more.push_back(r.name);
      continue;
    }
    first = fmt::format(
        "{} is {}, which the engine cannot read: it fails to start ({}), at the latest as its "
        "engine core ends its start and reads every variable vllm/envs.py registers, once the "
        "weights are loaded and the KV cache allocated; {} or unset it",
        r.name, internal::PythonRepr(nlohmann::json(std::string(*value))), refusal->raised,
        refusal->fix);
  }
  if (first.empty()) return Status::Ok();
  if (!more.empty()) {
    first += fmt::format(" (the engine cannot read {} either)", fmt::join(more, ", "));
  }
  return Rejected(first);
}

// A variable a module of the engine reads outside vllm/envs.py as it is imported (import_reads
// in profiles/vllm-flags.json, in the order the engine imports the modules).
struct ImportRead {
  EnvironmentRead read;
  std::string module;
  // Which workers import it whatever the model: kEveryWorker ("every"), kV1Runner ("v1"), or
  // none.
  std::optional<ImportedEnvironmentRefusal::Where> workers;
  std::vector<std::string> models;  // architectures and MTP model types importing it, sorted
  // Kinds of layers whose modules import it ("kda"), with what messages call them ("KDA layers").
  std::vector<std::pair<std::string, std::string>> layers;
};

const std::vector<ImportRead>& ImportReads() {
  static const std::vector<ImportRead> kReads = [] {
    std::vector<ImportRead> r;
    const nlohmann::json& file = VllmFlagsFile();
    if (!file.contains("import_reads") || !file["import_reads"].is_array()) return r;
    const nlohmann::json sets = file.value("import_read_models", nlohmann::json::object());
    const nlohmann::json layers = file.value("import_read_layers", nlohmann::json::object());
    for (const nlohmann::json& e : file["import_reads"]) {
      if (!e.is_object()) continue;
      ImportRead read{.read = {.name = e.value("name", ""),
                               .read = e.value("read", ""),
                               .choices = ReadChoices(e),
                               .case_sensitive = true},
                      .module = e.value("module", "")};
      const std::string workers = e.value("workers", "");
      if (workers == "every") read.workers = ImportedEnvironmentRefusal::Where::kEveryWorker;
      if (workers == "v1") read.workers = ImportedEnvironmentRefusal::Where::kV1Runner;
      const std::string set = e.value("models", "");
      if (!set.empty() && sets.contains(set) && sets[set].is_array()) {
        for (const nlohmann::json& m : sets[set]) {
          if (m.is_string()) read.models.push_back(m.get<std::string>());
        }
        std::sort(read.models.begin(), read.models.end());
      }
      if (!set.empty() && layers.contains(set) && layers[set].is_object()) {
        for (const auto& [kind, name] : layers[set].items()) {
          if (name.is_string()) read.layers.emplace_back(kind, name.get<std::string>());
        }
      }
      r.push_back(std::move(read));
    }
    return r;
  }();
  return kReads;
}

// The rules of the engine's configs that tie flags not planned with to each other and to the
// launch options; each value has passed CheckValue.
Status CheckFlagRules(const LaunchOptions& o) {
  const std::vector<VllmFlagValue>& given = o.not_planned_values;
  const auto values = [&](std::string_view flag) -> std::vector<std::string> {
    const VllmFlagValue* v = FindVllmFlagValue(given, flag);
    return v == nullptr ? std::vector<std::string>{} : v->values;
  };
  const auto value = [&](std::string_view flag) { return VllmFlagText(given, flag); };
  const auto on = [&](std::string_view flag) {
    const VllmFlagValue* v = FindVllmFlagValue(given, flag);
    return v != nullptr && v->on.value_or(false);
  };
  const auto integer = [&](std::string_view flag, double fallback) {
    const std::optional<std::string> v = value(flag);
    return v ? PythonInt(*v).value_or(fallback) : fallback;
  };
  // A value the config refuses is a usage error, as kvtopo's other value bounds are; flags that
  // conflict are a refused launch (exit 1), as the data-parallel and serving-flag rules are.
  const auto message = [](std::string_view what, std::string_view config, std::string_view text,
                          std::string_view fix) {
    return fmt::format("{}: the engine refuses it as it builds its {} config ({}); {}", what,
                       config, internal::QuotedMessage(text), fix);
  };
  const auto refuse = [&](std::string_view what, std::string_view config, std::string_view text,
                          std::string_view fix) {
    return InvalidArgument(message(what, config, text, fix));
  };
  const auto conflict = [&](std::string_view what, std::string_view config, std::string_view text,
                            std::string_view fix) {
    return Rejected(message(what, config, text, fix));
  };

  KVTOPO_RETURN_IF_ERROR(CheckEnvironmentValues(o));
  // EngineArgs.create_engine_config's validate_environ (vllm/envs.py): with the flag, a VLLM_
  // variable the engine does not register refuses the launch, the first in the environment's
  // order named.
  if (on("--fail-on-environ-validation")) {
    const std::vector<std::string>& known = KnownVllmEnvironment();
    std::vector<std::string> unknown;
    for (const std::string& entry : o.vllm_environment) {
      const std::string name = entry.substr(0, entry.find('='));
      if (name.starts_with("VLLM_") && !std::binary_search(known.begin(), known.end(), name)) {
        unknown.push_back(name);
      }
    }
    if (!unknown.empty()) {
      return Rejected(fmt::format(
          "--fail-on-environ-validation with {} set, {} the engine does not register "
          "(vllm/envs.py): it refuses the launch as it builds its config ('Unknown vLLM "
          "environment variable detected: {}'); unset {} or drop --fail-on-environ-validation",
          fmt::join(unknown, ", "), unknown.size() == 1 ? "a variable" : "variables", unknown[0],
          unknown.size() == 1 ? "it" : "them"));
    }
  }
  // ParallelConfig's NUMA fields (vllm/config/parallel.py): each node index non-negative; each
  // CPU list in numactl's syntax with ascending ranges; both only with --numa-bind.
  const std::vector<std::string> nodes = values("--numa-bind-nodes");
  for (const std::string& node : nodes) {
    if (PythonInt(node).value_or(0) < 0) {
      return refuse(fmt::format("--numa-bind-nodes {}", fmt::join(nodes, " ")), "parallel",
                    "numa_bind_nodes must contain non-negative integers.",
                    "give the NUMA node of each GPU");
    }
  }
  const std::vector<std::string> cpus = values("--numa-bind-cpus");
  for (const std::string& cpuset : cpus) {
    const std::string what = fmt::format("--numa-bind-cpus '{}'", cpuset);
    if (cpuset.empty()) {
      return refuse(what, "parallel", "numa_bind_cpus entries must not be empty.",
                    "give a CPU list such as 0-3 for each GPU");
    }
    // ^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$ : comma-separated N or N-M
    bool syntax = true;
    for (const std::string& part : internal::SplitOnCommas(cpuset)) {
      const size_t dash = part.find('-');
      const std::string first = part.substr(0, dash);
      const std::string last = dash == std::string::npos ? "" : part.substr(dash + 1);
      const auto digits = [](const std::string& t) {
        return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
      };
      syntax = syntax && digits(first) && (dash == std::string::npos || digits(last));
    }
    if (!syntax) {
      return refuse(what, "parallel",
                    "numa_bind_cpus entries must use numactl CPU list syntax, for example '0-3' "
                    "or '0,2,4-7'.",
                    "write N, N-M, or a comma-separated list of them");
    }
    for (const std::string& part : internal::SplitOnCommas(cpuset)) {
      const size_t dash = part.find('-');
      if (dash == std::string::npos) continue;
      const std::string first = part.substr(0, dash);
      const std::string last = part.substr(dash + 1);
      // Digits only: compared as numbers of any length, leading zeros dropped.
      const auto strip = [](const std::string& t) {
        const size_t nz = t.find_first_not_of('0');
        return nz == std::string::npos ? std::string("0") : t.substr(nz);
      };
      const std::string a = strip(first);
      const std::string b = strip(last);
      if (a.size() > b.size() || (a.size() == b.size() && a > b)) {
        return refuse(what, "parallel",
                      fmt::format("numa_bind_cpus ranges must be ascending, but got '{}'.", cpuset),
                      "write each range low-high");
      }
    }
  }
  if ((!nodes.empty() || !cpus.empty()) && !on("--numa-bind")) {
    return conflict(!nodes.empty() ? "--numa-bind-nodes without --numa-bind"
                                   : "--numa-bind-cpus without --numa-bind",
                    "parallel", "numa_bind_nodes and numa_bind_cpus require numa_bind=True.",
                    "add --numa-bind");
  }

  // OffloadConfig (vllm/config/offload.py): prefetch offloading (the backend, or a group size
  // above 0) offloads at most the group's layers and prefetches at least one ahead.
  const double group = integer("--offload-group-size", 0);
  if (value("--offload-backend") == "prefetch" || group > 0) {
    const double in_group = integer("--offload-num-in-group", 1);
    const double step = integer("--offload-prefetch-step", 1);
    if (in_group > group) {
      return conflict(
          fmt::format("--offload-num-in-group {} above --offload-group-size {}", in_group, group),
          "offload",
          fmt::format("offload_num_in_group ({}) must be <= offload_group_size ({})", in_group,
                      group),
          "give --offload-group-size at least --offload-num-in-group");
    }
    if (step < 1) {
      return conflict(
          fmt::format("--offload-prefetch-step {} with prefetch offloading", step), "offload",
          fmt::format("offload_prefetch_step ({}) must be >= 1 when prefetch offloading is "
                      "enabled (offload_group_size > 0)",
                      step),
          "prefetch at least 1 layer ahead");
    }
  }

  // ObservabilityConfig (vllm/config/observability.py): the modules as a list of 'model',
  // 'worker', 'all' (a comma pair passes the parser's choices, not the config's Literal), and
  // only with an OTLP endpoint.
  const std::vector<std::string> traces = values("--collect-detailed-traces");
  for (const std::string& module : traces) {
    if (module.find(',') != std::string::npos) {
      return refuse(fmt::format("--collect-detailed-traces {}", module), "observability",
                    "Input should be 'model', 'worker' or 'all'",
                    "give the modules as separate values (--collect-detailed-traces model worker)");
    }
  }
  const std::optional<std::string> otlp = value("--otlp-traces-endpoint");
  if (!traces.empty() && (!otlp || otlp->empty() || *otlp == "None")) {
    return conflict(fmt::format("--collect-detailed-traces {} without --otlp-traces-endpoint",
                                fmt::join(traces, " ")),
                    "observability",
                    "collect_detailed_traces requires `--otlp-traces-endpoint` to be set.",
                    "add --otlp-traces-endpoint");
  }

  // ObservabilityConfig: the version whose hidden metrics to show is a PEP 440 version
  // (packaging.version.parse, whose VERSION_PATTERN this is, matched in any case with spaces
  // around).
  if (const std::optional<std::string> version = value("--show-hidden-metrics-for-version");
      version && *version != "None" && !version->empty()) {
    static const std::regex kPep440(R"(^\s*v?(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*)"
                                    R"((?:[-_.]?(?:alpha|a|beta|b|preview|pre|c|rc)[-_.]?[0-9]*)?)"
                                    R"((?:-[0-9]+|[-_.]?(?:post|rev|r)[-_.]?[0-9]*)?)"
                                    R"((?:[-_.]?dev[-_.]?[0-9]*)?)"
                                    R"((?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?\s*$)",
                                    std::regex::icase | std::regex::optimize);
    // (A longer text is not matched: std::regex recurses per character.)
    if (version->size() <= 256 && !std::regex_match(*version, kPep440)) {
      return refuse(fmt::format("--show-hidden-metrics-for-version '{}'", *version),
                    "observability", fmt::format("Invalid version: '{}'", *version),
                    "give a version such as 0.20");
    }
  }

  // ParallelConfig: nsight profiling needs Ray workers.
  if (on("--ray-workers-use-nsight") && o.distributed_executor_backend &&
      *o.distributed_executor_backend != "ray") {
    return conflict(fmt::format("--ray-workers-use-nsight with --distributed-executor-backend {}",
                                *o.distributed_executor_backend),
                    "parallel", "Unable to use nsight profiling unless workers run with Ray.",
                    "run the workers with --distributed-executor-backend ray or drop the flag");
  }

  // VllmConfig.additional_config is a dict (text that is not one stays a str) and
  // ModelConfig.override_generation_config a dict.
  for (const char* flag : {"--additional-config", "--override-generation-config"}) {
    const std::optional<std::string> v = value(flag);
    if (!v) continue;
    KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json j, Loads(*v, flag));
    if (!j.is_object()) {
      return refuse(fmt::format("{} {}", flag, *v),
                    std::string_view(flag) == "--additional-config" ? "vLLM" : "model",
                    "Input should be a valid dictionary", "give a JSON object");
    }
  }

  // The OpenAI server's --lora-modules items (LoRAParserAction): NAME=PATH, or a JSON object
  // of LoRAModulePath's fields.
  for (const std::string& item : values("--lora-modules")) {
    if (item.empty() || item == "None") continue;
    if (item.find('=') != std::string::npos && item.find(',') == std::string::npos) {
      if (std::count(item.begin(), item.end(), '=') > 1) {
        return InvalidArgument(fmt::format(
            "--lora-modules '{}': the engine's parser fails on it ('too many values to unpack "
            "(expected 2)'); write NAME=PATH with one '='",
            item));
      }
      continue;
    }
    KVTOPO_ASSIGN_OR_RETURN(const nlohmann::json j, Loads(item, "--lora-modules"));
    if (j.is_discarded()) {
      return InvalidArgument(fmt::format(
          "--lora-modules '{}': the engine's parser refuses it ('Invalid JSON format for "
          "--lora-modules: {}'); write NAME=PATH or a JSON object",
          item, item));
    }
    std::string problem;
    if (!j.is_object()) {
      problem = "not a JSON object";
    } else {
      for (const auto& [key, v] : j.items()) {
        if (key != "name" && key != "path" && key != "base_model_name" &&
            key != "is_3d_lora_weight") {
          problem = fmt::format("unknown field '{}'", key);
          break;
        }
      }
      if (problem.empty() && (!j.contains("name") || !j.contains("path"))) {
        problem = "'name' and 'path' are required";
      }
    }
    if (!problem.empty()) {
      return InvalidArgument(fmt::format(
          "--lora-modules '{}': {}; the engine's parser refuses it ('Invalid fields for "
          "--lora-modules'); give name, path and optionally base_model_name, is_3d_lora_weight",
          item, problem));
    }
  }
  return Status::Ok();
}

}  // namespace

bool EngineEnvironmentName(std::string_view name) {
  const std::vector<std::string>& known = KnownVllmEnvironment();
  return name.starts_with("VLLM_") || std::binary_search(known.begin(), known.end(), name) ||
         std::any_of(ImportReads().begin(), ImportReads().end(),
                     [&](const ImportRead& r) { return r.read.name == name; });
}

std::vector<ImportedEnvironmentRefusal> ImportedEnvironmentRefusals(
    const std::vector<std::string>& environment, const ImportingModel& model) {
  using Where = ImportedEnvironmentRefusal::Where;
  std::vector<ImportedEnvironmentRefusal> out;
  for (const ImportRead& r : ImportReads()) {
    const std::optional<std::string_view> value = EnvironmentValue(environment, r.read.name);
    if (!value) continue;
    const auto in_set = [&](const std::string& m) {
      return std::binary_search(r.models.begin(), r.models.end(), m);
    };
    ImportedEnvironmentRefusal refusal{.name = r.read.name};
    const auto inspected = std::find_if(model.classes.begin(), model.classes.end(), in_set);
    if (inspected != model.classes.end()) {
      refusal.where = Where::kModel;
      refusal.model = *inspected;
    } else {
      // What the workers build that imports it, which a V1-runner read keeps beside its place.
      const auto built =
          std::find_if(model.built_classes.begin(), model.built_classes.end(), in_set);
      if (built != model.built_classes.end()) {
        refusal.built = *built;
      } else {
        for (const std::string& kind : model.built_layers) {
          const auto layer = std::find_if(r.layers.begin(), r.layers.end(),
                                          [&](const auto& l) { return l.first == kind; });
          if (layer == r.layers.end()) continue;
          refusal.built = layer->second;
          refusal.built_layers = true;
          break;
        }
      }
      if (r.workers) {
        refusal.where = *r.workers;
      } else if (!refusal.built.empty()) {
        refusal.where = Where::kModelBuild;
      } else {
        continue;
      }
    }
    const std::optional<EnvironmentRefusal> refused = RefuseEnvironmentValue(r.read, *value);
    if (!refused) continue;
    refusal.value = internal::PythonRepr(nlohmann::json(std::string(*value)));
    refusal.reads = fmt::format("{} reads it as it is imported ({})", r.module, refused->raised);
    refusal.fix = refused->fix;
    out.push_back(std::move(refusal));
  }
  // The engine inspects the architecture as it builds its config, before its workers start; a
  // worker imports its own modules and its runner's as it starts, then builds the model.
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.where < b.where; });
  return out;
}

std::optional<bool> EnvironmentBool(const std::vector<std::string>& environment,
                                    std::string_view name) {
  const std::optional<std::string_view> value = EnvironmentValue(environment, name);
  if (!value) return std::nullopt;
  const std::optional<double> number = PythonInt(*value);
  if (!number) return std::nullopt;
  return *number != 0;
}

std::optional<ImportReadLanguageModel> ImportReadLanguageModelOf(std::string_view wrapper) {
  const nlohmann::json& file = VllmFlagsFile();
  const auto table = file.find("import_read_language_models");
  if (table == file.end() || !table->is_object()) return std::nullopt;
  const auto entry = table->find(std::string(wrapper));
  if (entry == table->end() || !entry->is_object()) return std::nullopt;
  return ImportReadLanguageModel{.architecture = entry->value("class", ""),
                                 .section = entry->value("config", "")};
}

std::string MultimodalFlagRefusal(const std::vector<VllmFlagValue>& given, std::string_view model) {
  const auto value = [&](std::string_view flag) { return VllmFlagSetting(given, flag); };
  const auto refusal = [&](std::string_view what, std::string_view message) {
    return fmt::format(
        "{} with {}, a model with multimodal inputs: the engine refuses it as it "
        "builds its multimodal config ({})",
        what, model, internal::QuotedMessage(message));
  };
  // The bounds MultiModalConfig's fields put on the numbers.
  for (const VllmFlagValue& v : given) {
    const VllmFlag* flag = FindVllmFlagNotPlanned(v.flag);
    if (flag == nullptr || !flag->multimodal || v.values.empty()) continue;
    const std::string& text = v.values.front();
    if (IsNone(*flag, text)) continue;
    const std::optional<double> number = flag->type == VllmFlag::Type::kNumber
                                             ? ParsePythonFloat(text)
                                         : flag->type == VllmFlag::Type::kInteger ? PythonInt(text)
                                                                                  : std::nullopt;
    if (const std::string broken = number ? BrokenBound(*number, flag->bounds) : "";
        !broken.empty()) {
      return refusal(fmt::format("{} {}", flag->name, internal::StripAsciiSpace(text)), broken);
    }
  }
  // The JSON values' shapes: mm_processor_kwargs a dict, media_io_kwargs a dict of dicts,
  // limit_per_prompt counts (0 or more) or option objects per modality.
  const auto json = [&](std::string_view flag) {
    const std::optional<std::string> v = value(flag);
    if (!v) return nlohmann::json();
    const Result<nlohmann::json> j = Loads(*v, flag);
    return j.ok() ? *j : nlohmann::json(nlohmann::json::value_t::discarded);
  };
  if (const nlohmann::json j = json("--mm-processor-kwargs"); !j.is_null() && !j.is_object()) {
    return refusal(fmt::format("--mm-processor-kwargs {}", *value("--mm-processor-kwargs")),
                   "Input should be a valid dictionary");
  }
  if (const nlohmann::json j = json("--media-io-kwargs"); !j.is_null()) {
    const bool objects =
        j.is_object() && std::all_of(j.begin(), j.end(), [](const nlohmann::json& kwargs) {
          return kwargs.is_object();
        });
    if (!objects) {
      return refusal(fmt::format("--media-io-kwargs {}", *value("--media-io-kwargs")),
                     "Input should be a valid dictionary");
    }
  }
  if (const nlohmann::json j = json("--limit-mm-per-prompt"); !j.is_null()) {
    const std::string what =
        fmt::format("--limit-mm-per-prompt {}", *value("--limit-mm-per-prompt"));
    if (!j.is_object()) return refusal(what, "Input should be a valid dictionary");
    // MultiModalConfig._validate_limit_per_prompt: an int (a bool is one in Python) is the
    // count, an object the options, whose count pydantic reads in lax mode; anything else fails
    // the validator's ** unpacking.
    for (const auto& [modality, limit] : j.items()) {
      if (!limit.is_object() && !limit.is_boolean() && !limit.is_number_integer()) {
        return refusal(what, fmt::format("{}: an integer count or an object of options, got {} "
                                         "(argument after ** must be a mapping)",
                                         modality, internal::JsonText(limit)));
      }
      if (limit.is_object() && !limit.contains("count")) continue;
      const nlohmann::json& stated = limit.is_object() ? limit["count"] : limit;
      const std::optional<int64_t> count = internal::PydanticInt(stated);
      if (!count) {
        return refusal(what, fmt::format("{}: {}", modality, internal::PydanticIntRefusal(stated)));
      }
      if (*count < 0) {
        return refusal(what,
                       fmt::format("{}: Input should be greater than or equal to 0", modality));
      }
    }
  }
  // MultiModalConfig's validators.
  const std::optional<std::string> shm_size = value("--mm-shm-cache-max-object-size-mb");
  if (shm_size && PythonInt(*shm_size) != 128 && value("--mm-processor-cache-type") != "shm") {
    return refusal(fmt::format("--mm-shm-cache-max-object-size-mb {} without "
                               "--mm-processor-cache-type shm",
                               *shm_size),
                   "'mm_shm_cache_max_object_size_mb' should only be set when "
                   "'mm_processor_cache_type' is 'shm'.");
  }
  const std::optional<std::string> scale = value("--mm-encoder-fp8-scale-path");
  const std::optional<std::string> save = value("--mm-encoder-fp8-scale-save-path");
  if ((scale || save) && value("--mm-encoder-attn-dtype") != "fp8") {
    return refusal(
        fmt::format("{} without --mm-encoder-attn-dtype fp8",
                    scale ? "--mm-encoder-fp8-scale-path" : "--mm-encoder-fp8-scale-save-path"),
        "'mm_encoder_fp8_scale_path' and 'mm_encoder_fp8_scale_save_path' require "
        "'mm_encoder_attn_dtype' to be 'fp8'.");
  }
  if (scale && save) {
    return refusal("--mm-encoder-fp8-scale-path with --mm-encoder-fp8-scale-save-path",
                   "'mm_encoder_fp8_scale_save_path' cannot be used with "
                   "'mm_encoder_fp8_scale_path' (saving requires dynamic scaling).");
  }
  // The encoder's attention backend: a name of AttentionBackendEnum in any case (XFORMERS is
  // gone), and on CUDA one the vision encoder supports (CudaPlatform
  // .get_supported_vit_attn_backends).
  if (const std::optional<std::string> backend = value("--mm-encoder-attn-backend")) {
    static constexpr std::string_view kEnum[] = {"FLASH_ATTN",
                                                 "FLASH_ATTN_DIFFKV",
                                                 "TRITON_ATTN",
                                                 "ROCM_ATTN",
                                                 "ROCM_AITER_MLA",
                                                 "ROCM_AITER_TRITON_MLA",
                                                 "ROCM_AITER_FA",
                                                 "ROCM_AITER_MLA_SPARSE",
                                                 "XPU_MLA_SPARSE",
                                                 "TORCH_SDPA",
                                                 "FLASHINFER",
                                                 "FLASHINFER_MLA",
                                                 "TOKENSPEED_MLA",
                                                 "FLASHINFER_MLA_SPARSE",
                                                 "TRITON_MLA",
                                                 "CUTLASS_MLA",
                                                 "FLASHMLA",
                                                 "FLASHMLA_SPARSE",
                                                 "B12X_MLA_SPARSE",
                                                 "FLASH_ATTN_MLA",
                                                 "NO_ATTENTION",
                                                 "FLEX_ATTENTION",
                                                 "ROCM_AITER_UNIFIED_ATTN",
                                                 "CPU_ATTN",
                                                 "TURBOQUANT",
                                                 "CUSTOM"};
    static constexpr std::string_view kVit[] = {"FLASH_ATTN", "TRITON_ATTN", "TORCH_SDPA",
                                                "FLASHINFER"};
    const std::string upper = internal::AsciiUpper(*backend);
    const std::string what = fmt::format("--mm-encoder-attn-backend {}", *backend);
    if (upper == "XFORMERS") {
      return refusal(what,
                     "Attention backend 'XFORMERS' has been removed (See PR #29262 for details). "
                     "Please select a supported attention backend.");
    }
    if (std::find(std::begin(kEnum), std::end(kEnum), upper) == std::end(kEnum)) {
      return refusal(what, fmt::format("Unknown attention backend: '{}'. Valid options are: {}",
                                       upper, fmt::join(kEnum, ", ")));
    }
    if (std::find(std::begin(kVit), std::end(kVit), upper) == std::end(kVit)) {
      return fmt::format(
          "{} with {}: the engine's vision encoder asserts on CUDA as it is built ('Backend {} "
          "is not supported for vit attention'); the backends it supports there: {}",
          what, model, upper, fmt::join(kVit, ", "));
    }
  }
  return "";
}

Status CheckVllmFlagValues(const LaunchOptions& o) {
  for (const VllmFlagValue& given : o.not_planned_values) {
    const VllmFlag* flag = FindVllmFlagNotPlanned(given.flag);
    if (flag == nullptr || flag->removed) continue;  // refused before (RefuseRemovedFlags)
    KVTOPO_RETURN_IF_ERROR(CheckValue(*flag, given, o.enable_lora.value_or(false)));
  }
  return CheckFlagRules(o);
}

}  // namespace kvtopo
