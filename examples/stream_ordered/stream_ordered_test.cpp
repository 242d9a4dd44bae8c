// Unit tests of the stream-ordered example on the fake driver: the pool and stream it owns,
// its IPC refusal, and its frees through the parent's queue.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <emm/conformance/testing/expect_throw.hpp>

#include "emm/context.hpp"
#include "emm/errors.hpp"
#include "emm/examples/stream_ordered_memory_manager.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/runtime.hpp"

namespace emm::examples {
namespace {

using ::testing::HasSubstr;

class StreamOrderedTest : public ::testing::Test {
 protected:
  StreamOrderedTest()
      : driver_(std::make_shared<FakeDriver>()), runtime_(driver_, RuntimeOptions::hermetic()) {
    runtime_.set_memory_manager<StreamOrderedMemoryManager>();
  }

  StreamOrderedMemoryManager& plugin() {
    return dynamic_cast<StreamOrderedMemoryManager&>(runtime_.get_context(0).memory_manager());
  }

  std::shared_ptr<FakeDriver> driver_;
  Runtime runtime_;
};

TEST_F(StreamOrderedTest, LIFE_2_InitializeCreatesOnePoolAndOneStream) {
  RecordProperty("clause", "LIFE-2");
  Context& context = runtime_.get_context(0);
  for (int i = 0; i < 100; ++i) context.prepare_for_use();
  EXPECT_EQ(driver_->pool_count(), 1u);
  EXPECT_EQ(driver_->stream_count(), 1u);
  EXPECT_EQ(driver_->call_count(DriverCall::cuMemPoolCreate), 1u);
  EXPECT_EQ(plugin().pool_handle_type(), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}

TEST_F(StreamOrderedTest, PoolWithoutExportWhereTheDriverRefusesIt) {
  driver_->fail_call(DriverCall::cuMemPoolCreate, CUDA_ERROR_NOT_SUPPORTED);
  runtime_.get_context(0);
  EXPECT_EQ(driver_->pool_count(), 1u);
  EXPECT_EQ(plugin().pool_handle_type(), CU_MEM_HANDLE_TYPE_NONE);
}

TEST_F(StreamOrderedTest, AllocatesFromItsPoolAndFreesOnItsStream) {
  Context& context = runtime_.get_context(0);
  auto p = context.memalloc(1 << 20);
  EXPECT_EQ(p->refct(), 1);
  EXPECT_EQ(driver_->call_count(DriverCall::cuMemAllocFromPoolAsync), 1u);
  EXPECT_EQ(driver_->device_bytes_in_use(), std::size_t{1} << 20);
  p.reset();
  EXPECT_EQ(driver_->call_count(DriverCall::cuMemFreeAsync), 1u);
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
  EXPECT_EQ(driver_->call_count(DriverCall::cuMemAlloc), 0u);
}

TEST_F(StreamOrderedTest, IPC_7_GetIpcHandleSaysWhyItIsNotSupported) {
  RecordProperty("clause", "IPC-7");
  Context& context = runtime_.get_context(0);
  auto p = context.memalloc(4096);
  EMM_EXPECT_THROW(NotImplementedError, context.get_ipc_handle(p),
                   HasSubstr("cuIpcGetMemHandle does not export memory"));
  EXPECT_EQ(driver_->call_count(DriverCall::cuIpcGetMemHandle), 0u);
}

TEST_F(StreamOrderedTest, DEFER_4_FreesWaitForTheScopeAndRunAtTheNextFlush) {
  RecordProperty("clause", "DEFER-4");
  Context& context = runtime_.get_context(0);
  auto p = context.memalloc(4096);
  {
    CleanupGuard guard = context.defer_cleanup();
    p.reset();
    EXPECT_EQ(driver_->device_bytes_in_use(), 4096u);
  }
  EXPECT_EQ(driver_->device_bytes_in_use(), 4096u);  // leaving does not flush (NBEP 7)
  context.memalloc(256).reset();                     // the next free flushes both
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
}

TEST_F(StreamOrderedTest, LIFE_7_ResetFreesLiveMemoryAndTrimsThePool) {
  RecordProperty("clause", "LIFE-7");
  Context& context = runtime_.get_context(0);
  auto p = context.memalloc(4096);
  context.reset();
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
  EXPECT_EQ(driver_->call_count(DriverCall::cuMemPoolTrimTo), 1u);
  p.reset();  // LIFE-8
  EXPECT_EQ(driver_->invalid_frees(), 0u);
  EXPECT_NE(context.memalloc(64), nullptr);  // LIFE-6
}

TEST_F(StreamOrderedTest, ClosingDestroysTheStreamAndPool) {
  auto survivor = runtime_.get_context(0).memalloc(4096);
  // A retain of the test's own keeps the context alive past close(): its destruction would
  // take the stream and pool along whatever the plugin did.
  driver_->primary_ctx_retain(0);
  runtime_.close();
  EXPECT_EQ(driver_->pool_count(), 0u);
  EXPECT_EQ(driver_->stream_count(), 0u);
  EXPECT_EQ(driver_->device_bytes_in_use(), 0u);
  survivor.reset();
  EXPECT_EQ(driver_->invalid_frees(), 0u);
  driver_->primary_ctx_release(0);
}

TEST(StreamOrderedProbe, LIFE_5_ResetBeforeInitializeIsANoOp) {
  RecordProperty("clause", "LIFE-5");
  auto driver = std::make_shared<FakeDriver>();
  Runtime runtime(driver, RuntimeOptions::hermetic());
  runtime.set_memory_manager<StreamOrderedMemoryManager>();
  // The plugin is built and initialised by get_context; a fresh instance resets first.
  StreamOrderedMemoryManager plugin(&runtime.get_context(0));
  plugin.reset();
  EXPECT_EQ(driver->call_count(DriverCall::cuMemPoolTrimTo), 0u);
  plugin.initialize();
  EXPECT_NE(plugin.memalloc(100), nullptr);
}

}  // namespace
}  // namespace emm::examples
