// FakeDriver: one simulated process over a FakeSystem.
//
// Error codes follow what the real driver answered in a probe on an H100 (CUDA 13.0 toolkit
// headers, driver 580); the few places where the fake is deliberately stricter or kinder are
// listed in fake_driver.hpp.
#include "emm/fake/fake_driver.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>

#include "emm/errors.hpp"
#include "fake_system_impl.hpp"

namespace emm {
namespace {

// Primary context of device d (the fake's only contexts).
constexpr std::uintptr_t kPrimaryContextBase = 0x1000;
// Upper bound on one page-locked host request; beyond it the fake answers out-of-memory
// without asking the host.
constexpr std::size_t kMaxHostAllocation = std::size_t{1} << 40;

constexpr unsigned kHostAllocFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned kHostRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                        CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
constexpr unsigned kEventFlags =
    CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

// Layout of the 64 bytes of a fake IPC handle.
constexpr std::array<char, 8> kIpcMagic = {'E', 'M', 'M', 'F', 'A', 'K', 'E', '1'};
constexpr std::size_t kIpcSystemOffset = 8;
constexpr std::size_t kIpcBlockOffset = 16;
constexpr std::size_t kIpcDeviceOffset = 24;
constexpr std::size_t kIpcCheckOffset = 32;
constexpr std::size_t kIpcUsedBytes = 40;  // the rest, and bytes 28..31, stay zero

// Handles of streams, events, modules and pools: a tag in the high bits, then a serial that
// is never reused, so destroying a handle twice is always detected.
enum class HandleTag : std::uintptr_t { stream = 0x5, event = 0xE, module = 0xD, pool = 0xB };

std::atomic<std::uint64_t> g_next_process_serial{1};

// The current context of each simulated process, per thread (cuCtxSetCurrent is per thread).
// Keyed by the process serial, which is never reused.
thread_local std::unordered_map<std::uint64_t, CUcontext> t_current_context;

std::string hex(std::uintptr_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

std::string hex(const void* pointer) { return hex(reinterpret_cast<std::uintptr_t>(pointer)); }

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

std::uint64_t ipc_check(std::uint64_t system, std::uint64_t block, std::int32_t device) {
  // FNV-1a over the fields: garbage bytes that happen to carry the magic are still rejected.
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  auto mix = [&hash](std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash ^= (value >> (8 * i)) & 0xffU;
      hash *= 0x100000001b3ULL;
    }
  };
  mix(system);
  mix(block);
  mix(static_cast<std::uint32_t>(device));
  return hash;
}

template <class T>
void put(CUipcMemHandle& handle, std::size_t offset, T value) {
  std::memcpy(handle.reserved + offset, &value, sizeof value);
}

bool padding_is_zero(const CUipcMemHandle& handle) {
  auto zero = [](char byte) { return byte == 0; };
  return std::all_of(handle.reserved + kIpcDeviceOffset + 4, handle.reserved + kIpcCheckOffset,
                     zero) &&
         std::all_of(handle.reserved + kIpcUsedBytes, std::end(handle.reserved), zero);
}

template <class T>
T get(const CUipcMemHandle& handle, std::size_t offset) {
  T value;
  std::memcpy(&value, handle.reserved + offset, sizeof value);
  return value;
}

bool contains(std::uintptr_t base, std::size_t size, std::uintptr_t address, std::size_t bytes) {
  if (address < base) return false;
  const std::uintptr_t offset = address - base;
  return offset < size && bytes <= size - offset;
}

// The entry of `ranges` (keyed by start, disjoint) whose [start, start + size) holds `address`.
template <class Map, class SizeOf>
auto find_containing(Map& ranges, std::uintptr_t address, SizeOf size_of) {
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return ranges.end();
  --it;
  return contains(it->first, size_of(it->second), address, 1) ? it : ranges.end();
}

}  // namespace

// --- this process's state ----------------------------------------------------------------------

struct FakeDriver::Process {
  struct Mapping {
    std::uint64_t block = 0;
    std::size_t size = 0;
    bool imported = false;   // a cuIpcOpenMemHandle mapping
    int context_device = 0;  // the context it belongs to (cuDevicePrimaryCtxReset)
  };
  struct HostAllocation {
    std::size_t size = 0;
    std::size_t length = 0;  // of the mapping behind it (whole pages)
    unsigned flags = 0;
    int device = 0;
  };
  struct Registration {
    std::size_t size = 0;
    unsigned flags = 0;
    int device = 0;
  };
  struct Fault {
    DriverCall call;
    CUresult result;
    std::size_t skip;       // calls to let through before the first failure
    std::size_t remaining;  // failures still to inject
  };

  explicit Process(FakeSystem::Impl& system_impl)
      : system(system_impl),
        serial(g_next_process_serial.fetch_add(1)),
        retains(system_impl.devices.size(), 0) {}

  // Every entry point starts here: lock the system, count the call, inject a pending fault.
  std::unique_lock<std::mutex> enter(DriverCall call) {
    std::unique_lock lock(system.mutex);
    ++calls[static_cast<std::size_t>(call)];
    std::optional<CUresult> injected;
    for (Fault& fault : faults) {
      if (fault.call != call) continue;
      if (fault.skip > 0) {
        --fault.skip;
      } else if (!injected) {
        injected = fault.result;
        --fault.remaining;
      }
    }
    std::erase_if(faults, [](const Fault& fault) { return fault.remaining == 0; });
    if (injected) fail(call, *injected, "failure injected by FakeDriver::fail_call");
    return lock;
  }

  [[noreturn]] static void fail(DriverCall call, CUresult result, std::string detail) {
    throw CudaDriverError(result, std::string(driver_call_name(call)), std::move(detail));
  }

  [[noreturn]] void invalid_free(DriverCall call, CUresult result, std::string detail) {
    ++invalid_frees;
    fail(call, result, std::move(detail));
  }

  int device_count() const { return static_cast<int>(system.devices.size()); }

