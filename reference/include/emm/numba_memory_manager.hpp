// emm/numba_memory_manager.hpp — NumbaCUDAMemoryManager, the default manager (NBEP 7).
//
// GetIpcHandleMixin + HostOnlyCUDAMemoryManager + memalloc through cuMemAlloc with deferred
// frees + get_memory_info through cuMemGetInfo. initialize() sets the queue's capacity to the
// device's total memory once (DEALLOC-3). memalloc retries once after a flush on
// CUDA_ERROR_OUT_OF_MEMORY (DEALLOC-6) and returns `AutoFreePointer(...)->own()`.
//
// Thread-safety: all members are safe to call concurrently.
#pragma once

#include "emm/get_ipc_handle_mixin.hpp"
#include "emm/host_only_memory_manager.hpp"

namespace emm {

class NumbaCUDAMemoryManager : public GetIpcHandleMixin<HostOnlyCUDAMemoryManager> {
 public:
  using GetIpcHandleMixin<HostOnlyCUDAMemoryManager>::GetIpcHandleMixin;

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override;
  void initialize() override;
  MemoryInfo get_memory_info() override;
  int interface_version() const override { return kSupportedInterfaceVersion; }
};

using DefaultCUDAMemoryManager = NumbaCUDAMemoryManager;

}  // namespace emm
