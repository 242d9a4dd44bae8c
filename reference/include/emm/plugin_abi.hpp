// emm/plugin_abi.hpp — how a plugin shared library exports its memory manager (spec 2.7).
//
// In the plugin library, once:
//
//   #include <emm/plugin_abi.hpp>
//   EMM_EXPORT_MEMORY_MANAGER(MyPlugin, kMyDeclaration)   // a PluginDeclaration constant
//
// This defines the extern "C" entry point `emm_memory_manager_plugin`, returning a
// PluginDescriptor: the kit's plugin ABI version, the plugin's declaration (name, capabilities,
// defer_cleanup text; plugin_declaration.hpp) and a factory. `host_only_derived` is filled in
// from the type, not declared. emm::load_plugin (plugin_loader.hpp) and emm-certify read it.
//
// The plugin and the host must link the same libemm_reference (one copy of the EMM classes)
// and the same C++ runtime: the host deletes instances through their virtual destructor. The
// ABI version and the kit version string guard against mixing incompatible builds.
//
// ABI versions: 1 had a `destroy` function pointer and the defer_cleanup text inside
// Capabilities. 2 (this kit) dropped `destroy`, which no host called and which the shared
// runtime makes unnecessary, and moved the text into PluginDeclaration so that Capabilities is
// a plain set of flags. A version-1 plugin is rejected with a message asking for a rebuild.
#pragma once

#include <cstdint>
#include <type_traits>

#include "emm/base_memory_manager.hpp"
#include "emm/host_only_memory_manager.hpp"
#include "emm/plugin_declaration.hpp"
#include "emm/version.hpp"  // kKitVersion, the kit version plugins were built against

namespace emm {

inline constexpr std::uint32_t kPluginAbiVersion = 2;
inline constexpr const char* kPluginEntryPoint = "emm_memory_manager_plugin";

struct PluginDescriptor {
  std::uint32_t abi_version;      // kPluginAbiVersion at the plugin's build
  std::uint32_t descriptor_size;  // sizeof(PluginDescriptor) at the plugin's build
  const char* kit_version;
  PluginDeclaration declaration;
  // Builds an instance for `context` (null for the version probe). May throw.
  BaseCUDAMemoryManager* (*create)(Context* context);
};

using PluginEntryPoint = const PluginDescriptor* (*)();

}  // namespace emm

#define EMM_EXPORT_MEMORY_MANAGER(Manager, Declaration)                                \
  static_assert(std::is_base_of_v<::emm::BaseCUDAMemoryManager, Manager>,              \
                "EMM_EXPORT_MEMORY_MANAGER: " #Manager                                 \
                " must derive from emm::BaseCUDAMemoryManager");                       \
  extern "C" __attribute__((visibility("default"))) const ::emm::PluginDescriptor*     \
  emm_memory_manager_plugin() {                                                        \
    static const ::emm::PluginDescriptor descriptor{                                   \
        ::emm::kPluginAbiVersion, sizeof(::emm::PluginDescriptor), ::emm::kKitVersion, \
        ::emm::complete_declaration<Manager>(Declaration),                             \
        [](::emm::Context* context) -> ::emm::BaseCUDAMemoryManager* {                 \
          return new Manager(context);                                                 \
        }};                                                                            \
    return &descriptor;                                                                \
  }
