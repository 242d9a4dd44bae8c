// examples/pool/detail/recycling_allocator.hpp — a per-thread recycler for the pool's pointer
// objects (internal to the pool example).
//
// Every memalloc makes one object: the PoolPointer and its shared_ptr control block, in one piece
// (std::allocate_shared). RecyclingAllocator keeps freed pieces of one size on a free list of the
// freeing thread and hands them out again, so a steady alloc/free pair makes no heap allocation.
// A piece freed on another thread joins that thread's list; each list keeps at most kMaxPieces,
// and a thread that exits frees its own.
//
//   auto p = std::allocate_shared<PoolPointer>(RecyclingAllocator<PoolPointer>(), ...);
//
// Thread-safety: each list is touched only by its own thread.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace emm::examples::detail {

template <std::size_t Size>
class PieceRecycler {
 public:
  static void* take() noexcept {
    Recycler* list = instance();
    if (list == nullptr || list->head == nullptr) return nullptr;
    Piece* piece = list->head;
    list->head = piece->next;
    --list->count;
    return piece;
  }
  static bool put(void* memory) noexcept {
    Recycler* list = instance();
    if (list == nullptr || list->count >= kMaxPieces) return false;
    list->head = ::new (memory) Piece{list->head};
    ++list->count;
    return true;
  }

 private:
  static constexpr std::size_t kMaxPieces = 256;
  struct Piece {
    Piece* next;
  };
  struct Recycler {
    Recycler() = default;
    Recycler(const Recycler&) = delete;
    Recycler& operator=(const Recycler&) = delete;
    ~Recycler() {
      destroyed = true;
      while (head != nullptr) ::operator delete(std::exchange(head, head->next));
    }
    Piece* head = nullptr;
    std::size_t count = 0;
  };
  static_assert(Size >= sizeof(Piece));
  // Set at thread exit: pieces released by later thread_local destructors are simply deleted.
  static inline thread_local bool destroyed = false;
  static Recycler* instance() noexcept {
    if (destroyed) return nullptr;
    thread_local Recycler list;
    return &list;
  }
};

template <class T>
struct RecyclingAllocator {
  using value_type = T;
  RecyclingAllocator() = default;
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>& /*other*/) noexcept {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    if (n == 1) {
      if (void* memory = PieceRecycler<sizeof(T)>::take()) return static_cast<T*>(memory);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* memory, std::size_t n) noexcept {
    if (n == 1 && PieceRecycler<sizeof(T)>::put(memory)) return;
    ::operator delete(memory);
  }
  template <class U>
  bool operator==(const RecyclingAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

}  // namespace emm::examples::detail
