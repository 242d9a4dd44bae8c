// The conformance suite over the consumer's plugin, through the installed
// emm_add_conformance_test (EmmConformance.cmake) and emmkit::conformance_gtest.
#include "consumer_plugin.hpp"
#include "emm/conformance/gtest.hpp"

struct ConsumerTraits {
  using Plugin = consumer::ConsumerPlugin;
  static constexpr emm::PluginDeclaration declaration = consumer::kConsumerDeclaration;
};

EMM_INSTANTIATE_CONFORMANCE_SUITE(Consumer, ConsumerTraits);
