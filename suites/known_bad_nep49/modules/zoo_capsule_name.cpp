// NEP49-4: a Python extension module exposing the zoo's correct handler in a capsule with the
// wrong name ("not_mem_handler"): NumPy 2.1+ refuses it in PyDataMem_SetHandler, older NumPys
// accept it and then fail every allocation (research nep49 §0.2).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "baseline_handler.hpp"

namespace {
emm::nep49::Handler handler{
    "zoo_capsule_name", 1, {nullptr, zoo::malloc, zoo::calloc, zoo::realloc, zoo::free}};
PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                          "zoo_capsule_name",
                          nullptr,
                          -1,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr};
}  // namespace

PyMODINIT_FUNC PyInit_zoo_capsule_name() {
  PyObject* module = PyModule_Create(&module_def);
  if (module == nullptr) return nullptr;
  PyObject* capsule = PyCapsule_New(&handler, "not_mem_handler", nullptr);
  if (capsule == nullptr || PyModule_AddObject(module, "handler", capsule) != 0) {
    Py_XDECREF(capsule);
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
