// DEFER-4 — when the last guard ends, the slabs that emptied during the scope are removed from
// the pool without being freed: the deferred frees never run, not even at reset().
#include <memory>
#include <mutex>

#include "baseline_pool.hpp"

namespace {

class DroppingPool : public emm::zoo::SlabPool {
 public:
  void unhold() override {
    std::lock_guard lock(mutex_);
    if (--holds_ != 0) return;
    std::erase_if(slabs_, [](const auto& entry) { return entry.second.live == 0; });
  }
};

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context)
      : BaselinePool(context, std::make_shared<DroppingPool>()) {}
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad DEFER-4 deferred frees never run"))
