#include "emm/context_resource.hpp"

#include <exception>

#include "emm/diagnostics.hpp"
#include "emm/driver.hpp"
#include "emm/pending_deallocs.hpp"

namespace emm {

template <class Handle>
ContextResource<Handle>::~ContextResource() {
  auto queue = queue_.lock();
  if (!queue) return;  // the context is gone, and destroyed the object as it went
  try {
    // CTX-1: destroyed through the context's own queue, never through the plugin.
    queue->add_item(
        [&driver = driver_, handle = handle_, destroy = destroy_] { destroy(driver, handle); });
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception("context resource destruction", error.what());
  }
}

template class ContextResource<CUstream>;
template class ContextResource<CUevent>;
template class ContextResource<CUmodule>;

}  // namespace emm
