// LIFE-7 — reset() drops the pool's slab table without freeing the slabs: they leak.
#include <memory>
#include <mutex>

#include "baseline_pool.hpp"

namespace {

class ForgetfulPool : public emm::zoo::SlabPool {
 public:
  void release_all() override {
    std::lock_guard lock(mutex_);
    slabs_.clear();
    ++generation_;
  }
};

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context)
      : BaselinePool(context, std::make_shared<ForgetfulPool>()) {}
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad LIFE-7 reset leaks its slabs"))
