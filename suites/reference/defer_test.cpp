// DEFER-1, DEFER-5: defer_cleanup composition at the context, and the default policy's nesting
// counter (spec 2.4, 2.5), mirroring the intent of Numba's TestDeferCleanup.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "emm/cleanup_guard.hpp"
#include "emm/context.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/pending_deallocs.hpp"
#include "emm/runtime.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using ::testing::ElementsAre;

// --- DEFER-1 -------------------------------------------------------------------------------

// Records, on entering and leaving its scope, whether the context's own queue is disabled and
// whether its inherited (HostOnly) queue is.
class ScopeRecordingPlugin : public NumbaCUDAMemoryManager {
 public:
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  std::vector<std::string> log;

  CleanupGuard defer_cleanup() override {
    log.push_back("plugin enter: " + state());
    CleanupGuard parent = NumbaCUDAMemoryManager::defer_cleanup();
    log.push_back("plugin entered: " + state());
    return CleanupGuard([this] { log.push_back("plugin exit: " + state()); }, std::move(parent));
  }

 private:
  std::string state() {
    return std::string("context queue ") +
           (context()->deallocations().is_disabled() ? "off" : "on") + ", own queue " +
           (deallocations().is_disabled() ? "off" : "on");
  }
};

TEST(DeferCleanup, DEFER_1_PluginGuardIsOuterContextQueueInnerAndExitIsReversed) {
  EMM_CLAUSE("DEFER-1");
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  runtime.set_memory_manager<ScopeRecordingPlugin>();
  Context& context = runtime.get_context(0);
  auto& plugin = dynamic_cast<ScopeRecordingPlugin&>(context.memory_manager());

  {
    CleanupGuard guard = context.defer_cleanup();
    EXPECT_TRUE(guard.active());
    EXPECT_TRUE(context.deallocations().is_disabled()) << "the context queue is off inside";
    EXPECT_TRUE(plugin.deallocations().is_disabled()) << "the plugin's queue is off inside";
    plugin.log.push_back("body");
  }
  EXPECT_FALSE(context.deallocations().is_disabled());
  EXPECT_FALSE(plugin.deallocations().is_disabled());
  EXPECT_THAT(plugin.log, ElementsAre(
                              // The plugin is entered first, while the context queue is still on...
                              "plugin enter: context queue on, own queue on",
                              "plugin entered: context queue on, own queue off", "body",
                              // ...and left last, after the context queue was turned back on.
                              "plugin exit: context queue on, own queue off"));
}

TEST(DeferCleanup, DEFER_1_ContextGuardsNestAndMove) {
  EMM_CLAUSE("DEFER-1");
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  PendingDeallocs& plugin_queue = test::host_only(context).deallocations();
  CleanupGuard outer = context.defer_cleanup();
  {
    CleanupGuard inner = context.defer_cleanup();
    CleanupGuard moved = std::move(inner);
    EXPECT_FALSE(inner.active());  // NOLINT(bugprone-use-after-move): checking the moved-from state
    EXPECT_TRUE(moved.active());
  }
  EXPECT_TRUE(context.deallocations().is_disabled()) << "the outer guard is still alive";
  EXPECT_TRUE(plugin_queue.is_disabled());
  outer.release();
  EXPECT_FALSE(outer.active());
  EXPECT_FALSE(context.deallocations().is_disabled());
  EXPECT_FALSE(plugin_queue.is_disabled());
  outer.release();  // idempotent
  EXPECT_FALSE(context.deallocations().is_disabled());
}

// --- DEFER-5 -------------------------------------------------------------------------------

struct Recorder {
  std::vector<int> ran;
  std::function<void()> item(int id) {
    return [this, id] { ran.push_back(id); };
  }
};

TEST(DeferCleanup, DEFER_5_NestingCounterKeepsFlushANoOpUntilTheOutermostScopeEnds) {
  EMM_CLAUSE("DEFER-5");
  Recorder recorder;
  PendingDeallocs queue(DeallocConfig{}, 1 << 30);
  queue.add_item(recorder.item(1), 8);
  queue.add_item(recorder.item(2), 8);
  {
    CleanupGuard outer = queue.disable();
    {
      CleanupGuard inner = queue.disable();
      EXPECT_TRUE(queue.is_disabled());
      queue.clear();
      EXPECT_EQ(queue.count(), 2u) << "flush is a no-op while active";
    }
    EXPECT_TRUE(queue.is_disabled()) << "a counter, not a flag: the outer scope is still active";
    queue.clear();
    EXPECT_EQ(queue.count(), 2u);
  }
  EXPECT_FALSE(queue.is_disabled());
  EXPECT_EQ(queue.count(), 2u) << "leaving the scope does not flush";
  EXPECT_TRUE(recorder.ran.empty());
  queue.clear();
  EXPECT_EQ(queue.count(), 0u);
  EXPECT_THAT(recorder.ran, ElementsAre(1, 2));
}

