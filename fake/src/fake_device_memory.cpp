// FakeDriver: device memory — cuMemAlloc, cuMemAllocManaged, cuMemFree, cuMemGetInfo,
// cuMemGetAddressRange, cuPointerGetAttribute (which also answers for page-locked host memory) —
// and the synchronous copies and memsets that reach it. Each allocation
// is a Block of the system (fake_system_state.hpp) mapped at a simulated address of this
// process; an IPC mapping is another mapping of the same block (fake_ipc.cpp). Managed memory
// is mapped at its backing's host address instead, so the host reads and writes it in place,
// as on a unified-addressing GPU.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include "emm/pointer_attribute.hpp"
#include "fake_process.hpp"

namespace emm {

using Call = DriverCall;
using fake_detail::BlockKind;
using fake_detail::contains;
using fake_detail::find_containing;
using fake_detail::hex;

// --- the process's side --------------------------------------------------------------------------

void FakeDriver::Process::out_of_memory(DriverCall call, int device, std::size_t bytes) {
  const fake_detail::SystemState::Device& state = device_state(device);
  fail(call, CUDA_ERROR_OUT_OF_MEMORY,
       std::to_string(bytes) + " bytes requested on fake device " + std::to_string(device) +
           ", which has " + std::to_string(state.config.capacity - state.bytes_in_use) + " of " +
           std::to_string(state.config.capacity) + " bytes free");
}

CUdeviceptr FakeDriver::Process::allocate(DriverCall call, int device, std::size_t bytes,
                                          BlockKind kind) {
  const std::optional<std::uint64_t> id = system.create_block(device, bytes, kind, serial);
  if (!id) out_of_memory(call, device, bytes);
  const std::optional<CUdeviceptr> base = system.reserve_addresses(system.blocks.at(*id));
  if (!base) {
    system.drop_block_holder(*id, true);
    out_of_memory(call, device, bytes);
  }
  forget_destroyed(*base, bytes);
  mappings.emplace(*base, Mapping{*id, bytes, false, device});
  return *base;
}

void FakeDriver::Process::release_mapping(std::map<CUdeviceptr, Mapping>::iterator it) {
  const Mapping mapping = it->second;
  system.release_addresses(system.blocks.at(mapping.block), it->first);
  mappings.erase(it);
  system.drop_block_holder(mapping.block, !mapping.imported);
}

void FakeDriver::Process::free_device(DriverCall call, CUdeviceptr pointer) {
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
  const std::string note = destroyed_note(pointer);
  invalid_free(call, CUDA_ERROR_INVALID_VALUE,
               hex(pointer) + " is not a live device allocation of this process" +
                   (note.empty() ? " (freed twice, or never allocated)" : note));
}

auto FakeDriver::Process::locate(std::uintptr_t address) const -> std::optional<Located> {
  auto device = find_containing(mappings, address, [](const Mapping& m) { return m.size; });
  if (device != mappings.end()) {
    const Mapping& mapping = device->second;
    const fake_detail::Block& block = system.blocks.at(mapping.block);
    Located::Kind kind = Located::Kind::ipc_mapping;
    if (!mapping.imported) {
      kind = block.kind == BlockKind::managed ? Located::Kind::managed
             : block.kind == BlockKind::pool  ? Located::Kind::pool
                                              : Located::Kind::device;
    }
    return Located{kind, device->first, mapping.size, block.device};
  }
  // A cuMemHostAlloc(0) block still has its first byte.
  auto allocated = find_containing(host_allocations, address, [](const HostAllocation& h) {
    return std::max<std::size_t>(h.size, 1);
  });
  if (allocated != host_allocations.end()) {
    return Located{Located::Kind::host_allocation, allocated->first, allocated->second.size,
                   allocated->second.device};
  }
  // Only the registered bytes, not the rest of their pages (fake_driver.hpp).
  auto registered =
      find_containing(registrations, address, [](const Registration& r) { return r.size; });
  if (registered != registrations.end()) {
    return Located{Located::Kind::registration, registered->first, registered->second.size,
                   registered->second.device};
  }
  return std::nullopt;
}

std::byte* FakeDriver::Process::resolve(CUdeviceptr address, std::size_t bytes) {
  auto device = find_containing(mappings, address, [](const Mapping& m) { return m.size; });
  if (device != mappings.end()) {
    if (!contains(device->first, device->second.size, address, bytes)) return nullptr;
    return system.blocks.at(device->second.block).backing.data() + (address - device->first);
  }
  if (is_mapped_host(address, bytes)) return reinterpret_cast<std::byte*>(address);
  return nullptr;
}

std::byte* FakeDriver::Process::resolve_or_fail(DriverCall call, CUdeviceptr address,
                                                std::size_t bytes, const char* role) {
  if (std::byte* bytes_at = resolve(address, bytes)) return bytes_at;
  ++invalid_accesses;
  fail(call, CUDA_ERROR_INVALID_VALUE,
       std::string(role) + " range [" + hex(address) + ", +" + std::to_string(bytes) +
           ") is not inside one live allocation, IPC mapping or mapped host range of this "
           "process");
}

// --- allocation ----------------------------------------------------------------------------------

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
  // No context needed: the driver finds the allocation's own context (probed). But a current
  // context that was destroyed is refused first (seen on an H100, driver 580).
  auto lock = process_->enter(Call::cuMemFree);
  if (const std::optional<int> current = process_->context_device(process_->current_context());
      current && !process_->context_live[static_cast<std::size_t>(*current)]) {
    process_->invalid_free(Call::cuMemFree, CUDA_ERROR_CONTEXT_IS_DESTROYED,
                           "the current context, the primary context of device " +
                               std::to_string(*current) +
                               ", was destroyed; cuMemFree refuses every pointer while it is "
                               "current (free memory before its context goes)" +
                               process_->destroyed_note(pointer));
  }
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
  const CUdeviceptr base =
      process_->allocate(Call::cuMemAllocManaged, device, bytesize, BlockKind::managed);
  process_->system.blocks.at(process_->mappings.at(base).block).attach_flags = flags;
  return base;
}

