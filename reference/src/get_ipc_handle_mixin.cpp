#include "emm/get_ipc_handle_mixin.hpp"

#include "emm/context.hpp"
#include "emm/errors.hpp"

namespace emm {

IpcHandle make_ipc_handle_from_address_range(Context& context,
                                             const std::shared_ptr<MemoryPointer>& memory) {
  if (!memory || memory->device_pointer() == 0) {
    throw InvalidArgumentError("get_ipc_handle: the memory is null or empty; export a live view");
  }
  Driver& driver = context.driver();
  // IPC-1: the driver handle names the whole block; the view's offset into it travels beside.
  const AddressRange block = driver.mem_get_address_range(memory->device_pointer());
  const CUipcMemHandle handle = driver.ipc_get_mem_handle(block.base);
  const std::size_t offset = static_cast<std::size_t>(memory->device_pointer() - block.base);
  return IpcHandle(memory, handle, memory->size(), context.device_identity(), offset);
}

}  // namespace emm
