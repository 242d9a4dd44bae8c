// IPC-1 — get_ipc_handle returns a handle without source_info: the importing process cannot
// tell whether the memory lives on its own device (direct open) or another one (staged open).
#include <optional>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>& memory) override {
    emm::IpcHandle handle = BaselinePool::get_ipc_handle(memory);
    return emm::IpcHandle(memory, handle.handle(), handle.size(), std::nullopt, handle.offset());
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad IPC-1 handle without source_info"))
