// REG-1..REG-6: registering a memory manager, by code and through EMM_CUDA_MEMORY_MANAGER, and
// loading plugin libraries (spec 2.6, 2.7). The plugin libraries loaded here are the known-bad
// zoo's (suites/known_bad): its baseline as the working plugin, and one library per defect.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "emm/diagnostics.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/plugin_loader.hpp"
#include "emm/runtime.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::StrEq;

// Distinguishable managers: which one serves a context is read off its dynamic type.
class PluginA : public NumbaCUDAMemoryManager {
 public:
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
};
class PluginB : public NumbaCUDAMemoryManager {
 public:
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
};
class VersionedPlugin : public NumbaCUDAMemoryManager {
 public:
  VersionedPlugin(Context* context, int version)
      : NumbaCUDAMemoryManager(context), version_(version) {}
  int interface_version() const override { return version_; }

 private:
  int version_;
};

ManagerFactory versioned(int version) {
  return
      [version](Context* context) { return std::make_unique<VersionedPlugin>(context, version); };
}

template <class T>
bool served_by(Context& context) {
  return typeid(context.memory_manager()) == typeid(T);
}

std::string type_name(Context& context) { return typeid(context.memory_manager()).name(); }

std::shared_ptr<FakeDriver> two_device_fake() {
  FakeSystemConfig config;
  config.devices = {FakeDeviceConfig{}, FakeDeviceConfig{}};
  return std::make_shared<FakeDriver>(config);
}

std::size_t total_driver_calls(const FakeDriver& fake) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < kDriverCallCount; ++i) {
    total += fake.call_count(static_cast<DriverCall>(i));
  }
  return total;
}

// --- REG-1 ---------------------------------------------------------------------------------

