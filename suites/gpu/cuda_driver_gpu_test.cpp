// CudaDriver on a real GPU (spec §2.1 and the measured facts of §6). Every test skips with
// "no GPU: <reason>" where libcuda.so.1 or a device is missing, so CI without a GPU shows why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "emm/conformance/ipc_importer.hpp"
#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"
#include "emm/ipc_handle.hpp"
#include "gpu_test_support.hpp"

namespace emm {
namespace {

using gpu_test::CudaDriverGpu;
using gpu_test::DeviceBuffer;
using gpu_test::kMiB;
using gpu_test::pattern;
using gpu_test::pattern_byte;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST_F(CudaDriverGpu, ReportsDriverVersionAndDevices) {
  EXPECT_EQ(driver_->implementation_name(), "cuda");
  // cuGetProcAddress, which load() relies on, arrived in CUDA 11.3.
  EXPECT_GE(driver_->driver_get_version(), 11030);
  EXPECT_GE(driver_->device_get_count(), 1);
  EXPECT_FALSE(driver_->device_get_name(kDevice).empty());
  EXPECT_EQ(driver_->ctx_get_current(), context_);
  EXPECT_EQ(driver_->ctx_get_device(), kDevice);
  driver_->ctx_synchronize();
}

TEST_F(CudaDriverGpu, DeviceIdentityIsThePciAttributes) {
  const DeviceIdentity identity = driver_->device_identity(kDevice);
  EXPECT_EQ(identity.pci_domain_id,
            driver_->device_get_attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, kDevice));
  EXPECT_EQ(identity.pci_bus_id,
            driver_->device_get_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, kDevice));
  EXPECT_EQ(identity.pci_device_id,
            driver_->device_get_attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, kDevice));
  // PCI: bus 0..255, device 0..31.
  EXPECT_GE(identity.pci_bus_id, 0);
  EXPECT_LE(identity.pci_bus_id, 255);
  EXPECT_GE(identity.pci_device_id, 0);
  EXPECT_LE(identity.pci_device_id, 31);
  // Every device CUDA 12+ supports has unified addressing, hence mapped pinned memory.
  EXPECT_TRUE(driver_->can_map_host_memory(kDevice));
}

TEST_F(CudaDriverGpu, InvalidDeviceIsCudaDriverError) {
  const int count = driver_->device_get_count();
  auto error = EMM_EXPECT_THROW(
      CudaDriverError, driver_->device_get_attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, count),
      AllOf(StartsWith("cuDeviceGetAttribute failed: CUDA_ERROR_INVALID_DEVICE"),
            HasSubstr("device " + std::to_string(count))));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code(), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(error->call(), "cuDeviceGetAttribute");
}

TEST_F(CudaDriverGpu, CurrentContextIsPerThread) {
  CUcontext seen_before = context_;
  bool allocated = false;
  std::string failure;
  std::thread worker([&] {
    try {
      seen_before = driver_->ctx_get_current();
      driver_->ctx_set_current(context_);
      const CUdeviceptr pointer = driver_->mem_alloc(4096);
      allocated = pointer != 0;
      driver_->mem_free(pointer);
      driver_->ctx_set_current(nullptr);
    } catch (const std::exception& error) {
      failure = error.what();
    }
  });
  worker.join();
  EXPECT_EQ(failure, "");
  EXPECT_EQ(seen_before, nullptr) << "a new thread starts with no current context";
  EXPECT_TRUE(allocated);
  EXPECT_EQ(driver_->ctx_get_current(), context_) << "another thread changed this one's context";
}

TEST_F(CudaDriverGpu, AllocationsAreAlignedTo256BytesAndFreed) {
  for (const std::size_t size : {std::size_t{1}, std::size_t{8}, std::size_t{4096}, kMiB + 3}) {
    DeviceBuffer buffer(*driver_, size);
    EXPECT_NE(buffer.get(), CUdeviceptr{0}) << size;
    EXPECT_EQ(buffer.get() % 256, 0u) << "cuMemAlloc(" << size << ") returned " << buffer.get();
  }
}

