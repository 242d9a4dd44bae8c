#include "emm/runtime.hpp"

#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "emm/cuda_driver.hpp"
#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/numba_memory_manager.hpp"

namespace emm {

namespace {

std::unique_ptr<BaseCUDAMemoryManager> make_default_manager(Context* context) {
  return std::make_unique<NumbaCUDAMemoryManager>(context);
}

// set_memory_manager's check: a throw-away instance with a null context (REG-1, REG-2).
void check_interface_version(const ManagerFactory& factory) {
  std::unique_ptr<BaseCUDAMemoryManager> probe = factory(nullptr);
  if (!probe) throw Error("the memory manager factory returned null; it must construct a manager");
  const int version = probe->interface_version();
  if (version != kSupportedInterfaceVersion) throw InterfaceVersionError(version);
}

std::string describe(const DeviceIdentity& id) {
  return "{pci_domain_id: " + std::to_string(id.pci_domain_id) +
         ", pci_bus_id: " + std::to_string(id.pci_bus_id) +
         ", pci_device_id: " + std::to_string(id.pci_device_id) + "}";
}

}  // namespace

RuntimeOptions RuntimeOptions::hermetic(std::map<std::string, std::string> variables) {
  RuntimeOptions options;
  options.getenv = [variables =
                        std::move(variables)](const char* name) -> std::optional<std::string> {
    const auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
  return options;
}

Runtime::Runtime(std::shared_ptr<Driver> driver, RuntimeOptions options)
    : driver_(std::move(driver)), options_(std::move(options)) {
  if (!driver_) throw InvalidArgumentError("Runtime needs a driver (got null)");
  if (!options_.getenv) {
    options_.getenv = [](const char* name) -> std::optional<std::string> {
      if (const char* value = std::getenv(name)) return std::string(value);
      return std::nullopt;
    };
  }
  dealloc_config_ = DeallocConfig::from_environment(options_.getenv);
}

Runtime::~Runtime() {
  try {
    close();
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception("Runtime destruction", error.what());
  }
}

std::optional<std::string> Runtime::getenv(const char* name) const { return options_.getenv(name); }

ManagerFactory Runtime::resolve_factory_locked() {
  // REG-3: the variable is read at the first context creation, never earlier.
  if (!env_consulted_) {
    const std::optional<std::string> value = getenv(kMemoryManagerEnvVar);
    if (value && !value->empty() && *value != "default") {
      try {
        LoadedPlugin plugin = load_plugin(*value);
        ManagerFactory factory = plugin.factory();
        check_interface_version(factory);
        factory_source_ = *value;
        // Failures constructing the per-context instances carry the same prefix.
        factory_ = [factory, source = *value](Context* context) {
          try {
            return factory(context);
          } catch (const std::exception& error) {
            throw PluginLoadError(source,
                                  std::string("the plugin constructor threw: ") + error.what());
          }
        };
        env_plugin_ = std::move(plugin);
      } catch (const PluginLoadError&) {
        throw;
      } catch (const std::exception& error) {
        throw PluginLoadError(*value, error.what());
      }
    }
    env_consulted_ = true;
  }
  return factory_ ? factory_ : ManagerFactory(make_default_manager);
}

Context& Runtime::get_context(int device) {
  Context* context = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto found = contexts_.find(device);
    if (found != contexts_.end()) {
      context = found->second.get();
    } else {
      const int count = driver_->device_get_count();
      if (device < 0 || device >= count) {
        throw InvalidArgumentError("device " + std::to_string(device) + " does not exist (" +
                                   std::to_string(count) + " device(s) visible)");
      }
      ManagerFactory factory = resolve_factory_locked();
      const CUcontext handle = driver_->primary_ctx_retain(device);
      try {
        auto created = std::make_unique<Context>(*this, device, handle, factory, dealloc_config_);
        context = created.get();
        contexts_.emplace(device, std::move(created));
      } catch (...) {
        driver_->primary_ctx_release(device);
        throw;
      }
    }
  }
  context->prepare_for_use();
  return *context;
}

Context* Runtime::find_context(int device) const {
  std::lock_guard lock(mutex_);
  auto found = contexts_.find(device);
  return found == contexts_.end() ? nullptr : found->second.get();
}

Context& Runtime::context_for_identity(const DeviceIdentity& identity) {
  const int count = driver_->device_get_count();
  for (int device = 0; device < count; ++device) {
    if (driver_->device_identity(device) == identity) return get_context(device);
  }
  throw InvalidArgumentError("No device of " + describe(identity) +
                             " is found. Target device may not be visible in this process.");
}

void Runtime::set_memory_manager(ManagerFactory factory) {
  if (!factory) throw InvalidArgumentError("set_memory_manager: the factory is empty");
  // REG-4 (NBEP 7): the environment variable wins; the call warns and is ignored.
  if (const auto value = getenv(kMemoryManagerEnvVar); value && !value->empty()) {
    Diagnostics::warn("set_memory_manager",
                      std::string(kMemoryManagerEnvVar) + " is set to '" + *value +
                          "', which takes precedence (NBEP 7); this call is ignored. Unset the "
                          "variable to choose the memory manager in code.");
    return;
  }
  check_interface_version(factory);  // throws InterfaceVersionError; nothing changes then
  std::lock_guard lock(mutex_);
  factory_ = std::move(factory);
  factory_source_ = "set_memory_manager";
}

std::string Runtime::memory_manager_source() const {
  std::lock_guard lock(mutex_);
  return factory_source_;
}

void Runtime::close() {
  std::map<int, std::unique_ptr<Context>> closing;
  {
    std::lock_guard lock(mutex_);
    closing.swap(contexts_);
  }
  std::exception_ptr first_error;
  for (auto& [device, context] : closing) {
    // LIFE-9: reset() once per used context, then the instance is dropped.
    try {
      context->reset();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
    const CUcontext handle = context->handle();
    context.reset();
    // Each step on its own: the retain is released whatever failed before it.
    try {
      if (driver_->ctx_get_current() == handle) driver_->ctx_set_current(nullptr);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
    try {
      driver_->primary_ctx_release(device);
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

Runtime& Runtime::default_runtime() {
  // Leaked on purpose: pointers may be released during static destruction.
  static Runtime* runtime = new Runtime(CudaDriver::load());
  return *runtime;
}

}  // namespace emm
