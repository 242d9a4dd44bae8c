#include "emm/python/python_memory_manager.hpp"

#include <array>
#include <string>

#include "emm/context.hpp"
#include "emm/diagnostics.hpp"
#include "emm/python/exception_mapping.hpp"
#include "emm/python/gil.hpp"
#include "emm/python/numba_api.hpp"
#include "emm/python/python_pointer.hpp"

namespace emm::python {
namespace py = pybind11;
namespace {

std::string type_of(py::handle value) { return qualified_type_name(py::type::handle_of(value)); }

// A device pointer the way numba reads it: MemoryPointer.device_pointer_value (int(pointer) in
// numba-cuda, which takes an int or a CUdeviceptr), else the device_pointer attribute itself.
std::uint64_t device_address(py::handle memory, std::string_view call) {
  const std::string prefix = std::string(call) + " returned a " + type_of(memory);
  if (!py::hasattr(memory, "device_pointer")) {
    throw PythonPluginError(prefix +
                            " without a device_pointer; return a numba MemoryPointer "
                            "(or AutoFreePointer(...).own())");
  }
  const py::object raw = memory.attr("device_pointer");
  try {
    if (py::hasattr(memory, "device_pointer_value")) {
      const py::object value = memory.attr("device_pointer_value");
      return value.is_none() ? 0 : value.cast<std::uint64_t>();
    }
    if (py::isinstance<py::int_>(raw)) return raw.cast<std::uint64_t>();
    if (py::hasattr(raw, "value")) {  // ctypes.c_void_p, which numba converts
      const py::object value = raw.attr("value");
      return value.is_none() ? 0 : value.cast<std::uint64_t>();
    }
    return py::int_(raw).cast<std::uint64_t>();
  } catch (py::error_already_set& error) {
    throw PythonPluginError(
        prefix + " whose device_pointer is a " + type_of(raw) +
        ", which numba cannot read as an address (" +
        make_python_error(error, "reading it").what() +
        "); pass an int or a cuda.bindings.driver.CUdeviceptr (numba-cuda also converts "
        "ctypes.c_void_p)");
  } catch (py::cast_error&) {
    throw PythonPluginError(prefix + " whose device_pointer is a " + type_of(raw) +
                            ", not an address; pass an int or a cuda.bindings.driver.CUdeviceptr");
  }
}

std::uint64_t host_address(py::handle value, std::string_view what) {
  try {
    if (value.is_none()) return 0;
    if (py::isinstance<py::int_>(value)) return value.cast<std::uint64_t>();
    if (py::hasattr(value, "value")) {
      const py::object inner = value.attr("value");
      return inner.is_none() ? 0 : inner.cast<std::uint64_t>();
    }
    return py::int_(py::reinterpret_borrow<py::object>(value)).cast<std::uint64_t>();
  } catch (py::error_already_set&) {
  } catch (py::cast_error&) {
  }
  throw PythonPluginError(std::string(what) + " is a " + type_of(value) +
                          ", not an address; use an int or a ctypes.c_void_p");
}

std::size_t size_of(py::handle memory, std::string_view call) {
  try {
    return memory.attr("size").cast<std::size_t>();
  } catch (py::error_already_set&) {
  } catch (py::cast_error&) {
  }
  throw PythonPluginError(std::string(call) + " returned a " + type_of(memory) +
                          " without an integer size");
}

// The C++ owner of mempin, as a Python object that keeps it alive (a capsule).
constexpr const char* kOwnerCapsule = "emmkit.mempin_owner";

py::object owner_capsule(std::shared_ptr<void> owner) {
  auto* held = new std::shared_ptr<void>(std::move(owner));
  return py::reinterpret_steal<py::object>(
      PyCapsule_New(held, kOwnerCapsule, [](PyObject* capsule) {
        delete static_cast<std::shared_ptr<void>*>(PyCapsule_GetPointer(capsule, kOwnerCapsule));
      }));
}

// The C++ owner behind what the plugin kept as `owned`: null when it kept something else.
std::shared_ptr<void> owner_from(py::handle allocation) {
  for (const char* name : {"owned", "_owner"}) {
    if (!py::hasattr(allocation, name)) continue;
    py::object owned = allocation.attr(name);
    if (PyCapsule_IsValid(owned.ptr(), kOwnerCapsule) != 0) {
      return *static_cast<std::shared_ptr<void>*>(PyCapsule_GetPointer(owned.ptr(), kOwnerCapsule));
    }
  }
  return nullptr;
}

}  // namespace

PythonMemoryManager::PythonMemoryManager(const PythonPlugin& plugin, Context* context)
    : BaseCUDAMemoryManager(context), plugin_(plugin) {
  Gil gil;
  py::object numba_context = py::none();
  try {
    if (context != nullptr) numba_context = NumbaApi::get().context_for_device(context->device());
  } catch (py::error_already_set& error) {
    throw_mapped_error(error,
                       "getting numba's context for device " + std::to_string(context->device()));
  }
  try {
    instance_ = std::make_unique<ObjectRef>(plugin.cls(py::arg("context") = numba_context));
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, plugin.target.str() + "(context=" +
                                  (context != nullptr ? "<numba Context>" : "None") + ")");
  }
  numba_context_ = std::make_unique<ObjectRef>(numba_context);
  host_only_ = plugin.capabilities.host_only_derived;
}

