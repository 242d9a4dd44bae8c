// emm/module.hpp — Module: a loaded CUDA module of a context (context_resource.hpp: never through
// the plugin).
#pragma once

#include "emm/context_resource.hpp"

namespace emm {

class Module : public ContextResource<CUmodule> {
 public:
  Module(Driver& driver, CUmodule handle, std::weak_ptr<PendingDeallocs> queue);
};

}  // namespace emm
