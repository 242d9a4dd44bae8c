// backend_factories.hpp — private to the conformance core: the two backends behind
// make_backend() (backend.hpp).
#pragma once

#include <memory>
#include <string>

#include "emm/conformance/backend.hpp"

namespace emm::conformance {

// Throws InvalidArgumentError when `devices` is not in [1, kMaxFakeDevices].
std::unique_ptr<Backend> make_fake_backend(int devices);
// Throws DriverUnavailableError when gpu_unavailable_reason() is not empty.
std::unique_ptr<Backend> make_gpu_backend();
// Why the process has no usable GPU ("" when it has one); loads the driver once.
const std::string& gpu_unavailable_reason();

}  // namespace emm::conformance
