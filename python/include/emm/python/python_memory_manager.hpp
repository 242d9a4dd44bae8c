// emm/python/python_memory_manager.hpp — a Python EMM plugin presented as a C++
// BaseCUDAMemoryManager, so every plugin clause runs on it unchanged.
//
// One instance per kit Context, as Numba builds one per numba Context (LIFE-1): it builds the
// Python instance with context=None for the version probe (REG-2) and otherwise with numba's
// Context for the same device's primary context — the context the kit's gpu backend uses — and
// forwards every call:
//
//   PythonMemoryManager manager(plugin, &context);   // plugin: load_python_plugin(...)
//   auto memory = manager.memalloc(4096);            // Python memalloc(4096), wrapped
//
// Values cross as numba defines them: memalloc returns a MemoryPointer (or its own()), whose
// device pointer numba reads (an int or a cuda-bindings CUdeviceptr; what numba cannot read
// fails with a message naming the type); memhostalloc/mempin return MappedMemory or
// PinnedMemory (mempin's owner reaches Python as an object keeping the C++ owner alive);
// get_memory_info a MemoryInfo (free, total); get_ipc_handle an IpcHandle (64 bytes, offset,
// size, source_info, base); defer_cleanup a context manager, entered now and exited when the
// CleanupGuard ends; interface_version a property. Exceptions map by meaning
// (exception_mapping.hpp).
//
// A class derived from numba's HostOnlyCUDAMemoryManager has a HostOnly base the kit reads as
// an emm::HostOnlyState: its `allocations` table, its `deallocations` queue (length,
// is_disabled) and the host's flush point, deallocations.clear() (LIFE-10, DEFER-3, spec §2.4).
//
// Ownership: holds a reference to the Python instance, dropped under the GIL at destruction.
// Thread-safety: each call takes the GIL only while it is in Python; C++ never holds it, so
// calls from many threads interleave as the Python plugin allows (ALLOC-10).
#pragma once

#include <memory>

#include "emm/base_memory_manager.hpp"
#include "emm/host_only_state.hpp"
#include "emm/python/object_ref.hpp"
#include "emm/python/python_plugin.hpp"

namespace emm::python {

class PythonMemoryManager final : public BaseCUDAMemoryManager, public HostOnlyState {
 public:
  // Builds the Python instance; throws what its constructor raised (mapped). `plugin` must
  // outlive the manager.
  PythonMemoryManager(const PythonPlugin& plugin, Context* context);
  ~PythonMemoryManager() override;

  std::shared_ptr<MemoryPointer> memalloc(std::size_t size) override;
  HostAllocation memhostalloc(std::size_t size, bool mapped, bool portable, bool wc) override;
  HostAllocation mempin(std::shared_ptr<void> owner, void* pointer, std::size_t size,
                        bool mapped) override;
  std::shared_ptr<MemoryPointer> memallocmanaged(std::size_t size, bool attach_global) override;
  void initialize() override;
  IpcHandle get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) override;
  MemoryInfo get_memory_info() override;
  void reset() override;
  CleanupGuard defer_cleanup() override;
  int interface_version() const override;

  // HostOnlyState: numba's HostOnlyCUDAMemoryManager state of the instance. The members other
  // than has_host_only_base() throw what Python raised (mapped) and need a HostOnly base.
  bool has_host_only_base() const override { return host_only_; }
  std::size_t tracked_allocations() const override;
  std::size_t pending_frees() const override;
  bool deferring() const override;
  void flush() override;

 private:
  // len() of the instance's `attribute` (numba's allocations or deallocations).
  std::size_t base_length(const char* attribute) const;
  std::shared_ptr<MemoryPointer> wrap_device_pointer(pybind11::object returned,
                                                     std::string_view call);
  HostAllocation wrap_host_allocation(pybind11::object returned, std::string_view call,
                                      std::shared_ptr<void> owner);

  const PythonPlugin& plugin_;
  bool host_only_ = false;
  std::unique_ptr<ObjectRef> instance_;
  std::unique_ptr<ObjectRef> numba_context_;
};

}  // namespace emm::python