std::optional<unsigned> FakeDriver::managed_attach_flags(CUdeviceptr pointer) const {
  std::lock_guard lock(process_->system.mutex);
  auto& mappings = process_->mappings;
  auto it = find_containing(mappings, pointer, [](const auto& m) { return m.size; });
  if (it == mappings.end() || it->second.imported) return std::nullopt;
  const fake_detail::Block& block = process_->system.blocks.at(it->second.block);
  if (block.kind != BlockKind::managed) return std::nullopt;
  return block.attach_flags;
}

std::optional<int> FakeDriver::allocation_device(CUdeviceptr pointer) const {
  std::lock_guard lock(process_->system.mutex);
  auto& mappings = process_->mappings;
  auto it = find_containing(mappings, pointer, [](const auto& m) { return m.size; });
  if (it == mappings.end() || it->second.imported) return std::nullopt;
  return process_->system.blocks.at(it->second.block).device;
}

std::optional<AddressRange> FakeDriver::live_allocation_containing(CUdeviceptr pointer) const {
  std::lock_guard lock(process_->system.mutex);
  auto& mappings = process_->mappings;
  auto it = mappings.upper_bound(pointer);
  if (it == mappings.begin()) return std::nullopt;
  --it;
  const std::size_t extent = std::max<std::size_t>(it->second.size, 1);
  if (it->second.imported || pointer - it->first >= extent) return std::nullopt;
  return AddressRange{it->first, it->second.size};
}

MemoryInfo FakeDriver::mem_get_info() {
  auto lock = process_->enter(Call::cuMemGetInfo);
  const int device = process_->require_context(Call::cuMemGetInfo);
  const fake_detail::SystemState::Device& state = process_->device_state(device);
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

std::uint64_t FakeDriver::pointer_get_attribute(CUpointer_attribute attribute,
                                                CUdeviceptr pointer) {
  // Checked before the call is entered: CudaDriver refuses it without asking the driver.
  const PointerAttribute& entry = supported_pointer_attribute(attribute, "FakeDriver");
  constexpr Call call = Call::cuPointerGetAttribute;
  auto lock = process_->enter(call);
  // cuda.h: only the device pointer depends on the current context.
  if (attribute == CU_POINTER_ATTRIBUTE_DEVICE_POINTER) process_->require_context(call);
  const std::optional<Process::Located> found = process_->locate(pointer);
  if (!found) {
    Process::fail(call, CUDA_ERROR_INVALID_VALUE,
                  std::string(entry.name) + " of " + hex(pointer) +
                      ": CUDA did not allocate, map or register that address in this process "
                      "(pageable host memory, or memory already freed)" +
                      process_->destroyed_note(pointer));
  }
  using Kind = Process::Located::Kind;
  const bool host = found->kind == Kind::host_allocation || found->kind == Kind::registration;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      return host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      // UVA: every page-locked host address is its own device address too.
      return pointer;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (host || found->kind == Kind::managed) return pointer;
      Process::fail(call, CUDA_ERROR_INVALID_VALUE,
                    std::string(entry.name) + " of " + hex(pointer) +
                        ": device memory has no host address (only managed and page-locked "
                        "host memory have one)");
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      return found->kind == Kind::managed ? 1 : 0;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      return static_cast<std::uint64_t>(found->device);
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      return found->base;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      return found->size;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      return 1;
    default:
      break;
  }
  Process::fail(call, CUDA_ERROR_INVALID_VALUE,
                std::string(entry.name) + " has no answer on the fake driver");
}

// --- copies --------------------------------------------------------------------------------------

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

}  // namespace emm
