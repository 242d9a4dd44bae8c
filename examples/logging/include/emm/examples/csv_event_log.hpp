// emm/examples/csv_event_log.hpp — the CSV sink the logging plugin writes its events to.
//
// One line per event, with the header
//   event,device,address,size,free,total,start,end
// event: memalloc, free, memhostalloc, mempin, memallocmanaged, initialize, reset,
//        get_memory_info, get_ipc_handle, defer_cleanup_enter, defer_cleanup_exit, or
//        <name>_failed when the wrapped plugin threw; device: the context's device ordinal (-1
//        without a context);
// address: hex device pointer (host pointer for memhostalloc/mempin), empty when none;
// size: bytes; free,total: the figures a get_memory_info event returned, empty otherwise;
// start,end: CLOCK_MONOTONIC nanoseconds around the call into the wrapped plugin.
//
//   auto log = emm::examples::CsvEventLog::open("/tmp/alloc.csv");   // or "stderr"
//   log->write({.event = "memalloc", .device = 0, .address = p, .size = n, ...});
//
// Logs are shared: every open() of the same destination in a process returns the same
// instance, so lines from many plugin instances and threads never interleave. A file is
// appended to, and gets the header when it is empty. If it cannot be opened, the log reports
// that once through emm::Diagnostics and writes to stderr instead.
//
// Thread-safety: write() may be called concurrently; each line is written whole and flushed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "emm/memory_info.hpp"

namespace emm::examples {

struct LogEvent {
  std::string_view event;
  int device = -1;
  std::optional<std::uintptr_t> address;
  std::optional<std::size_t> size;
  std::optional<MemoryInfo> info;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

class CsvEventLog {
 public:
  static constexpr const char* kEnvVar = "EMM_LOGGING_PLUGIN_CSV";
  static constexpr const char* kHeader = "event,device,address,size,free,total,start,end";
  static constexpr const char* kStderr = "stderr";

  // EMM_LOGGING_PLUGIN_CSV when set and not empty, else /tmp/emm_logging_plugin.<pid>.csv.
  static std::string default_destination();
  // The shared log for `destination` ("stderr" or a file path).
  static std::shared_ptr<CsvEventLog> open(const std::string& destination);
  // CLOCK_MONOTONIC in nanoseconds (std::chrono::steady_clock on Linux).
  static std::int64_t now_ns() noexcept;
  // The line write() emits for `event`, without the newline.
  static std::string format(const LogEvent& event);

  ~CsvEventLog();
  CsvEventLog(const CsvEventLog&) = delete;
  CsvEventLog& operator=(const CsvEventLog&) = delete;

  void write(const LogEvent& event) noexcept;
  const std::string& destination() const noexcept { return destination_; }

 private:
  explicit CsvEventLog(std::string destination);

  std::string destination_;
  std::mutex mutex_;
  std::FILE* file_ = nullptr;
  bool owns_file_ = false;
};

}  // namespace emm::examples
