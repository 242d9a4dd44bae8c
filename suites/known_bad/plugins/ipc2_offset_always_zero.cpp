// IPC-2 — the IPC handle's offset is always 0, so a sub-allocation (or view) that does not start
// at its slab's base is opened at the wrong address (IPC-1's views fail too).
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>& memory) override {
    emm::IpcHandle handle = BaselinePool::get_ipc_handle(memory);
    return emm::IpcHandle(memory, handle.handle(), handle.size(), handle.source_info(), 0);
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin, emm::zoo::baseline_declaration("known-bad IPC-2 offset always 0"))