TEST(Registration, REG_1_RejectsInterfaceVersion2AndKeepsThePreviousManager) {
  EMM_CLAUSE("REG-1");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  runtime.set_memory_manager<PluginA>();

  auto error = EMM_EXPECT_THROW(InterfaceVersionError, runtime.set_memory_manager(versioned(2)),
                                StrEq("EMM Plugin interface has version 2 - version 1 required"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->version(), 2);

  EXPECT_EQ(runtime.memory_manager_source(), "set_memory_manager");
  Context& context = runtime.get_context(0);
  EXPECT_TRUE(served_by<PluginA>(context)) << "served by " << type_name(context);
}

TEST(Registration, REG_1_RejectionBeforeAnyRegistrationKeepsTheDefaultManager) {
  EMM_CLAUSE("REG-1");
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  EMM_EXPECT_THROW(InterfaceVersionError, runtime.set_memory_manager(versioned(2)),
                   StrEq("EMM Plugin interface has version 2 - version 1 required"));
  EXPECT_EQ(runtime.memory_manager_source(), "default");
  Context& context = runtime.get_context(0);
  EXPECT_TRUE(served_by<NumbaCUDAMemoryManager>(context)) << "served by " << type_name(context);
}

TEST(Registration, REG_1_AnyVersionButOneIsRejected) {
  EMM_CLAUSE("REG-1");
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  for (int version : {0, -1, 3, 100}) {
    SCOPED_TRACE("interface_version " + std::to_string(version));
    auto error =
        EMM_EXPECT_THROW(InterfaceVersionError, runtime.set_memory_manager(versioned(version)),
                         StrEq("EMM Plugin interface has version " + std::to_string(version) +
                               " - version 1 required"));
    ASSERT_TRUE(error);
    EXPECT_EQ(error->version(), version);
  }
  runtime.set_memory_manager(versioned(1));  // version 1 is accepted
  EXPECT_TRUE(served_by<VersionedPlugin>(runtime.get_context(0)));
}

// --- REG-2 (host side) ---------------------------------------------------------------------

TEST(Registration, REG_2_SetMemoryManagerBuildsOneThrowAwayInstanceWithNullContext) {
  EMM_CLAUSE("REG-2");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  auto journal = std::make_shared<test::Journal>();
  fake->reset_call_counts();

  runtime.set_memory_manager(test::recording_factory(journal));

  const auto entries = journal->entries();
  ASSERT_EQ(entries.size(), 2u) << "expected exactly one probe instance: ctor then dtor";
  EXPECT_EQ(entries[0].what, "ctor");
  EXPECT_EQ(entries[0].context, nullptr) << "the probe must be built with a null context";
  EXPECT_EQ(entries[1].what, "dtor") << "the probe must be destroyed at once";
  EXPECT_EQ(entries[1].instance, entries[0].instance);
  EXPECT_EQ(runtime.find_context(0), nullptr) << "registration must not create a context";
  EXPECT_EQ(total_driver_calls(*fake), 0u) << "registration must make no driver call";

  // The probe is never used for a context: the context gets a new instance of its own.
  Context& context = runtime.get_context(0);
  EXPECT_EQ(journal->instances_with_context(), std::vector<int>{2});
  EXPECT_EQ(test::recording_plugin(context).instance(), 2);
}

TEST(Registration, REG_2_RejectedProbeIsAlsoDestroyed) {
  EMM_CLAUSE("REG-2");
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  int constructed = 0;
  int with_context = 0;
  EMM_EXPECT_THROW(InterfaceVersionError, runtime.set_memory_manager([&](Context* context) {
    ++constructed;
    if (context != nullptr) ++with_context;
    return std::make_unique<VersionedPlugin>(context, 2);
  }),
                   HasSubstr("version 1 required"));
  EXPECT_EQ(constructed, 1);
  EXPECT_EQ(with_context, 0);
}

// --- REG-3 ---------------------------------------------------------------------------------

// Records every environment lookup, answering EMM_CUDA_MEMORY_MANAGER with `value`.
struct RecordingEnvironment {
  std::string value;
  std::vector<std::string> lookups;
  RuntimeOptions options() {
    RuntimeOptions o;
    o.getenv = [this](const char* name) -> std::optional<std::string> {
      lookups.emplace_back(name);
      if (std::string(name) == kMemoryManagerEnvVar) return value;
      return std::nullopt;
    };
    return o;
  }
  std::size_t manager_lookups() const {
    return static_cast<std::size_t>(
        std::count(lookups.begin(), lookups.end(), std::string(kMemoryManagerEnvVar)));
  }
};

TEST(Registration, REG_3_EnvironmentIsReadAtFirstContextCreationNotAtConstruction) {
  EMM_CLAUSE("REG-3");
  RecordingEnvironment env{EMM_TEST_PLUGIN_GOOD, {}};
  Runtime runtime(std::make_shared<FakeDriver>(), env.options());
  EXPECT_EQ(env.manager_lookups(), 0u)
      << "EMM_CUDA_MEMORY_MANAGER must not be read when the runtime is constructed";

  Context& context = runtime.get_context(0);
  EXPECT_GE(env.manager_lookups(), 1u);
  EXPECT_THAT(type_name(context), HasSubstr("BaselinePool"));
  EXPECT_EQ(runtime.memory_manager_source(), EMM_TEST_PLUGIN_GOOD);
  EXPECT_EQ(context.memory_manager().context(), &context);
  auto memory = context.memalloc(4096);  // the library's manager really serves it
  EXPECT_EQ(memory->size(), 4096u);
}

TEST(Registration, REG_3_DefaultValueSelectsTheBuiltInManager) {
  EMM_CLAUSE("REG-3");
  Runtime runtime(std::make_shared<FakeDriver>(),
                  RuntimeOptions::hermetic({{kMemoryManagerEnvVar, "default"}}));
  Context& context = runtime.get_context(0);
  EXPECT_TRUE(served_by<NumbaCUDAMemoryManager>(context)) << "served by " << type_name(context);
  EXPECT_EQ(runtime.memory_manager_source(), "default");
}

TEST(Registration, REG_3_GoodPluginServesEveryNewContextAlsoAfterClose) {
  EMM_CLAUSE("REG-3");
  Runtime runtime(two_device_fake(),
                  RuntimeOptions::hermetic({{kMemoryManagerEnvVar, EMM_TEST_PLUGIN_GOOD}}));
  EXPECT_THAT(type_name(runtime.get_context(0)), HasSubstr("BaselinePool"));
  EXPECT_THAT(type_name(runtime.get_context(1)), HasSubstr("BaselinePool"));
  runtime.close();
  EXPECT_THAT(type_name(runtime.get_context(0)), HasSubstr("BaselinePool"));
}

// The failure modes: each a PluginLoadError "Failed to use memory manager from <value>: <cause>"
// at the first context creation (never at construction), leaving no context behind.
void expect_env_failure(const std::string& value,
                        const ::testing::Matcher<const std::string&>& cause) {
  auto fake = std::make_shared<FakeDriver>();
  std::optional<Runtime> runtime;
  ASSERT_NO_THROW(runtime.emplace(fake, RuntimeOptions::hermetic({{kMemoryManagerEnvVar, value}})))
      << "a bad EMM_CUDA_MEMORY_MANAGER must not fail before the first context creation";
  auto error =
      EMM_EXPECT_THROW(PluginLoadError, runtime->get_context(0),
                       AllOf(StartsWith("Failed to use memory manager from " + value), cause));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->value(), value);
  EXPECT_THAT(error->cause(), cause);
  EXPECT_EQ(runtime->find_context(0), nullptr);
  EXPECT_EQ(fake->call_count(DriverCall::cuDevicePrimaryCtxRetain),
            fake->call_count(DriverCall::cuDevicePrimaryCtxRelease))
      << "a failed context creation must release the primary context it retained";
}

