// MANAGED-3 — memallocmanaged returns the bare ManagedMemory (refct 0) instead of its own(), so
// dropping the last view frees the memory while the returned pointer still references it.
#include <cstdint>

#include "baseline_pool.hpp"
#include "emm/driver.hpp"
#include "emm/managed_memory.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  std::shared_ptr<emm::MemoryPointer> memallocmanaged(std::size_t size,
                                                      bool attach_global = true) override {
    emm::Driver& d = driver();
    const unsigned flags = attach_global ? CU_MEM_ATTACH_GLOBAL : CU_MEM_ATTACH_HOST;
    const CUdeviceptr pointer = d.mem_alloc_managed(size, flags);
    const auto key = static_cast<std::uintptr_t>(pointer);
    auto memory = std::make_shared<emm::ManagedMemory>(
        context(), pointer, size, nullptr,
        deferred_finalizer(
            key, [&d, pointer] { d.mem_free(pointer); }, size));
    track(key, memory);
    return memory;
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad MANAGED-3 bare ManagedMemory"))
