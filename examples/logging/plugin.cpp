// The exported plugin library libemm_example_logging.so: the logging decorator over the pool
// example, which is what gets certified (the decorator adds no driver call of its own).
#include "emm/examples/logging_over_pool.hpp"
#include "emm/plugin_abi.hpp"

EMM_EXPORT_MEMORY_MANAGER(emm::examples::LoggingOverPool,
                          emm::examples::kLoggingOverPoolDeclaration)
