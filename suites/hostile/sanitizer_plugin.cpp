// The reference plugin built with AddressSanitizer: what a plugin author certifies when their CI
// builds with -fsanitize=address. Loaded into an emm-certify that is not a sanitizer build, the
// sanitizer runtime cannot start (it must come first in the process) and ends the process that
// loads it; emm-certify must report a plugin it could not load (exit status 2), never a verdict
// (check_sanitizer_plugin.cmake).
#include "emm/numba_memory_manager.hpp"
#include "emm/plugin_abi.hpp"
#include "reference_declaration.hpp"

EMM_EXPORT_MEMORY_MANAGER(emm::NumbaCUDAMemoryManager, emm::kReferencePluginDeclaration)
