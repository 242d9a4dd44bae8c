// emm/errors.hpp — every error a user of the kit can meet, typed.
//
// All derive from emm::Error (a std::runtime_error), and every message says what went wrong
// and what to do about it. Catch the specific type; tests assert type *and* message. (A
// check's verdicts, emm::conformance::ClauseFailure and ClauseNotSupported, are no errors and
// deliberately not emm::Error: see clause_run.hpp.)
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "emm/cuda_api.hpp"

namespace emm {

// Base of every error the kit throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A CUDA driver call failed. Carries the CUresult, its name and the call, e.g.
// "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY". Plugins throw it (or a subclass) for
// out-of-memory (ALLOC-3).
class CudaDriverError : public Error {
 public:
  CudaDriverError(CUresult code, std::string call, std::string detail = {});
  CUresult code() const noexcept { return code_; }
  const std::string& call() const noexcept { return call_; }
  std::string_view code_name() const noexcept { return cuda_result_name(code_); }

 private:
  CUresult code_;
  std::string call_;
};

// No CUDA driver (libcuda.so.1) or no GPU on this machine. Says to use the fake backend.
class DriverUnavailableError : public Error {
 public:
  using Error::Error;
};

// A plugin does not provide an optional operation (get_memory_info, get_ipc_handle).
// Derives from std::runtime_error through emm::Error, so it satisfies both the NBEP 7
// docstring ("raise NotImplementedError") and Numba's user guide ("raise a RuntimeError").
class NotImplementedError : public Error {
 public:
  using Error::Error;
};

// REG-1: set_memory_manager was given a plugin whose interface_version() is not 1.
// Message: "EMM Plugin interface has version N - version 1 required".
class InterfaceVersionError : public Error {
 public:
  explicit InterfaceVersionError(int version);
  int version() const noexcept { return version_; }

 private:
  int version_;
};

// REG-3/REG-6: EMM_CUDA_MEMORY_MANAGER names something that cannot be used.
// Message: "Failed to use memory manager from <value>: <cause>".
class PluginLoadError : public Error {
 public:
  PluginLoadError(std::string value, std::string cause);
  const std::string& value() const noexcept { return value_; }
  const std::string& cause() const noexcept { return cause_; }

 private:
  std::string value_;
  std::string cause_;
};

// A caller passed an argument the EMM system cannot accept (null pin pointer, a view out of
// bounds, ...). Nothing was allocated or changed.
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

// Misuse of a pointer's lifetime: "Freeing dead memory" (second free()).
class PointerLifetimeError : public Error {
 public:
  using Error::Error;
};

// IPC handle state machine misuse (IPC-3): "opening IpcHandle from original process",
// "IpcHandle is already opened", "IpcHandle not opened".
class IpcStateError : public Error {
 public:
  using Error::Error;
};

// Serialized IPC bytes are truncated, oversized or corrupted, or a handle cannot be written in
// the serialized form (IPC-4: serialize() refuses exactly what deserialize() would refuse).
class IpcFormatError : public Error {
 public:
  using Error::Error;
};

// An IPC handle's view [offset, offset + size) does not lie inside the block the driver mapped
// for its 64-byte handle (the size or offset was changed after get_ipc_handle(), or names
// another block). Nothing stays mapped and the handle stays closed (IPC-3). Carries both
// ranges, relative to the mapped block's start (offset + size must not overflow).
class IpcRangeError : public Error {
 public:
  IpcRangeError(std::size_t offset, std::size_t size, std::size_t mapped_size);
  std::size_t offset() const noexcept { return offset_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t mapped_size() const noexcept { return mapped_size_; }

 private:
  std::size_t offset_;
  std::size_t size_;
  std::size_t mapped_size_;
};

// The platform or device cannot do what was asked (no CUDA IPC, cannot map host memory).
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

}  // namespace emm
