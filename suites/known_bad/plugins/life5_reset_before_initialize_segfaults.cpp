// LIFE-5 — reset() updates a statistics object that only initialize() creates, so reset() as
// the very first call dereferences a null pointer (a real segfault: outcome crash).
#include <memory>

#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  void initialize() override {
    BaselinePool::initialize();
    if (!statistics_) statistics_ = std::make_unique<Statistics>();
  }
  void reset() override {
    statistics_->resets += 1;
    BaselinePool::reset();
  }

 private:
  struct Statistics {
    long resets = 0;
  };
  std::unique_ptr<Statistics> statistics_;
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad LIFE-5 reset before initialize segfaults"))
