// reference_declaration.hpp — what the reference NumbaCUDAMemoryManager declares as a plugin
// (spec 2.7), shared by its plugin library (reference_plugin.cpp) and the kit's typed suites.
#pragma once

#include "emm/plugin_declaration.hpp"

namespace emm {

inline constexpr PluginDeclaration kReferencePluginDeclaration{
    .name = "emmkit-reference",
    .capabilities = {.memory_info = true,
                     .ipc = true,
                     .thread_safe = true,
                     .no_caching = true,
                     .managed_memory = true},
    .defer_cleanup_behaviour =
        "frees of device and host memory are queued and run in batches (10 items or 20% of "
        "device memory); inside defer_cleanup the queue is not flushed; pinned ranges are "
        "unregistered at once"};

}  // namespace emm
