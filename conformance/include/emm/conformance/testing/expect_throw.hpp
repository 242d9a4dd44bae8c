// emm/conformance/testing/expect_throw.hpp — GoogleTest assertions that a statement throws one
// exact exception type with the expected message: the kit's own suites use them, and so can a
// plugin author's tests ("prefer to check for the specific expected error").
//
//   #include <emm/conformance/testing/expect_throw.hpp>
//
//   // Exactly InvalidArgumentError (not a subclass, not a base), with exactly this message:
//   EMM_EXPECT_THROW(emm::InvalidArgumentError, PoolMemoryManager(nullptr, {.slab_size = 1000}),
//                    "slab_size must be a non-zero multiple of 256 bytes, not 1000");
//
//   // "Message contains" (or starts with, ...): pass a GoogleMock string matcher instead.
//   auto error = EMM_EXPECT_THROW(emm::PluginLoadError, emm::load_plugin(path),
//                                 ::testing::HasSubstr("ABI version 2"));
//   if (error) EXPECT_EQ(error->value(), path);  // the caught exception, for further checks
//
//   // A CUDA driver error: exactly CudaDriverError with this CUresult and call name, a message
//   // "<call> failed: <CUresult name>..." that also satisfies the last argument.
//   EMM_EXPECT_DRIVER_ERROR(driver.mem_alloc(0), CUDA_ERROR_INVALID_VALUE, "cuMemAlloc",
//                           ::testing::HasSubstr("bytesize is 0"));
//
// Both macros evaluate the statement once and return std::optional holding a copy of the
// exception when its type was right (even if the message was not), std::nullopt otherwise.
// Every mismatch — another type (its dynamic type is named), no exception, a wrong message,
// code or call — is a non-fatal GoogleTest failure at the caller's file and line that says what
// was expected and what was seen. The message argument is anything a
// ::testing::Matcher<const std::string&> is built from: a string means "equal to it".
//
// Header-only; link emmkit::conformance_testing (emmkit::conformance_gtest brings it too).
// Thread-safety: as GoogleTest's own assertions (safe from several threads on POSIX).
#pragma once

#include <cxxabi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "emm/errors.hpp"

#define EMM_EXPECT_THROW(ExceptionType, statement, message)        \
  ::emm::conformance::testing_detail::expect_throw<ExceptionType>( \
      [&] { statement; }, #ExceptionType, #statement,              \
      ::testing::Matcher<const std::string&>(message), __FILE__, __LINE__)

#define EMM_EXPECT_DRIVER_ERROR(statement, cuda_result, call_name, message) \
  ::emm::conformance::testing_detail::expect_driver_error(                  \
      [&] { statement; }, cuda_result, call_name, #statement,               \
      ::testing::Matcher<const std::string&>(message), __FILE__, __LINE__)

namespace emm::conformance::testing_detail {

// The readable name of a dynamic type ("emm::InvalidArgumentError", not its mangled form).
inline std::string type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : std::string(type.name());
}

inline std::string describe(const ::testing::Matcher<const std::string&>& matcher) {
  std::ostringstream text;
  matcher.DescribeTo(&text);
  return text.str();
}

template <class E, class F>
std::optional<E> expect_throw(F&& statement, const char* type, const char* text,
                              const ::testing::Matcher<const std::string&>& message,
                              const char* file, int line) {
  static_assert(std::is_base_of_v<std::exception, E>,
                "EMM_EXPECT_THROW checks what(): the type must derive from std::exception");
  try {
    statement();
  } catch (const std::exception& error) {
    const std::string seen = error.what();
    if (typeid(error) != typeid(E)) {
      ADD_FAILURE_AT(file, line) << text << " should throw exactly " << type << " but threw "
                                 << type_name(typeid(error)) << " with message\n  \"" << seen
                                 << "\"";
      return std::nullopt;
    }
    if (!message.Matches(seen)) {
      ADD_FAILURE_AT(file, line) << text << " threw " << type << " with message\n  \"" << seen
                                 << "\"\nexpected a message that " << describe(message);
    }
    return dynamic_cast<const E&>(error);
  } catch (...) {
    ADD_FAILURE_AT(file, line) << text << " should throw " << type
                               << " but threw something that is not a std::exception";
    return std::nullopt;
  }
  ADD_FAILURE_AT(file, line) << text << " should throw " << type << " but threw nothing";
  return std::nullopt;
}

template <class F>
std::optional<CudaDriverError> expect_driver_error(
    F&& statement, CUresult code, const std::string& call, const char* text,
    const ::testing::Matcher<const std::string&>& message, const char* file, int line) {
  const std::string expected =
      "CudaDriverError " + std::string(cuda_result_name(code)) + " from " + call;
  std::optional<CudaDriverError> error = expect_throw<CudaDriverError>(
      std::forward<F>(statement), expected.c_str(), text, message, file, line);
  if (!error) return error;
  const std::string seen = error->what();
  const std::string prefix = call + " failed: " + std::string(cuda_result_name(code));
  if (error->code() != code || error->call() != call || seen.rfind(prefix, 0) != 0) {
    ADD_FAILURE_AT(file, line) << text << " threw CudaDriverError "
                               << cuda_result_name(error->code()) << " from " << error->call()
                               << " with message\n  \"" << seen << "\"\nexpected " << expected
                               << " (a message starting \"" << prefix << "\")";
  }
  return error;
}

}  // namespace emm::conformance::testing_detail
