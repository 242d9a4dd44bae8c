// LIFE-2 — initialize() rebuilds the pool, freeing every slab, so a repeated initialize()
// invalidates outstanding allocations.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  void initialize() override {
    BaselinePool::initialize();
    pool().release_all();
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad LIFE-2 initialize recreates the pool"))