TEST(Registration, REG_3_MissingFileIsAPluginLoadError) {
  EMM_CLAUSE("REG-3");
  expect_env_failure(EMM_TEST_MISSING_LIBRARY, HasSubstr("no such file"));
}

TEST(Registration, REG_3_FileThatIsNotALibraryIsAPluginLoadError) {
  EMM_CLAUSE("REG-3");
  expect_env_failure(EMM_TEST_NOT_A_LIBRARY, HasSubstr("not a loadable shared library"));
}

TEST(Registration, REG_3_LibraryWithoutEntryPointIsAPluginLoadError) {
  EMM_CLAUSE("REG-3");
  expect_env_failure(EMM_TEST_PLUGIN_NO_SYMBOL, HasSubstr("emm_memory_manager_plugin"));
}

TEST(Registration, REG_3_UnknownAbiVersionIsAPluginLoadError) {
  EMM_CLAUSE("REG-3");
  expect_env_failure(EMM_TEST_PLUGIN_BAD_ABI,
                     HasSubstr("ABI version " + std::to_string(kPluginAbiVersion + 1)));
}

TEST(Registration, REG_3_InterfaceVersion2IsAPluginLoadError) {
  EMM_CLAUSE("REG-3");
  expect_env_failure(EMM_TEST_PLUGIN_BAD_VERSION,
                     HasSubstr("EMM Plugin interface has version 2 - version 1 required"));
}

TEST(Registration, REG_3_ConstructorThrowingForTheProbeIsAPluginLoadError) {
  EMM_CLAUSE("REG-3");
  expect_env_failure(EMM_TEST_PLUGIN_PROBE_THROWS, HasSubstr("this memory manager has no context"));
}

TEST(Registration, REG_3_ThrowingConstructorIsAPluginLoadError) {
  EMM_CLAUSE("REG-3");
  expect_env_failure(EMM_TEST_PLUGIN_CTOR_THROWS,
                     HasSubstr("the plugin constructor threw: the known-bad LIFE-4 plugin "
                               "refuses to be built for a context"));
}

