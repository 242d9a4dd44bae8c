#include "core/host_only_base.hpp"

#include "emm/host_only_memory_manager.hpp"
#include "emm/host_only_state.hpp"

namespace emm::conformance {

std::optional<HostOnlyBase> HostOnlyBase::of(BaseCUDAMemoryManager& manager) {
  HostOnlyBase base;
  if (auto* native = dynamic_cast<HostOnlyCUDAMemoryManager*>(&manager)) {
    base.native_ = native;
    return base;
  }
  if (auto* foreign = dynamic_cast<HostOnlyState*>(&manager);
      foreign != nullptr && foreign->has_host_only_base()) {
    base.foreign_ = foreign;
    return base;
  }
  return std::nullopt;
}

std::size_t HostOnlyBase::tracked_allocations() const {
  return native_ != nullptr ? native_->live_allocation_count() : foreign_->tracked_allocations();
}

std::size_t HostOnlyBase::pending_frees() const {
  return native_ != nullptr ? native_->deallocations().count() : foreign_->pending_frees();
}

bool HostOnlyBase::deferring() const {
  return native_ != nullptr ? native_->deallocations().is_disabled() : foreign_->deferring();
}

void HostOnlyBase::flush() const {
  if (native_ != nullptr) {
    native_->deallocations().clear();
  } else {
    foreign_->flush();
  }
}

}  // namespace emm::conformance
