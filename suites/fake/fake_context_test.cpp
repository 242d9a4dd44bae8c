// FakeDriver contexts, devices and the end of a process.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "fake_test_support.hpp"

namespace emm::test {
namespace {

using ::testing::HasSubstr;

constexpr const char* kNoContext = "no CUDA context is current on this thread";

TEST(FakeContext, CallsThatActInAContextNeedOne) {
  auto driver = std::make_shared<FakeDriver>();
  EXPECT_EQ(driver->ctx_get_current(), nullptr);
  std::vector<unsigned char> bytes(16);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(16), CUDA_ERROR_INVALID_CONTEXT, "cuMemAlloc",
                          HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc_managed(16, CU_MEM_ATTACH_GLOBAL),
                          CUDA_ERROR_INVALID_CONTEXT, "cuMemAllocManaged", HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_get_info(), CUDA_ERROR_INVALID_CONTEXT, "cuMemGetInfo",
                          HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_get_address_range(0x10), CUDA_ERROR_INVALID_CONTEXT,
                          "cuMemGetAddressRange", HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_alloc(16, 0), CUDA_ERROR_INVALID_CONTEXT,
                          "cuMemHostAlloc", HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_register(bytes.data(), 16, 0),
                          CUDA_ERROR_INVALID_CONTEXT, "cuMemHostRegister", HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_get_device_pointer(bytes.data(), 0),
                          CUDA_ERROR_INVALID_CONTEXT, "cuMemHostGetDevicePointer",
                          HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->ipc_get_mem_handle(0x10), CUDA_ERROR_INVALID_CONTEXT,
                          "cuIpcGetMemHandle", HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->memcpy_htod(0x10, bytes.data(), 1), CUDA_ERROR_INVALID_CONTEXT,
                          "cuMemcpyHtoD", HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->memcpy_dtoh(bytes.data(), 0x10, 1), CUDA_ERROR_INVALID_CONTEXT,
                          "cuMemcpyDtoH", HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->memcpy_dtod(0x10, 0x20, 1), CUDA_ERROR_INVALID_CONTEXT,
                          "cuMemcpyDtoD", HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->memset_d8(0x10, 0, 1), CUDA_ERROR_INVALID_CONTEXT, "cuMemsetD8",
                          HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->stream_create(0), CUDA_ERROR_INVALID_CONTEXT, "cuStreamCreate",
                          HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->event_create(0), CUDA_ERROR_INVALID_CONTEXT, "cuEventCreate",
                          HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->module_load_data("image"), CUDA_ERROR_INVALID_CONTEXT,
                          "cuModuleLoadData", HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->ctx_get_device(), CUDA_ERROR_INVALID_CONTEXT, "cuCtxGetDevice",
                          HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->ctx_synchronize(), CUDA_ERROR_INVALID_CONTEXT, "cuCtxSynchronize",
                          HasSubstr(kNoContext));
  EMM_EXPECT_DRIVER_ERROR(driver->stream_synchronize(nullptr), CUDA_ERROR_INVALID_CONTEXT,
                          "cuStreamSynchronize", HasSubstr(kNoContext));
  EXPECT_EQ(driver->host_allocation_count() + driver->host_registration_count() +
                driver->stream_count() + driver->event_count() + driver->module_count(),
            0U);
}

TEST(FakeContext, FreesAndDestroysNeedNoContext) {
  // As on the real driver, which finds the context from the allocation or handle.
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc(64);
  void* host = driver->mem_host_alloc(64, 0);
  std::vector<unsigned char> buffer(64);
  driver->mem_host_register(buffer.data(), buffer.size(), 0);
  CUstream stream = driver->stream_create(0);
  CUevent event = driver->event_create(0);
  CUmodule module = driver->module_load_data("image");
  driver->ctx_set_current(nullptr);
  driver->mem_free(p);
  driver->mem_free_host(host);
  driver->mem_host_unregister(buffer.data());
  driver->stream_destroy(stream);
  driver->event_destroy(event);
  driver->module_unload(module);
  EXPECT_EQ(driver->invalid_frees(), 0U);
  EXPECT_TRUE(driver->live_allocations().empty());
}

TEST(FakeContext, CurrentContextIsPerThreadAndPerProcess) {
  auto driver = std::make_shared<FakeDriver>();
  CUcontext context = driver->primary_ctx_retain(0);
  EXPECT_NE(context, nullptr);
  EXPECT_EQ(driver->primary_ctx_retain(0), context);  // one primary context per device
  driver->ctx_set_current(context);
  EXPECT_EQ(driver->ctx_get_current(), context);
  EXPECT_EQ(driver->ctx_get_device(), 0);

  CUcontext seen_elsewhere = context;
  std::thread([&] { seen_elsewhere = driver->ctx_get_current(); }).join();
  EXPECT_EQ(seen_elsewhere, nullptr);

  auto other = driver->spawn_process();
  EXPECT_EQ(other->ctx_get_current(), nullptr);
  EMM_EXPECT_DRIVER_ERROR(other->mem_alloc(1), CUDA_ERROR_INVALID_CONTEXT, "cuMemAlloc",
                          HasSubstr(kNoContext));

  driver->ctx_set_current(nullptr);
  EXPECT_EQ(driver->ctx_get_current(), nullptr);
}

TEST(FakeContext, UnknownContextIsInvalid) {
  auto driver = std::make_shared<FakeDriver>();
  EMM_EXPECT_DRIVER_ERROR(driver->ctx_set_current(reinterpret_cast<CUcontext>(0x1234)),
                          CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent",
                          HasSubstr("0x1234 is not a context of this process"));
  EXPECT_EQ(driver->ctx_get_current(), nullptr);
}

TEST(FakeContext, APrimaryContextNeverRetainedInThisProcessIsNotActive) {
  // Handles are per device, so another process's handle names this process's context too.
  auto driver = current_process();
  auto other = driver->spawn_process();
  other->ctx_set_current(driver->ctx_get_current());
  EXPECT_FALSE(other->primary_ctx_active(0));
  EMM_EXPECT_DRIVER_ERROR(other->mem_alloc(16), CUDA_ERROR_CONTEXT_IS_DESTROYED, "cuMemAlloc",
                          HasSubstr("the primary context of device 0, was never retained in "
                                    "this process"));
  other->ctx_set_current(other->primary_ctx_retain(0));
  other->mem_free(other->mem_alloc(16));
  EXPECT_EQ(other->invalid_frees(), 0U);
}

TEST(FakeContext, RetainAndReleaseAreCounted) {
  auto driver = std::make_shared<FakeDriver>();
  EXPECT_EQ(driver->primary_ctx_retain_count(0), 0);
  driver->primary_ctx_retain(0);
  driver->primary_ctx_retain(0);
  EXPECT_EQ(driver->primary_ctx_retain_count(0), 2);
  driver->primary_ctx_release(0);
  driver->primary_ctx_release(0);
  EXPECT_EQ(driver->primary_ctx_retain_count(0), 0);
  EMM_EXPECT_DRIVER_ERROR(
      driver->primary_ctx_release(0), CUDA_ERROR_INVALID_CONTEXT, "cuDevicePrimaryCtxRelease",
      HasSubstr("the primary context of device 0 is not retained (more releases than "
                "retains)"));
  EMM_EXPECT_DRIVER_ERROR(driver->primary_ctx_retain(1), CUDA_ERROR_INVALID_DEVICE,
                          "cuDevicePrimaryCtxRetain",
                          HasSubstr("device 1 does not exist (the fake system has 1)"));
  EMM_EXPECT_DRIVER_ERROR(driver->primary_ctx_reset(-1), CUDA_ERROR_INVALID_DEVICE,
                          "cuDevicePrimaryCtxReset", HasSubstr("device -1 does not exist"));
}

TEST(FakeContext, ReleasingOneOfSeveralRetainsKeepsTheContext) {
  auto driver = current_process();
  const CUcontext context = driver->primary_ctx_retain(0);
  const CUdeviceptr p = driver->mem_alloc(4096);
  driver->primary_ctx_release(0);
  EXPECT_TRUE(driver->primary_ctx_active(0));
  EXPECT_EQ(driver->live_allocations().size(), 1U);
  EXPECT_EQ(driver->ctx_get_current(), context);
  driver->mem_free(p);
  EXPECT_EQ(driver->invalid_frees(), 0U);
  EXPECT_EQ(driver->context_reclaims().device_allocations, 0U);
}

TEST(FakeContext, ReleasingTheLastRetainDestroysTheContextWithItsMemory) {
  auto driver = current_process();
  auto exporter = make_current(driver->spawn_process());
  const CUdeviceptr exported = exporter->mem_alloc(4096);
  const CUcontext context = driver->ctx_get_current();
  EXPECT_TRUE(driver->primary_ctx_active(0));
  EXPECT_EQ(driver->primary_ctx_retain_count(0), 1);

  const CUdeviceptr p = driver->mem_alloc(1000);
  const CUdeviceptr managed = driver->mem_alloc_managed(100, CU_MEM_ATTACH_GLOBAL);
  void* host = driver->mem_host_alloc(64, CU_MEMHOSTALLOC_DEVICEMAP);
  std::vector<unsigned char> buffer(64);
  driver->mem_host_register(buffer.data(), buffer.size(), 0);
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = driver->mem_pool_create(props);
  const CUdeviceptr pooled = driver->mem_alloc_from_pool_async(512, pool, nullptr);
  const CUstream stream = driver->stream_create(0);
  const CUdeviceptr mapped = driver->ipc_open_mem_handle(exporter->ipc_get_mem_handle(exported), 0);
  EXPECT_EQ(driver->system()->bytes_in_use(0), 4096U + 1024U + 512U + 512U);

  driver->primary_ctx_release(0);
  EXPECT_FALSE(driver->primary_ctx_active(0));
  EXPECT_EQ(driver->primary_ctx_retain_count(0), 0);
  // Gone, and no longer in use: only the exporter's block is left on the device.
  EXPECT_TRUE(driver->live_allocations().empty());
  EXPECT_EQ(driver->device_bytes_in_use(), 0U);
  EXPECT_EQ(driver->system()->bytes_in_use(0), 4096U);
  EXPECT_EQ(driver->host_allocation_count(), 0U);
  EXPECT_EQ(driver->host_registration_count(), 0U);
  EXPECT_EQ(driver->ipc_mapping_count(), 0U);
  EXPECT_EQ(driver->stream_count() + driver->pool_count(), 0U);
  const FakeDriver::ContextReclaims reclaimed = driver->context_reclaims();
  EXPECT_EQ(reclaimed.device_allocations, 3U);
  EXPECT_EQ(reclaimed.device_bytes, 1000U + 100U + 512U);
  EXPECT_EQ(reclaimed.ipc_mappings, 1U);
  EXPECT_EQ(reclaimed.host_allocations, 1U);
  EXPECT_EQ(reclaimed.host_registrations, 1U);
  EXPECT_EQ(reclaimed.handles, 2U);
  EXPECT_EQ(driver->invalid_frees(), 0U);

  // The handle is still current on this thread, but its context is gone.
  EXPECT_EQ(driver->ctx_get_current(), context);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(16), CUDA_ERROR_CONTEXT_IS_DESTROYED, "cuMemAlloc",
                          HasSubstr("the current context, the primary context of device 0, was "
                                    "destroyed"));
  EMM_EXPECT_DRIVER_ERROR(driver->ctx_synchronize(), CUDA_ERROR_CONTEXT_IS_DESTROYED,
                          "cuCtxSynchronize", HasSubstr("retain it again"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free_async(pooled, nullptr), CUDA_ERROR_CONTEXT_IS_DESTROYED,
                          "cuMemFreeAsync", HasSubstr("was destroyed"));

  // Late frees fail and are counted; the message says why. While the destroyed context is
  // current, cuMemFree refuses with CONTEXT_IS_DESTROYED (as the GPU does).
  const std::string why = "freed with this process's primary context of device 0";
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(p), CUDA_ERROR_CONTEXT_IS_DESTROYED, "cuMemFree",
                          HasSubstr(why));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(managed), CUDA_ERROR_CONTEXT_IS_DESTROYED, "cuMemFree",
                          HasSubstr(why));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(pooled), CUDA_ERROR_CONTEXT_IS_DESTROYED, "cuMemFree",
                          HasSubstr(why));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free_host(host), CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost",
                          HasSubstr(why));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_unregister(buffer.data()),
                          CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "cuMemHostUnregister",
                          HasSubstr(why));
  EMM_EXPECT_DRIVER_ERROR(driver->ipc_close_mem_handle(mapped), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcCloseMemHandle", HasSubstr(why));
  EMM_EXPECT_DRIVER_ERROR(driver->stream_destroy(stream), CUDA_ERROR_INVALID_HANDLE,
                          "cuStreamDestroy", HasSubstr("is not a live stream"));
  EXPECT_EQ(driver->invalid_frees(), 7U);

  // Retaining again gives a fresh, empty context under the same handle.
  EXPECT_EQ(driver->primary_ctx_retain(0), context);
  EXPECT_TRUE(driver->primary_ctx_active(0));
  EXPECT_TRUE(driver->live_allocations().empty());
  driver->mem_free(driver->mem_alloc(16));
  exporter->mem_free(exported);
  EXPECT_EQ(driver->system()->bytes_in_use(0), 0U);
}

