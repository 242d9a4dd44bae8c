// fuzz_ipc_handle — IpcHandle::deserialize on untrusted bytes, and open() of what parses in a
// second simulated process of a machine where the first process exported real blocks (spec
// 2.8, IPC-3, IPC-4). Valid handles and mutated ones both reach the open path.
//
// The machine has two fake devices without peer access. The exporting process holds blocks on
// both; the importing process opens on device 0: directly for a handle of device 0 or one
// without source_info, staged (a copy through the importer's plugin) for one of device 1, and
// an unknown source_info is refused. Each input is tried twice:
//   1. as serialized bytes: deserialize(), then open() what parses;
//   2. as the fields of a record (bytes 6..100 of the format: flags, size, offset, source_info,
//      the 64 handle bytes) handed to IpcHandle's constructor and serialize(), which gives them
//      a valid checksum — so a mutated size or offset reaches open() although no fuzzer would
//      guess a CRC-32. serialize() must refuse exactly what deserialize() refuses (IPC-4).
// Findings (abort): an exception that is not an emm::Error; serialize() writing bytes
// deserialize() refuses or reads differently; an open handle after a failed open(); a view of
// the wrong size or one the importer cannot read in full; a mapping, copy or byte access left
// behind (IPC mappings, device memory, invalid accesses or frees in the importing process).
// LeakSanitizer and UBSan watch the rest.
//
// Seeds (EMM_FUZZ_WRITE_SEEDS, fuzz_support.hpp): the serialized handles of the exported views.
// The fake's handles name their machine by a serial that counts machines made in the process, so
// the seeds open only because this target makes its machine first, exactly as when they were
// written.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "emm/context.hpp"
#include "emm/errors.hpp"
#include "emm/fake/fake_driver.hpp"
#include "emm/ipc_handle.hpp"
#include "emm/runtime.hpp"
#include "fuzz_support.hpp"

namespace emm::fuzz {
namespace {

constexpr std::size_t kBlockSize = std::size_t{1} << 16;

// The simulated machine, both processes and the exported handles; made once per fuzzing run.
class Machine {
 public:
  Machine()
      : exporter_(std::make_shared<FakeDriver>(two_devices())),
        exporting_(exporter_, RuntimeOptions::hermetic()),
        importer_(exporter_->spawn_process()),
        importing_(importer_, RuntimeOptions::hermetic()) {
    for (int device : {0, 1}) {
      Context& context = exporting_.get_context(device);
      auto block = context.memalloc(kBlockSize + static_cast<std::size_t>(device) * 3);
      block->memset(static_cast<unsigned char>(0x40 + device));
      blocks_.push_back(block);
    }
    destination_ = &importing_.get_context(0);
  }

  // Serialized handles of real views: whole blocks, interior views, the last byte, and a
  // handle without source_info.
  std::vector<std::vector<std::byte>> exported_records() {
    std::vector<std::vector<std::byte>> records;
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
      Context& context = exporting_.get_context(static_cast<int>(i));
      const auto& block = blocks_[i];
      records.push_back(context.get_ipc_handle(block).serialize());
      records.push_back(context.get_ipc_handle(block->view(1, 4097)).serialize());
      records.push_back(context.get_ipc_handle(block->view(block->size() - 1)).serialize());
    }
    IpcHandle with = exporting_.get_context(0).get_ipc_handle(blocks_[0]->view(256, 1256));
    records.push_back(
        IpcHandle(nullptr, with.handle(), with.size(), std::nullopt, with.offset()).serialize());
    return records;
  }

  // Opens `handle` in the importing process; every way it may fail must be a typed error and
  // leave nothing behind.
  void open(IpcHandle& handle) {
    std::shared_ptr<MemoryPointer> view;
    try {
      view = handle.open(*destination_);
    } catch (const Error&) {
      if (handle.is_open()) finding("a failed open() left the handle open");
      check_nothing_left("a failed open()");
      return;
    }
    if (!handle.is_open()) finding("open() returned a view but the handle is not open");
    if (view->size() != handle.size()) {
      finding("open() returned a view of " + std::to_string(view->size()) +
              " bytes for a handle of " + std::to_string(handle.size()));
    }
    read_ends(*view);
    handle.close();
    view.reset();
    check_nothing_left("open() and close()");
  }

 private:
  static FakeSystemConfig two_devices() {
    FakeSystemConfig config;
    config.devices = {FakeDeviceConfig{}, FakeDeviceConfig{}};
    config.peer_access = false;
    return config;
  }

