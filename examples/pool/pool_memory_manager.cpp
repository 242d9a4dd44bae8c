#include "emm/examples/pool_memory_manager.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <new>
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

struct ThreadCache;

// Everything the pool owns, shared with the finalizers of the pointers it hands out. They hold
// it weakly: a finalizer that finds it gone, or finds a newer generation (reset() released the
// slabs since), has nothing to do (LIFE-8).
struct PoolState : std::enable_shared_from_this<PoolState> {
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

  // Forgets every slab (reset, destruction) and returns their bases. Lock held. The
  // generation bump makes every thread cache of the old generation inert: their blocks are
  // dropped unread, never handed out again (LIFE-7, LIFE-8).
  std::vector<CUdeviceptr> take_all_slabs();

  // Blocks parked in thread caches (allocated in `slabs`, free for the pool's users). Lock held.
  std::size_t cached_bytes() const noexcept;
  std::size_t cached_blocks() const noexcept;

  Context* context;  // null for the version probe
  const PoolMemoryManager::Options options;
  mutable std::mutex mutex;
  SlabAllocator slabs;
  // Written under the lock; read without it by the thread caches, which compare it with their
  // own to find out whether their blocks still belong to this pool's slabs.
  std::atomic<std::uint64_t> generation{0};
  int defer_depth = 0;
  // The thread caches of the current generation (so reset() can forget them and statistics can
  // count their bytes). Lock held.
  std::vector<std::shared_ptr<ThreadCache>> caches;
};

// Freed small blocks of one pool kept by one thread, per exact size, so that a thread that frees
// and allocates blocks of the sizes it used before needs neither the pool's mutex nor a split or
// merge. Only the owning thread touches the lists; the byte and block counts are published for
// statistics and get_memory_info. A cached block stays allocated in the SlabAllocator (so no
// one else gets it: ALLOC-2) and is given back when its list is full, when the thread exits, or
// when cuMemAlloc runs out of memory on this thread; reset() and the pool's destruction make the
// cache inert by bumping the generation. Block descriptors are only dereferenced under the lock
// with the generation checked: the address a block is handed out at is cached beside it.
struct ThreadCache {
  static constexpr std::size_t kMaxBlockBytes = 32 * 1024;  // larger sizes are never cached
  static constexpr std::size_t kClasses = kMaxBlockBytes / SlabAllocator::kAlignment;
  static constexpr std::size_t kMaxBlocksPerClass = 64;
  static constexpr std::size_t kMaxBytesPerClass = 256 * 1024;
  static constexpr std::size_t kMaxBytes = 4 * 1024 * 1024;  // per thread and pool

  struct Item {
    SlabAllocator::Block* block;
    CUdeviceptr address;
  };

  ThreadCache(std::shared_ptr<PoolState> owner, std::uint64_t owner_generation)
      : state(std::move(owner)), generation(owner_generation) {}

  bool current() const noexcept {
    return state->generation.load(std::memory_order_acquire) == generation;
  }

  // Parks a freed block of `size` bytes; false when the bounds say it must go back instead.
  bool put(SlabAllocator::Block* block, CUdeviceptr address, std::size_t size) {
    std::vector<Item>& list = lists[size / SlabAllocator::kAlignment - 1];
    if (list.size() >= kMaxBlocksPerClass || (list.size() + 1) * size > kMaxBytesPerClass ||
        bytes + size > kMaxBytes) {
      return false;
    }
    if (list.capacity() == 0) list.reserve(std::min(kMaxBlocksPerClass, kMaxBytesPerClass / size));
    list.push_back(Item{block, address});
    bytes += size;
    ++blocks;
    publish();
    return true;
  }

  bool take(std::size_t size, Item& item) noexcept {
    std::vector<Item>& list = lists[size / SlabAllocator::kAlignment - 1];
    if (list.empty()) return false;
    item = list.back();
    list.pop_back();
    bytes -= size;
    --blocks;
    publish();
    return true;
  }

