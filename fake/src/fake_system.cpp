// FakeSystem and the state its processes share (fake_system_state.hpp): device memory as host
// memory behind simulated address ranges.
#include "emm/fake/fake_system.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <string>
#include <utility>

#include "emm/errors.hpp"
#include "fake_system_state.hpp"

namespace emm::fake_detail {
namespace {

// Blocks from this size on are anonymous mappings (lazily backed); smaller ones use calloc.
// From 64 KiB on, calloc's memset and its page faults cost more than a mapping of which the
// checks touch a few windows (a certification of a pass-through plugin: 3.1 s -> 2.6 s).
constexpr std::size_t kMappedBackingThreshold = std::size_t{64} << 10;
// The largest capacity a device may declare: its 1 TiB address range must also hold the
// mappings other processes open through IPC.
constexpr std::size_t kMaxCapacity = std::size_t{1} << 38;

std::atomic<std::uint64_t> g_next_system_serial{1};

std::size_t round_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool is_power_of_two(std::size_t value) { return value != 0 && (value & (value - 1)) == 0; }

std::vector<SystemState::Device> make_devices(const FakeSystemConfig& config) {
  std::vector<SystemState::Device> devices;
  devices.reserve(config.devices.size());
  for (std::size_t index = 0; index < config.devices.size(); ++index) {
    const FakeDeviceConfig& device = config.devices[index];
    const std::string which = "FakeSystemConfig::devices[" + std::to_string(index) + "]";
    if (device.capacity == 0 || device.capacity > kMaxCapacity) {
      throw InvalidArgumentError(which + ".capacity must be in [1, 2^38] bytes, got " +
                                 std::to_string(device.capacity));
    }
    if (!is_power_of_two(device.alignment) || device.alignment > (std::size_t{1} << 30)) {
      throw InvalidArgumentError(which + ".alignment must be a power of two up to 1 GiB, got " +
                                 std::to_string(device.alignment));
    }
    DeviceIdentity identity = device.identity;
    if (identity == DeviceIdentity{}) identity.pci_bus_id = 1 + static_cast<int>(index);
    const CUdeviceptr base = kDeviceAddressBase + (CUdeviceptr{index} << kDeviceAddressShift);
    devices.push_back(SystemState::Device{
        device, identity, AddressSpace(base, std::size_t{1} << kDeviceAddressShift), 0, 0});
  }
  return devices;
}

}  // namespace

// --- Backing -------------------------------------------------------------------------------------

std::optional<Backing> Backing::allocate(std::size_t bytes, std::size_t address_alignment) {
  if (address_alignment != 0) return map_aligned(bytes, address_alignment);
  // Large blocks are mapped, lazily backed in 4 KiB pages: a certification touches a few
  // windows of most large blocks (the engine's patterns), and advising transparent huge pages
  // made each touched window cost a cleared 2 MiB page (twice as slow overall, measured).
  if (bytes >= kMappedBackingThreshold) {
    void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) return std::nullopt;
    return Backing(static_cast<std::byte*>(memory), bytes, true);
  }
  void* memory = std::calloc(1, bytes);
  if (memory == nullptr) return std::nullopt;
  return Backing(static_cast<std::byte*>(memory), bytes, false);
}

std::optional<Backing> Backing::map_aligned(std::size_t bytes, std::size_t alignment) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t length = round_up(bytes, page);
  // Over-reserve by the alignment, then give back the unaligned head and the unused tail.
  const std::size_t slack = alignment > page ? alignment : 0;
  void* memory = ::mmap(nullptr, length + slack, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) return std::nullopt;
  auto* start = static_cast<std::byte*>(memory);
  const auto address = reinterpret_cast<std::uintptr_t>(start);
  const std::size_t head = round_up(address, std::max(alignment, page)) - address;
  if (head > 0) ::munmap(start, head);
  if (slack > head) ::munmap(start + head + length, slack - head);
  return Backing(start + head, length, true);
}

Backing::Backing(Backing&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      length_(std::exchange(other.length_, 0)),
      mapped_(other.mapped_) {}

Backing& Backing::operator=(Backing&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    length_ = std::exchange(other.length_, 0);
    mapped_ = other.mapped_;
  }
  return *this;
}

Backing::~Backing() { release(); }

void Backing::release() noexcept {
  if (data_ == nullptr) return;
  if (mapped_) {
    ::munmap(data_, length_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
}

// --- AddressSpace --------------------------------------------------------------------------------

AddressSpace::AddressSpace(CUdeviceptr base, std::size_t span) { free_.emplace(base, span); }

std::optional<CUdeviceptr> AddressSpace::reserve(std::size_t bytes, std::size_t alignment) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const CUdeviceptr start = it->first;
    const std::size_t length = it->second;
    const CUdeviceptr aligned = round_up(start, alignment);
    const std::size_t padding = aligned - start;
    if (padding > length || length - padding < bytes) continue;
    free_.erase(it);
    if (padding > 0) free_.emplace(start, padding);
    const std::size_t tail = length - padding - bytes;
    if (tail > 0) free_.emplace(aligned + bytes, tail);
    return aligned;
  }
  return std::nullopt;
}

