// The real driver's side of every row of docs/fake-vs-gpu.md: each test asserts the exact
// CUresult or value the fake driver gives for the same calls, so one run on a GPU settles the
// table. A failure names what the real driver answered (results are compared by name); where the
// table marks a row "to be checked", that answer is what the fake must be changed to. Every test
// skips with "no GPU: <reason>" where there is none.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"
#include "emm/pointer_attribute.hpp"
#include "gpu_test_support.hpp"
#include "ipc_child.hpp"

namespace emm {
namespace {

using gpu_test::DeviceBuffer;
using gpu_test::IpcChildReport;
using gpu_test::kMiB;
using gpu_test::result_name;
using gpu_test::result_of;
using gpu_test::run_ipc_child;

constexpr const char* kSuccess = "CUDA_SUCCESS";
constexpr const char* kInvalidValue = "CUDA_ERROR_INVALID_VALUE";
constexpr const char* kInvalidContext = "CUDA_ERROR_INVALID_CONTEXT";

std::size_t page() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

CUdeviceptr address_of(const void* pointer) { return reinterpret_cast<CUdeviceptr>(pointer); }

// Page-aligned pageable memory of the test's own.
struct PageableBuffer {
  explicit PageableBuffer(std::size_t size)
      : bytes(static_cast<unsigned char*>(std::aligned_alloc(page(), size)), &std::free) {
    std::memset(bytes.get(), 0, size);
  }
  unsigned char* get() const { return bytes.get(); }
  std::unique_ptr<unsigned char, decltype(&std::free)> bytes;
};

class FakeParityGpu : public gpu_test::CudaDriverGpu {
 protected:
  // The answer to one attribute query: its value as text, or the CUresult name it failed with.
  std::string attribute(CUpointer_attribute which, CUdeviceptr pointer) {
    try {
      return std::to_string(driver_->pointer_get_attribute(which, pointer));
    } catch (const CudaDriverError& error) {
      return std::string(error.code_name());
    }
  }

  bool pools_supported() {
    return driver_->device_get_attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, kDevice) != 0;
  }

  CUmemoryPool make_pool() {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = kDevice;
    return driver_->mem_pool_create(props);
  }
};

std::string number(std::uint64_t value) { return std::to_string(value); }

// --- primary contexts ------------------------------------------------------------------------

// Assumes the fixture's retain is the only one in this process (every test gives its own back).
TEST_F(FakeParityGpu, ContextLastReleaseDestroysTheContextWithItsMemory) {
  const CUdeviceptr device = driver_->mem_alloc(kMiB);
  void* host = driver_->mem_host_alloc(4096, 0);
  driver_->primary_ctx_release(kDevice);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_alloc(kMiB); })),
            "CUDA_ERROR_CONTEXT_IS_DESTROYED")
      << "cuMemAlloc while the released context is still current (CUDA_SUCCESS: something "
         "else in this process still retains the primary context)";

  EXPECT_EQ(result_name(result_of([&] { driver_->ctx_set_current(context_); })), kSuccess)
      << "cuCtxSetCurrent of the destroyed primary context";
  EXPECT_EQ(result_name(result_of([&] { driver_->ctx_synchronize(); })),
            "CUDA_ERROR_CONTEXT_IS_DESTROYED")
      << "cuCtxSynchronize while the destroyed context is current";

  const CUcontext again = driver_->primary_ctx_retain(kDevice);
  EXPECT_EQ(again, context_) << "cuDevicePrimaryCtxRetain after the last release returned "
                                "another handle (the fake keeps the handle)";
  context_ = again;
  driver_->ctx_set_current(context_);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_get_address_range(device); })),
            "CUDA_ERROR_NOT_FOUND")
      << "cuMemGetAddressRange of memory allocated in the destroyed context";
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device), kInvalidValue)
      << "cuPointerGetAttribute of memory allocated in the destroyed context";
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free(device); })), kInvalidValue)
      << "cuMemFree of memory allocated in the destroyed context";
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free_host(host); })), kInvalidValue)
      << "cuMemFreeHost of a cuMemHostAlloc block of the destroyed context";
  DeviceBuffer fresh(*driver_, 4096);
  EXPECT_NE(fresh.get(), CUdeviceptr{0}) << "the re-retained context is usable";
}

