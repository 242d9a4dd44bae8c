// emm/context.hpp — Context: one device's primary context, and how the host drives a plugin.
//
// A Context constructs exactly one memory-manager instance, passing itself (LIFE-1), and
// delegates to it (spec 2.5):
//   memalloc(0)            -> a null pointer of size 0; the plugin is not called (ALLOC-4)
//   memalloc(n)            -> plugin.memalloc(n), exceptions unchanged (ALLOC-9)
//   memallocmanaged(0, g)  -> a null pointer of size 0; the plugin is not called (as memalloc)
//   memallocmanaged(n, g)  -> plugin.memallocmanaged(n, g), exceptions unchanged (a plugin
//                             without managed memory throws NotImplementedError)
//   memhostalloc / mempin  -> plugin; mempin(mapped) on a device that cannot map host memory
//                             throws UnsupportedError first (ALLOC-8)
//   get_ipc_handle         -> plugin; without CUDA IPC throws UnsupportedError first (IPC-6)
//   defer_cleanup()        -> plugin guard (outer), then the context's queue (inner) (DEFER-1)
//   reset()                -> plugin.reset(), modules cleared, context queue flushed (CTX-3)
// prepare_for_use() (every activation, e.g. Runtime::get_context) makes the context current
// and calls initialize(); every allocation path initializes first (LIFE-3).
// Streams, events and modules are created here and destroyed through the context's own queue,
// never through the plugin (CTX-1). With a plugin in use the host calls neither cuMemAlloc nor
// cuMemFree (CTX-2).
//
// Locking: the context's own state (its queue, modules, initialised flag) is guarded by
// internal mutexes, so concurrent calls on one context are safe. Calls into the plugin are
// *not* serialised: a plugin is called concurrently exactly as often as its callers do so,
// and certifies that it copes (ALLOC-10) or documents that it is not thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emm/base_memory_manager.hpp"
#include "emm/driver.hpp"
#include "emm/event.hpp"
#include "emm/module.hpp"
#include "emm/pending_deallocs.hpp"
#include "emm/stream.hpp"

namespace emm {

class Runtime;
using ManagerFactory = std::function<std::unique_ptr<BaseCUDAMemoryManager>(Context*)>;

class Context {
 public:
  // Made by Runtime. Constructs the plugin through `factory` (the context is not made current
  // for the constructor: LIFE-4).
  Context(Runtime& runtime, int device, CUcontext handle, const ManagerFactory& factory,
          DeallocConfig config);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Runtime& runtime() const noexcept { return runtime_; }
  Driver& driver() const noexcept { return driver_; }
  int device() const noexcept { return device_; }
  CUcontext handle() const noexcept { return handle_; }
  DeviceIdentity device_identity() const noexcept { return identity_; }
  bool can_map_host_memory() const noexcept { return can_map_host_memory_; }

  BaseCUDAMemoryManager& memory_manager() const noexcept { return *memory_manager_; }

  // Makes this context current on the calling thread, then calls the plugin's initialize().
  void prepare_for_use();
  // Makes this context current on the calling thread (no initialize()).
  void make_current();

  std::shared_ptr<MemoryPointer> memalloc(std::size_t bytesize);
  std::shared_ptr<MemoryPointer> memallocmanaged(std::size_t bytesize, bool attach_global = true);
  HostAllocation memhostalloc(std::size_t bytesize, bool mapped = false, bool portable = false,
                              bool wc = false);
  HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                        bool mapped = false);
  MemoryInfo get_memory_info();
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory);
  // Maps another process's allocation (cuIpcOpenMemHandle); not through the plugin. Returns
  // the mapping's first offset + size bytes, with no finalizer: IpcHandle::close() unmaps it.
  // Throws IpcRangeError, with nothing left mapped, when [offset, offset + size) is not inside
  // the block the driver mapped (cuMemGetAddressRange of the mapping).
  std::shared_ptr<MemoryPointer> open_ipc_handle(const CUipcMemHandle& handle, std::size_t offset,
                                                 std::size_t size);
  CleanupGuard defer_cleanup();
  void reset();

  std::shared_ptr<Stream> create_stream(unsigned flags = CU_STREAM_NON_BLOCKING);
  std::shared_ptr<Event> create_event(unsigned flags = CU_EVENT_DEFAULT);
  // Loads a module kept by the context until reset() or destruction.
  std::shared_ptr<Module> load_module(const void* image);
  std::size_t module_count() const;

  // The context's own queue (streams, events, modules).
  PendingDeallocs& deallocations() const noexcept { return *deallocations_; }
  bool supports_ipc() const noexcept;

 private:
  void ensure_initialized();

  Runtime& runtime_;
  Driver& driver_;
  int device_;
  CUcontext handle_;
  DeviceIdentity identity_;
  bool can_map_host_memory_;
  std::shared_ptr<PendingDeallocs> deallocations_;
  std::unique_ptr<BaseCUDAMemoryManager> memory_manager_;
  std::atomic<bool> initialized_{false};
  std::mutex init_mutex_;
  mutable std::mutex modules_mutex_;  // guards modules_, loaded_, streams_ and events_
  std::vector<std::shared_ptr<Module>> modules_;
  // Streams, events and modules the caller may still hold when the context goes (a module
  // outlives reset() while held): destroyed then, as the driver destroys a primary context's
  // objects (their own destructors then find no queue).
  std::vector<std::weak_ptr<Module>> loaded_;
  std::vector<std::weak_ptr<Stream>> streams_;
  std::vector<std::weak_ptr<Event>> events_;
};

}  // namespace emm
