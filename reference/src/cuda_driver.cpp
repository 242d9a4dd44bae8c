// emm::CudaDriver: the real CUDA driver, dlopened at run time (spec §2.1).
//
// How the entry points are found:
//   1. dlopen("libcuda.so.1"): the driver's soname, which the NVIDIA driver installs (the
//      Toolkit's libcuda.so is a build-time stub and is never linked).
//   2. dlsym cuGetProcAddress_v2 (CUDA >= 12.0), falling back to cuGetProcAddress (11.3 .. 11.8).
//   3. cuGetProcAddress(base name, version) for every call. The version is pinned at 12.0 (or the
//      driver's own version when older, since asking for a newer one is CUDA_ERROR_INVALID_VALUE).
//      The driver then returns the ABI that CUDA version's cuda.h declared, which is what the
//      function-pointer types below are: decltype(&::cuMemAlloc) is the prototype of
//      cuMemAlloc_v2, because cuda.h #defines cuMemAlloc to it. Pinning the version (rather than
//      asking for the newest) keeps the pointers in step with those types when a later driver
//      adds another ABI revision of a call: CUDA 13.0 added cuCtxSynchronize and cuCtxGetDevice
//      revisions that take a context argument, which a request for 13000 would return, while
//      cuda.h still declares the argument-less ones. The static_asserts below check each type
//      against cudaTypedefs.h's PFN_<call>_v<version> for the newest version <= 12000.
//   4. cuInit(0), then at least one device.
// Streams are looked up with CU_GET_PROC_ADDRESS_LEGACY_STREAM: a null CUstream is the legacy
// default stream, as in a program built without --default-stream per-thread (and as in Numba).
#include "emm/cuda_driver.hpp"

#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "emm/errors.hpp"
#include "emm/pointer_attribute.hpp"