TEST(FakeContext, AnAddressReusedAfterItsContextWentIsFreedNormally) {
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc(4096);
  driver->primary_ctx_release(0);
  driver->primary_ctx_retain(0);
  const CUdeviceptr again = driver->mem_alloc(4096);
  ASSERT_EQ(again, p) << "the fake hands the freed range out again";
  driver->mem_free(again);
  EXPECT_EQ(driver->invalid_frees(), 0U);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(p), CUDA_ERROR_INVALID_VALUE, "cuMemFree",
                          HasSubstr("(freed twice, or never allocated)"));
}

TEST(FakeContext, AnExportersDestroyedContextLeavesItsMappedBlockToTheImporter) {
  auto exporter = current_process();
  auto importer = make_current(exporter->spawn_process());
  const CUdeviceptr p = exporter->mem_alloc(256);
  exporter->memset_d8(p, 0x42, 256);
  const CUdeviceptr mapped = importer->ipc_open_mem_handle(exporter->ipc_get_mem_handle(p), 0);
  exporter->primary_ctx_release(0);
  EXPECT_TRUE(exporter->live_allocations().empty());
  EXPECT_EQ(exporter->system()->allocation_count(0), 1U) << "the importer still maps it";
  unsigned char byte = 0;
  importer->memcpy_dtoh(&byte, mapped + 255, 1);
  EXPECT_EQ(byte, 0x42);
  importer->ipc_close_mem_handle(mapped);
  EXPECT_EQ(exporter->system()->allocation_count(0), 0U);
}

