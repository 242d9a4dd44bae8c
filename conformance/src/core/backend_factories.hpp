// backend_factories.hpp — private to the conformance core: the two backends behind
// make_backend() (backend.hpp).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "emm/conformance/backend.hpp"

namespace emm::conformance {

// Throws InvalidArgumentError when `devices` is not in [1, kMaxFakeDevices].
std::unique_ptr<Backend> make_fake_backend(int devices);
// Throws DriverUnavailableError when gpu_unavailable_reason() is not empty. `keep_context`:
// retain every device's primary context for the rest of the process (what a clause's backend does;
// not the probe, which only names the devices).
std::unique_ptr<Backend> make_gpu_backend(bool keep_context = true);
// Why the process has no usable GPU ("" when it has one); loads the driver once.
const std::string& gpu_unavailable_reason();
// What the gpu backend records with, for the certificate's device line: "allocation ledger:
// CUPTI (libcupti.so.13)", or "no allocation ledger: " and why (cupti_ledger.hpp).
std::string gpu_ledger_status();
// prepare_process() on the gpu (backend.hpp).
void prepare_gpu_process(bool will_import, std::chrono::milliseconds timeout);

}  // namespace emm::conformance
