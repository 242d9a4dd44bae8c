// NEP49-11 (free size, small blocks): a cache of blocks by size class (16 B to 1 MiB) whose
// calloc clears only the bytes the block's owners used — as many as free was told, at most — to
// save clearing what was never written. NumPy's free size is a best guess (1 for a block of 8 or
// 80): the rest of the block keeps its old bytes, and np.zeros returns them.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "baseline_handler.hpp"

namespace {
struct alignas(16) Header {
  std::size_t capacity;  // the bytes its class holds; above kLargest, the bytes asked for
  std::size_t dirty;     // the most bytes an owner used, as free was told (the defect)
  Header* next;          // in its class's free list
};
constexpr std::size_t kSmallest = 16;
constexpr std::size_t kLargest = std::size_t{1} << 20;
constexpr int kClasses = 17;  // 16 B ... 1 MiB
constexpr int kKeep = 64;     // cached blocks per class

std::mutex mutex;
Header* lists[kClasses];  // guarded by mutex
int counts[kClasses];     // guarded by mutex

int class_of(std::size_t n) {
  int c = 0;
  for (std::size_t capacity = kSmallest; capacity < n; capacity <<= 1) ++c;
  return c;
}
Header* header(void* p) { return static_cast<Header*>(p) - 1; }

void* take(std::size_t n, bool zeroed) noexcept {
  if (n > kLargest) {
    if (n > SIZE_MAX / 2) return nullptr;
    auto* h = static_cast<Header*>(zeroed ? std::calloc(1, sizeof(Header) + n)
                                          : std::malloc(sizeof(Header) + n));
    if (h == nullptr) return nullptr;
    h->capacity = n;
    h->dirty = 0;
    return h + 1;
  }
  const int c = class_of(std::max<std::size_t>(n, 1));
  Header* h = nullptr;
  {
    std::lock_guard lock(mutex);
    if ((h = lists[c]) != nullptr) {
      lists[c] = h->next;
      --counts[c];
    }
  }
  if (h != nullptr) {
    if (zeroed) std::memset(h + 1, 0, std::min(h->dirty, n));  // what owners used, as told
    return h + 1;
  }
  h = static_cast<Header*>(std::calloc(1, sizeof(Header) + (kSmallest << c)));
  if (h == nullptr) return nullptr;
  h->capacity = kSmallest << c;
  h->dirty = 0;
  return h + 1;
}

void give_back(Header* h, std::size_t used) noexcept {
  if (h->capacity > kLargest) {
    std::free(h);
    return;
  }
  h->dirty = std::max(h->dirty, std::min(used, h->capacity));
  const int c = class_of(h->capacity);
  {
    std::lock_guard lock(mutex);
    if (counts[c] < kKeep) {
      h->next = lists[c];
      lists[c] = h;
      ++counts[c];
      return;
    }
  }
  std::free(h);
}

void* cache_malloc(void*, std::size_t n) noexcept { return take(n, false); }
void* cache_calloc(void*, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > SIZE_MAX / elsize) return nullptr;
  return take(nelem * elsize, true);
}
void* cache_realloc(void* ctx, void* p, std::size_t n) noexcept {
  if (p == nullptr) return cache_malloc(ctx, n);
  Header* h = header(p);
  if (n <= h->capacity && h->capacity <= kLargest) return p;
  void* q = take(n, false);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, std::min(h->capacity, n));
  give_back(h, h->capacity);
  return q;
}
void cache_free(void*, void* p, std::size_t n) noexcept {
  if (p != nullptr) give_back(header(p), n);
}
}  // namespace

EMM_ZOO_HANDLER("zoo_calloc_clears_freed_size", 1, cache_malloc, cache_calloc, cache_realloc,
                cache_free)