namespace emm {

// Every entry point of driver_calls.hpp. As a plain identifier, cuda.h's macros turn the row's
// base name into the versioned prototype (cuMemAlloc -> cuMemAlloc_v2), which is the ABI
// cuGetProcAddress returns for kRequestedCudaVersion.
struct CudaDriver::Api {
#define EMM_DECLARE_ENTRY_POINT(cuda_name, ...) decltype(&::cuda_name) cuda_name = nullptr;
  EMM_DRIVER_CALLS(EMM_DECLARE_ENTRY_POINT)
#undef EMM_DECLARE_ENTRY_POINT
};

// Each pointer type is the ABI cuGetProcAddress returns for kRequestedCudaVersion (12000):
// PFN_<call>_v<N> with the largest N <= 12000 (cudaTypedefs.h), N being the row's abi_version.
#define EMM_CHECK_ABI(cuda_name, abi_version, ...)                                            \
  static_assert(                                                                              \
      std::is_same_v<decltype(CudaDriver::Api::cuda_name), PFN_##cuda_name##_v##abi_version>, \
      #cuda_name " is not the CUDA " #abi_version " ABI");
EMM_DRIVER_CALLS(EMM_CHECK_ABI)
#undef EMM_CHECK_ABI

namespace {

// The CUDA version whose ABIs the pointers in Api have (see the top of this file).
constexpr int kRequestedCudaVersion = 12000;

// Every DriverUnavailableError message points at the way to carry on without a GPU.
constexpr const char* kUseFakeBackend = "Use the fake backend (--backend fake)";

using GetProcAddressV2 = CUresult (*)(const char* symbol, void** pfn, int cuda_version,
                                      cuuint64_t flags,
                                      CUdriverProcAddressQueryResult* symbol_status);
using GetProcAddressV1 = CUresult (*)(const char* symbol, void** pfn, int cuda_version,
                                      cuuint64_t flags);
using DriverGetVersion = CUresult (*)(int* version);

// The one place an object pointer from dlsym/cuGetProcAddress becomes a function pointer
// (conditionally-supported in ISO C++, guaranteed by POSIX).
template <typename Function>
Function function_cast(void* address) {
  return reinterpret_cast<Function>(address);
}

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string dl_error_text() {
  const char* text = dlerror();
  return text != nullptr ? text : "no reason given";
}

// Finds entry points through whichever cuGetProcAddress the driver has.
class EntryPointResolver {
 public:
  EntryPointResolver(std::string library, GetProcAddressV2 v2, GetProcAddressV1 v1, int version)
      : library_(std::move(library)), v2_(v2), v1_(v1), version_(version) {}

  template <typename Function>
  void resolve(const char* name, Function& slot) const {
    void* address = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    const CUresult result =
        v2_ != nullptr ? v2_(name, &address, version_, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status)
                       : v1_(name, &address, version_, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    if (result != CUDA_SUCCESS || address == nullptr) {
      std::string why = result != CUDA_SUCCESS ? std::string(cuda_result_name(result))
                        : status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            ? "version not sufficient"
                            : "symbol not found";
      throw DriverUnavailableError(library_ + " does not provide the CUDA driver entry point " +
                                   name + " for CUDA " + version_text(version_) +
                                   " (cuGetProcAddress: " + why + "). " + kUseFakeBackend +
                                   ", or install an NVIDIA driver for CUDA 12.0 or newer.");
    }
    slot = function_cast<Function>(address);
  }

 private:
  std::string library_;
  GetProcAddressV2 v2_;
  GetProcAddressV1 v1_;
  int version_;
};

std::string cuinit_hint(CUresult result) {
  switch (result) {
    case CUDA_ERROR_NO_DEVICE:
      return "the NVIDIA driver is installed but sees no GPU (check nvidia-smi and "
             "CUDA_VISIBLE_DEVICES)";
    case CUDA_ERROR_STUB_LIBRARY:
      return "this is the CUDA Toolkit's stub library, not the NVIDIA driver (remove the stubs "
             "directory from LD_LIBRARY_PATH)";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      return "the user-space driver library does not match the loaded kernel module (reboot or "
             "reinstall the NVIDIA driver)";
    default:
      return "the NVIDIA driver could not be initialised (check nvidia-smi and dmesg)";
  }
}

}  // namespace

std::shared_ptr<CudaDriver> CudaDriver::load(const char* library) {
  if (library == nullptr) library = "libcuda.so.1";
  const std::string name = library;
  // RTLD_LOCAL: the driver's symbols must not satisfy anyone else's undefined references (a
  // plugin wrapping a CUDA library links libcuda itself and gets the same library anyway).
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    throw DriverUnavailableError(name + " could not be loaded (" + dl_error_text() +
                                 "): no NVIDIA driver on this machine. " + kUseFakeBackend +
                                 ", or install the NVIDIA driver.");
  }

  auto v2 = function_cast<GetProcAddressV2>(dlsym(handle, "cuGetProcAddress_v2"));
  auto v1 = function_cast<GetProcAddressV1>(dlsym(handle, "cuGetProcAddress"));
  // cuDriverGetVersion is looked up directly because the version to ask cuGetProcAddress for
  // depends on it; it needs no cuInit and its ABI has never changed.
  auto bootstrap_version = function_cast<DriverGetVersion>(dlsym(handle, "cuDriverGetVersion"));
  if ((v2 == nullptr && v1 == nullptr) || bootstrap_version == nullptr) {
    // Nothing of it has been called: unloading is safe here, unlike after cuInit.
    dlclose(handle);
    throw DriverUnavailableError(name +
                                 " is not a usable CUDA driver: it has no cuGetProcAddress (an "
                                 "NVIDIA driver older than CUDA 11.3, or not the CUDA driver at "
                                 "all). " +
                                 kUseFakeBackend + ", or install a current NVIDIA driver.");
  }

  int driver_version = 0;
  if (const CUresult result = bootstrap_version(&driver_version); result != CUDA_SUCCESS) {
    throw DriverUnavailableError(name + ": cuDriverGetVersion failed with " +
                                 std::string(cuda_result_name(result)) + ". " + kUseFakeBackend +
                                 ", or reinstall the NVIDIA driver.");
  }

  auto api = std::make_unique<Api>();
  const EntryPointResolver resolver(name, v2, v1, std::min(kRequestedCudaVersion, driver_version));
#define EMM_RESOLVE_ENTRY_POINT(cuda_name, ...) resolver.resolve(#cuda_name, api->cuda_name);
  EMM_DRIVER_CALLS(EMM_RESOLVE_ENTRY_POINT)
#undef EMM_RESOLVE_ENTRY_POINT

  if (const CUresult result = api->cuInit(0); result != CUDA_SUCCESS) {
    throw DriverUnavailableError("cuInit(0) failed with " + std::string(cuda_result_name(result)) +
                                 " (" + name + ", CUDA driver " + version_text(driver_version) +
                                 "): " + cuinit_hint(result) + ". " + kUseFakeBackend + ".");
  }
  int devices = 0;
  if (const CUresult result = api->cuDeviceGetCount(&devices); result != CUDA_SUCCESS) {
    throw DriverUnavailableError("cuDeviceGetCount failed with " +
                                 std::string(cuda_result_name(result)) + " (" + name + "). " +
                                 kUseFakeBackend + ".");
  }
  if (devices == 0) {
    throw DriverUnavailableError("the CUDA driver (" + name + ", CUDA " +
                                 version_text(driver_version) +
                                 ") reports no CUDA device (check nvidia-smi and "
                                 "CUDA_VISIBLE_DEVICES). " +
                                 kUseFakeBackend + ".");
  }
  return std::shared_ptr<CudaDriver>(new CudaDriver(handle, std::move(api)));
}

std::string CudaDriver::unavailable_reason(const char* library) {
  try {
    load(library);
    return {};
  } catch (const DriverUnavailableError& error) {
    return error.what();
  }
}

const CudaDriverProbe& CudaDriver::probe() {
  // A function-local static: initialised once, by the first caller, while others wait.
  // Leaked on purpose: finalizers may run at static destruction and still need the driver.
  static const CudaDriverProbe* const result = [] {
    auto* found = new CudaDriverProbe;
    try {
      found->driver = load();
      if (found->driver->device_get_count() < 1) {
        found->driver.reset();
        found->reason = "the CUDA driver reports no device";
      }
    } catch (const std::exception& error) {
      found->driver.reset();
      found->reason = error.what();
      if (found->reason.empty()) found->reason = "the CUDA driver could not be loaded";
    }
    return found;
  }();
  return *result;
}

CudaDriver::CudaDriver(void* library, std::unique_ptr<Api> api)
    : library_(library), api_(std::move(api)) {}

// The library stays loaded (library_ is never dlclose'd): contexts, allocations, streams and
// modules made through this driver can outlive this object (a Context or a pointer's finalizer
// holding raw handles, CUDA's own worker threads, atexit handlers the driver registered at
// cuInit), and the NVIDIA driver does not support being unloaded from a live process. dlopen is
// reference-counted, so each load() only adds a count to one mapping.
CudaDriver::~CudaDriver() = default;

namespace {

[[noreturn]] void fail(CUresult result, DriverCall call, std::string detail = {}) {
  throw CudaDriverError(result, std::string(driver_call_name(call)), std::move(detail));
}

void check(CUresult result, DriverCall call) {
  if (result != CUDA_SUCCESS) fail(result, call);
}

std::string pointer_text(std::uintptr_t pointer) {
  std::array<char, 2 * sizeof pointer> digits{};
  const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), pointer, 16).ptr;
  return "0x" + std::string(digits.data(), end);
}

std::string pointer_text(const void* pointer) {
  return pointer_text(reinterpret_cast<std::uintptr_t>(pointer));
}

std::string bytes_text(std::size_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

int CudaDriver::driver_get_version() {
  int version = 0;
  check(api_->cuDriverGetVersion(&version), DriverCall::cuDriverGetVersion);
  return version;
}

int CudaDriver::device_get_count() {
  int count = 0;
  check(api_->cuDeviceGetCount(&count), DriverCall::cuDeviceGetCount);
  return count;
}

int CudaDriver::device_get_attribute(CUdevice_attribute attribute, int device) {
  int value = 0;
  if (const CUresult result = api_->cuDeviceGetAttribute(&value, attribute, device);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuDeviceGetAttribute,
         "attribute " + std::to_string(static_cast<int>(attribute)) + ", device " +
             std::to_string(device));
  }
  return value;
}

std::string CudaDriver::device_get_name(int device) {
  std::array<char, 256> name{};
  if (const CUresult result =
          api_->cuDeviceGetName(name.data(), static_cast<int>(name.size()), device);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuDeviceGetName, "device " + std::to_string(device));
  }
  return std::string(name.data());
}

