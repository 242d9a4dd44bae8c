// lazy_frees_declaration.hpp — what the known-good lazy-free plugin declares (spec 2.7).
#pragma once

#include "emm/plugin_declaration.hpp"

namespace emm::known_good {

// Released blocks are freed at the plugin's next memalloc, not at the kit's flush point, so it
// does not declare no_caching.
inline constexpr PluginDeclaration kLazyFreesDeclaration{
    .name = "known-good lazy frees",
    .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true, .managed_memory = true},
    .defer_cleanup_behaviour =
        "holds the HostOnly guard (host frees wait for its queue); released device blocks wait "
        "in the plugin's own list, which the next memalloc after the outermost guard frees"};

}  // namespace emm::known_good
