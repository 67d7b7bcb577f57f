// Buffers handed to Python: a small C type exporting read-only 1-D buffers over storage another
// object keeps alive; memoryviews over it are what the binding returns (no copy, no pybind11
// instance per result).
#include "binding_util.h"

namespace kvtopo::python {
namespace {

// ---- memoryviews over storage another object keeps alive ----------------------------------

struct ViewObject {
  PyObject_HEAD PyObject* owner;
  const void* data;
  Py_ssize_t size;
  Py_ssize_t itemsize;
  const char* format;
};

PyTypeObject* g_view_type = nullptr;

int ViewGetBuffer(PyObject* self, Py_buffer* b, int flags) {
  auto* v = reinterpret_cast<ViewObject*>(self);
  if ((flags & PyBUF_WRITABLE) != 0) {
    PyErr_SetString(PyExc_BufferError, "kvtopo results are read-only");
    return -1;
  }
  *b = Py_buffer{};
  b->buf = const_cast<void*>(v->data);
  b->obj = Py_NewRef(self);
  b->len = v->size * v->itemsize;
  b->readonly = 1;
  b->itemsize = v->itemsize;
  b->format = (flags & PyBUF_FORMAT) != 0 ? const_cast<char*>(v->format) : nullptr;
  b->ndim = 1;
  b->shape = (flags & PyBUF_ND) != 0 ? &v->size : nullptr;
  b->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? &v->itemsize : nullptr;
  return 0;
}

void ViewDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  Py_XDECREF(reinterpret_cast<ViewObject*>(self)->owner);
  PyObject_Free(self);
  Py_DECREF(type);
}

PyObject* NewView(PyObject* owner, const void* data, size_t size, const char* format) {
  ViewObject* v = PyObject_New(ViewObject, g_view_type);
  if (v == nullptr) return nullptr;
  v->owner = Py_NewRef(owner);
  v->data = data;
  v->size = static_cast<Py_ssize_t>(size);
  v->itemsize = *format == 'q' ? 8 : *format == 'i' ? 4 : 1;
  v->format = format;
  PyObject* view = PyMemoryView_FromObject(reinterpret_cast<PyObject*>(v));
  Py_DECREF(v);
  return view;
}

}  // namespace

py::object View(py::handle owner, const void* data, size_t size, const char* format) {
  PyObject* view = NewView(owner.ptr(), data, size, format);
  if (view == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(view);
}

void BindViews(py::module_& m) {
  static PyType_Slot slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(ViewGetBuffer)},
                                {Py_tp_dealloc, reinterpret_cast<void*>(ViewDealloc)},
                                {0, nullptr}};
  static PyType_Spec spec = {"kvtopo._kvtopo._View", sizeof(ViewObject), 0, Py_TPFLAGS_DEFAULT,
                             slots};
  g_view_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
  if (g_view_type == nullptr) throw py::error_already_set();
  m.add_object("_View", py::handle(reinterpret_cast<PyObject*>(g_view_type)));
}

namespace {
// "kvtopo._kvtopo.Plan" -> "Plan".
std::string ClassName(PyTypeObject* type) {
  const std::string_view name = type->tp_name;
  return std::string(name.substr(name.rfind('.') + 1));
}
}  // namespace

std::string UninitializedMessage(PyTypeObject* type, const char* made_by) {
  const std::string name = ClassName(type);
  return name + " object is not initialized: it was created by " + name +
         ".__new__ without __init__; get one from " + made_by;
}

std::string InitializedTwiceMessage(PyTypeObject* type, const char* made_by) {
  return ClassName(type) + " is already initialized: __init__ runs once; create a new one with " +
         made_by;
}

}  // namespace kvtopo::python
