// IPC-1 — get_ipc_handle returns a handle without a base: nothing references the exported
// memory, so it can be freed while another process still has the handle (NBEP 7: the base
// keeps the exported allocation alive).
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>& memory) override {
    emm::IpcHandle handle = BaselinePool::get_ipc_handle(memory);
    return emm::IpcHandle(nullptr, handle.handle(), handle.size(), handle.source_info(),
                          handle.offset());
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad IPC-1 handle without base"))
