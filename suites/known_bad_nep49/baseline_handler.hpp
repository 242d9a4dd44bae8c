// The correct handler every zoo handler derives from: libc's allocator behind the NEP 49
// functions, with calloc's overflow check and nothing that can throw. A zoo handler replaces one
// function (or one field) and exports the result with EMM_ZOO_HANDLER.
//
//   void* my_malloc(void* ctx, std::size_t n) noexcept { ... one defect ... }
//   EMM_ZOO_HANDLER("zoo_my_defect", 1, my_malloc, zoo::calloc, zoo::realloc, zoo::free)
//
// Thread-safety: libc's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "emm/nep49/handler.hpp"

namespace zoo {

inline void* malloc(void*, std::size_t size) noexcept { return std::malloc(size); }

inline void* calloc(void*, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > std::numeric_limits<std::size_t>::max() / elsize) return nullptr;
  return std::calloc(nelem, elsize);
}

inline void* realloc(void*, void* ptr, std::size_t size) noexcept {
  return std::realloc(ptr, size);
}

inline void free(void*, void* ptr, std::size_t) noexcept { std::free(ptr); }

}  // namespace zoo

#define EMM_ZOO_HANDLER(Name, Version, Malloc, Calloc, Realloc, Free)                          \
  namespace {                                                                                  \
  emm::nep49::Handler zoo_handler{Name, Version, {nullptr, Malloc, Calloc, Realloc, Free}};    \
  }                                                                                            \
  extern "C" __attribute__((visibility("default"))) emm::nep49::Handler* emm_nep49_handler() { \
    return &zoo_handler;                                                                       \
  }