bool CudaDriver::device_can_access_peer(int device, int peer) {
  int can_access = 0;
  if (const CUresult result = api_->cuDeviceCanAccessPeer(&can_access, device, peer);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuDeviceCanAccessPeer,
         "device " + std::to_string(device) + ", peer " + std::to_string(peer));
  }
  return can_access != 0;
}

CUcontext CudaDriver::primary_ctx_retain(int device) {
  CUcontext context = nullptr;
  if (const CUresult result = api_->cuDevicePrimaryCtxRetain(&context, device);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuDevicePrimaryCtxRetain, "device " + std::to_string(device));
  }
  return context;
}

void CudaDriver::primary_ctx_release(int device) {
  if (const CUresult result = api_->cuDevicePrimaryCtxRelease(device); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuDevicePrimaryCtxRelease, "device " + std::to_string(device));
  }
}

void CudaDriver::primary_ctx_reset(int device) {
  if (const CUresult result = api_->cuDevicePrimaryCtxReset(device); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuDevicePrimaryCtxReset, "device " + std::to_string(device));
  }
}

CUcontext CudaDriver::ctx_get_current() {
  CUcontext context = nullptr;
  check(api_->cuCtxGetCurrent(&context), DriverCall::cuCtxGetCurrent);
  return context;
}

