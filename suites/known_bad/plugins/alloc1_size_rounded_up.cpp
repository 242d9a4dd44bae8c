// ALLOC-1 — memalloc(n) returns a pointer whose size() is n rounded up to 256 bytes, not n.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override {
    return BaselinePool::memalloc((size + 255) / 256 * 256);
  }
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad ALLOC-1 size rounded up"))