TEST_F(FakeParityGpu, ContextResetKeepsTheRetainsAndLateFreesAreInvalid) {
  const CUdeviceptr first = driver_->mem_alloc(kMiB);
  const CUdeviceptr second = driver_->mem_alloc(kMiB);
  void* host = driver_->mem_host_alloc(4096, 0);
  PageableBuffer pinned(2 * page());
  driver_->mem_host_register(pinned.get(), page(), 0);
  driver_->primary_ctx_reset(kDevice);

  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free(first); })),
            "CUDA_ERROR_CONTEXT_IS_DESTROYED")
      << "cuMemFree of memory the reset freed, while the destroyed context is current";
  driver_->ctx_set_current(nullptr);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free(second); })), kInvalidValue)
      << "cuMemFree of memory the reset freed, with no context current";
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free_host(host); })), kInvalidValue)
      << "cuMemFreeHost of a block the reset freed";
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_host_unregister(pinned.get()); })),
            "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED")
      << "cuMemHostUnregister of a range the reset unregistered";

  // The reset kept the fixture's retain: the release after this retain leaves the count at 1.
  context_ = driver_->primary_ctx_retain(kDevice);
  driver_->primary_ctx_release(kDevice);
  driver_->ctx_set_current(context_);
  DeviceBuffer fresh(*driver_, 4096);
  EXPECT_EQ(driver_->mem_get_address_range(fresh.get()).base, fresh.get());
}

TEST_F(FakeParityGpu, ContextReleaseBeyondTheRetainsIsInvalidContext) {
  driver_->primary_ctx_release(kDevice);
  EXPECT_EQ(result_name(result_of([&] { driver_->primary_ctx_release(kDevice); })), kInvalidContext)
      << "cuDevicePrimaryCtxRelease with no retain left";
  context_ = driver_->primary_ctx_retain(kDevice);
  driver_->ctx_set_current(context_);
}

TEST_F(FakeParityGpu, CallsThatActInAContextNeedOne) {
  driver_->ctx_set_current(nullptr);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_alloc(4096); })), kInvalidContext);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_get_info(); })), kInvalidContext);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_host_alloc(4096, 0); })), kInvalidContext);
  EXPECT_EQ(result_name(result_of([&] { driver_->stream_create(0); })), kInvalidContext);
  EXPECT_EQ(result_name(result_of([&] { driver_->ctx_synchronize(); })), kInvalidContext);
  driver_->ctx_set_current(context_);
}

TEST_F(FakeParityGpu, FreesAndDestroysNeedNoCurrentContext) {
  const CUdeviceptr device = driver_->mem_alloc(4096);
  void* host = driver_->mem_host_alloc(4096, 0);
  PageableBuffer pinned(page());
  driver_->mem_host_register(pinned.get(), page(), 0);
  const CUstream stream = driver_->stream_create(CU_STREAM_NON_BLOCKING);
  const CUevent event = driver_->event_create(0);
  driver_->ctx_set_current(nullptr);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free(device); })), kSuccess) << "cuMemFree";
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free_host(host); })), kSuccess)
      << "cuMemFreeHost";
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_host_unregister(pinned.get()); })), kSuccess)
      << "cuMemHostUnregister";
  EXPECT_EQ(result_name(result_of([&] { driver_->event_destroy(event); })), kSuccess)
      << "cuEventDestroy";
  EXPECT_EQ(result_name(result_of([&] { driver_->stream_destroy(stream); })), kSuccess)
      << "cuStreamDestroy";
  driver_->ctx_set_current(context_);
}

// --- device memory -----------------------------------------------------------------------------

TEST_F(FakeParityGpu, MemAllocOfZeroBytesIsInvalidValue) {
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_alloc(0); })), kInvalidValue);
}

TEST_F(FakeParityGpu, MemFreeOfNullSucceeds) {
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free(0); })), kSuccess);
}

