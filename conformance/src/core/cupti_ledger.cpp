// CUPTI's callback API (cupti_callbacks.h) calls back on entry to and exit from every CUDA
// driver API call, on the calling thread, with the call's parameters and, on exit, its result.
// The subscriber here counts every call on entry and, on exit, reports the calls that make or
// free memory to the process's DriverLedger. The runtime (cudaMalloc, cudaFree, ...) makes its
// memory through the same driver calls, so they are recorded under the driver's names.
//
// Only the driver domain is enabled. With the runtime domain as well, libcupti 13.0 crashed
// (SIGSEGV inside libcupti, called from libcuda) when CuPy 14's statically linked runtime met
// out of memory with blocks live; the driver domain alone certified CuPy, PyTorch and numba-cuda
// on 2x H100 (docs/gpu-runs/h100x2-2026-11-27-driver-domain.md).
//
// The driver calls the subscriber itself makes (the device of a new block) are not counted.
// generated_cuda_meta.h describes the parameters of every driver entry point, the legacy
// (_v1) ones too, whose types cuda.h declares only for the driver's own build. This file calls
// no CUDA function by name (the ledger's few queries go through dlsym), so it may see them.
#define __CUDA_API_VERSION_INTERNAL 1
#include "core/cupti_ledger.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#if EMMKIT_HAVE_CUPTI
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <generated_cuda_meta.h>
#endif

namespace emm::conformance {

#if !EMMKIT_HAVE_CUPTI

const CuptiLedger& process_cupti_ledger() {
  static const CuptiLedger none{nullptr, "",
                                "this emmkit was built without the CUPTI headers "
                                "(cupti_callbacks.h in the CUDA Toolkit)"};
  return none;
}

#else

namespace {

using Subscribe = CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
using EnableDomain = CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
using ResultString = CUptiResult (*)(CUptiResult, const char**);
using CtxGetDevice = CUresult (*)(CUdevice*);
using PrimaryCtxGetState = CUresult (*)(CUdevice, unsigned*, int*);
using PointerGetAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);

struct DriverQueries {
  CtxGetDevice ctx_get_device = nullptr;
  PrimaryCtxGetState primary_ctx_get_state = nullptr;
  PointerGetAttribute pointer_get_attribute = nullptr;
};

DriverLedger* g_ledger = nullptr;
DriverQueries g_driver;

thread_local int t_own_calls = 0;  // the subscriber's own driver calls in progress

// The device of the context current on this thread, asked without being counted.
int current_device() {
  if (g_driver.ctx_get_device == nullptr) return -1;
  ++t_own_calls;
  CUdevice device = -1;
  const CUresult result = g_driver.ctx_get_device(&device);
  --t_own_calls;
  return result == CUDA_SUCCESS ? device : -1;
}

// The device whose memory holds a device pointer.
int pointer_device(CUdeviceptr pointer) {
  if (g_driver.pointer_get_attribute == nullptr) return -1;
  ++t_own_calls;
  int device = -1;
  const CUresult result =
      g_driver.pointer_get_attribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer);
  --t_own_calls;
  return result == CUDA_SUCCESS ? device : -1;
}

bool primary_context_active(int device) {
  if (g_driver.primary_ctx_get_state == nullptr) return true;
  ++t_own_calls;
  unsigned flags = 0;
  int active = 1;
  const CUresult result = g_driver.primary_ctx_get_state(device, &flags, &active);
  --t_own_calls;
  return result != CUDA_SUCCESS || active != 0;
}

void made(const CUpti_CallbackData& data, LedgerBlockKind kind, std::uint64_t base,
          std::size_t size, unsigned flags, std::string_view call) {
  if (base == 0) return;  // a zero-byte pool allocation succeeds with a null pointer
  LedgerBlock block;
  block.base = base;
  block.size = size;
  block.flags = flags;
  block.kind = kind;
  block.context = data.context;
  block.context_device = current_device();
  const bool on_device = kind == LedgerBlockKind::device || kind == LedgerBlockKind::managed ||
                         kind == LedgerBlockKind::ipc_mapping;
  block.device = on_device ? pointer_device(base) : block.context_device;
  if (block.device < 0) block.device = block.context_device;
  block.call = call;
  g_ledger->made(block);
}

