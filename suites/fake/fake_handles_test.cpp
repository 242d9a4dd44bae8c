// FakeDriver streams, events, modules and stream-ordered pools.
#include <gtest/gtest.h>

#include <cstdint>

#include "fake_test_support.hpp"

namespace emm::test {
namespace {

using ::testing::HasSubstr;

CUmemPoolProps device_pool_props(int device) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  return props;
}

TEST(FakeHandles, StreamsAreCountedAndDoubleDestroyIsInvalidHandle) {
  auto driver = current_process();
  CUstream a = driver->stream_create(CU_STREAM_NON_BLOCKING);
  CUstream b = driver->stream_create(CU_STREAM_DEFAULT);
  EXPECT_NE(a, b);
  EXPECT_EQ(driver->stream_count(), 2U);
  driver->stream_synchronize(a);
  driver->stream_synchronize(nullptr);
  driver->stream_synchronize(CU_STREAM_PER_THREAD);
  driver->stream_destroy(a);
  EXPECT_EQ(driver->stream_count(), 1U);
  EMM_EXPECT_DRIVER_ERROR(
      driver->stream_destroy(a), CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy",
      HasSubstr("is not a live stream of this process (destroyed twice, or never "
                "created)"));
  EMM_EXPECT_DRIVER_ERROR(driver->stream_synchronize(a), CUDA_ERROR_INVALID_HANDLE,
                          "cuStreamSynchronize", HasSubstr("is not a live stream of this process"));
  EXPECT_EQ(driver->invalid_frees(), 1U);
  // Handles are never reused, so a stale one stays invalid.
  CUstream c = driver->stream_create(0);
  EXPECT_NE(c, a);
  EMM_EXPECT_DRIVER_ERROR(
      driver->stream_create(7), CUDA_ERROR_INVALID_VALUE, "cuStreamCreate",
      HasSubstr("flags must be CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING, got 7"));
  driver->stream_destroy(b);
  driver->stream_destroy(c);
  EXPECT_EQ(driver->stream_count(), 0U);
}

TEST(FakeHandles, EventsAreCountedAndValidated) {
  auto driver = current_process();
  CUevent event = driver->event_create(CU_EVENT_DISABLE_TIMING);
  CUstream stream = driver->stream_create(0);
  EXPECT_EQ(driver->event_count(), 1U);
  driver->event_record(event, stream);
  driver->event_record(event, nullptr);
  driver->event_synchronize(event);
  EMM_EXPECT_DRIVER_ERROR(driver->event_record(event, reinterpret_cast<CUstream>(0x999)),
                          CUDA_ERROR_INVALID_HANDLE, "cuEventRecord",
                          HasSubstr("stream 0x999 is not a live stream of this process"));
  driver->event_destroy(event);
  EMM_EXPECT_DRIVER_ERROR(driver->event_record(event, stream), CUDA_ERROR_INVALID_HANDLE,
                          "cuEventRecord", HasSubstr("is not a live event of this process"));
  EMM_EXPECT_DRIVER_ERROR(driver->event_synchronize(event), CUDA_ERROR_INVALID_HANDLE,
                          "cuEventSynchronize", HasSubstr("is not a live event of this process"));
  EMM_EXPECT_DRIVER_ERROR(driver->event_destroy(event), CUDA_ERROR_INVALID_HANDLE, "cuEventDestroy",
                          HasSubstr("(destroyed twice, or never created)"));
  EMM_EXPECT_DRIVER_ERROR(driver->event_create(0x40), CUDA_ERROR_INVALID_VALUE, "cuEventCreate",
                          HasSubstr("unknown flags 0x40"));
  EXPECT_EQ(driver->invalid_frees(), 1U);
  EXPECT_EQ(driver->event_count(), 0U);
  driver->stream_destroy(stream);
}

TEST(FakeHandles, ModulesAcceptAnyImageAndAreCounted) {
  auto driver = current_process();
  const char image[] = "not really PTX";
  CUmodule module = driver->module_load_data(image);
  EXPECT_EQ(driver->module_count(), 1U);
  EMM_EXPECT_DRIVER_ERROR(driver->module_load_data(nullptr), CUDA_ERROR_INVALID_VALUE,
                          "cuModuleLoadData", HasSubstr("image is null"));
  driver->module_unload(module);
  EXPECT_EQ(driver->module_count(), 0U);
  EMM_EXPECT_DRIVER_ERROR(driver->module_unload(module), CUDA_ERROR_INVALID_HANDLE,
                          "cuModuleUnload",
                          HasSubstr("is not a loaded module of this process (unloaded "
                                    "twice, or never loaded)"));
  EXPECT_EQ(driver->invalid_frees(), 1U);
}

TEST(FakeHandles, PoolAllocationsAreDeviceMemory) {
  auto driver = current_process();
  CUmemoryPool pool = driver->mem_pool_create(device_pool_props(0));
  EXPECT_EQ(driver->pool_count(), 1U);
  CUstream stream = driver->stream_create(CU_STREAM_NON_BLOCKING);
  const CUdeviceptr p = driver->mem_alloc_from_pool_async(1000, pool, stream);
  EXPECT_EQ(p % 512, 0U);
  EXPECT_EQ(driver->device_bytes_in_use(), 1000U);
  EXPECT_EQ(driver->system()->bytes_in_use(0), 1024U);
  EXPECT_EQ(driver->mem_get_address_range(p + 999).base, p);
  driver->memset_d8(p, 1, 1000);
  driver->mem_free_async(p, stream);
  EXPECT_EQ(driver->device_bytes_in_use(), 0U);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free_async(p, stream), CUDA_ERROR_INVALID_VALUE,
                          "cuMemFreeAsync",
                          HasSubstr("is not a live device allocation of this process"));
  EXPECT_EQ(driver->invalid_frees(), 1U);
  // Size 0 succeeds with nothing allocated (as on the real driver).
  EXPECT_EQ(driver->mem_alloc_from_pool_async(0, pool, stream), 0U);
  driver->mem_free_async(0, stream);
  driver->stream_destroy(stream);
  driver->mem_pool_destroy(pool);
  EXPECT_EQ(driver->pool_count(), 0U);
}

