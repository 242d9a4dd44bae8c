// LIFE-8 — requests larger than a slab's blocks bypass the pool: each is its own cuMemAlloc,
// freed by its finalizer with cuMemFree unconditionally. reset() leaves them to their finalizers
// (legal: LIFE-7 counts after the caller's release), but a pointer released after the context
// was destroyed still calls cuMemFree, on memory the destroyed context took with it: the driver
// refuses and the finalizer throws.
#include <memory>

#include "baseline_pool.hpp"
#include "emm/context.hpp"
#include "emm/runtime.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override {
    if (size <= emm::zoo::kMaxPooledBlock) return BaselinePool::memalloc(size);
    std::shared_ptr<emm::Driver> driver = context()->runtime().shared_driver();
    const CUdeviceptr pointer = driver->mem_alloc(size);
    return std::make_shared<emm::AutoFreePointer>(context(), pointer, size, nullptr,
                                                  [driver, pointer] { driver->mem_free(pointer); })
        ->own();
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad LIFE-8 cuMemFree after the context went"))
