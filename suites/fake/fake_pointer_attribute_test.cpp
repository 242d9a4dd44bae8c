// FakeDriver cuPointerGetAttribute: what it answers for device, pool, managed, IPC-mapped and
// page-locked host memory on every device, and what it refuses (docs/fake-vs-gpu.md lists the
// GPU tests that pin the real driver's answers down).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "emm/pointer_attribute.hpp"
#include "fake_test_support.hpp"

namespace emm::test {
namespace {

using ::testing::HasSubstr;

std::size_t page() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

FakeSystemConfig two_devices() {
  FakeSystemConfig config;
  config.devices.resize(2);
  return config;
}

CUdeviceptr address_of(const void* pointer) { return reinterpret_cast<CUdeviceptr>(pointer); }

constexpr const char* kNotCuda = "CUDA did not allocate, map or register that address";

TEST(FakePointerAttribute, DeviceAllocationsOnEveryDevice) {
  auto driver = current_process(two_devices());
  const CUcontext context0 = driver->ctx_get_current();
  const CUdeviceptr on0 = driver->mem_alloc(1000);
  driver->ctx_set_current(driver->primary_ctx_retain(1));
  const CUdeviceptr on1 = driver->mem_alloc(3000);
  driver->ctx_set_current(context0);  // device 1's allocation is still answered for
  for (const auto& [base, size, device] :
       {std::tuple{on0, std::size_t{1000}, 0}, std::tuple{on1, std::size_t{3000}, 1}}) {
    SCOPED_TRACE("device " + std::to_string(device));
    const CUdeviceptr interior = base + size - 1;
    EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, interior),
              std::uint64_t{CU_MEMORYTYPE_DEVICE});
    EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, interior),
              interior);
    EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, interior), 0U);
    EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, interior),
              static_cast<std::uint64_t>(device));
    EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, interior), base);
    EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, interior), size);
    EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MAPPED, interior), 1U);
    EMM_EXPECT_DRIVER_ERROR(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_HOST_POINTER, base),
                            CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute",
                            HasSubstr("CU_POINTER_ATTRIBUTE_HOST_POINTER of 0x"));
    EMM_EXPECT_DRIVER_ERROR(
        driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, base + size),
        CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute", HasSubstr(kNotCuda));
  }
  driver->mem_free(on0);
  driver->mem_free(on1);
  EXPECT_EQ(driver->invalid_frees(), 0U) << "a refused query is no invalid free";
}

TEST(FakePointerAttribute, PoolAndManagedMemory) {
  auto driver = current_process();
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  const CUmemoryPool pool = driver->mem_pool_create(props);
  const CUdeviceptr pooled = driver->mem_alloc_from_pool_async(700, pool, nullptr);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pooled + 1),
            std::uint64_t{CU_MEMORYTYPE_DEVICE});
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, pooled), 0U);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, pooled + 1), 700U);

  const CUdeviceptr managed = driver->mem_alloc_managed(300, CU_MEM_ATTACH_GLOBAL);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, managed),
            std::uint64_t{CU_MEMORYTYPE_DEVICE});
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, managed + 299), 1U);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_HOST_POINTER, managed + 3),
            managed + 3)
      << "managed memory has a host address: its own";
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, managed + 3),
            managed);
  driver->mem_free(managed);
  driver->mem_free_async(pooled, nullptr);
  driver->mem_pool_destroy(pool);
}

TEST(FakePointerAttribute, PageLockedHostMemoryIsHostMemoryAtItsOwnAddress) {
  auto driver = current_process(two_devices());
  driver->ctx_set_current(driver->primary_ctx_retain(1));  // made while device 1 is current
  // No CU_MEMHOSTALLOC_DEVICEMAP: with unified addressing the device may use it all the same.
  auto* host = static_cast<unsigned char*>(driver->mem_host_alloc(100, 0));
  const CUdeviceptr at = address_of(host + 40);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, at),
            std::uint64_t{CU_MEMORYTYPE_HOST});
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, at), at);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_HOST_POINTER, at), at);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, at), 0U);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, at), 1U);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, at),
            address_of(host));
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, at), 100U);
  // The rest of the block's page was not asked for.
  EMM_EXPECT_DRIVER_ERROR(
      driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address_of(host + 100)),
      CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute", HasSubstr(kNotCuda));
  driver->mem_free_host(host);
}

