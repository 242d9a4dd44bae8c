// The plugin API's 0.1 forms still compile and mean what they meant (CHANGELOG.md, 0.2.0;
// docs/versioning.md): the three-argument export macro, Capabilities' defer_cleanup text,
// complete_capabilities and conformance traits with `name` and `capabilities`. Each is
// deprecated; this file silences the warnings it exists to trigger.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "emm/conformance/plugin_subject.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/numba_memory_manager.hpp"
#include "emm/plugin_abi.hpp"
#include "emm/plugin_loader.hpp"
#include "emm/runtime.hpp"

namespace {

class OldFormPlugin : public emm::NumbaCUDAMemoryManager {
 public:
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
};

constexpr emm::Capabilities kCapabilities0_1{
    .memory_info = true, .ipc = true, .defer_cleanup_behaviour = "queues frees (0.1 form)"};

struct TraitsOf0_1 {
  using Plugin = OldFormPlugin;
  static constexpr const char* name = "old-traits";
  static constexpr emm::Capabilities capabilities =
      emm::complete_capabilities<Plugin>(kCapabilities0_1);
};

}  // namespace

// The macro's 0.1 form in this executable: its entry point is called below as a host would.
EMM_EXPORT_MEMORY_MANAGER(OldFormPlugin, "old-form", kCapabilities0_1)

TEST(PluginApi0_1, ThreeArgumentExportMacroMakesTheDeclarationOfTheNewForm) {
  const emm::PluginDescriptor* descriptor = emm_memory_manager_plugin();
  ASSERT_NE(descriptor, nullptr);
  EXPECT_EQ(descriptor->abi_version, emm::kPluginAbiVersion);
  EXPECT_STREQ(descriptor->declaration.name, "old-form");
  EXPECT_STREQ(descriptor->declaration.defer_cleanup_behaviour, "queues frees (0.1 form)");
  const emm::Capabilities& capabilities = descriptor->declaration.capabilities;
  EXPECT_TRUE(capabilities.memory_info);
  EXPECT_TRUE(capabilities.ipc);
  EXPECT_FALSE(capabilities.thread_safe);
  EXPECT_TRUE(capabilities.host_only_derived);  // from the type, as in 0.1
  // The text left Capabilities: the flags compare equal to the same flags declared anew.
  EXPECT_EQ(capabilities,
            (emm::Capabilities{.memory_info = true, .ipc = true, .host_only_derived = true}));
  EXPECT_EQ(descriptor->declaration.capabilities.defer_cleanup_behaviour.text, nullptr);
}

TEST(PluginApi0_1, CompleteCapabilitiesTakesHostOnlyDerivedFromTheType) {
  EXPECT_TRUE(emm::complete_capabilities<OldFormPlugin>({}).host_only_derived);
  EXPECT_FALSE(emm::complete_capabilities<emm::BaseCUDAMemoryManager>(
                   emm::Capabilities{.host_only_derived = true})
                   .host_only_derived);
}

TEST(PluginApi0_1, ConformanceTraitsWithNameAndCapabilitiesStillDescribeThePlugin) {
  const emm::conformance::PluginSubject subject =
      emm::conformance::subject_from_traits<TraitsOf0_1>();
  EXPECT_EQ(subject.description.name, "old-traits");
  EXPECT_EQ(subject.description.defer_cleanup_behaviour, "queues frees (0.1 form)");
  EXPECT_TRUE(subject.description.capabilities.memory_info);
  EXPECT_TRUE(subject.description.capabilities.host_only_derived);
  // The factory builds the plugin for a context, as the 0.2 traits' does.
  emm::Runtime runtime(std::make_shared<emm::FakeDriver>(), emm::RuntimeOptions::hermetic());
  runtime.set_memory_manager(subject.factory);
  EXPECT_EQ(runtime.get_context(0).memalloc(64)->size(), 64u);
}

TEST(PluginApi0_1, APluginBuiltWith0_2_0StillLoads) {
  // Its descriptor predates Capabilities' deprecated text member: 48 bytes, read field by field.
  const emm::LoadedPlugin plugin = emm::load_plugin(EMM_TEST_PLUGIN_LAID_OUT_BY_0_2_0);
  EXPECT_STREQ(plugin.declaration().name, "laid-out-by-0.2.0");
  EXPECT_STREQ(plugin.declaration().defer_cleanup_behaviour, "as 0.2.0 wrote it");
  EXPECT_EQ(plugin.declaration().capabilities, (emm::Capabilities{.memory_info = true,
                                                                  .ipc = true,
                                                                  .host_only_derived = true,
                                                                  .thread_safe = true,
                                                                  .managed_memory = true}));
  emm::Runtime runtime(std::make_shared<emm::FakeDriver>(), emm::RuntimeOptions::hermetic());
  runtime.set_memory_manager(plugin.factory());
  EXPECT_EQ(runtime.get_context(0).memalloc(32)->size(), 32u);
}
