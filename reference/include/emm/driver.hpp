// emm/driver.hpp — the one interface through which the EMM system reaches CUDA.
//
// Every CUDA driver call the EMM system (and a well-behaved plugin) makes goes through an
// emm::Driver, so the same code runs on:
//   * emm::CudaDriver   — the real driver, loaded at run time (cuda_driver.hpp);
//   * emm::FakeDriver   — a simulated device with fault injection (mocks/);
//   * emm::MockDriver   — GoogleMock over the same interface (mocks/).
// Plugins reach it through their context: `context()->driver()`.
//
// Semantics follow the CUDA driver API call named in each comment. Memory, stream, event,
// module and pool calls act in the calling thread's current context (as CUDA's do). A failing
// call throws emm::CudaDriverError carrying the CUresult and the CUDA name of the call.
//
// Thread-safety: every implementation is safe to call from many threads at once.
#pragma once

#include "emm/cuda_api.hpp"
#include "emm/memory_info.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace emm {

// Each entry point of emm::Driver, named after the CUDA call it stands for. Used for fault
// injection and call counting on the fake driver, and in error messages.
enum class DriverCall : int {
  cuInit,
  cuDriverGetVersion,
  cuDeviceGetCount,
  cuDeviceGetAttribute,
  cuDeviceGetName,
  cuDeviceCanAccessPeer,
  cuDevicePrimaryCtxRetain,
  cuDevicePrimaryCtxRelease,
  cuDevicePrimaryCtxReset,
  cuCtxGetCurrent,
  cuCtxSetCurrent,
  cuCtxGetDevice,
  cuCtxSynchronize,
  cuMemAlloc,
  cuMemFree,
  cuMemAllocManaged,
  cuMemHostAlloc,
  cuMemFreeHost,
  cuMemHostRegister,
  cuMemHostUnregister,
  cuMemHostGetDevicePointer,
  cuMemGetInfo,
  cuMemGetAddressRange,
  cuIpcGetMemHandle,
  cuIpcOpenMemHandle,
  cuIpcCloseMemHandle,
  cuMemcpyHtoD,
  cuMemcpyDtoH,
  cuMemcpyDtoD,
  cuMemsetD8,
  cuStreamCreate,
  cuStreamDestroy,
  cuStreamSynchronize,
  cuEventCreate,
  cuEventDestroy,
  cuEventRecord,
  cuEventSynchronize,
  cuModuleLoadData,
  cuModuleUnload,
  cuMemPoolCreate,
  cuMemPoolDestroy,
  cuMemPoolSetAttribute,
  cuMemPoolTrimTo,
  cuMemAllocFromPoolAsync,
  cuMemFreeAsync,
  kCount  // not a call
};

inline constexpr std::size_t kDriverCallCount = static_cast<std::size_t>(DriverCall::kCount);

// "cuMemAlloc" for DriverCall::cuMemAlloc.
std::string_view driver_call_name(DriverCall call) noexcept;

// [base, base + size): the whole allocation a device pointer falls in (cuMemGetAddressRange).
struct AddressRange {
  CUdeviceptr base = 0;
  std::size_t size = 0;
};

// PCI identity of a device: what IpcHandle::source_info carries (NBEP 7 get_device_identity).
struct DeviceIdentity {
  int pci_domain_id = 0;
  int pci_bus_id = 0;
  int pci_device_id = 0;
  friend bool operator==(const DeviceIdentity&, const DeviceIdentity&) = default;
};

class Driver {
 public:
  virtual ~Driver() = default;

  // A short name for reports: "cuda", "fake", "mock".
  virtual std::string backend_name() const = 0;

  // --- driver and devices ----------------------------------------------------------------
  virtual int driver_get_version() = 0;                              // cuDriverGetVersion
  virtual int device_get_count() = 0;                                // cuDeviceGetCount
  virtual int device_get_attribute(CUdevice_attribute attribute, int device) = 0;
  virtual std::string device_get_name(int device) = 0;               // cuDeviceGetName
  virtual bool device_can_access_peer(int device, int peer) = 0;     // cuDeviceCanAccessPeer

  // --- contexts ------------------------------------------------------------------------------
  virtual CUcontext primary_ctx_retain(int device) = 0;   // cuDevicePrimaryCtxRetain
  virtual void primary_ctx_release(int device) = 0;       // cuDevicePrimaryCtxRelease
  virtual void primary_ctx_reset(int device) = 0;         // cuDevicePrimaryCtxReset
  virtual CUcontext ctx_get_current() = 0;                // cuCtxGetCurrent (null if none)
  virtual void ctx_set_current(CUcontext context) = 0;    // cuCtxSetCurrent (null unsets)
  virtual int ctx_get_device() = 0;                       // cuCtxGetDevice
  virtual void ctx_synchronize() = 0;                     // cuCtxSynchronize