// numba's HostOnlyCUDAMemoryManager keeps `allocations` (a dict of what reset() releases) and
// `deallocations` (_PendingDeallocs: len() pending, is_disabled, clear()).
std::size_t PythonMemoryManager::base_length(const char* attribute) const {
  Gil gil;
  try {
    return py::len(instance_->get().attr(attribute));
  } catch (py::error_already_set& error) {
    throw_mapped_error(error,
                       "len(" + std::string(attribute) + ") of the HostOnlyCUDAMemoryManager base");
  }
}

std::size_t PythonMemoryManager::tracked_allocations() const { return base_length("allocations"); }

std::size_t PythonMemoryManager::pending_frees() const { return base_length("deallocations"); }

bool PythonMemoryManager::deferring() const {
  Gil gil;
  try {
    return instance_->get().attr("deallocations").attr("is_disabled").cast<bool>();
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, "deallocations.is_disabled of the HostOnlyCUDAMemoryManager base");
  } catch (py::cast_error&) {
    throw PythonPluginError(
        "deallocations.is_disabled of the HostOnlyCUDAMemoryManager base is not a bool; leave "
        "numba's _PendingDeallocs in place");
  }
}

void PythonMemoryManager::flush() {
  Gil gil;
  try {
    instance_->get().attr("deallocations").attr("clear")();
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, "deallocations.clear() (the host's flush point)");
  }
}

PythonMemoryManager::~PythonMemoryManager() = default;

std::shared_ptr<MemoryPointer> PythonMemoryManager::wrap_device_pointer(py::object returned,
                                                                        std::string_view call) {
  const std::uint64_t address = device_address(returned, call);
  const std::size_t size = size_of(returned, call);
  return std::make_shared<PythonMemoryPointer>(context(), address, size,
                                               std::make_shared<ObjectRef>(std::move(returned)));
}

HostAllocation PythonMemoryManager::wrap_host_allocation(py::object returned, std::string_view call,
                                                         std::shared_ptr<void> owner) {
  (void)owner;
  if (!py::hasattr(returned, "host_pointer")) {
    throw PythonPluginError(std::string(call) + " returned a " + type_of(returned) +
                            " without a host_pointer; return numba's MappedMemory or "
                            "PinnedMemory");
  }
  void* host = reinterpret_cast<void*>(
      host_address(returned.attr("host_pointer"), std::string(call) + "'s host_pointer"));
  const std::size_t size = size_of(returned, call);
  std::shared_ptr<void> owned = owner_from(returned);
  auto ref = std::make_shared<ObjectRef>(returned);
  if (py::hasattr(returned, "device_pointer")) {
    const std::uint64_t device = device_address(returned, call);
    auto mapped = std::make_shared<MappedMemory>(context(), host, device, size, std::move(owned),
                                                 release_on_finalize(ref));
    return HostAllocation::mapped(mapped->own());
  }
  return HostAllocation::pinned(std::make_shared<PinnedMemory>(
      context(), host, size, std::move(owned), release_on_finalize(ref)));
}

