// FakeDriver device memory: bytes, accounting, errors, addresses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fake_test_support.hpp"

namespace emm::test {
namespace {

using ::testing::HasSubstr;

std::vector<unsigned char> pattern(std::size_t size, unsigned seed) {
  std::vector<unsigned char> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(i * 31 + seed);
  return bytes;
}

TEST(FakeMemory, WrittenBytesReadBack) {
  auto driver = current_process();
  const auto written = pattern(1 * kMiB + 3, 7);
  const CUdeviceptr p = driver->mem_alloc(written.size());
  driver->memcpy_htod(p, written.data(), written.size());
  std::vector<unsigned char> read(written.size());
  driver->memcpy_dtoh(read.data(), p, read.size());
  EXPECT_EQ(read, written);

  // An interior slice reads the same bytes.
  std::vector<unsigned char> slice(100);
  driver->memcpy_dtoh(slice.data(), p + 4096 + 3, slice.size());
  EXPECT_TRUE(std::equal(slice.begin(), slice.end(), written.begin() + 4096 + 3));
  driver->mem_free(p);
}

TEST(FakeMemory, NewMemoryReadsZeroAndMemsetWritesEveryByte) {
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc(8192);
  std::vector<unsigned char> read(8192, 0xff);
  driver->memcpy_dtoh(read.data(), p, read.size());
  EXPECT_TRUE(std::all_of(read.begin(), read.end(), [](unsigned char b) { return b == 0; }));
  driver->memset_d8(p + 10, 0xab, 100);
  driver->memcpy_dtoh(read.data(), p, read.size());
  EXPECT_EQ(read[9], 0);
  EXPECT_EQ(read[10], 0xab);
  EXPECT_EQ(read[109], 0xab);
  EXPECT_EQ(read[110], 0);
  driver->mem_free(p);
}

TEST(FakeMemory, CopyDeviceToDeviceBetweenAllocations) {
  auto driver = current_process();
  const auto written = pattern(5000, 3);
  const CUdeviceptr a = driver->mem_alloc(5000);
  const CUdeviceptr b = driver->mem_alloc(6000);
  driver->memcpy_htod(a, written.data(), written.size());
  driver->memcpy_dtod(b + 1000, a, 5000);
  std::vector<unsigned char> read(5000);
  driver->memcpy_dtoh(read.data(), b + 1000, read.size());
  EXPECT_EQ(read, written);
  // Overlapping ranges of one allocation behave as memmove.
  driver->memcpy_dtod(a + 1, a, 4999);
  driver->memcpy_dtoh(read.data(), a, read.size());
  EXPECT_EQ(read[1], written[0]);
  EXPECT_EQ(read[4999], written[4998]);
  driver->mem_free(a);
  driver->mem_free(b);
}

TEST(FakeMemory, AccountingFollowsAllocationsAndFrees) {
  auto driver = current_process();
  FakeSystem& system = *driver->system();
  const std::size_t capacity = system.capacity(0);
  EXPECT_EQ(capacity, 4 * kGiB);
  EXPECT_EQ(driver->mem_get_info(), (MemoryInfo{capacity, capacity}));
  EXPECT_EQ(driver->device_bytes_in_use(), 0U);
  EXPECT_TRUE(driver->live_allocations().empty());

  const CUdeviceptr a = driver->mem_alloc(1000);  // costs 1024 at the default alignment of 512
  const CUdeviceptr b = driver->mem_alloc(512);
  EXPECT_EQ(driver->device_bytes_in_use(), 1512U);
  EXPECT_EQ(system.bytes_in_use(0), 1536U);
  EXPECT_EQ(system.allocation_count(0), 2U);
  EXPECT_EQ(driver->mem_get_info(), (MemoryInfo{capacity - 1536, capacity}));
  const std::vector<AddressRange> live = driver->live_allocations();
  ASSERT_EQ(live.size(), 2U);
  EXPECT_EQ(live[0].base, std::min(a, b));
  EXPECT_EQ(live[0].size, a < b ? 1000U : 512U);

  driver->mem_free(a);
  EXPECT_EQ(driver->device_bytes_in_use(), 512U);
  EXPECT_EQ(system.bytes_in_use(0), 512U);
  driver->mem_free(b);
  EXPECT_EQ(driver->device_bytes_in_use(), 0U);
  EXPECT_EQ(system.allocation_count(0), 0U);
  EXPECT_EQ(driver->mem_get_info(), (MemoryInfo{capacity, capacity}));
}

TEST(FakeMemory, PointersAreAlignedToTheDeviceAlignment) {
  FakeSystemConfig config;
  config.devices[0].alignment = 4096;
  auto driver = current_process(config);
  for (std::size_t size : {1U, 8U, 4097U, 3U}) {
    EXPECT_EQ(driver->mem_alloc(size) % 4096, 0U) << size;
  }
  auto default_driver = current_process();
  for (std::size_t size : {1U, 8U, 513U, 3U}) {
    EXPECT_EQ(default_driver->mem_alloc(size) % 512, 0U) << size;
  }
}

TEST(FakeMemory, SixtyFourMiBIsCheapAndUsable) {
  auto driver = current_process();
  const std::size_t size = 64 * kMiB;
  const CUdeviceptr p = driver->mem_alloc(size);
  const unsigned char last = 0x5c;
  driver->memcpy_htod(p + size - 1, &last, 1);
  unsigned char first = 1;
  unsigned char read = 0;
  driver->memcpy_dtoh(&first, p, 1);
  driver->memcpy_dtoh(&read, p + size - 1, 1);
  EXPECT_EQ(first, 0);
  EXPECT_EQ(read, last);
  driver->mem_free(p);
}

TEST(FakeMemory, FillingTheDeviceExactlySucceedsThenOneMoreByteIsOutOfMemory) {
  FakeSystemConfig config;
  config.devices[0].capacity = 64 * kMiB;
  auto driver = current_process(config);
  const CUdeviceptr all = driver->mem_alloc(64 * kMiB);
  EXPECT_EQ(driver->mem_get_info().free, 0U);
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_alloc(1), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
      HasSubstr("1 bytes requested on fake device 0, which has 0 of 67108864 bytes "
                "free"));
  driver->mem_free(all);
  driver->mem_free(driver->mem_alloc(1));
}

TEST(FakeMemory, OnePebibyteIsOutOfMemoryAndChangesNothing) {
  auto driver = current_process();
  const CUdeviceptr kept = driver->mem_alloc(4096);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(std::size_t{1} << 50), CUDA_ERROR_OUT_OF_MEMORY,
                          "cuMemAlloc",
                          HasSubstr("1125899906842624 bytes requested on fake device 0, which has "
                                    "4294963200 of 4294967296 bytes free"));
  EXPECT_EQ(driver->system()->bytes_in_use(0), 4096U);
  EXPECT_EQ(driver->live_allocations().size(), 1U);
  // Still usable.
  driver->mem_free(driver->mem_alloc(1 * kMiB));
  driver->mem_free(kept);
}

