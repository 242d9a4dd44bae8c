// examples/pool/detail/pool_state.hpp — the pool's shared state: arenas, generations and the
// per-thread caches (internal to the pool example; PoolMemoryManager is the public face).
//
// PoolState is everything the pool owns, shared with the finalizers of the pointers it hands
// out. It is split into arenas so that threads do not queue on one lock:
//
//   * Arena: a mutex and a SlabAllocator with its own slabs. Each thread that uses the pool is
//     given a home arena, round-robin (the first thread arena 0, the next arena 1, ...), and
//     allocates there; a block goes back to the arena it came from, whichever thread frees it.
//     With as many arenas as allocating threads, each lock is taken by one thread only and
//     costs what an uncontended lock costs.
//   * ThreadCache: per thread and pool, freed blocks of up to 32 KiB parked per exact size, so a
//     thread that frees and allocates the same sizes needs no lock at all. It also remembers
//     the thread's home arena and keeps the state alive for the pointers made on its thread,
//     counted without atomic instructions while that thread makes and frees them (biased
//     reference counting: see ThreadCache::acquire_pointer).
//   * generation: bumped by reset() and the destructor after they took every slab. A pointer,
//     a cache or a parked block of an older generation is inert: its slab was given back, so
//     it must never be touched or handed out again (LIFE-7, LIFE-8).
//
// Locking: arena mutexes are taken in index order when more than one is held (reset,
// statistics), then `registry_mutex`; code holding `registry_mutex` takes no arena mutex.
// cuMemFree of an empty slab runs under its arena's lock; cuMemAlloc of a new slab under none.
// Empty slabs are kept while their bytes, over all arenas, are within options.release_threshold
// (counted atomically, so arenas racing each other may give back a slab there was room for,
// never keep one past the threshold).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "emm/context.hpp"
#include "emm/examples/pool_memory_manager.hpp"
#include "emm/examples/slab_allocator.hpp"

namespace emm::examples::detail {

struct PoolState;
class ThreadCaches;

// Runs steps that must all be tried (give back every slab, flush every block) and rethrows the
// first error once all have run.
class FirstError {
 public:
  template <class Step>
  void run(Step&& step) noexcept {
    try {
      step();
    } catch (...) {
      if (!error_) error_ = std::current_exception();
    }
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::exception_ptr error_;
};

// One independently locked part of the pool. Aligned so that two arenas' locks never share a
// cache line.
struct alignas(64) Arena {
  explicit Arena(std::size_t arena_index) : index(arena_index) {}

  std::mutex mutex;
  SlabAllocator slabs;
  const std::size_t index;
};

// Freed small blocks of one pool kept by one thread, per exact size. The owning thread parks
// and takes blocks; any thread may flush them; the byte and block counts are published for
// statistics and get_memory_info. A parked block stays allocated in its arena's SlabAllocator
// (so no one else gets it: ALLOC-2) and is given back when its list is full, when the thread
// exits, or when cuMemAlloc runs out of memory on any thread (the blocks another thread keeps
// are memory the pool holds too: spec §8 (c)). Block descriptors are only dereferenced under
// their arena's lock with the generation checked: the address a block is handed out at is
// cached beside it.
struct ThreadCache {
  static constexpr std::size_t kMaxBlockBytes = 32 * 1024;  // larger sizes are never cached
  static constexpr std::size_t kClasses = kMaxBlockBytes / SlabAllocator::kAlignment;
  static constexpr std::size_t kMaxBlocksPerClass = 64;
  static constexpr std::size_t kMaxBytesPerClass = 256 * 1024;
  static constexpr std::size_t kMaxBytes = 4 * 1024 * 1024;  // per thread and pool

  struct Item {
    Arena* arena;
    SlabAllocator::Block* block;
    CUdeviceptr address;
  };

  ThreadCache(std::shared_ptr<PoolState> owner, std::uint64_t owner_generation, Arena& home,
              const ThreadCaches* owner_thread);

  inline bool current() const noexcept;

