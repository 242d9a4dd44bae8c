// emm/context_resource.hpp — ContextResource: what streams, events and modules have in common:
// context resources that never go through the plugin (CTX-1). Created by Context; destroyed
// through the context's own deferred queue.
//
// Ownership: held by shared_ptr; the driver object is destroyed (queued) when the last
// reference goes. If the context is gone by then, it destroyed the object as it went and
// nothing is done. Thread-safety: destruction may happen on any thread (the queue locks).
#pragma once

#include <memory>

#include "emm/cuda_api.hpp"

namespace emm {

class PendingDeallocs;
class Driver;

// A driver handle plus a weak link to the owning context's queue.
template <class Handle>
class ContextResource {
 public:
  Handle handle() const noexcept { return handle_; }
  ContextResource(const ContextResource&) = delete;
  ContextResource& operator=(const ContextResource&) = delete;

 protected:
  using Destroy = void (*)(Driver&, Handle);
  ContextResource(Driver& driver, Handle handle, std::weak_ptr<PendingDeallocs> queue,
                  Destroy destroy)
      : driver_(driver), handle_(handle), queue_(std::move(queue)), destroy_(destroy) {}
  ~ContextResource();
  Driver& driver() const noexcept { return driver_; }

 private:
  Driver& driver_;
  Handle handle_;
  std::weak_ptr<PendingDeallocs> queue_;
  Destroy destroy_;
};

}  // namespace emm
