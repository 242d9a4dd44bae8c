// ALLOC-3 — the request is rounded up to 256 bytes without an overflow check: a size near the top
// of size_t wraps round to a tiny one, and the plugin hands out a block for it instead of
// reporting out of memory.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override {
    const std::size_t rounded =
        (size + 255) & ~std::size_t{255};  // wraps for size > SIZE_MAX - 255
    const emm::zoo::Block block = pool().allocate(rounded);
    return std::make_shared<emm::AutoFreePointer>(context(), block.pointer, size, nullptr,
                                                  block_finalizer(block))
        ->own();
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-3 size rounding wraps near SIZE_MAX"))
