// A plugin library as emmkit 0.2.0 laid out its descriptor (ABI 2, 48 bytes: Capabilities
// without the deprecated text member that came after it), written out by hand so that the
// loader's reading of that layout is tested without an old kit (plugin_api_0_1_test.cpp).
#include <cstdint>

#include "emm/numba_memory_manager.hpp"

namespace {

struct CapabilitiesOf0_2_0 {
  bool memory_info, ipc, host_only_derived, thread_safe, runs_on_fake_driver, pooling, no_caching,
      managed_memory;
};
struct DescriptorOf0_2_0 {
  std::uint32_t abi_version;
  std::uint32_t descriptor_size;
  const char* kit_version;
  const char* name;
  CapabilitiesOf0_2_0 capabilities;
  const char* defer_cleanup_behaviour;
  emm::BaseCUDAMemoryManager* (*create)(emm::Context* context);
};
static_assert(sizeof(DescriptorOf0_2_0) == 48);

emm::BaseCUDAMemoryManager* create(emm::Context* context) {
  return new emm::NumbaCUDAMemoryManager(context);
}

const DescriptorOf0_2_0 kDescriptor{2,
                                    sizeof(DescriptorOf0_2_0),
                                    "0.2.0",
                                    "laid-out-by-0.2.0",
                                    {.memory_info = true,
                                     .ipc = true,
                                     .host_only_derived = true,
                                     .thread_safe = true,
                                     .runs_on_fake_driver = true,
                                     .pooling = false,
                                     .no_caching = false,
                                     .managed_memory = true},
                                    "as 0.2.0 wrote it",
                                    &create};

}  // namespace

extern "C" __attribute__((visibility("default"))) const void* emm_memory_manager_plugin() {
  return &kDescriptor;
}
