// REG-6 — the entry point returns a descriptor of an ABI version this kit does not know
// (kPluginAbiVersion + 1): emm-certify must exit 2, "could not load".
#include "baseline_pool.hpp"

namespace {

emm::BaseCUDAMemoryManager* create(emm::Context* context) {
  return new emm::zoo::BaselinePool(context);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const emm::PluginDescriptor*
emm_memory_manager_plugin() {
  static const emm::PluginDescriptor descriptor{
      emm::kPluginAbiVersion + 1, sizeof(emm::PluginDescriptor), emm::kKitVersion,
      emm::zoo::baseline_declaration("known-bad REG-6 unknown ABI version"), &create};
  return &descriptor;
}
