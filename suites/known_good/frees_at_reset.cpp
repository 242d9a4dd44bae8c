// frees_at_reset — a correct plugin that frees nothing until reset() or out of memory (spec §8).
//
// memalloc(n) is cuMemAlloc(n) and memhostalloc is cuMemHostAlloc with the caller's mapped,
// portable and write-combined flags. A released block is neither freed nor handed out again: it
// joins the plugin's list of held blocks, so no live allocation can ever share its memory. reset()
// frees that list and every block still handed out (their later releases do nothing, LIFE-8).
// When cuMemAlloc, cuMemHostAlloc or cuMemHostRegister fails with CUDA_ERROR_OUT_OF_MEMORY, the
// whole list is freed and the request retried (NBEP 7), again while other threads' releases keep
// refilling the list, so the plugin never reports out of memory that releasing its held blocks
// would satisfy (spec §8 (c)). mempin registers exactly [p, p + n) and its release unregisters at
// once (ALLOC-7): a registration holds no memory worth keeping.
//
// Derived from BaseCUDAMemoryManager through GetIpcHandleMixin: every allocation is a whole
// cuMemAlloc block, so the driver's address range is the IPC base. defer_cleanup() is the
// plugin's own nestable guard; as releases never free, it only stops the out-of-memory path from
// freeing while a guard lives (a free synchronises, which deferred work must not wait for): the
// request then fails at once, as it would after NBEP 7's flush, a no-op inside the scope.
//
// Thread-safety: one mutex over the lists; the driver is called outside it.
#include <atomic>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "emm/base_memory_manager.hpp"
#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/driver.hpp"
#include "emm/errors.hpp"
#include "emm/get_ipc_handle_mixin.hpp"
#include "emm/plugin_abi.hpp"
#include "frees_at_reset_declaration.hpp"

