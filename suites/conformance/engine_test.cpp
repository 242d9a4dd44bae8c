// The property engine (conformance/src/engine, spec §8): small defective plugins whose defect
// needs a particular size, order or scope are found by generated sequences, shrunk to a few
// calls, reported with the seed that replays them; the same seed gives the same result; correct
// caching designs pass.
#include <gtest/gtest.h>

#include <cstdlib>
#include <emm/conformance/evaluate.hpp>
#include <emm/conformance/exploration.hpp>
#include <emm/conformance/testing/expect_throw.hpp>
#include <emm/errors.hpp>
#include <emm/numba_memory_manager.hpp>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace emm::conformance {
namespace {

template <class Plugin>
PluginSubject subject(Capabilities caps = {.memory_info = true, .ipc = true, .thread_safe = true}) {
  const PluginDeclaration declaration{
      .name = "engine-test", .capabilities = caps, .defer_cleanup_behaviour = "as the reference"};
  return PluginSubject{PluginDescription::from(complete_declaration<Plugin>(declaration)),
                       [](Context* c) -> std::unique_ptr<BaseCUDAMemoryManager> {
                         return std::make_unique<Plugin>(c);
                       }};
}

ClauseResult run(const PluginSubject& plugin, const char* id, Exploration exploration = {}) {
  RunOptions options;
  options.exploration = exploration;
  return evaluate_on(plugin, *catalogue().find(id), BackendKind::fake, options);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Blocks of 64 KiB and more: the second such request gets the first one's memory while it is
// still live (a size class whose free list pops a live block). Smaller sizes are fine, so a
// fixed scenario of small sizes never sees it.
struct LargeBlocksShared : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    if (size < 64 * 1024) return NumbaCUDAMemoryManager::memalloc(size);
    std::lock_guard lock(mutex_);
    if (std::shared_ptr<MemoryPointer> previous = last_.lock();
        previous && previous->size() >= size) {
      return previous->view(0, size);
    }
    std::shared_ptr<MemoryPointer> made = NumbaCUDAMemoryManager::memalloc(size);
    last_ = made;
    return made;
  }
  std::mutex mutex_;
  std::weak_ptr<MemoryPointer> last_;
};

TEST(Engine, ALLOC_2_ADefectOfLargeSizesIsFoundAndShrunkToTwoCalls) {
  ::testing::Test::RecordProperty("clause", "ALLOC-2");
  const ClauseResult r = run(subject<LargeBlocksShared>(), "ALLOC-2");
  ASSERT_EQ(r.outcome, Outcome::fail) << r.message;
  EXPECT_TRUE(r.message.starts_with("[ALLOC-2] at call ")) << r.message;
  EXPECT_TRUE(contains(r.message, "overlaps the live m1")) << r.message;
  ASSERT_TRUE(r.reproducer.has_value());
  EXPECT_LE(r.reproducer->calls.size(), 3u);
  std::string calls;
  for (const std::string& call : r.reproducer->calls) calls += call + "\n";
  EXPECT_TRUE(contains(calls, "context().memalloc(")) << calls;
  EXPECT_EQ(r.reproducer->seed, kDefaultSeed);
  EXPECT_EQ(r.reproducer->budget, default_budget(BackendKind::fake));
  EXPECT_TRUE(contains(r.reproducer->gtest, "TEST(EmmReproducer, ALLOC_2) {"))
      << r.reproducer->gtest;
  EXPECT_TRUE(contains(r.reproducer->gtest, "--only ALLOC-2 --seed 1 --budget 24"))
      << r.reproducer->gtest;
  EXPECT_TRUE(contains(r.reproducer->gtest, "EXPECT_TRUE(")) << r.reproducer->gtest;
  EXPECT_TRUE(contains(r.reproducer->python, "ctx.memalloc(")) << r.reproducer->python;
  EXPECT_FALSE(r.reproducer->for_python);
}

