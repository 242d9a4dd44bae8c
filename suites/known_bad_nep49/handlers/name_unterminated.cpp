// NEP49-1: the name fills all 127 bytes with no NUL, so NumPy reads past it.
#include <cstring>

#include "baseline_handler.hpp"

namespace {
emm::nep49::Handler handler{{}, 1, {nullptr, zoo::malloc, zoo::calloc, zoo::realloc, zoo::free}};
}

extern "C" __attribute__((visibility("default"))) emm::nep49::Handler* emm_nep49_handler() {
  std::memset(handler.name, 'x', sizeof handler.name);
  return &handler;
}
