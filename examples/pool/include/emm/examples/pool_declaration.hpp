// emm/examples/pool_declaration.hpp — what PoolMemoryManager declares (spec 2.7), shared by its
// plugin library, its conformance test and the logging decorator that wraps it.
#pragma once

#include "emm/plugin_abi.hpp"

namespace emm::examples {

inline constexpr PluginDeclaration kPoolDeclaration{
    .name = "pool",
    .capabilities = {.memory_info = true,
                     .ipc = true,
                     .thread_safe = true,
                     .pooling = true,
                     .managed_memory = true},  // HostOnlyCUDAMemoryManager's
    .defer_cleanup_behaviour =
        "holds HostOnlyCUDAMemoryManager's guard (host frees deferred) and keeps every slab "
        "that becomes empty; when the last guard ends, empty slabs beyond one 2 MiB slab per "
        "arena go back to cuMemFree"};

}  // namespace emm::examples
