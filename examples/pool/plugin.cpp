// The exported plugin library libemm_example_pool.so: load it with EMM_CUDA_MEMORY_MANAGER or
// certify it with `emm-certify --plugin libemm_example_pool.so`.
#include "emm/examples/pool_declaration.hpp"
#include "emm/examples/pool_memory_manager.hpp"
#include "emm/plugin_abi.hpp"

EMM_EXPORT_MEMORY_MANAGER(emm::examples::PoolMemoryManager, emm::examples::kPoolDeclaration)