template <typename Params>
const Params& params(const CUpti_CallbackData& data) {
  return *static_cast<const Params*>(data.functionParams);
}

std::uint64_t address(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer); }

void on_driver_exit(CUpti_CallbackId id, const CUpti_CallbackData& data) {
  const CUresult result = *static_cast<const CUresult*>(data.functionReturnValue);
  const bool ok = result == CUDA_SUCCESS;
  using K = LedgerBlockKind;
  switch (id) {
    // --- device memory
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
      if (ok) {
        const auto& p = params<cuMemAlloc_v2_params>(data);
        made(data, K::device, *p.dptr, p.bytesize, 0, "cuMemAlloc");
      }
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
      if (ok) {
        const auto& p = params<cuMemAllocPitch_v2_params>(data);
        made(data, K::device, *p.dptr, *p.pPitch * p.Height, 0, "cuMemAllocPitch");
      }
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
      if (ok) {
        const auto& p = params<cuMemAllocAsync_params>(data);
        made(data, K::device, *p.dptr, p.bytesize, 0, "cuMemAllocAsync");
      }
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
      if (ok) {
        const auto& p = params<cuMemAllocFromPoolAsync_params>(data);
        made(data, K::device, *p.dptr, p.bytesize, 0, "cuMemAllocFromPoolAsync");
      }
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
      if (ok) {
        const auto& p = params<cuMemAllocManaged_params>(data);
        made(data, K::managed, *p.dptr, p.bytesize, p.flags, "cuMemAllocManaged");
      }
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      g_ledger->freed(LedgerSpace::device, params<cuMemFree_v2_params>(data).dptr, "cuMemFree",
                      result, true);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      g_ledger->freed(LedgerSpace::device, params<cuMemFreeAsync_params>(data).dptr,
                      "cuMemFreeAsync", result, true);
      return;
    // --- page-locked host memory
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
      if (ok) {
        const auto& p = params<cuMemHostAlloc_params>(data);
        made(data, K::host_alloc, address(*p.pp), p.bytesize, p.Flags, "cuMemHostAlloc");
      }
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
      if (ok) {
        const auto& p = params<cuMemAllocHost_v2_params>(data);
        made(data, K::host_alloc, address(*p.pp), p.bytesize, 0, "cuMemAllocHost");
      }
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      g_ledger->freed(LedgerSpace::host, address(params<cuMemFreeHost_params>(data).p),
                      "cuMemFreeHost", result, true);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2:
      if (ok) {
        const auto& p = params<cuMemHostRegister_v2_params>(data);
        made(data, K::host_registration, address(p.p), p.bytesize, p.Flags, "cuMemHostRegister");
      }
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
      g_ledger->freed(LedgerSpace::host, address(params<cuMemHostUnregister_params>(data).p),
                      "cuMemHostUnregister", result, false);
      return;
    // --- IPC mappings
    case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2:
      if (ok) {
        const auto& p = params<cuIpcOpenMemHandle_v2_params>(data);
        made(data, K::ipc_mapping, *p.pdptr, 0, p.Flags, "cuIpcOpenMemHandle");
      }
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle:
      g_ledger->freed(LedgerSpace::device, params<cuIpcCloseMemHandle_params>(data).dptr,
                      "cuIpcCloseMemHandle", result, false);
      return;
    // --- contexts, which take their blocks with them
    case CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v2:
      if (ok) g_ledger->context_created(*params<cuCtxCreate_v2_params>(data).pctx);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v3:
      if (ok) g_ledger->context_created(*params<cuCtxCreate_v3_params>(data).pctx);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v4:
      if (ok) g_ledger->context_created(*params<cuCtxCreate_v4_params>(data).pctx);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2:
      if (ok) g_ledger->context_destroyed(params<cuCtxDestroy_v2_params>(data).ctx);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2:
      if (ok)
        g_ledger->primary_context_destroyed(params<cuDevicePrimaryCtxReset_v2_params>(data).dev);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2: {
      const int device = params<cuDevicePrimaryCtxRelease_v2_params>(data).dev;
      if (ok && !primary_context_active(device)) g_ledger->primary_context_destroyed(device);
      return;
    }
    default:
      return;
  }
}

