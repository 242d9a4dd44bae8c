#include "emm/examples/logged_pointer.hpp"

#include <utility>

#include "emm/errors.hpp"

namespace emm::examples {

// The inner pointer is a member rather than a capture of the finalizer so that inner() can
// reach it; the finalizer captures only `this`, and the destructor runs it while the members
// still exist.
LoggedPointer::LoggedPointer(Context* context, std::shared_ptr<MemoryPointer> inner,
                             std::shared_ptr<EventRecorder> recorder)
    : MemoryPointer(context, inner->device_pointer(), inner->size(), nullptr,
                    [this] { release(); }),
      inner_(std::move(inner)),
      recorder_(std::move(recorder)) {}

LoggedPointer::~LoggedPointer() { run_finalizer_at_destruction(); }

std::shared_ptr<MemoryPointer> LoggedPointer::inner() const {
  std::lock_guard lock(mutex_);
  return inner_;
}

void LoggedPointer::release() {
  std::shared_ptr<MemoryPointer> inner;
  {
    std::lock_guard lock(mutex_);
    inner.swap(inner_);
  }
  const std::int64_t start = CsvEventLog::now_ns();
  inner.reset();  // the wrapped plugin's finalizer runs here (this was its last reference)
  recorder_->record("free", static_cast<std::uintptr_t>(device_pointer()), size(), start,
                    CsvEventLog::now_ns());
}

std::shared_ptr<MemoryPointer> LoggedPointer::inner_view(
    const std::shared_ptr<MemoryPointer>& memory) {
  const std::shared_ptr<MemoryPointer> base = memory->owner();
  const auto* logged = dynamic_cast<const LoggedPointer*>(base.get());
  if (logged == nullptr) return memory;  // not one of ours: the wrapped plugin's own memory
  const std::shared_ptr<MemoryPointer> inner = logged->inner();
  if (!inner) {
    throw InvalidArgumentError("get_ipc_handle: this memory has already been freed");
  }
  const std::size_t start = memory->device_pointer() - logged->device_pointer();
  return inner->view(start, start + memory->size());
}

}  // namespace emm::examples
