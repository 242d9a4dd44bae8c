// ALLOC-6 — memhostalloc drops `portable` before cuMemHostAlloc (as numba-cuda's mapped_array
// does): the memory is page-locked for the allocating context only.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::HostAllocation memhostalloc(std::size_t size, bool mapped, bool, bool wc) override {
    return BaselinePool::memhostalloc(size, mapped, false, wc);
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-6 memhostalloc drops portable"))
