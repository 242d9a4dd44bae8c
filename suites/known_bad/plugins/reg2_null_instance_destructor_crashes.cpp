// REG-2 — the destructor reaches through context() without checking it, so destroying the
// version probe (null context) crashes the process: a plugin defect, reported as REG-2's failure
// with complete reports, never as a library that cannot be loaded.
#include "baseline_pool.hpp"
#include "emm/context.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  ~Plugin() override {
    volatile int device = context()->device();  // null for the probe
    (void)device;
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad REG-2 null-context destructor crashes"))
