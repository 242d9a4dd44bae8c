// DEFER-2 — the plugin keeps its parents' guards on a stack and a guard pops it only when it is
// on top (it assumes LIFO release): a guard released out of order leaves a parent's guard held
// for good, so the HostOnly queue stays disabled after every guard is gone.
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;

  emm::CleanupGuard defer_cleanup() override {
    std::size_t depth = 0;
    {
      std::lock_guard lock(parents_->mutex);
      depth = parents_->guards.size();
      parents_->guards.push_back(HostOnlyCUDAMemoryManager::defer_cleanup());
    }
    pool().hold();
    return emm::CleanupGuard([parents = parents_, pool = shared_pool(), depth] {
      {
        std::lock_guard lock(parents->mutex);
        if (parents->guards.size() == depth + 1) parents->guards.pop_back();
      }
      pool->unhold();
    });
  }

 private:
  struct Parents {
    std::mutex mutex;
    std::vector<emm::CleanupGuard> guards;
  };
  std::shared_ptr<Parents> parents_ = std::make_shared<Parents>();
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad DEFER-2 parent guards on a LIFO stack"))
