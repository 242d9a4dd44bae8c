// FakeDriver host memory: cuMemHostAlloc flags and mapping, cuMemHostRegister rules.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fake_test_support.hpp"

namespace emm::test {
namespace {

using ::testing::HasSubstr;

std::size_t page() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

// Page-aligned host memory owned by the test, to pin.
struct HostBuffer {
  explicit HostBuffer(std::size_t size)
      : data(static_cast<unsigned char*>(std::aligned_alloc(page(), size))) {
    std::memset(data, 0, size);
  }
  ~HostBuffer() { std::free(data); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  unsigned char* data;
};

TEST(FakeHost, HostAllocationIsAlignedWritableAndRecordsItsFlags) {
  auto driver = current_process();
  for (unsigned flags = 0; flags < 8; ++flags) {
    void* p = driver->mem_host_alloc(4096 + flags, flags);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % page(), 0U);
    std::memset(p, 0x7e, 4096 + flags);
    EXPECT_EQ(driver->host_allocation_flags(p), flags);
    EXPECT_EQ(driver->host_allocation_count(), 1U);
    driver->mem_free_host(p);
    EXPECT_EQ(driver->host_allocation_flags(p), std::nullopt);
  }
  EXPECT_EQ(driver->host_allocation_count(), 0U);
}

TEST(FakeHost, PortableAndWriteCombinedArePassedThrough) {
  auto driver = current_process();
  void* p = driver->mem_host_alloc(64, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED);
  EXPECT_EQ(driver->host_allocation_flags(p),
            CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED);
  driver->mem_free_host(p);
}

TEST(FakeHost, HostGetFlagsAnswersForEveryByteOfALiveHostAllocation) {
  auto driver = current_process();
  for (unsigned flags = 0; flags < 8; ++flags) {
    SCOPED_TRACE("flags " + std::to_string(flags));
    auto* p = static_cast<unsigned char*>(driver->mem_host_alloc(100, flags));
    // DEVICEMAP is always reported: with unified addressing every block is mapped (the GPU).
    EXPECT_EQ(driver->mem_host_get_flags(p), flags | CU_MEMHOSTALLOC_DEVICEMAP);
    EXPECT_EQ(driver->mem_host_get_flags(p + 99), flags | CU_MEMHOSTALLOC_DEVICEMAP)
        << "an interior address";
    EMM_EXPECT_DRIVER_ERROR(driver->mem_host_get_flags(p + 100), CUDA_ERROR_INVALID_VALUE,
                            "cuMemHostGetFlags",
                            HasSubstr("is not inside a live cuMemHostAlloc allocation or "
                                      "registration"));
    driver->mem_free_host(p);
    EMM_EXPECT_DRIVER_ERROR(driver->mem_host_get_flags(p), CUDA_ERROR_INVALID_VALUE,
                            "cuMemHostGetFlags",
                            HasSubstr("is not inside a live cuMemHostAlloc allocation"));
  }
  // A block of 0 bytes still answers for its address.
  void* empty = driver->mem_host_alloc(0, CU_MEMHOSTALLOC_PORTABLE);
  EXPECT_EQ(driver->mem_host_get_flags(empty),
            unsigned{CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP});
  driver->mem_free_host(empty);
  EXPECT_EQ(driver->invalid_frees(), 0U);
}

TEST(FakeHost, HostGetFlagsAnswersForRegisteredMemoryAndRefusesPageableMemory) {
  auto driver = current_process();
  HostBuffer buffer(2 * page());
  driver->mem_host_register(buffer.data, page(), CU_MEMHOSTREGISTER_PORTABLE);
  // The PORTABLE bit is shared with cuMemHostAlloc's flags; DEVICEMAP is always reported.
  EXPECT_EQ(driver->mem_host_get_flags(buffer.data + 100),
            unsigned{CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP});
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_get_flags(buffer.data + page()),
                          CUDA_ERROR_INVALID_VALUE, "cuMemHostGetFlags",
                          HasSubstr("is not inside a live cuMemHostAlloc allocation"));
  int on_the_stack = 0;
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_get_flags(&on_the_stack), CUDA_ERROR_INVALID_VALUE,
                          "cuMemHostGetFlags", HasSubstr("is not inside a live cuMemHostAlloc"));
  driver->mem_host_unregister(buffer.data);
  driver->ctx_set_current(nullptr);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_get_flags(buffer.data), CUDA_ERROR_INVALID_CONTEXT,
                          "cuMemHostGetFlags", HasSubstr("no CUDA context is current"));
}

