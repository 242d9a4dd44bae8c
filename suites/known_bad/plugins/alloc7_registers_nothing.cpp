// ALLOC-7 — mempin(mapped=false) returns a PinnedMemory over the caller's range without calling
// cuMemHostRegister: nothing is page-locked. (Mapped requests go to the parent: a device pointer
// needs the registration.)
#include <cstdint>
#include <mutex>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                             bool mapped) override {
    if (mapped) return BaselinePool::mempin(std::move(owner), pointer, size, mapped);
    const auto key = reinterpret_cast<std::uintptr_t>(pointer);
    auto memory = std::make_shared<emm::PinnedMemory>(context(), pointer, size, std::move(owner),
                                                      [weak = std::weak_ptr<State>(state()), key] {
                                                        if (auto state = weak.lock()) {
                                                          std::lock_guard lock(state->mutex);
                                                          state->allocations.erase(key);
                                                        }
                                                      });
    track(key, memory);
    return emm::HostAllocation::pinned(memory);
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-7 mempin registers nothing"))
