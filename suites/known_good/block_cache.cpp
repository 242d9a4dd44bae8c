// block_cache — a correct exact-size block cache (spec §7).
//
// memalloc(n) is cuMemAlloc(n), unless a block of exactly n bytes was released earlier: then
// that block is handed out again. Released blocks wait in a free list per size; every one is
// freed by reset() and, on out of memory, before the one retry (NBEP 7). Releases go through
// the HostOnly parent's pending-deallocation queue (deferred_finalizer), so inside
// defer_cleanup a released block does not reach the cache until the queue flushes after the
// scope, and cannot be handed out again while deferred work may still use it.
//
// Thread-safety: one mutex over the cache; the driver is called outside it.
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "block_cache_declaration.hpp"
#include "common/device_blocks.hpp"
#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/get_ipc_handle_mixin.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/plugin_abi.hpp"

namespace emm::known_good {
namespace {

// A block handed out, with the cache generation it belongs to.
struct Handout {
  CUdeviceptr pointer;
  std::uint64_t generation;
};

// Shared with the finalizers, which may run after reset() or after the plugin is gone (LIFE-8).
// Every member is guarded by `mutex`.
class Cache {
 public:
  std::optional<Handout> reuse(std::size_t size) {
    std::lock_guard lock(mutex_);
    auto list = free_by_size_.find(size);
    if (list == free_by_size_.end() || list->second.empty()) return std::nullopt;
    const CUdeviceptr pointer = list->second.back();
    list->second.pop_back();
    live_[pointer] = size;
    return Handout{pointer, generation_};
  }

  Handout adopt(CUdeviceptr pointer, std::size_t size) {
    std::lock_guard lock(mutex_);
    live_[pointer] = size;
    return Handout{pointer, generation_};
  }

  // What a finalizer does once the queue runs it: the block joins the list of its size.
  void release(const Handout& handout) {
    std::lock_guard lock(mutex_);
    if (handout.generation != generation_) return;  // reset() freed it already
    auto block = live_.find(handout.pointer);
    if (block == live_.end()) return;  // released already (a failed construction gave it back)
    free_by_size_[block->second].push_back(handout.pointer);
    live_.erase(block);
  }

  // Empties the free lists and returns their blocks, for the caller to free.
  std::vector<CUdeviceptr> take_cached() {
    std::lock_guard lock(mutex_);
    return take_cached_locked();
  }

  // Forgets every block, live ones included, and returns them, for the caller to free.
  std::vector<CUdeviceptr> take_all() {
    std::lock_guard lock(mutex_);
    std::vector<CUdeviceptr> all = take_cached_locked();
    for (const auto& entry : live_) all.push_back(entry.first);
    live_.clear();
    ++generation_;
    return all;
  }

 private:
  std::vector<CUdeviceptr> take_cached_locked() {
    std::vector<CUdeviceptr> cached;
    for (auto& entry : free_by_size_)
      cached.insert(cached.end(), entry.second.begin(), entry.second.end());
    free_by_size_.clear();
    return cached;
  }

  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<CUdeviceptr>> free_by_size_;
  std::unordered_map<CUdeviceptr, std::size_t> live_;  // handed out, or released but queued
  std::uint64_t generation_ = 0;                       // reset() bumps it
};

class BlockCache : public GetIpcHandleMixin<HostOnlyCUDAMemoryManager> {
 public:
  using GetIpcHandleMixin::GetIpcHandleMixin;  // no CUDA call here (REG-2, LIFE-4)

  ~BlockCache() override {
    if (context() == nullptr) return;  // the version probe (REG-2) allocated nothing
    try {
      free_device_blocks(driver(), cache_->take_all());
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("known-good block cache destructor", error.what());
    }
  }

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    std::optional<Handout> handout = cache_->reuse(size);
    if (!handout) handout = cache_->adopt(allocate(size), size);
    const CUdeviceptr pointer = handout->pointer;
    const auto key = static_cast<std::uintptr_t>(pointer);
    Finalizer finalizer = deferred_finalizer(
        key,
        [cache = std::weak_ptr<Cache>(cache_), handout = *handout] {
          if (auto alive = cache.lock()) alive->release(handout);
        },
        size);
    std::shared_ptr<MemoryPointer> memory;
    try {
      memory =
          std::make_shared<MemoryPointer>(context(), pointer, size, nullptr, std::move(finalizer));
    } catch (...) {
      cache_->release(*handout);
      throw;
    }
    track(key, memory);  // so that the parent's reset() runs its finalizer (LIFE-7)
    return memory;
  }

  MemoryInfo get_memory_info() override { return driver().mem_get_info(); }

  void reset() override {
    // NBEP 7: the parent releases the host side and finalizes every live block (into the cache,
    // unless a guard defers the queue); then everything this plugin holds is freed.
    HostOnlyCUDAMemoryManager::reset();
    free_device_blocks(driver(), cache_->take_all());
  }

  int interface_version() const override { return kSupportedInterfaceVersion; }

 private:
  CUdeviceptr allocate(std::size_t size) {
    Driver& driver = this->driver();
    try {
      return driver.mem_alloc(size);
    } catch (const CudaDriverError& error) {
      if (error.code() != CUDA_ERROR_OUT_OF_MEMORY) throw;
    }
    // NBEP 7: on out of memory, flush the pending releases (they land in the cache), free the
    // whole cache and retry once; a second failure reaches the caller unchanged (ALLOC-3). One
    // thread reclaims at a time: a thread that meets out of memory while another is still
    // freeing the cache it took waits for those frees, or its retry fails although the plugin
    // is giving back enough (spec §8 (c)).
    std::lock_guard reclaiming(reclaim_mutex_);
    deallocations().clear();
    free_device_blocks(driver, cache_->take_cached());
    return driver.mem_alloc(size);
  }

  std::mutex reclaim_mutex_;
  std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

}  // namespace
}  // namespace emm::known_good

EMM_EXPORT_MEMORY_MANAGER(emm::known_good::BlockCache, emm::known_good::kBlockCacheDeclaration)