void CUPTIAPI on_api_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const void* raw) {
  if (t_own_calls > 0 || g_ledger == nullptr) return;
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto& data = *static_cast<const CUpti_CallbackData*>(raw);
  if (data.callbackSite == CUPTI_API_ENTER) {
    g_ledger->called();
    return;
  }
  on_driver_exit(id, data);
}

template <typename Function>
Function symbol(void* library, const char* name) {
  return reinterpret_cast<Function>(::dlsym(library, name));
}

std::vector<std::string> cupti_candidates() {
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("EMMKIT_CUPTI"); path != nullptr && *path != '\0') {
    candidates.emplace_back(path);
  }
  candidates.emplace_back("libcupti.so.13");
  candidates.emplace_back("libcupti.so");
  std::vector<std::string> roots;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(variable); root != nullptr && *root != '\0') {
      roots.emplace_back(root);
    }
  }
  roots.emplace_back(EMMKIT_CUDA_ROOT);  // the toolkit this kit was built with
  roots.emplace_back("/usr/local/cuda");
  for (const std::string& root : roots) {
    if (root.empty()) continue;
    for (const char* folder : {"/extras/CUPTI/lib64", "/lib64", "/targets/x86_64-linux/lib"}) {
      candidates.push_back(root + folder + "/libcupti.so.13");
    }
  }
  return candidates;
}

CuptiLedger subscribe() {
  CuptiLedger out;
  void* library = nullptr;
  std::string tried;
  for (const std::string& candidate : cupti_candidates()) {
    library = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) {
      out.library = candidate;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + candidate;
  }
  if (library == nullptr) {
    out.reason = "libcupti could not be loaded (tried " + tried + "; set EMMKIT_CUPTI to its path)";
    return out;
  }
  const auto subscribe_to = symbol<Subscribe>(library, "cuptiSubscribe");
  const auto enable_domain = symbol<EnableDomain>(library, "cuptiEnableDomain");
  const auto result_string = symbol<ResultString>(library, "cuptiGetResultString");
  if (subscribe_to == nullptr || enable_domain == nullptr) {
    out.reason = out.library + " lacks cuptiSubscribe or cuptiEnableDomain";
    return out;
  }
  // The driver the kit loaded (CudaDriver): asked, never loaded again here.
  if (void* cuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); cuda != nullptr) {
    g_driver.ctx_get_device = symbol<CtxGetDevice>(cuda, "cuCtxGetDevice");
    g_driver.primary_ctx_get_state = symbol<PrimaryCtxGetState>(cuda, "cuDevicePrimaryCtxGetState");
    g_driver.pointer_get_attribute = symbol<PointerGetAttribute>(cuda, "cuPointerGetAttribute");
  }
  static DriverLedger ledger;  // for the life of the process: CUPTI calls back until exit
  g_ledger = &ledger;
  CUpti_SubscriberHandle subscriber = nullptr;
  const auto explain = [&](CUptiResult code, const char* what) {
    const char* text = nullptr;
    if (result_string != nullptr) result_string(code, &text);
    g_ledger = nullptr;
    return std::string(what) + " failed: " + (text != nullptr ? text : "CUPTI error") + " (" +
           std::to_string(static_cast<int>(code)) + ")";
  };
  if (const CUptiResult code = subscribe_to(&subscriber, on_api_call, nullptr);
      code != CUPTI_SUCCESS) {
    out.reason = explain(code, "cuptiSubscribe") +
                 (code == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                      ? "; another CUPTI client (a profiler) is attached to this process"
                      : "");
    return out;
  }
  if (const CUptiResult code = enable_domain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
      code != CUPTI_SUCCESS) {
    out.reason = explain(code, "cuptiEnableDomain");
    return out;
  }
  out.ledger = &ledger;
  return out;
}

}  // namespace

const CuptiLedger& process_cupti_ledger() {
  static const CuptiLedger ledger = [] {
    if (const char* off = std::getenv("EMMKIT_NO_CUPTI"); off != nullptr && *off != '\0') {
      return CuptiLedger{nullptr, "", "EMMKIT_NO_CUPTI is set"};
    }
    return subscribe();
  }();
  return ledger;
}

#endif

}  // namespace emm::conformance
