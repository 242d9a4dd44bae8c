// DEALLOC-1..7: the default manager's deferred deallocation (spec 2.4), on emm::PendingDeallocs
// directly and through NumbaCUDAMemoryManager over the fake driver, mirroring the intent of
// Numba's TestDeallocation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/pending_deallocs.hpp"
#include "emm/runtime.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StrEq;

struct Recorder {
  std::vector<int> ran;
  std::function<void()> item(int id) {
    return [this, id] { ran.push_back(id); };
  }
};

constexpr std::size_t kLargeCapacity = std::size_t{1} << 30;

// A runtime over one fake device, with the default manager's queue at hand.
class DefaultManager : public ::testing::Test {
 protected:
  explicit DefaultManager(FakeDeviceConfig device = {},
                          RuntimeOptions options = RuntimeOptions::hermetic())
      : fake_(make_fake(device)),
        runtime_(fake_, std::move(options)),
        context_(runtime_.get_context(0)),
        queue_(test::host_only(context_).deallocations()) {}

  static std::shared_ptr<FakeDriver> make_fake(FakeDeviceConfig device) {
    FakeSystemConfig config;
    config.devices = {device};
    return std::make_shared<FakeDriver>(config);
  }
  std::size_t calls(DriverCall call) const { return fake_->call_count(call); }
  // Allocates and drops `size` bytes: one item in the queue (unless that flushes).
  void drop(std::size_t size) { context_.memalloc(size).reset(); }

  std::shared_ptr<FakeDriver> fake_;
  Runtime runtime_;
  Context& context_;
  PendingDeallocs& queue_;
};

// --- DEALLOC-1 -----------------------------------------------------------------------------

TEST(PendingDeallocs, DEALLOC_1_TenItemsStayAndTheEleventhFlushes) {
  EMM_CLAUSE("DEALLOC-1");
  for (std::size_t size : {std::size_t{0}, std::size_t{1}}) {
    SCOPED_TRACE("item size " + std::to_string(size));
    Recorder recorder;
    PendingDeallocs queue(DeallocConfig{}, kLargeCapacity);
    for (int i = 0; i < 10; ++i) {
      queue.add_item(recorder.item(i), size);
      EXPECT_EQ(queue.count(), static_cast<std::size_t>(i + 1));
    }
    EXPECT_TRUE(recorder.ran.empty()) << "10 == max_count is not over the threshold";
    queue.add_item(recorder.item(10), size);
    EXPECT_EQ(queue.count(), 0u);
    EXPECT_EQ(queue.pending_bytes(), 0u);
    EXPECT_EQ(recorder.ran.size(), 11u) << "the 11th item flushes all of them";
  }
}

TEST(PendingDeallocs, DEALLOC_1_ConfiguredCountIsStrictToo) {
  EMM_CLAUSE("DEALLOC-1");
  Recorder recorder;
  PendingDeallocs queue(DeallocConfig{3, DeallocConfig::kDefaultRatio}, kLargeCapacity);
  for (int i = 0; i < 3; ++i) queue.add_item(recorder.item(i));
  EXPECT_EQ(queue.count(), 3u);
  queue.add_item(recorder.item(3));
  EXPECT_EQ(queue.count(), 0u);
  EXPECT_THAT(recorder.ran, ElementsAre(0, 1, 2, 3));
}

TEST_F(DefaultManager, DEALLOC_1_DefaultManagerFreesOnTheEleventhDroppedPointer) {
  EMM_CLAUSE("DEALLOC-1");
  queue_.clear();
  ASSERT_EQ(queue_.count(), 0u);
  for (std::size_t i = 0; i < DeallocConfig::kDefaultMaxCount; ++i) {
    drop(8);
    EXPECT_EQ(queue_.count(), i + 1);
  }
  EXPECT_EQ(calls(DriverCall::cuMemFree), 0u);
  drop(8);
  EXPECT_EQ(queue_.count(), 0u);
  EXPECT_EQ(calls(DriverCall::cuMemFree), 11u);
  EXPECT_EQ(fake_->device_bytes_in_use(), 0u);
}

// --- DEALLOC-2 -----------------------------------------------------------------------------

