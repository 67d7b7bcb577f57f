// kvtopo._kvtopo, runtime part: KVCacheManager (single calls, the batched step API, the engine
// surface), its step results and the read-only inspector.
//
// Requests are registered under an int or str id and get an integer handle (the manager's
// RequestId). Single calls take the id; batched calls take handles in an int64 buffer. The hot
// calls (allocate_slots, allocate_slots_batch) are METH_FASTCALL functions: no pybind11
// overload resolution and no keyword dict on the hot path.
#include <pybind11/stl.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "binding_util.h"
#include "kvtopo/kv_cache_manager.h"
#include "kvtopo/plan.h"

namespace kvtopo::python {
namespace {

py::int_ HashToInt(const BlockHash& h) {
  py::int_ high(h.high);
  return py::reinterpret_steal<py::int_>(PyNumber_Or(
      py::reinterpret_steal<py::object>(PyNumber_Lshift(high.ptr(), py::int_(64).ptr())).ptr(),
      py::int_(h.low).ptr()));
}

BlockHash IntToHash(py::handle value) {
  if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr())) {
    RaisePython(PyExc_TypeError, "a block hash is an int (128 bits)");
  }
  py::int_ v = py::reinterpret_borrow<py::int_>(value);
  if (PyObject_RichCompareBool(v.ptr(), py::int_(0).ptr(), Py_LT) == 1 ||
      py::int_(v.attr("bit_length")()).cast<int64_t>() > 128) {
    RaisePython(PyExc_ValueError, "a block hash is a non-negative int of at most 128 bits");
  }
  const uint64_t low = PyLong_AsUnsignedLongLongMask(v.ptr());
  py::object high = py::reinterpret_steal<py::object>(PyNumber_Rshift(v.ptr(), py::int_(64).ptr()));
  return BlockHash{.low = low, .high = PyLong_AsUnsignedLongLongMask(high.ptr())};
}

py::list ToList(std::span<const BlockId> blocks) {
  py::list out(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    PyList_SET_ITEM(out.ptr(), i, PyLong_FromLong(blocks[i].value()));
  }
  return out;
}

// A 1-D integer sequence read through the buffer protocol when it is a contiguous int32/int64
// buffer (no copy), else converted into `scratch`.
class IntInput {
 public:
  IntInput(py::handle obj, const char* what, std::vector<int64_t>& scratch) {
    if (PyObject_CheckBuffer(obj.ptr()) &&
        PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
      held_ = true;
      const char* f = view_.format ? view_.format : "B";
      if (*f == '@' || *f == '=' || *f == '<') ++f;
      if (view_.ndim == 1 && f[1] == '\0' && view_.itemsize == 4 && (*f == 'i' || *f == 'l')) {
        i32_ = static_cast<const int32_t*>(view_.buf);
        size_ = view_.shape ? view_.shape[0] : view_.len / 4;
        return;
      }
      if (view_.ndim == 1 && f[1] == '\0' && view_.itemsize == 8 && (*f == 'q' || *f == 'l')) {
        i64_ = static_cast<const int64_t*>(view_.buf);
        size_ = view_.shape ? view_.shape[0] : view_.len / 8;
        return;
      }
      PyBuffer_Release(&view_);
      held_ = false;
    } else {
      PyErr_Clear();
    }
    std::vector<int64_t> values = ToIntVector<int64_t>(obj, what);
    scratch.swap(values);
    i64_ = scratch.data();
    size_ = static_cast<int64_t>(scratch.size());
  }
  ~IntInput() {
    if (held_) PyBuffer_Release(&view_);
  }
  IntInput(const IntInput&) = delete;
  IntInput& operator=(const IntInput&) = delete;
  int64_t size() const { return size_; }
  int64_t operator[](int64_t i) const { return i32_ ? i32_[i] : i64_[i]; }

 private:
  Py_buffer view_{};
  bool held_ = false;
  const int32_t* i32_ = nullptr;
  const int64_t* i64_ = nullptr;
  int64_t size_ = 0;
};

// A read-only 1-D view of storage another Python object owns (kept alive by `owner`).
struct BorrowedView {
  py::object owner;
  const void* data = nullptr;
  py::ssize_t size = 0;
  py::ssize_t itemsize = 4;
  const char* format = "i";
};

// One batched call's results; memoryviews over them keep the result alive.
struct PyStepResult {
  KVCacheManager::BatchResult r;
  int64_t num_groups = 0;
};

py::object View(py::handle owner, const void* data, size_t size, py::ssize_t itemsize,
                const char* format) {
  return py::memoryview(py::cast(BorrowedView{.owner = py::reinterpret_borrow<py::object>(owner),
                                              .data = data,
                                              .size = static_cast<py::ssize_t>(size),
                                              .itemsize = itemsize,
                                              .format = format}));
}

// Prefix hits as get_computed_blocks hands them out.
struct PyComputedBlocks {
  ComputedBlocks blocks;
  const void* manager = nullptr;
  int64_t handle = -1;

  py::list BlockLists() const {
    py::list groups;
    for (const auto& row : blocks.blocks) groups.append(ToList(row));
    return groups;
  }
};

class PyKVCacheManager {
 public:
  explicit PyKVCacheManager(KVCacheManagerOptions options)
      : manager_(ValueOrThrow(KVCacheManager::Create(options))),
        num_blocks_(options.num_blocks),
        num_groups_(static_cast<int64_t>(options.groups.size())) {}

