// NEP49-5 (handler lifetime): each call of the factory, emm_nep49_handler(), makes a handler with
// a pool of its own and retires the one made before ("one live handler at a time"): its pool is
// unmapped and it refuses every request. But arrays keep the handler they were made with
// (NumPy holds each array's handler): their memory is gone, and the first handler stops working.
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
  unsigned char* base = nullptr;  // guarded by mutex; null once retired
  std::size_t used = 0;           // guarded by mutex
  Header* lists[kClasses] = {};   // guarded by mutex
};

// A handler and its pool; never deleted (NumPy may still hold the struct).
struct Instance {
  emm::nep49::Handler handler;
  Pool pool;
};
std::mutex factory;
Instance* current = nullptr;  // guarded by factory

int class_of(std::size_t n) {
  int c = 0;
  for (std::size_t capacity = kSmallest; capacity < n; capacity <<= 1) ++c;
  return c;
}
Header* header(void* p) { return static_cast<Header*>(p) - 1; }

void* pool_malloc(void* ctx, std::size_t n) noexcept {
  Pool& pool = *static_cast<Pool*>(ctx);
  if (n > (kSmallest << (kClasses - 1))) return nullptr;
  const int c = class_of(std::max<std::size_t>(n, 1));
  std::lock_guard lock(pool.mutex);
  if (pool.base == nullptr) return nullptr;  // retired
  if (Header* h = pool.lists[c]) {
    pool.lists[c] = h->next;
    return h + 1;
  }
  const std::size_t bytes = sizeof(Header) + (kSmallest << c);
  if (bytes > kArena - pool.used) return nullptr;
  auto* h = reinterpret_cast<Header*>(pool.base + pool.used);
  pool.used += bytes;
  h->capacity = kSmallest << c;
  return h + 1;
}
void pool_free(void* ctx, void* p, std::size_t) noexcept {
  Pool& pool = *static_cast<Pool*>(ctx);
  if (p == nullptr) return;
  std::lock_guard lock(pool.mutex);
  if (pool.base == nullptr) return;  // retired: its memory is gone already
  Header* h = header(p);
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

void retire(Instance& instance) {
  std::lock_guard lock(instance.pool.mutex);
  ::munmap(instance.pool.base, kArena);
  instance.pool.base = nullptr;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) emm::nep49::Handler* emm_nep49_handler() {
  std::lock_guard lock(factory);
  if (current != nullptr) retire(*current);  // the defect
  auto* made = new Instance{{"zoo_factory_retires_previous",
                             1,
                             {nullptr, pool_malloc, pool_calloc, pool_realloc, pool_free}},
                            {}};
  made->handler.allocator.ctx = &made->pool;
  void* arena = ::mmap(nullptr, kArena, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  made->pool.base = arena == MAP_FAILED ? nullptr : static_cast<unsigned char*>(arena);
  current = made;
  return &made->handler;
}
