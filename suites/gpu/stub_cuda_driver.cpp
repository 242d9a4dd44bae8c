// A stand-in for libcuda.so.1 (see stub_cuda_driver.hpp): just enough of the driver API for
// CudaDriver's loader and wrappers to be exercised without a GPU.
#include "stub_cuda_driver.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string_view>
#include <type_traits>

#include "emm/driver_calls.hpp"

namespace {

// One stub per entry point of driver_calls.hpp, stub_<cuda_name>, with the ABI CudaDriver
// expects (cudaTypedefs.h's PFN_<cuda_name>_v<abi_version>). The definitions below must match.
#define EMM_STUB_DECLARE(cuda_name, abi_version, ...) \
  std::remove_pointer_t<PFN_##cuda_name##_v##abi_version> stub_##cuda_name;
EMM_DRIVER_CALLS(EMM_STUB_DECLARE)
#undef EMM_STUB_DECLARE

std::mutex g_mutex;
EmmStubConfig g_config;
EmmStubState g_state;
std::map<CUdeviceptr, std::size_t> g_allocations;  // base -> size

constexpr std::size_t kTotalMemory = std::size_t{4} << 30;
constexpr std::size_t kLargestAllocation = std::size_t{1} << 30;

// Distinct addresses to hand out as opaque handles.
struct Opaque {
  char byte;
};
Opaque g_context_object, g_stream_object, g_event_object, g_module_object, g_pool_object;
thread_local CUcontext t_current = nullptr;

CUcontext primary_context() { return reinterpret_cast<CUcontext>(&g_context_object); }

bool valid_device(CUdevice device) { return device >= 0 && device < g_config.device_count; }

// The allocation containing [pointer, pointer + bytes), or end().
std::map<CUdeviceptr, std::size_t>::iterator find_allocation(CUdeviceptr pointer,
                                                             std::size_t bytes = 1) {
  auto after = g_allocations.upper_bound(pointer);
  if (after == g_allocations.begin()) return g_allocations.end();
  auto found = std::prev(after);
  if (pointer + bytes > found->first + found->second) return g_allocations.end();
  return found;
}

CUresult stub_cuInit(unsigned) {
  std::lock_guard lock(g_mutex);
  ++g_state.init_calls;
  return static_cast<CUresult>(g_config.init_result);
}

CUresult stub_cuDriverGetVersion(int* version) {
  std::lock_guard lock(g_mutex);
  *version = g_config.driver_version;
  return CUDA_SUCCESS;
}

CUresult stub_cuDeviceGetCount(int* count) {
  std::lock_guard lock(g_mutex);
  *count = g_config.device_count;
  return CUDA_SUCCESS;
}

CUresult stub_cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *value = 0x41;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      *value = 3;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      *value = 1;
      break;
    default:
      *value = 0;
  }
  return CUDA_SUCCESS;
}

CUresult stub_cuDeviceGetName(char* name, int length, CUdevice device) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  constexpr std::string_view kName = "emm stub device";
  if (length <= static_cast<int>(kName.size())) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(name, kName.data(), kName.size());
  name[kName.size()] = '\0';
  return CUDA_SUCCESS;
}

CUresult stub_cuDeviceCanAccessPeer(int* can_access, CUdevice device, CUdevice peer) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device) || !valid_device(peer)) return CUDA_ERROR_INVALID_DEVICE;
  *can_access = device != peer ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult stub_cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  std::lock_guard lock(g_mutex);
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  *context = primary_context();
  return CUDA_SUCCESS;
}