  // ---- request ids and handles ---------------------------------------------------------

  // The handle of a registered request id (an int or a str), or a KeyError.
  int64_t Handle(PyObject* request_id) const {
    CheckIdType(request_id);
    PyObject* h = PyDict_GetItemWithError(ids_.ptr(), request_id);
    if (h == nullptr) {
      if (PyErr_Occurred()) throw py::error_already_set();
      PyErr_SetObject(PyExc_KeyError,
                      py::str("unknown request {!r}").format(py::handle(request_id)).ptr());
      throw py::error_already_set();
    }
    return PyLong_AsLongLong(h);
  }
  RequestId Lookup(py::handle request_id) const { return RequestId{Handle(request_id.ptr())}; }

  static void CheckIdType(PyObject* id) {
    if (PyBool_Check(id) || (!PyLong_Check(id) && !PyUnicode_Check(id))) {
      RaisePython(PyExc_TypeError,
                  "request_id must be an int or a str, got " + TypeName(py::handle(id)));
    }
  }

  RequestId CheckedHandle(int64_t h) const {
    if (!manager_->Contains(RequestId{h})) {
      RaisePython(PyExc_KeyError, "unknown request handle " + std::to_string(h));
    }
    return RequestId{h};
  }

  // Handles into batch_ids_; the batch calls report unregistered ones (KeyError).
  void ReadHandles(py::handle handles) {
    IntInput in(handles, "handles", scratch_a_);
    batch_ids_.resize(in.size());
    for (int64_t i = 0; i < in.size(); ++i) batch_ids_[i] = RequestId{in[i]};
  }
  static void ThrowBatch(const Status& status) {
    if (status.code() == StatusCode::kNotFound) RaisePython(PyExc_KeyError, status.message());
    ThrowIfError(status);
  }

  // ---- registration --------------------------------------------------------------------

  int64_t AddRequest(py::handle request_id, py::handle token_ids, int64_t lora_id,
                     const std::string& cache_salt, py::handle mm_items,
                     bool skip_reading_prefix_cache, int64_t num_preemptions) {
    CheckIdType(request_id.ptr());
    if (PyDict_Contains(ids_.ptr(), request_id.ptr()) == 1) {
      RaisePython(PyExc_ValueError, "request " + py::repr(request_id).cast<std::string>() +
                                        " is already registered; free it first");
    }
    if (num_preemptions < 0) {
      RaisePython(PyExc_ValueError,
                  "num_preemptions must be non-negative, got " + std::to_string(num_preemptions));
    }
    RequestOptions options{.extra_keys = {.lora_id = lora_id, .cache_salt = cache_salt},
                           .skip_reading_prefix_cache = skip_reading_prefix_cache,
                           .num_preemptions = num_preemptions};
    if (!mm_items.is_none()) {
      for (py::handle item : py::reinterpret_borrow<py::iterable>(mm_items)) {
        py::tuple t = py::reinterpret_borrow<py::object>(item).cast<py::tuple>();
        if (t.size() != 3) {
          RaisePython(PyExc_ValueError, "mm_items entries are (identifier, offset, length)");
        }
        const int64_t offset = ToInt64(t[1], "mm_items offset");
        const int64_t length = ToInt64(t[2], "mm_items length");
        if (offset < 0 || length < 0) {
          RaisePython(PyExc_ValueError, "mm_items offset and length must be non-negative");
        }
        options.extra_keys.mm_items.push_back({.identifier = ToString(t[0], "mm_items identifier"),
                                               .offset = TokenPos{offset},
                                               .length = TokenCount{length}});
      }
      std::stable_sort(
          options.extra_keys.mm_items.begin(), options.extra_keys.mm_items.end(),
          [](const MultimodalItem& a, const MultimodalItem& b) { return a.offset < b.offset; });
    }
    const std::vector<int32_t> tokens = ToIntVector<int32_t>(token_ids, "token_ids");
    const int64_t handle = next_handle_++;
    manager_->AddRequest(RequestId{handle}, tokens, std::move(options));
    py::int_ h(handle);
    ids_[request_id] = h;
    names_[h] = request_id;
    return handle;
  }

  py::object AddRequests(py::handle request_ids, py::handle prompts) {
    py::list ids = py::reinterpret_steal<py::list>(PySequence_List(request_ids.ptr()));
    if (!ids) throw py::error_already_set();
    py::list ps = py::reinterpret_steal<py::list>(PySequence_List(prompts.ptr()));
    if (!ps) throw py::error_already_set();
    if (ids.size() != ps.size()) {
      RaisePython(PyExc_ValueError, "request_ids and prompts differ in length (" +
                                        std::to_string(ids.size()) + " vs " +
                                        std::to_string(ps.size()) + ")");
    }
    std::vector<int64_t> handles;
    handles.reserve(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      handles.push_back(AddRequest(ids[i], ps[i], 0, "", py::none(), false, 0));
    }
    return ToMemoryView(std::move(handles));
  }

  void Forget(int64_t handle) {
    py::int_ h(handle);
    py::object name = names_[h];
    PyDict_DelItem(names_.ptr(), h.ptr());
    PyDict_DelItem(ids_.ptr(), name.ptr());
  }

  // ---- single calls ---------------------------------------------------------------------

