// IPC-7 — declares no IPC support, yet get_ipc_handle returns a handle instead of throwing
// emm::NotImplementedError (the declaration and the behaviour disagree).
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselineNoOptional {
 public:
  using BaselineNoOptional::BaselineNoOptional;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>& memory) override {
    return BaselinePool::get_ipc_handle(memory);
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::no_optional_declaration("known-bad IPC-7 returns a handle undeclared"))
