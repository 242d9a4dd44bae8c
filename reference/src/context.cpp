#include "emm/context.hpp"

#include <exception>
#include <limits>
#include <string>

#include "emm/diagnostics.hpp"
#include "emm/errors.hpp"
#include "emm/runtime.hpp"

namespace emm {
namespace {

// Destroys the driver objects of resources still held by callers; reports, never throws.
template <class Resource, class Destroy>
void destroy_outstanding(std::vector<std::weak_ptr<Resource>>& resources, Destroy destroy) {
  for (auto& weak : resources) {
    if (auto resource = weak.lock()) {
      try {
        destroy(resource->handle());
      } catch (const std::exception& error) {
        Diagnostics::ignored_exception("Context destruction", error.what());
      }
    }
  }
  resources.clear();
}

// Remembers `resource` weakly, dropping expired entries so the list stays short.
template <class Resource>
void remember(std::vector<std::weak_ptr<Resource>>& resources,
              const std::shared_ptr<Resource>& resource) {
  std::erase_if(resources, [](const auto& weak) { return weak.expired(); });
  resources.push_back(resource);
}

}  // namespace

Context::Context(Runtime& runtime, int device, CUcontext handle, const ManagerFactory& factory,
                 DeallocConfig config)
    : runtime_(runtime),
      driver_(runtime.driver()),
      device_(device),
      handle_(handle),
      identity_(driver_.device_identity(device)),
      can_map_host_memory_(driver_.can_map_host_memory(device)),
      deallocations_(std::make_shared<PendingDeallocs>(config)) {
  // LIFE-4: the plugin is constructed while no context is current, as Numba may do; a plugin
  // doing CUDA work in its constructor fails here rather than by luck on some machines.
  const CUcontext previous = driver_.ctx_get_current();
  if (previous != nullptr) driver_.ctx_set_current(nullptr);
  try {
    memory_manager_ = factory(this);
  } catch (...) {
    if (previous != nullptr) driver_.ctx_set_current(previous);
    throw;
  }
  if (previous != nullptr) driver_.ctx_set_current(previous);
  if (!memory_manager_) {
    throw Error("the memory manager factory returned null; it must construct a manager");
  }
}

Context::~Context() {
  try {
    make_current();  // the plugin's destructor may still free memory through the driver
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception("Context destruction", error.what());
  }
  {
    std::lock_guard lock(modules_mutex_);
    modules_.clear();  // the modules only the context held queue their unloads
    destroy_outstanding(loaded_, [this](CUmodule m) { driver_.module_unload(m); });
    destroy_outstanding(streams_, [this](CUstream s) { driver_.stream_destroy(s); });
    destroy_outstanding(events_, [this](CUevent e) { driver_.event_destroy(e); });
  }
  memory_manager_.reset();
  try {
    deallocations_->clear();
  } catch (const std::exception& error) {
    Diagnostics::ignored_exception("Context destruction", error.what());
  }
}

void Context::make_current() {
  if (driver_.ctx_get_current() != handle_) driver_.ctx_set_current(handle_);
}

void Context::prepare_for_use() {
  make_current();
  // NBEP 7: initialize() may be called any number of times; every activation calls it.
  std::lock_guard lock(init_mutex_);
  memory_manager_->initialize();
  initialized_.store(true, std::memory_order_release);
}

void Context::ensure_initialized() {
  make_current();
  // LIFE-3: initialize() precedes the first use on every path.
  if (initialized_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(init_mutex_);
  if (!initialized_.load(std::memory_order_relaxed)) {
    memory_manager_->initialize();
    initialized_.store(true, std::memory_order_release);
  }
}

std::shared_ptr<MemoryPointer> Context::memalloc(std::size_t bytesize) {
  // ALLOC-4: size 0 never reaches the plugin (Numba's zero-size arrays get a null pointer).
  if (bytesize == 0) return std::make_shared<MemoryPointer>(this, CUdeviceptr{0}, 0);
  ensure_initialized();
  // ALLOC-9: the plugin's exceptions reach the caller unchanged.
  return memory_manager_->memalloc(bytesize);
}

std::shared_ptr<MemoryPointer> Context::memallocmanaged(std::size_t bytesize, bool attach_global) {
  // As memalloc (ALLOC-4): a zero-size managed array needs no memory; cuMemAllocManaged would
  // reject 0 with CUDA_ERROR_INVALID_VALUE.
  if (bytesize == 0) return std::make_shared<MemoryPointer>(this, CUdeviceptr{0}, 0);
  ensure_initialized();
  return memory_manager_->memallocmanaged(bytesize, attach_global);
}

HostAllocation Context::memhostalloc(std::size_t bytesize, bool mapped, bool portable, bool wc) {
  if (bytesize == 0) {
    throw InvalidArgumentError("memhostalloc: size is 0; ask for at least one byte");
  }
  ensure_initialized();
  return memory_manager_->memhostalloc(bytesize, mapped, portable, wc);
}

HostAllocation Context::mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                               bool mapped) {
  if (pointer == nullptr) {
    throw InvalidArgumentError(
        "mempin: the host pointer is null; pass the address of an allocated host buffer");
  }
  if (size == 0) throw InvalidArgumentError("mempin: size is 0; pin at least one byte");
  // ALLOC-8: refused before the plugin is called.
  if (mapped && !can_map_host_memory_) {
    throw UnsupportedError("mempin(mapped=true): device " + std::to_string(device_) +
                           " cannot map host memory (CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY "
                           "is 0); pin with mapped=false");
  }
  ensure_initialized();
  return memory_manager_->mempin(std::move(owner), pointer, size, mapped);
}

MemoryInfo Context::get_memory_info() {
  ensure_initialized();
  return memory_manager_->get_memory_info();
}

bool Context::supports_ipc() const noexcept { return runtime_.options().ipc_supported; }

IpcHandle Context::get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) {
  // IPC-6: refused before the plugin is called.
  if (!supports_ipc()) {
    throw UnsupportedError("CUDA IPC is not supported on this platform (it needs Linux)");
  }
  ensure_initialized();
  return memory_manager_->get_ipc_handle(memory);
}