void CudaDriver::ctx_set_current(CUcontext context) {
  check(api_->cuCtxSetCurrent(context), DriverCall::cuCtxSetCurrent);
}

int CudaDriver::ctx_get_device() {
  CUdevice device = 0;
  check(api_->cuCtxGetDevice(&device), DriverCall::cuCtxGetDevice);
  return device;
}

void CudaDriver::ctx_synchronize() {
  check(api_->cuCtxSynchronize(), DriverCall::cuCtxSynchronize);
}

CUdeviceptr CudaDriver::mem_alloc(std::size_t bytesize) {
  CUdeviceptr pointer = 0;
  if (const CUresult result = api_->cuMemAlloc(&pointer, bytesize); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemAlloc, bytes_text(bytesize));
  }
  return pointer;
}

void CudaDriver::mem_free(CUdeviceptr pointer) {
  if (const CUresult result = api_->cuMemFree(pointer); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemFree, "pointer " + pointer_text(pointer));
  }
}

CUdeviceptr CudaDriver::mem_alloc_managed(std::size_t bytesize, unsigned flags) {
  CUdeviceptr pointer = 0;
  if (const CUresult result = api_->cuMemAllocManaged(&pointer, bytesize, flags);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemAllocManaged, bytes_text(bytesize));
  }
  return pointer;
}

MemoryInfo CudaDriver::mem_get_info() {
  MemoryInfo info;
  check(api_->cuMemGetInfo(&info.free, &info.total), DriverCall::cuMemGetInfo);
  return info;
}

AddressRange CudaDriver::mem_get_address_range(CUdeviceptr pointer) {
  AddressRange range;
  if (const CUresult result = api_->cuMemGetAddressRange(&range.base, &range.size, pointer);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemGetAddressRange, "pointer " + pointer_text(pointer));
  }
  return range;
}

void* CudaDriver::mem_host_alloc(std::size_t bytesize, unsigned flags) {
  void* pointer = nullptr;
  if (const CUresult result = api_->cuMemHostAlloc(&pointer, bytesize, flags);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemHostAlloc,
         bytes_text(bytesize) + ", flags " + std::to_string(flags));
  }
  return pointer;
}

void CudaDriver::mem_free_host(void* pointer) {
  if (const CUresult result = api_->cuMemFreeHost(pointer); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemFreeHost, "pointer " + pointer_text(pointer));
  }
}

