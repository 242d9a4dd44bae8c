// FakeDriver call counting and fault injection.
#include <gtest/gtest.h>

#include "fake_test_support.hpp"

namespace emm::test {
namespace {

using ::testing::HasSubstr;

constexpr const char* kInjected = "failure injected by FakeDriver::fail_call";

TEST(FakeFaults, EveryEntryPointIsCounted) {
  auto driver = current_process();  // one retain, one set-current
  EXPECT_EQ(driver->call_count(DriverCall::cuDevicePrimaryCtxRetain), 1U);
  EXPECT_EQ(driver->call_count(DriverCall::cuCtxSetCurrent), 1U);
  const CUdeviceptr p = driver->mem_alloc(16);
  driver->mem_get_info();
  driver->mem_get_info();
  driver->mem_free(p);
  EXPECT_EQ(driver->call_count(DriverCall::cuMemAlloc), 1U);
  EXPECT_EQ(driver->call_count(DriverCall::cuMemGetInfo), 2U);
  EXPECT_EQ(driver->call_count(DriverCall::cuMemFree), 1U);
  EXPECT_EQ(driver->call_count(DriverCall::cuMemHostAlloc), 0U);
  driver->reset_call_counts();
  EXPECT_EQ(driver->call_count(DriverCall::cuMemAlloc), 0U);
  EXPECT_EQ(driver->call_count(DriverCall::cuCtxSetCurrent), 0U);
}

TEST(FakeFaults, FailedCallsAreCountedToo) {
  auto driver = current_process();
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(0), CUDA_ERROR_INVALID_VALUE, "cuMemAlloc",
                          HasSubstr("bytesize is 0"));
  driver->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(16), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
                          HasSubstr(kInjected));
  EXPECT_EQ(driver->call_count(DriverCall::cuMemAlloc), 2U);
}

TEST(FakeFaults, NextCallFailsOnceWithNoSideEffect) {
  auto driver = current_process();
  driver->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(4096), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
                          HasSubstr(kInjected));
  EXPECT_TRUE(driver->live_allocations().empty());
  EXPECT_EQ(driver->system()->bytes_in_use(0), 0U);
  driver->mem_free(driver->mem_alloc(4096));  // the fault is spent
}

TEST(FakeFaults, NthAndTimesSelectWhichCallsFail) {
  auto driver = current_process();
  // Calls 3, 4 and 5 from now fail; 1, 2 and 6 succeed.
  driver->fail_call(DriverCall::cuMemGetInfo, CUDA_ERROR_UNKNOWN, 3, 3);
  std::vector<bool> failed;
  for (int call = 1; call <= 6; ++call) {
    try {
      driver->mem_get_info();
      failed.push_back(false);
    } catch (const CudaDriverError& error) {
      EXPECT_EQ(error.code(), CUDA_ERROR_UNKNOWN);
      EXPECT_EQ(error.call(), "cuMemGetInfo");
      failed.push_back(true);
    }
  }
  EXPECT_EQ(failed, (std::vector<bool>{false, false, true, true, true, false}));
}

TEST(FakeFaults, FaultsAreKeptPerEntryPointAndPerProcess) {
  auto driver = current_process();
  auto other = make_current(driver->spawn_process());
  driver->fail_call(DriverCall::cuMemFree, CUDA_ERROR_INVALID_VALUE);
  const CUdeviceptr p = driver->mem_alloc(16);  // another entry point: unaffected
  other->mem_free(other->mem_alloc(16));        // another process: unaffected
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(p), CUDA_ERROR_INVALID_VALUE, "cuMemFree",
                          HasSubstr(kInjected));
  EXPECT_EQ(driver->live_allocations().size(), 1U);  // no side effect
  EXPECT_EQ(driver->invalid_frees(), 0U);            // injected, not a real misuse
  driver->mem_free(p);
}

TEST(FakeFaults, InjectionPrecedesContextAndArgumentChecks) {
  auto driver = std::make_shared<FakeDriver>();  // no current context
  driver->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_NOT_INITIALIZED);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(0), CUDA_ERROR_NOT_INITIALIZED, "cuMemAlloc",
                          HasSubstr(kInjected));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(0), CUDA_ERROR_INVALID_CONTEXT, "cuMemAlloc",
                          HasSubstr("no CUDA context is current"));
}

TEST(FakeFaults, ClearFaultsDropsPendingFailures) {
  auto driver = current_process();
  driver->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY, 1, 100);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(16), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
                          HasSubstr(kInjected));
  driver->clear_faults();
  driver->mem_free(driver->mem_alloc(16));
}

TEST(FakeFaults, TwoFaultsOnOneEntryPointFireInTurn) {
  auto driver = current_process();
  driver->fail_call(DriverCall::cuStreamCreate, CUDA_ERROR_OUT_OF_MEMORY, 1, 1);
  driver->fail_call(DriverCall::cuStreamCreate, CUDA_ERROR_LAUNCH_FAILED, 1, 1);
  EMM_EXPECT_DRIVER_ERROR(driver->stream_create(0), CUDA_ERROR_OUT_OF_MEMORY, "cuStreamCreate",
                          HasSubstr(kInjected));
  EMM_EXPECT_DRIVER_ERROR(driver->stream_create(0), CUDA_ERROR_LAUNCH_FAILED, "cuStreamCreate",
                          HasSubstr(kInjected));
  driver->stream_destroy(driver->stream_create(0));
}

TEST(FakeFaults, MisuseOfFailCallIsRejected) {
  auto driver = current_process();
  EMM_EXPECT_THROW(InvalidArgumentError, driver->fail_call(DriverCall::cuMemAlloc, CUDA_SUCCESS),
                   "FakeDriver::fail_call: the injected result must be an error, got CUDA_SUCCESS");
  EMM_EXPECT_THROW(InvalidArgumentError,
                   driver->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_UNKNOWN, 0),
                   "FakeDriver::fail_call: nth and times count from 1 (nth = 1 fails the very "
                   "next call)");
  EMM_EXPECT_THROW(InvalidArgumentError,
                   driver->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_UNKNOWN, 1, 0),
                   "FakeDriver::fail_call: nth and times count from 1 (nth = 1 fails the very "
                   "next call)");
  EMM_EXPECT_THROW(InvalidArgumentError, driver->fail_call(DriverCall::kCount, CUDA_ERROR_UNKNOWN),
                   "FakeDriver::fail_call: DriverCall::kCount is not a call");
  EMM_EXPECT_THROW(InvalidArgumentError, driver->call_count(DriverCall::kCount),
                   "FakeDriver::call_count: DriverCall::kCount is not a call");
  driver->mem_free(driver->mem_alloc(16));  // nothing was armed
}

}  // namespace
}  // namespace emm::test
