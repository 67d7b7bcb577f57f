// `vllm serve --config FILE`: a YAML file of flags, read as the engine's parser reads it
// (FlexibleArgumentParser.load_config_file over PyYAML's safe_load; docs/launch-options.md).
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "internal/json_text.h"
#include "internal/text_file.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/limits.h"

#if KVTOPO_HAVE_LIBYAML
#include <yaml.h>
#endif

namespace kvtopo {
namespace {

#if KVTOPO_HAVE_LIBYAML

using Json = nlohmann::ordered_json;

// Bounds on what one file may build: nesting (the conversion recurses) and nodes (aliases copy
// their anchor's value, so a small file could otherwise expand without bound).
constexpr int kMaxDepth = 64;
constexpr int64_t kMaxNodes = 100000;

bool IsDigits(std::string_view s, std::string_view digits) {
  return !s.empty() && s.find_first_not_of(digits) == std::string_view::npos;
}

std::string WithoutUnderscores(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '_') out += c;
  }
  return out;
}

// PyYAML's YAML 1.1 int: [-+]? then 0b[01_]+, 0[0-7_]+ (octal), 0|[1-9][0-9_]*, 0x[0-9a-fA-F_]+,
// or a base-60 [1-9][0-9_]*(:[0-5]?[0-9])+. Nullopt when `s` is not one; an error when it is one
// out of int64 range.
Result<std::optional<int64_t>> YamlInt(std::string_view s) {
  std::string_view body = s;
  bool negative = false;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  int base = 10;
  std::string digits;
  if (body.starts_with("0b") && IsDigits(body.substr(2), "01_")) {
    base = 2;
    digits = WithoutUnderscores(body.substr(2));
  } else if (body.starts_with("0x") && IsDigits(body.substr(2), "0123456789abcdefABCDEF_")) {
    base = 16;
    digits = WithoutUnderscores(body.substr(2));
  } else if (body.size() > 1 && body[0] == '0' && IsDigits(body.substr(1), "01234567_")) {
    base = 8;
    digits = WithoutUnderscores(body.substr(1));
  } else if (body == "0" ||
             (!body.empty() && body[0] >= '1' && body[0] <= '9' && IsDigits(body, "0123456789_"))) {
    digits = WithoutUnderscores(body);
  } else if (!body.empty() && body[0] >= '1' && body[0] <= '9' &&
             body.find(':') != std::string_view::npos) {
    // Base 60: the first part [1-9][0-9_]*, then parts of one or two digits, each below 60.
    int64_t value = 0;
    size_t start = 0;
    bool first = true;
    while (start <= body.size()) {
      const size_t colon = body.find(':', start);
      const std::string_view part = body.substr(
          start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
      const bool ok = first ? IsDigits(part, "0123456789_")
                            : (IsDigits(part, "0123456789") && part.size() <= 2 &&
                               (part.size() == 1 || part[0] <= '5'));
      if (!ok) return std::optional<int64_t>();
      const int64_t p = std::strtoll(WithoutUnderscores(part).c_str(), nullptr, 10);
      if (value > (std::numeric_limits<int64_t>::max() - p) / 60) {
        return InvalidArgument(fmt::format("integer '{}' is out of range", s));
      }
      value = value * 60 + p;
      first = false;
      if (colon == std::string_view::npos) break;
      start = colon + 1;
    }
    return std::optional<int64_t>(negative ? -value : value);
  } else {
    return std::optional<int64_t>();
  }
  if (digits.empty()) return std::optional<int64_t>(0);  // "0b_", "0x_": PyYAML reads 0
  errno = 0;
  char* end = nullptr;
  const unsigned long long magnitude = std::strtoull(digits.c_str(), &end, base);
  const unsigned long long limit =
      static_cast<unsigned long long>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
  if (errno == ERANGE || magnitude > limit) {
    return InvalidArgument(fmt::format("integer '{}' is out of range", s));
  }
  return std::optional<int64_t>(negative ? static_cast<int64_t>(0 - magnitude)
                                         : static_cast<int64_t>(magnitude));
}

// PyYAML's YAML 1.1 float: [-+]?[0-9][0-9_]*.[0-9_]*([eE][-+][0-9]+)?, .[0-9][0-9_]*(exponent)?,
// [-+]?.inf, .nan (any of three spellings); base 60 floats are left as strings here.
std::optional<double> YamlFloat(std::string_view s) {
  std::string_view body = s;
  double sign = 1;
  const bool signed_ = !body.empty() && (body[0] == '-' || body[0] == '+');
  if (signed_) {
    sign = body[0] == '-' ? -1 : 1;
    body.remove_prefix(1);
  }
  if (body == ".inf" || body == ".Inf" || body == ".INF") {
    return sign * std::numeric_limits<double>::infinity();
  }
  if (!signed_ && (body == ".nan" || body == ".NaN" || body == ".NAN")) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  const size_t dot = body.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view whole = body.substr(0, dot);
  std::string_view rest = body.substr(dot + 1);
  if (whole.empty() ? signed_ : !(whole[0] >= '0' && whole[0] <= '9')) return std::nullopt;
  if (!whole.empty() && !IsDigits(whole, "0123456789_")) return std::nullopt;
  const size_t e = rest.find_first_of("eE");
  const std::string_view fraction = rest.substr(0, e);
  if (!fraction.empty() && !IsDigits(fraction, "0123456789_")) return std::nullopt;
  if (whole.empty() && (fraction.empty() || fraction[0] == '_')) return std::nullopt;
  if (e != std::string_view::npos) {
    const std::string_view exponent = rest.substr(e + 1);
    if (exponent.size() < 2 || (exponent[0] != '-' && exponent[0] != '+') ||
        !IsDigits(exponent.substr(1), "0123456789")) {
      return std::nullopt;
    }
  }
  const std::string text = WithoutUnderscores(s);
  return std::strtod(text.c_str(), nullptr);
}

// A plain (unquoted, untagged) scalar as PyYAML's safe_load resolves it.
Result<Json> ResolvePlain(std::string_view s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return Json(nullptr);
  for (std::string_view t : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}) {
    if (s == t) return Json(true);
  }
  for (std::string_view f : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}) {
    if (s == f) return Json(false);
  }
  KVTOPO_ASSIGN_OR_RETURN(std::optional<int64_t> n, YamlInt(s));
  if (n) return Json(*n);
  if (std::optional<double> x = YamlFloat(s)) return Json(*x);
  return Json(std::string(s));
}

