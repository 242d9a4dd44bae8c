// emm/examples/stream_ordered_declaration.hpp — what StreamOrderedMemoryManager declares
// (spec 2.7), shared by its plugin library and its conformance test.
#pragma once

#include "emm/plugin_abi.hpp"

namespace emm::examples {

inline constexpr PluginDeclaration kStreamOrderedDeclaration{
    .name = "stream_ordered",
    .capabilities =
        {
            .memory_info = true,
            .ipc = false,  // IPC-7: cuIpcGetMemHandle cannot export CUmemoryPool memory (README)
            .thread_safe = true,
            .pooling = true,         // the CUmemoryPool keeps up to 64 MiB of freed memory reserved
            .managed_memory = true,  // HostOnlyCUDAMemoryManager's memallocmanaged
        },
    .defer_cleanup_behaviour =
        "HostOnlyCUDAMemoryManager's: cuMemFreeAsync + stream synchronisation wait in the "
        "pending-deallocation queue while a guard lives and run at its next flush (the next "
        "free after the scope, an out-of-memory retry, or reset())"};

}  // namespace emm::examples
