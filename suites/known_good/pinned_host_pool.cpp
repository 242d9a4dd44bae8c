// pinned_host_pool — a correct plugin with a caching pool of pinned host memory (spec §8).
//
// memhostalloc(n, mapped, portable, wc) hands out a cuMemHostAlloc block of n bytes rounded up to
// whole 4 KiB pages (the driver locks whole pages anyway), made with exactly the flags asked for:
// a released block of the same (rounded size, flags) class when one is cached, else a new one.
// The class includes every flag, so a block is never handed out with other flags than it was
// made with (ALLOC-6, spec §7: "page-locked with the flags asked for"); a mapped block keeps the
// device pointer it got when made, which aliases its host bytes. Releases go through the HostOnly
// parent's pending-deallocation queue (deferred_finalizer), so a block released inside
// defer_cleanup reaches the cache only when the queue flushes after the scope: it is neither
// freed nor handed out again while deferred work may still use it. Cached blocks are freed by
// reset() and, when cuMemHostAlloc fails with out of memory, before the retry (NBEP 7; spec §8
// (c): no out of memory that freeing the cache would satisfy), except while a guard lives (a free
// synchronises, which deferred work must not wait for).
//
// The rest is the parent's: memalloc is cuMemAlloc through its queue with the flush-and-retry of
// NBEP 7, mempin registers exactly [p, p + n) and unpins at once (ALLOC-7), memallocmanaged.
//
// Thread-safety: one mutex over the cache; the driver is called outside it.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/device_blocks.hpp"
#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/get_ipc_handle_mixin.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/plugin_abi.hpp"
#include "pinned_host_pool_declaration.hpp"

