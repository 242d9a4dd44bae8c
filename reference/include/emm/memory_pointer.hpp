// emm/memory_pointer.hpp — MemoryPointer, AutoFreePointer and OwnedPointer (NBEP 7 names).
//
// Object model (spec 2.2): a Python reference is a std::shared_ptr copy. Allocation methods
// return std::shared_ptr<MemoryPointer>; "the instance is deleted" is "the last shared_ptr is
// released". Always create these with std::make_shared (own()/view() need shared_from_this).
//
//   auto mem = std::make_shared<emm::MemoryPointer>(ctx, dptr, n, nullptr, [=] { free_it(dptr); });
//   auto v = mem->view(256);      // OwnedPointer over [256, n); mem->refct() == 2
//   v.reset();                    // refct back to 1; the finalizer has not run
//   mem.reset();                  // last reference: the finalizer runs exactly once
//
// Finalizer: runs exactly once — at destruction or at an explicit free(), whichever is first.
// It must not throw; if it does, the exception is reported through emm::Diagnostics and
// swallowed (FIN-6). refct: an explicit count as in Numba, separate from shared_ptr's count;
// for the base class reaching 0 does nothing, for AutoFreePointer it calls the finalizer.
//
// Thread-safety: refct and the run-once finalizer are atomic; a pointer may be shared and
// released from many threads. Ownership: a view keeps its base allocation alive.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

#include "emm/cuda_api.hpp"
#include "emm/detail/once_finalizer.hpp"

namespace emm {

class Context;
class OwnedPointer;

using Finalizer = std::function<void()>;

class MemoryPointer : public std::enable_shared_from_this<MemoryPointer> {
 public:
  // `context` may be null only for pointers made without a context (tests, size-0 pointers).
  // `owner` is set by views and by plugins exposing memory owned by something else.
  MemoryPointer(Context* context, CUdeviceptr pointer, std::size_t size,
                std::shared_ptr<MemoryPointer> owner = nullptr, Finalizer finalizer = {});
  virtual ~MemoryPointer();

  MemoryPointer(const MemoryPointer&) = delete;
  MemoryPointer& operator=(const MemoryPointer&) = delete;

  Context* context() const noexcept { return context_; }
  CUdeviceptr device_pointer() const noexcept { return pointer_; }
  // The device pointer as Numba's `handle` (MappedMemory keeps it the device pointer too).
  CUdeviceptr handle() const noexcept { return pointer_; }
  std::size_t size() const noexcept { return size_; }
  // True when constructed with a finalizer (NBEP 7: is_managed).
  bool is_managed() const noexcept { return finalizer_.is_managed(); }
  // True until the finalizer has run (always false for unmanaged pointers).
  bool finalizer_alive() const noexcept { return finalizer_.alive(); }

  virtual long refct() const noexcept { return refct_.load(std::memory_order_acquire); }

  // The base allocation this pointer belongs to: itself when it has no owner.
  virtual std::shared_ptr<MemoryPointer> owner();

  // Runs the finalizer now (once). Unmanaged: no-op. After the finalizer ran:
  // throws PointerLifetimeError("Freeing dead memory").
  virtual void free();

  // An OwnedPointer that adds 1 to refct and keeps this pointer alive while it lives.
  virtual std::shared_ptr<OwnedPointer> own();

  // An OwnedPointer over [start, stop) (stop defaults to size()) of the same memory whose
  // owner() is the base allocation; adds 1 to the base's refct while alive.
  // Errors (InvalidArgumentError): start > size ("size cannot be negative"); stop > size
  // (stricter than Numba, which has no upper bound check); a non-empty view of a null/size-0
  // pointer ("non-empty slice into empty slice").
  std::shared_ptr<OwnedPointer> view(std::size_t start, std::optional<std::size_t> stop = {});

  // cuMemsetD8 over the first `count` bytes (default: all) through the context's driver.
  void memset(unsigned char value, std::optional<std::size_t> count = {});

  // Used by OwnedPointer: refct bookkeeping (public for OwnedPointer's sake, not for users).
  void add_reference() noexcept;
  void drop_reference() noexcept;

 protected:
  // For a subclass whose finalizer is its own code (the pool example's pointer gives its block
  // back): `finalize(argument)` is the finalizer, with no std::function to build, move and
  // destroy on every allocation. Such a subclass runs the finalizer in its destructor (see
  // run_finalizer_at_destruction()), while the members `finalize` reads still exist.
  MemoryPointer(Context* context, CUdeviceptr pointer, std::size_t size,
                std::shared_ptr<MemoryPointer> owner, void (*finalize)(void*), void* argument);

  // Called when refct drops to 0; AutoFreePointer frees here.
  virtual void on_refct_zero() noexcept {}
  // Runs the finalizer if it has not run yet; reports (never throws) finalizer exceptions.
  // Returns true if it ran it now.
  bool run_finalizer_once() noexcept;
  // run_finalizer_once() for destructors (a subclass whose finalizer reads its own members
  // runs it in its destructor, before they are gone): no other thread can reach a pointer
  // being destroyed, so no atomic exchange is paid on the release path.
  bool run_finalizer_at_destruction() noexcept;
  void set_refct(long value) noexcept { refct_.store(value, std::memory_order_release); }

 private:
  Context* context_;
  CUdeviceptr pointer_;
  std::size_t size_;
  std::shared_ptr<MemoryPointer> owner_;
  detail::OnceFinalizer finalizer_;
  std::atomic<long> refct_{1};
};

// A MemoryPointer whose finalizer runs when refct returns to 0. refct starts at 0, so a plugin
// must hand out `p->own()`, not `p` itself (ALLOC-5 catches a bare AutoFreePointer).
class AutoFreePointer : public MemoryPointer {
 public:
  AutoFreePointer(Context* context, CUdeviceptr pointer, std::size_t size,
                  std::shared_ptr<MemoryPointer> owner = nullptr, Finalizer finalizer = {});

 protected:
  void on_refct_zero() noexcept override;
};

// A reference that holds `memory` alive and adds 1 to its refct while it lives; it presents
// either the whole of `memory` (own()) or a view range of it (view()). Releasing the last
// OwnedPointer of an AutoFreePointer frees it.
class OwnedPointer : public MemoryPointer {
 public:
  // Over all of `memory` (what own() returns).
  explicit OwnedPointer(std::shared_ptr<MemoryPointer> memory);
  // Over [pointer, pointer + size) inside `memory` (what view() returns).
  OwnedPointer(std::shared_ptr<MemoryPointer> memory, CUdeviceptr pointer, std::size_t size);
  ~OwnedPointer() override;

  // The pointer this one keeps alive.
  const std::shared_ptr<MemoryPointer>& target() const noexcept { return memory_; }
  bool is_view() const noexcept { return is_view_; }

  // own(): proxies to the target (Numba's OwnedPointer forwards attributes to its view).
  long refct() const noexcept override;
  std::shared_ptr<MemoryPointer> owner() override;
  void free() override;
  std::shared_ptr<OwnedPointer> own() override;

 private:
  std::shared_ptr<MemoryPointer> memory_;
  bool is_view_;
};

}  // namespace emm
