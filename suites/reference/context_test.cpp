// CTX-1..CTX-3: what the context does itself, never through the plugin (spec 2.5).
#include "emm/context.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "emm/fake/fake_driver.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/mocks/mock_driver.hpp"
#include "emm/runtime.hpp"
#include "emm/stream.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using ::testing::_;
using ::testing::HasSubstr;

constexpr char kModuleImage[] = "a fake module image";

// A plugin that serves device memory from a stream-ordered pool, so that it never needs
// cuMemAlloc/cuMemFree itself: any such call under CTX-2 would be the host's.
class PoolPlugin : public HostOnlyCUDAMemoryManager {
 public:
  using HostOnlyCUDAMemoryManager::HostOnlyCUDAMemoryManager;
  ~PoolPlugin() override {
    if (pool_ == nullptr) return;
    try {
      driver().mem_pool_destroy(pool_);
    } catch (...) {
    }
  }
  void initialize() override {
    HostOnlyCUDAMemoryManager::initialize();
    if (pool_ != nullptr) return;
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = context()->device();
    pool_ = driver().mem_pool_create(props);
  }
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    Driver& d = driver();
    const CUdeviceptr pointer = d.mem_alloc_from_pool_async(size, pool_, nullptr);
    return std::make_shared<MemoryPointer>(context(), pointer, size, nullptr,
                                           [&d, pointer] { d.mem_free_async(pointer, nullptr); });
  }
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>&) override {
    throw NotImplementedError("PoolPlugin does not export IPC handles");
  }
  MemoryInfo get_memory_info() override { return driver().mem_get_info(); }
  int interface_version() const override { return 1; }

 private:
  CUmemoryPool pool_ = nullptr;
};

// --- CTX-1 ---------------------------------------------------------------------------------

// `journal` (if any) is cleared once the context is active, so it shows only what follows.
void expect_resources_bypass_the_plugin(Runtime& runtime, FakeDriver& fake,
                                        test::Journal* journal = nullptr) {
  Context& context = runtime.get_context(0);
  if (journal != nullptr) journal->clear();
  PendingDeallocs& plugin_queue = test::host_only(context).deallocations();
  const std::size_t plugin_pending = plugin_queue.count();

  auto stream = context.create_stream();
  auto event = context.create_event();
  auto module = context.load_module(kModuleImage);
  event->record(stream.get());
  event->synchronize();
  stream->synchronize();
  EXPECT_EQ(fake.stream_count(), 1u);
  EXPECT_EQ(fake.event_count(), 1u);
  EXPECT_EQ(fake.module_count(), 1u);

  stream.reset();
  event.reset();
  module.reset();
  EXPECT_EQ(context.deallocations().count(), 2u)
      << "stream and event destruction is queued on the context's own queue";
  EXPECT_EQ(fake.stream_count(), 1u) << "not destroyed before the context's queue is flushed";
  EXPECT_EQ(context.module_count(), 1u) << "the context keeps its modules until reset()";
  EXPECT_EQ(plugin_queue.count(), plugin_pending) << "nothing went to the plugin's queue";

  context.deallocations().clear();
  EXPECT_EQ(fake.stream_count(), 0u);
  EXPECT_EQ(fake.event_count(), 0u);
  context.reset();
  EXPECT_EQ(context.module_count(), 0u);
  EXPECT_EQ(fake.module_count(), 0u);
  EXPECT_EQ(fake.invalid_frees(), 0u);
}

TEST(ContextResources, CTX_1_StreamsEventsAndModulesNeverReachThePlugin) {
  EMM_CLAUSE("CTX-1");
  auto fake = std::make_shared<FakeDriver>();
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  runtime.set_memory_manager(test::recording_factory(journal));
  expect_resources_bypass_the_plugin(runtime, *fake, journal.get());

  std::vector<std::string> seen;
  for (const auto& entry : journal->entries()) seen.push_back(entry.what);
  EXPECT_EQ(seen, std::vector<std::string>{"reset"})
      << "the only plugin call is the reset() the test asked for";
}

TEST(ContextResources, CTX_1_SameWithTheDefaultManager) {
  EMM_CLAUSE("CTX-1");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  expect_resources_bypass_the_plugin(runtime, *fake);
}

TEST(ContextResources, CTX_1_ResourceDestructionIsDeferredByDeferCleanup) {
  EMM_CLAUSE("CTX-1");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  {
    CleanupGuard guard = context.defer_cleanup();
    for (int i = 0; i < 20; ++i) context.create_stream().reset();
    EXPECT_EQ(context.deallocations().count(), 20u) << "past the count threshold, still queued";
    EXPECT_EQ(fake->stream_count(), 20u);
  }
  context.deallocations().clear();
  EXPECT_EQ(fake->stream_count(), 0u);
}

