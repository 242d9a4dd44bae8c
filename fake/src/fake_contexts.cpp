// FakeDriver: primary contexts (retain counts per process and device) and the current context
// of each thread. The fake's only contexts are primary contexts: the handle of device d's is
// kPrimaryContextBase + d.
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#include "emm/errors.hpp"
#include "fake_process.hpp"

namespace emm {
namespace {

constexpr std::uintptr_t kPrimaryContextBase = 0x1000;

// The current context of each simulated process, per thread (cuCtxSetCurrent is per thread),
// keyed by the process serial, which is never reused. Trivially destructible, so that a
// thread_local destructor running as the thread exits can still reach the driver, as it can
// reach CUDA's (whose per-thread state outlives the thread's C++ thread_local objects): a
// std::unordered_map here was destroyed before a later-constructed object's destructor freed
// memory on that thread. A thread holds one slot per process it made a context current in;
// when all are taken, the one set longest ago is reused (a thread that has made contexts of
// more processes current than there are slots is not one the kit creates).
struct CurrentContexts {
  struct Slot {
    std::uint64_t serial;  // 0: free
    CUcontext context;
    std::uint64_t set_at;
  };
  std::array<Slot, 64> slots;
  std::uint64_t clock;
};
thread_local CurrentContexts t_current_contexts;  // zero-initialized
static_assert(std::is_trivially_destructible_v<CurrentContexts>);

}  // namespace

using Call = DriverCall;
using fake_detail::hex;

// --- the process's side --------------------------------------------------------------------------

CUcontext FakeDriver::Process::current_context() const {
  for (const CurrentContexts::Slot& slot : t_current_contexts.slots) {
    if (slot.serial == serial) return slot.context;
  }
  return nullptr;
}

void FakeDriver::Process::set_current_context(CUcontext context) {
  CurrentContexts& current = t_current_contexts;
  CurrentContexts::Slot* target = nullptr;
  for (CurrentContexts::Slot& slot : current.slots) {
    if (slot.serial == serial) {
      target = &slot;
      break;
    }
    if (context != nullptr &&
        (target == nullptr ||
         (target->serial != 0 && (slot.serial == 0 || slot.set_at < target->set_at)))) {
      target = &slot;  // a free slot, else the one set longest ago
    }
  }
  if (target == nullptr) return;  // clearing a context this thread never had current
  if (context == nullptr) {
    if (target->serial == serial) *target = CurrentContexts::Slot{0, nullptr, 0};
    return;
  }
  *target = CurrentContexts::Slot{serial, context, ++current.clock};
}

std::optional<int> FakeDriver::Process::context_device(CUcontext context) const {
  const auto value = reinterpret_cast<std::uintptr_t>(context);
  if (value < kPrimaryContextBase ||
      value - kPrimaryContextBase >= static_cast<std::uintptr_t>(device_count())) {
    return std::nullopt;
  }
  return static_cast<int>(value - kPrimaryContextBase);
}

int FakeDriver::Process::require_context(DriverCall call) const {
  const std::optional<int> device = context_device(current_context());
  if (!device) {
    fail(call, CUDA_ERROR_INVALID_CONTEXT,
         "no CUDA context is current on this thread; make the device's primary context current "
         "first (cuCtxSetCurrent, emm::Context::make_current)");
  }
  const auto index = static_cast<std::size_t>(*device);
  if (!context_live[index]) {
    fail(call, CUDA_ERROR_CONTEXT_IS_DESTROYED,
         "the current context, the primary context of device " + std::to_string(*device) +
             (context_was_live[index]
                  ? ", was destroyed (its last retain was released, or cuDevicePrimaryCtxReset) "
                    "and everything in it freed; retain it again (cuDevicePrimaryCtxRetain) "
                    "before using it"
                  : ", was never retained in this process; retain it (cuDevicePrimaryCtxRetain) "
                    "and make the handle it returns current"));
  }
  return *device;
}

// --- entry points --------------------------------------------------------------------------------

CUcontext FakeDriver::primary_ctx_retain(int device) {
  auto lock = process_->enter(Call::cuDevicePrimaryCtxRetain);
  process_->check_device(Call::cuDevicePrimaryCtxRetain, device);
  // A destroyed context comes back fresh, with nothing in it, under the same handle.
  process_->context_live[static_cast<std::size_t>(device)] = true;
  process_->context_was_live[static_cast<std::size_t>(device)] = true;
  ++process_->retains[static_cast<std::size_t>(device)];
  return reinterpret_cast<CUcontext>(kPrimaryContextBase + static_cast<std::uintptr_t>(device));
}

void FakeDriver::primary_ctx_release(int device) {
  auto lock = process_->enter(Call::cuDevicePrimaryCtxRelease);
  process_->check_device(Call::cuDevicePrimaryCtxRelease, device);
  int& retains = process_->retains[static_cast<std::size_t>(device)];
  if (retains == 0) {
    Process::fail(Call::cuDevicePrimaryCtxRelease, CUDA_ERROR_INVALID_CONTEXT,
                  "the primary context of device " + std::to_string(device) +
                      " is not retained (more releases than retains)");
  }
  // The last release destroys the context and frees everything in it (CUDA: "The context is
  // automatically reset once the last reference to it is released").
  if (--retains == 0) process_->destroy_context(device);
}

void FakeDriver::primary_ctx_reset(int device) {
  // Destroys the context but keeps the retains (CUDA: "Resetting the primary context does not
  // release it"); the next retain makes a fresh one.
  auto lock = process_->enter(Call::cuDevicePrimaryCtxReset);
  process_->check_device(Call::cuDevicePrimaryCtxReset, device);
  process_->destroy_context(device);
}

CUcontext FakeDriver::ctx_get_current() {
  auto lock = process_->enter(Call::cuCtxGetCurrent);
  return process_->current_context();
}

void FakeDriver::ctx_set_current(CUcontext context) {
  auto lock = process_->enter(Call::cuCtxSetCurrent);
  if (context == nullptr) {
    process_->set_current_context(nullptr);
    return;
  }
  if (!process_->context_device(context)) {
    Process::fail(Call::cuCtxSetCurrent, CUDA_ERROR_INVALID_CONTEXT,
                  hex(context) +
                      " is not a context of this process (use the handle that "
                      "cuDevicePrimaryCtxRetain returned)");
  }
  process_->set_current_context(context);
}

int FakeDriver::ctx_get_device() {
  auto lock = process_->enter(Call::cuCtxGetDevice);
  return process_->require_context(Call::cuCtxGetDevice);
}

void FakeDriver::ctx_synchronize() {
  auto lock = process_->enter(Call::cuCtxSynchronize);
  process_->require_context(Call::cuCtxSynchronize);
}

int FakeDriver::primary_ctx_retain_count(int device) const {
  std::lock_guard lock(process_->system.mutex);
  if (device < 0 || device >= process_->device_count()) {
    throw InvalidArgumentError("FakeDriver::primary_ctx_retain_count: no device " +
                               std::to_string(device));
  }
  return process_->retains[static_cast<std::size_t>(device)];
}

bool FakeDriver::primary_ctx_active(int device) const {
  std::lock_guard lock(process_->system.mutex);
  if (device < 0 || device >= process_->device_count()) {
    throw InvalidArgumentError("FakeDriver::primary_ctx_active: no device " +
                               std::to_string(device));
  }
  return process_->context_live[static_cast<std::size_t>(device)];
}

}  // namespace emm
