// The gpu backend's ledger as bookkeeping, fed calls directly (no GPU, no CUPTI): what it
// answers must be what the fake driver answers for the same calls.
#include "core/driver_ledger.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace emm::conformance {
namespace {

using ::testing::ElementsAre;

LedgerBlock block(std::uint64_t base, std::size_t size, LedgerBlockKind kind, int device = 0,
                  unsigned flags = 0, CUcontext context = nullptr) {
  LedgerBlock b;
  b.base = base;
  b.size = size;
  b.kind = kind;
  b.device = device;
  b.context_device = device;
  b.flags = flags;
  b.context = context;
  b.call = "cuMemAlloc";
  return b;
}

TEST(DriverLedger, CountsLiveDeviceAndManagedBytesExactly) {
  DriverLedger ledger;
  ledger.made(block(0x1000, 7, LedgerBlockKind::device));
  ledger.made(block(0x2000, 4096, LedgerBlockKind::managed, 0, CU_MEM_ATTACH_HOST));
  ledger.made(block(0x9000, 0, LedgerBlockKind::ipc_mapping));
  ledger.made(block(0x5000, 100, LedgerBlockKind::host_alloc));
  EXPECT_EQ(ledger.device_bytes(), 7u + 4096u);
  ledger.freed(LedgerSpace::device, 0x1000, "cuMemFree", CUDA_SUCCESS, true);
  EXPECT_EQ(ledger.device_bytes(), 4096u);
  EXPECT_EQ(ledger.frees(), 1u);
  EXPECT_EQ(ledger.invalid_frees(), 0u);
}

TEST(DriverLedger, FindsTheBlockHoldingAnInteriorPointerButNotOnePastTheEnd) {
  DriverLedger ledger;
  ledger.made(block(0x1000, 0x100, LedgerBlockKind::device, 1));
  ASSERT_TRUE(ledger.device_block_containing(0x10ff).has_value());
  EXPECT_EQ(ledger.device_block_containing(0x10ff)->base, 0x1000u);
  EXPECT_EQ(ledger.device_block_containing(0x10ff)->device, 1);
  EXPECT_FALSE(ledger.device_block_containing(0x1100).has_value());
  EXPECT_FALSE(ledger.device_block_containing(0xfff).has_value());
}

TEST(DriverLedger, IpcMappingsAreNoDeviceBlocks) {
  DriverLedger ledger;
  ledger.made(block(0x4000, 0, LedgerBlockKind::ipc_mapping));
  EXPECT_FALSE(ledger.device_block_containing(0x4000).has_value());
  EXPECT_EQ(ledger.count(LedgerBlockKind::ipc_mapping), 1u);
  ledger.freed(LedgerSpace::device, 0x4000, "cuIpcCloseMemHandle", CUDA_SUCCESS, false);
  EXPECT_EQ(ledger.count(LedgerBlockKind::ipc_mapping), 0u);
  EXPECT_EQ(ledger.frees(), 0u);  // a close frees no memory
}

TEST(DriverLedger, ARefusedFreeIsInvalidAndSaysTheBlockWasFreedBefore) {
  DriverLedger ledger;
  ledger.made(block(0x1000, 64, LedgerBlockKind::device));
  ledger.freed(LedgerSpace::device, 0x1000, "cuMemFree", CUDA_SUCCESS, true);
  ledger.freed(LedgerSpace::device, 0x1000, "cuMemFree", CUDA_ERROR_INVALID_VALUE, true);
  EXPECT_EQ(ledger.invalid_frees(), 1u);
  EXPECT_EQ(ledger.frees(), 2u);
  EXPECT_THAT(ledger.invalid_free_descriptions(),
              ElementsAre("cuMemFree(0x1000) refused with CUDA_ERROR_INVALID_VALUE (freed before "
                          "by cuMemFree)"));
}

TEST(DriverLedger, ARefusedFreeOfAnInteriorPointerSaysSo) {
  DriverLedger ledger;
  ledger.made(block(0x1000, 64, LedgerBlockKind::device));
  ledger.freed(LedgerSpace::device, 0x1008, "cuMemFree", CUDA_ERROR_INVALID_VALUE, true);
  EXPECT_THAT(ledger.invalid_free_descriptions(),
              ElementsAre("cuMemFree(0x1008) refused with CUDA_ERROR_INVALID_VALUE (an address "
                          "inside a live block, not its start)"));
  EXPECT_EQ(ledger.device_bytes(), 64u);
}

TEST(DriverLedger, KeepsTheLastEightInvalidFrees) {
  DriverLedger ledger;
  for (std::uint64_t i = 1; i <= 10; ++i) {
    ledger.freed(LedgerSpace::host, i << 12, "cuMemFreeHost", CUDA_ERROR_INVALID_VALUE, true);
  }
  EXPECT_EQ(ledger.invalid_frees(), 10u);
  const std::vector<std::string> last = ledger.invalid_free_descriptions();
  ASSERT_EQ(last.size(), 8u);
  EXPECT_EQ(last.back(), "cuMemFreeHost(0xa000) refused with CUDA_ERROR_INVALID_VALUE");
}

TEST(DriverLedger, AFreeOfABlockMadeBeforeTheLedgerThatTheDriverAcceptedIsNotInvalid) {
  DriverLedger ledger;
  ledger.freed(LedgerSpace::device, 0x7000, "cuMemFree", CUDA_SUCCESS, true);
  EXPECT_EQ(ledger.invalid_frees(), 0u);
  EXPECT_EQ(ledger.frees(), 1u);
}

TEST(DriverLedger, HostAllocationsAndRegistrationsAreKeptApartFromDeviceAddresses) {
  DriverLedger ledger;
  // Under unified addressing a mapped block's device address is its host address.
  ledger.made(block(0x8000, 4096, LedgerBlockKind::host_alloc, 0,
                    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
  ledger.made(block(0x20000, 10, LedgerBlockKind::host_registration));
  EXPECT_FALSE(ledger.device_block_containing(0x8000).has_value());
  ASSERT_TRUE(ledger.host_block_containing(0x8fff).has_value());
  EXPECT_EQ(ledger.host_block_containing(0x8fff)->flags,
            unsigned{CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP});
  EXPECT_EQ(ledger.count(LedgerBlockKind::host_alloc), 1u);
  EXPECT_EQ(ledger.count(LedgerBlockKind::host_registration), 1u);
  ledger.freed(LedgerSpace::host, 0x20000, "cuMemHostUnregister", CUDA_SUCCESS, false);
  EXPECT_EQ(ledger.count(LedgerBlockKind::host_registration), 0u);
  EXPECT_EQ(ledger.frees(), 0u);
}

TEST(DriverLedger, DestroyingAPrimaryContextDropsWhatWasMadeInItOnly) {
  DriverLedger ledger;
  auto* primary0 = reinterpret_cast<CUcontext>(0x10);
  auto* primary1 = reinterpret_cast<CUcontext>(0x20);
  auto* created = reinterpret_cast<CUcontext>(0x30);
  ledger.context_created(created);
  ledger.made(block(0x1000, 1, LedgerBlockKind::device, 0, 0, primary0));
  ledger.made(block(0x2000, 2, LedgerBlockKind::host_alloc, 0, 0, primary0));
  ledger.made(block(0x3000, 4, LedgerBlockKind::device, 1, 0, primary1));
  ledger.made(block(0x4000, 8, LedgerBlockKind::device, 0, 0, created));
  ledger.primary_context_destroyed(0);
  EXPECT_EQ(ledger.device_bytes(), 4u + 8u);
  EXPECT_EQ(ledger.count(LedgerBlockKind::host_alloc), 0u);
  ledger.context_destroyed(created);
  EXPECT_EQ(ledger.device_bytes(), 4u);
  // A late free of what the destroyed context took is refused by the driver: invalid.
  ledger.freed(LedgerSpace::device, 0x1000, "cuMemFree", CUDA_ERROR_INVALID_VALUE, true);
  EXPECT_EQ(ledger.invalid_frees(), 1u);
}

TEST(DriverLedger, AnAddressMadeAgainReplacesTheOldBlock) {
  DriverLedger ledger;
  ledger.made(block(0x1000, 16, LedgerBlockKind::device));
  ledger.freed(LedgerSpace::device, 0x1000, "cuMemFree", CUDA_SUCCESS, true);
  ledger.made(block(0x1000, 32, LedgerBlockKind::device));
  EXPECT_EQ(ledger.device_bytes(), 32u);
  ledger.freed(LedgerSpace::device, 0x1000, "cuMemFree", CUDA_ERROR_INVALID_VALUE, true);
  // Not "freed before": the address was made again since.
  EXPECT_THAT(
      ledger.invalid_free_descriptions(),
      ElementsAre("cuMemFree(0x1000) refused with CUDA_ERROR_INVALID_VALUE (a live block)"));
}

}  // namespace
}  // namespace emm::conformance
