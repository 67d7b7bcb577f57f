// kvtopo._kvtopo, runtime part: KVCacheManager (single calls by request id, the batched step API
// by integer handle, the engine surface), its results and the read-only inspector.
//
// The manager's rules and messages are the C++ ones: a Status becomes ValueError, or KeyError
// for a request that is not registered. The binding only translates: request ids (int or str)
// to the manager's integer handles, Python ints and buffers to spans, results to lists or
// read-only memoryviews. The step calls (allocate_slots and the *_batch calls) are METH_FASTCALL
// functions over reused buffers: no overload resolution, no keyword dict, and no allocation in
// steady state.
#include <pybind11/stl.h>

#include <array>
#include <cstring>
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

// ---- conversions ---------------------------------------------------------------------------

py::int_ HashToInt(const BlockHash& h) {
  py::int_ high(h.high);
  return py::reinterpret_steal<py::int_>(PyNumber_Or(
      py::reinterpret_steal<py::object>(PyNumber_Lshift(high.ptr(), py::int_(64).ptr())).ptr(),
      py::int_(h.low).ptr()));
}

BlockHash IntToHash(py::handle value) {
  if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()) ||
      PyObject_RichCompareBool(value.ptr(), py::int_(0).ptr(), Py_LT) == 1 ||
      value.attr("bit_length")().cast<int64_t>() > 128) {
    RaisePython(PyExc_ValueError, "a block hash is a non-negative int of at most 128 bits");
  }
  py::object high =
      py::reinterpret_steal<py::object>(PyNumber_Rshift(value.ptr(), py::int_(64).ptr()));
  return BlockHash{.low = PyLong_AsUnsignedLongLongMask(value.ptr()),
                   .high = PyLong_AsUnsignedLongLongMask(high.ptr())};
}

PyObject* NewList(std::span<const BlockId> blocks) {
  PyObject* out = PyList_New(static_cast<Py_ssize_t>(blocks.size()));
  if (out == nullptr) throw py::error_already_set();
  for (size_t i = 0; i < blocks.size(); ++i) {
    PyList_SET_ITEM(out, i, PyLong_FromLong(blocks[i].value()));
  }
  return out;
}

py::list ToList(std::span<const BlockId> blocks) {
  return py::reinterpret_steal<py::list>(NewList(blocks));
}

int64_t IntArg(PyObject* obj, const char* name, int64_t fallback) {
  return obj == nullptr ? fallback : ToInt64(obj, name);
}

bool BoolArg(PyObject* obj, const char* name) {
  if (obj == nullptr) return false;
  if (!PyBool_Check(obj)) {
    RaisePython(PyExc_TypeError, std::string(name) + " must be a bool, got " + TypeName(obj));
  }
  return obj == Py_True;
}

// Per-request int32 counts: a buffer or sequence of one per request, or one int for all.
class CountsIn {
 public:
  CountsIn(PyObject* obj, const char* what, size_t n, std::vector<int32_t>& scratch) {
    if (PyLong_Check(obj) && !PyBool_Check(obj)) {
      const int64_t v = ToInt64(obj, what);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        RaisePython(PyExc_OverflowError, std::string(what) + ": " + OutsideRange<int32_t>(v));
      }
      scratch.assign(n, static_cast<int32_t>(v));
      values_ = scratch;
    } else {
      in_.emplace(obj, what, scratch);
      values_ = in_->values();
    }
  }
  std::span<const int32_t> values() const { return values_; }
  void CheckStillHeld() const {
    if (in_) in_->CheckStillHeld();
  }

 private:
  std::optional<IntsIn<int32_t>> in_;
  std::span<const int32_t> values_;
};

// ---- results -------------------------------------------------------------------------------

// Prefix hits as get_computed_blocks hands them out.
struct PyComputedBlocks {
  ComputedBlocks hits;
  py::list BlockLists() const {
    py::list groups;
    for (const auto& row : hits.blocks) groups.append(ToList(row));
    return groups;
  }
};

// One batched call's results; memoryviews over them keep the result alive.
struct PyStepResult {
  KVCacheManager::BatchResult r;
  int64_t num_groups = 0;
};

