// A hand-written descriptor with an ABI version this kit does not know (REG-3, REG-6). It is
// otherwise complete, so only the version can be the reason for refusing it.
#include <emm/numba_memory_manager.hpp>
#include <emm/plugin_abi.hpp>

namespace {

emm::BaseCUDAMemoryManager* create(emm::Context* context) {
  return new emm::NumbaCUDAMemoryManager(context);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const emm::PluginDescriptor*
emm_memory_manager_plugin() {
  static const emm::PluginDescriptor descriptor{
      99, sizeof(emm::PluginDescriptor), emm::kKitVersion,
      emm::PluginDeclaration{.name = "bad-abi-test-plugin"}, &create};
  return &descriptor;
}
