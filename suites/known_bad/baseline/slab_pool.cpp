#include "slab_pool.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <utility>

namespace emm::zoo {

void SlabPool::attach(std::shared_ptr<Driver> driver) {
  std::lock_guard lock(mutex_);
  driver_ = std::move(driver);
}

std::size_t SlabPool::block_size_for(std::size_t size) const {
  if (size <= kMaxPooledBlock) return std::max(kMinBlock, std::bit_ceil(size));
  if (size > std::numeric_limits<std::size_t>::max() - kMinBlock) return size;  // driver: OOM
  return (size + kMinBlock - 1) / kMinBlock * kMinBlock;
}

Block SlabPool::allocate(std::size_t size) {
  const std::size_t block_size = block_size_for(size);
  std::lock_guard lock(mutex_);
  auto slab = std::find_if(slabs_.begin(), slabs_.end(), [&](const auto& entry) {
    return entry.second.block_size == block_size && entry.second.has_room();
  });
  if (slab == slabs_.end()) {
    const std::size_t slab_size = block_size <= kMaxPooledBlock ? kSlabSize : block_size;
    const CUdeviceptr base = driver_->mem_alloc(slab_size);
    Slab fresh;
    fresh.base = base;
    fresh.size = slab_size;
    fresh.block_size = block_size;
    fresh.generation = generation_;
    slab = slabs_.emplace(base, std::move(fresh)).first;
  }
  Slab& s = slab->second;
  std::size_t index = 0;
  if (!s.free_blocks.empty()) {
    index = s.free_blocks.back();
    s.free_blocks.pop_back();
  } else {
    index = s.next_unused++;
  }
  ++s.live;
  return Block{.slab = s.base,
               .pointer = s.base + index * s.block_size,
               .size = s.block_size,
               .generation = s.generation};
}

void SlabPool::give_back(const Block& block) {
  std::lock_guard lock(mutex_);
  auto slab = slabs_.find(block.slab);
  // LIFE-8: reset() already freed this slab (and maybe a new slab reuses its address).
  if (slab == slabs_.end() || slab->second.generation != block.generation) return;
  Slab& s = slab->second;
  s.free_blocks.push_back((block.pointer - s.base) / s.block_size);
  --s.live;
  if (s.live == 0 && holds_ == 0) free_slab_locked(slab);
}

void SlabPool::release_all() {
  std::lock_guard lock(mutex_);
  // Free everything even if one free fails; report the first failure afterwards.
  std::exception_ptr first_error;
  for (auto& [base, slab] : slabs_) {
    try {
      driver_->mem_free(base);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  slabs_.clear();
  ++generation_;
  if (first_error) std::rethrow_exception(first_error);
}

void SlabPool::hold() {
  std::lock_guard lock(mutex_);
  ++holds_;
}

void SlabPool::unhold() {
  std::lock_guard lock(mutex_);
  if (--holds_ == 0) release_empty_slabs_locked();  // DEFER-4: the deferred frees run now
}

bool SlabPool::held() const {
  std::lock_guard lock(mutex_);
  return holds_ > 0;
}

bool SlabPool::is_released(const Block& block) const {
  std::lock_guard lock(mutex_);
  auto slab = slabs_.find(block.slab);
  return slab == slabs_.end() || slab->second.generation != block.generation;
}

PoolStatistics SlabPool::statistics() const {
  std::lock_guard lock(mutex_);
  PoolStatistics statistics;
  for (const auto& [base, slab] : slabs_) {
    statistics.slab_bytes += slab.size;
    statistics.free_bytes += slab.size - slab.live * slab.block_size;
    statistics.live_blocks += slab.live;
  }
  statistics.slab_count = slabs_.size();
  return statistics;
}

void SlabPool::release_empty_slabs_locked() {
  for (auto slab = slabs_.begin(); slab != slabs_.end();) {
    auto next = std::next(slab);
    if (slab->second.live == 0) free_slab_locked(slab);
    slab = next;
  }
}

void SlabPool::free_slab_locked(std::map<CUdeviceptr, Slab>::iterator slab) {
  const CUdeviceptr base = slab->first;
  slabs_.erase(slab);
  driver_->mem_free(base);
}

}  // namespace emm::zoo