TEST(FakeContext, PrimaryContextResetFreesThisProcesssResourcesOnThatDevice) {
  FakeSystemConfig config;
  config.devices.resize(2);
  auto driver = current_process(config);
  const CUcontext context0 = driver->ctx_get_current();
  auto other = make_current(driver->spawn_process());
  const CUdeviceptr others = other->mem_alloc(4096);

  const CUdeviceptr p = driver->mem_alloc(4096);
  driver->mem_alloc_managed(100, CU_MEM_ATTACH_GLOBAL);
  void* host = driver->mem_host_alloc(64, CU_MEMHOSTALLOC_DEVICEMAP);
  std::vector<unsigned char> buffer(64);
  driver->mem_host_register(buffer.data(), buffer.size(), 0);
  driver->stream_create(0);
  driver->event_create(0);
  driver->module_load_data("image");
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = driver->mem_pool_create(props);
  driver->mem_alloc_from_pool_async(512, pool, nullptr);
  // An IPC mapping opened in this context goes too.
  const CUdeviceptr mapped = driver->ipc_open_mem_handle(other->ipc_get_mem_handle(others), 0);

  driver->ctx_set_current(driver->primary_ctx_retain(1));
  const CUdeviceptr on1 = driver->mem_alloc(4096);
  CUstream stream1 = driver->stream_create(0);

  driver->primary_ctx_reset(0);
  EXPECT_FALSE(driver->primary_ctx_active(0));
  EXPECT_TRUE(driver->primary_ctx_active(1));
  EXPECT_EQ(driver->primary_ctx_retain_count(0), 1) << "a reset keeps the retains";
  EXPECT_EQ(driver->live_allocations().size(), 1U);
  EXPECT_EQ(driver->live_allocations()[0].base, on1);
  EXPECT_EQ(driver->host_allocation_count(), 0U);
  EXPECT_EQ(driver->host_registration_count(), 0U);
  EXPECT_EQ(driver->stream_count(), 1U);
  EXPECT_EQ(driver->event_count(), 0U);
  EXPECT_EQ(driver->module_count(), 0U);
  EXPECT_EQ(driver->pool_count(), 0U);
  EXPECT_EQ(driver->ipc_mapping_count(), 0U);
  EXPECT_EQ(driver->system()->bytes_in_use(0), 4096U);  // the other process's block
  EXPECT_EQ(other->live_allocations().size(), 1U);
  EXPECT_EQ(driver->invalid_frees(), 0U);

  // What the reset freed is gone: freeing it again is a double free.
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(p), CUDA_ERROR_INVALID_VALUE, "cuMemFree",
                          HasSubstr("is not a live device allocation of this process"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free_host(host), CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost",
                          HasSubstr("is not a live cuMemHostAlloc allocation"));
  EMM_EXPECT_DRIVER_ERROR(driver->ipc_close_mem_handle(mapped), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcCloseMemHandle", HasSubstr("is not the base of an open"));
  EXPECT_EQ(driver->invalid_frees(), 3U);
  // Device 1's context is untouched; device 0's is destroyed until it is retained again
  // (CudaDriverGpu.PrimaryCtxResetDestroysTheContextUntilRetainedAgain pins this down).
  driver->mem_free(driver->mem_alloc(16));
  driver->ctx_set_current(context0);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(16), CUDA_ERROR_CONTEXT_IS_DESTROYED, "cuMemAlloc",
                          HasSubstr("primary context of device 0, was destroyed"));
  EXPECT_EQ(driver->primary_ctx_retain(0), context0);
  EXPECT_EQ(driver->primary_ctx_retain_count(0), 2);
  driver->mem_free(driver->mem_alloc(16));
  driver->primary_ctx_release(0);
  driver->ctx_set_current(driver->primary_ctx_retain(1));
  driver->primary_ctx_release(1);

  driver->stream_destroy(stream1);
  driver->mem_free(on1);
  other->mem_free(others);
}

