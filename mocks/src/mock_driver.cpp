#include "emm/mocks/mock_driver.hpp"

#include <algorithm>
#include <utility>

#include "emm/errors.hpp"

namespace emm {

using ::testing::_;
using ::testing::AnyNumber;

MockDriver::MockDriver(std::shared_ptr<FakeDriver> fake)
    : fake_(fake ? std::move(fake)
                 : throw InvalidArgumentError("MockDriver needs a FakeDriver to delegate to, "
                                              "got null")) {
  // GoogleMock's "delegating calls to a fake" recipe: every call reaches the fake unless a test
  // says otherwise.
  FakeDriver* f = fake_.get();
  ON_CALL(*this, backend_name()).WillByDefault([] { return std::string("mock"); });
  ON_CALL(*this, driver_get_version()).WillByDefault([f] { return f->driver_get_version(); });
  ON_CALL(*this, device_get_count()).WillByDefault([f] { return f->device_get_count(); });
  ON_CALL(*this, device_get_attribute(_, _))
      .WillByDefault([f](CUdevice_attribute attribute, int device) {
        return f->device_get_attribute(attribute, device);
      });
  ON_CALL(*this, device_get_name(_)).WillByDefault([f](int device) {
    return f->device_get_name(device);
  });
  ON_CALL(*this, device_can_access_peer(_, _)).WillByDefault([f](int device, int peer) {
    return f->device_can_access_peer(device, peer);
  });
  ON_CALL(*this, primary_ctx_retain(_)).WillByDefault([f](int device) {
    return f->primary_ctx_retain(device);
  });
  ON_CALL(*this, primary_ctx_release(_)).WillByDefault([f](int device) {
    f->primary_ctx_release(device);
  });
  ON_CALL(*this, primary_ctx_reset(_)).WillByDefault([f](int device) {
    f->primary_ctx_reset(device);
  });
  ON_CALL(*this, ctx_get_current()).WillByDefault([f] { return f->ctx_get_current(); });
  ON_CALL(*this, ctx_set_current(_)).WillByDefault([f](CUcontext context) {
    f->ctx_set_current(context);
  });
  ON_CALL(*this, ctx_get_device()).WillByDefault([f] { return f->ctx_get_device(); });
  ON_CALL(*this, ctx_synchronize()).WillByDefault([f] { f->ctx_synchronize(); });
  ON_CALL(*this, mem_alloc(_)).WillByDefault([f](std::size_t bytesize) {
    return f->mem_alloc(bytesize);
  });
  ON_CALL(*this, mem_free(_)).WillByDefault([f](CUdeviceptr pointer) { f->mem_free(pointer); });
  ON_CALL(*this, mem_alloc_managed(_, _)).WillByDefault([f](std::size_t bytesize, unsigned flags) {
    return f->mem_alloc_managed(bytesize, flags);
  });
  ON_CALL(*this, mem_get_info()).WillByDefault([f] { return f->mem_get_info(); });
  ON_CALL(*this, mem_get_address_range(_)).WillByDefault([f](CUdeviceptr pointer) {
    return f->mem_get_address_range(pointer);
  });
  ON_CALL(*this, mem_host_alloc(_, _)).WillByDefault([f](std::size_t bytesize, unsigned flags) {
    return f->mem_host_alloc(bytesize, flags);
  });
  ON_CALL(*this, mem_free_host(_)).WillByDefault([f](void* pointer) { f->mem_free_host(pointer); });
  ON_CALL(*this, mem_host_register(_, _, _))
      .WillByDefault([f](void* pointer, std::size_t bytesize, unsigned flags) {
        f->mem_host_register(pointer, bytesize, flags);
      });
  ON_CALL(*this, mem_host_unregister(_)).WillByDefault([f](void* pointer) {
    f->mem_host_unregister(pointer);
  });
  ON_CALL(*this, mem_host_get_device_pointer(_, _))
      .WillByDefault([f](void* pointer, unsigned flags) {
        return f->mem_host_get_device_pointer(pointer, flags);
      });
  ON_CALL(*this, ipc_get_mem_handle(_)).WillByDefault([f](CUdeviceptr pointer) {
    return f->ipc_get_mem_handle(pointer);
  });
  ON_CALL(*this, ipc_open_mem_handle(_, _))
      .WillByDefault([f](const CUipcMemHandle& handle, unsigned flags) {
        return f->ipc_open_mem_handle(handle, flags);
      });
  ON_CALL(*this, ipc_close_mem_handle(_)).WillByDefault([f](CUdeviceptr pointer) {
    f->ipc_close_mem_handle(pointer);
  });
  ON_CALL(*this, memcpy_htod(_, _, _))
      .WillByDefault([f](CUdeviceptr dst, const void* src, std::size_t bytes) {
        f->memcpy_htod(dst, src, bytes);
      });
  ON_CALL(*this, memcpy_dtoh(_, _, _))
      .WillByDefault(
          [f](void* dst, CUdeviceptr src, std::size_t bytes) { f->memcpy_dtoh(dst, src, bytes); });
  ON_CALL(*this, memcpy_dtod(_, _, _))
      .WillByDefault([f](CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) {
        f->memcpy_dtod(dst, src, bytes);
      });
  ON_CALL(*this, memset_d8(_, _, _))
      .WillByDefault([f](CUdeviceptr dst, unsigned char value, std::size_t count) {
        f->memset_d8(dst, value, count);
      });
  ON_CALL(*this, stream_create(_)).WillByDefault([f](unsigned flags) {
    return f->stream_create(flags);
  });
  ON_CALL(*this, stream_destroy(_)).WillByDefault([f](CUstream stream) {
    f->stream_destroy(stream);
  });
  ON_CALL(*this, stream_synchronize(_)).WillByDefault([f](CUstream stream) {
    f->stream_synchronize(stream);
  });
  ON_CALL(*this, event_create(_)).WillByDefault([f](unsigned flags) {
    return f->event_create(flags);
  });
  ON_CALL(*this, event_destroy(_)).WillByDefault([f](CUevent event) { f->event_destroy(event); });
  ON_CALL(*this, event_record(_, _)).WillByDefault([f](CUevent event, CUstream stream) {
    f->event_record(event, stream);
  });
  ON_CALL(*this, event_synchronize(_)).WillByDefault([f](CUevent event) {
    f->event_synchronize(event);
  });
  ON_CALL(*this, module_load_data(_)).WillByDefault([f](const void* image) {
    return f->module_load_data(image);
  });
  ON_CALL(*this, module_unload(_)).WillByDefault([f](CUmodule module) {
    f->module_unload(module);
  });
  ON_CALL(*this, mem_pool_create(_)).WillByDefault([f](const CUmemPoolProps& props) {
    return f->mem_pool_create(props);
  });
  ON_CALL(*this, mem_pool_destroy(_)).WillByDefault([f](CUmemoryPool pool) {
    f->mem_pool_destroy(pool);
  });
  ON_CALL(*this, mem_pool_set_attribute(_, _, _))
      .WillByDefault([f](CUmemoryPool pool, CUmemPool_attribute attribute, void* value) {
        f->mem_pool_set_attribute(pool, attribute, value);
      });
  ON_CALL(*this, mem_pool_trim_to(_, _))
      .WillByDefault([f](CUmemoryPool pool, std::size_t min_bytes_to_keep) {
        f->mem_pool_trim_to(pool, min_bytes_to_keep);
      });
  ON_CALL(*this, mem_alloc_from_pool_async(_, _, _))
      .WillByDefault([f](std::size_t bytesize, CUmemoryPool pool, CUstream stream) {
        return f->mem_alloc_from_pool_async(bytesize, pool, stream);
      });
  ON_CALL(*this, mem_free_async(_, _)).WillByDefault([f](CUdeviceptr pointer, CUstream stream) {
    f->mem_free_async(pointer, stream);
  });
}

MockDriver::~MockDriver() = default;

void MockDriver::allow_all_except(std::initializer_list<DriverCall> calls) {
  auto allowed = [&calls](DriverCall call) {
    return std::find(calls.begin(), calls.end(), call) == calls.end();
  };
  // backend_name is no driver call: naming the backend in a report is always allowed.
  EXPECT_CALL(*this, backend_name()).Times(AnyNumber());
#define EMM_ALLOW(call, method)                    \
  if (allowed(DriverCall::call)) {                 \
    EXPECT_CALL(*this, method).Times(AnyNumber()); \
  }
  EMM_ALLOW(cuDriverGetVersion, driver_get_version())
  EMM_ALLOW(cuDeviceGetCount, device_get_count())
  EMM_ALLOW(cuDeviceGetAttribute, device_get_attribute(_, _))
  EMM_ALLOW(cuDeviceGetName, device_get_name(_))
  EMM_ALLOW(cuDeviceCanAccessPeer, device_can_access_peer(_, _))
  EMM_ALLOW(cuDevicePrimaryCtxRetain, primary_ctx_retain(_))
  EMM_ALLOW(cuDevicePrimaryCtxRelease, primary_ctx_release(_))
  EMM_ALLOW(cuDevicePrimaryCtxReset, primary_ctx_reset(_))
  EMM_ALLOW(cuCtxGetCurrent, ctx_get_current())
  EMM_ALLOW(cuCtxSetCurrent, ctx_set_current(_))
  EMM_ALLOW(cuCtxGetDevice, ctx_get_device())
  EMM_ALLOW(cuCtxSynchronize, ctx_synchronize())
  EMM_ALLOW(cuMemAlloc, mem_alloc(_))
  EMM_ALLOW(cuMemFree, mem_free(_))
  EMM_ALLOW(cuMemAllocManaged, mem_alloc_managed(_, _))
  EMM_ALLOW(cuMemHostAlloc, mem_host_alloc(_, _))
  EMM_ALLOW(cuMemFreeHost, mem_free_host(_))
  EMM_ALLOW(cuMemHostRegister, mem_host_register(_, _, _))
  EMM_ALLOW(cuMemHostUnregister, mem_host_unregister(_))
  EMM_ALLOW(cuMemHostGetDevicePointer, mem_host_get_device_pointer(_, _))
  EMM_ALLOW(cuMemGetInfo, mem_get_info())
  EMM_ALLOW(cuMemGetAddressRange, mem_get_address_range(_))
  EMM_ALLOW(cuIpcGetMemHandle, ipc_get_mem_handle(_))
  EMM_ALLOW(cuIpcOpenMemHandle, ipc_open_mem_handle(_, _))
  EMM_ALLOW(cuIpcCloseMemHandle, ipc_close_mem_handle(_))
  EMM_ALLOW(cuMemcpyHtoD, memcpy_htod(_, _, _))
  EMM_ALLOW(cuMemcpyDtoH, memcpy_dtoh(_, _, _))
  EMM_ALLOW(cuMemcpyDtoD, memcpy_dtod(_, _, _))
  EMM_ALLOW(cuMemsetD8, memset_d8(_, _, _))
  EMM_ALLOW(cuStreamCreate, stream_create(_))
  EMM_ALLOW(cuStreamDestroy, stream_destroy(_))
  EMM_ALLOW(cuStreamSynchronize, stream_synchronize(_))
  EMM_ALLOW(cuEventCreate, event_create(_))
  EMM_ALLOW(cuEventDestroy, event_destroy(_))
  EMM_ALLOW(cuEventRecord, event_record(_, _))
  EMM_ALLOW(cuEventSynchronize, event_synchronize(_))
  EMM_ALLOW(cuModuleLoadData, module_load_data(_))
  EMM_ALLOW(cuModuleUnload, module_unload(_))
  EMM_ALLOW(cuMemPoolCreate, mem_pool_create(_))
  EMM_ALLOW(cuMemPoolDestroy, mem_pool_destroy(_))
  EMM_ALLOW(cuMemPoolSetAttribute, mem_pool_set_attribute(_, _, _))
  EMM_ALLOW(cuMemPoolTrimTo, mem_pool_trim_to(_, _))
  EMM_ALLOW(cuMemAllocFromPoolAsync, mem_alloc_from_pool_async(_, _, _))
  EMM_ALLOW(cuMemFreeAsync, mem_free_async(_, _))
#undef EMM_ALLOW
}

}  // namespace emm
