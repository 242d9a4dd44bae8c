// FIN-1 — a free list that lists a released block twice when its block size is a multiple of
// the 4 KiB page (a "page-aligned fast path" that pushes the block, then falls through to the
// general push): the block is counted out once, so the slab stays consistent, but the pool
// hands it out twice. Blocks of other sizes are released correctly, so a FIN-1 that releases
// only small odd sizes certifies it.
#include "baseline_pool.hpp"

namespace {

class PageMultipleListedTwice : public emm::zoo::SlabPool {
 public:
  void give_back(const emm::zoo::Block& block) override {
    SlabPool::give_back(block);
    if (block.size % 4096 != 0) return;
    std::lock_guard lock(mutex_);
    auto slab = slabs_.find(block.slab);
    if (slab == slabs_.end() || slab->second.generation != block.generation) return;
    slab->second.free_blocks.push_back((block.pointer - slab->second.base) /
                                       slab->second.block_size);
  }
};

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context)
      : BaselinePool(context, std::make_shared<PageMultipleListedTwice>()) {}
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad FIN-1 page-multiple block listed twice"))
