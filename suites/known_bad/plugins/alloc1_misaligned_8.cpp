// ALLOC-1 — the pool keeps an 8-byte header in front of each block, so pointers are only
// 8-byte aligned (ALLOC-1 requires 16; ALLOC-11's 256 fails too).
#include <memory>

#include "baseline_pool.hpp"

namespace {

class HeaderPool : public emm::zoo::SlabPool {
 public:
  static constexpr std::size_t kHeader = 8;
  emm::zoo::Block allocate(std::size_t size) override {
    emm::zoo::Block block = SlabPool::allocate(size + kHeader);
    block.pointer += kHeader;
    return block;
  }
  void give_back(const emm::zoo::Block& block) override {
    emm::zoo::Block whole = block;
    whole.pointer -= kHeader;
    SlabPool::give_back(whole);
  }
};

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context) : BaselinePool(context, std::make_shared<HeaderPool>()) {}
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-1 8-byte aligned pointers"))
