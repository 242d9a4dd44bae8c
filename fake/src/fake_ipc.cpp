// FakeDriver: IPC — cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle. A handle
// names the system, the block and its device, with a checksum; opening it in another process of
// the same system maps the same block (its bytes shared) at a new address of that process, once:
// further opens there count, and the mapping goes with the last close.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>

#include "fake_process.hpp"

namespace emm {
namespace {

// Layout of the 64 bytes of a fake IPC handle.
constexpr std::array<char, 8> kIpcMagic = {'E', 'M', 'M', 'F', 'A', 'K', 'E', '1'};
constexpr std::size_t kIpcSystemOffset = 8;
constexpr std::size_t kIpcBlockOffset = 16;
constexpr std::size_t kIpcDeviceOffset = 24;
constexpr std::size_t kIpcCheckOffset = 32;
constexpr std::size_t kIpcUsedBytes = 40;  // the rest, and bytes 28..31, stay zero

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

}  // namespace

using Call = DriverCall;
using fake_detail::Block;
using fake_detail::BlockKind;
using fake_detail::find_containing;
using fake_detail::hex;

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
  const Block& block = process_->system.blocks.at(it->second.block);
  if (block.kind != BlockKind::device) {
    Process::fail(
        Call::cuIpcGetMemHandle, CUDA_ERROR_INVALID_VALUE,
        hex(pointer) + " is " +
            (block.kind == BlockKind::pool ? "stream-ordered pool memory" : "managed memory") +
            "; cuIpcGetMemHandle only exports cuMemAlloc allocations");
  }
  CUipcMemHandle handle{};
  std::memcpy(handle.reserved, kIpcMagic.data(), kIpcMagic.size());
  const std::uint64_t system_serial = process_->system.serial;
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
  fake_detail::SystemState& system = process_->system;
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
  // A second open in one process maps nothing new: the CUDA 11+ driver counts the opens and
  // returns the first mapping's address; it stays mapped until it is closed as often.
  for (auto& [base, mapping] : process_->mappings) {
    if (mapping.imported && mapping.block == block_id) {
      ++mapping.opens;
      return base;
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
  process_->forget_destroyed(*base, block->second.size);
  process_->mappings.emplace(*base,
                             Process::Mapping{block_id, block->second.size, true, device, 1});
  return *base;
}

void FakeDriver::ipc_close_mem_handle(CUdeviceptr pointer) {
  auto lock = process_->enter(Call::cuIpcCloseMemHandle);
  auto it = process_->mappings.find(pointer);
  if (it == process_->mappings.end() || !it->second.imported) {
    process_->invalid_free(Call::cuIpcCloseMemHandle, CUDA_ERROR_INVALID_VALUE,
                           hex(pointer) +
                               " is not the base of an open cuIpcOpenMemHandle "
                               "mapping of this process" +
                               process_->destroyed_note(pointer));
  }
  if (--it->second.opens == 0) process_->release_mapping(it);
}
}  // namespace emm
