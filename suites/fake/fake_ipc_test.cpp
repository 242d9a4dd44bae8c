// FakeDriver IPC: handles exported by one simulated process and opened by another.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "fake_test_support.hpp"

namespace emm::test {
namespace {

using ::testing::HasSubstr;

bool same_bytes(const CUipcMemHandle& a, const CUipcMemHandle& b) {
  return std::memcmp(a.reserved, b.reserved, sizeof a.reserved) == 0;
}

class FakeIpc : public ::testing::Test {
 protected:
  std::shared_ptr<FakeDriver> exporter = current_process();
  std::shared_ptr<FakeDriver> importer = make_current(exporter->spawn_process());
};

TEST_F(FakeIpc, SpawnedProcessSharesTheSystemButNotTheState) {
  EXPECT_EQ(importer->system(), exporter->system());
  const CUdeviceptr p = exporter->mem_alloc(4096);
  EXPECT_EQ(importer->live_allocations().size(), 0U);
  EXPECT_EQ(importer->system()->allocation_count(0), 1U);
  // The other process has no such allocation.
  EMM_EXPECT_DRIVER_ERROR(importer->mem_free(p), CUDA_ERROR_INVALID_VALUE, "cuMemFree",
                          HasSubstr("is not a live device allocation of this process"));
  exporter->mem_free(p);
}

TEST_F(FakeIpc, AnotherProcessReadsTheExportersBytesAtAnInteriorOffset) {
  const std::size_t size = 10000;
  const CUdeviceptr p = exporter->mem_alloc(size);
  std::vector<unsigned char> written(size);
  for (std::size_t i = 0; i < size; ++i) written[i] = static_cast<unsigned char>(i * 13 + 1);
  exporter->memcpy_htod(p, written.data(), size);

  const std::size_t offset = 4096 + 3;
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p + offset);
  // An interior pointer names its block: the same 64 bytes as the base (as on CUDA).
  EXPECT_TRUE(same_bytes(handle, exporter->ipc_get_mem_handle(p)));
  const AddressRange exported = exporter->mem_get_address_range(p + offset);
  EXPECT_EQ(exported.base, p);

  const CUdeviceptr mapped =
      importer->ipc_open_mem_handle(handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  EXPECT_NE(mapped, p);  // mapped at the importer's own address
  EXPECT_EQ(importer->ipc_mapping_count(), 1U);
  const AddressRange range = importer->mem_get_address_range(mapped + offset);
  EXPECT_EQ(range.base, mapped);
  EXPECT_EQ(range.size, size);
  std::vector<unsigned char> read(100);
  importer->memcpy_dtoh(read.data(), mapped + offset, read.size());
  EXPECT_TRUE(std::equal(read.begin(), read.end(), written.begin() + offset));

  // Writes in the importer are seen by the exporter: one block of memory.
  importer->memset_d8(mapped + 5, 0xee, 1);
  unsigned char byte = 0;
  exporter->memcpy_dtoh(&byte, p + 5, 1);
  EXPECT_EQ(byte, 0xee);

  // The mapping is no allocation of the importer: not listed, not counted.
  EXPECT_TRUE(importer->live_allocations().empty());
  EXPECT_EQ(importer->device_bytes_in_use(), 0U);
  importer->ipc_close_mem_handle(mapped);
  EXPECT_EQ(importer->ipc_mapping_count(), 0U);
  EMM_EXPECT_DRIVER_ERROR(importer->memcpy_dtoh(read.data(), mapped, 1), CUDA_ERROR_INVALID_VALUE,
                          "cuMemcpyDtoH", HasSubstr("source range"));
  exporter->mem_free(p);
  EXPECT_EQ(exporter->invalid_frees() + importer->invalid_frees(), 0U);
}

TEST_F(FakeIpc, OpeningInTheExportingProcessIsInvalidContext) {
  const CUdeviceptr p = exporter->mem_alloc(256);
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p);
  EMM_EXPECT_DRIVER_ERROR(exporter->ipc_open_mem_handle(handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                          CUDA_ERROR_INVALID_CONTEXT, "cuIpcOpenMemHandle",
                          HasSubstr("the handle was exported by this process"));
  EXPECT_EQ(exporter->ipc_mapping_count(), 0U);
  exporter->mem_free(p);
}

TEST_F(FakeIpc, OpeningTwiceInOneProcessReturnsTheSameMappingUntilClosedAsOften) {
  // As the CUDA 11+ driver: the second open is counted, not refused.
  const CUdeviceptr p = exporter->mem_alloc(256);
  exporter->memset_d8(p, 0x21, 256);
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p);
  const CUdeviceptr mapped = importer->ipc_open_mem_handle(handle, 0);
  EXPECT_EQ(importer->ipc_open_mem_handle(handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), mapped);
  EXPECT_EQ(importer->ipc_mapping_count(), 1U);
  EXPECT_EQ(importer->system()->allocation_count(0), 1U) << "the second open maps nothing new";

