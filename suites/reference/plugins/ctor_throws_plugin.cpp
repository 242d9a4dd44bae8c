// A plugin whose constructor always throws (REG-3): the cause must reach the user.
#include <emm/numba_memory_manager.hpp>
#include <emm/plugin_abi.hpp>
#include <stdexcept>

namespace emm_test_plugins {

class ThrowingTestPlugin : public emm::NumbaCUDAMemoryManager {
 public:
  explicit ThrowingTestPlugin(emm::Context* context) : emm::NumbaCUDAMemoryManager(context) {
    throw std::runtime_error("ThrowingTestPlugin refuses to be constructed");
  }
};

}  // namespace emm_test_plugins

EMM_EXPORT_MEMORY_MANAGER(emm_test_plugins::ThrowingTestPlugin,
                          emm::PluginDeclaration{.name = "ctor-throws-test-plugin"})
