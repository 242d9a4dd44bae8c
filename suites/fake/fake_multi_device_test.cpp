// FakeDriver on a system of several devices, end to end: identities, memory, pointer
// attributes, peer access and IPC between devices, and contexts that live and die per device.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "fake_test_support.hpp"

namespace emm::test {
namespace {

using ::testing::HasSubstr;

FakeSystemConfig devices(int count) {
  FakeSystemConfig config;
  config.devices.resize(static_cast<std::size_t>(count));
  return config;
}

TEST(FakeMultiDevice, DevicesHaveDistinctPciIdentities) {
  auto driver = std::make_shared<FakeDriver>(devices(4));
  std::set<std::tuple<int, int, int>> seen;
  for (int device = 0; device < driver->device_get_count(); ++device) {
    const DeviceIdentity identity = driver->device_identity(device);
    seen.emplace(identity.pci_domain_id, identity.pci_bus_id, identity.pci_device_id);
  }
  EXPECT_EQ(seen.size(), 4U);
}

TEST(FakeMultiDevice, EachDeviceHasItsOwnMemoryAndAddresses) {
  FakeSystemConfig config = devices(2);
  config.devices[1].capacity = 64 * kMiB;
  auto driver = current_process(config);
  const CUcontext context0 = driver->ctx_get_current();
  const CUcontext context1 = driver->primary_ctx_retain(1);
  EXPECT_NE(context0, context1);

  const CUdeviceptr on0 = driver->mem_alloc(32 * kMiB);
  driver->ctx_set_current(context1);
  EXPECT_EQ(driver->ctx_get_device(), 1);
  EXPECT_EQ(driver->mem_get_info(), (MemoryInfo{64 * kMiB, 64 * kMiB})) << "device 0's use";
  const CUdeviceptr on1 = driver->mem_alloc(48 * kMiB);
  EXPECT_EQ(driver->mem_get_info().free, 16 * kMiB);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(32 * kMiB), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
                          HasSubstr("on fake device 1"));
  driver->ctx_set_current(context0);
  EXPECT_EQ(driver->mem_get_info().free, 4 * kGiB - 32 * kMiB) << "device 1's use";
  EXPECT_EQ(driver->system()->bytes_in_use(0), 32 * kMiB);
  EXPECT_EQ(driver->system()->bytes_in_use(1), 48 * kMiB);

  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, on0), 0U);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, on1 + 5), 1U);
  EXPECT_EQ(driver->mem_get_address_range(on1 + 5).base, on1);

  // Bytes written on one device are copied to the other through the host.
  driver->memset_d8(on0, 0x3c, 16);
  driver->memcpy_dtod(on1, on0, 16);
  unsigned char byte = 0;
  driver->memcpy_dtoh(&byte, on1 + 15, 1);
  EXPECT_EQ(byte, 0x3c);

  driver->mem_free(on1);  // a free needs no context of the allocation's device
  driver->mem_free(on0);
  EXPECT_EQ(driver->invalid_frees(), 0U);
  driver->primary_ctx_release(1);
}

TEST(FakeMultiDevice, PeerAccessIsOffByDefaultSoIpcBetweenDevicesIsRefused) {
  auto exporter = make_current(std::make_shared<FakeDriver>(devices(2)), 1);
  auto importer = make_current(exporter->spawn_process(), 0);
  EXPECT_FALSE(importer->device_can_access_peer(0, 1));
  EXPECT_FALSE(importer->device_can_access_peer(1, 0));
  const CUdeviceptr p = exporter->mem_alloc(256);
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p);
  EMM_EXPECT_DRIVER_ERROR(importer->ipc_open_mem_handle(handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                          CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "cuIpcOpenMemHandle",
                          HasSubstr("the allocation lives on fake device 1 and the current "
                                    "context is on device 0"));
  // The importer's context on the block's own device opens it (what a staged import does).
  importer->ctx_set_current(importer->primary_ctx_retain(1));
  const CUdeviceptr mapped = importer->ipc_open_mem_handle(handle, 0);
  EXPECT_EQ(importer->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, mapped), 1U);
  importer->ipc_close_mem_handle(mapped);
  importer->primary_ctx_release(1);
  exporter->mem_free(p);
}

TEST(FakeMultiDevice, WithPeerAccessAnotherDeviceOpensTheHandle) {
  FakeSystemConfig config = devices(2);
  config.peer_access = true;
  auto exporter = make_current(std::make_shared<FakeDriver>(config), 1);
  auto importer = make_current(exporter->spawn_process(), 0);
  EXPECT_TRUE(importer->device_can_access_peer(0, 1));
  const CUdeviceptr p = exporter->mem_alloc(256);
  const CUdeviceptr mapped = importer->ipc_open_mem_handle(exporter->ipc_get_mem_handle(p), 0);
  EXPECT_EQ(importer->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, mapped), 1U);
  importer->ipc_close_mem_handle(mapped);
  exporter->mem_free(p);
}

TEST(FakeMultiDevice, DestroyingOneDevicesContextLeavesTheOthers) {
  auto driver = current_process(devices(2));
  const CUdeviceptr on0 = driver->mem_alloc(100);
  void* host0 = driver->mem_host_alloc(64, 0);
  driver->ctx_set_current(driver->primary_ctx_retain(1));
  const CUdeviceptr on1 = driver->mem_alloc(200);
  void* host1 = driver->mem_host_alloc(64, 0);

  driver->primary_ctx_release(1);
  EXPECT_FALSE(driver->primary_ctx_active(1));
  EXPECT_TRUE(driver->primary_ctx_active(0));
  EXPECT_EQ(driver->live_allocations().size(), 1U);
  EXPECT_EQ(driver->live_allocations()[0].base, on0);
  EXPECT_EQ(driver->host_allocation_count(), 1U);
  EXPECT_EQ(driver->system()->bytes_in_use(1), 0U);
  EXPECT_EQ(driver->context_reclaims().device_bytes, 200U);

  // Device 1's destroyed context is still current: cuMemFree refuses (as the GPU does).
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(on1), CUDA_ERROR_CONTEXT_IS_DESTROYED, "cuMemFree",
                          HasSubstr("primary context of device 1"));
  driver->ctx_set_current(nullptr);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(on1), CUDA_ERROR_INVALID_VALUE, "cuMemFree",
                          HasSubstr("primary context of device 1"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free_host(host1), CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost",
                          HasSubstr("primary context of device 1"));
  driver->mem_free(on0);
  driver->mem_free_host(host0);
  EXPECT_EQ(driver->invalid_frees(), 3U);
}

}  // namespace
}  // namespace emm::test