TEST(PendingDeallocs, DEALLOC_2_ByteThresholdIsStrictAndFloored) {
  EMM_CLAUSE("DEALLOC-2");
  Recorder recorder;
  PendingDeallocs queue(DeallocConfig{}, 1000);  // limit floor(1000 * 0.2) = 200
  EXPECT_EQ(queue.max_pending_bytes(), 200u);
  queue.add_item(recorder.item(0), 150);
  queue.add_item(recorder.item(1), 50);
  EXPECT_EQ(queue.pending_bytes(), 200u);
  EXPECT_EQ(queue.count(), 2u) << "bytes equal to the limit do not flush";
  queue.add_item(recorder.item(2), 1);
  EXPECT_EQ(queue.count(), 0u) << "one byte over the limit flushes";
  EXPECT_THAT(recorder.ran, ElementsAre(0, 1, 2));

  // floor, not rounding: 999 * 0.2 = 199.8 -> 199, 1001 * 0.2 = 200.2 -> 200.
  PendingDeallocs below(DeallocConfig{}, 999);
  EXPECT_EQ(below.max_pending_bytes(), 199u);
  below.add_item(recorder.item(3), 199);
  EXPECT_EQ(below.count(), 1u);
  below.add_item(recorder.item(4), 1);
  EXPECT_EQ(below.count(), 0u) << "200 > floor(199.8)";
  PendingDeallocs above(DeallocConfig{}, 1001);
  EXPECT_EQ(above.max_pending_bytes(), 200u);
  above.add_item(recorder.item(5), 200);
  EXPECT_EQ(above.count(), 1u);
}

TEST(PendingDeallocs, DEALLOC_2_ConfiguredRatio) {
  EMM_CLAUSE("DEALLOC-2");
  PendingDeallocs queue(DeallocConfig{DeallocConfig::kDefaultMaxCount, 0.5}, 1001);
  EXPECT_EQ(queue.max_pending_bytes(), 500u);
  queue.set_config(DeallocConfig{DeallocConfig::kDefaultMaxCount, 0.25});
  EXPECT_EQ(queue.max_pending_bytes(), 250u);
}

class DefaultManagerOneGigabyte : public DefaultManager {
 protected:
  static FakeDeviceConfig device() {
    FakeDeviceConfig d;
    d.capacity = 1'000'000'000;
    return d;
  }
  DefaultManagerOneGigabyte() : DefaultManager(device()) {}
};

