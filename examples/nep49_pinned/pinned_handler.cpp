#include "emm/examples/pinned_handler.hpp"

#include <cstdint>
#include <cstring>
#include <limits>

namespace emm::examples {
namespace {

// The runtime blocks come from, shared by both handlers. Runtimes bound before stay alive in
// `retired`: blocks they made may still be in NumPy's hands.
struct Binding {
  std::mutex mutex;
  std::unique_ptr<Runtime> bound;
  Runtime* external = nullptr;
  std::vector<std::unique_ptr<Runtime>> retired;

  Runtime& runtime() {
    if (external != nullptr) return *external;
    return bound ? *bound : Runtime::default_runtime();
  }
};

Binding& binding() {
  static Binding* instance = new Binding();  // immortal, like the handlers
  return *instance;
}

// Requests no machine can satisfy are refused before the plugin sees them, so that no size
// arithmetic (page rounding, headers) in a plugin can wrap around (NEP49-14).
constexpr std::size_t kLargest =
    static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());

}  // namespace

PinnedHandler::PinnedHandler(bool mapped)
    : mapped_(mapped),
      handler_{{},
               1,
               {this, &PinnedHandler::malloc, &PinnedHandler::calloc, &PinnedHandler::realloc,
                &PinnedHandler::free}} {
  const char* name = mapped ? "emm_pinned_mapped" : "emm_pinned";
  std::strncpy(handler_.name, name, sizeof handler_.name - 1);
}

PinnedHandler& PinnedHandler::instance(bool mapped) {
  static PinnedHandler* plain = new PinnedHandler(false);
  static PinnedHandler* with_mapping = new PinnedHandler(true);
  return mapped ? *with_mapping : *plain;
}

void PinnedHandler::bind_driver(const std::shared_ptr<Driver>* driver) {
  Binding& b = binding();
  std::lock_guard lock(b.mutex);
  if (b.bound) b.retired.push_back(std::move(b.bound));
  b.external = nullptr;
  if (driver != nullptr && *driver) b.bound = std::make_unique<Runtime>(*driver);
}

void PinnedHandler::use_runtime(Runtime* runtime) {
  Binding& b = binding();
  std::lock_guard lock(b.mutex);
  if (b.bound) b.retired.push_back(std::move(b.bound));
  b.external = runtime;
}

std::size_t PinnedHandler::live_blocks() const {
  std::lock_guard lock(mutex_);
  return blocks_.size();
}

void* PinnedHandler::allocate(std::size_t size) {
  if (size == 0 || size > kLargest) return nullptr;
  Binding& b = binding();
  std::lock_guard runtime_lock(b.mutex);
  // cuMemHostAlloc needs a current context on this thread, and NumPy calls from any thread.
  Context& context = b.runtime().get_context(0);
  context.make_current();
  HostAllocation allocation = context.memhostalloc(size, mapped_);
  void* pointer = allocation.host_pointer();
  if (pointer == nullptr) return nullptr;
  std::lock_guard lock(mutex_);
  blocks_.emplace(pointer, std::move(allocation));
  return pointer;
}

void PinnedHandler::release(void* ptr) {
  HostAllocation allocation;
  {
    std::lock_guard lock(mutex_);
    const auto found = blocks_.find(ptr);
    if (found == blocks_.end()) return;  // not ours: never free what we did not hand out
    allocation = std::move(found->second);
    blocks_.erase(found);
  }
  Binding& b = binding();
  std::lock_guard runtime_lock(b.mutex);
  if (Context* context = b.runtime().find_context(0)) context->make_current();
  allocation = HostAllocation();  // the plugin's finalizer gives the memory back
}

void* PinnedHandler::malloc(void* ctx, std::size_t size) noexcept {
  try {
    return static_cast<PinnedHandler*>(ctx)->allocate(size);
  } catch (...) {
    return nullptr;
  }
}

void* PinnedHandler::calloc(void* ctx, std::size_t nelem, std::size_t elsize) noexcept {
  if (elsize != 0 && nelem > std::numeric_limits<std::size_t>::max() / elsize) return nullptr;
  void* p = malloc(ctx, nelem * elsize);
  // Page-locked memory comes from the driver uninitialised (or from a plugin's pool).
  if (p != nullptr) std::memset(p, 0, nelem * elsize);
  return p;
}

void* PinnedHandler::realloc(void* ctx, void* ptr, std::size_t size) noexcept {
  auto* self = static_cast<PinnedHandler*>(ctx);
  if (ptr == nullptr) return malloc(ctx, size);
  std::size_t old_size = 0;
  {
    std::lock_guard lock(self->mutex_);
    const auto found = self->blocks_.find(ptr);
    if (found == self->blocks_.end()) return nullptr;
    old_size = found->second.size();
  }
  // A new block, then the copy: a failure leaves the old block as it was (NEP49-9).
  void* fresh = malloc(ctx, size);
  if (fresh == nullptr) return nullptr;
  std::memcpy(fresh, ptr, old_size < size ? old_size : size);
  free(ctx, ptr, old_size);
  return fresh;
}

void PinnedHandler::free(void* ctx, void* ptr, std::size_t) noexcept {
  // The size NumPy passes is a best guess (NEP 49); the block's own size is the one recorded.
  if (ptr == nullptr) return;
  try {
    static_cast<PinnedHandler*>(ctx)->release(ptr);
  } catch (...) {
    // A plugin whose finalizer throws keeps the memory; NumPy cannot be told.
  }
}

}  // namespace emm::examples
