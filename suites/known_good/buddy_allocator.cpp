// buddy_allocator — a correct power-of-two buddy allocator over large chunks (spec §7).
//
// A request takes the smallest block of 256 << k bytes that holds it. Blocks come from 8 MiB
// chunks of cuMemAlloc memory (a larger request gets a chunk of its own, a power of two): a
// free block of a higher order is split in halves until one has the order wanted, and a
// released block merges with its buddy (the other half of their parent) as long as that one is
// free too. Chunks are kept until reset(); on out of memory the empty ones are freed before the
// one retry (NBEP 7). Releases go through the HostOnly parent's pending-deallocation queue
// (deferred_finalizer), so a block released inside defer_cleanup is not handed out again until
// the queue flushes after the scope.
//
// Thread-safety: one mutex over the chunks; the driver is called outside it.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "buddy_allocator_declaration.hpp"
#include "common/device_blocks.hpp"
#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/get_ipc_handle_mixin.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/plugin_abi.hpp"

namespace emm::known_good {
namespace {

constexpr std::size_t kMinBlock = kDriverAlignment;  // order 0: every block stays 256-aligned
constexpr std::size_t kChunkBytes = std::size_t{8} << 20;
// The largest order whose block size fits in a std::size_t.
constexpr unsigned kMaxOrder = std::countl_zero(kMinBlock);

// The order of the smallest block holding `bytes` (> 0) bytes.
unsigned order_for(std::size_t bytes) {
  const std::size_t blocks = bytes / kMinBlock + (bytes % kMinBlock != 0 ? 1 : 0);
  return static_cast<unsigned>(std::bit_width(blocks - 1));
}

constexpr std::size_t block_bytes(unsigned order) { return kMinBlock << order; }

struct Block {
  CUdeviceptr chunk;
  std::size_t offset;
  unsigned order;
  std::uint64_t generation;
};

// One cuMemAlloc block of block_bytes(top) bytes. free[k] holds the offsets of its free blocks
// of order k; a block and its buddy are never both free (they would have merged).
struct Chunk {
  unsigned top;
  std::vector<std::set<std::size_t>> free;
  std::size_t used = 0;  // bytes handed out or waiting in the parent's queue
};

// Shared with the finalizers, which may run after reset() or after the plugin is gone (LIFE-8).
// Every member is guarded by `mutex`; add_chunk() and take() expect it held, the others take it.
class Buddies {
 public:
  std::mutex mutex;
  std::map<CUdeviceptr, Chunk> chunks;  // by base address
  std::uint64_t generation = 0;         // reset() bumps it: blocks of older ones are gone

  void add_chunk(CUdeviceptr base, unsigned top) {
    Chunk& chunk = chunks[base];
    chunk.top = top;
    chunk.free.resize(top + 1);
    chunk.free[top].insert(0);
  }

  // A block of `order` from the first chunk that has one, splitting a larger one if needed.
  std::optional<Block> take(unsigned order) {
    for (auto& [base, chunk] : chunks) {
      unsigned k = order;
      while (k <= chunk.top && chunk.free[k].empty()) ++k;
      if (k > chunk.top) continue;
      const std::size_t offset = *chunk.free[k].begin();
      chunk.free[k].erase(chunk.free[k].begin());
      // Split: keep the lower half, free the upper one, down to the order asked for.
      while (k > order) {
        --k;
        chunk.free[k].insert(offset + block_bytes(k));
      }
      chunk.used += block_bytes(order);
      return Block{base, offset, order, generation};
    }
    return std::nullopt;
  }

  // What a finalizer does once the parent's queue runs it.
  void release(const Block& block) {
    std::lock_guard lock(mutex);
    if (block.generation != generation) return;  // reset() freed its chunk already
    Chunk& chunk = chunks.at(block.chunk);
    chunk.used -= block_bytes(block.order);
    std::size_t offset = block.offset;
    unsigned k = block.order;
    // Coalesce: while the buddy (the offset with bit k flipped) is free, merge into the parent.
    while (k < chunk.top && chunk.free[k].erase(offset ^ block_bytes(k)) == 1) {
      offset &= ~block_bytes(k);
      ++k;
    }
    chunk.free[k].insert(offset);
  }

  // Removes the chunks with nothing handed out and returns their bases, for the caller to free.
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

  // Forgets every chunk, live blocks included, and returns their bases, for the caller to free.
  std::vector<CUdeviceptr> take_all_chunks() {
    std::lock_guard lock(mutex);
    std::vector<CUdeviceptr> all;
    for (const auto& entry : chunks) all.push_back(entry.first);
    chunks.clear();
    ++generation;
    return all;
  }
};

class BuddyAllocator : public GetIpcHandleMixin<HostOnlyCUDAMemoryManager> {
 public:
  using GetIpcHandleMixin::GetIpcHandleMixin;  // no CUDA call here (REG-2, LIFE-4)

  ~BuddyAllocator() override {
    if (context() == nullptr) return;  // the version probe (REG-2) allocated nothing
    try {
      free_device_blocks(driver(), buddies_->take_all_chunks());
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("known-good buddy allocator destructor", error.what());
    }
  }

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override {
    const unsigned order = order_for(size);
    if (order > kMaxOrder) {
      throw CudaDriverError(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
                            "no power-of-two block of that size fits in the address space");
    }
    std::optional<Block> block;
    {
      std::lock_guard lock(buddies_->mutex);
      block = buddies_->take(order);
    }
    if (!block) block = grow_and_take(order);

    const CUdeviceptr pointer = block->chunk + block->offset;
    const auto key = static_cast<std::uintptr_t>(pointer);
    auto give_back = [buddies = std::weak_ptr<Buddies>(buddies_), block = *block] {
      if (auto alive = buddies.lock()) alive->release(block);
    };
    try {
      return std::make_shared<MemoryPointer>(context(), pointer, size, nullptr,
                                             deferred_finalizer(key, give_back, size));
    } catch (...) {
      give_back();
      throw;
    }
  }

  MemoryInfo get_memory_info() override { return driver().mem_get_info(); }

  void reset() override {
    HostOnlyCUDAMemoryManager::reset();  // NBEP 7: the parent releases the host side
    free_device_blocks(driver(), buddies_->take_all_chunks());
  }

  int interface_version() const override { return kSupportedInterfaceVersion; }

 private:
  // A new chunk big enough for `order`, then the take (which cannot fail: the chunk is free).
  Block grow_and_take(unsigned order) {
    Driver& driver = this->driver();
    const unsigned top = std::max(order, order_for(kChunkBytes));
    CUdeviceptr base = 0;
    try {
      base = driver.mem_alloc(block_bytes(top));
    } catch (const CudaDriverError& error) {
      if (error.code() != CUDA_ERROR_OUT_OF_MEMORY) throw;
      // NBEP 7: on out of memory, flush the pending releases (they rejoin their chunks), free
      // the chunks left empty and retry once; a second failure reaches the caller (ALLOC-3).
      deallocations().clear();
      free_device_blocks(driver, buddies_->take_empty_chunks());
      base = driver.mem_alloc(block_bytes(top));
    }
    std::lock_guard lock(buddies_->mutex);
    buddies_->add_chunk(base, top);
    return *buddies_->take(order);
  }

  std::shared_ptr<Buddies> buddies_ = std::make_shared<Buddies>();
};

}  // namespace
}  // namespace emm::known_good

EMM_EXPORT_MEMORY_MANAGER(emm::known_good::BuddyAllocator,
                          emm::known_good::kBuddyAllocatorDeclaration)
