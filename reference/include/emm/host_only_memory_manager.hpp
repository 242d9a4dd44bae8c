// emm/host_only_memory_manager.hpp — HostOnlyCUDAMemoryManager (NBEP 7).
//
// Implements the host side of a plugin — memhostalloc, mempin, memallocmanaged, initialize,
// reset and defer_cleanup — with its own `allocations` table and pending-deallocation queue, so a
// plugin author writes only memalloc, get_memory_info, get_ipc_handle and interface_version.
//
// NBEP 7 rules for subclasses (checked by DEFER-3 and LIFE-7):
//  * an override of initialize() or reset() calls this class's version;
//  * an override of defer_cleanup() holds this class's guard for its whole scope:
//        emm::CleanupGuard defer_cleanup() override {
//          auto parent = HostOnlyCUDAMemoryManager::defer_cleanup();
//          pool_.hold_slabs();
//          return emm::CleanupGuard([this] { pool_.release_slabs(); }, std::move(parent));
//        }
//
// Differences from Numba (docs/differences.md): `portable` and `wc` reach cuMemHostAlloc;
// every host allocation (pinned ones too) is tracked so reset() releases it; reset() frees
// allocations still referenced by callers at once (their finalizers then do nothing), as
// Numba's does through its weak proxies.
//
// Out of memory: memhostalloc/mempin retry once after a flush, and only when mapped;
// memallocmanaged always does (as Numba's). Managed memory is freed with cuMemFree through the
// queue, like device memory.
// mempin's finalizer unpins at once, even inside defer_cleanup (ALLOC-7).
//
// Thread-safety: all members are safe to call concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "emm/base_memory_manager.hpp"
#include "emm/pending_deallocs.hpp"

namespace emm {

class HostOnlyCUDAMemoryManager : public BaseCUDAMemoryManager {
 public:
  explicit HostOnlyCUDAMemoryManager(Context* context);
  ~HostOnlyCUDAMemoryManager() override;

  HostAllocation memhostalloc(std::size_t size, bool mapped = false, bool portable = false,
                              bool wc = false) override;
  HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                        bool mapped = false) override;
  // cuMemAllocManaged with the attach flag; returns ManagedMemory::own(), tracked for reset().
  std::shared_ptr<MemoryPointer> memallocmanaged(std::size_t size,
                                                 bool attach_global = true) override;
  // Nothing to do for the host side; subclasses call it from their initialize().
  void initialize() override;
  // Frees every allocation this manager made that is still alive, then flushes the queue.
  void reset() override;
  // Disables this manager's pending-deallocation queue while the guard lives.
  CleanupGuard defer_cleanup() override;

  // Introspection for tests and for subclasses that reuse the queue.
  PendingDeallocs& deallocations() noexcept;
  std::size_t live_allocation_count() const;

 protected:
  // Shared with finalizers, which may outlive this manager (LIFE-8): a finalizer that finds
  // the state gone knows reset()/destruction already released its memory.
  struct State {
    explicit State(DeallocConfig config) : deallocations(config) {}
    std::mutex mutex;
    // What reset() must release: every allocation made here that may still be alive.
    struct Tracked {
      std::weak_ptr<MemoryPointer> pointer;
      std::weak_ptr<PinnedMemory> pinned;
    };
    std::unordered_map<std::uintptr_t, Tracked> allocations;
    PendingDeallocs deallocations;
  };

  // Calls `allocate`; on CUDA_ERROR_OUT_OF_MEMORY flushes the queue and calls it once more.
  // Other errors, and a second failure, propagate unchanged (DEALLOC-6).
  template <class F>
  auto attempt_allocation(F&& allocate) -> decltype(allocate());

  // Registers `memory` (weakly) under `key` so reset() can release it.
  void track(std::uintptr_t key, const std::shared_ptr<MemoryPointer>& memory);
  void track(std::uintptr_t key, const std::shared_ptr<PinnedMemory>& memory);
  // Runs the finalizer of every tracked allocation still alive (their memory is released at
  // once; the callers' later releases do nothing), then flushes the queue.
  void release_all();
  // A finalizer that forgets `key` and queues `destructor` with `size`; does nothing if this
  // manager's state is gone or the allocation was already released by reset().
  Finalizer deferred_finalizer(std::uintptr_t key, std::function<void()> destructor,
                               std::size_t size);
  const std::shared_ptr<State>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<State> state_;
};

}  // namespace emm

#include "emm/detail/host_only_memory_manager_impl.hpp"
