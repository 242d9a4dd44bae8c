#include "emm/conformance/subject.hpp"

namespace emm::conformance {
std::unique_ptr<Subject> make_subject(const CertifyOptions& options) {
  if (options.subject_option != nullptr) {
    return options.subject_option->make(options.subject_value);
  }
  if (options.nep49) return nep49_handler_subject(*options.nep49);
  if (!options.python_target.empty()) {
    return python_class_subject(options.plugin_path, options.python_target,
                                options.python_capabilities);
  }
  return plugin_library_subject(options.plugin_path);
}

}  // namespace emm::conformance