TEST(FakeMemory, SizeMaxIsOutOfMemoryNotAWrappedSmallRequest) {
  auto driver = current_process();
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(std::numeric_limits<std::size_t>::max()),
                          CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
                          HasSubstr("18446744073709551615 bytes requested"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(std::numeric_limits<std::size_t>::max() - 100),
                          CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc", HasSubstr("bytes requested"));
  EXPECT_EQ(driver->system()->bytes_in_use(0), 0U);
  EXPECT_EQ(driver->system()->allocation_count(0), 0U);
}

TEST(FakeMemory, OutOfMemoryMessageSaysWhatToDo) {
  auto driver = current_process();
  auto error = EMM_EXPECT_DRIVER_ERROR(
      driver->mem_alloc(std::size_t{1} << 50), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
      ::testing::StartsWith("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code_name(), "CUDA_ERROR_OUT_OF_MEMORY");
}

TEST(FakeMemory, SizeZeroIsInvalidValue) {
  auto driver = current_process();
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc(0), CUDA_ERROR_INVALID_VALUE, "cuMemAlloc",
                          HasSubstr("bytesize is 0"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc_managed(0, CU_MEM_ATTACH_GLOBAL),
                          CUDA_ERROR_INVALID_VALUE, "cuMemAllocManaged",
                          HasSubstr("bytesize is 0"));
  EXPECT_EQ(driver->live_allocations().size(), 0U);
}

TEST(FakeMemory, FreeOfNullIsANoOp) {
  auto driver = current_process();
  driver->mem_free(0);
  EXPECT_EQ(driver->invalid_frees(), 0U);
  EXPECT_EQ(driver->call_count(DriverCall::cuMemFree), 1U);
}

TEST(FakeMemory, DoubleFreeIsInvalidValueAndCounted) {
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc(256);
  driver->mem_free(p);
  EXPECT_EQ(driver->invalid_frees(), 0U);
  EMM_EXPECT_DRIVER_ERROR(
      driver->mem_free(p), CUDA_ERROR_INVALID_VALUE, "cuMemFree",
      HasSubstr("is not a live device allocation of this process (freed twice, or "
                "never allocated)"));
  EXPECT_EQ(driver->invalid_frees(), 1U);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(0x1234), CUDA_ERROR_INVALID_VALUE, "cuMemFree",
                          HasSubstr("0x1234 is not a live device allocation"));
  EXPECT_EQ(driver->invalid_frees(), 2U);
}

TEST(FakeMemory, FreeOfAnInteriorPointerIsInvalidAndFreesNothing) {
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc(1000);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(p + 8), CUDA_ERROR_INVALID_VALUE, "cuMemFree",
                          HasSubstr("(offset 8); free the allocation's base address"));
  EXPECT_EQ(driver->invalid_frees(), 1U);
  EXPECT_EQ(driver->live_allocations().size(), 1U);
  driver->mem_free(p);
}

TEST(FakeMemory, AddressRangeOfInteriorPointersIsTheWholeBlock) {
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc(1000);
  for (std::size_t offset : {0U, 1U, 256U, 999U}) {
    const AddressRange range = driver->mem_get_address_range(p + offset);
    EXPECT_EQ(range.base, p) << offset;
    EXPECT_EQ(range.size, 1000U) << offset;
  }
  // One past the end (inside the alignment padding) belongs to no allocation, as on CUDA.
  EMM_EXPECT_DRIVER_ERROR(driver->mem_get_address_range(p + 1000), CUDA_ERROR_NOT_FOUND,
                          "cuMemGetAddressRange", HasSubstr("is not inside any device allocation"));
  EMM_EXPECT_DRIVER_ERROR(driver->mem_get_address_range(0), CUDA_ERROR_NOT_FOUND,
                          "cuMemGetAddressRange",
                          HasSubstr("0x0 is not inside any device allocation"));
  driver->mem_free(p);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_get_address_range(p), CUDA_ERROR_NOT_FOUND,
                          "cuMemGetAddressRange", HasSubstr("is not inside any device allocation"));
}

