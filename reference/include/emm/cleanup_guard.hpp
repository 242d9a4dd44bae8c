// emm/cleanup_guard.hpp — the RAII guard returned by defer_cleanup(): C++'s context manager.
//
//   {
//     emm::CleanupGuard guard = context.defer_cleanup();  // "with defer_cleanup():"
//     ...                                                 // frees are deferred here
//   }                                                     // leaving the scope
//
// A guard runs its exit action exactly once, when destroyed or released. Guards compose: a
// plugin's guard can hold its parent's guard for its whole lifetime (NBEP 7: a HostOnly
// subclass that overrides defer_cleanup "must hold an active context manager from
// super().defer_cleanup()"); the parent is released *after* the child's own exit action.
//
// Move-only. Move-assigning into a guard that is still active **releases it first** (its exit
// action runs, then its parent's), as a unique_ptr frees what it held: write
// `guard.release(); guard = other;` where that ordering matters. Not thread-safe: one guard
// belongs to one scope.
#pragma once

#include <functional>
#include <memory>

namespace emm {

class CleanupGuard {
 public:
  CleanupGuard() = default;  // an inactive guard: does nothing
  explicit CleanupGuard(std::function<void()> on_exit);
  CleanupGuard(std::function<void()> on_exit, CleanupGuard parent);
  ~CleanupGuard();

  CleanupGuard(CleanupGuard&& other) noexcept;
  CleanupGuard& operator=(CleanupGuard&& other) noexcept;
  CleanupGuard(const CleanupGuard&) = delete;
  CleanupGuard& operator=(const CleanupGuard&) = delete;

  // Leaves the scope now: runs the exit action, then releases the parent. Idempotent.
  void release() noexcept;
  bool active() const noexcept;
  // True if this guard holds an active parent guard (a composed guard).
  bool holds_parent() const noexcept;

 private:
  std::function<void()> on_exit_;
  std::unique_ptr<CleanupGuard> parent_;
};

}  // namespace emm
