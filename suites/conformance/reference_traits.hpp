// reference_traits.hpp — the reference NumbaCUDAMemoryManager described as a conformance subject
// (shared by the GoogleTest and Boost.Test flavours of the kit's own suites).
#pragma once

#include "emm/numba_memory_manager.hpp"
#include "reference_declaration.hpp"

namespace emm::testing_support {

struct NumbaReferenceTraits {
  using Plugin = emm::NumbaCUDAMemoryManager;
  static constexpr emm::PluginDeclaration declaration = emm::kReferencePluginDeclaration;
};

}  // namespace emm::testing_support
