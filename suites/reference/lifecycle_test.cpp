// LIFE-1, LIFE-3, LIFE-9: how the host creates, initializes and drops plugin instances
// (spec 2.5). The RecordingPlugin journal shows every call each instance received, in order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/runtime.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::shared_ptr<FakeDriver> fake_with_devices(int count) {
  FakeSystemConfig config;
  config.devices.assign(static_cast<std::size_t>(count), FakeDeviceConfig{});
  return std::make_shared<FakeDriver>(config);
}

// --- LIFE-1 --------------------------------------------------------------------------------

TEST(Lifecycle, LIFE_1_OneInstancePerContextConstructedWithThatContext) {
  EMM_CLAUSE("LIFE-1");
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(fake_with_devices(2), RuntimeOptions::hermetic());
  runtime.set_memory_manager(test::recording_factory(journal));  // instance 1: the probe

  Context& first = runtime.get_context(0);
  Context& second = runtime.get_context(1);
  // Repeated activation and use create nothing new.
  for (int i = 0; i < 3; ++i) {
    runtime.get_context(0).memalloc(64);
    runtime.get_context(1).memalloc(64);
  }

  EXPECT_EQ(journal->instances_with_context(), (std::vector<int>{2, 3}));
  EXPECT_EQ(journal->count("ctor"), 3u) << "probe + one per context";
  auto& plugin0 = test::recording_plugin(first);
  auto& plugin1 = test::recording_plugin(second);
  EXPECT_NE(&plugin0, &plugin1);
  EXPECT_EQ(plugin0.context(), &first);
  EXPECT_EQ(plugin1.context(), &second);
  for (const auto& entry : journal->entries()) {
    if (entry.what != "ctor" || entry.context == nullptr) continue;
    // The context handed to the constructor is the one that owns the instance.
    EXPECT_EQ(entry.context, entry.instance == 2 ? &first : &second);
  }
}

TEST(Lifecycle, LIFE_1_EachContextObjectOwnsItsOwnInstance) {
  EMM_CLAUSE("LIFE-1");
  // Numba builds extra Context objects for one CUcontext (test_context_stack); each gets its
  // own instance.
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  auto journal = std::make_shared<test::Journal>();
  const CUcontext handle = fake->primary_ctx_retain(0);
  {
    Context a(runtime, 0, handle, test::recording_factory(journal), DeallocConfig{});
    Context b(runtime, 0, handle, test::recording_factory(journal), DeallocConfig{});
    EXPECT_EQ(journal->instances_with_context(), (std::vector<int>{1, 2}));
    EXPECT_EQ(a.memory_manager().context(), &a);
    EXPECT_EQ(b.memory_manager().context(), &b);
  }
  EXPECT_EQ(journal->count("dtor"), 2u) << "a context destroys its instance";
  fake->primary_ctx_release(0);
}

// --- LIFE-3 --------------------------------------------------------------------------------

// Builds a Context directly (not through Runtime::get_context, which initializes at once), runs
// `operation` as its very first use, and checks the instance saw initialize() before it.
void expect_initialize_first(const std::string& path, const std::string& plugin_call,
                             const std::function<void(Context&, FakeDriver&)>& operation) {
  SCOPED_TRACE("path: " + path);
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  auto journal = std::make_shared<test::Journal>();
  const CUcontext handle = fake->primary_ctx_retain(0);
  {
    Context context(runtime, 0, handle, test::recording_factory(journal), DeallocConfig{});
    ASSERT_EQ(journal->calls(1), std::vector<std::string>{"ctor"})
        << "constructing a context must not initialize its plugin yet";
    ASSERT_NO_THROW(operation(context, *fake));
    const auto calls = journal->calls(1);
    ASSERT_GE(calls.size(), 3u);
    EXPECT_EQ(calls[0], "ctor");
    EXPECT_EQ(calls[1], "initialize") << "initialize() must be the first call after construction";
    EXPECT_NE(std::find(calls.begin() + 2, calls.end(), plugin_call), calls.end())
        << "the operation must reach the plugin's " << plugin_call;
    context.reset();
  }
  fake->primary_ctx_release(0);
}

TEST(Lifecycle, LIFE_3_InitializePrecedesMemalloc) {
  EMM_CLAUSE("LIFE-3");
  expect_initialize_first("memalloc", "memalloc",
                          [](Context& c, FakeDriver&) { c.memalloc(1024); });
}

TEST(Lifecycle, LIFE_3_InitializePrecedesMemhostalloc) {
  EMM_CLAUSE("LIFE-3");
  expect_initialize_first("memhostalloc pinned", "memhostalloc",
                          [](Context& c, FakeDriver&) { c.memhostalloc(64); });
  expect_initialize_first("memhostalloc mapped", "memhostalloc",
                          [](Context& c, FakeDriver&) { c.memhostalloc(64, true); });
}

