// emm/driver.hpp — the one interface through which the EMM system reaches CUDA.
//
// Every CUDA driver call the EMM system (and a well-behaved plugin) makes goes through an
// emm::Driver, so the same code runs on:
//   * emm::CudaDriver   — the real driver, loaded at run time (cuda_driver.hpp);
//   * emm::FakeDriver   — a simulated device with fault injection (fake/);
//   * emm::MockDriver   — GoogleMock over the same interface (mocks/).
// Plugins reach it through their context: `context()->driver()`.
//
// Its methods are declared from the list of entry points in driver_calls.hpp; each follows the
// CUDA driver API call its row names. Memory, stream, event, module and pool calls act in the
// calling thread's current context (as CUDA's do). A failing call throws emm::CudaDriverError
// carrying the CUresult and the CUDA name of the call.
//
// Thread-safety: every implementation is safe to call from many threads at once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "emm/cuda_api.hpp"
#include "emm/driver_calls.hpp"
#include "emm/memory_info.hpp"

namespace emm {

// Each entry point in driver_calls.hpp, named after the CUDA call (in the list's order). Used
// for fault injection and call counting on the fake driver, and in error messages.
enum class DriverCall : int {
#define EMM_DRIVER_CALL_ENUMERATOR(cuda_name, ...) cuda_name,
  EMM_DRIVER_CALLS(EMM_DRIVER_CALL_ENUMERATOR)
#undef EMM_DRIVER_CALL_ENUMERATOR
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

  // Which implementation this is, for logs and diagnostics: "cuda" (CudaDriver), "fake"
  // (FakeDriver), "mock" (MockDriver). Not a conformance backend name (conformance/backend.hpp).
  virtual std::string implementation_name() const = 0;

  // One pure virtual method per CALL row of driver_calls.hpp, acting as the CUDA call of its
  // row: int driver_get_version(), CUdeviceptr mem_alloc(std::size_t bytesize),
  // void mem_free(CUdeviceptr pointer), ... (the list gives every signature).
  EMM_DRIVER_METHODS(EMM_DRIVER_DECLARE_PURE)

  // --- conveniences built on the calls above (not virtual) -----------------------------------
  // PCI identity of `device` from three cuDeviceGetAttribute calls.
  DeviceIdentity device_identity(int device);
  // CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY != 0.
  bool can_map_host_memory(int device);
};

}  // namespace emm