// Restores one real environment variable when the test ends.
class ScopedUnsetenv {
 public:
  explicit ScopedUnsetenv(const char* name) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    ::unsetenv(name);
  }
  ~ScopedUnsetenv() {
    if (previous_) {
      ::setenv(name_, previous_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

TEST(Registration, REG_3_RealProcessEnvironmentIsReadLazily) {
  EMM_CLAUSE("REG-3");
  ScopedUnsetenv restore(kMemoryManagerEnvVar);
  Runtime runtime(std::make_shared<FakeDriver>());  // the process environment
  // Set after construction: only a lazy read at the first context creation can see it.
  ASSERT_EQ(::setenv(kMemoryManagerEnvVar, EMM_TEST_PLUGIN_GOOD, 1), 0);
  Context& context = runtime.get_context(0);
  EXPECT_THAT(type_name(context), HasSubstr("BaselinePool"));
  EXPECT_EQ(runtime.memory_manager_source(), EMM_TEST_PLUGIN_GOOD);
}

// --- REG-4 ---------------------------------------------------------------------------------

TEST(Registration, REG_4_SetMemoryManagerWarnsAndIsIgnoredWhenEnvironmentIsSet) {
  EMM_CLAUSE("REG-4");
  Runtime runtime(std::make_shared<FakeDriver>(),
                  RuntimeOptions::hermetic({{kMemoryManagerEnvVar, EMM_TEST_PLUGIN_GOOD}}));
  Diagnostics::Capture capture;
  EXPECT_NO_THROW(runtime.set_memory_manager<PluginA>());

  const auto events = capture.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, DiagnosticEvent::Kind::warning);
  EXPECT_THAT(events[0].where + " " + events[0].message, HasSubstr(kMemoryManagerEnvVar));

  Context& context = runtime.get_context(0);
  EXPECT_THAT(type_name(context), HasSubstr("BaselinePool"));
  EXPECT_FALSE(served_by<PluginA>(context));
  EXPECT_EQ(runtime.memory_manager_source(), EMM_TEST_PLUGIN_GOOD);
}

TEST(Registration, REG_4_EnvironmentSetToDefaultAlsoWins) {
  EMM_CLAUSE("REG-4");
  Runtime runtime(std::make_shared<FakeDriver>(),
                  RuntimeOptions::hermetic({{kMemoryManagerEnvVar, "default"}}));
  Diagnostics::Capture capture;
  runtime.set_memory_manager<PluginA>();
  EXPECT_EQ(capture.count(DiagnosticEvent::Kind::warning), 1u);
  EXPECT_TRUE(served_by<NumbaCUDAMemoryManager>(runtime.get_context(0)));
}

TEST(Registration, REG_4_IgnoredCallDoesNotEvenProbeTheFactory) {
  EMM_CLAUSE("REG-4");
  Runtime runtime(std::make_shared<FakeDriver>(),
                  RuntimeOptions::hermetic({{kMemoryManagerEnvVar, "default"}}));
  Diagnostics::Capture capture;
  // Ignored means ignored: even a plugin of the wrong version is neither built nor rejected.
  int constructed = 0;
  EXPECT_NO_THROW(runtime.set_memory_manager([&](Context* context) {
    ++constructed;
    return std::make_unique<VersionedPlugin>(context, 2);
  }));
  EXPECT_EQ(constructed, 0);
  EXPECT_EQ(capture.count(DiagnosticEvent::Kind::warning), 1u);
}

// --- REG-5 ---------------------------------------------------------------------------------

TEST(Registration, REG_5_NewManagerAffectsOnlyContextsCreatedAfterIt) {
  EMM_CLAUSE("REG-5");
  Runtime runtime(two_device_fake(), RuntimeOptions::hermetic());
  runtime.set_memory_manager<PluginA>();
  Context& first = runtime.get_context(0);
  BaseCUDAMemoryManager* first_manager = &first.memory_manager();
  ASSERT_TRUE(served_by<PluginA>(first));

  runtime.set_memory_manager<PluginB>();
  EXPECT_EQ(&runtime.get_context(0), &first) << "an existing context is kept";
  EXPECT_EQ(&runtime.get_context(0).memory_manager(), first_manager)
      << "an existing context keeps its manager instance";
  EXPECT_TRUE(served_by<PluginA>(runtime.get_context(0)));
  EXPECT_TRUE(served_by<PluginB>(runtime.get_context(1)))
      << "a context created after the change uses the new manager";

  runtime.close();
  EXPECT_TRUE(served_by<PluginB>(runtime.get_context(0))) << "after close() new contexts use it";
  EXPECT_TRUE(served_by<PluginB>(runtime.get_context(1)));
}

TEST(Registration, REG_5_DefaultContextIsKeptUntilClose) {
  EMM_CLAUSE("REG-5");
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  auto memory = runtime.get_context(0).memalloc(256);
  runtime.set_memory_manager<PluginA>();
  EXPECT_TRUE(served_by<NumbaCUDAMemoryManager>(runtime.get_context(0)));
  memory.reset();
  runtime.close();
  EXPECT_TRUE(served_by<PluginA>(runtime.get_context(0)));
}

// --- REG-6 ---------------------------------------------------------------------------------

TEST(Registration, REG_6_LoaderRejectsUnknownAbiVersion) {
  EMM_CLAUSE("REG-6");
  const std::string path = EMM_TEST_PLUGIN_BAD_ABI;
  auto error =
      EMM_EXPECT_THROW(PluginLoadError, load_plugin(path),
                       AllOf(StartsWith("Failed to use memory manager from " + path + ": "),
                             HasSubstr("ABI version " + std::to_string(kPluginAbiVersion + 1)),
                             HasSubstr("rebuild")));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->value(), path);
}

TEST(Registration, REG_6_LoaderRejectsLibraryWithoutEntryPoint) {
  EMM_CLAUSE("REG-6");
  const std::string path = EMM_TEST_PLUGIN_NO_SYMBOL;
  EMM_EXPECT_THROW(
      PluginLoadError, load_plugin(path),
      AllOf(StartsWith("Failed to use memory manager from " + path + ": "),
            HasSubstr("emm_memory_manager_plugin"), HasSubstr("EMM_EXPORT_MEMORY_MANAGER")));
}

TEST(Registration, REG_6_LoaderRejectsMissingFileAndNonLibrary) {
  EMM_CLAUSE("REG-6");
  EMM_EXPECT_THROW(
      PluginLoadError, load_plugin(EMM_TEST_MISSING_LIBRARY),
      AllOf(StartsWith("Failed to use memory manager from "), HasSubstr("no such file")));
  EMM_EXPECT_THROW(PluginLoadError, load_plugin(EMM_TEST_NOT_A_LIBRARY),
                   AllOf(StartsWith("Failed to use memory manager from "),
                         HasSubstr("not a loadable shared library")));
  EMM_EXPECT_THROW(PluginLoadError, load_plugin(""), HasSubstr("empty"));
}

TEST(Registration, REG_6_LoaderReadsAGoodPluginsDescriptor) {
  EMM_CLAUSE("REG-6");
  LoadedPlugin plugin = load_plugin(EMM_TEST_PLUGIN_GOOD);
  EXPECT_EQ(plugin.path, EMM_TEST_PLUGIN_GOOD);
  ASSERT_NE(plugin.descriptor, nullptr);
  EXPECT_EQ(plugin.descriptor->abi_version, kPluginAbiVersion);
  const PluginDeclaration& declaration = plugin.declaration();
  EXPECT_STREQ(declaration.name, "known-bad zoo baseline");
  EXPECT_TRUE(declaration.capabilities.memory_info);
  EXPECT_TRUE(declaration.capabilities.ipc);
  EXPECT_TRUE(declaration.capabilities.thread_safe);
  EXPECT_TRUE(declaration.capabilities.host_only_derived) << "filled in from the type by the macro";
  EXPECT_STREQ(declaration.defer_cleanup_behaviour,
               "holds the host queue and keeps emptied slabs allocated until the outermost guard "
               "ends, then frees them");

  auto probe = plugin.factory()(nullptr);
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ(probe->interface_version(), 1);
  EXPECT_EQ(probe->context(), nullptr);

  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  runtime.set_memory_manager(plugin.factory());
  EXPECT_THAT(type_name(runtime.get_context(0)), HasSubstr("BaselinePool"));
}

}  // namespace
}  // namespace emm
