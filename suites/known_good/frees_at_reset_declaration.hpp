// frees_at_reset_declaration.hpp — what the known-good frees-at-reset plugin declares (spec 2.7).
#pragma once

#include "emm/plugin_declaration.hpp"

namespace emm::known_good {

// Released blocks are kept, unused, until reset() or out of memory, so it does not declare
// no_caching: neither the driver's figures nor memory growth say whether it released a block
// (spec §8). Not HostOnly-derived and no memallocmanaged(): managed_memory is not declared.
inline constexpr PluginDeclaration kFreesAtResetDeclaration{
    .name = "known-good frees at reset",
    .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true},
    .defer_cleanup_behaviour =
        "its own guard, nestable: releases never free (device and pinned blocks wait in the "
        "plugin's list until reset()); while a guard lives an out-of-memory retry frees nothing "
        "either; mempin ranges are unregistered at once"};

}  // namespace emm::known_good
