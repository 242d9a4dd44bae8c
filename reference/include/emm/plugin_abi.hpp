// emm/plugin_abi.hpp — how a plugin shared library exports its memory manager (spec 2.7).
//
// In the plugin library, once:
//
//   #include <emm/plugin_abi.hpp>
//   EMM_EXPORT_MEMORY_MANAGER(MyPlugin, "my-plugin",
//                             (emm::Capabilities{.memory_info = true, .ipc = true,
//                                                .thread_safe = true,
//                                                .defer_cleanup_behaviour = "..."}))
//
// This defines the extern "C" entry point `emm_memory_manager_plugin`, returning a
// PluginDescriptor: the kit's plugin ABI version, the display name, the declared capabilities
// and a factory. `host_only_derived` is filled in from the type, not declared.
// emm::load_plugin (plugin_loader.hpp) and emm-certify read it.
//
// The plugin and the host must link the same libemm_reference (one copy of the EMM classes);
// the ABI version and the kit version string guard against mixing incompatible builds.
#pragma once

#include "emm/base_memory_manager.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/version.hpp"  // kKitVersion, the kit version plugins were built against

#include <cstdint>
#include <type_traits>

namespace emm {

// What a plugin declares about itself. Each defaults to the conservative value: a capability
// not declared is not certified, and its optional clauses report not_supported.
struct Capabilities {
  // get_memory_info() returns figures (INFO-1); otherwise it throws NotImplementedError.
  bool memory_info = false;
  // get_ipc_handle() works (IPC-1/2); otherwise it throws NotImplementedError (IPC-7).
  bool ipc = false;
  // Derived from HostOnlyCUDAMemoryManager (DEFER-3 applies). Set by the export macro.
  bool host_only_derived = false;
  // Safe under concurrent memalloc/free from many threads (ALLOC-10 becomes MUST).
  bool thread_safe = false;
  // Every CUDA call goes through context()->driver(), so the fake backend can certify it.
  // False for plugins wrapping a library that calls CUDA itself: certified on GPU only.
  bool runs_on_fake_driver = true;
  // Sub-allocates from larger blocks it keeps (memory info may be pool-level, INFO-1; IPC
  // handles must carry offsets, IPC-2).
  bool pooling = false;
  // One line on what defer_cleanup() does, printed on the certificate (DEFER-6).
  const char* defer_cleanup_behaviour = "";
};

inline constexpr std::uint32_t kPluginAbiVersion = 1;
inline constexpr const char* kPluginEntryPoint = "emm_memory_manager_plugin";

struct PluginDescriptor {
  std::uint32_t abi_version;      // kPluginAbiVersion at the plugin's build
  std::uint32_t descriptor_size;  // sizeof(PluginDescriptor) at the plugin's build
  const char* kit_version;
  const char* name;
  Capabilities capabilities;
  // Builds an instance for `context` (null for the version probe). May throw.
  BaseCUDAMemoryManager* (*create)(Context* context);
  void (*destroy)(BaseCUDAMemoryManager* manager) noexcept;
};

using PluginEntryPoint = const PluginDescriptor* (*)();

template <class Manager>
constexpr Capabilities complete_capabilities(Capabilities declared) {
  declared.host_only_derived = std::is_base_of_v<HostOnlyCUDAMemoryManager, Manager>;
  return declared;
}

}  // namespace emm

#define EMM_EXPORT_MEMORY_MANAGER(Manager, DisplayName, DeclaredCapabilities)                  \
  static_assert(std::is_base_of_v<::emm::BaseCUDAMemoryManager, Manager>,                   \
                "EMM_EXPORT_MEMORY_MANAGER: " #Manager                                      \
                " must derive from emm::BaseCUDAMemoryManager");                            \
  extern "C" __attribute__((visibility("default"))) const ::emm::PluginDescriptor*          \
  emm_memory_manager_plugin() {                                                             \
    static const ::emm::PluginDescriptor descriptor{                                        \
        ::emm::kPluginAbiVersion,                                                           \
        sizeof(::emm::PluginDescriptor),                                                    \
        ::emm::kKitVersion,                                                                 \
        DisplayName,                                                                        \
        ::emm::complete_capabilities<Manager>(DeclaredCapabilities),                        \
        [](::emm::Context* context) -> ::emm::BaseCUDAMemoryManager* {                      \
          return new Manager(context);                                                      \
        },                                                                                  \
        [](::emm::BaseCUDAMemoryManager* manager) noexcept { delete manager; }};            \
    return &descriptor;                                                                     \
  }