  void publish() noexcept {
    published_bytes.store(bytes, std::memory_order_relaxed);
    published_blocks.store(blocks, std::memory_order_relaxed);
  }

  // Gives every block back to the pool (out of memory), and unregisters (thread exit). Lock held.
  void flush_locked(bool unregister) {
    if (state->generation.load(std::memory_order_relaxed) == generation) {
      std::exception_ptr first_error;
      for (std::vector<Item>& list : lists) {
        for (const Item& item : list) {
          if (SlabAllocator::Slab* empty = state->slabs.free(item.block)) {
            try {
              state->on_slab_empty(empty);
            } catch (...) {
              if (!first_error) first_error = std::current_exception();
            }
          }
        }
      }
      if (unregister) {
        std::erase_if(state->caches, [this](const auto& cache) { return cache.get() == this; });
      }
      clear();
      if (first_error) std::rethrow_exception(first_error);
    }
    clear();
  }

  void clear() noexcept {
    for (std::vector<Item>& list : lists) list.clear();
    bytes = blocks = 0;
    publish();
  }

  const std::shared_ptr<PoolState> state;
  const std::uint64_t generation;
  std::array<std::vector<Item>, kClasses> lists;
  std::size_t bytes = 0;  // owner thread only
  std::size_t blocks = 0;
  std::atomic<std::size_t> published_bytes{0};
  std::atomic<std::size_t> published_blocks{0};
};

std::vector<CUdeviceptr> PoolState::take_all_slabs() {
  std::vector<CUdeviceptr> bases;
  for (const SlabAllocator::Slab* slab : slabs.slabs()) bases.push_back(slab->base);
  slabs.clear();
  generation.fetch_add(1, std::memory_order_acq_rel);
  caches.clear();
  return bases;
}

std::size_t PoolState::cached_bytes() const noexcept {
  std::size_t sum = 0;
  for (const auto& cache : caches) sum += cache->published_bytes.load(std::memory_order_relaxed);
  return sum;
}

std::size_t PoolState::cached_blocks() const noexcept {
  std::size_t sum = 0;
  for (const auto& cache : caches) sum += cache->published_blocks.load(std::memory_order_relaxed);
  return sum;
}

// This thread's caches, one per pool it used. The last one used is checked first.
class ThreadCaches {
 public:
  ThreadCaches() = default;
  ThreadCaches(const ThreadCaches&) = delete;
  ThreadCaches& operator=(const ThreadCaches&) = delete;
  ~ThreadCaches();

  // This thread's current cache of `state`, registered on first use; null if a reset raced.
  std::shared_ptr<ThreadCache>* find(PoolState& state) {
    const std::uint64_t generation = state.generation.load(std::memory_order_acquire);
    if (last_ != nullptr && (*last_)->state.get() == &state && (*last_)->generation == generation) {
      return last_;
    }
    last_ = nullptr;
    // Forget caches made inert by a reset or a destroyed pool (their blocks are not the pool's).
    std::erase_if(caches_, [](const auto& cache) { return !cache->current(); });
    for (auto& cache : caches_) {
      if (cache->state.get() == &state) return last_ = &cache;
    }
    auto cache = std::make_shared<ThreadCache>(state.shared_from_this(), generation);
    {
      std::lock_guard lock(state.mutex);
      if (!cache->current()) return nullptr;
      state.caches.push_back(cache);
    }
    caches_.push_back(std::move(cache));
    return last_ = &caches_.back();
  }

  // Gives this thread's blocks of `state` back (before trimming on out of memory). Lock held.
  void flush_locked(PoolState& state) {
    for (const auto& cache : caches_) {
      if (cache->state.get() == &state) cache->flush_locked(false);
    }
  }

 private:
  static void flush(ThreadCache& cache, const char* where) noexcept {
    try {
      std::lock_guard lock(cache.state->mutex);
      cache.flush_locked(true);
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception(where, error.what());
    }
  }

