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

// EMM_EXPORT_MEMORY_MANAGER(Manager, Declaration): the form since 0.2.0.
// EMM_EXPORT_MEMORY_MANAGER(Manager, DisplayName, Capabilities): the 0.1 form, still compiled
// (with a deprecation warning naming the new form) until 0.3.0; its Capabilities' deprecated
// defer_cleanup_behaviour becomes the declaration's. CHANGELOG.md has the migration.
#define EMM_EXPORT_MEMORY_MANAGER(...)                                                    \
  EMM_DETAIL_EXPORT_PICK(__VA_ARGS__, EMM_DETAIL_EXPORT_0_1_FORM, EMM_DETAIL_EXPORT_FORM, \
                         EMM_DETAIL_EXPORT_TOO_FEW)                                       \
  (__VA_ARGS__)
#define EMM_DETAIL_EXPORT_PICK(_1, _2, _3, chosen, ...) chosen
#define EMM_DETAIL_EXPORT_TOO_FEW(...)                                     \
  static_assert(false,                                                     \
                "EMM_EXPORT_MEMORY_MANAGER takes (Manager, Declaration): " \
                "an emm::PluginDeclaration (plugin_declaration.hpp)");

#define EMM_DETAIL_EXPORT_FORM(Manager, Declaration)                                   \
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

#define EMM_DETAIL_EXPORT_0_1_FORM(Manager, DisplayName, DeclaredCapabilities) \
  EMM_DETAIL_EXPORT_FORM(                                                      \
      Manager, ::emm::detail::declaration_of_0_1_form(DisplayName, DeclaredCapabilities))

namespace emm::detail {

// The 0.1 form's name and capabilities as a declaration (detail::declaration_from_0_1).
[[deprecated(
    "EMM_EXPORT_MEMORY_MANAGER(Manager, DisplayName, Capabilities) is the emmkit 0.1 form, "
    "removed in 0.3.0: write EMM_EXPORT_MEMORY_MANAGER(Manager, emm::PluginDeclaration{.name = "
    "..., .capabilities = {...}, .defer_cleanup_behaviour = ...}) (see "
    "CHANGELOG.md)")]] constexpr PluginDeclaration
declaration_of_0_1_form(const char* name, Capabilities capabilities) {
  return declaration_from_0_1(name, capabilities);
}

}  // namespace emm::detail
