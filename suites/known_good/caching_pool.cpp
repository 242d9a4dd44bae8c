// caching_pool — a correct caching pool that trims only at reset() (spec §7).
//
// Requests are rounded to 256 bytes and carved first-fit from 4 MiB chunks of cuMemAlloc memory
// (a larger request gets a chunk of its own size). A released block goes back to its chunk's
// free ranges, merged with its free neighbours; a chunk that becomes empty is kept for the next
// request. Chunks are returned to the driver only by reset() and, on out of memory, the empty
// ones before the one retry (NBEP 7). get_memory_info() is pool-level: the driver's free bytes
// plus the bytes idle in the pool's chunks.
//
// HostOnly-derived: the parent serves host memory; defer_cleanup() holds the parent's guard and
// keeps device blocks released inside the scope out of the pool ("quarantined") until the
// outermost guard ends, so no block can be handed out again while deferred work may use it.
//
// Thread-safety: one mutex over the pool; the driver is called outside it.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "caching_pool_declaration.hpp"
#include "common/device_blocks.hpp"
#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/get_ipc_handle_mixin.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/plugin_abi.hpp"

namespace emm::known_good {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

// A range handed out: where it lies, so that releasing it needs no search, and the pool
// generation it belongs to.
struct Block {
  CUdeviceptr chunk;
  std::size_t offset;
  std::size_t length;
  std::uint64_t generation;
};

// One cuMemAlloc block: its free ranges (offset -> length; adjacent ranges are always merged)
// and how many of its bytes are handed out or quarantined.
struct Chunk {
  std::size_t size;
  std::map<std::size_t, std::size_t> free;
  std::size_t used = 0;
};

// Shared with the finalizers, which may run after reset() or after the plugin is gone (LIFE-8).
// Every member is guarded by `mutex`; carve() and put_back() expect it held, the others take it.
class Pool {
 public:
  std::mutex mutex;
  std::map<CUdeviceptr, Chunk> chunks;  // by base address
  std::vector<Block> quarantine;        // released while a defer_cleanup guard lived
  int holds = 0;                        // live defer_cleanup guards
  std::uint64_t generation = 0;         // reset() bumps it: blocks of older ones are gone

  // First fit, lowest chunk and lowest offset first; null when no free range is long enough.
  std::optional<Block> carve(std::size_t length) {
    for (auto& [base, chunk] : chunks) {
      for (auto range = chunk.free.begin(); range != chunk.free.end(); ++range) {
        const auto [offset, free_length] = *range;
        if (free_length < length) continue;
        chunk.free.erase(range);
        if (free_length > length) chunk.free.emplace(offset + length, free_length - length);
        chunk.used += length;
        return Block{base, offset, length, generation};
      }
    }
    return std::nullopt;
  }

  void put_back(const Block& block) {
    Chunk& chunk = chunks.at(block.chunk);
    chunk.used -= block.length;
    const auto range = chunk.free.emplace(block.offset, block.length).first;
    // Merge with the following range, then with the preceding one.
    if (auto next = std::next(range);
        next != chunk.free.end() && range->first + range->second == next->first) {
      range->second += next->second;
      chunk.free.erase(next);
    }
    if (range != chunk.free.begin()) {
      if (auto previous = std::prev(range); previous->first + previous->second == range->first) {
        previous->second += range->second;
        chunk.free.erase(range);
      }
    }
  }

  // What a finalizer does: back into the pool, or into quarantine while deferred.
  void release(const Block& block) {
    std::lock_guard lock(mutex);
    if (block.generation != generation) return;  // reset() freed its chunk already
    if (holds > 0) {
      quarantine.push_back(block);
    } else {
      put_back(block);
    }
  }

  void end_hold() {
    std::lock_guard lock(mutex);
    if (--holds > 0) return;
    for (const Block& block : quarantine) put_back(block);
    quarantine.clear();
  }

