#include "emm/examples/slab_allocator.hpp"

#include <bit>
#include <cassert>

namespace emm::examples {
namespace {

constexpr std::size_t kDescriptorsPerChunk = 256;

unsigned floor_log2(std::size_t value) noexcept {
  return static_cast<unsigned>(std::bit_width(value)) - 1;
}

}  // namespace

SlabAllocator::Class SlabAllocator::class_of(std::size_t units) noexcept {
  if (units < kSubCount) return {0, static_cast<unsigned>(units)};
  const unsigned log2 = floor_log2(units);
  return {log2 - kSubLog2 + 1, static_cast<unsigned>(units >> (log2 - kSubLog2)) - kSubCount};
}

SlabAllocator::Class SlabAllocator::class_for_request(std::size_t units) noexcept {
  // Round up to the next class boundary, so that every block of the class found is large
  // enough and the first block of its list can be taken without a search.
  if (units >= kSubCount) units += (std::size_t{1} << (floor_log2(units) - kSubLog2)) - 1;
  return class_of(units);
}

SlabAllocator::Slab* SlabAllocator::add_slab(CUdeviceptr base, std::size_t size) {
  assert(base % kAlignment == 0 && size % kAlignment == 0 && size > 0);
  auto slab = std::make_unique<Slab>();
  slab->base = base;
  slab->size = size;
  Block* block = new_descriptor();
  block->address = base;
  block->size = size;
  block->slab = slab.get();
  slab->first = block;
  insert_free(block);
  slab_bytes_ += size;
  ++empty_slabs_;
  empty_slab_bytes_ += size;
  Slab* raw = slab.get();
  slabs_.emplace(base, std::move(slab));
  return raw;
}

void SlabAllocator::remove_slab(Slab* slab) {
  assert(slab->empty() && slab->first->free && slab->first->size == slab->size);
  remove_free(slab->first);
  recycle(slab->first);
  slab_bytes_ -= slab->size;
  --empty_slabs_;
  empty_slab_bytes_ -= slab->size;
  slabs_.erase(slab->base);
}

SlabAllocator::Block* SlabAllocator::allocate(std::size_t size) {
  assert(size > 0 && size <= kMaxBlockSize);
  size = round_up(size);
  Block* block = find_free(size);
  return block == nullptr ? nullptr : carve(block, size);
}

SlabAllocator::Block* SlabAllocator::allocate_from(Slab* slab, std::size_t size) {
  size = round_up(size);
  for (Block* block = slab->first; block != nullptr; block = block->next_physical) {
    if (block->free && block->size >= size) {
      remove_free(block);
      return carve(block, size);
    }
  }
  return nullptr;
}

SlabAllocator::Slab* SlabAllocator::free(Block* block) {
  assert(!block->free);
  Slab* slab = block->slab;
  slab->allocated_bytes -= block->size;
  --slab->allocated_blocks;
  allocated_bytes_ -= block->size;
  --allocated_blocks_;
  if (slab->allocated_blocks == 0) {
    ++empty_slabs_;
    empty_slab_bytes_ += slab->size;
  }
  block->free = true;

  if (Block* next = block->next_physical; next != nullptr && next->free) {
    remove_free(next);
    block->size += next->size;
    block->next_physical = next->next_physical;
    if (block->next_physical != nullptr) block->next_physical->prev_physical = block;
    recycle(next);
  }
  if (Block* prev = block->prev_physical; prev != nullptr && prev->free) {
    remove_free(prev);
    prev->size += block->size;
    prev->next_physical = block->next_physical;
    if (prev->next_physical != nullptr) prev->next_physical->prev_physical = prev;
    recycle(block);
    block = prev;
  }
  insert_free(block);
  return slab->empty() ? slab : nullptr;
}

const SlabAllocator::Slab* SlabAllocator::find_slab(CUdeviceptr address) const {
  auto it = slabs_.upper_bound(address);
  if (it == slabs_.begin()) return nullptr;
  --it;
  const Slab* slab = it->second.get();
  return address - slab->base < slab->size ? slab : nullptr;
}

std::vector<const SlabAllocator::Slab*> SlabAllocator::slabs() const {
  std::vector<const Slab*> result;
  result.reserve(slabs_.size());
  for (const auto& [base, slab] : slabs_) result.push_back(slab.get());
  return result;
}

std::vector<SlabAllocator::Slab*> SlabAllocator::empty_slabs() {
  std::vector<Slab*> result;
  for (const auto& [base, slab] : slabs_) {
    if (slab->empty()) result.push_back(slab.get());
  }
  return result;
}

void SlabAllocator::clear() {
  slabs_.clear();
  chunks_.clear();
  spare_ = nullptr;
  first_bitmap_ = 0;
  second_bitmap_.fill(0);
  for (auto& row : heads_) row.fill(nullptr);
  slab_bytes_ = allocated_bytes_ = allocated_blocks_ = free_blocks_ = empty_slabs_ = 0;
  empty_slab_bytes_ = 0;
}

std::size_t SlabAllocator::largest_free_block() const {
  std::size_t largest = 0;
  for (const auto& [base, slab] : slabs_) {
    for (const Block* block = slab->first; block != nullptr; block = block->next_physical) {
      if (block->free && block->size > largest) largest = block->size;
    }
  }
  return largest;
}

SlabAllocator::Block* SlabAllocator::find_free(std::size_t size) {
  Class c = class_for_request(size / kAlignment);
  if (c.first >= kFirstCount) return nullptr;
  std::uint32_t second_map = second_bitmap_[c.first] & (~std::uint32_t{0} << c.second);
  if (second_map == 0) {
    const std::uint64_t first_map =
        c.first + 1 < 64 ? first_bitmap_ & (~std::uint64_t{0} << (c.first + 1)) : 0;
    if (first_map == 0) return nullptr;
    c.first = static_cast<unsigned>(std::countr_zero(first_map));
    second_map = second_bitmap_[c.first];
  }
  c.second = static_cast<unsigned>(std::countr_zero(second_map));
  return take_from_class(c);
}

SlabAllocator::Block* SlabAllocator::take_from_class(Class c) {
  Block* block = heads_[c.first][c.second];
  remove_free(block);
  return block;
}

SlabAllocator::Block* SlabAllocator::carve(Block* block, std::size_t size) {
  if (block->size - size >= kAlignment) {
    Block* rest = new_descriptor();
    rest->address = block->address + size;
    rest->size = block->size - size;
    rest->slab = block->slab;
    rest->prev_physical = block;
    rest->next_physical = block->next_physical;
    if (rest->next_physical != nullptr) rest->next_physical->prev_physical = rest;
    block->next_physical = rest;
    block->size = size;
    insert_free(rest);
  }
  block->free = false;
  if (block->slab->allocated_blocks == 0) {
    --empty_slabs_;
    empty_slab_bytes_ -= block->slab->size;
  }
  block->slab->allocated_bytes += block->size;
  ++block->slab->allocated_blocks;
  allocated_bytes_ += block->size;
  ++allocated_blocks_;
  return block;
}

void SlabAllocator::insert_free(Block* block) noexcept {
  const Class c = class_of(block->size / kAlignment);
  Block*& head = heads_[c.first][c.second];
  block->free = true;
  block->prev_free = nullptr;
  block->next_free = head;
  if (head != nullptr) head->prev_free = block;
  head = block;
  second_bitmap_[c.first] |= std::uint32_t{1} << c.second;
  first_bitmap_ |= std::uint64_t{1} << c.first;
  ++free_blocks_;
}

void SlabAllocator::remove_free(Block* block) noexcept {
  const Class c = class_of(block->size / kAlignment);
  if (block->prev_free != nullptr) {
    block->prev_free->next_free = block->next_free;
  } else {
    heads_[c.first][c.second] = block->next_free;
  }
  if (block->next_free != nullptr) block->next_free->prev_free = block->prev_free;
  block->prev_free = block->next_free = nullptr;
  if (heads_[c.first][c.second] == nullptr) {
    second_bitmap_[c.first] &= ~(std::uint32_t{1} << c.second);
    if (second_bitmap_[c.first] == 0) first_bitmap_ &= ~(std::uint64_t{1} << c.first);
  }
  --free_blocks_;
}

SlabAllocator::Block* SlabAllocator::new_descriptor() {
  if (spare_ == nullptr) {
    auto chunk = std::make_unique<Block[]>(kDescriptorsPerChunk);
    for (std::size_t i = 0; i < kDescriptorsPerChunk; ++i) {
      chunk[i].next_free = spare_;
      spare_ = &chunk[i];
    }
    chunks_.push_back(std::move(chunk));
  }
  Block* block = spare_;
  spare_ = block->next_free;
  *block = Block{};
  return block;
}

void SlabAllocator::recycle(Block* block) noexcept {
  *block = Block{};
  block->next_free = spare_;
  spare_ = block;
}

}  // namespace emm::examples
