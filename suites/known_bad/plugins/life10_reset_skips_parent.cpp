// LIFE-10 — reset() releases the pool but does not call HostOnlyCUDAMemoryManager::reset():
// the parent's host allocations and pending host frees survive the reset (NBEP 7: an override
// "must also call the method from super()").
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  void reset() override { pool().release_all(); }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad LIFE-10 reset skips the parent's"))
