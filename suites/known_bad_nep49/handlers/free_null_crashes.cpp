// NEP49-10: free reads a header in front of the pointer, also when the pointer is NULL.
#include "baseline_handler.hpp"

namespace {
struct alignas(16) Header {
  std::size_t size;
};

void* header_malloc(void*, std::size_t n) noexcept {
  auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + n));
  if (h == nullptr) return nullptr;
  h->size = n;
  return h + 1;
}
void* header_calloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > SIZE_MAX / elsize - sizeof(Header)) return nullptr;
  auto* h = static_cast<Header*>(std::calloc(1, sizeof(Header) + nelem * elsize));
  (void)ctx;
  if (h == nullptr) return nullptr;
  h->size = nelem * elsize;
  return h + 1;
}
void* header_realloc(void*, void* p, std::size_t n) noexcept {
  if (n > SIZE_MAX - sizeof(Header)) return nullptr;
  auto* h = static_cast<Header*>(std::realloc(static_cast<Header*>(p) - 1, sizeof(Header) + n));
  if (h == nullptr) return nullptr;
  h->size = n;
  return h + 1;
}
void header_free(void*, void* p, std::size_t) noexcept {
  Header* h = static_cast<Header*>(p) - 1;
  volatile std::size_t recorded = h->size;  // the defect: no NULL check
  (void)recorded;
  std::free(h);
}
}  // namespace

EMM_ZOO_HANDLER("zoo_free_null_crashes", 1, header_malloc, header_calloc, header_realloc,
                header_free)
