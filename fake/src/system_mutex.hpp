// fake_detail::SystemMutex — the one lock of a FakeSystem, taken by every driver call of every
// simulated process.
//
// A real driver promises no ordering between the host threads that call it, and a race
// detector cannot see inside it. The fake's lock, though, is a pthread mutex that
// ThreadSanitizer intercepts: every driver call would order the calling thread after every
// earlier call of any thread, so a plugin that shares state between threads without a lock of
// its own would go unreported whenever a driver call falls between the two accesses (nearly
// always). When the TSan runtime is loaded into a process whose fake is not itself instrumented
// (emm-certify's worker certifying a plugin built with ThreadSanitizer), the lock and unlock are
// therefore hidden from it, and so is everything the fake reads, writes, allocates and frees
// while it holds the lock (AnnotateIgnoreSync/Reads/WritesBegin/End): only the plugin's own
// synchronisation orders its threads. A fake compiled with ThreadSanitizer (the kit's tsan preset)
// keeps its lock visible, as its own state needs it.
#pragma once

#include <mutex>

namespace emm::fake_detail {

class SystemMutex {
 public:
  void lock();
  void unlock();

 private:
  std::mutex mutex_;
};

}  // namespace emm::fake_detail
