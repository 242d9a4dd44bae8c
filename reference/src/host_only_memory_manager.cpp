#include "emm/host_only_memory_manager.hpp"

#include <exception>
#include <vector>

#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/driver.hpp"
#include "emm/errors.hpp"
#include "emm/managed_memory.hpp"
#include "emm/runtime.hpp"

namespace emm {

HostOnlyCUDAMemoryManager::HostOnlyCUDAMemoryManager(Context* context)
    : BaseCUDAMemoryManager(context),
      state_(std::make_shared<State>(context != nullptr ? context->runtime().dealloc_config()
                                                        : DeallocConfig{})) {}

HostOnlyCUDAMemoryManager::~HostOnlyCUDAMemoryManager() {
  // Finalizers that run later find the state gone and do nothing: release everything now.
  try {
    release_all();
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception("HostOnlyCUDAMemoryManager destructor", error.what());
  }
}

PendingDeallocs& HostOnlyCUDAMemoryManager::deallocations() noexcept {
  return state_->deallocations;
}

std::size_t HostOnlyCUDAMemoryManager::live_allocation_count() const {
  std::lock_guard lock(state_->mutex);
  return state_->allocations.size();
}

void HostOnlyCUDAMemoryManager::track(std::uintptr_t key,
                                      const std::shared_ptr<MemoryPointer>& memory) {
  std::lock_guard lock(state_->mutex);
  state_->allocations[key] = State::Tracked{memory, {}};
}

void HostOnlyCUDAMemoryManager::track(std::uintptr_t key,
                                      const std::shared_ptr<PinnedMemory>& memory) {
  std::lock_guard lock(state_->mutex);
  state_->allocations[key] = State::Tracked{{}, memory};
}

Finalizer HostOnlyCUDAMemoryManager::deferred_finalizer(std::uintptr_t key,
                                                        std::function<void()> destructor,
                                                        std::size_t size) {
  // Runs once (MemoryPointer guarantees it), so the destructor can be moved into the queue.
  return [weak = std::weak_ptr<State>(state_), key, destructor = std::move(destructor),
          size]() mutable {
    auto state = weak.lock();
    if (!state) return;  // LIFE-8: the manager is gone and released this memory already
    {
      std::lock_guard lock(state->mutex);
      state->allocations.erase(key);
    }
    state->deallocations.add_item(std::move(destructor), size);
  };
}

namespace {

// free(), unless the finalizer has run (here or on another thread, even between the check and
// the call).
template <class Memory>
void free_unless_finalized(Memory& memory) {
  if (!memory.finalizer_alive()) return;
  try {
    memory.free();
  } catch (const PointerLifetimeError&) {
    // Finalized by another thread after the check: what free() would have done is done.
  }
}

}  // namespace

void HostOnlyCUDAMemoryManager::release_all() {
  std::vector<std::shared_ptr<MemoryPointer>> pointers;
  std::vector<std::shared_ptr<PinnedMemory>> pinned;
  {
    std::lock_guard lock(state_->mutex);
    for (auto& [key, tracked] : state_->allocations) {
      if (auto p = tracked.pointer.lock()) pointers.push_back(std::move(p));
      if (auto p = tracked.pinned.lock()) pinned.push_back(std::move(p));
    }
    state_->allocations.clear();
  }
  // Run the finalizers outside the lock: they queue (or unpin) through the state. Another thread
  // may run one meanwhile (a MappedMemory's last OwnedPointer dropped: refct 0 frees it while we
  // hold the pointer), so free() finding it already run is not an error here.
  for (auto& p : pointers) free_unless_finalized(*p);
  for (auto& p : pinned) free_unless_finalized(*p);
  state_->deallocations.clear();
}

HostAllocation HostOnlyCUDAMemoryManager::memhostalloc(std::size_t size, bool mapped, bool portable,
                                                       bool wc) {
  Driver& d = driver();
  const unsigned flags = (mapped ? CU_MEMHOSTALLOC_DEVICEMAP : 0u) |
                         (portable ? CU_MEMHOSTALLOC_PORTABLE : 0u) |
                         (wc ? CU_MEMHOSTALLOC_WRITECOMBINED : 0u);
  auto allocate = [&d, size, flags] { return d.mem_host_alloc(size, flags); };
  // NBEP 7: the out-of-memory retry applies only to mapped allocations.
  void* pointer = mapped ? attempt_allocation(allocate) : allocate();
  const auto key = reinterpret_cast<std::uintptr_t>(pointer);
  auto destructor = [&d, pointer] { d.mem_free_host(pointer); };
  try {
    if (mapped) {
      auto memory = std::make_shared<MappedMemory>(context(), pointer, size, nullptr,
                                                   deferred_finalizer(key, destructor, size));
      track(key, memory);
      return HostAllocation::mapped(memory->own());
    }
    // Numba queues pinned frees with an unset size (they count towards the item limit only).
    auto memory = std::make_shared<PinnedMemory>(context(), pointer, size, nullptr,
                                                 deferred_finalizer(key, destructor, 0));
    track(key, memory);
    return HostAllocation::pinned(memory);
  } catch (...) {
    d.mem_free_host(pointer);
    throw;
  }
}

HostAllocation HostOnlyCUDAMemoryManager::mempin(std::shared_ptr<void> owner, void* pointer,
                                                 std::size_t size, bool mapped) {
  Driver& d = driver();
  const unsigned flags = mapped ? CU_MEMHOSTREGISTER_DEVICEMAP : 0u;
  auto pin = [&d, pointer, size, flags] { d.mem_host_register(pointer, size, flags); };
  if (mapped) {
    attempt_allocation(pin);
  } else {
    pin();
  }
  const auto key = reinterpret_cast<std::uintptr_t>(pointer);
  // ALLOC-7: unpin as soon as finalization is requested, bypassing the queue (even inside
  // defer_cleanup), so the same range can be pinned again at once (numba#3508).
  Finalizer unpin = [weak = std::weak_ptr<State>(state_), key, &d, pointer] {
    if (auto state = weak.lock()) {
      std::lock_guard lock(state->mutex);
      state->allocations.erase(key);
    }
    d.mem_host_unregister(pointer);
  };
  try {
    if (mapped) {
      auto memory = std::make_shared<MappedMemory>(context(), pointer, size, std::move(owner),
                                                   std::move(unpin));
      track(key, memory);
      return HostAllocation::mapped(memory->own());
    }
    auto memory = std::make_shared<PinnedMemory>(context(), pointer, size, std::move(owner),
                                                 std::move(unpin));
    track(key, memory);
    return HostAllocation::pinned(memory);
  } catch (...) {
    d.mem_host_unregister(pointer);
    throw;
  }
}

std::shared_ptr<MemoryPointer> HostOnlyCUDAMemoryManager::memallocmanaged(std::size_t size,
                                                                          bool attach_global) {
  Driver& d = driver();
  const unsigned flags = attach_global ? CU_MEM_ATTACH_GLOBAL : CU_MEM_ATTACH_HOST;
  const CUdeviceptr pointer =
      attempt_allocation([&d, size, flags] { return d.mem_alloc_managed(size, flags); });
  const auto key = static_cast<std::uintptr_t>(pointer);
  auto destructor = [&d, pointer] { d.mem_free(pointer); };
  std::shared_ptr<ManagedMemory> memory;
  try {
    memory = std::make_shared<ManagedMemory>(context(), pointer, size, nullptr,
                                             deferred_finalizer(key, destructor, size));
  } catch (...) {
    d.mem_free(pointer);
    throw;
  }
  // From here the finalizer owns the memory: if tracking throws, it queues the free.
  track(key, memory);
  // MANAGED-3: own() keeps refct at 1 at rest, so a view cannot free it early.
  return memory->own();
}

void HostOnlyCUDAMemoryManager::initialize() {}

void HostOnlyCUDAMemoryManager::reset() { release_all(); }

CleanupGuard HostOnlyCUDAMemoryManager::defer_cleanup() { return state_->deallocations.disable(); }

}  // namespace emm
