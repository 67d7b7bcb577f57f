// kvtopo._kvtopo: the Python binding of the planner, the runtime and the worker helpers.
//
// Contract with Python callers:
//   * launch options are the CLI's long flag names with underscores and mean exactly what the
//     flags mean (tools/launch_flags.cc); messages are the library's, unchanged;
//   * a Status error becomes ValueError (invalid argument), kvtopo.RejectedError (rejected
//     configuration), LookupError (not found), OverflowError (out of range) or RuntimeError;
//   * the library's rules and messages are the C++ ones (a misused manager returns a Status);
//     the binding translates arguments and results and checks only what it converts (types,
//     integer ranges, rows and ranks it indexes), so no Python misuse reaches an abort;
//   * "not enough blocks" is not an error: allocate_slots returns None;
//   * arrays come back as memoryviews over int32/int64 storage (buffer protocol, no NumPy).
//
// Thread safety: the module holds the GIL throughout; a KVCacheManager or BlockTable object must
// not be used from two Python threads at once (as in C++).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "binding_util.h"
#include "internal/json_text.h"
#include "internal/units.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"
#include "plan/plan_json.h"

namespace kvtopo::python {
namespace {

// The options whose value is a JSON object, which Python may give as a dict.
bool IsJsonOption(std::string_view name) {
  return name == "speculative_config" || name == "hf_overrides" || name == "kv_transfer_config" ||
         name == "ec_transfer_config" || name == "rope_scaling" || name == "compilation_config" ||
         name == "attention_config" || name == "kernel_config" || name == "eplb_config" ||
         name == "ir_op_priority" || name == "default_mm_loras";
}

// The text options the engine's Python API takes as a float, which Python may give as a number.
bool IsNumberOption(std::string_view name) {
  return name == "kv_offloading_size" || name == "rope_theta" || name == "gpu_memory_utilization";
}

// ---- launch options ------------------------------------------------------------------------

struct Launch {
  LaunchConfig config;
  std::optional<nlohmann::json> model_json;  // a dict model
};

nlohmann::json PyToJson(py::handle obj) {
  const std::string text = py::module_::import("json").attr("dumps")(obj).cast<std::string>();
  // json.dumps writes NaN and Infinity, which are not JSON: a ValueError naming the model.
  Result<nlohmann::json> parsed = internal::ParseJsonText(text, "model dict");
  ThrowIfError(parsed.status());
  return *std::move(parsed);
}

// to_json's indent: spaces per level, -1 for one line.
int CheckedIndent(int indent) {
  if (indent < -1 || indent > kMaxJsonIndent) {
    RaisePython(PyExc_ValueError, "indent must be in [-1, " + std::to_string(kMaxJsonIndent) +
                                      "] (-1: one line), got " + std::to_string(indent));
  }
  return indent;
}

// Keyword options -> LaunchOptions -> LaunchConfig through the one launch-option table the CLI
// flags use (kvtopo/launch_options.h): the keywords are its names and aliases; None is "not
// given"; the engine's environment variables apply to options not given.
Launch ToLaunch(py::handle model, const py::kwargs& kwargs) {
  LaunchOptions o;
  Launch launch;
  if (py::isinstance<py::dict>(model)) {
    launch.model_json = PyToJson(model);
    o.model = "<config>";  // vLLM's defaults, not the default launch; the display name
  } else if (PyUnicode_Check(model.ptr()) || py::hasattr(model, "__fspath__")) {
    o.model = py::str(py::module_::import("os").attr("fspath")(model));
    if (o.model.empty()) RaisePython(PyExc_ValueError, "model must not be empty");
  } else if (!model.is_none()) {
    RaisePython(
        PyExc_TypeError,
        "model must be None, a profile name, a config path or a dict, got " + TypeName(model));
  }
  // option -> (keyword used, value)
  std::unordered_map<const LaunchOption*, std::pair<std::string, py::handle>> given;
  for (auto [key, value] : kwargs) {
    const std::string name = py::str(key);
    const LaunchOption* option = FindLaunchOption(name);
    if (option == nullptr || name.find('-') != std::string::npos || name == option->short_flag) {
      // A keyword of older releases (EngineArgs' field for a flag the fork removed): refused as
      // the fork's EngineArgs refuses it, naming the fork's form.
      std::string flag_name = "--" + name;
      std::replace(flag_name.begin() + 2, flag_name.end(), '_', '-');
      if (const VllmFlag* flag = FindVllmFlagNotPlanned(flag_name);
          option == nullptr && name.find('-') == std::string::npos && flag != nullptr &&
          flag->removed && flag->name == flag_name) {
        LaunchOptions removed;
        removed.not_planned = {flag->name};
        VllmFlagValue& v =
            removed.not_planned_values.emplace_back(VllmFlagValue{.flag = flag->name});
        // The value as the form shows it: text (undecodable characters kept as bytes) and
        // numbers as given, a list's items so; anything else is shown as VALUE.
        const auto text = [](py::handle h) -> std::optional<std::string> {
          if (PyUnicode_Check(h.ptr())) {
            return h.attr("encode")("utf-8", "surrogateescape").cast<std::string>();
          }
          if ((PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) || PyFloat_Check(h.ptr())) {
            return py::str(h).cast<std::string>();
          }
          return std::nullopt;
        };
        if (PyBool_Check(value.ptr())) {
          v.on = value.ptr() == Py_True;
        } else if (const std::optional<std::string> one = text(value)) {
          v.values = {*one};
        } else if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) {
          for (py::handle item : value) {
            const std::optional<std::string> shown = text(item);
            if (!shown) {
              v.values.clear();
              break;
            }
            v.values.push_back(*shown);
          }
        }
        RaisePython(PyExc_TypeError, "unknown option '" + name + "': " +
                                         std::string(RefuseRemovedFlags(removed).message()));
      }
      std::string list;
      for (const LaunchOption& o : LaunchOptionTable()) {
        if (!list.empty()) list += ", ";
        list += o.name;
      }
      RaisePython(PyExc_TypeError, "unknown option '" + name + "'; accepted options: " + list);
    }
    if (value.is_none()) continue;  // None: not given
    if (auto [it, inserted] = given.emplace(option, std::make_pair(name, value)); !inserted) {
      if (!it->second.second.equal(value)) {
        RaisePython(PyExc_ValueError, it->second.first + " and its alias " + name + " disagree (" +
                                          py::repr(it->second.second).cast<std::string>() + " vs " +
                                          py::repr(value).cast<std::string>() + ")");
      }
      continue;
    }
    // Python types per option: bool for switches, int for integers, int or str for byte sizes,
    // str for text (and a dict for the JSON options).
    std::optional<LaunchValue> v;
    const bool is_bool = PyBool_Check(value.ptr());
    const bool is_int = PyLong_Check(value.ptr()) && !is_bool;
    const bool is_str = PyUnicode_Check(value.ptr());
    std::string expected;
    switch (option->value) {
      case OptionValue::kSwitch:
        if (is_bool) v = value.cast<bool>();
        expected = "a bool";
        break;
      case OptionValue::kInt:
        if (is_int) v = ToInt64(value, name);
        // max_model_len also takes the engine's "auto" (fit the length to the memory).
        if (is_str && option->name == "max_model_len") v = value.cast<std::string>();
        expected = option->name == "max_model_len" ? "an int or 'auto'" : "an int";
        break;
      case OptionValue::kBytes:
        if (is_int) v = ToInt64(value, name);
        if (is_str) v = value.cast<std::string>();
        expected = "an int or a str such as '12GiB'";
        break;
      case OptionValue::kText:
        if (is_str) v = value.cast<std::string>();
        if (IsNumberOption(option->name) && !is_bool && (is_int || PyFloat_Check(value.ptr()))) {
          v = py::repr(value).cast<std::string>();
        }
        if (IsJsonOption(option->name) && py::isinstance<py::dict>(value)) {
          v = py::module_::import("json").attr("dumps")(value).cast<std::string>();
        }
        if (option->many_values &&
            (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value))) {
          // The engine's list: each item as str() gives it, space-separated here.
          std::string joined;
          for (py::handle item : value) {
            joined += (joined.empty() ? "" : " ") + py::str(item).cast<std::string>();
          }
          v = joined;
        }
        expected = IsJsonOption(option->name)     ? "a dict or a JSON str"
                   : IsNumberOption(option->name) ? "a number or a str"
                   : option->many_values          ? "a list or a space-separated str"
                                                  : "a str";
        break;
    }
    if (!v)
      RaisePython(PyExc_TypeError, name + " must be " + expected + ", got " + TypeName(value));
    ThrowIfError(SetLaunchOption(o, *option, *v, name));
  }
  py::object environ = py::module_::import("os").attr("environ");
  ThrowIfError(ApplyLaunchEnvironment(o, [&](const char* name) -> const char* {
    static thread_local std::string value;
    py::object got = environ.attr("get")(name);
    if (got.is_none()) return nullptr;
    value = got.cast<std::string>();
    return value.c_str();
  }));
  // The variables the engine may read, as the CLI passes its own (EngineEnvironmentName),
  // NAME=VALUE (as os.environ holds them, undecodable bytes kept).
  for (const py::handle item : environ.attr("items")()) {
    const auto bytes = [&](int i) {
      return py::reinterpret_borrow<py::tuple>(item)[i]
          .attr("encode")("utf-8", "surrogateescape")
          .cast<std::string>();
    };
    const std::string name = bytes(0);
    if (EngineEnvironmentName(name)) {
      o.vllm_environment.push_back(name + "=" + bytes(1));
    }
  }
  launch.config = ValueOrThrow(ToLaunchConfig(o));
  return launch;
}

