// slab_pool.hpp — SlabPool: the small device-memory pool behind the known-bad zoo's baseline.
//
// A slab allocator, as real EMM pools are: requests up to kMaxPooledBlock bytes are rounded up
// to a power-of-two block size (at least kMinBlock, so every block is 256-byte aligned) and
// carved out of 2 MiB slabs that each hold blocks of one size; larger requests get a slab of
// their own with a single block. Every slab is one cuMemAlloc block, so the driver's IPC handle
// of a block is its slab's and the offset is `block - slab` (IPC-1, IPC-2).
//
// A slab whose last block comes back is freed to the driver at once — unless the pool is held
// (defer_cleanup, DEFER-4): then empty slabs stay allocated until the last hold ends. reset()
// (release_all) frees every slab and starts a new generation; a block returned later finds its
// slab gone and is ignored (LIFE-8).
//
// The zoo's defects derive from this class and override one hook (the protected members are
// there for them to read). Ownership: held by shared_ptr by the manager *and* by every
// finalizer it hands out, so late finalizers outlive the manager safely. The driver is kept
// alive the same way. Thread-safety: every public member is safe to call concurrently.
//
//   auto pool = std::make_shared<emm::zoo::SlabPool>();
//   pool->attach(driver);
//   emm::zoo::Block b = pool->allocate(4096);   // b.pointer is 256-byte aligned
//   pool->give_back(b);                         // the slab is empty: cuMemFree
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "emm/driver.hpp"

namespace emm::zoo {

inline constexpr std::size_t kSlabSize = std::size_t{2} << 20;
inline constexpr std::size_t kMinBlock = 256;
inline constexpr std::size_t kMaxPooledBlock = std::size_t{256} << 10;

// One block handed out by the pool. A plain value: finalizers copy it.
struct Block {
  CUdeviceptr slab = 0;     // base of the cuMemAlloc block it lies in
  CUdeviceptr pointer = 0;  // what the caller gets
  std::size_t size = 0;     // the block size (>= the request)
  std::uint64_t generation = 0;
};

struct PoolStatistics {
  std::size_t slab_bytes = 0;  // held from the driver
  std::size_t free_bytes = 0;  // inside slabs, not handed out
  std::size_t slab_count = 0;
  std::size_t live_blocks = 0;
};

class SlabPool {
 public:
  SlabPool() = default;
  virtual ~SlabPool() = default;
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;

  // Gives the pool its driver (the manager's constructor; no CUDA call).
  void attach(std::shared_ptr<Driver> driver);

  // A block of at least `size` bytes; allocates a slab when none has room. Driver errors
  // (CUDA_ERROR_OUT_OF_MEMORY) propagate unchanged (ALLOC-3).
  virtual Block allocate(std::size_t size);
  // Returns a block (the finalizer). A block whose slab reset() released is ignored (LIFE-8).
  virtual void give_back(const Block& block);
  // Frees every slab and starts a new generation (reset()).
  virtual void release_all();

  // defer_cleanup: while held, emptied slabs are kept; the last unhold() frees them.
  void hold();
  virtual void unhold();
  bool held() const;

  // True when reset() released the slab `block` lies in.
  bool is_released(const Block& block) const;
  PoolStatistics statistics() const;

 protected:
  struct Slab {
    CUdeviceptr base = 0;
    std::size_t size = 0;
    std::size_t block_size = 0;
    std::uint64_t generation = 0;
    std::size_t next_unused = 0;           // blocks [next_unused, count) never handed out
    std::vector<std::size_t> free_blocks;  // returned block indices (a stack)
    std::size_t live = 0;
    std::size_t block_count() const { return size / block_size; }
    bool has_room() const { return !free_blocks.empty() || next_unused < block_count(); }
  };

  // The block size a request of `size` bytes gets.
  virtual std::size_t block_size_for(std::size_t size) const;
  // Frees every slab with no live block (mutex_ held).
  void release_empty_slabs_locked();
  void free_slab_locked(std::map<CUdeviceptr, Slab>::iterator slab);

  mutable std::mutex mutex_;
  std::shared_ptr<Driver> driver_;
  std::map<CUdeviceptr, Slab> slabs_;  // by base
  std::uint64_t generation_ = 1;
  int holds_ = 0;
};

}  // namespace emm::zoo
