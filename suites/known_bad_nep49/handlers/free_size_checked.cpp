// NEP49-11: free trusts its size argument and aborts when it differs from the allocated size
// (the sizes NumPy passes are a best guess).
#include "baseline_handler.hpp"

namespace {
struct alignas(16) Header {
  std::size_t size;
};

void* sized_malloc(void*, std::size_t n) noexcept {
  if (n > SIZE_MAX - sizeof(Header)) return nullptr;
  auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + n));
  if (h == nullptr) return nullptr;
  h->size = n;
  return h + 1;
}
void* sized_calloc(void*, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > (SIZE_MAX - sizeof(Header)) / elsize) return nullptr;
  auto* h = static_cast<Header*>(std::calloc(1, sizeof(Header) + nelem * elsize));
  if (h == nullptr) return nullptr;
  h->size = nelem * elsize;
  return h + 1;
}
void* sized_realloc(void*, void* p, std::size_t n) noexcept {
  if (n > SIZE_MAX - sizeof(Header)) return nullptr;
  auto* h = static_cast<Header*>(std::realloc(static_cast<Header*>(p) - 1, sizeof(Header) + n));
  if (h == nullptr) return nullptr;
  h->size = n;
  return h + 1;
}
void sized_free(void*, void* p, std::size_t n) noexcept {
  if (p == nullptr) return;
  Header* h = static_cast<Header*>(p) - 1;
  if (h->size != n) std::abort();  // the defect
  std::free(h);
}
}  // namespace

EMM_ZOO_HANDLER("zoo_free_size_checked", 1, sized_malloc, sized_calloc, sized_realloc, sized_free)
