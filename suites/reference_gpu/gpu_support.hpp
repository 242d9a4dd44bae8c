// gpu_support.hpp — shared by the real-GPU suites: skip cleanly where no GPU can be used.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "emm/cuda_driver.hpp"

// In a TEST body: skips with "no GPU: <reason>" unless the process's driver (CudaDriver::probe())
// is usable, then declares `std::shared_ptr<emm::CudaDriver> name`.
#define EMM_REQUIRE_GPU(name)                                                  \
  const ::emm::CudaDriverProbe& name##_probe = ::emm::CudaDriver::probe();     \
  if (!name##_probe.driver) GTEST_SKIP() << "no GPU: " << name##_probe.reason; \
  std::shared_ptr<::emm::CudaDriver> name = name##_probe.driver
