// emm::Driver's non-virtual conveniences and the names of its calls.
#include "emm/driver.hpp"

namespace emm {

std::string_view driver_call_name(DriverCall call) noexcept {
  // Stringized here, one macro level deep, so that names cuda.h #defines to a versioned symbol
  // (cuMemAlloc -> cuMemAlloc_v2) keep the base name the CUDA documentation uses.
#define EMM_DRIVER_CALL_NAME(name) \
  case DriverCall::name:           \
    return #name;
  switch (call) {
    EMM_DRIVER_CALL_NAME(cuInit)
    EMM_DRIVER_CALL_NAME(cuDriverGetVersion)
    EMM_DRIVER_CALL_NAME(cuDeviceGetCount)
    EMM_DRIVER_CALL_NAME(cuDeviceGetAttribute)
    EMM_DRIVER_CALL_NAME(cuDeviceGetName)
    EMM_DRIVER_CALL_NAME(cuDeviceCanAccessPeer)
    EMM_DRIVER_CALL_NAME(cuDevicePrimaryCtxRetain)
    EMM_DRIVER_CALL_NAME(cuDevicePrimaryCtxRelease)
    EMM_DRIVER_CALL_NAME(cuDevicePrimaryCtxReset)
    EMM_DRIVER_CALL_NAME(cuCtxGetCurrent)
    EMM_DRIVER_CALL_NAME(cuCtxSetCurrent)
    EMM_DRIVER_CALL_NAME(cuCtxGetDevice)
    EMM_DRIVER_CALL_NAME(cuCtxSynchronize)
    EMM_DRIVER_CALL_NAME(cuMemAlloc)
    EMM_DRIVER_CALL_NAME(cuMemFree)
    EMM_DRIVER_CALL_NAME(cuMemAllocManaged)
    EMM_DRIVER_CALL_NAME(cuMemHostAlloc)
    EMM_DRIVER_CALL_NAME(cuMemFreeHost)
    EMM_DRIVER_CALL_NAME(cuMemHostRegister)
    EMM_DRIVER_CALL_NAME(cuMemHostUnregister)
    EMM_DRIVER_CALL_NAME(cuMemHostGetDevicePointer)
    EMM_DRIVER_CALL_NAME(cuMemGetInfo)
    EMM_DRIVER_CALL_NAME(cuMemGetAddressRange)
    EMM_DRIVER_CALL_NAME(cuIpcGetMemHandle)
    EMM_DRIVER_CALL_NAME(cuIpcOpenMemHandle)
    EMM_DRIVER_CALL_NAME(cuIpcCloseMemHandle)
    EMM_DRIVER_CALL_NAME(cuMemcpyHtoD)
    EMM_DRIVER_CALL_NAME(cuMemcpyDtoH)
    EMM_DRIVER_CALL_NAME(cuMemcpyDtoD)
    EMM_DRIVER_CALL_NAME(cuMemsetD8)
    EMM_DRIVER_CALL_NAME(cuStreamCreate)
    EMM_DRIVER_CALL_NAME(cuStreamDestroy)
    EMM_DRIVER_CALL_NAME(cuStreamSynchronize)
    EMM_DRIVER_CALL_NAME(cuEventCreate)
    EMM_DRIVER_CALL_NAME(cuEventDestroy)
    EMM_DRIVER_CALL_NAME(cuEventRecord)
    EMM_DRIVER_CALL_NAME(cuEventSynchronize)
    EMM_DRIVER_CALL_NAME(cuModuleLoadData)
    EMM_DRIVER_CALL_NAME(cuModuleUnload)
    EMM_DRIVER_CALL_NAME(cuMemPoolCreate)
    EMM_DRIVER_CALL_NAME(cuMemPoolDestroy)
    EMM_DRIVER_CALL_NAME(cuMemPoolSetAttribute)
    EMM_DRIVER_CALL_NAME(cuMemPoolTrimTo)
    EMM_DRIVER_CALL_NAME(cuMemAllocFromPoolAsync)
    EMM_DRIVER_CALL_NAME(cuMemFreeAsync)
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
