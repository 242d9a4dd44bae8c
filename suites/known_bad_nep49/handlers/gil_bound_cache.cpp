// NEP49-13 (contention): a cache of small blocks (up to 512 bytes) whose free lists take no lock:
// malloc, calloc and free run under the GIL, which the author took to protect them. But NumPy's
// text reader calls realloc without the GIL, and realloc takes and returns blocks through the
// same lists: two threads in realloc at once, or one in realloc while another frees, take the
// same block or lose one.
#include <algorithm>
#include <cstring>

#include "baseline_handler.hpp"

namespace {
struct alignas(16) Header {
  std::size_t capacity;
  Header* next;
};
constexpr std::size_t kSmallest = 16;
constexpr std::size_t kCached = 512;
constexpr int kClasses = 6;  // 16 ... 512

Header* lists[kClasses];  // "guarded by the GIL" (the defect: realloc runs without it)

int class_of(std::size_t n) {
  int c = 0;
  for (std::size_t capacity = kSmallest; capacity < n; capacity <<= 1) ++c;
  return c;
}
Header* header(void* p) { return static_cast<Header*>(p) - 1; }

void* cache_malloc(void*, std::size_t n) noexcept {
  if (n > SIZE_MAX / 2) return nullptr;
  if (n <= kCached) {
    const int c = class_of(std::max<std::size_t>(n, 1));
    if (Header* h = lists[c]) {
      lists[c] = h->next;
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
    const int c = class_of(h->capacity);
    h->next = lists[c];
    lists[c] = h;
    return;
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
  // In place within the block's size class; to another class, the block moves (as jemalloc's
  // realloc does), smaller ones too, so that a shrunk array gives its memory back.
  const std::size_t capacity = header(p)->capacity;
  if (n <= capacity &&
      (capacity > kCached || class_of(std::max<std::size_t>(n, 1)) == class_of(capacity))) {
    return p;
  }
  void* q = cache_malloc(ctx, n);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, std::min(capacity, n));
  cache_free(ctx, p, 0);
  return q;
}
}  // namespace

EMM_ZOO_HANDLER("zoo_gil_bound_cache", 1, cache_malloc, cache_calloc, cache_realloc, cache_free)
