// The process's ledger on a GPU: a CUPTI subscriber that reports every CUDA driver and runtime
// call that allocates or frees memory, made by any library of the process, to one DriverLedger
// (driver_ledger.hpp). libcupti is loaded at run time, as the driver is: the kit builds and runs
// without it, and then the gpu backend says once on the certificate what it cannot see.
//
//   const CuptiLedger& cupti = process_cupti_ledger();   // subscribes on the first call
//   if (cupti.ledger) cupti.ledger->device_bytes(); else note(cupti.reason);
//
// Where libcupti is looked for: $EMMKIT_CUPTI (a path), then the loader's search path
// (libcupti.so.13, libcupti.so), then the CUDA Toolkit's lib64 and extras/CUPTI/lib64 under
// $CUDA_HOME, $CUDA_PATH, the toolkit the kit was built with and /usr/local/cuda.
//
// Call it in the process that runs clauses, before the plugin allocates: what was allocated
// before the subscription is unknown to the ledger. Thread-safe (the first call subscribes).
#pragma once

#include <string>

#include "core/driver_ledger.hpp"

namespace emm::conformance {

struct CuptiLedger {
  DriverLedger* ledger = nullptr;  // null when CUPTI could not be used here
  std::string library;             // the libcupti that was loaded
  std::string reason;              // why ledger is null
};

const CuptiLedger& process_cupti_ledger();

}  // namespace emm::conformance
