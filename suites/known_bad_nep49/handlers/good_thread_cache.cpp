// Known good: a cache of small blocks per thread, as glibc's tcache does it: a freed block goes
// to the cache of the thread that frees it (whoever made it), so no cache is ever touched by two
// threads and none needs a lock; a thread's cache is given back to libc when the thread ends.
// Each block records its class in a header, so NumPy's free size decides nothing.
#include <algorithm>
#include <cstring>

#include "baseline_handler.hpp"

namespace {
struct alignas(16) Header {
  std::size_t capacity;  // the bytes its class holds; above kCached, the bytes asked for
  Header* next;          // in a thread's cache
};
constexpr std::size_t kSmallest = 16;
constexpr std::size_t kCached = 4096;
constexpr int kClasses = 9;  // 16 ... 4096
constexpr int kKeep = 32;    // cached blocks per class and thread

int class_of(std::size_t n) {
  int c = 0;
  for (std::size_t capacity = kSmallest; capacity < n; capacity <<= 1) ++c;
  return c;
}
Header* header(void* p) { return static_cast<Header*>(p) - 1; }

struct ThreadCache {
  Header* lists[kClasses] = {};
  int counts[kClasses] = {};
  ~ThreadCache() {
    for (Header* list : lists) {
      while (list != nullptr) {
        Header* next = list->next;
        std::free(list);
        list = next;
      }
    }
  }
};
ThreadCache& cache() {
  thread_local ThreadCache mine;
  return mine;
}

void* cache_malloc(void*, std::size_t n) noexcept {
  if (n > SIZE_MAX / 2) return nullptr;
  if (n <= kCached) {
    const int c = class_of(std::max<std::size_t>(n, 1));
    ThreadCache& mine = cache();
    if (Header* h = mine.lists[c]) {
      mine.lists[c] = h->next;
      --mine.counts[c];
      return h + 1;
    }
    auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + (kSmallest << c)));
    if (h == nullptr) return nullptr;
    h->capacity = kSmallest << c;
    return h + 1;
  }
  auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + n));
  if (h == nullptr) return nullptr;
  h->capacity = n;
  return h + 1;
}
void cache_free(void*, void* p, std::size_t) noexcept {
  if (p == nullptr) return;
  Header* h = header(p);
  if (h->capacity <= kCached) {
    ThreadCache& mine = cache();
    const int c = class_of(h->capacity);
    if (mine.counts[c] < kKeep) {
      h->next = mine.lists[c];
      mine.lists[c] = h;
      ++mine.counts[c];
      return;
    }
  }
  std::free(h);
}
void* cache_calloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > SIZE_MAX / elsize) return nullptr;
  void* p = cache_malloc(ctx, nelem * elsize);
  if (p != nullptr) std::memset(p, 0, nelem * elsize);
  return p;
}
void* cache_realloc(void* ctx, void* p, std::size_t n) noexcept {
  if (p == nullptr) return cache_malloc(ctx, n);
  Header* h = header(p);
  if (n <= h->capacity && h->capacity <= kCached) return p;
  void* q = cache_malloc(ctx, n);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, std::min(h->capacity, n));
  cache_free(ctx, p, 0);
  return q;
}
}  // namespace

EMM_ZOO_HANDLER("zoo_good_thread_cache", 1, cache_malloc, cache_calloc, cache_realloc, cache_free)