TEST_F(FakeParityGpu, MemFreeOfAnInteriorPointerIsInvalidValue) {
  DeviceBuffer buffer(*driver_, kMiB);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free(buffer.get() + 256); })), kInvalidValue);
  EXPECT_EQ(driver_->mem_get_address_range(buffer.get()).size, kMiB) << "the block is intact";
}

TEST_F(FakeParityGpu, MemFreeAndMemFreeAsyncAcceptEachOthersAllocations) {
  if (!pools_supported()) GTEST_SKIP() << "device " << kDevice << " has no memory pools";
  const CUdeviceptr allocated = driver_->mem_alloc(kMiB);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free_async(allocated, nullptr); })), kSuccess)
      << "cuMemFreeAsync of a cuMemAlloc allocation";
  driver_->ctx_synchronize();
  const CUmemoryPool pool = make_pool();
  const CUdeviceptr pooled = driver_->mem_alloc_from_pool_async(kMiB, pool, nullptr);
  driver_->ctx_synchronize();
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_free(pooled); })), kSuccess)
      << "cuMemFree of a cuMemAllocFromPoolAsync allocation";
  driver_->mem_pool_destroy(pool);
}

TEST_F(FakeParityGpu, AddressRangeOnePastTheEndIsNotFound) {
  // 1 MiB + 3: one past the end lies in the alignment gap, never in another allocation.
  DeviceBuffer buffer(*driver_, kMiB + 3);
  EXPECT_EQ(
      result_name(result_of([&] { driver_->mem_get_address_range(buffer.get() + kMiB + 3); })),
      "CUDA_ERROR_NOT_FOUND");
}

TEST_F(FakeParityGpu, PoolAllocationOfZeroBytesSucceedsWithNull) {
  if (!pools_supported()) GTEST_SKIP() << "device " << kDevice << " has no memory pools";
  const CUmemoryPool pool = make_pool();
  CUdeviceptr pointer = 1;
  EXPECT_EQ(result_name(
                result_of([&] { pointer = driver_->mem_alloc_from_pool_async(0, pool, nullptr); })),
            kSuccess);
  EXPECT_EQ(pointer, CUdeviceptr{0});
  driver_->ctx_synchronize();
  driver_->mem_pool_destroy(pool);
}

TEST_F(FakeParityGpu, PoolKeepsFreedMemoryUntilTrimmed) {
  if (!pools_supported()) GTEST_SKIP() << "device " << kDevice << " has no memory pools";
  const CUmemoryPool pool = make_pool();
  cuuint64_t keep_everything = ~cuuint64_t{0};
  driver_->mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything);
  const std::size_t size = 64 * kMiB;
  const MemoryInfo before = driver_->mem_get_info();
  const CUdeviceptr pointer = driver_->mem_alloc_from_pool_async(size, pool, nullptr);
  driver_->mem_free_async(pointer, nullptr);
  driver_->ctx_synchronize();
  const MemoryInfo cached = driver_->mem_get_info();
  driver_->mem_pool_trim_to(pool, 0);
  const MemoryInfo trimmed = driver_->mem_get_info();
  driver_->mem_pool_destroy(pool);
  // The fake caches nothing; a real pool keeps the freed bytes until trimmed.
  auto drop = [](const MemoryInfo& from, const MemoryInfo& to) {
    return static_cast<std::int64_t>(from.free) - static_cast<std::int64_t>(to.free);
  };
  EXPECT_GE(drop(before, cached), static_cast<std::int64_t>(size))
      << "free before " << before.free << ", after the freed allocation " << cached.free;
  EXPECT_GE(drop(trimmed, cached), static_cast<std::int64_t>(size))
      << "free with the cache " << cached.free << ", after trimming " << trimmed.free;
}

// --- page-locked host memory ---------------------------------------------------------------------

TEST_F(FakeParityGpu, MemHostAllocOfZeroBytesSucceeds) {
  void* host = nullptr;
  EXPECT_EQ(result_name(result_of([&] { host = driver_->mem_host_alloc(0, 0); })), kSuccess);
  if (host != nullptr) driver_->mem_free_host(host);
}