TEST_F(CudaDriverGpu, MemcpyRoundTripThroughTwoBuffers) {
  const std::size_t size = kMiB + 3;
  DeviceBuffer first(*driver_, size);
  DeviceBuffer second(*driver_, size);
  const std::vector<std::uint8_t> written = pattern(size, 7);
  driver_->memcpy_htod(first.get(), written.data(), size);
  driver_->memcpy_dtod(second.get(), first.get(), size);
  EXPECT_EQ(read(second.get(), size), written);
}

TEST_F(CudaDriverGpu, MemsetD8SetsExactlyTheRange) {
  const std::size_t size = 8192;
  DeviceBuffer buffer(*driver_, size);
  driver_->memset_d8(buffer.get(), 0x00, size);
  driver_->memset_d8(buffer.get() + 100, 0xab, 1000);
  std::vector<std::uint8_t> expected(size, 0x00);
  std::fill(expected.begin() + 100, expected.begin() + 1100, std::uint8_t{0xab});
  EXPECT_EQ(read(buffer.get(), size), expected);
}

TEST_F(CudaDriverGpu, MemGetInfoDropsByTheAllocationAndRecovers) {
  const std::size_t size = 256 * kMiB;
  const MemoryInfo before = driver_->mem_get_info();
  EXPECT_GT(before.total, 0u);
  EXPECT_LE(before.free, before.total);
  MemoryInfo during;
  {
    DeviceBuffer buffer(*driver_, size);
    during = driver_->mem_get_info();
  }
  const MemoryInfo after = driver_->mem_get_info();
  EXPECT_EQ(during.total, before.total);
  EXPECT_GE(before.free - during.free, size)
      << "free went from " << before.free << " to " << during.free << " for " << size << " bytes";
  EXPECT_GE(after.free - during.free, size)
      << "cuMemFree did not give the memory back: " << during.free << " -> " << after.free;
}

TEST_F(CudaDriverGpu, AddressRangeOfAnInteriorPointerIsTheWholeAllocation) {
  DeviceBuffer buffer(*driver_, kMiB);
  for (const std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{4099}, kMiB - 1}) {
    const AddressRange range = driver_->mem_get_address_range(buffer.get() + offset);
    EXPECT_EQ(range.base, buffer.get()) << "offset " << offset;
    EXPECT_EQ(range.size, kMiB) << "offset " << offset;
  }
}

// Spec §6: the 64 bytes name the allocation, not the pointer, so IPC offsets travel beside them.
TEST_F(CudaDriverGpu, IpcHandleOfAnInteriorPointerEqualsTheBaseHandle) {
  RecordProperty("spec", "6");
  DeviceBuffer buffer(*driver_, kMiB);
  DeviceBuffer other(*driver_, kMiB);
  const CUipcMemHandle base = driver_->ipc_get_mem_handle(buffer.get());
  for (const std::size_t offset : {std::size_t{1}, std::size_t{256}, std::size_t{4096 + 3}}) {
    const CUipcMemHandle interior = driver_->ipc_get_mem_handle(buffer.get() + offset);
    EXPECT_EQ(std::memcmp(base.reserved, interior.reserved, sizeof base.reserved), 0)
        << "offset " << offset;
  }
  const CUipcMemHandle different = driver_->ipc_get_mem_handle(other.get());
  EXPECT_NE(std::memcmp(base.reserved, different.reserved, sizeof base.reserved), 0);
}

