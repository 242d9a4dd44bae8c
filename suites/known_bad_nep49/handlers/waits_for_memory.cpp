// Hangs: a "budgeted" handler that waits for memory to be given back instead of failing a
// request above its budget (64 MiB), so a large or impossible request never returns.
#include <chrono>
#include <thread>

#include "baseline_handler.hpp"

namespace {
constexpr std::size_t kBudget = std::size_t{64} << 20;

void wait_for_budget(std::size_t n) noexcept {
  while (n >= kBudget) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}
void* budget_malloc(void* ctx, std::size_t n) noexcept {
  wait_for_budget(n);
  return zoo::malloc(ctx, n);
}
void* budget_calloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > SIZE_MAX / elsize) return nullptr;
  wait_for_budget(nelem * elsize);
  return zoo::calloc(ctx, nelem, elsize);
}
void* budget_realloc(void* ctx, void* p, std::size_t n) noexcept {
  wait_for_budget(n);
  return zoo::realloc(ctx, p, n);
}
}  // namespace

EMM_ZOO_HANDLER("zoo_waits_for_memory", 1, budget_malloc, budget_calloc, budget_realloc, zoo::free)
