// fake_test_support.hpp — helpers for the tests of the fake driver (and the mock over it).
//
// * EMM_EXPECT_DRIVER_ERROR(statement, CUDA_ERROR_X, "cuCall", "detail text"): `statement` must
//   throw emm::CudaDriverError with exactly that code and call, whose message starts with
//   "cuCall failed: CUDA_ERROR_X" and contains the detail text. Anything else is a failure.
// * current_process(config) / make_current(driver, device): a simulated process whose device's
//   primary context is retained and current on the calling thread, as the EMM host drives it.
//
// Test-only code.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>

#include "emm/errors.hpp"
#include "emm/fake/fake_driver.hpp"

#define EMM_EXPECT_DRIVER_ERROR(statement, code, call, detail)                                   \
  ::emm::test::expect_driver_error([&] { statement; }, code, call, detail, #statement, __FILE__, \
                                   __LINE__)

namespace emm::test {

template <class F>
void expect_driver_error(F&& statement, CUresult code, const std::string& call,
                         const std::string& detail, const char* text, const char* file, int line) {
  try {
    statement();
  } catch (const CudaDriverError& error) {
    const std::string message = error.what();
    const std::string prefix = call + " failed: " + std::string(cuda_result_name(code));
    if (error.code() != code || error.call() != call || message.rfind(prefix, 0) != 0 ||
        message.find(detail) == std::string::npos) {
      ADD_FAILURE_AT(file, line) << text << " threw CudaDriverError\n  \"" << message
                                 << "\"\n(code " << cuda_result_name(error.code()) << ", call "
                                 << error.call() << "); expected code " << cuda_result_name(code)
                                 << " from " << call << " with a message containing \"" << detail
                                 << "\"";
    }
    return;
  } catch (const std::exception& error) {
    ADD_FAILURE_AT(file, line) << text << " threw " << typeid(error).name() << " (\""
                               << error.what() << "\"); expected CudaDriverError "
                               << cuda_result_name(code) << " from " << call;
    return;
  }
  ADD_FAILURE_AT(file, line) << text << " threw nothing; expected CudaDriverError "
                             << cuda_result_name(code) << " from " << call;
}

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
