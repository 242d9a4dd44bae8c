// caching_pool_declaration.hpp — what the known-good caching pool declares (spec 2.7).
#pragma once

#include "emm/plugin_declaration.hpp"

namespace emm::known_good {

// It sub-allocates (pooling) and keeps empty chunks until reset(), so it does not declare
// no_caching: the driver's figures say nothing about whether a block it released was freed.
inline constexpr PluginDeclaration kCachingPoolDeclaration{
    .name = "known-good caching pool",
    .capabilities = {.memory_info = true,
                     .ipc = true,
                     .thread_safe = true,
                     .pooling = true,
                     .managed_memory = true},
    .defer_cleanup_behaviour =
        "holds the HostOnly guard (host frees wait for its queue); device blocks released inside "
        "the scope stay out of the pool until the outermost guard ends; chunks are kept until "
        "reset()"};

}  // namespace emm::known_good
