// The conformance suite over the minimal example (GoogleTest typed tests).
#include <emm/conformance/gtest.hpp>

#include "host_only_minimal.hpp"
#include "host_only_minimal_capabilities.hpp"

struct HostOnlyMinimalTraits {
  using Plugin = emm::examples::HostOnlyMinimalMemoryManager;
  static constexpr const char* name = "host_only_minimal";
  static constexpr emm::Capabilities capabilities =
      emm::complete_capabilities<Plugin>(emm::examples::kHostOnlyMinimalCapabilities);
};

EMM_INSTANTIATE_CONFORMANCE_SUITE(HostOnlyMinimal, HostOnlyMinimalTraits);