TEST(FakeContext, EndingAProcessReleasesEverythingItHeld) {
  auto system = std::make_shared<FakeSystem>();
  {
    auto driver = make_current(std::make_shared<FakeDriver>(system));
    driver->mem_alloc(1 * kMiB);
    driver->mem_alloc(3);
    driver->mem_host_alloc(4096, CU_MEMHOSTALLOC_DEVICEMAP);
    driver->stream_create(0);
    EXPECT_EQ(system->allocation_count(0), 2U);
  }
  EXPECT_EQ(system->allocation_count(0), 0U);
  EXPECT_EQ(system->bytes_in_use(0), 0U);
  // A new process on the same system starts clean, on the current thread too.
  auto next = std::make_shared<FakeDriver>(system);
  EXPECT_EQ(next->ctx_get_current(), nullptr);
}

TEST(FakeDevices, CountNameVersionAndPeerAccess) {
  FakeSystemConfig config;
  config.devices.resize(3);
  config.devices[2].name = "third";
  config.driver_version = 12080;
  auto driver = std::make_shared<FakeDriver>(config);
  EXPECT_EQ(driver->implementation_name(), "fake");
  EXPECT_EQ(driver->device_get_count(), 3);
  EXPECT_EQ(driver->driver_get_version(), 12080);
  EXPECT_EQ(driver->device_get_name(0), "emmkit fake device");
  EXPECT_EQ(driver->device_get_name(2), "third");
  EMM_EXPECT_DRIVER_ERROR(driver->device_get_name(3), CUDA_ERROR_INVALID_DEVICE, "cuDeviceGetName",
                          HasSubstr("device 3 does not exist (the fake system has 3)"));
  EXPECT_FALSE(driver->device_can_access_peer(0, 1));
  config.peer_access = true;
  auto peers = std::make_shared<FakeDriver>(config);
  EXPECT_TRUE(peers->device_can_access_peer(0, 1));
  EXPECT_FALSE(peers->device_can_access_peer(1, 1));  // a device is not its own peer
  EMM_EXPECT_DRIVER_ERROR(peers->device_can_access_peer(0, 7), CUDA_ERROR_INVALID_DEVICE,
                          "cuDeviceCanAccessPeer", HasSubstr("device 7 does not exist"));
}

