// NEP49-12: blocks are offset by one byte from libc's, so not aligned for any object.
#include <cstring>

#include "baseline_handler.hpp"

namespace {
void* odd_malloc(void*, std::size_t n) noexcept {
  if (n > SIZE_MAX - 1) return nullptr;
  auto* p = static_cast<unsigned char*>(std::malloc(n + 1));
  return p != nullptr ? p + 1 : nullptr;
}
void* odd_calloc(void*, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > (SIZE_MAX - 1) / elsize) return nullptr;
  auto* p = static_cast<unsigned char*>(std::calloc(1, nelem * elsize + 1));
  return p != nullptr ? p + 1 : nullptr;
}
void* odd_realloc(void*, void* p, std::size_t n) noexcept {
  if (n > SIZE_MAX - 1) return nullptr;
  auto* q = static_cast<unsigned char*>(std::realloc(static_cast<unsigned char*>(p) - 1, n + 1));
  return q != nullptr ? q + 1 : nullptr;
}
void odd_free(void*, void* p, std::size_t) noexcept {
  if (p != nullptr) std::free(static_cast<unsigned char*>(p) - 1);
}
}  // namespace

EMM_ZOO_HANDLER("zoo_misaligned", 1, odd_malloc, odd_calloc, odd_realloc, odd_free)