TEST_F(DefaultManagerOneGigabyte, DEALLOC_2_DefaultManagerFlushesOnlyAboveTheByteLimit) {
  EMM_CLAUSE("DEALLOC-2");
  // Numba's test_max_pending_bytes: a limit of 10^6 bytes.
  queue_.set_config(DeallocConfig{DeallocConfig::kDefaultMaxCount, 0.001});
  ASSERT_EQ(queue_.max_pending_bytes(), 1'000'000u);
  queue_.clear();
  drop(500'000);
  EXPECT_EQ(queue_.count(), 1u);
  drop(queue_.max_pending_bytes() - queue_.pending_bytes());
  EXPECT_EQ(queue_.count(), 2u) << "pending bytes exactly at the limit";
  EXPECT_EQ(queue_.pending_bytes(), 1'000'000u);
  drop(1);
  EXPECT_EQ(queue_.count(), 0u);
  EXPECT_EQ(calls(DriverCall::cuMemFree), 3u);
}

// --- DEALLOC-3 -----------------------------------------------------------------------------

class DefaultManagerOddCapacity : public DefaultManager {
 protected:
  static constexpr std::size_t kCapacity = (std::size_t{3} << 30) + 4096;
  static FakeDeviceConfig device() {
    FakeDeviceConfig d;
    d.capacity = kCapacity;
    return d;
  }
  DefaultManagerOddCapacity() : DefaultManager(device()) {}
};

TEST_F(DefaultManagerOddCapacity, DEALLOC_3_CapacityIsTheDevicesTotalMemoryAtInitialize) {
  EMM_CLAUSE("DEALLOC-3");
  EXPECT_TRUE(queue_.memory_capacity_set());
  EXPECT_EQ(queue_.memory_capacity(), kCapacity);
  EXPECT_EQ(queue_.max_pending_bytes(),
            static_cast<std::size_t>(std::floor(static_cast<double>(kCapacity) * 0.2)));
  // Later initialize() calls, with memory in use, leave it alone.
  auto held = context_.memalloc(1 << 20);
  context_.prepare_for_use();
  context_.prepare_for_use();
  EXPECT_EQ(queue_.memory_capacity(), kCapacity);
}

TEST(PendingDeallocs, DEALLOC_3_CapacityComesFromGetMemoryInfoAndIsSetOnlyIfUnset) {
  EMM_CLAUSE("DEALLOC-3");
  class SmallInfo : public NumbaCUDAMemoryManager {
   public:
    using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
    MemoryInfo get_memory_info() override { return MemoryInfo{32, 64}; }
  };
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  const CUcontext handle = fake->primary_ctx_retain(0);
  auto small = [](Context* c) { return std::make_unique<SmallInfo>(c); };
  {
    Context context(runtime, 0, handle, small, DeallocConfig{});
    PendingDeallocs& queue = test::host_only(context).deallocations();
    EXPECT_FALSE(queue.memory_capacity_set()) << "not set before initialize()";
    EXPECT_EQ(queue.max_pending_bytes(), 0u);
    context.prepare_for_use();
    EXPECT_EQ(queue.memory_capacity(), 64u) << "get_memory_info().total";
    EXPECT_EQ(queue.max_pending_bytes(), 12u);
  }
  {
    Context context(runtime, 0, handle, small, DeallocConfig{});
    PendingDeallocs& queue = test::host_only(context).deallocations();
    queue.set_memory_capacity(123);
    context.prepare_for_use();
    EXPECT_EQ(queue.memory_capacity(), 123u) << "an already set capacity is kept";
  }
  fake->primary_ctx_release(0);
}

TEST(PendingDeallocs, DEALLOC_3_UnsetCapacityFlushesAnySizedItemAtOnce) {
  EMM_CLAUSE("DEALLOC-3");
  Recorder recorder;
  PendingDeallocs queue;  // capacity not set: byte limit 0
  EXPECT_FALSE(queue.memory_capacity_set());
  queue.add_item(recorder.item(0), 0);
  EXPECT_EQ(queue.count(), 1u) << "an unsized item counts 0 bytes";
  queue.add_item(recorder.item(1), 1);
  EXPECT_EQ(queue.count(), 0u) << "1 byte > limit 0";
  EXPECT_THAT(recorder.ran, ElementsAre(0, 1));
}

// --- DEALLOC-4 -----------------------------------------------------------------------------

TEST(PendingDeallocs, DEALLOC_4_FlushIsANoOpWhileDeferred) {
  EMM_CLAUSE("DEALLOC-4");
  Recorder recorder;
  PendingDeallocs queue(DeallocConfig{}, 1000);  // limit 200 bytes, 10 items
  {
    CleanupGuard guard = queue.disable();
    for (int i = 0; i < 50; ++i) queue.add_item(recorder.item(i), 100);
    EXPECT_EQ(queue.count(), 50u) << "both thresholds crossed, nothing flushed";
    EXPECT_EQ(queue.pending_bytes(), 5000u);
    queue.clear();
    EXPECT_EQ(queue.count(), 50u) << "an explicit flush is a no-op too";
  }
  EXPECT_TRUE(recorder.ran.empty());
  EXPECT_EQ(queue.count(), 50u);
  queue.add_item(recorder.item(50), 0);  // the next threshold check flushes everything
  EXPECT_EQ(queue.count(), 0u);
  EXPECT_EQ(recorder.ran.size(), 51u);
}

TEST_F(DefaultManager, DEALLOC_4_DefaultManagerKeepsEveryFreeWhileDeferred) {
  EMM_CLAUSE("DEALLOC-4");
  {
    CleanupGuard guard = context_.defer_cleanup();
    for (int i = 0; i < 20; ++i) drop(1 << 20);
    EXPECT_EQ(queue_.count(), 20u);
    EXPECT_EQ(calls(DriverCall::cuMemFree), 0u);
    EXPECT_EQ(fake_->device_bytes_in_use(), std::size_t{20} << 20);
  }
  EXPECT_EQ(queue_.count(), 20u);
  drop(8);
  EXPECT_EQ(queue_.count(), 0u);
  EXPECT_EQ(calls(DriverCall::cuMemFree), 21u);
  EXPECT_EQ(fake_->device_bytes_in_use(), 0u);
}

// --- DEALLOC-5 -----------------------------------------------------------------------------

TEST(PendingDeallocs, DEALLOC_5_FlushIsFifo) {
  EMM_CLAUSE("DEALLOC-5");
  Recorder recorder;
  PendingDeallocs queue(DeallocConfig{}, kLargeCapacity);
  for (int i = 0; i < 7; ++i) queue.add_item(recorder.item(i), static_cast<std::size_t>(i));
  queue.clear();
  EXPECT_THAT(recorder.ran, ElementsAre(0, 1, 2, 3, 4, 5, 6));
}

struct FirstFailure : std::runtime_error {
  FirstFailure() : std::runtime_error("first destructor failure") {}
};
struct SecondFailure : std::runtime_error {
  SecondFailure() : std::runtime_error("second destructor failure") {}
};

TEST(PendingDeallocs, DEALLOC_5_ThrowingDestructorDoesNotStopTheRestAndTheFirstErrorIsRethrown) {
  EMM_CLAUSE("DEALLOC-5");
  Recorder recorder;
  PendingDeallocs queue(DeallocConfig{}, kLargeCapacity);
  for (int i = 0; i < 6; ++i) {
    if (i == 1) {
      queue.add_item(
          [&recorder] {
            recorder.ran.push_back(1);
            throw FirstFailure();
          },
          10);
    } else if (i == 3) {
      queue.add_item(
          [&recorder] {
            recorder.ran.push_back(3);
            throw SecondFailure();
          },
          10);
    } else {
      queue.add_item(recorder.item(i), 10);
    }
  }
  EMM_EXPECT_THROW(FirstFailure, queue.clear(), StrEq("first destructor failure"));
  EXPECT_THAT(recorder.ran, ElementsAre(0, 1, 2, 3, 4, 5)) << "every destructor ran, in order";
  EXPECT_EQ(queue.count(), 0u) << "nothing is left queued";
  EXPECT_EQ(queue.pending_bytes(), 0u);
  EXPECT_NO_THROW(queue.clear());
  EXPECT_EQ(recorder.ran.size(), 6u) << "nothing runs twice";
}

TEST(PendingDeallocs, DEALLOC_5_ThresholdFlushPropagatesTheFirstError) {
  EMM_CLAUSE("DEALLOC-5");
  Recorder recorder;
  PendingDeallocs queue(DeallocConfig{2, DeallocConfig::kDefaultRatio}, kLargeCapacity);
  queue.add_item([] { throw FirstFailure(); });
  queue.add_item(recorder.item(1));
  EMM_EXPECT_THROW(FirstFailure, queue.add_item(recorder.item(2)),
                   StrEq("first destructor failure"));
  EXPECT_THAT(recorder.ran, ElementsAre(1, 2));
  EXPECT_EQ(queue.count(), 0u);
}

TEST_F(DefaultManager, DEALLOC_5_FailingCuMemFreeDoesNotLeakTheOthers) {
  EMM_CLAUSE("DEALLOC-5");
  for (int i = 0; i < 3; ++i) drop(4096);
  ASSERT_EQ(queue_.count(), 3u);
  fake_->fail_call(DriverCall::cuMemFree, CUDA_ERROR_INVALID_VALUE, 2);  // the middle one
  auto error = EMM_EXPECT_THROW(CudaDriverError, queue_.clear(),
                                HasSubstr("cuMemFree failed: CUDA_ERROR_INVALID_VALUE"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(calls(DriverCall::cuMemFree), 3u);
  EXPECT_EQ(fake_->live_allocations().size(), 1u) << "only the failed free is outstanding";
  EXPECT_EQ(queue_.count(), 0u);
}

// --- DEALLOC-6 -----------------------------------------------------------------------------

class OutOfMemory : public DefaultManager {
 protected:
  OutOfMemory() {
    for (int i = 0; i < 3; ++i) drop(4096);
  }
  void SetUp() override {
    ASSERT_EQ(queue_.count(), 3u);
    allocs_ = calls(DriverCall::cuMemAlloc);
  }
  std::size_t new_allocs() const { return calls(DriverCall::cuMemAlloc) - allocs_; }
  std::size_t allocs_ = 0;
};

TEST_F(OutOfMemory, DEALLOC_6_OutOfMemoryFlushesAndRetriesOnce) {
  EMM_CLAUSE("DEALLOC-6");
  fake_->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY);
  auto memory = context_.memalloc(1024);
  EXPECT_EQ(memory->size(), 1024u);
  EXPECT_EQ(new_allocs(), 2u) << "one failed attempt, one retry";
  EXPECT_EQ(queue_.count(), 0u) << "the queue was flushed before the retry";
  EXPECT_EQ(calls(DriverCall::cuMemFree), 3u);
}

TEST_F(OutOfMemory, DEALLOC_6_SecondOutOfMemoryIsRethrownWithoutAThirdAttempt) {
  EMM_CLAUSE("DEALLOC-6");
  fake_->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY, 1, 2);
  auto error = EMM_EXPECT_THROW(CudaDriverError, context_.memalloc(1024),
                                HasSubstr("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(new_allocs(), 2u) << "retried exactly once";
  EXPECT_EQ(queue_.count(), 0u);
  EXPECT_EQ(context_.memalloc(1024)->size(), 1024u) << "still usable";
}

TEST_F(OutOfMemory, DEALLOC_6_OtherErrorsAreNotRetried) {
  EMM_CLAUSE("DEALLOC-6");
  fake_->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_INVALID_VALUE);
  auto error = EMM_EXPECT_THROW(CudaDriverError, context_.memalloc(1024),
                                HasSubstr("cuMemAlloc failed: CUDA_ERROR_INVALID_VALUE"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(new_allocs(), 1u);
  EXPECT_EQ(queue_.count(), 3u) << "no flush for errors other than out of memory";
}

TEST_F(OutOfMemory, DEALLOC_6_InsideDeferCleanupTheRetryHappensWithoutAFlush) {
  EMM_CLAUSE("DEALLOC-6");
  CleanupGuard guard = context_.defer_cleanup();
  fake_->fail_call(DriverCall::cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(context_.memalloc(1024)->size(), 1024u);
  EXPECT_EQ(new_allocs(), 2u);
  EXPECT_GE(queue_.count(), 3u) << "the flush is a no-op inside defer_cleanup";
  EXPECT_EQ(calls(DriverCall::cuMemFree), 0u);
}

class SmallDevice : public DefaultManager {
 protected:
  static FakeDeviceConfig device() {
    FakeDeviceConfig d;
    d.capacity = std::size_t{64} << 20;
    return d;
  }
  SmallDevice() : DefaultManager(device()) {}
};

TEST_F(SmallDevice, DEALLOC_6_RealExhaustionIsRelievedByFlushingPendingFrees) {
  EMM_CLAUSE("DEALLOC-6");
  {
    CleanupGuard guard = context_.defer_cleanup();
    drop(std::size_t{40} << 20);  // pending: the device is 40 of 64 MiB full
  }
  ASSERT_EQ(queue_.count(), 1u);
  const std::size_t allocs = calls(DriverCall::cuMemAlloc);
  auto memory = context_.memalloc(std::size_t{40} << 20);
  EXPECT_EQ(calls(DriverCall::cuMemAlloc) - allocs, 2u);
  EXPECT_EQ(calls(DriverCall::cuMemFree), 1u);
  EXPECT_EQ(queue_.count(), 0u);
  EXPECT_EQ(fake_->device_bytes_in_use(), std::size_t{40} << 20);
}

TEST_F(DefaultManager, DEALLOC_6_HostAllocationsRetryOnlyWhenMapped) {
  EMM_CLAUSE("DEALLOC-6");
  fake_->fail_call(DriverCall::cuMemHostAlloc, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(context_.memhostalloc(4096, true).is_mapped());
  EXPECT_EQ(calls(DriverCall::cuMemHostAlloc), 2u);

  fake_->fail_call(DriverCall::cuMemHostAlloc, CUDA_ERROR_OUT_OF_MEMORY);
  auto error = EMM_EXPECT_THROW(CudaDriverError, context_.memhostalloc(4096, false),
                                HasSubstr("CUDA_ERROR_OUT_OF_MEMORY"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(calls(DriverCall::cuMemHostAlloc), 3u) << "pinned allocations are not retried";

  auto buffer = std::make_shared<std::vector<char>>(16384);
  fake_->fail_call(DriverCall::cuMemHostRegister, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(context_.mempin(buffer, buffer->data(), buffer->size(), true).is_mapped());
  EXPECT_EQ(calls(DriverCall::cuMemHostRegister), 2u);

  fake_->fail_call(DriverCall::cuMemHostRegister, CUDA_ERROR_OUT_OF_MEMORY);
  EMM_EXPECT_THROW(CudaDriverError, context_.mempin(buffer, buffer->data(), buffer->size(), false),
                   HasSubstr("CUDA_ERROR_OUT_OF_MEMORY"));
  EXPECT_EQ(calls(DriverCall::cuMemHostRegister), 3u);
  EXPECT_EQ(fake_->host_registration_count(), 0u);
}

// --- DEALLOC-7 -----------------------------------------------------------------------------

constexpr const char* kCountVar = "EMM_CUDA_MAX_PENDING_DEALLOCS_COUNT";
constexpr const char* kRatioVar = "EMM_CUDA_MAX_PENDING_DEALLOCS_RATIO";

std::function<std::optional<std::string>(const char*)> environment(
    std::map<std::string, std::string> entries) {
  return [entries = std::move(entries)](const char* name) -> std::optional<std::string> {
    auto found = entries.find(name);
    if (found == entries.end()) return std::nullopt;
    return found->second;
  };
}

TEST(DeallocConfig, DEALLOC_7_ValidValuesAreUsedWithoutWarnings) {
  EMM_CLAUSE("DEALLOC-7");
  Diagnostics::Capture capture;
  DeallocConfig config =
      DeallocConfig::from_environment(environment({{kCountVar, "3"}, {kRatioVar, "0.5"}}));
  EXPECT_EQ(config.max_count, 3u);
  EXPECT_DOUBLE_EQ(config.ratio, 0.5);
  DeallocConfig defaults = DeallocConfig::from_environment(environment({}));
  EXPECT_EQ(defaults.max_count, 10u);
  EXPECT_DOUBLE_EQ(defaults.ratio, 0.2);
  EXPECT_TRUE(capture.events().empty());
}

TEST(DeallocConfig, DEALLOC_7_UnparsableCountWarnsAndKeepsTheDefault) {
  EMM_CLAUSE("DEALLOC-7");
  for (const char* bad : {"ten", "12abc", "", "1.5"}) {
    SCOPED_TRACE(std::string("count '") + bad + "'");
    Diagnostics::Capture capture;
    DeallocConfig config = DeallocConfig::from_environment(environment({{kCountVar, bad}}));
    EXPECT_EQ(config.max_count, DeallocConfig::kDefaultMaxCount);
    const auto events = capture.events();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].kind, DiagnosticEvent::Kind::warning);
    EXPECT_THAT(events[0].where + " " + events[0].message,
                AllOf(HasSubstr(kCountVar), HasSubstr("'" + std::string(bad) + "'")));
  }
}

TEST(DeallocConfig, DEALLOC_7_UnparsableRatioWarnsAndKeepsTheDefault) {
  EMM_CLAUSE("DEALLOC-7");
  for (const char* bad : {"abc", "0.2x", ""}) {
    SCOPED_TRACE(std::string("ratio '") + bad + "'");
    Diagnostics::Capture capture;
    DeallocConfig config = DeallocConfig::from_environment(environment({{kRatioVar, bad}}));
    EXPECT_DOUBLE_EQ(config.ratio, DeallocConfig::kDefaultRatio);
    const auto events = capture.events();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].kind, DiagnosticEvent::Kind::warning);
    EXPECT_THAT(events[0].where + " " + events[0].message, HasSubstr(kRatioVar));
  }
}

TEST(DeallocConfig, DEALLOC_7_RuntimeAppliesTheEnvironmentToTheDefaultManager) {
  EMM_CLAUSE("DEALLOC-7");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic({{kCountVar, "2"}, {kRatioVar, "0.5"}}));
  EXPECT_EQ(runtime.dealloc_config().max_count, 2u);
  Context& context = runtime.get_context(0);
  PendingDeallocs& queue = test::host_only(context).deallocations();
  EXPECT_EQ(queue.config().max_count, 2u);
  EXPECT_EQ(queue.max_pending_bytes(),
            static_cast<std::size_t>(
                std::floor(static_cast<double>(context.get_memory_info().total) * 0.5)));
  context.memalloc(64).reset();
  context.memalloc(64).reset();
  EXPECT_EQ(queue.count(), 2u);
  context.memalloc(64).reset();
  EXPECT_EQ(queue.count(), 0u) << "the third pending free crosses a count of 2";
  EXPECT_EQ(fake->call_count(DriverCall::cuMemFree), 3u);
}

TEST(DeallocConfig, DEALLOC_7_RuntimeWarnsAboutABadValueAndUsesTheDefault) {
  EMM_CLAUSE("DEALLOC-7");
  Diagnostics::Capture capture;
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic({{kCountVar, "many"}}));
  EXPECT_EQ(capture.count(DiagnosticEvent::Kind::warning), 1u);
  EXPECT_EQ(runtime.dealloc_config().max_count, DeallocConfig::kDefaultMaxCount);
}

}  // namespace
}  // namespace emm
