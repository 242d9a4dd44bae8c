// expect_throw.hpp — the typed-exception assertion every kit suite uses (STYLE: tests assert the
// error type AND its message, never only "it threw").
//
// * EMM_EXPECT_THROW(Type, statement, matcher): the statement must throw `Type` (or a subclass)
//   whose what() satisfies the GoogleMock string matcher; returns std::optional<Type> for
//   further checks (CudaDriverError::code(), ...). Another exception, or none, is a failure
//   reported at the caller's file and line.
//
//   auto error = EMM_EXPECT_THROW(CudaDriverError, driver.module_load_data(kNotAnImage),
//                                 StartsWith("cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE"));
//   ASSERT_TRUE(error.has_value());
//   EXPECT_EQ(error->call(), "cuModuleLoadData");
//
// Shared by suites/reference, suites/reference_gpu and suites/gpu (the CMake target
// emm_test_support). Test-only code; thread-safe as far as GoogleTest's assertions are.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <exception>
#include <optional>
#include <sstream>
#include <string>

#define EMM_EXPECT_THROW(ErrorType, statement, message_matcher)                                 \
  ::emm::test::expect_throw<ErrorType>([&] { statement; }, #ErrorType, #statement,              \
                                       ::testing::Matcher<const std::string&>(message_matcher), \
                                       __FILE__, __LINE__)

namespace emm::test {

template <class E, class F>
std::optional<E> expect_throw(F&& statement, const char* type_name, const char* text,
                              const ::testing::Matcher<const std::string&>& matcher,
                              const char* file, int line) {
  try {
    statement();
  } catch (const E& error) {
    const std::string message = error.what();
    if (!matcher.Matches(message)) {
      std::ostringstream expected;
      matcher.DescribeTo(&expected);
      ADD_FAILURE_AT(file, line) << text << " threw " << type_name << " with message\n  \""
                                 << message << "\"\nexpected a message that " << expected.str();
    }
    return error;
  } catch (const std::exception& other) {
    ADD_FAILURE_AT(file, line) << text << " should throw " << type_name
                               << " but threw another exception: " << other.what();
    return std::nullopt;
  } catch (...) {
    ADD_FAILURE_AT(file, line) << text << " should throw " << type_name
                               << " but threw a non-std exception";
    return std::nullopt;
  }
  ADD_FAILURE_AT(file, line) << text << " should throw " << type_name << " but threw nothing";
  return std::nullopt;
}

}  // namespace emm::test