TEST_F(CudaDriverGpu, IpcHandleOpensInAnotherProcessAtTheAllocationBase) {
  RecordProperty("spec", "6");
  const std::size_t size = kMiB;
  DeviceBuffer buffer(*driver_, size);
  const std::vector<std::uint8_t> written = pattern(size, 3);
  driver_->memcpy_htod(buffer.get(), written.data(), size);

  // CUDA refuses to import a handle in the process that exported it, and a forked child cannot
  // use CUDA: emm-ipc-importer opens it (with CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, mapping
  // offset + count bytes from the allocation base), reads [offset, offset + count), fills it.
  const std::size_t offset = 4096 + 3;
  const std::size_t count = 1000;
  conformance::ImportItem item;
  // Exported through an interior pointer: the importer still maps the whole allocation.
  item.handle = IpcHandle(nullptr, driver_->ipc_get_mem_handle(buffer.get() + offset), count,
                          std::nullopt, offset)
                    .serialize();
  item.fill = gpu_test::kIpcChildFill;
  conformance::ImportRequest request;
  request.items.push_back(item);
  const std::string importer = conformance::find_ipc_importer();
  ASSERT_FALSE(importer.empty()) << "emm-ipc-importer not found; set EMM_IPC_IMPORTER to it";
  const conformance::ImportResponse response =
      conformance::run_import(importer, request, std::chrono::seconds(60));
  ASSERT_EQ(response.error, "");
  ASSERT_EQ(response.answers.size(), 1u);
  ASSERT_TRUE(response.answers[0].ok) << response.answers[0].error;
  const std::vector<std::uint8_t> seen(
      reinterpret_cast<const std::uint8_t*>(response.answers[0].bytes.data()),
      reinterpret_cast<const std::uint8_t*>(response.answers[0].bytes.data()) +
          response.answers[0].bytes.size());
  EXPECT_EQ(seen, std::vector<std::uint8_t>(
                      written.begin() + static_cast<std::ptrdiff_t>(offset),
                      written.begin() + static_cast<std::ptrdiff_t>(offset + count)))
      << "the other process read different bytes than this one wrote at [offset, offset + count)";

  std::vector<std::uint8_t> expected = written;
  std::fill(expected.begin() + static_cast<std::ptrdiff_t>(offset),
            expected.begin() + static_cast<std::ptrdiff_t>(offset + count),
            gpu_test::kIpcChildFill);
  EXPECT_EQ(read(buffer.get(), size), expected)
      << "the other process's writes landed somewhere other than [offset, offset + count)";
}

TEST_F(CudaDriverGpu, IpcHandleCannotBeOpenedInTheExportingProcess) {
  DeviceBuffer buffer(*driver_, kMiB);
  const CUipcMemHandle handle = driver_->ipc_get_mem_handle(buffer.get());
  auto error = EMM_EXPECT_THROW(
      CudaDriverError, driver_->ipc_open_mem_handle(handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
      StartsWith("cuIpcOpenMemHandle failed: CUDA_ERROR_INVALID_CONTEXT"));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->call(), "cuIpcOpenMemHandle");
}