TEST(FakeMemory, ThousandRandomLiveAllocationsNeverOverlap) {
  auto driver = current_process();
  std::mt19937_64 random(12345);
  std::uniform_int_distribution<std::size_t> size_of(1, 64 * 1024);
  std::map<CUdeviceptr, std::size_t> live;  // interval set: base -> size
  auto check_and_insert = [&live](CUdeviceptr base, std::size_t size) {
    auto next = live.lower_bound(base);
    if (next != live.end()) {
      ASSERT_LE(base + size, next->first) << "overlaps the allocation at " << next->first;
    }
    if (next != live.begin()) {
      auto previous = std::prev(next);
      ASSERT_LE(previous->first + previous->second, base)
          << "overlaps the allocation at " << previous->first;
    }
    live.emplace(base, size);
  };
  std::vector<CUdeviceptr> order;
  for (int round = 0; round < 3000; ++round) {
    if (live.size() < 1000 || random() % 3 == 0) {
      const std::size_t size = size_of(random);
      const CUdeviceptr base = driver->mem_alloc(size);
      check_and_insert(base, size);
      order.push_back(base);
    } else {
      const std::size_t victim = random() % order.size();
      driver->mem_free(order[victim]);
      live.erase(order[victim]);
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(victim));
    }
  }
  EXPECT_GE(live.size(), 1000U);
  const std::vector<AddressRange> reported = driver->live_allocations();
  ASSERT_EQ(reported.size(), live.size());
  for (const AddressRange& range : reported) EXPECT_EQ(live.at(range.base), range.size);
  for (CUdeviceptr base : order) driver->mem_free(base);
  EXPECT_EQ(driver->system()->bytes_in_use(0), 0U);
}

TEST(FakeMemory, FreedAddressesAreReused) {
  auto driver = current_process();
  const CUdeviceptr a = driver->mem_alloc(4096);
  driver->mem_free(a);
  EXPECT_EQ(driver->mem_alloc(4096), a);
}

