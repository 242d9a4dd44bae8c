// emm/pinned_memory.hpp — page-locked host memory that is not mapped (NBEP 7 PinnedMemory).
//
// Not a MemoryPointer: it has no device pointer and no refct. Its finalizer runs exactly once,
// when the last shared_ptr goes (or at free()). Thread-safety: as MemoryPointer.
#pragma once

#include <memory>

#include "emm/detail/once_finalizer.hpp"
#include "emm/memory_pointer.hpp"

namespace emm {

class PinnedMemory : public std::enable_shared_from_this<PinnedMemory> {
 public:
  PinnedMemory(Context* context, void* host_pointer, std::size_t size,
               std::shared_ptr<void> owned = nullptr, Finalizer finalizer = {});
  ~PinnedMemory();
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;

  Context* context() const noexcept { return context_; }
  void* host_pointer() const noexcept { return host_pointer_; }
  std::size_t size() const noexcept { return size_; }
  bool is_managed() const noexcept { return finalizer_.is_managed(); }
  bool finalizer_alive() const noexcept { return finalizer_.alive(); }
  const std::shared_ptr<void>& owned() const noexcept { return owned_; }
  // NBEP 7: own() returns the pinned memory itself.
  std::shared_ptr<PinnedMemory> own() { return shared_from_this(); }
  // Runs the finalizer now; after it ran, throws PointerLifetimeError("Freeing dead memory").
  void free();

 private:
  Context* context_;
  void* host_pointer_;
  std::size_t size_;
  std::shared_ptr<void> owned_;
  detail::OnceFinalizer finalizer_;
};

}  // namespace emm
