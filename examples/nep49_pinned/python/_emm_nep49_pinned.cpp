// _emm_nep49_pinned: the pinned handlers as "mem_handler" capsules, and PyDataMem_SetHandler,
// for emm_nep49_pinned.py (and `emm-certify --nep49 _emm_nep49_pinned:handler`).
#define PY_SSIZE_T_CLEAN
#include <Python.h>
// NumPy >= 1.25 hides the NEP 49 API below this target; 1.24 ignores it.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>

#include "emm/examples/pinned_handler.hpp"

namespace {

using emm::examples::PinnedHandler;

PyObject* set_handler(PyObject*, PyObject* capsule) {
  return PyDataMem_SetHandler(capsule == Py_None ? nullptr : capsule);
}

PyObject* live_blocks(PyObject*, PyObject* mapped) {
  const int flag = PyObject_IsTrue(mapped);
  if (flag < 0) return nullptr;
  return PyLong_FromSize_t(PinnedHandler::instance(flag != 0).live_blocks());
}

PyMethodDef methods[] = {
    {"set_handler", set_handler, METH_O,
     "set_handler(capsule or None) -> the previous handler (PyDataMem_SetHandler)"},
    {"live_blocks", live_blocks, METH_O, "live_blocks(mapped) -> blocks NumPy has not freed"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                          "_emm_nep49_pinned",
                          "NumPy data-memory handlers over an EMM plugin's memhostalloc",
                          -1,
                          methods,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr};

// The handlers are immortal, so the capsules need no destructor (NEP 49 "Related Work").
bool add_capsule(PyObject* module, const char* name, bool mapped) {
  PyObject* capsule =
      PyCapsule_New(PinnedHandler::instance(mapped).handler(), emm::nep49::kCapsuleName, nullptr);
  if (capsule == nullptr || PyModule_AddObject(module, name, capsule) != 0) {
    Py_XDECREF(capsule);
    return false;
  }
  return true;
}

}  // namespace

PyMODINIT_FUNC PyInit__emm_nep49_pinned() {
  if (_import_array() < 0) return nullptr;
  PyObject* module = PyModule_Create(&module_def);
  if (module == nullptr) return nullptr;
  if (!add_capsule(module, "handler", false) || !add_capsule(module, "mapped_handler", true)) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
