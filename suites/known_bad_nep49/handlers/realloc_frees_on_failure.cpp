// NEP49-9: a realloc that cannot grow frees the old block before returning NULL.
#include "baseline_handler.hpp"

namespace {
void* losing_realloc(void* ctx, void* p, std::size_t n) noexcept {
  void* q = zoo::realloc(ctx, p, n);
  if (q == nullptr) zoo::free(ctx, p, 0);
  return q;
}
}  // namespace

EMM_ZOO_HANDLER("zoo_realloc_frees_on_failure", 1, zoo::malloc, zoo::calloc, losing_realloc,
                zoo::free)
