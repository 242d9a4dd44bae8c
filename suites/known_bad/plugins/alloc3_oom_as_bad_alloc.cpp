// ALLOC-3 — out of device memory is reported as std::bad_alloc instead of CudaDriverError
// with CUDA_ERROR_OUT_OF_MEMORY.
#include <new>

#include "baseline_pool.hpp"
#include "emm/errors.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override {
    try {
      return BaselinePool::memalloc(size);
    } catch (const emm::CudaDriverError& error) {
      if (error.code() == CUDA_ERROR_OUT_OF_MEMORY) throw std::bad_alloc();
      throw;
    }
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad ALLOC-3 OOM as bad_alloc"))
