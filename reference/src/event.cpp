#include "emm/event.hpp"

#include "emm/driver.hpp"

namespace emm {

Event::Event(Driver& driver, CUevent handle, std::weak_ptr<PendingDeallocs> queue)
    : ContextResource(driver, handle, std::move(queue),
                      [](Driver& d, CUevent e) { d.event_destroy(e); }) {}

void Event::record(const Stream* stream) {
  driver().event_record(handle(), stream != nullptr ? stream->handle() : nullptr);
}

void Event::synchronize() { driver().event_synchronize(handle()); }

}  // namespace emm
