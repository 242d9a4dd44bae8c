// fake_test_support.hpp — helpers for the tests of the fake driver (and the mock over it).
//
// * EMM_EXPECT_DRIVER_ERROR(statement, CUDA_ERROR_X, "cuCall", HasSubstr("detail text")): from
//   <emm/conformance/testing/expect_throw.hpp> (exactly CudaDriverError with that code and call,
//   a message "cuCall failed: CUDA_ERROR_X..." containing the detail text).
// * current_process(config) / make_current(driver, device): a simulated process whose device's
//   primary context is retained and current on the calling thread, as the EMM host drives it.
//
// Test-only code.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <emm/conformance/testing/expect_throw.hpp>
#include <memory>
#include <utility>

#include "emm/errors.hpp"
#include "emm/fake/fake_driver.hpp"

namespace emm::test {

// A simulated process whose device-0 primary context is current on the constructing thread.
inline std::shared_ptr<FakeDriver> make_current(std::shared_ptr<FakeDriver> driver,
                                                int device = 0) {
  driver->ctx_set_current(driver->primary_ctx_retain(device));
  return driver;
}

inline std::shared_ptr<FakeDriver> current_process(FakeSystemConfig config = {}) {
  return make_current(std::make_shared<FakeDriver>(std::move(config)));
}

inline constexpr std::size_t kMiB = std::size_t{1} << 20;
inline constexpr std::size_t kGiB = std::size_t{1} << 30;

}  // namespace emm::test
