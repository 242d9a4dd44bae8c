// ALLOC-10 — declares itself thread-safe but adds an unsynchronised one-block cache in front of
// the pool (check, then act): under concurrent memalloc two threads take the same cached block
// (overlapping live allocations) and concurrent frees overwrite each other's block (lost).
// Every access is atomic, so the race corrupts the allocator's answers, never the process; the
// yield widens the window so that 8 threads hit it in practically every run.
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "baseline_pool.hpp"

namespace {

class CachingPool : public emm::zoo::SlabPool {
 public:
  emm::zoo::Block allocate(std::size_t size) override {
    std::shared_ptr<const emm::zoo::Block> cached = cached_.load();
    if (cached && cached->size >= block_size_for(size)) {
      std::this_thread::yield();
      cached_.store(nullptr);  // should have been compare_exchange
      return *cached;
    }
    return SlabPool::allocate(size);
  }
  void give_back(const emm::zoo::Block& block) override {
    if (!cached_.load() && !is_released(block)) {
      std::this_thread::yield();
      cached_.store(std::make_shared<const emm::zoo::Block>(block));  // may overwrite another
      return;
    }
    SlabPool::give_back(block);
  }
  void release_all() override {
    cached_.store(nullptr);
    SlabPool::release_all();
  }

 private:
  std::atomic<std::shared_ptr<const emm::zoo::Block>> cached_;
};

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context) : BaselinePool(context, std::make_shared<CachingPool>()) {}
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin,
                          emm::zoo::baseline_declaration("known-bad ALLOC-10 racy block cache"))
