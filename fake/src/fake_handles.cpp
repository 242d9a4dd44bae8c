// FakeDriver: streams, events and modules. Each is a handle that is never reused, owned by the
// device of the context that made it; nothing runs behind it (every stream is idle, every event
// complete), but using or destroying a handle that is not live fails as on the real driver.
#include <cstdint>
#include <string>

#include "fake_process.hpp"

namespace emm {
namespace {

constexpr unsigned kEventFlags =
    CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

bool is_default_stream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

}  // namespace

using Call = DriverCall;
using fake_detail::HandleTag;
using fake_detail::hex;

// --- the process's side --------------------------------------------------------------------------

void FakeDriver::Process::check_stream(DriverCall call, CUstream stream) const {
  if (is_default_stream(stream)) {
    require_context(call);
    return;
  }
  if (!streams.contains(reinterpret_cast<std::uintptr_t>(stream))) {
    fail(call, CUDA_ERROR_INVALID_HANDLE,
         "stream " + hex(stream) + " is not a live stream of this process");
  }
}

void FakeDriver::Process::check_event(DriverCall call, CUevent event) const {
  if (!events.contains(reinterpret_cast<std::uintptr_t>(event))) {
    fail(call, CUDA_ERROR_INVALID_HANDLE,
         "event " + hex(event) + " is not a live event of this process");
  }
}

// --- entry points --------------------------------------------------------------------------------

CUstream FakeDriver::stream_create(unsigned flags) {
  auto lock = process_->enter(Call::cuStreamCreate);
  const int device = process_->require_context(Call::cuStreamCreate);
  if (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING) {
    Process::fail(
        Call::cuStreamCreate, CUDA_ERROR_INVALID_VALUE,
        "flags must be CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING, got " + std::to_string(flags));
  }
  auto stream = process_->make_handle<CUstream>(HandleTag::stream);
  process_->streams.emplace(reinterpret_cast<std::uintptr_t>(stream), device);
  return stream;
}

void FakeDriver::stream_destroy(CUstream stream) {
  auto lock = process_->enter(Call::cuStreamDestroy);
  if (process_->streams.erase(reinterpret_cast<std::uintptr_t>(stream)) == 0) {
    process_->invalid_free(Call::cuStreamDestroy, CUDA_ERROR_INVALID_HANDLE,
                           hex(stream) +
                               " is not a live stream of this process (destroyed "
                               "twice, or never created)");
  }
}

void FakeDriver::stream_synchronize(CUstream stream) {
  auto lock = process_->enter(Call::cuStreamSynchronize);
  process_->check_stream(Call::cuStreamSynchronize, stream);
}

CUevent FakeDriver::event_create(unsigned flags) {
  auto lock = process_->enter(Call::cuEventCreate);
  const int device = process_->require_context(Call::cuEventCreate);
  if ((flags & ~kEventFlags) != 0) {
    Process::fail(Call::cuEventCreate, CUDA_ERROR_INVALID_VALUE,
                  "unknown flags " + hex(flags & ~kEventFlags));
  }
  auto event = process_->make_handle<CUevent>(HandleTag::event);
  process_->events.emplace(reinterpret_cast<std::uintptr_t>(event), device);
  return event;
}

void FakeDriver::event_destroy(CUevent event) {
  auto lock = process_->enter(Call::cuEventDestroy);
  if (process_->events.erase(reinterpret_cast<std::uintptr_t>(event)) == 0) {
    process_->invalid_free(Call::cuEventDestroy, CUDA_ERROR_INVALID_HANDLE,
                           hex(event) +
                               " is not a live event of this process (destroyed "
                               "twice, or never created)");
  }
}

void FakeDriver::event_record(CUevent event, CUstream stream) {
  auto lock = process_->enter(Call::cuEventRecord);
  process_->check_event(Call::cuEventRecord, event);
  process_->check_stream(Call::cuEventRecord, stream);
}

void FakeDriver::event_synchronize(CUevent event) {
  auto lock = process_->enter(Call::cuEventSynchronize);
  process_->check_event(Call::cuEventSynchronize, event);
}

CUmodule FakeDriver::module_load_data(const void* image) {
  auto lock = process_->enter(Call::cuModuleLoadData);
  const int device = process_->require_context(Call::cuModuleLoadData);
  if (image == nullptr) {
    Process::fail(Call::cuModuleLoadData, CUDA_ERROR_INVALID_VALUE, "image is null");
  }
  auto module = process_->make_handle<CUmodule>(HandleTag::module);
  process_->modules.emplace(reinterpret_cast<std::uintptr_t>(module), device);
  return module;
}

void FakeDriver::module_unload(CUmodule module) {
  auto lock = process_->enter(Call::cuModuleUnload);
  if (process_->modules.erase(reinterpret_cast<std::uintptr_t>(module)) == 0) {
    process_->invalid_free(Call::cuModuleUnload, CUDA_ERROR_INVALID_HANDLE,
                           hex(module) +
                               " is not a loaded module of this process (unloaded "
                               "twice, or never loaded)");
  }
}

}  // namespace emm
