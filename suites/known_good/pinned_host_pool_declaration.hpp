// pinned_host_pool_declaration.hpp — what the known-good pinned host pool declares (spec 2.7).
#pragma once

#include "emm/plugin_declaration.hpp"

namespace emm::known_good {

// Device memory is the HostOnly parent's pass-through, but released pinned host blocks are cached
// until reset() or out of memory, so it does not declare no_caching (spec §8: pinned host memory
// is memory too).
inline constexpr PluginDeclaration kPinnedHostPoolDeclaration{
    .name = "known-good pinned host pool",
    .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true, .managed_memory = true},
    .defer_cleanup_behaviour =
        "HostOnlyCUDAMemoryManager's: device frees and released pinned blocks wait in its queue "
        "while a guard lives; pinned blocks then return to the (size, flags) cache, freed at "
        "reset() or on out of memory outside a guard; mempin ranges are unregistered at once"};

}  // namespace emm::known_good
