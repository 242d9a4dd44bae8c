// IPC-1 — declares IPC support but get_ipc_handle throws NotImplementedError. An undeclared
// NotImplementedError is a fail of IPC-1 (spec §3), not not_supported; IPC-7 only concerns
// plugins that declare no IPC.
#include "baseline_pool.hpp"
#include "emm/errors.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>&) override {
    throw emm::NotImplementedError("get_ipc_handle is not implemented yet");
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad IPC-1 undeclared NotImplementedError"))
