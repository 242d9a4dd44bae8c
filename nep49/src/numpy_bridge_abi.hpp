// The NumPy bridge's entry point: libemm_nep49_numpy.so, the only part of the kit that links
// CPython and includes NumPy's headers. A clause child dlopens it (RTLD_GLOBAL, so that NumPy's
// extension modules find CPython's symbols) when a subject first needs Python; emm-certify itself
// never loads it. Both sides are built from this tree, so C++ types cross the boundary; the
// version guards against a stale library beside a newer emm-certify.
#pragma once

#include <string>
#include <vector>

namespace emm::conformance::nep49_bridge {

inline constexpr int kBridgeAbiVersion = 2;
inline constexpr const char* kBridgeEntryPoint = "emm_nep49_numpy_bridge";
inline constexpr const char* kBridgeLibraryName = "libemm_nep49_numpy.so";

struct BridgeApi {
  int abi_version;
  // Starts CPython and imports NumPy's C API; "" or why not. Leaves the GIL released.
  std::string (*start)();
  // "NumPy 1.24.2, Python 3.11.2".
  std::string (*versions)();
  // Imports MODULE and reads ATTR: a "mem_handler" capsule, or a callable returning one
  // (numpy:PyDataMem_DefaultHandler is NumPy's default). Sets *handler to the capsule's pointer,
  // *module_file to the module's file ("" for none) and *called to whether ATTR is a function;
  // "" or why not.
  std::string (*load_capsule)(const std::string& module, const std::string& attr, void** handler,
                              std::string* module_file, bool* called);
  // MODULE.ATTR read again as load_capsule reads it, without changing the subject: sets *handler
  // to the capsule's pointer, *capsule to a new reference to it (release_capsule gives it back)
  // and *called to whether ATTR is a function; "" or why not.
  std::string (*capsule_again)(const std::string& module, const std::string& attr, void** handler,
                               void** capsule, bool* called);
  // Py_DECREF of what capsule_again returned (its destructor may run).
  void (*release_capsule)(void* capsule);
  // A handler from a library: the bridge wraps it in a capsule of its own.
  std::string (*adopt_handler)(void* handler);
  // Runs the scenario of clause `id` with the subject's capsule; "" when it passed, else what
  // was expected and seen. Remarks are appended to *notes.
  std::string (*run)(const std::string& id, std::vector<std::string>* notes);
  // PyGILState_Ensure / PyGILState_Release, for calling a handler as NumPy does (with the GIL).
  int (*gil_ensure)();
  void (*gil_release)(int state);
  // A Python thread state for the calling thread until thread_detach (the GIL released): a thread
  // that calls the handler many times then takes only the GIL for each call, as a Python thread
  // calling NumPy does, instead of making and destroying a thread state every time.
  void* (*thread_attach)();
  void (*thread_detach)(void* token);
};

using BridgeEntryPoint = const BridgeApi* (*)();

}  // namespace emm::conformance::nep49_bridge
