// emm/plugin_loader.hpp — loads a plugin shared library (spec 2.7, REG-3, REG-6).
//
//   emm::LoadedPlugin plugin = emm::load_plugin("/path/libmy_plugin.so");
//   runtime.set_memory_manager(plugin.factory());
//
// Every failure — no such file, not a library, no `emm_memory_manager_plugin` symbol, an ABI
// version this kit does not know, a descriptor of the wrong size, a null factory — throws
// PluginLoadError "Failed to use memory manager from <path>: <cause>".
//
// The library stays loaded for the life of the process: plugin code may still run from late
// finalizers after every context is gone, so unloading it is never safe.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "emm/plugin_abi.hpp"

namespace emm {

class Context;
using ManagerFactory = std::function<std::unique_ptr<BaseCUDAMemoryManager>(Context*)>;

struct LoadedPlugin {
  std::string path;
  const PluginDescriptor* descriptor = nullptr;

  const PluginDeclaration& declaration() const noexcept { return descriptor->declaration; }
  // A factory over the descriptor's `create`. Instances are deleted through the virtual
  // destructor: plugin and host share one libemm_reference and one C++ runtime, which the ABI
  // version check guards (plugin_abi.hpp).
  ManagerFactory factory() const;
};

LoadedPlugin load_plugin(const std::string& path);

}  // namespace emm
