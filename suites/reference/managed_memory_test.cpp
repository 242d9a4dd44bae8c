// Managed memory on the host side: ManagedMemory, Context::memallocmanaged and
// HostOnlyCUDAMemoryManager::memallocmanaged (what the MANAGED clauses certify of plugins).
#include "emm/managed_memory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "emm/context.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/runtime.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using ::testing::HasSubstr;
using ::testing::StrEq;

// A plugin derived from BaseCUDAMemoryManager only: it keeps the default memallocmanaged.
class DeviceOnly : public BaseCUDAMemoryManager {
 public:
  using BaseCUDAMemoryManager::BaseCUDAMemoryManager;
  std::shared_ptr<MemoryPointer> memalloc(std::size_t) override {
    throw std::logic_error("DeviceOnly::memalloc is not used here");
  }
  HostAllocation memhostalloc(std::size_t, bool, bool, bool) override {
    throw std::logic_error("DeviceOnly::memhostalloc is not used here");
  }
  HostAllocation mempin(std::shared_ptr<void>, void*, std::size_t, bool) override {
    throw std::logic_error("DeviceOnly::mempin is not used here");
  }
  void initialize() override {}
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>&) override {
    throw std::logic_error("DeviceOnly::get_ipc_handle is not used here");
  }
  MemoryInfo get_memory_info() override { return MemoryInfo{1, 1}; }
  void reset() override {}
  CleanupGuard defer_cleanup() override { return CleanupGuard(); }
  int interface_version() const override { return kSupportedInterfaceVersion; }
};

struct ManagedRuntime {
  ManagedRuntime()
      : fake(std::make_shared<FakeDriver>()), runtime(fake, RuntimeOptions::hermetic()) {}
  Context& context() { return runtime.get_context(0); }
  std::shared_ptr<FakeDriver> fake;
  Runtime runtime;
};

void* host_address(const std::shared_ptr<MemoryPointer>& memory) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(memory->device_pointer()));
}

// --- ManagedMemory ---------------------------------------------------------------------------

TEST(ManagedMemory, IsAnAutoFreePointerWhoseHostPointerIsItsDevicePointer) {
  int finalized = 0;
  const CUdeviceptr address = 0x7f0000001000;
  auto owned = std::make_shared<int>(7);
  auto managed =
      std::make_shared<ManagedMemory>(nullptr, address, 4096, owned, [&finalized] { ++finalized; });
  EXPECT_EQ(managed->host_pointer(), reinterpret_cast<void*>(std::uintptr_t{address}));
  EXPECT_EQ(managed->owned(), owned);
  EXPECT_EQ(managed->refct(), 0) << "an AutoFreePointer starts at refct 0";
  EXPECT_TRUE(managed->is_managed());

  auto own = managed->own();
  EXPECT_EQ(managed_memory(own), managed.get());
  EXPECT_EQ(managed_memory(own->view(16)), managed.get());
  EXPECT_EQ(finalized, 0) << "a view dropped while own() lives frees nothing";
  own.reset();
  EXPECT_EQ(finalized, 1) << "refct back to 0 runs the finalizer";
  managed.reset();
  EXPECT_EQ(finalized, 1) << "exactly once";
}

TEST(ManagedMemory, ManagedMemoryOfOtherPointersIsNull) {
  EXPECT_EQ(managed_memory(nullptr), nullptr);
  auto plain = std::make_shared<MemoryPointer>(nullptr, CUdeviceptr{0x1000}, 64);
  EXPECT_EQ(managed_memory(plain), nullptr);
  EXPECT_EQ(managed_memory(plain->own()), nullptr);
  auto automatic = std::make_shared<AutoFreePointer>(nullptr, CUdeviceptr{0x2000}, 64);
  EXPECT_EQ(managed_memory(automatic->own()), nullptr);
}

// --- Context::memallocmanaged ----------------------------------------------------------------

TEST(ManagedMemory, SizeZeroIsANullPointerAndNeverReachesThePlugin) {
  auto fake = std::make_shared<FakeDriver>();
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  runtime.set_memory_manager(test::recording_factory(journal));
  Context& context = runtime.get_context(0);

  for (const bool attach_global : {true, false}) {
    std::shared_ptr<MemoryPointer> empty = context.memallocmanaged(0, attach_global);
    ASSERT_NE(empty, nullptr);
    EXPECT_EQ(empty->device_pointer(), CUdeviceptr{0});
    EXPECT_EQ(empty->size(), 0u);
    EXPECT_EQ(empty->context(), &context);
    EXPECT_FALSE(empty->is_managed());
  }
  EXPECT_EQ(journal->count("memallocmanaged"), 0u);
  EXPECT_EQ(fake->call_count(DriverCall::cuMemAllocManaged), 0u);
}

TEST(ManagedMemory, TheContextInitializesThePluginFirst) {
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  runtime.set_memory_manager(test::recording_factory(journal));
  Context& context = runtime.get_context(0);
  auto memory = context.memallocmanaged(256);
  const int instance = journal->instances_with_context().at(0);
  EXPECT_THAT(journal->calls(instance),
              ::testing::IsSupersetOf({std::string("initialize"), std::string("memallocmanaged")}));
  const auto calls = journal->calls(instance);
  const auto initialize = std::find(calls.begin(), calls.end(), "initialize");
  const auto allocate = std::find(calls.begin(), calls.end(), "memallocmanaged");
  EXPECT_LT(initialize, allocate) << "initialize() precedes memallocmanaged (RecordingPlugin "
                                     "would have thrown otherwise)";
}

