// DEV-1 — one pool per runtime, shared by the plugin instances of every device's context (the
// "one global pool" design): each instance's reset() releases the other contexts' memory, and a
// block of one device serves requests made under another device's context (DEV-2 too).
#include <map>
#include <memory>
#include <mutex>

#include "baseline_pool.hpp"
#include "emm/runtime.hpp"

namespace {

std::shared_ptr<emm::zoo::SlabPool> pool_for(emm::Context* context) {
  // The null-context instance that set_memory_manager builds gets a pool of its own.
  if (context == nullptr) return std::make_shared<emm::zoo::SlabPool>();
  static std::mutex mutex;
  static std::map<const emm::Runtime*, std::weak_ptr<emm::zoo::SlabPool>> pools;
  std::lock_guard lock(mutex);
  std::erase_if(pools, [](const auto& entry) { return entry.second.expired(); });
  std::weak_ptr<emm::zoo::SlabPool>& slot = pools[&context->runtime()];
  if (auto shared = slot.lock()) return shared;
  auto pool = std::make_shared<emm::zoo::SlabPool>();
  slot = pool;
  return pool;
}

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context) : BaselinePool(context, pool_for(context)) {}
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad DEV-1 one pool shared by every context"))