  void check_device(DriverCall call, int device) const {
    if (device < 0 || device >= device_count()) {
      fail(call, CUDA_ERROR_INVALID_DEVICE,
           "device " + std::to_string(device) + " does not exist (the fake system has " +
               std::to_string(device_count()) + ")");
    }
  }

  FakeSystem::Impl::Device& device_state(int device) {
    return system.devices[static_cast<std::size_t>(device)];
  }

  CUcontext current_context() const {
    auto it = t_current_context.find(serial);
    return it == t_current_context.end() ? nullptr : it->second;
  }

  std::optional<int> context_device(CUcontext context) const {
    const auto value = reinterpret_cast<std::uintptr_t>(context);
    if (value < kPrimaryContextBase ||
        value - kPrimaryContextBase >= static_cast<std::uintptr_t>(device_count())) {
      return std::nullopt;
    }
    return static_cast<int>(value - kPrimaryContextBase);
  }

  // The device of the current context, for calls that act in it.
  int require_context(DriverCall call) const {
    if (const std::optional<int> device = context_device(current_context())) return *device;
    fail(call, CUDA_ERROR_INVALID_CONTEXT,
         "no CUDA context is current on this thread; make the device's primary context current "
         "first (cuCtxSetCurrent, emm::Context::make_current)");
  }

  template <class T>
  T make_handle(HandleTag tag) {
    const std::uintptr_t value = (static_cast<std::uintptr_t>(tag) << 56) |
                                 (static_cast<std::uintptr_t>(system.next_handle_value()) << 4);
    return reinterpret_cast<T>(value);
  }

  // --- device memory ---

  [[noreturn]] void out_of_memory(DriverCall call, int device, std::size_t bytes) {
    const FakeSystem::Impl::Device& state = device_state(device);
    fail(call, CUDA_ERROR_OUT_OF_MEMORY,
         std::to_string(bytes) + " bytes requested on fake device " + std::to_string(device) +
             ", which has " + std::to_string(state.config.capacity - state.bytes_in_use) + " of " +
             std::to_string(state.config.capacity) + " bytes free");
  }

  CUdeviceptr allocate(DriverCall call, int device, std::size_t bytes, BlockKind kind) {
    const std::optional<std::uint64_t> id = system.create_block(device, bytes, kind, serial);
    if (!id) out_of_memory(call, device, bytes);
    const std::optional<CUdeviceptr> base = system.reserve_addresses(system.blocks.at(*id));
    if (!base) {
      system.drop_block_holder(*id, true);
      out_of_memory(call, device, bytes);
    }
    mappings.emplace(*base, Mapping{*id, bytes, false, device});
    return *base;
  }

  void release_mapping(std::map<CUdeviceptr, Mapping>::iterator it) {
    const Mapping mapping = it->second;
    system.release_addresses(system.blocks.at(mapping.block), it->first);
    mappings.erase(it);
    system.drop_block_holder(mapping.block, !mapping.imported);
  }

  void free_device(DriverCall call, CUdeviceptr pointer) {
    if (pointer == 0) return;  // cuMemFree(0) succeeds and does nothing (probed)
    auto it = mappings.find(pointer);
    if (it != mappings.end() && !it->second.imported) {
      release_mapping(it);
      return;
    }
    if (it != mappings.end()) {
      invalid_free(call, CUDA_ERROR_INVALID_VALUE,
                   hex(pointer) +
                       " was mapped by cuIpcOpenMemHandle; unmap it with "
                       "cuIpcCloseMemHandle, not " +
                       std::string(driver_call_name(call)));
    }
    auto inside = find_containing(mappings, pointer, [](const Mapping& m) { return m.size; });
    if (inside != mappings.end()) {
      invalid_free(call, CUDA_ERROR_INVALID_VALUE,
                   hex(pointer) + " lies inside the allocation at " + hex(inside->first) +
                       " (offset " + std::to_string(pointer - inside->first) +
                       "); free the allocation's base address");
    }
    invalid_free(call, CUDA_ERROR_INVALID_VALUE,
                 hex(pointer) +
                     " is not a live device allocation of this process (freed twice, or never "
                     "allocated)");
  }

  // The bytes behind the device range [address, address + bytes), when the whole range lies in
  // one allocation, IPC mapping or mapped host range of this process.
  std::byte* resolve(CUdeviceptr address, std::size_t bytes) {
    auto device = find_containing(mappings, address, [](const Mapping& m) { return m.size; });
    if (device != mappings.end()) {
      if (!contains(device->first, device->second.size, address, bytes)) return nullptr;
      return system.blocks.at(device->second.block).backing.data() + (address - device->first);
    }
    if (is_mapped_host(address, bytes)) return reinterpret_cast<std::byte*>(address);
    return nullptr;
  }

  std::byte* resolve_or_fail(DriverCall call, CUdeviceptr address, std::size_t bytes,
                             const char* role) {
    if (std::byte* bytes_at = resolve(address, bytes)) return bytes_at;
    ++invalid_accesses;
    fail(call, CUDA_ERROR_INVALID_VALUE,
         std::string(role) + " range [" + hex(address) + ", +" + std::to_string(bytes) +
             ") is not inside one live allocation, IPC mapping or mapped host range of this "
             "process");
  }

  // --- host memory ---

  const HostAllocation* mapped_host_allocation(std::uintptr_t address, std::size_t bytes) const {
    auto it = host_allocations.upper_bound(address);
    if (it == host_allocations.begin()) return nullptr;
    --it;
    if (!(it->second.flags & CU_MEMHOSTALLOC_DEVICEMAP)) return nullptr;
    return contains(it->first, it->second.size, address, bytes) ? &it->second : nullptr;
  }

  const Registration* mapped_registration(std::uintptr_t address, std::size_t bytes) const {
    auto it = registrations.upper_bound(address);
    if (it == registrations.begin()) return nullptr;
    --it;
    if (!(it->second.flags & CU_MEMHOSTREGISTER_DEVICEMAP)) return nullptr;
    return contains(it->first, it->second.size, address, bytes) ? &it->second : nullptr;
  }

  bool is_mapped_host(std::uintptr_t address, std::size_t bytes) const {
    return mapped_host_allocation(address, bytes) != nullptr ||
           mapped_registration(address, bytes) != nullptr;
  }

