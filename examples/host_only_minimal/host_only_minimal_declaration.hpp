// host_only_minimal_declaration.hpp — what HostOnlyMinimalMemoryManager declares (spec 2.7),
// shared by its plugin library and its conformance tests.
#pragma once

#include "emm/plugin_abi.hpp"

namespace emm::examples {

inline constexpr PluginDeclaration kHostOnlyMinimalDeclaration{
    .name = "host_only_minimal",
    .capabilities = {.memory_info = true,
                     .ipc = true,
                     .thread_safe = true,
                     .no_caching = true,
                     .managed_memory = true},
    .defer_cleanup_behaviour =
        "HostOnlyCUDAMemoryManager's: cuMemFree and host frees wait in the pending-deallocation "
        "queue while a guard lives and run at its next flush (the next free after the scope, "
        "an out-of-memory retry, or reset())"};

}  // namespace emm::examples