TEST(FakeHandles, FreeAndFreeAsyncAcceptEachOthersAllocations) {
  // As on the real driver (probed): cuMemFreeAsync frees cuMemAlloc memory and cuMemFree frees
  // pool memory.
  auto driver = current_process();
  CUmemoryPool pool = driver->mem_pool_create(device_pool_props(0));
  driver->mem_free_async(driver->mem_alloc(64), nullptr);
  driver->mem_free(driver->mem_alloc_from_pool_async(64, pool, nullptr));
  EXPECT_TRUE(driver->live_allocations().empty());
  driver->mem_pool_destroy(pool);
}

TEST(FakeHandles, PoolOutOfMemoryAndStaleHandles) {
  FakeSystemConfig config;
  config.devices[0].capacity = 1 * kMiB;
  auto driver = current_process(config);
  CUmemoryPool pool = driver->mem_pool_create(device_pool_props(0));
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_alloc_from_pool_async(2 * kMiB, pool, nullptr), CUDA_ERROR_OUT_OF_MEMORY,
      "cuMemAllocFromPoolAsync",
      HasSubstr("2097152 bytes requested on fake device 0, which has 1048576 of "
                "1048576 bytes free"));
  // Outstanding allocations outlive their destroyed pool, as in CUDA.
  const CUdeviceptr p = driver->mem_alloc_from_pool_async(64, pool, nullptr);
  driver->mem_pool_destroy(pool);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_pool_destroy(pool), CUDA_ERROR_INVALID_HANDLE,
                          "cuMemPoolDestroy", HasSubstr("(destroyed twice, or never created)"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc_from_pool_async(64, pool, nullptr),
                          CUDA_ERROR_INVALID_HANDLE, "cuMemAllocFromPoolAsync",
                          HasSubstr("is not a live pool of this process"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_pool_trim_to(pool, 0), CUDA_ERROR_INVALID_HANDLE,
                          "cuMemPoolTrimTo", HasSubstr("is not a live pool of this process"));
  EXPECT_EQ(driver->invalid_frees(), 1U);
  driver->memset_d8(p, 0, 64);
  driver->mem_free_async(p, nullptr);
}

TEST(FakeHandles, PoolCreationAndAttributesAreValidated) {
  auto driver = std::make_shared<FakeDriver>();  // pools need no current context
  CUmemPoolProps host_props = device_pool_props(0);
  host_props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  EMM_EXPECT_DRIVER_ERROR(driver->mem_pool_create(host_props), CUDA_ERROR_INVALID_VALUE,
                          "cuMemPoolCreate", HasSubstr("CU_MEM_LOCATION_TYPE_DEVICE location"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_pool_create(device_pool_props(4)), CUDA_ERROR_INVALID_DEVICE,
                          "cuMemPoolCreate", HasSubstr("device 4 does not exist"));
  CUmemoryPool pool = driver->mem_pool_create(device_pool_props(0));
  std::uint64_t threshold = UINT64_MAX;
  driver->mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  int reuse = 0;
  driver->mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse);
  std::uint64_t high = 0;
  driver->mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high);
  high = 5;
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high),
      CUDA_ERROR_INVALID_VALUE, "cuMemPoolSetAttribute",
      HasSubstr("a high-water mark can only be reset to 0"));
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &high),
      CUDA_ERROR_INVALID_VALUE, "cuMemPoolSetAttribute", HasSubstr("cannot be set"));
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, nullptr),
      CUDA_ERROR_INVALID_VALUE, "cuMemPoolSetAttribute", HasSubstr("value is null"));
  driver->mem_pool_trim_to(pool, 0);
  driver->mem_pool_destroy(pool);
}

}  // namespace
}  // namespace emm::test
