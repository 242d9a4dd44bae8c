// emm/examples/event_recorder.hpp — EventRecorder: what the logging plugin records events with.
//
// Binds a log destination and a device ordinal, opens the shared CsvEventLog at the first event
// (never at construction, so a version probe or an unused plugin writes nothing) and writes one
// line per event. Shared by a logging plugin and the finalizers of the pointers it hands out,
// which may outlive it.
//
//   auto recorder = std::make_shared<EventRecorder>("/tmp/log.csv", 0);
//   recorder->record("reset", {}, {}, start, CsvEventLog::now_ns());
//
// Thread-safety: record() may be called concurrently; it never throws.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "emm/examples/csv_event_log.hpp"

namespace emm::examples {

class EventRecorder {
 public:
  EventRecorder(std::string destination, int device);

  void record(std::string_view event, std::optional<std::uintptr_t> address,
              std::optional<std::size_t> size, std::int64_t start, std::int64_t end,
              std::optional<MemoryInfo> info = std::nullopt) noexcept;

  // Calls `call`, recording `event` around it, or `<event>_failed` when it throws (the
  // exception is rethrown unchanged).
  template <class F>
  auto around(std::string_view event, std::optional<std::uintptr_t> address,
              std::optional<std::size_t> size, F&& call) -> decltype(call());

  const std::string& destination() const noexcept { return destination_; }
  int device() const noexcept { return device_; }

 private:
  std::string destination_;
  int device_;
  std::once_flag opened_;
  std::shared_ptr<CsvEventLog> log_;
};

template <class F>
auto EventRecorder::around(std::string_view event, std::optional<std::uintptr_t> address,
                           std::optional<std::size_t> size, F&& call) -> decltype(call()) {
  const std::int64_t start = CsvEventLog::now_ns();
  try {
    if constexpr (std::is_void_v<decltype(call())>) {
      call();
      record(event, address, size, start, CsvEventLog::now_ns());
    } else {
      auto result = call();
      record(event, address, size, start, CsvEventLog::now_ns());
      return result;
    }
  } catch (...) {
    record(std::string(event) + "_failed", address, size, start, CsvEventLog::now_ns());
    throw;
  }
}

}  // namespace emm::examples
