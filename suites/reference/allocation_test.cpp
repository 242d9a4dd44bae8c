// ALLOC-4, ALLOC-8, ALLOC-9: what the host does around a plugin's allocation methods (spec 2.5).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "emm/context.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/runtime.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using ::testing::HasSubstr;
using ::testing::StrEq;

// --- ALLOC-4 -------------------------------------------------------------------------------

TEST(Allocation, ALLOC_4_SizeZeroIsANullPointerAndNeverReachesThePlugin) {
  EMM_CLAUSE("ALLOC-4");
  auto fake = std::make_shared<FakeDriver>();
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  runtime.set_memory_manager(test::recording_factory(journal));
  Context& context = runtime.get_context(0);
  const std::size_t allocs_before = fake->call_count(DriverCall::cuMemAlloc);

  std::shared_ptr<MemoryPointer> empty = context.memalloc(0);

  ASSERT_NE(empty, nullptr) << "size 0 gives a pointer object, not a null shared_ptr";
  EXPECT_EQ(empty->device_pointer(), CUdeviceptr{0});
  EXPECT_EQ(empty->size(), 0u);
  EXPECT_EQ(empty->context(), &context);
  EXPECT_FALSE(empty->is_managed());
  EXPECT_EQ(journal->count("memalloc"), 0u) << "the plugin must not be called for size 0";
  EXPECT_EQ(fake->call_count(DriverCall::cuMemAlloc), allocs_before);

  // It behaves as Numba's zero-size buffer: empty views are fine, non-empty ones are refused.
  EXPECT_EQ(empty->view(0)->size(), 0u);
  EMM_EXPECT_THROW(InvalidArgumentError, empty->view(0, 1),
                   StrEq("non-empty slice into empty slice"));
  EXPECT_NO_THROW(empty->free());
  empty.reset();
  EXPECT_EQ(fake->call_count(DriverCall::cuMemFree), 0u);
  EXPECT_EQ(fake->invalid_frees(), 0u);
}

TEST(Allocation, ALLOC_4_SizeZeroSucceedsEvenWhenThePluginWouldFail) {
  EMM_CLAUSE("ALLOC-4");
  class AlwaysFails : public NumbaCUDAMemoryManager {
   public:
    using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
    std::shared_ptr<MemoryPointer> memalloc(std::size_t) override {
      throw std::logic_error("AlwaysFails::memalloc was called");
    }
  };
  Runtime runtime(std::make_shared<FakeDriver>(), RuntimeOptions::hermetic());
  runtime.set_memory_manager<AlwaysFails>();
  EXPECT_NO_THROW(runtime.get_context(0).memalloc(0));
}

// --- ALLOC-8 -------------------------------------------------------------------------------

TEST(Allocation, ALLOC_8_MappedPinOnADeviceThatCannotMapFailsBeforeThePlugin) {
  EMM_CLAUSE("ALLOC-8");
  FakeSystemConfig config;
  FakeDeviceConfig can_map;
  FakeDeviceConfig cannot_map;
  cannot_map.can_map_host_memory = false;
  config.devices = {can_map, cannot_map};
  auto fake = std::make_shared<FakeDriver>(config);
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  runtime.set_memory_manager(test::recording_factory(journal));

  Context& mapping = runtime.get_context(0);
  Context& non_mapping = runtime.get_context(1);
  EXPECT_TRUE(mapping.can_map_host_memory());
  EXPECT_FALSE(non_mapping.can_map_host_memory());

  auto buffer = std::make_shared<std::vector<char>>(16384);
  EMM_EXPECT_THROW(UnsupportedError,
                   non_mapping.mempin(buffer, buffer->data(), buffer->size(), true),
                   HasSubstr("cannot map host memory"));
  EXPECT_EQ(journal->count("mempin"), 0u) << "the plugin must not be called";
  EXPECT_EQ(fake->call_count(DriverCall::cuMemHostRegister), 0u);
  EXPECT_EQ(fake->host_registration_count(), 0u);

  // Unmapped pinning on that device, and mapped pinning where the device can map, still work.
  {
    HostAllocation pinned = non_mapping.mempin(buffer, buffer->data(), buffer->size(), false);
    EXPECT_FALSE(pinned.is_mapped());
    EXPECT_EQ(pinned.host_pointer(), buffer->data());
  }
  {
    HostAllocation mapped = mapping.mempin(buffer, buffer->data(), buffer->size(), true);
    EXPECT_TRUE(mapped.is_mapped());
  }
  EXPECT_EQ(journal->count("mempin"), 2u);
  EXPECT_EQ(fake->host_registration_count(), 0u) << "both pins were released at once";
}

