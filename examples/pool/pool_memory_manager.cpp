#include "emm/examples/pool_memory_manager.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "detail/pool_state.hpp"
#include "detail/recycling_allocator.hpp"
#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/examples/slab_allocator.hpp"
#include "emm/get_ipc_handle_mixin.hpp"

namespace emm::examples {
namespace {

using detail::Arena;
using detail::PoolState;
using detail::RecyclingAllocator;
using detail::thread_caches;
using detail::ThreadCache;
using detail::ThreadCaches;

// The most arenas Options::arenas = 0 picks (one per hardware thread up to this).
constexpr std::size_t kMaxAutoArenas = 32;
// The most arenas a caller may ask for.
constexpr std::size_t kMaxArenas = 1024;

// What memalloc returns: a plain MemoryPointer (refct 1) whose finalizer gives its block back.
// The block, its arena and the state live in the pointer itself, and the finalizer is the
// static finalize() on `this` (MemoryPointer's function-and-argument form: no std::function to
// build and destroy per allocation); the destructor runs it while those members still exist. The
// state is kept alive by the allocating thread's cache (`cache`, counted without atomics on that
// thread: see ThreadCache::acquire_pointer), or by `keep_alive` when there is none (a thread
// exiting). The generation says whether the block is still the pool's (LIFE-7, LIFE-8).
class PoolPointer final : public MemoryPointer {
 public:
  PoolPointer(Context* context, std::size_t size, ThreadCache* cache,
              std::shared_ptr<void> keep_alive, PoolState* state, const ThreadCache::Item& item,
              std::uint64_t generation)
      : MemoryPointer(context, item.address, size, nullptr, &PoolPointer::finalize, this),
        cache_(cache),
        keep_alive_(std::move(keep_alive)),
        state_(state),
        arena_(item.arena),
        block_(item.block),
        generation_(generation) {
    if (cache_ != nullptr) cache_->acquire_pointer();
  }
  ~PoolPointer() override {
    run_finalizer_at_destruction();
    if (cache_ != nullptr) cache_->release_pointer();  // may destroy the cache and the state
  }

 private:
  static void finalize(void* self) { static_cast<PoolPointer*>(self)->give_back(); }

  void give_back() {
    PoolState& state = *state_;
    // The pool was reset or destroyed since: it released every slab already (LIFE-7, LIFE-8).
    if (state.generation.load(std::memory_order_acquire) != generation_) return;
    const std::size_t rounded = SlabAllocator::round_up(std::max<std::size_t>(size(), 1));
    const ThreadCache::Item item{arena_, block_, device_pointer()};
    if (rounded <= ThreadCache::kMaxBlockBytes) {
      // Freed on the thread that made it (the common case): straight into that thread's cache,
      // which is of this generation. A reset racing with this leaves the block in an inert
      // cache, which is what it wants.
      if (cache_ != nullptr && cache_->owned_here()) {
        if (cache_->put(item, rounded)) return;
      } else if (ThreadCaches* caches = thread_caches()) {
        if (std::shared_ptr<ThreadCache>* cache = caches->find(state)) {
          if ((*cache)->generation == generation_ && (*cache)->put(item, rounded)) return;
        }
      }
    }
    std::lock_guard lock(arena_->mutex);
    if (state.generation.load(std::memory_order_relaxed) != generation_) return;
    state.free_block(*arena_, block_);
  }

