// emm/python/gil.hpp — taking and releasing CPython's global interpreter lock (GIL).
//
// Every call into Python holds the GIL; C++ that may run long (a driver call, a wait, a check
// body) runs without it, so that other threads can call into Python meanwhile (ALLOC-10 runs
// memalloc from 8 threads):
//
//   void MyAdapter::memalloc(std::size_t n) {
//     emm::python::Gil gil;                 // this thread may now call Python
//     pybind11::object p = instance_.attr("memalloc")(n);
//     ...
//   }
//   {
//     emm::python::GilReleased released;    // C++ only in here (Py_BEGIN_ALLOW_THREADS)
//     long_cxx_work();
//   }
//
// Gil works in any thread, including threads Python did not create, and nests. GilReleased
// must be used only by a thread that holds the GIL. Both are scoped, neither copyable nor
// movable. The interpreter must be running (ensure_interpreter()).
#pragma once

#include <Python.h>

namespace emm::python {

class Gil {
 public:
  Gil() noexcept : state_(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  PyGILState_STATE state_;
};

class GilReleased {
 public:
  GilReleased() noexcept : saved_(PyEval_SaveThread()) {}
  ~GilReleased() { PyEval_RestoreThread(saved_); }
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;

 private:
  PyThreadState* saved_;
};

// True when the calling thread holds the GIL (for assertions in adapters).
inline bool holds_gil() noexcept { return PyGILState_Check() != 0; }

}  // namespace emm::python
