// emm/detail/once_finalizer.hpp — the run-once finalizer that MemoryPointer and PinnedMemory
// share (an implementation detail of both; not for plugins).
//
//   detail::OnceFinalizer finalizer_{[=] { release(pointer); }};
//   finalizer_.run("MemoryPointer finalizer");   // runs it; true
//   finalizer_.run("MemoryPointer finalizer");   // already ran: false, nothing happens
//   finalizer_.free("MemoryPointer finalizer");  // already ran: PointerLifetimeError
//
// The finalizer is either a std::function or a plain function with one argument (what a
// subclass whose finalizer is one of its own members uses: nothing to construct, move or destroy
// per allocation, one direct call to run it).
//
// The finalizer runs at most once, in whichever thread calls run() or free() first. It must not
// throw; if it does, the exception is reported through emm::Diagnostics and swallowed (FIN-6).
// Its captured state is dropped as soon as it has run.
//
// Ownership: holds the finalizer. Thread-safety: run(), free() and alive() may race; exactly one
// run() or free() runs the finalizer. run_at_destruction() is for the holder's destructor only.
#pragma once

#include <atomic>
#include <functional>

namespace emm::detail {

class OnceFinalizer {
 public:
  // An empty `finalizer` makes an unmanaged holder: run() and free() then do nothing.
  explicit OnceFinalizer(std::function<void()> finalizer) noexcept;
  // `function(argument)` is the finalizer (managed); `function` must not be null.
  OnceFinalizer(void (*function)(void*), void* argument) noexcept;
  OnceFinalizer(const OnceFinalizer&) = delete;
  OnceFinalizer& operator=(const OnceFinalizer&) = delete;

  // Constructed with a finalizer (NBEP 7: is_managed).
  bool is_managed() const noexcept { return managed_; }
  // True until the finalizer has run; always false when unmanaged.
  bool alive() const noexcept;

  // Runs the finalizer if it has not run yet. `what` names it in a diagnostic ("MemoryPointer
  // finalizer"). Returns true if this call ran it.
  bool run(const char* what) noexcept;
  // run() for the holder's destructor. Destruction means no other thread can reach the holder
  // (the last std::shared_ptr is gone), so there is no race to settle: a plain load and store
  // instead of an atomic exchange, and the finalizer's captures go with the holder. This is
  // the path every allocation's release takes, so it is kept to what it must do.
  bool run_at_destruction(const char* what) noexcept;
  // NBEP 7 free(): unmanaged, nothing; else runs the finalizer, and throws
  // PointerLifetimeError("Freeing dead memory") if it had run already.
  void free(const char* what);

 private:
  void call() { function_ != nullptr ? function_(argument_) : finalizer_(); }

  std::function<void()> finalizer_;
  void (*function_)(void*) = nullptr;
  void* argument_ = nullptr;
  bool managed_;
  std::atomic<bool> finalized_{false};
};

}  // namespace emm::detail
