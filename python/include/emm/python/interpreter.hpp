// emm/python/interpreter.hpp — one CPython interpreter per process, started on first use.
//
// The kit's C++ programs never link libpython; a library that needs Python (libemm_python, the
// NEP 49 helper) links this core and calls ensure_interpreter() before its first Python call:
//
//   emm::python::ensure_interpreter();          // starts CPython once; the GIL is then free
//   {
//     emm::python::Gil gil;                     // any thread: take the GIL for Python calls
//     pybind11::module_::import("sys");
//   }
//
// When the process already runs Python (the library was loaded into python3), that interpreter
// is used as it is. An interpreter started here is never finalized: Python objects the kit
// still holds (pointers, finalizers of plugins) may be released at any time until exit, and
// CPython cannot be restarted in one process anyway.
//
// libpython's symbols are made global when the interpreter starts, so extension modules
// (numpy, numba, cuda-bindings) that expect them from the executable resolve even though the
// library that needs Python was dlopen'ed with RTLD_LOCAL.
//
// Thread-safety: ensure_interpreter() may be called from any thread, any number of times; the
// first call starts the interpreter and returns with the GIL released.
#pragma once

#include <string>

namespace emm::python {

// Starts CPython in this process if nothing has; returns with the calling thread not holding
// the GIL (unless it held it before). Throws emm::python::PythonError when CPython cannot start.
void ensure_interpreter();

// True when this process's interpreter was started by ensure_interpreter(), false when the
// process already ran Python (or none is running yet).
bool interpreter_started_here() noexcept;

// "Python 3.11.2 (prefix /usr)": which interpreter plugin code runs under, for messages and
// certificates. Takes the GIL itself; starts the interpreter if needed.
std::string interpreter_description();

}  // namespace emm::python