std::shared_ptr<MemoryPointer> PythonMemoryManager::memalloc(std::size_t size) {
  const std::string call = "memalloc(" + std::to_string(size) + ")";
  Gil gil;
  try {
    return wrap_device_pointer(instance_->get().attr("memalloc")(size), call);
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, call);
  }
}

HostAllocation PythonMemoryManager::memhostalloc(std::size_t size, bool mapped, bool portable,
                                                 bool wc) {
  const std::string call =
      "memhostalloc(" + std::to_string(size) + ", mapped=" + (mapped ? "True" : "False") +
      ", portable=" + (portable ? "True" : "False") + ", wc=" + (wc ? "True" : "False") + ")";
  Gil gil;
  try {
    return wrap_host_allocation(instance_->get().attr("memhostalloc")(size, mapped, portable, wc),
                                call, nullptr);
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, call);
  }
}

HostAllocation PythonMemoryManager::mempin(std::shared_ptr<void> owner, void* pointer,
                                           std::size_t size, bool mapped) {
  const std::string call = "mempin(owner, " +
                           std::to_string(reinterpret_cast<std::uintptr_t>(pointer)) + ", " +
                           std::to_string(size) + ", mapped=" + (mapped ? "True" : "False") + ")";
  Gil gil;
  try {
    py::object returned = instance_->get().attr("mempin")(
        owner_capsule(owner), reinterpret_cast<std::uintptr_t>(pointer), size, mapped);
    return wrap_host_allocation(std::move(returned), call, owner);
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, call);
  }
}

std::shared_ptr<MemoryPointer> PythonMemoryManager::memallocmanaged(std::size_t size,
                                                                    bool attach_global) {
  const std::string call =
      "memallocmanaged(" + std::to_string(size) + ", " + (attach_global ? "True" : "False") + ")";
  Gil gil;
  try {
    const py::object instance = instance_->get();
    if (!py::hasattr(instance, "memallocmanaged")) {
      throw emm::NotImplementedError(plugin_.target.str() +
                                     " has no memallocmanaged (not part of NBEP 7's interface)");
    }
    return wrap_device_pointer(instance.attr("memallocmanaged")(size, attach_global), call);
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, call);
  }
}

void PythonMemoryManager::initialize() {
  Gil gil;
  try {
    instance_->get().attr("initialize")();
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, "initialize()");
  }
}

void PythonMemoryManager::reset() {
  Gil gil;
  try {
    instance_->get().attr("reset")();
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, "reset()");
  }
}

