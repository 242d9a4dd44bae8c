// The soak: at least 100 000 allocations of mixed sizes through the default
// manager on a real GPU, with deferral and nested defer_cleanup scopes, ending with the
// device's free memory (cuMemGetInfo) back at its baseline. Prints its figures for reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <random>
#include <vector>

#include "emm/context.hpp"
#include "emm/cuda_driver.hpp"
#include "emm/runtime.hpp"
#include "gpu_support.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

TEST(GpuSoak, HundredThousandMixedAllocationsReturnToBaseline) {
  EMM_REQUIRE_GPU(driver);
  constexpr std::size_t kAllocations = 100'000;
  constexpr std::size_t kMinSize = 256;
  constexpr std::size_t kMaxSize = std::size_t{4} << 20;
  constexpr std::size_t kMaxLive = 256;
  constexpr std::size_t kMaxDepth = 4;

  Runtime runtime(driver, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  PendingDeallocs& queue = test::host_only(context).deallocations();
  context.memalloc(kMaxSize).reset();  // warm-up, then the baseline
  context.reset();
  context.make_current();
  const MemoryInfo baseline = driver->mem_get_info();

  std::mt19937_64 rng(20251121);
  std::uniform_real_distribution<double> log_size(std::log(double(kMinSize)),
                                                  std::log(double(kMaxSize)));
  std::vector<std::shared_ptr<MemoryPointer>> live;
  std::vector<CleanupGuard> scopes;
  std::size_t bytes = 0, scopes_entered = 0, max_depth = 0, max_pending = 0, checked = 0;
  std::size_t mismatches = 0;

  for (std::size_t i = 0; i < kAllocations; ++i) {
    const auto size = static_cast<std::size_t>(std::exp(log_size(rng)));
    auto memory = context.memalloc(size);
    bytes += size;
    if (i % 997 == 0) {  // the memory is really there: write its ends, read them back
      const auto mark = static_cast<unsigned char>(i & 0xFF);
      memory->memset(mark);
      unsigned char ends[2] = {0, 0};
      driver->memcpy_dtoh(&ends[0], memory->device_pointer(), 1);
      driver->memcpy_dtoh(&ends[1], memory->device_pointer() + size - 1, 1);
      if (ends[0] != mark || ends[1] != mark) ++mismatches;
      ++checked;
    }
    live.push_back(std::move(memory));
    // Release a random number of random live allocations.
    const std::size_t target = rng() % kMaxLive;
    while (live.size() > target) {
      std::swap(live[rng() % live.size()], live.back());
      live.pop_back();
    }
    // Enter or leave defer_cleanup scopes now and then (nested up to kMaxDepth).
    if (rng() % 400 == 0 && scopes.size() < kMaxDepth) {
      scopes.push_back(context.defer_cleanup());
      ++scopes_entered;
      max_depth = std::max(max_depth, scopes.size());
    } else if (!scopes.empty() && rng() % 300 == 0) {
      scopes.pop_back();
    }
    max_pending = std::max(max_pending, queue.count());
  }
  const std::size_t pending_at_end = queue.count();
  scopes.clear();
  live.clear();
  queue.clear();
  EXPECT_EQ(queue.count(), 0u);
  context.reset();
  context.make_current();
  const MemoryInfo after = driver->mem_get_info();

  std::cout << "soak: allocations=" << kAllocations << " bytes=" << bytes << " checked=" << checked
            << " defer_scopes=" << scopes_entered << " max_depth=" << max_depth
            << " max_pending=" << max_pending << " pending_at_end=" << pending_at_end << "\n"
            << "soak: cuMemGetInfo total=" << baseline.total << " free_before=" << baseline.free
            << " free_after=" << after.free << " difference="
            << static_cast<long long>(after.free) - static_cast<long long>(baseline.free) << "\n";
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GE(scopes_entered, 50u);
  EXPECT_GE(max_depth, 2u) << "nested defer_cleanup scopes were exercised";
  EXPECT_GT(max_pending, DeallocConfig::kDefaultMaxCount) << "deferral held frees back";
  EXPECT_EQ(test::host_only(context).live_allocation_count(), 0u);
  EXPECT_EQ(after.free, baseline.free) << "every byte came back";
}

}  // namespace
}  // namespace emm
