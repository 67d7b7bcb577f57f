// Helpers shared by the binding's translation units: Status -> Python exceptions, integer and
// buffer inputs, arrays handed to Python as read-only memoryviews, and the hot calls' fast path
// to the C++ object behind a pybind11 instance.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvtopo/status.h"

namespace kvtopo::python {

namespace py = pybind11;

// kvtopo.RejectedError; created in the module init and alive for the interpreter's lifetime.
inline PyObject* g_rejected_error = nullptr;

// The message's bytes that are not UTF-8 (a value from a file or the environment) are written as
// \xNN escapes, as Python's backslashreplace error handler writes them.
[[noreturn]] inline void RaisePython(PyObject* type, const std::string& message) {
  PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()),
                                        "backslashreplace");
  if (text == nullptr) throw py::error_already_set();
  PyErr_SetObject(type, text);
  Py_DECREF(text);
  throw py::error_already_set();
}

// InvalidArgument -> ValueError, Rejected -> RejectedError, NotFound -> `not_found` (LookupError;
// the runtime passes KeyError for requests), OutOfRange -> OverflowError, else RuntimeError.
[[noreturn]] inline void ThrowStatus(const Status& status,
                                     PyObject* not_found = PyExc_LookupError) {
  PyObject* type = PyExc_RuntimeError;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      type = PyExc_ValueError;
      break;
    case StatusCode::kRejected:
      type = g_rejected_error;
      break;
    case StatusCode::kNotFound:
      type = not_found;
      break;
    case StatusCode::kOutOfRange:
      type = PyExc_OverflowError;
      break;
    case StatusCode::kOk:
    case StatusCode::kInternal:
      break;
  }
  RaisePython(type, status.message());
}

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) [[unlikely]] {
    ThrowStatus(status);
  }
}

template <typename T>
T ValueOrThrow(Result<T> result) {
  if (!result.ok()) ThrowStatus(result.status());
  return std::move(result).value();
}

inline std::string TypeName(py::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }

// An integer (anything with __index__, but not a bool) as int64.
inline int64_t ToInt64(py::handle obj, std::string_view what) {
  if (PyLong_CheckExact(obj.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow != 0) {
      RaisePython(PyExc_OverflowError, std::string(what) + " does not fit in 64 bits");
    }
    return v;
  }
  if (PyBool_Check(obj.ptr()) || !PyIndex_Check(obj.ptr())) {
    RaisePython(PyExc_TypeError, std::string(what) + " must be an int, got " + TypeName(obj));
  }
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!index) throw py::error_already_set();
  return ToInt64(index, what);
}

// "5000000000 is outside the 32-bit integer range [-2147483648, 2147483647]": why an int
// argument does not fit the type the runtime holds it in.
template <typename T>
std::string OutsideRange(int64_t v) {
  return std::to_string(v) + " is outside the " + std::to_string(8 * sizeof(T)) +
         "-bit integer range [" + std::to_string(std::numeric_limits<T>::min()) + ", " +
         std::to_string(std::numeric_limits<T>::max()) + "]";
}

