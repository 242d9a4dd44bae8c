// The NumPy bridge (numpy_bridge_abi.hpp): CPython embedded with the plain C API, NumPy's C API
// for PyDataMem_SetHandler and PyDataMem_DefaultHandler, and numpy_scenarios.py (embedded at
// build time) for the clauses that need real NumPy. Loaded only by clause children.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
// NumPy >= 1.25 hides the NEP 49 API below this target (research nep49 §4); 1.24 ignores it.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "emm/nep49/handler.hpp"
#include "nep49/src/numpy_bridge_abi.hpp"

static_assert(sizeof(PyDataMem_Handler) == sizeof(emm::nep49::Handler) &&
                  offsetof(PyDataMem_Handler, version) == offsetof(emm::nep49::Handler, version) &&
                  offsetof(PyDataMem_Handler, allocator) ==
                      offsetof(emm::nep49::Handler, allocator) &&
                  sizeof(PyDataMemAllocator) == sizeof(emm::nep49::Allocator),
              "emm::nep49::Handler must have NumPy's PyDataMem_Handler layout");

namespace emm::conformance::nep49_bridge {
extern const unsigned char kScenarios[];  // numpy_scenarios.py, NUL-terminated
namespace {

PyObject* g_subject = nullptr;    // the capsule being certified
PyObject* g_scenarios = nullptr;  // numpy_scenarios as a module
emm::nep49::Handler* g_handler = nullptr;
bool g_adopted = false;
std::string g_versions;

// The pending Python exception as text, cleared. Call with the GIL.
std::string python_error() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  if (type == nullptr) return "unknown Python error";
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string text = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  if (value != nullptr) {
    if (PyObject* s = PyObject_Str(value)) {
      if (const char* utf8 = PyUnicode_AsUTF8(s)) text += std::string(": ") + utf8;
      PyErr_Clear();
      Py_DECREF(s);
    }
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return text;
}

class Gil {
 public:
  Gil() : state_(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  PyGILState_STATE state_;
};

// --- _emm_nep49: what the scenarios need from C
// ---------------------------------------------------

PyObject* set_handler(PyObject*, PyObject* handler) {
  return PyDataMem_SetHandler(handler == Py_None ? nullptr : handler);
}
PyObject* subject(PyObject*, PyObject*) {
  Py_INCREF(g_subject);
  return g_subject;
}
PyObject* default_handler(PyObject*, PyObject*) {
  Py_INCREF(PyDataMem_DefaultHandler);
  return PyDataMem_DefaultHandler;
}
PyObject* capsule_name(PyObject*, PyObject* capsule) {
  if (!PyCapsule_CheckExact(capsule)) Py_RETURN_NONE;
  const char* name = PyCapsule_GetName(capsule);
  if (name == nullptr) {
    if (PyErr_Occurred()) return nullptr;
    Py_RETURN_NONE;
  }
  return PyUnicode_DecodeUTF8(name, static_cast<Py_ssize_t>(std::strlen(name)), "replace");
}
PyObject* struct_name(PyObject*, PyObject*) {
  const void* end = std::memchr(g_handler->name, '\0', sizeof g_handler->name);
  const std::size_t length =
      end != nullptr ? static_cast<std::size_t>(static_cast<const char*>(end) - g_handler->name)
                     : sizeof g_handler->name;
  return PyUnicode_DecodeUTF8(g_handler->name, static_cast<Py_ssize_t>(length), "replace");
}
PyObject* struct_version(PyObject*, PyObject*) { return PyLong_FromLong(g_handler->version); }
PyObject* adopted(PyObject*, PyObject*) { return PyBool_FromLong(g_adopted ? 1 : 0); }

PyMethodDef kMethods[] = {
    {"set_handler", set_handler, METH_O, "PyDataMem_SetHandler(capsule or None) -> previous"},
    {"subject", subject, METH_NOARGS, "the capsule under test"},
    {"default_handler", default_handler, METH_NOARGS, "PyDataMem_DefaultHandler"},
    {"capsule_name", capsule_name, METH_O, "a capsule's name, or None"},
    {"struct_name", struct_name, METH_NOARGS, "the handler's name field, decoded leniently"},
    {"struct_version", struct_version, METH_NOARGS, "the handler's version field"},
    {"adopted", adopted, METH_NOARGS, "whether the kit made the capsule"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "_emm_nep49", nullptr, -1, kMethods, nullptr, nullptr, nullptr, nullptr};

PyObject* init_module() { return PyModule_Create(&kModule); }

// --- the bridge's functions ---------------------------------------------------------------------

std::string start() {
  if (Py_IsInitialized()) return "";
  if (PyImport_AppendInittab("_emm_nep49", &init_module) != 0) {
    return "cannot register the _emm_nep49 module";
  }
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // the certifier's children keep their own signal handling
  // The interpreter this bridge was built for, so that CPython finds its own library and
  // site-packages (NumPy) rather than whichever python3 comes first on PATH.
  PyStatus status =
      PyConfig_SetBytesString(&config, &config.program_name, EMM_NEP49_PYTHON_EXECUTABLE);
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    return std::string("Python could not start: ") + (status.err_msg ? status.err_msg : "?");
  }
  std::string problem;
  // Modules named on the command line are found in the current directory, as `python -c` does.
  if (PyRun_SimpleString("import os, sys; sys.path.insert(0, os.getcwd())") != 0) {
    problem = "cannot set sys.path";
  } else if (_import_array() < 0) {
    problem = "cannot import NumPy's C API: " + python_error();
  } else if (PyArray_GetNDArrayCFeatureVersion() < 0x0000000f) {
    problem = "this NumPy predates NEP 49 (1.22)";
  } else {
    PyObject* code = Py_CompileString(reinterpret_cast<const char*>(kScenarios),
                                      "numpy_scenarios.py", Py_file_input);
    PyObject* module =
        code != nullptr ? PyImport_ExecCodeModule("_emm_nep49_scenarios", code) : nullptr;
    Py_XDECREF(code);
    if (module == nullptr) {
      problem = "cannot load the NEP 49 scenarios: " + python_error();
    } else {
      g_scenarios = module;
      PyObject* versions = PyRun_String(
          "'NumPy ' + __import__('numpy').__version__ + ', Python ' + "
          "__import__('platform').python_version()",
          Py_eval_input, PyModule_GetDict(module), PyModule_GetDict(module));
      const char* text = versions != nullptr ? PyUnicode_AsUTF8(versions) : nullptr;
      g_versions = text != nullptr ? text : "NumPy (version unknown)";
      PyErr_Clear();
      Py_XDECREF(versions);
    }
  }
  // The handler's own clauses call it from threads that do not hold the GIL (NEP49-13).
  PyEval_SaveThread();
  return problem;
}

std::string versions() { return g_versions; }

std::string take_subject(PyObject* capsule, void** handler) {
  const char* name = PyCapsule_GetName(capsule);
  if (name == nullptr && PyErr_Occurred()) return python_error();
  void* pointer = PyCapsule_GetPointer(capsule, name);
  if (pointer == nullptr) return "the capsule holds no pointer: " + python_error();
  Py_XDECREF(g_subject);
  g_subject = capsule;
  g_handler = static_cast<emm::nep49::Handler*>(pointer);
  *handler = pointer;
  return "";
}

// MODULE.ATTR as a new reference to a capsule (ATTR called when it is a function); "" or why
// not. Call with the GIL.
std::string read_capsule(const std::string& module_name, const std::string& attr,
                         PyObject** capsule, std::string* module_file, bool* called) {
  *called = false;
  if (module_name == "numpy" && attr == "PyDataMem_DefaultHandler") {
    Py_INCREF(PyDataMem_DefaultHandler);
    *capsule = PyDataMem_DefaultHandler;
    return "";
  }
  PyObject* module = PyImport_ImportModule(module_name.c_str());
  if (module == nullptr) return "import " + module_name + " failed: " + python_error();
  if (PyObject* file = PyObject_GetAttrString(module, "__file__")) {
    if (const char* text = PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : nullptr) {
      *module_file = text;
    }
    Py_DECREF(file);
  }
  PyErr_Clear();
  PyObject* value = PyObject_GetAttrString(module, attr.c_str());
  Py_DECREF(module);
  if (value == nullptr) return module_name + " has no attribute " + attr + ": " + python_error();
  if (!PyCapsule_CheckExact(value) && PyCallable_Check(value)) {
    PyObject* made = PyObject_CallNoArgs(value);
    Py_DECREF(value);
    if (made == nullptr) return module_name + "." + attr + "() raised " + python_error();
    value = made;
    *called = true;
  }
  if (!PyCapsule_CheckExact(value)) {
    const std::string type = Py_TYPE(value)->tp_name;
    Py_DECREF(value);
    return module_name + "." + attr + " is a " + type +
           ", expected a PyCapsule holding a PyDataMem_Handler (or a function returning one)";
  }
  *capsule = value;
  return "";
}

std::string load_capsule(const std::string& module_name, const std::string& attr, void** handler,
                         std::string* module_file, bool* called) {
  Gil gil;
  PyObject* capsule = nullptr;
  if (std::string problem = read_capsule(module_name, attr, &capsule, module_file, called);
      !problem.empty()) {
    return problem;
  }
  return take_subject(capsule, handler);
}

std::string capsule_again(const std::string& module_name, const std::string& attr, void** handler,
                          void** capsule, bool* called) {
  Gil gil;
  PyObject* value = nullptr;
  std::string module_file;
  if (std::string problem = read_capsule(module_name, attr, &value, &module_file, called);
      !problem.empty()) {
    return problem;
  }
  const char* name = PyCapsule_GetName(value);
  void* pointer =
      name != nullptr || !PyErr_Occurred() ? PyCapsule_GetPointer(value, name) : nullptr;
  if (pointer == nullptr) {
    const std::string problem = "the capsule holds no pointer: " + python_error();
    Py_DECREF(value);
    return problem;
  }
  *handler = pointer;
  *capsule = value;
  return "";
}

void release_capsule(void* capsule) {
  Gil gil;
  Py_XDECREF(static_cast<PyObject*>(capsule));
}

std::string adopt_handler(void* handler) {
  Gil gil;
  PyObject* capsule = PyCapsule_New(handler, emm::nep49::kCapsuleName, nullptr);
  if (capsule == nullptr) return python_error();
  g_adopted = true;
  void* ignored = nullptr;
  return take_subject(capsule, &ignored);
}

std::string run(const std::string& id, std::vector<std::string>* notes) {
  Gil gil;
  if (g_scenarios == nullptr || g_subject == nullptr) return "NumPy is not ready";
  PyObject* result = PyObject_CallMethod(g_scenarios, "run", "s", id.c_str());
  if (result == nullptr) return "the scenario could not run: " + python_error();
  std::string failure;
  PyObject* text = nullptr;
  PyObject* remarks = nullptr;
  if (!PyArg_ParseTuple(result, "UO", &text, &remarks)) {
    failure = "the scenario answered " + python_error();
  } else {
    const char* utf8 = PyUnicode_AsUTF8(text);
    failure = utf8 != nullptr ? utf8 : "the scenario's message is not UTF-8";
    for (Py_ssize_t i = 0; PyList_Check(remarks) && i < PyList_Size(remarks); ++i) {
      if (const char* note = PyUnicode_AsUTF8(PyList_GetItem(remarks, i))) notes->push_back(note);
    }
    PyErr_Clear();
  }
  Py_DECREF(result);
  return failure;
}

int gil_ensure() { return static_cast<int>(PyGILState_Ensure()); }
void gil_release(int state) { PyGILState_Release(static_cast<PyGILState_STATE>(state)); }

struct Attached {
  PyGILState_STATE state;
  PyThreadState* thread;
};
void* thread_attach() {
  const PyGILState_STATE state = PyGILState_Ensure();
  return new Attached{state, PyEval_SaveThread()};
}
void thread_detach(void* token) {
  auto* attached = static_cast<Attached*>(token);
  PyEval_RestoreThread(attached->thread);
  PyGILState_Release(attached->state);
  delete attached;
}

const BridgeApi kApi{kBridgeAbiVersion, &start,           &versions,      &load_capsule,
                     &capsule_again,    &release_capsule, &adopt_handler, &run,
                     &gil_ensure,       &gil_release,     &thread_attach, &thread_detach};

}  // namespace
}  // namespace emm::conformance::nep49_bridge

extern "C" __attribute__((visibility("default"))) const emm::conformance::nep49_bridge::BridgeApi*
emm_nep49_numpy_bridge() {
  return &emm::conformance::nep49_bridge::kApi;
}