TEST(ContextResources, CTX_1_StreamsAndEventsStillHeldAtCloseAreDestroyed) {
  EMM_CLAUSE("CTX-1");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  std::shared_ptr<Stream> stream = context.create_stream();
  std::shared_ptr<Event> event = context.create_event();
  EXPECT_EQ(fake->stream_count(), 1u);
  EXPECT_EQ(fake->event_count(), 1u);
  // Another user of the primary context keeps it alive past close(): otherwise its destruction
  // would take the stream and event along, whatever close() did.
  fake->primary_ctx_retain(0);
  runtime.close();
  ASSERT_TRUE(fake->primary_ctx_active(0));
  EXPECT_EQ(fake->stream_count(), 0u) << "[CTX-1] a stream held past close() was not destroyed";
  EXPECT_EQ(fake->event_count(), 0u) << "[CTX-1] an event held past close() was not destroyed";
  stream.reset();  // the late release must not destroy it a second time
  event.reset();
  EXPECT_EQ(fake->invalid_frees(), 0u) << "[CTX-1] a late release destroyed an object again";
  fake->primary_ctx_release(0);
}

TEST(ContextResources, CTX_1_AModuleHeldPastResetAndCloseIsUnloaded) {
  EMM_CLAUSE("CTX-1");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  std::shared_ptr<Module> module = context.load_module(kModuleImage);
  context.reset();  // the context lets go of its modules; the caller still holds this one
  EXPECT_EQ(context.module_count(), 0u);
  EXPECT_EQ(fake->module_count(), 1u) << "a module the caller holds stays loaded";
  runtime.close();
  EXPECT_EQ(fake->module_count(), 0u) << "[CTX-1] a module held past close() was not unloaded";
  module.reset();  // the late release must not unload it a second time
  EXPECT_EQ(fake->invalid_frees(), 0u) << "[CTX-1] a late release unloaded a module again";
}

// --- CTX-2 ---------------------------------------------------------------------------------

FakeSystemConfig two_devices() {
  FakeSystemConfig config;
  config.devices = {FakeDeviceConfig{}, FakeDeviceConfig{}};
  config.peer_access = false;
  return config;
}

// Every public Context and Runtime operation, twice (before and after close()).
void drive_every_operation(Runtime& runtime, const std::vector<std::byte>& exported,
                           std::size_t exported_size) {
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Context& context = runtime.get_context(0);
    context.prepare_for_use();

    // Device memory: allocate, view, write, free explicitly and by release.
    auto memory = context.memalloc(4096);
    auto view = memory->view(128, 256);
    view->memset(0xAB);
    EXPECT_EQ(context.memalloc(0)->size(), 0u);
    auto explicit_free = context.memalloc(512);
    explicit_free->free();
    view.reset();
    memory.reset();

    // Host memory: every flag combination, and pinning.
    for (int flags = 0; flags < 8; ++flags) {
      HostAllocation host = context.memhostalloc(64, flags & 1, flags & 2, flags & 4);
      EXPECT_EQ(host.is_mapped(), (flags & 1) != 0);
    }
    auto buffer = std::make_shared<std::vector<char>>(16384);
    for (bool mapped : {false, true}) {
      HostAllocation pinned = context.mempin(buffer, buffer->data(), buffer->size(), mapped);
      EXPECT_EQ(pinned.is_mapped(), mapped);
    }

    EXPECT_GT(context.get_memory_info().total, 0u);

    // IPC: export (the plugin declines, unchanged), and import directly and staged.
    auto to_export = context.memalloc(256);
    EMM_EXPECT_THROW(NotImplementedError, context.get_ipc_handle(to_export),
                     HasSubstr("PoolPlugin does not export IPC handles"));
    {
      IpcHandle direct = IpcHandle::deserialize(exported);
      auto mapped = direct.open(context);
      EXPECT_EQ(mapped->size(), exported_size);
      direct.close();
    }
    {
      IpcHandle staged = IpcHandle::deserialize(exported);
      auto copy = staged.open(runtime.get_context(1));
      EXPECT_TRUE(staged.is_staged());
      staged.close();
    }

    // defer_cleanup with frees inside it.
    {
      CleanupGuard guard = context.defer_cleanup();
      context.memalloc(128).reset();
      context.memhostalloc(64, true);
      context.create_stream().reset();
    }

    // Streams, events, modules.
    auto stream = context.create_stream();
    auto event = context.create_event();
    event->record(stream.get());
    event->synchronize();
    context.load_module(kModuleImage);

    to_export.reset();
    context.reset();
    runtime.get_context(1).reset();
    runtime.close();
  }
}

