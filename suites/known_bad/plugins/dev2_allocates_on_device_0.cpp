// DEV-2 — memalloc allocates in device 0's primary context whichever context is current (the
// "default device" mistake): under device 1's context the memory lands on device 0.
#include "baseline_pool.hpp"
#include "emm/context.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override {
    if (context()->device() == 0) return BaselinePool::memalloc(size);
    emm::Driver& driver = this->driver();
    const CUcontext current = driver.ctx_get_current();
    driver.ctx_set_current(driver.primary_ctx_retain(0));
    std::shared_ptr<emm::MemoryPointer> memory;
    try {
      memory = BaselinePool::memalloc(size);
    } catch (...) {
      driver.ctx_set_current(current);
      driver.primary_ctx_release(0);
      throw;
    }
    driver.ctx_set_current(current);
    driver.primary_ctx_release(0);
    return memory;
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad DEV-2 allocates on device 0"))
