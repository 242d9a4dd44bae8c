#include "emm/ipc_handle.hpp"

#include <array>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <utility>

#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/runtime.hpp"

namespace emm {
namespace {

// size and offset travel as u64 and come back as std::size_t.
static_assert(sizeof(std::size_t) == sizeof(std::uint64_t), "the format assumes a 64-bit size_t");

// Serialized layout (format version 1, little-endian, 104 bytes):
//   0 magic "EMMI" | 4 u16 version | 6 u16 flags | 8 u64 size | 16 u64 offset
//   24 i32 pci_domain | 28 i32 pci_bus | 32 i32 pci_device | 36 handle[64] | 100 u32 crc32
constexpr std::array<std::byte, 4> kMagic{std::byte{'E'}, std::byte{'M'}, std::byte{'M'},
                                          std::byte{'I'}};
constexpr std::uint16_t kFlagSourceInfo = 1;
constexpr std::size_t kCrcOffset = 100;

std::uint32_t crc32(std::span<const std::byte> bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::byte b : bytes) {
    crc ^= static_cast<std::uint32_t>(b);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

template <class T>
void put(std::vector<std::byte>& out, std::size_t at, T value) {
  using U = std::make_unsigned_t<T>;
  auto u = static_cast<U>(value);
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[at + i] = static_cast<std::byte>((u >> (8 * i)) & 0xFF);
  }
}

template <class T>
T get(std::span<const std::byte> in, std::size_t at) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    u = static_cast<U>(u | (static_cast<U>(std::to_integer<unsigned>(in[at + i])) << (8 * i)));
  }
  return static_cast<T>(u);
}

IpcFormatError format_error(const std::string& what) {
  return IpcFormatError("cannot deserialize IpcHandle: " + what +
                        "; pass the exact bytes IpcHandle::serialize() produced");
}

// The rules on the fields themselves, shared by serialize() and deserialize() so that one never
// writes what the other refuses (IPC-4). Empty when the fields are acceptable.
std::string field_problem(std::uint64_t size, std::uint64_t offset,
                          const std::optional<DeviceIdentity>& source) {
  if (size == 0) return "size is 0";
  if (size > std::numeric_limits<std::uint64_t>::max() - offset) {
    return "offset + size overflows";
  }
  if (source &&
      (source->pci_domain_id < 0 || source->pci_bus_id < 0 || source->pci_device_id < 0)) {
    return "negative PCI id in source_info (" + std::to_string(source->pci_domain_id) + ":" +
           std::to_string(source->pci_bus_id) + ":" + std::to_string(source->pci_device_id) + ")";
  }
  return {};
}

}  // namespace

IpcHandle::IpcHandle(std::shared_ptr<MemoryPointer> base, const CUipcMemHandle& handle,
                     std::size_t size, std::optional<DeviceIdentity> source_info,
                     std::size_t offset)
    : base_(std::move(base)),
      handle_(handle),
      size_(size),
      source_info_(source_info),
      offset_(offset) {}

IpcHandle::~IpcHandle() {
  // Destroying an open handle closes it, so a mapping is never leaked (Numba leaves that to
  // the caller).
  if (state_ == State::direct) {
    try {
      close();
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("IpcHandle destruction", error.what());
    }
  }
}

IpcHandle::IpcHandle(IpcHandle&& other) noexcept
    : base_(std::move(other.base_)),
      handle_(other.handle_),
      size_(other.size_),
      source_info_(other.source_info_),
      offset_(other.offset_),
      state_(std::exchange(other.state_, State::closed)),
      opened_in_(std::exchange(other.opened_in_, nullptr)),
      opened_base_(std::exchange(other.opened_base_, 0)) {}

IpcHandle& IpcHandle::operator=(IpcHandle&& other) noexcept {
  if (this != &other) {
    this->~IpcHandle();
    new (this) IpcHandle(std::move(other));
  }
  return *this;
}

bool IpcHandle::is_open() const noexcept { return state_ != State::closed; }

bool IpcHandle::is_staged() const noexcept { return state_ == State::staged; }

std::shared_ptr<MemoryPointer> IpcHandle::open(Context& context) {
  // IPC-3: the open state machine.
  if (base_) throw IpcStateError("opening IpcHandle from original process");
  if (state_ != State::closed) throw IpcStateError("IpcHandle is already opened");
  bool direct = !source_info_ || *source_info_ == context.device_identity();
  if (!direct) {
    Driver& driver = context.driver();
    const int count = driver.device_get_count();
    for (int device = 0; device < count; ++device) {
      if (driver.device_identity(device) == *source_info_) {
        direct = driver.device_can_access_peer(context.device(), device);
        break;
      }
    }
  }
  // A failed open leaves the handle closed (Numba leaves it marked open).
  return direct ? open_direct(context) : open_staged(context);
}

std::shared_ptr<MemoryPointer> IpcHandle::open_direct(Context& context) {
  // Context::open_ipc_handle checks [offset, offset + size) against the mapped block.
  std::shared_ptr<MemoryPointer> mapping = context.open_ipc_handle(handle_, offset_, size_);
  const CUdeviceptr mapped = mapping->device_pointer();
  std::shared_ptr<MemoryPointer> view;
  try {
    view = mapping->view(offset_, offset_ + size_);
  } catch (...) {
    context.driver().ipc_close_mem_handle(mapped);
    throw;
  }
  state_ = State::direct;
  opened_in_ = &context;
  opened_base_ = mapped;
  return view;
}

