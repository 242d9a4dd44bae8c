// Unit tests of the pool example's internals: SlabAllocator on plain integers, and
// PoolMemoryManager on the fake driver (slabs from cuMemAlloc, their return, defer_cleanup,
// reset, IPC offsets, memory info). The EMM clauses themselves are certified by
// conformance_test.cpp; the tests here that check one carry its id.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <emm/conformance/testing/expect_throw.hpp>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "emm/context.hpp"
#include "emm/errors.hpp"
#include "emm/examples/pool_memory_manager.hpp"
#include "emm/examples/slab_allocator.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/runtime.hpp"

namespace emm::examples {
namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * 1024;
constexpr CUdeviceptr kBase = 0x10000000;

using Block = SlabAllocator::Block;
using ::testing::HasSubstr;

// Every allocated block lies inside its slab and no two overlap.
void expect_disjoint(const std::vector<Block*>& blocks) {
  std::vector<std::pair<CUdeviceptr, CUdeviceptr>> ranges;
  for (const Block* block : blocks) {
    ASSERT_GE(block->address, block->slab->base);
    ASSERT_LE(block->address + block->size, block->slab->base + block->slab->size);
    ranges.emplace_back(block->address, block->address + block->size);
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    ASSERT_LE(ranges[i - 1].second, ranges[i].first) << "blocks overlap";
  }
}

// --- SlabAllocator -----------------------------------------------------------------------------

TEST(SlabAllocator, ALLOC_11_EveryBlockIs256ByteAlignedAndRoundedUp) {
  RecordProperty("clause", "ALLOC-11");
  SlabAllocator slabs;
  slabs.add_slab(kBase, 2 * kMiB);
  for (std::size_t size : {1u, 8u, 255u, 256u, 257u, 1000u, 4096u, 4099u}) {
    Block* block = slabs.allocate(size);
    ASSERT_NE(block, nullptr) << size;
    EXPECT_EQ(block->address % 256, 0u) << size;
    EXPECT_EQ(block->size, SlabAllocator::round_up(size)) << size;
  }
}

TEST(SlabAllocator, BlocksAreCarvedInAddressOrderFromOneSlab) {
  SlabAllocator slabs;
  slabs.add_slab(kBase, 2 * kMiB);
  Block* a = slabs.allocate(256);
  Block* b = slabs.allocate(512);
  EXPECT_EQ(a->address, kBase);
  EXPECT_EQ(b->address, kBase + 256);
  EXPECT_EQ(slabs.allocated_bytes(), 768u);
  EXPECT_EQ(slabs.free_bytes(), 2 * kMiB - 768);
  EXPECT_EQ(slabs.free_block_count(), 1u);
}

TEST(SlabAllocator, FreedNeighboursCoalesceIntoOneBlock) {
  SlabAllocator slabs;
  SlabAllocator::Slab* slab = slabs.add_slab(kBase, 2 * kMiB);
  Block* a = slabs.allocate(4 * kKiB);
  Block* b = slabs.allocate(4 * kKiB);
  Block* c = slabs.allocate(4 * kKiB);
  Block* d = slabs.allocate(4 * kKiB);  // keeps the slab non-empty
  EXPECT_EQ(slabs.free(a), nullptr);
  EXPECT_EQ(slabs.free(c), nullptr);
  EXPECT_EQ(slabs.free_block_count(), 3u);  // a, c, and the tail
  EXPECT_EQ(slabs.free(b), nullptr);        // a + b + c merge
  EXPECT_EQ(slabs.free_block_count(), 2u);
  EXPECT_EQ(slabs.largest_free_block(), 2 * kMiB - 16 * kKiB);
  Block* merged = slabs.allocate(12 * kKiB);  // the merged hole is reused in one piece
  EXPECT_EQ(merged->address, kBase);
  slabs.free(merged);
  EXPECT_EQ(slabs.free(d), slab);  // d merges with both sides: the slab is empty
  EXPECT_EQ(slabs.free_block_count(), 1u);
  EXPECT_EQ(slabs.largest_free_block(), 2 * kMiB);
  EXPECT_EQ(slabs.empty_slab_count(), 1u);
}

TEST(SlabAllocator, RequestTakesTheSmallestSizeClassThatFits) {
  SlabAllocator slabs;
  slabs.add_slab(kBase, 2 * kMiB);
  // Holes of 64 KiB (first) and 1 KiB (later), each fenced by blocks in use.
  Block* big_hole = slabs.allocate(64 * kKiB);
  slabs.allocate(256);
  Block* small_hole = slabs.allocate(1 * kKiB);
  slabs.allocate(256);
  const CUdeviceptr small_address = small_hole->address;
  const CUdeviceptr big_address = big_hole->address;
  slabs.free(big_hole);
  slabs.free(small_hole);
  EXPECT_EQ(slabs.allocate(1 * kKiB)->address, small_address);  // not the 64 KiB hole
  EXPECT_EQ(slabs.allocate(40 * kKiB)->address, big_address);   // not the slab's tail
}

TEST(SlabAllocator, ReturnsNullWhenNothingFitsAndFindsSlabs) {
  SlabAllocator slabs;
  slabs.add_slab(kBase, 1 * kMiB);
  slabs.add_slab(kBase + 4 * kMiB, 1 * kMiB);
  EXPECT_EQ(slabs.allocate(1 * kMiB + 1), nullptr);
  EXPECT_NE(slabs.allocate(1 * kMiB), nullptr);
  EXPECT_EQ(slabs.find_slab(kBase - 1), nullptr);
  EXPECT_EQ(slabs.find_slab(kBase)->base, kBase);
  EXPECT_EQ(slabs.find_slab(kBase + kMiB - 1)->base, kBase);
  EXPECT_EQ(slabs.find_slab(kBase + kMiB), nullptr);
  EXPECT_EQ(slabs.find_slab(kBase + 5 * kMiB - 1)->base, kBase + 4 * kMiB);
}

TEST(SlabAllocator, EmptySlabCanBeRemovedAndClearForgetsAll) {
  SlabAllocator slabs;
  SlabAllocator::Slab* first = slabs.add_slab(kBase, 2 * kMiB);
  slabs.add_slab(kBase + 2 * kMiB, 2 * kMiB);
  EXPECT_EQ(slabs.empty_slab_count(), 2u);
  Block* block = slabs.allocate_from(first, 300);
  EXPECT_EQ(block->slab, first);
  EXPECT_EQ(slabs.empty_slab_count(), 1u);
  ASSERT_EQ(slabs.free(block), first);
  slabs.remove_slab(first);
  EXPECT_EQ(slabs.slab_count(), 1u);
  EXPECT_EQ(slabs.slab_bytes(), 2 * kMiB);
  slabs.allocate(1000);
  slabs.clear();
  EXPECT_EQ(slabs.slab_count(), 0u);
  EXPECT_EQ(slabs.allocated_bytes(), 0u);
  EXPECT_EQ(slabs.free_block_count(), 0u);
  EXPECT_EQ(slabs.allocate(256), nullptr);
}

TEST(SlabAllocator, ALLOC_2_RandomTrafficNeverOverlapsAndCountsAddUp) {
  RecordProperty("clause", "ALLOC-2");
  SlabAllocator slabs;
  for (int i = 0; i < 4; ++i) slabs.add_slab(kBase + i * 8 * kMiB, 4 * kMiB);
  std::mt19937 random(7);
  std::vector<Block*> live;
  for (int step = 0; step < 5000; ++step) {
    if (live.empty() || random() % 3 != 0) {
      Block* block = slabs.allocate(1 + random() % (64 * kKiB));
      if (block != nullptr) live.push_back(block);
    } else {
      const std::size_t index = random() % live.size();
      slabs.free(live[index]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
    }
  }
  expect_disjoint(live);
  std::size_t bytes = 0;
  for (const Block* block : live) bytes += block->size;
  EXPECT_EQ(slabs.allocated_bytes(), bytes);
  EXPECT_EQ(slabs.allocated_blocks(), live.size());
  for (Block* block : live) slabs.free(block);
  EXPECT_EQ(slabs.empty_slab_count(), 4u);
  EXPECT_EQ(slabs.free_block_count(), 4u);  // every slab coalesced back to one block
}

// --- PoolMemoryManager on the fake driver ------------------------------------------------------

class PoolTest : public ::testing::Test {
 protected:
  explicit PoolTest(FakeDeviceConfig device = {}, PoolMemoryManager::Options options = {})
      : driver_(std::make_shared<FakeDriver>(FakeSystemConfig{{device}})),
        runtime_(driver_, RuntimeOptions::hermetic()) {
    runtime_.set_memory_manager([options](Context* context) {
      return std::make_unique<PoolMemoryManager>(context, options);
    });
    context_ = &runtime_.get_context(0);
  }

  PoolMemoryManager& pool() { return dynamic_cast<PoolMemoryManager&>(context_->memory_manager()); }
  std::size_t allocs() const { return driver_->call_count(DriverCall::cuMemAlloc); }
  std::size_t frees() const { return driver_->call_count(DriverCall::cuMemFree); }

  std::shared_ptr<FakeDriver> driver_;
  Runtime runtime_;
  Context* context_ = nullptr;
};

TEST_F(PoolTest, SmallRequestsShareOneTwoMiBSlab) {
  std::vector<std::shared_ptr<MemoryPointer>> pointers;
  for (int i = 0; i < 100; ++i) pointers.push_back(context_->memalloc(1000));
  EXPECT_EQ(allocs(), 1u);
  EXPECT_EQ(driver_->device_bytes_in_use(), 2 * kMiB);
  const PoolStatistics stats = pool().statistics();
  EXPECT_EQ(stats.slab_count, 1u);
  EXPECT_EQ(stats.allocated_blocks, 100u);
  EXPECT_EQ(stats.allocated_bytes, 100 * 1024u);  // 1000 rounded up to 256
  for (const auto& p : pointers) {
    EXPECT_EQ(p->size(), 1000u);
    EXPECT_EQ(p->refct(), 1);
  }
}

TEST_F(PoolTest, LargeRequestGetsItsOwnSlabWhichIsKeptForTheNextLargeOne) {
  auto small = context_->memalloc(256);
  auto large = context_->memalloc(5 * kMiB);
  EXPECT_EQ(allocs(), 2u);
  EXPECT_EQ(pool().statistics().slab_bytes, 2 * kMiB + 6 * kMiB);  // rounded to 2 MiB
  large.reset();
  EXPECT_EQ(frees(), 0u);  // 6 MiB empty: within the default release threshold
  auto again = context_->memalloc(6 * kMiB);
  EXPECT_EQ(allocs(), 2u);
  EXPECT_EQ(driver_->device_bytes_in_use(), 8 * kMiB);
}

TEST(PoolOptions, TheDefaultReleaseThresholdIsTwoGibibytes) {
  EXPECT_EQ(PoolMemoryManager(nullptr).options().release_threshold, 2048 * kMiB);
}

// A pool that keeps up to `threshold` bytes of empty slabs.
class ThresholdPoolTest : public PoolTest {
 protected:
  explicit ThresholdPoolTest(std::size_t threshold = 4 * kMiB)
      : PoolTest(FakeDeviceConfig{}, PoolMemoryManager::Options{.release_threshold = threshold}) {}
};

class ReleaseAtOncePoolTest : public ThresholdPoolTest {
 protected:
  ReleaseAtOncePoolTest() : ThresholdPoolTest(0) {}
};

TEST_F(ThresholdPoolTest, EmptySlabsAreKeptUpToTheReleaseThresholdAndReused) {
  std::vector<std::shared_ptr<MemoryPointer>> blocks;
  // 1.5 MiB blocks: one per 2 MiB slab.
  for (int i = 0; i < 4; ++i) blocks.push_back(context_->memalloc(1536 * kKiB));
  ASSERT_EQ(allocs(), 4u);
  blocks[0].reset();
  blocks[1].reset();
  EXPECT_EQ(frees(), 0u);  // 4 MiB empty: at the threshold, kept
  blocks[2].reset();
  EXPECT_EQ(frees(), 1u);  // 6 MiB would be past it: this slab goes back
  EXPECT_EQ(pool().statistics().slab_count, 3u);
  EXPECT_EQ(driver_->device_bytes_in_use(), 6 * kMiB);
  // The kept slabs serve the next requests without the driver.
  blocks[0] = context_->memalloc(1536 * kKiB);
  blocks[1] = context_->memalloc(1536 * kKiB);
  EXPECT_EQ(allocs(), 4u);
  blocks[2] = context_->memalloc(1536 * kKiB);
  EXPECT_EQ(allocs(), 5u);
}

TEST_F(ThresholdPoolTest, AnEmptyLargeSlabPastTheThresholdGoesBack) {
  auto large = context_->memalloc(5 * kMiB);  // a 6 MiB slab of its own
  large.reset();
  EXPECT_EQ(frees(), 1u);
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
}

TEST_F(ThresholdPoolTest, LIFE_7_ResetGivesBackTheKeptSlabs) {
  RecordProperty("clause", "LIFE-7");
  context_->memalloc(1 * kMiB).reset();
  ASSERT_EQ(driver_->device_bytes_in_use(), 2 * kMiB);  // kept
  context_->reset();
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
  EXPECT_EQ(frees(), 1u);
}

TEST_F(ReleaseAtOncePoolTest, ThresholdZeroGivesEveryEmptiedSlabBack) {
  auto keep = context_->memalloc(256);
  auto large = context_->memalloc(3 * kMiB);
  large.reset();
  EXPECT_EQ(frees(), 1u);
  EXPECT_EQ(driver_->device_bytes_in_use(), 2 * kMiB);
}

TEST_F(ReleaseAtOncePoolTest, DEFER_2_EmptySlabsAreHeldWhileAGuardLivesAndReleasedAfter) {
  RecordProperty("clause", "DEFER-2");
  auto large = context_->memalloc(8 * kMiB);
  {
    CleanupGuard outer = context_->defer_cleanup();
    EXPECT_EQ(pool().statistics().defer_depth, 1);
    CleanupGuard inner = context_->defer_cleanup();
    EXPECT_EQ(pool().statistics().defer_depth, 2);
    large.reset();
    EXPECT_EQ(frees(), 0u);
    EXPECT_EQ(driver_->device_bytes_in_use(), 8 * kMiB);
    inner.release();
    EXPECT_EQ(frees(), 0u);  // the outer guard still holds it
  }
  EXPECT_EQ(pool().statistics().defer_depth, 0);
  EXPECT_EQ(frees(), 1u);
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
}

TEST_F(PoolTest, DEFER_3_HoldsTheParentGuard) {
  RecordProperty("clause", "DEFER-3");
  CleanupGuard guard = pool().defer_cleanup();
  EXPECT_TRUE(guard.holds_parent());
  EXPECT_TRUE(pool().deallocations().is_disabled());
  guard.release();
  EXPECT_FALSE(pool().deallocations().is_disabled());
}

TEST_F(PoolTest, LIFE_7_ResetReleasesEverySlabAndLateFinalizersAreHarmless) {
  RecordProperty("clause", "LIFE-7");
  auto small = context_->memalloc(100);
  auto view = small->view(10);
  auto large = context_->memalloc(3 * kMiB);
  context_->reset();
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
  EXPECT_EQ(pool().statistics().slab_count, 0u);
  auto fresh = context_->memalloc(100);  // LIFE-6: usable at once
  view.reset();
  small.reset();  // LIFE-8: must not give back a block of the new slab
  large.reset();
  EXPECT_EQ(driver_->invalid_frees(), 0u);
  EXPECT_EQ(pool().statistics().allocated_blocks, 1u);
  fresh.reset();
  EXPECT_EQ(pool().statistics().allocated_blocks, 0u);
}

TEST_F(PoolTest, LIFE_8_PointerOutlivingTheRuntimeIsHarmless) {
  RecordProperty("clause", "LIFE-8");
  auto survivor = context_->memalloc(4096);
  // A retain of the test's own keeps the context alive past close(): its destruction would
  // free the slabs whatever reset() did.
  driver_->primary_ctx_retain(0);
  runtime_.close();
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
  survivor.reset();
  EXPECT_EQ(driver_->invalid_frees(), 0u);
  driver_->primary_ctx_release(0);
}

TEST_F(PoolTest, IPC_2_BlocksOfOneSlabShareTheHandleWithTheirOffsets) {
  RecordProperty("clause", "IPC-2");
  auto first = context_->memalloc(1000);
  auto second = context_->memalloc(3000);
  const CUdeviceptr slab = first->device_pointer();
  IpcHandle a = context_->get_ipc_handle(first);
  IpcHandle b = context_->get_ipc_handle(second->view(5, 105));
  EXPECT_EQ(std::memcmp(&a.handle(), &b.handle(), sizeof(CUipcMemHandle)), 0);
  EXPECT_EQ(a.offset(), 0u);
  EXPECT_EQ(a.size(), 1000u);
  EXPECT_EQ(b.offset(), second->device_pointer() + 5 - slab);
  EXPECT_EQ(b.size(), 100u);
  ASSERT_TRUE(b.source_info().has_value());
  EXPECT_EQ(*b.source_info(), context_->device_identity());

  // Another simulated process reads exactly the bytes of the exported view.
  std::vector<unsigned char> bytes(3000);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7);
  driver_->memcpy_htod(second->device_pointer(), bytes.data(), bytes.size());
  Runtime importer(driver_->spawn_process(), RuntimeOptions::hermetic());
  IpcHandle received = IpcHandle::deserialize(b.serialize());
  auto opened = received.open(importer.get_context(0));
  std::vector<unsigned char> read(100);
  importer.driver().memcpy_dtoh(read.data(), opened->device_pointer(), read.size());
  EXPECT_TRUE(std::equal(read.begin(), read.end(), bytes.begin() + 5));
  received.close();
}

TEST_F(PoolTest, INFO_1_FreeDropsByTheRoundedSizeAndStaysBelowTotal) {
  RecordProperty("clause", "INFO-1");
  const MemoryInfo before = context_->get_memory_info();
  auto first = context_->memalloc(1000);  // a new slab: device free drops by 2 MiB
  const MemoryInfo one = context_->get_memory_info();
  auto second = context_->memalloc(5000);  // inside it: only the pool's free bytes drop
  const MemoryInfo two = context_->get_memory_info();
  EXPECT_EQ(before.free - one.free, 1024u);
  EXPECT_EQ(one.free - two.free, 5120u);
  EXPECT_LE(two.free, two.total);
  EXPECT_EQ(two.total, 4 * 1024 * kMiB);
  second.reset();
  EXPECT_EQ(context_->get_memory_info().free, one.free);
}

TEST_F(PoolTest, ALLOC_3_OutOfMemoryIsTheDriversErrorAndThePoolStaysUsable) {
  RecordProperty("clause", "ALLOC-3");
  auto keep = context_->memalloc(256);
  EMM_EXPECT_DRIVER_ERROR(context_->memalloc(std::size_t{1} << 50), CUDA_ERROR_OUT_OF_MEMORY,
                          "cuMemAlloc", HasSubstr("CUDA_ERROR_OUT_OF_MEMORY"));
  // A size no device has is refused by the pool itself, with the driver's error type and code.
  EMM_EXPECT_DRIVER_ERROR(context_->memalloc(~std::size_t{0}), CUDA_ERROR_OUT_OF_MEMORY,
                          "PoolMemoryManager::memalloc",
                          HasSubstr("a request of 18446744073709551615 bytes exceeds any device"));
  EXPECT_EQ(driver_->device_bytes_in_use(), 2 * kMiB);
  EXPECT_NE(context_->memalloc(4096), nullptr);
}

class SmallDevicePoolTest : public PoolTest {
 protected:
  SmallDevicePoolTest() : PoolTest(FakeDeviceConfig{.capacity = 5 * kMiB}) {}
};

TEST_F(SmallDevicePoolTest, OutOfMemoryGivesBackKeptSlabsAndRetriesWithTheExactSize) {
  context_->memalloc(1 * kMiB).reset();  // leaves one empty 2 MiB slab kept
  ASSERT_EQ(driver_->device_bytes_in_use(), 2 * kMiB);
  // 4 MiB slab > 3 MiB free: give the kept slab back, then ask for exactly 3 MiB + 256.
  auto large = context_->memalloc(3 * kMiB + 1);
  EXPECT_EQ(driver_->device_bytes_in_use(), 3 * kMiB + 256);
  EXPECT_EQ(pool().statistics().slab_count, 1u);
}

TEST_F(PoolTest, ALLOC_10_ConcurrentTrafficLosesNothing) {
  RecordProperty("clause", "ALLOC-10");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      context_->make_current();
      std::mt19937 random(static_cast<unsigned>(t));
      std::vector<std::shared_ptr<MemoryPointer>> live;
      for (int i = 0; i < 1500; ++i) {
        if (live.size() < 20 && random() % 2 == 0) {
          live.push_back(context_->memalloc(1 + random() % (300 * kKiB)));
        } else if (!live.empty()) {
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(random() % live.size()));
        }
      }
      for (const auto& p : live) {
        if (p->device_pointer() % 256 != 0) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  const PoolStatistics stats = pool().statistics();
  EXPECT_EQ(stats.allocated_blocks, 0u);
  // Every slab is empty now; the pool keeps no more of them than its release threshold.
  EXPECT_LE(stats.slab_bytes, pool().options().release_threshold);
  EXPECT_EQ(driver_->invalid_frees(), 0u);
}

// --- Per-thread caches of freed small blocks
// ------------------------------------------------------

TEST_F(PoolTest, AFreedSmallBlockIsReusedByItsThreadAndCountsAsFree) {
  const MemoryInfo before = context_->get_memory_info();
  auto keep = context_->memalloc(1000);  // keeps the slab in use
  auto first = context_->memalloc(1000);
  const CUdeviceptr address = first->device_pointer();
  first.reset();  // parked in this thread's cache
  const PoolStatistics parked = pool().statistics();
  EXPECT_EQ(parked.allocated_blocks, 1u);
  EXPECT_EQ(parked.allocated_bytes, 1024u);
  EXPECT_EQ(before.free - context_->get_memory_info().free, 1024u);  // INFO-1: parked is free

  // Another thread does not get the parked block (ALLOC-2): it carves a new one.
  CUdeviceptr other = 0;
  std::thread([&] {
    auto p = context_->memalloc(1000);
    other = p->device_pointer();
  }).join();
  EXPECT_NE(other, address);
  EXPECT_EQ(context_->memalloc(1000)->device_pointer(), address);  // this thread's, at once
}

TEST_F(PoolTest, AThreadGivesItsParkedBlocksBackWhenItExits) {
  std::thread([&] {
    std::vector<std::shared_ptr<MemoryPointer>> pointers;
    for (int i = 0; i < 50; ++i) pointers.push_back(context_->memalloc(512 + 256 * (i % 7)));
    pointers.clear();                                             // parked in this thread's cache
    EXPECT_LT(pool().statistics().largest_free_block, 2 * kMiB);  // still split by them
  }).join();
  const PoolStatistics after = pool().statistics();
  EXPECT_EQ(after.allocated_blocks, 0u);
  EXPECT_EQ(after.free_blocks, 1u);  // merged back into one free block
  EXPECT_EQ(after.largest_free_block, 2 * kMiB);
  EXPECT_EQ(after.slab_count, 1u);
}

// A thread's cache counts the pointers made on its thread without atomics while the thread runs
// (ThreadCache::acquire_pointer). Pointers made on a thread that then exits, released on other
// threads before and after the pool is gone, must keep the cache and the state alive exactly as
// long as they live: a cache freed early is a use after free, one never freed a leak (both
// reported by the asan-ubsan stage, whose LeakSanitizer runs at exit).
TEST_F(PoolTest, LIFE_8_PointersOutliveTheThreadThatMadeThemAndThePool) {
  RecordProperty("clause", "LIFE-8");
  std::vector<std::shared_ptr<MemoryPointer>> made;
  std::thread([&] {
    context_->make_current();
    for (int i = 0; i < 40; ++i) made.push_back(context_->memalloc(256 + 256 * (i % 5)));
    context_->memalloc(1024).reset();  // made and released on the owning thread
  }).join();
  // Half released on a third thread while the pool lives, after their thread retired its cache.
  std::thread([&] {
    for (std::size_t i = 0; i < made.size(); i += 2) made[i].reset();
  }).join();
  EXPECT_EQ(pool().statistics().allocated_blocks, made.size() / 2);
  driver_->primary_ctx_retain(0);
  runtime_.close();  // the pool is destroyed; the other half still holds its state
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
  made.clear();  // the last one drops the cache and with it the state
  EXPECT_EQ(driver_->invalid_frees(), 0u);
  driver_->primary_ctx_release(0);
}

// The same without another thread: the owning thread's plain count and a release on another
// thread while the owner still runs meet in the one sum at the owner's exit.
TEST_F(PoolTest, ALLOC_10_APointerReleasedElsewhereWhileItsThreadRunsIsCountedOnce) {
  RecordProperty("clause", "ALLOC-10");
  std::shared_ptr<MemoryPointer> handed_over;
  std::thread([&] {
    context_->make_current();
    auto kept = context_->memalloc(4096);
    handed_over = context_->memalloc(4096);
    std::thread([&] { handed_over.reset(); }).join();  // released remotely: atomic count
    kept.reset();                                      // released here: plain count
  }).join();
  EXPECT_EQ(pool().statistics().allocated_blocks, 0u);
  auto again = context_->memalloc(4096);  // the pool is intact and usable
  EXPECT_NE(again->device_pointer(), 0u);
}

TEST_F(PoolTest, LIFE_7_BlocksParkedBeforeResetAreNeverHandedOutAgain) {
  RecordProperty("clause", "LIFE-7");
  auto parked = context_->memalloc(2000);
  parked.reset();
  std::shared_ptr<MemoryPointer> elsewhere;
  std::thread([&] { elsewhere = context_->memalloc(2000); }).join();
  elsewhere.reset();  // freed on this thread after the allocating thread exited: parked here
  context_->reset();
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
  EXPECT_EQ(pool().statistics().allocated_blocks, 0u);
  const std::size_t allocs_before = allocs();
  auto fresh = context_->memalloc(2000);  // from a new slab, not from the inert cache
  EXPECT_EQ(allocs(), allocs_before + 1);
  EXPECT_EQ(pool().statistics().allocated_blocks, 1u);
  driver_->memset_d8(fresh->device_pointer(), 0, 2000);  // inside memory the driver knows
  fresh.reset();
  EXPECT_EQ(pool().statistics().allocated_blocks, 0u);
  EXPECT_EQ(driver_->invalid_frees(), 0u);
}

TEST_F(PoolTest, ALLOC_10_BlocksFreedOnOtherThreadsLoseNothing) {
  RecordProperty("clause", "ALLOC-10");
  constexpr int kThreads = 6;
  constexpr int kPerThread = 400;
  std::vector<std::vector<std::shared_ptr<MemoryPointer>>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      for (int i = 0; i < kPerThread; ++i)
        made[t].push_back(context_->memalloc(1 + random() % 9000));
    });
  }
  for (auto& thread : threads) thread.join();
  threads.clear();
  // Each thread frees another thread's pointers and allocates again from its cache.
  std::atomic<int> overlaps{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto& theirs = made[(t + 1) % kThreads];
      std::vector<std::shared_ptr<MemoryPointer>> mine;
      for (int i = 0; i < kPerThread; ++i) {
        const std::size_t size = theirs[i]->size();
        theirs[i].reset();
        mine.push_back(context_->memalloc(size));
      }
      std::vector<std::pair<CUdeviceptr, CUdeviceptr>> ranges;
      for (const auto& p : mine)
        ranges.emplace_back(p->device_pointer(), p->device_pointer() + p->size());
      std::sort(ranges.begin(), ranges.end());
      for (std::size_t i = 1; i < ranges.size(); ++i) {
        if (ranges[i - 1].second > ranges[i].first) ++overlaps;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(overlaps.load(), 0);
  const PoolStatistics stats = pool().statistics();
  EXPECT_EQ(stats.allocated_blocks, 0u);
  EXPECT_LE(stats.slab_bytes, pool().options().release_threshold);  // only kept empty slabs
  EXPECT_EQ(driver_->invalid_frees(), 0u);
}

// --- Arenas ------------------------------------------------------------------------------------

class TwoArenaPoolTest : public PoolTest {
 protected:
  explicit TwoArenaPoolTest(FakeDeviceConfig device = {})
      : PoolTest(device, PoolMemoryManager::Options{.arenas = 2}) {}

  // memalloc(size) on a new thread (the next home arena, round-robin).
  std::shared_ptr<MemoryPointer> memalloc_on_new_thread(std::size_t size) {
    std::shared_ptr<MemoryPointer> pointer;
    std::thread([&] { pointer = context_->memalloc(size); }).join();
    return pointer;
  }
};

TEST_F(TwoArenaPoolTest, ThreadsAllocateFromTheirOwnArenaRoundRobin) {
  EXPECT_EQ(pool().options().arenas, 2u);
  auto first = context_->memalloc(1000);       // this thread: arena 0, slab 1
  auto second = memalloc_on_new_thread(1000);  // arena 1: a slab of its own
  EXPECT_EQ(allocs(), 2u);
  const std::size_t slab = 2 * kMiB;
  EXPECT_NE(first->device_pointer() / slab, second->device_pointer() / slab);
  auto third = memalloc_on_new_thread(1000);  // arena 0 again: shares the first slab
  EXPECT_EQ(allocs(), 2u);
  const PoolStatistics stats = pool().statistics();
  EXPECT_EQ(stats.arenas_in_use, 2u);
  EXPECT_EQ(stats.slab_count, 2u);
  EXPECT_EQ(stats.allocated_blocks, 3u);
}

TEST_F(TwoArenaPoolTest, ABlockFreedOnAnotherThreadGoesBackToItsArena) {
  auto keep = context_->memalloc(1000);         // arena 0 in use
  const std::size_t large = 1 * kMiB;           // above the thread caches' 32 KiB: never parked
  auto theirs = memalloc_on_new_thread(large);  // arena 1
  const CUdeviceptr address = theirs->device_pointer();
  theirs.reset();  // freed here, on arena 0's thread: back to arena 1, which keeps its slab
  EXPECT_EQ(frees(), 0u);
  EXPECT_EQ(pool().statistics().allocated_blocks, 1u);
  auto on_arena_0 = memalloc_on_new_thread(large);  // the third thread: arena 0's slab
  EXPECT_NE(on_arena_0->device_pointer(), address);
  auto on_arena_1 = memalloc_on_new_thread(large);  // the fourth: arena 1, the freed block
  EXPECT_EQ(on_arena_1->device_pointer(), address);
  EXPECT_EQ(allocs(), 2u);
  EXPECT_EQ(driver_->invalid_frees(), 0u);
}

TEST_F(PoolTest, ALLOC_10_StatisticsInfoAndDeferScopesRaceSafelyWithTraffic) {
  RecordProperty("clause", "ALLOC-10");
  std::atomic<bool> stop{false};
  std::atomic<int> inconsistent{0};
  std::thread observer([&] {
    while (!stop.load()) {
      const PoolStatistics stats = pool().statistics();
      if (stats.allocated_bytes > stats.slab_bytes) ++inconsistent;
      const MemoryInfo info = context_->get_memory_info();
      if (info.free > info.total) ++inconsistent;
      CleanupGuard guard = pool().defer_cleanup();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(100 + t));
      std::vector<std::shared_ptr<MemoryPointer>> live;
      for (int i = 0; i < 3000; ++i) {
        if (live.size() < 16) live.push_back(context_->memalloc(1 + random() % (64 * kKiB)));
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(random() % live.size()));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  stop = true;
  observer.join();
  EXPECT_EQ(inconsistent.load(), 0);
  const PoolStatistics stats = pool().statistics();
  EXPECT_EQ(stats.allocated_blocks, 0u);
  EXPECT_EQ(stats.defer_depth, 0);
  EXPECT_LE(stats.slab_bytes, pool().options().release_threshold);  // only kept empty slabs
  EXPECT_EQ(driver_->invalid_frees(), 0u);
}

class FullDeviceTwoArenaPoolTest : public TwoArenaPoolTest {
 protected:
  FullDeviceTwoArenaPoolTest() : TwoArenaPoolTest(FakeDeviceConfig{.capacity = 4 * kMiB}) {}
};

TEST_F(FullDeviceTwoArenaPoolTest, ALLOC_3_OutOfMemoryTakesAFreeBlockFromAnotherArena) {
  RecordProperty("clause", "ALLOC-3");
  auto mine = context_->memalloc(1 * kMiB);        // arena 0: slab of 2 MiB
  auto theirs = memalloc_on_new_thread(1 * kMiB);  // arena 1: the device's last 2 MiB
  auto filler = context_->memalloc(768 * kKiB);    // arena 0 has 256 KiB left
  ASSERT_EQ(driver_->device_bytes_in_use(), 4 * kMiB);
  // Arena 0 cannot fit 1 MiB and the device is full, but arena 1 has 1 MiB free.
  auto borrowed = context_->memalloc(1 * kMiB);
  EXPECT_EQ(pool().statistics().slab_count, 2u);  // no new slab: cuMemAlloc failed twice
  EXPECT_EQ(driver_->device_bytes_in_use(), 4 * kMiB);
  EXPECT_EQ(borrowed->device_pointer() / (2 * kMiB), theirs->device_pointer() / (2 * kMiB));
  // With that taken too, the driver's error reaches the caller (ALLOC-3).
  EMM_EXPECT_DRIVER_ERROR(context_->memalloc(1 * kMiB), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
                          HasSubstr("CUDA_ERROR_OUT_OF_MEMORY"));
  borrowed.reset();  // back to arena 1, whatever thread frees it
  EXPECT_EQ(pool().statistics().allocated_blocks, 3u);
  EXPECT_EQ(driver_->invalid_frees(), 0u);
}

TEST(PoolOptions, ArenasDefaultToTheHardwareThreadsAndAreBounded) {
  const PoolMemoryManager automatic(nullptr);
  EXPECT_GE(automatic.options().arenas, 1u);
  EXPECT_LE(automatic.options().arenas, 32u);
  EMM_EXPECT_THROW(InvalidArgumentError,
                   PoolMemoryManager(nullptr, PoolMemoryManager::Options{.arenas = 5000}),
                   "PoolMemoryManager: arenas must be at most 1024 (0 picks one per hardware "
                   "thread), not 5000");
}

TEST(PoolOptions, RejectsASlabSizeThatIsNotAMultipleOf256) {
  EMM_EXPECT_THROW(
      InvalidArgumentError,
      PoolMemoryManager(nullptr, PoolMemoryManager::Options{.slab_size = 1000}),
      "PoolMemoryManager: slab_size must be a non-zero multiple of 256 bytes, not 1000");
}

}  // namespace
}  // namespace emm::examples
