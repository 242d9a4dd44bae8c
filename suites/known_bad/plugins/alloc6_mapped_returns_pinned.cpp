// ALLOC-6 — memhostalloc ignores `mapped` and always returns PinnedMemory.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::HostAllocation memhostalloc(std::size_t size, bool /*mapped*/, bool portable,
                                   bool wc) override {
    return BaselinePool::memhostalloc(size, false, portable, wc);
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-6 mapped memhostalloc returns pinned"))
