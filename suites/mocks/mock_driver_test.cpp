// MockDriver: delegation to the fake, and StrictMock use through allow_all_except.
#include "emm/mocks/mock_driver.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <vector>

#include "fake_test_support.hpp"

namespace emm::test {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::NiceMock;
using ::testing::Return;
using ::testing::StrictMock;

// Every entry point of emm::Driver, called once, as a plugin or the host might.
void call_every_entry_point(Driver& driver) {
  driver.implementation_name();
  driver.driver_get_version();
  driver.device_get_count();
  driver.device_get_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0);
  driver.device_get_name(0);
  driver.device_can_access_peer(0, 0);
  CUcontext context = driver.primary_ctx_retain(0);
  driver.ctx_set_current(context);
  driver.ctx_get_current();
  driver.ctx_get_device();
  driver.ctx_synchronize();
  const CUdeviceptr p = driver.mem_alloc(4096);
  driver.mem_get_info();
  driver.mem_get_address_range(p + 1);
  driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p + 1);
  std::vector<unsigned char> bytes(4096, 1);
  driver.memcpy_htod(p, bytes.data(), bytes.size());
  driver.memcpy_dtoh(bytes.data(), p, bytes.size());
  driver.memset_d8(p, 2, 16);
  const CUdeviceptr managed = driver.mem_alloc_managed(64, CU_MEM_ATTACH_GLOBAL);
  driver.memcpy_dtod(managed, p, 64);
  driver.mem_free(managed);
  const CUipcMemHandle handle = driver.ipc_get_mem_handle(p);
  try {
    driver.ipc_open_mem_handle(handle, 0);  // exporting process: an error, but a call
  } catch (const CudaDriverError&) {
  }
  try {
    driver.ipc_close_mem_handle(p);
  } catch (const CudaDriverError&) {
  }
  driver.mem_free(p);
  void* host = driver.mem_host_alloc(4096, CU_MEMHOSTALLOC_DEVICEMAP);
  driver.mem_host_get_device_pointer(host, 0);
  driver.mem_host_get_flags(host);
  driver.mem_free_host(host);
  driver.mem_host_register(bytes.data(), 64, 0);
  driver.mem_host_unregister(bytes.data());
  CUstream stream = driver.stream_create(0);
  driver.stream_synchronize(stream);
  CUevent event = driver.event_create(0);
  driver.event_record(event, stream);
  driver.event_synchronize(event);
  driver.event_destroy(event);
  CUmodule module = driver.module_load_data("image");
  driver.module_unload(module);
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = driver.mem_pool_create(props);
  std::uint64_t threshold = 0;
  driver.mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  const CUdeviceptr pooled = driver.mem_alloc_from_pool_async(64, pool, stream);
  driver.mem_free_async(pooled, stream);
  driver.mem_pool_trim_to(pool, 0);
  driver.mem_pool_destroy(pool);
  driver.stream_destroy(stream);
  driver.primary_ctx_reset(0);
  driver.primary_ctx_release(0);
}

TEST(MockDriver, DelegatesEveryCallToTheFakeByDefault) {
  auto mock = std::make_shared<NiceMock<MockDriver>>();
  call_every_entry_point(*mock);
  FakeDriver& fake = mock->fake();
  for (std::size_t i = 1; i < kDriverCallCount; ++i) {  // cuInit is no method
    const auto call = static_cast<DriverCall>(i);
    EXPECT_GE(fake.call_count(call), 1U) << driver_call_name(call) << " did not reach the fake";
  }
  EXPECT_EQ(fake.invalid_frees(), 1U);  // the deliberate close of a non-mapping above
  EXPECT_TRUE(fake.live_allocations().empty());
  EXPECT_EQ(fake.host_allocation_count(), 0U);
}

TEST(MockDriver, ImplementationNameIsMock) {
  NiceMock<MockDriver> mock;
  EXPECT_EQ(mock.implementation_name(), "mock");
  EXPECT_EQ(mock.fake().implementation_name(), "fake");
}

TEST(MockDriver, DelegatesToTheGivenFake) {
  FakeSystemConfig config;
  config.devices.resize(2);
  auto fake = std::make_shared<FakeDriver>(config);
  NiceMock<MockDriver> mock(fake);
  EXPECT_EQ(mock.shared_fake(), fake);
  EXPECT_EQ(mock.device_get_count(), 2);
  EXPECT_EQ(mock.device_identity(1), (DeviceIdentity{0, 2, 0}));
  EXPECT_TRUE(mock.can_map_host_memory(0));
}

TEST(MockDriver, FakeErrorsPassThroughUnchanged) {
  NiceMock<MockDriver> mock;
  EMM_EXPECT_DRIVER_ERROR(mock.mem_alloc(16), CUDA_ERROR_INVALID_CONTEXT, "cuMemAlloc",
                          HasSubstr("no CUDA context is current on this thread"));
  mock.fake().fail_call(DriverCall::cuDeviceGetCount, CUDA_ERROR_NO_DEVICE);
  EMM_EXPECT_DRIVER_ERROR(mock.device_get_count(), CUDA_ERROR_NO_DEVICE, "cuDeviceGetCount",
                          HasSubstr("failure injected by FakeDriver::fail_call"));
}

TEST(MockDriver, ExpectationsOverrideTheDefault) {
  NiceMock<MockDriver> mock;
  EXPECT_CALL(mock, mem_get_info()).WillOnce(Return(MemoryInfo{1, 2}));
  EXPECT_CALL(mock, device_get_attribute(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 0))
      .WillOnce(Return(0));
  EXPECT_EQ(mock.mem_get_info(), (MemoryInfo{1, 2}));
  EXPECT_FALSE(mock.can_map_host_memory(0));
  EXPECT_EQ(mock.fake().call_count(DriverCall::cuMemGetInfo), 0U);
}

TEST(MockDriver, StrictMockWithAllowAllExceptNothingAcceptsEveryCall) {
  auto mock = std::make_shared<StrictMock<MockDriver>>();
  mock->allow_all_except({});
  call_every_entry_point(*mock);  // any uninteresting call would fail this test
  EXPECT_TRUE(mock->fake().live_allocations().empty());
}

TEST(MockDriver, StrictMockFlagsTheExcludedCalls) {
  auto mock = std::make_shared<StrictMock<MockDriver>>();
  mock->allow_all_except({DriverCall::cuMemAlloc, DriverCall::cuMemFree});
  EXPECT_CALL(*mock, mem_alloc(_)).Times(0);
  EXPECT_CALL(*mock, mem_free(_)).Times(0);
  // Everything else goes through, to the fake.
  mock->ctx_set_current(mock->primary_ctx_retain(0));
  void* host = mock->mem_host_alloc(64, 0);
  mock->mem_free_host(host);
  EXPECT_EQ(mock->fake().call_count(DriverCall::cuMemHostAlloc), 1U);
  // A cuMemAlloc is caught.
  EXPECT_NONFATAL_FAILURE(
      {
        try {
          mock->mem_alloc(16);
        } catch (const CudaDriverError&) {
        }
      },
      "mem_alloc");
}

TEST(MockDriver, StrictMockWithoutExpectationsRejectsCalls) {
  StrictMock<MockDriver> mock;
  EXPECT_NONFATAL_FAILURE(mock.driver_get_version(), "Uninteresting mock function call");
}

}  // namespace
}  // namespace emm::test
