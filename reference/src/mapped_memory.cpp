#include "emm/mapped_memory.hpp"

#include "emm/context.hpp"
#include "emm/errors.hpp"

namespace emm {
namespace {

CUdeviceptr device_pointer_of(Context* context, void* host_pointer) {
  if (context == nullptr) {
    throw InvalidArgumentError(
        "MappedMemory needs a context to look up the device pointer; pass it explicitly instead");
  }
  return context->driver().mem_host_get_device_pointer(host_pointer, 0);
}

}  // namespace

MappedMemory::MappedMemory(Context* context, void* host_pointer, std::size_t size,
                           std::shared_ptr<void> owned, Finalizer finalizer)
    : MappedMemory(context, host_pointer, device_pointer_of(context, host_pointer), size,
                   std::move(owned), std::move(finalizer)) {}

MappedMemory::MappedMemory(Context* context, void* host_pointer, CUdeviceptr device_pointer,
                           std::size_t size, std::shared_ptr<void> owned, Finalizer finalizer)
    : AutoFreePointer(context, device_pointer, size, nullptr, std::move(finalizer)),
      host_pointer_(host_pointer),
      owned_(std::move(owned)) {}

}  // namespace emm
