// Helpers shared by the binding's translation units: Status -> Python exceptions, integer and
// buffer conversions, owned arrays handed to Python as memoryviews.
#pragma once

#include <pybind11/pybind11.h>

#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvtopo/status.h"

namespace kvtopo::python {

namespace py = pybind11;

// kvtopo.RejectedError; created in the module init and alive for the interpreter's lifetime.
inline PyObject* g_rejected_error = nullptr;

[[noreturn]] inline void RaisePython(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

[[noreturn]] inline void ThrowStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      RaisePython(PyExc_ValueError, status.message());
    case StatusCode::kRejected:
      RaisePython(g_rejected_error, status.message());
    case StatusCode::kNotFound:
      RaisePython(PyExc_LookupError, status.message());
    case StatusCode::kOutOfRange:
      RaisePython(PyExc_OverflowError, status.message());
    case StatusCode::kOk:
    case StatusCode::kInternal:
      break;
  }
  RaisePython(PyExc_RuntimeError, status.message());
}

inline void ThrowIfError(const Status& status) {
  if (!status.ok()) ThrowStatus(status);
}

template <typename T>
T ValueOrThrow(Result<T> result) {
  if (!result.ok()) ThrowStatus(result.status());
  return std::move(result).value();
}

inline std::string TypeName(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__"));
}

// An integer (anything with __index__, but not a bool) as int64.
inline int64_t ToInt64(py::handle obj, const std::string& what) {
  if (PyBool_Check(obj.ptr()) || !PyIndex_Check(obj.ptr())) {
    RaisePython(PyExc_TypeError, what + " must be an int, got " + TypeName(obj));
  }
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) RaisePython(PyExc_OverflowError, what + " does not fit in 64 bits");
  if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
  return value;
}

inline bool ToBool(py::handle obj, const std::string& what) {
  if (!PyBool_Check(obj.ptr())) {
    RaisePython(PyExc_TypeError, what + " must be a bool, got " + TypeName(obj));
  }
  return obj.ptr() == Py_True;
}

inline std::string ToString(py::handle obj, const std::string& what) {
  if (!PyUnicode_Check(obj.ptr())) {
    RaisePython(PyExc_TypeError, what + " must be a str, got " + TypeName(obj));
  }
  return obj.cast<std::string>();
}

// A 1-D sequence of integers: a buffer of any integer format (memoryview, array.array, a
// NumPy or torch array) or any iterable of ints. Values outside T's range are errors.
template <typename T>
std::vector<T> ToIntVector(py::handle obj, const std::string& what) {
  std::vector<T> out;
  auto push = [&](int64_t v) {
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
      RaisePython(PyExc_OverflowError,
                  what + ": value " + std::to_string(v) + " is out of range for its type");
    }
    out.push_back(static_cast<T>(v));
  };
  if (PyObject_CheckBuffer(obj.ptr())) {
    py::buffer_info info = py::reinterpret_borrow<py::buffer>(obj).request();
    std::string format = info.format;
    while (!format.empty() && std::string_view("@=<>!").find(format[0]) != std::string::npos) {
      format.erase(0, 1);
    }
    const bool is_int = format.size() == 1 &&
                        std::string_view("bhilqBHILQ").find(format[0]) != std::string_view::npos;
    if (info.ndim == 1 && is_int) {
      const bool is_signed = std::islower(static_cast<unsigned char>(format[0]));
      const auto* base = static_cast<const char*>(info.ptr);
      out.reserve(info.shape[0]);
      for (py::ssize_t i = 0; i < info.shape[0]; ++i) {
        const char* p = base + i * info.strides[0];
        int64_t v = 0;
        switch (info.itemsize) {
          case 1:
            v = is_signed ? *reinterpret_cast<const int8_t*>(p)
                          : *reinterpret_cast<const uint8_t*>(p);
            break;
          case 2:
            v = is_signed ? *reinterpret_cast<const int16_t*>(p)
                          : *reinterpret_cast<const uint16_t*>(p);
            break;
          case 4:
            v = is_signed ? *reinterpret_cast<const int32_t*>(p)
                          : *reinterpret_cast<const uint32_t*>(p);
            break;
          case 8: {
            if (!is_signed && *reinterpret_cast<const uint64_t*>(p) >
                                  static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
              RaisePython(PyExc_OverflowError, what + ": value out of range");
            }
            v = *reinterpret_cast<const int64_t*>(p);
            break;
          }
          default:
            RaisePython(PyExc_TypeError, what + ": unsupported integer item size");
        }
        push(v);
      }
      return out;
    }
  }
  if (PyUnicode_Check(obj.ptr()) || !py::isinstance<py::iterable>(obj)) {
    RaisePython(PyExc_TypeError, what + " must be a sequence of ints, got " + TypeName(obj));
  }
  for (py::handle item : py::reinterpret_borrow<py::iterable>(obj)) push(ToInt64(item, what));
  return out;
}

// ---- buffers -------------------------------------------------------------------------------

// An owned 1-D or 2-D array handed to Python as a writable memoryview.
template <typename T>
struct OwnedArray {
  std::vector<T> data;
  std::vector<py::ssize_t> shape;
};

template <typename T>
py::memoryview ToMemoryView(std::vector<T> data) {
  OwnedArray<T> array{.data = std::move(data), .shape = {}};
  array.shape = {static_cast<py::ssize_t>(array.data.size())};
  return py::memoryview(py::cast(std::move(array)));
}

// A read-only view into storage owned by another Python object (a block-table row).
struct BorrowedInt32View {
  py::object owner;
  const int32_t* data = nullptr;
  py::ssize_t size = 0;
};

template <typename T>
void BindOwnedArray(py::module_& m, const char* name) {
  py::class_<OwnedArray<T>>(m, name, py::buffer_protocol()).def_buffer([](OwnedArray<T>& a) {
    std::vector<py::ssize_t> strides(a.shape.size(), sizeof(T));
    for (int i = static_cast<int>(a.shape.size()) - 2; i >= 0; --i) {
      strides[i] = strides[i + 1] * a.shape[i + 1];
    }
    return py::buffer_info(a.data.data(), sizeof(T), py::format_descriptor<T>::format(),
                           static_cast<py::ssize_t>(a.shape.size()), a.shape, strides);
  });
}

void BindRuntime(py::module_& m);  // runtime_binding.cc

}  // namespace kvtopo::python