  PyComputedBlocks GetComputedBlocks(py::handle request_id) {
    PyComputedBlocks out;
    out.handle = Lookup(request_id).value();
    manager_->GetComputedBlocks(RequestId{out.handle}, out.blocks);
    out.manager = this;
    return out;
  }

  // The whole of allocate_slots once the arguments are parsed; None when out of blocks.
  PyObject* Allocate(PyObject* request_id, int64_t num_new, int64_t num_new_computed,
                     PyObject* computed_obj, int64_t lookahead, bool must_fit, int64_t external,
                     bool delay, int64_t encoder) {
    const RequestId id{Handle(request_id)};
    const int64_t L = manager_->max_model_len();
    if (num_new < 0 || num_new > kMaxStepTokens || (num_new == 0 && external <= 0)) {
      RaisePython(PyExc_ValueError,
                  "num_new_tokens must be in [1, 2^40] (0 only with external tokens), got " +
                      std::to_string(num_new));
    }
    auto range = [&](int64_t v, const char* name, int64_t max) {
      if (v < 0 || v > max) {
        RaisePython(PyExc_ValueError, std::string(name) + " must be in [0, " + std::to_string(max) +
                                          "], got " + std::to_string(v));
      }
    };
    range(lookahead, "num_lookahead_tokens", L);
    range(num_new_computed, "num_new_computed_tokens", L);
    range(external, "num_external_computed_tokens", L);
    range(encoder, "num_encoder_tokens", kMaxStepTokens);
    const ComputedBlocks* hits = nullptr;
    if (num_new_computed > 0) {
      if (computed_obj == nullptr || computed_obj == Py_None) {
        RaisePython(PyExc_ValueError,
                    "num_new_computed_tokens > 0 needs computed= (from get_computed_blocks)");
      }
      const PyComputedBlocks& c = py::handle(computed_obj).cast<const PyComputedBlocks&>();
      if (c.manager != this || c.handle != id.value()) {
        RaisePython(PyExc_ValueError,
                    "computed= comes from another request or manager; pass the result of "
                    "get_computed_blocks(" +
                        py::repr(py::handle(request_id)).cast<std::string>() + ")");
      }
      if (c.blocks.num_tokens.value() != num_new_computed) {
        RaisePython(PyExc_ValueError, "num_new_computed_tokens is " +
                                          std::to_string(num_new_computed) +
                                          " but computed= holds " +
                                          std::to_string(c.blocks.num_tokens.value()) + " tokens");
      }
      if (manager_->num_computed_tokens(id).value() != 0 || !RowsEmpty(id)) {
        RaisePython(PyExc_ValueError,
                    "prefix hits (num_new_computed_tokens) are only accepted on a request's "
                    "first allocation");
      }
      ThrowIfError(manager_->ValidateComputedBlocks(id, c.blocks));
      hits = &c.blocks;
    }
    const SlotRequest step{.num_new_tokens = TokenCount{num_new},
                           .num_new_computed_tokens = TokenCount{num_new_computed},
                           .computed = hits,
                           .num_lookahead_tokens = TokenCount{lookahead},
                           .full_sequence_must_fit = must_fit,
                           .num_external_computed_tokens = TokenCount{external},
                           .delay_cache_blocks = delay,
                           .num_encoder_tokens = TokenCount{encoder}};
    if (!manager_->AllocateSlots(id, step)) Py_RETURN_NONE;
    PyObject* updates = PyList_New(num_groups_);
    for (int64_t g = 0; g < num_groups_; ++g) {
      const auto blocks = manager_->LastUpdate(id, GroupId{static_cast<int32_t>(g)}).block_ids;
      PyObject* row = PyList_New(static_cast<Py_ssize_t>(blocks.size()));
      for (size_t j = 0; j < blocks.size(); ++j) {
        PyList_SET_ITEM(row, j, PyLong_FromLong(blocks[j].value()));
      }
      PyList_SET_ITEM(updates, g, row);
    }
    return updates;
  }

  bool RowsEmpty(RequestId id) const {
    for (int32_t g = 0; g < num_groups_; ++g) {
      if (!manager_->BlockIds(id, GroupId{g}).empty()) return false;
    }
    return true;
  }

  void Free(py::handle request_id) {
    const RequestId id = Lookup(request_id);
    manager_->Free(id);
    Forget(id.value());
  }

  // ---- batched calls ---------------------------------------------------------------------

  // The result object for this call: the previous one when nobody else holds it (so steady
  // state allocates nothing), else a fresh one.
  py::object TakeResult() {
    // Two results alternate, so `res = m.allocate_slots_batch(...)` in a loop reuses the one
    // from two calls ago once the caller dropped it.
    for (py::object& r : results_) {
      if (r && Py_REFCNT(r.ptr()) == 1) return r;
    }
    py::object& slot = results_[next_result_];
    next_result_ ^= 1;
    slot = py::cast(PyStepResult{.num_groups = num_groups_});
    return slot;
  }

  void ReadCounts(py::handle obj, const char* what, std::vector<int32_t>& out, int64_t min,
                  int64_t max) {
    IntInput in(obj, what, scratch_b_);
    if (in.size() != static_cast<int64_t>(batch_ids_.size())) {
      RaisePython(PyExc_ValueError, std::string(what) + " holds " + std::to_string(in.size()) +
                                        " values for " + std::to_string(batch_ids_.size()) +
                                        " handles");
    }
    out.resize(batch_ids_.size());
    for (int64_t i = 0; i < in.size(); ++i) {
      const int64_t v = in[i];
      if (v < min || v > max) {
        RaisePython(PyExc_ValueError, std::string(what) + "[" + std::to_string(i) +
                                          "] must be in [" + std::to_string(min) + ", " +
                                          std::to_string(max) + "], got " + std::to_string(v));
      }
      out[i] = static_cast<int32_t>(v);
    }
  }