TEST(FakeDevices, IdentityDefaultsToBusOnePlusIndex) {
  FakeSystemConfig config;
  config.devices.resize(3);
  config.devices[2].identity = DeviceIdentity{1, 0x41, 3};
  auto driver = std::make_shared<FakeDriver>(config);
  EXPECT_EQ(driver->device_identity(0), (DeviceIdentity{0, 1, 0}));
  EXPECT_EQ(driver->device_identity(1), (DeviceIdentity{0, 2, 0}));
  EXPECT_EQ(driver->device_identity(2), (DeviceIdentity{1, 0x41, 3}));
}

TEST(FakeDevices, AttributesArePlausibleAndValidated) {
  auto driver = std::make_shared<FakeDriver>();
  EXPECT_TRUE(driver->can_map_host_memory(0));
  EXPECT_EQ(driver->device_get_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), 9);
  EXPECT_EQ(driver->device_get_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0), 0);
  EXPECT_EQ(driver->device_get_attribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0), 1);
  EXPECT_EQ(driver->device_get_attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 0), 512);
  EXPECT_EQ(driver->device_get_attribute(CU_DEVICE_ATTRIBUTE_INTEGRATED, 0), 0);
  EMM_EXPECT_DRIVER_ERROR(driver->device_get_attribute(static_cast<CUdevice_attribute>(100000), 0),
                          CUDA_ERROR_INVALID_VALUE, "cuDeviceGetAttribute",
                          HasSubstr("unknown device attribute 100000"));
  EMM_EXPECT_DRIVER_ERROR(driver->device_get_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 99),
                          CUDA_ERROR_INVALID_DEVICE, "cuDeviceGetAttribute",
                          HasSubstr("device 99 does not exist"));
}

}  // namespace
}  // namespace emm::test
