// base_passthrough_declaration.hpp — what the known-good Base-derived pass-through declares
// (spec 2.7).
#pragma once

#include "emm/plugin_declaration.hpp"

namespace emm::known_good {

// Every release is freed at once, or when the outermost defer_cleanup guard ends: it keeps no
// memory it no longer hands out, so it declares no_caching and the driver's figures judge it.
inline constexpr PluginDeclaration kBasePassthroughDeclaration{
    .name = "known-good Base-derived pass-through",
    .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true, .no_caching = true},
    .defer_cleanup_behaviour =
        "its own guard, nestable: cuMemFree and cuMemFreeHost of memory released inside the "
        "scope run when the outermost guard ends; mempin ranges are unregistered at once"};

}  // namespace emm::known_good