  PyObject* AllocateBatch(PyObject* handles, PyObject* num_new, PyObject* lookahead) {
    ReadHandles(handles);
    ReadCounts(num_new, "num_new_tokens", new_tokens_, 1, std::numeric_limits<int32_t>::max());
    lookahead_.clear();
    if (lookahead != nullptr && lookahead != Py_None) {
      ReadCounts(lookahead, "num_lookahead_tokens", lookahead_, 0,
                 std::min<int64_t>(manager_->max_model_len(), std::numeric_limits<int32_t>::max()));
    }
    py::object result = TakeResult();
    ThrowBatch(manager_->AllocateSlotsBatch(batch_ids_, new_tokens_, lookahead_,
                                            result.cast<PyStepResult&>().r));
    return result.release().ptr();
  }

  py::object AdmitBatch(py::handle handles, py::handle num_new, bool must_fit) {
    ReadHandles(handles);
    new_tokens_.clear();
    if (!num_new.is_none()) {
      ReadCounts(num_new, "num_new_tokens", new_tokens_, 1, std::numeric_limits<int32_t>::max());
    }
    for (RequestId id : batch_ids_) {
      CheckedHandle(id.value());
      if (!RowsEmpty(id) || manager_->num_computed_tokens(id).value() != 0) {
        RaisePython(PyExc_ValueError, "admit_batch: request handle " + std::to_string(id.value()) +
                                          " is already running");
      }
      if (num_new.is_none() && manager_->num_tokens(id).value() == 0) {
        RaisePython(PyExc_ValueError, "admit_batch: request handle " + std::to_string(id.value()) +
                                          " has no prompt tokens");
      }
    }
    py::object result = TakeResult();
    ThrowBatch(
        manager_->AdmitBatch(batch_ids_, new_tokens_, must_fit, result.cast<PyStepResult&>().r));
    return result;
  }

  void FreeBatch(py::handle handles) {
    ReadHandles(handles);
    ThrowBatch(manager_->FreeBatch(batch_ids_));
    for (RequestId id : batch_ids_) Forget(id.value());
  }

  void AppendTokensBatch(py::handle handles, py::handle tokens, py::handle counts) {
    ReadHandles(handles);
    IntInput t(tokens, "token_ids", scratch_b_);
    token_buf_.resize(t.size());
    for (int64_t i = 0; i < t.size(); ++i) {
      if (t[i] < std::numeric_limits<int32_t>::min() ||
          t[i] > std::numeric_limits<int32_t>::max()) {
        RaisePython(PyExc_OverflowError, "token_ids[" + std::to_string(i) + "] is not an int32");
      }
      token_buf_[i] = static_cast<int32_t>(t[i]);
    }
    count_buf_.clear();
    int64_t total = static_cast<int64_t>(batch_ids_.size());
    if (!counts.is_none()) {
      ReadCounts(counts, "counts", count_buf_, 0, std::numeric_limits<int32_t>::max());
      total = 0;
      for (int32_t c : count_buf_) total += c;
    }
    if (total != t.size()) {
      RaisePython(PyExc_ValueError, "token_ids holds " + std::to_string(t.size()) +
                                        " tokens; the counts add up to " + std::to_string(total));
    }
    ThrowBatch(manager_->AppendTokensBatch(batch_ids_, token_buf_, count_buf_));
  }

  static constexpr int64_t kMaxStepTokens = int64_t{1} << 40;

  KVCacheManager& manager() { return *manager_; }
  const KVCacheManager& manager() const { return *manager_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t num_groups() const { return num_groups_; }
  int64_t num_requests() const { return static_cast<int64_t>(py::len(ids_)); }
  bool Contains(py::handle request_id) const {
    if (PyBool_Check(request_id.ptr()) ||
        (!PyLong_Check(request_id.ptr()) && !PyUnicode_Check(request_id.ptr()))) {
      return false;
    }
    return PyDict_Contains(ids_.ptr(), request_id.ptr()) == 1;
  }
  GroupId CheckedGroup(int64_t group) const {
    if (group < 0 || group >= num_groups_) {
      RaisePython(PyExc_IndexError, "group " + std::to_string(group) + " out of range [0, " +
                                        std::to_string(num_groups_) + ")");
    }
    return GroupId{static_cast<int32_t>(group)};
  }

 private:
  std::unique_ptr<KVCacheManager> manager_;
  py::dict ids_;    // request id -> handle
  py::dict names_;  // handle -> request id
  int64_t next_handle_ = 0;
  int64_t num_blocks_ = 0;
  int64_t num_groups_ = 0;
  py::object results_[2];
  int next_result_ = 0;
  std::vector<RequestId> batch_ids_;
  std::vector<int32_t> new_tokens_, lookahead_, token_buf_, count_buf_;
  std::vector<int64_t> scratch_a_, scratch_b_;
};

// ---- METH_FASTCALL entry points --------------------------------------------------------------

// Positional and keyword arguments by name, without building a dict.
bool ParseArgs(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
               std::span<const char* const> names, size_t required, PyObject** out,
               const char* function) {
  for (size_t i = 0; i < names.size(); ++i) out[i] = nullptr;
  if (static_cast<size_t>(nargs) > names.size()) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %zd arguments (%zd given)", function,
                 static_cast<Py_ssize_t>(names.size()), nargs);
    return false;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) out[i] = args[i];
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    size_t found = names.size();
    for (size_t i = 0; i < names.size(); ++i) {
      if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) found = i;
    }
    if (found == names.size()) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", function, key);
      return false;
    }
    if (out[found] != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", function,
                   names[found]);
      return false;
    }
    out[found] = args[nargs + k];
  }
  for (size_t i = 0; i < required; ++i) {
    if (out[i] == nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", function, names[i]);
      return false;
    }
  }
  return true;
}

