// Several devices: the fake backend with two devices answers where a block lives, the DEV
// clauses pass for the reference manager there, are not_supported with a named note on one
// device, and catch small defective plugins run in-process; emm-certify's --devices.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <emm/conformance/certify_cli.hpp>
#include <emm/conformance/evaluate.hpp>
#include <emm/conformance/testing/expect_throw.hpp>
#include <emm/errors.hpp>
#include <emm/fake/fake_driver.hpp>
#include <emm/get_ipc_handle_mixin.hpp>
#include <emm/numba_memory_manager.hpp>
#include <string_view>

namespace emm::conformance {
namespace {

template <class Plugin>
PluginSubject subject() {
  const PluginDeclaration declaration{
      .name = "several devices",
      .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true},
      .defer_cleanup_behaviour = "as the reference"};
  return PluginSubject{PluginDescription::from(complete_declaration<Plugin>(declaration)),
                       [](Context* c) -> std::unique_ptr<BaseCUDAMemoryManager> {
                         return std::make_unique<Plugin>(c);
                       }};
}

const Clause& clause(std::string_view id) {
  const Clause* found = catalogue().find(id);
  if (found == nullptr) throw std::logic_error("no clause " + std::string(id));
  return *found;
}

ClauseResult run_on(const PluginSubject& s, std::string_view id, int devices) {
  const auto backend = make_backend(BackendKind::fake, BackendSettings{.fake_devices = devices});
  return evaluate(s, clause(id), *backend);
}

constexpr std::array<std::string_view, 4> kDeviceClauses{"DEV-1", "DEV-2", "DEV-3", "DEV-4"};

// Runs `body` with device 0's primary context current (retained for the call), then restores
// the caller's context: the "default device" mistake of the defective plugins below.
template <class Body>
auto on_device_0(Driver& driver, Body body) {
  const CUcontext current = driver.ctx_get_current();
  driver.ctx_set_current(driver.primary_ctx_retain(0));
  struct Restore {
    Driver& driver;
    CUcontext current;
    ~Restore() {
      driver.ctx_set_current(current);
      driver.primary_ctx_release(0);
    }
  } restore{driver, current};
  return body();
}

struct AllocatesOnDevice0 : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    return on_device_0(driver(), [&] { return NumbaCUDAMemoryManager::memalloc(size); });
  }
};

struct MemoryInfoOfDevice0 : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  MemoryInfo get_memory_info() override {
    return on_device_0(driver(), [&] { return NumbaCUDAMemoryManager::get_memory_info(); });
  }
};

struct SourceInfoOfDevice0 : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override {
    IpcHandle right = make_ipc_handle_from_address_range(*context(), memory);
    return IpcHandle(right.base(), right.handle(), right.size(), driver().device_identity(0),
                     right.offset());
  }
};

// Pointers made for device 0's context whatever the instance's context: one instance's view of
// the world shared by all.
struct PointersOfDevice0 : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    std::shared_ptr<MemoryPointer> memory = NumbaCUDAMemoryManager::memalloc(size);
    Context* zero = context()->runtime().find_context(0);
    return std::make_shared<MemoryPointer>(zero, memory->device_pointer(), size, memory);
  }
};

TEST(SeveralDevices, FakeBackendTellsWhichDeviceHoldsABlock) {
  const auto backend = make_backend(BackendKind::fake, BackendSettings{.fake_devices = 2});
  ASSERT_EQ(backend->device_count(), 2);
  EXPECT_EQ(backend->device_name(1), "emmkit fake device");
  Driver& driver = *backend->driver();
  std::array<CUdeviceptr, 2> pointers{};
  for (int device = 0; device < 2; ++device) {
    driver.ctx_set_current(driver.primary_ctx_retain(device));
    pointers[static_cast<std::size_t>(device)] = driver.mem_alloc(4096);
  }
  // The block's device, not the current context's (device 1's is current now).
  EXPECT_EQ(backend->block_device(pointers[0]), 0);
  EXPECT_EQ(backend->block_device(pointers[0] + 4095), 0);
  EXPECT_EQ(backend->block_device(pointers[1]), 1);
  EXPECT_EQ(backend->block_device(pointers[1] + 4096), std::nullopt);
  EXPECT_EQ(driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointers[0]), 0u);
  driver.mem_free(pointers[0]);
  EXPECT_EQ(backend->block_device(pointers[0]), std::nullopt);
  driver.mem_free(pointers[1]);
  for (int device = 0; device < 2; ++device) driver.primary_ctx_release(device);
}

