#include "emm/conformance/backend.hpp"

#include <string>

#include "core/backend_factories.hpp"
#include "emm/errors.hpp"
#include "emm/pointer_attribute.hpp"

namespace emm::conformance {

std::string backend_unavailable_reason(BackendKind kind, const Capabilities& capabilities) {
  if (kind == BackendKind::fake) {
    if (!capabilities.runs_on_fake_driver) {
      return "the plugin declares runs_on_fake_driver=false (it calls CUDA itself): it is "
             "certified on a GPU only";
    }
    return "";
  }
  const std::string& reason = gpu_unavailable_reason();
  return reason.empty() ? "" : "no GPU: " + reason;
}

HostMemoryState host_memory_from_driver(Driver& driver, const void* address) {
  HostMemoryState state;
  const auto pointer = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(address));
  try {
    state.page_locked = driver.pointer_get_attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer) ==
                        CU_MEMORYTYPE_HOST;
  } catch (const CudaDriverError& error) {
    // Pageable (or freed) memory is no CUDA memory at all.
    if (error.code() == CUDA_ERROR_INVALID_VALUE) return state;
    throw;
  }
  if (!state.page_locked) return state;
  try {
    state.range = AddressRange{static_cast<CUdeviceptr>(driver.pointer_get_attribute(
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointer)),
                               static_cast<std::size_t>(driver.pointer_get_attribute(
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer))};
  } catch (const CudaDriverError&) {
    // Not every driver answers the range of host memory (docs/fake-vs-gpu.md): left unknown.
  }
  try {
    state.host_alloc_flags = driver.mem_host_get_flags(const_cast<void*>(address));
  } catch (const CudaDriverError& error) {
    // Drivers that answer only for cuMemHostAlloc blocks refuse registered memory.
    if (error.code() != CUDA_ERROR_INVALID_VALUE) throw;
  }
  return state;
}

std::unique_ptr<Backend> make_backend(BackendKind kind, const BackendSettings& settings) {
  return kind == BackendKind::fake ? make_fake_backend(settings.fake_devices) : make_gpu_backend();
}

std::string describe_devices(BackendKind kind, const BackendSettings& settings) {
  const std::unique_ptr<Backend> backend = kind == BackendKind::fake
                                               ? make_fake_backend(settings.fake_devices)
                                               : make_gpu_backend(/*keep_context=*/false);
  const int count = backend->device_count();
  const std::string name = backend->device_name(0);
  std::string text = count > 1 ? name + ", " + std::to_string(count) + " devices" : name;
  if (kind == BackendKind::gpu) text += "; " + gpu_ledger_status();
  return text;
}

void prepare_process(BackendKind kind, bool will_import, std::chrono::milliseconds timeout) {
  if (kind == BackendKind::gpu) prepare_gpu_process(will_import, timeout);
}

}  // namespace emm::conformance
