// emm/python/python_plugin.hpp — a Python EMM plugin class, loaded and described.
//
// What emm-certify --python MODULE[:ATTR] certifies: a numba BaseCUDAMemoryManager subclass.
// Loading follows Numba's set_memory_manager (REG-1): import MODULE, read ATTR (default
// "_numba_memory_manager", the attribute NUMBA_CUDA_MEMORY_MANAGER reads), build one instance
// with context=None and require interface_version == 1. Unlike Numba, which accepts any class
// (duck typing), a class that is not a BaseCUDAMemoryManager subclass is refused: the adapter
// presents it as one, and a certificate for something else would mislead.
//
//   PythonPlugin plugin = load_python_plugin("rmm.allocators.numba:RMMNumbaManager", {});
//   plugin.declaration();   // name, capabilities, defer_cleanup text for the certificate
//
// Capabilities come from the class attribute `emmkit_capabilities` (an iterable of names from
// kCapabilityFields, e.g. ("ipc", "memory_info")) unless an override is given (emm-certify
// --capabilities). A class with neither (RMM's, CuPy's prototype) has two inferred from what
// it overrides (spec §8): memory_info when get_memory_info resolves to something other than
// numba's abstract method, ipc when get_ipc_handle is GetIpcHandleMixin's or the class's own;
// a method whose body only raises NotImplementedError (RMM's get_memory_info) counts as not
// provided. The rest (thread_safe, pooling, no_caching, managed_memory) are promises only the
// class can make, never inferred. The plugin's name on the certificate says which source, e.g.
// "(capabilities: inferred: get_memory_info overridden, GetIpcHandleMixin)".
//
// runs_on_fake_driver is always false (the plugin calls the real driver through numba) and
// host_only_derived is whether the class derives numba's HostOnlyCUDAMemoryManager (the
// HostOnly clauses then read its allocations and deallocations through PythonMemoryManager,
// an emm::HostOnlyState; docs/python-plugins.md).
//
// Needs the GIL. Errors: PythonImportError (the import), PythonPluginError (everything else).
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <string_view>

#include "emm/errors.hpp"
#include "emm/plugin_declaration.hpp"
#include "emm/python/import_target.hpp"

namespace emm::python {

// The Python side is not a usable EMM plugin (not a BaseCUDAMemoryManager subclass, a wrong
// interface_version, a value of the wrong type returned), or numba is missing. The message
// says what was expected, what was found and what to do.
class PythonPluginError : public emm::Error {
 public:
  using Error::Error;
};

inline constexpr std::string_view kDefaultPluginAttribute = "_numba_memory_manager";
inline constexpr std::string_view kCapabilitiesAttribute = "emmkit_capabilities";
inline constexpr std::string_view kDeferCleanupAttribute = "emmkit_defer_cleanup";

struct PythonPlugin {
  ImportTarget target;
  pybind11::object cls;  // the class; kept for the life of the process
  std::string name;      // "python module:Class (capabilities from ...)"
  Capabilities capabilities;
  // "class attribute emmkit_capabilities", "--capabilities" or "inferred: <reasons>"
  std::string capabilities_source;
  std::string defer_cleanup_behaviour;

  // Points into this object's strings: valid while it lives.
  PluginDeclaration declaration() const;
};

// Capability names, comma-separated ("ipc,memory_info"; "" or "none" declares none). Throws
// PythonPluginError naming the unknown or undeclarable name.
Capabilities parse_capability_list(std::string_view text);

// Loads and checks the class. `capabilities_override` replaces what the class declares (or what
// would be inferred).
PythonPlugin load_python_plugin(std::string_view target_text,
                                const std::optional<std::string>& capabilities_override);

}  // namespace emm::python
