// emm/fake/fake_system.hpp — a simulated machine of fake CUDA devices.
//
// A FakeSystem holds the devices and their memory. Every FakeDriver made over the same
// FakeSystem is one simulated *process*: each has its own address space, current contexts and
// call counters, and a handle from cuIpcGetMemHandle in one can be opened in another
// (IPC-1 on the fake backend). Device memory is backed by host memory, so bytes written can be
// read back, from any process that maps them.
//
// Thread-safety: all members are safe to call concurrently.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "emm/driver.hpp"

namespace emm {

class FakeDriver;
namespace fake_detail {
struct SystemState;  // fake/src/fake_system_state.hpp
}  // namespace fake_detail

struct FakeDeviceConfig {
  std::size_t capacity = std::size_t{4} << 30;  // 4 GiB of simulated device memory
  bool can_map_host_memory = true;
  std::string name = "emmkit fake device";
  DeviceIdentity identity{};  // default: domain 0, bus 1 + device index, device 0
  // Alignment of device pointers from cuMemAlloc (CUDA guarantees >= 256).
  std::size_t alignment = 512;
};

struct FakeSystemConfig {
  std::vector<FakeDeviceConfig> devices{FakeDeviceConfig{}};
  bool peer_access = false;  // cuDeviceCanAccessPeer between distinct devices
  int driver_version = 13000;
  // Host memory the driver may page-lock for cuMemHostAlloc blocks (whole pages), shared by
  // every process of the system as host RAM is: beyond it cuMemHostAlloc answers
  // CUDA_ERROR_OUT_OF_MEMORY, so that a plugin's pinned cache meets its out-of-memory path as
  // a device cache does. Smaller than a real host's on purpose (docs/fake-vs-gpu.md).
  std::size_t page_locked_capacity = std::size_t{1} << 30;
};

class FakeSystem {
 public:
  explicit FakeSystem(FakeSystemConfig config = {});
  ~FakeSystem();
  FakeSystem(const FakeSystem&) = delete;
  FakeSystem& operator=(const FakeSystem&) = delete;

  const FakeSystemConfig& config() const noexcept;
  int device_count() const noexcept;
  std::size_t capacity(int device) const;
  // Device memory in use on `device`, by every process (cuMemAlloc, managed, pool memory),
  // each allocation rounded up to the device alignment. cuMemGetInfo reports
  // free = capacity - bytes_in_use.
  std::size_t bytes_in_use(int device) const;
  // Live device allocations on `device`, by every process.
  std::size_t allocation_count(int device) const;

 private:
  friend class FakeDriver;  // each FakeDriver is a process over this state
  std::unique_ptr<fake_detail::SystemState> state_;
};

}  // namespace emm
