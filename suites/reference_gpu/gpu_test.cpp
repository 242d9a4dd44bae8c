// The reference EMM system on a real GPU (emm::CudaDriver): the same host behaviours the fake
// suites check, where the driver itself answers. Every test skips with "no GPU: <reason>" on
// a machine without one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "emm/conformance/ipc_importer.hpp"
#include "emm/context.hpp"
#include "emm/cuda_driver.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/runtime.hpp"
#include "gpu_support.hpp"
#include "reference_test_support.hpp"

namespace emm {
namespace {

using ::testing::HasSubstr;
using ::testing::StrEq;

using Bytes = std::vector<unsigned char>;

Bytes pattern(std::size_t n, unsigned seed = 0) {
  Bytes out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<unsigned char>((i * 31 + seed * 7 + (i >> 8)) & 0xFF);
  }
  return out;
}

Bytes read(Context& context, CUdeviceptr pointer, std::size_t n) {
  context.make_current();
  Bytes out(n);
  context.driver().memcpy_dtoh(out.data(), pointer, n);
  return out;
}

void write(Context& context, CUdeviceptr pointer, const Bytes& data) {
  context.make_current();
  context.driver().memcpy_htod(pointer, data.data(), data.size());
}

std::size_t free_bytes(Context& context) {
  context.make_current();
  return context.driver().mem_get_info().free;
}

// --- the default manager -------------------------------------------------------------------

TEST(GpuDefaultManager, AllocateWriteReadAndFree) {
  EMM_REQUIRE_GPU(driver);
  Runtime runtime(driver, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  std::cout << "device 0: " << driver->device_get_name(0) << ", driver "
            << driver->driver_get_version() << "\n";
  context.memalloc(1 << 20).reset();  // warm-up, then the baseline
  context.reset();
  const std::size_t baseline = free_bytes(context);

  for (std::size_t size : {std::size_t{1}, std::size_t{8}, std::size_t{4096},
                           (std::size_t{1} << 20) + 3, std::size_t{64} << 20}) {
    SCOPED_TRACE("size " + std::to_string(size));
    auto memory = context.memalloc(size);
    ASSERT_EQ(memory->size(), size);
    EXPECT_NE(memory->device_pointer(), CUdeviceptr{0});
    EXPECT_EQ(memory->device_pointer() % 256, 0u) << "cuMemAlloc's alignment";
    const Bytes data = pattern(size, static_cast<unsigned>(size));
    write(context, memory->device_pointer(), data);
    EXPECT_EQ(read(context, memory->device_pointer(), size), data);
    if (size > 300) {
      auto view = memory->view(257, 300);
      EXPECT_EQ(read(context, view->device_pointer(), view->size()),
                Bytes(data.begin() + 257, data.begin() + 300));
      view->memset(0xC3);
      EXPECT_EQ(read(context, memory->device_pointer() + 257, 43), Bytes(43, 0xC3));
    }
  }
  context.reset();
  const std::size_t after = free_bytes(context);
  std::cout << "free before: " << baseline << " after: " << after << "\n";
  EXPECT_EQ(after, baseline);
  EXPECT_EQ(test::host_only(context).live_allocation_count(), 0u);
}

TEST(GpuDefaultManager, DEALLOC_3_DeferralAndMemoryInfo) {
  EMM_CLAUSE("DEALLOC-3");
  EMM_REQUIRE_GPU(driver);
  Runtime runtime(driver, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  PendingDeallocs& queue = test::host_only(context).deallocations();
  const MemoryInfo info = context.get_memory_info();
  EXPECT_GT(info.total, 0u);
  EXPECT_LE(info.free, info.total);
  EXPECT_EQ(queue.memory_capacity(), info.total) << "capacity from total memory at initialize";

  context.memalloc(1 << 20).reset();
  queue.clear();
  const std::size_t baseline = free_bytes(context);
  constexpr std::size_t kBig = std::size_t{256} << 20;
  auto memory = context.memalloc(kBig);
  const std::size_t with_allocation = context.get_memory_info().free;
  EXPECT_LE(with_allocation, baseline - kBig) << "free memory drops by at least the allocation";
  {
    CleanupGuard guard = context.defer_cleanup();
    memory.reset();
    EXPECT_EQ(queue.count(), 1u);
    queue.clear();
    EXPECT_EQ(queue.count(), 1u) << "no flush inside defer_cleanup";
    EXPECT_EQ(free_bytes(context), with_allocation) << "the memory is not released yet";
  }
  EXPECT_EQ(queue.count(), 1u) << "leaving defer_cleanup does not flush";
  queue.clear();
  const std::size_t after = free_bytes(context);
  std::cout << "free: baseline " << baseline << ", with 256 MiB " << with_allocation
            << ", after flush " << after << "\n";
  EXPECT_EQ(after, baseline);
}

TEST(GpuDefaultManager, DEALLOC_1_TheEleventhPendingFreeFlushes) {
  EMM_CLAUSE("DEALLOC-1");
  EMM_REQUIRE_GPU(driver);
  Runtime runtime(driver, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  PendingDeallocs& queue = test::host_only(context).deallocations();
  queue.clear();
  for (std::size_t i = 1; i <= 10; ++i) {
    context.memalloc(4096).reset();
    EXPECT_EQ(queue.count(), i);
  }
  context.memalloc(4096).reset();
  EXPECT_EQ(queue.count(), 0u);
}

TEST(GpuDefaultManager, OutOfMemoryIsACudaDriverErrorAndLeavesTheContextUsable) {
  EMM_REQUIRE_GPU(driver);
  Runtime runtime(driver, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  auto error = EMM_EXPECT_THROW(CudaDriverError, context.memalloc(std::size_t{1} << 50),
                                HasSubstr("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), CUDA_ERROR_OUT_OF_MEMORY);
  auto memory = context.memalloc(4096);
  write(context, memory->device_pointer(), pattern(4096));
  EXPECT_EQ(read(context, memory->device_pointer(), 4096), pattern(4096));
}

// --- host memory ---------------------------------------------------------------------------

TEST(GpuHostMemory, MappedAndPinnedHostAllocations) {
  EMM_REQUIRE_GPU(driver);
  Runtime runtime(driver, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  for (int flags = 0; flags < 8; ++flags) {
    const bool mapped = flags & 1, portable = flags & 2, wc = flags & 4;
    SCOPED_TRACE("mapped " + std::to_string(mapped) + " portable " + std::to_string(portable) +
                 " wc " + std::to_string(wc));
    HostAllocation host = context.memhostalloc(4096, mapped, portable, wc);
    ASSERT_EQ(host.is_mapped(), mapped);
    ASSERT_EQ(host.size(), 4096u);
    auto* bytes = static_cast<unsigned char*>(host.host_pointer());
    const Bytes data = pattern(4096, static_cast<unsigned>(flags));
    std::copy(data.begin(), data.end(), bytes);
    if (mapped) {
      ASSERT_NE(host.mapped_memory(), nullptr);
      const CUdeviceptr device = host.mapped_pointer()->device_pointer();
      EXPECT_EQ(read(context, device, 4096), data) << "the device pointer aliases the host bytes";
      write(context, device, Bytes(4096, 0x7E));
      context.driver().ctx_synchronize();
      EXPECT_EQ(Bytes(bytes, bytes + 4096), Bytes(4096, 0x7E));
    } else {
      ASSERT_NE(host.pinned_memory(), nullptr);
      auto scratch = context.memalloc(4096);  // pinned memory is a valid copy source
      write(context, scratch->device_pointer(), Bytes(bytes, bytes + 4096));
      EXPECT_EQ(read(context, scratch->device_pointer(), 4096), data);
    }
  }
}

TEST(GpuHostMemory, PinsAreReleasedAtOnceEvenInsideDeferCleanup) {
  EMM_REQUIRE_GPU(driver);
  Runtime runtime(driver, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  constexpr std::size_t kSize = 1 << 16;
  std::shared_ptr<void> buffer(std::aligned_alloc(4096, kSize), std::free);
  auto* bytes = static_cast<unsigned char*>(buffer.get());
  const Bytes data = pattern(kSize, 5);
  std::copy(data.begin(), data.end(), bytes);
  CleanupGuard guard = context.defer_cleanup();
  for (int round = 0; round < 3; ++round) {
    for (bool mapped : {false, true}) {
      HostAllocation pinned = context.mempin(buffer, bytes, kSize, mapped);
      EXPECT_EQ(pinned.is_mapped(), mapped);
      EXPECT_EQ(pinned.owned(), buffer);
      if (mapped) {
        EXPECT_EQ(read(context, pinned.mapped_pointer()->device_pointer(), kSize), data);
      }
    }  // released: unregistered at once, so the next round can pin the same bytes
  }
}

// The fake driver decides overlapping registrations byte by byte; this checks the real driver
// does the same (and that the reference passes unaligned pointers through unchanged).
TEST(GpuHostMemory, PinRegistrationOverlapIsDecidedOnBytes) {
  EMM_REQUIRE_GPU(driver);
  Runtime runtime(driver, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  std::shared_ptr<void> pages(std::aligned_alloc(4096, 3 * 4096), std::free);
  char* base = static_cast<char*>(pages.get());
  HostAllocation first = context.mempin(pages, base + 1, 100);
  HostAllocation disjoint = context.mempin(pages, base + 101, 100);
  EXPECT_EQ(disjoint.host_pointer(), base + 101);
  auto error = EMM_EXPECT_THROW(CudaDriverError, context.mempin(pages, base + 50, 100),
                                HasSubstr("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
}

// --- IPC across two real processes ---------------------------------------------------------

TEST(GpuIpc, IPC_3_TwoProcessRoundTripOfViewsAtOffsets) {
  EMM_CLAUSE("IPC-3");
  EMM_REQUIRE_GPU(driver);
  Runtime runtime(driver, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  constexpr std::size_t kAllocation = 16384;
  auto memory = context.memalloc(kAllocation);
  const Bytes data = pattern(kAllocation, 11);
  write(context, memory->device_pointer(), data);

  struct Export {
    std::size_t offset, size;
  };
  const std::vector<Export> exports = {{1, 1000}, {256, 2048}, {4096 + 3, 5000}, {0, kAllocation}};
  // The importing process (emm-ipc-importer) opens each handle in its source device's context
  // and checks the state machine there too: no base after deserialize(), a second open()
  // refused with "IpcHandle is already opened", the view of the handle's size (IPC-3).
  conformance::ImportRequest request;
  for (const Export& e : exports) {
    IpcHandle handle = context.get_ipc_handle(memory->view(e.offset, e.offset + e.size));
    EXPECT_EQ(handle.offset(), e.offset) << "offset = view pointer - allocation base";
    EXPECT_EQ(handle.size(), e.size);
    EMM_EXPECT_THROW(IpcStateError, handle.open(context),
                     StrEq("opening IpcHandle from original process"));
    conformance::ImportItem item;
    item.handle = handle.serialize();
    item.context = conformance::ImportContext::source_device;
    item.check_state_machine = true;
    request.items.push_back(std::move(item));
  }

  const std::string importer = conformance::find_ipc_importer();
  ASSERT_FALSE(importer.empty()) << "emm-ipc-importer not found; set EMM_IPC_IMPORTER to it";
  const conformance::ImportResponse response =
      conformance::run_import(importer, request, std::chrono::seconds(60));
  ASSERT_EQ(response.error, "");
  ASSERT_EQ(response.answers.size(), exports.size());
  for (std::size_t i = 0; i < exports.size(); ++i) {
    SCOPED_TRACE("view at offset " + std::to_string(exports[i].offset));
    const conformance::ImportAnswer& answer = response.answers[i];
    ASSERT_TRUE(answer.ok) << "the importing process: " << answer.error;
    const Bytes expected(
        data.begin() + static_cast<std::ptrdiff_t>(exports[i].offset),
        data.begin() + static_cast<std::ptrdiff_t>(exports[i].offset + exports[i].size));
    const Bytes got(
        reinterpret_cast<const unsigned char*>(answer.bytes.data()),
        reinterpret_cast<const unsigned char*>(answer.bytes.data()) + answer.bytes.size());
    EXPECT_EQ(got, expected) << "the other process read the exporter's bytes of that view";
  }
  std::cout << "two-process IPC: " << exports.size()
            << " views read back by pid-separate importer\n";
}

}  // namespace
}  // namespace emm