  ThreadCache* cache_;
  std::shared_ptr<void> keep_alive_;
  PoolState* state_;
  Arena* arena_;
  SlabAllocator::Block* block_;
  std::uint64_t generation_;
};

// The pointer memalloc returns for `item`; gives the block back if making it throws.
// `cache` (this thread's, of `generation`) keeps the state alive, else `keep_alive` does.
std::shared_ptr<MemoryPointer> make_pool_pointer(Context* context, PoolState& state,
                                                 std::size_t size, ThreadCache* cache,
                                                 std::shared_ptr<void> keep_alive,
                                                 const ThreadCache::Item& item,
                                                 std::uint64_t generation) {
  try {
    return std::allocate_shared<PoolPointer>(RecyclingAllocator<PoolPointer>(), context, size,
                                             cache, std::move(keep_alive), &state, item,
                                             generation);
  } catch (...) {
    std::lock_guard lock(item.arena->mutex);
    if (state.generation.load(std::memory_order_relaxed) == generation) {
      state.free_block(*item.arena, item.block);
    }
    throw;
  }
}

void release_slabs(PoolState& state, const std::vector<CUdeviceptr>& bases) {
  detail::FirstError first;
  for (CUdeviceptr base : bases) first.run([&] { state.free_slab_memory(base); });
  first.rethrow();
}

std::size_t round_up_to(std::size_t size, std::size_t multiple) {
  return (size + multiple - 1) / multiple * multiple;
}

PoolMemoryManager::Options resolved(PoolMemoryManager::Options options) {
  if (options.slab_size == 0 || options.slab_size % SlabAllocator::kAlignment != 0) {
    throw InvalidArgumentError("PoolMemoryManager: slab_size must be a non-zero multiple of " +
                               std::to_string(SlabAllocator::kAlignment) + " bytes, not " +
                               std::to_string(options.slab_size));
  }
  if (options.arenas > kMaxArenas) {
    throw InvalidArgumentError(
        "PoolMemoryManager: arenas must be at most " + std::to_string(kMaxArenas) +
        " (0 picks one per hardware thread), not " + std::to_string(options.arenas));
  }
  if (options.arenas == 0) {
    options.arenas =
        std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, kMaxAutoArenas);
  }
  return options;
}

}  // namespace

PoolMemoryManager::PoolMemoryManager(Context* context) : PoolMemoryManager(context, Options{}) {}

PoolMemoryManager::PoolMemoryManager(Context* context, Options options)
    : HostOnlyCUDAMemoryManager(context),
      options_(resolved(options)),
      pool_(std::make_shared<PoolState>(context, options_)) {}

PoolMemoryManager::~PoolMemoryManager() {
  if (context() == nullptr) return;  // the version probe never allocated
  const std::vector<CUdeviceptr> bases = pool_->take_all_slabs();
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
  ThreadCaches* caches = thread_caches();
  std::shared_ptr<ThreadCache>* cache = caches != nullptr ? caches->find(state) : nullptr;
  ThreadCache::Item item{};
  if (cache != nullptr && need <= ThreadCache::kMaxBlockBytes && (*cache)->take(need, item)) {
    // A block this thread freed before: no lock, no split (the cache is of this generation).
    return make_pool_pointer(context(), state, size, cache->get(), nullptr, item,
                             (*cache)->generation);
  }

  // This thread's home arena; a thread with no cache (it is exiting) uses arena 0.
  item.arena = cache != nullptr ? &(*cache)->home : state.arenas.front().get();
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(item.arena->mutex);
    item.block = state.allocate(*item.arena, need);
    if (item.block != nullptr) item.address = item.block->address;  // read under the lock
    generation = state.generation.load(std::memory_order_relaxed);
  }

  if (item.block == nullptr) {
    // Grow the arena by one slab. cuMemAlloc runs unlocked so other threads keep allocating.
    Driver& driver = this->driver();
    std::size_t slab_size =
        need <= options_.slab_size ? options_.slab_size : round_up_to(need, options_.slab_size);
    CUdeviceptr base = 0;
    try {
      base = driver.mem_alloc(slab_size);
    } catch (const CudaDriverError& error) {
      if (error.code() != CUDA_ERROR_OUT_OF_MEMORY) throw;
      // Give back what the pool holds unused (every thread's parked blocks included), then ask
      // once more for no more than needed.
      state.flush_thread_caches();
      if (state.defer_depth.load(std::memory_order_acquire) == 0) state.trim_all(0);
      slab_size = need;
      try {
        base = driver.mem_alloc(slab_size);
      } catch (const CudaDriverError& again) {
        if (again.code() != CUDA_ERROR_OUT_OF_MEMORY) throw;
        // The device is full, but another arena may hold a free block that fits.
        item = state.allocate_from_any_arena(need, generation);
        if (item.block == nullptr) throw;  // ALLOC-3: the driver's error reaches the caller
      }
    }
    if (item.block == nullptr) {
      if (base % SlabAllocator::kAlignment != 0) {
        driver.mem_free(base);
        throw Error("PoolMemoryManager: cuMemAlloc returned a pointer not aligned to " +
                    std::to_string(SlabAllocator::kAlignment) + " bytes");
      }
      std::lock_guard lock(item.arena->mutex);
      item.block =
          item.arena->slabs.allocate_from(item.arena->slabs.add_slab(base, slab_size), need);
      item.address = item.block->address;
      generation = state.generation.load(std::memory_order_relaxed);
    }
  }

  // The pointer keeps the pool alive through this thread's cache (counted without atomics).
  if (cache != nullptr && (*cache)->generation == generation) {
    return make_pool_pointer(context(), state, size, cache->get(), nullptr, item, generation);
  }
  return make_pool_pointer(context(), state, size, nullptr, pool_, item, generation);
}

