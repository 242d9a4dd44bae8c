// The conformance suite over the minimal example (GoogleTest typed tests).
#include <emm/conformance/gtest.hpp>

#include "host_only_minimal.hpp"
#include "host_only_minimal_declaration.hpp"

struct HostOnlyMinimalTraits {
  using Plugin = emm::examples::HostOnlyMinimalMemoryManager;
  static constexpr emm::PluginDeclaration declaration = emm::examples::kHostOnlyMinimalDeclaration;
};

EMM_INSTANTIATE_CONFORMANCE_SUITE(HostOnlyMinimal, HostOnlyMinimalTraits);
