// emm/examples/forwarding_memory_manager.hpp — ForwardingMemoryManager: a plugin that owns
// another plugin instance and forwards every call to it unchanged.
//
// The base for decorators that wrap an instance chosen at run time (e.g. one loaded from a
// plugin library) rather than a type known at compile time:
//
//   emm::examples::ForwardingMemoryManager same(ctx, std::make_unique<MyPlugin>(ctx));
//   using Logged = emm::examples::Logging<emm::examples::ForwardingMemoryManager>;
//
// The wrapped plugin must be constructed for the same context. The pointers, host allocations,
// IPC handles and guards it returns are passed through as they are.
//
// Thread-safety: as the wrapped plugin's.
#pragma once

#include <memory>

#include "emm/base_memory_manager.hpp"

namespace emm::examples {

class ForwardingMemoryManager : public BaseCUDAMemoryManager {
 public:
  // Throws InvalidArgumentError when `inner` is null.
  ForwardingMemoryManager(Context* context, std::unique_ptr<BaseCUDAMemoryManager> inner);

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override;
  HostAllocation memhostalloc(std::size_t size, bool mapped = false, bool portable = false,
                              bool wc = false) override;
  HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                        bool mapped = false) override;
  std::shared_ptr<MemoryPointer> memallocmanaged(std::size_t size,
                                                 bool attach_global = true) override;
  void initialize() override;
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override;
  MemoryInfo get_memory_info() override;
  void reset() override;
  CleanupGuard defer_cleanup() override;
  int interface_version() const override;

  BaseCUDAMemoryManager& inner() const noexcept { return *inner_; }

 private:
  std::unique_ptr<BaseCUDAMemoryManager> inner_;
};

}  // namespace emm::examples
