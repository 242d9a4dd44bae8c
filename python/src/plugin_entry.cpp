#include "emm/python/plugin_entry.hpp"

#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>

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

// What emm_python_select_class named; read by the entry point's first call.
struct Selection {
  std::string target;
  std::optional<std::string> capabilities;
};
std::optional<Selection> selected;
bool presented = false;  // the entry point has run

// The selected class, else the one the environment names.
LoadedPythonPlugin* load_selected() {
  Selection selection;
  if (selected) {
    selection = *selected;
  } else {
    const char* target = std::getenv(kPluginVariable);
    if (target == nullptr || *target == '\0') {
      throw PluginLoadError("libemm_python",
                            std::string("no Python plugin class was named: emm-certify --python "
                                        "MODULE[:ATTR] names it, or set ") +
                                kPluginVariable + "=MODULE[:ATTR] before loading libemm_python");
    }
    selection.target = target;
    if (const char* capabilities = std::getenv(kCapabilitiesVariable)) {
      selection.capabilities = capabilities;
    }
  }
  const char* target = selection.target.c_str();
  const std::optional<std::string>& override = selection.capabilities;
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
  emm::python::presented = true;
  static const emm::python::LoadedPythonPlugin* const loaded = emm::python::load_selected();
  return &loaded->descriptor;
}

extern "C" __attribute__((visibility("default"))) bool emm_python_select_class(
    const char* target, const char* capabilities) {
  static_assert(
      std::is_same_v<decltype(&emm_python_select_class), emm::python::SelectClassFunction>);
  if (emm::python::presented || target == nullptr) return false;
  emm::python::selected.emplace(emm::python::Selection{
      target, capabilities != nullptr ? std::optional<std::string>(capabilities) : std::nullopt});
  return true;
}
