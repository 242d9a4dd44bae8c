#include "emm/examples/event_recorder.hpp"

#include <utility>

namespace emm::examples {

EventRecorder::EventRecorder(std::string destination, int device)
    : destination_(std::move(destination)), device_(device) {}

void EventRecorder::record(std::string_view event, std::optional<std::uintptr_t> address,
                           std::optional<std::size_t> size, std::int64_t start, std::int64_t end,
                           std::optional<MemoryInfo> info) noexcept {
  try {
    std::call_once(opened_, [this] { log_ = CsvEventLog::open(destination_); });
    log_->write(LogEvent{event, device_, address, size, info, start, end});
  } catch (...) {
    // A log that cannot be written must not break the allocation it describes.
  }
}

}  // namespace emm::examples
