// The conformance suite over the pool example (GoogleTest typed tests, every plugin clause).
#include <emm/conformance/gtest.hpp>

#include "emm/examples/pool_declaration.hpp"
#include "emm/examples/pool_memory_manager.hpp"

struct PoolTraits {
  using Plugin = emm::examples::PoolMemoryManager;
  static constexpr emm::PluginDeclaration declaration = emm::examples::kPoolDeclaration;
};

EMM_INSTANTIATE_CONFORMANCE_SUITE(Pool, PoolTraits);
