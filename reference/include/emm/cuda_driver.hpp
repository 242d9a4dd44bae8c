// emm/cuda_driver.hpp — CudaDriver: the real CUDA driver, loaded at run time.
//
// load() dlopens libcuda.so.1, finds cuGetProcAddress, resolves every entry point of
// driver_calls.hpp through it, and calls cuInit(0). Nothing links libcuda at build time, so a
// kit binary starts on any machine and says why the GPU backend cannot run:
//
//   std::string why = emm::CudaDriver::unavailable_reason();   // "" when usable
//   auto driver = emm::CudaDriver::load();   // or throws DriverUnavailableError
//
// Thread-safety: as the CUDA driver (safe from many threads).
#pragma once

#include <memory>
#include <string>

#include "emm/driver.hpp"

namespace emm {

class CudaDriver : public Driver {
 public:
  // Throws DriverUnavailableError: no libcuda.so.1, cuInit failure, or no device.
  static std::shared_ptr<CudaDriver> load(const char* library = "libcuda.so.1");
  // Why load() would fail, or "" if it would succeed (loads and initialises the driver).
  static std::string unavailable_reason(const char* library = "libcuda.so.1");

  ~CudaDriver() override;

  std::string implementation_name() const override { return "cuda"; }
  EMM_DRIVER_METHODS(EMM_DRIVER_DECLARE_OVERRIDE)

  struct Api;  // the resolved entry points (cuda_driver.cpp)

 private:
  CudaDriver(void* library, std::unique_ptr<Api> api);
  void* library_;
  std::unique_ptr<Api> api_;
};

}  // namespace emm
