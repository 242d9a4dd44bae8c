// gpu_support.hpp — shared by the real-GPU suites: skip cleanly where no GPU can be used.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "emm/cuda_driver.hpp"

namespace emm::test {

// Why the GPU backend cannot run here, or "" (asked once per process).
inline const std::string& gpu_unavailable_reason() {
  static const std::string reason = CudaDriver::unavailable_reason();
  return reason;
}

}  // namespace emm::test

// In a TEST body: skips with "no GPU: <reason>" unless the real driver loads, then declares
// `std::shared_ptr<emm::CudaDriver> name`.
#define EMM_REQUIRE_GPU(name)                                            \
  if (!::emm::test::gpu_unavailable_reason().empty()) {                  \
    GTEST_SKIP() << "no GPU: " << ::emm::test::gpu_unavailable_reason(); \
  }                                                                      \
  std::shared_ptr<::emm::CudaDriver> name = ::emm::CudaDriver::load()