TEST(ManagedMemory, ABaseDerivedPluginThrowsNotImplementedErrorThroughTheContext) {
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  runtime.set_memory_manager<DeviceOnly>();
  Context& context = runtime.get_context(0);
  EMM_EXPECT_THROW(
      NotImplementedError, context.memallocmanaged(4096, false),
      StrEq("memallocmanaged is not implemented by this memory manager: derive from "
            "HostOnlyCUDAMemoryManager, or override memallocmanaged(size, attach_global), and "
            "declare managed_memory=true"));
}

// --- HostOnlyCUDAMemoryManager::memallocmanaged ------------------------------------------------

TEST(ManagedMemory, HostOnlyPassesTheAttachFlagAndReturnsOwnedManagedMemory) {
  ManagedRuntime machine;
  Context& context = machine.context();
  HostOnlyCUDAMemoryManager& manager = test::host_only(context);
  const std::size_t tracked_before = manager.live_allocation_count();

  auto global = context.memallocmanaged(4096 + 3);
  auto host = context.memallocmanaged(64, false);

  ASSERT_NE(managed_memory(global), nullptr);
  ASSERT_NE(managed_memory(host), nullptr);
  EXPECT_NE(dynamic_cast<OwnedPointer*>(global.get()), nullptr) << "ManagedMemory::own()";
  EXPECT_EQ(global->refct(), 1);
  EXPECT_EQ(global->size(), 4096u + 3);
  EXPECT_EQ(host->size(), 64u);
  EXPECT_EQ(managed_memory(global)->host_pointer(), host_address(global));
  EXPECT_EQ(machine.fake->managed_attach_flags(global->device_pointer()),
            std::optional<unsigned>(CU_MEM_ATTACH_GLOBAL));
  EXPECT_EQ(machine.fake->managed_attach_flags(host->device_pointer()),
            std::optional<unsigned>(CU_MEM_ATTACH_HOST));
  EXPECT_EQ(manager.live_allocation_count(), tracked_before + 2) << "tracked for reset()";

  // Host and device see the same bytes.
  std::memset(host_address(host), 0x3C, 64);
  std::vector<unsigned char> read(64);
  machine.fake->memcpy_dtoh(read.data(), host->device_pointer(), 64);
  EXPECT_EQ(read, std::vector<unsigned char>(64, 0x3C));
}

TEST(ManagedMemory, HostOnlyFreesThroughTheQueueOnceAfterTheLastReference) {
  ManagedRuntime machine;
  Context& context = machine.context();
  HostOnlyCUDAMemoryManager& manager = test::host_only(context);
  auto memory = context.memallocmanaged(8192);
  const CUdeviceptr pointer = memory->device_pointer();
  auto view = memory->view(100);
  memory.reset();
  EXPECT_TRUE(machine.fake->managed_attach_flags(pointer).has_value()) << "the view holds it";
  view.reset();
  EXPECT_EQ(machine.fake->call_count(DriverCall::cuMemFree), 0u) << "queued, not yet freed";
  EXPECT_EQ(manager.deallocations().count(), 1u);
  manager.deallocations().clear();
  EXPECT_EQ(machine.fake->call_count(DriverCall::cuMemFree), 1u);
  EXPECT_EQ(machine.fake->managed_attach_flags(pointer), std::nullopt);
  EXPECT_EQ(machine.fake->invalid_frees(), 0u);
}

TEST(ManagedMemory, HostOnlyResetReleasesManagedMemoryStillReferenced) {
  ManagedRuntime machine;
  Context& context = machine.context();
  auto memory = context.memallocmanaged(4096, false);
  auto view = memory->view(1);
  const CUdeviceptr pointer = memory->device_pointer();
  context.reset();
  EXPECT_EQ(machine.fake->managed_attach_flags(pointer), std::nullopt);
  EXPECT_EQ(machine.fake->device_bytes_in_use(), 0u);
  memory.reset();
  view.reset();
  test::host_only(context).deallocations().clear();
  EXPECT_EQ(machine.fake->invalid_frees(), 0u) << "the late release frees nothing twice";
}

TEST(ManagedMemory, HostOnlyRetriesOnceAfterAFlushOnOutOfMemoryOnly) {
  ManagedRuntime machine;
  Context& context = machine.context();
  auto pending = context.memallocmanaged(4096);
  pending.reset();  // its cuMemFree waits in the queue
  machine.fake->fail_call(DriverCall::cuMemAllocManaged, CUDA_ERROR_OUT_OF_MEMORY);
  auto memory = context.memallocmanaged(4096);
  EXPECT_NE(memory->device_pointer(), CUdeviceptr{0});
  EXPECT_EQ(machine.fake->call_count(DriverCall::cuMemFree), 1u) << "the queue was flushed";

  machine.fake->fail_call(DriverCall::cuMemAllocManaged, CUDA_ERROR_OUT_OF_MEMORY, 1, 2);
  EMM_EXPECT_DRIVER_ERROR(context.memallocmanaged(4096), CUDA_ERROR_OUT_OF_MEMORY,
                          "cuMemAllocManaged", HasSubstr("OUT_OF_MEMORY"));
  machine.fake->fail_call(DriverCall::cuMemAllocManaged, CUDA_ERROR_INVALID_VALUE);
  const std::size_t calls = machine.fake->call_count(DriverCall::cuMemAllocManaged);
  EMM_EXPECT_DRIVER_ERROR(context.memallocmanaged(4096), CUDA_ERROR_INVALID_VALUE,
                          "cuMemAllocManaged", HasSubstr("INVALID_VALUE"));
  EXPECT_EQ(machine.fake->call_count(DriverCall::cuMemAllocManaged), calls + 1)
      << "no retry for other errors";
}

}  // namespace
}  // namespace emm
