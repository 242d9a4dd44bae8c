// block_cache_declaration.hpp — what the known-good exact-size block cache declares (spec 2.7).
#pragma once

#include "emm/plugin_declaration.hpp"

namespace emm::known_good {

// Every block is one cuMemAlloc of exactly the requested size (no pooling), but released blocks
// are cached until reset() or out of memory, so it does not declare no_caching.
inline constexpr PluginDeclaration kBlockCacheDeclaration{
    .name = "known-good exact-size block cache",
    .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true, .managed_memory = true},
    .defer_cleanup_behaviour =
        "HostOnlyCUDAMemoryManager's: released device blocks and host frees wait in its queue "
        "while a guard lives; device blocks then return to the size cache, freed at reset() or "
        "on out of memory"};

}  // namespace emm::known_good