  std::vector<std::shared_ptr<ThreadCache>> caches_;
  std::shared_ptr<ThreadCache>* last_ = nullptr;
};

// Set when this thread's caches are gone (thread exit): a pointer released by a later
// thread_local destructor goes straight back to the pool.
thread_local bool t_caches_destroyed = false;

ThreadCaches::~ThreadCaches() {
  t_caches_destroyed = true;
  for (const auto& cache : caches_) flush(*cache, "PoolMemoryManager thread exit");
}

// This thread's caches, or null during thread exit.
ThreadCaches* thread_caches() {
  if (t_caches_destroyed) return nullptr;
  thread_local ThreadCaches caches;
  return &caches;
}

}  // namespace detail

namespace {

using detail::PoolState;
using detail::thread_caches;
using detail::ThreadCache;
using detail::ThreadCaches;

// What memalloc returns: a plain MemoryPointer (refct 1) whose finalizer gives its block back.
// The block and the state live in the pointer itself rather than in the finalizer's captures,
// so the std::function holds only `this` and no heap allocation is made for it; the
// destructor runs the finalizer while those members still exist. `keep_alive` keeps the state
// alive: the allocating thread's cache for small blocks (its own reference count, so threads do
// not contend on the pool's), the state itself otherwise. The generation says whether the
// block is still the pool's (LIFE-7, LIFE-8).
class PoolPointer final : public MemoryPointer {
 public:
  PoolPointer(Context* context, std::size_t size, std::shared_ptr<void> keep_alive,
              PoolState* state, SlabAllocator::Block* block, CUdeviceptr address,
              std::uint64_t generation)
      : MemoryPointer(context, address, size, nullptr, [this] { give_back(); }),
        keep_alive_(std::move(keep_alive)),
        state_(state),
        block_(block),
        generation_(generation) {}
  ~PoolPointer() override { run_finalizer_once(); }

 private:
  void give_back() {
    PoolState& state = *state_;
    // The pool was reset or destroyed since: it released every slab already (LIFE-7, LIFE-8).
    if (state.generation.load(std::memory_order_acquire) != generation_) return;
    const std::size_t rounded = SlabAllocator::round_up(std::max<std::size_t>(size(), 1));
    if (rounded <= ThreadCache::kMaxBlockBytes) {
      // A reset racing with this leaves the block in an inert cache, which is what it wants.
      ThreadCaches* caches = thread_caches();
      if (std::shared_ptr<ThreadCache>* cache = caches ? caches->find(state) : nullptr) {
        if ((*cache)->generation == generation_ &&
            (*cache)->put(block_, device_pointer(), rounded)) {
          return;
        }
      }
    }
    std::lock_guard lock(state.mutex);
    if (state.generation.load(std::memory_order_relaxed) != generation_) return;
    if (SlabAllocator::Slab* empty = state.slabs.free(block_)) state.on_slab_empty(empty);
  }

  std::shared_ptr<void> keep_alive_;
  PoolState* state_;
  SlabAllocator::Block* block_;
  std::uint64_t generation_;
};

// Memory for the pointer objects (MemoryPointer and its shared_ptr control block, one piece)
// recycled per thread, so that a steady alloc/free pair makes no heap allocation. A piece freed
// on another thread joins that thread's list; each list keeps at most kMaxPieces, and a thread
// that exits frees its own.
template <std::size_t Size>
class PieceRecycler {
 public:
  static void* take() noexcept {
    Recycler* list = instance();
    if (list == nullptr || list->head == nullptr) return nullptr;
    Piece* piece = list->head;
    list->head = piece->next;
    --list->count;
    return piece;
  }
  static bool put(void* memory) noexcept {
    Recycler* list = instance();
    if (list == nullptr || list->count >= kMaxPieces) return false;
    list->head = ::new (memory) Piece{list->head};
    ++list->count;
    return true;
  }

