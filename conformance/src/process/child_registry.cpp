#include "child_registry.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace emm::conformance::detail {

ChildRegistry& ChildRegistry::instance() {
  static ChildRegistry registry;
  return registry;
}

void ChildRegistry::adopt_locked() {
  const pid_t self = ::getpid();
  if (owner_ == self) return;
  owner_ = self;
  spawning_ = 0;
  tracked_.clear();
}

void ChildRegistry::spawn_begins() {
  std::lock_guard lock(mutex_);
  adopt_locked();
  ++spawning_;
}

void ChildRegistry::spawn_ends(pid_t child) {
  std::lock_guard lock(mutex_);
  adopt_locked();
  if (spawning_ > 0) --spawning_;
  if (child > 0) tracked_.push_back(child);
}

void ChildRegistry::forget(pid_t child) {
  std::lock_guard lock(mutex_);
  adopt_locked();
  std::erase(tracked_, child);
}

std::vector<pid_t> ChildRegistry::untracked(const std::vector<pid_t>& children) {
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      adopt_locked();
      if (spawning_ == 0) {
        std::vector<pid_t> strays;
        for (pid_t child : children) {
          if (std::find(tracked_.begin(), tracked_.end(), child) == tracked_.end()) {
            strays.push_back(child);
          }
        }
        return strays;
      }
    }
    // A fork() is in flight in another thread: its child is about to be tracked.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace emm::conformance::detail
