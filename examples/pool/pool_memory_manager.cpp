#include "emm/examples/pool_memory_manager.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/examples/slab_allocator.hpp"
#include "emm/get_ipc_handle_mixin.hpp"

namespace emm::examples {
namespace detail {

// Everything the pool owns, shared with the finalizers of the pointers it hands out. They hold
// it weakly: a finalizer that finds it gone, or finds a newer generation (reset() released the
// slabs since), has nothing to do (LIFE-8).
struct PoolState {
  PoolState(Context* owner, PoolMemoryManager::Options pool_options)
      : context(owner), options(pool_options) {}

  // cuMemFree needs no current context (the driver finds the allocation's own), so this is
  // safe from a finalizer on any thread.
  void free_slab_memory(CUdeviceptr base) const { context->driver().mem_free(base); }

  bool is_standard(const SlabAllocator::Slab& slab) const noexcept {
    return slab.size == options.slab_size;
  }

  // Called with the lock held when `slab` has just become empty.
  void on_slab_empty(SlabAllocator::Slab* slab) {
    if (defer_depth > 0) return;  // held back while a defer_cleanup guard lives
    if (is_standard(*slab) && slabs.empty_slab_count() <= options.retained_empty_slabs) return;
    release_slab(slab);
  }

  // Gives back empty slabs, keeping up to `keep` empty standard ones. Lock held.
  void trim(std::size_t keep) {
    std::exception_ptr first_error;
    for (SlabAllocator::Slab* slab : slabs.empty_slabs()) {
      if (is_standard(*slab) && slabs.empty_slab_count() <= keep) continue;
      try {
        release_slab(slab);
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
    }
    if (first_error) std::rethrow_exception(first_error);
  }

  void release_slab(SlabAllocator::Slab* slab) {
    const CUdeviceptr base = slab->base;
    slabs.remove_slab(slab);  // forgotten first: the pool stays consistent if cuMemFree fails
    free_slab_memory(base);
  }

  // Forgets every slab (reset, destruction) and returns their bases. Lock held.
  std::vector<CUdeviceptr> take_all_slabs() {
    std::vector<CUdeviceptr> bases;
    for (const SlabAllocator::Slab* slab : slabs.slabs()) bases.push_back(slab->base);
    slabs.clear();
    ++generation;
    return bases;
  }

  Context* context;  // null for the version probe
  const PoolMemoryManager::Options options;
  mutable std::mutex mutex;
  SlabAllocator slabs;
  std::uint64_t generation = 0;
  int defer_depth = 0;
};

}  // namespace detail

namespace {

using detail::PoolState;

// What memalloc returns: a plain MemoryPointer (refct 1) whose finalizer gives its block back.
// The block and the state live in the pointer itself rather than in the finalizer's captures,
// so the std::function holds only `this` and no heap allocation is made for it; the
// destructor runs the finalizer while those members still exist.
class PoolPointer final : public MemoryPointer {
 public:
  PoolPointer(Context* context, std::size_t size, std::weak_ptr<PoolState> state,
              SlabAllocator::Block* block, std::uint64_t generation)
      : MemoryPointer(context, block->address, size, nullptr, [this] { give_back(); }),
        state_(std::move(state)),
        block_(block),
        generation_(generation) {}
  ~PoolPointer() override { run_finalizer_once(); }

 private:
  void give_back() {
    const std::shared_ptr<PoolState> state = state_.lock();
    if (!state) return;  // the plugin is gone and released every slab (LIFE-8)
    std::lock_guard lock(state->mutex);
    if (state->generation != generation_) return;  // reset() released it already (LIFE-8)
    if (SlabAllocator::Slab* empty = state->slabs.free(block_)) state->on_slab_empty(empty);
  }

