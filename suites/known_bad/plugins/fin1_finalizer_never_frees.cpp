// FIN-1 — the finalizer is a stub that never gives the block back: freed memory is never
// reused or returned (only reset() reclaims it).
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;

 protected:
  emm::Finalizer block_finalizer(const emm::zoo::Block& /*block*/) override {
    return [] {};
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad FIN-1 finalizer never frees"))
