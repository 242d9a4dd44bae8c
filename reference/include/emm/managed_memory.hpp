// emm/managed_memory.hpp — unified (managed) memory from cuMemAllocManaged (NBEP 7 ManagedMemory).
//
// An AutoFreePointer whose device pointer is also a host pointer: on a unified-addressing
// system the driver hands out one address that the host and the device both access, so
// host_pointer() is device_pointer() as a void*. HostOnlyCUDAMemoryManager::memallocmanaged
// hands out `managed->own()`; managed_memory() finds the ManagedMemory behind what a plugin
// returned (MANAGED-1).
//
//   auto memory = context.memallocmanaged(4096);       // attach_global = true
//   emm::ManagedMemory* managed = emm::managed_memory(memory);
//   std::memset(managed->host_pointer(), 0, 4096);      // the device sees these bytes
//
// `owned()` is what the plugin gave as the owner of the bytes, if something other than the
// pointer itself keeps them alive (null for memory straight from cuMemAllocManaged).
//
// Thread-safety and ownership: as MemoryPointer.
#pragma once

#include <memory>

#include "emm/memory_pointer.hpp"

namespace emm {

class ManagedMemory : public AutoFreePointer {
 public:
  ManagedMemory(Context* context, CUdeviceptr pointer, std::size_t size,
                std::shared_ptr<void> owned = nullptr, Finalizer finalizer = {});

  // The same address as device_pointer(): managed memory is host-accessible in place.
  void* host_pointer() const noexcept;
  const std::shared_ptr<void>& owned() const noexcept { return owned_; }

 private:
  std::shared_ptr<void> owned_;
};

// The ManagedMemory behind `pointer`: the pointer itself, or the allocation it owns (an own()
// or a view of a ManagedMemory). Null when there is none (`pointer` null included).
ManagedMemory* managed_memory(const std::shared_ptr<MemoryPointer>& pointer);

}  // namespace emm
