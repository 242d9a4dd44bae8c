// DEFER-2 — each guard restores the pool's hold depth it saw on entry instead of decrementing
// it: right for nested guards released in order, but releasing the outer guard first ends the
// deferral early and then leaves the pool held for good.
#include <memory>
#include <mutex>
#include <utility>

#include "baseline_pool.hpp"

namespace {

class SnapshotPool : public emm::zoo::SlabPool {
 public:
  int enter() {
    std::lock_guard lock(mutex_);
    return holds_++;
  }
  void leave(int depth_on_entry) {
    std::lock_guard lock(mutex_);
    holds_ = depth_on_entry;
    if (holds_ == 0) release_empty_slabs_locked();
  }
};

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context)
      : BaselinePool(context, std::make_shared<SnapshotPool>()) {}

  emm::CleanupGuard defer_cleanup() override {
    emm::CleanupGuard parent = HostOnlyCUDAMemoryManager::defer_cleanup();
    auto pool = std::static_pointer_cast<SnapshotPool>(shared_pool());
    const int depth_on_entry = pool->enter();
    return emm::CleanupGuard([pool, depth_on_entry] { pool->leave(depth_on_entry); },
                             std::move(parent));
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad DEFER-2 guard restores a snapshot"))
