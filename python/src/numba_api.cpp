#include "emm/python/numba_api.hpp"

#include "emm/python/python_plugin.hpp"

namespace emm::python {
namespace py = pybind11;

const NumbaApi& NumbaApi::get() {
  // Never destroyed: the Python objects it holds must not be released at exit, when the
  // interpreter may be gone.
  static const NumbaApi* const api = [] {
    auto* made = new NumbaApi();
    try {
      made->driver_ = py::module_::import("numba.cuda.cudadrv.driver");
      std::string version = "?";
      try {
        version = py::str(py::module_::import("numba").attr("__version__")).cast<std::string>();
        const py::object distribution = py::module_::import("importlib.metadata").attr("version");
        version = "numba-cuda " + py::str(distribution("numba-cuda")).cast<std::string>() +
                  " (numba " + version + ")";
      } catch (py::error_already_set&) {
        version = "numba " + version;
      }
      made->description_ = version;
      made->base_ = made->driver_.attr("BaseCUDAMemoryManager");
      made->host_only_ = made->driver_.attr("HostOnlyCUDAMemoryManager");
      made->ipc_handle_mixin_ = made->driver_.attr("GetIpcHandleMixin");
      made->cuda_api_error_ = made->driver_.attr("CudaAPIError");
      made->memory_pointer_ = made->driver_.attr("MemoryPointer");
    } catch (py::error_already_set& error) {
      const PythonError cause = make_python_error(error, "importing numba.cuda.cudadrv.driver");
      delete made;
      throw PythonPluginError(
          "numba's CUDA driver module (numba.cuda.cudadrv.driver) cannot be imported, so no "
          "EMM plugin class can be used: " +
          std::string(cause.what()) +
          "\nInstall numba-cuda (pip install numba-cuda) or numba for this interpreter");
    }
    return made;
  }();
  return *api;
}

bool NumbaApi::is_manager_class(py::handle cls) const {
  return PyType_Check(cls.ptr()) != 0 && PyObject_IsSubclass(cls.ptr(), base_.ptr()) == 1;
}

bool NumbaApi::is_host_only_class(py::handle cls) const {
  return PyType_Check(cls.ptr()) != 0 && PyObject_IsSubclass(cls.ptr(), host_only_.ptr()) == 1;
}

bool NumbaApi::is_abstract_base(py::handle cls) const {
  return cls.is(base_) || cls.is(host_only_);
}

bool NumbaApi::is_ipc_handle_mixin(py::handle cls) const { return cls.is(ipc_handle_mixin_); }

long NumbaApi::cuda_api_error_code(py::handle exception) const {
  if (!exception || PyObject_IsInstance(exception.ptr(), cuda_api_error_.ptr()) != 1) return -1;
  try {
    // An int (ctypes binding) or a cuda-bindings CUresult enum member.
    return py::int_(exception.attr("code")).cast<long>();
  } catch (py::error_already_set&) {
    return -1;
  }
}

py::object NumbaApi::context_for_device(int device) const {
  return py::module_::import("numba.cuda")
      .attr("gpus")[py::int_(device)]
      .attr("get_primary_context")();
}

py::object NumbaApi::foreign_pointer(py::handle context, std::uint64_t pointer,
                                     std::size_t size) const {
  py::object value;
  if (py::hasattr(driver_, "binding") && py::hasattr(driver_.attr("binding"), "CUdeviceptr")) {
    value = driver_.attr("binding").attr("CUdeviceptr")(pointer);
  } else {
    value = py::module_::import("ctypes").attr("c_void_p")(pointer);
  }
  return memory_pointer_(py::arg("context") = context, py::arg("pointer") = value,
                         py::arg("size") = size);
}

}  // namespace emm::python
