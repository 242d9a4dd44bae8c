// The exported plugin library libemm_example_stream_ordered.so.
#include "emm/examples/stream_ordered_declaration.hpp"
#include "emm/examples/stream_ordered_memory_manager.hpp"
#include "emm/plugin_abi.hpp"

EMM_EXPORT_MEMORY_MANAGER(emm::examples::StreamOrderedMemoryManager,
                          emm::examples::kStreamOrderedDeclaration)
