#include "emm/conformance/backend.hpp"

#include <mutex>
#include <string>
#include <vector>

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

// --- the observations: one name each for what a std::nullopt leaves unchecked ----------------

template <class T>
std::optional<T> Backend::observed(std::optional<T> answer, std::string_view what) {
  if (answer) return answer;
  const std::lock_guard<std::mutex> lock(unobserved_mutex_);
  for (const std::string& existing : unobserved_) {
    if (existing == what) return answer;
  }
  unobserved_.emplace_back(what);
  return answer;
}

std::optional<unsigned> Backend::managed_attach_flags(CUdeviceptr pointer) {
  return observed(do_managed_attach_flags(pointer), "the attach flag given to cuMemAllocManaged");
}

std::optional<std::size_t> Backend::host_allocation_count() {
  return observed(do_host_allocation_count(), "live cuMemHostAlloc blocks");
}

std::optional<std::size_t> Backend::host_registration_count() {
  return observed(do_host_registration_count(), "live cuMemHostRegister ranges");
}

std::optional<HostMemoryState> Backend::host_memory(const void* address) {
  return observed(do_host_memory(address), "whether host memory is page-locked");
}

std::optional<std::size_t> Backend::invalid_frees() {
  return observed(do_invalid_frees(), "double frees in the driver");
}

std::optional<std::size_t> Backend::invalid_accesses() {
  return observed(do_invalid_accesses(), "accesses outside allocations");
}

std::optional<std::size_t> Backend::driver_frees() {
  return observed(do_driver_frees(), "frees to the driver (cuMemFree, cuMemFreeHost)");
}

std::optional<std::size_t> Backend::driver_calls() {
  return observed(do_driver_calls(), "the number of driver calls made");
}

std::optional<ImportResponse> Backend::import_through_plugin(const ImportRequest& request,
                                                             const ManagerFactory& factory) {
  return observed(do_import_through_plugin(request, factory),
                  "a staged import through the plugin in the importing process");
}

std::vector<std::string> Backend::unobserved() const {
  const std::lock_guard<std::mutex> lock(unobserved_mutex_);
  return unobserved_;
}

void Backend::clear_unobserved() {
  const std::lock_guard<std::mutex> lock(unobserved_mutex_);
  unobserved_.clear();
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