TEST(FakeHost, UnknownHostAllocFlagsAreInvalid) {
  auto driver = current_process();
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_alloc(64, 0x10), CUDA_ERROR_INVALID_VALUE,
                          "cuMemHostAlloc", HasSubstr("unknown flags 0x10"));
  EXPECT_EQ(driver->host_allocation_count(), 0U);
}

TEST(FakeHost, HostAllocationOfZeroBytesSucceedsAsOnCuda) {
  auto driver = current_process();
  void* p = driver->mem_host_alloc(0, 0);
  EXPECT_NE(p, nullptr);
  driver->mem_free_host(p);
}

TEST(FakeHost, MappedHostAllocationHasAnAliasingDevicePointer) {
  auto driver = current_process();
  auto* host = static_cast<unsigned char*>(driver->mem_host_alloc(4096, CU_MEMHOSTALLOC_DEVICEMAP));
  const CUdeviceptr device = driver->mem_host_get_device_pointer(host, 0);
  EXPECT_EQ(device, reinterpret_cast<CUdeviceptr>(host));  // UVA
  EXPECT_EQ(driver->mem_host_get_device_pointer(host + 10, 0), device + 10);

  // Writes through the device alias reach the host bytes, and the other way round.
  driver->memset_d8(device + 100, 0x42, 8);
  EXPECT_EQ(host[100], 0x42);
  EXPECT_EQ(host[107], 0x42);
  EXPECT_EQ(host[108], 0);
  host[200] = 0x99;
  unsigned char read = 0;
  driver->memcpy_dtoh(&read, device + 200, 1);
  EXPECT_EQ(read, 0x99);
  const CUdeviceptr d = driver->mem_alloc(16);
  driver->memcpy_dtod(d, device + 100, 8);
  driver->memcpy_dtoh(&read, d + 7, 1);
  EXPECT_EQ(read, 0x42);

  const AddressRange range = driver->mem_get_address_range(device + 5);
  EXPECT_EQ(range.base, device);
  EXPECT_EQ(range.size, 4096U);
  // One byte past the allocation is not mapped.
  EMM_EXPECT_DRIVER_ERROR(driver->memset_d8(device + 4090, 0, 7), CUDA_ERROR_INVALID_VALUE,
                          "cuMemsetD8", HasSubstr("is not inside one live allocation"));
  driver->mem_free(d);
  driver->mem_free_host(host);
  EMM_EXPECT_DRIVER_ERROR(driver->memset_d8(device, 0, 1), CUDA_ERROR_INVALID_VALUE, "cuMemsetD8",
                          HasSubstr("is not inside one live allocation"));
}

TEST(FakeHost, UnmappedHostMemoryHasNoDevicePointer) {
  auto driver = current_process();
  void* host = driver->mem_host_alloc(4096, CU_MEMHOSTALLOC_PORTABLE);
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_host_get_device_pointer(host, 0), CUDA_ERROR_INVALID_VALUE,
      "cuMemHostGetDevicePointer",
      HasSubstr("is not in host memory allocated with CU_MEMHOSTALLOC_DEVICEMAP"));
  EMM_EXPECT_DRIVER_ERROR(driver->memset_d8(reinterpret_cast<CUdeviceptr>(host), 0, 1),
                          CUDA_ERROR_INVALID_VALUE, "cuMemsetD8",
                          HasSubstr("is not inside one live allocation"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_get_address_range(reinterpret_cast<CUdeviceptr>(host)),
                          CUDA_ERROR_NOT_FOUND, "cuMemGetAddressRange",
                          HasSubstr("is not inside any device allocation"));
  int on_the_stack = 0;
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_get_device_pointer(&on_the_stack, 0),
                          CUDA_ERROR_INVALID_VALUE, "cuMemHostGetDevicePointer",
                          HasSubstr("is not in host memory allocated with"));
  void* mapped = driver->mem_host_alloc(64, CU_MEMHOSTALLOC_DEVICEMAP);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_get_device_pointer(mapped, 1), CUDA_ERROR_INVALID_VALUE,
                          "cuMemHostGetDevicePointer", HasSubstr("flags must be 0, got 1"));
  driver->mem_free_host(mapped);
  driver->mem_free_host(host);
}

