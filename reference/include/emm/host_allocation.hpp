// emm/host_allocation.hpp — what memhostalloc() and mempin() return: mapped or pinned memory.
//
// NBEP 7: "MappedMemory from memhostalloc/mempin when mapped; PinnedMemory otherwise". The
// caller inspects is_mapped() to learn which it got (ALLOC-6/ALLOC-7 check that it is the
// right one). Mapped memory is held as a MemoryPointer reference — usually an OwnedPointer
// over a MappedMemory, so that views cannot free it early — and mapped_memory() finds the
// MappedMemory behind it.
//
// A value type holding shared_ptrs; copies share the memory.
#pragma once

#include <memory>
#include <variant>

#include "emm/mapped_memory.hpp"
#include "emm/pinned_memory.hpp"

namespace emm {

class HostAllocation {
 public:
  HostAllocation() = default;  // empty: is_mapped() false, pinned() null
  static HostAllocation mapped(std::shared_ptr<MemoryPointer> pointer);
  static HostAllocation pinned(std::shared_ptr<PinnedMemory> memory);

  bool empty() const noexcept;
  bool is_mapped() const noexcept;
  // The mapped reference (null when pinned).
  std::shared_ptr<MemoryPointer> mapped_pointer() const;
  // The MappedMemory behind the mapped reference, or null (also null when the plugin
  // returned some other MemoryPointer for a mapped request: ALLOC-6 fails that).
  MappedMemory* mapped_memory() const;
  // The PinnedMemory (null when mapped).
  std::shared_ptr<PinnedMemory> pinned_memory() const;

  void* host_pointer() const;
  std::size_t size() const;
  // The owner given to mempin (null for memhostalloc).
  std::shared_ptr<void> owned() const;

 private:
  std::variant<std::monostate, std::shared_ptr<MemoryPointer>, std::shared_ptr<PinnedMemory>>
      memory_;
};

}  // namespace emm
