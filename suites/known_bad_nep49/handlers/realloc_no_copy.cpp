// NEP49-8: realloc hands out a new block without copying the old one's bytes.
#include "baseline_handler.hpp"

namespace {
void* forgetful_realloc(void* ctx, void* p, std::size_t n) noexcept {
  void* fresh = zoo::calloc(ctx, n, 1);
  if (fresh != nullptr) zoo::free(ctx, p, 0);
  return fresh;
}
}  // namespace

EMM_ZOO_HANDLER("zoo_realloc_no_copy", 1, zoo::malloc, zoo::calloc, forgetful_realloc, zoo::free)
