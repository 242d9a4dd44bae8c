// Backend::host_memory: what the driver reports of a host address — page-locked or not, the
// block or registered range holding it, the cuMemHostAlloc flags — asked through the driver, so
// that the fake backend and the gpu backend observe the same (ALLOC-6, ALLOC-7).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <emm/conformance/backend.hpp>
#include <emm/fake/fake_driver.hpp>
#include <memory>

namespace emm::conformance {
namespace {

CUdeviceptr address_of(const void* pointer) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(pointer));
}

class BackendHostMemory : public ::testing::Test {
 protected:
  void SetUp() override { driver_->ctx_set_current(driver_->primary_ctx_retain(0)); }
  void TearDown() override {
    driver_->ctx_set_current(nullptr);
    driver_->primary_ctx_release(0);
  }
  std::shared_ptr<FakeDriver> driver_ = std::make_shared<FakeDriver>();
};

TEST_F(BackendHostMemory, HostAllocBlockIsPageLockedWithItsFlagsAndExtent) {
  constexpr unsigned kFlags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED;
  void* block = driver_->mem_host_alloc(5000, kFlags);
  for (const std::size_t at : {std::size_t{0}, std::size_t{4999}}) {
    const HostMemoryState state =
        host_memory_from_driver(*driver_, static_cast<std::byte*>(block) + at);
    EXPECT_TRUE(state.page_locked) << "byte " << at;
    ASSERT_TRUE(state.range.has_value()) << "byte " << at;
    EXPECT_EQ(state.range->base, address_of(block));
    EXPECT_EQ(state.range->size, 5000u);
    // DEVICEMAP is reported by the driver itself (unified addressing; docs/fake-vs-gpu.md).
    EXPECT_EQ(state.host_alloc_flags, std::optional<unsigned>(kFlags | CU_MEMHOSTALLOC_DEVICEMAP));
  }
  driver_->mem_free_host(block);
  EXPECT_FALSE(host_memory_from_driver(*driver_, block).page_locked) << "freed";
}

TEST_F(BackendHostMemory, RegisteredRangeIsPageLockedExactlyWithDevicemapOnly) {
  void* buffer = std::aligned_alloc(4096, 4 * 4096);
  auto* start = static_cast<std::byte*>(buffer) + 4096 + 40;
  driver_->mem_host_register(start, 8292, 0);
  const HostMemoryState state = host_memory_from_driver(*driver_, start);
  EXPECT_TRUE(state.page_locked);
  ASSERT_TRUE(state.range.has_value());
  EXPECT_EQ(state.range->base, address_of(start));
  EXPECT_EQ(state.range->size, 8292u);
  EXPECT_EQ(state.host_alloc_flags, std::optional<unsigned>(CU_MEMHOSTALLOC_DEVICEMAP))
      << "registered memory answers cuMemHostGetFlags too (as on the GPU): DEVICEMAP only, "
         "since it was registered with no flags";
  EXPECT_FALSE(host_memory_from_driver(*driver_, start - 1).page_locked)
      << "the byte before the registration, in the same page";
  EXPECT_FALSE(host_memory_from_driver(*driver_, start + 8292).page_locked)
      << "the byte after the registration, in the same page";
  driver_->mem_host_unregister(start);
  std::free(buffer);
}

TEST_F(BackendHostMemory, PageableMemoryIsNotPageLocked) {
  auto buffer = std::make_unique<std::byte[]>(256);
  const HostMemoryState state = host_memory_from_driver(*driver_, buffer.get());
  EXPECT_FALSE(state.page_locked);
  EXPECT_EQ(state.range, std::nullopt);
  EXPECT_EQ(state.host_alloc_flags, std::nullopt);
}

TEST(BackendHostMemoryFake, TheFakeBackendAnswersThroughItsDriver) {
  const std::unique_ptr<Backend> backend = make_backend(BackendKind::fake);
  Driver& driver = *backend->driver();
  CUcontext context = driver.primary_ctx_retain(0);
  driver.ctx_set_current(context);
  void* block = driver.mem_host_alloc(64, CU_MEMHOSTALLOC_DEVICEMAP);
  const std::optional<HostMemoryState> state = backend->host_memory(block);
  ASSERT_TRUE(state.has_value());
  EXPECT_TRUE(state->page_locked);
  EXPECT_EQ(state->host_alloc_flags, std::optional<unsigned>(CU_MEMHOSTALLOC_DEVICEMAP));
  driver.mem_free_host(block);
  driver.ctx_set_current(nullptr);
  driver.primary_ctx_release(0);
}

}  // namespace
}  // namespace emm::conformance