TEST_F(FakeParityGpu, HostUnregisterOfAnInteriorAddressIsInvalidValue) {
  PageableBuffer pinned(2 * page());
  driver_->mem_host_register(pinned.get(), 2 * page(), 0);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_host_unregister(pinned.get() + page()); })),
            kInvalidValue);
  driver_->mem_host_unregister(pinned.get());
}

TEST_F(FakeParityGpu, HostRegisterInsideAHostAllocBlockIsInvalidValue) {
  auto* host = static_cast<unsigned char*>(driver_->mem_host_alloc(2 * page(), 0));
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_host_register(host + page(), 64, 0); })),
            kInvalidValue);
  driver_->mem_free_host(host);
}

// The fake is stricter here on purpose (fake_driver.hpp): it wants the DEVICEMAP flag.
TEST_F(FakeParityGpu, HostGetDevicePointerWithoutTheDevicemapFlagIsTheHostAddress) {
  void* host = driver_->mem_host_alloc(4096, 0);
  CUdeviceptr mapped = 0;
  EXPECT_EQ(result_name(result_of([&] { mapped = driver_->mem_host_get_device_pointer(host, 0); })),
            kSuccess)
      << "cuMemHostGetDevicePointer of a cuMemHostAlloc(flags 0) block";
  EXPECT_EQ(mapped, address_of(host));
  driver_->mem_free_host(host);

  PageableBuffer pinned(page());
  driver_->mem_host_register(pinned.get(), page(), 0);
  mapped = 0;
  EXPECT_EQ(result_name(
                result_of([&] { mapped = driver_->mem_host_get_device_pointer(pinned.get(), 0); })),
            kSuccess)
      << "cuMemHostGetDevicePointer of a cuMemHostRegister(flags 0) range";
  EXPECT_EQ(mapped, address_of(pinned.get()));
  driver_->mem_host_unregister(pinned.get());
}

// With unified addressing every page-locked block is mapped: DEVICEMAP is always reported.
TEST_F(FakeParityGpu, MemHostGetFlagsReturnsTheFlagsOfTheAllocationAndDevicemap) {
  for (unsigned flags = 0; flags < 8; ++flags) {
    SCOPED_TRACE("cuMemHostAlloc flags " + std::to_string(flags));
    auto* host = static_cast<unsigned char*>(driver_->mem_host_alloc(1000, flags));
    unsigned seen = ~0U;
    EXPECT_EQ(result_name(result_of([&] { seen = driver_->mem_host_get_flags(host); })), kSuccess);
    EXPECT_EQ(seen, flags | CU_MEMHOSTALLOC_DEVICEMAP)
        << "the flags cuMemHostGetFlags reports for the block's start";
    seen = ~0U;
    EXPECT_EQ(result_name(result_of([&] { seen = driver_->mem_host_get_flags(host + 999); })),
              kSuccess);
    EXPECT_EQ(seen, flags | CU_MEMHOSTALLOC_DEVICEMAP)
        << "the flags cuMemHostGetFlags reports for an interior address";
    driver_->mem_free_host(host);
  }
}

TEST_F(FakeParityGpu, MemHostGetFlagsOfRegisteredMemoryIsItsPortableBitAndDevicemap) {
  PageableBuffer pinned(3 * page());
  driver_->mem_host_register(pinned.get(), page(), CU_MEMHOSTREGISTER_PORTABLE);
  driver_->mem_host_register(pinned.get() + page(), page(), CU_MEMHOSTREGISTER_DEVICEMAP);
  unsigned seen = ~0U;
  EXPECT_EQ(result_name(result_of([&] { seen = driver_->mem_host_get_flags(pinned.get()); })),
            kSuccess)
      << "registered memory (PORTABLE)";
  EXPECT_EQ(seen, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP)
      << "the flags of memory registered PORTABLE";
  seen = ~0U;
  EXPECT_EQ(result_name(
                result_of([&] { seen = driver_->mem_host_get_flags(pinned.get() + page() + 8); })),
            kSuccess)
      << "registered memory (DEVICEMAP), interior address";
  EXPECT_EQ(seen, unsigned{CU_MEMHOSTALLOC_DEVICEMAP})
      << "the flags of memory registered DEVICEMAP";
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_host_get_flags(pinned.get() + 2 * page()); })),
            kInvalidValue)
      << "pageable memory";
  driver_->mem_host_unregister(pinned.get());
  driver_->mem_host_unregister(pinned.get() + page());
}