TEST(SeveralDevices, FakeDriverAllocationDeviceIgnoresIpcMappings) {
  FakeSystemConfig config;
  config.devices.resize(2);
  auto exporter = std::make_shared<FakeDriver>(config);
  exporter->ctx_set_current(exporter->primary_ctx_retain(1));
  const CUdeviceptr block = exporter->mem_alloc(8192);
  EXPECT_EQ(exporter->allocation_device(block + 100), 1);
  auto importer = exporter->spawn_process();
  importer->ctx_set_current(importer->primary_ctx_retain(1));
  const CUdeviceptr mapped = importer->ipc_open_mem_handle(exporter->ipc_get_mem_handle(block),
                                                           CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  EXPECT_EQ(importer->allocation_device(mapped), std::nullopt);
  importer->ipc_close_mem_handle(mapped);
  exporter->mem_free(block);
}

TEST(SeveralDevices, FakeBackendRefusesImpossibleDeviceCounts) {
  for (const int devices : {0, -1, kMaxFakeDevices + 1}) {
    EMM_EXPECT_THROW(
        InvalidArgumentError,
        static_cast<void>(
            make_backend(BackendKind::fake, BackendSettings{.fake_devices = devices})),
        "the fake backend has 1 to 16 devices; " + std::to_string(devices) + " were asked for");
  }
}

TEST(SeveralDevices, ReferenceManagerPassesEveryDeviceClauseOnTwoDevices) {
  for (const std::string_view id : kDeviceClauses) {
    const ClauseResult r = run_on(subject<NumbaCUDAMemoryManager>(), id, 2);
    EXPECT_EQ(r.outcome, Outcome::pass) << id << ": " << r.message;
    EXPECT_TRUE(r.unobserved.empty()) << id;
  }
}

TEST(SeveralDevices, OneDeviceIsNotSupportedWithANamedNoteNeverAPass) {
  for (const std::string_view id : kDeviceClauses) {
    const ClauseResult r = run_on(subject<NumbaCUDAMemoryManager>(), id, 1);
    EXPECT_EQ(r.outcome, Outcome::not_supported) << id;
    EXPECT_EQ(r.message, "[" + std::string(id) +
                             "] needs two devices; 1 present (the fake backend cannot run this "
                             "clause)");
    EXPECT_NE(std::find(r.notes.begin(), r.notes.end(),
                        std::string(id) + ": needs two devices; 1 present"),
              r.notes.end())
        << id;
    EXPECT_EQ(r.unobserved, std::vector<std::string>{"a second device (1 present)"}) << id;
    EXPECT_EQ(unobserved_note(r, r.unobserved.front()),
              std::string(id) + ": a second device (1 present) not observable on fake");
    EXPECT_EQ(r.level, Level::must) << id;
  }
}

TEST(SeveralDevices, DEV_1_CatchesPointersNamingAnotherContext) {
  ::testing::Test::RecordProperty("clause", "DEV-1");
  const ClauseResult r = run_on(subject<PointersOfDevice0>(), "DEV-1", 2);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[DEV-1] at call 1 (auto m1 = context(1).memalloc(1);): expected m1->context() to be "
            "device 1's context, whose instance made it; seen: device 0's context (each context "
            "has its own plugin instance, which makes pointers for its own context)");
}

TEST(SeveralDevices, DEV_2_CatchesMemoryTakenOnDevice0) {
  ::testing::Test::RecordProperty("clause", "DEV-2");
  const ClauseResult r = run_on(subject<AllocatesOnDevice0>(), "DEV-2", 2);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[DEV-2] at call 1 (auto m1 = context(1).memalloc(1);): expected memalloc under "
            "device 1's context to return memory of device 1; seen: m1's driver block lives on "
            "device 0");
}

TEST(SeveralDevices, DEV_3_CatchesMemoryInfoOfDevice0) {
  ::testing::Test::RecordProperty("clause", "DEV-3");
  const ClauseResult r = run_on(subject<MemoryInfoOfDevice0>(), "DEV-3", 2);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[DEV-3] at call 3 (context(1).get_memory_info();): expected device 1's "
            "get_memory_info() to report device 1; seen: its free figure dropped by 512 bytes "
            "while the plugin took 512 bytes of the other device only");
}

TEST(SeveralDevices, DEV_4_CatchesSourceInfoOfDevice0) {
  ::testing::Test::RecordProperty("clause", "DEV-4");
  const ClauseResult r = run_on(subject<SourceInfoOfDevice0>(), "DEV-4", 2);
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_EQ(r.message,
            "[DEV-4] at call 2 (auto handle2 = context(1).get_ipc_handle(m1);  // opened in "
            "another process): expected get_ipc_handle(m1).source_info() to be device 1's "
            "identity PCI 0:2:0; seen: PCI 0:1:0 (the exporting context's device, not another's)");
}

TEST(SeveralDevices, DefectsOnlyShowWithTwoDevices) {
  // With one device the same plugins are not_supported on every DEV clause: the defect needs a
  // second device to show, and the certificate says the clause could not run.
  EXPECT_EQ(run_on(subject<AllocatesOnDevice0>(), "DEV-2", 1).outcome, Outcome::not_supported);
  EXPECT_EQ(run_on(subject<MemoryInfoOfDevice0>(), "DEV-3", 1).outcome, Outcome::not_supported);
}

TEST(SeveralDevicesCli, DevicesSetsTheFakeMachine) {
  const std::array<std::string_view, 4> args{"--plugin", "/p.so", "--devices", "1"};
  EXPECT_EQ(parse_certify_args(args).backend_settings.fake_devices, 1);
  // Two by default (spec §7): a plain run certifies the DEV clauses without a GPU.
  const std::array<std::string_view, 2> plain{"--plugin", "/p.so"};
  EXPECT_EQ(parse_certify_args(plain).backend_settings.fake_devices, 2);
  const std::array<std::string_view, 3> inline_value{"--plugin", "/p.so", "--devices=16"};
  EXPECT_EQ(parse_certify_args(inline_value).backend_settings.fake_devices, 16);
}

TEST(SeveralDevicesCli, DevicesRefusesWhatIsNotADeviceCount) {
  for (const std::string_view bad : {"0", "17", "two", "2x", "-1"}) {
    const std::array<std::string_view, 4> args{"--plugin", "/p.so", "--devices", bad};
    EMM_EXPECT_THROW(UsageError, parse_certify_args(args),
                     "--devices needs a whole number of fake devices from 1 to 16 (got '" +
                         std::string(bad) + "')");
  }
  const std::array<std::string_view, 6> twice{"--plugin", "/p.so",     "--devices",
                                              "2",        "--devices", "2"};
  EMM_EXPECT_THROW(UsageError, parse_certify_args(twice), "--devices is given more than once");
}

}  // namespace
}  // namespace emm::conformance