  std::weak_ptr<PoolState> state_;
  SlabAllocator::Block* block_;
  std::uint64_t generation_;
};

void release_slabs(PoolState& state, const std::vector<CUdeviceptr>& bases) {
  std::exception_ptr first_error;
  for (CUdeviceptr base : bases) {
    try {
      state.free_slab_memory(base);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

std::size_t round_up_to(std::size_t size, std::size_t multiple) {
  return (size + multiple - 1) / multiple * multiple;
}

}  // namespace

PoolMemoryManager::PoolMemoryManager(Context* context) : PoolMemoryManager(context, Options{}) {}

PoolMemoryManager::PoolMemoryManager(Context* context, Options options)
    : HostOnlyCUDAMemoryManager(context),
      options_(options),
      pool_(std::make_shared<PoolState>(context, options)) {
  if (options_.slab_size == 0 || options_.slab_size % SlabAllocator::kAlignment != 0) {
    throw InvalidArgumentError("PoolMemoryManager: slab_size must be a non-zero multiple of " +
                               std::to_string(SlabAllocator::kAlignment) + " bytes, not " +
                               std::to_string(options_.slab_size));
  }
}

PoolMemoryManager::~PoolMemoryManager() {
  if (context() == nullptr) return;  // the version probe never allocated
  std::vector<CUdeviceptr> bases;
  {
    std::lock_guard lock(pool_->mutex);
    bases = pool_->take_all_slabs();
  }
  try {
    release_slabs(*pool_, bases);
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception("PoolMemoryManager destructor", error.what());
  }
}

std::shared_ptr<MemoryPointer> PoolMemoryManager::memalloc(std::size_t size) {
  if (size > SlabAllocator::kMaxBlockSize) {
    throw CudaDriverError(CUDA_ERROR_OUT_OF_MEMORY, "PoolMemoryManager::memalloc",
                          "a request of " + std::to_string(size) + " bytes exceeds any device");
  }
  const std::size_t need = SlabAllocator::round_up(std::max<std::size_t>(size, 1));
  PoolState& state = *pool_;
  SlabAllocator::Block* block = nullptr;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(state.mutex);
    block = state.slabs.allocate(need);
    generation = state.generation;
  }

  if (block == nullptr) {
    // Grow by one slab. cuMemAlloc runs unlocked so other threads keep using the pool.
    Driver& driver = this->driver();
    std::size_t slab_size =
        need <= options_.slab_size ? options_.slab_size : round_up_to(need, options_.slab_size);
    CUdeviceptr base = 0;
    try {
      base = driver.mem_alloc(slab_size);
    } catch (const CudaDriverError& error) {
      if (error.code() != CUDA_ERROR_OUT_OF_MEMORY) throw;
      // Give back what the pool holds unused, then ask once more for no more than needed.
      {
        std::lock_guard lock(state.mutex);
        if (state.defer_depth == 0) state.trim(0);
      }
      slab_size = need;
      base = driver.mem_alloc(slab_size);  // a second failure reaches the caller (ALLOC-3)
    }
    if (base % SlabAllocator::kAlignment != 0) {
      driver.mem_free(base);
      throw Error("PoolMemoryManager: cuMemAlloc returned a pointer not aligned to " +
                  std::to_string(SlabAllocator::kAlignment) + " bytes");
    }
    std::lock_guard lock(state.mutex);
    block = state.slabs.allocate_from(state.slabs.add_slab(base, slab_size), need);
    generation = state.generation;
  }

  try {
    return std::make_shared<PoolPointer>(context(), size, pool_, block, generation);
  } catch (...) {
    std::lock_guard lock(state.mutex);
    if (state.generation == generation) {
      if (SlabAllocator::Slab* empty = state.slabs.free(block)) state.on_slab_empty(empty);
    }
    throw;
  }
}

void PoolMemoryManager::initialize() {
  // NBEP 7: an override calls the parent's. The pool grows on demand, so there is nothing
  // else to set up, and calling this again changes nothing (LIFE-2).
  HostOnlyCUDAMemoryManager::initialize();
}

IpcHandle PoolMemoryManager::get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) {
  const CUdeviceptr pointer = memory->device_pointer();
  CUdeviceptr slab_base = 0;
  {
    std::lock_guard lock(pool_->mutex);
    if (const SlabAllocator::Slab* slab = pool_->slabs.find_slab(pointer)) slab_base = slab->base;
  }
  // Memory the pool did not allocate (a foreign view): its own cuMemAlloc block's handle.
  if (slab_base == 0) return make_ipc_handle_from_address_range(*context(), memory);
  // IPC-2: every block of a slab shares the slab's driver handle; the offset tells them apart.
  const CUipcMemHandle handle = driver().ipc_get_mem_handle(slab_base);
  return IpcHandle(memory, handle, memory->size(), context()->device_identity(),
                   pointer - slab_base);
}

MemoryInfo PoolMemoryManager::get_memory_info() {
  const MemoryInfo device = driver().mem_get_info();
  std::size_t pool_free = 0;
  {
    std::lock_guard lock(pool_->mutex);
    pool_free = pool_->slabs.free_bytes();
  }
  // INFO-1: what this pool can still hand out. Its unused slab bytes are part of the device's
  // used memory, so the sum never exceeds total (min() covers a racing second process).
  return MemoryInfo{std::min(device.free + pool_free, device.total), device.total};
}

void PoolMemoryManager::reset() {
  HostOnlyCUDAMemoryManager::reset();  // NBEP 7: an override calls the parent's
  std::vector<CUdeviceptr> bases;
  {
    std::lock_guard lock(pool_->mutex);
    bases = pool_->take_all_slabs();  // blocks still referenced become inert (LIFE-7, LIFE-8)
  }
  release_slabs(*pool_, bases);
}

CleanupGuard PoolMemoryManager::defer_cleanup() {
  // DEFER-3: hold the parent's guard for the whole scope, so host frees are deferred too.
  CleanupGuard parent = HostOnlyCUDAMemoryManager::defer_cleanup();
  {
    std::lock_guard lock(pool_->mutex);
    ++pool_->defer_depth;
  }
  std::weak_ptr<PoolState> weak = pool_;
  return CleanupGuard(
      [weak] {
        const std::shared_ptr<PoolState> state = weak.lock();
        if (!state) return;
        std::lock_guard lock(state->mutex);
        if (--state->defer_depth == 0) state->trim(state->options.retained_empty_slabs);
      },
      std::move(parent));
}

PoolStatistics PoolMemoryManager::statistics() const {
  std::lock_guard lock(pool_->mutex);
  const SlabAllocator& slabs = pool_->slabs;
  return PoolStatistics{slabs.slab_count(),       slabs.slab_bytes(),
                        slabs.allocated_bytes(),  slabs.allocated_blocks(),
                        slabs.free_block_count(), slabs.largest_free_block(),
                        pool_->defer_depth};
}

}  // namespace emm::examples
