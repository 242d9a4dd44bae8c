// emm/base_memory_manager.hpp — BaseCUDAMemoryManager: the EMM plugin interface (NBEP 7).
//
// A plugin derives from this class (or from HostOnlyCUDAMemoryManager) and is instantiated
// once per context, with that context (LIFE-1):
//
//   class MyPlugin : public emm::HostOnlyCUDAMemoryManager {
//    public:
//     using HostOnlyCUDAMemoryManager::HostOnlyCUDAMemoryManager;
//     std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override;
//     ...
//   };
//   EMM_EXPORT_MEMORY_MANAGER(MyPlugin, kMyDeclaration)   // plugin_abi.hpp, plugin_declaration.hpp
//
// The rules (each is a conformance clause, spec §4):
//  * The constructor makes no CUDA call; context() may be null (the version probe, REG-2) and
//    the context need not be current (LIFE-4). CUDA work belongs in initialize().
//  * initialize() may be called any number of times and must not invalidate state (LIFE-2).
//  * reset() may be the very first call (LIFE-5); it releases everything (LIFE-7).
//  * Allocation methods are called with the owning context current; use
//    context()->driver() for every CUDA call.
//  * get_memory_info() and get_ipc_handle() may throw NotImplementedError when the plugin
//    declares the capability absent (INFO-2, IPC-7).
//  * memallocmanaged() is optional: the default throws NotImplementedError; a plugin that
//    overrides it (HostOnlyCUDAMemoryManager does) declares managed_memory (MANAGED-*).
//  * interface_version() returns 1.
//  * The destructor runs for the null-context probe too: it must not reach context() or the
//    driver there (the probe is built and destroyed by set_memory_manager and by emm-certify;
//    a destructor that crashes or throws then ends the process, and fails REG-2).
//  * A finalizer may run after the plugin is gone (a pointer outlives its context, LIFE-8): it
//    must keep alive what it uses. Capture context()->runtime().shared_driver() (a
//    std::shared_ptr<Driver>) rather than a Driver& or the plugin's `this`.
//
// Thread-safety: the host does not serialise calls into a plugin. A plugin that declares
// itself thread-safe must accept concurrent calls (ALLOC-10).
#pragma once

#include <cstddef>
#include <memory>

#include "emm/cleanup_guard.hpp"
#include "emm/host_allocation.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/memory_info.hpp"
#include "emm/memory_pointer.hpp"

namespace emm {

class Context;
class Driver;

// The interface version this kit implements (NBEP 7 _SUPPORTED_EMM_INTERFACE_VERSION).
inline constexpr int kSupportedInterfaceVersion = 1;

class BaseCUDAMemoryManager {
 public:
  explicit BaseCUDAMemoryManager(Context* context) : context_(context) {}
  virtual ~BaseCUDAMemoryManager() = default;
  BaseCUDAMemoryManager(const BaseCUDAMemoryManager&) = delete;
  BaseCUDAMemoryManager& operator=(const BaseCUDAMemoryManager&) = delete;

  // The owning context; null for the throw-away instance set_memory_manager builds.
  Context* context() const noexcept { return context_; }

  // Device memory of `size` (> 0) bytes in the current context.
  virtual std::shared_ptr<MemoryPointer> memalloc(std::size_t size) = 0;
  // Page-locked host memory; mapped => MappedMemory, else PinnedMemory.
  virtual HostAllocation memhostalloc(std::size_t size, bool mapped = false, bool portable = false,
                                      bool wc = false) = 0;
  // Pins [pointer, pointer + size) of existing host memory kept alive by `owner`.
  virtual HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                                bool mapped = false) = 0;
  // Managed (unified) memory of `size` (> 0) bytes: a ManagedMemory (or its own()) from
  // cuMemAllocManaged with CU_MEM_ATTACH_GLOBAL, or CU_MEM_ATTACH_HOST when !attach_global.
  // Not in NBEP 7's interface (numba#6328): this default throws NotImplementedError.
  virtual std::shared_ptr<MemoryPointer> memallocmanaged(std::size_t size,
                                                         bool attach_global = true);
  virtual void initialize() = 0;
  virtual IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) = 0;
  virtual MemoryInfo get_memory_info() = 0;
  virtual void reset() = 0;
  virtual CleanupGuard defer_cleanup() = 0;
  virtual int interface_version() const = 0;

 protected:
  // context()->driver(); throws emm::Error when there is no context (version probe).
  Driver& driver() const;

 private:
  Context* context_;
};

}  // namespace emm
