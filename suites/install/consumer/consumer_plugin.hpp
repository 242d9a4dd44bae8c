// consumer_plugin.hpp — the plugin the install test certifies: the reference manager under a
// name of its own, as a plugin author's project would build one against an installed emmkit.
#pragma once

#include "emm/numba_memory_manager.hpp"
#include "emm/plugin_abi.hpp"

namespace consumer {

class ConsumerPlugin : public emm::NumbaCUDAMemoryManager {
 public:
  using emm::NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
};

inline constexpr emm::PluginDeclaration kConsumerDeclaration{
    .name = "install-consumer",
    .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true},
    .defer_cleanup_behaviour = "the reference manager's: frees are queued and flushed in batches"};

}  // namespace consumer
