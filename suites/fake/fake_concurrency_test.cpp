// FakeDriver under concurrent use: 8 threads of one process, and several processes at once.
// Meant to run under TSan as well (no timing assertions).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "fake_test_support.hpp"

namespace emm::test {
namespace {

constexpr int kThreads = 8;
constexpr int kOperationsPerThread = 1500;

// With `yield_in_calls`, every call first yields the calling thread (FakeDriver::yield_in_calls,
// ALLOC-10's interleaving): the same results, only more interleaved.
void eight_threads_allocate_write_read_and_free(bool yield_in_calls) {
  auto driver = std::make_shared<FakeDriver>();
  driver->yield_in_calls(yield_in_calls);
  CUcontext context = driver->primary_ctx_retain(0);
  std::mutex live_mutex;
  std::map<CUdeviceptr, std::size_t> live;  // every live allocation of every thread
  std::atomic<int> overlaps{0};
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      driver->ctx_set_current(context);  // per thread, as with CUDA
      std::mt19937 random(static_cast<unsigned>(t));
      std::vector<std::pair<CUdeviceptr, std::size_t>> mine;
      for (int op = 0; op < kOperationsPerThread; ++op) {
        if (mine.empty() || random() % 2 == 0) {
          const std::size_t size = 1 + random() % 8192;
          const CUdeviceptr p = driver->mem_alloc(size);
          const auto tag = static_cast<unsigned char>(t + 1);
          driver->memset_d8(p, tag, size);
          {
            std::lock_guard lock(live_mutex);
            auto next = live.lower_bound(p);
            if (next != live.end() && next->first < p + size) ++overlaps;
            if (next != live.begin() && std::prev(next)->first + std::prev(next)->second > p) {
              ++overlaps;
            }
            live.emplace(p, size);
          }
          mine.emplace_back(p, size);
        } else {
          const std::size_t index = random() % mine.size();
          const auto [p, size] = mine[index];
          unsigned char first = 0;
          unsigned char last = 0;
          driver->memcpy_dtoh(&first, p, 1);
          driver->memcpy_dtoh(&last, p + size - 1, 1);
          if (first != t + 1 || last != t + 1) ++corrupted;
          {
            std::lock_guard lock(live_mutex);
            live.erase(p);
          }
          driver->mem_free(p);
          mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(index));
        }
        if (op % 100 == 0) driver->mem_get_info();
      }
      for (const auto& [p, size] : mine) {
        {
          std::lock_guard lock(live_mutex);
          live.erase(p);
        }
        driver->mem_free(p);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(corrupted.load(), 0);
  EXPECT_TRUE(driver->live_allocations().empty());
  EXPECT_EQ(driver->system()->bytes_in_use(0), 0U);
  EXPECT_EQ(driver->invalid_frees(), 0U);
  EXPECT_EQ(driver->call_count(DriverCall::cuMemAlloc), driver->call_count(DriverCall::cuMemFree));
}

TEST(FakeConcurrency, EightThreadsAllocateWriteReadAndFree) {
  eight_threads_allocate_write_read_and_free(false);
}

TEST(FakeConcurrency, EightThreadsAllocateWriteReadAndFreeYieldingInCalls) {
  eight_threads_allocate_write_read_and_free(true);
}

TEST(FakeConcurrency, ProcessesExportAndImportConcurrently) {
  auto exporter = current_process();
  const CUdeviceptr p = exporter->mem_alloc(4096);
  exporter->memset_d8(p, 0x77, 4096);
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      auto importer = make_current(exporter->spawn_process());
      for (int round = 0; round < 200; ++round) {
        const CUdeviceptr mapped = importer->ipc_open_mem_handle(handle, 0);
        unsigned char byte = 0;
        importer->memcpy_dtoh(&byte, mapped + 4095, 1);
        if (byte != 0x77) ++wrong;
        importer->mem_free_host(importer->mem_host_alloc(64, CU_MEMHOSTALLOC_DEVICEMAP));
        importer->stream_destroy(importer->stream_create(0));
        importer->ipc_close_mem_handle(mapped);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  exporter->mem_free(p);
  EXPECT_EQ(exporter->system()->allocation_count(0), 0U);
}

TEST(FakeConcurrency, FaultInjectionIsExactUnderContention) {
  auto driver = std::make_shared<FakeDriver>();
  CUcontext context = driver->primary_ctx_retain(0);
  driver->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY, 50, 25);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      driver->ctx_set_current(context);
      for (int op = 0; op < 100; ++op) {
        try {
          driver->mem_free(driver->mem_alloc(64));
        } catch (const CudaDriverError& error) {
          if (error.code() == CUDA_ERROR_OUT_OF_MEMORY) ++failures;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 25);
  EXPECT_EQ(driver->call_count(DriverCall::cuMemAlloc), 800U);
  EXPECT_EQ(driver->call_count(DriverCall::cuMemFree), 775U);
}

}  // namespace
}  // namespace emm::test