// A 1-D integer input: a buffer (memoryview, array.array, NumPy or torch CPU array) read in
// place when it is contiguous with items exactly like T; any other integer buffer or iterable of
// ints is converted item by item into `scratch`. Values outside T's range raise OverflowError.
template <typename T>
class IntsIn {
 public:
  IntsIn(py::handle obj, std::string_view what, std::vector<T>& scratch) : what_(what) {
    if (Py_IS_TYPE(obj.ptr(), &PyMemoryView_Type) && ReadInPlace(obj.ptr())) return;
    if (PyObject_CheckBuffer(obj.ptr())) {
      if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_FORMAT | PyBUF_STRIDES) != 0) {
        throw py::error_already_set();
      }
      held_ = true;
      const char* f = Format(&view_);
      if (view_.ndim != 1 || f[0] == '\0' || f[1] != '\0' || !std::strchr("bBhHiIlLqQ", f[0])) {
        RaisePython(PyExc_TypeError,
                    std::string(what) + " must be a 1-D integer buffer, got format '" +
                        std::string(f) + "' with " + std::to_string(view_.ndim) + " dimensions");
      }
      if (Exact(&view_)) {
        values_ = {static_cast<const T*>(view_.buf), static_cast<size_t>(view_.shape[0])};
        return;
      }
    }
    py::object items = py::reinterpret_steal<py::object>(
        PyUnicode_Check(obj.ptr()) ? nullptr : PyObject_GetIter(obj.ptr()));
    if (!items) {
      // Not iterable (TypeError): say what was expected. An error raised by the object's own
      // __iter__ (a nested call refused, say) propagates as it is.
      if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError)) {
        throw py::error_already_set();
      }
      PyErr_Clear();
      RaisePython(PyExc_TypeError,
                  std::string(what) + " must be a sequence of ints, got " + TypeName(obj));
    }
    scratch.clear();
    while (PyObject* item = PyIter_Next(items.ptr())) {
      const int64_t v = ToInt64(py::reinterpret_steal<py::object>(item), what);
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
        RaisePython(PyExc_OverflowError, std::string(what) + "[" + std::to_string(scratch.size()) +
                                             "]: " + OutsideRange<T>(v));
      }
      scratch.push_back(static_cast<T>(v));
    }
    if (PyErr_Occurred()) throw py::error_already_set();
    values_ = scratch;
  }
  ~IntsIn() {
    if (held_) PyBuffer_Release(&view_);
  }
  IntsIn(const IntsIn&) = delete;
  IntsIn& operator=(const IntsIn&) = delete;
  std::span<const T> values() const { return values_; }
  // A memoryview read in place holds no buffer request of ours: Python code run since (a later
  // argument's iterator or __index__, a finalizer) may have released it and freed the memory it
  // showed. Call before values() is used when such code may have run; raises BufferError.
  void CheckStillHeld() const {
#ifdef _Py_MEMORYVIEW_RELEASED
    if (in_place_ != nullptr && (reinterpret_cast<PyMemoryViewObject*>(in_place_)->flags &
                                 _Py_MEMORYVIEW_RELEASED) != 0) [[unlikely]] {
      RaisePython(PyExc_BufferError,
                  std::string(what_) +
                      ": the memoryview was released while the call read its other arguments");
    }
#endif
  }

 private:
  static const char* Format(const Py_buffer* b) {
    const char* f = b->format != nullptr ? b->format : "B";
    return *f == '@' || *f == '=' || *f == '<' ? f + 1 : f;
  }
  // Signed native integers of T's size, contiguous.
  static bool Exact(const Py_buffer* b) {
    const char f = Format(b)[0];
    return (f == 'i' || f == 'l' || f == 'q') && b->ndim == 1 && b->itemsize == sizeof(T) &&
           (b->strides == nullptr || b->strides[0] == sizeof(T));
  }
  // A memoryview's own buffer when it is Exact (the step calls' inputs): read without a buffer
  // request; the caller holds the view for the call.
  bool ReadInPlace(PyObject* obj) {
#ifdef _Py_MEMORYVIEW_RELEASED  // CPython's memoryview layout; else the buffer request below
    const Py_buffer* b = PyMemoryView_GET_BUFFER(obj);
    if ((reinterpret_cast<PyMemoryViewObject*>(obj)->flags & _Py_MEMORYVIEW_RELEASED) != 0 ||
        !Exact(b)) {
      return false;
    }
    values_ = {static_cast<const T*>(b->buf), static_cast<size_t>(b->shape[0])};
    in_place_ = obj;
    return true;
#else
    (void)obj;
    return false;
#endif
  }

  std::string_view what_;
  Py_buffer view_;  // set when held_
  bool held_ = false;
  PyObject* in_place_ = nullptr;  // the memoryview read in place (borrowed: the caller's argument)
  std::span<const T> values_;
};

// ---- arrays handed to Python ---------------------------------------------------------------

// A read-only memoryview over `size` items at `data`, which `owner` keeps alive (the view holds
// a reference to it). Format "i" (int32), "q" (int64) or "B" (uint8).
py::object View(py::handle owner, const void* data, size_t size, const char* format);

// A memoryview that owns `values`.
template <typename T>
py::object ToMemoryView(std::vector<T> values) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  return View(owner, owned->data(), owned->size(), sizeof(T) == 4 ? "i" : "q");
}

// The C++ object of a pybind11 instance: a pointer read from the instance when its type is
// exactly T's (the hot calls' path: no type-map lookup), else pybind11's cast (a subclass, or a
// TypeError for anything else).
template <typename T>
T& Self(PyObject* obj, const char* what = "self") {
  static PyTypeObject* const type = py::detail::get_type_info(typeid(T))->type;
  if (Py_TYPE(obj) == type) [[likely]] {
    auto* inst = reinterpret_cast<py::detail::instance*>(obj);
    void* value = inst->simple_layout ? inst->simple_value_holder[0]
                                      : inst->get_value_and_holder().value_ptr();
    if (value != nullptr) return *static_cast<T*>(value);
  }
  if (!py::isinstance<T>(obj)) {
    RaisePython(PyExc_TypeError,
                std::string(what) + " must be a " + type->tp_name + ", got " + TypeName(obj));
  }
  return py::handle(obj).cast<T&>();
}

