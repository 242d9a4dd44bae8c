#include "emm/examples/forwarding_memory_manager.hpp"

#include <utility>

#include "emm/errors.hpp"

namespace emm::examples {

ForwardingMemoryManager::ForwardingMemoryManager(Context* context,
                                                 std::unique_ptr<BaseCUDAMemoryManager> inner)
    : BaseCUDAMemoryManager(context), inner_(std::move(inner)) {
  if (!inner_) {
    throw InvalidArgumentError(
        "ForwardingMemoryManager: the wrapped plugin is null; pass an "
        "instance constructed for the same context");
  }
}

std::shared_ptr<MemoryPointer> ForwardingMemoryManager::memalloc(std::size_t size) {
  return inner_->memalloc(size);
}

HostAllocation ForwardingMemoryManager::memhostalloc(std::size_t size, bool mapped, bool portable,
                                                     bool wc) {
  return inner_->memhostalloc(size, mapped, portable, wc);
}

HostAllocation ForwardingMemoryManager::mempin(std::shared_ptr<void> owner, void* pointer,
                                               std::size_t size, bool mapped) {
  return inner_->mempin(std::move(owner), pointer, size, mapped);
}

std::shared_ptr<MemoryPointer> ForwardingMemoryManager::memallocmanaged(std::size_t size,
                                                                        bool attach_global) {
  return inner_->memallocmanaged(size, attach_global);
}

void ForwardingMemoryManager::initialize() { inner_->initialize(); }

IpcHandle ForwardingMemoryManager::get_ipc_handle(const std::shared_ptr<MemoryPointer>& memory) {
  return inner_->get_ipc_handle(memory);
}

MemoryInfo ForwardingMemoryManager::get_memory_info() { return inner_->get_memory_info(); }

void ForwardingMemoryManager::reset() { inner_->reset(); }

CleanupGuard ForwardingMemoryManager::defer_cleanup() { return inner_->defer_cleanup(); }

int ForwardingMemoryManager::interface_version() const { return inner_->interface_version(); }

}  // namespace emm::examples