 private:
  static constexpr std::size_t kMaxPieces = 256;
  struct Piece {
    Piece* next;
  };
  struct Recycler {
    Recycler() = default;
    Recycler(const Recycler&) = delete;
    Recycler& operator=(const Recycler&) = delete;
    ~Recycler() {
      destroyed = true;
      while (head != nullptr) ::operator delete(std::exchange(head, head->next));
    }
    Piece* head = nullptr;
    std::size_t count = 0;
  };
  static_assert(Size >= sizeof(Piece));
  // Set at thread exit: pieces released by later thread_local destructors are simply deleted.
  static inline thread_local bool destroyed = false;
  static Recycler* instance() noexcept {
    if (destroyed) return nullptr;
    thread_local Recycler list;
    return &list;
  }
};

template <class T>
struct RecyclingAllocator {
  using value_type = T;
  RecyclingAllocator() = default;
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>& /*other*/) noexcept {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    if (n == 1) {
      if (void* memory = PieceRecycler<sizeof(T)>::take()) return static_cast<T*>(memory);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* memory, std::size_t n) noexcept {
    if (n == 1 && PieceRecycler<sizeof(T)>::put(memory)) return;
    ::operator delete(memory);
  }
  template <class U>
  bool operator==(const RecyclingAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

// The pointer memalloc returns for `block`; gives the block back if making it throws.
std::shared_ptr<MemoryPointer> make_pool_pointer(Context* context, PoolState& state,
                                                 std::size_t size, std::shared_ptr<void> keep_alive,
                                                 SlabAllocator::Block* block, CUdeviceptr address,
                                                 std::uint64_t generation) {
  try {
    return std::allocate_shared<PoolPointer>(RecyclingAllocator<PoolPointer>(), context, size,
                                             std::move(keep_alive), &state, block, address,
                                             generation);
  } catch (...) {
    std::lock_guard lock(state.mutex);
    if (state.generation.load(std::memory_order_relaxed) == generation) {
      if (SlabAllocator::Slab* empty = state.slabs.free(block)) state.on_slab_empty(empty);
    }
    throw;
  }
}

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
  std::shared_ptr<ThreadCache>* cache = nullptr;
  if (need <= ThreadCache::kMaxBlockBytes) {
    if (ThreadCaches* caches = thread_caches()) cache = caches->find(state);
    ThreadCache::Item item{};
    if (cache != nullptr && (*cache)->take(need, item)) {
      // A block this thread freed before: no lock, no split (the cache is of this generation).
      return make_pool_pointer(context(), state, size, *cache, item.block, item.address,
                               (*cache)->generation);
    }
  }

  SlabAllocator::Block* block = nullptr;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(state.mutex);
    block = state.slabs.allocate(need);
    generation = state.generation.load(std::memory_order_relaxed);
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
      // Give back what the pool holds unused (this thread's cached blocks included), then ask
      // once more for no more than needed.
      {
        std::lock_guard lock(state.mutex);
        if (ThreadCaches* caches = thread_caches()) caches->flush_locked(state);
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
    generation = state.generation.load(std::memory_order_relaxed);
  }

  // Small blocks keep the pool alive through this thread's cache (its own reference count).
  std::shared_ptr<void> keep_alive;
  if (cache != nullptr && (*cache)->generation == generation) {
    keep_alive = *cache;
  } else {
    keep_alive = pool_;
  }
  return make_pool_pointer(context(), state, size, std::move(keep_alive), block, block->address,
                           generation);
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
    pool_free = pool_->slabs.free_bytes() + pool_->cached_bytes();
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
  // Blocks parked in thread caches are free for the pool's users, though allocated in `slabs`.
  return PoolStatistics{slabs.slab_count(),
                        slabs.slab_bytes(),
                        slabs.allocated_bytes() - pool_->cached_bytes(),
                        slabs.allocated_blocks() - pool_->cached_blocks(),
                        slabs.free_block_count(),
                        slabs.largest_free_block(),
                        pool_->defer_depth};
}

}  // namespace emm::examples