TEST(FakeMemory, CopiesOutsideLiveMemoryAreInvalidAndCounted) {
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc(1000);
  const CUdeviceptr q = driver->mem_alloc(1000);
  std::vector<unsigned char> bytes(2000);
  EMM_EXPECT_DRIVER_ERROR(driver->memcpy_htod(p + 990, bytes.data(), 20), CUDA_ERROR_INVALID_VALUE,
                          "cuMemcpyHtoD", HasSubstr("destination range ["));
  EMM_EXPECT_DRIVER_ERROR(driver->memset_d8(p + 990, 1, 20), CUDA_ERROR_INVALID_VALUE, "cuMemsetD8",
                          HasSubstr("is not inside one live allocation"));
  EMM_EXPECT_DRIVER_ERROR(driver->memcpy_dtoh(bytes.data(), 0x10, 8), CUDA_ERROR_INVALID_VALUE,
                          "cuMemcpyDtoH", HasSubstr("source range [0x10, +8)"));
  // Two neighbouring allocations are not one range, even when adjacent.
  EMM_EXPECT_DRIVER_ERROR(driver->memset_d8(std::min(p, q), 1, 2000), CUDA_ERROR_INVALID_VALUE,
                          "cuMemsetD8", HasSubstr("is not inside one live allocation"));
  EMM_EXPECT_DRIVER_ERROR(driver->memcpy_dtod(q, p + 1, 1000), CUDA_ERROR_INVALID_VALUE,
                          "cuMemcpyDtoD", HasSubstr("source range"));
  EXPECT_EQ(driver->invalid_accesses(), 5U);
  driver->mem_free(p);
  EMM_EXPECT_DRIVER_ERROR(driver->memcpy_dtoh(bytes.data(), p, 1), CUDA_ERROR_INVALID_VALUE,
                          "cuMemcpyDtoH", HasSubstr("source range"));
  EXPECT_EQ(driver->invalid_accesses(), 6U);
  // An empty copy touches nothing and succeeds wherever it points (as on CUDA).
  driver->memcpy_htod(0x10, bytes.data(), 0);
  EXPECT_EQ(driver->invalid_accesses(), 6U);
  driver->mem_free(q);
}

TEST(FakeMemory, ManagedMemoryIsCountedAndFreedByMemFree) {
  auto driver = current_process();
  const CUdeviceptr p = driver->mem_alloc_managed(4096, CU_MEM_ATTACH_GLOBAL);
  EXPECT_EQ(driver->device_bytes_in_use(), 4096U);
  driver->memset_d8(p, 3, 4096);
  EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc_managed(64, 7), CUDA_ERROR_INVALID_VALUE,
                          "cuMemAllocManaged", HasSubstr("flags must be CU_MEM_ATTACH_GLOBAL or"));
  driver->mem_free(p);
  EXPECT_EQ(driver->device_bytes_in_use(), 0U);
}

TEST(FakeMemory, ManagedMemoryIsHostAccessibleInPlaceAndRecordsItsAttachFlag) {
  auto driver = current_process();
  const std::size_t size = 4096 + 3;
  const CUdeviceptr p = driver->mem_alloc_managed(size, CU_MEM_ATTACH_HOST);
  EXPECT_EQ(p % 512, 0U) << "aligned as the device aligns its pointers";
  auto* host = reinterpret_cast<unsigned char*>(static_cast<std::uintptr_t>(p));

  // Host writes are read by the driver at the same address, and the other way round.
  const auto written = pattern(size, 11);
  std::copy(written.begin(), written.end(), host);
  std::vector<unsigned char> read(size);
  driver->memcpy_dtoh(read.data(), p, size);
  EXPECT_EQ(read, written);
  const auto copied = pattern(size, 12);
  driver->memcpy_htod(p, copied.data(), size);
  EXPECT_TRUE(std::equal(copied.begin(), copied.end(), host));
  driver->memset_d8(p + 1, 0x5A, size - 1);
  EXPECT_EQ(host[0], copied[0]);
  EXPECT_TRUE(std::all_of(host + 1, host + size, [](unsigned char b) { return b == 0x5A; }));

  EXPECT_EQ(driver->managed_attach_flags(p), std::optional<unsigned>(CU_MEM_ATTACH_HOST));
  EXPECT_EQ(driver->managed_attach_flags(p + size - 1),
            std::optional<unsigned>(CU_MEM_ATTACH_HOST));
  EXPECT_EQ(driver->managed_attach_flags(p + size), std::nullopt);
  const AddressRange range = driver->mem_get_address_range(p + 10);
  EXPECT_EQ(range.base, p);
  EXPECT_EQ(range.size, size);
  EXPECT_EQ(driver->device_bytes_in_use(), size);

  const CUdeviceptr global = driver->mem_alloc_managed(64, CU_MEM_ATTACH_GLOBAL);
  EXPECT_EQ(driver->managed_attach_flags(global), std::optional<unsigned>(CU_MEM_ATTACH_GLOBAL));
  const CUdeviceptr device = driver->mem_alloc(64);
  EXPECT_EQ(driver->managed_attach_flags(device), std::nullopt) << "cuMemAlloc memory";

  driver->mem_free(p);
  EXPECT_EQ(driver->managed_attach_flags(p), std::nullopt) << "freed";
  EMM_EXPECT_DRIVER_ERROR(driver->mem_free(p), CUDA_ERROR_INVALID_VALUE, "cuMemFree",
                          HasSubstr("not a live device allocation"));
  EXPECT_EQ(driver->invalid_frees(), 1U);
  driver->mem_free(global);
  driver->mem_free(device);
  EXPECT_EQ(driver->device_bytes_in_use(), 0U);
}

