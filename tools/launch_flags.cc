#include "launch_flags.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "internal/json_text.h"

namespace kvtopo::cli {
namespace {

constexpr const char* kNotPlannedFlag = "--vllm-flag-not-planned";
constexpr const char* kSpeculativeKey = "--speculative-config-key";

std::string FlagNames(const LaunchOption& o) {
  std::string names = FlagName(o.name);
  for (std::string_view alias : o.aliases) names += "," + FlagName(alias);
  if (o.value == OptionValue::kSwitch) names += ",!" + FlagName("no_" + std::string(o.name));
  return names;
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
    if (o.value == OptionValue::kSwitch) {
      app->add_flag(FlagNames(o), f.slots[i].on, FlagHelp(o));
    } else {
      app->add_option(FlagNames(o), f.slots[i].text, FlagHelp(o));
    }
  }
  app->add_option(kNotPlannedFlag, f.not_planned)->group("");
  app->add_option(kSpeculativeKey, f.speculative_keys)->group("");
}

Result<LaunchOptions> ToLaunchOptions(const LaunchFlags& f) {
  LaunchOptions o;
  o.model = f.model;
  const std::vector<LaunchOption>& table = LaunchOptionTable();
  for (size_t i = 0; i < table.size(); ++i) {
    const LaunchOption& option = table[i];
    const CLI::Option* cli = f.app->get_option(FlagName(option.name));
    if (cli->count() == 0) continue;
    const std::string source = fmt::format("--{}", cli->get_name().substr(2));
    if (option.value == OptionValue::kSwitch) {
      KVTOPO_RETURN_IF_ERROR(SetLaunchOption(o, option, f.slots[i].on, source));
    } else {
      KVTOPO_RETURN_IF_ERROR(SetLaunchOption(o, option, f.slots[i].text, source));
    }
  }
  if (!f.speculative_keys.empty()) {
    // --speculative-config.KEY VALUE entries override the JSON's keys; values are JSON scalars
    // when they parse as such, else strings.
    nlohmann::json spec = nlohmann::json::object();
    if (o.speculative_config) {
      spec = nlohmann::json::parse(*o.speculative_config, nullptr, /*allow_exceptions=*/false);
      if (!spec.is_object()) {
        return InvalidArgument(
            "--speculative-config must be a JSON object when --speculative-config.KEY flags "
            "add to it");
      }
    }
    for (const std::string& entry : f.speculative_keys) {
      const size_t eq = entry.find('=');
      const std::string key = entry.substr(0, eq);
      const std::string text = eq == std::string::npos ? "" : entry.substr(eq + 1);
      nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (value.is_discarded() || value.is_object() || value.is_array()) value = text;
      spec[key] = value;
    }
    o.speculative_config = internal::JsonText(spec);
  }
  o.not_planned = f.not_planned;
  KVTOPO_RETURN_IF_ERROR(
      ApplyLaunchEnvironment(o, [](const char* name) { return std::getenv(name); }));
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

std::vector<std::string> NormalizeVllmArgs(int argc, char** argv, const CLI::App& app) {
  std::vector<std::string> in(argv, argv + argc), out;
  if (!in.empty()) out.push_back(in[0]);
  const CLI::App* sub = nullptr;
  if (in.size() > 1) {
    for (const CLI::App* candidate : app.get_subcommands([](const CLI::App*) { return true; })) {
      if (candidate->check_name(in[1])) sub = candidate;
    }
  }
  for (size_t i = 1; i < in.size(); ++i) {
    std::string arg = in[i];
    if (arg == "--") {  // everything after is positional
      out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(i), in.end());
      break;
    }
    const size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    const std::string attached = eq == std::string::npos ? "" : arg.substr(eq);
    if (name.starts_with("--")) {
      // Dashes for underscores in the flag's name; a dotted key after it keeps its spelling.
      const auto key = std::find(name.begin(), name.end(), '.');
      std::replace(name.begin() + 2, key, '_', '-');
    } else if (name.size() > 1 && name[0] == '-' && name[1] != '-') {
      // vLLM's single-dash long aliases of launch options: -tp, -dcp, -pp, ...
      for (const LaunchOption& o : LaunchOptionTable()) {
        if (!o.short_flag.empty() && name.substr(1) == o.short_flag) name = FlagName(o.name);
      }
    }
    if (name.starts_with("--speculative-config.")) {
      std::string value = attached.empty() ? "" : attached.substr(1);
      if (attached.empty() && i + 1 < in.size()) value = in[++i];
      out.push_back(fmt::format("{}={}={}", kSpeculativeKey, name.substr(21), value));
      continue;
    }
    const bool own_flag = sub != nullptr && sub->get_option_no_throw(name) != nullptr;
    if (!own_flag && (!FindLaunchOption(name) || name.find('.') != std::string::npos)) {
      if (const VllmFlag* flag = FindVllmFlagNotPlanned(name)) {
        // Swallow the flag's value too; record the flag by name.
        if (flag->takes_value && attached.empty() && name == flag->name && i + 1 < in.size() &&
            !in[i + 1].starts_with("--")) {
          ++i;
        }
        out.push_back(fmt::format("{}={}", kNotPlannedFlag, name));
        continue;
      }
    }
    out.push_back(name + attached);
  }
  return out;
}

}  // namespace kvtopo::cli
