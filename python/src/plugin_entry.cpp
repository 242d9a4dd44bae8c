#include "emm/python/plugin_entry.hpp"

#include <cstdlib>
#include <optional>
#include <string>

#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/plugin_abi.hpp"
#include "emm/python/gil.hpp"
#include "emm/python/interpreter.hpp"
#include "emm/python/python_memory_manager.hpp"

namespace emm::python {
namespace py = pybind11;
namespace {

// Python's "Exception ignored in ..." (a finalizer or __del__ that raised) as the kit's
// ignored-exception diagnostic, which the FIN and LIFE clauses read (FIN-6, LIFE-8).
void route_unraisable_to_diagnostics() {
  py::module_::import("sys").attr("unraisablehook") = py::cpp_function([](py::handle report) {
    std::string where = "Python finalizer";
    try {
      const py::object object = report.attr("object");
      if (!object.is_none()) where += " (" + py::repr(object).cast<std::string>() + ")";
    } catch (py::error_already_set&) {
    }
    const py::object exception = report.attr("exc_value");
    Diagnostics::ignored_exception(
        where, exception.is_none() ? "an exception was ignored"
                                   : make_python_error(exception, "a Python finalizer").what());
  });
}

struct LoadedPythonPlugin {
  std::string value;  // "python:MODULE:ATTR", for PluginLoadError
  PythonPlugin plugin;
  PluginDescriptor descriptor{};
};

const PythonPlugin* current_plugin = nullptr;

LoadedPythonPlugin* load_from_environment() {
  const char* target = std::getenv(kPluginVariable);
  if (target == nullptr || *target == '\0') {
    throw PluginLoadError("libemm_python",
                          std::string(kPluginVariable) +
                              " is not set; it names the Python plugin class as MODULE[:ATTR] "
                              "(emm-certify --python MODULE[:ATTR] sets it)");
  }
  const char* capabilities = std::getenv(kCapabilitiesVariable);
  const std::optional<std::string> override =
      capabilities != nullptr ? std::optional<std::string>(capabilities) : std::nullopt;
  auto* loaded = new LoadedPythonPlugin{"python:" + std::string(target), {}, {}};
  try {
    ensure_interpreter();
    Gil gil;
    loaded->plugin = load_python_plugin(target, override);
    route_unraisable_to_diagnostics();
  } catch (const std::exception& error) {
    const std::string value = loaded->value;
    {
      Gil gil;
      delete loaded;
    }
    throw PluginLoadError(value, error.what());
  }
  current_plugin = &loaded->plugin;
  loaded->descriptor = PluginDescriptor{kPluginAbiVersion, sizeof(PluginDescriptor), kKitVersion,
                                        loaded->plugin.declaration(),
                                        [](Context* context) -> BaseCUDAMemoryManager* {
                                          return new PythonMemoryManager(*current_plugin, context);
                                        }};
  return loaded;
}

}  // namespace
}  // namespace emm::python

// Never freed: the Python class and its description live as long as the process (plugin code
// can run from late finalizers).
extern "C" __attribute__((visibility("default"))) const emm::PluginDescriptor*
emm_memory_manager_plugin() {
  static const emm::python::LoadedPythonPlugin* const loaded = emm::python::load_from_environment();
  return &loaded->descriptor;
}
