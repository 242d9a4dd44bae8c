// emm/examples/logged_pointer.hpp — LoggedPointer: what the logging plugin's memalloc returns.
//
// A plain MemoryPointer (refct 1, ALLOC-5) at the same address and size as the wrapped
// plugin's pointer, which it keeps alive. Its finalizer — run once, at destruction or free() —
// drops that inner pointer, so the wrapped plugin's own finalizer runs exactly then (FIN-1),
// and records a `free` event. Views, own() and free() are MemoryPointer's.
//
//   auto outer = std::make_shared<LoggedPointer>(context, inner_pointer, recorder);
//
// Thread-safety: as MemoryPointer; inner() may race with the finalizer safely.
#pragma once

#include <memory>
#include <mutex>

#include "emm/examples/event_recorder.hpp"
#include "emm/memory_pointer.hpp"

namespace emm::examples {

class LoggedPointer final : public MemoryPointer {
 public:
  LoggedPointer(Context* context, std::shared_ptr<MemoryPointer> inner,
                std::shared_ptr<EventRecorder> recorder);
  ~LoggedPointer() override;

  // The wrapped plugin's pointer; null once this one has been freed.
  std::shared_ptr<MemoryPointer> inner() const;

  // For get_ipc_handle(memory): the wrapped plugin's view of the same bytes as `memory` when
  // `memory` is (a view of) a LoggedPointer, `memory` itself when it is not. Throws
  // InvalidArgumentError when the LoggedPointer was already freed.
  static std::shared_ptr<MemoryPointer> inner_view(const std::shared_ptr<MemoryPointer>& memory);

 private:
  void release();

  mutable std::mutex mutex_;
  std::shared_ptr<MemoryPointer> inner_;
  std::shared_ptr<EventRecorder> recorder_;
};

}  // namespace emm::examples
