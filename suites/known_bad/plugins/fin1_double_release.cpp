// FIN-1 — the finalizer gives the block back at once *and* queues a second give-back on the
// deferred queue (a half-finished move to deferred frees): every block is released twice, so
// the pool hands it out twice.
#include "baseline_pool.hpp"
#include "emm/pending_deallocs.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;

 protected:
  emm::Finalizer block_finalizer(const emm::zoo::Block& block) override {
    emm::Finalizer release_now = BaselinePool::block_finalizer(block);
    return [release_now, state = state(), size = block.size] {
      release_now();
      state->deallocations.add_item(release_now, size);
    };
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad FIN-1 block released twice"))