// A scalar with its tag: the standard scalar tags convert as safe_load does; others are refused.
Result<Json> ResolveScalar(std::string_view value, std::string_view tag, bool plain) {
  constexpr std::string_view kPrefix = "tag:yaml.org,2002:";
  if (tag.empty() || tag == "!") return plain && tag.empty() ? ResolvePlain(value) : Json(value);
  if (!tag.starts_with(kPrefix)) {
    return InvalidArgument(fmt::format("tag '{}' is not one safe_load reads", tag));
  }
  const std::string_view kind = tag.substr(kPrefix.size());
  if (kind == "str") return Json(value);
  if (kind != "null" && kind != "bool" && kind != "int" && kind != "float") {
    return InvalidArgument(fmt::format("tag '{}' is not one safe_load reads", tag));
  }
  KVTOPO_ASSIGN_OR_RETURN(Json resolved, ResolvePlain(value));
  const bool fits =
      (kind == "null" && resolved.is_null()) || (kind == "bool" && resolved.is_boolean()) ||
      (kind == "int" && resolved.is_number_integer()) || (kind == "float" && resolved.is_number());
  if (!fits) {
    return InvalidArgument(fmt::format("'{}' is not a value of tag '{}'", value, tag));
  }
  if (kind == "float") return Json(resolved.get<double>());
  return resolved;
}

// json.dumps(v) as Python writes it: ", " and ": " separators, non-ASCII escaped, NaN and
// Infinity spelled out.
std::string PythonJsonDumps(const Json& v) {
  if (v.is_object() || v.is_array()) {
    const bool object = v.is_object();
    std::string out(1, object ? '{' : '[');
    bool first = true;
    for (const auto& [key, item] : v.items()) {
      if (!first) out += ", ";
      first = false;
      if (object) out += Json(key).dump(-1, ' ', /*ensure_ascii=*/true) + ": ";
      out += PythonJsonDumps(item);
    }
    return out + (object ? '}' : ']');
  }
  if (v.is_number_float() && !std::isfinite(v.get<double>())) {
    const double x = v.get<double>();
    return std::isnan(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity";
  }
  return v.dump(-1, ' ', /*ensure_ascii=*/true);
}

// The argument text of a value the file gives a flag: Python's str() of a scalar (integers in
// decimal, floats as internal::PythonFloatStr, None and booleans by their Python names), and a
// nested value as json.dumps writes it (where internal::PythonStr would print Python's repr).
std::string FlagArgText(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_float()) return internal::PythonFloatStr(v.get<double>());
  return v.is_structured() ? PythonJsonDumps(v) : v.dump();
}

