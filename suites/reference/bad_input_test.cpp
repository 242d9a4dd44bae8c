// Misuse and hostile input: each error is typed, says what went wrong, and leaves the system
// usable — after it, the test allocates again and checks the fake driver's accounting is back
// at its baseline. Tests that check a clause's error name that clause.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "emm/context.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/runtime.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::StrEq;

class BadInput : public ::testing::Test {
 protected:
  BadInput()
      : fake_(std::make_shared<FakeDriver>()),
        journal_(std::make_shared<test::Journal>()),
        runtime_(fake_, RuntimeOptions::hermetic()) {
    runtime_.set_memory_manager(test::recording_factory(journal_));
    context_ = &runtime_.get_context(0);
  }

  // The system still works and, once released, nothing is left behind.
  void expect_usable_and_at_baseline(std::size_t expected_invalid_frees = 0) {
    SCOPED_TRACE("after the error");
    {
      auto memory = context_->memalloc(4096);
      std::vector<unsigned char> in(4096, 0x5A), out(4096, 0);
      context_->make_current();
      fake_->memcpy_htod(memory->device_pointer(), in.data(), in.size());
      fake_->memcpy_dtoh(out.data(), memory->device_pointer(), out.size());
      EXPECT_EQ(in, out);
      HostAllocation host = context_->memhostalloc(64, true);
      EXPECT_TRUE(host.is_mapped());
    }
    context_->reset();
    EXPECT_EQ(fake_->device_bytes_in_use(), 0u);
    EXPECT_EQ(fake_->host_allocation_count(), 0u);
    EXPECT_EQ(fake_->host_registration_count(), 0u);
    EXPECT_EQ(fake_->ipc_mapping_count(), 0u);
    EXPECT_EQ(fake_->invalid_frees(), expected_invalid_frees);
    EXPECT_EQ(fake_->invalid_accesses(), 0u);
  }

  std::shared_ptr<FakeDriver> fake_;
  std::shared_ptr<test::Journal> journal_;
  Runtime runtime_;
  Context* context_ = nullptr;
};

