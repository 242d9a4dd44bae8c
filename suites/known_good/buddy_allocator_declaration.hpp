// buddy_allocator_declaration.hpp — what the known-good buddy allocator declares (spec 2.7).
#pragma once

#include "emm/plugin_declaration.hpp"

namespace emm::known_good {

// It sub-allocates (pooling) and keeps its chunks until reset(), so it does not declare
// no_caching.
inline constexpr PluginDeclaration kBuddyAllocatorDeclaration{
    .name = "known-good buddy allocator",
    .capabilities = {.memory_info = true,
                     .ipc = true,
                     .thread_safe = true,
                     .pooling = true,
                     .managed_memory = true},
    .defer_cleanup_behaviour =
        "HostOnlyCUDAMemoryManager's: released device blocks and host frees wait in its queue "
        "while a guard lives; blocks then rejoin their buddies; chunks are kept until reset()"};

}  // namespace emm::known_good
