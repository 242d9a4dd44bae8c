// ALLOC-1 (crash) — memalloc counts hits in a statistics block that is never created: a real
// null-pointer write (SIGSEGV) in every allocation. emm-certify must report `crash` for the
// clauses that allocate and still complete the report.
#include "baseline_pool.hpp"

namespace {

class Plugin : public emm::zoo::BaselinePool {
 public:
  using BaselinePool::BaselinePool;
  std::shared_ptr<emm::MemoryPointer> memalloc(std::size_t size) override {
    statistics_->allocations += 1;
    return BaselinePool::memalloc(size);
  }

 private:
  struct Statistics {
    long allocations = 0;
  };
  Statistics* volatile statistics_ = nullptr;
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad crash: memalloc segfaults"))
