// NEP49-15: an "xmalloc" that aborts the process instead of returning NULL, so NumPy never gets
// to raise MemoryError.
#include "baseline_handler.hpp"

namespace {
void* xmalloc(void* ctx, std::size_t n) noexcept {
  void* p = zoo::malloc(ctx, n);
  if (p == nullptr) std::abort();
  return p;
}
void* xcalloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept {
  void* p = zoo::calloc(ctx, nelem, elsize);
  if (p == nullptr) std::abort();
  return p;
}
void* xrealloc(void* ctx, void* p, std::size_t n) noexcept {
  void* q = zoo::realloc(ctx, p, n);
  if (q == nullptr) std::abort();
  return q;
}
}  // namespace

EMM_ZOO_HANDLER("zoo_abort_on_null", 1, xmalloc, xcalloc, xrealloc, zoo::free)
