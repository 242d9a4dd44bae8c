// base_passthrough — a correct plugin derived from BaseCUDAMemoryManager directly, not from
// HostOnlyCUDAMemoryManager, so it implements every NBEP 7 method itself (spec §7).
//
// memalloc is cuMemAlloc, memhostalloc is cuMemHostAlloc with the caller's mapped, portable and
// write-combined flags (MappedMemory when mapped, PinnedMemory otherwise), mempin registers
// exactly [p, p + n) with cuMemHostRegister. A release frees at once; inside defer_cleanup the
// frees wait until the outermost guard ends, except unpinning, which is always immediate so the
// range can be pinned again (ALLOC-7). A ledger of everything allocated lets reset() and the
// destructor release what callers still hold; their later releases then do nothing (LIFE-7/8).
// get_ipc_handle exports the cuMemAlloc block a pointer lies in, found by its address.
//
// Thread-safety: one mutex over the ledger; the driver is called outside it.
#include <compare>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "base_passthrough_declaration.hpp"
#include "emm/base_memory_manager.hpp"
#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/driver.hpp"
#include "emm/errors.hpp"
#include "emm/plugin_abi.hpp"

namespace emm::known_good {
namespace {

// One thing to give back to the driver, and how.
struct Release {
  enum class Kind { device, host, registration };  // cuMemFree, cuMemFreeHost, cuMemHostUnregister
  Kind kind;
  std::uintptr_t address;
  friend auto operator<=>(const Release&, const Release&) = default;
};

void give_back(Driver& driver, const Release& release) {
  switch (release.kind) {
    case Release::Kind::device:
      driver.mem_free(static_cast<CUdeviceptr>(release.address));
      break;
    case Release::Kind::host:
      driver.mem_free_host(reinterpret_cast<void*>(release.address));
      break;
    case Release::Kind::registration:
      driver.mem_host_unregister(reinterpret_cast<void*>(release.address));
      break;
  }
}

// Gives back every release; when some fail, the others still run and the first error is
// rethrown afterwards (reset() must release everything it can, LIFE-7).
void give_back_all(Driver& driver, const std::vector<Release>& releases) {
  std::exception_ptr first_error;
  for (const Release& release : releases) {
    try {
      give_back(driver, release);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

// Everything the plugin allocated and has not given back. Shared with the finalizers, which may
// run after reset() or after the plugin is gone (LIFE-8). Every member is guarded by `mutex_`.
class Ledger : public std::enable_shared_from_this<Ledger> {
 public:
  explicit Ledger(Driver* driver) : driver_(driver) {}

  // Records `release` as live and returns the finalizer that gives it back exactly once.
  Finalizer adopt(const Release& release) {
    std::uint64_t generation = 0;
    {
      std::lock_guard lock(mutex_);
      live_.insert(release);
      generation = generation_;
    }
    return [ledger = weak_from_this(), release, generation] {
      if (auto alive = ledger.lock()) alive->finalize(release, generation);
    };
  }

  bool is_live(const Release& release) {
    std::lock_guard lock(mutex_);
    return live_.contains(release);
  }

  void hold() {
    std::lock_guard lock(mutex_);
    ++holds_;
  }

  // The outermost guard's end is this plugin's flush point: what waited is freed now.
  void end_hold() {
    std::vector<Release> due;
    {
      std::lock_guard lock(mutex_);
      if (--holds_ > 0) return;
      due.swap(deferred_);
    }
    try {
      give_back_all(*driver_, due);
    } catch (const std::exception& error) {
      // A guard's exit must not throw; the memory is lost to this plugin either way.
      Diagnostics::ignored_exception("known-good pass-through defer_cleanup exit", error.what());
    }
  }

  // Forgets everything, live allocations included, and gives it back.
  void release_all() {
    std::vector<Release> all;
    {
      std::lock_guard lock(mutex_);
      all.assign(live_.begin(), live_.end());
      all.insert(all.end(), deferred_.begin(), deferred_.end());
      live_.clear();
      deferred_.clear();
      ++generation_;
    }
    give_back_all(*driver_, all);
  }

 private:
  void finalize(const Release& release, std::uint64_t generation) {
    {
      std::lock_guard lock(mutex_);
      // Released by reset() already, or given back by a failed construction.
      if (generation != generation_ || live_.erase(release) == 0) return;
      // ALLOC-7: unpinning is never deferred, so the range can be pinned again at once.
      if (holds_ > 0 && release.kind != Release::Kind::registration) {
        deferred_.push_back(release);
        return;
      }
    }
    give_back(*driver_, release);
  }

  Driver* driver_;
  std::mutex mutex_;
  std::set<Release> live_;
  std::vector<Release> deferred_;  // released while a defer_cleanup guard lived
  int holds_ = 0;                  // live defer_cleanup guards
  std::uint64_t generation_ = 0;   // reset() bumps it
};

std::string hex(std::uintptr_t value) {
  std::ostringstream text;
  text << "0x" << std::hex << value;
  return text.str();
}

class BasePassthrough : public BaseCUDAMemoryManager {
 public:
  // No CUDA call here (REG-2, LIFE-4): the driver is only remembered.
  explicit BasePassthrough(Context* context)
      : BaseCUDAMemoryManager(context),
        ledger_(std::make_shared<Ledger>(context != nullptr ? &context->driver() : nullptr)) {}

  ~BasePassthrough() override {
    if (context() == nullptr) return;  // the version probe (REG-2) allocated nothing
    try {
      ledger_->release_all();
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("known-good pass-through destructor", error.what());
    }
  }

  // Out of memory reaches the caller at once (ALLOC-3): NBEP 7's retry follows a flush of
  // pending frees, and this plugin has none outside defer_cleanup, where a flush does nothing.
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    const CUdeviceptr pointer = driver().mem_alloc(size);
    const Finalizer finalizer = ledger_->adopt({Release::Kind::device, pointer});
    try {
      return std::make_shared<MemoryPointer>(context(), pointer, size, nullptr, finalizer);
    } catch (...) {
      finalizer();
      throw;
    }
  }

  HostAllocation memhostalloc(std::size_t size, bool mapped, bool portable, bool wc) override {
    const unsigned flags = (mapped ? CU_MEMHOSTALLOC_DEVICEMAP : 0u) |
                           (portable ? CU_MEMHOSTALLOC_PORTABLE : 0u) |
                           (wc ? CU_MEMHOSTALLOC_WRITECOMBINED : 0u);
    void* pointer = driver().mem_host_alloc(size, flags);
    const Finalizer finalizer =
        ledger_->adopt({Release::Kind::host, reinterpret_cast<std::uintptr_t>(pointer)});
    return wrap_host(pointer, size, nullptr, mapped, finalizer);
  }

  HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                        bool mapped) override {
    driver().mem_host_register(pointer, size, mapped ? CU_MEMHOSTREGISTER_DEVICEMAP : 0u);
    const Finalizer finalizer =
        ledger_->adopt({Release::Kind::registration, reinterpret_cast<std::uintptr_t>(pointer)});
    return wrap_host(pointer, size, std::move(owner), mapped, finalizer);
  }

  // NBEP 7: may run any number of times (LIFE-2); memory comes straight from the driver, so
  // there is nothing to set up.
  void initialize() override {}

  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override {
    if (!memory || memory->device_pointer() == 0) {
      throw InvalidArgumentError(
          "get_ipc_handle: the memory is null or empty; export memory returned by memalloc() "
          "or a view of it");
    }
    // The block is found by address, not through memory->owner(): Numba exports "foreign"
    // MemoryPointers made over part of an allocation, whose owner() is themselves (spec §7).
    const CUdeviceptr base = driver().mem_get_address_range(memory->device_pointer()).base;
    if (!ledger_->is_live({Release::Kind::device, base})) {
      throw InvalidArgumentError("get_ipc_handle: the memory at " + hex(memory->device_pointer()) +
                                 " is not a live memalloc() allocation of this plugin (nor a view "
                                 "of one); export memory this plugin allocated");
    }
    // IPC-1: the driver's handle names the whole block; the view's offset travels beside it.
    return IpcHandle(memory, driver().ipc_get_mem_handle(base), memory->size(),
                     context()->device_identity(), memory->device_pointer() - base);
  }

  MemoryInfo get_memory_info() override { return driver().mem_get_info(); }

  void reset() override { ledger_->release_all(); }

  CleanupGuard defer_cleanup() override {
    ledger_->hold();
    return CleanupGuard([ledger = std::weak_ptr<Ledger>(ledger_)] {
      if (auto alive = ledger.lock()) alive->end_hold();
    });
  }

  int interface_version() const override { return kSupportedInterfaceVersion; }

 private:
  // MappedMemory (handed out through own(), so views cannot free it) or PinnedMemory, as NBEP 7
  // says; the finalizer gives the memory back if that construction fails.
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

  std::shared_ptr<Ledger> ledger_;
};

}  // namespace
}  // namespace emm::known_good

EMM_EXPORT_MEMORY_MANAGER(emm::known_good::BasePassthrough,
                          emm::known_good::kBasePassthroughDeclaration)
