// The same conformance checks over the minimal example, registered for Boost.Test.
#include <emm/conformance/boost.hpp>

#include "host_only_minimal.hpp"
#include "host_only_minimal_capabilities.hpp"

struct HostOnlyMinimalTraits {
  using Plugin = emm::examples::HostOnlyMinimalMemoryManager;
  static constexpr const char* name = "host_only_minimal";
  static constexpr emm::Capabilities capabilities =
      emm::complete_capabilities<Plugin>(emm::examples::kHostOnlyMinimalCapabilities);
};

EMM_BOOST_CONFORMANCE_SUITE(HostOnlyMinimalTraits)