void AddressSpace::release(CUdeviceptr address, std::size_t bytes) {
  CUdeviceptr start = address;
  std::size_t length = bytes;
  auto next = free_.lower_bound(address);
  if (next != free_.end() && next->first == address + bytes) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == address) {
      start = previous->first;
      length += previous->second;
      free_.erase(previous);
    }
  }
  free_.emplace(start, length);
}

// --- SystemState ---------------------------------------------------------------------------------

SystemState::SystemState(FakeSystemConfig system_config)
    : config(std::move(system_config)),
      serial(g_next_system_serial.fetch_add(1)),
      devices(make_devices(config)) {}

std::optional<std::uint64_t> SystemState::create_block(int device, std::size_t bytes,
                                                       BlockKind kind, std::uint64_t owner) {
  Device& state = devices.at(static_cast<std::size_t>(device));
  const std::size_t alignment = state.config.alignment;
  // Compared before rounding, so SIZE_MAX cannot wrap around to a small request.
  const std::size_t free_bytes = state.config.capacity - state.bytes_in_use;
  if (bytes > free_bytes) return std::nullopt;
  const std::size_t rounded = round_up(bytes, alignment);
  if (rounded > free_bytes) return std::nullopt;
  // Managed memory is used by the host at its device address: align that address as the
  // device aligns its pointers.
  std::optional<Backing> backing =
      Backing::allocate(rounded, kind == BlockKind::managed ? alignment : 0);
  if (!backing) return std::nullopt;
  const std::uint64_t id = next_block++;
  Block block;
  block.device = device;
  block.size = bytes;
  block.rounded = rounded;
  block.kind = kind;
  block.backing = std::move(*backing);
  block.owner = owner;
  blocks.emplace(id, std::move(block));
  state.bytes_in_use += rounded;
  ++state.allocation_count;
  return id;
}

std::optional<CUdeviceptr> SystemState::reserve_addresses(const Block& block) {
  if (block.kind == BlockKind::managed) {
    return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(block.backing.data()));
  }
  Device& state = devices.at(static_cast<std::size_t>(block.device));
  return state.addresses.reserve(block.rounded, state.config.alignment);
}

void SystemState::release_addresses(const Block& block, CUdeviceptr base) {
  if (block.kind == BlockKind::managed) return;  // its backing's addresses, released with it
  devices.at(static_cast<std::size_t>(block.device)).addresses.release(base, block.rounded);
}

void SystemState::drop_block_holder(std::uint64_t id, bool owner) {
  auto it = blocks.find(id);
  if (it == blocks.end()) return;
  Block& block = it->second;
  if (owner) {
    block.owner_live = false;
  } else if (block.importers > 0) {
    --block.importers;
  }
  if (block.owner_live || block.importers > 0) return;
  Device& state = devices.at(static_cast<std::size_t>(block.device));
  state.bytes_in_use -= block.rounded;
  --state.allocation_count;
  blocks.erase(it);
}

}  // namespace emm::fake_detail

namespace emm {

// --- FakeSystem ----------------------------------------------------------------------------------

FakeSystem::FakeSystem(FakeSystemConfig config)
    : state_(std::make_unique<fake_detail::SystemState>(std::move(config))) {}

FakeSystem::~FakeSystem() = default;

const FakeSystemConfig& FakeSystem::config() const noexcept { return state_->config; }

int FakeSystem::device_count() const noexcept { return static_cast<int>(state_->devices.size()); }

namespace {

void check_device(const FakeSystem& system, int device) {
  if (device < 0 || device >= system.device_count()) {
    throw InvalidArgumentError("FakeSystem has no device " + std::to_string(device) + " (it has " +
                               std::to_string(system.device_count()) + ")");
  }
}

}  // namespace

std::size_t FakeSystem::capacity(int device) const {
  check_device(*this, device);
  return state_->devices[static_cast<std::size_t>(device)].config.capacity;
}

std::size_t FakeSystem::bytes_in_use(int device) const {
  check_device(*this, device);
  std::lock_guard lock(state_->mutex);
  return state_->devices[static_cast<std::size_t>(device)].bytes_in_use;
}

std::size_t FakeSystem::allocation_count(int device) const {
  check_device(*this, device);
  std::lock_guard lock(state_->mutex);
  return state_->devices[static_cast<std::size_t>(device)].allocation_count;
}

}  // namespace emm