TEST_F(FakeParityGpu, MemHostGetFlagsNeedsACurrentContext) {
  void* host = driver_->mem_host_alloc(4096, CU_MEMHOSTALLOC_PORTABLE);
  driver_->ctx_set_current(nullptr);
  EXPECT_EQ(result_name(result_of([&] { driver_->mem_host_get_flags(host); })), kInvalidContext)
      << "cuMemHostGetFlags with no current context";
  driver_->ctx_set_current(context_);
  driver_->mem_free_host(host);
}

// --- pointer attributes --------------------------------------------------------------------------

TEST_F(FakeParityGpu, PointerAttributesOfDeviceMemory) {
  const std::size_t size = kMiB + 3;
  DeviceBuffer buffer(*driver_, size);
  const CUdeviceptr interior = buffer.get() + 4099;
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, interior), number(CU_MEMORYTYPE_DEVICE));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, interior), number(interior));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_HOST_POINTER, interior), kInvalidValue);
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, interior), "0");
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, interior), number(kDevice));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, interior), number(buffer.get()));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, interior), number(size))
      << "the fake answers the requested size";
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MAPPED, interior), "1");
}

TEST_F(FakeParityGpu, PointerAttributesOfPoolMemory) {
  if (!pools_supported()) GTEST_SKIP() << "device " << kDevice << " has no memory pools";
  const CUmemoryPool pool = make_pool();
  const CUdeviceptr pointer = driver_->mem_alloc_from_pool_async(700, pool, nullptr);
  driver_->ctx_synchronize();
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer + 1), number(CU_MEMORYTYPE_DEVICE));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, pointer), "0");
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer), number(kDevice));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointer + 1), number(pointer));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer + 1), "700");
  driver_->mem_free_async(pointer, nullptr);
  driver_->ctx_synchronize();
  driver_->mem_pool_destroy(pool);
}

TEST_F(FakeParityGpu, PointerAttributesOfManagedMemory) {
  if (driver_->device_get_attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, kDevice) == 0) {
    GTEST_SKIP() << "device " << kDevice << " has no managed memory";
  }
  const CUdeviceptr pointer = driver_->mem_alloc_managed(300, CU_MEM_ATTACH_GLOBAL);
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer + 3), number(CU_MEMORYTYPE_DEVICE));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, pointer + 3), "1");
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_HOST_POINTER, pointer + 3), number(pointer + 3));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, pointer + 3), number(pointer + 3));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer + 3), number(kDevice));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointer + 3), number(pointer));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer + 3), "300");
  driver_->mem_free(pointer);
}

TEST_F(FakeParityGpu, PointerAttributesOfHostAllocMemory) {
  for (const unsigned flags :
       {0U, unsigned{CU_MEMHOSTALLOC_PORTABLE}, unsigned{CU_MEMHOSTALLOC_DEVICEMAP},
        unsigned{CU_MEMHOSTALLOC_WRITECOMBINED}}) {
    SCOPED_TRACE("cuMemHostAlloc(100, flags " + std::to_string(flags) + ")");
    auto* host = static_cast<unsigned char*>(driver_->mem_host_alloc(100, flags));
    const CUdeviceptr at = address_of(host + 40);
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, at), number(CU_MEMORYTYPE_HOST));
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, at), number(at));
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_HOST_POINTER, at), number(at));
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, at), "0");
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, at), number(kDevice));
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, at), number(address_of(host)));
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, at), "100");
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MAPPED, at), "1");
    // Past the 100 bytes asked for, inside the block's page: the fake answers for requested
    // bytes only.
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address_of(host + 100)), kInvalidValue)
        << "a byte of the block's page past the requested size";
    driver_->mem_free_host(host);
  }
}