void CudaDriver::mem_host_register(void* pointer, std::size_t bytesize, unsigned flags) {
  if (const CUresult result = api_->cuMemHostRegister(pointer, bytesize, flags);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemHostRegister,
         "pointer " + pointer_text(pointer) + ", " + bytes_text(bytesize) + ", flags " +
             std::to_string(flags));
  }
}

void CudaDriver::mem_host_unregister(void* pointer) {
  if (const CUresult result = api_->cuMemHostUnregister(pointer); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemHostUnregister, "pointer " + pointer_text(pointer));
  }
}

CUdeviceptr CudaDriver::mem_host_get_device_pointer(void* pointer, unsigned flags) {
  CUdeviceptr device_pointer = 0;
  if (const CUresult result = api_->cuMemHostGetDevicePointer(&device_pointer, pointer, flags);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemHostGetDevicePointer, "pointer " + pointer_text(pointer));
  }
  return device_pointer;
}

unsigned CudaDriver::mem_host_get_flags(void* pointer) {
  unsigned flags = 0;
  if (const CUresult result = api_->cuMemHostGetFlags(&flags, pointer); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemHostGetFlags, "pointer " + pointer_text(pointer));
  }
  return flags;
}

std::uint64_t CudaDriver::pointer_get_attribute(CUpointer_attribute attribute,
                                                CUdeviceptr pointer) {
  const PointerAttribute& entry = supported_pointer_attribute(attribute, "CudaDriver");
  // Eight zeroed bytes hold every type of the table; the driver writes the leading ones.
  std::array<unsigned char, 8> data{};
  if (const CUresult result = api_->cuPointerGetAttribute(data.data(), attribute, pointer);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuPointerGetAttribute,
         std::string(entry.name) + " of pointer " + pointer_text(pointer));
  }
  switch (entry.type) {
    case PointerAttributeType::unsigned_int: {
      unsigned value = 0;
      std::memcpy(&value, data.data(), sizeof value);
      return value;
    }
    case PointerAttributeType::signed_int: {
      int value = 0;
      std::memcpy(&value, data.data(), sizeof value);
      return static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
    }
    case PointerAttributeType::boolean:
      // cuda.h says "a boolean" without a width: any byte the driver set counts.
      return std::any_of(data.begin(), data.end(), [](unsigned char byte) { return byte != 0; })
                 ? 1
                 : 0;
    case PointerAttributeType::address: {
      static_assert(sizeof(CUdeviceptr) == 8 && sizeof(void*) == 8);
      std::uint64_t value = 0;
      std::memcpy(&value, data.data(), sizeof value);
      return value;
    }
    case PointerAttributeType::size: {
      std::size_t value = 0;
      std::memcpy(&value, data.data(), sizeof value);
      return value;
    }
  }
  return 0;
}

CUipcMemHandle CudaDriver::ipc_get_mem_handle(CUdeviceptr pointer) {
  CUipcMemHandle handle{};
  if (const CUresult result = api_->cuIpcGetMemHandle(&handle, pointer); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuIpcGetMemHandle, "pointer " + pointer_text(pointer));
  }
  return handle;
}

CUdeviceptr CudaDriver::ipc_open_mem_handle(const CUipcMemHandle& handle, unsigned flags) {
  CUdeviceptr pointer = 0;
  check(api_->cuIpcOpenMemHandle(&pointer, handle, flags), DriverCall::cuIpcOpenMemHandle);
  return pointer;
}

void CudaDriver::ipc_close_mem_handle(CUdeviceptr pointer) {
  if (const CUresult result = api_->cuIpcCloseMemHandle(pointer); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuIpcCloseMemHandle, "pointer " + pointer_text(pointer));
  }
}

void CudaDriver::memcpy_htod(CUdeviceptr dst, const void* src, std::size_t bytes) {
  if (const CUresult result = api_->cuMemcpyHtoD(dst, src, bytes); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemcpyHtoD,
         bytes_text(bytes) + " from " + pointer_text(src) + " to " + pointer_text(dst));
  }
}

