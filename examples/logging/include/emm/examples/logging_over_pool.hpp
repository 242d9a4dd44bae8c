// emm/examples/logging_over_pool.hpp — the logging decorator over the pool example, and what it
// declares (spec 2.7): the pool's capabilities, since every call reaches the pool unchanged.
// LoggingOverPool is a PoolMemoryManager (so HostOnly-derived) with every call logged.
#pragma once

#include "emm/examples/logging_memory_manager.hpp"
#include "emm/examples/pool_memory_manager.hpp"
#include "emm/plugin_abi.hpp"

namespace emm::examples {

using LoggingOverPool = LoggingOver<PoolMemoryManager>;

inline constexpr PluginDeclaration kLoggingOverPoolDeclaration{
    .name = "logging(pool)",
    .capabilities = {.memory_info = true,
                     .ipc = true,
                     .thread_safe = true,
                     .pooling = true,
                     .managed_memory = true},
    .defer_cleanup_behaviour =
        "the pool's, logged as defer_cleanup_enter/exit: holds HostOnlyCUDAMemoryManager's guard "
        "(host frees deferred) and keeps every slab that becomes empty; when the last guard "
        "ends, empty slabs beyond one 2 MiB slab per arena go back to cuMemFree"};

}  // namespace emm::examples