IpcHandle PythonMemoryManager::get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) {
  Gil gil;
  try {
    // The Python pointer numba would pass: the allocation itself, a numba view of it, or (for
    // memory the plugin did not return, spec §7) a foreign MemoryPointer over the bytes.
    py::object argument;
    const std::shared_ptr<MemoryPointer> base = memory->owner();
    if (auto* python = dynamic_cast<PythonMemoryPointer*>(base.get());
        python != nullptr && !python->python_object()->released()) {
      const std::size_t start = memory->device_pointer() - python->device_pointer();
      argument = python->python_object()->get();
      if (start != 0 || memory->size() != python->size()) {
        argument = argument.attr("view")(start, start + memory->size());
      }
    } else {
      argument = NumbaApi::get().foreign_pointer(numba_context_->get(), memory->device_pointer(),
                                                 memory->size());
    }
    const py::object handle = instance_->get().attr("get_ipc_handle")(argument);
    const std::string call = "get_ipc_handle()";
    for (const char* field : {"handle", "size"}) {
      if (!py::hasattr(handle, field)) {
        throw PythonPluginError(call + " returned a " + type_of(handle) + " without '" + field +
                                "'; return numba's IpcHandle");
      }
    }
    py::object raw = handle.attr("handle");
    if (py::hasattr(raw, "reserved")) raw = raw.attr("reserved");  // cuda-bindings CUipcMemHandle
    std::string bytes;
    try {
      bytes = py::bytes(py::module_::import("builtins").attr("bytes")(raw)).cast<std::string>();
    } catch (py::error_already_set&) {
      throw PythonPluginError(call + " returned a handle of type " + type_of(raw) +
                              ", which is not 64 bytes; use cuIpcGetMemHandle's result");
    }
    CUipcMemHandle driver_handle{};
    if (bytes.size() != sizeof driver_handle.reserved) {
      throw PythonPluginError(call + " returned a " + std::to_string(bytes.size()) +
                              "-byte handle; CUDA IPC handles have " +
                              std::to_string(sizeof driver_handle.reserved) + " bytes");
    }
    std::copy(bytes.begin(), bytes.end(), driver_handle.reserved);
    std::optional<DeviceIdentity> source;
    const py::object info = py::getattr(handle, "source_info", py::none());
    if (!info.is_none()) {
      source = DeviceIdentity{info["pci_domain_id"].cast<int>(), info["pci_bus_id"].cast<int>(),
                              info["pci_device_id"].cast<int>()};
    }
    const py::object offset = py::getattr(handle, "offset", py::int_(0));
    const bool has_base = !py::getattr(handle, "base", py::none()).is_none();
    return IpcHandle(has_base ? memory : nullptr, driver_handle,
                     handle.attr("size").cast<std::size_t>(), source, offset.cast<std::size_t>());
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, "get_ipc_handle()");
  } catch (py::cast_error& error) {
    throw PythonPluginError(std::string("get_ipc_handle() returned an IpcHandle with a field of "
                                        "the wrong type (") +
                            error.what() + "); size and offset are ints, source_info a dict");
  }
}

MemoryInfo PythonMemoryManager::get_memory_info() {
  Gil gil;
  try {
    const py::object info = instance_->get().attr("get_memory_info")();
    if (py::hasattr(info, "free") && py::hasattr(info, "total")) {
      return MemoryInfo{info.attr("free").cast<std::size_t>(),
                        info.attr("total").cast<std::size_t>()};
    }
    return MemoryInfo{info[py::int_(0)].cast<std::size_t>(), info[py::int_(1)].cast<std::size_t>()};
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, "get_memory_info()");
  } catch (py::cast_error&) {
    throw PythonPluginError(
        "get_memory_info() returned something that is not a MemoryInfo(free, total) of ints");
  }
}

CleanupGuard PythonMemoryManager::defer_cleanup() {
  Gil gil;
  std::shared_ptr<ObjectRef> manager;
  try {
    py::object returned = instance_->get().attr("defer_cleanup")();
    returned.attr("__enter__")();
    manager = std::make_shared<ObjectRef>(std::move(returned));
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, "defer_cleanup() (entering its context manager)");
  }
  return CleanupGuard([manager] {
    {
      Gil held;
      try {
        manager->get().attr("__exit__")(py::none(), py::none(), py::none());
      } catch (py::error_already_set& error) {
        Diagnostics::ignored_exception(
            "defer_cleanup() context manager",
            make_python_error(error, "leaving defer_cleanup()'s context manager").what());
      }
    }
    manager->release();
  });
}

int PythonMemoryManager::interface_version() const {
  Gil gil;
  try {
    const py::object version = instance_->get().attr("interface_version");
    if (!py::isinstance<py::int_>(version)) {
      throw PythonPluginError("interface_version is a " + type_of(version) +
                              ", not an int; make it a property returning 1");
    }
    return version.cast<int>();
  } catch (py::error_already_set& error) {
    throw_mapped_error(error, "reading interface_version");
  }
}

}  // namespace emm::python
