// REG-6 — a library with a complete plugin class but no `emm_memory_manager_plugin` entry
// point (EMM_EXPORT_MEMORY_MANAGER forgotten): emm-certify must exit 2, "could not load".
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
};

}  // namespace

// The entry point under a wrong name, so the library does export something.
extern "C" __attribute__((visibility("default"))) emm::BaseCUDAMemoryManager* make_plugin(
    emm::Context* context) {
  return new Plugin(context);
}
