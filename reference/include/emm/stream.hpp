// emm/stream.hpp — Stream: a CUDA stream of a context (context_resource.hpp: never through the
// plugin).
#pragma once

#include "emm/context_resource.hpp"

namespace emm {

class Stream : public ContextResource<CUstream> {
 public:
  Stream(Driver& driver, CUstream handle, std::weak_ptr<PendingDeallocs> queue);
  void synchronize();
};

}  // namespace emm