void CudaDriver::memcpy_dtoh(void* dst, CUdeviceptr src, std::size_t bytes) {
  if (const CUresult result = api_->cuMemcpyDtoH(dst, src, bytes); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemcpyDtoH,
         bytes_text(bytes) + " from " + pointer_text(src) + " to " + pointer_text(dst));
  }
}

void CudaDriver::memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) {
  if (const CUresult result = api_->cuMemcpyDtoD(dst, src, bytes); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemcpyDtoD,
         bytes_text(bytes) + " from " + pointer_text(src) + " to " + pointer_text(dst));
  }
}

void CudaDriver::memset_d8(CUdeviceptr dst, unsigned char value, std::size_t count) {
  if (const CUresult result = api_->cuMemsetD8(dst, value, count); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemsetD8, bytes_text(count) + " at " + pointer_text(dst));
  }
}

CUstream CudaDriver::stream_create(unsigned flags) {
  CUstream stream = nullptr;
  check(api_->cuStreamCreate(&stream, flags), DriverCall::cuStreamCreate);
  return stream;
}

void CudaDriver::stream_destroy(CUstream stream) {
  check(api_->cuStreamDestroy(stream), DriverCall::cuStreamDestroy);
}

void CudaDriver::stream_synchronize(CUstream stream) {
  check(api_->cuStreamSynchronize(stream), DriverCall::cuStreamSynchronize);
}

CUevent CudaDriver::event_create(unsigned flags) {
  CUevent event = nullptr;
  check(api_->cuEventCreate(&event, flags), DriverCall::cuEventCreate);
  return event;
}

void CudaDriver::event_destroy(CUevent event) {
  check(api_->cuEventDestroy(event), DriverCall::cuEventDestroy);
}

void CudaDriver::event_record(CUevent event, CUstream stream) {
  check(api_->cuEventRecord(event, stream), DriverCall::cuEventRecord);
}

void CudaDriver::event_synchronize(CUevent event) {
  check(api_->cuEventSynchronize(event), DriverCall::cuEventSynchronize);
}

CUmodule CudaDriver::module_load_data(const void* image) {
  CUmodule module = nullptr;
  check(api_->cuModuleLoadData(&module, image), DriverCall::cuModuleLoadData);
  return module;
}

void CudaDriver::module_unload(CUmodule module) {
  check(api_->cuModuleUnload(module), DriverCall::cuModuleUnload);
}

CUmemoryPool CudaDriver::mem_pool_create(const CUmemPoolProps& props) {
  CUmemoryPool pool = nullptr;
  check(api_->cuMemPoolCreate(&pool, &props), DriverCall::cuMemPoolCreate);
  return pool;
}

void CudaDriver::mem_pool_destroy(CUmemoryPool pool) {
  check(api_->cuMemPoolDestroy(pool), DriverCall::cuMemPoolDestroy);
}

void CudaDriver::mem_pool_set_attribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                        void* value) {
  if (const CUresult result = api_->cuMemPoolSetAttribute(pool, attribute, value);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemPoolSetAttribute,
         "attribute " + std::to_string(static_cast<int>(attribute)));
  }
}

void CudaDriver::mem_pool_trim_to(CUmemoryPool pool, std::size_t min_bytes_to_keep) {
  check(api_->cuMemPoolTrimTo(pool, min_bytes_to_keep), DriverCall::cuMemPoolTrimTo);
}

CUdeviceptr CudaDriver::mem_alloc_from_pool_async(std::size_t bytesize, CUmemoryPool pool,
                                                  CUstream stream) {
  CUdeviceptr pointer = 0;
  if (const CUresult result = api_->cuMemAllocFromPoolAsync(&pointer, bytesize, pool, stream);
      result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemAllocFromPoolAsync, bytes_text(bytesize));
  }
  return pointer;
}

void CudaDriver::mem_free_async(CUdeviceptr pointer, CUstream stream) {
  if (const CUresult result = api_->cuMemFreeAsync(pointer, stream); result != CUDA_SUCCESS) {
    fail(result, DriverCall::cuMemFreeAsync, "pointer " + pointer_text(pointer));
  }
}

}  // namespace emm
