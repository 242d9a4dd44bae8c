// The Boost.Test flavour of the conformance suite over the consumer's plugin, through the
// installed emm_add_boost_conformance_test and emmkit::conformance_boost (which provides main()).
#include "consumer_plugin.hpp"
#include "emm/conformance/boost.hpp"

struct ConsumerTraits {
  using Plugin = consumer::ConsumerPlugin;
  static constexpr emm::PluginDeclaration declaration = consumer::kConsumerDeclaration;
};

EMM_BOOST_CONFORMANCE_SUITE(ConsumerTraits)