// `KVCacheManager.__new__(KVCacheManager)` makes an instance whose __init__ never ran. pybind11
// allocates such an instance's C++ value on first use through the type's `operator_new`, without
// constructing it, so a method would run on uninitialized memory. Each bound type replaces that
// allocation with a TypeError naming the type and the call that makes one (values made by
// __init__ or returned from C++ are allocated elsewhere), and a type with the buffer protocol
// checks the value before pybind11's buffer call, which cannot raise.
std::string UninitializedMessage(PyTypeObject* type, const char* made_by);  // binding_util.cc
std::string InitializedTwiceMessage(PyTypeObject* type, const char* made_by);

template <typename T>
inline getbufferproc g_pybind11_getbuffer = nullptr;
template <typename T>
inline const char* g_made_by = "";

template <typename T>
int GetBufferIfInitialized(PyObject* obj, Py_buffer* view, int flags) {
  const auto* info = py::detail::get_type_info(typeid(T));
  auto* inst = reinterpret_cast<py::detail::instance*>(obj);
  if (inst->get_value_and_holder(info, false).value_ptr() == nullptr) {
    PyErr_SetString(PyExc_TypeError, UninitializedMessage(info->type, g_made_by<T>).c_str());
    return -1;
  }
  return g_pybind11_getbuffer<T>(obj, view, flags);
}

// `made_by`: where a user gets a T ("kvtopo.plan(...)"); a string literal.
template <typename T>
void RefuseUninitialized(const char* made_by) {
  py::detail::type_info* info = py::detail::get_type_info(typeid(T));
  g_made_by<T> = made_by;
  info->operator_new = [](size_t) -> void* {
    RaisePython(PyExc_TypeError,
                UninitializedMessage(py::detail::get_type_info(typeid(T))->type, g_made_by<T>));
  };
  PyBufferProcs* buffer = info->type->tp_as_buffer;
  if (buffer != nullptr && buffer->bf_getbuffer != nullptr) {
    g_pybind11_getbuffer<T> = buffer->bf_getbuffer;
    buffer->bf_getbuffer = &GetBufferIfInitialized<T>;
  }
}

// pybind11 skips `__init__` on an object already constructed and returns None, so
// `manager.__init__(plan, num_blocks=8)` looked like a fresh manager but changed nothing. The
// class's `__init__` becomes a plain method descriptor (a function named __init__ made by
// pybind11 would get that same skip) that raises TypeError for a constructed object and calls
// pybind11's `__init__` otherwise, keeping its docstring.
template <typename T>
struct InitOnce {
  static inline PyObject* original = nullptr;  // pybind11's __init__, alive with the module
  static inline std::string doc;
  static inline PyMethodDef def{};

  static PyObject* Call(PyObject* self, PyObject* args, PyObject* kwargs) {
    const py::detail::type_info* info = py::detail::get_type_info(typeid(T));
    auto* inst = reinterpret_cast<py::detail::instance*>(self);
    if (inst->get_value_and_holder(info, false).holder_constructed()) {
      PyErr_SetString(PyExc_TypeError, InitializedTwiceMessage(info->type, g_made_by<T>).c_str());
      return nullptr;
    }
    try {
      const Py_ssize_t n = PyTuple_GET_SIZE(args);
      py::tuple with_self(n + 1);
      with_self[0] = py::handle(self);
      for (Py_ssize_t i = 0; i < n; ++i) with_self[i + 1] = py::handle(PyTuple_GET_ITEM(args, i));
      return PyObject_Call(original, with_self.ptr(), kwargs);
    } catch (py::error_already_set& e) {  // no C++ exception may leave a CPython callback
      e.restore();
      return nullptr;
    }
  }
};

// After RefuseUninitialized<T>, whose `made_by` the message reuses.
template <typename T>
void RefuseSecondInit(py::handle cls) {
  using Once = InitOnce<T>;
  Once::original = py::object(cls.attr("__init__")).release().ptr();
  const py::object doc = py::reinterpret_borrow<py::object>(Once::original).attr("__doc__");
  Once::doc = doc.is_none() ? std::string() : doc.cast<std::string>();
  PyCFunctionWithKeywords call = &Once::Call;
  Once::def =
      PyMethodDef{"__init__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(call)),
                  METH_VARARGS | METH_KEYWORDS, Once::doc.c_str()};
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  py::object descriptor = py::reinterpret_steal<py::object>(PyDescr_NewMethod(type, &Once::def));
  if (!descriptor) throw py::error_already_set();
  py::setattr(cls, "__init__", descriptor);
}

void BindViews(py::module_& m);    // binding_util.cc
void BindRuntime(py::module_& m);  // runtime_binding.cc
void BindWorker(py::module_& m);   // worker_binding.cc

}  // namespace kvtopo::python
