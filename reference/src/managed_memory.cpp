#include "emm/managed_memory.hpp"

#include <cstdint>

namespace emm {

ManagedMemory::ManagedMemory(Context* context, CUdeviceptr pointer, std::size_t size,
                             std::shared_ptr<void> owned, Finalizer finalizer)
    : AutoFreePointer(context, pointer, size, nullptr, std::move(finalizer)),
      owned_(std::move(owned)) {}

void* ManagedMemory::host_pointer() const noexcept {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(device_pointer()));
}

ManagedMemory* managed_memory(const std::shared_ptr<MemoryPointer>& pointer) {
  if (!pointer) return nullptr;
  if (auto* managed = dynamic_cast<ManagedMemory*>(pointer.get())) return managed;
  return dynamic_cast<ManagedMemory*>(pointer->owner().get());
}

}  // namespace emm