  // Whether [start, start + size) overlaps page-locked memory of this process.
  bool overlaps_locked(std::uintptr_t start, std::size_t size) const {
    const std::uintptr_t end = start + size;
    auto registered = registrations.lower_bound(end);
    if (registered != registrations.begin()) {
      --registered;
      if (registered->first + registered->second.size > start) return true;
    }
    auto allocated = host_allocations.lower_bound(end);
    if (allocated != host_allocations.begin()) {
      --allocated;
      if (allocated->first + allocated->second.length > start) return true;
    }
    return false;
  }

  void free_host(std::map<std::uintptr_t, HostAllocation>::iterator it) {
    ::munmap(reinterpret_cast<void*>(it->first), it->second.length);
    host_allocations.erase(it);
  }

  // --- streams ---

  bool is_default_stream(CUstream stream) const {
    return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
  }

  void check_stream(DriverCall call, CUstream stream) const {
    if (is_default_stream(stream)) {
      require_context(call);
      return;
    }
    if (!streams.contains(reinterpret_cast<std::uintptr_t>(stream))) {
      fail(call, CUDA_ERROR_INVALID_HANDLE,
           "stream " + hex(stream) + " is not a live stream of this process");
    }
  }

  void check_event(DriverCall call, CUevent event) const {
    if (!events.contains(reinterpret_cast<std::uintptr_t>(event))) {
      fail(call, CUDA_ERROR_INVALID_HANDLE,
           "event " + hex(event) + " is not a live event of this process");
    }
  }

  // --- pools ---

  void check_pool(DriverCall call, CUmemoryPool pool) const {
    if (!pools.contains(reinterpret_cast<std::uintptr_t>(pool))) {
      fail(call, CUDA_ERROR_INVALID_HANDLE,
           "memory pool " + hex(pool) + " is not a live pool of this process");
    }
  }

  // Releases everything this process holds in the context of `device` (cuDevicePrimaryCtxReset,
  // and the end of the process).
  void release_device(int device) {
    for (auto it = mappings.begin(); it != mappings.end();) {
      auto next = std::next(it);
      if (it->second.context_device == device) release_mapping(it);
      it = next;
    }
    for (auto it = host_allocations.begin(); it != host_allocations.end();) {
      auto next = std::next(it);
      if (it->second.device == device) free_host(it);
      it = next;
    }
    std::erase_if(registrations,
                  [device](const auto& entry) { return entry.second.device == device; });
    auto on_device = [device](const auto& entry) { return entry.second == device; };
    std::erase_if(streams, on_device);
    std::erase_if(events, on_device);
    std::erase_if(modules, on_device);
    std::erase_if(pools, on_device);
  }

