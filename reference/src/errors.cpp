#include "emm/errors.hpp"

#include <string>

namespace emm {
namespace {

std::string driver_error_message(CUresult code, const std::string& call, const std::string& detail) {
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

}  // namespace emm