  // --- the pointers made from this cache: biased reference counting --------------------------
  // Every pointer memalloc makes on this cache's thread keeps the cache (and so the state)
  // alive until it is destroyed. The thread that owns the cache counts its own pointers in a
  // plain integer, so an allocation freed on the thread that made it (the common case) costs
  // no atomic instruction; a pointer destroyed on another thread counts down an atomic instead.
  // When the owning thread lets the cache go (thread exit, or a reset made it inert), retire()
  // adds the plain count to the atomic one, and whoever brings the sum to zero drops the hold
  // the cache keeps on itself meanwhile. (Until then the atomic count carries kOwnerBias, so
  // it cannot reach zero early.) On an H100 host an uncontended atomic read-modify-write costs
  // about 10 ns: the two that a std::shared_ptr copy and release cost were a fifth of a pair.
  void acquire_pointer() noexcept { ++owner_pointers_; }  // the owning thread, at memalloc
  inline void release_pointer() noexcept;                 // any thread, at destruction
  // Whether the calling thread owns this cache and has not let it go (any thread may ask).
  inline bool owned_here() const noexcept;
  // The owning thread lets `cache` go (it is leaving its ThreadCaches).
  static void retire(const std::shared_ptr<ThreadCache>& cache) noexcept;

  // Parks a freed block of `size` bytes (rounded); false when the bounds say it must go back.
  bool put(const Item& item, std::size_t size) {
    std::lock_guard lock(lists_mutex_);
    std::vector<Item>& list = lists_[size / SlabAllocator::kAlignment - 1];
    if (list.size() >= kMaxBlocksPerClass || (list.size() + 1) * size > kMaxBytesPerClass ||
        bytes_ + size > kMaxBytes) {
      return false;
    }
    list.push_back(item);
    bytes_ += size;
    ++blocks_;
    publish();
    return true;
  }

  // A parked block of exactly `size` bytes (rounded), if there is one.
  bool take(std::size_t size, Item& item) noexcept {
    std::lock_guard lock(lists_mutex_);
    std::vector<Item>& list = lists_[size / SlabAllocator::kAlignment - 1];
    if (list.empty()) return false;
    item = list.back();
    list.pop_back();
    bytes_ -= size;
    --blocks_;
    publish();
    return true;
  }

  // Gives every parked block back to its arena (out of memory on any thread, thread exit) and,
  // with `unregister`, leaves the pool's registry. Any thread. Takes the arena locks one at a
  // time; no lock may be held by the caller.
  void flush(bool unregister);

  const std::shared_ptr<PoolState> state;
  const std::uint64_t generation;
  Arena& home;  // where this thread allocates

 private:
  void publish() noexcept {
    published_bytes.store(bytes_, std::memory_order_relaxed);
    published_blocks.store(blocks_, std::memory_order_relaxed);
  }

  // Taken by the owner around put() and take() (uncontended but for a flush from another
  // thread) and by flush(). Lock order: an arena's lock, then this one.
  std::mutex lists_mutex_;
  std::array<std::vector<Item>, kClasses> lists_;  // lists_mutex_
  std::size_t bytes_ = 0;                          // lists_mutex_
  std::size_t blocks_ = 0;                         // lists_mutex_

  static constexpr std::int64_t kOwnerBias = std::int64_t{1} << 62;
  // The owning thread's ThreadCaches until retire() (then null). Read by any thread.
  std::atomic<const ThreadCaches*> owner_thread_;
  std::int64_t owner_pointers_ = 0;    // owner thread only, until retire()
  std::shared_ptr<ThreadCache> self_;  // set by retire() while pointers remain
  alignas(64) std::atomic<std::int64_t> shared_pointers_{kOwnerBias};

 public:
  // Read by other threads (statistics, get_memory_info); on their own cache line.
  alignas(64) std::atomic<std::size_t> published_bytes{0};
  std::atomic<std::size_t> published_blocks{0};
};

struct PoolState : std::enable_shared_from_this<PoolState> {
  PoolState(Context* owner, const PoolMemoryManager::Options& pool_options);

  // cuMemFree needs no current context (the driver finds the allocation's own), so this is
  // safe from a finalizer on any thread.
  void free_slab_memory(CUdeviceptr base) const { context->driver().mem_free(base); }

  // A block of `need` bytes from `arena`'s free blocks, or null. Lock held.
  SlabAllocator::Block* allocate(Arena& arena, std::size_t need) {
    const std::size_t empty_before = arena.slabs.empty_slab_bytes();
    SlabAllocator::Block* block = arena.slabs.allocate(need);
    // Taking a block from an empty slab makes it a slab in use again.
    if (const std::size_t empty_after = arena.slabs.empty_slab_bytes(); empty_after != empty_before)
        [[unlikely]] {
      empty_bytes.fetch_sub(empty_before - empty_after, std::memory_order_relaxed);
    }
    return block;
  }
  // Returns `block` (of the current generation) to `arena`; a slab it leaves empty is kept
  // within the release threshold (or while a defer_cleanup guard lives), else given back.
  // Lock held.
  void free_block(Arena& arena, SlabAllocator::Block* block);
  // Forgets the empty `slab` first (the arena stays consistent if cuMemFree fails), then gives
  // its memory back. Lock held.
  void release_slab(Arena& arena, SlabAllocator::Slab* slab);

