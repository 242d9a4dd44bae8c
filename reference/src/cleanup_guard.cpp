#include "emm/cleanup_guard.hpp"

#include <exception>
#include <utility>

#include "emm/diagnostics.hpp"

namespace emm {

CleanupGuard::CleanupGuard(std::function<void()> on_exit) : on_exit_(std::move(on_exit)) {}

CleanupGuard::CleanupGuard(std::function<void()> on_exit, CleanupGuard parent)
    : on_exit_(std::move(on_exit)) {
  if (parent.active()) parent_ = std::make_unique<CleanupGuard>(std::move(parent));
}

CleanupGuard::~CleanupGuard() { release(); }

CleanupGuard::CleanupGuard(CleanupGuard&& other) noexcept
    : on_exit_(std::exchange(other.on_exit_, nullptr)), parent_(std::move(other.parent_)) {}

CleanupGuard& CleanupGuard::operator=(CleanupGuard&& other) noexcept {
  if (this != &other) {
    release();
    on_exit_ = std::exchange(other.on_exit_, nullptr);
    parent_ = std::move(other.parent_);
  }
  return *this;
}

void CleanupGuard::release() noexcept {
  if (auto exit = std::exchange(on_exit_, nullptr)) {
    try {
      exit();
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("defer_cleanup guard exit", error.what());
    } catch (...) {
      Diagnostics::ignored_exception("defer_cleanup guard exit", "unknown exception");
    }
  }
  // The parent (e.g. HostOnlyCUDAMemoryManager's guard) is left after the child's own exit.
  if (parent_) {
    parent_->release();
    parent_.reset();
  }
}

bool CleanupGuard::active() const noexcept { return static_cast<bool>(on_exit_) || parent_; }

bool CleanupGuard::holds_parent() const noexcept { return parent_ && parent_->active(); }

}  // namespace emm
