// The children ChildProcess is tracking, so that kill_stray_children() can tell them from
// strays. Process-wide by nature (it mirrors the process's own children).
//
// Thread-safety: every member locks. A fork() taken while another thread held the lock leaves
// the child's copy locked: the forked child must not use the registry then (child_process.hpp
// asks for fork() from a single-threaded process). Entries inherited by a forked child are
// the parent's children, not the child's: the registry drops them the first time the child
// uses it (it remembers which pid it belongs to).
#pragma once

#include <sys/types.h>

#include <mutex>
#include <vector>

namespace emm::conformance::detail {

class ChildRegistry {
 public:
  static ChildRegistry& instance();

  // Around fork(): a child forked but not yet added is not a stray.
  void spawn_begins();
  void spawn_ends(pid_t child);  // child < 0: fork() failed
  void forget(pid_t child);
  // Those of `children` not tracked. Waits while a spawn is between fork() and spawn_ends().
  std::vector<pid_t> untracked(const std::vector<pid_t>& children);

 private:
  void adopt_locked();

  std::mutex mutex_;
  pid_t owner_ = 0;
  int spawning_ = 0;
  std::vector<pid_t> tracked_;
};

}  // namespace emm::conformance::detail
