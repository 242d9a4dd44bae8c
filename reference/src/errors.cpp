#include "emm/errors.hpp"

#include <string>

namespace emm {
namespace {

std::string driver_error_message(CUresult code, const std::string& call,
                                 const std::string& detail) {
  std::string message = call + " failed: " + std::string(cuda_result_name(code));
  if (code == CUDA_ERROR_OUT_OF_MEMORY) {
    message += " (the device has not enough free memory for this request)";
  }
  if (!detail.empty()) message += ": " + detail;
  return message;
}

}  // namespace

CudaDriverError::CudaDriverError(CUresult code, std::string call, std::string detail)
    : Error(driver_error_message(code, call, detail)), code_(code), call_(std::move(call)) {}

InterfaceVersionError::InterfaceVersionError(int version)
    : Error("EMM Plugin interface has version " + std::to_string(version) + " - version " +
            std::to_string(1) + " required"),
      version_(version) {}

PluginLoadError::PluginLoadError(std::string value, std::string cause)
    : Error("Failed to use memory manager from " + value + ": " + cause),
      value_(std::move(value)),
      cause_(std::move(cause)) {}

IpcRangeError::IpcRangeError(std::size_t offset, std::size_t size, std::size_t mapped_size)
    : Error("IpcHandle names bytes [" + std::to_string(offset) + ", " +
            std::to_string(offset + size) + ") of the exported block, but the driver mapped " +
            "bytes [0, " + std::to_string(mapped_size) +
            ") of it: the handle's size or offset does not belong to the block its 64-byte "
            "driver handle names; pass the exact bytes IpcHandle::serialize() produced in the "
            "exporting process"),
      offset_(offset),
      size_(size),
      mapped_size_(mapped_size) {}

}  // namespace emm
