// emm/cuda_driver.hpp — CudaDriver: the real CUDA driver, loaded at run time.
//
// load() dlopens libcuda.so.1, finds cuGetProcAddress, resolves every entry point of
// driver_calls.hpp through it, and calls cuInit(0). Nothing links libcuda at build time, so a
// kit binary starts on any machine and says why the GPU backend cannot run:
//
//   const emm::CudaDriverProbe& gpu = emm::CudaDriver::probe();  // the process's driver
//   if (!gpu.driver) std::cerr << "no GPU: " << gpu.reason << "\n";
//   auto driver = emm::CudaDriver::load();   // a driver of its own, or DriverUnavailableError
//
// probe() is the one answer to "is there a usable GPU in this process, and if not, why": it
// loads the driver on its first call and hands every caller the same driver afterwards.
//
// Ownership: a CudaDriver never unloads the library (see ~CudaDriver). The probe's result lives
// until the process ends. Thread-safety: as the CUDA driver (safe from many threads); probe()
// may be called from many threads at once.
#pragma once

#include <memory>
#include <string>

#include "emm/driver.hpp"

namespace emm {

class CudaDriver;

// What CudaDriver::probe() found.
struct CudaDriverProbe {
  std::shared_ptr<CudaDriver> driver;  // null when no GPU can be used
  std::string reason;                  // why not (a DriverUnavailableError message); "" if usable
};

class CudaDriver : public Driver {
 public:
  // Throws DriverUnavailableError: no libcuda.so.1, cuInit failure, or no device.
  static std::shared_ptr<CudaDriver> load(const char* library = "libcuda.so.1");
  // Why load(library) would fail, or "" if it would succeed (loads and initialises the driver
  // on every call; for the process's own driver ask probe()).
  static std::string unavailable_reason(const char* library = "libcuda.so.1");
  // The process's driver: load()s libcuda.so.1 on the first call (once, whichever thread comes
  // first) and checks that it reports a device; every later call returns the same result. The
  // result is never destroyed, because memory finalizers may still call the driver during
  // static destruction. A process that must fork() before initialising CUDA calls it only
  // after forking (or in the child).
  static const CudaDriverProbe& probe();

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
