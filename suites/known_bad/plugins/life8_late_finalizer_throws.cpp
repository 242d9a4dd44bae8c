// LIFE-8 — a block released after reset() finds its slab gone and the finalizer throws instead
// of doing nothing.
#include "baseline_pool.hpp"
#include "emm/errors.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;

 protected:
  emm::Finalizer block_finalizer(const emm::zoo::Block& block) override {
    return [pool = shared_pool(), block] {
      if (pool->is_released(block)) {
        throw emm::Error("block returned after reset() released its slab");
      }
      pool->give_back(block);
    };
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad LIFE-8 late finalizer throws"))
