// emm/conformance/plugin_subject.hpp — the plugin under test, however it was obtained.
//
// A PluginSubject is what every check sees: a display name, a factory building one instance
// per context (null context for the version probe) and the declared capabilities, with
// host_only_derived computed from the type. Made from a traits type (the typed suites) or from
// a loaded shared library (emm-certify):
//
//   struct MyTraits {
//     using Plugin = MyPlugin;
//     static constexpr const char* name = "my-plugin";
//     static constexpr emm::Capabilities capabilities{.memory_info = true};
//   };
//   PluginSubject s = subject_from_traits<MyTraits>();
//   PluginSubject t = subject_from_library(emm::load_plugin("libmy_plugin.so"));
//
// A value type; copies share the factory.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "emm/context.hpp"
#include "emm/plugin_abi.hpp"
#include "emm/plugin_loader.hpp"

namespace emm::conformance {

struct PluginSubject {
  std::string name;
  ManagerFactory factory;
  Capabilities capabilities;
  // The library path for emm-certify; empty for a type instantiated in a test binary.
  std::string path;
};

template <class Traits>
PluginSubject subject_from_traits() {
  using Plugin = typename Traits::Plugin;
  static_assert(std::is_base_of_v<BaseCUDAMemoryManager, Plugin>,
                "Traits::Plugin must derive from emm::BaseCUDAMemoryManager");
  static_assert(std::is_constructible_v<Plugin, Context*>,
                "Traits::Plugin must be constructible from emm::Context* (NBEP 7: one instance "
                "per context, constructed with that context)");
  return PluginSubject{Traits::name,
                       [](Context* context) -> std::unique_ptr<BaseCUDAMemoryManager> {
                         return std::make_unique<Plugin>(context);
                       },
                       complete_capabilities<Plugin>(Traits::capabilities),
                       {}};
}

inline PluginSubject subject_from_library(const LoadedPlugin& plugin) {
  return PluginSubject{plugin.name(), plugin.factory(), plugin.capabilities(), plugin.path};
}

}  // namespace emm::conformance
