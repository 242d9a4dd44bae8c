#include "emm/conformance/backend.hpp"

#include "core/backend_factories.hpp"

namespace emm::conformance {

std::string backend_unavailable_reason(BackendKind kind, const Capabilities& capabilities) {
  if (kind == BackendKind::fake) {
    if (!capabilities.runs_on_fake_driver) {
      return "the plugin declares runs_on_fake_driver=false (it calls CUDA itself): it is "
             "certified on a GPU only";
    }
    return "";
  }
  const std::string& reason = gpu_unavailable_reason();
  return reason.empty() ? "" : "no GPU: " + reason;
}

std::unique_ptr<Backend> make_backend(BackendKind kind, const BackendSettings& settings) {
  return kind == BackendKind::fake ? make_fake_backend(settings.fake_devices) : make_gpu_backend();
}

}  // namespace emm::conformance
