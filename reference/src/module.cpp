#include "emm/module.hpp"

#include "emm/driver.hpp"

namespace emm {

Module::Module(Driver& driver, CUmodule handle, std::weak_ptr<PendingDeallocs> queue)
    : ContextResource(driver, handle, std::move(queue),
                      [](Driver& d, CUmodule m) { d.module_unload(m); }) {}

}  // namespace emm
