// ALLOC-1 — requests up to 64 bytes are packed into 4 KiB arenas at 8-byte granularity: one
// small allocation alone gets the arena's start (256-byte aligned), but while several are alive
// the later ones are only 8-byte aligned (NBEP 7 / cuMemAlloc: 16 at least).
#include <map>
#include <memory>
#include <mutex>

#include "baseline_pool.hpp"

namespace {

class SmallPackingPool : public emm::zoo::SlabPool {
 public:
  static constexpr std::size_t kSmall = 64;
  static constexpr std::size_t kArena = 4096;
  static constexpr std::size_t kGranule = 8;

  emm::zoo::Block allocate(std::size_t size) override {
    if (size > kSmall) return SlabPool::allocate(size);
    const std::size_t rounded = (size + kGranule - 1) / kGranule * kGranule;
    std::lock_guard lock(arena_mutex_);
    if (current_ == 0 || arenas_.at(current_).used + rounded > kArena) {
      const emm::zoo::Block whole = SlabPool::allocate(kArena);
      arenas_.emplace(whole.pointer, Arena{whole});
      current_ = whole.pointer;
    }
    Arena& arena = arenas_.at(current_);
    emm::zoo::Block block = arena.whole;
    block.pointer = arena.whole.pointer + arena.used;
    block.size = rounded;
    arena.used += rounded;
    ++arena.live;
    return block;
  }

  void give_back(const emm::zoo::Block& block) override {
    {
      std::lock_guard lock(arena_mutex_);
      auto it = arenas_.upper_bound(block.pointer);
      if (it != arenas_.begin() && block.size <= kSmall) {
        --it;
        Arena& arena = it->second;
        if (block.pointer < arena.whole.pointer + kArena &&
            block.generation == arena.whole.generation) {
          if (--arena.live > 0) return;
          // Empty: back to the slab pool like any block (the baseline keeps nothing it no longer
          // hands out), so that the defect is the alignment alone.
          if (it->first == current_) current_ = 0;
          const emm::zoo::Block whole = arena.whole;
          arenas_.erase(it);
          SlabPool::give_back(whole);
          return;
        }
      }
    }
    SlabPool::give_back(block);
  }

  void release_all() override {
    {
      std::lock_guard lock(arena_mutex_);
      arenas_.clear();
      current_ = 0;
    }
    SlabPool::release_all();
  }

 private:
  struct Arena {
    emm::zoo::Block whole;
    std::size_t used = 0;
    std::size_t live = 0;
  };
  std::mutex arena_mutex_;
  std::map<CUdeviceptr, Arena> arenas_;  // by start
  CUdeviceptr current_ = 0;
};

class Plugin : public emm::zoo::BaselinePool {
 public:
  explicit Plugin(emm::Context* context)
      : BaselinePool(context, std::make_shared<SmallPackingPool>()) {}
};

}  // namespace

EMM_EXPORT_MEMORY_MANAGER(
    Plugin, emm::zoo::baseline_declaration("known-bad ALLOC-1 small blocks 8-byte aligned"))
