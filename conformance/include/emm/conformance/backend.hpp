// emm/conformance/backend.hpp — where a clause runs: the fake driver or a real GPU.
//
// fake: a fresh emm::FakeDriver per clause run (deterministic, no GPU needed).
// gpu:  the process's emm::CudaDriver, loaded at run time; absent on machines without a GPU,
//       in which case every gpu run is reported as not run with gpu_unavailable_reason().
//
// gpu_driver() loads the real driver once per process and keeps it (CUDA's own state is
// per-process too). emm-certify never calls it in its parent process: it probes and runs the
// GPU only in child processes (CUDA must not be initialised before fork()).
//
// Thread-safety: both functions are safe to call concurrently.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "emm/driver.hpp"

namespace emm::conformance {

enum class Backend { fake, gpu };

// "fake", "gpu".
std::string_view to_string(Backend backend) noexcept;
std::optional<Backend> parse_backend(std::string_view text) noexcept;

// Why the GPU backend cannot run here ("" when it can). Loads the driver on first call.
const std::string& gpu_unavailable_reason();
// The process's real driver; throws emm::DriverUnavailableError when there is none.
std::shared_ptr<Driver> gpu_driver();

}  // namespace emm::conformance