namespace emm::known_good {
namespace {

// One thing the plugin got from the driver, and how it goes back.
struct Block {
  enum class Kind { device, host, registration };  // cuMemFree, cuMemFreeHost, cuMemHostUnregister
  Kind kind;
  std::uintptr_t address;
  friend auto operator<=>(const Block&, const Block&) = default;
};

void give_back(Driver& driver, const Block& block) {
  switch (block.kind) {
    case Block::Kind::device:
      driver.mem_free(static_cast<CUdeviceptr>(block.address));
      break;
    case Block::Kind::host:
      driver.mem_free_host(reinterpret_cast<void*>(block.address));
      break;
    case Block::Kind::registration:
      driver.mem_host_unregister(reinterpret_cast<void*>(block.address));
      break;
  }
}

// Gives back every block; when some fail, the others still go and the first error is rethrown
// afterwards (reset() must release everything it can, LIFE-7).
void give_back_all(Driver& driver, const std::vector<Block>& blocks) {
  std::exception_ptr first_error;
  for (const Block& block : blocks) {
    try {
      give_back(driver, block);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

// Every block the plugin got and has not given back: handed out, or released and held. Shared
// with the finalizers, which may run after reset() or after the plugin is gone (LIFE-8). Every
// member is guarded by `mutex_`.
class Blocks : public std::enable_shared_from_this<Blocks> {
 public:
  explicit Blocks(Driver* driver) : driver_(driver) {}

  // Records `block` as handed out and returns the finalizer that releases it exactly once.
  Finalizer adopt(const Block& block) {
    std::uint64_t generation = 0;
    {
      std::lock_guard lock(mutex_);
      live_.insert(block);
      generation = generation_;
    }
    return [blocks = weak_from_this(), block, generation] {
      if (auto alive = blocks.lock()) alive->release(block, generation);
    };
  }

  // How many reclaims and resets have given memory back; read without the lock before each
  // request, so that its failure can tell whether memory came free since.
  std::uint64_t frees() const noexcept { return frees_.load(); }

  // The out-of-memory path for a request made when frees() was `seen`: frees the held list, unless
  // a defer_cleanup guard lives. Returns whether memory came free since `seen`, by this call or by
  // another thread's reclaim or reset(); a reclaim still running is waited for first, as it may be
  // freeing the very blocks the request needs.
  bool reclaim(std::uint64_t seen) {
    std::vector<Block> due;
    {
      std::unique_lock lock(mutex_);
      reclaimed_.wait(lock, [this] { return !reclaiming_; });
      if (holds_ > 0 || held_.empty()) return frees_.load() != seen;
      due.swap(held_);
      reclaiming_ = true;
    }
    std::exception_ptr error;
    try {
      give_back_all(*driver_, due);
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

  // reset(): forgets every block, handed out or held, and gives it back.
  void release_all() {
    std::vector<Block> all;
    {
      std::lock_guard lock(mutex_);
      all.assign(live_.begin(), live_.end());
      all.insert(all.end(), held_.begin(), held_.end());
      live_.clear();
      held_.clear();
      ++generation_;
    }
    std::exception_ptr error;
    try {
      give_back_all(*driver_, all);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      ++frees_;
    }
    if (error) std::rethrow_exception(error);
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
  // What a finalizer does: memory joins the held list; a registration is undone at once.
  void release(const Block& block, std::uint64_t generation) {
    {
      std::lock_guard lock(mutex_);
      // Released by reset() already (LIFE-8), or by a failed construction.
      if (generation != generation_ || live_.erase(block) == 0) return;
      if (block.kind != Block::Kind::registration) {
        held_.push_back(block);
        return;
      }
    }
    // ALLOC-7: unpinned at once, even inside defer_cleanup, so the range can be pinned again.
    give_back(*driver_, block);
  }

  Driver* driver_;
  std::mutex mutex_;
  std::condition_variable reclaimed_;    // signalled when a reclaim ends
  std::set<Block> live_;                 // handed out
  std::vector<Block> held_;              // released, kept until reset() or out of memory
  int holds_ = 0;                        // live defer_cleanup guards
  bool reclaiming_ = false;              // a reclaim is freeing blocks outside the lock
  std::atomic<std::uint64_t> frees_{0};  // written under the lock only
  std::uint64_t generation_ = 0;         // reset() bumps it
};

class FreesAtReset : public GetIpcHandleMixin<BaseCUDAMemoryManager> {
 public:
  // No CUDA call here (REG-2, LIFE-4): the driver is only remembered.
  explicit FreesAtReset(Context* context)
      : GetIpcHandleMixin(context),
        blocks_(std::make_shared<Blocks>(context != nullptr ? &context->driver() : nullptr)) {}

  ~FreesAtReset() override {
    if (context() == nullptr) return;  // the version probe (REG-2) allocated nothing
    try {
      blocks_->release_all();
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("known-good frees at reset destructor", error.what());
    }
  }

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    Driver& driver = this->driver();
    const CUdeviceptr pointer = with_reclaim([&driver, size] { return driver.mem_alloc(size); });
    const Finalizer finalizer = blocks_->adopt({Block::Kind::device, pointer});
    try {
      return std::make_shared<MemoryPointer>(context(), pointer, size, nullptr, finalizer);
    } catch (...) {
      finalizer();  // the block joins the held list
      throw;
    }
  }

  HostAllocation memhostalloc(std::size_t size, bool mapped, bool portable, bool wc) override {
    Driver& driver = this->driver();
    const unsigned flags = (mapped ? CU_MEMHOSTALLOC_DEVICEMAP : 0u) |
                           (portable ? CU_MEMHOSTALLOC_PORTABLE : 0u) |
                           (wc ? CU_MEMHOSTALLOC_WRITECOMBINED : 0u);
    void* pointer =
        with_reclaim([&driver, size, flags] { return driver.mem_host_alloc(size, flags); });
    const Finalizer finalizer =
        blocks_->adopt({Block::Kind::host, reinterpret_cast<std::uintptr_t>(pointer)});
    return wrap_host(pointer, size, nullptr, mapped, finalizer);
  }

  HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                        bool mapped) override {
    Driver& driver = this->driver();
    const unsigned flags = mapped ? CU_MEMHOSTREGISTER_DEVICEMAP : 0u;
    // Pinned blocks the plugin holds count against the host's page-locked limit: they are freed
    // before the retry too.
    with_reclaim(
        [&driver, pointer, size, flags] { driver.mem_host_register(pointer, size, flags); });
    const Finalizer finalizer =
        blocks_->adopt({Block::Kind::registration, reinterpret_cast<std::uintptr_t>(pointer)});
    return wrap_host(pointer, size, std::move(owner), mapped, finalizer);
  }

  // NBEP 7: may run any number of times (LIFE-2); blocks come straight from the driver, so there
  // is nothing to set up.
  void initialize() override {}

  MemoryInfo get_memory_info() override { return driver().mem_get_info(); }

  void reset() override { blocks_->release_all(); }

  CleanupGuard defer_cleanup() override {
    blocks_->hold();
    return CleanupGuard([blocks = std::weak_ptr<Blocks>(blocks_)] {
      if (auto alive = blocks.lock()) alive->end_hold();
    });
  }

  int interface_version() const override { return kSupportedInterfaceVersion; }

 private:
  // Calls `request`; on CUDA_ERROR_OUT_OF_MEMORY frees the held blocks and calls it again (NBEP
  // 7's flush and retry). Other threads may release blocks or reclaim meanwhile, so the retry is
  // repeated while memory came free since the last attempt: out of memory reaches the caller,
  // unchanged (ALLOC-3), only when nothing held could have satisfied the request (spec §8 (c)).
  // Other errors reach the caller at once.
  template <class Request>
  auto with_reclaim(Request request) -> decltype(request()) {
    for (;;) {
      const std::uint64_t seen = blocks_->frees();
      try {
        return request();
      } catch (const CudaDriverError& error) {
        if (error.code() != CUDA_ERROR_OUT_OF_MEMORY || !blocks_->reclaim(seen)) throw;
      }
    }
  }

  // MappedMemory (handed out through own(), so views cannot free it) or PinnedMemory, as NBEP 7
  // says; the finalizer takes the block back if that construction fails.
  HostAllocation wrap_host(void* pointer, std::size_t size, std::shared_ptr<void> owner,
                           bool mapped, const Finalizer& finalizer) {
    try {
      if (mapped) {
        auto memory =
            std::make_shared<MappedMemory>(context(), pointer, size, std::move(owner), finalizer);
        return HostAllocation::mapped(memory->own());
      }
      return HostAllocation::pinned(
          std::make_shared<PinnedMemory>(context(), pointer, size, std::move(owner), finalizer));
    } catch (...) {
      finalizer();
      throw;
    }
  }

  std::shared_ptr<Blocks> blocks_;
};

}  // namespace
}  // namespace emm::known_good

EMM_EXPORT_MEMORY_MANAGER(emm::known_good::FreesAtReset, emm::known_good::kFreesAtResetDeclaration)
