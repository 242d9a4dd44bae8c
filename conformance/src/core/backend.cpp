#include "emm/conformance/backend.hpp"

#include <string>

#include "emm/conformance/backend_descriptor.hpp"
#include "emm/errors.hpp"
#include "emm/pointer_attribute.hpp"

namespace emm::conformance {

// The registry: one row per BackendKind (EMM_BACKEND_KINDS), each descriptor defined beside its
// implementation (backend_descriptor.hpp).
#define EMM_BACKEND_DESCRIPTOR_DECLARATION(row) \
  extern const BackendDescriptor row##_backend_descriptor;
EMM_BACKEND_KINDS(EMM_BACKEND_DESCRIPTOR_DECLARATION)
#undef EMM_BACKEND_DESCRIPTOR_DECLARATION

const BackendDescriptor& backend_descriptor(BackendKind kind) noexcept {
  switch (kind) {
#define EMM_BACKEND_DESCRIPTOR_CASE(row) \
  case BackendKind::row:                 \
    return row##_backend_descriptor;
    EMM_BACKEND_KINDS(EMM_BACKEND_DESCRIPTOR_CASE)
#undef EMM_BACKEND_DESCRIPTOR_CASE
  }
  return fake_backend_descriptor;  // unreachable: every enumerator has its row
}

std::string_view to_string(BackendKind kind) noexcept { return backend_descriptor(kind).name; }

std::optional<BackendKind> parse_backend(std::string_view text) noexcept {
  for (const BackendKind kind : kBackendKinds) {
    if (text == to_string(kind)) return kind;
  }
  return std::nullopt;
}

std::string backend_unavailable_reason(BackendKind kind, const Capabilities& capabilities) {
  return backend_descriptor(kind).unavailable_reason(capabilities);
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
  return backend_descriptor(kind).make(settings, /*keep_context=*/true);
}

std::string describe_devices(BackendKind kind, const BackendSettings& settings) {
  const BackendDescriptor& descriptor = backend_descriptor(kind);
  const std::unique_ptr<Backend> backend = descriptor.make(settings, /*keep_context=*/false);
  const int count = backend->device_count();
  const std::string name = backend->device_name(0);
  std::string text = count > 1 ? name + ", " + std::to_string(count) + " devices" : name;
  if (const std::string note = descriptor.device_note(); !note.empty()) text += "; " + note;
  return text;
}

void prepare_process(BackendKind kind, bool will_import, std::chrono::milliseconds timeout) {
  backend_descriptor(kind).prepare_process(will_import, timeout);
}

}  // namespace emm::conformance
