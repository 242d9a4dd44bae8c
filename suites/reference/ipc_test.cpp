// IPC-3..IPC-6: the IPC handle's state machine, its serialized form (the kit's untrusted-input
// surface), staged opening and the no-IPC gate (spec 2.8). Processes are simulated: every
// FakeDriver over one FakeSystem is a process (FakeDriver::spawn_process()).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
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
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::StrEq;

using Bytes = std::vector<unsigned char>;

Bytes pattern(std::size_t n) {
  Bytes out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>((i * 7 + 3) & 0xFF);
  return out;
}

void write(Context& context, CUdeviceptr pointer, const Bytes& data) {
  context.make_current();
  context.driver().memcpy_htod(pointer, data.data(), data.size());
}

Bytes read(Context& context, CUdeviceptr pointer, std::size_t n) {
  context.make_current();
  Bytes out(n);
  context.driver().memcpy_dtoh(out.data(), pointer, n);
  return out;
}

FakeSystemConfig two_devices(bool peer_access) {
  FakeSystemConfig config;
  config.devices = {FakeDeviceConfig{}, FakeDeviceConfig{}};
  config.peer_access = peer_access;
  return config;
}

// An exporting process with an 8 KiB allocation holding pattern(8192), and an importing process
// over the same simulated machine.
class Ipc : public ::testing::Test {
 protected:
  static constexpr std::size_t kAllocation = 8192;
  static constexpr std::size_t kViewStart = 256;
  static constexpr std::size_t kViewSize = 1000;

  explicit Ipc(FakeSystemConfig config = {},
               RuntimeOptions importer_options = RuntimeOptions::hermetic())
      : exporter_(std::make_shared<FakeDriver>(config)),
        exporting_(exporter_, RuntimeOptions::hermetic()),
        source_(exporting_.get_context(0)),
        memory_(source_.memalloc(kAllocation)),
        importer_(exporter_->spawn_process()),
        importing_(importer_, std::move(importer_options)) {
    write(source_, memory_->device_pointer(), pattern(kAllocation));
  }
  Bytes expected_view() const {
    Bytes all = pattern(kAllocation);
    return Bytes(all.begin() + kViewStart, all.begin() + kViewStart + kViewSize);
  }
  // The exported view [256, 1256) as bytes for the other process.
  std::vector<std::byte> exported_bytes() {
    return source_.get_ipc_handle(memory_->view(kViewStart, kViewStart + kViewSize)).serialize();
  }

  std::shared_ptr<FakeDriver> exporter_;
  Runtime exporting_;
  Context& source_;
  std::shared_ptr<MemoryPointer> memory_;
  std::shared_ptr<FakeDriver> importer_;
  Runtime importing_;
};

// --- IPC-3 ---------------------------------------------------------------------------------

TEST_F(Ipc, IPC_3_OpeningInTheExportingProcessIsRefused) {
  EMM_CLAUSE("IPC-3");
  IpcHandle handle = source_.get_ipc_handle(memory_->view(kViewStart, kViewStart + kViewSize));
  ASSERT_NE(handle.base(), nullptr);
  EMM_EXPECT_THROW(IpcStateError, handle.open(source_),
                   StrEq("opening IpcHandle from original process"));
  EXPECT_FALSE(handle.is_open());
  EXPECT_EQ(exporter_->call_count(DriverCall::cuIpcOpenMemHandle), 0u);
}

TEST_F(Ipc, IPC_3_OpenCloseStateMachine) {
  EMM_CLAUSE("IPC-3");
  IpcHandle handle = IpcHandle::deserialize(exported_bytes());
  Context& destination = importing_.get_context(0);
  EXPECT_FALSE(handle.is_open());
  EMM_EXPECT_THROW(IpcStateError, handle.close(), StrEq("IpcHandle not opened"));

  auto view = handle.open(destination);
  EXPECT_TRUE(handle.is_open());
  EXPECT_FALSE(handle.is_staged()) << "same device: a direct open";
  EXPECT_EQ(view->size(), kViewSize);
  EXPECT_EQ(read(destination, view->device_pointer(), kViewSize), expected_view());
  EXPECT_EQ(importer_->ipc_mapping_count(), 1u);

  EMM_EXPECT_THROW(IpcStateError, handle.open(destination), StrEq("IpcHandle is already opened"));
  EXPECT_TRUE(handle.is_open()) << "a refused second open leaves the first one alone";
  EXPECT_EQ(read(destination, view->device_pointer(), kViewSize), expected_view());

  handle.close();
  EXPECT_FALSE(handle.is_open());
  EXPECT_EQ(importer_->ipc_mapping_count(), 0u);
  EMM_EXPECT_THROW(IpcStateError, handle.close(), StrEq("IpcHandle not opened"));

  auto again = handle.open(destination);  // closed handles can be opened again
  EXPECT_EQ(read(destination, again->device_pointer(), kViewSize), expected_view());
  handle.close();
  EXPECT_EQ(importer_->invalid_frees(), 0u);
}