TEST_F(FakeParityGpu, PointerAttributesOfRegisteredMemoryCoverExactlyTheRegisteredBytes) {
  PageableBuffer pinned(page());
  unsigned char* const start = pinned.get() + 100;
  driver_->mem_host_register(start, 200, 0);
  const CUdeviceptr inside = address_of(start + 199);
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, inside), number(CU_MEMORYTYPE_HOST));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, inside), number(inside));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_HOST_POINTER, inside), number(inside));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, inside), number(kDevice));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, inside), number(address_of(start)))
      << "the fake answers the registered start";
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE, inside), "200")
      << "the fake answers the registered size";
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address_of(start - 1)), kInvalidValue)
      << "a byte of the registered page before the registered range";
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address_of(start + 200)), kInvalidValue)
      << "a byte of the registered page after the registered range";
  driver_->mem_host_unregister(start);
}

TEST_F(FakeParityGpu, PointerAttributesOfPageableMemoryAreInvalidValue) {
  PageableBuffer pageable(page());
  int on_the_stack = 0;
  for (const CUdeviceptr pointer : {address_of(pageable.get()), address_of(&on_the_stack)}) {
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer), kInvalidValue);
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MAPPED, pointer), kInvalidValue);
    EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer), kInvalidValue);
  }
}

TEST_F(FakeParityGpu, PointerAttributesNeedAContextOnlyForTheDevicePointer) {
  DeviceBuffer buffer(*driver_, 4096);
  driver_->ctx_set_current(nullptr);
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, buffer.get()),
            number(CU_MEMORYTYPE_DEVICE));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, buffer.get()), number(buffer.get()));
  EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, buffer.get()), kInvalidContext);
  driver_->ctx_set_current(context_);
}

TEST_F(FakeParityGpu, PointerAttributeDeviceOrdinalOnEveryDevice) {
  const int count = driver_->device_get_count();
  for (int device = 0; device < count; ++device) {
    SCOPED_TRACE("device " + std::to_string(device));
    const CUcontext context = driver_->primary_ctx_retain(device);
    driver_->ctx_set_current(context);
    {
      DeviceBuffer buffer(*driver_, 4096);
      driver_->ctx_set_current(context_);  // asked from device 0's context
      EXPECT_EQ(attribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, buffer.get()), number(device));
    }
    driver_->primary_ctx_release(device);
  }
}

// --- IPC -----------------------------------------------------------------------------------------

TEST_F(FakeParityGpu, IpcSecondOpenInOneProcessIsCountedAndReturnsTheSameAddress) {
  DeviceBuffer buffer(*driver_, kMiB);
  const IpcChildReport seen =
      run_ipc_child("open-twice", kDevice, {driver_->ipc_get_mem_handle(buffer.get())});
  EXPECT_EQ(seen.value("open1"), kSuccess) << seen.text;
  EXPECT_EQ(seen.value("open2"), kSuccess) << seen.text;
  EXPECT_EQ(seen.value("same_address"), "1") << seen.text;
  EXPECT_EQ(seen.value("close1"), kSuccess) << seen.text;
  EXPECT_EQ(seen.value("read_after_one_close"), kSuccess)
      << "the mapping must stay after one of two closes; " << seen.text;
  EXPECT_EQ(seen.value("close2"), kSuccess) << seen.text;
  EXPECT_EQ(seen.value("close3"), kInvalidValue) << "a close beyond the opens; " << seen.text;
}

