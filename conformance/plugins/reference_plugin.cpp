// libemm_reference_plugin.so — the reference NumbaCUDAMemoryManager as a plugin library, so
// that emm-certify (and EMM_CUDA_MEMORY_MANAGER) can load it like any third-party plugin. The
// kit certifies it end to end (suites/conformance).
#include "emm/numba_memory_manager.hpp"
#include "emm/plugin_abi.hpp"

EMM_EXPORT_MEMORY_MANAGER(
    emm::NumbaCUDAMemoryManager, "emmkit-reference",
    (emm::Capabilities{.memory_info = true,
                       .ipc = true,
                       .thread_safe = true,
                       .defer_cleanup_behaviour =
                           "frees of device and host memory are queued and run in batches (10 "
                           "items or 20% of device memory); inside defer_cleanup the queue is "
                           "not flushed; pinned ranges are unregistered at once"}))