TEST_F(BadInput, ALLOC_4_SizeZeroAllocation) {
  EMM_CLAUSE("ALLOC-4");
  auto empty = context_->memalloc(0);
  EXPECT_EQ(empty->size(), 0u);
  EXPECT_EQ(journal_->count("memalloc"), 0u);
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, SizeMaxAllocationIsOutOfMemory) {
  auto error =
      EMM_EXPECT_THROW(CudaDriverError, context_->memalloc(std::numeric_limits<std::size_t>::max()),
                       HasSubstr("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(error->call(), "cuMemAlloc");
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, SizeMaxHostAllocationIsOutOfMemory) {
  for (bool mapped : {false, true}) {
    auto error = EMM_EXPECT_THROW(
        CudaDriverError, context_->memhostalloc(std::numeric_limits<std::size_t>::max(), mapped),
        HasSubstr("cuMemHostAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"));
    ASSERT_TRUE(error);
    EXPECT_EQ(error->code(), CUDA_ERROR_OUT_OF_MEMORY);
  }
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, SizeZeroHostAllocationIsRefused) {
  EMM_EXPECT_THROW(InvalidArgumentError, context_->memhostalloc(0),
                   StrEq("memhostalloc: size is 0; ask for at least one byte"));
  EXPECT_EQ(journal_->count("memhostalloc"), 0u);
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, NullOrEmptyPinIsRefusedBeforeThePlugin) {
  auto buffer = std::make_shared<std::vector<char>>(4096);
  EMM_EXPECT_THROW(InvalidArgumentError, context_->mempin(buffer, nullptr, 64),
                   StrEq("mempin: the host pointer is null; pass the address of an allocated "
                         "host buffer"));
  EMM_EXPECT_THROW(InvalidArgumentError, context_->mempin(buffer, buffer->data(), 0, true),
                   StrEq("mempin: size is 0; pin at least one byte"));
  EXPECT_EQ(journal_->count("mempin"), 0u);
  EXPECT_EQ(fake_->call_count(DriverCall::cuMemHostRegister), 0u);
  expect_usable_and_at_baseline();
}

// The reference passes the caller's pointer and size to cuMemHostRegister unchanged: no
// rounding to pages. The fake driver decides overlap byte by byte, as probing the real driver
// showed; suites/reference_gpu checks the same on a GPU.
TEST_F(BadInput, UnalignedPinsAndOverlappingPins) {
  constexpr std::size_t kPage = 4096;
  std::shared_ptr<void> pages(std::aligned_alloc(kPage, 3 * kPage), std::free);
  char* base = static_cast<char*>(pages.get());
  {
    HostAllocation first = context_->mempin(pages, base + 1, 100);
    EXPECT_EQ(first.host_pointer(), base + 1);
    EXPECT_EQ(first.size(), 100u);
    HostAllocation disjoint = context_->mempin(pages, base + 101, 100, true);
    EXPECT_EQ(disjoint.host_pointer(), base + 101) << "disjoint bytes of the same page";
    auto error = EMM_EXPECT_THROW(CudaDriverError, context_->mempin(pages, base + 50, 100),
                                  HasSubstr("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"));
    ASSERT_TRUE(error);
    EXPECT_EQ(error->code(), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    HostAllocation spanning = context_->mempin(pages, base + kPage - 3, kPage + 7);
    EXPECT_EQ(spanning.size(), kPage + 7);
    EXPECT_EQ(fake_->host_registration_count(), 3u);
  }
  // Released pins are unregistered at once, so the overlapping range can be pinned now.
  HostAllocation again = context_->mempin(pages, base + 50, 100);
  EXPECT_EQ(fake_->host_registration_count(), 1u);
  again = HostAllocation{};
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, FIN_2_DoubleFreeIsFreeingDeadMemory) {
  EMM_CLAUSE("FIN-2");
  auto memory = context_->memalloc(4096);
  memory->free();
  EMM_EXPECT_THROW(PointerLifetimeError, memory->free(), StrEq("Freeing dead memory"));
  memory.reset();
  expect_usable_and_at_baseline();
  EXPECT_EQ(fake_->call_count(DriverCall::cuMemFree), 2u) << "one free for each allocation";
}

TEST_F(BadInput, FIN_3_ViewsOutOfBoundsAreRefused) {
  EMM_CLAUSE("FIN-3");
  auto memory = context_->memalloc(4096);
  EMM_EXPECT_THROW(InvalidArgumentError, memory->view(5000),
                   StrEq("size cannot be negative: view(5000, 4096) of a 4096-byte pointer"));
  EMM_EXPECT_THROW(InvalidArgumentError, memory->view(100, 50),
                   StartsWith("size cannot be negative"));
  EMM_EXPECT_THROW(InvalidArgumentError, memory->view(0, 4097),
                   StrEq("view stop 4097 is past the end of a 4096-byte pointer"));
  auto inner = memory->view(1000, 2000);
  EMM_EXPECT_THROW(InvalidArgumentError, inner->view(0, 1001),
                   StrEq("view stop 1001 is past the end of a 1000-byte pointer"));
  auto empty = context_->memalloc(0);
  EMM_EXPECT_THROW(InvalidArgumentError, empty->view(0, 1),
                   StrEq("non-empty slice into empty slice"));
  EMM_EXPECT_THROW(InvalidArgumentError, empty->view(1), StartsWith("size cannot be negative"));
  EXPECT_EQ(memory->refct(), 2) << "refused views take no reference";
  EMM_EXPECT_THROW(InvalidArgumentError, memory->memset(0, 4097),
                   HasSubstr("past the end of a 4096-byte pointer"));
  inner.reset();
  memory.reset();
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, IPC_3_DoubleOpenAndCloseOfAnUnopenedHandle) {
  EMM_CLAUSE("IPC-3");
  auto exported_memory = context_->memalloc(4096);
  const auto bytes = context_->get_ipc_handle(exported_memory).serialize();
  auto other = fake_->spawn_process();
  {
    Runtime importing(other, RuntimeOptions::hermetic());
    Context& destination = importing.get_context(0);
    IpcHandle handle = IpcHandle::deserialize(bytes);
    EMM_EXPECT_THROW(IpcStateError, handle.close(), StrEq("IpcHandle not opened"));
    handle.open(destination);
    EMM_EXPECT_THROW(IpcStateError, handle.open(destination), StrEq("IpcHandle is already opened"));
    EXPECT_EQ(other->ipc_mapping_count(), 1u);
    handle.close();
    EXPECT_EQ(other->ipc_mapping_count(), 0u);
  }
  exported_memory.reset();
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, IPC_4_TruncatedAndCorruptedBytes) {
  EMM_CLAUSE("IPC-4");
  auto memory = context_->memalloc(4096);
  auto bytes = context_->get_ipc_handle(memory).serialize();
  EMM_EXPECT_THROW(IpcFormatError, IpcHandle::deserialize(std::span(bytes).first(bytes.size() / 2)),
                   HasSubstr("truncated input (52 bytes, expected 104)"));
  bytes[50] ^= std::byte{0xFF};
  EMM_EXPECT_THROW(IpcFormatError, IpcHandle::deserialize(bytes), HasSubstr("checksum mismatch"));
  memory.reset();
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, OpeningAHandleWhoseMemoryWasFreedFailsCleanly) {
  auto memory = context_->memalloc(4096);
  const auto bytes = context_->get_ipc_handle(memory).serialize();
  memory.reset();
  context_->reset();  // the exporter really frees it
  auto other = fake_->spawn_process();
  {
    Runtime importing(other, RuntimeOptions::hermetic());
    IpcHandle handle = IpcHandle::deserialize(bytes);
    EMM_EXPECT_THROW(CudaDriverError, handle.open(importing.get_context(0)),
                     HasSubstr("cuIpcOpenMemHandle failed"));
    EXPECT_FALSE(handle.is_open());
    EXPECT_EQ(other->ipc_mapping_count(), 0u);
  }
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, GetIpcHandleOfNullOrEmptyMemoryIsRefused) {
  EMM_EXPECT_THROW(InvalidArgumentError, context_->get_ipc_handle(nullptr),
                   HasSubstr("get_ipc_handle: the memory is null or empty"));
  EMM_EXPECT_THROW(InvalidArgumentError, context_->get_ipc_handle(context_->memalloc(0)),
                   HasSubstr("get_ipc_handle: the memory is null or empty"));
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, UnknownDevicesAndNullModuleImagesAreRefused) {
  EMM_EXPECT_THROW(InvalidArgumentError, runtime_.get_context(1),
                   StrEq("device 1 does not exist (1 device(s) visible)"));
  EMM_EXPECT_THROW(InvalidArgumentError, runtime_.get_context(-1),
                   StrEq("device -1 does not exist (1 device(s) visible)"));
  EMM_EXPECT_THROW(InvalidArgumentError, context_->load_module(nullptr),
                   StrEq("load_module: the image is null"));
  EXPECT_EQ(context_->module_count(), 0u);
  expect_usable_and_at_baseline();
}

TEST_F(BadInput, DriverFailureInsideAPluginLeavesTheContextUsable) {
  fake_->fail_call(DriverCall::cuMemHostRegister, CUDA_ERROR_INVALID_VALUE);
  auto buffer = std::make_shared<std::vector<char>>(4096);
  EMM_EXPECT_THROW(CudaDriverError, context_->mempin(buffer, buffer->data(), 64),
                   HasSubstr("cuMemHostRegister failed: CUDA_ERROR_INVALID_VALUE"));
  fake_->fail_call(DriverCall::cuMemHostGetDevicePointer, CUDA_ERROR_INVALID_VALUE);
  EMM_EXPECT_THROW(CudaDriverError, context_->memhostalloc(64, true),
                   HasSubstr("cuMemHostGetDevicePointer failed"));
  EXPECT_EQ(fake_->host_allocation_count(), 0u) << "the half-made allocation was given back";
  expect_usable_and_at_baseline();
}

}  // namespace
}  // namespace emm
