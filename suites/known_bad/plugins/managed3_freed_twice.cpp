// MANAGED-3 — the finalizer of managed memory calls cuMemFree at once *and* queues the
// HostOnly deferred cuMemFree as well: every managed allocation is freed twice.
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
    emm::Finalizer queued = deferred_finalizer(
        key, [&d, pointer] { d.mem_free(pointer); }, size);
    auto memory = std::make_shared<emm::ManagedMemory>(context(), pointer, size, nullptr,
                                                       [&d, pointer, queued]() mutable {
                                                         d.mem_free(pointer);
                                                         queued();
                                                       });
    track(key, memory);
    return memory->own();
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin, emm::zoo::baseline_declaration("known-bad MANAGED-3 freed twice"))
