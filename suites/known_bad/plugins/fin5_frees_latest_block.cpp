// FIN-5 — every finalizer shares one "current block" slot, so dropping a buffer gives back the
// most recently allocated block instead of its own.
#include <memory>
#include <mutex>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;

 protected:
  emm::Finalizer block_finalizer(const emm::zoo::Block& block) override {
    {
      std::lock_guard lock(latest_->mutex);
      latest_->block = block;
    }
    return [pool = shared_pool(), latest = latest_] {
      emm::zoo::Block latest_block;
      {
        std::lock_guard lock(latest->mutex);
        latest_block = latest->block;
      }
      pool->give_back(latest_block);
    };
  }

 private:
  struct Latest {
    std::mutex mutex;
    emm::zoo::Block block;
  };
  std::shared_ptr<Latest> latest_ = std::make_shared<Latest>();
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad FIN-5 frees the wrong block"))