TEST(Lifecycle, LIFE_3_InitializePrecedesMempin) {
  EMM_CLAUSE("LIFE-3");
  for (bool mapped : {false, true}) {
    expect_initialize_first(mapped ? "mempin mapped" : "mempin", "mempin",
                            [mapped](Context& c, FakeDriver&) {
                              auto buffer = std::make_shared<std::vector<char>>(8192);
                              c.mempin(buffer, buffer->data(), buffer->size(), mapped);
                            });
  }
}

TEST(Lifecycle, LIFE_3_InitializePrecedesGetMemoryInfo) {
  EMM_CLAUSE("LIFE-3");
  expect_initialize_first("get_memory_info", "get_memory_info",
                          [](Context& c, FakeDriver&) { c.get_memory_info(); });
}

TEST(Lifecycle, LIFE_3_InitializePrecedesGetIpcHandle) {
  EMM_CLAUSE("LIFE-3");
  expect_initialize_first("get_ipc_handle", "get_ipc_handle", [](Context& c, FakeDriver& fake) {
    // Memory from outside the plugin, so that get_ipc_handle is the plugin's first call.
    c.make_current();
    const CUdeviceptr raw = fake.mem_alloc(4096);
    auto memory = std::make_shared<MemoryPointer>(&c, raw, 4096, nullptr,
                                                  [&fake, raw] { fake.mem_free(raw); });
    IpcHandle handle = c.get_ipc_handle(memory->view(16));
    EXPECT_EQ(handle.offset(), 16u);
  });
}

TEST(Lifecycle, LIFE_3_InitializePrecedesDeferCleanup) {
  EMM_CLAUSE("LIFE-3");
  expect_initialize_first("defer_cleanup", "defer_cleanup",
                          [](Context& c, FakeDriver&) { CleanupGuard guard = c.defer_cleanup(); });
}

TEST(Lifecycle, LIFE_3_InitializePrecedesStagedIpcImport) {
  EMM_CLAUSE("LIFE-3");
  // A staged open allocates through the importing context's plugin: that must be initialized
  // first even when the import is the context's very first use.
  FakeSystemConfig config;
  config.devices = {FakeDeviceConfig{}, FakeDeviceConfig{}};
  config.peer_access = false;
  auto exporter = std::make_shared<FakeDriver>(config);
  Runtime exporting(exporter, RuntimeOptions::hermetic());
  Context& source = exporting.get_context(0);
  auto memory = source.memalloc(512);
  const std::vector<std::byte> bytes = source.get_ipc_handle(memory).serialize();

  auto importer = exporter->spawn_process();
  Runtime importing(importer, RuntimeOptions::hermetic());
  auto journal = std::make_shared<test::Journal>();
  const CUcontext handle = importer->primary_ctx_retain(1);
  {
    Context destination(importing, 1, handle, test::recording_factory(journal), DeallocConfig{});
    IpcHandle imported = IpcHandle::deserialize(bytes);
    auto copy = imported.open(destination);
    EXPECT_TRUE(imported.is_staged());
    EXPECT_THAT(journal->calls(1), ElementsAre("ctor", "initialize", "memalloc"));
    imported.close();
    copy.reset();
    destination.reset();
  }
  importer->primary_ctx_release(1);
}

TEST(Lifecycle, LIFE_3_GetContextInitializesBeforeReturning) {
  EMM_CLAUSE("LIFE-3");
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  runtime.set_memory_manager(test::recording_factory(journal));
  Context& context = runtime.get_context(0);
  EXPECT_THAT(journal->calls(2), ElementsAre("ctor", "initialize"));
  context.memalloc(64);
  EXPECT_THAT(journal->calls(2), ElementsAre("ctor", "initialize", "memalloc"));
}

// --- LIFE-9 --------------------------------------------------------------------------------

