// The same conformance checks over the minimal example, registered for Boost.Test.
#include <emm/conformance/boost.hpp>

#include "host_only_minimal.hpp"
#include "host_only_minimal_declaration.hpp"

struct HostOnlyMinimalTraits {
  using Plugin = emm::examples::HostOnlyMinimalMemoryManager;
  static constexpr emm::PluginDeclaration declaration = emm::examples::kHostOnlyMinimalDeclaration;
};

EMM_BOOST_CONFORMANCE_SUITE(HostOnlyMinimalTraits)
