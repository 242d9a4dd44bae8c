// LIFE-6 — reset() of a running pool shuts it down for good: memalloc afterwards throws, even
// after a new initialize().
#include <atomic>

#include "baseline_pool.hpp"
#include "emm/errors.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  void initialize() override {
    BaselinePool::initialize();
    running_ = true;
  }
  void reset() override {
    BaselinePool::reset();
    if (running_) closed_ = true;
  }
  std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override {
    if (closed_) throw emm::Error("memalloc: the pool was closed by reset()");
    return BaselinePool::memalloc(size);
  }

 private:
  std::atomic<bool> running_{false};
  std::atomic<bool> closed_{false};
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad LIFE-6 unusable after reset"))