  // Gives back `arena`'s empty slabs until the pool's empty bytes are within `keep_bytes`.
  // Lock held.
  void trim(Arena& arena, std::size_t keep_bytes);
  // trim() on every arena, taking each lock in turn (0: every empty slab, on out of memory).
  void trim_all(std::size_t keep_bytes);
  // Gives the blocks parked in every thread's cache of this generation back to their arenas
  // (out of memory). Any thread; no lock held.
  void flush_thread_caches();

  // Every arena's lock, taken in index order (reset, statistics).
  std::vector<std::unique_lock<std::mutex>> lock_all_arenas();

  // A free block of `need` bytes from whichever arena has one (the device is full), or an item
  // with a null block.
  ThreadCache::Item allocate_from_any_arena(std::size_t need, std::uint64_t& block_generation);

  // Locks every arena (index order) and the registry, forgets every slab and returns their
  // bases (reset, destruction). The generation bump makes every pointer, cache and parked block
  // of the old generation inert (LIFE-7, LIFE-8).
  std::vector<CUdeviceptr> take_all_slabs();

  // Blocks parked in thread caches (allocated in the arenas, free for the pool's users).
  // Registry lock held.
  std::size_t cached_bytes_locked() const noexcept;
  std::size_t cached_blocks_locked() const noexcept;

  // The next thread to use the pool gets this home arena.
  Arena& assign_home_arena() noexcept;

  Context* context;  // null for the version probe
  const PoolMemoryManager::Options options;
  std::vector<std::unique_ptr<Arena>> arenas;  // options.arenas of them, fixed
  // Written with every arena locked; read without a lock by the caches and finalizers, which
  // compare it with their own, and under one arena lock before touching that arena.
  std::atomic<std::uint64_t> generation{0};
  std::atomic<int> defer_depth{0};
  // Bytes of the empty slabs of every arena (the sum of their empty_slab_bytes()), changed
  // under the lock of the arena whose slab changed; what options.release_threshold bounds.
  std::atomic<std::size_t> empty_bytes{0};
  std::atomic<std::size_t> next_home{0};
  // The thread caches of the current generation (so reset() can forget them and statistics can
  // count their bytes).
  mutable std::mutex registry_mutex;
  std::vector<std::shared_ptr<ThreadCache>> caches;
};

bool ThreadCache::current() const noexcept {
  return state->generation.load(std::memory_order_acquire) == generation;
}

// This thread's caches, one per pool it used. The last one used is checked first.
class ThreadCaches {
 public:
  ThreadCaches() = default;
  ThreadCaches(const ThreadCaches&) = delete;
  ThreadCaches& operator=(const ThreadCaches&) = delete;
  ~ThreadCaches();  // flushes every cache (thread exit)

  // This thread's cache of `state`, of its current generation, registered on first use; null if
  // a reset raced with the registration.
  std::shared_ptr<ThreadCache>* find(PoolState& state) {
    const std::uint64_t generation = state.generation.load(std::memory_order_acquire);
    if (last_ != nullptr && (*last_)->state.get() == &state && (*last_)->generation == generation) {
      return last_;
    }
    return find_slow(state, generation);
  }

 private:
  std::shared_ptr<ThreadCache>* find_slow(PoolState& state, std::uint64_t generation);

  std::vector<std::shared_ptr<ThreadCache>> caches_;
  std::shared_ptr<ThreadCache>* last_ = nullptr;
};

// Set to this thread's caches on their first use and back to null when they are destroyed
// (thread exit): a plain pointer, so the hot path reads it without a thread_local guard.
inline thread_local ThreadCaches* t_thread_caches = nullptr;

// Makes this thread's caches; null during thread exit.
ThreadCaches* make_thread_caches();

// This thread's caches, or null during thread exit (a pointer released by a later
// thread_local destructor goes straight back to its arena).
inline ThreadCaches* thread_caches() {
  if (ThreadCaches* caches = t_thread_caches) [[likely]] {
    return caches;
  }
  return make_thread_caches();
}

bool ThreadCache::owned_here() const noexcept {
  const ThreadCaches* here = t_thread_caches;
  return here != nullptr && owner_thread_.load(std::memory_order_relaxed) == here;
}

void ThreadCache::release_pointer() noexcept {
  if (owned_here()) {
    --owner_pointers_;
    return;
  }
  if (shared_pointers_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // The last pointer, after retire(): may destroy this cache.
    const std::shared_ptr<ThreadCache> last = std::move(self_);
  }
}

}  // namespace emm::examples::detail
