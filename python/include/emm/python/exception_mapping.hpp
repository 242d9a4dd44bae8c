// emm/python/exception_mapping.hpp — a plugin's Python exception as the kit's typed error, by
// meaning (so the clauses judge a Python plugin exactly as a C++ one):
//
//   NotImplementedError                       -> emm::NotImplementedError   (INFO-2, IPC-7)
//   numba CudaAPIError, CUDA_ERROR_OUT_OF_MEMORY -> emm::CudaDriverError with that CUresult
//                                                (ALLOC-3)
//   anything else                             -> emm::python::PythonError (type, message and
//                                                traceback)
//
// Every message keeps the Python type, message and traceback. Nothing else is translated:
// CuPy's OutOfMemoryError or torch's OutOfMemoryError are not numba's out-of-memory error, and
// Numba would not treat them as one either (a plugin translates them itself).
//
//   try { instance.attr("memalloc")(size); }
//   catch (pybind11::error_already_set& error) { throw_mapped_error(error, "memalloc(64)"); }
//
// Needs the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <string_view>

namespace emm::python {

[[noreturn]] void throw_mapped_error(const pybind11::error_already_set& error,
                                     std::string_view doing);

}  // namespace emm::python