CUresult stub_cuDevicePrimaryCtxRelease(CUdevice device) {
  std::lock_guard lock(g_mutex);
  return valid_device(device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult stub_cuDevicePrimaryCtxReset(CUdevice device) {
  return stub_cuDevicePrimaryCtxRelease(device);
}

CUresult stub_cuCtxGetCurrent(CUcontext* context) {
  *context = t_current;
  return CUDA_SUCCESS;
}

CUresult stub_cuCtxSetCurrent(CUcontext context) {
  if (context != nullptr && context != primary_context()) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = context;
  return CUDA_SUCCESS;
}

CUresult stub_cuCtxGetDevice(CUdevice* device) {
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult stub_cuCtxSynchronize() {
  return t_current != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult stub_cuMemAlloc(CUdeviceptr* pointer, std::size_t bytesize) {
  std::lock_guard lock(g_mutex);
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytesize > kLargestAllocation || g_state.live_bytes + bytesize > kTotalMemory) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* memory = std::aligned_alloc(256, (bytesize + 255) / 256 * 256);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  g_allocations.emplace(*pointer, bytesize);
  g_state.live_bytes += bytesize;
  return CUDA_SUCCESS;
}

CUresult stub_cuMemFree(CUdeviceptr pointer) {
  std::lock_guard lock(g_mutex);
  auto found = g_allocations.find(pointer);
  if (found == g_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  g_state.live_bytes -= found->second;
  std::free(reinterpret_cast<void*>(found->first));
  g_allocations.erase(found);
  return CUDA_SUCCESS;
}

CUresult stub_cuMemGetInfo(std::size_t* free, std::size_t* total) {
  std::lock_guard lock(g_mutex);
  *total = kTotalMemory;
  *free = kTotalMemory - g_state.live_bytes;
  return CUDA_SUCCESS;
}

CUresult stub_cuMemGetAddressRange(CUdeviceptr* base, std::size_t* size, CUdeviceptr pointer) {
  std::lock_guard lock(g_mutex);
  auto found = find_allocation(pointer);
  if (found == g_allocations.end()) return CUDA_ERROR_NOT_FOUND;
  if (base != nullptr) *base = found->first;
  if (size != nullptr) *size = found->second;
  return CUDA_SUCCESS;
}

// Writes exactly the C type cuda.h gives each attribute (a boolean as one byte), so that a
// CudaDriver reading the wrong width sees a wrong value.
CUresult stub_cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                    CUdeviceptr pointer) {
  std::lock_guard lock(g_mutex);
  ++g_state.pointer_attribute_calls;
  auto found = find_allocation(pointer);
  if (found == g_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  auto write = [data](auto value) { std::memcpy(data, &value, sizeof value); };
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      write(static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      write(pointer);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      write(false);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      write(true);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      write(int{0});
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      write(found->first);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      write(found->second);
      return CUDA_SUCCESS;
    default:  // the host pointer (device memory has none) and everything else
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult stub_cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr pointer) {
  std::lock_guard lock(g_mutex);
  auto found = find_allocation(pointer);
  if (found == g_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  *handle = CUipcMemHandle{};
  std::memcpy(handle->reserved, &found->first, sizeof found->first);
  return CUDA_SUCCESS;
}

CUresult stub_cuIpcOpenMemHandle(CUdeviceptr* pointer, CUipcMemHandle handle, unsigned flags) {
  std::lock_guard lock(g_mutex);
  g_state.last_ipc_open_flags = flags;
  if (flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(pointer, handle.reserved, sizeof *pointer);
  return g_allocations.count(*pointer) != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult stub_cuIpcCloseMemHandle(CUdeviceptr pointer) {
  std::lock_guard lock(g_mutex);
  return g_allocations.count(pointer) != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult stub_cuMemcpyHtoD(CUdeviceptr dst, const void* src, std::size_t bytes) {
  std::lock_guard lock(g_mutex);
  if (find_allocation(dst, bytes) == g_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}

CUresult stub_cuMemcpyDtoH(void* dst, CUdeviceptr src, std::size_t bytes) {
  std::lock_guard lock(g_mutex);
  if (find_allocation(src, bytes) == g_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult stub_cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) {
  std::lock_guard lock(g_mutex);
  if (find_allocation(dst, bytes) == g_allocations.end() ||
      find_allocation(src, bytes) == g_allocations.end()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult stub_cuMemsetD8(CUdeviceptr dst, unsigned char value, std::size_t count) {
  std::lock_guard lock(g_mutex);
  if (find_allocation(dst, count) == g_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void*>(dst), value, count);
  return CUDA_SUCCESS;
}

// Host-memory calls are not emulated (they fail as a driver refusing them would); stream, event,
// module and pool calls succeed with placeholder handles.
CUresult stub_cuMemAllocManaged(CUdeviceptr*, std::size_t, unsigned) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult stub_cuMemHostAlloc(void**, std::size_t, unsigned) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult stub_cuMemFreeHost(void*) { return CUDA_ERROR_INVALID_VALUE; }
CUresult stub_cuMemHostRegister(void*, std::size_t, unsigned) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult stub_cuMemHostUnregister(void*) { return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED; }
CUresult stub_cuMemHostGetDevicePointer(CUdeviceptr*, void*, unsigned) {
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult stub_cuMemHostGetFlags(unsigned*, void*) { return CUDA_ERROR_INVALID_VALUE; }
CUresult stub_cuStreamCreate(CUstream* stream, unsigned) {
  *stream = reinterpret_cast<CUstream>(&g_stream_object);
  return CUDA_SUCCESS;
}
CUresult stub_cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult stub_cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult stub_cuEventCreate(CUevent* event, unsigned) {
  *event = reinterpret_cast<CUevent>(&g_event_object);
  return CUDA_SUCCESS;
}
CUresult stub_cuEventDestroy(CUevent) { return CUDA_SUCCESS; }
CUresult stub_cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult stub_cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult stub_cuModuleLoadData(CUmodule* module, const void* image) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *module = reinterpret_cast<CUmodule>(&g_module_object);
  return CUDA_SUCCESS;
}
CUresult stub_cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult stub_cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps*) {
  *pool = reinterpret_cast<CUmemoryPool>(&g_pool_object);
  return CUDA_SUCCESS;
}
CUresult stub_cuMemPoolDestroy(CUmemoryPool) { return CUDA_SUCCESS; }
CUresult stub_cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void*) {
  return CUDA_SUCCESS;
}
CUresult stub_cuMemPoolTrimTo(CUmemoryPool, std::size_t) { return CUDA_SUCCESS; }
CUresult stub_cuMemAllocFromPoolAsync(CUdeviceptr*, std::size_t, CUmemoryPool, CUstream) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult stub_cuMemFreeAsync(CUdeviceptr, CUstream) { return CUDA_ERROR_INVALID_VALUE; }

struct EntryPoint {
  std::string_view name;
  void* address;
};

// `function` as cuGetProcAddress hands it out. The explicit PFN type picks the declared stub
// (EMM_STUB_DECLARE), so a stub of another signature leaves that one undefined.
template <typename Pfn>
void* address_of(Pfn function) {
  return reinterpret_cast<void*>(function);
}

// The base names CudaDriver must ask for (a versioned name such as "cuMemAlloc_v2" is unknown).
#define EMM_STUB_ENTRY_POINT(cuda_name, abi_version, ...) \
  {#cuda_name, address_of<PFN_##cuda_name##_v##abi_version>(stub_##cuda_name)},
const EntryPoint kEntryPoints[] = {EMM_DRIVER_CALLS(EMM_STUB_ENTRY_POINT)};
#undef EMM_STUB_ENTRY_POINT

// cuGetProcAddress as documented in cuda.h: a version newer than the driver is
// CUDA_ERROR_INVALID_VALUE; an unknown symbol is CUDA_SUCCESS with a null pointer.
CUresult lookup(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  std::lock_guard lock(g_mutex);
  *pfn = nullptr;
  g_state.flags_seen |= flags;
  if (g_state.lowest_requested_version == 0 || cuda_version < g_state.lowest_requested_version) {
    g_state.lowest_requested_version = cuda_version;
  }
  g_state.highest_requested_version = std::max(g_state.highest_requested_version, cuda_version);
  if (cuda_version > g_config.driver_version) return CUDA_ERROR_INVALID_VALUE;
  const std::string_view name = symbol;
  const bool missing =
      g_config.missing_entry_point != nullptr && name == g_config.missing_entry_point;
  for (const EntryPoint& entry : kEntryPoints) {
    if (entry.name == name && !missing) {
      *pfn = entry.address;
      ++g_state.lookups;
      if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  ++g_state.unknown_lookups;
  const std::size_t length = std::min(name.size(), sizeof g_state.last_unknown - 1);
  std::memcpy(g_state.last_unknown, name.data(), length);
  g_state.last_unknown[length] = '\0';
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  return stub_cuDriverGetVersion(version);
}

#ifdef EMM_STUB_V1_ONLY
// cuda.h #defines cuGetProcAddress to the CUDA 12 cuGetProcAddress_v2; this is the 11.3 one.
#undef cuGetProcAddress
__attribute__((visibility("default"))) CUresult cuGetProcAddress(const char* symbol, void** pfn,
                                                                 int cuda_version,
                                                                 cuuint64_t flags) {
  return lookup(symbol, pfn, cuda_version, flags, nullptr);
}
#else
__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
    CUdriverProcAddressQueryResult* status) {
  return lookup(symbol, pfn, cuda_version, flags, status);
}
#endif

__attribute__((visibility("default"))) void emm_stub_configure(const EmmStubConfig* config) {
  std::lock_guard lock(g_mutex);
  g_config = *config;
  const std::uint64_t live_bytes = g_state.live_bytes;
  g_state = EmmStubState{};
  g_state.live_bytes = live_bytes;
}

__attribute__((visibility("default"))) EmmStubState emm_stub_state() {
  std::lock_guard lock(g_mutex);
  return g_state;
}

}  // extern "C"
