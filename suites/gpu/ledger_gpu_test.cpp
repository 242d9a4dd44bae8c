// The gpu backend's ledger (conformance/src/core/cupti_ledger.hpp) on a real GPU: what CUPTI
// reports of the driver calls this process makes must give the backend the answers the fake
// gives for the same calls (docs/fake-vs-gpu.md, "The ledger"). Skips without a GPU; fails,
// rather than skipping, when there is a GPU but no ledger (libcupti missing): on a GPU machine
// the ledger is what the gpu backend's leak, double-free and flag checks stand on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>

#include "emm/conformance/backend.hpp"
#include "emm/cuda_api.hpp"
#include "emm/errors.hpp"

namespace emm::conformance {
namespace {

using ::testing::HasSubstr;

class LedgerGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      backend_ = make_backend(BackendKind::gpu);
    } catch (const DriverUnavailableError& error) {
      GTEST_SKIP() << error.what();
    }
    driver_ = backend_->driver();
    context_ = driver_->primary_ctx_retain(0);
    driver_->ctx_set_current(context_);
    ASSERT_TRUE(backend_->invalid_frees().has_value())
        << "the gpu backend has no ledger here: " << describe_devices(BackendKind::gpu);
  }
  void TearDown() override {
    if (context_ != nullptr) driver_->primary_ctx_release(0);
  }

  std::unique_ptr<Backend> backend_;
  std::shared_ptr<Driver> driver_;
  CUcontext context_ = nullptr;
};

TEST_F(LedgerGpu, DeviceBytesInUseMoveByExactlyTheBytesAskedFor) {
  const std::size_t before = backend_->device_bytes_in_use();
  const CUdeviceptr small = driver_->mem_alloc(4097);
  EXPECT_EQ(backend_->device_bytes_in_use(), before + 4097);
  ASSERT_TRUE(backend_->driver_block(small + 4096).has_value());
  EXPECT_EQ(backend_->driver_block(small + 4096)->base, small);
  EXPECT_EQ(backend_->block_device(small), 0);
  driver_->mem_free(small);
  EXPECT_EQ(backend_->device_bytes_in_use(), before);
  EXPECT_EQ(backend_->memory_slack(), 0u);
}

TEST_F(LedgerGpu, ADoubleFreeIsCountedWithItsAddress) {
  const std::size_t invalid = *backend_->invalid_frees();
  const std::size_t frees = *backend_->driver_frees();
  const CUdeviceptr pointer = driver_->mem_alloc(256);
  driver_->mem_free(pointer);
  EXPECT_THROW(driver_->mem_free(pointer), CudaDriverError);
  EXPECT_EQ(*backend_->invalid_frees(), invalid + 1);
  EXPECT_EQ(*backend_->driver_frees(), frees + 2);
  ASSERT_FALSE(backend_->invalid_free_descriptions().empty());
  EXPECT_THAT(backend_->invalid_free_descriptions().back(),
              HasSubstr("(freed before by cuMemFree)"));
}

TEST_F(LedgerGpu, HostBlocksKeepTheFlagsTheyWereMadeWith) {
  const std::size_t blocks = *backend_->host_allocation_count();
  void* host = driver_->mem_host_alloc(8197, CU_MEMHOSTALLOC_PORTABLE);
  EXPECT_EQ(*backend_->host_allocation_count(), blocks + 1);
  const std::optional<HostMemoryState> state =
      backend_->host_memory(static_cast<char*>(host) + 8000);
  ASSERT_TRUE(state.has_value());
  EXPECT_TRUE(state->page_locked);
  EXPECT_TRUE(state->flags_as_given);
  ASSERT_TRUE(state->host_alloc_flags.has_value());
  EXPECT_EQ(*state->host_alloc_flags & CU_MEMHOSTALLOC_PORTABLE,
            unsigned{CU_MEMHOSTALLOC_PORTABLE});
  driver_->mem_free_host(host);
  EXPECT_EQ(*backend_->host_allocation_count(), blocks);
}

TEST_F(LedgerGpu, ManagedAllocationsKeepTheirAttachFlag) {
  CUdeviceptr managed = 0;
  try {
    managed = driver_->mem_alloc_managed(4096, CU_MEM_ATTACH_HOST);
  } catch (const CudaDriverError&) {
    GTEST_SKIP() << "device 0 has no managed memory";
  }
  EXPECT_EQ(backend_->managed_attach_flags(managed), unsigned{CU_MEM_ATTACH_HOST});
  driver_->mem_free(managed);
  EXPECT_EQ(backend_->managed_attach_flags(managed), 0u);
}

TEST_F(LedgerGpu, TheDeviceLineNamesTheLedger) {
  EXPECT_THAT(describe_devices(BackendKind::gpu), HasSubstr("; allocation ledger: CUPTI ("));
}

}  // namespace
}  // namespace emm::conformance