TEST(FakeHost, FreeHostOfUnknownPointerIsInvalidAndCounted) {
  auto driver = current_process();
  void* p = driver->mem_host_alloc(64, 0);
  driver->mem_free_host(p);
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_free_host(p), CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost",
      HasSubstr("is not a live cuMemHostAlloc allocation of this process (freed twice, "
                "or never allocated)"));
  EXPECT_EQ(driver->invalid_frees(), 1U);
}

TEST(FakeHost, PageLockedMemoryRunsOutAtTheSystemsCapacityAndComesBackWhenFreed) {
  FakeSystemConfig config;
  config.page_locked_capacity = 16 * page();
  auto driver = current_process(config);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(driver->mem_host_alloc(3 * page() + 1, 0));
  // 4 blocks of 4 pages each (whole pages count): the 17th page is refused, in any process.
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_host_alloc(1, 0), CUDA_ERROR_OUT_OF_MEMORY, "cuMemHostAlloc",
      HasSubstr("1 bytes of page-locked host memory requested, " + std::to_string(16 * page()) +
                " of " + std::to_string(16 * page()) +
                " in use (FakeSystemConfig::page_locked_capacity)"));
  auto other = make_current(driver->spawn_process());
  EMM_EXPECT_DRIVER_ERROR(other->mem_host_alloc(1, 0), CUDA_ERROR_OUT_OF_MEMORY, "cuMemHostAlloc",
                          HasSubstr("page-locked host memory requested"));
  driver->mem_free_host(blocks.back());
  blocks.pop_back();
  void* again = other->mem_host_alloc(4 * page(), CU_MEMHOSTALLOC_PORTABLE);
  std::memset(again, 0x5a, 4 * page());
  other->mem_free_host(again);
  for (void* block : blocks) driver->mem_free_host(block);
}

TEST(FakeHost, DeviceMapFlagsFailWhenTheDeviceCannotMapHostMemory) {
  FakeSystemConfig config;
  config.devices[0].can_map_host_memory = false;
  auto driver = current_process(config);
  EXPECT_FALSE(driver->can_map_host_memory(0));
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_host_alloc(64, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_ERROR_NOT_SUPPORTED,
      "cuMemHostAlloc",
      HasSubstr("CU_MEMHOSTALLOC_DEVICEMAP on fake device 0, which cannot map host "
                "memory (CAN_MAP_HOST_MEMORY is 0)"));
  HostBuffer buffer(page());
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_register(buffer.data, 64, CU_MEMHOSTREGISTER_DEVICEMAP),
                          CUDA_ERROR_NOT_SUPPORTED, "cuMemHostRegister",
                          HasSubstr("CU_MEMHOSTREGISTER_DEVICEMAP on fake device 0"));
  // Unmapped requests still work.
  driver->mem_free_host(driver->mem_host_alloc(64, CU_MEMHOSTALLOC_PORTABLE));
  driver->mem_host_register(buffer.data, 64, 0);
  driver->mem_host_unregister(buffer.data);
  EXPECT_EQ(driver->host_allocation_count(), 0U);
  EXPECT_EQ(driver->host_registration_count(), 0U);
}

TEST(FakeHost, RegisterAndUnregisterExactRange) {
  auto driver = current_process();
  HostBuffer buffer(4 * page());
  driver->mem_host_register(buffer.data, 2 * page(), CU_MEMHOSTREGISTER_PORTABLE);
  EXPECT_EQ(driver->host_registration_count(), 1U);
  EXPECT_EQ(driver->host_registration_flags(buffer.data), CU_MEMHOSTREGISTER_PORTABLE);
  driver->mem_host_unregister(buffer.data);
  EXPECT_EQ(driver->host_registration_count(), 0U);
  // The same range can be pinned again at once (numba#3508).
  driver->mem_host_register(buffer.data, 2 * page(), 0);
  driver->mem_host_unregister(buffer.data);
  EXPECT_EQ(driver->invalid_frees(), 0U);
}

