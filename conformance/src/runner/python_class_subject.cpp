// A Python plugin class (emm-certify --python MODULE[:ATTR]) as emm-certify's subject: an EMM
// plugin whose library is libemm_python, told which class to present through its exported
// emm_python_select_class (python/include/emm/python/plugin_entry.hpp) in each process that
// loads it, before its entry point runs. emm-certify never links libemm_python.
#include <dlfcn.h>

#include "emm/conformance/backend_descriptor.hpp"
#include "emm/conformance/text_escaping.hpp"
#include "emm/errors.hpp"
#include "emm/python/plugin_entry.hpp"
#include "runner/plugin_library_subject.hpp"

namespace emm::conformance {
namespace {

// libemm_python in this process with `target` selected, then loaded as a plugin library. The
// dlopen here and load_plugin's share one handle (the same path and flags).
LoadedPlugin select_and_load(const std::string& library, const std::string& target,
                             const std::optional<std::string>& capabilities) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    throw PluginLoadError(library, why != nullptr ? why : "dlopen failed");
  }
  const auto select =
      reinterpret_cast<python::SelectClassFunction>(::dlsym(handle, python::kSelectClassSymbol));
  if (select == nullptr) {
    throw PluginLoadError(library, std::string("it does not export ") + python::kSelectClassSymbol +
                                       ": a libemm_python older than this emm-certify; use the "
                                       "one built with it (or set EMM_PYTHON_LIBRARY to it)");
  }
  if (!select(target.c_str(), capabilities ? capabilities->c_str() : nullptr)) {
    throw PluginLoadError(library,
                          "it presented a Python class before emm-certify could name " + target);
  }
  return load_plugin(library);
}

class PythonClassSubject final : public PluginLibrarySubject {
 public:
  PythonClassSubject(std::string library, std::string target,
                     std::optional<std::string> capabilities)
      : PluginLibrarySubject(
            library,
            [library, target, capabilities] {
              return select_and_load(library, target, capabilities);
            },
            true),
        target_(std::move(target)) {}

  std::string title() const override {
    return "the Python class " + target_ + " through " + path();
  }
  // The ThreadSanitizer line is about a native library's instrumentation: not for Python.
  std::vector<std::string> preface() const override { return {}; }

  // It calls the CUDA driver through numba and runs on the gpu backend only: without one nothing
  // was certified, which is a condition of this machine, not a verdict on the plugin.
  std::optional<std::string> nothing_ran(
      const std::vector<BackendStatus>& backends) const override {
    std::string text = "the Python plugin " + visible_text(target_) +
                       " was not certified: it calls the CUDA driver through numba and runs on "
                       "the gpu backend only, which cannot run here";
    for (const BackendStatus& backend : backends) {
      if (!backend_descriptor(backend.kind).simulated) {
        text += " (" + visible_text(backend.reason) + ")";
      }
    }
    return text + "; run it on a machine with a GPU";
  }

 private:
  std::string target_;
};

}  // namespace

std::unique_ptr<Subject> python_class_subject(std::string library, std::string target,
                                              std::optional<std::string> capabilities) {
  return std::make_unique<PythonClassSubject>(std::move(library), std::move(target),
                                              std::move(capabilities));
}

}  // namespace emm::conformance
