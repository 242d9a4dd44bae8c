#include "emm/stream.hpp"

#include "emm/diagnostics.hpp"
#include "emm/driver.hpp"
#include "emm/pending_deallocs.hpp"

#include <exception>

namespace emm {

template <class Handle>
ContextResource<Handle>::~ContextResource() {
  auto queue = queue_.lock();
  if (!queue) return;  // the context is gone, and destroyed the object as it went
  try {
    // CTX-1: destroyed through the context's own queue, never through the plugin.
    queue->add_item([&driver = driver_, handle = handle_, destroy = destroy_] {
      destroy(driver, handle);
    });
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception("context resource destruction", error.what());
  }
}

template class ContextResource<CUstream>;
template class ContextResource<CUevent>;
template class ContextResource<CUmodule>;

Stream::Stream(Driver& driver, CUstream handle, std::weak_ptr<PendingDeallocs> queue)
    : ContextResource(driver, handle, std::move(queue),
                      [](Driver& d, CUstream s) { d.stream_destroy(s); }) {}

void Stream::synchronize() { driver().stream_synchronize(handle()); }

Event::Event(Driver& driver, CUevent handle, std::weak_ptr<PendingDeallocs> queue)
    : ContextResource(driver, handle, std::move(queue),
                      [](Driver& d, CUevent e) { d.event_destroy(e); }) {}

void Event::record(const Stream* stream) {
  driver().event_record(handle(), stream != nullptr ? stream->handle() : nullptr);
}

void Event::synchronize() { driver().event_synchronize(handle()); }

Module::Module(Driver& driver, CUmodule handle, std::weak_ptr<PendingDeallocs> queue)
    : ContextResource(driver, handle, std::move(queue),
                      [](Driver& d, CUmodule m) { d.module_unload(m); }) {}

}  // namespace emm
