// LIFE-4 — the constructor caches cuCtxGetDevice(), a CUDA call that fails while the context
// is not current (construction must do no CUDA work; it belongs in initialize()).
#include "baseline_pool.hpp"
#include "emm/driver.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context) : BaselinePool(context) {
    if (context != nullptr) device_ = driver().ctx_get_device();
  }

 private:
  int device_ = -1;
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad LIFE-4 constructor queries the device"))