TEST(Engine, TheSameSeedGivesTheSameFailureAndAnotherSeedExploresAgain) {
  ::testing::Test::RecordProperty("clause", "ALLOC-2");
  const ClauseResult first = run(subject<LargeBlocksShared>(), "ALLOC-2");
  const ClauseResult again = run(subject<LargeBlocksShared>(), "ALLOC-2");
  ASSERT_TRUE(first.reproducer && again.reproducer);
  EXPECT_EQ(first.message, again.message);
  EXPECT_EQ(first.reproducer->calls, again.reproducer->calls);
  EXPECT_EQ(first.reproducer->sequences, again.reproducer->sequences);
  const ClauseResult other = run(subject<LargeBlocksShared>(), "ALLOC-2", {.seed = 77});
  ASSERT_EQ(other.outcome, Outcome::fail) << other.message;
  ASSERT_TRUE(other.reproducer.has_value());
  EXPECT_EQ(other.reproducer->seed, 77u);
}

TEST(Engine, APassingClauseRecordsItsSequencesAndSeed) {
  ::testing::Test::RecordProperty("clause", "FIN-1");
  const ClauseResult r = run(subject<NumbaCUDAMemoryManager>(), "FIN-1", {.seed = 5, .budget = 7});
  ASSERT_EQ(r.outcome, Outcome::pass) << r.message;
  const auto find = [&](const std::string& key) {
    for (const auto& [k, v] : r.properties) {
      if (k == key) return v;
    }
    return std::string("(absent)");
  };
  EXPECT_EQ(find("sequences"), "7");
  EXPECT_EQ(find("sequence_seed"), "5");
  EXPECT_FALSE(r.reproducer.has_value());
}

// A cache of exact sizes that is freed at reset() but never on out of memory: a request of
// another size fails while the cache holds what would satisfy it (spec §8 (c)).
struct CacheNeverGivesBack : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    CUdeviceptr pointer = 0;
    {
      std::lock_guard lock(cache_->mutex);
      auto found = cache_->blocks.find(size);
      if (found != cache_->blocks.end()) {
        pointer = found->second;
        cache_->blocks.erase(found);
      }
    }
    if (pointer == 0) pointer = obtain(size);
    std::shared_ptr<Cache> cache = cache_;
    std::shared_ptr<Driver> shared = context()->runtime().shared_driver();
    std::uint64_t generation = 0;
    {
      std::lock_guard lock(cache_->mutex);
      generation = cache_->generation;
    }
    // A block released after reset() is freed, not cached: reset() released the cache it came
    // from (LIFE-7).
    return std::make_shared<MemoryPointer>(context(), pointer, size, nullptr,
                                           [cache, shared, size, pointer, generation] {
                                             {
                                               std::lock_guard lock(cache->mutex);
                                               if (cache->generation == generation) {
                                                 cache->blocks.emplace(size, pointer);
                                                 return;
                                               }
                                             }
                                             shared->mem_free(pointer);
                                           });
  }
  virtual CUdeviceptr obtain(std::size_t size) { return driver().mem_alloc(size); }
  void reset() override {
    {
      std::lock_guard lock(cache_->mutex);
      ++cache_->generation;
    }
    release_cache();
    NumbaCUDAMemoryManager::reset();
  }
  void release_cache() {
    std::multimap<std::size_t, CUdeviceptr> blocks;
    {
      std::lock_guard lock(cache_->mutex);
      blocks.swap(cache_->blocks);
    }
    for (const auto& [size, pointer] : blocks) driver().mem_free(pointer);
  }
  struct Cache {
    std::mutex mutex;
    std::multimap<std::size_t, CUdeviceptr> blocks;
    std::uint64_t generation = 0;
  };
  std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

// The same cache, correct: out of memory releases the cache and tries once more.
struct CacheGivesBackOnOutOfMemory : CacheNeverGivesBack {
  using CacheNeverGivesBack::CacheNeverGivesBack;
  CUdeviceptr obtain(std::size_t size) override {
    try {
      return driver().mem_alloc(size);
    } catch (const CudaDriverError& error) {
      if (error.code() != CUDA_ERROR_OUT_OF_MEMORY) throw;
      release_cache();
      return driver().mem_alloc(size);
    }
  }
};