// --- ALLOC-9 -------------------------------------------------------------------------------

// The default manager, except that memalloc throws whatever `failure` throws while it is set.
class FailingPlugin : public NumbaCUDAMemoryManager {
 public:
  using NumbaCUDAMemoryManager::NumbaCUDAMemoryManager;
  std::function<void()> failure;
  std::atomic<int> calls{0};
  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    ++calls;
    if (failure) failure();
    return NumbaCUDAMemoryManager::memalloc(size);
  }
};

class PoolExhausted : public std::runtime_error {
 public:
  PoolExhausted() : std::runtime_error("example pool: no block of 64 bytes left") {}
};

struct NotAnException {
  int code;
};

class PluginAllocationErrors : public ::testing::Test {
 protected:
  PluginAllocationErrors()
      : fake_(std::make_shared<FakeDriver>()), runtime_(fake_, RuntimeOptions::hermetic()) {
    runtime_.set_memory_manager<FailingPlugin>();
    context_ = &runtime_.get_context(0);
    plugin_ = dynamic_cast<FailingPlugin*>(&context_->memory_manager());
    // Some frees pending in the plugin's queue: a host retry would flush them.
    for (int i = 0; i < 3; ++i) context_->memalloc(256);
    plugin_->calls = 0;
  }
  std::size_t pending() { return plugin_->deallocations().count(); }

  std::shared_ptr<FakeDriver> fake_;
  Runtime runtime_;
  Context* context_ = nullptr;
  FailingPlugin* plugin_ = nullptr;
};

TEST_F(PluginAllocationErrors, ALLOC_9_PluginExceptionTypeAndMessageReachTheCallerUnchanged) {
  EMM_CLAUSE("ALLOC-9");
  ASSERT_EQ(pending(), 3u);
  plugin_->failure = [] { throw PoolExhausted(); };
  EMM_EXPECT_THROW(PoolExhausted, context_->memalloc(64),
                   StrEq("example pool: no block of 64 bytes left"));
  EXPECT_EQ(plugin_->calls, 1) << "the host must not retry";
  EXPECT_EQ(pending(), 3u) << "the host must not flush the plugin's queue";
}

TEST_F(PluginAllocationErrors, ALLOC_9_OutOfMemoryFromThePluginIsNotRetriedOrTranslated) {
  EMM_CLAUSE("ALLOC-9");
  plugin_->failure = [] {
    throw CudaDriverError(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocFromPoolAsync", "pool of 1 MiB");
  };
  auto error = EMM_EXPECT_THROW(CudaDriverError, context_->memalloc(64),
                                HasSubstr("cuMemAllocFromPoolAsync failed: "
                                          "CUDA_ERROR_OUT_OF_MEMORY"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(error->call(), "cuMemAllocFromPoolAsync");
  EXPECT_THAT(error->what(), HasSubstr("pool of 1 MiB"));
  EXPECT_EQ(plugin_->calls, 1) << "out of memory from a plugin is not retried by the host";
  EXPECT_EQ(pending(), 3u);
}

TEST_F(PluginAllocationErrors, ALLOC_9_EmmErrorsAndNonStandardExceptionsPassThrough) {
  EMM_CLAUSE("ALLOC-9");
  plugin_->failure = [] { throw InvalidArgumentError("example pool: size above 1 GiB"); };
  EMM_EXPECT_THROW(InvalidArgumentError, context_->memalloc(64),
                   StrEq("example pool: size above 1 GiB"));

  plugin_->failure = [] { throw NotAnException{42}; };
  bool caught = false;
  try {
    context_->memalloc(64);
  } catch (const NotAnException& error) {
    caught = true;
    EXPECT_EQ(error.code, 42);
  } catch (...) {
    ADD_FAILURE() << "a non-std exception must reach the caller as itself";
  }
  EXPECT_TRUE(caught);
  EXPECT_EQ(plugin_->calls, 2);

  plugin_->failure = nullptr;  // the context is still usable
  EXPECT_EQ(context_->memalloc(64)->size(), 64u);
}

}  // namespace
}  // namespace emm