// The document's root, built from libyaml's events.
class TreeBuilder {
 public:
  Result<Json> Build(std::string_view text) {
    yaml_parser_t parser;
    if (yaml_parser_initialize(&parser) == 0) return Internal("libyaml parser");
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
    Result<Json> root = Run(parser);
    yaml_parser_delete(&parser);
    return root;
  }

 private:
  struct Frame {
    Json node;                       // an object or an array being filled
    std::optional<std::string> key;  // an object's key awaiting its value
    std::string anchor;
  };

  Result<Json> Run(yaml_parser_t& parser) {
    std::optional<Json> root;
    int documents = 0;
    for (;;) {
      yaml_event_t event;
      if (yaml_parser_parse(&parser, &event) == 0) {
        return InvalidArgument(fmt::format(
            "line {}, column {}: {}{}", parser.problem_mark.line + 1,
            parser.problem_mark.column + 1, parser.problem ? parser.problem : "malformed YAML",
            parser.context ? fmt::format(" ({})", parser.context) : std::string()));
      }
      const yaml_event_type_t type = event.type;
      const yaml_mark_t mark = event.start_mark;
      Status status = type == YAML_DOCUMENT_START_EVENT && ++documents > 1
                          ? InvalidArgument("a second document; the file must hold one")
                          : Handle(event, root);
      yaml_event_delete(&event);
      if (!status.ok()) {
        return Status(status.code(), fmt::format("line {}, column {}: {}", mark.line + 1,
                                                 mark.column + 1, status.message()));
      }
      if (type == YAML_STREAM_END_EVENT) break;
    }
    return root.value_or(Json(nullptr));
  }

  Status Handle(const yaml_event_t& event, std::optional<Json>& root) {
    switch (event.type) {
      case YAML_MAPPING_START_EVENT:
      case YAML_SEQUENCE_START_EVENT: {
        if (stack_.size() >= kMaxDepth) {
          return InvalidArgument(fmt::format("nesting deeper than {} levels", kMaxDepth));
        }
        const bool map = event.type == YAML_MAPPING_START_EVENT;
        const yaml_char_t* anchor =
            map ? event.data.mapping_start.anchor : event.data.sequence_start.anchor;
        stack_.push_back({.node = map ? Json::object() : Json::array(),
                          .key = std::nullopt,
                          .anchor = anchor ? reinterpret_cast<const char*>(anchor) : ""});
        return Count(1);
      }
      case YAML_MAPPING_END_EVENT:
      case YAML_SEQUENCE_END_EVENT: {
        Frame frame = std::move(stack_.back());
        stack_.pop_back();
        if (!frame.anchor.empty()) anchors_[frame.anchor] = frame.node;
        return Place(std::move(frame.node), root);
      }
      case YAML_SCALAR_EVENT: {
        const auto& s = event.data.scalar;
        const std::string_view value(reinterpret_cast<const char*>(s.value), s.length);
        const std::string_view tag = s.tag ? reinterpret_cast<const char*>(s.tag) : "";
        const bool plain = s.style == YAML_PLAIN_SCALAR_STYLE;
        KVTOPO_ASSIGN_OR_RETURN(Json v, ResolveScalar(value, tag, plain));
        if (s.anchor) anchors_[reinterpret_cast<const char*>(s.anchor)] = v;
        KVTOPO_RETURN_IF_ERROR(Count(1));
        return Place(std::move(v), root);
      }
      case YAML_ALIAS_EVENT: {
        const std::string name = reinterpret_cast<const char*>(event.data.alias.anchor);
        auto it = anchors_.find(name);
        if (it == anchors_.end()) {
          return InvalidArgument(fmt::format("alias '*{}' names no anchor", name));
        }
        KVTOPO_RETURN_IF_ERROR(Count(Size(it->second)));
        return Place(Json(it->second), root);
      }
      default:
        return Status::Ok();
    }
  }

