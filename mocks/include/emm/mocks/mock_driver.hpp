// emm/mocks/mock_driver.hpp — MockDriver: GoogleMock over emm::Driver.
//
// Every method delegates to a FakeDriver by default, so expectations layer on working
// behaviour:
//
//   auto mock = std::make_shared<testing::StrictMock<emm::MockDriver>>();
//   mock->allow_all_except({emm::DriverCall::cuMemAlloc, emm::DriverCall::cuMemFree});
//   EXPECT_CALL(*mock, mem_alloc).Times(0);     // CTX-2
//   emm::Runtime runtime(mock);
//
// Thread-safety: as GoogleMock (expectations set before use; calls from many threads are fine).
#pragma once

#include <gmock/gmock.h>

#include <initializer_list>
#include <memory>

#include "emm/driver.hpp"
#include "emm/fake/fake_driver.hpp"

namespace emm {

class MockDriver : public Driver {
 public:
  // Delegates to `fake` (a new one-device FakeDriver by default).
  explicit MockDriver(std::shared_ptr<FakeDriver> fake = std::make_shared<FakeDriver>());
  ~MockDriver() override;

  FakeDriver& fake() const noexcept { return *fake_; }
  const std::shared_ptr<FakeDriver>& shared_fake() const noexcept { return fake_; }

  // For StrictMock: EXPECT_CALL(...).Times(AnyNumber()) on every entry point except `calls`.
  void allow_all_except(std::initializer_list<DriverCall> calls);

  MOCK_METHOD(std::string, backend_name, (), (const, override));
  MOCK_METHOD(int, driver_get_version, (), (override));
  MOCK_METHOD(int, device_get_count, (), (override));
  MOCK_METHOD(int, device_get_attribute, (CUdevice_attribute, int), (override));
  MOCK_METHOD(std::string, device_get_name, (int), (override));
  MOCK_METHOD(bool, device_can_access_peer, (int, int), (override));
  MOCK_METHOD(CUcontext, primary_ctx_retain, (int), (override));
  MOCK_METHOD(void, primary_ctx_release, (int), (override));
  MOCK_METHOD(void, primary_ctx_reset, (int), (override));
  MOCK_METHOD(CUcontext, ctx_get_current, (), (override));
  MOCK_METHOD(void, ctx_set_current, (CUcontext), (override));
  MOCK_METHOD(int, ctx_get_device, (), (override));
  MOCK_METHOD(void, ctx_synchronize, (), (override));
  MOCK_METHOD(CUdeviceptr, mem_alloc, (std::size_t), (override));
  MOCK_METHOD(void, mem_free, (CUdeviceptr), (override));
  MOCK_METHOD(CUdeviceptr, mem_alloc_managed, (std::size_t, unsigned), (override));
  MOCK_METHOD(MemoryInfo, mem_get_info, (), (override));
  MOCK_METHOD(AddressRange, mem_get_address_range, (CUdeviceptr), (override));
  MOCK_METHOD(void*, mem_host_alloc, (std::size_t, unsigned), (override));
  MOCK_METHOD(void, mem_free_host, (void*), (override));
  MOCK_METHOD(void, mem_host_register, (void*, std::size_t, unsigned), (override));
  MOCK_METHOD(void, mem_host_unregister, (void*), (override));
  MOCK_METHOD(CUdeviceptr, mem_host_get_device_pointer, (void*, unsigned), (override));
  MOCK_METHOD(CUipcMemHandle, ipc_get_mem_handle, (CUdeviceptr), (override));
  MOCK_METHOD(CUdeviceptr, ipc_open_mem_handle, (const CUipcMemHandle&, unsigned), (override));
  MOCK_METHOD(void, ipc_close_mem_handle, (CUdeviceptr), (override));
  MOCK_METHOD(void, memcpy_htod, (CUdeviceptr, const void*, std::size_t), (override));
  MOCK_METHOD(void, memcpy_dtoh, (void*, CUdeviceptr, std::size_t), (override));
  MOCK_METHOD(void, memcpy_dtod, (CUdeviceptr, CUdeviceptr, std::size_t), (override));
  MOCK_METHOD(void, memset_d8, (CUdeviceptr, unsigned char, std::size_t), (override));
  MOCK_METHOD(CUstream, stream_create, (unsigned), (override));
  MOCK_METHOD(void, stream_destroy, (CUstream), (override));
  MOCK_METHOD(void, stream_synchronize, (CUstream), (override));
  MOCK_METHOD(CUevent, event_create, (unsigned), (override));
  MOCK_METHOD(void, event_destroy, (CUevent), (override));
  MOCK_METHOD(void, event_record, (CUevent, CUstream), (override));
  MOCK_METHOD(void, event_synchronize, (CUevent), (override));
  MOCK_METHOD(CUmodule, module_load_data, (const void*), (override));
  MOCK_METHOD(void, module_unload, (CUmodule), (override));
  MOCK_METHOD(CUmemoryPool, mem_pool_create, (const CUmemPoolProps&), (override));
  MOCK_METHOD(void, mem_pool_destroy, (CUmemoryPool), (override));
  MOCK_METHOD(void, mem_pool_set_attribute, (CUmemoryPool, CUmemPool_attribute, void*), (override));
  MOCK_METHOD(void, mem_pool_trim_to, (CUmemoryPool, std::size_t), (override));
  MOCK_METHOD(CUdeviceptr, mem_alloc_from_pool_async, (std::size_t, CUmemoryPool, CUstream),
              (override));
  MOCK_METHOD(void, mem_free_async, (CUdeviceptr, CUstream), (override));

 private:
  std::shared_ptr<FakeDriver> fake_;
};

}  // namespace emm
