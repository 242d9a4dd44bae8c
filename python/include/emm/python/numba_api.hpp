// emm/python/numba_api.hpp — the numba names the adapter needs, in either package layout.
//
// Numba 0.56 (numba.cuda inside numba) and numba-cuda 0.30 (the numba_cuda package, which
// installs the same numba.cuda.cudadrv.driver module) both define the EMM classes in
// numba.cuda.cudadrv.driver; device pointers are ctypes values in the first and cuda-bindings
// CUdeviceptr objects in the second (NUMBA_CUDA_USE_NVIDIA_BINDING). NumbaApi hides that:
//
//   const NumbaApi& numba = NumbaApi::get();                 // GIL held
//   if (!numba.is_manager_class(cls)) ...                    // a BaseCUDAMemoryManager subclass?
//   pybind11::object ctx = numba.context_for_device(0);      // numba's primary-context Context
//
// Importing numba.cuda starts no CUDA work; context_for_device() does (it retains the device's
// primary context, the one the kit's gpu backend uses too).
//
// get() returns a process-wide value that is never destroyed (the interpreter is never
// finalized); all members need the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

namespace emm::python {

class NumbaApi {
 public:
  // Imports numba's CUDA driver module once. Throws PythonPluginError (python_plugin.hpp) when
  // numba cannot be imported, with the import's traceback.
  static const NumbaApi& get();

  // "numba 0.56.4 (numba.cuda.cudadrv.driver)"
  const std::string& description() const noexcept { return description_; }
  bool is_manager_class(pybind11::handle cls) const;
  bool is_host_only_class(pybind11::handle cls) const;
  // `cls` is BaseCUDAMemoryManager or HostOnlyCUDAMemoryManager itself: a method resolved there
  // is numba's abstract one (get_memory_info, get_ipc_handle), never an implementation.
  bool is_abstract_base(pybind11::handle cls) const;
  // `cls` is numba's GetIpcHandleMixin, whose get_ipc_handle exports any allocation.
  bool is_ipc_handle_mixin(pybind11::handle cls) const;
  // The CUresult numba's CudaAPIError carries, or -1 when `exception` is not one.
  long cuda_api_error_code(pybind11::handle exception) const;
  // numba's Context for `device`'s primary context (numba.cuda.gpus[device]).
  pybind11::object context_for_device(int device) const;
  // A numba MemoryPointer over memory numba did not allocate, without a finalizer (what numba
  // builds for a foreign CUDA Array Interface owner).
  pybind11::object foreign_pointer(pybind11::handle context, std::uint64_t pointer,
                                   std::size_t size) const;

 private:
  NumbaApi() = default;
  std::string description_;
  pybind11::object driver_;
  pybind11::object base_;
  pybind11::object host_only_;
  pybind11::object ipc_handle_mixin_;
  pybind11::object cuda_api_error_;
  pybind11::object memory_pointer_;
};

}  // namespace emm::python
