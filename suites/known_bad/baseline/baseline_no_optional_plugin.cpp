// The zoo's second baseline: the same pool declaring neither memory info, IPC nor managed
// memory. Must be CERTIFIED with INFO-1/IPC-1/IPC-2/IPC-7/MANAGED-* not_supported (INFO-2,
// IPC-7 and MANAGED-3 accept its NotImplementedError).
#include "baseline_pool.hpp"

EMM_EXPORT_MEMORY_MANAGER(emm::zoo::BaselineNoOptional,
                          emm::zoo::no_optional_declaration("known-bad zoo baseline (no optional)"))