  FakeSystem::Impl& system;
  const std::uint64_t serial;
  std::vector<int> retains;  // primary context retain counts, per device
  std::map<CUdeviceptr, Mapping> mappings;
  std::map<std::uintptr_t, HostAllocation> host_allocations;
  std::map<std::uintptr_t, Registration> registrations;
  std::unordered_map<std::uintptr_t, int> streams;  // handle -> device
  std::unordered_map<std::uintptr_t, int> events;
  std::unordered_map<std::uintptr_t, int> modules;
  std::unordered_map<std::uintptr_t, int> pools;
  std::array<std::size_t, kDriverCallCount> calls{};
  std::vector<Fault> faults;
  std::size_t invalid_frees = 0;
  std::size_t invalid_accesses = 0;
};

using Call = DriverCall;

// --- construction ------------------------------------------------------------------------------

FakeDriver::FakeDriver(std::shared_ptr<FakeSystem> system)
    : system_(system ? std::move(system)
                     : throw InvalidArgumentError("FakeDriver needs a FakeSystem, got null")),
      process_(std::make_unique<Process>(system_->impl())) {}

FakeDriver::FakeDriver(FakeSystemConfig config)
    : FakeDriver(std::make_shared<FakeSystem>(std::move(config))) {}

FakeDriver::~FakeDriver() {
  {
    std::lock_guard lock(system_->impl().mutex);
    for (int device = 0; device < process_->device_count(); ++device) {
      process_->release_device(device);
    }
  }
  t_current_context.erase(process_->serial);
}

std::shared_ptr<FakeDriver> FakeDriver::spawn_process() const {
  return std::make_shared<FakeDriver>(system_);
}

// --- what this process holds -------------------------------------------------------------------

std::vector<AddressRange> FakeDriver::live_allocations() const {
  std::lock_guard lock(system_->impl().mutex);
  std::vector<AddressRange> ranges;
  for (const auto& [base, mapping] : process_->mappings) {
    if (!mapping.imported) ranges.push_back(AddressRange{base, mapping.size});
  }
  return ranges;
}

std::size_t FakeDriver::device_bytes_in_use() const {
  std::lock_guard lock(system_->impl().mutex);
  std::size_t total = 0;
  for (const auto& entry : process_->mappings) {
    if (!entry.second.imported) total += entry.second.size;
  }
  return total;
}

std::size_t FakeDriver::host_allocation_count() const {
  std::lock_guard lock(system_->impl().mutex);
  return process_->host_allocations.size();
}

std::size_t FakeDriver::host_registration_count() const {
  std::lock_guard lock(system_->impl().mutex);
  return process_->registrations.size();
}

std::size_t FakeDriver::ipc_mapping_count() const {
  std::lock_guard lock(system_->impl().mutex);
  return static_cast<std::size_t>(
      std::count_if(process_->mappings.begin(), process_->mappings.end(),
                    [](const auto& entry) { return entry.second.imported; }));
}

std::size_t FakeDriver::stream_count() const {
  std::lock_guard lock(system_->impl().mutex);
  return process_->streams.size();
}

std::size_t FakeDriver::event_count() const {
  std::lock_guard lock(system_->impl().mutex);
  return process_->events.size();
}

std::size_t FakeDriver::module_count() const {
  std::lock_guard lock(system_->impl().mutex);
  return process_->modules.size();
}

std::size_t FakeDriver::pool_count() const {
  std::lock_guard lock(system_->impl().mutex);
  return process_->pools.size();
}

std::size_t FakeDriver::invalid_frees() const {
  std::lock_guard lock(system_->impl().mutex);
  return process_->invalid_frees;
}

std::size_t FakeDriver::invalid_accesses() const {
  std::lock_guard lock(system_->impl().mutex);
  return process_->invalid_accesses;
}

std::optional<unsigned> FakeDriver::host_allocation_flags(const void* pointer) const {
  std::lock_guard lock(system_->impl().mutex);
  auto it = process_->host_allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
  if (it == process_->host_allocations.end()) return std::nullopt;
  return it->second.flags;
}

std::optional<unsigned> FakeDriver::host_registration_flags(const void* pointer) const {
  std::lock_guard lock(system_->impl().mutex);
  auto it = process_->registrations.find(reinterpret_cast<std::uintptr_t>(pointer));
  if (it == process_->registrations.end()) return std::nullopt;
  return it->second.flags;
}

int FakeDriver::primary_ctx_retain_count(int device) const {
  std::lock_guard lock(system_->impl().mutex);
  if (device < 0 || device >= process_->device_count()) {
    throw InvalidArgumentError("FakeDriver::primary_ctx_retain_count: no device " +
                               std::to_string(device));
  }
  return process_->retains[static_cast<std::size_t>(device)];
}

// --- call counting and fault injection ---------------------------------------------------------

std::size_t FakeDriver::call_count(DriverCall call) const {
  if (call == DriverCall::kCount) {
    throw InvalidArgumentError("FakeDriver::call_count: DriverCall::kCount is not a call");
  }
  std::lock_guard lock(system_->impl().mutex);
  return process_->calls[static_cast<std::size_t>(call)];
}

void FakeDriver::reset_call_counts() {
  std::lock_guard lock(system_->impl().mutex);
  process_->calls.fill(0);
}

void FakeDriver::fail_call(DriverCall call, CUresult result, std::size_t nth, std::size_t times) {
  if (call == DriverCall::kCount) {
    throw InvalidArgumentError("FakeDriver::fail_call: DriverCall::kCount is not a call");
  }
  if (result == CUDA_SUCCESS) {
    throw InvalidArgumentError(
        "FakeDriver::fail_call: the injected result must be an error, got "
        "CUDA_SUCCESS");
  }
  if (nth == 0 || times == 0) {
    throw InvalidArgumentError(
        "FakeDriver::fail_call: nth and times count from 1 (nth = 1 fails the very next call)");
  }
  std::lock_guard lock(system_->impl().mutex);
  process_->faults.push_back(Process::Fault{call, result, nth - 1, times});
}

void FakeDriver::clear_faults() {
  std::lock_guard lock(system_->impl().mutex);
  process_->faults.clear();
}

// --- driver and devices ------------------------------------------------------------------------

int FakeDriver::driver_get_version() {
  auto lock = process_->enter(Call::cuDriverGetVersion);
  return system_->impl().config.driver_version;
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
  const FakeSystem::Impl::Device& state = process_->device_state(device);
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
  return device != peer && system_->impl().config.peer_access;
}

// --- contexts ----------------------------------------------------------------------------------

CUcontext FakeDriver::primary_ctx_retain(int device) {
  auto lock = process_->enter(Call::cuDevicePrimaryCtxRetain);
  process_->check_device(Call::cuDevicePrimaryCtxRetain, device);
  ++process_->retains[static_cast<std::size_t>(device)];
  return reinterpret_cast<CUcontext>(kPrimaryContextBase + static_cast<std::uintptr_t>(device));
}

void FakeDriver::primary_ctx_release(int device) {
  auto lock = process_->enter(Call::cuDevicePrimaryCtxRelease);
  process_->check_device(Call::cuDevicePrimaryCtxRelease, device);
  int& retains = process_->retains[static_cast<std::size_t>(device)];
  if (retains == 0) {
    Process::fail(Call::cuDevicePrimaryCtxRelease, CUDA_ERROR_INVALID_CONTEXT,
                  "the primary context of device " + std::to_string(device) +
                      " is not retained (more releases than retains)");
  }
  --retains;
}

void FakeDriver::primary_ctx_reset(int device) {
  auto lock = process_->enter(Call::cuDevicePrimaryCtxReset);
  process_->check_device(Call::cuDevicePrimaryCtxReset, device);
  process_->release_device(device);
}

CUcontext FakeDriver::ctx_get_current() {
  auto lock = process_->enter(Call::cuCtxGetCurrent);
  return process_->current_context();
}

void FakeDriver::ctx_set_current(CUcontext context) {
  auto lock = process_->enter(Call::cuCtxSetCurrent);
  if (context == nullptr) {
    t_current_context.erase(process_->serial);
    return;
  }
  if (!process_->context_device(context)) {
    Process::fail(Call::cuCtxSetCurrent, CUDA_ERROR_INVALID_CONTEXT,
                  hex(context) +
                      " is not a context of this process (use the handle that "
                      "cuDevicePrimaryCtxRetain returned)");
  }
  t_current_context[process_->serial] = context;
}

int FakeDriver::ctx_get_device() {
  auto lock = process_->enter(Call::cuCtxGetDevice);
  return process_->require_context(Call::cuCtxGetDevice);
}

void FakeDriver::ctx_synchronize() {
  auto lock = process_->enter(Call::cuCtxSynchronize);
  process_->require_context(Call::cuCtxSynchronize);
}

// --- device memory -----------------------------------------------------------------------------

CUdeviceptr FakeDriver::mem_alloc(std::size_t bytesize) {
  auto lock = process_->enter(Call::cuMemAlloc);
  const int device = process_->require_context(Call::cuMemAlloc);
  if (bytesize == 0) {
    Process::fail(Call::cuMemAlloc, CUDA_ERROR_INVALID_VALUE,
                  "bytesize is 0 (cuMemAlloc rejects empty allocations)");
  }
  return process_->allocate(Call::cuMemAlloc, device, bytesize, BlockKind::device);
}

void FakeDriver::mem_free(CUdeviceptr pointer) {
  // No context needed: the driver finds the allocation's own context (probed).
  auto lock = process_->enter(Call::cuMemFree);
  process_->free_device(Call::cuMemFree, pointer);
}

CUdeviceptr FakeDriver::mem_alloc_managed(std::size_t bytesize, unsigned flags) {
  auto lock = process_->enter(Call::cuMemAllocManaged);
  const int device = process_->require_context(Call::cuMemAllocManaged);
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
    Process::fail(
        Call::cuMemAllocManaged, CUDA_ERROR_INVALID_VALUE,
        "flags must be CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST, got " + std::to_string(flags));
  }
  if (bytesize == 0) {
    Process::fail(Call::cuMemAllocManaged, CUDA_ERROR_INVALID_VALUE,
                  "bytesize is 0 (cuMemAllocManaged rejects empty allocations)");
  }
  return process_->allocate(Call::cuMemAllocManaged, device, bytesize, BlockKind::managed);
}