  importer->ipc_close_mem_handle(mapped);
  EXPECT_EQ(importer->ipc_mapping_count(), 1U) << "one open is left";
  unsigned char byte = 0;
  importer->memcpy_dtoh(&byte, mapped + 7, 1);
  EXPECT_EQ(byte, 0x21);
  // The exporter's free waits for the last close.
  exporter->mem_free(p);
  EXPECT_EQ(importer->system()->allocation_count(0), 1U);
  importer->ipc_close_mem_handle(mapped);
  EXPECT_EQ(importer->ipc_mapping_count(), 0U);
  EXPECT_EQ(importer->system()->allocation_count(0), 0U);
  EXPECT_EQ(importer->invalid_frees(), 0U);
  EMM_EXPECT_DRIVER_ERROR(importer->ipc_close_mem_handle(mapped), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcCloseMemHandle",
                          HasSubstr("is not the base of an open cuIpcOpenMemHandle mapping"));
  EXPECT_EQ(importer->invalid_frees(), 1U) << "a close beyond the opens is an invalid free";
}

TEST_F(FakeIpc, AClosedHandleOpensAgainAndOtherProcessesGetMappingsOfTheirOwn) {
  const CUdeviceptr p = exporter->mem_alloc(256);
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p);
  importer->ipc_close_mem_handle(importer->ipc_open_mem_handle(handle, 0));
  const CUdeviceptr again = importer->ipc_open_mem_handle(handle, 0);
  auto third = make_current(exporter->spawn_process());
  const CUdeviceptr also = third->ipc_open_mem_handle(handle, 0);
  EXPECT_NE(also, again);
  EXPECT_EQ(third->ipc_mapping_count(), 1U);
  importer->ipc_close_mem_handle(again);
  third->ipc_close_mem_handle(also);
  exporter->mem_free(p);
  EXPECT_EQ(exporter->system()->allocation_count(0), 0U);
}

TEST_F(FakeIpc, GarbageBytesAreInvalidValue) {
  CUipcMemHandle garbage;
  std::memset(garbage.reserved, 0x5a, sizeof garbage.reserved);
  EMM_EXPECT_DRIVER_ERROR(
      importer->ipc_open_mem_handle(garbage, 0), CUDA_ERROR_INVALID_VALUE, "cuIpcOpenMemHandle",
      HasSubstr("the handle's bytes are not a handle made by cuIpcGetMemHandle"));
  const CUipcMemHandle zero{};
  EMM_EXPECT_DRIVER_ERROR(importer->ipc_open_mem_handle(zero, 0), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcOpenMemHandle",
                          HasSubstr("not a handle made by cuIpcGetMemHandle"));
  // A valid handle with one byte flipped anywhere is rejected too.
  const CUdeviceptr p = exporter->mem_alloc(256);
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p);
  for (std::size_t i = 0; i < sizeof handle.reserved; ++i) {
    CUipcMemHandle corrupted = handle;
    corrupted.reserved[i] = static_cast<char>(corrupted.reserved[i] ^ 0x01);
    EMM_EXPECT_DRIVER_ERROR(importer->ipc_open_mem_handle(corrupted, 0), CUDA_ERROR_INVALID_VALUE,
                            "cuIpcOpenMemHandle", HasSubstr("the handle"));
  }
  EXPECT_EQ(importer->ipc_mapping_count(), 0U);
  exporter->mem_free(p);
}

