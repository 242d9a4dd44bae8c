// FakeDriver: page-locked host memory — cuMemHostAlloc, cuMemFreeHost, cuMemHostGetFlags,
// cuMemHostRegister, cuMemHostUnregister — and the device addresses of mapped host memory
// (cuMemHostGetDevicePointer). A cuMemHostAlloc block is an anonymous mapping of whole pages;
// its device address is its host address (UVA).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "fake_process.hpp"

namespace emm {
namespace {

// Upper bound on one page-locked host request; beyond it the fake answers out-of-memory
// without asking the host.
constexpr std::size_t kMaxHostAllocation = std::size_t{1} << 40;

constexpr unsigned kHostAllocFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned kHostRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                        CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

using Call = DriverCall;
using fake_detail::contains;
using fake_detail::find_containing;
using fake_detail::hex;

// --- the process's side --------------------------------------------------------------------------

auto FakeDriver::Process::mapped_host_allocation(std::uintptr_t address, std::size_t bytes) const
    -> const HostAllocation* {
  auto it = host_allocations.upper_bound(address);
  if (it == host_allocations.begin()) return nullptr;
  --it;
  if (!(it->second.flags & CU_MEMHOSTALLOC_DEVICEMAP)) return nullptr;
  return contains(it->first, it->second.size, address, bytes) ? &it->second : nullptr;
}

auto FakeDriver::Process::mapped_registration(std::uintptr_t address, std::size_t bytes) const
    -> const Registration* {
  auto it = registrations.upper_bound(address);
  if (it == registrations.begin()) return nullptr;
  --it;
  if (!(it->second.flags & CU_MEMHOSTREGISTER_DEVICEMAP)) return nullptr;
  return contains(it->first, it->second.size, address, bytes) ? &it->second : nullptr;
}

bool FakeDriver::Process::is_mapped_host(std::uintptr_t address, std::size_t bytes) const {
  return mapped_host_allocation(address, bytes) != nullptr ||
         mapped_registration(address, bytes) != nullptr;
}

FakeDriver::Process::HostOverlap FakeDriver::Process::overlaps_locked(std::uintptr_t start,
                                                                      std::size_t size) const {
  const std::uintptr_t end = start + size;
  auto allocated = host_allocations.lower_bound(end);
  if (allocated != host_allocations.begin()) {
    --allocated;
    if (allocated->first + allocated->second.length > start) return HostOverlap::allocation;
  }
  auto registered = registrations.lower_bound(end);
  if (registered != registrations.begin()) {
    --registered;
    if (registered->first + registered->second.size > start) return HostOverlap::registration;
  }
  return HostOverlap::none;
}

void FakeDriver::Process::free_host(std::map<std::uintptr_t, HostAllocation>::iterator it) {
  ::munmap(reinterpret_cast<void*>(it->first), it->second.length);
  system.page_locked_in_use -= it->second.length;
  host_allocations.erase(it);
}

// --- entry points --------------------------------------------------------------------------------

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
  const std::size_t capacity = process_->system.config.page_locked_capacity;
  if (length > capacity || process_->system.page_locked_in_use > capacity - length) {
    Process::fail(Call::cuMemHostAlloc, CUDA_ERROR_OUT_OF_MEMORY,
                  std::to_string(bytesize) + " bytes of page-locked host memory requested, " +
                      std::to_string(process_->system.page_locked_in_use) + " of " +
                      std::to_string(capacity) +
                      " in use (FakeSystemConfig::page_locked_capacity)");
  }
  // MAP_NORESERVE: a block commits only the pages written, so a fill of the capacity is cheap.
  void* memory = ::mmap(nullptr, length, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    Process::fail(Call::cuMemHostAlloc, CUDA_ERROR_OUT_OF_MEMORY,
                  "the host refused " + std::to_string(length) + " bytes");
  }
  process_->system.page_locked_in_use += length;
  process_->forget_destroyed(reinterpret_cast<std::uintptr_t>(memory), length);
  process_->host_allocations.emplace(reinterpret_cast<std::uintptr_t>(memory),
                                     Process::HostAllocation{bytesize, length, flags, device});
  return memory;
}

void FakeDriver::mem_free_host(void* pointer) {
  auto lock = process_->enter(Call::cuMemFreeHost);
  auto it = process_->host_allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
  if (it == process_->host_allocations.end()) {
    const std::string note = process_->destroyed_note(reinterpret_cast<std::uintptr_t>(pointer));
    process_->invalid_free(Call::cuMemFreeHost, CUDA_ERROR_INVALID_VALUE,
                           hex(pointer) +
                               " is not a live cuMemHostAlloc allocation of this process" +
                               (note.empty() ? " (freed twice, or never allocated)" : note));
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
  // in one page both succeed, any shared byte fails (probed). Bytes of a cuMemHostAlloc block
  // are refused as an invalid value, not as already registered (seen on an H100, driver 580).
  switch (process_->overlaps_locked(start, bytesize)) {
    case Process::HostOverlap::none:
      break;
    case Process::HostOverlap::allocation:
      Process::fail(Call::cuMemHostRegister, CUDA_ERROR_INVALID_VALUE,
                    "[" + hex(pointer) + ", +" + std::to_string(bytesize) +
                        ") overlaps a cuMemHostAlloc block, which is page-locked already; "
                        "register only memory the driver did not allocate");
    case Process::HostOverlap::registration:
      Process::fail(Call::cuMemHostRegister, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                    "[" + hex(pointer) + ", +" + std::to_string(bytesize) +
                        ") overlaps memory that is already registered; unregister it first");
  }
  process_->forget_destroyed(start, bytesize);
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
  const std::string note = process_->destroyed_note(address);
  process_->invalid_free(Call::cuMemHostUnregister, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
                         hex(pointer) + " is not registered in this process" +
                             (note.empty() ? " (unregistered twice, or never registered)" : note));
}

unsigned FakeDriver::mem_host_get_flags(void* pointer) {
  auto lock = process_->enter(Call::cuMemHostGetFlags);
  const int device = process_->require_context(Call::cuMemHostGetFlags);
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  // With unified addressing every page-locked block is mapped, so the driver reports DEVICEMAP
  // whatever the caller asked for (seen on an H100, driver 580: flags 0 -> 2, 5 -> 7).
  const unsigned mapped =
      process_->device_state(device).config.can_map_host_memory ? CU_MEMHOSTALLOC_DEVICEMAP : 0U;
  // Any byte of a live block answers (a cuMemHostAlloc(0) block: its first byte).
  auto& allocations = process_->host_allocations;
  auto it = find_containing(allocations, address,
                            [](const auto& h) { return std::max<std::size_t>(h.size, 1); });
  if (it != allocations.end()) return it->second.flags | mapped;
  // Registered memory answers too (seen on the GPU); PORTABLE and DEVICEMAP share their bits
  // with cuMemHostAlloc's flags, the other registration flags have no cuMemHostAlloc meaning.
  auto registered =
      find_containing(process_->registrations, address, [](const auto& r) { return r.size; });
  if (registered != process_->registrations.end()) {
    return (registered->second.flags &
            (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP)) |
           mapped;
  }
  Process::fail(
      Call::cuMemHostGetFlags, CUDA_ERROR_INVALID_VALUE,
      hex(pointer) +
          " is not inside a live cuMemHostAlloc allocation or registration of this process" +
          process_->destroyed_note(address));
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

}  // namespace emm
