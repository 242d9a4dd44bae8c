// A NEP 49 handler over libc's allocator, built against the installed <emm/nep49/handler.hpp>
// only: what a handler author's library looks like. calloc refuses a product that overflows.
#include "emm/nep49/handler.hpp"

#include <cstddef>
#include <cstdlib>
#include <limits>

namespace {

void* consumer_malloc(void*, std::size_t size) noexcept { return std::malloc(size); }

void* consumer_calloc(void*, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > std::numeric_limits<std::size_t>::max() / elsize) return nullptr;
  return std::calloc(nelem, elsize);
}

void* consumer_realloc(void*, void* ptr, std::size_t size) noexcept {
  return std::realloc(ptr, size);
}

void consumer_free(void*, void* ptr, std::size_t) noexcept { std::free(ptr); }

emm::nep49::Handler handler{
    "consumer_libc",
    1,
    {nullptr, consumer_malloc, consumer_calloc, consumer_realloc, consumer_free}};

}  // namespace

extern "C" __attribute__((visibility("default"))) emm::nep49::Handler* emm_nep49_handler() {
  return &handler;
}
