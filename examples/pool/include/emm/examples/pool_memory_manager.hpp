// emm/examples/pool_memory_manager.hpp — PoolMemoryManager: a sub-allocating device pool plugin.
//
// Device memory comes from cuMemAlloc in slabs (2 MiB by default; a request larger than that
// gets a slab of its own, rounded up to a multiple of 2 MiB) and is handed out in blocks by a
// SlabAllocator: every block is 256-byte aligned like cuMemAlloc's (ALLOC-11), free blocks
// coalesce at once, and empty slabs are kept for reuse up to a release threshold in bytes
// (Options::release_threshold), beyond which an emptied slab goes back to the driver.
//
//   emm::Runtime runtime(driver);
//   runtime.set_memory_manager<emm::examples::PoolMemoryManager>();
//   auto p = runtime.get_context().memalloc(1000);   // a block in a 2 MiB slab
//
// The EMM contract, clause by clause:
//  * memalloc returns a plain MemoryPointer (refct 1) whose finalizer returns the block; the
//    pointer keeps the pool state alive and remembers its generation, so a pointer released
//    after reset() or after the plugin is gone does nothing (LIFE-8). Freed blocks of up to
//    32 KiB are parked in a bounded cache of the freeing thread and reused by its next memalloc
//    of that size without a lock; parked blocks count as free (INFO-1, statistics()) and go
//    back to the pool when the cache is full, on thread exit and on out-of-memory; reset()
//    makes every cache inert (LIFE-7).
//  * get_memory_info (pool level, INFO-1): total = the device's total memory; free = the
//    device's free memory + the bytes the pool holds but has not handed out. Allocating n bytes
//    lowers free by n rounded up to 256, whether or not a new slab was needed.
//  * get_ipc_handle (IPC-1/2): the handle of the view's slab (cuIpcGetMemHandle of the slab
//    base), offset = view pointer - slab base, size = view size, source_info = the device.
//  * defer_cleanup holds HostOnlyCUDAMemoryManager's guard (DEFER-3) and, while any guard is
//    alive, keeps every slab that becomes empty; when the last guard ends, empty slabs beyond
//    the release threshold go back to the driver.
//  * reset() releases every slab, in use or not (LIFE-7); initialize() only calls the parent,
//    so it is idempotent (LIFE-2); the constructor makes no driver call (REG-2, LIFE-4).
//  * Out of memory: the driver's CudaDriverError(CUDA_ERROR_OUT_OF_MEMORY) reaches the caller
//    after the pool has given back every empty slab (the release threshold does not apply),
//    retried once, and found no free block that fits in any arena (ALLOC-3).
//
// Thread-safety: every member may be called concurrently. The pool is split into arenas, each
// with its own lock and slabs; every thread allocates from its home arena (given round-robin on
// its first use of the pool), and a block goes back to the arena it came from. cuMemAlloc runs
// outside every lock; the thread caches are touched only by their own thread. Host allocations
// (memhostalloc, mempin) are the parent's.
#pragma once

#include <cstddef>
#include <memory>

#include "emm/host_only_memory_manager.hpp"

namespace emm::examples {

namespace detail {
struct PoolState;
}

// A snapshot of the pool, for tests, statistics and the README.
struct PoolStatistics {
  std::size_t slab_count = 0;
  std::size_t slab_bytes = 0;       // held from the driver
  std::size_t allocated_bytes = 0;  // handed out (block sizes, rounded to 256)
  std::size_t allocated_blocks = 0;
  std::size_t free_blocks = 0;         // free blocks in the size-class lists
  std::size_t largest_free_block = 0;  // in any one arena
  std::size_t arenas_in_use = 0;       // arenas holding at least one slab
  int defer_depth = 0;                 // live defer_cleanup guards
};

class PoolMemoryManager : public HostOnlyCUDAMemoryManager {
 public:
  // Options::release_threshold's default: 2 GiB (1024 standard slabs), above the 1 GiB of live
  // memory the random-allocations benchmark swings through, so that its slabs are reused rather
  // than given back and taken again. Lower it where other processes share the GPU.
  static constexpr std::size_t kDefaultReleaseThreshold = std::size_t{2} << 30;

  struct Options {
    // Size of a standard slab. Requests up to this size are sub-allocated from standard slabs;
    // larger ones get a slab of their own of round_up(size, slab_size) bytes.
    std::size_t slab_size = std::size_t{2} << 20;
    // Bytes of empty slabs the pool keeps (all arenas together) instead of giving them back to
    // cuMemFree, so that a workload whose live memory goes down and up again reuses its slabs
    // rather than paying cuMemFree (which synchronises the device) and cuMemAlloc each time:
    // like CUDA's cudaMemPoolAttrReleaseThreshold. Kept slabs count as free in
    // get_memory_info(); all of them go back at reset(), on destruction and when cuMemAlloc
    // runs out of memory. 0 gives every emptied slab back at once.
    std::size_t release_threshold = kDefaultReleaseThreshold;
    // Independently locked parts of the pool; threads are spread over them round-robin. 0 picks
    // one per hardware thread, up to 32. 1 gives a single lock and the tightest packing.
    std::size_t arenas = 0;
  };

  explicit PoolMemoryManager(Context* context);
  PoolMemoryManager(Context* context, Options options);
  ~PoolMemoryManager() override;  // gives back every slab still held

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override;
  void initialize() override;
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override;
  MemoryInfo get_memory_info() override;
  void reset() override;
  CleanupGuard defer_cleanup() override;
  int interface_version() const override { return kSupportedInterfaceVersion; }

  // The options in force (arenas resolved from 0 to the number picked).
  const Options& options() const noexcept { return options_; }
  PoolStatistics statistics() const;

 private:
  Options options_;
  std::shared_ptr<detail::PoolState> pool_;
};

}  // namespace emm::examples
