// emm/ipc_handle.hpp — a CUDA IPC handle with the offset and size of the exported view.
//
// A plugin's get_ipc_handle(view) fills: the 64-byte driver handle of the *allocation block*
// the view lies in, `offset` = view pointer - block base, `size` = view.size() and, optionally,
// the exporting device's PCI identity (IPC-1, IPC-2). Pools must send the offset: the driver
// handle of an interior pointer is the same as its block's.
//
// In the importing process:
//   emm::IpcHandle h = emm::IpcHandle::deserialize(bytes);   // validated, never UB (IPC-4)
//   std::shared_ptr<emm::MemoryPointer> p = h.open(context); // direct or staged (spec 2.8)
//   ... read p ...
//   h.close();
//
// open() is *direct* when there is no source_info, the device is the same, or peer access is
// possible: it maps offset + size bytes (cuIpcOpenMemHandle with LAZY_ENABLE_PEER_ACCESS) and
// returns the view at `offset`. Otherwise it is *staged*: the source device's context opens it,
// `size` bytes are allocated through the *importing* context's plugin, copied device to device,
// and the source mapping closed; the handle does not own that copy and close() is a no-op
// (IPC-5). Errors (IpcStateError, IPC-3): open in the exporting process ("opening IpcHandle
// from original process"), second open ("IpcHandle is already opened"), close without open
// ("IpcHandle not opened"). The size and offset are checked against the block the driver maps
// (cuMemGetAddressRange): a view past it is refused with IpcRangeError. A failed open leaves
// the handle closed and nothing mapped.
//
// Thread-safety: one handle must not be opened/closed from two threads at once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "emm/driver.hpp"
#include "emm/memory_pointer.hpp"

namespace emm {

class Context;

class IpcHandle {
 public:
  // Size in bytes of serialize()'s output (format version 1).
  static constexpr std::size_t kSerializedSize = 104;
  static constexpr std::uint16_t kFormatVersion = 1;

  IpcHandle(std::shared_ptr<MemoryPointer> base, const CUipcMemHandle& handle, std::size_t size,
            std::optional<DeviceIdentity> source_info = std::nullopt, std::size_t offset = 0);
  ~IpcHandle();
  IpcHandle(IpcHandle&&) noexcept;
  IpcHandle& operator=(IpcHandle&&) noexcept;
  IpcHandle(const IpcHandle&) = delete;
  IpcHandle& operator=(const IpcHandle&) = delete;

  // The exported memory in the exporting process; null after deserialize().
  const std::shared_ptr<MemoryPointer>& base() const noexcept { return base_; }
  const CUipcMemHandle& handle() const noexcept { return handle_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t offset() const noexcept { return offset_; }
  const std::optional<DeviceIdentity>& source_info() const noexcept { return source_info_; }

  std::shared_ptr<MemoryPointer> open(Context& context);
  void close();
  bool is_open() const noexcept;
  // True after a staged open (the copy belongs to the caller).
  bool is_staged() const noexcept;

  // Fixed-size little-endian record: magic "EMMI", format version, flags, size, offset,
  // source_info, the 64 handle bytes, CRC-32 of everything before it. Throws IpcFormatError
  // for fields deserialize() would refuse (size 0, offset + size overflowing, a negative PCI id
  // in source_info), so every record it writes reads back (IPC-4).
  std::vector<std::byte> serialize() const;
  // Throws IpcFormatError for truncated, oversized or corrupted input.
  static IpcHandle deserialize(std::span<const std::byte> bytes);

 private:
  std::shared_ptr<MemoryPointer> open_direct(Context& context);
  std::shared_ptr<MemoryPointer> open_staged(Context& context);

  std::shared_ptr<MemoryPointer> base_;
  CUipcMemHandle handle_{};
  std::size_t size_ = 0;
  std::optional<DeviceIdentity> source_info_;
  std::size_t offset_ = 0;

  enum class State { closed, direct, staged };
  State state_ = State::closed;
  Context* opened_in_ = nullptr;
  CUdeviceptr opened_base_ = 0;  // the mapping to close (direct open)
};

}  // namespace emm
