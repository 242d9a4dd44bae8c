// Known good: a cache of blocks by size class (16 B to 1 MiB, a mutex over the lists), larger
// blocks from libc. Each block records its class in a header, so the size free is given (NumPy's
// best guess) decides nothing; calloc clears every byte it hands out; realloc stays in place while
// the class holds the new size, and leaves the block alone when it cannot grow it.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "baseline_handler.hpp"

namespace {
struct alignas(16) Header {
  std::size_t capacity;  // the bytes its class holds; above kLargest, the bytes asked for
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

void* take(std::size_t n) noexcept {
  if (n > kLargest) {
    if (n > SIZE_MAX / 2) return nullptr;
    auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + n));
    if (h == nullptr) return nullptr;
    h->capacity = n;
    return h + 1;
  }
  const int c = class_of(std::max<std::size_t>(n, 1));
  {
    std::lock_guard lock(mutex);
    if (Header* h = lists[c]) {
      lists[c] = h->next;
      --counts[c];
      return h + 1;
    }
  }
  auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + (kSmallest << c)));
  if (h == nullptr) return nullptr;
  h->capacity = kSmallest << c;
  return h + 1;
}

void give_back(Header* h) noexcept {
  if (h->capacity <= kLargest) {
    const int c = class_of(h->capacity);
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

void* classes_malloc(void*, std::size_t n) noexcept { return take(n); }
void* classes_calloc(void*, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > SIZE_MAX / elsize) return nullptr;
  void* p = take(nelem * elsize);
  if (p != nullptr) std::memset(p, 0, nelem * elsize);
  return p;
}
void* classes_realloc(void* ctx, void* p, std::size_t n) noexcept {
  if (p == nullptr) return classes_malloc(ctx, n);
  Header* h = header(p);
  if (n <= h->capacity && h->capacity <= kLargest) return p;
  void* q = take(n);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, std::min(h->capacity, n));
  give_back(h);
  return q;
}
void classes_free(void*, void* p, std::size_t) noexcept {
  if (p != nullptr) give_back(header(p));
}
}  // namespace

EMM_ZOO_HANDLER("zoo_good_size_classes", 1, classes_malloc, classes_calloc, classes_realloc,
                classes_free)
