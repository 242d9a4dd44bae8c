// MANAGED-1 — memallocmanaged ignores attach_global: every allocation is made with
// CU_MEM_ATTACH_GLOBAL, also when the caller asked for CU_MEM_ATTACH_HOST.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  std::shared_ptr<emm::MemoryPointer> memallocmanaged(std::size_t size,
                                                      bool /*attach_global*/ = true) override {
    return BaselinePool::memallocmanaged(size, true);
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad MANAGED-1 attach flag dropped"))
