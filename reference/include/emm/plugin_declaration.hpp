// emm/plugin_declaration.hpp — what a plugin declares about itself (spec 2.7): its display
// name, its capabilities and one line on its defer_cleanup() behaviour.
//
// One constant per plugin, shared by its export macro and its test traits, so the certificate
// and the typed suites read the same facts:
//
//   inline constexpr emm::PluginDeclaration kMyDeclaration{
//       .name = "my-plugin",
//       .capabilities = {.memory_info = true, .ipc = true, .thread_safe = true},
//       .defer_cleanup_behaviour = "holds the HostOnly guard; frees run when the last guard ends"};
//   EMM_EXPORT_MEMORY_MANAGER(MyPlugin, kMyDeclaration)          // plugin_abi.hpp
//
// Every capability defaults to the conservative value: one not declared is not certified, and
// its optional clauses report not_supported. kCapabilityFields is the one table of capability
// names: the catalogue's `optional` column, the reports and the command line all read it.
//
// Plain constexpr data; safe to use from any thread.
#pragma once

#include <array>
#include <string_view>
#include <type_traits>

namespace emm {

class HostOnlyCUDAMemoryManager;

// The type of Capabilities' deprecated defer_cleanup_behaviour (below): text a 0.1 plugin wrote
// there, never a capability, so never compared. Writing text into it is what warns.
struct LegacyDeferCleanupText {
  const char* text = nullptr;
  constexpr LegacyDeferCleanupText() = default;
  [[deprecated(
      "Capabilities::defer_cleanup_behaviour moved to PluginDeclaration::defer_cleanup_behaviour "
      "in emmkit 0.2.0 and is removed in 0.3.0 (see "
      "CHANGELOG.md)")]] constexpr LegacyDeferCleanupText(const char* value)  // NOLINT: implicit,
                                                                              // as 0.1 wrote it
      : text(value) {}
  friend constexpr bool operator==(const LegacyDeferCleanupText&,
                                   const LegacyDeferCleanupText&) noexcept {
    return true;
  }
};

struct Capabilities {
  // get_memory_info() returns figures (INFO-1); otherwise it throws NotImplementedError.
  bool memory_info = false;
  // get_ipc_handle() works (IPC-1/2); otherwise it throws NotImplementedError (IPC-7).
  bool ipc = false;
  // Derived from HostOnlyCUDAMemoryManager (DEFER-3 applies). Filled in from the type by
  // complete_declaration(), never declared by hand.
  bool host_only_derived = false;
  // Safe under concurrent memalloc/free from many threads (ALLOC-10 becomes MUST).
  bool thread_safe = false;
  // Every CUDA call goes through context()->driver(), so the fake backend can certify it.
  // False for plugins wrapping a library that calls CUDA itself: certified on a GPU only.
  bool runs_on_fake_driver = true;
  // Sub-allocates from larger blocks it keeps (memory info may be pool-level, INFO-1; IPC
  // handles must carry offsets, IPC-2).
  bool pooling = false;
  // Keeps no memory it no longer hands out: once the last reference to an allocation is gone
  // and the next flush point has passed, its memory is back with the driver. The flush points
  // are the host's: HostOnlyCUDAMemoryManager's queue being flushed, or reset(); a plugin
  // without that queue has none in between, so it frees at release (or when its last
  // defer_cleanup guard ends).
  // Declaring it makes the driver's figures evidence (FIN-1, FIN-5, DEFER-2, DEFER-4); a plugin
  // that caches or pools freed memory until reset() leaves it false (spec §7).
  bool no_caching = false;
  // memallocmanaged() works (MANAGED-*); otherwise it throws NotImplementedError.
  bool managed_memory = false;

  // Kit 0.1 kept the defer_cleanup text here; it is PluginDeclaration::defer_cleanup_behaviour
  // since 0.2.0. Still accepted, with a deprecation warning, for plugins written against 0.1
  // (read only by the 0.1 form of EMM_EXPORT_MEMORY_MANAGER); removed in 0.3.0. CHANGELOG.md.
  LegacyDeferCleanupText defer_cleanup_behaviour{};

  friend constexpr bool operator==(const Capabilities&, const Capabilities&) = default;
};

// One row of the capability table: its name in the catalogue, the reports and on the command
// line, the flag it stands for, and what declaring it promises.
struct CapabilityField {
  std::string_view name;
  bool Capabilities::*flag;
  std::string_view meaning;
};

inline constexpr std::array<CapabilityField, 8> kCapabilityFields{{
    {"memory_info", &Capabilities::memory_info,
     "get_memory_info() returns figures instead of throwing NotImplementedError"},
    {"ipc", &Capabilities::ipc, "get_ipc_handle() works instead of throwing NotImplementedError"},
    {"host_only_derived", &Capabilities::host_only_derived,
     "derived from HostOnlyCUDAMemoryManager (set from the type)"},
    {"thread_safe", &Capabilities::thread_safe,
     "memalloc and releases may come from many threads at once"},
    {"runs_on_fake_driver", &Capabilities::runs_on_fake_driver,
     "every CUDA call goes through context()->driver()"},
    {"pooling", &Capabilities::pooling, "sub-allocates from larger blocks it keeps"},
    {"no_caching", &Capabilities::no_caching,
     "released memory is back with the driver at the next flush point"},
    {"managed_memory", &Capabilities::managed_memory,
     "memallocmanaged() works instead of throwing NotImplementedError"},
}};

// The row named `name`; null when there is none.
constexpr const CapabilityField* find_capability(std::string_view name) noexcept {
  for (const CapabilityField& field : kCapabilityFields) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

constexpr bool declared(const Capabilities& capabilities, const CapabilityField& field) noexcept {
  return capabilities.*field.flag;
}

struct PluginDeclaration {
  const char* name = "";
  Capabilities capabilities{};
  // One line on what defer_cleanup() does, printed on the certificate (DEFER-6).
  const char* defer_cleanup_behaviour = "";
};

// `declaration` with host_only_derived taken from the type (declaring it by hand could lie).
template <class Manager>
constexpr PluginDeclaration complete_declaration(PluginDeclaration declaration) {
  declaration.capabilities.host_only_derived =
      std::is_base_of_v<HostOnlyCUDAMemoryManager, Manager>;
  return declaration;
}

// --- the 0.1 forms, kept compiling (with deprecation warnings) until 0.3.0: CHANGELOG.md -------

namespace detail {
// A 0.1 plugin's display name and capabilities (the defer_cleanup text inside them) as the
// declaration that replaced them.
constexpr PluginDeclaration declaration_from_0_1(const char* name, Capabilities capabilities) {
  PluginDeclaration declaration;
  declaration.name = name;
  const char* text = capabilities.defer_cleanup_behaviour.text;
  declaration.defer_cleanup_behaviour = text != nullptr ? text : "";
  capabilities.defer_cleanup_behaviour = LegacyDeferCleanupText{};
  declaration.capabilities = capabilities;
  return declaration;
}
}  // namespace detail

// 0.1's complete_capabilities: `capabilities` with host_only_derived taken from the type.
template <class Manager>
[[deprecated(
    "complete_capabilities is the emmkit 0.1 form, removed in 0.3.0: declare an "
    "emm::PluginDeclaration and use complete_declaration<Manager> (see "
    "CHANGELOG.md)")]] constexpr Capabilities
complete_capabilities(Capabilities capabilities) {
  capabilities.host_only_derived = std::is_base_of_v<HostOnlyCUDAMemoryManager, Manager>;
  return capabilities;
}

}  // namespace emm
