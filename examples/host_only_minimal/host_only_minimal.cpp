#include "host_only_minimal.hpp"

#include <cstdint>

#include "emm/context.hpp"
#include "emm/driver.hpp"

namespace emm::examples {

std::shared_ptr<MemoryPointer> HostOnlyMinimalMemoryManager::memalloc(std::size_t size) {
  Driver& driver = this->driver();  // always the context's driver, never CUDA directly
  // On CUDA_ERROR_OUT_OF_MEMORY: flush the frees still queued and try once more (DEALLOC-6).
  const CUdeviceptr pointer = attempt_allocation([&] { return driver.mem_alloc(size); });
  const auto key = static_cast<std::uintptr_t>(pointer);

  // The finalizer queues cuMemFree on the parent's pending-deallocation queue. The queue has
  // no memory capacity set, so any freed byte flushes it at once — except inside
  // defer_cleanup(), where frees wait for the scope to end (DEFER-3, DEFER-4). It does nothing
  // once reset() has released the allocation or the plugin is gone (LIFE-8).
  Finalizer finalizer = deferred_finalizer(
      key, [&driver, pointer] { driver.mem_free(pointer); }, size);

  // A plain MemoryPointer: refct 1, its finalizer runs when the last reference goes (ALLOC-5).
  std::shared_ptr<MemoryPointer> memory;
  try {
    memory =
        std::make_shared<MemoryPointer>(context(), pointer, size, nullptr, std::move(finalizer));
  } catch (...) {
    driver.mem_free(pointer);
    throw;
  }
  track(key, memory);  // weakly: reset() frees what callers still hold (LIFE-7)
  return memory;
}

MemoryInfo HostOnlyMinimalMemoryManager::get_memory_info() { return driver().mem_get_info(); }

}  // namespace emm::examples
