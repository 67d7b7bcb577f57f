// kvtopo._kvtopo: the Python binding of the planner, the runtime and the worker helpers.
//
// Contract with Python callers:
//   * launch options are the CLI's long flag names with underscores and mean exactly what the
//     flags mean (tools/launch_flags.cc); messages are the library's, unchanged;
//   * a Status error becomes ValueError (invalid argument), kvtopo.RejectedError (rejected
//     configuration), LookupError (not found), OverflowError (out of range) or RuntimeError;
//   * every precondition the C++ API enforces with KVTOPO_CHECK is checked here first, so no
//     Python misuse reaches an abort: unknown request ids raise KeyError, bad sizes ValueError;
//   * "not enough blocks" is not an error: allocate_slots returns None;
//   * arrays come back as memoryviews over int32/int64 storage (buffer protocol, no NumPy).
//
// Thread safety: the module holds the GIL throughout; a KVCacheManager or BlockTable object must
// not be used from two Python threads at once (as in C++).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "binding_util.h"
#include "kvtopo/block_table.h"
#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/launch_options.h"
#include "kvtopo/limits.h"
#include "kvtopo/model.h"
#include "kvtopo/plan.h"
#include "kvtopo/plan_report.h"
#include "kvtopo/slot_mapping.h"
#include "kvtopo/units.h"

