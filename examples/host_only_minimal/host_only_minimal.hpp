// host_only_minimal.hpp — the smallest correct EMM plugin (the author's guide walks through it).
//
// HostOnlyCUDAMemoryManager supplies the host side (memhostalloc, mempin, initialize, reset,
// defer_cleanup) and GetIpcHandleMixin supplies get_ipc_handle; this class adds device memory
// from cuMemAlloc, memory info from cuMemGetInfo and the interface version.
//
//   emm::Runtime runtime(driver);
//   runtime.set_memory_manager<emm::examples::HostOnlyMinimalMemoryManager>();
//
// Thread-safety: every member may be called concurrently (the parent's state is locked).
#pragma once

#include "emm/get_ipc_handle_mixin.hpp"
#include "emm/host_only_memory_manager.hpp"

namespace emm::examples {

class HostOnlyMinimalMemoryManager : public GetIpcHandleMixin<HostOnlyCUDAMemoryManager> {
 public:
  // Constructors make no CUDA call (REG-2, LIFE-4): the context may be null or not current.
  using GetIpcHandleMixin::GetIpcHandleMixin;

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override;
  MemoryInfo get_memory_info() override;
  int interface_version() const override { return kSupportedInterfaceVersion; }
  // initialize(), reset() and defer_cleanup() are the parent's, unchanged. A plugin that
  // overrides them must call (initialize, reset) or hold (defer_cleanup) the parent's (NBEP 7).
};

}  // namespace emm::examples
