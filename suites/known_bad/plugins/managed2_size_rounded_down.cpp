// MANAGED-2 — memallocmanaged asks cuMemAllocManaged for n rounded down to a multiple of 256
// bytes (at least 256) while the ManagedMemory reports n: the end of the range lies outside the
// allocation.
#include <algorithm>
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
    const std::size_t rounded = std::max<std::size_t>(256, size / 256 * 256);
    const CUdeviceptr pointer = d.mem_alloc_managed(rounded, flags);
    const auto key = static_cast<std::uintptr_t>(pointer);
    auto memory = std::make_shared<emm::ManagedMemory>(
        context(), pointer, size, nullptr,
        deferred_finalizer(
            key, [&d, pointer] { d.mem_free(pointer); }, rounded));
    track(key, memory);
    return memory->own();
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad MANAGED-2 size rounded down"))