TEST_F(Ipc, IPC_3_FailedOpenLeavesTheHandleClosed) {
  EMM_CLAUSE("IPC-3");
  IpcHandle handle = IpcHandle::deserialize(exported_bytes());
  Context& destination = importing_.get_context(0);
  importer_->fail_call(DriverCall::cuIpcOpenMemHandle, CUDA_ERROR_INVALID_HANDLE);
  auto error = EMM_EXPECT_THROW(CudaDriverError, handle.open(destination),
                                HasSubstr("CUDA_ERROR_INVALID_HANDLE"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code(), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_FALSE(handle.is_open()) << "Numba leaves it marked open; the reference does not";
  EMM_EXPECT_THROW(IpcStateError, handle.close(), StrEq("IpcHandle not opened"));

  auto view = handle.open(destination);
  EXPECT_EQ(read(destination, view->device_pointer(), kViewSize), expected_view());
  handle.close();
}

TEST_F(Ipc, IPC_3_DestroyingAnOpenHandleClosesItsMapping) {
  EMM_CLAUSE("IPC-3");
  Context& destination = importing_.get_context(0);
  {
    IpcHandle handle = IpcHandle::deserialize(exported_bytes());
    handle.open(destination);
    EXPECT_EQ(importer_->ipc_mapping_count(), 1u);
  }
  EXPECT_EQ(importer_->ipc_mapping_count(), 0u);
}

// --- IPC-4 ---------------------------------------------------------------------------------

// CRC-32 (IEEE 802.3, reflected), as the documented format uses, to build *valid* records with
// one field changed: each such record must be rejected by that field's own check.
std::uint32_t crc32(const std::byte* data, std::size_t n) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= std::to_integer<std::uint32_t>(data[i]);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Field offsets of format version 1 (ipc_handle.hpp): magic 0, version 4, flags 6, size 8,
// offset 16, source_info 24/28/32, handle 36, CRC 100.
constexpr std::size_t kVersionAt = 4, kFlagsAt = 6, kSizeAt = 8, kOffsetAt = 16, kSourceAt = 24,
                      kHandleAt = 36, kCrcAt = 100;

template <class T>
void put(std::vector<std::byte>& bytes, std::size_t at, T value) {
  auto u = static_cast<std::make_unsigned_t<T>>(value);
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    bytes[at + i] = static_cast<std::byte>((u >> (8 * i)) & 0xFF);
  }
}

void fix_crc(std::vector<std::byte>& bytes) { put(bytes, kCrcAt, crc32(bytes.data(), kCrcAt)); }

CUipcMemHandle handle_bytes(unsigned char seed) {
  CUipcMemHandle handle{};
  for (std::size_t i = 0; i < sizeof handle.reserved; ++i) {
    handle.reserved[i] = static_cast<char>(seed + i * 13);
  }
  return handle;
}

std::vector<std::byte> valid_record() {
  return IpcHandle(nullptr, handle_bytes(1), 4096, DeviceIdentity{0, 1, 0}, 3).serialize();
}

TEST(IpcSerialization, IPC_4_RoundTripKeepsEveryFieldAndDropsTheBase) {
  EMM_CLAUSE("IPC-4");
  auto fake = std::make_shared<FakeDriver>();
  Runtime runtime(fake, RuntimeOptions::hermetic());
  Context& context = runtime.get_context(0);
  auto memory = context.memalloc(1 << 16);
  for (std::size_t offset : {0u, 1u, 256u, 4099u}) {
    SCOPED_TRACE("view offset " + std::to_string(offset));
    IpcHandle original = context.get_ipc_handle(memory->view(offset, offset + 1000));
    EXPECT_EQ(original.offset(), offset);
    EXPECT_EQ(original.size(), 1000u);
    const std::vector<std::byte> bytes = original.serialize();
    EXPECT_EQ(bytes.size(), IpcHandle::kSerializedSize);

    IpcHandle rebuilt = IpcHandle::deserialize(bytes);
    EXPECT_EQ(rebuilt.base(), nullptr) << "the rebuilt handle has no base";
    EXPECT_EQ(rebuilt.size(), original.size());
    EXPECT_EQ(rebuilt.offset(), original.offset());
    ASSERT_TRUE(rebuilt.source_info().has_value());
    EXPECT_EQ(*rebuilt.source_info(), context.device_identity());
    EXPECT_EQ(std::memcmp(rebuilt.handle().reserved, original.handle().reserved,
                          sizeof original.handle().reserved),
              0);
    EXPECT_EQ(rebuilt.serialize(), bytes);
    EXPECT_FALSE(rebuilt.is_open());
  }
}

TEST(IpcSerialization, IPC_4_RoundTripWithoutSourceInfo) {
  EMM_CLAUSE("IPC-4");
  IpcHandle original(nullptr, handle_bytes(77), 777, std::nullopt, 5);
  IpcHandle rebuilt = IpcHandle::deserialize(original.serialize());
  EXPECT_FALSE(rebuilt.source_info().has_value());
  EXPECT_EQ(rebuilt.size(), 777u);
  EXPECT_EQ(rebuilt.offset(), 5u);
  EXPECT_EQ(std::memcmp(rebuilt.handle().reserved, handle_bytes(77).reserved, 64), 0);
}

void expect_rejected(const std::vector<std::byte>& bytes, const std::string& reason) {
  EMM_EXPECT_THROW(IpcFormatError, IpcHandle::deserialize(bytes),
                   AllOf(StartsWith("cannot deserialize IpcHandle: "), HasSubstr(reason)));
}

TEST(IpcSerialization, IPC_4_TruncatedAndOversizedInputIsRejected) {
  EMM_CLAUSE("IPC-4");
  const auto valid = valid_record();
  for (std::size_t n : {0u, 1u, 4u, 36u, 103u}) {
    SCOPED_TRACE("length " + std::to_string(n));
    expect_rejected(std::vector<std::byte>(valid.begin(), valid.begin() + n),
                    "truncated input (" + std::to_string(n) + " bytes, expected 104)");
  }
  auto longer = valid;
  longer.push_back(std::byte{0});
  expect_rejected(longer, "oversized input (105 bytes, expected 104)");
  expect_rejected(std::vector<std::byte>(4096, std::byte{0x45}), "oversized input");
}

TEST(IpcSerialization, IPC_4_CorruptedFieldsAreRejectedWithTheirOwnMessage) {
  EMM_CLAUSE("IPC-4");
  {
    auto bytes = valid_record();
    bytes[0] = std::byte{'X'};
    fix_crc(bytes);
    expect_rejected(bytes, "bad magic");
  }
  {
    auto bytes = valid_record();
    put<std::uint16_t>(bytes, kVersionAt, 2);
    fix_crc(bytes);
    expect_rejected(bytes, "format version 2 is not supported");
  }
  {
    auto bytes = valid_record();
    bytes[kHandleAt + 10] ^= std::byte{0x01};  // one bit of the driver handle, CRC left stale
    expect_rejected(bytes, "checksum mismatch");
  }
  {
    auto bytes = valid_record();
    bytes[kCrcAt] ^= std::byte{0x80};
    expect_rejected(bytes, "checksum mismatch");
  }
  {
    auto bytes = valid_record();
    put<std::uint16_t>(bytes, kFlagsAt, 0x8001);
    fix_crc(bytes);
    expect_rejected(bytes, "unknown flags 0x8001");
  }
  {
    auto bytes = valid_record();
    put<std::uint64_t>(bytes, kSizeAt, 0);
    fix_crc(bytes);
    expect_rejected(bytes, "size is 0");
  }
  {
    auto bytes = valid_record();
    put<std::uint64_t>(bytes, kSizeAt, std::uint64_t{1} << 63);
    put<std::uint64_t>(bytes, kOffsetAt, std::uint64_t{1} << 63);
    fix_crc(bytes);
    expect_rejected(bytes, "offset + size overflows");
  }
  {
    auto bytes = valid_record();
    put<std::int32_t>(bytes, kSourceAt + 4, -1);
    fix_crc(bytes);
    expect_rejected(bytes, "negative PCI id");
  }
  {
    auto bytes = IpcHandle(nullptr, handle_bytes(3), 64, std::nullopt, 0).serialize();
    put<std::int32_t>(bytes, kSourceAt, 7);
    fix_crc(bytes);
    expect_rejected(bytes, "source_info fields set without the source_info flag");
  }
}

TEST(IpcSerialization, IPC_4_LargestNonOverflowingOffsetAndSizeAreAccepted) {
  EMM_CLAUSE("IPC-4");
  auto bytes = valid_record();
  put<std::uint64_t>(bytes, kSizeAt, 1);
  put<std::uint64_t>(bytes, kOffsetAt, std::numeric_limits<std::uint64_t>::max() - 1);
  fix_crc(bytes);
  IpcHandle handle = IpcHandle::deserialize(bytes);
  EXPECT_EQ(handle.size(), 1u);
  EXPECT_EQ(handle.offset(), std::numeric_limits<std::uint64_t>::max() - 1);
}

TEST(IpcSerialization, IPC_4_ThousandsOfMutatedRecordsNeverCrashOrThrowAnythingElse) {
  EMM_CLAUSE("IPC-4");
  // A libFuzzer-free randomized corruption test: every input either deserializes into a handle
  // that re-serializes to the very same bytes (the format is canonical) or is refused with
  // IpcFormatError. Run under ASan/UBSan in CI, this also shows no undefined behaviour.
  std::mt19937_64 rng(0xE11A1C0DEull);
  auto random_byte = [&rng] { return static_cast<std::byte>(rng() & 0xFF); };
  const std::vector<std::vector<std::byte>> seeds = {
      valid_record(), IpcHandle(nullptr, handle_bytes(9), 1, std::nullopt, 0).serialize(),
      IpcHandle(nullptr, handle_bytes(200), std::size_t{1} << 40, DeviceIdentity{3, 0x41, 2},
                std::size_t{1} << 20)
          .serialize()};
  constexpr int kIterations = 20000;
  int accepted = 0;
  int rejected = 0;
  for (int i = 0; i < kIterations; ++i) {
    std::vector<std::byte> bytes = seeds[rng() % seeds.size()];
    const int kind = static_cast<int>(rng() % 7);
    switch (kind) {
      case 0:  // flip a few bits anywhere
        for (int flips = 1 + static_cast<int>(rng() % 4); flips > 0; --flips) {
          bytes[rng() % bytes.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
        }
        break;
      case 1:  // overwrite a few bytes
        for (int n = 1 + static_cast<int>(rng() % 8); n > 0; --n) {
          bytes[rng() % bytes.size()] = random_byte();
        }
        break;
      case 2:  // truncate
        bytes.resize(rng() % bytes.size());
        break;
      case 3:  // extend
        for (int n = 1 + static_cast<int>(rng() % 64); n > 0; --n) bytes.push_back(random_byte());
        break;
      case 4:  // rewrite header fields with a *valid* CRC, to reach the checks behind it
      case 5:
        for (int n = 1 + static_cast<int>(rng() % 6); n > 0; --n) {
          bytes[kVersionAt + rng() % (kHandleAt - kVersionAt)] = random_byte();
        }
        fix_crc(bytes);
        break;
      default:  // pure noise of any length
        bytes.resize(rng() % 256);
        for (auto& b : bytes) b = random_byte();
        if (bytes.size() == IpcHandle::kSerializedSize && rng() % 2 == 0) fix_crc(bytes);
        break;
    }
    try {
      IpcHandle handle = IpcHandle::deserialize(bytes);
      ++accepted;
      EXPECT_EQ(handle.base(), nullptr);
      EXPECT_GT(handle.size(), 0u);
      EXPECT_LE(handle.size(), std::numeric_limits<std::size_t>::max() - handle.offset());
      EXPECT_EQ(handle.serialize(), bytes) << "iteration " << i << ", mutation " << kind;
    } catch (const IpcFormatError& error) {
      ++rejected;
      EXPECT_THAT(error.what(), StartsWith("cannot deserialize IpcHandle: "));
    } catch (const std::exception& error) {
      ADD_FAILURE() << "iteration " << i << ": unexpected exception " << error.what();
    }
  }
  EXPECT_EQ(accepted + rejected, kIterations);
  EXPECT_GT(accepted, 100) << "valid-CRC mutations of the handle bytes must be accepted";
  EXPECT_GT(rejected, 1000);
}

TEST(IpcSerialization, IPC_4_SerializeRefusesWhatDeserializeRefuses) {
  EMM_CLAUSE("IPC-4");
  const auto refused = [](IpcHandle handle, const std::string& reason) {
    SCOPED_TRACE(reason);
    EMM_EXPECT_THROW(IpcFormatError, handle.serialize(),
                     AllOf(StartsWith("cannot serialize IpcHandle: " + reason +
                                      "; IpcHandle::deserialize() would refuse it."),
                           HasSubstr("A handle names at least one byte of its block")));
  };
  refused(IpcHandle(nullptr, handle_bytes(1), 0, DeviceIdentity{0, 1, 0}, 0), "size is 0");
  refused(IpcHandle(nullptr, handle_bytes(1), 0, std::nullopt, 64), "size is 0");
  refused(IpcHandle(nullptr, handle_bytes(1), 2, std::nullopt,
                    std::numeric_limits<std::size_t>::max() - 1),
          "offset + size overflows");
  refused(IpcHandle(nullptr, handle_bytes(1), 64, DeviceIdentity{-1, 1, 0}, 0),
          "negative PCI id in source_info (-1:1:0)");
  refused(IpcHandle(nullptr, handle_bytes(1), 64, DeviceIdentity{0, 0, -7}, 0),
          "negative PCI id in source_info (0:0:-7)");
}

// The record serialize() writes for these fields (format version 1), written by the test itself
// so that fields serialize() refuses can still be offered to deserialize().
std::vector<std::byte> record_of(std::uint64_t size, std::uint64_t offset,
                                 const std::optional<DeviceIdentity>& source,
                                 const CUipcMemHandle& handle) {
  std::vector<std::byte> bytes(IpcHandle::kSerializedSize);
  for (std::size_t i = 0; i < 4; ++i) bytes[i] = static_cast<std::byte>("EMMI"[i]);
  put<std::uint16_t>(bytes, kVersionAt, 1);
  put<std::uint16_t>(bytes, kFlagsAt, source ? 1 : 0);
  put<std::uint64_t>(bytes, kSizeAt, size);
  put<std::uint64_t>(bytes, kOffsetAt, offset);
  if (source) {
    put<std::int32_t>(bytes, kSourceAt, source->pci_domain_id);
    put<std::int32_t>(bytes, kSourceAt + 4, source->pci_bus_id);
    put<std::int32_t>(bytes, kSourceAt + 8, source->pci_device_id);
  }
  std::memcpy(bytes.data() + kHandleAt, handle.reserved, sizeof handle.reserved);
  fix_crc(bytes);
  return bytes;
}

TEST(IpcSerialization, IPC_4_SerializeAndDeserializeAgreeOnEveryEdgeValue) {
  EMM_CLAUSE("IPC-4");
  // Property: for every combination of edge values, either serialize() writes a record that
  // deserialize() turns back into the same fields (and the same bytes), or both refuse it with
  // IpcFormatError for the same reason. Which one is decided here independently of the code.
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  const std::vector<std::size_t> sizes = {
      0, 1, 2, 255, 256, 4096, 1 << 20, std::size_t{1} << 32, std::size_t{1} << 63, kMax - 1, kMax};
  const std::vector<std::size_t> offsets = {0, 1, 255, 4099, std::size_t{1} << 63, kMax - 1, kMax};
  constexpr int kIntMax = std::numeric_limits<std::int32_t>::max();
  constexpr int kIntMin = std::numeric_limits<std::int32_t>::min();
  const std::vector<std::optional<DeviceIdentity>> sources = {
      std::nullopt,
      DeviceIdentity{0, 0, 0},
      DeviceIdentity{0, 1, 0},
      DeviceIdentity{kIntMax, kIntMax, kIntMax},
      DeviceIdentity{-1, 0, 0},
      DeviceIdentity{0, -1, 0},
      DeviceIdentity{0, 0, kIntMin}};
  CUipcMemHandle all_ones{};
  std::memset(all_ones.reserved, 0xFF, sizeof all_ones.reserved);
  const std::vector<CUipcMemHandle> handles = {CUipcMemHandle{}, handle_bytes(42), all_ones};

  int written = 0;
  int refused = 0;
  for (std::size_t size : sizes) {
    for (std::size_t offset : offsets) {
      for (const auto& source : sources) {
        for (const CUipcMemHandle& raw : handles) {
          std::string expected_problem;
          if (size == 0) {
            expected_problem = "size is 0";
          } else if (size > kMax - offset) {
            expected_problem = "offset + size overflows";
          } else if (source && (source->pci_domain_id < 0 || source->pci_bus_id < 0 ||
                                source->pci_device_id < 0)) {
            expected_problem = "negative PCI id in source_info";
          }
          SCOPED_TRACE("size " + std::to_string(size) + ", offset " + std::to_string(offset) +
                       ", source_info " +
                       (source ? std::to_string(source->pci_domain_id) + ":" +
                                     std::to_string(source->pci_bus_id) + ":" +
                                     std::to_string(source->pci_device_id)
                               : std::string("none")));
          const IpcHandle original(nullptr, raw, size, source, offset);
          const std::vector<std::byte> record = record_of(size, offset, source, raw);
          if (!expected_problem.empty()) {
            ++refused;
            EMM_EXPECT_THROW(IpcFormatError, original.serialize(),
                             StartsWith("cannot serialize IpcHandle: " + expected_problem));
            expect_rejected(record, expected_problem);
            continue;
          }
          ++written;
          std::vector<std::byte> bytes;
          ASSERT_NO_THROW(bytes = original.serialize());
          EXPECT_EQ(bytes, record) << "serialize() writes the documented layout";
          std::optional<IpcHandle> rebuilt;
          ASSERT_NO_THROW(rebuilt.emplace(IpcHandle::deserialize(bytes)));
          EXPECT_EQ(rebuilt->base(), nullptr);
          EXPECT_EQ(rebuilt->size(), size);
          EXPECT_EQ(rebuilt->offset(), offset);
          EXPECT_EQ(rebuilt->source_info(), source);
          EXPECT_EQ(std::memcmp(rebuilt->handle().reserved, raw.reserved, sizeof raw.reserved), 0);
          EXPECT_EQ(rebuilt->serialize(), bytes);
        }
      }
    }
  }
  EXPECT_GT(written, 100);
  EXPECT_GT(refused, 100);
}

// --- IPC-5 ---------------------------------------------------------------------------------

class StagedIpc : public Ipc {
 protected:
  StagedIpc() : Ipc(two_devices(/*peer_access=*/false)) {}
};

TEST_F(StagedIpc, IPC_5_StagedOpenAllocatesOnceThroughTheImportersPluginAndTakesNoOwnership) {
  EMM_CLAUSE("IPC-5");
  auto journal = std::make_shared<test::Journal>();
  importing_.set_memory_manager(test::recording_factory(journal));
  Context& destination = importing_.get_context(1);  // another device, no peer access
  const int destination_plugin = test::recording_plugin(destination).instance();

  IpcHandle handle = IpcHandle::deserialize(exported_bytes());
  std::shared_ptr<MemoryPointer> copy = handle.open(destination);

  EXPECT_TRUE(handle.is_staged());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->size(), kViewSize);
  const auto calls = journal->calls(destination_plugin);
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "memalloc"), 1)
      << "exactly one allocation, through the importing context's plugin";
  Context* source_in_importer = importing_.find_context(0);
  ASSERT_NE(source_in_importer, nullptr) << "the source device's context did the mapping";
  const auto source_calls = journal->calls(test::recording_plugin(*source_in_importer).instance());
  EXPECT_EQ(std::count(source_calls.begin(), source_calls.end(), "memalloc"), 0);
  EXPECT_EQ(importer_->ipc_mapping_count(), 0u) << "the source mapping is closed again";
  EXPECT_EQ(read(destination, copy->device_pointer(), kViewSize), expected_view());

  EXPECT_EQ(copy.use_count(), 1) << "the handle keeps no reference to the copy";
  EXPECT_NO_THROW(handle.close()) << "closing a staged handle is a no-op";
  EXPECT_EQ(importer_->call_count(DriverCall::cuIpcCloseMemHandle), 1u)
      << "only the source mapping was ever closed";
  EXPECT_EQ(read(destination, copy->device_pointer(), kViewSize), expected_view())
      << "the copy outlives the handle";

  copy.reset();  // the caller owns it: releasing it frees through the plugin
  destination.reset();
  EXPECT_EQ(importer_->device_bytes_in_use(), 0u);
  EXPECT_EQ(importer_->invalid_frees(), 0u);
}