// The plan of a launch, or the Status that rejected it before a plan existed (code kRejected);
// other errors raise. `model_name` names the launch for a verdict without a plan.
Result<Plan> TryPlan(py::handle model, const py::kwargs& kwargs, std::string& model_name) {
  const Launch launch = ToLaunch(model, kwargs);
  model_name = launch.config.model;
  Result<Plan> plan = InvalidArgument("unplanned");
  if (launch.model_json) {
    Result<ModelCacheSpecs> specs = BuildModelCacheSpecsFromJson(*launch.model_json, launch.config);
    plan = specs.ok() ? PlanLaunchSpecs(*specs, launch.config) : Result<Plan>(specs.status());
  } else {
    plan = PlanLaunch(launch.config);
  }
  if (!plan.ok() && plan.status().code() != StatusCode::kRejected) ThrowStatus(plan.status());
  return plan;
}

// kvtopo.Diagnostic: a (severity, code, message) named tuple, created at module init, with a
// `layers` attribute beside the tuple (so code that unpacks three fields keeps working): every
// layer a merged finding stands for, empty for a finding about one layer or none.
PyObject* g_diagnostic_type = nullptr;

py::list DiagnosticsList(const std::vector<Diagnostic>& diagnostics) {
  py::list out;
  for (const Diagnostic& d : diagnostics) {
    py::object item = py::handle(g_diagnostic_type)(SeverityName(d.severity), d.code, d.message);
    py::tuple layers(d.layers.size());
    for (size_t i = 0; i < d.layers.size(); ++i) layers[i] = py::str(d.layers[i]);
    item.attr("layers") = std::move(layers);
    out.append(std::move(item));
  }
  return out;
}

