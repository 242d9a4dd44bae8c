// ALLOC-11 — the pool keeps a 16-byte header in front of each block, so pointers are only
// 16-byte aligned: ALLOC-1 (16) holds, the SHOULD of 256 bytes does not (verdict stays
// CERTIFIED).
#include <memory>

#include "baseline_pool.hpp"

namespace {

class HeaderPool : public emm::zoo::SlabPool {
 public:
  static constexpr std::size_t kHeader = 16;
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
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-11 16-byte aligned pointers"))