std::shared_ptr<MemoryPointer> IpcHandle::open_staged(Context& context) {
  // Spec 2.8: the source device's context maps the block, the copy is allocated through the
  // *importing* context's plugin (IPC-5), and the source mapping is closed again.
  Context& source = context.runtime().context_for_identity(*source_info_);
  std::shared_ptr<MemoryPointer> mapping = source.open_ipc_handle(handle_, offset_, size_);
  const CUdeviceptr mapped = mapping->device_pointer();
  // cuIpcCloseMemHandle needs no current context: a failure to switch never skips the close
  // (the mapping would leak), and is reported after it.
  auto close_source = [&] {
    std::exception_ptr switch_error;
    try {
      source.make_current();
    } catch (...) {
      switch_error = std::current_exception();
    }
    source.driver().ipc_close_mem_handle(mapped);
    if (switch_error) std::rethrow_exception(switch_error);
  };
  std::shared_ptr<MemoryPointer> copy;
  try {
    copy = context.memalloc(size_);
    context.make_current();
    context.driver().memcpy_dtod(copy->device_pointer(), mapped + offset_, size_);
  } catch (...) {
    try {
      close_source();
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("IpcHandle::open (staged)", error.what());
    }
    throw;
  }
  close_source();
  context.make_current();
  state_ = State::staged;
  opened_in_ = &context;
  return copy;  // not owned by the handle (NBEP 7: staged IPC takes no ownership)
}

void IpcHandle::close() {
  if (state_ == State::closed) throw IpcStateError("IpcHandle not opened");
  if (state_ == State::direct) {
    opened_in_->make_current();
    opened_in_->driver().ipc_close_mem_handle(opened_base_);
  }
  // Closing a staged handle is a no-op (IPC-5).
  state_ = State::closed;
  opened_in_ = nullptr;
  opened_base_ = 0;
}

std::vector<std::byte> IpcHandle::serialize() const {
  if (const std::string problem = field_problem(size_, offset_, source_info_); !problem.empty()) {
    throw IpcFormatError("cannot serialize IpcHandle: " + problem +
                         "; IpcHandle::deserialize() would refuse it. A handle names at least "
                         "one byte of its block, and source_info is the exporting device's "
                         "identity (Driver::device_identity) or absent");
  }
  std::vector<std::byte> out(kSerializedSize);
  std::memcpy(out.data(), kMagic.data(), kMagic.size());
  put<std::uint16_t>(out, 4, kFormatVersion);
  put<std::uint16_t>(out, 6, source_info_ ? kFlagSourceInfo : 0);
  put<std::uint64_t>(out, 8, size_);
  put<std::uint64_t>(out, 16, offset_);
  if (source_info_) {
    put<std::int32_t>(out, 24, source_info_->pci_domain_id);
    put<std::int32_t>(out, 28, source_info_->pci_bus_id);
    put<std::int32_t>(out, 32, source_info_->pci_device_id);
  }
  std::memcpy(out.data() + 36, handle_.reserved, sizeof handle_.reserved);
  put<std::uint32_t>(out, kCrcOffset, crc32(std::span(out).first(kCrcOffset)));
  return out;
}

IpcHandle IpcHandle::deserialize(std::span<const std::byte> bytes) {
  // IPC-4: untrusted input — every field is validated before use.
  if (bytes.size() < kSerializedSize) {
    throw format_error("truncated input (" + std::to_string(bytes.size()) + " bytes, expected " +
                       std::to_string(kSerializedSize) + ")");
  }
  if (bytes.size() > kSerializedSize) {
    throw format_error("oversized input (" + std::to_string(bytes.size()) + " bytes, expected " +
                       std::to_string(kSerializedSize) + ")");
  }
  if (std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    throw format_error("bad magic (not an emmkit IPC handle)");
  }
  const auto version = get<std::uint16_t>(bytes, 4);
  if (version != kFormatVersion) {
    throw format_error("format version " + std::to_string(version) +
                       " is not supported (this kit reads version " +
                       std::to_string(kFormatVersion) + ")");
  }
  if (get<std::uint32_t>(bytes, kCrcOffset) != crc32(bytes.first(kCrcOffset))) {
    throw format_error("checksum mismatch (the bytes were corrupted)");
  }
  const auto flags = get<std::uint16_t>(bytes, 6);
  if ((flags & ~kFlagSourceInfo) != 0) {
    std::array<char, 16> hex{};
    std::snprintf(hex.data(), hex.size(), "0x%04x", static_cast<unsigned>(flags));
    throw format_error(std::string("unknown flags ") + hex.data());
  }
  const auto size = get<std::uint64_t>(bytes, 8);
  const auto offset = get<std::uint64_t>(bytes, 16);
  std::optional<DeviceIdentity> source;
  const DeviceIdentity ids{get<std::int32_t>(bytes, 24), get<std::int32_t>(bytes, 28),
                           get<std::int32_t>(bytes, 32)};
  if (flags & kFlagSourceInfo) {
    source = ids;
  } else if (ids != DeviceIdentity{}) {
    throw format_error("source_info fields set without the source_info flag");
  }
  if (const std::string problem = field_problem(size, offset, source); !problem.empty()) {
    throw format_error(problem);
  }
  CUipcMemHandle handle{};
  std::memcpy(handle.reserved, bytes.data() + 36, sizeof handle.reserved);
  return IpcHandle(nullptr, handle, static_cast<std::size_t>(size), source,
                   static_cast<std::size_t>(offset));
}

}  // namespace emm
