#include "baseline_pool.hpp"

#include <exception>
#include <utility>

#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/get_ipc_handle_mixin.hpp"
#include "emm/runtime.hpp"

namespace emm::zoo {

BaselinePool::BaselinePool(Context* context, std::shared_ptr<SlabPool> pool)
    : HostOnlyCUDAMemoryManager(context), pool_(std::move(pool)) {
  // REG-2/LIFE-4: no CUDA call here; keep the driver alive for late finalizers (LIFE-8).
  if (context != nullptr) pool_->attach(context->runtime().shared_driver());
}

std::shared_ptr<MemoryPointer> BaselinePool::memalloc(std::size_t size) {
  const Block block = pool_->allocate(size);
  try {
    // ALLOC-5: hand out an OwnedPointer, never the bare AutoFreePointer.
    return std::make_shared<AutoFreePointer>(context(), block.pointer, size, nullptr,
                                             block_finalizer(block))
        ->own();
  } catch (...) {
    pool_->give_back(block);
    throw;
  }
}

Finalizer BaselinePool::block_finalizer(const Block& block) {
  return [pool = pool_, block] { pool->give_back(block); };
}

void BaselinePool::initialize() {
  // NBEP 7: a HostOnly subclass calls the parent's initialize(). The pool needs nothing more:
  // slabs are made on demand, so initialize() stays idempotent (LIFE-2).
  HostOnlyCUDAMemoryManager::initialize();
}

void BaselinePool::reset() {
  HostOnlyCUDAMemoryManager::reset();
  pool_->release_all();  // LIFE-7; outstanding blocks' finalizers become no-ops (LIFE-8)
}

CleanupGuard BaselinePool::defer_cleanup() {
  // DEFER-3: hold the parent's guard for the whole scope.
  CleanupGuard parent = HostOnlyCUDAMemoryManager::defer_cleanup();
  pool_->hold();
  return CleanupGuard(
      [pool = pool_] {
        try {
          pool->unhold();
        } catch (const std::exception& error) {
          Diagnostics::ignored_exception("BaselinePool defer_cleanup exit", error.what());
        }
      },
      std::move(parent));
}

MemoryInfo BaselinePool::get_memory_info() {
  // What a caller can still get: the device's free memory plus the pool's unused bytes.
  const MemoryInfo device = driver().mem_get_info();
  const PoolStatistics statistics = pool_->statistics();
  return MemoryInfo{.free = device.free + statistics.free_bytes, .total = device.total};
}

IpcHandle BaselinePool::get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) {
  // The slab is the cuMemAlloc block: the driver's range gives base and offset (IPC-1/2).
  return make_ipc_handle_from_address_range(*context(), memory);
}

MemoryInfo BaselineNoOptional::get_memory_info() {
  throw NotImplementedError(
      "get_memory_info: this plugin does not report memory info (Capabilities::memory_info "
      "is false)");
}

IpcHandle BaselineNoOptional::get_ipc_handle(const std::shared_ptr<MemoryPointer>&) {
  throw NotImplementedError(
      "get_ipc_handle: this plugin does not support CUDA IPC (Capabilities::ipc is false)");
}

std::shared_ptr<MemoryPointer> BaselineNoOptional::memallocmanaged(std::size_t, bool) {
  throw NotImplementedError(
      "memallocmanaged: this plugin does not allocate managed memory "
      "(Capabilities::managed_memory is false)");
}

}  // namespace emm::zoo
