#include "emm/plugin_loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <string>

#include "emm/errors.hpp"

namespace emm {

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
