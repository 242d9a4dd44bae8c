// The exported plugin library libemm_example_host_only_minimal.so.
#include "emm/plugin_abi.hpp"
#include "host_only_minimal.hpp"
#include "host_only_minimal_declaration.hpp"

EMM_EXPORT_MEMORY_MANAGER(emm::examples::HostOnlyMinimalMemoryManager,
                          emm::examples::kHostOnlyMinimalDeclaration)