  // Removes the chunks nothing is carved from and returns their bases, for the caller to free.
  std::vector<CUdeviceptr> take_empty_chunks() {
    std::lock_guard lock(mutex);
    std::vector<CUdeviceptr> empty;
    std::erase_if(chunks, [&empty](const auto& entry) {
      if (entry.second.used != 0) return false;
      empty.push_back(entry.first);
      return true;
    });
    return empty;
  }

  // Forgets every chunk (live blocks included) and returns their bases, for the caller to free.
  std::vector<CUdeviceptr> take_all_chunks() {
    std::lock_guard lock(mutex);
    std::vector<CUdeviceptr> all;
    for (const auto& entry : chunks) all.push_back(entry.first);
    chunks.clear();
    quarantine.clear();
    ++generation;
    return all;
  }
};

class CachingPool : public GetIpcHandleMixin<HostOnlyCUDAMemoryManager> {
 public:
  using GetIpcHandleMixin::GetIpcHandleMixin;  // no CUDA call here (REG-2, LIFE-4)

  ~CachingPool() override {
    if (context() == nullptr) return;  // the version probe (REG-2) allocated nothing
    try {
      free_device_blocks(driver(), pool_->take_all_chunks());
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("known-good caching pool destructor", error.what());
    }
  }

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    const std::size_t length = round_up(size, kDriverAlignment);
    std::optional<Block> block;
    {
      std::lock_guard lock(pool_->mutex);
      block = pool_->carve(length);
    }
    if (!block) block = grow_and_carve(length);

    const CUdeviceptr pointer = block->chunk + block->offset;
    auto give_back = [pool = std::weak_ptr<Pool>(pool_), block = *block] {
      if (auto alive = pool.lock()) alive->release(block);
    };
    try {
      return std::make_shared<MemoryPointer>(context(), pointer, size, nullptr, give_back);
    } catch (...) {
      give_back();
      throw;
    }
  }

  MemoryInfo get_memory_info() override {
    MemoryInfo info = driver().mem_get_info();
    std::size_t idle = 0;
    {
      std::lock_guard lock(pool_->mutex);
      for (const auto& entry : pool_->chunks) idle += entry.second.size - entry.second.used;
    }
    // Idle pool bytes are free to this plugin's callers, though the driver counts them as used.
    info.free = std::min(info.total, info.free + idle);
    return info;
  }

  void reset() override {
    HostOnlyCUDAMemoryManager::reset();  // NBEP 7: the parent releases the host side
    free_device_blocks(driver(), pool_->take_all_chunks());
  }

  CleanupGuard defer_cleanup() override {
    CleanupGuard parent = HostOnlyCUDAMemoryManager::defer_cleanup();  // DEFER-3
    {
      std::lock_guard lock(pool_->mutex);
      ++pool_->holds;
    }
    return CleanupGuard(
        [pool = std::weak_ptr<Pool>(pool_)] {
          if (auto alive = pool.lock()) alive->end_hold();
        },
        std::move(parent));
  }

  int interface_version() const override { return kSupportedInterfaceVersion; }

 private:
  // A new chunk for `length` bytes, then the carve (which cannot fail: the new chunk is free).
  Block grow_and_carve(std::size_t length) {
    Driver& driver = this->driver();
    const std::size_t bytes = std::max(kChunkBytes, length);
    CUdeviceptr base = 0;
    try {
      base = driver.mem_alloc(bytes);
    } catch (const CudaDriverError& error) {
      if (error.code() != CUDA_ERROR_OUT_OF_MEMORY) throw;
      // NBEP 7: on out of memory, flush what is cached (the empty chunks) and retry once.
      free_device_blocks(driver, pool_->take_empty_chunks());
      base = driver.mem_alloc(bytes);
    }
    std::lock_guard lock(pool_->mutex);
    Chunk& chunk = pool_->chunks[base];
    chunk.size = bytes;
    chunk.free.emplace(0, bytes);
    return *pool_->carve(length);
  }

  std::shared_ptr<Pool> pool_ = std::make_shared<Pool>();
};

}  // namespace
}  // namespace emm::known_good

EMM_EXPORT_MEMORY_MANAGER(emm::known_good::CachingPool, emm::known_good::kCachingPoolDeclaration)
