#include "emm/stream.hpp"

#include "emm/driver.hpp"

namespace emm {

Stream::Stream(Driver& driver, CUstream handle, std::weak_ptr<PendingDeallocs> queue)
    : ContextResource(driver, handle, std::move(queue),
                      [](Driver& d, CUstream s) { d.stream_destroy(s); }) {}

void Stream::synchronize() { driver().stream_synchronize(handle()); }

}  // namespace emm
