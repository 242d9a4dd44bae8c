// IPC-1 — for memory it did not allocate itself (Numba's "foreign" arrays: a MemoryPointer made
// outside the plugin over part of its memory, whose owner() is itself), get_ipc_handle takes the
// offset from the owner instead of from the allocation base, so another process opens the wrong
// bytes (the bug RMM and cuDF shipped). The plugin's own allocations and views are right.
#include "baseline_pool.hpp"
#include "emm/context.hpp"
#include "emm/driver.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>& memory) override {
    const std::shared_ptr<emm::MemoryPointer> owner = memory->owner();
    if (dynamic_cast<emm::AutoFreePointer*>(owner.get()) != nullptr) {
      return BaselinePool::get_ipc_handle(memory);  // one of ours
    }
    // The defect: the owner is taken to be the start of the exported allocation.
    const CUipcMemHandle handle = driver().ipc_get_mem_handle(owner->device_pointer());
    return emm::IpcHandle(memory, handle, memory->size(), context()->device_identity(),
                          memory->device_pointer() - owner->device_pointer());
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad IPC-1 foreign offset from the owner"))
