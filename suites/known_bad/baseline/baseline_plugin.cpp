// The zoo's baseline: a correct pooling plugin that must be CERTIFIED, proving that every
// known-bad plugin fails because of its one defect.
#include "baseline_pool.hpp"

EMM_EXPORT_MEMORY_MANAGER(emm::zoo::BaselinePool,
                          emm::zoo::baseline_declaration("known-bad zoo baseline"))
