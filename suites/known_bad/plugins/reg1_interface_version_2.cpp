// REG-1 — the plugin reports interface_version() 2; the host supports only version 1.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  int interface_version() const override { return 2; }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad REG-1 interface_version 2"))
