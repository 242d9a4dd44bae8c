// FakeDriver::yield_in_calls on a busy machine: the pacing rule (fake/src/yield_pacing.hpp) and
// the driver's stride. No timing assertions: the rule is a pure function of the figures given.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "emm/fake/fake_driver.hpp"
#include "yield_pacing.hpp"

namespace emm::test {
namespace {

using fake_detail::kMaxStride;
using fake_detail::kReviewWindowNs;
using fake_detail::next_yield_stride;

constexpr std::int64_t kSecond = 1'000'000'000;

TEST(YieldPacing, AProcessThatGotAQuarterCoreOrMoreKeepsYieldingAtEveryCall) {
  EXPECT_EQ(next_yield_stride(1, kSecond, kSecond / 4), 1u) << "exactly a quarter core";
  EXPECT_EQ(next_yield_stride(1, kSecond, 2 * kSecond), 1u) << "two cores busy: an idle machine";
  EXPECT_EQ(next_yield_stride(8, 3 * kSecond, kSecond), 8u) << "a third of a core: kept as is";
}

TEST(YieldPacing, AStarvedProcessYieldsAtHalfTheRateAfterEachWindow) {
  // 27 s of wall time for 2.5 s of CPU: what ALLOC-10 measured beside a compiler on 2 cores.
  EXPECT_EQ(next_yield_stride(1, 27 * kSecond, 25 * kSecond / 10), 2u);
  EXPECT_EQ(next_yield_stride(2, kSecond, kSecond / 10), 4u);
  EXPECT_EQ(next_yield_stride(1024, kSecond, 0), 2048u);
}

TEST(YieldPacing, AWindowShorterThanASecondIsNotJudgedAndTheStrideIsBounded) {
  EXPECT_EQ(next_yield_stride(1, kReviewWindowNs - 1, 0), 1u);
  EXPECT_EQ(next_yield_stride(kMaxStride, kSecond, 0), kMaxStride);
  EXPECT_EQ(next_yield_stride(0, kSecond, 0), 1u) << "a stride of 0 would divide by zero";
}

TEST(YieldPacing, TheDriverStartsAtEveryCallEachTimeInterleavingIsTurnedOn) {
  auto driver = std::make_shared<FakeDriver>();
  EXPECT_EQ(driver->yield_stride(), 1u);
  driver->yield_in_calls(true);
  CUcontext context = driver->primary_ctx_retain(0);
  driver->ctx_set_current(context);
  for (int i = 0; i < 1000; ++i) driver->mem_free(driver->mem_alloc(256));
  // An idle or a busy machine may both be met here; only the bound is certain.
  EXPECT_GE(driver->yield_stride(), 1u);
  EXPECT_LE(driver->yield_stride(), kMaxStride);
  driver->yield_in_calls(false);
  driver->yield_in_calls(true);
  EXPECT_EQ(driver->yield_stride(), 1u) << "turned on again: every call yields";
  driver->yield_in_calls(false);
}

}  // namespace
}  // namespace emm::test
