// reference_traits.hpp — the reference NumbaCUDAMemoryManager described as a conformance subject
// (shared by the GoogleTest and Boost.Test flavours of the kit's own suites).
#pragma once

#include "emm/numba_memory_manager.hpp"
#include "emm/plugin_abi.hpp"

namespace emm::testing_support {

struct NumbaReferenceTraits {
  using Plugin = emm::NumbaCUDAMemoryManager;
  static constexpr const char* name = "emmkit-reference";
  static constexpr emm::Capabilities capabilities{
      .memory_info = true,
      .ipc = true,
      .thread_safe = true,
      .defer_cleanup_behaviour =
          "frees are queued and flushed in batches; inside "
          "defer_cleanup the queue is not flushed; pins are released "
          "at once"};
};

}  // namespace emm::testing_support
