// DEFER-3 — defer_cleanup takes HostOnlyCUDAMemoryManager's guard but does not move it into the
// guard it returns, so the parent's deferral ends before the scope starts (host frees are not
// deferred).
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::CleanupGuard defer_cleanup() override {
    emm::CleanupGuard parent = HostOnlyCUDAMemoryManager::defer_cleanup();
    pool().hold();
    return emm::CleanupGuard([pool = shared_pool()] { pool->unhold(); });
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad DEFER-3 drops the parent's guard"))
