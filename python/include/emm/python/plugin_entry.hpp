// emm/python/plugin_entry.hpp — libemm_python's plugin entry point: which Python class it
// presents, read from the environment.
//
// libemm_python.so exports the ordinary entry point (plugin_abi.hpp), so emm-certify and
// emm::load_plugin treat it like any plugin library. The class it presents is named by the
// environment, which emm-certify --python sets before it starts the processes that load it:
//
//   EMM_PYTHON_PLUGIN=MODULE[:ATTR]     the class (ATTR defaults to _numba_memory_manager)
//   EMM_PYTHON_CAPABILITIES=ipc,...     optional: replaces the class's emmkit_capabilities
//                                       ("" or "none": no capability)
//
// The first call of the entry point starts Python, imports numba and the class, and checks it
// (python_plugin.hpp); any failure throws emm::PluginLoadError("Failed to use memory manager
// from python:MODULE:ATTR: <cause>") out of the entry point, which the loader reports as the
// reason the plugin could not be loaded. Python's "Exception ignored" reports (finalizers that
// raise) go to emm::Diagnostics from then on.
#pragma once

namespace emm::python {

inline constexpr const char* kPluginVariable = "EMM_PYTHON_PLUGIN";
inline constexpr const char* kCapabilitiesVariable = "EMM_PYTHON_CAPABILITIES";

}  // namespace emm::python
