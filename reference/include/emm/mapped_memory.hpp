// emm/mapped_memory.hpp — host memory mapped into the device address space (NBEP 7).
//
// An AutoFreePointer whose device_pointer() is the mapping of host_pointer()
// (cuMemHostGetDevicePointer). HostOnlyCUDAMemoryManager hands out `mapped->own()`.
// `owned()` is what mempin was given as the owner of the host buffer (null for memhostalloc).
//
// Thread-safety and ownership: as MemoryPointer.
#pragma once

#include <memory>

#include "emm/memory_pointer.hpp"

namespace emm {

class MappedMemory : public AutoFreePointer {
 public:
  // Looks the device pointer up through context->driver(); throws CudaDriverError if the host
  // range is not mapped.
  MappedMemory(Context* context, void* host_pointer, std::size_t size,
               std::shared_ptr<void> owned = nullptr, Finalizer finalizer = {});
  // For plugins that already know the device pointer (no driver call).
  MappedMemory(Context* context, void* host_pointer, CUdeviceptr device_pointer, std::size_t size,
               std::shared_ptr<void> owned = nullptr, Finalizer finalizer = {});

  void* host_pointer() const noexcept { return host_pointer_; }
  const std::shared_ptr<void>& owned() const noexcept { return owned_; }

 private:
  void* host_pointer_;
  std::shared_ptr<void> owned_;
};

}  // namespace emm
