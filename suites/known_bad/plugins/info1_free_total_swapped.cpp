// INFO-1 — get_memory_info builds MemoryInfo positionally in the wrong order ({total, free}), so
// it reports free = the device's total and total = what is free: free > total as soon as
// anything is allocated.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::MemoryInfo get_memory_info() override {
    const emm::MemoryInfo right = BaselinePool::get_memory_info();
    return emm::MemoryInfo{right.total, right.free};
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad INFO-1 free and total swapped"))
