// ALLOC-3 — out of device memory is swallowed: memalloc returns a pointer to device address 0
// instead of throwing CudaDriverError with CUDA_ERROR_OUT_OF_MEMORY.
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
      if (error.code() != CUDA_ERROR_OUT_OF_MEMORY) throw;
      return std::make_shared<emm::MemoryPointer>(context(), CUdeviceptr{0}, size);
    }
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-3 OOM returns a null pointer"))
