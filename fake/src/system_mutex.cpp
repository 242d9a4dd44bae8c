// fake_detail::SystemMutex: system_mutex.hpp says why its locking is hidden from ThreadSanitizer.
#include "system_mutex.hpp"

#include <dlfcn.h>

namespace emm::fake_detail {
namespace {

#if defined(__SANITIZE_THREAD__)
#define EMM_FAKE_INSTRUMENTED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EMM_FAKE_INSTRUMENTED 1
#endif
#endif

using Annotation = void (*)(const char* file, int line);

struct Annotations {
  Annotation ignore_sync_begin = nullptr;
  Annotation ignore_sync_end = nullptr;
  Annotation ignore_reads_begin = nullptr;
  Annotation ignore_reads_end = nullptr;
  Annotation ignore_writes_begin = nullptr;
  Annotation ignore_writes_end = nullptr;
  bool loaded() const noexcept { return ignore_sync_begin != nullptr; }
};

#ifndef EMM_FAKE_INSTRUMENTED
Annotation find(const char* name) {
  return reinterpret_cast<Annotation>(::dlsym(RTLD_DEFAULT, name));
}
#endif

// The TSan runtime's annotations, when it is loaded and this file is not instrumented.
const Annotations& annotations() {
  static const Annotations found = [] {
    Annotations a;
#ifndef EMM_FAKE_INSTRUMENTED
    a.ignore_sync_begin = find("AnnotateIgnoreSyncBegin");
    a.ignore_sync_end = find("AnnotateIgnoreSyncEnd");
    a.ignore_reads_begin = find("AnnotateIgnoreReadsBegin");
    a.ignore_reads_end = find("AnnotateIgnoreReadsEnd");
    a.ignore_writes_begin = find("AnnotateIgnoreWritesBegin");
    a.ignore_writes_end = find("AnnotateIgnoreWritesEnd");
    if (!a.ignore_sync_begin || !a.ignore_sync_end || !a.ignore_reads_begin ||
        !a.ignore_reads_end || !a.ignore_writes_begin || !a.ignore_writes_end) {
      a = Annotations{};
    }
#endif
    return a;
  }();
  return found;
}

}  // namespace

// While the lock is held the detector also ignores this thread's reads and writes (the fake's
// state, and the blocks it allocates and frees for it, are its own to order), and every
// synchronisation (the lock itself included).
void SystemMutex::lock() {
  const Annotations& a = annotations();
  if (a.loaded()) {
    a.ignore_sync_begin(__FILE__, __LINE__);
    a.ignore_reads_begin(__FILE__, __LINE__);
    a.ignore_writes_begin(__FILE__, __LINE__);
  }
  mutex_.lock();
}

void SystemMutex::unlock() {
  mutex_.unlock();
  const Annotations& a = annotations();
  if (a.loaded()) {
    a.ignore_writes_end(__FILE__, __LINE__);
    a.ignore_reads_end(__FILE__, __LINE__);
    a.ignore_sync_end(__FILE__, __LINE__);
  }
}

}  // namespace emm::fake_detail
