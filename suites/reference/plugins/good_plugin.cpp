// A working plugin for the registration tests: the default manager under its own type name, so
// a test can tell that the library's manager (and not the built-in one) serves a context.
#include <emm/numba_memory_manager.hpp>
#include <emm/plugin_abi.hpp>

namespace emm_test_plugins {

class GoodTestPlugin : public emm::NumbaCUDAMemoryManager {
 public:
  using emm::NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
};

}  // namespace emm_test_plugins

EMM_EXPORT_MEMORY_MANAGER(
    emm_test_plugins::GoodTestPlugin,
    (emm::PluginDeclaration{.name = "good-test-plugin",
                            .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true},
                            .defer_cleanup_behaviour = "as the default manager"}))