TEST_F(StagedIpc, IPC_5_SameDeviceOpensDirectlyWithoutThePlugin) {
  EMM_CLAUSE("IPC-5");
  auto journal = std::make_shared<test::Journal>();
  importing_.set_memory_manager(test::recording_factory(journal));
  Context& destination = importing_.get_context(0);
  IpcHandle handle = IpcHandle::deserialize(exported_bytes());
  auto view = handle.open(destination);
  EXPECT_FALSE(handle.is_staged());
  EXPECT_EQ(journal->count("memalloc"), 0u);
  EXPECT_EQ(read(destination, view->device_pointer(), kViewSize), expected_view());
  handle.close();
}

class PeerIpc : public Ipc {
 protected:
  PeerIpc() : Ipc(two_devices(/*peer_access=*/true)) {}
};

TEST_F(PeerIpc, IPC_5_PeerAccessOpensDirectlyOnAnotherDevice) {
  EMM_CLAUSE("IPC-5");
  auto journal = std::make_shared<test::Journal>();
  importing_.set_memory_manager(test::recording_factory(journal));
  Context& destination = importing_.get_context(1);
  IpcHandle handle = IpcHandle::deserialize(exported_bytes());
  auto view = handle.open(destination);
  EXPECT_FALSE(handle.is_staged());
  EXPECT_EQ(journal->count("memalloc"), 0u);
  EXPECT_EQ(read(destination, view->device_pointer(), kViewSize), expected_view());
  handle.close();
}

