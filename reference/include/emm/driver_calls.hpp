// emm/driver_calls.hpp — the one list of the CUDA driver entry points the kit uses.
//
// Everything that names a driver entry point is generated from EMM_DRIVER_ENTRY_POINTS: the
// emm::DriverCall enum and driver_call_name() (driver.hpp), the pure virtual methods of
// emm::Driver, CudaDriver's table of resolved pointers, its ABI checks and its
// cuGetProcAddress loop (cuda_driver.cpp), the method declarations of CudaDriver, FakeDriver
// and MockDriver, and the GPU tests' stub driver library. Only the definitions are written by
// hand.
//
//   #define EMM_NAME(cuda_name, abi_version, ...) #cuda_name,
//   const char* names[] = {EMM_DRIVER_CALLS(EMM_NAME)};        // every entry point
//   class MyDriver : public emm::Driver {
//     EMM_DRIVER_METHODS(EMM_DRIVER_DECLARE_OVERRIDE)          // every Driver method
//   };
//
// Columns of a row:
//   cuda_name    the base name of the CUDA call, as the CUDA documentation spells it and as
//                cuGetProcAddress is asked for it (cuMemAlloc, never cuMemAlloc_v2). It is also
//                the DriverCall enumerator. Stringize it or paste it (#, ##) to get the base
//                name; used as a plain identifier, cuda.h's macros turn it into the versioned
//                prototype (cuMemAlloc -> cuMemAlloc_v2).
//   abi_version  the CUDA version (1000 * major + 10 * minor) whose ABI of the call CudaDriver
//                uses: cudaTypedefs.h's PFN_<cuda_name>_v<abi_version>, the newest revision
//                <= 12.0 (CudaDriver pins cuGetProcAddress at 12.0; cuda_driver.cpp says why).
//                It is also the oldest driver that has the call in that form.
//   return_type, method, parameters
//                the emm::Driver method that stands for the call:
//                `return_type method parameters`, e.g. `CUdeviceptr mem_alloc(std::size_t
//                bytesize)`. Rows of kind INIT have none: CudaDriver::load() calls them itself.
//
// The two row kinds: INIT(cuda_name, abi_version) is an entry point that is resolved and has a
// DriverCall and a name but is no Driver method (cuInit); CALL(cuda_name, abi_version,
// return_type, method, parameters) is one Driver method. Each method acts as the CUDA call
// named in its row (memory, stream, event, module and pool calls in the calling thread's
// current context).
//
// To add an entry point: add its CALL row to the section it belongs to, then define
// CudaDriver::method (reference/src/cuda_driver.cpp), FakeDriver::method (fake/src/, in the file
// of its concern) and stub_<cuda_name> (suites/gpu/stub_cuda_driver.cpp). The build fails until
// all three exist (the stub's at compile time, with the ABI of the row; the others at link
// time). MockDriver needs nothing: its MOCK_METHOD, its delegation to the fake and
// allow_all_except() come from the list. Rows keep their order: the DriverCall values follow
// it, and reports list calls in that order.
//
// Macros only: no state, nothing to own or lock.
#pragma once

