// ALLOC-2 — the pool rounds a request down to a power of two instead of up, so a block is
// smaller than the request and neighbouring live allocations overlap.
#include <algorithm>
#include <bit>
#include <memory>

#include "baseline_pool.hpp"

namespace {

class RoundDownPool : public emm::zoo::SlabPool {
 protected:
  std::size_t block_size_for(std::size_t size) const override {
    if (size > emm::zoo::kMaxPooledBlock) return SlabPool::block_size_for(size);
    return std::max(emm::zoo::kMinBlock, std::bit_floor(size));
  }
};

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context)
      : BaselinePool(context, std::make_shared<RoundDownPool>()) {}
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad ALLOC-2 overlapping blocks"))
