// baseline_pool.hpp — the correct plugins every known-bad plugin of the zoo is one defect from.
//
// BaselinePool is a small but complete EMM plugin (NBEP 7) that passes every plugin clause:
//  * HostOnlyCUDAMemoryManager provides memhostalloc/mempin and the host queue;
//  * memalloc sub-allocates from a SlabPool (slab_pool.hpp) and hands out
//    `AutoFreePointer(...)->own()` whose finalizer gives the block back (ALLOC-5, FIN-1);
//  * defer_cleanup holds the parent's guard and the pool for the whole scope (DEFER-2/3/4);
//  * get_ipc_handle uses the driver's address range, so a sub-allocation's handle is its slab's
//    with the right offset (IPC-1/2);
//  * get_memory_info reports what a caller can still allocate: the device's free memory plus
//    the pool's unused bytes (INFO-1);
//  * the constructor makes no CUDA call (REG-2, LIFE-4); reset() frees every slab (LIFE-7) and
//    may come first (LIFE-5); it is thread-safe (ALLOC-10).
//  * memallocmanaged is HostOnlyCUDAMemoryManager's (MANAGED-1/2/3).
// BaselineNoOptional is the same plugin declaring neither memory info, IPC nor managed memory:
// all three throw NotImplementedError (INFO-2, IPC-7, MANAGED-3).
//
// A zoo plugin derives from one of them and changes exactly one thing, for example:
//
//   class Plugin : public emm::zoo::BaselinePool {
//    public:
//     using BaselinePool::BaselinePool;
//     int interface_version() const override { return 2; }   // REG-1
//   };
//   EMM_EXPORT_MEMORY_MANAGER(Plugin, emm::zoo::baseline_declaration("known-bad REG-1"))
//
// Defects that live inside the pool pass their SlabPool subclass to the constructor.
// Thread-safety: every member is safe to call concurrently (the pool and HostOnly lock).
#pragma once

#include <memory>

#include "emm/host_only_memory_manager.hpp"
#include "emm/plugin_abi.hpp"
#include "slab_pool.hpp"

namespace emm::zoo {

class BaselinePool : public HostOnlyCUDAMemoryManager {
 public:
  explicit BaselinePool(Context* context,
                        std::shared_ptr<SlabPool> pool = std::make_shared<SlabPool>());
  ~BaselinePool() override = default;

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override;
  void initialize() override;
  void reset() override;
  CleanupGuard defer_cleanup() override;
  MemoryInfo get_memory_info() override;
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override;
  int interface_version() const override { return kSupportedInterfaceVersion; }

 protected:
  // What runs when the last reference to `block`'s pointer goes: gives the block back.
  virtual Finalizer block_finalizer(const Block& block);

  SlabPool& pool() const noexcept { return *pool_; }
  const std::shared_ptr<SlabPool>& shared_pool() const noexcept { return pool_; }

 private:
  std::shared_ptr<SlabPool> pool_;
};

class BaselineNoOptional : public BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  MemoryInfo get_memory_info() override;                                            // INFO-2
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override;  // IPC-7
  std::shared_ptr<MemoryPointer> memallocmanaged(std::size_t size,
                                                 bool attach_global = true) override;  // MANAGED-3
};

// What BaselinePool declares; a zoo plugin changes one field at most (DEFER-6, INFO-2, IPC-7,
// MANAGED-3).
constexpr PluginDeclaration baseline_declaration(const char* name) {
  return PluginDeclaration{.name = name,
                           .capabilities = {.memory_info = true,
                                            .ipc = true,
                                            .thread_safe = true,
                                            .runs_on_fake_driver = true,
                                            .pooling = true,
                                            .no_caching = true,
                                            .managed_memory = true},
                           .defer_cleanup_behaviour =
                               "holds the host queue and keeps emptied slabs allocated until "
                               "the outermost guard ends, then frees them"};
}

// The baseline declaring neither memory info, IPC nor managed memory (BaselineNoOptional).
constexpr PluginDeclaration no_optional_declaration(const char* name) {
  PluginDeclaration declaration = baseline_declaration(name);
  declaration.capabilities.memory_info = false;
  declaration.capabilities.ipc = false;
  declaration.capabilities.managed_memory = false;
  return declaration;
}

}  // namespace emm::zoo
