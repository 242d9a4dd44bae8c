// emm/python/plugin_entry.hpp — libemm_python's plugin entry point: which Python class it
// presents.
//
// libemm_python.so exports the ordinary entry point (plugin_abi.hpp), so emm-certify and
// emm::load_plugin treat it like any plugin library. The class it presents is named, before the
// entry point's first call, in one of two ways:
//
//   emm_python_select_class("MODULE[:ATTR]", capabilities)   what emm-certify --python does, in
//                                   each process that loads the library (dlsym; it never links
//                                   libemm_python): ATTR defaults to _numba_memory_manager;
//                                   capabilities "ipc,..." replaces the class's
//                                   emmkit_capabilities ("" or "none": no capability), null
//                                   keeps them;
//   EMM_PYTHON_PLUGIN=MODULE[:ATTR]   the environment, for a host that only calls the entry
//   EMM_PYTHON_CAPABILITIES=ipc,...   point (emm::load_plugin in a test): read when no class
//                                   was selected.
//
// The first call of the entry point starts Python, imports numba and the class, and checks it
// (python_plugin.hpp); any failure throws emm::PluginLoadError("Failed to use memory manager
// from python:MODULE:ATTR: <cause>") out of the entry point, which the loader reports as the
// reason the plugin could not be loaded. Python's "Exception ignored" reports (finalizers that
// raise) go to emm::Diagnostics from then on.
//
// Thread-safety: select before the entry point's first call, from the thread that will make it.
#pragma once

namespace emm::python {

inline constexpr const char* kPluginVariable = "EMM_PYTHON_PLUGIN";
inline constexpr const char* kCapabilitiesVariable = "EMM_PYTHON_CAPABILITIES";

// The exported selection function's name and type. It copies its arguments; it returns false,
// changing nothing, when the entry point has already presented a class (the class is fixed for
// the process) or `target` is null.
inline constexpr const char* kSelectClassSymbol = "emm_python_select_class";
using SelectClassFunction = bool (*)(const char* target, const char* capabilities);

}  // namespace emm::python