TEST(ContextDriverUse, CTX_2_WithAPluginInUseTheHostNeverCallsCuMemAllocOrCuMemFree) {
  EMM_CLAUSE("CTX-2");
  // Another process exports a buffer with the default manager, for the IPC imports.
  auto exporter = std::make_shared<FakeDriver>(two_devices());
  Runtime exporting(exporter, RuntimeOptions::hermetic());
  Context& source = exporting.get_context(0);
  auto exported_memory = source.memalloc(4096);
  const auto exported = source.get_ipc_handle(exported_memory->view(100, 1100)).serialize();

  auto mock = std::make_shared<::testing::StrictMock<MockDriver>>(exporter->spawn_process());
  mock->allow_all_except({DriverCall::cuMemAlloc, DriverCall::cuMemFree});
  EXPECT_CALL(*mock, mem_alloc(_)).Times(0);
  EXPECT_CALL(*mock, mem_free(_)).Times(0);
  // Retains of the test's own (past the mock) keep both primary contexts alive after the
  // runtime closes, so the counts below show what the plugin and the host released, not what a
  // destroyed context took along.
  FakeDriver& importer = mock->fake();
  importer.primary_ctx_retain(0);
  importer.primary_ctx_retain(1);
  {
    Runtime runtime(mock, RuntimeOptions::hermetic());
    runtime.set_memory_manager<PoolPlugin>();
    drive_every_operation(runtime, exported, 1000);
  }
  ASSERT_TRUE(importer.primary_ctx_active(0) && importer.primary_ctx_active(1));
  EXPECT_GT(importer.call_count(DriverCall::cuMemAllocFromPoolAsync), 0u)
      << "the plugin's allocations went through the mock";
  EXPECT_EQ(importer.call_count(DriverCall::cuMemAllocFromPoolAsync),
            importer.call_count(DriverCall::cuMemFreeAsync))
      << "every plugin allocation was released by the plugin's own finalizer";
  EXPECT_EQ(importer.call_count(DriverCall::cuMemAlloc), 0u);
  EXPECT_EQ(importer.call_count(DriverCall::cuMemFree), 0u);
  EXPECT_EQ(importer.invalid_frees(), 0u);
  EXPECT_EQ(importer.host_allocation_count(), 0u);
  EXPECT_EQ(importer.host_registration_count(), 0u);
  EXPECT_EQ(importer.ipc_mapping_count(), 0u);
  importer.primary_ctx_release(1);
  importer.primary_ctx_release(0);
}

// The check above could not fail if the mock let cuMemAlloc through unseen: the same
// expectations must catch the default manager, which does call cuMemAlloc.
void default_manager_under_the_ctx2_mock() {
  auto mock = std::make_shared<::testing::StrictMock<MockDriver>>();
  mock->allow_all_except({DriverCall::cuMemAlloc, DriverCall::cuMemFree});
  EXPECT_CALL(*mock, mem_alloc(_)).Times(0);
  EXPECT_CALL(*mock, mem_free(_)).Times(0);
  {
    Runtime runtime(mock, RuntimeOptions::hermetic());
    runtime.get_context(0).memalloc(64);
  }
}

TEST(ContextDriverUse, CTX_2_TheStrictMockCatchesAHostThatAllocatesItself) {
  EMM_CLAUSE("CTX-2");
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    default_manager_under_the_ctx2_mock();
  }
  ASSERT_GE(failures.size(), 1);
  bool named = false;
  for (int i = 0; i < failures.size(); ++i) {
    named = named || std::string(failures.GetTestPartResult(i).message()).find("mem_alloc") !=
                         std::string::npos;
  }
  EXPECT_TRUE(named) << "a failure names mem_alloc";
}

// --- CTX-3 ---------------------------------------------------------------------------------

TEST(ContextReset, CTX_3_PluginResetThenModulesThenTheContextQueue) {
  EMM_CLAUSE("CTX-3");
  auto fake = std::make_shared<FakeDriver>();
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  runtime.set_memory_manager(test::recording_factory(journal));
  Context& context = runtime.get_context(0);

  context.create_stream().reset();  // a destruction waiting in the context's queue
  context.load_module(kModuleImage);
  auto memory = context.memalloc(4096);
  ASSERT_EQ(context.deallocations().count(), 1u);

  struct Seen {
    std::size_t context_modules, driver_modules, driver_streams, context_queue;
  };
  std::optional<Seen> at_plugin_reset;
  test::recording_plugin(context).on_reset = [&] {
    at_plugin_reset = Seen{context.module_count(), fake->module_count(), fake->stream_count(),
                           context.deallocations().count()};
  };

  context.reset();
  // The hook refers to locals that go before the runtime, whose close() resets again.
  test::recording_plugin(context).on_reset = nullptr;

  ASSERT_TRUE(at_plugin_reset.has_value());
  EXPECT_EQ(at_plugin_reset->context_modules, 1u) << "modules are cleared after plugin reset()";
  EXPECT_EQ(at_plugin_reset->driver_modules, 1u);
  EXPECT_EQ(at_plugin_reset->driver_streams, 1u) << "the queue is flushed after plugin reset()";
  EXPECT_EQ(at_plugin_reset->context_queue, 1u);
  // Modules were cleared before the flush: their unloads did not stay behind in the queue.
  EXPECT_EQ(context.module_count(), 0u);
  EXPECT_EQ(fake->module_count(), 0u);
  EXPECT_EQ(fake->stream_count(), 0u);
  EXPECT_EQ(context.deallocations().count(), 0u);
  EXPECT_EQ(fake->device_bytes_in_use(), 0u) << "plugin reset() released device memory";

  // The same context and instance keep working.
  EXPECT_EQ(journal->count("ctor"), 2u);
  EXPECT_EQ(context.memalloc(64)->size(), 64u);
  memory.reset();
}

}  // namespace
}  // namespace emm
