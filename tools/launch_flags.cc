#include "launch_flags.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "internal/ascii_case.h"
#include "internal/json_text.h"
#include "internal/units.h"

namespace kvtopo::cli {
namespace {

constexpr const char* kNotPlannedFlag = "--vllm-flag-not-planned";
// Each occurrence's value, as JSON: {"flag", "on"} for a switch, {"flag", "values"} for a value,
// {"flag", "key", "value"} for a JSON flag's dotted key.
constexpr const char* kNotPlannedValue = "--vllm-flag-not-planned-value";
constexpr const char* kSpeculativeKey = "--speculative-config-key";
constexpr const char* kHfOverridesKey = "--hf-overrides-key";
constexpr const char* kKvTransferKey = "--kv-transfer-config-key";
constexpr const char* kEcTransferKey = "--ec-transfer-config-key";
constexpr const char* kCompilationKey = "--compilation-config-key";
constexpr const char* kAttentionKey = "--attention-config-key";
constexpr const char* kKernelKey = "--kernel-config-key";
constexpr const char* kEplbKey = "--eplb-config-key";
constexpr const char* kIrOpPriorityKey = "--ir-op-priority-key";
constexpr const char* kDefaultMmLorasKey = "--default-mm-loras-key";
constexpr const char* kLaunchDiagnosticFlag = "--launch-diagnostic";
constexpr const char* kTypedSpellingFlag = "--launch-option-spelling";

// The launch options whose JSON value also takes dotted keys (--FLAG.KEY VALUE): the hidden
// option NormalizeVllmArgs records each key in, where LaunchFlags keeps them, and the warning
// when the flag is given whole too.
struct DottedJsonOption {
  std::string_view option;
  const char* hidden;
  const char* replaced_code;
  std::vector<std::string> LaunchFlags::*keys;
  std::optional<std::string> LaunchOptions::*value;
};
const DottedJsonOption kDottedJsonOptions[] = {
    {"speculative_config", kSpeculativeKey, "speculative-config-replaced",
     &LaunchFlags::speculative_keys, &LaunchOptions::speculative_config},
    {"hf_overrides", kHfOverridesKey, "hf-overrides-replaced", &LaunchFlags::hf_override_keys,
     &LaunchOptions::hf_overrides},
    {"kv_transfer_config", kKvTransferKey, "kv-transfer-config-replaced",
     &LaunchFlags::kv_transfer_keys, &LaunchOptions::kv_transfer_config},
    {"ec_transfer_config", kEcTransferKey, "ec-transfer-config-replaced",
     &LaunchFlags::ec_transfer_keys, &LaunchOptions::ec_transfer_config},
    {"compilation_config", kCompilationKey, "compilation-config-replaced",
     &LaunchFlags::compilation_keys, &LaunchOptions::compilation_config},
    {"attention_config", kAttentionKey, "attention-config-replaced", &LaunchFlags::attention_keys,
     &LaunchOptions::attention_config},
    {"kernel_config", kKernelKey, "kernel-config-replaced", &LaunchFlags::kernel_keys,
     &LaunchOptions::kernel_config},
    {"eplb_config", kEplbKey, "eplb-config-replaced", &LaunchFlags::eplb_keys,
     &LaunchOptions::eplb_config},
    {"ir_op_priority", kIrOpPriorityKey, "ir-op-priority-replaced",
     &LaunchFlags::ir_op_priority_keys, &LaunchOptions::ir_op_priority},
    {"default_mm_loras", kDefaultMmLorasKey, "default-mm-loras-replaced",
     &LaunchFlags::default_mm_loras_keys, &LaunchOptions::default_mm_loras},
};

std::string FlagNames(const LaunchOption& o) {
  std::string names = FlagName(o.name);
  for (std::string_view alias : o.aliases) names += "," + FlagName(alias);
  if (o.value == OptionValue::kSwitch) names += ",!" + FlagName("no_" + std::string(o.name));
  return names;
}

// Whether argparse reads `arg` as a flag rather than a value: a leading dash, unless it is a
// negative number ("-1", "-0.5").
bool IsFlagLike(std::string_view arg) {
  if (!arg.starts_with("-") || arg.size() < 2) return false;
  return arg.find_first_not_of("0123456789.", 1) != std::string_view::npos;
}

// argparse's allow_abbrev, which the engine's parser keeps: a long flag that names no flag but
// begins exactly one flag's spellings is that flag ("--max-model" is --max-model-len); one that
// begins several is an error naming them, as argparse's "ambiguous option". The flags are the
// launch options (and their --no- forms), the serve flags not planned (but those of older
// releases), --model, --config, and the subcommand's own.
Result<std::string> ExpandAbbreviation(const std::string& name, const CLI::App* sub) {
  if (!name.starts_with("--") || name.size() < 3) return name;
  if (FindLaunchOption(name) || FindVllmFlagNotPlanned(name) || name == "--model" ||
      name == "--config" || (sub != nullptr && sub->get_option_no_throw(name) != nullptr)) {
    return name;
  }
  if (name.starts_with("--no-")) {
    const LaunchOption* negated = FindLaunchOption(name.substr(5));
    if (negated != nullptr && negated->value == OptionValue::kSwitch) return name;
  }
  // Each match: the spelling that matched, keyed by the flag it spells (one flag, one match).
  std::map<std::string, std::string> matches;
  auto consider = [&](const std::string& spelling, const std::string& flag) {
    if (spelling.starts_with(name) && !matches.count(flag)) matches[flag] = spelling;
  };
  for (const LaunchOption& o : LaunchOptionTable()) {
    const std::string flag = FlagName(o.name);
    consider(flag, flag);
    for (std::string_view alias : o.aliases) consider(FlagName(alias), flag);
    if (o.value == OptionValue::kSwitch) {
      const std::string negated = FlagName("no_" + std::string(o.name));
      consider(negated, negated);
    }
  }
  for (const VllmFlag& f : VllmFlagsNotPlanned()) {
    // A removed flag is read by its whole name only: the engine's parser no longer has it.
    if (!f.name.starts_with("--") || f.removed) continue;
    consider(f.name, f.name);
    if (!f.takes_value) consider("--no-" + f.name.substr(2), "--no-" + f.name.substr(2));
  }
  consider("--model", "--model");
  consider("--config", "--config");
  if (sub != nullptr) {
    for (const CLI::Option* o : sub->get_options()) {
      if (o->get_group().empty()) continue;  // the hidden options NormalizeVllmArgs writes
      for (const std::string& long_name : o->get_lnames()) {
        consider("--" + long_name, "--" + long_name);
      }
    }
  }
  if (matches.size() == 1) return matches.begin()->second;
  if (matches.size() > 1) {
    std::vector<std::string> spellings;
    for (const auto& [flag, spelling] : matches) spellings.push_back(spelling);
    return InvalidArgument(
        fmt::format("ambiguous option: {} could match {}", name, fmt::join(spellings, ", ")));
  }
  return name;
}

std::string FlagHelp(const LaunchOption& o) {
  std::string help(o.help);
  if (!o.short_flag.empty()) help += fmt::format(" (-{})", o.short_flag);
  if (!o.env.empty()) help += fmt::format(" [env {}]", o.env);
  return help;
}

}  // namespace

std::string FlagName(std::string_view option_name) {
  std::string flag = "--" + std::string(option_name);
  std::replace(flag.begin() + 2, flag.end(), '_', '-');
  return flag;
}

void AddLaunchFlags(CLI::App* app, LaunchFlags& f) {
  f.app = app;
  app->add_option("model", f.model,
                  "embedded profile name (kvtopo profiles), a Hugging Face repo id a profile "
                  "serves, a config.json path, or a directory holding one; default: the Kimi-K3 "
                  "TP16/DCP16 DSpark production launch");
  const std::vector<LaunchOption>& table = LaunchOptionTable();
  f.slots.assign(table.size(), {});  // sized once: CLI11 keeps references into it
  for (size_t i = 0; i < table.size(); ++i) {
    const LaunchOption& o = table[i];
    // A flag given twice keeps its last value, as the engine's argparse parser does (and as a
    // --config file's values yield to the command line's).
    if (o.value == OptionValue::kSwitch) {
      app->add_flag(FlagNames(o), f.slots[i].on, FlagHelp(o))
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    } else {
      app->add_option(FlagNames(o), f.slots[i].text, FlagHelp(o))
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  }
  // Hidden options NormalizeVllmArgs writes, one value per occurrence (a positional after one
  // is not its value).
  for (auto [name, values] : {std::pair{kNotPlannedFlag, &f.not_planned},
                              std::pair{kNotPlannedValue, &f.not_planned_values},
                              std::pair{kLaunchDiagnosticFlag, &f.launch_diagnostics},
                              std::pair{kTypedSpellingFlag, &f.typed_spellings}}) {
    app->add_option(name, *values)->group("")->allow_extra_args(false);
  }
  for (const DottedJsonOption& d : kDottedJsonOptions) {
    app->add_option(d.hidden, f.*d.keys)->group("")->allow_extra_args(false);
  }
}

namespace {

// The engine parser's recursive_dict_update: objects merge into objects, lists are appended to
// lists, anything else takes the later value.
void MergeParsedArgument(nlohmann::json& original, const nlohmann::json& update) {
  for (const auto& [key, value] : update.items()) {
    if (value.is_object() && original.contains(key) && original[key].is_object()) {
      MergeParsedArgument(original[key], value);
    } else if (value.is_array() && original.contains(key) && original[key].is_array()) {
      for (const nlohmann::json& item : value) original[key].push_back(item);
    } else {
      original[key] = value;
    }
  }
}

// One JSON flag's dotted arguments, each KEY=VALUE as NormalizeVllmArgs records them, folded as
// the engine's parser folds them (FlexibleArgumentParser.parse_args): a value is JSON when it
// parses as such, else an integer with vLLM's suffixes ("4k"), else a string; KEY+ takes a
// comma-separated list of strings; A.B nests; the objects then merge in order.
nlohmann::json FoldDottedArguments(const std::vector<std::string>& entries) {
  nlohmann::json folded = nlohmann::json::object();
  for (const std::string& entry : entries) {
    const size_t eq = entry.find('=');
    std::string key = entry.substr(0, eq);
    const std::string text = eq == std::string::npos ? "" : entry.substr(eq + 1);
    nlohmann::json value;
    if (key.ends_with('+')) {
      key.pop_back();
      value = internal::SplitOnCommas(text);
    } else {
      value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (value.is_discarded()) {
        const Result<int64_t> n = ParseHumanInt(text, key);
        value = n.ok() ? nlohmann::json(*n) : nlohmann::json(text);
      }
    }
    for (size_t dot = key.rfind('.'); dot != std::string::npos; dot = key.rfind('.')) {
      value = nlohmann::json{{key.substr(dot + 1), std::move(value)}};
      key.resize(dot);
    }
    MergeParsedArgument(folded, nlohmann::json{{key, std::move(value)}});
  }
  return folded;
}

}  // namespace

Result<LaunchOptions> ToLaunchOptions(const LaunchFlags& f) {
  LaunchOptions o;
  o.model = f.model;
  std::map<std::string, std::string, std::less<>> typed;  // canonical flag -> last spelling
  for (const std::string& entry : f.typed_spellings) {
    const size_t eq = entry.find('=');
    typed[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  const std::vector<LaunchOption>& table = LaunchOptionTable();
  for (size_t i = 0; i < table.size(); ++i) {
    const LaunchOption& option = table[i];
    const std::string canonical = FlagName(option.name);
    const CLI::Option* cli = f.app->get_option(canonical);
    if (cli->count() == 0) continue;
    const auto spelled = typed.find(canonical);
    const std::string source = spelled != typed.end() ? spelled->second : canonical;
    if (option.value == OptionValue::kSwitch) {
      KVTOPO_RETURN_IF_ERROR(SetLaunchOption(o, option, f.slots[i].on, source));
    } else {
      KVTOPO_RETURN_IF_ERROR(SetLaunchOption(o, option, f.slots[i].text, source));
    }
  }
  // The engine's parser folds a JSON flag's --FLAG.KEY VALUE arguments into one value that it
  // appends after every other argument, so it replaces the flag given as JSON (argparse keeps
  // the later one).
  const auto use_folded = [&](const std::vector<std::string>& entries, std::string_view flag,
                              std::string_view code, std::optional<std::string>& value) {
    const nlohmann::json folded = FoldDottedArguments(entries);
    if (value) {
      o.diagnostics.push_back(
          {.severity = Severity::kWarning,
           .code = std::string(code),
           .message = fmt::format("{} {} is dropped: the engine's parser folds the {}.KEY "
                                  "arguments into a value of their own that replaces it, so the "
                                  "plan uses {} only; give every key in one form",
                                  flag, *value, flag, internal::JsonText(folded))});
    }
    value = internal::JsonText(folded);
  };
  for (const DottedJsonOption& d : kDottedJsonOptions) {
    if (!(f.*d.keys).empty())
      use_folded(f.*d.keys, FlagName(d.option), d.replaced_code, o.*d.value);
  }
  o.not_planned = f.not_planned;
  // The flags not planned with, one entry each in the order first given, with the value argparse
  // keeps: the last one, and for a JSON flag its dotted keys folded as above.
  std::map<std::string, std::vector<std::string>> dotted;  // flag -> KEY=VALUE
  const auto entry = [&](const std::string& flag) -> VllmFlagValue& {
    for (VllmFlagValue& v : o.not_planned_values) {
      if (v.flag == flag) return v;
    }
    return o.not_planned_values.emplace_back(VllmFlagValue{.flag = flag});
  };
  for (const std::string& text : f.not_planned_values) {
    const nlohmann::json r = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!r.is_object() || !r.contains("flag")) continue;  // written by NormalizeVllmArgs only
    VllmFlagValue& v = entry(r.value("flag", ""));
    if (r.contains("key")) {
      dotted[v.flag].push_back(r.value("key", "") + "=" + r.value("value", ""));
    } else if (r.contains("on")) {
      v.on = r.value("on", true);
    } else {
      v.values = r.value("values", std::vector<std::string>{});
    }
  }
  for (const auto& [flag, entries] : dotted) {
    VllmFlagValue& v = entry(flag);
    std::optional<std::string> whole;
    if (!v.values.empty()) whole = v.values.front();
    use_folded(entries, flag, flag.substr(2) + "-replaced", whole);
    v.values = {*whole};
  }
  for (const std::string& text : f.launch_diagnostics) {
    const nlohmann::json d = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    o.diagnostics.push_back({.severity = Severity::kWarning,
                             .code = d.value("code", ""),
                             .message = d.value("message", "")});
  }
  KVTOPO_RETURN_IF_ERROR(
      ApplyLaunchEnvironment(o, [](const char* name) { return std::getenv(name); }));
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    if (EngineEnvironmentName(variable.substr(0, variable.find('=')))) {
      o.vllm_environment.emplace_back(variable);
    }
  }
  return o;
}

Result<LaunchConfig> ToLaunchConfig(const LaunchFlags& f) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchOptions o, ToLaunchOptions(f));
  return ::kvtopo::ToLaunchConfig(o);
}

