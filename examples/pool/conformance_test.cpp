// The conformance suite over the pool example (GoogleTest typed tests, every plugin clause).
#include <emm/conformance/gtest.hpp>

#include "emm/examples/pool_capabilities.hpp"
#include "emm/examples/pool_memory_manager.hpp"

struct PoolTraits {
  using Plugin = emm::examples::PoolMemoryManager;
  static constexpr const char* name = "pool";
  static constexpr emm::Capabilities capabilities =
      emm::complete_capabilities<Plugin>(emm::examples::kPoolCapabilities);
};

EMM_INSTANTIATE_CONFORMANCE_SUITE(Pool, PoolTraits);
