// ALLOC-10 — declares itself thread-safe, but 256-byte requests are bumped out of a 4 KiB arena
// with an unsynchronised read-then-write of the arena's fill mark: two threads allocating at the
// same moment read the same mark and get the same block. Frees and arena changes are locked, so
// the race shows only while threads allocate together. Arenas are kept until reset(), so the
// plugin declares no_caching=false; nor are they given back when memory runs out, which ALLOC-3
// finds as well (spec §8 (c): the fill's last request fits only after reset()). Every access is
// atomic (the race corrupts the allocator's
// answers, never the process); the yield widens the window.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "baseline_pool.hpp"

namespace {

class BumpArenaPool : public emm::zoo::SlabPool {
 public:
  static constexpr std::size_t kSmall = 256;
  static constexpr std::size_t kArena = 4096;

  emm::zoo::Block allocate(std::size_t size) override {
    if (size > kSmall) return SlabPool::allocate(size);
    for (;;) {
      std::shared_ptr<Arena> arena = current_.load();
      if (arena) {
        const std::size_t used = arena->used.load();
        if (used + kSmall <= kArena) {
          std::this_thread::yield();
          arena->used.store(used + kSmall);  // should have been compare_exchange
          emm::zoo::Block block = arena->whole;
          block.pointer += used;
          block.size = kSmall;
          return block;
        }
      }
      std::lock_guard lock(arena_mutex_);
      if (current_.load() != arena) continue;  // another thread opened a new arena
      auto fresh = std::make_shared<Arena>(SlabPool::allocate(kArena));
      arenas_.emplace(fresh->whole.pointer, fresh);
      current_.store(fresh);
    }
  }

  void give_back(const emm::zoo::Block& block) override {
    {
      std::lock_guard lock(arena_mutex_);
      auto it = arenas_.upper_bound(block.pointer);
      if (it != arenas_.begin() && std::prev(it)->first + kArena > block.pointer) return;
    }
    SlabPool::give_back(block);  // pooled blocks, and arena blocks from before a reset()
  }

  void release_all() override {
    {
      std::lock_guard lock(arena_mutex_);
      arenas_.clear();
      current_.store(nullptr);
    }
    SlabPool::release_all();
  }

 private:
  struct Arena {
    explicit Arena(const emm::zoo::Block& block) : whole(block) {}
    emm::zoo::Block whole;
    std::atomic<std::size_t> used{0};
  };
  std::mutex arena_mutex_;
  std::map<CUdeviceptr, std::shared_ptr<Arena>> arenas_;  // by start; kept until reset()
  std::atomic<std::shared_ptr<Arena>> current_;
};

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context)
      : BaselinePool(context, std::make_shared<BumpArenaPool>()) {}
};

constexpr emm::PluginDeclaration declaration() {
  emm::PluginDeclaration declaration =
      emm::zoo::baseline_declaration("known-bad ALLOC-10 racy bump arena");
  declaration.capabilities.no_caching = false;
  return declaration;
}

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(Plugin, declaration())
