// IPC-1 — the IPC handle's size is the whole slab's size, not the exported view's.
#include "baseline_pool.hpp"
#include "emm/driver.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>& memory) override {
    emm::IpcHandle handle = BaselinePool::get_ipc_handle(memory);
    const emm::AddressRange slab = driver().mem_get_address_range(memory->device_pointer());
    return emm::IpcHandle(memory, handle.handle(), slab.size, handle.source_info(),
                          handle.offset());
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad IPC-1 size is the slab size"))