  // The first and the last byte of the view must be readable in the importing process.
  void read_ends(const MemoryPointer& view) {
    destination_->make_current();
    std::array<unsigned char, 2> bytes{};
    try {
      importer_->memcpy_dtoh(&bytes[0], view.device_pointer(), 1);
      importer_->memcpy_dtoh(&bytes[1], view.device_pointer() + view.size() - 1, 1);
    } catch (const Error& error) {
      finding(std::string("the opened view cannot be read in full: ") + error.what());
    }
  }

  void check_nothing_left(const char* after) {
    destination_->reset();  // flushes the importer's deferred frees (staged copies)
    if (importer_->ipc_mapping_count() != 0) {
      finding(std::string(after) + " left " + std::to_string(importer_->ipc_mapping_count()) +
              " IPC mapping(s) open");
    }
    if (importer_->device_bytes_in_use() != 0) {
      finding(std::string(after) + " left " + std::to_string(importer_->device_bytes_in_use()) +
              " bytes of device memory allocated in the importing process");
    }
    if (importer_->invalid_accesses() != 0 || importer_->invalid_frees() != 0) {
      finding(std::string(after) + " touched memory outside a mapping or freed something twice");
    }
  }

  std::shared_ptr<FakeDriver> exporter_;
  Runtime exporting_;
  std::shared_ptr<FakeDriver> importer_;
  Runtime importing_;
  std::vector<std::shared_ptr<MemoryPointer>> blocks_;
  Context* destination_ = nullptr;
};

Machine& machine() {
  static Machine* instance = new Machine();  // lives for the whole run, like libFuzzer's
  return *instance;
}

template <class T>
T get(std::span<const std::byte> bytes, std::size_t at) {
  std::make_unsigned_t<T> value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<std::make_unsigned_t<T>>(std::to_integer<unsigned>(bytes[at + i]))
             << (8 * i);
  }
  return static_cast<T>(value);
}

// Path 2: the record's fields at face value, with a checksum serialize() computes.
void from_fields(std::span<const std::byte> bytes) {
  constexpr std::size_t kFieldsEnd = 100;  // the CRC follows (ipc_handle.cpp's layout)
  if (bytes.size() < kFieldsEnd) return;
  const auto flags = get<std::uint16_t>(bytes, 6);
  const auto size = static_cast<std::size_t>(get<std::uint64_t>(bytes, 8));
  const auto offset = static_cast<std::size_t>(get<std::uint64_t>(bytes, 16));
  std::optional<DeviceIdentity> source;
  if (flags & 1) {
    source = DeviceIdentity{get<std::int32_t>(bytes, 24), get<std::int32_t>(bytes, 28),
                            get<std::int32_t>(bytes, 32)};
  }
  CUipcMemHandle raw{};
  std::memcpy(raw.reserved, bytes.data() + 36, sizeof raw.reserved);
  const IpcHandle original(nullptr, raw, size, source, offset);
  std::vector<std::byte> serialized;
  try {
    serialized = original.serialize();
  } catch (const IpcFormatError&) {
    return;  // deserialize() refuses the same fields (checked by IPC-4's property test)
  }
  std::optional<IpcHandle> back;
  try {
    back.emplace(IpcHandle::deserialize(serialized));
  } catch (const IpcFormatError& error) {
    finding(std::string("deserialize() refuses what serialize() wrote: ") + error.what());
  }
  if (back->size() != size || back->offset() != offset || back->source_info() != source ||
      std::memcmp(back->handle().reserved, raw.reserved, sizeof raw.reserved) != 0 ||
      back->serialize() != serialized) {
    finding("deserialize(serialize(h)) differs from h");
  }
  machine().open(*back);
}

}  // namespace
}  // namespace emm::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  emm::fuzz::Machine& machine = emm::fuzz::machine();
  if (const auto directory = emm::fuzz::seed_directory()) {
    const auto records = machine.exported_records();
    for (std::size_t i = 0; i < records.size(); ++i) {
      emm::fuzz::write_seed(*directory, "handle-" + std::to_string(i), records[i]);
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  std::optional<emm::IpcHandle> handle;
  try {
    handle.emplace(emm::IpcHandle::deserialize(bytes));
  } catch (const emm::IpcFormatError&) {
  }
  if (handle) emm::fuzz::machine().open(*handle);
  emm::fuzz::from_fields(bytes);
  return 0;
}
