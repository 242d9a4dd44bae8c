// NEP49-13: the handler is set up for the thread that loaded it only (a thread_local arena);
// on any other thread — NumPy's text reader releases the GIL, a free-threaded NumPy has no GIL —
// every request fails.
#include "baseline_handler.hpp"

namespace {
thread_local bool arena_ready = false;

void* bound_malloc(void* ctx, std::size_t n) noexcept {
  return arena_ready ? zoo::malloc(ctx, n) : nullptr;
}
void* bound_realloc(void* ctx, void* p, std::size_t n) noexcept {
  return arena_ready ? zoo::realloc(ctx, p, n) : nullptr;
}
emm::nep49::Handler handler{
    "zoo_thread_bound_arena", 1, {nullptr, bound_malloc, zoo::calloc, bound_realloc, zoo::free}};
}  // namespace

extern "C" __attribute__((visibility("default"))) emm::nep49::Handler* emm_nep49_handler() {
  arena_ready = true;
  return &handler;
}
