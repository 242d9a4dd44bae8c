// NEP49-7 (SHOULD): nelem * elsize wraps around, and a short block comes back.
#include <cstring>

#include "baseline_handler.hpp"

namespace {
void* wrapping_calloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept {
  void* p = zoo::malloc(ctx, nelem * elsize);
  if (p != nullptr) std::memset(p, 0, nelem * elsize);
  return p;
}
}  // namespace

EMM_ZOO_HANDLER("zoo_calloc_overflow", 1, zoo::malloc, wrapping_calloc, zoo::realloc, zoo::free)
