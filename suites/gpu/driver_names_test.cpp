// The names error messages use: emm::cuda_result_name and emm::driver_call_name (spec §2.1:
// "carrying the CUresult and its name ... and the call that failed"). No driver needed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "emm/cuda_api.hpp"
#include "emm/driver.hpp"

namespace emm {
namespace {

using ::testing::StartsWith;

TEST(CudaResultName, NamesEveryKindOfResult) {
  RecordProperty("spec", "2.1");
  EXPECT_EQ(cuda_result_name(CUDA_SUCCESS), "CUDA_SUCCESS");
  EXPECT_EQ(cuda_result_name(CUDA_ERROR_OUT_OF_MEMORY), "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(cuda_result_name(CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(cuda_result_name(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED),
            "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED");
  EXPECT_EQ(cuda_result_name(CUDA_ERROR_KEY_ROTATION), "CUDA_ERROR_KEY_ROTATION");  // 13.0
  EXPECT_EQ(cuda_result_name(CUDA_ERROR_UNKNOWN), "CUDA_ERROR_UNKNOWN");
}

TEST(CudaResultName, UnknownValuesAreFormattedAndStayValid) {
  RecordProperty("spec", "2.1");
  const std::string_view first = cuda_result_name(static_cast<CUresult>(12345));
  EXPECT_EQ(first, "CUresult(12345)");
  EXPECT_EQ(cuda_result_name(static_cast<CUresult>(-7)), "CUresult(-7)");
  // Another unknown value, from another thread, does not overwrite the first view.
  std::thread([] {
    EXPECT_EQ(cuda_result_name(static_cast<CUresult>(54321)), "CUresult(54321)");
  }).join();
  EXPECT_EQ(first, "CUresult(12345)");
  EXPECT_EQ(cuda_result_name(static_cast<CUresult>(12345)).data(), first.data());
}

TEST(DriverCallName, IsTheBaseNameOfTheCudaCall) {
  RecordProperty("spec", "2.1");
  // cuda.h #defines these three to versioned or per-thread-stream symbols; the names must not
  // follow.
  EXPECT_EQ(driver_call_name(DriverCall::cuMemAlloc), "cuMemAlloc");
  EXPECT_EQ(driver_call_name(DriverCall::cuMemcpyHtoD), "cuMemcpyHtoD");
  EXPECT_EQ(driver_call_name(DriverCall::cuStreamSynchronize), "cuStreamSynchronize");
  EXPECT_EQ(driver_call_name(DriverCall::cuInit), "cuInit");
  EXPECT_EQ(driver_call_name(DriverCall::cuMemFreeAsync), "cuMemFreeAsync");
  EXPECT_EQ(driver_call_name(DriverCall::kCount), "DriverCall(invalid)");
}

TEST(DriverCallName, EveryCallHasADistinctUnversionedName) {
  RecordProperty("spec", "2.1");
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kDriverCallCount; ++i) {
    const std::string_view name = driver_call_name(static_cast<DriverCall>(i));
    EXPECT_THAT(std::string(name), StartsWith("cu")) << "DriverCall " << i;
    EXPECT_EQ(name.find("_v"), std::string_view::npos) << name;
    EXPECT_EQ(name.find("_pt"), std::string_view::npos) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), kDriverCallCount);
}

}  // namespace
}  // namespace emm
