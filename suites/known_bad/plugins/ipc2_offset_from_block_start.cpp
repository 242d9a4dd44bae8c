// IPC-2 — the IPC offset is measured from the pool block the view belongs to, not from the slab
// the driver handle refers to: right for a slab's first block, wrong for every other one.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>& memory) override {
    emm::IpcHandle handle = BaselinePool::get_ipc_handle(memory);
    const std::size_t offset = memory->device_pointer() - memory->owner()->device_pointer();
    return emm::IpcHandle(memory, handle.handle(), handle.size(), handle.source_info(), offset);
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad IPC-2 offset from the block start"))
