// INFO-1 — get_memory_info returns the figures cached at the first initialize(), so free does
// not drop when the plugin's memory use grows.
#include <mutex>
#include <optional>

#include "baseline_pool.hpp"
#include "emm/driver.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  void initialize() override {
    BaselinePool::initialize();
    std::lock_guard lock(mutex_);
    if (!cached_) cached_ = BaselinePool::get_memory_info();
  }
  emm::MemoryInfo get_memory_info() override {
    std::lock_guard lock(mutex_);
    if (!cached_) cached_ = BaselinePool::get_memory_info();
    return *cached_;
  }

 private:
  std::mutex mutex_;
  std::optional<emm::MemoryInfo> cached_;
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad INFO-1 free never drops"))
