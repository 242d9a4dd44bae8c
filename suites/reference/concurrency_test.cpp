// Many threads through one context with the default manager (spec 2.5: calls are not
// serialised by the host; the default manager is thread-safe). CI runs this under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "emm/context.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/runtime.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

TEST(Concurrency, EightThreadsAllocateAndFreeThroughOneContext) {
  constexpr int kThreads = 8;
  constexpr int kOperations = 1500;
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  std::atomic<int> corrupted{0};
  std::atomic<int> allocations{0};

  auto worker = [&](int id) {
    context.make_current();  // CUDA's current context is per thread
    std::mt19937 rng(static_cast<unsigned>(id) * 7919u + 1u);
    const auto mark = static_cast<unsigned char>(0x10 + id);
    std::vector<std::shared_ptr<MemoryPointer>> live;
    auto release_one = [&] {
      const std::size_t victim = rng() % live.size();
      // Its bytes are still ours: another thread handed the same block would have changed them.
      unsigned char first = 0, last = 0;
      fake->memcpy_dtoh(&first, live[victim]->device_pointer(), 1);
      fake->memcpy_dtoh(&last, live[victim]->device_pointer() + live[victim]->size() - 1, 1);
      if (first != mark || last != mark) ++corrupted;
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
    };
    for (int op = 0; op < kOperations; ++op) {
      if (live.size() < 16 && rng() % 3 != 0) {
        const std::size_t size = 1 + rng() % 65536;
        auto memory = context.memalloc(size);
        memory->memset(mark);
        live.push_back(std::move(memory));
        ++allocations;
      } else if (!live.empty()) {
        release_one();
      }
      if (op % 97 == 0) {
        CleanupGuard guard = context.defer_cleanup();
        for (int i = 0; i < 4 && !live.empty(); ++i) release_one();
      }
      if (op % 211 == 0) {
        HostAllocation host = context.memhostalloc(256, op % 2 == 0);
        EXPECT_EQ(host.size(), 256u);
        EXPECT_LE(context.get_memory_info().free, context.get_memory_info().total);
      }
    }
    while (!live.empty()) release_one();
  };

  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) threads.emplace_back(worker, id);
  for (auto& thread : threads) thread.join();

  EXPECT_EQ(corrupted.load(), 0) << "no block was handed to two threads at once";
  EXPECT_GT(allocations.load(), kThreads * kOperations / 3);
  context.reset();
  EXPECT_EQ(fake->device_bytes_in_use(), 0u);
  EXPECT_EQ(fake->live_allocations().size(), 0u);
  EXPECT_EQ(fake->host_allocation_count(), 0u);
  EXPECT_EQ(fake->invalid_frees(), 0u);
  EXPECT_EQ(fake->invalid_accesses(), 0u);
  EXPECT_EQ(fake->call_count(DriverCall::cuMemAlloc), fake->call_count(DriverCall::cuMemFree));
}

}  // namespace
}  // namespace emm
