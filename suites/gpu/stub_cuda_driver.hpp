// stub_cuda_driver.hpp — the control surface of the stub CUDA driver library (test only).
//
// libemm_stub_cuda_driver_v2.so (and _v1.so) stand in for libcuda.so.1 so that CudaDriver::load()
// and CudaDriver's error translation are tested on every machine, GPU or not. Each exports
// cuDriverGetVersion and cuGetProcAddress_v2 (or only the CUDA 11.3 cuGetProcAddress when built
// with EMM_STUB_V1_ONLY) and answers lookups only for the base names CudaDriver must ask for,
// with the ABI CUDA 12.0 defines; "device memory" is host memory. Tests reach the two functions
// below with dlsym on the same path they pass to CudaDriver::load(), so both get one instance.
//
// Thread-safety: configure it from one thread while no CudaDriver call is in flight.
#pragma once

#include <cstdint>

extern "C" {

struct EmmStubConfig {
  int driver_version = 13000;                 // what cuDriverGetVersion reports
  int init_result = 0;                        // CUresult that cuInit returns
  int device_count = 1;                       // what cuDeviceGetCount reports
  const char* missing_entry_point = nullptr;  // a base name cuGetProcAddress does not know
};

struct EmmStubState {
  int lookups = 0;                   // cuGetProcAddress calls that found an entry point
  int unknown_lookups = 0;           // calls for a name the stub does not provide
  char last_unknown[64] = {};        // the last such name
  int lowest_requested_version = 0;  // lowest and highest cudaVersion asked for
  int highest_requested_version = 0;
  std::uint64_t flags_seen = 0;      // OR of every flags argument
  int init_calls = 0;                // cuInit calls
  std::uint64_t live_bytes = 0;      // bytes allocated by cuMemAlloc and not freed
  unsigned last_ipc_open_flags = 0;  // Flags argument of the last cuIpcOpenMemHandle
  int pointer_attribute_calls = 0;   // cuPointerGetAttribute calls
};

// Replaces the configuration and clears the state.
void emm_stub_configure(const EmmStubConfig* config);
// A snapshot of the state.
EmmStubState emm_stub_state();

using EmmStubConfigureFn = void (*)(const EmmStubConfig*);
using EmmStubStateFn = EmmStubState (*)();
}
