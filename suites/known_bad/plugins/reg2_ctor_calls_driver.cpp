// REG-2 — the constructor asks the driver for the device count, so constructing the version
// probe (null context) throws instead of succeeding without a driver call.
#include "baseline_pool.hpp"
#include "emm/driver.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context)
      : BaselinePool(context), device_count_(driver().device_get_count()) {}

 private:
  int device_count_;
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad REG-2 constructor calls the driver"))