// --- IPC-3: a handle whose size or offset was edited (CRC recomputed) ------------------------

// The exported view's record with its size and offset replaced and its CRC made valid again:
// what a corrupted or hostile peer can send that deserialize() cannot tell from a real one.
std::vector<std::byte> edited(std::vector<std::byte> bytes, std::uint64_t offset,
                              std::uint64_t size) {
  put<std::uint64_t>(bytes, kOffsetAt, offset);
  put<std::uint64_t>(bytes, kSizeAt, size);
  fix_crc(bytes);
  return bytes;
}

std::string range_message(std::size_t start, std::size_t end, std::size_t mapped) {
  return "IpcHandle names bytes [" + std::to_string(start) + ", " + std::to_string(end) +
         ") of the exported block, but the driver mapped bytes [0, " + std::to_string(mapped) +
         ") of it: the handle's size or offset does not belong to the block its 64-byte driver "
         "handle names; pass the exact bytes IpcHandle::serialize() produced in the exporting "
         "process";
}

TEST_F(Ipc, IPC_3_ViewPastTheMappedBlockIsRefusedAndUnmapped) {
  EMM_CLAUSE("IPC-3");
  Context& destination = importing_.get_context(0);
  struct Case {
    std::size_t offset;
    std::size_t size;
  };
  for (Case c : {Case{kViewStart, kAllocation}, Case{kAllocation, 1}, Case{0, kAllocation + 1},
                 Case{kAllocation - 1, 2}, Case{std::size_t{1} << 40, 64}}) {
    SCOPED_TRACE("offset " + std::to_string(c.offset) + ", size " + std::to_string(c.size));
    IpcHandle handle = IpcHandle::deserialize(edited(exported_bytes(), c.offset, c.size));
    auto error = EMM_EXPECT_THROW(IpcRangeError, handle.open(destination),
                                  range_message(c.offset, c.offset + c.size, kAllocation));
    if (error) {
      EXPECT_EQ(error->offset(), c.offset);
      EXPECT_EQ(error->size(), c.size);
      EXPECT_EQ(error->mapped_size(), kAllocation);
    }
    EXPECT_FALSE(handle.is_open()) << "a refused open leaves the handle closed";
    EMM_EXPECT_THROW(IpcStateError, handle.close(), StrEq("IpcHandle not opened"));
    EXPECT_EQ(importer_->ipc_mapping_count(), 0u) << "the mapping is closed again";
  }
  EXPECT_EQ(importer_->invalid_frees(), 0u);
  EXPECT_EQ(importer_->invalid_accesses(), 0u) << "no byte past the block was touched";
}

