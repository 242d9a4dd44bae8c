// emm/examples/stream_ordered_memory_manager.hpp — StreamOrderedMemoryManager: a plugin over
// CUDA's stream-ordered allocator (a CUmemoryPool of its own, cuMemAllocFromPoolAsync).
//
// initialize() creates, once, a memory pool for the context's device (pinned device memory,
// POSIX file-descriptor export if the driver allows it) and a non-blocking stream the plugin
// owns. The EMM interface is synchronous, so every operation waits for its stream:
//   memalloc(n) = cuMemAllocFromPoolAsync(n, pool, stream) + cuStreamSynchronize(stream)
//   free        = cuMemFreeAsync(p, stream) + cuStreamSynchronize(stream), queued through
//                 HostOnlyCUDAMemoryManager's pending-deallocation queue (so it is deferred
//                 inside defer_cleanup and flushed before an out-of-memory retry)
//   reset()     = the parent's reset (frees every live allocation) + cuMemPoolTrimTo(pool, 0)
// The pool keeps up to Options::release_threshold (64 MiB) of freed memory for reuse.
//
//   emm::Runtime runtime(driver);
//   runtime.set_memory_manager<emm::examples::StreamOrderedMemoryManager>();
//   auto p = runtime.get_context().memalloc(1 << 20);
//
// IPC is not supported (IPC-7): the legacy cuIpcGetMemHandle does not export memory from a
// CUmemoryPool, and emm::IpcHandle carries exactly that 64-byte legacy handle. Pool memory is
// shared through cuMemPoolExportToShareableHandle + cuMemPoolExportPointer instead, which the
// EMM interface has no field for. get_ipc_handle throws NotImplementedError saying so.
//
// Frees are ordered on the plugin's stream, not on the device: as with any stream-ordered
// allocator, work on other streams that still uses a buffer must be synchronised by the caller
// before the buffer's last reference is dropped (cuMemFree would have synchronised the device).
//
// Thread-safety: every member may be called concurrently (CUDA's stream and pool calls are
// thread-safe; creating the pool and stream is serialised by a mutex).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

#include "emm/host_only_memory_manager.hpp"

namespace emm::examples {

class StreamOrderedMemoryManager : public HostOnlyCUDAMemoryManager {
 public:
  struct Options {
    // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: bytes the pool may keep reserved across
    // synchronisations. CUDA's default, 0, gives freed memory back at every synchronisation, so
    // every alloc/free pair maps and unmaps memory (about 84 us on an H200, against 4.4 us with
    // 64 MiB kept). The cost: cuMemGetInfo counts up to this many unused bytes as used.
    std::size_t release_threshold = std::size_t{64} << 20;
  };

  explicit StreamOrderedMemoryManager(Context* context);
  StreamOrderedMemoryManager(Context* context, Options options);
  ~StreamOrderedMemoryManager() override;  // frees what is left, then the stream and pool

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override;
  void initialize() override;
  // Always throws NotImplementedError (see above).
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override;
  MemoryInfo get_memory_info() override;
  void reset() override;
  int interface_version() const override { return kSupportedInterfaceVersion; }

  // The pool's export handle type: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, or
  // CU_MEM_HANDLE_TYPE_NONE where the driver refused it. Meaningful after initialize().
  CUmemAllocationHandleType pool_handle_type() const;

 private:
  struct Resources {
    CUmemoryPool pool = nullptr;
    CUstream stream = nullptr;
  };
  // The pool and stream, created on first use (initialize() or a memalloc after reset()).
  Resources resources();

  Options options_;
  mutable std::mutex mutex_;
  Resources resources_;
  CUmemAllocationHandleType handle_type_ = CU_MEM_HANDLE_TYPE_NONE;
};

}  // namespace emm::examples
