// ALLOC-7 — mempin does not keep `owner`: the returned memory's owner is null, so the host
// buffer can die while still pinned.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::HostAllocation mempin(std::shared_ptr<void> /*owner*/, void* pointer, std::size_t size,
                             bool mapped) override {
    return BaselinePool::mempin(nullptr, pointer, size, mapped);
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-7 mempin drops its owner"))
