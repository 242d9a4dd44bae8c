// A plugin reporting interface version 2 (REG-1, REG-3): loading it must fail.
#include <emm/numba_memory_manager.hpp>
#include <emm/plugin_abi.hpp>

namespace emm_test_plugins {

class VersionTwoTestPlugin : public emm::NumbaCUDAMemoryManager {
 public:
  using emm::NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  int interface_version() const override { return 2; }
};

}  // namespace emm_test_plugins

EMM_EXPORT_MEMORY_MANAGER(emm_test_plugins::VersionTwoTestPlugin,
                          emm::PluginDeclaration{.name = "version-two-test-plugin"})
