// emm/get_ipc_handle_mixin.hpp — GetIpcHandleMixin (NBEP 7).
//
// get_ipc_handle for plugins whose allocations are (inside) blocks from cuMemAlloc:
// base = cuMemGetAddressRange(view), handle = cuIpcGetMemHandle(base),
// offset = view pointer - base, size = view size, source_info = device identity (IPC-1).
//
//   class MyPlugin : public emm::GetIpcHandleMixin<emm::HostOnlyCUDAMemoryManager> { ... };
//
// A C++ mixin is a class template over its base. Thread-safety: as the driver's calls.
#pragma once

#include <memory>
#include <type_traits>

#include "emm/base_memory_manager.hpp"

namespace emm {

// The shared implementation, usable from any plugin.
IpcHandle make_ipc_handle_from_address_range(Context& context,
                                             const std::shared_ptr<MemoryPointer>& memory);

template <class Base>
class GetIpcHandleMixin : public Base {
  static_assert(std::is_base_of_v<BaseCUDAMemoryManager, Base>,
                "GetIpcHandleMixin<Base>: Base must derive from BaseCUDAMemoryManager");

 public:
  using Base::Base;
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override;
};

template <class Base>
IpcHandle GetIpcHandleMixin<Base>::get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) {
  return make_ipc_handle_from_address_range(*this->context(), memory);
}

}  // namespace emm