  // --- device memory -------------------------------------------------------------------------
  virtual CUdeviceptr mem_alloc(std::size_t bytesize) = 0;                       // cuMemAlloc
  virtual void mem_free(CUdeviceptr pointer) = 0;                                // cuMemFree
  virtual CUdeviceptr mem_alloc_managed(std::size_t bytesize, unsigned flags) = 0;
  virtual MemoryInfo mem_get_info() = 0;                                         // cuMemGetInfo
  virtual AddressRange mem_get_address_range(CUdeviceptr pointer) = 0;  // cuMemGetAddressRange

  // --- host memory ---------------------------------------------------------------------------
  virtual void* mem_host_alloc(std::size_t bytesize, unsigned flags) = 0;   // cuMemHostAlloc
  virtual void mem_free_host(void* pointer) = 0;                            // cuMemFreeHost
  virtual void mem_host_register(void* pointer, std::size_t bytesize,
                                 unsigned flags) = 0;                       // cuMemHostRegister
  virtual void mem_host_unregister(void* pointer) = 0;                      // cuMemHostUnregister
  virtual CUdeviceptr mem_host_get_device_pointer(void* pointer,
                                                  unsigned flags) = 0;  // cuMemHostGetDevicePointer

  // --- IPC -----------------------------------------------------------------------------------
  virtual CUipcMemHandle ipc_get_mem_handle(CUdeviceptr pointer) = 0;      // cuIpcGetMemHandle
  virtual CUdeviceptr ipc_open_mem_handle(const CUipcMemHandle& handle,
                                          unsigned flags) = 0;             // cuIpcOpenMemHandle
  virtual void ipc_close_mem_handle(CUdeviceptr pointer) = 0;              // cuIpcCloseMemHandle

  // --- copies (synchronous) ------------------------------------------------------------------
  virtual void memcpy_htod(CUdeviceptr dst, const void* src, std::size_t bytes) = 0;
  virtual void memcpy_dtoh(void* dst, CUdeviceptr src, std::size_t bytes) = 0;
  virtual void memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) = 0;
  virtual void memset_d8(CUdeviceptr dst, unsigned char value, std::size_t count) = 0;

  // --- streams, events, modules --------------------------------------------------------------
  virtual CUstream stream_create(unsigned flags) = 0;            // cuStreamCreate
  virtual void stream_destroy(CUstream stream) = 0;              // cuStreamDestroy
  virtual void stream_synchronize(CUstream stream) = 0;          // cuStreamSynchronize
  virtual CUevent event_create(unsigned flags) = 0;              // cuEventCreate
  virtual void event_destroy(CUevent event) = 0;                 // cuEventDestroy
  virtual void event_record(CUevent event, CUstream stream) = 0; // cuEventRecord
  virtual void event_synchronize(CUevent event) = 0;             // cuEventSynchronize
  virtual CUmodule module_load_data(const void* image) = 0;      // cuModuleLoadData
  virtual void module_unload(CUmodule module) = 0;               // cuModuleUnload

  // --- stream-ordered allocator (for plugins such as examples/stream_ordered) ----------------
  virtual CUmemoryPool mem_pool_create(const CUmemPoolProps& props) = 0;     // cuMemPoolCreate
  virtual void mem_pool_destroy(CUmemoryPool pool) = 0;                      // cuMemPoolDestroy
  virtual void mem_pool_set_attribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                      void* value) = 0;  // cuMemPoolSetAttribute
  virtual void mem_pool_trim_to(CUmemoryPool pool, std::size_t min_bytes_to_keep) = 0;
  virtual CUdeviceptr mem_alloc_from_pool_async(std::size_t bytesize, CUmemoryPool pool,
                                                CUstream stream) = 0;  // cuMemAllocFromPoolAsync
  virtual void mem_free_async(CUdeviceptr pointer, CUstream stream) = 0;  // cuMemFreeAsync

  // --- conveniences built on the calls above (not virtual) -----------------------------------
  // PCI identity of `device` from three cuDeviceGetAttribute calls.
  DeviceIdentity device_identity(int device);
  // CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY != 0.
  bool can_map_host_memory(int device);
};

}  // namespace emm