TEST_F(Ipc, IPC_3_ViewEndingExactlyAtTheBlockEndIsAccepted) {
  EMM_CLAUSE("IPC-3");
  Context& destination = importing_.get_context(0);
  IpcHandle handle =
      IpcHandle::deserialize(edited(exported_bytes(), kViewStart, kAllocation - kViewStart));
  auto view = handle.open(destination);
  Bytes all = pattern(kAllocation);
  EXPECT_EQ(read(destination, view->device_pointer(), kAllocation - kViewStart),
            Bytes(all.begin() + kViewStart, all.end()));
  handle.close();
  EXPECT_EQ(importer_->ipc_mapping_count(), 0u);
}

TEST_F(StagedIpc, IPC_3_StagedViewPastTheMappedBlockIsRefusedBeforeAnyAllocation) {
  EMM_CLAUSE("IPC-3");
  auto journal = std::make_shared<test::Journal>();
  importing_.set_memory_manager(test::recording_factory(journal));
  Context& destination = importing_.get_context(1);  // another device, no peer access: staged
  IpcHandle handle = IpcHandle::deserialize(edited(exported_bytes(), kViewStart, kAllocation));
  EMM_EXPECT_THROW(IpcRangeError, handle.open(destination),
                   range_message(kViewStart, kViewStart + kAllocation, kAllocation));
  EXPECT_FALSE(handle.is_open());
  EXPECT_EQ(journal->count("memalloc"), 0u) << "nothing is copied out of a refused range";
  EXPECT_EQ(importer_->ipc_mapping_count(), 0u);
  EXPECT_EQ(importer_->device_bytes_in_use(), 0u);
  EXPECT_EQ(importer_->invalid_accesses(), 0u);
}

