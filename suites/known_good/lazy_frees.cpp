// lazy_frees — a correct plugin whose device frees run at its next allocation (spec §7).
//
// memalloc(n) is cuMemAlloc(n). A finalizer does not free: it puts the block on the plugin's own
// list of released blocks (not the HostOnly parent's queue), and the next memalloc frees the
// whole list first, so a program that allocates in a loop frees in batches, outside its
// finalizers. reset() frees the list and every block still handed out. While a defer_cleanup
// guard lives the list is not drained, so no block is freed under deferred work.
//
// Thread-safety: one mutex over the lists; the driver is called outside it.
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
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
#include "lazy_frees_declaration.hpp"

namespace emm::known_good {
namespace {

// Shared with the finalizers, which may run after reset() or after the plugin is gone (LIFE-8).
// Every member is guarded by `mutex_`.
class Blocks {
 public:
  std::uint64_t adopt(CUdeviceptr pointer) {
    std::lock_guard lock(mutex_);
    live_.emplace(pointer, generation_);
    return generation_;
  }

  // What a finalizer does: the block moves to the released list.
  void release(CUdeviceptr pointer, std::uint64_t generation) {
    std::lock_guard lock(mutex_);
    if (generation != generation_) return;  // reset() freed it already
    live_.erase(pointer);
    released_.push_back(pointer);
  }

  // The released blocks, for the caller to free; none while a defer_cleanup guard lives.
  std::vector<CUdeviceptr> take_released() {
    std::lock_guard lock(mutex_);
    if (holds_ > 0) return {};
    return std::exchange(released_, {});
  }

  // Forgets every block, live ones included, and returns them, for the caller to free.
  std::vector<CUdeviceptr> take_all() {
    std::lock_guard lock(mutex_);
    std::vector<CUdeviceptr> all = std::exchange(released_, {});
    for (const auto& entry : live_) all.push_back(entry.first);
    live_.clear();
    ++generation_;
    return all;
  }

  void hold() {
    std::lock_guard lock(mutex_);
    ++holds_;
  }
  void end_hold() {
    std::lock_guard lock(mutex_);
    --holds_;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<CUdeviceptr, std::uint64_t> live_;  // handed out
  std::vector<CUdeviceptr> released_;                    // finalized, not yet freed
  int holds_ = 0;                                        // live defer_cleanup guards
  std::uint64_t generation_ = 0;                         // reset() bumps it
};

class LazyFrees : public GetIpcHandleMixin<HostOnlyCUDAMemoryManager> {
 public:
  using GetIpcHandleMixin::GetIpcHandleMixin;  // no CUDA call here (REG-2, LIFE-4)

  ~LazyFrees() override {
    if (context() == nullptr) return;  // the version probe (REG-2) allocated nothing
    try {
      free_device_blocks(driver(), blocks_->take_all());
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("known-good lazy frees destructor", error.what());
    }
  }

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    Driver& driver = this->driver();
    free_device_blocks(driver, blocks_->take_released());
    CUdeviceptr pointer = 0;
    try {
      pointer = driver.mem_alloc(size);
    } catch (const CudaDriverError& error) {
      if (error.code() != CUDA_ERROR_OUT_OF_MEMORY) throw;
      // NBEP 7: flush and retry once. The list was drained just now unless a guard holds it,
      // and then the flush is a no-op, as the parent's queue is inside defer_cleanup.
      free_device_blocks(driver, blocks_->take_released());
      pointer = driver.mem_alloc(size);
    }
    const std::uint64_t generation = blocks_->adopt(pointer);
    auto release = [blocks = std::weak_ptr<Blocks>(blocks_), pointer, generation] {
      if (auto alive = blocks.lock()) alive->release(pointer, generation);
    };
    try {
      return std::make_shared<MemoryPointer>(context(), pointer, size, nullptr, release);
    } catch (...) {
      release();
      throw;
    }
  }

  MemoryInfo get_memory_info() override { return driver().mem_get_info(); }

  void reset() override {
    HostOnlyCUDAMemoryManager::reset();  // NBEP 7: the parent releases the host side
    free_device_blocks(driver(), blocks_->take_all());
  }

  CleanupGuard defer_cleanup() override {
    CleanupGuard parent = HostOnlyCUDAMemoryManager::defer_cleanup();  // DEFER-3
    blocks_->hold();
    return CleanupGuard(
        [blocks = std::weak_ptr<Blocks>(blocks_)] {
          if (auto alive = blocks.lock()) alive->end_hold();
        },
        std::move(parent));
  }

  int interface_version() const override { return kSupportedInterfaceVersion; }

 private:
  std::shared_ptr<Blocks> blocks_ = std::make_shared<Blocks>();
};

}  // namespace
}  // namespace emm::known_good

EMM_EXPORT_MEMORY_MANAGER(emm::known_good::LazyFrees, emm::known_good::kLazyFreesDeclaration)
