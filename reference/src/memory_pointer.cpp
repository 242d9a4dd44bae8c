#include "emm/memory_pointer.hpp"

#include <string>
#include <utility>

#include "emm/context.hpp"
#include "emm/errors.hpp"

namespace emm {

namespace {
constexpr const char* kFinalizerName = "MemoryPointer finalizer";
}  // namespace

MemoryPointer::MemoryPointer(Context* context, CUdeviceptr pointer, std::size_t size,
                             std::shared_ptr<MemoryPointer> owner, Finalizer finalizer)
    : context_(context),
      pointer_(pointer),
      size_(size),
      owner_(std::move(owner)),
      finalizer_(std::move(finalizer)) {}

MemoryPointer::MemoryPointer(Context* context, CUdeviceptr pointer, std::size_t size,
                             std::shared_ptr<MemoryPointer> owner, void (*finalize)(void*),
                             void* argument)
    : context_(context),
      pointer_(pointer),
      size_(size),
      owner_(std::move(owner)),
      finalizer_(finalize, argument) {}

MemoryPointer::~MemoryPointer() { run_finalizer_at_destruction(); }

bool MemoryPointer::run_finalizer_once() noexcept { return finalizer_.run(kFinalizerName); }

bool MemoryPointer::run_finalizer_at_destruction() noexcept {
  return finalizer_.run_at_destruction(kFinalizerName);
}

std::shared_ptr<MemoryPointer> MemoryPointer::owner() {
  if (owner_) return owner_;
  return shared_from_this();
}

void MemoryPointer::free() { finalizer_.free(kFinalizerName); }

std::shared_ptr<OwnedPointer> MemoryPointer::own() {
  if (weak_from_this().expired()) {
    throw InvalidArgumentError(
        "own()/view() need the MemoryPointer to be held by a std::shared_ptr: create it with "
        "std::make_shared");
  }
  return std::make_shared<OwnedPointer>(shared_from_this());
}

std::shared_ptr<OwnedPointer> MemoryPointer::view(std::size_t start,
                                                  std::optional<std::size_t> stop) {
  const std::size_t end = stop.value_or(size_);
  if (pointer_ == 0 || size_ == 0) {
    if (end > start) throw InvalidArgumentError("non-empty slice into empty slice");
  }
  if (start > size_ || end < start) {
    throw InvalidArgumentError("size cannot be negative: view(" + std::to_string(start) + ", " +
                               std::to_string(end) + ") of a " + std::to_string(size_) +
                               "-byte pointer");
  }
  // Stricter than Numba, which does not bound `stop` (docs/differences.md).
  if (end > size_) {
    throw InvalidArgumentError("view stop " + std::to_string(end) + " is past the end of a " +
                               std::to_string(size_) + "-byte pointer");
  }
  if (weak_from_this().expired()) own();  // throws the make_shared hint
  return std::make_shared<OwnedPointer>(owner(), pointer_ + start, end - start);
}

void MemoryPointer::memset(unsigned char value, std::optional<std::size_t> count) {
  if (context_ == nullptr) throw InvalidArgumentError("memset: this pointer has no context");
  const std::size_t n = count.value_or(size_);
  if (n > size_) {
    throw InvalidArgumentError("memset of " + std::to_string(n) + " bytes past the end of a " +
                               std::to_string(size_) + "-byte pointer");
  }
  if (n > 0) context_->driver().memset_d8(pointer_, value, n);
}

void MemoryPointer::add_reference() noexcept { refct_.fetch_add(1, std::memory_order_acq_rel); }

void MemoryPointer::drop_reference() noexcept {
  if (refct_.fetch_sub(1, std::memory_order_acq_rel) == 1) on_refct_zero();
}

AutoFreePointer::AutoFreePointer(Context* context, CUdeviceptr pointer, std::size_t size,
                                 std::shared_ptr<MemoryPointer> owner, Finalizer finalizer)
    : MemoryPointer(context, pointer, size, std::move(owner), std::move(finalizer)) {
  set_refct(0);  // NBEP 7: an AutoFreePointer starts with no references
}

void AutoFreePointer::on_refct_zero() noexcept {
  // Not free(): the finalizer may already have run (reset() released the memory); a late last
  // reference must then do nothing rather than throw "Freeing dead memory" (LIFE-8).
  run_finalizer_once();
}

OwnedPointer::OwnedPointer(std::shared_ptr<MemoryPointer> memory)
    : MemoryPointer(memory->context(), memory->device_pointer(), memory->size()),
      memory_(std::move(memory)),
      is_view_(false) {
  memory_->add_reference();
}

OwnedPointer::OwnedPointer(std::shared_ptr<MemoryPointer> memory, CUdeviceptr pointer,
                           std::size_t size)
    : MemoryPointer(memory->context(), pointer, size), memory_(std::move(memory)), is_view_(true) {
  memory_->add_reference();
}

OwnedPointer::~OwnedPointer() { memory_->drop_reference(); }

long OwnedPointer::refct() const noexcept {
  return is_view_ ? MemoryPointer::refct() : memory_->refct();
}

std::shared_ptr<MemoryPointer> OwnedPointer::owner() {
  return is_view_ ? memory_ : memory_->owner();
}

void OwnedPointer::free() {
  if (!is_view_) memory_->free();
}

std::shared_ptr<OwnedPointer> OwnedPointer::own() {
  if (is_view_) return std::make_shared<OwnedPointer>(memory_, device_pointer(), size());
  return memory_->own();
}

}  // namespace emm