TEST_F(StagedIpc, IPC_3_AStagedOpenThatCannotSwitchContextsClosesItsSourceMapping) {
  EMM_CLAUSE("IPC-3");
  Context& destination = importing_.get_context(1);  // another device, no peer access: staged
  importing_.get_context(0);
  // Count the context switches of one staged open, then fail each of them in turn.
  std::size_t switches = 0;
  {
    destination.make_current();
    IpcHandle handle = IpcHandle::deserialize(exported_bytes());
    const std::size_t before = importer_->call_count(DriverCall::cuCtxSetCurrent);
    handle.open(destination);
    switches = importer_->call_count(DriverCall::cuCtxSetCurrent) - before;
  }
  ASSERT_GE(switches, 2u) << "a staged open switches to the source device and back";
  for (std::size_t nth = 1; nth <= switches; ++nth) {
    SCOPED_TRACE("context switch " + std::to_string(nth) + " of " + std::to_string(switches));
    destination.make_current();
    IpcHandle handle = IpcHandle::deserialize(exported_bytes());
    importer_->fail_call(DriverCall::cuCtxSetCurrent, CUDA_ERROR_UNKNOWN, nth);
    EMM_EXPECT_DRIVER_ERROR(handle.open(destination), CUDA_ERROR_UNKNOWN, "cuCtxSetCurrent",
                            HasSubstr("failure injected"));
    EXPECT_FALSE(handle.is_open());
    EXPECT_EQ(importer_->ipc_mapping_count(), 0u) << "the source mapping is closed all the same";
  }
  destination.reset();
  EXPECT_EQ(importer_->device_bytes_in_use(), 0u) << "the copies were released";
}

