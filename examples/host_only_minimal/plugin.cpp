// The exported plugin library libemm_example_host_only_minimal.so.
#include "emm/plugin_abi.hpp"
#include "host_only_minimal.hpp"
#include "host_only_minimal_capabilities.hpp"

EMM_EXPORT_MEMORY_MANAGER(emm::examples::HostOnlyMinimalMemoryManager, "host_only_minimal",
                          emm::examples::kHostOnlyMinimalCapabilities)