TEST(Lifecycle, LIFE_9_CloseResetsEachUsedContextOnceAndDropsInstances) {
  EMM_CLAUSE("LIFE-9");
  auto fake = fake_with_devices(3);
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  runtime.set_memory_manager(test::recording_factory(journal));  // probe = instance 1

  auto a = runtime.get_context(0).memalloc(4096);
  auto b = runtime.get_context(2).memalloc(4096);  // device 1 is never used
  a.reset();
  ASSERT_EQ(journal->instances_with_context(), (std::vector<int>{2, 3}));
  EXPECT_GT(fake->device_bytes_in_use(), 0u);

  // Retains of the test's own keep the primary contexts alive past close(), so that what the
  // plugins' reset() released is seen, not what a destroyed context took along.
  fake->primary_ctx_retain(0);
  fake->primary_ctx_retain(2);
  runtime.close();
  ASSERT_TRUE(fake->primary_ctx_active(0) && fake->primary_ctx_active(2));

  for (int instance : {2, 3}) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    const auto calls = journal->calls(instance);
    EXPECT_EQ(std::count(calls.begin(), calls.end(), "reset"), 1) << "reset() exactly once";
    ASSERT_FALSE(calls.empty());
    EXPECT_EQ(calls.back(), "dtor") << "the instance is dropped after its reset()";
  }
  EXPECT_EQ(journal->count("reset"), 2u) << "no reset() for a device that was never used";
  EXPECT_EQ(runtime.find_context(0), nullptr);
  EXPECT_EQ(runtime.find_context(2), nullptr);
  EXPECT_EQ(fake->device_bytes_in_use(), 0u) << "reset() released what the plugin held";

  // A pointer that outlived close() releases without touching the driver twice.
  b.reset();
  EXPECT_EQ(fake->invalid_frees(), 0u);

  // The next use creates a new context with a new instance.
  Context& again = runtime.get_context(0);
  EXPECT_EQ(journal->instances_with_context(), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(test::recording_plugin(again).instance(), 4);
  EXPECT_EQ(again.memory_manager().context(), &again);
  EXPECT_THAT(journal->calls(4), ElementsAre("ctor", "initialize"));
  auto c = again.memalloc(128);
  EXPECT_EQ(c->size(), 128u);
  fake->primary_ctx_release(2);
  fake->primary_ctx_release(0);
}

TEST(Lifecycle, LIFE_9_CloseReleasesThePrimaryContextWhenClearingTheCurrentContextFails) {
  EMM_CLAUSE("LIFE-9");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  auto memory = runtime.get_context(0).memalloc(4096);
  memory.reset();
  ASSERT_EQ(fake->primary_ctx_retain_count(0), 1);
  // close() finds the context current and makes none current: that call fails.
  fake->fail_call(DriverCall::cuCtxSetCurrent, CUDA_ERROR_INVALID_CONTEXT);
  EMM_EXPECT_DRIVER_ERROR(runtime.close(), CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent",
                          HasSubstr("failure injected"));
  EXPECT_EQ(fake->primary_ctx_retain_count(0), 0) << "the retain is released all the same";
  EXPECT_EQ(fake->call_count(DriverCall::cuDevicePrimaryCtxRelease), 1u);
  EXPECT_EQ(runtime.find_context(0), nullptr);
  EXPECT_EQ(fake->device_bytes_in_use(), 0u);

  Context& again = runtime.get_context(0);  // the runtime is usable afterwards
  EXPECT_EQ(again.memalloc(64)->size(), 64u);
  runtime.close();
  EXPECT_EQ(fake->primary_ctx_retain_count(0), 0);
}

TEST(Lifecycle, LIFE_9_CloseReleasesEveryRetainWhenEveryContextSwitchFails) {
  EMM_CLAUSE("LIFE-9");
  auto fake = fake_with_devices(2);
  Runtime runtime(fake, RuntimeOptions::hermetic());
  runtime.get_context(0).memalloc(4096).reset();
  runtime.get_context(1).memalloc(4096).reset();  // device 1's context is current now
  fake->fail_call(DriverCall::cuCtxSetCurrent, CUDA_ERROR_UNKNOWN, 1, 100);
  Diagnostics::Capture diagnostics;  // ~Context cannot make device 0's context current
  // The first failure is device 0's reset(), which cannot make its context current.
  EMM_EXPECT_DRIVER_ERROR(runtime.close(), CUDA_ERROR_UNKNOWN, "cuCtxSetCurrent",
                          HasSubstr("failure injected"));
  fake->clear_faults();
  EXPECT_EQ(fake->primary_ctx_retain_count(0), 0);
  EXPECT_EQ(fake->primary_ctx_retain_count(1), 0);
  EXPECT_EQ(fake->call_count(DriverCall::cuDevicePrimaryCtxRelease), 2u);
  EXPECT_EQ(fake->device_bytes_in_use(), 0u) << "the plugins released their memory";
}

TEST(Lifecycle, LIFE_9_CloseTwiceAndCloseWithoutContextsCallNothing) {
  EMM_CLAUSE("LIFE-9");
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  runtime.set_memory_manager(test::recording_factory(journal));
  runtime.close();
  EXPECT_EQ(journal->count("reset"), 0u);
  runtime.get_context(0);
  runtime.close();
  runtime.close();
  EXPECT_EQ(journal->count("reset"), 1u);
  EXPECT_EQ(journal->count("dtor"), 2u) << "the probe and the one context instance";
}

}  // namespace
}  // namespace emm