TEST_F(Ipc, IPC_3_FailingAddressRangeQueryClosesTheMapping) {
  EMM_CLAUSE("IPC-3");
  Context& destination = importing_.get_context(0);
  IpcHandle handle = IpcHandle::deserialize(exported_bytes());
  importer_->fail_call(DriverCall::cuMemGetAddressRange, CUDA_ERROR_INVALID_VALUE);
  EMM_EXPECT_DRIVER_ERROR(handle.open(destination), CUDA_ERROR_INVALID_VALUE,
                          "cuMemGetAddressRange", HasSubstr("failure injected"));
  EXPECT_FALSE(handle.is_open());
  EXPECT_EQ(importer_->ipc_mapping_count(), 0u);
  auto view = handle.open(destination);  // and the next open works
  EXPECT_EQ(read(destination, view->device_pointer(), kViewSize), expected_view());
  handle.close();
}

// --- IPC-6 ---------------------------------------------------------------------------------

RuntimeOptions without_ipc() {
  RuntimeOptions options = RuntimeOptions::hermetic();
  options.ipc_supported = false;
  return options;
}

TEST(IpcUnsupported, IPC_6_GetIpcHandleFailsBeforeThePluginIsCalled) {
  EMM_CLAUSE("IPC-6");
  auto fake = std::make_shared<FakeDriver>();
  auto journal = std::make_shared<test::Journal>();
  Runtime runtime(fake, without_ipc());
  runtime.set_memory_manager(test::recording_factory(journal));
  Context& context = runtime.get_context(0);
  EXPECT_FALSE(context.supports_ipc());
  auto memory = context.memalloc(4096);

  EMM_EXPECT_THROW(UnsupportedError, context.get_ipc_handle(memory),
                   HasSubstr("CUDA IPC is not supported"));
  EXPECT_EQ(journal->count("get_ipc_handle"), 0u);
  EXPECT_EQ(fake->call_count(DriverCall::cuIpcGetMemHandle), 0u);
  EXPECT_EQ(fake->call_count(DriverCall::cuMemGetAddressRange), 0u);
  EXPECT_EQ(context.memalloc(64)->size(), 64u) << "the context is still usable";
}

class IpcIntoNoIpcProcess : public Ipc {
 protected:
  IpcIntoNoIpcProcess() : Ipc(two_devices(false), without_ipc()) {}
};

TEST_F(IpcIntoNoIpcProcess, IPC_6_OpeningFailsAndLeavesNothingBehind) {
  EMM_CLAUSE("IPC-6");
  auto journal = std::make_shared<test::Journal>();
  importing_.set_memory_manager(test::recording_factory(journal));
  for (int device : {0, 1}) {  // direct, then staged
    SCOPED_TRACE("importing on device " + std::to_string(device));
    IpcHandle handle = IpcHandle::deserialize(exported_bytes());
    EMM_EXPECT_THROW(UnsupportedError, handle.open(importing_.get_context(device)),
                     HasSubstr("CUDA IPC is not supported"));
    EXPECT_FALSE(handle.is_open());
  }
  EXPECT_EQ(journal->count("memalloc"), 0u) << "a staged open must not allocate first";
  EXPECT_EQ(importer_->call_count(DriverCall::cuIpcOpenMemHandle), 0u);
  EXPECT_EQ(importer_->ipc_mapping_count(), 0u);
}

}  // namespace
}  // namespace emm
