// The zoo's correct handler: CERTIFIED, the reference point of every row.
#include "baseline_handler.hpp"

EMM_ZOO_HANDLER("emm_zoo_baseline", 1, zoo::malloc, zoo::calloc, zoo::realloc, zoo::free)
