// NEP49-2: a version NumPy does not know.
#include "baseline_handler.hpp"

EMM_ZOO_HANDLER("zoo_version_2", 2, zoo::malloc, zoo::calloc, zoo::realloc, zoo::free)
