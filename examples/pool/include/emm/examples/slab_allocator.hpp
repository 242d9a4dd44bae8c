// emm/examples/slab_allocator.hpp — the bookkeeping half of the pool example: sub-allocation of
// device address ranges ("slabs") into 256-byte-aligned blocks.
//
// SlabAllocator never touches memory or the driver: it is given slabs (base, size) that
// someone else obtained (PoolMemoryManager gets them from cuMemAlloc), hands out blocks inside
// them, coalesces adjacent free blocks, and says when a slab has become entirely free so the
// owner can give it back. That makes it testable with plain integers (pool_test.cpp).
//
//   emm::examples::SlabAllocator slabs;
//   slabs.add_slab(base, 2 << 20);
//   SlabAllocator::Block* b = slabs.allocate(1000);  // b->address is 256-byte aligned
//   if (SlabAllocator::Slab* empty = slabs.free(b)) { /* every block of `empty` is free */ }
//
// Design (a two-level segregated fit, "TLSF"): free blocks sit on intrusive doubly linked lists,
// one per size class; classes are exact multiples of 256 bytes below 4 KiB and 16 classes per
// power of two above it, with two bitmaps to find the smallest non-empty class that fits in
// O(1). A request takes a block from the smallest class whose every block fits it (a good fit:
// at most 1/16 larger than a best fit), splits off the rest, and a freed block merges with its
// free physical neighbours at once. Block descriptors come from chunks that are recycled, so
// the steady state allocates no heap memory per block.
//
// Ownership: the allocator owns the descriptors (Block, Slab); pointers to them stay valid
// until the block is freed / the slab removed / clear(). Thread-safety: none; the owner locks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "emm/cuda_api.hpp"

namespace emm::examples {

class SlabAllocator {
 public:
  // Every block starts on, and is a multiple of, this many bytes (ALLOC-11: cuMemAlloc's
  // alignment). Slab bases must be aligned to it as well.
  static constexpr std::size_t kAlignment = 256;
  // The largest request allocate() accepts (larger ones cannot be rounded up without overflow).
  static constexpr std::size_t kMaxBlockSize = std::size_t{1} << 60;

  struct Slab;
  struct Block {
    CUdeviceptr address = 0;
    std::size_t size = 0;  // a multiple of kAlignment
    Slab* slab = nullptr;
    Block* prev_physical = nullptr;  // neighbours in address order within the slab
    Block* next_physical = nullptr;
    Block* prev_free = nullptr;  // free-list links (next_free also links spare descriptors)
    Block* next_free = nullptr;
    bool free = false;
  };
  struct Slab {
    CUdeviceptr base = 0;
    std::size_t size = 0;
    std::size_t allocated_bytes = 0;  // sum of the sizes of its blocks in use
    std::size_t allocated_blocks = 0;
    Block* first = nullptr;  // the block at `base`
    bool empty() const noexcept { return allocated_blocks == 0; }
  };

  SlabAllocator() = default;
  SlabAllocator(const SlabAllocator&) = delete;
  SlabAllocator& operator=(const SlabAllocator&) = delete;

  // `size` rounded up to kAlignment (requests are rounded before they reach the classes).
  static constexpr std::size_t round_up(std::size_t size) noexcept {
    return (size + kAlignment - 1) & ~(kAlignment - 1);
  }

  // Registers [base, base + size) as one free block. base and size must be multiples of
  // kAlignment and the range must not overlap a slab already added.
  Slab* add_slab(CUdeviceptr base, std::size_t size);
  // Removes an empty slab (slab->empty()); its memory is the caller's again.
  void remove_slab(Slab* slab);

  // A block of at least `size` bytes (1 <= size <= kMaxBlockSize), or null when no free block
  // is large enough.
  Block* allocate(std::size_t size);
  // Like allocate(), but only from `slab` (the slab the caller has just added for it).
  Block* allocate_from(Slab* slab, std::size_t size);
  // Returns `block` to its slab, merging it with free neighbours. Returns the slab when it is
  // now entirely free, else null. `block` must not be used afterwards.
  Slab* free(Block* block);

  // The slab containing `address`, or null.
  const Slab* find_slab(CUdeviceptr address) const;
  // Every slab, in address order.
  std::vector<const Slab*> slabs() const;
  // The slabs with no block in use, in address order (candidates to give back).
  std::vector<Slab*> empty_slabs();
  // Forgets every slab and block (after the owner released the memory, e.g. reset()).
  void clear();

  std::size_t slab_count() const noexcept { return slabs_.size(); }
  std::size_t empty_slab_count() const noexcept { return empty_slabs_; }
  std::size_t empty_slab_bytes() const noexcept { return empty_slab_bytes_; }  // their sizes
  std::size_t slab_bytes() const noexcept { return slab_bytes_; }
  std::size_t allocated_bytes() const noexcept { return allocated_bytes_; }
  std::size_t allocated_blocks() const noexcept { return allocated_blocks_; }
  std::size_t free_bytes() const noexcept { return slab_bytes_ - allocated_bytes_; }
  std::size_t free_block_count() const noexcept { return free_blocks_; }
  // Size of the largest free block (0 when none); a linear scan, for tests and statistics.
  std::size_t largest_free_block() const;

 private:
  // Size classes: units of kAlignment; below 2^kLinearLog2 units one class per unit, above it
  // 2^kSubLog2 classes per power of two.
  static constexpr unsigned kSubLog2 = 4;
  static constexpr unsigned kSubCount = 1u << kSubLog2;
  static constexpr unsigned kFirstCount = 64 - kSubLog2;

  struct Class {
    unsigned first;
    unsigned second;
  };
  static Class class_of(std::size_t units) noexcept;           // the class a free block goes to
  static Class class_for_request(std::size_t units) noexcept;  // the first class that fits

  Block* take_from_class(Class c);
  Block* find_free(std::size_t size);
  Block* carve(Block* block, std::size_t size);
  void insert_free(Block* block) noexcept;
  void remove_free(Block* block) noexcept;
  Block* new_descriptor();
  void recycle(Block* block) noexcept;

  std::uint64_t first_bitmap_ = 0;
  std::array<std::uint32_t, kFirstCount> second_bitmap_{};
  std::array<std::array<Block*, kSubCount>, kFirstCount> heads_{};

  std::map<CUdeviceptr, std::unique_ptr<Slab>> slabs_;
  std::vector<std::unique_ptr<Block[]>> chunks_;
  Block* spare_ = nullptr;
  std::size_t slab_bytes_ = 0;
  std::size_t allocated_bytes_ = 0;
  std::size_t allocated_blocks_ = 0;
  std::size_t free_blocks_ = 0;
  std::size_t empty_slabs_ = 0;
  std::size_t empty_slab_bytes_ = 0;
};

}  // namespace emm::examples
