// `kvtopo plan` and `kvtopo check`.
#include <cstdio>
#include <fstream>
#include <memory>

#include "commands.h"
#include "internal/json_text.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"
#include "launch_flags.h"
#include "plan/plan_json.h"

namespace kvtopo::cli {
namespace {

struct PlanArgs {
  LaunchFlags launch;
  bool json = false;
  std::string svg_path;
};

Result<Plan> MakePlan(const PlanArgs& args) {
  KVTOPO_ASSIGN_OR_RETURN(LaunchConfig config, ToLaunchConfig(args.launch));
  return PlanLaunch(config);
}

int RunPlan(const PlanArgs& args) {
  auto plan = MakePlan(args);
  if (!plan.ok()) return ReportError(plan.status());
  if (!args.svg_path.empty()) {
    std::ofstream out(args.svg_path);
    out << RenderPlanSvg(*plan);
    if (!out) {
      return ReportError(InvalidArgument("--svg: cannot write '" + args.svg_path + "'"));
    }
  }
  if (args.json) {
    std::printf("%s\n", PlanToJsonText(*plan).c_str());
  } else {
    std::fputs(FormatPlanTable(*plan).c_str(), stdout);
  }
  return plan->accepted() ? kExitOk : kExitRejected;
}

int RunCheck(const PlanArgs& args) {
  auto config = ToLaunchConfig(args.launch);
  if (!config.ok()) return ReportError(config.status());
  auto plan = PlanLaunch(*config);
  // A launch rejected before a plan exists is a verdict too: its one error diagnostic.
  if (!plan.ok() && plan.status().code() != StatusCode::kRejected) {
    return ReportError(plan.status());
  }
  const bool accepted = plan.ok() && plan->accepted();
  const std::vector<Diagnostic> diagnostics =
      plan.ok() ? plan->diagnostics : std::vector<Diagnostic>{RejectionDiagnostic(plan.status())};
  if (args.json) {
    const nlohmann::json check{{"accepted", accepted},
                               {"diagnostics", internal::DiagnosticsToJson(diagnostics)}};
    std::printf("%s\n", internal::JsonText(check, 2).c_str());
  } else {
    const std::string& model = plan.ok() ? plan->model.model_name : config->model;
    if (accepted) {
      std::printf("accepted: %s, %lld tokens of KV cache (%.2f max-length requests)\n",
                  model.c_str(), static_cast<long long>(plan->capacity.max_tokens),
                  plan->capacity.max_concurrency);
    } else {
      std::printf("rejected: %s\n", model.c_str());
    }
    for (const Diagnostic& d : diagnostics) {
      std::printf("  %s [%s] %s\n", std::string(SeverityName(d.severity)).c_str(), d.code.c_str(),
                  d.message.c_str());
    }
  }
  return accepted ? kExitOk : kExitRejected;
}

}  // namespace

void RegisterPlanCommands(CLI::App& app, CommandRegistry& registry) {
  auto plan_args = std::make_shared<PlanArgs>();
  CLI::App* plan = app.add_subcommand(
      "plan", "plan a launch: cache groups, geometry per group, pool layout, capacity");
  AddLaunchFlags(plan, plan_args->launch);
  plan->add_flag("--json", plan_args->json, "print the plan as JSON (docs/plan-json.md)");
  plan->add_option("--svg", plan_args->svg_path, "write an SVG drawing of the pool to FILE");
  registry.Add(plan, [plan_args] { return RunPlan(*plan_args); });

  auto check_args = std::make_shared<PlanArgs>();
  CLI::App* check = app.add_subcommand(
      "check", "accept (exit 0) or reject (exit 1, with every diagnostic) a launch");
  AddLaunchFlags(check, check_args->launch);
  check->add_flag("--json", check_args->json, "print {accepted, diagnostics} as JSON");
  registry.Add(check, [check_args] { return RunCheck(*check_args); });
}

}  // namespace kvtopo::cli