int64_t IntArg(PyObject* obj, const char* name, int64_t fallback) {
  if (obj == nullptr) return fallback;
  if (PyLong_CheckExact(obj)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0)
      RaisePython(PyExc_OverflowError, std::string(name) + " does not fit in 64 bits");
    return v;
  }
  return ToInt64(obj, name);
}

bool BoolArg(PyObject* obj, const char* name) { return obj == nullptr ? false : ToBool(obj, name); }

template <typename F>
PyObject* Guard(F&& f) {
  try {
    return f();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    try {
      throw;
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  }
  return nullptr;
}

PyObject* AllocateSlotsFast(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kwnames) {
  static constexpr const char* kNames[] = {"request_id",
                                           "num_new_tokens",
                                           "num_new_computed_tokens",
                                           "computed",
                                           "num_lookahead_tokens",
                                           "full_sequence_must_fit",
                                           "num_external_computed_tokens",
                                           "delay_cache_blocks",
                                           "num_encoder_tokens"};
  PyObject* a[9];
  if (!ParseArgs(args, nargs, kwnames, kNames, 2, a, "allocate_slots")) return nullptr;
  return Guard([&] {
    auto& m = py::handle(self).cast<PyKVCacheManager&>();
    return m.Allocate(
        a[0], IntArg(a[1], "num_new_tokens", 0), IntArg(a[2], "num_new_computed_tokens", 0), a[3],
        IntArg(a[4], "num_lookahead_tokens", 0), BoolArg(a[5], "full_sequence_must_fit"),
        IntArg(a[6], "num_external_computed_tokens", 0), BoolArg(a[7], "delay_cache_blocks"),
        IntArg(a[8], "num_encoder_tokens", 0));
  });
}

PyObject* AllocateSlotsBatchFast(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                 PyObject* kwnames) {
  static constexpr const char* kNames[] = {"handles", "num_new_tokens", "num_lookahead_tokens"};
  PyObject* a[3];
  if (!ParseArgs(args, nargs, kwnames, kNames, 2, a, "allocate_slots_batch")) return nullptr;
  return Guard([&] {
    auto& m = py::handle(self).cast<PyKVCacheManager&>();
    return m.AllocateBatch(a[0], a[1], a[2]);
  });
}

PyMethodDef kFastMethods[] = {
    {"allocate_slots",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(AllocateSlotsFast)),
     METH_FASTCALL | METH_KEYWORDS,
     "allocate_slots(request_id, num_new_tokens, num_new_computed_tokens=0, computed=None,\n"
     "               num_lookahead_tokens=0, full_sequence_must_fit=False,\n"
     "               num_external_computed_tokens=0, delay_cache_blocks=False,\n"
     "               num_encoder_tokens=0)\n\n"
     "Reserves slots for this step: the new or rewritten block ids per group, or None when\n"
     "there are not enough free blocks (nothing else changed)."},
    {"allocate_slots_batch",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(AllocateSlotsBatchFast)),
     METH_FASTCALL | METH_KEYWORDS,
     "allocate_slots_batch(handles, num_new_tokens, num_lookahead_tokens=None) -> StepResult\n\n"
     "allocate_slots for each request handle, in order: the same results as the single calls.\n"
     "Inputs are int32/int64 buffers (or sequences) the engine may keep between steps."},
};

py::dict EventDict(const KVCacheEvent& e) {
  py::dict d;
  switch (e.type) {
    case KVCacheEvent::Type::kBlockStored:
      d["type"] = "BlockStored";
      break;
    case KVCacheEvent::Type::kBlockRemoved:
      d["type"] = "BlockRemoved";
      break;
    case KVCacheEvent::Type::kAllBlocksCleared:
      d["type"] = "AllBlocksCleared";
      return d;
  }
  py::list hashes;
  for (const BlockHash& h : e.block_hashes) hashes.append(HashToInt(h));
  d["block_hashes"] = hashes;
  d["group_idx"] = e.group.value();
  d["medium"] = kKVCacheEventMedium;
  if (e.type == KVCacheEvent::Type::kBlockStored) {
    d["parent_block_hash"] =
        e.parent_block_hash ? py::object(HashToInt(*e.parent_block_hash)) : py::object(py::none());
    d["token_ids"] = e.token_ids;
    d["block_size"] = e.block_size;
    d["lora_id"] = e.lora_id == 0 ? py::object(py::none()) : py::object(py::int_(e.lora_id));
  }
  return d;
}

