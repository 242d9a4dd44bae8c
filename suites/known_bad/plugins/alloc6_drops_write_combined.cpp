// ALLOC-6 — memhostalloc drops `wc` before cuMemHostAlloc: the caller asked for write-combined
// memory (fast host-to-device transfers) and gets ordinary cached pinned memory.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::HostAllocation memhostalloc(std::size_t size, bool mapped, bool portable, bool) override {
    return BaselinePool::memhostalloc(size, mapped, portable, false);
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad ALLOC-6 memhostalloc drops wc"))
