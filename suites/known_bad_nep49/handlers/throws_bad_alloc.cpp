// NEP49-14: malloc uses operator new, whose std::bad_alloc escapes into NumPy's C code.
#include <new>

#include "baseline_handler.hpp"

namespace {
struct alignas(16) Header {
  std::size_t size;
};

void* throwing_malloc(void*, std::size_t n) {
  // The defect: new throws instead of returning NULL (and the function is not noexcept).
  auto* h = static_cast<Header*>(::operator new(n < SIZE_MAX / 2 ? sizeof(Header) + n : n));
  h->size = n;
  return h + 1;
}
void* header_realloc(void* ctx, void* p, std::size_t n) noexcept {
  if (n > SIZE_MAX / 2) return nullptr;
  void* q = nullptr;
  try {
    q = throwing_malloc(ctx, n);
  } catch (...) {
    return nullptr;
  }
  const std::size_t old = (static_cast<Header*>(p) - 1)->size;
  __builtin_memcpy(q, p, old < n ? old : n);
  ::operator delete(static_cast<Header*>(p) - 1);
  return q;
}
void* header_calloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > SIZE_MAX / 4 / elsize) return nullptr;
  void* p = nullptr;
  try {
    p = throwing_malloc(ctx, nelem * elsize);
  } catch (...) {
    return nullptr;
  }
  __builtin_memset(p, 0, nelem * elsize);
  return p;
}
void header_free(void*, void* p, std::size_t) noexcept {
  if (p != nullptr) ::operator delete(static_cast<Header*>(p) - 1);
}
}  // namespace

EMM_ZOO_HANDLER("zoo_throws_bad_alloc", 1, throwing_malloc, header_calloc, header_realloc,
                header_free)
