#include "emm/numba_memory_manager.hpp"

#include "emm/context.hpp"
#include "emm/driver.hpp"

namespace emm {

std::shared_ptr<MemoryPointer> NumbaCUDAMemoryManager::memalloc(std::size_t size) {
  Driver& d = driver();
  const CUdeviceptr pointer = attempt_allocation([&d, size] { return d.mem_alloc(size); });
  const auto key = static_cast<std::uintptr_t>(pointer);
  std::shared_ptr<AutoFreePointer> memory;
  try {
    memory =
        std::make_shared<AutoFreePointer>(context(), pointer, size, nullptr,
                                          deferred_finalizer(
                                              key, [&d, pointer] { d.mem_free(pointer); }, size));
  } catch (...) {
    d.mem_free(pointer);
    throw;
  }
  track(key, memory);
  // An AutoFreePointer starts at refct 0: hand out an owned reference (ALLOC-5).
  return memory->own();
}

void NumbaCUDAMemoryManager::initialize() {
  HostOnlyCUDAMemoryManager::initialize();
  // DEALLOC-3: the byte threshold is a fraction of the device's total memory, read once.
  if (!deallocations().memory_capacity_set()) {
    deallocations().set_memory_capacity(get_memory_info().total);
  }
}

MemoryInfo NumbaCUDAMemoryManager::get_memory_info() { return driver().mem_get_info(); }

}  // namespace emm