TEST_F(FakeIpc, HandleOfAFreedBlockIsInvalidValue) {
  const CUdeviceptr p = exporter->mem_alloc(256);
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p);
  exporter->mem_free(p);
  EMM_EXPECT_DRIVER_ERROR(
      importer->ipc_open_mem_handle(handle, 0), CUDA_ERROR_INVALID_VALUE, "cuIpcOpenMemHandle",
      HasSubstr("the exporting process has freed the allocation this handle names"));
  // Even once the address is in use again.
  const CUdeviceptr reused = exporter->mem_alloc(256);
  EXPECT_EQ(reused, p);
  EMM_EXPECT_DRIVER_ERROR(importer->ipc_open_mem_handle(handle, 0), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcOpenMemHandle", HasSubstr("has freed the allocation"));
  exporter->mem_free(reused);
}

TEST_F(FakeIpc, HandleOfAnotherSystemIsInvalidValue) {
  auto elsewhere = current_process();
  const CUdeviceptr p = elsewhere->mem_alloc(256);
  EMM_EXPECT_DRIVER_ERROR(importer->ipc_open_mem_handle(elsewhere->ipc_get_mem_handle(p), 0),
                          CUDA_ERROR_INVALID_VALUE, "cuIpcOpenMemHandle",
                          HasSubstr("the handle comes from another FakeSystem"));
  elsewhere->mem_free(p);
}

