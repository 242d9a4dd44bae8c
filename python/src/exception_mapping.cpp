#include "emm/python/exception_mapping.hpp"

#include "emm/errors.hpp"
#include "emm/python/numba_api.hpp"
#include "emm/python/python_error.hpp"

namespace emm::python {

void throw_mapped_error(const pybind11::error_already_set& error, std::string_view doing) {
  const PythonError rendered = make_python_error(error, doing);
  if (error.matches(PyExc_NotImplementedError)) {
    throw emm::NotImplementedError(rendered.what());
  }
  if (NumbaApi::get().cuda_api_error_code(error.value()) == CUDA_ERROR_OUT_OF_MEMORY) {
    throw CudaDriverError(CUDA_ERROR_OUT_OF_MEMORY, std::string(doing) + " (Python plugin)",
                          "raised as " + rendered.type_name() + ": " + rendered.message() + "\n" +
                              rendered.traceback());
  }
  throw rendered;
}

}  // namespace emm::python
