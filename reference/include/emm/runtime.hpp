// emm/runtime.hpp — Runtime: the driver, the registered memory manager, one Context per device.
//
//   auto runtime = emm::Runtime(std::make_shared<emm::FakeDriver>());
//   runtime.set_memory_manager<MyPlugin>();            // version-checked (REG-1)
//   emm::Context& ctx = runtime.get_context(0);        // lazily created, then prepared
//   auto p = ctx.memalloc(1 << 20);
//   runtime.close();                                   // resets and drops every context
//
// Registration (spec 2.6): set_memory_manager builds a throw-away instance with a null context
// and checks interface_version() == 1, else throws InterfaceVersionError and keeps the previous
// manager. EMM_CUDA_MEMORY_MANAGER ("default" or the path of a plugin library) is read at the
// first context creation, never before; when it is set it wins and set_memory_manager only
// warns (NBEP 7 precedence, REG-4). A failure to use it throws PluginLoadError
// "Failed to use memory manager from <value>: <cause>" (REG-3). A new manager affects only
// contexts created afterwards; close() then lets new contexts use it (REG-5).
//
// The process-wide default_runtime() uses CudaDriver; tests build their own Runtime.
// Thread-safety: all members are safe to call concurrently; contexts are created under a lock.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "emm/context.hpp"
#include "emm/driver.hpp"
#include "emm/plugin_loader.hpp"

namespace emm {

inline constexpr const char* kMemoryManagerEnvVar = "EMM_CUDA_MEMORY_MANAGER";

struct RuntimeOptions {
  // How the runtime reads its environment variables; default: the process environment.
  std::function<std::optional<std::string>(const char*)> getenv;
  // Whether the platform has CUDA IPC (Linux does). Tests turn it off to check IPC-6.
  bool ipc_supported = true;

  // Options whose environment is exactly `variables` and nothing else, so that no EMM_* variable
  // of the caller's shell (EMM_CUDA_MEMORY_MANAGER, the deallocation thresholds) changes what a
  // test or a certification run sees:
  //
  //   emm::Runtime runtime(driver, emm::RuntimeOptions::hermetic());
  //   emm::Runtime two(driver, emm::RuntimeOptions::hermetic({{emm::kMemoryManagerEnvVar,
  //                                                             "default"}}));
  static RuntimeOptions hermetic(std::map<std::string, std::string> variables = {});
};

class Runtime {
 public:
  explicit Runtime(std::shared_ptr<Driver> driver, RuntimeOptions options = {});
  ~Runtime();  // close()
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Driver& driver() const noexcept { return *driver_; }
  const std::shared_ptr<Driver>& shared_driver() const noexcept { return driver_; }

  // The context of `device`, created on first use, then prepared (made current, initialize()).
  Context& get_context(int device = 0);
  // The existing context of `device`, or null; creates nothing.
  Context* find_context(int device) const;
  // The context of the device with this PCI identity (for staged IPC). Throws
  // InvalidArgumentError("No device of ... is found ...") when no such device is visible.
  Context& context_for_identity(const DeviceIdentity& identity);

  void set_memory_manager(ManagerFactory factory);
  template <class Manager>
  void set_memory_manager() {
    set_memory_manager([](Context* context) { return std::make_unique<Manager>(context); });
  }
  // "default", the library path from EMM_CUDA_MEMORY_MANAGER, or "set_memory_manager".
  std::string memory_manager_source() const;

  // Resets every context (plugin reset()), destroys them and drops the plugin instances.
  void close();

  // The process-wide runtime over the real driver (CudaDriver); created on first use.
  static Runtime& default_runtime();

  // The deallocation configuration contexts get (from the environment at construction).
  const DeallocConfig& dealloc_config() const noexcept { return dealloc_config_; }
  std::optional<std::string> getenv(const char* name) const;
  const RuntimeOptions& options() const noexcept { return options_; }

 private:
  ManagerFactory resolve_factory_locked();

  std::shared_ptr<Driver> driver_;
  RuntimeOptions options_;
  DeallocConfig dealloc_config_;
  mutable std::mutex mutex_;
  ManagerFactory factory_;
  std::string factory_source_ = "default";
  bool env_consulted_ = false;
  std::optional<LoadedPlugin> env_plugin_;
  std::map<int, std::unique_ptr<Context>> contexts_;
};

}  // namespace emm
