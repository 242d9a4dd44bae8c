// NEP49-5 (handler lifetime): the handler's pool is set up by its factory, emm_nep49_handler(),
// and a second call sets it up again — as if the module were imported for the first time —
// forgetting the blocks it handed out. A program that imports the handler's module twice, or
// asks its factory again, gets new blocks on top of live ones.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "baseline_handler.hpp"

namespace {
struct alignas(16) Header {
  std::size_t capacity;
  Header* next;
};
constexpr std::size_t kArena = std::size_t{4} << 30;  // reserved, not committed
constexpr std::size_t kSmallest = 16;
constexpr int kClasses = 28;  // 16 B ... 2 GiB

struct Pool {
  std::mutex mutex;
  unsigned char* base = nullptr;  // guarded by mutex
  std::size_t used = 0;           // guarded by mutex
  Header* lists[kClasses] = {};   // guarded by mutex

  // The defect: called by every emm_nep49_handler(), not once.
  void set_up() {
    std::lock_guard lock(mutex);
    if (base == nullptr) {
      void* arena = ::mmap(nullptr, kArena, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      base = arena == MAP_FAILED ? nullptr : static_cast<unsigned char*>(arena);
    }
    used = 0;
    std::fill(std::begin(lists), std::end(lists), nullptr);
  }
};
Pool pool;

int class_of(std::size_t n) {
  int c = 0;
  for (std::size_t capacity = kSmallest; capacity < n; capacity <<= 1) ++c;
  return c;
}
Header* header(void* p) { return static_cast<Header*>(p) - 1; }

void* pool_malloc(void*, std::size_t n) noexcept {
  if (n > (kSmallest << (kClasses - 1))) return nullptr;
  const int c = class_of(std::max<std::size_t>(n, 1));
  std::lock_guard lock(pool.mutex);
  if (Header* h = pool.lists[c]) {
    pool.lists[c] = h->next;
    return h + 1;
  }
  const std::size_t bytes = sizeof(Header) + (kSmallest << c);
  if (pool.base == nullptr || bytes > kArena - pool.used) return nullptr;
  auto* h = reinterpret_cast<Header*>(pool.base + pool.used);
  pool.used += bytes;
  h->capacity = kSmallest << c;
  return h + 1;
}
void pool_free(void*, void* p, std::size_t) noexcept {
  if (p == nullptr) return;
  Header* h = header(p);
  std::lock_guard lock(pool.mutex);
  Header*& list = pool.lists[class_of(h->capacity)];
  h->next = list;
  list = h;
}
void* pool_calloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > SIZE_MAX / elsize) return nullptr;
  void* p = pool_malloc(ctx, nelem * elsize);
  if (p != nullptr) std::memset(p, 0, nelem * elsize);
  return p;
}
void* pool_realloc(void* ctx, void* p, std::size_t n) noexcept {
  if (p == nullptr) return pool_malloc(ctx, n);
  if (n <= header(p)->capacity) return p;
  void* q = pool_malloc(ctx, n);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, header(p)->capacity);
  pool_free(ctx, p, 0);
  return q;
}

emm::nep49::Handler handler{
    "zoo_factory_resets_pool", 1, {nullptr, pool_malloc, pool_calloc, pool_realloc, pool_free}};
}  // namespace

extern "C" __attribute__((visibility("default"))) emm::nep49::Handler* emm_nep49_handler() {
  pool.set_up();
  return &handler;
}