namespace kvtopo::python {
namespace {

// ---- launch options ------------------------------------------------------------------------

struct Launch {
  LaunchConfig config;
  std::optional<nlohmann::json> model_json;  // a dict model
};

nlohmann::json PyToJson(py::handle obj) {
  const std::string text = py::module_::import("json").attr("dumps")(obj).cast<std::string>();
  return nlohmann::json::parse(text);
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
      std::string list;
      for (const LaunchOption& o : LaunchOptionTable()) {
        list += (list.empty() ? "" : ", ") + std::string(o.name);
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
    // str for text (and a dict for speculative_config).
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
        expected = "an int";
        break;
      case OptionValue::kBytes:
        if (is_int) v = ToInt64(value, name);
        if (is_str) v = value.cast<std::string>();
        expected = "an int or a str such as '12GiB'";
        break;
      case OptionValue::kText:
        if (is_str) v = value.cast<std::string>();
        if (option->name == "speculative_config" && py::isinstance<py::dict>(value)) {
          v = py::module_::import("json").attr("dumps")(value).cast<std::string>();
        }
        expected = option->name == "speculative_config" ? "a dict or a JSON str" : "a str";
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
  launch.config = ValueOrThrow(ToLaunchConfig(o));
  return launch;
}

Plan MakePlan(py::handle model, const py::kwargs& kwargs) {
  const Launch launch = ToLaunch(model, kwargs);
  if (launch.model_json) {
    ModelCacheSpecs specs =
        ValueOrThrow(BuildModelCacheSpecsFromJson(*launch.model_json, launch.config));
    return ValueOrThrow(PlanLaunchSpecs(specs, launch.config));
  }
  return ValueOrThrow(PlanLaunch(launch.config));
}

py::list DiagnosticsList(const std::vector<Diagnostic>& diagnostics) {
  py::list out;
  for (const Diagnostic& d : diagnostics) out.append(py::cast(d));
  return out;
}

std::string RejectionMessage(const Plan& plan) {
  std::string message = "rejected: " + plan.model.model_name;
  for (const Diagnostic& d : plan.diagnostics) {
    if (d.severity != Severity::kError) continue;
    message += "\n  error [" + d.code + "] " + d.message;
  }
  return message;
}

// ---- worker side ---------------------------------------------------------------------------

// A GroupGeometry reaches Python only from a plan or a layout (ComputeGroupGeometry); the one a
// default-constructed object would hold has no blocks and maps nothing.
void RequireGeometry(const GroupGeometry& g) {
  if (g.block_size() <= 0) {
    RaisePython(PyExc_ValueError, "the group geometry is empty; use one from a plan or a layout");
  }
}

Rank CheckedRank(const GroupGeometry& g, int64_t rank) {
  RequireGeometry(g);
  if (rank < 0 || rank >= g.dcp_size()) {
    RaisePython(PyExc_ValueError, "rank must be in [0, " + std::to_string(g.dcp_size()) +
                                      ") (the DCP size), got " + std::to_string(rank));
  }
  return Rank{static_cast<int32_t>(rank)};
}

py::memoryview SlotMapping(const GroupGeometry& g, int64_t rank,
                           std::span<const int32_t> kernel_row, py::handle positions_obj,
                           std::optional<int64_t> num_slots) {
  const SlotLayout layout = g.SlotLayoutFor(CheckedRank(g, rank));
  const std::vector<int64_t> raw = ToIntVector<int64_t>(positions_obj, "positions");
  std::vector<TokenPos> positions;
  positions.reserve(raw.size());
  for (int64_t p : raw) {
    if (p < 0)
      RaisePython(PyExc_ValueError, "positions must be non-negative, got " + std::to_string(p));
    positions.emplace_back(p);
  }
  const int64_t size = num_slots.value_or(static_cast<int64_t>(positions.size()));
  if (size < static_cast<int64_t>(positions.size()) || size > kMaxTableEntries) {
    RaisePython(PyExc_ValueError, "num_slots must be in [len(positions), " +
                                      std::to_string(kMaxTableEntries) + "], got " +
                                      std::to_string(size));
  }
  std::vector<int64_t> out(size, kPadSlot);
  ThrowIfError(ComputeSlotMapping(layout, kernel_row, positions, out));
  return ToMemoryView(std::move(out));
}

struct PyBlockTable {
  PyBlockTable(const GroupGeometry& g, int64_t num_rows)
      : geometry(g), table(Checked(g, num_rows)) {}

  static BlockTable Checked(const GroupGeometry& g, int64_t num_rows) {
    if (num_rows < 1 || num_rows > std::numeric_limits<int32_t>::max()) {
      RaisePython(PyExc_ValueError,
                  "num_rows must be in [1, 2^31), got " + std::to_string(num_rows));
    }
    RequireGeometry(g);
    // rows x width int32 entries are allocated now: bounded (kvtopo/limits.h).
    if (num_rows > kMaxTableEntries / std::max<int64_t>(g.block_table_width(), 1)) {
      RaisePython(PyExc_ValueError,
                  "num_rows " + std::to_string(num_rows) + " x block_table_width " +
                      std::to_string(g.block_table_width()) + " is more than the " +
                      std::to_string(kMaxTableEntries) + " entries a table may hold");
    }
    return BlockTable(g, static_cast<int32_t>(num_rows));
  }

  int32_t CheckedRow(int64_t row) const {
    if (row < 0 || row >= table.num_rows()) {
      RaisePython(PyExc_IndexError, "row " + std::to_string(row) + " out of range [0, " +
                                        std::to_string(table.num_rows()) + ")");
    }
    return static_cast<int32_t>(row);
  }

  std::vector<BlockId> CheckedBlocks(py::handle block_ids) const {
    const int64_t k = table.kernel_blocks_per_block();
    std::vector<BlockId> out;
    for (int64_t b : ToIntVector<int64_t>(block_ids, "block_ids")) {
      // Kernel ids b * k .. b * k + k - 1 must fit int32 (written without overflowing).
      if (b < 0 || b > (std::numeric_limits<int32_t>::max() - (k - 1)) / k) {
        RaisePython(PyExc_ValueError, "block id " + std::to_string(b) +
                                          " is negative or its kernel blocks overflow int32");
      }
      out.emplace_back(static_cast<int32_t>(b));
    }
    return out;
  }

  void WriteFrom(int64_t row, int64_t first_column, py::handle block_ids) {
    const int32_t r = CheckedRow(row);
    const int64_t length_columns = table.row_length(r) / table.kernel_blocks_per_block();
    if (first_column < 0 || first_column > length_columns) {
      RaisePython(PyExc_ValueError,
                  "first_column must be in [0, " + std::to_string(length_columns) +
                      "] (a write may not leave a gap), got " + std::to_string(first_column));
    }
    ThrowIfError(table.WriteFrom(r, first_column, CheckedBlocks(block_ids)));
  }

  GroupGeometry geometry;
  BlockTable table;
};

py::dict GeometryDict(const GroupGeometry& g) {
  py::dict d;
  d["kind"] = std::string(CacheKindName(g.kind()));
  d["placement"] = std::string(PlacementName(g.placement()));
  d["dcp_size"] = g.dcp_size();
  d["interleave"] = g.interleave();
  d["dcp_shard_count"] = g.dcp_shard_count();
  d["block_size"] = g.block_size();
  d["manager_block_size"] = g.manager_block_size();
  d["kernel_block_size"] = g.kernel_block_size();
  d["page_size_bytes"] = g.page_size_bytes();
  d["required_columns"] = g.required_columns();
  d["manager_table_width"] = g.manager_table_width();
  d["block_table_width"] = g.block_table_width();
  d["max_pages_per_request"] = g.max_pages_per_request();
  d["memory_per_request_bytes"] = g.memory_per_request_bytes();
  d["block_table_bytes_per_rank"] = g.block_table_bytes_per_rank();
  d["max_model_len"] = g.max_model_len();
  d["max_num_seqs"] = g.max_num_seqs();
  d["recurrent_mode"] = std::string(RecurrentModeName(g.recurrent_mode()));
  d["num_speculative_blocks"] = g.num_speculative_blocks();
  d["sliding_window"] = g.sliding_window();
  d["attention_chunk_size"] = g.attention_chunk_size();
  d["extra_retained_tokens"] = g.extra_retained_tokens();
  return d;
}

struct CheckResult {
  bool accepted = false;
  std::string model_name;
  std::vector<Diagnostic> diagnostics;
};

void BindPlan(py::module_& m) {
  py::class_<Diagnostic>(m, "Diagnostic", "One finding about a launch: (severity, code, message).")
      .def_property_readonly(
          "severity", [](const Diagnostic& d) { return std::string(SeverityName(d.severity)); })
      .def_readonly("code", &Diagnostic::code)
      .def_readonly("message", &Diagnostic::message)
      .def("__iter__",
           [](const Diagnostic& d) {
             return py::iter(
                 py::make_tuple(std::string(SeverityName(d.severity)), d.code, d.message));
           })
      .def("__eq__", [](const Diagnostic& a, const Diagnostic& b) { return a == b; })
      .def("__repr__", [](const Diagnostic& d) {
        return "Diagnostic(" + std::string(SeverityName(d.severity)) + ", " + d.code + ", " +
               py::repr(py::str(d.message)).cast<std::string>() + ")";
      });

  py::class_<GroupGeometry>(m, "GroupGeometry",
                            "How one cache group lays out under DCP (the planner's geometry).")
      .def_property_readonly(
          "kind", [](const GroupGeometry& g) { return std::string(CacheKindName(g.kind())); })
      .def_property_readonly(
          "placement",
          [](const GroupGeometry& g) { return std::string(PlacementName(g.placement())); })
      .def_property_readonly("dcp_size", &GroupGeometry::dcp_size)
      .def_property_readonly("interleave", &GroupGeometry::interleave)
      .def_property_readonly("dcp_shard_count", &GroupGeometry::dcp_shard_count)
      .def_property_readonly("block_size", &GroupGeometry::block_size)
      .def_property_readonly("manager_block_size", &GroupGeometry::manager_block_size)
      .def_property_readonly("kernel_block_size", &GroupGeometry::kernel_block_size)
      .def_property_readonly("page_size_bytes", &GroupGeometry::page_size_bytes)
      .def_property_readonly("required_columns", &GroupGeometry::required_columns)
      .def_property_readonly("manager_table_width", &GroupGeometry::manager_table_width)
      .def_property_readonly("block_table_width", &GroupGeometry::block_table_width)
      .def_property_readonly("max_pages_per_request", &GroupGeometry::max_pages_per_request)
      .def_property_readonly("memory_per_request_bytes", &GroupGeometry::memory_per_request_bytes)
      .def_property_readonly("block_table_bytes_per_rank",
                             &GroupGeometry::block_table_bytes_per_rank)
      .def_property_readonly("max_model_len", &GroupGeometry::max_model_len)
      .def_property_readonly("max_num_seqs", &GroupGeometry::max_num_seqs)
      .def_property_readonly(
          "recurrent_mode",
          [](const GroupGeometry& g) { return std::string(RecurrentModeName(g.recurrent_mode())); })
      .def_property_readonly("num_speculative_blocks", &GroupGeometry::num_speculative_blocks)
      .def_property_readonly("sliding_window", &GroupGeometry::sliding_window)
      .def_property_readonly("attention_chunk_size", &GroupGeometry::attention_chunk_size)
      .def_property_readonly("extra_retained_tokens", &GroupGeometry::extra_retained_tokens)
      .def_property_readonly("interleaved_slots", &GroupGeometry::interleaved_slots)
      .def("to_dict", &GeometryDict)
      .def("__eq__", [](const GroupGeometry& a, const GroupGeometry& b) { return a == b; })
      .def("__repr__", [](const GroupGeometry& g) {
        return "GroupGeometry(" + py::repr(GeometryDict(g)).cast<std::string>() + ")";
      });

  auto geo = [](auto member) {
    return [member](const PlannedGroup& g) { return (g.geometry.*member)(); };
  };
  py::class_<PlannedGroup>(m, "Group", "One cache group of a plan.")
      .def_property_readonly("id", [](const PlannedGroup& g) { return g.id.value(); })
      .def_property_readonly(
          "kind", [](const PlannedGroup& g) { return std::string(CacheKindName(g.spec.kind)); })
      .def_property_readonly("role",
                             [](const PlannedGroup& g) { return std::string(RoleName(g.role)); })
      .def_property_readonly(
          "placement",
          [](const PlannedGroup& g) { return std::string(PlacementName(g.geometry.placement())); })
      .def_readonly("layers", &PlannedGroup::layers)
      .def_property_readonly("num_layers", [](const PlannedGroup& g) { return g.layers.size(); })
      .def_readonly("uniform_type", &PlannedGroup::uniform_type)
      .def_readonly("layer_page_size_bytes", &PlannedGroup::layer_page_bytes)
      .def_readonly("natural_page_size_bytes", &PlannedGroup::natural_page_size_bytes)
      .def_readonly("geometry", &PlannedGroup::geometry)
      .def_property_readonly("attention_backend",
                             [](const PlannedGroup& g) { return g.spec.attention_backend; })
      .def_property_readonly("volatile_last_block",
                             [](const PlannedGroup& g) { return g.spec.volatile_last_block; })
      .def_property_readonly(
          "kv_cache_dtype",
          [](const PlannedGroup& g) {
            // As in the JSON report: recurrent groups report their state dtype.
            if (g.spec.kind == CacheKind::kRecurrent) {
              return std::string(ElementTypeName(
                  g.spec.state.empty() ? ElementType::kFloat32 : g.spec.state.front().dtype));
            }
            return std::string(KvCacheDtypeName(g.spec.cache_dtype));
          })
      .def_property_readonly("dcp_shard_count", geo(&GroupGeometry::dcp_shard_count))
      .def_property_readonly("block_size", geo(&GroupGeometry::block_size))
      .def_property_readonly("manager_block_size", geo(&GroupGeometry::manager_block_size))
      .def_property_readonly("kernel_block_size", geo(&GroupGeometry::kernel_block_size))
      .def_property_readonly("page_size_bytes", geo(&GroupGeometry::page_size_bytes))
      .def_property_readonly("required_columns", geo(&GroupGeometry::required_columns))
      .def_property_readonly("manager_table_width", geo(&GroupGeometry::manager_table_width))
      .def_property_readonly("block_table_width", geo(&GroupGeometry::block_table_width))
      .def_property_readonly("max_pages_per_request", geo(&GroupGeometry::max_pages_per_request))
      .def_property_readonly("block_table_bytes_per_rank",
                             geo(&GroupGeometry::block_table_bytes_per_rank))
      .def_property_readonly("num_speculative_blocks", geo(&GroupGeometry::num_speculative_blocks))
      .def_property_readonly("sliding_window",
                             [](const PlannedGroup& g) -> py::object {
                               if (!IsWindowed(g.spec.kind)) return py::none();
                               return py::int_(g.spec.sliding_window);
                             })
      .def_property_readonly(
          "recurrent_mode",
          [](const PlannedGroup& g) -> py::object {
            if (g.spec.kind != CacheKind::kRecurrent) return py::none();
            return py::str(std::string(RecurrentModeName(g.spec.recurrent_mode)));
          })
      .def("__repr__", [](const PlannedGroup& g) {
        return "Group(id=" + std::to_string(g.id.value()) +
               ", kind=" + std::string(CacheKindName(g.spec.kind)) +
               ", role=" + std::string(RoleName(g.role)) +
               ", placement=" + std::string(PlacementName(g.geometry.placement())) +
               ", layers=" + std::to_string(g.layers.size()) + ")";
      });

  py::class_<Capacity>(m, "Capacity", "What the pool holds: tokens and max-length requests.")
      .def_readonly("memory_bytes", &Capacity::memory_bytes)
      .def_readonly("blocks_per_request", &Capacity::blocks_per_request)
      .def_readonly("max_tokens", &Capacity::max_tokens)
      .def_readonly("max_concurrency", &Capacity::max_concurrency)
      .def("__repr__", [](const Capacity& c) {
        return "Capacity(memory_bytes=" + std::to_string(c.memory_bytes) +
               ", max_tokens=" + std::to_string(c.max_tokens) +
               ", max_concurrency=" + py::repr(py::float_(c.max_concurrency)).cast<std::string>() +
               ")";
      });

  py::class_<PoolLayout>(m, "PoolLayout", "The shared block pool of a plan.")
      .def_readonly("num_blocks", &PoolLayout::num_blocks)
      .def_readonly("bytes_per_block", &PoolLayout::bytes_per_block)
      .def_property_readonly("regions",
                             [](const PoolLayout& p) {
                               py::list out;
                               for (const PoolGroupRegion& r : p.regions) {
                                 py::dict d;
                                 d["group"] = r.group.value();
                                 d["offsets_bytes"] = r.offsets_bytes;
                                 d["bytes_used"] = r.bytes_used;
                                 out.append(d);
                               }
                               return out;
                             })
      .def("__repr__", [](const PoolLayout& p) {
        return "PoolLayout(num_blocks=" + std::to_string(p.num_blocks) +
               ", bytes_per_block=" + std::to_string(p.bytes_per_block) + ")";
      });

  py::class_<Promotion>(m, "Promotion", "Promotion of replicated sliding-window draft blocks.")
      .def_readonly("considered", &Promotion::considered)
      .def_readonly("applied", &Promotion::applied)
      .def_readonly("reason", &Promotion::reason)
      .def_readonly("block_size_before", &Promotion::block_size_before)
      .def_readonly("block_size_after", &Promotion::block_size_after)
      .def_readonly("bytes_per_block_before", &Promotion::bytes_per_block_before)
      .def_readonly("bytes_per_block_after", &Promotion::bytes_per_block_after)
      .def_readonly("max_tokens_before", &Promotion::max_tokens_before)
      .def_readonly("max_tokens_after", &Promotion::max_tokens_after);

  py::class_<Plan, std::shared_ptr<Plan>>(m, "Plan", "A planned launch (kvtopo plan).")
      .def_property_readonly("accepted", &Plan::accepted)
      .def_property_readonly("model_name", [](const Plan& p) { return p.model.model_name; })
      .def_property_readonly("architecture", [](const Plan& p) { return p.model.architecture; })
      .def_property_readonly("draft_name", [](const Plan& p) { return p.model.draft_name; })
      .def_property_readonly("max_model_len", [](const Plan& p) { return p.model.max_model_len; })
      .def_property_readonly("num_speculative_tokens",
                             [](const Plan& p) { return p.model.num_speculative_tokens; })
      .def_property_readonly("num_lookahead_tokens",
                             [](const Plan& p) { return p.model.num_lookahead_tokens; })
      .def_property_readonly(
          "parallel",
          [](const Plan& p) {
            py::dict d;
            d["tensor_parallel_size"] = p.parallel.tensor_parallel_size;
            d["decode_context_parallel_size"] = p.parallel.decode_context_parallel_size;
            d["prefill_context_parallel_size"] = p.parallel.prefill_context_parallel_size;
            d["dcp_kv_cache_interleave_size"] = p.parallel.dcp_kv_cache_interleave_size;
            return d;
          })
      .def_property_readonly("enable_prefix_caching",
                             [](const Plan& p) { return p.cache.enable_prefix_caching; })
      .def_property_readonly("max_num_seqs", [](const Plan& p) { return p.cache.max_num_seqs; })
      .def_readonly("groups", &Plan::groups)
      .def_readonly("pool", &Plan::pool)
      .def_readonly("capacity", &Plan::capacity)
      .def_readonly("promotion", &Plan::promotion)
      .def_readonly("kv_cache_memory_is_default", &Plan::kv_cache_memory_is_default)
      .def_readonly("scheduler_block_size", &Plan::scheduler_block_size)
      .def_readonly("hash_block_size", &Plan::hash_block_size)
      .def_readonly("block_table_bytes_per_rank", &Plan::block_table_bytes_per_rank)
      .def_readonly("max_model_len_that_fits", &Plan::max_model_len_that_fits)
      .def_property_readonly("diagnostics",
                             [](const Plan& p) { return DiagnosticsList(p.diagnostics); })
      .def(
          "to_json", [](const Plan& p, int indent) { return PlanToJson(p).dump(indent); },
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
            nlohmann::json diags = nlohmann::json::array();
            for (const Diagnostic& d : c.diagnostics) {
              diags.push_back({{"severity", std::string(SeverityName(d.severity))},
                               {"code", d.code},
                               {"message", d.message}});
            }
            return nlohmann::json{{"accepted", c.accepted}, {"diagnostics", diags}}.dump(indent);
          },
          py::arg("indent") = 2, "The JSON of `kvtopo check --json`.")
      .def("__repr__", [](const CheckResult& c) {
        return std::string("CheckResult(accepted=") + (c.accepted ? "True" : "False") +
               ", diagnostics=" + std::to_string(c.diagnostics.size()) + ")";
      });

  m.def(
      "plan",
      [](py::object model, py::kwargs options) {
        auto plan = std::make_shared<Plan>(MakePlan(model, options));
        if (!plan->accepted()) {
          py::object exc =
              py::reinterpret_borrow<py::object>(g_rejected_error)(RejectionMessage(*plan));
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
      ".diagnostics) when the launch cannot run, ValueError/TypeError for bad options,\n"
      "LookupError for an unknown model or backend.");
  m.def(
      "check",
      [](py::object model, py::kwargs options) {
        const Plan plan = MakePlan(model, options);
        return CheckResult{.accepted = plan.accepted(),
                           .model_name = plan.model.model_name,
                           .diagnostics = plan.diagnostics};
      },
      py::arg("model") = py::none(),
      "check(model=None, **options) -> CheckResult\n\n"
      "Accepts or rejects a launch like `kvtopo check`; a rejection is a result, not an error.");
  m.def(
      "parse_byte_size", [](const std::string& text) { return ValueOrThrow(ParseByteSize(text)); },
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
          py::dict d;
          d["name"] = p.name;
          d["kind"] = p.kind;
          d["architecture"] = p.architecture;
          d["num_layers"] = p.num_layers;
          out.append(d);
        }
        return out;
      },
      "The embedded profiles (kvtopo profiles).");
}

void BindWorker(py::module_& m) {
  BindOwnedArray<int32_t>(m, "_Int32Array");
  BindOwnedArray<int64_t>(m, "_Int64Array");
  py::class_<BorrowedInt32View>(m, "_Int32View", py::buffer_protocol())
      .def_buffer([](BorrowedInt32View& v) {
        return py::buffer_info(const_cast<int32_t*>(v.data), sizeof(int32_t),
                               py::format_descriptor<int32_t>::format(), 1, {v.size},
                               {static_cast<py::ssize_t>(sizeof(int32_t))}, /*readonly=*/true);
      });

  py::class_<PyBlockTable>(m, "BlockTable", py::buffer_protocol(),
                           "One rank's block table for one group: num_rows x block_table_width "
                           "int32 kernel block ids. memoryview(table) is a read-only 2-D view.")
      .def(py::init([](const GroupGeometry& g, int64_t num_rows) {
             return std::make_unique<PyBlockTable>(g, num_rows);
           }),
           py::arg("geometry"), py::arg("num_rows"))
      .def(py::init([](const PlannedGroup& g, int64_t num_rows) {
             return std::make_unique<PyBlockTable>(g.geometry, num_rows);
           }),
           py::arg("group"), py::arg("num_rows"))
      .def_buffer([](PyBlockTable& t) {
        return py::buffer_info(const_cast<int32_t*>(t.table.Row(0).data()), sizeof(int32_t),
                               py::format_descriptor<int32_t>::format(), 2,
                               {static_cast<py::ssize_t>(t.table.num_rows()),
                                static_cast<py::ssize_t>(t.table.width())},
                               {static_cast<py::ssize_t>(t.table.width() * sizeof(int32_t)),
                                static_cast<py::ssize_t>(sizeof(int32_t))},
                               /*readonly=*/true);
      })
      .def_readonly("geometry", &PyBlockTable::geometry)
      .def_property_readonly("num_rows", [](const PyBlockTable& t) { return t.table.num_rows(); })
      .def_property_readonly("width", [](const PyBlockTable& t) { return t.table.width(); })
      .def_property_readonly(
          "kernel_blocks_per_block",
          [](const PyBlockTable& t) { return t.table.kernel_blocks_per_block(); })
      .def(
          "append",
          [](PyBlockTable& t, int64_t row, py::handle block_ids) {
            const int32_t r = t.CheckedRow(row);
            ThrowIfError(t.table.Append(r, t.CheckedBlocks(block_ids)));
          },
          py::arg("row"), py::arg("block_ids"), "Appends manager block ids to the row.")
      .def("write_from", &PyBlockTable::WriteFrom, py::arg("row"), py::arg("first_column"),
           py::arg("block_ids"),
           "Writes manager block ids from a manager column (see KVCacheManager.last_update).")
      .def(
          "clear_row", [](PyBlockTable& t, int64_t row) { t.table.ClearRow(t.CheckedRow(row)); },
          py::arg("row"))
      .def(
          "row_length",
          [](const PyBlockTable& t, int64_t row) { return t.table.row_length(t.CheckedRow(row)); },
          py::arg("row"), "Kernel entries in use in the row.")
      .def(
          "row",
          [](py::object self, int64_t row) {
            const PyBlockTable& t = self.cast<const PyBlockTable&>();
            std::span<const int32_t> data = t.table.Row(t.CheckedRow(row));
            BorrowedInt32View view{
                .owner = self, .data = data.data(), .size = static_cast<py::ssize_t>(data.size())};
            return py::memoryview(py::cast(std::move(view)));
          },
          py::arg("row"), "The row's kernel block ids, full width, as a read-only memoryview.")
      .def(
          "slot_mapping",
          [](const PyBlockTable& t, int64_t row, int64_t rank, py::handle positions,
             std::optional<int64_t> num_slots) {
            const int32_t r = t.CheckedRow(row);
            return SlotMapping(t.geometry, rank, t.table.Row(r).first(t.table.row_length(r)),
                               positions, num_slots);
          },
          py::arg("row"), py::arg("rank"), py::arg("positions"), py::arg("num_slots") = py::none(),
          "Slots (int64 memoryview) of the row's positions on `rank`; -1 where the rank does "
          "not hold the position, and for padding up to num_slots.")
      .def("check_invariants", [](const PyBlockTable& t) { t.table.CheckInvariants(); });

  m.def(
      "slot_mapping",
      [](const GroupGeometry& g, int64_t rank, py::handle kernel_row, py::handle positions,
         std::optional<int64_t> num_slots) {
        const std::vector<int32_t> row = ToIntVector<int32_t>(kernel_row, "kernel_row");
        for (size_t i = 0; i < row.size(); ++i) {
          if (row[i] < 0) {
            RaisePython(PyExc_ValueError, "kernel_row[" + std::to_string(i) + "] is " +
                                              std::to_string(row[i]) +
                                              "; kernel block ids are non-negative");
          }
        }
        return SlotMapping(g, rank, row, positions, num_slots);
      },
      py::arg("geometry"), py::arg("rank"), py::arg("kernel_row"), py::arg("positions"),
      py::arg("num_slots") = py::none(),
      "Slots (int64 memoryview) of `positions` on `rank` for a request whose kernel block "
      "row is `kernel_row` (only its used entries); -1 where the rank does not hold a "
      "position.");
  m.def(
      "holds_position",
      [](const GroupGeometry& g, int64_t rank, int64_t position) {
        if (position < 0) RaisePython(PyExc_ValueError, "position must be non-negative");
        return g.HoldsPosition(CheckedRank(g, rank), TokenPos{position});
      },
      py::arg("geometry"), py::arg("rank"), py::arg("position"),
      "Whether `rank` holds `position` of the group.");
  m.def(
      "local_seq_len",
      [](const GroupGeometry& g, int64_t rank, int64_t seq_len) {
        if (seq_len < 0) RaisePython(PyExc_ValueError, "seq_len must be non-negative");
        return g.LocalLength(CheckedRank(g, rank), TokenCount{seq_len}).value();
      },
      py::arg("geometry"), py::arg("rank"), py::arg("seq_len"),
      "Tokens of a seq_len-token sequence the group keeps on `rank`.");
  m.def(
      "local_seq_lens",
      [](const GroupGeometry& g, int64_t rank, py::handle seq_lens,
         std::optional<int64_t> num_rows) {
        const Rank r = CheckedRank(g, rank);
        const std::vector<int32_t> lens = ToIntVector<int32_t>(seq_lens, "seq_lens");
        for (int32_t l : lens) {
          if (l < 0) RaisePython(PyExc_ValueError, "seq_lens must be non-negative");
        }
        const int64_t rows = num_rows.value_or(static_cast<int64_t>(lens.size()));
        if (rows < static_cast<int64_t>(lens.size()) || rows > (int64_t{1} << 31)) {
          RaisePython(PyExc_ValueError, "num_rows must be in [len(seq_lens), 2^31]");
        }
        std::vector<int32_t> out(rows, 0);
        g.LocalLengths(r, lens, out);
        return ToMemoryView(std::move(out));
      },
      py::arg("geometry"), py::arg("rank"), py::arg("seq_lens"), py::arg("num_rows") = py::none(),
      "Rank-local lengths (int32 memoryview) of the group's sequences for attention metadata; "
      "a draft passes its own group's geometry and its own global lengths; rows past "
      "len(seq_lens) are 0.");
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
  BindPlan(m);
  BindRuntime(m);
  BindWorker(m);
}
