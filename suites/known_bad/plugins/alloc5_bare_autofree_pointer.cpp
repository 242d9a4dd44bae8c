// ALLOC-5 — memalloc returns the bare AutoFreePointer (refct 0) instead of its own(), so the
// first view dropped frees the buffer.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override {
    const emm::zoo::Block block = pool().allocate(size);
    return std::make_shared<emm::AutoFreePointer>(context(), block.pointer, size, nullptr,
                                                  block_finalizer(block));
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad ALLOC-5 bare AutoFreePointer"))