TEST(FakeMemory, ManagedMemoryNeedsExactlyOneAttachFlag) {
  auto driver = current_process();
  for (const unsigned flags :
       {0u, unsigned{CU_MEM_ATTACH_GLOBAL | CU_MEM_ATTACH_HOST}, unsigned{CU_MEM_ATTACH_SINGLE}}) {
    EMM_EXPECT_DRIVER_ERROR(driver->mem_alloc_managed(64, flags), CUDA_ERROR_INVALID_VALUE,
                            "cuMemAllocManaged",
                            HasSubstr("flags must be CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST, "
                                      "got " +
                                      std::to_string(flags)));
  }
  EXPECT_EQ(driver->live_allocations().size(), 0U);
}

TEST(FakeMemory, ManagedMemoryFollowsALargeDeviceAlignment) {
  FakeSystemConfig config;
  config.devices[0].alignment = std::size_t{1} << 21;
  auto driver = current_process(config);
  std::vector<CUdeviceptr> pointers;
  for (const std::size_t size : {std::size_t{1}, std::size_t{3} << 20}) {
    const CUdeviceptr p = driver->mem_alloc_managed(size, CU_MEM_ATTACH_GLOBAL);
    EXPECT_EQ(p % (std::size_t{1} << 21), 0U) << size;
    driver->memset_d8(p, 1, size);
    pointers.push_back(p);
  }
  for (const CUdeviceptr p : pointers) driver->mem_free(p);
  EXPECT_EQ(driver->live_allocations().size(), 0U);
}

TEST(FakeMemory, DevicesHaveSeparateAddressRangesAndAccounting) {
  FakeSystemConfig config;
  config.devices.resize(2);
  config.devices[1].capacity = 1 * kGiB;
  auto driver = current_process(config);
  const CUdeviceptr on0 = driver->mem_alloc(4096);
  driver->ctx_set_current(driver->primary_ctx_retain(1));
  EXPECT_EQ(driver->mem_get_info(), (MemoryInfo{1 * kGiB, 1 * kGiB}));
  const CUdeviceptr on1 = driver->mem_alloc(4096);
  EXPECT_GE(on1 > on0 ? on1 - on0 : on0 - on1, std::size_t{1} << 40);
  EXPECT_EQ(driver->system()->bytes_in_use(0), 4096U);
  EXPECT_EQ(driver->system()->bytes_in_use(1), 4096U);
  // Copies work between devices (unified addressing).
  driver->memset_d8(on0, 9, 16);
  driver->memcpy_dtod(on1, on0, 16);
  unsigned char byte = 0;
  driver->memcpy_dtoh(&byte, on1 + 15, 1);
  EXPECT_EQ(byte, 9);
  driver->mem_free(on0);
  driver->mem_free(on1);
}

TEST(FakeSystemConfigTest, RejectsUnusableConfigurations) {
  FakeSystemConfig zero;
  zero.devices[0].capacity = 0;
  EMM_EXPECT_THROW(InvalidArgumentError, FakeSystem{zero},
                   "FakeSystemConfig::devices[0].capacity must be in [1, 2^38] bytes, got 0");
  FakeSystemConfig odd;
  odd.devices[0].alignment = 300;
  EMM_EXPECT_THROW(InvalidArgumentError, FakeSystem{odd},
                   "FakeSystemConfig::devices[0].alignment must be a power of two up to 1 GiB, "
                   "got 300");
  FakeSystem system;
  EMM_EXPECT_THROW(InvalidArgumentError, system.capacity(1),
                   "FakeSystem has no device 1 (it has 1)");
}

}  // namespace
}  // namespace emm::test
