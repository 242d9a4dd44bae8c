// emm::Driver's non-virtual conveniences and the names of its calls.
#include "emm/driver.hpp"

namespace emm {

std::string_view driver_call_name(DriverCall call) noexcept {
  // #cuda_name stringizes the row's token before cuda.h's macros can expand it, so names cuda.h
  // #defines to a versioned symbol (cuMemAlloc -> cuMemAlloc_v2) keep the base name the CUDA
  // documentation uses.
#define EMM_DRIVER_CALL_NAME(cuda_name, ...) \
  case DriverCall::cuda_name:                \
    return #cuda_name;
  switch (call) {
    EMM_DRIVER_CALLS(EMM_DRIVER_CALL_NAME)
    case DriverCall::kCount:
      break;
  }
#undef EMM_DRIVER_CALL_NAME
  return "DriverCall(invalid)";
}

DeviceIdentity Driver::device_identity(int device) {
  DeviceIdentity identity;
  identity.pci_domain_id = device_get_attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, device);
  identity.pci_bus_id = device_get_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device);
  identity.pci_device_id = device_get_attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, device);
  return identity;
}

bool Driver::can_map_host_memory(int device) {
  return device_get_attribute(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, device) != 0;
}

}  // namespace emm
