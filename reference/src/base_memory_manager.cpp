#include "emm/base_memory_manager.hpp"

#include "emm/context.hpp"
#include "emm/errors.hpp"

namespace emm {

std::shared_ptr<MemoryPointer> BaseCUDAMemoryManager::memallocmanaged(std::size_t /*size*/,
                                                                      bool /*attach_global*/) {
  throw NotImplementedError(
      "memallocmanaged is not implemented by this memory manager: derive from "
      "HostOnlyCUDAMemoryManager, or override memallocmanaged(size, attach_global), and declare "
      "managed_memory=true");
}

Driver& BaseCUDAMemoryManager::driver() const {
  if (context_ == nullptr) {
    // REG-2: the version-probe instance has no context and must make no CUDA call.
    throw Error(
        "this memory manager has no context (it is the instance set_memory_manager builds to "
        "read interface_version()); do CUDA work in initialize(), not in the constructor");
  }
  return context_->driver();
}

}  // namespace emm
