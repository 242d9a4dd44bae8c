// libemm_reference_plugin.so — the reference NumbaCUDAMemoryManager as a plugin library, so
// that emm-certify (and EMM_CUDA_MEMORY_MANAGER) can load it like any third-party plugin. The
// kit certifies it end to end (suites/conformance).
#include "emm/numba_memory_manager.hpp"
#include "emm/plugin_abi.hpp"
#include "reference_declaration.hpp"

EMM_EXPORT_MEMORY_MANAGER(emm::NumbaCUDAMemoryManager, emm::kReferencePluginDeclaration)
