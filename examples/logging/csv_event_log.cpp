#include "emm/examples/csv_event_log.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <map>

#include "emm/diagnostics.hpp"

namespace emm::examples {

std::string CsvEventLog::default_destination() {
  const char* value = std::getenv(kEnvVar);
  if (value != nullptr && *value != '\0') return value;
  return "/tmp/emm_logging_plugin." + std::to_string(::getpid()) + ".csv";
}

std::shared_ptr<CsvEventLog> CsvEventLog::open(const std::string& destination) {
  // One instance per destination, so concurrent writers share one lock and one FILE.
  static std::mutex registry_mutex;
  static std::map<std::string, std::weak_ptr<CsvEventLog>> registry;
  std::lock_guard lock(registry_mutex);
  if (auto existing = registry[destination].lock()) return existing;
  std::shared_ptr<CsvEventLog> log(new CsvEventLog(destination));
  registry[destination] = log;
  return log;
}

std::int64_t CsvEventLog::now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string CsvEventLog::format(const LogEvent& event) {
  std::string line(event.event);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, ",%d,", event.device);
  line += buffer;
  if (event.address) {
    std::snprintf(buffer, sizeof buffer, "0x%" PRIxPTR, *event.address);
    line += buffer;
  }
  line += ',';
  if (event.size) line += std::to_string(*event.size);
  line += ',';
  if (event.info)
    line += std::to_string(event.info->free) + ',' + std::to_string(event.info->total);
  else
    line += ',';
  std::snprintf(buffer, sizeof buffer, ",%" PRId64 ",%" PRId64, event.start_ns, event.end_ns);
  line += buffer;
  return line;
}

CsvEventLog::CsvEventLog(std::string destination) : destination_(std::move(destination)) {
  if (destination_ == kStderr) {
    file_ = stderr;
  } else {
    file_ = std::fopen(destination_.c_str(), "a");
    if (file_ == nullptr) {
      Diagnostics::warn(kEnvVar, "cannot open '" + destination_ + "' for appending (" +
                                     std::strerror(errno) + "); logging to stderr instead");
      file_ = stderr;
    } else {
      owns_file_ = true;
    }
  }
  // A new (empty) file gets the header; an appended one already has it.
  if (file_ == stderr || (std::fseek(file_, 0, SEEK_END) == 0 && std::ftell(file_) == 0)) {
    std::fprintf(file_, "%s\n", kHeader);
    std::fflush(file_);
  }
}

CsvEventLog::~CsvEventLog() {
  if (owns_file_) std::fclose(file_);
}

void CsvEventLog::write(const LogEvent& event) noexcept {
  try {
    std::string line = format(event);
    line += '\n';
    std::lock_guard lock(mutex_);
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);  // whole lines, readable by another process at once
  } catch (...) {
    // Logging must never break an allocation or a finalizer; a lost line is the lesser harm.
  }
}

}  // namespace emm::examples
