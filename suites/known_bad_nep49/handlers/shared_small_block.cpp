// NEP49-5: small requests share one static buffer, so two live blocks alias.
#include "baseline_handler.hpp"

namespace {
alignas(16) unsigned char small[16];

void* shared_malloc(void* ctx, std::size_t n) noexcept {
  return n <= sizeof small ? small : zoo::malloc(ctx, n);
}
void shared_free(void* ctx, void* p, std::size_t n) noexcept {
  if (p != small) zoo::free(ctx, p, n);
}
void* shared_realloc(void* ctx, void* p, std::size_t n) noexcept {
  return p == small ? nullptr : zoo::realloc(ctx, p, n);
}
}  // namespace

EMM_ZOO_HANDLER("zoo_shared_small_block", 1, shared_malloc, zoo::calloc, shared_realloc,
                shared_free)