TEST_F(FakeParityGpu, IpcOpenOfGarbageOrOfAFreedAllocationIsInvalidValue) {
  CUipcMemHandle garbage;
  std::memset(garbage.reserved, 0x5a, sizeof garbage.reserved);
  const std::size_t size = kMiB + 3;
  DeviceBuffer live(*driver_, size);  // first, so that it cannot reuse the freed block
  const CUdeviceptr freed = driver_->mem_alloc(kMiB);
  const CUipcMemHandle of_freed = driver_->ipc_get_mem_handle(freed);
  driver_->mem_free(freed);
  const IpcChildReport seen = run_ipc_child(
      "open-each", kDevice, {garbage, of_freed, driver_->ipc_get_mem_handle(live.get() + 100)});
  EXPECT_EQ(seen.value("open0"), kInvalidValue) << "garbage bytes; " << seen.text;
  EXPECT_EQ(seen.value("open1"), kInvalidValue) << "a freed allocation's handle; " << seen.text;
  EXPECT_EQ(seen.value("open2"), kSuccess) << seen.text;
  EXPECT_EQ(seen.value("memory_type2"), number(CU_MEMORYTYPE_DEVICE)) << seen.text;
  EXPECT_EQ(seen.value("ordinal2"), number(kDevice)) << seen.text;
  EXPECT_EQ(seen.value("range_offset2"), "0") << "the mapping starts its range; " << seen.text;
  EXPECT_EQ(seen.value("range_size2"), number(size)) << seen.text;
  EXPECT_EQ(seen.value("close2"), kSuccess) << seen.text;
}

TEST_F(FakeParityGpu, IpcMappingFreedWithMemFreeIsInvalidValue) {
  DeviceBuffer buffer(*driver_, kMiB);
  const IpcChildReport seen =
      run_ipc_child("free-mapping", kDevice, {driver_->ipc_get_mem_handle(buffer.get())});
  EXPECT_EQ(seen.value("open"), kSuccess) << seen.text;
  EXPECT_EQ(seen.value("free"), kInvalidValue) << "cuMemFree of an IPC mapping; " << seen.text;
  EXPECT_EQ(seen.value("close"), kSuccess) << seen.text;
}

TEST_F(FakeParityGpu, IpcGetMemHandleOfManagedOrPoolMemoryIsInvalidValue) {
  if (driver_->device_get_attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, kDevice) != 0) {
    const CUdeviceptr managed = driver_->mem_alloc_managed(4096, CU_MEM_ATTACH_GLOBAL);
    EXPECT_EQ(result_name(result_of([&] { driver_->ipc_get_mem_handle(managed); })), kInvalidValue)
        << "cuIpcGetMemHandle of managed memory";
    driver_->mem_free(managed);
  }
  if (pools_supported()) {
    const CUmemoryPool pool = make_pool();
    const CUdeviceptr pooled = driver_->mem_alloc_from_pool_async(4096, pool, nullptr);
    driver_->ctx_synchronize();
    EXPECT_EQ(result_name(result_of([&] { driver_->ipc_get_mem_handle(pooled); })), kInvalidValue)
        << "cuIpcGetMemHandle of pool memory";
    driver_->mem_free_async(pooled, nullptr);
    driver_->ctx_synchronize();
    driver_->mem_pool_destroy(pool);
  }
}

TEST_F(FakeParityGpu, IpcOpenOnADeviceWithoutPeerAccessIsPeerAccessUnsupported) {
  if (driver_->device_get_count() < 2) GTEST_SKIP() << "needs two devices";
  if (driver_->device_can_access_peer(1, kDevice)) {
    GTEST_SKIP() << "device 1 has peer access to device " << kDevice;
  }
  DeviceBuffer buffer(*driver_, kMiB);
  const IpcChildReport seen =
      run_ipc_child("open-each", 1, {driver_->ipc_get_mem_handle(buffer.get())});
  EXPECT_EQ(seen.value("open0"), "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED")
      << "opening device " << kDevice << "'s memory in device 1's context; " << seen.text;
}

// The launcher itself, on any machine: an unknown scenario comes back with the child's words.
TEST(IpcChild, ReportsWhatTheChildPrintedAndHowItEnded) {
  const IpcChildReport seen = run_ipc_child("no-such-scenario", 0, {CUipcMemHandle{}});
  EXPECT_EQ(seen.value("error"), "unknown scenario no-such-scenario") << seen.text;
  EXPECT_EQ(seen.value("open1"), "<not printed>");
  EXPECT_THAT(seen.text, ::testing::HasSubstr("exited with status 2"));
}

}  // namespace
}  // namespace emm
