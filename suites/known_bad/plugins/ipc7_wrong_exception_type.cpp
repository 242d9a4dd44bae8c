// IPC-7 — declares no IPC support, but get_ipc_handle throws emm::UnsupportedError instead of
// emm::NotImplementedError.
#include "baseline_pool.hpp"
#include "emm/errors.hpp"

namespace {

class Plugin : public emm::zoo::BaselineNoOptional {
 public:
  using BaselineNoOptional::BaselineNoOptional;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>&) override {
    throw emm::UnsupportedError("get_ipc_handle: IPC is not supported by this plugin");
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::no_optional_declaration("known-bad IPC-7 wrong exception type"))