std::shared_ptr<MemoryPointer> Context::open_ipc_handle(const CUipcMemHandle& handle,
                                                        std::size_t offset, std::size_t size) {
  if (!supports_ipc()) {
    throw UnsupportedError("CUDA IPC is not supported on this platform (it needs Linux)");
  }
  if (size > std::numeric_limits<std::size_t>::max() - offset) {
    throw InvalidArgumentError("IpcHandle offset " + std::to_string(offset) + " + size " +
                               std::to_string(size) +
                               " overflows; pass the exact bytes IpcHandle::serialize() produced");
  }
  make_current();
  // Not through the plugin, and no finalizer: IpcHandle::close() unmaps it.
  const CUdeviceptr pointer =
      driver_.ipc_open_mem_handle(handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  try {
    // The 64-byte driver handle names a block; the size and offset beside it are the exporter's
    // word only. A view past what the driver mapped would hand out bytes of another allocation.
    const AddressRange mapped = driver_.mem_get_address_range(pointer);
    const std::size_t available = pointer >= mapped.base && pointer - mapped.base < mapped.size
                                      ? mapped.size - (pointer - mapped.base)
                                      : 0;
    if (offset + size > available) throw IpcRangeError(offset, size, available);
    return std::make_shared<MemoryPointer>(this, pointer, offset + size);
  } catch (...) {
    try {
      driver_.ipc_close_mem_handle(pointer);
    } catch (const std::exception& error) {
      Diagnostics::ignored_exception("Context::open_ipc_handle", error.what());
    }
    throw;
  }
}

CleanupGuard Context::defer_cleanup() {
  ensure_initialized();
  // DEFER-1: the plugin's guard is the outer one; the context's queue is disabled inside it,
  // and left first.
  CleanupGuard outer = memory_manager_->defer_cleanup();
  auto inner = std::make_shared<CleanupGuard>(deallocations_->disable());
  return CleanupGuard([inner] { inner->release(); }, std::move(outer));
}

void Context::reset() {
  // CTX-3: plugin reset(), then modules, then the context's own queue.
  make_current();
  std::exception_ptr error;
  try {
    memory_manager_->reset();
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::vector<std::shared_ptr<Module>> modules;
    {
      std::lock_guard lock(modules_mutex_);
      modules.swap(modules_);
    }
  }  // their unloads are queued here
  try {
    deallocations_->clear();
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  if (error) std::rethrow_exception(error);
}

std::shared_ptr<Stream> Context::create_stream(unsigned flags) {
  make_current();
  auto stream = std::make_shared<Stream>(driver_, driver_.stream_create(flags), deallocations_);
  std::lock_guard lock(modules_mutex_);
  remember(streams_, stream);
  return stream;
}

std::shared_ptr<Event> Context::create_event(unsigned flags) {
  make_current();
  auto event = std::make_shared<Event>(driver_, driver_.event_create(flags), deallocations_);
  std::lock_guard lock(modules_mutex_);
  remember(events_, event);
  return event;
}

std::shared_ptr<Module> Context::load_module(const void* image) {
  if (image == nullptr) throw InvalidArgumentError("load_module: the image is null");
  make_current();
  auto module = std::make_shared<Module>(driver_, driver_.module_load_data(image), deallocations_);
  std::lock_guard lock(modules_mutex_);
  modules_.push_back(module);
  remember(loaded_, module);
  return module;
}

std::size_t Context::module_count() const {
  std::lock_guard lock(modules_mutex_);
  return modules_.size();
}

}  // namespace emm