TEST_F(FakeIpc, ExportingNonCuMemAllocMemoryIsInvalidValue) {
  EMM_EXPECT_DRIVER_ERROR(exporter->ipc_get_mem_handle(0x10), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcGetMemHandle",
                          HasSubstr("is not inside a live cuMemAlloc allocation"));
  void* host = exporter->mem_host_alloc(4096, CU_MEMHOSTALLOC_DEVICEMAP);
  EMM_EXPECT_DRIVER_ERROR(
      exporter->ipc_get_mem_handle(exporter->mem_host_get_device_pointer(host, 0)),
      CUDA_ERROR_INVALID_VALUE, "cuIpcGetMemHandle",
      HasSubstr("is not inside a live cuMemAlloc allocation"));
  exporter->mem_free_host(host);

  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = exporter->mem_pool_create(props);
  const CUdeviceptr pooled = exporter->mem_alloc_from_pool_async(512, pool, nullptr);
  EMM_EXPECT_DRIVER_ERROR(exporter->ipc_get_mem_handle(pooled + 1), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcGetMemHandle",
                          HasSubstr("is stream-ordered pool memory; cuIpcGetMemHandle only exports "
                                    "cuMemAlloc allocations"));
  exporter->mem_free_async(pooled, nullptr);
  exporter->mem_pool_destroy(pool);

  const CUdeviceptr managed = exporter->mem_alloc_managed(512, CU_MEM_ATTACH_GLOBAL);
  EMM_EXPECT_DRIVER_ERROR(exporter->ipc_get_mem_handle(managed), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcGetMemHandle", HasSubstr("is managed memory"));
  exporter->mem_free(managed);

  // An importer cannot re-export what it mapped.
  const CUdeviceptr p = exporter->mem_alloc(256);
  const CUdeviceptr mapped = importer->ipc_open_mem_handle(exporter->ipc_get_mem_handle(p), 0);
  EMM_EXPECT_DRIVER_ERROR(importer->ipc_get_mem_handle(mapped), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcGetMemHandle", HasSubstr("is inside an IPC mapping"));
  importer->ipc_close_mem_handle(mapped);
  exporter->mem_free(p);
}

TEST_F(FakeIpc, ClosingWhatIsNotMappedIsInvalidValueAndCounted) {
  const CUdeviceptr p = exporter->mem_alloc(256);
  const CUdeviceptr mapped = importer->ipc_open_mem_handle(exporter->ipc_get_mem_handle(p), 0);
  EMM_EXPECT_DRIVER_ERROR(
      importer->ipc_close_mem_handle(mapped + 100), CUDA_ERROR_INVALID_VALUE, "cuIpcCloseMemHandle",
      HasSubstr("is not the base of an open cuIpcOpenMemHandle mapping of this process"));
  EMM_EXPECT_DRIVER_ERROR(exporter->ipc_close_mem_handle(p), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcCloseMemHandle", HasSubstr("is not the base of an open"));
  // cuMemFree does not unmap an IPC mapping.
  EMM_EXPECT_DRIVER_ERROR(
      importer->mem_free(mapped), CUDA_ERROR_INVALID_VALUE, "cuMemFree",
      HasSubstr("was mapped by cuIpcOpenMemHandle; unmap it with cuIpcCloseMemHandle"));
  importer->ipc_close_mem_handle(mapped);
  EMM_EXPECT_DRIVER_ERROR(importer->ipc_close_mem_handle(mapped), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcCloseMemHandle", HasSubstr("is not the base of an open"));
  EXPECT_EQ(importer->invalid_frees(), 3U);
  EXPECT_EQ(exporter->invalid_frees(), 1U);
  exporter->mem_free(p);
}

TEST_F(FakeIpc, ExporterFreeingKeepsTheBlockAliveUntilTheLastMappingCloses) {
  const CUdeviceptr p = exporter->mem_alloc(1000);
  exporter->memset_d8(p, 0x3c, 1000);
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p);
  const CUdeviceptr mapped = importer->ipc_open_mem_handle(handle, 0);
  FakeSystem& system = *exporter->system();

  exporter->mem_free(p);
  EXPECT_TRUE(exporter->live_allocations().empty());
  EXPECT_EQ(system.allocation_count(0), 1U);  // still mapped by the importer
  EXPECT_EQ(system.bytes_in_use(0), 1024U);
  unsigned char byte = 0;
  importer->memcpy_dtoh(&byte, mapped + 999, 1);
  EXPECT_EQ(byte, 0x3c);
  // No new process can open it any more.
  auto late = make_current(exporter->spawn_process());
  EMM_EXPECT_DRIVER_ERROR(late->ipc_open_mem_handle(handle, 0), CUDA_ERROR_INVALID_VALUE,
                          "cuIpcOpenMemHandle", HasSubstr("has freed the allocation"));

  importer->ipc_close_mem_handle(mapped);
  EXPECT_EQ(system.allocation_count(0), 0U);
  EXPECT_EQ(system.bytes_in_use(0), 0U);
}

TEST_F(FakeIpc, ImporterEndingClosesItsMappings) {
  const CUdeviceptr p = exporter->mem_alloc(1000);
  importer->ipc_open_mem_handle(exporter->ipc_get_mem_handle(p), 0);
  exporter->mem_free(p);
  EXPECT_EQ(exporter->system()->allocation_count(0), 1U);
  importer.reset();
  EXPECT_EQ(exporter->system()->allocation_count(0), 0U);
  EXPECT_EQ(exporter->system()->bytes_in_use(0), 0U);
}

TEST_F(FakeIpc, OpenNeedsAContextAndValidFlags) {
  const CUdeviceptr p = exporter->mem_alloc(256);
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p);
  EMM_EXPECT_DRIVER_ERROR(
      importer->ipc_open_mem_handle(handle, 8), CUDA_ERROR_INVALID_VALUE, "cuIpcOpenMemHandle",
      HasSubstr("flags must be 0 or CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, got 8"));
  importer->ctx_set_current(nullptr);
  EMM_EXPECT_DRIVER_ERROR(importer->ipc_open_mem_handle(handle, 0), CUDA_ERROR_INVALID_CONTEXT,
                          "cuIpcOpenMemHandle",
                          HasSubstr("no CUDA context is current on this thread"));
  EXPECT_EQ(importer->ipc_mapping_count(), 0U);
  exporter->mem_free(p);
}

TEST(FakeIpcDevices, OpeningOnAnotherDeviceNeedsPeerAccess) {
  FakeSystemConfig config;
  config.devices.resize(2);
  auto exporter = current_process(config);
  const CUdeviceptr p = exporter->mem_alloc(256);
  const CUipcMemHandle handle = exporter->ipc_get_mem_handle(p);
  auto importer = make_current(exporter->spawn_process(), 1);
  EMM_EXPECT_DRIVER_ERROR(
      importer->ipc_open_mem_handle(handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
      CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "cuIpcOpenMemHandle",
      HasSubstr("the allocation lives on fake device 0 and the current context is on "
                "device 1, which has no peer access to it"));
  exporter->mem_free(p);

  config.peer_access = true;
  auto peer_exporter = current_process(config);
  const CUdeviceptr q = peer_exporter->mem_alloc(256);
  auto peer_importer = make_current(peer_exporter->spawn_process(), 1);
  const CUdeviceptr mapped = peer_importer->ipc_open_mem_handle(
      peer_exporter->ipc_get_mem_handle(q), CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  EXPECT_EQ(peer_importer->mem_get_address_range(mapped).size, 256U);
  peer_importer->ipc_close_mem_handle(mapped);
  peer_exporter->mem_free(q);
}

}  // namespace
}  // namespace emm::test
