// emm/stream.hpp — Stream, Event and Module: context resources that never go through the
// plugin (CTX-1). Created by Context; destroyed through the context's own deferred queue.
//
// Ownership: shared_ptr; the driver object is destroyed (queued) when the last reference goes.
// If the context is gone by then, it destroyed the object as it went and nothing is done.
#pragma once

#include "emm/cuda_api.hpp"

#include <memory>

namespace emm {

class PendingDeallocs;
class Driver;

// Base for the three: a driver handle plus a weak link to the owning context's queue.
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

class Stream : public ContextResource<CUstream> {
 public:
  Stream(Driver& driver, CUstream handle, std::weak_ptr<PendingDeallocs> queue);
  void synchronize();
};

class Event : public ContextResource<CUevent> {
 public:
  Event(Driver& driver, CUevent handle, std::weak_ptr<PendingDeallocs> queue);
  void record(const Stream* stream = nullptr);
  void synchronize();
};

class Module : public ContextResource<CUmodule> {
 public:
  Module(Driver& driver, CUmodule handle, std::weak_ptr<PendingDeallocs> queue);
};

}  // namespace emm
