// NEP49-3: calloc left NULL ("NumPy never zeroes through the handler", it does).
#include "baseline_handler.hpp"

EMM_ZOO_HANDLER("zoo_null_calloc", 1, zoo::malloc, nullptr, zoo::realloc, zoo::free)
