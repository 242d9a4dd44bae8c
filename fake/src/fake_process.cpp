// FakeDriver: one simulated process over a FakeSystem — its lifetime, the way into every entry
// point (locking, call counting, fault injection), and what a test can observe of it.
//
// Error codes follow what the real driver answered in a probe on an H100 (CUDA 13.0 toolkit
// headers, driver 580); docs/fake-vs-gpu.md lists every place where the fake could differ,
// including the few where it is deliberately stricter or kinder.
#include "fake_process.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "emm/errors.hpp"
#include "yield_pacing.hpp"

namespace emm {
namespace fake_detail {

std::string hex(std::uintptr_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

std::string hex(const void* pointer) { return hex(reinterpret_cast<std::uintptr_t>(pointer)); }

}  // namespace fake_detail

namespace {
std::atomic<std::uint64_t> g_next_process_serial{1};
}  // namespace

using fake_detail::hex;

// --- the process ---------------------------------------------------------------------------------

FakeDriver::Process::Process(fake_detail::SystemState& system_state)
    : system(system_state),
      serial(g_next_process_serial.fetch_add(1)),
      retains(system_state.devices.size(), 0),
      context_live(system_state.devices.size(), false),
      context_was_live(system_state.devices.size(), false) {}

namespace {

// The calls FakeDriver::yield_in_calls() yields in: those a plugin makes from inside its own
// bookkeeping (allocating, freeing, pinning, exporting, pools, streams, memory queries). Not
// the current-context calls the host makes around every plugin call (emm::Context checks the
// current context on each memalloc), nor copies and memsets (the checks' own reads and
// writes), nor device queries: there a yield costs a system call and puts no thread inside a
// plugin.
bool yields_in(DriverCall call) noexcept {
  switch (call) {
    case DriverCall::cuDriverGetVersion:
    case DriverCall::cuDeviceGetCount:
    case DriverCall::cuDeviceGetAttribute:
    case DriverCall::cuDeviceGetName:
    case DriverCall::cuDeviceCanAccessPeer:
    case DriverCall::cuCtxGetCurrent:
    case DriverCall::cuCtxSetCurrent:
    case DriverCall::cuCtxGetDevice:
    case DriverCall::cuMemcpyHtoD:
    case DriverCall::cuMemcpyDtoH:
    case DriverCall::cuMemcpyDtoD:
    case DriverCall::cuMemsetD8:
      return false;
    default:
      return true;
  }
}

}  // namespace

std::unique_lock<fake_detail::SystemMutex> FakeDriver::Process::enter(DriverCall call) {
  // Before the lock: a thread that called from inside a plugin gives way while still inside it.
  if (yield_in_calls.on.load(std::memory_order_relaxed) && yields_in(call)) {
    yield_in_calls.before_call();
  }
  std::unique_lock lock(system.mutex);
  ++calls[static_cast<std::size_t>(call)];
  std::optional<CUresult> injected;
  for (Fault& fault : faults) {
    if (fault.call != call) continue;
    if (fault.skip > 0) {
      --fault.skip;
    } else if (!injected) {
      injected = fault.result;
      --fault.remaining;
    }
  }
  std::erase_if(faults, [](const Fault& fault) { return fault.remaining == 0; });
  if (injected) fail(call, *injected, "failure injected by FakeDriver::fail_call");
  return lock;
}

void FakeDriver::Process::fail(DriverCall call, CUresult result, std::string detail) {
  throw CudaDriverError(result, std::string(driver_call_name(call)), std::move(detail));
}

void FakeDriver::Process::invalid_free(DriverCall call, CUresult result, std::string detail) {
  ++invalid_frees;
  fail(call, result, std::move(detail));
}

void FakeDriver::Process::check_device(DriverCall call, int device) const {
  if (device < 0 || device >= device_count()) {
    fail(call, CUDA_ERROR_INVALID_DEVICE,
         "device " + std::to_string(device) + " does not exist (the fake system has " +
             std::to_string(device_count()) + ")");
  }
}

void FakeDriver::Process::release_device(int device) {
  for (auto it = mappings.begin(); it != mappings.end();) {
    auto next = std::next(it);
    if (it->second.context_device == device) release_mapping(it);
    it = next;
  }
  for (auto it = host_allocations.begin(); it != host_allocations.end();) {
    auto next = std::next(it);
    if (it->second.device == device) free_host(it);
    it = next;
  }
  std::erase_if(registrations,
                [device](const auto& entry) { return entry.second.device == device; });
  auto on_device = [device](const auto& entry) { return entry.second == device; };
  std::erase_if(streams, on_device);
  std::erase_if(events, on_device);
  std::erase_if(modules, on_device);
  std::erase_if(pools, on_device);
}

void FakeDriver::Process::destroy_context(int device) {
  if (!context_live[static_cast<std::size_t>(device)]) return;
  context_live[static_cast<std::size_t>(device)] = false;
  for (const auto& [base, mapping] : mappings) {
    if (mapping.context_device != device) continue;
    destroyed[base] = device;
    if (mapping.imported) {
      ++reclaimed.ipc_mappings;
    } else {
      ++reclaimed.device_allocations;
      reclaimed.device_bytes += mapping.size;
    }
  }
  for (const auto& [start, allocation] : host_allocations) {
    if (allocation.device != device) continue;
    destroyed[start] = device;
    ++reclaimed.host_allocations;
  }
  for (const auto& [start, registration] : registrations) {
    if (registration.device != device) continue;
    destroyed[start] = device;
    ++reclaimed.host_registrations;
  }
  auto on_device = [device](const auto& entry) { return entry.second == device; };
  reclaimed.handles +=
      static_cast<std::size_t>(std::count_if(streams.begin(), streams.end(), on_device) +
                               std::count_if(events.begin(), events.end(), on_device) +
                               std::count_if(modules.begin(), modules.end(), on_device) +
                               std::count_if(pools.begin(), pools.end(), on_device));
  release_device(device);
}

void FakeDriver::Process::forget_destroyed(std::uintptr_t start, std::size_t size) {
  const auto last =
      size > UINTPTR_MAX - start ? destroyed.end() : destroyed.lower_bound(start + size);
  destroyed.erase(destroyed.lower_bound(start), last);
}

std::string FakeDriver::Process::destroyed_note(std::uintptr_t address) const {
  auto it = destroyed.find(address);
  if (it == destroyed.end()) return {};
  return " (it was freed with this process's primary context of device " +
         std::to_string(it->second) +
         ", which was destroyed when its last retain was released or by "
         "cuDevicePrimaryCtxReset; free memory before its context goes)";
}

// --- construction --------------------------------------------------------------------------------

FakeDriver::FakeDriver(std::shared_ptr<FakeSystem> system)
    : system_(system ? std::move(system)
                     : throw InvalidArgumentError("FakeDriver needs a FakeSystem, got null")),
      process_(std::make_unique<Process>(*system_->state_)) {}

FakeDriver::FakeDriver(FakeSystemConfig config)
    : FakeDriver(std::make_shared<FakeSystem>(std::move(config))) {}

FakeDriver::~FakeDriver() {
  {
    std::lock_guard lock(process_->system.mutex);
    for (int device = 0; device < process_->device_count(); ++device) {
      process_->release_device(device);
    }
  }
  process_->set_current_context(nullptr);
}

std::shared_ptr<FakeDriver> FakeDriver::spawn_process() const {
  return std::make_shared<FakeDriver>(system_);
}

// --- what this process holds ---------------------------------------------------------------------

std::vector<AddressRange> FakeDriver::live_allocations() const {
  std::lock_guard lock(process_->system.mutex);
  std::vector<AddressRange> ranges;
  for (const auto& [base, mapping] : process_->mappings) {
    if (!mapping.imported) ranges.push_back(AddressRange{base, mapping.size});
  }
  return ranges;
}

std::size_t FakeDriver::device_bytes_in_use() const {
  std::lock_guard lock(process_->system.mutex);
  std::size_t total = 0;
  for (const auto& entry : process_->mappings) {
    if (!entry.second.imported) total += entry.second.size;
  }
  return total;
}

std::size_t FakeDriver::host_allocation_count() const {
  std::lock_guard lock(process_->system.mutex);
  return process_->host_allocations.size();
}

std::size_t FakeDriver::host_registration_count() const {
  std::lock_guard lock(process_->system.mutex);
  return process_->registrations.size();
}

std::size_t FakeDriver::ipc_mapping_count() const {
  std::lock_guard lock(process_->system.mutex);
  return static_cast<std::size_t>(
      std::count_if(process_->mappings.begin(), process_->mappings.end(),
                    [](const auto& entry) { return entry.second.imported; }));
}

std::size_t FakeDriver::stream_count() const {
  std::lock_guard lock(process_->system.mutex);
  return process_->streams.size();
}

std::size_t FakeDriver::event_count() const {
  std::lock_guard lock(process_->system.mutex);
  return process_->events.size();
}

std::size_t FakeDriver::module_count() const {
  std::lock_guard lock(process_->system.mutex);
  return process_->modules.size();
}

std::size_t FakeDriver::pool_count() const {
  std::lock_guard lock(process_->system.mutex);
  return process_->pools.size();
}

std::size_t FakeDriver::invalid_frees() const {
  std::lock_guard lock(process_->system.mutex);
  return process_->invalid_frees;
}

std::size_t FakeDriver::invalid_accesses() const {
  std::lock_guard lock(process_->system.mutex);
  return process_->invalid_accesses;
}

std::optional<unsigned> FakeDriver::host_allocation_flags(const void* pointer) const {
  std::lock_guard lock(process_->system.mutex);
  auto it = process_->host_allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
  if (it == process_->host_allocations.end()) return std::nullopt;
  return it->second.flags;
}

FakeDriver::ContextReclaims FakeDriver::context_reclaims() const {
  std::lock_guard lock(process_->system.mutex);
  return process_->reclaimed;
}

std::optional<unsigned> FakeDriver::host_registration_flags(const void* pointer) const {
  std::lock_guard lock(process_->system.mutex);
  auto it = process_->registrations.find(reinterpret_cast<std::uintptr_t>(pointer));
  if (it == process_->registrations.end()) return std::nullopt;
  return it->second.flags;
}

// --- call counting and fault injection -----------------------------------------------------------

std::size_t FakeDriver::call_count(DriverCall call) const {
  if (call == DriverCall::kCount) {
    throw InvalidArgumentError("FakeDriver::call_count: DriverCall::kCount is not a call");
  }
  std::lock_guard lock(process_->system.mutex);
  return process_->calls[static_cast<std::size_t>(call)];
}

void FakeDriver::reset_call_counts() {
  std::lock_guard lock(process_->system.mutex);
  process_->calls.fill(0);
}

void FakeDriver::fail_call(DriverCall call, CUresult result, std::size_t nth, std::size_t times) {
  if (call == DriverCall::kCount) {
    throw InvalidArgumentError("FakeDriver::fail_call: DriverCall::kCount is not a call");
  }
  if (result == CUDA_SUCCESS) {
    throw InvalidArgumentError(
        "FakeDriver::fail_call: the injected result must be an error, got "
        "CUDA_SUCCESS");
  }
  if (nth == 0 || times == 0) {
    throw InvalidArgumentError(
        "FakeDriver::fail_call: nth and times count from 1 (nth = 1 fails the very next call)");
  }
  std::lock_guard lock(process_->system.mutex);
  process_->faults.push_back(Process::Fault{call, result, nth - 1, times});
}

void FakeDriver::clear_faults() {
  std::lock_guard lock(process_->system.mutex);
  process_->faults.clear();
}

// --- scheduling ----------------------------------------------------------------------------------

namespace {

std::int64_t wall_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Every thread's CPU time of this process, user and system.
std::int64_t process_cpu_ns() noexcept {
  timespec now{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now) != 0) return 0;
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace

void FakeDriver::Process::Interleaving::start() noexcept {
  calls.store(0, std::memory_order_relaxed);
  stride.store(1, std::memory_order_relaxed);
  window_wall_ns.store(wall_now_ns(), std::memory_order_relaxed);
  window_cpu_ns.store(process_cpu_ns(), std::memory_order_relaxed);
}

void FakeDriver::Process::Interleaving::before_call() noexcept {
  const std::uint64_t call = calls.fetch_add(1, std::memory_order_relaxed);
  if (call % fake_detail::kReviewEvery == fake_detail::kReviewEvery - 1) review();
  if (call % stride.load(std::memory_order_relaxed) == 0) std::this_thread::yield();
}

void FakeDriver::Process::Interleaving::review() noexcept {
  // One thread judges a window; the others go on.
  if (reviewing.exchange(true, std::memory_order_acquire)) return;
  const std::int64_t wall = wall_now_ns();
  const std::int64_t wall_ns = wall - window_wall_ns.load(std::memory_order_relaxed);
  if (wall_ns >= fake_detail::kReviewWindowNs) {
    const std::int64_t cpu = process_cpu_ns();
    const std::int64_t cpu_ns = cpu - window_cpu_ns.load(std::memory_order_relaxed);
    stride.store(
        fake_detail::next_yield_stride(stride.load(std::memory_order_relaxed), wall_ns, cpu_ns),
        std::memory_order_relaxed);
    window_wall_ns.store(wall, std::memory_order_relaxed);
    window_cpu_ns.store(cpu, std::memory_order_relaxed);
  }
  reviewing.store(false, std::memory_order_release);
}

void FakeDriver::yield_in_calls(bool on) noexcept {
  if (on) process_->yield_in_calls.start();
  process_->yield_in_calls.on.store(on, std::memory_order_relaxed);
}

std::uint32_t FakeDriver::yield_stride() const noexcept {
  return process_->yield_in_calls.stride.load(std::memory_order_relaxed);
}

}  // namespace emm
