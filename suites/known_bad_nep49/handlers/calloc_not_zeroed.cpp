// NEP49-6: calloc is malloc: a reused block keeps its old bytes.
#include "baseline_handler.hpp"

namespace {
void* dirty_calloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > SIZE_MAX / elsize) return nullptr;
  return zoo::malloc(ctx, nelem * elsize);
}
}  // namespace

EMM_ZOO_HANDLER("zoo_calloc_not_zeroed", 1, zoo::malloc, dirty_calloc, zoo::realloc, zoo::free)
