#include "emm/conformance/backend.hpp"

#include <exception>
#include <mutex>

#include "emm/cuda_driver.hpp"
#include "emm/errors.hpp"

namespace emm::conformance {
namespace {

struct GpuState {
  std::once_flag once;
  std::string reason;
  std::shared_ptr<Driver> driver;
};

// The process's real driver, loaded once: CUDA's state is per process, so is this.
GpuState& gpu_state() {
  static GpuState* state = new GpuState;  // leaked: finalizers may run at static destruction
  std::call_once(state->once, [] {
    try {
      state->driver = CudaDriver::load();
      if (state->driver->device_get_count() < 1) {
        state->driver.reset();
        state->reason = "the CUDA driver reports no device";
      }
    } catch (const std::exception& error) {
      state->reason = error.what();
      if (state->reason.empty()) state->reason = "the CUDA driver could not be loaded";
    }
  });
  return *state;
}

}  // namespace

std::string_view to_string(Backend backend) noexcept {
  return backend == Backend::fake ? "fake" : "gpu";
}

std::optional<Backend> parse_backend(std::string_view text) noexcept {
  if (text == "fake") return Backend::fake;
  if (text == "gpu") return Backend::gpu;
  return std::nullopt;
}

const std::string& gpu_unavailable_reason() { return gpu_state().reason; }

std::shared_ptr<Driver> gpu_driver() {
  GpuState& state = gpu_state();
  if (!state.driver) throw DriverUnavailableError("no GPU: " + state.reason);
  return state.driver;
}

}  // namespace emm::conformance
