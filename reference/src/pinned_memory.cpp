#include "emm/pinned_memory.hpp"

#include <utility>

namespace emm {

namespace {
constexpr const char* kFinalizerName = "PinnedMemory finalizer";
}  // namespace

PinnedMemory::PinnedMemory(Context* context, void* host_pointer, std::size_t size,
                           std::shared_ptr<void> owned, Finalizer finalizer)
    : context_(context),
      host_pointer_(host_pointer),
      size_(size),
      owned_(std::move(owned)),
      finalizer_(std::move(finalizer)) {}

PinnedMemory::~PinnedMemory() { finalizer_.run_at_destruction(kFinalizerName); }

void PinnedMemory::free() { finalizer_.free(kFinalizerName); }

}  // namespace emm