MemoryInfo FakeDriver::mem_get_info() {
  auto lock = process_->enter(Call::cuMemGetInfo);
  const int device = process_->require_context(Call::cuMemGetInfo);
  const FakeSystem::Impl::Device& state = process_->device_state(device);
  return MemoryInfo{state.config.capacity - state.bytes_in_use, state.config.capacity};
}

AddressRange FakeDriver::mem_get_address_range(CUdeviceptr pointer) {
  auto lock = process_->enter(Call::cuMemGetAddressRange);
  process_->require_context(Call::cuMemGetAddressRange);
  auto& mappings = process_->mappings;
  auto device = find_containing(mappings, pointer, [](const auto& m) { return m.size; });
  if (device != mappings.end()) return AddressRange{device->first, device->second.size};
  // Mapped host memory has a device address too (UVA): its whole allocation or registration.
  auto& host = process_->host_allocations;
  auto allocated = find_containing(host, pointer, [](const auto& h) { return h.size; });
  if (allocated != host.end() && (allocated->second.flags & CU_MEMHOSTALLOC_DEVICEMAP)) {
    return AddressRange{allocated->first, allocated->second.size};
  }
  auto& registrations = process_->registrations;
  auto registered = find_containing(registrations, pointer, [](const auto& r) { return r.size; });
  if (registered != registrations.end() &&
      (registered->second.flags & CU_MEMHOSTREGISTER_DEVICEMAP)) {
    return AddressRange{registered->first, registered->second.size};
  }
  // CUDA_ERROR_NOT_FOUND is what the real driver answers (documented, and probed) for an
  // address outside every allocation, including one byte past the end.
  Process::fail(Call::cuMemGetAddressRange, CUDA_ERROR_NOT_FOUND,
                hex(pointer) +
                    " is not inside any device allocation or mapped host range of "
                    "this process");
}

// --- host memory -------------------------------------------------------------------------------

void* FakeDriver::mem_host_alloc(std::size_t bytesize, unsigned flags) {
  auto lock = process_->enter(Call::cuMemHostAlloc);
  const int device = process_->require_context(Call::cuMemHostAlloc);
  if ((flags & ~kHostAllocFlags) != 0) {
    Process::fail(Call::cuMemHostAlloc, CUDA_ERROR_INVALID_VALUE,
                  "unknown flags " + hex(flags & ~kHostAllocFlags) +
                      " (known: CU_MEMHOSTALLOC_PORTABLE, _DEVICEMAP, _WRITECOMBINED)");
  }
  if ((flags & CU_MEMHOSTALLOC_DEVICEMAP) &&
      !process_->device_state(device).config.can_map_host_memory) {
    Process::fail(Call::cuMemHostAlloc, CUDA_ERROR_NOT_SUPPORTED,
                  "CU_MEMHOSTALLOC_DEVICEMAP on fake device " + std::to_string(device) +
                      ", which cannot map host memory (CAN_MAP_HOST_MEMORY is 0)");
  }
  if (bytesize > kMaxHostAllocation) {
    Process::fail(Call::cuMemHostAlloc, CUDA_ERROR_OUT_OF_MEMORY,
                  std::to_string(bytesize) + " bytes of page-locked host memory requested");
  }
  // Size 0 succeeds, as on the real driver; it still gets a page of its own.
  const std::size_t page = page_size();
  const std::size_t length = std::max<std::size_t>(1, (bytesize + page - 1) / page) * page;
  void* memory =
      ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    Process::fail(Call::cuMemHostAlloc, CUDA_ERROR_OUT_OF_MEMORY,
                  "the host refused " + std::to_string(length) + " bytes");
  }
  process_->host_allocations.emplace(reinterpret_cast<std::uintptr_t>(memory),
                                     Process::HostAllocation{bytesize, length, flags, device});
  return memory;
}

void FakeDriver::mem_free_host(void* pointer) {
  auto lock = process_->enter(Call::cuMemFreeHost);
  auto it = process_->host_allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
  if (it == process_->host_allocations.end()) {
    process_->invalid_free(Call::cuMemFreeHost, CUDA_ERROR_INVALID_VALUE,
                           hex(pointer) +
                               " is not a live cuMemHostAlloc allocation of this "
                               "process (freed twice, or never allocated)");
  }
  process_->free_host(it);
}