template <typename F>
PyObject* Guard(F&& f) {
  try {
    return f();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

enum StepField : intptr_t { kNumFailed, kNumGroups, kOk, kNumComputed, kOffsets, kFirstCol, kIds };

PyObject* GetStepField(PyObject* self, void* closure) {
  return Guard([&]() -> PyObject* {
    const PyStepResult& s = Self<PyStepResult>(self);
    const auto& r = s.r;
    switch (reinterpret_cast<intptr_t>(closure)) {
      case kNumFailed:
        return PyLong_FromLongLong(r.num_failed);
      case kNumGroups:
        return PyLong_FromLongLong(s.num_groups);
      case kOk:
        return View(self, r.ok.data(), r.ok.size(), "B").release().ptr();
      case kNumComputed:
        return View(self, r.num_computed.data(), r.num_computed.size(), "i").release().ptr();
      case kOffsets:
        return View(self, r.offsets.data(), r.offsets.size(), "i").release().ptr();
      case kFirstCol:
        return View(self, r.first_column.data(), r.first_column.size(), "i").release().ptr();
      default:
        return View(self, r.block_ids.data(), r.block_ids.size(), "i").release().ptr();
    }
  });
}

PyGetSetDef kStepFields[] = {
    {"num_failed", GetStepField, nullptr, "Requests that ran out of blocks.",
     reinterpret_cast<void*>(kNumFailed)},
    {"num_groups", GetStepField, nullptr, nullptr, reinterpret_cast<void*>(kNumGroups)},
    {"ok", GetStepField, nullptr, "uint8 per request: 1 allocated, 0 out of blocks.",
     reinterpret_cast<void*>(kOk)},
    {"num_computed", GetStepField, nullptr, "int32 per request: prefix-hit tokens (admit_batch).",
     reinterpret_cast<void*>(kNumComputed)},
    {"offsets", GetStepField, nullptr, "int32, n * num_groups + 1.",
     reinterpret_cast<void*>(kOffsets)},
    {"first_column", GetStepField, nullptr, "int32, n * num_groups.",
     reinterpret_cast<void*>(kFirstCol)},
    {"block_ids", GetStepField, nullptr, "int32, flat.", reinterpret_cast<void*>(kIds)},
};

// What vLLM's KV-cache events say of a group (get_kv_cache_spec_kind and
// get_kv_cache_spec_sliding_window): its kind's name and, for a sliding window, the window.
std::pair<const char*, py::object> GroupEventKind(const GroupGeometry& g) {
  if (g.cross_attention()) return {"cross_attention", py::none()};
  switch (g.kind()) {
    case CacheKind::kFullAttention:
      return {g.sink_tokens() > 0 ? "sink_full_attention" : "full_attention", py::none()};
    case CacheKind::kMla:
      return {"mla_attention", py::none()};
    case CacheKind::kSlidingWindow:
      return {"sliding_window", py::int_(g.sliding_window())};
    case CacheKind::kSlidingWindowMla:
      return {"sliding_window_mla", py::int_(g.sliding_window())};
    case CacheKind::kChunkedLocal:
      return {"chunked_local_attention", py::none()};
    case CacheKind::kRecurrent:
      return {"mamba", py::none()};
  }
  return {"unknown", py::none()};
}

// Text the engine passed in (identifiers, salts): UTF-8 from Python; other bytes a C++ caller
// gave come back as surrogate escapes rather than failing the whole event list.
py::str TextOf(const std::string& s) {
  PyObject* o =
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// vLLM's BlockStored.extra_keys: None, or per block None or a tuple of its keys in vLLM's order
// (multimodal (identifier, offset) pairs, the cache salt, the prompt-embedding digest as bytes).
py::object ExtraKeysList(const std::vector<BlockEventKeys>& keys) {
  if (keys.empty()) return py::none();
  py::list out;
  for (const BlockEventKeys& k : keys) {
    if (k.empty()) {
      out.append(py::none());
      continue;
    }
    py::list items;
    for (const auto& [identifier, offset] : k.mm_items) {
      items.append(py::make_tuple(TextOf(identifier), offset));
    }
    if (!k.cache_salt.empty()) items.append(TextOf(k.cache_salt));
    if (k.content_digest) {
      const BlockHash& h = *k.content_digest;
      char bytes[16];
      std::memcpy(bytes, &h.low, 8);
      std::memcpy(bytes + 8, &h.high, 8);
      items.append(py::bytes(bytes, sizeof(bytes)));
    }
    out.append(py::tuple(items));
  }
  return out;
}

py::dict EventDict(const KVCacheEvent& e, const KVCacheManager& manager) {
  static constexpr const char* kNames[] = {"BlockStored", "BlockRemoved", "AllBlocksCleared"};
  py::dict d;
  d["type"] = kNames[static_cast<int>(e.type)];
  if (e.type == KVCacheEvent::Type::kAllBlocksCleared) return d;
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
    const auto [kind, window] = GroupEventKind(manager.group(e.group).geometry);
    d["kv_cache_spec_kind"] = kind;
    d["kv_cache_spec_sliding_window"] = window;
    d["extra_keys"] = ExtraKeysList(e.extra_keys);
  }
  return d;
}

// ---- the manager ---------------------------------------------------------------------------

class PyKVCacheManager {
 public:
  // Calls on one manager do not nest. Python code that an argument runs (an iterator,
  // __index__, a str subclass's __hash__, a finalizer) and that calls the same manager again
  // would find the outer call's scratch buffers and half-read arguments in use: that nested call
  // raises RuntimeError instead.
  class Busy {
   public:
    Busy(PyKVCacheManager& m, const char* method) : m_(m) {
      if (m_.busy_ != nullptr) [[unlikely]] {
        RaisePython(PyExc_RuntimeError,
                    std::string("KVCacheManager.") + method + " was called while KVCacheManager." +
                        m_.busy_ +
                        " was running on the same manager (from Python code its arguments ran: "
                        "an iterator, __index__, __hash__ or a finalizer); make the calls one "
                        "after the other");
      }
      m_.busy_ = method;
    }
    ~Busy() { m_.busy_ = nullptr; }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    PyKVCacheManager& m_;
  };

  explicit PyKVCacheManager(KVCacheManagerOptions options) : manager_(Create(std::move(options))) {}

  // The manager, or MemoryError naming the pool when its bookkeeping does not fit in memory.
  static std::unique_ptr<KVCacheManager> Create(KVCacheManagerOptions options) {
    const int64_t num_blocks = options.num_blocks;
    try {
      return ValueOrThrow(KVCacheManager::Create(std::move(options)));
    } catch (const std::bad_alloc&) {
      RaisePython(PyExc_MemoryError, "KVCacheManager: the bookkeeping of a pool of " +
                                         std::to_string(num_blocks) +
                                         " blocks does not fit in this process's memory");
    }
  }

  static std::unique_ptr<PyKVCacheManager> FromPlan(const Plan& plan,
                                                    std::optional<int64_t> num_blocks,
                                                    std::optional<bool> enable_prefix_caching,
                                                    bool log_stats, bool enable_kv_cache_events,
                                                    bool record_new_block_ids) {
    KVCacheManagerOptions o =
        ValueOrThrow(KVCacheManagerOptions::FromPlan(plan, num_blocks, enable_prefix_caching));
    o.log_stats = log_stats;
    o.enable_kv_cache_events = enable_kv_cache_events;
    o.record_new_block_ids = record_new_block_ids;
    return std::make_unique<PyKVCacheManager>(std::move(o));
  }

  static std::unique_ptr<PyKVCacheManager> FromLayout(py::handle layout) {
    if (!PyUnicode_Check(layout.ptr()) && !PyDict_Check(layout.ptr())) {
      RaisePython(PyExc_TypeError,
                  "layout must be a dict or a JSON string, got " + TypeName(layout));
    }
    const std::string text =
        PyUnicode_Check(layout.ptr())
            ? layout.cast<std::string>()
            : py::module_::import("json").attr("dumps")(layout).cast<std::string>();
    const CacheLayout parsed = ValueOrThrow(ParseCacheLayoutJson(text));
    return std::make_unique<PyKVCacheManager>(
        ValueOrThrow(KVCacheManagerOptions::FromLayout(parsed)));
  }

  // ---- request ids and handles ----------------------------------------------------------

  // The handle of a registered request id (an int or a str), or KeyError.
  int64_t Handle(py::handle request_id) const {
    CheckIdType(request_id);
    PyObject* h = PyDict_GetItemWithError(ids_.ptr(), request_id.ptr());
    if (h == nullptr) {
      if (PyErr_Occurred()) throw py::error_already_set();
      PyErr_SetObject(PyExc_KeyError, py::str("unknown request {!r}").format(request_id).ptr());
      throw py::error_already_set();
    }
    return PyLong_AsLongLong(h);
  }
  RequestId Id(py::handle request_id) const { return RequestId{Handle(request_id)}; }

  static void CheckIdType(py::handle id) {
    if (PyBool_Check(id.ptr()) || (!PyLong_Check(id.ptr()) && !PyUnicode_Check(id.ptr()))) {
      RaisePython(PyExc_TypeError, "request_id must be an int or a str, got " + TypeName(id));
    }
  }
  // Runtime errors: a request that is not registered is a KeyError.
  static void Check(const Status& status) {
    if (!status.ok()) [[unlikely]] {
      ThrowStatus(status, PyExc_KeyError);
    }
  }

  // ---- single calls ---------------------------------------------------------------------

  int64_t AddRequest(py::handle request_id, py::handle token_ids, int64_t lora_id,
                     std::string cache_salt, py::handle mm_items, bool skip_reading_prefix_cache,
                     int64_t num_preemptions, py::handle prompt_embeds) {
    const Busy busy(*this, "add_request");
    return AddOne(request_id, token_ids, lora_id, std::move(cache_salt), mm_items,
                  skip_reading_prefix_cache, num_preemptions, prompt_embeds);
  }
  int64_t AddOne(py::handle request_id, py::handle token_ids, int64_t lora_id,
                 std::string cache_salt, py::handle mm_items, bool skip_reading_prefix_cache,
                 int64_t num_preemptions, py::handle prompt_embeds = py::handle()) {
    CheckIdType(request_id);
    if (PyDict_Contains(ids_.ptr(), request_id.ptr()) == 1) {
      RaisePython(PyExc_ValueError, "request " + py::repr(request_id).cast<std::string>() +
                                        " is already registered; free it first");
    }
    RequestOptions options{.extra_keys = {.lora_id = lora_id, .cache_salt = std::move(cache_salt)},
                           .skip_reading_prefix_cache = skip_reading_prefix_cache,
                           .num_preemptions = num_preemptions};
    if (!mm_items.is_none()) {
      constexpr const char* kEntry = "(identifier: str, offset: int, length: int)";
      const py::object items = py::reinterpret_steal<py::object>(PyObject_GetIter(mm_items.ptr()));
      if (!items) {
        PyErr_Clear();
        RaisePython(PyExc_TypeError, "mm_items must be an iterable of " + std::string(kEntry) +
                                         " entries, got " + TypeName(mm_items));
      }
      size_t index = 0;
      for (py::handle item : items) {
        const std::string where = "mm_items[" + std::to_string(index++) + "]";
        if (!PyTuple_Check(item.ptr()) && !PyList_Check(item.ptr())) {
          RaisePython(PyExc_TypeError,
                      where + " must be a tuple " + kEntry + ", got " + TypeName(item));
        }
        const py::tuple t = py::reinterpret_borrow<py::object>(item).cast<py::tuple>();
        if (t.size() != 3 || !PyUnicode_Check(t[0].ptr())) {
          RaisePython(PyExc_ValueError, where + " is " + py::repr(item).cast<std::string>() +
                                            "; entries are " + kEntry);
        }
        const int64_t offset = ToInt64(t[1], where + " offset");
        const int64_t length = ToInt64(t[2], where + " length");
        if (offset < 0 || length < 0) {
          RaisePython(PyExc_ValueError, where + ": offset " + std::to_string(offset) +
                                            " and length " + std::to_string(length) +
                                            " must be non-negative");
        }
        Py_ssize_t size = 0;
        const char* identifier = PyUnicode_AsUTF8AndSize(t[0].ptr(), &size);
        if (identifier == nullptr) {
          PyErr_Clear();
          RaisePython(PyExc_ValueError, where + ": the identifier " +
                                            py::repr(t[0]).cast<std::string>() +
                                            " is not UTF-8 text (it holds a lone surrogate)");
        }
        options.extra_keys.mm_items.push_back({.identifier = std::string(identifier, size),
                                               .offset = TokenPos{offset},
                                               .length = TokenCount{length}});
      }
      std::stable_sort(
          options.extra_keys.mm_items.begin(), options.extra_keys.mm_items.end(),
          [](const MultimodalItem& a, const MultimodalItem& b) { return a.offset < b.offset; });
    }
    const IntsIn<int32_t> tokens(token_ids, "token_ids", tokens_);
    // Prompt embeddings: any C-contiguous buffer, one row per prompt token along its first
    // dimension (a 1-D buffer: one row per token id given).
    Py_buffer view{};
    std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> held(nullptr, PyBuffer_Release);
    if (prompt_embeds && !prompt_embeds.is_none()) {
      if (PyObject_GetBuffer(prompt_embeds.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        RaisePython(PyExc_TypeError,
                    "prompt_embeds must be a C-contiguous buffer (bytes, a numpy array: one row "
                    "per prompt token), got " +
                        TypeName(prompt_embeds));
      }
      held.reset(&view);
      options.prompt_embeds =
          std::span(static_cast<const std::byte*>(view.buf), static_cast<size_t>(view.len));
      options.prompt_embeds_rows = view.ndim >= 2 ? static_cast<int64_t>(view.shape[0])
                                                  : static_cast<int64_t>(tokens.values().size());
    }
    const int64_t handle = next_handle_;
    Check(manager_->AddRequest(RequestId{handle}, tokens.values(), std::move(options)));
    ++next_handle_;
    py::int_ h(handle);
    ids_[request_id] = h;
    names_[h] = request_id;
    return handle;
  }

  py::object AddRequests(py::handle request_ids, py::handle prompts) {
    const Busy busy(*this, "add_requests");
    const py::list ids = py::reinterpret_steal<py::list>(PySequence_List(request_ids.ptr()));
    const py::list ps = py::reinterpret_steal<py::list>(PySequence_List(prompts.ptr()));
    if (!ids || !ps) throw py::error_already_set();
    if (ids.size() != ps.size()) {
      RaisePython(PyExc_ValueError, "request_ids and prompts differ in length (" +
                                        std::to_string(ids.size()) + " vs " +
                                        std::to_string(ps.size()) + ")");
    }
    std::vector<int64_t> handles;
    for (size_t i = 0; i < ids.size(); ++i) {
      handles.push_back(AddOne(ids[i], ps[i], 0, "", py::none(), false, 0));
    }
    return ToMemoryView(std::move(handles));
  }

  PyComputedBlocks GetComputedBlocks(py::handle request_id) {
    PyComputedBlocks out;
    Check(manager_->GetComputedBlocks(Id(request_id), out.hits).status());
    return out;
  }

  // allocate_slots once its arguments are read: the changed columns per group (lists of block
  // ids), or None when out of blocks.
  PyObject* Allocate(PyObject* const* a) {
    const RequestId id = Id(a[0]);
    const ComputedBlocks* hits = a[3] == nullptr || a[3] == Py_None
                                     ? nullptr
                                     : &Self<PyComputedBlocks>(a[3], "computed").hits;
    const SlotRequest step{
        .num_new_tokens = TokenCount{IntArg(a[1], "num_new_tokens", 0)},
        .num_new_computed_tokens = TokenCount{IntArg(a[2], "num_new_computed_tokens", 0)},
        .computed = hits,
        .num_lookahead_tokens = TokenCount{IntArg(a[4], "num_lookahead_tokens", 0)},
        .full_sequence_must_fit = BoolArg(a[5], "full_sequence_must_fit"),
        .num_external_computed_tokens = TokenCount{IntArg(a[6], "num_external_computed_tokens", 0)},
        .delay_cache_blocks = BoolArg(a[7], "delay_cache_blocks"),
        .num_encoder_tokens = TokenCount{IntArg(a[8], "num_encoder_tokens", 0)}};
    const Result<bool> allocated = manager_->AllocateSlots(id, step);
    Check(allocated.status());
    if (!*allocated) Py_RETURN_NONE;
    const int32_t num_groups = manager_->num_groups();
    PyObject* updates = PyList_New(num_groups);
    for (int32_t g = 0; g < num_groups; ++g) {
      PyList_SET_ITEM(updates, g, NewList(manager_->LastUpdate(id, GroupId{g}).block_ids));
    }
    return updates;
  }

  void AppendTokens(py::handle request_id, py::handle token_ids) {
    const Busy busy(*this, "append_tokens");
    const RequestId id = Id(request_id);
    Check(manager_->AppendTokens(id, IntsIn<int32_t>(token_ids, "token_ids", tokens_).values()));
  }
  void Free(py::handle request_id) {
    const Busy busy(*this, "free");
    const RequestId id = Id(request_id);
    Check(manager_->Free(id));
    Forget(id.value());
  }
  // A call on one request: the id becomes its handle, ints become token counts, a Status raises.
  template <auto kCall, typename... Counts>
  void On(py::handle request_id, Counts... n) {
    Check(((*manager_).*kCall)(Id(request_id), TokenCount{n}...));
  }
  template <auto kQuery>
  int64_t Tokens(py::handle request_id) const {
    return ((*manager_).*kQuery)(Id(request_id)).value();
  }
  template <auto kGet>
  auto Get() const {
    return ((*manager_).*kGet)();
  }
  void EvictBlocks(py::handle block_ids) {
    const Busy busy(*this, "evict_blocks");
    std::vector<BlockId> blocks;
    for (int32_t b : IntsIn<int32_t>(block_ids, "block_ids", tokens_).values()) {
      blocks.emplace_back(b);
    }
    Check(manager_->EvictBlocks(blocks));
  }
  std::vector<int64_t> GetNumCommonPrefixBlocks(py::handle request_id) const {
    std::vector<int64_t> out;
    Check(manager_->GetNumCommonPrefixBlocks(Id(request_id), out));
    return out;
  }

  // ---- batched calls ---------------------------------------------------------------------

  // The result object for this call: one of two that alternate, reused when nobody else holds
  // it (so `res = m.allocate_slots_batch(...)` in a loop allocates nothing), else a fresh one.
  PyObject* TakeResult() {
    for (int i = 0; i < 2; ++i) {
      if (results_[i] && Py_REFCNT(results_[i].ptr()) == 1) {
        return py::object(results_[i]).release().ptr();
      }
    }
    py::object& slot = results_[next_result_];
    next_result_ ^= 1;
    slot = py::cast(PyStepResult{.num_groups = manager_->num_groups()});
    return py::object(slot).release().ptr();
  }
  static KVCacheManager::BatchResult& ResultOf(PyObject* result) {
    return Self<PyStepResult>(result).r;
  }

  void ReadHandles(PyObject* handles) {
    const IntsIn<int64_t> in(handles, "handles", handle_scratch_);
    batch_ids_.resize(in.values().size());
    for (size_t i = 0; i < batch_ids_.size(); ++i) batch_ids_[i] = RequestId{in.values()[i]};
  }

  PyObject* AllocateBatch(PyObject* const* a) {
    ReadHandles(a[0]);
    const CountsIn num_new(a[1], "num_new_tokens", batch_ids_.size(), new_tokens_);
    std::optional<CountsIn> lookahead;
    if (a[2] != nullptr && a[2] != Py_None) {
      lookahead.emplace(a[2], "num_lookahead_tokens", batch_ids_.size(), lookahead_);
    }
    py::object result = py::reinterpret_steal<py::object>(TakeResult());
    num_new.CheckStillHeld();
    if (lookahead) lookahead->CheckStillHeld();
    Check(manager_->AllocateSlotsBatch(batch_ids_, num_new.values(),
                                       lookahead ? lookahead->values() : std::span<const int32_t>{},
                                       ResultOf(result.ptr())));
    return result.release().ptr();
  }

  PyObject* AdmitBatch(PyObject* const* a) {
    ReadHandles(a[0]);
    std::optional<CountsIn> num_new;
    if (a[1] != nullptr && a[1] != Py_None) {
      num_new.emplace(a[1], "num_new_tokens", batch_ids_.size(), new_tokens_);
    }
    py::object result = py::reinterpret_steal<py::object>(TakeResult());
    if (num_new) num_new->CheckStillHeld();
    Check(manager_->AdmitBatch(batch_ids_, num_new ? num_new->values() : std::span<const int32_t>{},
                               BoolArg(a[2], "full_sequence_must_fit"), ResultOf(result.ptr())));
    return result.release().ptr();
  }

  PyObject* FreeBatch(PyObject* const* a) {
    ReadHandles(a[0]);
    Check(manager_->FreeBatch(batch_ids_));
    for (RequestId id : batch_ids_) Forget(id.value());
    Py_RETURN_NONE;
  }

  PyObject* AppendTokensBatch(PyObject* const* a) {
    ReadHandles(a[0]);
    const IntsIn<int32_t> tokens(a[1], "token_ids", tokens_);
    std::optional<IntsIn<int32_t>> counts;
    if (a[2] != nullptr && a[2] != Py_None) counts.emplace(a[2], "counts", lookahead_);
    tokens.CheckStillHeld();
    Check(manager_->AppendTokensBatch(batch_ids_, tokens.values(),
                                      counts ? counts->values() : std::span<const int32_t>{}));
    Py_RETURN_NONE;
  }

  // ---- queries ---------------------------------------------------------------------------

  KVCacheManager& manager() { return *manager_; }
  const KVCacheManager& manager() const { return *manager_; }
  int64_t num_requests() const { return static_cast<int64_t>(PyDict_Size(ids_.ptr())); }
  bool Contains(py::handle request_id) const {
    return (PyLong_Check(request_id.ptr()) || PyUnicode_Check(request_id.ptr())) &&
           !PyBool_Check(request_id.ptr()) && PyDict_Contains(ids_.ptr(), request_id.ptr()) == 1;
  }
  GroupId CheckedGroup(int64_t group) const {
    if (group < 0 || group >= manager_->num_groups()) {
      RaisePython(PyExc_IndexError, "group " + std::to_string(group) + " out of range [0, " +
                                        std::to_string(manager_->num_groups()) + ")");
    }
    return GroupId{static_cast<int32_t>(group)};
  }
  py::tuple GetBlocks(py::handle request_id) const {
    const RequestId id = Id(request_id);
    py::tuple out(manager_->num_groups());
    for (int32_t g = 0; g < manager_->num_groups(); ++g) {
      out[g] = ToList(manager_->BlockIds(id, GroupId{g}));
    }
    return out;
  }
  py::list BlockIds(py::handle request_id, int64_t group) const {
    const RequestId id = Id(request_id);
    return ToList(manager_->BlockIds(id, CheckedGroup(group)));
  }
  py::tuple LastUpdate(py::handle request_id, int64_t group) const {
    const RequestId id = Id(request_id);
    const auto u = manager_->LastUpdate(id, CheckedGroup(group));
    return py::make_tuple(u.first_column, ToList(u.block_ids));
  }
  py::list AppendedBlocks(py::handle request_id) const {
    const RequestId id = Id(request_id);
    py::list out;
    for (int32_t g = 0; g < manager_->num_groups(); ++g) {
      out.append(ToList(manager_->AppendedBlocks(id, GroupId{g})));
    }
    return out;
  }
  py::list RequestBlockHashes(py::handle request_id) const {
    py::list out;
    for (const BlockHash& h : KVCacheInspector(*manager_).RequestBlockHashes(Id(request_id))) {
      out.append(HashToInt(h));
    }
    return out;
  }
  py::list TakeNewBlockIds() { return ToList(manager_->TakeNewBlockIds()); }
  py::list TakeEvents() {
    py::list out;
    for (const KVCacheEvent& e : manager_->TakeEvents()) out.append(EventDict(e, *manager_));
    return out;
  }
  void EnableResidencyMetrics(double sample_rate, uint64_t seed) {
    Check(manager_->EnableResidencyMetrics({.sample_rate = sample_rate, .seed = seed}));
  }
  py::list TakeResidencyEvents() {
    py::list out;
    for (const BlockResidencyEvent& e : manager_->TakeResidencyEvents()) {
      py::tuple gaps(e.num_reuse_gaps);
      for (int32_t k = 0; k < e.num_reuse_gaps; ++k) gaps[k] = e.reuse_gaps_seconds[k];
      out.append(py::make_tuple(e.lifetime_seconds, e.idle_seconds, std::move(gaps)));
    }
    return out;
  }
  py::object MakePrefixCacheStats() {
    const std::optional<PrefixCacheStats> s = manager_->MakePrefixCacheStats();
    if (!s) return py::none();
    return py::dict(py::arg("reset") = s->reset, py::arg("requests") = s->requests,
                    py::arg("queries") = s->query_tokens, py::arg("hits") = s->hit_tokens,
                    py::arg("preempted_requests") = s->preempted_requests,
                    py::arg("preempted_queries") = s->preempted_query_tokens,
                    py::arg("preempted_hits") = s->preempted_hit_tokens);
  }
  py::dict PrefixCacheTotals() const {
    const PrefixCacheStats& s = manager_->prefix_cache_stats();
    return py::dict(py::arg("requests") = s.requests, py::arg("query_tokens") = s.query_tokens,
                    py::arg("hit_tokens") = s.hit_tokens);
  }

 private:
  void Forget(int64_t handle) {
    const py::int_ h(handle);
    PyObject* name = PyDict_GetItem(names_.ptr(), h.ptr());  // borrowed
    if (name == nullptr) return;
    const py::object keep = py::reinterpret_borrow<py::object>(name);
    PyDict_DelItem(ids_.ptr(), name);
    PyDict_DelItem(names_.ptr(), h.ptr());
  }

  std::unique_ptr<KVCacheManager> manager_;
  const char* busy_ = nullptr;  // the Python name of the call running, if any (Busy)
  py::dict ids_;                // request id -> handle
  py::dict names_;              // handle -> request id
  int64_t next_handle_ = 0;
  py::object results_[2];
  int next_result_ = 0;
  std::vector<RequestId> batch_ids_;
  std::vector<int32_t> new_tokens_, lookahead_, tokens_;
  std::vector<int64_t> handle_scratch_;
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

// A METH_FASTCALL method of KVCacheManager: its Python signature and the member that runs it.
struct FastMethod {
  const char* name;
  std::array<const char*, 9> args;
  size_t num_args;
  size_t required;
  PyObject* (PyKVCacheManager::*run)(PyObject* const*);
  const char* doc;
};

template <const FastMethod& kMethod>
PyObject* CallFast(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* a[9];
  const std::span<const char* const> names(kMethod.args.data(), kMethod.num_args);
  if (!ParseArgs(args, nargs, kwnames, names, kMethod.required, a, kMethod.name)) return nullptr;
  return Guard([&] {
    PyKVCacheManager& m = Self<PyKVCacheManager>(self);
    const PyKVCacheManager::Busy busy(m, kMethod.name);
    return (m.*kMethod.run)(a);
  });
}

constexpr FastMethod kAllocateSlots{
    "allocate_slots",
    {"request_id", "num_new_tokens", "num_new_computed_tokens", "computed", "num_lookahead_tokens",
     "full_sequence_must_fit", "num_external_computed_tokens", "delay_cache_blocks",
     "num_encoder_tokens"},
    9,
    2,
    &PyKVCacheManager::Allocate,
    "allocate_slots(request_id, num_new_tokens, num_new_computed_tokens=0, computed=None,\n"
    "               num_lookahead_tokens=0, full_sequence_must_fit=False,\n"
    "               num_external_computed_tokens=0, delay_cache_blocks=False,\n"
    "               num_encoder_tokens=0)\n\n"
    "Reserves slots for this step: the new or rewritten block ids per group, or None when\n"
    "there are not enough free blocks (nothing else changed)."};
constexpr FastMethod kAllocateSlotsBatch{
    "allocate_slots_batch",
    {"handles", "num_new_tokens", "num_lookahead_tokens"},
    3,
    2,
    &PyKVCacheManager::AllocateBatch,
    "allocate_slots_batch(handles, num_new_tokens, num_lookahead_tokens=None) -> StepResult\n\n"
    "allocate_slots for each request handle, in order: the same results as the single calls.\n"
    "Counts are int32/int64 buffers or sequences (one per handle), or one int for all."};
constexpr FastMethod kAdmitBatch{
    "admit_batch",
    {"handles", "num_new_tokens", "full_sequence_must_fit"},
    3,
    1,
    &PyKVCacheManager::AdmitBatch,
    "admit_batch(handles, num_new_tokens=None, full_sequence_must_fit=False) -> StepResult\n\n"
    "get_computed_blocks + allocate_slots for each new request (num_new_tokens: the tokens\n"
    "past the hit; None: the rest of the prompt). StepResult.num_computed holds the hits."};
constexpr FastMethod kFreeBatch{"free_batch",
                                {"handles"},
                                1,
                                1,
                                &PyKVCacheManager::FreeBatch,
                                "free_batch(handles): free of each request, in order."};
constexpr FastMethod kAppendTokensBatch{
    "append_tokens_batch",
    {"handles", "token_ids", "counts"},
    3,
    2,
    &PyKVCacheManager::AppendTokensBatch,
    "append_tokens_batch(handles, token_ids, counts=None)\n\n"
    "Appends counts[i] tokens (one each when counts is None) to each request."};

PyMethodDef FastDef(const FastMethod& m,
                    PyObject* (*call)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*)) {
  return {m.name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(call)),
          METH_FASTCALL | METH_KEYWORDS, m.doc};
}

PyMethodDef kFastMethods[] = {
    FastDef(kAllocateSlots, CallFast<kAllocateSlots>),
    FastDef(kAllocateSlotsBatch, CallFast<kAllocateSlotsBatch>),
    FastDef(kAdmitBatch, CallFast<kAdmitBatch>),
    FastDef(kFreeBatch, CallFast<kFreeBatch>),
    FastDef(kAppendTokensBatch, CallFast<kAppendTokensBatch>),
};

// Installs C-level methods and attributes on a pybind11 class (the hot calls' entry points).
void AddDescriptors(py::handle cls, std::span<PyMethodDef> methods, std::span<PyGetSetDef> fields) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  for (PyMethodDef& def : methods) {
    py::object d = py::reinterpret_steal<py::object>(PyDescr_NewMethod(type, &def));
    if (!d) throw py::error_already_set();
    cls.attr(def.ml_name) = d;
  }
  for (PyGetSetDef& def : fields) {
    py::object d = py::reinterpret_steal<py::object>(PyDescr_NewGetSet(type, &def));
    if (!d) throw py::error_already_set();
    cls.attr(def.name) = d;
  }
}

}  // namespace