void PoolMemoryManager::initialize() {
  // NBEP 7: an override calls the parent's. The pool grows on demand, so there is nothing
  // else to set up, and calling this again changes nothing (LIFE-2).
  HostOnlyCUDAMemoryManager::initialize();
}

IpcHandle PoolMemoryManager::get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) {
  const CUdeviceptr pointer = memory->device_pointer();
  CUdeviceptr slab_base = 0;
  for (const auto& arena : pool_->arenas) {
    std::lock_guard lock(arena->mutex);
    if (const SlabAllocator::Slab* slab = arena->slabs.find_slab(pointer)) {
      slab_base = slab->base;
      break;
    }
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
  for (const auto& arena : pool_->arenas) {
    std::lock_guard lock(arena->mutex);
    pool_free += arena->slabs.free_bytes();
  }
  {
    std::lock_guard lock(pool_->registry_mutex);
    pool_free += pool_->cached_bytes_locked();
  }
  // INFO-1: what this pool can still hand out. Its unused slab bytes are part of the device's
  // used memory, so the sum never exceeds total (min() covers a racing second process).
  return MemoryInfo{std::min(device.free + pool_free, device.total), device.total};
}

void PoolMemoryManager::reset() {
  HostOnlyCUDAMemoryManager::reset();  // NBEP 7: an override calls the parent's
  // Blocks still referenced become inert (LIFE-7, LIFE-8).
  release_slabs(*pool_, pool_->take_all_slabs());
}

CleanupGuard PoolMemoryManager::defer_cleanup() {
  // DEFER-3: hold the parent's guard for the whole scope, so host frees are deferred too.
  CleanupGuard parent = HostOnlyCUDAMemoryManager::defer_cleanup();
  pool_->defer_depth.fetch_add(1, std::memory_order_acq_rel);
  std::weak_ptr<PoolState> weak = pool_;
  return CleanupGuard(
      [weak] {
        const std::shared_ptr<PoolState> state = weak.lock();
        if (!state) return;
        if (state->defer_depth.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          state->trim_all(state->options.release_threshold);
        }
      },
      std::move(parent));
}

PoolStatistics PoolMemoryManager::statistics() const {
  const auto locks = pool_->lock_all_arenas();
  std::lock_guard registry(pool_->registry_mutex);
  PoolStatistics stats;
  for (const auto& arena : pool_->arenas) {
    const SlabAllocator& slabs = arena->slabs;
    stats.slab_count += slabs.slab_count();
    stats.slab_bytes += slabs.slab_bytes();
    stats.allocated_bytes += slabs.allocated_bytes();
    stats.allocated_blocks += slabs.allocated_blocks();
    stats.free_blocks += slabs.free_block_count();
    stats.largest_free_block = std::max(stats.largest_free_block, slabs.largest_free_block());
    if (slabs.slab_count() != 0) ++stats.arenas_in_use;
  }
  // Blocks parked in thread caches are free for the pool's users, though allocated in `slabs`.
  stats.allocated_bytes -= pool_->cached_bytes_locked();
  stats.allocated_blocks -= pool_->cached_blocks_locked();
  stats.defer_depth = pool_->defer_depth.load(std::memory_order_acquire);
  return stats;
}

}  // namespace emm::examples