void FakeDriver::mem_host_register(void* pointer, std::size_t bytesize, unsigned flags) {
  auto lock = process_->enter(Call::cuMemHostRegister);
  const int device = process_->require_context(Call::cuMemHostRegister);
  const auto start = reinterpret_cast<std::uintptr_t>(pointer);
  if (pointer == nullptr || bytesize == 0) {
    Process::fail(Call::cuMemHostRegister, CUDA_ERROR_INVALID_VALUE,
                  pointer == nullptr ? "pointer is null" : "bytesize is 0");
  }
  if (bytesize > UINTPTR_MAX - start) {
    Process::fail(Call::cuMemHostRegister, CUDA_ERROR_INVALID_VALUE,
                  "the range [" + hex(pointer) + ", +" + std::to_string(bytesize) +
                      ") wraps around the address space");
  }
  if ((flags & ~kHostRegisterFlags) != 0) {
    Process::fail(Call::cuMemHostRegister, CUDA_ERROR_INVALID_VALUE,
                  "unknown flags " + hex(flags & ~kHostRegisterFlags));
  }
  if ((flags & CU_MEMHOSTREGISTER_DEVICEMAP) &&
      !process_->device_state(device).config.can_map_host_memory) {
    Process::fail(Call::cuMemHostRegister, CUDA_ERROR_NOT_SUPPORTED,
                  "CU_MEMHOSTREGISTER_DEVICEMAP on fake device " + std::to_string(device) +
                      ", which cannot map host memory (CAN_MAP_HOST_MEMORY is 0)");
  }
  // Overlap is decided on bytes, as the real driver does: two registrations of disjoint bytes
  // in one page both succeed, any shared byte fails (probed).
  if (process_->overlaps_locked(start, bytesize)) {
    Process::fail(Call::cuMemHostRegister, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                  "[" + hex(pointer) + ", +" + std::to_string(bytesize) +
                      ") overlaps memory that is already page-locked (registered or from "
                      "cuMemHostAlloc); unregister it first");
  }
  process_->registrations.emplace(start, Process::Registration{bytesize, flags, device});
}

void FakeDriver::mem_host_unregister(void* pointer) {
  auto lock = process_->enter(Call::cuMemHostUnregister);
  auto& registrations = process_->registrations;
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  auto it = registrations.find(address);
  if (it != registrations.end()) {
    registrations.erase(it);
    return;
  }
  auto inside = find_containing(registrations, address, [](const auto& r) { return r.size; });
  if (inside != registrations.end()) {
    process_->invalid_free(Call::cuMemHostUnregister, CUDA_ERROR_INVALID_VALUE,
                           hex(pointer) + " lies inside the registration at " + hex(inside->first) +
                               "; unregister with the registered address");
  }
  process_->invalid_free(Call::cuMemHostUnregister, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
                         hex(pointer) +
                             " is not registered in this process (unregistered "
                             "twice, or never registered)");
}

CUdeviceptr FakeDriver::mem_host_get_device_pointer(void* pointer, unsigned flags) {
  auto lock = process_->enter(Call::cuMemHostGetDevicePointer);
  process_->require_context(Call::cuMemHostGetDevicePointer);
  if (flags != 0) {
    Process::fail(Call::cuMemHostGetDevicePointer, CUDA_ERROR_INVALID_VALUE,
                  "flags must be 0, got " + std::to_string(flags));
  }
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  if (pointer == nullptr || !process_->is_mapped_host(address, 1)) {
    // Stricter than a UVA driver, which maps all page-locked memory: the flag must be asked for.
    Process::fail(Call::cuMemHostGetDevicePointer, CUDA_ERROR_INVALID_VALUE,
                  hex(pointer) +
                      " is not in host memory allocated with "
                      "CU_MEMHOSTALLOC_DEVICEMAP or registered with "
                      "CU_MEMHOSTREGISTER_DEVICEMAP in this process");
  }
  // UVA: the device address of mapped host memory is the host address.
  return static_cast<CUdeviceptr>(address);
}

// --- IPC ---------------------------------------------------------------------------------------

CUipcMemHandle FakeDriver::ipc_get_mem_handle(CUdeviceptr pointer) {
  auto lock = process_->enter(Call::cuIpcGetMemHandle);
  process_->require_context(Call::cuIpcGetMemHandle);
  auto& mappings = process_->mappings;
  auto it = find_containing(mappings, pointer, [](const auto& m) { return m.size; });
  if (it == mappings.end() || it->second.imported) {
    Process::fail(Call::cuIpcGetMemHandle, CUDA_ERROR_INVALID_VALUE,
                  hex(pointer) + (it == mappings.end()
                                      ? " is not inside a live cuMemAlloc allocation of this "
                                        "process"
                                      : " is inside an IPC mapping; only the exporting process "
                                        "can make a handle"));
  }
  const Block& block = system_->impl().blocks.at(it->second.block);
  if (block.kind != BlockKind::device) {
    Process::fail(
        Call::cuIpcGetMemHandle, CUDA_ERROR_INVALID_VALUE,
        hex(pointer) + " is " +
            (block.kind == BlockKind::pool ? "stream-ordered pool memory" : "managed memory") +
            "; cuIpcGetMemHandle only exports cuMemAlloc allocations");
  }
  CUipcMemHandle handle{};
  std::memcpy(handle.reserved, kIpcMagic.data(), kIpcMagic.size());
  const std::uint64_t system_serial = system_->impl().serial;
  const std::uint64_t block_id = it->second.block;
  const auto device = static_cast<std::int32_t>(block.device);
  put(handle, kIpcSystemOffset, system_serial);
  put(handle, kIpcBlockOffset, block_id);
  put(handle, kIpcDeviceOffset, device);
  put(handle, kIpcCheckOffset, ipc_check(system_serial, block_id, device));
  return handle;
}

