// MANAGED-1 — memallocmanaged takes its memory from cuMemAlloc and wraps it in a ManagedMemory:
// the kind is right, but the memory is device-only (the host cannot touch it).
#include <cstdint>

#include "baseline_pool.hpp"
#include "emm/driver.hpp"
#include "emm/managed_memory.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  std::shared_ptr<emm::MemoryPointer> memallocmanaged(std::size_t size,
                                                      bool /*attach_global*/ = true) override {
    emm::Driver& d = driver();
    const CUdeviceptr pointer = d.mem_alloc(size);
    const auto key = static_cast<std::uintptr_t>(pointer);
    auto memory = std::make_shared<emm::ManagedMemory>(
        context(), pointer, size, nullptr,
        deferred_finalizer(
            key, [&d, pointer] { d.mem_free(pointer); }, size));
    track(key, memory);
    return memory->own();
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad MANAGED-1 device memory as managed"))
