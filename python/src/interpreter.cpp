#include "emm/python/interpreter.hpp"

#include <dlfcn.h>
#include <pybind11/embed.h>

#include <atomic>
#include <mutex>

#include "emm/python/gil.hpp"
#include "emm/python/python_error.hpp"

namespace emm::python {
namespace py = pybind11;
namespace {

std::atomic<bool> started_here{false};

// Extension modules are built without a link to libpython: they expect its symbols in the
// global scope, which a library dlopen'ed with RTLD_LOCAL does not give them. Reopening the
// libpython this code was linked against with RTLD_GLOBAL | RTLD_NOLOAD promotes it.
void make_libpython_global() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&Py_IsInitialized), &info) != 0 &&
      info.dli_fname != nullptr) {
    // The handle keeps libpython loaded for the life of the process, as the interpreter must.
    (void)::dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  }
}

void start() {
  make_libpython_global();
  if (Py_IsInitialized() != 0) return;  // the process runs Python already: use it
  // No Python signal handlers: the kit's processes keep their own (SIGINT, SIGPIPE) dispositions.
  try {
    py::initialize_interpreter(/*init_signal_handlers=*/false, 0, nullptr,
                               /*add_program_dir_to_path=*/false);
  } catch (const std::exception& error) {
    throw PythonError("starting the Python interpreter", "RuntimeError", error.what(), "");
  }
  // Created while the GIL is held, so that later threads find pybind11's state ready.
  (void)py::detail::get_internals();
  started_here.store(true);
  // The starting thread gives the GIL up for good; every call into Python takes it (Gil).
  (void)PyEval_SaveThread();
}

}  // namespace

void ensure_interpreter() {
  static std::once_flag once;
  std::call_once(once, start);
}

bool interpreter_started_here() noexcept { return started_here.load(); }

std::string interpreter_description() {
  ensure_interpreter();
  Gil gil;
  try {
    py::module_ sys = py::module_::import("sys");
    const std::string version = py::str(sys.attr("version")).cast<std::string>();
    return "Python " + version.substr(0, version.find(' ')) + " (prefix " +
           py::str(sys.attr("prefix")).cast<std::string>() + ")";
  } catch (py::error_already_set& error) {
    return "Python (" + std::string(make_python_error(error, "reading sys.version").what()) + ")";
  }
}

}  // namespace emm::python
