#include "emm/detail/once_finalizer.hpp"

#include <exception>
#include <utility>

#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"

namespace emm::detail {

OnceFinalizer::OnceFinalizer(std::function<void()> finalizer) noexcept
    : finalizer_(std::move(finalizer)), managed_(static_cast<bool>(finalizer_)) {}

OnceFinalizer::OnceFinalizer(void (*function)(void*), void* argument) noexcept
    : function_(function), argument_(argument), managed_(true) {}

bool OnceFinalizer::alive() const noexcept {
  return managed_ && !finalized_.load(std::memory_order_acquire);
}

bool OnceFinalizer::run(const char* what) noexcept {
  if (!managed_ || finalized_.exchange(true, std::memory_order_acq_rel)) return false;
  // FIN-6: a finalizer must not throw; if it does, report it and carry on.
  try {
    call();
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception(what, error.what());
  } catch (...) {
    Diagnostics::ignored_exception(what, "unknown exception");
  }
  finalizer_ = nullptr;  // drop captured state now, not at destruction
  return true;
}

bool OnceFinalizer::run_at_destruction(const char* what) noexcept {
  if (!managed_ || finalized_.load(std::memory_order_relaxed)) return false;
  finalized_.store(true, std::memory_order_relaxed);
  try {
    call();
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception(what, error.what());
  } catch (...) {
    Diagnostics::ignored_exception(what, "unknown exception");
  }
  return true;
}

void OnceFinalizer::free(const char* what) {
  if (!managed_) return;
  if (!run(what)) throw PointerLifetimeError("Freeing dead memory");
}

}  // namespace emm::detail