TEST(FakeHost, RegisteringOverlappingBytesIsAlreadyRegistered) {
  auto driver = current_process();
  HostBuffer buffer(4 * page());
  unsigned char* base = buffer.data;
  driver->mem_host_register(base + page(), page(), 0);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_register(base + page() - 96, 200, 0),
                          CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "cuMemHostRegister",
                          HasSubstr("overlaps memory that is already registered"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_register(base + page() + 10, 10, 0),
                          CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "cuMemHostRegister",
                          HasSubstr("unregister it first"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_register(base, 4 * page(), 0),
                          CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "cuMemHostRegister",
                          HasSubstr("overlaps memory"));
  EXPECT_EQ(driver->host_registration_count(), 1U);
  // Disjoint bytes are fine, even next to it or in a page it shares (as the real driver
  // answers).
  driver->mem_host_register(base + 2 * page(), 100, 0);
  driver->mem_host_register(base + 2 * page() + 300, 100, 0);
  driver->mem_host_register(base + page() - 50, 50, 0);
  EXPECT_EQ(driver->host_registration_count(), 4U);
  driver->mem_host_unregister(base + page());
  driver->mem_host_unregister(base + 2 * page());
  driver->mem_host_unregister(base + 2 * page() + 300);
  driver->mem_host_unregister(base + page() - 50);
  EXPECT_EQ(driver->host_registration_count(), 0U);
}

TEST(FakeHost, RegisteringMemoryFromMemHostAllocIsAnInvalidValue) {
  auto driver = current_process();
  void* p = driver->mem_host_alloc(4096, 0);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_register(static_cast<char*>(p) + 8, 8, 0),
                          CUDA_ERROR_INVALID_VALUE, "cuMemHostRegister",
                          HasSubstr("overlaps a cuMemHostAlloc block"));
  driver->mem_free_host(p);
}

TEST(FakeHost, RegisterRejectsNullSizeZeroAndUnknownFlags) {
  auto driver = current_process();
  HostBuffer buffer(page());
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_register(nullptr, 4096, 0), CUDA_ERROR_INVALID_VALUE,
                          "cuMemHostRegister", HasSubstr("pointer is null"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_register(buffer.data, 0, 0), CUDA_ERROR_INVALID_VALUE,
                          "cuMemHostRegister", HasSubstr("bytesize is 0"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_register(buffer.data, 64, 0x100),
                          CUDA_ERROR_INVALID_VALUE, "cuMemHostRegister",
                          HasSubstr("unknown flags 0x100"));
  EXPECT_EQ(driver->host_registration_count(), 0U);
}

TEST(FakeHost, UnregisterOfUnregisteredMemoryIsNotRegisteredAndCounted) {
  auto driver = current_process();
  HostBuffer buffer(2 * page());
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_host_unregister(buffer.data), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
      "cuMemHostUnregister",
      HasSubstr("is not registered in this process (unregistered twice, or never "
                "registered)"));
  driver->mem_host_register(buffer.data + 100, 100, 0);
  // Another address of the same page is not the registration.
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_unregister(buffer.data),
                          CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "cuMemHostUnregister",
                          HasSubstr("is not registered in this process"));
  // An address inside the registration is an invalid value (as the real driver answers).
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_unregister(buffer.data + 150), CUDA_ERROR_INVALID_VALUE,
                          "cuMemHostUnregister", HasSubstr("lies inside the registration at "));
  driver->mem_host_unregister(buffer.data + 100);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_unregister(buffer.data + 100),
                          CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "cuMemHostUnregister",
                          HasSubstr("unregistered twice"));
  EXPECT_EQ(driver->invalid_frees(), 4U);
}

TEST(FakeHost, RegisteredWithDeviceMapHasAnAliasingDevicePointer) {
  auto driver = current_process();
  HostBuffer buffer(2 * page());
  unsigned char* start = buffer.data + 16;
  driver->mem_host_register(start, page(), CU_MEMHOSTREGISTER_DEVICEMAP);
  const CUdeviceptr device = driver->mem_host_get_device_pointer(start, 0);
  EXPECT_EQ(device, reinterpret_cast<CUdeviceptr>(start));
  driver->memset_d8(device + 1, 0x11, 2);
  EXPECT_EQ(start[0], 0);
  EXPECT_EQ(start[1], 0x11);
  EXPECT_EQ(start[2], 0x11);
  const AddressRange range = driver->mem_get_address_range(device + 7);
  EXPECT_EQ(range.base, device);
  EXPECT_EQ(range.size, page());
  driver->mem_host_unregister(start);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_get_device_pointer(start, 0), CUDA_ERROR_INVALID_VALUE,
                          "cuMemHostGetDevicePointer",
                          HasSubstr("registered with CU_MEMHOSTREGISTER_DEVICEMAP"));

  // Registered without the flag: no device pointer.
  driver->mem_host_register(start, page(), 0);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_host_get_device_pointer(start, 0), CUDA_ERROR_INVALID_VALUE,
                          "cuMemHostGetDevicePointer",
                          HasSubstr("is not in host memory allocated with"));
  driver->mem_host_unregister(start);
}

}  // namespace
}  // namespace emm::test