TEST_F(CudaDriverGpu, HostAllocMappedMemoryAliasesItsDevicePointer) {
  const std::size_t size = 4096;
  for (unsigned flags = 0; flags < 8; ++flags) {
    SCOPED_TRACE("cuMemHostAlloc flags " + std::to_string(flags));
    auto* host = static_cast<std::uint8_t*>(driver_->mem_host_alloc(size, flags));
    ASSERT_NE(host, nullptr);
    for (std::size_t i = 0; i < size; ++i) host[i] = pattern_byte(i, flags);
    if ((flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0) {
      const CUdeviceptr device = driver_->mem_host_get_device_pointer(host, 0);
      ASSERT_NE(device, CUdeviceptr{0});
      if ((flags & CU_MEMHOSTALLOC_WRITECOMBINED) == 0) {
        // cuda.h: with unified addressing the device pointer is the host pointer.
        EXPECT_EQ(device, reinterpret_cast<CUdeviceptr>(host));
      }
      EXPECT_EQ(read(device, size), pattern(size, flags)) << "device view of host writes";
      driver_->memset_d8(device + 10, 0xcd, 20);
      driver_->ctx_synchronize();
      for (std::size_t i = 0; i < size; ++i) {
        const std::uint8_t expected = i >= 10 && i < 30 ? 0xcd : pattern_byte(i, flags);
        ASSERT_EQ(host[i], expected) << "host view of device writes, byte " << i;
      }
    }
    driver_->mem_free_host(host);
  }
}

TEST_F(CudaDriverGpu, HostRegisterUnregisterAndRegisterAgain) {
  const std::size_t size = 64 * 1024;
  std::unique_ptr<void, decltype(&std::free)> memory(std::aligned_alloc(4096, size), &std::free);
  ASSERT_NE(memory, nullptr);
  auto* host = static_cast<std::uint8_t*>(memory.get());
  for (std::size_t i = 0; i < size; ++i) host[i] = pattern_byte(i, 9);

  driver_->mem_host_register(host, size, CU_MEMHOSTREGISTER_DEVICEMAP);
  const CUdeviceptr device = driver_->mem_host_get_device_pointer(host, 0);
  EXPECT_EQ(read(device, size), pattern(size, 9));

  auto twice = EMM_EXPECT_THROW(
      CudaDriverError, driver_->mem_host_register(host, size, CU_MEMHOSTREGISTER_DEVICEMAP),
      StartsWith("cuMemHostRegister failed: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"));
  ASSERT_TRUE(twice.has_value());
  EXPECT_EQ(twice->code(), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);

  driver_->mem_host_unregister(host);
  auto not_registered = EMM_EXPECT_THROW(
      CudaDriverError, driver_->mem_host_unregister(host),
      StartsWith("cuMemHostUnregister failed: CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"));
  ASSERT_TRUE(not_registered.has_value());
  EXPECT_EQ(not_registered->call(), "cuMemHostUnregister");

  // Unregistering takes effect at once: the same range can be pinned again (ALLOC-7 relies on it).
  driver_->mem_host_register(host, size, CU_MEMHOSTREGISTER_DEVICEMAP);
  EXPECT_EQ(read(driver_->mem_host_get_device_pointer(host, 0), size), pattern(size, 9));
  driver_->mem_host_unregister(host);
}

TEST_F(CudaDriverGpu, StreamsAndEvents) {
  const CUstream stream = driver_->stream_create(CU_STREAM_NON_BLOCKING);
  ASSERT_NE(stream, nullptr);
  const CUevent event = driver_->event_create(CU_EVENT_DISABLE_TIMING);
  ASSERT_NE(event, nullptr);
  driver_->event_record(event, stream);
  driver_->event_synchronize(event);
  driver_->event_record(event, nullptr);  // the legacy default stream
  driver_->event_synchronize(event);
  driver_->stream_synchronize(stream);
  driver_->stream_synchronize(nullptr);
  driver_->event_destroy(event);
  driver_->stream_destroy(stream);
}

TEST_F(CudaDriverGpu, ModuleLoadDataLoadsAnEmptyPtxModule) {
  // sm_75 is the oldest architecture CUDA 13 supports; the driver JIT-compiles PTX for newer ones.
  static constexpr char kEmptyPtx[] = ".version 7.0\n.target sm_75\n.address_size 64\n";
  const CUmodule module = driver_->module_load_data(kEmptyPtx);
  ASSERT_NE(module, nullptr);
  driver_->module_unload(module);

  static constexpr char kNotAnImage[] = "this is not a module image";
  auto error = EMM_EXPECT_THROW(CudaDriverError, driver_->module_load_data(kNotAnImage),
                                StartsWith("cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE"));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->call(), "cuModuleLoadData");
}

// ALLOC-3's premise: a request larger than the device fails with CUDA_ERROR_OUT_OF_MEMORY, and
// the driver is usable afterwards.
TEST_F(CudaDriverGpu, OutOfMemoryForOnePebibyteIsCudaDriverError) {
  const std::size_t one_pib = std::size_t{1} << 50;
  auto error = EMM_EXPECT_THROW(CudaDriverError, driver_->mem_alloc(one_pib),
                                AllOf(StartsWith("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"),
                                      HasSubstr(std::to_string(one_pib) + " bytes")));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(error->call(), "cuMemAlloc");
  DeviceBuffer after(*driver_, 4096);
  EXPECT_NE(after.get(), CUdeviceptr{0});
}

TEST_F(CudaDriverGpu, FreeOfAnUnknownPointerIsCudaDriverError) {
  const CUdeviceptr bogus = 0x10;
  auto error = EMM_EXPECT_THROW(CudaDriverError, driver_->mem_free(bogus),
                                StartsWith("cuMemFree failed: CUDA_ERROR_INVALID_VALUE"));
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->call(), "cuMemFree");
}