CUdeviceptr FakeDriver::ipc_open_mem_handle(const CUipcMemHandle& handle, unsigned flags) {
  constexpr Call call = Call::cuIpcOpenMemHandle;
  auto lock = process_->enter(call);
  const int device = process_->require_context(call);
  if (flags != 0 && flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) {
    Process::fail(
        call, CUDA_ERROR_INVALID_VALUE,
        "flags must be 0 or CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, got " + std::to_string(flags));
  }
  FakeSystem::Impl& system = system_->impl();
  const auto system_serial = get<std::uint64_t>(handle, kIpcSystemOffset);
  const auto block_id = get<std::uint64_t>(handle, kIpcBlockOffset);
  const auto block_device = get<std::int32_t>(handle, kIpcDeviceOffset);
  if (std::memcmp(handle.reserved, kIpcMagic.data(), kIpcMagic.size()) != 0 ||
      !padding_is_zero(handle) ||
      get<std::uint64_t>(handle, kIpcCheckOffset) !=
          ipc_check(system_serial, block_id, block_device)) {
    Process::fail(call, CUDA_ERROR_INVALID_VALUE,
                  "the handle's bytes are not a handle made by cuIpcGetMemHandle (corrupted or "
                  "truncated)");
  }
  if (system_serial != system.serial) {
    Process::fail(call, CUDA_ERROR_INVALID_VALUE,
                  "the handle comes from another FakeSystem (another simulated machine)");
  }
  auto block = system.blocks.find(block_id);
  if (block == system.blocks.end() || !block->second.owner_live) {
    Process::fail(call, CUDA_ERROR_INVALID_VALUE,
                  "the exporting process has freed the allocation this handle names");
  }
  if (block->second.owner == process_->serial) {
    Process::fail(call, CUDA_ERROR_INVALID_CONTEXT,
                  "the handle was exported by this process; CUDA opens a handle only in "
                  "another process (use the original pointer here)");
  }
  for (const auto& [base, mapping] : process_->mappings) {
    if (mapping.imported && mapping.block == block_id) {
      Process::fail(call, CUDA_ERROR_ALREADY_MAPPED,
                    "this process has the allocation mapped at " + hex(base) +
                        " already; close that mapping first");
    }
  }
  if (block->second.device != device && !system.config.peer_access) {
    Process::fail(call, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
                  "the allocation lives on fake device " + std::to_string(block->second.device) +
                      " and the current context is on device " + std::to_string(device) +
                      ", which has no peer access to it");
  }
  const std::optional<CUdeviceptr> base = system.reserve_addresses(block->second);
  if (!base) {
    Process::fail(call, CUDA_ERROR_OUT_OF_MEMORY, "no free device address range for the mapping");
  }
  ++block->second.importers;
  process_->mappings.emplace(*base, Process::Mapping{block_id, block->second.size, true, device});
  return *base;
}

void FakeDriver::ipc_close_mem_handle(CUdeviceptr pointer) {
  auto lock = process_->enter(Call::cuIpcCloseMemHandle);
  auto it = process_->mappings.find(pointer);
  if (it == process_->mappings.end() || !it->second.imported) {
    process_->invalid_free(Call::cuIpcCloseMemHandle, CUDA_ERROR_INVALID_VALUE,
                           hex(pointer) +
                               " is not the base of an open cuIpcOpenMemHandle "
                               "mapping of this process");
  }
  process_->release_mapping(it);
}

// --- copies ------------------------------------------------------------------------------------

void FakeDriver::memcpy_htod(CUdeviceptr dst, const void* src, std::size_t bytes) {
  auto lock = process_->enter(Call::cuMemcpyHtoD);
  process_->require_context(Call::cuMemcpyHtoD);
  if (bytes == 0) return;  // an empty copy touches nothing, wherever it points (probed)
  if (src == nullptr) {
    Process::fail(Call::cuMemcpyHtoD, CUDA_ERROR_INVALID_VALUE, "the host source is null");
  }
  std::memcpy(process_->resolve_or_fail(Call::cuMemcpyHtoD, dst, bytes, "destination"), src, bytes);
}

void FakeDriver::memcpy_dtoh(void* dst, CUdeviceptr src, std::size_t bytes) {
  auto lock = process_->enter(Call::cuMemcpyDtoH);
  process_->require_context(Call::cuMemcpyDtoH);
  if (bytes == 0) return;
  if (dst == nullptr) {
    Process::fail(Call::cuMemcpyDtoH, CUDA_ERROR_INVALID_VALUE, "the host destination is null");
  }
  std::memcpy(dst, process_->resolve_or_fail(Call::cuMemcpyDtoH, src, bytes, "source"), bytes);
}

void FakeDriver::memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) {
  auto lock = process_->enter(Call::cuMemcpyDtoD);
  process_->require_context(Call::cuMemcpyDtoD);
  if (bytes == 0) return;
  std::byte* to = process_->resolve_or_fail(Call::cuMemcpyDtoD, dst, bytes, "destination");
  const std::byte* from = process_->resolve_or_fail(Call::cuMemcpyDtoD, src, bytes, "source");
  std::memmove(to, from, bytes);
}

void FakeDriver::memset_d8(CUdeviceptr dst, unsigned char value, std::size_t count) {
  auto lock = process_->enter(Call::cuMemsetD8);
  process_->require_context(Call::cuMemsetD8);
  if (count == 0) return;
  std::memset(process_->resolve_or_fail(Call::cuMemsetD8, dst, count, "destination"), value, count);
}

// --- streams, events, modules ------------------------------------------------------------------

CUstream FakeDriver::stream_create(unsigned flags) {
  auto lock = process_->enter(Call::cuStreamCreate);
  const int device = process_->require_context(Call::cuStreamCreate);
  if (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING) {
    Process::fail(
        Call::cuStreamCreate, CUDA_ERROR_INVALID_VALUE,
        "flags must be CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING, got " + std::to_string(flags));
  }
  auto stream = process_->make_handle<CUstream>(HandleTag::stream);
  process_->streams.emplace(reinterpret_cast<std::uintptr_t>(stream), device);
  return stream;
}

void FakeDriver::stream_destroy(CUstream stream) {
  auto lock = process_->enter(Call::cuStreamDestroy);
  if (process_->streams.erase(reinterpret_cast<std::uintptr_t>(stream)) == 0) {
    process_->invalid_free(Call::cuStreamDestroy, CUDA_ERROR_INVALID_HANDLE,
                           hex(stream) +
                               " is not a live stream of this process (destroyed "
                               "twice, or never created)");
  }
}

void FakeDriver::stream_synchronize(CUstream stream) {
  auto lock = process_->enter(Call::cuStreamSynchronize);
  process_->check_stream(Call::cuStreamSynchronize, stream);
}