py::object StatsDict(const std::optional<PrefixCacheStats>& s) {
  if (!s) return py::none();
  py::dict d;
  d["reset"] = s->reset;
  d["requests"] = s->requests;
  d["queries"] = s->query_tokens;
  d["hits"] = s->hit_tokens;
  d["preempted_requests"] = s->preempted_requests;
  d["preempted_queries"] = s->preempted_query_tokens;
  d["preempted_hits"] = s->preempted_hit_tokens;
  return d;
}

std::unique_ptr<PyKVCacheManager> FromLayout(py::handle layout) {
  std::string text;
  if (PyUnicode_Check(layout.ptr())) {
    text = layout.cast<std::string>();
  } else if (py::isinstance<py::dict>(layout)) {
    text = py::module_::import("json").attr("dumps")(layout).cast<std::string>();
  } else {
    RaisePython(PyExc_TypeError, "layout must be a dict or a JSON string, got " + TypeName(layout));
  }
  const CacheLayout parsed = ValueOrThrow(ParseCacheLayoutJson(text));
  return std::make_unique<PyKVCacheManager>(
      ValueOrThrow(KVCacheManagerOptions::FromLayout(parsed)));
}

}  // namespace

void BindRuntime(py::module_& m) {
  py::class_<BorrowedView>(m, "_View", py::buffer_protocol()).def_buffer([](BorrowedView& v) {
    return py::buffer_info(const_cast<void*>(v.data), v.itemsize, v.format, 1, {v.size},
                           {v.itemsize}, /*readonly=*/true);
  });

  py::class_<PyStepResult>(
      m, "StepResult",
      "Results of a batched call, per request in input order (read-only memoryviews, valid as "
      "long as they are referenced). For request i and group g, k = i * num_groups + g: the "
      "row update is block_ids[offsets[k]:offsets[k + 1]] written from first_column[k].")
      .def_property_readonly("num_failed", [](const PyStepResult& r) { return r.r.num_failed; })
      .def_property_readonly("num_groups", [](const PyStepResult& r) { return r.num_groups; })
      .def("__len__", [](const PyStepResult& r) { return r.r.ok.size(); })
      .def_property_readonly("ok",
                             [](py::object self) {
                               auto& r = self.cast<PyStepResult&>().r;
                               return View(self, r.ok.data(), r.ok.size(), 1, "B");
                             })
      .def_property_readonly("num_computed",
                             [](py::object self) {
                               auto& r = self.cast<PyStepResult&>().r;
                               return View(self, r.num_computed.data(), r.num_computed.size(), 4,
                                           "i");
                             })
      .def_property_readonly("offsets",
                             [](py::object self) {
                               auto& r = self.cast<PyStepResult&>().r;
                               return View(self, r.offsets.data(), r.offsets.size(), 4, "i");
                             })
      .def_property_readonly("first_column",
                             [](py::object self) {
                               auto& r = self.cast<PyStepResult&>().r;
                               return View(self, r.first_column.data(), r.first_column.size(), 4,
                                           "i");
                             })
      .def_property_readonly("block_ids",
                             [](py::object self) {
                               auto& r = self.cast<PyStepResult&>().r;
                               return View(self, r.block_ids.data(), r.block_ids.size(), 4, "i");
                             })
      .def(
          "updates",
          [](const PyStepResult& s, int64_t i) -> py::object {
            const auto& r = s.r;
            if (i < 0 || i >= static_cast<int64_t>(r.ok.size())) {
              RaisePython(PyExc_IndexError, "request index out of range");
            }
            if (r.ok[i] == 0) return py::none();
            py::list groups;
            for (int64_t g = 0; g < s.num_groups; ++g) {
              const size_t k = i * s.num_groups + g;
              groups.append(py::make_tuple(
                  r.first_column[k], std::vector<int32_t>(r.block_ids.begin() + r.offsets[k],
                                                          r.block_ids.begin() + r.offsets[k + 1])));
            }
            return groups;
          },
          py::arg("i"),
          "Request i's [(first_column, [block ids]) per group], or None when it failed.");

  py::class_<PyComputedBlocks>(m, "ComputedBlocks",
                               "Prefix hits of a request: unpacks as (num_tokens, blocks).")
      .def_property_readonly("num_tokens",
                             [](const PyComputedBlocks& c) { return c.blocks.num_tokens.value(); })
      .def_property_readonly("blocks", &PyComputedBlocks::BlockLists)
      .def("__iter__",
           [](const PyComputedBlocks& c) {
             return py::iter(py::make_tuple(c.blocks.num_tokens.value(), c.BlockLists()));
           })
      .def("__repr__", [](const PyComputedBlocks& c) {
        return "ComputedBlocks(num_tokens=" + std::to_string(c.blocks.num_tokens.value()) + ")";
      });

  py::class_<KVCacheInspector>(m, "KVCacheInspector",
                               "Read-only view of a manager's pool for tests and debugging.")
      .def(
          "free_queue", [](const KVCacheInspector& i) { return ToList(i.FreeQueue()); },
          "Free blocks from the head (allocated next) to the tail.")
      .def(
          "ref_count",
          [](const KVCacheInspector& i, int64_t block) {
            return i.RefCount(BlockId{static_cast<int32_t>(block)});
          },
          py::arg("block"))
      .def(
          "block_hash",
          [](const KVCacheInspector& i, int64_t block) -> py::object {
            const auto c = i.CachedAs(BlockId{static_cast<int32_t>(block)});
            if (!c) return py::none();
            return py::make_tuple(HashToInt(c->first), c->second.value());
          },
          py::arg("block"), "(hash, group) the block is cached under, or None.")
      .def(
          "lookup",
          [](const KVCacheInspector& i, py::handle hash, int64_t group) -> py::object {
            const auto b = i.Lookup(IntToHash(hash), GroupId{static_cast<int32_t>(group)});
            if (!b) return py::none();
            return py::int_(b->value());
          },
          py::arg("block_hash"), py::arg("group"))
      .def_property_readonly("null_block",
                             [](const KVCacheInspector& i) { return i.null_block().value(); });

  using M = PyKVCacheManager;
  auto cls = py::class_<M>(m, "KVCacheManager",
                           "The scheduler-side block manager (one per engine), built from a plan "
                           "or an explicit cache layout.");
  cls.def(py::init([](const Plan& plan, std::optional<int64_t> num_blocks,
                      std::optional<bool> enable_prefix_caching, bool log_stats,
                      bool enable_kv_cache_events, bool record_new_block_ids) {
            KVCacheManagerOptions o = ValueOrThrow(
                KVCacheManagerOptions::FromPlan(plan, num_blocks, enable_prefix_caching));
            o.log_stats = log_stats;
            o.enable_kv_cache_events = enable_kv_cache_events;
            o.record_new_block_ids = record_new_block_ids;
            return std::make_unique<M>(std::move(o));
          }),
          py::arg("plan"), py::kw_only(), py::arg("num_blocks") = py::none(),
          py::arg("enable_prefix_caching") = py::none(), py::arg("log_stats") = true,
          py::arg("enable_kv_cache_events") = false, py::arg("record_new_block_ids") = false)
      .def_static("from_layout", &FromLayout, py::arg("layout"),
                  "A manager from an explicit cache layout (a dict or its JSON; see "
                  "docs/runtime.md): groups with kind, block_size, page_size_bytes, ...")
      .def("add_request", &M::AddRequest, py::arg("request_id"), py::arg("token_ids"),
           py::kw_only(), py::arg("lora_id") = 0, py::arg("cache_salt") = "",
           py::arg("mm_items") = py::none(), py::arg("skip_reading_prefix_cache") = false,
           py::arg("num_preemptions") = 0,
           "Registers a request with its prompt token ids; returns its integer handle.")
      .def("add_requests", &M::AddRequests, py::arg("request_ids"), py::arg("prompts"),
           "Registers several requests; returns their handles (int64 memoryview).")
      .def(
          "handle", [](const M& self, py::handle id) { return self.Handle(id.ptr()); },
          py::arg("request_id"))
      .def("get_computed_blocks", &M::GetComputedBlocks, py::arg("request_id"),
           "Longest prefix hit: ComputedBlocks, unpacking as (num_tokens, [[block ids] per "
           "group]). Valid until one of its blocks is evicted or reused.")
      .def("admit_batch", &M::AdmitBatch, py::arg("handles"),
           py::arg("num_new_tokens") = py::none(), py::arg("full_sequence_must_fit") = false,
           "get_computed_blocks + allocate_slots for each new request (num_new_tokens: the "
           "tokens past the hit; None: the rest of the prompt). StepResult.num_computed holds "
           "the hits.")
      .def("free_batch", &M::FreeBatch, py::arg("handles"))
      .def("append_tokens_batch", &M::AppendTokensBatch, py::arg("handles"), py::arg("token_ids"),
           py::arg("counts") = py::none(),
           "Appends counts[i] tokens (one each when counts is None) to each request.")
      .def(
          "append_tokens",
          [](M& self, py::handle id, py::handle tokens) {
            self.manager().AppendTokens(self.Lookup(id), ToIntVector<int32_t>(tokens, "token_ids"));
          },
          py::arg("request_id"), py::arg("token_ids"))
      .def(
          "rewind_computed_tokens",
          [](M& self, py::handle id, int64_t num_rejected) {
            const RequestId r = self.Lookup(id);
            const int64_t computed = self.manager().num_computed_tokens(r).value();
            if (num_rejected < 0 || num_rejected > computed) {
              RaisePython(PyExc_ValueError, "num_rejected must be in [0, " +
                                                std::to_string(computed) +
                                                "] (the request's computed tokens), got " +
                                                std::to_string(num_rejected));
            }
            self.manager().RewindComputedTokens(r, TokenCount{num_rejected});
          },
          py::arg("request_id"), py::arg("num_rejected"))
      .def("free", &M::Free, py::arg("request_id"))
      .def(
          "preempt", [](M& self, py::handle id) { self.manager().Preempt(self.Lookup(id)); },
          py::arg("request_id"),
          "Releases the request's blocks, keeps its tokens; it is admitted again later.")
      .def("new_step", [](M& self) { self.manager().NewStep(); })
      .def(
          "remove_skipped_blocks",
          [](M& self, py::handle id, int64_t total_computed_tokens) {
            if (total_computed_tokens < 0) {
              RaisePython(PyExc_ValueError, "total_computed_tokens must be non-negative");
            }
            self.manager().RemoveSkippedBlocks(self.Lookup(id), TokenCount{total_computed_tokens});
          },
          py::arg("request_id"), py::arg("total_computed_tokens"))
      .def(
          "cache_blocks",
          [](M& self, py::handle id, int64_t num_computed_tokens) {
            if (num_computed_tokens < 0) {
              RaisePython(PyExc_ValueError, "num_computed_tokens must be non-negative");
            }
            self.manager().CacheBlocks(self.Lookup(id), TokenCount{num_computed_tokens});
          },
          py::arg("request_id"), py::arg("num_computed_tokens"))
      .def(
          "evict_blocks",
          [](M& self, py::handle block_ids) {
            std::vector<BlockId> blocks;
            for (int64_t b : ToIntVector<int64_t>(block_ids, "block_ids")) {
              if (b < 0 || b >= self.num_blocks()) {
                RaisePython(PyExc_ValueError, "block id " + std::to_string(b) +
                                                  " is not in the pool [0, " +
                                                  std::to_string(self.num_blocks()) + ")");
              }
              blocks.emplace_back(static_cast<int32_t>(b));
            }
            self.manager().EvictBlocks(blocks);
          },
          py::arg("block_ids"))
      .def(
          "get_num_common_prefix_blocks",
          [](const M& self, py::handle id) {
            std::vector<int64_t> out;
            self.manager().GetNumCommonPrefixBlocks(self.Lookup(id), out);
            return out;
          },
          py::arg("running_request_id"))
      .def("take_new_block_ids", [](M& self) { return ToList(self.manager().TakeNewBlockIds()); })
      .def("take_events",
           [](M& self) {
             py::list out;
             for (const KVCacheEvent& e : self.manager().TakeEvents()) out.append(EventDict(e));
             return out;
           })
      .def(
          "make_prefix_cache_stats",
          [](M& self) { return StatsDict(self.manager().MakePrefixCacheStats()); },
          "Stats since the last call (vLLM's PrefixCacheStats fields), or None when log_stats "
          "is off.")
      .def(
          "get_blocks",
          [](const M& self, py::handle id) {
            const RequestId r = self.Lookup(id);
            py::tuple out(self.num_groups());
            for (int64_t g = 0; g < self.num_groups(); ++g) {
              out[g] = ToList(self.manager().BlockIds(r, GroupId{static_cast<int32_t>(g)}));
            }
            return out;
          },
          py::arg("request_id"), "The request's rows, one list per group.")
      .def(
          "block_ids",
          [](const M& self, py::handle id, int64_t group) {
            return ToList(self.manager().BlockIds(self.Lookup(id), self.CheckedGroup(group)));
          },
          py::arg("request_id"), py::arg("group"))
      .def(
          "last_update",
          [](const M& self, py::handle id, int64_t group) {
            const auto u = self.manager().LastUpdate(self.Lookup(id), self.CheckedGroup(group));
            return py::make_tuple(u.first_column, ToList(u.block_ids));
          },
          py::arg("request_id"), py::arg("group"),
          "(first_column, block_ids) the last allocate_slots changed in the group's row.")
      .def(
          "request_block_hashes",
          [](const M& self, py::handle id) {
            py::list out;
            for (const BlockHash& h :
                 KVCacheInspector(self.manager()).RequestBlockHashes(self.Lookup(id))) {
              out.append(HashToInt(h));
            }
            return out;
          },
          py::arg("request_id"))
      .def(
          "inspector",
          [](py::object self) {
            return py::cast(KVCacheInspector(self.cast<M&>().manager()),
                            py::return_value_policy::move, self);
          },
          "A read-only KVCacheInspector over this manager (keeps it alive).")
      .def(
          "num_computed_tokens",
          [](const M& self, py::handle id) {
            return self.manager().num_computed_tokens(self.Lookup(id)).value();
          },
          py::arg("request_id"))
      .def(
          "num_tokens",
          [](const M& self, py::handle id) {
            return self.manager().num_tokens(self.Lookup(id)).value();
          },
          py::arg("request_id"))
      .def("__contains__", &M::Contains)
      .def("__len__", &M::num_requests)
      .def_property_readonly("num_free_blocks",
                             [](const M& self) { return self.manager().num_free_blocks(); })
      .def_property_readonly("num_blocks", &M::num_blocks)
      .def_property_readonly("num_groups", &M::num_groups)
      .def_property_readonly("max_model_len",
                             [](const M& self) { return self.manager().max_model_len(); })
      .def_property_readonly("scheduler_block_size",
                             [](const M& self) { return self.manager().scheduler_block_size(); })
      .def_property_readonly("hash_block_size",
                             [](const M& self) { return self.manager().hash_block_size(); })
      .def_property_readonly("usage", [](const M& self) { return self.manager().Usage(); })
      .def_property_readonly("prefix_cache_stats",
                             [](const M& self) {
                               const PrefixCacheStats& s = self.manager().prefix_cache_stats();
                               py::dict d;
                               d["requests"] = s.requests;
                               d["query_tokens"] = s.query_tokens;
                               d["hit_tokens"] = s.hit_tokens;
                               return d;
                             })
      .def("reset_prefix_cache", [](M& self) { return self.manager().ResetPrefixCache(); })
      .def(
          "check_invariants", [](const M& self) { self.manager().CheckInvariants(); },
          "Aborts the process if an internal invariant is broken (a kvtopo bug).");
  for (PyMethodDef& def : kFastMethods) {
    py::object descr = py::reinterpret_steal<py::object>(
        PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), &def));
    if (!descr) throw py::error_already_set();
    cls.attr(def.ml_name) = descr;
  }
}

}  // namespace kvtopo::python