TEST(DeferCleanup, DEFER_5_ExceptionInsideTheScopeRestoresTheCounter) {
  EMM_CLAUSE("DEFER-5");
  struct CustomError : std::runtime_error {
    CustomError() : std::runtime_error("raised inside defer_cleanup") {}
  };
  Recorder recorder;
  PendingDeallocs queue(DeallocConfig{}, 1 << 30);
  CleanupGuard outer = queue.disable();
  EXPECT_THROW(
      {
        CleanupGuard inner = queue.disable();
        queue.add_item(recorder.item(1), 8);
        throw CustomError();
      },
      CustomError);
  EXPECT_TRUE(queue.is_disabled()) << "back to the outer scope's count, not to zero";
  queue.clear();
  EXPECT_EQ(queue.count(), 1u);
  outer.release();
  EXPECT_FALSE(queue.is_disabled());
  queue.clear();
  EXPECT_THAT(recorder.ran, ElementsAre(1));
}

class DeferThroughContext : public ::testing::Test {
 protected:
  DeferThroughContext()
      : fake_(std::make_shared<FakeDriver>()),
        runtime_(fake_, RuntimeOptions::hermetic()),
        context_(runtime_.get_context(0)),
        queue_(test::host_only(context_).deallocations()) {}
  std::size_t frees() const { return fake_->call_count(DriverCall::cuMemFree); }

  std::shared_ptr<FakeDriver> fake_;
  Runtime runtime_;
  Context& context_;
  PendingDeallocs& queue_;
};

TEST_F(DeferThroughContext, DEFER_5_FreesInsideTheScopeWaitForAFlushAfterIt) {
  EMM_CLAUSE("DEFER-5");
  auto first = context_.memalloc(40);
  queue_.clear();
  ASSERT_EQ(queue_.count(), 0u);
  {
    CleanupGuard guard = context_.defer_cleanup();
    auto second = context_.memalloc(40);
    first.reset();
    EXPECT_EQ(queue_.count(), 1u);
    second.reset();
    EXPECT_EQ(queue_.count(), 2u);
    queue_.clear();
    EXPECT_EQ(queue_.count(), 2u);
    EXPECT_EQ(frees(), 0u);
  }
  EXPECT_EQ(queue_.count(), 2u) << "leaving defer_cleanup does not flush";
  EXPECT_EQ(frees(), 0u);
  queue_.clear();
  EXPECT_EQ(queue_.count(), 0u);
  EXPECT_EQ(frees(), 2u);
  EXPECT_EQ(fake_->device_bytes_in_use(), 0u);
}

TEST_F(DeferThroughContext, DEFER_5_NestedScopesThroughTheContext) {
  EMM_CLAUSE("DEFER-5");
  auto first = context_.memalloc(40);
  {
    CleanupGuard outer = context_.defer_cleanup();
    {
      CleanupGuard inner = context_.defer_cleanup();
      auto second = context_.memalloc(40);
      first.reset();
      second.reset();
      queue_.clear();
      EXPECT_EQ(queue_.count(), 2u);
    }
    queue_.clear();
    EXPECT_EQ(queue_.count(), 2u) << "the outer scope is still active";
  }
  queue_.clear();
  EXPECT_EQ(queue_.count(), 0u);
  EXPECT_EQ(frees(), 2u);
}

TEST_F(DeferThroughContext, DEFER_5_ExceptionThroughTheContextRestoresBothQueues) {
  EMM_CLAUSE("DEFER-5");
  struct CustomError {};
  auto first = context_.memalloc(40);
  auto second = context_.memalloc(40);
  try {
    CleanupGuard guard = context_.defer_cleanup();
    second.reset();
    EXPECT_EQ(queue_.count(), 1u);
    queue_.clear();
    EXPECT_EQ(queue_.count(), 1u);
    throw CustomError{};
  } catch (const CustomError&) {
  }
  EXPECT_FALSE(queue_.is_disabled());
  EXPECT_FALSE(context_.deallocations().is_disabled());
  queue_.clear();
  EXPECT_EQ(queue_.count(), 0u);
  first.reset();
  EXPECT_EQ(queue_.count(), 1u);
  queue_.clear();
  EXPECT_EQ(queue_.count(), 0u);
  EXPECT_EQ(fake_->device_bytes_in_use(), 0u);
}

}  // namespace
}  // namespace emm
