// emm/conformance/plugin_subject.hpp — the plugin under test, however it was obtained.
//
// A PluginSubject is what every check sees: the plugin's description (name, capabilities,
// defer_cleanup text — owned strings, so it outlives the library's memory) and a factory that
// builds one instance per context (null context for the version probe). Made from a traits
// type (the typed suites) or from a loaded shared library (emm-certify):
//
//   struct MyTraits {
//     using Plugin = MyPlugin;
//     static constexpr emm::PluginDeclaration declaration = kMyDeclaration;
//     // Optional: how to build an instance (default: std::make_unique<Plugin>(context)).
//     static std::unique_ptr<emm::BaseCUDAMemoryManager> make(emm::Context* context);
//   };
//   PluginSubject s = subject_from_traits<MyTraits>();
//   PluginSubject t = subject_from_library(emm::load_plugin("libmy_plugin.so"));
//
// host_only_derived is always computed from the type, never taken from what was declared.
// A value type; copies share the factory. A subject made from a library (subject_from_library)
// may outlive its LoadedPlugin: emm::load_plugin never unloads a library. The subject is
// immutable and may be read from any thread; calling its factory from several threads at once
// is as safe as the plugin's constructor is.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "emm/context.hpp"
#include "emm/plugin_declaration.hpp"
#include "emm/plugin_loader.hpp"

namespace emm::conformance {

// What a plugin says about itself, with owned text.
struct PluginDescription {
  std::string name;
  std::string path;  // the library for emm-certify; empty for a type in a test binary
  Capabilities capabilities;
  std::string defer_cleanup_behaviour;

  [[nodiscard]] static PluginDescription from(const PluginDeclaration& declaration,
                                              std::string path = {});
};

struct PluginSubject {
  PluginDescription description;
  ManagerFactory factory;
};

namespace subject_detail {
template <class Traits, class = void>
struct has_make : std::false_type {};
template <class Traits>
struct has_make<Traits, std::void_t<decltype(Traits::make(static_cast<Context*>(nullptr)))>>
    : std::true_type {};

template <class Traits, class = void>
struct has_declaration : std::false_type {};
template <class Traits>
struct has_declaration<Traits, std::void_t<decltype(Traits::declaration)>> : std::true_type {};

// 0.1's traits named `name` and `capabilities` (the defer_cleanup text inside them).
[[deprecated(
    "conformance traits with `name` and `capabilities` are the emmkit 0.1 form, removed in "
    "0.3.0: give the traits `static constexpr emm::PluginDeclaration declaration` (see "
    "CHANGELOG.md)")]] constexpr PluginDeclaration
traits_of_0_1_form(const char* name, Capabilities capabilities) {
  return ::emm::detail::declaration_from_0_1(name, capabilities);
}

template <class Traits>
constexpr PluginDeclaration declaration() {
  if constexpr (has_declaration<Traits>::value) {
    return Traits::declaration;
  } else {
    return traits_of_0_1_form(Traits::name, Traits::capabilities);
  }
}
}  // namespace subject_detail

template <class Traits>
[[nodiscard]] PluginSubject subject_from_traits() {
  using Plugin = typename Traits::Plugin;
  static_assert(std::is_base_of_v<BaseCUDAMemoryManager, Plugin>,
                "Traits::Plugin must derive from emm::BaseCUDAMemoryManager");
  ManagerFactory factory;
  if constexpr (subject_detail::has_make<Traits>::value) {
    factory = [](Context* context) -> std::unique_ptr<BaseCUDAMemoryManager> {
      return Traits::make(context);
    };
  } else {
    static_assert(std::is_constructible_v<Plugin, Context*>,
                  "Traits::Plugin must be constructible from emm::Context* (NBEP 7: one instance "
                  "per context, constructed with that context), or Traits must define "
                  "static std::unique_ptr<emm::BaseCUDAMemoryManager> make(emm::Context*)");
    factory = [](Context* context) -> std::unique_ptr<BaseCUDAMemoryManager> {
      return std::make_unique<Plugin>(context);
    };
  }
  return PluginSubject{
      PluginDescription::from(complete_declaration<Plugin>(subject_detail::declaration<Traits>())),
      std::move(factory)};
}

[[nodiscard]] inline PluginSubject subject_from_library(const LoadedPlugin& plugin) {
  return PluginSubject{PluginDescription::from(plugin.declaration(), plugin.path),
                       plugin.factory()};
}

inline PluginDescription PluginDescription::from(const PluginDeclaration& declaration,
                                                 std::string path) {
  return PluginDescription{
      declaration.name != nullptr ? declaration.name : "", std::move(path),
      declaration.capabilities,
      declaration.defer_cleanup_behaviour != nullptr ? declaration.defer_cleanup_behaviour : ""};
}

}  // namespace emm::conformance