// GroupGeometry's integer fields: its Python properties and its to_dict().
struct GeometryField {
  const char* name;
  int64_t (GroupGeometry::*get)() const;
};
constexpr GeometryField kGeometryFields[] = {
    {"dcp_size", &GroupGeometry::dcp_size},
    {"interleave", &GroupGeometry::interleave},
    {"dcp_shard_count", &GroupGeometry::dcp_shard_count},
    {"block_size", &GroupGeometry::block_size},
    {"manager_block_size", &GroupGeometry::manager_block_size},
    {"kernel_block_size", &GroupGeometry::kernel_block_size},
    {"page_size_bytes", &GroupGeometry::page_size_bytes},
    {"required_columns", &GroupGeometry::required_columns},
    {"manager_table_width", &GroupGeometry::manager_table_width},
    {"block_table_width", &GroupGeometry::block_table_width},
    {"max_pages_per_request", &GroupGeometry::max_pages_per_request},
    {"memory_per_request_bytes", &GroupGeometry::memory_per_request_bytes},
    {"block_table_bytes_per_rank", &GroupGeometry::block_table_bytes_per_rank},
    {"max_model_len", &GroupGeometry::max_model_len},
    {"max_num_seqs", &GroupGeometry::max_num_seqs},
    {"num_speculative_blocks", &GroupGeometry::num_speculative_blocks},
    {"sliding_window", &GroupGeometry::sliding_window},
    {"attention_chunk_size", &GroupGeometry::attention_chunk_size},
    {"max_encoder_tokens", &GroupGeometry::max_encoder_tokens},
    {"extra_retained_tokens", &GroupGeometry::extra_retained_tokens},
    {"sink_tokens", &GroupGeometry::sink_tokens},
    {"sink_blocks", &GroupGeometry::sink_blocks},
};

