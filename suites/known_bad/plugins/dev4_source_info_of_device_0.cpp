// DEV-4 — get_ipc_handle() names device 0 as the source of every handle (an identity read once
// for "the" GPU), so a handle exported under device 1's context sends importers to the wrong
// device.
#include "baseline_pool.hpp"
#include "emm/context.hpp"
#include "emm/get_ipc_handle_mixin.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::IpcHandle get_ipc_handle(const std::shared_ptr<emm::MemoryPointer>& memory) override {
    emm::IpcHandle right = emm::make_ipc_handle_from_address_range(*context(), memory);
    return emm::IpcHandle(right.base(), right.handle(), right.size(), driver().device_identity(0),
                          right.offset());
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad DEV-4 source_info of device 0"))