namespace emm::known_good {
namespace {

constexpr std::size_t kHostPage = 4096;

// A cuMemHostAlloc block: its class (rounded size and flags), its device pointer when mapped (0
// otherwise), and the cache generation it belongs to.
struct HostBlock {
  void* host;
  std::size_t bytes;
  unsigned flags;
  CUdeviceptr device;
  std::uint64_t generation;
};

// cuMemFreeHost on every block; when some fail, the others are still freed and the first error is
// rethrown afterwards (reset() must release everything it can, LIFE-7).
void free_host_blocks(Driver& driver, const std::vector<void*>& blocks) {
  std::exception_ptr first_error;
  for (void* block : blocks) {
    try {
      driver.mem_free_host(block);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

// Shared with the finalizers, which may run after reset() or after the plugin is gone (LIFE-8).
// Every member is guarded by `mutex_`.
class HostCache {
 public:
  // A cached block of exactly this class, now handed out; none when the class is empty.
  std::optional<HostBlock> reuse(std::size_t bytes, unsigned flags) {
    std::lock_guard lock(mutex_);
    auto list = cached_.find({bytes, flags});
    if (list == cached_.end() || list->second.empty()) return std::nullopt;
    HostBlock block = list->second.back();
    list->second.pop_back();
    block.generation = generation_;
    live_[block.host] = block;
    return block;
  }

  HostBlock adopt(HostBlock block) {
    std::lock_guard lock(mutex_);
    block.generation = generation_;
    live_[block.host] = block;
    return block;
  }

  // What a finalizer does once the parent's queue runs it: the block joins its class.
  void release(const HostBlock& block) {
    std::lock_guard lock(mutex_);
    if (block.generation != generation_) return;  // reset() freed it already
    auto entry = live_.find(block.host);
    if (entry == live_.end()) return;  // released already (a failed construction gave it back)
    cached_[{entry->second.bytes, entry->second.flags}].push_back(entry->second);
    live_.erase(entry);
  }

  // How many reclaims and resets have freed cached blocks; read without the lock before each
  // cuMemHostAlloc, so that its failure can tell whether memory came free since.
  std::uint64_t frees() const noexcept { return frees_.load(); }

  // The out-of-memory path for a request made when frees() was `seen`: frees every cached block.
  // Returns whether memory came free since `seen`, by this call or by another thread's reclaim or
  // reset(); a reclaim still running is waited for first, as it may be freeing the very blocks
  // the request needs.
  bool reclaim(Driver& driver, std::uint64_t seen) {
    std::vector<void*> due;
    {
      std::unique_lock lock(mutex_);
      reclaimed_.wait(lock, [this] { return !reclaiming_; });
      due = take_cached_locked();
      if (due.empty()) return frees_.load() != seen;
      reclaiming_ = true;
    }
    std::exception_ptr error;
    try {
      free_host_blocks(driver, due);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      reclaiming_ = false;
      ++frees_;
    }
    reclaimed_.notify_all();
    if (error) std::rethrow_exception(error);
    return true;
  }

  // reset(), after take_all()'s blocks were freed.
  void count_frees() {
    std::lock_guard lock(mutex_);
    ++frees_;
  }

  // Forgets every block, handed out ones included, and returns them, for the caller to free.
  std::vector<void*> take_all() {
    std::lock_guard lock(mutex_);
    std::vector<void*> all = take_cached_locked();
    for (const auto& entry : live_) all.push_back(entry.first);
    live_.clear();
    ++generation_;
    return all;
  }

 private:
  std::vector<void*> take_cached_locked() {
    std::vector<void*> cached;
    for (const auto& entry : cached_) {
      for (const HostBlock& block : entry.second) cached.push_back(block.host);
    }
    cached_.clear();
    return cached;
  }

  std::mutex mutex_;
  std::condition_variable reclaimed_;  // signalled when a reclaim ends
  // By (rounded size, cuMemHostAlloc flags): a block is only ever handed out for its own class.
  std::map<std::pair<std::size_t, unsigned>, std::vector<HostBlock>> cached_;
  std::unordered_map<void*, HostBlock> live_;  // handed out, or released but still queued
  bool reclaiming_ = false;                    // a reclaim is freeing blocks outside the lock
  std::atomic<std::uint64_t> frees_{0};        // written under the lock only
  std::uint64_t generation_ = 0;               // reset() bumps it
};

class PinnedHostPool : public GetIpcHandleMixin<HostOnlyCUDAMemoryManager> {
 public:
  using GetIpcHandleMixin::GetIpcHandleMixin;  // no CUDA call here (REG-2, LIFE-4)

  ~PinnedHostPool() override {
    if (context() == nullptr) return;  // the version probe (REG-2) allocated nothing
    try {
      free_host_blocks(driver(), cache_->take_all());
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("known-good pinned host pool destructor", error.what());
    }
  }

  // The parent's device pass-through, as NumbaCUDAMemoryManager's: cuMemAlloc, flushed and
  // retried once on out of memory; freed through the queue.
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    Driver& driver = this->driver();
    const CUdeviceptr pointer =
        attempt_allocation([&driver, size] { return driver.mem_alloc(size); });
    const auto key = static_cast<std::uintptr_t>(pointer);
    std::shared_ptr<MemoryPointer> memory;
    try {
      memory = std::make_shared<MemoryPointer>(
          context(), pointer, size, nullptr,
          deferred_finalizer(
              key, [&driver, pointer] { driver.mem_free(pointer); }, size));
    } catch (...) {
      driver.mem_free(pointer);
      throw;
    }
    track(key, memory);  // so that the parent's reset() frees it (LIFE-7)
    return memory;
  }

  HostAllocation memhostalloc(std::size_t size, bool mapped, bool portable, bool wc) override {
    const unsigned flags = (mapped ? CU_MEMHOSTALLOC_DEVICEMAP : 0u) |
                           (portable ? CU_MEMHOSTALLOC_PORTABLE : 0u) |
                           (wc ? CU_MEMHOSTALLOC_WRITECOMBINED : 0u);
    const std::size_t bytes = round_up(std::max<std::size_t>(size, 1), kHostPage);
    std::optional<HostBlock> block = cache_->reuse(bytes, flags);
    if (!block) block = cache_->adopt(make_block(bytes, flags));

    const auto key = reinterpret_cast<std::uintptr_t>(block->host);
    // Numba queues pinned frees with an unset size (they count towards the item limit only).
    Finalizer finalizer = deferred_finalizer(
        key,
        [cache = std::weak_ptr<HostCache>(cache_), block = *block] {
          if (auto alive = cache.lock()) alive->release(block);
        },
        mapped ? size : 0);
    if (mapped) {
      std::shared_ptr<MappedMemory> memory;
      try {
        memory = std::make_shared<MappedMemory>(context(), block->host, block->device, size,
                                                nullptr, std::move(finalizer));
      } catch (...) {
        cache_->release(*block);
        throw;
      }
      track(key, memory);  // so that the parent's reset() finalizes it (LIFE-7, LIFE-10)
      return HostAllocation::mapped(memory->own());
    }
    std::shared_ptr<PinnedMemory> memory;
    try {
      memory = std::make_shared<PinnedMemory>(context(), block->host, size, nullptr,
                                              std::move(finalizer));
    } catch (...) {
      cache_->release(*block);
      throw;
    }
    track(key, memory);
    return HostAllocation::pinned(memory);
  }

  MemoryInfo get_memory_info() override { return driver().mem_get_info(); }

  void reset() override {
    // NBEP 7 (LIFE-10): the parent frees the device blocks and pins and finalizes every live
    // pinned block (into the cache, unless a guard defers the queue); then every pinned block
    // this plugin holds, cached or handed out, is freed.
    HostOnlyCUDAMemoryManager::reset();
    std::exception_ptr error;
    try {
      free_host_blocks(driver(), cache_->take_all());
    } catch (...) {
      error = std::current_exception();
    }
    cache_->count_frees();
    if (error) std::rethrow_exception(error);
  }

  int interface_version() const override { return kSupportedInterfaceVersion; }

 private:
  // A new cuMemHostAlloc block of `bytes` with `flags`. On out of memory the pending releases
  // are flushed (they land in the cache) and the whole cache is freed before the retry (NBEP 7);
  // the retry is repeated while memory came free since the last attempt, as other threads'
  // releases may refill the cache meanwhile (spec §8 (c)). A failure when nothing came free
  // reaches the caller unchanged.
  HostBlock make_block(std::size_t bytes, unsigned flags) {
    Driver& driver = this->driver();
    void* host = nullptr;
    for (;;) {
      const std::uint64_t seen = cache_->frees();
      try {
        host = driver.mem_host_alloc(bytes, flags);
        break;
      } catch (const CudaDriverError& error) {
        if (error.code() != CUDA_ERROR_OUT_OF_MEMORY || !reclaim(driver, seen)) throw;
      }
    }
    if ((flags & CU_MEMHOSTALLOC_DEVICEMAP) == 0) return HostBlock{host, bytes, flags, 0, 0};
    try {
      return HostBlock{host, bytes, flags, driver.mem_host_get_device_pointer(host, 0), 0};
    } catch (...) {
      driver.mem_free_host(host);
      throw;
    }
  }

  // Frees the cached blocks after a flush of the parent's queue; nothing while a guard lives (the
  // flush is a no-op then, and a free would synchronise under deferred work). A guard that begins
  // after the test cannot be hurt by the frees: cached blocks are referenced by no one.
  bool reclaim(Driver& driver, std::uint64_t seen) {
    deallocations().clear();
    if (deallocations().is_disabled()) return cache_->frees() != seen;
    return cache_->reclaim(driver, seen);
  }

  std::shared_ptr<HostCache> cache_ = std::make_shared<HostCache>();
};

}  // namespace
}  // namespace emm::known_good

EMM_EXPORT_MEMORY_MANAGER(emm::known_good::PinnedHostPool,
                          emm::known_good::kPinnedHostPoolDeclaration)
