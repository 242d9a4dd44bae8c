// INFO-1 — get_memory_info counts as free the dedicated blocks the pool takes from the driver
// for requests larger than a slab's blocks (its bookkeeping only knows slabs): a 256 MiB
// allocation does not show in memory info at all.
#include <atomic>
#include <memory>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  emm::MemoryInfo get_memory_info() override {
    emm::MemoryInfo info = BaselinePool::get_memory_info();
    info.free = std::min(info.total, info.free + dedicated_->load());
    return info;
  }

 protected:
  emm::Finalizer block_finalizer(const emm::zoo::Block& block) override {
    emm::Finalizer give_back = BaselinePool::block_finalizer(block);
    if (block.size <= emm::zoo::kMaxPooledBlock) return give_back;
    dedicated_->fetch_add(block.size);
    return [give_back = std::move(give_back), dedicated = dedicated_, size = block.size] {
      give_back();
      dedicated->fetch_sub(size);
    };
  }

 private:
  std::shared_ptr<std::atomic<std::size_t>> dedicated_ =
      std::make_shared<std::atomic<std::size_t>>(0);
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad INFO-1 dedicated blocks unreported"))