CUevent FakeDriver::event_create(unsigned flags) {
  auto lock = process_->enter(Call::cuEventCreate);
  const int device = process_->require_context(Call::cuEventCreate);
  if ((flags & ~kEventFlags) != 0) {
    Process::fail(Call::cuEventCreate, CUDA_ERROR_INVALID_VALUE,
                  "unknown flags " + hex(flags & ~kEventFlags));
  }
  auto event = process_->make_handle<CUevent>(HandleTag::event);
  process_->events.emplace(reinterpret_cast<std::uintptr_t>(event), device);
  return event;
}

void FakeDriver::event_destroy(CUevent event) {
  auto lock = process_->enter(Call::cuEventDestroy);
  if (process_->events.erase(reinterpret_cast<std::uintptr_t>(event)) == 0) {
    process_->invalid_free(Call::cuEventDestroy, CUDA_ERROR_INVALID_HANDLE,
                           hex(event) +
                               " is not a live event of this process (destroyed "
                               "twice, or never created)");
  }
}

void FakeDriver::event_record(CUevent event, CUstream stream) {
  auto lock = process_->enter(Call::cuEventRecord);
  process_->check_event(Call::cuEventRecord, event);
  process_->check_stream(Call::cuEventRecord, stream);
}

void FakeDriver::event_synchronize(CUevent event) {
  auto lock = process_->enter(Call::cuEventSynchronize);
  process_->check_event(Call::cuEventSynchronize, event);
}

CUmodule FakeDriver::module_load_data(const void* image) {
  auto lock = process_->enter(Call::cuModuleLoadData);
  const int device = process_->require_context(Call::cuModuleLoadData);
  if (image == nullptr) {
    Process::fail(Call::cuModuleLoadData, CUDA_ERROR_INVALID_VALUE, "image is null");
  }
  auto module = process_->make_handle<CUmodule>(HandleTag::module);
  process_->modules.emplace(reinterpret_cast<std::uintptr_t>(module), device);
  return module;
}

void FakeDriver::module_unload(CUmodule module) {
  auto lock = process_->enter(Call::cuModuleUnload);
  if (process_->modules.erase(reinterpret_cast<std::uintptr_t>(module)) == 0) {
    process_->invalid_free(Call::cuModuleUnload, CUDA_ERROR_INVALID_HANDLE,
                           hex(module) +
                               " is not a loaded module of this process (unloaded "
                               "twice, or never loaded)");
  }
}

// --- stream-ordered allocator ------------------------------------------------------------------

CUmemoryPool FakeDriver::mem_pool_create(const CUmemPoolProps& props) {
  // No context needed: the pool's device is in `props` (probed).
  auto lock = process_->enter(Call::cuMemPoolCreate);
  if (props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    Process::fail(Call::cuMemPoolCreate, CUDA_ERROR_INVALID_VALUE,
                  "the fake supports pools of CU_MEM_ALLOCATION_TYPE_PINNED memory at a "
                  "CU_MEM_LOCATION_TYPE_DEVICE location");
  }
  process_->check_device(Call::cuMemPoolCreate, props.location.id);
  auto pool = process_->make_handle<CUmemoryPool>(HandleTag::pool);
  process_->pools.emplace(reinterpret_cast<std::uintptr_t>(pool), props.location.id);
  return pool;
}

void FakeDriver::mem_pool_destroy(CUmemoryPool pool) {
  // Allocations still outstanding stay valid until freed, as in CUDA.
  auto lock = process_->enter(Call::cuMemPoolDestroy);
  if (process_->pools.erase(reinterpret_cast<std::uintptr_t>(pool)) == 0) {
    process_->invalid_free(Call::cuMemPoolDestroy, CUDA_ERROR_INVALID_HANDLE,
                           hex(pool) +
                               " is not a live memory pool of this process (destroyed "
                               "twice, or never created)");
  }
}

void FakeDriver::mem_pool_set_attribute(CUmemoryPool pool, CUmemPool_attribute attribute,
                                        void* value) {
  auto lock = process_->enter(Call::cuMemPoolSetAttribute);
  process_->check_pool(Call::cuMemPoolSetAttribute, pool);
  if (value == nullptr) {
    Process::fail(Call::cuMemPoolSetAttribute, CUDA_ERROR_INVALID_VALUE, "value is null");
  }
  switch (attribute) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      return;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: {
      std::uint64_t reset_to = 0;
      std::memcpy(&reset_to, value, sizeof reset_to);
      if (reset_to == 0) return;
      Process::fail(Call::cuMemPoolSetAttribute, CUDA_ERROR_INVALID_VALUE,
                    "a high-water mark can only be reset to 0");
    }
    default:
      Process::fail(Call::cuMemPoolSetAttribute, CUDA_ERROR_INVALID_VALUE,
                    "attribute " + std::to_string(static_cast<int>(attribute)) + " cannot be set");
  }
}

void FakeDriver::mem_pool_trim_to(CUmemoryPool pool, std::size_t /*min_bytes_to_keep*/) {
  // The fake keeps no cached memory in a pool: freed blocks go straight back to the device.
  auto lock = process_->enter(Call::cuMemPoolTrimTo);
  process_->check_pool(Call::cuMemPoolTrimTo, pool);
}

CUdeviceptr FakeDriver::mem_alloc_from_pool_async(std::size_t bytesize, CUmemoryPool pool,
                                                  CUstream stream) {
  constexpr Call call = Call::cuMemAllocFromPoolAsync;
  auto lock = process_->enter(call);
  process_->require_context(call);
  process_->check_pool(call, pool);
  process_->check_stream(call, stream);
  if (bytesize == 0) return 0;  // succeeds with nothing allocated, as on the real driver
  const int device = process_->pools.at(reinterpret_cast<std::uintptr_t>(pool));
  return process_->allocate(call, device, bytesize, BlockKind::pool);
}

void FakeDriver::mem_free_async(CUdeviceptr pointer, CUstream stream) {
  // Like cuMemFree, any live allocation of this process is accepted: the real driver frees
  // cuMemAlloc memory through cuMemFreeAsync too (probed). The fake frees at once.
  auto lock = process_->enter(Call::cuMemFreeAsync);
  process_->check_stream(Call::cuMemFreeAsync, stream);
  process_->free_device(Call::cuMemFreeAsync, pointer);
}

}  // namespace emm
