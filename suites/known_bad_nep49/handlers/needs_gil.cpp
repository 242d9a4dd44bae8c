// NEP49-22: realloc assumes the GIL (it would call into Python) and aborts without it — but
// NumPy's text reader calls realloc with the GIL released.
#include <dlfcn.h>

#include "baseline_handler.hpp"

namespace {
void* gil_realloc(void* ctx, void* p, std::size_t n) noexcept {
  using Check = int (*)();
  // Looked up on every call: CPython may be loaded after the first one.
  const auto gil_check = reinterpret_cast<Check>(::dlsym(RTLD_DEFAULT, "PyGILState_Check"));
  if (gil_check != nullptr && gil_check() == 0) std::abort();
  return zoo::realloc(ctx, p, n);
}
}  // namespace

EMM_ZOO_HANDLER("zoo_needs_gil", 1, zoo::malloc, zoo::calloc, gil_realloc, zoo::free)
