#include "emm/plugin_loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdint>
#include <list>
#include <mutex>
#include <string>

#include "emm/errors.hpp"

namespace emm {
namespace {

// ABI 2 as emmkit 0.2.0 laid it out, before Capabilities gained its deprecated 0.1 text member
// (plugin_declaration.hpp): 48 bytes. A plugin built then is read field by field into today's
// layout, so that it keeps loading without a rebuild (docs/versioning.md).
struct CapabilitiesOf0_2_0 {
  bool memory_info, ipc, host_only_derived, thread_safe, runs_on_fake_driver, pooling, no_caching,
      managed_memory;
};
struct DescriptorOf0_2_0 {
  std::uint32_t abi_version;
  std::uint32_t descriptor_size;
  const char* kit_version;
  const char* name;
  CapabilitiesOf0_2_0 capabilities;
  const char* defer_cleanup_behaviour;
  BaseCUDAMemoryManager* (*create)(Context* context);
};
static_assert(sizeof(DescriptorOf0_2_0) == 48);

// Today's descriptor for a 0.2.0 one. Kept for the process's life, as the library is.
const PluginDescriptor* from_0_2_0(const DescriptorOf0_2_0& old) {
  static std::mutex mutex;
  static std::list<PluginDescriptor> converted;
  Capabilities capabilities;
  capabilities.memory_info = old.capabilities.memory_info;
  capabilities.ipc = old.capabilities.ipc;
  capabilities.host_only_derived = old.capabilities.host_only_derived;
  capabilities.thread_safe = old.capabilities.thread_safe;
  capabilities.runs_on_fake_driver = old.capabilities.runs_on_fake_driver;
  capabilities.pooling = old.capabilities.pooling;
  capabilities.no_caching = old.capabilities.no_caching;
  capabilities.managed_memory = old.capabilities.managed_memory;
  std::lock_guard lock(mutex);
  return &converted.emplace_back(PluginDescriptor{
      old.abi_version, sizeof(PluginDescriptor), old.kit_version,
      PluginDeclaration{old.name, capabilities, old.defer_cleanup_behaviour}, old.create});
}

}  // namespace

ManagerFactory LoadedPlugin::factory() const {
  const PluginDescriptor* d = descriptor;
  return
      [d](Context* context) { return std::unique_ptr<BaseCUDAMemoryManager>(d->create(context)); };
}

LoadedPlugin load_plugin(const std::string& path) {
  if (path.empty()) {
    throw PluginLoadError(path, "the path is empty; give the path of a plugin shared library");
  }
  if (path.find('/') != std::string::npos) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
      throw PluginLoadError(path,
                            "no such file; give the path of a plugin shared library built "
                            "with EMM_EXPORT_MEMORY_MANAGER");
    }
  }
  // Never dlclose'd: plugin code may run from late finalizers (plugin_loader.hpp).
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    throw PluginLoadError(path, std::string("not a loadable shared library (") +
                                    (why != nullptr ? why : "dlopen failed") + ")");
  }
  void* symbol = ::dlsym(library, kPluginEntryPoint);
  if (symbol == nullptr) {
    throw PluginLoadError(path, std::string("the library exports no '") + kPluginEntryPoint +
                                    "' symbol; export the plugin with "
                                    "EMM_EXPORT_MEMORY_MANAGER(Type, declaration)");
  }
  auto entry = reinterpret_cast<PluginEntryPoint>(symbol);
  const PluginDescriptor* descriptor = entry();
  if (descriptor == nullptr) {
    throw PluginLoadError(path, std::string(kPluginEntryPoint) + "() returned null");
  }
  if (descriptor->abi_version != kPluginAbiVersion) {
    throw PluginLoadError(
        path, "the plugin was built for plugin ABI version " +
                  std::to_string(descriptor->abi_version) + ", this kit reads version " +
                  std::to_string(kPluginAbiVersion) + "; rebuild the plugin against this emmkit");
  }
  if (descriptor->descriptor_size == sizeof(DescriptorOf0_2_0)) {
    descriptor = from_0_2_0(*reinterpret_cast<const DescriptorOf0_2_0*>(descriptor));
  }
  if (descriptor->descriptor_size != sizeof(PluginDescriptor)) {
    throw PluginLoadError(
        path, "the plugin descriptor has " + std::to_string(descriptor->descriptor_size) +
                  " bytes, this kit expects " + std::to_string(sizeof(PluginDescriptor)) +
                  "; rebuild the plugin against this emmkit");
  }
  const PluginDeclaration& declaration = descriptor->declaration;
  if (descriptor->create == nullptr || declaration.name == nullptr ||
      declaration.defer_cleanup_behaviour == nullptr) {
    throw PluginLoadError(path,
                          "the plugin descriptor is incomplete (null name, defer_cleanup text or "
                          "factory); export it with EMM_EXPORT_MEMORY_MANAGER(Type, declaration)");
  }
  return LoadedPlugin{path, descriptor};
}

}  // namespace emm