TEST(Engine, ALLOC_3_ACacheMustGiveBackWhatWouldSatisfyARequest) {
  ::testing::Test::RecordProperty("clause", "ALLOC-3");
  const ClauseResult never = run(subject<CacheNeverGivesBack>(), "ALLOC-3");
  ASSERT_EQ(never.outcome, Outcome::fail) << never.message;
  EXPECT_TRUE(contains(never.message,
                       "not to report out of memory while the caller held nothing "
                       "and the plugin's own held memory would satisfy it (spec "
                       "§8 (c))"))
      << never.message;
  ASSERT_TRUE(never.reproducer.has_value());
  // The fill's calls (a block left for the plugin to keep, the fill, a small block on the full
  // device, the release, the request, reset(), the request again) and at most one before them.
  EXPECT_LE(never.reproducer->calls.size(), 8u);
  // The correct cache of the same design passes, and keeping memory is not held against it.
  for (const char* id : {"ALLOC-3", "FIN-1", "FIN-5", "LIFE-7", "DEFER-4"}) {
    const ClauseResult correct = run(subject<CacheGivesBackOnOutOfMemory>(), id);
    EXPECT_EQ(correct.outcome, Outcome::pass) << id << ": " << correct.message;
  }
}

// A defer_cleanup() guard that does not hold the parent's: the HostOnly queue keeps flushing
// inside the scope once its count threshold (10) is crossed, so the 11th release in a scope
// frees to the driver.
struct GuardWithoutParent : NumbaCUDAMemoryManager {
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  CleanupGuard defer_cleanup() override {
    return CleanupGuard([] {});
  }
};

TEST(Engine, DEFER_2_NothingIsFreedToTheDriverInsideAScope) {
  ::testing::Test::RecordProperty("clause", "DEFER-2");
  const ClauseResult r = run(subject<GuardWithoutParent>(), "DEFER-2");
  ASSERT_EQ(r.outcome, Outcome::fail) << r.message;
  EXPECT_TRUE(contains(r.message,
                       "expected nothing to be freed to the driver while a "
                       "defer_cleanup() guard is open (spec §8: deferral forbids "
                       "freeing inside a scope)"))
      << r.message;
  ASSERT_TRUE(r.reproducer.has_value());
  EXPECT_LE(r.reproducer->calls.size(), 4u);
  EXPECT_EQ(run(subject<NumbaCUDAMemoryManager>(), "DEFER-2").outcome, Outcome::pass);
}

TEST(Engine, TheEnvironmentSetsSeedAndBudgetForTheInProcessFlavours) {
  ::setenv("EMMKIT_SEED", "9", 1);
  ::setenv("EMMKIT_BUDGET", "3", 1);
  const Exploration set = exploration_from_environment();
  EXPECT_EQ(set.seed, 9u);
  EXPECT_EQ(set.budget, 3);
  const ClauseResult r = run(subject<NumbaCUDAMemoryManager>(), "ALLOC-1");
  ::setenv("EMMKIT_BUDGET", "0", 1);
  EMM_EXPECT_THROW(InvalidArgumentError, static_cast<void>(exploration_from_environment()),
                   "EMMKIT_BUDGET must be a number of sequences per clause from 1 to 1000000 "
                   "(got '0'); unset it for the default");
  ::setenv("EMMKIT_SEED", "x", 1);
  EMM_EXPECT_THROW(InvalidArgumentError, static_cast<void>(exploration_from_environment()),
                   "EMMKIT_SEED must be a whole number (got 'x'); unset it for the default");
  ::unsetenv("EMMKIT_SEED");
  ::unsetenv("EMMKIT_BUDGET");
  ASSERT_EQ(r.outcome, Outcome::pass) << r.message;
  bool three = false;
  for (const auto& [key, value] : r.properties) three |= key == "sequences" && value == "3";
  EXPECT_TRUE(three);
  const Exploration plain = exploration_from_environment();
  EXPECT_EQ(plain.seed, kDefaultSeed);
  EXPECT_EQ(plain.budget, 0);
}

}  // namespace
}  // namespace emm::conformance