TEST(FakePointerAttribute, ARegistrationAnswersForExactlyItsRegisteredBytes) {
  auto driver = current_process();
  std::unique_ptr<unsigned char, decltype(&std::free)> memory(
      static_cast<unsigned char*>(std::aligned_alloc(page(), page())), &std::free);
  unsigned char* const bytes = memory.get();
  driver->mem_host_register(bytes + 100, 200, 0);
  const CUdeviceptr inside = address_of(bytes + 299);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, inside),
            std::uint64_t{CU_MEMORYTYPE_HOST});
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, inside), inside);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_HOST_POINTER, inside), inside);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, inside),
            address_of(bytes + 100));
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, inside), 200U);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, inside), 0U);
  // Bytes of the same page outside the registration: the fake keeps exact bytes.
  for (unsigned char* outside : {bytes + 99, bytes + 300}) {
    EMM_EXPECT_DRIVER_ERROR(
        driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MAPPED, address_of(outside)),
        CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute", HasSubstr(kNotCuda));
  }
  driver->mem_host_unregister(bytes + 100);
  EMM_EXPECT_DRIVER_ERROR(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MAPPED, inside),
                          CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute", HasSubstr(kNotCuda));
}

TEST(FakePointerAttribute, AnIpcMappingIsDeviceMemoryOfItsBlocksDevice) {
  FakeSystemConfig config = two_devices();
  config.peer_access = true;
  auto exporter = make_current(std::make_shared<FakeDriver>(config), 1);
  auto importer = make_current(exporter->spawn_process(), 0);
  const CUdeviceptr p = exporter->mem_alloc(5000);
  const CUdeviceptr mapped = importer->ipc_open_mem_handle(exporter->ipc_get_mem_handle(p), 0);
  EXPECT_EQ(importer->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, mapped + 10),
            std::uint64_t{CU_MEMORYTYPE_DEVICE});
  EXPECT_EQ(importer->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, mapped + 10), 1U);
  EXPECT_EQ(importer->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, mapped + 10),
            mapped);
  EXPECT_EQ(importer->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, mapped + 10), 5000U);
  // The exporter's address means nothing in the importer.
  if (p != mapped) {
    EMM_EXPECT_DRIVER_ERROR(importer->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MAPPED, p),
                            CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute", HasSubstr(kNotCuda));
  }
  importer->ipc_close_mem_handle(mapped);
  exporter->mem_free(p);
}

TEST(FakePointerAttribute, PageableAndFreedMemoryIsInvalidValue) {
  auto driver = current_process();
  int on_the_stack = 0;
  EMM_EXPECT_DRIVER_ERROR(
      driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address_of(&on_the_stack)),
      CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute",
      HasSubstr(std::string("CU_POINTER_ATTRIBUTE_MEMORY_TYPE of 0x")));
  EMM_EXPECT_DRIVER_ERROR(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MAPPED, 0),
                          CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute", HasSubstr(kNotCuda));
  const CUdeviceptr p = driver->mem_alloc(64);
  driver->mem_free(p);
  EMM_EXPECT_DRIVER_ERROR(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p),
                          CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute", HasSubstr(kNotCuda));
}

TEST(FakePointerAttribute, MemoryOfADestroyedContextIsInvalidValue) {
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc(64);
  driver->primary_ctx_release(0);
  EMM_EXPECT_DRIVER_ERROR(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
                          CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute",
                          HasSubstr("freed with this process's primary context of device 0"));
}

TEST(FakePointerAttribute, OnlyTheDevicePointerNeedsACurrentContext) {
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc(64);
  driver->ctx_set_current(nullptr);
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
            std::uint64_t{CU_MEMORYTYPE_DEVICE});
  EXPECT_EQ(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p), p);
  EMM_EXPECT_DRIVER_ERROR(driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p),
                          CUDA_ERROR_INVALID_CONTEXT, "cuPointerGetAttribute",
                          HasSubstr("no CUDA context is current"));
  driver->mem_free(p);
}

TEST(FakePointerAttribute, AnAttributeOutsideTheTableIsRefusedBeforeTheCall) {
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc(64);
  auto error = EMM_EXPECT_THROW(
      InvalidArgumentError, driver->pointer_get_attribute(CU_POINTER_ATTRIBUTE_CONTEXT, p),
      "FakeDriver::pointer_get_attribute: attribute 1 is not one the kit reads; ask for one of "
      "CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, "
      "CU_POINTER_ATTRIBUTE_HOST_POINTER, CU_POINTER_ATTRIBUTE_IS_MANAGED, "
      "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, "
      "CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_MAPPED");
  EXPECT_TRUE(error.has_value());
  EXPECT_EQ(driver->call_count(DriverCall::cuPointerGetAttribute), 0U);
  driver->mem_free(p);
}

}  // namespace
}  // namespace emm::test
