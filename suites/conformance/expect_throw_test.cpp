// The public testing assertions of <emm/conformance/testing/expect_throw.hpp>: each passes on
// exactly what it names and fails, saying what it saw, on anything else.
#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <emm/conformance/testing/expect_throw.hpp>
#include <emm/errors.hpp>
#include <stdexcept>
#include <string>

namespace emm {
namespace {

using ::testing::HasSubstr;

void throw_invalid() { throw InvalidArgumentError("size must be positive, not 0"); }
void throw_out_of_memory() {
  throw CudaDriverError(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc", "1 GiB");
}
void throw_nothing() {}
void throw_int() { throw 42; }

TEST(ExpectThrow, PassesOnTheExactTypeAndMessageAndReturnsTheException) {
  auto error =
      EMM_EXPECT_THROW(InvalidArgumentError, throw_invalid(), "size must be positive, not 0");
  ASSERT_TRUE(error.has_value());
  EXPECT_STREQ(error->what(), "size must be positive, not 0");
  EMM_EXPECT_THROW(InvalidArgumentError, throw_invalid(), HasSubstr("positive"));
}

TEST(ExpectThrow, FailsOnABaseOrAnotherTypeNamingTheOneThrown) {
  EXPECT_NONFATAL_FAILURE(EMM_EXPECT_THROW(Error, throw_invalid(), "size must be positive, not 0"),
                          "should throw exactly Error but threw emm::InvalidArgumentError");
  EXPECT_NONFATAL_FAILURE(
      EMM_EXPECT_THROW(PluginLoadError, throw_invalid(), "size must be positive, not 0"),
      "should throw exactly PluginLoadError but threw emm::InvalidArgumentError");
}

TEST(ExpectThrow, FailsOnAnotherMessageQuotingIt) {
  EXPECT_NONFATAL_FAILURE(EMM_EXPECT_THROW(InvalidArgumentError, throw_invalid(), "size"),
                          "\"size must be positive, not 0\"\nexpected a message that is equal "
                          "to \"size\"");
  EXPECT_NONFATAL_FAILURE(
      EMM_EXPECT_THROW(InvalidArgumentError, throw_invalid(), HasSubstr("negative")),
      "expected a message that has substring \"negative\"");
}

TEST(ExpectThrow, FailsWhenNothingOrANonStandardExceptionIsThrown) {
  EXPECT_NONFATAL_FAILURE(EMM_EXPECT_THROW(InvalidArgumentError, throw_nothing(), "x"),
                          "throw_nothing() should throw InvalidArgumentError but threw nothing");
  EXPECT_NONFATAL_FAILURE(EMM_EXPECT_THROW(InvalidArgumentError, throw_int(), "x"),
                          "threw something that is not a std::exception");
}

TEST(ExpectDriverError, PassesOnTheExactCodeCallAndMessage) {
  auto error = EMM_EXPECT_DRIVER_ERROR(throw_out_of_memory(), CUDA_ERROR_OUT_OF_MEMORY,
                                       "cuMemAlloc", HasSubstr("1 GiB"));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code(), CUDA_ERROR_OUT_OF_MEMORY);
}

TEST(ExpectDriverError, FailsOnAnotherCodeCallMessageOrType) {
  EXPECT_NONFATAL_FAILURE(EMM_EXPECT_DRIVER_ERROR(throw_out_of_memory(), CUDA_ERROR_INVALID_VALUE,
                                                  "cuMemAlloc", HasSubstr("1 GiB")),
                          "threw CudaDriverError CUDA_ERROR_OUT_OF_MEMORY from cuMemAlloc");
  EXPECT_NONFATAL_FAILURE(EMM_EXPECT_DRIVER_ERROR(throw_out_of_memory(), CUDA_ERROR_OUT_OF_MEMORY,
                                                  "cuMemFree", HasSubstr("1 GiB")),
                          "expected CudaDriverError CUDA_ERROR_OUT_OF_MEMORY from cuMemFree");
  EXPECT_NONFATAL_FAILURE(EMM_EXPECT_DRIVER_ERROR(throw_out_of_memory(), CUDA_ERROR_OUT_OF_MEMORY,
                                                  "cuMemAlloc", HasSubstr("2 GiB")),
                          "expected a message that has substring \"2 GiB\"");
  EXPECT_NONFATAL_FAILURE(
      EMM_EXPECT_DRIVER_ERROR(throw_invalid(), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc", "x"),
      "should throw exactly CudaDriverError CUDA_ERROR_OUT_OF_MEMORY from cuMemAlloc but threw "
      "emm::InvalidArgumentError");
}

}  // namespace
}  // namespace emm