int ExitCodeFor(const Status& status) {
  if (status.ok()) return kExitOk;
  return status.code() == StatusCode::kRejected || status.code() == StatusCode::kInternal
             ? kExitRejected
             : kExitUsage;
}

int ReportError(const Status& status) {
  std::fprintf(stderr, "kvtopo: %s\n", status.message().c_str());
  return ExitCodeFor(status);
}

Result<std::vector<std::string>> NormalizeVllmArgs(int argc, char** argv, const CLI::App& app) {
  struct Arg {
    std::string text;
    bool from_config = false;  // from a --config file: the engine's flags, never a subcommand's
  };
  std::vector<Arg> in;
  for (int i = 0; i < argc; ++i) in.push_back({argv[i]});
  std::vector<std::string> out;
  if (!in.empty()) out.push_back(in[0].text);
  const CLI::App* sub = nullptr;
  if (in.size() > 1) {
    for (const CLI::App* candidate : app.get_subcommands([](const CLI::App*) { return true; })) {
      if (candidate->check_name(in[1].text)) sub = candidate;
    }
  }
  std::vector<std::string> diagnostics;  // JSON {code, message} for kLaunchDiagnosticFlag
  if (sub != nullptr && sub->get_option_no_throw(kNotPlannedFlag) != nullptr) {
    // `--config FILE`: the file's flags go right after the subcommand and a MODEL given first,
    // so the command line's own come later and win (FlexibleArgumentParser
    // ._pull_args_from_config).
    auto is_config = [](const Arg& a) { return a.text == "--config"; };
    const auto first = std::find_if(in.begin() + 2, in.end(), is_config);
    if (first != in.end()) {
      if (std::count_if(first, in.end(), is_config) > 1) {
        return InvalidArgument("--config is given more than once; the engine reads one file");
      }
      if (first + 1 == in.end()) return InvalidArgument("--config needs a file");
      KVTOPO_ASSIGN_OR_RETURN(VllmConfigFileArgs file, ReadVllmConfigFile((first + 1)->text));
      in.erase(first, first + 2);
      std::vector<Arg> inserted;
      for (std::string& a : file.args) inserted.push_back({std::move(a), true});
      const bool model_first = in.size() > 2 && !in[2].text.starts_with("-");
      in.insert(in.begin() + (model_first ? 3 : 2), inserted.begin(), inserted.end());
      for (const Diagnostic& d : file.diagnostics) {
        diagnostics.push_back(internal::JsonText({{"code", d.code}, {"message", d.message}}));
      }
    }
  }
  // The argument after in[i] as a flag's value, when there is one; consumed.
  auto take_value = [&](size_t& i, bool unless_flag) -> std::optional<std::string> {
    if (i + 1 >= in.size() || (unless_flag && IsFlagLike(in[i + 1].text))) return std::nullopt;
    return in[++i].text;
  };
  bool model_given = false;               // a positional MODEL on the command line
  std::optional<std::string> file_model;  // `model:` of a --config file
  for (size_t i = 1; i < in.size(); ++i) {
    const std::string& arg = in[i].text;
    const bool from_config = in[i].from_config;
    if (arg == "--") {  // everything after is positional
      for (size_t k = i; k < in.size(); ++k) out.push_back(in[k].text);
      model_given = model_given || i + 1 < in.size();
      break;
    }
    if (!arg.starts_with("-") || arg.size() < 2) {
      model_given = model_given || i > 1;
      out.push_back(arg);
      continue;
    }
    const size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    std::optional<std::string> attached =
        eq == std::string::npos ? std::nullopt : std::optional<std::string>(arg.substr(eq + 1));
    // The engine's parser reads -O<x> as --optimization-level <x>, whatever x is (-O3, -O=3).
    if (arg.starts_with("-O") && arg.size() > 2 && arg[2] != '=') {
      name = "-O";
      attached = arg.substr(2);
    }
    if (name == "--config" && attached) {
      // The engine pulls a file in only from `--config FILE`; `--config=FILE` is stored and
      // never read.
      diagnostics.push_back(internal::JsonText(
          {{"code", "config-file-ignored"},
           {"message", fmt::format("{} is ignored: the engine reads a config file only from "
                                   "'--config FILE' (two arguments), so the plan ignores it too",
                                   arg)}}));
      continue;
    }
    // A dotted key of a JSON flag: --speculative-config.method, -cc.mode.
    const size_t dot = name.find('.');
    std::string key = dot == std::string::npos ? "" : name.substr(dot + 1);
    if (dot != std::string::npos) name.resize(dot);
    std::string short_spelling;  // "-tp" when typed so
    if (name.starts_with("--")) {
      std::replace(name.begin() + 2, name.end(), '_', '-');
    } else if (name[1] != '-') {
      // vLLM's single-dash long aliases of launch options: -tp, -dcp, -sc, ...
      for (const LaunchOption& o : LaunchOptionTable()) {
        if (!o.short_flag.empty() && name.substr(1) == o.short_flag) {
          short_spelling = name;
          name = FlagName(o.name);
        }
      }
    }
    if (key.empty()) {
      KVTOPO_ASSIGN_OR_RETURN(name, ExpandAbbreviation(name, from_config ? nullptr : sub));
    }
    const CLI::Option* own =
        from_config || sub == nullptr ? nullptr : sub->get_option_no_throw(name);
    const bool own_flag = own != nullptr;
    if (!key.empty()) {
      // The engine's parser takes the next argument as the key's value unless one is attached,
      // and folds every key of one flag into a single JSON value.
      const std::string value = attached ? *attached : take_value(i, false).value_or("");
      const auto* dotted =
          std::find_if(std::begin(kDottedJsonOptions), std::end(kDottedJsonOptions),
                       [&](const DottedJsonOption& d) { return name == FlagName(d.option); });
      if (dotted != std::end(kDottedJsonOptions)) {
        out.push_back(fmt::format("{}={}={}", dotted->hidden, key, value));
        continue;
      }
      const VllmFlag* flag = own_flag ? nullptr : FindVllmFlagNotPlanned(name + "." + key);
      if (flag != nullptr) {
        out.push_back(fmt::format("{}={}.{}", kNotPlannedFlag, name, key));
        out.push_back(fmt::format(
            "{}={}", kNotPlannedValue,
            internal::JsonText({{"flag", flag->name}, {"key", key}, {"value", value}})));
        continue;
      }
      out.push_back(arg);  // not a JSON flag: CLI11 reports it
      if (!attached) out.push_back(value);
      continue;
    }
    if (name == "--model" && !own_flag) {
      // `vllm serve --model M` is `vllm serve M`; a config file's model yields to the command
      // line's.
      if (const std::optional<std::string> model = attached ? attached : take_value(i, false)) {
        if (from_config) {
          file_model = *model;
        } else {
          model_given = true;
          out.push_back(*model);
        }
        continue;
      }
    }
    if (!own_flag && !FindLaunchOption(name)) {
      if (const VllmFlag* flag = FindVllmFlagNotPlanned(name)) {
        // Swallow the flag's values too (as many as its arity takes); record the flag by name,
        // and its values for the checks the engine's parser makes of them.
        nlohmann::json record = {{"flag", flag->name}};
        if (!flag->takes_value) {
          record["on"] = name == flag->name;
        } else {
          std::vector<std::string> values;
          if (attached) {
            values.push_back(*attached);
          } else if (name == flag->name) {
            switch (flag->values) {
              case VllmFlag::Values::kOne:
              case VllmFlag::Values::kOptional:
                if (std::optional<std::string> v = take_value(i, true)) values.push_back(*v);
                break;
              case VllmFlag::Values::kOneOrMore:
                while (std::optional<std::string> v = take_value(i, true)) values.push_back(*v);
                break;
            }
          }
          record["values"] = values;
        }
        out.push_back(fmt::format("{}={}", kNotPlannedFlag, name));
        out.push_back(fmt::format("{}={}", kNotPlannedValue, internal::JsonText(record)));
        continue;
      }
    }
    const LaunchOption* option = FindLaunchOption(name);
    if (option != nullptr) {  // every occurrence: the last one's spelling names the value
      out.push_back(fmt::format("{}={}={}", kTypedSpellingFlag, FlagName(option->name),
                                short_spelling.empty() ? name : short_spelling));
    }
    out.push_back(attached ? name + "=" + *attached : name);
    // A flag's value is not a MODEL: pass it on as is.
    if (option != nullptr && option->many_values && !attached) {
      // One or more values (argparse nargs "+"): every following argument that is not a flag.
      std::string values;
      while (const std::optional<std::string> v = take_value(i, true)) {
        values += (values.empty() ? "" : " ") + *v;
      }
      if (!values.empty()) out.push_back(values);
      continue;
    }
    const bool takes_value = option != nullptr ? option->value != OptionValue::kSwitch
                                               : own_flag && own->get_items_expected_min() > 0;
    if (takes_value && !attached && i + 1 < in.size()) out.push_back(in[++i].text);
  }
  if (file_model && !model_given) out.push_back(*file_model);
  for (const std::string& d : diagnostics)
    out.push_back(fmt::format("{}={}", kLaunchDiagnosticFlag, d));
  return out;
}

}  // namespace kvtopo::cli
