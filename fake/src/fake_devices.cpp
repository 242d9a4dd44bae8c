// FakeDriver: the driver version and the device queries (cuDeviceGet*, cuDeviceCanAccessPeer).
#include <algorithm>
#include <string>

#include "fake_process.hpp"

namespace emm {

using Call = DriverCall;

int FakeDriver::driver_get_version() {
  auto lock = process_->enter(Call::cuDriverGetVersion);
  return process_->system.config.driver_version;
}

int FakeDriver::device_get_count() {
  auto lock = process_->enter(Call::cuDeviceGetCount);
  return process_->device_count();
}

int FakeDriver::device_get_attribute(CUdevice_attribute attribute, int device) {
  auto lock = process_->enter(Call::cuDeviceGetAttribute);
  process_->check_device(Call::cuDeviceGetAttribute, device);
  if (attribute <= 0 || attribute >= CU_DEVICE_ATTRIBUTE_MAX) {
    Process::fail(Call::cuDeviceGetAttribute, CUDA_ERROR_INVALID_VALUE,
                  "unknown device attribute " + std::to_string(static_cast<int>(attribute)));
  }
  const fake_detail::SystemState::Device& state = process_->device_state(device);
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      return state.identity.pci_domain_id;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      return state.identity.pci_bus_id;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      return state.identity.pci_device_id;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      return state.config.can_map_host_memory ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return 0;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return 132;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
      return static_cast<int>(std::min<std::size_t>(state.config.alignment, 1U << 30));
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
      return 1;
    default:
      // Every other attribute reads as 0 ("absent"): deterministic, and never a capability the
      // fake does not simulate.
      return 0;
  }
}

std::string FakeDriver::device_get_name(int device) {
  auto lock = process_->enter(Call::cuDeviceGetName);
  process_->check_device(Call::cuDeviceGetName, device);
  return process_->device_state(device).config.name;
}

bool FakeDriver::device_can_access_peer(int device, int peer) {
  auto lock = process_->enter(Call::cuDeviceCanAccessPeer);
  process_->check_device(Call::cuDeviceCanAccessPeer, device);
  process_->check_device(Call::cuDeviceCanAccessPeer, peer);
  // A device is not its own peer (the real driver answers 0 for device == peer).
  return device != peer && process_->system.config.peer_access;
}

}  // namespace emm
