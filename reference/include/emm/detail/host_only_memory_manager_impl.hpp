// Template members of HostOnlyCUDAMemoryManager.
#pragma once

#include "emm/errors.hpp"

namespace emm {

template <class F>
auto HostOnlyCUDAMemoryManager::attempt_allocation(F&& allocate) -> decltype(allocate()) {
  try {
    return allocate();
  } catch (const CudaDriverError& error) {
    if (error.code() != CUDA_ERROR_OUT_OF_MEMORY) throw;
  }
  // NBEP 7 / DEALLOC-6: flush pending frees and retry exactly once. clear() is a no-op inside
  // defer_cleanup, so the retry then happens without a flush, as in Numba.
  state_->deallocations.clear();
  return allocate();
}

}  // namespace emm
