#include "emm/python/plugin_entry.hpp"

#include <cstdlib>
#include <optional>
#include <string>

#include "emm/errors.hpp"
#include "emm/plugin_abi.hpp"
#include "emm/python/gil.hpp"
#include "emm/python/interpreter.hpp"
#include "emm/python/python_memory_manager.hpp"
#include "emm/python/unraisable_diagnostics.hpp"

namespace emm::python {
namespace py = pybind11;
namespace {

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