TEST_F(CudaDriverGpu, StreamOrderedPoolAllocation) {
  if (driver_->device_get_attribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, kDevice) == 0) {
    GTEST_SKIP() << "device " << kDevice << " has no stream-ordered allocator";
  }
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = kDevice;
  const CUmemoryPool pool = driver_->mem_pool_create(props);
  ASSERT_NE(pool, nullptr);
  cuuint64_t threshold = 64 * kMiB;
  driver_->mem_pool_set_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);

  const CUstream stream = driver_->stream_create(CU_STREAM_NON_BLOCKING);
  const CUdeviceptr pointer = driver_->mem_alloc_from_pool_async(kMiB, pool, stream);
  ASSERT_NE(pointer, CUdeviceptr{0});
  driver_->stream_synchronize(stream);
  const std::vector<std::uint8_t> written = pattern(kMiB, 5);
  driver_->memcpy_htod(pointer, written.data(), kMiB);
  EXPECT_EQ(read(pointer, kMiB), written);
  driver_->mem_free_async(pointer, stream);
  driver_->stream_synchronize(stream);
  driver_->mem_pool_trim_to(pool, 0);
  driver_->stream_destroy(stream);
  driver_->mem_pool_destroy(pool);
}

TEST_F(CudaDriverGpu, ManagedAllocationIsReadableOnTheHost) {
  if (driver_->device_get_attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, kDevice) == 0) {
    GTEST_SKIP() << "device " << kDevice << " has no managed memory";
  }
  const std::size_t size = 4096;  // small: never more managed memory than the card has free
  const CUdeviceptr pointer = driver_->mem_alloc_managed(size, CU_MEM_ATTACH_GLOBAL);
  ASSERT_NE(pointer, CUdeviceptr{0});
  driver_->memset_d8(pointer, 0x3c, size);
  driver_->ctx_synchronize();
  const auto* host = reinterpret_cast<const std::uint8_t*>(pointer);
  EXPECT_EQ(std::vector<std::uint8_t>(host, host + size), std::vector<std::uint8_t>(size, 0x3c));
  driver_->mem_free(pointer);
}

TEST_F(CudaDriverGpu, PeerAccessQueryOnEveryDevicePair) {
  const int count = driver_->device_get_count();
  for (int device = 0; device < count; ++device) {
    for (int peer = 0; peer < count; ++peer) {
      // A device never lists itself as its own peer.
      if (device == peer)
        EXPECT_FALSE(driver_->device_can_access_peer(device, peer));
      else
        driver_->device_can_access_peer(device, peer);
    }
  }
}

// cuDevicePrimaryCtxReset destroys the primary context with every allocation in it; the handle
// the caller holds is stale until the primary context is retained again (a Runtime that resets
// a device must re-retain before using it).
TEST_F(CudaDriverGpu, PrimaryCtxResetDestroysTheContextUntilRetainedAgain) {
  const CUdeviceptr pointer = driver_->mem_alloc(kMiB);  // not freed: the reset destroys it
  driver_->primary_ctx_reset(kDevice);
  auto stale = EMM_EXPECT_THROW(CudaDriverError, driver_->mem_alloc(kMiB),
                                StartsWith("cuMemAlloc failed: CUDA_ERROR_CONTEXT_IS_DESTROYED"));
  ASSERT_TRUE(stale.has_value());
  EXPECT_EQ(stale->code(), CUDA_ERROR_CONTEXT_IS_DESTROYED);

  // The reset kept the test's retain (TearDown releases it); this second one re-creates the
  // context and is given back at once.
  context_ = driver_->primary_ctx_retain(kDevice);
  driver_->primary_ctx_release(kDevice);
  driver_->ctx_set_current(context_);
  auto gone = EMM_EXPECT_THROW(CudaDriverError, driver_->mem_get_address_range(pointer),
                               StartsWith("cuMemGetAddressRange failed: CUDA_ERROR_NOT_FOUND"));
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->call(), "cuMemGetAddressRange");
  DeviceBuffer after(*driver_, kMiB);
  EXPECT_EQ(driver_->mem_get_address_range(after.get()).base, after.get());
}

}  // namespace
}  // namespace emm