  // Puts a finished value in its parent: a key, a key's value, an item, or the root.
  Status Place(Json value, std::optional<Json>& root) {
    if (stack_.empty()) {
      root = std::move(value);
      return Status::Ok();
    }
    Frame& parent = stack_.back();
    if (parent.node.is_array()) {
      parent.node.push_back(std::move(value));
      return Status::Ok();
    }
    if (!parent.key) {
      if (value.is_object() || value.is_array()) {
        return InvalidArgument("a mapping or sequence used as a key");
      }
      if (value.is_string() && value.get<std::string>() == "<<") {
        return InvalidArgument("merge keys (<<) are not read; write the keys out");
      }
      parent.key = FlagArgText(value);
      return Status::Ok();
    }
    // A repeated key keeps its first place and takes the last value, as a Python dict does.
    parent.node[*parent.key] = std::move(value);
    parent.key.reset();
    return Status::Ok();
  }

  static int64_t Size(const Json& v) {
    int64_t n = 1;
    if (v.is_structured()) {
      for (const Json& item : v) n += Size(item);
    }
    return n;
  }

  Status Count(int64_t n) {
    nodes_ += n;
    if (nodes_ > kMaxNodes) {
      return InvalidArgument(fmt::format("more than {} values (aliases count again)", kMaxNodes));
    }
    return Status::Ok();
  }

  std::vector<Frame> stack_;
  std::map<std::string, Json> anchors_;
  int64_t nodes_ = 0;
};

#endif  // KVTOPO_HAVE_LIBYAML

}  // namespace

Result<VllmConfigFileArgs> VllmConfigFileArgsFromYaml(std::string_view text,
                                                      std::string_view path) {
#if KVTOPO_HAVE_LIBYAML
  TreeBuilder builder;
  Result<Json> root = builder.Build(text);
  if (!root.ok()) {
    return InvalidArgument(fmt::format("--config {}: {}", path, root.status().message()));
  }
  if (!root->is_object()) {
    return InvalidArgument(
        fmt::format("--config {}: the file must be a mapping of flag names to values (e.g. "
                    "'tensor-parallel-size: 4'), got {}",
                    path, root->is_null() ? "an empty document" : root->type_name()));
  }
  VllmConfigFileArgs out;
  for (const auto& [key, value] : root->items()) {
    const std::string flag = "--" + key;
    if (value.is_boolean()) {
      // The engine passes a switch only when it is true: false drops the key.
      if (value.get<bool>()) {
        out.args.push_back(flag);
      } else if (FindLaunchOption(key) != nullptr) {
        out.diagnostics.push_back(
            {.severity = Severity::kWarning,
             .code = "config-file-false-dropped",
             .message = fmt::format(
                 "--config {}: '{}: false' is dropped: the engine passes a config file's switch "
                 "only when it is true, so {} keeps its default; write 'no-{}: true' to turn it "
                 "off",
                 path, key, flag, key)});
      }
    } else if (value.is_array()) {
      if (value.empty()) continue;  // the engine drops an empty list
      out.args.push_back(flag);
      for (const Json& item : value) out.args.push_back(FlagArgText(item));
    } else {
      out.args.push_back(flag);
      out.args.push_back(FlagArgText(value));
    }
  }
  return out;
#else
  (void)text;
  return InvalidArgument(fmt::format(
      "--config {}: this kvtopo was built without libyaml, so it cannot read YAML config files; "
      "install libyaml-dev and rebuild, or pass the file's flags on the command line",
      path));
#endif
}

Result<VllmConfigFileArgs> ReadVllmConfigFile(const std::string& path) {
  // The engine checks the name first: the text after the last '.' must be yaml or yml.
  const size_t dot = path.rfind('.');
  const std::string extension = dot == std::string::npos ? path : path.substr(dot + 1);
  if (extension != "yaml" && extension != "yml") {
    return InvalidArgument(fmt::format(
        "--config {}: a config file must be a .yaml or .yml file, got '{}'", path, extension));
  }
  KVTOPO_ASSIGN_OR_RETURN(std::string text,
                          internal::ReadTextFile(path, kMaxConfigFileBytes, "--config"));
  return VllmConfigFileArgsFromYaml(text, path);
}

}  // namespace kvtopo
