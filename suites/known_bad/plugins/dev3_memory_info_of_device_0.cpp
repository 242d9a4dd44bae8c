// DEV-3 — get_memory_info() always reports device 0: it asks the driver under device 0's
// primary context, whichever context the instance belongs to.
#include "baseline_pool.hpp"
#include "emm/context.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::MemoryInfo get_memory_info() override {
    if (context()->device() == 0) return BaselinePool::get_memory_info();
    emm::Driver& driver = this->driver();
    const CUcontext current = driver.ctx_get_current();
    driver.ctx_set_current(driver.primary_ctx_retain(0));
    emm::MemoryInfo info;
    try {
      info = BaselinePool::get_memory_info();
    } catch (...) {
      driver.ctx_set_current(current);
      driver.primary_ctx_release(0);
      throw;
    }
    driver.ctx_set_current(current);
    driver.primary_ctx_release(0);
    return info;
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad DEV-3 memory info of device 0"))
