// fake_detail::SystemState — the state every simulated process of one FakeSystem shares: the
// devices, their memory blocks and their simulated virtual address spaces.
//
// Private to fake/src: FakeSystem owns it (fake_system.cpp); each FakeDriver process reaches it
// through FakeSystem's friendship and keeps a reference (fake_process.hpp). Every member is
// guarded by `mutex`; the functions here expect the caller to hold it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "emm/fake/fake_system.hpp"
#include "system_mutex.hpp"

namespace emm::fake_detail {

// Host memory that stands in for device bytes. Large blocks are anonymous mappings, so a
// 64 MiB allocation costs nothing until it is written; small ones come from calloc. Managed
// memory, whose host address is also its device address, is always a mapping aligned as the
// device aligns its pointers.
class Backing {
 public:
  // Null when the host refuses the memory. `address_alignment` (a power of two, or 0 for
  // none) is the alignment data() must have.
  static std::optional<Backing> allocate(std::size_t bytes, std::size_t address_alignment = 0);
  Backing() noexcept = default;
  Backing(Backing&& other) noexcept;
  Backing& operator=(Backing&& other) noexcept;
  Backing(const Backing&) = delete;
  Backing& operator=(const Backing&) = delete;
  ~Backing();

  std::byte* data() const noexcept { return data_; }

 private:
  Backing(std::byte* data, std::size_t length, bool mapped) noexcept
      : data_(data), length_(length), mapped_(mapped) {}
  static std::optional<Backing> map_aligned(std::size_t bytes, std::size_t alignment);
  void release() noexcept;

  std::byte* data_ = nullptr;
  std::size_t length_ = 0;
  bool mapped_ = false;
};

// First-fit allocator of simulated device addresses over [base, base + span). Freed ranges
// are merged with their neighbours and handed out again, as a driver reuses addresses.
class AddressSpace {
 public:
  AddressSpace(CUdeviceptr base, std::size_t span);
  // A free range of `bytes` (a multiple of `alignment`) at an `alignment`-aligned address.
  std::optional<CUdeviceptr> reserve(std::size_t bytes, std::size_t alignment);
  void release(CUdeviceptr address, std::size_t bytes);

 private:
  std::map<CUdeviceptr, std::size_t> free_;  // start -> length, disjoint and never adjacent
};

enum class BlockKind { device, managed, pool };

// One device allocation. A managed block's addresses are its backing's host addresses (UVA), so
// the host reaches its bytes in place; other blocks get simulated device addresses. It lives while
// its owner holds it or any other process has it mapped through IPC (cuMemFree with open mappings
// defers the release, as CUDA does).
struct Block {
  int device = 0;
  std::size_t size = 0;     // as requested
  std::size_t rounded = 0;  // size rounded up to the device alignment (what it costs)
  BlockKind kind = BlockKind::device;
  unsigned attach_flags = 0;  // managed: cuMemAllocManaged's CU_MEM_ATTACH_GLOBAL or _HOST
  Backing backing;
  std::uint64_t owner = 0;  // process serial
  bool owner_live = true;
  std::size_t importers = 0;  // open IPC mappings in other processes
};

struct SystemState {
  struct Device {
    FakeDeviceConfig config;
    DeviceIdentity identity;
    AddressSpace addresses;
    std::size_t bytes_in_use = 0;
    std::size_t allocation_count = 0;
  };

  explicit SystemState(FakeSystemConfig system_config);

  // Allocates a block of `bytes` (> 0) on `device` and reserves its addresses. Null when the
  // device's free memory (or the host) cannot hold it.
  std::optional<std::uint64_t> create_block(int device, std::size_t bytes, BlockKind kind,
                                            std::uint64_t owner);
  // Addresses for a mapping of `block` (its owner's or an importer's); a managed block's own
  // host addresses.
  std::optional<CUdeviceptr> reserve_addresses(const Block& block);
  void release_addresses(const Block& block, CUdeviceptr base);
  // Drops one holder of the block (the owner or one importer); frees it with the last.
  void drop_block_holder(std::uint64_t id, bool owner);

  std::uint64_t next_handle_value() { return next_handle++; }

  FakeSystemConfig config;
  const std::uint64_t serial;  // names this system inside IPC handles
  SystemMutex mutex;           // hidden from ThreadSanitizer where the fake is not instrumented
  std::size_t page_locked_in_use = 0;  // cuMemHostAlloc lengths of every process (mutex)
  std::vector<Device> devices;
  std::unordered_map<std::uint64_t, Block> blocks;
  std::uint64_t next_block = 1;
  std::uint64_t next_handle = 1;
};

// Where the simulated address range of each device starts. Well above every user-space
// host address (x86-64 and AArch64 keep user space below 2^57), so a mapped host pointer,
// which the fake uses numerically as its own device alias (UVA), never falls inside it.
inline constexpr CUdeviceptr kDeviceAddressBase = CUdeviceptr{1} << 57;
inline constexpr int kDeviceAddressShift = 40;  // each device spans 1 TiB of addresses

}  // namespace emm::fake_detail
