#include "emm/pinned_memory.hpp"

#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"

#include <exception>

namespace emm {

PinnedMemory::PinnedMemory(Context* context, void* host_pointer, std::size_t size,
                           std::shared_ptr<void> owned, Finalizer finalizer)
    : context_(context),
      host_pointer_(host_pointer),
      size_(size),
      owned_(std::move(owned)),
      finalizer_(std::move(finalizer)),
      managed_(static_cast<bool>(finalizer_)) {}

PinnedMemory::~PinnedMemory() { run_finalizer_once(); }

bool PinnedMemory::finalizer_alive() const noexcept {
  return managed_ && !finalized_.load(std::memory_order_acquire);
}

bool PinnedMemory::run_finalizer_once() noexcept {
  if (!managed_ || finalized_.exchange(true, std::memory_order_acq_rel)) return false;
  try {
    finalizer_();
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception("PinnedMemory finalizer", error.what());
  } catch (...) {
    Diagnostics::ignored_exception("PinnedMemory finalizer", "unknown exception");
  }
  finalizer_ = nullptr;
  return true;
}

void PinnedMemory::free() {
  if (!managed_) return;
  if (!run_finalizer_once()) throw PointerLifetimeError("Freeing dead memory");
}

}  // namespace emm
