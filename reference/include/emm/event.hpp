// emm/event.hpp — Event: a CUDA event of a context (context_resource.hpp: never through the
// plugin).
#pragma once

#include "emm/context_resource.hpp"
#include "emm/stream.hpp"

namespace emm {

class Event : public ContextResource<CUevent> {
 public:
  Event(Driver& driver, CUevent handle, std::weak_ptr<PendingDeallocs> queue);
  // Records on `stream`, or on the legacy default stream when null.
  void record(const Stream* stream = nullptr);
  void synchronize();
};

}  // namespace emm
