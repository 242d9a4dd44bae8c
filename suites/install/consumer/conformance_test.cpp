// The conformance suite over the consumer's plugin, through the installed
// emm_add_conformance_test (EmmConformance.cmake) and emmkit::conformance_gtest; and one unit test
// of the plugin with the installed testing assertions, as a plugin author would write it.
#include <memory>

#include "consumer_plugin.hpp"
#include "emm/conformance/gtest.hpp"
#include "emm/conformance/testing/expect_throw.hpp"
#include "emm/errors.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/runtime.hpp"

struct ConsumerTraits {
  using Plugin = consumer::ConsumerPlugin;
  static constexpr emm::PluginDeclaration declaration = consumer::kConsumerDeclaration;
};

EMM_INSTANTIATE_CONFORMANCE_SUITE(Consumer, ConsumerTraits);

TEST(ConsumerPlugin, FreeingTwiceIsAPointerLifetimeError) {
  emm::Runtime runtime(std::make_shared<emm::FakeDriver>(), emm::RuntimeOptions::hermetic());
  runtime.set_memory_manager<consumer::ConsumerPlugin>();
  auto memory = runtime.get_context(0).memalloc(256);
  memory->free();
  EMM_EXPECT_THROW(emm::PointerLifetimeError, memory->free(), "Freeing dead memory");
}