py::dict GeometryDict(const GroupGeometry& g) {
  py::dict d;
  d["kind"] = CacheKindName(g.kind());
  d["placement"] = PlacementName(g.placement());
  d["recurrent_mode"] = RecurrentModeName(g.recurrent_mode());
  d["cross_attention"] = g.cross_attention();
  for (const GeometryField& f : kGeometryFields) d[f.name] = (g.*f.get)();
  return d;
}

struct CheckResult {
  bool accepted = false;
  std::string model_name;
  std::vector<Diagnostic> diagnostics;
};

void BindPlan(py::module_& m) {
  py::object fields =
      py::module_::import("collections")
          .attr("namedtuple")("DiagnosticFields", py::make_tuple("severity", "code", "message"),
                              py::arg("module") = "kvtopo");
  // A subclass without __slots__, so that each item can carry its layers as an attribute.
  py::dict namespace_;
  namespace_["__module__"] = "kvtopo";
  namespace_["layers"] = py::tuple();  // one built in Python names no layers
  namespace_["__doc__"] =
      "One finding about a launch: (severity, code, message); `layers` lists every layer a "
      "merged finding stands for (empty otherwise).";
  py::object diagnostic = py::reinterpret_borrow<py::object>(
      reinterpret_cast<PyObject*>(&PyType_Type))("Diagnostic", py::make_tuple(fields), namespace_);
  g_diagnostic_type = diagnostic.release().ptr();  // alive for the interpreter's lifetime
  m.add_object("Diagnostic", py::handle(g_diagnostic_type));

  auto geometry =
      py::class_<GroupGeometry>(m, "GroupGeometry",
                                "How one cache group lays out under DCP (the planner's geometry).")
          .def_property_readonly("kind",
                                 [](const GroupGeometry& g) { return CacheKindName(g.kind()); })
          .def_property_readonly(
              "placement", [](const GroupGeometry& g) { return PlacementName(g.placement()); })
          .def_property_readonly(
              "recurrent_mode",
              [](const GroupGeometry& g) { return RecurrentModeName(g.recurrent_mode()); })
          .def_property_readonly("interleaved_slots", &GroupGeometry::interleaved_slots)
          .def_property_readonly("cross_attention", &GroupGeometry::cross_attention)
          .def("to_dict", &GeometryDict)
          .def("__eq__", [](const GroupGeometry& a, const GroupGeometry& b) { return a == b; })
          .def("__repr__", [](const GroupGeometry& g) {
            return "GroupGeometry(" + py::repr(GeometryDict(g)).cast<std::string>() + ")";
          });
  for (const GeometryField& f : kGeometryFields) {
    geometry.def_property_readonly(f.name,
                                   [get = f.get](const GroupGeometry& g) { return (g.*get)(); });
  }

  // The plan's other attributes (model_name, groups, pool, capacity, promotion, ...) are views
  // of to_json()'s objects, built in kvtopo/__init__.py.
  py::class_<Plan, std::shared_ptr<Plan>>(m, "Plan", py::dynamic_attr(),
                                          "A planned launch (kvtopo plan).")
      .def_property_readonly("accepted", &Plan::accepted)
      .def_property_readonly("diagnostics",
                             [](const Plan& p) { return DiagnosticsList(p.diagnostics); })
      .def_property_readonly("geometries",
                             [](const Plan& p) {
                               std::vector<GroupGeometry> out;
                               for (const PlannedGroup& g : p.groups) out.push_back(g.geometry);
                               return out;
                             })
      .def_property_readonly("enable_prefix_caching", &Plan::prefix_caching)
      .def_property_readonly("max_num_seqs", [](const Plan& p) { return p.cache.max_num_seqs; })
      .def(
          "to_json",
          [](const Plan& p, int indent) { return PlanToJsonText(p, CheckedIndent(indent)); },
          py::arg("indent") = 2, "The JSON of `kvtopo plan --json` (docs/plan-json.md).")
      .def("table", &FormatPlanTable, "The table `kvtopo plan` prints.")
      .def("svg", &RenderPlanSvg, "The SVG drawing of `kvtopo plan --svg`.")
      .def("__repr__", [](const Plan& p) {
        return "Plan(model=" + p.model.model_name +
               ", accepted=" + (p.accepted() ? "True" : "False") +
               ", groups=" + std::to_string(p.groups.size()) +
               ", max_tokens=" + std::to_string(p.capacity.max_tokens) + ")";
      });

  py::class_<CheckResult>(m, "CheckResult",
                          "accepted and diagnostics of a launch (kvtopo check); unpacks as a "
                          "(accepted, diagnostics) pair.")
      .def_readonly("accepted", &CheckResult::accepted)
      .def_readonly("model_name", &CheckResult::model_name)
      .def_property_readonly("diagnostics",
                             [](const CheckResult& c) { return DiagnosticsList(c.diagnostics); })
      .def("__iter__",
           [](const CheckResult& c) {
             return py::iter(py::make_tuple(c.accepted, DiagnosticsList(c.diagnostics)));
           })
      .def(
          "to_json",
          [](const CheckResult& c, int indent) {
            return internal::JsonText(
                nlohmann::json{{"accepted", c.accepted},
                               {"diagnostics", internal::DiagnosticsToJson(c.diagnostics)}},
                CheckedIndent(indent));
          },
          py::arg("indent") = 2, "The JSON of `kvtopo check --json`.")
      .def("__repr__", [](const CheckResult& c) {
        return std::string("CheckResult(accepted=") + (c.accepted ? "True" : "False") +
               ", diagnostics=" + std::to_string(c.diagnostics.size()) + ")";
      });

  m.def(
      "plan",
      [](py::object model, py::kwargs options) {
        std::string model_name;
        Result<Plan> planned = TryPlan(model, options, model_name);
        if (!planned.ok()) {
          // Rejected before a plan existed: the same exception, without a plan.
          const std::vector<Diagnostic> diagnostics{RejectionDiagnostic(planned.status())};
          py::object exc = py::reinterpret_borrow<py::object>(g_rejected_error)(
              "rejected: " + model_name + "\n  error [" + diagnostics[0].code + "] " +
              diagnostics[0].message);
          exc.attr("plan") = py::none();
          exc.attr("diagnostics") = DiagnosticsList(diagnostics);
          PyErr_SetObject(g_rejected_error, exc.ptr());
          throw py::error_already_set();
        }
        auto plan = std::make_shared<Plan>(std::move(planned).value());
        if (!plan->accepted()) {
          py::object exc = py::reinterpret_borrow<py::object>(g_rejected_error)(
              "rejected: " + plan->model.model_name + plan->ErrorLines());
          exc.attr("plan") = py::cast(plan);
          exc.attr("diagnostics") = DiagnosticsList(plan->diagnostics);
          PyErr_SetObject(g_rejected_error, exc.ptr());
          throw py::error_already_set();
        }
        return plan;
      },
      py::arg("model") = py::none(),
      "plan(model=None, **options) -> Plan\n\n"
      "Plans a launch like `kvtopo plan`. `model` is a profile name, a config.json path (or a\n"
      "directory holding one), a config dict, or None for the seeds' default launch. Options\n"
      "are the CLI's long flags with underscores. Raises RejectedError (with .plan and\n"
      ".diagnostics; .plan is None when the launch was rejected before planning) when the\n"
      "launch cannot run, ValueError/TypeError for bad options, LookupError for an unknown\n"
      "model or backend.");
  m.def(
      "check",
      [](py::object model, py::kwargs options) {
        std::string model_name;
        const Result<Plan> plan = TryPlan(model, options, model_name);
        if (!plan.ok()) {
          return CheckResult{.accepted = false,
                             .model_name = model_name,
                             .diagnostics = {RejectionDiagnostic(plan.status())}};
        }
        return CheckResult{.accepted = plan->accepted(),
                           .model_name = plan->model.model_name,
                           .diagnostics = plan->diagnostics};
      },
      py::arg("model") = py::none(),
      "check(model=None, **options) -> CheckResult\n\n"
      "Accepts or rejects a launch like `kvtopo check`; a rejection is a result, not an error.");
  m.def(
      "parse_byte_size",
      [](const std::string& text) { return ValueOrThrow(ParseByteSize(text, "text")); },
      py::arg("text"), "Bytes from '12GiB', '512M' or '1000000' (as --kv-cache-memory).");
  m.def(
      "option_names",
      [] {
        std::vector<std::string> names;
        for (const LaunchOption& o : LaunchOptionTable()) names.emplace_back(o.name);
        return names;
      },
      "The launch options plan() and check() accept.");
  m.def(
      "profiles",
      [] {
        py::list out;
        for (const ProfileInfo& p : ValueOrThrow(ListProfiles())) {
          out.append(py::dict(py::arg("name") = p.name, py::arg("kind") = p.kind,
                              py::arg("architecture") = p.architecture,
                              py::arg("num_layers") = p.num_layers));
        }
        return out;
      },
      "The embedded profiles (kvtopo profiles).");
  m.def(
      "architectures", [] { return ListArchitectures(); },
      "The config.json architectures kvtopo plans, sorted (kvtopo profiles --architectures).");
  RefuseUninitialized<GroupGeometry>("Plan.geometries");
  RefuseUninitialized<Plan>("kvtopo.plan(...)");
  RefuseUninitialized<CheckResult>("kvtopo.check(...)");
}

}  // namespace
}  // namespace kvtopo::python

PYBIND11_MODULE(_kvtopo, m) {
  using namespace kvtopo::python;
  m.doc() = "kvtopo: KV-cache topology planner and runtime for decode context parallelism";
  m.attr("__version__") = KVTOPO_VERSION;
  g_rejected_error = PyErr_NewExceptionWithDoc(
      "kvtopo.RejectedError",
      "A well-formed launch that cannot run; .diagnostics (and .plan from plan()) say why.",
      PyExc_Exception, nullptr);
  if (g_rejected_error == nullptr) throw py::error_already_set();
  m.add_object("RejectedError", py::handle(g_rejected_error));
  BindViews(m);
  BindPlan(m);
  BindRuntime(m);
  BindWorker(m);
}
