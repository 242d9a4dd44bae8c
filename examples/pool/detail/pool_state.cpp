#include "pool_state.hpp"

#include <algorithm>
#include <utility>

#include "emm/diagnostics.hpp"

namespace emm::examples::detail {

// --- ThreadCache -------------------------------------------------------------------------------

ThreadCache::ThreadCache(std::shared_ptr<PoolState> owner, std::uint64_t owner_generation,
                         Arena& home_arena, const ThreadCaches* owner_thread)
    : state(std::move(owner)),
      generation(owner_generation),
      home(home_arena),
      owner_thread_(owner_thread) {}

void ThreadCache::retire(const std::shared_ptr<ThreadCache>& cache) noexcept {
  ThreadCache& retiring = *cache;
  // From here on every release counts down the atomic count, this thread's too.
  retiring.owner_thread_.store(nullptr, std::memory_order_relaxed);
  const std::int64_t merged = retiring.owner_pointers_ - kOwnerBias;
  retiring.self_ = cache;
  // Nothing of `retiring` may be touched after a non-zero sum: its last pointer, on another
  // thread, may destroy it at once.
  if (retiring.shared_pointers_.fetch_add(merged, std::memory_order_acq_rel) + merged == 0) {
    retiring.self_.reset();  // no pointer is left
  }
}

void ThreadCache::flush(bool unregister) {
  FirstError first;
  std::vector<std::pair<Item, std::size_t>> parked;  // taken out first: an arena lock comes first
  {
    std::lock_guard lock(lists_mutex_);
    for (std::size_t c = 0; c < lists_.size(); ++c) {
      const std::size_t size = (c + 1) * SlabAllocator::kAlignment;
      for (const Item& item : lists_[c]) parked.emplace_back(item, size);
      lists_[c].clear();
    }
  }
  for (const auto& [item, size] : parked) {
    std::lock_guard lock(item.arena->mutex);
    {
      // The counts change under the arena's lock, so statistics (which holds every arena
      // lock) never sees the block both parked and free.
      std::lock_guard counts(lists_mutex_);
      bytes_ -= size;
      --blocks_;
      publish();
    }
    if (state->generation.load(std::memory_order_relaxed) != generation) continue;  // inert
    first.run([&] { state->free_block(*item.arena, item.block); });
  }
  if (unregister) {
    std::lock_guard lock(state->registry_mutex);
    std::erase_if(state->caches, [this](const auto& cache) { return cache.get() == this; });
  }
  first.rethrow();
}

// --- PoolState ---------------------------------------------------------------------------------

PoolState::PoolState(Context* owner, const PoolMemoryManager::Options& pool_options)
    : context(owner), options(pool_options) {
  arenas.reserve(options.arenas);
  for (std::size_t i = 0; i < options.arenas; ++i) arenas.push_back(std::make_unique<Arena>(i));
}

void PoolState::free_block(Arena& arena, SlabAllocator::Block* block) {
  SlabAllocator::Slab* empty = arena.slabs.free(block);
  if (empty == nullptr) [[likely]] {
    return;
  }
  const std::size_t held =
      empty_bytes.fetch_add(empty->size, std::memory_order_relaxed) + empty->size;
  // Every empty slab is kept while a defer_cleanup guard lives; the guard's end trims.
  if (held <= options.release_threshold || defer_depth.load(std::memory_order_acquire) > 0) {
    return;
  }
  release_slab(arena, empty);
}

void PoolState::release_slab(Arena& arena, SlabAllocator::Slab* slab) {
  const CUdeviceptr base = slab->base;
  empty_bytes.fetch_sub(slab->size, std::memory_order_relaxed);
  arena.slabs.remove_slab(slab);
  free_slab_memory(base);
}

void PoolState::trim(Arena& arena, std::size_t keep_bytes) {
  FirstError first;
  for (SlabAllocator::Slab* slab : arena.slabs.empty_slabs()) {
    if (empty_bytes.load(std::memory_order_relaxed) <= keep_bytes) break;
    first.run([&] { release_slab(arena, slab); });
  }
  first.rethrow();
}

void PoolState::trim_all(std::size_t keep_bytes) {
  FirstError first;
  for (const auto& arena : arenas) {
    std::lock_guard lock(arena->mutex);
    first.run([&] { trim(*arena, keep_bytes); });
  }
  first.rethrow();
}

std::vector<std::unique_lock<std::mutex>> PoolState::lock_all_arenas() {
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(arenas.size());
  for (const auto& arena : arenas) locks.emplace_back(arena->mutex);
  return locks;
}

ThreadCache::Item PoolState::allocate_from_any_arena(std::size_t need,
                                                     std::uint64_t& block_generation) {
  for (const auto& arena : arenas) {
    std::lock_guard lock(arena->mutex);
    if (SlabAllocator::Block* block = allocate(*arena, need)) {
      block_generation = generation.load(std::memory_order_relaxed);
      return ThreadCache::Item{arena.get(), block, block->address};
    }
  }
  return ThreadCache::Item{nullptr, nullptr, 0};
}

std::vector<CUdeviceptr> PoolState::take_all_slabs() {
  const auto locks = lock_all_arenas();
  std::lock_guard registry(registry_mutex);
  std::vector<CUdeviceptr> bases;
  for (const auto& arena : arenas) {
    for (const SlabAllocator::Slab* slab : arena->slabs.slabs()) bases.push_back(slab->base);
    arena->slabs.clear();
  }
  empty_bytes.store(0, std::memory_order_relaxed);
  generation.fetch_add(1, std::memory_order_acq_rel);
  caches.clear();
  return bases;
}

std::size_t PoolState::cached_bytes_locked() const noexcept {
  std::size_t sum = 0;
  for (const auto& cache : caches) sum += cache->published_bytes.load(std::memory_order_relaxed);
  return sum;
}

std::size_t PoolState::cached_blocks_locked() const noexcept {
  std::size_t sum = 0;
  for (const auto& cache : caches) sum += cache->published_blocks.load(std::memory_order_relaxed);
  return sum;
}

Arena& PoolState::assign_home_arena() noexcept {
  return *arenas[next_home.fetch_add(1, std::memory_order_relaxed) % arenas.size()];
}

// --- ThreadCaches ------------------------------------------------------------------------------

std::shared_ptr<ThreadCache>* ThreadCaches::find_slow(PoolState& state, std::uint64_t generation) {
  last_ = nullptr;
  // Forget caches made inert by a reset or a destroyed pool (their blocks are not the pool's).
  std::erase_if(caches_, [](const auto& cache) {
    if (cache->current()) return false;
    ThreadCache::retire(cache);
    return true;
  });
  for (auto& cache : caches_) {
    if (cache->state.get() == &state) return last_ = &cache;
  }
  auto cache = std::make_shared<ThreadCache>(state.shared_from_this(), generation,
                                             state.assign_home_arena(), this);
  {
    std::lock_guard lock(state.registry_mutex);
    if (!cache->current()) return nullptr;
    state.caches.push_back(cache);
  }
  caches_.push_back(std::move(cache));
  return last_ = &caches_.back();
}

void PoolState::flush_thread_caches() {
  std::vector<std::shared_ptr<ThreadCache>> current;
  {
    std::lock_guard lock(registry_mutex);
    current = caches;
  }
  FirstError first;
  for (const auto& cache : current) first.run([&] { cache->flush(false); });
  first.rethrow();
}

namespace {
// Set when this thread's caches are gone (thread exit).
thread_local bool t_caches_destroyed = false;
}  // namespace

ThreadCaches::~ThreadCaches() {
  t_caches_destroyed = true;
  t_thread_caches = nullptr;
  for (const auto& cache : caches_) {
    try {
      cache->flush(true);
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("PoolMemoryManager thread exit", error.what());
    }
    ThreadCache::retire(cache);
  }
}

ThreadCaches* make_thread_caches() {
  if (t_caches_destroyed) return nullptr;
  thread_local ThreadCaches caches;
  t_thread_caches = &caches;
  return &caches;
}

}  // namespace emm::examples::detail
