#include "emm/host_allocation.hpp"

namespace emm {

HostAllocation HostAllocation::mapped(std::shared_ptr<MemoryPointer> pointer) {
  HostAllocation result;
  result.memory_ = std::move(pointer);
  return result;
}

HostAllocation HostAllocation::pinned(std::shared_ptr<PinnedMemory> memory) {
  HostAllocation result;
  result.memory_ = std::move(memory);
  return result;
}

bool HostAllocation::empty() const noexcept {
  return std::holds_alternative<std::monostate>(memory_);
}

bool HostAllocation::is_mapped() const noexcept {
  return std::holds_alternative<std::shared_ptr<MemoryPointer>>(memory_);
}

std::shared_ptr<MemoryPointer> HostAllocation::mapped_pointer() const {
  if (auto* p = std::get_if<std::shared_ptr<MemoryPointer>>(&memory_)) return *p;
  return nullptr;
}

MappedMemory* HostAllocation::mapped_memory() const {
  auto pointer = mapped_pointer();
  if (!pointer) return nullptr;
  if (auto* mapped = dynamic_cast<MappedMemory*>(pointer.get())) return mapped;
  return dynamic_cast<MappedMemory*>(pointer->owner().get());
}

std::shared_ptr<PinnedMemory> HostAllocation::pinned_memory() const {
  if (auto* p = std::get_if<std::shared_ptr<PinnedMemory>>(&memory_)) return *p;
  return nullptr;
}

void* HostAllocation::host_pointer() const {
  if (auto pinned = pinned_memory()) return pinned->host_pointer();
  if (auto* mapped = mapped_memory()) return mapped->host_pointer();
  return nullptr;
}

std::size_t HostAllocation::size() const {
  if (auto pinned = pinned_memory()) return pinned->size();
  if (auto pointer = mapped_pointer()) return pointer->size();
  return 0;
}

std::shared_ptr<void> HostAllocation::owned() const {
  if (auto pinned = pinned_memory()) return pinned->owned();
  if (auto* mapped = mapped_memory()) return mapped->owned();
  return nullptr;
}

}  // namespace emm