// clang-format off
#define EMM_DRIVER_ENTRY_POINTS(INIT, CALL)                                                       \
  /* initialisation */                                                                            \
  INIT(cuInit, 2000)                                                                              \
  /* driver and devices */                                                                        \
  CALL(cuDriverGetVersion, 2020, int, driver_get_version, ())                                     \
  CALL(cuDeviceGetCount, 2000, int, device_get_count, ())                                         \
  CALL(cuDeviceGetAttribute, 2000, int, device_get_attribute,                                     \
       (CUdevice_attribute attribute, int device))                                                \
  CALL(cuDeviceGetName, 2000, std::string, device_get_name, (int device))                         \
  CALL(cuDeviceCanAccessPeer, 4000, bool, device_can_access_peer, (int device, int peer))         \
  /* contexts: ctx_get_current() is null when none is current; ctx_set_current(nullptr)       */  \
  /* makes none current                                                                       */  \
  CALL(cuDevicePrimaryCtxRetain, 7000, CUcontext, primary_ctx_retain, (int device))               \
  CALL(cuDevicePrimaryCtxRelease, 11000, void, primary_ctx_release, (int device))                 \
  CALL(cuDevicePrimaryCtxReset, 11000, void, primary_ctx_reset, (int device))                     \
  CALL(cuCtxGetCurrent, 4000, CUcontext, ctx_get_current, ())                                     \
  CALL(cuCtxSetCurrent, 4000, void, ctx_set_current, (CUcontext context))                         \
  CALL(cuCtxGetDevice, 2000, int, ctx_get_device, ())                                             \
  CALL(cuCtxSynchronize, 2000, void, ctx_synchronize, ())                                         \
  /* device memory, host memory, and the queries about them                                  */  \
  CALL(cuMemAlloc, 3020, CUdeviceptr, mem_alloc, (std::size_t bytesize))                          \
  CALL(cuMemFree, 3020, void, mem_free, (CUdeviceptr pointer))                                    \
  CALL(cuMemAllocManaged, 6000, CUdeviceptr, mem_alloc_managed,                                   \
       (std::size_t bytesize, unsigned flags))                                                    \
  CALL(cuMemHostAlloc, 2020, void*, mem_host_alloc, (std::size_t bytesize, unsigned flags))       \
  CALL(cuMemFreeHost, 2000, void, mem_free_host, (void* pointer))                                 \
  CALL(cuMemHostRegister, 6050, void, mem_host_register,                                          \
       (void* pointer, std::size_t bytesize, unsigned flags))                                     \
  CALL(cuMemHostUnregister, 4000, void, mem_host_unregister, (void* pointer))                     \
  CALL(cuMemHostGetDevicePointer, 3020, CUdeviceptr, mem_host_get_device_pointer,                 \
       (void* pointer, unsigned flags))                                                           \
  CALL(cuMemHostGetFlags, 2030, unsigned, mem_host_get_flags, (void* pointer))                    \
  CALL(cuMemGetInfo, 3020, MemoryInfo, mem_get_info, ())                                          \
  CALL(cuMemGetAddressRange, 3020, AddressRange, mem_get_address_range, (CUdeviceptr pointer))    \
  /* pointer_get_attribute answers the attributes of emm/pointer_attribute.hpp, each widened  */  \
  /* to 64 bits; any other attribute throws emm::InvalidArgumentError                         */  \
  CALL(cuPointerGetAttribute, 4000, std::uint64_t, pointer_get_attribute,                         \
       (CUpointer_attribute attribute, CUdeviceptr pointer))                                      \
  /* IPC                                                                                      */  \
  CALL(cuIpcGetMemHandle, 4010, CUipcMemHandle, ipc_get_mem_handle, (CUdeviceptr pointer))        \
  CALL(cuIpcOpenMemHandle, 11000, CUdeviceptr, ipc_open_mem_handle,                               \
       (const CUipcMemHandle& handle, unsigned flags))                                            \
  CALL(cuIpcCloseMemHandle, 4010, void, ipc_close_mem_handle, (CUdeviceptr pointer))              \
  /* copies and memset (synchronous)                                                          */  \
  CALL(cuMemcpyHtoD, 3020, void, memcpy_htod,                                                     \
       (CUdeviceptr dst, const void* src, std::size_t bytes))                                     \
  CALL(cuMemcpyDtoH, 3020, void, memcpy_dtoh, (void* dst, CUdeviceptr src, std::size_t bytes))    \
  CALL(cuMemcpyDtoD, 3020, void, memcpy_dtod,                                                     \
       (CUdeviceptr dst, CUdeviceptr src, std::size_t bytes))                                     \
  CALL(cuMemsetD8, 3020, void, memset_d8,                                                         \
       (CUdeviceptr dst, unsigned char value, std::size_t count))                                 \
  /* streams, events, modules                                                                 */  \
  CALL(cuStreamCreate, 2000, CUstream, stream_create, (unsigned flags))                           \
  CALL(cuStreamDestroy, 4000, void, stream_destroy, (CUstream stream))                            \
  CALL(cuStreamSynchronize, 2000, void, stream_synchronize, (CUstream stream))                    \
  CALL(cuEventCreate, 2000, CUevent, event_create, (unsigned flags))                              \
  CALL(cuEventDestroy, 4000, void, event_destroy, (CUevent event))                                \
  CALL(cuEventRecord, 2000, void, event_record, (CUevent event, CUstream stream))                 \
  CALL(cuEventSynchronize, 2000, void, event_synchronize, (CUevent event))                        \
  CALL(cuModuleLoadData, 2000, CUmodule, module_load_data, (const void* image))                   \
  CALL(cuModuleUnload, 2000, void, module_unload, (CUmodule module))                              \
  /* stream-ordered allocator (for plugins such as examples/stream_ordered)                   */  \
  CALL(cuMemPoolCreate, 11020, CUmemoryPool, mem_pool_create, (const CUmemPoolProps& props))      \
  CALL(cuMemPoolDestroy, 11020, void, mem_pool_destroy, (CUmemoryPool pool))                      \
  CALL(cuMemPoolSetAttribute, 11020, void, mem_pool_set_attribute,                                \
       (CUmemoryPool pool, CUmemPool_attribute attribute, void* value))                           \
  CALL(cuMemPoolTrimTo, 11020, void, mem_pool_trim_to,                                            \
       (CUmemoryPool pool, std::size_t min_bytes_to_keep))                                        \
  CALL(cuMemAllocFromPoolAsync, 11020, CUdeviceptr, mem_alloc_from_pool_async,                    \
       (std::size_t bytesize, CUmemoryPool pool, CUstream stream))                                \
  CALL(cuMemFreeAsync, 11020, void, mem_free_async, (CUdeviceptr pointer, CUstream stream))
// clang-format on

// Every entry point, INIT and CALL rows alike: X(cuda_name, abi_version, ...), where `...` is
// empty for INIT rows and `return_type, method, parameters` for CALL rows.
#define EMM_DRIVER_CALLS(X) EMM_DRIVER_ENTRY_POINTS(X, X)

// The CALL rows only: X(cuda_name, abi_version, return_type, method, parameters).
#define EMM_DRIVER_METHODS(X) EMM_DRIVER_ENTRY_POINTS(EMM_DRIVER_DETAIL_SKIP_ROW, X)
#define EMM_DRIVER_DETAIL_SKIP_ROW(...)

// Declarations for EMM_DRIVER_METHODS: emm::Driver's pure virtual methods, and an
// implementation's overrides.
#define EMM_DRIVER_DECLARE_PURE(cuda_name, abi_version, return_type, method, parameters) \
  virtual return_type method parameters = 0;
#define EMM_DRIVER_DECLARE_OVERRIDE(cuda_name, abi_version, return_type, method, parameters) \
  return_type method parameters override;