void BindRuntime(py::module_& m) {
  auto step = py::class_<PyStepResult>(
      m, "StepResult",
      "Results of a batched call, per request in input order (read-only memoryviews, valid as "
      "long as they are referenced). For request i and group g, k = i * num_groups + g: the "
      "row update is block_ids[offsets[k]:offsets[k + 1]] written from first_column[k].");
  step.def("__len__", [](const PyStepResult& r) { return r.r.ok.size(); })
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
  AddDescriptors(step, {}, kStepFields);

  py::class_<PyComputedBlocks>(m, "ComputedBlocks",
                               "Prefix hits of a request: unpacks as (num_tokens, blocks).")
      .def_property_readonly("num_tokens",
                             [](const PyComputedBlocks& c) { return c.hits.num_tokens.value(); })
      .def_property_readonly("blocks", &PyComputedBlocks::BlockLists)
      .def("__iter__",
           [](const PyComputedBlocks& c) {
             return py::iter(py::make_tuple(c.hits.num_tokens.value(), c.BlockLists()));
           })
      .def("__repr__", [](const PyComputedBlocks& c) {
        return "ComputedBlocks(num_tokens=" + std::to_string(c.hits.num_tokens.value()) + ")";
      });

  // Block ids the inspector reads, checked against the pool.
  static constexpr auto kBlock = [](const KVCacheInspector& i, int64_t block) {
    if (block < 0 || block >= i.num_blocks()) {
      RaisePython(PyExc_IndexError, "block " + std::to_string(block) + " is not in the pool [0, " +
                                        std::to_string(i.num_blocks()) + ")");
    }
    return BlockId{static_cast<int32_t>(block)};
  };
  py::class_<KVCacheInspector>(m, "KVCacheInspector",
                               "Read-only view of a manager's pool for tests and debugging.")
      .def(
          "free_queue", [](const KVCacheInspector& i) { return ToList(i.FreeQueue()); },
          "Free blocks from the head (allocated next) to the tail.")
      .def(
          "ref_count",
          [](const KVCacheInspector& i, int64_t block) { return i.RefCount(kBlock(i, block)); },
          py::arg("block"))
      .def(
          "block_hash",
          [](const KVCacheInspector& i, int64_t block) -> py::object {
            const auto c = i.CachedAs(kBlock(i, block));
            if (!c) return py::none();
            return py::make_tuple(HashToInt(c->first), c->second.value());
          },
          py::arg("block"), "(hash, group) the block is cached under, or None.")
      .def(
          "lookup",
          [](const KVCacheInspector& i, py::handle hash, int32_t group) -> py::object {
            const auto b = i.Lookup(IntToHash(hash), GroupId{group});
            return b ? py::object(py::int_(b->value())) : py::object(py::none());
          },
          py::arg("block_hash"), py::arg("group"))
      .def_property_readonly("null_block",
                             [](const KVCacheInspector& i) { return i.null_block().value(); });

  using M = PyKVCacheManager;
  auto cls = py::class_<M>(m, "KVCacheManager",
                           "The scheduler-side block manager (one per engine), built from a plan "
                           "or an explicit cache layout.");
  cls.def(py::init(&M::FromPlan), py::arg("plan"), py::kw_only(),
          py::arg("num_blocks") = py::none(), py::arg("enable_prefix_caching") = py::none(),
          py::arg("log_stats") = true, py::arg("enable_kv_cache_events") = false,
          py::arg("record_new_block_ids") = false)
      .def_static("from_layout", &M::FromLayout, py::arg("layout"),
                  "A manager from an explicit cache layout (a dict or its JSON; see "
                  "docs/runtime.md): groups with kind, block_size, page_size_bytes, ...")
      .def("add_request", &M::AddRequest, py::arg("request_id"), py::arg("token_ids"),
           py::kw_only(), py::arg("lora_id") = 0, py::arg("cache_salt") = "",
           py::arg("mm_items") = py::none(), py::arg("skip_reading_prefix_cache") = false,
           py::arg("num_preemptions") = 0, py::arg("prompt_embeds") = py::none(),
           "Registers a request with its prompt token ids; returns its integer handle. "
           "prompt_embeds (a C-contiguous buffer, one row per prompt token along its first "
           "dimension) keys each hash block by its rows, as the token ids of a request given as "
           "embeddings are placeholders.")
      .def("add_requests", &M::AddRequests, py::arg("request_ids"), py::arg("prompts"),
           "Registers several requests; returns their handles (int64 memoryview).")
      .def("handle", &M::Handle, py::arg("request_id"))
      .def("get_computed_blocks", &M::GetComputedBlocks, py::arg("request_id"),
           "Longest prefix hit: ComputedBlocks, unpacking as (num_tokens, [[block ids] per "
           "group]). Valid until one of its blocks is evicted or reused.")
      .def("append_tokens", &M::AppendTokens, py::arg("request_id"), py::arg("token_ids"))
      .def("rewind_computed_tokens", &M::On<&KVCacheManager::RewindComputedTokens, int64_t>,
           py::arg("request_id"), py::arg("num_rejected"))
      .def("free", &M::Free, py::arg("request_id"))
      .def("preempt", &M::On<&KVCacheManager::Preempt>, py::arg("request_id"),
           "Releases the request's blocks, keeps its tokens; it is admitted again later.")
      .def("new_step", [](M& self) { self.manager().NewStep(); })
      .def("remove_skipped_blocks", &M::On<&KVCacheManager::RemoveSkippedBlocks, int64_t>,
           py::arg("request_id"), py::arg("total_computed_tokens"))
      .def("cache_blocks", &M::On<&KVCacheManager::CacheBlocks, int64_t>, py::arg("request_id"),
           py::arg("num_computed_tokens"))
      .def("evict_blocks", &M::EvictBlocks, py::arg("block_ids"))
      .def("get_num_common_prefix_blocks", &M::GetNumCommonPrefixBlocks,
           py::arg("running_request_id"))
      .def("take_new_block_ids", &M::TakeNewBlockIds)
      .def("take_events", &M::TakeEvents)
      .def("enable_residency_metrics", &M::EnableResidencyMetrics, py::arg("sample_rate") = 0.01,
           py::arg("seed") = 0,
           "vLLM's KV-cache residency metrics (--kv-cache-metrics): follows each block the pool "
           "hands out from now on with probability sample_rate, in (0, 1] (seed: the sampler's; "
           "0 draws one), dropping what was followed before.")
      .def("take_residency_events", &M::TakeResidencyEvents,
           "Eviction samples since the last call, as (lifetime_seconds, idle_seconds, "
           "reuse_gaps_seconds) tuples: vLLM's KVCacheEvictionEvent fields.")
      .def_property_readonly(
          "residency_events_dropped",
          [](M& self) { return self.manager().residency_events_dropped(); },
          "Eviction samples dropped because 65,536 were waiting untaken.")
      .def("make_prefix_cache_stats", &M::MakePrefixCacheStats,
           "Stats since the last call (vLLM's PrefixCacheStats fields), or None when log_stats "
           "is off.")
      .def("get_blocks", &M::GetBlocks, py::arg("request_id"),
           "The request's rows, one list per group.")
      .def("block_ids", &M::BlockIds, py::arg("request_id"), py::arg("group"))
      .def("last_update", &M::LastUpdate, py::arg("request_id"), py::arg("group"),
           "(first_column, block_ids) the last allocate_slots changed in the group's row.")
      .def("appended_blocks", &M::AppendedBlocks, py::arg("request_id"),
           "Per group, the blocks the last allocate_slots appended past the request's computed "
           "prefix (hits, skipped columns, external tokens' blocks): vLLM's return value.")
      .def("request_block_hashes", &M::RequestBlockHashes, py::arg("request_id"))
      .def(
          "inspector", [](M& self) { return KVCacheInspector(self.manager()); },
          // The inspector points into the manager: the manager lives while the inspector does.
          py::keep_alive<0, 1>(),
          "A read-only KVCacheInspector over this manager (keeps it alive).")
      .def("num_computed_tokens", &M::Tokens<&KVCacheManager::num_computed_tokens>,
           py::arg("request_id"))
      .def("num_tokens", &M::Tokens<&KVCacheManager::num_tokens>, py::arg("request_id"))
      .def("__contains__", &M::Contains)
      .def("__len__", &M::num_requests)
      .def_property_readonly("num_free_blocks", &M::Get<&KVCacheManager::num_free_blocks>)
      .def_property_readonly("num_blocks", &M::Get<&KVCacheManager::num_blocks>)
      .def_property_readonly("num_groups", &M::Get<&KVCacheManager::num_groups>)
      .def_property_readonly(
          "geometries",
          [](M& self) {
            std::vector<GroupGeometry> out;
            for (int32_t g = 0; g < self.manager().num_groups(); ++g) {
              out.push_back(self.manager().group(GroupId{g}).geometry);
            }
            return out;
          },
          "Each group's GroupGeometry (a worker's BlockTable takes one), in group order; the "
          "plan's for a manager made from a plan, the layout's for one made from a layout.")
      .def_property_readonly(
          "sink_block_ids",
          [](M& self) {
            std::vector<std::vector<int32_t>> out;
            for (int32_t g = 0; g < self.manager().num_groups(); ++g) {
              std::vector<int32_t>& ids = out.emplace_back();
              for (BlockId b : self.manager().sink_block_ids(GroupId{g})) ids.push_back(b.value());
            }
            return out;
          },
          "Per group, in group order, the blocks holding its static attention sinks, taken from "
          "the pool when the manager starts and held until it ends (empty without sinks).")
      .def_property_readonly("max_model_len", &M::Get<&KVCacheManager::max_model_len>)
      .def_property_readonly("scheduler_block_size", &M::Get<&KVCacheManager::scheduler_block_size>)
      .def_property_readonly("hash_block_size", &M::Get<&KVCacheManager::hash_block_size>)
      .def_property_readonly("usage", &M::Get<&KVCacheManager::Usage>)
      .def_property_readonly("prefix_cache_stats", &M::PrefixCacheTotals)
      .def("reset_prefix_cache", [](M& self) { return self.manager().ResetPrefixCache(); })
      .def(
          "check_invariants", [](const M& self) { self.manager().CheckInvariants(); },
          "Aborts the process if an internal invariant is broken (a kvtopo bug).");
  AddDescriptors(cls, kFastMethods, {});
  RefuseUninitialized<PyStepResult>("KVCacheManager's batched calls");
  RefuseUninitialized<PyComputedBlocks>("KVCacheManager.get_computed_blocks(...)");
  RefuseUninitialized<KVCacheInspector>("KVCacheManager.inspector()");
  RefuseUninitialized<M>("KVCacheManager(...) or KVCacheManager.from_layout(...)");
  RefuseSecondInit<M>(cls);
}

}  // namespace kvtopo::python
